// SPDX-License-Identifier: GPL-2.0
/*
 * The symbolizers of one profile's processes share what they resolve: a
 * forked child maps the same files, and an address its parent resolved is
 * found, with the same frames, without resolving it again; a symbolizer of
 * another profile resolves its own; an address in no file is never shared.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libelf.h>

#include "../base/check.h"
#include "profile/profile.h"
#include "sampling/symbol_share.h"
#include "sampling/symbolizer.h"

__attribute__((noinline)) int shared_function(int x)
{
	return x * 3 + 1;
}

static struct symbolizer *open_symbolizer(pid_t pid, struct symbol_share *share)
{
	struct symbolizer *s;

	if (symbolizer__new(pid, &s) || symbolizer__refresh(s)) {
		fprintf(stderr, "cannot read process %d\n", pid);
		exit(1);
	}
	symbolizer__share(s, share);
	return s;
}

/* The leaf frame's name of addr as s resolves it into p. */
static const char *leaf_name(struct symbolizer *s, struct profile *p, uint64_t addr, int *n)
{
	uint32_t frames[32];

	*n = symbolizer__user_frames(s, p, addr, false, frames, 32);
	return *n > 0 ? p->frames[frames[*n - 1]].name : "(error)";
}

int main(void)
{
	uint64_t addr = (uint64_t)(uintptr_t)&shared_function + 1;
	struct profile *p = profile__new(), *other = profile__new();
	struct symbolizer *parent, *child, *elsewhere;
	struct symbol_share *share;
	size_t resolved, reused;
	const char *name;
	void *anonymous;
	pid_t pid;
	int n;

	elf_version(EV_CURRENT);
	if (!p || !other || symbol_share__new(&share))
		return 1;
	pid = fork();
	if (pid == 0) {
		pause();
		_exit(0);
	}
	parent = open_symbolizer(getpid(), share);
	child = open_symbolizer(pid, share);
	elsewhere = open_symbolizer(pid, share);

	name = leaf_name(parent, p, addr, &n);
	CHECK(n >= 1 && !strcmp(name, "shared_function"), "parent: %s", name);
	symbol_share__counts(share, &resolved, &reused, NULL);
	CHECK(resolved == 1 && reused == 0, "after the parent: %zu resolved, %zu reused", resolved,
	      reused);

	name = leaf_name(child, p, addr, &n);
	CHECK(n >= 1 && !strcmp(name, "shared_function"), "child: %s", name);
	symbol_share__counts(share, &resolved, &reused, NULL);
	CHECK(resolved == 1 && reused == 1, "after the child: %zu resolved, %zu reused", resolved,
	      reused);

	/* Another profile's frame ids are not these: resolved anew. */
	name = leaf_name(elsewhere, other, addr, &n);
	CHECK(n >= 1 && !strcmp(name, "shared_function"), "other profile: %s", name);
	symbol_share__counts(share, &resolved, &reused, NULL);
	CHECK(resolved == 1 && reused == 1, "other profile: %zu resolved, %zu reused", resolved,
	      reused);

	/* Anonymous memory is no file: nothing shared. */
	anonymous = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (anonymous != MAP_FAILED) {
		struct symbolizer *late = open_symbolizer(getpid(), share);

		leaf_name(late, p, (uint64_t)(uintptr_t)anonymous + 16, &n);
		symbol_share__counts(share, &resolved, &reused, NULL);
		CHECK(n >= 1 && resolved == 1, "anonymous memory shared: %zu resolved", resolved);
		symbolizer__free(late);
		munmap(anonymous, 4096);
	}

	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	symbolizer__free(parent);
	symbolizer__free(child);
	symbolizer__free(elsewhere);
	symbol_share__free(share);
	profile__free(p);
	profile__free(other);
	if (failures)
		fprintf(stderr, "%d failures\n", failures);
	return failures ? 1 : 0;
}
