/* Tests of the `notifications` and `hooks` settings: defaults, the agent's
 * values inherited by groups and replaced by a group's own, and the errors
 * a user gets for each kind of mistake. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config/config.h"

static char path[64];

static int setup(void **st)
{
	int fd;

	(void)st;
	snprintf(path, sizeof(path), "/tmp/test-config-notify.XXXXXX");
	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static int teardown(void **st)
{
	(void)st;
	return unlink(path);
}

static int load(const char *text, struct config **c, struct config_errors *e)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	*c = NULL;
	memset(e, 0, sizeof(*e));
	return config_load(path, c, e);
}

#define GROUP(name, extra)                                                                                   \
	"{ name = \"" name "\"; driver = \"libvirt\"; min = 1; max = 4;\n"                                  \
	"  signals = ( { name = \"cpu\"; source = \"libvirt_cpu\"; type = \"utilization\"; target = 60.0; } );\n" \
	extra "}"

static void test_defaults_and_inheritance(void **st)
{
	struct config *c;
	struct config_errors e;
	const struct notify_conf *a, *b;

	(void)st;
	assert_int_equal(load("agent = {\n"
			      "  notifications = {\n"
			      "    webhook = { url = \"http://127.0.0.1:8080/hook\"; secret_file = \"/etc/key\"; };\n"
			      "    command = [ \"/usr/bin/logger\", \"-t\", \"scale\" ];\n"
			      "  };\n"
			      "};\n"
			      "groups = ( " GROUP("a", "") ",\n" GROUP("b", "  notifications = { webhook = { url = \"https://x.example/h\"; "
						      "timeout = \"2s\"; retries = 0; }; };\n"
						      "  hooks = { pre_scale_in = [ \"/usr/local/bin/drain\" ]; deadline = \"90s\"; };\n") " );\n",
			      &c, &e),
			 0);
	a = c->groups[0].notify;
	b = c->groups[1].notify;
	/* Group a takes the agent's notifications and the defaults, shared. */
	assert_ptr_equal(a, &c->agent.notify);
	assert_string_equal(a->webhook_url, "http://127.0.0.1:8080/hook");
	assert_string_equal(a->webhook_secret_file, "/etc/key");
	assert_int_equal(a->webhook_timeout_ms, 10000);
	assert_int_equal(a->webhook_retries, 3);
	assert_int_equal(a->n_command, 3);
	assert_string_equal(a->command[2], "scale");
	assert_null(a->command[3]);
	assert_int_equal(a->command_timeout_ms, 30000);
	assert_null(a->pre_scale_in);
	/* Group b replaces the notifications as a whole. */
	assert_string_equal(b->webhook_url, "https://x.example/h");
	assert_null(b->webhook_secret_file);
	assert_null(b->command);
	assert_int_equal(b->webhook_timeout_ms, 2000);
	assert_int_equal(b->webhook_retries, 0);
	assert_int_equal(b->n_pre_scale_in, 1);
	assert_string_equal(b->pre_scale_in[0], "/usr/local/bin/drain");
	assert_int_equal(b->pre_scale_in_deadline_ms, 90000);
	config_free(c);

	/* Nothing configured: nothing to notify. */
	assert_int_equal(load("groups = ( " GROUP("a", "") " );\n", &c, &e), 0);
	assert_null(group_notify(&c->groups[0])->webhook_url);
	assert_null(group_notify(&c->groups[0])->command);
	assert_int_equal(group_notify(&c->groups[0])->pre_scale_in_deadline_ms, 300000);
	config_free(c);
}

/* One bad setting in a group gives exactly one error mentioning `word`. */
static void expect_error(const char *extra, const char *word)
{
	char text[2048];
	struct config *c;
	struct config_errors e;

	snprintf(text, sizeof(text), "groups = ( { name = \"a\"; driver = \"libvirt\"; min = 1; max = 4;\n"
				     "  signals = ( { name = \"cpu\"; source = \"libvirt_cpu\"; type = \"utilization\"; "
				     "target = 60.0; } );\n%s} );\n",
		 extra);
	assert_int_equal(load(text, &c, &e), -EINVAL);
	assert_null(c);
	if (e.n != 1 || !strstr(e.v[0], word))
		fail_msg("for %s: %zu errors, first: %s (want '%s')", extra, e.n, e.n ? e.v[0] : "none", word);
	/* FILE:LINE first: the setting is on line 3. */
	assert_non_null(strstr(e.v[0], ":3: "));
	config_errors_clear(&e);
}

static void test_errors(void **st)
{
	(void)st;
	expect_error("notifications = { webhook = { url = \"ftp://x\"; }; };\n", "http://");
	expect_error("notifications = { webhook = { secret_file = \"/k\"; }; };\n", "url");
	expect_error("notifications = { webhook = { url = \"http://x\"; secret_file = \"key\"; }; };\n", "absolute");
	expect_error("notifications = { webhook = { url = \"http://x\"; retries = 50; }; };\n", "retries");
	expect_error("notifications = { webhook = { url = \"http://x\"; timeout = \"1h\"; }; };\n", "timeout");
	expect_error("notifications = { webhook = { url = \"http://x\"; sekret = \"/k\"; }; };\n", "sekret");
	expect_error("notifications = { command = [ \"logger\" ]; };\n", "absolute path");
	expect_error("notifications = { command = [ ]; };\n", "list of 1 to");
	expect_error("notifications = { command = \"/bin/true\"; };\n", "list of 1 to");
	expect_error("hooks = { deadline = \"5m\"; };\n", "pre_scale_in");
	expect_error("hooks = { pre_scale_in = [ \"/bin/drain\" ]; deadline = \"soon\"; };\n", "deadline");
	expect_error("hooks = { pre_scale_in = ( \"/bin/drain\", 3 ); };\n", "strings");
	expect_error("notifications = 3;\n", "notifications");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_defaults_and_inheritance, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
