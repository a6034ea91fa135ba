// SPDX-License-Identifier: MIT
// Unit tests of debugimage.c on the debug file of the libc these tests
// run on (Debian's libc6-dbg, whose sections are compressed): the image
// holds every section as libelf's own inflation gives it, but the
// location lists; libdw reads it; a file of another build, one with
// nothing compressed and a damaged one are refused without harm.
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "debugimage.h"

#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"

static unsigned char libc_id[64];
static size_t libc_id_len;
static char libc_debug[256];

/* The debug file of the libc these tests run on, found by its build-id. */
static int find_libc_debug(void **state)
{
	(void)state;
	elf_version(EV_CURRENT);
	int fd = open(LIBC, O_RDONLY);
	if (fd < 0)
		return -1;
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	const void *id = NULL;
	ssize_t n = elf ? dwelf_elf_gnu_build_id(elf, &id) : -1;
	if (n > 0 && (size_t)n <= sizeof(libc_id)) {
		memcpy(libc_id, id, (size_t)n);
		libc_id_len = (size_t)n;
	}
	elf_end(elf);
	close(fd);
	if (!libc_id_len)
		return -1;
	int at =
	    snprintf(libc_debug, sizeof(libc_debug), "/usr/lib/debug/.build-id/%02x/", libc_id[0]);
	for (size_t i = 1; i < libc_id_len; i++)
		at +=
		    snprintf(libc_debug + at, sizeof(libc_debug) - (size_t)at, "%02x", libc_id[i]);
	snprintf(libc_debug + at, sizeof(libc_debug) - (size_t)at, ".debug");
	if (access(libc_debug, R_OK) != 0) {
		fprintf(stderr, "%s missing: apt-get install libc6-dbg\n", libc_debug);
		return -1;
	}
	return 0;
}

static Elf_Scn *section_named(Elf *elf, const char *want)
{
	size_t shstrndx;
	assert_int_equal(elf_getshdrstrndx(elf, &shstrndx), 0);
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		assert_non_null(gelf_getshdr(scn, &sh));
		const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && !strcmp(name, want))
			return scn;
	}
	return NULL;
}

static int count_units(Elf *elf)
{
	Dwarf *dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	assert_non_null(dw);
	int n = 0;
	Dwarf_Off off = 0, next;
	size_t hsize;
	while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		n++;
		off = next;
	}
	dwarf_end(dw);
	return n;
}

static void test_image_is_libelfs_inflation(void **state)
{
	(void)state;
	int fd = open(libc_debug, O_RDONLY);
	assert_true(fd >= 0);
	int img = debugimage_make(fd, libc_id, libc_id_len);
	assert_true(img >= 0);
	/* The reference: libelf inflating the file's sections itself. */
	Elf *ref = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	Elf *got = elf_begin(img, ELF_C_READ_MMAP, NULL);
	assert_non_null(ref);
	assert_non_null(got);
	size_t nref, ngot, shstrndx;
	assert_int_equal(elf_getshdrnum(ref, &nref), 0);
	assert_int_equal(elf_getshdrnum(got, &ngot), 0);
	assert_int_equal(nref, ngot);
	assert_int_equal(elf_getshdrstrndx(ref, &shstrndx), 0);
	int inflated = 0, left = 0;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(ref, scn))) {
		GElf_Shdr rs, gs;
		assert_non_null(gelf_getshdr(scn, &rs));
		const char *name = elf_strptr(ref, shstrndx, rs.sh_name);
		assert_non_null(name);
		Elf_Scn *gscn = elf_getscn(got, elf_ndxscn(scn));
		assert_non_null(gelf_getshdr(gscn, &gs));
		assert_int_equal(gs.sh_name, rs.sh_name);
		assert_int_equal(gs.sh_addr, rs.sh_addr);
		assert_int_equal(gs.sh_flags & SHF_COMPRESSED, 0);
		if (!strcmp(name, ".debug_loclists") || !strcmp(name, ".debug_loc")) {
			assert_int_equal(gs.sh_type, SHT_NOBITS);
			left++;
			continue;
		}
		assert_int_equal(gs.sh_type, rs.sh_type);
		if (rs.sh_type == SHT_NOBITS)
			continue;
		if (rs.sh_flags & SHF_COMPRESSED) {
			assert_int_equal(elf_compress(scn, 0, 0), 1);
			inflated++;
		}
		Elf_Data *r = elf_rawdata(scn, NULL), *g = elf_rawdata(gscn, NULL);
		assert_non_null(r);
		assert_non_null(g);
		assert_int_equal(g->d_size, r->d_size);
		if (r->d_size && memcmp(g->d_buf, r->d_buf, r->d_size)) {
			fprintf(stderr, "section %s differs\n", name);
			fail();
		}
	}
	/* Debian's libc6-dbg: .debug_info, _line, _abbrev, _str ... */
	assert_true(inflated >= 4);
	assert_int_equal(left, 1);
	/* The program headers point where they did: the notes they name
	 * give the build-id. */
	const void *bid = NULL;
	assert_int_equal(dwelf_elf_gnu_build_id(got, &bid), (ssize_t)libc_id_len);
	assert_memory_equal(bid, libc_id, libc_id_len);
	size_t nph, nph_ref;
	assert_int_equal(elf_getphdrnum(got, &nph), 0);
	assert_int_equal(elf_getphdrnum(ref, &nph_ref), 0);
	assert_int_equal(nph, nph_ref);
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr a, b;
		assert_non_null(gelf_getphdr(got, (int)i, &a));
		assert_non_null(gelf_getphdr(ref, (int)i, &b));
		assert_memory_equal(&a, &b, sizeof(a));
		if (a.p_type == PT_NOTE) {
			size_t n1, n2;
			const char *f1 = elf_rawfile(got, &n1), *f2 = elf_rawfile(ref, &n2);
			assert_true(a.p_offset + a.p_filesz <= n1 && b.p_offset + b.p_filesz <= n2);
			assert_memory_equal(f1 + a.p_offset, f2 + b.p_offset, a.p_filesz);
		}
	}
	/* libdw reads the image's units as the file's. */
	assert_int_equal(count_units(got), count_units(ref));
	assert_non_null(section_named(got, ".debug_info"));
	elf_end(got);
	elf_end(ref);
	/* The descriptor's offset is the caller's. */
	assert_int_equal(lseek(fd, 0, SEEK_CUR), 0);
	close(img);
	close(fd);
}

static void test_other_build_refused(void **state)
{
	(void)state;
	int fd = open(libc_debug, O_RDONLY);
	assert_true(fd >= 0);
	unsigned char other[64];
	memcpy(other, libc_id, libc_id_len);
	other[libc_id_len - 1] ^= 1;
	assert_int_equal(debugimage_make(fd, other, libc_id_len), DEBUGIMAGE_OTHER);
	assert_int_equal(debugimage_make(fd, libc_id, libc_id_len - 1), DEBUGIMAGE_OTHER);
	close(fd);
}

static void test_nothing_to_inflate(void **state)
{
	(void)state;
	/* This test's own executable: no compressed section. */
	int fd = open("/proc/self/exe", O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(debugimage_make(fd, NULL, 0), DEBUGIMAGE_NONE);
	close(fd);
	/* Not an ELF file at all. */
	fd = open("/proc/self/status", O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(debugimage_make(fd, NULL, 0), DEBUGIMAGE_NONE);
	close(fd);
}

/* A copy of libc's debug file in a memory file, changed by DAMAGE. */
static int damaged_copy(void (*damage)(char *map, size_t size, Elf *elf), size_t *size_out)
{
	int fd = open(libc_debug, O_RDONLY);
	assert_true(fd >= 0);
	off_t size = lseek(fd, 0, SEEK_END);
	assert_true(size > 0);
	int m = memfd_create("test-debugimage", MFD_CLOEXEC);
	assert_true(m >= 0);
	assert_int_equal(ftruncate(m, size), 0);
	char *map = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, m, 0);
	assert_true(map != MAP_FAILED);
	assert_int_equal(pread(fd, map, (size_t)size, 0), size);
	Elf *elf = elf_memory(map, (size_t)size);
	assert_non_null(elf);
	damage(map, (size_t)size, elf);
	elf_end(elf);
	munmap(map, (size_t)size);
	close(fd);
	*size_out = (size_t)size;
	return m;
}

/* The middle of .debug_info's deflate stream overwritten. */
static void scramble_info(char *map, size_t size, Elf *elf)
{
	GElf_Shdr sh;
	assert_non_null(gelf_getshdr(section_named(elf, ".debug_info"), &sh));
	assert_true(sh.sh_flags & SHF_COMPRESSED);
	assert_true(sh.sh_offset + sh.sh_size <= size);
	memset(map + sh.sh_offset + sh.sh_size / 2, 0x55, 4096);
}

/* .debug_info said to be larger than the file. */
static void overlong_info(char *map, size_t size, Elf *elf)
{
	(void)map;
	Elf_Scn *scn = section_named(elf, ".debug_info");
	assert_non_null(scn);
	/* The header as it is in the file: elf_memory maps MAP in place. */
	Elf64_Ehdr *eh = elf64_getehdr(elf);
	Elf64_Shdr *in_file = (Elf64_Shdr *)(map + eh->e_shoff) + elf_ndxscn(scn);
	in_file->sh_size = size;
}

static void test_damaged_file_refused(void **state)
{
	(void)state;
	void (*damages[])(char *, size_t, Elf *) = {scramble_info, overlong_info};
	for (size_t i = 0; i < sizeof(damages) / sizeof(damages[0]); i++) {
		size_t size;
		int m = damaged_copy(damages[i], &size);
		assert_int_equal(debugimage_make(m, NULL, 0), DEBUGIMAGE_NONE);
		close(m);
	}
}

/* The caps: under a total cap smaller than the file's sections, or a
 * ratio of 1, sections are left out (no bits) with a note naming one, the
 * image is still made (so libelf never inflates the claims itself), and
 * libdw opens it. Under the defaults nothing is refused. */
static void test_caps_refuse_claims(void **state)
{
	(void)state;
	int fd = open(libc_debug, O_RDONLY);
	assert_true(fd >= 0);
	struct debugimage_caps caps[] = {{.max_total = 4096, .max_ratio = 0},
					 {.max_total = (uint64_t)1 << 40, .max_ratio = 1}};
	for (size_t c = 0; c < 2; c++) {
		char note[256] = "x";
		int img = debugimage_make_capped(fd, libc_id, libc_id_len, &caps[c], note,
						 sizeof(note));
		assert_true(img >= 0);
		assert_non_null(strstr(note, "past the cap"));
		struct stat st;
		assert_int_equal(fstat(img, &st), 0);
		assert_true(st.st_size < 64 << 20);
		Elf *got = elf_begin(img, ELF_C_READ_MMAP, NULL);
		assert_non_null(got);
		size_t shstrndx;
		assert_int_equal(elf_getshdrstrndx(got, &shstrndx), 0);
		Elf_Scn *scn = NULL;
		int nobits = 0;
		while ((scn = elf_nextscn(got, scn))) {
			GElf_Shdr sh;
			assert_non_null(gelf_getshdr(scn, &sh));
			assert_int_equal(sh.sh_flags & SHF_COMPRESSED, 0);
			const char *name = elf_strptr(got, shstrndx, sh.sh_name);
			if (name && !strcmp(name, ".debug_info") && sh.sh_type == SHT_NOBITS)
				nobits++;
		}
		assert_int_equal(nobits, 1);
		elf_end(got);
		close(img);
	}
	struct debugimage_caps def;
	debugimage_caps_default(&def);
	assert_true(def.max_total >= (uint64_t)1 << 30);
	char note[256] = "x";
	int img = debugimage_make_capped(fd, libc_id, libc_id_len, &def, note, sizeof(note));
	assert_true(img >= 0);
	assert_string_equal(note, "");
	close(img);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_image_is_libelfs_inflation),
	    cmocka_unit_test(test_other_build_refused),
	    cmocka_unit_test(test_nothing_to_inflate),
	    cmocka_unit_test(test_damaged_file_refused),
	    cmocka_unit_test(test_caps_refuse_claims),
	};
	return cmocka_run_group_tests(tests, find_libc_debug, NULL);
}
