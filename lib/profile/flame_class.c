// SPDX-License-Identifier: GPL-2.0
/*
 * The flame graph class of a frame, by its kind: process and thread roots
 * are one class, every kind without a colour of its own is native code.
 */
#include "profile/flame_class.h"

enum flame_class flame_class__of(const struct frame *frame)
{
	switch (frame->kind) {
	case FRAME_PYTHON:
		return FLAME_PYTHON;
	case FRAME_KERNEL:
		return FLAME_KERNEL;
	case FRAME_GPU:
		return FLAME_GPU;
	case FRAME_PROCESS:
	case FRAME_THREAD:
		return FLAME_PROCESS;
	case FRAME_UNKNOWN:
		return FLAME_UNKNOWN;
	case FRAME_OFF_CPU:
		return FLAME_OFF_CPU;
	case FRAME_GPU_MEMORY:
		return FLAME_GPU_MEMORY;
	case FRAME_NCCL:
		return FLAME_NCCL;
	default:
		return FLAME_NATIVE;
	}
}
