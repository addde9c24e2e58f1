// SPDX-License-Identifier: GPL-2.0
/*
 * GPU memory: uprobes on the CUDA driver's and runtime's allocation, free
 * and mapping calls.  The entry probe keeps the arguments of a thread's
 * outermost call (the runtime's cudaMalloc calls the driver's cuMemAlloc
 * inside; one allocation is one record); the return probe reads the address
 * the call wrote and its status, and sends the record with the stacks of the
 * caller, which is where the thread is once the call has returned.  Probes
 * on cuGetProcAddress tell userspace the addresses the driver hands out for
 * those calls, which may be internal functions it must probe as well.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "gpu_memory.h"
#include "library_call.bpf.h"

/* A thread's outermost call in progress. */
struct pending_call {
	struct library_call head;
	__u64 size;
	__u64 out; /* where the call writes the address or handle */
	__u64 address;
	__u64 pitch_out;
	__u64 handle;
	__s32 device;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, GPU_MEMORY_MAX_THREADS);
	__type(key, __u32);
	__type(value, struct pending_call);
} gpu_memory_pending SEC(".maps");

/* A thread's cuGetProcAddress in progress: the name asked for and where
 * the address goes. */
struct entry_lookup {
	__u64 symbol;
	__u64 out;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, GPU_MEMORY_MAX_THREADS);
	__type(key, __u32);
	__type(value, struct entry_lookup);
} gpu_memory_lookups SEC(".maps");

/* The driver calls of the table by the name cuGetProcAddress takes (NUL
 * padded), to the call's cookie; filled by userspace. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, char[GPU_MEMORY_ENTRY_NAME_BYTES]);
	__type(value, __u64);
} gpu_memory_entry_names SEC(".maps");

/* Addresses handed out already, by process: each is told once. */
struct entry_seen {
	__u64 address;
	__u32 pid;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, GPU_MEMORY_MAX_ENTRY_POINTS);
	__type(key, struct entry_seen);
	__type(value, __u8);
} gpu_memory_entry_seen SEC(".maps");

/* The device each thread last chose with cudaSetDevice. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, GPU_MEMORY_MAX_THREADS);
	__type(key, __u32);
	__type(value, __s32);
} gpu_memory_device SEC(".maps");

static __always_inline __u64 read_user_u64(__u64 address)
{
	__u64 value = 0;

	if (address)
		bpf_probe_read_user(&value, sizeof(value), (const void *)address);
	return value;
}

SEC("uprobe")
int gpu_memory_enter(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), cookie = bpf_get_attach_cookie(ctx);
	__u32 tid = (__u32)id, shape = GPU_MEMORY_COOKIE_SHAPE(cookie);
	struct pending_call call = {};
	__u64 sp = PT_REGS_SP(ctx);
	__s32 *device;

	if (!targets__contains(id >> 32))
		return 0;
	if (shape == GPU_MEMORY_SET_DEVICE) {
		__s32 ordinal = (__s32)PT_REGS_PARM1(ctx);

		bpf_map_update_elem(&gpu_memory_device, &tid, &ordinal, BPF_ANY);
		return 0;
	}
	/* Not an allocation: made inside one (the runtime resolving the
	 * driver's functions in its first cudaMalloc) it is still looked at. */
	if (shape == GPU_MEMORY_ENTRY_POINT) {
		struct entry_lookup lookup = {PT_REGS_PARM1(ctx), PT_REGS_PARM2(ctx)};

		bpf_map_update_elem(&gpu_memory_lookups, &tid, &lookup, BPF_ANY);
		return 0;
	}
	if (library_call__nested(&gpu_memory_pending, tid, sp))
		return 0;
	library_call__begin(&call.head, cookie, sp);
	device = bpf_map_lookup_elem(&gpu_memory_device, &tid);
	call.device = device ? *device : GPU_MEMORY_DEFAULT_DEVICE;
	switch (shape) {
	case GPU_MEMORY_ALLOC:
		call.out = PT_REGS_PARM1(ctx);
		call.size = PT_REGS_PARM2(ctx);
		break;
	case GPU_MEMORY_ALLOC_PITCH:
		call.out = PT_REGS_PARM1(ctx);
		call.pitch_out = PT_REGS_PARM2(ctx);
		call.size = PT_REGS_PARM4(ctx); /* height, times the pitch at return */
		break;
	case GPU_MEMORY_CREATE: {
		/* CUmemAllocationProp: type, requestedHandleTypes, then
		 * location { type, id }. */
		__s32 location[2] = {};

		call.out = PT_REGS_PARM1(ctx);
		call.size = PT_REGS_PARM2(ctx);
		if (PT_REGS_PARM3(ctx) &&
		    !bpf_probe_read_user(location, sizeof(location),
					 (const void *)(PT_REGS_PARM3(ctx) + 8)))
			call.device = location[1];
		break;
	}
	case GPU_MEMORY_FREE:
		call.address = PT_REGS_PARM1(ctx);
		break;
	case GPU_MEMORY_MAP:
		call.address = PT_REGS_PARM1(ctx);
		call.size = PT_REGS_PARM2(ctx);
		call.handle = PT_REGS_PARM4(ctx);
		break;
	case GPU_MEMORY_UNMAP:
		call.address = PT_REGS_PARM1(ctx);
		call.size = PT_REGS_PARM2(ctx);
		break;
	default:
		return 0;
	}
	bpf_map_update_elem(&gpu_memory_pending, &tid, &call, BPF_ANY);
	return 0;
}

/*
 * cuGetProcAddress returned: the address it handed out for a call of the
 * table, the first time in the process, goes to userspace, which probes it
 * where it is not the exported function.  A record target stops until then
 * (as at a library load), so the pointer's first call is seen.
 */
static __always_inline int entry_point_return(struct pt_regs *ctx, __u32 tid)
{
	char name[GPU_MEMORY_ENTRY_NAME_BYTES] = {};
	struct entry_lookup *lookup = bpf_map_lookup_elem(&gpu_memory_lookups, &tid);
	struct entry_seen seen = {.pid = bpf_get_current_pid_tgid() >> 32};
	struct sample_event *event;
	__u64 *cookie, symbol, out;
	__u8 one = 1;

	if (!lookup)
		return 0;
	symbol = lookup->symbol;
	out = lookup->out;
	bpf_map_delete_elem(&gpu_memory_lookups, &tid);
	if ((__s32)PT_REGS_RC(ctx) || !symbol ||
	    bpf_probe_read_user_str(name, sizeof(name), (const void *)symbol) <= 0)
		return 0;
	cookie = bpf_map_lookup_elem(&gpu_memory_entry_names, name);
	if (!cookie)
		return 0;
	seen.address = read_user_u64(out);
	if (!seen.address || bpf_map_lookup_elem(&gpu_memory_entry_seen, &seen))
		return 0;
	event = library_call__reserve(SAMPLE_KIND_GPU_MEMORY, COUNTER_LOST_GPU_MEMORY);
	if (!event)
		return 0;
	bpf_map_update_elem(&gpu_memory_entry_seen, &seen, &one, BPF_ANY);
	if (stop_on_load)
		bpf_send_signal(SIGSTOP);
	event->detail[GPU_MEMORY_DETAIL_CALL] = *cookie;
	event->detail[GPU_MEMORY_DETAIL_ENTRY_ADDRESS] = seen.address;
	capture__stacks(ctx, event, false);
	capture__submit(event, true);
	return 0;
}

SEC("uretprobe")
int gpu_memory_return(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id, shape;
	struct pending_call *pending;
	struct sample_event *event;
	__s32 result;

	if (GPU_MEMORY_COOKIE_SHAPE(bpf_get_attach_cookie(ctx)) == GPU_MEMORY_ENTRY_POINT)
		return entry_point_return(ctx, tid);
	pending = library_call__end(&gpu_memory_pending, tid);
	if (!pending)
		return 0;
	shape = GPU_MEMORY_COOKIE_SHAPE(pending->head.cookie);
	result = (__s32)PT_REGS_RC(ctx);
	if (!result) {
		if (shape == GPU_MEMORY_ALLOC || shape == GPU_MEMORY_CREATE) {
			pending->address = read_user_u64(pending->out);
		} else if (shape == GPU_MEMORY_ALLOC_PITCH) {
			pending->address = read_user_u64(pending->out);
			pending->size *= read_user_u64(pending->pitch_out);
		}
	}
	count(COUNTER_GPU_MEMORY);
	event = library_call__reserve(SAMPLE_KIND_GPU_MEMORY, COUNTER_LOST_GPU_MEMORY);
	if (!event)
		return 0;
	event->detail[GPU_MEMORY_DETAIL_CALL] = pending->head.cookie;
	event->detail[GPU_MEMORY_DETAIL_RESULT] = (__s64)result;
	event->detail[GPU_MEMORY_DETAIL_SIZE] = pending->size;
	event->detail[GPU_MEMORY_DETAIL_ADDRESS] = pending->address;
	event->detail[GPU_MEMORY_DETAIL_DEVICE] = (__s64)pending->device;
	event->detail[GPU_MEMORY_DETAIL_HANDLE] = pending->handle;
	event->detail[GPU_MEMORY_DETAIL_START_NS] = pending->head.start_ns;
	capture__stacks(ctx, event, false);
	capture__submit(event, false);
	return 0;
}

/* The dynamic loader's _dl_debug_state(): userspace looks for a CUDA
 * library to probe. */
SEC("uprobe")
int gpu_memory_loader(struct pt_regs *ctx)
{
	return library_call__loader(ctx, SAMPLE_KIND_GPU_MEMORY, COUNTER_LOST_GPU_MEMORY,
				    GPU_MEMORY_LOADER);
}

char LICENSE[] SEC("license") = "GPL";
