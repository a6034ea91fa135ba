// SPDX-License-Identifier: MIT
// .debug_frame: found through the section headers of an ELF image,
// inflated when compressed (SHF_COMPRESSED or the older .zdebug_ form, as
// Go writes them), indexed by FDE address range, and interpreted into the
// unwind rules at a pc. Everything is bounds-checked: the file is the
// target's.
#include "dwcfi.h"

#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "util.h"

struct fde_ent {
	uint64_t lo, hi;
	size_t fde; /* offset of the FDE's instructions */
	size_t end; /* end of the FDE */
	size_t cie; /* offset of its CIE */
};

struct sd_dwcfi {
	uint8_t *data;
	size_t len;
	struct fde_ent *f;
	size_t n;
};

/* Reading with bounds: a cursor over DATA[pos..end). */
struct rd {
	const uint8_t *d;
	size_t pos, end;
	int bad;
};

static uint64_t rd_u(struct rd *r, size_t n)
{
	if (r->bad || n > r->end - r->pos) {
		r->bad = 1;
		return 0;
	}
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)r->d[r->pos + i] << (8 * i);
	r->pos += n;
	return v;
}

static uint64_t rd_uleb(struct rd *r)
{
	uint64_t v = 0;
	unsigned shift = 0;
	for (;;) {
		if (r->bad || r->pos >= r->end) {
			r->bad = 1;
			return 0;
		}
		uint8_t b = r->d[r->pos++];
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			return v;
	}
}

static int64_t rd_sleb(struct rd *r)
{
	int64_t v = 0;
	unsigned shift = 0;
	uint8_t b = 0;
	for (;;) {
		if (r->bad || r->pos >= r->end) {
			r->bad = 1;
			return 0;
		}
		b = r->d[r->pos++];
		if (shift < 64)
			v |= (int64_t)((uint64_t)(b & 0x7f) << shift);
		shift += 7;
		if (!(b & 0x80))
			break;
	}
	if (shift < 64 && (b & 0x40))
		v |= -((int64_t)1 << shift);
	return v;
}

/* The bytes of section NAME (inflated), or NULL. */
static uint8_t *section_bytes(const uint8_t *data, size_t size, const char *name, size_t *len)
{
	Elf64_Ehdr eh;
	if (size < sizeof(eh))
		return NULL;
	memcpy(&eh, data, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > size ||
	    (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr) > size - eh.e_shoff ||
	    eh.e_shstrndx >= eh.e_shnum)
		return NULL;
	Elf64_Shdr strs;
	memcpy(&strs, data + eh.e_shoff + (uint64_t)eh.e_shstrndx * sizeof(strs), sizeof(strs));
	if (strs.sh_offset > size || strs.sh_size > size - strs.sh_offset)
		return NULL;
	char zname[64];
	snprintf(zname, sizeof(zname), ".z%s", name + 1);
	for (unsigned i = 0; i < eh.e_shnum; i++) {
		Elf64_Shdr sh;
		memcpy(&sh, data + eh.e_shoff + (uint64_t)i * sizeof(sh), sizeof(sh));
		if (sh.sh_name >= strs.sh_size || sh.sh_type == SHT_NOBITS)
			continue;
		const char *sn = (const char *)data + strs.sh_offset + sh.sh_name;
		size_t room = strs.sh_size - sh.sh_name;
		int plain = strnlen(sn, room) < room && strcmp(sn, name) == 0;
		int gnuz = strnlen(sn, room) < room && strcmp(sn, zname) == 0;
		if (!plain && !gnuz)
			continue;
		if (sh.sh_offset > size || sh.sh_size > size - sh.sh_offset)
			return NULL;
		const uint8_t *src = data + sh.sh_offset;
		size_t srclen = sh.sh_size;
		uint64_t outlen;
		if (plain && (sh.sh_flags & SHF_COMPRESSED)) {
			Elf64_Chdr ch;
			if (srclen < sizeof(ch))
				return NULL;
			memcpy(&ch, src, sizeof(ch));
			if (ch.ch_type != ELFCOMPRESS_ZLIB)
				return NULL;
			outlen = ch.ch_size;
			src += sizeof(ch);
			srclen -= sizeof(ch);
		} else if (gnuz) {
			/* "ZLIB" and the size, big-endian. */
			if (srclen < 12 || memcmp(src, "ZLIB", 4))
				return NULL;
			outlen = 0;
			for (int k = 0; k < 8; k++)
				outlen = outlen << 8 | src[4 + k];
			src += 12;
			srclen -= 12;
		} else {
			uint8_t *copy = malloc(srclen ? srclen : 1);
			if (!copy)
				return NULL;
			memcpy(copy, src, srclen);
			*len = srclen;
			return copy;
		}
		/* A bound on what a hostile header may make us allocate. */
		if (outlen == 0 || outlen > (uint64_t)1 << 30)
			return NULL;
		uint8_t *out = malloc(outlen);
		uLongf got = outlen;
		if (!out || uncompress(out, &got, src, srclen) != Z_OK || got != outlen) {
			free(out);
			return NULL;
		}
		*len = outlen;
		return out;
	}
	return NULL;
}

/* One CIE or FDE header at *POS: its length and id fields. Returns 0 and
 * fills BODY (where the fields after the id start), END, ID and IS_CIE. */
static int entry_at(const struct sd_dwcfi *c, size_t pos, size_t *body, size_t *end, uint64_t *id,
		    int *is_cie)
{
	struct rd r = {c->data, pos, c->len, 0};
	uint64_t len = rd_u(&r, 4);
	int wide = 0;
	if (len == 0xffffffffu) {
		len = rd_u(&r, 8);
		wide = 1;
	}
	if (r.bad || len == 0 || len > r.end - r.pos)
		return -1;
	*end = r.pos + len;
	r.end = *end;
	*id = rd_u(&r, wide ? 8 : 4);
	*is_cie = wide ? *id == UINT64_MAX : *id == 0xffffffffu;
	*body = r.pos;
	return r.bad ? -1 : 0;
}

struct cie_info {
	uint64_t code_align;
	int64_t data_align;
	int ra;
	size_t insns, end; /* initial instructions */
	int has_z;	   /* augmentation data after the FDE's range */
};

static int parse_cie(const struct sd_dwcfi *c, size_t off, struct cie_info *ci)
{
	size_t body, end;
	uint64_t id;
	int is_cie;
	if (entry_at(c, off, &body, &end, &id, &is_cie) < 0 || !is_cie)
		return -1;
	struct rd r = {c->data, body, end, 0};
	unsigned version = (unsigned)rd_u(&r, 1);
	const char *aug = (const char *)c->data + r.pos;
	size_t alen = strnlen(aug, end - r.pos);
	if (alen == end - r.pos)
		return -1;
	r.pos += alen + 1;
	/* Only augmentations whose data we can skip: "" and "z...". */
	if (alen && aug[0] != 'z')
		return -1;
	if (version >= 4) {
		if (rd_u(&r, 1) != 8)
			return -1;
		rd_u(&r, 1);
	}
	ci->code_align = rd_uleb(&r);
	ci->data_align = rd_sleb(&r);
	ci->ra = (int)(version == 1 ? rd_u(&r, 1) : rd_uleb(&r));
	ci->has_z = alen > 0;
	if (ci->has_z) {
		uint64_t n = rd_uleb(&r);
		if (n > r.end - r.pos)
			return -1;
		r.pos += n;
	}
	ci->insns = r.pos;
	ci->end = end;
	return r.bad ? -1 : 0;
}

static int cmp_fde(const void *a, const void *b)
{
	const struct fde_ent *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

struct sd_dwcfi *dwcfi_from_elf(const uint8_t *data, size_t size)
{
	size_t len = 0;
	uint8_t *bytes = section_bytes(data, size, ".debug_frame", &len);
	if (!bytes)
		return NULL;
	struct sd_dwcfi *c = sd_xcalloc(1, sizeof(*c));
	c->data = bytes;
	c->len = len;
	size_t cap = 0;
	for (size_t pos = 0; pos < len;) {
		size_t body, end;
		uint64_t id;
		int is_cie;
		if (entry_at(c, pos, &body, &end, &id, &is_cie) < 0)
			break;
		if (!is_cie) {
			struct cie_info ci;
			struct rd r = {c->data, body, end, 0};
			uint64_t lo = rd_u(&r, 8), range = rd_u(&r, 8);
			if (!r.bad && id < len && parse_cie(c, (size_t)id, &ci) == 0 && range &&
			    lo + range > lo) {
				if (ci.has_z) {
					uint64_t n = rd_uleb(&r);
					r.pos = n <= r.end - r.pos ? r.pos + n : r.end;
				}
				if (c->n == cap) {
					cap = cap ? cap * 2 : 256;
					c->f = sd_xrealloc(c->f, cap * sizeof(*c->f));
				}
				c->f[c->n++] = (struct fde_ent){.lo = lo,
								.hi = lo + range,
								.fde = r.pos,
								.end = end,
								.cie = (size_t)id};
			}
		}
		pos = end;
	}
	if (!c->n) {
		dwcfi_free(c);
		return NULL;
	}
	sd_sort(c->f, c->n, sizeof(*c->f), cmp_fde);
	return c;
}

void dwcfi_free(struct sd_dwcfi *c)
{
	if (!c)
		return;
	free(c->data);
	free(c->f);
	free(c);
}

size_t dwcfi_count(const struct sd_dwcfi *c)
{
	return c ? c->n : 0;
}

enum { STATE_DEPTH = 8 };

struct interp {
	struct dwcfi_row row, init;
	struct dwcfi_row stack[STATE_DEPTH];
	int depth;
	uint64_t loc;
};

static void set_rule(struct dwcfi_row *row, uint64_t reg, enum dwcfi_rule rule, int64_t off,
		     int from)
{
	if (reg >= DWCFI_NREGS)
		return;
	row->r[reg].rule = rule;
	row->r[reg].off = off;
	row->r[reg].reg = from;
}

/* Run the instructions in [POS, END) until the location passes PC (PC ==
 * UINT64_MAX: all of them). Returns 0 or -EINVAL. */
static int run(const struct sd_dwcfi *c, const struct cie_info *ci, struct interp *st, size_t pos,
	       size_t end, uint64_t pc)
{
	struct rd r = {c->data, pos, end, 0};
	while (r.pos < r.end && !r.bad) {
		uint8_t op = (uint8_t)rd_u(&r, 1);
		uint8_t hi = op & 0xc0, lo = op & 0x3f;
		uint64_t reg;
		int64_t off;
		if (hi == 0x40) { /* advance_loc */
			st->loc += lo * ci->code_align;
			if (st->loc > pc)
				return 0;
			continue;
		}
		if (hi == 0x80) { /* offset */
			off = (int64_t)rd_uleb(&r) * ci->data_align;
			set_rule(&st->row, lo, DWCFI_OFFSET, off, 0);
			continue;
		}
		if (hi == 0xc0) { /* restore */
			if (lo < DWCFI_NREGS)
				st->row.r[lo] = st->init.r[lo];
			continue;
		}
		switch (op) {
		case 0x00: /* nop */ break;
		case 0x01: /* set_loc */
			st->loc = rd_u(&r, 8);
			if (st->loc > pc)
				return 0;
			break;
		case 0x02:
		case 0x03:
		case 0x04: { /* advance_loc1, 2, 4 */
			uint64_t d = rd_u(&r, op == 0x02 ? 1 : op == 0x03 ? 2 : 4);
			st->loc += d * ci->code_align;
			if (st->loc > pc)
				return 0;
			break;
		}
		case 0x05: /* offset_extended */
			reg = rd_uleb(&r);
			off = (int64_t)rd_uleb(&r) * ci->data_align;
			set_rule(&st->row, reg, DWCFI_OFFSET, off, 0);
			break;
		case 0x06: /* restore_extended */
			reg = rd_uleb(&r);
			if (reg < DWCFI_NREGS)
				st->row.r[reg] = st->init.r[reg];
			break;
		case 0x07: /* undefined */
			set_rule(&st->row, rd_uleb(&r), DWCFI_UNDEF, 0, 0);
			break;
		case 0x08: /* same_value */
			set_rule(&st->row, rd_uleb(&r), DWCFI_SAME, 0, 0);
			break;
		case 0x09: /* register */
			reg = rd_uleb(&r);
			set_rule(&st->row, reg, DWCFI_REGISTER, 0, (int)rd_uleb(&r));
			break;
		case 0x0a: /* remember_state */
			if (st->depth == STATE_DEPTH)
				return -EINVAL;
			st->stack[st->depth++] = st->row;
			break;
		case 0x0b: { /* restore_state: the CFA rule stays */
			if (st->depth == 0)
				return -EINVAL;
			int creg = st->row.cfa_reg;
			int64_t coff = st->row.cfa_off;
			st->row = st->stack[--st->depth];
			st->row.cfa_reg = creg;
			st->row.cfa_off = coff;
			break;
		}
		case 0x0c: /* def_cfa */
			st->row.cfa_reg = (int)rd_uleb(&r);
			st->row.cfa_off = (int64_t)rd_uleb(&r);
			break;
		case 0x0d: /* def_cfa_register */ st->row.cfa_reg = (int)rd_uleb(&r); break;
		case 0x0e: /* def_cfa_offset */ st->row.cfa_off = (int64_t)rd_uleb(&r); break;
		case 0x11: /* offset_extended_sf */
			reg = rd_uleb(&r);
			off = rd_sleb(&r) * ci->data_align;
			set_rule(&st->row, reg, DWCFI_OFFSET, off, 0);
			break;
		case 0x12: /* def_cfa_sf */
			st->row.cfa_reg = (int)rd_uleb(&r);
			st->row.cfa_off = rd_sleb(&r) * ci->data_align;
			break;
		case 0x13: /* def_cfa_offset_sf */
			st->row.cfa_off = rd_sleb(&r) * ci->data_align;
			break;
		case 0x14: /* val_offset */
			reg = rd_uleb(&r);
			off = (int64_t)rd_uleb(&r) * ci->data_align;
			set_rule(&st->row, reg, DWCFI_VAL_OFFSET, off, 0);
			break;
		case 0x15: /* val_offset_sf */
			reg = rd_uleb(&r);
			off = rd_sleb(&r) * ci->data_align;
			set_rule(&st->row, reg, DWCFI_VAL_OFFSET, off, 0);
			break;
		case 0x2e: /* GNU_args_size */ rd_uleb(&r); break;
		case 0x2f: /* GNU_negative_offset_extended */
			reg = rd_uleb(&r);
			off = -(int64_t)rd_uleb(&r) * ci->data_align;
			set_rule(&st->row, reg, DWCFI_OFFSET, off, 0);
			break;
		default:
			/* DWARF expressions (0x0f, 0x10, 0x16) and unknown
			 * opcodes: not followed. */
			return -EINVAL;
		}
	}
	return r.bad ? -EINVAL : 0;
}

int dwcfi_row_at(const struct sd_dwcfi *c, uint64_t pc, struct dwcfi_row *row)
{
	if (!c)
		return -ENOENT;
	size_t lo = 0, hi = c->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c->f[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || pc >= c->f[lo - 1].hi)
		return -ENOENT;
	const struct fde_ent *f = &c->f[lo - 1];
	struct cie_info ci;
	if (parse_cie(c, f->cie, &ci) < 0)
		return -EINVAL;
	/* On the stack, and only its rows and depth cleared: the saved states
	 * are written before they are read (a step asks for this at every
	 * frame of every goroutine). */
	struct interp st;
	memset(&st.row, 0, sizeof(st.row));
	memset(&st.init, 0, sizeof(st.init));
	st.depth = 0;
	st.loc = 0;
	st.row.cfa_reg = DWCFI_RSP;
	int e = run(c, &ci, &st, ci.insns, ci.end, UINT64_MAX);
	if (e == 0) {
		st.init = st.row;
		st.loc = f->lo;
		e = run(c, &ci, &st, f->fde, f->end, pc);
	}
	if (e == 0)
		*row = st.row;
	return e;
}
