// SPDX-License-Identifier: MIT
// The table `threads` prints: one row of cells per thread (TID, name,
// state, wait, CPU%, wchan), columns as wide as their widest cell.
#ifndef SD_THREADS_TABLE_H
#define SD_THREADS_TABLE_H

#include "cmd.h"

/* One row; the strings are escaped already. */
struct cells {
	struct strbuf tid, name, state, wait, cpu, wchan;
	struct strbuf holds; /* what others wait on that it holds, or empty */
	int lock; /* a lock wait: coloured */
};

void threads_cells_init(struct cells *c);
void threads_cells_release(struct cells *c);
/* Print the table of C (N rows) under HEADER, then FOOTER (may be NULL);
 * lock waits coloured when CTX->color. */
void threads_print_table(struct cmd_ctx *ctx, const char *header, struct cells *c, size_t n,
			 const char *footer);

#endif
