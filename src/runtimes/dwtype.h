// SPDX-License-Identifier: MIT
// The typed reader, its DWARF half: globals, thread-local variables,
// constants, struct types, field offsets and sizes, arrays, found by name
// in one ELF file's DWARF (libdw), so that a language runtime's structures
// are read by the layout its own binary describes, never by offsets of ours.
#ifndef SD_DWTYPE_H
#define SD_DWTYPE_H

#include <stdint.h>

#include "util.h"

struct dwt;

/* What a type is, once typedefs and qualifiers are looked through. */
enum dwt_kind {
	DWT_NONE = 0,
	DWT_BASE,    /* integer, float, bool */
	DWT_POINTER,
	DWT_STRUCT,  /* struct, class, union */
	DWT_ARRAY,
	DWT_ENUM,
	DWT_OTHER,   /* function, subroutine type ... */
};

/* A type of the session: the DIE offset of the type itself (typedefs
 * resolved), its byte size (0 when DWARF gives none) and kind. Plain
 * values, valid as long as the session. */
struct dwt_type {
	uint64_t die;
	uint64_t size;
	enum dwt_kind kind;
	const char *name; /* as DWARF spells it, or "" (lives with the session) */
};

/* Open the DWARF of the ELF file open as FD (not taken: duplicated), named
 * NAME in messages, and index the names its compile units declare at the
 * top level (one pass over .debug_info). NULL with ERR when the file has
 * no DWARF or it cannot be read. */
struct dwt *dwt_open_fd(int fd, const char *name, struct sd_error *err);
/* The same for PATH. */
struct dwt *dwt_open(const char *path, struct sd_error *err);
/* NULL does nothing. */
void dwt_free(struct dwt *d);

/* The producer of the first compile unit that names one ("Go cmd/compile
 * go1.19.8", "GNU C11 12.2.0 ..."), or "" (lives with the session). */
const char *dwt_producer(const struct dwt *d);

/* The global variable NAME: its address in the file's own address space
 * (add the load bias) and its type. 0, or -ENOENT / -EINVAL with ERR
 * naming the variable. TYPE may be NULL. */
int dwt_global(struct dwt *d, const char *name, uint64_t *vaddr, struct dwt_type *type,
	       struct sd_error *err);
/* The function NAME of the file's symbol table (.symtab, else .dynsym):
 * [*LO, *HI) in the file's own address space (add the load bias). 0, or
 * -ENOENT when no function symbol of a size has that name. */
int dwt_function(struct dwt *d, const char *name, uint64_t *lo, uint64_t *hi);
/* The thread-local variable NAME: its offset in the module's TLS block
 * and its type. -ENOENT when there is none, -EINVAL when its location is
 * not a TLS one. */
int dwt_tls(struct dwt *d, const char *name, uint64_t *offset, struct dwt_type *type,
	    struct sd_error *err);
/* The module's TLS block (PT_TLS): its size and alignment; -ENOENT when it
 * has none. With the thread pointer TP (fs_base on x86-64) of a thread,
 * the executable's block starts at TP - round_up(size, align). */
int dwt_tls_block(const struct dwt *d, uint64_t *size, uint64_t *align);
/* The address of thread-local variable NAME of the executable for the
 * thread whose thread pointer is TP, load bias BIAS not needed (TLS is
 * relative to TP). */
int dwt_tls_address(struct dwt *d, const char *name, uint64_t tp, uint64_t *addr,
		    struct dwt_type *type, struct sd_error *err);

/* The constant NAME (DW_TAG_constant, or an enumerator): its value. */
int dwt_const(struct dwt *d, const char *name, int64_t *value, struct sd_error *err);

/* The type NAME (struct, typedef, base type ... as declared at the top
 * level of a compile unit; C: "struct foo" finds the struct tag foo). */
int dwt_type(struct dwt *d, const char *name, struct dwt_type *out, struct sd_error *err);

/* The member PATH of struct type T: "sched.pc" goes through embedded
 * structs (not through pointers). *OFF gets its offset from the start of
 * T, FTYPE (may be NULL) its type. -ENOENT with ERR naming T and the part
 * of PATH not found. */
int dwt_member(struct dwt *d, const struct dwt_type *t, const char *path, uint64_t *off,
	       struct dwt_type *ftype, struct sd_error *err);
/* Does T have member PATH? (1 or 0, no error) */
int dwt_has_member(struct dwt *d, const struct dwt_type *t, const char *path);

/* The type a pointer type points to. -ENOENT for void *. */
int dwt_pointee(struct dwt *d, const struct dwt_type *ptr, struct dwt_type *out,
		struct sd_error *err);
/* The element type and count of array type ARR (first dimension). */
int dwt_array(struct dwt *d, const struct dwt_type *arr, struct dwt_type *elem, uint64_t *count,
	      struct sd_error *err);

/* The value of enumerator NAME of enum type T. */
int dwt_enumerator(struct dwt *d, const struct dwt_type *t, const char *name, int64_t *value,
		   struct sd_error *err);

/* The type whose DIE is at offset DIE (typedefs peeled), for readers that
 * walk DIEs themselves (Rust enums' variant parts, template parameters). */
int dwt_type_die(struct dwt *d, uint64_t die, struct dwt_type *out);
/* The session's libdw handle (a Dwarf *), valid as long as the session. */
void *dwt_dwarf(struct dwt *d);

/* Counts of what the index holds (tests, -v). */
void dwt_stats(const struct dwt *d, size_t *vars, size_t *types, size_t *consts);

#endif
