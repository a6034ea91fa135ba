// SPDX-License-Identifier: MIT
// What the unwinder checks in the target's machine code (unwind-code.c):
// each answer is read from the local image of the module at the address.
#ifndef SD_UNWIND_CODE_H
#define SD_UNWIND_CODE_H

#include <stdint.h>

struct sd_space;

/* Is PC the kernel's signal return trampoline? 1 or 0. */
int unwind_is_sigreturn(struct sd_space *t, uint64_t pc);
/* Does RA follow a call (with CHECK_CALL, the call instruction itself is
 * checked in a module's code; anonymous executable memory passes)? */
int unwind_after_call(struct sd_space *t, uint64_t ra, int check_call);
/* Is RA the return address a runtime plants at the top of a stack (a call
 * after a one-byte nop: Go's goexit)? */
int unwind_planted_return(struct sd_space *t, uint64_t ra);
/* Is PC right after (or at) a `syscall` instruction in a module's code? */
int unwind_at_syscall(struct sd_space *t, uint64_t pc);

#endif
