// SPDX-License-Identifier: GPL-2.0
/*
 * Test driver for lib/inject.c: reads a shared object into memory and
 * injects it into a process, or reports whether a process has CUDA.
 *
 *   inject_tool [--timeout-ms N] [--hold-ms N] [--require-cuda] PID LIBRARY SYMBOL ARG
 *   inject_tool --has-cuda PID
 *
 * Prints one line of results on stdout.  Exit 0 on success, 1 when the
 * injection failed, 2 on a usage error, 3 when --require-cuda found no CUDA
 * (and nothing was injected).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "inject/inject.h"
#include "inject/inject_internal.h"
#include "status.h"

static void usage(void)
{
	fprintf(stderr, "usage: inject_tool [--timeout-ms N] [--hold-ms N] [--require-cuda] PID "
			"LIBRARY SYMBOL ARG\n"
			"       inject_tool --has-cuda PID\n"
			"       inject_tool --unsafe-library NAME\n");
	exit(2);
}

static long parse_number(const char *text, const char *what, long min, long max)
{
	char *end;
	long value;

	errno = 0;
	value = strtol(text, &end, 10);
	if (errno || end == text || *end || value < min || value > max) {
		fprintf(stderr, "inject_tool: bad %s '%s'\n", what, text);
		exit(2);
	}
	return value;
}

static int read_file(const char *path, void **data, size_t *size)
{
	struct stat st;
	size_t done = 0;
	ssize_t n;
	char *buf;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return -errno;
	}
	buf = malloc(st.st_size ? st.st_size : 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while (done < (size_t)st.st_size) {
		n = read(fd, buf + done, st.st_size - done);
		if (n <= 0) {
			free(buf);
			close(fd);
			return n < 0 ? -errno : -EIO;
		}
		done += n;
	}
	close(fd);
	*data = buf;
	*size = done;
	return 0;
}

int main(int argc, char **argv)
{
	struct inject_request request = {};
	struct inject_result result;
	bool require_cuda = false, has_cuda;
	char cupti[PATH_MAX];
	void *image = NULL;
	size_t size = 0;
	pid_t pid;
	int i, err;

	status__set_level(getenv("INJECT_VERBOSE") ? STATUS_VERBOSE : STATUS_NORMAL);
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "--timeout-ms") == 0 && i + 1 < argc) {
			request.timeout_ms = parse_number(argv[++i], "--timeout-ms", 1, 600000);
		} else if (strcmp(argv[i], "--hold-ms") == 0 && i + 1 < argc) {
			request.hold_stopped_ms = parse_number(argv[++i], "--hold-ms", 0, 600000);
		} else if (strcmp(argv[i], "--require-cuda") == 0) {
			require_cuda = true;
		} else if (strcmp(argv[i], "--unsafe-library") == 0 && i + 2 == argc) {
			printf("%d\n", library_name__is_unsafe_to_interrupt(argv[i + 1]));
			return 0;
		} else if (strcmp(argv[i], "--has-cuda") == 0 && i + 2 == argc) {
			pid = parse_number(argv[i + 1], "PID", 1, INT_MAX);
			err = inject__process_has_cuda(pid, &has_cuda, cupti, sizeof(cupti));
			if (err) {
				fprintf(stderr, "inject_tool: %d: %s\n", pid, strerror(-err));
				return 1;
			}
			printf("cuda=%d cupti=%s\n", has_cuda, cupti[0] ? cupti : "-");
			return 0;
		} else {
			usage();
		}
	}
	if (argc - i != 4)
		usage();
	pid = parse_number(argv[i], "PID", 1, INT_MAX);
	if (require_cuda) {
		err = inject__process_has_cuda(pid, &has_cuda, cupti, sizeof(cupti));
		if (err) {
			fprintf(stderr, "inject_tool: %d: %s\n", pid, strerror(-err));
			return 1;
		}
		if (!has_cuda) {
			fprintf(stderr,
				"inject_tool: process %d has no CUDA loaded: nothing injected\n",
				pid);
			return 3;
		}
	}
	err = read_file(argv[i + 1], &image, &size);
	if (err) {
		fprintf(stderr, "inject_tool: %s: %s\n", argv[i + 1], strerror(-err));
		return 1;
	}
	request.image = image;
	request.image_size = size;
	request.start_symbol = argv[i + 2];
	request.argument = argv[i + 3];
	err = inject__run(pid, &request, &result);
	printf("err=%d result=%d tid=%d syscall=%ld ret=%ld attempts=%u signals=%u total_ms=%.3f "
	       "stopped_ms=%.3f\n",
	       err, err ? 0 : result.start_result, result.tid, result.interrupted_syscall,
	       result.interrupted_return, result.attempts, result.signals_held,
	       result.total_ns / 1e6, result.stopped_ns / 1e6);
	free(image);
	if (fflush(stdout) || ferror(stdout))
		return 1;
	if (err) {
		fprintf(stderr, "inject_tool: injecting into %d: %s%s%s\n", pid, strerror(-err),
			result.message[0] ? ": " : "", result.message);
		return 1;
	}
	if (result.message[0])
		fprintf(stderr, "inject_tool: note: %s\n", result.message);
	return 0;
}
