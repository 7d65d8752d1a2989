/* Tests of notifications and hooks on a real event loop: the webhook
 * delivered to a Python receiver that checks the HMAC signature itself and
 * fails the first attempt (so the retry is exercised), the command hook
 * receiving the record on stdin, a hook killed at its timeout, and drains
 * in which a failing or hanging hook keeps its victim. The hooks run twice:
 * with pidfd_open(2), and as on a kernel without it (syscall() is wrapped
 * to answer ENOSYS), where their exit is polled. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "sources/http.h"
#include "agent/notify.h"

extern char **environ;

static char dir[64];
static sd_event *event;
static struct http *http;
static struct notifier *notifier;

static const char *record = "{\"group\":\"web\",\"action\":\"scale_out\",\"current\":2,\"desired\":4}";

/* While set, pidfd_open(2) answers ENOSYS, as before Linux 5.3 and under
 * valgrind 3.19. */
static bool no_pidfd;

long __wrap_syscall(long nr, ...);
long __real_syscall(long nr, ...);

/* The daemon's only use of syscall() is pidfd_open(pid, flags). */
long __wrap_syscall(long nr, ...)
{
	va_list ap;
	long pid, flags;

	assert_int_equal(nr, SYS_pidfd_open);
	if (no_pidfd) {
		errno = ENOSYS;
		return -1;
	}
	va_start(ap, nr);
	pid = va_arg(ap, long);
	flags = va_arg(ap, long);
	va_end(ap);
	return __real_syscall(nr, pid, flags);
}

static int setup(void **st)
{
	(void)st;
	no_pidfd = false;
	snprintf(dir, sizeof(dir), "/tmp/test-notify.XXXXXX");
	if (!mkdtemp(dir) || sd_event_new(&event) < 0 || http_new(event, &http) < 0)
		return -1;
	return notifier_new(event, http, 50, &notifier);
}

static int teardown(void **st)
{
	char cmd[128];

	(void)st;
	notifier_free(notifier);
	http_free(http);
	sd_event_unref(event);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Runs the loop until nothing is pending or `ms` pass; returns the time
 * taken in ms. */
static int64_t run_until_idle(int64_t ms)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &b);
		int64_t t = (b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000;

		if (notifier_pending(notifier) == 0 || t > ms)
			return t;
		sd_event_run(event, 20000);
	}
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = calloc(1, (size_t)n + 1);
	if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_sign(void **st)
{
	char out[72];

	(void)st;
	/* RFC 4231, test case 2. */
	assert_int_equal(notify_sign("Jefe", 4, "what do ya want for nothing?", 28, out), 0);
	assert_string_equal(out, "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

static void test_webhook(void **st)
{
	char port_file[128], log_file[128], secret_file[128], script[512], url[128];
	const char *srcdir = getenv("top_srcdir");
	char *argv[7], *port, *log;
	struct notify_conf c = {.webhook_timeout_ms = 2000, .webhook_retries = 3};
	pid_t pid;
	cJSON *a, *b;

	(void)st;
	snprintf(port_file, sizeof(port_file), "%s/port", dir);
	snprintf(log_file, sizeof(log_file), "%s/requests", dir);
	snprintf(secret_file, sizeof(secret_file), "%s/secret", dir);
	snprintf(script, sizeof(script), "%s/tests/helpers/webhook-receiver.py", srcdir ? srcdir : ".");
	write_file(secret_file, "s3cret-value\n");
	assert_int_equal(chmod(secret_file, 0600), 0);
	argv[0] = "python3";
	argv[1] = script;
	argv[2] = port_file;
	argv[3] = log_file;
	argv[4] = "s3cret-value";
	argv[5] = "503,200";
	argv[6] = NULL;
	if (posix_spawnp(&pid, "python3", NULL, NULL, argv, environ) != 0)
		skip();
	/* Up to 20 s for the interpreter to start on a loaded machine; one
	 * that died is seen at once. */
	for (int i = 0; i < 400 && access(port_file, F_OK) != 0; i++) {
		int status;

		if (waitpid(pid, &status, WNOHANG) == pid)
			fail_msg("the webhook receiver exited before it listened (status %d)", status);
		usleep(50000);
	}
	port = slurp(port_file);
	assert_non_null(port);
	snprintf(url, sizeof(url), "http://127.0.0.1:%s/hook", port);
	free(port);
	c.webhook_url = url;
	c.webhook_secret_file = secret_file;

	assert_int_equal(notify_action(notifier, &c, "web", record), 0);
	run_until_idle(5000);
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	assert_int_equal(notifier_pending(notifier), 0);

	/* Two requests: the 503 was retried; both carry the same delivery
	 * id, the record as body and a signature the receiver verified. */
	log = slurp(log_file);
	assert_non_null(log);
	char *nl = strchr(log, '\n');

	assert_non_null(nl);
	*nl = '\0';
	a = cJSON_Parse(log);
	b = cJSON_Parse(nl + 1);
	assert_non_null(a);
	assert_non_null(b);
	assert_string_equal(cJSON_GetObjectItem(a, "body")->valuestring, record);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(a, "signature_ok")));
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(b, "signature_ok")));
	assert_string_equal(cJSON_GetObjectItem(a, "delivery")->valuestring,
			    cJSON_GetObjectItem(b, "delivery")->valuestring);
	assert_string_equal(cJSON_GetObjectItem(a, "content_type")->valuestring, "application/json");
	cJSON_Delete(a);
	cJSON_Delete(b);
	free(log);

	/* An unreadable secret: nothing is sent unsigned. */
	c.webhook_secret_file = "/nonexistent/secret";
	assert_true(notify_action(notifier, &c, "web", record) < 0);
	assert_int_equal(notifier_pending(notifier), 0);

	/* A secret its group or others may read is refused, as the cloud
	 * drivers refuse theirs. */
	c.webhook_secret_file = secret_file;
	assert_int_equal(chmod(secret_file, 0640), 0);
	assert_int_equal(notify_action(notifier, &c, "web", record), -EPERM);
	assert_int_equal(notifier_pending(notifier), 0);
	assert_int_equal(chmod(secret_file, 0604), 0);
	assert_int_equal(notify_action(notifier, &c, "web", record), -EPERM);

	/* A FIFO is refused at once: opening it to read would wait for a
	 * writer (the alarm turns such a hang into a failure). */
	assert_int_equal(unlink(secret_file), 0);
	assert_int_equal(mkfifo(secret_file, 0600), 0);
	alarm(10);
	assert_int_equal(notify_action(notifier, &c, "web", record), -EINVAL);
	alarm(0);
	assert_int_equal(notifier_pending(notifier), 0);
	unlink(secret_file);
}

static void test_webhook_gives_up(void **st)
{
	/* Nothing listens on port 9 of loopback: 1 + 2 attempts, then the
	 * delivery is dropped, after backoffs of 50 and 100 ms, each with
	 * jitter: at least half of each. */
	struct notify_conf c = {.webhook_url = "http://127.0.0.1:9/", .webhook_timeout_ms = 500, .webhook_retries = 2};
	int64_t t;

	(void)st;
	assert_int_equal(notify_action(notifier, &c, "web", record), 0);
	assert_int_equal(notifier_pending(notifier), 1);
	t = run_until_idle(5000);
	assert_int_equal(notifier_pending(notifier), 0);
	assert_true(t >= 75);
}

/* Whether posix_spawn(3) reports a program it cannot execute. glibc's
 * does (its child shares the parent's memory until the exec); under
 * valgrind, which runs that child as a fork, the child exits with 127
 * instead. */
static bool spawn_reports_exec_errors(void)
{
	char *argv[2] = {"/nonexistent/hook", NULL};
	pid_t pid;

	if (posix_spawn(&pid, argv[0], NULL, NULL, argv, environ) != 0)
		return true;
	waitpid(pid, NULL, 0);
	return false;
}

static void test_command_hook(void **st)
{
	char out[128], script[256];
	char *argv[4] = {"/bin/sh", "-c", script, NULL};
	struct notify_conf c = {.command = argv, .n_command = 3, .command_timeout_ms = 5000};
	char *got;

	(void)st;
	snprintf(out, sizeof(out), "%s/record", dir);
	snprintf(script, sizeof(script), "{ cat; echo; echo \"$AUTOSCALED_GROUP $AUTOSCALED_EVENT\"; } > '%s'", out);
	assert_int_equal(notify_action(notifier, &c, "web", record), 0);
	run_until_idle(5000);
	got = slurp(out);
	assert_non_null(got);
	assert_non_null(strstr(got, record));
	assert_non_null(strstr(got, "web action"));
	free(got);

	/* A hook that hangs is killed at its timeout. */
	char *hang[3] = {"/bin/sleep", "30", NULL};

	c.command = hang;
	c.n_command = 2;
	c.command_timeout_ms = 200;
	assert_int_equal(notify_action(notifier, &c, "web", record), 0);
	assert_true(run_until_idle(20000) < 12000);
	assert_int_equal(notifier_pending(notifier), 0);

	/* A command that does not exist is an error, not a crash: at once
	 * where posix_spawn(3) reports it, else by the child's exit. */
	char *missing[2] = {"/nonexistent/hook", NULL};

	c.command = missing;
	c.n_command = 1;
	if (spawn_reports_exec_errors()) {
		assert_true(notify_action(notifier, &c, "web", record) < 0);
	} else {
		assert_int_equal(notify_action(notifier, &c, "web", record), 0);
		assert_true(run_until_idle(20000) < 12000);
	}
	assert_int_equal(notifier_pending(notifier), 0);
}

struct drained {
	bool called;
	char ids[8][32];
	size_t n;
};

static void on_drained(void *userdata, const char *const *ids, size_t n)
{
	struct drained *d = userdata;

	d->called = true;
	d->n = n;
	for (size_t i = 0; i < n && i < 8; i++)
		snprintf(d->ids[i], sizeof(d->ids[i]), "%s", ids[i]);
}

static bool has(const struct drained *d, const char *id)
{
	for (size_t i = 0; i < d->n; i++)
		if (strcmp(d->ids[i], id) == 0)
			return true;
	return false;
}

static void test_drain(void **st)
{
	/* The hook refuses "busy-*" instances, as a drain that cannot move
	 * their work would, and hangs on "stuck-*". */
	char *argv[5] = {"/bin/sh", "-c",
			 "case \"$1\" in busy-*) exit 1;; stuck-*) sleep 30;; esac; "
			 "test \"$1\" = \"$AUTOSCALED_INSTANCE\" && grep -q scale_out",
			 "hook", NULL};
	/* Long enough for a shell and grep on a loaded machine (a browser
	 * test beside it), far below the stuck hook's 30 s. */
	struct notify_conf c = {.pre_scale_in = argv, .n_pre_scale_in = 4, .pre_scale_in_deadline_ms = 2000};
	const char *cand1[] = {"vm-3", "busy-2", "vm-1"};
	const char *cand2[] = {"busy-3", "vm-2", "busy-1"};
	const char *cand3[] = {"stuck-1", "busy-1"};
	struct drained d1 = {0}, d2 = {0}, d3 = {0};

	(void)st;
	/* Two wanted: the busy one is kept and the next candidate taken. */
	assert_int_equal(drain_start(notifier, &c, "web", cand1, 3, 2, record, on_drained, &d1, NULL), 0);
	run_until_idle(20000);
	assert_true(d1.called);
	assert_int_equal(d1.n, 2);
	assert_true(has(&d1, "vm-3"));
	assert_true(has(&d1, "vm-1"));
	assert_false(has(&d1, "busy-2"));

	/* Two wanted, one drainable: only that one goes. */
	assert_int_equal(drain_start(notifier, &c, "web", cand2, 3, 2, record, on_drained, &d2, NULL), 0);
	run_until_idle(20000);
	assert_true(d2.called);
	assert_int_equal(d2.n, 1);
	assert_string_equal(d2.ids[0], "vm-2");

	/* A hook past its deadline keeps its victim; none left: hold. */
	assert_int_equal(drain_start(notifier, &c, "web", cand3, 2, 1, record, on_drained, &d3, NULL), 0);
	assert_true(run_until_idle(20000) < 12000);
	assert_true(d3.called);
	assert_int_equal(d3.n, 0);

	/* A cancelled drain never reports. */
	struct drained d4 = {0};
	struct drain *h;

	assert_int_equal(drain_start(notifier, &c, "web", cand3, 1, 1, record, on_drained, &d4, &h), 0);
	drain_cancel(h);
	assert_int_equal(notifier_pending(notifier), 0);
	run_until_idle(200);
	assert_false(d4.called);
}

static void test_command_hook_polled(void **st)
{
	no_pidfd = true;
	test_command_hook(st);
}

static void test_drain_polled(void **st)
{
	no_pidfd = true;
	test_drain(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sign),
		cmocka_unit_test_setup_teardown(test_webhook, setup, teardown),
		cmocka_unit_test_setup_teardown(test_webhook_gives_up, setup, teardown),
		cmocka_unit_test_setup_teardown(test_command_hook, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_command_hook_polled, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drain_polled, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
