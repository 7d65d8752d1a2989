/* Unit tests of the shared cloud code: durations, times, UUIDs, victim
 * order, token freshness, error bodies, secret files. */
#include <errno.h>
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

#include "cloud/auth.h"
#include "cloud/cloud.h"
#include "cloud/rest.h"
#include "agent/driver.h"

static char last_log[512];

static void test_log(const struct autoscaled_host *host, enum autoscaled_log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_log, sizeof(last_log), fmt, ap);
	va_end(ap);
}

static const struct autoscaled_host host = { .abi_version = AUTOSCALED_DRIVER_ABI_VERSION, .struct_size = sizeof(host),
					     .group = "t", .log = test_log };

/* The REST client and the credentials report to a sink, not to a host. */
static void test_sink_log(const struct cloud_sink *s, enum autoscaled_log_level level, const char *msg)
{
	snprintf(last_log, sizeof(last_log), "%s", msg);
}

static const struct cloud_sink sink = { .log = test_sink_log };

/* Duration options of the cloud drivers go through the host's one parser:
 * every form autoscaled.conf(5) names, with the option's FILE:LINE first in
 * a message about a bad one. */
static void durations(void **state)
{
	static const struct {
		const char *text;
		int64_t ms;
	} good[] = {
		{ "30s", 30000 }, { "5m", 300000 }, { "90min", 5400000 }, { "1h30m", 5400000 }, { "1.5h", 5400000 },
		{ "1500ms", 1500 }, { "10", 10000 }, { "2d", 172800000 }, { "2.5", 2500 },
	};
	static const char *const bad[] = { "ten", "-1s", "", "5 m", "30m1h", "1hr", "1e3s" };
	struct autoscaled_host h;
	struct autoscaled_option o = { .key = "operation_timeout", .where = "/etc/a.conf:12" };
	int64_t ms;

	driver_host_init(&h, "t", NULL);
	h.log = test_log;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ms = -1;
		o.value = good[i].text;
		if (cloud_opt_duration(&h, "gce-mig", &o, 1, "operation_timeout", &ms) != 0)
			fail_msg("'%s' refused: %s", good[i].text, last_log);
		assert_int_equal(ms, good[i].ms);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ms = 42;
		o.value = bad[i];
		last_log[0] = '\0';
		if (cloud_opt_duration(&h, "gce-mig", &o, 1, "operation_timeout", &ms) != -EINVAL)
			fail_msg("'%s' accepted", bad[i]);
		assert_int_equal(ms, 42);
		assert_true(strncmp(last_log, "/etc/a.conf:12: gce-mig: option operation_timeout = '", 53) == 0);
	}
	/* A host older than parse_duration: plain seconds still work, and
	 * nothing else is taken for a number. */
	h.struct_size = offsetof(struct autoscaled_host, parse_duration);
	o.value = "2.5";
	assert_int_equal(cloud_opt_duration(&h, "gce-mig", &o, 1, "operation_timeout", &ms), 0);
	assert_int_equal(ms, 2500);
	o.value = "5m";
	assert_int_equal(cloud_opt_duration(&h, "gce-mig", &o, 1, "operation_timeout", &ms), -EINVAL);
}

/* A misspelt or missing option is reported at its FILE:LINE (the driver
 * section's for a missing one) with the near-miss suggestion. */
static void option_errors(void **state)
{
	static const char *const known[] = { "project", "zone", "name", NULL };
	static const char *const required[] = { "project", "name", NULL };
	struct autoscaled_option o[] = {
		{ .key = "projet", .value = "p", .where = "/etc/a.conf:3" },
		{ .key = "name", .value = "web", .where = "/etc/a.conf:4" },
	};
	struct autoscaled_host h;

	driver_host_init(&h, "t", NULL);
	h.log = test_log;
	h.where = "/etc/a.conf:2";
	assert_int_equal(cloud_opt_check_keys(&h, "gce-mig", o, 2, known), -EINVAL);
	assert_string_equal(last_log, "/etc/a.conf:3: gce-mig: unknown option 'projet' (did you mean 'project'?)");
	assert_int_equal(cloud_opt_require(&h, "gce-mig", o, 2, required), -EINVAL);
	assert_string_equal(last_log, "/etc/a.conf:2: gce-mig: missing required option 'project'");
	o[0].key = "project";
	assert_int_equal(cloud_opt_check_keys(&h, "gce-mig", o, 2, known), 0);
	assert_int_equal(cloud_opt_require(&h, "gce-mig", o, 2, required), 0);
}

static void times(void **state)
{
	assert_int_equal(cloud_parse_time("2024-05-01T10:00:00Z"), INT64_C(1714557600000));
	assert_int_equal(cloud_parse_time("2024-05-01T10:00:00.1234567Z"), INT64_C(1714557600123));
	assert_int_equal(cloud_parse_time("2024-05-01T12:00:00+02:00"), INT64_C(1714557600000));
	assert_int_equal(cloud_parse_time("2024-05-01T10:00:00.5-00:00"), INT64_C(1714557600500));
	assert_int_equal(cloud_parse_time("yesterday"), 0);
	assert_int_equal(cloud_parse_time(NULL), 0);
	/* A reply's time that does not exist, or has something after it,
	 * is no time at all: never a day later, never a time without its
	 * offset. */
	assert_int_equal(cloud_parse_time("2024-02-30T10:00:00Z"), 0);
	assert_int_equal(cloud_parse_time("2024-05-01T10:00:00+02"), INT64_C(1714557600000) - 2 * 3600000);
	assert_int_equal(cloud_parse_time("2024-05-01T10:00:00+2:00"), 0);
	assert_int_equal(cloud_parse_time("2024-05-01T10:00:00Z trailing"), 0);
	assert_int_equal(cloud_parse_time("2024-05-01T10:00:00."), 0);
}

static void uuids(void **state)
{
	char a[37], b[37];

	assert_int_equal(rest_uuid4(a), 0);
	assert_int_equal(rest_uuid4(b), 0);
	assert_int_equal(strlen(a), 36);
	assert_true(a[8] == '-' && a[13] == '-' && a[18] == '-' && a[23] == '-');
	assert_int_equal(a[14], '4');
	assert_non_null(strchr("89ab", a[19]));
	assert_string_not_equal(a, b);
}

static void add(struct cloud_members *m, const char *id, enum autoscaled_instance_state st, int64_t created)
{
	struct cloud_member *c = cloud_members_add(m);

	assert_non_null(c);
	snprintf(c->id, sizeof(c->id), "%s", id);
	c->state = st;
	c->created_ms = created;
}

static void victims(void **state)
{
	struct cloud_members m = { 0 };
	size_t idx[8];
	size_t n;

	add(&m, "old", AUTOSCALED_INSTANCE_RUNNING, 1000);
	add(&m, "boot", AUTOSCALED_INSTANCE_PROVISIONING, 500);
	add(&m, "new", AUTOSCALED_INSTANCE_RUNNING, 3000);
	add(&m, "gone", AUTOSCALED_INSTANCE_STOPPING, 4000);
	add(&m, "mid", AUTOSCALED_INSTANCE_RUNNING, 2000);

	n = cloud_pick_victims(&m, 3, CLOUD_VICTIMS_NEWEST, idx);
	assert_int_equal(n, 3);
	assert_string_equal(m.v[idx[0]].id, "boot");
	assert_string_equal(m.v[idx[1]].id, "new");
	assert_string_equal(m.v[idx[2]].id, "mid");

	n = cloud_pick_victims(&m, 2, CLOUD_VICTIMS_OLDEST, idx);
	assert_int_equal(n, 2);
	assert_string_equal(m.v[idx[0]].id, "boot");
	assert_string_equal(m.v[idx[1]].id, "old");

	/* Never more than the live members, never a stopping one. */
	n = cloud_pick_victims(&m, 10, CLOUD_VICTIMS_NEWEST, idx);
	assert_int_equal(n, 4);
	for (size_t i = 0; i < n; i++)
		assert_string_not_equal(m.v[idx[i]].id, "gone");
	assert_int_equal(cloud_pick_victims(&m, -1, CLOUD_VICTIMS_NEWEST, idx), 0);

	/* Named victims: exactly those that live, in the order given; the
	 * others are logged and skipped, and the count is ignored. */
	{
		const char *ids[] = { "mid", "nosuch", "gone", "old" };
		size_t *v;

		last_log[0] = '\0';
		assert_int_equal(cloud_choose_victims(&host, "drv", "VM", "web", &m, 1, ids, 4, CLOUD_VICTIMS_NEWEST, &v,
						      &n), 0);
		assert_int_equal(n, 2);
		assert_string_equal(m.v[v[0]].id, "mid");
		assert_string_equal(m.v[v[1]].id, "old");
		assert_string_equal(last_log, "drv: 'gone' is not a live VM of 'web'; skipped");
		free(v);
		/* No names: the policy picks `count`. */
		assert_int_equal(cloud_choose_victims(&host, "drv", "VM", "web", &m, 2, NULL, 0, CLOUD_VICTIMS_OLDEST, &v,
						      &n), 0);
		assert_int_equal(n, 2);
		assert_string_equal(m.v[v[0]].id, "boot");
		assert_string_equal(m.v[v[1]].id, "old");
		free(v);
	}
	cloud_members_clear(&m);
}

static void carry(void **state)
{
	struct cloud_members prev = { 0 }, cur = { 0 };

	add(&prev, "a", AUTOSCALED_INSTANCE_RUNNING, 100);
	prev.v[0].running_since_ms = 150;
	add(&cur, "a", AUTOSCALED_INSTANCE_RUNNING, 0);
	add(&cur, "b", AUTOSCALED_INSTANCE_PROVISIONING, 0);
	cloud_members_carry(&cur, &prev, 9000);
	assert_int_equal(cur.v[0].created_ms, 100);
	assert_int_equal(cur.v[0].running_since_ms, 150);
	assert_int_equal(cur.v[1].created_ms, 9000);
	assert_int_equal(cur.v[1].running_since_ms, 0);
	cloud_members_clear(&prev);
	cloud_members_clear(&cur);
}

static void tokens(void **state)
{
	struct cloud_token t = { 0 };

	assert_false(cloud_token_fresh(&t, 0));
	assert_int_equal(cloud_token_set(&t, "abc", 3600000, 0), 0);
	assert_true(cloud_token_fresh(&t, 3600000 - 300001));
	assert_false(cloud_token_fresh(&t, 3600000 - 300000));
	assert_int_equal(cloud_token_set(&t, "abc", 2000, 0), 0);
	assert_true(cloud_token_fresh(&t, 1499));
	assert_false(cloud_token_fresh(&t, 1500));
	assert_int_equal(cloud_token_set(&t, "", 2000, 0), -EINVAL);
	/* A token cannot carry a header line of its own. */
	assert_int_equal(cloud_token_set(&t, "abc\r\nX-Evil: 1", 2000, 0), -EINVAL);
	assert_int_equal(cloud_token_set(&t, "ab c", 2000, 0), -EINVAL);
	/* A refused token leaves the one before in place. */
	assert_string_equal(t.value, "abc");
	assert_true(cloud_token_fresh(&t, 1499));
	cloud_token_clear(&t);
	assert_null(t.value);
	assert_false(cloud_token_fresh(&t, 0));
	cloud_token_clear(&t);
}

/* A token is kept in a block of its size, up to REST_MAX_TOKEN - 1 bytes;
 * a longer one is refused and the old one kept (ASan checks the copies). */
static void token_sizes(void **state)
{
	struct cloud_token t = { 0 };
	char *big = malloc(REST_MAX_TOKEN + 1);

	assert_non_null(big);
	memset(big, 'x', REST_MAX_TOKEN);
	big[REST_MAX_TOKEN] = '\0';
	assert_int_equal(cloud_token_set(&t, "short", 2000, 0), 0);
	assert_int_equal(cloud_token_set(&t, big, 2000, 0), -EINVAL);
	assert_string_equal(t.value, "short");
	big[REST_MAX_TOKEN - 1] = '\0';
	assert_int_equal(cloud_token_set(&t, big, 2000, 0), 0);
	assert_int_equal(strlen(t.value), REST_MAX_TOKEN - 1);
	assert_int_equal(cloud_token_set(&t, "y", 2000, 0), 0);
	assert_string_equal(t.value, "y");
	cloud_token_clear(&t);
	free(big);
}

/* An observation kept (as a driver keeps each): it holds only its members,
 * reads the same with the ages carried from the one before, and the one
 * before is freed (ASan); an empty one holds nothing. */
static void members_kept(void **state)
{
	struct cloud_members kept = { 0 }, cur = { 0 };
	char id[16];

	for (int i = 0; i < 5; i++) {
		snprintf(id, sizeof(id), "vm-%d", i);
		add(&cur, id, AUTOSCALED_INSTANCE_RUNNING, 1000 + i);
	}
	assert_int_equal(cur.cap, 16);
	cloud_members_keep(&kept, &cur, 5000);
	assert_null(cur.v);
	assert_int_equal(cur.n, 0);
	assert_int_equal(kept.n, 5);
	assert_int_equal(kept.cap, 5);
	for (int i = 0; i < 5; i++) {
		snprintf(id, sizeof(id), "vm-%d", i);
		assert_non_null(cloud_members_find(&kept, id));
		assert_int_equal(cloud_members_find(&kept, id)->created_ms, 1000 + i);
		assert_int_equal(cloud_members_find(&kept, id)->running_since_ms, 5000);
	}
	/* The next observation: one more member, and no creation time given. */
	for (int i = 0; i < 6; i++) {
		snprintf(id, sizeof(id), "vm-%d", i);
		add(&cur, id, i < 5 ? AUTOSCALED_INSTANCE_RUNNING : AUTOSCALED_INSTANCE_PROVISIONING, 0);
	}
	cloud_members_keep(&kept, &cur, 9000);
	assert_int_equal(kept.n, 6);
	assert_int_equal(kept.cap, 6);
	assert_int_equal(cloud_members_find(&kept, "vm-4")->created_ms, 1004);
	assert_int_equal(cloud_members_find(&kept, "vm-4")->running_since_ms, 5000);
	assert_int_equal(cloud_members_find(&kept, "vm-5")->created_ms, 9000);
	assert_int_equal(cloud_members_find(&kept, "vm-5")->running_since_ms, 0);
	/* An empty observation keeps nothing. */
	cloud_members_keep(&kept, &cur, 9500);
	assert_null(kept.v);
	assert_int_equal(kept.n, 0);
	assert_int_equal(kept.cap, 0);
}

/* A lifetime from the wire never overflows the expiry: a huge expires_in
 * is clamped, and what is not a positive finite number is refused. */
static void token_lifetimes(void **state)
{
	static const struct {
		const char *json;
		int64_t ms;
	} cases[] = {
		{"3599", 3599000},
		{"\"3600\"", 3600000},
		{"0.5", 500},
		{"1e300", CLOUD_TOKEN_MAX_LIFETIME_MS},
		{"\"1e300\"", CLOUD_TOKEN_MAX_LIFETIME_MS},
		{"9223372036854775807", CLOUD_TOKEN_MAX_LIFETIME_MS},
		{"\"1e999\"", -1},
		{"0", -1},
		{"-60", -1},
		{"-1e300", -1},
		{"\"nan\"", -1},
		{"\"inf\"", -1},
		{"\"60s\"", -1},
		{"\"\"", -1},
		{"null", -1},
		{"true", -1},
		{"[3600]", -1},
		{"{\"s\":3600}", -1},
	};
	struct cloud_token t = { 0 };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cJSON *v = cJSON_Parse(cases[i].json);
		int64_t got;

		assert_non_null(v);
		got = cloud_token_lifetime_ms(v);
		cJSON_Delete(v);
		if (got != cases[i].ms)
			fail_msg("expires_in %s: %lld ms, want %lld", cases[i].json, (long long)got,
				 (long long)cases[i].ms);
	}
	/* The longest lifetime still leaves a fresh token for a day. */
	assert_int_equal(cloud_token_set(&t, "abc", INT64_MAX, INT64_C(1800000000000)), 0);
	assert_int_equal(t.expires_ms, INT64_C(1800000000000) + CLOUD_TOKEN_MAX_LIFETIME_MS);
	assert_true(cloud_token_fresh(&t, INT64_C(1800000000000) + 1000));
	assert_int_equal(cloud_token_set(&t, "abc", CLOUD_TOKEN_MAX_LIFETIME_MS, INT64_C(1800000000000)), 0);
	assert_true(cloud_token_fresh(&t, INT64_C(1800000000000) + CLOUD_TOKEN_MAX_LIFETIME_MS - 300001));
	cloud_token_clear(&t);
}

/* Retry-After from the wire: seconds of any length, an HTTP date, or junk;
 * the wait is never negative and never past the client's maximum. */
static void retry_after(void **state)
{
	const int64_t now = INT64_C(1714557600000); /* 2024-05-01T10:00:00Z */
	struct rest_client c;

	assert_int_equal(rest_parse_retry_after("0", now), 0);
	assert_int_equal(rest_parse_retry_after("7", now), 7000);
	assert_int_equal(rest_parse_retry_after("9223372036854775807", now), REST_MAX_RETRY_AFTER_MS);
	assert_int_equal(rest_parse_retry_after("99999999999999999999999999999999", now), REST_MAX_RETRY_AFTER_MS);
	assert_int_equal(rest_parse_retry_after("86401", now), REST_MAX_RETRY_AFTER_MS);
	assert_int_equal(rest_parse_retry_after("Wed, 01 May 2024 10:00:30 GMT", now), 30000);
	assert_int_equal(rest_parse_retry_after("Wed, 01 May 2024 09:00:00 GMT", now), 0);
	assert_int_equal(rest_parse_retry_after("Fri, 31 Dec 9999 23:59:59 GMT", now), REST_MAX_RETRY_AFTER_MS);
	assert_int_equal(rest_parse_retry_after("", now), -1);
	assert_int_equal(rest_parse_retry_after("soon", now), -1);
	assert_int_equal(rest_parse_retry_after("-5", now), -1);
	assert_int_equal(rest_client_init(&c, &sink, "t", REST_POLICY_GCE), 0);
	c.backoff_base_ms = 1000;
	c.backoff_max_ms = 32000;
	assert_int_equal(rest_retry_wait_ms(&c, 1, rest_parse_retry_after("9223372036854775807", now)), 32000);
	assert_int_equal(rest_retry_wait_ms(&c, 1, 5000), 5000);
	assert_int_equal(rest_retry_wait_ms(&c, 1, 0), 0);
	for (int attempt = 1; attempt < 12; attempt++) {
		int64_t w = rest_retry_wait_ms(&c, attempt, -1);

		assert_true(w >= 500 && w <= 32000);
	}
	rest_client_fini(&c);
}

static void error_bodies(void **state)
{
	struct rest_reply r = { .status = 403 };
	char buf[128];

	r.json = cJSON_Parse("{\"error\":{\"code\":403,\"message\":\"Rate Limit Exceeded\",\"errors\":[]}}");
	assert_string_equal(rest_error_message(&r, buf, sizeof(buf)), "Rate Limit Exceeded");
	cJSON_Delete(r.json);
	r.json = cJSON_Parse("{\"error\":{\"code\":\"OperationNotAllowed\",\"message\":\"busy\"}}");
	assert_string_equal(rest_error_message(&r, buf, sizeof(buf)), "OperationNotAllowed: busy");
	cJSON_Delete(r.json);
	r.json = cJSON_Parse("{\"code\":\"BadRequest\",\"message\":\"flat\"}");
	assert_string_equal(rest_error_message(&r, buf, sizeof(buf)), "BadRequest: flat");
	cJSON_Delete(r.json);
	r.json = cJSON_Parse("{\"error\":\"invalid_grant\",\"error_description\":\"Invalid JWT\"}");
	assert_string_equal(rest_error_message(&r, buf, sizeof(buf)), "invalid_grant: Invalid JWT");
	cJSON_Delete(r.json);
	r.json = NULL;
	assert_string_equal(rest_error_message(&r, buf, sizeof(buf)), "HTTP 403");
	assert_int_equal(rest_status_errno(404), -ENOENT);
	assert_int_equal(rest_status_errno(403), -EACCES);
}

static void escaping(void **state)
{
	char out[64], small[4];

	assert_int_equal(rest_escape("a b/c=\"d\"", out, sizeof(out)), 0);
	assert_string_equal(out, "a%20b%2Fc%3D%22d%22");
	assert_int_equal(rest_escape("abcdef", small, sizeof(small)), -ENAMETOOLONG);
}

static void private_files(void **state)
{
	char path[] = "/tmp/test-cloud-XXXXXX", *text = NULL;
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "s3cret\n", 7), 7);
	close(fd);
	assert_int_equal(chmod(path, 0600), 0);
	assert_int_equal(rest_read_private_file(&sink, "t", path, &text, 64), 0);
	assert_string_equal(text, "s3cret");
	free(text);
	assert_int_equal(chmod(path, 0640), 0);
	assert_int_equal(rest_read_private_file(&sink, "t", path, &text, 64), -EPERM);
	assert_non_null(strstr(last_log, "accessible by group or others"));
	assert_null(strstr(last_log, "s3cret"));
	assert_int_equal(chmod(path, 0600), 0);
	assert_int_equal(rest_read_private_file(&sink, "t", path, &text, 3), -EFBIG);
	unlink(path);
	assert_int_equal(rest_read_private_file(&sink, "t", path, &text, 64), -ENOENT);
}

static void base_urls(void **state)
{
	char out[64];

	assert_int_equal(cloud_base_url("metadata.google.internal", "http", out, sizeof(out)), 0);
	assert_string_equal(out, "http://metadata.google.internal");
	assert_int_equal(cloud_base_url("https://management.azure.com/", "https", out, sizeof(out)), 0);
	assert_string_equal(out, "https://management.azure.com");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(durations),      cmocka_unit_test(option_errors), cmocka_unit_test(times),
		cmocka_unit_test(uuids),          cmocka_unit_test(victims),       cmocka_unit_test(carry),
		cmocka_unit_test(tokens),         cmocka_unit_test(token_sizes),   cmocka_unit_test(members_kept),
		cmocka_unit_test(token_lifetimes), cmocka_unit_test(retry_after),  cmocka_unit_test(error_bodies),
		cmocka_unit_test(escaping),       cmocka_unit_test(private_files), cmocka_unit_test(base_urls),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
