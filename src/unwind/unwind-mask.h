// SPDX-License-Identifier: MIT
// libunwind blocks every signal around each of its cache locks (two
// rt_sigprocmask calls per lock, several locks per unw_step). We unwind
// other processes from copies, and no signal handler of ours unwinds, so
// those calls are pure cost. This module points libunwind's own references
// to sigprocmask and pthread_sigmask (its GOT slots) at a function that
// skips them while the calling thread unwinds: no libc symbol is defined,
// and nobody else's calls (readline, libdw, sanitizers) are touched.
#ifndef SD_UNWIND_MASK_H
#define SD_UNWIND_MASK_H

/* Redirect libunwind's mask calls; once per process, later calls do
 * nothing. Returns the number of slots redirected (0 when libunwind has
 * none, e.g. a build without signal blocking), or a negative errno when a
 * slot could not be written (libunwind then masks as before). */
int unwind_mask_install(void);

/* While ON for the calling thread, libunwind's mask calls return at once
 * (reporting an empty old mask). Turn it on only around libunwind calls
 * that take and release their locks within the call (unw_init_remote,
 * unw_step), never across them. */
void unwind_mask_quiet(int on);

#endif
