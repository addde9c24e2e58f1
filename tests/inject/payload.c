// SPDX-License-Identifier: GPL-2.0
/*
 * The test payload injected into targets: records that it ran, in which
 * process and thread, to the file its argument names, and returns 42.
 * Argument: "PATH[;started][;sleep=MS][;thread][;pending][;exit]", options
 * acted on in order: started records that the call began.
 * With PAYLOAD_CTOR_RECORD=FILE in the target's environment, loading the
 * payload the first time sleeps PAYLOAD_CTOR_SLEEP_MS in its constructor
 * (a slow dlopen) and then records "ctor done" to FILE.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static char record_path[4096];

static void record(const char *fmt, const char *text, unsigned long long value)
{
	char line[8192];
	int fd, n;

	n = snprintf(line, sizeof(line), fmt, (int)getpid(), (int)syscall(SYS_gettid), text, value);
	fd = open(record_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (write(fd, line, n) != n)
		n = -1;
	close(fd);
}

/* The value after key in this thread's /proc status, in hex. */
static unsigned long long status_hex(const char *key)
{
	char text[8192], *line;
	ssize_t n;
	int fd;

	fd = open("/proc/thread-self/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	text[n] = '\0';
	line = strstr(text, key);
	return line ? strtoull(line + strlen(key), NULL, 16) : 0;
}

static void *payload_thread(void *arg)
{
	record("thread pid=%d tid=%d %s sigblk=%llx\n", "blocked", status_hex("SigBlk:"));
	return NULL;
}

__attribute__((constructor)) static void payload_load(void)
{
	const char *path = getenv("PAYLOAD_CTOR_RECORD"),
		   *sleep_ms = getenv("PAYLOAD_CTOR_SLEEP_MS");
	long ms = sleep_ms ? atol(sleep_ms) : 0;
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	if (!path || access(path, F_OK) == 0 ||
	    snprintf(record_path, sizeof(record_path), "%s", path) >= (int)sizeof(record_path))
		return;
	nanosleep(&ts, NULL);
	record("ctor done pid=%d tid=%d %s %llu\n", "-", 0);
}

int payload_start(const char *arg)
{
	const char *option;
	size_t len = strcspn(arg, ";");
	pthread_t thread;

	if (len >= sizeof(record_path))
		return -1;
	memcpy(record_path, arg, len);
	record_path[len] = '\0';
	for (option = arg + len; *option == ';'; option += strcspn(option + 1, ";") + 1) {
		if (strncmp(option + 1, "sleep=", 6) == 0) {
			long ms = atol(option + 7);
			struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

			nanosleep(&ts, NULL);
		} else if (strncmp(option + 1, "thread", 6) == 0) {
			if (pthread_create(&thread, NULL, payload_thread, NULL) == 0)
				pthread_join(thread, NULL);
		} else if (strncmp(option + 1, "pending", 7) == 0) {
			record("pending pid=%d tid=%d %s %llx\n", "signals",
			       status_hex("SigPnd:") | status_hex("ShdPnd:"));
		} else if (strncmp(option + 1, "started", 7) == 0) {
			record("started pid=%d tid=%d %s %llu\n", "-", 0);
		} else if (strncmp(option + 1, "exit", 4) == 0) {
			_exit(7);
		}
	}
	record("ran pid=%d tid=%d arg=%s %llu\n", arg, 42);
	/* Real code leaves errno changed; the injector must put it back. */
	close(-1);
	return 42;
}
