// SPDX-License-Identifier: GPL-2.0
/*
 * The CUPTI agent's kernel-name table (lib/gpu/agent/agent_activity.c,
 * built in here, with the socket's packet_add() catching the name
 * messages): one id per name, sent once; a pointer CUPTI reuses for
 * another name gets a new id; the table grows from its smallest size, and
 * at its bound later names are dropped, counted, and never given another
 * name's id.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/agent/agent_private.h"

#include "../lib/expect.h"

struct agent agent;

/* The names sent, by id. */
static char *sent[MAX_NAMES + 1];
static size_t nr_sent;

void packet_add(struct packet *p, uint32_t type, const void *body, size_t body_len,
		const void *text, size_t text_len, int wait_ms)
{
	struct gpu_name m;

	if (type != GPU_MSG_NAME || body_len != sizeof(m))
		return;
	memcpy(&m, body, sizeof(m));
	nr_sent++;
	if (m.id && m.id <= MAX_NAMES) {
		free(sent[m.id]);
		sent[m.id] = strndup(text, text_len);
	}
}

void packet_flush(struct packet *p, int wait_ms)
{
}

void measure_offset(void)
{
}

static void forget_sent(void)
{
	for (size_t i = 0; i <= MAX_NAMES; i++) {
		free(sent[i]);
		sent[i] = NULL;
	}
	nr_sent = 0;
}

/* MAX_NAMES + extra distinct names at distinct addresses, as CUPTI's are. */
static void check_bound(size_t extra)
{
	size_t n = MAX_NAMES + extra, wrong = 0, unnamed = 0;
	char **names = calloc(n, sizeof(*names));

	for (size_t i = 0; i < n; i++) {
		char text[64];

		snprintf(text, sizeof(text), "_Z8kernel%zuPf", i);
		names[i] = strdup(text);
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t id = name_id(names[i]);

		if (!id)
			unnamed++;
		else if (!sent[id] || strcmp(sent[id], names[i]))
			wrong++;
		if (i == NAME_SLOTS_MIN / 2 - 1)
			EXPECT(agent.name_slots == NAME_SLOTS_MIN);
		if (i == NAME_SLOTS_MIN / 2)
			EXPECT(agent.name_slots == 2 * NAME_SLOTS_MIN);
	}
	EXPECT(unnamed == extra && !wrong);
	EXPECT(nr_sent == MAX_NAMES);
	EXPECT(agent.name_slots == NAME_SLOTS_MAX && agent.nr_names == MAX_NAMES);
	EXPECT(atomic_load(&agent.dropped_names) == extra);
	/* The names it has keep their ids; the dropped stay dropped. */
	EXPECT(name_id(names[0]) == 1 && name_id(names[MAX_NAMES - 1]) == MAX_NAMES);
	EXPECT(name_id(names[n - 1]) == 0);
	EXPECT(atomic_load(&agent.dropped_names) == extra + 1);
	EXPECT(nr_sent == MAX_NAMES);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

int main(void)
{
	char reused[32] = "_Z3fooPf", *big;
	uint32_t a, b, c;

	EXPECT(name_id(NULL) == 0 && atomic_load(&agent.dropped_names) == 0);
	EXPECT(!agent.names);

	a = name_id("_Z6gemm_kPf");
	b = name_id(reused);
	EXPECT(a == 1 && b == 2 && nr_sent == 2);
	EXPECT(agent.name_slots == NAME_SLOTS_MIN);
	EXPECT(name_id("_Z6gemm_kPf") == a && name_id(reused) == b && nr_sent == 2);
	/* CUPTI freed the name and the pointer now names another kernel. */
	strcpy(reused, "_Z3barPf");
	c = name_id(reused);
	EXPECT(c == 3 && nr_sent == 3 && sent[3] && !strcmp(sent[3], "_Z3barPf"));
	EXPECT(agent.nr_names == 2 && name_id(reused) == c);

	names_reset();
	forget_sent();
	EXPECT(!agent.names && !agent.name_slots && !agent.nr_names);
	check_bound(100);

	/* The bytes bound: names of 64 KiB fill MAX_NAME_BYTES first. */
	names_reset();
	forget_sent();
	atomic_store(&agent.dropped_names, 0);
	big = malloc(65536 + 1);
	memset(big, 'k', 65536);
	big[65536] = '\0';
	{
		size_t fit = MAX_NAME_BYTES / 65536, got = 0;
		char *names[MAX_NAME_BYTES / 65536 + 4];

		for (size_t i = 0; i < fit + 4; i++) {
			names[i] = strdup(big);
			got += name_id(names[i]) != 0;
		}
		EXPECT(got == fit && atomic_load(&agent.dropped_names) == 4);
		for (size_t i = 0; i < fit + 4; i++)
			free(names[i]);
	}
	free(big);
	names_reset();
	forget_sent();
	if (failures)
		fprintf(stderr, "%d failure(s)\n", failures);
	return failures ? 1 : 0;
}
