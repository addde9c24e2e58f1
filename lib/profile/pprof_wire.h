/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The pprof reader's decoding below profile.proto's messages (pprof_wire.c):
 * protobuf fields from a span of bytes, and gzip.
 */
#ifndef LLMPROF_PPROF_WIRE_H
#define LLMPROF_PPROF_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/pprof_proto.h"

#define MAX_DECOMPRESSED (1ULL << 30)
#define READ_CHUNK (64 * 1024)

struct span {
	const uint8_t *data;
	size_t len;
};

struct pb_field {
	uint32_t number;
	enum pb_wire_type wire;
	uint64_t value;	  /* PB_VARINT, PB_FIXED64, PB_FIXED32 */
	struct span data; /* PB_LENGTH */
};

bool pb_varint(struct span *in, uint64_t *value);
int pb_next(struct span *in, struct pb_field *f);
int pb_repeated(const struct pb_field *f, int (*add)(void *ctx, uint64_t v), void *ctx);
int gunzip(struct span in, uint8_t **out, size_t *out_len, char *message, size_t message_size);

#endif
