// SPDX-License-Identifier: MIT
// The symbolize stage over libdwfl. Modules are reported from our own map
// of the target and their ELF files handed over from the image cache, so
// files of containerised or deleted executables are found the same way the
// unwinder found them. Debug info is found by build-id and .gnu_debuglink.
#include "symbols.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "debugcache.h"
#include "debugfind.h"
#include "debugimage.h"
#include "demangle.h"
#include "dwindex.h"
#include "hashmap.h"
#include "saferead.h"
#include "space.h"
#include "perfmap.h"
#include "symcache.h"

/* One function of a resolved address: the innermost first. */
struct symentry {
	const char *function; /* pool of the symbols session */
	const char *file;
	int line;
	int inlined;
	int debuginfo;
	uint64_t symoff;
};

/* A resolved address in the cache; the key is (elf, addr, mode). */
struct symcache_slot {
	const struct sd_elf *elf;
	uint64_t addr;            /* file-relative, adjusted pc */
	unsigned mode;
	struct symentry *v;
	unsigned n;
};

/* The address-range index of one reported module, built on its first
 * lookup. A module reported again with the same name and range is the same
 * Dwfl_Module (libdwfl keeps it), so the index stays valid across syncs. */
struct modindex {
	Dwfl_Module *dm;
	char *name;
	uint64_t start, end;
	struct sd_dwindex *idx; /* NULL: module without DWARF */
	uint64_t bias;
	struct modsym *syms;    /* function symbols by address */
	size_t nsyms;
	struct sd_datasyms *data; /* every symbol, for data lookups; built on the first */
};

/* One function symbol of a module (from its .symtab, or .dynsym, or the
 * separate debug file's, as libdwfl found them). libdwfl answers an
 * address by a linear scan of every symbol, which on binaries with tens
 * of thousands of symbols is most of the cost of a lookup; sorted once,
 * a lookup is a binary search. */
struct modsym {
	uint64_t start, size; /* runtime addresses */
	const char *name;     /* libdwfl's, lives as long as the module */
	int rank;             /* binding: global 2, weak 1, local 0 */
};

struct sd_symbols {
	struct sd_space *space;
	Dwfl *dwfl;
	struct sd_perfmap pm; /* the JIT's perf map (perfmap.h) */
	struct modindex *mi;
	size_t nmi;
	struct strpool *pool;
	struct hashmap cache; /* of struct symcache_slot */
	uint64_t lookups, hits;
	struct hashmap datacache; /* of struct sd_dataslot (symcache.h) */
	struct sd_symcounts counts;
	unsigned synced_generation;
	/* Modules whose index a second thread builds (symbols_prefetch):
	 * while it runs, it alone touches the session, until the main thread
	 * waits for it and builds the rest beside it (prefetch_drain). */
	struct {
		pthread_t thread;
		int running;
		pthread_mutex_t mu;
		pthread_cond_t cv;
		Dwfl_Module **q;
		size_t nq, cap, next;
		int closed;
		void *last; /* the module queued last, checked without the lock */
		uint64_t cpu_ns; /* the prefetch thread's CPU so far (atomic) */
		uint64_t cpu_taken; /* ... up to the last symbols_prefetch_cpu_take */
	} pf;
};

/* For libdwfl's own search, used only to reach debuginfod: a folder
 * that cannot exist, so that it opens no local file. */
static char debuginfo_none[] = "/dev/null/stackdump-no-debug-path";
static char *debuginfo_path = debuginfo_none;

static int find_elf_cb(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
		       char **file_name, Elf **elfp)
{
	(void)mod;
	(void)modname;
	(void)base;
	struct sd_elf *e = *userdata;
	if (!e)
		return -1;
	if (e->fd >= 0) {
		int fd = dup(e->fd);
		if (fd < 0)
			return -1;
		lseek(fd, 0, SEEK_SET);
		*file_name = strdup(e->path);
		return fd;
	}
	/* A memory image (the vdso). */
	Elf *elf = elf_memory((char *)e->data, e->size);
	if (!elf)
		return -1;
	*elfp = elf;
	return -1;
}

/* FD, or the inflated image of the debug file open as FD (debugimage.h),
 * which the cache (debugcache.h) then keeps when the user made one.
 * DEBUGIMAGE_OTHER when FD's build-id is not ID (when ID is given). */
static int image_of(int fd, const unsigned char *id, int len, int check)
{
	int img = debugimage_make(fd, check && len > 0 ? id : NULL, len > 0 ? (size_t)len : 0);
	if (img == DEBUGIMAGE_OTHER)
		return img;
	if (img < 0)
		return fd; /* nothing to inflate: the file as it is */
	if (len > 0 && debugcache_dir())
		debugcache_add(img, id, (size_t)len);
	close(fd);
	return img;
}

/* The module's debug file, made ready for libdw: the inflated copy from
 * the cache (debugcache.h), else the inflated image (debugimage.h) of the
 * file libdwfl would find, else that file. libdwfl keeps a file its own
 * build-id search opened, whatever this returns, so the build-id path is
 * tried here first; the name given back is always the debug file's own
 * (a dwz alternate file is found relative to it). */
static int find_debuginfo_cb(Dwfl_Module *mod, void **userdata, const char *modname,
			     Dwarf_Addr base, const char *file_name, const char *debuglink_file,
			     GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	const struct sd_elf *e = *userdata;
	/* libdwfl asks again for a dwz alternate file, naming the debug
	 * file it belongs to instead of the module's own. */
	if (debuglink_file && e && e->path && file_name && strcmp(file_name, e->path) != 0 &&
	    debuglink_crc == 0)
		return debugfind_altfile(file_name, debuglink_file, debuginfo_file_name);
	const unsigned char *id;
	GElf_Addr vaddr;
	int len = dwfl_module_build_id(mod, &id, &vaddr);
	char *path = NULL;
	int fd = len > 0 ? debugcache_find(id, (size_t)len, &path) : -1;
	if (fd >= 0) {
		*debuginfo_file_name = path;
		return fd;
	}
	fd = debugfind_search(file_name, debuglink_file, debuglink_crc, id, len, &path);
	if (fd >= 0) {
		/* Matched the module's build-id (when it has one): safe to
		 * keep in the cache under it. */
		int img = image_of(fd, id, len, 1);
		if (img >= 0) {
			*debuginfo_file_name = path;
			return img;
		}
		close(fd);
		free(path);
		return -1;
	}
	/* debuginfod, when asked for (STACKDUMP_DEBUGINFOD=1 leaves
	 * DEBUGINFOD_URLS set): libdwfl's search with a debug path that
	 * names no folder, so that only the download is left of it. */
	const char *urls = getenv("DEBUGINFOD_URLS");
	if (!urls || !*urls)
		return -1;
	fd = dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name, NULL, 0,
					  debuginfo_file_name);
	return fd >= 0 ? image_of(fd, id, len, 1) : fd;
}

static const Dwfl_Callbacks callbacks = {
	.find_elf = find_elf_cb,
	.find_debuginfo = find_debuginfo_cb,
	.debuginfo_path = &debuginfo_path,
};

static int cache_eq(const void *entry, const void *key)
{
	const struct symcache_slot *c = entry, *k = key;
	return c->elf == k->elf && c->addr == k->addr && c->mode == k->mode;
}

struct sd_symbols *symbols_new(struct sd_space *sp)
{
	struct sd_symbols *s = sd_xcalloc(1, sizeof(*s));
	s->space = sp;
	s->pool = strpool_new();
	s->dwfl = dwfl_begin(&callbacks);
	hashmap_init(&s->cache, sizeof(struct symcache_slot));
	hashmap_reserve(&s->cache, 512);
	hashmap_init(&s->datacache, sizeof(struct sd_dataslot));
	s->synced_generation = ~0u;
	pthread_mutex_init(&s->pf.mu, NULL);
	pthread_cond_init(&s->pf.cv, NULL);
	return s;
}

void symbols_free(struct sd_symbols *s)
{
	if (!s)
		return;
	symbols_settle(s);
	free(s->pf.q);
	pthread_mutex_destroy(&s->pf.mu);
	pthread_cond_destroy(&s->pf.cv);
	size_t pos = 0;
	for (struct symcache_slot *c; (c = hashmap_next(&s->cache, &pos));)
		free(c->v);
	hashmap_release(&s->cache);
	hashmap_release(&s->datacache);
	for (size_t i = 0; i < s->nmi; i++) {
		datasyms_free(s->mi[i].data);
		dwindex_free(s->mi[i].idx);
		free(s->mi[i].syms);
		free(s->mi[i].name);
	}
	free(s->mi);
	perfmap_release(&s->pm);
	if (s->dwfl)
		dwfl_end(s->dwfl);
	strpool_free(s->pool);
	free(s);
}

void symbols_stats(const struct sd_symbols *s, uint64_t *lookups, uint64_t *hits)
{
	symbols_settle((struct sd_symbols *)s);
	*lookups = s ? s->lookups : 0;
	*hits = s ? s->hits : 0;
}

void symbols_counts(const struct sd_symbols *s, struct sd_symcounts *c)
{
	symbols_settle((struct sd_symbols *)s);
	memset(c, 0, sizeof(*c));
	if (!s)
		return;
	*c = s->counts;
	c->frame_resolves = s->lookups - s->hits;
}

void symbols_sync(struct sd_symbols *s)
{
	symbols_settle(s);
	struct sd_space *t = s->space;
	if (!s->dwfl || s->synced_generation == t->generation)
		return;
	dwfl_report_begin(s->dwfl);
	for (size_t i = 0; i < t->nmods; i++) {
		struct sd_tmod *m = &t->mods[i];
		m->dwmod = NULL;
		if (!m->elf)
			continue;
		Dwfl_Module *dm = dwfl_report_module(s->dwfl, m->path, m->start, m->end);
		if (!dm)
			continue;
		/* The current image, also for a module libdwfl kept from the
		 * last report but has not opened yet: the one it was reported
		 * with may be gone. */
		void **ud;
		dwfl_module_info(dm, &ud, NULL, NULL, NULL, NULL, NULL, NULL);
		if (ud)
			*ud = m->elf;
		m->dwmod = dm;
	}
	dwfl_report_end(s->dwfl, NULL, NULL);
	s->synced_generation = t->generation;
	/* Keep the indexes of modules libdwfl kept; the others' Dwarf is gone. */
	size_t keep = 0;
	for (size_t i = 0; i < s->nmi; i++) {
		struct modindex *x = &s->mi[i];
		int alive = 0;
		for (size_t j = 0; j < t->nmods && !alive; j++) {
			struct sd_tmod *m = &t->mods[j];
			alive = m->dwmod == x->dm && m->start == x->start && m->end == x->end &&
				strcmp(m->path, x->name) == 0;
		}
		if (alive) {
			s->mi[keep++] = *x;
		} else {
			datasyms_free(x->data);
			dwindex_free(x->idx);
			free(x->syms);
			free(x->name);
		}
	}
	s->nmi = keep;
}

static const char *intern_demangled(struct strpool *pool, const char *name)
{
	char *d = demangle_symbol(name);
	if (!d)
		return strpool_intern(pool, name);
	const char *r = strpool_intern(pool, d);
	free(d);
	return r;
}

/* The name a function DIE is known by: its linkage name (demangled) when
 * it has one, else its plain name. */
static const char *die_function_name(struct sd_symbols *s, Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *name = NULL;
	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr))
		name = dwarf_formstring(&attr);
	if (!name)
		name = dwarf_diename(die);
	if (!name) {
		Dwarf_Die origin;
		if (dwarf_attr_integrate(die, DW_AT_abstract_origin, &attr) &&
		    dwarf_formref_die(&attr, &origin))
			name = dwarf_diename(&origin);
	}
	return name ? intern_demangled(s->pool, name) : NULL;
}

static int is_function_tag(int tag)
{
	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
	       tag == DW_TAG_entry_point;
}

/* File and line where the inlined subroutine DIE was called from. */
static void call_site(struct sd_symbols *s, Dwarf_Die *cu, Dwarf_Die *die, const char **file,
		      int *line)
{
	Dwarf_Attribute attr;
	Dwarf_Word v;
	*file = NULL;
	*line = 0;
	if (dwarf_attr(die, DW_AT_call_line, &attr) && dwarf_formudata(&attr, &v) == 0)
		*line = (int)v;
	if (dwarf_attr(die, DW_AT_call_file, &attr) && dwarf_formudata(&attr, &v) == 0) {
		Dwarf_Files *files;
		size_t nfiles;
		if (dwarf_getsrcfiles(cu, &files, &nfiles) == 0 && v < nfiles) {
			const char *f = dwarf_filesrc(files, v, NULL, NULL);
			*file = strpool_intern(s->pool, f);
		}
	}
}

static int cmp_modsym(const void *a, const void *b)
{
	const struct modsym *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	/* At one address: sized before sizeless, then global, weak, local
	 * (the order libdwfl prefers them in). */
	if ((x->size != 0) != (y->size != 0))
		return x->size ? -1 : 1;
	return y->rank - x->rank;
}

static void index_symbols(struct modindex *x)
{
	int n = dwfl_module_getsymtab(x->dm);
	size_t cap = 0;
	/* At most one entry per symbol of the table: allocated once. */
	if (n > 1)
		sd_grow(&x->syms, &cap, (size_t)n - 1, sizeof(*x->syms));
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *name = dwfl_module_getsym_info(x->dm, i, &sym, &addr, NULL, NULL, NULL);
		int type = GELF_ST_TYPE(sym.st_info);
		if (!name || !name[0] || sym.st_shndx == SHN_UNDEF ||
		    (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE))
			continue;
		int bind = GELF_ST_BIND(sym.st_info);
		sd_grow(&x->syms, &cap, x->nsyms + 1, sizeof(*x->syms));
		x->syms[x->nsyms++] = (struct modsym){
			.start = addr, .size = sym.st_size, .name = name,
			.rank = bind == STB_GLOBAL ? 2 : bind == STB_WEAK ? 1 : 0};
	}
	sd_sort_u64(x->syms, x->nsyms, sizeof(*x->syms), offsetof(struct modsym, start), cmp_modsym);
	/* One entry per address: the preferred one. */
	size_t k = 0;
	for (size_t i = 0; i < x->nsyms; i++)
		if (k == 0 || x->syms[k - 1].start != x->syms[i].start)
			x->syms[k++] = x->syms[i];
	x->nsyms = k;
}

/* The function symbol holding ADDR: the nearest one below it whose size
 * covers it, else the nearest sizeless one with no sized symbol ending in
 * between (assembly labels). NULL if none. */
static const struct modsym *symbol_at(const struct modindex *x, uint64_t addr)
{
	size_t lo = 0, hi = x->nsyms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (x->syms[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Symbols seldom nest; a few steps back find an enclosing one. */
	for (size_t i = lo, steps = 0; i > 0 && steps < 8; i--, steps++) {
		const struct modsym *m = &x->syms[i - 1];
		if (m->size && addr - m->start < m->size)
			return m;
		if (!m->size && i == lo)
			return m;
		if (m->size)
			break;
	}
	return NULL;
}

/* Where a module's DWARF package may be, in the order gdb looks: beside
 * the separate debug file (named after the executable, or after the debug
 * file), beside the file itself (PATH.dwp, inside the target's root), then
 * in the debug-file directory by name, the target's and ours. */
static void add_dwp_paths(struct sd_symbols *s, Dwfl_Module *dm, struct sd_dwindex *idx)
{
	const char *mainfile = NULL, *debugfile = NULL, *base = NULL;
	dwfl_module_info(dm, NULL, NULL, NULL, NULL, NULL, &mainfile, &debugfile);
	for (size_t i = 0; i < s->space->nmods && !base; i++)
		if (s->space->mods[i].dwmod == dm)
			base = s->space->mods[i].name;
	if (!base && mainfile)
		base = strrchr(mainfile, '/') ? strrchr(mainfile, '/') + 1 : mainfile;
	if (!base || !base[0])
		return;
	struct strbuf p;
	strbuf_init(&p);
	if (debugfile && (!mainfile || strcmp(debugfile, mainfile) != 0)) {
		const char *slash = strrchr(debugfile, '/');
		if (slash) {
			strbuf_add(&p, debugfile, (size_t)(slash - debugfile) + 1);
			strbuf_addf(&p, "%s.dwp", base);
			dwindex_add_dwp(idx, p.buf);
			strbuf_release(&p);
		}
		strbuf_addf(&p, "%s.dwp", debugfile);
		dwindex_add_dwp(idx, p.buf);
		strbuf_release(&p);
	}
	if (mainfile) {
		strbuf_addf(&p, "%s.dwp", mainfile);
		dwindex_add_dwp(idx, p.buf);
		strbuf_release(&p);
	}
	strbuf_addf(&p, "/proc/%d/root/usr/lib/debug/%s.dwp", (int)s->space->pid, base);
	dwindex_add_dwp(idx, p.buf);
	strbuf_release(&p);
	strbuf_addf(&p, "/usr/lib/debug/%s.dwp", base);
	dwindex_add_dwp(idx, p.buf);
	strbuf_release(&p);
}

/* The index of DM, built into X: the heavy part (libdwfl opening the
 * module's debug file, inflating it, the address ranges, the symbols),
 * which touches nothing of the session but DM itself. */
static void modindex_build(const struct sd_symbols *s, Dwfl_Module *dm, struct modindex *x)
{
	const char *name = NULL;
	Dwarf_Addr start = 0, end = 0;
	dwfl_module_info(dm, NULL, &start, &end, NULL, NULL, &name, NULL);
	memset(x, 0, sizeof(*x));
	x->dm = dm;
	x->name = strdup(name ? name : "");
	x->start = start;
	x->end = end;
	Dwarf_Addr bias = 0;
	Dwarf *dw = dwfl_module_getdwarf(dm, &bias);
	if (dw) {
		x->idx = dwindex_new(dw);
		add_dwp_paths((struct sd_symbols *)s, dm, x->idx);
	}
	x->bias = bias;
	index_symbols(x);
}

static struct modindex *modindex_find(struct sd_symbols *s, Dwfl_Module *dm)
{
	for (size_t i = 0; i < s->nmi; i++)
		if (s->mi[i].dm == dm)
			return &s->mi[i];
	return NULL;
}

static struct modindex *modindex_append(struct sd_symbols *s, const struct modindex *x)
{
	s->mi = sd_xrealloc(s->mi, (s->nmi + 1) * sizeof(*s->mi));
	s->mi[s->nmi] = *x;
	return &s->mi[s->nmi++];
}

static struct modindex *module_index(struct sd_symbols *s, Dwfl_Module *dm)
{
	struct modindex *found = modindex_find(s, dm), x;
	if (found)
		return found;
	modindex_build(s, dm, &x);
	return modindex_append(s, &x);
}

/* ---- prefetch ---- */

/* Index the queued modules until the queue is empty (and, unless
 * CLOSING, closed): the prefetch thread, and the main thread too once it
 * waits for the indexes (symbols_settle), so that two modules are read at
 * once on two CPUs. The session's list of indexes is appended to under
 * the queue's lock; each module is built by one of them only. */
static void prefetch_drain(struct sd_symbols *s, int wait)
{
	pthread_mutex_lock(&s->pf.mu);
	for (;;) {
		while (wait && s->pf.next == s->pf.nq && !s->pf.closed)
			pthread_cond_wait(&s->pf.cv, &s->pf.mu);
		if (s->pf.next == s->pf.nq)
			break;
		Dwfl_Module *dm = s->pf.q[s->pf.next++];
		if (modindex_find(s, dm))
			continue;
		pthread_mutex_unlock(&s->pf.mu);
		struct modindex x;
		modindex_build(s, dm, &x);
		if (wait) { /* the prefetch thread: its CPU, work done once */
			struct timespec ts;
			clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
			__atomic_store_n(&s->pf.cpu_ns,
					 (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec,
					 __ATOMIC_RELAXED);
		}
		pthread_mutex_lock(&s->pf.mu);
		modindex_append(s, &x);
	}
	pthread_mutex_unlock(&s->pf.mu);
}

uint64_t symbols_prefetch_cpu_take(struct sd_symbols *s)
{
	if (!s)
		return 0;
	uint64_t now = __atomic_load_n(&s->pf.cpu_ns, __ATOMIC_RELAXED), d = now - s->pf.cpu_taken;
	s->pf.cpu_taken = now;
	return d;
}

static void *prefetch_main(void *arg)
{
	prefetch_drain(arg, 1);
	return NULL;
}

static int cpus_online(void)
{
	static long n;
	if (!n)
		n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 1;
}

void symbols_prefetch(struct sd_symbols *s, uint64_t pc)
{
	if (!s || !s->dwfl || s->synced_generation != s->space->generation || !cpus_online())
		return;
	struct sd_tmod *m = space_module_at(s->space, pc);
	if (!m || !m->dwmod || m->dwmod == s->pf.last)
		return;
	s->pf.last = m->dwmod;
	/* Read already (the index is the main thread's while none runs). */
	for (size_t i = 0; !s->pf.running && i < s->nmi; i++)
		if (s->mi[i].dm == m->dwmod)
			return;
	pthread_mutex_lock(&s->pf.mu);
	int queued = 0;
	for (size_t i = 0; i < s->pf.nq && !queued; i++)
		queued = s->pf.q[i] == m->dwmod;
	if (!queued) {
		sd_grow(&s->pf.q, &s->pf.cap, s->pf.nq + 1, sizeof(*s->pf.q));
		s->pf.q[s->pf.nq++] = m->dwmod;
		pthread_cond_signal(&s->pf.cv);
	}
	pthread_mutex_unlock(&s->pf.mu);
	if (!queued && !s->pf.running) {
		/* Without a thread (the system refused one) the module is
		 * read when first looked up, as without a prefetch. */
		(void)debugcache_dir(); /* set once, before a second thread reads it */
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old); /* signals stay ours */
		s->pf.running = pthread_create(&s->pf.thread, NULL, prefetch_main, s) == 0;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (!s->pf.running)
			s->pf.nq = s->pf.next = 0;
	}
}

void symbols_settle(struct sd_symbols *s)
{
	if (!s || !s->pf.running)
		return;
	pthread_mutex_lock(&s->pf.mu);
	s->pf.closed = 1;
	pthread_cond_signal(&s->pf.cv);
	pthread_mutex_unlock(&s->pf.mu);
	prefetch_drain(s, 0);
	pthread_join(s->pf.thread, NULL);
	s->pf.running = 0;
	s->pf.closed = 0;
	s->pf.nq = s->pf.next = 0;
	s->pf.last = NULL;
}

/* The name and offset of the function symbol holding ADDR in DM. */
static const char *symbol_name(struct sd_symbols *s, Dwfl_Module *dm, uint64_t addr,
			       GElf_Off *off)
{
	const struct modsym *m = symbol_at(module_index(s, dm), addr);
	*off = m ? addr - m->start : 0;
	return m ? m->name : NULL;
}

/* Resolve ADDR through the module's address-range index: the innermost
 * function DIE and its inline chain. Returns 0 when no indexed function
 * holds ADDR (then libdw's own lookup is tried). */
static unsigned resolve_indexed(struct sd_symbols *s, Dwfl_Module *dm, uint64_t addr, int no_inline,
				int no_source, const char *symname, uint64_t symoff,
				struct symentry **out)
{
	struct modindex *x = module_index(s, dm);
	if (!x->idx)
		return 0;
	enum { MAXF = 64 };
	struct dwindex_frame f[MAXF];
	int nf = dwindex_lookup(x->idx, addr - x->bias, no_source, f, MAXF);
	if (nf <= 0)
		return 0;
	struct symentry *v = sd_xcalloc((size_t)nf, sizeof(*v));
	unsigned n = 0;
	for (int i = 0; i < nf; i++) {
		if (no_inline && f[i].inlined)
			continue;
		struct symentry *e = &v[n++];
		const char *name = f[i].function ? f[i].function : symname;
		e->function = name ? strpool_intern(s->pool, name) : NULL;
		if (!f[i].function && symname)
			e->function = intern_demangled(s->pool, symname);
		e->file = strpool_intern(s->pool, f[i].file);
		e->line = f[i].line;
		e->inlined = f[i].inlined;
		e->debuginfo = 1;
		e->symoff = symname ? symoff : 0;
	}
	/* With NO_INLINE the outer function keeps the innermost line. */
	if (no_inline && n == 1 && nf > 1) {
		v[0].file = strpool_intern(s->pool, f[0].file);
		v[0].line = f[0].line;
	}
	dwindex_frames_release(f, nf);
	*out = v;
	return n;
}

/* Resolve ADDR (runtime, already adjusted for callers) in module DM. */
static unsigned resolve(struct sd_symbols *s, Dwfl_Module *dm, uint64_t addr, int no_inline,
			int no_source, struct symentry **out)
{
	struct symentry *v = NULL;
	unsigned n = 0, cap = 0;
	GElf_Off symoff = 0;
	const char *symname = symbol_name(s, dm, addr, &symoff);
	n = resolve_indexed(s, dm, addr, no_inline, no_source, symname, symoff, out);
	if (n)
		return n;
	const char *srcfile = NULL;
	int srcline = 0;
	if (!no_source) {
		Dwfl_Line *ln = dwfl_module_getsrc(dm, addr);
		if (ln) {
			const char *f = dwfl_lineinfo(ln, NULL, &srcline, NULL, NULL, NULL);
			srcfile = strpool_intern(s->pool, f);
		}
	}
	Dwarf_Addr bias = 0;
	Dwarf_Die *cu = dwfl_module_addrdie(dm, addr, &bias);
	Dwarf_Die *scopes = NULL;
	int nscopes = cu ? dwarf_getscopes(cu, addr - bias, &scopes) : 0;
	/* The innermost function-like scope holding the address. Its chain
	 * of parents (not the rest of SCOPES, which continues into the
	 * abstract definition of an inlined function) is the inline chain. */
	Dwarf_Die inner;
	int have_inner = 0;
	for (int i = 0; i < nscopes && !have_inner; i++) {
		if (is_function_tag(dwarf_tag(&scopes[i]))) {
			inner = scopes[i];
			have_inner = 1;
		}
	}
	free(scopes);
	scopes = NULL;
	nscopes = have_inner ? dwarf_getscopes_die(&inner, &scopes) : 0;
	const char *file = srcfile;
	int line = srcline;
	for (int i = 0; i < nscopes; i++) {
		int tag = dwarf_tag(&scopes[i]);
		if (!is_function_tag(tag))
			continue;
		const char *name = die_function_name(s, &scopes[i]);
		if (!no_inline || tag != DW_TAG_inlined_subroutine) {
			if (n + 1 > cap) {
				cap = cap ? cap * 2 : 4;
				v = sd_xrealloc(v, cap * sizeof(*v));
			}
			struct symentry *e = &v[n++];
			memset(e, 0, sizeof(*e));
			e->function = name ? name : (symname ? intern_demangled(s->pool, symname) : NULL);
			e->file = file;
			e->line = line;
			e->inlined = tag == DW_TAG_inlined_subroutine;
			e->debuginfo = 1;
			e->symoff = symname ? symoff : 0;
		}
		if (tag != DW_TAG_inlined_subroutine)
			break;
		/* The next outer function is at this inline's call site. */
		if (!no_source)
			call_site(s, cu, &scopes[i], &file, &line);
	}
	free(scopes);
	if (n == 0) {
		v = sd_xrealloc(v, sizeof(*v));
		memset(v, 0, sizeof(*v));
		v[0].function = symname ? intern_demangled(s->pool, symname) : NULL;
		v[0].file = srcfile;
		v[0].line = srcline;
		v[0].symoff = symoff;
		n = 1;
	}
	*out = v;
	return n;
}

static struct symcache_slot *cache_find(struct sd_symbols *s, const struct sd_elf *elf,
					uint64_t addr, unsigned mode, int *found)
{
	uint64_t key[3] = {(uintptr_t)elf, addr, mode};
	struct symcache_slot k = {.elf = elf, .addr = addr, .mode = mode};
	return hashmap_put(&s->cache, sd_hash(key, sizeof(key), 0), &k, cache_eq, found);
}

/* Go runtime functions that switch to another stack or begin one (those
 * its own traceback stops at: SPWRITE and TOPFRAME in the runtime). What
 * their unwind rules find beyond them is the other stack's stale data,
 * which can even look like a call chain: a stack ends at them. */
static int is_stack_root(const char *fn)
{
	static const char *const roots[] = {
	    "runtime.mcall",  "runtime.systemstack", "runtime.morestack",
	    "runtime.mstart", "runtime.rt0_go",	     "runtime.goexit",
	};
	if (!fn || strncmp(fn, "runtime.", 8) != 0)
		return 0;
	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++)
		if (strcmp(fn, roots[i]) == 0)
			return 1;
	return 0;
}

static void end_at_stack_root(struct sd_thread *th)
{
	for (size_t i = 0; i < th->nframes; i++) {
		const struct sd_frame *f = &th->frames[i];
		if (!(f->flags & SD_FRAME_INLINED) && is_stack_root(f->function)) {
			th->nframes = i + 1;
			th->unwind_stop = NULL;
			return;
		}
	}
}

void symbols_thread(struct sd_symbols *s, struct sd_snapshot *snap, struct sd_thread *th,
		    int no_inline, int no_source)
{
	symbols_settle(s);
	struct sd_space *t = s->space;
	struct sd_frame *raw = th->frames;
	size_t nraw = th->nframes;
	struct sd_frameset *rawset = th->frameset; /* shared: read, not freed */
	th->frames = NULL;
	th->nframes = 0;
	th->frameset = NULL;
	unsigned mode = (no_inline ? 1u : 0u) | (no_source ? 2u : 0u);
	int pm_fresh = 0;
	for (size_t i = 0; i < nraw; i++) {
		struct sd_frame rf = raw[i];
		uint64_t adj = (rf.flags & SD_FRAME_EXACT) || rf.pc == 0 ? rf.pc : rf.pc - 1;
		struct sd_tmod *m = space_module_at(t, adj);
		const char *modname = m ? strpool_intern(snap->pool, m->name) : NULL;
		uint64_t map_start = 0;
		if (!m) {
			/* Not a module: name the mapping (JIT code, [vsyscall]). */
			const struct sd_map *mp = procfs_maps_find(&t->maps, adj);
			if (mp) {
				modname = strpool_intern(snap->pool,
							 mp->path[0] ? mp->path : "[anonymous]");
				map_start = mp->start;
			}
			/* Code in anonymous memory: the JIT's perf map names it. */
			const struct sd_perfmap_ent *pe = NULL;
			if (mp && !mp->path[0] && mp->perms[2] == 'x') {
				if (!pm_fresh) {
					perfmap_refresh(&s->pm, s->space->pid, s->pool);
					pm_fresh = 1;
				}
				pe = perfmap_find(&s->pm, adj);
			}
			if (pe) {
				struct sd_frame *f = snapshot_add_frame(th);
				*f = rf;
				f->module = modname;
				f->offset = rf.pc - map_start;
				f->function = strpool_intern(snap->pool, pe->name);
				f->symoff = rf.pc - pe->start;
				continue;
			}
		}
		const char *bid = m && m->elf && m->elf->build_id[0]
					  ? strpool_intern(snap->pool, m->elf->build_id)
					  : NULL;
		uint64_t rel = m ? rf.pc - m->bias : rf.pc - map_start;
		struct symentry *ents = NULL;
		unsigned nents = 0;
		if (m && m->elf && m->dwmod) {
			int found;
			s->lookups++;
			struct symcache_slot *slot = cache_find(s, m->elf, adj - m->bias, mode, &found);
			if (found) {
				s->hits++;
			} else {
				slot->elf = m->elf;
				slot->addr = adj - m->bias;
				slot->mode = mode;
				slot->n = resolve(s, m->dwmod, adj, no_inline, no_source, &slot->v);
			}
			ents = slot->v;
			nents = slot->n;
		}
		if (!nents) {
			struct sd_frame *f = snapshot_add_frame(th);
			*f = rf;
			f->module = modname;
			f->build_id = bid;
			f->offset = rel;
			continue;
		}
		for (unsigned k = 0; k < nents; k++) {
			struct sd_frame *f = snapshot_add_frame(th);
			*f = rf;
			if (ents[k].inlined)
				f->flags |= SD_FRAME_INLINED;
			if (ents[k].debuginfo)
				f->flags |= SD_FRAME_DEBUGINFO;
			f->function = strpool_intern(snap->pool, ents[k].function);
			f->file = strpool_intern(snap->pool, ents[k].file);
			f->line = ents[k].line;
			f->symoff = ents[k].symoff + (adj != rf.pc ? 1 : 0);
			f->module = modname;
			f->build_id = bid;
			f->offset = rel;
		}
	}
	if (rawset)
		frameset_unref(rawset);
	else
		free(raw);
	end_at_stack_root(th);
}

/* libdwfl's own answer: a scan of every symbol of DM. */
static const char *data_by_libdw(struct sd_symbols *s, Dwfl_Module *dm, uint64_t addr,
				 uint64_t *off)
{
	GElf_Off o = 0;
	GElf_Sym sym;
	s->counts.data_scans++;
	const char *name = dwfl_module_addrinfo(dm, addr, &o, &sym, NULL, NULL, NULL);
	if (!name || GELF_ST_TYPE(sym.st_info) == STT_FUNC || (sym.st_size && o >= sym.st_size))
		return NULL;
	*off = o;
	return name;
}

const char *symbols_data_uncached(struct sd_symbols *s, struct sd_snapshot *snap, uint64_t addr,
				  uint64_t *off)
{
	symbols_settle(s);
	if (!s->dwfl)
		return NULL;
	Dwfl_Module *dm = dwfl_addrmodule(s->dwfl, addr);
	uint64_t o = 0;
	const char *name = dm ? data_by_libdw(s, dm, addr, &o) : NULL;
	if (!name)
		return NULL;
	if (off)
		*off = o;
	return intern_demangled(snap->pool, name);
}

const char *symbols_data(struct sd_symbols *s, struct sd_snapshot *snap, uint64_t addr,
			 uint64_t *off)
{
	symbols_settle(s);
	if (!s->dwfl)
		return NULL;
	s->counts.data_lookups++;
	struct sd_tmod *m = space_module_at(s->space, addr);
	if (!m || !m->elf || !m->dwmod || s->synced_generation != s->space->generation) {
		s->counts.data_hits++; /* not a module's: answered without libdw */
		if (m && m->elf && s->synced_generation != s->space->generation)
			return symbols_data_uncached(s, snap, addr, off);
		return NULL;
	}
	int found;
	struct sd_dataslot *c = dataslot_get(&s->datacache, m->elf, addr - m->bias, &found);
	if (found) {
		s->counts.data_hits++;
	} else {
		Dwfl_Module *dm = m->dwmod;
		struct modindex *x = module_index(s, dm);
		if (!x->data)
			x->data = datasyms_new(dm);
		const char *name = NULL;
		uint64_t o = 0;
		int type = 0;
		switch (datasyms_lookup(x->data, addr, &name, &o, &type)) {
		case DATASYMS_FOUND:
			if (type == STT_FUNC)
				name = NULL;
			break;
		case DATASYMS_NONE:
			name = NULL;
			break;
		default:
			name = data_by_libdw(s, dm, addr, &o);
			break;
		}
		c->name = name ? intern_demangled(s->pool, name) : NULL;
		c->off = o;
	}
	if (!c->name)
		return NULL;
	if (off)
		*off = c->off;
	return strpool_intern(snap->pool, c->name);
}
