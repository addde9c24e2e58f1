// SPDX-License-Identifier: GPL-2.0
/* The embedded CUPTI agent: the build includes libllmprof_cupti.so here
 * byte for byte (LLMPROF_AGENT_PATH), or nothing without CUPTI. */
#include "gpu/agent_image.h"

#ifdef LLMPROF_AGENT_PATH
__asm__(".section .rodata\n"
	".balign 64\n"
	"llmprof_agent_image_start:\n"
	".incbin \"" LLMPROF_AGENT_PATH "\"\n"
	"llmprof_agent_image_end:\n"
	".previous\n");

extern const unsigned char llmprof_agent_image_start[] __asm__("llmprof_agent_image_start");
extern const unsigned char llmprof_agent_image_end[] __asm__("llmprof_agent_image_end");

const unsigned char *agent_image__get(size_t *size)
{
	*size = llmprof_agent_image_end - llmprof_agent_image_start;
	return llmprof_agent_image_start;
}
#else
const unsigned char *agent_image__get(size_t *size)
{
	*size = 0;
	return NULL;
}
#endif
