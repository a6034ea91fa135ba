// SPDX-License-Identifier: MIT
// The size of the terminal a command writes to (terminal.h).
#include <sys/ioctl.h>
#include <unistd.h>

#include "terminal.h"

int terminal_width(FILE *f)
{
	struct winsize ws;
	if (!f || !isatty(fileno(f)))
		return 0;
	if (ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	return 80;
}
