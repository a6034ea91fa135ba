// SPDX-License-Identifier: MIT
// Profile aggregation: thread stacks of many snapshots merged into counts.
// Raw stacks (addresses) are remembered with the merged stack they made, so
// each distinct stack is symbolized once per run; later samples cost a lookup.
#include "profile.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/syscall.h>

#include "analyze.h"
#include "holders.h"
#include "locks.h"
#include "procfs.h"
#include "symbols.h"
#include "target.h"

/* A raw stack seen before: its addresses (with the flags that change how
 * they symbolize) in one target at one module generation. The key is (t,
 * modsig, words). */
struct rawslot {
	const struct sd_target *t;
	uint64_t modsig;           /* the target's modules when it was seen */
	uint64_t *words;
	size_t n;
	ssize_t stack;
	int idle_frames; /* IDLE_* bits: the frames look like an idle wait */
};

/* A thread's last raw stack, found again without hashing its frames when
 * the snapshot says they did not change (sd_thread.frames_token). */
struct memoslot {
	const struct sd_target *t;
	pid_t tid;
	uint64_t token, modsig;
	ssize_t stack;
	int idle_frames;
};

static int memo_eq(const void *entry, const void *key)
{
	const struct memoslot *m = entry, *k = key;
	return m->t == k->t && m->tid == k->tid;
}

static uint64_t memo_hash(const struct sd_target *t, pid_t tid)
{
	uint64_t h = ((uint64_t)(uintptr_t)t * 0x9e3779b97f4a7c15ull) ^ (uint64_t)(uint32_t)tid;
	return h ? h : 1;
}

static int raw_eq(const void *entry, const void *key)
{
	const struct rawslot *r = entry, *k = key;
	return r->t == k->t && r->modsig == k->modsig && r->n == k->n &&
	       !memcmp(r->words, k->words, k->n * sizeof(*k->words));
}

/* A merged stack looked up by its key words; the stacks index holds
 * indices into p->stacks. */
struct stackkey {
	const struct sd_profile *p;
	const uint64_t *key;
	size_t nkey;
};

static int stack_eq(const void *entry, const void *key)
{
	const struct stackkey *k = key;
	const struct sd_pstack *st = &k->p->stacks[*(const size_t *)entry];
	return st->nkey == k->nkey && !memcmp(st->key, k->key, k->nkey * sizeof(*k->key));
}

void profile_opts_init(struct sd_profile_opts *o)
{
	memset(o, 0, sizeof(*o));
}

struct sd_profile *profile_new(const struct sd_profile_opts *o)
{
	struct sd_profile *p = sd_xcalloc(1, sizeof(*p));
	if (o)
		p->opts = *o;
	p->pool = strpool_new();
	hashmap_init(&p->raw, sizeof(struct rawslot));
	hashmap_reserve(&p->raw, 512);
	hashmap_init(&p->index, sizeof(size_t));
	hashmap_init(&p->memo, sizeof(struct memoslot));
	return p;
}

void profile_free(struct sd_profile *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nstacks; i++) {
		free(p->stacks[i].frames);
		for (size_t k = 0; k < p->stacks[i].nthreads; k++)
			free(p->stacks[i].threads[k].tids);
		free(p->stacks[i].threads);
		free(p->stacks[i].key);
	}
	free(p->stacks);
	for (size_t i = 0; i < p->nprocs; i++)
		free(p->procs[i].modules);
	free(p->procs);
	for (size_t i = 0; i < p->nlocks; i++)
		free(p->locks[i].holders);
	free(p->locks);
	size_t pos = 0;
	for (struct rawslot *r; (r = hashmap_next(&p->raw, &pos));)
		free(r->words);
	hashmap_release(&p->raw);
	hashmap_release(&p->memo);
	free(p->memo_at);
	free(p->sigs);
	hashmap_release(&p->index);
	strpool_free(p->pool);
	free(p);
}

char *profile_thread_family(const char *name, char *buf, size_t size)
{
	size_t o = 0;
	if (!size)
		return buf;
	for (const char *c = name ? name : ""; *c && o + 1 < size; c++) {
		if (isdigit((unsigned char)*c)) {
			while (isdigit((unsigned char)c[1]))
				c++;
			buf[o++] = '*';
		} else {
			buf[o++] = *c;
		}
	}
	buf[o] = '\0';
	return buf;
}

const char *profile_frame_name(struct sd_profile *p, const struct sd_pframe *f)
{
	char buf[64];
	if (f->function && !p->opts.by_address)
		return strpool_intern(p->pool, f->function);
	struct strbuf sb;
	strbuf_init(&sb);
	if (f->function) {
		strbuf_adds(&sb, f->function);
		if (!(f->flags & SD_FRAME_INLINED) && f->symoff) {
			snprintf(buf, sizeof(buf), "+0x%" PRIx64, f->symoff);
			strbuf_adds(&sb, buf);
		}
	} else if (f->module) {
		strbuf_addf(&sb, "[%s", f->module);
		if (p->opts.by_address) {
			snprintf(buf, sizeof(buf), "+0x%" PRIx64, f->offset);
			strbuf_adds(&sb, buf);
		}
		strbuf_adds(&sb, "]");
	} else if (p->opts.by_address && f->pc) {
		snprintf(buf, sizeof(buf), "[0x%" PRIx64 "]", f->pc);
		strbuf_adds(&sb, buf);
	} else {
		strbuf_adds(&sb, "[unknown]");
	}
	const char *r = strpool_intern(p->pool, sb.buf ? sb.buf : "");
	strbuf_release(&sb);
	return r;
}

/* ---- idle threads ---- */

static int idle_syscall(long nr, char state)
{
	switch (nr) {
	case 0:   /* read */
	case 45:  /* recvfrom */
	case 47:  /* recvmsg */
	case 299: /* recvmmsg */
		/* Waiting for input on a socket or pipe; D state is disk. */
		return state == 'S';
	case 7:   /* poll */
	case 23:  /* select */
	case 34:  /* pause */
	case 35:  /* nanosleep */
	case 43:  /* accept */
	case 61:  /* wait4 */
	case 69:  /* msgrcv */
	case 128: /* rt_sigtimedwait */
	case 130: /* rt_sigsuspend */
	case 208: /* io_getevents */
	case 230: /* clock_nanosleep */
	case 232: /* epoll_wait */
	case 247: /* waitid */
	case 270: /* pselect6 */
	case 271: /* ppoll */
	case 281: /* epoll_pwait */
	case 288: /* accept4 */
	case 333: /* io_pgetevents */
	case 441: /* epoll_pwait2 */
		return 1;
	default:
		return 0;
	}
}

enum {
	IDLE_NEAR = 1, /* an idle wait in the innermost few frames */
	IDLE_LEAF = 2, /* the innermost frame is the wait itself */
};

/* FN without glibc's internal prefixes (__GI___poll, __libc_accept...). */
static const char *plain_name(const char *fn)
{
	while (*fn == '_')
		fn++;
	if (!strncmp(fn, "GI_", 3))
		fn += 3;
	while (*fn == '_')
		fn++;
	if (!strncmp(fn, "libc_", 5))
		fn += 5;
	return fn;
}

/* Function names of the waits that mean "nothing to do". */
static int idle_function(const char *fn)
{
	static const char *const exact[] = {
	    "poll", "ppoll", "select", "pselect", "pselect6", "epoll_wait", "epoll_pwait",
	    "epoll_pwait2", "accept", "accept4", "pause", "nanosleep", "clock_nanosleep",
	    "sleep", "usleep", "sigtimedwait", "sigwaitinfo", "sigwait", "sigsuspend", "wait4",
	    "waitpid", "waitid", "pthread_join", "pthread_clockjoin_np", "pthread_timedjoin_np",
	    "std::thread::park", "std::thread::sleep",
	};
	if (!fn)
		return 0;
	fn = plain_name(fn);
	for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
		if (!strcmp(fn, exact[i]))
			return 1;
	return !strncmp(fn, "pthread_cond_", 13) || strstr(fn, "condition_variable::wait") ||
	       strstr(fn, "ondvar::wait") || strstr(fn, "thread::park");
}

static int idle_frames(const struct sd_pframe *frames, size_t n)
{
	/* The wait is made in the innermost few frames (the libc wrapper and
	 * its caller); deeper frames say nothing about the wait itself. */
	for (size_t i = 0, real = 0; i < n && real < 4; i++) {
		if (idle_function(frames[i].function))
			return IDLE_NEAR | (i == 0 ? IDLE_LEAF : 0);
		if (!(frames[i].flags & SD_FRAME_INLINED))
			real++;
	}
	return 0;
}

/* On a CPU (or waiting for one) by its state. */
static int running(const struct sd_thread *th)
{
	return th->wait.kind == SD_WAIT_RUNNING || th->wait.kind == SD_WAIT_RUNNABLE ||
	       (th->wait.kind == SD_WAIT_NONE && (th->state == 'R' || th->running));
}

/* On a CPU for the profile. A thread that "runs" with its innermost frame
 * in a blocking wait (pause, nanosleep, epoll_wait...) is on its way back
 * into the wait: our previous freeze interrupted the call and the kernel is
 * restarting it. That is time off CPU the program asked for, not work. */
static int on_cpu(const struct sd_thread *th, int frames_idle)
{
	return running(th) && !(frames_idle & IDLE_LEAF);
}

static int idle_wait(const struct sd_thread *th, int frames_idle)
{
	if (running(th))
		return (frames_idle & IDLE_LEAF) != 0;
	switch (th->wait.kind) {
	case SD_WAIT_CONDVAR:
	case SD_WAIT_RUST_CONDVAR:
	case SD_WAIT_IDLE:
	case SD_WAIT_JOIN:
		return 1;
	case SD_WAIT_MUTEX:
	case SD_WAIT_RWLOCK_READ:
	case SD_WAIT_RWLOCK_WRITE:
	case SD_WAIT_RUST_MUTEX:
	case SD_WAIT_RUST_RWLOCK:
	case SD_WAIT_MONITOR:
	case SD_WAIT_SEMAPHORE:
	case SD_WAIT_DISK:
		return 0; /* contention and I/O are what off-CPU profiles are for */
	default:
		break;
	}
	if (th->syscall_nr >= 0 && idle_syscall(th->syscall_nr, th->state))
		return 1;
	/* An unnamed futex or restart_syscall: the frames tell. */
	return frames_idle;
}

int profile_thread_idle(const struct sd_thread *th, const struct sd_pframe *frames, size_t n)
{
	return idle_wait(th, idle_frames(frames, n));
}

/* ---- merged stacks ---- */

static void stack_key(struct sd_profile *p, const struct sd_pframe *f, size_t n, uint64_t **key,
		      size_t *nkey)
{
	size_t per = p->opts.by_address ? 2 : 1;
	uint64_t *k = sd_xmalloc((n ? n : 1) * per * sizeof(*k));
	for (size_t i = 0; i < n; i++) {
		k[i * per] = (uint64_t)(uintptr_t)f[i].name;
		if (per == 2)
			k[i * per + 1] = f[i].offset;
	}
	*key = k;
	*nkey = n * per;
}

/* Index every stack again (their places changed). */
static void index_rebuild(struct sd_profile *p)
{
	hashmap_release(&p->index);
	hashmap_reserve(&p->index, p->nstacks);
	for (size_t i = 0; i < p->nstacks; i++) {
		struct stackkey k = {p, p->stacks[i].key, p->stacks[i].nkey};
		*(size_t *)hashmap_put(&p->index, p->stacks[i].key_hash, &k, stack_eq, NULL) = i;
	}
}

/* The stack with frames F (names and strings already in P's pool), made
 * if new. */
static ssize_t stack_get(struct sd_profile *p, struct sd_pframe *f, size_t n, pid_t pid)
{
	uint64_t *key;
	size_t nkey;
	stack_key(p, f, n, &key, &nkey);
	/* The hash also orders stacks of equal counts (cmp_stack). */
	uint64_t h = sd_hash(key, nkey * sizeof(*key), n);
	struct stackkey k = {p, key, nkey};
	int found;
	size_t *slot = hashmap_put(&p->index, h, &k, stack_eq, &found);
	if (found) {
		free(key);
		return (ssize_t)*slot;
	}
	*slot = p->nstacks;
	sd_grow(&p->stacks, &p->scap, p->nstacks + 1, sizeof(*p->stacks));
	struct sd_pstack *st = &p->stacks[p->nstacks];
	memset(st, 0, sizeof(*st));
	st->frames = sd_xmalloc((n ? n : 1) * sizeof(*f));
	memcpy(st->frames, f, n * sizeof(*f));
	st->nframes = n;
	st->key = key;
	st->nkey = nkey;
	st->key_hash = h;
	st->pid = pid;
	p->sorted = 0;
	return (ssize_t)p->nstacks++;
}

static void frame_intern(struct sd_profile *p, struct sd_pframe *d, const struct sd_pframe *s)
{
	*d = *s;
	d->function = strpool_intern(p->pool, s->function);
	d->module = strpool_intern(p->pool, s->module);
	d->build_id = strpool_intern(p->pool, s->build_id);
	d->file = strpool_intern(p->pool, s->file);
	d->name = profile_frame_name(p, d);
}

static void stack_count(struct sd_profile *p, struct sd_pstack *st, uint64_t count,
			uint64_t on, pid_t pid, pid_t tid, const char *name, const char *state)
{
	char fam[64];
	st->count += count;
	st->on_cpu += on;
	if (p->opts.group_threads)
		name = strpool_intern(p->pool, profile_thread_family(name, fam, sizeof(fam)));
	/* Samples come in thread order, the order the stack's threads were
	 * added in: the one after the last match is looked at first, so a
	 * stack shared by a thousand sleepers costs a compare, not a scan. */
	struct sd_pthread *pt = NULL;
	for (size_t k = 0; k < st->nthreads && !pt; k++) {
		size_t i = (st->next_thread + k) % st->nthreads;
		struct sd_pthread *x = &st->threads[i];
		if (x->pid == pid &&
		    (p->opts.group_threads ? x->name == name : x->tid == tid))
			pt = x;
	}
	if (!pt) {
		sd_grow(&st->threads, &st->tcap, st->nthreads + 1, sizeof(*st->threads));
		pt = &st->threads[st->nthreads++];
		memset(pt, 0, sizeof(*pt));
		pt->pid = pid;
		pt->tid = p->opts.group_threads ? 0 : tid;
	}
	/* The thread's latest name (it may rename itself). */
	pt->name = name;
	if (!p->opts.group_threads) {
		pt->ntids = 1;
	} else if (tid > 0) {
		size_t k = 0;
		while (k < pt->ntids && pt->tids[k] != tid)
			k++;
		if (k == pt->ntids) {
			sd_grow(&pt->tids, &pt->tidcap, pt->ntids + 1, sizeof(*pt->tids));
			pt->tids[pt->ntids++] = tid;
		}
	}
	st->next_thread = (size_t)(pt - st->threads) + 1;
	pt->count += count;
	pt->on_cpu += on;
	if (state) {
		int k;
		for (k = 0; k < SD_PSTACK_STATES && st->states[k].what; k++)
			if (st->states[k].what == state)
				break;
		if (k == SD_PSTACK_STATES) {
			/* Too many kinds: the last bucket becomes "other". */
			k = SD_PSTACK_STATES - 1;
			st->states[k].what = strpool_intern(p->pool, "other");
		}
		if (!st->states[k].what)
			st->states[k].what = state;
		st->states[k].count += count;
	}
}

ssize_t profile_add_stack(struct sd_profile *p, const struct sd_pframe *frames, size_t n,
			  uint64_t count, uint64_t on, pid_t pid, pid_t tid, const char *name,
			  const char *state)
{
	struct sd_pframe *f = sd_xmalloc((n ? n : 1) * sizeof(*f));
	for (size_t i = 0; i < n; i++)
		frame_intern(p, &f[i], &frames[i]);
	ssize_t idx = stack_get(p, f, n, pid);
	free(f);
	stack_count(p, &p->stacks[idx], count, on, pid, tid,
		    strpool_intern(p->pool, name ? name : ""), strpool_intern(p->pool, state));
	p->thread_samples += count;
	p->on_cpu += on;
	return idx;
}

/* ---- raw stacks ---- */

/* Symbolize the raw frames of TH into merged stack of P. */
static ssize_t symbolize_stack(struct sd_profile *p, struct sd_target *t, struct sd_snapshot *s,
			       const struct sd_thread *th, int *idle)
{
	struct sd_thread tmp;
	memset(&tmp, 0, sizeof(tmp));
	tmp.tid = th->tid;
	tmp.frames = sd_xmalloc(th->nframes * sizeof(*th->frames));
	memcpy(tmp.frames, th->frames, th->nframes * sizeof(*th->frames));
	tmp.nframes = th->nframes;
	uint64_t t0 = sd_now_us();
	struct timespec c0, c1;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
	symbols_thread(t->sym, s, &tmp, p->opts.no_inline, p->opts.no_source);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
	p->symbolize_us += sd_now_us() - t0;
	p->symbolize_cpu_ns += (uint64_t)((c1.tv_sec - c0.tv_sec) * 1000000000ll +
					  (c1.tv_nsec - c0.tv_nsec));
	struct sd_pframe *f = sd_xmalloc((tmp.nframes ? tmp.nframes : 1) * sizeof(*f));
	for (size_t i = 0; i < tmp.nframes; i++) {
		const struct sd_frame *sf = &tmp.frames[i];
		struct sd_pframe pf = {
		    .function = sf->function, .module = sf->module, .build_id = sf->build_id,
		    .file = sf->file, .pc = sf->pc, .offset = sf->offset, .symoff = sf->symoff,
		    .line = sf->line, .flags = sf->flags,
		};
		frame_intern(p, &f[i], &pf);
	}
	*idle = idle_frames(f, tmp.nframes);
	ssize_t idx = stack_get(p, f, tmp.nframes, s->pid);
	free(f);
	free(tmp.frames);
	return idx;
}

/* A signature of T's executable modules (where each is, which ELF image).
 * Raw addresses mean the same code while it holds. The module generation
 * alone would do, but it also moves when only anonymous mappings change
 * (malloc arenas, thread stacks), which would throw the cache away. */
static uint64_t modules_signature(struct sd_profile *p, const struct sd_target *t)
{
	for (size_t i = 0; i < p->nsigs; i++)
		if (p->sigs[i].t == t) {
			if (p->sigs[i].generation == t->generation)
				return p->sigs[i].sig;
			break;
		}
	uint64_t h = 0x5d;
	const struct sd_space *sp = &t->space;
	for (size_t i = 0; i < sp->nmods; i++) {
		uint64_t w[4] = {sp->mods[i].start, sp->mods[i].end, sp->mods[i].bias,
				 (uint64_t)(uintptr_t)sp->mods[i].elf};
		h = sd_hash(w, sizeof(w), h);
	}
	size_t i = 0;
	while (i < p->nsigs && p->sigs[i].t != t)
		i++;
	if (i == p->nsigs)
		sd_grow(&p->sigs, &p->sigcap, ++p->nsigs, sizeof(*p->sigs));
	p->sigs[i].t = t;
	p->sigs[i].generation = t->generation;
	p->sigs[i].sig = h;
	return h;
}

/* raw_lookup's search by the frames themselves. */
static ssize_t raw_find(struct sd_profile *p, struct sd_target *t, struct sd_snapshot *s,
			const struct sd_thread *th, uint64_t sig, int *idle)
{
	size_t n = th->nframes;
	uint64_t *w = sd_xmalloc((n ? n : 1) * sizeof(*w));
	for (size_t i = 0; i < n; i++)
		w[i] = th->frames[i].pc ^
		       ((uint64_t)(th->frames[i].flags & (SD_FRAME_EXACT | SD_FRAME_SIGNAL)) << 60);
	uint64_t h = sd_hash(w, n * sizeof(*w), (uint64_t)(uintptr_t)t ^ sig);
	p->raw_lookups++;
	struct rawslot k = {.t = t, .modsig = sig, .words = w, .n = n};
	int found;
	struct rawslot *r = hashmap_put(&p->raw, h, &k, raw_eq, &found);
	if (found) {
		p->raw_hits++;
		free(w);
		*idle = r->idle_frames;
		return r->stack;
	}
	*r = k;
	/* Symbolizing puts nothing in p->raw: R stays where it is. */
	r->stack = symbolize_stack(p, t, s, th, &r->idle_frames);
	*idle = r->idle_frames;
	return r->stack;
}

/* The stack of TH's raw frames: the thread's last one when its frames
 * token says they did not change, else found by the frames. AT is TH's
 * place in S: a thread is mostly where it was in the last snapshot, and
 * looking there first reads the memo in order. */
static ssize_t raw_lookup(struct sd_profile *p, struct sd_target *t, struct sd_snapshot *s,
			  const struct sd_thread *th, size_t at, int *idle)
{
	uint64_t sig = modules_signature(p, t);
	if (at >= p->nmemo_at) {
		size_t n = s->nthreads > at ? s->nthreads : at + 1;
		p->memo_at = sd_xrealloc(p->memo_at, n * sizeof(*p->memo_at));
		memset(p->memo_at + p->nmemo_at, 0, (n - p->nmemo_at) * sizeof(*p->memo_at));
		p->nmemo_at = n;
	}
	struct memoslot *ma = &p->memo_at[at];
	struct memoslot mk = {.t = t, .tid = th->tid};
	uint64_t mh = memo_hash(t, th->tid);
	if (th->frames_token) {
		const struct memoslot *m = ma;
		if (m->t != t || m->tid != th->tid)
			m = hashmap_find(&p->memo, mh, &mk, memo_eq);
		if (m && m->token == th->frames_token && m->modsig == sig) {
			p->raw_lookups++;
			p->raw_hits++;
			*idle = m->idle_frames;
			if (m != ma)
				*ma = *m;
			return m->stack;
		}
	}
	ssize_t idx = raw_find(p, t, s, th, sig, idle);
	mk.token = th->frames_token;
	mk.modsig = sig;
	mk.stack = idx;
	mk.idle_frames = *idle;
	if (th->frames_token) {
		int found;
		*(struct memoslot *)hashmap_put(&p->memo, mh, &mk, memo_eq, &found) = mk;
		*ma = mk;
	} else if (ma->t == t && ma->tid == th->tid) {
		ma->t = NULL; /* no token: nothing to find by it */
	}
	return idx;
}

/* A stack from already symbolized frames (a loaded snapshot). */
static ssize_t cooked_lookup(struct sd_profile *p, struct sd_snapshot *s,
			     const struct sd_thread *th, int *idle)
{
	struct sd_pframe *f = sd_xmalloc((th->nframes ? th->nframes : 1) * sizeof(*f));
	for (size_t i = 0; i < th->nframes; i++) {
		const struct sd_frame *sf = &th->frames[i];
		struct sd_pframe pf = {
		    .function = sf->function, .module = sf->module, .build_id = sf->build_id,
		    .file = sf->file, .pc = sf->pc, .offset = sf->offset, .symoff = sf->symoff,
		    .line = sf->line, .flags = sf->flags,
		};
		frame_intern(p, &f[i], &pf);
	}
	*idle = idle_frames(f, th->nframes);
	ssize_t idx = stack_get(p, f, th->nframes, s->pid);
	free(f);
	return idx;
}

/* ---- processes and locks ---- */

struct sd_pproc *profile_proc_get(struct sd_profile *p, struct sd_snapshot *s)
{
	for (size_t i = 0; i < p->nprocs; i++)
		if (p->procs[i].pid == s->pid)
			return &p->procs[i];
	sd_grow(&p->procs, &p->pcap, p->nprocs + 1, sizeof(*p->procs));
	struct sd_pproc *pr = &p->procs[p->nprocs++];
	memset(pr, 0, sizeof(*pr));
	pr->pid = s->pid;
	pr->comm = strpool_intern(p->pool, s->comm ? s->comm : "");
	return pr;
}

void profile_proc_modules(struct sd_profile *p, struct sd_pproc *pr, const struct sd_snapshot *s)
{
	for (size_t i = 0; i < s->nmodules; i++) {
		const struct sd_module *m = &s->modules[i];
		int seen = 0;
		for (size_t k = 0; k < pr->nmodules && !seen; k++)
			seen = pr->modules[k].start == m->start && pr->modules[k].end == m->end &&
			       !strcmp(pr->modules[k].path, m->path);
		if (seen)
			continue;
		sd_grow(&pr->modules, &pr->modcap, pr->nmodules + 1, sizeof(*pr->modules));
		struct sd_module *d = &pr->modules[pr->nmodules++];
		*d = *m;
		d->name = strpool_intern(p->pool, m->name);
		d->path = strpool_intern(p->pool, m->path);
		d->build_id = strpool_intern(p->pool, m->build_id);
	}
}

static int is_lock_wait(enum sd_wait_kind k)
{
	switch (k) {
	case SD_WAIT_MUTEX:
	case SD_WAIT_RWLOCK_READ:
	case SD_WAIT_RWLOCK_WRITE:
	case SD_WAIT_RUST_MUTEX:
	case SD_WAIT_RUST_RWLOCK:
	case SD_WAIT_FUTEX:
		return 1;
	default:
		return 0;
	}
}

static struct sd_plock *lock_get(struct sd_profile *p, pid_t pid, const struct sd_wait *w)
{
	for (size_t i = 0; i < p->nlocks; i++) {
		struct sd_plock *l = &p->locks[i];
		if (l->pid == pid && l->address == w->address) {
			/* A better name from a later sample wins over "futex". */
			if (l->kind == SD_WAIT_FUTEX && w->kind != SD_WAIT_FUTEX)
				l->kind = w->kind;
			if (!l->symbol && w->symbol)
				l->symbol = strpool_intern(p->pool, w->symbol);
			return l;
		}
	}
	sd_grow(&p->locks, &p->lcap, p->nlocks + 1, sizeof(*p->locks));
	struct sd_plock *l = &p->locks[p->nlocks++];
	memset(l, 0, sizeof(*l));
	l->pid = pid;
	l->address = w->address;
	l->kind = w->kind;
	l->symbol = strpool_intern(p->pool, w->symbol);
	return l;
}

static void lock_holder(struct sd_plock *l, ssize_t stack, const char *name)
{
	for (size_t i = 0; i < l->nholders; i++)
		if (l->holders[i].stack == stack && l->holders[i].name == name) {
			l->holders[i].count++;
			return;
		}
	sd_grow(&l->holders, &l->hcap, l->nholders + 1, sizeof(*l->holders));
	struct sd_pholder *h = &l->holders[l->nholders++];
	h->stack = stack;
	h->name = name;
	h->count = 1;
}

static void locks_sample(struct sd_profile *p, struct sd_snapshot *s, const ssize_t *groups)
{
	char buf[96];
	for (size_t i = 0; i < s->nthreads; i++) {
		const struct sd_wait *w = &s->threads[i].wait;
		if (!is_lock_wait(w->kind) || !w->address)
			continue;
		/* Count each address once, at its first waiter. */
		int first = 1;
		for (size_t k = 0; k < i && first; k++)
			first = !(is_lock_wait(s->threads[k].wait.kind) &&
				  s->threads[k].wait.address == w->address);
		if (!first)
			continue;
		uint64_t n = 0;
		pid_t owner = 0;
		for (size_t k = i; k < s->nthreads; k++) {
			const struct sd_wait *o = &s->threads[k].wait;
			if (is_lock_wait(o->kind) && o->address == w->address) {
				n++;
				if (!owner && o->owner > 0)
					owner = o->owner;
			}
		}
		struct sd_plock *l = lock_get(p, s->pid, w);
		l->contended++;
		l->waiters += n;
		if (n > l->max_waiters)
			l->max_waiters = n;
		ssize_t hs = -1;
		const char *hname;
		if (owner <= 0) {
			hname = strpool_intern(p->pool, "(holder unknown)");
		} else {
			const struct sd_thread *h = NULL;
			size_t hi = 0;
			for (size_t k = 0; k < s->nthreads && !h; k++)
				if (s->threads[k].tid == owner) {
					h = &s->threads[k];
					hi = k;
				}
			if (!h) {
				snprintf(buf, sizeof(buf), "(holder %d not sampled)", (int)owner);
				hname = strpool_intern(p->pool, buf);
			} else {
				hs = groups[hi];
				char fam[64];
				hname = strpool_intern(p->pool,
						       p->opts.group_threads
							   ? profile_thread_family(h->name, fam, sizeof(fam))
							   : (h->name ? h->name : ""));
			}
		}
		lock_holder(l, hs, hname);
	}
}

static const char *state_of(struct sd_profile *p, const struct sd_thread *th,
			    const struct sd_pstack *st, int frames_idle)
{
	if (running(th) && (frames_idle & IDLE_LEAF) && st->nframes && st->frames[0].function)
		return strpool_intern(p->pool, plain_name(st->frames[0].function));
	if (th->wait.kind >= SD_WAIT_MUTEX && th->wait.kind < SD_WAIT__COUNT)
		return strpool_intern(p->pool, sd_wait_kind_name(th->wait.kind));
	/* Frames are symbolized here, not in TH: name a restart from them. */
	const char *t = th->syscall_nr == SYS_restart_syscall && st->nframes
				? analyze_restart_name(st->frames[0].function)
				: NULL;
	if (!t)
		t = analyze_state_text(th);
	return strpool_intern(p->pool, t && *t ? t : "sleeping");
}

/* One more sample of ST by a thread holding what HD says others wait on. */
static void hold_mark(struct sd_profile *p, struct sd_pstack *st, const struct sd_holder *hd)
{
	char buf[256];
	if (hd->symbol)
		snprintf(buf, sizeof(buf), "holds %s <%s>, %zu waiter%s", locks_kind_name(hd->kind),
			 hd->symbol, hd->nwaiters, hd->nwaiters == 1 ? "" : "s");
	else
		snprintf(buf, sizeof(buf), "holds %s 0x%llx, %zu waiter%s", locks_kind_name(hd->kind),
			 (unsigned long long)hd->address, hd->nwaiters, hd->nwaiters == 1 ? "" : "s");
	st->held++;
	st->hold_note = strpool_intern(p->pool, buf);
}

void profile_add_snapshot(struct sd_profile *p, struct sd_target *t, struct sd_snapshot *s,
			  ssize_t *groups)
{
	struct sd_pproc *pr = profile_proc_get(p, s);
	pr->samples++;
	profile_proc_modules(p, pr, s);
	if (!p->start_time)
		p->start_time = s->time;
	p->capture_us += s->capture_us;
	p->unwind_us += s->unwind_us;
	p->pause_us += s->pause_us;
	/* Modules indexed by the prefetch thread: work done once, as the
	 * first symbolization of a stack is. */
	p->symbolize_cpu_ns += t ? symbols_prefetch_cpu_take(t->sym) : 0;
	if (s->pause_us > p->max_pause_us)
		p->max_pause_us = s->pause_us;
	p->nfrozen += s->nfrozen;
	p->nasleep += s->nasleep;
	p->nreused += s->nreused;
	p->nretried += s->nretried;
	p->nregstops += s->nregstops;
	p->nrbp_inferred += s->nrbp_inferred;
	if (s->proof)
		p->proof = s->proof;
	ssize_t *g = groups ? groups : sd_xmalloc((s->nthreads ? s->nthreads : 1) * sizeof(*g));
	struct sd_holder *hv = NULL; /* a holder is the story, never idle */
	size_t nh = holders_of(t && !t->core ? t->pid : 0, s, &hv);
	for (size_t i = 0; i < s->nthreads; i++) {
		struct sd_thread *th = &s->threads[i];
		g[i] = -1;
		if (!th->nframes && th->io_worker) {
			p->io_workers++;
			continue;
		}
		if (!th->nframes) {
			p->lost++;
			continue;
		}
		int fidle = 0;
		ssize_t idx =
		    t ? raw_lookup(p, t, s, th, i, &fidle) : cooked_lookup(p, s, th, &fidle);
		g[i] = idx;
		int on = on_cpu(th, fidle);
		if ((p->opts.cpu == SD_CPU_ON && !on) || (p->opts.cpu == SD_CPU_OFF && on)) {
			p->filtered++;
			continue;
		}
		if (p->opts.no_idle && idle_wait(th, fidle) && !holders_find(hv, nh, th->tid)) {
			p->filtered++;
			p->idle++;
			continue;
		}
		stack_count(p, &p->stacks[idx], 1, on ? 1 : 0, s->pid, th->tid,
			    strpool_intern(p->pool, th->name ? th->name : ""), state_of(p, th, &p->stacks[idx], fidle));
		const struct sd_holder *hd = holders_find(hv, nh, th->tid);
		if (hd)
			hold_mark(p, &p->stacks[idx], hd);
		p->thread_samples++;
		p->on_cpu += on ? 1 : 0;
	}
	free(hv);
	if (p->opts.locks)
		locks_sample(p, s, g);
	if (g != groups)
		free(g);
}

/* ---- sorting ---- */

static int cmp_stack(const void *a, const void *b)
{
	const struct sd_pstack *x = a, *y = b;
	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	/* Diffs: stacks only in A sort by their A count. */
	if (x->value_a != y->value_a)
		return x->value_a < y->value_a ? 1 : -1;
	return (x->key_hash > y->key_hash) - (x->key_hash < y->key_hash);
}

struct order {
	size_t old;
	struct sd_pstack st;
};

static int cmp_order(const void *a, const void *b)
{
	return cmp_stack(&((const struct order *)a)->st, &((const struct order *)b)->st);
}

void profile_sort(struct sd_profile *p)
{
	if (p->sorted)
		return;
	struct order *o = sd_xmalloc((p->nstacks ? p->nstacks : 1) * sizeof(*o));
	for (size_t i = 0; i < p->nstacks; i++) {
		o[i].old = i;
		o[i].st = p->stacks[i];
	}
	sd_sort(o, p->nstacks, sizeof(*o), cmp_order);
	ssize_t *map = sd_xmalloc((p->nstacks ? p->nstacks : 1) * sizeof(*map));
	for (size_t i = 0; i < p->nstacks; i++) {
		p->stacks[i] = o[i].st;
		map[o[i].old] = (ssize_t)i;
	}
	size_t pos = 0;
	for (struct rawslot *r; (r = hashmap_next(&p->raw, &pos));)
		if (r->stack >= 0)
			r->stack = map[r->stack];
	pos = 0;
	for (struct memoslot *m; (m = hashmap_next(&p->memo, &pos));)
		if (m->stack >= 0)
			m->stack = map[m->stack];
	for (size_t i = 0; i < p->nmemo_at; i++)
		if (p->memo_at[i].t && p->memo_at[i].stack >= 0)
			p->memo_at[i].stack = map[p->memo_at[i].stack];
	for (size_t i = 0; i < p->nlocks; i++)
		for (size_t k = 0; k < p->locks[i].nholders; k++)
			if (p->locks[i].holders[k].stack >= 0)
				p->locks[i].holders[k].stack = map[p->locks[i].holders[k].stack];
	free(map);
	free(o);
	index_rebuild(p);
	p->sorted = 1;
}

/* ---- flame tree ---- */

static struct sd_flame *flame_node(const char *name)
{
	struct sd_flame *f = sd_xcalloc(1, sizeof(*f));
	f->name = name;
	return f;
}

static struct sd_flame *flame_child(struct sd_flame *parent, const char *name)
{
	for (struct sd_flame *c = parent->child; c; c = c->next)
		if (c->name == name)
			return c;
	struct sd_flame *c = flame_node(name);
	c->next = parent->child;
	parent->child = c;
	parent->nchild++;
	return c;
}

static int cmp_flame_name(const void *a, const void *b)
{
	const struct sd_flame *x = *(struct sd_flame *const *)a, *y = *(struct sd_flame *const *)b;
	return strcmp(x->name, y->name);
}

static void flame_sort(struct sd_flame *f)
{
	if (f->nchild > 1) {
		struct sd_flame **v = sd_xmalloc(f->nchild * sizeof(*v));
		size_t n = 0;
		for (struct sd_flame *c = f->child; c; c = c->next)
			v[n++] = c;
		sd_sort(v, n, sizeof(*v), cmp_flame_name);
		for (size_t i = 0; i < n; i++)
			v[i]->next = i + 1 < n ? v[i + 1] : NULL;
		f->child = v[0];
		free(v);
	}
	for (struct sd_flame *c = f->child; c; c = c->next)
		flame_sort(c);
}

struct sd_flame *profile_flame(struct sd_profile *p)
{
	struct sd_flame *root = flame_node(strpool_intern(p->pool, "all"));
	for (size_t i = 0; i < p->nstacks; i++) {
		const struct sd_pstack *st = &p->stacks[i];
		if (!st->count && !st->value_a)
			continue;
		double d = (double)st->count - st->value_a;
		struct sd_flame *n = root;
		root->value += st->count;
		root->on_cpu += st->on_cpu;
		root->delta += d;
		for (size_t k = st->nframes; k-- > 0;) {
			n = flame_child(n, st->frames[k].name);
			n->value += st->count;
			n->on_cpu += st->on_cpu;
			n->delta += d;
			if (st->held) {
				n->held += st->held;
				n->hold_note = st->hold_note;
			}
		}
		n->self += st->count;
	}
	flame_sort(root);
	return root;
}

void profile_flame_free(struct sd_flame *f)
{
	while (f) {
		struct sd_flame *next = f->next;
		profile_flame_free(f->child);
		free(f);
		f = next;
	}
}
