// SPDX-License-Identifier: MIT
// A per-module address-range index over DWARF: every function with code in
// every unit (DWARF 4 and 5, split units in .dwo files or a .dwp package,
// LTO and partial units) sorted by address, built once, so that an address
// finds its function and inline chain without libdw's .debug_aranges
// lookup.
#ifndef SD_DWINDEX_H
#define SD_DWINDEX_H

#include <elfutils/libdw.h>
#include <stdint.h>

struct sd_dwindex;

/* One function of a resolved address, innermost first. FUNCTION is the
 * DIE's name as the DWARF gives it (see dwindex_lookup); FILE and LINE
 * are where execution is in that function (the line table for the
 * innermost, the call site of the next inner inline for the others). */
struct dwindex_frame {
	char *function;	  /* heap, NULL when the DIE has no name */
	const char *file; /* libdw's string, lives as long as the Dwarf */
	int line;
	int inlined;
};

/* Build the index of DW (which must outlive it). Never NULL; an index
 * with no functions answers every lookup with 0. */
struct sd_dwindex *dwindex_new(Dwarf *dw);
/* NULL does nothing. */
void dwindex_free(struct sd_dwindex *idx);

/* Add PATH (copied) to the places a DWARF package (.dwp) may be: when a
 * skeleton unit's .dwo file is not found, the first candidate that opens
 * as a package is read, once, and the split unit is taken from it by its
 * DWO id. */
void dwindex_add_dwp(struct sd_dwindex *idx, const char *path);
/* The path of the package read, or NULL (none needed, or none found). */
const char *dwindex_dwp(const struct sd_dwindex *idx);

/* Resolve ADDR (a DWARF address: runtime minus the module's bias). Fills
 * at most MAX frames of OUT, innermost first, and returns how many (0:
 * no function with code holds ADDR). Names: an unmangled linkage name as
 * is, the demangled linkage name when it carries a parameter list (C++
 * overloads), else the DWARF name
 * qualified by its enclosing namespaces, types and functions (Rust
 * closures, generics, Go, C). Free the names with dwindex_frames_release.
 * NO_SOURCE skips files and lines. */
int dwindex_lookup(struct sd_dwindex *idx, uint64_t addr, int no_source, struct dwindex_frame *out,
		   int max);
void dwindex_frames_release(struct dwindex_frame *v, int n);

/* Number of address ranges indexed, for -v and the benchmark. */
size_t dwindex_size(const struct sd_dwindex *idx);

#endif
