// SPDX-License-Identifier: MIT
// record: take snapshots of one process on a schedule or when a trigger
// fires (parked threads, deadlock, CPU, a stuck thread, SIGUSR1), one file
// each plus a manifest, so that nothing is ever left half-written and the
// recording can be read later, elsewhere, with report or load.
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../src/format.h"
#include "../src/locks.h"
#include "../src/procfs.h"
#include "../src/sampler.h"
#include "../src/snapio.h"
#include "../src/version.h"
#include "cmd.h"

#define NR_FUTEX 202
#define NR_RESTART_SYSCALL 219

enum {
	REC_PID_OF = SNAP_OPT__COUNT,
	REC_EVERY,
	REC_FOR,
	REC_COUNT,
	REC_OUT,
	REC_MAX_DISK,
	REC_COMPRESS,
	REC_FOLLOW,
	REC_WHEN,
	REC_BURST,
	REC_QUIET,
	REC_VERBOSE,
	REC_ENGINE,
};

static const struct cmd_option record_options[] = {
	CMD_SNAPSHOT_OPTIONS,
	[REC_PID_OF] = OPT_STRING("pid-of", 'p', "NAME",
				  "the process called NAME (comm or executable name)", CMPL_PID),
	[REC_EVERY] = {.name = "every",
		       .short_name = 'e',
		       .arg = "DURATION",
		       .help = "a snapshot every DURATION (with --when: how often conditions are "
			       "checked, default 1s)",
		       .type = CMD_OPT_DURATION,
		       .min = 10000,
		       .max = 1e15,
		       .hint = "a duration of 10ms or more, e.g. 500ms, 1s, 1m"},
	[REC_FOR] = {.name = "for",
		     .arg = "DURATION",
		     .help = "stop after DURATION",
		     .type = CMD_OPT_DURATION,
		     .min = 1,
		     .max = 1e15,
		     .hint = "e.g. 30s, 10m, 2h"},
	[REC_COUNT] = {.name = "count",
		       .short_name = 'c',
		       .arg = "N",
		       .help = "stop after N snapshots",
		       .type = CMD_OPT_COUNT,
		       .min = 1,
		       .max = 1e15,
		       .hint = "a number >= 1"},
	[REC_OUT] = OPT_STRING("out", 'o', "DIR",
			       "write the snapshots and manifest.json into DIR (created if needed)",
			       CMPL_DIR),
	[REC_MAX_DISK] = {.name = "max-disk",
			  .arg = "SIZE",
			  .help = "keep at most SIZE bytes in DIR: drop the oldest snapshots",
			  .type = CMD_OPT_SIZE,
			  .min = 4096,
			  .max = 1e18,
			  .hint = "e.g. 100M, 2G; at least 4K"},
	[REC_COMPRESS] = OPT_FLAG("compress", 'z', "gzip each snapshot file (.json.gz)"),
	[REC_FOLLOW] = OPT_FLAG("follow", 'F',
				"when the process exits, wait for a new one of the same name"),
	[REC_WHEN] = OPT_STRING("when", 'w', "COND[,COND]",
				"snapshot only when a condition holds: parked:N, deadlock, "
				"cpu:PERCENT, stuck:DURATION (or NAME>=VALUE, quoted)",
				CMPL_NONE),
	[REC_BURST] = OPT_COUNT("burst", 'b', "N",
				"snapshots taken each time a condition fires (default 3)", 1, 10000,
				"3"),
	[REC_QUIET] = OPT_FLAG("quiet", 'q', "do not print a line per snapshot"),
	[REC_VERBOSE] = OPT_FLAG("verbose", 'v',
				 "the CPU cost of each snapshot, by stage, on stderr"),
	[REC_ENGINE] = OPT_CHOICE("engine", 0, "ENGINE",
				  "auto (ptrace: lock words read while stopped), ptrace, or perf "
				  "(stacks from perf samples, lock owners unknown)",
				  "auto perf ptrace", "auto"),
	{0},
};

enum trig_kind { TRIG_PARKED, TRIG_CPU, TRIG_STUCK, TRIG_DEADLOCK };

struct trigger {
	enum trig_kind kind;
	double threshold;   /* parked count or CPU percent */
	uint64_t dur_us;    /* stuck */
	char text[64];      /* as given, for reasons */
	int armed;          /* fires again only after it was false */
};

/* One thread as /proc shows it between snapshots. */
struct tobs {
	pid_t tid;
	char state;
	int running;        /* syscall file says "running" */
	long nr;            /* syscall, -1 when none */
	uint64_t arg0;
	int futex;          /* asleep in a futex wait */
	uint64_t vol, nonvol;
};

/* A thread that might be stuck: how long it has looked the same. */
struct stuck_ent {
	pid_t tid;
	uint64_t since_us;
	struct tobs last;
	uint64_t ref_hash;  /* its stack in a snapshot at half the duration */
	int have_ref;
	int done;           /* fired, or found idle: wait until it changes */
	int seen;
};

struct rec {
	struct cmd_ctx *ctx;
	struct strbuf out, zout; /* the snapshot being written, reused */
	const char *dir;
	uint64_t every_us, for_us, max_disk;
	long count;
	int compress, follow, quiet, verbose, burst;
	const char *every_text, *max_disk_text;
	struct trigger trig[8];
	int ntrig;
	struct sd_snap_opts opts;
	struct sd_sampler_opts smo;
	struct sd_sampler *smp;     /* takes the snapshots of t */
	const struct sd_target *smp_t;
	int said_fallback;

	struct sd_target *t;
	pid_t pid;
	char name[64];       /* comm of the target, for --follow */

	json_t *man;
	uint64_t man_bytes, disk_bytes;
	long taken;
	uint64_t bytes_written;
	uint64_t seq;
	int warned_big;

	uint64_t cpu_ticks, cpu_us;
	int cpu_have;
	struct stuck_ent *stuck;
	size_t nstuck, stuckcap;
	char *dl_prev, *dl_probed;

	const char *stop_why;
	int rc;
};

static volatile sig_atomic_t usr1_pending;

static void on_usr1(int sig)
{
	(void)sig;
	usr1_pending = 1;
}

static void note(struct rec *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct rec *r, const char *fmt, ...)
{
	va_list ap;
	fflush(r->ctx->out);
	fputs("stackdump: record: ", r->ctx->err);
	va_start(ap, fmt);
	vfprintf(r->ctx->err, fmt, ap);
	va_end(ap);
	fputc('\n', r->ctx->err);
	fflush(r->ctx->err);
}

/* "name" of a process or thread, escaped for the terminal. */
static const char *esc(struct strbuf *sb, const char *s)
{
	strbuf_init(sb);
	strbuf_adds(sb, ""); /* never NULL */
	strbuf_add_escaped(sb, s ? s : "");
	return sb->buf;
}

static void human_bytes(char *buf, size_t n, uint64_t b)
{
	if (b >= 1ull << 20)
		snprintf(buf, n, "%.1f MB", (double)b / (1 << 20));
	else if (b >= 10ull << 10)
		snprintf(buf, n, "%.1f KB", (double)b / 1024);
	else
		snprintf(buf, n, "%llu bytes", (unsigned long long)b);
}

/* strerror() in lowercase, as our messages are. */
static const char *errtext(int e)
{
	static __thread char buf[128];
	snprintf(buf, sizeof(buf), "%s", strerror(e));
	if (buf[0] >= 'A' && buf[0] <= 'Z' && (buf[1] < 'A' || buf[1] > 'Z'))
		buf[0] = (char)(buf[0] - 'A' + 'a');
	return buf;
}

/* ---- the manifest ----------------------------------------------------- */

static void man_event(struct rec *r, const char *event, const char *detail)
{
	json_t *ev = json_object_get(r->man, "events");
	json_t *e = json_object();
	json_object_set_new(e, "time", json_real(sd_wall_time()));
	json_object_set_new(e, "event", json_string(event));
	if (detail) {
		json_t *d = json_string(detail);
		json_object_set_new(e, "detail", d ? d : json_string("?"));
	}
	json_array_append_new(ev, e);
	/* A recording that follows a flapping process must not grow without
	 * bound: keep the first events and the latest ones. */
	while (json_array_size(ev) > 1000)
		json_array_remove(ev, 10);
}

static void man_target(struct rec *r)
{
	json_t *tg = json_object();
	json_object_set_new(tg, "pid", json_integer(r->pid));
	json_t *c = json_string(r->name);
	json_object_set_new(tg, "comm", c ? c : json_null());
	json_t *exe = r->t && r->t->info.exe ? json_string(r->t->info.exe) : NULL;
	json_object_set_new(tg, "exe", exe ? exe : json_null());
	json_object_set_new(tg, "follow", json_boolean(r->follow));
	json_object_set(r->man, "target", tg);
	json_decref(tg);
}

static int man_write(struct rec *r, struct sd_error *err)
{
	json_object_set_new(r->man, "updated", json_real(sd_wall_time()));
	uint64_t b = 0;
	int rc = snapio_manifest_write(r->dir, r->man, &b, err);
	if (rc == 0)
		r->man_bytes = b;
	return rc;
}

static int man_open(struct rec *r)
{
	struct sd_error err = {0};
	json_t *m = snapio_manifest_load(r->dir, &err);
	if (!m && err.code != ENOENT) {
		cmd_error(r->ctx,
			  "record: %s (remove it, or record into another directory with --out)",
			  err.msg);
		return -1;
	}
	if (m) {
		r->man = m;
		json_t *snaps = json_object_get(m, "snapshots");
		/* Count what is really on disk, for --max-disk. */
		for (size_t i = 0; i < json_array_size(snaps); i++) {
			json_t *e = json_array_get(snaps, i);
			char path[4096];
			snprintf(path, sizeof(path), "%s/%s", r->dir,
				 json_string_value(json_object_get(e, "file")));
			struct stat st;
			if (stat(path, &st) == 0)
				r->disk_bytes += (uint64_t)st.st_size;
			json_int_t sq = json_integer_value(json_object_get(e, "seq"));
			if (sq > 0 && (uint64_t)sq > r->seq)
				r->seq = (uint64_t)sq;
		}
		if (!json_is_array(json_object_get(m, "events")))
			json_object_set_new(m, "events", json_array());
		if (!json_is_object(json_object_get(m, "dropped")))
			json_object_set_new(m, "dropped", json_object());
		note(r, "appending to the recording in %s (%zu snapshots so far)", r->dir,
		     json_array_size(snaps));
		man_event(r, "resumed", NULL);
	} else {
		m = json_object();
		r->man = m;
		json_object_set_new(m, "format", json_string(SNAPIO_MANIFEST_FORMAT));
		json_object_set_new(m, "version", json_integer(SNAPIO_MANIFEST_VERSION));
		json_object_set_new(m, "tool", json_string("stackdump " STACKDUMP_VERSION));
		json_object_set_new(m, "started", json_real(sd_wall_time()));
		json_object_set_new(m, "updated", json_real(sd_wall_time()));
		json_object_set_new(m, "state", json_string("recording"));
		json_object_set_new(m, "target", json_object());
		json_object_set_new(m, "options", json_object());
		json_object_set_new(m, "snapshots", json_array());
		json_t *d = json_object();
		json_object_set_new(d, "count", json_integer(0));
		json_object_set_new(d, "bytes", json_integer(0));
		json_object_set_new(d, "last", json_array());
		json_object_set_new(m, "dropped", d);
		json_object_set_new(m, "events", json_array());
		man_event(r, "started", NULL);
	}
	json_object_set_new(m, "state", json_string("recording"));
	json_object_del(m, "stop_reason");
	json_t *o = json_object();
	json_object_set_new(o, "every", r->every_text ? json_string(r->every_text) : json_null());
	json_object_set_new(o, "when", json_null());
	if (r->ntrig) {
		struct strbuf sb;
		strbuf_init(&sb);
		for (int i = 0; i < r->ntrig; i++)
			strbuf_addf(&sb, "%s%s", i ? "," : "", r->trig[i].text);
		json_object_set_new(o, "when", json_string(sb.buf));
		strbuf_release(&sb);
		json_object_set_new(o, "burst", json_integer(r->burst));
	}
	json_object_set_new(o, "compress", json_boolean(r->compress));
	json_object_set_new(o, "max_disk",
			    r->max_disk ? json_integer((json_int_t)r->max_disk) : json_null());
	json_object_set(m, "options", o);
	json_decref(o);
	return 0;
}

/* Drop the oldest snapshot of the recording to stay under --max-disk. */
static void drop_oldest(struct rec *r)
{
	json_t *snaps = json_object_get(r->man, "snapshots");
	json_t *e = json_array_get(snaps, 0);
	const char *file = json_string_value(json_object_get(e, "file"));
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", r->dir, file);
	struct stat st;
	uint64_t sz = stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
	if (unlink(path) < 0 && errno != ENOENT)
		note(r, "cannot remove %s: %s", path, errtext(errno));
	note(r, "dropped the oldest snapshot %s (--max-disk %s reached)", file, r->max_disk_text);
	json_t *d = json_object_get(r->man, "dropped");
	json_object_set_new(d, "count",
			    json_integer(json_integer_value(json_object_get(d, "count")) + 1));
	json_object_set_new(d, "bytes", json_integer(json_integer_value(json_object_get(d, "bytes")) +
						     (json_int_t)sz));
	json_t *last = json_object_get(d, "last");
	if (!json_is_array(last)) {
		last = json_array();
		json_object_set_new(d, "last", last);
	}
	json_array_append_new(last, json_string(file));
	while (json_array_size(last) > 20)
		json_array_remove(last, 0);
	r->disk_bytes = r->disk_bytes > sz ? r->disk_bytes - sz : 0;
	json_array_remove(snaps, 0);
}

/* ---- cheap looks at /proc ---------------------------------------------- */

static int proc_alive(pid_t pid)
{
	char path[64], *text;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (sd_read_file(path, &text, 4096) < 0)
		return 0;
	char st = 0;
	procfs_parse_stat(text, &st, NULL, NULL, NULL, NULL, NULL);
	free(text);
	return st && st != 'Z' && st != 'X';
}

static uint64_t status_num(const char *text, const char *key)
{
	const char *p = strstr(text, key);
	return p ? strtoull(p + strlen(key), NULL, 10) : 0;
}

/* Read every thread of the target: state, syscall, and when CTX the
 * context switch counts. Threads that vanish meanwhile are skipped. */
static size_t observe(pid_t pid, int ctx, struct tobs **out)
{
	pid_t *tids = NULL;
	size_t n = 0, k = 0;
	*out = NULL;
	if (procfs_list_tids(pid, &tids, &n, NULL) < 0)
		return 0;
	struct tobs *v = sd_xcalloc(n ? n : 1, sizeof(*v));
	for (size_t i = 0; i < n; i++) {
		char path[96], *text;
		struct tobs *o = &v[k];
		memset(o, 0, sizeof(*o));
		o->tid = tids[i];
		o->nr = -1;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tids[i]);
		if (sd_read_file(path, &text, 4096) < 0)
			continue;
		procfs_parse_stat(text, &o->state, NULL, NULL, NULL, NULL, NULL);
		free(text);
		snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)tids[i]);
		if (sd_read_file(path, &text, 4096) >= 0) {
			struct sd_taskinfo ti;
			memset(&ti, 0, sizeof(ti));
			if (procfs_parse_syscall(text, &ti) == 0) {
				o->running = ti.running;
				o->nr = ti.syscall_nr;
				o->arg0 = ti.syscall_args[0];
			}
			free(text);
		}
		int sleeping = o->state == 'S' || o->state == 'D';
		if (sleeping && o->nr == NR_FUTEX) {
			o->futex = 1;
		} else if (sleeping && o->nr == NR_RESTART_SYSCALL) {
			/* A timed futex wait interrupted by an earlier snapshot
			 * comes back as restart_syscall; so does a sleep. */
			snprintf(path, sizeof(path), "/proc/%d/task/%d/wchan", (int)pid, (int)tids[i]);
			if (sd_read_file(path, &text, 256) >= 0) {
				o->futex = !strncmp(text, "futex", 5);
				free(text);
			}
		}
		if (ctx) {
			snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid,
				 (int)tids[i]);
			if (sd_read_file(path, &text, 1 << 16) < 0)
				continue;
			o->vol = status_num(text, "\nvoluntary_ctxt_switches:");
			o->nonvol = status_num(text, "\nnonvoluntary_ctxt_switches:");
			free(text);
		}
		k++;
	}
	free(tids);
	*out = v;
	return k;
}

static int proc_cpu_ticks(pid_t pid, uint64_t *ticks)
{
	char path[64], *text;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (sd_read_file(path, &text, 4096) < 0)
		return -1;
	uint64_t u = 0, s = 0;
	int r = procfs_parse_stat(text, NULL, NULL, NULL, &u, &s, NULL);
	free(text);
	*ticks = u + s;
	return r;
}

/* ---- snapshots ---------------------------------------------------------- */

/* The first deadlock lock analysis found in S: writes
 * "123 "a" -> 124 "b" -> 123" into DESC and returns its length (0: none). */
static size_t find_cycle(const struct sd_snapshot *s, struct strbuf *desc)
{
	struct sd_lockgraph *g = locks_graph(s);
	size_t n = 0;
	if (g->ndeadlocks) {
		const struct sd_deadlock *d = &g->deadlocks[0];
		for (size_t k = 0; k < d->n; k++) {
			const struct sd_thread *th = snapshot_find_thread(s, d->edges[k].tid);
			strbuf_addf(desc, "%d \"", (int)d->edges[k].tid);
			strbuf_add_escaped(desc, th ? th->name : "");
			strbuf_adds(desc, "\" -> ");
		}
		strbuf_addf(desc, "%d", (int)d->edges[0].tid);
		n = d->n;
		if (g->ndeadlocks > 1)
			strbuf_addf(desc, " (and %zu more cycles)", g->ndeadlocks - 1);
	}
	locks_graph_free(g);
	return n;
}

static void stuck_rebaseline(struct rec *r);

static void drop_sampler(struct rec *r)
{
	sampler_free(r->smp);
	r->smp = NULL;
	r->smp_t = NULL;
}

/* A snapshot of r->t through its sampler (made again for a new target). */
static struct sd_snapshot *rec_snapshot(struct rec *r, struct sd_error *err)
{
	if (!r->smp || r->smp_t != r->t) {
		drop_sampler(r);
		r->smp = sampler_new(r->t, &r->opts, &r->smo, err);
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
static struct sd_snapshot *probe(struct rec *r)
{
	struct sd_error err = {0};
	if (r->stop_why)
		return NULL;
	struct sd_snapshot *s = rec_snapshot(r, &err);
	if (!s && proc_alive(r->pid)) {
		note(r, "snapshot failed: %s", err.msg);
		if (err.code == EPERM || err.code == EBUSY || err.code == EINVAL) {
			r->stop_why = "cannot take snapshots";
			r->rc = EXIT_FAIL;
		}
	}
	stuck_rebaseline(r);
	return s;
}

/* Make the file name of a new snapshot, unique in the directory. */
static void new_name(struct rec *r, double t, char *buf, size_t n)
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
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int take(struct rec *r, const char *reason, struct sd_snapshot *pre)
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
				r->rc = EXIT_FAIL;
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
			r->rc = EXIT_FAIL;
			return -1;
		}
		data = r->zout.buf;
		len = r->zout.len;
	}
	char name[256], path[4096];
	new_name(r, s->time, name, sizeof(name));
	snprintf(path, sizeof(path), "%s/%s", r->dir, name);

	json_t *snaps = json_object_get(r->man, "snapshots");
	if (r->max_disk) {
		/* Room for this file and the manifest that will list it. */
		uint64_t need = len + r->man_bytes + 512;
		while (json_array_size(snaps) && r->disk_bytes + need > r->max_disk)
			drop_oldest(r);
		if (need > r->max_disk && !r->warned_big) {
			char a[32];
			human_bytes(a, sizeof(a), len);
			note(r, "one snapshot (%s) is larger than --max-disk %s: keeping only the "
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
		     json_array_size(snaps), r->dir);
		r->stop_why = wr == -ENOSPC || wr == -EDQUOT ? "disk full" : "cannot write";
		r->rc = EXIT_FAIL;
		return -1;
	}
	json_t *e = json_object();
	json_object_set_new(e, "file", json_string(name));
	json_object_set_new(e, "seq", json_integer((json_int_t)m.seq));
	json_object_set_new(e, "time", json_real(s->time));
	json_object_set_new(e, "pid", json_integer(s->pid));
	json_object_set_new(e, "threads", json_integer((json_int_t)s->nthreads));
	json_object_set_new(e, "bytes", json_integer((json_int_t)written));
	json_t *rs = json_string(reason);
	json_object_set_new(e, "reason", rs ? rs : json_string("?"));
	json_object_set_new(e, "partial", json_boolean(s->partial));
	json_array_append_new(snaps, e);
	if (man_write(r, &err) < 0) {
		/* Keep the directory consistent: a snapshot the manifest does
		 * not list is removed. */
		unlink(path);
		json_array_remove(snaps, json_array_size(snaps) - 1);
		snapshot_free(s);
		note(r, "%s; stopping (the %zu snapshots already in %s are intact)", err.msg,
		     json_array_size(snaps), r->dir);
		r->stop_why = err.code == ENOSPC || err.code == EDQUOT ? "disk full" : "cannot write";
		r->rc = EXIT_FAIL;
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
	if (!r->quiet) {
		time_t now = (time_t)s->time;
		struct tm tm;
		char hms[16], sz[32];
		localtime_r(&now, &tm);
		strftime(hms, sizeof(hms), "%H:%M:%S", &tm);
		human_bytes(sz, sizeof(sz), written);
		struct strbuf line;
		strbuf_init(&line);
		strbuf_addf(&line, "%s %s  %zu threads  %s  ", hms, name, s->nthreads, sz);
		strbuf_add_escaped(&line, reason);
		if (s->partial)
			strbuf_adds(&line, "  [partial]");
		strbuf_adds(&line, "\n");
		cmd_write(r->ctx, line.buf, line.len);
		fflush(r->ctx->out);
		strbuf_release(&line);
	}
	snapshot_free(s);
	return 0;
}

/* ---- triggers ----------------------------------------------------------- */

static int parse_when(struct rec *r, const char *spec)
{
	char *copy = sd_xstrdup(spec), *save = NULL;
	int rc = 0;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		while (*tok == ' ')
			tok++;
		size_t l = strlen(tok);
		while (l && tok[l - 1] == ' ')
			tok[--l] = '\0';
		if (r->ntrig == (int)(sizeof(r->trig) / sizeof(r->trig[0]))) {
			cmd_error(r->ctx, "record: too many --when conditions");
			rc = -1;
			break;
		}
		struct trigger *t = &r->trig[r->ntrig];
		memset(t, 0, sizeof(*t));
		t->armed = 1;
		snprintf(t->text, sizeof(t->text), "%s", tok);
		/* NAME>=VALUE, or NAME:VALUE, the same without characters a
		 * shell takes for a redirection when unquoted. */
		const char *ge = strstr(tok, ">=");
		size_t opl = 2;
		if (!ge && (ge = strchr(tok, ':')))
			opl = 1;
		char *end;
		if (!strcmp(tok, "deadlock")) {
			t->kind = TRIG_DEADLOCK;
		} else if (ge && !strncmp(tok, "parked", 6) && ge == tok + 6) {
			long v = strtol(ge + opl, &end, 10);
			if (end == ge + opl || *end || v < 1 || v > 1000000)
				goto bad;
			t->kind = TRIG_PARKED;
			t->threshold = (double)v;
		} else if (ge && !strncmp(tok, "cpu", 3) && ge == tok + 3) {
			double v = strtod(ge + opl, &end);
			if (end == ge + opl || (*end && strcmp(end, "%")) || !(v > 0) || v > 100000)
				goto bad;
			t->kind = TRIG_CPU;
			t->threshold = v;
		} else if (ge && !strncmp(tok, "stuck", 5) && ge == tok + 5) {
			if (sd_parse_duration(ge + opl, &t->dur_us) < 0 || t->dur_us < 100000)
				goto bad;
			t->kind = TRIG_STUCK;
		} else {
			goto bad;
		}
		/* Reasons read the same however the condition was typed. */
		if (opl == 1)
			snprintf(t->text, sizeof(t->text), "%.*s>=%s", (int)(ge - tok), tok, ge + 1);
		r->ntrig++;
		continue;
	bad:
		/* "parked" alone: an unquoted parked>=8 lost ">=8" to the
		 * shell (a file named "=8" now holds our output). */
		if (!strcmp(tok, "parked") || !strcmp(tok, "cpu") || !strcmp(tok, "stuck"))
			cmd_error(r->ctx,
				  "record: invalid --when condition '%s': no value (an unquoted '>' is "
				  "a redirection for the shell: write %s:VALUE, or quote it)",
				  tok, tok);
		else
			cmd_error(r->ctx,
				  "record: invalid --when condition '%s' (expected parked:N, deadlock, "
				  "cpu:PERCENT or stuck:DURATION, or the same with >=, quoted, e.g. "
				  "--when parked:8,stuck:10s)",
				  tok);
		rc = -1;
		break;
	}
	free(copy);
	if (rc == 0 && !r->ntrig) {
		cmd_error(r->ctx, "record: --when needs a condition");
		rc = -1;
	}
	return rc;
}

static int has_trig(const struct rec *r, enum trig_kind k)
{
	for (int i = 0; i < r->ntrig; i++)
		if (r->trig[i].kind == k)
			return 1;
	return 0;
}

static int stuck_candidate(const struct tobs *o)
{
	return (o->state == 'R' && o->running) || o->futex || o->state == 'D';
}

/* Is O still in the same place as LAST, with no voluntary switch? */
static int stuck_same(const struct tobs *last, const struct tobs *o)
{
	if (o->vol != last->vol)
		return 0;
	if (o->running != last->running || o->futex != last->futex || o->state != last->state)
		return 0;
	if (o->futex && o->nr == NR_FUTEX && last->nr == NR_FUTEX && o->arg0 != last->arg0)
		return 0;
	return 1;
}

static struct stuck_ent *stuck_find(struct rec *r, pid_t tid)
{
	for (size_t i = 0; i < r->nstuck; i++)
		if (r->stuck[i].tid == tid)
			return &r->stuck[i];
	return NULL;
}

/* After one of our own snapshots: every thread stopped for it counts one
 * voluntary switch more (and timed futex waits come back as
 * restart_syscall). Take the new counts without restarting the clocks. */
static void stuck_rebaseline(struct rec *r)
{
	if (!r->nstuck)
		return;
	struct tobs *v;
	size_t n = observe(r->pid, 1, &v);
	for (size_t i = 0; i < n; i++) {
		struct stuck_ent *e = stuck_find(r, v[i].tid);
		if (e && stuck_candidate(&v[i]) && v[i].futex == e->last.futex)
			e->last = v[i];
		else if (e)
			e->last.vol = v[i].vol;
	}
	free(v);
}

/* Update the stuck candidates from a fresh observation. */
static void stuck_update(struct rec *r, const struct tobs *v, size_t n, uint64_t now)
{
	for (size_t i = 0; i < r->nstuck; i++)
		r->stuck[i].seen = 0;
	for (size_t i = 0; i < n; i++) {
		const struct tobs *o = &v[i];
		struct stuck_ent *e = stuck_find(r, o->tid);
		if (!stuck_candidate(o))
			continue;
		if (!e) {
			sd_grow(&r->stuck, &r->stuckcap, r->nstuck + 1, sizeof(*r->stuck));
			e = &r->stuck[r->nstuck++];
			memset(e, 0, sizeof(*e));
			e->tid = o->tid;
			e->since_us = now;
			e->last = *o;
		} else if (!stuck_same(&e->last, o)) {
			e->since_us = now;
			e->have_ref = 0;
			e->done = 0;
			e->last = *o;
		}
		e->seen = 1;
	}
	size_t k = 0;
	for (size_t i = 0; i < r->nstuck; i++)
		if (r->stuck[i].seen)
			r->stuck[k++] = r->stuck[i];
	r->nstuck = k;
}

/* Is the thread's wait an idle one (a pool worker on its condition
 * variable) rather than being stuck? */
static int idle_wait(const struct sd_snapshot *s, pid_t tid)
{
	const struct sd_thread *th = snapshot_find_thread(s, tid);
	return th && locks_is_idle(th->wait.kind);
}

/* Check the stuck candidates, confirming with snapshots: one at half the
 * duration records each candidate's stack, one at the full duration must
 * show the same stack. Returns 1 (REASON filled, *SNAP the confirming
 * snapshot) when a thread is stuck. */
static int check_stuck(struct rec *r, const struct trigger *tg, uint64_t now, struct strbuf *reason,
		       struct sd_snapshot **snap)
{
	int need = 0;
	for (size_t i = 0; i < r->nstuck; i++) {
		struct stuck_ent *e = &r->stuck[i];
		uint64_t age = now - e->since_us;
		if (!e->done && ((!e->have_ref && age >= tg->dur_us / 2) ||
				 (e->have_ref && age >= tg->dur_us)))
			need = 1;
	}
	if (!need)
		return 0;
	struct sd_snapshot *s = probe(r);
	if (!s)
		return 0;
	int fired = 0;
	for (size_t i = 0; i < r->nstuck; i++) {
		struct stuck_ent *e = &r->stuck[i];
		uint64_t age = now - e->since_us;
		if (e->done)
			continue;
		uint64_t h = snapshot_stack_hash(snapshot_find_thread(s, e->tid));
		if (idle_wait(s, e->tid)) {
			e->done = 1;
			continue;
		}
		if (!e->have_ref && age >= tg->dur_us / 2) {
			e->ref_hash = h;
			e->have_ref = h != 0;
		} else if (e->have_ref && age >= tg->dur_us) {
			if (h && h == e->ref_hash) {
				const struct sd_thread *th = snapshot_find_thread(s, e->tid);
				e->done = 1;
				if (!fired) {
					strbuf_addf(reason,
						    "%s: thread %d \"", tg->text, (int)e->tid);
					strbuf_add_escaped(reason, th->name);
					strbuf_addf(reason,
						    "\" had the same stack and no voluntary context "
						    "switch for %.1fs (%s)",
						    (double)age / 1e6,
						    e->last.futex	       ? "parked in futex"
						    : e->last.state == 'D' ? "uninterruptible"
									   : "running");
				}
				fired++;
			} else {
				e->since_us = now;
				e->have_ref = 0;
			}
		}
	}
	if (fired > 1)
		strbuf_addf(reason, " (+%d more)", fired - 1);
	if (fired)
		*snap = s;
	else
		snapshot_free(s);
	return fired > 0;
}

/* Evaluate every condition once. Returns 1 to fire, with REASON and maybe a
 * confirming snapshot in *SNAP. */
static int check_triggers(struct rec *r, struct strbuf *reason, struct sd_snapshot **snap)
{
	uint64_t now = sd_now_us();
	struct tobs *v = NULL;
	size_t n = 0;
	int need_obs = has_trig(r, TRIG_PARKED) || has_trig(r, TRIG_STUCK) ||
		       has_trig(r, TRIG_DEADLOCK);
	if (need_obs)
		n = observe(r->pid, has_trig(r, TRIG_STUCK), &v);
	if (has_trig(r, TRIG_STUCK))
		stuck_update(r, v, n, now);
	int fire = 0;
	*snap = NULL;
	for (int i = 0; i < r->ntrig; i++) {
		struct trigger *tg = &r->trig[i];
		int cond = 0;
		struct strbuf why;
		strbuf_init(&why);
		strbuf_adds(&why, "");
		switch (tg->kind) {
		case TRIG_PARKED: {
			size_t parked = 0;
			for (size_t k = 0; k < n; k++)
				parked += v[k].futex;
			cond = (double)parked >= tg->threshold;
			strbuf_addf(&why, "%s: %zu threads parked in futex waits", tg->text, parked);
			break;
		}
		case TRIG_CPU: {
			uint64_t ticks;
			if (proc_cpu_ticks(r->pid, &ticks) < 0)
				break;
			if (r->cpu_have && now > r->cpu_us) {
				double hz = (double)sysconf(_SC_CLK_TCK);
				double pct = (double)(ticks - r->cpu_ticks) / hz /
					     ((double)(now - r->cpu_us) / 1e6) * 100.0;
				cond = pct >= tg->threshold;
				strbuf_addf(&why, "%s: process at %.0f%% of one core", tg->text, pct);
			}
			r->cpu_ticks = ticks;
			r->cpu_us = now;
			r->cpu_have = 1;
			break;
		}
		case TRIG_STUCK:
			if (!*snap)
				cond = check_stuck(r, tg, now, &why, snap);
			break;
		case TRIG_DEADLOCK: {
			/* Only a set of parked threads that stayed the same
			 * between two checks can be a deadlock; look at each
			 * such set once. */
			struct strbuf sig;
			strbuf_init(&sig);
			strbuf_adds(&sig, ""); /* never NULL, even with no thread parked */
			for (size_t k = 0; k < n; k++)
				if (v[k].futex)
					strbuf_addf(&sig, "%d:%" PRIx64 " ", (int)v[k].tid,
						    v[k].nr == NR_FUTEX ? v[k].arg0 : 0);
			int stable = sig.len && r->dl_prev && !strcmp(sig.buf, r->dl_prev);
			int probed = r->dl_probed && !strcmp(sig.buf, r->dl_probed);
			if (stable && !probed) {
				free(r->dl_probed);
				r->dl_probed = sd_xstrdup(sig.buf);
				struct sd_snapshot *s = *snap ? *snap : probe(r);
				struct strbuf cyc;
				strbuf_init(&cyc);
				size_t len = s ? find_cycle(s, &cyc) : 0;
				if (len) {
					cond = 1;
					strbuf_addf(&why, "deadlock: %zu threads in a cycle: %s", len,
						    cyc.buf);
					*snap = s;
				} else if (s && s != *snap) {
					snapshot_free(s);
				}
				strbuf_release(&cyc);
			}
			if (probed)
				cond = !tg->armed; /* the same deadlock: stay disarmed */
			free(r->dl_prev);
			r->dl_prev = strbuf_detach(&sig);
			break;
		}
		}
		if (cond && tg->armed) {
			if (fire)
				strbuf_adds(reason, "; ");
			strbuf_add(reason, why.buf, why.len);
			fire = 1;
		}
		tg->armed = !cond;
		strbuf_release(&why);
	}
	free(v);
	if (!fire && *snap) {
		snapshot_free(*snap);
		*snap = NULL;
	}
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
static int target_gone(struct rec *r, uint64_t end_us, const sigset_t *unblocked)
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
		r->rc = EXIT_PARTIAL;
		return -1;
	}
	note(r, "waiting for a new process named \"%s\" (--follow)", a.buf);
	strbuf_release(&a);
	struct sd_error err = {0};
	man_write(r, &err);
	pid_t old = r->pid;
	uint64_t poll_us = r->every_us < 1000000 ? r->every_us : 1000000;
	for (;;) {
		if (cmd_interrupted)
			return -1;
		if (end_us && sd_now_us() >= end_us)
			return -1;
		pid_t *pids;
		size_t n = procfs_pids_by_name(r->name, &pids);
		pid_t best = 0;
		uint64_t best_start = 0;
		for (size_t i = 0; i < n; i++) {
			if (pids[i] == old || !proc_alive(pids[i]))
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
				note(r, "following the new process %d", (int)best);
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

static int mkdir_p(const char *dir, struct sd_error *err)
{
	char buf[4096];
	snprintf(buf, sizeof(buf), "%s", dir);
	size_t l = strlen(buf);
	for (size_t i = 1; i <= l; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		char c = buf[i];
		buf[i] = '\0';
		if (mkdir(buf, 0700) < 0 && errno != EEXIST) {
			int e = errno;
			return sd_error_set(err, e, "cannot create directory %s: %s", buf,
					    errtext(e));
		}
		buf[i] = c;
	}
	struct stat st;
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return sd_error_set(err, ENOTDIR, "%s is not a directory", dir);
	if (access(dir, W_OK) < 0) {
		int e = errno;
		return sd_error_set(err, e, "cannot write into %s: %s", dir, errtext(e));
	}
	return 0;
}

/* One recorder per directory: two would overwrite each other's manifest.
 * The lock (flock on DIR/.record.lock) goes away with the process, even
 * after SIGKILL. Returns the locked fd, or -1 after a message. */
static int lock_dir(struct rec *r)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/.record.lock", r->dir);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		cmd_error(r->ctx, "record: cannot create %s: %s", path, errtext(errno));
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		char buf[32] = "";
		ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
		buf[n > 0 ? n : 0] = '\0';
		cmd_error(r->ctx,
			  "record: another recording (stackdump pid %ld) is writing into %s: stop it "
			  "or choose another --out",
			  strtol(buf, NULL, 10), r->dir);
		close(fd);
		return -1;
	}
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) == 0 && pwrite(fd, buf, (size_t)n, 0) < 0) {
		/* Only the message above uses it. */
	}
	return fd;
}

static int parse_options(struct rec *r, int argc, char **argv, pid_t **tids)
{
	struct cmd_ctx *ctx = r->ctx;
	const char *v;
	if (cmd_snap_opts(ctx, &r->opts, tids) < 0)
		return -1;
	r->opts.keep_files = 1; /* a snapshot every few seconds, for minutes */
	r->dir = cmd_str(ctx, REC_OUT);
	if (!r->dir || !*r->dir) {
		cmd_error(ctx, "record: --out DIR is required (where the snapshots go)");
		return -1;
	}
	if ((v = cmd_str(ctx, REC_WHEN)) && parse_when(r, v) < 0)
		return -1;
	r->every_text = cmd_str(ctx, REC_EVERY);
	if (r->every_text) {
		r->every_us = cmd_num(ctx, REC_EVERY);
	} else if (r->ntrig) {
		r->every_us = 1000000;
		r->every_text = "1s";
	} else {
		cmd_error(ctx, "record: --every DURATION is required (or --when COND), e.g. "
			       "--every 1s");
		return -1;
	}
	r->for_us = cmd_num(ctx, REC_FOR);
	/* Record keeps the lock view's promise by default: lock words read
	 * while the threads are stopped. perf only when asked. */
	sd_engine_parse(cmd_str(ctx, REC_ENGINE), &r->smo.engine);
	if (r->smo.engine == SD_ENGINE_AUTO)
		r->smo.engine = SD_ENGINE_PTRACE;
	r->smo.interval_us = r->every_us;
	r->count = (long)cmd_num(ctx, REC_COUNT);
	if (cmd_has(ctx, REC_MAX_DISK)) {
		r->max_disk = cmd_num(ctx, REC_MAX_DISK);
		r->max_disk_text = cmd_str(ctx, REC_MAX_DISK);
	}
	r->burst = (int)cmd_num(ctx, REC_BURST);
	if (cmd_has(ctx, REC_BURST) && !r->ntrig) {
		cmd_error(ctx, "record: --burst needs --when (a burst is what a trigger "
			       "takes)");
		return -1;
	}
	r->compress = cmd_has(ctx, REC_COMPRESS);
	r->follow = cmd_has(ctx, REC_FOLLOW);
	r->quiet = cmd_has(ctx, REC_QUIET);
	r->verbose = cmd_has(ctx, REC_VERBOSE);

	const char *name = cmd_str(ctx, REC_PID_OF);
	if (name && argc > 0) {
		cmd_error(ctx, "record: give a PID or --pid-of NAME, not both");
		return -1;
	}
	if (!name && argc == 0 && ctx->in_shell && ctx->session && ctx->session->ntargets) {
		/* In the shell: the current target. */
		r->pid = ctx->session->targets[ctx->session->current]->pid;
		return 0;
	}
	if (!name && argc == 0) {
		cmd_error(ctx, "record: missing target: PID, NAME or --pid-of NAME\nusage: "
			       "stackdump record [options] PID|--pid-of NAME --every DURATION --out "
			       "DIR");
		return -1;
	}
	pid_t pid = cmd_resolve_pid(ctx, name ? name : argv[0]);
	if (pid <= 0)
		return -2;
	r->pid = pid;
	return 0;
}

static int record_exec(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct rec r;
	memset(&r, 0, sizeof(r));
	r.ctx = ctx;
	r.rc = EXIT_OK;
	pid_t *tids = NULL;
	int pr = parse_options(&r, argc, argv, &tids);
	if (pr < 0) {
		free(tids);
		return pr == -2 ? EXIT_FAIL : EXIT_USAGE;
	}
	struct sd_error err = {0};
	r.t = target_new(r.pid, &err);
	if (!r.t) {
		cmd_error(ctx, "record: %s", err.msg);
		free(tids);
		return EXIT_FAIL;
	}
	snprintf(r.name, sizeof(r.name), "%s", r.t->info.comm);
	if (mkdir_p(r.dir, &err) < 0) {
		cmd_error(ctx, "record: %s", err.msg);
		target_free(r.t);
		free(tids);
		return EXIT_FAIL;
	}
	int lockfd = lock_dir(&r);
	if (lockfd < 0) {
		target_free(r.t);
		free(tids);
		return EXIT_FAIL;
	}
	int stale = snapio_clean_temp(r.dir);
	if (stale)
		note(&r, "removed %d temporary files an interrupted recording left in %s", stale,
		     r.dir);
	if (man_open(&r) < 0) {
		close(lockfd);
		target_free(r.t);
		free(tids);
		return EXIT_FAIL;
	}
	man_target(&r);
	if (man_write(&r, &err) < 0) {
		cmd_error(ctx, "record: %s", err.msg);
		json_decref(r.man);
		close(lockfd);
		target_free(r.t);
		free(tids);
		return EXIT_FAIL;
	}

	/* Signals wait while a snapshot is taken and written, and are taken
	 * only while sleeping: a Ctrl-C, SIGTERM or SIGUSR1 never cuts a
	 * file in half, and none is lost between a check and the sleep. */
	struct sigaction sa, old_usr1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, &old_usr1);
	usr1_pending = 0;
	sigset_t block, oldmask, unblocked;
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGUSR1);
	sigprocmask(SIG_BLOCK, &block, &oldmask);
	unblocked = oldmask;
	sigdelset(&unblocked, SIGINT);
	sigdelset(&unblocked, SIGTERM);
	sigdelset(&unblocked, SIGHUP);
	sigdelset(&unblocked, SIGUSR1);

	struct strbuf a;
	if (r.ntrig) {
		struct strbuf w;
		strbuf_init(&w);
		for (int i = 0; i < r.ntrig; i++)
			strbuf_addf(&w, "%s%s", i ? "," : "", r.trig[i].text);
		note(&r,
		     "watching %d \"%s\" for %s (checked every %s, burst %d) into %s; kill -USR1 "
		     "%d takes a snapshot now",
		     (int)r.pid, esc(&a, r.name), w.buf, r.every_text, r.burst, r.dir,
		     (int)getpid());
		strbuf_release(&w);
	} else {
		note(&r, "recording %d \"%s\" every %s into %s (Ctrl-C to stop)", (int)r.pid,
		     esc(&a, r.name), r.every_text, r.dir);
	}
	strbuf_release(&a);

	uint64_t start = sd_now_us();
	double cpu0 = cpu_ms();
	uint64_t end = r.for_us ? start + r.for_us : 0;
	uint64_t next = start;
	for (;;) {
		if (cmd_interrupted) {
			r.stop_why = "interrupted";
			r.rc = EXIT_INTERRUPTED;
			break;
		}
		uint64_t now = sd_now_us();
		if (r.count && r.taken >= r.count) {
			r.stop_why = "--count reached";
			break;
		}
		if (end && now >= end) {
			r.stop_why = "--for elapsed";
			break;
		}
		int gone = !proc_alive(r.pid);
		if (!gone && usr1_pending) {
			usr1_pending = 0;
			int t = take(&r, "SIGUSR1", NULL);
			if (t < 0)
				break;
			gone = t == 1;
		}
		if (!gone && now >= next) {
			if (!r.ntrig) {
				char reason[64];
				snprintf(reason, sizeof(reason), "every %s", r.every_text);
				int t = take(&r, reason, NULL);
				if (t < 0)
					break;
				gone = t == 1;
			} else {
				struct strbuf why;
				strbuf_init(&why);
				struct sd_snapshot *pre = NULL;
				int fired = check_triggers(&r, &why, &pre);
				if (r.stop_why) { /* a probe could not attach */
					snapshot_free(pre);
					strbuf_release(&why);
					break;
				}
				if (fired) {
					char *base = strbuf_detach(&why);
					note(&r, "triggered: %s", base);
					for (int b = 0; b < r.burst && !gone; b++) {
						if (b) {
							sleep_until(sd_now_us() + r.every_us,
								    &unblocked);
							if (cmd_interrupted ||
							    (r.count && r.taken >= r.count) ||
							    (end && sd_now_us() >= end))
								break;
						}
						struct strbuf rs;
						strbuf_init(&rs);
						strbuf_adds(&rs, base);
						if (r.burst > 1)
							strbuf_addf(&rs, " (burst %d/%d)", b + 1,
								    r.burst);
						int t = take(&r, rs.buf, b ? NULL : pre);
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
			 * rather than bunching them up. */
			now = sd_now_us();
			next += r.every_us;
			if (next <= now)
				next = now + r.every_us - (now - start) % r.every_us;
		}
		if (gone) {
			if (target_gone(&r, end, &unblocked) < 0) {
				if (!r.stop_why) {
					r.stop_why = cmd_interrupted ? "interrupted" : "--for elapsed";
					r.rc = cmd_interrupted ? EXIT_INTERRUPTED : EXIT_PARTIAL;
				}
				break;
			}
			/* Look at the new process right away. */
			next = sd_now_us();
			r.cpu_have = 0;
			r.nstuck = 0;
			continue;
		}
		if (r.count && r.taken >= r.count)
			continue;
		uint64_t wake = next;
		if (end && end < wake)
			wake = end;
		sleep_until(wake, &unblocked);
	}

	json_object_set_new(r.man, "state", json_string("stopped"));
	json_object_set_new(r.man, "stop_reason", json_string(r.stop_why ? r.stop_why : "done"));
	man_event(&r, "stopped", r.stop_why);
	struct sd_error e2 = {0};
	if (man_write(&r, &e2) < 0 && r.rc != EXIT_FAIL) {
		note(&r, "%s", e2.msg);
		r.rc = EXIT_FAIL;
	}
	char sz[32];
	human_bytes(sz, sizeof(sz), r.bytes_written);
	double wall = (double)(sd_now_us() - start) / 1e6, cpu = (cpu_ms() - cpu0) / 1e3;
	note(&r, "%ld snapshots (%s) written to %s in %.1fs, using %.2fs of CPU (%.1f%% of one "
		 "core); stopped: %s",
	     r.taken, sz, r.dir, wall, cpu, wall > 0 ? 100.0 * cpu / wall : 0.0,
	     r.stop_why ? r.stop_why : "done");

	sigprocmask(SIG_SETMASK, &oldmask, NULL);
	sigaction(SIGUSR1, &old_usr1, NULL);
	json_decref(r.man);
	close(lockfd);
	free(r.stuck);
	strbuf_release(&r.out);
	strbuf_release(&r.zout);
	free(r.dl_prev);
	free(r.dl_probed);
	drop_sampler(&r);
	target_free(r.t);
	free(tids);
	return r.rc;
}

const struct cmd_entry cmd_record_entry = {
	.name = "record",
	.alias = NULL,
	.args_usage = "PID|NAME (or --pid-of NAME)",
	.summary = "take snapshots on a schedule or on a trigger, into a directory",
	.description =
	    "Snapshots the process every DURATION (or, with --when, each time a condition\n"
	    "starts to hold: a burst of --burst snapshots, --every apart), one file per\n"
	    "snapshot named by its UTC time plus DIR/manifest.json. Files are written to a\n"
	    "temporary name and renamed: Ctrl-C, SIGTERM, a crash or a full disk never leave\n"
	    "a half-written snapshot. kill -USR1 takes a snapshot at once.\n"
	    "Conditions, checked cheaply from /proc: parked:N (N threads asleep in futex\n"
	    "waits), deadlock (a lock cycle, confirmed by a snapshot), cpu:PERCENT (of one\n"
	    "core), stuck:DURATION (a thread running or parked on a lock with the same stack\n"
	    "and no voluntary context switch; idle waits do not count). NAME>=VALUE means\n"
	    "the same, but must be quoted: a shell takes an unquoted '>' for a redirection.\n"
	    "Read a recording with 'stackdump report DIR'. The directory and the snapshot\n"
	    "format are described in the README (\"Recording during an incident\").\n"
	    "Exit status: 0 done (--count or --for reached), 1 the target exited, 2 failure\n"
	    "(cannot attach, disk full: the snapshots written stay intact), 64 usage error,\n"
	    "130 stopped by SIGINT/SIGTERM.",
	.options = record_options,
	.min_args = 0,
	.max_args = 1,
	.arg_complete = CMPL_PID,
	.exec = record_exec,
};
