// SPDX-License-Identifier: MIT
// Holders that no lock records, inferred from the frozen stacks: a thread
// that holds a lock keeps a reference to it (a MutexGuard, lock_guard or
// unique_lock holds a pointer to the lock) in a live stack slot or in a
// callee-saved register, for as long as it holds it. Runs after the thaw,
// on the copies taken while frozen; never reads the target.
#include "locks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* pthread_rwlock_t __readers bits; Rust std RwLock state bits */
#define RW_R_WRPHASE 1u
#define RW_R_SHIFT 3
#define RUST_RW_MASK 0x3fffffffu

/* One lock that threads wait on, whose holders we look for. */
struct ilock {
	enum sd_wait_kind kind; /* grouped: rwlock waits of both modes are one */
	uint64_t address;
	const char *symbol;
	const char *mode;   /* "read", "write" or NULL (a mutex) */
	unsigned readers;   /* read-held: how many readers the lock counts */
	pid_t owner;	    /* recorded in memory, 0 when not */
	struct cand *cands; /* threads holding a reference, not waiting on it */
	size_t ncands, capc;
};

struct cand {
	size_t thread;
	int frame; /* -1: found in a register with no frame to name */
};

/* A reference to look for: the address, and which lock it belongs to. */
struct ref {
	uint64_t addr;
	size_t lock;
};

static int cmp_ref(const void *a, const void *b)
{
	const struct ref *x = a, *y = b;
	return (x->addr > y->addr) - (x->addr < y->addr);
}

static enum sd_wait_kind group(enum sd_wait_kind k)
{
	return k == SD_WAIT_RWLOCK_WRITE ? SD_WAIT_RWLOCK_READ : k;
}

/* Waits whose lock has a holder pattern: a guard that keeps a pointer to
 * the lock. Semaphores, joins, condvars and unnamed futexes have none. */
static int inferable(enum sd_wait_kind k)
{
	return k == SD_WAIT_MUTEX || k == SD_WAIT_RWLOCK_READ || k == SD_WAIT_RWLOCK_WRITE ||
	       k == SD_WAIT_RUST_MUTEX || k == SD_WAIT_RUST_RWLOCK;
}

/* Frames of the language runtime (libc, the C++ and Rust standard
 * libraries): a reference found in their range is a callee-saved register
 * they saved for an outer frame, or an argument passed down to them, so
 * the frame that holds the lock is further out. */
static int runtime_frame(const struct sd_frame *f)
{
	static const char *const mods[] = {"libc.so", "libstdc++.so", "libgcc_s.so", "ld-linux",
					   "libpthread.so"};
	static const char *const fns[] = {
	    "std::", "core::", "alloc::", "<std::", "<core::", "<alloc::", "__rust", "syscall"};
	if (f->module)
		for (size_t i = 0; i < sizeof(mods) / sizeof(mods[0]); i++)
			if (!strncmp(f->module, mods[i], strlen(mods[i])))
				return 1;
	if (f->function)
		for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
			if (!strncmp(f->function, fns[i], strlen(fns[i])))
				return 1;
	return 0;
}

/* Does frame K of TH see ADDR in one of its callee-saved registers (as
 * the unwinder recovered them for it)? */
static int csr_holds(const struct sd_thread *th, size_t k, uint64_t addr)
{
	for (size_t i = 0; i < sizeof(th->frames[k].csr) / sizeof(th->frames[k].csr[0]); i++)
		if (th->frames[k].csr[i] == addr)
			return 1;
	return 0;
}

/* From frame K, where ADDR is live, the outermost of the consecutive
 * frames in which it still is: a caller keeps the value in a callee-saved
 * register that its callees preserve (left alone, or saved in their own
 * frame and restored), so it lives in every frame from the one that
 * loaded it inwards. That outermost frame is the one whose variable it
 * is: the one that took the lock. Then outwards past runtime frames, and
 * from an inline frame to its physical frame (whose variables its inline
 * frames' are). */
static int frame_of_live(const struct sd_thread *th, int k, uint64_t addr)
{
	while ((size_t)k + 1 < th->nframes && csr_holds(th, (size_t)k + 1, addr))
		k++;
	while ((size_t)k + 1 < th->nframes && runtime_frame(&th->frames[k]))
		k++;
	while ((size_t)k + 1 < th->nframes && (th->frames[k].flags & SD_FRAME_INLINED))
		k++;
	return k;
}

/* The frame of TH whose stack range holds the slot at SLOT with ADDR in
 * it: frame k owns [frames[k].sp, frames[k+1].sp); a slot where a callee
 * saved its caller's register belongs to the caller, which frame_of_live
 * finds from the registers recovered for it. -1 when TH has no frames. */
static int frame_of_slot(const struct sd_thread *th, uint64_t slot, uint64_t addr)
{
	int k = -1;
	for (size_t i = 0; i < th->nframes; i++) {
		if (th->frames[i].sp && th->frames[i].sp <= slot)
			k = (int)i;
		else if (th->frames[i].sp > slot)
			break;
	}
	if (k < 0)
		return th->nframes ? frame_of_live(th, 0, addr) : -1;
	return frame_of_live(th, k, addr);
}

/* ADDR in a callee-saved register at the freeze: frame 0 has it, and so
 * does every frame out to the one that loaded it (frame_of_live). Without
 * the frames' registers (a loaded snapshot), the innermost physical frame
 * outside the runtime is the best guess, or -1. */
static int frame_of_register(const struct sd_thread *th, uint64_t addr)
{
	if (th->nframes && csr_holds(th, 0, addr)) {
		int k = frame_of_live(th, 0, addr);
		if (!runtime_frame(&th->frames[k]))
			return k;
	}
	for (size_t i = 0; i < th->nframes; i++) {
		if (runtime_frame(&th->frames[i]))
			continue;
		while (i + 1 < th->nframes && (th->frames[i].flags & SD_FRAME_INLINED))
			i++;
		return (int)i;
	}
	return -1;
}

/* Is frame F of TH one of the program's own (not the runtime's)? */
static int user_frame(const struct sd_thread *th, int f)
{
	return f >= 0 && (size_t)f < th->nframes && !runtime_frame(&th->frames[f]);
}

static void add_cand(struct ilock *l, const struct sd_snapshot *s, size_t thread, int frame)
{
	const struct sd_thread *th = &s->threads[thread];
	for (size_t i = 0; i < l->ncands; i++) {
		struct cand *c = &l->cands[i];
		if (c->thread != thread)
			continue;
		/* A reference in the program's own frames beats one in the
		 * runtime's (a closure's captured copy in the thread start
		 * code); among those, the outermost frame is the one that
		 * took the lock, inner ones were handed the reference. */
		int u = user_frame(th, frame), cu = user_frame(th, c->frame);
		if (u > cu || (u == cu && frame > c->frame))
			c->frame = frame;
		return;
	}
	sd_grow(&l->cands, &l->capc, l->ncands + 1, sizeof(*l->cands));
	l->cands[l->ncands].thread = thread;
	l->cands[l->ncands++].frame = frame;
}

static int waits_on(const struct sd_thread *th, const struct ilock *l)
{
	return inferable(th->wait.kind) && group(th->wait.kind) == l->kind &&
	       th->wait.address == l->address;
}

/* How the lock is held, from the lock words captured while frozen. */
static void lock_mode(struct sd_snapshot *s, const struct sd_thread *w, struct ilock *l)
{
	uint32_t v;
	if (l->kind == SD_WAIT_RWLOCK_READ && snapshot_lockmem_read(s, w, l->address, &v, sizeof(v))) {
		if (v & RW_R_WRPHASE) {
			l->mode = "write";
		} else if (v >> RW_R_SHIFT) {
			l->mode = "read";
			l->readers = v >> RW_R_SHIFT;
		}
	} else if (l->kind == SD_WAIT_RUST_RWLOCK && snapshot_lockmem_read(s, w, l->address, &v, sizeof(v))) {
		if ((v & RUST_RW_MASK) == RUST_RW_MASK) {
			l->mode = "write";
		} else if (v & RUST_RW_MASK) {
			l->mode = "read";
			l->readers = v & RUST_RW_MASK;
		}
	}
}

/* The locks waited on, grouped, with the owner memory records. */
static struct ilock *collect(struct sd_snapshot *s, size_t *n)
{
	struct ilock *v = NULL;
	size_t cap = 0;
	*n = 0;
	for (size_t i = 0; i < s->nthreads; i++) {
		const struct sd_thread *th = &s->threads[i];
		const struct sd_wait *w = &th->wait;
		if (!inferable(w->kind) || !w->address)
			continue;
		struct ilock *l = NULL;
		for (size_t k = 0; k < *n && !l; k++)
			if (waits_on(th, &v[k]))
				l = &v[k];
		if (!l) {
			sd_grow(&v, &cap, *n + 1, sizeof(*v));
			l = &v[(*n)++];
			memset(l, 0, sizeof(*l));
			l->kind = group(w->kind);
			l->address = w->address;
			lock_mode(s, th, l);
		}
		if (!l->symbol)
			l->symbol = w->symbol;
		if (w->owner_known && w->owner > 0 && w->owner_evidence == SD_EVIDENCE_MEMORY)
			l->owner = w->owner;
	}
	return v;
}

/* Where TH's live frames end in its stack copy (an offset): at the stack
 * pointer of its outermost unwound frame. Above the thread's first frame
 * lie its start-up data and TLS (a cached arena pointer is the address of
 * malloc's arena lock), not a frame; and frames the unwinder could not
 * reach are not known to be live, so they are not scanned either. */
static uint64_t live_end(const struct sd_thread *th)
{
	uint64_t top = 0;
	for (size_t i = 0; i < th->nframes; i++)
		if (th->frames[i].sp > top)
			top = th->frames[i].sp;
	if (top <= th->stack_base)
		return 0;
	return top - th->stack_base < th->stack_len ? top - th->stack_base : th->stack_len;
}

/* Search every thread's live stack (from its stack pointer up: what lies
 * below it is dead) and callee-saved registers for the lock addresses. */
static void scan(const struct sd_snapshot *s, struct ilock *locks, const struct ref *refs,
		 size_t nrefs)
{
	uint64_t lo = refs[0].addr, hi = refs[nrefs - 1].addr;
	for (size_t t = 0; t < s->nthreads; t++) {
		const struct sd_thread *th = &s->threads[t];
		if (th->stack && th->stack_len >= 8) {
			uint64_t sp = th->have_regs ? th->regs.rsp : th->stack_base;
			uint64_t start = sp > th->stack_base ? sp - th->stack_base : 0;
			/* Slots are 8-byte aligned addresses. */
			start += (8 - ((th->stack_base + start) & 7)) & 7;
			uint64_t end = live_end(th);
			for (uint64_t off = start; off + 8 <= end; off += 8) {
				uint64_t v;
				memcpy(&v, th->stack + off, 8);
				if (v < lo || v > hi)
					continue;
				struct ref key = {v, 0};
				const struct ref *r =
				    bsearch(&key, refs, nrefs, sizeof(*refs), cmp_ref);
				if (!r)
					continue;
				/* Several locks never share an address, but a
				 * lookup may land on any of equal keys. */
				while (r > refs && r[-1].addr == v)
					r--;
				for (; r < refs + nrefs && r->addr == v; r++)
					if (!waits_on(th, &locks[r->lock]))
						add_cand(&locks[r->lock], s, t,
							 frame_of_slot(th, th->stack_base + off, v));
			}
		}
		if (!th->have_regs)
			continue;
		const uint64_t saved[] = {th->regs.rbx, th->regs.rbp, th->regs.r12,
					  th->regs.r13, th->regs.r14, th->regs.r15};
		for (size_t i = 0; i < sizeof(saved) / sizeof(saved[0]); i++) {
			if (saved[i] < lo || saved[i] > hi)
				continue;
			for (size_t r = 0; r < nrefs; r++)
				if (refs[r].addr == saved[i] && !waits_on(th, &locks[refs[r].lock]))
					add_cand(&locks[refs[r].lock], s, t, frame_of_register(th, saved[i]));
		}
	}
}

int locks_frame_of_reference(const struct sd_thread *th, uint64_t addr)
{
	if (th->stack && th->stack_len >= 8) {
		uint64_t sp = th->have_regs ? th->regs.rsp : th->stack_base;
		uint64_t start = sp > th->stack_base ? sp - th->stack_base : 0;
		start += (8 - ((th->stack_base + start) & 7)) & 7;
		uint64_t end = live_end(th);
		for (uint64_t off = start; off + 8 <= end; off += 8) {
			uint64_t v;
			memcpy(&v, th->stack + off, 8);
			if (v == addr)
				return frame_of_slot(th, th->stack_base + off, addr);
		}
	}
	if (th->have_regs) {
		const uint64_t saved[] = {th->regs.rbx, th->regs.rbp, th->regs.r12,
					  th->regs.r13, th->regs.r14, th->regs.r15};
		for (size_t i = 0; i < sizeof(saved) / sizeof(saved[0]); i++)
			if (saved[i] == addr)
				return frame_of_register(th, addr);
	}
	return -1;
}

static void add_hold(struct sd_thread *th, const struct ilock *l, enum sd_evidence ev, int frame,
		     size_t ncands)
{
	th->holds = sd_xrealloc(th->holds, (th->nholds + 1) * sizeof(*th->holds));
	struct sd_hold *h = &th->holds[th->nholds++];
	memset(h, 0, sizeof(*h));
	h->kind = l->kind;
	h->address = l->address;
	h->symbol = l->symbol;
	h->mode = l->mode;
	h->evidence = ev;
	h->frame = frame;
	h->ncandidates = ncands;
}

/* "inferred: frame #4 main::{closure#0} holds a reference to it" */
static const char *evidence_note(struct sd_snapshot *s, const struct sd_thread *h, int frame)
{
	char buf[512];
	if (frame >= 0 && (size_t)frame < h->nframes)
		snprintf(buf, sizeof(buf), "inferred: frame #%d %s holds a reference to it", frame,
			 h->frames[frame].function ? h->frames[frame].function : "??");
	else
		snprintf(buf, sizeof(buf),
			 "inferred: a register of the thread holds a reference "
			 "to it");
	return strpool_intern(s->pool, buf);
}

/* Decide the holders of L from its candidates, and tell its waiters. */
static void decide(struct sd_snapshot *s, struct ilock *l)
{
	if (l->owner) {
		/* Recorded: only attribute it to the owner's frame. */
		for (size_t i = 0; i < s->nthreads; i++) {
			struct sd_thread *th = &s->threads[i];
			if (th->tid != l->owner)
				continue;
			int frame = -1;
			for (size_t c = 0; c < l->ncands; c++)
				if (l->cands[c].thread == i)
					frame = l->cands[c].frame;
			add_hold(th, l, SD_EVIDENCE_MEMORY, frame, 1);
			for (size_t k = 0; k < s->nthreads; k++)
				if (waits_on(&s->threads[k], l) &&
				    s->threads[k].wait.owner == l->owner)
					s->threads[k].wait.owner_frame = frame;
		}
		return;
	}
	if (!l->ncands)
		return;
	/* A read-held lock has as many holders as it counts readers; a
	 * write-held one or a mutex has one. More candidates than that: at
	 * least one is not a holder, and nobody can say which. */
	size_t expect = l->mode && !strcmp(l->mode, "read") ? l->readers : 1;
	size_t shown = l->ncands <= expect ? 1 : l->ncands;
	for (size_t c = 0; c < l->ncands; c++)
		add_hold(&s->threads[l->cands[c].thread], l, SD_EVIDENCE_STACK, l->cands[c].frame,
			 shown);
	if (l->ncands != 1 || expect != 1)
		return;
	const struct sd_thread *h = &s->threads[l->cands[0].thread];
	const char *note = evidence_note(s, h, l->cands[0].frame);
	for (size_t k = 0; k < s->nthreads; k++) {
		struct sd_wait *w = &s->threads[k].wait;
		if (!waits_on(&s->threads[k], l) || w->owner_known)
			continue;
		w->owner = h->tid;
		w->owner_known = 1;
		w->owner_evidence = SD_EVIDENCE_STACK;
		w->owner_frame = l->cands[0].frame;
		w->note = note;
	}
}

void locks_infer(struct sd_snapshot *s)
{
	int copies = 0;
	for (size_t i = 0; i < s->nthreads; i++)
		copies |= s->threads[i].stack != NULL;
	if (!copies) {
		/* A loaded snapshot: no stacks to scan; keep what was found
		 * when it was taken. */
		for (size_t i = 0; i < s->nthreads; i++) {
			struct sd_wait *w = &s->threads[i].wait;
			if (w->owner_known && w->owner_evidence == SD_EVIDENCE_NONE) {
				w->owner_evidence = SD_EVIDENCE_MEMORY;
				w->owner_frame = -1;
			}
		}
		return;
	}
	for (size_t i = 0; i < s->nthreads; i++) {
		struct sd_thread *th = &s->threads[i];
		free(th->holds);
		th->holds = NULL;
		th->nholds = 0;
		th->wait.owner_frame = -1;
		if (th->wait.owner_known && th->wait.owner_evidence == SD_EVIDENCE_NONE)
			th->wait.owner_evidence = SD_EVIDENCE_MEMORY;
	}
	size_t n;
	struct ilock *locks = collect(s, &n);
	if (!n)
		return;
	struct ref *refs = sd_xmalloc(n * sizeof(*refs));
	for (size_t i = 0; i < n; i++) {
		refs[i].addr = locks[i].address;
		refs[i].lock = i;
	}
	sd_sort(refs, n, sizeof(*refs), cmp_ref);
	scan(s, locks, refs, n);
	for (size_t i = 0; i < n; i++) {
		decide(s, &locks[i]);
		free(locks[i].cands);
	}
	free(refs);
	free(locks);
}
