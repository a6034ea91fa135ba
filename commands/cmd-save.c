// SPDX-License-Identifier: MIT
// save: write the shell's last snapshot (or the loaded one) to a file in the
// saved snapshot format, atomically, gzip-compressed on request; or, with
// --core, take a snapshot of a live process and write it as a small ELF
// core that gdb and eu-stack open (in the shell and from the command line).
#include <stdlib.h>
#include <string.h>

#include "core-write.h"
#include "snapio.h"
#include "cmd.h"

enum { SAVE_COMPRESS = SNAP_OPT__COUNT, SAVE_CMDLINE, SAVE_CORE, SAVE_ALL_REGS };

static const struct cmd_option save_options[] = {
    CMD_SNAPSHOT_OPTIONS,
    [SAVE_COMPRESS] =
	OPT_FLAG("compress", 'z', "gzip the file (the default when FILE ends in .gz)"),
    [SAVE_CMDLINE] = OPT_FLAG("cmdline", 0,
			      "keep the target's whole command line (by default only the program: "
			      "arguments can hold secrets)"),
    [SAVE_CORE] = OPT_FLAG("core", 0,
			   "take a snapshot of the process and write it as an ELF core for gdb "
			   "(registers, stacks, lock words, module headers)"),
    [SAVE_ALL_REGS] = OPT_FLAG("all-registers", 0,
			       "--core: stop every thread for all its registers (a longer pause; "
			       "by default a sleeper keeps what /proc gives)"),
    {0},
};

static int ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && !strcmp(s + a - b, suffix);
}

static int save_check(struct cmd_ctx *ctx)
{
	int core = cmd_has(ctx, SAVE_CORE);
	if (!ctx->in_shell && !core) {
		cmd_error(ctx, "save: from the command line only 'save --core FILE PID|NAME' is "
			       "available (saving the last snapshot is for the shell)");
		return -1;
	}
	if (!core && cmd_has(ctx, SAVE_ALL_REGS)) {
		cmd_error(ctx, "save: --all-registers goes with --core");
		return -1;
	}
	if (core && cmd_has(ctx, SAVE_COMPRESS)) {
		cmd_error(ctx, "save: --core and --compress do not go together (gdb reads cores "
			       "uncompressed)");
		return -1;
	}
	if (!ctx->in_shell && core && (!ctx->posv || !ctx->posv[1] || !ctx->posv[2])) {
		cmd_error(ctx, "save: missing argument (PID|NAME)\nusage: stackdump save --core "
			       "[options] FILE PID|NAME");
		return -1;
	}
	return cmd_snap_check(ctx);
}

/* save --core FILE [PID|NAME]: a fresh snapshot that keeps its copies,
 * written as a core. */
static int save_core(struct cmd_ctx *ctx, int argc, char **argv)
{
	const char *path = argv[0];
	struct sd_target *t = NULL, *own = NULL;
	struct sd_error err = {0};
	if (argc >= 2) {
		pid_t pid = cmd_resolve_pid(ctx, argv[1]);
		if (pid <= 0)
			return EXIT_FAIL;
		own = t = target_new(pid, &err);
		if (!t) {
			cmd_error(ctx, "save: %s", err.msg);
			return EXIT_FAIL;
		}
	} else if (ctx->session && ctx->session->loaded) {
		cmd_error(ctx, "save: --core writes a live process's snapshot, not a loaded file's: "
			       "detach, then attach to the process (or save --core FILE PID)");
		return EXIT_FAIL;
	} else if (!(t = cmd_current_target(ctx))) {
		return EXIT_FAIL;
	}
	if (t->core) {
		cmd_error(ctx, "save: the target is a core file: --core writes a live process's "
			       "snapshot");
		return EXIT_FAIL;
	}
	struct sd_snap_opts o;
	pid_t *tids;
	if (cmd_snap_opts(ctx, &o, &tids) < 0) {
		target_free(own);
		return EXIT_USAGE;
	}
	/* The copies are the core; the frames only steer the capture (a
	 * sleeper whose unwind needs more registers is stopped for them). */
	o.keep_capture = 1;
	o.no_symbols = 1;
	if (cmd_has(ctx, SAVE_ALL_REGS))
		o.capture = SD_CAPMODE_FREEZE;
	struct sd_snapshot *s = target_snapshot(t, &o, &err);
	free(tids);
	if (!s) {
		cmd_error(ctx, "save: %s", err.msg);
		target_free(own);
		return EXIT_FAIL;
	}
	struct core_write_opts wo = {.pid = t->pid, .maps = &t->space.maps,
				     .full_cmdline = cmd_has(ctx, SAVE_CMDLINE)};
	struct core_write_stats st;
	int rc = core_write(path, s, &wo, &st, &err);
	if (rc < 0) {
		cmd_error(ctx, "save: %s", err.msg);
		snapshot_free(s);
		target_free(own);
		return EXIT_FAIL;
	}
	struct strbuf sb;
	strbuf_init(&sb);
	strbuf_addf(&sb, "wrote a core of %d \"", (int)s->pid);
	strbuf_add_escaped(&sb, s->comm ? s->comm : "");
	strbuf_addf(&sb, "\" (%zu thread%s", st.threads, st.threads == 1 ? "" : "s");
	if (st.no_regs)
		strbuf_addf(&sb, ", %zu without registers left out", st.no_regs);
	strbuf_addf(&sb, ", %llu bytes of memory, %zu files; paused %.1f ms) to ",
		    (unsigned long long)st.memory, st.files, s->pause_us / 1000.0);
	strbuf_add_escaped(&sb, path);
	strbuf_addf(&sb, " (%llu bytes)\n", (unsigned long long)st.bytes);
	cmd_status(ctx, "%s", sb.buf);
	strbuf_release(&sb);
	rc = st.no_regs || s->partial ? EXIT_PARTIAL : EXIT_OK;
	snapshot_free(s);
	target_free(own);
	return rc;
}

static int save_exec(struct cmd_ctx *ctx, int argc, char **argv)
{
	if (cmd_has(ctx, SAVE_CORE))
		return save_core(ctx, argc, argv);
	struct cmd_session *ss = ctx->session;
	struct sd_snapshot *s = ss ? ss->last : NULL;
	if (!s && ss)
		s = ss->loaded;
	if (!s) {
		cmd_error(ctx, "save: no snapshot to save: take one first (dump), or load one");
		return EXIT_FAIL;
	}
	if (argc > 1) {
		cmd_error(ctx, "save: a process (%s) is named only with --core", argv[1]);
		return EXIT_USAGE;
	}
	const char *path = argv[0];
	int compress = cmd_has(ctx, SAVE_COMPRESS) || ends_with(path, ".gz");
	struct snapio_meta m;
	snapio_meta_init(&m);
	m.reason = "save";
	m.full_cmdline = cmd_has(ctx, SAVE_CMDLINE);
	if (s == ss->last)
		snapio_meta_from_proc(&m, s->pid, s);
	struct sd_error err = {0};
	uint64_t bytes = 0;
	if (snapio_save(path, s, &m, compress, !compress, &bytes, &err) < 0) {
		cmd_error(ctx, "save: %s", err.msg);
		return EXIT_FAIL;
	}
	struct strbuf sb;
	strbuf_init(&sb);
	strbuf_adds(&sb, "saved the snapshot of ");
	strbuf_addf(&sb, "%d \"", (int)s->pid);
	strbuf_add_escaped(&sb, s->comm ? s->comm : "");
	strbuf_addf(&sb, "\" (%zu threads) to ", s->nthreads);
	strbuf_add_escaped(&sb, path);
	strbuf_addf(&sb, " (%llu bytes%s)\n", (unsigned long long)bytes, compress ? ", gzip" : "");
	cmd_status(ctx, "%s", sb.buf);
	strbuf_release(&sb);
	return EXIT_OK;
}

const struct cmd_entry cmd_save_entry = {
	.name = "save",
	.alias = NULL,
	.args_usage = "FILE [PID|NAME]",
	.summary = "save the last snapshot to a file, or a process as an ELF core (--core)",
	.description =
	    "Writes the last snapshot taken in the shell (or the loaded one) in the saved\n"
	    "snapshot format: documented JSON with process metadata, modules with build-ids\n"
	    "and lock analysis, readable on another machine without the binaries (see \"The\n"
	    "saved snapshot format\" in docs/recording.md). The file is written to a temporary name\n"
	    "and renamed, so it is never left half-written.\n"
	    "With --core (shell: the current target; command line: save --core FILE PID|NAME)\n"
	    "it takes a snapshot and writes it as a small ELF core that 'gdb EXE FILE',\n"
	    "eu-stack --core and 'stackdump core FILE' open: every thread's registers, the\n"
	    "stack windows and lock words copied in the pause, the mapped files, the\n"
	    "auxiliary vector, each module's ELF headers (build-ids), the vdso and the\n"
	    "dynamic linker's list of libraries (read after the pause), mode 0600. It holds\n"
	    "raw memory of the process (stacks): keep it as you would the process's secrets.\n"
	    "A thread asleep is read without a stop: its stack pointer, program counter and\n"
	    "syscall registers are its own, the others zero (--all-registers stops every\n"
	    "thread for all of them: a longer pause). The snapshot options (--tid,\n"
	    "--stack-bytes...) apply to --core. See docs/cores.md.\n"
	    "Exit status: 0 saved, 1 saved but some threads could not be read, 2 failure,\n"
	    "64 usage error.",
	.options = save_options,
	.min_args = 1,
	.max_args = 2,
	.arg_complete = CMPL_FILE,
	.check = save_check,
	.exec = save_exec,
};
