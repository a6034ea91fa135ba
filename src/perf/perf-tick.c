// SPDX-License-Identifier: MIT
// The perf-events engine's ticks: the wall-clock snapshot at a tick's own
// time, composed from each thread's latest sample (state, registers and
// stack), unwound and named like a ptrace snapshot.
#include "perf.h"

#include "perf-impl.h" /* after perf.h: it embeds its types */

#include "analyze.h"
#include "procfs.h"
#include "symbols.h"
#include "target.h"
#include "unwind.h"
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

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
	if (!p->tc)
		p->tc = procfs_taskcache_new();
	if (procfs_taskinfo_cached(p->tc, AT_FDCWD, p->t->pid, th->tid, &ti, PROCFS_LIGHT) == 0 &&
	    ti.syscall_known &&
	    !ti.running && ti.syscall_nr >= 0 && ti.sp == th->regs.rsp && ti.pc == th->regs.rip) {
		th->syscall_known = 1;
		th->syscall_nr = ti.syscall_nr;
		memcpy(th->syscall_args, ti.syscall_args, sizeof(th->syscall_args));
		if (ti.state == 'D')
			th->state = 'D';
		th->regs.orig_rax = (unsigned long long)ti.syscall_nr;
	}
}

/* TH keeps the frames (and where they stop) unwound into ST, as of its
 * current generation. */
static void keep_frames(struct sd_perf *p, struct pthr *th, const struct sd_thread *st)
{
	frameset_unref(th->fs);
	th->fs = frameset_new(st->frames, st->nframes);
	set_str(&th->unwind_stop, st->unwind_stop);
	th->frames_gen = th->gen;
	th->token = ++p->t->token_seq; /* one sequence per target */
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
	st->stack = NULL;
	st->stack_len = 0;
	st->stack_in_arena = 0;
	keep_frames(p, th, st);
	p->st.unwinds++;
}

/* Is TID, named NAME, in the user's selection? */
static int wanted(const struct sd_snap_opts *so, pid_t tid, const char *name)
{
	if (so->tids) {
		size_t i = 0;
		while (i < so->ntids && so->tids[i] != tid)
			i++;
		if (i == so->ntids)
			return 0;
	}
	if (so->name_glob && fnmatch(so->name_glob, name, 0) != 0)
		return 0;
	return 1;
}

/* A thread with events asleep this long (its latest sample a switch out
 * into a system call, nothing since) has them closed: it is captured like
 * a sleeper from then on, which costs a tick nothing while it sleeps. */
#define REST_NS 2000000000ull

/* The threads to capture by ptrace at this tick: those with no sample
 * yet, those without events that ran since their last capture (their
 * switch-record ring moved) or were never captured, and hot ones found
 * with neither a sleep nor a recent sample (perf-hot.c). */
static int unsampled(struct pthr *th)
{
	if (th->gone)
		return 0;
	if (th->hot && perf_thr_clocked(th))
		return th->hot_use == HOT_STOP;
	/* The ring's head read before the capture: a run during or after
	 * it moves the head again. */
	int ran = !perf_thr_clocked(th) && perf_thr_ran(th);
	return ran || th->kind == LATEST_NONE;
}

/* One capture of the unsampled threads (stop only what runs) gives their
 * stacks: a sleeper read without a stop, and from then on not touched
 * while its switch-record ring stays still; one found running is stopped
 * this once and gets its events. */
static int capture_unsampled(struct sd_perf *p, const struct sd_snap_opts *so, uint64_t *pause_us,
			     struct sd_error *err)
{
	pid_t *want = sd_xmalloc((p->n ? p->n : 1) * sizeof(*want));
	size_t nw = 0;
	for (size_t i = 0; i < p->n; i++)
		if (unsampled(&p->v[i]))
			want[nw++] = p->v[i].tid;
	if (!nw) {
		free(want);
		return 0;
	}
	struct sd_snap_opts o = *so;
	o.tids = want;
	o.ntids = nw;
	o.tids_listed = 1; /* p->v is the task list, read a second ago at most */
	o.tids_internal = 1; /* the tick composes and analyzes its own snapshot */
	o.name_glob = NULL;
	o.no_symbols = 1;
	o.keep_capture = 0;
	/* Each thread read once per run: schedstat proves it (no ring of
	 * the capture's own), and nothing is kept for reuse (the watch ring
	 * tells when it ran). */
	o.capture = SD_CAPMODE_SCHEDSTAT;
	o.reuse = 0;
	o.switch_regs = perf_switch_regs;
	o.switch_arg = p;
	uint64_t now = sd_now_ns();
	struct sd_error e = {0};
	struct sd_snapshot *s = target_snapshot(p->t, &o, &e);
	free(want);
	if (!s) {
		if (e.code == ESRCH && !target_alive(p->t))
			return sd_error_set(err, ESRCH, "%s", e.msg);
		/* The threads went away (the next scan drops them): the ones
		 * left are asked again next tick. */
		for (size_t i = 0; i < p->n; i++)
			if (!perf_thr_clocked(&p->v[i]))
				perf_thr_forget_run(&p->v[i]);
		return 0;
	}
	*pause_us = s->pause_us;
	for (size_t i = 0; i < s->nthreads; i++) {
		struct sd_thread *st = &s->threads[i];
		struct pthr *th = perf_thr_find(p, st->tid);
		if (!th)
			continue;
		if (st->status != SD_THREAD_OK) {
			perf_thr_forget_run(th); /* asked again next tick */
			continue;
		}
		if (th->kind != LATEST_NONE && perf_thr_clocked(th) && !th->hot)
			continue; /* events opened, a sample came meanwhile */
		/* Found running, or stopped outside a system call: it runs,
		 * its samples from now on. A sleeper stopped for registers
		 * and preempted on its way into the stop is frozen too (the
		 * extra switch reads as a run), but the stop finds it still
		 * inside its wait: its ring tells when it really runs. */
		if (st->kind == SD_CAPTURE_FROZEN && !perf_thr_clocked(th) && !th->hot &&
		    (st->running || !analyze_in_syscall(st)))
			perf_thr_arm(p, th);
		th->kind = LATEST_SEED;
		th->time = now;
		th->gen++;
		th->regs = st->regs;
		th->io_worker = st->io_worker;
		keep_frames(p, th, st);
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

/* Close the events of threads asleep for REST_NS (see there). */
static void rest_sleepers(struct sd_perf *p, uint64_t now)
{
	for (size_t i = 0; i < p->n; i++) {
		struct pthr *th = &p->v[i];
		/* -ENOSYS in rax: switched out inside a system call (see
		 * thr_state), not preempted. */
		if (th->fd >= 0 && !th->gone && th->kind == LATEST_SWITCH && !th->npend &&
		    (long)th->regs.rax == -38 && now > th->time + REST_NS)
			perf_thr_rest(p, th);
	}
}

struct sd_snapshot *perf_tick(struct sd_perf *p, const struct sd_snap_opts *so, uint64_t at_ns,
			      struct sd_error *err)
{
	uint64_t t0 = sd_now_ns();
	char pstate = 0;
	long nthreads = -1;
	if (procfs_proc_stat(p->t->pid, &pstate, NULL, NULL, &nthreads, err) < 0)
		return NULL;
	if (pstate == 'Z' || pstate == 'X') {
		sd_error_set(err, ESRCH, "process %d exited (zombie)", (int)p->t->pid);
		return NULL;
	}
	perf_drain(p);
	/* The task list is read again when the thread count moved, and at
	 * least once a second (a thread born and one gone within a tick
	 * leave the count as it was): listing a thousand threads at every
	 * tick cost more than all the rest of it. */
	size_t alive = 0;
	for (size_t i = 0; i < p->n; i++)
		alive += !p->v[i].gone;
	if (nthreads != (long)alive || t0 - p->synced_ns > 1000000000ull) {
		if (perf_thr_sync(p, 0, at_ns ? at_ns : UINT64_MAX, err) < 0)
			return NULL;
		p->synced_ns = t0;
		perf_drain(p); /* threads opened just now */
	}
	if (at_ns) {
		/* The times asked follow the schedule, late ticks or not. */
		p->tick_gap_ns = p->last_at_ns && at_ns > p->last_at_ns ? at_ns - p->last_at_ns : 0;
		p->last_at_ns = at_ns;
	} else {
		at_ns = UINT64_MAX;
	}
	for (size_t i = 0; i < p->n; i++) {
		perf_read_switch(p, &p->v[i]);
		perf_promote(p, &p->v[i], at_ns);
		perf_switch_mode(p, &p->v[i], t0);
	}
	int maps_fresh = 0;
	if (!p->t->space.maps.n || t0 - p->t->maps_ns > 1000000000ull) {
		if (target_refresh(p->t, err) < 0)
			return NULL;
		maps_fresh = 1;
	}
	symbols_sync(p->t->sym);
	rest_sleepers(p, t0);
	struct sd_snapshot *s = snapshot_new(p->t->pid);
	/* Hot threads: read asleep without a stop, or shown by their latest
	 * task-clock sample; the capture below stops only those with
	 * neither. */
	for (size_t i = 0; i < p->n; i++) {
		struct pthr *th = &p->v[i];
		th->hot_use = HOT_NONE;
		if (th->hot && perf_thr_clocked(th) && !th->gone)
			th->hot_use = perf_hot_read(p, s, th, so, at_ns < t0 ? at_ns : t0);
	}
	uint64_t pause_us = 0;
	if (capture_unsampled(p, so, &pause_us, err) < 0) {
		snapshot_free(s);
		return NULL;
	}

	/* Room for every thread at once: grown one by one, a thousand
	 * threads' array was copied ten times and its pages faulted in anew
	 * at every tick. */
	sd_grow(&s->threads, &s->cap, p->n + 1, sizeof(*s->threads));
	s->comm = strpool_intern(s->pool, p->t->info.comm);
	s->exe = p->t->info.exe ? strpool_intern(s->pool, p->t->info.exe) : NULL;
	s->state = pstate;
	s->time = sd_wall_time();
	s->pause_us = pause_us;
	uint64_t misses = p->t->space.maps_misses;
	uint64_t t1 = sd_now_ns();
	for (size_t i = 0; i < p->n; i++) {
		struct pthr *th = &p->v[i];
		if (th->kind == LATEST_NONE && th->hot_use != HOT_ASLEEP)
			continue; /* born after the seed (or after AT), no sample yet */
		/* A new sample since the last tick: it ran. */
		const char *name =
		    th->gone ? NULL
			     : target_thread_name(p->t, th->tid, th->gen != th->name_gen, t1);
		th->name_gen = th->gen;
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
		if (th->hot_use == HOT_ASLEEP) {
			perf_hot_compose(s, st, th);
			continue;
		}
		/* On a CPU at its latest sample (not a switch out of it), not
		 * one sample since the last
		 * tick, and samples dropped meanwhile: this tick counts an
		 * older stack for want of its own. (Without drops, no sample
		 * means it did not run: the older stack is the right one.)
		 * The lost count is read only then. */
		if (th->kind != LATEST_SWITCH && th->fd >= 0 && th->tick_gen == th->gen) {
			uint64_t lost = perf_thr_lost(p, th);
			if (lost > th->lost_seen)
				p->st.stale++;
			th->lost_seen = lost;
		}
		th->tick_gen = th->gen;
		if (th->frames_gen != th->gen)
			thr_unwind(p, s, st, th, so->max_frames);
		thr_state(p, th);
		if (th->fs)
			snapshot_thread_share_frames(st, th->fs);
		else
			snapshot_thread_drop_frames(st);
		st->unwind_stop = th->unwind_stop ? strpool_intern(s->pool, th->unwind_stop) : NULL;
		st->io_worker = th->io_worker;
		st->frames_token = th->token;
		/* Blocked in a call whose number could not be confirmed: the
		 * registers would read as "on a CPU" to the classifier (no
		 * call number in them), so it gets the state letter only and
		 * the thread counts as asleep, unclassified. */
		st->have_regs =
		    !(th->kind == LATEST_SWITCH && th->state != 'R' && !th->syscall_known);
		st->regs = th->regs;
		st->state = th->state;
		st->running = th->running;
		st->syscall_known =
		    th->syscall_known || (th->kind != LATEST_SEED && th->state == 'R');
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
			struct pthr *th = perf_thr_find(p, st->tid);
			if (!th || th->kind == LATEST_SEED || !th->stack_len ||
			    th->hot_use == HOT_ASLEEP)
				continue;
			thr_unwind(p, s, st, th, so->max_frames);
			if (th->fs)
				snapshot_thread_share_frames(st, th->fs);
			st->frames_token = th->token;
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
				snprintf(msg, sizeof(msg), "stopped at --max-frames %u",
					 so->max_frames);
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
