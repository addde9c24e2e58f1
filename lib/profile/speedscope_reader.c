// SPDX-License-Identifier: GPL-2.0
/*
 * The speedscope reader: the JSON document's frames, sampled and evented
 * profiles, turned into the profile model token by token (json_reader.c), so
 * that memory grows with distinct frames and stacks, not with the file.
 * Profiles that llmprof wrote give back their threads and GPU streams, and
 * those of a profile of several values (SPEEDSCOPE_VIEW_MEMBER) the values.
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "array.h"
#include "profile/json_reader.h"
#include "profile/output.h"
#include "profile/reader_input.h"

/* Scaled times and weights are int64 nanoseconds (or counts). */
#define MAX_SCALED 9.0e18

enum unit_class {
	UNIT_CLASS_UNSET = 0,
	UNIT_CLASS_COUNT, /* "none", "bytes": weights are counts */
	UNIT_CLASS_TIME,  /* scaled to nanoseconds */
};

enum speedscope_type {
	TYPE_UNSET = 0,
	TYPE_SAMPLED,
	TYPE_EVENTED,
};

struct raw_frame {
	char *name;
	char *file;
	uint32_t line;
};

struct raw_event {
	double at;
	uint32_t frame;
	bool open;
};

/* A span of the timeline, kept until the frames are known. */
struct timeline_entry {
	int64_t time; /* scaled, before the profile's origin is subtracted */
	uint64_t weight;
	uint32_t stack; /* raw stack id */
	uint32_t thread;
	uint32_t device, stream;
	bool gpu;
};

/* One element of "profiles", kept until its closing '}' since members come
 * in any order. */
struct raw_profile {
	enum speedscope_type type;
	char *name;
	char *view; /* SPEEDSCOPE_VIEW_MEMBER: the value it holds, or NULL */
	double scale;
	enum unit_class unit_class;
	bool bytes; /* its unit is "bytes" */
	/* SPEEDSCOPE_FREQUENCY_MEMBER: a view's samples counted on a timeline,
	 * in Hz; 0 when not */
	double frequency;
	double start, end;
	bool has_start, has_end, has_weights;
	uint32_t *samples; /* raw stack ids */
	size_t nr_samples, cap_samples;
	double *weights;
	size_t nr_weights, cap_weights;
	struct raw_event *events;
	size_t nr_events, cap_events;
};

struct speedscope_parser {
	struct json_reader r; /* first: callbacks get &r back */
	struct profile *profile;
	/* Stacks of indices into "shared.frames", interned before the frames
	 * themselves may have been seen. */
	struct profile *raw;
	const struct profile_read_options *options;

	uint32_t *stack; /* scratch: the sample or open frames being read */
	size_t cap_stack;
	struct raw_frame *frames;
	size_t nr_frames, cap_frames;
	bool has_frames, has_profiles;
	struct raw_profile current;
	size_t nr_profiles;
	enum unit_class unit_class; /* of the first value's profiles */
	bool bytes;		    /* a profile of the first value is in "bytes" */
	uint32_t frequency;	    /* the first value's counted samples' rate */
	/* Of each value named by SPEEDSCOPE_VIEW_MEMBER: its unit class. */
	enum unit_class *value_class;
	size_t cap_value_class;
	struct timeline_entry *timeline;
	size_t nr_timeline, cap_timeline;
	int64_t origin; /* earliest scaled start of a profile */
	bool has_origin;
	uint64_t total;
};

static struct speedscope_parser *parser_of(struct json_reader *r)
{
	return (struct speedscope_parser *)((char *)r - offsetof(struct speedscope_parser, r));
}
static int frame_member(struct json_reader *r, const char *key, void *ctx)
{
	struct speedscope_parser *j = parser_of(r);
	struct raw_frame *f = ctx;
	uint32_t line;
	int err;

	if (!strcmp(key, "name"))
		return json__take_string(&j->r, "a frame's \"name\"", &f->name);
	if (!strcmp(key, "file") && j->r.token != JSON_NULL)
		return json__take_string(&j->r, "a frame's \"file\"", &f->file);
	if (!strcmp(key, "line") && j->r.token != JSON_NULL) {
		err = json__take_index(&j->r, "a frame's \"line\"", &line);
		f->line = line;
		return err;
	}
	return json__skip(&j->r);
}

static int frame_element(struct json_reader *r, size_t index, void *ctx)
{
	struct speedscope_parser *j = parser_of(r);
	struct raw_frame f = {0};
	int err = json__object(&j->r, "a frame", frame_member, &f);

	if (!err && !f.name)
		err = json__error(&j->r, "frame %zu has no \"name\"", index);
	if (!err &&
	    array__grow((void **)&j->frames, &j->cap_frames, j->nr_frames + 1, sizeof(*j->frames)))
		err = -ENOMEM;
	if (err) {
		free(f.name);
		free(f.file);
		return err;
	}
	j->frames[j->nr_frames++] = f;
	return 0;
}

static int shared_member(struct json_reader *r, const char *key, void *ctx)
{
	struct speedscope_parser *j = parser_of(r);
	if (strcmp(key, "frames"))
		return json__skip(&j->r);
	if (j->has_frames)
		return json__error(&j->r, "more than one \"frames\" list");
	j->has_frames = true;
	return json__array(&j->r, "\"shared.frames\"", frame_element, NULL);
}

static int index_element(struct json_reader *r, size_t index, void *ctx)
{
	struct speedscope_parser *j = parser_of(r);
	size_t *depth = ctx;

	if (array__grow((void **)&j->stack, &j->cap_stack, *depth + 1, sizeof(*j->stack)))
		return -ENOMEM;
	return json__take_index(&j->r, "a frame index", &j->stack[(*depth)++]);
}

static int sample_element(struct json_reader *r, size_t index, void *ctx)
{
	struct speedscope_parser *j = parser_of(r);
	struct raw_profile *rp = &j->current;
	size_t depth = 0;
	int64_t id;
	int err;

	err = json__array(&j->r, "a sample", index_element, &depth);
	if (err)
		return err;
	id = profile__intern_stack(j->raw, j->stack, depth);
	if (id < 0)
		return id;
	if (array__grow((void **)&rp->samples, &rp->cap_samples, rp->nr_samples + 1,
			sizeof(*rp->samples)))
		return -ENOMEM;
	rp->samples[rp->nr_samples++] = id;
	return 0;
}

static int weight_element(struct json_reader *r, size_t index, void *ctx)
{
	struct speedscope_parser *j = parser_of(r);
	struct raw_profile *rp = &j->current;

	if (array__grow((void **)&rp->weights, &rp->cap_weights, rp->nr_weights + 1,
			sizeof(*rp->weights)))
		return -ENOMEM;
	return json__take_number(&j->r, "a weight", &rp->weights[rp->nr_weights++]);
}

struct event_fields {
	struct raw_event event;
	bool has_type, has_frame, has_at;
};

static int event_member(struct json_reader *r, const char *key, void *ctx)
{
	struct speedscope_parser *j = parser_of(r);
	struct event_fields *e = ctx;

	if (!strcmp(key, "type")) {
		if (j->r.token != JSON_STRING || (strcmp(j->r.text, "O") && strcmp(j->r.text, "C")))
			return json__error(&j->r, "an event's \"type\" must be \"O\" or \"C\"");
		e->event.open = j->r.text[0] == 'O';
		e->has_type = true;
		return json__next(&j->r);
	}
	if (!strcmp(key, "frame")) {
		e->has_frame = true;
		return json__take_index(&j->r, "an event's \"frame\"", &e->event.frame);
	}
	if (!strcmp(key, "at")) {
		e->has_at = true;
		return json__take_number(&j->r, "an event's \"at\"", &e->event.at);
	}
	return json__skip(&j->r);
}

static int event_element(struct json_reader *r, size_t index, void *ctx)
{
	struct speedscope_parser *j = parser_of(r);
	struct raw_profile *rp = &j->current;
	struct event_fields e = {0};
	int err = json__object(&j->r, "an event", event_member, &e);

	if (err)
		return err;
	if (!e.has_type || !e.has_frame || !e.has_at)
		return json__error(&j->r, "event %zu needs \"type\", \"frame\" and \"at\"", index);
	if (array__grow((void **)&rp->events, &rp->cap_events, rp->nr_events + 1,
			sizeof(*rp->events)))
		return -ENOMEM;
	rp->events[rp->nr_events++] = e.event;
	return 0;
}

static int unit_scale(const char *unit, double *scale, enum unit_class *unit_class)
{
	static const struct {
		const char *name;
		double scale;
		enum unit_class unit_class;
	} units[] = {
	    {"none", 1, UNIT_CLASS_COUNT},	    {"bytes", 1, UNIT_CLASS_COUNT},
	    {"nanoseconds", 1, UNIT_CLASS_TIME},    {"microseconds", 1e3, UNIT_CLASS_TIME},
	    {"milliseconds", 1e6, UNIT_CLASS_TIME}, {"seconds", 1e9, UNIT_CLASS_TIME},
	};

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (!strcmp(unit, units[i].name)) {
			*scale = units[i].scale;
			*unit_class = units[i].unit_class;
			return 0;
		}
	}
	return -EINVAL;
}

static int profile_member(struct json_reader *r, const char *key, void *ctx)
{
	struct speedscope_parser *j = parser_of(r);
	struct raw_profile *rp = &j->current;

	if (!strcmp(key, "type")) {
		if (j->r.token == JSON_STRING && !strcmp(j->r.text, "sampled"))
			rp->type = TYPE_SAMPLED;
		else if (j->r.token == JSON_STRING && !strcmp(j->r.text, "evented"))
			rp->type = TYPE_EVENTED;
		else
			return json__error(&j->r,
					   "a profile's \"type\" must be sampled or evented");
		return json__next(&j->r);
	}
	if (!strcmp(key, "name") && j->r.token == JSON_STRING)
		return json__take_string(&j->r, "a profile's \"name\"", &rp->name);
	if (!strcmp(key, SPEEDSCOPE_FREQUENCY_MEMBER) && j->r.token == JSON_NUMBER)
		return json__take_number(&j->r, "\"" SPEEDSCOPE_FREQUENCY_MEMBER "\"",
					 &rp->frequency);
	if (!strcmp(key, SPEEDSCOPE_VIEW_MEMBER) && j->r.token == JSON_STRING && !rp->view)
		return json__take_string(&j->r, "a profile's \"" SPEEDSCOPE_VIEW_MEMBER "\"",
					 &rp->view);
	if (!strcmp(key, "unit")) {
		if (j->r.token != JSON_STRING || unit_scale(j->r.text, &rp->scale, &rp->unit_class))
			return json__error(&j->r,
					   "unknown \"unit\" (expected none, bytes, nanoseconds, "
					   "microseconds, milliseconds or seconds)");
		rp->bytes = !strcmp(j->r.text, "bytes");
		return json__next(&j->r);
	}
	if (!strcmp(key, "startValue")) {
		rp->has_start = true;
		return json__take_number(&j->r, "\"startValue\"", &rp->start);
	}
	if (!strcmp(key, "endValue")) {
		rp->has_end = true;
		return json__take_number(&j->r, "\"endValue\"", &rp->end);
	}
	if (!strcmp(key, "samples")) {
		rp->nr_samples = 0;
		return json__array(&j->r, "\"samples\"", sample_element, NULL);
	}
	if (!strcmp(key, "weights")) {
		rp->nr_weights = 0;
		rp->has_weights = true;
		return json__array(&j->r, "\"weights\"", weight_element, NULL);
	}
	if (!strcmp(key, "events")) {
		rp->nr_events = 0;
		return json__array(&j->r, "\"events\"", event_element, NULL);
	}
	return json__skip(&j->r);
}

static int scale_value(struct speedscope_parser *j, double value, double scale, int64_t *out)
{
	double scaled = value * scale;

	*out = 0; /* callers read it on every path; keeps -O2 warnings quiet */
	if (!isfinite(scaled) || fabs(scaled) > MAX_SCALED)
		return json__error(&j->r, "time or weight %g out of range", value);
	*out = llround(scaled);
	return 0;
}

/* Where one span of a profile goes: a timeline entry, or straight onto the
 * weight of its stack. */
struct span_target {
	bool timeline;
	bool gpu;
	uint32_t thread, device, stream;
	size_t value; /* the profile's value: 0, the weight, has the timeline */
};

static int add_span(struct speedscope_parser *j, const struct span_target *target, uint32_t stack,
		    int64_t time, uint64_t weight)
{
	struct timeline_entry *e;

	if (!weight || !j->raw->stacks[stack].depth)
		return 0;
	if (weight > UINT64_MAX - j->total)
		return json__error(&j->r, "weights add up to more than 2^64");
	j->total += weight;
	if (target->value)
		return profile__add_stack_value(j->raw, stack, target->value, weight);
	if (!target->timeline) {
		profile__add_weight(j->raw, stack, weight);
		return 0;
	}
	if (array__grow((void **)&j->timeline, &j->cap_timeline, j->nr_timeline + 1,
			sizeof(*j->timeline)))
		return -ENOMEM;
	e = &j->timeline[j->nr_timeline++];
	*e = (struct timeline_entry){.time = time,
				     .weight = weight,
				     .stack = stack,
				     .thread = target->thread,
				     .device = target->device,
				     .stream = target->stream,
				     .gpu = target->gpu};
	return 0;
}

/* A profile llmprof wrote for a thread is named "NAME (pid P, tid T)", one
 * for a GPU stream "GPU D stream S", either followed by the value's name
 * where the profile has several (SPEEDSCOPE_VIEW_SEPARATOR). */
static int span_target_for(struct speedscope_parser *j, struct raw_profile *rp, size_t value,
			   struct span_target *target)
{
	char *name = rp->name ? rp->name : "";
	const char *paren;
	unsigned int pid = 0, tid = j->nr_profiles, a, b;
	char *thread_name = NULL;
	int64_t thread;
	int n = -1;

	memset(target, 0, sizeof(*target));
	target->value = value;
	if (value || !j->options->keep_timeline || rp->unit_class != UNIT_CLASS_TIME)
		return 0;
	if (rp->view) {
		size_t len = strlen(name), view_len = strlen(rp->view);
		size_t suffix = strlen(SPEEDSCOPE_VIEW_SEPARATOR) + view_len;

		if (len >= suffix && !strcmp(name + len - view_len, rp->view) &&
		    !strncmp(name + len - suffix, SPEEDSCOPE_VIEW_SEPARATOR,
			     strlen(SPEEDSCOPE_VIEW_SEPARATOR)))
			name[len - suffix] = '\0';
	}
	paren = strrchr(name, '(');
	target->timeline = true;
	if (rp->type == TYPE_EVENTED && sscanf(name, "GPU %u stream %u%n", &a, &b, &n) == 2 &&
	    n == (int)strlen(name)) {
		target->gpu = true;
		target->device = a;
		target->stream = b;
		return 0;
	}
	if (paren && paren > name && paren[-1] == ' ' &&
	    sscanf(paren, "(pid %u, tid %u)%n", &a, &b, &n) == 2 && n == (int)strlen(paren)) {
		pid = a;
		tid = b;
		thread_name = strndup(name, paren - 1 - name);
		if (!thread_name)
			return -ENOMEM;
	}
	thread = profile__add_thread(j->profile, pid, tid, thread_name ? thread_name : name);
	free(thread_name);
	if (thread < 0)
		return thread;
	target->thread = thread;
	return 0;
}

static int finish_sampled(struct speedscope_parser *j, struct raw_profile *rp,
			  const struct span_target *target, double *end)
{
	double cursor = rp->has_start ? rp->start : 0;
	int err;

	if (rp->has_weights && rp->nr_weights != rp->nr_samples)
		return json__error(&j->r, "profile %zu has %zu samples but %zu weights",
				   j->nr_profiles, rp->nr_samples, rp->nr_weights);
	for (size_t i = 0; i < rp->nr_samples; i++) {
		double weight = rp->has_weights ? rp->weights[i] : 1;
		int64_t from = 0, to = 0, count;
		bool counted;

		if (!(weight >= 0))
			return json__error(&j->r, "profile %zu: weight %zu is negative",
					   j->nr_profiles, i);
		/* Round positions, not weights, so rounding does not add up. */
		err = scale_value(j, cursor, rp->scale, &from);
		cursor += weight;
		if (!err)
			err = scale_value(j, cursor, rp->scale, &to);
		/* Samples counted on the timeline are counted back, each
		 * sample's weight rounded: a whole number of samples. */
		count = to - from;
		if (!err && rp->frequency)
			err = scale_value(j, weight, rp->scale * rp->frequency / 1e9, &count);
		/* Counts are samples already; in time units each entry is one.
		 * What the samples counted is the first value's. */
		counted = rp->unit_class == UNIT_CLASS_COUNT || rp->frequency;
		if (!err && j->raw->stacks[rp->samples[i]].depth && !target->value)
			j->profile->samples_taken += counted ? (uint64_t)count : 1;
		if (!err)
			err = add_span(j, target, rp->samples[i], from, count);
		if (err)
			return err;
	}
	*end = cursor;
	return 0;
}

static int finish_evented(struct speedscope_parser *j, struct raw_profile *rp,
			  const struct span_target *target, double *end)
{
	double at = rp->nr_events ? rp->events[0].at : (rp->has_start ? rp->start : 0);
	size_t depth = 0;
	int64_t from, to;
	int64_t stack;
	int err = 0;

	for (size_t i = 0; i < rp->nr_events; i++) {
		const struct raw_event *e = &rp->events[i];

		if (e->at < at)
			return json__error(&j->r,
					   "profile %zu: event %zu is earlier than the one before",
					   j->nr_profiles, i);
		if (depth && e->at > at) {
			stack = profile__intern_stack(j->raw, j->stack, depth);
			if (stack < 0)
				return stack;
			err = scale_value(j, at, rp->scale, &from);
			if (!err)
				err = scale_value(j, e->at, rp->scale, &to);
			if (!err)
				err = add_span(j, target, stack, from, to - from);
			if (err)
				return err;
		}
		at = e->at;
		if (e->open) {
			if (array__grow((void **)&j->stack, &j->cap_stack, depth + 1,
					sizeof(*j->stack)))
				return -ENOMEM;
			j->stack[depth++] = e->frame;
		} else if (!depth || j->stack[depth - 1] != e->frame) {
			return json__error(&j->r,
					   "profile %zu: event %zu closes frame %u, not the "
					   "innermost open frame",
					   j->nr_profiles, i, e->frame);
		} else {
			depth--;
		}
	}
	/* Frames still open at the end run to the end of the profile. */
	if (depth && rp->has_end && rp->end > at) {
		stack = profile__intern_stack(j->raw, j->stack, depth);
		if (stack < 0)
			return stack;
		err = scale_value(j, at, rp->scale, &from);
		if (!err)
			err = scale_value(j, rp->end, rp->scale, &to);
		if (!err)
			err = add_span(j, target, stack, from, to - from);
		at = rp->end;
	}
	*end = at;
	return err;
}

/* The value a profile marked with SPEEDSCOPE_VIEW_MEMBER holds, its type
 * added to the profile (and to the raw one, whose stacks hold it until they
 * are resolved) where it is new: the first named is the weight. */
static int view_value(struct speedscope_parser *j, const struct raw_profile *rp)
{
	static const char *const unit_names[] = {
	    [UNIT_SAMPLES] = "count",
	    [UNIT_NANOSECONDS] = "nanoseconds",
	    [UNIT_BYTES] = "bytes",
	};
	struct profile *p = j->profile;
	enum profile_unit unit = rp->frequency			     ? UNIT_SAMPLES
				 : rp->unit_class == UNIT_CLASS_TIME ? UNIT_NANOSECONDS
				 : rp->bytes			     ? UNIT_BYTES
								     : UNIT_SAMPLES;
	int index, err;

	if (p->nr_value_types) {
		index = profile__value_index(p, rp->view);
		if (index >= 0)
			goto known;
		index = profile__add_value_type(p, rp->view, unit_names[unit], unit);
		err = index < 0 ? index : profile__add_value_type(j->raw, rp->view, "", unit);
	} else {
		index = 0;
		err = profile__name_weight(p, rp->view, unit_names[unit]);
		if (!err)
			err = profile__name_weight(j->raw, rp->view, "");
	}
	if (err)
		return err;
	if (array__grow((void **)&j->value_class, &j->cap_value_class, index + 1,
			sizeof(*j->value_class)))
		return -ENOMEM;
	j->value_class[index] = rp->unit_class;
known:
	if (j->value_class[index] != rp->unit_class)
		return json__error(&j->r,
				   "profile %zu: the profiles of '%s' mix units of time "
				   "with counts",
				   j->nr_profiles, rp->view);
	return index;
}

static int finish_profile(struct speedscope_parser *j)
{
	struct raw_profile *rp = &j->current;
	struct span_target target;
	int64_t start, stop;
	double end = 0;
	int value = 0;
	int err;

	if (rp->type == TYPE_UNSET)
		return json__error(&j->r, "profile %zu has no \"type\"", j->nr_profiles);
	if (rp->unit_class == UNIT_CLASS_UNSET) {
		rp->unit_class = UNIT_CLASS_COUNT;
		rp->scale = 1;
	}
	/* Samples counted on a timeline: a view's thread, in a unit of time. */
	if (!rp->view || rp->type != TYPE_SAMPLED || rp->unit_class != UNIT_CLASS_TIME ||
	    !(rp->frequency >= 1 && rp->frequency <= 1e9))
		rp->frequency = 0;
	if (rp->view) {
		value = view_value(j, rp);
		if (value < 0)
			return value;
	}
	if (!value) {
		if (j->unit_class != UNIT_CLASS_UNSET && j->unit_class != rp->unit_class)
			return json__error(&j->r,
					   "profile %zu: profiles mix units of time with counts",
					   j->nr_profiles);
		j->unit_class = rp->unit_class;
		j->bytes |= rp->bytes;
		if (rp->frequency && !j->frequency)
			j->frequency = llround(rp->frequency);
	}
	err = span_target_for(j, rp, value, &target);
	if (err)
		return err;
	if (rp->type == TYPE_SAMPLED)
		err = finish_sampled(j, rp, &target, &end);
	else
		err = finish_evented(j, rp, &target, &end);
	if (err)
		return err;
	if (rp->has_end)
		end = rp->end;
	err = scale_value(j, rp->has_start ? rp->start : 0, rp->scale, &start);
	if (!err)
		err = scale_value(j, end, rp->scale, &stop);
	if (err)
		return err;
	if (rp->unit_class == UNIT_CLASS_TIME) {
		if (stop > start && (uint64_t)(stop - start) > j->profile->duration_ns)
			j->profile->duration_ns = stop - start;
		if (!j->has_origin || start < j->origin)
			j->origin = start;
		j->has_origin = true;
	}
	return 0;
}

static int profile_element(struct json_reader *r, size_t index, void *ctx)
{
	struct speedscope_parser *j = parser_of(r);
	struct raw_profile *rp = &j->current;
	int err;

	free(rp->name);
	free(rp->view);
	rp->name = rp->view = NULL;
	rp->bytes = false;
	rp->frequency = 0;
	rp->type = TYPE_UNSET;
	rp->unit_class = UNIT_CLASS_UNSET;
	rp->scale = 1;
	rp->has_start = rp->has_end = rp->has_weights = false;
	rp->nr_samples = rp->nr_weights = rp->nr_events = 0;
	err = json__object(&j->r, "a profile", profile_member, NULL);
	if (!err)
		err = finish_profile(j);
	j->nr_profiles++;
	return err;
}

/* A count or size in llmprof's GPU memory facts. */
static int take_count(struct json_reader *r, const char *what, uint64_t *out)
{
	double value;
	int err = json__take_number(r, what, &value);

	if (err)
		return err;
	if (value < 0 || value > 1.8e19)
		return json__error(r, "%s is out of range", what);
	*out = (uint64_t)value;
	return 0;
}

static int memory_site_member(struct json_reader *r, const char *key, void *ctx)
{
	struct memory_site *s = ctx;
	char *kind = NULL;
	int err;

	if (!strcmp(key, "kind") && r->token == JSON_STRING) {
		err = json__take_string(r, "a memory site's \"kind\"", &kind);
		if (!err)
			s->kind = !strcmp(kind, "failed")     ? MEMORY_SITE_FAILED
				  : !strcmp(kind, "frequent") ? MEMORY_SITE_FREQUENT
							      : MEMORY_SITE_LIVE_AT_END;
		free(kind);
		return err;
	}
	if (!strcmp(key, "call") && r->token == JSON_STRING && !s->call)
		return json__take_string(r, "a memory site's \"call\"", &s->call);
	if (!strcmp(key, "stack") && r->token == JSON_STRING && !s->stack)
		return json__take_string(r, "a memory site's \"stack\"", &s->stack);
	if (!strcmp(key, "location") && r->token == JSON_STRING && !s->location)
		return json__take_string(r, "a memory site's \"location\"", &s->location);
	if (!strcmp(key, "error") && r->token == JSON_STRING && !s->error)
		return json__take_string(r, "a memory site's \"error\"", &s->error);
	if (!strcmp(key, "bytes"))
		return take_count(r, "a memory site's \"bytes\"", &s->bytes);
	if (!strcmp(key, "count"))
		return take_count(r, "a memory site's \"count\"", &s->count);
	if (!strcmp(key, "firstNs"))
		return take_count(r, "a memory site's \"firstNs\"", &s->first_ns);
	if (!strcmp(key, "lastNs"))
		return take_count(r, "a memory site's \"lastNs\"", &s->last_ns);
	return json__skip(r);
}

static int memory_site_element(struct json_reader *r, size_t index, void *ctx)
{
	struct speedscope_parser *j = parser_of(r);
	struct memory_site s = {0};
	int err = json__object(r, "a memory site", memory_site_member, &s);

	(void)index;
	(void)ctx;
	if (!err)
		err = profile__add_memory_site(j->profile, &s);
	free(s.call);
	free(s.stack);
	free(s.location);
	free(s.error);
	return err;
}

static int memory_member(struct json_reader *r, const char *key, void *ctx)
{
	struct memory_facts *m = &parser_of(r)->profile->memory;
	static const struct {
		const char *key;
		size_t offset;
	} counts[] = {
	    {"peak", offsetof(struct memory_facts, peak)},
	    {"endLive", offsetof(struct memory_facts, end_live)},
	    {"allocated", offsetof(struct memory_facts, allocated)},
	    {"allocations", offsetof(struct memory_facts, nr_allocs)},
	    {"frees", offsetof(struct memory_facts, nr_frees)},
	    {"failed", offsetof(struct memory_facts, nr_failed)},
	    {"callNs", offsetof(struct memory_facts, call_ns)},
	    {"durationNs", offsetof(struct memory_facts, duration_ns)},
	    {"spanNs", offsetof(struct memory_facts, span_ns)},
	};

	(void)ctx;
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
		if (!strcmp(key, counts[i].key))
			return take_count(r, "a GPU memory figure",
					  (uint64_t *)((char *)m + counts[i].offset));
	if (!strcmp(key, "sites"))
		return json__array(r, "\"sites\"", memory_site_element, NULL);
	return json__skip(r);
}

/* "llmprofNccl": the NCCL table a recording wrote (nccl_facts__write_json). */
static int nccl_row_member(struct json_reader *r, const char *key, void *ctx)
{
	struct nccl_row *row = ctx;
	static const struct {
		const char *key;
		size_t offset;
	} counts[] = {
	    {"bucket", offsetof(struct nccl_row, bucket)},
	    {"calls", offsetof(struct nccl_row, calls)},
	    {"bytes", offsetof(struct nccl_row, bytes)},
	    {"size", offsetof(struct nccl_row, size)},
	    {"gpuNs", offsetof(struct nccl_row, gpu_ns)},
	    {"timedCalls", offsetof(struct nccl_row, timed_calls)},
	    {"timedSize", offsetof(struct nccl_row, timed_size)},
	};

	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
		if (!strcmp(key, counts[i].key))
			return take_count(r, "an NCCL figure",
					  (uint64_t *)((char *)row + counts[i].offset));
	if (!strcmp(key, "ranks")) {
		uint64_t ranks = 0;
		int err = take_count(r, "an NCCL figure", &ranks);

		row->ranks = ranks > UINT32_MAX ? 0 : (uint32_t)ranks;
		return err;
	}
	if (!strcmp(key, "operation") && r->token == JSON_STRING) {
		char *name = NULL;
		int err = json__take_string(r, "an NCCL operation", &name);

		if (!err)
			snprintf(row->operation, sizeof(row->operation), "%s", name);
		free(name);
		return err;
	}
	return json__skip(r);
}

static int nccl_row_element(struct json_reader *r, size_t index, void *ctx)
{
	struct nccl_facts *f = &parser_of(r)->profile->nccl;
	struct nccl_row row = {0};
	struct nccl_row *rows;
	int err = json__object(r, "an NCCL row", nccl_row_member, &row);

	(void)index;
	(void)ctx;
	if (err)
		return err;
	rows = realloc(f->rows, (f->nr_rows + 1) * sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	f->rows = rows;
	f->rows[f->nr_rows++] = row;
	return 0;
}

static int nccl_member(struct json_reader *r, const char *key, void *ctx)
{
	struct nccl_facts *f = &parser_of(r)->profile->nccl;

	(void)ctx;
	if (!strcmp(key, "kernelNs"))
		return take_count(r, "an NCCL figure", &f->kernel_ns);
	if (!strcmp(key, "exposedNs"))
		return take_count(r, "an NCCL figure", &f->exposed_ns);
	if (!strcmp(key, "wallNs"))
		return take_count(r, "an NCCL figure", &f->wall_ns);
	if (!strcmp(key, "devices")) {
		uint64_t devices = 0;
		int err = take_count(r, "an NCCL figure", &devices);

		f->devices = devices > UINT32_MAX ? 0 : (uint32_t)devices;
		return err;
	}
	if (!strcmp(key, "rows"))
		return json__array(r, "\"rows\"", nccl_row_element, NULL);
	return json__skip(r);
}

static int document_member(struct json_reader *r, const char *key, void *ctx)
{
	struct speedscope_parser *j = parser_of(r);
	if (!strcmp(key, "shared"))
		return json__object(&j->r, "\"shared\"", shared_member, NULL);
	if (!strcmp(key, "profiles")) {
		if (j->has_profiles)
			return json__error(&j->r, "more than one \"profiles\" list");
		j->has_profiles = true;
		return json__array(&j->r, "\"profiles\"", profile_element, NULL);
	}
	if (!strcmp(key, "name") && j->r.token == JSON_STRING)
		return json__take_string(&j->r, "\"name\"", &j->profile->name);
	if (!strcmp(key, "exporter") && j->r.token == JSON_STRING)
		return json__take_string(&j->r, "\"exporter\"", &j->profile->exporter);
	if (!strcmp(key, "llmprofGpuMemory") && j->r.token == JSON_OBJECT_BEGIN) {
		j->profile->memory.known = true;
		return json__object(&j->r, "\"llmprofGpuMemory\"", memory_member, NULL);
	}
	if (!strcmp(key, "llmprofNccl") && j->r.token == JSON_OBJECT_BEGIN) {
		j->profile->nccl.known = true;
		return json__object(&j->r, "\"llmprofNccl\"", nccl_member, NULL);
	}
	return json__skip(&j->r);
}

static enum gpu_activity_kind gpu_kind(const char *name)
{
	if (!strncasecmp(name, "memcpy", 6))
		return GPU_MEMCPY;
	if (!strncasecmp(name, "memset", 6))
		return GPU_MEMSET;
	return GPU_KERNEL;
}

/* Turns the raw frames, stacks and timeline into the profile's own, now
 * that every frame is known. */
static int resolve_profiles(struct speedscope_parser *j)
{
	struct profile *p = j->profile;
	uint32_t *frame_map = NULL, *stack_map = NULL;
	int err = -ENOMEM;

	j->r.token_line = 0;
	frame_map = malloc((j->nr_frames ? j->nr_frames : 1) * sizeof(*frame_map));
	stack_map = malloc((j->raw->nr_stacks ? j->raw->nr_stacks : 1) * sizeof(*stack_map));
	if (!frame_map || !stack_map)
		goto cleanup;
	for (size_t i = 0; i < j->nr_frames; i++) {
		const struct raw_frame *f = &j->frames[i];
		int64_t id =
		    reader__intern_folded_frame(p, f->name, strlen(f->name), f->file, f->line);

		if (id < 0)
			goto cleanup;
		frame_map[i] = id;
	}
	for (size_t s = 0; s < j->raw->nr_stacks; s++) {
		const struct stack *raw = &j->raw->stacks[s];
		int64_t id;

		if (array__grow((void **)&j->stack, &j->cap_stack, raw->depth + 1,
				sizeof(*j->stack)))
			goto cleanup;
		for (uint32_t d = 0; d < raw->depth; d++) {
			if (raw->frames[d] >= j->nr_frames) {
				err = json__error(&j->r,
						  "a sample or event refers to frame %u, but "
						  "\"shared.frames\" has %zu",
						  raw->frames[d], j->nr_frames);
				goto cleanup;
			}
			j->stack[d] = frame_map[raw->frames[d]];
		}
		id = profile__intern_stack(p, j->stack, raw->depth);
		if (id < 0)
			goto cleanup;
		stack_map[s] = id;
		if (raw->weight)
			profile__add_weight(p, id, raw->weight);
		for (size_t v = 1; v < profile__nr_values(j->raw); v++) {
			uint64_t value = profile__stack_value(j->raw, s, v);

			if (value && profile__add_stack_value(p, id, v, value))
				goto cleanup;
		}
	}
	for (size_t i = 0; i < j->nr_timeline; i++) {
		const struct timeline_entry *e = &j->timeline[i];
		uint32_t stack = stack_map[e->stack];
		const struct stack *st = &p->stacks[stack];
		uint64_t time = e->time > j->origin ? e->time - j->origin : 0;

		if (e->gpu && st->depth == 1 && p->frames[st->frames[0]].kind == FRAME_GPU) {
			struct gpu_activity activity = {
			    .start_ns = time,
			    .end_ns = time + e->weight,
			    .device = e->device,
			    .stream = e->stream,
			    .kind = gpu_kind(p->frames[st->frames[0]].name),
			    .frame = st->frames[0],
			    .stack = stack,
			};

			if (profile__add_gpu(p, &activity))
				goto cleanup;
			profile__add_weight(p, stack, e->weight);
		} else if (e->gpu) {
			profile__add_weight(p, stack, e->weight);
		} else if (profile__add_sample(p, e->thread, stack, time, e->weight)) {
			goto cleanup;
		}
	}
	/* qsort() must not see the NULL array of a profile without samples. */
	if (p->nr_samples)
		profile__sort_samples(p);
	p->unit = j->unit_class == UNIT_CLASS_TIME ? UNIT_NANOSECONDS
		  : j->bytes			   ? UNIT_BYTES
						   : UNIT_SAMPLES;
	if (j->frequency) {
		p->unit = UNIT_SAMPLES;
		p->frequency = j->frequency;
	}
	if (p->nr_value_types)
		p->value_types[0].unit = p->unit;
	err = 0;
cleanup:
	free(frame_map);
	free(stack_map);
	return err;
}

int speedscope_reader__parse(struct input *in, const struct profile_read_options *options,
			     struct profile *p, struct profile_read_result *result)
{
	struct speedscope_parser j = {
	    .r = {.in = in, .result = result}, .profile = p, .options = options};
	int err = -ENOMEM;

	j.raw = profile__new();
	/* Never NULL, even for an empty first sample: the stack is memcpy'd. */
	if (!j.raw || array__grow((void **)&j.stack, &j.cap_stack, 1, sizeof(*j.stack)))
		goto cleanup;
	err = json__next(&j.r);
	if (!err)
		err = json__object(&j.r, "the speedscope file", document_member, NULL);
	if (!err)
		j.r.complete = true;
	if (!err && j.r.token != JSON_END)
		err = json__error(&j.r, "unexpected %s after the JSON document",
				  json_token__name(j.r.token));
	if (!err && !j.has_profiles) {
		j.r.token_line = 0;
		err = json__error(&j.r, "no \"profiles\": not a speedscope file");
	}
	if (!err)
		err = resolve_profiles(&j);
	result->lines = in->line;
cleanup:
	if (err && err != -EINVAL && err != -ENOMEM && !result->message[0])
		reader__set_message(result, j.r.token_line, "read error: %s", strerror(-err));
	for (size_t i = 0; i < j.nr_frames; i++) {
		free(j.frames[i].name);
		free(j.frames[i].file);
	}
	free(j.frames);
	free(j.r.text);
	free(j.stack);
	free(j.timeline);
	free(j.current.name);
	free(j.current.view);
	free(j.value_class);
	free(j.current.samples);
	free(j.current.weights);
	free(j.current.events);
	profile__free(j.raw);
	return err;
}
