/* SPDX-License-Identifier: MIT */
/*
 * The heap after a burst. pubd is one thread, served by glibc's main arena,
 * which gives memory back to the kernel only from the top of the heap; and
 * once a large buffer that came from mmap is freed, glibc raises its mmap
 * threshold, so later large buffers (a megabyte message being put
 * together, a slow subscriber's queue) come from the heap too. When a burst
 * ends, what it used lies free in the middle of the heap and stays in RSS
 * for good: a 10-minute soak saw one such step of 36 MiB that never came
 * down. malloc_trim gives every free page back wherever it lies
 * (MADV_DONTNEED). It walks the free chunks and makes a system call for each
 * large one, so it runs only when the free space grew by a burst's worth
 * since the last look (or, with that much free, every 30 s), not every
 * second nor per message.
 */
#include <malloc.h>
#include <stdint.h>

#include "heap.h"

/* Free heap bytes that grew by this much since the last trim are a burst. */
#define HEAP_BURST (4u << 20)
/* Past this, a heap with that much free is trimmed anyway: its free pages
 * may have been used and freed again between two looks. */
#define HEAP_TRIM_EVERY_NS (30ull * 1000 * 1000 * 1000)

static size_t free_at_last_trim;
static uint64_t last_trim_ns;

size_t pubd_heap_give_back(uint64_t now_ns)
{
	struct mallinfo2 mi = mallinfo2();

	if (mi.fordblks < free_at_last_trim)
		free_at_last_trim = mi.fordblks; /* reused since: look from here */
	if (mi.fordblks - free_at_last_trim >= HEAP_BURST ||
	    (mi.fordblks >= HEAP_BURST && now_ns - last_trim_ns >= HEAP_TRIM_EVERY_NS)) {
		malloc_trim(0);
		free_at_last_trim = mi.fordblks;
		last_trim_ns = now_ns;
	}
	return mi.fordblks;
}
