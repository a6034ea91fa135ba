// SPDX-License-Identifier: MIT
// The one command table. Each command is one file commands/cmd-NAME.c with
// one const struct cmd_entry; the CLI, the shell, help and the completions
// all come from the table in cmd.c.
#ifndef SD_CMD_H
#define SD_CMD_H

#include <signal.h>
#include <stdio.h>
#include <sys/types.h>

#include "../src/snapshot.h"
#include "../src/target.h"
#include "../src/util.h"

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

struct cmd_option {
	const char *name;       /* long name without dashes */
	char short_name;        /* 0 if none */
	const char *arg;        /* metavariable, NULL for a flag */
	const char *help;
	enum cmd_complete complete;
	const char *choices;    /* "text json" for CMPL_CHOICES */
};

enum {
	CMD_NEEDS_TARGET = 1 << 0, /* in the shell, uses the current target */
	CMD_SHELL_ONLY = 1 << 1,
	CMD_CLI_ONLY = 1 << 2,
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

struct cmd_ctx {
	FILE *out, *err;
	struct cmd_session *session;
	const struct cmd_entry *entry;
	const char *optval[CMD_MAX_OPTS]; /* value (or "" for a flag) per option */
	int color;
	int in_shell;
	char **posv;  /* positional arguments of the last parse (heap array) */
};

extern const struct cmd_entry *const cmd_table[];
extern const size_t cmd_table_len;
/* Set by SIGINT/SIGTERM handlers: long commands stop early. */
extern volatile sig_atomic_t cmd_interrupted;

/* Find a command by alias, exact name or unique prefix. On ambiguity or no
 * match returns NULL and fills MSG ("ambiguous command: pro, could be:
 * profile, procs"). EXACT_ONLY disables prefixes (the CLI). */
const struct cmd_entry *cmd_find(const char *name, int exact_only, char *msg, size_t msgsz);

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

/* Option accessors by long name. */
const char *cmd_opt(const struct cmd_ctx *ctx, const char *name);
int cmd_flag(const struct cmd_ctx *ctx, const char *name);

/* Output helpers. */
void cmd_print(struct cmd_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cmd_error(struct cmd_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A status line ("attached to ...", "wrote ..."): on the error stream, so
 * that stdout carries only the output asked for, in every mode (-c,
 * scripts, pipes). */
void cmd_status(struct cmd_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cmd_write(struct cmd_ctx *ctx, const char *s, size_t n);

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

/* The session's current target, or NULL after an error message. */
struct sd_target *cmd_current_target(struct cmd_ctx *ctx);

/* The exit status a snapshot deserves. */
int cmd_snapshot_status(const struct sd_snapshot *s);

/* The standard snapshot options, for inclusion in option arrays. */
#define CMD_SNAPSHOT_OPTIONS                                                                       \
	{"tid", 't', "TID[,TID]", "only these threads", CMPL_TID, NULL},                          \
	    {"name", 'n', "GLOB", "only threads whose name matches GLOB", CMPL_NONE, NULL},       \
	    {"per-thread", 0, NULL, "freeze one thread at a time (shorter pauses, not consistent)", \
	     CMPL_NONE, NULL},                                                                     \
	    {"max-frames", 0, "N", "at most N frames per thread (default 256, 0: no limit)",       \
	     CMPL_NONE, NULL},                                                                     \
	    {"no-inline", 0, NULL, "do not show inline frames", CMPL_NONE, NULL},                 \
	    {"no-source", 0, NULL, "do not show file:line", CMPL_NONE, NULL},                     \
	    {"stack-bytes", 0, "SIZE", "stack copied per thread (default 1M)", CMPL_NONE, NULL},   \
	    {"timeout", 0, "DURATION", "how long to wait for threads to stop (default 2s)",       \
	     CMPL_NONE, NULL}

/* Session lifetime. */
void cmd_session_init(struct cmd_session *s);
void cmd_session_release(struct cmd_session *s);

#endif
