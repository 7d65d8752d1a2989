/* The region: zeroed, aligned, distinct blocks; large blocks in mappings
 * of their own; everything gone with region_free(). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/region.h"

static void test_blocks(void **state)
{
	struct region *r = region_new();

	(void)state;
	assert_non_null(r);
	assert_int_equal(region_mapped(r), 0);
	/* Enough blocks of odd sizes to fill several mappings: each is zero
	 * and aligned for any type, and as each is then filled, a block that
	 * overlapped one before would not be zero. */
	for (size_t i = 0; i < 20000; i++) {
		size_t n = 1 + i % 97;
		unsigned char *p = region_alloc(r, n);

		assert_non_null(p);
		assert_int_equal((uintptr_t)p % _Alignof(max_align_t), 0);
		for (size_t k = 0; k < n; k++)
			assert_int_equal(p[k], 0);
		memset(p, 0xa5, n);
	}
	assert_true(region_mapped(r) >= 20000 * 49);
	/* Blocks of 0 bytes are blocks too, each its own. */
	assert_ptr_not_equal(region_alloc(r, 0), region_alloc(r, 0));
	region_free(r);
	region_free(NULL);
}

static void test_large(void **state)
{
	struct region *r = region_new();
	char *small, *big, *after;
	size_t mapped;

	(void)state;
	small = region_alloc(r, 10);
	mapped = region_mapped(r);
	/* A block larger than a quarter of a mapping gets its own, and the
	 * small blocks that follow still come from the first. */
	big = region_alloc(r, 1 << 20);
	assert_non_null(big);
	assert_true(region_mapped(r) >= mapped + (1 << 20));
	memset(big, 1, 1 << 20);
	after = region_alloc(r, 10);
	assert_true(after > small && after < small + 4096);
	assert_int_equal(big[(1 << 20) - 1], 1);
	/* Sizes that overflow are refused. */
	assert_null(region_alloc(r, SIZE_MAX));
	assert_null(region_calloc(r, SIZE_MAX / 2, 4));
	region_free(r);
}

static void test_strings(void **state)
{
	struct region *r = region_new();
	char *s;

	(void)state;
	assert_string_equal(region_strdup(r, "libvirt"), "libvirt");
	assert_string_equal(region_strndup(r, "gce-mig", 3), "gce");
	assert_string_equal(region_strndup(r, "ab", 10), "ab");
	assert_string_equal(region_printf(r, "%s-%03d", "web", 7), "web-007");
	/* Longer than any buffer a printf might use on the stack. */
	s = region_printf(r, "%5000s|", "x");
	assert_non_null(s);
	assert_int_equal(strlen(s), 5001);
	assert_int_equal(s[4999], 'x');
	region_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_blocks),
		cmocka_unit_test(test_large),
		cmocka_unit_test(test_strings),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
