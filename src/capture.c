// SPDX-License-Identifier: MIT
// The capture stage: registers through PTRACE_GETREGSET, memory through
// process_vm_readv (one copy, no per-word PTRACE_PEEKDATA round trips).
#include "capture.h"

#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>

#define SYS_FUTEX_NR 202
#define SYS_RESTART_NR 219

ssize_t capture_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = {buf, len};
	struct iovec remote = {(void *)(uintptr_t)addr, len};
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n < 0)
		return -errno;
	return n;
}

/* The window of memory around a futex word that lock analysis reads: a
 * mutex starts at the word, an rwlock up to 12 bytes below, a condvar up
 * to 44 bytes below. Owner fields are racy once the threads run again, so
 * this copy, taken while frozen, is the only one lock analysis reads.
 * Returns 0 when there is nothing to read. */
static int lock_window(uint64_t uaddr, const struct sd_maps *maps, uint64_t *lo, uint64_t *hi)
{
	if (!uaddr || (uaddr & 3))
		return 0;
	const struct sd_map *m = procfs_maps_find(maps, uaddr);
	*lo = uaddr >= SD_LOCKMEM_BELOW ? uaddr - SD_LOCKMEM_BELOW : 0;
	*hi = uaddr + SD_LOCKMEM_ABOVE;
	if (m) {
		if (*lo < m->start)
			*lo = m->start;
		if (*hi > m->end)
			*hi = m->end;
	}
	return *hi > *lo;
}

static void lockmem_add(struct sd_thread *t, uint64_t lo, const uint8_t *bytes, size_t n)
{
	t->lockmem = sd_xrealloc(t->lockmem, (t->nlockmem + 1) * sizeof(*t->lockmem));
	struct sd_lockmem *lm = &t->lockmem[t->nlockmem++];
	memset(lm, 0, sizeof(*lm));
	lm->addr = lo;
	lm->len = (uint32_t)n;
	memcpy(lm->bytes, bytes, n);
}

int capture_thread(pid_t pid, struct sd_thread *t, const struct sd_maps *maps,
		   size_t max_stack, uint64_t *bytes)
{
	struct iovec iov = {&t->regs, sizeof(t->regs)};
	if (ptrace(PTRACE_GETREGSET, t->tid, (void *)NT_PRSTATUS, &iov) < 0)
		return -errno;
	t->have_regs = 1;

	uint64_t sp = t->regs.rsp;
	const struct sd_map *m = procfs_maps_find(maps, sp);
	uint64_t end;
	if (m)
		end = m->end;
	else
		end = sp + 65536; /* a mapping made after we read maps */
	size_t len = end - sp;
	if (len > max_stack) {
		len = max_stack;
		t->stack_truncated = 1;
	}
	t->stack_base = sp;

	/* A thread in a futex wait: its lock memory comes in the same
	 * process_vm_readv as the stack, so lock analysis adds no syscall
	 * to the pause. */
	uint8_t lockbuf[sizeof(((struct sd_lockmem *)0)->bytes)];
	uint64_t lo = 0, hi = 0;
	long nr = (long)t->regs.orig_rax;
	int want_lock = (nr == SYS_FUTEX_NR || nr == SYS_RESTART_NR) &&
			lock_window(t->regs.rdi, maps, &lo, &hi);
	size_t locklen = want_lock ? (size_t)(hi - lo) : 0;
	if (len) {
		t->stack = sd_xmalloc(len);
		struct iovec local[2] = {{t->stack, len}, {lockbuf, locklen}};
		struct iovec remote[2] = {{(void *)(uintptr_t)sp, len},
					  {(void *)(uintptr_t)lo, locklen}};
		ssize_t n = process_vm_readv(pid, local, want_lock ? 2 : 1, remote,
					     want_lock ? 2 : 1, 0);
		if (n < 0) {
			/* A garbage stack pointer: unwinding will say so. */
			n = 0;
		}
		if (want_lock && (size_t)n == len + locklen) {
			lockmem_add(t, lo, lockbuf, locklen);
			want_lock = 0;
		}
		if ((size_t)n > len)
			n = (ssize_t)len;
		t->stack_len = (size_t)n;
		if (bytes)
			*bytes += (uint64_t)n;
	}
	if (want_lock) {
		/* The stack read stopped short: read the lock on its own. */
		ssize_t n = capture_read(pid, lo, lockbuf, locklen);
		if (n > 0)
			lockmem_add(t, lo, lockbuf, (size_t)n);
	}
	return 0;
}
