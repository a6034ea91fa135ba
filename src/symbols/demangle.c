// SPDX-License-Identifier: MIT
// C++ and Rust symbol demangling through libiberty (demangle.h).
#include "demangle.h"

#include <libiberty/demangle.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

char *demangle_symbol(const char *name)
{
	/* _Z: Itanium C++ (and legacy Rust); _R: Rust v0. */
	if (!name || name[0] != '_' || (name[1] != 'Z' && name[1] != 'R'))
		return NULL;
	return cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO);
}

char *rust_future_name(const char *q, size_t n, char *buf, size_t size)
{
	snprintf(buf, size, "%.*s", (int)n, q);
	char *e = strstr(buf, "::{async_fn_env#");
	if (e && !strchr(e + 3, ':')) {
		*e = '\0';
	} else if ((e = strstr(buf, "{async_block_env#")) && !strchr(e, ':')) {
		char tail[64];
		snprintf(tail, sizeof(tail), "{async_block#%s", e + strlen("{async_block_env#"));
		snprintf(e, size - (size_t)(e - buf), "%s", tail);
	}
	return buf;
}
