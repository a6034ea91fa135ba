// SPDX-License-Identifier: MIT
// The command table: one entry per command file (cmd-NAME.c), sorted by
// name. The CLI, the shell, help and the completions all read it (cmd.h).
#include "cmd.h"

extern const struct cmd_entry cmd_attach_entry;
extern const struct cmd_entry cmd_core_entry;
extern const struct cmd_entry cmd_detach_entry;
extern const struct cmd_entry cmd_diff_entry;
extern const struct cmd_entry cmd_dump_entry;
extern const struct cmd_entry cmd_help_entry;
extern const struct cmd_entry cmd_load_entry;
extern const struct cmd_entry cmd_locks_entry;
extern const struct cmd_entry cmd_profile_entry;
extern const struct cmd_entry cmd_ps_entry;
extern const struct cmd_entry cmd_quit_entry;
extern const struct cmd_entry cmd_record_entry;
extern const struct cmd_entry cmd_report_entry;
extern const struct cmd_entry cmd_save_entry;
extern const struct cmd_entry cmd_set_entry;
extern const struct cmd_entry cmd_show_entry;
extern const struct cmd_entry cmd_source_entry;
extern const struct cmd_entry cmd_targets_entry;
extern const struct cmd_entry cmd_threads_entry;
extern const struct cmd_entry cmd_top_entry;
extern const struct cmd_entry cmd_use_entry;

/* Sorted by name. */
const struct cmd_entry *const cmd_table[] = {
	&cmd_attach_entry,
	&cmd_core_entry,
	&cmd_detach_entry,
	&cmd_diff_entry,
	&cmd_dump_entry,
	&cmd_help_entry,
	&cmd_load_entry,
	&cmd_locks_entry,
	&cmd_profile_entry,
	&cmd_ps_entry,
	&cmd_quit_entry,
	&cmd_record_entry,
	&cmd_report_entry,
	&cmd_save_entry,
	&cmd_set_entry,
	&cmd_show_entry,
	&cmd_source_entry,
	&cmd_targets_entry,
	&cmd_threads_entry,
	&cmd_top_entry,
	&cmd_use_entry,
};
const size_t cmd_table_len = sizeof(cmd_table) / sizeof(cmd_table[0]);
