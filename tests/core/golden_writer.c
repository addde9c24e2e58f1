// SPDX-License-Identifier: GPL-2.0
/*
 * Builds a fixed profile through the library (every frame kind, two
 * threads, a timeline with an idle gap, GPU kernels; "wall": a ranked process
 * and an off-CPU interval) and writes it in the format named by argv[1], for
 * byte-for-byte comparison with golden files.  The "names" and "aggregate"
 * variants are frames, files and threads named with every byte a JSON
 * writer must escape or replace, on a timeline and without one.  The
 * "python" variant (and "python-lines", with --lines) is Python frames:
 * several lines of one function, qualified names, files under
 * dist-packages, a frozen module, a file known only by its name, and an
 * unreadable code object.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/output.h"
#include "profile/profile.h"

static uint32_t frame(struct profile *p, const char *name, const char *file, uint32_t line,
		      enum frame_kind kind)
{
	int64_t id = profile__intern_frame(p, name, file, line, kind);

	if (id < 0)
		exit(1);
	return id;
}

static uint32_t stack(struct profile *p, const uint32_t *frames, size_t depth)
{
	int64_t id = profile__intern_stack(p, frames, depth);

	if (id < 0)
		exit(1);
	return id;
}

/* Quotes, backslashes, control bytes, DEL, a slash, valid UTF-8 of two,
 * three and four bytes (U+2028 too), and invalid UTF-8: a stray byte, an
 * overlong '/', a surrogate and a cut sequence. */
static const char *const odd_names[] = {
    "quote\"back\\slash",
    "ctl\x01\x1f\b\f\n\r\tend",
    "del\x7f/slash</script>",
    "na\xc3\xafve \xe2\x86\x92 \xce\xbb",
    "line\xe2\x80\xa8sep \xf0\x9f\x94\xa5",
    "bad\xff\xfe",
    "overlong\xc0\xaf",
    "surrogate\xed\xa0\x80",
    "cut\xe2\x82",
};

static int write_names(enum profile_format format, bool timeline)
{
	struct profile *p = profile__new();
	size_t nr = sizeof(odd_names) / sizeof(odd_names[0]);
	uint32_t root, frames[16];
	int64_t thread;

	if (!p)
		return 1;
	p->unit = timeline ? UNIT_NANOSECONDS : UNIT_SAMPLES;
	p->name = strdup("job \"odd\"\t\xe2\x86\x92 \xff");
	root = frame(p, "proc\\name", NULL, 0, FRAME_PROCESS);
	thread = profile__add_thread(p, 7, 8, "thr\"ead\n\xc3\xa9\xc3");
	if (!p->name || thread < 0)
		return 1;
	for (size_t i = 0; i < nr; i++) {
		frames[0] = root;
		frames[1] = frame(p, odd_names[i], i % 2 ? odd_names[nr - 1 - i] : NULL, i * 7,
				  i % 3 ? FRAME_NATIVE : FRAME_INLINE);
		frames[2] = frame(p, odd_names[(i + 3) % nr], NULL, 0, FRAME_KERNEL);
		if (timeline) {
			/* nanoseconds: weights of 1e-3 us, and a gap to 1e15 us */
			uint64_t at = i == nr - 1 ? 1000000000000000000ULL : i * 1000;

			if (profile__add_sample(p, thread, stack(p, frames, 3), at, 1 + i * 333))
				return 1;
		} else {
			profile__add_weight(p, stack(p, frames, 3), 1 + i);
		}
	}
	if (output__write(p, format, VIEW_ALL, stdout))
		return 1;
	profile__free(p);
	return 0;
}

static int write_python(enum profile_format format, bool lines)
{
	struct profile *p = profile__new();
	uint32_t proc, module, forward[3], lambda, frozen, sgd, unknown, load, gemm_call;
	int64_t thread;

	if (!p)
		return 1;
	p->frequency = 100;
	p->duration_ns = 90000000;
	proc = frame(p, "python3", NULL, 0, FRAME_PROCESS);
	module = frame(p, "<module>", "/src/train.py", 3, FRAME_PYTHON);
	for (uint32_t i = 0; i < 3; i++)
		forward[i] = frame(p, "Model.forward", "/src/mm.py", 10 + i, FRAME_PYTHON);
	lambda = frame(p, "Model.forward.<locals>.<lambda>", "/src/mm.py", 20, FRAME_PYTHON);
	frozen = frame(p, "_find_and_load", "<frozen importlib._bootstrap>", 1165, FRAME_PYTHON);
	sgd = frame(p, "SGD.step", "/usr/lib/python3/dist-packages/torch/optim/sgd.py", 5,
		    FRAME_PYTHON);
	unknown = frame(p, "[unknown]", "<unknown>", 0, FRAME_PYTHON);
	load = frame(p, "load", "data.py", 0, FRAME_PYTHON);
	gemm_call = frame(p, "at::addmm", "/src/addmm.cpp", 40, FRAME_NATIVE);
	thread = profile__add_thread(p, 200, 200, "MainThread");
	if (thread < 0)
		return 1;
	{
		const struct {
			uint32_t frames[4], depth;
		} stacks[] = {
		    {{proc, module, forward[0], gemm_call}, 4},
		    {{proc, module, forward[1]}, 3},
		    {{proc, module, forward[2]}, 3},
		    {{proc, module, forward[1], lambda}, 4},
		    {{proc, module, frozen}, 3},
		    {{proc, module, sgd}, 3},
		    {{proc, module, unknown}, 3},
		    {{proc, module, load}, 3},
		    {{proc, module, forward[1]}, 3},
		};

		for (size_t i = 0; i < sizeof(stacks) / sizeof(stacks[0]); i++)
			if (profile__add_sample(p, thread,
						stack(p, stacks[i].frames, stacks[i].depth),
						i * 10000000, 1))
				return 1;
	}
	if (output__write_with(p, format, &(struct writer_options){.python_lines = lines}, stdout))
		return 1;
	profile__free(p);
	return 0;
}

int main(int argc, char **argv)
{
	struct profile *p = profile__new();
	enum profile_format format;
	uint32_t proc, start, main_fn, work, inl, kern, jit, py, unk, semi, gemm;
	uint32_t s_work, s_inl, s_kern, s_jit, s_py, s_unk, s_gpu;
	int64_t t1, t2;
	bool gpu = argc > 2 && !strcmp(argv[2], "gpu");
	bool wall = argc > 2 && !strcmp(argv[2], "wall");

	if (!p || argc < 2 || format__parse(argv[1], FORMAT_WRITABLE, 0, &format))
		return 2;
	if (argc > 2 && !strncmp(argv[2], "python", 6)) {
		profile__free(p);
		return write_python(format, !strcmp(argv[2], "python-lines"));
	}
	if (argc > 2 && (!strcmp(argv[2], "names") || !strcmp(argv[2], "aggregate"))) {
		profile__free(p);
		return write_names(format, !strcmp(argv[2], "names"));
	}
	p->unit = gpu || wall ? UNIT_MICROSECONDS : UNIT_SAMPLES;
	p->frequency = 100;
	p->duration_ns = 100000000;
	proc = frame(p, wall ? "trainer [rank 1]" : "trainer", NULL, 0, FRAME_PROCESS);
	start = frame(p, "_start", NULL, 0, FRAME_NATIVE);
	main_fn = frame(p, "main", "/src/main.c", 10, FRAME_NATIVE);
	work = frame(p, "ns::Worker::run", "/src/worker.cc", 42, FRAME_NATIVE);
	inl = frame(p, "ns::mix", "/src/mix.h", 7, FRAME_INLINE);
	kern = frame(p, "ksys_write", NULL, 0, FRAME_KERNEL);
	jit = frame(p, "jitted_loop", NULL, 0, FRAME_JIT);
	py = frame(p, "train_step", "train.py", 12, FRAME_PYTHON);
	unk = frame(p, "[libfoo.so+0x1a2b]", NULL, 0, FRAME_UNKNOWN);
	semi = frame(p, "operator;weird\tname", NULL, 0, FRAME_NATIVE);
	gemm = frame(p, "gemm_kernel", NULL, 0, FRAME_GPU);

	s_work = stack(p, (uint32_t[]){proc, start, main_fn, work}, 4);
	s_inl = stack(p, (uint32_t[]){proc, start, main_fn, work, inl}, 5);
	s_kern = stack(p, (uint32_t[]){proc, start, main_fn, kern}, 4);
	s_jit = stack(p, (uint32_t[]){proc, start, jit}, 3);
	s_py = stack(p, (uint32_t[]){proc, start, py, work}, 4);
	s_unk = stack(p, (uint32_t[]){proc, start, unk, semi}, 4);
	s_gpu = stack(p, (uint32_t[]){proc, start, py, gemm}, 4);

	t1 = profile__add_thread(p, 100, 100, "trainer");
	t2 = profile__add_thread(p, 100, 101, "loader");
	if (t1 < 0 || t2 < 0)
		return 1;
	{
		uint64_t w = gpu || wall ? 10000 : 1; /* 1e6/F microseconds */
		const struct {
			uint32_t thread, stack;
			uint64_t ms;
		} samples[] = {
		    {t1, s_work, 0},  {t1, s_inl, 10}, {t1, s_inl, 20},
		    {t1, s_kern, 60}, /* idle gap 30..60 */
		    {t2, s_jit, 5},   {t2, s_py, 15},  {t2, s_unk, 25},
		};

		for (size_t i = 0; i < sizeof(samples) / sizeof(samples[0]); i++)
			if (profile__add_sample(p, samples[i].thread, samples[i].stack,
						samples[i].ms * 1000000, w))
				return 1;
	}
	if (wall) {
		uint32_t wait = frame(p, "[off-cpu] futex", NULL, 0, FRAME_OFF_CPU);

		/* Blocked 30..50 ms of the idle gap, in main. */
		if (profile__add_sample(p, t1,
					stack(p, (uint32_t[]){proc, start, main_fn, wait}, 4),
					30000000, 20000))
			return 1;
	}
	if (gpu) {
		struct gpu_activity a = {.start_ns = 12000000,
					 .end_ns = 14500000,
					 .device = 0,
					 .stream = 7,
					 .correlation = 1,
					 .kind = GPU_KERNEL,
					 .frame = gemm,
					 .stack = s_gpu};

		profile__add_gpu(p, &a);
		profile__add_weight(p, s_gpu, 2500);
		a.start_ns = 15000000;
		a.end_ns = 16000000;
		a.correlation = 2;
		profile__add_gpu(p, &a);
		profile__add_weight(p, s_gpu, 1000);
	}
	profile__sort_samples(p);
	if (output__write(p, format, VIEW_ALL, stdout))
		return 1;
	profile__free(p);
	return 0;
}
