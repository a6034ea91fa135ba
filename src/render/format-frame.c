// SPDX-License-Identifier: MIT
// One frame as JSON, the same object in a thread's frames, a goroutine's
// and the saved format's (format.h).
#include "format.h"

void format_json_frame_more(struct jsonw *w, const struct sd_frame *f,
			    const struct format_json_more *more)
{
	jsonw_object_begin(w);
	jsonw_khex(w, "addr", f->pc);
	jsonw_kstr(w, "module", f->module);
	jsonw_kstr(w, "build_id", f->build_id);
	jsonw_khex(w, "offset", f->offset);
	jsonw_kstr(w, "function", f->function);
	jsonw_kstr(w, "file", f->file);
	if (f->line)
		jsonw_kint(w, "line", f->line);
	else
		jsonw_knull(w, "line");
	jsonw_kbool(w, "inlined", f->flags & SD_FRAME_INLINED);
	if (f->flags & SD_FRAME_SIGNAL)
		jsonw_kbool(w, "signal_frame", 1);
	if (more && more->frame)
		more->frame(w, f);
	jsonw_object_end(w);
}

void format_json_frame(struct jsonw *w, const struct sd_frame *f)
{
	format_json_frame_more(w, f, NULL);
}
