// SPDX-License-Identifier: GPL-2.0
/*
 * Would the target's seccomp filter let the injection's system calls
 * through?  A filter that kills on memfd_create or mmap (sandboxes, some
 * container profiles) turns an injection into a dead process: the filter is
 * read from the seized thread (PTRACE_SECCOMP_GET_FILTER) and run here, on
 * the calls the injection, the target's dlopen and the agent make, before
 * any of them is made in the target.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>

#include "inject/inject_internal.h"

#ifndef PTRACE_SECCOMP_GET_FILTER
#define PTRACE_SECCOMP_GET_FILTER 0x420c
#endif
#ifndef SECCOMP_RET_KILL_PROCESS
#define SECCOMP_RET_KILL_PROCESS 0x80000000U
#endif
#ifndef SECCOMP_RET_ACTION_FULL
#define SECCOMP_RET_ACTION_FULL 0xffff0000U
#endif
#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 1U
#endif

#define FILTER_MAX_INSNS 4096 /* BPF_MAXINSNS */
#define FILTER_MAX_COUNT 64

/* One system call as the filter sees it, and whether an errno answer
 * (not only a kill) already defeats the injection. */
struct probed_call {
	const char *name;
	int nr;
	uint64_t args[6];
	bool needs_success;
};

/*
 * The calls in the order they come: the injection's own (they must succeed),
 * then the target's dlopen of the agent and the agent's start (an errno
 * there fails the injection cleanly; only a kill or a trap harms).
 */
static const struct probed_call probed_calls[] = {
    {"mmap",
     SYS_mmap,
     {0, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE,
      (uint64_t)-1, 0},
     true},
    {"mprotect", SYS_mprotect, {0, 4096, PROT_READ | PROT_EXEC}, true},
    {"memfd_create", SYS_memfd_create, {0, MFD_CLOEXEC}, true},
    {"close", SYS_close, {3}, true},
    {"munmap", SYS_munmap, {0, 1 << 20}, true},
    {"rt_sigreturn", SYS_rt_sigreturn, {0}, true},
    {"openat", SYS_openat, {(uint64_t)-100, 0, 0x80000 /* O_RDONLY|O_CLOEXEC */}, false},
    {"read", SYS_read, {3, 0, 832}, false},
    {"pread64", SYS_pread64, {3, 0, 784, 64}, false},
    {"newfstatat", SYS_newfstatat, {3, 0, 0, 0x1000 /* AT_EMPTY_PATH */}, false},
    {"fstat", SYS_fstat, {3}, false},
    {"mmap",
     SYS_mmap,
     {0, 1 << 20, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_DENYWRITE, 3, 0},
     false},
    {"mmap", SYS_mmap, {0, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, 3, 0}, false},
    {"futex", SYS_futex, {0, 0x81 /* FUTEX_WAKE_PRIVATE */, 1}, false},
    {"clone3", SYS_clone3, {0, 88}, false},
    {"clone", SYS_clone, {0x3d0f00}, false},
    {"rt_sigprocmask", SYS_rt_sigprocmask, {0, 0, 0, 8}, false},
    {"socket", SYS_socket, {1 /* AF_UNIX */, 0x80001 /* SOCK_STREAM|SOCK_CLOEXEC */, 0}, false},
    {"connect", SYS_connect, {3, 0, 110}, false},
    {"sendmsg", SYS_sendmsg, {3, 0, 0x4000 /* MSG_NOSIGNAL */}, false},
    {"write", SYS_write, {3, 0, 64}, false},
};

static int32_t action_rank(uint32_t ret)
{
	/* The kernel keeps the lowest action, compared as signed: KILL_PROCESS
	 * (0x80000000) first, then KILL_THREAD (0), TRAP, ERRNO, ... ALLOW. */
	return (int32_t)(ret & SECCOMP_RET_ACTION_FULL);
}

/* The value a load (BPF_LD or BPF_LDX) reads: a word of data, its length,
 * the constant or a scratch word. */
static int filter__load(const struct sock_filter *in, const struct seccomp_data *data,
			const uint32_t *mem, uint32_t *value)
{
	uint32_t k = in->k;

	switch (BPF_MODE(in->code)) {
	case BPF_ABS:
		if (BPF_SIZE(in->code) != BPF_W || k % 4 || k > sizeof(*data) - 4)
			return -EINVAL;
		memcpy(value, (const unsigned char *)data + k, 4);
		return 0;
	case BPF_LEN:
		*value = sizeof(*data);
		return 0;
	case BPF_IMM:
		*value = k;
		return 0;
	case BPF_MEM:
		if (k >= BPF_MEMWORDS)
			return -EINVAL;
		*value = mem[k];
		return 0;
	default:
		return -EINVAL;
	}
}

/* An arithmetic instruction on the accumulator (a division by zero
 * leaves 0). */
static int filter__alu(uint16_t code, uint32_t *a, uint32_t operand)
{
	switch (BPF_OP(code)) {
	case BPF_ADD:
		*a += operand;
		break;
	case BPF_SUB:
		*a -= operand;
		break;
	case BPF_MUL:
		*a *= operand;
		break;
	case BPF_DIV:
		*a = operand ? *a / operand : 0;
		break;
	case BPF_MOD:
		*a = operand ? *a % operand : 0;
		break;
	case BPF_OR:
		*a |= operand;
		break;
	case BPF_AND:
		*a &= operand;
		break;
	case BPF_XOR:
		*a ^= operand;
		break;
	case BPF_LSH:
		*a = operand < 32 ? *a << operand : 0;
		break;
	case BPF_RSH:
		*a = operand < 32 ? *a >> operand : 0;
		break;
	case BPF_NEG:
		*a = -*a;
		break;
	default:
		return -EINVAL;
	}
	return 0;
}

/* Whether a conditional jump is taken. */
static int filter__jump_taken(uint16_t code, uint32_t a, uint32_t operand, bool *taken)
{
	switch (BPF_OP(code)) {
	case BPF_JEQ:
		*taken = a == operand;
		return 0;
	case BPF_JGT:
		*taken = a > operand;
		return 0;
	case BPF_JGE:
		*taken = a >= operand;
		return 0;
	case BPF_JSET:
		*taken = (a & operand) != 0;
		return 0;
	default:
		return -EINVAL;
	}
}

/* Runs one classic BPF filter on data; 0 when the program is malformed
 * (the kernel would not have accepted it, so it cannot be one). */
static int filter__run(const struct sock_filter *insns, size_t count,
		       const struct seccomp_data *data, uint32_t *ret)
{
	uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = {0};
	size_t pc = 0;

	while (pc < count) {
		const struct sock_filter *in = &insns[pc++];
		uint32_t k = in->k, operand = BPF_SRC(in->code) == BPF_X ? x : k, value;
		bool taken;

		switch (BPF_CLASS(in->code)) {
		case BPF_LD:
		case BPF_LDX:
			if (filter__load(in, data, mem, &value))
				return -EINVAL;
			if (BPF_CLASS(in->code) == BPF_LD)
				a = value;
			else
				x = value;
			break;
		case BPF_ST:
		case BPF_STX:
			if (k >= BPF_MEMWORDS)
				return -EINVAL;
			mem[k] = BPF_CLASS(in->code) == BPF_ST ? a : x;
			break;
		case BPF_ALU:
			if (filter__alu(in->code, &a, operand))
				return -EINVAL;
			break;
		case BPF_JMP:
			if (BPF_OP(in->code) == BPF_JA) {
				pc += k;
				break;
			}
			if (filter__jump_taken(in->code, a, operand, &taken))
				return -EINVAL;
			pc += taken ? in->jt : in->jf;
			break;
		case BPF_RET:
			*ret = BPF_RVAL(in->code) == BPF_A ? a : k;
			return 0;
		case BPF_MISC:
			if (BPF_MISCOP(in->code) == BPF_TAX)
				x = a;
			else
				a = x;
			break;
		default:
			return -EINVAL;
		}
	}
	return -EINVAL; /* fell off the end */
}

static const char *action_name(uint32_t ret)
{
	switch (ret & SECCOMP_RET_ACTION_FULL) {
	case SECCOMP_RET_KILL_PROCESS:
		return "kills the process";
	case SECCOMP_RET_KILL_THREAD:
		return "kills the thread";
	case SECCOMP_RET_TRAP:
		return "raises SIGSYS";
	case SECCOMP_RET_ERRNO:
		return "refuses";
	default:
		return "intercepts";
	}
}

/* The filters of a thread we hold stopped: count, or -errno. */
static int filters__read(pid_t tid, struct sock_filter **programs, size_t *sizes)
{
	int count = 0;

	for (count = 0; count < FILTER_MAX_COUNT; count++) {
		long n = ptrace(PTRACE_SECCOMP_GET_FILTER, tid, (void *)(long)count, NULL);

		if (n < 0) {
			if (errno == ENOENT)
				break;
			return -errno;
		}
		if (n == 0 || n > FILTER_MAX_INSNS)
			return -EINVAL;
		programs[count] = calloc((size_t)n, sizeof(struct sock_filter));
		if (!programs[count])
			return -ENOMEM;
		sizes[count] = (size_t)n;
		if (ptrace(PTRACE_SECCOMP_GET_FILTER, tid, (void *)(long)count, programs[count]) !=
		    n) {
			free(programs[count]);
			programs[count] = NULL;
			return errno ? -errno : -EIO;
		}
	}
	return count;
}

int seccomp_filter__allows_injection(pid_t pid, pid_t tid, struct inject_result *result)
{
	struct sock_filter *programs[FILTER_MAX_COUNT] = {0};
	size_t sizes[FILTER_MAX_COUNT] = {0}, i;
	int count, f, err = 0;

	count = filters__read(tid, programs, sizes);
	if (count < 0) {
		/* Kernels without CONFIG_CHECKPOINT_RESTORE cannot show the filter;
		 * the common ones (container defaults) answer with errno, which
		 * fails an injection cleanly. */
		err = count == -EINVAL || count == -EACCES || count == -EPERM ? 0 : count;
		goto cleanup;
	}
	for (i = 0; i < sizeof(probed_calls) / sizeof(probed_calls[0]); i++) {
		const struct probed_call *call = &probed_calls[i];
		struct seccomp_data data;
		uint32_t verdict = SECCOMP_RET_ALLOW, ret;

		memset(&data, 0, sizeof(data));
		data.nr = call->nr;
		data.arch = AUDIT_ARCH_X86_64;
		memcpy(data.args, call->args, sizeof(data.args));
		for (f = 0; f < count; f++) {
			if (filter__run(programs[f], sizes[f], &data, &ret))
				continue;
			if (action_rank(ret) < action_rank(verdict))
				verdict = ret;
		}
		switch (verdict & SECCOMP_RET_ACTION_FULL) {
		case SECCOMP_RET_ALLOW:
		case SECCOMP_RET_LOG:
			continue;
		case SECCOMP_RET_ERRNO:
		case SECCOMP_RET_TRACE:
		case SECCOMP_RET_USER_NOTIF:
			if (!call->needs_success)
				continue;
			break;
		default:
			break;
		}
		inject_result__say(result, "the seccomp filter of process %d %s on %s", pid,
				   action_name(verdict), call->name);
		err = -ENOTSUP;
		goto cleanup;
	}
cleanup:
	for (f = 0; f < FILTER_MAX_COUNT; f++)
		free(programs[f]);
	return err;
}
