// SPDX-License-Identifier: MIT
// The recorder: snapshots of one process on a schedule or when a condition
// fires, each written to a temporary name and renamed, listed in a
// manifest that is rewritten atomically after each one, so that nothing is
// ever left half-written and the recording can be read later, elsewhere.
// Retention drops the oldest snapshots under a disk budget; with follow, a
// restarted process of the same name is picked up.
#include "recorder.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "budget.h"
#include "procfs.h"
#include "safefile.h"
#include "snapio.h"
#include "version.h"

struct sd_recorder {
	struct sd_recorder_io io;
	struct strbuf out, zout; /* the snapshot being written, reused */
	const char *dir;
	uint64_t every_us, for_us, max_disk;
	long count;
	int compress, follow, verbose, burst, cmdline;
	/* Who --follow may move on to: the same user running the same
	 * executable (device and inode), as the first target. */
	uid_t ident_uid;
	dev_t exe_dev;
	ino_t exe_ino;
	int have_ident;
	pid_t refused_pid; /* the last candidate refused, said once */
	const char *every_text, *max_disk_text;
	struct sd_triggers trig;
	struct sd_snap_opts snap;
	struct sd_sampler_opts smo;
	double cpu_budget;
	struct sd_budget budget; /* over it, the schedule is stretched */
	struct sd_sampler *smp; /* takes the snapshots of t */
	const struct sd_target *smp_t;
	int said_fallback;

	struct sd_target *t;
	pid_t pid;
	char name[64]; /* comm of the target, for follow */
	int lockfd;

	struct snapio_manifest man;
	int man_loaded; /* man holds something to release */
	uint64_t man_bytes, disk_bytes;
	long taken;
	uint64_t bytes_written;
	uint64_t seq;
	int warned_big;

	const char *stop_why;
	enum sd_recorder_status status;
};

static void note(struct sd_recorder *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct sd_recorder *r, const char *fmt, ...)
{
	if (!r->io.note)
		return;
	struct strbuf sb;
	strbuf_init(&sb);
	va_list ap;
	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	r->io.note(r->io.arg, sb.buf);
	strbuf_release(&sb);
}

static int stopping(const struct sd_recorder *r)
{
	return r->io.interrupted && *r->io.interrupted;
}

/* "name" of a process or thread, escaped for the terminal. */
static const char *esc(struct strbuf *sb, const char *s)
{
	strbuf_init(sb);
	strbuf_add_escaped(sb, s ? s : "");
	return sb->buf;
}

void sd_human_bytes(char *buf, size_t n, uint64_t b)
{
	if (b >= 1ull << 20)
		snprintf(buf, n, "%.1f MB", (double)b / (1 << 20));
	else if (b >= 10ull << 10)
		snprintf(buf, n, "%.1f KB", (double)b / 1024);
	else
		snprintf(buf, n, "%llu bytes", (unsigned long long)b);
}

/* ---- the manifest ----------------------------------------------------- */

static void man_event(struct sd_recorder *r, const char *event, const char *detail)
{
	snapio_manifest_event(&r->man, sd_wall_time(), event, detail);
}

static void man_target(struct sd_recorder *r)
{
	r->man.target.pid = r->pid;
	snapio_manifest_set(&r->man.target.comm, r->name);
	snapio_manifest_set(&r->man.target.exe, r->t ? r->t->info.exe : NULL);
	r->man.target.follow = r->follow;
}

static int man_write(struct sd_recorder *r, struct sd_error *err)
{
	r->man.updated = sd_wall_time();
	uint64_t b = 0;
	int rc = snapio_manifest_write(r->dir, &r->man, &b, err);
	if (rc == 0)
		r->man_bytes = b;
	return rc;
}

static int man_open(struct sd_recorder *r, struct sd_error *errp)
{
	struct sd_error err = {0};
	struct snapio_manifest *m = &r->man;
	int rc = snapio_manifest_load(r->dir, m, &err);
	if (rc < 0 && err.code != ENOENT)
		return sd_error_set(errp, err.code ? err.code : EINVAL,
				    "%s (remove it, or record into another directory with --out)",
				    err.msg);
	r->man_loaded = 1;
	if (rc == 0) {
		/* Count what is really on disk, for --max-disk. */
		for (size_t i = 0; i < m->nsnaps; i++) {
			char path[4096];
			snprintf(path, sizeof(path), "%s/%s", r->dir, m->snaps[i].file);
			struct stat st;
			if (stat(path, &st) == 0)
				r->disk_bytes += (uint64_t)st.st_size;
			if (m->snaps[i].seq > r->seq)
				r->seq = m->snaps[i].seq;
		}
		note(r, "appending to the recording in %s (%zu snapshots so far)", r->dir,
		     m->nsnaps);
		man_event(r, "resumed", NULL);
	} else {
		snapio_manifest_init(m);
		man_event(r, "started", NULL);
	}
	snapio_manifest_set(&m->state, "recording");
	snapio_manifest_set(&m->stop_reason, NULL);
	m->options.set = 1;
	snapio_manifest_set(&m->options.every, r->every_text);
	snapio_manifest_set(&m->options.when, NULL);
	if (r->trig.n) {
		struct strbuf sb;
		strbuf_init(&sb);
		triggers_describe(&r->trig, &sb);
		snapio_manifest_set(&m->options.when, sb.buf);
		strbuf_release(&sb);
		m->options.burst = r->burst;
	}
	m->options.compress = r->compress;
	m->options.max_disk = r->max_disk;
	return 0;
}

/* Drop the oldest snapshot of the recording to stay under --max-disk. */
static void drop_oldest(struct sd_recorder *r)
{
	const char *file = r->man.snaps[0].file;
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", r->dir, file);
	struct stat st;
	uint64_t sz = stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
	if (unlink(path) < 0 && errno != ENOENT)
		note(r, "cannot remove %s: %s", path, sd_strerror(errno));
	note(r, "dropped the oldest snapshot %s (--max-disk %s reached)", file, r->max_disk_text);
	r->disk_bytes = r->disk_bytes > sz ? r->disk_bytes - sz : 0;
	snapio_manifest_drop_first(&r->man, sz);
}

/* ---- cheap looks at /proc ---------------------------------------------- */

static int proc_alive(pid_t pid)
{
	char st = 0;
	if (procfs_proc_stat(pid, &st, NULL, NULL, NULL, NULL) < 0)
		return 0;
	return st && st != 'Z' && st != 'X';
}

/* ---- snapshots ---------------------------------------------------------- */

/* After a snapshot of ours: the stuck candidates' counts move on. */
static void stuck_rebaseline(struct sd_recorder *r)
{
	if (!r->trig.nstuck)
		return;
	struct sd_tobs *v;
	size_t n = procfs_observe(r->pid, 1, &v);
	triggers_rebaseline(&r->trig, v, n);
	free(v);
}

static void drop_sampler(struct sd_recorder *r)
{
	sampler_free(r->smp);
	r->smp = NULL;
	r->smp_t = NULL;
}

/* A snapshot of r->t through its sampler (made again for a new target). */
static struct sd_snapshot *rec_snapshot(struct sd_recorder *r, struct sd_error *err)
{
	if (!r->smp || r->smp_t != r->t) {
		drop_sampler(r);
		r->smp = sampler_new(r->t, &r->snap, &r->smo, err);
		if (!r->smp)
			return NULL;
		r->smp_t = r->t;
		if (sampler_fallback(r->smp) && !r->said_fallback) {
			note(r, "perf engine not available, recording with ptrace: %s",
			     sampler_fallback(r->smp));
			r->said_fallback = 1;
		}
	}
	return sampler_take(r->smp, err);
}

/* Take a snapshot without saving it (a trigger's confirmation). NULL after
 * a note when it failed. */
static struct sd_snapshot *probe(struct sd_recorder *r)
{
	struct sd_error err = {0};
	if (r->stop_why)
		return NULL;
	struct sd_snapshot *s = rec_snapshot(r, &err);
	if (!s && proc_alive(r->pid)) {
		note(r, "snapshot failed: %s", err.msg);
		if (err.code == EPERM || err.code == EBUSY || err.code == EINVAL) {
			r->stop_why = "cannot take snapshots";
			r->status = SD_REC_FAILED;
		}
	}
	stuck_rebaseline(r);
	return s;
}

/* Make the file name of a new snapshot, unique in the directory. */
static void new_name(struct sd_recorder *r, double t, char *buf, size_t n)
{
	snapio_file_name(buf, n, t, r->compress);
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", r->dir, buf);
	if (access(path, F_OK) < 0)
		return;
	char base[200];
	snprintf(base, sizeof(base), "%.150s", buf);
	char *dot = strstr(base, ".json");
	if (dot)
		*dot = '\0';
	for (int i = 2; i < 1000; i++) {
		snprintf(buf, n, "%.150s-%d.json%s", base, i, r->compress ? ".gz" : "");
		snprintf(path, sizeof(path), "%s/%s", r->dir, buf);
		if (access(path, F_OK) < 0)
			return;
	}
}

/* Save snapshot S (taken now, or PRE given) with REASON. Returns 0, 1 when
 * the target is gone, -1 on a fatal error (r->stop_why set). */
/* CPU time this process used, in milliseconds. */
static double cpu_ms(void)
{
	return sd_cpu_seconds() * 1e3;
}

static int take(struct sd_recorder *r, const char *reason, struct sd_snapshot *pre)
{
	double c0 = cpu_ms(), c1 = 0, c2 = 0, c3 = 0;
	struct sd_snapshot *s = pre;
	if (!s) {
		struct sd_error err = {0};
		s = rec_snapshot(r, &err);
		if (!s) {
			if (err.code == ESRCH || !proc_alive(r->pid))
				return 1;
			note(r, "snapshot failed: %s", err.msg);
			if (err.code == EPERM || err.code == EBUSY || err.code == EINVAL) {
				r->stop_why = "cannot take snapshots";
				r->status = SD_REC_FAILED;
				return -1;
			}
			return 0; /* try again at the next tick */
		}
		stuck_rebaseline(r);
	}
	struct snapio_meta m;
	snapio_meta_init(&m);
	m.reason = reason;
	m.seq = ++r->seq;
	m.engine = r->smp ? sd_engine_name(sampler_engine(r->smp)) : NULL;
	if (r->t) {
		m.ppid = r->t->info.ppid;
		m.uid = (long)r->t->info.uid;
	}
	c1 = cpu_ms();
	m.full_cmdline = r->cmdline;
	snapio_meta_from_proc(&m, r->pid, s);
	snapio_dump_buf(&r->out, s, &m);
	size_t len = r->out.len;
	c2 = cpu_ms();
	char *data = r->out.buf;
	struct sd_error err = {0};
	if (r->compress) {
		if (snapio_gzip_buf(r->out.buf, len, &r->zout, &err) < 0) {
			note(r, "%s", err.msg);
			snapshot_free(s);
			r->stop_why = "compression failed";
			r->status = SD_REC_FAILED;
			return -1;
		}
		data = r->zout.buf;
		len = r->zout.len;
	}
	char name[256], path[4096];
	new_name(r, s->time, name, sizeof(name));
	snprintf(path, sizeof(path), "%s/%s", r->dir, name);

	if (r->max_disk) {
		/* Room for this file and the manifest that will list it. */
		uint64_t need = len + r->man_bytes + 512;
		while (r->man.nsnaps && r->disk_bytes + need > r->max_disk)
			drop_oldest(r);
		if (need > r->max_disk && !r->warned_big) {
			char a[32];
			sd_human_bytes(a, sizeof(a), len);
			note(r,
			     "one snapshot (%s) is larger than --max-disk %s: keeping only the "
			     "newest",
			     a, r->max_disk_text);
			r->warned_big = 1;
		}
	}
	uint64_t written = 0;
	c3 = cpu_ms();
	/* The manifest written next syncs the directory for both renames. */
	int wr = snapio_write_atomic(path, data, len, SNAPIO_NO_DIR_SYNC, 0600, &written, &err);
	if (wr < 0) {
		snapshot_free(s);
		r->seq--;
		note(r, "%s; stopping (the %zu snapshots already in %s are intact)", err.msg,
		     r->man.nsnaps, r->dir);
		r->stop_why = wr == -ENOSPC || wr == -EDQUOT ? "disk full" : "cannot write";
		r->status = SD_REC_FAILED;
		return -1;
	}
	struct snapio_manifest_snap e = {
	    .file = name,
	    .seq = m.seq,
	    .time = s->time,
	    .pid = s->pid,
	    .threads = s->nthreads,
	    .bytes = written,
	    .reason = (char *)reason,
	    .partial = s->partial,
	};
	snapio_manifest_add_snap(&r->man, &e);
	if (man_write(r, &err) < 0) {
		/* Keep the directory consistent: a snapshot the manifest does
		 * not list is removed. */
		unlink(path);
		snapio_manifest_pop_snap(&r->man);
		snapshot_free(s);
		note(r, "%s; stopping (the %zu snapshots already in %s are intact)", err.msg,
		     r->man.nsnaps, r->dir);
		r->stop_why =
		    err.code == ENOSPC || err.code == EDQUOT ? "disk full" : "cannot write";
		r->status = SD_REC_FAILED;
		return -1;
	}
	if (r->verbose)
		note(r,
		     "%s: CPU %.1f ms to take it (pause %.2f ms, capture %.1f, unwind %.1f, "
		     "symbolize %.1f ms wall), %.1f ms to serialize, %.1f ms to compress, %.1f ms "
		     "to write it and the manifest",
		     name, c1 - c0, (double)s->pause_us / 1e3, (double)s->capture_us / 1e3,
		     (double)s->unwind_us / 1e3, (double)s->symbolize_us / 1e3, c2 - c1,
		     r->compress ? c3 - c2 : 0.0, cpu_ms() - c3);
	r->disk_bytes += written;
	r->bytes_written += written;
	r->taken++;
	if (r->io.saved) {
		struct sd_recorder_saved sv = {.file = name,
					       .time = s->time,
					       .nthreads = s->nthreads,
					       .bytes = written,
					       .reason = reason,
					       .partial = s->partial};
		r->io.saved(r->io.arg, &sv);
	}
	snapshot_free(s);
	return 0;
}

/* ---- triggers ----------------------------------------------------------- */

static struct sd_snapshot *probe_cb(void *arg)
{
	return probe(arg);
}

/* Observe the process and evaluate every condition once. Returns 1 to
 * fire, with REASON and maybe a confirming snapshot in *SNAP. */
static int check_triggers(struct sd_recorder *r, struct strbuf *reason, struct sd_snapshot **snap)
{
	struct sd_observation obs = {.now_us = sd_now_us(),
				     .clk_tck = (double)sysconf(_SC_CLK_TCK)};
	struct sd_tobs *v = NULL;
	if (triggers_has(&r->trig, SD_TRIG_PARKED) || triggers_has(&r->trig, SD_TRIG_STUCK) ||
	    triggers_has(&r->trig, SD_TRIG_DEADLOCK))
		obs.nthreads = procfs_observe(r->pid, triggers_has(&r->trig, SD_TRIG_STUCK), &v);
	obs.threads = v;
	if (triggers_has(&r->trig, SD_TRIG_CPU))
		obs.have_cpu = procfs_cpu_ticks(r->pid, &obs.cpu_ticks) == 0;
	int fire = triggers_check(&r->trig, &obs, probe_cb, r, reason, snap);
	free(v);
	return fire;
}

/* ---- the loop ----------------------------------------------------------- */

/* Sleep until the monotonic time DEADLINE (us) or a signal. */
static void sleep_until(uint64_t deadline, const sigset_t *unblocked)
{
	uint64_t now = sd_now_us();
	if (deadline <= now)
		return;
	uint64_t d = deadline - now;
	struct timespec ts = {(time_t)(d / 1000000), (long)(d % 1000000) * 1000};
	ppoll(NULL, 0, &ts, unblocked);
}

/* The user process PID runs as and its executable's device and inode. */
static int proc_ident(pid_t pid, uid_t *uid, dev_t *dev, ino_t *ino)
{
	char path[64];
	struct stat st;
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (stat(path, &st) < 0)
		return -1;
	*uid = st.st_uid;
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	if (stat(path, &st) < 0)
		return -1;
	*dev = st.st_dev;
	*ino = st.st_ino;
	return 0;
}

/* Whether --follow may take PID: the same user and the same executable
 * as the process first recorded. Any local user can start a process of
 * the same name; following it would let them feed stackdump its files. */
static int follow_ok(struct sd_recorder *r, pid_t pid)
{
	uid_t uid;
	dev_t dev;
	ino_t ino;
	const char *why = NULL;
	if (!r->have_ident || proc_ident(pid, &uid, &dev, &ino) < 0)
		why = "its user and executable cannot be read";
	else if (uid != r->ident_uid)
		why = "it runs as another user";
	else if (dev != r->exe_dev || ino != r->exe_ino)
		why = "it runs another executable";
	if (!why)
		return 1;
	if (pid != r->refused_pid) {
		struct strbuf a;
		note(r, "not following %d \"%s\": %s", (int)pid, esc(&a, r->name), why);
		strbuf_release(&a);
		r->refused_pid = pid;
	}
	return 0;
}

static uint64_t proc_starttime(pid_t pid)
{
	char path[64], *text;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (sd_read_file(path, &text, 4096) < 0)
		return 0;
	const char *p = strrchr(text, ')');
	uint64_t v = 0;
	/* starttime is field 22; after ") " come fields 3.. */
	for (int f = 3; p && f <= 22; f++) {
		p = strchr(p + 1, ' ');
		if (p && f == 21)
			v = strtoull(p + 1, NULL, 10);
	}
	free(text);
	return v;
}

/* The target is gone: stop, or with --follow wait for a new process of the
 * same name. Returns 0 to go on (r->t is the new target). */
static int target_gone(struct sd_recorder *r, uint64_t end_us, const sigset_t *unblocked)
{
	struct strbuf a;
	note(r, "target %d \"%s\" exited (after %ld snapshots in this run)", (int)r->pid,
	     esc(&a, r->name), r->taken);
	char detail[128];
	snprintf(detail, sizeof(detail), "pid %d", (int)r->pid);
	man_event(r, "target-exited", detail);
	if (!r->follow) {
		strbuf_release(&a);
		r->stop_why = "target exited";
		r->status = SD_REC_TARGET_GONE;
		return -1;
	}
	note(r, "waiting for a new process named \"%s\" (--follow)", a.buf);
	strbuf_release(&a);
	struct sd_error err = {0};
	man_write(r, &err);
	pid_t old = r->pid;
	uint64_t poll_us = r->every_us < 1000000 ? r->every_us : 1000000;
	for (;;) {
		if (stopping(r))
			return -1;
		if (end_us && sd_now_us() >= end_us)
			return -1;
		pid_t *pids;
		size_t n = procfs_pids_by_name(r->name, &pids);
		pid_t best = 0;
		uint64_t best_start = 0;
		for (size_t i = 0; i < n; i++) {
			if (pids[i] == old || !proc_alive(pids[i]) || !follow_ok(r, pids[i]))
				continue;
			uint64_t st = proc_starttime(pids[i]);
			if (!best || st > best_start) {
				best = pids[i];
				best_start = st;
			}
		}
		free(pids);
		if (best) {
			struct sd_target *t = target_new(best, &err);
			if (t) {
				drop_sampler(r);
				target_free(r->t);
				r->t = t;
				r->pid = best;
				note(r,
				     "following the new process %d (the same user %u and the same "
				     "executable)",
				     (int)best, (unsigned)r->ident_uid);
				snprintf(detail, sizeof(detail), "pid %d", (int)best);
				man_event(r, "followed", detail);
				man_target(r);
				man_write(r, &err);
				return 0;
			}
		}
		sleep_until(sd_now_us() + poll_us, unblocked);
	}
}

/* The recording's folder, created 0700 when missing, and refused when
 * another user could change what is in it (safefile.h): a recording is
 * read back (the manifest) and pruned (--max-disk), so a sticky folder
 * others write into (/tmp itself) is refused too. */
static int open_dir(const char *dir, struct sd_error *err)
{
	int fd = safefile_opendir(dir, SAFEFILE_MKDIR | SAFEFILE_OWN_DIR, NULL, err);
	if (fd < 0)
		return fd;
	if (faccessat(fd, ".", W_OK, AT_EACCESS) < 0) {
		int e = errno;
		close(fd);
		return sd_error_set(err, e, "cannot write into %s: %s", dir, sd_strerror(e));
	}
	return fd;
}

/* One recorder per directory: two would overwrite each other's manifest.
 * The lock (flock on DIR/.record.lock) goes away with the process, even
 * after SIGKILL. Returns the locked fd, or -1 after a message. */
static int lock_dir(struct sd_recorder *r, int dirfd, struct sd_error *err)
{
	/* Never through a link or FIFO someone left under the name. */
	int fd = safefile_open_own(dirfd, r->dir, ".record.lock", 0600, 0, err);
	if (fd < 0)
		return fd;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		char buf[32] = "";
		ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
		buf[n > 0 ? n : 0] = '\0';
		close(fd);
		return sd_error_set(
		    err, EBUSY,
		    "another recording (stackdump pid %ld) is writing into %s: stop "
		    "it or choose another --out",
		    strtol(buf, NULL, 10), r->dir);
	}
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) == 0 && pwrite(fd, buf, (size_t)n, 0) < 0) {
		/* Only the message above uses it. */
	}
	return fd;
}

struct sd_recorder *recorder_new(const struct sd_recorder_opts *opts, struct sd_triggers *trig,
				 const struct sd_recorder_io *io)
{
	struct sd_recorder *r = sd_xcalloc(1, sizeof(*r));
	strbuf_init(&r->out);
	strbuf_init(&r->zout);
	if (io)
		r->io = *io;
	r->dir = opts->dir;
	r->every_us = opts->every_us;
	r->every_text = opts->every_text;
	r->for_us = opts->for_us;
	r->count = opts->count;
	r->max_disk = opts->max_disk;
	r->max_disk_text = opts->max_disk_text;
	r->compress = opts->compress;
	r->follow = opts->follow;
	r->cmdline = opts->cmdline;
	r->verbose = opts->verbose;
	r->burst = opts->burst > 0 ? opts->burst : 1;
	r->snap = opts->snap;
	r->smo = opts->smo;
	r->cpu_budget = opts->cpu_budget;
	if (trig) {
		r->trig = *trig;
		memset(trig, 0, sizeof(*trig));
	}
	r->lockfd = -1;
	return r;
}

int recorder_open(struct sd_recorder *r, pid_t pid, struct sd_error *err)
{
	r->pid = pid;
	r->t = target_new(pid, err);
	if (!r->t)
		return err->code ? -err->code : -ESRCH;
	snprintf(r->name, sizeof(r->name), "%s", r->t->info.comm);
	r->have_ident = proc_ident(pid, &r->ident_uid, &r->exe_dev, &r->exe_ino) == 0;
	int dirfd = open_dir(r->dir, err);
	if (dirfd < 0)
		return dirfd;
	r->lockfd = lock_dir(r, dirfd, err);
	close(dirfd);
	int rc;
	if (r->lockfd < 0)
		return r->lockfd;
	int stale = snapio_clean_temp(r->dir);
	if (stale)
		note(r, "removed %d temporary files an interrupted recording left in %s", stale,
		     r->dir);
	if ((rc = man_open(r, err)) < 0)
		return rc;
	man_target(r);
	return man_write(r, err);
}

pid_t recorder_pid(const struct sd_recorder *r)
{
	return r->pid;
}

const char *recorder_comm(const struct sd_recorder *r)
{
	return r->name;
}

enum sd_recorder_status recorder_run(struct sd_recorder *r)
{
	struct strbuf a;
	if (r->trig.n) {
		struct strbuf w;
		strbuf_init(&w);
		triggers_describe(&r->trig, &w);
		note(r,
		     "watching %d \"%s\" for %s (checked every %s, burst %d) into %s; kill -USR1 "
		     "%d takes a snapshot now",
		     (int)r->pid, esc(&a, r->name), w.buf, r->every_text, r->burst, r->dir,
		     (int)getpid());
		strbuf_release(&w);
	} else {
		note(r, "recording %d \"%s\" every %s into %s (Ctrl-C to stop)", (int)r->pid,
		     esc(&a, r->name), r->every_text, r->dir);
	}
	strbuf_release(&a);

	uint64_t start = sd_now_us();
	double cpu0 = cpu_ms();
	uint64_t end = r->for_us ? start + r->for_us : 0;
	uint64_t next = start;
	budget_init(&r->budget, r->cpu_budget, r->every_us * 1000, start * 1000);
	for (;;) {
		if (stopping(r)) {
			r->stop_why = "interrupted";
			r->status = SD_REC_INTERRUPTED;
			break;
		}
		uint64_t now = sd_now_us();
		if (r->count && r->taken >= r->count) {
			r->stop_why = "--count reached";
			break;
		}
		if (end && now >= end) {
			r->stop_why = "--for elapsed";
			break;
		}
		int gone = !proc_alive(r->pid);
		if (!gone && r->io.snap_now && *r->io.snap_now) {
			*r->io.snap_now = 0;
			int t = take(r, "SIGUSR1", NULL);
			if (t < 0)
				break;
			gone = t == 1;
		}
		if (!gone && now >= next) {
			if (!r->trig.n) {
				char reason[64];
				snprintf(reason, sizeof(reason), "every %s", r->every_text);
				int t = take(r, reason, NULL);
				if (t < 0)
					break;
				gone = t == 1;
			} else {
				struct strbuf why;
				strbuf_init(&why);
				struct sd_snapshot *pre = NULL;
				int fired = check_triggers(r, &why, &pre);
				if (r->stop_why) { /* a probe could not attach */
					snapshot_free(pre);
					strbuf_release(&why);
					break;
				}
				if (fired) {
					char *base = strbuf_detach(&why);
					note(r, "triggered: %s", base);
					for (int b = 0; b < r->burst && !gone; b++) {
						if (b) {
							sleep_until(sd_now_us() + r->every_us,
								    r->io.wake);
							if (stopping(r) ||
							    (r->count && r->taken >= r->count) ||
							    (end && sd_now_us() >= end))
								break;
						}
						struct strbuf rs;
						strbuf_init(&rs);
						strbuf_adds(&rs, base);
						if (r->burst > 1)
							strbuf_addf(&rs, " (burst %d/%d)", b + 1,
								    r->burst);
						int t = take(r, rs.buf, b ? NULL : pre);
						strbuf_release(&rs);
						if (t < 0) {
							gone = -1;
							break;
						}
						gone = t == 1;
					}
					free(base);
					if (gone < 0)
						break;
				}
				strbuf_release(&why);
			}
			/* A fixed schedule: a slow snapshot skips ticks
			 * rather than bunching them up. Over the CPU budget
			 * it is stretched, and said. */
			now = sd_now_us();
			uint64_t before = r->budget.interval_ns;
			switch (budget_tick(&r->budget, now * 1000, (cpu_ms() - cpu0) / 1e3)) {
			case BUDGET_SLOWER:
				note(r, "snapshots cost %.1f%% of a core, over the budget of %g%% "
					"(--cpu-budget): one every %.2f s instead of every %s",
				     r->budget.last_percent, r->budget.percent,
				     (double)r->budget.interval_ns / 1e9, r->every_text);
				break;
			case BUDGET_FASTER:
				note(r, "snapshots cost %.1f%% of a core: one every %.2f s (every %s "
					"asked)",
				     r->budget.last_percent, (double)r->budget.interval_ns / 1e9,
				     r->every_text);
				break;
			}
			uint64_t every = r->budget.interval_ns / 1000;
			next += every;
			if (r->budget.interval_ns != before)
				next = now + every;
			if (next <= now)
				next = now + every - (now - start) % every;
		}
		if (gone) {
			if (target_gone(r, end, r->io.wake) < 0) {
				if (!r->stop_why) {
					r->stop_why = stopping(r) ? "interrupted" : "--for elapsed";
					r->status =
					    stopping(r) ? SD_REC_INTERRUPTED : SD_REC_TARGET_GONE;
				}
				break;
			}
			/* Look at the new process right away. */
			next = sd_now_us();
			triggers_reset(&r->trig);
			continue;
		}
		if (r->count && r->taken >= r->count)
			continue;
		uint64_t wake = next;
		if (end && end < wake)
			wake = end;
		sleep_until(wake, r->io.wake);
	}

	snapio_manifest_set(&r->man.state, "stopped");
	snapio_manifest_set(&r->man.stop_reason, r->stop_why ? r->stop_why : "done");
	man_event(r, "stopped", r->stop_why);
	struct sd_error e2 = {0};
	if (man_write(r, &e2) < 0 && r->status != SD_REC_FAILED) {
		note(r, "%s", e2.msg);
		r->status = SD_REC_FAILED;
	}
	char sz[32];
	sd_human_bytes(sz, sizeof(sz), r->bytes_written);
	double wall = (double)(sd_now_us() - start) / 1e6, cpu = (cpu_ms() - cpu0) / 1e3;
	note(r,
	     "%ld snapshots (%s) written to %s in %.1fs, using %.2fs of CPU (%.1f%% of one "
	     "core); stopped: %s",
	     r->taken, sz, r->dir, wall, cpu, wall > 0 ? 100.0 * cpu / wall : 0.0,
	     r->stop_why ? r->stop_why : "done");

	return r->status;
}

void recorder_free(struct sd_recorder *r)
{
	if (!r)
		return;
	if (r->man_loaded)
		snapio_manifest_release(&r->man);
	if (r->lockfd >= 0)
		close(r->lockfd);
	drop_sampler(r);
	triggers_release(&r->trig);
	strbuf_release(&r->out);
	strbuf_release(&r->zout);
	target_free(r->t);
	free(r);
}
