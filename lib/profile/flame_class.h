/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What a frame of a flame graph is, for its colour: the classes of the SVG
 * writer's legend and of the HTML page's script (html_script.c's
 * classes[], which lists them in this order).
 */
#ifndef LLMPROF_FLAME_CLASS_H
#define LLMPROF_FLAME_CLASS_H

#include "profile/profile.h"

enum flame_class {
	FLAME_NATIVE = 0,
	FLAME_PYTHON,
	FLAME_KERNEL,
	FLAME_GPU,
	FLAME_OFF_CPU,
	FLAME_GPU_MEMORY,
	FLAME_NCCL,
	FLAME_PROCESS,
	FLAME_UNKNOWN,
	NR_FLAME_CLASSES,
};

enum flame_class flame_class__of(const struct frame *frame);

#endif
