// SPDX-License-Identifier: MIT
// The capture stages of a snapshot: which threads sleep and are read
// without a stop, which run and are frozen (briefly, at raised priority),
// the proof that a sleeper did not run while it was read, and the one stop
// for registers /proc does not give.
#include "target.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "ptrace.h"
#include "snapctx.h"
#include "symbols.h"
#include "unwind.h"

int snap_thread_wanted(pid_t tid, void *arg)
{
	struct pick *p = arg;
	const struct sd_snap_opts *o = p->o;
	if (o->tids && o->ntids && o->tids_listed) {
		/* In rising order: a thousand threads asked a thousand times
		 * each was most of a tick. */
		if (!bsearch(&tid, o->tids, o->ntids, sizeof(tid), snap_cmp_tid))
			return 0;
	} else if (o->tids && o->ntids) {
		int found = 0;
		for (size_t i = 0; i < o->ntids; i++)
			found |= o->tids[i] == tid;
		if (!found)
			return 0;
	}
	if (o->name_glob) {
		char path[96], *text;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)p->pid, (int)tid);
		if (sd_read_file(path, &text, 256) < 0)
			return 0;
		text[strcspn(text, "\n")] = '\0';
		int ok = fnmatch(o->name_glob, text, 0) == 0;
		free(text);
		return ok;
	}
	return 1;
}

void snap_mark_failed(struct sd_snapshot *s, struct sd_thread *th, enum sd_thread_status st,
			const char *why)
{
	th->status = st;
	th->error = strpool_intern(s->pool, why);
	s->partial = 1;
}

int snap_cmp_tid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
	return (x > y) - (x < y);
}

static void note_capture(struct snapctx *cx, const char *why)
{
	if (!cx->s->capture_note)
		cx->s->capture_note = strpool_intern(cx->s->pool, why);
}

struct sd_thread *snap_add_thread(struct snapctx *cx, pid_t tid)
{
	struct sd_thread *th = snapshot_add_thread(cx->s, tid);
	sd_grow(&cx->p, &cx->pcap, cx->s->nthreads, sizeof(*cx->p));
	memset(&cx->p[cx->s->nthreads - 1], 0, sizeof(*cx->p));
	return th;
}

size_t snap_thread_index(struct snapctx *cx, pid_t tid, int add)
{
	struct sd_snapshot *s = cx->s;
	/* Discover adds threads in rising TID order; the few that appear
	 * during the freeze come after them. */
	size_t lo = 0, hi = cx->nsorted < s->nthreads ? cx->nsorted : s->nthreads;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (s->threads[mid].tid < tid)
			lo = mid + 1;
		else if (s->threads[mid].tid > tid)
			hi = mid;
		else
			return mid;
	}
	for (size_t i = cx->nsorted; i < s->nthreads; i++)
		if (s->threads[i].tid == tid)
			return i;
	if (!add)
		return (size_t)-1;
	snap_add_thread(cx, tid); /* appeared during the freeze */
	return s->nthreads - 1;
}

static int counters_same(const struct sd_counters *a, const struct sd_counters *b)
{
	return a->from_status == b->from_status && a->from_clock == b->from_clock &&
	       a->from_ring == b->from_ring && a->switches == b->switches &&
	       a->ran_ns == b->ran_ns;
}

/* The scheduler counters of TID, from the snapshot's source; the first
 * reading names the proof the snapshot rests on. */
static int read_counters(struct snapctx *cx, pid_t tid, struct sd_counters *c)
{
	static const char ring[] = "context-switch records",
			  mixed[] = "context-switch records, and schedstat for threads that switch "
				    "too often for them";
	int r = procfs_task_counters(cx->tc, cx->taskdir, cx->t->pid, tid, cx->counters, c);
	if (r != 0)
		return r;
	const char *p = c->from_ring     ? ring
			: c->from_clock  ? "the task clock"
			: c->from_status ? "context switches"
					 : "schedstat";
	if (!cx->s->proof)
		cx->s->proof = p;
	else if (cx->s->proof == ring && !c->from_ring && !c->from_clock && !c->from_status)
		cx->s->proof = mixed; /* a ring closed for a busy switcher (procfs.c) */
	else if (cx->s->proof != ring && cx->s->proof != mixed && c->from_ring &&
		 !strcmp(cx->s->proof, "schedstat"))
		cx->s->proof = mixed;
	return r;
}

/* The kernel stack of a thread, one line of function names, or "". */
static void kernel_stack(pid_t pid, pid_t tid, char *out, size_t size)
{
	char path[96], *text;
	out[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stack", (int)pid, (int)tid);
	if (sd_read_file(path, &text, 1 << 16) < 0)
		return;
	size_t len = 0;
	for (char *line = strtok(text, "\n"); line && len + 2 < size; line = strtok(NULL, "\n")) {
		char *fn = strchr(line, ' ');
		fn = fn ? fn + 1 : line;
		char *plus = strchr(fn, '+');
		if (plus)
			*plus = '\0';
		int n = snprintf(out + len, size - len, "%s%s", len ? " < " : "", fn);
		if (n < 0 || (size_t)n >= size - len)
			break;
		len += (size_t)n;
	}
	free(text);
}

/* discover + plan of one thread (auto mode): its counters first, then
 * its syscall file, which the kernel fills only for a thread off CPU in
 * a sleep. Counters equal before that reading and after the copy prove
 * it stayed off CPU from the reading on (see validate). */
void snap_plan_thread(struct snapctx *cx, size_t i)
{
	struct sd_target *t = cx->t;
	struct sd_thread *th = &cx->s->threads[i];
	struct tplan *tp = &cx->p[i];
	tp->plan = PLAN_FREEZE;
	if (cx->o->reuse) {
		/* Read at the end of the last sample and equal then: not read
		 * again now. Validate's one reading after the freeze tells
		 * whether it ran since; if it did, it is frozen and read. */
		struct sd_reuse *prev = reuse_find(t, th->tid);
		if (prev) {
			tp->plan = PLAN_REUSE;
			tp->prev = prev;
			tp->c1 = prev->c;
			tp->have_c1 = 1;
			return;
		}
	}
	int r = read_counters(cx, th->tid, &tp->c1);
	if (r < 0) {
		if (r != -ESRCH && r != -ENOENT)
			note_capture(cx, "scheduler counters unreadable: every thread frozen");
		return;
	}
	tp->have_c1 = 1;
	r = procfs_task_syscall(cx->tc, cx->taskdir, t->pid, th->tid, &tp->sc);
	if (r < 0 || !tp->sc.syscall_known) {
		if (r == -ESRCH || r == -ENOENT)
			return;
		note_capture(cx, "/proc/PID/task/TID/syscall unreadable: threads frozen");
		struct sd_taskinfo st;
		char state = th->state;
		if (!state && procfs_task_state(cx->tc, cx->taskdir, t->pid, th->tid, &st) == 0)
			state = st.state;
		/* Never interrupt a thread in D: it would keep the others
		 * stopped until it wakes. Shown from the kernel's side. */
		if (state == 'D')
			tp->plan = PLAN_KERNEL;
		return;
	}
	if (!tp->sc.running && !tp->sc.sp && !tp->sc.pc) {
		/* No user registers at all: an io_uring worker runs only in
		 * the kernel. A stop would gain nothing and cost the pause. */
		struct sd_taskinfo st;
		if (procfs_task_state(cx->tc, cx->taskdir, t->pid, th->tid, &st) == 0 &&
		    (st.flags & PROCFS_PF_IO_WORKER)) {
			tp->plan = PLAN_KERNEL;
			th->io_worker = 1;
			th->state = st.state;
			/* Its syscall file shows the registers it was made
			 * from: it is in none of its own. */
			th->syscall_known = 1;
			th->syscall_nr = -1;
			th->running = 0;
			if (st.wchan[0])
				th->wchan = strpool_intern(cx->s->pool, st.wchan);
		}
		return;
	}
	if (tp->sc.running || !tp->sc.sp || !tp->sc.pc)
		return;
	tp->plan = PLAN_ASLEEP;
	/* Its leaf's debug info is read meanwhile on another CPU. */
	if (!cx->o->no_symbols)
		symbols_prefetch(t->sym, tp->sc.pc);
}

/* The threads not to seize: planned otherwise, and the user's selection. */
static int freeze_wanted(pid_t tid, void *arg)
{
	struct snapctx *cx = arg;
	if (cx->only)
		return bsearch(&tid, cx->only, cx->nonly, sizeof(tid), snap_cmp_tid) != NULL;
	size_t i = snap_thread_index(cx, tid, 0);
	if (i != (size_t)-1 && cx->p[i].plan != PLAN_FREEZE)
		return 0;
	if (cx->o->tids || cx->o->name_glob)
		return snap_thread_wanted(tid, &cx->pick);
	return 1;
}

/* A thread stopped: registers now, memory in one batch once all stopped
 * (a syscall per thread is what the pause is made of). */
static void capture_on_stop(struct sd_tracee *tr, void *arg)
{
	struct snapctx *cx = arg;
	size_t i = snap_thread_index(cx, tr->tid, cx->stage == STAGE_MAIN);
	if (i == (size_t)-1)
		return;
	struct sd_thread *th = &cx->s->threads[i];
	struct tplan *tp = &cx->p[i];
	if (cx->stage == STAGE_REGS) {
		/* Stopped for the registers /proc does not give. The stop
		 * itself schedules the thread in once; one more means it ran
		 * between the first reading and the interrupt, and so does a
		 * stop elsewhere than where /proc saw it. */
		struct sd_thread tmp = {.tid = th->tid};
		struct sd_counters c;
		int ok = 0;
		if (capture_regs(&tmp, &cx->t->space.maps, cx->o->max_stack) == 0 &&
		    read_counters(cx, th->tid, &c) == 0) {
			/* A ring of switch records shows the stop as one
			 * scheduling (in, woken by the interrupt; out, into
			 * the stop; written backwards). A task clock cannot
			 * tell the stop's own run from the thread's: read
			 * again. */
			int one_stop = c.from_ring ? tp->c1.from_ring &&
							 tp->c1.switches - c.switches == PROCFS_RING_CYCLE
					: !c.from_clock && c.from_status == tp->c1.from_status &&
						  c.switches == tp->c1.switches + 1;
			ok = one_stop && tmp.regs.rsp == th->regs.rsp && tmp.regs.rip == th->regs.rip &&
			     tmp.regs.orig_rax == th->regs.orig_rax;
		}
		if (ok) {
			th->regs = tmp.regs; /* the copy taken before is still exact */
			th->regs_partial = 0;
			return;
		}
		th->retried = 1;
	}
	th->nlockmem = 0;
	/* The copy taken before is dropped: its bytes go back to the total
	 * cap for the new one. */
	cx->s->stack_bytes -= th->stack_len < cx->s->stack_bytes ? th->stack_len : cx->s->stack_bytes;
	th->stack_len = 0;
	th->regs_partial = 0;
	th->kind = SD_CAPTURE_FROZEN;
	if (capture_regs(th, &cx->t->space.maps, cx->o->max_stack) < 0) {
		snap_mark_failed(cx->s, th, SD_THREAD_EXITED, "exited during the snapshot");
		return;
	}
	tp->copy_now = 1;
}

/* Hold the copies of a batch to what is left of the snapshot's cap on all
 * stack copies together (--stack-total): sleepers are copied first, the
 * frozen ones then share the rest. */
static void budget_copies(struct snapctx *cx, struct sd_thread **batch, size_t nb)
{
	size_t total = cx->o->max_stack_total;
	if (!total || !nb)
		return;
	size_t left = total > cx->s->stack_bytes ? total - (size_t)cx->s->stack_bytes : 0;
	/* Those not copied yet and not in this batch keep their share. */
	size_t pending = 0;
	for (size_t i = 0; i < cx->s->nthreads; i++)
		if (cx->s->threads[i].status == SD_THREAD_OK && !cx->s->threads[i].stack &&
		    cx->p[i].plan != PLAN_REUSE && cx->p[i].plan != PLAN_KERNEL)
			pending++;
	size_t later = pending > nb ? pending - nb : 0;
	cx->s->stack_cut += capture_budget(batch, nb, left, later, cx->o->max_stack);
}

/* Freeze KNOWN (or, with cx->only, only those), capture what stops, copy
 * its memory in one batch, release. The window runs at raised priority.
 * Returns 0, or a negative errno when the freeze failed as a whole. */
int snap_freeze_stage(struct snapctx *cx, const pid_t *known, size_t nknown, unsigned budget,
			struct sd_error *err)
{
	struct sd_snapshot *s = cx->s;
	struct sd_freeze fz;
	struct sd_boost boost;
	ptrace_boost_begin(&boost);
	/* Samples list the threads when their number changed (list_stage):
	 * one born since is in the next sample. */
	int rescan = cx->o->light_discover < 2;
	int r = ptrace_freeze_all(&fz, cx->t->pid, budget, known, nknown, rescan,
				  (cx->only || cx->auto_mode || cx->o->tids || cx->o->name_glob)
					  ? freeze_wanted
					  : NULL,
				  cx, capture_on_stop, cx, err);
	if (r < 0) {
		ptrace_boost_end(&boost);
		/* No thread stopped within the budget (or every one is still
		 * ours from before): the sleepers stand. */
		if ((r == -ETIMEDOUT || (r == -ESRCH && fz.n == 0)) && cx->auto_mode &&
		    target_alive(cx->t)) {
			for (size_t k = 0; k < nknown && cx->stage != STAGE_REGS; k++) {
				size_t i = snap_thread_index(cx, known[k], 0);
				if (i != (size_t)-1)
					cx->p[i].late = 1;
			}
			for (size_t k = 0; k < fz.n; k++) {
				size_t i = snap_thread_index(cx, fz.v[k].tid, 0);
				if (i != (size_t)-1 && fz.v[k].state == SD_TRACEE_GONE)
					snap_mark_failed(cx->s, &cx->s->threads[i], SD_THREAD_EXITED,
						    "exited during the snapshot");
			}
			ptrace_freeze_release(&fz);
			return 0;
		}
		ptrace_freeze_release(&fz);
		if (r == -ETIMEDOUT && !target_alive(cx->t))
			return sd_error_set(err, ESRCH, "process %d exited during the snapshot",
					    (int)cx->t->pid);
		return r;
	}
	/* Indices first: a thread that appeared during the freeze is added
	 * to the snapshot here, which may move every thread. */
	size_t *copy = sd_xmalloc((fz.n + 1) * sizeof(*copy));
	size_t nb = 0;
	for (size_t k = 0; k < fz.n; k++) {
		struct sd_tracee *tr = &fz.v[k];
		size_t i = snap_thread_index(cx, tr->tid, cx->stage == STAGE_MAIN);
		if (i == (size_t)-1)
			continue;
		struct sd_thread *th = &s->threads[i];
		if (tr->state == SD_TRACEE_STOPPED && !cx->p[i].copy_now && !th->have_regs &&
		    th->status == SD_THREAD_OK && cx->stage == STAGE_MAIN)
			capture_on_stop(tr, cx); /* stopped after the wait's callback */
		if (cx->p[i].copy_now && s->threads[i].status == SD_THREAD_OK)
			copy[nb++] = i;
	}
	struct sd_thread **batch = sd_xmalloc((nb + 1) * sizeof(*batch));
	for (size_t k = 0; k < nb; k++)
		batch[k] = &s->threads[copy[k]];
	free(copy);
	uint64_t m0 = sd_now_ns();
	budget_copies(cx, batch, nb);
	capture_memory(cx->t->pid, s, batch, nb, &s->stack_bytes);
	uint64_t memcopy = (sd_now_ns() - m0) / 1000;
	free(batch);
	ptrace_thaw_all(&fz);
	ptrace_boost_end(&boost);
	uint64_t pause = (fz.end_ns - fz.start_ns) / 1000;
	if (cx->stage == STAGE_MAIN) {
		s->freeze_us = pause;
		if (pause > s->pause_us)
			s->pause_us = pause;
		s->seize_us = (fz.seized_ns - fz.start_ns) / 1000;
		s->stop_us = (fz.stopped_ns - fz.seized_ns) / 1000;
		/* The rest, so that the phases add up to the freeze. */
		s->detach_us = pause > s->seize_us + s->stop_us ? pause - s->seize_us - s->stop_us : 0;
		s->memcopy_us = memcopy < s->detach_us ? memcopy : s->detach_us;
	} else {
		if (pause > s->later_us)
			s->later_us = pause;
		if (pause > s->pause_us)
			s->pause_us = pause;
	}
	for (size_t k = 0; k < fz.n; k++) {
		struct sd_tracee *tr = &fz.v[k];
		size_t i = snap_thread_index(cx, tr->tid, 0);
		if (i == (size_t)-1)
			continue;
		struct sd_thread *th = &s->threads[i];
		struct tplan *tp = &cx->p[i];
		tp->copy_now = 0;
		uint64_t p = tr->detach_ns > fz.start_ns ? (tr->detach_ns - fz.start_ns) / 1000 : 0;
		if (p > th->pause_us)
			th->pause_us = p;
		if (tr->group_stop && s->state != 'T' && s->state != 't')
			s->state = 'T';
		if (tr->group_stop && !th->state)
			th->state = 'T';
		if (tr->state == SD_TRACEE_GONE && th->status == SD_THREAD_OK) {
			snap_mark_failed(s, th, SD_THREAD_EXITED, "exited during the snapshot");
		} else if (tr->state == SD_TRACEE_FAILED && th->status == SD_THREAD_OK) {
			char why[128];
			snprintf(why, sizeof(why), "could not be traced: %s", strerror(tr->err));
			snap_mark_failed(s, th, SD_THREAD_ERROR, why);
		} else if (tr->state == SD_TRACEE_OURS || tr->detach_ns == 0) {
			/* Never stopped (a thread gone into D since it was
			 * seen running, or one still ours from before): read
			 * it asleep after the others are released. */
			if (cx->auto_mode && cx->stage != STAGE_REGS)
				tp->late = 1;
			else if (cx->stage != STAGE_REGS && !th->have_regs &&
				 th->status == SD_THREAD_OK)
				snap_mark_failed(s, th, SD_THREAD_NOT_STOPPED,
					    "did not stop in time (uninterruptible sleep?)");
		}
	}
	ptrace_freeze_release(&fz);
	return 0;
}

/* Copy the planned sleepers' memory: registers from /proc, no stop. */
void snap_asleep_stage(struct snapctx *cx, int only_late)
{
	struct sd_snapshot *s = cx->s;
	struct sd_thread **batch = sd_xmalloc((s->nthreads + 1) * sizeof(*batch));
	size_t nb = 0;
	for (size_t i = 0; i < s->nthreads; i++) {
		struct sd_thread *th = &s->threads[i];
		struct tplan *tp = &cx->p[i];
		if (th->status != SD_THREAD_OK || tp->plan != PLAN_ASLEEP || (only_late && !tp->late))
			continue;
		capture_regs_from_syscall(th, &tp->sc);
		capture_plan(th, &cx->t->space.maps, cx->o->max_stack);
		th->kind = SD_CAPTURE_ASLEEP;
		batch[nb++] = th;
	}
	budget_copies(cx, batch, nb);
	capture_memory(cx->t->pid, s, batch, nb, &s->stack_bytes);
	free(batch);
}

/* Stop TID alone (SEIZE+INTERRUPT), waiting up to --timeout, into TR:
 * 0, -ESRCH when it is gone, else -ETIMEDOUT. */
static int stop_alone(struct snapctx *cx, struct sd_tracee *tr, pid_t tid)
{
	struct sd_error e1 = {0};
	memset(tr, 0, sizeof(*tr));
	tr->tid = tid;
	if (ptrace_freeze_one(tr, cx->o->timeout_ms, &e1) == 0)
		return 0;
	return e1.code == ESRCH ? -ESRCH : -ETIMEDOUT;
}

/* Threads that did not stop within the budget, once the others run
 * again: one that /proc shows asleep now (gone into D) is read like a
 * sleeper; one that is runnable (a starved CPU) is waited for alone, up
 * to --timeout, and read when it stops. */
void snap_late_stage(struct snapctx *cx)
{
	struct sd_snapshot *s = cx->s;
	int any = 0;
	for (size_t i = 0; i < s->nthreads; i++) {
		struct sd_thread *th = &s->threads[i];
		struct tplan *tp = &cx->p[i];
		if (!tp->late || th->have_regs || th->status != SD_THREAD_OK)
			continue;
		tp->plan = PLAN_FREEZE;
		tp->late = 0;
		struct sd_tracee tr = {.tid = th->tid};
		uint64_t a = sd_now_ns();
		int r = ptrace_wait_straggler(&tr, 0);
		if (r == -ETIMEDOUT && read_counters(cx, th->tid, &tp->c1) == 0 &&
		    procfs_task_syscall(cx->tc, cx->taskdir, cx->t->pid, th->tid, &tp->sc) == 0 &&
		    tp->sc.syscall_known && !tp->sc.running && tp->sc.sp) {
			/* Asleep now (gone into D since it was seen running):
			 * read like a sleeper; it stops when it wakes and is
			 * detached then. */
			tp->have_c1 = 1;
			tp->plan = PLAN_ASLEEP;
			tp->late = 1;
			tp->round = cx->round;
			th->retried = 1;
			any = 1;
			continue;
		}
		if (r == -ETIMEDOUT)
			r = ptrace_wait_straggler(&tr, cx->o->timeout_ms);
		if (r == -ESRCH && !ptrace_is_straggler(th->tid)) {
			/* Not ours any more (it stopped as it was let go, and
			 * was detached then): stop it alone, once more. */
			r = stop_alone(cx, &tr, th->tid);
		}
		if (r == 0) {
			if (capture_regs(th, &cx->t->space.maps, cx->o->max_stack) == 0) {
				th->kind = SD_CAPTURE_FROZEN;
				budget_copies(cx, &th, 1);
				capture_memory(cx->t->pid, s, &th, 1, &s->stack_bytes);
			}
			ptrace_thaw_one(&tr);
			th->pause_us = (sd_now_ns() - a) / 1000;
			if (th->have_regs)
				continue;
		}
		snap_mark_failed(s, th, r == -ESRCH ? SD_THREAD_EXITED : SD_THREAD_NOT_STOPPED,
			    r == -ESRCH ? "exited during the snapshot"
					: "did not stop in time (uninterruptible sleep?)");
	}
	if (any)
		snap_asleep_stage(cx, 1);
}

/* The second counter reading: a sleeper whose counters moved ran since
 * its syscall file was read, so its copy may be stale: list it for a
 * retry. Without schedstat the syscall file is read again first: the
 * kernel fills it only once the thread is off CPU, so equal switch counts
 * after it mean the thread never left its sleep. */
static size_t validate_stage(struct snapctx *cx, pid_t **retry)
{
	/* The retry round checks only what its own late stage read. */
	struct sd_snapshot *s = cx->s;
	size_t n = 0;
	*retry = sd_xmalloc((s->nthreads + 1) * sizeof(**retry));
	for (size_t i = 0; i < s->nthreads; i++) {
		struct sd_thread *th = &s->threads[i];
		struct tplan *tp = &cx->p[i];
		if (th->status != SD_THREAD_OK ||
		    (th->kind != SD_CAPTURE_ASLEEP && th->kind != SD_CAPTURE_REUSED) ||
		    (cx->round && tp->round != cx->round))
			continue;
		struct sd_counters c2;
		int ok = 1;
		if (tp->c1.from_status) {
			struct sd_taskinfo sc;
			ok = procfs_task_syscall(cx->tc, cx->taskdir, cx->t->pid, th->tid, &sc) == 0 &&
			     sc.syscall_known && !sc.running && sc.sp == th->regs.rsp &&
			     sc.pc == th->regs.rip;
		}
		if (ok)
			ok = read_counters(cx, th->tid, &c2) == 0 &&
			     counters_same(&c2, &tp->c1);
		if (!ok)
			(*retry)[n++] = th->tid;
	}
	return n;
}

/* A sleeper of a group that did not stop within the budget (a starved
 * CPU): the others run already. One seized but not stopped yet is waited
 * for alone; one the group's freeze let go (none of the group stopped in
 * time) is stopped alone, unless it sleeps in D now. */
static void regstop_alone(struct snapctx *cx, struct sd_thread *th, struct tplan *tp)
{
	struct sd_snapshot *s = cx->s;
	struct sd_tracee tr = {.tid = th->tid};
	int r;
	if (ptrace_is_straggler(th->tid)) {
		r = ptrace_wait_straggler(&tr, cx->o->timeout_ms);
	} else {
		struct sd_taskinfo st;
		if (procfs_task_state(cx->tc, cx->taskdir, cx->t->pid, th->tid, &st) == 0 &&
		    st.state == 'D')
			return;
		r = stop_alone(cx, &tr, th->tid);
	}
	if (r == 0) {
		capture_on_stop(&tr, cx);
		if (tp->copy_now && th->status == SD_THREAD_OK) {
			budget_copies(cx, &th, 1);
			capture_memory(cx->t->pid, s, &th, 1, &s->stack_bytes);
		}
		tp->copy_now = 0;
		ptrace_thaw_one(&tr);
	} else if (r == -ESRCH) {
		snap_mark_failed(s, th, SD_THREAD_EXITED, "exited during the snapshot");
	}
}

/* How many sleepers one stop for registers seizes at once. */
#define REGSTOP_GROUP 256

/* Unwind TH again, now that its full registers are known (from a stop or
 * from its ring), from the copy taken before; symbolized with the others. */
static void reunwind(struct snapctx *cx, struct sd_thread *th, struct tplan *tp)
{
	th->nframes = 0;
	th->unwind_stop = NULL;
	unwind_thread(cx->t->unw, cx->s, th, cx->o->max_frames);
	tp->reunwound = 1;
}

/* Stop the N sleepers NEED (sorted) for their registers and unwind them
 * again. */
static void regstop_group(struct snapctx *cx, const pid_t *need, size_t n)
{
	struct sd_snapshot *s = cx->s;
	cx->stage = STAGE_REGS;
	cx->only = need;
	cx->nonly = n;
	struct sd_error e2 = {0};
	unsigned budget = cx->o->timeout_ms < SD_STOP_BUDGET_MS ? cx->o->timeout_ms
								 : SD_STOP_BUDGET_MS;
	snap_freeze_stage(cx, need, n, budget, &e2);
	cx->only = NULL;
	cx->nonly = 0;
	for (size_t k = 0; k < n; k++) {
		size_t i = snap_thread_index(cx, need[k], 0);
		struct sd_thread *th = &s->threads[i];
		struct tplan *tp = &cx->p[i];
		if (th->regs_partial && th->status == SD_THREAD_OK)
			regstop_alone(cx, th, tp);
		if (th->status != SD_THREAD_OK)
			continue;
		if (th->regs_partial) {
			/* Did not stop: keep what the copy gave, and say
			 * why it ends there. */
			th->unwind_stop = strpool_intern(s->pool,
							 "the rest needs registers only a stop "
							 "gives, and the thread did not stop in time");
			continue;
		}
		s->nregstops++;
		/* After the stop and before the unwind reads anything live:
		 * snap_prove_live_reads compares with this. */
		tp->have_c2 = read_counters(cx, th->tid, &tp->c2) == 0;
		reunwind(cx, th, tp);
	}
}

/* The registers TH went to sleep with, from its ring of switch records
 * (samples' proof): the sample of its last switch out, taken before the
 * first counter reading and none since. Its copy, proven exact, is then
 * unwound again with them: no stop. */
static int regs_from_ring(struct snapctx *cx, struct sd_thread *th, struct tplan *tp)
{
	struct user_regs_struct r;
	/* Or from the caller's ring (a perf engine's watch): its sample is
	 * the newest record there, so the thread slept from it through the
	 * copy, which the counters proved. */
	int have = tp->have_c1 && tp->c1.from_ring
		       ? procfs_task_switch_regs(cx->tc, th->tid, tp->c1.switches, &r) == 0
		       : tp->have_c1 && cx->o->switch_regs &&
			     cx->o->switch_regs(cx->o->switch_arg, th->tid, &r) == 0;
	if (!have || r.rsp != th->regs.rsp || r.rip != th->regs.rip)
		return 0;
	r.orig_rax = th->regs.orig_rax; /* not sampled: /proc's */
	th->regs = r;
	th->regs_partial = 0;
	reunwind(cx, th, tp);
	return 1;
}

/* Stop, once, each sleeper whose unwind needs a register /proc does not
 * give; unwind it again from the copy when the stop proves the copy is
 * still exact, else from what was read while it was stopped. */
void snap_regstop_stage(struct snapctx *cx, int for_locks)
{
	struct sd_snapshot *s = cx->s;
	pid_t *need = sd_xmalloc((s->nthreads + 1) * sizeof(*need));
	size_t n = 0;
	for (size_t i = 0; i < s->nthreads; i++) {
		struct sd_thread *th = &s->threads[i];
		if (th->status != SD_THREAD_OK || !th->regs_partial || !th->needs_regs ||
		    th->kind != SD_CAPTURE_ASLEEP)
			continue;
		if (regs_from_ring(cx, th, &cx->p[i]))
			continue;
		/* Never interrupt a thread in D: the stack stays as far as
		 * the copy alone goes. */
		struct sd_taskinfo st;
		if (procfs_task_state(cx->tc, cx->taskdir, cx->t->pid, th->tid, &st) == 0 &&
		    st.state == 'D') {
			if (for_locks)
				continue;
			th->unwind_stop = strpool_intern(s->pool,
							 "the rest needs registers only a stop gives, "
							 "and the thread is in uninterruptible sleep");
			continue;
		}
		need[n++] = th->tid;
	}
	sd_sort(need, n, sizeof(*need), snap_cmp_tid);
	/* In groups: these threads sleep, so no two need to stop together,
	 * and a group small enough to seize within the stop budget stops
	 * in time on a loaded host, each for a short while. */
	for (size_t g = 0; g < n; g += REGSTOP_GROUP)
		regstop_group(cx, need + g, n - g < REGSTOP_GROUP ? n - g : REGSTOP_GROUP);
	free(need);
}

/* Does lock analysis need the callee-saved registers of the sleepers?
 * Only when a thread waits on a lock that keeps no owner a holder could
 * be found for (a mutex or rwlock, glibc's or Rust's) and some sleeper's
 * registers came from /proc. Marks those sleepers for a stop. */
int snap_locks_need_registers(struct snapctx *cx)
{
	struct sd_snapshot *s = cx->s;
	int all = 0;
	size_t n = 0;
	for (size_t i = 0; i < s->nthreads; i++) {
		const struct sd_wait *w = &s->threads[i].wait;
		enum sd_wait_kind k = w->kind;
		if (k != SD_WAIT_MUTEX && k != SD_WAIT_RWLOCK_READ && k != SD_WAIT_RWLOCK_WRITE &&
		    k != SD_WAIT_RUST_MUTEX && k != SD_WAIT_RUST_RWLOCK)
			continue;
		if (!(w->owner_known && w->owner_evidence == SD_EVIDENCE_MEMORY)) {
			all = 1;
			continue;
		}
		/* A recorded owner: its frame that holds the lock is found
		 * the same way, in its slots and registers. */
		for (size_t k2 = 0; k2 < s->nthreads; k2++) {
			struct sd_thread *o = &s->threads[k2];
			if (o->tid == w->owner && o->kind == SD_CAPTURE_ASLEEP && o->regs_partial &&
			    o->status == SD_THREAD_OK) {
				o->needs_regs = 1;
				n++;
			}
		}
	}
	for (size_t i = 0; i < s->nthreads && all; i++) {
		struct sd_thread *th = &s->threads[i];
		if (th->kind == SD_CAPTURE_ASLEEP && th->regs_partial && th->status == SD_THREAD_OK) {
			th->needs_regs = 1;
			n++;
		}
	}
	return n > 0;
}


void snap_kernel_stage(struct snapctx *cx)
{
	struct sd_snapshot *s = cx->s;
	for (size_t i = 0; i < s->nthreads; i++) {
		struct sd_thread *th = &s->threads[i];
		if (cx->p[i].plan != PLAN_KERNEL)
			continue;
		char ks[512], msg[640];
		th->kind = SD_CAPTURE_KERNEL;
		if (th->io_worker) {
			/* Nothing is missing: it has no user-space stack. */
			th->unwind_stop = strpool_intern(
			    s->pool, "io_uring worker: a kernel thread of the process, "
				     "with no user-space stack (not stopped)");
			continue;
		}
		kernel_stack(cx->t->pid, th->tid, ks, sizeof(ks));
		snprintf(msg, sizeof(msg),
			 "in uninterruptible sleep, not stopped; user registers unreadable%s%s",
			 ks[0] ? "; kernel stack: " : "", ks);
		th->unwind_stop = strpool_intern(s->pool, msg);
		s->partial = 1;
	}
}

void snap_retry_stage(struct snapctx *cx)
{
	struct sd_snapshot *s = cx->s;
	const struct sd_snap_opts *o = cx->o;
	pid_t *retry;
	size_t nr = validate_stage(cx, &retry);
	if (!nr) {
		free(retry);
		return;
	}
	sd_sort(retry, nr, sizeof(*retry), snap_cmp_tid);
	for (size_t k = 0; k < nr; k++) {
		size_t i = snap_thread_index(cx, retry[k], 0);
		struct sd_thread *th = &s->threads[i];
		th->retried = 1;
		th->have_regs = 0;
		th->nframes = 0;
		th->nlockmem = 0;
		th->stack_len = 0;
		th->kind = SD_CAPTURE_FROZEN;
		cx->p[i].have_c1 = 0;
		/* It ran: a name from the cache (samples) may be one it has
		 * given up since. */
		if (o->light_discover >= 2) {
			const char *name = target_thread_name(cx->t, th->tid, 1, sd_now_ns());
			if (name)
				th->name = strpool_intern(s->pool, name);
		}
	}
	cx->stage = STAGE_RETRY;
	cx->only = retry;
	cx->nonly = nr;
	struct sd_error e2 = {0};
	unsigned budget = o->timeout_ms < SD_STOP_BUDGET_MS ? o->timeout_ms : SD_STOP_BUDGET_MS;
	snap_freeze_stage(cx, retry, nr, budget, &e2);
	cx->only = NULL;
	cx->nonly = 0;
	/* One that did not stop within the budget: waited for alone, or
	 * read asleep once more and checked. */
	cx->round = 1;
	snap_late_stage(cx);
	pid_t *again;
	size_t na = validate_stage(cx, &again);
	for (size_t k = 0; k < na; k++) {
		size_t i = snap_thread_index(cx, again[k], 0);
		snap_mark_failed(s, &s->threads[i], SD_THREAD_NOT_STOPPED,
				 "kept running while read and did not stop in time");
	}
	free(again);
	for (size_t k = 0; k < nr; k++) {
		size_t i = snap_thread_index(cx, retry[k], 0);
		struct sd_thread *th = &s->threads[i];
		cx->p[i].late = 0;
		if (!th->have_regs && th->status == SD_THREAD_OK)
			snap_mark_failed(s, th, SD_THREAD_NOT_STOPPED,
					 "kept running while read and did not stop in time");
	}
	free(retry);
}

int snap_perthread_stage(struct snapctx *cx, struct sd_error *err)
{
	struct sd_snapshot *s = cx->s;
	const struct sd_snap_opts *o = cx->o;
	for (size_t i = 0; i < s->nthreads; i++) {
		struct sd_thread *th = &s->threads[i];
		struct sd_tracee tr = {.tid = th->tid};
		struct sd_error e1 = {0};
		uint64_t a = sd_now_ns();
		if (ptrace_freeze_one(&tr, o->timeout_ms, &e1) < 0) {
			if (e1.code == EPERM || e1.code == EBUSY)
				return sd_error_set(err, e1.code, "%s", e1.msg);
			snap_mark_failed(s, th,
					 e1.code == ESRCH ? SD_THREAD_EXITED : SD_THREAD_NOT_STOPPED,
					 e1.code == ESRCH ? "exited during the snapshot" : e1.msg);
			continue;
		}
		/* One at a time, the total cap is shared as it goes: an even
		 * share of what is left for those left. */
		size_t lim = o->max_stack;
		if (o->max_stack_total) {
			size_t left = o->max_stack_total > s->stack_bytes
					      ? o->max_stack_total - (size_t)s->stack_bytes
					      : 0;
			size_t share = (left / (s->nthreads - i)) & ~(size_t)15;
			if (share < lim)
				lim = share;
		}
		int cr = capture_thread(cx->t->pid, th, &cx->t->space.maps, lim, &s->stack_bytes);
		if (lim < o->max_stack && th->stack_truncated) {
			th->stack_cut = 1;
			s->stack_cut++;
		}
		ptrace_thaw_one(&tr);
		th->pause_us = (sd_now_ns() - a) / 1000;
		if (th->pause_us > s->pause_us)
			s->pause_us = th->pause_us;
		if (cr < 0)
			snap_mark_failed(s, th, SD_THREAD_EXITED, "exited during the snapshot");
	}
	return 0;
}

void snap_prove_live_reads(struct snapctx *cx)
{
	struct sd_snapshot *s = cx->s;
	/* Samples' counters (switch rings, task clocks) are read for each
	 * tick in step with the rings' state: a reading more here would
	 * upset that. Dumps read schedstat or status. */
	if (cx->counters != PROCFS_CNT_SCHEDSTAT && cx->counters != PROCFS_CNT_STATUS)
		return;
	for (size_t i = 0; i < s->nthreads; i++) {
		struct sd_thread *th = &s->threads[i];
		struct sd_counters now;
		/* A thread stopped for the snapshot switched for the stop
		 * itself: its counters prove nothing of this. */
		if (!th->live_reads || th->kind != SD_CAPTURE_ASLEEP || !cx->p[i].have_c1)
			continue;
		/* A stop for registers switched it twice; from then on it
		 * is the reading after that stop that counts. */
		const struct tplan *tp = &cx->p[i];
		th->live_reads_proven = read_counters(cx, th->tid, &now) == 0 &&
					counters_same(tp->have_c2 ? &tp->c2 : &tp->c1, &now);
	}
}
