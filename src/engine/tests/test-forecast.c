/* The forecaster on synthetic series whose answers are known: a constant,
 * a ramp, a daily wave, noise of a known distribution; the boot-time meter;
 * and bad input. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/forecast.h"

#define SEC INT64_C(1000)
#define DAY (86400 * SEC)
#define T0 (INT64_C(1700000000) * SEC - INT64_C(1700000000) * SEC % DAY) /* a midnight */

/* A deterministic generator (so the test is the same on every run) with a
 * standard normal by Box-Muller. */
static uint64_t rng_state = 88172645463325252ULL;

static double uniform(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return ((rng_state >> 11) + 0.5) / 9007199254740992.0;
}

static double normal(void)
{
	return sqrt(-2 * log(uniform())) * cos(2 * M_PI * uniform());
}

static double wave(int64_t t)
{
	return 100.0 + 50.0 * sin(2 * M_PI * (double)((t - T0) % DAY) / (double)DAY);
}

static void test_constant(void **unused)
{
	struct forecast *f = malloc(sizeof(*f));
	struct forecast_value v;
	int64_t t;

	(void)unused;
	forecast_init(f, 0.9);
	assert_int_equal(forecast_predict(f, T0, 120 * SEC, &v), -ENODATA);
	for (t = T0; t < T0 + 3600 * SEC; t += 15 * SEC)
		assert_int_equal(forecast_update(f, t, 42.0, 120 * SEC, 120 * SEC), 0);
	assert_int_equal(forecast_predict(f, t, 120 * SEC, &v), 0);
	assert_true(fabs(v.point - 42.0) < 1e-9);
	/* No error was ever made: the quantile adds nothing. */
	assert_true(fabs(v.upper - 42.0) < 1e-9);
	assert_int_equal(forecast_predict_peak(f, t, 600 * SEC, &v), 0);
	assert_true(fabs(v.upper - 42.0) < 1e-9);
	free(f);
}

/* Before any prediction one horizon ahead is scored, the forecaster's
 * headroom is the quantile's multiple of its error one sample ahead: none
 * for a flat series; after 50 then 56, an error of 6. Once predictions are
 * scored, the measured errors take over. */
static void test_cold_start(void **unused)
{
	struct forecast *f = malloc(sizeof(*f));
	struct forecast_value v;
	int64_t t = T0, h = 120 * SEC;
	double q0;
	int i;

	(void)unused;
	forecast_init(f, 0.9);
	q0 = f->q_norm;
	for (i = 0; i < 4; i++, t += 15 * SEC)
		assert_int_equal(forecast_update(f, t, 50.0, h, 0), 0);
	assert_int_equal(forecast_predict(f, t - 15 * SEC, h, &v), 0);
	assert_true(fabs(v.upper - v.point) < 1e-9);

	forecast_init(f, 0.9);
	t = T0;
	assert_int_equal(forecast_update(f, t, 50.0, h, 0), 0);
	t += 15 * SEC;
	assert_int_equal(forecast_update(f, t, 56.0, h, 0), 0);
	assert_int_equal(f->n_scored, 0);
	assert_int_equal(forecast_predict(f, t, h, &v), 0);
	assert_true(fabs(v.upper - v.point - q0 * 6.0) < 1e-9);
	assert_int_equal(forecast_predict_peak(f, t, 4 * h, &v), 0);
	assert_true(v.upper - v.point >= q0 * 6.0 - 1e-9);

	/* A long flat run after it: the measured errors (small, and falling)
	 * take over once enough are scored. On the first day a time of day
	 * has no day of its own yet: the global typical error is the one,
	 * the step's first misses in it (0.17 after 100 minutes, against
	 * the prior's 9.6). */
	for (i = 0; i < 400; i++) {
		t += 15 * SEC;
		assert_int_equal(forecast_update(f, t, 56.0, h, 0), 0);
	}
	assert_true(f->n_scored >= 8);
	assert_int_equal(forecast_predict(f, t, h, &v), 0);
	assert_true(fabs(v.upper - v.point - (f->q_norm + f->q_adjust) * f->scale) < 1e-9);
	assert_true(v.upper - v.point < 0.05 * q0 * 6.0);
	free(f);
}

/* An hour at one sample a minute that starts with a step, as a cold start
 * on a load already running does: the first predictions miss by the step
 * (20) and by less as the level catches up, the rest by noise (a mean
 * absolute error of 0.8). The global scale is the mean of the errors so
 * far, 4.1 after the hour: it used to start at the first error and move a
 * hundredth a score, and stood at 13 an hour later, the headroom of a step
 * for a load of noise. */
static void test_cold_scale(void **unused)
{
	struct forecast *f = malloc(sizeof(*f));
	int64_t t = T0, h = 120 * SEC;
	int i;

	(void)unused;
	forecast_init(f, 0.97);
	assert_int_equal(forecast_update(f, t, 10.0, h, 0), 0);
	for (i = 1; i < 60; i++) {
		t += 60 * SEC;
		assert_int_equal(forecast_update(f, t, 30.0 + normal(), h, 0), 0);
	}
	assert_true(f->n_scored >= 50);
	assert_true(f->n_scored < 100);
	printf("# the global scale after %lu scores: %.2f\n", (unsigned long)f->n_scored, f->scale);
	assert_true(f->scale < 6.0);
	/* A second hour of noise takes it further down (the old way: 7.5). */
	for (i = 0; i < 60; i++) {
		t += 60 * SEC;
		assert_int_equal(forecast_update(f, t, 30.0 + normal(), h, 0), 0);
	}
	printf("# after %lu: %.2f\n", (unsigned long)f->n_scored, f->scale);
	assert_true(f->scale < 3.0);
	free(f);
}

/* A time of day's typical error weighs by the days it was learnt over
 * against the global one, as three days would: one day's jump at 03:00
 * (ten times the global error) makes 03:00's headroom 3.25 times the
 * global one after that day, where thirty such days make it 9.18 times. */
static void test_time_of_day_scale_prior(void **unused)
{
	struct forecast *f = malloc(sizeof(*f));
	struct forecast_value v;
	int64_t t = T0, h = 120 * SEC, at3;
	struct forecast_bucket *b;
	double q, g;

	(void)unused;
	forecast_init(f, 0.9);
	/* Two days of noise: scores enough for the global error. */
	for (; t < T0 + 2 * DAY; t += 60 * SEC)
		assert_int_equal(forecast_update(f, t, 50.0 + normal(), h, 0), 0);
	/* The prediction made at 02:58 is for 03:00. */
	t = T0 + 2 * DAY + 3 * 3600 * SEC - h;
	assert_int_equal(forecast_update(f, t, 50.0 + normal(), h, 0), 0);
	g = f->scale;
	q = f->q_norm + f->q_adjust;
	at3 = (t + h) / FORECAST_BUCKET_MS % FORECAST_DAY_BUCKETS;
	b = &f->day[at3];
	b->scale = (float)(10.0 * g);
	b->visits = 1;
	assert_int_equal(forecast_predict(f, t, h, &v), 0);
	printf("# one day: %.3f x the global error\n", (v.upper - v.point) / q / g);
	assert_true(fabs((v.upper - v.point) / q / g - 3.25) < 1e-3);
	b->visits = 30;
	assert_int_equal(forecast_predict(f, t, h, &v), 0);
	printf("# thirty days: %.3f x\n", (v.upper - v.point) / q / g);
	assert_true(fabs((v.upper - v.point) / q / g - 303.0 / 33.0) < 1e-3);
	/* A time of day with no error of its own takes the global one. */
	b->scale = 0;
	assert_int_equal(forecast_predict(f, t, h, &v), 0);
	assert_true(fabs((v.upper - v.point) / q / g - 1.0) < 1e-3);
	free(f);
}

/* A steady ramp: the trend carries the forecast one horizon ahead. */
static void test_ramp(void **unused)
{
	struct forecast *f = malloc(sizeof(*f));
	struct forecast_value v;
	int64_t t, last = 0, h = 300 * SEC;
	double slope = 0.01; /* per second */

	(void)unused;
	forecast_init(f, 0.5);
	for (t = T0; t < T0 + 4 * 3600 * SEC; t += 15 * SEC) {
		assert_int_equal(forecast_update(f, t, 10.0 + slope * (double)(t - T0) / SEC, h, 0), 0);
		last = t;
	}
	assert_int_equal(forecast_predict(f, last, h, &v), 0);
	/* 10 + 0.01 x (elapsed + 300 s), within 1 %. */
	{
		double want = 10.0 + slope * (double)(last + h - T0) / SEC;

		assert_true(fabs(v.point - want) < 0.01 * want);
	}
	free(f);
}

/* A daily wave learnt over five days: two hours ahead of a rising stretch
 * the forecast is the profile's value, not today's. */
static void test_daily_wave(void **unused)
{
	struct forecast *f = malloc(sizeof(*f));
	struct forecast_value v;
	int64_t t, h = 2 * 3600 * SEC, now = T0 + 5 * DAY + 5 * 3600 * SEC;

	(void)unused;
	forecast_init(f, 0.9);
	for (t = T0; t <= now; t += 60 * SEC)
		assert_int_equal(forecast_update(f, t, wave(t), 120 * SEC, 0), 0);
	assert_int_equal(forecast_predict(f, now, h, &v), 0);
	assert_true(v.seasonal);
	/* The wave rises by about 14 in these two hours; within 2. */
	assert_true(fabs(v.point - wave(now + h)) < 2.0);
	assert_true(v.upper >= v.point);
	/* The peak of the next 12 hours is the wave's crest, 150. */
	assert_int_equal(forecast_predict_peak(f, now, 12 * 3600 * SEC, &v), 0);
	assert_true(fabs(v.point - 150.0) < 3.0);
	free(f);
}

/* Normal noise around a constant: the upper forecast at q covers about q
 * of the values that come. */
static void test_quantile_coverage(void **unused)
{
	static const double qs[] = { 0.9, 0.99 };

	(void)unused;
	for (size_t k = 0; k < sizeof(qs) / sizeof(qs[0]); k++) {
		struct forecast *f = malloc(sizeof(*f));
		struct forecast_value v;
		int64_t t, h = 60 * SEC;
		int covered = 0, n = 0;

		forecast_init(f, qs[k]);
		for (t = T0; t < T0 + 2 * DAY; t += 60 * SEC) {
			double x = 100.0 + 10.0 * normal();

			if (t > T0 + DAY / 2) {
				/* The forecast made one horizon ago for now. */
				n++;
				covered += x <= v.upper;
			}
			assert_int_equal(forecast_update(f, t, x, h, 0), 0);
			assert_int_equal(forecast_predict(f, t, h, &v), 0);
		}
		assert_true(fabs((double)covered / n - qs[k]) < (qs[k] > 0.95 ? 0.01 : 0.03));
		free(f);
	}
}

/* The peak of several noisy values is above each one's quantile: the
 * peak forecast measures its own and covers the highest value of the span
 * about as often as asked. */
static void test_peak_coverage(void **unused)
{
	struct forecast *f = malloc(sizeof(*f));
	struct forecast_value v, pk;
	int64_t t, keep = 300 * SEC;
	int covered = 0, n = 0;

	(void)unused;
	forecast_init(f, 0.9);
	for (t = T0; t < T0 + 3 * DAY; t += 60 * SEC)
		assert_int_equal(forecast_update(f, t, 100.0 + 10.0 * normal(), 60 * SEC, keep), 0);
	for (int i = 0; i < 400; i++) {
		double peak = -INFINITY;

		assert_int_equal(forecast_predict_peak(f, t - 60 * SEC, keep, &pk), 0);
		assert_int_equal(forecast_predict(f, t - 60 * SEC, 60 * SEC, &v), 0);
		assert_true(pk.upper > v.upper);
		for (int64_t e = t; e <= t - 60 * SEC + keep; e += 60 * SEC) {
			double x = 100.0 + 10.0 * normal();

			peak = x > peak ? x : peak;
			assert_int_equal(forecast_update(f, e, x, 60 * SEC, keep), 0);
		}
		t += keep;
		n++;
		covered += peak <= pk.upper;
	}
	assert_true(fabs((double)covered / n - 0.9) < 0.06);
	free(f);
}

/* The share of a horizon's samples above the capacity provisioned for
 * them a horizon earlier (the forecast's upper quantile), on normal noise
 * around a constant, over the second of two days, with the service level
 * LEVEL asked for (0: none). *MEASURED, when not NULL: the share the
 * forecaster measured itself (over about a day). */
static double share_above(double quantile, double level, double *measured)
{
	struct forecast *f = malloc(sizeof(*f));
	struct forecast_value v = { 0 };
	int64_t t, h = 60 * SEC;
	int over = 0, n = 0;

	forecast_init(f, quantile);
	forecast_set_service(f, level);
	for (t = T0; t < T0 + 2 * DAY; t += 60 * SEC) {
		double x = 100.0 + 10.0 * normal();
		bool above = t > T0 && x > v.upper;

		if (t > T0 + DAY) {
			n++;
			over += above;
		}
		assert_int_equal(forecast_update(f, t, x, h, 0), 0);
		if (t > T0)
			forecast_service(f, above, x - v.upper);
		assert_int_equal(forecast_predict(f, t, h, &v), 0);
	}
	assert_true(forecast_state_valid(f));
	if (measured)
		*measured = f->service_short;
	free(f);
	return (double)over / n;
}

/* A service level moves the quantiles until the share of samples above
 * what was provisioned is the one asked for, whatever the quantile
 * started at: up from 0.9 to 1 % above, down from 0.99 to 20 % above.
 * Without one, the quantile alone sets it (10 % and 1 %). */
static void test_service_level(void **unused)
{
	struct forecast *f = malloc(sizeof(*f));
	double q, measured;

	(void)unused;
	assert_true(fabs(share_above(0.9, 0, NULL) - 0.10) < 0.03);
	assert_true(fabs(share_above(0.9, 0.99, &measured) - 0.01) < 0.005);
	/* The share it reports to the operator is the one that came. */
	assert_true(fabs(measured - 0.01) < 0.006);
	assert_true(fabs(share_above(0.99, 0, NULL) - 0.01) < 0.005);
	assert_true(fabs(share_above(0.99, 0.8, &measured) - 0.20) < 0.03);
	assert_true(fabs(measured - 0.20) < 0.04);

	/* The offset: up at a sample above, down a little at one within, only
	 * with a level set; a level outside the range is none; another level
	 * starts it again, the same one keeps it. */
	forecast_init(f, 0.9);
	for (int64_t t = T0; t < T0 + 3600 * SEC; t += 60 * SEC)
		assert_int_equal(forecast_update(f, t, 100.0 + 10.0 * normal(), 60 * SEC, 0), 0);
	assert_true(f->scale > 0);
	forecast_service(f, true, 1.0);
	assert_true(f->q_adjust == 0);
	forecast_set_service(f, 1.0);
	assert_true(f->service_level == 0);
	forecast_set_service(f, 0.99);
	forecast_service(f, true, 1.0);
	q = f->q_adjust;
	assert_true(q > 0);
	forecast_service(f, false, 0);
	assert_true(f->q_adjust < q && f->q_adjust > 0.9 * q);
	q = f->q_adjust;
	/* A jump far beyond what the offset could still add (4 typical
	 * errors) is left out: neither up nor down. */
	forecast_service(f, true, 100.0 * f->scale);
	assert_true(f->q_adjust == q);
	forecast_set_service(f, 0.99);
	assert_true(f->q_adjust == q);
	forecast_set_service(f, 0.995);
	assert_true(f->q_adjust == 0);
	/* Bounded: a service never met does not raise it without end. */
	for (int i = 0; i < 10000; i++)
		forecast_service(f, true, 0);
	assert_true(f->q_adjust == FORECAST_ADJUST_MAX);
	assert_true(forecast_state_valid(f));
	f->q_adjust = NAN;
	assert_false(forecast_state_valid(f));
	free(f);
}

static void test_bad_input(void **unused)
{
	struct forecast *f = malloc(sizeof(*f));
	struct forecast copy;

	(void)unused;
	forecast_init(f, 0.9);
	assert_int_equal(forecast_update(f, T0, 1.0, 60 * SEC, 0), 0);
	copy = *f;
	assert_int_equal(forecast_update(f, T0, 2.0, 60 * SEC, 0), -EINVAL);
	assert_int_equal(forecast_update(f, T0 - 1, 2.0, 60 * SEC, 0), -EINVAL);
	assert_int_equal(forecast_update(f, T0 + SEC, NAN, 60 * SEC, 0), -EINVAL);
	assert_int_equal(forecast_update(f, T0 + SEC, INFINITY, 60 * SEC, 0), -EINVAL);
	assert_int_equal(forecast_update(f, T0 + SEC, 1.0, -1, 0), -EINVAL);
	/* A prefetch only asks for memory, at any time, the week's last
	 * bucket and times before 1970 too. */
	forecast_prefetch(f, T0);
	forecast_prefetch(f, -7 * 86400 * SEC - 1);
	forecast_prefetch(f, 7 * 86400 * SEC - 1);
	forecast_prefetch(f, INT64_MAX / 2);
	assert_memory_equal(f, &copy, sizeof(copy));
	assert_true(forecast_state_valid(f));
	f->version = 99;
	assert_false(forecast_state_valid(f));
	f->version = FORECAST_STATE_VERSION;
	f->n_pending = FORECAST_PENDING + 1;
	assert_false(forecast_state_valid(f));
	f->n_pending = 0;
	f->day[3].mean = NAN;
	assert_false(forecast_state_valid(f));
	free(f);
}

/* The state is the same size after two weeks of samples at 1 s as after
 * one: memory is bounded by the buckets, not by the history. */
static void test_bounded(void **unused)
{
	struct forecast *f = malloc(sizeof(*f));
	int64_t t;

	(void)unused;
	forecast_init(f, 0.9);
	for (t = T0; t < T0 + 14 * DAY; t += 10 * SEC)
		assert_int_equal(forecast_update(f, t, wave(t), 120 * SEC, 120 * SEC), 0);
	assert_true(forecast_state_valid(f));
	assert_true(f->n_pending <= FORECAST_PENDING && f->n_peaks <= FORECAST_PENDING);
	assert_true(f->week[FORECAST_WEEK_BUCKETS - 1].visits == 2);
	free(f);
}

static void test_boot_meter(void **unused)
{
	struct forecast_boot b = { 0 };

	(void)unused;
	assert_int_equal(forecast_boot_horizon(&b, 120 * SEC), 120 * SEC);
	forecast_boot_action(&b, 1000 * SEC, 2, 5);
	forecast_boot_observe(&b, 1060 * SEC, 3);
	assert_int_equal(forecast_boot_horizon(&b, 120 * SEC), 120 * SEC);
	forecast_boot_observe(&b, 1090 * SEC, 5);
	assert_int_equal(forecast_boot_horizon(&b, 120 * SEC), 90 * SEC);
	/* Already ready: no second measurement of the same action. */
	forecast_boot_observe(&b, 1200 * SEC, 5);
	assert_int_equal(b.n_measured, 1);
	/* A slower boot counts at once. */
	forecast_boot_action(&b, 2000 * SEC, 5, 6);
	forecast_boot_observe(&b, 2200 * SEC, 6);
	assert_int_equal(forecast_boot_horizon(&b, 120 * SEC), 200 * SEC);
	/* A faster one moves it a quarter of the way. */
	forecast_boot_action(&b, 3000 * SEC, 6, 7);
	forecast_boot_observe(&b, 3100 * SEC, 7);
	assert_int_equal(forecast_boot_horizon(&b, 120 * SEC), 175 * SEC);
	/* A scale-in below the size waited for abandons the timing. */
	forecast_boot_action(&b, 4000 * SEC, 7, 9);
	forecast_boot_action(&b, 4010 * SEC, 9, 6);
	forecast_boot_observe(&b, 4020 * SEC, 9);
	assert_int_equal(b.n_measured, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_constant), cmocka_unit_test(test_cold_start), cmocka_unit_test(test_ramp),
		cmocka_unit_test(test_daily_wave),	  cmocka_unit_test(test_quantile_coverage),
		cmocka_unit_test(test_peak_coverage),	  cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_bounded),		  cmocka_unit_test(test_boot_meter),
		cmocka_unit_test(test_service_level),	  cmocka_unit_test(test_cold_scale),
		cmocka_unit_test(test_time_of_day_scale_prior),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
