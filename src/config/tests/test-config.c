/* Unit tests of the configuration: every class of error with its exact
 * message and FILE:LINE, wildcard includes, a valid configuration read back
 * field by field, defaults, durations, and the shipped example. Each test
 * writes its files to a temporary directory of its own. */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "config/config.h"
#include "agent/preflight.h"
#include "agent/driver.h"
#include "config/schedule-tz.h"
#include "engine/schedule.h"

static char dir[PATH_MAX];

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static int setup(void **state)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(dir, sizeof(dir), "%s/test-config.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	return nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Writes DIR/NAME, creating one level of subdirectory when NAME has one. */
static void write_file(const char *name, const char *text)
{
	char path[PATH_MAX + 64];
	const char *slash = strchr(name, '/');
	FILE *f;

	if (slash) {
		snprintf(path, sizeof(path), "%s/%.*s", dir, (int)(slash - name), name);
		mkdir(path, 0700);
	}
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static const char *main_path(void)
{
	static char path[PATH_MAX + 16];

	snprintf(path, sizeof(path), "%s/main.conf", dir);
	return path;
}

/* Loads main.conf (after writing `text` to it, when given) and checks that
 * it fails with exactly the `expected` errors, each "FILE:LINE: message"
 * with FILE relative to the test directory, in that order. */
static void expect_errors(const char *text, ...)
{
	struct config *c = NULL;
	struct config_errors e;
	const char *want;
	va_list ap;
	size_t n = 0;

	if (text)
		write_file("main.conf", text);
	assert_int_equal(config_load(main_path(), &c, &e), -EINVAL);
	assert_null(c);
	va_start(ap, text);
	while ((want = va_arg(ap, const char *))) {
		char full[2 * PATH_MAX + 512];
		size_t len = (size_t)snprintf(full, sizeof(full), "%s/", dir);

		/* "DIR/" in an expected message stands for the test directory. */
		for (const char *p = want; *p && len < sizeof(full) - PATH_MAX - 1; p++) {
			if (strncmp(p, "DIR/", 4) == 0) {
				len += (size_t)snprintf(full + len, sizeof(full) - len, "%s/", dir);
				p += 3;
			} else {
				full[len++] = *p;
				full[len] = '\0';
			}
		}
		if (n >= e.n)
			fail_msg("missing error: %s", full);
		if (strcmp(e.v[n], full) != 0)
			fail_msg("error %zu:\n  got:  %s\n  want: %s", n, e.v[n], full);
		n++;
	}
	va_end(ap);
	if (n != e.n)
		fail_msg("%zu unexpected errors, first: %s", e.n - n, e.v[n]);
	config_errors_clear(&e);
	assert_int_equal(e.n, 0);
}

static struct config *load_ok(const char *text)
{
	struct config *c = NULL;
	struct config_errors e;
	int r;

	if (text)
		write_file("main.conf", text);
	r = config_load(main_path(), &c, &e);
	if (r != 0)
		fail_msg("load failed (%d): %s", r, e.n ? e.v[0] : "no message");
	assert_int_equal(e.n, 0);
	assert_non_null(c);
	return c;
}

/* Lines 1-5 of a valid group; what follows starts on line 6. */
#define GROUP_HEAD "groups = ( {\n  name = \"web\";\n  driver = \"libvirt\";\n  min = 1;\n  max = 4;\n"
#define GROUP_TAIL "} );\n"
#define CPU "signals = ( { name = \"cpu\"; source = \"libvirt_cpu\"; type = \"utilization\"; target = 60.0; } );\n"

static void test_syntax_errors(void **state)
{
	expect_errors("groups = (\n  { name = \"a\"; },\n  { name = \"b\" }\n  { name = \"c\"; }\n);\n",
		      "main.conf:4: syntax error", NULL);
	expect_errors("agent = { interval = 15; };\nagent = { };\n", "main.conf:2: duplicate setting name", NULL);
}

static void test_unknown_keys(void **state)
{
	expect_errors(GROUP_HEAD "  behavior = { scale_in = {\n    stabilisation = \"300s\"; }; };\n" GROUP_TAIL,
		      "main.conf:7: unknown key 'stabilisation' (did you mean 'stabilization'?)", NULL);
	expect_errors("agent = {\n  intervall = 15;\n  colour = \"red\";\n};\n",
		      "main.conf:2: unknown key 'intervall' (did you mean 'interval'?)",
		      "main.conf:3: unknown key 'colour'", NULL);
	expect_errors("group = ( );\n", "main.conf:1: unknown key 'group' (did you mean 'groups'?)", NULL);
	expect_errors(GROUP_HEAD "  signals = ( { name = \"cpu\"; source = \"libvirt_cpu\"; type = \"utilization\";\n"
				 "    target = 60.0; agregation = \"max\"; } );\n" GROUP_TAIL,
		      "main.conf:7: unknown key 'agregation' (did you mean 'aggregation'?)", NULL);
}

static void test_wrong_types(void **state)
{
	expect_errors("agent = {\n  interval = true;\n  dry_run = 1;\n  state_directory = 5;\n};\n",
		      "main.conf:2: 'interval' must be a duration (seconds, or a string such as \"90s\" or \"5m\")",
		      "main.conf:3: 'dry_run' must be a boolean (true or false)",
		      "main.conf:4: 'state_directory' must be a string", NULL);
	expect_errors("groups = ( {\n  name = \"web\";\n  driver = \"libvirt\";\n  min = \"two\";\n  max = 4.5;\n"
		      "  interval = \"5x\";\n  signals = { };\n} );\n",
		      "main.conf:4: 'min' must be an integer", "main.conf:5: 'max' must be an integer",
		      "main.conf:6: invalid duration '5x' for 'interval' (use seconds or a string such as \"90s\", \"1h30m\", \"90min\", \"1.5h\" or \"500ms\")",
		      "main.conf:7: 'signals' must be a list ( ... ) of groups", NULL);
	expect_errors(GROUP_HEAD "  signals = ( { name = \"cpu\"; source = \"libvirt_cpu\"; type = \"utilization\";\n"
				 "    target = \"high\"; aggregation = \"mean\"; } );\n" GROUP_TAIL,
		      "main.conf:7: 'target' must be a number",
		      "main.conf:7: 'aggregation' must be one of avg, min, max, last, p95, not 'mean'", NULL);
	expect_errors("groups = ( \"web\" );\nagent = [ 1 ];\n", "main.conf:1: each entry of 'groups' must be a group { ... }",
		      "main.conf:2: 'agent' must be a group { ... }", NULL);
	/* Driver options are free-form but flat. */
	expect_errors(GROUP_HEAD "  driver_options = {\n    uri = \"test:///default\";\n    hosts = [ \"a\", \"b\" ];\n"
				 "    nested = { a = 1; };\n    mixed = ( \"a\", 1 );\n  };\n" GROUP_TAIL,
		      "main.conf:9: option 'nested' must be a string, number, boolean, or list of strings or of numbers",
		      "main.conf:10: option 'mixed' must be a string, number, boolean, or list of strings or of numbers",
		      NULL);
	/* A list of numbers (libvirt's weights) reaches the driver written
	 * out; numbers and strings do not mix. */
	{
		struct config *c = load_ok(GROUP_HEAD "  driver_options = { weights = [ 2, 1 ]; ratios = [ 0.5, 1.5 ]; };\n"
						  GROUP_TAIL);
		const struct config_option *o = options_get(&c->groups[0].driver_options, "weights");

		assert_non_null(o);
		assert_int_equal(o->type, OPTION_LIST);
		assert_int_equal(o->n_list, 2);
		assert_string_equal(o->list[0], "2");
		assert_string_equal(o->list[1], "1");
		o = options_get(&c->groups[0].driver_options, "ratios");
		assert_string_equal(o->list[1], "1.5");
		config_free(c);
	}
	expect_errors(GROUP_HEAD "  driver_options = {\n    uri = \"test:///default\";\n    w = ( 1, \"a\" );\n  };\n" GROUP_TAIL,
		      "main.conf:8: option 'w' must be a string, number, boolean, or list of strings or of numbers", NULL);
}

/* The forecast block and the lazy scale-in's keys: every mistake at its
 * FILE:LINE. */
static void test_forecast_errors(void **state)
{
	(void)state;
	expect_errors(GROUP_HEAD "  signals = ( { name = \"cpu\"; source = \"libvirt_cpu\"; type = \"utilization\";\n"
				 "    target = 60.0;\n    forecast = {\n      mode = \"maybe\";\n"
				 "      quantile = 1.5;\n      seed_format = \"json\";\n      horizon = 5;\n    };\n  } );\n"
				 "  behavior = {\n    boot_time = 0;\n    scale_in = { lazy = \"yes\"; billing_granularity = 0; };\n"
				 "    scale_out = { lazy = true; };\n  };\n" GROUP_TAIL,
		      "main.conf:9: 'mode' must be one of off, observe, on, not 'maybe'",
		      "main.conf:10: 'quantile' must be between 0.5 and 0.999, not 1.5",
		      "main.conf:11: unknown trace format 'json'", "main.conf:11: 'seed_format' without 'seed_file'",
		      "main.conf:12: unknown key 'horizon'", "main.conf:16: 'boot_time' must be between 1s and 3600s, not 0s",
		      "main.conf:17: 'lazy' must be a boolean (true or false)",
		      "main.conf:17: 'billing_granularity' must be between 1s and 86400s, not 0s",
		      "main.conf:18: unknown key 'lazy'", NULL);
	/* A service level is a share of the time: 1 would ask for headroom
	 * without end. */
	expect_errors(GROUP_HEAD "  signals = ( { name = \"cpu\"; source = \"libvirt_cpu\"; type = \"utilization\";\n"
				 "    target = 60.0;\n    forecast = { mode = \"on\";\n      service_level = 1.0; };\n"
				 "  } );\n" GROUP_TAIL,
		      "main.conf:9: 'service_level' must be between 0.5 and 0.9999, not 1", NULL);
	{
		struct config *c = load_ok(GROUP_HEAD
					   "  signals = ( { name = \"cpu\"; source = \"libvirt_cpu\"; type = \"utilization\";\n"
					   "    target = 60.0; forecast = { mode = \"on\"; service_level = 0.995; }; },\n"
					   "    { name = \"q\"; source = \"libvirt_cpu\"; type = \"utilization\"; target = 60.0;\n"
					   "      forecast = { mode = \"on\"; }; } );\n" GROUP_TAIL);

		assert_true(signal_forecast(&c->groups[0].signals[0])->service_level == 0.995);
		assert_true(signal_forecast(&c->groups[0].signals[1])->service_level == 0);
		config_free(c);
	}
	/* A forecast of a signal without a target has no instances to give. */
	expect_errors(GROUP_HEAD "  signals = ( { name = \"cpu\"; source = \"libvirt_cpu\"; type = \"utilization\";\n"
				 "    forecast = { mode = \"observe\"; };\n  } );\n" GROUP_TAIL,
		      "main.conf:6: signal 'cpu' has no 'target' and no rule reads it",
		      "main.conf:7: a forecast needs the signal's 'target' to turn a value into instances", NULL);
}

static void test_out_of_range(void **state)
{
	expect_errors(GROUP_HEAD "  signals = ( { name = \"cpu\"; source = \"libvirt_cpu\"; type = \"utilization\";\n"
				 "    target = 0;\n    tolerance = 1.5;\n    window = \"2h\";\n  } );\n"
				 "  behavior = { scale_out = { stabilization = 4000; }; };\n" GROUP_TAIL,
		      "main.conf:7: 'target' must be greater than 0, not 0",
		      "main.conf:8: 'tolerance' must be between 0 and 1, not 1.5",
		      "main.conf:9: 'window' must be between 0s and 3600s, not 7200s",
		      "main.conf:11: 'stabilization' must be between 0s and 3600s, not 4000s", NULL);
	expect_errors("groups = ( {\n  name = \"web\";\n  driver = \"libvirt\";\n  min = -1;\n  max = 200000;\n} );\n",
		      "main.conf:4: 'min' must be between 0 and 100000, not -1",
		      "main.conf:5: 'max' must be between 0 and 100000, not 200000", NULL);
	expect_errors("agent = { interval = 0.5; metrics_listen = \"localhost\"; admin_socket = \"admin.sock\"; };\n",
		      "main.conf:1: 'interval' must be between 1s and 3600s, not 500ms",
		      "main.conf:1: 'admin_socket' must be an absolute path, not 'admin.sock'",
		      "main.conf:1: 'metrics_listen' must be HOST:PORT, such as \"127.0.0.1:9851\", not 'localhost'", NULL);
	expect_errors("agent = {\n  driver_concurrency = {\n    libvirt = 0;\n    gce-mig = 5000;\n    azure-vmss = \"8\";\n"
		      "    Libvirt = 2;\n  };\n};\n",
		      "main.conf:3: 'driver_concurrency' of 'libvirt' must be an integer between 1 and 4096, not 0",
		      "main.conf:4: 'driver_concurrency' of 'gce-mig' must be an integer between 1 and 4096, not 5000",
		      "main.conf:5: 'driver_concurrency' of 'azure-vmss' must be an integer between 1 and 4096",
		      "main.conf:6: invalid driver name 'Libvirt' in 'driver_concurrency' (a plugin's file name: 1 to 64 "
		      "letters a-z, digits, '_' or '-')",
		      NULL);
	expect_errors("agent = { driver_concurrency = 4; };\n", "main.conf:1: 'driver_concurrency' must be a group { ... }",
		      NULL);
	expect_errors("agent = {\n  history_memory = 0;\n};\n",
		      "main.conf:2: 'history_memory' is in MiB, from 1 to 65536, not 0", NULL);
	expect_errors("agent = { history_memory = \"16M\"; };\n", "main.conf:1: 'history_memory' must be an integer",
		      NULL);
	expect_errors(GROUP_HEAD "  signals = ( { name = \"cpu\"; source = \"libvirt_cpu\"; type = \"utilization\"; target = 60;\n"
				 "    poll_interval = \"15s\";\n    staleness = \"5s\";\n    timeout = \"20s\";\n  } );\n" GROUP_TAIL,
		      "main.conf:8: 'staleness' (5s) must be at least 'poll_interval' (15s)",
		      "main.conf:9: 'timeout' (20s) must not exceed 'poll_interval' (15s)", NULL);
}

static void test_list_limits(void **state)
{
	char text[8192];
	size_t len;

	/* 17 signals, one more than a group may have. */
	len = (size_t)snprintf(text, sizeof(text), "%s", GROUP_HEAD "  signals = (\n");
	for (int i = 0; i < 17; i++)
		len += (size_t)snprintf(text + len, sizeof(text) - len,
					"    { name = \"s%d\"; source = \"exec\"; type = \"average\"; target = 1; }%s\n", i,
					i < 16 ? "," : "");
	snprintf(text + len, sizeof(text) - len, "  );\n" GROUP_TAIL);
	expect_errors(text, "main.conf:6: 'signals' has 17 entries; at most 16 are allowed", NULL);
}

static void test_rule_values(void **state)
{
	expect_errors("groups = ( {\n  name = \"web\";\n  driver = \"libvirt\";\n" CPU
		      "  profiles = ( { name = \"d\"; min = 1; max = 4; rules = (\n"
		      "    { signal = \"cpu\"; operator = \">\"; threshold = 70; direction = \"in\"; change = \"percent\"; value = 150; },\n"
		      "    { signal = \"cpu\"; operator = \"=>\"; threshold = 70; direction = \"out\"; value = 1.5; },\n"
		      "    { signal = \"cpu\"; operator = \"<\"; threshold = 10; direction = \"in\"; change = \"exact\"; value = -1; },\n"
		      "    { signal = \"cpu\"; threshold = 10; direction = \"sideways\"; value = 1; }\n"
		      "  ); } );\n} );\n",
		      "main.conf:6: 'value' must be greater than 0 and at most 100 with change 'percent' and direction 'in', not 150",
		      "main.conf:7: 'operator' must be one of >, >=, <, <=, ==, !=, not '=>'",
		      "main.conf:7: 'value' must be a whole number from 1 to 100000 with change 'count', not 1.5",
		      "main.conf:8: 'value' must be a whole number from 0 to 100000 with change 'exact', not -1",
		      "main.conf:9: missing required key 'operator'",
		      "main.conf:9: 'direction' must be one of out, in, not 'sideways'", NULL);
}

static void test_bounds(void **state)
{
	expect_errors("groups = ( {\n  name = \"web\";\n  driver = \"libvirt\";\n  min = 9;\n  max = 8;\n} );\n",
		      "main.conf:4: 'min' (9) is greater than 'max' (8)", NULL);
	expect_errors(GROUP_HEAD "  profiles = ( {\n    name = \"office\";\n    recurrence = { start = \"08:00\"; end = \"19:00\"; };\n"
				 "    min = 4;\n    max = 20;\n    default = 25;\n  } );\n" GROUP_TAIL,
		      "main.conf:11: 'default' (25) must be between 'min' (4) and 'max' (20)", NULL);
	expect_errors("groups = ( {\n  name = \"web\";\n  driver = \"libvirt\";\n  min = 2;\n  max = 4;\n  default = 1;\n} );\n",
		      "main.conf:6: 'default' (1) must be between 'min' (2) and 'max' (4)", NULL);
	expect_errors("groups = ( {\n  name = \"web\";\n  driver = \"libvirt\";\n  max = 4;\n} );\n",
		      "main.conf:1: missing required key 'min'", NULL);
}

static void test_default_profile(void **state)
{
	expect_errors("groups = ( {\n  name = \"web\";\n  driver = \"libvirt\";\n} );\n",
		      "main.conf:1: no default profile: set 'min' and 'max' in the group or add a profile without 'recurrence' or 'fixed'",
		      NULL);
	expect_errors(GROUP_HEAD "  profiles = (\n    { name = \"a\"; min = 1; max = 2; },\n"
				 "    { name = \"b\"; min = 1; max = 2; }\n  );\n" GROUP_TAIL,
		      "main.conf:4: 'min' of the group conflicts with default profile 'a'; set it in that profile",
		      "main.conf:5: 'max' of the group conflicts with default profile 'a'; set it in that profile",
		      "main.conf:8: profile 'b' is a second default profile (one without 'recurrence' or 'fixed'); the first is 'a'",
		      NULL);
	expect_errors("groups = ( {\n  name = \"web\";\n  driver = \"libvirt\";\n  profiles = (\n"
		      "    { name = \"a\"; min = 1; max = 2; },\n    { name = \"a\"; min = 1; max = 2;\n"
		      "      recurrence = { start = \"08:00\"; end = \"09:00\"; };\n"
		      "      fixed = { start = \"2026-01-01\"; end = \"2026-01-02\"; }; }\n  );\n} );\n",
		      "main.conf:6: a profile may have 'recurrence' or 'fixed', not both",
		      "main.conf:6: duplicate profile name 'a' (first defined at DIR/main.conf:5)", NULL);
	expect_errors(GROUP_HEAD "  profiles = ( { name = \"night\"; min = 1; max = 2;\n"
				 "    recurrence = { start = \"22:00\";\n      end = \"22:00\"; }; } );\n" GROUP_TAIL,
		      "main.conf:8: 'start' and 'end' must differ", NULL);
}

static void test_time_zones_and_dates(void **state)
{
	expect_errors(GROUP_HEAD "  profiles = ( {\n    name = \"office\";\n    recurrence = {\n      start = \"8:00\";\n"
				 "      end = \"24:30\";\n      days = [ \"mon\", \"mnd\" ];\n      timezone = \"Europe/Berln\";\n"
				 "    };\n    min = 1;\n    max = 4;\n  } );\n" GROUP_TAIL,
		      "main.conf:10: 'end' must be a time of day \"HH:MM\", not '24:30'",
		      "main.conf:11: unknown day 'mnd' (use mon, tue, wed, thu, fri, sat or sun)",
		      "main.conf:12: unknown time zone 'Europe/Berln'", NULL);
	expect_errors(GROUP_HEAD "  profiles = ( {\n    name = \"sale\";\n    fixed = {\n      start = \"2026-02-30T00:00:00\";\n"
				 "      end = \"2026-11-30\";\n      timezone = \"Mars/Olympus\";\n    };\n    min = 1;\n    max = 4;\n  } );\n"
				 GROUP_TAIL,
		      "main.conf:9: 'start' must be a date and time such as \"2026-11-27T08:00:00\", not '2026-02-30T00:00:00'",
		      "main.conf:11: unknown time zone 'Mars/Olympus'", NULL);
}

static void test_overlapping_fixed(void **state)
{
	expect_errors(GROUP_HEAD "  profiles = (\n"
				 "    { name = \"sale\"; min = 1; max = 4;\n"
				 "      fixed = { start = \"2026-11-27T00:00:00\"; end = \"2026-11-30T00:00:00\"; timezone = \"UTC\"; }; },\n"
				 "    { name = \"late\"; min = 1; max = 4;\n"
				 "      fixed = { start = \"2026-11-30T00:00:00\"; end = \"2026-12-01\"; }; },\n"
				 "    { name = \"berlin\"; min = 1; max = 4;\n"
				 "      fixed = { start = \"2026-11-30T00:30\"; end = \"2026-11-30T02:00\"; timezone = \"Europe/Berlin\"; }; },\n"
				 "    { name = \"backwards\"; min = 1; max = 4;\n"
				 "      fixed = { start = \"2026-12-05\"; end = \"2026-12-04\"; }; }\n"
				 "  );\n" GROUP_TAIL,
		      /* 00:30 in Berlin is 23:30 UTC on the 29th, inside "sale";
		       * "late" starts where "sale" ends and does not overlap. */
		      "main.conf:11: fixed-date profile 'berlin' overlaps 'sale' (defined at DIR/main.conf:7)",
		      "main.conf:14: 'end' must be after 'start'", NULL);
}

static void test_undefined_signal_messages(void **state)
{
	expect_errors("groups = ( {\n  name = \"web\";\n  driver = \"libvirt\";\n" CPU
		      "  profiles = ( { name = \"d\"; min = 1; max = 4;\n"
		      "    rules = ( { signal = \"cpux\"; operator = \">\"; threshold = 70; direction = \"out\"; value = 1; },\n"
		      "              { signal = \"queue\"; operator = \">\"; threshold = 70; direction = \"out\"; value = 1; } );\n"
		      "    targets = { cpu = 50.0;\n      memory = 20.0; };\n  } );\n} );\n",
		      "main.conf:6: rule refers to undefined signal 'cpux' (did you mean 'cpu'?)",
		      "main.conf:7: rule refers to undefined signal 'queue'",
		      "main.conf:9: target override for undefined signal 'memory'", NULL);
}

static void test_duplicates(void **state)
{
	expect_errors("groups = (\n  { name = \"web\"; driver = \"libvirt\"; min = 1; max = 2; },\n"
		      "  { name = \"db\"; driver = \"libvirt\"; min = 1; max = 2;\n"
		      "    signals = ( { name = \"cpu\"; source = \"libvirt_cpu\"; type = \"utilization\"; target = 60.0; },\n"
		      "                { name = \"cpu\"; source = \"prometheus\"; type = \"average\"; target = 5.0; } ); },\n"
		      "  { name = \"web\"; driver = \"libvirt\"; min = 1; max = 2; }\n);\n",
		      "main.conf:5: duplicate signal name 'cpu' (first defined at DIR/main.conf:4)",
		      "main.conf:6: duplicate group name 'web' (first defined at DIR/main.conf:2)", NULL);
}

static void test_shared_target(void **state)
{
	char drivers[PATH_MAX + 16];
	char *saved = getenv("AUTOSCALED_DRIVER_DIR") ? strdup(getenv("AUTOSCALED_DRIVER_DIR")) : NULL;

	(void)state;
	snprintf(drivers, sizeof(drivers), "%s/drivers", dir);
	write_file("drivers/gce-mig.so", "");
	write_file("drivers/azure-vmss.so", "");
	setenv("AUTOSCALED_DRIVER_DIR", drivers, 1);
	/* Two groups on one MIG or one scale set (ARM names without case)
	 * would fight; another zone or another set is fine, and a regional
	 * MIG is not the zonal one of its name. A third group on one target
	 * is reported against the first. */
	expect_errors("groups = (\n"
		      "  { name = \"a\"; driver = \"gce-mig\"; min = 1; max = 2;\n"
		      "    driver_options = { project = \"p\"; zone = \"z1\"; name = \"web\"; }; },\n"
		      "  { name = \"b\"; driver = \"gce-mig\"; min = 1; max = 2;\n"
		      "    driver_options = { project = \"p\"; zone = \"z2\"; name = \"web\"; }; },\n"
		      "  { name = \"c\"; driver = \"gce-mig\"; min = 1; max = 2;\n"
		      "    driver_options = { project = \"p\"; zone = \"z1\"; name = \"web\"; }; },\n"
		      "  { name = \"d\"; driver = \"azure-vmss\"; min = 1; max = 2;\n"
		      "    driver_options = { subscription = \"s\"; resource_group = \"RG\"; name = \"Set\"; }; },\n"
		      "  { name = \"e\"; driver = \"azure-vmss\"; min = 1; max = 2;\n"
		      "    driver_options = { subscription = \"s\"; resource_group = \"rg\"; name = \"set\"; }; },\n"
		      "  { name = \"f\"; driver = \"gce-mig\"; min = 1; max = 2;\n"
		      "    driver_options = { project = \"p\"; region = \"r\"; name = \"web\"; }; },\n"
		      "  { name = \"g\"; driver = \"gce-mig\"; min = 1; max = 2;\n"
		      "    driver_options = { project = \"p\"; region = \"r\"; name = \"web\"; }; },\n"
		      "  { name = \"h\"; driver = \"gce-mig\"; min = 1; max = 2;\n"
		      "    driver_options = { project = \"p\"; zone = \"z1\"; name = \"web\"; }; }\n);\n",
		      "main.conf:7: group 'c' drives the same managed instance group as group 'a' (defined at "
		      "DIR/main.conf:2): two controllers would fight",
		      "main.conf:11: group 'e' drives the same scale set as group 'd' (defined at DIR/main.conf:8): two "
		      "controllers would fight",
		      "main.conf:15: group 'g' drives the same managed instance group as group 'f' (defined at "
		      "DIR/main.conf:12): two controllers would fight",
		      "main.conf:17: group 'h' drives the same managed instance group as group 'a' (defined at "
		      "DIR/main.conf:2): two controllers would fight", NULL);
	/* Libvirt members carry their unique group name in their tag, but
	 * domain names share one namespace per hypervisor: "web-%n" twice on
	 * one URI, or "%g-%n" for "a" and "a-1%n", or "web-%n" and "web-%n5" on a URI both
	 * lists hold, can name the same domain; another URI, a zero after the
	 * shared prefix or a suffix that is not digits cannot. */
	write_file("drivers/libvirt.so", "");
	expect_errors("groups = (\n"
		      "  { name = \"a\"; driver = \"libvirt\"; min = 1; max = 2;\n"
		      "    driver_options = { template = \"t\"; }; },\n"
		      "  { name = \"b\"; driver = \"libvirt\"; min = 1; max = 2;\n"
		      "    driver_options = { template = \"t\"; name_pattern = \"a-1%n\"; }; },\n"
		      "  { name = \"c\"; driver = \"libvirt\"; min = 1; max = 2;\n"
		      "    driver_options = { template = \"t\"; uri = [\"qemu+ssh://h2/system\"];\n"
		      "                       name_pattern = \"web-%n\"; }; },\n"
		      "  { name = \"d\"; driver = \"libvirt\"; min = 1; max = 2;\n"
		      "    driver_options = { template = \"t\"; uri = \"qemu:///system\"; name_pattern = \"web-%n\"; }; },\n"
		      "  { name = \"e\"; driver = \"libvirt\"; min = 1; max = 2;\n"
		      "    driver_options = { template = \"t\"; uri = [\"qemu+ssh://h1/system\", \"qemu+ssh://h2/system\"];\n"
		      "                       name_pattern = \"web-%n.x\"; }; },\n"
		      "  { name = \"f\"; driver = \"libvirt\"; min = 1; max = 2;\n"
		      "    driver_options = { template = \"t\"; name_pattern = \"a-0%n\"; uri = \"qemu:///system\"; }; },\n"
		      "  { name = \"g\"; driver = \"libvirt\"; min = 1; max = 2;\n"
		      "    driver_options = { template = \"t\"; uri = \"qemu+ssh://h2/system\"; name_pattern = \"web-%n5\"; }; }\n);\n",
		      "main.conf:5: group 'b' drives the same libvirt domain names as group 'a' (defined at "
		      "DIR/main.conf:2): two controllers would fight",
		      "main.conf:17: group 'g' drives the same libvirt domain names as group 'c' (defined at "
		      "DIR/main.conf:6): two controllers would fight", NULL);
	/* The tests after this one find the build's drivers again. */
	if (saved)
		setenv("AUTOSCALED_DRIVER_DIR", saved, 1);
	else
		unsetenv("AUTOSCALED_DRIVER_DIR");
	free(saved);
}

static void test_drivers_and_sources(void **state)
{
	/* The file holds driver names that can be a plugin's file name;
	 * whether such a plugin is installed is preflight's question. */
	expect_errors("groups = (\n  { name = \"a\"; driver = \"libvrt\"; min = 1; max = 2; },\n"
		      "  { name = \"b\"; driver = \"custom\"; min = 1; max = 2; },\n"
		      "  { name = \"c\"; driver = \"../../bin/sh\"; min = 1; max = 2;\n"
		      "    signals = ( { name = \"q\"; source = \"prometeus\"; type = \"average\"; target = 5; },\n"
		      "                { name = \"r\"; source = \"statsd\"; type = \"average\"; target = 5; } ); }\n);\n",
		      "main.conf:4: invalid driver name '../../bin/sh' (a plugin's file name: 1 to 64 letters a-z, digits, '_' or '-')",
		      "main.conf:5: unknown source 'prometeus' (did you mean 'prometheus'?)",
		      "main.conf:6: unknown source 'statsd'", NULL);
}

/* A warm pool: read back with its defaults, every bad value at its line,
 * refused on a driver other than libvirt, and passed to the driver as
 * "warm_pool.KEY" options after the group's own. */
static void test_warm_pool(void **state)
{
	struct config *c;
	const struct warm_pool_conf *w;
	struct driver_options o;

	c = load_ok(GROUP_HEAD "  driver_options = { template = \"t\"; };\n  warm_pool = { size = 3; };\n" GROUP_TAIL);
	w = c->groups[0].warm_pool;
	assert_int_equal(w->size, 3);
	assert_int_equal(w->state, WARM_PAUSED);
	assert_int_equal(w->max_age_ms, 0);
	assert_int_equal(w->refill_ms, 30000);
	assert_int_equal(w->warmup_ms, 60000);
	assert_false(w->return_on_scale_in);
	assert_null(w->reseed_command);
	assert_int_equal(w->line, 7);
	assert_int_equal(driver_options_from_group(&c->groups[0], &o), 0);
	assert_int_equal(o.n, 7);
	assert_string_equal(o.v[0].key, "template");
	assert_string_equal(o.v[1].key, "warm_pool.size");
	assert_string_equal(o.v[1].value, "3");
	assert_string_equal(o.v[2].value, "paused");
	assert_non_null(strstr(o.v[1].where, "main.conf:7"));
	driver_options_free(&o);
	config_free(c);

	c = load_ok(GROUP_HEAD "  warm_pool = { size = 2; state = \"saved\"; max_age = \"6h\"; refill = \"10s\";\n"
		    "    warmup = \"5s\"; return_on_scale_in = true; reseed_command = [ \"/bin/true\", \"x\" ]; };\n"
		    GROUP_TAIL);
	w = c->groups[0].warm_pool;
	assert_int_equal(w->state, WARM_SAVED);
	assert_int_equal(w->max_age_ms, 6 * 3600 * 1000);
	assert_int_equal(w->refill_ms, 10000);
	assert_int_equal(w->warmup_ms, 5000);
	assert_true(w->return_on_scale_in);
	assert_int_equal(w->n_reseed_command, 2);
	assert_string_equal(w->reseed_command[1], "x");
	assert_int_equal(driver_options_from_group(&c->groups[0], &o), 0);
	assert_int_equal(o.n, 7);
	assert_string_equal(o.v[6].key, "warm_pool.reseed_command");
	assert_int_equal(o.v[6].n_list, 2);
	assert_null(o.v[6].value);
	driver_options_free(&o);
	/* A change of the pool is a change of the group and of its driver. */
	{
		struct config *d = load_ok(GROUP_HEAD "  warm_pool = { size = 2; state = \"paused\"; max_age = \"6h\";\n"
					   "    refill = \"10s\"; warmup = \"5s\"; return_on_scale_in = true;\n"
					   "    reseed_command = [ \"/bin/true\", \"x\" ]; };\n" GROUP_TAIL);

		assert_false(config_group_equal(&c->groups[0], &d->groups[0]));
		assert_false(config_warm_pool_equal(c->groups[0].warm_pool, d->groups[0].warm_pool));
		((struct warm_pool_conf *)d->groups[0].warm_pool)->state = WARM_SAVED;
		assert_true(config_warm_pool_equal(c->groups[0].warm_pool, d->groups[0].warm_pool));
		config_free(d);
	}
	config_free(c);

	/* Without the block: no pool, and the defaults read through it. */
	c = load_ok(GROUP_HEAD "  driver_options = { template = \"t\"; };\n" GROUP_TAIL);
	assert_null(c->groups[0].warm_pool);
	assert_int_equal(group_warm_pool(&c->groups[0])->size, 0);
	assert_int_equal(group_warm_pool(&c->groups[0])->refill_ms, 30000);
	assert_int_equal(group_warm_pool(&c->groups[0])->warmup_ms, 60000);
	assert_int_equal(driver_options_from_group(&c->groups[0], &o), 0);
	for (size_t i = 0; i < o.n; i++)
		assert_null(strstr(o.v[i].key, "warm_pool."));
	driver_options_free(&o);
	config_free(c);

	expect_errors(GROUP_HEAD "  warm_pool = { state = \"frozen\"; sise = 2;\n    max_age = \"-1\"; refill = 0;\n"
		      "    reseed_command = [ \"reseed\" ]; };\n" GROUP_TAIL,
		      "main.conf:6: unknown key 'sise' (did you mean 'size'?)",
		      "main.conf:6: missing required key 'size'",
		      "main.conf:6: 'state' must be one of paused, saved, stopped, not 'frozen'",
		      "main.conf:7: invalid duration '-1' for 'max_age' (" CONFIG_DURATION_HELP ")", "main.conf:7: 'refill' must be between 1s and 86400s, not 0s", "main.conf:8: 'reseed_command' must start with an absolute path (no shell, no PATH search), not 'reseed'", NULL);
	expect_errors("groups = ( { name = \"g\"; driver = \"gce-mig\"; min = 1; max = 2;\n"
		      "  warm_pool = { size = 2; }; } );\n",
		      "main.conf:2: 'warm_pool' is for driver 'libvirt' only, not 'gce-mig' (a cloud's own standby pool is "
		      "set up in the cloud)", NULL);
	expect_errors(GROUP_HEAD "  warm_pool = { size = 2; state = \"stopped\";\n    return_on_scale_in = true; };\n"
		      GROUP_TAIL,
		      "main.conf:7: 'return_on_scale_in' needs state \"paused\" or \"saved\": a stopped warm member is a "
		      "disk never booted, which a used instance is not", NULL);
}

/* Runs preflight on TEXT (which must load) and returns its errors joined
 * by newlines (static). */
static const char *preflight_text(const char *text)
{
	static char out[8192];
	struct config_errors e = { 0 };
	struct config *c = load_ok(text);
	size_t n = 0;

	out[0] = '\0';
	preflight_check(c, &e);
	for (size_t i = 0; i < e.n; i++)
		n += (size_t)snprintf(out + n, n < sizeof(out) ? sizeof(out) - n : 0, "%s\n", e.v[i]);
	config_errors_clear(&e);
	config_free(c);
	return out;
}

static void test_preflight_drivers(void **state)
{
	char drivers[PATH_MAX + 16], text[2 * PATH_MAX], want[4 * PATH_MAX];
	char *saved = getenv("AUTOSCALED_DRIVER_DIR") ? strdup(getenv("AUTOSCALED_DRIVER_DIR")) : NULL;
	const char *out;

	if (!saved)
		skip();
	/* A misspelt driver gets the installed driver it is closest to. */
	out = preflight_text("groups = ( { name = \"a\"; driver = \"libvrt\";\n"
			     "  driver_options = { template = \"t\"; }; min = 1; max = 2; } );\n");
	snprintf(want, sizeof(want), "main.conf:1: unknown driver 'libvrt' (did you mean 'libvirt'?): no 'libvrt.so' in '%s'",
		 saved);
	if (!strstr(out, want))
		fail_msg("got: %s\nwant: %s", out, want);
	/* The driver's own check runs: a missing option is an error at the
	 * group's driver_options. */
	out = preflight_text("groups = ( { name = \"a\"; driver = \"libvirt\";\n"
			     "  driver_options = { uri = \"test:///default\"; }; min = 1; max = 2; } );\n");
	if (!strstr(out, "main.conf:2: libvirt: missing required option 'template'"))
		fail_msg("got: %s", out);

	/* A driver's own source is read by a group of that driver, named as
	 * the driver declares it, and takes no source_options. */
#define LV_GROUP "groups = ( { name = \"a\"; driver = \"libvirt\"; min = 1; max = 2;\n" \
		 "  driver_options = { uri = \"test:///default\"; template = \"t\"; };\n"
	out = preflight_text(LV_GROUP "  signals = ( { name = \"cpu\"; source = \"libvirt_cpu\"; type = \"utilization\";"
			     " target = 60; } ); } );\n");
	if (out[0])
		fail_msg("got: %s", out);
	out = preflight_text(LV_GROUP "  signals = ( { name = \"cpu\"; source = \"libvirt_cpus\"; type = \"utilization\";"
			     " target = 60; } ); } );\n");
	if (!strstr(out, "main.conf:3: unknown source 'libvirt_cpus' (did you mean 'libvirt_cpu'?)\n") ||
	    strchr(out, '\n')[1])
		fail_msg("got: %s", out);
	out = preflight_text(LV_GROUP "  signals = ( { name = \"cpu\"; source = \"libvirt_cpu\"; type = \"utilization\";"
			     " target = 60;\n    source_options = { uri = \"test:///default\"; }; } ); } );\n");
	if (!strstr(out, "main.conf:3: signal 'cpu': source 'libvirt_cpu' is fed by driver 'libvirt' and takes no "
			 "source_options"))
		fail_msg("got: %s", out);
	out = preflight_text(LV_GROUP "  signals = ( { name = \"q\"; source = \"nosuch_queue\"; type = \"average\";"
			     " target = 5; } ); } );\n");
	if (!strstr(out, "main.conf:3: unknown source 'nosuch_queue'\n") || strchr(out, '\n')[1])
		fail_msg("got: %s", out);
	/* A group of another driver (when this build has one) is told which
	 * driver feeds it. */
	snprintf(want, sizeof(want), "%s/gce-mig.so", saved);
	out = access(want, F_OK) < 0 ? NULL : preflight_text("groups = ( { name = \"b\"; driver = \"gce-mig\"; min = 1; max = 2;\n"
			     "  driver_options = { project = \"p\"; zone = \"z\"; name = \"g\"; };\n"
			     "  signals = ( { name = \"cpu\"; source = \"libvirt_cpu\"; type = \"utilization\";"
			     " target = 60; } ); } );\n");
	if (out && !strstr(out, "main.conf:3: signal 'cpu': source 'libvirt_cpu' is fed by driver 'libvirt', and group "
				"'b' uses driver 'gce-mig'\n"))
		fail_msg("got: %s", out);
	/* The libvirt driver's check takes the warm pool's options. */
	out = preflight_text(LV_GROUP "  warm_pool = { size = 2; state = \"saved\"; max_age = \"6h\";\n"
			     "    reseed_command = [ \"/bin/true\" ]; }; } );\n");
	if (out[0])
		fail_msg("got: %s", out);
#undef LV_GROUP

	/* The directory is the loader's: the environment's when set, and
	 * only then agent.driver_directory; a plugin elsewhere is not found. */
	snprintf(drivers, sizeof(drivers), "%s/drivers", dir);
	write_file("drivers/custom.so", "");
	snprintf(text, sizeof(text),
		 "agent = { driver_directory = \"%s\"; };\ngroups = ( { name = \"b\"; driver = \"custom\"; min = 1; max = 2; } );\n",
		 drivers);
	out = preflight_text(text);
	snprintf(want, sizeof(want), "main.conf:2: unknown driver 'custom': no 'custom.so' in '%s'", saved);
	if (!strstr(out, want))
		fail_msg("got: %s\nwant: %s", out, want);
	unsetenv("AUTOSCALED_DRIVER_DIR");
	out = preflight_text(text);
	/* Found there, and loaded as the daemon would: it is no module. */
	snprintf(want, sizeof(want), "main.conf:2: driver 'custom': cannot load '%s/custom.so'", drivers);
	if (!strstr(out, want))
		fail_msg("got: %s\nwant: %s", out, want);
	setenv("AUTOSCALED_DRIVER_DIR", saved, 1);
	free(saved);
}

static void test_wildcard_include(void **state)
{
	struct config *c;

	/* Files of conf.d are read in name order, relative to the including
	 * file, and errors name them with their own line numbers. */
	write_file("conf.d/20-db.conf", "# db\ngroups = ( {\n  name = \"db\";\n  driver = \"libvirt\";\n"
					"  min = 3;\n  max = 1;\n} );\n");
	write_file("conf.d/10-web.conf", "groups = ( { name = \"web\"; driver = \"libvirt\"; min = 1; max = 2;\n"
					 "  behavior = { scale_in = { stabilisation = 10; }; }; } );\n");
	write_file("conf.d/30-syntax.conf", "groups = (\n  { name = \"x\" }\n  { name = \"y\" }\n);\n");
	write_file("conf.d/README", "not a configuration file");
	expect_errors("agent = { interval = 20; };\n@include \"conf.d/*.conf\"\n"
		      "groups = ( { name = \"web\"; driver = \"libvirt\"; min = 1; max = 2; } );\n",
		      "conf.d/10-web.conf:1: duplicate group name 'web' (first defined at DIR/main.conf:3)",
		      "conf.d/10-web.conf:2: unknown key 'stabilisation' (did you mean 'stabilization'?)",
		      "conf.d/20-db.conf:5: 'min' (3) is greater than 'max' (1)", "conf.d/30-syntax.conf:3: syntax error",
		      NULL);

	/* Fixed, the groups of every file are merged: the main file's first,
	 * then conf.d's in name order. */
	write_file("conf.d/20-db.conf", "groups = ( { name = \"db\"; driver = \"libvirt\"; min = 1; max = 3; } );\n");
	write_file("conf.d/10-web.conf", "groups = ( { name = \"api\"; driver = \"libvirt\"; min = 1; max = 2; } );\n");
	write_file("conf.d/30-syntax.conf", "# nothing here yet\n");
	c = load_ok(NULL);
	assert_int_equal(c->n_groups, 3);
	assert_string_equal(c->groups[0].name, "web");
	assert_string_equal(c->groups[1].name, "api");
	assert_string_equal(c->groups[2].name, "db");
	assert_int_equal(c->groups[2].interval_ms, 20000);
	assert_int_equal(c->groups[2].line, 1);
	assert_non_null(strstr(c->groups[2].file, "/conf.d/20-db.conf"));
	assert_int_equal(c->n_files, 4);
	config_free(c);
}

static void test_include_plain_and_missing(void **state)
{
	struct config *c;

	/* No conf.d at all is fine. A plain include works, relative to the
	 * including file, and its errors name it. */
	write_file("groups.inc", "groups = ( {\n  name = \"web\";\n  driver = \"libvirt\";\n  min = 1; max = 2;\n"
				 "  dry_run = \"yes\";\n} );\n");
	expect_errors("@include \"conf.d/*.conf\"\n@include \"groups.inc\"\n",
		      "groups.inc:5: 'dry_run' must be a boolean (true or false)", NULL);
	write_file("groups.inc", "groups = ( { name = \"web\"; driver = \"libvirt\"; min = 1; max = 2; } );\n");
	c = load_ok(NULL);
	assert_int_equal(c->n_groups, 1);
	assert_int_equal(c->n_files, 2);
	config_free(c);

	/* An absolute name works too (libconfig 1.5 alone would prefix it). */
	{
		char text[PATH_MAX + 64];

		write_file("groups.inc", "groups = ( { name = \"web\"; driver = \"libvirt\";\n  min = 3; max = 2; } );\n");
		snprintf(text, sizeof(text), "agent = { interval = 10; };\n  @include \"%s/groups.inc\"\n", dir);
		expect_errors(text, "groups.inc:2: 'min' (3) is greater than 'max' (2)", NULL);
		write_file("groups.inc", "groups = ( { name = \"web\"; driver = \"libvirt\"; min = 1; max = 2; } );\n");
		c = load_ok(NULL);
		assert_int_equal(c->n_groups, 1);
		assert_int_equal(c->n_files, 2);
		assert_string_equal(c->groups[0].file, c->files[1]);
		assert_non_null(strstr(c->files[1], "/groups.inc"));
		assert_null(strstr(c->files[1], ".."));
		config_free(c);
	}
	expect_errors("@include \"nothere.conf\"\n", "main.conf:1: cannot open include file", NULL);
	expect_errors("groups = (\n  @include \"conf.d/*.conf\"\n);\n",
		      "main.conf:2: an @include with a wildcard must stand at the top level, outside any group or list", NULL);
	/* A file that matches its own wildcard is read once. */
	expect_errors("@include \"*.conf\"\n", "main.conf:1: 'DIR/main.conf' is already read; a file may be included only once",
		      NULL);
	write_file("conf.d/a.conf", "agent = { interval = 5; };\n");
	expect_errors("agent = { interval = 10; };\n@include \"conf.d/*.conf\"\n",
		      "conf.d/a.conf:1: duplicate 'agent' section (first defined at DIR/main.conf:1)", NULL);
}

/* A FIFO (or a directory) named as the configuration or an include is
 * refused with a clear error, at once: opening a FIFO to read it waits for
 * a writer, which used to hang the daemon and `-n`. The alarm turns such a
 * hang into a failure. */
static void test_fifo_files(void **state)
{
	struct config *c = NULL;
	struct config_errors e;
	char path[PATH_MAX + 64], want[PATH_MAX + 64];

	alarm(10);
	snprintf(path, sizeof(path), "%s/main.conf", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(config_load(main_path(), &c, &e), -EINVAL);
	assert_null(c);
	assert_int_equal(e.n, 1);
	snprintf(want, sizeof(want), "%s: cannot read: not a regular file", main_path());
	assert_string_equal(e.v[0], want);
	config_errors_clear(&e);
	assert_int_equal(unlink(path), 0);

	snprintf(path, sizeof(path), "%s/fifo.inc", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	write_file("groups.inc", "groups = ( { name = \"web\"; driver = \"libvirt\"; min = 1; max = 2; } );\n");
	/* A plain include, read by libconfig itself. */
	expect_errors("agent = { interval = 10; };\n@include \"fifo.inc\"\n@include \"groups.inc\"\n",
		      "main.conf:2: cannot read 'DIR/fifo.inc': not a regular file", NULL);
	/* One nested below another: named where the including file names it. */
	write_file("outer.inc", "# outer\n@include \"fifo.inc\"\n");
	expect_errors("@include \"outer.inc\"\n@include \"groups.inc\"\n",
		      "outer.inc:2: cannot read 'DIR/fifo.inc': not a regular file", NULL);
	/* By its absolute name. */
	{
		char text[PATH_MAX + 64];

		snprintf(text, sizeof(text), "@include \"%s/fifo.inc\"\n", dir);
		expect_errors(text, "main.conf:1: cannot read 'DIR/fifo.inc': not a regular file", NULL);
	}
	/* A directory, the same way. */
	snprintf(path, sizeof(path), "%s/sub", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	expect_errors("@include \"sub\"\n", "main.conf:1: cannot read 'DIR/sub': Is a directory", NULL);
	/* A commented-out include of a FIFO is nobody's business. */
	c = load_ok("/* @include \"fifo.inc\" */\n# @include \"fifo.inc\"\n@include \"groups.inc\"\n");
	config_free(c);
	/* A file that includes itself ten times: the walk is bounded, and so
	 * is libconfig's expansion, which is then not attempted. */
	write_file("self.inc", "@include \"self.inc\"\n@include \"self.inc\"\n@include \"self.inc\"\n"
			       "@include \"self.inc\"\n@include \"self.inc\"\n@include \"self.inc\"\n"
			       "@include \"self.inc\"\n@include \"self.inc\"\n@include \"self.inc\"\n"
			       "@include \"self.inc\"\n");
	expect_errors("@include \"self.inc\"\n", "self.inc:7: more than 20000 files are included", NULL);
	/* A wildcard matches regular files only: a FIFO in conf.d is skipped. */
	snprintf(path, sizeof(path), "%s/conf.d", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/conf.d/50-fifo.conf", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	c = load_ok("@include \"conf.d/*.conf\"\n@include \"groups.inc\"\n");
	assert_int_equal(c->n_groups, 1);
	config_free(c);
	alarm(0);
}

static void test_every_error_reported(void **state)
{
	/* Nothing stops at the first error, not even within one setting. */
	expect_errors("agent = { interval = -1; dry_run = 2; };\n"
		      "groups = (\n  { name = \"a/b\"; driver = \"nope\"; min = 5; max = 1; },\n"
		      "  { driver = \"libvirt\"; min = 1; max = 2; signals = ( { name = \"s\"; } ); }\n);\n",
		      "main.conf:1: 'interval' must be between 1s and 3600s, not -1s",
		      "main.conf:1: 'dry_run' must be a boolean (true or false)",
		      "main.conf:3: invalid group name 'a/b' (use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit)",
		      "main.conf:3: 'min' (5) is greater than 'max' (1)",
		      "main.conf:4: missing required key 'name'", "main.conf:4: missing required key 'source'",
		      "main.conf:4: missing required key 'type'",
		      "main.conf:4: signal 's' has no 'target' and no rule reads it", NULL);
}

static void test_missing_file(void **state)
{
	struct config *c = NULL;
	struct config_errors e;
	char want[PATH_MAX + 64];

	assert_int_equal(config_load(main_path(), &c, &e), -ENOENT);
	assert_null(c);
	assert_int_equal(e.n, 1);
	snprintf(want, sizeof(want), "%s: cannot read: No such file or directory", main_path());
	assert_string_equal(e.v[0], want);
	config_errors_clear(&e);
	/* Callers that do not want the messages may pass NULL. */
	assert_int_equal(config_load(main_path(), &c, NULL), -ENOENT);
	write_file("main.conf", "agent = { interval = 0; };\n");
	assert_int_equal(config_load(main_path(), &c, NULL), -EINVAL);
	assert_null(c);
}

static const char full_config[] =
	"agent = {\n"
	"  interval = \"20s\";\n"
	"  state_directory = \"/srv/as/state\";\n"
	"  admin_socket = \"/srv/as/admin.sock\";\n"
	"  admin_group = \"ops\";\n"
	"  metrics_listen = \"127.0.0.1:9900\";\n"
	"  driver_directory = \"/opt/as/drivers\";\n"
	"  dry_run = false;\n"
	"};\n"
	"groups = ( {\n" /* 10 */
	"  name = \"web\";\n"
	"  driver = \"libvirt\";\n"
	"  driver_options = { uri = \"test:///default\"; count = 3; ratio = 0.5;\n"
	"    spread = true; hosts = [ \"h1\", \"h2\" ]; };\n"
	"  interval = \"30s\";\n"
	"  dry_run = true;\n"
	"  signals = (\n"
	"    { name = \"cpu\"; source = \"libvirt_cpu\"; source_options = { uri = \"test:///default\"; };\n"
	"      type = \"utilization\"; target = 60.0; window = \"2m\"; aggregation = \"p95\"; tolerance = 0.05;\n"
	"      staleness = \"1m\"; poll_interval = \"20s\"; timeout = \"5s\"; },\n" /* 20 */
	"    { name = \"queue\"; source = \"redis\"; type = \"average\"; target = 5; }\n"
	"  );\n"
	"  profiles = (\n"
	"    { name = \"office\";\n"
	"      recurrence = { days = [ \"mon\", \"fri\", \"sunday\" ]; start = \"08:30\"; end = \"24:00\";\n"
	"                     timezone = \"Europe/Berlin\"; };\n"
	"      min = 4; max = 20; default = 5; targets = { cpu = 50.0; }; },\n"
	"    { name = \"sale\";\n"
	"      fixed = { start = \"2026-11-27T00:00:00\"; end = \"2026-11-30\"; timezone = \"Europe/Berlin\"; };\n"
	"      min = 10; max = 30; },\n" /* 30 */
	"    { name = \"base\"; min = 2; max = 8; default = 3;\n"
	"      rules = (\n"
	"        { signal = \"queue\"; window = \"10m\"; statistic = \"max\"; operator = \">=\"; threshold = 100.0;\n"
	"          direction = \"out\"; change = \"percent\"; value = 50; cooldown = \"2m\"; },\n"
	"        { signal = \"cpu\"; operator = \"<\"; threshold = 10; direction = \"in\"; change = \"exact\"; value = 2; }\n"
	"      ); }\n"
	"  );\n"
	"  behavior = {\n"
	"    scale_in = { stabilization = \"10m\"; select = \"min\";\n"
	"      policies = ( { type = \"instances\"; value = 2; period = \"1m\"; }, { type = \"percent\"; value = 10; period = 30; } ); };\n"
	"    scale_out = { stabilization = 30; select = \"disabled\"; policies = ( ); };\n" /* 41 */
	"    initialization_period = \"2m\";\n"
	"    on_missing = \"max\";\n"
	"  };\n"
	"} );\n";

/* One rate-limit policy: its type, its value and its period. */
static void assert_policy(const struct rate_policy *p, enum policy_type type, double value, int64_t period_ms)
{
	assert_int_equal(p->type, type);
	assert_true(p->value == value);
	assert_int_equal(p->period_ms, period_ms);
}

static void test_valid_read_back(void **state)
{
	struct config *c = load_ok(full_config);
	const struct agent_conf *a = &c->agent;
	const struct group_conf *g;
	const struct signal_conf *s;
	const struct profile_conf *p;
	const struct rule_conf *r;
	const struct config_option *o;
	const struct behavior_conf *b;

	assert_string_equal(c->path, main_path());
	assert_int_equal(c->n_files, 1);
	assert_string_equal(c->files[0], main_path());
	assert_int_equal(a->interval_ms, 20000);
	assert_string_equal(a->state_directory, "/srv/as/state");
	assert_string_equal(a->admin_socket, "/srv/as/admin.sock");
	assert_string_equal(a->admin_group, "ops");
	assert_string_equal(a->metrics_listen, "127.0.0.1:9900");
	assert_string_equal(a->driver_directory, "/opt/as/drivers");
	assert_false(a->dry_run);

	assert_int_equal(c->n_groups, 1);
	g = &c->groups[0];
	assert_ptr_equal(config_find_group(c, "web"), g);
	assert_null(config_find_group(c, "db"));
	assert_string_equal(g->name, "web");
	assert_string_equal(g->driver, "libvirt");
	assert_string_equal(g->file, main_path());
	assert_int_equal(g->line, 10);
	assert_int_equal(g->interval_ms, 30000);
	assert_true(g->dry_run);

	assert_int_equal(g->driver_options.n, 5);
	assert_string_equal(options_get_str(&g->driver_options, "uri", NULL), "test:///default");
	o = options_get(&g->driver_options, "count");
	assert_non_null(o);
	assert_int_equal(o->type, OPTION_INT);
	assert_int_equal(o->i, 3);
	assert_string_equal(o->str, "3");
	assert_int_equal(o->line, 13);
	assert_ptr_equal(o->file, c->files[0]);
	assert_true(options_get_num(&g->driver_options, "ratio", 0) == 0.5);
	assert_int_equal(options_get(&g->driver_options, "ratio")->type, OPTION_FLOAT);
	assert_true(options_get_bool(&g->driver_options, "spread", false));
	assert_string_equal(options_get_str(&g->driver_options, "spread", NULL), "true");
	o = options_get(&g->driver_options, "hosts");
	assert_int_equal(o->type, OPTION_LIST);
	assert_int_equal(o->n_list, 2);
	assert_string_equal(o->list[1], "h2");
	assert_null(options_get_str(&g->driver_options, "hosts", NULL));
	assert_null(options_get(&g->driver_options, "absent"));
	assert_string_equal(options_get_str(&g->driver_options, "absent", "dflt"), "dflt");
	assert_true(options_get_num(&g->driver_options, "absent", 7) == 7);
	assert_false(options_get_bool(&g->driver_options, "absent", false));

	assert_int_equal(g->n_signals, 2);
	assert_int_equal(group_find_signal(g, "queue"), 1);
	assert_int_equal(group_find_signal(g, "disk"), -1);
	s = &g->signals[0];
	assert_string_equal(s->name, "cpu");
	assert_string_equal(s->source, "libvirt_cpu");
	assert_string_equal(options_get_str(&s->source_options, "uri", NULL), "test:///default");
	assert_int_equal(s->type, SIGNAL_UTILIZATION);
	assert_true(s->target == 60.0);
	assert_int_equal(s->window_ms, 120000);
	assert_int_equal(s->aggregation, AGG_P95);
	assert_true(s->tolerance == 0.05);
	assert_int_equal(s->staleness_ms, 60000);
	assert_int_equal(s->poll_interval_ms, 20000);
	assert_int_equal(s->timeout_ms, 5000);
	assert_int_equal(s->line, 18);
	s = &g->signals[1];
	assert_int_equal(s->type, SIGNAL_AVERAGE);
	assert_true(s->target == 5.0);
	assert_int_equal(s->source_options.n, 0);
	/* Defaults of a signal, from the group's interval. */
	assert_int_equal(s->window_ms, 60000);
	/* A rule reads a signal over a longer window than the signal's own:
	 * its samples must be kept that long (the cpu rule's default 5m over
	 * the signal's 2m, the queue rule's 10m over 1m). */
	assert_int_equal(group_longest_window(g, 0), 300000);
	assert_int_equal(group_longest_window(g, 1), 600000);
	assert_int_equal(s->aggregation, AGG_AVG);
	assert_true(s->tolerance == 0.1);
	assert_int_equal(s->poll_interval_ms, 30000);
	assert_int_equal(s->staleness_ms, 90000);
	assert_int_equal(s->timeout_ms, 10000);

	assert_int_equal(g->n_profiles, 3);
	p = &g->profiles[0];
	assert_string_equal(p->name, "office");
	assert_int_equal(p->kind, PROFILE_RECURRENCE);
	assert_int_equal(p->days, (1u << 0) | (1u << 4) | (1u << 6));
	assert_int_equal(p->start_minute, 8 * 60 + 30);
	assert_int_equal(p->end_minute, 1440);
	assert_string_equal(p->timezone, "Europe/Berlin");
	assert_non_null(p->tz);
	assert_int_equal(p->min, 4);
	assert_int_equal(p->max, 20);
	assert_int_equal(p->def, 5);
	assert_int_equal(p->n_targets, 1);
	assert_string_equal(p->targets[0].signal, "cpu");
	assert_int_equal(p->targets[0].signal_index, 0);
	assert_true(p->targets[0].target == 50.0);
	assert_int_equal(p->line, 24);
	p = &g->profiles[1];
	assert_string_equal(p->name, "sale");
	assert_int_equal(p->kind, PROFILE_FIXED);
	/* Midnight in Berlin in November is 23:00 UTC the day before. */
	assert_int_equal(p->start_ms, INT64_C(1795734000000));
	assert_int_equal(p->end_ms, INT64_C(1795993200000));
	assert_int_equal(p->def, 10); /* default = min */
	p = &g->profiles[2];
	assert_ptr_equal(group_default_profile(g), p);
	assert_string_equal(p->name, "base");
	assert_int_equal(p->kind, PROFILE_DEFAULT);
	assert_null(p->tz);
	assert_int_equal(p->min, 2);
	assert_int_equal(p->max, 8);
	assert_int_equal(p->def, 3);
	assert_int_equal(p->n_rules, 2);
	r = &p->rules[0];
	assert_string_equal(r->signal, "queue");
	assert_int_equal(r->signal_index, 1);
	assert_int_equal(r->window_ms, 600000);
	assert_int_equal(r->statistic, AGG_MAX);
	assert_int_equal(r->op, OP_GE);
	assert_true(r->threshold == 100.0);
	assert_int_equal(r->direction, DIR_OUT);
	assert_int_equal(r->change, CHANGE_PERCENT);
	assert_true(r->value == 50);
	assert_int_equal(r->cooldown_ms, 120000);
	assert_int_equal(r->line, 33);
	r = &p->rules[1];
	assert_int_equal(r->signal_index, 0);
	assert_int_equal(r->op, OP_LT);
	assert_int_equal(r->direction, DIR_IN);
	assert_int_equal(r->change, CHANGE_EXACT);
	assert_true(r->value == 2);
	/* Defaults of a rule. */
	assert_int_equal(r->window_ms, 300000);
	assert_int_equal(r->statistic, AGG_AVG);
	assert_int_equal(r->cooldown_ms, 300000);

	b = &g->behavior;
	assert_int_equal(b->scale_in.stabilization_ms, 600000);
	assert_int_equal(b->scale_in.select, SELECT_MIN);
	assert_int_equal(b->scale_in.n_policies, 2);
	assert_policy(&b->scale_in.policies[0], POLICY_INSTANCES, 2, 60000);
	assert_policy(&b->scale_in.policies[1], POLICY_PERCENT, 10, 30000);
	assert_int_equal(b->scale_out.stabilization_ms, 30000);
	assert_int_equal(b->scale_out.select, SELECT_DISABLED);
	assert_int_equal(b->scale_out.n_policies, 0);
	assert_int_equal(b->initialization_ms, 120000);
	assert_int_equal(b->on_missing, ON_MISSING_MAX);
	config_free(c);
}

static void test_defaults(void **state)
{
	struct config *c = load_ok("groups = ( { name = \"web\"; driver = \"libvirt\"; min = 2; max = 8;\n"
				   "  signals = ( { name = \"cpu\"; source = \"libvirt_cpu\"; type = \"utilization\"; target = 60;\n"
				   "                poll_interval = 5; } );\n"
				   "  profiles = ( { name = \"night\"; min = 0; max = 2;\n"
				   "                 recurrence = { start = \"22:00\"; end = \"06:00\"; }; } ); } );\n");
	const struct group_conf *g = &c->groups[0];
	const struct behavior_conf *b = &g->behavior;
	const struct profile_conf *p;

	assert_int_equal(c->agent.interval_ms, 15000);
	assert_string_equal(c->agent.state_directory, AUTOSCALED_STATE_DIRECTORY);
	assert_string_equal(c->agent.admin_socket, AUTOSCALED_ADMIN_SOCKET);
	assert_null(c->agent.admin_group);
	assert_null(c->agent.metrics_listen);
	assert_null(c->agent.driver_directory);
	assert_false(c->agent.dry_run);
	assert_int_equal(g->interval_ms, 15000);
	assert_false(g->dry_run);
	assert_int_equal(g->driver_options.n, 0);
	/* The timeout is at most the poll interval, staleness 3 polls. */
	assert_int_equal(g->signals[0].poll_interval_ms, 5000);
	assert_int_equal(g->signals[0].timeout_ms, 5000);
	assert_int_equal(g->signals[0].staleness_ms, 15000);
	assert_int_equal(g->signals[0].window_ms, 60000);

	/* A recurrence over midnight, every day, in UTC. */
	p = &g->profiles[0];
	assert_int_equal(p->kind, PROFILE_RECURRENCE);
	assert_int_equal(p->days, 0x7f);
	assert_int_equal(p->start_minute, 22 * 60);
	assert_int_equal(p->end_minute, 6 * 60);
	assert_string_equal(p->timezone, "UTC");
	assert_non_null(p->tz);
	assert_int_equal(p->def, 0);

	/* The group's min and max form the default profile. */
	assert_int_equal(g->n_profiles, 2);
	p = group_default_profile(g);
	assert_ptr_equal(p, &g->profiles[1]);
	assert_string_equal(p->name, "default");
	assert_int_equal(p->min, 2);
	assert_int_equal(p->max, 8);
	assert_int_equal(p->def, 2);
	assert_int_equal(p->n_rules, 0);
	assert_null(p->timezone);

	assert_int_equal(b->scale_out.stabilization_ms, 0);
	assert_int_equal(b->scale_out.select, SELECT_MAX);
	assert_int_equal(b->scale_out.n_policies, 2);
	assert_policy(&b->scale_out.policies[0], POLICY_INSTANCES, 4, 15000);
	assert_policy(&b->scale_out.policies[1], POLICY_PERCENT, 100, 15000);
	assert_int_equal(b->scale_in.stabilization_ms, 300000);
	assert_int_equal(b->scale_in.select, SELECT_MAX);
	assert_int_equal(b->scale_in.n_policies, 1);
	assert_policy(&b->scale_in.policies[0], POLICY_PERCENT, 100, 15000);
	assert_int_equal(b->initialization_ms, 60000);
	assert_int_equal(b->on_missing, ON_MISSING_HOLD);
	config_free(c);

	/* The agent's dry_run holds for every group; "" turns metrics off. */
	c = load_ok("agent = { dry_run = true; metrics_listen = \"\"; interval = 1.5; };\n"
		    "groups = ( { name = \"web\"; driver = \"libvirt\"; min = 1; max = 1; dry_run = false; } );\n");
	assert_true(c->groups[0].dry_run);
	assert_null(c->agent.metrics_listen);
	assert_int_equal(c->agent.interval_ms, 1500);
	assert_int_equal(c->groups[0].interval_ms, 1500);
	assert_int_equal(c->agent.n_driver_concurrency, 0);
	assert_int_equal(c->agent.history_memory_mib, 3);
	config_free(c);
	c = load_ok("agent = { history_memory = 256; };\n");
	assert_int_equal(c->agent.history_memory_mib, 256);
	config_free(c);

	/* Limits per driver, by the driver's name. */
	c = load_ok("agent = { driver_concurrency = { libvirt = 2; gce-mig = 300; }; };\n");
	assert_int_equal(c->agent.n_driver_concurrency, 2);
	assert_string_equal(c->agent.driver_concurrency[0].driver, "libvirt");
	assert_int_equal(c->agent.driver_concurrency[0].limit, 2);
	assert_string_equal(c->agent.driver_concurrency[1].driver, "gce-mig");
	assert_int_equal(c->agent.driver_concurrency[1].limit, 300);
	config_free(c);
}

static void test_example(void **state)
{
	const char *top = getenv("top_srcdir");
	char path[PATH_MAX];
	struct config *c = NULL;
	struct config_errors e;
	int r;

	assert_non_null(top);
	snprintf(path, sizeof(path), "%s/etc/autoscaled.conf", top);
	r = config_load(path, &c, &e);
	if (r != 0)
		fail_msg("%s does not load: %s", path, e.n ? e.v[0] : "no message");
	assert_int_equal(c->n_groups, 1);
	assert_string_equal(c->groups[0].driver, "libvirt");
	assert_string_equal(options_get_str(&c->groups[0].driver_options, "uri", NULL), "test:///default");
	assert_int_equal(c->groups[0].n_signals, 2);
	assert_int_equal(c->groups[0].n_profiles, 3);
	assert_string_equal(group_default_profile(&c->groups[0])->name, "default");
	config_free(c);
}

static void test_durations(void **state)
{
	static const struct {
		const char *s;
		int64_t ms;
	} good[] = {
		{ "90", 90000 }, { "90s", 90000 }, { "5m", 300000 }, { "2h", 7200000 }, { "1d", 86400000 },
		{ "500ms", 500 }, { "0", 0 }, { "1.5", 1500 }, { "1.5m", 90000 }, { "1h30m", 5400000 },
		{ "0.25s", 250 }, { "90min", 5400000 }, { "1.5h", 5400000 }, { "90sec", 90000 }, { "2d12h", 216000000 },
		{ "1h30m15s500ms", 5415500 }, { "1min30s", 90000 }, { "0.0005s", 1 }, { "36500d", INT64_C(3153600000000) },
	};
	/* Not durations: signs, blanks, unknown or repeated units, units out
	 * of order, a fraction without digits, exponents. */
	static const char *const bad[] = { "", "s", "-5s", "+5s", "5 m", "5x", "1m30", "m5", "1.2.3s", " 5s", "5s ",
					   "1hr", "90mins", "30m1h", "1m1min", "5s5s", "1.s", ".5s", "1e3", "1e3s",
					   "5S", "nan", "inf" };
	/* Beyond the limit of a hundred years, however it is spelt. */
	static const char *const range[] = { "99999999999d", "36501d", "876001h", "99999999999999999999999999",
					     "3153600000001ms" };
	int64_t ms;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ms = -1;
		if (parse_duration_ms(good[i].s, &ms) != 0)
			fail_msg("'%s' refused", good[i].s);
		assert_int_equal(ms, good[i].ms);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ms = 42;
		if (parse_duration_ms(bad[i], &ms) != -EINVAL)
			fail_msg("'%s' accepted", bad[i]);
		assert_int_equal(ms, 42);
	}
	for (size_t i = 0; i < sizeof(range) / sizeof(range[0]); i++) {
		ms = 42;
		if (parse_duration_ms(range[i], &ms) != -ERANGE)
			fail_msg("'%s' not refused as out of range", range[i]);
		assert_int_equal(ms, 42);
	}
	assert_int_equal(parse_duration_ms(NULL, &ms), -EINVAL);
}

static void test_datetimes(void **state)
{
	void *berlin = NULL;
	int64_t ms;

	assert_int_equal(schedule_tz_open("Europe/Berlin", &berlin), 0);
	assert_int_equal(schedule_tz_open("Europe/Berln", &berlin), -ENOENT);
	assert_int_equal(schedule_tz_open("../../etc/passwd", &berlin), -ENOENT);
	assert_int_equal(schedule_tz_open("", &berlin), -ENOENT);
	/* The first hour of summer time in Berlin is 01:00 UTC. */
	assert_int_equal(schedule_parse_datetime("2026-03-29T03:00:00", berlin, &ms), 0);
	assert_int_equal(ms, INT64_C(1774746000000));
	assert_int_equal(schedule_parse_datetime("2026-11-27T08:00:00+01:00", berlin, &ms), 0);
	assert_int_equal(ms, INT64_C(1795762800000));
	assert_int_equal(schedule_parse_datetime("2026-11-27T09:00+0200", NULL, &ms), 0);
	assert_int_equal(ms, INT64_C(1795762800000));
	assert_int_equal(schedule_parse_datetime("2026-11-27T08:00Z", berlin, &ms), 0);
	assert_int_equal(ms, INT64_C(1795766400000));
	assert_int_equal(schedule_parse_datetime("2026-11-27 08:00", NULL, &ms), 0);
	assert_int_equal(ms, INT64_C(1795766400000));
	assert_int_equal(schedule_parse_datetime("2026-01-01", NULL, &ms), 0);
	assert_int_equal(ms, INT64_C(1767225600000));
	ms = 42;
	assert_int_equal(schedule_parse_datetime("2026-13-01", NULL, &ms), -EINVAL);
	assert_int_equal(schedule_parse_datetime("2026-11-27T25:00", NULL, &ms), -EINVAL);
	assert_int_equal(schedule_parse_datetime("2026-11-27T08", NULL, &ms), -EINVAL);
	assert_int_equal(schedule_parse_datetime("2026-11-27T08:00:00+1", NULL, &ms), -EINVAL);
	assert_int_equal(schedule_parse_datetime("2026-11-27T08:00:00 CET", NULL, &ms), -EINVAL);
	assert_int_equal(schedule_parse_datetime("27.11.2026", NULL, &ms), -EINVAL);
	assert_int_equal(ms, 42);
	schedule_tz_close(berlin);
	schedule_tz_close(NULL);
}

static void test_names(void **state)
{
	assert_string_equal(aggregation_name(AGG_P95), "p95");
	assert_string_equal(aggregation_name(AGG_LAST), "last");
	assert_string_equal(signal_type_name(SIGNAL_AVERAGE), "average");
	assert_string_equal(signal_type_name(SIGNAL_UTILIZATION), "utilization");
	assert_string_equal(rule_operator_name(OP_GE), ">=");
	assert_string_equal(rule_operator_name(OP_NE), "!=");
	assert_string_equal(on_missing_name(ON_MISSING_HOLD), "hold");
	assert_string_equal(on_missing_name(ON_MISSING_MAX), "max");
	/* A value outside the enum has no name, not another's. */
	assert_string_equal(aggregation_name((enum aggregation)99), "?");
	assert_string_equal(on_missing_name((enum on_missing)99), "?");
	assert_string_equal(direction_name(DIR_OUT), "out");
	assert_string_equal(direction_name(DIR_IN), "in");
	assert_string_equal(direction_name(DIR_NONE), "none");
	assert_string_equal(direction_name((enum scale_direction)7), "?");
	assert_string_equal(direction_action(DIR_OUT), "scale_out");
	assert_string_equal(direction_action(DIR_IN), "scale_in");
	assert_string_equal(direction_action(DIR_NONE), "none");
	assert_string_equal(direction_noun(DIR_OUT), "scale-out");
	assert_string_equal(direction_noun(DIR_IN), "scale-in");
	assert_string_equal(direction_noun((enum scale_direction)7), "?");
	/* Every name reads back as its direction; "none" only when allowed. */
	{
		const enum scale_direction all[] = {DIR_OUT, DIR_IN, DIR_NONE};
		enum scale_direction d = (enum scale_direction)7;

		for (size_t i = 0; i < 3; i++) {
			assert_int_equal(direction_from_name(direction_name(all[i]), true, &d), 0);
			assert_int_equal(d, all[i]);
		}
		d = (enum scale_direction)7;
		assert_int_equal(direction_from_name("none", false, &d), -EINVAL);
		assert_int_equal(direction_from_name("scale_out", true, &d), -EINVAL);
		assert_int_equal(direction_from_name("OUT", true, &d), -EINVAL);
		assert_int_equal(direction_from_name("", true, &d), -EINVAL);
		assert_int_equal(direction_from_name(NULL, true, &d), -EINVAL);
		assert_int_equal(d, 7);
	}
	/* Destructors accept NULL. */
	config_free(NULL);
	config_errors_clear(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_syntax_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shared_target, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wrong_types, setup, teardown),
		cmocka_unit_test_setup_teardown(test_out_of_range, setup, teardown),
		cmocka_unit_test_setup_teardown(test_forecast_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_list_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rule_values, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bounds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_default_profile, setup, teardown),
		cmocka_unit_test_setup_teardown(test_time_zones_and_dates, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overlapping_fixed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_undefined_signal_messages, setup, teardown),
		cmocka_unit_test_setup_teardown(test_duplicates, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drivers_and_sources, setup, teardown),
		cmocka_unit_test_setup_teardown(test_preflight_drivers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_warm_pool, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wildcard_include, setup, teardown),
		cmocka_unit_test_setup_teardown(test_include_plain_and_missing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fifo_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_every_error_reported, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_valid_read_back, setup, teardown),
		cmocka_unit_test_setup_teardown(test_defaults, setup, teardown),
		cmocka_unit_test(test_example),
		cmocka_unit_test(test_durations),
		cmocka_unit_test(test_datetimes),
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
