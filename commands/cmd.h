// SPDX-License-Identifier: MIT
// The one command table. Each command is one file commands/cmd-NAME.c with
// one const struct cmd_entry; the CLI, the shell, help and the completions
// all come from the table in cmd.c.
#ifndef SD_CMD_H
#define SD_CMD_H

#include <signal.h>
#include <stdio.h>
#include <sys/types.h>

#include <stdint.h>

#include "jsonw.h"
#include "snapshot.h"
#include "target.h"
#include "util.h"

/* Exit codes, documented in --help and the README. */
enum {
	EXIT_OK = 0,
	EXIT_PARTIAL = 1,   /* some threads could not be read */
	EXIT_FAIL = 2,      /* nothing could be done */
	EXIT_DEADLOCK = 3,  /* locks: a deadlock was found */
	EXIT_USAGE = 64,    /* bad command line */
	EXIT_INTERRUPTED = 130,
};

/* What an option or argument completes to. */
enum cmd_complete {
	CMPL_NONE = 0,
	CMPL_PID,      /* process IDs and names */
	CMPL_TID,      /* threads of the current target */
	CMPL_FILE,
	CMPL_DIR,
	CMPL_FORMAT,   /* the option's own choices */
	CMPL_COMMAND,
	CMPL_SETTING,
	CMPL_LOCK,
	CMPL_CHOICES,  /* choices listed in cmd_option.choices */
};

/* What an option's value is. Values are parsed and checked against the
 * bounds once, by cmd_parse; commands read them typed, by index. */
enum cmd_opt_type {
	CMD_OPT_FLAG = 0, /* no value */
	CMD_OPT_STRING,   /* any text */
	CMD_OPT_COUNT,    /* a whole number in [min, max] */
	CMD_OPT_DURATION, /* 500ms, 2s, 1m: microseconds in [min, max] */
	CMD_OPT_SIZE,     /* 4096, 256K, 4M: bytes in [min, max] */
	CMD_OPT_REAL,     /* a decimal number in [min, max] */
	CMD_OPT_CHOICE,   /* one of the words in choices */
};

/* The shell setting that stands in for an option a command was not given. */
enum cmd_setting_id {
	CMD_SET_NONE = 0,
	CMD_SET_FORMAT,     /* set format: when the command accepts that format */
	CMD_SET_MAX_FRAMES, /* set max-frames N */
	CMD_SET_NO_INLINE,  /* set inline off */
	CMD_SET_NO_SOURCE,  /* set source off */
};

struct cmd_option {
	const char *name;       /* long name without dashes */
	char short_name;        /* 0 if none */
	const char *arg;        /* metavariable, NULL for a flag */
	const char *help;
	enum cmd_complete complete;
	const char *choices;    /* "text json" for CMPL_CHOICES */
	enum cmd_opt_type type;
	double min, max;        /* bounds of numeric types (both 0: none) */
	const char *def;        /* default, written as on the command line; NULL: none */
	enum cmd_setting_id setting;
	const char *hint;       /* what a valid value looks like (in errors); NULL: derived */
	int pid_of;             /* names the target processes, as PID|NAME arguments do
				   (--pid-of NAME; see CMD_NEEDS_TARGET) */
};

/* Declaring options. Each command names its options by an enum and fills
 * its array with designated initializers, [DUMP_VERBOSE] = OPT_FLAG(...),
 * so that a lookup by a misspelt name does not compile. */
#define OPT_FLAG(n, s, h) {.name = (n), .short_name = (s), .help = (h), .type = CMD_OPT_FLAG}
#define OPT_STRING(n, s, a, h, cmpl)                                                               \
	{                                                                                          \
		.name = (n), .short_name = (s), .arg = (a), .help = (h), .complete = (cmpl),       \
		.type = CMD_OPT_STRING                                                             \
	}
/* Numeric options: bounds LO..HI (both 0: none; HI 0: no upper bound),
 * default D as text (NULL: none), HINT for errors (NULL: from the bounds). */
#define OPT_COUNT(n, s, a, h, lo, hi, d, ht)                                                       \
	{                                                                                          \
		.name = (n), .short_name = (s), .arg = (a), .help = (h), .type = CMD_OPT_COUNT,    \
		.min = (lo), .max = (hi), .def = (d), .hint = (ht)                                 \
	}
#define OPT_DURATION(n, s, h, lo, hi, d, ht)                                                       \
	{                                                                                          \
		.name = (n), .short_name = (s), .arg = "DURATION", .help = (h),                    \
		.type = CMD_OPT_DURATION, .min = (lo), .max = (hi), .def = (d), .hint = (ht)       \
	}
#define OPT_SIZE(n, s, h, lo, hi, d, ht)                                                           \
	{                                                                                          \
		.name = (n), .short_name = (s), .arg = "SIZE", .help = (h), .type = CMD_OPT_SIZE,  \
		.min = (lo), .max = (hi), .def = (d), .hint = (ht)                                 \
	}
#define OPT_REAL(n, s, a, h, lo, hi, d, ht)                                                        \
	{                                                                                          \
		.name = (n), .short_name = (s), .arg = (a), .help = (h), .type = CMD_OPT_REAL,     \
		.min = (lo), .max = (hi), .def = (d), .hint = (ht)                                 \
	}
#define OPT_CHOICE(n, s, a, h, ch, d)                                                              \
	{                                                                                          \
		.name = (n), .short_name = (s), .arg = (a), .help = (h), .complete = CMPL_CHOICES, \
		.choices = (ch), .type = CMD_OPT_CHOICE, .def = (d)                                \
	}
/* --pid-of NAME: the target of a CMD_NEEDS_TARGET command by its name,
 * instead of a PID|NAME argument (a CMD_TARGET_MANY command: every process
 * of that name). */
#define OPT_PID_OF(s, h)                                                                           \
	{                                                                                          \
		.name = "pid-of", .short_name = (s), .arg = "NAME", .help = (h),                   \
		.complete = CMPL_PID, .type = CMD_OPT_STRING, .pid_of = 1                          \
	}
/* --format: a choice the shell's `set format` stands in for. */
#define OPT_FORMAT(h, ch, d)                                                                       \
	{                                                                                          \
		.name = "format", .short_name = 'f', .arg = "FORMAT", .help = (h),                 \
		.complete = CMPL_CHOICES, .choices = (ch), .type = CMD_OPT_CHOICE, .def = (d),     \
		.setting = CMD_SET_FORMAT                                                          \
	}

/* --cpu-budget PERCENT, shared by the sampling commands (profile, top,
 * record): stackdump's own CPU while it samples, a share of one core; over
 * it, samples are taken less often (budget.h). */
#define OPT_CPU_BUDGET                                                                             \
	OPT_REAL("cpu-budget", 0, "PERCENT",                                                       \
		 "stackdump's own CPU while sampling, % of one core (default 2, 0: no limit); "    \
		 "over it, samples are taken less often",                                          \
		 0, 100, "2", "0 to 100 (% of one core)")

enum {
	CMD_NEEDS_TARGET = 1 << 0, /* one PID|NAME (or the --pid-of option), or in the shell
				      the current target; cmd_run resolves it into
				      ctx->target, after the check and before exec */
	CMD_SHELL_ONLY = 1 << 1,
	CMD_CLI_ONLY = 1 << 2,
	CMD_TARGET_ATTACH = 1 << 3, /* with NEEDS_TARGET: open an sd_target (not only a PID) */
	CMD_TARGET_LOADED = 1 << 4, /* with NEEDS_TARGET: a loaded snapshot serves in the shell */
	CMD_TARGET_MANY = 1 << 5,   /* with NEEDS_TARGET: PID|NAME..., each a process of
				       ctx->target; one that cannot be resolved or opened is
				       said and left out (counted in failed); none left fails */
	CMD_TARGET_SET = 1 << 6,    /* with MANY: the processes are one set, taken together
				       (profile): each once, and a name that matches no
				       process fails the command instead of being left out */
	CMD_TARGET_SHELL_ARGS = 1 << 7, /* with NEEDS_TARGET: in the shell, with a current
				       target or loaded snapshot to serve, the arguments are
				       the command's own (dump's TIDs), not processes */
	CMD_TARGET_CORE = 1 << 8,   /* with ATTACH: an argument holding a '/' names an ELF
				       core file, read in place of a process (its option
				       "sysroot", if declared, says where its files are) */
};

#define CMD_MAX_OPTS 32

struct cmd_ctx;

struct cmd_entry {
	const char *name;
	const char *alias;
	const char *args_usage;   /* "PID..." */
	const char *summary;      /* one line */
	const char *description;  /* a paragraph for help CMD, may be NULL */
	const struct cmd_option *options; /* terminated by {0} */
	int min_args, max_args;   /* max -1: unlimited */
	enum cmd_complete arg_complete;
	unsigned flags;
	/* With CMD_NEEDS_TARGET: the error when no target is given (after
	 * "NAME: "), also in the shell without a current target; NULL:
	 * "missing argument (PID|NAME)" with the usage line, and in the shell
	 * "no target: attach to a process first". */
	const char *target_missing;
	/* Checks between options, after parsing and before the target is
	 * resolved: 0, or -1 after a usage error. May be NULL. */
	int (*check)(struct cmd_ctx *ctx);
	int (*exec)(struct cmd_ctx *ctx, int argc, char **argv);
};

/* Settings shared by commands (set/show in the shell). */
struct cmd_settings {
	int no_inline, no_source;
	unsigned max_frames;
	const char *format;  /* default format or NULL */
	int color;           /* -1 auto, 0 off, 1 on */
	int group;           /* dump grouped: -1 auto, 0 off, 1 on */
};

/* Targets attached in the shell. */
struct cmd_session {
	struct sd_target **targets;
	size_t ntargets, cap;
	size_t current;               /* index into targets */
	struct sd_snapshot *loaded;   /* a loaded snapshot, if any */
	char *loaded_path;
	struct sd_snapshot *last;     /* the last snapshot taken */
	struct cmd_settings settings;
	int interactive;              /* a person at a terminal */
	int quit;
};

/* One option's value after parsing. */
struct cmd_optval {
	const char *str; /* as given ("" for a flag); NULL: not given */
	uint64_t num;    /* count, duration (us), size (bytes); the default if not given */
	double real;     /* CMD_OPT_REAL */
};

/* One process of a CMD_NEEDS_TARGET command. */
struct cmd_proc {
	pid_t pid;
	struct sd_target *t; /* with CMD_TARGET_ATTACH (or the shell's), else NULL */
};

/* The target of a CMD_NEEDS_TARGET command, resolved by cmd_run and
 * released by it after exec. */
struct cmd_target {
	pid_t pid;                        /* procs[0]'s; 0 when a loaded snapshot serves */
	struct sd_target *t;              /* procs[0]'s */
	const struct sd_snapshot *loaded; /* the shell's loaded snapshot, or NULL */
	int from_shell;                   /* the shell's current target (not an argument) */
	int owned;                        /* the sd_targets are ours: freed after exec (a
					     command done with one early may free it and set
					     it NULL) */
	struct cmd_proc *procs;           /* the processes in order: one, or with
					     CMD_TARGET_MANY those that could be used */
	size_t nprocs;
	size_t failed;                    /* MANY: processes named but left out (each said) */
};

struct cmd_ctx {
	FILE *out, *err;
	struct cmd_session *session;
	const struct cmd_entry *entry;
	struct cmd_optval opt[CMD_MAX_OPTS]; /* per option of entry, by index */
	struct cmd_target target;
	int color;
	int in_shell;
	char **posv;  /* positional arguments of the last parse (heap array) */
	int out_errno; /* the first error writing OUT (0: none), for the exit status */
};

extern const struct cmd_entry *const cmd_table[];
extern const size_t cmd_table_len;
/* Set by SIGINT/SIGTERM handlers: long commands stop early. */
extern volatile sig_atomic_t cmd_interrupted;

/* Find a command by alias, exact name or unique prefix. On ambiguity or no
 * match returns NULL and fills MSG ("ambiguous command: pro, could be:
 * profile, procs"). EXACT_ONLY disables prefixes (the CLI). */
const struct cmd_entry *cmd_find(const char *name, int exact_only, char *msg, size_t msgsz);

/* Does the space-separated list LIST hold the WL bytes at WORD (WORD need
 * not end there)? A NULL LIST holds nothing. */
int cmd_list_has(const char *list, const char *word, size_t wl);

/* Parse options of ENTRY in ARGV into CTX->optval; on return *ARGC/ARGV hold
 * argv[0] and the positional arguments, in an array owned by CTX (freed by
 * the next parse or cmd_ctx_release; the strings stay the caller's). The
 * caller's ARGV array is not modified. Returns 0, or -1 after printing a
 * usage error. --help prints help and returns 1. */
int cmd_parse(struct cmd_ctx *ctx, const struct cmd_entry *e, int *argc, char ***argv);

/* Free what parsing left in CTX. */
void cmd_ctx_release(struct cmd_ctx *ctx);

/* Parse and run ENTRY with ARGV (argv[0] is the command name). */
int cmd_run(struct cmd_ctx *ctx, const struct cmd_entry *e, int argc, char **argv);

/* Option accessors by index into the command's options. cmd_has: given on
 * the command line or by a shell setting. cmd_str: the text given, else
 * the default text, else NULL (for a choice: the chosen word). cmd_num:
 * count, duration (us) or size (bytes), the default when not given (0 if
 * none). cmd_real: the same for decimal options. */
int cmd_has(const struct cmd_ctx *ctx, int opt);
const char *cmd_str(const struct cmd_ctx *ctx, int opt);
uint64_t cmd_num(const struct cmd_ctx *ctx, int opt);
double cmd_real(const struct cmd_ctx *ctx, int opt);
/* The format of a command's output (FORMAT_OPT, a choice) to the file
 * named by OUTPUT_OPT: the one -f gives; else the one the file's name asks
 * for (format_for_path), when the command has it; else the shell's setting
 * or the default, and with SAY a line on stderr that the name told
 * nothing. -f that the name contradicts is a usage error: NULL, said. */
const char *cmd_output_format(struct cmd_ctx *ctx, int format_opt, int output_opt, int say);
/* Is the chosen word of a choice option WORD? */
int cmd_is(const struct cmd_ctx *ctx, int opt, const char *word);

/* The options of the binary itself, in the same form as a command's (the
 * -c option has no long name): main parses them, help and the generators
 * list them. Terminated by an entry whose help is NULL. */
extern const struct cmd_option cmd_global_options[];
enum { CMD_GLOBAL_HELP, CMD_GLOBAL_VERSION, CMD_GLOBAL_COMMANDS, CMD_GLOBAL_COMPLETION };
/* Check the table's declarations (defaults parse, flags have no
 * metavariable, choices are listed, no more than CMD_MAX_OPTS options).
 * Returns 0, or -1 with MSG naming the first mistake. */
int cmd_table_check(char *msg, size_t msgsz);
/* Append the format names any command accepts (the choices of every
 * --format option of the table), space separated, to SB. */
void cmd_format_names(struct strbuf *sb);
/* Help lines of the global options. */
void cmd_help_globals(struct strbuf *sb);

/* Output helpers. */
void cmd_print(struct cmd_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cmd_error(struct cmd_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Write S to F with every control character but newline and tab escaped
 * (\e, \xNN; C1 controls too): what cmd_error and cmd_status do to every
 * message, for the names the target chose in it. */
void cmd_put_safe(FILE *f, const char *s);
/* A status line ("attached to ...", "wrote ..."): on the error stream, so
 * that stdout carries only the output asked for, in every mode (-c,
 * scripts, pipes). */
void cmd_status(struct cmd_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cmd_write(struct cmd_ctx *ctx, const char *s, size_t n);
/* Every --format json is written through the JSON writer (jsonw.h),
 * indented CMD_JSON_INDENT spaces per level, and ends with a newline. */
#define CMD_JSON_INDENT 2
/* Start a document: W writes into SB, initialized here. */
void cmd_json_init(struct jsonw *w, struct strbuf *sb);
/* Print the document W wrote and a newline, then release W and its
 * buffer. A document W reports as malformed (a bug) is printed all the
 * same, with an error. */
void cmd_print_json(struct cmd_ctx *ctx, struct jsonw *w);

/* Help text of one command. */
void cmd_help_command(struct strbuf *sb, const struct cmd_entry *e);
/* The overview of all commands. */
void cmd_help_overview(struct strbuf *sb);
/* Help of the shell itself (`help shell`, `stackdump shell --help`): how
 * to start it, what a line may hold, keys, then the commands. */
void cmd_help_shell(struct strbuf *sb);

/* Resolve a PID or a process name (unique) into a PID; prints errors. */
pid_t cmd_resolve_pid(struct cmd_ctx *ctx, const char *arg);

/* Shared snapshot options: fill O from the standard dump options present in
 * CTX (max-frames, no-inline, no-source, tid, name, per-thread,
 * stack-bytes, timeout). Returns 0 or -1 after a usage error. TIDS is a
 * heap array to free. */
int cmd_snap_opts(struct cmd_ctx *ctx, struct sd_snap_opts *o, pid_t **tids);
/* A check (cmd_entry.check) for commands that take snapshots: the shared
 * snapshot options are valid. 0, or -1 after a usage error. */
int cmd_snap_check(struct cmd_ctx *ctx);

/* The session's current target, or NULL after an error message. */
struct sd_target *cmd_current_target(struct cmd_ctx *ctx);

/* The exit status a snapshot deserves. */
int cmd_snapshot_status(const struct sd_snapshot *s);

/* The standard snapshot options: the first SNAP_OPT__COUNT options of a
 * command that takes snapshots, read by cmd_snap_opts. A command's own
 * options follow from index SNAP_OPT__COUNT. */
enum {
	SNAP_OPT_TID,
	SNAP_OPT_NAME,
	SNAP_OPT_PER_THREAD,
	SNAP_OPT_MAX_FRAMES,
	SNAP_OPT_NO_INLINE,
	SNAP_OPT_NO_SOURCE,
	SNAP_OPT_STACK_BYTES,
	SNAP_OPT_STACK_TOTAL,
	SNAP_OPT_TIMEOUT,
	SNAP_OPT__COUNT
};
#define CMD_SNAPSHOT_OPTIONS                                                                       \
	[SNAP_OPT_TID] = OPT_STRING("tid", 't', "TID[,TID]", "only these threads", CMPL_TID),     \
	[SNAP_OPT_NAME] = OPT_STRING("name", 'n', "GLOB", "only threads whose name matches GLOB",  \
				     CMPL_NONE),                                                   \
	[SNAP_OPT_PER_THREAD] = OPT_FLAG(                                                          \
	    "per-thread", 0, "freeze one thread at a time (shorter pauses, not consistent)"),      \
	[SNAP_OPT_MAX_FRAMES] = {.name = "max-frames",                                             \
				 .arg = "N",                                                       \
				 .help = "at most N frames per thread (default 256, 0: no limit)", \
				 .type = CMD_OPT_COUNT,                                            \
				 .max = 10000000,                                                  \
				 .setting = CMD_SET_MAX_FRAMES,                                    \
				 .hint = "expected a number >= 0"},                                \
	[SNAP_OPT_NO_INLINE] = {.name = "no-inline",                                               \
				.help = "do not show inline frames",                               \
				.setting = CMD_SET_NO_INLINE},                                     \
	[SNAP_OPT_NO_SOURCE] = {.name = "no-source",                                               \
				.help = "do not show file:line",                                   \
				.setting = CMD_SET_NO_SOURCE},                                     \
	[SNAP_OPT_STACK_BYTES] = {.name = "stack-bytes",                                           \
				  .arg = "SIZE",                                                   \
				  .help = "stack copied per thread (default 1M)",                  \
				  .type = CMD_OPT_SIZE,                                            \
				  .min = 4096,                                                     \
				  .max = 1 << 30,                                                  \
				  .hint = "e.g. 256K, 4M; 4K to 1G"},                              \
	[SNAP_OPT_STACK_TOTAL] = {.name = "stack-total",                                           \
				  .arg = "SIZE",                                                   \
				  .help = "stack copied for all threads together (default 256M)",  \
				  .type = CMD_OPT_SIZE,                                            \
				  .min = 4096,                                                     \
				  .max = 64.0 * (1 << 30),                                         \
				  .hint = "e.g. 64M, 1G; 4K to 64G"},                              \
	[SNAP_OPT_TIMEOUT] = {.name = "timeout",                                                   \
			      .arg = "DURATION",                                                   \
			      .help = "how long to wait for threads to stop (default 2s)",         \
			      .type = CMD_OPT_DURATION,                                            \
			      .min = 1000,                                                         \
			      .max = 600000000,                                                    \
			      .hint = "e.g. 500ms, 2s"}

/* Session lifetime. */
void cmd_session_init(struct cmd_session *s);
void cmd_session_release(struct cmd_session *s);

#endif
