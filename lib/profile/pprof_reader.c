// SPDX-License-Identifier: GPL-2.0
/*
 * pprof input: gunzips (zlib) and decodes profile.proto without a protobuf
 * library.  The top level is read once into spans, then the functions,
 * mappings and locations into tables by id, then every sample into a stack:
 * pprof lists locations leaf first and a location's inlined lines innermost
 * first, the profile model wants them root first.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "profile/pprof_proto.h"
#include "profile/pprof_reader.h"
#include "profile/pprof_wire.h"
#include "profile/python_frame.h"
#include "profile/profile_reader.h"

/* ---- the parser ------------------------------------------------------- */

struct value_type {
	uint64_t type, unit; /* string indexes */
};

struct function_entry {
	uint64_t id, name, filename;
};

struct mapping_entry {
	uint64_t id, start, offset, filename;
};

struct line_entry {
	uint64_t function;
	uint64_t line;
};

struct location_entry {
	uint64_t id, mapping, address;
	size_t first_line, nr_lines;
	/* Frame ids, root first, in parser.location_frames. */
	size_t first_frame, nr_frames;
};

struct pprof_parser {
	struct profile *profile;
	char *message;
	size_t message_size;

	struct span *strings;
	size_t nr_strings, cap_strings;
	struct span *samples;
	size_t nr_samples, cap_samples;
	struct value_type *sample_types;
	size_t nr_sample_types, cap_sample_types;
	struct function_entry *functions;
	size_t nr_functions, cap_functions;
	struct mapping_entry *mappings;
	size_t nr_mappings, cap_mappings;
	struct location_entry *locations;
	size_t nr_locations, cap_locations;
	struct line_entry *lines;
	size_t nr_lines, cap_lines;
	uint32_t *location_frames;
	size_t nr_location_frames, cap_location_frames;
	struct value_type period_type;
	uint64_t period, duration_ns, default_sample_type;
	const char *sample_index; /* pprof's -sample_index, or NULL */
	/* Per sample type: the profile's value it is (0 the weight, SIZE_MAX
	 * none) and what its numbers are multiplied by. */
	size_t *value_of;
	uint64_t *multiply;

	/* The sample being read. */
	uint64_t *location_ids;
	size_t nr_location_ids, cap_location_ids;
	int64_t *values;
	size_t nr_values, cap_values;
	uint32_t *stack;
	size_t cap_stack;
	char *text; /* a NUL-terminated copy of one string */
	size_t cap_text;
};

static int __attribute__((format(printf, 2, 3)))
malformed(struct pprof_parser *pp, const char *fmt, ...)
{
	va_list ap;
	int n;

	n = snprintf(pp->message, pp->message_size, "not a valid pprof profile: ");
	if (n < 0 || (size_t)n >= pp->message_size)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(pp->message + n, pp->message_size - n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int push(void **array, size_t *nr, size_t *cap, size_t elem, const void *value)
{
	if (array__grow(array, cap, *nr + 1, elem))
		return -ENOMEM;
	memcpy((char *)*array + *nr * elem, value, elem);
	(*nr)++;
	return 0;
}

#define PUSH(pp, name, value)                                                                      \
	push((void **)&(pp)->name, &(pp)->nr_##name, &(pp)->cap_##name, sizeof(*(pp)->name),       \
	     (value))

/* Reads a message's varint fields: values[number] for number < nr; other
 * fields are skipped.  0 or -EINVAL. */
static int read_scalars(struct span message, uint64_t *values, size_t nr)
{
	struct pb_field f;
	int ret;

	memset(values, 0, nr * sizeof(*values));
	while ((ret = pb_next(&message, &f)) > 0)
		if (f.number < nr && f.wire == PB_VARINT)
			values[f.number] = f.value;
	return ret;
}

static int read_value_type(struct pprof_parser *pp, struct span data, struct value_type *vt)
{
	uint64_t v[3];

	if (read_scalars(data, v, 3))
		return malformed(pp, "bad value type");
	vt->type = v[VALUE_TYPE_TYPE];
	vt->unit = v[VALUE_TYPE_UNIT];
	return 0;
}

static int read_location(struct pprof_parser *pp, struct span data)
{
	struct location_entry loc = {.first_line = pp->nr_lines};
	struct pb_field f;
	int ret;

	while ((ret = pb_next(&data, &f)) > 0) {
		uint64_t v[3];

		if (f.wire == PB_VARINT && f.number == LOCATION_ID)
			loc.id = f.value;
		else if (f.wire == PB_VARINT && f.number == LOCATION_MAPPING_ID)
			loc.mapping = f.value;
		else if (f.wire == PB_VARINT && f.number == LOCATION_ADDRESS)
			loc.address = f.value;
		else if (f.wire == PB_LENGTH && f.number == LOCATION_LINE) {
			struct line_entry line;

			if (read_scalars(f.data, v, 3))
				return malformed(pp, "bad line in location %llu",
						 (unsigned long long)loc.id);
			line.function = v[LINE_FUNCTION_ID];
			line.line = v[LINE_LINE];
			if (PUSH(pp, lines, &line))
				return -ENOMEM;
			loc.nr_lines++;
		}
	}
	if (ret)
		return malformed(pp, "bad location");
	if (!loc.id)
		return malformed(pp, "a location without an id");
	return PUSH(pp, locations, &loc);
}

static int read_top_level(struct pprof_parser *pp, struct span data)
{
	struct pb_field f;
	int ret = 0, err = 0;

	while (!err && (ret = pb_next(&data, &f)) > 0) {
		uint64_t v[6];

		if (f.wire == PB_VARINT) {
			if (f.number == PROFILE_PERIOD)
				pp->period = f.value;
			else if (f.number == PROFILE_DURATION_NANOS)
				pp->duration_ns = f.value;
			else if (f.number == PROFILE_DEFAULT_SAMPLE_TYPE)
				pp->default_sample_type = f.value;
			continue;
		}
		if (f.wire != PB_LENGTH)
			continue;
		switch (f.number) {
		case PROFILE_SAMPLE_TYPE: {
			struct value_type vt;

			err = read_value_type(pp, f.data, &vt);
			if (!err)
				err = PUSH(pp, sample_types, &vt);
			break;
		}
		case PROFILE_SAMPLE:
			err = PUSH(pp, samples, &f.data);
			break;
		case PROFILE_MAPPING: {
			struct mapping_entry m;

			if (read_scalars(f.data, v, 6))
				return malformed(pp, "bad mapping");
			m = (struct mapping_entry){.id = v[MAPPING_ID],
						   .start = v[MAPPING_MEMORY_START],
						   .offset = v[MAPPING_FILE_OFFSET],
						   .filename = v[MAPPING_FILENAME]};
			err = PUSH(pp, mappings, &m);
			break;
		}
		case PROFILE_LOCATION:
			err = read_location(pp, f.data);
			break;
		case PROFILE_FUNCTION: {
			struct function_entry fn;

			if (read_scalars(f.data, v, 5))
				return malformed(pp, "bad function");
			fn = (struct function_entry){.id = v[FUNCTION_ID],
						     .name = v[FUNCTION_NAME],
						     .filename = v[FUNCTION_FILENAME]};
			if (!fn.id)
				return malformed(pp, "a function without an id");
			err = PUSH(pp, functions, &fn);
			break;
		}
		case PROFILE_STRING_TABLE:
			err = PUSH(pp, strings, &f.data);
			break;
		case PROFILE_PERIOD_TYPE:
			err = read_value_type(pp, f.data, &pp->period_type);
			break;
		}
	}
	if (err)
		return err;
	return ret ? malformed(pp, "truncated or corrupt field") : 0;
}

static int compare_ids(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Each table's entries start with their uint64_t id: sorted for bsearch,
 * and an id twice is an error. */
static int sort_by_id(struct pprof_parser *pp, void *table, size_t nr, size_t elem,
		      const char *what)
{
	if (nr < 2)
		return 0;
	qsort(table, nr, elem, compare_ids);
	for (size_t i = 1; i < nr; i++)
		if (!compare_ids((char *)table + (i - 1) * elem, (char *)table + i * elem))
			return malformed(
			    pp, "two %ss with id %llu", what,
			    (unsigned long long)*(uint64_t *)((char *)table + i * elem));
	return 0;
}

static void *find_id(void *table, size_t nr, size_t elem, uint64_t id)
{
	return nr ? bsearch(&id, table, nr, elem, compare_ids) : NULL;
}

/* The string at index as NUL-terminated text in pp->text (valid until the
 * next call), or NULL when the index is out of the table. */
static const char *string_at(struct pprof_parser *pp, uint64_t index)
{
	const struct span *s;

	if (index >= pp->nr_strings)
		return NULL;
	s = &pp->strings[index];
	if (array__grow((void **)&pp->text, &pp->cap_text, s->len + 1, 1))
		return NULL;
	memcpy(pp->text, s->data, s->len);
	pp->text[s->len] = '\0';
	return pp->text;
}

static bool string_is(const struct pprof_parser *pp, uint64_t index, const char *text)
{
	size_t len = strlen(text);

	return index < pp->nr_strings && pp->strings[index].len == len &&
	       !memcmp(pp->strings[index].data, text, len);
}

/* A frame from a function: the folded markers ("_[k]", "[gpu] ") give
 * the kind, a Python file a Python frame (as py-spy and llmprof write
 * them); lines inlined into a caller are inline frames. */
static int64_t function_frame(struct pprof_parser *pp, const struct line_entry *line, bool inlined)
{
	const struct function_entry *fn =
	    find_id(pp->functions, pp->nr_functions, sizeof(*pp->functions), line->function);
	size_t start, len;
	enum frame_kind kind;
	char *name, *file = NULL;
	int64_t id;

	if (!fn)
		return malformed(pp, "a location refers to function %llu, which is not there",
				 (unsigned long long)line->function);
	if (fn->filename >= pp->nr_strings || fn->name >= pp->nr_strings)
		return malformed(
		    pp, "function %llu names string %llu of %zu", (unsigned long long)fn->id,
		    (unsigned long long)(fn->name >= pp->nr_strings ? fn->name : fn->filename),
		    pp->nr_strings);
	if (pp->strings[fn->filename].len) {
		file = strdup(string_at(pp, fn->filename) ?: "");
		if (!file)
			return -ENOMEM;
	}
	name = (char *)string_at(pp, fn->name);
	if (!name) {
		free(file);
		return -ENOMEM;
	}
	kind = profile_reader__frame_kind(name, strlen(name), &start, &len);
	if (kind == FRAME_NATIVE && !inlined && python_file__is_python(file)) {
		id = python_frame__intern(pp->profile, name, file,
					  line->line > UINT32_MAX ? 0 : line->line);
		free(file);
		return id;
	}
	if (kind == FRAME_PYTHON) {
		id = python_frame__intern_text(pp->profile, name + start, len, file,
					       line->line > UINT32_MAX ? 0 : line->line);
		free(file);
		return id;
	}
	if (inlined && kind == FRAME_NATIVE)
		kind = FRAME_INLINE;
	name[start + len] = '\0';
	id = profile__intern_frame(pp->profile, name + start, file,
				   line->line > UINT32_MAX ? 0 : line->line, kind);
	free(file);
	return id;
}

/* A location without lines: "[module]", as pprof names it at its default
 * granularity (functions), where addresses with no function are one node
 * per mapping. */
static int64_t address_frame(struct pprof_parser *pp, const struct location_entry *loc)
{
	const struct mapping_entry *m =
	    find_id(pp->mappings, pp->nr_mappings, sizeof(*pp->mappings), loc->mapping);
	const char *module = m ? string_at(pp, m->filename) : NULL;
	char name[512];

	if (module && strrchr(module, '/'))
		module = strrchr(module, '/') + 1;
	snprintf(name, sizeof(name), "[%s]", module && *module ? module : "unknown");
	return profile__intern_frame(pp->profile, name, NULL, 0, FRAME_UNKNOWN);
}

static int resolve_locations(struct pprof_parser *pp)
{
	for (size_t i = 0; i < pp->nr_locations; i++) {
		struct location_entry *loc = &pp->locations[i];

		loc->first_frame = pp->nr_location_frames;
		if (!loc->nr_lines) {
			int64_t id = address_frame(pp, loc);
			uint32_t frame = id;

			if (id < 0 || PUSH(pp, location_frames, &frame))
				return -ENOMEM;
		}
		/* The last line is the caller the others were inlined into. */
		for (size_t k = loc->nr_lines; k-- > 0;) {
			int64_t id = function_frame(pp, &pp->lines[loc->first_line + k],
						    k + 1 < loc->nr_lines);
			uint32_t frame = id;

			if (id < 0)
				return id;
			if (PUSH(pp, location_frames, &frame))
				return -ENOMEM;
		}
		loc->nr_frames = pp->nr_location_frames - loc->first_frame;
	}
	return 0;
}

static int add_location_id(void *ctx, uint64_t id)
{
	struct pprof_parser *pp = ctx;

	return PUSH(pp, location_ids, &id);
}

static int add_value(void *ctx, uint64_t v)
{
	struct pprof_parser *pp = ctx;
	int64_t value = (int64_t)v;

	return PUSH(pp, values, &value);
}

struct weight_scale {
	enum profile_unit unit;
	uint64_t multiply;
};

static struct weight_scale unit_scale(const struct pprof_parser *pp, uint64_t unit)
{
	if (string_is(pp, unit, "nanoseconds"))
		return (struct weight_scale){UNIT_NANOSECONDS, 1};
	if (string_is(pp, unit, "microseconds"))
		return (struct weight_scale){UNIT_MICROSECONDS, 1};
	if (string_is(pp, unit, "milliseconds"))
		return (struct weight_scale){UNIT_NANOSECONDS, 1000000};
	if (string_is(pp, unit, "seconds"))
		return (struct weight_scale){UNIT_NANOSECONDS, 1000000000};
	if (string_is(pp, unit, "bytes"))
		return (struct weight_scale){UNIT_BYTES, 1};
	/* count, or anything else: weights as they are */
	return (struct weight_scale){UNIT_SAMPLES, 1};
}

/* Whether the sample has a value of another type kept (not negative). */
static bool has_other_values(const struct pprof_parser *pp, size_t chosen)
{
	for (size_t i = 0; pp->value_of && i < pp->nr_values; i++)
		if (i != chosen && pp->value_of[i] != SIZE_MAX && pp->values[i] > 0)
			return true;
	return false;
}

static int add_other_values(struct pprof_parser *pp, uint32_t stack, size_t chosen, size_t index)
{
	for (size_t i = 0; pp->value_of && i < pp->nr_values; i++) {
		uint64_t v;
		int err;

		if (i == chosen || pp->value_of[i] == SIZE_MAX || pp->values[i] <= 0)
			continue;
		if (__builtin_mul_overflow((uint64_t)pp->values[i], pp->multiply[i], &v) ||
		    v > INT64_MAX)
			return malformed(pp, "sample %zu's value is out of range", index + 1);
		err = profile__add_stack_value(pp->profile, stack, pp->value_of[i], v);
		if (err)
			return err;
	}
	return 0;
}

/* One sample: its process label, then its locations from the root. */
static int read_sample(struct pprof_parser *pp, size_t index, size_t chosen, size_t counted,
		       struct weight_scale scale)
{
	struct span data = pp->samples[index];
	struct profile *p = pp->profile;
	int64_t process = -1, stack;
	size_t depth = 0;
	struct pb_field f;
	uint64_t weight;
	int ret = 0, err = 0;

	pp->nr_location_ids = pp->nr_values = 0;
	while (!err && (ret = pb_next(&data, &f)) > 0) {
		uint64_t v[3];

		if (f.number == SAMPLE_LOCATION_ID)
			err = pb_repeated(&f, add_location_id, pp);
		else if (f.number == SAMPLE_VALUE)
			err = pb_repeated(&f, add_value, pp);
		else if (f.number == SAMPLE_LABEL && f.wire == PB_LENGTH) {
			if (read_scalars(f.data, v, 3))
				return malformed(pp, "bad label in sample %zu", index + 1);
			if (string_is(pp, v[LABEL_KEY], "process") && v[LABEL_STR] &&
			    v[LABEL_STR] < pp->nr_strings) {
				process = profile__intern_frame(
				    p, string_at(pp, v[LABEL_STR]) ?: "", NULL, 0, FRAME_PROCESS);
				if (process < 0)
					return process;
			}
		}
	}
	if (err == -ENOMEM)
		return err;
	if (err || ret)
		return malformed(pp, "sample %zu is truncated or corrupt", index + 1);
	if (pp->nr_values != pp->nr_sample_types)
		return malformed(pp, "sample %zu has %zu values for %zu sample types", index + 1,
				 pp->nr_values, pp->nr_sample_types);
	if (pp->values[chosen] < 0)
		return malformed(pp, "sample %zu has a negative value (a diff of two profiles?)",
				 index + 1);
	if (counted < pp->nr_values && pp->values[counted] > 0)
		p->samples_taken += pp->values[counted];
	if (!pp->values[chosen] && !has_other_values(pp, chosen))
		return 0;
	if (__builtin_mul_overflow((uint64_t)pp->values[chosen], scale.multiply, &weight) ||
	    weight > INT64_MAX)
		return malformed(pp, "sample %zu's value is out of range", index + 1);

	if (process >= 0) {
		if (array__grow((void **)&pp->stack, &pp->cap_stack, 1, sizeof(*pp->stack)))
			return -ENOMEM;
		pp->stack[depth++] = process;
	}
	for (size_t k = pp->nr_location_ids; k-- > 0;) {
		const struct location_entry *loc = find_id(
		    pp->locations, pp->nr_locations, sizeof(*pp->locations), pp->location_ids[k]);

		if (!loc)
			return malformed(pp,
					 "sample %zu refers to location %llu, which is not there",
					 index + 1, (unsigned long long)pp->location_ids[k]);
		if (array__grow((void **)&pp->stack, &pp->cap_stack, depth + loc->nr_frames,
				sizeof(*pp->stack)))
			return -ENOMEM;
		memcpy(pp->stack + depth, pp->location_frames + loc->first_frame,
		       loc->nr_frames * sizeof(*pp->stack));
		depth += loc->nr_frames;
	}
	if (!depth)
		return 0;
	stack = profile__intern_stack(p, pp->stack, depth);
	if (stack < 0)
		return stack;
	profile__add_weight(p, stack, weight);
	return add_other_values(pp, stack, chosen, index);
}

/* The sample type pp->sample_index names: an index from 0, or a type name
 * ("cpu", "alloc_space"), as pprof's -sample_index.  0 or -EINVAL. */
static int choose_sample_index(struct pprof_parser *pp, size_t *chosen)
{
	const char *wanted = pp->sample_index;
	char types[160] = "", *end;
	unsigned long long index;
	size_t used = 0;

	errno = 0;
	index = strtoull(wanted, &end, 10);
	if (!errno && end != wanted && !*end && index < pp->nr_sample_types) {
		*chosen = index;
		return 0;
	}
	for (size_t i = 0; i < pp->nr_sample_types; i++) {
		const char *type = string_at(pp, pp->sample_types[i].type);

		if (type && !strcmp(type, wanted)) {
			*chosen = i;
			return 0;
		}
		type = string_at(pp, pp->sample_types[i].type);
		if (used + 2 < sizeof(types))
			used += snprintf(types + used, sizeof(types) - used, "%s%zu %s",
					 i ? ", " : "", i, type ? type : "?");
	}
	snprintf(pp->message, pp->message_size, "no sample type '%s' in the profile (it has %s)",
		 wanted, pp->nr_sample_types ? types : "none");
	return -EINVAL;
}

/* Every sample type but the chosen one as a further value of the
 * profile, the chosen one naming the weight; a profile of one sample type
 * stays a profile of one value. */
static int keep_other_types(struct pprof_parser *pp, size_t chosen)
{
	struct profile *p = pp->profile;
	int err;

	if (pp->nr_sample_types < 2)
		return 0;
	pp->value_of = calloc(pp->nr_sample_types, sizeof(*pp->value_of));
	pp->multiply = calloc(pp->nr_sample_types, sizeof(*pp->multiply));
	if (!pp->value_of || !pp->multiply)
		return -ENOMEM;
	for (size_t i = 0; i < pp->nr_sample_types; i++) {
		struct weight_scale scale = unit_scale(pp, pp->sample_types[i].unit);
		char unit[64];
		const char *type;
		int index;

		/* string_at() has one buffer: the unit first, kept here. */
		snprintf(unit, sizeof(unit), "%s", string_at(pp, pp->sample_types[i].unit) ?: "");
		/* Stored as the unit they scale to, as the weight is. */
		if (scale.multiply != 1)
			snprintf(unit, sizeof(unit), "nanoseconds");
		type = string_at(pp, pp->sample_types[i].type) ?: "";
		pp->value_of[i] = SIZE_MAX;
		if (i == chosen) {
			err = profile__name_weight(p, type, unit);
			if (err)
				return err;
			continue;
		}
		index = profile__add_value_type(p, type, unit, scale.unit);
		if (index == -EEXIST)
			continue;
		if (index < 0)
			return index;
		pp->value_of[i] = index;
		pp->multiply[i] = scale.multiply;
	}
	return 0;
}

static int read_samples(struct pprof_parser *pp)
{
	struct profile *p = pp->profile;
	size_t chosen = 0, counted = SIZE_MAX;
	struct weight_scale scale;
	int err;

	if (!pp->nr_sample_types && pp->nr_samples)
		return malformed(pp, "samples but no sample types");
	/* pprof's default: the default_sample_type, else the last. */
	if (pp->nr_sample_types)
		chosen = pp->nr_sample_types - 1;
	for (size_t i = 0; i < pp->nr_sample_types; i++) {
		const struct value_type *vt = &pp->sample_types[i];

		if (vt->type >= pp->nr_strings || vt->unit >= pp->nr_strings)
			return malformed(pp, "sample type %zu names a string that is not there",
					 i + 1);
		if (!pp->sample_index && pp->default_sample_type &&
		    vt->type == pp->default_sample_type)
			chosen = i;
		if (counted == SIZE_MAX && string_is(pp, vt->type, "samples") &&
		    string_is(pp, vt->unit, "count"))
			counted = i;
	}
	if (pp->sample_index) {
		err = choose_sample_index(pp, &chosen);
		if (err)
			return err;
	}
	scale = pp->nr_sample_types ? unit_scale(pp, pp->sample_types[chosen].unit)
				    : (struct weight_scale){UNIT_SAMPLES, 1};
	p->unit = scale.unit;
	err = keep_other_types(pp, chosen);
	if (err)
		return err;
	for (size_t i = 0; i < pp->nr_samples; i++) {
		err = read_sample(pp, i, chosen, counted, scale);
		if (err)
			return err;
	}
	/* The first mapping is the main binary's, or llmprof's profile name. */
	if (pp->nr_mappings && pp->mappings[0].filename &&
	    pp->mappings[0].filename < pp->nr_strings) {
		p->name = strdup(string_at(pp, pp->mappings[0].filename) ?: "");
		if (!p->name)
			return -ENOMEM;
	}
	if (string_is(pp, pp->period_type.unit, "nanoseconds") && pp->period &&
	    pp->period <= 1000000000)
		p->frequency = (1000000000 + pp->period / 2) / pp->period;
	p->duration_ns = pp->duration_ns;
	return 0;
}

static void parser_free(struct pprof_parser *pp)
{
	free(pp->strings);
	free(pp->samples);
	free(pp->sample_types);
	free(pp->value_of);
	free(pp->multiply);
	free(pp->functions);
	free(pp->mappings);
	free(pp->locations);
	free(pp->lines);
	free(pp->location_frames);
	free(pp->location_ids);
	free(pp->values);
	free(pp->stack);
	free(pp->text);
}

static int parse_proto(struct span data, const char *sample_index, struct profile **out,
		       char *message, size_t message_size)
{
	struct pprof_parser pp = {
	    .message = message, .message_size = message_size, .sample_index = sample_index};
	int err = -ENOMEM;

	pp.profile = profile__new();
	if (!pp.profile)
		goto cleanup;
	err = read_top_level(&pp, data);
	if (!err)
		err = sort_by_id(&pp, pp.functions, pp.nr_functions, sizeof(*pp.functions),
				 "function");
	if (!err)
		err = sort_by_id(&pp, pp.mappings, pp.nr_mappings, sizeof(*pp.mappings), "mapping");
	if (!err)
		err = sort_by_id(&pp, pp.locations, pp.nr_locations, sizeof(*pp.locations),
				 "location");
	if (!err)
		err = resolve_locations(&pp);
	if (!err)
		err = read_samples(&pp);
	if (!err) {
		*out = pp.profile;
		pp.profile = NULL;
	}
cleanup:
	if (err == -ENOMEM)
		snprintf(message, message_size, "out of memory");
	profile__free(pp.profile);
	parser_free(&pp);
	return err;
}

/* The wire type each top-level field of profile.proto is written in. */
static bool top_level_wire(uint32_t number, enum pb_wire_type wire)
{
	switch (number) {
	case PROFILE_SAMPLE_TYPE:
	case PROFILE_SAMPLE:
	case PROFILE_MAPPING:
	case PROFILE_LOCATION:
	case PROFILE_FUNCTION:
	case PROFILE_STRING_TABLE:
	case PROFILE_PERIOD_TYPE:
		return wire == PB_LENGTH;
	case 13: /* comment: string indexes, packed or not */
		return wire == PB_LENGTH || wire == PB_VARINT;
	case 7: /* drop_frames */
	case 8: /* keep_frames */
	case PROFILE_TIME_NANOS:
	case PROFILE_DURATION_NANOS:
	case PROFILE_PERIOD:
	case PROFILE_DEFAULT_SAMPLE_TYPE:
		return wire == PB_VARINT;
	default:
		return false;
	}
}

bool pprof_reader__detect(const void *data, size_t size)
{
	struct span in = {data, size};
	struct pb_field f;
	size_t fields = 0;

	if (size >= 2 && in.data[0] == 0x1f && in.data[1] == 0x8b)
		return true;
	/*
	 * Raw profile.proto: fields of profile.proto's numbers, each in its
	 * own wire type, up to the end of what is buffered (the last may run
	 * past it).  Text fails within a few bytes.
	 */
	while (in.len) {
		struct span before = in;
		uint64_t tag;

		if (pb_next(&in, &f) <= 0) {
			/* Cut by the end of the buffer: fine when the tag is
			 * right and something whole came before. */
			if (!pb_varint(&before, &tag) || !top_level_wire(tag >> 3, tag & 7))
				return false;
			/* A sample or sample type tag first is a control
			 * character no text starts with. */
			return fields >= 2 || (!fields && (tag >> 3 == PROFILE_SAMPLE ||
							   tag >> 3 == PROFILE_SAMPLE_TYPE));
		}
		if (!top_level_wire(f.number, f.wire))
			return false;
		fields++;
	}
	return fields > 0;
}

bool pprof_reader__is_legacy(const void *data, size_t size)
{
	static const char *const text_headers[] = {
	    "heap profile:", "heap_v2/",	"--- heapz",	      "--- contention",
	    "--- symbol",    "growth profile:", "contention profile:"};
	static const uint8_t cpu32[] = {0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0};
	static const uint8_t cpu64[] = {0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0,
					0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};

	/* gperftools' CPU profile: header words 0, 3 (words), 0, period, 0,
	 * in 32 or 64 bits, little-endian. */
	if (size >= sizeof(cpu64) && !memcmp(data, cpu64, sizeof(cpu64)))
		return true;
	if (size >= sizeof(cpu32) && !memcmp(data, cpu32, sizeof(cpu32)))
		return true;
	for (size_t i = 0; i < sizeof(text_headers) / sizeof(text_headers[0]); i++)
		if (size >= strlen(text_headers[i]) &&
		    !memcmp(data, text_headers[i], strlen(text_headers[i])))
			return true;
	return false;
}

int pprof_reader__parse(const void *data, size_t size, const char *sample_index,
			struct profile **out, char *message, size_t message_size)
{
	struct span in = {data, size};
	uint8_t *raw = NULL;
	size_t raw_len = 0;
	int err;

	message[0] = '\0';
	if (size >= 2 && in.data[0] == 0x1f && in.data[1] == 0x8b) {
		err = gunzip(in, &raw, &raw_len, message, message_size);
		if (err) {
			if (err == -ENOMEM)
				snprintf(message, message_size, "out of memory");
			return err;
		}
		in = (struct span){raw, raw_len};
	}
	err = parse_proto(in, sample_index, out, message, message_size);
	free(raw);
	return err;
}

int pprof_reader__read(const void *head, size_t head_size, FILE *stream, const char *sample_index,
		       struct profile **out, char *message, size_t message_size)
{
	uint8_t *all = NULL;
	size_t len = head_size, cap = 0;
	int err;

	if (!stream)
		return pprof_reader__parse(head, head_size, sample_index, out, message,
					   message_size);
	if (array__grow((void **)&all, &cap, len + READ_CHUNK, 1))
		goto nomem;
	memcpy(all, head, head_size);
	for (;;) {
		size_t n = fread(all + len, 1, cap - len, stream);

		len += n;
		if (len < cap)
			break;
		if (len >= MAX_DECOMPRESSED) {
			snprintf(message, message_size, "pprof input is over %llu MiB",
				 MAX_DECOMPRESSED >> 20);
			free(all);
			return -EINVAL;
		}
		if (array__grow((void **)&all, &cap, len + READ_CHUNK, 1))
			goto nomem;
	}
	if (ferror(stream)) {
		err = errno ? -errno : -EIO;
		snprintf(message, message_size, "read error: %s", strerror(-err));
		free(all);
		return err;
	}
	err = pprof_reader__parse(all, len, sample_index, out, message, message_size);
	free(all);
	return err;
nomem:
	free(all);
	snprintf(message, message_size, "out of memory");
	return -ENOMEM;
}
