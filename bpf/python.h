/* SPDX-License-Identifier: GPL-2.0 */
/* Types shared by the BPF Python stack reader and userspace. */
#ifndef LLMPROF_BPF_PYTHON_H
#define LLMPROF_BPF_PYTHON_H

/* The Python frames of the sampled thread; nr_frames is 0 when the thread
 * runs no Python or Python frames are off. */
struct python_stack {
	__u32 nr_frames;
};

#endif /* LLMPROF_BPF_PYTHON_H */
