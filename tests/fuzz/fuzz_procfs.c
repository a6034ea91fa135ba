// SPDX-License-Identifier: MIT
// libFuzzer target for the parsers of what the target process controls or
// the kernel reports about it: /proc maps, syscall and stat lines, and the
// headers and .debug_frame of ELF files (which the target may have crafted).
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dwcfi.h"
#include "elfcache.h"
#include "procfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t which = data[0] % 4;
	data++;
	size--;
	char *text = malloc(size + 1);
	memcpy(text, data, size);
	text[size] = '\0';
	switch (which) {
	case 0: {
		struct sd_maps m = {0};
		procfs_parse_maps(text, &m);
		for (size_t i = 0; i < m.n; i++)
			procfs_maps_find(&m, m.v[i].start);
		procfs_maps_release(&m);
		break;
	}
	case 1: {
		struct sd_taskinfo ti;
		procfs_parse_syscall(text, &ti);
		break;
	}
	case 2: {
		char st;
		pid_t ppid;
		unsigned long flags;
		uint64_t ut, stt;
		int cpu;
		procfs_parse_stat(text, &st, &ppid, &flags, &ut, &stt, &cpu);
		break;
	}
	default: {
		struct sd_elf e;
		memset(&e, 0, sizeof(e));
		e.data = data;
		e.size = size;
		e.fd = -1;
		if (elfcache_parse(&e) == 0) {
			uint8_t buf[16];
			for (int i = 0; i < e.nloads; i++)
				elfcache_read(&e, e.loads[i].vaddr + e.loads[i].filesz - 8, buf, 16);
			if (e.has_eh_frame_hdr)
				elfcache_read(&e, e.eh_frame_hdr_vaddr, buf, 12);
		}
		/* .debug_frame: section headers, inflation, CIEs, FDEs and
		 * their instructions. */
		struct sd_dwcfi *c = dwcfi_from_elf(data, size);
		if (c) {
			struct dwcfi_row row;
			for (uint64_t pc = 0; pc < 4096; pc += 97)
				dwcfi_row_at(c, pc, &row);
			dwcfi_free(c);
		}
		break;
	}
	}
	free(text);
	return 0;
}
