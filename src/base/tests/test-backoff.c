/* The one retry backoff: doubling, its cap, and the jitter's bounds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/backoff.h"

static void test_doubling_and_cap(void **state)
{
	(void)state;
	/* The largest draw gives the whole delay; the smallest, half. */
	assert_int_equal(backoff_delay_from(1000, 32000, 1, 500), 1000);
	assert_int_equal(backoff_delay_from(1000, 32000, 1, 0), 500);
	assert_int_equal(backoff_delay_from(1000, 32000, 2, 1000), 2000);
	assert_int_equal(backoff_delay_from(1000, 32000, 3, 2000), 4000);
	assert_int_equal(backoff_delay_from(1000, 32000, 6, 16000), 32000);
	assert_int_equal(backoff_delay_from(1000, 32000, 7, 16000), 32000);
	/* A cap that is not a power of two of the base. */
	assert_int_equal(backoff_delay_from(1000, 60000, 7, 30000), 60000);
	/* No overflow however many attempts failed. */
	assert_int_equal(backoff_delay_from(1000, 60000, 1 << 30, 0), 30000);
	assert_int_equal(backoff_delay_from(INT64_MAX / 2, INT64_MAX, 5, 0), INT64_MAX - INT64_MAX / 2);
	/* Attempt 0 or below is the first. */
	assert_int_equal(backoff_delay_from(50, 1000, 0, 25), 50);
	/* No base or no cap: no delay. */
	assert_int_equal(backoff_delay_from(0, 1000, 3, 7), 0);
	assert_int_equal(backoff_delay_from(1000, 0, 3, 7), 0);
	assert_int_equal(backoff_delay_from(-5, 1000, 3, 7), 0);
	/* A base above the cap is capped. */
	assert_int_equal(backoff_delay_from(5000, 1000, 1, 500), 1000);
	/* An odd delay: between its rounded-up half and all of it. */
	assert_int_equal(backoff_delay_from(5, 100, 1, 0), 3);
	assert_int_equal(backoff_delay_from(5, 100, 1, 2), 5);
	assert_int_equal(backoff_delay_from(1, 100, 1, 12345), 1);
}

/* Random draws stay inside [half, all] and are not all the same. */
static void test_jitter(void **state)
{
	int64_t lo = INT64_MAX, hi = 0;

	(void)state;
	for (int i = 0; i < 2000; i++) {
		int64_t d = backoff_delay_ms(1000, 32000, 3);

		assert_true(d >= 2000 && d <= 4000);
		lo = d < lo ? d : lo;
		hi = d > hi ? d : hi;
	}
	/* 2000 uniform draws from 2001 values: the spread cannot be narrow
	 * unless the draw is broken. */
	assert_true(hi - lo > 1000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_doubling_and_cap),
		cmocka_unit_test(test_jitter),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
