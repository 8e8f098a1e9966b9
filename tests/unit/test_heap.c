/* SPDX-License-Identifier: MIT */
/*
 * The heap after a burst (daemon/sys/heap.c): what a burst of large buffers
 * leaves free in the middle of the heap, which glibc keeps in RSS by itself,
 * goes back to the system at the next look. (Not under AddressSanitizer,
 * whose allocator is not glibc's.)
 */
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "heap.h"

#define MIB (1u << 20)
#define N   48

static long rss_kib(void)
{
	char line[256];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

static void a_burst_is_given_back(void **state)
{
	static void *bufs[N + 1];
	void *volatile warm;
	long during, after, back;
	unsigned i;

	(void)state;
#if defined(__SANITIZE_ADDRESS__)
	skip(); /* ASan's allocator is not glibc's heap: nothing of this applies */
#endif
	/* As a long-running pubd: a large buffer from mmap freed once raises
	 * glibc's mmap threshold, so the burst's buffers come from the heap. */
	warm = malloc(2 * MIB); /* through a volatile: the compiler may not drop the pair */
	assert_non_null(warm);
	free(warm);
	pubd_heap_give_back(0); /* the baseline */
	for (i = 0; i <= N; i++) {
		bufs[i] = malloc(MIB);
		assert_non_null(bufs[i]);
		for (size_t off = 0; off < MIB; off += 4096) /* every page, stores kept */
			((volatile uint8_t *)bufs[i])[off] = 0x5a;
	}
	during = rss_kib();
	/* All freed but the last, which keeps the heap's top where it is. */
	for (i = 0; i < N; i++)
		free(bufs[i]);
	after = rss_kib();
	assert_true(pubd_heap_give_back(1) >= (size_t)N * MIB);
	back = rss_kib();
	print_message("RSS %ld KiB in the burst, %ld KiB after free, %ld KiB after the look\n", during, after, back);
	assert_true(after > during - (long)(N * MIB / 1024) / 2); /* glibc kept it */
	assert_true(back < after - (long)(N * MIB / 1024) * 3 / 4);
	free(bufs[N]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_burst_is_given_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
