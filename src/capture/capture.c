// SPDX-License-Identifier: MIT
// The capture stage: registers through PTRACE_GETREGSET, memory through
// process_vm_readv (one copy, no per-word PTRACE_PEEKDATA round trips).
#include "capture.h"

#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#define SYS_FUTEX_NR SYS_futex
#define SYS_RESTART_NR SYS_restart_syscall

ssize_t capture_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = {buf, len};
	struct iovec remote = {(void *)(uintptr_t)addr, len};
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n < 0)
		return -errno;
	return n;
}

/* Forget T's stack copy (a thread read again: a retry, a late one),
 * freeing it when it is T's own and not in a snapshot's arena. */
static void drop_stack(struct sd_thread *t)
{
	if (!t->stack_in_arena)
		free(t->stack);
	t->stack = NULL;
	t->stack_in_arena = 0;
	t->stack_len = 0;
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

int capture_regs(struct sd_thread *t, const struct sd_maps *maps, size_t max_stack)
{
	struct iovec iov = {&t->regs, sizeof(t->regs)};
	if (ptrace(PTRACE_GETREGSET, t->tid, (void *)NT_PRSTATUS, &iov) < 0)
		return -errno;
	t->have_regs = 1;
	t->regs_partial = 0;
	capture_plan(t, maps, max_stack);
	return 0;
}

void capture_regs_from_syscall(struct sd_thread *t, const struct sd_taskinfo *ti)
{
	memset(&t->regs, 0, sizeof(t->regs));
	t->regs.rsp = ti->sp;
	t->regs.rip = ti->pc;
	t->regs.orig_rax = (unsigned long long)ti->syscall_nr;
	/* At syscall entry the kernel sets rax to -ENOSYS and writes the
	 * result only on the way out: a thread asleep in a syscall holds
	 * -ENOSYS there, as a stopped one would show. */
	t->regs.rax = ti->syscall_nr >= 0 ? (unsigned long long)-38 : 0;
	t->regs.rdi = ti->syscall_args[0];
	t->regs.rsi = ti->syscall_args[1];
	t->regs.rdx = ti->syscall_args[2];
	t->regs.r10 = ti->syscall_args[3];
	t->regs.r8 = ti->syscall_args[4];
	t->regs.r9 = ti->syscall_args[5];
	t->have_regs = 1;
	t->regs_partial = 1;
	drop_stack(t);
	t->stack_want = 0;
	t->lock_want_len = 0;
}

void capture_plan(struct sd_thread *t, const struct sd_maps *maps, size_t max_stack)
{
	uint64_t sp = t->regs.rsp;
	const struct sd_map *m = procfs_maps_find(maps, sp);
	uint64_t end = m ? m->end : sp + 65536; /* a mapping made after we read maps */
	size_t len = end - sp;
	if (len > max_stack) {
		len = max_stack;
		t->stack_truncated = 1;
	}
	t->stack_base = sp;
	t->stack_want = len;
	/* A thread in a futex wait: the lock around the futex word is read
	 * in the same batch as the stacks, so lock analysis adds no syscall
	 * to the pause. */
	uint64_t lo = 0, hi = 0;
	long nr = (long)t->regs.orig_rax;
	if ((nr == SYS_FUTEX_NR || nr == SYS_RESTART_NR) && lock_window(t->regs.rdi, maps, &lo, &hi)) {
		t->lock_want_addr = lo;
		t->lock_want_len = (uint32_t)(hi - lo);
	}
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	return (x > y) - (x < y);
}

size_t capture_budget(struct sd_thread **threads, size_t n, size_t total, size_t later,
		      size_t later_want)
{
	size_t sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += threads[i]->stack_want;
	if (sum + later * later_want <= total)
		return 0;
	/* Water-filling over this batch and the LATER ones: the smallest
	 * windows are copied whole as long as what is left, shared evenly,
	 * still covers them; every larger one gets that even share. Small
	 * stacks (most threads) lose nothing, and a batch copied first
	 * leaves the later ones their share. */
	size_t all = n + later;
	size_t *w = sd_xmalloc((all ? all : 1) * sizeof(*w));
	for (size_t i = 0; i < n; i++)
		w[i] = threads[i]->stack_want;
	for (size_t i = n; i < all; i++)
		w[i] = later_want;
	sd_sort(w, all, sizeof(*w), cmp_size);
	size_t left = total, share = 0;
	for (size_t k = 0; k < all; k++) {
		size_t m = all - k;
		if (w[k] <= left / m) {
			left -= w[k];
			continue;
		}
		share = (left / m) & ~(size_t)15;
		break;
	}
	free(w);
	size_t cut = 0;
	for (size_t i = 0; i < n; i++) {
		struct sd_thread *t = threads[i];
		if (t->stack_want > share) {
			t->stack_want = share;
			t->stack_truncated = 1;
			t->stack_cut = 1;
			cut++;
		}
	}
	return cut;
}

/* One read request of the batch and where its bytes go. */
struct req {
	struct sd_thread *t;
	int is_lock;
	uint64_t addr;
	size_t len, got;
	void *buf;
};

/* The requests of the planned memory reads of N THREADS (stack windows
 * into SNAP's arena or the heap, lock words into a new lockmem slot). */
static struct req *plan_reqs(struct sd_snapshot *snap, struct sd_thread **threads, size_t n,
			     size_t *nreqp)
{
	struct req *reqs = sd_xcalloc(2 * n + 1, sizeof(*reqs));
	size_t nreq = 0;
	for (size_t i = 0; i < n; i++) {
		struct sd_thread *t = threads[i];
		if (t->stack_want) {
			drop_stack(t);
			if (snap)
				snapshot_stack_alloc(snap, t, t->stack_want);
			else
				t->stack = sd_xmalloc(t->stack_want);
			reqs[nreq++] = (struct req){t, 0, t->stack_base, t->stack_want, 0, t->stack};
		}
		if (t->lock_want_len) {
			t->lockmem = sd_xrealloc(t->lockmem, (t->nlockmem + 1) * sizeof(*t->lockmem));
			struct sd_lockmem *lm = &t->lockmem[t->nlockmem];
			memset(lm, 0, sizeof(*lm));
			size_t l = t->lock_want_len < sizeof(lm->bytes) ? t->lock_want_len : sizeof(lm->bytes);
			reqs[nreq++] = (struct req){t, 1, t->lock_want_addr, l, 0, lm->bytes};
		}
	}
	*nreqp = nreq;
	return reqs;
}

/* What the requests got becomes the threads' stack lengths and lockmem. */
static void finish_reqs(struct req *reqs, size_t nreq, uint64_t *bytes)
{
	for (size_t i = 0; i < nreq; i++) {
		struct req *r = &reqs[i];
		if (!r->is_lock) {
			r->t->stack_len = r->got;
			if (bytes)
				*bytes += r->got;
		} else if (r->got) {
			struct sd_lockmem *lm = &r->t->lockmem[r->t->nlockmem++];
			lm->addr = r->addr;
			lm->len = (uint32_t)r->got;
		}
	}
	free(reqs);
}

void capture_memory_from(capture_reader read, void *arg, struct sd_snapshot *snap,
			 struct sd_thread **threads, size_t n, uint64_t *bytes)
{
	size_t nreq;
	struct req *reqs = plan_reqs(snap, threads, n, &nreq);
	for (size_t i = 0; i < nreq; i++) {
		ssize_t got = read(arg, reqs[i].addr, reqs[i].buf, reqs[i].len);
		reqs[i].got = got > 0 ? (size_t)got : 0;
	}
	finish_reqs(reqs, nreq, bytes);
}

void capture_memory(pid_t pid, struct sd_snapshot *snap, struct sd_thread **threads, size_t n,
		    uint64_t *bytes)
{
	size_t nreq;
	struct req *reqs = plan_reqs(snap, threads, n, &nreq);
	/* As few process_vm_readv calls as possible: up to 1024 requests
	 * each. A call stops at the first request it cannot read in full;
	 * go on with the one after it. */
	enum { BATCH = 1024 };
	struct iovec *local = sd_xmalloc(BATCH * sizeof(*local));
	struct iovec *remote = sd_xmalloc(BATCH * sizeof(*remote));
	size_t next = 0;
	while (next < nreq) {
		size_t cnt = nreq - next < BATCH ? nreq - next : BATCH;
		for (size_t k = 0; k < cnt; k++) {
			local[k] = (struct iovec){reqs[next + k].buf, reqs[next + k].len};
			remote[k] = (struct iovec){(void *)(uintptr_t)reqs[next + k].addr, reqs[next + k].len};
		}
		ssize_t got = process_vm_readv(pid, local, cnt, remote, cnt, 0);
		if (got < 0)
			got = 0;
		size_t k = 0, left = (size_t)got;
		while (k < cnt && left >= reqs[next + k].len) {
			reqs[next + k].got = reqs[next + k].len;
			left -= reqs[next + k].len;
			k++;
		}
		if (k < cnt) {
			/* Request k was cut short (or unreadable): keep what
			 * came, and for a lock word try it alone once more. */
			struct req *r = &reqs[next + k];
			r->got = left;
			if (r->is_lock && !left) {
				ssize_t m = capture_read(pid, r->addr, r->buf, r->len);
				r->got = m > 0 ? (size_t)m : 0;
			}
			k++;
		}
		next += k;
	}
	free(local);
	free(remote);
	finish_reqs(reqs, nreq, bytes);
}

int capture_thread(pid_t pid, struct sd_thread *t, const struct sd_maps *maps,
		   size_t max_stack, uint64_t *bytes)
{
	int r = capture_regs(t, maps, max_stack);
	if (r < 0)
		return r;
	capture_memory(pid, NULL, &t, 1, bytes);
	return 0;
}
