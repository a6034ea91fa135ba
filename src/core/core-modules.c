// SPDX-License-Identifier: MIT
// The files of a core's modules, found on this host and kept only when
// their build-id is the one the core's memory holds: a library upgraded
// since the crash is never used to name the crashed process's frames.
#include "core.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Images larger than this are not opened for a core's module. */
#define MODULE_MAX_SIZE ((uint64_t)4 << 30)

/* The image at PATH, opened safely, or NULL with ERR. */
static struct sd_elf *open_image(const char *path, struct sd_error *err)
{
	uint64_t size;
	int fd = core_safe_open(path, MODULE_MAX_SIZE, &size, err);
	if (fd < 0)
		return NULL;
	return elfcache_open_fd(fd, path, err);
}

struct sd_elf *core_open_module(const struct sd_core *c, const char *sysroot, const char *path,
				uint64_t start, char **why)
{
	char want[129];
	*why = NULL;
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	int have_id = core_build_id_at(c, start, want) == 0;
	/* The candidates, in order: the crashed host's copy, this host's
	 * file at the same path, the file by build-id in the debug tree
	 * (Fedora links the binary there; Debian only the .debug). */
	char cand[3][4096];
	int n = 0;
	if (sysroot && *sysroot)
		snprintf(cand[n++], sizeof(cand[0]), "%s%s", sysroot, path);
	snprintf(cand[n++], sizeof(cand[0]), "%s", path);
	if (have_id && strlen(want) > 2)
		snprintf(cand[n++], sizeof(cand[0]), "/usr/lib/debug/.build-id/%.2s/%s", want,
			 want + 2);
	struct strbuf tried;
	strbuf_init(&tried);
	for (int i = 0; i < n; i++) {
		struct sd_error err = {0};
		struct sd_elf *e = open_image(cand[i], &err);
		if (!e) {
			if (err.code != ENOENT)
				strbuf_addf(&tried, "%s%s", tried.len ? "; " : "", err.msg);
			continue;
		}
		if (!have_id) {
			strbuf_release(&tried);
			size_t len = strlen(base) + strlen(cand[i]) + 128;
			*why = sd_xmalloc(len);
			snprintf(*why, len,
				 "module %s: the core holds no build-id for it; %s used unchecked", base,
				 cand[i]);
			return e;
		}
		if (!strcmp(e->build_id, want)) {
			strbuf_release(&tried);
			return e;
		}
		strbuf_addf(&tried, "%sdoes not match %s%s%.12s%s", tried.len ? "; " : "", cand[i],
			    e->build_id[0] ? " (" : "", e->build_id, e->build_id[0] ? "...)" : " (none)");
		elfcache_put(e);
	}
	struct strbuf sb;
	strbuf_init(&sb);
	if (!have_id)
		strbuf_addf(&sb, "module %s: not found at %s, not symbolized", base, path);
	else if (tried.len)
		strbuf_addf(&sb, "module %s: build-id %.12s... %s, not symbolized", base, want,
			    tried.buf);
	else
		strbuf_addf(&sb, "module %s: build-id %.12s... not found (%s, the debug tree%s), not "
			    "symbolized", base, want, path, sysroot ? ", the sysroot" : "");
	strbuf_release(&tried);
	*why = strbuf_detach(&sb);
	return NULL;
}
