// SPDX-License-Identifier: MIT
// The search for separate debug files (debugfind.h): build-id paths and
// .gnu_debuglink names, inside the target's root, then on the host.
#include "debugfind.h"

#include <elfutils/libdwelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "saferead.h"
#include "util.h"

static uint64_t debug_cap(void)
{
	return saferead_cap("STACKDUMP_MAX_DEBUG_FILE", SAFEREAD_DEBUG_CAP);
}

/* Whether the ELF file open as FD has the build-id note ID (LEN bytes). */
static int build_id_is(int fd, const unsigned char *id, int len)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return 0;
	const void *got = NULL;
	ssize_t n = dwelf_elf_gnu_build_id(elf, &got);
	int same = n == len && got && !memcmp(got, id, (size_t)len);
	elf_end(elf);
	return same;
}

/* The CRC-32 .gnu_debuglink names, of the whole file open as FD. */
static int crc_is(int fd, GElf_Word want)
{
	char buf[1 << 16];
	uLong crc = crc32(0, Z_NULL, 0);
	for (off_t off = 0;;) {
		ssize_t n = pread(fd, buf, sizeof(buf), off);
		if (n < 0)
			return 0;
		if (n == 0)
			break;
		crc = crc32(crc, (const Bytef *)buf, (uInt)n);
		off += n;
	}
	return (GElf_Word)crc == want;
}

/* The candidate debug file NAME (a path as saferead.h spells it: inside
 * the target's root or on the host), opened through the safe opener, and
 * kept only if it is the module's: its build-id note is ID when the module
 * has one (LEN > 0), else its CRC is CRC when CHECK_CRC. -1 otherwise;
 * the path in *PATH (heap, the caller's). */
static int try_debug(const char *name, const unsigned char *id, int len, GElf_Word crc,
		     int check_crc, char **path)
{
	int fd = saferead_open(name, debug_cap(), (uid_t)-1, NULL, NULL);
	if (fd < 0)
		return -1;
	if ((len > 0 && !build_id_is(fd, id, len)) || (len <= 0 && check_crc && !crc_is(fd, crc))) {
		close(fd);
		return -1;
	}
	lseek(fd, 0, SEEK_SET);
	*path = sd_xstrdup(name);
	return fd;
}

/* The process a module's file was opened from ("/proc/PID/root/..." or
 * "/proc/PID/map_files/..."), or 0 (the host). */
static pid_t pid_of_path(const char *file)
{
	unsigned long v;
	int n = 0;
	if (file && sscanf(file, "/proc/%lu/%n", &v, &n) == 1 && n > 0 && v > 0 && v < (1ul << 31))
		return (pid_t)v;
	return 0;
}

/* Where the debug file of a module is looked for, in this order, each
 * candidate through the safe opener and kept only when its build-id note
 * (or, without one, the debuglink's CRC) matches the module's:
 *   1. inside the target's root: /usr/lib/debug/.build-id/XX/REST.debug,
 *      then the .gnu_debuglink name beside the file, in .debug/ beside it,
 *      and under /usr/lib/debug/ + the file's folder;
 *   2. on the host: the same build-id path and /usr/lib/debug/ + folder
 *      + name.
 * (The inflated cache, debugcache.h, is asked before either: it only ever
 * holds a file that matched the build-id it is filed under.) Never
 * libdwfl's own search, which opens what it finds blocking and follows
 * the target's links into our root. */
int debugfind_search(const char *file_name, const char *link, GElf_Word crc,
			const unsigned char *id, int len, char **path)
{
	pid_t pid = pid_of_path(file_name);
	struct strbuf root, p, dir;
	strbuf_init(&root);
	strbuf_init(&p);
	strbuf_init(&dir);
	if (pid)
		strbuf_addf(&root, "/proc/%d/root", (int)pid);
	/* The file's folder inside its root ("" when unknown). */
	if (file_name && pid && !strncmp(file_name, root.buf, root.len) &&
	    file_name[root.len] == '/') {
		const char *in = file_name + root.len, *slash = strrchr(in, '/');
		strbuf_add(&dir, in, (size_t)(slash - in));
	} else if (file_name && !pid && file_name[0] == '/') {
		strbuf_add(&dir, file_name, (size_t)(strrchr(file_name, '/') - file_name));
	}
	char hex[129] = "";
	if (len >= 2 && len <= 64)
		sd_hex(hex, id, (size_t)len);
	int fd = -1;
	for (int host = pid ? 0 : 1; host < 2 && fd < 0; host++) {
		const char *r = host ? "" : root.buf;
		if (hex[0]) {
			strbuf_release(&p);
			strbuf_addf(&p, "%s/usr/lib/debug/.build-id/%.2s/%s.debug", r, hex, hex + 2);
			fd = try_debug(p.buf, id, len, crc, 0, path);
		}
		if (fd >= 0 || !link || !link[0] || strchr(link, '/'))
			continue;
		if (!host && dir.len) {
			strbuf_release(&p);
			strbuf_addf(&p, "%s%s/%s", r, dir.buf, link);
			fd = try_debug(p.buf, id, len, crc, 1, path);
			if (fd < 0) {
				strbuf_release(&p);
				strbuf_addf(&p, "%s%s/.debug/%s", r, dir.buf, link);
				fd = try_debug(p.buf, id, len, crc, 1, path);
			}
		}
		if (fd < 0 && dir.len) {
			strbuf_release(&p);
			strbuf_addf(&p, "%s/usr/lib/debug%s/%s", r, dir.buf, link);
			fd = try_debug(p.buf, id, len, crc, 1, path);
		}
	}
	strbuf_release(&root);
	strbuf_release(&p);
	strbuf_release(&dir);
	return fd;
}

/* A dwz alternate file (.gnu_debugaltlink) NAME, asked for by the debug
 * file FILE_NAME: absolute, or relative to FILE_NAME's folder; inside the
 * target's root first when FILE_NAME is, then on the host. Opened through
 * the safe opener; its build-id cannot be checked here (libdw checks it). */
int debugfind_altfile(const char *file_name, const char *name, char **path)
{
	pid_t pid = pid_of_path(file_name);
	struct strbuf p;
	strbuf_init(&p);
	int fd = -1;
	if (name[0] == '/') {
		if (pid) {
			strbuf_addf(&p, "/proc/%d/root%s", (int)pid, name);
			fd = saferead_open(p.buf, debug_cap(), (uid_t)-1, NULL, NULL);
		}
		if (fd < 0) {
			strbuf_release(&p);
			strbuf_adds(&p, name);
			fd = saferead_open(p.buf, debug_cap(), (uid_t)-1, NULL, NULL);
		}
	} else if (file_name && strrchr(file_name, '/')) {
		strbuf_add(&p, file_name, (size_t)(strrchr(file_name, '/') - file_name) + 1);
		strbuf_adds(&p, name);
		fd = saferead_open(p.buf, debug_cap(), (uid_t)-1, NULL, NULL);
	}
	if (fd >= 0)
		*path = strbuf_detach(&p);
	else
		strbuf_release(&p);
	return fd;
}

