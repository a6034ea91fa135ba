// SPDX-License-Identifier: MIT
// Address-range index over a module's DWARF and the inline-chain walk on
// libdw's DIE API. libdw's own address lookup (dwfl_module_addrdie) goes
// through .debug_aranges, which clang and rustc do not emit, and stops at
// the skeleton unit of split DWARF; this index takes the ranges of every
// unit from its unit DIE instead, and indexes a unit's functions (those of
// the split unit behind a skeleton, from a .dwo file or a .dwp package) the
// first time an address falls in it.
#include "dwindex.h"

#include <dwarf.h>
#include <stdlib.h>
#include <string.h>

#include "demangle.h"
#include "dwp.h"
#include "util.h"

/* A set of function address ranges, sorted by start once complete. */
struct rangeset {
	struct dwrange *r;
	size_t n, cap;
};

struct dwunit {
	Dwarf_CU *cu;
	uint8_t type;     /* DW_UT_* */
	int indexed;      /* its functions are in FUNCS */
	Dwarf_Die cudie;  /* where the DIEs are (the split unit if split) */
	Dwarf_Die linecu; /* whose line table covers them (the skeleton) */
	struct dwp_unit *dwp; /* the split unit read from a package, or NULL */
	struct rangeset funcs;
	Dwarf_Lines *lines;
	size_t nlines;
	int lines_state; /* 0 not read, 1 read, -1 none */
};

struct dwrange {
	uint64_t lo, hi;
	Dwarf_Die die;
	uint32_t unit;
};

/* Two levels: the address ranges of the units (read from their unit DIEs
 * alone, which is cheap), and per unit the ranges of its functions, made
 * when an address first falls in the unit. A lookup thus reads the DIEs of
 * the units it needs and no others. */
struct sd_dwindex {
	Dwarf *dw;
	struct rangeset units; /* .die unused, .unit = the unit */
	struct dwunit *u;
	size_t nu, ucap;
	/* Units that state no addresses of their own (some partial units):
	 * their functions, gathered on the first miss of the unit ranges. */
	struct rangeset loose;
	int loose_done;
	/* The package of the split units no .dwo file holds: the first of
	 * the candidate paths that opens, when first needed. */
	char **dwp_paths;
	size_t ndwp_paths;
	struct sd_dwp *dwp;
	int dwp_state; /* 0 not tried, 1 open, -1 none */
};

static void add_range(struct rangeset *rs, uint64_t lo, uint64_t hi, Dwarf_Die *die,
		      uint32_t unit)
{
	if (hi <= lo)
		return;
	if (rs->n == rs->cap) {
		rs->cap = rs->cap ? rs->cap * 2 : 64;
		rs->r = sd_xrealloc(rs->r, rs->cap * sizeof(*rs->r));
	}
	rs->r[rs->n] = (struct dwrange){.lo = lo, .hi = hi, .unit = unit};
	if (die)
		rs->r[rs->n].die = *die;
	rs->n++;
}

struct add_ctx {
	struct rangeset *rs;
	Dwarf_Die *die;
	uint32_t unit;
};

static int add_cb(void *arg, uint64_t lo, uint64_t hi)
{
	struct add_ctx *a = arg;
	add_range(a->rs, lo, hi, a->die, a->unit);
	return 0;
}

/* Add the address ranges of DIE, a DIE of unit U (number UNIT), to RS. A
 * split unit read from a package has its addresses resolved by dwp.c:
 * libdw cannot link it to its skeleton. */
static void add_die_ranges(struct rangeset *rs, struct dwunit *u, Dwarf_Die *die, uint32_t unit)
{
	if (u->dwp) {
		struct add_ctx a = {.rs = rs, .die = die, .unit = unit};
		dwp_unit_ranges(u->dwp, die, add_cb, &a);
		return;
	}
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0)
		add_range(rs, lo, hi, die, unit);
}

static int unit_haspc(struct dwunit *u, Dwarf_Die *die, uint64_t addr)
{
	if (u->dwp)
		return dwp_unit_haspc(u->dwp, die, addr);
	return dwarf_haspc(die, addr);
}

/* Index the functions with code below PARENT, in unit U (number UNIT).
 * Only the containers that can hold function definitions are entered
 * (namespaces, types, modules): the bodies of functions are left for the
 * lookup, which is what keeps building the index cheap on large binaries. */
static void index_children(struct rangeset *rs, struct dwunit *u, Dwarf_Die *parent,
			   uint32_t unit, int depth)
{
	Dwarf_Die c;
	if (depth > 64 || dwarf_child(parent, &c) != 0)
		return;
	do {
		switch (dwarf_tag(&c)) {
		case DW_TAG_subprogram:
			add_die_ranges(rs, u, &c, unit);
			break;
		case DW_TAG_namespace:
		case DW_TAG_module:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
		case DW_TAG_interface_type:
			index_children(rs, u, &c, unit, depth + 1);
			break;
		default:
			break;
		}
	} while (dwarf_siblingof(&c, &c) == 0);
}

static int cmp_range(const void *a, const void *b)
{
	const struct dwrange *x = a, *y = b;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	/* Wider first, so that of equal starts the narrower sorts later and
	 * the backward scan of a lookup meets it first. */
	if (x->hi != y->hi)
		return x->hi > y->hi ? -1 : 1;
	return 0;
}

struct sd_dwindex *dwindex_new(Dwarf *dw)
{
	struct sd_dwindex *idx = sd_xcalloc(1, sizeof(*idx));
	idx->dw = dw;
	if (!dw)
		return idx;
	Dwarf_CU *cu = NULL;
	Dwarf_Half version;
	uint8_t type;
	Dwarf_Die cudie;
	while (dwarf_get_units(dw, cu, &cu, &version, &type, &cudie, NULL) == 0) {
		if (type == DW_UT_type || type == DW_UT_split_type)
			continue;
		sd_grow(&idx->u, &idx->ucap, idx->nu + 1, sizeof(*idx->u));
		struct dwunit *u = &idx->u[idx->nu];
		memset(u, 0, sizeof(*u));
		u->cu = cu;
		u->type = type;
		u->cudie = cudie;
		u->linecu = cudie;
		Dwarf_Addr base, lo, hi;
		ptrdiff_t off = 0;
		size_t before = idx->units.n;
		while ((off = dwarf_ranges(&cudie, off, &base, &lo, &hi)) > 0)
			add_range(&idx->units, lo, hi, NULL, (uint32_t)idx->nu);
		if (idx->units.n == before)
			u->indexed = -1; /* no addresses stated: a loose unit */
		idx->nu++;
	}
	sd_sort(idx->units.r, idx->units.n, sizeof(*idx->units.r), cmp_range);
	return idx;
}

void dwindex_add_dwp(struct sd_dwindex *idx, const char *path)
{
	idx->dwp_paths = sd_xrealloc(idx->dwp_paths, (idx->ndwp_paths + 1) * sizeof(char *));
	idx->dwp_paths[idx->ndwp_paths++] = sd_xstrdup(path);
}

const char *dwindex_dwp(const struct sd_dwindex *idx)
{
	return idx && idx->dwp ? dwp_path(idx->dwp) : NULL;
}

/* The split unit of skeleton U from the package, opened on first need. */
static struct dwp_unit *unit_from_dwp(struct sd_dwindex *idx, struct dwunit *u)
{
	if (idx->dwp_state == 0) {
		idx->dwp_state = -1;
		for (size_t i = 0; i < idx->ndwp_paths && !idx->dwp; i++)
			idx->dwp = dwp_open(idx->dwp_paths[i], NULL);
		if (idx->dwp)
			idx->dwp_state = 1;
	}
	return idx->dwp ? dwp_unit_open(idx->dwp, u->cu) : NULL;
}

/* The functions of unit UI, indexed on first use. A skeleton's functions
 * are in its split unit, found as gdb finds it: in the .dwo file named by
 * DW_AT_dwo_name and DW_AT_comp_dir (or the directory of the file), which
 * libdw opens itself, else by its DWO id in the package. */
static void unit_index(struct sd_dwindex *idx, uint32_t ui, struct rangeset *into)
{
	struct dwunit *u = &idx->u[ui];
	if (u->type == DW_UT_skeleton && !u->dwp) {
		Dwarf_Die sub;
		if (dwarf_cu_info(u->cu, NULL, NULL, NULL, &sub, NULL, NULL, NULL) == 0 &&
		    dwarf_tag(&sub) == DW_TAG_compile_unit)
			u->cudie = sub;
		else if ((u->dwp = unit_from_dwp(idx, u)))
			u->cudie = dwp_unit_cudie(u->dwp);
	}
	index_children(into, u, &u->cudie, ui, 0);
}

static void unit_ready(struct sd_dwindex *idx, uint32_t ui)
{
	struct dwunit *u = &idx->u[ui];
	if (u->indexed)
		return;
	u->indexed = 1;
	unit_index(idx, ui, &u->funcs);
	sd_sort(u->funcs.r, u->funcs.n, sizeof(*u->funcs.r), cmp_range);
}

void dwindex_free(struct sd_dwindex *idx)
{
	if (!idx)
		return;
	for (size_t i = 0; i < idx->nu; i++) {
		free(idx->u[i].funcs.r);
		dwp_unit_free(idx->u[i].dwp);
	}
	for (size_t i = 0; i < idx->ndwp_paths; i++)
		free(idx->dwp_paths[i]);
	free(idx->dwp_paths);
	dwp_free(idx->dwp);
	free(idx->units.r);
	free(idx->loose.r);
	free(idx->u);
	free(idx);
}

size_t dwindex_size(const struct sd_dwindex *idx)
{
	size_t n = 0;
	for (size_t i = 0; idx && i < idx->nu; i++)
		n += idx->u[i].funcs.n;
	return n + (idx ? idx->loose.n : 0);
}

/* Of the ranges of RS holding ADDR, the narrowest, or NULL. */
static const struct dwrange *find_in(const struct rangeset *rs, uint64_t addr)
{
	size_t lo = 0, hi = rs->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (rs->r[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* r[0..lo) start at or below ADDR. Ranges seldom nest (nested
	 * functions, the parts of one function): a short backward scan finds
	 * the narrowest holder. */
	const struct dwrange *best = NULL;
	for (size_t i = lo, steps = 0; i > 0 && steps < 64; i--, steps++) {
		const struct dwrange *r = &rs->r[i - 1];
		if (r->hi > addr && (!best || r->hi - r->lo < best->hi - best->lo))
			best = r;
	}
	return best;
}

/* The narrowest function holding ADDR: in the units whose ranges hold it,
 * else among the functions of the loose units. */
static const struct dwrange *find_range(struct sd_dwindex *idx, uint64_t addr)
{
	const struct dwrange *best = NULL;
	size_t lo = 0, hi = idx->units.n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (idx->units.r[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo, steps = 0; i > 0 && steps < 64; i--, steps++) {
		const struct dwrange *ur = &idx->units.r[i - 1];
		if (ur->hi <= addr)
			continue;
		unit_ready(idx, ur->unit);
		const struct dwrange *r = find_in(&idx->u[ur->unit].funcs, addr);
		if (r && (!best || r->hi - r->lo < best->hi - best->lo))
			best = r;
	}
	if (best)
		return best;
	if (!idx->loose_done) {
		idx->loose_done = 1;
		for (size_t i = 0; i < idx->nu; i++)
			if (idx->u[i].indexed < 0)
				unit_index(idx, (uint32_t)i, &idx->loose);
		sd_sort(idx->loose.r, idx->loose.n, sizeof(*idx->loose.r), cmp_range);
	}
	return find_in(&idx->loose, addr);
}

static int is_block_tag(int tag)
{
	return tag == DW_TAG_lexical_block || tag == DW_TAG_try_block ||
	       tag == DW_TAG_catch_block || tag == DW_TAG_with_stmt;
}

static int has_pc_attrs(Dwarf_Die *die)
{
	return dwarf_hasattr(die, DW_AT_low_pc) || dwarf_hasattr(die, DW_AT_ranges) ||
	       dwarf_hasattr(die, DW_AT_entry_pc);
}

/* Descend from DIE to the innermost inlined subroutine holding ADDR,
 * appending each inlined subroutine on the way to CHAIN (outermost
 * first). Blocks without addresses of their own are looked into. */
static void descend(struct dwunit *u, Dwarf_Die *die, uint64_t addr, Dwarf_Die *chain, int *n,
		    int max, int depth)
{
	Dwarf_Die c;
	if (depth > 256 || dwarf_child(die, &c) != 0)
		return;
	do {
		int tag = dwarf_tag(&c);
		if (tag == DW_TAG_inlined_subroutine) {
			if (unit_haspc(u, &c, addr) <= 0)
				continue;
			if (*n < max)
				chain[(*n)++] = c;
			descend(u, &c, addr, chain, n, max, depth + 1);
			return;
		}
		if (!is_block_tag(tag))
			continue;
		if (has_pc_attrs(&c)) {
			if (unit_haspc(u, &c, addr) > 0) {
				descend(u, &c, addr, chain, n, max, depth + 1);
				return;
			}
			continue;
		}
		int before = *n;
		descend(u, &c, addr, chain, n, max, depth + 1);
		if (*n != before)
			return;
	} while (dwarf_siblingof(&c, &c) == 0);
}

/* DIE's origin: the abstract instance of an inlined or concrete out-of-
 * line copy, then the declaration a definition completes, across units
 * and into a .gnu_debugaltlink file (dwarf_formref_die follows
 * DW_FORM_ref_addr and DW_FORM_GNU_ref_alt). */
static void die_origin(Dwarf_Die *die, Dwarf_Die *out)
{
	*out = *die;
	for (int i = 0; i < 8; i++) {
		Dwarf_Attribute a;
		Dwarf_Die next;
		if ((dwarf_attr(out, DW_AT_abstract_origin, &a) ||
		     dwarf_attr(out, DW_AT_specification, &a)) &&
		    dwarf_formref_die(&a, &next))
			*out = next;
		else
			return;
	}
}

static int is_scope_name_tag(int tag)
{
	return tag == DW_TAG_namespace || tag == DW_TAG_module || tag == DW_TAG_class_type ||
	       tag == DW_TAG_structure_type || tag == DW_TAG_union_type ||
	       tag == DW_TAG_interface_type || tag == DW_TAG_enumeration_type ||
	       tag == DW_TAG_subprogram;
}

struct strbuf_lite {
	char *s;
	size_t len, cap;
};

static void sbl_add(struct strbuf_lite *b, const char *s)
{
	size_t n = strlen(s);
	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		b->s = sd_xrealloc(b->s, b->cap);
	}
	memcpy(b->s + b->len, s, n + 1);
	b->len += n;
}

/* Append to PATH the names of the DIEs enclosing TARGET below PARENT
 * (outermost first). Children are in offset order and a child's subtree
 * ends where its next sibling starts, so one child per level is entered. */
static int parent_names(Dwarf_Die *parent, Dwarf_Off target, struct strbuf_lite *path, int depth)
{
	Dwarf_Die c, next;
	if (depth > 64 || dwarf_child(parent, &c) != 0)
		return 0;
	for (;;) {
		Dwarf_Off off = dwarf_dieoffset(&c);
		if (off == target)
			return 1;
		int more = dwarf_siblingof(&c, &next) == 0;
		if (off < target && (!more || dwarf_dieoffset(&next) > target)) {
			/* TARGET is inside C's subtree. */
			const char *name =
			    is_scope_name_tag(dwarf_tag(&c)) ? dwarf_diename(&c) : NULL;
			size_t mark = path->len;
			if (name) {
				sbl_add(path, name);
				sbl_add(path, "::");
			}
			if (parent_names(&c, target, path, depth + 1))
				return 1;
			path->len = mark;
			if (path->s)
				path->s[mark] = 0;
			return 0;
		}
		if (!more)
			return 0;
		c = next;
	}
}

static char *function_name(Dwarf_Die *die)
{
	Dwarf_Die origin;
	die_origin(die, &origin);
	Dwarf_Attribute a;
	const char *linkage = NULL;
	if (dwarf_attr_integrate(&origin, DW_AT_linkage_name, &a) ||
	    dwarf_attr_integrate(&origin, DW_AT_MIPS_linkage_name, &a))
		linkage = dwarf_formstring(&a);
	if (linkage) {
		/* An unmangled linkage name is the symbol's own (a C alias such
		 * as __GI___libc_read), which gdb shows too. A demangled one
		 * with a parameter list (Itanium C++) tells overloads apart,
		 * which the DWARF name does not; Rust's mangled names lose
		 * closure numbers and generic arguments the DWARF name keeps. */
		char *d = demangle_symbol(linkage);
		if (!d)
			return strdup(linkage);
		if (linkage[1] == 'Z' && strchr(d, '('))
			return d;
		free(d);
	}
	const char *name = dwarf_diename(&origin);
	if (!name)
		return linkage ? strdup(linkage) : NULL;
	struct strbuf_lite path = {0};
	Dwarf_Die cudie;
	if (dwarf_diecu(&origin, &cudie, NULL, NULL))
		parent_names(&cudie, dwarf_dieoffset(&origin), &path, 0);
	sbl_add(&path, name);
	return path.s;
}

/* The line of ADDR in U's line table, chosen as gdb chooses it: the last
 * row at or below ADDR and, when that row is not a statement, the last
 * statement row at the same address before it. */
static void line_at(struct dwunit *u, uint64_t addr, const char **file, int *line)
{
	*file = NULL;
	*line = 0;
	if (u->lines_state == 0) {
		u->lines_state =
		    dwarf_getsrclines(&u->linecu, &u->lines, &u->nlines) == 0 && u->nlines ? 1 : -1;
	}
	if (u->lines_state < 0)
		return;
	size_t lo = 0, hi = u->nlines;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		Dwarf_Addr a = 0;
		dwarf_lineaddr(dwarf_onesrcline(u->lines, mid), &a);
		if (a <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return;
	size_t i = lo - 1;
	Dwarf_Line *ln = dwarf_onesrcline(u->lines, i);
	bool flag = false;
	if (dwarf_lineendsequence(ln, &flag) == 0 && flag)
		return;
	Dwarf_Addr at = 0;
	dwarf_lineaddr(ln, &at);
	if (dwarf_linebeginstatement(ln, &flag) == 0 && !flag) {
		for (size_t j = i; j > 0; j--) {
			Dwarf_Line *p = dwarf_onesrcline(u->lines, j - 1);
			Dwarf_Addr pa = 0;
			int pl = 0;
			bool end = false;
			dwarf_lineaddr(p, &pa);
			dwarf_lineno(p, &pl);
			if (pa != at || pl == 0 || (dwarf_lineendsequence(p, &end) == 0 && end))
				break;
			if (dwarf_linebeginstatement(p, &flag) == 0 && flag) {
				ln = p;
				break;
			}
		}
	}
	int l = 0;
	dwarf_lineno(ln, &l);
	if (l == 0)
		return;
	*line = l;
	*file = dwarf_linesrc(ln, NULL, NULL);
}

/* File and line an inlined subroutine DIE of unit U was called from, in
 * the file table of the unit holding it; a split unit with no line table
 * of its own (clang's) uses its skeleton's, which libdw finds itself only
 * for a split unit it linked to its skeleton (from a .dwo file). */
static void call_site(struct dwunit *u, Dwarf_Die *die, const char **file, int *line)
{
	Dwarf_Attribute a;
	Dwarf_Word v;
	*file = NULL;
	*line = 0;
	if (dwarf_attr(die, DW_AT_call_line, &a) && dwarf_formudata(&a, &v) == 0)
		*line = (int)v;
	if (dwarf_attr(die, DW_AT_call_file, &a) && dwarf_formudata(&a, &v) == 0) {
		Dwarf_Die cudie;
		Dwarf_Files *files;
		size_t nfiles;
		if (dwarf_diecu(die, &cudie, NULL, NULL) &&
		    (dwarf_getsrcfiles(&cudie, &files, &nfiles) == 0 ||
		     (u->dwp && dwarf_getsrcfiles(&u->linecu, &files, &nfiles) == 0)) &&
		    v < nfiles)
			*file = dwarf_filesrc(files, v, NULL, NULL);
	}
}

int dwindex_lookup(struct sd_dwindex *idx, uint64_t addr, int no_source, struct dwindex_frame *out,
		   int max)
{
	if (!idx || max <= 0)
		return 0;
	const struct dwrange *r = find_range(idx, addr);
	if (!r)
		return 0;
	enum { MAXCHAIN = 64 };
	Dwarf_Die chain[MAXCHAIN];
	int n = 0;
	chain[n++] = r->die;
	descend(&idx->u[r->unit], &chain[0], addr, chain, &n, MAXCHAIN, 0);
	/* CHAIN is outermost first; OUT is innermost first. */
	const char *file = NULL;
	int line = 0;
	if (!no_source)
		line_at(&idx->u[r->unit], addr, &file, &line);
	int k = 0;
	for (int i = n - 1; i >= 0 && k < max; i--, k++) {
		out[k].function = function_name(&chain[i]);
		out[k].file = file;
		out[k].line = line;
		out[k].inlined = i > 0;
		if (!no_source && i > 0)
			call_site(&idx->u[r->unit], &chain[i], &file, &line);
	}
	return k;
}

void dwindex_frames_release(struct dwindex_frame *v, int n)
{
	for (int i = 0; i < n; i++) {
		free(v[i].function);
		v[i].function = NULL;
	}
}
