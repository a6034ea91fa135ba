// SPDX-License-Identifier: MIT
// DWARF packages (.dwp: the .dwo files of a program packed into one, by
// binutils' dwp or llvm-dwp): the unit index, and the split unit of a
// skeleton read from the package, which libdw 0.188 cannot do itself.
#ifndef SD_DWP_H
#define SD_DWP_H

#include <elfutils/libdw.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

struct sd_dwp;
struct dwp_unit;

/* The sections a unit has a contribution to, as this module numbers them
 * (the index numbers them differently in versions 2 and 5). DWP_LOC is
 * .debug_loc.dwo (version 2) or .debug_loclists.dwo (version 5),
 * DWP_RNGLISTS exists in version 5 only. */
enum { DWP_INFO, DWP_ABBREV, DWP_LINE, DWP_LOC, DWP_STR_OFFSETS, DWP_RNGLISTS, DWP_NSECT };

struct dwp_contrib {
	uint64_t off, size; /* size 0: none */
};

/* A parsed .debug_cu_index: pointers into the section's bytes, which
 * must outlive it. */
struct dwp_index {
	uint32_t version; /* 2 (GNU, DWARF 4) or 5 */
	uint32_t ncols, nunits, nslots;
	const uint8_t *ids, *rows, *cols, *offs, *sizes;
};

/* Parse the .debug_cu_index in DATA[0..SIZE) (bounds-checked: the bytes
 * come from a file we did not write). 0, or -EINVAL when it is not an
 * index of version 2 or 5 that fits in SIZE. */
int dwp_index_parse(const uint8_t *data, size_t size, struct dwp_index *ix);
/* The contributions of the unit whose DWO id is ID, into OUT (indexed by
 * DWP_*; the sections the unit has none in get size 0). 0, or -ENOENT. */
int dwp_index_find(const struct dwp_index *ix, uint64_t id, struct dwp_contrib out[DWP_NSECT]);

/* Open the package at PATH. NULL with ERR filled when it cannot be opened
 * or has no unit index. Free with dwp_free; units read from it stay valid
 * after that. */
struct sd_dwp *dwp_open(const char *path, struct sd_error *err);
/* NULL does nothing. */
void dwp_free(struct sd_dwp *p);
/* The path it was opened by. */
const char *dwp_path(const struct sd_dwp *p);

/* The split unit of the skeleton unit SKEL (a unit of the program's own
 * DWARF, which must outlive the result), read from P, or NULL when P has
 * no unit of SKEL's DWO id (the id in the unit header in DWARF 5,
 * DW_AT_GNU_dwo_id in DWARF 4). The unit's DIEs are read by libdw from
 * an in-memory ELF file holding its contributions under .dwo section
 * names; addresses, which libdw cannot take from the unlinked skeleton,
 * are resolved by dwp_unit_ranges and dwp_unit_haspc. Free with
 * dwp_unit_free. */
struct dwp_unit *dwp_unit_open(struct sd_dwp *p, Dwarf_CU *skel);
/* NULL does nothing. DIEs of the unit die with it. */
void dwp_unit_free(struct dwp_unit *u);
/* The unit DIE of the split unit. */
Dwarf_Die dwp_unit_cudie(const struct dwp_unit *u);

/* Call FN for each address range of DIE (a DIE of U), in the order the
 * DWARF lists them; FN returns nonzero to stop. DW_AT_low_pc and
 * DW_AT_high_pc or DW_AT_ranges (.debug_ranges of the program from the
 * skeleton's DW_AT_GNU_ranges_base in DWARF 4, the unit's
 * .debug_rnglists.dwo in DWARF 5), indexed addresses through the
 * skeleton's DW_AT_addr_base, base addresses from the skeleton's
 * DW_AT_low_pc. Returns the number of ranges given, or -1 when the
 * attributes cannot be read. */
typedef int (*dwp_range_fn)(void *arg, uint64_t lo, uint64_t hi);
int dwp_unit_ranges(struct dwp_unit *u, Dwarf_Die *die, dwp_range_fn fn, void *arg);
/* 1 when one of DIE's ranges holds PC, 0 otherwise (as dwarf_haspc). */
int dwp_unit_haspc(struct dwp_unit *u, Dwarf_Die *die, uint64_t pc);

/* What a range list is read with (exposed for the fuzz target). */
struct dwp_rangectx {
	int version;	     /* of the split unit: < 5 .debug_ranges, else rnglists */
	uint8_t addr_size;   /* 4 or 8 */
	uint64_t base;	     /* the skeleton's base address */
	const uint8_t *addr; /* .debug_addr from the skeleton's addr base on */
	size_t addr_len;
	const uint8_t *lists; /* v4: .debug_ranges from the ranges base on;
			       * v5: the unit's .debug_rnglists.dwo */
	size_t lists_len;
};
/* Read the list at OFF of LISTS, calling FN for each range. Returns the
 * number of ranges given or -1 (bounds-checked). */
int dwp_rangelist(const struct dwp_rangectx *c, uint64_t off, dwp_range_fn fn, void *arg);
/* The offset of list IDX of a version 5 rnglists contribution (its
 * offset table), or -1. */
int64_t dwp_rnglistx(const struct dwp_rangectx *c, uint64_t idx);

#endif
