/* Trace readers: each format's fixture with its quirks (trailing space and
 * no newline; CRLF, no final newline and 7 fractional digits; ";\t"
 * separators, timestamp jitter, a short and a long gap, CPU above 100 %;
 * ISO 8601 with offsets, epoch seconds and milliseconds; SWF's unknown
 * fields and cancelled jobs; overlapping requests), gzip, bzip2 and xz told
 * by their first bytes, the windowed means, and what each must refuse. */
#include <bzlib.h>
#include <errno.h>
#include <lzma.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "simulation/trace.h"

#define MAX_SEGS 64

struct segs {
	struct trace_seg v[MAX_SEGS];
	size_t n;
};

/* Reads every segment; returns 0 or the reader's error. */
static int read_all(struct trace_reader *r, struct segs *s)
{
	struct trace_seg g;
	int k;

	s->n = 0;
	while ((k = trace_next(r, &g)) > 0) {
		assert_true(s->n < MAX_SEGS);
		/* Ordered, not overlapping, not empty, finite and >= 0. */
		assert_true(g.end_ms > g.start_ms);
		assert_true(s->n == 0 || g.start_ms >= s->v[s->n - 1].end_ms);
		assert_true(isfinite(g.v) && g.v >= 0);
		s->v[s->n++] = g;
	}
	/* The end (or the error) stays. */
	assert_int_equal(trace_next(r, &g), k);
	trace_close(r);
	return k;
}

static int parse(const char *buf, size_t len, enum trace_format fmt, struct segs *s)
{
	struct trace_reader *r;
	int k = trace_open_buffer(buf, len, fmt, "test", &r);

	if (k < 0)
		return k;
	return read_all(r, s);
}

static void fixture_path(const char *name, char *path, size_t size)
{
	const char *top = getenv("top_srcdir");

	snprintf(path, size, "%s/tests/data/traces/%s", top ? top : ".", name);
}

static void load_fixture(const char *name, enum trace_format fmt, struct segs *s)
{
	struct trace_reader *r;
	char path[4096];

	fixture_path(name, path, sizeof(path));
	assert_int_equal(trace_open(path, fmt, &r), 0);
	assert_int_equal(read_all(r, s), 0);
}

static void assert_seg(const struct segs *s, size_t i, int64_t a, int64_t b, double v)
{
	if (i >= s->n || s->v[i].start_ms != a || s->v[i].end_ms != b || s->v[i].v != v)
		fail_msg("segment %zu: want [%lld, %lld) %g, got %s[%lld, %lld) %g", i, (long long)a, (long long)b, v,
			 i >= s->n ? "none " : "", i < s->n ? (long long)s->v[i].start_ms : 0,
			 i < s->n ? (long long)s->v[i].end_ms : 0, i < s->n ? s->v[i].v : 0.0);
}

static void test_format_names(void **state)
{
	enum trace_format f;

	(void)state;
	assert_int_equal(trace_format_parse("azure-llm", &f), 0);
	assert_int_equal(f, TRACE_AZURE_LLM);
	assert_int_equal(trace_format_parse("swf", &f), 0);
	assert_int_equal(f, TRACE_SWF);
	assert_int_equal(trace_format_parse("requests", &f), 0);
	assert_int_equal(f, TRACE_REQUESTS);
	assert_string_equal(trace_format_name(TRACE_BITBRAINS), "bitbrains");
	assert_string_equal(trace_format_name(TRACE_SWF), "swf");
	assert_int_equal(trace_format_parse("parquet", &f), -EINVAL);
}

#define NASA0 INT64_C(804571201000)

static void test_nasa(void **state)
{
	struct segs s;

	(void)state;
	load_fixture("nasa-small.txt", TRACE_NASA, &s);
	/* 1995-07-01 00:00:01 EDT, one second a value. */
	assert_int_equal(s.n, 5);
	assert_seg(&s, 0, NASA0, NASA0 + 1000, 0);
	assert_seg(&s, 1, NASA0 + 1000, NASA0 + 2000, 1);
	assert_seg(&s, 2, NASA0 + 2000, NASA0 + 3000, 3);
	assert_seg(&s, 3, NASA0 + 3000, NASA0 + 4000, 0);
	assert_seg(&s, 4, NASA0 + 4000, NASA0 + 5000, 2);
}

static void test_nasa_refuses_junk(void **state)
{
	struct segs s;

	(void)state;
	assert_int_equal(parse("1 2 x 3", 7, TRACE_NASA, &s), -EINVAL);
	/* What came before the bad value was settled and returned. */
	assert_int_equal(s.n, 2);
	assert_int_equal(parse("1 -2", 4, TRACE_NASA, &s), -EINVAL);
	assert_int_equal(parse("  ", 2, TRACE_NASA, &s), -EINVAL);
}

static void test_nasa_outage(void **state)
{
	size_t len = 0;
	char *buf = malloc(2 * 3700 + 64);
	struct segs s;

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
	assert_int_equal(parse(buf, len, TRACE_NASA, &s), 0);
	free(buf);
	assert_int_equal(s.n, 6);
	assert_seg(&s, 1, NASA0 + 1000, NASA0 + 2000, 1);
	/* The hour of zeros is no data: the next segment starts after it. */
	assert_seg(&s, 2, NASA0 + 3602000, NASA0 + 3603000, 2);
	/* Ten seconds without a request are just quiet. */
	assert_seg(&s, 4, NASA0 + 3604000, NASA0 + 3614000, 0);
	assert_seg(&s, 5, NASA0 + 3614000, NASA0 + 3615000, 1);
}

static void test_azure(void **state)
{
	struct segs s;

	(void)state;
	load_fixture("azure-small.csv", TRACE_AZURE_LLM, &s);
	/* 18:15:46 has two arrivals, :47 none, :48 two (one at .0000001, one at .9999999). */
	assert_int_equal(s.n, 3);
	assert_seg(&s, 0, INT64_C(1700158546000), INT64_C(1700158547000), 2);
	assert_seg(&s, 1, INT64_C(1700158547000), INT64_C(1700158548000), 0);
	assert_seg(&s, 2, INT64_C(1700158548000), INT64_C(1700158549000), 2);
}

static void test_azure_refuses(void **state)
{
	static const char bad[] = "TIMESTAMP,a,b\r\n2023-11-16 18:15:46.68,1,2\r\n2023-11-16 1815:47,1,2";
	static const char back[] = "TIMESTAMP,a,b\n2023-11-16 18:15:46.68,1,2\n2023-11-16 18:15:45.1,1,2\n";
	struct segs s;

	(void)state;
	assert_int_equal(parse(bad, sizeof(bad) - 1, TRACE_AZURE_LLM, &s), -EINVAL);
	assert_int_equal(parse(back, sizeof(back) - 1, TRACE_AZURE_LLM, &s), -EINVAL);
}

/* Found by fuzzing: a timestamp too large for milliseconds in an int64_t
 * was converted anyway (undefined behaviour) instead of refused. */
static void test_bitbrains_refuses_huge_timestamp(void **state)
{
	static const char huge[] = "1372629804;2;4799.9;1000.0;20.8\n1.37264e23;2;4799.9;1200.0;25.0\n";
	static const char negative[] = "-1e30;2;4799.9;1000.0;20.8\n";
	struct segs s;

	(void)state;
	assert_int_equal(parse(huge, sizeof(huge) - 1, TRACE_BITBRAINS, &s), -EINVAL);
	assert_int_equal(parse(negative, sizeof(negative) - 1, TRACE_BITBRAINS, &s), -EINVAL);
}

#define BB0 INT64_C(1372629804000)

static void test_bitbrains(void **state)
{
	struct segs s;

	(void)state;
	load_fixture("bitbrains-small.csv", TRACE_BITBRAINS, &s);
	assert_int_equal(s.n, 6);
	assert_seg(&s, 0, BB0, BB0 + 300000, 1000);
	/* A row 301 s after the previous one: the value holds until it. */
	assert_seg(&s, 1, BB0 + 300000, BB0 + 601000, 1200);
	/* A 10-minute gap: the last value holds through it (the demand at t
	 * depends on rows up to t only). */
	assert_seg(&s, 2, BB0 + 601000, BB0 + 1200000, 1400);
	/* A 2-hour gap: held for an hour, then no data. */
	assert_seg(&s, 3, BB0 + 1200000, BB0 + 1200000 + 3600000, 1800);
	/* Usage above the provisioned capacity (112.5 %) is kept as measured. */
	assert_seg(&s, 4, BB0 + 8700000, BB0 + 8999000, 5400);
	/* The last row holds as long as the interval before it. */
	assert_seg(&s, 5, BB0 + 8999000, BB0 + 9298000, 2000);
}

#define ISO0 INT64_C(1795766400000) /* 2026-11-27T08:00:00Z */

static void test_csv_iso(void **state)
{
	struct segs s;

	(void)state;
	load_fixture("series.csv", TRACE_CSV, &s);
	assert_int_equal(s.n, 3);
	assert_seg(&s, 0, ISO0, ISO0 + 60000, 4);
	assert_seg(&s, 1, ISO0 + 60000, ISO0 + 180000, 6);
	assert_seg(&s, 2, ISO0 + 180000, ISO0 + 300000, 2);
}

static void test_csv_seconds_and_offsets(void **state)
{
	static const char secs[] = "0,1\r\n15,2.5\r\n30,3";
	static const char offs[] = "time,value\n2026-01-01T10:00:00+02:00,1\n2026-01-01T08:00:30Z,2\n";
	static const char ms[] = "1795766400000,1\n1795766400250,2\n1795766400.5,3\n";
	struct segs s;

	(void)state;
	assert_int_equal(parse(secs, sizeof(secs) - 1, TRACE_CSV, &s), 0);
	assert_int_equal(s.n, 3);
	assert_seg(&s, 1, 15000, 30000, 2.5);
	assert_seg(&s, 2, 30000, 45000, 3);
	/* 10:00+02:00 is 08:00Z, 30 s before the second row. */
	assert_int_equal(parse(offs, sizeof(offs) - 1, TRACE_CSV, &s), 0);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.v[1].start_ms - s.v[0].start_ms, 30000);
	/* Epoch milliseconds (above 1e11) and seconds mix. */
	assert_int_equal(parse(ms, sizeof(ms) - 1, TRACE_CSV, &s), 0);
	assert_int_equal(s.n, 3);
	assert_seg(&s, 0, ISO0, ISO0 + 250, 1);
	assert_seg(&s, 1, ISO0 + 250, ISO0 + 500, 2);
	assert_seg(&s, 2, ISO0 + 500, ISO0 + 750, 3);
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
	static const int64_t at[] = {0, 10000, 20000, 30000, 40000, 50500, 60500, 70250, 80000};
	struct segs s;

	(void)state;
	assert_int_equal(parse(rows, sizeof(rows) - 1, TRACE_CSV, &s), 0);
	assert_int_equal(s.n, 9);
	for (size_t i = 0; i < 9; i++) {
		assert_int_equal(s.v[i].start_ms, ISO0 + at[i]);
		assert_true(s.v[i].v == 5 + (double)i);
	}
}

/* The exact times of each form, read one row at a time. */
static void test_csv_timestamp_values(void **state)
{
	static const struct {
		const char *row;
		int64_t ms;
		double v;
	} cases[] = {
		{"2026-11-27T08:00:00,5", ISO0, 5},
		{"2026-11-27T08:00:00Z,5", ISO0, 5},
		{"2026-11-27T09:00:00+01:00,5", ISO0, 5},
		{"2026-11-27T07:00:00-0100,5", ISO0, 5},
		{"2026-11-27 08:00:00,5", ISO0, 5},
		{"2026-11-27T08:00:00.5,2.5", ISO0 + 500, 2.5},
		{"2026-11-27T08:00:00.125Z,7", ISO0 + 125, 7},
		{"2026-11-27T10:00:00.1234567+02:00,0", ISO0 + 123, 0},
		{"2026-11-27T08:00:00\t,\t3", ISO0, 3},
		{"1795766400,4", ISO0, 4},
		{"1795766400.25,4", ISO0 + 250, 4},
		{"1795766400250,4", ISO0 + 250, 4},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct segs s;

		if (parse(cases[i].row, strlen(cases[i].row), TRACE_CSV, &s) != 0)
			fail_msg("'%s' refused", cases[i].row);
		if (s.n != 1 || s.v[0].start_ms != cases[i].ms || s.v[0].v != cases[i].v)
			fail_msg("'%s' read as %lld ms, %zu segment(s), value %g", cases[i].row,
				 (long long)s.v[0].start_ms, s.n, s.n ? s.v[0].v : 0.0);
	}
}

static void test_csv_refuses(void **state)
{
	static const char back[] = "0,1\n30,2\n15,3\n";
	static const char neg[] = "0,1\n30,-2\n";
	static const char nocomma[] = "0 1\n";
	static const char empty[] = "time,value\n\n# nothing\n";
	struct segs s;

	(void)state;
	assert_int_equal(parse(back, sizeof(back) - 1, TRACE_CSV, &s), -EINVAL);
	assert_int_equal(parse(neg, sizeof(neg) - 1, TRACE_CSV, &s), -EINVAL);
	assert_int_equal(parse(nocomma, sizeof(nocomma) - 1, TRACE_CSV, &s), -EINVAL);
	assert_int_equal(parse(empty, sizeof(empty) - 1, TRACE_CSV, &s), -EINVAL);
}

#define SWF0 INT64_C(1700000000000)

static void test_swf(void **state)
{
	struct segs s;

	(void)state;
	load_fixture("small.swf", TRACE_SWF, &s);
	/* Job 1: 4 processors over [0, 100). Job 2: submitted at 10, waits
	 * 20, runs 50, allocation unknown: its 2 requested over [30, 80).
	 * Job 3 was cancelled (run 0), job 4's wait is unknown: nothing. Job
	 * 5: 6 over [100, 130); job 6: 1 over [200, 210). Times count from
	 * the header's UnixStartTime. */
	assert_int_equal(s.n, 6);
	assert_seg(&s, 0, SWF0, SWF0 + 30000, 4);
	assert_seg(&s, 1, SWF0 + 30000, SWF0 + 80000, 6);
	assert_seg(&s, 2, SWF0 + 80000, SWF0 + 100000, 4);
	assert_seg(&s, 3, SWF0 + 100000, SWF0 + 130000, 6);
	assert_seg(&s, 4, SWF0 + 130000, SWF0 + 200000, 0);
	assert_seg(&s, 5, SWF0 + 200000, SWF0 + 210000, 1);
}

static void test_swf_refuses(void **state)
{
	static const char short_row[] = "1 0 0 100 4 -1 -1 4\n";
	static const char back[] = "1 10 0 100 4 -1 -1 4 200 -1 1 1 1 1 1 1 -1 -1\n"
				   "2 5 0 100 4 -1 -1 4 200 -1 1 1 1 1 1 1 -1 -1\n";
	static const char junk[] = "1 0 0 1x0 4 -1 -1 4 200 -1 1 1 1 1 1 1 -1 -1\n";
	static const char none[] = "; only a header\n";
	struct segs s;

	(void)state;
	assert_int_equal(parse(short_row, sizeof(short_row) - 1, TRACE_SWF, &s), -EINVAL);
	assert_int_equal(parse(back, sizeof(back) - 1, TRACE_SWF, &s), -EINVAL);
	assert_int_equal(parse(junk, sizeof(junk) - 1, TRACE_SWF, &s), -EINVAL);
	assert_int_equal(parse(none, sizeof(none) - 1, TRACE_SWF, &s), -EINVAL);
}

static void test_requests(void **state)
{
	struct segs s;
	struct trace_reader *r;
	struct trace_cursor c;
	char path[4096];
	double mean;

	(void)state;
	load_fixture("requests.csv", TRACE_REQUESTS, &s);
	/* Busy over [0, 2), [0.5, 1), [1, 4), [2, 3), [2.5, 3); the last
	 * request takes no time. */
	assert_int_equal(s.n, 6);
	assert_seg(&s, 0, ISO0, ISO0 + 500, 1);
	assert_seg(&s, 1, ISO0 + 500, ISO0 + 1000, 2);
	assert_seg(&s, 2, ISO0 + 1000, ISO0 + 2000, 2);
	assert_seg(&s, 3, ISO0 + 2000, ISO0 + 2500, 2);
	assert_seg(&s, 4, ISO0 + 2500, ISO0 + 3000, 3);
	assert_seg(&s, 5, ISO0 + 3000, ISO0 + 4000, 1);
	/* The mean concurrency over the 4 s: 7 request-seconds / 4. */
	fixture_path("requests.csv", path, sizeof(path));
	assert_int_equal(trace_open(path, TRACE_REQUESTS, &r), 0);
	trace_cursor_init(&c, r);
	assert_int_equal(trace_cursor_mean(&c, ISO0, ISO0 + 4000, &mean), 0);
	assert_true(fabs(mean - 1.75) < 1e-12);
	trace_cursor_destroy(&c);
	trace_close(r);
}

static void test_requests_refuses(void **state)
{
	static const char back[] = "10,1\n9,1\n";
	static const char neg[] = "10,-1\n";
	struct segs s;

	(void)state;
	assert_int_equal(parse(back, sizeof(back) - 1, TRACE_REQUESTS, &s), -EINVAL);
	assert_int_equal(parse(neg, sizeof(neg) - 1, TRACE_REQUESTS, &s), -EINVAL);
}

/* Means over windows that move forward, across segments and gaps. */
static void test_cursor(void **state)
{
	static const double v[] = {0, 1, 3, NAN, 2};
	struct trace_reader *r;
	struct trace_cursor c;
	int64_t start;
	double mean;

	(void)state;
	assert_int_equal(trace_open_series(1000, 1000, v, 5, &r), 0);
	trace_cursor_init(&c, r);
	assert_int_equal(trace_cursor_start(&c, &start), 0);
	assert_int_equal(start, 1000);
	assert_int_equal(trace_cursor_mean(&c, 1000, 6000, &mean), 0);
	/* 6 over the 4 s that have data. */
	assert_true(fabs(mean - 1.5) < 1e-12);
	/* Half of second 1 and all of second 2: (0.5 * 1 + 3) / 1.5. */
	assert_int_equal(trace_cursor_mean(&c, 2500, 4000, &mean), 0);
	assert_true(fabs(mean - 3.5 / 1.5) < 1e-12);
	trace_cursor_drop(&c, 4000);
	assert_int_equal(trace_cursor_mean(&c, 4000, 5000, &mean), 0);
	assert_true(isnan(mean));
	assert_int_equal(trace_cursor_more(&c, 5500), 1);
	assert_int_equal(trace_cursor_more(&c, 6000), 0);
	assert_true(c.eof && c.end_ms == 6000);
	trace_cursor_destroy(&c);
	trace_close(r);
}

static size_t gzip_buf(const char *in, size_t len, unsigned char *out, size_t cap)
{
	z_stream z = {0};

	assert_int_equal(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)len;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
	deflateEnd(&z);
	return cap - z.avail_out;
}

static const char series_text[] = "time,value\n0,1\n15,2.5\n30,3\n";

static void check_series(const struct segs *s)
{
	assert_int_equal(s->n, 3);
	assert_seg(s, 0, 0, 15000, 1);
	assert_seg(s, 1, 15000, 30000, 2.5);
	assert_seg(s, 2, 30000, 45000, 3);
}

/* The same rows compressed three ways, told apart by their first bytes
 * (the name says nothing), and a gzip file of two members. */
static void test_compressed(void **state)
{
	unsigned char gz[512], bz[512], xz[512], two[1024];
	size_t gz_n, xz_n = 0, half = 15;
	unsigned bz_n = sizeof(bz);
	struct segs s;

	(void)state;
	gz_n = gzip_buf(series_text, strlen(series_text), gz, sizeof(gz));
	assert_int_equal(parse((const char *)gz, gz_n, TRACE_CSV, &s), 0);
	check_series(&s);

	assert_int_equal(BZ2_bzBuffToBuffCompress((char *)bz, &bz_n, (char *)series_text,
						  (unsigned)strlen(series_text), 9, 0, 0),
			 BZ_OK);
	assert_int_equal(parse((const char *)bz, bz_n, TRACE_CSV, &s), 0);
	check_series(&s);

	assert_int_equal(lzma_easy_buffer_encode(6, LZMA_CHECK_CRC64, NULL, (const uint8_t *)series_text,
						 strlen(series_text), xz, &xz_n, sizeof(xz)),
			 LZMA_OK);
	assert_int_equal(parse((const char *)xz, xz_n, TRACE_CSV, &s), 0);
	check_series(&s);

	/* `cat a.gz b.gz`: the rows are split between two members. */
	gz_n = gzip_buf(series_text, half, two, sizeof(two));
	gz_n += gzip_buf(series_text + half, strlen(series_text) - half, two + gz_n, sizeof(two) - gz_n);
	assert_int_equal(parse((const char *)two, gz_n, TRACE_CSV, &s), 0);
	check_series(&s);
}

static void test_compressed_refuses_corrupt(void **state)
{
	unsigned char gz[512], xz[512];
	size_t gz_n, xz_n = 0;
	unsigned bz_n;
	char bz[512];
	struct segs s;

	(void)state;
	gz_n = gzip_buf(series_text, strlen(series_text), gz, sizeof(gz));
	/* Cut short: an error, not a quietly shorter trace. */
	assert_int_equal(parse((const char *)gz, gz_n - 6, TRACE_CSV, &s), -EIO);
	/* A flipped byte in the deflate data (or its CRC). */
	gz[gz_n / 2] ^= 0x55;
	assert_int_equal(parse((const char *)gz, gz_n, TRACE_CSV, &s), -EIO);
	bz_n = sizeof(bz);
	assert_int_equal(
		BZ2_bzBuffToBuffCompress(bz, &bz_n, (char *)series_text, (unsigned)strlen(series_text), 9, 0, 0),
		BZ_OK);
	assert_int_equal(parse(bz, bz_n - 4, TRACE_CSV, &s), -EIO);
	assert_int_equal(lzma_easy_buffer_encode(6, LZMA_CHECK_CRC64, NULL, (const uint8_t *)series_text,
						 strlen(series_text), xz, &xz_n, sizeof(xz)),
			 LZMA_OK);
	assert_int_equal(parse((const char *)xz, xz_n - 3, TRACE_CSV, &s), -EIO);
	/* Garbage after the last member. */
	gz_n = gzip_buf(series_text, strlen(series_text), gz, sizeof(gz));
	memcpy(gz + gz_n, "junk", 4);
	assert_int_equal(parse((const char *)gz, gz_n + 4, TRACE_CSV, &s), -EIO);
}

static void test_long_line_refused(void **state)
{
	size_t len = TRACE_MAX_LINE + 10;
	char *buf = malloc(len);
	struct segs s;

	(void)state;
	assert_non_null(buf);
	memset(buf, '1', len);
	assert_int_equal(parse(buf, len, TRACE_CSV, &s), -E2BIG);
	assert_int_equal(parse(buf, len, TRACE_NASA, &s), -E2BIG);
	free(buf);
}

static void test_missing_file(void **state)
{
	struct trace_reader *r;

	(void)state;
	assert_int_equal(trace_open("/nonexistent/trace.txt", TRACE_NASA, &r), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format_names),
		cmocka_unit_test(test_nasa),
		cmocka_unit_test(test_nasa_refuses_junk),
		cmocka_unit_test(test_nasa_outage),
		cmocka_unit_test(test_azure),
		cmocka_unit_test(test_azure_refuses),
		cmocka_unit_test(test_bitbrains),
		cmocka_unit_test(test_bitbrains_refuses_huge_timestamp),
		cmocka_unit_test(test_csv_iso),
		cmocka_unit_test(test_csv_seconds_and_offsets),
		cmocka_unit_test(test_csv_timestamp_forms),
		cmocka_unit_test(test_csv_timestamp_values),
		cmocka_unit_test(test_csv_refuses),
		cmocka_unit_test(test_swf),
		cmocka_unit_test(test_swf_refuses),
		cmocka_unit_test(test_requests),
		cmocka_unit_test(test_requests_refuses),
		cmocka_unit_test(test_cursor),
		cmocka_unit_test(test_compressed),
		cmocka_unit_test(test_compressed_refuses_corrupt),
		cmocka_unit_test(test_long_line_refused),
		cmocka_unit_test(test_missing_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
