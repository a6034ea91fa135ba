// SPDX-License-Identifier: MIT
// The files of a core's modules, found on this host and kept only when
// their build-id is the one the core's memory holds: a library upgraded
// since the crash is never used to name the crashed process's frames.
#include "core.h"
#include "saferead.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Images larger than this are not opened for a core's module. */
#define MODULE_MAX_SIZE ((uint64_t)4 << 30)

/* The image at PATH (a path from the core's NT_FILE: input from outside),
 * inside SYSROOT when it is not NULL (its absolute symlinks stay in it),
 * opened by the shared opener (saferead.h: no magic links, regular files
 * only, no blocking, size-capped); NAME names it in ERR. NULL with ERR
 * (code ENOENT when there is no such file). */
static struct sd_elf *open_image(const char *sysroot, const char *path, const char *name,
				 struct sd_error *err)
{
	int o = sysroot ? saferead_path_under(sysroot, path) : saferead_path(0, path);
	if (o < 0) {
		sd_error_set(err, -o, "cannot open %s: %s", name, sd_strerror(-o));
		return NULL;
	}
	int fd = saferead_reopen(o, MODULE_MAX_SIZE, (uid_t)-1, NULL, name, err);
	if (fd < 0)
		return NULL;
	return elfcache_open_fd(fd, name, err);
}

/* The executable or library with build-id WANT (hex) from debuginfod,
 * when asked for (STACKDUMP_DEBUGINFOD=1 and DEBUGINFOD_URLS set, as for
 * debug info; *ASKED says whether it was): the path of the copy in its
 * client's cache, or NULL.
 * libdebuginfod (elfutils' client, which libdw itself loads) is loaded
 * only then. */
static char *debuginfod_executable(const char *want, int *asked)
{
	const char *ask = getenv("STACKDUMP_DEBUGINFOD"), *urls = getenv("DEBUGINFOD_URLS");
	*asked = ask && !strcmp(ask, "1") && urls && *urls;
	if (!*asked)
		return NULL;
	/* Loaded once and kept: the client library keeps state of its own
	 * (libcurl's) that an unload would leave behind unreachable. */
	static void *lib;
	if (!lib)
		lib = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		return NULL;
	void *(*begin)(void) = (void *(*)(void))dlsym(lib, "debuginfod_begin");
	int (*find)(void *, const unsigned char *, int, char **) =
	    (int (*)(void *, const unsigned char *, int, char **))dlsym(lib,
								       "debuginfod_find_executable");
	void (*end)(void *) = (void (*)(void *))dlsym(lib, "debuginfod_end");
	char *path = NULL;
	void *client = begin && find && end ? begin() : NULL;
	if (client) {
		/* A build-id given as text: length 0. */
		int fd = find(client, (const unsigned char *)want, 0, &path);
		if (fd >= 0)
			close(fd);
		else
			path = NULL;
		end(client);
	}
	return path;
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
	char cand[4][4096];
	const char *root[4] = {NULL, NULL, NULL, NULL}, *rel[4];
	int n = 0;
	if (sysroot && *sysroot) {
		snprintf(cand[n], sizeof(cand[0]), "%s%s", sysroot, path);
		root[n] = sysroot;
		rel[n++] = path;
	}
	snprintf(cand[n], sizeof(cand[0]), "%s", path);
	rel[n++] = path;
	if (have_id && strlen(want) > 2) {
		snprintf(cand[n], sizeof(cand[0]), "/usr/lib/debug/.build-id/%.2s/%s", want,
			 want + 2);
		rel[n] = cand[n];
		n++;
	}
	int asked = 0; /* debuginfod may be asked (below) */
	struct strbuf tried;
	strbuf_init(&tried);
	for (int i = 0; i < n; i++) {
		struct sd_error err = {0};
		struct sd_elf *e = open_image(root[i], rel[i], cand[i], &err);
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
	/* Nothing here matched: debuginfod, when asked for. */
	char *got = have_id ? debuginfod_executable(want, &asked) : NULL;
	if (got) {
		struct sd_error err = {0};
		struct sd_elf *e = open_image(NULL, got, got, &err);
		if (e && !strcmp(e->build_id, want)) {
			free(got);
			strbuf_release(&tried);
			return e;
		}
		if (e)
			elfcache_put(e);
		strbuf_addf(&tried, "%sdebuginfod's copy %s does not match", tried.len ? "; " : "",
			    got);
		free(got);
	}
	struct strbuf sb;
	strbuf_init(&sb);
	if (!have_id)
		strbuf_addf(&sb, "module %s: not found at %s, not symbolized", base, path);
	else if (tried.len)
		strbuf_addf(&sb, "module %s: build-id %.12s... %s, not symbolized", base, want,
			    tried.buf);
	else
		strbuf_addf(&sb, "module %s: build-id %.12s... not found (%s, the debug tree%s%s), "
			    "not symbolized", base, want, path, sysroot ? ", the sysroot" : "",
			    asked ? ", debuginfod" : "");
	strbuf_release(&tried);
	*why = strbuf_detach(&sb);
	return NULL;
}
