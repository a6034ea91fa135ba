// SPDX-License-Identifier: MIT
// Goroutines (goroutines.h): the Go runtime's layout learnt once per
// target from the executable's DWARF, then each snapshot reads allgs, every
// g descriptor, its stack within its own bounds, and unwinds it from the
// registers the runtime saved for it.
#include "goroutines.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dwtype.h"
#include "golabels.h"
#include "golocks.h"
#include "rtmem.h"
#include "space.h"
#include "symbols.h"
#include "unwind.h"

/* Bounds on what the target's memory may claim. */
#define GO_MAX_GOROUTINES (1u << 22)   /* allgs entries read at most */
#define GO_MAX_WAITREASONS 256	       /* waitReason is a uint8 */
#define GO_MAX_REASON_LEN 64	       /* bytes of one wait-reason string */
#define GO_MAX_STACK_SPAN (1ull << 30) /* a goroutine stack's size (Go's max is 1 GB) */
#define GO_RETAKES 3		       /* copies of a goroutine that moved, at most */
#define GO_BATCH 512		       /* goroutines read in one batch (see batch_read) */
#define GO_BATCH_STACK (8u << 20)      /* bytes of their stacks copied in one batch, at most */

/* One field of a runtime struct: offset and size from DWARF. */
struct gofield {
	uint64_t off;
	uint32_t size;
	int ok;
};

struct sd_goruntime {
	int state;	      /* 0 not looked at, 1 ready, -1 not Go, -2 Go but unreadable */
	const void *exe_elf;  /* the image it was learnt from */
	struct dwt *d;
	char note[1024];	      /* with state -2: why */
	char version[48];     /* from the producer until the target says */
	uint64_t bias;
	uint64_t allgs_va, allglen_va, wrs_va, version_va;
	struct dwt_type allgs_t, version_t;
	uint64_t wrs_count, str_size;
	struct gofield str_ptr, str_len;
	uint64_t g_size;
	struct gofield goid, status, waitreason, waitsince, gopc, parent, sched_pc, sched_sp,
	    sched_bp, syscallsp, syscallpc, syscallbp, m, stack_lo, stack_hi, lockedm;
	struct gofield m_procid;
	struct golocks_layout *gl; /* wait objects: channels, mutexes, semaphores */
	struct golabels_layout *glab; /* pprof labels */
	int64_t st_idle, st_runnable, st_running, st_syscall, st_waiting, st_dead, st_copystack,
	    st_preempted, st_scan;
	/* runtime.asyncPreempt, which the preemption signal enters by pushing
	 * the interrupted pc (target addresses; 0 when not found). */
	uint64_t preempt_lo, preempt_hi;
};

void goruntime_free(struct sd_goruntime *rt)
{
	if (!rt)
		return;
	golocks_layout_free(rt->gl);
	golabels_layout_free(rt->glab);
	dwt_free(rt->d);
	free(rt);
}

/* Is the ELF file open as FD a Go program (the sections its linker
 * writes and no other does)? */
static int is_go_binary(int fd)
{
	int own = dup(fd);
	if (own < 0)
		return 0;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(own, ELF_C_READ_MMAP, NULL);
	size_t shstrndx;
	int go = 0;
	if (e && elf_getshdrstrndx(e, &shstrndx) == 0) {
		for (Elf_Scn *scn = elf_nextscn(e, NULL); scn && !go; scn = elf_nextscn(e, scn)) {
			GElf_Shdr sh;
			const char *n = gelf_getshdr(scn, &sh) ? elf_strptr(e, shstrndx, sh.sh_name) : NULL;
			go = n && (!strcmp(n, ".go.buildinfo") || !strcmp(n, ".gopclntab"));
		}
	}
	if (e)
		elf_end(e);
	close(own);
	return go;
}

/* The field PATH of T into F; a REQUIRED one missing makes the layout
 * unknown (the note names it). */
static int field(struct sd_goruntime *rt, const struct dwt_type *t, const char *path,
		 struct gofield *f, int required)
{
	struct sd_error err = {0};
	struct dwt_type ft;
	memset(f, 0, sizeof(*f));
	if (dwt_member(rt->d, t, path, &f->off, &ft, &err) < 0) {
		if (required)
			snprintf(rt->note, sizeof(rt->note), "%.500s", err.msg);
		return required ? -1 : 0;
	}
	/* Go's atomic types wrap their integer: atomic.Uint32{value}. */
	if (ft.kind == DWT_STRUCT) {
		uint64_t voff;
		struct dwt_type vt;
		if (dwt_member(rt->d, &ft, "value", &voff, &vt, NULL) == 0 && vt.size == ft.size) {
			f->off += voff;
			ft = vt;
		}
	}
	if (ft.size != 1 && ft.size != 2 && ft.size != 4 && ft.size != 8) {
		if (required)
			snprintf(rt->note, sizeof(rt->note), "field %s of %s is not an integer (%llu bytes)",
				 path, t->name, (unsigned long long)ft.size);
		return required ? -1 : 0;
	}
	f->size = (uint32_t)ft.size;
	f->ok = 1;
	return 0;
}

static int constant(struct sd_goruntime *rt, const char *name, int64_t *v)
{
	struct sd_error err = {0};
	if (dwt_const(rt->d, name, v, &err) < 0) {
		snprintf(rt->note, sizeof(rt->note), "%.500s", err.msg);
		return -1;
	}
	return 0;
}

static int global(struct sd_goruntime *rt, const char *name, uint64_t *va, struct dwt_type *t)
{
	struct sd_error err = {0};
	if (dwt_global(rt->d, name, va, t, &err) < 0) {
		snprintf(rt->note, sizeof(rt->note), "%.500s", err.msg);
		return -1;
	}
	*va += rt->bias;
	return 0;
}

/* Everything the reader needs from the runtime's DWARF, looked up by name.
 * Returns 0, or -1 with rt->note naming what is missing. */
static int learn_layout(struct sd_goruntime *rt)
{
	struct sd_error err = {0};
	struct dwt_type g, m, wr, str, strelem;
	if (dwt_type(rt->d, "runtime.g", &g, &err) < 0 ||
	    dwt_type(rt->d, "runtime.m", &m, &err) < 0) {
		snprintf(rt->note, sizeof(rt->note), "%.500s", err.msg);
		return -1;
	}
	rt->g_size = g.size;
	if (!g.size || g.size > 65536) {
		snprintf(rt->note, sizeof(rt->note), "runtime.g has an unlikely size (%llu bytes)",
			 (unsigned long long)g.size);
		return -1;
	}
	if (field(rt, &g, "goid", &rt->goid, 1) || field(rt, &g, "atomicstatus", &rt->status, 1) ||
	    field(rt, &g, "waitreason", &rt->waitreason, 1) ||
	    field(rt, &g, "waitsince", &rt->waitsince, 1) || field(rt, &g, "gopc", &rt->gopc, 1) ||
	    field(rt, &g, "sched.pc", &rt->sched_pc, 1) ||
	    field(rt, &g, "sched.sp", &rt->sched_sp, 1) ||
	    field(rt, &g, "sched.bp", &rt->sched_bp, 1) ||
	    field(rt, &g, "syscallsp", &rt->syscallsp, 1) ||
	    field(rt, &g, "syscallpc", &rt->syscallpc, 1) || field(rt, &g, "m", &rt->m, 1) ||
	    field(rt, &g, "stack.lo", &rt->stack_lo, 1) ||
	    field(rt, &g, "stack.hi", &rt->stack_hi, 1) ||
	    field(rt, &m, "procid", &rt->m_procid, 1))
		return -1;
	/* Newer runtimes only. */
	field(rt, &g, "parentGoid", &rt->parent, 0);
	field(rt, &g, "syscallbp", &rt->syscallbp, 0);
	field(rt, &g, "lockedm", &rt->lockedm, 0);
	if (constant(rt, "runtime._Gidle", &rt->st_idle) ||
	    constant(rt, "runtime._Grunnable", &rt->st_runnable) ||
	    constant(rt, "runtime._Grunning", &rt->st_running) ||
	    constant(rt, "runtime._Gsyscall", &rt->st_syscall) ||
	    constant(rt, "runtime._Gwaiting", &rt->st_waiting) ||
	    constant(rt, "runtime._Gdead", &rt->st_dead) ||
	    constant(rt, "runtime._Gcopystack", &rt->st_copystack) ||
	    constant(rt, "runtime._Gpreempted", &rt->st_preempted) ||
	    constant(rt, "runtime._Gscan", &rt->st_scan))
		return -1;
	uint64_t wrs_va;
	if (global(rt, "runtime.allgs", &rt->allgs_va, &rt->allgs_t) ||
	    global(rt, "runtime.allglen", &rt->allglen_va, NULL) ||
	    global(rt, "runtime.waitReasonStrings", &wrs_va, &wr))
		return -1;
	rt->wrs_va = wrs_va;
	if (dwt_array(rt->d, &wr, &strelem, &rt->wrs_count, &err) < 0) {
		snprintf(rt->note, sizeof(rt->note), "runtime.waitReasonStrings: %.480s", err.msg);
		return -1;
	}
	str = strelem;
	rt->str_size = str.size;
	if (rt->wrs_count > GO_MAX_WAITREASONS || field(rt, &str, "str", &rt->str_ptr, 1) ||
	    field(rt, &str, "len", &rt->str_len, 1)) {
		if (rt->wrs_count > GO_MAX_WAITREASONS)
			snprintf(rt->note, sizeof(rt->note), "runtime.waitReasonStrings has %llu entries",
				 (unsigned long long)rt->wrs_count);
		return -1;
	}
	if (dwt_global(rt->d, "runtime.buildVersion", &rt->version_va, &rt->version_t, NULL) == 0)
		rt->version_va += rt->bias;
	else
		rt->version_va = 0;
	rt->gl = golocks_learn(rt->d, rt->bias, &g);
	rt->glab = golabels_learn(rt->d, &g);
	return 0;
}

/* The Go version the compiler wrote in the producer ("Go cmd/compile
 * go1.19.8 ..."), until the target's runtime.buildVersion is read. */
static void version_from_producer(struct sd_goruntime *rt)
{
	const char *p = strstr(dwt_producer(rt->d), "go1");
	size_t n = 0;
	while (p && p[n] && p[n] != ' ' && p[n] != ';' && n + 1 < sizeof(rt->version))
		n++;
	memcpy(rt->version, p ? p : "", n);
	rt->version[n] = 0;
}

/* Learn the runtime of the executable module EXE once. */
static struct sd_goruntime *runtime_for(struct sd_goruntime **rtp, struct sd_tmod *exe)
{
	struct sd_goruntime *rt = *rtp;
	if (rt && rt->exe_elf == exe->elf)
		return rt;
	goruntime_free(rt);
	rt = *rtp = sd_xcalloc(1, sizeof(*rt));
	rt->exe_elf = exe->elf;
	rt->bias = exe->bias;
	if (!exe->elf || exe->elf->fd < 0 || !is_go_binary(exe->elf->fd)) {
		rt->state = -1;
		return rt;
	}
	struct sd_error err = {0};
	rt->d = dwt_open_fd(exe->elf->fd, exe->name, &err);
	if (!rt->d) {
		rt->state = -2;
		snprintf(rt->note, sizeof(rt->note),
			 "%.500s: goroutines cannot be listed without the runtime's types; the "
			 "threads are shown",
			 err.msg);
		return rt;
	}
	version_from_producer(rt);
	if (learn_layout(rt) < 0) {
		char why[sizeof(rt->note)];
		memcpy(why, rt->note, sizeof(why));
		snprintf(rt->note, sizeof(rt->note),
			 "goroutines not shown: a runtime layout stackdump does not know (%.600s, Go %s); "
			 "the threads are shown",
			 why, *rt->version ? rt->version : "version unknown");
		rt->state = -2;
		return rt;
	}
	uint64_t lo, hi;
	if (dwt_function(rt->d, "runtime.asyncPreempt.abi0", &lo, &hi) == 0 ||
	    dwt_function(rt->d, "runtime.asyncPreempt", &lo, &hi) == 0) {
		rt->preempt_lo = lo + rt->bias;
		rt->preempt_hi = hi + rt->bias;
	}
	rt->state = 1;
	return rt;
}

static uint64_t get(const uint8_t *b, const struct gofield *f)
{
	uint64_t v = 0;
	if (!f->ok)
		return 0;
	switch (f->size) {
	case 1: v = b[f->off]; break;
	case 2: { uint16_t x; memcpy(&x, b + f->off, 2); v = x; break; }
	case 4: { uint32_t x; memcpy(&x, b + f->off, 4); v = x; break; }
	default: memcpy(&v, b + f->off, 8); break;
	}
	return v;
}

/* What one snapshot's reading needs beside the runtime. */
struct goread {
	struct sd_goruntime *rt;
	struct sd_space *sp;
	struct sd_unwinder *u;
	struct sd_symbols *sym;
	struct sd_snapshot *s;
	const struct go_read_opts *o;
	struct rtmem mem;
	const char **reasons; /* the runtime's wait-reason strings, pool strings */
	uint64_t nreasons;
	uint64_t now_ns;      /* the runtime's clock (CLOCK_MONOTONIC) */
	struct mtid {
		uint64_t m;
		pid_t tid;
	} *ms;
	size_t nms, ms_cap;
	size_t unknown_status, unreadable;
	uint8_t *stack;	      /* one buffer for every goroutine's stack copy */
	size_t stack_cap;
	struct golocks *gw;   /* wait objects of this snapshot */
};

static void read_reasons(struct goread *r)
{
	struct sd_goruntime *rt = r->rt;
	size_t len = rt->wrs_count * rt->str_size;
	uint8_t *tab = sd_xmalloc(len ? len : 1);
	struct sd_error err = {0};
	r->reasons = sd_xcalloc(rt->wrs_count + 1, sizeof(*r->reasons));
	if (rtmem_read(&r->mem, rt->wrs_va, tab, len, "runtime.waitReasonStrings", &err) == 0) {
		r->nreasons = rt->wrs_count;
		for (uint64_t i = 0; i < rt->wrs_count; i++) {
			const uint8_t *e = tab + i * rt->str_size;
			uint64_t p = get(e, &rt->str_ptr), n = get(e, &rt->str_len);
			char buf[GO_MAX_REASON_LEN + 1];
			if (n > GO_MAX_REASON_LEN)
				n = GO_MAX_REASON_LEN;
			if (n && rtmem_read(&r->mem, p, buf, n, "a wait reason", NULL) == 0) {
				buf[n] = 0;
				r->reasons[i] = strpool_intern(r->s->pool, buf);
			}
		}
	}
	free(tab);
}

/* The thread id of M (m.procid), cached for the snapshot. */
static pid_t thread_of(struct goread *r, uint64_t m)
{
	if (!m)
		return 0;
	for (size_t i = 0; i < r->nms; i++)
		if (r->ms[i].m == m)
			return r->ms[i].tid;
	uint64_t id = 0;
	rtmem_uint(&r->mem, m + r->rt->m_procid.off, r->rt->m_procid.size, &id, "m.procid", NULL);
	sd_grow(&r->ms, &r->ms_cap, r->nms + 1, sizeof(*r->ms));
	r->ms[r->nms].m = m;
	r->ms[r->nms].tid = id < (1u << 30) ? (pid_t)id : 0;
	return r->ms[r->nms++].tid;
}

static int map_status(const struct sd_goruntime *rt, uint64_t v, enum sd_go_status *st)
{
	int64_t s = (int64_t)(v & ~(uint64_t)rt->st_scan);
	if (s == rt->st_idle) *st = SD_GO_IDLE;
	else if (s == rt->st_runnable) *st = SD_GO_RUNNABLE;
	else if (s == rt->st_running) *st = SD_GO_RUNNING;
	else if (s == rt->st_syscall) *st = SD_GO_SYSCALL;
	else if (s == rt->st_waiting) *st = SD_GO_WAITING;
	else if (s == rt->st_preempted) *st = SD_GO_PREEMPTED;
	else if (s == rt->st_copystack) *st = SD_GO_COPYSTACK;
	else if (s == rt->st_dead) return 0;
	else return -1;
	return 1;
}

/* Symbolized copies of N raw frames F into the snapshot's pool. */
static void symbolize(struct goread *r, struct sd_thread *th)
{
	symbols_thread(r->sym, r->s, th, r->o->no_inline, r->o->no_source);
	if (r->o->max_frames && th->nframes > r->o->max_frames)
		th->nframes = r->o->max_frames;
}

/* The frame of the go statement that created G (gopc). */
static void created_by(struct goread *r, struct sd_goroutine *g, uint64_t gopc)
{
	if (!gopc)
		return;
	struct sd_thread th;
	memset(&th, 0, sizeof(th));
	struct sd_frame *f = snapshot_add_frame(&th);
	f->pc = gopc; /* a return address: looked up at gopc - 1, as Go does */
	symbols_thread(r->sym, r->s, &th, 1, r->o->no_source);
	if (th.nframes && th.frames[0].function)
		g->created_by = th.frames[0];
	snapshot_thread_drop_frames(&th);
}

static int runs_on(const struct sd_thread *th, uint64_t lo, uint64_t hi)
{
	return th && th->nframes && th->frames[0].sp >= lo && th->frames[0].sp < hi;
}

/* The running goroutine G: its frames are those of the thread frozen by
 * the snapshot on its stack, TID (its M as read after the thaw) or, when
 * the scheduler moved it to another M since, the one whose stack pointer
 * was in G's stack then (G->thread becomes that one). 0 when no thread
 * was on its stack (its M runs on the scheduler stack). */
static const struct sd_thread *from_thread(struct goread *r, struct sd_goroutine *g, pid_t tid,
					   uint64_t lo, uint64_t hi)
{
	const struct sd_thread *th = snapshot_find_thread(r->s, tid);
	for (size_t i = 0; !runs_on(th, lo, hi) && i < r->s->nthreads; i++)
		th = &r->s->threads[i];
	if (!runs_on(th, lo, hi))
		return NULL;
	g->thread = th->tid;
	g->frames = sd_xmalloc(th->nframes * sizeof(*g->frames));
	memcpy(g->frames, th->frames, th->nframes * sizeof(*g->frames));
	g->nframes = th->nframes;
	g->unwind_stop = th->unwind_stop;
	return th;
}

/* The registers the runtime saved for a goroutine of status ST whose
 * descriptor is B: in a system call, where it entered it, as Go's own
 * traceback takes it. */
static void saved_regs(const struct sd_goruntime *rt, const uint8_t *b, enum sd_go_status st,
		       uint64_t *pc, uint64_t *sp, uint64_t *bp)
{
	*pc = get(b, &rt->sched_pc);
	*sp = get(b, &rt->sched_sp);
	*bp = get(b, &rt->sched_bp);
	if (st == SD_GO_SYSCALL && get(b, &rt->syscallsp)) {
		*pc = get(b, &rt->syscallpc);
		*sp = get(b, &rt->syscallsp);
		if (rt->syscallbp.ok)
			*bp = get(b, &rt->syscallbp);
	}
}

/* The bytes of a parked goroutine's stack that are copied: from its
 * saved sp to its stack's top, at most max_stack (*CUT then set). 0 when
 * nothing is to be copied (no saved registers, sp outside its bounds). */
static size_t stack_span(const struct goread *r, const uint8_t *b, uint64_t sp, int *cut)
{
	uint64_t lo = get(b, &r->rt->stack_lo), hi = get(b, &r->rt->stack_hi);
	*cut = 0;
	if (!sp || hi <= lo || hi - lo > GO_MAX_STACK_SPAN || sp < lo || sp >= hi)
		return 0;
	size_t len = hi - sp;
	if (r->o->max_stack && len > r->o->max_stack) {
		len = r->o->max_stack;
		*cut = 1;
	}
	return len;
}

/* What the batch read of a goroutine gave before read_one: its stack from
 * SP (LEN bytes at STACK) and its descriptor read again after that copy
 * (B2); STACK is NULL when either was not read (read_one reads them). */
struct pre {
	uint64_t sp;
	size_t len, off;
	const uint8_t *stack, *b2;
};

/* The g at GP into G, its descriptor read already into B (B2 a buffer as
 * large), PRE what the batch read of it gave (may be NULL). Returns 1 (a
 * goroutine), 0 (dead: left out). */
static int read_one(struct goread *r, uint64_t gp, struct sd_goroutine *g, uint8_t *b, uint8_t *b2,
		    const struct pre *pre)
{
	struct sd_goruntime *rt = r->rt;
	struct sd_error err = {0};
	enum sd_go_status st;
	int k = map_status(rt, get(b, &rt->status), &st);
	if (k == 0)
		return 0;
	if (k < 0) {
		r->unknown_status++;
		return 0;
	}
	memset(g, 0, sizeof(*g));
	g->wait_seconds = -1;
	/* The stack copy the goroutine was unwound from. */
	const uint8_t *stack = NULL;
	uint64_t stack_base = 0;
	size_t stack_len = 0;
	for (unsigned attempt = 0;; attempt++) {
		g->id = get(b, &rt->goid);
		g->status = st;
		uint64_t lo = get(b, &rt->stack_lo), hi = get(b, &rt->stack_hi);
		uint64_t pc, sp, bp;
		saved_regs(rt, b, st, &pc, &sp, &bp);
		g->thread = thread_of(r, get(b, &rt->m));
		const struct sd_thread *on = st == SD_GO_RUNNING
						 ? from_thread(r, g, g->thread, lo, hi)
						 : NULL;
		if (on) {
			stack = on->stack;
			stack_base = on->stack_base;
			stack_len = on->stack_len;
			break;
		}
		if (!pc || !sp) {
			/* Go's own words: it runs, on no thread the snapshot froze
			 * on its stack (it was scheduled after the freeze). */
			g->unwind_stop = strpool_intern(r->s->pool,
							st == SD_GO_RUNNING
							    ? "running on another thread since the freeze; "
							      "stack unavailable"
							    : "no saved registers");
			break;
		}
		int cut;
		size_t len = stack_span(r, b, sp, &cut);
		if (!len) {
			char msg[128];
			snprintf(msg, sizeof(msg), "saved stack pointer 0x%llx outside its stack",
				 (unsigned long long)sp);
			g->unwind_stop = strpool_intern(r->s->pool, msg);
			break;
		}
		struct sd_thread th;
		memset(&th, 0, sizeof(th));
		th.have_regs = 1;
		th.regs.rip = pc;
		th.regs.rsp = sp;
		th.regs.rbp = bp;
		th.stack_truncated = cut;
		th.stack_base = sp;
		th.stack_len = len;
		int copied, reread;
		if (attempt == 0 && pre && pre->stack && pre->sp == sp && pre->len == len) {
			/* The batch read copied both, in this order. */
			th.stack = (uint8_t *)pre->stack;
			memcpy(b2, pre->b2, rt->g_size);
			copied = reread = 1;
		} else {
			if (len > r->stack_cap) {
				free(r->stack);
				r->stack_cap = len < 65536 ? 65536 : len;
				r->stack = sd_xmalloc(r->stack_cap);
			}
			th.stack = r->stack;
			copied = rtmem_read(&r->mem, sp, th.stack, len, "a goroutine stack", &err) == 0;
			reread = copied &&
				 rtmem_read(&r->mem, gp, b2, rt->g_size, "runtime.g", NULL) == 0;
		}
		/* Moved while copied? Its status and registers again. */
		int same = reread && get(b2, &rt->status) == get(b, &rt->status) &&
			   get(b2, &rt->sched_sp) == get(b, &rt->sched_sp) &&
			   get(b2, &rt->sched_pc) == get(b, &rt->sched_pc) &&
			   get(b2, &rt->syscallsp) == get(b, &rt->syscallsp) &&
			   get(b2, &rt->goid) == get(b, &rt->goid);
		if (!same && copied && attempt + 1 < GO_RETAKES) {
			g->retakes++;
			memcpy(b, b2, rt->g_size);
			k = map_status(rt, get(b, &rt->status), &st);
			if (k <= 0)
				return k < 0 ? (r->unknown_status++, 0) : 0;
			continue;
		}
		if (!copied) {
			g->unwind_stop = strpool_intern(r->s->pool, err.msg);
			break;
		}
		unwind_thread(r->u, r->s, &th, r->o->max_frames);
		/* Woken, run and parked again at the same pc and sp while its
		 * stack was copied (a loop back into the same select): its
		 * descriptor agrees, the words between did not stay. The
		 * unwinding fails on them; take it again. */
		if (same && th.unwind_stop && !cut && attempt + 1 < GO_RETAKES &&
		    (!r->o->max_frames || th.nframes < (size_t)r->o->max_frames)) {
			snapshot_thread_drop_frames(&th);
			g->retakes++;
			continue;
		}
		/* The saved pc is a return address (of mcall, of the call into
		 * the system call): its line is the call's, at pc - 1. */
		if (th.nframes)
			th.frames[0].flags &= ~SD_FRAME_EXACT;
		symbolize(r, &th);
		stack = th.stack;
		stack_base = th.stack_base;
		stack_len = th.stack_len;
		g->frames = th.frames;
		g->nframes = th.nframes;
		g->unwind_stop = th.unwind_stop;
		if (!same)
			g->unwind_stop = strpool_intern(r->s->pool,
							"it ran while it was read: its stack may be "
							"out of date");
		break;
	}
	uint64_t wr = get(b, &rt->waitreason);
	if (st == SD_GO_WAITING && wr < r->nreasons && r->reasons[wr] && *r->reasons[wr])
		g->wait_reason = r->reasons[wr];
	int64_t since = (int64_t)get(b, &rt->waitsince);
	if (st == SD_GO_WAITING && since > 0 && (uint64_t)since <= r->now_ns)
		g->wait_seconds = (double)(r->now_ns - (uint64_t)since) / 1e9;
	g->parent = get(b, &rt->parent);
	golabels_read(rt->glab, &r->mem, r->s, b, rt->g_size, g);
	g->locked = get(b, &rt->lockedm) != 0;
	/* Go's traceback names no creator for goroutine 1 (the runtime's
	 * bootstrap starts it): neither do we. */
	if (g->id != 1)
		created_by(r, g, get(b, &rt->gopc));
	golocks_goroutine(r->gw, r->s->ngoroutines, gp, b, rt->g_size, g, stack, stack_base,
			  stack_len);
	return 1;
}

/* Reading goroutines GO_BATCH at a time: their descriptors in one
 * process_vm_readv, then the stacks of the parked ones in one, then their
 * descriptors again in one (a goroutine that moved while its stack was
 * copied shows it there, and read_one takes it again by itself). */
struct batch {
	size_t g_size;
	uint8_t *g, *g2, *scratch; /* GO_BATCH descriptors, as read first and again */
	uint8_t *stacks;	   /* the stacks copied, GO_BATCH_STACK bytes at most */
	size_t stacks_cap;
	struct pre pre[GO_BATCH];
	struct rtmem_iov iov[GO_BATCH], iov2[GO_BATCH];
	const uint8_t *waiting[GO_BATCH]; /* the descriptors of those waiting */
	size_t at[GO_BATCH];
};

static struct batch *batch_new(size_t g_size)
{
	struct batch *bt = sd_xcalloc(1, sizeof(*bt));
	bt->g_size = g_size;
	bt->g = sd_xmalloc(GO_BATCH * g_size);
	bt->g2 = sd_xmalloc(GO_BATCH * g_size);
	bt->scratch = sd_xmalloc(g_size);
	return bt;
}

static void batch_free(struct batch *bt)
{
	free(bt->g);
	free(bt->g2);
	free(bt->scratch);
	free(bt->stacks);
	free(bt);
}

/* Read the N descriptors at GPS, then the stacks and descriptors again of
 * those parked (not running: a running one's stack is its thread's),
 * into BT: bt->iov[i].ok says whether descriptor i was read, bt->pre[i]
 * what read_one may take as read. Every range is checked against the
 * mappings by rtmem_readv; a stack copied lies within its goroutine's
 * own bounds (stack_span). */
static void batch_read(struct goread *r, struct batch *bt, const uint64_t *gps, size_t n)
{
	const struct sd_goruntime *rt = r->rt;
	size_t gs = bt->g_size, total = 0, ns = 0;
	for (size_t i = 0; i < n; i++)
		bt->iov[i] = (struct rtmem_iov){gps[i], bt->g + i * gs, gs, 0};
	rtmem_readv(&r->mem, bt->iov, n);
	for (size_t i = 0; i < n; i++) {
		const uint8_t *b = bt->g + i * gs;
		enum sd_go_status st;
		uint64_t pc, sp, bp;
		int cut;
		memset(&bt->pre[i], 0, sizeof(bt->pre[i]));
		bt->waiting[i] = NULL;
		if (!bt->iov[i].ok || map_status(rt, get(b, &rt->status), &st) <= 0 ||
		    st == SD_GO_RUNNING)
			continue;
		if (st == SD_GO_WAITING)
			bt->waiting[i] = b;
		saved_regs(rt, b, st, &pc, &sp, &bp);
		size_t len = pc ? stack_span(r, b, sp, &cut) : 0;
		if (!len || len > GO_BATCH_STACK - total)
			continue; /* none, or read alone */
		bt->pre[i].sp = sp;
		bt->pre[i].len = len;
		bt->pre[i].off = total;
		total += len;
		bt->at[ns++] = i;
	}
	golocks_prefetch(r->gw, gps, bt->waiting, gs, n);
	if (!ns)
		return;
	if (total > bt->stacks_cap) {
		free(bt->stacks);
		bt->stacks_cap = total;
		bt->stacks = sd_xmalloc(total);
	}
	for (size_t k = 0; k < ns; k++) {
		struct pre *p = &bt->pre[bt->at[k]];
		bt->iov2[k] = (struct rtmem_iov){p->sp, bt->stacks + p->off, p->len, 0};
	}
	rtmem_readv(&r->mem, bt->iov2, ns);
	/* The descriptors again, of the goroutines whose stack came. */
	size_t nr = 0;
	for (size_t k = 0; k < ns; k++)
		if (bt->iov2[k].ok)
			bt->at[nr++] = bt->at[k];
	for (size_t k = 0; k < nr; k++)
		bt->iov2[k] = (struct rtmem_iov){gps[bt->at[k]], bt->g2 + bt->at[k] * gs, gs, 0};
	rtmem_readv(&r->mem, bt->iov2, nr);
	for (size_t k = 0; k < nr; k++) {
		struct pre *p = &bt->pre[bt->at[k]];
		if (bt->iov2[k].ok) {
			p->stack = bt->stacks + p->off;
			p->b2 = bt->g2 + bt->at[k] * gs;
		}
	}
}

void goroutines_read(struct sd_goruntime **rtp, struct sd_space *sp, struct sd_unwinder *u,
		     struct sd_symbols *sym, struct sd_snapshot *s, const struct go_read_opts *o)
{
	struct sd_tmod *exe = NULL;
	for (size_t i = 0; i < sp->nmods && s->exe; i++)
		if (sp->mods[i].path && !strcmp(sp->mods[i].path, s->exe))
			exe = &sp->mods[i];
	if (!exe)
		return;
	uint64_t t0 = sd_now_ns();
	struct sd_goruntime *rt = runtime_for(rtp, exe);
	if (rt->state == -1)
		return;
	s->go_read = 1;
	if (*rt->version)
		s->go_version = strpool_intern(s->pool, rt->version);
	if (rt->state < 0) {
		s->go_note = strpool_intern(s->pool, rt->note);
		return;
	}
	/* A goroutine stopped by asynchronous preemption is in the callees
	 * of runtime.asyncPreempt, above the pc the signal interrupted. */
	unwind_pushed_return(u, rt->preempt_lo, rt->preempt_hi);
	struct goread r = {.rt = rt, .sp = sp, .u = u, .sym = sym, .s = s, .o = o};
	rtmem_space_init(&r.mem, sp);
	struct sd_error err = {0};
	if (rt->version_va) {
		char *v = NULL;
		if (rtmem_string(&r.mem, rt->d, rt->version_va, &rt->version_t, 40, &v, NULL, NULL) ==
			0 &&
		    v && !strncmp(v, "go", 2))
			s->go_version = strpool_intern(s->pool, v);
		free(v);
	}
	uint64_t arr = 0, len = 0, glen = 0;
	if (rtmem_slice(&r.mem, rt->d, rt->allgs_va, &rt->allgs_t, GO_MAX_GOROUTINES, &arr, &len,
			NULL, &err) < 0 ||
	    rtmem_uint(&r.mem, rt->allglen_va, 8, &glen, "runtime.allglen", &err) < 0) {
		char msg[600];
		snprintf(msg, sizeof(msg), "goroutines not shown: runtime.allgs: %s", err.msg);
		s->go_note = strpool_intern(s->pool, msg);
		rtmem_release(&r.mem);
		return;
	}
	/* allglen is published after the slice grows: read up to the smaller. */
	if (glen < len)
		len = glen;
	uint64_t *gps = sd_xmalloc((len ? len : 1) * sizeof(*gps));
	if (len && rtmem_read(&r.mem, arr, gps, len * 8, "runtime.allgs", &err) < 0) {
		char msg[600];
		snprintf(msg, sizeof(msg), "goroutines not shown: %s", err.msg);
		s->go_note = strpool_intern(s->pool, msg);
		free(gps);
		rtmem_release(&r.mem);
		return;
	}
	r.now_ns = sd_now_ns();
	read_reasons(&r);
	r.gw = golocks_begin(rt->gl, &r.mem);
	struct batch *bt = batch_new(rt->g_size);
	size_t cap = 0;
	for (uint64_t i0 = 0; i0 < len; i0 += GO_BATCH) {
		size_t n = len - i0 < GO_BATCH ? (size_t)(len - i0) : GO_BATCH;
		batch_read(&r, bt, gps + i0, n);
		for (size_t i = 0; i < n; i++) {
			struct sd_goroutine g;
			if (!bt->iov[i].ok) {
				r.unreadable++;
				continue;
			}
			if (read_one(&r, gps[i0 + i], &g, bt->g + i * rt->g_size, bt->scratch,
				     &bt->pre[i]) <= 0)
				continue;
			sd_grow(&s->goroutines, &cap, s->ngoroutines + 1, sizeof(*s->goroutines));
			s->goroutines[s->ngoroutines++] = g;
		}
	}
	batch_free(bt);
	golocks_end(r.gw, sym, s);
	rtmem_release(&r.mem);
	if (s->golocks_note) {
		char msg[900];
		snprintf(msg, sizeof(msg), "%.800s (Go %s)", s->golocks_note,
			 s->go_version ? s->go_version : "version unknown");
		s->golocks_note = strpool_intern(s->pool, msg);
	}
	for (size_t i = 0; i < s->ngoroutines; i++) {
		const struct sd_goroutine *g = &s->goroutines[i];
		if (!g->thread || (g->status != SD_GO_RUNNING && g->status != SD_GO_SYSCALL))
			continue;
		for (size_t k = 0; k < s->nthreads; k++)
			if (s->threads[k].tid == g->thread)
				s->threads[k].goid = g->id;
	}
	if (r.unreadable || r.unknown_status) {
		char msg[200];
		snprintf(msg, sizeof(msg), "%zu goroutine%s could not be read, %zu in a status not known",
			 r.unreadable, r.unreadable == 1 ? "" : "s", r.unknown_status);
		s->go_note = strpool_intern(s->pool, msg);
	}
	free(gps);
	free(r.reasons);
	free(r.ms);
	free(r.stack);
	s->go_us = (sd_now_ns() - t0) / 1000;
}
