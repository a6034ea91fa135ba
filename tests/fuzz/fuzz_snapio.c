// SPDX-License-Identifier: MIT
// libFuzzer target for the saved snapshot loader: any input (JSON or gzip)
// is either refused with a message naming the input or loads into a
// snapshot that saves and loads again to the same document.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapio.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	char *plain = NULL;
	size_t len = size;
	struct sd_error err = {0};
	if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) {
		/* A small bound: the fuzzer must not spend its time (or
		 * memory) on gzip bombs, which the real limit also stops. */
		if (snapio_gunzip("fuzz", data, size, 1 << 20, &plain, &len, &err) < 0) {
			if (strncmp(err.msg, "fuzz: ", 6))
				abort();
			return 0;
		}
		text = plain;
	}
	struct snapio_meta m;
	struct sd_snapshot *s = snapio_parse("fuzz", text, len, &m, &err);
	if (!s) {
		/* Every refusal names the input. */
		if (strncmp(err.msg, "fuzz: ", 6))
			abort();
		free(plain);
		return 0;
	}
	/* What loads must save and load again, to the same document. */
	size_t l1, l2;
	char *a = snapio_dumps(s, &m, 0, &l1);
	struct snapio_meta m2;
	struct sd_snapshot *s2 = snapio_parse("again", a, l1, &m2, &err);
	if (!s2) {
		fprintf(stderr, "reload failed: %s\n", err.msg);
		abort();
	}
	char *b = snapio_dumps(s2, &m2, 0, &l2);
	if (l1 != l2 || memcmp(a, b, l1)) {
		fprintf(stderr, "not stable:\n%s\n%s\n", a, b);
		abort();
	}
	free(a);
	free(b);
	snapshot_free(s2);
	snapshot_free(s);
	free(plain);
	return 0;
}
