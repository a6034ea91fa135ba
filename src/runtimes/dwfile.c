// SPDX-License-Identifier: MIT
// A module's separate debug file for the typed reader (dwfile.h): its
// build-id and .gnu_debuglink read from the file itself, the candidates
// looked for and checked by debugfind.h.
#include "dwfile.h"

#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "debugfind.h"
#include "dwtype.h"
#include "elfcache.h"
#include "util.h"

/* The .gnu_debuglink of the ELF file open as FD: the file name (copied
 * into LINK, CAP bytes) and its CRC. 0 when it has one. */
static int debuglink_of(int fd, char *link, size_t cap, GElf_Word *crc)
{
	int own = dup(fd), found = -1;
	if (own < 0)
		return -1;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(own, ELF_C_READ_MMAP, NULL);
	size_t shstrndx;
	if (e && elf_getshdrstrndx(e, &shstrndx) == 0) {
		for (Elf_Scn *scn = elf_nextscn(e, NULL); scn && found < 0; scn = elf_nextscn(e, scn)) {
			GElf_Shdr sh;
			Elf_Data *data;
			const char *nm;
			if (!gelf_getshdr(scn, &sh) || !(nm = elf_strptr(e, shstrndx, sh.sh_name)) ||
			    strcmp(nm, ".gnu_debuglink") || !(data = elf_getdata(scn, NULL)) ||
			    !data->d_buf)
				continue;
			const char *b = data->d_buf;
			size_t n = strnlen(b, data->d_size);
			size_t at = (n + 4) & ~(size_t)3; /* the name, its NUL, padded to 4 */
			if (!n || n >= cap || at + 4 > data->d_size)
				break;
			memcpy(link, b, n + 1);
			memcpy(crc, b + at, 4);
			found = 0;
		}
	}
	if (e)
		elf_end(e);
	close(own);
	return found;
}

static int unhex(const char *hex, unsigned char *out, size_t cap)
{
	size_t n = strlen(hex);
	if (n % 2 || n / 2 > cap)
		return 0;
	for (size_t i = 0; i < n / 2; i++) {
		unsigned v = 0;
		for (int k = 0; k < 2; k++) {
			char c = hex[2 * i + k];
			v = v * 16 + (unsigned)(c >= '0' && c <= '9'   ? c - '0'
						: c >= 'a' && c <= 'f' ? c - 'a' + 10
						: c >= 'A' && c <= 'F' ? c - 'A' + 10
								       : 0);
		}
		out[i] = (unsigned char)v;
	}
	return (int)(n / 2);
}

struct dwt *dwfile_open_debug(const struct sd_elf *e, const char *name, char **where,
			      struct sd_error *err)
{
	if (where)
		*where = NULL;
	if (!e || e->fd < 0) {
		sd_error_set(err, ENOENT, "%s: no file to find a debug file for", name);
		return NULL;
	}
	unsigned char id[64];
	int len = unhex(e->build_id, id, sizeof(id));
	char link[256];
	GElf_Word crc = 0;
	int have_link = debuglink_of(e->fd, link, sizeof(link), &crc) == 0;
	char *path = NULL;
	int fd = len > 0 || have_link
		     ? debugfind_search(e->path, have_link ? link : NULL, crc, id, len, &path)
		     : -1;
	if (fd < 0) {
		sd_error_set(err, ENOENT, "no separate debug file of %s (by build-id%s)", name,
			     have_link ? " or .gnu_debuglink" : "");
		return NULL;
	}
	struct dwt *d = dwt_open_fd(fd, path, err);
	close(fd);
	if (d && where)
		*where = path;
	else
		free(path);
	return d;
}
