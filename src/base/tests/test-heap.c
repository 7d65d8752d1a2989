/* The heap's allocator (heap.c), built twice: as the unit tests are, on
 * glibc's malloc, and, when configure found jemalloc, linked with it as the
 * daemon is (test-heap-jemalloc, HEAP_TEST_JEMALLOC). Each time: the
 * allocator is told right, a thread that asks for a cache of freed blocks
 * gets one (with jemalloc, others do not), the bytes in use follow what is
 * allocated and freed, and with jemalloc the pages freed are given back. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/heap.h"

#ifdef HEAP_TEST_JEMALLOC
#include <jemalloc/jemalloc.h>

/* As the daemon's (src/main.c). */
const char *malloc_conf = HEAP_JEMALLOC_CONF;

/* 1 when the calling thread has a cache, 0 when not, -1 when jemalloc
 * would not say. */
static int thread_cache(void)
{
	bool on = true;
	size_t len = sizeof(on);

	return mallctl("thread.tcache.enabled", &on, &len, NULL, 0) == 0 ? on : -1;
}

/* On another thread, which must not assert: cmocka's failures are the
 * test's own thread's. */
static void *other_thread(void *arg)
{
	*(int *)arg = thread_cache();
	return NULL;
}
#endif

#define N_BLOCKS 20000
#define BLOCK 100

static void test_allocator(void **state)
{
	(void)state;
#ifdef HEAP_TEST_JEMALLOC
	assert_string_equal(heap_allocator(), "jemalloc");
#else
	assert_string_equal(heap_allocator(), "glibc");
#endif
}

/* The thread that asks gets a cache of its own; with jemalloc, the
 * daemon's settings leave every other thread without. */
static void test_thread_cache(void **state)
{
	void *p;

	(void)state;
#ifdef HEAP_TEST_JEMALLOC
	pthread_t t;
	int other = -1;
	unsigned slots;
	size_t largest, len;

	/* The settings took: an unknown name would only be warned about. */
	len = sizeof(slots);
	assert_int_equal(mallctl("opt.tcache_nslots_small_max", &slots, &len, NULL, 0), 0);
	assert_int_equal(slots, 32);
	len = sizeof(largest);
	assert_int_equal(mallctl("opt.tcache_max", &largest, &len, NULL, 0), 0);
	assert_int_equal(largest, 4096);
	assert_int_equal(thread_cache(), 0);
	heap_thread_cache();
	assert_int_equal(thread_cache(), 1);
	assert_int_equal(pthread_create(&t, NULL, other_thread, &other), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(other, 0);
#else
	heap_thread_cache();
#endif
	p = malloc(BLOCK);
	assert_non_null(p);
	free(p);
}

/* Not under the sanitizers (main()). */
static void __attribute__((unused)) test_figures(void **state)
{
	static void *blocks[N_BLOCKS];
	struct heap_figures before, full, after;

	(void)state;
	assert_true(heap_read(&before));
	for (size_t i = 0; i < N_BLOCKS; i++) {
		blocks[i] = malloc(BLOCK);
		assert_non_null(blocks[i]);
		memset(blocks[i], (int)i, BLOCK);
	}
	assert_true(heap_read(&full));
	if (full.in_use < before.in_use + (size_t)N_BLOCKS * BLOCK)
		fail_msg("%d blocks of %d bytes: in use %zu -> %zu", N_BLOCKS, BLOCK, before.in_use, full.in_use);
	for (size_t i = 0; i < N_BLOCKS; i++)
		free(blocks[i]);
	heap_give_back();
	assert_true(heap_read(&after));
	if (after.in_use > before.in_use + 256 * 1024)
		fail_msg("in use %zu after the blocks went, %zu before them", after.in_use, before.in_use);
#ifdef HEAP_TEST_JEMALLOC
	/* Their pages are empty and purged: not held resident. Without the
	 * purge they stay for the two seconds of dirty_decay_ms. */
	if (after.free > before.free + 512 * 1024)
		fail_msg("jemalloc holds %zu bytes free resident after the purge, %zu before the blocks", after.free,
			 before.free);
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_allocator),
		cmocka_unit_test(test_thread_cache),
	/* The sanitizer's allocator is neither, and glibc's figures do not
	 * count its blocks. */
#ifndef __SANITIZE_ADDRESS__
		cmocka_unit_test(test_figures),
#endif
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
