// SPDX-License-Identifier: MIT
// Unit tests of safefile.c and saferead.c, the file creator and the
// reader of target files: what another user can plant (a link, a FIFO, a
// file or folder of theirs, a folder others write into) is refused, never
// followed, never blocked on; what is ours is written new and renamed.
// Files of "another user" are made by chown (these tests run as root).
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "safefile.h"
#include "saferead.h"

static char base[64];

static int setup(void **state)
{
	(void)state;
	snprintf(base, sizeof(base), "/tmp/sd-unit-safefile-XXXXXX");
	if (!mkdtemp(base))
		return -1;
	return geteuid() == 0 ? 0 : -1; /* chown needs root */
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	return system(cmd) == 0 ? 0 : -1;
}

static void path(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/%s", base, name);
}

static void test_writes_new_file_0600(void **state)
{
	(void)state;
	char p[128];
	path(p, sizeof(p), "a.json");
	struct sd_error err = {0};
	uint64_t w = 0;
	assert_int_equal(safefile_put(p, "hello", 5, 0600, 0, &w, &err), 0);
	assert_int_equal(w, 5);
	struct stat st;
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0600);
	/* Replacing one's own file: a new inode renamed over it. */
	ino_t ino = st.st_ino;
	assert_int_equal(safefile_put(p, "again", 5, 0600, 0, NULL, &err), 0);
	assert_int_equal(lstat(p, &st), 0);
	assert_true(st.st_ino != ino);
}

static void test_planted_names_refused(void **state)
{
	(void)state;
	char p[128], decoy[128];
	path(decoy, sizeof(decoy), "decoy");
	int fd = open(decoy, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "keep", 4), 4);
	close(fd);
	struct sd_error err = {0};
	path(p, sizeof(p), "link");
	assert_int_equal(symlink(decoy, p), 0);
	assert_true(safefile_put(p, "x", 1, 0600, 0, NULL, &err) < 0);
	assert_non_null(strstr(err.msg, "symbolic link"));
	path(p, sizeof(p), "fifo");
	assert_int_equal(mkfifo(p, 0666), 0);
	assert_true(safefile_put(p, "x", 1, 0600, 0, NULL, &err) < 0);
	assert_non_null(strstr(err.msg, "FIFO"));
	path(p, sizeof(p), "theirs");
	fd = open(p, O_WRONLY | O_CREAT, 0644);
	assert_true(fd >= 0);
	assert_int_equal(fchown(fd, 65534, 65534), 0);
	close(fd);
	assert_true(safefile_put(p, "x", 1, 0600, 0, NULL, &err) < 0);
	assert_non_null(strstr(err.msg, "belongs to user 65534"));
	struct stat st;
	assert_int_equal(stat(decoy, &st), 0);
	assert_int_equal(st.st_size, 4);
	/* Write-through: /dev/null and stdout's own names. */
	assert_int_equal(safefile_put("/dev/null", "x", 1, 0600, 0, NULL, &err), 0);
	assert_int_equal(lstat("/dev/null", &st), 0);
	assert_true(S_ISCHR(st.st_mode));
}

static void test_folders_judged_on_the_way(void **state)
{
	(void)state;
	char d[128], p[160];
	struct sd_error err = {0};
	/* Another user's folder, anywhere in the path. */
	path(d, sizeof(d), "theirdir");
	assert_int_equal(mkdir(d, 0755), 0);
	assert_int_equal(chown(d, 65534, 65534), 0);
	snprintf(p, sizeof(p), "%s/sub/f", d);
	assert_true(safefile_put(p, "x", 1, 0600, SAFEFILE_MKDIR, NULL, &err) < 0);
	assert_non_null(strstr(err.msg, "belongs to user 65534"));
	/* Writable by others, not sticky. */
	path(d, sizeof(d), "open");
	assert_int_equal(mkdir(d, 0700), 0);
	assert_int_equal(chmod(d, 0777), 0);
	snprintf(p, sizeof(p), "%s/f", d);
	assert_true(safefile_put(p, "x", 1, 0600, 0, NULL, &err) < 0);
	assert_non_null(strstr(err.msg, "not sticky"));
	/* Sticky: files yes, a folder to keep (SAFEFILE_OWN_DIR) no. */
	path(d, sizeof(d), "sticky");
	assert_int_equal(mkdir(d, 0700), 0);
	assert_int_equal(chmod(d, 01777), 0);
	snprintf(p, sizeof(p), "%s/f", d);
	assert_int_equal(safefile_put(p, "x", 1, 0600, 0, NULL, &err), 0);
	int sticky = 0;
	int fd = safefile_opendir(d, 0, &sticky, &err);
	assert_true(fd >= 0);
	assert_int_equal(sticky, 1);
	close(fd);
	assert_true(safefile_opendir(d, SAFEFILE_OWN_DIR, NULL, &err) < 0);
	/* A link as a folder of the path. */
	path(d, sizeof(d), "dirlink");
	assert_int_equal(symlink("/tmp", d), 0);
	snprintf(p, sizeof(p), "%s/f", d);
	assert_true(safefile_put(p, "x", 1, 0600, 0, NULL, &err) < 0);
	assert_non_null(strstr(err.msg, "symbolic link"));
	/* Made when missing, 0700. */
	snprintf(p, sizeof(p), "%s/new/deeper", base);
	fd = safefile_opendir(p, SAFEFILE_MKDIR | SAFEFILE_OWN_DIR, NULL, &err);
	assert_true(fd >= 0);
	close(fd);
	struct stat st;
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
}

static void test_open_own_refuses_links_and_fifos(void **state)
{
	(void)state;
	struct sd_error err = {0};
	int dfd = safefile_opendir(base, SAFEFILE_OWN_DIR, NULL, &err);
	assert_true(dfd >= 0);
	assert_int_equal(symlinkat("/etc/passwd", dfd, "lock-link"), 0);
	assert_true(safefile_open_own(dfd, base, "lock-link", 0600, 0, &err) < 0);
	assert_int_equal(mkfifoat(dfd, "lock-fifo", 0600), 0);
	assert_true(safefile_open_own(dfd, base, "lock-fifo", 0600, 0, &err) < 0);
	int fd = safefile_open_own(dfd, base, "lock", 0600, 0, &err);
	assert_true(fd >= 0);
	close(fd);
	close(dfd);
}

static void test_saferead_regular_capped_owned(void **state)
{
	(void)state;
	char p[128];
	struct sd_error err = {0};
	path(p, sizeof(p), "rfifo");
	assert_int_equal(mkfifo(p, 0600), 0);
	assert_true(saferead_open(p, 1 << 20, (uid_t)-1, NULL, &err) < 0);
	path(p, sizeof(p), "rzero");
	assert_int_equal(symlink("/dev/zero", p), 0);
	assert_true(saferead_open(p, 1 << 20, (uid_t)-1, NULL, &err) < 0);
	path(p, sizeof(p), "rbig");
	int fd = open(p, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)1 << 30), 0);
	close(fd);
	assert_true(saferead_open(p, 1 << 20, (uid_t)-1, NULL, &err) < 0);
	assert_int_equal(err.code, EFBIG);
	assert_true(saferead_open(p, 1 << 20, 0, NULL, &err) < 0);
	fd = saferead_open(p, (uint64_t)2 << 30, 0, NULL, &err);
	assert_true(fd >= 0);
	close(fd);
	assert_true(saferead_open(p, (uint64_t)2 << 30, 65534, NULL, &err) < 0);
	assert_int_equal(err.code, EPERM);
	/* Inside a process's root: /proc/self/root/PATH is PATH there. */
	char q[160];
	snprintf(q, sizeof(q), "/proc/%d/root%s", (int)getpid(), p);
	fd = saferead_open(q, (uint64_t)2 << 30, (uid_t)-1, NULL, &err);
	assert_true(fd >= 0);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_writes_new_file_0600),
	    cmocka_unit_test(test_planted_names_refused),
	    cmocka_unit_test(test_folders_judged_on_the_way),
	    cmocka_unit_test(test_open_own_refuses_links_and_fifos),
	    cmocka_unit_test(test_saferead_regular_capped_owned),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
