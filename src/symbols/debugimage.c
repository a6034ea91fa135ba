// SPDX-License-Identifier: MIT
// The inflated image of a debug file in a memory file (debugimage.h): the
// file as it is up to its first compressed section, then the sections from
// there laid out again one after another, compressed ones inflated by
// libdeflate straight into the mapping, the section headers rewritten to
// match and put last.
#include "debugimage.h"

#include <elf.h>
#include <errno.h>
#include <gelf.h>
#include <libdeflate.h>
#include <libelf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return a > 1 ? (v + a - 1) / a * a : v;
}

/* Whether ELF's build-id note is ID (LEN bytes). */
static int has_build_id(Elf *elf, const unsigned char *id, size_t len)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		GElf_Nhdr nh;
		size_t off = 0, name_off, desc_off;
		while (d && (off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0)
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((char *)d->d_buf + name_off, "GNU", 4))
				return nh.n_descsz == len &&
				       !memcmp((char *)d->d_buf + desc_off, id, len);
	}
	return 0;
}

/* The location lists: only a debugger printing variables reads them. */
static int left_out(const char *name)
{
	return !strcmp(name, ".debug_loc") || !strcmp(name, ".debug_loclists");
}

/* Whether section S (its header in the file) lies within the file's
 * first PREFIX bytes, kept as they are: not compressed, and ending there. */
static int in_prefix(const Elf64_Shdr *s, uint64_t prefix)
{
	return !(s->sh_flags & SHF_COMPRESSED) && s->sh_offset + s->sh_size <= prefix;
}

/* Lay the sections of ELF (FILE, SIZE bytes) out again into SH (its
 * section headers, rewritten in place). The file up to its first
 * compressed section stays as it is, byte for byte (*PREFIX bytes: the
 * headers, notes and whatever the program headers point at); the sections
 * after it follow one another. Returns the end of the last section's data,
 * or 0 when the file cannot be imaged or has nothing compressed. */
static uint64_t plan(Elf *elf, const char *file, size_t size, Elf64_Shdr *sh, size_t shnum,
		     size_t shstrndx, uint64_t *prefix, const struct debugimage_caps *caps,
		     char *note, size_t notesize)
{
	uint64_t total = 0;
	int refused = 0;
	uint64_t first = size;
	for (size_t i = 1; i < shnum; i++)
		if ((sh[i].sh_flags & SHF_COMPRESSED) && sh[i].sh_type != SHT_NOBITS &&
		    sh[i].sh_offset < first)
			first = sh[i].sh_offset;
	if (first == size)
		return 0;
	uint64_t at = *prefix = first;
	int inflated = 0;
	for (size_t i = 1; i < shnum; i++) {
		Elf64_Shdr *s = &sh[i];
		const char *name = elf_strptr(elf, shstrndx, s->sh_name);
		if (!name || !strncmp(name, ".zdebug", 7))
			return 0; /* the old GNU format: left to libelf */
		if (s->sh_type == SHT_NOBITS)
			continue;
		if (s->sh_offset > size || s->sh_size > size - s->sh_offset)
			return 0;
		if (in_prefix(s, first))
			continue; /* where it was */
		uint64_t align = s->sh_addralign;
		if (s->sh_flags & SHF_COMPRESSED) {
			Elf64_Chdr ch;
			if (s->sh_size < sizeof(ch))
				return 0;
			memcpy(&ch, file + s->sh_offset, sizeof(ch));
			if (ch.ch_type != ELFCOMPRESS_ZLIB)
				return 0;
			s->sh_flags &= ~(uint64_t)SHF_COMPRESSED;
			if (left_out(name)) {
				s->sh_type = SHT_NOBITS;
				s->sh_size = 0;
				continue;
			}
			/* The size a section claims is the file's word: a
			 * claim past the caps is refused, not allocated. */
			uint64_t packed = s->sh_size - sizeof(ch);
			if (ch.ch_size > caps->max_total - total ||
			    (caps->max_ratio && ch.ch_size / caps->max_ratio > packed)) {
				if (note && !refused)
					snprintf(note, notesize,
						 "%s claims %llu bytes inflated from %llu: past the "
						 "cap (%llu bytes in all, %llu times the compressed "
						 "size); left out",
						 name, (unsigned long long)ch.ch_size,
						 (unsigned long long)packed,
						 (unsigned long long)caps->max_total,
						 (unsigned long long)caps->max_ratio);
				refused = 1;
				s->sh_type = SHT_NOBITS;
				s->sh_size = 0;
				continue;
			}
			total += ch.ch_size;
			inflated = 1;
			align = ch.ch_addralign;
			s->sh_size = ch.ch_size;
			s->sh_addralign = ch.ch_addralign;
		}
		at = align_up(at, align);
		s->sh_offset = at;
		at += s->sh_size;
	}
	return inflated || refused ? at : 0;
}

/* Fill the image MAP: FILE's first PREFIX bytes as they are (the ELF
 * header pointing at the new section headers SH, at SHOFF), then each
 * section laid out anew, from FILE, whose section headers are OLD. */
static int fill(char *map, const char *file, uint64_t prefix, const Elf64_Shdr *old,
		const Elf64_Shdr *sh, size_t shnum, uint64_t shoff)
{
	memcpy(map, file, prefix);
	Elf64_Ehdr h;
	memcpy(&h, map, sizeof(h));
	h.e_shoff = shoff;
	memcpy(map, &h, sizeof(h));
	struct libdeflate_decompressor *z = NULL;
	int r = 0;
	for (size_t i = 1; r == 0 && i < shnum; i++) {
		if (sh[i].sh_type == SHT_NOBITS || in_prefix(&old[i], prefix))
			continue; /* nothing in the file, or copied with the prefix */
		const char *src = file + old[i].sh_offset;
		if (!(old[i].sh_flags & SHF_COMPRESSED)) {
			memcpy(map + sh[i].sh_offset, src, sh[i].sh_size);
			continue;
		}
		if (!z && !(z = libdeflate_alloc_decompressor())) {
			r = -1;
			break;
		}
		size_t got = 0;
		if (libdeflate_zlib_decompress(
			z, src + sizeof(Elf64_Chdr), old[i].sh_size - sizeof(Elf64_Chdr),
			map + sh[i].sh_offset, sh[i].sh_size, &got) != LIBDEFLATE_SUCCESS ||
		    got != sh[i].sh_size)
			r = -1;
	}
	if (z)
		libdeflate_free_decompressor(z);
	memcpy(map + shoff, sh, shnum * sizeof(*sh));
	return r;
}

void debugimage_caps_default(struct debugimage_caps *c)
{
	c->max_total = DEBUGIMAGE_MAX_TOTAL;
	c->max_ratio = DEBUGIMAGE_MAX_RATIO;
	uint64_t v;
	const char *e = getenv("STACKDUMP_MAX_INFLATE");
	if (e && sd_parse_size(e, &v) == 0 && v > 0)
		c->max_total = v;
	e = getenv("STACKDUMP_MAX_INFLATE_RATIO");
	char *end;
	if (e && *e && (v = strtoull(e, &end, 10)) > 0 && !*end)
		c->max_ratio = v;
}

int debugimage_make(int fd, const unsigned char *id, size_t len)
{
	struct debugimage_caps c;
	debugimage_caps_default(&c);
	return debugimage_make_capped(fd, id, len, &c, NULL, 0);
}

int debugimage_make_capped(int fd, const unsigned char *id, size_t len,
			   const struct debugimage_caps *caps, char *note, size_t notesize)
{
	if (note && notesize)
		note[0] = '\0';
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return DEBUGIMAGE_NONE;
	int r = DEBUGIMAGE_NONE, mfd = -1;
	Elf64_Shdr *old = NULL, *sh = NULL;
	size_t size, shnum, shstrndx;
	const char *file = elf_rawfile(elf, &size);
	const Elf64_Ehdr *eh = elf64_getehdr(elf);
	if (id && !has_build_id(elf, id, len)) {
		r = DEBUGIMAGE_OTHER;
		goto out;
	}
	/* The layout written here is the host's own: 64-bit, its byte order. */
	const unsigned char host_data =
	    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;
	if (!file || !eh || eh->e_ident[EI_DATA] != host_data ||
	    eh->e_shentsize != sizeof(Elf64_Shdr) || elf_getshdrnum(elf, &shnum) < 0 || shnum < 2 ||
	    elf_getshdrstrndx(elf, &shstrndx) < 0)
		goto out;
	old = sd_xcalloc(shnum, sizeof(*old));
	for (size_t i = 0; i < shnum; i++) {
		Elf64_Shdr *s = elf64_getshdr(elf_getscn(elf, i));
		if (!s)
			goto out;
		old[i] = *s;
	}
	sh = sd_xcalloc(shnum, sizeof(*sh));
	memcpy(sh, old, shnum * sizeof(*sh));
	uint64_t prefix = 0;
	uint64_t end = plan(elf, file, size, sh, shnum, shstrndx, &prefix, caps, note, notesize);
	/* The program headers, where there are any, are in the prefix. */
	if (!end || prefix < sizeof(*eh) ||
	    (eh->e_phnum && (eh->e_phoff > prefix ||
			     (uint64_t)eh->e_phnum * eh->e_phentsize > prefix - eh->e_phoff)))
		goto out;
	uint64_t shoff = align_up(end, 8), total = shoff + shnum * sizeof(*sh);
	mfd = memfd_create("stackdump-debug", MFD_CLOEXEC);
	if (mfd < 0 || ftruncate(mfd, (off_t)total) < 0)
		goto out;
	char *map = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	if (map == MAP_FAILED)
		goto out;
	/* Allocating the pages in one call, not a fault each: cheaper. */
	madvise(map, total, MADV_POPULATE_WRITE);
	int ok = fill(map, file, prefix, old, sh, shnum, shoff) == 0;
	munmap(map, total);
	if (ok) {
		r = mfd;
		mfd = -1;
	}
out:
	if (mfd >= 0)
		close(mfd);
	free(old);
	free(sh);
	elf_end(elf);
	return r;
}
