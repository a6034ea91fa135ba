// SPDX-License-Identifier: MIT
// The recorder: snapshots of one process on a schedule or when a condition
// fires (triggers.h), one file each plus a manifest, retention under a disk
// budget, following a restarted process. It prints nothing: what a person
// should hear comes through the callbacks of struct sd_recorder_io.
#ifndef SD_RECORDER_H
#define SD_RECORDER_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "sampler.h"
#include "snapshot.h"
#include "target.h"
#include "triggers.h"
#include "util.h"

/* What to record and how. Strings are borrowed for the recorder's life. */
struct sd_recorder_opts {
	const char *dir;	   /* where the snapshots and manifest.json go */
	uint64_t every_us;	   /* schedule, or how often conditions are checked */
	const char *every_text;	   /* as given, for the manifest and messages */
	uint64_t for_us;	   /* stop after this long (0: never) */
	long count;		   /* stop after this many snapshots (0: never) */
	uint64_t max_disk;	   /* bytes kept in dir at most (0: no limit) */
	const char *max_disk_text; /* as given */
	int compress;		   /* gzip each file */
	int follow;		   /* wait for a new process of the same name */
	int cmdline;		   /* keep the whole command line, not only argv[0] */
	int verbose;		   /* a note with the CPU cost of each snapshot */
	int burst;		   /* snapshots per firing of a condition */
	double cpu_budget;	   /* our CPU, % of one core (budget.h; 0: none) */
	struct sd_snap_opts snap;  /* how each snapshot is taken */
	struct sd_sampler_opts smo; /* and by which engine */
};

/* One snapshot written, for the caller's progress line. */
struct sd_recorder_saved {
	const char *file; /* name in the directory */
	double time;	  /* wall-clock time of the snapshot */
	size_t nthreads;
	uint64_t bytes;	    /* on disk */
	const char *reason; /* why it was taken */
	int partial;
};

/* How the recorder talks to its caller. Every member may be NULL. */
struct sd_recorder_io {
	/* A line for the person: progress, warnings (no trailing newline). */
	void (*note)(void *arg, const char *msg);
	/* A snapshot was written. */
	void (*saved)(void *arg, const struct sd_recorder_saved *s);
	void *arg;
	volatile sig_atomic_t *interrupted; /* set: stop at the next check */
	volatile sig_atomic_t *snap_now;    /* set: take a snapshot at once (reset here) */
	const sigset_t *wake;		    /* the signal mask while sleeping (ppoll) */
};

/* How a recording ended. */
enum sd_recorder_status {
	SD_REC_DONE = 0,    /* --count or --for reached */
	SD_REC_TARGET_GONE, /* the target exited (and was not followed) */
	SD_REC_FAILED,	    /* cannot attach, disk full...: what was written is intact */
	SD_REC_INTERRUPTED, /* *io.interrupted was set */
};

struct sd_recorder;

/* A recorder for OPTS with the conditions TRIG (moved in: TRIG is zeroed;
 * none for a plain schedule). Returns it; recorder_free releases it. */
struct sd_recorder *recorder_new(const struct sd_recorder_opts *opts, struct sd_triggers *trig,
				 const struct sd_recorder_io *io);

/* Open process PID and the directory: create it, lock it against a second
 * recorder, remove temporary files a killed run left, load or create the
 * manifest. Returns 0, or a negative errno with ERR saying what failed and
 * what to do. */
int recorder_open(struct sd_recorder *r, pid_t pid, struct sd_error *err);

/* The process being recorded (changes with follow), and its name. */
pid_t recorder_pid(const struct sd_recorder *r);
const char *recorder_comm(const struct sd_recorder *r);

/* Record until a stop condition; the manifest says how it ended. */
enum sd_recorder_status recorder_run(struct sd_recorder *r);

/* Close the directory and free R. NULL does nothing. */
void recorder_free(struct sd_recorder *r);

/* "1.2 MB", "12.5 KB", "512 bytes". */
void sd_human_bytes(char *buf, size_t n, uint64_t bytes);

#endif
