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

#include "safefile.h"
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

/* The cache's file NAME, opened only if it is a regular file of ours in a
 * folder of ours (safefile.h): never through a link or FIFO another user
 * planted there. */
static int open_valid(const char *dir, const char *name)
{
	int dfd = safefile_opendir(dir, SAFEFILE_OWN_DIR, NULL, NULL);
	if (dfd < 0)
		return -1;
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	struct stat st;
	if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
			!safefile_trusted_uid(st.st_uid))) {
		close(fd);
		fd = -1;
	}
	if (fd < 0) {
		close(dfd);
		return -1;
	}
	unsigned char magic[4];
	if (pread(fd, magic, 4, 0) != 4 || memcmp(magic, ELFMAG, SELFMAG)) {
		/* Cut short (a crash before the data reached the disk): made
		 * again. */
		close(fd);
		unlinkat(dfd, name, 0);
		close(dfd);
		return -1;
	}
	close(dfd);
	return fd;
}

/* The cache's file name for BUILD_ID (HEX.debug), or -1. */
static int file_of(const unsigned char *build_id, size_t len, char *file, size_t size)
{
	if (!debugcache_dir() || !build_id || len < 8 || len > 64)
		return -1;
	char hex[129];
	sd_hex(hex, build_id, len);
	int n = snprintf(file, size, "%s.debug", hex);
	return n > 0 && (size_t)n < size ? 0 : -1;
}

int debugcache_find(const unsigned char *build_id, size_t len, char **path)
{
	char file[160];
	if (file_of(build_id, len, file, sizeof(file)) < 0)
		return -1;
	const char *dir = debugcache_dir();
	int cfd = open_valid(dir, file);
	if (cfd < 0)
		return -1;
	futimens(cfd, NULL); /* used now: last out of the cache */
	struct strbuf sb;
	strbuf_init(&sb);
	strbuf_addf(&sb, "%s/%s", dir, file);
	*path = strbuf_detach(&sb);
	return cfd;
}

void debugcache_add(int image, const unsigned char *build_id, size_t len)
{
	char file[160];
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
	/* The folder is made private (0700) and must stay so: a folder
	 * others could write into is not used (safefile.h). */
	int dfd = safefile_opendir(dir, SAFEFILE_MKDIR | SAFEFILE_OWN_DIR, NULL, NULL);
	if (dfd < 0)
		return;
	close(dfd);
	if (statvfs(dir, &vfs) < 0 ||
	    (uint64_t)vfs.f_bavail * vfs.f_frsize < need + CACHE_RESERVE || make_room(dir, need) < 0)
		return;
	struct strbuf path;
	strbuf_init(&path);
	strbuf_addf(&path, "%s/%s", dir, file);
	struct safefile f;
	if (safefile_begin(&f, path.buf, 0600, SAFEFILE_OWN_DIR | SAFEFILE_NO_DIR_SYNC, NULL) == 0) {
		if (copy_fd(image, f.fd) == 0)
			safefile_commit(&f, NULL);
		else
			safefile_abort(&f);
	}
	strbuf_release(&path);
}
