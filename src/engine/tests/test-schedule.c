/* Schedules: recurrence profiles on DST change days in Europe/Berlin and
 * America/New_York, spans across midnight, a start inside a skipped hour, and
 * the precedence fixed > recurrence > default. */
#include <glib.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "engine/schedule.h"

#define MON_FRI 0x1fu
#define EVERY_DAY 0x7fu
#define FRIDAY (1u << 4)

/* UTC epoch milliseconds of a UTC calendar time. */
static int64_t utc(int y, int mo, int d, int h, int mi, int s)
{
	GDateTime *dt = g_date_time_new_utc(y, mo, d, h, mi, s);
	int64_t ms = g_date_time_to_unix(dt) * 1000;

	g_date_time_unref(dt);
	return ms;
}

/* The config module resolves profile_conf.tz; here the test does it. */
static struct profile_conf recurrence(const char *name, const char *zone, unsigned days, int start_min,
				      int end_min)
{
	struct profile_conf p = { .name = (char *)name, .kind = PROFILE_RECURRENCE, .days = days,
				  .start_minute = start_min, .end_minute = end_min, .timezone = (char *)zone };

	p.tz = g_time_zone_new_identifier(zone);
	assert_non_null(p.tz);
	return p;
}

static void drop(struct profile_conf *p)
{
	g_time_zone_unref(p->tz);
}

static void test_berlin_business_hours_across_dst(void **state)
{
	struct profile_conf p = recurrence("business", "Europe/Berlin", MON_FRI, 8 * 60, 19 * 60);

	(void)state;
	/* Friday 27 March 2026, CET (UTC+1): 08:00-19:00 is 07:00-18:00 UTC. */
	assert_false(schedule_recurrence_matches(&p, utc(2026, 3, 27, 6, 59, 59)));
	assert_true(schedule_recurrence_matches(&p, utc(2026, 3, 27, 7, 0, 0)));
	assert_true(schedule_recurrence_matches(&p, utc(2026, 3, 27, 17, 59, 59)));
	assert_false(schedule_recurrence_matches(&p, utc(2026, 3, 27, 18, 0, 0)));
	/* The weekend of the change. */
	assert_false(schedule_recurrence_matches(&p, utc(2026, 3, 28, 12, 0, 0)));
	assert_false(schedule_recurrence_matches(&p, utc(2026, 3, 29, 12, 0, 0)));
	/* Monday 30 March, CEST (UTC+2): 06:00-17:00 UTC. */
	assert_false(schedule_recurrence_matches(&p, utc(2026, 3, 30, 5, 59, 59)));
	assert_true(schedule_recurrence_matches(&p, utc(2026, 3, 30, 6, 0, 0)));
	assert_true(schedule_recurrence_matches(&p, utc(2026, 3, 30, 16, 59, 59)));
	assert_false(schedule_recurrence_matches(&p, utc(2026, 3, 30, 17, 0, 0)));
	/* Friday 23 October, still CEST; Monday 26 October, CET again. */
	assert_true(schedule_recurrence_matches(&p, utc(2026, 10, 23, 6, 0, 0)));
	assert_false(schedule_recurrence_matches(&p, utc(2026, 10, 23, 17, 0, 0)));
	assert_false(schedule_recurrence_matches(&p, utc(2026, 10, 26, 6, 30, 0)));
	assert_true(schedule_recurrence_matches(&p, utc(2026, 10, 26, 7, 0, 0)));
	assert_true(schedule_recurrence_matches(&p, utc(2026, 10, 26, 17, 30, 0)));
	assert_false(schedule_recurrence_matches(&p, utc(2026, 10, 26, 18, 0, 0)));
	drop(&p);
}

static void test_new_york_business_hours_across_dst(void **state)
{
	struct profile_conf p = recurrence("business", "America/New_York", MON_FRI, 8 * 60, 19 * 60);

	(void)state;
	/* Friday 6 March 2026, EST (UTC-5): 13:00-00:00 UTC. */
	assert_false(schedule_recurrence_matches(&p, utc(2026, 3, 6, 12, 59, 59)));
	assert_true(schedule_recurrence_matches(&p, utc(2026, 3, 6, 13, 0, 0)));
	assert_true(schedule_recurrence_matches(&p, utc(2026, 3, 6, 23, 59, 59)));
	assert_false(schedule_recurrence_matches(&p, utc(2026, 3, 7, 0, 0, 0)));
	/* Monday 9 March, EDT (UTC-4): 12:00-23:00 UTC. */
	assert_true(schedule_recurrence_matches(&p, utc(2026, 3, 9, 12, 0, 0)));
	assert_false(schedule_recurrence_matches(&p, utc(2026, 3, 9, 23, 0, 0)));
	/* Friday 30 October EDT, Monday 2 November EST. */
	assert_true(schedule_recurrence_matches(&p, utc(2026, 10, 30, 12, 0, 0)));
	assert_false(schedule_recurrence_matches(&p, utc(2026, 11, 2, 12, 30, 0)));
	assert_true(schedule_recurrence_matches(&p, utc(2026, 11, 2, 13, 0, 0)));
	drop(&p);
}

static void test_skipped_and_repeated_hour(void **state)
{
	struct profile_conf p = recurrence("batch", "Europe/Berlin", EVERY_DAY, 2 * 60 + 30, 3 * 60 + 30);

	(void)state;
	/* 29 March 2026: 02:00 CET jumps to 03:00 CEST at 01:00 UTC, so 02:30
	 * never happens; the span starts at the first local time past it. */
	assert_false(schedule_recurrence_matches(&p, utc(2026, 3, 29, 0, 59, 59)));
	assert_true(schedule_recurrence_matches(&p, utc(2026, 3, 29, 1, 0, 0)));
	assert_true(schedule_recurrence_matches(&p, utc(2026, 3, 29, 1, 29, 59)));
	assert_false(schedule_recurrence_matches(&p, utc(2026, 3, 29, 1, 30, 0)));
	/* The day before, 02:30 CET is 01:30 UTC. */
	assert_false(schedule_recurrence_matches(&p, utc(2026, 3, 28, 1, 0, 0)));
	assert_true(schedule_recurrence_matches(&p, utc(2026, 3, 28, 1, 30, 0)));
	/* 25 October: 02:30 happens twice, at 00:30 and at 01:30 UTC. */
	assert_true(schedule_recurrence_matches(&p, utc(2026, 10, 25, 0, 30, 0)));
	assert_false(schedule_recurrence_matches(&p, utc(2026, 10, 25, 1, 0, 0)));
	assert_true(schedule_recurrence_matches(&p, utc(2026, 10, 25, 1, 30, 0)));
	assert_false(schedule_recurrence_matches(&p, utc(2026, 10, 25, 2, 30, 0)));
	drop(&p);
}

static void test_span_across_midnight(void **state)
{
	struct profile_conf p = recurrence("night", "UTC", FRIDAY, 22 * 60, 6 * 60);

	(void)state;
	/* 2026-11-27 is a Friday. */
	assert_true(schedule_recurrence_matches(&p, utc(2026, 11, 27, 23, 0, 0)));
	assert_true(schedule_recurrence_matches(&p, utc(2026, 11, 28, 5, 59, 0)));
	assert_false(schedule_recurrence_matches(&p, utc(2026, 11, 28, 6, 0, 0)));
	assert_false(schedule_recurrence_matches(&p, utc(2026, 11, 28, 23, 0, 0)));
	/* Friday morning belongs to Thursday's span, which is not configured. */
	assert_false(schedule_recurrence_matches(&p, utc(2026, 11, 27, 5, 0, 0)));
	drop(&p);
}

static void test_precedence(void **state)
{
	struct profile_conf prof[4];
	struct group_conf g = { .name = "web", .profiles = prof, .n_profiles = 4 };

	(void)state;
	prof[0] = (struct profile_conf){ .name = "base", .kind = PROFILE_DEFAULT };
	prof[1] = recurrence("business", "Europe/Berlin", MON_FRI, 8 * 60, 19 * 60);
	prof[2] = recurrence("always", "UTC", EVERY_DAY, 0, 1440);
	prof[3] = (struct profile_conf){ .name = "sale", .kind = PROFILE_FIXED,
					 .start_ms = utc(2026, 11, 27, 7, 0, 0),
					 .end_ms = utc(2026, 11, 28, 0, 0, 0) };
	/* Inside the sale: the fixed profile, although listed last. */
	assert_int_equal(schedule_active_profile(&g, utc(2026, 11, 27, 9, 0, 0)), 3);
	/* Its end is exclusive; then the first matching recurrence. */
	assert_int_equal(schedule_active_profile(&g, utc(2026, 11, 26, 9, 0, 0)), 1);
	assert_int_equal(schedule_active_profile(&g, utc(2026, 11, 28, 9, 0, 0)), 2);
	g.n_profiles = 2;
	assert_int_equal(schedule_active_profile(&g, utc(2026, 11, 28, 9, 0, 0)), 0);
	drop(&prof[1]);
	drop(&prof[2]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_berlin_business_hours_across_dst),
		cmocka_unit_test(test_new_york_business_hours_across_dst),
		cmocka_unit_test(test_skipped_and_repeated_hour),
		cmocka_unit_test(test_span_across_midnight),
		cmocka_unit_test(test_precedence),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
