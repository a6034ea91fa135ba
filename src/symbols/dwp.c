// SPDX-License-Identifier: MIT
// DWARF packages. libdw before 0.190 reads split units from .dwo files
// only; a unit in a package is handed to it as a small ELF file in memory
// that holds the unit's contributions under the section names of a .dwo
// file (so every offset in the unit is right as it is), with the package's
// string section mapped behind it rather than copied. What libdw would
// take from the skeleton once linked to it (the addresses behind
// DW_FORM_addrx, the base address of range lists, DWARF 4's ranges in the
// program's .debug_ranges) it cannot get here, so the ranges of a DIE are
// read by this module.
#include "dwp.h"

#include <dwarf.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "saferead.h"

struct dwp_sect {
	const uint8_t *data; /* NULL: the package has no such section */
	size_t size;
	uint64_t file_off; /* where the bytes are in the file, */
	int mappable;	   /* when they are there as they are (not compressed) */
};

struct sd_dwp {
	char *path;
	int fd;
	Elf *elf;
	GElf_Half machine;
	struct dwp_index ix;
	struct dwp_sect sect[DWP_NSECT];
	struct dwp_sect str;
};

struct dwp_unit {
	void *image; /* the in-memory ELF file (an mmap) */
	size_t image_size;
	Elf *elf;
	Dwarf *dw;
	Dwarf_Die cudie;
	uint8_t offset_size;
	struct dwp_rangectx rc;
};

static uint64_t rd(const uint8_t *p, int n)
{
	if (n == 2) {
		uint16_t v;
		memcpy(&v, p, 2);
		return v;
	}
	if (n == 4) {
		uint32_t v;
		memcpy(&v, p, 4);
		return v;
	}
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

int dwp_index_parse(const uint8_t *data, size_t size, struct dwp_index *ix)
{
	memset(ix, 0, sizeof(*ix));
	if (!data || size < 16)
		return -EINVAL;
	/* Version 5 is a 2-byte version and 2 bytes of padding, version 2 a
	 * 4-byte version: read as 4 bytes, both are the number. */
	ix->version = (uint32_t)rd(data, 4);
	ix->ncols = (uint32_t)rd(data + 4, 4);
	ix->nunits = (uint32_t)rd(data + 8, 4);
	ix->nslots = (uint32_t)rd(data + 12, 4);
	if (ix->version != 2 && ix->version != 5)
		return -EINVAL;
	/* Slots are a power of two (the hash is masked), more than units. */
	if ((ix->nslots & (ix->nslots - 1)) != 0 || ix->nunits > ix->nslots)
		return -EINVAL;
	if (ix->nunits && (ix->ncols == 0 || ix->ncols > 16))
		return -EINVAL;
	uint64_t need = 16 + (uint64_t)ix->nslots * 12 + (uint64_t)ix->ncols * 4 +
			2 * (uint64_t)ix->nunits * ix->ncols * 4;
	if (need > size)
		return -EINVAL;
	ix->ids = data + 16;
	ix->rows = ix->ids + (size_t)ix->nslots * 8;
	ix->cols = ix->rows + (size_t)ix->nslots * 4;
	ix->offs = ix->cols + (size_t)ix->ncols * 4;
	ix->sizes = ix->offs + (size_t)ix->nunits * ix->ncols * 4;
	return 0;
}

/* Our number for column id ID of an index of VERSION, or -1. */
static int column_kind(uint32_t version, uint32_t id)
{
	switch (id) {
	case 1: return DWP_INFO;
	case 3: return DWP_ABBREV;
	case 4: return DWP_LINE;
	case 5: /* DW_SECT_LOC (2), DW_SECT_LOCLISTS (5) */ return DWP_LOC;
	case 6: return DWP_STR_OFFSETS;
	case 8: /* DW_SECT_MACRO (2), DW_SECT_RNGLISTS (5) */
		return version == 5 ? DWP_RNGLISTS : -1;
	default: /* types, macinfo, macro */ return -1;
	}
}

int dwp_index_find(const struct dwp_index *ix, uint64_t id, struct dwp_contrib out[DWP_NSECT])
{
	memset(out, 0, DWP_NSECT * sizeof(*out));
	if (ix->nslots == 0)
		return -ENOENT;
	/* Open addressing: the low bits of the id pick the slot, the next
	 * 32 bits (made odd) the step. */
	uint64_t mask = ix->nslots - 1;
	uint64_t h = id & mask, step = ((id >> 32) & mask) | 1;
	for (uint32_t i = 0; i < ix->nslots; i++, h = (h + step) & mask) {
		uint32_t row = (uint32_t)rd(ix->rows + h * 4, 4);
		if (row == 0)
			return -ENOENT;
		if (rd(ix->ids + h * 8, 8) != id)
			continue;
		if (row > ix->nunits)
			return -ENOENT;
		for (uint32_t c = 0; c < ix->ncols; c++) {
			int k = column_kind(ix->version, (uint32_t)rd(ix->cols + c * 4, 4));
			if (k < 0)
				continue;
			size_t at = ((size_t)(row - 1) * ix->ncols + c) * 4;
			out[k].off = rd(ix->offs + at, 4);
			out[k].size = rd(ix->sizes + at, 4);
		}
		return 0;
	}
	return -ENOENT;
}

/* Read the section SCN of a package into S. */
static void read_section(Elf_Scn *scn, uint64_t file_size, struct dwp_sect *s)
{
	GElf_Shdr sh;
	if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
		return;
	int compressed = (sh.sh_flags & SHF_COMPRESSED) != 0;
	if (compressed && elf_compress(scn, 0, 0) < 0)
		return;
	Elf_Data *d = elf_getdata(scn, NULL);
	if (!d || !d->d_buf)
		return;
	s->data = d->d_buf;
	s->size = d->d_size;
	s->file_off = sh.sh_offset;
	/* Mapped again later: only bytes that are in the file as they are,
	 * all of them (a mapping past the end of a file faults on use). */
	s->mappable = !compressed && sh.sh_offset <= file_size &&
		      d->d_size <= file_size - sh.sh_offset;
}

struct sd_dwp *dwp_open(const char *path, struct sd_error *err)
{
	/* Packages are found beside the target's files: inside its root,
	 * a regular file, capped (saferead.h). */
	struct stat st;
	int fd = saferead_open(path, saferead_cap("STACKDUMP_MAX_DEBUG_FILE", SAFEREAD_DEBUG_CAP),
			       (uid_t)-1, &st, err);
	if (fd < 0)
		return NULL;
	uint64_t fsize = (uint64_t)st.st_size;
	elf_version(EV_CURRENT);
	struct sd_dwp *p = sd_xcalloc(1, sizeof(*p));
	p->path = sd_xstrdup(path);
	p->fd = fd;
	p->elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	GElf_Ehdr eh;
	size_t shstrndx;
	const unsigned char host_data =
	    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;
	if (!p->elf || elf_kind(p->elf) != ELF_K_ELF || !gelf_getehdr(p->elf, &eh) ||
	    eh.e_ident[EI_DATA] != host_data || elf_getshdrstrndx(p->elf, &shstrndx) < 0) {
		sd_error_set(err, EINVAL, "%s is not an ELF file of this machine", path);
		goto fail;
	}
	p->machine = eh.e_machine;
	static const char *const names[DWP_NSECT] = {
	    [DWP_INFO] = ".debug_info.dwo",
	    [DWP_ABBREV] = ".debug_abbrev.dwo",
	    [DWP_LINE] = ".debug_line.dwo",
	    [DWP_LOC] = NULL, /* by version */
	    [DWP_STR_OFFSETS] = ".debug_str_offsets.dwo",
	    [DWP_RNGLISTS] = ".debug_rnglists.dwo",
	};
	struct dwp_sect index = {0}, loc = {0}, loclists = {0};
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(p->elf, scn))) {
		GElf_Shdr sh;
		const char *name;
		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(p->elf, shstrndx, sh.sh_name)))
			continue;
		if (!strcmp(name, ".debug_cu_index"))
			read_section(scn, fsize, &index);
		else if (!strcmp(name, ".debug_str.dwo"))
			read_section(scn, fsize, &p->str);
		else if (!strcmp(name, ".debug_loc.dwo"))
			read_section(scn, fsize, &loc);
		else if (!strcmp(name, ".debug_loclists.dwo"))
			read_section(scn, fsize, &loclists);
		for (int k = 0; k < DWP_NSECT; k++)
			if (names[k] && !strcmp(name, names[k]))
				read_section(scn, fsize, &p->sect[k]);
	}
	if (dwp_index_parse(index.data, index.size, &p->ix) < 0) {
		sd_error_set(err, EINVAL,
			     "%s has no unit index (.debug_cu_index) of version 2 or 5", path);
		goto fail;
	}
	p->sect[DWP_LOC] = p->ix.version == 5 ? loclists : loc;
	return p;
fail:
	dwp_free(p);
	return NULL;
}

void dwp_free(struct sd_dwp *p)
{
	if (!p)
		return;
	if (p->elf)
		elf_end(p->elf);
	if (p->fd >= 0)
		close(p->fd);
	free(p->path);
	free(p);
}

const char *dwp_path(const struct sd_dwp *p)
{
	return p->path;
}

/* One section of the in-memory file: bytes copied into it. */
struct imgsec {
	const char *name;
	const uint8_t *data;
	size_t size;
	size_t at; /* offset in the image */
};

static size_t align_up(size_t v, size_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/* Build the ELF file of the sections S[0..N) and, if STR is given, the
 * package's string section: mapped from the package's file FD behind
 * the copies when it is there as it is, else copied too. Returns the
 * image (an mmap of *SIZE bytes) or NULL. */
static void *image_build(struct imgsec *s, int n, const struct dwp_sect *str, int fd,
			 GElf_Half machine, size_t *size)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	int map_str = str && str->data && str->mappable;
	struct imgsec all[DWP_NSECT + 2];
	int from[DWP_NSECT + 2]; /* the entry of S of each, or -1 */
	int ns = 0;
	for (int i = 0; i < n; i++)
		if (s[i].size) {
			from[ns] = i;
			all[ns++] = s[i];
		}
	from[ns] = -1;
	if (str && str->data && !map_str)
		all[ns++] =
		    (struct imgsec){.name = ".debug_str.dwo", .data = str->data, .size = str->size};
	/* Section names: "" for the null section, then one per section. */
	char shstr[512];
	size_t shlen = 1;
	shstr[0] = 0;
	uint32_t name_at[DWP_NSECT + 3];
	for (int i = 0; i < ns + 2; i++) {
		const char *nm = i < ns ? all[i].name : i == ns ? ".debug_str.dwo" : ".shstrtab";
		name_at[i] = (uint32_t)shlen;
		memcpy(shstr + shlen, nm, strlen(nm) + 1);
		shlen += strlen(nm) + 1;
	}
	size_t off = sizeof(Elf64_Ehdr);
	for (int i = 0; i < ns; i++) {
		off = align_up(off, 8);
		all[i].at = off;
		if (from[i] >= 0)
			s[from[i]].at = off;
		off += all[i].size;
	}
	size_t shstr_at = off;
	off = align_up(off + shlen, 8);
	size_t shoff = off;
	int nshdr = 1 + ns + (map_str ? 1 : 0) + 1;
	off += (size_t)nshdr * sizeof(Elf64_Shdr);
	size_t head = align_up(off, page);
	size_t delta = map_str ? str->file_off % page : 0;
	size_t total = head + (map_str ? delta + str->size : 0);
	uint8_t *img =
	    mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (img == MAP_FAILED)
		return NULL;
	if (map_str && mmap(img + head, delta + str->size, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd,
			    (off_t)(str->file_off - delta)) == MAP_FAILED) {
		munmap(img, total);
		return NULL;
	}
	Elf64_Ehdr *eh = (Elf64_Ehdr *)img;
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] =
	    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_REL;
	eh->e_machine = machine;
	eh->e_version = EV_CURRENT;
	eh->e_shoff = shoff;
	eh->e_ehsize = sizeof(Elf64_Ehdr);
	eh->e_shentsize = sizeof(Elf64_Shdr);
	eh->e_shnum = (Elf64_Half)nshdr;
	eh->e_shstrndx = (Elf64_Half)(nshdr - 1);
	Elf64_Shdr *sh = (Elf64_Shdr *)(img + shoff);
	int k = 1;
	for (int i = 0; i < ns; i++, k++) {
		memcpy(img + all[i].at, all[i].data, all[i].size);
		sh[k] = (Elf64_Shdr){.sh_name = name_at[i],
				     .sh_type = SHT_PROGBITS,
				     .sh_offset = all[i].at,
				     .sh_size = all[i].size,
				     .sh_addralign = 1};
	}
	if (map_str)
		sh[k++] = (Elf64_Shdr){.sh_name = name_at[ns],
				       .sh_type = SHT_PROGBITS,
				       .sh_offset = head + delta,
				       .sh_size = str->size,
				       .sh_addralign = 1};
	memcpy(img + shstr_at, shstr, shlen);
	sh[k] = (Elf64_Shdr){.sh_name = name_at[ns + 1],
			     .sh_type = SHT_STRTAB,
			     .sh_offset = shstr_at,
			     .sh_size = shlen,
			     .sh_addralign = 1};
	*size = total;
	return img;
}

/* The data of the section NAME (or its .zdebug_ twin) of ELF. */
static int program_section(Elf *elf, const char *name, const uint8_t **data, size_t *size)
{
	size_t shstrndx;
	*data = NULL;
	*size = 0;
	if (!elf || elf_getshdrstrndx(elf, &shstrndx) < 0)
		return -1;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *nm;
		if (!gelf_getshdr(scn, &sh) || !(nm = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		int gnu = !strncmp(nm, ".zdebug_", 8) && !strcmp(nm + 8, name + 7);
		if (strcmp(nm, name) && !gnu)
			continue;
		/* libdw inflated them when it opened the file; in case not: */
		if ((sh.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0)
			return -1;
		if (gnu && !(sh.sh_flags & SHF_COMPRESSED))
			elf_compress_gnu(scn, 0, 0);
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf)
			return -1;
		*data = d->d_buf;
		*size = d->d_size;
		return 0;
	}
	return -1;
}

/* An offset-valued attribute as it is written (DW_FORM_sec_offset,
 * data4/8): libdw would check it against a section this file lacks. */
static int attr_offset(Dwarf_Attribute *a, uint8_t offset_size, uint64_t *v)
{
	switch (a->form) {
	case DW_FORM_sec_offset: *v = rd(a->valp, offset_size == 8 ? 8 : 4); return 0;
	case DW_FORM_data4: *v = rd(a->valp, 4); return 0;
	case DW_FORM_data8: *v = rd(a->valp, 8); return 0;
	default: {
		Dwarf_Word w;
		if (dwarf_formudata(a, &w) != 0)
			return -1;
		*v = w;
		return 0;
	}
	}
}

/* The skeleton's side of the unit: base address, .debug_addr from its
 * address base, .debug_ranges from its ranges base (DWARF 4). */
static void skeleton_context(Dwarf_CU *skel, Dwarf_Die *sdie, uint8_t offset_size,
			     struct dwp_rangectx *rc)
{
	Dwarf_Addr base = 0;
	if (dwarf_lowpc(sdie, &base) != 0)
		base = 0;
	rc->base = base;
	Elf *elf = dwarf_getelf(dwarf_cu_getdwarf(skel));
	Dwarf_Attribute a;
	uint64_t at = 0;
	const uint8_t *d;
	size_t n;
	if ((dwarf_attr(sdie, DW_AT_addr_base, &a) || dwarf_attr(sdie, DW_AT_GNU_addr_base, &a)) &&
	    attr_offset(&a, offset_size, &at) == 0 &&
	    program_section(elf, ".debug_addr", &d, &n) == 0 && at <= n) {
		rc->addr = d + at;
		rc->addr_len = n - at;
	}
	at = 0;
	if (rc->version < 5 && program_section(elf, ".debug_ranges", &d, &n) == 0 &&
	    (!dwarf_attr(sdie, DW_AT_GNU_ranges_base, &a) ||
	     attr_offset(&a, offset_size, &at) == 0) &&
	    at <= n) {
		rc->lists = d + at;
		rc->lists_len = n - at;
	}
}

struct dwp_unit *dwp_unit_open(struct sd_dwp *p, Dwarf_CU *skel)
{
	Dwarf_Die sdie;
	Dwarf_Half version;
	uint8_t addr_size, offset_size;
	uint64_t id;
	struct dwp_contrib c[DWP_NSECT];
	if (!p || !dwarf_cu_die(skel, &sdie, &version, NULL, &addr_size, &offset_size, &id, NULL) ||
	    dwp_index_find(&p->ix, id, c) < 0 || !c[DWP_INFO].size || !c[DWP_ABBREV].size)
		return NULL;
	static const char *const names[DWP_NSECT] = {
	    ".debug_info.dwo",	      ".debug_abbrev.dwo",   ".debug_line.dwo", NULL,
	    ".debug_str_offsets.dwo", ".debug_rnglists.dwo",
	};
	struct imgsec s[DWP_NSECT];
	int n = 0, rnglists = -1;
	for (int k = 0; k < DWP_NSECT; k++) {
		if (!c[k].size)
			continue;
		const struct dwp_sect *ps = &p->sect[k];
		if (!ps->data || c[k].off > ps->size || c[k].size > ps->size - c[k].off)
			return NULL;
		if (k == DWP_RNGLISTS)
			rnglists = n;
		s[n++] = (struct imgsec){
		    .name = k == DWP_LOC
				? (p->ix.version == 5 ? ".debug_loclists.dwo" : ".debug_loc.dwo")
				: names[k],
		    .data = ps->data + c[k].off,
		    .size = c[k].size};
	}
	struct dwp_unit *u = sd_xcalloc(1, sizeof(*u));
	u->image = image_build(s, n, &p->str, p->fd, p->machine, &u->image_size);
	if (!u->image)
		goto fail;
	u->elf = elf_memory(u->image, u->image_size);
	u->dw = u->elf ? dwarf_begin_elf(u->elf, DWARF_C_READ, NULL) : NULL;
	Dwarf_CU *cu = NULL;
	uint8_t type = 0;
	uint64_t uid = 0;
	Dwarf_Half uversion = 0;
	if (!u->dw || dwarf_get_units(u->dw, NULL, &cu, &uversion, &type, &u->cudie, NULL) != 0 ||
	    type != DW_UT_split_compile ||
	    !dwarf_cu_die(cu, &u->cudie, NULL, NULL, NULL, &u->offset_size, &uid, NULL) ||
	    uid != id)
		goto fail;
	u->rc.version = uversion;
	u->rc.addr_size = addr_size == 4 ? 4 : 8;
	skeleton_context(skel, &sdie, offset_size, &u->rc);
	if (uversion >= 5) {
		u->rc.lists = NULL;
		u->rc.lists_len = 0;
		if (rnglists >= 0) {
			u->rc.lists = (const uint8_t *)u->image + s[rnglists].at;
			u->rc.lists_len = s[rnglists].size;
		}
	}
	return u;
fail:
	dwp_unit_free(u);
	return NULL;
}

void dwp_unit_free(struct dwp_unit *u)
{
	if (!u)
		return;
	if (u->dw)
		dwarf_end(u->dw);
	if (u->elf)
		elf_end(u->elf);
	if (u->image)
		munmap(u->image, u->image_size);
	free(u);
}

Dwarf_Die dwp_unit_cudie(const struct dwp_unit *u)
{
	return u->cudie;
}

static int addr_at(const struct dwp_rangectx *c, uint64_t idx, uint64_t *out)
{
	if (!c->addr || idx >= c->addr_len / c->addr_size)
		return -1;
	*out = rd(c->addr + idx * c->addr_size, c->addr_size);
	return 0;
}

static int uleb(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t r = 0;
	for (int shift = 0; *p < end; shift += 7) {
		uint8_t b = *(*p)++;
		if (shift < 64)
			r |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = r;
			return 0;
		}
	}
	return -1;
}

int64_t dwp_rnglistx(const struct dwp_rangectx *c, uint64_t idx)
{
	const uint8_t *p = c->lists;
	size_t n = c->lists_len;
	if (!p || n < 12)
		return -1;
	size_t hdr = 12, osz = 4, len_at = 4;
	uint64_t len = rd(p, 4);
	if (len == 0xffffffffu) {
		if (n < 20)
			return -1;
		len = rd(p + 4, 8);
		hdr = 20;
		osz = 8;
		len_at = 12;
	}
	uint64_t count = rd(p + hdr - 4, 4);
	if (len > n - len_at || idx >= count || (hdr + (idx + 1) * osz) > n)
		return -1;
	uint64_t o = rd(p + hdr + idx * osz, (int)osz);
	if (o > n - hdr)
		return -1;
	return (int64_t)(hdr + o);
}

int dwp_rangelist(const struct dwp_rangectx *c, uint64_t off, dwp_range_fn fn, void *arg)
{
	if (!c->lists || off >= c->lists_len)
		return -1;
	const uint8_t *p = c->lists + off, *end = c->lists + c->lists_len;
	int as = c->addr_size == 4 ? 4 : 8;
	uint64_t base = c->base, maxaddr = as == 4 ? 0xffffffffu : ~0ull;
	int n = 0;
	while (p < end) {
		uint64_t lo, hi, a, b;
		if (c->version < 5) {
			/* Pairs of addresses: (0, 0) ends the list, (max, x)
			 * sets the base, others are offsets from the base. */
			if (end - p < 2 * as)
				return -1;
			a = rd(p, as);
			b = rd(p + as, as);
			p += 2 * as;
			if (a == 0 && b == 0)
				return n;
			if (a == maxaddr) {
				base = b;
				continue;
			}
			lo = base + a;
			hi = base + b;
		} else {
			uint8_t kind = *p++;
			switch (kind) {
			case DW_RLE_end_of_list: return n;
			case DW_RLE_base_addressx:
				if (uleb(&p, end, &a) || addr_at(c, a, &base))
					return -1;
				continue;
			case DW_RLE_startx_endx:
				if (uleb(&p, end, &a) || uleb(&p, end, &b) || addr_at(c, a, &lo) ||
				    addr_at(c, b, &hi))
					return -1;
				break;
			case DW_RLE_startx_length:
				if (uleb(&p, end, &a) || uleb(&p, end, &b) || addr_at(c, a, &lo))
					return -1;
				hi = lo + b;
				break;
			case DW_RLE_offset_pair:
				if (uleb(&p, end, &a) || uleb(&p, end, &b))
					return -1;
				lo = base + a;
				hi = base + b;
				break;
			case DW_RLE_base_address:
				if (end - p < as)
					return -1;
				base = rd(p, as);
				p += as;
				continue;
			case DW_RLE_start_end:
				if (end - p < 2 * as)
					return -1;
				lo = rd(p, as);
				hi = rd(p + as, as);
				p += 2 * as;
				break;
			case DW_RLE_start_length:
				if (end - p < as)
					return -1;
				lo = rd(p, as);
				p += as;
				if (uleb(&p, end, &b))
					return -1;
				hi = lo + b;
				break;
			default: return -1;
			}
		}
		if (hi <= lo)
			continue;
		n++;
		if (fn(arg, lo, hi))
			return n;
	}
	return -1;
}

/* An address attribute of a DIE of U: an address, or an index into the
 * skeleton's part of .debug_addr. */
static int attr_address(struct dwp_unit *u, Dwarf_Attribute *a, uint64_t *v)
{
	Dwarf_Addr addr;
	Dwarf_Word idx;
	switch (a->form) {
	case DW_FORM_addr:
		if (dwarf_formaddr(a, &addr) != 0)
			return -1;
		*v = addr;
		return 0;
	case DW_FORM_addrx:
	case DW_FORM_addrx1:
	case DW_FORM_addrx2:
	case DW_FORM_addrx3:
	case DW_FORM_addrx4:
	case DW_FORM_GNU_addr_index:
		if (dwarf_formudata(a, &idx) != 0)
			return -1;
		return addr_at(&u->rc, idx, v);
	default: return -1;
	}
}

int dwp_unit_ranges(struct dwp_unit *u, Dwarf_Die *die, dwp_range_fn fn, void *arg)
{
	Dwarf_Attribute a;
	if (dwarf_attr(die, DW_AT_ranges, &a)) {
		uint64_t off;
		if (a.form == DW_FORM_rnglistx) {
			Dwarf_Word idx;
			int64_t o;
			if (dwarf_formudata(&a, &idx) != 0 || (o = dwp_rnglistx(&u->rc, idx)) < 0)
				return -1;
			off = (uint64_t)o;
		} else if (attr_offset(&a, u->offset_size, &off) != 0) {
			return -1;
		}
		return dwp_rangelist(&u->rc, off, fn, arg);
	}
	uint64_t lo, hi;
	if (!dwarf_attr(die, DW_AT_low_pc, &a))
		return 0;
	if (attr_address(u, &a, &lo) != 0 || !dwarf_attr(die, DW_AT_high_pc, &a))
		return -1;
	if (attr_address(u, &a, &hi) != 0) {
		Dwarf_Word len;
		if (dwarf_formudata(&a, &len) != 0)
			return -1;
		hi = lo + len;
	}
	if (hi <= lo)
		return 0;
	fn(arg, lo, hi);
	return 1;
}

struct haspc {
	uint64_t pc;
	int found;
};

static int haspc_cb(void *arg, uint64_t lo, uint64_t hi)
{
	struct haspc *h = arg;
	h->found = h->pc >= lo && h->pc < hi;
	return h->found;
}

int dwp_unit_haspc(struct dwp_unit *u, Dwarf_Die *die, uint64_t pc)
{
	struct haspc h = {.pc = pc};
	dwp_unit_ranges(u, die, haspc_cb, &h);
	return h.found;
}
