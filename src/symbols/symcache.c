// SPDX-License-Identifier: MIT
// The data-symbol index of one module: every symbol libdwfl would consider
// for an address, sorted by address once, so that naming a lock word or a
// condvar is a binary search and a short walk, not a scan of the module's
// tens of thousands of symbols at every sample.
#include "symcache.h"

#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "hashmap.h"
#include "util.h"

struct dsym {
	uint64_t value, size; /* runtime address, st_size */
	const char *name;     /* libdwfl's */
	int idx;	      /* index in libdwfl's symbol table: its search order */
	int bind;	      /* libdwfl's preference: global 3, weak 2, local 1, other 0 */
	int global;	      /* in libdwfl's first pass (index >= first global) */
	int type;
};

struct sd_datasyms {
	struct dsym *v; /* sorted by value, then index */
	size_t n;
	uint64_t *maxend; /* maxend[i]: the highest end among v[0..i] */
	long *sizeless;	  /* sizeless[i]: the last sizeless symbol in v[0..i], or -1 */
};

static int bind_value(int bind)
{
	switch (bind) {
	case STB_GLOBAL:
		return 3;
	case STB_WEAK:
		return 2;
	case STB_LOCAL:
		return 1;
	default:
		return 0;
	}
}

static int cmp_dsym(const void *a, const void *b)
{
	const struct dsym *x = a, *y = b;
	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	return (x->idx > y->idx) - (x->idx < y->idx);
}

struct sd_datasyms *datasyms_new(struct Dwfl_Module *dm)
{
	struct sd_datasyms *d = sd_xcalloc(1, sizeof(*d));
	int n = dm ? dwfl_module_getsymtab(dm) : -1;
	int first_global = n > 0 ? dwfl_module_getsymtab_first_global(dm) : 0;
	size_t cap = 0;
	if (n > 0) /* at most one entry per symbol of the table */
		sd_grow(&d->v, &cap, (size_t)n, sizeof(*d->v));
	for (int i = 0; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *name = dwfl_module_getsym_info(dm, i, &sym, &addr, NULL, NULL, NULL);
		int type = GELF_ST_TYPE(sym.st_info);
		/* What libdwfl's address search skips. */
		if (!name || !name[0] || sym.st_shndx == SHN_UNDEF || type == STT_SECTION ||
		    type == STT_FILE || type == STT_TLS)
			continue;
		sd_grow(&d->v, &cap, d->n + 1, sizeof(*d->v));
		d->v[d->n++] = (struct dsym){.value = addr,
					     .size = sym.st_size,
					     .name = name,
					     .idx = i,
					     .bind = bind_value(GELF_ST_BIND(sym.st_info)),
					     .global = i >= first_global,
					     .type = type};
	}
	sd_sort_u64(d->v, d->n, sizeof(*d->v), offsetof(struct dsym, value), cmp_dsym);
	d->maxend = sd_xcalloc(d->n + 1, sizeof(*d->maxend));
	d->sizeless = sd_xcalloc(d->n + 1, sizeof(*d->sizeless));
	uint64_t hi = 0;
	long last = -1;
	for (size_t i = 0; i < d->n; i++) {
		uint64_t end = d->v[i].value + d->v[i].size;
		if (end > hi)
			hi = end;
		d->maxend[i] = hi;
		if (!d->v[i].size)
			last = (long)i;
		d->sizeless[i] = last;
	}
	return d;
}

void datasyms_free(struct sd_datasyms *d)
{
	if (!d)
		return;
	free(d->v);
	free(d->maxend);
	free(d->sizeless);
	free(d);
}

size_t datasyms_count(const struct sd_datasyms *d)
{
	return d ? d->n : 0;
}

/* libdwfl's choice among sized symbols holding the address, visited in
 * its table order: a closer start wins, or a stronger binding; at the same
 * start a smaller size of no weaker binding, or a stronger binding. */
static const struct dsym *choose(const struct dsym *const *c, size_t n)
{
	const struct dsym *best = NULL;
	for (size_t i = 0; i < n; i++) {
		const struct dsym *s = c[i];
		if (!best || best->value < s->value || best->bind < s->bind)
			best = s;
		else if (best->value == s->value &&
			 ((best->size > s->size && best->bind <= s->bind) ||
			  (best->size >= s->size && best->bind < s->bind)))
			best = s;
	}
	return best;
}

static int cmp_by_idx(const void *a, const void *b)
{
	const struct dsym *x = *(const struct dsym *const *)a, *y = *(const struct dsym *const *)b;
	return (x->idx > y->idx) - (x->idx < y->idx);
}

int datasyms_lookup(const struct sd_datasyms *d, uint64_t addr, const char **name,
		    uint64_t *off, int *type)
{
	if (!d || !d->n)
		return DATASYMS_NONE;
	/* LO: how many symbols start at or below ADDR. */
	size_t lo = 0, hi = d->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (d->v[mid].value <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return DATASYMS_NONE;
	/* The sized symbols holding ADDR: walking down, none before I can
	 * hold it once every end up to I is at or below ADDR. */
	enum { MAXC = 64 };
	const struct dsym *glob[MAXC], *loc[MAXC];
	size_t ng = 0, nl = 0;
	/* A global label exactly at ADDR keeps libdwfl from the locals. */
	int exact_global_label = 0;
	for (size_t i = lo; i > 0 && d->v[i - 1].value == addr; i--)
		exact_global_label |= d->v[i - 1].global && !d->v[i - 1].size;
	/* The sized symbols holding ADDR: walking down, none before I can
	 * hold it once every end up to I is at or below ADDR. */
	for (size_t i = lo; i > 0; i--) {
		const struct dsym *s = &d->v[i - 1];
		if (i != lo && d->maxend[i - 1] <= addr)
			break;
		if (!s->size || addr - s->value >= s->size)
			continue;
		if (ng == MAXC || nl == MAXC)
			return DATASYMS_ASK; /* nested past belief: libdwfl decides */
		if (s->global)
			glob[ng++] = s;
		else
			loc[nl++] = s;
	}
	qsort(glob, ng, sizeof(*glob), cmp_by_idx);
	qsort(loc, nl, sizeof(*loc), cmp_by_idx);
	const struct dsym *best = choose(glob, ng);
	/* libdwfl searches the locals only when no global holds ADDR and no
	 * global label sits exactly at it. */
	if (!best) {
		if (exact_global_label)
			return DATASYMS_ASK;
		best = choose(loc, nl);
	}
	if (!best) {
		/* Nothing holds ADDR: a sizeless label (assembly) may still
		 * name it, if it lies at or above the end of every symbol
		 * below ADDR (libdwfl's lowest label) and in ADDR's section,
		 * which libdwfl checks. */
		long z = d->sizeless[lo - 1];
		if (z >= 0 && d->v[z].value >= d->maxend[lo - 1])
			return DATASYMS_ASK;
		return DATASYMS_NONE;
	}
	*name = best->name;
	*off = addr - best->value;
	*type = best->type;
	return DATASYMS_FOUND;
}

static int dataslot_eq(const void *entry, const void *key)
{
	const struct sd_dataslot *c = entry, *k = key;
	return c->elf == k->elf && c->addr == k->addr;
}

struct sd_dataslot *dataslot_get(struct hashmap *map, const void *elf, uint64_t addr, int *found)
{
	struct sd_dataslot k = {.elf = elf, .addr = addr};
	uint64_t key[2] = {(uintptr_t)elf, addr};
	struct sd_dataslot *c = hashmap_put(map, sd_hash(key, sizeof(key), 0), &k, dataslot_eq, found);
	if (!*found)
		*c = k;
	return c;
}
