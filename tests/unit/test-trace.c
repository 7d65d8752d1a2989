/* Trace readers: each format's fixture with its quirks (trailing space and
 * no newline; CRLF, no final newline and 7 fractional digits; ";\t"
 * separators, timestamp jitter, a short and a long gap, CPU above 100 %;
 * ISO 8601 with offsets), and what each must refuse. */
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

#include "trace.h"

static void load_fixture(const char *name, enum trace_format fmt, struct trace *t)
{
	const char *top = getenv("top_srcdir");
	char path[4096];

	snprintf(path, sizeof(path), "%s/tests/data/traces/%s", top ? top : ".", name);
	assert_int_equal(trace_load(path, fmt, t), 0);
}

static void test_format_names(void **state)
{
	enum trace_format f;

	(void)state;
	assert_int_equal(trace_format_parse("azure-llm", &f), 0);
	assert_int_equal(f, TRACE_AZURE_LLM);
	assert_string_equal(trace_format_name(TRACE_BITBRAINS), "bitbrains");
	assert_int_equal(trace_format_parse("parquet", &f), -EINVAL);
}

static void test_nasa(void **state)
{
	struct trace t;

	(void)state;
	load_fixture("nasa-small.txt", TRACE_NASA, &t);
	assert_int_equal(t.n, 5);
	assert_int_equal(t.res_ms, 1000);
	/* 1995-07-01 00:00:01 EDT. */
	assert_int_equal(t.start_ms, INT64_C(804571201000));
	assert_true(t.v[0] == 0 && t.v[1] == 1 && t.v[2] == 3 && t.v[3] == 0 && t.v[4] == 2);
	assert_true(fabs(trace_mean(&t, t.start_ms, t.start_ms + 5000) - 1.2) < 1e-12);
	/* Half of second 1 and all of second 2: (0.5 * 1 + 3) / 1.5. */
	assert_true(fabs(trace_mean(&t, t.start_ms + 1500, t.start_ms + 3000) - 3.5 / 1.5) < 1e-12);
	assert_int_equal(trace_end_ms(&t), t.start_ms + 5000);
	trace_free(&t);
}

static void test_nasa_refuses_junk(void **state)
{
	struct trace t;

	(void)state;
	assert_int_equal(trace_parse("1 2 x 3", 7, TRACE_NASA, "junk", &t), -EINVAL);
	assert_int_equal(trace_parse("1 -2", 4, TRACE_NASA, "junk", &t), -EINVAL);
	assert_int_equal(trace_parse("  ", 2, TRACE_NASA, "empty", &t), -EINVAL);
}

static void test_nasa_outage(void **state)
{
	size_t n = 2 + 3600 + 2 + 10 + 1, len = 0;
	char *buf = malloc(2 * n + 1);
	struct trace t;

	(void)state;
	assert_non_null(buf);
	/* 2 requests, an hour of zeros (an outage), 2, ten quiet seconds, 1. */
	len += (size_t)sprintf(buf + len, "1 1 ");
	for (int i = 0; i < 3600; i++)
		len += (size_t)sprintf(buf + len, "0 ");
	len += (size_t)sprintf(buf + len, "2 2 ");
	for (int i = 0; i < 10; i++)
		len += (size_t)sprintf(buf + len, "0 ");
	len += (size_t)sprintf(buf + len, "1 ");
	assert_int_equal(trace_parse(buf, len, TRACE_NASA, "outage", &t), 0);
	free(buf);
	assert_int_equal(t.n, n);
	assert_true(t.v[1] == 1);
	assert_true(isnan(t.v[2]) && isnan(t.v[3601]));
	assert_true(t.v[3602] == 2);
	/* Ten seconds without a request are just quiet. */
	assert_true(t.v[3604] == 0 && t.v[3613] == 0);
	trace_free(&t);
}

static void test_azure(void **state)
{
	struct trace t;

	(void)state;
	load_fixture("azure-small.csv", TRACE_AZURE_LLM, &t);
	/* 18:15:46 has two arrivals, :47 none, :48 two (one at .0000001, one at .9999999). */
	assert_int_equal(t.start_ms, INT64_C(1700158546000));
	assert_int_equal(t.res_ms, 1000);
	assert_int_equal(t.n, 3);
	assert_true(t.v[0] == 2 && t.v[1] == 0 && t.v[2] == 2);
	trace_free(&t);
}

static void test_azure_refuses_bad_timestamp(void **state)
{
	static const char bad[] = "TIMESTAMP,a,b\r\n2023-11-16 18:15:46.68,1,2\r\n2023-11-16 1815:47,1,2";
	struct trace t;

	(void)state;
	assert_int_equal(trace_parse(bad, sizeof(bad) - 1, TRACE_AZURE_LLM, "bad", &t), -EINVAL);
}

/* Found by fuzzing: a timestamp too large for milliseconds in an int64_t
 * was converted anyway (undefined behaviour) instead of refused. */
static void test_bitbrains_refuses_huge_timestamp(void **state)
{
	static const char huge[] = "1372629804;2;4799.9;1000.0;20.8\n1.37264e23;2;4799.9;1200.0;25.0\n";
	static const char negative[] = "-1e30;2;4799.9;1000.0;20.8\n";
	struct trace t;

	(void)state;
	assert_int_equal(trace_parse(huge, sizeof(huge) - 1, TRACE_BITBRAINS, "huge", &t), -EINVAL);
	assert_int_equal(trace_parse(negative, sizeof(negative) - 1, TRACE_BITBRAINS, "negative", &t), -EINVAL);
}

static void test_bitbrains(void **state)
{
	struct trace t;

	(void)state;
	load_fixture("bitbrains-small.csv", TRACE_BITBRAINS, &t);
	assert_int_equal(t.start_ms, INT64_C(1372629804000));
	assert_int_equal(t.res_ms, 300000);
	assert_int_equal(t.n, 31);
	assert_true(t.v[0] == 1000 && t.v[1] == 1200);
	/* The row 301 s after the previous one still lands in slot 2. */
	assert_true(t.v[2] == 1400);
	/* A 10-minute gap is bridged linearly. */
	assert_true(fabs(t.v[3] - 1600) < 1e-9);
	assert_true(t.v[4] == 1800);
	/* A 2-hour gap is left as no data. */
	for (size_t i = 5; i < 29; i++)
		assert_true(isnan(t.v[i]));
	/* Usage above the provisioned capacity (112.5 %) is kept as measured. */
	assert_true(t.v[29] == 5400);
	assert_true(t.v[30] == 2000);
	/* A mean across the gap uses only the data. */
	assert_true(fabs(trace_mean(&t, t.start_ms + 4 * 300000, t.start_ms + 30 * 300000) - 3600) < 1e-9);
	assert_true(isnan(trace_mean(&t, t.start_ms + 6 * 300000, t.start_ms + 7 * 300000)));
	trace_free(&t);
}

static void test_csv_iso(void **state)
{
	struct trace t;

	(void)state;
	load_fixture("series.csv", TRACE_CSV, &t);
	assert_int_equal(t.start_ms, INT64_C(1795766400000));
	assert_int_equal(t.res_ms, 60000);
	assert_int_equal(t.n, 4);
	assert_true(t.v[0] == 4 && t.v[1] == 6 && t.v[3] == 2);
	assert_true(fabs(t.v[2] - 4) < 1e-9);
	trace_free(&t);
}

static void test_csv_seconds_and_offsets(void **state)
{
	static const char secs[] = "0,1\r\n15,2.5\r\n30,3";
	static const char offs[] = "time,value\n2026-01-01T10:00:00+02:00,1\n2026-01-01T08:00:30Z,2\n";
	struct trace t;

	(void)state;
	assert_int_equal(trace_parse(secs, sizeof(secs) - 1, TRACE_CSV, "secs", &t), 0);
	assert_int_equal(t.start_ms, 0);
	assert_int_equal(t.res_ms, 15000);
	assert_int_equal(t.n, 3);
	assert_true(t.v[1] == 2.5);
	trace_free(&t);
	/* 10:00+02:00 is 08:00Z, 30 s before the second row. */
	assert_int_equal(trace_parse(offs, sizeof(offs) - 1, TRACE_CSV, "offs", &t), 0);
	assert_int_equal(t.res_ms, 30000);
	assert_int_equal(t.n, 2);
	trace_free(&t);
}

/* Every documented form of the time, each followed by ",value": the comma
 * ends the time (it is not a decimal comma), with or without an offset. */
static void test_csv_timestamp_forms(void **state)
{
	static const char rows[] = "time,value\n"
				   "2026-11-27T08:00:00,5\n"
				   "2026-11-27T08:00:10Z,6\n"
				   "2026-11-27T09:00:20+01:00,7\n"
				   "2026-11-27T06:30:30-0130,8\n"
				   "2026-11-27 08:00:40,9\n"
				   "2026-11-27T08:00:50.5,10\n"
				   "2026-11-27T08:01:00.500Z , 11\n"
				   "2026-11-27T09:01:10.250+01:00,12\r\n"
				   "2026-11-27T08:01:20,13";
	static const double want[] = {5, 6, 7, 8, 9, 10, 11, 12, 13};
	static const char one[] = "2026-11-27T08:00:00,5\n";
	struct trace t;

	(void)state;
	assert_int_equal(trace_parse(rows, sizeof(rows) - 1, TRACE_CSV, "forms", &t), 0);
	/* From 2026-11-27T08:00:00Z, about 10 s apart: the shortest interval
	 * is 70.25 s - 60.5 s, and each row lands in its own slot. */
	assert_int_equal(t.start_ms, INT64_C(1795766400000));
	assert_int_equal(t.res_ms, 9750);
	assert_int_equal(t.n, 9);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		assert_true(t.v[i] == want[i]);
	trace_free(&t);
	/* One row without an offset: the value is 5, at 08:00:00 sharp. */
	assert_int_equal(trace_parse(one, sizeof(one) - 1, TRACE_CSV, "one", &t), 0);
	assert_int_equal(t.start_ms, INT64_C(1795766400000));
	assert_int_equal(t.n, 1);
	assert_true(t.v[0] == 5);
	trace_free(&t);
}

/* The exact times of each form, read one row at a time. */
static void test_csv_timestamp_values(void **state)
{
	static const struct {
		const char *row;
		int64_t ms;
		double v;
	} cases[] = {
		{"2026-11-27T08:00:00,5", INT64_C(1795766400000), 5},
		{"2026-11-27T08:00:00Z,5", INT64_C(1795766400000), 5},
		{"2026-11-27T09:00:00+01:00,5", INT64_C(1795766400000), 5},
		{"2026-11-27T07:00:00-0100,5", INT64_C(1795766400000), 5},
		{"2026-11-27 08:00:00,5", INT64_C(1795766400000), 5},
		{"2026-11-27T08:00:00.5,2.5", INT64_C(1795766400500), 2.5},
		{"2026-11-27T08:00:00.125Z,7", INT64_C(1795766400125), 7},
		{"2026-11-27T10:00:00.1234567+02:00,0", INT64_C(1795766400123), 0},
		{"2026-11-27T08:00:00\t,\t3", INT64_C(1795766400000), 3},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct trace t;

		if (trace_parse(cases[i].row, strlen(cases[i].row), TRACE_CSV, cases[i].row, &t) != 0)
			fail_msg("'%s' refused", cases[i].row);
		if (t.start_ms != cases[i].ms || t.n != 1 || t.v[0] != cases[i].v)
			fail_msg("'%s' read as %lld ms, %zu point(s), value %g", cases[i].row, (long long)t.start_ms,
				 t.n, t.n ? t.v[0] : 0.0);
		trace_free(&t);
	}
}

static void test_csv_refuses(void **state)
{
	static const char back[] = "0,1\n30,2\n15,3\n";
	static const char neg[] = "0,1\n30,-2\n";
	static const char nocomma[] = "0 1\n";
	struct trace t;

	(void)state;
	assert_int_equal(trace_parse(back, sizeof(back) - 1, TRACE_CSV, "back", &t), -EINVAL);
	assert_int_equal(trace_parse(neg, sizeof(neg) - 1, TRACE_CSV, "neg", &t), -EINVAL);
	assert_int_equal(trace_parse(nocomma, sizeof(nocomma) - 1, TRACE_CSV, "nocomma", &t), -EINVAL);
}

static void test_missing_file(void **state)
{
	struct trace t;

	(void)state;
	assert_int_equal(trace_load("/nonexistent/trace.txt", TRACE_NASA, &t), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format_names),
		cmocka_unit_test(test_nasa),
		cmocka_unit_test(test_nasa_refuses_junk),
		cmocka_unit_test(test_nasa_outage),
		cmocka_unit_test(test_azure),
		cmocka_unit_test(test_azure_refuses_bad_timestamp),
		cmocka_unit_test(test_bitbrains),
		cmocka_unit_test(test_bitbrains_refuses_huge_timestamp),
		cmocka_unit_test(test_csv_iso),
		cmocka_unit_test(test_csv_seconds_and_offsets),
		cmocka_unit_test(test_csv_timestamp_forms),
		cmocka_unit_test(test_csv_timestamp_values),
		cmocka_unit_test(test_csv_refuses),
		cmocka_unit_test(test_missing_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
