// SPDX-License-Identifier: MIT
// The symbolize stage over libdwfl. Modules are reported from our own map
// of the target and their ELF files handed over from the image cache, so
// files of containerised or deleted executables are found the same way the
// unwinder found them. Debug info is found by build-id and .gnu_debuglink.
#include "symbols.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <libiberty/demangle.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "space.h"

/* One function of a resolved address: the innermost first. */
struct symentry {
	const char *function; /* pool of the symbols session */
	const char *file;
	int line;
	int inlined;
	int debuginfo;
	uint64_t symoff;
};

struct symcache_slot {
	const struct sd_elf *elf; /* NULL: empty slot */
	uint64_t addr;            /* file-relative, adjusted pc */
	unsigned mode;
	struct symentry *v;
	unsigned n;
};

struct sd_symbols {
	struct sd_space *space;
	Dwfl *dwfl;
	struct strpool *pool;
	struct symcache_slot *slots;
	size_t cap, used;
	uint64_t lookups, hits;
	unsigned synced_generation;
};

static char *debuginfo_path;

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

static const Dwfl_Callbacks callbacks = {
	.find_elf = find_elf_cb,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.debuginfo_path = &debuginfo_path,
};

struct sd_symbols *symbols_new(struct sd_space *sp)
{
	struct sd_symbols *s = sd_xcalloc(1, sizeof(*s));
	s->space = sp;
	s->pool = strpool_new();
	s->dwfl = dwfl_begin(&callbacks);
	s->cap = 1024;
	s->slots = sd_xcalloc(s->cap, sizeof(*s->slots));
	s->synced_generation = ~0u;
	return s;
}

static void cache_clear(struct sd_symbols *s)
{
	for (size_t i = 0; i < s->cap; i++)
		free(s->slots[i].v);
	memset(s->slots, 0, s->cap * sizeof(*s->slots));
	s->used = 0;
}

void symbols_free(struct sd_symbols *s)
{
	if (!s)
		return;
	cache_clear(s);
	free(s->slots);
	if (s->dwfl)
		dwfl_end(s->dwfl);
	strpool_free(s->pool);
	free(s);
}

void symbols_stats(const struct sd_symbols *s, uint64_t *lookups, uint64_t *hits)
{
	*lookups = s ? s->lookups : 0;
	*hits = s ? s->hits : 0;
}

void symbols_sync(struct sd_symbols *s)
{
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
		void **ud;
		dwfl_module_info(dm, &ud, NULL, NULL, NULL, NULL, NULL, NULL);
		if (ud && !*ud)
			*ud = m->elf;
		m->dwmod = dm;
	}
	dwfl_report_end(s->dwfl, NULL, NULL);
	s->synced_generation = t->generation;
}

char *symbols_demangle(const char *name)
{
	if (!name || name[0] != '_' || (name[1] != 'Z' && name[1] != 'R'))
		return NULL;
	return cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO);
}

static const char *intern_demangled(struct strpool *pool, const char *name)
{
	char *d = symbols_demangle(name);
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

/* Resolve ADDR (runtime, already adjusted for callers) in module DM. */
static unsigned resolve(struct sd_symbols *s, Dwfl_Module *dm, uint64_t addr, int no_inline,
			int no_source, struct symentry **out)
{
	struct symentry *v = NULL;
	unsigned n = 0, cap = 0;
	const char *srcfile = NULL;
	int srcline = 0;
	if (!no_source) {
		Dwfl_Line *ln = dwfl_module_getsrc(dm, addr);
		if (ln) {
			const char *f = dwfl_lineinfo(ln, NULL, &srcline, NULL, NULL, NULL);
			srcfile = strpool_intern(s->pool, f);
		}
	}
	GElf_Off symoff = 0;
	GElf_Sym sym;
	const char *symname = dwfl_module_addrinfo(dm, addr, &symoff, &sym, NULL, NULL, NULL);

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
	if ((s->used + 1) * 2 > s->cap) {
		size_t ncap = s->cap * 2;
		struct symcache_slot *ns = sd_xcalloc(ncap, sizeof(*ns));
		for (size_t i = 0; i < s->cap; i++) {
			struct symcache_slot *o = &s->slots[i];
			if (!o->elf)
				continue;
			uint64_t key[3] = {(uintptr_t)o->elf, o->addr, o->mode};
			size_t h = sd_hash(key, sizeof(key), 0) & (ncap - 1);
			while (ns[h].elf)
				h = (h + 1) & (ncap - 1);
			ns[h] = *o;
		}
		free(s->slots);
		s->slots = ns;
		s->cap = ncap;
	}
	uint64_t key[3] = {(uintptr_t)elf, addr, mode};
	size_t h = sd_hash(key, sizeof(key), 0) & (s->cap - 1);
	while (s->slots[h].elf) {
		struct symcache_slot *c = &s->slots[h];
		if (c->elf == elf && c->addr == addr && c->mode == mode) {
			*found = 1;
			return c;
		}
		h = (h + 1) & (s->cap - 1);
	}
	*found = 0;
	return &s->slots[h];
}

void symbols_thread(struct sd_symbols *s, struct sd_snapshot *snap, struct sd_thread *th,
		    int no_inline, int no_source)
{
	struct sd_space *t = s->space;
	struct sd_frame *raw = th->frames;
	size_t nraw = th->nframes;
	th->frames = NULL;
	th->nframes = 0;
	unsigned mode = (no_inline ? 1u : 0u) | (no_source ? 2u : 0u);
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
				s->used++;
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
	free(raw);
}

const char *symbols_data(struct sd_symbols *s, struct sd_snapshot *snap, uint64_t addr,
			 uint64_t *off)
{
	if (!s->dwfl)
		return NULL;
	Dwfl_Module *dm = dwfl_addrmodule(s->dwfl, addr);
	if (!dm)
		return NULL;
	GElf_Off o = 0;
	GElf_Sym sym;
	const char *name = dwfl_module_addrinfo(dm, addr, &o, &sym, NULL, NULL, NULL);
	if (!name || GELF_ST_TYPE(sym.st_info) == STT_FUNC || (sym.st_size && o >= sym.st_size))
		return NULL;
	if (off)
		*off = o;
	return intern_demangled(snap->pool, name);
}
