// SPDX-License-Identifier: MIT
// libFuzzer target for the ELF core reader: a core file is input from
// outside (a crashed process wrote its memory into it). Parses the image,
// builds the maps, reads memory at each segment and file start and looks
// for build-ids there, as a dump of the core does.
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A copy of exactly SIZE bytes: a read past it is caught. */
	uint8_t *img = malloc(size ? size : 1);
	memcpy(img, data, size);
	struct sd_core c;
	memset(&c, 0, sizeof(c));
	c.path = "fuzz";
	if (core_parse(&c, img, size, NULL) == 0) {
		struct sd_maps m = {0};
		core_maps(&c, &m);
		uint8_t buf[256];
		char id[129];
		for (size_t i = 0; i < c.nsegs; i++) {
			core_read(&c, c.segs[i].vaddr, buf, sizeof(buf));
			core_read(&c, c.segs[i].vaddr + c.segs[i].memsz - 8, buf, 16);
			core_build_id_at(&c, c.segs[i].vaddr, id);
		}
		for (size_t i = 0; i < c.nfiles; i++)
			core_build_id_at(&c, c.files[i].start, id);
		for (size_t i = 0; i < c.nthreads; i++)
			core_read(&c, c.threads[i].regs.rsp, buf, sizeof(buf));
		core_auxv(&c, 33);
		procfs_maps_release(&m);
		core_release(&c);
	}
	free(img);
	return 0;
}
