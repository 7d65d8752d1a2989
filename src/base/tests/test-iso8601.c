/* The one ISO 8601 reader and writer: every form the project reads (time
 * zones, fractions, the short forms of a configuration), what it refuses,
 * and that what it writes reads back. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "base/iso8601.h"

/* 2026-03-01T08:00:00Z, worked out by hand: 20513 days after the epoch. */
#define T0 (INT64_C(20513) * 86400000 + 8 * 3600000)

static int64_t parse(const char *s, unsigned flags)
{
	int64_t ms = -42;

	assert_int_equal(iso8601_parse(s, flags, &ms), 0);
	return ms;
}

static void refused(const char *s, unsigned flags)
{
	int64_t ms = -42;

	assert_int_equal(iso8601_parse(s, flags, &ms), -EINVAL);
	/* Nothing is written on error. */
	assert_int_equal(ms, -42);
}

static void test_zones(void **state)
{
	(void)state;
	assert_int_equal(parse("2026-03-01T08:00:00Z", 0), T0);
	assert_int_equal(parse("2026-03-01t08:00:00z", 0), T0);
	assert_int_equal(parse("2026-03-01 08:00:00Z", 0), T0);
	/* East of UTC is earlier in UTC. */
	assert_int_equal(parse("2026-03-01T09:00:00+01:00", 0), T0);
	assert_int_equal(parse("2026-03-01T09:30:00+0130", 0), T0);
	assert_int_equal(parse("2026-03-01T10:00:00+02", 0), T0);
	assert_int_equal(parse("2026-03-01T03:00:00-05:00", 0), T0);
	/* An offset crosses midnight and the month. */
	assert_int_equal(parse("2026-02-28T23:00:00-09:00", 0), T0);
	/* Without a zone: refused, unless it is taken as UTC. */
	refused("2026-03-01T08:00:00", 0);
	assert_int_equal(parse("2026-03-01T08:00:00", ISO8601_UTC_DEFAULT), T0);
	/* Offsets that do not exist. */
	refused("2026-03-01T08:00:00+24:00", 0);
	refused("2026-03-01T08:00:00+01:60", 0);
	refused("2026-03-01T08:00:00+1", 0);
	refused("2026-03-01T08:00:00+01:", 0);
	refused("2026-03-01T08:00:00+01:0", 0);
}

static void test_fractions(void **state)
{
	(void)state;
	assert_int_equal(parse("2026-03-01T08:00:00.5Z", 0), T0 + 500);
	assert_int_equal(parse("2026-03-01T08:00:00.25Z", 0), T0 + 250);
	assert_int_equal(parse("2026-03-01T08:00:00.123Z", 0), T0 + 123);
	/* Azure writes seven digits: milliseconds are kept, not rounded. */
	assert_int_equal(parse("2026-03-01T08:00:00.1239999+00:00", 0), T0 + 123);
	assert_int_equal(parse("2026-03-01T09:00:00.000000001+01:00", 0), T0);
	refused("2026-03-01T08:00:00.Z", 0);
	refused("2026-03-01T08:00:00,5Z", 0);
}

static void test_bad_input(void **state)
{
	int64_t ms = -42;

	(void)state;
	assert_int_equal(iso8601_parse(NULL, 0, &ms), -EINVAL);
	refused("", 0);
	refused("2026", 0);
	refused("2026-03-01", 0);
	refused("2026-03-01T", 0);
	refused("2026-03-01T08:00Z", 0);
	refused("2026-3-01T08:00:00Z", 0);
	refused("2026-03-01T8:00:00Z", 0);
	refused("2026/03/01T08:00:00Z", 0);
	refused("2026-03-01T08:00:00Zjunk", 0);
	refused("2026-03-01T08:00:00Z ", 0);
	refused(" 2026-03-01T08:00:00Z", 0);
	refused("+2026-03-01T08:00:00Z", 0);
	refused("2026-03-01T08:00:00\n", 0);
	/* Dates and times that do not exist. */
	refused("2026-00-01T08:00:00Z", 0);
	refused("2026-13-01T08:00:00Z", 0);
	refused("2026-02-29T08:00:00Z", 0);
	refused("2026-04-31T08:00:00Z", 0);
	refused("2100-02-29T00:00:00Z", 0);
	refused("2026-03-00T08:00:00Z", 0);
	refused("2026-03-01T24:00:00Z", 0);
	refused("2026-03-01T08:60:00Z", 0);
	refused("2026-03-01T08:00:61Z", 0);
	/* A leap year's February 29th exists; so does a leap second. */
	assert_int_equal(parse("2028-02-29T00:00:00Z", 0), INT64_C(21243) * 86400000);
	assert_int_equal(parse("2000-02-29T00:00:00Z", 0), INT64_C(11016) * 86400000);
	assert_int_equal(parse("2026-03-01T07:59:60Z", 0), T0);
}

/* A time inside a larger text: the parser stops at its end, never reads
 * past `end`, and leaves the cursor alone on error. */
static void test_prefix(void **state)
{
	const char text[] = "2026-03-01 08:00:00.250,17\n";
	const char *p = text;
	int64_t ms;

	(void)state;
	assert_int_equal(iso8601_parse_prefix(&p, text + sizeof(text) - 1, ISO8601_UTC_DEFAULT, &ms), 0);
	assert_int_equal(ms, T0 + 250);
	assert_int_equal(*p, ',');
	/* Cut short by `end`, in the middle of the seconds. */
	p = text;
	assert_int_equal(iso8601_parse_prefix(&p, text + 18, ISO8601_UTC_DEFAULT, &ms), -EINVAL);
	assert_ptr_equal(p, text);
	/* The end of the buffer right after the fraction's dot. */
	p = text;
	assert_int_equal(iso8601_parse_prefix(&p, text + 20, ISO8601_UTC_DEFAULT, &ms), -EINVAL);
	assert_ptr_equal(p, text);
}

static void test_short_forms(void **state)
{
	struct iso8601_fields f;
	const char *s = "2026-11-27", *p = s;

	(void)state;
	/* Only with ISO8601_SHORT: the date alone, and a time without seconds. */
	refused("2026-11-27T08:00", ISO8601_UTC_DEFAULT);
	assert_int_equal(parse("2026-03-01T08:00Z", ISO8601_SHORT), T0);
	assert_int_equal(parse("2026-03-01", ISO8601_SHORT | ISO8601_UTC_DEFAULT), T0 - 8 * 3600000);
	assert_int_equal(iso8601_parse_fields(&p, s + strlen(s), ISO8601_SHORT, &f), 0);
	assert_int_equal(f.year, 2026);
	assert_int_equal(f.month, 11);
	assert_int_equal(f.day, 27);
	assert_int_equal(f.hour, 0);
	assert_false(f.has_zone);
	s = "2026-11-27T08:30-02:30";
	p = s;
	assert_int_equal(iso8601_parse_fields(&p, s + strlen(s), ISO8601_SHORT, &f), 0);
	assert_int_equal(f.hour, 8);
	assert_int_equal(f.minute, 30);
	assert_true(f.has_zone);
	assert_int_equal(f.offset_ms, -(2 * 60 + 30) * 60000);
}

static void test_format(void **state)
{
	char buf[32];

	(void)state;
	assert_int_equal(iso8601_format(T0 + 250, ISO8601_SECONDS, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "2026-03-01T08:00:00Z");
	assert_int_equal(iso8601_format(T0 + 250, ISO8601_MILLIS, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "2026-03-01T08:00:00.250Z");
	assert_int_equal(iso8601_format(T0, ISO8601_MILLIS, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "2026-03-01T08:00:00.000Z");
	assert_int_equal(iso8601_format(T0 + 7, ISO8601_MILLIS_IF_ANY, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "2026-03-01T08:00:00.007Z");
	assert_int_equal(iso8601_format(T0, ISO8601_MILLIS_IF_ANY, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "2026-03-01T08:00:00Z");
	assert_int_equal(iso8601_format(0, ISO8601_SECONDS, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "1970-01-01T00:00:00Z");
	/* Before the epoch the second is floored, not truncated toward 0. */
	assert_int_equal(iso8601_format(-1, ISO8601_MILLIS, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "1969-12-31T23:59:59.999Z");
	assert_int_equal(iso8601_format(INT64_C(253402300799999), ISO8601_MILLIS, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "9999-12-31T23:59:59.999Z");
	/* What four digits of year cannot show, and a buffer too small. */
	assert_int_equal(iso8601_format(INT64_C(253402300800000), ISO8601_SECONDS, buf, sizeof(buf)), -ERANGE);
	assert_string_equal(buf, "");
	assert_int_equal(iso8601_format(INT64_MAX, ISO8601_SECONDS, buf, sizeof(buf)), -ERANGE);
	assert_int_equal(iso8601_format(INT64_MIN, ISO8601_SECONDS, buf, sizeof(buf)), -ERANGE);
	assert_int_equal(iso8601_format(T0, ISO8601_SECONDS, buf, 20), -ERANGE);
	assert_string_equal(buf, "");
	assert_int_equal(iso8601_format(T0, ISO8601_SECONDS, buf, 21), 0);
}

/* What is written reads back as the same time, across the calendar. */
static void test_round_trip(void **state)
{
	char buf[32];

	(void)state;
	for (int64_t ms = -INT64_C(62135596800000); ms < INT64_C(253402300799999); ms += INT64_C(86399999) * 37) {
		int64_t back;

		assert_int_equal(iso8601_format(ms, ISO8601_MILLIS, buf, sizeof(buf)), 0);
		assert_int_equal(iso8601_parse(buf, 0, &back), 0);
		assert_int_equal(back, ms);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_zones),     cmocka_unit_test(test_fractions), cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_prefix),    cmocka_unit_test(test_short_forms), cmocka_unit_test(test_format),
		cmocka_unit_test(test_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
