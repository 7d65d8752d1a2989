/* Unit tests of the pure parsing helpers of the signal sources: numbers,
 * JSON pointers, Prometheus replies, HAProxy's stats CSV, counters, and
 * replayed series. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sources/parse.h"

static char err[512];

static void test_parse_number(void **state)
{
	double v;

	assert_int_equal(parse_number(" 42 ", &v), 0);
	assert_true(v == 42);
	assert_int_equal(parse_number("-1.5e3", &v), 0);
	assert_true(v == -1500);
	assert_int_equal(parse_number("NaN", &v), 0);
	assert_true(isnan(v));
	assert_int_equal(parse_number("+Inf", &v), 0);
	assert_true(isinf(v));
	assert_int_equal(parse_number("", &v), -EINVAL);
	assert_int_equal(parse_number("12abc", &v), -EINVAL);
	assert_int_equal(parse_number("abc", &v), -EINVAL);
}

static void test_last_number(void **state)
{
	const char *out = "queue depth: 17\nready: 3 of 5\nitems 42\n";
	double v;

	assert_int_equal(parse_last_number(out, strlen(out), &v), 0);
	assert_true(v == 42);
	assert_int_equal(parse_last_number("1.5e3 items", 11, &v), 0);
	assert_true(v == 1500);
	assert_int_equal(parse_last_number("load -0.25", 10, &v), 0);
	assert_true(v == -0.25);
	/* Digits inside words are not numbers. */
	assert_int_equal(parse_last_number("7 from host web2", 16, &v), 0);
	assert_true(v == 7);
	assert_int_equal(parse_last_number("no numbers here", 15, &v), -ENODATA);
	assert_int_equal(parse_last_number("", 0, &v), -ENODATA);
	/* Only LEN bytes count. */
	assert_int_equal(parse_last_number("5 99", 2, &v), 0);
	assert_true(v == 5);
}

/* The examples of RFC 6901, section 5. */
static const char rfc_doc[] = "{\"foo\": [\"bar\", \"baz\"], \"\": 0, \"a/b\": 1, \"c%d\": 2, \"e^f\": 3, "
			      "\"g|h\": 4, \"i\\\\j\": 5, \"k\\\"l\": 6, \" \": 7, \"m~n\": 8}";

static double pointer_number(cJSON *root, const char *ptr)
{
	cJSON *item;
	double v = -1;

	assert_int_equal(json_pointer_get(root, ptr, &item, err, sizeof(err)), 0);
	assert_int_equal(json_number(item, &v, err, sizeof(err)), 0);
	return v;
}

static void test_json_pointer_rfc6901(void **state)
{
	cJSON *root, *item;

	assert_int_equal(json_parse_bounded(rfc_doc, strlen(rfc_doc), 64, &root, err, sizeof(err)), 0);
	assert_int_equal(json_pointer_get(root, "", &item, err, sizeof(err)), 0);
	assert_ptr_equal(item, root);
	assert_int_equal(json_pointer_get(root, "/foo/0", &item, err, sizeof(err)), 0);
	assert_string_equal(item->valuestring, "bar");
	assert_int_equal(json_pointer_get(root, "/foo/1", &item, err, sizeof(err)), 0);
	assert_string_equal(item->valuestring, "baz");
	assert_true(pointer_number(root, "/") == 0);
	assert_true(pointer_number(root, "/a~1b") == 1);
	assert_true(pointer_number(root, "/c%d") == 2);
	assert_true(pointer_number(root, "/e^f") == 3);
	assert_true(pointer_number(root, "/g|h") == 4);
	assert_true(pointer_number(root, "/i\\j") == 5);
	assert_true(pointer_number(root, "/k\"l") == 6);
	assert_true(pointer_number(root, "/ ") == 7);
	assert_true(pointer_number(root, "/m~0n") == 8);
	/* Absent members, bad indexes, bad escapes. */
	assert_int_equal(json_pointer_get(root, "/foo/2", &item, err, sizeof(err)), -ENOENT);
	assert_int_equal(json_pointer_get(root, "/foo/-", &item, err, sizeof(err)), -ENOENT);
	assert_int_equal(json_pointer_get(root, "/foo/01", &item, err, sizeof(err)), -ENOENT);
	assert_int_equal(json_pointer_get(root, "/nope", &item, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "nope"));
	assert_int_equal(json_pointer_get(root, "/m~2n", &item, err, sizeof(err)), -EINVAL);
	assert_int_equal(json_pointer_get(root, "foo", &item, err, sizeof(err)), -EINVAL);
	cJSON_Delete(root);
}

static void test_json_number_kinds(void **state)
{
	const char *doc = "{\"n\": 3.5, \"s\": \"12\", \"bad\": \"twelve\", \"b\": true, \"z\": null, \"o\": {}}";
	cJSON *root, *item;
	double v;

	assert_int_equal(json_parse_bounded(doc, strlen(doc), 64, &root, err, sizeof(err)), 0);
	assert_true(pointer_number(root, "/n") == 3.5);
	assert_true(pointer_number(root, "/s") == 12);
	assert_int_equal(json_pointer_get(root, "/bad", &item, err, sizeof(err)), 0);
	assert_int_equal(json_number(item, &v, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "twelve"));
	assert_int_equal(json_pointer_get(root, "/b", &item, err, sizeof(err)), 0);
	assert_int_equal(json_number(item, &v, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "boolean"));
	assert_int_equal(json_pointer_get(root, "/z", &item, err, sizeof(err)), 0);
	assert_int_equal(json_number(item, &v, err, sizeof(err)), -EINVAL);
	assert_int_equal(json_pointer_get(root, "/o", &item, err, sizeof(err)), 0);
	assert_int_equal(json_number(item, &v, err, sizeof(err)), -EINVAL);
	cJSON_Delete(root);
}

static void test_json_bounds(void **state)
{
	char deep[300];
	cJSON *root;

	memset(deep, '[', 100);
	memset(deep + 100, ']', 100);
	deep[200] = '\0';
	assert_int_equal(json_parse_bounded(deep, 200, 64, &root, err, sizeof(err)), -E2BIG);
	assert_int_equal(json_parse_bounded(deep + 40, 120, 64, &root, err, sizeof(err)), 0);
	cJSON_Delete(root);
	/* Brackets inside strings do not count. */
	assert_int_equal(json_parse_bounded("{\"a\": \"[[[[[[\\\"[[[[\"}", 21, 2, &root, err, sizeof(err)), 0);
	cJSON_Delete(root);
	assert_int_equal(json_parse_bounded("{\"a\": ", 6, 64, &root, err, sizeof(err)), -EBADMSG);
	assert_int_equal(json_parse_bounded("<html>", 6, 64, &root, err, sizeof(err)), -EBADMSG);
}

#define PROM_VEC(...) "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[" __VA_ARGS__ "]}}"
#define SERIES(job, v) "{\"metric\":{\"job\":\"" job "\"},\"value\":[1700000000.123,\"" v "\"]}"

static int prom(const char *body, enum reduce r, double *v)
{
	return prometheus_parse(body, strlen(body), r, v, err, sizeof(err));
}

static void test_prometheus(void **state)
{
	const char *three = PROM_VEC(SERIES("a", "1") "," SERIES("b", "5") "," SERIES("c", "3"));
	double v;

	assert_int_equal(prom(PROM_VEC(SERIES("a", "42.5")), REDUCE_NONE, &v), 0);
	assert_true(v == 42.5);
	assert_int_equal(prom(PROM_VEC(), REDUCE_SUM, &v), -ENODATA);
	assert_string_equal(err, "no series");
	assert_int_equal(prom(three, REDUCE_NONE, &v), -ENOTUNIQ);
	assert_non_null(strstr(err, "3 series"));
	assert_int_equal(prom(three, REDUCE_SUM, &v), 0);
	assert_true(v == 9);
	assert_int_equal(prom(three, REDUCE_AVG, &v), 0);
	assert_true(v == 3);
	assert_int_equal(prom(three, REDUCE_MAX, &v), 0);
	assert_true(v == 5);
	assert_int_equal(prom(three, REDUCE_MIN, &v), 0);
	assert_true(v == 1);
	assert_int_equal(prom(PROM_VEC(SERIES("a", "NaN")), REDUCE_NONE, &v), -ERANGE);
	assert_non_null(strstr(err, "NaN"));
	assert_int_equal(prom(PROM_VEC(SERIES("a", "+Inf")), REDUCE_NONE, &v), -ERANGE);
	assert_int_equal(prom("{\"status\":\"success\",\"data\":{\"resultType\":\"scalar\",\"result\":[1,\"7\"]}}",
			      REDUCE_NONE, &v), 0);
	assert_true(v == 7);
	assert_int_equal(prom("{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[]}}",
			      REDUCE_NONE, &v), -EBADMSG);
	assert_int_equal(prom("{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":\"parse error at char 5\"}",
			      REDUCE_NONE, &v), -EREMOTEIO);
	assert_non_null(strstr(err, "bad_data"));
	assert_non_null(strstr(err, "parse error at char 5"));
	assert_int_equal(prom("not json", REDUCE_NONE, &v), -EBADMSG);
	assert_int_equal(prom("{\"data\":{}}", REDUCE_NONE, &v), -EBADMSG);
	assert_int_equal(prom(PROM_VEC("{\"metric\":{},\"value\":[1]}"), REDUCE_NONE, &v), -EBADMSG);
}

static const char stats_csv[] =
	"# pxname,svname,qcur,qmax,scur,smax,slim,stot,status,rate,req_rate,req_tot,check_desc,\n"
	"web,FRONTEND,,,3,10,2000,150,OPEN,12,25,300,,\n"
	"app,srv1,0,0,1,4,,70,UP,6,,,\"Layer7 check passed, code 200\",\n"
	"app,srv2,2,3,2,5,,80,UP,7,,,,\n"
	"app,BACKEND,2,3,3,9,200,150,UP,13,,,,\n"
	"stats,FRONTEND,,,1,1,2000,5,OPEN,0,1,9,,\n"
	"stats,BACKEND,0,0,0,0,200,0,UP,0,,,,\n";

static int csv(const char *px, const char *sv, const char *col, double *v)
{
	return haproxy_csv_value(stats_csv, strlen(stats_csv), px, sv, col, v, err, sizeof(err));
}

static void test_haproxy_csv(void **state)
{
	double v;

	assert_int_equal(csv("web", NULL, "req_rate", &v), 0);
	assert_true(v == 25);
	/* A backend has no FRONTEND row: its BACKEND row is the default. */
	assert_int_equal(csv("app", NULL, "rate", &v), 0);
	assert_true(v == 13);
	assert_int_equal(csv("app", NULL, "qcur", &v), 0);
	assert_true(v == 2);
	/* With both rows, FRONTEND unless asked for BACKEND. */
	assert_int_equal(csv("stats", NULL, "stot", &v), 0);
	assert_true(v == 5);
	assert_int_equal(csv("stats", "BACKEND", "stot", &v), 0);
	assert_true(v == 0);
	/* A server row, after a quoted field holding a comma. */
	assert_int_equal(csv("app", "srv2", "scur", &v), 0);
	assert_true(v == 2);
	assert_int_equal(csv("app", "srv1", "stot", &v), 0);
	assert_true(v == 70);
	assert_int_equal(csv("web", NULL, "nosuch", &v), -ENOENT);
	assert_non_null(strstr(err, "nosuch"));
	assert_int_equal(csv("nosuch", NULL, "rate", &v), -ENOENT);
	assert_non_null(strstr(err, "no proxy 'nosuch'"));
	assert_int_equal(csv("app", "srv9", "rate", &v), -ENOENT);
	/* req_rate is empty on backend rows. */
	assert_int_equal(csv("app", NULL, "req_rate", &v), -ENODATA);
	assert_int_equal(csv("web", NULL, "status", &v), -EBADMSG);
	assert_int_equal(haproxy_csv_value("<html>", 6, "web", NULL, "rate", &v, err, sizeof(err)), -EBADMSG);
	assert_true(haproxy_column_cumulative("req_tot"));
	assert_true(haproxy_column_cumulative("stot"));
	assert_false(haproxy_column_cumulative("req_rate"));
	assert_false(haproxy_column_cumulative("scur"));
}

static void test_counter_rate(void **state)
{
	double v;

	assert_int_equal(counter_rate(100, 160, 2000, &v), 0);
	assert_true(v == 30);
	/* A reset: the counter restarted from zero and now reads 20. */
	assert_int_equal(counter_rate(1000, 20, 1000, &v), 0);
	assert_true(v == 20);
	assert_int_equal(counter_rate(1, 2, 0, &v), -EINVAL);
}

static void test_series(void **state)
{
	const char *text = "time,requests,cpu\n100,10,0.5\n101,20,0.6\n\n# note\n102,30,0.7\n103,40,0.8\n";
	struct series s;

	assert_int_equal(series_parse(text, strlen(text), NULL, 1, &s, err, sizeof(err)), 0);
	assert_int_equal(s.n, 4);
	assert_true(series_at(&s, 0) == 10);
	assert_true(series_at(&s, 1.5) == 20);
	assert_true(series_at(&s, 3.99) == 40);
	/* The span is 4 s (one step past the last row): then it loops. */
	assert_true(series_at(&s, 4) == 10);
	assert_true(series_at(&s, 6.2) == 30);
	series_clear(&s);
	assert_int_equal(series_parse(text, strlen(text), "cpu", 100, &s, err, sizeof(err)), 0);
	assert_true(fabs(series_at(&s, 2) - 70) < 1e-9);
	series_clear(&s);
	assert_int_equal(series_parse(text, strlen(text), "3", 1, &s, err, sizeof(err)), 0);
	assert_true(series_at(&s, 0) == 0.5);
	series_clear(&s);
	/* Headerless, semicolons and blanks. */
	assert_int_equal(series_parse("0; 5\n60; 7\n", 11, NULL, 1, &s, err, sizeof(err)), 0);
	assert_true(series_at(&s, 59) == 5);
	assert_true(series_at(&s, 61) == 7);
	series_clear(&s);
	assert_int_equal(series_parse("0 1\n1 2\n", 8, NULL, 1, &s, err, sizeof(err)), 0);
	assert_int_equal(s.n, 2);
	series_clear(&s);
	assert_int_equal(series_parse(text, strlen(text), "mem", 1, &s, err, sizeof(err)), -EINVAL);
	assert_int_equal(series_parse("t,v\n1,2\n2,x\n", 12, NULL, 1, &s, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "line 3"));
	assert_int_equal(series_parse("t,v\n5,2\n2,3\n", 12, NULL, 1, &s, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "backwards"));
	assert_int_equal(series_parse("t,v\n", 4, NULL, 1, &s, err, sizeof(err)), -ENODATA);
}

static void test_reduce_names(void **state)
{
	enum reduce r;

	assert_int_equal(parse_reduce("sum", &r), 0);
	assert_int_equal(r, REDUCE_SUM);
	assert_int_equal(parse_reduce("min", &r), 0);
	assert_int_equal(r, REDUCE_MIN);
	assert_int_equal(parse_reduce("median", &r), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_number),
		cmocka_unit_test(test_last_number),
		cmocka_unit_test(test_json_pointer_rfc6901),
		cmocka_unit_test(test_json_number_kinds),
		cmocka_unit_test(test_json_bounds),
		cmocka_unit_test(test_prometheus),
		cmocka_unit_test(test_haproxy_csv),
		cmocka_unit_test(test_counter_rate),
		cmocka_unit_test(test_series),
		cmocka_unit_test(test_reduce_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
