// SPDX-License-Identifier: MIT
// The perf-events engine's hot threads: those that go in and out of their
// waits thousands of times a second keep no switch event (see
// perf_switch_mode), and with the per-CPU clock no event at all: their
// clock is schedstat, their samples the CPUs' clocks' (perf-ring.c). At
// each tick such a thread is read asleep without a stop, its clock
// standing still across the reading being the proof that it did not run
// meanwhile, or, on a CPU, shown by its latest clock sample. Only when it has neither (woken with no recent
// sample), or when its unwind needs registers a stop alone gives (code
// built with frame pointers), does the tick's capture stop it.
#include "perf.h"

#include "perf-impl.h" /* after perf.h: it embeds its types */

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "procfs.h"
#include "target.h"
#include "unwind.h"

/* A latest task-clock sample older than this many periods of the
 * thread's clock does not show a hot thread found on a CPU: its period
 * is the engine's (a quarter of the tick) or, at high rates, 10 ms
 * (perf_switch_mode). A thread on a CPU a fifth of the time earns one
 * every five periods. */
#define HOT_CLOCK_MAX_AGE_PERIODS 16
/* ... or this many ticks as delivered (sampling slowed by the budget):
 * a 99 Hz profile slowed to 45 Hz took a sample 40 ms old for too old,
 * and stopped a MariaDB connection thread a dozen times a second for a
 * fresh one. */
#define HOT_CLOCK_MAX_AGE_TICKS 4
/* A gap longer than this is not an interval the sampler keeps. */
#define HOT_TICK_GAP_MAX_NS 1000000000ull
/* Readings of a sleep before the tick gives up on it (the thread ran
 * while read each time). */
#define HOT_TRIES 2

/* Read TMP asleep from its syscall file TI: registers from it, the
 * stack window capture_plan gives (SP up to the end of its mapping, at
 * most MAX bytes) copied into TH's slp_stack and lent to TMP. The bytes
 * got, 0 when none. */
static size_t read_sleep(struct sd_perf *p, struct pthr *th, struct sd_thread *tmp,
			 const struct sd_taskinfo *ti, size_t max)
{
	memset(tmp, 0, sizeof(*tmp));
	tmp->tid = th->tid;
	capture_regs_from_syscall(tmp, ti);
	tmp->syscall_known = 1;
	tmp->syscall_nr = ti->syscall_nr;
	capture_plan(tmp, &p->t->space.maps, max);
	size_t len = tmp->stack_want;
	if (!len)
		return 0;
	if (th->slp_cap < len) {
		free(th->slp_stack);
		th->slp_stack = sd_xmalloc(len);
		th->slp_cap = len;
	}
	ssize_t got = capture_read(p->t->pid, tmp->stack_base, th->slp_stack, len);
	tmp->stack = th->slp_stack;
	tmp->stack_in_arena = 1; /* borrowed */
	tmp->stack_len = got > 0 ? (size_t)got : 0;
	return tmp->stack_len;
}

/* Unwind TMP, the sleep read_sleep read of TH (TI its syscall file,
 * STATE its state letter), and keep its frames in TH's slp_* fields. 0,
 * or -1 when the unwind needs registers the syscall file does not give
 * (code built with frame pointers): then only a stop tells. */
static int unwind_sleep(struct sd_perf *p, struct sd_snapshot *s, struct pthr *th,
			struct sd_thread *tmp, const struct sd_taskinfo *ti, char state,
			unsigned max_frames)
{
	tmp->state = state;
	unwind_thread(p->t->unw, s, tmp, max_frames);
	p->st.unwinds++;
	if (tmp->needs_regs) {
		snapshot_thread_drop_frames(tmp);
		return -1;
	}
	frameset_unref(th->slp_fs);
	th->slp_fs = frameset_new(tmp->frames, tmp->nframes);
	free(th->slp_stop);
	th->slp_stop = tmp->unwind_stop ? sd_xstrdup(tmp->unwind_stop) : NULL;
	th->slp_token = ++p->t->token_seq;
	th->slp_regs = tmp->regs;
	th->slp_state = state;
	th->slp_nr = ti->syscall_nr;
	memcpy(th->slp_args, ti->syscall_args, sizeof(th->slp_args));
	snapshot_thread_drop_frames(tmp);
	return 0;
}

/* Is TH's latest sample one of its CPU recent enough to show it on a CPU
 * at NOW? A stack its last stop gave (LATEST_SEED) is, when that stop
 * found it on a CPU too (outside a system call): ticks composed late, one
 * after the other, stopped it again at each. */
static int clock_fresh(const struct sd_perf *p, const struct pthr *th, uint64_t now)
{
	if (th->kind != LATEST_CLOCK && !(th->kind == LATEST_SEED && th->state_gen == th->gen &&
					  (th->running || th->state == 'R')))
		return 0;
	uint64_t age = now > th->time ? now - th->time : 0;
	uint64_t period = th->period_ns ? th->period_ns : p->o.period_ns;
	return age <= perf_hot_max_age(period, p->tick_gap_ns);
}

uint64_t perf_hot_max_age(uint64_t period_ns, uint64_t tick_gap_ns)
{
	uint64_t by_clock = HOT_CLOCK_MAX_AGE_PERIODS * period_ns;
	if (tick_gap_ns > HOT_TICK_GAP_MAX_NS)
		tick_gap_ns = HOT_TICK_GAP_MAX_NS;
	uint64_t by_ticks = HOT_CLOCK_MAX_AGE_TICKS * tick_gap_ns;
	return by_ticks > by_clock ? by_ticks : by_clock;
}

int perf_hot_read(struct sd_perf *p, struct sd_snapshot *s, struct pthr *th,
		  const struct sd_snap_opts *so, uint64_t now)
{
	uint64_t c0;
	if (!perf_thr_clocked(th) || perf_thr_clock(p, th, &c0) < 0)
		return HOT_STOP;
	if (th->slp_valid && c0 == th->slp_clock) {
		/* Not on a CPU since its sleep was read: still in it. */
		p->st.hot_kept++;
		return HOT_ASLEEP;
	}
	th->slp_valid = 0;
	if (!p->tc)
		p->tc = procfs_taskcache_new();
	size_t max = so->max_stack ? so->max_stack : (1u << 20);
	for (int i = 0; i < HOT_TRIES; i++) {
		/* Between the two clock readings only the syscall file and
		 * the copy: the shorter that window, the likelier a thread
		 * that sleeps a few microseconds at a time stays in it. */
		struct sd_taskinfo ti;
		memset(&ti, 0, sizeof(ti));
		if (procfs_task_syscall(p->tc, AT_FDCWD, p->t->pid, th->tid, &ti) < 0 ||
		    !ti.syscall_known || ti.running || !ti.sp || !ti.pc) {
			break; /* on a CPU */
		}
		struct sd_thread tmp;
		size_t got = read_sleep(p, th, &tmp, &ti, max);
		uint64_t c1;
		if (perf_thr_clock(p, th, &c1) < 0)
			break;
		if (c1 != c0 || !got) {
			c0 = c1; /* it ran while read: once more */
			continue;
		}
		/* Proven: the state letter after, from stat alone (S, or D
		 * for a disk wait; off CPU outside a system call, a page
		 * fault's, else asleep: it may have woken since the proof). */
		struct sd_taskinfo st;
		char state = procfs_taskinfo_cached(p->tc, AT_FDCWD, p->t->pid, th->tid, &st,
						    PROCFS_LIGHT | PROCFS_REGS_FOLLOW) == 0 &&
				     st.state == 'D'
				 ? 'D'
				 : 'S';
		if (unwind_sleep(p, s, th, &tmp, &ti, state, so->max_frames) < 0) {
			p->st.hot_stopped++;
			return HOT_STOP; /* stopped for its registers */
		}
		th->slp_valid = 1;
		th->slp_clock = c0;
		p->st.hot_asleep++;
		return HOT_ASLEEP;
	}
	if (clock_fresh(p, th, now)) {
		p->st.hot_clock++;
		return HOT_CLOCK;
	}
	p->st.hot_stopped++;
	return HOT_STOP;
}

void perf_hot_compose(struct sd_snapshot *s, struct sd_thread *st, const struct pthr *th)
{
	if (th->slp_fs)
		snapshot_thread_share_frames(st, th->slp_fs);
	else
		snapshot_thread_drop_frames(st);
	st->unwind_stop = th->slp_stop ? strpool_intern(s->pool, th->slp_stop) : NULL;
	st->frames_token = th->slp_token;
	st->io_worker = 0;
	st->have_regs = 1;
	st->regs_partial = 1;
	st->regs = th->slp_regs;
	st->kind = SD_CAPTURE_ASLEEP;
	st->state = th->slp_state;
	st->running = 0;
	st->syscall_known = 1;
	st->syscall_nr = th->slp_nr;
	memcpy(st->syscall_args, th->slp_args, sizeof(st->syscall_args));
	st->wchan = NULL;
}
