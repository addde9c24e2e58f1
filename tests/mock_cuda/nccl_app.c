// SPDX-License-Identifier: GPL-2.0
/*
 * Calls the real libnccl (dlopen()ed from argv[1]) without a GPU: each API
 * call from its own function with known counts and datatypes, on a NULL
 * communicator NCCL rejects, so every call fails cleanly.  A first pause
 * (argv[2] seconds) leaves time to attach; argv[3] rounds of the
 * collectives, then with "init" a ncclCommInitRank that fails without a
 * GPU; prints each call's result.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int (*coll_op_fn)(const void *, void *, size_t, int, int, void *, void *);
typedef int (*coll_fn)(const void *, void *, size_t, int, void *, void *);
typedef int (*root_fn)(const void *, void *, size_t, int, int, void *, void *);
typedef int (*reduce_fn)(const void *, void *, size_t, int, int, int, void *, void *);
typedef int (*p2p_fn)(void *, size_t, int, int, void *, void *);
typedef int (*group_fn)(void);
struct unique_id {
	char internal[128];
};
typedef int (*init_fn)(void **, int, struct unique_id, int);

static void *nccl;
static char buffer[64];
#define STREAM ((void *)0x5157)

static void *need(const char *name)
{
	void *f = dlsym(nccl, name);

	if (!f) {
		fprintf(stderr, "no %s: %s\n", name, dlerror());
		exit(1);
	}
	return f;
}

__attribute__((noinline)) void do_allreduce(void)
{
	/* 64 Mi float32: 256 MiB, sum */
	printf("AllReduce %d\n",
	       ((coll_op_fn)need("ncclAllReduce"))(buffer, buffer, 64 << 20, 7, 0, NULL, STREAM));
}

__attribute__((noinline)) void do_allgather(void)
{
	/* 1 Mi bfloat16: 2 MiB */
	printf("AllGather %d\n",
	       ((coll_fn)need("ncclAllGather"))(buffer, buffer, 1 << 20, 9, NULL, STREAM));
}

__attribute__((noinline)) void do_reducescatter(void)
{
	/* 4096 int64 (32 KiB), max */
	printf("ReduceScatter %d\n",
	       ((coll_op_fn)need("ncclReduceScatter"))(buffer, buffer, 4096, 4, 2, NULL, STREAM));
}

__attribute__((noinline)) void do_broadcast(void)
{
	/* 1000 uint8 from root 3 */
	printf("Broadcast %d\n",
	       ((root_fn)need("ncclBroadcast"))(buffer, buffer, 1000, 1, 3, NULL, STREAM));
}

__attribute__((noinline)) void do_reduce(void)
{
	/* 3 float64 to root 5, min: the 7th and 8th arguments on the stack */
	printf("Reduce %d\n",
	       ((reduce_fn)need("ncclReduce"))(buffer, buffer, 3, 8, 3, 5, NULL, STREAM));
}

__attribute__((noinline)) void do_sendrecv(void)
{
	group_fn start = (group_fn)need("ncclGroupStart"), end = (group_fn)need("ncclGroupEnd");

	printf("GroupStart %d\n", start());
	/* 256 float16 to peer 1, 128 int32 from peer 2 */
	printf("Send %d\n", ((p2p_fn)need("ncclSend"))(buffer, 256, 6, 1, NULL, STREAM));
	printf("Recv %d\n", ((p2p_fn)need("ncclRecv"))(buffer, 128, 2, 2, NULL, STREAM));
	printf("GroupEnd %d\n", end());
}

__attribute__((noinline)) void do_init(void)
{
	struct unique_id id = {{0}};
	void *comm = NULL;

	/* 4 ranks, rank 2, an id no one serves: fails without a GPU */
	printf("CommInitRank %d\n", ((init_fn)need("ncclCommInitRank"))(&comm, 4, id, 2));
}

int main(int argc, char **argv)
{
	int rounds = argc > 3 ? atoi(argv[3]) : 1;

	if (argc < 2) {
		fprintf(stderr, "usage: nccl_app LIBNCCL [PAUSE_S [ROUNDS [init]]]\n");
		return 2;
	}
	if (argc > 2)
		sleep(atoi(argv[2]));
	nccl = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!nccl) {
		fprintf(stderr, "cannot load %s: %s\n", argv[1], dlerror());
		return 1;
	}
	/* An attached llmprof probes a library it sees loaded within a
	 * drain interval: NCCL_APP_PAUSE_MS gives it that before the calls. */
	if (getenv("NCCL_APP_PAUSE_MS"))
		usleep(atoi(getenv("NCCL_APP_PAUSE_MS")) * 1000);
	for (int i = 0; i < rounds; i++) {
		do_allreduce();
		do_allgather();
		do_reducescatter();
		do_broadcast();
		do_reduce();
		do_sendrecv();
	}
	/* Only where it cannot succeed: with a GPU it would wait for 3 peers. */
	if (argc > 4 && !strcmp(argv[4], "init"))
		do_init();
	fflush(stdout);
	return 0;
}
