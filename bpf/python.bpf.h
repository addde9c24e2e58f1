/* SPDX-License-Identifier: GPL-2.0 */
/* BPF side of Python frames: reads the sampled thread's frame chain. */
#ifndef LLMPROF_PYTHON_BPF_H
#define LLMPROF_PYTHON_BPF_H

#include "python.h"

static __always_inline void python__capture(struct python_stack *stack)
{
	stack->nr_frames = 0;
}

#endif /* LLMPROF_PYTHON_BPF_H */
