// SPDX-License-Identifier: MIT
// Data-symbol lookups without libdwfl's scan: the symbols of one module
// sorted once by address, answered by binary search with the choice
// dwfl_module_addrinfo would make (the lock view asks for the symbol of
// every lock and condvar waited on, at every sample).
#ifndef SD_SYMCACHE_H
#define SD_SYMCACHE_H

#include <stddef.h>
#include <stdint.h>

struct Dwfl_Module;
struct sd_datasyms;

/* The index of DM's symbols (its .symtab, or .dynsym, or the separate
 * debug file's, as libdwfl finds them), built by one pass over them. Never
 * NULL; a module without symbols gives an empty index. The names are
 * libdwfl's: they live as long as DM. */
struct sd_datasyms *datasyms_new(struct Dwfl_Module *dm);
/* NULL does nothing. */
void datasyms_free(struct sd_datasyms *d);

enum {
	DATASYMS_ASK = -1,  /* undecided (a sizeless label may win): ask libdwfl */
	DATASYMS_NONE = 0,  /* libdwfl would find no symbol */
	DATASYMS_FOUND = 1, /* *NAME, *OFF and *TYPE are what libdwfl would give */
};

/* The symbol dwfl_module_addrinfo would name for ADDR (runtime address):
 * the symbol holding it, globals before locals, the closest start, then
 * the stronger binding, as libdwfl chooses. *TYPE is its ELF type (the
 * caller tells data from functions). Sizeless symbols (assembly labels)
 * are left to libdwfl: DATASYMS_ASK when one might be the answer. */
int datasyms_lookup(const struct sd_datasyms *d, uint64_t addr, const char **name,
		    uint64_t *off, int *type);

/* Symbols indexed (for tests and -v). */
size_t datasyms_count(const struct sd_datasyms *d);

/* A data address's answer, kept by (ELF image, file-relative address): a
 * lock word or a condvar is named again at every sample. */
struct sd_dataslot {
	const void *elf;
	uint64_t addr;
	const char *name; /* the caller's string (NULL: no symbol) */
	uint64_t off;
};
struct hashmap;
/* The slot of (ELF, ADDR) in MAP (a hashmap of struct sd_dataslot): the
 * one filled before (*FOUND 1), or a new one with its key set and no
 * answer yet (*FOUND 0), valid until the next call. */
struct sd_dataslot *dataslot_get(struct hashmap *map, const void *elf, uint64_t addr, int *found);

#endif
