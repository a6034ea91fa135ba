// SPDX-License-Identifier: MIT
// The size of the terminal a command writes to, for views that fit it.
#ifndef SD_TERMINAL_H
#define SD_TERMINAL_H

#include <stdio.h>

/* The width in columns of the terminal F is, or 0 when F is not one (a
 * pipe, a file): output there is never cut. */
int terminal_width(FILE *f);

#endif
