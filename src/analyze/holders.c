// SPDX-License-Identifier: MIT
// Who holds what others wait on, for the views that must never hide a
// holder (top, threads): from the snapshot's wait owners, or, for a normal
// mutex nothing recorded the owner of (the perf engine reads no lock
// words; `threads` stops nothing), from the mutex's owner field read now.
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "holders.h"
#include "locks.h"

pid_t holders_live_mutex_owner(pid_t pid, uint64_t addr, uint64_t op, uint64_t val)
{
	/* A normal mutex's waiter: FUTEX_WAIT (private or not) for the value
	 * 2 (locked, with waiters). The mutex starts at the futex word:
	 * __lock +0, __owner +8 (LOCKS.md). */
	if (!pid || !addr || (op & 0x7f) != 0 || val != 2)
		return 0;
	uint32_t w[3];
	if (capture_read(pid, addr, w, sizeof(w)) != (ssize_t)sizeof(w))
		return 0;
	if (w[0] == 0 || (int32_t)w[2] <= 0)
		return 0;
	return (pid_t)w[2];
}

static int by_waiters(const void *a, const void *b)
{
	const struct sd_holder *x = a, *y = b;
	if (x->nwaiters != y->nwaiters)
		return x->nwaiters < y->nwaiters ? 1 : -1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

size_t holders_of(pid_t pid, const struct sd_snapshot *s, struct sd_holder **out)
{
	struct sd_holder *v = NULL;
	size_t n = 0, cap = 0;
	uint64_t *read_addr = NULL;
	pid_t *read_owner = NULL;
	size_t nread = 0, rcap = 0, ocap = 0;
	for (size_t i = 0; i < s->nthreads; i++) {
		const struct sd_thread *w = &s->threads[i];
		if (!locks_is_wait(w->wait.kind) || locks_is_idle(w->wait.kind) ||
		    w->wait.kind == SD_WAIT_JOIN)
			continue;
		pid_t owner = w->wait.owner_known ? w->wait.owner : 0;
		size_t k = 0;
		if (!owner && w->syscall_nr == 202 && w->wait.kind == SD_WAIT_MUTEX) {
			/* One read per lock, however many wait on it. */
			while (k < nread && read_addr[k] != w->wait.address)
				k++;
			if (k == nread) {
				sd_grow(&read_addr, &rcap, nread + 1, sizeof(*read_addr));
				sd_grow(&read_owner, &ocap, nread + 1, sizeof(*read_owner));
				read_addr[nread] = w->wait.address;
				read_owner[nread++] = holders_live_mutex_owner(
				    pid, w->syscall_args[0], w->syscall_args[1], w->syscall_args[2]);
			}
			owner = read_owner[k];
		}
		if (owner <= 0 || owner == w->tid || !snapshot_find_thread(s, owner))
			continue;
		k = 0;
		while (k < n && !(v[k].tid == owner && v[k].address == w->wait.address))
			k++;
		if (k == n) {
			sd_grow(&v, &cap, n + 1, sizeof(*v));
			memset(&v[n], 0, sizeof(*v));
			v[n].tid = owner;
			v[n].kind = w->wait.kind;
			v[n].address = w->wait.address;
			n++;
		}
		if (!v[k].symbol)
			v[k].symbol = w->wait.symbol;
		v[k].nwaiters++;
	}
	free(read_addr);
	free(read_owner);
	if (n > 1)
		qsort(v, n, sizeof(*v), by_waiters);
	*out = v;
	return n;
}

const struct sd_holder *holders_find(const struct sd_holder *v, size_t n, pid_t tid)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].tid == tid)
			return &v[i];
	return NULL;
}
