// SPDX-License-Identifier: MIT
// The perf-events engine's rings: the task-clock rings read in order, the
// switch rings the kernel overwrites read backwards from their head, and
// the samples they hold queued per thread until a tick takes them.
#include "perf.h"

#include "perf-impl.h" /* after perf.h: it embeds its types */

#include <errno.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>

#include "target.h"

/* A buffer for a sample's stack copy: from the spares, else new. Every
 * sample of a busy thread is one: a malloc and free each, at 16 KiB,
 * made the heap grow and shrink (page faults, zeroed pages). */
uint8_t *perf_buf_get(struct sd_perf *p)
{
	return p->npool ? p->pool[--p->npool] : sd_xmalloc(p->o.stack_copy ? p->o.stack_copy : 1);
}

void perf_buf_put(struct sd_perf *p, uint8_t *b)
{
	if (!b)
		return;
	if (p->npool < 1024) {
		sd_grow(&p->pool, &p->poolcap, p->npool + 1, sizeof(*p->pool));
		p->pool[p->npool++] = b;
	} else {
		free(b);
	}
}

struct pthr *perf_thr_find(struct sd_perf *p, pid_t tid)
{
	size_t lo = 0, hi = p->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (p->v[mid].tid == tid)
			return &p->v[mid];
		if (p->v[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}


/* Make sample E (taken from the queue) TH's latest, when it is newer. */
static void make_latest(struct sd_perf *p, struct pthr *th, struct psample *e)
{
	if (e->time < th->time) {
		perf_buf_put(p, e->stack);
		return;
	}
	perf_buf_put(p, th->stack);
	th->stack = e->stack;
	th->stack_len = th->stack_cap = e->stack_len;
	th->regs = e->regs;
	th->kind = e->kind;
	th->time = e->time;
	th->gen++;
}

/* Move TH's queued samples up to time AT into its latest. A thread that
 * had its events at AT but no sample yet then (asleep since before they
 * were opened) takes its earliest. */
void perf_promote(struct sd_perf *p, struct pthr *th, uint64_t at)
{
	size_t k = 0;
	while (k < th->npend && th->pend[k].time <= at)
		make_latest(p, th, &th->pend[k++]);
	if (!k && th->kind == LATEST_NONE && th->npend && th->opened_ns <= at)
		make_latest(p, th, &th->pend[k++]);
	if (!k)
		return;
	memmove(th->pend, th->pend + k, (th->npend - k) * sizeof(*th->pend));
	th->npend -= k;
}

/* Queue a sample of TH in time order; a full queue gives its oldest up. */
static void queue_sample(struct sd_perf *p, struct pthr *th, int kind, uint64_t tm,
			 const uint64_t *regs, const uint8_t *stack, size_t len)
{
	if (!th->pend)
		th->pend = sd_xcalloc(PENDING_MAX, sizeof(*th->pend));
	if (th->npend == PENDING_MAX) {
		make_latest(p, th, &th->pend[0]);
		memmove(th->pend, th->pend + 1, (PENDING_MAX - 1) * sizeof(*th->pend));
		th->npend--;
	}
	size_t at = th->npend;
	while (at > 0 && th->pend[at - 1].time > tm)
		at--;
	memmove(th->pend + at + 1, th->pend + at, (th->npend - at) * sizeof(*th->pend));
	th->npend++;
	struct psample *e = &th->pend[at];
	uint64_t reg[PERF_NREGS];
	memcpy(reg, regs, sizeof(reg));
	perf_regs_set(&e->regs, reg);
	e->kind = kind;
	e->time = tm;
	if (len > p->o.stack_copy)
		len = p->o.stack_copy; /* the kernel copies no more than asked */
	e->stack = perf_buf_get(p);
	if (len)
		memcpy(e->stack, stack, len);
	e->stack_len = len;
}

/* A sample record of TH: queue it for the ticks; returns its time (0 when
 * it is not a usable sample). */
static uint64_t take_sample(struct sd_perf *p, struct pthr *th, const uint8_t *rec, size_t len,
			    int kind)
{
	const uint8_t *c = rec + sizeof(struct perf_event_header), *end = rec + len;
	uint64_t id, tm, abi, size, dyn = 0;
	uint32_t pidtid[2];
	const uint64_t *regs = NULL;
	const uint8_t *stack = NULL;
	if ((size_t)(end - c) < 8 + 8 + 8 + 8)
		return 0;
	memcpy(&id, c, 8);
	memcpy(pidtid, c + 8, 8);
	memcpy(&tm, c + 16, 8);
	memcpy(&abi, c + 24, 8);
	c += 32;
	if (abi != PERF_SAMPLE_REGS_ABI_NONE) {
		if ((size_t)(end - c) < PERF_NREGS * 8)
			return 0;
		regs = (const uint64_t *)(const void *)c;
		c += PERF_NREGS * 8;
	}
	if ((size_t)(end - c) < 8)
		return 0;
	memcpy(&size, c, 8);
	c += 8;
	if (size) {
		if ((size_t)(end - c) < size + 8)
			return 0;
		stack = c;
		memcpy(&dyn, c + size, 8);
		if (dyn > size)
			dyn = size;
	}
	(void)id;
	if (kind == LATEST_SWITCH)
		p->st.switch_samples++;
	else
		p->st.clock_samples++;
	/* No user registers: the sample landed in a kernel-only context
	 * (exit); it says nothing of the user stack. */
	if (!regs || tm < th->time)
		return 0;
	queue_sample(p, th, kind, tm, regs, stack, (size_t)dyn);
	return tm;
}

/* Read the records of a ring the kernel writes forwards (RING, LEN bytes
 * with its header page) in order, handing each to ON with ARG, and
 * consume them. A record that wraps around the ring's end is handed as a
 * copy. */
static void ring_walk(struct sd_perf *p, uint8_t *ring, size_t len,
		      void (*on)(struct sd_perf *, void *, const struct perf_event_header *,
				 const uint8_t *),
		      void *arg)
{
	struct perf_event_mmap_page *mp = (struct perf_event_mmap_page *)(void *)ring;
	uint8_t *data = ring + p->page;
	uint64_t size = len - p->page;
	uint64_t head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = mp->data_tail;
	p->st.drains++;
	while (tail < head) {
		struct perf_event_header h;
		uint64_t off = tail % size;
		memcpy(&h, data + off, sizeof(h)); /* records are 8-aligned: no wrap */
		if (h.size < sizeof(h) || h.size > head - tail)
			break;
		const uint8_t *rec = data + off;
		if (off + h.size > size) {
			if (h.size > p->scratch_cap) {
				free(p->scratch);
				p->scratch = sd_xmalloc(h.size);
				p->scratch_cap = h.size;
			}
			size_t first = (size_t)(size - off);
			memcpy(p->scratch, data + off, first);
			memcpy(p->scratch + first, data, h.size - first);
			rec = p->scratch;
		}
		if (h.type == PERF_RECORD_THROTTLE)
			p->st.throttled++;
		else
			on(p, arg, &h, rec);
		tail += h.size;
	}
	__atomic_store_n(&mp->data_tail, tail, __ATOMIC_RELEASE);
}

/* The lost count of a PERF_RECORD_LOST (0 for any other record). */
static uint64_t lost_of(const struct perf_event_header *h, const uint8_t *rec)
{
	uint64_t lost = 0;
	if (h->type == PERF_RECORD_LOST && h->size >= sizeof(*h) + 16)
		memcpy(&lost, rec + sizeof(*h) + 8, 8);
	return lost;
}

static void thread_record(struct sd_perf *p, void *arg, const struct perf_event_header *h,
			  const uint8_t *rec)
{
	struct pthr *th = arg;
	if (h->type == PERF_RECORD_SAMPLE) {
		take_sample(p, th, rec, h->size, LATEST_CLOCK);
	} else if (p->lost_records) {
		uint64_t lost = lost_of(h, rec);
		p->st.lost += lost;
		th->lost_recs += lost;
	}
}

void perf_drain_one(struct sd_perf *p, struct pthr *th)
{
	if (th->ring)
		ring_walk(p, th->ring, th->ring_len, thread_record, th);
}

/* ---- the per-CPU clock ---- */

/* Read CPU ring I, which the kernel overwrites backwards (the newest
 * record at data_head, older ones after it), from the newest record down
 * to the first one seen at the last read: a hot thread of the target
 * takes its newest sample there (older ones of the same thread are not
 * copied: a tick shows the latest), anything else is passed over by its
 * pid and tid, its registers and stack not read. Read without pausing the
 * ring, as perf_read_switch does: a record counts only when the kernel
 * did not write over it while it was copied. No wakeup: the ticks read
 * it, and what a late tick did not read in time is overwritten, never
 * the newest. */
void perf_cpu_drain(struct sd_perf *p, size_t i)
{
	if (i >= p->ncpus)
		return;
	struct cpuring *cr = &p->cpus[i];
	struct perf_event_mmap_page *mp = (struct perf_event_mmap_page *)(void *)cr->ring;
	const uint8_t *data = cr->ring + p->page;
	uint64_t size = cr->ring_len - p->page;
	uint64_t h1 = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
	if (h1 == cr->head)
		return; /* nothing new */
	p->st.drains++;
	uint64_t seq = ++p->cpu_read_seq, newest = cr->time, off = 0;
	while (off < size) {
		uint8_t head[sizeof(struct perf_event_header) + 24];
		struct perf_event_header h;
		perf_ring_copy((uint8_t *)&h, data, size, h1 + off, sizeof(h));
		if (h.size < sizeof(h) || off + h.size > size)
			break;
		if (h.type != PERF_RECORD_SAMPLE || h.size < sizeof(head)) {
			off += h.size;
			continue;
		}
		/* Identifier, pid and tid, time. */
		perf_ring_copy(head, data, size, h1 + off, sizeof(head));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		uint64_t h2 = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
		if (h1 - h2 + off + h.size > size)
			break; /* overwritten while read, and all older ones */
		uint32_t pidtid[2];
		uint64_t tm;
		memcpy(pidtid, head + sizeof(h) + 8, 8);
		memcpy(&tm, head + sizeof(h) + 16, 8);
		if (tm <= cr->time)
			break; /* read at the last look */
		if (tm > newest)
			newest = tm;
		off += h.size;
		struct pthr *th =
		    (pid_t)pidtid[0] == p->t->pid ? perf_thr_find(p, (pid_t)pidtid[1]) : NULL;
		if (!th || !th->cpu_clock || th->gone) {
			p->st.cpu_passed++;
			continue;
		}
		if (th->cpu_read == seq) {
			p->st.cpu_older++;
			continue;
		}
		if (h.size > p->scratch_cap) {
			free(p->scratch);
			p->scratch = sd_xmalloc(h.size);
			p->scratch_cap = h.size;
		}
		perf_ring_copy(p->scratch, data, size, h1 + off - h.size, h.size);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		h2 = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
		if (h1 - h2 + off > size)
			break;
		th->cpu_read = seq;
		if (take_sample(p, th, p->scratch, h.size, LATEST_CLOCK))
			p->st.cpu_samples++;
	}
	cr->head = h1;
	cr->time = newest;
}

/* The switch samples of TH that arrived since the last look, as many as
 * the ring still holds. The kernel writes backwards from data_head: the
 * newest record starts there, older ones follow it. The ring is read
 * without pausing it: records written meanwhile land below data_head,
 * and a record counts only when it was not overwritten while copying
 * (fewer bytes written since than the room behind it). */
void perf_read_switch(struct sd_perf *p, struct pthr *th)
{
	if (!th->sw_ring)
		return;
	struct perf_event_mmap_page *mp = (struct perf_event_mmap_page *)(void *)th->sw_ring;
	const uint8_t *data = th->sw_ring + p->page;
	uint64_t size = th->sw_ring_len - p->page;
	uint64_t h1 = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
	if (h1 == th->sw_head)
		return; /* nothing new (0: nothing ever) */
	uint64_t off = 0, newest = 0, last = th->sw_time;
	while (off < size) {
		struct perf_event_header h;
		perf_ring_copy((uint8_t *)&h, data, size, h1 + off, sizeof(h));
		if (h.size < sizeof(h) || off + h.size > size)
			break;
		if (h.type == PERF_RECORD_SAMPLE) {
			/* Its time first: the record older than the last
			 * look ends the walk without its stack being copied. */
			uint64_t tm;
			if (h.size < sizeof(h) + 24)
				break;
			perf_ring_copy((uint8_t *)&tm, data, size, h1 + off + sizeof(h) + 16, 8);
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			uint64_t h2 = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
			if (h1 - h2 + off + h.size > size || tm <= last)
				break;
		}
		if (h.size > p->scratch_cap) {
			free(p->scratch);
			p->scratch = sd_xmalloc(h.size);
			p->scratch_cap = h.size;
		}
		perf_ring_copy(p->scratch, data, size, h1 + off, h.size);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		uint64_t h2 = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
		if (h1 - h2 + off + h.size > size)
			break; /* overwritten while copying, and all older ones */
		if (h.type == PERF_RECORD_SAMPLE) {
			uint64_t tm;
			if (h.size < sizeof(h) + 24)
				break;
			memcpy(&tm, p->scratch + sizeof(h) + 16, 8);
			if (tm <= last)
				break; /* taken at an earlier look */
			take_sample(p, th, p->scratch, h.size, LATEST_SWITCH);
			if (tm > newest)
				newest = tm;
		}
		off += h.size;
	}
	th->sw_head = h1;
	if (newest > th->sw_time)
		th->sw_time = newest;
}

void perf_drain(struct sd_perf *p)
{
	for (size_t i = 0; i < p->ncpus; i++)
		perf_cpu_drain(p, i);
	for (size_t i = 0; i < p->n; i++)
		perf_drain_one(p, &p->v[i]);
}

int perf_poll_fd(const struct sd_perf *p)
{
	return p->n && p->epfd >= 0 ? p->epfd : -1;
}

void perf_drain_ready(struct sd_perf *p)
{
	struct epoll_event ev[64];
	int r;
	do {
		r = epoll_wait(p->epfd, ev, 64, 0);
		for (int i = 0; i < r; i++) {
			struct pthr *th = perf_thr_find(p, (pid_t)ev[i].data.u64);
			if (!th)
				continue;
			perf_drain_one(p, th);
			/* The thread exited: its event stays readable (and
			 * hung up) until the next tick closes it. */
			if (ev[i].events & (EPOLLHUP | EPOLLERR))
				epoll_ctl(p->epfd, EPOLL_CTL_DEL, th->fd, NULL);
		}
	} while (r == 64);
}
