/* Unit tests for reloads at the level of the group runtime, on the
 * filepool test driver (tests/helpers/filepool.c), which logs every call
 * it receives into a file:
 *   - config_group_equal() tells an unchanged group from a changed one,
 *     whatever moved around it in the file;
 *   - a runtime built for changed driver options while a scale-out runs
 *     takes that call over: the pool receives one set_capacity, and the
 *     group ends at the target having observed it through its new handle;
 *     its unchanged signal keeps its source, which is not polled again;
 *   - one built for a changed signal takes the driver instance over, with
 *     the call in flight;
 *   - a runtime pointed at an equal configuration (group_rt_rebind) goes on
 *     as it was, without polling its sources again, after the
 *     configuration it was built with is freed.
 * The steps are those of agent_reload(); the loop runs until a condition
 * holds, within a deadline. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>
#include <systemd/sd-event.h>

#include "base/iso8601.h"
#include "config/config.h"
#include "agent/group.h"
#include "agent/state-writer.h"

static char dir[64];
static char drivers[4096];
static sd_event *event;

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Runs the loop until cond(arg) holds; false after timeout_ms. */
static bool run_until(bool (*cond)(void *), void *arg, int timeout_ms)
{
	int64_t end = mono_ms() + timeout_ms;

	while (!cond(arg)) {
		if (mono_ms() > end)
			return false;
		sd_event_run(event, 50 * 1000);
	}
	return true;
}

static void path_of(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

/* Lines of file `name` that start with `prefix`. */
static int count_lines(const char *name, const char *prefix)
{
	char path[128], line[256];
	int n = 0;
	FILE *f;

	path_of(path, sizeof(path), name);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		/* Call log lines start with a time. */
		const char *p = strchr(line, ' ');

		if (strncmp(line, prefix, strlen(prefix)) == 0 || (p && strncmp(p + 1, prefix, strlen(prefix)) == 0))
			n++;
	}
	fclose(f);
	return n;
}

static void write_file(const char *name, const char *text)
{
	char path[128];
	FILE *f;

	path_of(path, sizeof(path), name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* Writes and loads a configuration with one group "web" on filepool.
 * `lead` goes before everything (blank lines shift the rest), `step_ms`
 * is a driver option and `target` the signal's. */
static struct config *load(const char *lead, int step_ms, double target)
{
	char path[128], polls[128], pool[128], calls[128];
	struct config_errors errs = {0};
	struct config *c = NULL;
	FILE *f;
	int r;

	path_of(path, sizeof(path), "autoscaled.conf");
	path_of(polls, sizeof(polls), "polls");
	path_of(pool, sizeof(pool), "pool");
	path_of(calls, sizeof(calls), "calls");
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f,
		"%s"
		"agent = { interval = \"1s\"; state_directory = \"%s\"; driver_directory = \"%s\"; };\n"
		"groups = ( {\n"
		"  name = \"web\"; driver = \"filepool\"; min = 1; max = 8;\n"
		"  driver_options = { pool = \"%s\"; calls = \"%s\"; step_ms = %d; };\n"
		"  signals = ( { name = \"queue\"; source = \"exec\"; type = \"average\"; target = %g;\n"
		"    source_options = { command = [ \"/bin/sh\", \"-c\", \"echo poll >> '%s'; echo 40\" ]; };\n"
		"    poll_interval = \"1h\"; } );\n"
		"  behavior = { scale_out = { policies = ( ); }; };\n"
		"} );\n",
		lead, dir, drivers, pool, calls, step_ms, target, polls);
	fclose(f);
	r = config_load(path, &c, &errs);
	for (size_t i = 0; i < errs.n; i++)
		fprintf(stderr, "# %s\n", errs.v[i]);
	config_errors_clear(&errs);
	assert_int_equal(r, 0);
	return c;
}

static int setup(void **st)
{
	(void)st;
	snprintf(dir, sizeof(dir), "/tmp/test-reload.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	/* One instance at the start, so that every call is the test's. */
	write_file("pool", "next 2\nvm-1 1000\n");
	write_file("calls", "");
	write_file("polls", "");
	return 0;
}

static int teardown(void **st)
{
	char cmd[128];

	(void)st;
	/* As the daemon does when it stops: the evaluations' saves land
	 * before the directory goes. */
	state_writer_flush();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_group_equal(void **st)
{
	struct config *a = load("", 0, 10), *same = load("\n\n# moved down\n", 0, 10);
	struct config *step = load("", 5, 10), *target = load("", 0, 11);

	(void)st;
	assert_true(config_group_equal(&a->groups[0], &same->groups[0]));
	assert_int_not_equal(a->groups[0].line, same->groups[0].line);
	assert_true(config_options_equal(&a->groups[0].driver_options, &same->groups[0].driver_options));
	assert_false(config_group_equal(&a->groups[0], &step->groups[0]));
	assert_false(config_options_equal(&a->groups[0].driver_options, &step->groups[0].driver_options));
	assert_false(config_group_equal(&a->groups[0], &target->groups[0]));
	assert_true(config_options_equal(&a->groups[0].driver_options, &target->groups[0].driver_options));
	config_free(a);
	config_free(same);
	config_free(step);
	config_free(target);
}

static bool scale_out_started(void *arg)
{
	(void)arg;
	return count_lines("calls", "set_capacity 1 4") == 1;
}

struct settled {
	struct group_rt *g;
	int64_t after_ms;
};

/* The group's last decision (group_rt_last()), made whole in a buffer of
 * the test's: read it before the next call. */
static const struct decision *last_of(const struct group_rt *g)
{
	static struct decision buf;

	return group_rt_last(g, &buf);
}

/* The group observed 4 and decided again on what it observed later. */
static bool settled_at_4(void *arg)
{
	struct settled *s = arg;
	const struct decision *d = last_of(s->g);
	bool observed;

	return group_rt_current(s->g, &observed) == 4 && observed && d && d->time_ms > s->after_ms &&
	       d->current == 4;
}

/* A reload that changes the group: a new runtime of C2 takes G1's over,
 * and G1 and C1 go, as agent_reload() does. Returns the new runtime, not
 * started. */
static struct group_rt *replace(struct group_ctx *ctx, struct group_rt *g1, struct config *c1, struct config *c2)
{
	struct group_rt *g2 = NULL;

	assert_false(config_group_equal(&c1->groups[0], &c2->groups[0]));
	ctx->agent_conf = &c2->agent;
	assert_int_equal(group_rt_new(ctx, &c2->groups[0], g1, &g2), 0);
	group_rt_adopt(g2, g1);
	group_rt_stop(g1);
	group_rt_free(g1);
	config_free(c1);
	return g2;
}

static void test_driver_change_during_scale_out(void **st)
{
	struct config *c1 = load("", 400, 10), *c2;
	struct group_ctx ctx = {.event = event, .agent_conf = &c1->agent};
	struct group_rt *g1 = NULL, *g2;
	struct settled s;
	bool observed;

	(void)st;
	assert_int_equal(group_rt_new(&ctx, &c1->groups[0], NULL, &g1), 0);
	group_rt_start(g1);
	assert_true(run_until(scale_out_started, NULL, 10000));

	/* The reload: a new runtime for new driver options, then the swap. */
	c2 = load("", 401, 10);
	g2 = replace(&ctx, g1, c1, c2);
	group_rt_start(g2);

	/* Done, and decided again at least a second after the call ended. */
	s = (struct settled){.g = g2, .after_ms = wall_ms() + 3 * 400 + 1000};
	assert_true(run_until(settled_at_4, &s, 15000));
	assert_int_equal(count_lines("calls", "set_capacity"), 1);
	assert_int_equal(count_lines("pool", "vm-"), 4);
	assert_int_equal(count_lines("pool", "next 5"), 1);
	assert_int_equal(group_rt_current(g2, &observed), 4);
	assert_int_equal(group_rt_state(g2)->in_flight.direction, DIR_NONE);
	/* Its signal did not change: its source went over as it was. */
	assert_int_equal(count_lines("polls", "poll"), 1);
	group_rt_stop(g2);
	group_rt_free(g2);
	config_free(c2);
}

/* Only the signal's target changes: the new runtime takes the old one's
 * driver instance and its call in flight as they are. */
static void test_policy_change_during_scale_out(void **st)
{
	struct config *c1 = load("", 400, 10), *c2;
	struct group_ctx ctx = {.event = event, .agent_conf = &c1->agent};
	struct group_rt *g1 = NULL, *g2;
	struct settled s;

	(void)st;
	assert_int_equal(group_rt_new(&ctx, &c1->groups[0], NULL, &g1), 0);
	group_rt_start(g1);
	assert_true(run_until(scale_out_started, NULL, 10000));

	c2 = load("", 400, 11);
	g2 = replace(&ctx, g1, c1, c2);
	group_rt_start(g2);

	s = (struct settled){.g = g2, .after_ms = wall_ms() + 3 * 400 + 1000};
	assert_true(run_until(settled_at_4, &s, 15000));
	assert_int_equal(count_lines("calls", "set_capacity"), 1);
	assert_int_equal(count_lines("pool", "vm-"), 4);
	assert_int_equal(group_rt_state(g2)->in_flight.direction, DIR_NONE);
	group_rt_stop(g2);
	group_rt_free(g2);
	config_free(c2);
}

static bool decided_after(void *arg)
{
	struct settled *s = arg;
	const struct decision *d = last_of(s->g);

	return d && d->time_ms > s->after_ms;
}

static void test_rebind_keeps_runtime(void **st)
{
	struct config *c1 = load("", 0, 10), *c2;
	struct group_ctx ctx = {.event = event, .agent_conf = &c1->agent};
	struct group_rt *g = NULL;
	struct settled s;

	(void)st;
	assert_int_equal(group_rt_new(&ctx, &c1->groups[0], NULL, &g), 0);
	group_rt_start(g);
	s = (struct settled){.g = g, .after_ms = 0};
	assert_true(run_until(decided_after, &s, 10000));
	assert_int_equal(count_lines("polls", "poll"), 1);

	c2 = load("\n", 0, 10);
	assert_true(config_group_equal(group_rt_conf(g), &c2->groups[0]));
	ctx.agent_conf = &c2->agent;
	group_rt_rebind(g, &c2->groups[0]);
	config_free(c1);
	assert_ptr_equal(group_rt_conf(g), &c2->groups[0]);
	assert_ptr_equal(last_of(g)->group, c2->groups[0].name);

	/* Two more evaluations on the kept runtime and its kept sample. */
	s.after_ms = wall_ms() + 1500;
	assert_true(run_until(decided_after, &s, 10000));
	assert_int_equal(count_lines("polls", "poll"), 1);
	assert_true(last_of(g)->signals[0].valid);
	group_rt_stop(g);
	group_rt_free(g);
	config_free(c2);
}

static bool decided_twice(void *arg)
{
	struct settled *s = arg;
	const struct decision *d = last_of(s->g);

	if (d && !s->after_ms)
		s->after_ms = d->time_ms;
	return d && d->time_ms > s->after_ms;
}

/* The replaced runtime's newest record, not made yet when the reload
 * comes (a steady hold), is made on its configuration and kept in the
 * history the new runtime takes over. */
static void test_reload_keeps_pending_record(void **st)
{
	struct config *c1 = load("", 0, 40), *c2;
	struct group_ctx ctx = {.event = event, .agent_conf = &c1->agent};
	struct group_rt *g1 = NULL, *g2;
	struct settled s = {0};
	char when[48];
	cJSON *o, *a, *newest;
	int64_t last_ms;

	(void)st;
	assert_int_equal(group_rt_new(&ctx, &c1->groups[0], NULL, &g1), 0);
	s.g = g1;
	group_rt_start(g1);
	assert_true(run_until(decided_twice, &s, 10000));
	last_ms = last_of(g1)->time_ms;
	assert_int_equal(last_of(g1)->action, DIR_NONE);

	c2 = load("", 0, 41);
	g2 = replace(&ctx, g1, c1, c2);

	o = group_admin_decisions(g2);
	a = cJSON_GetObjectItem(o, "decisions");
	assert_int_equal(cJSON_GetArraySize(a), 2);
	newest = cJSON_GetArrayItem(a, 1);
	assert_int_equal(iso8601_format(last_ms, ISO8601_MILLIS, when, sizeof(when)), 0);
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(newest, "time")), when);
	assert_int_equal(cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(newest, "signals"), 0), "target")), 40);
	cJSON_Delete(o);
	group_rt_free(g2);
	config_free(c2);
}

int main(void)
{
	const char *top = getenv("top_builddir");
	struct stat sb;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_group_equal, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reload_keeps_pending_record, setup, teardown),
		cmocka_unit_test_setup_teardown(test_driver_change_during_scale_out, setup, teardown),
		cmocka_unit_test_setup_teardown(test_policy_change_during_scale_out, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rebind_keeps_runtime, setup, teardown),
	};
	int r;

	snprintf(drivers, sizeof(drivers), "%s/tests/helpers/.libs", top ? top : ".");
	if (stat(drivers, &sb) < 0) {
		printf("1..0 # SKIP the filepool test driver is not built\n");
		return 0;
	}
	/* The environment's driver directory is searched first. */
	setenv("AUTOSCALED_DRIVER_DIR", drivers, 1);
	if (sd_event_default(&event) < 0)
		return 1;
	r = cmocka_run_group_tests(tests, NULL, NULL);
	sd_event_unref(event);
	return r;
}
