// SPDX-License-Identifier: MIT
// report: read saved snapshots (a recording directory or files) and show
// what happened across them: the aggregated profile, a timeline of thread
// states (text and SVG), locks over time, and the threads that sat in every
// snapshot with the same stack. The analysis is src/report/series.c.
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "findings.h"
#include "series.h"
#include "timeline.h"
#include "terminal.h"
#include "cmd.h"

enum {
	REP_FORMAT,
	REP_VIEW,
	REP_OUTPUT,
	REP_TIMELINE_SVG,
	REP_ONLY,
	REP_LIMIT,
	REP_MIN_PERCENT,
	REP_ON_CPU,
	REP_OFF_CPU,
	REP_NO_IDLE,
	REP_GROUP_THREADS,
	REP_BY_ADDRESS,
	REP_TITLE,
};

static const struct cmd_option report_options[] = {
    [REP_FORMAT] = OPT_FORMAT("text or json: the whole report; folded, svg or pprof: the "
			      "profile alone",
			      "text json folded svg pprof", "text"),
    [REP_VIEW] = OPT_CHOICE("view", 0, "VIEW",
			    "the profile in the text report: top, tree or locks (default top)",
			    "top tree locks", "top"),
    [REP_OUTPUT] =
	OPT_STRING("output", 'o', "FILE", "write to FILE instead of standard output", CMPL_FILE),
    [REP_TIMELINE_SVG] =
	OPT_STRING("timeline-svg", 0, "FILE",
		   "also write the timeline of thread states as an SVG chart", CMPL_FILE),
    [REP_ONLY] = OPT_STRING("only", 0, "SECTIONS",
			    "only these sections: findings, summary, profile, timeline, locks, "
			    "stuck (comma-separated)",
			    CMPL_NONE),
    [REP_LIMIT] =
	OPT_COUNT("limit", 'l', "N", "profile top: the N hottest stacks (default 10, 0: all)", 0,
		  1e9, "10", "a number >= 0"),
    [REP_MIN_PERCENT] =
	OPT_REAL("min-percent", 0, "PCT", "profile tree: hide call paths under PCT% (default 0.5)",
		 0, 100, "0.5", "0 to 100"),
    [REP_ON_CPU] = OPT_FLAG("on-cpu", 0, "profile: only threads on a CPU (state R)"),
    [REP_OFF_CPU] = OPT_FLAG("off-cpu", 0, "profile: only threads off CPU"),
    [REP_NO_IDLE] = OPT_FLAG("no-idle", 0,
			     "profile: hide threads idling (epoll_wait, poll, condvars, sleep...)"),
    [REP_GROUP_THREADS] =
	OPT_FLAG("group-threads", 'g', "profile: count worker-1..worker-N as one family worker-*"),
    [REP_BY_ADDRESS] =
	OPT_FLAG("by-address", 0, "profile: merge stacks by address, not by function"),
    [REP_TITLE] = OPT_STRING("title", 0, "TEXT", "svg: the title of the flame graph", CMPL_NONE),
    {0},
};

/* Load PATH into the series; a file that cannot be read is reported and
 * counted in *BAD. */
static void add_file(struct cmd_ctx *ctx, struct sd_series *r, const char *path, int *bad)
{
	struct sd_error err = {0};
	struct snapio_meta m;
	struct sd_snapshot *s = snapio_load(path, &m, &err);
	if (!s) {
		cmd_error(ctx, "report: %s", err.msg);
		(*bad)++;
		return;
	}
	series_add(r, path, s, &m);
}

static int parse_sections(struct cmd_ctx *ctx, const char *v, unsigned *out)
{
	static const struct {
		const char *name;
		unsigned bit;
	} names[] = {{"summary", SD_SERIES_SUMMARY}, {"profile", SD_SERIES_PROFILE},
		     {"timeline", SD_SERIES_TIMELINE}, {"locks", SD_SERIES_LOCKS},
		     {"stuck", SD_SERIES_STUCK},	   {"findings", SD_SERIES_FINDINGS}};
	*out = 0;
	char *copy = sd_xstrdup(v), *save = NULL;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		unsigned bit = 0;
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (!strcmp(tok, names[i].name))
				bit = names[i].bit;
		if (!bit) {
			cmd_error(ctx,
				  "report: unknown section '%s' (findings, summary, profile, timeline, "
				  "locks, stuck)",
				  tok);
			free(copy);
			return -1;
		}
		*out |= bit;
	}
	free(copy);
	return *out ? 0 : -1;
}

/* Write LEN bytes to PATH, or to the command's output when PATH is NULL. */
static int emit(struct cmd_ctx *ctx, const char *path, const void *buf, size_t len)
{
	if (!path) {
		cmd_write(ctx, buf, len);
		return 0;
	}
	struct sd_error err = {0};
	if (snapio_write_atomic(path, buf, len, 0, 0600, NULL, &err) < 0) {
		cmd_error(ctx, "report: %s", err.msg);
		return -1;
	}
	return 0;
}

static int report_exec(struct cmd_ctx *ctx, int argc, char **argv)
{
	unsigned sections = SD_SERIES_ALL;
	const char *v;
	if ((v = cmd_str(ctx, REP_ONLY)) && parse_sections(ctx, v, &sections) < 0)
		return EXIT_USAGE;
	struct sd_prender ro;
	memset(&ro, 0, sizeof(ro));
	ro.limit = (int)cmd_num(ctx, REP_LIMIT);
	ro.min_percent = cmd_real(ctx, REP_MIN_PERCENT);
	ro.color = ctx->color && !cmd_has(ctx, REP_OUTPUT);
	ro.title = cmd_str(ctx, REP_TITLE);
	if (cmd_has(ctx, REP_ON_CPU) && cmd_has(ctx, REP_OFF_CPU)) {
		cmd_error(ctx, "report: --on-cpu and --off-cpu exclude each other");
		return EXIT_USAGE;
	}
	const char *format = cmd_str(ctx, REP_FORMAT);
	const char *view = cmd_str(ctx, REP_VIEW);
	const char *outpath = cmd_str(ctx, REP_OUTPUT);
	if (!strcmp(format, "pprof") && !outpath && isatty(fileno(ctx->out))) {
		cmd_error(ctx, "report: pprof is binary: write it to a file with -o FILE");
		return EXIT_USAGE;
	}
	if (!strcmp(format, "svg") && !outpath && isatty(fileno(ctx->out))) {
		cmd_error(ctx, "report: an SVG flame graph is for a browser: write it with -o "
			       "FILE.svg (or redirect stdout)");
		return EXIT_USAGE;
	}
	struct sd_profile_opts po;
	profile_opts_init(&po);
	po.by_address = cmd_has(ctx, REP_BY_ADDRESS);
	po.group_threads = cmd_has(ctx, REP_GROUP_THREADS);
	po.no_idle = cmd_has(ctx, REP_NO_IDLE);
	po.cpu = cmd_has(ctx, REP_ON_CPU)    ? SD_CPU_ON
		 : cmd_has(ctx, REP_OFF_CPU) ? SD_CPU_OFF
					     : SD_CPU_ALL;
	po.locks = !strcmp(view, "locks") || !strcmp(format, "json");
	struct sd_series *r = series_new(&po);

	int bad = 0;
	for (int i = 0; i < argc && !cmd_interrupted; i++) {
		struct stat st;
		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			char **names;
			size_t n, missing = 0;
			struct sd_error err = {0};
			if (snapio_list_dir(argv[i], &names, &n, &missing, &err) < 0) {
				cmd_error(ctx, "report: %s", err.msg);
				bad++;
				continue;
			}
			if (missing)
				cmd_error(ctx,
					  "report: %s: %zu snapshots listed in the manifest are gone "
					  "(removed by hand?)",
					  argv[i], missing);
			if (!n)
				cmd_error(ctx, "report: %s: no snapshots in this directory", argv[i]);
			for (size_t k = 0; k < n; k++)
				add_file(ctx, r, names[k], &bad);
			snapio_names_free(names, n);
		} else {
			add_file(ctx, r, argv[i], &bad);
		}
	}
	if (cmd_interrupted) {
		cmd_error(ctx, "report: interrupted");
		series_free(r);
		return EXIT_INTERRUPTED;
	}
	if (!r->n) {
		cmd_error(ctx, "report: no snapshot could be read");
		series_free(r);
		return EXIT_FAIL;
	}
	series_build(r);

	int rc = bad ? EXIT_PARTIAL : EXIT_OK;
	struct strbuf sb;
	strbuf_init(&sb);
	if (!strcmp(format, "pprof")) {
		uint8_t *buf = NULL;
		size_t len = 0;
		struct sd_error err = {0};
		if (format_profile_pprof(r->prof, &buf, &len, &err) < 0) {
			cmd_error(ctx, "report: %s", err.msg);
			rc = EXIT_FAIL;
		} else if (emit(ctx, outpath, buf, len) < 0) {
			rc = EXIT_FAIL;
		}
		free(buf);
	} else {
		if (!strcmp(format, "json")) {
			struct jsonw w;
			jsonw_init(&w, &sb, CMD_JSON_INDENT);
			format_series_json(&w, r, sections);
			jsonw_release(&w);
			strbuf_adds(&sb, "\n");
		} else if (!strcmp(format, "folded")) {
			format_profile_folded(&sb, r->prof);
		} else if (!strcmp(format, "svg")) {
			format_profile_svg(&sb, r->prof, &ro);
		} else {
			/* What to look at first, then the evidence. */
			if (sections & SD_SERIES_FINDINGS) {
				findings_format_text(&sb, &r->fnd);
				strbuf_adds(&sb, "\n");
			}
			if (sections & SD_SERIES_SUMMARY)
				format_series_summary(r, &sb);
			if (sections & SD_SERIES_PROFILE)
				format_series_profile(r, &sb, view, &ro);
			if (sections & SD_SERIES_TIMELINE)
				format_series_timeline(r, &sb);
			if (sections & SD_SERIES_LOCKS)
				format_series_locks(r, &sb);
			if (sections & SD_SERIES_STUCK)
				format_series_stuck(r, &sb);
			/* At a terminal, lines fit its width (none wraps). */
			if (!outpath)
				format_fit_width(&sb, 0, terminal_width(ctx->out));
		}
		if (emit(ctx, outpath, sb.buf, sb.len) < 0)
			rc = EXIT_FAIL;
	}
	strbuf_release(&sb);

	if ((v = cmd_str(ctx, REP_TIMELINE_SVG))) {
		struct strbuf svg;
		strbuf_init(&svg);
		format_timeline_svg(&svg, r->sv, r->n, &r->fnd);
		if (emit(ctx, v, svg.buf, svg.len) < 0)
			rc = EXIT_FAIL;
		strbuf_release(&svg);
	}
	series_free(r);
	return rc;
}

const struct cmd_entry cmd_report_entry = {
	.name = "report",
	.alias = NULL,
	.args_usage = "DIR|FILE...",
	.summary = "summarize saved snapshots: findings first, then profile, timeline, locks",
	.description =
	    "Reads a recording directory (in the order of its manifest) or snapshot files\n"
	    "and shows, across all of them: the profile (identical stacks merged, counted over\n"
	    "threads and snapshots; --view and --format give every view and format of\n"
	    "'profile'), a timeline of each thread's state per snapshot (--timeline-svg draws\n"
	    "it), each lock's waiters and holder over time with any deadlock, and the\n"
	    "threads that kept the same stack until the last snapshot. Findings come first:\n"
	    "deadlocks, locks held longest and their holders, threads stuck, CPU hot spots,\n"
	    "each once, with its wall-clock times (UTC) and snapshots. Files that cannot be read\n"
	    "are reported and skipped.\n"
	    "Exit status: 0 ok, 1 some files could not be read, 2 none could, 64 usage error.",
	.options = report_options,
	.min_args = 1,
	.max_args = -1,
	.arg_complete = CMPL_FILE,
	.exec = report_exec,
};
