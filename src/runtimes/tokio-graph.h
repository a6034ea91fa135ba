// SPDX-License-Identifier: MIT
// Locks among a Tokio runtime's tasks: which task holds the lock each
// task awaits (from the guards and permits their state machines keep),
// and the cycles of such waits, async deadlocks.
#ifndef SD_TOKIO_GRAPH_H
#define SD_TOKIO_GRAPH_H

#include "snapshot.h"

/* Fill each task's held_by (the task holding the lock its leaf waits for,
 * by the holds of RT's tasks) and RT's cycles (at most 64). */
void tokio_lock_graph(struct sd_tokio_rt *rt);

#endif
