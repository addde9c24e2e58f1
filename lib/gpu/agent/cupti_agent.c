// SPDX-License-Identifier: GPL-2.0
/*
 * libllmprof_cupti.so, the CUPTI agent llmprof puts into a CUDA process.
 * It subscribes to CUPTI, fires the llmprof:launch(correlation, cbid,
 * domain) USDT probe on every launching thread so BPF can take the CPU
 * stack, and streams launch, kernel, memcpy and memset records to llmprof
 * over the socket of gpu_protocol.h.  It links no CUPTI: it uses the
 * libcupti the process already maps, else $LLMPROF_CUPTI_LIBRARY, else the
 * system's, else CUDA_ROOT's.  When the socket closes it disables activity,
 * (after waiting, at most a second, for launched work to finish), flushes,
 * and finalizes CUPTI from the next API exit callback (or, if the
 * process makes no CUDA call within two seconds, unsubscribes), so the
 * process runs on as before and a later llmprof_agent_start() works.
 * Where that cannot be safe it says why and leaves CUPTI alone: on CUPTI
 * 13.0 GA, and once another CUPTI client took the activity records.
 *
 * Environment of the target: LLMPROF_AGENT_SOCKET (record mode: the socket);
 * LLMPROF_CUPTI_LIBRARY (a libcupti to use when none is mapped);
 * LLMPROF_AGENT_PROBE_RATE (launch probes per second and thread, default
 * 10000, 0 for all); LLMPROF_AGENT_CLOCK=offset|callback (overrides the
 * clock choice: callback in record mode, offset in attach mode).
 */
#include "glibc_compat.h"

#include <cupti.h>
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sdt.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "gpu/gpu_protocol.h"

#include "agent_private.h"

struct agent agent = {
    .send_lock = PTHREAD_MUTEX_INITIALIZER,
    .completion_lock = PTHREAD_MUTEX_INITIALIZER,
    .drain_lock = PTHREAD_MUTEX_INITIALIZER,
    .pool_lock = PTHREAD_MUTEX_INITIALIZER,
    .fd = -1,
};

static struct launch_slot launch_ring[LAUNCH_RING_SIZE];
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

/* Launches counted and records back at the last flush interval, and how
 * many intervals in a row brought no record for older launches. */
static struct {
	uint64_t launched, finished;
	uint64_t progress_ns; /* when a record last came back */
	int stalled;
} record_watch;
/* Set once another client took CUPTI's activity in this process: later
 * sessions leave CUPTI alone. */
static bool activity_shared;
/* Sessions that subscribed to CUPTI in this process. */
static unsigned int subscriptions;

static __thread struct {
	uint32_t generation;
	uint32_t tid;
	uint32_t outer;	    /* runtime launch in progress on this thread */
	uint32_t capturing; /* stream captures begun and not ended */
	uint32_t counted;   /* launch counted in launched_work, until its exit */
	CUpti_CallbackDomain counted_domain;
	uint64_t probe_credit; /* ns of probe budget saved up */
	uint64_t probe_last;   /* when the credit was last topped up */
} thread_state;

static uint64_t CUPTIAPI monotonic_timestamp(void)
{
	return monotonic_ns();
}

/* Sending. */

/*
 * Whether a file name is CUPTI's library: libcupti.so[.N...], or the name
 * auditwheel gives the copy a wheel bundles (libtorch's libcupti-HASH.so.N),
 * not CUPTI's other libraries (libcupti_sass_metrics...).
 */
static bool is_cupti_name(const char *base)
{
	const char *p;

	if (strncmp(base, "libcupti", 8))
		return false;
	p = base + 8;
	if (*p == '-') {
		const char *hash = ++p;

		/* Not isalnum(): the target's locale is not ours to trust. */
		while ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
		       (*p >= 'A' && *p <= 'Z'))
			p++;
		if (p == hash)
			return false;
	}
	return !strncmp(p, ".so", 3);
}

/* The libcupti the process maps already, e.g. the one a PyTorch wheel
 * ships: using another would map a second CUPTI beside it. */
static bool mapped_cupti(char *path, size_t size)
{
	FILE *maps = fopen("/proc/self/maps", "re");
	char line[4096 + 256];
	bool found = false;

	if (!maps)
		return false;
	while (!found && fgets(line, sizeof(line), maps)) {
		char *file = strchr(line, '/'), *base;

		if (!file)
			continue;
		file[strcspn(file, "\n")] = '\0';
		base = strrchr(file, '/') + 1;
		if (!is_cupti_name(base) || strstr(file, " (deleted)"))
			continue;
		snprintf(path, size, "%s", file);
		found = true;
	}
	fclose(maps);
	return found;
}

#define RESOLVE(field, symbol, required)                                                           \
	do {                                                                                       \
		c->field = (__typeof__(c->field))dlsym(c->handle, #symbol);                        \
		if (!c->field && (required))                                                       \
			missing = #symbol;                                                         \
	} while (0)

static const char *cupti_resolve(struct cupti *c)
{
	const char *missing = NULL;

	RESOLVE(subscribe, cuptiSubscribe, true);
	RESOLVE(subscribe_v2, cuptiSubscribe_v2, false);
	RESOLVE(unsubscribe, cuptiUnsubscribe, true);
	RESOLVE(enable_callback, cuptiEnableCallback, true);
	RESOLVE(enable_domain, cuptiEnableDomain, true);
	RESOLVE(activity_enable, cuptiActivityEnable, true);
	RESOLVE(activity_disable, cuptiActivityDisable, true);
	RESOLVE(register_callbacks, cuptiActivityRegisterCallbacks, true);
	RESOLVE(register_timestamp, cuptiActivityRegisterTimestampCallback, false);
	RESOLVE(next_record, cuptiActivityGetNextRecord, true);
	RESOLVE(dropped_records, cuptiActivityGetNumDroppedRecords, true);
	RESOLVE(flush_all, cuptiActivityFlushAll, true);
	RESOLVE(get_timestamp, cuptiGetTimestamp, true);
	RESOLVE(finalize, cuptiFinalize, true);
	RESOLVE(result_string, cuptiGetResultString, false);
	RESOLVE(get_version, cuptiGetVersion, false);
	RESOLVE(graph_exec_id, cuptiGetGraphExecId, false);
	return missing;
}

static void on_exit_flush(void);

/*
 * Exit handlers run in the reverse order of their registration, and
 * libcupti's (its C++ statics' destructors) are registered when it loads:
 * the agent's last flush is registered after that, so it runs first.  In a
 * program that never loaded libcupti itself (any nvcc program), registered
 * earlier, it would call into a library already torn down.
 */
static void register_exit_flush(void)
{
	atexit(on_exit_flush);
}

static pthread_once_t exit_flush_once = PTHREAD_ONCE_INIT;

/* Opens libcupti once per process; it is never closed, CUPTI keeps threads. */
static int cupti_open(struct cupti *c, char *why, size_t why_size)
{
	const char *env = getenv("LLMPROF_CUPTI_LIBRARY");
	char mapped[4096] = "";
	const char *candidates[] = {
	    mapped_cupti(mapped, sizeof(mapped)) ? mapped : NULL,
	    env && env[0] ? env : NULL,
	    "libcupti.so",
	    "libcupti.so.13",
	    "libcupti.so.12",
	    "libcupti.so.11",
	    LLMPROF_CUDA_ROOT "/lib64/libcupti.so",
	    LLMPROF_CUDA_ROOT "/extras/CUPTI/lib64/libcupti.so",
	};

	if (c->handle)
		return 0;
	snprintf(why, why_size, "no libcupti found");
	for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++) {
		struct link_map *map = NULL;
		const char *missing;

		if (!candidates[i])
			continue;
		c->handle = dlopen(candidates[i], RTLD_NOW | RTLD_LOCAL);
		if (!c->handle)
			continue;
		missing = cupti_resolve(c);
		if (missing) {
			snprintf(why, why_size, "%s lacks %s", candidates[i], missing);
			dlclose(c->handle);
			c->handle = NULL;
			continue;
		}
		if (!dlinfo(c->handle, RTLD_DI_LINKMAP, &map) && map && map->l_name &&
		    map->l_name[0])
			snprintf(c->path, sizeof(c->path), "%s", map->l_name);
		else
			snprintf(c->path, sizeof(c->path), "%s", candidates[i]);
		if (c->get_version)
			c->get_version(&c->version);
		pthread_once(&exit_flush_once, register_exit_flush);
		return 0;
	}
	return -ENOENT;
}

/* The launch queue: a bounded multi-producer queue (Vyukov's), drained by
 * the agent thread.  A full queue drops the record and counts it. */

static void launch_ring_init(void)
{
	for (uint64_t i = 0; i < LAUNCH_RING_SIZE; i++)
		atomic_store_explicit(&launch_ring[i].sequence, i, memory_order_relaxed);
}

static void launch_ring_push(const struct gpu_launch *launch)
{
	uint64_t pos = atomic_load_explicit(&agent.enqueue_pos, memory_order_relaxed);
	struct launch_slot *slot;

	for (;;) {
		int64_t diff;

		slot = &launch_ring[pos & (LAUNCH_RING_SIZE - 1)];
		diff = (int64_t)(atomic_load_explicit(&slot->sequence, memory_order_acquire) - pos);
		if (diff == 0) {
			if (atomic_compare_exchange_weak_explicit(&agent.enqueue_pos, &pos, pos + 1,
								  memory_order_relaxed,
								  memory_order_relaxed))
				break;
		} else if (diff < 0) {
			atomic_fetch_add_explicit(&agent.dropped_launches, 1, memory_order_relaxed);
			return;
		} else {
			pos = atomic_load_explicit(&agent.enqueue_pos, memory_order_relaxed);
		}
	}
	slot->launch = *launch;
	atomic_store_explicit(&slot->sequence, pos + 1, memory_order_release);
}

/* Moves queued launches into the thread packet; with send false they are
 * discarded (stale, or nobody to send to).  Caller holds drain_lock. */
static void launch_ring_drain(bool send)
{
	for (;;) {
		struct launch_slot *slot = &launch_ring[agent.dequeue_pos & (LAUNCH_RING_SIZE - 1)];
		uint64_t seq = atomic_load_explicit(&slot->sequence, memory_order_acquire);

		if (seq != agent.dequeue_pos + 1)
			break;
		if (send) {
			packet_add(&agent.thread_packet, GPU_MSG_LAUNCH, &slot->launch,
				   sizeof(slot->launch), NULL, 0, SEND_WAIT_MS);
			atomic_fetch_add_explicit(&agent.sent_launches, 1, memory_order_relaxed);
		}
		atomic_store_explicit(&slot->sequence, agent.dequeue_pos + LAUNCH_RING_SIZE,
				      memory_order_release);
		agent.dequeue_pos++;
	}
	if (send)
		packet_flush(&agent.thread_packet, SEND_WAIT_MS);
	else
		agent.thread_packet.used = agent.thread_packet.messages = 0;
}

/* Callbacks. */

/*
 * The calls we trace and their GPU_LAUNCH_* flags: every runtime and
 * driver entry point that launches a kernel or a graph or makes a copy or
 * a memset, in the per-thread-default-stream (_ptsz, _ptds) variants too;
 * driver-only launchers are what Triton, cuBLASLt and PyTorch's CUDA graphs
 * call.  Ids from CUDA 13's cupti_runtime_cbid.h and cupti_driver_cbid.h; a
 * CUPTI that does not know one refuses it alone.
 */
struct traced_call {
	CUpti_CallbackDomain domain;
	CUpti_CallbackId cbid;
	int flags;
};

static const struct traced_call traced_calls[] = {
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 0},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000, 0},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060, 0},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060, 0},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000, 0},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
     0},
#if CUPTI_API_VERSION >= 130000
    /* What nvcc 13 generated launch stubs call. */
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, 0},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000, 0},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_v13000,
     GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_ptsz_v13000,
     GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DBatchAsync_v13000,
     GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DBatchAsync_ptsz_v13000,
     GPU_LAUNCH_MEMORY},
#endif
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
     GPU_LAUNCH_GRAPH},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000,
     GPU_LAUNCH_GRAPH},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
     GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000,
     GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000,
     GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020, GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_v3020,
     GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_ptds_v7000,
     GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_ptsz_v7000,
     GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3D_v3020, GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DAsync_v3020,
     GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3D_ptds_v7000,
     GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DAsync_ptsz_v7000,
     GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeer_v4000, GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000,
     GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DPeer_v4000,
     GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DPeerAsync_v4000,
     GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DPeer_ptds_v7000,
     GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DPeerAsync_ptsz_v7000,
     GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_v3020,
     GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbolAsync_v3020,
     GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_ptds_v7000,
     GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbolAsync_ptsz_v7000,
     GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_v3020,
     GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbolAsync_v3020,
     GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_ptds_v7000,
     GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbolAsync_ptsz_v7000,
     GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020, GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020,
     GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemset_ptds_v7000,
     GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000,
     GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemset2D_v3020, GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemset2DAsync_v3020,
     GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemset2D_ptds_v7000,
     GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemset2DAsync_ptsz_v7000,
     GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_v12080,
     GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_ptsz_v12080,
     GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DBatchAsync_v12080,
     GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DBatchAsync_ptsz_v12080,
     GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 0},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz, 0},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, 0},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz, 0},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, 0},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz, 0},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, GPU_LAUNCH_GRAPH},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz, GPU_LAUNCH_GRAPH},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpy, GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync, GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds, GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz, GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2, GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2, GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2_ptds, GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds, GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2_ptds, GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2, GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2, GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2, GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz,
     GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz,
     GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz,
     GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeer, GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync, GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeer_ptds, GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync_ptsz, GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync, GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync_ptsz,
     GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync_v2, GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync_v2_ptsz,
     GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2, GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2, GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2, GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2_ptds, GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2_ptds, GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2_ptds, GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async, GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async, GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async, GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz, GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async_ptsz, GPU_LAUNCH_MEMORY},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz, GPU_LAUNCH_MEMORY},
};

#define MAX_TRACED_CBID 1024
/* flags + 1 by domain and cbid, 0 for calls not traced: one load per
 * callback. */
static int8_t traced_flags[2][MAX_TRACED_CBID];

static void traced_calls_init(void)
{
	for (size_t i = 0; i < sizeof(traced_calls) / sizeof(traced_calls[0]); i++) {
		const struct traced_call *t = &traced_calls[i];

		if (t->cbid < MAX_TRACED_CBID)
			traced_flags[t->domain == CUPTI_CB_DOMAIN_DRIVER_API][t->cbid] =
			    t->flags + 1;
	}
}

/* GPU_LAUNCH_* flags of the calls we trace, -1 for others. */
static int launch_flags(CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
	if ((domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API) ||
	    cbid >= MAX_TRACED_CBID)
		return -1;
	return traced_flags[domain == CUPTI_CB_DOMAIN_DRIVER_API][cbid] - 1;
}

/* +1 for a call that begins a stream capture, -1 for one that ends it, 0
 * for others.  Launches on a capturing thread become graph nodes and make
 * no GPU records of their own. */
static int capture_change(CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
		switch (cbid) {
		case CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000:
		case CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_ptsz_v10000:
		case CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCaptureToGraph_v12030:
		case CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCaptureToGraph_ptsz_v12030:
			return 1;
		case CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_v10000:
		case CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_ptsz_v10000:
			return -1;
		default:
			return 0;
		}
	}
	switch (cbid) {
	case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph_ptsz:
		return 1;
	case CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz:
		return -1;
	default:
		return 0;
	}
}

static const CUpti_CallbackId capture_runtime_cbids[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_ptsz_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCaptureToGraph_v12030,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCaptureToGraph_ptsz_v12030,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_ptsz_v10000,
};

static const CUpti_CallbackId capture_driver_cbids[] = {
    CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture,
    CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2,
    CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph,
    CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture,
    CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz,
};

static void enable_launch_callbacks(uint32_t enable)
{
	/* A cbid this CUPTI does not know fails alone; the rest still work. */
	for (size_t i = 0; i < sizeof(traced_calls) / sizeof(traced_calls[0]); i++)
		agent.cupti.enable_callback(enable, agent.subscriber, traced_calls[i].domain,
					    traced_calls[i].cbid);
	for (size_t i = 0; i < sizeof(capture_runtime_cbids) / sizeof(capture_runtime_cbids[0]);
	     i++)
		agent.cupti.enable_callback(enable, agent.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
					    capture_runtime_cbids[i]);
	for (size_t i = 0; i < sizeof(capture_driver_cbids) / sizeof(capture_driver_cbids[0]); i++)
		agent.cupti.enable_callback(enable, agent.subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
					    capture_driver_cbids[i]);
}

/*
 * CUPTI asks that cuptiFinalize() run in an API exit callback.  Before
 * CUPTI 12.6 (API v24) subscribing again after a finalize can crash the
 * process (with CUDA graphs), so there detach only unsubscribes (in
 * session_teardown): CUPTI stays initialised and idle until the next
 * attach subscribes again.
 */
#define CUPTI_VERSION_SAFE_FINALIZE 24

/*
 * CUPTI of CUDA 13.0 GA (13.0.48, API version 130000; what PyTorch's cu130
 * wheels pin) can deadlock in cuptiActivityDisable(CONCURRENT_KERNEL) while
 * other threads launch, and crash in cuptiActivityFlushAll: both fixed in
 * 13.0 Update 1 (API 130001).  Every session ends with both calls while the
 * job runs, so on that release the agent does not start at all.
 */
#define CUPTI_VERSION_13_0_GA 130000

/*
 * Before CUDA 13.1 Update 1, CUPTI gives the records of cudaGraphLaunch's
 * work wrong correlation ids in every session after a process's first (its
 * release notes: "in profiling sessions after the first session").  API
 * versions are xxyyzz since 13.0 (13.0 Update 1 is 130001); 13.1 GA is
 * 130100, so Update 1 is taken as 130101.  Sessions counted are this
 * agent's; that is every CUPTI session of a job llmprof attaches to again.
 */
#define CUPTI_VERSION_GRAPH_CORRELATION_FIXED 130101

static void finalize_in_callback(void)
{
	int expected = STATE_DETACHING;

	if (!atomic_compare_exchange_strong(&agent.state, &expected, STATE_FINALIZING))
		return;
	agent.cupti.finalize();
	agent.subscriber = NULL;
	atomic_store(&agent.state, STATE_IDLE);
}

static uint32_t graph_exec_id(CUpti_CallbackDomain domain, const CUpti_CallbackData *cb)
{
	uint32_t id = 0;
	CUgraphExec exec;

	if (!agent.cupti.graph_exec_id || !cb->functionParams)
		return 0;
	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API)
		exec = ((const cudaGraphLaunch_v10000_params *)cb->functionParams)->graphExec;
	else
		exec = ((const cuGraphLaunch_params *)cb->functionParams)->hGraph;
	if (!exec || agent.cupti.graph_exec_id(exec, &id) != CUPTI_SUCCESS)
		return 0;
	return id;
}

/*
 * Each probe hit costs the thread a trap into the kernel and a BPF stack
 * walk (microseconds), so a thread fires at most LLMPROF_AGENT_PROBE_RATE
 * per second (bursts of PROBE_BURST); llmprof gives an unprobed kernel the
 * stack of a probed launch of the same kernel on that thread.  Graph
 * launches, few and many kernels each, always fire.
 */
static bool probe_allowed(uint64_t now, int flags)
{
	uint64_t interval = agent.probe_interval_ns, cap = PROBE_BURST * interval;

	if (!interval || (flags & GPU_LAUNCH_GRAPH))
		return true;
	if (thread_state.probe_last) {
		thread_state.probe_credit += now - thread_state.probe_last;
		if (thread_state.probe_credit > cap)
			thread_state.probe_credit = cap;
	}
	thread_state.probe_last = now;
	if (thread_state.probe_credit < interval)
		return false;
	thread_state.probe_credit -= interval;
	return true;
}

/*
 * Runs on the launching thread, inside the CUDA call: the probe must fire
 * here for BPF to see that thread's stack.  Kept to a clock read, the probe
 * and a queue push.
 */
static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
				 const void *data)
{
	const CUpti_CallbackData *cb = data;
	uint32_t generation;
	struct gpu_launch launch;
	int state, flags, capture;

	if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API)
		return;
	state = atomic_load_explicit(&agent.state, memory_order_acquire);
	if (state == STATE_DETACHING) {
		if (cb->callbackSite == CUPTI_API_EXIT)
			finalize_in_callback();
		return;
	}
	if (state != STATE_ACTIVE)
		return;
	flags = launch_flags(domain, cbid);
	capture = capture_change(domain, cbid);
	if (flags < 0 && !capture)
		return;
	generation = atomic_load_explicit(&agent.generation, memory_order_relaxed);
	if (thread_state.generation != generation) {
		thread_state.generation = generation;
		thread_state.tid = syscall(SYS_gettid);
		thread_state.outer = 0;
		thread_state.capturing = 0;
		thread_state.counted = 0;
		thread_state.probe_credit = PROBE_BURST * agent.probe_interval_ns;
		thread_state.probe_last = 0;
	}
	if (capture) {
		/* Counted when it began, uncounted when it ends. */
		if (capture > 0 && cb->callbackSite == CUPTI_API_EXIT)
			thread_state.capturing++;
		else if (capture < 0 && cb->callbackSite == CUPTI_API_ENTER &&
			 thread_state.capturing)
			thread_state.capturing--;
		return;
	}
	if (cb->callbackSite == CUPTI_API_EXIT) {
		if (domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
		    thread_state.outer == cb->correlationId)
			thread_state.outer = 0;
		/* A launch that failed put no work on the GPU: no record will
		 * come for the stop to wait for.  Success is 0 in both APIs. */
		if (thread_state.counted == cb->correlationId &&
		    thread_state.counted_domain == domain) {
			thread_state.counted = 0;
			if (cb->functionReturnValue && *(const int *)cb->functionReturnValue)
				atomic_fetch_sub_explicit(&agent.launched_work, 1,
							  memory_order_relaxed);
		}
		return;
	}
	/* CUPTI may give the driver call inside a runtime launch the
	 * runtime call's own id: that launch is queued and probed already. */
	if (domain == CUPTI_CB_DOMAIN_DRIVER_API && thread_state.outer == cb->correlationId)
		return;
	launch = (struct gpu_launch){
	    .time_ns = monotonic_ns(),
	    .correlation = cb->correlationId,
	    .tid = thread_state.tid,
	    .callback_id = cbid,
	    .domain = domain,
	    .flags = flags,
	};
	/* A driver launch inside a runtime launch is the same launch: it is
	 * mapped to the outer one, whose probe already fired. */
	if (thread_state.outer && thread_state.outer != cb->correlationId)
		launch.parent_correlation = thread_state.outer;
	else if (domain == CUPTI_CB_DOMAIN_RUNTIME_API)
		thread_state.outer = cb->correlationId;
	if (flags & GPU_LAUNCH_GRAPH)
		launch.graph_exec_id = graph_exec_id(domain, cb);
	if (!launch.parent_correlation && !(flags & GPU_LAUNCH_GRAPH) && !thread_state.capturing) {
		uint32_t none = 0;

		atomic_compare_exchange_strong(&agent.first_counted, &none, launch.correlation);
		atomic_fetch_add_explicit(&agent.launched_work, 1, memory_order_relaxed);
		thread_state.counted = launch.correlation;
		thread_state.counted_domain = domain;
	}
	if (!launch.parent_correlation && probe_allowed(launch.time_ns, flags)) {
		launch.flags |= GPU_LAUNCH_PROBED;
		STAP_PROBE3(llmprof, launch, launch.correlation, cbid, domain);
	}
	launch_ring_push(&launch);
}

/* Activity buffers. */

/* The offset from CUPTI's clock to CLOCK_MONOTONIC, from the pair with the
 * shortest round trip.  Measured at subscribe, every flush interval and
 * before each buffer's records are converted: CUPTI's clock may settle
 * only once the process's CUDA stack is fully up, and records must never
 * land before their launches. */
void measure_offset(void)
{
	uint64_t best = UINT64_MAX;
	int64_t offset = 0;

	for (int i = 0; i < 16; i++) {
		uint64_t t0, t1, c = 0;

		t0 = monotonic_ns();
		if (agent.cupti.get_timestamp(&c) != CUPTI_SUCCESS)
			return;
		t1 = monotonic_ns();
		if (t1 - t0 < best) {
			best = t1 - t0;
			offset = (int64_t)(t0 + (t1 - t0) / 2) - (int64_t)c;
		}
	}
	atomic_store(&agent.clock_offset, offset);
	agent.clock_error = best / 2;
}

static void choose_clock(void)
{
	const char *forced = getenv("LLMPROF_AGENT_CLOCK");
	bool callback = agent.mode == GPU_AGENT_RECORD;

	/* In a running process CUPTI has calibrated GPU against CPU time on
	 * its own clock already, so a callback now could mix two clocks. */
	if (forced && !strcmp(forced, "offset"))
		callback = false;
	else if (forced && !strcmp(forced, "callback"))
		callback = true;
	if (callback && agent.cupti.register_timestamp &&
	    agent.cupti.register_timestamp(monotonic_timestamp) == CUPTI_SUCCESS) {
		agent.clock_mode = GPU_CLOCK_CALLBACK;
		atomic_store(&agent.clock_offset, 0);
		agent.clock_error = 0;
		return;
	}
	agent.clock_mode = GPU_CLOCK_OFFSET;
	measure_offset();
}

/* Session. */

static void send_hello(void)
{
	struct gpu_hello m = {
	    .protocol_version = GPU_PROTOCOL_VERSION,
	    .pid = getpid(),
	    .cupti_version = agent.cupti.version,
	    .clock_mode = agent.clock_mode,
	    .clock_offset_ns = atomic_load(&agent.clock_offset),
	    .clock_error_ns = agent.clock_error,
	    .start_ns = agent.start_ns,
	    .agent_mode = agent.mode,
	    .path_length = strlen(agent.cupti.path),
	};

	snprintf(m.agent_version, sizeof(m.agent_version), "%s", LLMPROF_VERSION);
	send_message(GPU_MSG_HELLO, &m, sizeof(m), agent.cupti.path);
}

static void send_dropped(void)
{
	struct gpu_dropped m = {
	    .activity_records = atomic_load(&agent.dropped_activity),
	    .launch_records = atomic_load(&agent.dropped_launches),
	    .messages = atomic_load(&agent.dropped_messages),
	    .incomplete = atomic_load(&agent.incomplete),
	    .unnamed_kernels = atomic_load(&agent.dropped_names),
	};

	send_message(GPU_MSG_DROPPED, &m, sizeof(m), NULL);
}

static void send_goodbye(void)
{
	struct gpu_goodbye m = {
	    .kernels = atomic_load(&agent.sent_kernels),
	    .memcpys = atomic_load(&agent.sent_memcpys),
	    .memsets = atomic_load(&agent.sent_memsets),
	    .launches = atomic_load(&agent.sent_launches),
	};

	send_dropped();
	send_message(GPU_MSG_GOODBYE, &m, sizeof(m), NULL);
}

static void reset_counters(void)
{
	atomic_store(&agent.dropped_activity, 0);
	atomic_store(&agent.dropped_launches, 0);
	atomic_store(&agent.dropped_messages, 0);
	atomic_store(&agent.incomplete, 0);
	atomic_store(&agent.dropped_names, 0);
	atomic_store(&agent.sent_kernels, 0);
	atomic_store(&agent.sent_memcpys, 0);
	atomic_store(&agent.sent_memsets, 0);
	atomic_store(&agent.sent_launches, 0);
	atomic_store(&agent.launched_work, 0);
	atomic_store(&agent.finished_work, 0);
	atomic_store(&agent.first_counted, 0);
}

static uint64_t probe_interval(void)
{
	const char *env = getenv("LLMPROF_AGENT_PROBE_RATE");
	unsigned long rate = PROBE_RATE_DEFAULT;
	char *end;

	if (env && env[0]) {
		errno = 0;
		rate = strtoul(env, &end, 10);
		if (errno || *end)
			rate = PROBE_RATE_DEFAULT;
	}
	return rate ? 1000000000ul / (rate < 1000000000ul ? rate : 1000000000ul) : 0;
}

static CUptiResult subscribe(char *other, size_t other_size)
{
	other[0] = '\0';
	if (agent.cupti.subscribe_v2) {
		CUpti_SubscriberParams params = {
		    .structSize = CUpti_SubscriberParams_STRUCT_SIZE,
		    .subscriberName = "llmprof",
		    .oldSubscriberName = other,
		    .oldSubscriberSize = other_size,
		};

		return agent.cupti.subscribe_v2(&agent.subscriber, on_callback, NULL, &params);
	}
	return agent.cupti.subscribe(&agent.subscriber, on_callback, NULL);
}

/*
 * Connects, finds CUPTI and starts recording.  Sets the state to ACTIVE,
 * OTHER (CUPTI taken: nothing of CUPTI touched beyond the subscribe) or, on
 * failure, leaves STARTING for the caller.  Returns 0 or -errno.
 */
static int session_setup(void)
{
	char other[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 64], why[512];
	CUptiResult result;
	int fd, err;

	agent.start_ns = monotonic_ns();
	fd = socket_connect(agent.socket_name);
	if (fd < 0)
		return fd;
	pthread_mutex_lock(&agent.send_lock);
	agent.fd = fd;
	agent.congested = false;
	atomic_store(&agent.dead, false);
	pthread_mutex_unlock(&agent.send_lock);
	reset_counters();
	/* Buffers CUPTI kept over a finalize are gone with it. */
	atomic_store(&agent.buffers_out, 0);
	pthread_mutex_lock(&agent.drain_lock);
	launch_ring_drain(false);
	pthread_mutex_unlock(&agent.drain_lock);
	pthread_mutex_lock(&agent.completion_lock);
	names_reset();
	agent.completion_packet.used = agent.completion_packet.messages = 0;
	pthread_mutex_unlock(&agent.completion_lock);

	err = cupti_open(&agent.cupti, why, sizeof(why));
	if (err) {
		agent.clock_mode = 0;
		send_hello();
		send_error(err, 0, why);
		return err;
	}
	if (activity_shared) {
		agent.clock_mode = 0;
		send_hello();
		send_refusal("another CUPTI client in this process (torch.profiler?) took CUPTI's "
			     "activity records in an earlier session: CUPTI left to it");
		return -EBUSY;
	}
	if (agent.cupti.version == CUPTI_VERSION_13_0_GA) {
		agent.clock_mode = 0;
		send_hello();
		send_refusal("CUPTI 13.0 GA (13.0.48, API 130000) can deadlock or crash when GPU "
			     "capture stops while the job launches (fixed in CUDA 13.0 Update 1): "
			     "CUPTI left alone");
		return -ENOTSUP;
	}
	/* Subscribe first: CUPTI's global settings are not ours to touch
	 * while another tool holds it. */
	result = subscribe(other, sizeof(other));
	if (result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
		struct gpu_other_subscriber m = {.result = result, .length = strlen(other)};

		agent.subscriber = NULL;
		agent.clock_mode = 0;
		send_hello();
		send_message(GPU_MSG_OTHER_SUBSCRIBER, &m, sizeof(m), other);
		atomic_store(&agent.state, STATE_OTHER);
		return 0;
	}
	if (result != CUPTI_SUCCESS) {
		agent.subscriber = NULL;
		agent.clock_mode = 0;
		send_hello();
		send_error(0, result, "cuptiSubscribe");
		return -EIO;
	}
	choose_clock();
	send_hello();
	agent.graph_correlation_wrong =
	    ++subscriptions > 1 && agent.cupti.version < CUPTI_VERSION_GRAPH_CORRELATION_FIXED;
	if (agent.graph_correlation_wrong) {
		char text[256];

		snprintf(text, sizeof(text),
			 "CUPTI before 13.1 Update 1 (here API %u) gives CUDA graph launches' work "
			 "wrong correlation ids after a process's first session: graph kernels "
			 "unattributed",
			 agent.cupti.version);
		send_notice(text);
	}
	result = agent.cupti.register_callbacks(buffer_requested, buffer_completed);
	if (result != CUPTI_SUCCESS) {
		send_error(0, result, "cuptiActivityRegisterCallbacks");
		agent.cupti.unsubscribe(agent.subscriber);
		agent.subscriber = NULL;
		return -EIO;
	}
	agent.probe_interval_ns = probe_interval();
	atomic_store(&agent.records_taken, false);
	atomic_store(&agent.foreign_clock, false);
	memset(&record_watch, 0, sizeof(record_watch));
	atomic_fetch_add(&agent.generation, 1);
	/* Activity before callbacks: every launch counted for the drain at
	 * stop then makes a record. */
	if (agent.cupti.activity_enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS)
		agent.cupti.activity_enable(CUPTI_ACTIVITY_KIND_KERNEL);
	agent.cupti.activity_enable(CUPTI_ACTIVITY_KIND_MEMCPY);
	agent.cupti.activity_enable(CUPTI_ACTIVITY_KIND_MEMSET);
	atomic_store(&agent.state, STATE_ACTIVE);
	enable_launch_callbacks(1);
	return 0;
}

/*
 * A second CUPTI client in the process (torch.profiler's Kineto) needs no
 * subscription for activity: it registers its own buffer callbacks, which
 * take every record from then on, and disables the kinds when its window
 * ends.  Either way launches stop getting their records.  Called once per
 * flush interval; true once launches older than an interval got no record
 * back for RECORDS_TAKEN_INTERVALS intervals.  A GPU busy for seconds on
 * one kernel looks the same: then the agent gives up GPU data, never more.
 */
static bool records_taken_check(void)
{
	uint64_t launched = atomic_load(&agent.launched_work);
	uint64_t finished =
	    atomic_load(&agent.finished_work) + atomic_load(&agent.dropped_activity);

	if (finished == record_watch.finished && record_watch.launched > finished) {
		record_watch.stalled++;
	} else {
		record_watch.stalled = 0;
		record_watch.progress_ns = monotonic_ns();
	}
	record_watch.launched = launched;
	record_watch.finished = finished;
	return record_watch.stalled >= RECORDS_TAKEN_INTERVALS;
}

/* From now on CUPTI's activity belongs to the other client: no more
 * launch callbacks, and at stop no disable, flush or finalize. */
static void records_taken(void)
{
	uint64_t last = record_watch.progress_ns ? record_watch.progress_ns : agent.start_ns;
	char text[256];

	atomic_store(&agent.records_taken, true);
	activity_shared = true;
	enable_launch_callbacks(0);
	if (atomic_load(&agent.foreign_clock))
		snprintf(text, sizeof(text),
			 "another CUPTI client in this process (torch.profiler?) replaced the "
			 "timestamp callback (seen %.1f s into the session): no GPU records on its "
			 "clock, CUPTI left to it",
			 (monotonic_ns() - agent.start_ns) / 1e9);
	else
		snprintf(text, sizeof(text),
			 "another CUPTI client in this process (torch.profiler?) took CUPTI's "
			 "activity records: none came back after %.1f s into the session, CUPTI "
			 "left to it",
			 (last - agent.start_ns) / 1e9);
	send_refusal(text);
}

/* The end of a session whose records another client took: its launches
 * and goodbye, then only the subscription is given back. */
static void teardown_taken(bool send)
{
	pthread_mutex_lock(&agent.drain_lock);
	launch_ring_drain(send && !atomic_load(&agent.dead));
	pthread_mutex_unlock(&agent.drain_lock);
	if (send && !atomic_load(&agent.dead))
		send_goodbye();
	socket_close();
}

static void activity_disable(void)
{
	agent.cupti.activity_disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	agent.cupti.activity_disable(CUPTI_ACTIVITY_KIND_KERNEL);
	agent.cupti.activity_disable(CUPTI_ACTIVITY_KIND_MEMCPY);
	agent.cupti.activity_disable(CUPTI_ACTIVITY_KIND_MEMSET);
}

/*
 * A forced flush hands back records of work still running with times of 0,
 * and those records are lost.  So first, for at most DRAIN_WAIT_MS, ordinary
 * flushes take what finishes, until every launch made outside a graph has
 * its record back (graphs' kernel counts are not known here).  What is
 * still running then is counted as incomplete: cut off at stop.
 */
static void drain_in_flight(void)
{
	uint64_t deadline = monotonic_ns() + DRAIN_WAIT_MS * 1000000ull;

	for (;;) {
		size_t dropped = 0;

		agent.cupti.flush_all(0);
		/* Records CUPTI had no buffer for never come. */
		if (agent.cupti.dropped_records(NULL, 0, &dropped) == CUPTI_SUCCESS && dropped)
			atomic_fetch_add(&agent.dropped_activity, dropped);
		if (atomic_load(&agent.finished_work) + atomic_load(&agent.dropped_activity) >=
			atomic_load(&agent.launched_work) ||
		    monotonic_ns() >= deadline)
			break;
		usleep(TICK_MS * 1000 / 2);
	}
}

/* Everything CUPTI holds goes to llmprof (or nowhere, when it is gone). */
static void flush_everything(bool send)
{
	if (send && !atomic_load(&agent.dead))
		drain_in_flight();
	agent.cupti.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	pthread_mutex_lock(&agent.drain_lock);
	launch_ring_drain(send && !atomic_load(&agent.dead));
	pthread_mutex_unlock(&agent.drain_lock);
	if (send && !atomic_load(&agent.dead))
		send_goodbye();
}

/* Stops recording and hands CUPTI back; runs on the agent thread. */
static void session_teardown(bool graceful)
{
	int expected = STATE_ACTIVE;
	uint64_t deadline;

	/* The exit handler may have taken the session already. */
	if (!atomic_compare_exchange_strong(&agent.state, &expected, STATE_STOPPING))
		return;
	if (!graceful)
		atomic_store(&agent.dead, true); /* nobody to parse records for */
	if (atomic_load(&agent.foreign_clock) && !atomic_load(&agent.records_taken))
		records_taken();
	if (atomic_load(&agent.records_taken)) {
		teardown_taken(graceful);
		atomic_store(&agent.state, STATE_FINALIZING);
		agent.cupti.unsubscribe(agent.subscriber);
		agent.subscriber = NULL;
		atomic_store(&agent.state, STATE_IDLE);
		return;
	}
	activity_disable();
	flush_everything(graceful);
	enable_launch_callbacks(0);
	socket_close();
	if (agent.cupti.version < CUPTI_VERSION_SAFE_FINALIZE) {
		atomic_store(&agent.state, STATE_FINALIZING);
		agent.cupti.unsubscribe(agent.subscriber);
		agent.subscriber = NULL;
		atomic_store(&agent.state, STATE_IDLE);
		return;
	}
	/* Any runtime or driver call's exit now finalizes. */
	agent.cupti.enable_domain(1, agent.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
	agent.cupti.enable_domain(1, agent.subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
	atomic_store(&agent.state, STATE_DETACHING);

	deadline = monotonic_ns() + DETACH_WAIT_MS * 1000000ull;
	while (atomic_load(&agent.state) != STATE_IDLE && monotonic_ns() < deadline)
		usleep(TICK_MS * 1000);
	expected = STATE_DETACHING;
	if (atomic_compare_exchange_strong(&agent.state, &expected, STATE_FINALIZING)) {
		/* The process makes no CUDA calls: finalizing outside a
		 * callback is not safe, so give back the subscription only. */
		agent.cupti.enable_domain(0, agent.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
		agent.cupti.enable_domain(0, agent.subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
		agent.cupti.unsubscribe(agent.subscriber);
		agent.subscriber = NULL;
		atomic_store(&agent.state, STATE_IDLE);
	}
}

/* What llmprof said, or that it went away.  Returns 1 for STOP, -1 for a
 * closed socket, 0 otherwise. */
static int socket_poll(int timeout_ms)
{
	struct pollfd pfd = {.fd = agent.fd, .events = POLLIN};
	struct gpu_message_header h;
	ssize_t n;

	if (atomic_load(&agent.dead))
		return -1;
	if (poll(&pfd, 1, timeout_ms) <= 0)
		return 0;
	if (pfd.revents & (POLLHUP | POLLERR | POLLNVAL))
		return -1;
	n = recv(agent.fd, &h, sizeof(h), MSG_DONTWAIT);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
		return -1;
	return n == sizeof(h) && h.type == GPU_MSG_STOP ? 1 : 0;
}

static void *agent_thread(void *arg)
{
	uint64_t next_flush = monotonic_ns() + FLUSH_INTERVAL_MS * 1000000ull;
	uint64_t last_dropped = 0;
	int got = 0;

	if (agent.mode == GPU_AGENT_ATTACH && session_setup()) {
		socket_close();
		atomic_store(&agent.state, STATE_IDLE);
		return NULL;
	}
	if (atomic_load(&agent.state) == STATE_OTHER) {
		while (!got)
			got = socket_poll(1000);
		if (got > 0)
			send_goodbye();
		socket_close();
		atomic_store(&agent.state, STATE_IDLE);
		return NULL;
	}
	while (atomic_load(&agent.state) == STATE_ACTIVE) {
		uint64_t now, dropped;

		got = socket_poll(TICK_MS);
		if (got)
			break;
		pthread_mutex_lock(&agent.drain_lock);
		launch_ring_drain(true);
		pthread_mutex_unlock(&agent.drain_lock);
		if (atomic_load(&agent.records_taken))
			continue;
		if (atomic_load(&agent.foreign_clock)) {
			records_taken();
			continue;
		}
		/* Records overdue: flush every tick, so that a buffer whose work
		 * is all done comes back whenever the GPU has a moment idle. */
		if (record_watch.stalled)
			agent.cupti.flush_all(0);
		now = monotonic_ns();
		if (now < next_flush)
			continue;
		next_flush = now + FLUSH_INTERVAL_MS * 1000000ull;
		agent.cupti.flush_all(0);
		if (records_taken_check()) {
			records_taken();
			continue;
		}
		if (agent.clock_mode == GPU_CLOCK_OFFSET)
			measure_offset();
		dropped = atomic_load(&agent.dropped_activity) +
			  atomic_load(&agent.dropped_launches) +
			  atomic_load(&agent.dropped_messages) + atomic_load(&agent.incomplete) +
			  atomic_load(&agent.dropped_names);
		if (dropped != last_dropped)
			send_dropped();
		last_dropped = dropped;
	}
	session_teardown(got > 0);
	return NULL;
}

/* A process that exits while recording sends what it has. */
static void on_exit_flush(void)
{
	int expected = STATE_ACTIVE;

	if (!atomic_compare_exchange_strong(&agent.state, &expected, STATE_STOPPING))
		return;
	if (atomic_load(&agent.foreign_clock) && !atomic_load(&agent.records_taken))
		records_taken();
	if (atomic_load(&agent.records_taken)) {
		teardown_taken(true);
		return;
	}
	activity_disable();
	flush_everything(true);
	socket_close();
}

/* The child of a fork() shares our socket; it must not write to it. */
static void on_fork_child(void)
{
	atomic_store(&agent.state, STATE_FORKED);
	if (agent.fd >= 0)
		close(agent.fd);
	agent.fd = -1;
	atomic_store(&agent.dead, true);
}

static void agent_init(void)
{
	launch_ring_init();
	traced_calls_init();
	pthread_atfork(NULL, NULL, on_fork_child);
}

static int agent_start(const char *socket_name, enum gpu_agent_mode mode)
{
	int expected = STATE_IDLE, err;
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t thread;

	if (!socket_name || strlen(socket_name) < 2 ||
	    strlen(socket_name) >= sizeof(agent.socket_name))
		return -EINVAL;
	pthread_once(&init_once, agent_init);
	if (!atomic_compare_exchange_strong(&agent.state, &expected, STATE_STARTING))
		return expected == STATE_ACTIVE ? -EALREADY : -EBUSY;
	snprintf(agent.socket_name, sizeof(agent.socket_name), "%s", socket_name);
	agent.mode = mode;
	if (mode == GPU_AGENT_RECORD) {
		/* Before the runtime goes on, so the first kernels are seen. */
		err = session_setup();
		if (err) {
			socket_close();
			atomic_store(&agent.state, STATE_IDLE);
			return err;
		}
	}
	/* The agent thread takes none of the application's signals. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 << 10);
	err = -pthread_create(&thread, &attr, agent_thread, NULL);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		if (atomic_load(&agent.state) == STATE_ACTIVE)
			session_teardown(false);
		socket_close();
		if (atomic_load(&agent.state) != STATE_DETACHING)
			atomic_store(&agent.state, STATE_IDLE);
		return err;
	}
	return 0;
}

/* Called by the CUDA driver for CUDA_INJECTION64_PATH=libllmprof_cupti.so
 * (record mode); the socket comes in LLMPROF_AGENT_SOCKET.  Never fails the
 * application. */
EXPORT int InitializeInjection(void)
{
	const char *name = getenv(GPU_AGENT_SOCKET_ENV);

	if (name && name[0])
		agent_start(name, GPU_AGENT_RECORD);
	return 1;
}

/* Called by llmprof's injector after dlopen (attach mode).  Returns 0 when
 * the agent thread started (it connects and subscribes on its own),
 * -EALREADY while a session runs, -EBUSY while the last one winds down
 * (at most about two seconds), -EINVAL for a bad name. */
EXPORT int llmprof_agent_start(const char *socket_name)
{
	return agent_start(socket_name, GPU_AGENT_ATTACH);
}
