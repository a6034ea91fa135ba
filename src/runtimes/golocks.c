// SPDX-License-Identifier: MIT
// Wait objects of goroutines (golocks.h). A goroutine blocked on a
// channel or in a select links its sudogs from g.waiting, one per channel
// (sudog.c); one blocked on a semaphore (sync.Mutex, RWMutex, WaitGroup,
// the runtime's own) has a sudog in the semaphore table, a treap per
// bucket keyed by the semaphore's address (sudog.elem), waiters on one
// address chained by waitlink. Which object a semaphore belongs to comes
// from the waiter's frames (sync.(*Mutex).lockSlow ...) and the object's
// layout from DWARF. Everything read is bounded and checked against the
// goroutines read: a sudog is believed only for a goroutine that waits.
#include "golocks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwtype.h"
#include "rtmem.h"
#include "symbols.h"

#define GL_MAX_SUDOGS (1u << 20)  /* semaphore table entries read at most */
#define GL_MAX_SELECT 4096	  /* sudogs of one goroutine's list */
#define GL_SUDOG_MAX 512	  /* bytes of a runtime.sudog, at most */

struct off {
	uint64_t off;
	int ok;
};

struct golocks_layout {
	char note[512];
	struct off g_waiting;
	uint64_t sudog_size;
	struct off sg_g, sg_next, sg_prev, sg_elem, sg_waitlink, sg_c;
	uint64_t semtab_va, semtab_n, semtab_stride;
	struct off semtab_treap;
	struct off mu_sema, mu_state, rw_w, rw_writer, rw_reader, wg_sema;
	struct off cond_head;   /* sync.Cond's notify.head: its waiters' sudogs */
	struct off cond_notify; /* sync.Cond's notify: what the runtime is handed */
	struct off cond_tail;   /* sync.Cond's notify.tail: its last waiter's sudog */
	uint64_t cond_size;
	int64_t mu_locked, mu_shift;
	int mu_consts;
};

/* A semaphore waiter of the table: its g and the semaphore's address. */
struct semw {
	uint64_t gp, elem;
};

struct gidx {
	uint64_t gp;
	size_t idx;
};

/* A goroutine waiting on an object, before objects are merged. */
struct wait {
	size_t idx;
	const char *kind;
	uint64_t addr;
	const char *mode;
};

/* A reference found in a goroutine's stack: the value, in which frame. */
struct hit {
	uint64_t value;
	size_t idx;
	int frame;
};

struct golocks {
	struct golocks_layout *l;
	struct rtmem *m;
	struct semw *sem;
	size_t nsem, csem;
	uint64_t *refs; /* sorted: the addresses holders may refer to */
	size_t nrefs;
	struct gidx *gs;
	size_t ngs, cgs;
	struct wait *waits;
	size_t nwaits, cwaits;
	struct hit *hits;
	size_t nhits, chits;
	size_t bad_sudogs;
	struct cond *conds; /* the sync.Conds whose waiter lists were read */
	size_t nconds, cconds;
	struct ahead *ahead; /* sudogs read ahead (golocks_prefetch), by address */
	size_t nahead, cahead;
	uint8_t *abuf;	     /* their bytes, sudog_size each */
	size_t acap;
};

/* A sudog read ahead: its address, its bytes at abuf + off. */
struct ahead {
	uint64_t addr;
	size_t off;
};

/* A sync.Cond candidate read once: its waiters' gs (sorted), or none
 * (not a Cond, or no list). */
struct cond {
	uint64_t addr;
	uint64_t *gps;
	size_t ngps;
};

static void note(struct golocks_layout *l, const char *what)
{
	size_t n = strlen(l->note);
	snprintf(l->note + n, sizeof(l->note) - n, "%s%s", n ? "; " : "", what);
}

static int member(struct dwt *d, const struct dwt_type *t, const char *path, struct off *o)
{
	o->ok = dwt_member(d, t, path, &o->off, NULL, NULL) == 0;
	return o->ok;
}

struct golocks_layout *golocks_learn(struct dwt *d, uint64_t bias, const struct dwt_type *g)
{
	struct golocks_layout *l = sd_xcalloc(1, sizeof(*l));
	struct dwt_type t, e;
	if (!member(d, g, "waiting", &l->g_waiting))
		note(l, "runtime.g has no field waiting: channels waited on are not shown");
	if (dwt_type(d, "runtime.sudog", &t, NULL) < 0 || !t.size || t.size > GL_SUDOG_MAX ||
	    !member(d, &t, "g", &l->sg_g) || !member(d, &t, "elem", &l->sg_elem) ||
	    !member(d, &t, "next", &l->sg_next) || !member(d, &t, "prev", &l->sg_prev) ||
	    !member(d, &t, "waitlink", &l->sg_waitlink)) {
		note(l, "runtime.sudog or one of its fields g, elem, next, prev, waitlink "
			      "not found: no wait object is shown");
		l->g_waiting.ok = 0;
		return l;
	}
	l->sudog_size = t.size;
	/* Pointer fields read from a copy of sudog_size bytes. */
	const struct off *in[] = {&l->sg_g, &l->sg_elem, &l->sg_next, &l->sg_prev, &l->sg_waitlink};
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++)
		if (in[i]->off > t.size - 8 || t.size < 8) {
			note(l, "runtime.sudog's fields lie outside it: no wait object is shown");
			l->g_waiting.ok = 0;
			l->sudog_size = 0;
			return l;
		}
	if (!member(d, &t, "c", &l->sg_c) || l->sg_c.off > t.size - 8) {
		note(l, "runtime.sudog has no field c: channels waited on are not shown");
		l->g_waiting.ok = 0;
	}
	uint64_t va;
	if (dwt_global(d, "runtime.semtable", &va, &t, NULL) < 0 ||
	    dwt_array(d, &t, &e, &l->semtab_n, NULL) < 0 || !e.size || l->semtab_n > 65536 ||
	    !member(d, &e, "root.treap", &l->semtab_treap)) {
		note(l, "runtime.semtable (an array of semaRoot with a treap) not found: "
			      "mutexes and WaitGroups waited on are not shown");
	} else if (l->semtab_treap.off + 8 > e.size) {
		note(l, "runtime.semtable's treap lies outside its entry: mutexes and WaitGroups "
			"waited on are not shown");
	} else {
		l->semtab_va = va + bias;
		l->semtab_stride = e.size;
	}
	/* sync.Mutex is {state, sema} (Go 1.19), {_, mu internal/sync.Mutex}
	 * later; RWMutex and WaitGroup are in the DWARF when the program
	 * uses them. */
	if (dwt_type(d, "sync.Mutex", &t, NULL) == 0) {
		if (!member(d, &t, "sema", &l->mu_sema))
			member(d, &t, "mu.sema", &l->mu_sema);
		if (!member(d, &t, "state", &l->mu_state))
			member(d, &t, "mu.state", &l->mu_state);
	}
	if (dwt_type(d, "sync.RWMutex", &t, NULL) == 0) {
		member(d, &t, "w", &l->rw_w);
		member(d, &t, "writerSem", &l->rw_writer);
		member(d, &t, "readerSem", &l->rw_reader);
	}
	/* sync.Cond waits in the runtime's notifyList (a copy in package
	 * sync): a list of sudogs from notify.head, chained by next. */
	if (dwt_type(d, "sync.Cond", &t, NULL) == 0 && member(d, &t, "notify.head", &l->cond_head) &&
	    member(d, &t, "notify", &l->cond_notify) && member(d, &t, "notify.tail", &l->cond_tail) &&
	    l->cond_head.off + 8 <= t.size && l->cond_tail.off + 8 <= t.size)
		l->cond_size = t.size;
	if (dwt_type(d, "sync.WaitGroup", &t, NULL) == 0 && !member(d, &t, "sema", &l->wg_sema))
		member(d, &t, "state2", &l->wg_sema); /* Go 1.19: {noCopy, state1, state2} */
	l->mu_consts = (dwt_const(d, "sync.mutexLocked", &l->mu_locked, NULL) == 0 &&
			dwt_const(d, "sync.mutexWaiterShift", &l->mu_shift, NULL) == 0) ||
		       (dwt_const(d, "internal/sync.mutexLocked", &l->mu_locked, NULL) == 0 &&
			dwt_const(d, "internal/sync.mutexWaiterShift", &l->mu_shift, NULL) == 0);
	if (l->mu_shift < 0 || l->mu_shift > 31)
		l->mu_consts = 0;
	return l;
}

const char *golocks_layout_note(const struct golocks_layout *l)
{
	return l && *l->note ? l->note : NULL;
}

void golocks_layout_free(struct golocks_layout *l)
{
	free(l);
}

static uint64_t word(const uint8_t *b, const struct off *o)
{
	uint64_t v;
	memcpy(&v, b + o->off, 8);
	return v;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static void add_ref(struct golocks *w, size_t *cap, uint64_t e, const struct off *o, uint64_t more)
{
	if (!o || o->ok) {
		uint64_t sub = (o ? o->off : 0) + more;
		if (sub > e)
			return;
		sd_grow(&w->refs, cap, w->nrefs + 1, sizeof(*w->refs));
		w->refs[w->nrefs++] = e - sub;
	}
}

/* Walk the treaps of the semaphore table: every sudog (a node, and the
 * waiters chained to it) with its g and semaphore address. */
static void read_semtable(struct golocks *w)
{
	struct golocks_layout *l = w->l;
	if (!l->semtab_va)
		return;
	uint64_t *todo = NULL;
	size_t ntodo = 0, ctodo = 0, seen = 0;
	/* The roots of every bucket in one read. */
	uint64_t *roots = sd_xcalloc(l->semtab_n ? l->semtab_n : 1, sizeof(*roots));
	struct rtmem_iov *iov = sd_xcalloc(l->semtab_n ? l->semtab_n : 1, sizeof(*iov));
	for (uint64_t i = 0; i < l->semtab_n; i++)
		iov[i] = (struct rtmem_iov){
		    l->semtab_va + i * l->semtab_stride + l->semtab_treap.off, &roots[i], 8, 0};
	int all = rtmem_readv(w->m, iov, l->semtab_n) == l->semtab_n;
	free(iov);
	for (uint64_t i = 0; all && i < l->semtab_n; i++) {
		uint64_t root = roots[i];
		if (!root)
			continue;
		sd_grow(&todo, &ctodo, ntodo + 1, sizeof(*todo));
		todo[ntodo++] = root;
	}
	uint8_t sg[GL_SUDOG_MAX];
	while (ntodo && seen < GL_MAX_SUDOGS) {
		uint64_t node = todo[--ntodo];
		/* The node, then the waiters chained to it on one address. */
		for (uint64_t s = node, k = 0; s && seen < GL_MAX_SUDOGS; k++, seen++) {
			if ((s & 7) || rtmem_read(w->m, s, sg, l->sudog_size, "a sudog", NULL) < 0) {
				w->bad_sudogs++;
				break;
			}
			sd_grow(&w->sem, &w->csem, w->nsem + 1, sizeof(*w->sem));
			w->sem[w->nsem].gp = word(sg, &l->sg_g);
			w->sem[w->nsem++].elem = word(sg, &l->sg_elem);
			if (k == 0) {
				uint64_t kids[2] = {word(sg, &l->sg_prev), word(sg, &l->sg_next)};
				for (int c = 0; c < 2; c++) {
					if (!kids[c])
						continue;
					sd_grow(&todo, &ctodo, ntodo + 1, sizeof(*todo));
					todo[ntodo++] = kids[c];
				}
			}
			s = word(sg, &l->sg_waitlink);
		}
	}
	free(roots);
	free(todo);
}

struct golocks *golocks_begin(struct golocks_layout *l, struct rtmem *m)
{
	struct golocks *w = sd_xcalloc(1, sizeof(*w));
	w->l = l;
	w->m = m;
	read_semtable(w);
	/* What a holder's stack may keep: the object's address, for each
	 * object a semaphore may be part of. */
	size_t cap = 0;
	for (size_t i = 0; i < w->nsem; i++) {
		uint64_t e = w->sem[i].elem;
		add_ref(w, &cap, e, NULL, 0);
		add_ref(w, &cap, e, &l->mu_sema, 0);
		add_ref(w, &cap, e, &l->rw_reader, 0);
		add_ref(w, &cap, e, &l->rw_writer, 0);
		if (l->rw_w.ok)
			add_ref(w, &cap, e, &l->mu_sema, l->rw_w.off);
	}
	if (w->nrefs) {
		sd_sort(w->refs, w->nrefs, sizeof(*w->refs), cmp_u64);
		size_t n = 1;
		for (size_t i = 1; i < w->nrefs; i++)
			if (w->refs[i] != w->refs[n - 1])
				w->refs[n++] = w->refs[i];
		w->nrefs = n;
	}
	return w;
}

/* Frames of the runtime and of package sync: a reference found in their
 * range is an argument handed down, the frame that keeps it is further
 * out. */
static int runtime_frame(const struct sd_frame *f)
{
	const char *fn = f->function;
	return fn && (!strncmp(fn, "runtime.", 8) || !strncmp(fn, "sync.", 5) ||
		      !strncmp(fn, "internal/", 9) || !strncmp(fn, "sync/atomic.", 12));
}

/* The frame whose stack range holds ADDR (frame k owns [sp_k, sp_k+1)),
 * then outwards past the runtime's frames and inline frames. */
static int frame_of_slot(const struct sd_goroutine *g, uint64_t addr)
{
	int k = -1;
	for (size_t i = 0; i < g->nframes; i++) {
		if (g->frames[i].sp && g->frames[i].sp <= addr)
			k = (int)i;
		else if (g->frames[i].sp > addr)
			break;
	}
	if (k < 0)
		return g->nframes ? 0 : -1;
	while ((size_t)k + 1 < g->nframes && runtime_frame(&g->frames[k]))
		k++;
	while ((size_t)k + 1 < g->nframes && (g->frames[k].flags & SD_FRAME_INLINED))
		k++;
	return k;
}

#define GL_COND_WAITERS 65536 /* sudogs of one sync.Cond's list read at most */
#define GL_COND_CANDIDATES 48 /* words of a waiter's frames tried as its Cond */
#define GL_COND_SPAN 2048     /* bytes of a waiter's stack searched for it */

static const struct cond *cond_at(struct golocks *w, uint64_t c)
{
	for (size_t i = 0; i < w->nconds; i++)
		if (w->conds[i].addr == c)
			return &w->conds[i];
	const struct golocks_layout *l = w->l;
	sd_grow(&w->conds, &w->cconds, w->nconds + 1, sizeof(*w->conds));
	struct cond *x = &w->conds[w->nconds++];
	memset(x, 0, sizeof(*x));
	x->addr = c;
	uint64_t s = 0, tail = 0, last = 0;
	if (rtmem_uint(w->m, c + l->cond_head.off, 8, &s, "a sync.Cond", NULL) < 0 ||
	    rtmem_uint(w->m, c + l->cond_tail.off, 8, &tail, "a sync.Cond", NULL) < 0)
		return x;
	size_t cap = 0;
	uint8_t sg[GL_SUDOG_MAX];
	for (unsigned k = 0; s && k < GL_COND_WAITERS; k++) {
		if ((s & 7) || rtmem_read(w->m, s, sg, l->sudog_size, "a sudog", NULL) < 0)
			break;
		uint64_t gp = word(sg, &l->sg_g);
		if (!gp || (gp & 7))
			break; /* no sudog of a waiter: not a Cond's list */
		sd_grow(&x->gps, &cap, x->ngps + 1, sizeof(*x->gps));
		x->gps[x->ngps++] = gp;
		last = s;
		s = word(sg, &l->sg_next);
	}
	/* A list read whole ends at the Cond's tail: other words taken for
	 * a Cond (its tail, read as a head) do not. */
	if (s || last != tail)
		x->ngps = 0;
	if (x->ngps)
		sd_sort(x->gps, x->ngps, sizeof(*x->gps), cmp_u64);
	return x;
}

/* G (at GP) waits in sync.(*Cond).Wait: the Cond is the one whose waiter
 * list holds GP's sudog. Its address (the receiver, or &c.notify handed
 * to the runtime) is kept in the frames of the wait and its caller's:
 * each word there is tried, and believed only when that list, read whole
 * to the Cond's tail, names GP. */
static void cond_wait(struct golocks *w, size_t idx, uint64_t gp, const struct sd_goroutine *g,
		      const uint8_t *stack, uint64_t base, size_t len)
{
	const struct golocks_layout *l = w->l;
	size_t k = 0;
	while (k < g->nframes &&
	       !(g->frames[k].function && !strcmp(g->frames[k].function, "sync.(*Cond).Wait")))
		k++;
	if (k >= g->nframes || !g->frames[0].sp || g->frames[0].sp < base)
		return;
	/* From the runtime's notifyListWait (Wait's callee) to the end of
	 * Wait's caller: Go's register arguments are spilled into the
	 * caller's frame. */
	size_t in = k ? k - 1 : 0;
	if (!g->frames[in].sp || g->frames[in].sp < g->frames[0].sp)
		in = 0;
	uint64_t lo = g->frames[in].sp - base;
	size_t out = k + 2 < g->nframes ? k + 2 : g->nframes - 1;
	uint64_t hi = g->frames[out].sp > g->frames[in].sp ? g->frames[out].sp - base
							   : lo + GL_COND_SPAN;
	if (hi > lo + GL_COND_SPAN)
		hi = lo + GL_COND_SPAN;
	if (hi > len)
		hi = len;
	unsigned tried = 0;
	for (uint64_t off = lo & ~7ull; off + 8 <= hi && tried < GL_COND_CANDIDATES; off += 8) {
		uint64_t v;
		memcpy(&v, stack + off, 8);
		if (!v || (v & 7) || v < 4096)
			continue;
		/* The word is the Cond, or its notify list inside it. */
		uint64_t cands[2] = {v, v - l->cond_notify.off};
		for (int i = 0; i < 2; i++) {
			uint64_t c = cands[i];
			if (i && (!l->cond_notify.off || v < l->cond_notify.off))
				continue;
			tried++;
			const struct cond *x = cond_at(w, c);
			if (x->ngps && bsearch(&gp, x->gps, x->ngps, sizeof(gp), cmp_u64)) {
				sd_grow(&w->waits, &w->cwaits, w->nwaits + 1, sizeof(*w->waits));
				w->waits[w->nwaits++] = (struct wait){idx, "sync.Cond", c, NULL};
				return;
			}
		}
	}
}

#define GL_AHEAD_ROUNDS 4 /* sudogs of one list read ahead, at most */

static int cmp_ahead(const void *a, const void *b)
{
	uint64_t x = ((const struct ahead *)a)->addr, y = ((const struct ahead *)b)->addr;
	return (x > y) - (x < y);
}

void golocks_prefetch(struct golocks *w, const uint64_t *gps, const uint8_t *const *gb,
		      size_t glen, size_t n)
{
	struct golocks_layout *l = w->l;
	w->nahead = 0;
	if (!l->g_waiting.ok || !l->sudog_size || l->g_waiting.off + 8 > glen || !n)
		return;
	uint64_t *next = sd_xmalloc(n * sizeof(*next));
	size_t *owner = sd_xmalloc(n * sizeof(*owner));
	struct rtmem_iov *iov = sd_xmalloc(n * sizeof(*iov));
	size_t nf = 0, used = 0; /* slots of abuf taken */
	for (size_t i = 0; i < n; i++) {
		uint64_t s = gb[i] ? word(gb[i], &l->g_waiting) : 0;
		if (s && !(s & 7)) {
			next[nf] = s;
			owner[nf++] = i;
		}
	}
	for (unsigned round = 0; nf && round < GL_AHEAD_ROUNDS; round++) {
		size_t need = (used + nf) * l->sudog_size;
		if (need > w->acap) {
			w->acap = need * 2;
			w->abuf = sd_xrealloc(w->abuf, w->acap);
		}
		for (size_t k = 0; k < nf; k++)
			iov[k] = (struct rtmem_iov){next[k], w->abuf + (used + k) * l->sudog_size,
						    l->sudog_size, 0};
		rtmem_readv(w->m, iov, nf);
		size_t nn = 0, base = used;
		used += nf;
		for (size_t k = 0; k < nf; k++) {
			if (!iov[k].ok)
				continue;
			const uint8_t *sg = iov[k].buf;
			sd_grow(&w->ahead, &w->cahead, w->nahead + 1, sizeof(*w->ahead));
			w->ahead[w->nahead++] = (struct ahead){next[k], (base + k) * l->sudog_size};
			/* The list goes on while its sudogs are the goroutine's. */
			uint64_t s = word(sg, &l->sg_waitlink);
			if (word(sg, &l->sg_g) == gps[owner[k]] && s && !(s & 7)) {
				next[nn] = s;
				owner[nn++] = owner[k];
			}
		}
		nf = nn;
	}
	if (w->nahead > 1)
		sd_sort(w->ahead, w->nahead, sizeof(*w->ahead), cmp_ahead);
	free(next);
	free(owner);
	free(iov);
}

/* The sudog at S into SG: read ahead, or read now. */
static int sudog_read(struct golocks *w, uint64_t s, uint8_t *sg)
{
	struct ahead key = {s, 0};
	const struct ahead *a =
	    w->nahead ? bsearch(&key, w->ahead, w->nahead, sizeof(key), cmp_ahead) : NULL;
	if (a) {
		memcpy(sg, w->abuf + a->off, w->l->sudog_size);
		return 0;
	}
	return rtmem_read(w->m, s, sg, w->l->sudog_size, "a sudog", NULL);
}

void golocks_goroutine(struct golocks *w, size_t idx, uint64_t gp, const uint8_t *gb, size_t glen,
		       const struct sd_goroutine *g, const uint8_t *stack, uint64_t base, size_t len)
{
	struct golocks_layout *l = w->l;
	sd_grow(&w->gs, &w->cgs, w->ngs + 1, sizeof(*w->gs));
	w->gs[w->ngs].gp = gp;
	w->gs[w->ngs++].idx = idx;
	if (g->status == SD_GO_WAITING && l->g_waiting.ok && l->g_waiting.off + 8 <= glen) {
		uint8_t sg[GL_SUDOG_MAX];
		uint64_t s = word(gb, &l->g_waiting);
		for (unsigned k = 0; s && k < GL_MAX_SELECT; k++) {
			if ((s & 7) || sudog_read(w, s, sg) < 0) {
				w->bad_sudogs++;
				break;
			}
			/* A sudog of another goroutine: the list changed. */
			if (word(sg, &l->sg_g) != gp)
				break;
			uint64_t c = word(sg, &l->sg_c);
			if (c) {
				sd_grow(&w->waits, &w->cwaits, w->nwaits + 1, sizeof(*w->waits));
				w->waits[w->nwaits++] = (struct wait){idx, "chan", c, NULL};
			}
			s = word(sg, &l->sg_waitlink);
		}
	}
	if (g->status == SD_GO_WAITING && l->cond_size && l->sudog_size && stack && len >= 8)
		cond_wait(w, idx, gp, g, stack, base, len);
	if (!stack || len < 8 || !w->nrefs)
		return;
	uint64_t top = 0;
	for (size_t i = 0; i < g->nframes; i++)
		if (g->frames[i].sp > top)
			top = g->frames[i].sp;
	uint64_t end = top > base ? top - base : 0;
	if (end > len)
		end = len;
	uint64_t lo = w->refs[0], hi = w->refs[w->nrefs - 1];
	for (uint64_t off = (8 - (base & 7)) & 7; off + 8 <= end; off += 8) {
		uint64_t v;
		memcpy(&v, stack + off, 8);
		if (v < lo || v > hi || !bsearch(&v, w->refs, w->nrefs, sizeof(v), cmp_u64))
			continue;
		sd_grow(&w->hits, &w->chits, w->nhits + 1, sizeof(*w->hits));
		w->hits[w->nhits++] = (struct hit){v, idx, frame_of_slot(g, base + off)};
	}
}

static int cmp_hit(const void *a, const void *b)
{
	const struct hit *x = a, *y = b;
	if (x->value != y->value)
		return (x->value > y->value) - (x->value < y->value);
	return (x->idx > y->idx) - (x->idx < y->idx);
}

static int cmp_gidx(const void *a, const void *b)
{
	const struct gidx *x = a, *y = b;
	return (x->gp > y->gp) - (x->gp < y->gp);
}

static const char *fn_of(const struct sd_frame *f)
{
	return f->function ? f->function : "";
}

/* Is G parked in the runtime's semaphore acquire? */
static int in_semacquire(const struct sd_goroutine *g)
{
	for (size_t i = 0; i < g->nframes && i < 8; i++)
		if (strstr(fn_of(&g->frames[i]), "semacquire") ||
		    strstr(fn_of(&g->frames[i]), "Semacquire"))
			return 1;
	return 0;
}

/* What the semaphore at E that G waits on belongs to, from G's frames:
 * the innermost frame of package sync names the object; its layout gives
 * where it starts. A bare semaphore otherwise. */
static struct wait sema_object(const struct golocks_layout *l, const struct sd_goroutine *g,
			       size_t idx, uint64_t e)
{
	struct wait r = {idx, "semaphore", e, NULL};
	size_t i = 0;
	for (; i < g->nframes; i++) {
		const char *fn = fn_of(&g->frames[i]);
		if ((!strncmp(fn, "sync.", 5) || !strncmp(fn, "internal/sync.", 14)) &&
		    !strstr(fn, "runtime_"))
			break;
	}
	if (i == g->nframes)
		return r;
	const char *fn = fn_of(&g->frames[i]);
	if (strstr(fn, "(*Mutex).") && l->mu_sema.ok) {
		while (i < g->nframes && strstr(fn_of(&g->frames[i]), "(*Mutex)."))
			i++;
		uint64_t m = e - l->mu_sema.off;
		if (i < g->nframes && strstr(fn_of(&g->frames[i]), "sync.(*RWMutex).Lock") &&
		    l->rw_w.ok)
			return (struct wait){idx, "sync.RWMutex", m - l->rw_w.off, "write"};
		return (struct wait){idx, "sync.Mutex", m, NULL};
	}
	if (strstr(fn, "(*RWMutex).RLock") && l->rw_reader.ok)
		return (struct wait){idx, "sync.RWMutex", e - l->rw_reader.off, "read"};
	if (strstr(fn, "(*RWMutex).Lock") && l->rw_writer.ok)
		return (struct wait){idx, "sync.RWMutex", e - l->rw_writer.off, "write"};
	if (strstr(fn, "(*WaitGroup).Wait") && l->wg_sema.ok)
		return (struct wait){idx, "sync.WaitGroup", e - l->wg_sema.off, NULL};
	return r;
}

static int cmp_wait(const void *a, const void *b)
{
	const struct wait *x = a, *y = b;
	if (x->addr != y->addr)
		return (x->addr > y->addr) - (x->addr < y->addr);
	int k = strcmp(x->kind, y->kind);
	if (k)
		return k;
	return (x->idx > y->idx) - (x->idx < y->idx);
}

static const char *data_symbol(struct sd_symbols *sym, struct sd_snapshot *s, uint64_t addr)
{
	uint64_t off = 0;
	const char *name = sym ? symbols_data(sym, s, addr, &off) : NULL;
	if (!name || !off)
		return name;
	char buf[512];
	snprintf(buf, sizeof(buf), "%s+0x%llx", name, (unsigned long long)off);
	return strpool_intern(s->pool, buf);
}

static int is_mutex(const struct sd_goobject *o)
{
	return !strcmp(o->kind, "sync.Mutex") || !strcmp(o->kind, "sync.RWMutex");
}

/* The mutex word of O: locked, and how many waiters it counts. */
static void mutex_state(struct golocks *w, struct sd_goobject *o)
{
	const struct golocks_layout *l = w->l;
	o->locked = -1;
	if (!is_mutex(o) || !l->mu_state.ok || !l->mu_consts)
		return;
	uint64_t at = o->address + l->mu_state.off;
	if (!strcmp(o->kind, "sync.RWMutex")) {
		if (!l->rw_w.ok)
			return;
		at += l->rw_w.off;
	}
	uint64_t v;
	if (rtmem_uint(w->m, at, 4, &v, "a mutex", NULL) < 0)
		return;
	o->locked = (v & (uint64_t)l->mu_locked) != 0;
	o->counted = (unsigned)(v >> l->mu_shift);
}

static int waits_on(const struct sd_goroutine *g, size_t obj)
{
	for (size_t i = 0; i < g->nwaits_on; i++)
		if (g->waits_on[i] == obj)
			return 1;
	return 0;
}

/* Is frame F of G the program's own, not the runtime's nor the wrapper
 * the compiler makes for a go statement (main.main.func1, .gowrap1: it
 * keeps the arguments the goroutine was started with, whatever it locks)? */
static int user_frame(const struct sd_goroutine *g, int f)
{
	if (f < 0 || (size_t)f >= g->nframes || runtime_frame(&g->frames[f]))
		return 0;
	const char *fn = fn_of(&g->frames[f]), *cb = g->created_by.function;
	size_t n = cb ? strlen(cb) : 0;
	if (cb && !strncmp(fn, cb, n) &&
	    (!strncmp(fn + n, ".func", 5) || !strncmp(fn + n, ".gowrap", 7)) &&
	    ((size_t)f + 1 == g->nframes || !strcmp(fn_of(&g->frames[f + 1]), "runtime.goexit")))
		return 0;
	return 1;
}

/* The goroutines holding a reference to object OBJ without waiting on it;
 * one left: the holder, inferred. */
static void infer_holder(struct golocks *w, struct sd_snapshot *s, size_t obj)
{
	struct sd_goobject *o = &s->goobjects[obj];
	o->holder_frame = -1;
	if (!is_mutex(o))
		return;
	size_t cap = 0, capf = 0;
	/* The hits of its address: a range of the sorted hits. */
	size_t lo = 0, hi = w->nhits;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (w->hits[mid].value < o->address)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t h = lo; h < w->nhits && w->hits[h].value == o->address; h++) {
		const struct hit *x = &w->hits[h];
		const struct sd_goroutine *g = &s->goroutines[x->idx];
		if (x->value != o->address || waits_on(g, obj) || !user_frame(g, x->frame))
			continue;
		size_t c = 0;
		while (c < o->ncandidates && o->candidates[c] != g->id)
			c++;
		if (c == o->ncandidates) {
			sd_grow(&o->candidates, &cap, c + 1, sizeof(*o->candidates));
			sd_grow(&o->candidate_frames, &capf, c + 1, sizeof(*o->candidate_frames));
			o->candidates[c] = g->id;
			o->candidate_frames[c] = x->frame;
			o->ncandidates++;
			continue;
		}
		/* Among the program's frames the outermost took the lock,
		 * inner ones were handed it. */
		if (x->frame > o->candidate_frames[c])
			o->candidate_frames[c] = x->frame;
	}
	char buf[300];
	if (o->locked == 0) {
		o->note = "not locked when read: its waiters are being woken";
		return;
	}
	if (o->ncandidates == 1) {
		o->holder = o->candidates[0];
		o->holder_frame = o->candidate_frames[0];
		return;
	}
	if (!o->ncandidates) {
		o->note = "no other goroutine's stack holds a reference to it (Go's mutexes do "
			  "not record their owner)";
		return;
	}
	snprintf(buf, sizeof(buf),
		 "%zu goroutines hold a reference to it: which one holds it is not known (Go's "
		 "mutexes do not record their owner)",
		 o->ncandidates);
	o->note = strpool_intern(s->pool, buf);
}

void golocks_end(struct golocks *w, struct sd_symbols *sym, struct sd_snapshot *s)
{
	sd_sort(w->gs, w->ngs, sizeof(*w->gs), cmp_gidx);
	size_t unmatched = 0;
	for (size_t i = 0; i < w->nsem; i++) {
		struct gidx key = {w->sem[i].gp, 0};
		const struct gidx *gi = bsearch(&key, w->gs, w->ngs, sizeof(key), cmp_gidx);
		/* A sudog left in the table by a goroutine gone since, or read
		 * while it changed: believed only for a goroutine that waits
		 * in the semaphore acquire. */
		if (!gi || gi->idx >= s->ngoroutines ||
		    s->goroutines[gi->idx].status != SD_GO_WAITING ||
		    !in_semacquire(&s->goroutines[gi->idx])) {
			unmatched++;
			continue;
		}
		sd_grow(&w->waits, &w->cwaits, w->nwaits + 1, sizeof(*w->waits));
		w->waits[w->nwaits++] = sema_object(w->l, &s->goroutines[gi->idx], gi->idx,
						     w->sem[i].elem);
	}
	sd_sort(w->waits, w->nwaits, sizeof(*w->waits), cmp_wait);
	size_t cap = 0;
	for (size_t i = 0; i < w->nwaits; i++) {
		const struct wait *x = &w->waits[i];
		if (x->idx >= s->ngoroutines)
			continue;
		struct sd_goobject *o = s->ngoobjects ? &s->goobjects[s->ngoobjects - 1] : NULL;
		if (!o || o->address != x->addr || strcmp(o->kind, x->kind)) {
			sd_grow(&s->goobjects, &cap, s->ngoobjects + 1, sizeof(*s->goobjects));
			o = &s->goobjects[s->ngoobjects++];
			memset(o, 0, sizeof(*o));
			o->kind = x->kind;
			o->address = x->addr;
			o->mode = x->mode;
			o->symbol = data_symbol(sym, s, x->addr);
			mutex_state(w, o);
		} else if (o->mode && x->mode && strcmp(o->mode, x->mode)) {
			o->mode = "read and write";
		}
		struct sd_goroutine *g = &s->goroutines[x->idx];
		if (x->mode)
			g->wait_mode = x->mode;
		if (o->nwaiters && o->waiters[o->nwaiters - 1] == g->id)
			continue; /* one goroutine, one entry (a select on a channel twice) */
		o->waiters = sd_xrealloc(o->waiters, (o->nwaiters + 1) * sizeof(*o->waiters));
		o->waiters[o->nwaiters++] = g->id;
		g->waits_on = sd_xrealloc(g->waits_on, (g->nwaits_on + 1) * sizeof(*g->waits_on));
		g->waits_on[g->nwaits_on++] = s->ngoobjects - 1;
	}
	if (w->nhits)
		sd_sort(w->hits, w->nhits, sizeof(*w->hits), cmp_hit);
	for (size_t i = 0; i < s->ngoobjects; i++) {
		sd_sort(s->goobjects[i].waiters, s->goobjects[i].nwaiters, sizeof(uint64_t), cmp_u64);
		infer_holder(w, s, i);
	}
	/* Who holds something, by id (goroutine ids are unique). */
	struct sd_goindex *ix = sd_goindex_new(s);
	for (size_t i = 0; i < s->ngoobjects; i++)
		for (size_t c = 0; c < s->goobjects[i].ncandidates; c++) {
			long h = sd_goindex_find(ix, s->ngoroutines, s->goobjects[i].candidates[c]);
			if (h >= 0)
				s->goroutines[h].nholds++;
		}
	free(ix);
	const char *ln = golocks_layout_note(w->l);
	if (ln || w->bad_sudogs) {
		char buf[700];
		snprintf(buf, sizeof(buf), "%s%s%.0zu%s", ln ? ln : "", ln && w->bad_sudogs ? "; " : "",
			 w->bad_sudogs, w->bad_sudogs ? " sudogs could not be read" : "");
		s->golocks_note = strpool_intern(s->pool, buf);
	}
	(void)unmatched;
	free(w->sem);
	free(w->refs);
	free(w->gs);
	free(w->waits);
	free(w->hits);
	free(w->ahead);
	free(w->abuf);
	for (size_t i = 0; i < w->nconds; i++)
		free(w->conds[i].gps);
	free(w->conds);
	free(w);
}
