// SPDX-License-Identifier: MIT
// The typed reader, its memory half: values read from a target's memory
// (the live process through process_vm_readv, or a captured copy) through
// one abstract reader, each range checked against the mappings, each
// count and length bounded; and the composite values a runtime's types
// describe in DWARF (dwtype.h): integers and pointers by field path,
// strings, slices and array elements.
#ifndef SD_RTMEM_H
#define SD_RTMEM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dwtype.h"
#include "procfs.h"
#include "util.h"

/* Where memory comes from: READ copies LEN bytes at ADDR into BUF and
 * returns how many it copied (short or negative: not all). MAPS, when
 * not NULL, must hold every byte read in a readable mapping (checked
 * before READ is asked). The counters say what it cost. */
struct rtmem {
	ssize_t (*read)(void *arg, uint64_t addr, void *buf, size_t len);
	void *arg;
	const struct sd_maps *maps;
	uint64_t reads, bytes;
	/* rtmem_buf_init: a captured copy */
	uint64_t base;
	const uint8_t *copy;
	size_t copy_len;
	pid_t pid;
	/* The live process's maps read again on a miss (owned; MAPS then
	 * points here), and how many times. */
	struct sd_maps fresh;
	unsigned rereads;
};

/* Read the live process PID (checked against MAPS, which may be NULL). */
void rtmem_pid_init(struct rtmem *m, pid_t pid, const struct sd_maps *maps);
struct sd_space;
/* Read the memory of SP: its core file's when it is one, else the live
 * process's (checked against SP's maps). */
void rtmem_space_init(struct rtmem *m, const struct sd_space *sp);
/* Read LEN bytes copied from address BASE (not owned). */
void rtmem_buf_init(struct rtmem *m, uint64_t base, const void *copy, size_t len);
/* Free what M read for itself (the maps read again); M is not used after. */
void rtmem_release(struct rtmem *m);

/* Is [ADDR, ADDR + LEN) readable by M's maps (always, without maps)? */
int rtmem_mapped(const struct rtmem *m, uint64_t addr, size_t len);

/* Read LEN bytes at ADDR; 0, or -EFAULT with ERR naming WHAT (may be
 * NULL: "memory") and the address. */
int rtmem_read(struct rtmem *m, uint64_t addr, void *buf, size_t len, const char *what,
	       struct sd_error *err);
/* One range of a batch read: LEN bytes at ADDR into BUF; OK is set by
 * rtmem_readv (1 read in full, 0 not mapped or not read in full). */
struct rtmem_iov {
	uint64_t addr;
	void *buf;
	size_t len;
	int ok;
};
/* Read the N ranges V as rtmem_read reads each one (checked against the
 * maps first), in as few system calls as the source allows: for a live
 * process one process_vm_readv per RTMEM_IOV_MAX ranges, a range that is
 * cut short or fails costing the ones after it one more call. A range
 * that fails leaves the others as read. Returns how many read in full. */
#define RTMEM_IOV_MAX 1024
size_t rtmem_readv(struct rtmem *m, struct rtmem_iov *v, size_t n);
/* An unsigned integer of SIZE bytes (1, 2, 4, 8) at ADDR. */
int rtmem_uint(struct rtmem *m, uint64_t addr, size_t size, uint64_t *v, const char *what,
	       struct sd_error *err);

/* An unsigned integer (or pointer) field PATH of a struct of type T at
 * ADDR, its size from DWARF. */
int rtmem_field(struct rtmem *m, struct dwt *d, uint64_t addr, const struct dwt_type *t,
		const char *path, uint64_t *v, struct sd_error *err);
/* The same from a copy BYTES (LEN bytes) of the struct already read:
 * no read of the target, the field checked to lie within the copy. */
int rtmem_field_in(struct dwt *d, const void *bytes, size_t len, const struct dwt_type *t,
		   const char *path, uint64_t *v, struct sd_error *err);

/* A string value of type T at ADDR (a struct of a data pointer and a
 * length: Go's string {str, len}, Rust's &str {data_ptr, length}): at most
 * MAX bytes of it (longer ones are cut, *CUT set if CUT is not NULL) into
 * a heap string *OUT, NUL-terminated. */
int rtmem_string(struct rtmem *m, struct dwt *d, uint64_t addr, const struct dwt_type *t,
		 size_t max, char **out, int *cut, struct sd_error *err);
/* A slice value of type T at ADDR (Go's {array, len, cap}): the address
 * of its elements and their count, refused past MAX elements; *ELEM its
 * element type (from the array pointer's type, may be NULL). */
int rtmem_slice(struct rtmem *m, struct dwt *d, uint64_t addr, const struct dwt_type *t,
		uint64_t max, uint64_t *ptr, uint64_t *len, struct dwt_type *elem,
		struct sd_error *err);

#endif
