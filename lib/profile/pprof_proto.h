/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The field numbers of pprof's profile.proto (perftools.profiles) that the
 * pprof writer and reader use, and the protobuf wire types.
 */
#ifndef LLMPROF_PPROF_PROTO_H
#define LLMPROF_PPROF_PROTO_H

enum pb_wire_type {
	PB_VARINT = 0,
	PB_FIXED64 = 1,
	PB_LENGTH = 2,
	PB_FIXED32 = 5,
};

/* message Profile */
enum {
	PROFILE_SAMPLE_TYPE = 1,
	PROFILE_SAMPLE = 2,
	PROFILE_MAPPING = 3,
	PROFILE_LOCATION = 4,
	PROFILE_FUNCTION = 5,
	PROFILE_STRING_TABLE = 6,
	PROFILE_TIME_NANOS = 9,
	PROFILE_DURATION_NANOS = 10,
	PROFILE_PERIOD_TYPE = 11,
	PROFILE_PERIOD = 12,
	PROFILE_DEFAULT_SAMPLE_TYPE = 14,
};

/* message ValueType */
enum {
	VALUE_TYPE_TYPE = 1,
	VALUE_TYPE_UNIT = 2,
};

/* message Sample */
enum {
	SAMPLE_LOCATION_ID = 1,
	SAMPLE_VALUE = 2,
	SAMPLE_LABEL = 3,
};

/* message Label */
enum {
	LABEL_KEY = 1,
	LABEL_STR = 2,
	LABEL_NUM = 3,
};

/* message Mapping */
enum {
	MAPPING_ID = 1,
	MAPPING_MEMORY_START = 2,
	MAPPING_MEMORY_LIMIT = 3,
	MAPPING_FILE_OFFSET = 4,
	MAPPING_FILENAME = 5,
	MAPPING_HAS_FUNCTIONS = 7,
	MAPPING_HAS_FILENAMES = 8,
	MAPPING_HAS_LINE_NUMBERS = 9,
	MAPPING_HAS_INLINE_FRAMES = 10,
};

/* message Location */
enum {
	LOCATION_ID = 1,
	LOCATION_MAPPING_ID = 2,
	LOCATION_ADDRESS = 3,
	LOCATION_LINE = 4,
};

/* message Line */
enum {
	LINE_FUNCTION_ID = 1,
	LINE_LINE = 2,
};

/* message Function */
enum {
	FUNCTION_ID = 1,
	FUNCTION_NAME = 2,
	FUNCTION_FILENAME = 4,
};

#endif /* LLMPROF_PPROF_PROTO_H */
