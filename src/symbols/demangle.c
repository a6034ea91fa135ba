// SPDX-License-Identifier: MIT
// C++ and Rust symbol demangling through libiberty (demangle.h).
#include "demangle.h"

#include <libiberty/demangle.h>
#include <stddef.h>

char *demangle_symbol(const char *name)
{
	/* _Z: Itanium C++ (and legacy Rust); _R: Rust v0. */
	if (!name || name[0] != '_' || (name[1] != 'Z' && name[1] != 'R'))
		return NULL;
	return cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO);
}
