// SPDX-License-Identifier: MIT
// Holders of the locks a snapshot's threads wait on, for the views that
// show them first (top, threads).
#ifndef SD_HOLDERS_H
#define SD_HOLDERS_H

#include "snapshot.h"

/* A thread holding a lock others in the snapshot wait on. */
struct sd_holder {
	pid_t tid;
	enum sd_wait_kind kind; /* the kind the waiters wait with */
	uint64_t address;
	const char *symbol;     /* the snapshot's pool string, or NULL */
	size_t nwaiters;
};

/* The owner of the normal mutex at ADDR of live process PID that a thread
 * waits on with futex op OP and expected value VAL (its /proc syscall
 * arguments), read now from the mutex's owner field; 0 when the wait is
 * not a normal mutex's, the read fails or no owner is recorded. Racy by
 * nature (the target runs): callers check the owner is one of the
 * process's threads. */
pid_t holders_live_mutex_owner(pid_t pid, uint64_t addr, uint64_t op, uint64_t val);

/* The holders of the locks S's threads wait on (conditions and joins
 * left out): each waiter's recorded owner, else, for a mutex wait of live
 * process PID (0: none, e.g. a loaded snapshot), holders_live_mutex_owner.
 * Only owners that are threads of S count. A heap array (free it) in
 * *OUT, most waiters first; returns its length. */
size_t holders_of(pid_t pid, const struct sd_snapshot *s, struct sd_holder **out);
/* The entry of TID in V (N entries), or NULL. */
const struct sd_holder *holders_find(const struct sd_holder *v, size_t n, pid_t tid);

#endif
