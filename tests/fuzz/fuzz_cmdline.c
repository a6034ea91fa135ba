// SPDX-License-Identifier: MIT
// libFuzzer target for the shell's line splitter and the option parser of
// the command table: any line a user types must give a result or an error.
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "repl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *line = malloc(size + 1);
	memcpy(line, data, size);
	line[size] = '\0';
	char **argv;
	int argc = repl_split(line, &argv);
	if (argc > 0) {
		static FILE *devnull;
		if (!devnull)
			devnull = fopen("/dev/null", "w");
		struct cmd_session sess;
		cmd_session_init(&sess);
		struct cmd_ctx ctx = {.out = devnull, .err = devnull, .session = &sess};
		char msg[256];
		const struct cmd_entry *e = cmd_find(argv[0], 0, msg, sizeof(msg));
		if (e) {
			/* Parse only: running would attach to processes. */
			int n = argc;
			char **v = argv;
			cmd_parse(&ctx, e, &n, &v);
		}
		cmd_ctx_release(&ctx);
		cmd_session_release(&sess);
	}
	repl_free_words(argc < 0 ? 0 : argc, argv);
	free(line);
	return 0;
}
