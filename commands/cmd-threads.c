// SPDX-License-Identifier: MIT
// threads [PID|NAME]: one line per thread (TID, name, state, syscall or
// wait, CPU% since the last look, wchan) from /proc alone, without stopping
// the target. Lock waits come from the last snapshot while the thread still
// sits in the same wait.
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "analyze.h"
#include "format.h"
#include "holders.h"
#include "procfs.h"
#include "shell.h"
#include "threads-table.h"

enum { THREADS_FORMAT };

static const struct cmd_option threads_options[] = {
    [THREADS_FORMAT] = OPT_FORMAT("output format: text or json", "text json", "text"),
    {0},
};

/* CPU time of each thread at the last look at a process, so that the next
 * look shows CPU% over the time in between. Kept for the life of the
 * program (the shell's session); a few bytes per thread. */
struct cpu_tick {
	pid_t tid;
	uint64_t ticks;
};
struct cpu_look {
	pid_t pid;
	uint64_t t_ns;
	struct cpu_tick *v;
	size_t n;
};
static struct cpu_look *looks;
static size_t nlooks, looks_cap;

/* The first look at a process samples over this long. */
#define FIRST_LOOK_NS 200000000ull

static struct cpu_look *look_find(pid_t pid)
{
	for (size_t i = 0; i < nlooks; i++)
		if (looks[i].pid == pid)
			return &looks[i];
	return NULL;
}

static int look_ticks(const struct cpu_look *l, pid_t tid, uint64_t *ticks)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].tid == tid) {
			*ticks = l->v[i].ticks;
			return 1;
		}
	return 0;
}

struct row {
	pid_t tid;
	struct sd_taskinfo ti;
	int alive;
};

/* Read every thread of PID now into a new look (and ROWS if not NULL). */
static int read_look(pid_t pid, struct cpu_look *l, struct row **rows, size_t *nrows,
		     struct sd_error *err)
{
	pid_t *tids;
	size_t n;
	int r = procfs_list_tids(pid, &tids, &n, err);
	if (r < 0)
		return r;
	l->pid = pid;
	l->t_ns = sd_now_ns();
	l->v = sd_xcalloc(n ? n : 1, sizeof(*l->v));
	l->n = 0;
	struct row *rv = rows ? sd_xcalloc(n ? n : 1, sizeof(*rv)) : NULL;
	size_t nr = 0;
	for (size_t i = 0; i < n; i++) {
		struct sd_taskinfo ti;
		if (procfs_taskinfo(pid, tids[i], &ti) < 0)
			continue; /* exited meanwhile */
		l->v[l->n].tid = tids[i];
		l->v[l->n].ticks = ti.utime + ti.stime;
		l->n++;
		if (rv) {
			rv[nr].tid = tids[i];
			rv[nr].ti = ti;
			rv[nr].alive = 1;
			nr++;
		}
	}
	free(tids);
	if (rows) {
		*rows = rv;
		*nrows = nr;
	}
	return 0;
}

/* Sleep NS unless interrupted (SIGINT ends nanosleep with EINTR). */
static void nap(uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
	while (!cmd_interrupted && nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* The holder of what R waits on: the last snapshot's owner while R sits
 * in the same wait, else a normal mutex's owner field read now; 0 when
 * none is known or it is not one of ROWS. */
static const struct sd_thread *still_waiting(const struct sd_snapshot *last, const struct row *r);
static pid_t row_owner(pid_t pid, const struct sd_snapshot *last, const struct row *r,
		       const struct row *rows, size_t n)
{
	const struct sd_thread *th = still_waiting(last, r);
	pid_t o = th && th->wait.owner_known ? th->wait.owner : 0;
	if (!o && r->ti.syscall_known && !r->ti.running && r->ti.syscall_nr == 202)
		o = holders_live_mutex_owner(pid, r->ti.syscall_args[0], r->ti.syscall_args[1],
					     r->ti.syscall_args[2]);
	for (size_t i = 0; o && i < n; i++)
		if (rows[i].tid == o && o != r->tid)
			return o;
	return 0;
}

/* "mutex <g_lock> (50 waiting)" for TID, from the owners OWNER[i] of the
 * waits of ROWS[i]. */
static void holds_cell(struct strbuf *sb, const struct row *rows, const pid_t *owner, size_t n,
		       pid_t tid, const struct sd_snapshot *last)
{
	size_t cnt = 0, first = 0;
	for (size_t i = 0; i < n; i++)
		if (owner[i] == tid && !cnt++)
			first = i;
	if (!cnt)
		return;
	const struct sd_thread *th = still_waiting(last, &rows[first]);
	if (th && th->wait.symbol) {
		strbuf_addf(sb, "%s <", sd_wait_kind_name(th->wait.kind));
		strbuf_add_escaped(sb, th->wait.symbol);
		strbuf_adds(sb, ">");
	} else {
		strbuf_addf(sb, "%s 0x%" PRIx64, th ? sd_wait_kind_name(th->wait.kind) : "mutex",
			    rows[first].ti.syscall_args[0]);
	}
	strbuf_addf(sb, " (%zu waiting)", cnt);
}

/* Is TH of the last snapshot still in the same wait as /proc shows now?
 * Same syscall with the same first argument (the futex address). */
static const struct sd_thread *still_waiting(const struct sd_snapshot *last, const struct row *r)
{
	if (!last)
		return NULL;
	const struct sd_thread *th = snapshot_find_thread(last, r->tid);
	if (!th || th->wait.kind < SD_WAIT_MUTEX || th->wait.kind > SD_WAIT_FUTEX)
		return NULL;
	if (!r->ti.syscall_known || r->ti.running || r->ti.syscall_nr < 0)
		return NULL;
	if (th->syscall_nr != r->ti.syscall_nr || th->syscall_args[0] != r->ti.syscall_args[0])
		return NULL;
	return th;
}

/* The wait a thread in restart_syscall continues (see
 * target_restarted), with a target for symbols: the shell's when it is
 * attached to PID, else one made for this look (*OWN, freed by the
 * caller). */
static const char *restarted_name(struct cmd_ctx *ctx, pid_t pid, struct sd_target **own,
				  const struct row *r)
{
	struct cmd_session *s = ctx->session;
	struct sd_target *t = NULL;
	int i = s ? shell_target_index(s, pid) : -1;
	if (i >= 0) {
		t = s->targets[i];
	} else {
		if (!*own) {
			struct sd_error err = {0};
			*own = target_new(pid, &err);
		}
		t = *own;
	}
	return t ? target_restarted(t, r->ti.pc) : NULL;
}

/* Nothing in the /proc syscall file without ptrace access: say why '?'. */
static int yama_present(void)
{
	return access("/proc/sys/kernel/yama/ptrace_scope", F_OK) == 0;
}

static void wait_text_live(struct strbuf *sb, const struct row *r, const char *restarted)
{
	const struct sd_taskinfo *ti = &r->ti;
	switch (ti->state) {
	case 'T':
	case 't': strbuf_adds(sb, "stopped"); return;
	case 'Z':
	case 'X': strbuf_adds(sb, "exited"); return;
	default: break;
	}
	if (!ti->syscall_known) {
		strbuf_adds(sb, ti->state == 'R' ? "running" : "?");
		return;
	}
	if (ti->running) {
		strbuf_adds(sb, "running");
		return;
	}
	if (ti->syscall_nr < 0) {
		strbuf_adds(sb, "-");
		return;
	}
	/* restart_syscall is the footprint of a stop (often ours): show the
	 * wait it continues. */
	const char *name = restarted ? restarted : procfs_syscall_name(ti->syscall_nr);
	if (name)
		strbuf_adds(sb, name);
	else
		strbuf_addf(sb, "syscall %ld", ti->syscall_nr);
	if (ti->syscall_nr == SYS_futex)
		strbuf_addf(sb, " 0x%" PRIx64, ti->syscall_args[0]);
}

/* A name or wchan for JSON: null when empty. */
static void kstr(struct jsonw *w, const char *key, const char *s)
{
	jsonw_kstr(w, key, s && *s ? s : NULL);
}

/* threads of a loaded snapshot: no CPU%, waits as analyzed then. */
static int threads_snapshot(struct cmd_ctx *ctx, const struct sd_snapshot *s, int json)
{
	if (json) {
		struct strbuf sb;
		struct jsonw w;
		cmd_json_init(&w, &sb);
		jsonw_object_begin(&w);
		jsonw_kint(&w, "pid", s->pid);
		kstr(&w, "comm", s->comm);
		kstr(&w, "snapshot", ctx->session->loaded_path);
		jsonw_karray(&w, "threads");
		for (size_t i = 0; i < s->nthreads; i++) {
			const struct sd_thread *th = &s->threads[i];
			jsonw_object_begin(&w);
			jsonw_kint(&w, "tid", th->tid);
			kstr(&w, "name", th->name);
			jsonw_kstrn(&w, "state", &th->state, th->state ? 1 : 0);
			const char *sc = th->syscall_nr >= 0 ? procfs_syscall_name(th->syscall_nr) : NULL;
			kstr(&w, "syscall", sc);
			jsonw_key(&w, "wait");
			format_json_wait(&w, th);
			jsonw_knull(&w, "cpu_percent");
			kstr(&w, "wchan", th->wchan);
			jsonw_object_end(&w);
		}
		jsonw_array_end(&w);
		jsonw_object_end(&w);
		cmd_print_json(ctx, &w);
		return EXIT_OK;
	}
	struct cells *c = sd_xcalloc(s->nthreads ? s->nthreads : 1, sizeof(*c));
	for (size_t i = 0; i < s->nthreads; i++) {
		const struct sd_thread *th = &s->threads[i];
		threads_cells_init(&c[i]);
		strbuf_addf(&c[i].tid, "%d", (int)th->tid);
		strbuf_add_escaped(&c[i].name, th->name ? th->name : "");
		strbuf_addf(&c[i].state, "%c", th->state ? th->state : '?');
		if (th->wait.kind >= SD_WAIT_MUTEX && th->wait.kind <= SD_WAIT_FUTEX) {
			format_text_wait(&c[i].wait, s, th);
			c[i].lock = 1;
		} else {
			const char *st = analyze_state_text(th);
			strbuf_adds(&c[i].wait, *st ? st : "-");
		}
		strbuf_adds(&c[i].cpu, "-");
		strbuf_add_escaped(&c[i].wchan, th->wchan ? th->wchan : "");
	}
	struct strbuf h;
	strbuf_init(&h);
	strbuf_adds(&h, "snapshot ");
	strbuf_add_escaped(&h, ctx->session->loaded_path ? ctx->session->loaded_path : "(loaded)");
	strbuf_addf(&h, ": PID %d \"", (int)s->pid);
	strbuf_add_escaped(&h, s->comm ? s->comm : "?");
	strbuf_addf(&h, "\", %zu thread%s (no CPU%%: not a live process)", s->nthreads,
		    s->nthreads == 1 ? "" : "s");
	threads_print_table(ctx, h.buf, c, s->nthreads, NULL);
	strbuf_release(&h);
	for (size_t i = 0; i < s->nthreads; i++)
		threads_cells_release(&c[i]);
	free(c);
	return EXIT_OK;
}

static int threads_live(struct cmd_ctx *ctx, pid_t pid, int json)
{
	struct sd_procinfo pi;
	struct sd_error err = {0};
	if (procfs_procinfo(pid, &pi, &err) < 0) {
		cmd_error(ctx, "threads: %s", err.msg);
		return EXIT_FAIL;
	}
	struct cpu_look *prev = look_find(pid);
	struct cpu_look first = {0};
	if (!prev) {
		/* Nothing to compare with: measure over a short interval. */
		if (read_look(pid, &first, NULL, NULL, &err) < 0) {
			cmd_error(ctx, "threads: %s", err.msg);
			procfs_procinfo_release(&pi);
			return EXIT_FAIL;
		}
		nap(FIRST_LOOK_NS);
		prev = &first;
	}
	if (cmd_interrupted) {
		free(first.v);
		procfs_procinfo_release(&pi);
		return EXIT_INTERRUPTED;
	}
	struct cpu_look now = {0};
	struct row *rows;
	size_t n;
	if (read_look(pid, &now, &rows, &n, &err) < 0) {
		cmd_error(ctx, "threads: %s", err.msg);
		free(first.v);
		procfs_procinfo_release(&pi);
		return EXIT_FAIL;
	}
	double secs = (double)(now.t_ns - prev->t_ns) / 1e9;
	double hz = (double)sysconf(_SC_CLK_TCK);
	const struct sd_snapshot *last = ctx->session ? ctx->session->last : NULL;
	if (last && last->pid != pid)
		last = NULL;
	int used_last = 0, unknown = 0;
	struct sd_target *own = NULL;

	struct strbuf sb;
	struct jsonw w;
	cmd_json_init(&w, &sb);
	struct cells *c = NULL;
	if (json) {
		jsonw_object_begin(&w);
		jsonw_kint(&w, "pid", pid);
		kstr(&w, "comm", pi.comm);
		jsonw_kdouble(&w, "interval", secs);
		jsonw_karray(&w, "threads");
	} else {
		c = sd_xcalloc(n ? n : 1, sizeof(*c));
	}
	pid_t *owner = sd_xcalloc(n ? n : 1, sizeof(*owner));
	for (size_t i = 0; i < n; i++)
		owner[i] = row_owner(pid, last, &rows[i], rows, n);
	for (size_t i = 0; i < n; i++) {
		const struct row *r = &rows[i];
		uint64_t before = 0;
		look_ticks(prev, r->tid, &before); /* a new thread started from 0 */
		uint64_t ticks = r->ti.utime + r->ti.stime;
		double cpu = secs > 0 && ticks >= before ? (double)(ticks - before) / hz / secs * 100.0
							 : 0.0;
		const struct sd_thread *th = still_waiting(last, r);
		used_last |= th != NULL;
		if (json) {
			jsonw_object_begin(&w);
			jsonw_kint(&w, "tid", r->tid);
			kstr(&w, "name", r->ti.comm);
			jsonw_kstrn(&w, "state", &r->ti.state, 1);
			const char *sc = r->ti.syscall_known && !r->ti.running && r->ti.syscall_nr >= 0
					     ? procfs_syscall_name(r->ti.syscall_nr)
					     : NULL;
			if (sc && r->ti.syscall_nr == 219) {
				const char *rs = restarted_name(ctx, pid, &own, r);
				sc = rs ? rs : sc;
			}
			kstr(&w, "syscall", sc);
			if (r->ti.syscall_known && !r->ti.running)
				jsonw_kint(&w, "syscall_nr", r->ti.syscall_nr);
			else
				jsonw_knull(&w, "syscall_nr");
			jsonw_key(&w, "wait");
			if (th)
				format_json_wait(&w, th);
			else
				jsonw_null(&w);
			jsonw_kdouble(&w, "cpu_percent", cpu);
			kstr(&w, "wchan", r->ti.wchan);
			jsonw_object_end(&w);
			continue;
		}
		threads_cells_init(&c[i]);
		strbuf_addf(&c[i].tid, "%d", (int)r->tid);
		strbuf_add_escaped(&c[i].name, r->ti.comm);
		strbuf_addf(&c[i].state, "%c", r->ti.state ? r->ti.state : '?');
		if (th) {
			format_text_wait(&c[i].wait, last, th);
			c[i].lock = 1;
		} else {
			const char *rs = NULL;
			if (r->ti.syscall_known && !r->ti.running && r->ti.syscall_nr == 219)
				rs = restarted_name(ctx, pid, &own, r);
			wait_text_live(&c[i].wait, r, rs);
			unknown += !r->ti.syscall_known && r->ti.state != 'R';
		}
		strbuf_addf(&c[i].cpu, "%.1f", cpu);
		strbuf_add_escaped(&c[i].wchan, r->ti.wchan);
		holds_cell(&c[i].holds, rows, owner, n, r->tid, last);
	}
	free(owner);
	if (json) {
		jsonw_array_end(&w);
		jsonw_object_end(&w);
		cmd_print_json(ctx, &w);
	} else {
		struct strbuf h, f;
		strbuf_init(&h);
		strbuf_init(&f);
		strbuf_addf(&h, "PID %d \"", (int)pid);
		strbuf_add_escaped(&h, pi.comm);
		strbuf_addf(&h, "\": %zu thread%s, CPU%% over the last %.1f s", n, n == 1 ? "" : "s",
			    secs);
		if (used_last)
			strbuf_addf(&f, "lock waits as of the last snapshot, %.0f s ago",
				    sd_wall_time() - last->time);
		if (unknown)
			strbuf_addf(&f, "%s? in WAIT: /proc/TID/syscall is readable only with ptrace "
					"access to the process (run as root or as its owner%s)",
				    used_last ? "\n" : "",
				    yama_present() ? "; see kernel.yama.ptrace_scope" : "");
		threads_print_table(ctx, h.buf, c, n, used_last || unknown ? f.buf : NULL);
		strbuf_release(&h);
		strbuf_release(&f);
		for (size_t i = 0; i < n; i++)
			threads_cells_release(&c[i]);
		free(c);
	}
	/* This look is the base of the next one. */
	struct cpu_look *slot = look_find(pid);
	if (!slot) {
		sd_grow(&looks, &looks_cap, nlooks + 1, sizeof(*looks));
		slot = &looks[nlooks++];
	} else {
		free(slot->v);
	}
	*slot = now;
	target_free(own);
	free(first.v);
	free(rows);
	procfs_procinfo_release(&pi);
	return EXIT_OK;
}

static int threads_exec(struct cmd_ctx *ctx, int argc, char **argv)
{
	(void)argc;
	(void)argv;
	int json = cmd_is(ctx, THREADS_FORMAT, "json");
	if (ctx->target.loaded)
		return threads_snapshot(ctx, ctx->target.loaded, json);
	return threads_live(ctx, ctx->target.pid, json);
}

const struct cmd_entry cmd_threads_entry = {
	.name = "threads",
	.args_usage = "[PID|NAME]",
	.summary = "list threads: name, state, syscall or lock wait, CPU%, wchan",
	.description =
	    "Reads /proc only: the process is not stopped. CPU% is measured since the last\n"
	    "'threads' on that process (the first look measures over 0.2 s). A lock wait\n"
	    "(\"mutex 0x... held by 4243\") comes from the last snapshot (dump, locks) while\n"
	    "the thread still sits in the same futex. In the shell, PID defaults to the\n"
	    "current target, or the loaded snapshot.\n"
	    "Exit status: 0 ok, 2 no such process, 64 usage error, 130 interrupted.",
	.options = threads_options,
	.min_args = 0,
	.max_args = 1,
	.arg_complete = CMPL_PID,
	.flags = CMD_NEEDS_TARGET | CMD_TARGET_LOADED,
	.exec = threads_exec,
};
