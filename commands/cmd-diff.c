// SPDX-License-Identifier: MIT
// diff A B: compare two saved profiles (folded stacks or profile JSON):
// which stacks and functions grew or shrank, as text, as a differential
// flame graph, or as folded "stack countA countB" lines.
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "format-profile.h"
#include "profile.h"
#include "safefile.h"
#include "cmd.h"

enum { DIFF_FORMAT, DIFF_OUTPUT, DIFF_LIMIT, DIFF_TITLE };

static const struct cmd_option diff_options[] = {
    [DIFF_FORMAT] =
	OPT_FORMAT("text, svg, folded or json (default text)", "text svg folded json", "text"),
    [DIFF_OUTPUT] = OPT_STRING("output", 'o', "FILE", "write to FILE instead of stdout", CMPL_FILE),
    [DIFF_LIMIT] = OPT_COUNT("limit", 'l', "N",
			     "text: at most N stacks and functions per list (default 20, 0: all)",
			     0, 1000000000, "20", "a number, 0 for all"),
    [DIFF_TITLE] = OPT_STRING("title", 0, "TEXT", "svg: the title of the flame graph", CMPL_NONE),
    {0},
};

/* Folded with both counts, the input of difffolded-style tools: "stack A B"
 * with A scaled to B's total. */
static void diff_folded(struct strbuf *sb, struct sd_profile *d)
{
	for (size_t i = 0; i < d->nstacks; i++) {
		const struct sd_pstack *st = &d->stacks[i];
		for (size_t k = st->nframes; k-- > 0;) {
			strbuf_add_escaped(sb, st->frames[k].name);
			if (k)
				strbuf_adds(sb, ";");
		}
		strbuf_addf(sb, " %.0f %" PRIu64 "\n", st->value_a, st->count);
	}
}

static void diff_json(struct jsonw *w, struct sd_profile *d)
{
	jsonw_object_begin(w);
	jsonw_kstr(w, "kind", "stackdump-profile-diff");
	jsonw_ku64(w, "samples_a", d->total_a);
	jsonw_ku64(w, "samples_b", profile_total(d));
	double tb = (double)profile_total(d);
	jsonw_karray(w, "stacks");
	for (size_t i = 0; i < d->nstacks; i++) {
		const struct sd_pstack *st = &d->stacks[i];
		jsonw_object_begin(w);
		jsonw_karray(w, "frames");
		for (size_t k = 0; k < st->nframes; k++)
			jsonw_str(w, st->frames[k].name);
		jsonw_array_end(w);
		jsonw_kdouble(w, "a_scaled", st->value_a);
		jsonw_ku64(w, "b", st->count);
		jsonw_kdouble(w, "delta_percent",
			      tb > 0 ? 100.0 * ((double)st->count - st->value_a) / tb : 0.0);
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
	jsonw_object_end(w);
}

static int diff_exec(struct cmd_ctx *ctx, int argc, char **argv)
{
	if (argc != 2) {
		cmd_error(ctx, "diff: need two profiles (A B)\nusage: stackdump diff [options] A B");
		return EXIT_USAGE;
	}
	const char *format = cmd_str(ctx, DIFF_FORMAT);
	struct sd_prender ro = {
	    .limit = (int)cmd_num(ctx, DIFF_LIMIT), .diff = 1, .color = ctx->color};
	struct sd_error err = {0};
	struct sd_profile *a = profile_load(argv[0], &err);
	if (!a) {
		cmd_error(ctx, "%s", err.msg);
		return EXIT_FAIL;
	}
	struct sd_profile *b = profile_load(argv[1], &err);
	if (!b) {
		cmd_error(ctx, "%s", err.msg);
		profile_free(a);
		return EXIT_FAIL;
	}
	struct sd_profile *d = profile_diff(a, b);
	profile_sort(d);
	struct strbuf sb;
	strbuf_init(&sb);
	char title[512];
	snprintf(title, sizeof(title), "Differential flame graph: %s -> %s", argv[0], argv[1]);
	ro.title = cmd_has(ctx, DIFF_TITLE) ? cmd_str(ctx, DIFF_TITLE) : title;
	if (!strcmp(format, "svg")) {
		format_profile_svg(&sb, d, &ro);
	} else if (!strcmp(format, "folded")) {
		diff_folded(&sb, d);
	} else if (!strcmp(format, "json")) {
		struct jsonw w;
		jsonw_init(&w, &sb, CMD_JSON_INDENT);
		diff_json(&w, d);
		jsonw_release(&w);
		strbuf_adds(&sb, "\n");
	} else {
		strbuf_adds(&sb, "A: ");
		strbuf_add_escaped(&sb, argv[0]);
		strbuf_adds(&sb, "\nB: ");
		strbuf_add_escaped(&sb, argv[1]);
		strbuf_adds(&sb, "\n");
		format_diff_text(&sb, d, &ro);
	}
	int rc = EXIT_OK;
	const char *outpath = cmd_str(ctx, DIFF_OUTPUT);
	if (outpath) {
		struct sd_error werr = {0};
		if (safefile_put(outpath, sb.buf, sb.len, 0600, 0, NULL, &werr) < 0) {
			cmd_error(ctx, "%s", werr.msg);
			rc = EXIT_FAIL;
		}
	} else {
		cmd_write(ctx, sb.buf, sb.len);
	}
	strbuf_release(&sb);
	profile_free(d);
	profile_free(a);
	profile_free(b);
	return rc;
}

const struct cmd_entry cmd_diff_entry = {
	.name = "diff",
	.alias = NULL,
	.args_usage = "A B",
	.summary = "compare two saved profiles: which stacks grew or shrank",
	.description =
	    "A and B are profiles saved by 'profile --format folded' or '--format json' (or\n"
	    "any folded stacks, e.g. from flamegraph tools). Shares are compared: A is\n"
	    "scaled to B's total. Text lists the stacks and functions that grew and shrank\n"
	    "in points of the total; svg is a differential flame graph (B's widths; red\n"
	    "grew, blue shrank).\n"
	    "Exit status: 0 ok, 2 a profile could not be read, 64 usage error.",
	.options = diff_options,
	.min_args = 2,
	.max_args = 2,
	.arg_complete = CMPL_FILE,
	.exec = diff_exec,
};
