// SPDX-License-Identifier: MIT
// The render stage for snapshots: text for people, JSON for programs (a
// public interface, documented in docs/json.md).
#ifndef SD_FORMAT_H
#define SD_FORMAT_H

#include "jsonw.h"
#include "snapshot.h"
#include "util.h"

struct sd_render_opts {
	int no_source;   /* omit file:line */
	int color;       /* ANSI colours */
	int verbose;     /* timings, per-thread pause, build-ids */
	int group;       /* threads with identical stacks shown once */
	int go_group;    /* goroutines: 0 one by one, 1 identical ones merged,
			  * 2 merged where 4 or more are identical */
	const char *main_module; /* with color: frames of this module (the
				  * program) stand out; NULL: the snapshot's
				  * executable */
	int width;       /* > 0: a terminal this wide; frame lines fit it (no
			  * address, module and file on a continuation line,
			  * a long name cut in the middle); 0: no limit */
	int full_names;  /* keep generic and template arguments in function
			  * names (default: "Harness<..>::poll") */
	int all_frames;  /* every frame on its own line (default: a run of
			  * 3 or more identical recursive frames is one) */
};

/* Append the text rendering of S to OUT. */
void format_text_snapshot(struct strbuf *out, const struct sd_snapshot *s,
			  const struct sd_render_opts *o);
/* Append S to OUT with threads of identical stacks merged (group.h): the
 * process line counts the distinct stacks, each group shows its thread
 * count, compressed names and TIDs, then the stack once. */
void format_text_grouped(struct strbuf *out, const struct sd_snapshot *s,
			 const struct sd_render_opts *o);
/* The thread header line ("Thread 12 "name" S futex ...") without newline. */
void format_text_thread_header(struct strbuf *out, const struct sd_snapshot *s,
			       const struct sd_thread *th, const struct sd_render_opts *o);
/* One frame line, with its index. */
void format_text_frame(struct strbuf *out, size_t idx, const struct sd_frame *f,
		       const struct sd_render_opts *o);

/* The frames of TH, one line each (INDENT spaces more than a dump's),
 * each followed by its holds lines, then the holds no frame was found for.
 * Unless O->all_frames, a run of 3 or more consecutive frames of the same
 * function at the same file:line (a recursion) holding nothing is one
 * line: "#3-#62 beta_recurse ... at x.c:32, 60 times". */
void format_text_stack(struct strbuf *out, const struct sd_thread *th, size_t indent,
		       const struct sd_render_opts *o);
/* Append NAME to OUT escaped, with generic and template arguments elided
 * ("Harness<..>::poll", "std::vector<..>::push_back"); operators
 * ("operator<<") and qualified paths ("<T as Trait>::f") keep their
 * brackets. */
void format_short_name(struct strbuf *out, const char *name);
/* The N threads named NAMES[i] (TIDS[i]) in one short phrase:
 * "\"http-worker-0..49\", TIDs 4244..4293" when the names differ only in
 * a trailing number, "\"pool\" (3), TIDs ..." when they are one name,
 * else the first names and "and N more"; each list cut after about LIMIT
 * bytes. Names are escaped. */
void format_names_ranges(struct strbuf *out, const char *const *names, const pid_t *tids, size_t n,
			 size_t limit);
/* Break every line of OUT from byte FROM on that is wider than WIDTH
 * columns (escape sequences take none) at its last space that fits, the
 * rest on lines indented 4 more, so that a terminal of that width wraps
 * none. WIDTH <= 0 does nothing. */
void format_fit_width(struct strbuf *out, size_t from, int width);

/* Under frame IDX of TH (-1: after its last frame), one line per lock TH
 * holds there: "- holds mutex 0x... <sym>" when the lock records it,
 * "- holds (inferred) ..." when a reference in that frame says so. */
/* "101 \"cycle-1\"": TID and its name, a thread outside a --tid/--name
 * selection named too (format-fit.c). */
void format_thread_label(struct strbuf *out, const struct sd_snapshot *s, pid_t tid);
/* The last part of path P (P itself without a '/'; NULL for NULL). */
const char *format_base_name(const char *p);
void format_text_holds(struct strbuf *out, const struct sd_thread *th, long idx,
		       const struct sd_render_opts *o);

/* JSON, written through W (jsonw.h): the dump schema of docs/json.md. */
void format_json_snapshot(struct jsonw *w, const struct sd_snapshot *s);
/* One frame's object, as in a thread's "frames" (format-frame.c). */
void format_json_frame(struct jsonw *w, const struct sd_frame *f);
/* The wait of TH: its object, or null when TH is not waiting on a lock. */
void format_json_wait(struct jsonw *w, const struct sd_thread *th);

/* For a format that is the dump plus more (the saved format): members
 * added at the end of each frame's and each wait's object. */
struct format_json_more {
	void (*frame)(struct jsonw *w, const struct sd_frame *f);
	void (*wait)(struct jsonw *w, const struct sd_thread *th);
};
/* The members of S's object that come before "threads" ("pid" to
 * "timings"), inside an object the caller opened. */
void format_json_snapshot_members(struct jsonw *w, const struct sd_snapshot *s);
/* One frame's object; MORE (may be NULL) adds its members at the end
 * (format-frame.c). */
void format_json_frame_more(struct jsonw *w, const struct sd_frame *f,
			    const struct format_json_more *more);
/* The members of TH's object ("tid" to "holds"), inside an object the
 * caller opened; MORE (may be NULL) adds to frames and the wait. */
void format_json_thread_members(struct jsonw *w, const struct sd_snapshot *s,
				const struct sd_thread *th, const struct format_json_more *more);

/* "mutex 0x55d0e1c3a040 <g_ledger_lock> held by 4243 "flusher"" */
void format_text_wait(struct strbuf *out, const struct sd_snapshot *s, const struct sd_thread *th);

/* The lock view (`stackdump locks`) of S, whose lock graph is G (from
 * locks_graph(S)). With a series of NSNAPS > 1 snapshots (S the last)
 * taken over SPAN seconds, PARKED lists the NPARKED threads parked on the
 * same lock in all of them (locks_parked). Strings from the target are
 * escaped. */
struct sd_lockgraph;
struct sd_parked;
void format_text_locks(struct strbuf *out, const struct sd_snapshot *s,
		       const struct sd_lockgraph *g, const struct sd_parked *parked, size_t nparked,
		       size_t nsnaps, double span, const struct sd_render_opts *o);
/* The JSON of the lock view, written through W: {"pid", "comm", ...,
 * "locks", "idle", "deadlocks"} plus, for a series, "snapshots", "seconds",
 * "parked" and "long_polls" (LP, NLP: a Tokio program's, longpoll.h).
 * The schema is in docs/json.md. */
struct sd_long_poll;
void format_json_locks(struct jsonw *w, const struct sd_snapshot *s, const struct sd_lockgraph *g,
		       const struct sd_parked *parked, size_t nparked, size_t nsnaps, double span,
		       const struct sd_long_poll *lp, size_t nlp);


/* Findings of one snapshot (format-findings.c), from S and its lock graph
 * G (locks_graph(S)): deadlock cycles, the lock with the most waiters no
 * deadlock explains and its holder, threads in D state. The number of
 * them: */
size_t format_findings_count(const struct sd_snapshot *s, const struct sd_lockgraph *g);
/* Append the findings block to OUT: a "Verdict:" line (deadlock or not,
 * how many findings), then each finding's summary and the threads, locks
 * and frames it involves. Nothing when there is none, unless ALWAYS (then
 * one line says so). Returns the number of findings. */
size_t format_text_findings(struct strbuf *out, const struct sd_snapshot *s,
			    const struct sd_lockgraph *g, int always,
			    const struct sd_render_opts *o);
/* The member "findings": [{"kind": "deadlock" | "task_deadlock" |
 * "tokio_stall" | "future_lock" | "contended_lock" | "d_state", "summary",
 * "threads": [tid...], "objects": [{"kind", "address", "symbol",
 * "owner"}...]}...] (contended_lock adds "holder" and "waiters"; the
 * Tokio kinds "tasks" and "runtime", see format-tokio.h), inside an
 * object the caller opened. */
void format_json_findings(struct jsonw *w, const struct sd_snapshot *s,
			  const struct sd_lockgraph *g);

/* Append S to OUT made safe for XML text and attributes: control
 * characters escaped by strbuf_add_escaped, then & < > " ' as entities. */
void format_xml_escaped(struct strbuf *out, const char *s);

#endif
