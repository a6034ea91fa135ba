// SPDX-License-Identifier: MIT
// target_snapshot: the snapshot pipeline as a sequence of stages. Discover
// and plan, capture (snap-capture.c), then unwind, symbolize and analyze
// while the target runs again.
#include "target.h"

#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "analyze.h"
#include "capture.h"
#include "core.h"
#include "goroutines.h"
#include "holders.h"
#include "locks.h"
#include "tokio.h"
#include "ptrace.h"
#include "snapctx.h"
#include "symbols.h"
#include "unwind.h"

static struct sd_thread *find_thread(struct sd_snapshot *s, pid_t tid)
{
	for (size_t i = 0; i < s->nthreads; i++)
		if (s->threads[i].tid == tid)
			return &s->threads[i];
	return NULL;
}

/* After a --tid/--name selection: the names of lock owners that were not
 * selected, so that "held by 1547" can say who 1547 is. */
static void name_outside(struct sd_snapshot *s)
{
	size_t cap = 0;
	for (size_t i = 0; i < s->nthreads; i++) {
		const struct sd_wait *w = &s->threads[i].wait;
		if (!w->owner_known || w->owner <= 0 || find_thread(s, w->owner))
			continue;
		int known = 0;
		for (size_t k = 0; k < s->noutside && !known; k++)
			known = s->outside[k].tid == w->owner;
		if (known)
			continue;
		char path[96], *text;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)s->pid, (int)w->owner);
		if (sd_read_file(path, &text, 256) < 0)
			continue; /* not a thread of this process, or gone */
		text[strcspn(text, "\n")] = '\0';
		sd_grow(&s->outside, &cap, s->noutside + 1, sizeof(*s->outside));
		s->outside[s->noutside].tid = w->owner;
		s->outside[s->noutside++].name = strpool_intern(s->pool, text);
		free(text);
	}
}

/* After a --tid/--name selection: a selected thread still holds what the
 * threads left out wait on. Their waits are read from /proc (nothing is
 * stopped); a normal mutex's owner field, read now, names the holder
 * (holders.h); the hold goes under the frame holding a reference to the
 * lock, as a full dump shows it. */
static void holds_outside(struct sd_snapshot *s, struct sd_target *t)
{
	pid_t *tids;
	size_t n;
	struct sd_error err = {0};
	if (procfs_list_tids(s->pid, &tids, &n, &err) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		if (find_thread(s, tids[i]))
			continue;
		struct sd_taskinfo ti;
		memset(&ti, 0, sizeof(ti));
		if (procfs_task_syscall(NULL, AT_FDCWD, s->pid, tids[i], &ti) < 0 || ti.running ||
		    ti.syscall_nr != 202)
			continue;
		uint64_t addr = ti.syscall_args[0];
		pid_t owner = holders_live_mutex_owner(s->pid, addr, ti.syscall_args[1],
						       ti.syscall_args[2]);
		struct sd_thread *h = owner > 0 ? find_thread(s, owner) : NULL;
		if (!h)
			continue;
		int known = 0;
		for (size_t k = 0; k < h->nholds && !known; k++)
			known = h->holds[k].address == addr;
		if (known)
			continue;
		h->holds = sd_xrealloc(h->holds, (h->nholds + 1) * sizeof(*h->holds));
		struct sd_hold *hd = &h->holds[h->nholds++];
		memset(hd, 0, sizeof(*hd));
		hd->kind = SD_WAIT_MUTEX;
		hd->address = addr;
		uint64_t off = 0;
		const char *sym = t->sym ? symbols_data(t->sym, s, addr, &off) : NULL;
		hd->symbol = sym && !off ? sym : NULL;
		hd->evidence = SD_EVIDENCE_MEMORY;
		hd->frame = locks_frame_of_reference(h, addr);
		hd->ncandidates = 1;
	}
	free(tids);
}

/* light_discover 2: the state from the registers read while frozen. */
static void state_from_regs(struct sd_thread *th)
{
	if (th->state || !th->have_regs)
		return;
	int blocked = analyze_in_syscall(th);
	th->state = blocked ? 'S' : 'R';
	th->running = !blocked;
	th->syscall_known = 1;
	th->syscall_nr = -1;
}

static void fill_taskinfo(struct sd_snapshot *s, struct sd_thread *th, const struct sd_taskinfo *ti)
{
	th->name = strpool_intern(s->pool, ti->comm);
	th->state = ti->state;
	th->wchan = ti->wchan[0] ? strpool_intern(s->pool, ti->wchan) : NULL;
	th->syscall_known = ti->syscall_known;
	th->running = ti->running;
	th->syscall_nr = ti->syscall_nr;
	memcpy(th->syscall_args, ti->syscall_args, sizeof(th->syscall_args));
	th->vol_ctxsw = ti->vol_ctxsw;
	th->proc_sp = ti->sp;
	th->nonvol_ctxsw = ti->nonvol_ctxsw;
	th->utime = ti->utime;
	th->stime = ti->stime;
}

/* Registers are the truth while frozen: take the syscall from them. */
static void syscall_from_regs(struct sd_thread *th)
{
	if (!th->have_regs)
		return;
	long nr = (long)th->regs.orig_rax;
	if (nr >= 0 && !th->running) {
		th->syscall_nr = nr;
		th->syscall_args[0] = th->regs.rdi;
		th->syscall_args[1] = th->regs.rsi;
		th->syscall_args[2] = th->regs.rdx;
		th->syscall_args[3] = th->regs.r10;
		th->syscall_args[4] = th->regs.r8;
		th->syscall_args[5] = th->regs.r9;
		th->syscall_known = 1;
	}
}

static void add_modules(struct sd_snapshot *s, struct sd_target *t)
{
	s->modules = sd_xcalloc(t->space.nmods ? t->space.nmods : 1, sizeof(*s->modules));
	for (size_t i = 0; i < t->space.nmods; i++) {
		struct sd_tmod *m = &t->space.mods[i];
		struct sd_module *sm = &s->modules[s->nmodules++];
		sm->name = strpool_intern(s->pool, m->name);
		sm->path = strpool_intern(s->pool, m->path);
		sm->build_id = m->elf && m->elf->build_id[0] ? strpool_intern(s->pool, m->elf->build_id)
							     : NULL;
		sm->start = m->start;
		sm->end = m->end;
		sm->bias = m->bias;
	}
}

/* process: the process state (a zombie has no stacks) and, when due, its
 * maps. Returns 0 or -1 with ERR set. */
static int process_stage(struct sd_target *t, const struct sd_snap_opts *o, char *state,
			 long *nthreads, int *maps_fresh, struct sd_error *err)
{
	struct sd_procinfo pi;
	int light = o->light_discover >= 2;
	if (light) {
		/* Samples: the state letter and the number of threads are
		 * all we need of the process. */
		memset(&pi, 0, sizeof(pi));
		if (procfs_proc_stat(t->pid, &pi.state, NULL, NULL, &pi.nthreads, err) < 0)
			return -1;
	} else {
		if (procfs_procinfo(t->pid, &pi, err) < 0)
			return -1;
		procfs_procinfo_release(&pi);
	}
	if (pi.state == 'Z' || pi.state == 'X') {
		sd_error_set(err, ESRCH, "process %d exited (zombie)", (int)t->pid);
		return -1;
	}
	*state = pi.state;
	*nthreads = pi.nthreads;
	/* Samples read the maps once a second, or when the last unwind met
	 * an address they lack; a snapshot whose unwind meets one reads
	 * them again and unwinds once more (unwind_stage). */
	*maps_fresh = 0;
	if (!light || !t->space.maps.n || sd_now_ns() - t->maps_ns > 1000000000ull) {
		if (target_refresh(t, err) < 0)
			return -1;
		*maps_fresh = 1;
	}
	symbols_sync(t->sym);
	return 0;
}

/* The thread IDs to look at: listed now, or (samples) the last listing
 * when under a second old and the process has as many threads as it
 * lists (NTHREADS, from its stat). Returns 0 or -1 with ERR set; *TIDS is
 * the caller's to free. */
static int list_stage(struct sd_target *t, const struct sd_snap_opts *o, int auto_mode,
		      long nthreads, pid_t **tids, size_t *ntids, struct sd_error *err)
{
	uint64_t now = sd_now_ns();
	if (o->tids && o->tids_listed) {
		*tids = sd_xmalloc((o->ntids + 1) * sizeof(**tids));
		memcpy(*tids, o->tids, o->ntids * sizeof(**tids));
		*ntids = o->ntids;
		return 0;
	}
	if (auto_mode && o->reuse && !o->tids && !o->name_glob && t->last_tids &&
	    nthreads == (long)t->nlast_tids && now - t->tids_ns < 1000000000ull) {
		*tids = sd_xmalloc((t->nlast_tids + 1) * sizeof(**tids));
		memcpy(*tids, t->last_tids, t->nlast_tids * sizeof(**tids));
		*ntids = t->nlast_tids;
		return 0;
	}
	if (procfs_list_tids(t->pid, tids, ntids, err) < 0)
		return -1;
	free(t->last_tids);
	t->last_tids = sd_xmalloc((*ntids + 1) * sizeof(**tids));
	memcpy(t->last_tids, *tids, *ntids * sizeof(**tids));
	t->nlast_tids = *ntids;
	t->tids_ns = now;
	return 0;
}

/* discover and plan: each wanted thread's name, state and syscall from
 * /proc, before anything is stopped, and its capture kind. Returns 0, or
 * -ENOENT with ERR set when the selection matches no thread. */
static int discover_stage(struct snapctx *cx, const pid_t *tids, size_t ntids,
			  struct sd_error *err)
{
	struct sd_target *t = cx->t;
	const struct sd_snap_opts *o = cx->o;
	struct sd_snapshot *s = cx->s;
	int light = o->light_discover >= 2;
	uint64_t now = sd_now_ns();
	/* Repeated snapshots keep each thread's files open: a pread each. */
	if (o->keep_files || (cx->auto_mode && (light || o->reuse))) {
		if (!t->taskcache)
			t->taskcache = procfs_taskcache_new();
		procfs_taskcache_prune(t->taskcache, tids, ntids);
		cx->tc = t->taskcache;
	}
	/* Room for every listed thread at once (and a few born meanwhile):
	 * no copies as the arrays grow. */
	sd_grow(&s->threads, &s->cap, ntids + 8, sizeof(*s->threads));
	sd_grow(&cx->p, &cx->pcap, ntids + 8, sizeof(*cx->p));
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)t->pid);
	cx->taskdir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cx->taskdir < 0)
		cx->taskdir = AT_FDCWD;
	for (size_t i = 0; i < ntids; i++) {
		if (!snap_thread_wanted(tids[i], &cx->pick))
			continue;
		if (light) {
			/* A thread with a reuse entry did not run since the
			 * last sample. */
			int ran = !(cx->auto_mode && o->reuse && reuse_find(t, tids[i]));
			const char *name = snap_thread_name(t, cx->tc, cx->taskdir, tids[i], now, ran);
			if (!name)
				continue; /* exited already */
			struct sd_thread *th = snap_add_thread(cx, tids[i]);
			th->name = strpool_intern(s->pool, name);
			th->syscall_nr = -1;
		} else {
			struct sd_taskinfo ti;
			if (procfs_taskinfo_cached(cx->tc, cx->taskdir, t->pid, tids[i], &ti,
						   (o->light_discover ? PROCFS_LIGHT : 0) |
							   (o->text_only ? PROCFS_SHOWN : 0) |
							   PROCFS_REGS_FOLLOW) < 0)
				continue; /* exited already */
			struct sd_thread *th = snap_add_thread(cx, tids[i]);
			fill_taskinfo(s, th, &ti);
		}
		if (cx->auto_mode)
			snap_plan_thread(cx, s->nthreads - 1);
	}
	cx->nsorted = s->nthreads;
	if (o->tids || o->name_glob)
		s->threads_total = ntids;
	if (!s->nthreads && (o->tids || o->name_glob))
		return sd_error_set(err, ENOENT, "no thread of %d matches the selection",
				    (int)t->pid);
	return 0;
}

/* Prefault room for the stack copies now, while the target runs: the
 * stack pointers /proc showed tell how much. */
static void arena_stage(struct snapctx *cx)
{
	struct sd_target *t = cx->t;
	const struct sd_snap_opts *o = cx->o;
	struct sd_snapshot *s = cx->s;
	size_t est = 0;
	for (size_t i = 0; i < s->nthreads; i++) {
		const struct sd_thread *th = &s->threads[i];
		if (cx->p[i].plan == PLAN_REUSE || cx->p[i].plan == PLAN_KERNEL)
			continue;
		uint64_t sp = th->proc_sp ? th->proc_sp : cx->p[i].sc.sp;
		const struct sd_map *m = sp ? procfs_maps_find(&t->space.maps, sp) : NULL;
		/* A sleeper's copy is [sp, end of its stack) exactly; one
		 * that runs may be deeper when it stops. Without a stack
		 * pointer from /proc, the share of what the last snapshot
		 * copied. (Every byte here is a zeroed page before the copy.) */
		size_t slack = cx->p[i].plan == PLAN_ASLEEP ? 0 : 8192;
		size_t w = m			       ? (size_t)(m->end - sp) + slack
			   : t->last_stack_bytes && t->snapshots ? t->last_stack_bytes / s->nthreads + 4096
								 : 65536;
		est += w < o->max_stack ? w : o->max_stack;
	}
	est += est / 8;
	if (o->max_stack_total && est > o->max_stack_total)
		est = o->max_stack_total;
	if (t->spare_arena && t->spare_arena_size >= est && t->spare_arena_size / 4 <= est) {
		snapshot_arena_adopt(s, t->spare_arena, t->spare_arena_size);
		t->spare_arena = NULL;
	} else {
		snapshot_arena_reserve(s, est);
	}
}

/* capture: sleepers read first without a stop, then only what runs is
 * frozen, then the late ones and the proof. Returns 0 or -errno. */
static int capture_stage(struct snapctx *cx, const pid_t *tids, size_t ntids,
			 struct sd_error *err)
{
	const struct sd_snap_opts *o = cx->o;
	struct sd_snapshot *s = cx->s;
	if (o->per_thread)
		return snap_perthread_stage(cx, err);
	if (cx->auto_mode)
		snap_asleep_stage(cx, 0);
	for (size_t i = 0; i < s->nthreads; i++)
		if (cx->p[i].plan == PLAN_REUSE)
			reuse_apply(cx, &s->threads[i], cx->p[i].prev);
	snap_kernel_stage(cx);
	/* freeze: only what runs */
	pid_t *known = sd_xmalloc((s->nthreads + 1) * sizeof(*known));
	size_t nknown = 0;
	for (size_t i = 0; i < s->nthreads; i++)
		if (cx->p[i].plan == PLAN_FREEZE)
			known[nknown++] = s->threads[i].tid;
	int r = 0;
	if (nknown || !cx->auto_mode) {
		unsigned budget = o->timeout_ms;
		if (cx->auto_mode && budget > SD_STOP_BUDGET_MS)
			budget = SD_STOP_BUDGET_MS;
		cx->stage = STAGE_MAIN;
		r = snap_freeze_stage(cx, cx->auto_mode ? known : tids,
				      cx->auto_mode ? nknown : ntids, budget, err);
	}
	free(known);
	if (r < 0 || !cx->auto_mode)
		return r;
	/* A thread to freeze that the freeze did not take (still ours from
	 * an earlier snapshot, not stopped yet): waited for or read asleep
	 * like a late one. */
	for (size_t i = 0; i < s->nthreads; i++)
		if (cx->p[i].plan == PLAN_FREEZE && !s->threads[i].have_regs &&
		    s->threads[i].status == SD_THREAD_OK)
			cx->p[i].late = 1;
	snap_late_stage(cx);
	if (o->between_readings)
		o->between_readings(o->between_arg);
	snap_retry_stage(cx);
	return 0;
}

/* unwind, offline: each captured thread from its copy. When the unwind
 * met an address the maps lack (a new thread's stack, a library loaded
 * since), the maps are read again and the threads unwound once more. */
static int unwind_stage(struct snapctx *cx, int maps_fresh, uint64_t misses,
			struct sd_error *err)
{
	struct sd_target *t = cx->t;
	struct sd_snapshot *s = cx->s;
	for (size_t i = 0; i < s->nthreads; i++) {
		struct sd_thread *th = &s->threads[i];
		state_from_regs(th);
		if (!t->core && (!th->name || !th->state || (!th->have_regs && !th->syscall_known))) {
			struct sd_taskinfo ti;
			if (procfs_taskinfo(t->pid, th->tid, &ti) == 0)
				fill_taskinfo(s, th, &ti);
			else if (!th->name)
				th->name = strpool_intern(s->pool, "");
		}
		syscall_from_regs(th);
		if (th->kind == SD_CAPTURE_REUSED || th->kind == SD_CAPTURE_KERNEL)
			continue;
		unwind_thread(t->unw, s, th, cx->o->max_frames);
		for (size_t k = 0; k < th->nframes && !cx->o->no_symbols; k++)
			symbols_prefetch(t->sym, th->frames[k].pc);
	}
	if (!maps_fresh && t->space.maps_misses != misses) {
		if (target_refresh(t, err) < 0)
			return -1;
		symbols_sync(t->sym);
		for (size_t i = 0; i < s->nthreads; i++) {
			struct sd_thread *th = &s->threads[i];
			if (th->kind == SD_CAPTURE_REUSED || th->kind == SD_CAPTURE_KERNEL)
				continue;
			th->nframes = 0;
			th->unwind_stop = NULL;
			unwind_thread(t->unw, s, th, cx->o->max_frames);
		}
	}
	if (cx->auto_mode) {
		snap_regstop_stage(cx, 0);
		for (size_t i = 0; i < s->nthreads; i++)
			cx->p[i].reunwound = 0; /* symbolized with the others */
		snap_prove_live_reads(cx);
	}
	return 0;
}

/* The counts -v and the JSON timings show. */
static void count_stage(struct snapctx *cx)
{
	struct sd_snapshot *s = cx->s;
	for (size_t i = 0; i < s->nthreads; i++) {
		struct sd_thread *th = &s->threads[i];
		switch (th->kind) {
		case SD_CAPTURE_FROZEN: s->nfrozen += th->have_regs; break;
		case SD_CAPTURE_ASLEEP: s->nasleep++; break;
		case SD_CAPTURE_REUSED: s->nreused++; break;
		case SD_CAPTURE_KERNEL: break;
		}
		s->nretried += th->retried;
	}
	/* A thread read twice (retried, stopped for registers) may have
	 * been held to the cap twice: count threads, not cuts. */
	if (cx->o->max_stack_total && !cx->o->per_thread) {
		s->stack_cut = 0;
		for (size_t i = 0; i < s->nthreads; i++)
			s->stack_cut += s->threads[i].stack_cut;
	}
}

/* symbolize TH, held to --max-frames (which counts inline frames too). */
static void symbolize_thread(struct snapctx *cx, struct sd_thread *th)
{
	const struct sd_snap_opts *o = cx->o;
	symbols_thread(cx->t->sym, cx->s, th, o->no_inline, o->no_source);
	if (o->max_frames && th->nframes > o->max_frames) {
		char msg[64];
		th->nframes = o->max_frames;
		snprintf(msg, sizeof(msg), "stopped at --max-frames %u", o->max_frames);
		th->unwind_stop = strpool_intern(cx->s->pool, msg);
	}
}

static void symbolize_stage(struct snapctx *cx)
{
	struct sd_snapshot *s = cx->s;
	if (cx->o->no_symbols)
		return;
	for (size_t i = 0; i < s->nthreads; i++) {
		struct sd_thread *th = &s->threads[i];
		if (th->kind == SD_CAPTURE_REUSED && cx->o->reuse)
			continue; /* frames as symbolized last time */
		symbolize_thread(cx, th);
	}
}

/* analyze: states, waits, owners, cycles. A lock waited on with no owner
 * in memory has its holder inferred from stack slots and callee-saved
 * registers, and /proc gave none of the latter: every sleeper is stopped
 * once for them (the copy stays the one taken before when the stop proves
 * it exact), then unwound and judged again. */
static void analyze_stage(struct snapctx *cx)
{
	struct sd_target *t = cx->t;
	struct sd_snapshot *s = cx->s;
	/* A core's threads are no host process's: no /proc look-ups. */
	analyze_snapshot(t->core ? 0 : t->pid, t->sym, s);
	if (!cx->auto_mode || !snap_locks_need_registers(cx))
		return;
	snap_regstop_stage(cx, 1);
	for (size_t i = 0; i < s->nthreads; i++) {
		struct sd_thread *th = &s->threads[i];
		th->needs_regs = 0;
		if (!cx->p[i].reunwound)
			continue;
		cx->p[i].reunwound = 0;
		syscall_from_regs(th);
		if (!cx->o->no_symbols)
			symbolize_thread(cx, th);
	}
	analyze_snapshot(t->pid, t->sym, s);
}

/* What the target keeps for the next snapshot: the reuse cache, the
 * modules, the arena (unless the caller keeps the copies). */
static void finish_stage(struct snapctx *cx)
{
	struct sd_target *t = cx->t;
	struct sd_snapshot *s = cx->s;
	if (cx->auto_mode && cx->o->reuse)
		reuse_save(cx);
	if (s->threads_total && !t->core && !cx->o->tids_internal) {
		name_outside(s);
		holds_outside(s, t);
	}
	add_modules(s, t);
	t->last_stack_bytes = s->stack_bytes;
	if (!cx->o->keep_capture) {
		snapshot_drop_capture(s);
		void *arena;
		size_t size = snapshot_arena_release(s, &arena);
		if (arena) {
			if (t->spare_arena)
				munmap(t->spare_arena, t->spare_arena_size);
			t->spare_arena = arena;
			t->spare_arena_size = size;
		}
	}
	t->snapshots++;
}

/* A core's capture: each thread of the core (those selected), its
 * registers from NT_PRSTATUS and its stack window and lock words from the
 * core's memory, planned and held to the caps as a live capture is. */
static int core_capture_stage(struct snapctx *cx, struct sd_error *err)
{
	struct sd_target *t = cx->t;
	const struct sd_snap_opts *o = cx->o;
	struct sd_snapshot *s = cx->s;
	const struct sd_core *c = t->core;
	sd_grow(&s->threads, &s->cap, c->nthreads + 1, sizeof(*s->threads));
	sd_grow(&cx->p, &cx->pcap, c->nthreads + 1, sizeof(*cx->p));
	for (size_t i = 0; i < c->nthreads; i++) {
		const struct sd_core_thread *ct = &c->threads[i];
		/* A kernel's core names only its process (NT_PRPSINFO), not
		 * threads; save --core's names them all. */
		const char *name = ct->name[0] ? ct->name : ct->tid == c->pid ? c->comm : "";
		int want = 1;
		if (o->tids && o->ntids) {
			want = 0;
			for (size_t k = 0; k < o->ntids; k++)
				want |= o->tids[k] == ct->tid;
		}
		if (o->name_glob && fnmatch(o->name_glob, name, 0))
			want = 0;
		if (!want)
			continue;
		struct sd_thread *th = snap_add_thread(cx, ct->tid);
		th->name = strpool_intern(s->pool, name);
		th->kind = SD_CAPTURE_FROZEN;
		th->regs = ct->regs;
		th->have_regs = 1;
		capture_plan(th, &t->space.maps, o->max_stack);
	}
	if (o->tids || o->name_glob)
		s->threads_total = c->nthreads;
	if (!s->nthreads)
		return sd_error_set(err, ENOENT, "no thread of the core %s matches the selection",
				    c->path);
	struct sd_thread **v = sd_xmalloc(s->nthreads * sizeof(*v));
	for (size_t i = 0; i < s->nthreads; i++)
		v[i] = &s->threads[i];
	if (o->max_stack_total)
		s->stack_cut = capture_budget(v, s->nthreads, o->max_stack_total, 0, 0);
	capture_memory_from(core_read_cb, t->core, s, v, s->nthreads, &s->stack_bytes);
	free(v);
	return 0;
}

/* Is NAME a function of Rust's standard library or its panic runtime
 * (std, core, alloc, panic_abort, panic_unwind, the __rust entry points)? */
static int rust_runtime_frame(const char *name)
{
	static const char *const pre[] = {"std::", "core::", "alloc::", "panic_abort::",
					  "panic_unwind::", "__rust", "rust_begin_unwind",
					  "<std::", "<core::", "<alloc::"};
	if (!name)
		return 0;
	for (size_t i = 0; i < sizeof(pre) / sizeof(pre[0]); i++)
		if (!strncmp(name, pre[i], strlen(pre[i])))
			return 1;
	return 0;
}

/* What the runtimes schedule, beside the threads: a Go program's
 * goroutines, a Tokio program's tasks; read from the process's memory,
 * or a core's. */
static void runtimes_stage(struct sd_target *t, const struct sd_snap_opts *o,
			   struct sd_snapshot *s)
{
	target_runtimes(t, o, s);
}

void target_runtimes(struct sd_target *t, const struct sd_snap_opts *o, struct sd_snapshot *s)
{
	if (o->no_symbols)
		return;
	if (o->goroutines) {
		struct go_read_opts go = {o->max_frames, o->max_stack, o->no_inline, o->no_source};
		goroutines_read(&t->goruntime, &t->space, t->unw, t->sym, s, &go);
	}
	if (o->goroutines || o->tokio)
		tokio_read(&t->tokioruntime, &t->space, s, 0);
}

void target_tokio_workers(struct sd_target *t, struct sd_snapshot *s)
{
	if (!t->core)
		tokio_read(&t->tokioruntime, &t->space, s, 1);
}

/* The crash a core records (the first thread with a core-dumping signal
 * in its NT_SIGINFO, else in its NT_PRSTATUS), its thread moved first and
 * a line naming it from the first frame outside the C library's raise
 * and abort (an abort's own frames are not where it went wrong). */
static void core_crash_stage(struct sd_target *t, struct sd_snapshot *s)
{
	const struct sd_core *c = t->core;
	const struct sd_core_thread *ct = NULL;
	for (size_t i = 0; i < c->nthreads && !ct; i++)
		if (c->threads[i].have_siginfo && core_signal_dumps(c->threads[i].si_signo))
			ct = &c->threads[i];
	for (size_t i = 0; i < c->nthreads && !ct; i++)
		if (core_signal_dumps(c->threads[i].cursig))
			ct = &c->threads[i];
	if (!ct)
		return;
	struct sd_crash *cr = &s->crash;
	cr->signo = ct->have_siginfo ? ct->si_signo : ct->cursig;
	cr->code = ct->have_siginfo ? ct->si_code : 0;
	cr->addr = ct->have_siginfo ? ct->fault_addr : 0;
	cr->tid = ct->tid;
	size_t at = s->nthreads;
	for (size_t i = 0; i < s->nthreads; i++)
		if (s->threads[i].tid == ct->tid)
			at = i;
	struct strbuf sb;
	strbuf_init(&sb);
	const char *sig = core_signal_name(cr->signo);
	if (sig)
		strbuf_adds(&sb, sig);
	else
		strbuf_addf(&sb, "signal %d", cr->signo);
	const char *code = core_sigcode_name(cr->signo, cr->code);
	if (code && ct->have_siginfo)
		strbuf_addf(&sb, " (%s)", code);
	int fault = cr->signo == SIGSEGV || cr->signo == SIGBUS || cr->signo == SIGILL ||
		    cr->signo == SIGFPE;
	if (fault && ct->have_siginfo && cr->code > 0)
		strbuf_addf(&sb, " at 0x%llx", (unsigned long long)cr->addr);
	if (at < s->nthreads) {
		struct sd_thread *th = &s->threads[at];
		/* The first frame past the signal's and, for an abort, past
		 * libc's raise and abort; for an abort from a Rust panic, past
		 * std's and core's panic machinery too, to where the program
		 * panicked. */
		const struct sd_frame *f = NULL, *panic = NULL, *first = NULL;
		for (size_t k = 0; k < th->nframes && !f; k++) {
			const struct sd_frame *g = &th->frames[k];
			int libc = g->module && (!strncmp(g->module, "libc.so", 7) ||
						 !strncmp(g->module, "libc-", 5));
			if (g->flags & SD_FRAME_SIGNAL)
				continue;
			if (fault) {
				f = g;
				break;
			}
			if (libc)
				continue;
			if (!first)
				first = g;
			if (rust_runtime_frame(g->function)) {
				if (strstr(g->function, "panicking::"))
					panic = g;
				continue;
			}
			f = g;
		}
		if (!panic && !fault)
			f = first;
		if (panic)
			strbuf_adds(&sb, ", a Rust panic,");
		if (f && f->function)
			strbuf_addf(&sb, " in %s", f->function);
		else if (f && f->module)
			strbuf_addf(&sb, " in %s+%#llx", f->module, (unsigned long long)f->offset);
		if (f && f->file) {
			const char *b = strrchr(f->file, '/');
			strbuf_addf(&sb, " at %s:%d", b ? b + 1 : f->file, f->line);
		}
		if (panic)
			strbuf_addf(&sb, " (through %s)", panic->function);
		strbuf_addf(&sb, ", thread %d", (int)th->tid);
		if (th->name && *th->name)
			strbuf_addf(&sb, " \"%s\"", th->name);
		/* The crashing thread first. */
		struct sd_thread keep = *th;
		memmove(&s->threads[1], &s->threads[0], at * sizeof(*s->threads));
		s->threads[0] = keep;
	} else {
		strbuf_addf(&sb, ", thread %d (not selected)", (int)ct->tid);
	}
	cr->text = strpool_intern(s->pool, sb.buf);
	strbuf_release(&sb);
}

/* A core's snapshot: the core's threads in place of discover and capture,
 * then the same offline stages as a process's (nothing is attached; no
 * /proc file is read). */
static struct sd_snapshot *core_snapshot(struct sd_target *t, const struct sd_snap_opts *o,
					 struct sd_error *err)
{
	struct sd_snapshot *s = snapshot_new(t->pid);
	s->comm = strpool_intern(s->pool, t->info.comm);
	s->exe = t->info.exe ? strpool_intern(s->pool, t->info.exe) : NULL;
	s->state = 'S';
	s->stack_total = o->max_stack_total;
	s->time = sd_wall_time();
	s->core = strpool_intern(s->pool, t->core->path);
	s->core_args = strpool_intern(s->pool, t->core->args);
	s->core_notes = t->core_notes ? strpool_intern(s->pool, t->core_notes) : NULL;
	struct snapctx cx = {.t = t, .o = o, .s = s, .taskdir = -1, .pick = {o, t->pid}};
	cx.p = t->plans;
	cx.pcap = t->plans_cap;
	t->plans = NULL;
	t->plans_cap = 0;
	symbols_sync(t->sym);
	uint64_t t0 = sd_now_ns();
	int r = core_capture_stage(&cx, err);
	uint64_t t1 = sd_now_ns();
	s->capture_us = (t1 - t0) / 1000;
	if (r == 0)
		r = unwind_stage(&cx, 1, t->space.maps_misses, err);
	if (r < 0) {
		t->plans = cx.p;
		t->plans_cap = cx.pcap;
		snapshot_free(s);
		return NULL;
	}
	count_stage(&cx);
	uint64_t t2 = sd_now_ns();
	s->unwind_us = (t2 - t1) / 1000;
	symbolize_stage(&cx);
	s->symbolize_us = (sd_now_ns() - t2) / 1000;
	analyze_stage(&cx);
	runtimes_stage(t, o, s);
	finish_stage(&cx);
	core_crash_stage(t, s);
	t->plans = cx.p;
	t->plans_cap = cx.pcap;
	return s;
}

struct sd_snapshot *target_snapshot(struct sd_target *t, const struct sd_snap_opts *o,
				    struct sd_error *err)
{
	if (t->core)
		return core_snapshot(t, o, err);
	/* A thread that did not stop in time at the last snapshot has
	 * perhaps stopped since: let it go before anything else. */
	ptrace_reap_stragglers();
	char state;
	long nthreads;
	int maps_fresh;
	uint64_t misses = t->space.maps_misses;
	if (process_stage(t, o, &state, &nthreads, &maps_fresh, err) < 0)
		return NULL;

	struct sd_snapshot *s = snapshot_new(t->pid);
	s->comm = strpool_intern(s->pool, t->info.comm);
	s->exe = t->info.exe ? strpool_intern(s->pool, t->info.exe) : NULL;
	s->state = state;
	s->per_thread = o->per_thread;
	s->stack_total = o->max_stack_total;
	s->time = sd_wall_time();

	struct snapctx cx = {.t = t, .o = o, .s = s, .taskdir = -1, .pick = {o, t->pid}};
	cx.p = t->plans; /* entries are cleared as threads are added */
	cx.pcap = t->plans_cap;
	t->plans = NULL;
	t->plans_cap = 0;
	cx.auto_mode = !o->per_thread && o->capture != SD_CAPMODE_FREEZE;
	/* Samples prove their sleepers with context-switch records or the
	 * task clock (read for every thread at every tick: a load, or a
	 * third of the cost of schedstat). */
	cx.counters = o->capture == SD_CAPMODE_CTXSW	 ? PROCFS_CNT_STATUS
		      : o->capture == SD_CAPMODE_SCHEDSTAT ? PROCFS_CNT_SCHEDSTAT
		      : o->light_discover < 2		 ? PROCFS_CNT_SCHEDSTAT
		      : o->capture == SD_CAPMODE_CLOCK	 ? PROCFS_CNT_TASKCLOCK
							 : PROCFS_CNT_CLOCK;
	if (!cx.auto_mode)
		reuse_clear(t);

	pid_t *tids = NULL;
	size_t ntids = 0;
	if (list_stage(t, o, cx.auto_mode, nthreads, &tids, &ntids, err) < 0 ||
	    discover_stage(&cx, tids, ntids, err) < 0)
		goto fail;
	if (!o->per_thread)
		arena_stage(&cx);
	uint64_t t0 = sd_now_ns();
	if (capture_stage(&cx, tids, ntids, err) < 0)
		goto fail;
	free(tids);
	tids = NULL;
	uint64_t t1 = sd_now_ns();
	s->capture_us = (t1 - t0) / 1000;

	/* Everything below runs with the target running again. */
	if (unwind_stage(&cx, maps_fresh, misses, err) < 0)
		goto fail;
	count_stage(&cx);
	uint64_t t2 = sd_now_ns();
	s->unwind_us = (t2 - t1) / 1000;
	symbolize_stage(&cx);
	s->symbolize_us = (sd_now_ns() - t2) / 1000;
	analyze_stage(&cx);
	runtimes_stage(t, o, s);
	finish_stage(&cx);
	if (cx.taskdir >= 0)
		close(cx.taskdir);
	t->plans = cx.p;
	t->plans_cap = cx.pcap;
	return s;
fail:
	free(tids);
	if (cx.taskdir >= 0)
		close(cx.taskdir);
	t->plans = cx.p;
	t->plans_cap = cx.pcap;
	snapshot_free(s);
	return NULL;
}

void target_snapshot_modules(struct sd_target *t, struct sd_snapshot *s)
{
	if (!s->modules)
		add_modules(s, t);
}

