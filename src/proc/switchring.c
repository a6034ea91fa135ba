// SPDX-License-Identifier: MIT
// A thread's ring of context-switch records (see switchring.h).
#include "switchring.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "perf-regs.h"

int switchring_open(pid_t tid, size_t page, void **ring)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CONTEXT_SWITCHES;
	a.sample_period = 1;
	a.sample_type = PERF_SAMPLE_REGS_USER;
	a.sample_regs_user = PERF_REGS_MASK;
	a.exclude_hv = 1;
	a.context_switch = 1;
	a.write_backward = 1; /* overwritten: never full, the head always moves */
	/* Never polled: no wakeup at every sample. */
	a.watermark = 1;
	a.wakeup_watermark = 1u << 30;
	*ring = NULL;
	int fd = (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* Locked memory: past perf_event_mlock_kb an unprivileged user's
	 * mapping is refused. */
	void *r = mmap(NULL, 2 * page, PROT_READ, MAP_SHARED, fd, 0);
	if (r == MAP_FAILED) {
		int err = errno;
		close(fd);
		*ring = MAP_FAILED;
		return -err;
	}
	*ring = r;
	return fd;
}

int switchring_regs(const void *ring, size_t page, uint64_t head, struct user_regs_struct *regs)
{
	const struct perf_event_mmap_page *mp = ring;
	const uint8_t *data = (const uint8_t *)ring + page;
	uint64_t size = page;
	uint64_t h1 = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
	if (h1 != head)
		return -EAGAIN; /* scheduled since that reading */
	/* Newest first: the switch out's record, then its sample. A switch
	 * in met before a sample: the thread ran after its last one. */
	for (uint64_t off = 0; off + sizeof(struct perf_event_header) <= size;) {
		struct perf_event_header h;
		perf_ring_copy(&h, data, size, h1 + off, sizeof(h));
		if (h.size < sizeof(h) || off + h.size > size)
			break;
		if (h.type == PERF_RECORD_SWITCH) {
			if (!(h.misc & PERF_RECORD_MISC_SWITCH_OUT))
				break;
			off += h.size;
			continue;
		}
		if (h.type != PERF_RECORD_SAMPLE || h.size != PERF_REGS_SAMPLE_SIZE)
			break;
		uint64_t abi, v[PERF_NREGS];
		perf_ring_copy(&abi, data, size, h1 + off + sizeof(h), 8);
		perf_ring_copy(v, data, size, h1 + off + sizeof(h) + 8, sizeof(v));
		/* Still there, not overwritten while copied? */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE) != h1 ||
		    abi != PERF_SAMPLE_REGS_ABI_64)
			break;
		perf_regs_set(regs, v);
		return 0;
	}
	return -ENODATA;
}
