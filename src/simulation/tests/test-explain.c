/* `autoscaled explain`: the decision record of one evaluation, from a config
 * file and the command line, as a user runs it. explain_main() is called
 * directly with stdout and stderr sent to files, so the daemon's main() is
 * not needed. */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "simulation/explain.h"

static const char config_text[] =
	"groups = (\n"
	"  {\n"
	"    name = \"web\";\n"
	"    driver = \"libvirt\";\n"
	"    signals = (\n"
	"      { name = \"cpu\"; source = \"exec\"; source_options = { command = \"true\"; };\n"
	"        type = \"utilization\"; target = 60.0; tolerance = 0.0; },\n"
	"      { name = \"queue\"; source = \"exec\"; source_options = { command = \"true\"; };\n"
	"        type = \"average\"; target = 5.0; }\n"
	"    );\n"
	"    profiles = (\n"
	"      { name = \"default\"; min = 2; max = 8; default = 2; },\n"
	"      { name = \"office\"; min = 4; max = 20; default = 4;\n"
	"        recurrence = { days = [ \"mon\", \"tue\", \"wed\", \"thu\", \"fri\" ]; start = \"08:00\";\n"
	"                       end = \"19:00\"; timezone = \"Europe/Berlin\"; }; }\n"
	"    );\n"
	"    behavior = { scale_in = { stabilization = 0; }; };\n"
	"  }\n"
	");\n";

static char config_path[256];

struct run {
	int rc;
	char out[65536];
	char err[4096];
};

static void slurp(FILE *f, char *buf, size_t len)
{
	size_t n;

	rewind(f);
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
}

/* Runs explain with the given arguments, capturing what it prints. */
static void run_explain(struct run *r, const char *const *args)
{
	char *argv[32];
	int argc = 0, saved_out, saved_err;
	FILE *out = tmpfile(), *err = tmpfile();

	assert_non_null(out);
	assert_non_null(err);
	argv[argc++] = "explain";
	argv[argc++] = "-c";
	argv[argc++] = config_path;
	for (; *args; args++) {
		assert_true(argc < 31);
		argv[argc++] = (char *)*args;
	}
	argv[argc] = NULL;
	fflush(stdout);
	fflush(stderr);
	saved_out = dup(STDOUT_FILENO);
	saved_err = dup(STDERR_FILENO);
	dup2(fileno(out), STDOUT_FILENO);
	dup2(fileno(err), STDERR_FILENO);
	r->rc = explain_main(argc, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(saved_out, STDOUT_FILENO);
	dup2(saved_err, STDERR_FILENO);
	close(saved_out);
	close(saved_err);
	slurp(out, r->out, sizeof(r->out));
	slurp(err, r->err, sizeof(r->err));
	fclose(out);
	fclose(err);
}

/* Runs explain, expects success and returns the parsed record. */
static cJSON *explain_json(const char *const *args)
{
	static struct run r;
	cJSON *j;

	run_explain(&r, args);
	if (r.rc != 0)
		print_error("explain failed (%d): %s\n", r.rc, r.err);
	assert_int_equal(r.rc, 0);
	j = cJSON_Parse(r.out);
	assert_non_null(j);
	return j;
}

static int json_int(const cJSON *j, const char *key)
{
	const cJSON *v = cJSON_GetObjectItem(j, key);

	assert_non_null(v);
	assert_true(cJSON_IsNumber(v));
	return v->valueint;
}

static const char *json_str(const cJSON *j, const char *key)
{
	const cJSON *v = cJSON_GetObjectItem(j, key);

	assert_non_null(v);
	assert_true(cJSON_IsString(v));
	return v->valuestring;
}

static int setup(void **state)
{
	const char *dir = getenv("TMPDIR");
	FILE *f;
	int fd;

	(void)state;
	snprintf(config_path, sizeof(config_path), "%s/test-explain-%ld.conf", dir && *dir ? dir : "/tmp",
		 (long)getpid());
	fd = open(config_path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd < 0)
		return -1;
	f = fdopen(fd, "w");
	if (!f)
		return -1;
	fputs(config_text, f);
	fclose(f);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(config_path);
	return 0;
}

/* DESIGN.md's table: 4 ready, CPU target 60 %, min 2, max 8. The queue is
 * given as 0, which asks for no instance, so CPU alone decides. */
static void test_five_row_table(void **state)
{
	static const struct {
		const char *value;
		int raw, desired;
	} rows[] = { { "cpu=90", 6, 6 }, { "cpu=30", 2, 2 }, { "cpu=180", 12, 8 }, { "cpu=55", 4, 4 }, { "cpu=0", 0, 2 } };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const char *args[] = { "--group", "web", "--current", "4", "--value", rows[i].value,
				       "--value", "queue=0", "--at", "2026-11-28T12:00:00Z", NULL };
		cJSON *j = explain_json(args), *cpu;

		assert_int_equal(json_int(j, "desired"), rows[i].desired);
		assert_string_equal(json_str(j, "profile"), "default");
		cpu = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "signals"), 0);
		assert_string_equal(json_str(cpu, "name"), "cpu");
		assert_int_equal(json_int(cpu, "recommendation"), rows[i].raw);
		cJSON_Delete(j);
	}
}

static void test_record_fields(void **state)
{
	const char *args[] = { "--group", "web", "--current", "4", "--value", "cpu=180", "--value", "queue=0",
			       "--at", "2026-11-28T12:00:00Z", NULL };
	cJSON *j = explain_json(args);

	(void)state;
	assert_string_equal(json_str(j, "time"), "2026-11-28T12:00:00.000Z");
	assert_string_equal(json_str(j, "group"), "web");
	assert_int_equal(json_int(j, "current"), 4);
	assert_int_equal(json_int(j, "min"), 2);
	assert_int_equal(json_int(j, "max"), 8);
	assert_int_equal(json_int(j, "combined"), 12);
	assert_int_equal(json_int(j, "clamped"), 8);
	assert_int_equal(json_int(j, "final"), 8);
	assert_string_equal(json_str(j, "action"), "scale_out");
	assert_non_null(strstr(json_str(j, "explanation"), "cpu 180% vs target 60% -> 12"));
	assert_non_null(strstr(json_str(j, "explanation"), "capped at max 8"));
	cJSON_Delete(j);
}

/* A signal given no --value is missing: it blocks scale-in, never causes it. */
static void test_missing_value_is_invalid(void **state)
{
	const char *low[] = { "--group", "web", "--current", "4", "--value", "cpu=30", "--at",
			      "2026-11-28T12:00:00Z", NULL };
	const char *high[] = { "--group", "web", "--current", "4", "--value", "cpu=90", "--at",
			       "2026-11-28T12:00:00Z", NULL };
	cJSON *j = explain_json(low), *queue;

	(void)state;
	assert_int_equal(json_int(j, "desired"), 4);
	assert_string_equal(json_str(j, "hold"), "invalid_signal");
	queue = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "signals"), 1);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(queue, "valid")));
	assert_non_null(strstr(json_str(queue, "reason"), "no --value"));
	cJSON_Delete(j);
	j = explain_json(high);
	assert_int_equal(json_int(j, "desired"), 6);
	cJSON_Delete(j);
}

/* --ready: instances not ready count 0 on scale-out (HPA). */
static void test_ready(void **state)
{
	const char *args[] = { "--group", "web", "--current", "4", "--ready", "2", "--value", "cpu=150",
			       "--value", "queue=0", "--at", "2026-11-28T12:00:00Z", NULL };
	cJSON *j = explain_json(args);

	(void)state;
	assert_int_equal(json_int(j, "ready"), 2);
	assert_int_equal(json_int(j, "desired"), 5);
	cJSON_Delete(j);
}

/* Monday 30 March 2026, the day after the change to CEST: office hours
 * start at 06:00 UTC, not 07:00. */
static void test_profile_on_dst_day(void **state)
{
	const char *before[] = { "--group", "web", "--current", "4", "--value", "cpu=60", "--value", "queue=0",
				 "--at", "2026-03-30T05:59:00Z", NULL };
	const char *after[] = { "--group", "web", "--current", "4", "--value", "cpu=60", "--value", "queue=0",
				"--at", "2026-03-30T06:00:00Z", NULL };
	cJSON *j = explain_json(before);

	(void)state;
	assert_string_equal(json_str(j, "profile"), "default");
	cJSON_Delete(j);
	j = explain_json(after);
	assert_string_equal(json_str(j, "profile"), "office");
	assert_int_equal(json_int(j, "min"), 4);
	cJSON_Delete(j);
}

static void expect_failure(const char *const *args, const char *message)
{
	static struct run r;

	run_explain(&r, args);
	assert_int_not_equal(r.rc, 0);
	assert_string_equal(r.out, "");
	if (!strstr(r.err, message))
		print_error("stderr was: %s\n", r.err);
	assert_non_null(strstr(r.err, message));
}

static void test_errors(void **state)
{
	const char *unknown_group[] = { "--group", "api", "--current", "4", NULL };
	const char *unknown_signal[] = { "--group", "web", "--current", "4", "--value", "mem=3", NULL };
	const char *bad_number[] = { "--group", "web", "--current", "4", "--value", "cpu=9O", NULL };
	const char *bad_current[] = { "--group", "web", "--current", "four", NULL };
	const char *no_current[] = { "--group", "web", NULL };
	const char *bad_at[] = { "--group", "web", "--current", "4", "--at", "yesterday", NULL };
	const char *ready_above[] = { "--group", "web", "--current", "4", "--ready", "5", NULL };
	const char *bad_fraction[] = { "--group", "web", "--current", "4", "--at", "2026-11-28T12:00:00.Z", NULL };

	(void)state;
	expect_failure(unknown_group, "no group 'api'");
	expect_failure(unknown_signal, "no signal 'mem'");
	expect_failure(bad_number, "'9O'");
	expect_failure(bad_current, "'four'");
	expect_failure(no_current, "--current");
	expect_failure(bad_at, "'yesterday'");
	expect_failure(ready_above, "--ready");
	expect_failure(bad_fraction, "'2026-11-28T12:00:00.Z'");
}

/* A path next to the configuration, for state files. */
static void state_path_of(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s.%s.state", config_path, name);
}

/* Writes a state file as the daemon does, with `extra` members (a pause,
 * a pin) after a clean engine state. */
static void write_state(const char *path, const char *group, const char *extra)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fprintf(f,
		"{\"format\": 1, \"group\": \"%s\", \"saved_ms\": 1796119200000, \"engine\": {\"version\": 1,"
		" \"up_recs\": [], \"down_recs\": [], \"events\": [], \"last_action_ms\": 0,"
		" \"last_action_dir\": \"none\", \"no_scale_in_before_ms\": 0}, \"in_flight\": null%s}\n",
		group, extra);
	assert_int_equal(fclose(f), 0);
}

/* From a clean state the record says so; from a state file the history
 * counts: a scale-out 2 -> 6 started at T and settled at T + 5 s leaves the
 * default rate limit (4 instances or 100 % per 15 s) room for 6 at most,
 * where a clean state goes to 8. */
static void test_state_file(void **state)
{
	char s1[300], s2[300];
	const char *first[] = { "--group", "web", "--current", "2", "--value", "cpu=180", "--value", "queue=0",
				"--at", "2026-11-28T12:00:00Z", "--save-state", s1, NULL };
	const char *second[] = { "--group", "web", "--current", "6", "--value", "cpu=180", "--value", "queue=0",
				 "--at", "2026-11-28T12:00:05.250Z", "--state", s1, "--save-state", s2, NULL };
	const char *clean[] = { "--group", "web", "--current", "6", "--value", "cpu=180", "--value", "queue=0",
				"--at", "2026-11-28T12:00:05Z", NULL };
	cJSON *j;

	(void)state;
	state_path_of(s1, sizeof(s1), "1");
	state_path_of(s2, sizeof(s2), "2");
	j = explain_json(first);
	assert_int_equal(json_int(j, "desired"), 6); /* the rate limit: 2 + 4 */
	assert_string_equal(json_str(j, "start"), "empty_state");
	assert_non_null(strstr(json_str(j, "explanation"), "starting from an empty state"));
	cJSON_Delete(j);
	j = explain_json(second);
	assert_string_equal(json_str(j, "start"), "state_file");
	/* A record's own time replays to the millisecond. */
	assert_string_equal(json_str(j, "time"), "2026-11-28T12:00:05.250Z");
	assert_null(strstr(json_str(j, "explanation"), "empty state"));
	assert_int_equal(json_int(j, "desired"), 6);
	assert_string_equal(json_str(j, "hold"), "rate_limit");
	cJSON_Delete(j);
	j = explain_json(clean);
	assert_int_equal(json_int(j, "desired"), 8);
	cJSON_Delete(j);
	unlink(s1);
	unlink(s2);
}

/* A pause and a pin come from the state file, --partial and --in-flight
 * from the command line: each holds with its own reason, as in the daemon. */
static void test_agent_inputs(void **state)
{
	char path[300];
	const char *down[] = { "--group", "web", "--current", "6", "--value", "cpu=30", "--value", "queue=0",
			       "--at", "2026-11-28T12:00:00Z", "--state", path, NULL };
	const char *partial[] = { "--group", "web", "--current", "6", "--value", "cpu=30", "--value", "queue=0",
				  "--at", "2026-11-28T12:00:00Z", "--partial", NULL };
	const char *busy[] = { "--group", "web", "--current", "6", "--value", "cpu=30", "--value", "queue=0",
			       "--at", "2026-11-28T12:00:00Z", "--in-flight", "out", NULL };
	const char *sideways[] = { "--group", "web", "--current", "6", "--in-flight", "sideways", NULL };
	const char *up[] = { "--group", "web", "--current", "4", "--value", "cpu=90", "--value", "queue=0",
			     "--at", "2026-11-28T12:00:00Z", NULL };
	const char *hosts[] = { "--group", "web", "--current", "4", "--value", "cpu=90", "--value", "queue=0",
				"--at", "2026-11-28T12:00:00Z", "--host-room", "1", NULL };
	const char *no_room[] = { "--group", "web", "--current", "4", "--host-room", "-1", NULL };
	const char *missing[] = { "--group", "web", "--current", "6", "--state", "/nonexistent/web.state", NULL };
	const char *foreign[] = { "--group", "web", "--current", "6", "--state", path, NULL };
	cJSON *j;

	(void)state;
	state_path_of(path, sizeof(path), "agent");
	write_state(path, "web", ", \"pause\": {\"until_ms\": 0}, \"pin\": null");
	j = explain_json(down);
	assert_string_equal(json_str(j, "hold"), "paused");
	assert_string_equal(json_str(j, "override"), "paused");
	assert_int_equal(json_int(j, "desired"), 6);
	cJSON_Delete(j);
	write_state(path, "web", ", \"pause\": null, \"pin\": {\"count\": 7, \"until_ms\": 0, \"forced\": false}");
	j = explain_json(down);
	assert_string_equal(json_str(j, "hold"), "pinned");
	assert_string_equal(json_str(j, "action"), "scale_out");
	assert_int_equal(json_int(j, "desired"), 7);
	cJSON_Delete(j);
	j = explain_json(partial);
	assert_string_equal(json_str(j, "hold"), "partial_observation");
	assert_int_equal(json_int(j, "desired"), 6);
	cJSON_Delete(j);
	j = explain_json(busy);
	assert_string_equal(json_str(j, "hold"), "driver_busy");
	assert_int_equal(json_int(j, "desired"), 6);
	cJSON_Delete(j);
	expect_failure(sideways, "--in-flight 'sideways'");
	/* --host-room: the hosts take one more, so a scale-out goes to 5. */
	j = explain_json(up);
	assert_true(json_int(j, "desired") > 5);
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "inputs"), "host_room")));
	cJSON_Delete(j);
	j = explain_json(hosts);
	assert_string_equal(json_str(j, "hold"), "host_capacity");
	assert_string_equal(json_str(j, "action"), "scale_out");
	assert_int_equal(json_int(j, "desired"), 5);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "inputs"), "host_room")->valueint, 1);
	assert_non_null(strstr(json_str(j, "explanation"), "capped by hosts, not by max: they can take 1 more"));
	cJSON_Delete(j);
	expect_failure(no_room, "--host-room '-1' is not a count");
	expect_failure(missing, "cannot use '/nonexistent/web.state' as the state of group 'web'");
	write_state(path, "api", "");
	expect_failure(foreign, "as the state of group 'web'");
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_five_row_table),
		cmocka_unit_test(test_record_fields),
		cmocka_unit_test(test_missing_value_is_invalid),
		cmocka_unit_test(test_ready),
		cmocka_unit_test(test_profile_on_dst_day),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_state_file),
		cmocka_unit_test(test_agent_inputs),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
