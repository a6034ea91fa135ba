// SPDX-License-Identifier: MIT
// Unit tests of the typed reader (runtimes/dwtype.c, runtimes/rtmem.c):
// globals, thread-local variables, struct members, arrays, enumerators of
// this test's own binary (its DWARF against what the compiler laid out),
// read back from its own memory; Go's runtime types in fx-go's DWARF; and
// a Go string read from a live fx-go.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <asm/prctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dwtype.h"
#include "procfs.h"
#include "rtmem.h"
#include "util.h"

/* The objects the tests find by name (not static: kept by the linker). */
struct fx_inner {
	char tag;
	long value;
};
struct fx_outer {
	int first;
	struct fx_inner inner;
	union {
		short anon_a;
		int anon_b;
	};
	unsigned long words[5];
	const char *label;
};
enum fx_colour { FX_RED = 3, FX_GREEN = 11 };
struct fx_outer fx_global = {
	.first = 17, .inner = {'x', -5}, .anon_b = 99, .words = {1, 2, 3, 4, 5}, .label = "hello"};
__thread long fx_tls = 4242;
enum fx_colour fx_colour_var = FX_GREEN;

static struct dwt *self_dwt(void)
{
	struct sd_error err = {0};
	struct dwt *d = dwt_open("/proc/self/exe", &err);
	if (!d)
		fail_msg("%s", err.msg);
	return d;
}

static int first_bias(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	*(uint64_t *)arg = info->dlpi_addr;
	return 1; /* the first one is the executable */
}

static uint64_t self_bias(void)
{
	uint64_t b = 0;
	dl_iterate_phdr(first_bias, &b);
	return b;
}

static void test_struct_members(void **state)
{
	(void)state;
	struct dwt *d = self_dwt();
	struct sd_error err = {0};
	struct dwt_type t, ft;
	assert_int_equal(dwt_type(d, "struct fx_outer", &t, &err), 0);
	assert_int_equal(t.kind, DWT_STRUCT);
	assert_int_equal(t.size, sizeof(struct fx_outer));
	uint64_t off;
	assert_int_equal(dwt_member(d, &t, "first", &off, &ft, &err), 0);
	assert_int_equal(off, offsetof(struct fx_outer, first));
	assert_int_equal(ft.size, sizeof(int));
	assert_int_equal(dwt_member(d, &t, "inner.value", &off, &ft, &err), 0);
	assert_int_equal(off, offsetof(struct fx_outer, inner.value));
	assert_int_equal(ft.kind, DWT_BASE);
	/* A member of an anonymous union is found through it. */
	assert_int_equal(dwt_member(d, &t, "anon_b", &off, &ft, &err), 0);
	assert_int_equal(off, offsetof(struct fx_outer, anon_b));
	assert_int_equal(dwt_member(d, &t, "words", &off, &ft, &err), 0);
	assert_int_equal(off, offsetof(struct fx_outer, words));
	struct dwt_type elem;
	uint64_t count;
	assert_int_equal(dwt_array(d, &ft, &elem, &count, &err), 0);
	assert_int_equal(count, 5);
	assert_int_equal(elem.size, sizeof(unsigned long));
	assert_int_equal(dwt_member(d, &t, "label", &off, &ft, &err), 0);
	assert_int_equal(ft.kind, DWT_POINTER);
	assert_int_equal(ft.size, 8);
	dwt_free(d);
}

static void test_missing_names_are_named(void **state)
{
	(void)state;
	struct dwt *d = self_dwt();
	struct sd_error err = {0};
	struct dwt_type t;
	uint64_t off;
	assert_int_equal(dwt_type(d, "struct fx_outer", &t, &err), 0);
	assert_true(dwt_member(d, &t, "inner.nosuch", &off, NULL, &err) < 0);
	assert_non_null(strstr(err.msg, "nosuch"));
	assert_non_null(strstr(err.msg, "fx_inner"));
	assert_true(dwt_member(d, &t, "first.deeper", &off, NULL, &err) < 0);
	assert_non_null(strstr(err.msg, "not a struct"));
	assert_int_equal(dwt_type(d, "struct fx_none", &t, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "fx_none"));
	uint64_t va;
	assert_int_equal(dwt_global(d, "fx_no_global", &va, NULL, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "fx_no_global"));
	assert_false(dwt_has_member(d, &t, "nosuch"));
	dwt_free(d);
}

static void test_global_read_back(void **state)
{
	(void)state;
	struct dwt *d = self_dwt();
	struct sd_error err = {0};
	struct dwt_type t;
	uint64_t va;
	assert_int_equal(dwt_global(d, "fx_global", &va, &t, &err), 0);
	uint64_t addr = va + self_bias();
	assert_ptr_equal((void *)(uintptr_t)addr, &fx_global);
	/* Through the live reader of our own process, checked by the maps. */
	struct sd_maps maps = {0};
	assert_int_equal(procfs_read_maps(getpid(), &maps, &err), 0);
	struct rtmem m;
	rtmem_pid_init(&m, getpid(), &maps);
	uint64_t v;
	assert_int_equal(rtmem_field(&m, d, addr, &t, "first", &v, &err), 0);
	assert_int_equal(v, 17);
	assert_int_equal(rtmem_field(&m, d, addr, &t, "inner.value", &v, &err), 0);
	assert_int_equal((long)v, -5);
	assert_int_equal(rtmem_field(&m, d, addr, &t, "anon_b", &v, &err), 0);
	assert_int_equal(v, 99);
	assert_int_equal(rtmem_field(&m, d, addr, &t, "label", &v, &err), 0);
	assert_int_equal(v, (uintptr_t)fx_global.label);
	/* A struct is not an integer. */
	assert_true(rtmem_field(&m, d, addr, &t, "inner", &v, &err) < 0);
	/* From a copy: the same values, and nothing past the copy. */
	struct fx_outer copy = fx_global;
	assert_int_equal(rtmem_field_in(d, &copy, sizeof(copy), &t, "words", &v, &err), -EINVAL);
	assert_int_equal(rtmem_field_in(d, &copy, sizeof(copy), &t, "first", &v, &err), 0);
	assert_int_equal(v, 17);
	assert_true(rtmem_field_in(d, &copy, 4, &t, "label", &v, &err) < 0);
	struct rtmem cm;
	rtmem_buf_init(&cm, addr, &copy, sizeof(copy));
	assert_int_equal(rtmem_field(&cm, d, addr, &t, "inner.tag", &v, &err), 0);
	assert_int_equal(v, 'x');
	assert_true(rtmem_uint(&cm, addr + sizeof(copy) - 4, 8, &v, "past", &err) < 0);
	/* An address no mapping holds is refused before any read. */
	uint64_t before = m.reads;
	assert_int_equal(rtmem_uint(&m, 0x10, 8, &v, "the word", &err), -EFAULT);
	assert_non_null(strstr(err.msg, "the word"));
	assert_int_equal(m.reads, before);
	/* Memory mapped after the maps were read (a runtime's heap that
	 * grew): read, the maps read again; unmapped again: refused. */
	uint64_t *fresh = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(fresh != MAP_FAILED);
	fresh[3] = 4242;
	assert_false(rtmem_mapped(&m, (uintptr_t)&fresh[3], 8));
	unsigned rereads = m.rereads;
	assert_int_equal(rtmem_uint(&m, (uintptr_t)&fresh[3], 8, &v, "the new word", &err), 0);
	assert_int_equal(v, 4242);
	assert_int_equal(m.rereads, rereads + 1);
	/* The maps read again are kept: the next read of it reads them no more
	 * (a batch of descriptors in a new arena must not use up the re-reads). */
	assert_int_equal(rtmem_uint(&m, (uintptr_t)&fresh[4], 8, &v, "the next word", &err), 0);
	assert_int_equal(m.rereads, rereads + 1);
	munmap(fresh, 4096);
	assert_int_equal(rtmem_uint(&m, (uintptr_t)&fresh[3], 8, &v, "the new word", &err), -EFAULT);
	/* Bounded: a pointer no mapping holds stops reading the maps again. */
	for (int i = 0; i < 20; i++)
		assert_int_equal(rtmem_uint(&m, 0x10, 8, &v, "the word", &err), -EFAULT);
	assert_true(m.rereads <= 8);
	rtmem_release(&m);
	procfs_maps_release(&maps);
	dwt_free(d);
}

static void test_tls_and_enum(void **state)
{
	(void)state;
	struct dwt *d = self_dwt();
	struct sd_error err = {0};
	uint64_t tp = 0, addr;
	assert_int_equal(syscall(SYS_arch_prctl, ARCH_GET_FS, &tp), 0);
	struct dwt_type t;
	assert_int_equal(dwt_tls_address(d, "fx_tls", tp, &addr, &t, &err), 0);
	assert_ptr_equal((void *)(uintptr_t)addr, &fx_tls);
	assert_int_equal(t.size, sizeof(long));
	uint64_t off;
	/* A global is not thread-local. */
	assert_int_equal(dwt_tls(d, "fx_global", &off, NULL, &err), -EINVAL);
	int64_t v;
	assert_int_equal(dwt_const(d, "FX_GREEN", &v, &err), 0);
	assert_int_equal(v, FX_GREEN);
	assert_int_equal(dwt_type(d, "enum fx_colour", &t, &err), 0);
	assert_int_equal(dwt_enumerator(d, &t, "FX_RED", &v, &err), 0);
	assert_int_equal(v, FX_RED);
	assert_true(dwt_enumerator(d, &t, "FX_BLUE", &v, &err) < 0);
	dwt_free(d);
}

static void test_not_dwarf(void **state)
{
	(void)state;
	struct sd_error err = {0};
	assert_null(dwt_open("/proc/self/status", &err));
	assert_non_null(strstr(err.msg, "not an ELF"));
	assert_null(dwt_open("/nonexistent/file", &err));
}

#define FX_GO SD_FIXTURE_DIR "/fx-go"

static void test_go_runtime_types(void **state)
{
	(void)state;
	struct sd_error err = {0};
	struct dwt *d = dwt_open(FX_GO, &err);
	if (!d)
		fail_msg("%s", err.msg);
	assert_non_null(strstr(dwt_producer(d), "Go cmd/compile go1."));
	struct dwt_type g, ft, elem;
	assert_int_equal(dwt_type(d, "runtime.g", &g, &err), 0);
	assert_int_equal(g.kind, DWT_STRUCT);
	uint64_t sched, pc, gpc, off;
	assert_int_equal(dwt_member(d, &g, "sched", &sched, &ft, &err), 0);
	assert_int_equal(dwt_member(d, &ft, "pc", &pc, NULL, &err), 0);
	assert_int_equal(dwt_member(d, &g, "sched.pc", &gpc, NULL, &err), 0);
	assert_int_equal(gpc, sched + pc);
	assert_int_equal(dwt_member(d, &g, "goid", &off, &ft, &err), 0);
	assert_int_equal(ft.size, 8);
	assert_true(dwt_member(d, &g, "sched.nosuchreg", &off, NULL, &err) < 0);
	assert_non_null(strstr(err.msg, "nosuchreg"));
	assert_non_null(strstr(err.msg, "runtime.gobuf"));
	/* allgs is a slice of *runtime.g. */
	uint64_t va;
	struct dwt_type allgs;
	assert_int_equal(dwt_global(d, "runtime.allgs", &va, &allgs, &err), 0);
	assert_int_equal(allgs.kind, DWT_STRUCT);
	assert_true(dwt_has_member(d, &allgs, "array") && dwt_has_member(d, &allgs, "cap"));
	assert_int_equal(dwt_member(d, &allgs, "array", &off, &ft, &err), 0);
	assert_int_equal(dwt_pointee(d, &ft, &elem, &err), 0);
	assert_int_equal(elem.kind, DWT_POINTER);
	struct dwt_type gp;
	assert_int_equal(dwt_pointee(d, &elem, &gp, &err), 0);
	assert_int_equal(gp.die, g.die);
	/* The runtime's wait reasons: an array of strings. */
	struct dwt_type wr;
	uint64_t count;
	assert_int_equal(dwt_global(d, "runtime.waitReasonStrings", &va, &wr, &err), 0);
	assert_int_equal(dwt_array(d, &wr, &elem, &count, &err), 0);
	assert_true(count > 10);
	assert_string_equal(elem.name, "string");
	int64_t v;
	assert_int_equal(dwt_const(d, "runtime._Gwaiting", &v, &err), 0);
	assert_int_equal(v, 4);
	dwt_free(d);
}

/* The fixture the live test started, killed by the group's teardown
 * whatever the test's outcome. */
static pid_t fx_pid = -1;

static int kill_fixture(void **state)
{
	(void)state;
	if (fx_pid > 0) {
		kill(fx_pid, SIGKILL);
		waitpid(fx_pid, NULL, 0);
	}
	fx_pid = -1;
	return 0;
}

/* fx-go started and ready; its pid. */
static pid_t start_fx_go(void)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(p[1], 1);
		dup2(open("/dev/null", O_WRONLY), 2);
		close(p[0]);
		execl(FX_GO, "fx-go", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	fx_pid = pid;
	char buf[64] = {0};
	ssize_t n = read(p[0], buf, sizeof(buf) - 1);
	close(p[0]);
	assert_true(n > 0 && !strncmp(buf, "ready", 5));
	return pid;
}

static void test_go_live_string(void **state)
{
	(void)state;
	struct sd_error err = {0};
	struct dwt *d = dwt_open(FX_GO, &err);
	if (!d)
		fail_msg("%s", err.msg);
	pid_t pid = start_fx_go();
	struct sd_maps maps = {0};
	assert_int_equal(procfs_read_maps(pid, &maps, &err), 0);
	struct rtmem m;
	rtmem_pid_init(&m, pid, &maps);
	uint64_t va;
	struct dwt_type t;
	assert_int_equal(dwt_global(d, "runtime.buildVersion", &va, &t, &err), 0);
	char *s = NULL;
	int cut = -1;
	assert_int_equal(rtmem_string(&m, d, va, &t, 64, &s, &cut, &err), 0);
	assert_int_equal(cut, 0);
	/* The producer names the same version: "Go cmd/compile go1.19.8". */
	assert_non_null(strstr(dwt_producer(d), s));
	assert_int_equal(strncmp(s, "go1.", 4), 0);
	free(s);
	/* Cut to its first 3 bytes. */
	assert_int_equal(rtmem_string(&m, d, va, &t, 3, &s, &cut, &err), 0);
	assert_string_equal(s, "go1");
	assert_int_equal(cut, 1);
	free(s);
	/* allgs: a bounded slice of goroutines (more than 1, fewer than 1000). */
	struct dwt_type elem;
	uint64_t ptr, len;
	assert_int_equal(dwt_global(d, "runtime.allgs", &va, &t, &err), 0);
	assert_int_equal(rtmem_slice(&m, d, va, &t, 1000, &ptr, &len, &elem, &err), 0);
	assert_true(len > 1);
	assert_int_equal(rtmem_slice(&m, d, va, &t, 1, &ptr, &len, &elem, &err), -E2BIG);
	/* A string is not a slice. */
	assert_int_equal(dwt_global(d, "runtime.buildVersion", &va, &t, &err), 0);
	assert_true(rtmem_slice(&m, d, va, &t, 10, &ptr, &len, NULL, &err) < 0);
	kill_fixture(NULL);
	procfs_maps_release(&maps);
	dwt_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_struct_members),
		cmocka_unit_test(test_missing_names_are_named),
		cmocka_unit_test(test_global_read_back),
		cmocka_unit_test(test_tls_and_enum),
		cmocka_unit_test(test_not_dwarf),
		cmocka_unit_test(test_go_runtime_types),
		cmocka_unit_test(test_go_live_string),
	};
	return cmocka_run_group_tests(tests, NULL, kill_fixture);
}
