// SPDX-License-Identifier: MIT
// Call frame information from .debug_frame (compressed or not): an index of
// its FDEs by address and the interpreter that gives the unwind rules at a
// pc. For code that .eh_frame does not cover: Go binaries, some assembly,
// code of toolchains that emit only .debug_frame.
#ifndef SD_DWCFI_H
#define SD_DWCFI_H

#include <stddef.h>
#include <stdint.h>

struct sd_dwcfi;

/* DWARF register numbers of x86-64 tracked by the rules: 0-15 the general
 * registers (6 is rbp, 7 is rsp), 16 the return address. */
enum { DWCFI_NREGS = 17, DWCFI_RBP = 6, DWCFI_RSP = 7, DWCFI_RA = 16 };

enum dwcfi_rule {
	DWCFI_SAME = 0,	  /* unchanged in the caller (or no rule given) */
	DWCFI_UNDEF,	  /* not recoverable; for the return address: outermost */
	DWCFI_OFFSET,	  /* saved at CFA + off */
	DWCFI_VAL_OFFSET, /* the value is CFA + off */
	DWCFI_REGISTER,	  /* the value is in register reg */
};

struct dwcfi_row {
	int cfa_reg; /* the CFA is cfa_reg + cfa_off */
	int64_t cfa_off;
	struct {
		enum dwcfi_rule rule;
		int64_t off;
		int reg;
	} r[DWCFI_NREGS];
};

/* The .debug_frame of the ELF image DATA[0..SIZE) (bounds-checked: the
 * bytes come from the target's files), or NULL when it has none or it
 * cannot be read. Free with dwcfi_free. */
struct sd_dwcfi *dwcfi_from_elf(const uint8_t *data, size_t size);
/* NULL does nothing. */
void dwcfi_free(struct sd_dwcfi *c);

/* The rules at file address PC. 0 and *ROW, -ENOENT when no FDE covers
 * PC, -EINVAL when its instructions are not understood (e.g. DWARF
 * expressions). */
int dwcfi_row_at(const struct sd_dwcfi *c, uint64_t pc, struct dwcfi_row *row);

/* Number of FDEs indexed. */
size_t dwcfi_count(const struct sd_dwcfi *c);

#endif
