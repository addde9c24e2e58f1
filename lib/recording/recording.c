// SPDX-License-Identifier: GPL-2.0
/*
 * The recording: the table of probe families and the fixed phases it takes
 * them through with the session (see recording.h and
 * sampling/probe_family.h).
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "recording/recording.h"
#include "recording/run_as.h"
#include "sampling/bpf_cost.h"
#include "status.h"

/*
 * Every probe family, in the order of their phases: the launches come last,
 * so that their probes go in after the library probes (an injection takes
 * a while), they stop first, and their merge can join kernels with the
 * calls the families before them resolved.
 */
extern const struct probe_family offcpu_family;	    /* sampling/offcpu_probe.c */
extern const struct probe_family gpu_memory_family; /* gpu/gpu_memory.c */
extern const struct probe_family nccl_family;	    /* gpu/nccl_probe.c */
extern const struct probe_family gpu_launch_family; /* gpu/gpu_capture.c */

static const struct probe_family *const families[] = {
    &offcpu_family,
    &gpu_memory_family,
    &nccl_family,
    &gpu_launch_family,
};
#define NR_FAMILIES (sizeof(families) / sizeof(families[0]))

struct recording {
	struct recording_options options;
	struct probe_family_env env;
	struct recording_command command;
	struct session *session;
	bool wanted[NR_FAMILIES];
	void *state[NR_FAMILIES]; /* NULL: not wanted, or gone without its probes */
	struct probe_family_result result;
	struct profile *view;
	struct profile *all_values;
	enum session_end end;
};

/* Who may connect to the GPU socket besides root: the target's owner. */
static uid_t target_uid(const struct recording *r)
{
	char path[64];
	struct stat st;

	if (r->env.record)
		return r->options.run_as ? r->options.run_as->uid : getuid();
	snprintf(path, sizeof(path), "/proc/%d", r->options.sampling.pid);
	return stat(path, &st) ? (uid_t)-1 : st.st_uid;
}

int recording__open(struct recording **out, const struct recording_options *options)
{
	struct recording *r = calloc(1, sizeof(*r));
	int err = 0;

	if (!r)
		return -ENOMEM;
	r->options = *options;
	r->command = (struct recording_command){.go_fd = -1, .status_fd = -1};
	r->env = (struct probe_family_env){
	    .sampling = &r->options.sampling,
	    .options = &r->options.families,
	    .record = options->command != NULL,
	};
	if (!r->env.record) {
		err = recording__check_attach_target(options->sampling.pid);
		if (err)
			goto fail;
		r->env.pid = options->sampling.pid;
	}
	r->env.target_uid = target_uid(r);
	for (size_t i = 0; i < NR_FAMILIES && !err; i++) {
		r->wanted[i] = families[i]->wanted(&r->env);
		if (r->wanted[i] && families[i]->prepare)
			err = families[i]->prepare(&r->state[i], &r->env);
	}
	if (err)
		goto fail;
	if (r->env.record) {
		err = recording_command__start(options->command, options->run_as, &r->command);
		if (err) {
			status__error("cannot start '%s': %s", options->command[0], strerror(-err));
			goto fail;
		}
		r->options.sampling.pid = r->env.pid = r->command.pid;
	}
	*out = r;
	return 0;
fail:
	recording__close(r);
	return err;
}

pid_t recording__pid(const struct recording *r)
{
	return r->options.sampling.pid;
}

/* A family prepared before the session takes part only if that went. */
static bool opens(const struct recording *r, size_t i)
{
	return r->wanted[i] && (!families[i]->prepare || r->state[i]);
}

int recording__start(struct recording *r)
{
	const struct session_options *sampling = &r->options.sampling;
	int err;

	for (size_t i = 0; i < NR_FAMILIES; i++)
		if (families[i] == &gpu_launch_family)
			r->options.sampling.no_launch_program = !opens(r, i);
	err = session__open(&r->session, sampling);
	if (err) {
		status__error("cannot load the BPF sampling program: %s", status__bpf_error(err));
		return err;
	}
	r->env.session = r->session;
	for (size_t i = 0; i < NR_FAMILIES && !err; i++)
		if (opens(r, i) && families[i]->open)
			err = families[i]->open(&r->state[i], &r->env);
	if (err)
		return err;
	err = session__start(r->session);
	if (err) {
		if (err == -ESRCH)
			status__error("process %d exited before it could be profiled",
				      sampling->pid);
		else
			status__error("cannot attach to the CPU clock: %s", status__bpf_error(err));
		return err;
	}
	for (size_t i = 0; i < NR_FAMILIES && !err; i++)
		if (r->state[i] && families[i]->attach)
			err = families[i]->attach(&r->state[i], &r->env);
	if (err)
		return err;
	if (r->env.record) {
		err = recording_command__release(&r->command);
		if (err) {
			status__error("cannot run '%s': %s", r->options.command[0], strerror(-err));
			return err;
		}
		status__info("recording '%s' (PID %d)", r->options.command[0], r->command.pid);
	} else {
		status__info("profiling PID %d at %u Hz%s", sampling->pid, sampling->frequency,
			     sampling->duration > 0 ? "" : "; Ctrl-C to stop");
	}
	return 0;
}

int recording__run(struct recording *r, volatile sig_atomic_t *stop)
{
	int err = session__run(r->session, stop, &r->end);

	if (err) {
		status__error("sampling failed: %s", strerror(-err));
		return err;
	}
	status__progress_clear();
	if (r->end == SESSION_END_TARGET_EXITED && !r->env.record)
		status__info("process %d exited; the profile ends there", r->options.sampling.pid);
	return 0;
}

/* One family view as a further value of r->all_values. */
static int add_view_value(struct recording *r, size_t family, const char *view)
{
	struct profile *profile = NULL;
	int err;

	err = families[family]->view(r->state[family], view, &r->result, &profile);
	/* A view with nothing in it (no NCCL calls) adds no value. */
	if (!err && profile && profile__total_weight(profile))
		err = profile__add_value_profile(r->all_values, profile, view,
						 profile__value_type(profile, 0).unit_name);
	profile__free(profile);
	return err == -EEXIST || err > 0 ? 0 : err;
}

/* The written profile and every other view, as values of one profile. */
static int build_all_values(struct recording *r)
{
	const char *view = r->view ? r->options.families.view : NULL;
	struct profile *cpu = r->result.profile;
	bool other_views = false;
	int err;

	for (size_t i = 0; i < NR_FAMILIES; i++)
		other_views |= r->state[i] && families[i]->views;
	if (!view && !other_views)
		return 0;
	err = profile__select_value(r->view ? r->view : cpu, 0, &r->all_values);
	if (!err && view)
		err = profile__name_weight(r->all_values, view,
					   profile__value_type(r->view, 0).unit_name);
	if (!err && view) {
		struct profile_value_type t = profile__value_type(cpu, 0);

		err = profile__add_value_profile(r->all_values, cpu, t.name, t.unit_name);
		err = err > 0 ? 0 : err;
	}
	for (size_t i = 0; i < NR_FAMILIES && !err; i++)
		for (size_t k = 0;
		     r->state[i] && families[i]->views && families[i]->views[k] && !err; k++)
			if (!view || strcmp(view, families[i]->views[k]))
				err = add_view_value(r, i, families[i]->views[k]);
	/* Nothing beside the written profile: it is written alone. */
	if (!err && profile__nr_values(r->all_values) < 2) {
		profile__free(r->all_values);
		r->all_values = NULL;
	}
	return err;
}

/* The session's profile, and each family's part in it. */
static int build_profile(struct recording *r)
{
	struct probe_family_result *result = &r->result;
	const char *view = r->options.families.view;
	int err;

	for (size_t i = NR_FAMILIES; i-- > 0;)
		if (r->state[i] && families[i]->detach)
			families[i]->detach(r->state[i]);
	err = session__stop(r->session);
	for (size_t i = 0; i < NR_FAMILIES && !err; i++)
		if (r->state[i] && families[i]->flush)
			err = families[i]->flush(r->state[i], r->session);
	if (!err)
		err = session__finish(r->session, &result->profile);
	result->session = r->session;
	for (size_t i = 0; i < NR_FAMILIES && !err; i++)
		if (r->state[i] && families[i]->finish)
			err = families[i]->finish(r->state[i], result);
	for (size_t i = 0; i < NR_FAMILIES && !err; i++)
		if (r->state[i] && families[i]->facts)
			err = families[i]->facts(r->state[i], result);
	for (size_t i = 0; i < NR_FAMILIES && !err && view && !r->view; i++)
		if (r->wanted[i] && families[i]->view)
			err = families[i]->view(r->state[i], view, result, &r->view);
	if (!err && r->options.families.all_views)
		err = build_all_values(r);
	return err;
}

int recording__finish(struct recording *r, struct recording_result *out)
{
	int err = build_profile(r);

	if (err) {
		status__error("cannot build the profile: %s", strerror(-err));
		return err;
	}
	if (r->env.record) {
		/* -d ended the profile, not the command: say why nothing
		 * happens until it exits. */
		if (r->end == SESSION_END_DURATION && kill(r->command.pid, 0) == 0)
			status__info("the profile is complete; waiting for '%s' (PID %d) to exit "
				     "(Ctrl-C stops it)",
				     r->options.command[0], r->command.pid);
		recording_command__reap(&r->command, r->end == SESSION_END_STOPPED);
	}
	out->profile = r->result.profile;
	out->view = r->view;
	out->all_values = r->all_values;
	out->end = r->end;
	return 0;
}

void recording__print_summary(const struct recording *r)
{
	struct rusage usage;

	for (size_t i = 0; i < NR_FAMILIES; i++)
		if (r->state[i] && families[i]->summary)
			families[i]->summary(r->state[i], r->result.profile);
	if (!getrusage(RUSAGE_SELF, &usage))
		status__debug("peak RSS of llmprof %.1f MiB; BPF maps %.1f MiB in all",
			      usage.ru_maxrss / 1024.0, bpf_cost__map_bytes() / 1048576.0);
}

const struct gpu_capture *recording__gpu_capture(const struct recording *r)
{
	for (size_t i = 0; i < NR_FAMILIES; i++)
		if (families[i] == &gpu_launch_family)
			return r->state[i];
	return NULL;
}

void recording__close(struct recording *r)
{
	if (!r)
		return;
	for (size_t i = NR_FAMILIES; i-- > 0;)
		if (r->state[i] && families[i]->close)
			families[i]->close(r->state[i]);
	session__close(r->session);
	if (r->env.record)
		recording_command__reap(&r->command, true);
	profile__free(r->result.profile);
	profile__free(r->view);
	profile__free(r->all_values);
	free(r);
}
