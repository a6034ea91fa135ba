// SPDX-License-Identifier: MIT
// Tokio tasks (tokio.h): the layout of Tokio's task header, trailer,
// vtable and thread-local context learnt once per target from the
// executable's DWARF; each snapshot reads every thread's context it can
// reach, every runtime's owned-task list, each task's header and future.
#include "tokio.h"

#include <elf.h>
#include <errno.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <unistd.h>

#include "dwfile.h"
#include "dwtype.h"
#include "hashmap.h"
#include "ptrace.h"
#include "rtmem.h"
#include "space.h"
#include "strpool.h"
#include "tokio-graph.h"
#include "tokio-layout.h"
#include "tokio-tick.h"
#include "tokio-tls.h"
#include "tokio-workers.h"

/* Bounds on what the target's memory may claim. */
#define TK_MAX_TASKS (1u << 20)	     /* tasks of one runtime walked at most */
#define TK_MAX_FUTURE (1u << 20)     /* bytes of one future's stage copied */
#define TK_MAX_RUNTIMES 16	     /* runtimes of one process */
#define TK_MAX_STOPS 64		     /* threads stopped alone for their TLS */
#define TK_RETAKES 3		     /* copies of a task that moved, at most */
#define TK_MAX_VTABLES 4096	     /* distinct task types learnt */

/* Tokio's task state word (runtime/task/state.rs, the same through 1.x):
 * the lifecycle bits and the flags below the reference count. */
#define TK_RUNNING 0x1u
#define TK_COMPLETE 0x2u
#define TK_NOTIFIED 0x4u
#define TK_CANCELLED 0x20u
#define TK_STATE_MASK 0x3fu

/* What one task type (one vtable) needs: the offsets the target's own
 * vtable gives, and the future's type from its poll function. */
struct tkvt {
	uint64_t addr;
	uint64_t poll, trailer_off, id_off, sched_off;
	int ok, have_future;
	uint64_t stage_off; /* from the header */
	struct dwt_type stage_t;
};

struct sd_tokioruntime {
	int state; /* 0 not looked at, 1 ready, -1 no Tokio, -2 Tokio but unreadable */
	const void *exe_elf;
	struct dwt *d;
	struct tkl *l;
	char note[1024];
	uint64_t bias;
	uint64_t exe_start, exe_end, text_start, text_end; /* the executable's mappings */
	struct dwt_type header_t, trailer_t, vtable_t, storage_t, ctx_t;
	uint64_t h_state, h_vtable, tr_next, tr_prev, vt_poll, vt_trailer, vt_id, vt_sched;
	uint64_t tls_off, ctx_off, storage_state_off, ctx_handle_off, ctx_task_off;
	struct dwt_type storage_state_t, ctx_handle_t, ctx_task_t;
	struct tkvt *vts;
	size_t nvts, vts_cap;
	struct tktls *tls; /* glibc's thread list, NULL: threads are stopped alone */
	struct tktick *tick; /* the workers' ticks */
	int tls_tried;
	const char *tls_why;
};

void tokioruntime_free(struct sd_tokioruntime *rt)
{
	if (!rt)
		return;
	tkl_free(rt->l);
	tktls_free(rt->tls);
	tktick_free(rt->tick);
	dwt_free(rt->d);
	free(rt->vts);
	free(rt);
}

static int member(struct sd_tokioruntime *rt, const struct dwt_type *t, const char *path,
		  uint64_t *off, struct dwt_type *ft)
{
	struct sd_error err = {0};
	if (dwt_member(rt->d, t, path, off, ft, &err) < 0) {
		snprintf(rt->note, sizeof(rt->note), "%.500s", err.msg);
		return -1;
	}
	return 0;
}

static int type(struct sd_tokioruntime *rt, const char *name, struct dwt_type *t)
{
	struct sd_error err = {0};
	if (dwt_type(rt->d, name, t, &err) < 0) {
		snprintf(rt->note, sizeof(rt->note), "%.500s", err.msg);
		return -1;
	}
	return 0;
}

/* The offset of the member of T whose type is named NAME (the first
 * found going down through first members: wrappers such as UnsafeCell,
 * MaybeUninit and ManuallyDrop), with its type. */
static int find_inner(struct sd_tokioruntime *rt, const struct dwt_type *t, const char *name,
		      uint64_t *off, struct dwt_type *out)
{
	static const char *const names[] = {"value", "val", "__0", "data", NULL};
	struct dwt_type cur = *t;
	uint64_t total = 0;
	for (int depth = 0; depth < 8; depth++) {
		if (cur.name && !strcmp(cur.name, name)) {
			*off = total;
			*out = cur;
			return 0;
		}
		int moved = 0;
		for (size_t i = 0; names[i] && !moved; i++) {
			uint64_t o;
			struct dwt_type ft;
			if (dwt_member(rt->d, &cur, names[i], &o, &ft, NULL) == 0) {
				total += o;
				cur = ft;
				moved = 1;
			}
		}
		if (!moved)
			break;
	}
	snprintf(rt->note, sizeof(rt->note), "no %s inside %s", name, t->name);
	return -1;
}

/* The names std has given the native thread-local of CONTEXT. */
static const char *const context_names[] = {
	"tokio::runtime::context::CONTEXT::{constant#0}::{closure#0}::__RUST_STD_INTERNAL_VAL",
	"tokio::runtime::context::CONTEXT::{constant#0}::{closure#0}::VAL",
	"tokio::runtime::context::CONTEXT::__getit::__KEY",
	"tokio::runtime::context::CONTEXT::{constant#0}::__getit::__KEY",
	NULL,
};

static int learn_layout(struct sd_tokioruntime *rt)
{
	if (type(rt, "tokio::runtime::task::core::Header", &rt->header_t) ||
	    type(rt, "tokio::runtime::task::core::Trailer", &rt->trailer_t) ||
	    type(rt, "tokio::runtime::task::raw::Vtable", &rt->vtable_t) ||
	    type(rt, "tokio::runtime::context::Context", &rt->ctx_t))
		return -1;
	if (!rt->header_t.size || rt->header_t.size > 4096) {
		snprintf(rt->note, sizeof(rt->note), "a task header of %llu bytes",
			 (unsigned long long)rt->header_t.size);
		return -1;
	}
	if (member(rt, &rt->header_t, "state", &rt->h_state, NULL) ||
	    member(rt, &rt->header_t, "vtable", &rt->h_vtable, NULL) ||
	    member(rt, &rt->trailer_t, "owned.inner.value.next", &rt->tr_next, NULL) ||
	    member(rt, &rt->trailer_t, "owned.inner.value.prev", &rt->tr_prev, NULL) ||
	    member(rt, &rt->vtable_t, "poll", &rt->vt_poll, NULL) ||
	    member(rt, &rt->vtable_t, "trailer_offset", &rt->vt_trailer, NULL) ||
	    member(rt, &rt->vtable_t, "id_offset", &rt->vt_id, NULL) ||
	    member(rt, &rt->vtable_t, "scheduler_offset", &rt->vt_sched, NULL))
		return -1;
	/* The scheduler handle: Context.handle (1.24), Context.current.handle
	 * (a HandleCell, later versions). */
	if (dwt_member(rt->d, &rt->ctx_t, "current.handle.value.value", &rt->ctx_handle_off,
		       &rt->ctx_handle_t, NULL) < 0 &&
	    member(rt, &rt->ctx_t, "handle.value.value", &rt->ctx_handle_off, &rt->ctx_handle_t))
		return -1;
	if (member(rt, &rt->ctx_t, "current_task_id.value.value", &rt->ctx_task_off,
		   &rt->ctx_task_t))
		return -1;
	struct sd_error err = {0};
	int found = 0;
	for (size_t i = 0; context_names[i] && !found; i++)
		found = dwt_tls(rt->d, context_names[i], &rt->tls_off, &rt->storage_t, &err) == 0;
	if (!found) {
		snprintf(rt->note, sizeof(rt->note),
			 "no thread-local tokio::runtime::context::CONTEXT in the DWARF");
		return -1;
	}
	struct dwt_type c;
	if (find_inner(rt, &rt->storage_t, "Context", &rt->ctx_off, &c) < 0)
		return -1;
	/* A lazily initialised thread-local says whether it is alive. */
	if (dwt_member(rt->d, &rt->storage_t, "state.value.value", &rt->storage_state_off,
		       &rt->storage_state_t, NULL) < 0)
		rt->storage_state_off = UINT64_MAX;
	return 0;
}

/* Does the snapshot look like a Tokio program (its workers' names)? */
static int tokio_threads(const struct sd_snapshot *s)
{
	for (size_t i = 0; i < s->nthreads; i++)
		if (s->threads[i].name && !strncmp(s->threads[i].name, "tokio-runtime-w", 15))
			return 1;
	return 0;
}

/* Does the ELF file open as FD name Tokio's runtime in its symbol table
 * (legacy and v0 Rust mangling both spell "5tokio7runtime")? -1 when it
 * has no symbol table (stripped). A scan of names only: the DWARF of a
 * program that is no Tokio one is never indexed. */
static int tokio_symbols(int fd)
{
	int own = dup(fd), found = -1;
	if (own < 0)
		return -1;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(own, ELF_C_READ_MMAP, NULL);
	for (Elf_Scn *scn = e ? elf_nextscn(e, NULL) : NULL; scn && found < 1;
	     scn = elf_nextscn(e, scn)) {
		GElf_Shdr sh;
		Elf_Data *data;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize ||
		    !(data = elf_getdata(scn, NULL)))
			continue;
		found = 0;
		size_t n = sh.sh_size / sh.sh_entsize;
		for (size_t i = 0; i < n && !found; i++) {
			GElf_Sym sym;
			const char *nm;
			found = gelf_getsym(data, (int)i, &sym) &&
				(nm = elf_strptr(e, sh.sh_link, sym.st_name)) &&
				strstr(nm, "5tokio7runtime");
		}
	}
	if (e)
		elf_end(e);
	close(own);
	return found;
}

static struct sd_tokioruntime *runtime_for(struct sd_tokioruntime **rtp, struct sd_tmod *exe,
					   const struct sd_snapshot *s)
{
	struct sd_tokioruntime *rt = *rtp;
	if (rt && rt->exe_elf == exe->elf)
		return rt;
	tokioruntime_free(rt);
	rt = *rtp = sd_xcalloc(1, sizeof(*rt));
	rt->exe_elf = exe->elf;
	rt->bias = exe->bias;
	rt->exe_start = exe->start;
	rt->exe_end = exe->end;
	rt->text_start = exe->text_start;
	rt->text_end = exe->text_end;
	if (!exe->elf || exe->elf->fd < 0) {
		rt->state = -1;
		return rt;
	}
	if (tokio_symbols(exe->elf->fd) == 0 && !tokio_threads(s)) {
		rt->state = -1;
		return rt;
	}
	struct sd_error err = {0};
	rt->d = dwt_open_fd(exe->elf->fd, exe->name, &err);
	struct dwt_type h;
	const char *hn = "tokio::runtime::task::core::Header";
	/* Not in the executable: in its separate debug file, as frames' are. */
	struct dwt *sep = !rt->d || dwt_type(rt->d, hn, &h, NULL) < 0
			      ? dwfile_open_debug(exe->elf, exe->name, NULL, NULL)
			      : NULL;
	if (sep && dwt_type(sep, hn, &h, NULL) == 0) {
		dwt_free(rt->d);
		rt->d = sep;
	} else {
		dwt_free(sep);
	}
	if (!rt->d || dwt_type(rt->d, hn, &h, NULL) < 0) {
		/* No Tokio we can tell, unless its workers' names say so. */
		rt->state = tokio_threads(s) ? -2 : -1;
		snprintf(rt->note, sizeof(rt->note),
			 "tasks not shown: %s %s; Tokio's tasks need its types: rebuild with full "
			 "debug info (debug = 2 in the Cargo profile, or -C debuginfo=2; a separate "
			 "debug file will do); the threads are shown",
			 exe->name,
			 !rt->d ? "has no DWARF (stripped?), nor a separate debug file with it"
				: "has no DWARF type tokio::runtime::task::core::Header (limited debug "
				  "info?), nor a separate debug file with it");
		return rt;
	}
	rt->l = tkl_new(rt->d);
	if (learn_layout(rt) < 0) {
		char why[sizeof(rt->note)];
		memcpy(why, rt->note, sizeof(why));
		snprintf(rt->note, sizeof(rt->note),
			 "tasks not shown: a Tokio layout stackdump does not know (%.600s); the threads "
			 "are shown",
			 why);
		rt->state = -2;
		return rt;
	}
	rt->tick = tktick_new(rt->d, rt->l, &rt->ctx_t);
	rt->state = 1;
	return rt;
}

/* One snapshot's reading. */
struct tkread {
	struct sd_tokioruntime *rt;
	struct sd_space *sp;
	struct sd_snapshot *s;
	struct rtmem mem;
	struct tkthr {
		pid_t tid;
		uint64_t rt_id;   /* the runtime its context names, 0 none */
		uint64_t task_id; /* the task it polls, 0 none */
		int64_t tick;	  /* its worker core's tick, -1 not known */
		int64_t index;	  /* its multi_thread worker's index, -1 none */
	} *thr;
	size_t nthr;
	uint8_t *buf;
	size_t buf_cap;
	size_t unreadable, moved;
	size_t tls_listed; /* threads glibc's list gave */
	unsigned stops;    /* threads stopped alone for their thread pointer */
	int cut;	   /* a runtime had more tasks than are read */
	unsigned restarts; /* walks begun again: the list changed under them */
	int changed;	   /* a list kept changing: tasks may be missing */
	int workers_only;  /* tokio_read_workers: no task is read */
	uint64_t span, span_vt; /* the last task's cell size and vtable */
};

/* A thread's fs_base: from its registers when the snapshot stopped it,
 * else stopped alone for as long as PTRACE_GETREGSET takes. 0: none. */
static uint64_t thread_pointer(const struct sd_thread *th, unsigned *stops)
{
	if (th->have_regs && !th->regs_partial && th->regs.fs_base)
		return th->regs.fs_base;
	if (*stops >= TK_MAX_STOPS)
		return 0;
	(*stops)++;
	struct sd_tracee t = {.tid = th->tid};
	struct sd_error err = {0};
	if (ptrace_freeze_one(&t, 200, &err) < 0)
		return 0;
	struct user_regs_struct regs;
	struct iovec iov = {&regs, sizeof(regs)};
	uint64_t fs = 0;
	if (t.state == SD_TRACEE_STOPPED &&
	    ptrace(PTRACE_GETREGSET, t.tid, (void *)NT_PRSTATUS, &iov) == 0)
		fs = regs.fs_base;
	ptrace_thaw_one(&t);
	return fs;
}

static uint64_t u64at(const uint8_t *b, uint64_t off)
{
	uint64_t v;
	memcpy(&v, b + off, 8);
	return v;
}

/* Through Option<scheduler::Handle> at B (LEN bytes): the runtime's
 * handle address (ArcInner's data) and flavor. 0 when None. */
static uint64_t handle_of(struct tkread *r, const uint8_t *b, size_t len, const char **flavor)
{
	struct sd_tokioruntime *rt = r->rt;
	const char *vn;
	uint64_t off, off2, aoff, doff;
	struct dwt_type vt, ht, hv, at, pt, inner;
	if (tkl_variant(rt->l, &rt->ctx_handle_t, b, len, &vn, &off, &vt, NULL, NULL) < 0 ||
	    strncmp(vn, "Some", 4) || dwt_member(rt->d, &vt, "__0", &off2, &ht, NULL) < 0)
		return 0;
	off += off2;
	if (off > len || tkl_variant(rt->l, &ht, b + off, len - off, &vn, &off2, &hv, NULL, NULL) < 0)
		return 0;
	*flavor = !strcmp(vn, "MultiThread") ? "multi_thread"
		  : !strcmp(vn, "CurrentThread") ? "current_thread"
						 : NULL;
	if (!*flavor || dwt_member(rt->d, &hv, "__0.ptr.pointer", &aoff, &at, NULL) < 0 ||
	    dwt_pointee(rt->d, &at, &pt, NULL) < 0 ||
	    dwt_member(rt->d, &pt, "data", &doff, &inner, NULL) < 0)
		return 0;
	off += off2 + aoff;
	if (off + 8 > len)
		return 0;
	uint64_t arc = u64at(b, off);
	return arc ? arc + doff : 0;
}

/* The task id in Option<task::Id> at B, 0 when None. */
static uint64_t task_of(struct tkread *r, const uint8_t *b, size_t len)
{
	struct sd_tokioruntime *rt = r->rt;
	const char *vn;
	uint64_t off, o2;
	struct dwt_type vt, it;
	if (tkl_variant(rt->l, &rt->ctx_task_t, b, len, &vn, &off, &vt, NULL, NULL) < 0 ||
	    strncmp(vn, "Some", 4) || dwt_member(rt->d, &vt, "__0", &o2, &it, NULL) < 0)
		return 0;
	off += o2;
	/* Id(u64), Id(NonZero<u64>) ...: down to the integer. */
	for (int depth = 0; it.kind == DWT_STRUCT && depth < 4; depth++) {
		uint64_t o3;
		struct dwt_type t3;
		if (dwt_member(rt->d, &it, "__0", &o3, &t3, NULL) < 0)
			return 0;
		off += o3;
		it = t3;
	}
	if (it.size != 8 || off + 8 > len)
		return 0;
	return u64at(b, off);
}

/* Is the thread-local's storage B (LEN bytes) alive: its state the
 * variant (lazy storage) or the enumerator (eager storage) named Alive? */
static int storage_alive(struct tkread *r, const uint8_t *b, size_t len)
{
	struct sd_tokioruntime *rt = r->rt;
	uint64_t so = rt->storage_state_off;
	if (rt->storage_state_t.kind == DWT_ENUM) {
		int64_t alive;
		size_t sz = rt->storage_state_t.size;
		if (dwt_enumerator(rt->d, &rt->storage_state_t, "Alive", &alive, NULL) < 0 ||
		    (sz != 1 && sz != 2 && sz != 4) || so + sz > len)
			return 0;
		uint32_t v = 0;
		memcpy(&v, b + so, sz);
		return (int64_t)v == alive;
	}
	const char *vn;
	uint64_t o;
	struct dwt_type vt;
	return so < len &&
	       tkl_variant(rt->l, &rt->storage_state_t, b + so, len - so, &vn, &o, &vt, NULL, NULL) ==
		   0 &&
	       !strncmp(vn, "Alive", 5);
}

struct rtent {
	uint64_t id;
	const char *flavor;
	uint64_t handle_t_die; /* the handle's type, for the owned list's path */
};

/* Read each thread's context: the runtime it drives and the task it polls. */
static size_t read_contexts(struct tkread *r, struct rtent *rts, size_t max)
{
	struct sd_tokioruntime *rt = r->rt;
	size_t n = 0;
	unsigned stops = 0;
	size_t len = rt->storage_t.size;
	if (!len || len > 65536)
		return 0;
	/* Thread pointers from glibc's own list, without a stop; without it
	 * (no libc debug file), the threads that matter are stopped alone. */
	if (!rt->tls_tried) {
		rt->tls_tried = 1;
		rt->tls = tktls_new(r->sp, &rt->tls_why);
	}
	struct tktls_thread *gl = NULL;
	size_t ngl = rt->tls ? tktls_threads(rt->tls, &r->mem, 1u << 16, &gl) : 0;
	r->tls_listed = ngl;
	uint8_t *b = sd_xmalloc(len);
	r->thr = sd_xcalloc(r->s->nthreads + 1, sizeof(*r->thr));
	for (size_t i = 0; i < r->s->nthreads; i++) {
		const struct sd_thread *th = &r->s->threads[i];
		int named = th->name && !strncmp(th->name, "tokio-", 6);
		uint64_t tp = 0, addr;
		for (size_t k = 0; k < ngl && !tp; k++)
			if (gl[k].tid == th->tid)
				tp = gl[k].tp;
		if (!tp && th->have_regs && !th->regs_partial)
			tp = th->regs.fs_base;
		/* A core's threads have their registers; its pid is no process's. */
		/* Sampling stops no thread for it. */
		if (!tp && !ngl && !r->sp->read_mem && !r->workers_only &&
		    (named || th->tid == r->s->pid))
			tp = thread_pointer(th, &stops);
		if (!tp || dwt_tls_address(rt->d, context_names[0], tp, &addr, NULL, NULL) < 0) {
			/* the name the layout was learnt by */
			uint64_t size, align;
			if (!tp || dwt_tls_block(rt->d, &size, &align) < 0)
				continue;
			addr = tp - (size + align - 1) / align * align + rt->tls_off;
		}
		if (rtmem_read(&r->mem, addr, b, len, "tokio CONTEXT", NULL) < 0)
			continue;
		if (rt->storage_state_off != UINT64_MAX && !storage_alive(r, b, len))
			continue;
		uint64_t co = rt->ctx_off;
		if (co + rt->ctx_t.size > len)
			continue;
		const char *flavor = NULL;
		uint64_t hoff = co + rt->ctx_handle_off, toff = co + rt->ctx_task_off;
		uint64_t id = handle_of(r, b + hoff, len - hoff, &flavor);
		struct tkthr *t = &r->thr[r->nthr++];
		t->tid = th->tid;
		t->rt_id = id;
		t->task_id = task_of(r, b + toff, len - toff);
		t->tick = t->task_id ? tktick_read(rt->tick, &r->mem, tp, addr + co) : -1;
		t->index = id ? tktick_index(rt->tick, &r->mem, tp, addr + co) : -1;
		if (!id)
			continue;
		size_t k = 0;
		while (k < n && rts[k].id != id)
			k++;
		if (k == n && n < max) {
			rts[n].id = id;
			rts[n].flavor = flavor;
			n++;
		}
	}
	free(b);
	free(gl);
	r->stops = stops;
	return n;
}

/* The vtable at ADDR, learnt once: the target's offsets, the future's
 * type from the poll function's template parameters. */
static struct tkvt *vtable(struct tkread *r, uint64_t addr)
{
	struct sd_tokioruntime *rt = r->rt;
	for (size_t i = 0; i < rt->nvts; i++)
		if (rt->vts[i].addr == addr)
			return &rt->vts[i];
	/* Vtables are statics of the executable, their poll functions its
	 * code: anything else is no task (a freed one, a corrupt link). */
	if (rt->nvts >= TK_MAX_VTABLES || addr < rt->exe_start || addr + 8 > rt->exe_end)
		return NULL;
	sd_grow(&rt->vts, &rt->vts_cap, rt->nvts + 1, sizeof(*rt->vts));
	struct tkvt *v = &rt->vts[rt->nvts++];
	memset(v, 0, sizeof(*v));
	v->addr = addr;
	uint8_t b[512];
	if (rt->vtable_t.size > sizeof(b) ||
	    rtmem_read(&r->mem, addr, b, rt->vtable_t.size, "a task vtable", NULL) < 0)
		return v;
	v->poll = u64at(b, rt->vt_poll);
	if (v->poll < rt->text_start || v->poll >= rt->text_end)
		return v;
	v->trailer_off = u64at(b, rt->vt_trailer);
	v->id_off = u64at(b, rt->vt_id);
	v->sched_off = u64at(b, rt->vt_sched);
	if (v->trailer_off > TK_MAX_FUTURE * 2 || v->id_off > TK_MAX_FUTURE * 2 ||
	    v->sched_off > TK_MAX_FUTURE * 2)
		return v;
	v->ok = 1;
	struct dwt_type ft, st, core;
	uint64_t soff, stoff;
	if (tkl_fn_param(rt->l, v->poll - rt->bias, "T", &ft) < 0 ||
	    tkl_fn_param(rt->l, v->poll - rt->bias, "S", &st) < 0 ||
	    tkl_generic2(rt->l, "tokio::runtime::task::core::Core<", &ft, &st, &core) < 0 ||
	    dwt_member(rt->d, &core, "scheduler", &soff, NULL, NULL) < 0 ||
	    dwt_member(rt->d, &core, "stage", &stoff, &v->stage_t, NULL) < 0)
		return v;
	uint64_t inner;
	struct dwt_type stage;
	/* CoreStage { stage: UnsafeCell<Stage<T>> }: down to the enum. */
	static const char *const paths[] = {"stage.__0.value", "stage.value", "stage", NULL};
	for (size_t i = 0; paths[i]; i++) {
		if (dwt_member(rt->d, &v->stage_t, paths[i], &inner, &stage, NULL) == 0 &&
		    stage.name && !strncmp(stage.name, "Stage<", 6)) {
			v->stage_off = v->sched_off - soff + stoff + inner;
			v->stage_t = stage;
			v->have_future = stage.size && stage.size <= TK_MAX_FUTURE;
			break;
		}
	}
	return v;
}

static uint64_t task_id_cb(void *arg, uint64_t h)
{
	struct tkread *r = arg;
	uint64_t vt = 0, id = 0;
	if (rtmem_uint(&r->mem, h + r->rt->h_vtable, 8, &vt, "a task's vtable", NULL) < 0)
		return 0;
	struct tkvt *v = vtable(r, vt);
	if (!v || !v->ok || rtmem_uint(&r->mem, h + v->id_off, 8, &id, "a task id", NULL) < 0)
		return 0;
	return id;
}

static const char *state_name(uint64_t st)
{
	if (st & TK_COMPLETE)
		return "complete";
	if (st & TK_RUNNING)
		return "running";
	if (st & TK_CANCELLED)
		return "cancelled";
	if (st & TK_NOTIFIED)
		return "scheduled";
	return "idle";
}

/* The future of the task at H (vtable V): name and await chain. */
/* The bytes of the task at H from its header to its trailer's link (what
 * the reader uses of it), or 0 when the vtable's offsets say otherwise. */
static uint64_t cell_span(struct sd_tokioruntime *rt, const struct tkvt *v)
{
	uint64_t span = v->trailer_off + rt->tr_next + 8;
	if (v->id_off + 8 > span)
		span = v->id_off + 8;
	if (v->have_future && v->stage_off + v->stage_t.size > span)
		span = v->stage_off + v->stage_t.size;
	if (span < rt->header_t.size)
		span = rt->header_t.size;
	return span <= 4 * TK_MAX_FUTURE ? span : 0;
}

static int read_cell(struct tkread *r, uint64_t h, uint64_t span)
{
	if (span > r->buf_cap) {
		free(r->buf);
		r->buf = sd_xmalloc(span);
		r->buf_cap = span;
	}
	return rtmem_read(&r->mem, h, r->buf, span, "a task", NULL);
}

/* The future of the task at H (vtable V), its cell copied in r->buf
 * (SPAN bytes): name and await chain. A task whose state word moved while
 * it was copied is copied again. */
static void read_future(struct tkread *r, uint64_t h, struct tkvt *v, uint64_t span,
			struct sd_tokio_task *t)
{
	struct sd_tokioruntime *rt = r->rt;
	if (!v->have_future) {
		t->note = "the future's type is not in the DWARF";
		return;
	}
	uint64_t st0 = u64at(r->buf, rt->h_state);
	for (unsigned attempt = 0; attempt < TK_RETAKES; attempt++) {
		uint64_t st = 0;
		if (rtmem_uint(&r->mem, h + rt->h_state, 8, &st, "a task state", NULL) < 0)
			break;
		/* Moved while copied (polled: its lifecycle or flags changed)?
		 * Its reference count may change freely. */
		if ((st & TK_STATE_MASK) == (st0 & TK_STATE_MASK) || attempt + 1 == TK_RETAKES)
			break;
		r->moved++;
		if (read_cell(r, h, span) < 0) {
			t->note = "its future could not be read";
			return;
		}
		st0 = u64at(r->buf, rt->h_state);
		t->state = state_name(st0);
	}
	const uint8_t *stage = r->buf + v->stage_off;
	size_t len = v->stage_t.size;
	const char *vn;
	uint64_t off, o2;
	struct dwt_type vt, ft;
	if (tkl_variant(rt->l, &v->stage_t, stage, len, &vn, &off, &vt, NULL, NULL) < 0) {
		t->note = "its stage could not be decoded";
		return;
	}
	if (strncmp(vn, "Running", 7) != 0) {
		t->note = !strncmp(vn, "Finished", 8) ? "finished: its output not yet taken"
						       : "finished";
		return;
	}
	if (dwt_member(rt->d, &vt, "__0", &o2, &ft, NULL) < 0 || off + o2 > len)
		return;
	off += o2;
	t->future = strpool_intern(r->s->pool, tkl_future_name(rt->l, &ft));
	struct tkl_chain_ctx c = {&r->mem, r->s->pool, task_id_cb, r, sd_now_ns()};
	tkl_chain(rt->l, &c, &ft, h + v->stage_off + off, stage + off, len - off, 0, t);
}

#define TK_MAX_PASSES 16 /* walks of one list that changed under the reader */

struct seenent {
	uint64_t h, id;
};

static int seen_eq(const void *e, const void *k)
{
	const struct seenent *a = e, *b = k;
	return a->h == b->h && a->id == b->id;
}

/* The tasks of the list whose head pointer is at HEAD_AT, appended to OUT
 * (those in SEEN already left out). Each task is one read of its cell
 * (the size the last task's type had is tried first, then its header
 * alone to learn its type), and one of its state word. A task's link back
 * must name the task it was reached from: one freed or unlinked since
 * that link was read breaks the walk, which goes on from the task before
 * (when still linked) or starts again from the head (tasks are only ever
 * added at the head); the last must be the list's tail (at TAIL_AT). Returns 0, or -1 when the list
 * kept changing. */
static int walk_list(struct tkread *r, uint64_t head_at, uint64_t tail_at, struct sd_tokio_rt *out,
		     size_t *cap, struct hashmap *seen)
{
	struct sd_tokioruntime *rt = r->rt;
	unsigned repairs = 0;
	for (unsigned pass = 0; pass < TK_MAX_PASSES; pass++) {
		/* PREV, reached from PPREV, links to H; PREV_TOFF its trailer. */
		uint64_t prev = 0, pprev = 0, prev_toff = 0, h = 0;
		int broken = 0;
		if (rtmem_uint(&r->mem, head_at, 8, &h, "the owned-task list", NULL) < 0) {
			r->unreadable++;
			return 0;
		}
		while (h && out->ntasks < TK_MAX_TASKS) {
			int whole = r->span && read_cell(r, h, r->span) == 0 &&
				    u64at(r->buf, rt->h_vtable) == r->span_vt;
			uint64_t vaddr = 0, span = 0, again = 0;
			struct tkvt *v = NULL;
			int bad = !whole && read_cell(r, h, rt->header_t.size) < 0;
			if (!bad) {
				vaddr = u64at(r->buf, rt->h_vtable);
				v = vtable(r, vaddr);
				span = v && v->ok ? cell_span(rt, v) : 0;
				bad = !span || (!whole && read_cell(r, h, span) < 0) ||
				      u64at(r->buf, v->trailer_off + rt->tr_prev) != prev;
			}
			/* The last one? A copy taken while the task was unlinked
			 * may hold its link on cleared and its back link not yet
			 * (tokio clears them in that order, after its neighbours
			 * were mended): the list's tail must name it. */
			uint64_t tl = 0;
			if (!bad && !u64at(r->buf, v->trailer_off + rt->tr_next))
				bad = rtmem_uint(&r->mem, tail_at, 8, &tl, "the owned-task list", NULL) < 0 ||
				      tl != h;
			/* The first one: an unlinked task's links are cleared, so
			 * its back link is the head's too; the head says. */
			if (!bad && !prev)
				bad = rtmem_uint(&r->mem, head_at, 8, &again, "the owned-task list",
						 NULL) < 0 ||
				      again != h;
			if (bad) {
				/* H was freed or unlinked after PREV's link to it was
				 * read. PREV still linked (its back link unchanged):
				 * go on from its link as it is now; else from the head. */
				uint64_t pp = 0, pn = 0, hd = 0;
				/* (An unlinked task's back link is cleared, as the first
				 * one's is: for the first, the head must still name it.) */
				if (prev && repairs < TK_MAX_TASKS &&
				    (pprev || (rtmem_uint(&r->mem, head_at, 8, &hd, "the owned-task list",
							  NULL) == 0 &&
					       hd == prev)) &&
				    rtmem_uint(&r->mem, prev + prev_toff + rt->tr_prev, 8, &pp, "a task link",
					       NULL) == 0 &&
				    rtmem_uint(&r->mem, prev + prev_toff + rt->tr_next, 8, &pn, "a task link",
					       NULL) == 0 &&
				    pp == pprev && pn != h &&
				    (pn || (rtmem_uint(&r->mem, tail_at, 8, &hd, "the owned-task list",
						       NULL) == 0 &&
					    hd == prev))) {
					repairs++;
					h = pn;
					continue;
				}
				broken = 1;
				break;
			}
			if (!whole) {
				r->span = span;
				r->span_vt = vaddr;
			}
			uint64_t st = u64at(r->buf, rt->h_state);
			uint64_t next = u64at(r->buf, v->trailer_off + rt->tr_next);
			struct seenent key = {h, u64at(r->buf, v->id_off)};
			int found;
			struct seenent *e =
			    hashmap_put(seen, sd_hash(&key, sizeof(key), 0x5ee), &key, seen_eq, &found);
			*e = key;
			pprev = prev;
			prev = h;
			prev_toff = v->trailer_off;
			h = next;
			if (found)
				continue;
			sd_grow(&out->tasks, cap, out->ntasks + 1, sizeof(*out->tasks));
			struct sd_tokio_task *t = &out->tasks[out->ntasks++];
			memset(t, 0, sizeof(*t));
			t->id = key.id;
			t->state = state_name(st);
			read_future(r, prev, v, span, t);
			if (!strcmp(t->state, "running")) {
				/* Its state machine is the worker's to change, now: what
				 * it does is that thread's stack. Only its name is kept. */
				t->note = "being polled: its await chain is its worker's stack";
				free(t->awaits);
				t->awaits = NULL;
				t->nawaits = 0;
				free(t->holds);
				t->holds = NULL;
				t->nholds = 0;
				t->wait_addr = 0;
			}
			for (size_t i = 0; i < r->nthr; i++)
				if (r->thr[i].task_id && r->thr[i].task_id == t->id)
					t->worker = r->thr[i].tid;
		}
		if (!broken) {
			if (h)
				r->cut = 1;
			return 0;
		}
		r->restarts++;
	}
	return -1;
}

/* The runtime whose handle is at RE->id, its threads and what each polls. */
static void runtime_workers(struct tkread *r, const struct rtent *re, struct sd_tokio_rt *out)
{
	out->id = re->id;
	out->flavor = re->flavor;
	for (size_t i = 0; i < r->nthr; i++)
		if (r->thr[i].rt_id == re->id) {
			out->workers = sd_xrealloc(out->workers, (out->nworkers + 1) * sizeof(pid_t));
			out->worker_tasks = sd_xrealloc(out->worker_tasks,
							(out->nworkers + 1) * sizeof(uint64_t));
			out->worker_tasks[out->nworkers] = r->thr[i].task_id;
			out->worker_ticks = sd_xrealloc(out->worker_ticks,
							(out->nworkers + 1) * sizeof(int64_t));
			out->worker_ticks[out->nworkers] = r->thr[i].tick;
			out->workers[out->nworkers++] = r->thr[i].tid;
		}
}

/* Every task of the runtime whose handle is at RE->id. */
static void read_tasks(struct tkread *r, const struct rtent *re, struct sd_tokio_rt *out)
{
	struct sd_tokioruntime *rt = r->rt;
	struct sd_error err = {0};
	struct dwt_type ht;
	runtime_workers(r, re, out);
	if (r->workers_only)
		return;
	char name[128];
	snprintf(name, sizeof(name), "tokio::runtime::scheduler::%s",
		 !strcmp(re->flavor, "multi_thread") ? "multi_thread::handle::Handle"
						    : "current_thread::Handle");
	int64_t *local = NULL;
	size_t nlocal = !strcmp(re->flavor, "multi_thread") && dwt_type(rt->d, name, &ht, NULL) == 0
			    ? tkw_local_queues(rt->d, &r->mem, re->id, &ht, &local)
			    : 0;
	out->worker_queued = sd_xcalloc(out->nworkers + 1, sizeof(*out->worker_queued));
	for (size_t k = 0; k < out->nworkers; k++) {
		int64_t x = -1;
		for (size_t i = 0; i < r->nthr; i++)
			if (r->thr[i].tid == out->workers[k])
				x = r->thr[i].index;
		out->worker_queued[k] = x >= 0 && (size_t)x < nlocal ? local[x] : -1;
	}
	free(local);
	/* The global queue's depth, where its counter is found. */
	static const char *const inject[] = {"shared.inject.len", "shared.inject.shared.len", NULL};
	out->injected = -1;
	for (size_t i = 0; inject[i] && out->injected < 0 && dwt_type(rt->d, name, &ht, NULL) == 0;
	     i++) {
		uint64_t off, n;
		struct dwt_type lt;
		if (dwt_member(rt->d, &ht, inject[i], &off, &lt, NULL) == 0 && lt.size == 8 &&
		    rtmem_uint(&r->mem, re->id + off, 8, &n, "the inject queue", NULL) == 0 &&
		    n <= TK_MAX_TASKS * 4u)
			out->injected = (int64_t)n;
	}
	uint64_t *heads = NULL;
	size_t nheads = 0;
	int64_t tail_delta = 0;
	if (dwt_type(rt->d, name, &ht, &err) == 0)
		nheads = tkw_list_heads(rt->d, &r->mem, re->id, &ht, &heads, &tail_delta, &err);
	if (!heads) {
		char msg[700];
		snprintf(msg, sizeof(msg), "tasks of runtime 0x%" PRIx64 " not shown: %s", re->id,
			 err.msg);
		r->s->tokio_note = strpool_intern(r->s->pool, msg);
		return;
	}
	size_t cap = 0;
	r->cut = 0;
	struct hashmap seen;
	hashmap_init(&seen, sizeof(struct seenent));
	for (size_t i = 0; i < nheads; i++)
		if (walk_list(r, heads[i], heads[i] + (uint64_t)tail_delta, out, &cap, &seen) < 0)
			r->changed = 1;
	hashmap_release(&seen);
	free(heads);
	/* A thread's context names a task of the blocking pool (a worker runs
	 * inside one, as does a spawn_blocking job) when it polls none of the
	 * runtime's own: not a task it polls. */
	for (size_t k = 0; k < out->nworkers; k++) {
		size_t i = 0;
		while (out->worker_tasks[k] && i < out->ntasks && out->tasks[i].id != out->worker_tasks[k])
			i++;
		if (i == out->ntasks) {
			out->worker_tasks[k] = 0;
			out->worker_ticks[k] = -1;
		}
	}
	tkw_blocking(rt->l, rt->bias, r->s, out);
	tokio_lock_graph(out);
	if (r->cut) {
		char msg[200];
		snprintf(msg, sizeof(msg), "runtime 0x%" PRIx64 ": only the first %u tasks are read",
			 re->id, TK_MAX_TASKS);
		r->s->tokio_note = strpool_intern(r->s->pool, msg);
	}
}

void tokio_read(struct sd_tokioruntime **rtp, struct sd_space *sp, struct sd_snapshot *s,
		int workers_only)
{
	struct sd_tmod *exe = NULL;
	for (size_t i = 0; i < sp->nmods && s->exe; i++)
		if (sp->mods[i].path && !strcmp(sp->mods[i].path, s->exe))
			exe = &sp->mods[i];
	if (!exe || s->core)
		return;
	uint64_t t0 = sd_now_ns();
	struct sd_tokioruntime *rt = runtime_for(rtp, exe, s);
	if (rt->state == -1)
		return;
	s->tokio_read = 1;
	if (rt->state < 0) {
		s->tokio_note = strpool_intern(s->pool, rt->note);
		return;
	}
	struct tkread r = {.rt = rt, .sp = sp, .s = s, .workers_only = workers_only};
	rtmem_space_init(&r.mem, sp);
	struct rtent rts[TK_MAX_RUNTIMES];
	size_t n = read_contexts(&r, rts, TK_MAX_RUNTIMES);
	if (!n) {
		s->tokio_note = strpool_intern(
		    s->pool, "no thread of the process is in a Tokio runtime's context (no runtime "
			     "running, or its threads could not be read)");
	}
	s->tokio = sd_xcalloc(n + 1, sizeof(*s->tokio));
	for (size_t i = 0; i < n; i++)
		read_tasks(&r, &rts[i], &s->tokio[s->ntokio++]);
	if (r.changed && !s->tokio_note) {
		char msg[200];
		snprintf(msg, sizeof(msg),
			 "the task list changed while it was read (%u walks begun again): tasks "
			 "spawned or gone meanwhile may be missing",
			 r.restarts);
		s->tokio_note = strpool_intern(s->pool, msg);
	}
	if (r.unreadable && !s->tokio_note) {
		char msg[200];
		snprintf(msg, sizeof(msg),
			 "the task list could not be read to its end (%zu unreadable link%s): a "
			 "task freed while it was read, or a corrupt list",
			 r.unreadable, r.unreadable == 1 ? "" : "s");
		s->tokio_note = strpool_intern(s->pool, msg);
	}
	rtmem_release(&r.mem);
	free(r.thr);
	free(r.buf);
	s->tokio_us = (sd_now_ns() - t0) / 1000;
}

