// SPDX-License-Identifier: MIT
// The inflated debug file cache (debugcache.h): one file per build-id,
// a copy of its image (debugimage.h) renamed into place, kept within a
// size cap (least recently used first out) and never at the cost of the
// last free space of a full disk.
#include "debugcache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "util.h"

/* All inflated files together stay under this. */
#define CACHE_CAP ((uint64_t)512 << 20)
/* Space a new file must leave free on its file system. */
#define CACHE_RESERVE ((uint64_t)256 << 20)

const char *debugcache_dir(void)
{
	static char dir[4096];
	static int done;
	if (done)
		return dir[0] ? dir : NULL;
	done = 1;
	const char *env = getenv("STACKDUMP_DEBUG_CACHE");
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	int n = -1;
	if (env)
		n = *env && strcmp(env, "off") ? snprintf(dir, sizeof(dir), "%s", env) : -1;
	else if (xdg && *xdg == '/')
		n = snprintf(dir, sizeof(dir), "%s/stackdump/debug", xdg);
	else if (home && *home == '/')
		n = snprintf(dir, sizeof(dir), "%s/.cache/stackdump/debug", home);
	if (n <= 0 || (size_t)n >= sizeof(dir))
		dir[0] = '\0';
	/* A dump writes no file unless asked: the default directory is used
	 * only when the user made it. */
	struct stat st;
	if (!env && dir[0] && (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)))
		dir[0] = '\0';
	return dir[0] ? dir : NULL;
}

/* mkdir -p DIR, private to its owner. */
static int make_dirs(const char *dir)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s", dir);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0700) < 0 && errno != EEXIST)
			return -1;
		*s = '/';
	}
	return mkdir(p, 0700) < 0 && errno != EEXIST ? -1 : 0;
}

/* Whether ELF names a dwz alternate file: named relative to the debug
 * file, which a copy elsewhere would break. */
static int has_altlink(Elf *elf)
{
	size_t shstrndx;
	if (elf_getshdrstrndx(elf, &shstrndx) < 0)
		return 1;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			return 1;
		const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && !strcmp(name, ".gnu_debugaltlink"))
			return 1;
	}
	return 0;
}

struct entry {
	char name[128];
	uint64_t size;
	time_t used;
};

static int cmp_used(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	return (x->used > y->used) - (x->used < y->used);
}

/* Make room for NEED more bytes under the cap: the least recently used
 * files go first. Returns 0 when there is room. */
static int make_room(const char *dir, uint64_t need)
{
	if (need > CACHE_CAP / 2)
		return -1;
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	struct entry *v = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		struct stat st;
		if (l < 7 || l >= sizeof(v->name) || strcmp(de->d_name + l - 6, ".debug") ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		sd_grow(&v, &cap, n + 1, sizeof(*v));
		memcpy(v[n].name, de->d_name, l + 1); /* l < sizeof(name): checked */
		v[n].size = (uint64_t)st.st_size;
		v[n].used = st.st_mtime;
		total += v[n].size;
		n++;
	}
	if (total + need > CACHE_CAP) {
		sd_sort(v, n, sizeof(*v), cmp_used);
		for (size_t i = 0; i < n && total + need > CACHE_CAP; i++)
			if (unlinkat(dirfd(d), v[i].name, 0) == 0)
				total -= v[i].size;
	}
	closedir(d);
	free(v);
	return total + need <= CACHE_CAP ? 0 : -1;
}

static int copy_fd(int from, int to)
{
	off_t off = 0;
	for (;;) {
		ssize_t n = copy_file_range(from, &off, to, NULL, 1 << 24, 0);
		if (n == 0)
			return 0;
		if (n > 0)
			continue;
		if (errno != EXDEV && errno != ENOSYS && errno != EINVAL)
			return -1;
		break; /* another file system: copy by hand */
	}
	char buf[1 << 16];
	for (;;) {
		ssize_t n = pread(from, buf, sizeof(buf), off);
		if (n < 0)
			return -1;
		if (n == 0)
			return 0;
		for (ssize_t done = 0; done < n;) {
			ssize_t w = write(to, buf + done, (size_t)(n - done));
			if (w < 0)
				return -1;
			done += w;
		}
		off += n;
	}
}

static int open_valid(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	unsigned char magic[4];
	if (pread(fd, magic, 4, 0) != 4 || memcmp(magic, ELFMAG, SELFMAG)) {
		/* Cut short (a crash before the data reached the disk): made
		 * again. */
		close(fd);
		unlink(path);
		return -1;
	}
	return fd;
}

/* The cache's file name for BUILD_ID, or -1. */
static int file_of(const unsigned char *build_id, size_t len, char *file, size_t size)
{
	const char *dir = debugcache_dir();
	if (!dir || !build_id || len < 8 || len > 64)
		return -1;
	char hex[129];
	sd_hex(hex, build_id, len);
	int n = snprintf(file, size, "%s/%s.debug", dir, hex);
	return n > 0 && (size_t)n < size ? 0 : -1;
}

int debugcache_find(const unsigned char *build_id, size_t len, char **path)
{
	char file[4096 + 160];
	if (file_of(build_id, len, file, sizeof(file)) < 0)
		return -1;
	int cfd = open_valid(file);
	if (cfd < 0)
		return -1;
	futimens(cfd, NULL); /* used now: last out of the cache */
	*path = sd_xstrdup(file);
	return cfd;
}

void debugcache_add(int image, const unsigned char *build_id, size_t len)
{
	char file[4096 + 160];
	const char *dir = debugcache_dir();
	if (file_of(build_id, len, file, sizeof(file)) < 0)
		return;
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(image, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return;
	int altlink = has_altlink(elf);
	elf_end(elf);
	struct stat st;
	if (altlink || fstat(image, &st) < 0)
		return;
	uint64_t need = (uint64_t)st.st_size;
	struct statvfs vfs;
	if (make_dirs(dir) < 0 || statvfs(dir, &vfs) < 0 ||
	    (uint64_t)vfs.f_bavail * vfs.f_frsize < need + CACHE_RESERVE || make_room(dir, need) < 0)
		return;
	char tmp[sizeof(file) + 8];
	snprintf(tmp, sizeof(tmp), "%s.XXXXXX", file);
	int tfd = mkostemp(tmp, O_CLOEXEC);
	if (tfd < 0)
		return;
	int ok = copy_fd(image, tfd) == 0;
	if (close(tfd) < 0)
		ok = 0;
	if (!ok || rename(tmp, file) < 0)
		unlink(tmp);
}
