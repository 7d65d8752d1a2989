/* Journal records: the fields sent with a message, and those of a
 * decision (the journal itself cannot be observed in the tests, so the
 * one function that builds every record is checked here). */
#include <errno.h>
#include <fcntl.h>
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

#include "engine/engine.h"
#include "log/log-ids.h"
#include "log/log.h"

static void test_record_fields(void **state)
{
	struct log_record r;
	const struct log_field f[] = {{"RESULT", "done"}, {"SKIPPED", NULL}, {"NOTE", "two\nlines"}};

	(void)state;
	assert_int_equal(log_record_build(&r, LOG_INFO, "web", LOG_ID_RELOAD, f, 3, "agent: reloaded"), 0);
	assert_int_equal(r.n, 7);
	assert_string_equal(r.v[0], "MESSAGE=agent: reloaded");
	assert_string_equal(r.v[1], "PRIORITY=6");
	assert_string_equal(r.v[2], "SYSLOG_IDENTIFIER=autoscaled");
	assert_string_equal(r.v[3], "MESSAGE_ID=" LOG_ID_RELOAD);
	assert_string_equal(r.v[4], "GROUP=web");
	assert_string_equal(r.v[5], "RESULT=done");
	/* Sent with sd_journal_sendv(), a value may hold a newline. */
	assert_string_equal(r.v[6], "NOTE=two\nlines");
	log_record_free(&r);
	assert_int_equal(r.n, 0);

	/* Neither a group nor an id: only the three fields every record has. */
	assert_int_equal(log_record_build(&r, LOG_DEBUG, NULL, NULL, NULL, 0, "m"), 0);
	assert_int_equal(r.n, 3);
	assert_string_equal(r.v[1], "PRIORITY=7");
	log_record_free(&r);
}

static void test_record_too_many(void **state)
{
	struct log_field f[LOG_MAX_FIELDS + 1];
	struct log_record r;

	(void)state;
	for (size_t i = 0; i < LOG_MAX_FIELDS + 1; i++)
		f[i] = (struct log_field){"F", "v"};
	assert_int_equal(log_record_build(&r, LOG_INFO, "g", LOG_ID_ACTION, f, LOG_MAX_FIELDS + 1, "m"), -E2BIG);
	assert_int_equal(r.n, 0);
	/* The most there may be, with a group and an id, fits. */
	assert_int_equal(log_record_build(&r, LOG_INFO, "g", LOG_ID_ACTION, f, LOG_MAX_FIELDS, "m"), 0);
	assert_int_equal(r.n, LOG_MAX_FIELDS + 5);
	log_record_free(&r);
}

static const char *find(const struct log_record *r, const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; i < r->n; i++)
		if (strncmp(r->v[i], name, n) == 0 && r->v[i][n] == '=')
			return r->v[i] + n + 1;
	return NULL;
}

static void test_decision_fields(void **state)
{
	struct decision d = {
		.profile = "business-hours",
		.current = 3,
		.desired = 5,
		.action = DIR_OUT,
		.hold = HOLD_NONE,
	};
	struct log_field f[1 + DECISION_JOURNAL_FIELDS] = {{"DECISION", "{\"action\":\"scale_out\"}"}};
	struct decision_field_buf buf;
	struct log_record r;
	size_t n;

	(void)state;
	n = 1 + decision_journal_fields(&d, &buf, f + 1);
	assert_int_equal(log_record_build(&r, LOG_INFO, "web", LOG_ID_DECISION, f, n, "scale out"), 0);
	assert_string_equal(find(&r, "MESSAGE_ID"), LOG_ID_DECISION);
	assert_string_equal(find(&r, "GROUP"), "web");
	assert_string_equal(find(&r, "DECISION"), "{\"action\":\"scale_out\"}");
	assert_string_equal(find(&r, "ACTION"), "scale_out");
	assert_string_equal(find(&r, "HOLD"), decision_hold_name(HOLD_NONE));
	assert_string_equal(find(&r, "PROFILE"), "business-hours");
	assert_string_equal(find(&r, "DESIRED"), "5");
	assert_string_equal(find(&r, "CURRENT"), "3");
	log_record_free(&r);

	d.action = DIR_IN;
	d.desired = 2;
	d.hold = HOLD_RULE_NOT_FIRED;
	n = 1 + decision_journal_fields(&d, &buf, f + 1);
	assert_int_equal(log_record_build(&r, LOG_DEBUG, "web", LOG_ID_DECISION, f, n, "scale in"), 0);
	assert_string_equal(find(&r, "ACTION"), "scale_in");
	assert_string_equal(find(&r, "HOLD"), decision_hold_name(HOLD_RULE_NOT_FIRED));
	assert_string_equal(find(&r, "DESIRED"), "2");
	log_record_free(&r);
}

/* Each kind of message has its own id: 32 lower-case hex digits. */
static void test_ids(void **state)
{
	const char *ids[] = {LOG_ID_DECISION, LOG_ID_ACTION, LOG_ID_ACTION_FAILED, LOG_ID_RELOAD};

	(void)state;
	for (size_t i = 0; i < 4; i++) {
		assert_int_equal(strlen(ids[i]), 32);
		assert_int_equal(strspn(ids[i], "0123456789abcdef"), 32);
		for (size_t j = 0; j < i; j++)
			assert_string_not_equal(ids[i], ids[j]);
	}
}

/* Runs FN with stderr sent to a temporary file and returns what it wrote
 * (malloc'ed), so that the plain-text lines of the foreground can be read. */
static char *capture_stderr(void (*fn)(void *), void *arg)
{
	char path[] = "/tmp/test-log.XXXXXX";
	int fd = mkstemp(path);
	int saved = dup(STDERR_FILENO);
	char *out = calloc(1, 4096);
	ssize_t n;

	assert_true(fd >= 0 && saved >= 0 && out);
	unlink(path);
	fflush(stderr);
	assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
	fn(arg);
	fflush(stderr);
	assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
	close(saved);
	n = pread(fd, out, 4095, 0);
	assert_true(n >= 0);
	close(fd);
	return out;
}

struct errno_case {
	int ret[8];
	int errno_after;
};

static void log_errno_calls(void *arg)
{
	struct errno_case *c = arg;

	log_set_target(LOG_TARGET_STDERR);
	log_set_verbose(false);
	errno = EAGAIN;
	c->ret[0] = log_err_errno(-ENOENT, "state: cannot read '%s'", "web.json");
	c->ret[1] = log_warn_errno(-EACCES, "admin: cannot bind '%s'", "/run/x");
	c->ret[2] = log_group_errno(LOG_ERR, "web", -EIO, "driver '%s' failed", "libvirt");
	/* A positive errno is taken as its negation. */
	c->ret[3] = log_notice_errno(ETIMEDOUT, "webhook: giving up");
	c->ret[4] = log_info_errno(-EPIPE, "exec: '%s' closed its output", "probe");
	/* Not shown without verbose, and still returned. */
	c->ret[5] = log_debug_errno(-EBUSY, "hidden");
	/* Control characters in a value are escaped; the errno text follows. */
	c->ret[6] = log_group_errno(LOG_WARNING, "db", -ENOMEM, "peer said '%s'", "a\nb");
	c->ret[7] = log_fields_errno(LOG_ERR, "web", LOG_ID_ACTION_FAILED, NULL, 0, -EROFS, "scale-out from %d to %d failed",
				     1, 2);
	c->errno_after = errno;
}

static void test_errno_functions(void **state)
{
	struct errno_case c;
	char *out;

	(void)state;
	out = capture_stderr(log_errno_calls, &c);
	assert_int_equal(c.ret[0], -ENOENT);
	assert_int_equal(c.ret[1], -EACCES);
	assert_int_equal(c.ret[2], -EIO);
	assert_int_equal(c.ret[3], -ETIMEDOUT);
	assert_int_equal(c.ret[4], -EPIPE);
	assert_int_equal(c.ret[5], -EBUSY);
	assert_int_equal(c.ret[6], -ENOMEM);
	assert_int_equal(c.ret[7], -EROFS);
	/* Logging leaves errno as it found it. */
	assert_int_equal(c.errno_after, EAGAIN);
	assert_string_equal(out, "error: state: cannot read 'web.json': No such file or directory\n"
				 "warning: admin: cannot bind '/run/x': Permission denied\n"
				 "error: web: driver 'libvirt' failed: Input/output error\n"
				 "webhook: giving up: Connection timed out\n"
				 "exec: 'probe' closed its output: Broken pipe\n"
				 "warning: db: peer said 'a\\nb': Cannot allocate memory\n"
				 "error: web: scale-out from 1 to 2 failed: Read-only file system\n");
	free(out);
}

static void log_warn_call(void *arg)
{
	(void)arg;
	errno = EROFS;
	log_warn("trace: cannot open '%s'", "t.csv");
}

/* log_warn() appends the text of errno as it is when called. */
static void test_warn_appends_errno(void **state)
{
	char *out;

	(void)state;
	out = capture_stderr(log_warn_call, NULL);
	assert_string_equal(out, "warning: trace: cannot open 't.csv': Read-only file system\n");
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_record_fields),
		cmocka_unit_test(test_record_too_many),
		cmocka_unit_test(test_decision_fields),
		cmocka_unit_test(test_ids),
		cmocka_unit_test(test_errno_functions),
		cmocka_unit_test(test_warn_appends_errno),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
