// SPDX-License-Identifier: MIT
// What the unwinder checks in the target's machine code: a return address
// after a call, the signal return trampoline, a runtime's planted return,
// a pc at a system call. Read from the local images of the modules.
#include "unwind-code.h"

#include <elf.h>
#include <string.h>

#include "space.h"

/* Is PC the kernel's signal return trampoline (__restore_rt: mov $15,%rax;
 * syscall)? The return address into it is its first byte, so neither it
 * nor the frame the signal interrupted may be looked up at pc - 1. */
int unwind_is_sigreturn(struct sd_space *t, uint64_t pc)
{
	static const uint8_t code[9] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
	uint8_t buf[9];
	struct sd_tmod *m = space_module_at(t, pc);
	if (!m || !m->elf || elfcache_read(m->elf, pc - m->bias, buf, sizeof(buf)) < 0)
		return 0;
	return !memcmp(buf, code, sizeof(buf));
}

/* Does RA follow a call instruction in executable code? A frame pointer
 * of code that uses rbp as data (hand-written assembly such as Go's
 * crypto) points at anything, and what it gives as a return address then
 * names a function that is not a caller. With CHECK_CALL, code of a module
 * is checked for the call (E8 rel32, or FF /2 with its ModRM forms, with
 * or without REX); otherwise, and in anonymous memory (JIT code), RA need
 * only be executable. */
int unwind_after_call(struct sd_space *t, uint64_t ra, int check_call)
{
	struct sd_tmod *m = space_module_at(t, ra - 1);
	if (!m || !m->elf) {
		const struct sd_map *mp = procfs_maps_find(&t->maps, ra - 1);
		return mp && mp->perms[2] == 'x';
	}
	const struct sd_load *l = elfcache_load_at(m->elf, ra - 1 - m->bias);
	if (!l || !(l->flags & PF_X))
		return 0;
	if (!check_call)
		return 1;
	uint8_t b[7];
	if (ra - m->bias < 7 || elfcache_read(m->elf, ra - m->bias - 7, b, sizeof(b)) < 0)
		return 0;
	if (b[2] == 0xe8)
		return 1;
	for (int len = 2; len <= 7; len++) {
		const uint8_t *p = b + 7 - len;
		int n = (p[0] & 0xf0) == 0x40 && len >= 3 ? 1 : 0;
		if (p[n] != 0xff)
			continue;
		uint8_t modrm = p[n + 1];
		if (((modrm >> 3) & 7) != 2)
			continue;
		int mod = modrm >> 6, rm = modrm & 7;
		n += 2;
		if (mod != 3 && rm == 4) {
			if (n >= len)
				continue;
			if (mod == 0 && (p[n] & 7) == 5)
				n += 4;
			n++;
		} else if (mod == 0 && rm == 5) {
			n += 4;
		}
		if (mod == 1)
			n += 1;
		else if (mod == 2)
			n += 4;
		if (n == len)
			return 1;
	}
	return 0;
}

/* A return address a runtime plants at the top of a stack it starts: a
 * call to its exit routine, right after a one-byte nop, so that the
 * planted address minus one is still inside the stub (Go's goexit). */
int unwind_planted_return(struct sd_space *t, uint64_t ra)
{
	struct sd_tmod *m = space_module_at(t, ra);
	uint8_t b[2];
	return m && m->elf && elfcache_read(m->elf, ra - 1 - m->bias, b, 2) == 0 && b[0] == 0x90 &&
	       b[1] == 0xe8;
}

/* Is PC right after (or, for a system call the kernel will restart, at) a
 * `syscall` instruction in a module's code? */
int unwind_at_syscall(struct sd_space *t, uint64_t pc)
{
	struct sd_tmod *m = space_module_at(t, pc - 2);
	uint8_t b[4];
	if (!m || !m->elf || pc - m->bias < 2 ||
	    elfcache_read(m->elf, pc - 2 - m->bias, b, sizeof(b)) < 0)
		return 0;
	return (b[0] == 0x0f && b[1] == 0x05) || (b[2] == 0x0f && b[3] == 0x05);
}
