/* Unit tests of the driver loader (src/agent/driver.c): every way a module can be
 * wrong gives an error that names the file and says what to do, and the
 * options of a group reach the ABI's plain form intact. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/driver.h"
#include "log/log.h"

static char tmpdir[256];
static char modules[1024];
static char helpers[1024];

static int setup(void **state)
{
	const char *b = getenv("top_builddir");

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test-driver-loader.XXXXXX");
	assert_non_null(mkdtemp(tmpdir));
	snprintf(modules, sizeof(modules), "%s/tests/helpers/refused/.libs", b ? b : ".");
	snprintf(helpers, sizeof(helpers), "%s/tests/helpers/.libs", b ? b : ".");
	return 0;
}

static int teardown(void **state)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/garbage.so", tmpdir);
	unlink(path);
	rmdir(tmpdir);
	return 0;
}

static void test_directory_precedence(void **state)
{
	setenv("AUTOSCALED_DRIVER_DIR", "/from/env", 1);
	assert_string_equal(driver_directory("/from/config"), "/from/env");
	setenv("AUTOSCALED_DRIVER_DIR", "", 1);
	assert_string_equal(driver_directory("/from/config"), "/from/config");
	unsetenv("AUTOSCALED_DRIVER_DIR");
	assert_string_equal(driver_directory(NULL), DRIVERDIR);
}

static void test_missing_file(void **state)
{
	const struct driver *d = NULL;
	char err[1024], want[600];

	setenv("AUTOSCALED_DRIVER_DIR", tmpdir, 1);
	assert_int_equal(driver_load("nothere", NULL, &d, err, sizeof(err)), -ENOENT);
	assert_null(d);
	snprintf(want, sizeof(want), "no driver 'nothere' in '%s' (looked for '%s/nothere.so'", tmpdir, tmpdir);
	assert_non_null(strstr(err, want));
	assert_non_null(strstr(err, "--list-drivers"));
}

static void test_bad_name(void **state)
{
	const struct driver *d = NULL;
	char err[1024];

	assert_int_equal(driver_load("../../etc/evil", "/x", &d, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "not a valid driver name"));
	assert_int_equal(driver_load("", "/x", &d, err, sizeof(err)), -EINVAL);
}

static void test_garbage_file(void **state)
{
	const struct driver *d = NULL;
	char err[1024], path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/garbage.so", tmpdir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("this is not an ELF object\n", f);
	fclose(f);
	assert_int_equal(driver_load("garbage", tmpdir, &d, err, sizeof(err)), -ELIBBAD);
	unsetenv("AUTOSCALED_DRIVER_DIR");
	assert_int_equal(driver_load("garbage", tmpdir, &d, err, sizeof(err)), -ELIBBAD);
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, "ldd "));
	/* dlerror()'s own words are passed on. */
	assert_non_null(strstr(err, "cannot load"));
}

static void test_missing_symbol(void **state)
{
	const struct driver *d = NULL;
	char err[1024];

	assert_int_equal(driver_load("no-symbol", modules, &d, err, sizeof(err)), -ENOEXEC);
	assert_null(d);
	assert_non_null(strstr(err, "no-symbol.so"));
	assert_non_null(strstr(err, "does not export autoscaled_driver_info()"));
}

static void test_old_abi(void **state)
{
	const struct driver *d = NULL;
	char err[1024];

	assert_int_equal(driver_load("old-abi", modules, &d, err, sizeof(err)), -EPROTO);
	assert_null(d);
	assert_non_null(strstr(err, "old-abi.so"));
	/* A module built against ABI 1, which had reload and read_cpu. */
	assert_non_null(strstr(err, "built for driver ABI 1 but this autoscaled speaks ABI 2"));
	assert_non_null(strstr(err, "rebuild the driver"));
}

static void test_bad_source(void **state)
{
	const struct driver *d = NULL;
	char err[1024];

	assert_int_equal(driver_load("bad_source", modules, &d, err, sizeof(err)), -ENOEXEC);
	assert_null(d);
	assert_non_null(strstr(err, "bad_source.so"));
	assert_non_null(strstr(err, "declares a source named 'prometheus'"));
	assert_non_null(strstr(err, "'bad_source_WHAT'"));
}

static void test_short_struct(void **state)
{
	const struct driver *d = NULL;
	char err[1024];

	assert_int_equal(driver_load("short-struct", modules, &d, err, sizeof(err)), -EPROTO);
	assert_non_null(strstr(err, "short-struct.so"));
	assert_non_null(strstr(err, "descriptor of"));
}

struct listed {
	int n, broken;
	char files[8][64];
};

static int collect(void *ctx, const char *file, const struct driver *drv, const char *error)
{
	struct listed *l = ctx;

	if (l->n < 8)
		snprintf(l->files[l->n], sizeof(l->files[0]), "%s", file);
	l->n++;
	if (!drv) {
		assert_non_null(error);
		l->broken++;
	}
	return 0;
}

static void test_list(void **state)
{
	struct listed l = { 0 };
	char *buf = NULL;
	size_t len = 0;
	FILE *out;

	assert_int_equal(driver_list(modules, collect, &l), 0);
	/* The four refused modules, in name order, each with its reason. */
	assert_int_equal(l.n, 4);
	assert_int_equal(l.broken, 4);
	assert_string_equal(l.files[0], "bad_source.so");
	assert_string_equal(l.files[1], "no-symbol.so");
	assert_string_equal(l.files[2], "old-abi.so");
	assert_string_equal(l.files[3], "short-struct.so");

	assert_int_equal(driver_list("/nonexistent/drivers", collect, &l), -ENOENT);

	out = open_memstream(&buf, &len);
	assert_non_null(out);
	setenv("AUTOSCALED_DRIVER_DIR", modules, 1);
	assert_int_equal(driver_print_list(NULL, out), 0);
	unsetenv("AUTOSCALED_DRIVER_DIR");
	fclose(out);
	assert_non_null(strstr(buf, "Drivers in "));
	assert_non_null(strstr(buf, "old-abi.so"));
	assert_non_null(strstr(buf, "(broken: driver 'old-abi'"));
	free(buf);

	/* A driver's sources are listed with it. */
	buf = NULL;
	out = open_memstream(&buf, &len);
	assert_non_null(out);
	assert_int_equal(driver_print_list(helpers, out), 0);
	fclose(out);
	assert_non_null(strstr(buf, "  filepool     test driver: a pool kept in a text file; feeds the source filepool_load\n"
				    "      pool = string  the pool file\n      calls = string  the call log\n"));
	assert_non_null(strstr(buf, "\n      load = string  members' values for filepool_load\n"));
	free(buf);
}

static void test_options(void **state)
{
	char *list[] = { "test:///a", "test:///b" };
	struct config_option in[] = {
		{ .key = "template", .type = OPTION_STRING, .str = "web-template", .file = "a.conf", .line = 3 },
		{ .key = "shutdown_timeout", .type = OPTION_INT, .i = 30 },
		{ .key = "ratio", .type = OPTION_FLOAT, .f = 2.5 },
		{ .key = "graceful", .type = OPTION_BOOL, .i = 1 },
		{ .key = "uri", .type = OPTION_LIST, .list = list, .n_list = 2 },
	};
	struct options opts = { .v = in, .n = 5 };
	struct driver_options out = { 0 };

	assert_int_equal(driver_options_from_config(&opts, &out), 0);
	assert_int_equal(out.n, 5);
	assert_string_equal(out.v[0].key, "template");
	assert_string_equal(out.v[0].value, "web-template");
	assert_string_equal(out.v[0].where, "a.conf:3");
	assert_string_equal(out.v[1].value, "30");
	assert_null(out.v[1].where);
	assert_string_equal(out.v[2].value, "2.5");
	assert_string_equal(out.v[3].value, "true");
	assert_null(out.v[4].value);
	assert_int_equal(out.v[4].n_list, 2);
	assert_string_equal(out.v[4].list[1], "test:///b");
	/* The copy owns its strings. */
	assert_ptr_not_equal(out.v[0].value, in[0].str);
	driver_options_free(&out);
	driver_options_free(&out);

	assert_int_equal(driver_options_from_config(NULL, &out), 0);
	assert_int_equal(out.n, 0);
}

static void test_host(void **state)
{
	struct autoscaled_host h;

	driver_host_init(&h, "web", NULL);
	assert_int_equal(h.abi_version, AUTOSCALED_DRIVER_ABI_VERSION);
	assert_int_equal(h.struct_size, sizeof(h));
	assert_string_equal(h.group, "web");
	assert_null(h.userdata);
	assert_true(AUTOSCALED_HOST_HAS(&h, metric));
	/* Without a group runtime a published metric goes nowhere, harmlessly. */
	h.metric(&h, AUTOSCALED_METRIC_RETRIES, NULL, 1);
	/* A host built before the member existed ends before it. */
	h.struct_size = offsetof(struct autoscaled_host, metric);
	assert_false(AUTOSCALED_HOST_HAS(&h, metric));
	h.struct_size = sizeof(h);
	/* The members appended after `metric`: the core's duration grammar
	 * and near misses, hidden from a driver by an older host's size, where
	 * the driver falls back to plain seconds and no suggestion. */
	{
		static const char *const known[] = { "template", "uri", NULL };
		int64_t ms = 0;

		assert_true(AUTOSCALED_HOST_HAS(&h, parse_duration));
		assert_true(AUTOSCALED_HOST_HAS(&h, near_miss));
		assert_int_equal(autoscaled_parse_duration(&h, "1h30m", &ms), 0);
		assert_int_equal(ms, 5400000);
		assert_int_equal(autoscaled_parse_duration(&h, "90min", &ms), 0);
		assert_int_equal(ms, 5400000);
		assert_int_equal(autoscaled_parse_duration(&h, "90 min", &ms), -EINVAL);
		assert_string_equal(autoscaled_near_miss(&h, "templat", known), "template");
		assert_null(autoscaled_near_miss(&h, "colour", known));
		assert_null(autoscaled_option_where(&h, NULL));
		h.struct_size = offsetof(struct autoscaled_host, parse_duration);
		assert_false(AUTOSCALED_HOST_HAS(&h, parse_duration));
		assert_false(AUTOSCALED_HOST_HAS(&h, near_miss));
		assert_int_equal(autoscaled_parse_duration(&h, "2.5", &ms), 0);
		assert_int_equal(ms, 2500);
		assert_int_equal(autoscaled_parse_duration(&h, "90min", &ms), -EINVAL);
		assert_null(autoscaled_near_miss(&h, "templat", known));
		h.struct_size = sizeof(h);
	}
	assert_non_null(h.log);
	h.log(&h, AUTOSCALED_LOG_INFO, "test: host log reaches %s", "stderr");
}

/* Every host logs a driver's levels with the same priorities; a level from
 * a newer ABI that this host does not know is an error, never dropped. */
static void test_log_priority(void **state)
{
	(void)state;
	assert_int_equal(log_driver_priority(AUTOSCALED_LOG_DEBUG), LOG_DEBUG);
	assert_int_equal(log_driver_priority(AUTOSCALED_LOG_INFO), LOG_INFO);
	assert_int_equal(log_driver_priority(AUTOSCALED_LOG_NOTICE), LOG_NOTICE);
	assert_int_equal(log_driver_priority(AUTOSCALED_LOG_WARNING), LOG_WARNING);
	assert_int_equal(log_driver_priority(AUTOSCALED_LOG_ERROR), LOG_ERR);
	assert_int_equal(log_driver_priority((enum autoscaled_log_level)7), LOG_ERR);
	assert_int_equal(log_driver_priority((enum autoscaled_log_level)-1), LOG_ERR);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_directory_precedence),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_bad_name),
		cmocka_unit_test(test_garbage_file),
		cmocka_unit_test(test_missing_symbol),
		cmocka_unit_test(test_old_abi),
		cmocka_unit_test(test_short_struct),
		cmocka_unit_test(test_bad_source),
		cmocka_unit_test(test_list),
		cmocka_unit_test(test_options),
		cmocka_unit_test(test_host),
		cmocka_unit_test(test_log_priority),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
