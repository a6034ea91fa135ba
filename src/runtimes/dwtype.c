// SPDX-License-Identifier: MIT
// The typed reader's DWARF half (dwtype.h): one pass over the top-level
// DIEs of every compile unit indexes variables, constants and types by
// name; lookups then go straight to the DIE and ask libdw for members,
// locations, sizes and array bounds.
#include "dwtype.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hashmap.h"

/* One name of the index. NAME lives in the DWARF data or in d->names. */
struct dwt_ent {
	const char *name;
	uint64_t die;
	int decl; /* only a declaration (a definition replaces it) */
};

struct dwt {
	int fd;
	Elf *elf;
	Dwarf *dw;
	char *label; /* the file's name, for messages */
	const char *producer;
	struct hashmap vars, types, consts;
	char **names; /* the index's own strings (namespaced names) */
	size_t nnames, names_cap;
	int has_tls;
	uint64_t tls_size, tls_align;
};

static int ent_eq(const void *entry, const void *key)
{
	return !strcmp(((const struct dwt_ent *)entry)->name, key);
}

static uint64_t name_hash(const char *s)
{
	return sd_hash(s, strlen(s), 0x5d1f);
}

static void index_put(struct hashmap *m, const char *name, uint64_t die, int decl)
{
	int found;
	struct dwt_ent *e = hashmap_put(m, name_hash(name), name, ent_eq, &found);
	if (found && !(e->decl && !decl))
		return; /* the first definition wins */
	e->name = name;
	e->die = die;
	e->decl = decl;
}

static const char *own_name(struct dwt *d, const char *prefix, const char *name)
{
	size_t lp = strlen(prefix), ln = strlen(name);
	char *s = sd_xmalloc(lp + ln + 1);
	memcpy(s, prefix, lp);
	memcpy(s + lp, name, ln + 1);
	sd_grow(&d->names, &d->names_cap, d->nnames + 1, sizeof(*d->names));
	d->names[d->nnames++] = s;
	return s;
}

static int is_decl(Dwarf_Die *die)
{
	bool flag = false;
	Dwarf_Attribute a;
	return dwarf_attr(die, DW_AT_declaration, &a) && dwarf_formflag(&a, &flag) == 0 && flag;
}

/* Index the children of PARENT; PREFIX ("" or "a::b::") names those
 * inside a namespace (C++, Rust). DEPTH bounds nesting. */
static void index_children(struct dwt *d, Dwarf_Die *parent, const char *prefix, int depth)
{
	Dwarf_Die c;
	if (dwarf_child(parent, &c) != 0)
		return;
	do {
		int tag = dwarf_tag(&c);
		const char *name = dwarf_diename(&c);
		uint64_t off = dwarf_dieoffset(&c);
		if (tag == DW_TAG_namespace && depth < 16) {
			const char *ns = name ? own_name(d, prefix, name) : prefix;
			const char *np = name ? own_name(d, ns, "::") : prefix;
			index_children(d, &c, np, depth + 1);
			continue;
		}
		if (tag == DW_TAG_enumeration_type) {
			/* C enumerators are constants of the unit. */
			Dwarf_Die en;
			if (dwarf_child(&c, &en) == 0) {
				do {
					const char *en_name = dwarf_diename(&en);
					if (dwarf_tag(&en) == DW_TAG_enumerator && en_name)
						index_put(&d->consts, *prefix ? own_name(d, prefix, en_name)
									      : en_name,
							  dwarf_dieoffset(&en), 0);
				} while (dwarf_siblingof(&en, &en) == 0);
			}
		}
		if (!name)
			continue;
		const char *full = *prefix ? own_name(d, prefix, name) : name;
		switch (tag) {
		case DW_TAG_variable:
			index_put(&d->vars, full, off, is_decl(&c) || !dwarf_hasattr(&c, DW_AT_location));
			break;
		case DW_TAG_constant:
			index_put(&d->consts, full, off, 0);
			break;
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
		case DW_TAG_class_type:
		case DW_TAG_enumeration_type:
			index_put(&d->types, full, off, is_decl(&c));
			if (!*prefix)
				index_put(&d->types,
					  own_name(d, tag == DW_TAG_union_type   ? "union "
						      : tag == DW_TAG_enumeration_type ? "enum "
										 : "struct ",
						   name),
					  off, is_decl(&c));
			break;
		case DW_TAG_typedef:
		case DW_TAG_base_type:
		case DW_TAG_pointer_type:
		case DW_TAG_array_type:
		case DW_TAG_subroutine_type:
			index_put(&d->types, full, off, 0);
			break;
		default: break;
		}
	} while (dwarf_siblingof(&c, &c) == 0);
}

static int index_all(struct dwt *d)
{
	Dwarf_Off off = 0, next;
	size_t hsize;
	int units = 0;
	while (dwarf_nextcu(d->dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;
		if (dwarf_offdie(d->dw, off + hsize, &cu)) {
			units++;
			if (!d->producer) {
				Dwarf_Attribute a;
				const char *p = dwarf_formstring(dwarf_attr(&cu, DW_AT_producer, &a));
				if (p)
					d->producer = p;
			}
			index_children(d, &cu, "", 0);
		}
		off = next;
	}
	return units;
}

static void read_tls_block(struct dwt *d)
{
	size_t n;
	if (elf_getphdrnum(d->elf, &n) != 0)
		return;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(d->elf, (int)i, &ph) && ph.p_type == PT_TLS) {
			d->has_tls = 1;
			d->tls_size = ph.p_memsz;
			d->tls_align = ph.p_align ? ph.p_align : 1;
		}
	}
}

struct dwt *dwt_open_fd(int fd, const char *name, struct sd_error *err)
{
	int own = dup(fd);
	if (own < 0)
		return sd_error_set(err, errno, "cannot read the DWARF of %s: %s", name,
				    strerror(errno)),
		       NULL;
	elf_version(EV_CURRENT);
	struct dwt *d = sd_xcalloc(1, sizeof(*d));
	d->fd = own;
	d->label = sd_xstrdup(name);
	hashmap_init(&d->vars, sizeof(struct dwt_ent));
	hashmap_init(&d->types, sizeof(struct dwt_ent));
	hashmap_init(&d->consts, sizeof(struct dwt_ent));
	d->elf = elf_begin(own, ELF_C_READ_MMAP, NULL);
	if (!d->elf || elf_kind(d->elf) != ELF_K_ELF) {
		sd_error_set(err, EINVAL, "%s is not an ELF file", name);
		dwt_free(d);
		return NULL;
	}
	read_tls_block(d);
	d->dw = dwarf_begin_elf(d->elf, DWARF_C_READ, NULL);
	if (!d->dw) {
		sd_error_set(err, ENOENT, "%s has no DWARF (stripped?)", name);
		dwt_free(d);
		return NULL;
	}
	if (index_all(d) == 0) {
		sd_error_set(err, ENOENT, "%s has no DWARF compile unit (stripped?)", name);
		dwt_free(d);
		return NULL;
	}
	return d;
}

struct dwt *dwt_open(const char *path, struct sd_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		sd_error_set(err, errno, "cannot open %s: %s", path, strerror(errno));
		return NULL;
	}
	struct dwt *d = dwt_open_fd(fd, path, err);
	close(fd);
	return d;
}

void dwt_free(struct dwt *d)
{
	if (!d)
		return;
	if (d->dw)
		dwarf_end(d->dw);
	if (d->elf)
		elf_end(d->elf);
	if (d->fd >= 0)
		close(d->fd);
	hashmap_release(&d->vars);
	hashmap_release(&d->types);
	hashmap_release(&d->consts);
	for (size_t i = 0; i < d->nnames; i++)
		free(d->names[i]);
	free(d->names);
	free(d->label);
	free(d);
}

const char *dwt_producer(const struct dwt *d)
{
	return d->producer ? d->producer : "";
}

void dwt_stats(const struct dwt *d, size_t *vars, size_t *types, size_t *consts)
{
	*vars = hashmap_count(&d->vars);
	*types = hashmap_count(&d->types);
	*consts = hashmap_count(&d->consts);
}

static const struct dwt_ent *lookup(const struct hashmap *m, const char *name)
{
	return hashmap_find(m, name_hash(name), name, ent_eq);
}

/* Fill OUT from the type DIE at OFF, typedefs and qualifiers peeled. */
static int type_at(struct dwt *d, uint64_t off, struct dwt_type *out)
{
	Dwarf_Die die, peeled;
	if (!dwarf_offdie(d->dw, off, &die))
		return -EINVAL;
	const char *outer = dwarf_diename(&die);
	if (dwarf_peel_type(&die, &peeled) != 0)
		peeled = die;
	memset(out, 0, sizeof(*out));
	out->die = dwarf_dieoffset(&peeled);
	const char *n = dwarf_diename(&peeled);
	out->name = n ? n : outer ? outer : "";
	switch (dwarf_tag(&peeled)) {
	case DW_TAG_base_type: out->kind = DWT_BASE; break;
	case DW_TAG_pointer_type:
	case DW_TAG_reference_type:
	case DW_TAG_rvalue_reference_type:
	case DW_TAG_ptr_to_member_type: out->kind = DWT_POINTER; break;
	case DW_TAG_structure_type:
	case DW_TAG_class_type:
	case DW_TAG_union_type: out->kind = DWT_STRUCT; break;
	case DW_TAG_array_type: out->kind = DWT_ARRAY; break;
	case DW_TAG_enumeration_type: out->kind = DWT_ENUM; break;
	default: out->kind = DWT_OTHER; break;
	}
	Dwarf_Word size;
	if (dwarf_aggregate_size(&peeled, &size) == 0)
		out->size = size;
	else if (out->kind == DWT_POINTER)
		out->size = 8;
	return 0;
}

/* The type of the DIE at OFF (its DW_AT_type). */
static int type_of(struct dwt *d, uint64_t off, struct dwt_type *out)
{
	Dwarf_Die die, t;
	Dwarf_Attribute a;
	if (!dwarf_offdie(d->dw, off, &die) || !dwarf_attr_integrate(&die, DW_AT_type, &a) ||
	    !dwarf_formref_die(&a, &t))
		return -ENOENT;
	return type_at(d, dwarf_dieoffset(&t), out);
}

int dwt_type_die(struct dwt *d, uint64_t die, struct dwt_type *out)
{
	return type_at(d, die, out);
}

void *dwt_dwarf(struct dwt *d)
{
	return d->dw;
}

int dwt_global(struct dwt *d, const char *name, uint64_t *vaddr, struct dwt_type *type,
	       struct sd_error *err)
{
	const struct dwt_ent *e = lookup(&d->vars, name);
	if (!e || e->decl)
		return sd_error_set(err, ENOENT, "no global %s in the DWARF of %s", name, d->label);
	Dwarf_Die die;
	Dwarf_Attribute a;
	Dwarf_Op *ops;
	size_t nops;
	Dwarf_Block b;
	if (!dwarf_offdie(d->dw, e->die, &die) || !dwarf_attr(&die, DW_AT_location, &a))
		return sd_error_set(err, EINVAL, "global %s of %s has no location", name, d->label);
	if (dwarf_getlocation(&a, &ops, &nops) == 0 && nops == 1 && ops[0].atom == DW_OP_addr) {
		*vaddr = ops[0].number;
	} else if (dwarf_formblock(&a, &b) == 0 && b.length == 9 && b.data[0] == DW_OP_addr) {
		/* Go writes the expression as a block that libdw's location
		 * reader refuses in some versions: DW_OP_addr and 8 bytes. */
		memcpy(vaddr, b.data + 1, 8);
	} else {
		return sd_error_set(err, EINVAL, "global %s of %s has no static address", name,
				    d->label);
	}
	if (type && type_of(d, e->die, type) < 0)
		return sd_error_set(err, EINVAL, "global %s of %s has no type", name, d->label);
	return 0;
}

int dwt_function(struct dwt *d, const char *name, uint64_t *lo, uint64_t *hi)
{
	for (int want = SHT_SYMTAB; want; want = want == SHT_SYMTAB ? SHT_DYNSYM : 0) {
		Elf_Scn *scn = NULL;
		while ((scn = elf_nextscn(d->elf, scn))) {
			GElf_Shdr sh;
			Elf_Data *data;
			if (!gelf_getshdr(scn, &sh) || sh.sh_type != (unsigned)want || !sh.sh_entsize ||
			    !(data = elf_getdata(scn, NULL)))
				continue;
			size_t n = sh.sh_size / sh.sh_entsize;
			for (size_t i = 0; i < n; i++) {
				GElf_Sym sym;
				const char *nm;
				if (!gelf_getsym(data, (int)i, &sym) ||
				    GELF_ST_TYPE(sym.st_info) != STT_FUNC || !sym.st_size ||
				    !(nm = elf_strptr(d->elf, sh.sh_link, sym.st_name)) ||
				    strcmp(nm, name))
					continue;
				*lo = sym.st_value;
				*hi = sym.st_value + sym.st_size;
				return 0;
			}
		}
	}
	return -ENOENT;
}

int dwt_tls(struct dwt *d, const char *name, uint64_t *offset, struct dwt_type *type,
	    struct sd_error *err)
{
	const struct dwt_ent *e = lookup(&d->vars, name);
	if (!e || e->decl)
		return sd_error_set(err, ENOENT, "no thread-local %s in the DWARF of %s", name,
				    d->label);
	Dwarf_Die die;
	Dwarf_Attribute a;
	Dwarf_Op *ops;
	size_t nops;
	/* A constant (the offset in the module's block), then the operator
	 * that makes it an address in the thread's copy. */
	if (!dwarf_offdie(d->dw, e->die, &die) || !dwarf_attr(&die, DW_AT_location, &a) ||
	    dwarf_getlocation(&a, &ops, &nops) != 0 || nops != 2 ||
	    (ops[1].atom != DW_OP_GNU_push_tls_address && ops[1].atom != DW_OP_form_tls_address) ||
	    !(ops[0].atom == DW_OP_const8u || ops[0].atom == DW_OP_const4u ||
	      ops[0].atom == DW_OP_constu || ops[0].atom == DW_OP_const2u ||
	      ops[0].atom == DW_OP_const1u))
		return sd_error_set(err, EINVAL, "%s of %s is not a thread-local variable", name,
				    d->label);
	*offset = ops[0].number;
	if (type && type_of(d, e->die, type) < 0)
		return sd_error_set(err, EINVAL, "thread-local %s of %s has no type", name, d->label);
	return 0;
}

int dwt_tls_block(const struct dwt *d, uint64_t *size, uint64_t *align)
{
	if (!d->has_tls)
		return -ENOENT;
	*size = d->tls_size;
	*align = d->tls_align;
	return 0;
}

int dwt_tls_address(struct dwt *d, const char *name, uint64_t tp, uint64_t *addr,
		    struct dwt_type *type, struct sd_error *err)
{
	uint64_t off, size, align;
	int r = dwt_tls(d, name, &off, type, err);
	if (r < 0)
		return r;
	if (dwt_tls_block(d, &size, &align) < 0)
		return sd_error_set(err, ENOENT, "%s has no TLS segment", d->label);
	/* x86-64 (TLS variant II): the executable's block ends at the
	 * thread pointer, its start aligned. */
	uint64_t block = (size + align - 1) / align * align;
	*addr = tp - block + off;
	return 0;
}

int dwt_const(struct dwt *d, const char *name, int64_t *value, struct sd_error *err)
{
	const struct dwt_ent *e = lookup(&d->consts, name);
	Dwarf_Die die;
	Dwarf_Attribute a;
	Dwarf_Sword v;
	if (!e)
		return sd_error_set(err, ENOENT, "no constant %s in the DWARF of %s", name, d->label);
	if (!dwarf_offdie(d->dw, e->die, &die) || !dwarf_attr(&die, DW_AT_const_value, &a) ||
	    dwarf_formsdata(&a, &v) != 0)
		return sd_error_set(err, EINVAL, "constant %s of %s has no integer value", name,
				    d->label);
	*value = v;
	return 0;
}

int dwt_type(struct dwt *d, const char *name, struct dwt_type *out, struct sd_error *err)
{
	const struct dwt_ent *e = lookup(&d->types, name);
	if (!e)
		return sd_error_set(err, ENOENT, "no type %s in the DWARF of %s", name, d->label);
	if (type_at(d, e->die, out) < 0)
		return sd_error_set(err, EINVAL, "type %s of %s cannot be read", name, d->label);
	return 0;
}

static int member_offset(Dwarf_Die *m, uint64_t *off)
{
	Dwarf_Attribute a;
	if (!dwarf_attr(m, DW_AT_data_member_location, &a)) {
		*off = 0; /* a union's members */
		return 0;
	}
	Dwarf_Word w;
	if (dwarf_formudata(&a, &w) == 0) {
		*off = w;
		return 0;
	}
	Dwarf_Op *ops;
	size_t n;
	if (dwarf_getlocation(&a, &ops, &n) == 0 && n == 1 && ops[0].atom == DW_OP_plus_uconst) {
		*off = ops[0].number;
		return 0;
	}
	return -EINVAL;
}

/* Find member NAME (LEN bytes) of the struct DIE at STRUCT_OFF, looking
 * into anonymous members (C11) too. */
static int find_member(struct dwt *d, uint64_t struct_off, const char *name, size_t len,
		       uint64_t *off, uint64_t *mdie, int depth)
{
	Dwarf_Die s, c;
	if (!dwarf_offdie(d->dw, struct_off, &s) || dwarf_child(&s, &c) != 0)
		return -ENOENT;
	do {
		if (dwarf_tag(&c) != DW_TAG_member && dwarf_tag(&c) != DW_TAG_variant_part)
			continue;
		const char *n = dwarf_diename(&c);
		uint64_t moff;
		if (member_offset(&c, &moff) < 0)
			continue;
		if (n && strlen(n) == len && !memcmp(n, name, len)) {
			*off = moff;
			*mdie = dwarf_dieoffset(&c);
			return 0;
		}
		if (!n && depth < 8) {
			struct dwt_type t;
			uint64_t inner;
			if (type_of(d, dwarf_dieoffset(&c), &t) == 0 && t.kind == DWT_STRUCT &&
			    find_member(d, t.die, name, len, &inner, mdie, depth + 1) == 0) {
				*off = moff + inner;
				return 0;
			}
		}
	} while (dwarf_siblingof(&c, &c) == 0);
	return -ENOENT;
}

int dwt_member(struct dwt *d, const struct dwt_type *t, const char *path, uint64_t *off,
	       struct dwt_type *ftype, struct sd_error *err)
{
	struct dwt_type cur = *t;
	uint64_t total = 0;
	const char *p = path;
	for (;;) {
		const char *dot = strchr(p, '.');
		size_t len = dot ? (size_t)(dot - p) : strlen(p);
		if (cur.kind != DWT_STRUCT)
			return sd_error_set(err, EINVAL, "%.*s is not a struct in %s (type %s)",
					    (int)(p - path) - 1, path, d->label,
					    cur.name ? cur.name : "?");
		uint64_t moff, mdie;
		if (find_member(d, cur.die, p, len, &moff, &mdie, 0) < 0)
			return sd_error_set(err, ENOENT, "no field %.*s in %s (looking for %s.%s)",
					    (int)len, p, cur.name && *cur.name ? cur.name : "struct",
					    t->name, path);
		total += moff;
		struct dwt_type mt;
		if (type_of(d, mdie, &mt) < 0)
			return sd_error_set(err, EINVAL, "field %.*s of %s has no type", (int)len, p,
					    cur.name);
		cur = mt;
		if (!dot)
			break;
		p = dot + 1;
	}
	*off = total;
	if (ftype)
		*ftype = cur;
	return 0;
}

int dwt_has_member(struct dwt *d, const struct dwt_type *t, const char *path)
{
	uint64_t off;
	return dwt_member(d, t, path, &off, NULL, NULL) == 0;
}

int dwt_pointee(struct dwt *d, const struct dwt_type *ptr, struct dwt_type *out,
		struct sd_error *err)
{
	if (ptr->kind != DWT_POINTER)
		return sd_error_set(err, EINVAL, "type %s of %s is not a pointer", ptr->name,
				    d->label);
	if (type_of(d, ptr->die, out) < 0)
		return sd_error_set(err, ENOENT, "pointer type %s of %s points to no type",
				    ptr->name, d->label);
	return 0;
}

int dwt_array(struct dwt *d, const struct dwt_type *arr, struct dwt_type *elem, uint64_t *count,
	      struct sd_error *err)
{
	Dwarf_Die die, c;
	if (arr->kind != DWT_ARRAY || !dwarf_offdie(d->dw, arr->die, &die))
		return sd_error_set(err, EINVAL, "type %s of %s is not an array", arr->name, d->label);
	if (type_of(d, arr->die, elem) < 0)
		return sd_error_set(err, EINVAL, "array %s of %s has no element type", arr->name,
				    d->label);
	*count = 0;
	if (dwarf_child(&die, &c) == 0) {
		do {
			if (dwarf_tag(&c) != DW_TAG_subrange_type)
				continue;
			Dwarf_Attribute a;
			Dwarf_Word w;
			if (dwarf_attr(&c, DW_AT_count, &a) && dwarf_formudata(&a, &w) == 0) {
				*count = w;
			} else if (dwarf_attr(&c, DW_AT_upper_bound, &a) &&
				   dwarf_formudata(&a, &w) == 0) {
				Dwarf_Word lower = 0;
				Dwarf_Attribute la;
				if (dwarf_attr(&c, DW_AT_lower_bound, &la))
					dwarf_formudata(&la, &lower);
				*count = w + 1 - lower;
			}
			break;
		} while (dwarf_siblingof(&c, &c) == 0);
	}
	return 0;
}

int dwt_enumerator(struct dwt *d, const struct dwt_type *t, const char *name, int64_t *value,
		   struct sd_error *err)
{
	Dwarf_Die die, c;
	if (t->kind != DWT_ENUM || !dwarf_offdie(d->dw, t->die, &die))
		return sd_error_set(err, EINVAL, "type %s of %s is not an enum", t->name, d->label);
	if (dwarf_child(&die, &c) == 0) {
		do {
			const char *n = dwarf_diename(&c);
			Dwarf_Attribute a;
			Dwarf_Sword v;
			if (dwarf_tag(&c) == DW_TAG_enumerator && n && !strcmp(n, name) &&
			    dwarf_attr(&c, DW_AT_const_value, &a) && dwarf_formsdata(&a, &v) == 0) {
				*value = v;
				return 0;
			}
		} while (dwarf_siblingof(&c, &c) == 0);
	}
	return sd_error_set(err, ENOENT, "no value %s in enum %s of %s", name, t->name, d->label);
}
