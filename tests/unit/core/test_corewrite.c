// SPDX-License-Identifier: MIT
// Unit tests of core-write.c read back by core-elf.c: a snapshot of this
// very process (its own maps, auxiliary vector and dynamic linker's list,
// read as a target's would be) written as a core and parsed again: the
// registers, the copied bytes at their addresses and zeros around them,
// the notes; and a map of 70000 mappings, whose program headers pass
// 65535 (their count then in section 0, PN_XNUM).
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <cmocka.h>

#include "core-write.h"
#include "core.h"
#include "procfs.h"
#include "snapshot.h"

static char dir[64], file[96];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/sd-unit-corewrite-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(file, sizeof(file), "%s/t.core", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(file);
	return rmdir(dir);
}

/* A snapshot of one thread: registers and a copy of LEN bytes at ADDR. */
static struct sd_snapshot *one_thread(uint64_t addr, const uint8_t *bytes, size_t len)
{
	struct sd_snapshot *s = snapshot_new(getpid());
	s->comm = strpool_intern(s->pool, "unit");
	struct sd_thread *t = snapshot_add_thread(s, getpid());
	t->name = strpool_intern(s->pool, "unit-main");
	t->have_regs = 1;
	t->regs.rip = 0x1234;
	t->regs.rsp = addr;
	t->regs.rbp = 0xfeedface;
	t->stack = malloc(len);
	memcpy(t->stack, bytes, len);
	t->stack_base = addr;
	t->stack_len = len;
	return s;
}

static void test_own_process_read_back(void **state)
{
	(void)state;
	struct sd_maps maps = {0};
	struct sd_error err = {0};
	assert_int_equal(procfs_read_maps(getpid(), &maps, &err), 0);
	/* A copy in the middle of a page of our stack. */
	uint8_t here[256];
	for (size_t i = 0; i < sizeof(here); i++)
		here[i] = (uint8_t)(i * 7 + 1);
	uint64_t addr = ((uint64_t)(uintptr_t)here & ~(uint64_t)4095) + 1000;
	struct sd_snapshot *s = one_thread(addr, here, sizeof(here));
	struct core_write_opts o = {.pid = getpid(), .maps = &maps};
	struct core_write_stats st;
	assert_int_equal(core_write(file, s, &o, &st, &err), 0);
	assert_int_equal(st.threads, 1);
	assert_true(st.libraries >= 2); /* the executable's map, libc, ld.so */
	size_t nfiles = 0;
	for (size_t i = 0; i < maps.n; i++)
		nfiles += maps.v[i].path[0] == '/';
	assert_int_equal(st.files, nfiles);

	struct sd_core *c = core_open(file, &err);
	assert_non_null(c);
	assert_int_equal(c->nthreads, 1);
	assert_int_equal(c->threads[0].tid, getpid());
	assert_int_equal(c->threads[0].regs.rbp, 0xfeedface);
	assert_string_equal(c->threads[0].name, "unit-main");
	assert_string_equal(c->comm, "unit");
	assert_int_equal(c->nfiles, nfiles);
	assert_int_equal(core_auxv(c, AT_ENTRY), getauxval(AT_ENTRY));
	assert_int_equal(core_auxv(c, AT_PHDR), getauxval(AT_PHDR));
	/* The copy at its address; the rest of its page reads as zeros. */
	uint8_t back[256];
	assert_int_equal(core_read(c, addr, back, sizeof(back)), sizeof(back));
	assert_memory_equal(back, here, sizeof(here));
	uint8_t below[1000], zero[1000] = {0};
	assert_int_equal(core_read(c, addr - 1000, below, sizeof(below)), sizeof(below));
	assert_memory_equal(below, zero, sizeof(zero));
	/* Every mapping is there, cut where the data is: the stack's mapping
	 * has a piece without bytes below the copy's page. */
	const struct sd_map *m = procfs_maps_find(&maps, addr);
	assert_non_null(m);
	if (m->start < (addr & ~(uint64_t)4095))
		assert_int_equal(core_read(c, m->start, back, 1), 0);
	/* The executable's first page: its build-id is in the core. */
	char id[129];
	uint64_t exe = getauxval(AT_PHDR) & ~(uint64_t)4095;
	while (exe && core_build_id_at(c, exe, id) != 0 && procfs_maps_find(&maps, exe - 1))
		exe -= 4096;
	assert_int_equal(core_build_id_at(c, exe, id), 0);
	assert_true(strlen(id) >= 16);
	core_free(c);
	snapshot_free(s);
	procfs_maps_release(&maps);
}

static void test_70000_mappings_pn_xnum(void **state)
{
	(void)state;
	struct sd_maps maps = {0};
	const size_t n = 70000;
	maps.v = calloc(n, sizeof(*maps.v));
	maps.n = maps.cap = n;
	for (size_t i = 0; i < n; i++) {
		struct sd_map *m = &maps.v[i];
		m->start = 0x100000000ull + i * 0x2000;
		m->end = m->start + 0x1000;
		memcpy(m->perms, i % 2 ? "rw-p" : "r--p", 5);
		m->path = strdup("");
	}
	uint8_t bytes[64];
	memset(bytes, 0xab, sizeof(bytes));
	uint64_t addr = maps.v[n / 2].start + 64;
	struct sd_snapshot *s = one_thread(addr, bytes, sizeof(bytes));
	struct core_write_opts o = {.pid = getpid(), .maps = &maps};
	struct core_write_stats st;
	struct sd_error err = {0};
	assert_int_equal(core_write(file, s, &o, &st, &err), 0);
	assert_int_equal(st.segments, n);
	int fd = open(file, O_RDONLY);
	Elf64_Ehdr eh;
	assert_int_equal(pread(fd, &eh, sizeof(eh), 0), sizeof(eh));
	close(fd);
	assert_int_equal(eh.e_phnum, PN_XNUM);
	struct sd_core *c = core_open(file, &err);
	assert_non_null(c);
	assert_int_equal(c->nsegs, n);
	uint8_t back[64];
	assert_int_equal(core_read(c, addr, back, sizeof(back)), sizeof(back));
	assert_memory_equal(back, bytes, sizeof(bytes));
	assert_int_equal(core_read(c, maps.v[0].start, back, 1), 0);
	core_free(c);
	snapshot_free(s);
	procfs_maps_release(&maps);
}

static void test_no_registers_refused(void **state)
{
	(void)state;
	struct sd_snapshot *s = snapshot_new(getpid());
	snapshot_add_thread(s, getpid());
	struct sd_maps maps = {0};
	struct core_write_opts o = {.pid = getpid(), .maps = &maps};
	struct sd_error err = {0};
	assert_int_equal(core_write(file, s, &o, NULL, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "no registers"));
	assert_int_equal(access(file, F_OK), -1);
	snapshot_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_own_process_read_back, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_70000_mappings_pn_xnum, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_no_registers_refused, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
