// SPDX-License-Identifier: GPL-2.0
/*
 * A stand-in libnccl.so.2 for the mock CUDA stack: the API of the real
 * nccl.h (2.28), with the profiling aliases pnccl* as NCCL exports them,
 * whose calls launch a kernel named as NCCL names its own
 * ("ncclDevKernel_AllReduce_Sum_f32_RING_LL") through the mock runtime, on
 * the caller's stream, so the mock CUPTI reports it.  Inside a group
 * (ncclGroupStart/End) the calls only queue: ncclGroupEnd launches one
 * kernel for the group, as NCCL does.  No data moves between ranks and no
 * rank waits for another.  A communicator of one rank does what NCCL's
 * ncclLaunchOneRank() does: an out-of-place collective is a device-to-device
 * copy, an in-place one nothing, and only ncclAvg launches a kernel.
 *
 * A kernel's duration follows from its size and a programmed bus bandwidth
 * (MOCK_NCCL_BUS_BYTES_PER_US, default 1024 bytes a microsecond): the bytes
 * nccl-tests counts (the whole output of AllGather, the whole input of
 * ReduceScatter), times nccl-tests' bus factor, over that bandwidth.  So
 * the bus bandwidth a profiler computes is the programmed one.
 */
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
/* NCCL's pnccl* profiling interface: the same function under both names. */
#define ALIAS(name) __attribute__((alias(#name), visibility("default")))
#define MAX_GROUP 64
#define MAX_KERNEL_NAMES 64

void **__cudaRegisterFatBinary(void *fat_cubin);
void __cudaRegisterFatBinaryEnd(void **handle);
void __cudaRegisterFunction(void **handle, const char *host_fun, char *device_fun,
			    const char *device_name, int thread_limit, uint3 *tid, uint3 *bid,
			    dim3 *block, dim3 *grid, int *warp_size);

struct ncclComm {
	int nranks, rank;
};

enum op {
	OP_ALL_REDUCE,
	OP_ALL_GATHER,
	OP_REDUCE_SCATTER,
	OP_BROADCAST,
	OP_REDUCE,
	OP_ALL_TO_ALL,
	OP_SEND,
	OP_RECV,
	OP_GATHER,
	OP_SCATTER,
};

static const char *const op_names[] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast",
				       "Reduce",    "AllToAll",	 "Send",	  "Recv",
				       "Gather",    "Scatter"};

struct queued {
	enum op op;
	ncclDataType_t type;
	ncclRedOp_t redop;
	uint64_t us;
	cudaStream_t stream;
};

static __thread int group_depth;
static __thread struct queued group[MAX_GROUP];
static __thread int group_size;

static struct {
	char *name;
	char stub; /* its address is the host function */
} kernels[MAX_KERNEL_NAMES];
static int nr_kernels;
static pthread_mutex_t kernels_lock = PTHREAD_MUTEX_INITIALIZER;
static char fatbin[16];

static unsigned int type_size(ncclDataType_t type)
{
	static const unsigned int sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};

	return (unsigned int)type < sizeof(sizes) / sizeof(sizes[0]) ? sizes[type] : 0;
}

static const char *type_name(ncclDataType_t type)
{
	static const char *const names[] = {"i8",  "u8",  "i32", "u32",	 "i64",	   "u64",
					    "f16", "f32", "f64", "bf16", "f8e4m3", "f8e5m2"};

	return (unsigned int)type < sizeof(names) / sizeof(names[0]) ? names[type] : "x";
}

static const char *redop_name(ncclRedOp_t op)
{
	static const char *const names[] = {"Sum", "Prod", "Max", "Min", "Avg"};

	return (unsigned int)op < sizeof(names) / sizeof(names[0]) ? names[op] : "PreMulSum";
}

static bool reduces(enum op op)
{
	return op == OP_ALL_REDUCE || op == OP_REDUCE_SCATTER || op == OP_REDUCE;
}

/* The host stub of a kernel name, registered with the runtime on first use. */
static const void *kernel_stub(const char *name)
{
	const void *stub = NULL;

	pthread_mutex_lock(&kernels_lock);
	for (int i = 0; i < nr_kernels && !stub; i++)
		if (!strcmp(kernels[i].name, name))
			stub = &kernels[i].stub;
	if (!stub && nr_kernels < MAX_KERNEL_NAMES && (kernels[nr_kernels].name = strdup(name))) {
		void **handle = __cudaRegisterFatBinary(fatbin);

		stub = &kernels[nr_kernels].stub;
		__cudaRegisterFunction(handle, stub, kernels[nr_kernels].name,
				       kernels[nr_kernels].name, -1, NULL, NULL, NULL, NULL, NULL);
		__cudaRegisterFatBinaryEnd(handle);
		nr_kernels++;
	}
	pthread_mutex_unlock(&kernels_lock);
	return stub;
}

static ncclResult_t launch(const struct queued *first, int nr)
{
	char name[128];
	unsigned int us = 0;
	bool p2p = true, same = true;
	void *args[] = {&us};
	const void *stub;

	for (int i = 0; i < nr; i++) {
		us += first[i].us;
		p2p = p2p && (first[i].op == OP_SEND || first[i].op == OP_RECV ||
			      first[i].op == OP_GATHER || first[i].op == OP_SCATTER);
		same = same && first[i].op == first[0].op;
	}
	/* NCCL runs Gather and Scatter as sends and receives. */
	if (p2p && !(nr == 1 && same && (first->op == OP_SEND || first->op == OP_RECV)))
		snprintf(name, sizeof(name), "ncclDevKernel_SendRecv");
	else if (reduces(first->op))
		snprintf(name, sizeof(name), "ncclDevKernel_%s_%s_%s_RING_LL", op_names[first->op],
			 redop_name(first->redop), type_name(first->type));
	else
		snprintf(name, sizeof(name), "ncclDevKernel_%s_RING_LL", op_names[first->op]);
	stub = kernel_stub(name);
	if (!stub)
		return ncclInternalError;
	if (cudaLaunchKernel(stub, (dim3){2, 1, 1}, (dim3){512, 1, 1}, args, 0, first->stream) !=
	    cudaSuccess)
		return ncclUnhandledCudaError;
	return ncclSuccess;
}

static uint64_t bus_bytes_per_us(void)
{
	const char *text = getenv("MOCK_NCCL_BUS_BYTES_PER_US");
	long value = text ? atol(text) : 0;

	return value > 0 ? (uint64_t)value : 1024;
}

/* count is the call's own: sendcount of AllGather, recvcount of
 * ReduceScatter, elements to each peer of AllToAll, each rank's part of
 * Gather and Scatter. */
static ncclResult_t enqueue(enum op op, const void *send, void *recv, size_t count,
			    ncclDataType_t type, ncclRedOp_t redop, ncclComm_t comm,
			    cudaStream_t stream)
{
	uint64_t bytes, bus;
	struct queued q = {.op = op, .type = type, .redop = redop, .stream = stream};

	if (!comm || comm->nranks < 1 || !type_size(type))
		return ncclInvalidArgument;
	bytes = (uint64_t)count * type_size(type);
	if (comm->nranks == 1 && op != OP_SEND && op != OP_RECV && redop != ncclAvg) {
		if (send == recv)
			return ncclSuccess;
		return cudaMemcpyAsync(recv, send, bytes, cudaMemcpyDeviceToDevice, stream)
			   ? ncclUnhandledCudaError
			   : ncclSuccess;
	}
	/* nccl-tests' size and bus factor. */
	switch (op) {
	case OP_ALL_REDUCE:
		bus = bytes * 2 * (comm->nranks - 1) / comm->nranks;
		break;
	case OP_ALL_GATHER:
	case OP_REDUCE_SCATTER:
	case OP_ALL_TO_ALL:
	case OP_GATHER:
	case OP_SCATTER:
		bus = bytes * comm->nranks * (comm->nranks - 1) / comm->nranks;
		break;
	default:
		bus = bytes;
		break;
	}
	q.us = bus / bus_bytes_per_us();
	if (group_depth) {
		if (group_size == MAX_GROUP)
			return ncclInvalidUsage;
		group[group_size++] = q;
		return ncclSuccess;
	}
	return launch(&q, 1);
}

EXPORT ncclResult_t ncclGetVersion(int *version)
{
	*version = NCCL_VERSION_CODE;
	return ncclSuccess;
}

EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
	memset(id, 0, sizeof(*id));
	return ncclSuccess;
}
ncclResult_t pncclGetUniqueId(ncclUniqueId *id) ALIAS(ncclGetUniqueId);

EXPORT ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
	(void)id;
	if (nranks < 1 || rank < 0 || rank >= nranks)
		return ncclInvalidArgument;
	*comm = calloc(1, sizeof(**comm));
	if (!*comm)
		return ncclSystemError;
	(*comm)->nranks = nranks;
	(*comm)->rank = rank;
	return ncclSuccess;
}
ncclResult_t pncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
    ALIAS(ncclCommInitRank);

/* Every rank passes the same color (or none): the new communicator has
 * the parent's ranks, ordered by key, which the stand-in takes as given. */
EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
				  ncclConfig_t *config)
{
	(void)key;
	(void)config;
	if (!comm || !newcomm)
		return ncclInvalidArgument;
	if (color == NCCL_SPLIT_NOCOLOR) {
		*newcomm = NULL;
		return ncclSuccess;
	}
	*newcomm = calloc(1, sizeof(**newcomm));
	if (!*newcomm)
		return ncclSystemError;
	**newcomm = *comm;
	return ncclSuccess;
}
ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
			    ncclConfig_t *config) ALIAS(ncclCommSplit);

/* The parent's ranks less the excluded ones, renumbered in order. */
EXPORT ncclResult_t ncclCommShrink(ncclComm_t comm, int *excludeRanksList, int excludeRanksCount,
				   ncclComm_t *newcomm, ncclConfig_t *config, int shrinkFlags)
{
	int rank;

	(void)config;
	(void)shrinkFlags;
	if (!comm || !newcomm || excludeRanksCount < 0 || excludeRanksCount >= comm->nranks ||
	    (excludeRanksCount && !excludeRanksList))
		return ncclInvalidArgument;
	rank = comm->rank;
	for (int i = 0; i < excludeRanksCount; i++) {
		if (excludeRanksList[i] == comm->rank) {
			*newcomm = NULL;
			return ncclSuccess;
		}
		rank -= excludeRanksList[i] < comm->rank;
	}
	*newcomm = calloc(1, sizeof(**newcomm));
	if (!*newcomm)
		return ncclSystemError;
	(*newcomm)->nranks = comm->nranks - excludeRanksCount;
	(*newcomm)->rank = rank;
	return ncclSuccess;
}
ncclResult_t pncclCommShrink(ncclComm_t comm, int *excludeRanksList, int excludeRanksCount,
			     ncclComm_t *newcomm, ncclConfig_t *config, int shrinkFlags)
    ALIAS(ncclCommShrink);

EXPORT ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
	*count = comm->nranks;
	return ncclSuccess;
}
ncclResult_t pncclCommCount(const ncclComm_t comm, int *count) ALIAS(ncclCommCount);

EXPORT ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
	*rank = comm->rank;
	return ncclSuccess;
}
ncclResult_t pncclCommUserRank(const ncclComm_t comm, int *rank) ALIAS(ncclCommUserRank);

EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
	free(comm);
	return ncclSuccess;
}
ncclResult_t pncclCommDestroy(ncclComm_t comm) ALIAS(ncclCommDestroy);

EXPORT const char *ncclGetErrorString(ncclResult_t result)
{
	return result == ncclSuccess ? "no error" : "mock NCCL error";
}

EXPORT ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
				  ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
				  cudaStream_t stream)
{
	return enqueue(OP_ALL_REDUCE, sendbuff, recvbuff, count, datatype, op, comm, stream);
}
ncclResult_t pncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
			    ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
			    cudaStream_t stream) ALIAS(ncclAllReduce);

EXPORT ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
				  ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
	return enqueue(OP_ALL_GATHER, sendbuff, recvbuff, sendcount, datatype, ncclSum, comm,
		       stream);
}
ncclResult_t pncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
			    ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
    ALIAS(ncclAllGather);

EXPORT ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
				      ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
				      cudaStream_t stream)
{
	return enqueue(OP_REDUCE_SCATTER, sendbuff, recvbuff, recvcount, datatype, op, comm,
		       stream);
}
ncclResult_t pncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
				ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
				cudaStream_t stream) ALIAS(ncclReduceScatter);

EXPORT ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
				  ncclDataType_t datatype, int root, ncclComm_t comm,
				  cudaStream_t stream)
{
	(void)root;
	return enqueue(OP_BROADCAST, sendbuff, recvbuff, count, datatype, ncclSum, comm, stream);
}
ncclResult_t pncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
			    ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
    ALIAS(ncclBroadcast);

/* NCCL's first broadcast: in place. */
EXPORT ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root,
			      ncclComm_t comm, cudaStream_t stream)
{
	(void)root;
	return enqueue(OP_BROADCAST, buff, buff, count, datatype, ncclSum, comm, stream);
}
ncclResult_t pncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root,
			ncclComm_t comm, cudaStream_t stream) ALIAS(ncclBcast);

/* count is each rank's part. */
EXPORT ncclResult_t ncclGather(const void *sendbuff, void *recvbuff, size_t count,
			       ncclDataType_t datatype, int root, ncclComm_t comm,
			       cudaStream_t stream)
{
	(void)root;
	return enqueue(OP_GATHER, sendbuff, recvbuff, count, datatype, ncclSum, comm, stream);
}
ncclResult_t pncclGather(const void *sendbuff, void *recvbuff, size_t count,
			 ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
    ALIAS(ncclGather);

EXPORT ncclResult_t ncclScatter(const void *sendbuff, void *recvbuff, size_t count,
				ncclDataType_t datatype, int root, ncclComm_t comm,
				cudaStream_t stream)
{
	(void)root;
	return enqueue(OP_SCATTER, sendbuff, recvbuff, count, datatype, ncclSum, comm, stream);
}
ncclResult_t pncclScatter(const void *sendbuff, void *recvbuff, size_t count,
			  ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
    ALIAS(ncclScatter);

EXPORT ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count,
			       ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
			       cudaStream_t stream)
{
	(void)root;
	return enqueue(OP_REDUCE, sendbuff, recvbuff, count, datatype, op, comm, stream);
}
ncclResult_t pncclReduce(const void *sendbuff, void *recvbuff, size_t count,
			 ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
			 cudaStream_t stream) ALIAS(ncclReduce);

EXPORT ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
			     ncclComm_t comm, cudaStream_t stream)
{
	if (!comm || peer < 0 || peer >= comm->nranks)
		return ncclInvalidArgument;
	return enqueue(OP_SEND, sendbuff, NULL, count, datatype, ncclSum, comm, stream);
}
ncclResult_t pncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
		       ncclComm_t comm, cudaStream_t stream) ALIAS(ncclSend);

EXPORT ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
			     ncclComm_t comm, cudaStream_t stream)
{
	if (!comm || peer < 0 || peer >= comm->nranks)
		return ncclInvalidArgument;
	return enqueue(OP_RECV, NULL, recvbuff, count, datatype, ncclSum, comm, stream);
}
ncclResult_t pncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
		       ncclComm_t comm, cudaStream_t stream) ALIAS(ncclRecv);

EXPORT ncclResult_t ncclGroupStart(void)
{
	group_depth++;
	return ncclSuccess;
}
ncclResult_t pncclGroupStart(void) ALIAS(ncclGroupStart);

EXPORT ncclResult_t ncclGroupEnd(void)
{
	ncclResult_t result = ncclSuccess;

	if (!group_depth)
		return ncclInvalidUsage;
	if (--group_depth)
		return ncclSuccess;
	if (group_size)
		result = launch(group, group_size);
	group_size = 0;
	return result;
}
ncclResult_t pncclGroupEnd(void) ALIAS(ncclGroupEnd);
