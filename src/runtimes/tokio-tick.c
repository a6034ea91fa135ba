// SPDX-License-Identifier: MIT
// A multi_thread worker's tick (tokio-tick.h): its Core, which the worker
// keeps in its scheduler context while it polls a task, reached from the
// thread's thread-locals: worker::CURRENT (a scoped thread-local, Tokio
// 1.24) or the `scheduler` member of tokio::runtime::context::CONTEXT
// (later versions), then Context.core (RefCell<Option<Box<Core>>>) and
// Core.tick. All by name from the DWARF.
#include "tokio-tick.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwtype.h"
#include "util.h"

struct tktick {
	struct dwt *d;
	struct tkl *l;
	int ok;
	const char *tls_name;	/* 1.24: worker::CURRENT's storage, else NULL */
	uint64_t tls_off, tls_ptr; /* its offset in the TLS block, the pointer's in it */
	uint64_t sched_off;	/* later: CONTEXT's scheduler pointer, from the Context */
	struct dwt_type sched_t; /* the enum it points to (scheduler::Context) */
	uint64_t core_off, tick_off;
	uint64_t core_size;
	int have_index;		/* Context.worker (Arc<Worker>) -> Worker.index */
	uint64_t worker_off, worker_data_off, index_off;
	char why[256];
};

static const char *const current_names[] = {
    /* const-initialised: the storage is the second closure's */
    "tokio::runtime::scheduler::multi_thread::worker::CURRENT::FOO::{constant#0}::{closure#1}::"
    "__RUST_STD_INTERNAL_VAL",
    "tokio::runtime::scheduler::multi_thread::worker::CURRENT::FOO::{constant#0}::{closure#0}::"
    "__RUST_STD_INTERNAL_VAL",
    "tokio::runtime::scheduler::multi_thread::worker::CURRENT::FOO::{constant#0}::{closure#0}::VAL",
    "tokio::runtime::scheduler::multi_thread::worker::CURRENT::FOO::__getit::__KEY",
    "tokio::runtime::scheduler::multi_thread::worker::CURRENT::FOO::{constant#0}::__getit::__KEY",
    NULL,
};

/* The offset of the first pointer inside T, going down through first
 * members (Cell, UnsafeCell, an eager Storage's value). */
static int pointer_in(struct dwt *d, const struct dwt_type *t, uint64_t *off)
{
	static const char *const names[] = {"value", "val", "__0", "inner", NULL};
	struct dwt_type cur = *t;
	uint64_t total = 0;
	for (int depth = 0; depth < 8; depth++) {
		if (cur.kind == DWT_POINTER && cur.size == 8) {
			*off = total;
			return 0;
		}
		int moved = 0;
		for (size_t i = 0; names[i] && !moved; i++) {
			uint64_t o;
			struct dwt_type ft;
			if (dwt_member(d, &cur, names[i], &o, &ft, NULL) == 0) {
				total += o;
				cur = ft;
				moved = 1;
			}
		}
		if (!moved)
			return -1;
	}
	return -1;
}

struct tktick *tktick_new(struct dwt *d, struct tkl *l, const struct dwt_type *ctx_t)
{
	struct tktick *t = sd_xcalloc(1, sizeof(*t));
	t->d = d;
	t->l = l;
	struct dwt_type wctx, core, opt, st;
	if (dwt_type(d, "tokio::runtime::scheduler::multi_thread::worker::Context", &wctx, NULL) < 0 ||
	    dwt_type(d, "tokio::runtime::scheduler::multi_thread::worker::Core", &core, NULL) < 0) {
		snprintf(t->why, sizeof(t->why), "no DWARF type of a multi_thread worker's Context or Core");
		return t;
	}
	if (dwt_member(d, &wctx, "core.value.value", &t->core_off, &opt, NULL) < 0 || opt.size != 8 ||
	    dwt_member(d, &core, "tick", &t->tick_off, &st, NULL) < 0 || st.size != 4) {
		snprintf(t->why, sizeof(t->why), "no Context.core or Core.tick of the expected sizes");
		return t;
	}
	t->core_size = core.size;
	struct dwt_type wp, wai, wt;
	uint64_t woff;
	t->have_index =
	    dwt_member(d, &wctx, "worker.ptr.pointer", &t->worker_off, &wp, NULL) == 0 &&
	    dwt_pointee(d, &wp, &wai, NULL) == 0 &&
	    dwt_member(d, &wai, "data", &t->worker_data_off, &wt, NULL) == 0 &&
	    dwt_member(d, &wt, "index", &woff, &st, NULL) == 0 && st.size == 8;
	t->index_off = woff;
	/* Later versions: CONTEXT.scheduler, a Scoped<scheduler::Context>. */
	struct dwt_type pt;
	if (ctx_t && dwt_member(d, ctx_t, "scheduler.inner.value.value", &t->sched_off, &pt, NULL) == 0 &&
	    pt.kind == DWT_POINTER && dwt_pointee(d, &pt, &t->sched_t, NULL) == 0 &&
	    t->sched_t.size && t->sched_t.size <= 4096) {
		t->ok = 1;
		return t;
	}
	for (size_t i = 0; current_names[i]; i++) {
		struct dwt_type vt;
		if (dwt_tls(d, current_names[i], &t->tls_off, &vt, NULL) == 0 &&
		    pointer_in(d, &vt, &t->tls_ptr) == 0) {
			t->tls_name = current_names[i];
			t->ok = 1;
			return t;
		}
	}
	snprintf(t->why, sizeof(t->why), "no scheduler context in the thread-locals");
	return t;
}

void tktick_free(struct tktick *t)
{
	free(t);
}

/* The worker Context's address for the thread (TP, its CONTEXT at CTX), 0
 * when it has none now. */
static uint64_t worker_context(struct tktick *t, struct rtmem *mem, uint64_t tp, uint64_t ctx)
{
	uint64_t p = 0;
	if (t->tls_name) {
		uint64_t addr, size, align;
		if (dwt_tls_address(t->d, t->tls_name, tp, &addr, NULL, NULL) < 0) {
			if (dwt_tls_block(t->d, &size, &align) < 0 || !align)
				return 0;
			addr = tp - (size + align - 1) / align * align + t->tls_off;
		}
		if (rtmem_uint(mem, addr + t->tls_ptr, 8, &p, "worker::CURRENT", NULL) < 0)
			return 0;
		return p;
	}
	if (!ctx || rtmem_uint(mem, ctx + t->sched_off, 8, &p, "the scheduler context", NULL) < 0 || !p)
		return 0;
	uint8_t b[4096];
	const char *vn;
	uint64_t off, o2;
	struct dwt_type vt, it;
	if (rtmem_read(mem, p, b, t->sched_t.size, "the scheduler context", NULL) < 0 ||
	    tkl_variant(t->l, &t->sched_t, b, t->sched_t.size, &vn, &off, &vt, NULL, NULL) < 0 ||
	    strcmp(vn, "MultiThread") || dwt_member(t->d, &vt, "__0", &o2, &it, NULL) < 0)
		return 0;
	return p + off + o2;
}

int64_t tktick_read(struct tktick *t, struct rtmem *mem, uint64_t tp, uint64_t ctx)
{
	if (!t || !t->ok || !tp)
		return -1;
	uint64_t w = worker_context(t, mem, tp, ctx), core = 0, tick = 0;
	if (!w || rtmem_uint(mem, w + t->core_off, 8, &core, "a worker's core", NULL) < 0 || !core ||
	    !rtmem_mapped(mem, core, t->core_size) ||
	    rtmem_uint(mem, core + t->tick_off, 4, &tick, "a worker's tick", NULL) < 0)
		return -1;
	return (int64_t)tick;
}

int64_t tktick_index(struct tktick *t, struct rtmem *mem, uint64_t tp, uint64_t ctx)
{
	if (!t || !t->ok || !t->have_index || !tp)
		return -1;
	uint64_t w = worker_context(t, mem, tp, ctx), wk = 0, index = 0;
	if (!w || rtmem_uint(mem, w + t->worker_off, 8, &wk, "a worker", NULL) < 0 || !wk ||
	    rtmem_uint(mem, wk + t->worker_data_off + t->index_off, 8, &index, "a worker's index",
		       NULL) < 0 ||
	    index > 1u << 20)
		return -1;
	return (int64_t)index;
}
