// SPDX-License-Identifier: MIT
// The perf-events engine: per-thread task-clock and context-switch samples
// (user registers plus a copy of the top of the user stack) drained from one
// ring buffer per thread, and a wall-clock snapshot per tick composed from
// each thread's latest sample, unwound by the same unwinder as ptrace.
#include "perf.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "analyze.h"
#include "procfs.h"
#include "symbols.h"
#include "target.h"
#include "unwind.h"

/* x86_64 user registers asked of the kernel: ax..ss (0-11) and r8-r15
 * (16-23). ds, es, fs and gs (12-15) are refused on 64-bit kernels. */
#define REGS_MASK (((1ull << 12) - 1) | (0xffull << 16))
#define NREGS 20
#define DEFAULT_STACK_COPY (16u << 10)
#define SAMPLE_TYPE                                                                     \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_REGS_USER | \
	 PERF_SAMPLE_STACK_USER)

enum { LATEST_NONE = 0, LATEST_CLOCK, LATEST_SWITCH, LATEST_SEED };

/* A sample drained but not yet used by a tick (a tick composes the state
 * at its own time: a late tick uses the samples up to that time). */
struct psample {
	int kind;
	uint64_t time;
	struct user_regs_struct regs;
	uint8_t *stack;
	size_t stack_len;
};
#define PENDING_MAX 32

/* One thread with its events and its latest sample. */
struct pthr {
	pid_t tid;
	int fd, fd_sw;         /* task-clock, context switch */
	uint8_t *ring;         /* task-clock samples, read and consumed */
	size_t ring_len;
	uint8_t *sw_ring;      /* switch samples, overwritten: only the latest counts */
	size_t sw_ring_len;
	uint64_t sw_head;      /* its data_head when last read */
	uint64_t sw_time;      /* time of the newest switch sample taken */
	struct psample *pend;  /* samples newer than the last tick, by time */
	size_t npend;
	int gone;              /* not in the task list any more: kept until
				* the ticks reach its last sample */
	uint64_t opened_ns;    /* when its events were opened */
	char name[16];         /* its comm when last read */

	/* The latest sample: LATEST_* kind, with registers and stack. */
	int kind;
	uint64_t time;         /* CLOCK_MONOTONIC ns */
	uint64_t gen;          /* bumped at every new latest sample */
	struct user_regs_struct regs;
	uint8_t *stack;
	size_t stack_len, stack_cap;

	/* Derived from the latest sample, redone when gen moves on. */
	uint64_t frames_gen;   /* gen the frames below belong to (0: none) */
	struct sd_frame *frames;
	size_t nframes;
	char *unwind_stop;
	uint64_t state_gen;
	char state;
	int running, syscall_known;
	long syscall_nr;
	uint64_t syscall_args[6];
	char *wchan;
};

struct sd_perf {
	struct sd_target *t;
	struct sd_perf_opts o;
	size_t page;
	int lost_records;      /* the kernel has no PERF_FORMAT_LOST: count
				* PERF_RECORD_LOST instead */
	size_t sw_ring_kb;     /* switch ring per thread */
	struct pthr *v;        /* sorted by tid */
	size_t n, cap;
	int *fds;              /* for perf_pollfds */
	size_t nfds, fdcap;
	uint8_t *scratch;      /* a record that wraps around the ring's end */
	size_t scratch_cap;
	struct sd_perf_stats st;
};

static int sys_perf_event_open(struct perf_event_attr *a, pid_t pid, int cpu, int group,
			       unsigned long flags)
{
	return (int)syscall(SYS_perf_event_open, a, pid, cpu, group, flags);
}

static void attr_init(struct perf_event_attr *a, int sw_config, uint64_t period, size_t stack)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = (uint64_t)sw_config;
	a->sample_period = period;
	a->sample_type = SAMPLE_TYPE;
	a->sample_regs_user = REGS_MASK;
	a->sample_stack_user = (uint32_t)stack;
	/* The switch happens in the kernel: with exclude_kernel set no
	 * switch sample arrives, and task-clock samples landing in a system
	 * call would be dropped. The registers asked for are the user ones
	 * either way. */
	a->exclude_kernel = 0;
	a->exclude_hv = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC; /* the clock of sd_now_ns() */
	a->watermark = 1;
}

static const char *paranoid_text(char *buf, size_t size)
{
	char *text = NULL;
	if (sd_read_file("/proc/sys/kernel/perf_event_paranoid", &text, 64) < 0 || !text) {
		snprintf(buf, size, "unknown");
	} else {
		text[strcspn(text, "\n")] = '\0';
		snprintf(buf, size, "%s", text);
	}
	free(text);
	return buf;
}

/* ERR for a refused perf_event_open (E is its errno), naming the cause. */
static int open_error(struct sd_error *err, int e, const char *what)
{
	char par[32];
	switch (e) {
	case EACCES:
	case EPERM:
		return sd_error_set(err, e,
				    "perf_event_open refused for %s: %s (perf_event_paranoid is %s; "
				    "a seccomp filter such as a container's default profile also "
				    "refuses it; run as root or with CAP_PERFMON, or lower "
				    "kernel.perf_event_paranoid)",
				    what, sd_strerror(e), paranoid_text(par, sizeof(par)));
	case ENOSYS:
		return sd_error_set(err, e,
				    "perf_event_open is not available: the kernel has no perf "
				    "events (CONFIG_PERF_EVENTS)");
	case ENOENT:
	case EOPNOTSUPP:
		return sd_error_set(err, e,
				    "perf_event_open for %s: software clock events with user "
				    "registers and stack are not supported by this kernel (%s)",
				    what, sd_strerror(e));
	case EMFILE:
	case ENFILE:
		return sd_error_set(err, e,
				    "perf_event_open for %s: %s (two descriptors per thread are "
				    "needed; raise the open file limit with ulimit -n)",
				    what, sd_strerror(e));
	default:
		return sd_error_set(err, e, "perf_event_open for %s: %s", what, sd_strerror(e));
	}
}

int perf_probe(struct sd_error *err)
{
	struct perf_event_attr a;
	const int cfg[2] = {PERF_COUNT_SW_TASK_CLOCK, PERF_COUNT_SW_CONTEXT_SWITCHES};
	for (int i = 0; i < 2; i++) {
		attr_init(&a, cfg[i], i ? 1 : 10000000, DEFAULT_STACK_COPY);
		a.disabled = 1;
		int fd = sys_perf_event_open(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0)
			return open_error(err, errno, i ? "context-switch samples" : "task-clock samples");
		close(fd);
	}
	return 0;
}

/* ---- threads ---- */

/* Samples of TH's task-clock event the kernel could not write. */
static uint64_t thr_lost(const struct sd_perf *p, const struct pthr *th)
{
	uint64_t v[2];
	if (p->lost_records || th->fd < 0 || read(th->fd, v, sizeof(v)) != (ssize_t)sizeof(v))
		return 0;
	return v[1];
}

static void thr_close(struct sd_perf *p, struct pthr *th)
{
	p->st.lost += thr_lost(p, th);
	if (th->ring)
		munmap(th->ring, th->ring_len);
	if (th->sw_ring)
		munmap(th->sw_ring, th->sw_ring_len);
	if (th->fd_sw >= 0)
		close(th->fd_sw);
	if (th->fd >= 0)
		close(th->fd);
	free(th->stack);
	for (size_t i = 0; i < th->npend; i++)
		free(th->pend[i].stack);
	free(th->pend);
	free(th->frames);
	free(th->unwind_stop);
	free(th->wchan);
	memset(th, 0, sizeof(*th));
	th->fd = th->fd_sw = -1;
	p->st.threads_closed++;
}

/* Open the two events of TID and map their rings. 0 or a negative errno.
 * Task-clock samples go to a ring drained in order (each one counts, a
 * full ring is counted as lost). Switch samples go to a ring the kernel
 * overwrites backwards (read-only mapping, write_backward): a thread
 * preempted a thousand times a second then never fills it, and the
 * latest sample, the only one a tick uses, is always there. */
static int thr_open(struct sd_perf *p, struct pthr *th, pid_t tid)
{
	struct perf_event_attr a;
	memset(th, 0, sizeof(*th));
	th->tid = tid;
	th->fd = th->fd_sw = -1;
	th->syscall_nr = -1;
	attr_init(&a, PERF_COUNT_SW_TASK_CLOCK, p->o.period_ns, p->o.stack_copy);
	th->ring_len = p->page + p->o.ring_kb * 1024;
	a.wakeup_watermark = (uint32_t)(p->o.ring_kb * 1024 / 4);
	int e;
	/* The lost count of the event itself (Linux 6.0): a sample larger
	 * than the free room is dropped, and with a ring too small for any
	 * sample the kernel never gets to write a PERF_RECORD_LOST. */
	if (!p->lost_records)
		a.read_format = PERF_FORMAT_LOST;
	th->fd = sys_perf_event_open(&a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (th->fd < 0 && errno == EINVAL && !p->lost_records) {
		p->lost_records = 1;
		a.read_format = 0;
		th->fd = sys_perf_event_open(&a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	}
	if (th->fd < 0)
		return -errno;
	attr_init(&a, PERF_COUNT_SW_CONTEXT_SWITCHES, 1, p->o.stack_copy);
	a.write_backward = 1;
	a.watermark = 0;
	a.wakeup_events = 0;
	th->fd_sw = sys_perf_event_open(&a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (th->fd_sw < 0)
		goto fail;
	void *r = mmap(NULL, th->ring_len, PROT_READ | PROT_WRITE, MAP_SHARED, th->fd, 0);
	if (r == MAP_FAILED)
		goto fail;
	th->ring = r;
	th->sw_ring_len = p->page + p->sw_ring_kb * 1024;
	r = mmap(NULL, th->sw_ring_len, PROT_READ, MAP_SHARED, th->fd_sw, 0);
	if (r == MAP_FAILED)
		goto fail;
	th->sw_ring = r;
	p->st.threads_opened++;
	th->opened_ns = sd_now_ns();
	return 0;
fail:
	e = errno;
	if (th->ring)
		munmap(th->ring, th->ring_len);
	if (th->fd_sw >= 0)
		close(th->fd_sw);
	close(th->fd);
	th->ring = NULL;
	th->fd = th->fd_sw = -1;
	return -e;
}

static struct pthr *thr_find(struct sd_perf *p, pid_t tid)
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

static struct pthr *thr_by_fd(struct sd_perf *p, int fd)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->v[i].fd == fd)
			return &p->v[i];
	return NULL;
}

static void drain_one(struct sd_perf *p, struct pthr *th);
static void read_switch(struct sd_perf *p, struct pthr *th);

/* Rescan the task list: open events on new threads, close those of
 * threads gone. A thread gone keeps its samples (and its place) while
 * ticks at or before AT still need them: a late tick shows the threads
 * that lived at its time. The first scan's failure on every thread is an
 * error; later, a thread that exits between the scan and the open is
 * skipped. */
static int thr_sync(struct sd_perf *p, int first, uint64_t at, struct sd_error *err)
{
	pid_t *tids = NULL;
	size_t ntids = 0;
	if (procfs_list_tids(p->t->pid, &tids, &ntids, err) < 0)
		return -1;
	struct pthr *nv = sd_xcalloc(ntids + p->n + 1, sizeof(*nv));
	size_t nn = 0, i = 0, k = 0;
	int firsterr = 0;
	/* Merge two sorted lists: old threads (p->v) and live tids. */
	while (i < p->n || k < ntids) {
		if (k == ntids || (i < p->n && p->v[i].tid < tids[k])) {
			struct pthr *th = &p->v[i++];
			if (!th->gone) {
				drain_one(p, th);
				read_switch(p, th);
				th->gone = 1;
			}
			/* It lived at least until its last sample: ticks up
			 * to then (a late tick made up) still count it. */
			uint64_t last = th->npend ? th->pend[th->npend - 1].time : th->time;
			if (th->kind != LATEST_NONE && th->time > last)
				last = th->time;
			if (last >= at && th->name[0])
				nv[nn++] = *th;
			else
				thr_close(p, th);
			continue;
		}
		if (i < p->n && p->v[i].tid == tids[k]) {
			nv[nn++] = p->v[i++];
			k++;
			continue;
		}
		int r = thr_open(p, &nv[nn], tids[k]);
		if (r == 0)
			nn++;
		else if (r != -ESRCH && !firsterr)
			firsterr = -r;
		k++;
	}
	free(tids);
	free(p->v);
	p->cap = ntids + p->n + 1;
	p->v = nv;
	p->n = nn;
	if (first && !nn) {
		char what[64];
		snprintf(what, sizeof(what), "process %d", (int)p->t->pid);
		if (!firsterr)
			return sd_error_set(err, ESRCH, "process %d exited", (int)p->t->pid);
		return open_error(err, firsterr, what);
	}
	return 0;
}

/* ---- draining ---- */

static void set_regs(struct user_regs_struct *r, const uint64_t *v)
{
	memset(r, 0, sizeof(*r));
	r->rax = v[0];
	r->rbx = v[1];
	r->rcx = v[2];
	r->rdx = v[3];
	r->rsi = v[4];
	r->rdi = v[5];
	r->rbp = v[6];
	r->rsp = v[7];
	r->rip = v[8];
	r->eflags = v[9];
	r->cs = v[10];
	r->ss = v[11];
	r->r8 = v[12];
	r->r9 = v[13];
	r->r10 = v[14];
	r->r11 = v[15];
	r->r12 = v[16];
	r->r13 = v[17];
	r->r14 = v[18];
	r->r15 = v[19];
	/* The system call number is not among the sampled registers. */
	r->orig_rax = (unsigned long long)-1;
}

/* Make sample E (taken from the queue) TH's latest, when it is newer. */
static void make_latest(struct pthr *th, struct psample *e)
{
	if (e->time < th->time) {
		free(e->stack);
		return;
	}
	free(th->stack);
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
static void promote(struct pthr *th, uint64_t at)
{
	size_t k = 0;
	while (k < th->npend && th->pend[k].time <= at)
		make_latest(th, &th->pend[k++]);
	if (!k && th->kind == LATEST_NONE && th->npend && th->opened_ns <= at)
		make_latest(th, &th->pend[k++]);
	if (!k)
		return;
	memmove(th->pend, th->pend + k, (th->npend - k) * sizeof(*th->pend));
	th->npend -= k;
}

/* Queue a sample of TH in time order; a full queue gives its oldest up. */
static void queue_sample(struct pthr *th, int kind, uint64_t tm, const uint64_t *regs,
			 const uint8_t *stack, size_t len)
{
	if (!th->pend)
		th->pend = sd_xcalloc(PENDING_MAX, sizeof(*th->pend));
	if (th->npend == PENDING_MAX) {
		make_latest(th, &th->pend[0]);
		memmove(th->pend, th->pend + 1, (PENDING_MAX - 1) * sizeof(*th->pend));
		th->npend--;
	}
	size_t at = th->npend;
	while (at > 0 && th->pend[at - 1].time > tm)
		at--;
	memmove(th->pend + at + 1, th->pend + at, (th->npend - at) * sizeof(*th->pend));
	th->npend++;
	struct psample *e = &th->pend[at];
	uint64_t reg[NREGS];
	memcpy(reg, regs, sizeof(reg));
	set_regs(&e->regs, reg);
	e->kind = kind;
	e->time = tm;
	e->stack = sd_xmalloc(len ? len : 1);
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
		if ((size_t)(end - c) < NREGS * 8)
			return 0;
		regs = (const uint64_t *)(const void *)c;
		c += NREGS * 8;
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
	queue_sample(th, kind, tm, regs, stack, (size_t)dyn);
	return tm;
}

static void drain_one(struct sd_perf *p, struct pthr *th)
{
	if (!th->ring)
		return;
	struct perf_event_mmap_page *mp = (struct perf_event_mmap_page *)(void *)th->ring;
	uint8_t *data = th->ring + p->page;
	uint64_t size = th->ring_len - p->page;
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
			/* The record wraps around the end of the ring. */
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
		if (h.type == PERF_RECORD_SAMPLE) {
			take_sample(p, th, rec, h.size, LATEST_CLOCK);
		} else if (h.type == PERF_RECORD_LOST && h.size >= sizeof(h) + 16 &&
			   p->lost_records) {
			uint64_t lost;
			memcpy(&lost, rec + sizeof(h) + 8, 8);
			p->st.lost += lost;
		} else if (h.type == PERF_RECORD_THROTTLE) {
			p->st.throttled++;
		}
		tail += h.size;
	}
	__atomic_store_n(&mp->data_tail, tail, __ATOMIC_RELEASE);
}

/* Copy LEN bytes at ring offset OFF of a ring of SIZE data bytes. */
static void ring_copy(uint8_t *dst, const uint8_t *data, uint64_t size, uint64_t off, size_t len)
{
	off %= size;
	size_t first = off + len > size ? (size_t)(size - off) : len;
	memcpy(dst, data + off, first);
	if (first < len)
		memcpy(dst + first, data, len - first);
}

/* The switch samples of TH that arrived since the last look, as many as
 * the ring still holds. The kernel writes backwards from data_head: the
 * newest record starts there, older ones follow it. The ring is read
 * without pausing it: records written meanwhile land below data_head,
 * and a record counts only when it was not overwritten while copying
 * (fewer bytes written since than the room behind it). */
static void read_switch(struct sd_perf *p, struct pthr *th)
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
		ring_copy((uint8_t *)&h, data, size, h1 + off, sizeof(h));
		if (h.size < sizeof(h) || off + h.size > size)
			break;
		if (h.size > p->scratch_cap) {
			free(p->scratch);
			p->scratch = sd_xmalloc(h.size);
			p->scratch_cap = h.size;
		}
		ring_copy(p->scratch, data, size, h1 + off, h.size);
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
	for (size_t i = 0; i < p->n; i++)
		drain_one(p, &p->v[i]);
}

size_t perf_pollfds(struct sd_perf *p, const int **fds)
{
	sd_grow(&p->fds, &p->fdcap, p->n + 1, sizeof(*p->fds));
	p->nfds = 0;
	for (size_t i = 0; i < p->n; i++)
		if (p->v[i].fd >= 0)
			p->fds[p->nfds++] = p->v[i].fd;
	*fds = p->fds;
	return p->nfds;
}

void perf_drain_fd(struct sd_perf *p, int fd)
{
	struct pthr *th = thr_by_fd(p, fd);
	if (th)
		drain_one(p, th);
}

/* ---- session ---- */

/* Two descriptors per thread: make room up to the hard limit. */
static void raise_fd_limit(size_t need)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY ||
	    rl.rlim_cur >= need)
		return;
	rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > need ? need : rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
}

struct sd_perf *perf_new(struct sd_target *t, const struct sd_perf_opts *o, struct sd_error *err)
{
	struct sd_perf *p = sd_xcalloc(1, sizeof(*p));
	p->t = t;
	if (o)
		p->o = *o;
	if (!p->o.period_ns)
		p->o.period_ns = 12500000;
	if (!p->o.stack_copy)
		p->o.stack_copy = DEFAULT_STACK_COPY;
	p->o.stack_copy &= ~(size_t)7; /* the kernel wants a multiple of 8 */
	p->page = (size_t)sysconf(_SC_PAGESIZE);
	size_t ntids = 0;
	pid_t *tids = NULL;
	if (procfs_list_tids(t->pid, &tids, &ntids, err) < 0) {
		free(p);
		return NULL;
	}
	free(tids);
	/* Room for several task-clock samples between two drains (one per
	 * interval of CPU time). Less per thread when there are many (it is
	 * locked memory). */
	if (!p->o.ring_kb)
		p->o.ring_kb = ntids <= 256 ? 128 : 64;
	/* A power of two pages, at least two samples' worth. */
	size_t want = p->o.ring_kb * 1024, ring = p->page;
	while (ring < want)
		ring <<= 1;
	p->o.ring_kb = ring / 1024;
	/* Room for two switch samples and the one being written. */
	want = 3 * (p->o.stack_copy + 512);
	ring = p->page;
	while (ring < want)
		ring <<= 1;
	p->sw_ring_kb = ring / 1024;
	raise_fd_limit(ntids * 2 + ntids / 2 + 256);
	if (thr_sync(p, 1, UINT64_MAX, err) < 0) {
		perf_free(p);
		return NULL;
	}
	return p;
}

void perf_free(struct sd_perf *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++)
		thr_close(p, &p->v[i]);
	free(p->v);
	free(p->fds);
	free(p->scratch);
	free(p);
}

void perf_stats_add(const struct sd_perf *p, struct sd_perf_stats *st)
{
	st->clock_samples += p->st.clock_samples;
	st->switch_samples += p->st.switch_samples;
	st->lost += p->st.lost;
	for (size_t i = 0; i < p->n; i++)
		st->lost += thr_lost(p, &p->v[i]);
	st->throttled += p->st.throttled;
	st->seeded += p->st.seeded;
	st->unwinds += p->st.unwinds;
	st->threads_opened += p->st.threads_opened;
	st->threads_closed += p->st.threads_closed;
	st->drains += p->st.drains;
}

/* ---- composing a tick ---- */

static void set_str(char **dst, const char *src)
{
	free(*dst);
	*dst = src ? sd_xstrdup(src) : NULL;
}

/* The state of TH at its latest sample. A task-clock sample: on a CPU. A
 * switch sample: blocked in a system call (the kernel leaves -ENOSYS in
 * rax until the call returns) or preempted (runnable). A blocked thread's
 * call number and arguments are read once from /proc/TID/syscall, trusted
 * only when it still shows the sampled stack and instruction pointers. */
static void thr_state(struct sd_perf *p, struct pthr *th)
{
	if (th->state_gen == th->gen || th->kind == LATEST_SEED)
		return;
	th->state_gen = th->gen;
	th->syscall_nr = -1;
	th->syscall_known = 0;
	set_str(&th->wchan, NULL);
	if (th->kind == LATEST_CLOCK || (long)th->regs.rax != -38) {
		th->state = 'R';
		/* Preempted or on a CPU: running, as the ptrace engine (which
		 * cannot tell them apart either) says. */
		th->running = 1;
		return;
	}
	th->state = 'S';
	th->running = 0;
	struct sd_taskinfo ti;
	if (procfs_taskinfo_ex(p->t->pid, th->tid, &ti, PROCFS_LIGHT) == 0 && ti.syscall_known &&
	    !ti.running && ti.syscall_nr >= 0 && ti.sp == th->regs.rsp && ti.pc == th->regs.rip) {
		th->syscall_known = 1;
		th->syscall_nr = ti.syscall_nr;
		memcpy(th->syscall_args, ti.syscall_args, sizeof(th->syscall_args));
		if (ti.state == 'D')
			th->state = 'D';
		th->regs.orig_rax = (unsigned long long)ti.syscall_nr;
	}
}

/* Unwind TH's latest sample through a thread of S, and keep the frames. */
static void thr_unwind(struct sd_perf *p, struct sd_snapshot *s, struct sd_thread *st,
		       struct pthr *th, unsigned max_frames)
{
	st->have_regs = 1;
	st->regs = th->regs;
	st->stack = th->stack;
	st->stack_base = th->regs.rsp;
	st->stack_len = th->stack_len;
	st->stack_in_arena = 1; /* borrowed: not freed with the snapshot */
	st->nframes = 0;
	st->unwind_stop = NULL;
	unwind_thread(p->t->unw, s, st, max_frames);
	if (st->unwind_stop && st->nframes >= 1 && st->nframes <= 2 &&
	    (st->nframes == 1 || (st->frames[1].flags & SD_FRAME_FP)) && th->stack_len >= 8) {
		/* No unwind info at the sampled pc, and the frame pointer led
		 * nowhere (or was refused). A switch sample catches this often where ptrace
		 * rarely does: glibc's clone3 ends its FDE before the syscall,
		 * and the parent is preempted right after it, one `ret` from
		 * its caller. Try the pc as a leaf (return address at the
		 * stack pointer); keep that only when it unwinds cleanly. */
		struct sd_frame f0 = st->frames[0];
		uint64_t ret;
		memcpy(&ret, th->stack, 8);
		st->regs.rip = ret;
		st->regs.rsp = th->regs.rsp + 8;
		st->stack = th->stack + 8;
		st->stack_base = th->regs.rsp + 8;
		st->stack_len = th->stack_len - 8;
		struct sd_frame *keep = st->frames;
		size_t nkeep = st->nframes;
		const char *keep_stop = st->unwind_stop;
		st->frames = NULL;
		st->nframes = 0;
		st->unwind_stop = NULL;
		unwind_thread(p->t->unw, s, st, max_frames ? max_frames - 1 : 0);
		if (!st->unwind_stop && st->nframes >= 2) {
			*snapshot_add_frame(st) = f0; /* then move it first */
			memmove(st->frames + 1, st->frames, (st->nframes - 1) * sizeof(*st->frames));
			st->frames[0] = f0;
			st->frames[1].flags &= ~(unsigned)SD_FRAME_EXACT;
			free(keep);
		} else {
			free(st->frames);
			st->frames = keep;
			st->nframes = nkeep;
			st->unwind_stop = keep_stop;
		}
		st->regs = th->regs;
	}
	st->stack = NULL;
	st->stack_len = 0;
	st->stack_in_arena = 0;
	free(th->frames);
	th->frames = sd_xmalloc((st->nframes ? st->nframes : 1) * sizeof(*th->frames));
	if (st->nframes)
		memcpy(th->frames, st->frames, st->nframes * sizeof(*th->frames));
	th->nframes = st->nframes;
	set_str(&th->unwind_stop, st->unwind_stop);
	th->frames_gen = th->gen;
	p->st.unwinds++;
}

/* Threads with no sample yet (asleep since before the events were
 * opened): one ptrace snapshot of just them gives their stacks. */
static int seed(struct sd_perf *p, const struct sd_snap_opts *so, uint64_t *pause_us,
		struct sd_error *err)
{
	pid_t *want = sd_xmalloc((p->n ? p->n : 1) * sizeof(*want));
	size_t nw = 0;
	for (size_t i = 0; i < p->n; i++)
		if (p->v[i].kind == LATEST_NONE && !p->v[i].gone)
			want[nw++] = p->v[i].tid;
	if (!nw) {
		free(want);
		return 0;
	}
	struct sd_snap_opts o = *so;
	o.tids = want;
	o.ntids = nw;
	o.name_glob = NULL;
	o.no_symbols = 1;
	o.keep_capture = 0;
	uint64_t now = sd_now_ns();
	struct sd_error e = {0};
	struct sd_snapshot *s = target_snapshot(p->t, &o, &e);
	free(want);
	if (!s) {
		if (e.code == ESRCH && !target_alive(p->t))
			return sd_error_set(err, ESRCH, "%s", e.msg);
		return 0; /* the threads went away: the next scan drops them */
	}
	*pause_us = s->pause_us;
	for (size_t i = 0; i < s->nthreads; i++) {
		struct sd_thread *st = &s->threads[i];
		struct pthr *th = thr_find(p, st->tid);
		if (!th || th->kind != LATEST_NONE || st->status != SD_THREAD_OK)
			continue;
		th->kind = LATEST_SEED;
		th->time = now;
		th->gen++;
		th->regs = st->regs;
		free(th->frames);
		th->frames = sd_xmalloc((st->nframes ? st->nframes : 1) * sizeof(*th->frames));
		if (st->nframes)
			memcpy(th->frames, st->frames, st->nframes * sizeof(*th->frames));
		th->nframes = st->nframes;
		set_str(&th->unwind_stop, st->unwind_stop);
		th->frames_gen = th->gen;
		th->state_gen = th->gen;
		th->state = st->state;
		th->running = st->running;
		th->syscall_known = st->syscall_known;
		th->syscall_nr = st->syscall_nr;
		memcpy(th->syscall_args, st->syscall_args, sizeof(th->syscall_args));
		set_str(&th->wchan, st->wchan);
		p->st.seeded++;
	}
	snapshot_free(s);
	return 0;
}

static int wanted(const struct sd_snap_opts *so, pid_t tid, const char *name)
{
	if (so->tids) {
		size_t i = 0;
		while (i < so->ntids && so->tids[i] != tid)
			i++;
		if (i == so->ntids)
			return 0;
	}
	if (so->name_glob && fnmatch(so->name_glob, name ? name : "", 0) != 0)
		return 0;
	return 1;
}

struct sd_snapshot *perf_tick(struct sd_perf *p, const struct sd_snap_opts *so, uint64_t at_ns,
			      struct sd_error *err)
{
	uint64_t t0 = sd_now_ns();
	char pstate = 0;
	if (procfs_proc_stat(p->t->pid, &pstate, NULL, NULL, err) < 0)
		return NULL;
	if (pstate == 'Z' || pstate == 'X') {
		sd_error_set(err, ESRCH, "process %d exited (zombie)", (int)p->t->pid);
		return NULL;
	}
	perf_drain(p);
	if (thr_sync(p, 0, at_ns ? at_ns : UINT64_MAX, err) < 0)
		return NULL;
	perf_drain(p); /* threads opened just now */
	if (!at_ns)
		at_ns = UINT64_MAX;
	for (size_t i = 0; i < p->n; i++) {
		read_switch(p, &p->v[i]);
		promote(&p->v[i], at_ns);
	}
	int maps_fresh = 0;
	if (!p->t->space.maps.n || t0 - p->t->maps_ns > 1000000000ull) {
		if (target_refresh(p->t, err) < 0)
			return NULL;
		maps_fresh = 1;
	}
	symbols_sync(p->t->sym);
	uint64_t pause_us = 0;
	if (seed(p, so, &pause_us, err) < 0)
		return NULL;

	struct sd_snapshot *s = snapshot_new(p->t->pid);
	s->comm = strpool_intern(s->pool, p->t->info.comm);
	s->exe = p->t->info.exe ? strpool_intern(s->pool, p->t->info.exe) : NULL;
	s->state = pstate;
	s->time = sd_wall_time();
	s->pause_us = pause_us;
	uint64_t misses = p->t->space.maps_misses;
	uint64_t t1 = sd_now_ns();
	for (size_t i = 0; i < p->n; i++) {
		struct pthr *th = &p->v[i];
		if (th->kind == LATEST_NONE)
			continue; /* born after the seed (or after AT), no sample yet */
		const char *name = th->gone ? NULL : target_thread_name(p->t, th->tid);
		if (name)
			snprintf(th->name, sizeof(th->name), "%s", name);
		else if (th->gone)
			name = th->name; /* gone since, but alive at AT */
		if (!name)
			continue; /* exited since the scan */
		if (!wanted(so, th->tid, name))
			continue;
		struct sd_thread *st = snapshot_add_thread(s, th->tid);
		st->name = strpool_intern(s->pool, name);
		if (th->frames_gen != th->gen)
			thr_unwind(p, s, st, th, so->max_frames);
		thr_state(p, th);
		st->nframes = 0;
		for (size_t k = 0; k < th->nframes; k++)
			*snapshot_add_frame(st) = th->frames[k];
		st->unwind_stop = th->unwind_stop ? strpool_intern(s->pool, th->unwind_stop) : NULL;
		/* Blocked in a call whose number could not be confirmed: the
		 * registers would read as "on a CPU" to the classifier (no
		 * call number in them), so it gets the state letter only and
		 * the thread counts as asleep, unclassified. */
		st->have_regs = !(th->kind == LATEST_SWITCH && th->state != 'R' && !th->syscall_known);
		st->regs = th->regs;
		st->state = th->state;
		st->running = th->running;
		st->syscall_known = th->syscall_known || (th->kind != LATEST_SEED && th->state == 'R');
		st->syscall_nr = th->syscall_nr;
		memcpy(st->syscall_args, th->syscall_args, sizeof(st->syscall_args));
		st->wchan = th->wchan ? strpool_intern(s->pool, th->wchan) : NULL;
	}
	if (!maps_fresh && p->t->space.maps_misses != misses) {
		/* A library loaded or a stack mapped since the maps were read:
		 * read them and unwind this tick's new samples again. */
		if (target_refresh(p->t, err) < 0) {
			snapshot_free(s);
			return NULL;
		}
		symbols_sync(p->t->sym);
		for (size_t i = 0; i < s->nthreads; i++) {
			struct sd_thread *st = &s->threads[i];
			struct pthr *th = thr_find(p, st->tid);
			if (!th || th->kind == LATEST_SEED || !th->stack_len)
				continue;
			thr_unwind(p, s, st, th, so->max_frames);
			st->nframes = 0;
			for (size_t k = 0; k < th->nframes; k++)
				*snapshot_add_frame(st) = th->frames[k];
		}
	}
	uint64_t t2 = sd_now_ns();
	s->unwind_us = (t2 - t1) / 1000;
	if (!so->no_symbols) {
		for (size_t i = 0; i < s->nthreads; i++) {
			struct sd_thread *st = &s->threads[i];
			symbols_thread(p->t->sym, s, st, so->no_inline, so->no_source);
			/* --max-frames counts the frames shown, inline ones too. */
			if (so->max_frames && st->nframes > so->max_frames) {
				char msg[64];
				st->nframes = so->max_frames;
				snprintf(msg, sizeof(msg), "stopped at --max-frames %u", so->max_frames);
				st->unwind_stop = strpool_intern(s->pool, msg);
			}
		}
		s->symbolize_us = (sd_now_ns() - t2) / 1000;
	}
	analyze_snapshot(p->t->pid, p->t->sym, s);
	target_snapshot_modules(p->t, s);
	s->capture_us = (t1 - t0) / 1000;
	p->t->snapshots++;
	return s;
}
