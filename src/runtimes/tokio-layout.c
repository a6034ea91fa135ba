// SPDX-License-Identifier: MIT
// Rust layouts from DWARF for the Tokio reader (tokio-layout.h): enums by
// their variant parts, qualified names through the DIEs' scopes, template
// parameters of generic functions, and the await chain of an async fn's
// state machine decoded from a copy of its bytes.
#include "tokio-layout.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demangle.h"
#include "hashmap.h"
#include "strpool.h"
#include "util.h"

#define TKL_MAX_DEPTH 64 /* levels of an await chain decoded at most */

/* One variant of an enum type, learnt once. */
struct tkvar {
	uint64_t value;
	int is_default;
	uint64_t off;	    /* of its member, from the enum's start */
	struct dwt_type t;  /* its member's type */
	const char *name;   /* the variant's type name, or the member's */
	const char *file;   /* its declaration (rustc: a SuspendN's .await) */
	int line;
	int has_awaitee;    /* SuspendN: the future it awaits */
	uint64_t awaitee_off;
	struct dwt_type awaitee_t;
	struct tkguard {
		uint64_t off;	   /* of the lock's pointer, from the variant's start */
		uint64_t data_off; /* added to it (an Arc's pointer: its data) */
		const char *kind;
		const char *var;   /* the variable's name */
	} *guards;		   /* the guards and permits it keeps */
	size_t nguards;
};

/* An enum type's layout, learnt once: a tokio task's stage, an async
 * fn's state machine, an Option are read for every task. */
struct tkenum {
	uint64_t die;
	int kind; /* 0 no enum, 1 an enum, 2 a state machine (__state) */
	int has_discr;
	uint64_t discr_off;
	size_t discr_size;
	struct tkvar *v;
	size_t nv;
};

struct qent {
	uint64_t die;
	const char *name;
};

struct tkl {
	struct dwt *d;
	Dwarf *dw;
	struct hashmap names; /* DIE -> qualified name */
	struct hashmap enums; /* DIE -> struct tkenum */
	struct strpool *pool;
};

static int qent_eq(const void *e, const void *k)
{
	return ((const struct qent *)e)->die == *(const uint64_t *)k;
}

struct tkl *tkl_new(struct dwt *d)
{
	struct tkl *l = sd_xcalloc(1, sizeof(*l));
	l->d = d;
	l->dw = dwt_dwarf(d);
	hashmap_init(&l->names, sizeof(struct qent));
	hashmap_init(&l->enums, sizeof(struct tkenum));
	l->pool = strpool_new();
	return l;
}

void tkl_free(struct tkl *l)
{
	if (!l)
		return;
	hashmap_release(&l->names);
	size_t pos = 0;
	for (struct tkenum *e; (e = hashmap_next(&l->enums, &pos));) {
		for (size_t i = 0; i < e->nv; i++)
			free(e->v[i].guards);
		free(e->v);
	}
	hashmap_release(&l->enums);
	strpool_free(l->pool);
	free(l);
}

const char *tkl_qualname(struct tkl *l, uint64_t die)
{
	uint64_t h = sd_hash(&die, sizeof(die), 0x7c);
	struct qent *e = hashmap_find(&l->names, h, &die, qent_eq);
	if (e)
		return e->name;
	Dwarf_Die self, *scopes = NULL;
	struct strbuf sb;
	strbuf_init(&sb);
	if (dwarf_offdie(l->dw, die, &self)) {
		int n = dwarf_getscopes_die(&self, &scopes);
		for (int i = n - 1; i >= 0; i--) {
			int tag = dwarf_tag(&scopes[i]);
			const char *nm = dwarf_diename(&scopes[i]);
			if (!nm || tag == DW_TAG_compile_unit)
				continue;
			if (tag != DW_TAG_namespace && tag != DW_TAG_structure_type &&
			    tag != DW_TAG_union_type && tag != DW_TAG_enumeration_type &&
			    tag != DW_TAG_subprogram)
				continue;
			strbuf_addf(&sb, "%s%s", sb.len ? "::" : "", nm);
		}
		free(scopes);
		if (!sb.len && dwarf_diename(&self))
			strbuf_adds(&sb, dwarf_diename(&self));
	}
	int found;
	e = hashmap_put(&l->names, h, &die, qent_eq, &found);
	e->die = die;
	e->name = strpool_intern(l->pool, sb.len ? sb.buf : "?");
	strbuf_release(&sb);
	return e->name;
}

static int member_loc(Dwarf_Die *m, uint64_t *off)
{
	Dwarf_Attribute a;
	Dwarf_Word w;
	*off = 0;
	if (!dwarf_attr(m, DW_AT_data_member_location, &a))
		return 0;
	if (dwarf_formudata(&a, &w) == 0) {
		*off = w;
		return 0;
	}
	return -EINVAL;
}

static int type_of_die(struct tkl *l, Dwarf_Die *m, struct dwt_type *out)
{
	Dwarf_Attribute a;
	Dwarf_Die t;
	if (!dwarf_attr_integrate(m, DW_AT_type, &a) || !dwarf_formref_die(&a, &t))
		return -ENOENT;
	return dwt_type_die(l->d, dwarf_dieoffset(&t), out);
}

static uint64_t load(const uint8_t *b, size_t size)
{
	uint64_t v = 0;
	switch (size) {
	case 1: v = b[0]; break;
	case 2: { uint16_t x; memcpy(&x, b, 2); v = x; break; }
	case 4: { uint32_t x; memcpy(&x, b, 4); v = x; break; }
	default: memcpy(&v, b, 8); break;
	}
	return v;
}

/* The variant part of the struct DIE S, or 0. */
static int variant_part(Dwarf_Die *s, Dwarf_Die *vp)
{
	if (dwarf_child(s, vp) != 0)
		return 0;
	do {
		if (dwarf_tag(vp) == DW_TAG_variant_part)
			return 1;
	} while (dwarf_siblingof(vp, vp) == 0);
	return 0;
}

/* The discriminant member of variant part VP. */
static int discr_of(Dwarf_Die *vp, Dwarf_Die *m)
{
	Dwarf_Attribute a;
	return dwarf_attr(vp, DW_AT_discr, &a) && dwarf_formref_die(&a, m);
}

static int tkenum_eq(const void *e, const void *k)
{
	return ((const struct tkenum *)e)->die == *(const uint64_t *)k;
}

/* The tokio::sync guards and permits among the members of a SuspendN
 * variant's struct: the locks its task holds while suspended there. */
static void learn_guards(struct tkl *l, struct tkvar *x)
{
	static const struct {
		const char *prefix, *kind, *path;
		int arc;
	} known[] = {
	    {"tokio::sync::mutex::MutexGuard<", "tokio::sync::Mutex", "lock", 0},
	    {"tokio::sync::mutex::MappedMutexGuard<", "tokio::sync::Mutex", "s", 0},
	    {"tokio::sync::mutex::OwnedMutexGuard<", "tokio::sync::Mutex", "lock.ptr.pointer", 1},
	    {"tokio::sync::semaphore::SemaphorePermit", "tokio::sync::Semaphore", "sem", 0},
	    {"tokio::sync::semaphore::OwnedSemaphorePermit", "tokio::sync::Semaphore",
	     "sem.ptr.pointer", 1},
	    /* An RwLock's guard names the semaphore inside it (2: the lock is
	     * that RwLock<T>, T as the guard's own parameters), an owned one
	     * its Arc (ManuallyDrop'd in 1.24). */
	    {"tokio::sync::rwlock::read_guard::RwLockReadGuard<", "tokio::sync::RwLock", "s", 2},
	    {"tokio::sync::rwlock::write_guard::RwLockWriteGuard<", "tokio::sync::RwLock", "s", 2},
	    {"tokio::sync::rwlock::write_guard_mapped::RwLockMappedWriteGuard<",
	     "tokio::sync::RwLock", "s", 2},
	    {"tokio::sync::rwlock::owned_read_guard::OwnedRwLockReadGuard<", "tokio::sync::RwLock",
	     "lock.ptr.pointer", 1},
	    {"tokio::sync::rwlock::owned_read_guard::OwnedRwLockReadGuard<", "tokio::sync::RwLock",
	     "lock.value.ptr.pointer", 1},
	    {"tokio::sync::rwlock::owned_write_guard::OwnedRwLockWriteGuard<",
	     "tokio::sync::RwLock", "lock.ptr.pointer", 1},
	    {"tokio::sync::rwlock::owned_write_guard::OwnedRwLockWriteGuard<",
	     "tokio::sync::RwLock", "lock.value.ptr.pointer", 1},
	};
	Dwarf_Die s, m;
	size_t cap = 0;
	if (!dwarf_offdie(l->dw, x->t.die, &s) || dwarf_child(&s, &m) != 0)
		return;
	do {
		const char *n = dwarf_diename(&m);
		uint64_t moff, ioff;
		struct dwt_type mt, it;
		if (dwarf_tag(&m) != DW_TAG_member || !n || !strcmp(n, "__awaitee") ||
		    member_loc(&m, &moff) < 0 || type_of_die(l, &m, &mt) < 0 || mt.kind != DWT_STRUCT)
			continue;
		const char *q = tkl_qualname(l, mt.die);
		for (size_t k = 0; k < sizeof(known) / sizeof(known[0]); k++) {
			if (strncmp(q, known[k].prefix, strlen(known[k].prefix)) ||
			    dwt_member(l->d, &mt, known[k].path, &ioff, &it, NULL) < 0 ||
			    it.kind != DWT_POINTER)
				continue;
			struct tkguard g = {moff + ioff, 0, known[k].kind, strpool_intern(l->pool, n)};
			struct dwt_type inner;
			uint64_t doff;
			if (known[k].arc == 1) {
				/* An Arc's pointer is to its ArcInner: the lock is its data. */
				if (dwt_pointee(l->d, &it, &inner, NULL) < 0 ||
				    dwt_member(l->d, &inner, "data", &doff, NULL, NULL) < 0)
					continue;
				g.data_off = doff;
			} else if (known[k].arc == 2) {
				/* The pointer is to the lock's member `s`: back to its start. */
				const char *args = strchr(q + strlen(known[k].prefix) - 1, '<');
				char name[512];
				snprintf(name, sizeof(name), "tokio::sync::rwlock::RwLock%s", args);
				if (dwt_type(l->d, name, &inner, NULL) < 0 ||
				    dwt_member(l->d, &inner, "s", &doff, NULL, NULL) < 0)
					continue;
				g.data_off = 0 - doff;
			}
			sd_grow(&x->guards, &cap, x->nguards + 1, sizeof(*x->guards));
			x->guards[x->nguards++] = g;
			break;
		}
	} while (dwarf_siblingof(&m, &m) == 0);
}

static void learn_variant(struct tkl *l, Dwarf_Die *v, struct tkenum *e, size_t *cap)
{
	Dwarf_Attribute a;
	Dwarf_Word w = 0;
	int dflt = !dwarf_attr(v, DW_AT_discr_value, &a);
	if (!dflt && dwarf_formudata(&a, &w) != 0)
		return;
	Dwarf_Die m;
	if (dwarf_child(v, &m) != 0)
		return;
	do {
		if (dwarf_tag(&m) != DW_TAG_member)
			continue;
		struct tkvar x;
		memset(&x, 0, sizeof(x));
		x.value = w;
		x.is_default = dflt;
		if (member_loc(&m, &x.off) < 0 || type_of_die(l, &m, &x.t) < 0)
			return;
		const char *n = dwarf_diename(&m);
		x.name = x.t.name && *x.t.name ? x.t.name : n ? n : "?";
		const char *f = dwarf_decl_file(&m);
		x.file = f ? strpool_intern(l->pool, f) : NULL;
		if (dwarf_decl_line(&m, &x.line) != 0)
			x.line = 0;
		x.has_awaitee = x.t.kind == DWT_STRUCT &&
				dwt_member(l->d, &x.t, "__awaitee", &x.awaitee_off, &x.awaitee_t,
					   NULL) == 0;
		if (x.has_awaitee)
			learn_guards(l, &x);
		sd_grow(&e->v, cap, e->nv + 1, sizeof(*e->v));
		e->v[e->nv++] = x;
		return;
	} while (dwarf_siblingof(&m, &m) == 0);
}

static const struct tkenum *enum_of(struct tkl *l, const struct dwt_type *t)
{
	uint64_t h = sd_hash(&t->die, sizeof(t->die), 0xe7);
	struct tkenum *e = hashmap_find(&l->enums, h, &t->die, tkenum_eq);
	if (e)
		return e;
	struct tkenum x;
	memset(&x, 0, sizeof(x));
	x.die = t->die;
	Dwarf_Die s, vp, dm, v;
	if (t->kind == DWT_STRUCT && dwarf_offdie(l->dw, t->die, &s) && variant_part(&s, &vp)) {
		x.kind = 1;
		if (discr_of(&vp, &dm)) {
			struct dwt_type dt;
			const char *n = dwarf_diename(&dm);
			if (member_loc(&dm, &x.discr_off) == 0 && type_of_die(l, &dm, &dt) == 0 &&
			    dt.size) {
				x.has_discr = 1;
				x.discr_size = dt.size > 8 ? 8 : dt.size;
				if (n && !strcmp(n, "__state"))
					x.kind = 2;
			}
		}
		size_t cap = 0;
		if (dwarf_child(&vp, &v) == 0) {
			do {
				if (dwarf_tag(&v) == DW_TAG_variant)
					learn_variant(l, &v, &x, &cap);
			} while (dwarf_siblingof(&v, &v) == 0);
		}
	}
	int found;
	e = hashmap_put(&l->enums, h, &t->die, tkenum_eq, &found);
	*e = x;
	return e;
}

int tkl_is_generator(struct tkl *l, const struct dwt_type *t)
{
	return enum_of(l, t)->kind == 2;
}

/* The active variant of T in B (LEN bytes). */
static const struct tkvar *variant_in(struct tkl *l, const struct dwt_type *t, const uint8_t *b,
				      size_t len)
{
	const struct tkenum *e = enum_of(l, t);
	if (!e->kind)
		return NULL;
	uint64_t val = 0;
	if (e->has_discr) {
		if (e->discr_off + e->discr_size > len)
			return NULL;
		val = load(b + e->discr_off, e->discr_size);
		if (e->discr_size < 8)
			val &= (1ull << (8 * e->discr_size)) - 1;
	}
	const struct tkvar *dflt = NULL;
	for (size_t i = 0; i < e->nv; i++) {
		if (e->v[i].is_default) {
			if (!dflt)
				dflt = &e->v[i];
		} else if (e->has_discr && e->v[i].value == val) {
			return &e->v[i];
		}
	}
	return dflt;
}

int tkl_variant(struct tkl *l, const struct dwt_type *t, const uint8_t *b, size_t len,
		const char **name, uint64_t *off, struct dwt_type *vt, const char **file, int *line)
{
	const struct tkvar *v = variant_in(l, t, b, len);
	if (!v)
		return enum_of(l, t)->kind ? -EINVAL : -ENOENT;
	*name = v->name;
	*off = v->off;
	*vt = v->t;
	if (file)
		*file = v->file;
	if (line)
		*line = v->line;
	return 0;
}

/* The subprogram whose code starts at PC among the children of PARENT
 * (through namespaces and types), DEPTH bounding the descent. */
static int find_fn(Dwarf_Die *parent, uint64_t pc, Dwarf_Die *out, int depth)
{
	Dwarf_Die c;
	if (depth > 24 || dwarf_child(parent, &c) != 0)
		return 0;
	do {
		int tag = dwarf_tag(&c);
		Dwarf_Addr lo;
		if (tag == DW_TAG_subprogram && dwarf_hasattr(&c, DW_AT_low_pc) &&
		    dwarf_lowpc(&c, &lo) == 0 && lo == pc) {
			*out = c;
			return 1;
		}
		if ((tag == DW_TAG_namespace || tag == DW_TAG_structure_type ||
		     tag == DW_TAG_union_type || tag == DW_TAG_enumeration_type) &&
		    find_fn(&c, pc, out, depth + 1))
			return 1;
	} while (dwarf_siblingof(&c, &c) == 0);
	return 0;
}

int tkl_fn_param(struct tkl *l, uint64_t pc, const char *param, struct dwt_type *out)
{
	Dwarf_Die cu, fn, decl, c;
	int found = dwarf_addrdie(l->dw, pc, &cu) && find_fn(&cu, pc, &fn, 0);
	/* The unit the address ranges name may not be the one that holds the
	 * function (rustc's units overlap): every unit then. */
	Dwarf_Off off = 0, next;
	size_t hsize;
	while (!found && dwarf_nextcu(l->dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		if (dwarf_offdie(l->dw, off + hsize, &cu))
			found = find_fn(&cu, pc, &fn, 0);
		off = next;
	}
	if (!found)
		return -ENOENT;
	Dwarf_Attribute a;
	if (dwarf_attr(&fn, DW_AT_specification, &a) && dwarf_formref_die(&a, &decl))
		fn = decl;
	if (dwarf_child(&fn, &c) != 0)
		return -ENOENT;
	do {
		const char *nm = dwarf_diename(&c);
		if (dwarf_tag(&c) == DW_TAG_template_type_parameter && nm && !strcmp(nm, param))
			return type_of_die(l, &c, out);
	} while (dwarf_siblingof(&c, &c) == 0);
	return -ENOENT;
}

int tkl_generic2(struct tkl *l, const char *prefix, const struct dwt_type *t,
		 const struct dwt_type *s, struct dwt_type *out)
{
	struct strbuf sb;
	strbuf_init(&sb);
	strbuf_addf(&sb, "%s%s, %s>", prefix, tkl_qualname(l, t->die), tkl_qualname(l, s->die));
	int r = dwt_type(l->d, sb.buf, out, NULL);
	strbuf_release(&sb);
	return r;
}

/* "fx::run::{async_fn_env#0}" -> "fx::run"; "...::{async_block_env#3}"
 * -> "...::{async_block#3}". */
const char *tkl_future_name(struct tkl *l, const struct dwt_type *t)
{
	const char *q = tkl_qualname(l, t->die);
	/* Asked at every level of every task's chain: a buffer on the stack,
	 * the heap only for a name longer than it. */
	size_t n = strlen(q), size = n + 64;
	char small[512], *buf = size <= sizeof(small) ? small : sd_xmalloc(size);
	const char *name = rust_future_name(q, n, buf, size);
	const char *r = strcmp(name, q) ? strpool_intern(l->pool, name) : q;
	if (buf != small)
		free(buf);
	return r;
}

/* A pointer member NAME of struct T at B + OFF (bounded by LEN), or 0. */
static uint64_t ptr_member(struct tkl *l, const struct dwt_type *t, const char *name,
			   const uint8_t *b, size_t len, uint64_t off)
{
	uint64_t moff;
	struct dwt_type mt;
	if (t->kind != DWT_STRUCT || dwt_member(l->d, t, name, &moff, &mt, NULL) < 0 ||
	    mt.size != 8 || off + moff + 8 > len)
		return 0;
	return load(b + off + moff, 8);
}

/* The deadline of a tokio Sleep (its Instant: tv_sec and tv_nsec) as time
 * left from NOW_NS; 0 when it has no such field. */
static int sleep_left(struct tkl *l, const struct dwt_type *t, const uint8_t *b, size_t len,
		      uint64_t off, uint64_t now_ns, double *left)
{
	/* tokio's Instant wraps std's, which wraps the platform's Timespec. */
	static const char *const paths[] = {"inner.deadline.std.__0.t", "entry.deadline.std.__0.t",
					    "inner.deadline.std.t", "deadline.std.__0.t", NULL};
	for (size_t i = 0; paths[i]; i++) {
		uint64_t doff, soff, noff;
		struct dwt_type dt;
		if (dwt_member(l->d, t, paths[i], &doff, &dt, NULL) < 0 ||
		    dwt_member(l->d, &dt, "tv_sec", &soff, NULL, NULL) < 0 ||
		    dwt_member(l->d, &dt, "tv_nsec", &noff, NULL, NULL) < 0 ||
		    off + doff + noff + 4 > len || off + doff + soff + 8 > len)
			continue;
		int64_t sec = (int64_t)load(b + off + doff + soff, 8);
		uint32_t nsec = (uint32_t)load(b + off + doff + noff, 4);
		double dl = (double)sec + nsec / 1e9;
		*left = dl - (double)now_ns / 1e9;
		return 1;
	}
	return 0;
}

static const char *fmt(struct strpool *pool, const char *f, ...)
	__attribute__((format(printf, 2, 3)));
static const char *fmt(struct strpool *pool, const char *f, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, f);
	vsnprintf(buf, sizeof(buf), f, ap);
	va_end(ap);
	return strpool_intern(pool, buf);
}

/* What a level that is no state machine waits for: its kind and detail,
 * from its type and the async fn that awaits it (PARENT, may be NULL,
 * whose variant struct PV at POFF may hold `self`). */
static void leaf(struct tkl *l, const struct tkl_chain_ctx *c, const struct dwt_type *t,
		 uint64_t addr, const uint8_t *b, size_t len, uint64_t off, const char *parent,
		 const struct dwt_type *pv, uint64_t poff, struct sd_tokio_await *a, uint64_t *wait)
{
	const char *q = tkl_qualname(l, t->die);
	uint64_t self = pv ? ptr_member(l, pv, "self", b, len, poff) : 0;
	a->function = strpool_intern(c->pool, q);
	a->kind = "future";
	(void)addr;
	if (!strncmp(q, "tokio::time::sleep::Sleep", 25)) {
		double left;
		a->kind = "timer";
		if (sleep_left(l, t, b, len, off, c->now_ns, &left))
			a->detail = left >= 0 ? fmt(c->pool, "deadline in %.3f s", left)
					      : fmt(c->pool, "deadline passed %.3f s ago", -left);
	} else if (!strncmp(q, "tokio::sync::notify::Notified", 29)) {
		uint64_t n = ptr_member(l, t, "notify", b, len, off);
		a->kind = "notify";
		if (n)
			a->detail = fmt(c->pool, "Notify 0x%" PRIx64, n);
	} else if (!strncmp(q, "tokio::runtime::task::join::JoinHandle<", 39)) {
		uint64_t roff, poff2;
		struct dwt_type rt;
		a->kind = "join";
		if (dwt_member(l->d, t, "raw", &roff, &rt, NULL) == 0 &&
		    dwt_member(l->d, &rt, "ptr", &poff2, NULL, NULL) == 0 &&
		    off + roff + poff2 + 8 <= len) {
			uint64_t h = load(b + off + roff + poff2, 8);
			uint64_t id = h && c->task_id ? c->task_id(c->arg, h) : 0;
			if (id)
				a->detail = fmt(c->pool, "task %" PRIu64, id);
			else if (h)
				a->detail = fmt(c->pool, "task header 0x%" PRIx64, h);
		}
	} else if (!strncmp(q, "tokio::sync::batch_semaphore::Acquire", 37)) {
		uint64_t sem = ptr_member(l, t, "semaphore", b, len, off);
		*wait = self ? self : sem;
		if (parent && strstr(parent, "::mutex::")) {
			a->kind = "mutex";
			a->detail = fmt(c->pool, "tokio::sync::Mutex 0x%" PRIx64, self ? self : sem);
		} else if (parent && strstr(parent, "::rwlock::")) {
			a->kind = "rwlock";
			a->detail = fmt(c->pool, "tokio::sync::RwLock 0x%" PRIx64, self ? self : sem);
		} else {
			a->kind = "semaphore";
			a->detail = fmt(c->pool, "tokio::sync::Semaphore 0x%" PRIx64, self ? self : sem);
		}
	} else if (parent && strstr(parent, "tokio::sync::mpsc::")) {
		a->kind = "channel";
		if (self)
			a->detail = fmt(c->pool, "mpsc receiver 0x%" PRIx64, self);
	} else if (parent && strstr(parent, "tokio::sync::oneshot")) {
		a->kind = "channel";
	} else if (strstr(q, "tokio::net::") || strstr(q, "tokio::io::")) {
		a->kind = "io";
	}
}

/* The guards variant V (at OFF in B) keeps, added to TASK. */
static void holds_of(const struct tkl_chain_ctx *c, const struct tkvar *v, const uint8_t *b,
		     size_t len, uint64_t off, const struct sd_tokio_await *level,
		     struct sd_tokio_task *task, size_t *cap)
{
	for (size_t i = 0; i < v->nguards; i++) {
		const struct tkguard *g = &v->guards[i];
		if (off + g->off + 8 > len)
			continue;
		uint64_t p = load(b + off + g->off, 8);
		if (!p)
			continue;
		sd_grow(&task->holds, cap, task->nholds + 1, sizeof(*task->holds));
		struct sd_tokio_hold *h = &task->holds[task->nholds++];
		h->kind = g->kind;
		h->addr = p + g->data_off;
		if (level->file)
			h->evidence = fmt(c->pool, "%s in %s at %s:%d", g->var, level->function,
					  level->file, level->line);
		else
			h->evidence = fmt(c->pool, "%s in %s", g->var, level->function);
	}
}

static size_t tkl_chain_levels(struct tkl *l, const struct tkl_chain_ctx *c,
			       const struct dwt_type *t0, uint64_t addr, const uint8_t *b, size_t len,
			       size_t max, struct sd_tokio_await **out, const char **note,
			       struct sd_tokio_task *task, size_t *hcap)
{
	struct dwt_type t = *t0;
	uint64_t off = 0;
	size_t n = 0, cap = 0;
	const char *parent = NULL;
	struct dwt_type pv;
	uint64_t pvoff = 0;
	int have_pv = 0;
	*out = NULL;
	if (max > TKL_MAX_DEPTH || !max)
		max = TKL_MAX_DEPTH;
	while (n < max) {
		sd_grow(out, &cap, n + 1, sizeof(**out));
		struct sd_tokio_await *a = &(*out)[n];
		memset(a, 0, sizeof(*a));
		if (t.kind == DWT_POINTER || (t.name && !strncmp(t.name, "Pin<alloc::boxed::Box<", 22))) {
			a->function = strpool_intern(c->pool, tkl_qualname(l, t.die));
			a->kind = "future";
			a->detail = "a boxed future: its type is not known";
			*note = "a boxed future with no type: the chain stops there";
			return n + 1;
		}
		if (!tkl_is_generator(l, &t)) {
			leaf(l, c, &t, addr + off, b, len, off, parent, have_pv ? &pv : NULL, pvoff, a,
			     &task->wait_addr);
			return n + 1;
		}
		const char *fn = tkl_future_name(l, &t);
		a->function = strpool_intern(c->pool, fn);
		const struct tkvar *v = off > len ? NULL : variant_in(l, &t, b + off, len - off);
		if (!v) {
			*note = fmt(c->pool, "the state of %s could not be decoded", fn);
			return n + 1;
		}
		a->file = v->file ? strpool_intern(c->pool, v->file) : NULL;
		a->line = v->line;
		if (strncmp(v->name, "Suspend", 7) != 0) {
			a->detail = !strcmp(v->name, "Unresumed") ? "not started yet"
				    : !strcmp(v->name, "Returned") ? "returned"
				    : !strcmp(v->name, "Panicked") ? "panicked"
								   : strpool_intern(c->pool, v->name);
			return n + 1;
		}
		holds_of(c, v, b, len, off + v->off, a, task, hcap);
		n++;
		if (!v->has_awaitee) {
			*note = fmt(c->pool, "%s is suspended with no __awaitee", fn);
			return n;
		}
		uint64_t voff = v->off, aoff = v->awaitee_off;
		struct dwt_type vt = v->t, at = v->awaitee_t;
		parent = a->function;
		pv = vt;
		pvoff = off + voff;
		have_pv = 1;
		off += voff + aoff;
		t = at;
	}
	*note = "the await chain is deeper than stackdump follows";
	return n;
}

void tkl_chain(struct tkl *l, const struct tkl_chain_ctx *c, const struct dwt_type *t0,
	       uint64_t addr, const uint8_t *b, size_t len, size_t max, struct sd_tokio_task *task)
{
	struct sd_tokio_await **out = &task->awaits;
	const char *note0 = NULL, **note = &note0;
	size_t hcap = 0;
	task->nawaits = tkl_chain_levels(l, c, t0, addr, b, len, max, out, note, task, &hcap);
	if (note0)
		task->note = note0;
}
