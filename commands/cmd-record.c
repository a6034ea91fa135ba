// SPDX-License-Identifier: MIT
// record: the options of a recording, the signals that stop it or take a
// snapshot at once (SIGUSR1), and a line per snapshot; the recorder itself
// (schedule, conditions, files, manifest, retention) is src/record/recorder.c.
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "recorder.h"
#include "triggers.h"
#include "cmd.h"

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
	REC_CMDLINE,
	REC_CPU_BUDGET,
};

static const struct cmd_option record_options[] = {
    CMD_SNAPSHOT_OPTIONS,
    [REC_PID_OF] = OPT_PID_OF('p', "the process called NAME (comm or executable name)"),
    [REC_EVERY] = OPT_DURATION(
	"every", 'e',
	"a snapshot every DURATION (with --when: how often conditions are checked, default 1s)",
	10000, 1e15, NULL, "a duration of 10ms or more, e.g. 500ms, 1s, 1m"),
    [REC_FOR] = OPT_DURATION("for", 0, "stop after DURATION", 1, 1e15, NULL, "e.g. 30s, 10m, 2h"),
    [REC_COUNT] =
	OPT_COUNT("count", 'c', "N", "stop after N snapshots", 1, 1e15, NULL, "a number >= 1"),
    [REC_OUT] =
	OPT_STRING("out", 'o', "DIR",
		   "write the snapshots and manifest.json into DIR (created if needed)", CMPL_DIR),
    [REC_MAX_DISK] =
	OPT_SIZE("max-disk", 0, "keep at most SIZE bytes in DIR: drop the oldest snapshots", 4096,
		 1e18, NULL, "e.g. 100M, 2G; at least 4K"),
    [REC_COMPRESS] = OPT_FLAG("compress", 'z', "gzip each snapshot file (.json.gz)"),
    [REC_FOLLOW] =
	OPT_FLAG("follow", 'F', "when the process exits, wait for a new one of the same name"),
    [REC_WHEN] = OPT_STRING("when", 'w', "COND[,COND]",
			    "snapshot only when a condition holds: parked:N, deadlock, "
			    "cpu:PERCENT, stuck:DURATION (or NAME>=VALUE, quoted)",
			    CMPL_NONE),
    [REC_BURST] =
	OPT_COUNT("burst", 'b', "N", "snapshots taken each time a condition fires (default 3)", 1,
		  10000, "3", NULL),
    [REC_QUIET] = OPT_FLAG("quiet", 'q', "do not print a line per snapshot"),
    [REC_VERBOSE] = OPT_FLAG("verbose", 'v', "the CPU cost of each snapshot, by stage, on stderr"),
    [REC_ENGINE] = OPT_CHOICE("engine", 0, "ENGINE",
			      "auto (ptrace: lock words read while stopped), ptrace, or perf "
			      "(stacks from perf samples, lock owners unknown)",
			      "auto perf ptrace", "auto"),
    [REC_CMDLINE] = OPT_FLAG("cmdline", 0,
			     "keep the target's whole command line in each snapshot (by default only "
			     "the program: arguments can hold secrets)"),
    [REC_CPU_BUDGET] = OPT_CPU_BUDGET,
    {0},
};

/* What the command holds besides the recorder. */
struct rec {
	struct cmd_ctx *ctx;
	struct sd_recorder_opts o;
	struct sd_triggers trig;
	int quiet;
	pid_t pid;
};

static volatile sig_atomic_t usr1_pending;

static void on_usr1(int sig)
{
	(void)sig;
	usr1_pending = 1;
}

/* The recorder's notes go to stderr, after what stdout holds. */
static void rec_note(void *arg, const char *msg)
{
	struct cmd_ctx *ctx = arg;
	fflush(ctx->out);
	fputs("stackdump: record: ", ctx->err);
	cmd_put_safe(ctx->err, msg);
	fputc('\n', ctx->err);
	fflush(ctx->err);
}

/* One line per snapshot written: time, file, threads, size, reason. */
static void rec_saved(void *arg, const struct sd_recorder_saved *s)
{
	struct cmd_ctx *ctx = arg;
	time_t now = (time_t)s->time;
	struct tm tm;
	char hms[16], sz[32];
	localtime_r(&now, &tm);
	strftime(hms, sizeof(hms), "%H:%M:%S", &tm);
	sd_human_bytes(sz, sizeof(sz), s->bytes);
	struct strbuf line;
	strbuf_init(&line);
	strbuf_addf(&line, "%s %s  %zu threads  %s  ", hms, s->file, s->nthreads, sz);
	strbuf_add_escaped(&line, s->reason);
	if (s->partial)
		strbuf_adds(&line, "  [partial]");
	strbuf_adds(&line, "\n");
	cmd_write(ctx, line.buf, line.len);
	fflush(ctx->out);
	strbuf_release(&line);
}

/* The options of a recording into R (and TIDS, a heap array to free).
 * Returns 0, or -1 after a usage error. */
static int parse_options(struct rec *r, pid_t **tids)
{
	struct cmd_ctx *ctx = r->ctx;
	const char *v;
	if (cmd_snap_opts(ctx, &r->o.snap, tids) < 0)
		return -1;
	r->o.snap.keep_files = 1; /* a snapshot every few seconds, for minutes */
	r->o.snap.tokio = 1;	  /* a Tokio program's tasks are saved with its threads */
	r->o.snap.goroutines = 1; /* a Go program's goroutines, for report */
	r->o.dir = cmd_str(ctx, REC_OUT);
	if (!r->o.dir || !*r->o.dir) {
		cmd_error(ctx, "record: --out DIR is required (where the snapshots go)");
		return -1;
	}
	if ((v = cmd_str(ctx, REC_WHEN))) {
		struct sd_error err = {0};
		if (triggers_parse(&r->trig, v, &err) < 0) {
			cmd_error(ctx, "record: %s", err.msg);
			return -1;
		}
	}
	r->o.every_text = cmd_str(ctx, REC_EVERY);
	if (r->o.every_text) {
		r->o.every_us = cmd_num(ctx, REC_EVERY);
	} else if (r->trig.n) {
		r->o.every_us = 1000000;
		r->o.every_text = "1s";
	} else {
		cmd_error(ctx, "record: --every DURATION is required (or --when COND), e.g. "
			       "--every 1s");
		return -1;
	}
	r->o.for_us = cmd_num(ctx, REC_FOR);
	/* Record keeps the lock view's promise by default: lock words read
	 * while the threads are stopped. perf only when asked. */
	sd_engine_parse(cmd_str(ctx, REC_ENGINE), &r->o.smo.engine);
	if (r->o.smo.engine == SD_ENGINE_AUTO)
		r->o.smo.engine = SD_ENGINE_PTRACE;
	r->o.smo.interval_us = r->o.every_us;
	r->o.count = (long)cmd_num(ctx, REC_COUNT);
	if (cmd_has(ctx, REC_MAX_DISK)) {
		r->o.max_disk = cmd_num(ctx, REC_MAX_DISK);
		r->o.max_disk_text = cmd_str(ctx, REC_MAX_DISK);
	}
	r->o.burst = (int)cmd_num(ctx, REC_BURST);
	if (cmd_has(ctx, REC_BURST) && !r->trig.n) {
		cmd_error(ctx, "record: --burst needs --when (a burst is what a trigger "
			       "takes)");
		return -1;
	}
	r->o.compress = cmd_has(ctx, REC_COMPRESS);
	r->o.follow = cmd_has(ctx, REC_FOLLOW);
	r->o.cmdline = cmd_has(ctx, REC_CMDLINE);
	r->quiet = cmd_has(ctx, REC_QUIET);
	r->o.verbose = cmd_has(ctx, REC_VERBOSE);
	r->o.cpu_budget = cmd_real(ctx, REC_CPU_BUDGET);
	return 0;
}

/* The options are checked before the process is resolved. */
static int record_check(struct cmd_ctx *ctx)
{
	struct rec r;
	memset(&r, 0, sizeof(r));
	r.ctx = ctx;
	pid_t *tids = NULL;
	int rc = parse_options(&r, &tids);
	triggers_release(&r.trig);
	free(tids);
	return rc;
}

static int record_exec(struct cmd_ctx *ctx, int argc, char **argv)
{
	(void)argc;
	(void)argv;
	struct rec r;
	memset(&r, 0, sizeof(r));
	r.ctx = ctx;
	pid_t *tids = NULL;
	if (parse_options(&r, &tids) < 0) {
		triggers_release(&r.trig);
		free(tids);
		return EXIT_USAGE;
	}
	/* PID, NAME, --pid-of NAME or the shell's current target. */
	r.pid = ctx->target.pid;

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

	struct sd_recorder_io io = {.note = rec_note,
				    .saved = r.quiet ? NULL : rec_saved,
				    .arg = ctx,
				    .interrupted = &cmd_interrupted,
				    .snap_now = &usr1_pending,
				    .wake = &unblocked};
	struct sd_recorder *rec = recorder_new(&r.o, &r.trig, &io);
	struct sd_error err = {0};
	int rc;
	if (recorder_open(rec, r.pid, &err) < 0) {
		cmd_error(ctx, "record: %s", err.msg);
		rc = EXIT_FAIL;
	} else {
		switch (recorder_run(rec)) {
		case SD_REC_DONE: rc = EXIT_OK; break;
		case SD_REC_TARGET_GONE: rc = EXIT_PARTIAL; break;
		case SD_REC_INTERRUPTED: rc = EXIT_INTERRUPTED; break;
		case SD_REC_FAILED:
		default: rc = EXIT_FAIL; break;
		}
	}
	recorder_free(rec);
	sigprocmask(SIG_SETMASK, &oldmask, NULL);
	sigaction(SIGUSR1, &old_usr1, NULL);
	free(tids);
	return rc;
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
	    "format are described in docs/recording.md.\n"
	    "Exit status: 0 done (--count or --for reached), 1 the target exited, 2 failure\n"
	    "(cannot attach, disk full: the snapshots written stay intact), 64 usage error,\n"
	    "130 stopped by SIGINT/SIGTERM.",
	.options = record_options,
	.min_args = 0,
	.max_args = 1,
	.arg_complete = CMPL_PID,
	.flags = CMD_NEEDS_TARGET,
	.target_missing = "missing target: PID, NAME or --pid-of NAME\nusage: stackdump record "
			  "[options] PID|--pid-of NAME --every DURATION --out DIR",
	.check = record_check,
	.exec = record_exec,
};
