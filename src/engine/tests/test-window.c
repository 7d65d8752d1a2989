/* Windows: aggregates over a duration, staleness, bounded rings. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "engine/window.h"

#define S(x) ((int64_t)(x) * MS_PER_SEC)

static void fill(struct window *w, const double *v, size_t n, int64_t step_ms)
{
	size_t i;

	for (i = 0; i < n; i++)
		assert_int_equal(window_push(w, (int64_t)(i + 1) * step_ms, v[i]), 0);
}

static void test_aggregations(void **state)
{
	struct window w;
	const double v[] = { 10, 50, 20, 40, 30 };
	double r;

	(void)state;
	assert_int_equal(window_init(&w, 16), 0);
	fill(&w, v, 5, S(15));
	/* All five samples (15..75 s) are inside (15 s, 75 s] but the first. */
	assert_int_equal(window_aggregate(&w, S(75), S(60), AGG_AVG, 0, &r, NULL), 0);
	assert_true(fabs(r - 35.0) < 1e-9);
	assert_int_equal(window_aggregate(&w, S(75), S(61), AGG_AVG, 0, &r, NULL), 0);
	assert_true(fabs(r - 30.0) < 1e-9);
	assert_int_equal(window_aggregate(&w, S(75), S(600), AGG_MIN, 0, &r, NULL), 0);
	assert_true(r == 10);
	assert_int_equal(window_aggregate(&w, S(75), S(600), AGG_MAX, 0, &r, NULL), 0);
	assert_true(r == 50);
	assert_int_equal(window_aggregate(&w, S(75), S(600), AGG_LAST, 0, &r, NULL), 0);
	assert_true(r == 30);
	/* At 45 s the window ends there: later samples are not in it yet. */
	assert_int_equal(window_aggregate(&w, S(45), S(600), AGG_LAST, 0, &r, NULL), 0);
	assert_true(r == 20);
	window_destroy(&w);
}

static void test_p95(void **state)
{
	struct window w;
	double r;
	int i;

	(void)state;
	assert_int_equal(window_init(&w, 128), 0);
	/* 1..100 shuffled by a stride coprime with 100. */
	for (i = 0; i < 100; i++)
		assert_int_equal(window_push(&w, S(i + 1), (double)((i * 37) % 100 + 1)), 0);
	assert_int_equal(window_aggregate(&w, S(100), S(1000), AGG_P95, 0, &r, NULL), 0);
	assert_true(r == 95);
	window_destroy(&w);
}

static void test_stale_is_invalid_not_zero(void **state)
{
	struct window w;
	double r = -1;
	const char *why = NULL;

	(void)state;
	assert_int_equal(window_init(&w, 8), 0);
	assert_int_equal(window_aggregate(&w, S(10), S(60), AGG_AVG, S(45), &r, &why), -ENODATA);
	assert_string_equal(why, "no samples");
	assert_int_equal(window_push(&w, S(10), 70), 0);
	assert_int_equal(window_aggregate(&w, S(55), S(60), AGG_AVG, S(45), &r, &why), 0);
	assert_true(r == 70);
	r = -1;
	why = NULL;
	assert_int_equal(window_aggregate(&w, S(56), S(60), AGG_AVG, S(45), &r, &why), -ENODATA);
	assert_non_null(strstr(why, "stale"));
	assert_true(r == -1);
	/* Fresh enough but outside a short window. */
	assert_int_equal(window_aggregate(&w, S(40), S(30), AGG_AVG, S(45), &r, &why), -ENODATA);
	assert_non_null(strstr(why, "window"));
	window_destroy(&w);
}

static void test_refuses_bad_samples(void **state)
{
	struct window w;
	double r;

	(void)state;
	assert_int_equal(window_init(&w, 8), 0);
	assert_int_equal(window_push(&w, S(10), NAN), -EDOM);
	assert_int_equal(window_push(&w, S(10), INFINITY), -EDOM);
	assert_int_equal(window_push(&w, S(10), 5), 0);
	assert_int_equal(window_push(&w, S(9), 7), -ERANGE);
	assert_int_equal(window_aggregate(&w, S(10), S(60), AGG_MAX, 0, &r, NULL), 0);
	assert_true(r == 5);
	window_destroy(&w);
}

static void test_ring_is_bounded(void **state)
{
	struct window w;
	double r;
	int i;

	(void)state;
	assert_int_equal(window_init(&w, 8), 0);
	for (i = 1; i <= 20; i++)
		assert_int_equal(window_push(&w, S(i), i), 0);
	assert_int_equal(w.n, 8);
	/* The oldest samples were overwritten: the minimum is sample 13. */
	assert_int_equal(window_aggregate(&w, S(20), S(1000), AGG_MIN, 0, &r, NULL), 0);
	assert_true(r == 13);
	assert_true(window_newest(&w)->v == 20);
	window_clear(&w);
	assert_null(window_newest(&w));
	window_destroy(&w);
	assert_int_equal(window_capacity_for(S(300), S(15)), 44);
	assert_int_equal(window_capacity_for(S(10), S(15)), 8);
	assert_int_equal(window_capacity_for(S(86400), 100), WINDOW_MAX_CAPACITY);
	assert_int_equal(window_init(&w, WINDOW_MAX_CAPACITY + 1), -EINVAL);
}

/* A ring that grows within its span aggregates what a ring of its whole
 * capacity does, for every duration up to the span and every statistic,
 * whatever the samples' pace: the steady pace it was sized for (it stays
 * at its first four), gaps, two samples at one time (one more sample in
 * the span: it grows once), bursts of early polls (it grows to its
 * capacity, never past it). */
static void test_ring_grows_within_span(void **state)
{
	static const enum aggregation aggs[] = { AGG_AVG, AGG_MIN, AGG_MAX, AGG_LAST, AGG_P95 };
	const int64_t span = S(60);
	struct window full, grown;
	uint32_t most = 0;
	int64_t t = 0;
	unsigned seed = 7;
	size_t cap = window_capacity_for(span, S(15));

	(void)state;
	assert_int_equal(window_init_span(&grown, cap, 0), -EINVAL);
	assert_int_equal(window_init_span(&grown, WINDOW_MAX_CAPACITY + 1, span), -EINVAL);
	assert_int_equal(window_init(&full, cap), 0);
	assert_int_equal(window_init_span(&grown, cap, span), 0);
	assert_int_equal(grown.cap, WINDOW_START_CAPACITY);
	for (int i = 0; i < 3000; i++) {
		double r1, r2;
		int e1, e2;

		seed = seed * 1103515245 + 12345;
		/* Every 15 s for 500 samples; then mostly so, now and then
		 * with a gap of minutes or a repeated time; from sample 1000
		 * to 1400 every 1-3 s. */
		if (i < 500)
			t += S(15);
		else if (i >= 1000 && i < 1400)
			t += S(1 + (seed >> 16) % 3);
		else if ((seed >> 16) % 50 == 0)
			t += S(200);
		else if ((seed >> 16) % 60 == 1)
			t += 0;
		else
			t += S(15);
		assert_int_equal(window_push(&full, t, (double)((seed >> 8) % 1000)), 0);
		assert_int_equal(window_push(&grown, t, (double)((seed >> 8) % 1000)), 0);
		if (i == 499)
			assert_int_equal(grown.cap, WINDOW_START_CAPACITY);
		if (i == 999)
			assert_true(grown.cap < cap);
		if (grown.cap > most)
			most = grown.cap;
		for (size_t a = 0; a < sizeof(aggs) / sizeof(aggs[0]); a++)
			for (int64_t d = S(5); d <= span; d += S(5)) {
				e1 = window_aggregate(&full, t, d, aggs[a], S(45), &r1, NULL);
				e2 = window_aggregate(&grown, t, d, aggs[a], S(45), &r2, NULL);
				assert_int_equal(e1, e2);
				if (e1 == 0)
					assert_true(r1 == r2);
			}
	}
	/* The burst needed the whole ring, and no more. */
	assert_int_equal(most, cap);
	window_destroy(&full);
	window_destroy(&grown);
}

/* A utilization window re-expressed over the instances ready now: the
 * load each sample measured is kept, whatever the count it was a mean
 * over; an unknown count on either side leaves the samples as they are. */
static void test_reexpress(void **state)
{
	struct window w;
	int over = 0;
	double r;

	(void)state;
	assert_int_equal(window_init_span(&w, 16, S(60)), 0);
	/* Before any count is known: nothing to scale, the count taken. */
	window_reexpress(&w, &over, 7);
	assert_int_equal(over, 7);
	/* 7 instances at 285 %, then 20 ready: the peak is 99.75 % of 20,
	 * not 285 % of them. */
	assert_int_equal(window_push(&w, S(15), 285.0), 0);
	assert_int_equal(window_push(&w, S(30), 280.0), 0);
	window_reexpress(&w, &over, 20);
	assert_int_equal(over, 20);
	assert_int_equal(window_push(&w, S(45), 90.0), 0);
	assert_int_equal(window_aggregate(&w, S(45), S(60), AGG_MAX, 0, &r, NULL), 0);
	assert_true(fabs(r - 285.0 * 7 / 20) < 1e-9);
	assert_int_equal(window_aggregate(&w, S(45), S(60), AGG_AVG, 0, &r, NULL), 0);
	assert_true(fabs(r - (285.0 * 7 / 20 + 280.0 * 7 / 20 + 90.0) / 3) < 1e-9);
	/* A scale-in to 10: the newest sample, 90 % of 20, is 180 % of 10. */
	window_reexpress(&w, &over, 10);
	assert_int_equal(window_aggregate(&w, S(45), S(1), AGG_MAX, 0, &r, NULL), 0);
	assert_true(fabs(r - 180.0) < 1e-9);
	/* The same count: the samples stay. */
	window_reexpress(&w, &over, 10);
	assert_int_equal(window_aggregate(&w, S(45), S(1), AGG_MAX, 0, &r, NULL), 0);
	assert_true(fabs(r - 180.0) < 1e-9);
	/* An unknown count leaves them, and is what the next count is
	 * measured against: nothing is scaled from it. */
	window_reexpress(&w, &over, 0);
	assert_int_equal(over, 0);
	window_reexpress(&w, &over, 5);
	assert_int_equal(over, 5);
	assert_int_equal(window_aggregate(&w, S(45), S(1), AGG_MAX, 0, &r, NULL), 0);
	assert_true(fabs(r - 180.0) < 1e-9);
	window_destroy(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_aggregations),
		cmocka_unit_test(test_p95),
		cmocka_unit_test(test_stale_is_invalid_not_zero),
		cmocka_unit_test(test_refuses_bad_samples),
		cmocka_unit_test(test_ring_is_bounded),
		cmocka_unit_test(test_ring_grows_within_span),
		cmocka_unit_test(test_reexpress),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
