// SPDX-License-Identifier: GPL-2.0
/*
 * What the pprof reader reads below profile.proto's messages: protobuf's
 * wire format, decoded field by field without a protobuf library, and the
 * gzip around it (zlib).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <zlib.h>

#include "array.h"
#include "profile/pprof_wire.h"

bool pb_varint(struct span *in, uint64_t *value)
{
	uint64_t v = 0;

	for (unsigned shift = 0; shift < 64; shift += 7) {
		uint8_t byte;

		if (!in->len)
			return false;
		byte = *in->data++;
		in->len--;
		v |= (uint64_t)(byte & 0x7f) << shift;
		if (!(byte & 0x80)) {
			*value = v;
			return true;
		}
	}
	return false;
}

/* 1 and the next field, 0 at the end, -EINVAL when malformed. */
int pb_next(struct span *in, struct pb_field *f)
{
	uint64_t tag, n;

	if (!in->len)
		return 0;
	if (!pb_varint(in, &tag) || tag >> 3 == 0 || tag >> 3 > UINT32_MAX)
		return -EINVAL;
	f->number = tag >> 3;
	f->wire = tag & 7;
	switch (f->wire) {
	case PB_VARINT:
		return pb_varint(in, &f->value) ? 1 : -EINVAL;
	case PB_FIXED64:
	case PB_FIXED32:
		n = f->wire == PB_FIXED64 ? 8 : 4;
		if (in->len < n)
			return -EINVAL;
		f->value = 0;
		for (unsigned i = 0; i < n; i++)
			f->value |= (uint64_t)in->data[i] << (8 * i);
		in->data += n;
		in->len -= n;
		return 1;
	case PB_LENGTH:
		if (!pb_varint(in, &n) || n > in->len)
			return -EINVAL;
		f->data = (struct span){in->data, n};
		in->data += n;
		in->len -= n;
		return 1;
	default:
		return -EINVAL; /* groups are not in profile.proto */
	}
}

/* A repeated integer field is packed (PB_LENGTH) or one value per field;
 * calls add for each value.  0 or -EINVAL / the error of add. */
int pb_repeated(const struct pb_field *f, int (*add)(void *ctx, uint64_t v), void *ctx)
{
	struct span packed = f->data;
	uint64_t v;
	int err;

	if (f->wire == PB_VARINT)
		return add(ctx, f->value);
	if (f->wire != PB_LENGTH)
		return -EINVAL;
	while (packed.len) {
		if (!pb_varint(&packed, &v))
			return -EINVAL;
		err = add(ctx, v);
		if (err)
			return err;
	}
	return 0;
}

/* Inflates gzip (or zlib) data whole.  0, -EINVAL or -ENOMEM. */
int gunzip(struct span in, uint8_t **out, size_t *out_len, char *message, size_t message_size)
{
	z_stream z = {0};
	size_t cap = 0, len = 0;
	uint8_t *buf = NULL;
	int ret, err = 0;

	if (inflateInit2(&z, 15 + 32) != Z_OK)
		return -ENOMEM;
	z.next_in = (uint8_t *)in.data;
	do {
		size_t step = in.len > (1u << 30) ? 1u << 30 : in.len;

		z.avail_in = step;
		in.len -= step;
		do {
			if (len >= MAX_DECOMPRESSED) {
				snprintf(message, message_size,
					 "pprof data inflates to more than %llu MiB",
					 MAX_DECOMPRESSED >> 20);
				err = -EINVAL;
				goto cleanup;
			}
			if (array__grow((void **)&buf, &cap, len + READ_CHUNK, 1)) {
				err = -ENOMEM;
				goto cleanup;
			}
			z.next_out = buf + len;
			z.avail_out = cap - len > (1u << 30) ? 1u << 30 : cap - len;
			{
				size_t room = z.avail_out;

				ret = inflate(&z, Z_NO_FLUSH);
				len += room - z.avail_out;
			}
			if (ret == Z_STREAM_END)
				goto done;
			if (ret == Z_MEM_ERROR) {
				err = -ENOMEM;
				goto cleanup;
			}
			if (ret != Z_OK && ret != Z_BUF_ERROR) {
				snprintf(message, message_size, "corrupt gzip data (%s)",
					 z.msg ? z.msg : "bad stream");
				err = -EINVAL;
				goto cleanup;
			}
		} while (z.avail_out == 0);
	} while (in.len);
	snprintf(message, message_size, "truncated gzip data");
	err = -EINVAL;
	goto cleanup;
done:
	*out = buf;
	*out_len = len;
	buf = NULL;
cleanup:
	inflateEnd(&z);
	free(buf);
	return err;
}
