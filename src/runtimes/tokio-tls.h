// SPDX-License-Identifier: MIT
// Thread pointers of a process's threads without stopping them, for the
// Tokio reader's thread-local context: glibc's own lists of its threads'
// descriptors (_rtld_global's _dl_stack_used and _dl_stack_user, each
// struct pthread linked by its list member, as libthread_db walks them),
// read from the target's memory by the layout of the dynamic loader's
// debug file (libc6-dbg on Debian).
#ifndef SD_TOKIO_TLS_H
#define SD_TOKIO_TLS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "rtmem.h"

struct sd_space;
struct tktls;

struct tktls_thread {
	pid_t tid;
	uint64_t tp; /* its thread pointer: the struct pthread's address */
};

/* Learn the layout for SP's dynamic loader (NULL when it has none, or its
 * debug file is not found: *WHY, a static string, says which). The caller
 * frees it with tktls_free. */
struct tktls *tktls_new(struct sd_space *sp, const char **why);
/* NULL does nothing. */
void tktls_free(struct tktls *t);

/* The threads glibc lists, read through MEM, into *OUT (heap, the
 * caller's), at most MAX. Returns their count (0: none could be read). */
size_t tktls_threads(struct tktls *t, struct rtmem *mem, size_t max, struct tktls_thread **out);

#endif
