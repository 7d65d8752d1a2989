/* Unit tests of the generic half of the sources (source.c, registry.c):
 * FILE:LINE errors for options and types, the registry others extend, and
 * the promise of exactly one asynchronous completion per poll. */
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

#include "sources/source.h"
#include "sources/resolve.h"

/* A source type of the test's own: it reads its "value" option and
 * completes on the next loop iteration. */
struct fake {
	double value;
};

static const char *const fake_keys[] = { "value", "label", "flag", NULL };

static int fake_init(struct source *s, const struct signal_conf *sc, char *err, size_t errlen)
{
	struct fake *f = source_priv(s);
	char *label = NULL;
	bool flag;
	int r;

	if ((r = source_opt_num(sc, "value", -1e300, INFINITY, 1, &f->value, err, errlen)) < 0 ||
	    (r = source_opt_str(sc, "label", false, NULL, &label, err, errlen)) < 0 ||
	    (r = source_opt_bool(sc, "flag", false, &flag, err, errlen)) < 0)
		return r;
	free(label);
	return 0;
}

static int fake_poll(struct source *s)
{
	struct fake *f = source_priv(s);

	/* Special values make the replies a real source may get. */
	if (f->value == -1)
		source_complete_later(s, -EPROTO, 0, NULL);
	else if (f->value == -2)
		source_complete_later(s, 0, INFINITY, NULL);
	else if (f->value == -3)
		source_complete_later(s, 0, NAN, NULL);
	else
		source_complete_later(s, 0, f->value, NULL);
	return 0;
}

static const struct source_ops fake_ops = {
	.name = "fake",
	.options = fake_keys,
	.init = fake_init,
	.poll = fake_poll,
	.priv_size = sizeof(struct fake),
};

struct result {
	int calls;
	int64_t t_ms;
	int status;
	double value;
	char error[256];
};

static void on_done(void *userdata, int64_t t_ms, int status, double value, const char *error)
{
	struct result *r = userdata;

	r->calls++;
	r->t_ms = t_ms;
	r->status = status;
	r->value = value;
	snprintf(r->error, sizeof(r->error), "%s", error ? error : "");
}

static sd_event *event;
static struct source_env env;
static char err[512];

static int setup(void **state)
{
	static bool registered;

	if (sd_event_new(&event) < 0)
		return -1;
	env.event = event;
	env.http = NULL;
	if (!registered) {
		assert_int_equal(source_register(&fake_ops), 0);
		registered = true;
	}
	return 0;
}

static int teardown(void **state)
{
	sd_event_unref(event);
	return 0;
}

static struct config_option opt_num(const char *key, double v, const char *file, int line)
{
	return (struct config_option){ .key = (char *)key, .type = OPTION_FLOAT, .f = v, .file = file, .line = line };
}

static struct config_option opt_str(const char *key, const char *v, const char *file, int line)
{
	return (struct config_option){ .key = (char *)key, .type = OPTION_STRING, .str = (char *)v, .file = file,
				       .line = line };
}

static struct signal_conf conf(const char *type, struct config_option *opts, size_t n)
{
	return (struct signal_conf){
		.name = "queue", .source = (char *)type, .source_options = { opts, n }, .file = "a.conf", .line = 12,
	};
}

static void run_loop(void)
{
	for (int i = 0; i < 10; i++)
		sd_event_run(event, 0);
}

static void test_unknown_type(void **state)
{
	struct signal_conf sc = conf("nosuch", NULL, 0);
	struct source *s = NULL;

	assert_int_equal(source_new(&sc, &env, &s, err, sizeof(err)), -EINVAL);
	assert_null(s);
	assert_non_null(strstr(err, "a.conf:12: signal 'queue': source 'nosuch': unknown source type"));
	assert_non_null(strstr(err, "prometheus"));
	assert_non_null(strstr(err, "fake"));
	sc = conf("gce_monitoring", NULL, 0);
	assert_int_equal(source_new(&sc, &env, &s, err, sizeof(err)), -EOPNOTSUPP);
	assert_non_null(strstr(err, "not available in this build"));
}

static void test_option_errors_name_their_line(void **state)
{
	struct config_option o[] = { opt_num("value", 3, "b.conf", 7), opt_num("valeu", 3, "b.conf", 8) };
	struct signal_conf sc = conf("fake", o, 2);
	struct source *s = NULL;

	assert_int_equal(source_new(&sc, &env, &s, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "b.conf:8: signal 'queue': source 'fake': unknown option 'valeu' (did you mean 'value'?)");
	o[1] = opt_str("value", "abc", "c.conf", 3);
	sc = conf("fake", &o[1], 1);
	assert_int_equal(source_new(&sc, &env, &s, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "c.conf:3: signal 'queue': source 'fake': option 'value' must be a number, not 'abc'");
	o[0] = opt_num("flag", 1, "d.conf", 4);
	sc = conf("fake", o, 1);
	assert_int_equal(source_new(&sc, &env, &s, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "d.conf:4:"));
	assert_non_null(strstr(err, "must be true or false"));
	/* A number given as a string is accepted. */
	o[0] = opt_str("value", "2.5", "e.conf", 1);
	sc = conf("fake", o, 1);
	assert_int_equal(source_new(&sc, &env, &s, err, sizeof(err)), 0);
	source_free(s);
}

static void test_register_twice(void **state)
{
	assert_int_equal(source_register(&fake_ops), -EEXIST);
	assert_ptr_equal(source_lookup("fake"), &fake_ops);
	assert_non_null(source_lookup("http_json"));
	assert_true(source_type_reserved("gce_monitoring"));
	/* A driver's own source is the driver's, not the registry's. */
	assert_false(source_type_reserved("libvirt_cpu"));
	assert_null(source_lookup("libvirt_cpu"));
	assert_false(source_type_reserved("fake"));
}

static void test_one_async_completion(void **state)
{
	struct config_option o[] = { opt_num("value", 42, "a.conf", 13) };
	struct signal_conf sc = conf("fake", o, 1);
	struct result r = { 0 };
	struct source *s;

	assert_int_equal(source_new(&sc, &env, &s, err, sizeof(err)), 0);
	assert_string_equal(source_type_name(s), "fake");
	assert_string_equal(source_signal_name(s), "queue");
	assert_int_equal(source_timeout_ms(s), SOURCE_DEFAULT_TIMEOUT_MS);
	assert_int_equal(source_poll(s, 1234, on_done, &r), 0);
	/* Never from within source_poll(). */
	assert_int_equal(r.calls, 0);
	assert_int_equal(source_poll(s, 1235, on_done, &r), -EBUSY);
	run_loop();
	assert_int_equal(r.calls, 1);
	assert_int_equal(r.t_ms, 1234);
	assert_int_equal(r.status, 0);
	assert_true(r.value == 42);
	/* The next poll is allowed again. */
	assert_int_equal(source_poll(s, 2000, on_done, &r), 0);
	run_loop();
	assert_int_equal(r.calls, 2);
	assert_int_equal(r.t_ms, 2000);
	source_free(s);
}

static void test_non_finite_is_invalid(void **state)
{
	struct config_option o[] = { opt_num("value", -2, "a.conf", 13) };
	struct signal_conf sc = conf("fake", o, 1);
	struct result r = { 0 };
	struct source *s;

	assert_int_equal(source_new(&sc, &env, &s, err, sizeof(err)), 0);
	assert_int_equal(source_poll(s, 1, on_done, &r), 0);
	run_loop();
	assert_int_equal(r.status, -ERANGE);
	assert_string_equal(r.error, "value is infinite");
	assert_true(isnan(r.value));
	source_free(s);
	o[0] = opt_num("value", -3, "a.conf", 13);
	sc = conf("fake", o, 1);
	assert_int_equal(source_new(&sc, &env, &s, err, sizeof(err)), 0);
	assert_int_equal(source_poll(s, 1, on_done, &r), 0);
	run_loop();
	assert_int_equal(r.status, -ERANGE);
	assert_string_equal(r.error, "value is NaN");
	source_free(s);
	o[0] = opt_num("value", -1, "a.conf", 13);
	sc = conf("fake", o, 1);
	assert_int_equal(source_new(&sc, &env, &s, err, sizeof(err)), 0);
	assert_int_equal(source_poll(s, 1, on_done, &r), 0);
	run_loop();
	/* Without a reason of its own, an error gets strerror's. */
	assert_int_equal(r.status, -EPROTO);
	assert_string_equal(r.error, strerror(EPROTO));
	source_free(s);
}

static void test_free_in_flight(void **state)
{
	struct signal_conf sc = conf("fake", NULL, 0);
	struct result r = { 0 };
	struct source *s;

	assert_int_equal(source_new(&sc, &env, &s, err, sizeof(err)), 0);
	assert_int_equal(source_poll(s, 1, on_done, &r), 0);
	source_free(s);
	run_loop();
	assert_int_equal(r.calls, 0);
	source_free(NULL);
}

static void test_timeout_from_the_signal(void **state)
{
	struct signal_conf sc = conf("fake", NULL, 0);
	struct source *s;

	sc.timeout_ms = 2500;
	assert_int_equal(source_new(&sc, &env, &s, err, sizeof(err)), 0);
	assert_int_equal(source_timeout_ms(s), 2500);
	source_free(s);
}

static void on_resolved(void *userdata, int status, const char *addr, const char *error)
{
	struct result *r = userdata;

	r->calls++;
	r->status = status;
	snprintf(r->error, sizeof(r->error), "%s", status == 0 ? addr : error);
}

static void test_resolve(void **state)
{
	struct result r = { 0 };
	struct resolve *q;

	assert_true(resolve_is_numeric("127.0.0.1"));
	assert_true(resolve_is_numeric("::1"));
	assert_false(resolve_is_numeric("localhost"));
	assert_int_equal(resolve_start(event, "localhost", on_resolved, &r, &q), 0);
	assert_int_equal(r.calls, 0);
	for (int i = 0; i < 500 && !r.calls; i++)
		sd_event_run(event, 10000);
	assert_int_equal(r.calls, 1);
	assert_int_equal(r.status, 0);
	assert_true(strcmp(r.error, "127.0.0.1") == 0 || strcmp(r.error, "::1") == 0);
	/* A cancelled lookup never reports, and frees itself. */
	r.calls = 0;
	assert_int_equal(resolve_start(event, "localhost", on_resolved, &r, &q), 0);
	resolve_cancel(q);
	for (int i = 0; i < 50; i++)
		sd_event_run(event, 10000);
	assert_int_equal(r.calls, 0);
	resolve_cancel(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_unknown_type, setup, teardown),
		cmocka_unit_test_setup_teardown(test_option_errors_name_their_line, setup, teardown),
		cmocka_unit_test_setup_teardown(test_register_twice, setup, teardown),
		cmocka_unit_test_setup_teardown(test_one_async_completion, setup, teardown),
		cmocka_unit_test_setup_teardown(test_non_finite_is_invalid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_free_in_flight, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timeout_from_the_signal, setup, teardown),
		cmocka_unit_test_setup_teardown(test_resolve, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
