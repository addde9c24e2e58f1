// SPDX-License-Identifier: GPL-2.0
/*
 * Two ranks as two processes (fork before CUDA starts), each on its own
 * mock device with a communicator of two, calling the stand-in libnccl
 * with known sizes.  With the stand-in's default bus bandwidth (1024 bytes
 * a microsecond) every NCCL kernel takes a known time:
 *
 *   overlapped()    AllReduce 4 MiB f32            4096 us, beside a 200 ms
 *                                                  compute kernel on
 *                                                  another stream: hidden
 *   exposed()       AllReduce 8 MiB f32            8192 us
 *   gather()        AllGather 1 MiB sent (2 MiB)   1024 us
 *   exchange()      group: Send 1 MiB + Recv 1 MiB 2048 us, one kernel
 *
 * so each device runs 15360 us of NCCL kernels, 11264 us of them exposed.
 * Needs MOCK_CUDA_CONCURRENT_STREAMS=1 and MOCK_CUDA_DEVICES=2.
 *
 * --device-0: each rank uses device 0, as ranks do that each see only their
 * own GPU (CUDA_VISIBLE_DEVICES); MOCK_CUDA_DEVICES is not needed.
 *
 * --rooted: the same two ranks call, instead, the rooted collectives and
 * the communicators made from another:
 *
 *   bcast()         ncclBcast 1 MiB f32 (in place)  1024 us
 *   gather_root()   ncclGather 256 KiB each         256 us
 *   scatter_root()  ncclScatter 256 KiB each        256 us
 *   on_split()      ncclCommSplit (one color), then
 *                   AllReduce 1 MiB on it           1024 us
 *   on_shrunk()     ncclCommShrink (none excluded),
 *                   then AllReduce 2 MiB on it      2048 us
 *
 * --one-rank: one process, a communicator of one, as NCCL runs it: in
 * one_rank(), an out-of-place AllReduce of 4 MiB, AllGather of 1 MiB and
 * AllReduce of 1 MiB in a group are device-to-device copies (the mock's
 * 5 us + 0.1 ns a byte: 424430 ns, 109857 ns and 109857 ns), an in-place
 * AllReduce of 4 MiB does nothing.
 */
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void **__cudaRegisterFatBinary(void *fat_cubin);
void __cudaRegisterFatBinaryEnd(void **handle);
void __cudaRegisterFunction(void **handle, const char *host_fun, char *device_fun,
			    const char *device_name, int thread_limit, uint3 *tid, uint3 *bid,
			    dim3 *block, dim3 *grid, int *warp_size);

#define MiB (1024 * 1024)
#define COMPUTE_US 200000

#define CHECK(call)                                                                                \
	do {                                                                                       \
		int err_ = (int)(call);                                                            \
		if (err_) {                                                                        \
			fprintf(stderr, "nccl_ranks_app: %s: %d\n", #call, err_);                  \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

__attribute__((noinline)) static void compute_stub(unsigned int us)
{
	__asm__ volatile("" ::"r"(us) : "memory");
}

static char fatbin[16];

__attribute__((constructor)) static void register_kernels(void)
{
	void **handle = __cudaRegisterFatBinary(fatbin);

	__cudaRegisterFunction(handle, (const char *)compute_stub, "_Z13matmul_kernelj",
			       "_Z13matmul_kernelj", -1, NULL, NULL, NULL, NULL, NULL);
	__cudaRegisterFatBinaryEnd(handle);
}

static ncclComm_t comm;
static cudaStream_t compute_stream, comm_stream;
static int rank, peer, device;

__attribute__((noinline)) static void matmul(unsigned int us)
{
	void *args[] = {&us};

	CHECK(cudaLaunchKernel((const void *)compute_stub, (dim3){8, 1, 1}, (dim3){256, 1, 1}, args,
			       0, compute_stream));
}

__attribute__((noinline)) static void overlapped(void)
{
	matmul(COMPUTE_US);
	CHECK(ncclAllReduce(NULL, NULL, 4 * MiB / 4, ncclFloat32, ncclSum, comm, comm_stream));
	CHECK(cudaDeviceSynchronize());
}

__attribute__((noinline)) static void exposed(void)
{
	CHECK(ncclAllReduce(NULL, NULL, 8 * MiB / 4, ncclFloat32, ncclSum, comm, comm_stream));
	CHECK(cudaDeviceSynchronize());
}

__attribute__((noinline)) static void gather(void)
{
	CHECK(ncclAllGather(NULL, NULL, MiB / 4, ncclFloat32, comm, comm_stream));
	CHECK(cudaDeviceSynchronize());
}

__attribute__((noinline)) static void exchange(void)
{
	CHECK(ncclGroupStart());
	CHECK(ncclSend(NULL, MiB, ncclUint8, peer, comm, comm_stream));
	CHECK(ncclRecv(NULL, MiB, ncclUint8, peer, comm, comm_stream));
	CHECK(ncclGroupEnd());
	CHECK(cudaDeviceSynchronize());
}

__attribute__((noinline)) static void bcast(void)
{
	CHECK(ncclBcast(NULL, MiB / 4, ncclFloat32, 0, comm, comm_stream));
	CHECK(cudaDeviceSynchronize());
}

__attribute__((noinline)) static void gather_root(void)
{
	CHECK(ncclGather(NULL, NULL, MiB / 16, ncclFloat32, 0, comm, comm_stream));
	CHECK(cudaDeviceSynchronize());
}

__attribute__((noinline)) static void scatter_root(void)
{
	CHECK(ncclScatter(NULL, NULL, MiB / 16, ncclFloat32, 1, comm, comm_stream));
	CHECK(cudaDeviceSynchronize());
}

__attribute__((noinline)) static void on_split(void)
{
	ncclComm_t split = NULL;

	CHECK(ncclCommSplit(comm, 0, rank, &split, NULL));
	CHECK(ncclAllReduce(NULL, NULL, MiB / 4, ncclFloat32, ncclSum, split, comm_stream));
	CHECK(cudaDeviceSynchronize());
	CHECK(ncclCommDestroy(split));
}

__attribute__((noinline)) static void on_shrunk(void)
{
	ncclComm_t shrunk = NULL;

	CHECK(ncclCommShrink(comm, NULL, 0, &shrunk, NULL, NCCL_SHRINK_DEFAULT));
	CHECK(ncclAllReduce(NULL, NULL, 2 * MiB / 4, ncclFloat32, ncclSum, shrunk, comm_stream));
	CHECK(cudaDeviceSynchronize());
	CHECK(ncclCommDestroy(shrunk));
}

static bool rooted;

static int run_rank(void)
{
	ncclUniqueId id = {0};
	int count = 0;

	CHECK(cudaSetDevice(device));
	CHECK(cudaStreamCreate(&compute_stream));
	CHECK(cudaStreamCreate(&comm_stream));
	CHECK(ncclCommInitRank(&comm, 2, id, rank));
	CHECK(ncclCommCount(comm, &count));
	if (rooted) {
		bcast();
		gather_root();
		scatter_root();
		on_split();
		on_shrunk();
	} else {
		overlapped();
		exposed();
		gather();
		exchange();
	}
	CHECK(ncclCommDestroy(comm));
	printf("rank %d of %d done\n", rank, count);
	fflush(stdout);
	return 0;
}

__attribute__((noinline)) static void one_rank(void)
{
	static float send[MiB], recv[MiB];

	CHECK(ncclAllReduce(send, recv, 4 * MiB / 4, ncclFloat32, ncclSum, comm, comm_stream));
	CHECK(ncclAllReduce(recv, recv, 4 * MiB / 4, ncclFloat32, ncclSum, comm, comm_stream));
	CHECK(ncclAllGather(send, recv, MiB / 4, ncclFloat32, comm, comm_stream));
	/* In a group too: NCCL copies at once, not at ncclGroupEnd. */
	CHECK(ncclGroupStart());
	CHECK(ncclAllReduce(send, recv, MiB / 4, ncclFloat32, ncclSum, comm, comm_stream));
	CHECK(ncclGroupEnd());
	CHECK(cudaDeviceSynchronize());
}

static int run_one_rank(void)
{
	ncclUniqueId id = {0};

	CHECK(cudaSetDevice(0));
	CHECK(cudaStreamCreate(&comm_stream));
	CHECK(ncclCommInitRank(&comm, 1, id, 0));
	one_rank();
	CHECK(ncclCommDestroy(comm));
	printf("one rank done\n");
	return 0;
}

int main(int argc, char **argv)
{
	int status;
	pid_t child;

	if (argc > 1 && !strcmp(argv[1], "--one-rank"))
		return run_one_rank();
	device = -1;
	if (argc > 1 && !strcmp(argv[1], "--device-0"))
		device = 0;
	rooted = argc > 1 && !strcmp(argv[1], "--rooted");

	fflush(stdout);
	child = fork();
	if (child < 0) {
		perror("fork");
		return 1;
	}
	rank = child == 0 ? 1 : 0;
	peer = 1 - rank;
	if (device < 0)
		device = rank;
	if (child == 0)
		exit(run_rank());
	run_rank();
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status))
		return 1;
	return 0;
}
