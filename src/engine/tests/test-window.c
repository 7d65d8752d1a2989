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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_aggregations),
		cmocka_unit_test(test_p95),
		cmocka_unit_test(test_stale_is_invalid_not_zero),
		cmocka_unit_test(test_refuses_bad_samples),
		cmocka_unit_test(test_ring_is_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
