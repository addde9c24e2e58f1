// SPDX-License-Identifier: GPL-2.0
/*
 * A mock libcupti.so for tests without a GPU: the CUPTI entry points the
 * agent uses, with the real headers' types and record layouts.  One
 * subscriber at a time; API callbacks with correlation ids from the mock
 * runtime's hooks (mock_cuda.h); activity records in buffers the client
 * hands out, reserved when the operation is queued and completed when it
 * finishes, as the real one does: a buffer goes back (from a worker thread,
 * or on flush) only once all its records are complete, except on a forced
 * flush, which returns unfinished records with times of 0; a clock
 * on CLOCK_REALTIME, as the real one on Linux, unless a timestamp callback
 * was registered before any activity was enabled.
 *
 * Environment: MOCK_CUPTI_TRACE=1 logs calls on stderr;
 * MOCK_CUPTI_TIMESTAMP_CALLBACK=reject refuses timestamp callbacks, =replace
 * takes one even after activity was enabled, replacing the clock of every
 * later time (as the real one does: pytorch/pytorch#192021);
 * MOCK_CUPTI_KERNEL_CORRELATION=driver gives kernels the nested driver
 * call's correlation id instead of the runtime call's (with
 * MOCK_CUPTI_NESTED_CORRELATION=distinct).  By default, as real CUPTI does, a
 * driver call made inside a runtime call on the same thread carries the
 * runtime call's correlation id; MOCK_CUPTI_NESTED_CORRELATION=distinct gives
 * it an id of its own.
 *
 * MOCK_CUPTI_VERSION=N reports API version N.  With 130000 (CUDA 13.0 GA,
 * CUPTI 13.0.48) the mock has that release's faults, fixed in 13.0 Update 1
 * (130001): cuptiActivityDisable(CONCURRENT_KERNEL) while another thread
 * launches deadlocks (the disabling thread never returns and every later
 * API call waits for it: the job hangs), and cuptiActivityFlushAll while
 * another thread launches crashes the process.
 *
 * Before CUPTI 13.1 Update 1 (API 130101) the activity records of CUDA
 * graph launches carry wrong correlation ids in every subscription after a
 * process's first: here, the id of the API call made before the graph
 * launch, so that a client that trusts them puts the graph's kernels under
 * another launch.
 *
 * MOCK_CUPTI_CLOCK_SETTLE=MS:OFFSET_MS: CUPTI's clock (cuptiGetTimestamp and
 * the records' times) runs OFFSET_MS off until MS after the first subscribe,
 * then settles, as the real one's GPU-CPU calibration can once the
 * process's CUDA stack is fully up.  MOCK_CUPTI_BUFFER_RECORDS=N completes a
 * buffer after N records, so buffers come back often, as the real one's
 * per-stream buffers do.
 *
 * Like the real one (C++ statics, destroyed by handlers registered when the
 * library loads), the mock tears its state down at exit, in the handler its
 * constructor registers: from then on its worker delivers nothing and any
 * CUPTI call crashes the process.  A client whose exit handler runs later
 * (registered before libcupti was loaded) calls into a dead library.
 */
#include <cupti.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "mock_cuda.h"

#define EXPORT __attribute__((visibility("default")))
#define MAX_CBID 2048
#define MAX_KIND 64
#define MAX_PENDING 64
#define MAX_IN_FLIGHT 8192
/* CUPTI 13.0 GA's API version, and how recent another thread's API call
 * must be for its disable and flush faults to strike. */
#define VERSION_13_0_GA 130000
#define FAULT_WINDOW_NS 100000000ull
/* The first API version with graph launches' correlation ids right in
 * later subscriptions (CUDA 13.1 Update 1). */
#define VERSION_GRAPH_CORRELATION_FIXED 130101

struct CUpti_Subscriber_st {
	const char *name;
};

struct pending {
	uint8_t *buffer;
	size_t size, valid;
	int incomplete; /* records still waiting for their operation */
};

/* A reserved record whose operation has not finished. */
struct in_flight {
	uint64_t token;
	uint8_t *buffer;
	size_t offset;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_mutex_t deliver_lock;
	bool hooked;
	bool trace;
	uint32_t version; /* MOCK_CUPTI_VERSION, else CUPTI_API_VERSION */
	/* MOCK_CUPTI_CLOCK_SETTLE: off by settle_offset until settle_at. */
	int64_t settle_offset;
	uint64_t settle_ms;
	size_t buffer_records;		/* MOCK_CUPTI_BUFFER_RECORDS, 0: the client's limit */
	_Atomic uint64_t settle_at;	/* CLOCK_MONOTONIC, 0 before the first subscribe */
	bool finalized;			/* cuptiFinalize has run once */
	_Atomic unsigned subscriptions; /* successful subscribes so far */

	struct CUpti_Subscriber_st subscriber_storage;
	struct CUpti_Subscriber_st *_Atomic subscriber;
	CUpti_CallbackFunc _Atomic callback;
	void *userdata;
	_Atomic bool domains[CUPTI_CB_DOMAIN_SIZE];
	_Atomic bool cbids[CUPTI_CB_DOMAIN_SIZE][MAX_CBID];
	_Atomic bool kinds[MAX_KIND];
	bool activity_ever_enabled;
	_Atomic uint32_t correlation;
	/* The last API call's thread and time, for 13.0 GA's faults. */
	_Atomic uint64_t last_call_ns;
	_Atomic pid_t last_call_tid;
	pthread_mutex_t ga_driver_lock; /* held forever by a deadlocked disable */

	CUpti_BuffersCallbackRequestFunc requested;
	CUpti_BuffersCallbackCompleteFunc completed;
	CUpti_TimestampCallbackFunc _Atomic timestamp;

	uint8_t *buffer; /* being filled */
	size_t size, used, records, max_records;
	int incomplete; /* of the buffer being filled */
	struct in_flight in_flight[MAX_IN_FLIGHT];
	int nr_in_flight;
	struct pending pending[MAX_PENDING];
	int nr_pending;
	size_t dropped;
} cupti = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
    .deliver_lock = PTHREAD_MUTEX_INITIALIZER,
    .ga_driver_lock = PTHREAD_MUTEX_INITIALIZER,
    .subscriber_storage = {"mock"},
};

/* The exit handler ran: the library's state is destroyed. */
static _Atomic bool torn_down;

static __thread int in_callback;
/* The runtime call in progress on this thread, whose id nested driver calls
 * share. */
static __thread uint32_t runtime_open;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void trace(const char *fmt, ...)
{
	char line[256];
	va_list ap;

	if (!cupti.trace)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "mock_cupti: %s\n", line);
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static uint64_t cupti_now(void)
{
	CUpti_TimestampCallbackFunc timestamp = atomic_load(&cupti.timestamp);

	uint64_t settle_at = atomic_load(&cupti.settle_at);

	if (timestamp)
		return timestamp();
	if (settle_at && clock_ns(CLOCK_MONOTONIC) < settle_at)
		return clock_ns(CLOCK_REALTIME) + cupti.settle_offset;
	return clock_ns(CLOCK_REALTIME);
}

/* From the mock's GPU clock (monotonic) to CUPTI's, mapped at the time of
 * the conversion as the real one interpolates: one mapping per record, so
 * its times keep their order.  Of three readings the one taken closest
 * together: a preemption between the two clocks' reads would shift the
 * record by its length, which the real calibration does not. */
static int64_t cupti_clock_offset(void)
{
	uint64_t best = UINT64_MAX;
	int64_t offset = 0;

	for (int i = 0; i < 3; i++) {
		uint64_t before = clock_ns(CLOCK_MONOTONIC), now = cupti_now();
		uint64_t after = clock_ns(CLOCK_MONOTONIC);

		if (after - before < best) {
			best = after - before;
			offset = (int64_t)(now - (before + best / 2));
		}
	}
	return offset;
}

static bool is_13_0_ga(void)
{
	return cupti.version == VERSION_13_0_GA;
}

/* Another thread is inside or just left a CUDA call. */
static bool other_thread_launching(void)
{
	return atomic_load(&cupti.last_call_tid) != (pid_t)syscall(SYS_gettid) &&
	       clock_ns(CLOCK_MONOTONIC) - atomic_load(&cupti.last_call_ns) < FAULT_WINDOW_NS;
}

static void teardown(void)
{
	trace("teardown");
	atomic_store(&torn_down, true);
}

/* What the real library's destructors registered when it loaded. */
__attribute__((constructor)) static void mock_load(void)
{
	cupti.trace = getenv("MOCK_CUPTI_TRACE") != NULL;
	atexit(teardown);
}

/* A call into the library after its teardown: the real one reads freed
 * state; the mock crashes at once. */
static void check_alive(const char *function)
{
	if (!atomic_load(&torn_down))
		return;
	fprintf(stderr, "mock_cupti: %s after teardown: crash\n", function);
	abort();
}

static bool callback_enabled(int domain, uint32_t cbid)
{
	if (domain <= 0 || domain >= CUPTI_CB_DOMAIN_SIZE)
		return false;
	return atomic_load(&cupti.domains[domain]) ||
	       (cbid < MAX_CBID && atomic_load(&cupti.cbids[domain][cbid]));
}

static void dispatch(int domain, uint32_t cbid, CUpti_ApiCallbackSite site, uint32_t correlation,
		     const char *function, const void *params, const char *symbol,
		     const void *result)
{
	CUpti_CallbackFunc callback = atomic_load(&cupti.callback);
	uint64_t correlation_data = 0;
	CUpti_CallbackData data = {
	    .callbackSite = site,
	    .functionName = function,
	    .functionParams = params,
	    .symbolName = symbol,
	    .contextUid = 1,
	    .correlationData = &correlation_data,
	    .correlationId = correlation,
	    .functionReturnValue = (void *)result,
	};

	if (!callback || !atomic_load(&cupti.subscriber) || !callback_enabled(domain, cbid) ||
	    atomic_load(&torn_down))
		return;
	in_callback++;
	callback(cupti.userdata, domain, cbid, &data);
	in_callback--;
}

static bool nested_distinct(void)
{
	static int distinct = -1;

	if (distinct < 0) {
		const char *env = getenv("MOCK_CUPTI_NESTED_CORRELATION");

		distinct = env && !strcmp(env, "distinct");
	}
	return distinct;
}

static uint32_t hook_api_enter(int domain, uint32_t cbid, const char *function, const void *params,
			       const char *symbol)
{
	uint32_t correlation;

	if (is_13_0_ga()) {
		/* Waits here while a deadlocked disable holds the lock. */
		pthread_mutex_lock(&cupti.ga_driver_lock);
		pthread_mutex_unlock(&cupti.ga_driver_lock);
		atomic_store(&cupti.last_call_tid, (pid_t)syscall(SYS_gettid));
		atomic_store(&cupti.last_call_ns, clock_ns(CLOCK_MONOTONIC));
	}
	if (domain == CUPTI_CB_DOMAIN_DRIVER_API && runtime_open && !nested_distinct())
		correlation = runtime_open;
	else
		correlation = atomic_fetch_add(&cupti.correlation, 1) + 1;
	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && !runtime_open)
		runtime_open = correlation;
	dispatch(domain, cbid, CUPTI_API_ENTER, correlation, function, params, symbol, NULL);
	return correlation;
}

static void hook_api_exit(int domain, uint32_t cbid, uint32_t correlation, const char *function,
			  const void *params, const char *symbol, const void *result)
{
	dispatch(domain, cbid, CUPTI_API_EXIT, correlation, function, params, symbol, result);
	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && runtime_open == correlation)
		runtime_open = 0;
}

static size_t record_size(CUpti_ActivityKind kind)
{
	switch (kind) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		return (sizeof(CUpti_ActivityKernel10) + 7) & ~7ul;
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		return (sizeof(CUpti_ActivityMemcpy6) + 7) & ~7ul;
	case CUPTI_ACTIVITY_KIND_MEMSET:
		return (sizeof(CUpti_ActivityMemset4) + 7) & ~7ul;
	default:
		return 0;
	}
}

/* Records of buffer (NULL: all) that will never be completed now.  Caller
 * holds cupti.lock. */
static void forget_in_flight(const uint8_t *buffer)
{
	int kept = 0;

	for (int i = 0; i < cupti.nr_in_flight; i++)
		if (buffer && cupti.in_flight[i].buffer != buffer)
			cupti.in_flight[kept++] = cupti.in_flight[i];
	cupti.nr_in_flight = kept;
}

/* Caller holds cupti.lock. */
static void complete_buffer(void)
{
	if (!cupti.buffer)
		return;
	if (cupti.nr_pending == MAX_PENDING) {
		cupti.dropped += cupti.records;
		cupti.used = cupti.records = 0;
		forget_in_flight(cupti.buffer);
		cupti.incomplete = 0;
		return;
	}
	cupti.pending[cupti.nr_pending++] =
	    (struct pending){cupti.buffer, cupti.size, cupti.used, cupti.incomplete};
	cupti.buffer = NULL;
	cupti.used = cupti.records = 0;
	cupti.incomplete = 0;
	pthread_cond_signal(&cupti.wake);
}

/* The first buffer that may go back: all its records complete, or any with
 * forced.  Caller holds cupti.lock.  Returns false when there is none. */
static bool take_pending(bool forced, struct pending *out)
{
	for (int i = 0; i < cupti.nr_pending; i++) {
		if (cupti.pending[i].incomplete && !forced)
			continue;
		*out = cupti.pending[i];
		memmove(cupti.pending + i, cupti.pending + i + 1,
			(--cupti.nr_pending - i) * sizeof(*out));
		forget_in_flight(out->buffer);
		return true;
	}
	return false;
}

/* Reserves a record for the operation token. */
static void append(const void *record, size_t size, uint64_t token)
{
	pthread_mutex_lock(&cupti.lock);
	if (cupti.buffer && cupti.used + size > cupti.size)
		complete_buffer();
	if (!cupti.buffer && cupti.requested) {
		cupti.requested(&cupti.buffer, &cupti.size, &cupti.max_records);
		if (cupti.buffer && cupti.size < size)
			cupti.buffer = NULL; /* leaked, as a too small buffer would be */
	}
	if (!cupti.buffer || cupti.nr_in_flight == MAX_IN_FLIGHT) {
		cupti.dropped++;
		goto cleanup;
	}
	memcpy(cupti.buffer + cupti.used, record, size);
	cupti.in_flight[cupti.nr_in_flight++] =
	    (struct in_flight){.token = token, .buffer = cupti.buffer, .offset = cupti.used};
	cupti.incomplete++;
	cupti.used += size;
	if (++cupti.records == cupti.max_records || cupti.records == cupti.buffer_records)
		complete_buffer();
cleanup:
	pthread_mutex_unlock(&cupti.lock);
}

union record {
	CUpti_Activity base;
	CUpti_ActivityKernel10 kernel;
	CUpti_ActivityMemcpy6 memcpy;
	CUpti_ActivityMemset4 memset;
};

/* The correlation id a record of a graph launch's work carries. */
static uint32_t graph_correlation(uint32_t correlation)
{
	if (cupti.version < VERSION_GRAPH_CORRELATION_FIXED &&
	    atomic_load(&cupti.subscriptions) > 1)
		return correlation - 1;
	return correlation;
}

/* The record of a queued operation, times 0; false when its kind is not
 * enabled. */
static bool make_record(const struct mock_activity *a, union record *out)
{
	static int driver_correlation = -1;
	union record r;
	CUpti_ActivityKind kind;

	if (driver_correlation < 0) {
		const char *env = getenv("MOCK_CUPTI_KERNEL_CORRELATION");

		driver_correlation = env && !strcmp(env, "driver");
	}
	memset(&r, 0, sizeof(r));
	switch (a->kind) {
	case MOCK_KERNEL:
		if (atomic_load(&cupti.kinds[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL]))
			kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
		else if (atomic_load(&cupti.kinds[CUPTI_ACTIVITY_KIND_KERNEL]))
			kind = CUPTI_ACTIVITY_KIND_KERNEL;
		else
			return false;
		r.kernel = (CUpti_ActivityKernel10){
		    .kind = kind,
		    .registersPerThread = 32,
		    .deviceId = a->device,
		    .contextId = a->context,
		    .streamId = a->stream,
		    .gridX = a->grid[0],
		    .gridY = a->grid[1],
		    .gridZ = a->grid[2],
		    .blockX = a->block[0],
		    .blockY = a->block[1],
		    .blockZ = a->block[2],
		    .correlationId = a->graph_id ? graph_correlation(a->correlation)
				     : driver_correlation && a->driver_correlation
					 ? a->driver_correlation
					 : a->correlation,
		    .name = a->name,
		    .graphNodeId = a->graph_node_id,
		    .graphId = a->graph_id,
		};
		break;
	case MOCK_MEMCPY:
		if (!atomic_load(&cupti.kinds[CUPTI_ACTIVITY_KIND_MEMCPY]))
			return false;
		r.memcpy = (CUpti_ActivityMemcpy6){
		    .kind = CUPTI_ACTIVITY_KIND_MEMCPY,
		    .copyKind = a->copy_kind,
		    .srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
		    .dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
		    .bytes = a->bytes,
		    .deviceId = a->device,
		    .contextId = a->context,
		    .streamId = a->stream,
		    .correlationId = a->driver_correlation ? a->driver_correlation : a->correlation,
		    .runtimeCorrelationId = a->correlation,
		};
		break;
	case MOCK_MEMSET:
		if (!atomic_load(&cupti.kinds[CUPTI_ACTIVITY_KIND_MEMSET]))
			return false;
		r.memset = (CUpti_ActivityMemset4){
		    .kind = CUPTI_ACTIVITY_KIND_MEMSET,
		    .value = a->value,
		    .bytes = a->bytes,
		    .deviceId = a->device,
		    .contextId = a->context,
		    .streamId = a->stream,
		    .correlationId = a->correlation,
		};
		break;
	default:
		return false;
	}
	*out = r;
	return true;
}

static void hook_activity_queued(const struct mock_activity *a)
{
	union record r;

	if (make_record(a, &r))
		append(&r, record_size(r.base.kind), a->token);
}

/* The operation finished: its record gets its times, and its buffer may go
 * back.  Nothing happens when a forced flush took the record already. */
static void hook_activity(const struct mock_activity *a)
{
	int64_t offset = cupti_clock_offset();
	uint64_t start = a->start_ns + offset, end = a->end_ns + offset;
	union record *r;
	int i;

	pthread_mutex_lock(&cupti.lock);
	for (i = 0; i < cupti.nr_in_flight; i++)
		if (cupti.in_flight[i].token == a->token)
			break;
	if (i == cupti.nr_in_flight)
		goto cleanup;
	r = (union record *)(cupti.in_flight[i].buffer + cupti.in_flight[i].offset);
	if (r->base.kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
		r->memcpy.start = start;
		r->memcpy.end = end;
	} else if (r->base.kind == CUPTI_ACTIVITY_KIND_MEMSET) {
		r->memset.start = start;
		r->memset.end = end;
	} else {
		r->kernel.start = start;
		r->kernel.end = end;
		r->kernel.completed = end;
	}
	if (cupti.in_flight[i].buffer == cupti.buffer) {
		cupti.incomplete--;
	} else {
		for (int p = 0; p < cupti.nr_pending; p++) {
			if (cupti.pending[p].buffer != cupti.in_flight[i].buffer)
				continue;
			if (!--cupti.pending[p].incomplete)
				pthread_cond_signal(&cupti.wake);
			break;
		}
	}
	cupti.in_flight[i] = cupti.in_flight[--cupti.nr_in_flight];
cleanup:
	pthread_mutex_unlock(&cupti.lock);
}

static const struct mock_cuda_tool hooks = {
    .api_enter = hook_api_enter,
    .api_exit = hook_api_exit,
    .activity_queued = hook_activity_queued,
    .activity = hook_activity,
};

/* CUPTI's worker thread: hands full buffers back to the client. */
static void *worker(void *arg)
{
	for (;;) {
		struct pending p;

		bool ready = false;

		pthread_mutex_lock(&cupti.lock);
		for (;;) {
			for (int i = 0; i < cupti.nr_pending && !ready; i++)
				ready = !cupti.pending[i].incomplete;
			if (ready)
				break;
			pthread_cond_wait(&cupti.wake, &cupti.lock);
		}
		pthread_mutex_unlock(&cupti.lock);
		pthread_mutex_lock(&cupti.deliver_lock);
		pthread_mutex_lock(&cupti.lock);
		if (!take_pending(false, &p)) {
			pthread_mutex_unlock(&cupti.lock);
			pthread_mutex_unlock(&cupti.deliver_lock);
			continue;
		}
		pthread_mutex_unlock(&cupti.lock);
		if (cupti.completed && !atomic_load(&torn_down))
			cupti.completed(NULL, 0, p.buffer, p.size, p.valid);
		pthread_mutex_unlock(&cupti.deliver_lock);
	}
	return NULL;
}

static void mock_init(void)
{
	void (*register_tool)(const struct mock_cuda_tool *);
	pthread_t thread;

	cupti.trace = getenv("MOCK_CUPTI_TRACE") != NULL;
	if (getenv("MOCK_CUPTI_BUFFER_RECORDS"))
		cupti.buffer_records = strtoul(getenv("MOCK_CUPTI_BUFFER_RECORDS"), NULL, 10);
	if (getenv("MOCK_CUPTI_CLOCK_SETTLE")) {
		char *end;

		cupti.settle_ms = strtoull(getenv("MOCK_CUPTI_CLOCK_SETTLE"), &end, 10);
		cupti.settle_offset = *end == ':' ? strtoll(end + 1, NULL, 10) * 1000000 : 0;
	}
	cupti.version = getenv("MOCK_CUPTI_VERSION") ? (uint32_t)atoi(getenv("MOCK_CUPTI_VERSION"))
						     : CUPTI_API_VERSION;
	register_tool =
	    (void (*)(const struct mock_cuda_tool *))dlsym(RTLD_DEFAULT, "mock_cuda_register_tool");
	if (!register_tool)
		return;
	register_tool(&hooks);
	pthread_create(&thread, NULL, worker, NULL);
	pthread_detach(thread);
	cupti.hooked = true;
}

static CUptiResult ready_for(const char *function)
{
	check_alive(function);
	pthread_once(&init_once, mock_init);
	return cupti.hooked ? CUPTI_SUCCESS : CUPTI_ERROR_NOT_INITIALIZED;
}

EXPORT CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle *subscriber,
				     CUpti_CallbackFunc callback, void *userdata,
				     CUpti_SubscriberParams *params)
{
	CUptiResult result = ready_for(__func__);

	if (result)
		return result;
	if (!subscriber || (params && params->structSize < CUpti_SubscriberParams_STRUCT_SIZE))
		return CUPTI_ERROR_INVALID_PARAMETER;
	/* CUPTI before 12.6 (API v24) can crash when a client subscribes
	 * again after cuptiFinalize (with CUDA graphs in the process): this
	 * one always does, so a client must not finalize there. */
	if (cupti.finalized && cupti.version < 24) {
		trace("subscribe after finalize on CUPTI v%u: crash", cupti.version);
		abort();
	}
	pthread_mutex_lock(&cupti.lock);
	if (atomic_load(&cupti.subscriber)) {
		if (params && params->oldSubscriberName && params->oldSubscriberSize)
			snprintf(params->oldSubscriberName, params->oldSubscriberSize,
				 "CUPTI for %s", cupti.subscriber_storage.name);
		pthread_mutex_unlock(&cupti.lock);
		trace("subscribe refused: another subscriber");
		return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
	}
	cupti.subscriber_storage.name =
	    params && params->subscriberName ? params->subscriberName : "a client";
	if (cupti.settle_offset && !atomic_load(&cupti.settle_at))
		atomic_store(&cupti.settle_at,
			     clock_ns(CLOCK_MONOTONIC) + cupti.settle_ms * 1000000);
	cupti.userdata = userdata;
	atomic_store(&cupti.callback, callback);
	atomic_store(&cupti.subscriber, &cupti.subscriber_storage);
	atomic_fetch_add(&cupti.subscriptions, 1);
	*subscriber = &cupti.subscriber_storage;
	pthread_mutex_unlock(&cupti.lock);
	trace("subscribe %s", cupti.subscriber_storage.name);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback,
				  void *userdata)
{
	return cuptiSubscribe_v2(subscriber, callback, userdata, NULL);
}

static void clear_callbacks(void)
{
	atomic_store(&cupti.subscriber, NULL);
	atomic_store(&cupti.callback, NULL);
	for (int d = 0; d < CUPTI_CB_DOMAIN_SIZE; d++) {
		atomic_store(&cupti.domains[d], false);
		for (int i = 0; i < MAX_CBID; i++)
			atomic_store(&cupti.cbids[d][i], false);
	}
}

EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle subscriber)
{
	if (ready_for(__func__))
		return CUPTI_ERROR_NOT_INITIALIZED;
	if (!subscriber || subscriber != atomic_load(&cupti.subscriber))
		return CUPTI_ERROR_INVALID_PARAMETER;
	clear_callbacks();
	trace("unsubscribe in_callback=%d", in_callback);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
				       CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
	if (ready_for(__func__))
		return CUPTI_ERROR_NOT_INITIALIZED;
	if (!subscriber || subscriber != atomic_load(&cupti.subscriber) || domain <= 0 ||
	    domain >= CUPTI_CB_DOMAIN_SIZE || cbid >= MAX_CBID)
		return CUPTI_ERROR_INVALID_PARAMETER;
	atomic_store(&cupti.cbids[domain][cbid], enable != 0);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber,
				     CUpti_CallbackDomain domain)
{
	if (ready_for(__func__))
		return CUPTI_ERROR_NOT_INITIALIZED;
	if (!subscriber || subscriber != atomic_load(&cupti.subscriber) || domain <= 0 ||
	    domain >= CUPTI_CB_DOMAIN_SIZE)
		return CUPTI_ERROR_INVALID_PARAMETER;
	atomic_store(&cupti.domains[domain], enable != 0);
	if (!enable)
		for (int i = 0; i < MAX_CBID; i++)
			atomic_store(&cupti.cbids[domain][i], false);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind)
{
	if (ready_for(__func__))
		return CUPTI_ERROR_NOT_INITIALIZED;
	if (kind <= 0 || kind >= MAX_KIND || !record_size(kind))
		return CUPTI_ERROR_NOT_COMPATIBLE;
	pthread_mutex_lock(&cupti.lock);
	cupti.activity_ever_enabled = true;
	pthread_mutex_unlock(&cupti.lock);
	atomic_store(&cupti.kinds[kind], true);
	trace("activity enable kind %d", kind);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind)
{
	if (ready_for(__func__))
		return CUPTI_ERROR_NOT_INITIALIZED;
	if (kind <= 0 || kind >= MAX_KIND)
		return CUPTI_ERROR_INVALID_KIND;
	if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && is_13_0_ga() &&
	    other_thread_launching()) {
		trace("activity disable concurrent kernel on 13.0 GA while another thread "
		      "launches: deadlock");
		pthread_mutex_lock(&cupti.ga_driver_lock);
		for (;;)
			pause();
	}
	atomic_store(&cupti.kinds[kind], false);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
						  CUpti_BuffersCallbackCompleteFunc completed)
{
	if (ready_for(__func__))
		return CUPTI_ERROR_NOT_INITIALIZED;
	if (!requested || !completed)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&cupti.lock);
	cupti.requested = requested;
	cupti.completed = completed;
	pthread_mutex_unlock(&cupti.lock);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc timestamp)
{
	const char *env = getenv("MOCK_CUPTI_TIMESTAMP_CALLBACK");
	bool late;

	if (ready_for(__func__))
		return CUPTI_ERROR_NOT_INITIALIZED;
	if (!timestamp)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (env && !strcmp(env, "reject"))
		return CUPTI_ERROR_NOT_SUPPORTED;
	pthread_mutex_lock(&cupti.lock);
	late = cupti.activity_ever_enabled;
	pthread_mutex_unlock(&cupti.lock);
	if (late && !(env && !strcmp(env, "replace"))) {
		trace("timestamp callback refused: activity enabled already");
		return CUPTI_ERROR_INVALID_OPERATION;
	}
	atomic_store(&cupti.timestamp, timestamp);
	trace("timestamp callback registered");
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid,
					      CUpti_Activity **record)
{
	size_t offset = 0, size;
	CUpti_Activity *next;

	check_alive(__func__);
	if (!buffer || !record)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (*record)
		offset = (uint8_t *)*record - buffer + record_size((*record)->kind);
	if (offset + sizeof(CUpti_Activity) > valid)
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	next = (CUpti_Activity *)(buffer + offset);
	size = record_size(next->kind);
	if (!size || offset + size > valid)
		return CUPTI_ERROR_INVALID_KIND;
	*record = next;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t stream,
						     size_t *dropped)
{
	check_alive(__func__);
	if (!dropped)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&cupti.lock);
	*dropped = cupti.dropped;
	cupti.dropped = 0;
	pthread_mutex_unlock(&cupti.lock);
	return CUPTI_SUCCESS;
}

/* Returns, from the calling thread, every buffer whose records are all
 * complete; with CUPTI_ACTIVITY_FLAG_FLUSH_FORCED every buffer with
 * records, unfinished ones with times of 0 (they stay so). */
EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
	bool forced = flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED;

	if (ready_for(__func__))
		return CUPTI_ERROR_NOT_INITIALIZED;
	trace("flush%s", forced ? " forced" : "");
	if (is_13_0_ga() && other_thread_launching()) {
		trace("flush on 13.0 GA while another thread launches: crash");
		abort();
	}
	pthread_mutex_lock(&cupti.deliver_lock);
	for (;;) {
		struct pending p;

		pthread_mutex_lock(&cupti.lock);
		if (cupti.buffer && cupti.used && (forced || !cupti.incomplete))
			complete_buffer();
		if (!take_pending(forced, &p)) {
			pthread_mutex_unlock(&cupti.lock);
			break;
		}
		pthread_mutex_unlock(&cupti.lock);
		if (cupti.completed)
			cupti.completed(NULL, 0, p.buffer, p.size, p.valid);
	}
	pthread_mutex_unlock(&cupti.deliver_lock);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetTimestamp(uint64_t *timestamp)
{
	check_alive(__func__);
	if (!timestamp)
		return CUPTI_ERROR_INVALID_PARAMETER;
	*timestamp = cupti_now();
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetGraphExecId(CUgraphExec exec, uint32_t *id)
{
	check_alive(__func__);
	if (!exec || !id)
		return CUPTI_ERROR_INVALID_PARAMETER;
	*id = MOCK_GRAPH_EXEC_ID(exec);
	return CUPTI_SUCCESS;
}

/* Detaches: buffers go back to the client, everything is reset, as the
 * real one destroys its state; the next CUPTI call starts afresh. */
EXPORT CUptiResult cuptiFinalize(void)
{
	struct pending back[MAX_PENDING + 1];
	CUpti_BuffersCallbackCompleteFunc completed;
	int nr_back = 0;

	if (ready_for(__func__))
		return CUPTI_ERROR_NOT_INITIALIZED;
	trace("finalize in_callback=%d", in_callback);
	cupti.finalized = true;
	clear_callbacks();
	for (int k = 0; k < MAX_KIND; k++)
		atomic_store(&cupti.kinds[k], false);
	pthread_mutex_lock(&cupti.deliver_lock);
	pthread_mutex_lock(&cupti.lock);
	for (int i = 0; i < cupti.nr_pending; i++)
		back[nr_back++] = cupti.pending[i];
	if (cupti.buffer)
		back[nr_back++] = (struct pending){cupti.buffer, cupti.size, cupti.used};
	forget_in_flight(NULL);
	cupti.incomplete = 0;
	completed = cupti.completed;
	cupti.requested = NULL;
	cupti.completed = NULL;
	cupti.buffer = NULL;
	cupti.used = cupti.records = 0;
	cupti.nr_pending = 0;
	cupti.activity_ever_enabled = false;
	atomic_store(&cupti.timestamp, NULL);
	pthread_mutex_unlock(&cupti.lock);
	for (int i = 0; i < nr_back && completed; i++)
		completed(NULL, 0, back[i].buffer, back[i].size, back[i].valid);
	pthread_mutex_unlock(&cupti.deliver_lock);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetVersion(uint32_t *version)
{
	check_alive(__func__);
	if (!version)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_once(&init_once, mock_init);
	*version = cupti.version ? cupti.version : CUPTI_API_VERSION;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetResultString(CUptiResult result, const char **text)
{
	switch (result) {
	case CUPTI_SUCCESS:
		*text = "CUPTI_SUCCESS";
		break;
	case CUPTI_ERROR_INVALID_PARAMETER:
		*text = "CUPTI_ERROR_INVALID_PARAMETER";
		break;
	case CUPTI_ERROR_INVALID_OPERATION:
		*text = "CUPTI_ERROR_INVALID_OPERATION";
		break;
	case CUPTI_ERROR_NOT_INITIALIZED:
		*text = "CUPTI_ERROR_NOT_INITIALIZED";
		break;
	case CUPTI_ERROR_NOT_SUPPORTED:
		*text = "CUPTI_ERROR_NOT_SUPPORTED";
		break;
	case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
		*text = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
		break;
	default:
		*text = "CUPTI_ERROR_UNKNOWN";
		return CUPTI_ERROR_INVALID_PARAMETER;
	}
	return CUPTI_SUCCESS;
}
