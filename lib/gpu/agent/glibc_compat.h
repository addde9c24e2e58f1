/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The agent is loaded into other people's processes, RHEL 8 and Ubuntu
 * 20.04 containers among them (glibc 2.28 to 2.31).  glibc 2.34 moved
 * libdl and libpthread into libc under new symbol versions; binding the
 * calls to the versions every glibc since 2.2.5 has keeps the agent
 * loadable there (the old libdl.so.2 and libpthread.so.0, which it also
 * names as needed, define them).  agent_glibc.sh checks objdump -T.
 */
#ifndef LLMPROF_AGENT_GLIBC_COMPAT_H
#define LLMPROF_AGENT_GLIBC_COMPAT_H

#include <features.h> /* __GLIBC__ */

#if defined(__x86_64__) && defined(__GLIBC__)
__asm__(".symver dlopen,dlopen@GLIBC_2.2.5");
__asm__(".symver dlsym,dlsym@GLIBC_2.2.5");
__asm__(".symver dlclose,dlclose@GLIBC_2.2.5");
__asm__(".symver dlinfo,dlinfo@GLIBC_2.3.3");
__asm__(".symver pthread_create,pthread_create@GLIBC_2.2.5");
__asm__(".symver pthread_once,pthread_once@GLIBC_2.2.5");
__asm__(".symver pthread_attr_setstacksize,pthread_attr_setstacksize@GLIBC_2.2.5");
__asm__(".symver pthread_sigmask,pthread_sigmask@GLIBC_2.2.5");
#endif

#endif /* LLMPROF_AGENT_GLIBC_COMPAT_H */
