// SPDX-License-Identifier: MIT
// Files the target can influence, opened without following it anywhere
// (saferead.h).
#include "saferead.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

uint64_t saferead_cap(const char *env, uint64_t def)
{
	const char *v = getenv(env);
	uint64_t n;
	if (v && *v && sd_parse_size(v, &n) == 0 && n > 0)
		return n;
	return def;
}

/* PATH inside the folder ROOT (NULL: on the host), as an O_PATH descriptor. */
static int path_in(const char *root, const char *path)
{
	int dfd = AT_FDCWD;
	if (root) {
		dfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0)
			return -errno;
	}
	struct open_how how = {
	    .flags = O_PATH | O_CLOEXEC,
	    .resolve = RESOLVE_NO_MAGICLINKS | (root ? RESOLVE_IN_ROOT : 0),
	};
	int fd = (int)syscall(SYS_openat2, dfd, path, &how, sizeof(how));
	int en = errno;
	if (dfd >= 0)
		close(dfd);
	return fd < 0 ? -en : fd;
}

int saferead_path(pid_t pid, const char *path)
{
	char root[64];
	if (pid > 0)
		snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
	return path_in(pid > 0 ? root : NULL, path);
}

int saferead_path_under(const char *root, const char *path)
{
	return path_in(root, path);
}

int saferead_reopen(int opath, uint64_t cap, uid_t owner, struct stat *stp, const char *name,
		    struct sd_error *err)
{
	struct stat st;
	if (fstat(opath, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(opath);
		return sd_error_set(err, EINVAL, "%s is not a regular file", name);
	}
	if ((uint64_t)st.st_size > cap) {
		close(opath);
		return sd_error_set(err, EFBIG, "%s is larger (%llu bytes) than the cap of %llu",
				    name, (unsigned long long)st.st_size, (unsigned long long)cap);
	}
	if (owner != (uid_t)-1 && st.st_uid != owner) {
		close(opath);
		return sd_error_set(err, EPERM, "%s belongs to user %u, not to the target's %u",
				    name, (unsigned)st.st_uid, (unsigned)owner);
	}
	char self[64];
	snprintf(self, sizeof(self), "/proc/self/fd/%d", opath);
	int fd = open(self, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	int en = errno;
	close(opath);
	if (fd < 0)
		return sd_error_set(err, en, "cannot open %s: %s", name, sd_strerror(en));
	if (stp)
		*stp = st;
	return fd;
}

int saferead_open(const char *name, uint64_t cap, uid_t owner, struct stat *st,
		  struct sd_error *err)
{
	pid_t pid = 0;
	const char *path = name;
	int n = 0;
	unsigned long v;
	if (sscanf(name, "/proc/%lu/root%n", &v, &n) == 1 && n > 0 &&
	    (name[n] == '/' || !name[n]) && v > 0 && v < (1ul << 31)) {
		pid = (pid_t)v;
		path = name[n] ? name + n : "/";
	}
	int o = saferead_path(pid, path);
	if (o < 0)
		return sd_error_set(err, -o, "cannot open %s: %s", name, sd_strerror(-o));
	return saferead_reopen(o, cap, owner, st, name, err);
}
