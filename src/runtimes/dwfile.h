// SPDX-License-Identifier: MIT
// The DWARF of a module for the typed reader (dwtype.h): its file's own,
// else its separate debug file, found as frames' are (debugfind.h: by
// build-id under /usr/lib/debug/.build-id, else by .gnu_debuglink).
#ifndef SD_DWFILE_H
#define SD_DWFILE_H

struct dwt;
struct sd_elf;
struct sd_error;

/* The DWARF of the separate debug file of the ELF file E (named NAME in
 * messages): NULL with ERR when none is found or it cannot be read.
 * *WHERE (may be NULL) gets the debug file's path (heap, the caller's). */
struct dwt *dwfile_open_debug(const struct sd_elf *e, const char *name, char **where,
			      struct sd_error *err);

#endif
