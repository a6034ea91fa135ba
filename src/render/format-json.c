// SPDX-License-Identifier: MIT
// JSON rendering of snapshots through the streaming writer (jsonw.h): the
// dump schema of docs/json.md, which the saved format (snapio.c) extends.
#include <stdio.h>

#include "format.h"
#include "format-go.h"
#include "format-tokio.h"
#include "locks.h"
#include "procfs.h"

static void wait_value(struct jsonw *w, const struct sd_thread *th,
		       const struct format_json_more *more)
{
	const struct sd_wait *wt = &th->wait;
	if (wt->kind < SD_WAIT_MUTEX || wt->kind > SD_WAIT_FUTEX) {
		jsonw_null(w);
		return;
	}
	jsonw_object_begin(w);
	jsonw_kstr(w, "kind", sd_wait_kind_name(wt->kind));
	if (wt->address)
		jsonw_khex(w, "address", wt->address);
	else
		jsonw_knull(w, "address");
	jsonw_kstr(w, "symbol", wt->symbol);
	if (wt->owner_known && wt->owner > 0)
		jsonw_kint(w, "owner", wt->owner);
	else
		jsonw_knull(w, "owner");
	if (wt->subkind)
		jsonw_kstr(w, "type", wt->subkind);
	if (wt->note)
		jsonw_kstr(w, "note", wt->note);
	if (wt->owner_known && wt->owner > 0 && wt->owner_evidence != SD_EVIDENCE_NONE) {
		jsonw_kstr(w, "owner_evidence", sd_evidence_name(wt->owner_evidence));
		if (wt->owner_frame >= 0)
			jsonw_kint(w, "owner_frame", wt->owner_frame);
	}
	if (more && more->wait)
		more->wait(w, th);
	jsonw_object_end(w);
}

void format_json_wait(struct jsonw *w, const struct sd_thread *th)
{
	wait_value(w, th, NULL);
}

/* The locks TH holds (th->holds): kind, address, symbol, mode, frame,
 * owner_evidence, candidates. */
static void holds_value(struct jsonw *w, const struct sd_thread *th)
{
	jsonw_array_begin(w);
	for (size_t i = 0; i < th->nholds; i++) {
		const struct sd_hold *h = &th->holds[i];
		jsonw_object_begin(w);
		jsonw_kstr(w, "kind", locks_kind_name(h->kind));
		jsonw_khex(w, "address", h->address);
		jsonw_kstr(w, "symbol", h->symbol);
		jsonw_kstr(w, "mode", h->mode);
		if (h->frame >= 0)
			jsonw_kint(w, "frame", h->frame);
		else
			jsonw_knull(w, "frame");
		jsonw_kstr(w, "owner_evidence", sd_evidence_name(h->evidence));
		jsonw_ku64(w, "candidates", h->ncandidates);
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
}

void format_json_thread_members(struct jsonw *w, const struct sd_snapshot *s,
				const struct sd_thread *th, const struct format_json_more *more)
{
	(void)s;
	char st[2] = {th->state ? th->state : '?', 0};
	jsonw_kint(w, "tid", th->tid);
	jsonw_kstr(w, "name", th->name ? th->name : "");
	jsonw_kstr(w, "state", st);
	if (th->syscall_nr >= 0 && !th->running) {
		const char *scn = procfs_syscall_name(th->syscall_nr);
		char buf[32];
		if (!scn) {
			snprintf(buf, sizeof(buf), "syscall_%ld", th->syscall_nr);
			scn = buf;
		}
		jsonw_kstr(w, "syscall", scn);
	} else {
		jsonw_knull(w, "syscall");
	}
	jsonw_kstr(w, "wchan", th->wchan);
	jsonw_key(w, "wait");
	wait_value(w, th, more);
	jsonw_kstr(w, "status", th->status == SD_THREAD_OK		? "ok"
				: th->status == SD_THREAD_EXITED	? "exited"
				: th->status == SD_THREAD_NOT_STOPPED ? "not_stopped"
									: "error");
	if (th->error)
		jsonw_kstr(w, "error", th->error);
	if (s->core) {
		/* Only a live process has these (docs/json.md). */
		jsonw_knull(w, "pause_us");
		jsonw_knull(w, "voluntary_ctxt_switches");
	} else {
		jsonw_ku64(w, "pause_us", th->pause_us);
		jsonw_ku64(w, "voluntary_ctxt_switches", th->vol_ctxsw);
	}
	jsonw_karray(w, "frames");
	for (size_t i = 0; i < th->nframes; i++)
		format_json_frame_more(w, &th->frames[i], more);
	jsonw_array_end(w);
	jsonw_kstr(w, "unwind_stop", th->unwind_stop);
	if (th->io_worker) /* only on one: a kernel thread of the process */
		jsonw_kbool(w, "io_worker", 1);
	jsonw_kstr(w, "capture", snapshot_capture_kind_name(th->kind));
	if (th->rbp_inferred) /* only on those: read without a stop (fpsite.h) */
		jsonw_kbool(w, "rbp_from_call_site", 1);
	/* state, syscall and wchan are /proc's, read before the freeze; the
	 * stack is the freeze's. When they disagree: */
	char at[2] = {th->stack_state ? th->stack_state : th->state ? th->state : '?', 0};
	jsonw_kstr(w, "state_at_stack", at);
	jsonw_kbool(w, "read_before_freeze", th->stack_state != 0);
	jsonw_ku64(w, "live_reads", th->live_reads);
	jsonw_kbool(w, "live_reads_proven", th->live_reads_proven);
	jsonw_key(w, "holds");
	holds_value(w, th);
}

void format_json_snapshot_members(struct jsonw *w, const struct sd_snapshot *s)
{
	jsonw_kint(w, "pid", s->pid);
	jsonw_kstr(w, "comm", s->comm);
	jsonw_kstr(w, "exe", s->exe);
	jsonw_kdouble(w, "time", s->time);
	if (s->core)
		jsonw_knull(w, "pause_us");
	else
		jsonw_ku64(w, "pause_us", s->pause_us);
	jsonw_kbool(w, "per_thread", s->per_thread);
	jsonw_kbool(w, "partial", s->partial);
	char st[2] = {s->state ? s->state : '?', 0};
	jsonw_kstr(w, "state", st);
	jsonw_kobject(w, "timings");
	jsonw_ku64(w, "capture_us", s->capture_us);
	jsonw_ku64(w, "unwind_us", s->unwind_us);
	jsonw_ku64(w, "symbolize_us", s->symbolize_us);
	jsonw_ku64(w, "infer_us", s->infer_us);
	jsonw_ku64(w, "stack_bytes", s->stack_bytes);
	jsonw_ku64(w, "frozen", s->nfrozen);
	jsonw_ku64(w, "asleep", s->nasleep);
	jsonw_ku64(w, "reused", s->nreused);
	jsonw_ku64(w, "retried", s->nretried);
	jsonw_ku64(w, "regstops", s->nregstops);
	jsonw_ku64(w, "rbp_inferred", s->nrbp_inferred);
	if (s->capture_note)
		jsonw_kstr(w, "capture_note", s->capture_note);
	jsonw_object_end(w);
	if (!s->core)
		return;
	jsonw_kobject(w, "core");
	jsonw_kstr(w, "file", s->core);
	jsonw_kstr(w, "command", s->core_args);
	jsonw_karray(w, "notes");
	for (const char *n = s->core_notes; n && *n;) {
		const char *e = strchr(n, '\n');
		size_t len = e ? (size_t)(e - n) : strlen(n);
		jsonw_strn(w, n, len);
		n = e ? e + 1 : n + len;
	}
	jsonw_array_end(w);
	jsonw_object_end(w);
	if (!s->crash.signo) {
		jsonw_knull(w, "crash");
		return;
	}
	jsonw_kobject(w, "crash");
	jsonw_kint(w, "signal", s->crash.signo);
	jsonw_kint(w, "code", s->crash.code);
	jsonw_ku64(w, "address", s->crash.addr);
	jsonw_kint(w, "tid", s->crash.tid);
	jsonw_kstr(w, "text", s->crash.text);
	jsonw_object_end(w);
}

void format_json_snapshot(struct jsonw *w, const struct sd_snapshot *s)
{
	jsonw_object_begin(w);
	format_json_snapshot_members(w, s);
	jsonw_karray(w, "threads");
	for (size_t i = 0; i < s->nthreads; i++) {
		jsonw_object_begin(w);
		format_json_thread_members(w, s, &s->threads[i], NULL);
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
	format_go_json(w, s);
	/* What the lock view would say first, for a script to act on. */
	struct sd_lockgraph *g = locks_graph(s);
	format_json_findings(w, s, g);
	locks_graph_free(g);
	format_tokio_json(w, s);
	jsonw_object_end(w);
}
