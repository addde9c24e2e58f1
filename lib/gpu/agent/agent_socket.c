// SPDX-License-Identifier: GPL-2.0
/*
 * The agent's side of the socket to llmprof: connecting, whole messages
 * packed into packets, sends that give up rather than block the CUDA
 * process when llmprof is slow or gone (gpu_protocol.h).
 */
#include "glibc_compat.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent_private.h"

void socket_close(void)
{
	pthread_mutex_lock(&agent.send_lock);
	if (agent.fd >= 0)
		close(agent.fd);
	agent.fd = -1;
	atomic_store(&agent.dead, true);
	pthread_mutex_unlock(&agent.send_lock);
}

/* Sends one packet, waiting at most wait_ms for room; a packet that does
 * not fit in time is dropped and its messages counted. */
void socket_send(const void *data, size_t len, uint32_t messages, int wait_ms)
{
	uint64_t deadline;

	pthread_mutex_lock(&agent.send_lock);
	if (agent.fd < 0 || atomic_load(&agent.dead))
		goto cleanup;
	if (agent.congested)
		wait_ms = 0;
	deadline = monotonic_ns() + wait_ms * 1000000ull;
	for (;;) {
		struct pollfd pfd = {.fd = agent.fd, .events = POLLOUT};
		uint64_t now;

		if (send(agent.fd, data, len, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)len) {
			agent.congested = false;
			break;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != ENOBUFS) {
			atomic_store(&agent.dead, true);
			break;
		}
		now = monotonic_ns();
		if (now >= deadline) {
			agent.congested = true;
			atomic_fetch_add(&agent.dropped_messages, messages);
			break;
		}
		poll(&pfd, 1, (deadline - now) / 1000000 + 1);
	}
cleanup:
	pthread_mutex_unlock(&agent.send_lock);
}

void packet_flush(struct packet *p, int wait_ms)
{
	if (p->used)
		socket_send(p->data, p->used, p->messages, wait_ms);
	p->used = 0;
	p->messages = 0;
}

void packet_add(struct packet *p, uint32_t type, const void *body, size_t body_len,
		const void *text, size_t text_len, int wait_ms)
{
	struct gpu_message_header h = {.type = type};
	size_t len;

	if (text_len > GPU_TEXT_MAX)
		text_len = GPU_TEXT_MAX;
	len = GPU_MSG_ALIGN(sizeof(h) + body_len + text_len);
	if (p->used + len > sizeof(p->data))
		packet_flush(p, wait_ms);
	h.length = len;
	memcpy(p->data + p->used, &h, sizeof(h));
	memcpy(p->data + p->used + sizeof(h), body, body_len);
	if (text_len)
		memcpy(p->data + p->used + sizeof(h) + body_len, text, text_len);
	memset(p->data + p->used + sizeof(h) + body_len + text_len, 0,
	       len - sizeof(h) - body_len - text_len);
	p->used += len;
	p->messages++;
}

/* One control message, sent now, through the thread packet. */
void send_message(uint32_t type, const void *body, size_t body_len, const char *text)
{
	pthread_mutex_lock(&agent.drain_lock);
	packet_add(&agent.thread_packet, type, body, body_len, text, text ? strlen(text) : 0,
		   SEND_WAIT_MS);
	packet_flush(&agent.thread_packet, SEND_WAIT_MS);
	pthread_mutex_unlock(&agent.drain_lock);
}

const char *cupti_error(CUptiResult result)
{
	const char *text = NULL;

	if (agent.cupti.result_string &&
	    agent.cupti.result_string(result, &text) == CUPTI_SUCCESS && text)
		return text;
	return "CUPTI error";
}

void send_error(int error, CUptiResult result, const char *what)
{
	struct gpu_error m = {.error = error, .cupti_result = result};
	char text[512];

	/* Bounded fields: the message fits, and a compiler can see it does. */
	if (result)
		snprintf(text, sizeof(text), "%.200s: %.250s (%d)", what, cupti_error(result),
			 result);
	else
		snprintf(text, sizeof(text), "%.200s: %.250s", what, strerror(-error));
	m.length = strlen(text);
	send_message(GPU_MSG_ERROR, &m, sizeof(m), text);
}

/* Why this process gives no GPU data although CUPTI works: llmprof says
 * "CPU only" with the reason. */
void send_refusal(const char *reason)
{
	struct gpu_error m = {.error = -ENOTSUP, .length = strlen(reason)};

	send_message(GPU_MSG_ERROR, &m, sizeof(m), reason);
}

/* What this session's data lacks, and why: llmprof warns with it. */
void send_notice(const char *text)
{
	struct gpu_error m = {.length = strlen(text)};

	send_message(GPU_MSG_NOTICE, &m, sizeof(m), text);
}

int socket_connect(const char *name)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	size_t len = strlen(name);
	int size = 4 << 20, fd, err;
	struct ucred cred;
	socklen_t cred_len = sizeof(cred);

	if (len < 2 || len >= sizeof(addr.sun_path))
		return -EINVAL;
	memcpy(addr.sun_path, name, len);
	if (name[0] == '@')
		addr.sun_path[0] = '\0';
	else
		len++;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&addr, offsetof(struct sockaddr_un, sun_path) + len)) {
		err = -errno;
		goto cleanup;
	}
	/* Our data goes only to root or our own user. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) ||
	    (cred.uid != 0 && cred.uid != geteuid())) {
		err = -EPERM;
		goto cleanup;
	}
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	return fd;
cleanup:
	close(fd);
	return err;
}

/* Finding libcupti. */
