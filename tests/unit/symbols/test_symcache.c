// SPDX-License-Identifier: MIT
// Unit tests of symcache.c on real binaries: the libc these tests run on
// (with its separate debug file's .symtab, libc6-dbg), libstdc++ and this
// test program. At the start, middle, last byte and end of the symbols
// (every third of a large table), and at a sweep of every writable section, the index names what libdwfl's own
// dwfl_module_addrinfo names (symbol, offset, type), or says it cannot
// decide; it must decide almost always, or it would not save the scans.
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "symcache.h"

/* Objects of our own, global and static, for the sweep of this program. */
int sc_global_array[64];
static long sc_static_words[32];
long *sc_keep = sc_static_words;

static char *debuginfo_path;
static const Dwfl_Callbacks offline = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &debuginfo_path,
};

struct tally {
	unsigned long probes, found, none, ask, wrong;
	unsigned long inside, inside_ask; /* probes inside a sized object */
};

/* ADDR through the index and through libdwfl. INSIDE: ADDR lies in a
 * sized data object, where locks are: the index must decide there. */
static void probe(Dwfl_Module *dm, struct sd_datasyms *d, uint64_t addr, int inside,
		  struct tally *t)
{
	GElf_Off o = 0;
	GElf_Sym sym;
	const char *want = dwfl_module_addrinfo(dm, addr, &o, &sym, NULL, NULL, NULL);
	const char *name = NULL;
	uint64_t off = 0;
	int type = -1;
	int r = datasyms_lookup(d, addr, &name, &off, &type);
	t->probes++;
	t->inside += inside;
	if (r == DATASYMS_ASK) {
		t->ask++;
		t->inside_ask += inside;
		if (inside && t->inside_ask < 5)
			print_message("  0x%llx undecided, libdwfl %s+0x%llx\n",
				      (unsigned long long)addr, want ? want : "(none)",
				      (unsigned long long)o);
		return;
	}
	int same = r == DATASYMS_FOUND ? want && strcmp(want, name) == 0 && off == o &&
					     type == GELF_ST_TYPE(sym.st_info)
				       : !want;
	if (!same && t->wrong++ < 10)
		print_message("  0x%llx: index %s+0x%llx (type %d), libdwfl %s+0x%llx\n",
			      (unsigned long long)addr, name ? name : "(none)",
			      (unsigned long long)off, type, want ? want : "(none)",
			      (unsigned long long)o);
	if (r == DATASYMS_FOUND)
		t->found++;
	else
		t->none++;
}

/* Compare the index with libdwfl over FILE; the counts in *T. */
static void compare_file(const char *file, struct tally *t)
{
	Dwfl *dwfl = dwfl_begin(&offline);
	assert_non_null(dwfl);
	dwfl_report_begin(dwfl);
	Dwfl_Module *dm = dwfl_report_offline(dwfl, file, file, -1);
	dwfl_report_end(dwfl, NULL, NULL);
	assert_non_null(dm);
	struct sd_datasyms *d = datasyms_new(dm);
	int n = dwfl_module_getsymtab(dm);
	assert_true(n > 0);
	Dwarf_Addr lo = 0, hi = 0;
	dwfl_module_info(dm, NULL, &lo, &hi, NULL, NULL, NULL, NULL);
	assert_true(datasyms_count(d) > 0);
	/* Of a large table every third symbol, and every 16th byte: each
	 * probe is a scan of the whole table by libdwfl (the point of the
	 * index). */
	int stride = n > 5000 ? 3 : 1;
	for (int i = 1; i < n; i += stride) {
		GElf_Sym sym;
		GElf_Addr a;
		const char *name = dwfl_module_getsym_info(dm, i, &sym, &a, NULL, NULL, NULL);
		/* Absolute symbols (version names at 0), thread-local ones
		 * (offsets in the TLS block) and those of sections never
		 * loaded (.gnu.warning) are no addresses. */
		if (!name || sym.st_shndx == SHN_UNDEF || sym.st_shndx == SHN_ABS ||
		    GELF_ST_TYPE(sym.st_info) == STT_TLS || a < lo || a >= hi)
			continue;
		int object = sym.st_size && GELF_ST_TYPE(sym.st_info) == STT_OBJECT;
		probe(dm, d, a, object, t);
		if (a)
			probe(dm, d, a - 1, 0, t);
		if (sym.st_size) {
			probe(dm, d, a + sym.st_size / 2, object, t);
			probe(dm, d, a + sym.st_size - 1, object, t);
			probe(dm, d, a + sym.st_size, 0, t);
		}
	}
	/* The writable sections (where locks live). */
	Dwarf_Addr bias = 0;
	Elf *elf = dwfl_module_getelf(dm, &bias);
	Elf_Scn *scn = NULL;
	while (elf && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_WRITE) || !(sh.sh_flags & SHF_ALLOC))
			continue;
		uint64_t step = sh.sh_size > 800000 ? sh.sh_size / 50000 : 16;
		for (uint64_t a = sh.sh_addr; a < sh.sh_addr + sh.sh_size; a += step)
			probe(dm, d, a + bias, 0, t);
	}
	datasyms_free(d);
	dwfl_end(dwfl);
	print_message("%s: %lu probes (%lu inside objects), %lu found, %lu none, %lu undecided "
		      "(%lu inside objects), %lu different\n",
		      file, t->probes, t->inside, t->found, t->none, t->ask, t->inside_ask, t->wrong);
}

/* FILE's objects must number at least MIN_OBJECTS (this test program
 * has few). */
static void check(const char *file, unsigned long min_objects)
{
	struct tally t = {0};
	compare_file(file, &t);
	assert_int_equal(t.wrong, 0);
	/* Undecided probes cost a libdw scan each (once per address: the
	 * caller caches). Inside an object, where a lock word is, the index
	 * decides but where a global label sits at the very address (crt's
	 * __TMC_END__ over a static: libdwfl names the label); past a label
	 * (_GLOBAL_OFFSET_TABLE_, __bss_start) it may not, and libdwfl's
	 * answer is taken. */
	assert_true(t.inside >= min_objects);
	assert_true(t.inside_ask <= 3 || t.inside_ask * 1000 <= t.inside);
}

static void test_libc(void **state)
{
	(void)state;
	check("/lib/x86_64-linux-gnu/libc.so.6", 1000);
}

static void test_libstdcxx(void **state)
{
	(void)state;
	check("/usr/lib/x86_64-linux-gnu/libstdc++.so.6", 1000);
}

static void test_self(void **state)
{
	(void)state;
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	assert_true(n > 0);
	self[n] = '\0';
	check(self, 20);
	/* Our own objects by name, through the index alone. */
	Dwfl *dwfl = dwfl_begin(&offline);
	dwfl_report_begin(dwfl);
	Dwfl_Module *dm = dwfl_report_offline(dwfl, self, self, -1);
	dwfl_report_end(dwfl, NULL, NULL);
	struct sd_datasyms *d = datasyms_new(dm);
	int nsym = dwfl_module_getsymtab(dm);
	uint64_t garr = 0, words = 0;
	for (int i = 1; i < nsym; i++) {
		GElf_Sym sym;
		GElf_Addr a;
		const char *name = dwfl_module_getsym_info(dm, i, &sym, &a, NULL, NULL, NULL);
		if (name && !strcmp(name, "sc_global_array"))
			garr = a;
		if (name && !strcmp(name, "sc_static_words"))
			words = a;
	}
	assert_true(garr && words);
	const char *name = NULL;
	uint64_t off = 0;
	int type = 0;
	assert_int_equal(datasyms_lookup(d, garr + 40, &name, &off, &type), DATASYMS_FOUND);
	assert_string_equal(name, "sc_global_array");
	assert_int_equal(off, 40);
	assert_int_equal(type, STT_OBJECT);
	assert_int_equal(datasyms_lookup(d, words + 8 * 31, &name, &off, &type), DATASYMS_FOUND);
	assert_string_equal(name, "sc_static_words");
	assert_int_equal(off, 8 * 31);
	datasyms_free(d);
	dwfl_end(dwfl);
	datasyms_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_libc),
	    cmocka_unit_test(test_libstdcxx),
	    cmocka_unit_test(test_self),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
