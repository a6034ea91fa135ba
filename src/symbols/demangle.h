// SPDX-License-Identifier: MIT
// Names as people read them: C++ and Rust (legacy and v0) symbols
// demangled with libiberty, for the symbolizer and the DWARF index alike.
#ifndef SD_DEMANGLE_H
#define SD_DEMANGLE_H

/* Demangle NAME; returns a heap string, or NULL when NAME is not mangled
 * (or cannot be demangled). */
char *demangle_symbol(const char *name);

#endif
