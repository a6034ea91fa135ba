// SPDX-License-Identifier: MIT
// Tokio tasks: a Rust program's Tokio runtimes found from its threads'
// thread-local context (tokio::runtime::context::CONTEXT), every task
// walked through the runtime's owned-task list, each task's header,
// vtable and future read from the target's memory by the layout its DWARF
// describes (dwtype.h, tokio-layout.h), with its await chain decoded from
// rustc's state machines. Nothing of the runtime is stopped: an idle task
// is copied and its header read again, and copied again if it moved.
#ifndef SD_TOKIO_H
#define SD_TOKIO_H

#include "snapshot.h"

struct sd_space;
struct sd_tokioruntime;

/* Read the Tokio runtimes and tasks of S's process into S (tokio_read,
 * tokio_note, tokio). S's threads must be captured (a thread's registers,
 * when it was stopped, give its thread pointer; a thread named as Tokio's
 * workers are that was not is stopped alone for a moment to read it).
 * *RT holds what is learnt of the executable once per target (NULL at
 * first; free with tokioruntime_free). Nothing happens for a program with
 * no Tokio runtime that it can tell; without the debug info the reader
 * needs, S gets tokio_note naming what to rebuild with, and its threads
 * stay as they are. WORKERS_ONLY: the part a sampling run repeats
 * (profile, top), each thread's context only (the runtimes' ids, flavors,
 * workers, the task each polls, a task of the blocking pool included, and
 * its worker core's tick), no task read (ntasks 0), and no thread
 * stopped: without glibc's list of its threads, only those S stopped. */
void tokio_read(struct sd_tokioruntime **rt, struct sd_space *sp, struct sd_snapshot *s,
		int workers_only);
/* NULL does nothing. */
void tokioruntime_free(struct sd_tokioruntime *rt);

#endif
