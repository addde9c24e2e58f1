/* SPDX-License-Identifier: GPL-2.0 */
/*
 * GPU capture for a profiling session: the embedded CUPTI agent put into the
 * target (record: CUDA_INJECTION64_PATH; attach: ptrace injection, only
 * where CUDA is loaded), its launch probe, and the merge of its records on
 * the launching CPU stacks.
 */
#ifndef LLMPROF_GPU_CAPTURE_H
#define LLMPROF_GPU_CAPTURE_H

#include <sys/types.h>

#include "gpu/agent_server.h"
#include "profile/profile.h"
#include "sampling/session.h"

struct gpu_capture;

/* -ENOTSUP when this build carries no agent. */
int gpu_capture__open(struct gpu_capture **out, uid_t target_uid);
void gpu_capture__close(struct gpu_capture *capture);

/* For session__add_poll_fd(). */
int gpu_capture__poll_fd(const struct gpu_capture *capture);
int gpu_capture__on_readable(void *capture);
/* GPU kernels received so far, for progress lines. */
size_t gpu_capture__kernels(const struct gpu_capture *capture);

/* record, before the command is started: the agent image in an inherited
 * memfd and the environment that makes CUDA load it. */
int gpu_capture__prepare_record(struct gpu_capture *capture);
/* record, once the session is open: the launch probe on that image. */
int gpu_capture__attach_record_probe(struct gpu_capture *capture, struct session *session);
/* attach: injects the agent when the target has CUDA loaded (0 and nothing
 * done when it has not), then attaches the launch probe. */
int gpu_capture__inject(struct gpu_capture *capture, struct session *session, pid_t pid);

/* Before session__finish(): the agents flush and say goodbye. */
int gpu_capture__stop(struct gpu_capture *capture);
/* After session__finish(): GPU activity into the profile (its weights turn
 * into microseconds when there is any). */
int gpu_capture__merge(struct gpu_capture *capture, struct session *session,
		       struct profile *profile);
/* Before the merge: kernels joined with the API calls that launched them
 * (gpu_merge_options.join). */
void gpu_capture__set_join(struct gpu_capture *capture, gpu_join_fn join, void *ctx);
void gpu_capture__print_summary(const struct gpu_capture *capture, const struct profile *profile);

#endif /* LLMPROF_GPU_CAPTURE_H */
