/* The perfect-foresight oracle on small traces computed by hand. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "simulation/oracle.h"

#define S 1000 /* ms per second */

static double plan_seconds(const int *need, size_t n, int64_t boot_s, int64_t gran_s, int64_t min_s,
			   int64_t *launches)
{
	struct oracle_params p = {
		.start_ms = 0,
		.step_ms = 60 * S,
		.boot_ms = boot_s * S,
		.billing_granularity_ms = gran_s * S,
		.billing_minimum_ms = min_s * S,
	};
	struct oracle_result r;

	assert_int_equal(oracle_plan(need, n, &p, &r), 0);
	if (launches)
		*launches = r.launches;
	return r.vm_hours * 3600;
}

/* need per minute: 1 1 3 3 1 1 3 1. One instance runs throughout (480 s);
 * two more serve minutes 2-3 and 6, with an idle gap of 120 s between. */
static const int burst[] = {1, 1, 3, 3, 1, 1, 3, 1};

static void test_no_boot_delay_is_the_area(void **state)
{
	(void)state;
	/* Nothing to anticipate: the sum of need x step, 14 instance-minutes. */
	assert_true(fabs(plan_seconds(burst, 8, 0, 0, 0, NULL) - 840) < 1e-6);
}

static void test_gap_as_long_as_boot_is_released(void **state)
{
	int64_t launches;

	(void)state;
	/* Boot 120 s: each extra instance launches at 0 (ready at 120), goes
	 * at 240, relaunches at 240 (ready at 360), goes at 420: 240 + 180 s.
	 * 480 + 2 x 420 = 1320 s. */
	assert_true(fabs(plan_seconds(burst, 8, 120, 0, 0, &launches) - 1320) < 1e-6);
	assert_int_equal(launches, 4);
}

static void test_gap_shorter_than_boot_is_kept(void **state)
{
	int64_t launches;

	(void)state;
	/* Boot 180 s: the 120 s gap is cheaper to keep. Each extra instance runs
	 * from -60 s to 420 s: 480 s. 480 + 2 x 480 = 1440 s. */
	assert_true(fabs(plan_seconds(burst, 8, 180, 0, 0, &launches) - 1440) < 1e-6);
	assert_int_equal(launches, 2);
}

static void test_billing_minimum_and_granularity(void **state)
{
	int64_t launches;

	(void)state;
	/* A 300 s minimum makes the 240 s and 180 s lifetimes cost 600 s;
	 * keeping each extra instance from 0 to 420 s costs 420 s. */
	assert_true(fabs(plan_seconds(burst, 8, 120, 1, 300, &launches) - (480 + 2 * 420)) < 1e-6);
	assert_int_equal(launches, 2);
	/* Hourly billing: everything fits in one hour per instance. */
	assert_true(fabs(plan_seconds(burst, 8, 120, 3600, 0, NULL) - 3 * 3600) < 1e-6);
	assert_int_equal(oracle_bill_ms(61 * S, 60 * S, 0), 120 * S);
	assert_int_equal(oracle_bill_ms(10 * S, 1 * S, 60 * S), 60 * S);
	assert_int_equal(oracle_bill_ms(0, 0, 0), 0);
}

static void test_coarse_billing_bridges_only_when_cheaper(void **state)
{
	/* Two one-minute bursts of one extra instance, 10 minutes apart, boot
	 * 60 s, per-minute billing with a 10-minute minimum: two lifetimes
	 * cost 2 x 600 s; one lifetime from 60 s to 780 s costs 720 s. */
	static const int two[] = {1, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1};
	int64_t launches;

	(void)state;
	assert_true(fabs(plan_seconds(two, 14, 60, 60, 600, &launches) - (840 + 720)) < 1e-6);
	assert_int_equal(launches, 1);
	/* Per-second billing, no minimum: relaunching is cheaper (2 x 120 s). */
	assert_true(fabs(plan_seconds(two, 14, 60, 1, 0, &launches) - (840 + 240)) < 1e-6);
	assert_int_equal(launches, 2);
}

static void test_warm_start_and_idle_stretch(void **state)
{
	static const int need[] = {2, 0, 0, 2};
	int64_t launches;

	(void)state;
	/* Both instances run at the start (0-60 s), go idle for 120 s (longer
	 * than the 60 s boot), and relaunch at 120 s for the last minute:
	 * 2 x (60 + 120) = 360 s. */
	assert_true(fabs(plan_seconds(need, 4, 60, 0, 0, &launches) - 360) < 1e-6);
	assert_int_equal(launches, 2);
}

/* The series ends 30 s into its third one-minute step: that step is billed
 * for those 30 s, whoever serves it. */
static void test_partial_last_step(void **state)
{
	static const int rise[] = {1, 1, 3}, flat[] = {2, 2, 2};
	struct oracle_params p = {.step_ms = 60 * S, .boot_ms = 60 * S, .end_ms = 150 * S};
	struct oracle_result r;

	(void)state;
	/* One instance from 0 to 150 s; two more launched at 60 s, one boot
	 * before the step they serve, gone at 150 s: 150 + 2 x 90 = 330 s
	 * (a whole last step would make it 420 s). */
	assert_int_equal(oracle_plan(rise, 3, &p, &r), 0);
	assert_true(fabs(r.vm_hours * 3600 - 330) < 1e-6);
	assert_int_equal(r.launches, 2);
	assert_int_equal(r.peak, 3);
	/* Nothing to launch when the need does not change: 2 x 150 s and no
	 * boot. */
	assert_int_equal(oracle_plan(flat, 3, &p, &r), 0);
	assert_true(fabs(r.vm_hours * 3600 - 300) < 1e-6);
	assert_int_equal(r.launches, 0);
	/* A 60 s billing minimum applies to the short lifetimes as to any. */
	p.boot_ms = 0;
	p.billing_minimum_ms = 60 * S;
	assert_int_equal(oracle_plan(rise, 3, &p, &r), 0);
	assert_true(fabs(r.vm_hours * 3600 - (150 + 2 * 60)) < 1e-6);
	/* The whole last step, said explicitly, is the default. */
	p.billing_minimum_ms = 0;
	p.end_ms = 180 * S;
	assert_int_equal(oracle_plan(rise, 3, &p, &r), 0);
	assert_true(fabs(r.vm_hours * 3600 - (180 + 2 * 60)) < 1e-6);
	/* An end outside the last step is a caller's error. */
	p.end_ms = 120 * S;
	assert_int_equal(oracle_plan(rise, 3, &p, &r), -EINVAL);
	p.end_ms = 181 * S;
	assert_int_equal(oracle_plan(rise, 3, &p, &r), -EINVAL);
}

/* The burst with a warm pool of 2 restored in 60 s (boot 120 s): both
 * extra instances are taken from the pool 60 s before minute 2 and again
 * before minute 6, their refills (120 s) back by then. Each extra layer
 * costs 180 + 120 s: 480 + 2 x 300 = 1080 s, where cold it was 1320 s. */
static void test_warm_pool(void **state)
{
	struct oracle_params p = {.step_ms = 60 * S, .boot_ms = 120 * S, .warm_size = 2, .restore_ms = 60 * S,
				  .refill_ms = 120 * S};
	struct oracle_result r;

	(void)state;
	assert_int_equal(oracle_plan(burst, 8, &p, &r), 0);
	assert_true(fabs(r.vm_hours * 3600 - 1080) < 1e-6);
	assert_int_equal(r.launches, 4);
	assert_int_equal(r.warm_launches, 4);
	/* Refills of 300 s are back only at 360 s, after the second launch
	 * (300 s): it boots cold from 240 s, as dear as keeping the
	 * instance: 480 + 2 x 360 s. */
	p.refill_ms = 300 * S;
	assert_int_equal(oracle_plan(burst, 8, &p, &r), 0);
	assert_true(fabs(r.vm_hours * 3600 - 1200) < 1e-6);
	assert_int_equal(r.warm_launches, 2);
	/* One member: one layer restores, the other boots. */
	p.refill_ms = 120 * S;
	p.warm_size = 1;
	assert_int_equal(oracle_plan(burst, 8, &p, &r), 0);
	assert_true(fabs(r.vm_hours * 3600 - (480 + 300 + 420)) < 1e-6);
	assert_int_equal(r.warm_launches, 2);
	/* A refill that takes no time serves the next launch, not the one
	 * beside it: each burst's second layer boots cold. */
	p.refill_ms = 0;
	assert_int_equal(oracle_plan(burst, 8, &p, &r), 0);
	assert_int_equal(r.warm_launches, 2);
	assert_true(fabs(r.vm_hours * 3600 - (480 + 300 + 420)) < 1e-6);
	/* A restore slower than the boot is refused. */
	p.restore_ms = 121 * S;
	assert_int_equal(oracle_plan(burst, 8, &p, &r), -EINVAL);
}

static void test_bad_input(void **state)
{
	static const int neg[] = {1, -1};
	struct oracle_params p = {.step_ms = 60 * S};
	struct oracle_result r;

	(void)state;
	assert_int_equal(oracle_plan(neg, 2, &p, &r), -EINVAL);
	p.step_ms = 0;
	assert_int_equal(oracle_plan(burst, 8, &p, &r), -EINVAL);
	p.step_ms = 60 * S;
	assert_int_equal(oracle_plan(burst, 0, &p, &r), 0);
	assert_true(r.vm_hours == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_boot_delay_is_the_area),
		cmocka_unit_test(test_gap_as_long_as_boot_is_released),
		cmocka_unit_test(test_gap_shorter_than_boot_is_kept),
		cmocka_unit_test(test_billing_minimum_and_granularity),
		cmocka_unit_test(test_coarse_billing_bridges_only_when_cheaper),
		cmocka_unit_test(test_warm_start_and_idle_stretch),
		cmocka_unit_test(test_partial_last_step),
		cmocka_unit_test(test_warm_pool),
		cmocka_unit_test(test_bad_input),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
