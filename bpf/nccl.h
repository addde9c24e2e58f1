/* SPDX-License-Identifier: GPL-2.0 */
/*
 * NCCL records (nccl.bpf.c) as userspace reads them: a sample_event of kind
 * SAMPLE_KIND_NCCL for each outermost call of a target thread into NCCL's
 * API, sent when the call returns, with the stacks of its caller.  The
 * uprobes carry a cookie that says which call they are on and how to read
 * its arguments (x86-64: the seventh and eighth arguments are on the stack).
 */
#ifndef LLMPROF_BPF_NCCL_H
#define LLMPROF_BPF_NCCL_H

/* How a call's arguments are read (the cookie's low byte). */
enum nccl_shape {
	NCCL_COLL = 1,	   /* (send, recv, count, type, comm, stream): AllGather, AlltoAll */
	NCCL_COLL_OP,	   /* (send, recv, count, type, op, comm, stream): AllReduce... */
	NCCL_COLL_ROOT,	   /* (send, recv, count, type, root, comm, stream): Broadcast */
	NCCL_COLL_OP_ROOT, /* (send, recv, count, type, op, root, comm, stream): Reduce */
	NCCL_P2P,	   /* (buff, count, type, peer, comm, stream): Send, Recv */
	NCCL_GROUP,	   /* (): GroupStart, GroupEnd */
	NCCL_INIT,	   /* (comm *out, nranks, [id by value,] rank, ...): CommInitRank* */
	NCCL_SPLIT,	   /* (comm, color, key, comm *out, config): CommSplit */
	NCCL_SHRINK,	   /* (comm, int *exclude, nexclude, comm *out, config, flags) */
	NCCL_LOADER,	   /* the dynamic loader mapped or unmapped a library */
};

#define NCCL_COOKIE(shape, call) ((__u64)(shape) | (__u64)(call) << 8)
#define NCCL_COOKIE_SHAPE(cookie) ((cookie)&0xff)
#define NCCL_COOKIE_CALL(cookie) (((cookie) >> 8) & 0xffff)

/* sample_event.detail[] of an NCCL record. */
enum nccl_detail {
	NCCL_DETAIL_CALL = 0, /* the cookie */
	NCCL_DETAIL_RESULT,   /* ncclResult_t, sign-extended */
	NCCL_DETAIL_COUNT,    /* elements; CommInitRank*: the number of ranks;
			       * CommShrink: the ranks excluded */
	NCCL_DETAIL_TYPE,     /* datatype | reduction op << 8 | (u32)peer or root << 32 */
	NCCL_DETAIL_COMM,     /* ncclComm_t (CommInitRank*, Split, Shrink: the one made) */
	NCCL_DETAIL_STREAM,   /* cudaStream_t */
	NCCL_DETAIL_START_NS, /* when the call was entered */
	NCCL_DETAIL_PARENT,   /* CommSplit, CommShrink: the communicator split */
};

#define NCCL_NO_VALUE 0xff /* type or op where the call has none */
#define NCCL_MAX_THREADS 65536

#endif /* LLMPROF_BPF_NCCL_H */
