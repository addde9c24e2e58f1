/* SPDX-License-Identifier: GPL-2.0 */
/* The CUPTI agent library, carried inside the llmprof binary so that a GPU
 * node needs only the one file. */
#ifndef LLMPROF_AGENT_IMAGE_H
#define LLMPROF_AGENT_IMAGE_H

#include <stddef.h>

/* The agent's bytes, or NULL with *size 0 when built without CUPTI. */
const unsigned char *agent_image__get(size_t *size);

#endif /* LLMPROF_AGENT_IMAGE_H */
