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

/* Copy memory around a futex word so lock analysis can read the lock it
 * belongs to: a mutex starts at the word, an rwlock up to 12 bytes below. */
static void capture_lockmem(pid_t pid, struct sd_thread *t, uint64_t uaddr,
			    const struct sd_maps *maps)
{
	if (!uaddr || (uaddr & 3))
		return;
	const struct sd_map *m = procfs_maps_find(maps, uaddr);
	uint64_t lo = uaddr >= 32 ? uaddr - 32 : 0;
	uint64_t hi = uaddr + 64;
	if (m) {
		if (lo < m->start)
			lo = m->start;
		if (hi > m->end)
			hi = m->end;
	}
	if (hi <= lo)
		return;
	t->lockmem = sd_xrealloc(t->lockmem, (t->nlockmem + 1) * sizeof(*t->lockmem));
	struct sd_lockmem *lm = &t->lockmem[t->nlockmem];
	memset(lm, 0, sizeof(*lm));
	ssize_t n = capture_read(pid, lo, lm->bytes, (size_t)(hi - lo));
	if (n <= 0)
		return;
	lm->addr = lo;
	lm->len = (uint32_t)n;
	t->nlockmem++;
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
	if (len) {
		t->stack = sd_xmalloc(len);
		ssize_t n = capture_read(pid, sp, t->stack, len);
		if (n < 0) {
			/* A garbage stack pointer: unwinding will say so. */
			n = 0;
		}
		t->stack_len = (size_t)n;
		if (bytes)
			*bytes += (uint64_t)n;
	}

	long nr = (long)t->regs.orig_rax;
	if (nr == SYS_FUTEX_NR || nr == SYS_RESTART_NR)
		capture_lockmem(pid, t, t->regs.rdi, maps);
	return 0;
}
