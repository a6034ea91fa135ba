// SPDX-License-Identifier: MIT
// Saved snapshots: the versioned JSON file format (the dump JSON plus process
// metadata, modules with build-ids and lock analysis), written atomically and
// optionally gzip-compressed, and a strict loader that rebuilds a snapshot
// from such a file on any machine. Also the manifest of a recording.
#ifndef SD_SNAPIO_H
#define SD_SNAPIO_H

#include <stdint.h>
#include <sys/types.h>

#include "snapshot.h"
#include "util.h"

/* The "format" and "version" members of a saved snapshot. A loader reads
 * every version up to SNAPIO_VERSION and refuses newer ones; members it
 * does not know are ignored, so adding members does not bump the version. */
#define SNAPIO_FORMAT "stackdump-snapshot"
#define SNAPIO_VERSION 1
#define SNAPIO_MANIFEST_FORMAT "stackdump-recording"
#define SNAPIO_MANIFEST_VERSION 1
#define SNAPIO_MANIFEST_NAME "manifest.json"

/* Largest file (after decompression) the loader accepts. */
#define SNAPIO_MAX_BYTES (1024u * 1024u * 1024u)

/* What a saved file says besides the snapshot itself. On save the caller
 * fills what it knows (NULL and 0 are left out); on load snapio fills it.
 * Strings are borrowed on save; on load they point into the loaded
 * snapshot's pool and live as long as it. */
struct snapio_meta {
	const char *reason;   /* why it was taken: "every 1s", "SIGUSR1"... */
	const char *engine;   /* what captured it: "ptrace" or "perf" (NULL:
			       * not recorded, i.e. ptrace) */
	uint64_t seq;         /* 1-based index within a recording, 0 if none */
	pid_t ppid;
	long uid;             /* -1 when unknown */
	const char *cmdline;  /* argv[0], or with full_cmdline the arguments
			       * joined by spaces (escaped) */
	int full_cmdline;     /* snapio_meta_from_proc keeps every argument */
	const char *hostname; /* on save: NULL means this machine's */
	const char *kernel;   /* uname release */
	const char *machine;  /* uname machine, e.g. "x86_64" */
	const char *tool;     /* "stackdump 0.1.0" (filled on save) */
	int version;          /* on load: the file's format version (0: a
			       * plain `dump --format json` document) */
};

void snapio_meta_init(struct snapio_meta *m);

/* Fill ppid, uid and cmdline of M from /proc/PID while the process lives.
 * Strings are interned in S's pool. Missing facts are left unset. */
void snapio_meta_from_proc(struct snapio_meta *m, pid_t pid, struct sd_snapshot *s);

/* Serialize S (META may be NULL) through the JSON writer: compact on one
 * line, or with INDENT one space per level; a newline ends it. Returns a
 * heap string (*LEN its length). */
char *snapio_dumps(const struct sd_snapshot *s, const struct snapio_meta *meta, int indent,
		   size_t *len);

/* What snapio_dumps(S, META, 0) returns, written into SB (emptied first,
 * its memory reused). */
void snapio_dump_buf(struct strbuf *sb, const struct sd_snapshot *s,
		     const struct snapio_meta *meta);

/* Whether a saved thread keeps the arguments of syscall NR: only those
 * lock analysis reads (futex, restart_syscall, futex_waitv). */
int snapio_args_kept(long nr);

#define SNAPIO_GZIP 1
#define SNAPIO_NO_DIR_SYNC 2
/* Write LEN bytes of DATA to PATH atomically through safefile_put()
 * (safefile.h): to a new hidden temporary file in the same directory
 * (".NAME.tmp.PID.RANDOM"), fsync, rename over PATH, fsync the directory.
 * A folder another user could change, and a PATH that is a symbolic link,
 * a FIFO or another user's file, are refused; stdout ("-") and character
 * devices (/dev/null) are written through. FLAGS: SNAPIO_GZIP compresses
 * the bytes first; SNAPIO_NO_DIR_SYNC leaves the directory fsync to the
 * next write into it. The file is created with MODE (e.g. 0600). On any
 * error (ENOSPC included) the temporary file is removed, PATH is
 * untouched, ERR names PATH and the reason, and a negative errno is
 * returned. *WRITTEN (may be NULL) gets the file's size. */
int snapio_write_atomic(const char *path, const void *data, size_t len, int flags,
			unsigned mode, uint64_t *written, struct sd_error *err);

/* snapio_dumps + snapio_write_atomic (mode 0600). */
int snapio_save(const char *path, const struct sd_snapshot *s, const struct snapio_meta *meta,
		int compress, int indent, uint64_t *written, struct sd_error *err);

/* Gzip-compress a buffer into OUT (emptied first, its memory reused), or
 * decompress one. Decompression is bounded by MAX bytes and tells a
 * truncated stream from a corrupted one. NAME is used in messages. Both
 * return 0 or a negative errno with ERR. */
int snapio_gzip_buf(const void *in, size_t len, struct strbuf *out, struct sd_error *err);
int snapio_gunzip(const char *name, const void *in, size_t len, size_t max, char **out,
		  size_t *outlen, struct sd_error *err);

/* Read PATH whole (gzip is recognized by its magic bytes and
 * decompressed) into a NUL-terminated heap buffer. */
int snapio_read_file(const char *path, char **out, size_t *len, struct sd_error *err);

/* Rebuild a snapshot from the document TEXT (LEN bytes, need not be
 * NUL-terminated). NAME (the file name) starts every error message, which
 * names the place: "line 3 column 7" for JSON syntax, the member path
 * ("threads[2].frames[0].addr") for wrong content. A plain
 * `dump --format json` object (no "format") loads as version 0. Returns a
 * snapshot owned by the caller, or NULL with ERR; never aborts on bad
 * input. META (may be NULL) receives the metadata. */
struct sd_snapshot *snapio_parse(const char *name, const char *text, size_t len,
				 struct snapio_meta *meta, struct sd_error *err);

/* snapio_read_file + snapio_parse. */
struct sd_snapshot *snapio_load(const char *path, struct snapio_meta *meta,
				struct sd_error *err);

/* The default file name of a snapshot taken at wall time T within a
 * recording: "snap-20240131T142501.123Z.json" (UTC), ".json.gz" with
 * COMPRESS. Written into BUF. */
void snapio_file_name(char *buf, size_t size, double t, int compress);

/* Does NAME look like a snapshot file of a recording (snap-*.json[.gz])? */
int snapio_is_snapshot_name(const char *name);

/* Remove the temporary files (".*.tmp.*") an interrupted writer left in
 * DIR. Returns how many were removed. */
int snapio_clean_temp(const char *dir);

/* ---- the manifest of a recording (DIR/manifest.json) ----
 * {"format": "stackdump-recording", "version": 1, "tool", "started",
 *  "updated", "state": "recording"|"stopped", "target", "options",
 *  "snapshots": [{"file", "seq", "time", "pid", "threads", "bytes",
 *  "reason", "partial"}...], "dropped": {"count", "bytes", "last": [...]},
 *  "events": [{"time", "event", "detail"}...], "stop_reason"}
 * held as the structure below. Every string in it is a heap copy the
 * manifest owns (snapio_manifest_set replaces one); members of a loaded
 * file that it does not hold are not written back. */
struct snapio_manifest_snap {
	char *file; /* a plain name in the directory */
	uint64_t seq;
	double time;
	pid_t pid;
	uint64_t threads, bytes;
	char *reason;
	int partial;
};

struct snapio_manifest_event {
	double time;
	char *event;
	char *detail; /* or NULL (left out) */
};

struct snapio_manifest {
	long version;
	char *tool;
	double started, updated;
	char *state;       /* "recording" or "stopped" */
	char *stop_reason; /* NULL: left out */
	struct {
		pid_t pid; /* 0: not known yet, written {} */
		char *comm, *exe;
		int follow;
	} target;
	struct {
		int set;           /* 0: written {} */
		char *every, *when; /* NULL: null */
		int burst;         /* written with when */
		int compress;
		uint64_t max_disk; /* 0: null */
	} options;
	struct snapio_manifest_snap *snaps;
	size_t nsnaps, snapcap;
	uint64_t dropped, dropped_bytes;
	char **dropped_last; /* the last 20 dropped files */
	size_t ndropped_last, lastcap;
	struct snapio_manifest_event *events;
	size_t nevents, evcap;
};

/* A new manifest: this version and tool, started now, recording. */
void snapio_manifest_init(struct snapio_manifest *m);
void snapio_manifest_release(struct snapio_manifest *m);
/* Replace the string *FIELD of a manifest by a copy of S (may be NULL). */
void snapio_manifest_set(char **field, const char *s);
/* Append a copy of E to the snapshots; remove the last one again. */
void snapio_manifest_add_snap(struct snapio_manifest *m, const struct snapio_manifest_snap *e);
void snapio_manifest_pop_snap(struct snapio_manifest *m);
/* The oldest snapshot, of BYTES on disk, was deleted: count it as dropped
 * and remember its name among the last ones. */
void snapio_manifest_drop_first(struct snapio_manifest *m, uint64_t bytes);
/* Append an event at wall time T (DETAIL may be NULL). Past 1000 events,
 * the first ten and the latest are kept. */
void snapio_manifest_event(struct snapio_manifest *m, double t, const char *event,
			   const char *detail);

/* Write M atomically to DIR/manifest.json, one snapshot or event per line
 * so that it stays readable and diffable. *BYTES (may be NULL) gets its
 * size. */
int snapio_manifest_write(const char *dir, const struct snapio_manifest *m, uint64_t *bytes,
			  struct sd_error *err);

/* Load and check DIR/manifest.json into M (to release): the format, the
 * version, and that every snapshot entry names a plain file of DIR (no '/'
 * and no ".."). Returns 0, or a negative errno with ERR (-ENOENT when DIR
 * has no manifest), M then untouched. */
int snapio_manifest_load(const char *dir, struct snapio_manifest *m, struct sd_error *err);

/* The snapshot files of the recording in DIR, oldest first: from its
 * manifest when there is one (files it lists that are gone are skipped and
 * counted in *MISSING), else every snap-*.json[.gz] by name. *NAMES is a
 * heap array of heap paths ("DIR/snap-..."), free with snapio_names_free().
 * Returns 0 or a negative errno with ERR (a damaged manifest, an unreadable
 * directory). */
int snapio_list_dir(const char *dir, char ***names, size_t *n, size_t *missing,
		    struct sd_error *err);
void snapio_names_free(char **names, size_t n);

#endif
