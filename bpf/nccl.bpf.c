// SPDX-License-Identifier: GPL-2.0
/*
 * NCCL: uprobes on the collective, point-to-point, group and communicator
 * calls of libnccl.  The entry probe keeps the arguments of a thread's
 * outermost call; the return probe adds its result (and, for
 * ncclCommInitRank*, ncclCommSplit and ncclCommShrink, the communicator it
 * made) and sends the record with the stacks of the caller.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "library_call.bpf.h"
#include "nccl.h"
/* The sixth argument register (x86-64), which older libbpf does not name. */
#ifndef PT_REGS_PARM6
#define PT_REGS_PARM6(x) ((x)->r9)
#endif

struct pending_call {
	struct library_call head;
	__u64 count;
	__u64 type;
	__u64 comm; /* NCCL_INIT, SPLIT, SHRINK: where the call writes the communicator */
	__u64 stream;
	__u64 parent; /* NCCL_SPLIT, SHRINK: the communicator split */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, NCCL_MAX_THREADS);
	__type(key, __u32);
	__type(value, struct pending_call);
} nccl_pending SEC(".maps");

static __always_inline __u64 stack_arg(__u64 sp, int index)
{
	__u64 value = 0;

	/* At entry [sp] is the return address; argument 7 follows it. */
	bpf_probe_read_user(&value, sizeof(value), (const void *)(sp + 8 * (index - 6)));
	return value;
}

static __always_inline __u64 type_word(__u64 type, __u64 op, __u64 peer)
{
	return (type & 0xff) | (op & 0xff) << 8 | (peer & 0xffffffff) << 32;
}

SEC("uprobe")
int nccl_enter(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), cookie = bpf_get_attach_cookie(ctx);
	__u64 sp = PT_REGS_SP(ctx);
	__u32 tid = (__u32)id;
	struct pending_call call = {};

	if (!targets__contains(id >> 32))
		return 0;
	if (library_call__nested(&nccl_pending, tid, sp))
		return 0;
	library_call__begin(&call.head, cookie, sp);
	switch (NCCL_COOKIE_SHAPE(cookie)) {
	case NCCL_COLL:
		call.count = PT_REGS_PARM3(ctx);
		call.type = type_word(PT_REGS_PARM4(ctx), NCCL_NO_VALUE, 0);
		call.comm = PT_REGS_PARM5(ctx);
		call.stream = PT_REGS_PARM6(ctx);
		break;
	case NCCL_COLL_OP:
		call.count = PT_REGS_PARM3(ctx);
		call.type = type_word(PT_REGS_PARM4(ctx), PT_REGS_PARM5(ctx), 0);
		call.comm = PT_REGS_PARM6(ctx);
		call.stream = stack_arg(sp, 7);
		break;
	case NCCL_COLL_ROOT:
		call.count = PT_REGS_PARM3(ctx);
		call.type = type_word(PT_REGS_PARM4(ctx), NCCL_NO_VALUE, PT_REGS_PARM5(ctx));
		call.comm = PT_REGS_PARM6(ctx);
		call.stream = stack_arg(sp, 7);
		break;
	case NCCL_COLL_OP_ROOT:
		call.count = PT_REGS_PARM3(ctx);
		call.type = type_word(PT_REGS_PARM4(ctx), PT_REGS_PARM5(ctx), PT_REGS_PARM6(ctx));
		call.comm = stack_arg(sp, 7);
		call.stream = stack_arg(sp, 8);
		break;
	case NCCL_P2P:
		call.count = PT_REGS_PARM2(ctx);
		call.type = type_word(PT_REGS_PARM3(ctx), NCCL_NO_VALUE, PT_REGS_PARM4(ctx));
		call.comm = PT_REGS_PARM5(ctx);
		call.stream = PT_REGS_PARM6(ctx);
		break;
	case NCCL_GROUP:
		call.type = type_word(NCCL_NO_VALUE, NCCL_NO_VALUE, 0);
		break;
	case NCCL_INIT:
		/* The unique id goes by value, in memory: the rank is the
		 * third register argument in every variant. */
		call.comm = PT_REGS_PARM1(ctx);
		call.count = (__u32)PT_REGS_PARM2(ctx);
		call.type = type_word(NCCL_NO_VALUE, NCCL_NO_VALUE, PT_REGS_PARM3(ctx));
		break;
	case NCCL_SPLIT:
		/* The color in the peer's place; the key orders the ranks. */
		call.parent = PT_REGS_PARM1(ctx);
		call.type = type_word(NCCL_NO_VALUE, NCCL_NO_VALUE, PT_REGS_PARM2(ctx));
		call.comm = PT_REGS_PARM4(ctx);
		break;
	case NCCL_SHRINK:
		call.parent = PT_REGS_PARM1(ctx);
		call.count = (__u32)PT_REGS_PARM3(ctx);
		call.type = type_word(NCCL_NO_VALUE, NCCL_NO_VALUE, 0);
		call.comm = PT_REGS_PARM4(ctx);
		break;
	default:
		return 0;
	}
	bpf_map_update_elem(&nccl_pending, &tid, &call, BPF_ANY);
	return 0;
}

SEC("uretprobe")
int nccl_return(struct pt_regs *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct pending_call *pending;
	struct sample_event *event;
	__s32 result;
	__u64 comm, shape;

	pending = library_call__end(&nccl_pending, tid);
	if (!pending)
		return 0;
	result = (__s32)PT_REGS_RC(ctx);
	comm = pending->comm;
	shape = NCCL_COOKIE_SHAPE(pending->head.cookie);
	if (shape == NCCL_INIT || shape == NCCL_SPLIT || shape == NCCL_SHRINK) {
		__u64 made = 0;

		if (comm)
			bpf_probe_read_user(&made, sizeof(made), (const void *)comm);
		comm = result ? 0 : made;
	}
	count(COUNTER_NCCL);
	event = library_call__reserve(SAMPLE_KIND_NCCL, COUNTER_LOST_NCCL);
	if (!event)
		return 0;
	event->detail[NCCL_DETAIL_CALL] = pending->head.cookie;
	event->detail[NCCL_DETAIL_RESULT] = (__s64)result;
	event->detail[NCCL_DETAIL_COUNT] = pending->count;
	event->detail[NCCL_DETAIL_TYPE] = pending->type;
	event->detail[NCCL_DETAIL_COMM] = comm;
	event->detail[NCCL_DETAIL_STREAM] = pending->stream;
	event->detail[NCCL_DETAIL_START_NS] = pending->head.start_ns;
	event->detail[NCCL_DETAIL_PARENT] = pending->parent;
	capture__stacks(ctx, event, false);
	capture__submit(event, false);
	return 0;
}

/* The dynamic loader's _dl_debug_state(): userspace looks for libnccl. */
SEC("uprobe")
int nccl_loader(struct pt_regs *ctx)
{
	return library_call__loader(ctx, SAMPLE_KIND_NCCL, COUNTER_LOST_NCCL, NCCL_LOADER);
}

char LICENSE[] SEC("license") = "GPL";
