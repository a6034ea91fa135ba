// SPDX-License-Identifier: MIT
// The perf-events engine: per-thread task-clock and context-switch samples
// (user registers plus a copy of the top of the user stack) drained from one
// ring buffer per thread, or, for threads that switch too often for events
// of their own, taken from a clock per CPU (perf-ring.c), and a wall-clock
// snapshot per tick composed from each thread's latest sample
// (perf-tick.c), unwound by the same unwinder as ptrace. This file: the
// events of each thread and the session.
#include "perf.h"

#include "perf-impl.h" /* after perf.h: it embeds its types */

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <sched.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "analyze.h"
#include "procfs.h"
#include "switchring.h"
#include "symbols.h"
#include "target.h"
#include "unwind.h"

static int perf_event_open_sys(struct perf_event_attr *a, pid_t pid, int cpu, int group,
			       unsigned long flags)
{
	return (int)syscall(SYS_perf_event_open, a, pid, cpu, group, flags);
}

static void perf_attr_init(struct perf_event_attr *a, int sw_config, uint64_t period,
			   size_t stack)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = (uint64_t)sw_config;
	a->sample_period = period;
	a->sample_type = SAMPLE_TYPE;
	a->sample_regs_user = PERF_REGS_MASK;
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

/* The value of the kernel setting /proc/sys/kernel/NAME as text in BUF,
 * or "unknown". */
static const char *sysctl_text(const char *name, char *buf, size_t size)
{
	char path[96];
	snprintf(path, sizeof(path), "/proc/sys/kernel/%s", name);
	char *text = NULL;
	if (sd_read_file(path, &text, 64) < 0 || !text) {
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
		return sd_error_set(
		    err, e,
		    "perf_event_open refused for %s: %s (perf_event_paranoid is %s; "
		    "a seccomp filter such as a container's default profile also "
		    "refuses it; run as root or with CAP_PERFMON, or lower "
		    "kernel.perf_event_paranoid)",
		    what, sd_strerror(e), sysctl_text("perf_event_paranoid", par, sizeof(par)));
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

/* Events on P's target refused with errno E: -1 with ERR saying why
 * (ESRCH: the process is gone). */
static int target_refused(const struct sd_perf *p, struct sd_error *err, int e)
{
	if (e == ESRCH)
		return sd_error_set(err, ESRCH, "process %d exited", (int)p->t->pid);
	if (e == p->map_refused) {
		char kb[32];
		return sd_error_set(
		    err, e,
		    "perf ring buffers for process %d refused: %s (locked memory: "
		    "kernel.perf_event_mlock_kb is %s KiB per CPU for each user, "
		    "then ulimit -l; run as root or with CAP_IPC_LOCK, raise either, "
		    "or give a smaller --perf-buffer)",
		    (int)p->t->pid, sd_strerror(e),
		    sysctl_text("perf_event_mlock_kb", kb, sizeof(kb)));
	}
	char what[64];
	snprintf(what, sizeof(what), "process %d", (int)p->t->pid);
	return open_error(err, e, what);
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

uint64_t perf_thr_lost(const struct sd_perf *p, const struct pthr *th)
{
	return p->lost_records ? th->lost_recs : thr_lost(p, th);
}

/* SIZE rounded up to a power of two pages. */
static size_t pow2_pages(const struct sd_perf *p, size_t size)
{
	size_t ring = p->page;
	while (ring < size)
		ring <<= 1;
	return ring;
}

/* The task-clock ring of the next thread armed: room for a tick's
 * samples and more (a thread on a CPU all the time earns four: the period
 * is a quarter of the interval). Less per thread when many run (it is
 * locked memory). */
static size_t ring_size(const struct sd_perf *p)
{
	return p->o.ring_kb ? p->o.ring_kb * 1024
			    : pow2_pages(p, (p->narmed < 256 ? 128 : 64) << 10);
}

/* TH for the thread TID, without events yet. */
static void thr_init(struct pthr *th, pid_t tid)
{
	memset(th, 0, sizeof(*th));
	th->tid = tid;
	th->fd = th->fd_sw = th->fd_watch = -1;
	th->syscall_nr = -1;
}

/* Open the engine's two kinds of event, disabled, on P's target, map the
 * task-clock ring a thread that runs gets (locked memory: an unprivileged
 * user past perf_event_mlock_kb is refused here), and close them: 0, or
 * -1 with ERR saying why not. The first scan arms no thread (the first
 * tick's capture does): this is where a refusal shows at the start. */
static int probe_target(struct sd_perf *p, struct sd_error *err)
{
	struct perf_event_attr a;
	const int cfg[2] = {PERF_COUNT_SW_TASK_CLOCK, PERF_COUNT_SW_CONTEXT_SWITCHES};
	for (int i = 0; i < 2; i++) {
		perf_attr_init(&a, cfg[i], i ? 1 : p->o.period_ns, i ? 0 : p->o.stack_copy);
		a.disabled = 1;
		int fd = perf_event_open_sys(&a, p->t->pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0)
			return target_refused(p, err, errno);
		if (!i) {
			size_t len = p->page + ring_size(p);
			void *r = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
			if (r == MAP_FAILED) {
				p->map_refused = errno;
				close(fd);
				return target_refused(p, err, p->map_refused);
			}
			munmap(r, len);
		}
		close(fd);
	}
	return 0;
}

/* Watch TH, which has no events, for being scheduled: its ring of switch
 * records (switchring_open), one page. While the ring's head
 * stays, the thread did not run and its last capture is exact still: a
 * tick costs it one load. The registers sampled at its last switch out
 * spare the capture a stop for them (perf_switch_regs). Without the ring
 * (refused), it is captured at every tick. 0 or a negative errno. */
static int thr_watch(struct sd_perf *p, struct pthr *th)
{
	if (th->fd_watch >= 0)
		return 0;
	th->watch_head = UINT64_MAX; /* never captured: captured next */
	void *r;
	int fd = switchring_open(th->tid, p->page, &r);
	if (fd < 0) {
		if (fd != -ESRCH)
			p->st.watch_failed++;
		if (r == MAP_FAILED)
			p->map_refused = -fd;
		return fd;
	}
	th->fd_watch = fd;
	th->watch_ring = r;
	return 0;
}

int perf_switch_regs(void *arg, pid_t tid, struct user_regs_struct *regs)
{
	struct sd_perf *p = arg;
	struct pthr *th = perf_thr_find(p, tid);
	if (!th || !th->watch_ring)
		return -ENODATA;
	const struct perf_event_mmap_page *mp = th->watch_ring;
	uint64_t head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
	return switchring_regs(th->watch_ring, p->page, head, regs);
}

static void thr_unwatch(struct sd_perf *p, struct pthr *th)
{
	if (th->watch_ring)
		munmap(th->watch_ring, 2 * p->page);
	if (th->fd_watch >= 0)
		close(th->fd_watch);
	th->watch_ring = NULL;
	th->fd_watch = -1;
}

int perf_thr_ran(struct pthr *th)
{
	if (!th->watch_ring)
		return 1;
	const struct perf_event_mmap_page *mp = th->watch_ring;
	uint64_t head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
	int ran = head != th->watch_head;
	th->watch_head = head;
	return ran;
}

void perf_thr_forget_run(struct pthr *th)
{
	th->watch_head = UINT64_MAX;
}

/* Close TH's switch event and unmap its ring. */
static void sw_close(struct pthr *th)
{
	if (th->sw_ring)
		munmap(th->sw_ring, th->sw_ring_len);
	if (th->fd_sw >= 0)
		close(th->fd_sw);
	th->sw_ring = NULL;
	th->fd_sw = -1;
	th->sw_head = 0;
}

/* Close TH's events and unmap their rings; its latest sample and frames
 * stay (a thread at rest is captured like a sleeper from then on). */
static void thr_disarm(struct sd_perf *p, struct pthr *th)
{
	if (th->opened_ns) /* armed: not a failed arming */
		p->narmed--;
	th->opened_ns = 0;
	p->st.lost += thr_lost(p, th);
	if (th->ring)
		munmap(th->ring, th->ring_len);
	if (th->fd >= 0)
		close(th->fd);
	th->ring = NULL;
	th->fd = -1;
	sw_close(th);
}

static void thr_close(struct sd_perf *p, struct pthr *th)
{
	thr_disarm(p, th);
	thr_unwatch(p, th);
	perf_buf_put(p, th->stack);
	for (size_t i = 0; i < th->npend; i++)
		perf_buf_put(p, th->pend[i].stack);
	free(th->pend);
	frameset_unref(th->fs);
	free(th->unwind_stop);
	free(th->wchan);
	free(th->slp_stack); /* a hot thread's last sleep (perf-hot.c) */
	frameset_unref(th->slp_fs);
	free(th->slp_stop);
	memset(th, 0, sizeof(*th));
	th->fd = th->fd_sw = -1;
	p->st.threads_closed++;
}

/* The waits TH's thread went into so far (voluntary switches), 0 when
 * unknown. */
static uint64_t thr_waits(const struct sd_perf *p, const struct pthr *th)
{
	uint64_t v = 0;
	if (procfs_task_waits(p->t->pid, th->tid, &v) < 0)
		return 0;
	return v;
}

/* Read from the event, which brings a running thread's count up to
 * date; a thread off CPU keeps the count it had when switched out. A
 * thread sampled by the per-CPU clock: its schedstat's run time plus its
 * times scheduled in, which both only grow, and the second at each run
 * begun. */
int perf_thr_clock(const struct sd_perf *p, const struct pthr *th, uint64_t *v)
{
	if (th->cpu_clock) {
		struct sd_counters c;
		if (procfs_task_counters(p->tc, AT_FDCWD, p->t->pid, th->tid, PROCFS_CNT_SCHEDSTAT,
					 &c) < 0 ||
		    c.from_status)
			return -1;
		*v = c.ran_ns + c.switches;
		return 0;
	}
	uint64_t buf[2] = {0, 0}; /* value, and the lost count (PERF_FORMAT_LOST) */
	ssize_t n = read(th->fd, buf, p->lost_records ? 8 : sizeof(buf));
	if (n < 8)
		return -1;
	*v = buf[0];
	return 0;
}

/* Open TH's switch event (the user stack copied by the kernel at every
 * switch out) and map its ring. 0 or a negative errno. */
static int sw_open(struct sd_perf *p, struct pthr *th)
{
	struct perf_event_attr a;
	perf_attr_init(&a, PERF_COUNT_SW_CONTEXT_SWITCHES, 1, p->o.stack_copy);
	a.write_backward = 1;
	a.watermark = 0;
	a.wakeup_events = 0;
	int fd = perf_event_open_sys(&a, th->tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t len = p->page + p->sw_ring_kb * 1024;
	void *r = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (r == MAP_FAILED) {
		int e = errno;
		p->map_refused = e;
		close(fd);
		return -e;
	}
	th->fd_sw = fd;
	th->sw_ring = r;
	th->sw_ring_len = len;
	th->sw_head = 0; /* a new ring: nothing read of it */
	if (perf_thr_clock(p, th, &th->sw_cpu) < 0)
		th->sw_cpu = 0;
	th->sw_waits = thr_waits(p, th);
	th->sw_since = sd_now_ns();
	return 0;
}

/* A thread that switches often (a server's worker: thousands of times a
 * second, into its waits and out of them) pays for its switch event at
 * every switch, in its own time: a sample written, its stack copied. More
 * than a tick costs: while it is on a CPU less than half the time, its
 * switch event is closed (it is "hot") and it keeps its task clock, which
 * costs it a sample only every period of CPU time. Each tick then reads it
 * asleep without a stop, proven by that clock standing still, or takes its
 * latest task-clock sample when it is on a CPU (perf-hot.c). Decided each
 * second from its task clock and the waits it went into (voluntary
 * switches, from /proc): a thread that computes on a saturated host is
 * preempted as often, and runs as little, but goes into no wait; it keeps
 * both events. */
#define HOT_SWITCHES_PER_S 1000
#define HOT_PERIOD_NS 10000000ull

/* Sample hot thread TH with the per-CPU clock alone: its sampling task
 * clock (a timer the kernel starts and cancels at each of its switches,
 * thousands a second, in its own time) is drained and closed, and no
 * event of its own is left to switch in and out with it. Its schedstat
 * (times scheduled in, run time) proves its sleeps in place of the task
 * clock's count (perf_thr_clock). 0 or a negative errno (TH is left as it
 * was; -ENODATA: the kernel has no schedstat, whose switch count is the
 * proof). */
static int thr_count(struct sd_perf *p, struct pthr *th)
{
	if (!p->tc)
		p->tc = procfs_taskcache_new();
	struct sd_counters c;
	int r = procfs_task_counters(p->tc, AT_FDCWD, p->t->pid, th->tid, PROCFS_CNT_SCHEDSTAT, &c);
	if (r < 0)
		return r;
	if (c.from_status)
		return -ENODATA; /* status counts a switch out, not a run begun */
	if (th->fd >= 0) {
		perf_drain_one(p, th);
		p->st.lost += thr_lost(p, th);
		if (th->ring)
			munmap(th->ring, th->ring_len);
		close(th->fd); /* leaves the epoll set with it */
	}
	th->ring = NULL;
	th->fd = -1;
	th->cpu_clock = 1;
	th->period_ns = p->o.period_ns; /* a sample's age is told in these */
	return 0;
}

void perf_switch_mode(struct sd_perf *p, struct pthr *th, uint64_t now)
{
	if (th->fd_sw < 0 || now < th->sw_since + 1000000000ull)
		return;
	uint64_t cpu = 0;
	if (perf_thr_clock(p, th, &cpu) < 0)
		return;
	uint64_t waits = thr_waits(p, th);
	double secs = (double)(now - th->sw_since) / 1e9;
	double rate = (double)(waits > th->sw_waits ? waits - th->sw_waits : 0) / secs;
	double busy = (double)(cpu - th->sw_cpu) / 1e9 / secs; /* share of a CPU */
	th->sw_since = now;
	th->sw_cpu = cpu;
	th->sw_waits = waits;
	if (rate < HOT_SWITCHES_PER_S || busy >= 0.5)
		return;
	perf_read_switch(p, th); /* what its rings hold first */
	perf_drain_one(p, th);
	sw_close(th);
	thr_unwatch(p, th);
	th->hot = 1;
	p->st.hot++;
	/* With the per-CPU clock it keeps no event (thr_count). */
	if (p->ncpus && thr_count(p, th) == 0)
		return;
	/* Its clock samples show it only while it is on a CPU at a tick:
	 * one every HOT_PERIOD_NS of its CPU time at most, not four a tick
	 * (at 99 Hz that was 400 a second of a busy server's worker, each
	 * with its stack copied, in its own time). */
	uint64_t period = p->o.period_ns < HOT_PERIOD_NS ? HOT_PERIOD_NS : p->o.period_ns;
	if (ioctl(th->fd, PERF_EVENT_IOC_PERIOD, &period) == 0)
		th->period_ns = period;
}

/* Has TH's thread gone into and out of its waits that often all its life
 * (a second of it at least), on a CPU less than half the time? Then it is
 * hot from its first events: a second of switch samples, its stack
 * copied at each of its thousands of switches, is what finding it out
 * from them cost it. Only with the per-CPU clock, which samples it. */
static int thr_hot_from_start(struct sd_perf *p, const struct pthr *th)
{
	if (!p->ncpus)
		return 0;
	if (!p->tc)
		p->tc = procfs_taskcache_new();
	struct procfs_life l;
	return procfs_task_life(p->tc, AT_FDCWD, p->t->pid, th->tid, &l) == 0 && l.secs >= 1.0 &&
	       l.switches_per_s >= HOT_SWITCHES_PER_S && l.cpu_share < 0.5;
}

/* Open the two events of TH's thread and map their rings. 0 or a
 * negative errno (TH then has none).
 * Task-clock samples go to a ring drained in order (each one counts, a
 * full ring is counted as lost). Switch samples go to a ring the kernel
 * overwrites backwards (read-only mapping, write_backward): a thread
 * preempted a thousand times a second then never fills it, and the
 * latest sample, the only one a tick uses, is always there. */
static int thr_arm(struct sd_perf *p, struct pthr *th)
{
	struct perf_event_attr a;
	pid_t tid = th->tid;
	if (thr_hot_from_start(p, th) && thr_count(p, th) == 0) {
		th->hot = 1;
		p->st.hot++;
		p->st.hot_at_start++;
		th->opened_ns = sd_now_ns();
		p->st.armed++;
		p->narmed++;
		thr_unwatch(p, th); /* its schedstat says when it runs */
		return 0;
	}
	perf_attr_init(&a, PERF_COUNT_SW_TASK_CLOCK, p->o.period_ns, p->o.stack_copy);
	size_t ring = ring_size(p);
	th->ring_len = p->page + ring;
	/* Every tick drains: stackdump is woken (a busy thread preempted)
	 * only when a tick is late, with room left for two more samples,
	 * or at half the ring when it is small. */
	size_t sample = p->o.stack_copy + 512;
	a.wakeup_watermark =
	    (uint32_t)(ring / 2 > ring - 2 * sample || ring < 2 * sample ? ring / 2
									 : ring - 2 * sample);
	int e;
	/* The lost count of the event itself (Linux 6.0): a sample larger
	 * than the free room is dropped, and with a ring too small for any
	 * sample the kernel never gets to write a PERF_RECORD_LOST. */
	if (!p->lost_records)
		a.read_format = PERF_FORMAT_LOST;
	th->fd = perf_event_open_sys(&a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (th->fd < 0 && errno == EINVAL && !p->lost_records) {
		p->lost_records = 1;
		a.read_format = 0;
		th->fd = perf_event_open_sys(&a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	}
	if (th->fd < 0)
		return -errno;
	void *r = mmap(NULL, th->ring_len, PROT_READ | PROT_WRITE, MAP_SHARED, th->fd, 0);
	if (r == MAP_FAILED)
		goto map_fail;
	th->ring = r;
	e = sw_open(p, th);
	if (e < 0) {
		errno = -e;
		goto fail;
	}
	/* Watched for "the ring is filling" through one epoll set: a poll
	 * of a thousand events at every wakeup cost more than all else. The
	 * tid finds the thread again (the array moves). */
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)(uint32_t)tid};
	if (p->epfd >= 0 && epoll_ctl(p->epfd, EPOLL_CTL_ADD, th->fd, &ev) < 0)
		goto fail;
	th->opened_ns = sd_now_ns();
	p->st.armed++;
	p->narmed++;
	thr_unwatch(p, th); /* its own switch samples say when it runs */
	return 0;
map_fail:
	p->map_refused = errno;
fail:
	e = errno;
	thr_disarm(p, th);
	return -e;
}

int perf_thr_arm(struct sd_perf *p, struct pthr *th)
{
	int r = thr_arm(p, th);
	if (r < 0 && r != -ESRCH)
		p->st.arm_failed++; /* refused; a thread gone is not */
	return r;
}

void perf_thr_rest(struct sd_perf *p, struct pthr *th)
{
	/* Watched first: a run after the events close moves the ring. */
	thr_watch(p, th);
	thr_disarm(p, th);
	p->st.rested++;
}



/* Rescan the task list: follow new threads, close the events of threads
 * gone. The first scan watches every thread (thr_watch): each is captured
 * by ptrace at the first tick and again only when it ran, until a capture
 * finds it running and arms it (perf-tick.c). Threads born later get their
 * events at once (one refused for a thread leaves it watched, captured the
 * same way). A thread gone keeps its
 * samples (and its place) while ticks at or before AT still need them: a
 * late tick shows the threads that lived at its time. A thread that exits
 * between the scan and the open is skipped. */
int perf_thr_sync(struct sd_perf *p, int first, uint64_t at, struct sd_error *err)
{
	pid_t *tids = NULL;
	size_t ntids = 0;
	if (procfs_list_tids(p->t->pid, &tids, &ntids, err) < 0)
		return -1;
	procfs_taskcache_prune(p->tc, tids, ntids); /* files of threads gone */
	struct pthr *nv = sd_xcalloc(ntids + p->n + 1, sizeof(*nv));
	size_t nn = 0, i = 0, k = 0;
	int firsterr = 0;
	/* Merge two sorted lists: old threads (p->v) and live tids. */
	while (i < p->n || k < ntids) {
		if (k == ntids || (i < p->n && p->v[i].tid < tids[k])) {
			struct pthr *th = &p->v[i++];
			if (!th->gone) {
				perf_drain_one(p, th);
				perf_read_switch(p, th);
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
		struct pthr *th = &nv[nn];
		thr_init(th, tids[k]);
		/* At the start every thread is watched: the first tick's
		 * capture reads each one and arms those it finds running (a
		 * stat read of each here first cost as much again). Threads
		 * born later get their events at once. */
		int r = first && !thr_hot_from_start(p, th) ? 0 : perf_thr_arm(p, th);
		if (r == -ESRCH) { /* gone between the scan and the open */
			k++;
			continue;
		}
		nn++;
		p->st.threads_opened++;
		if (r < 0 && !firsterr)
			firsterr = -r;
		if ((first && !th->hot) || r < 0) { /* refused: captured as a sleeper is */
			int w = thr_watch(p, th);
			if (w < 0 && w != -ESRCH && !firsterr)
				firsterr = -w;
		}
		k++;
	}
	free(tids);
	free(p->v);
	p->cap = ntids + p->n + 1;
	p->v = nv;
	p->n = nn;
	if (first && !nn)
		return target_refused(p, err, ESRCH);
	/* Refused at the start (e.g. an unprivileged user past
	 * perf_event_mlock_kb): the engine says why, and auto samples with
	 * ptrace instead. Later, a refused thread is captured at every tick. */
	if (first && firsterr)
		return target_refused(p, err, firsterr);
	return 0;
}

/* ---- the per-CPU clock ---- */

static void cpu_close(struct sd_perf *p)
{
	for (size_t i = 0; i < p->ncpus; i++) {
		munmap(p->cpus[i].ring, p->cpus[i].ring_len);
		close(p->cpus[i].fd);
	}
	free(p->cpus);
	p->cpus = NULL;
	p->ncpus = 0;
}

/* The per-CPU clock's period: the engine's (a quarter of the tick), but
 * at most 4 ms, and not under a millisecond. Its samples are shared by
 * every thread that runs on the CPU: a worker on a CPU a tenth of the time
 * earns 25 a second at 4 ms, and one older than four ticks is seldom what
 * a tick finding it on a CPU has to do without. The cost follows the CPUs,
 * not the threads or their switches: a timer interrupt and a stack copy
 * at each (250 a second per CPU at 20 Hz). */
#define CPU_PERIOD_MIN_NS 1000000ull
#define CPU_PERIOD_MAX_NS 4000000ull

/* Open a cpu-clock event on every CPU the target may run on, sampling
 * whatever runs there every quarter tick (1 to 4 ms), with one ring each:
 * the clock samples of the hot threads, which then keep no event of their
 * own (a sampling task clock is a timer started and stopped at each of
 * their thousands of switches a second, in their time). 0 or a negative
 * errno (EACCES: system-wide events need root or CAP_PERFMON). */
static int cpu_open(struct sd_perf *p)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	if (ncpu <= 0)
		return -ENODEV;
	p->cpu_period_ns = p->o.period_ns < CPU_PERIOD_MIN_NS	  ? CPU_PERIOD_MIN_NS
			   : p->o.period_ns > CPU_PERIOD_MAX_NS ? CPU_PERIOD_MAX_NS
								: p->o.period_ns;
	/* Room for sixteen samples with their stacks (about 512 KiB of
	 * locked memory per CPU): more than a tick's at 20 Hz. */
	size_t sample = p->o.stack_copy + 512, ring = p->page;
	while (ring < 16 * sample)
		ring <<= 1;
	/* Only the CPUs the target may run on (its leader's affinity: a
	 * container's cpuset, a pinned server): a thread of it pinned
	 * elsewhere has no sample there, and is stopped when a tick finds
	 * it running, as one without a recent sample is. */
	cpu_set_t *mask = CPU_ALLOC((int)ncpu);
	size_t masksz = CPU_ALLOC_SIZE((int)ncpu);
	int masked = mask && sched_getaffinity(p->t->pid, masksz, mask) == 0;
	p->cpus = sd_xcalloc((size_t)ncpu, sizeof(*p->cpus));
	for (long c = 0; c < ncpu; c++) {
		if (masked && !CPU_ISSET_S((int)c, masksz, mask))
			continue;
		struct perf_event_attr a;
		perf_attr_init(&a, PERF_COUNT_SW_CPU_CLOCK, p->cpu_period_ns, p->o.stack_copy);
		a.exclude_idle = 1;
		a.write_backward = 1; /* overwritten: the newest samples stay */
		a.watermark = 0;
		a.wakeup_events = 0; /* never wakes stackdump: the ticks read it */
		int fd = perf_event_open_sys(&a, -1, (int)c, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0 && errno == ENODEV)
			continue; /* offline */
		if (fd < 0) {
			int e = errno;
			CPU_FREE(mask);
			cpu_close(p);
			return -e;
		}
		void *r = mmap(NULL, p->page + ring, PROT_READ, MAP_SHARED, fd, 0);
		if (r == MAP_FAILED) {
			int e = errno;
			close(fd);
			CPU_FREE(mask);
			cpu_close(p);
			return -e;
		}
		struct cpuring *cr = &p->cpus[p->ncpus++];
		cr->cpu = (int)c;
		cr->fd = fd;
		cr->ring = r;
		cr->ring_len = p->page + ring;
	}
	CPU_FREE(mask);
	if (!p->ncpus) {
		cpu_close(p);
		return -ENODEV;
	}
	p->st.cpus = p->ncpus;
	return 0;
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
	p->epfd = epoll_create1(EPOLL_CLOEXEC); /* -1: drained at ticks only */
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
	if (p->o.ring_kb)
		p->o.ring_kb = pow2_pages(p, p->o.ring_kb * 1024) / 1024;
	/* Room for two switch samples with their stacks and the one being
	 * written. */
	p->sw_ring_kb = pow2_pages(p, 3 * (p->o.stack_copy + 512)) / 1024;
	raise_fd_limit(ntids * 2 + ntids / 2 + 256);
	/* Whether this process may sample that one: asked of its leader, as
	 * the first scan opens no sampling event. */
	if (probe_target(p, err) < 0) {
		perf_free(p);
		return NULL;
	}
	/* The per-CPU clock is the hot threads' sampler; without it (not
	 * root nor CAP_PERFMON), their own task clock samples them. */
	int r = p->o.no_cpu_clock ? -ECANCELED : cpu_open(p);
	if (r < 0)
		p->cpu_refused = -r;
	if (perf_thr_sync(p, 1, UINT64_MAX, err) < 0) {
		perf_free(p);
		return NULL;
	}
	return p;
}

void perf_stop(struct sd_perf *p)
{
	if (!p)
		return;
	uint64_t closed = p->st.threads_closed;
	for (size_t i = 0; i < p->n; i++)
		thr_close(p, &p->v[i]); /* counts its lost samples */
	p->n = 0;
	p->st.threads_closed = closed; /* stopping is no thread gone */
	cpu_close(p);
	if (p->epfd >= 0)
		close(p->epfd);
	p->epfd = -1;
	procfs_taskcache_free(p->tc);
	p->tc = NULL;
}

void perf_free(struct sd_perf *p)
{
	if (!p)
		return;
	perf_stop(p);
	free(p->v);
	for (size_t i = 0; i < p->npool; i++)
		free(p->pool[i]);
	free(p->pool);
	free(p->scratch);
	free(p);
}

size_t perf_cpu_clock(const struct sd_perf *p)
{
	return p->ncpus;
}

void perf_stats_add(const struct sd_perf *p, struct sd_perf_stats *st)
{
	st->clock_samples += p->st.clock_samples;
	st->switch_samples += p->st.switch_samples;
	st->lost += p->st.lost;
	st->stale += p->st.stale;
	for (size_t i = 0; i < p->n; i++)
		st->lost += thr_lost(p, &p->v[i]);
	st->throttled += p->st.throttled;
	st->seeded += p->st.seeded;
	st->armed += p->st.armed;
	st->arm_failed += p->st.arm_failed;
	st->rested += p->st.rested;
	st->watch_failed += p->st.watch_failed;
	st->unwinds += p->st.unwinds;
	st->threads_opened += p->st.threads_opened;
	st->threads_closed += p->st.threads_closed;
	st->drains += p->st.drains;
	st->hot += p->st.hot;
	st->hot_asleep += p->st.hot_asleep;
	st->hot_kept += p->st.hot_kept;
	st->hot_clock += p->st.hot_clock;
	st->hot_stopped += p->st.hot_stopped;
	st->cpus += p->st.cpus;
	st->cpu_samples += p->st.cpu_samples;
	st->cpu_passed += p->st.cpu_passed;
	st->cpu_older += p->st.cpu_older;
	st->hot_at_start += p->st.hot_at_start;
}
