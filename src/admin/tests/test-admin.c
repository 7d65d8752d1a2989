/* Unit tests for the admin API over its Unix socket: every endpoint, the
 * codes of bad requests (400, 404, 405, 409, 413), the socket's mode, and
 * the decision ring; the status page's read-only view of them and its HTML.
 * The operations behind the endpoints are a small model of one group here;
 * the daemon's own are tested by the integration tests. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>
#include <curl/curl.h>

#include "admin/admin.h"
#include "admin/httpd.h"
#include "admin/status-page.h"
#include "base/host.h"
#include "loop-http.h"

#define NOW INT64_C(1764680000000)

/* The model: one group "web" with bounds [1, 10]. */
struct model {
	bool paused;
	int64_t pause_until;
	bool pinned;
	int pin;
	int64_t pin_until;
	bool force;
	int dry;
	int reloads;
	bool reload_fails;
	struct admin_what_if what_if; /* the last one asked (its names copied) */
	char what_if_names[ADMIN_WHAT_IF_MAX_VALUES][32];
};

static struct model M;
static struct admin_ring ring;

static bool known(const char *g)
{
	return strcmp(g, "web") == 0;
}

static cJSON *op_health(void *u)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "status", "ok");
	return o;
}

static cJSON *op_list(void *u)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *a = cJSON_AddArrayToObject(o, "groups");
	cJSON *g = cJSON_CreateObject();

	cJSON_AddStringToObject(g, "name", "web");
	cJSON_AddItemToArray(a, g);
	return o;
}

static cJSON *op_show(void *u, const char *g)
{
	cJSON *o;

	if (!known(g))
		return NULL;
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", g);
	cJSON_AddBoolToObject(o, "paused", M.paused);
	return o;
}

static cJSON *op_decisions(void *u, const char *g)
{
	return known(g) ? admin_ring_json(&ring) : NULL;
}

static int op_pause(void *u, const char *g, int64_t until, char *err, size_t len)
{
	if (!known(g))
		return -ENOENT;
	M.paused = true;
	M.pause_until = until;
	return 0;
}

static int op_resume(void *u, const char *g, char *err, size_t len)
{
	if (!known(g))
		return -ENOENT;
	if (!M.paused) {
		snprintf(err, len, "'%s' is not paused", g);
		return -EALREADY;
	}
	M.paused = false;
	return 0;
}

static int op_pin(void *u, const char *g, int count, int64_t until, bool force, char *err, size_t len)
{
	if (!known(g))
		return -ENOENT;
	if (!force && (count < 1 || count > 10)) {
		snprintf(err, len, "%d is outside [1, 10]; use force", count);
		return -ERANGE;
	}
	M.pinned = true;
	M.pin = count;
	M.pin_until = until;
	M.force = force;
	return 0;
}

static int op_unpin(void *u, const char *g, char *err, size_t len)
{
	if (!known(g))
		return -ENOENT;
	if (!M.pinned) {
		snprintf(err, len, "'%s' is not pinned", g);
		return -EALREADY;
	}
	M.pinned = false;
	return 0;
}

static int op_dry_run(void *u, const char *g, bool on, char *err, size_t len)
{
	if (!known(g))
		return -ENOENT;
	M.dry = on ? 1 : 0;
	return 0;
}

static int op_reload(void *u, char *err, size_t len)
{
	M.reloads++;
	if (M.reload_fails) {
		snprintf(err, len, "conf:3: bad");
		return -EINVAL;
	}
	return 0;
}

static int op_what_if(void *u, const char *g, const struct admin_what_if *w, cJSON **ret, char *err, size_t len)
{
	if (!known(g))
		return -ENOENT;
	for (size_t i = 0; i < w->n_values; i++)
		if (strcmp(w->signal[i], "queue") != 0) {
			snprintf(err, len, "group 'web' has no signal '%s'", w->signal[i]);
			return -EINVAL;
		}
	M.what_if = *w;
	for (size_t i = 0; i < w->n_values; i++) {
		snprintf(M.what_if_names[i], sizeof(M.what_if_names[i]), "%s", w->signal[i]);
		M.what_if.signal[i] = M.what_if_names[i];
	}
	*ret = cJSON_CreateObject();
	cJSON_AddStringToObject(*ret, "hold", "none");
	return 0;
}

static int64_t op_now(void *u)
{
	return NOW;
}

static const struct admin_ops ops = {
	.health = op_health,
	.list = op_list,
	.show = op_show,
	.decisions = op_decisions,
	.pause = op_pause,
	.resume = op_resume,
	.pin = op_pin,
	.unpin = op_unpin,
	.dry_run = op_dry_run,
	.reload = op_reload,
	.what_if = op_what_if,
	.now_ms = op_now,
};

static char sock[128];
static sd_event *event;
static struct admin *admin;

/* Makes one request while the loop serves it; returns the status and
 * leaves the body in *out (caller frees). */
static long req(const char *method, const char *path, const char *body, char **out)
{
	char url[256];
	struct loop_http c = {.url = url, .unix_socket = sock, .method = method, .body = body};

	snprintf(url, sizeof(url), "http://localhost%s", path);
	assert_int_equal(loop_http(event, &c), 0);
	if (out)
		*out = c.reply ? c.reply : strdup("");
	else
		free(c.reply);
	return c.status;
}

/* The status, with the error message checked to be JSON naming `word`. */
static void expect_error(const char *method, const char *path, const char *body, long status, const char *word)
{
	char *out;
	cJSON *o;

	assert_int_equal(req(method, path, body, &out), status);
	o = cJSON_Parse(out);
	assert_non_null(o);
	assert_true(cJSON_IsString(cJSON_GetObjectItem(o, "error")));
	if (word && !strstr(cJSON_GetObjectItem(o, "error")->valuestring, word))
		fail_msg("error '%s' does not mention '%s'", cJSON_GetObjectItem(o, "error")->valuestring, word);
	cJSON_Delete(o);
	free(out);
}

static int setup(void **st)
{
	(void)st;
	memset(&M, 0, sizeof(M));
	snprintf(sock, sizeof(sock), "/tmp/test-admin.%d.sock", (int)getpid());
	if (sd_event_new(&event) < 0)
		return -1;
	return admin_new(event, sock, NULL, &ops, NULL, &admin);
}

static int teardown(void **st)
{
	(void)st;
	admin_free(admin);
	sd_event_unref(event);
	admin_ring_clear(&ring);
	return access(sock, F_OK) == 0 ? -1 : 0; /* the socket is removed */
}

static void test_socket_mode(void **st)
{
	struct stat sb;

	(void)st;
	assert_int_equal(stat(sock, &sb), 0);
	assert_true(S_ISSOCK(sb.st_mode));
	assert_int_equal(sb.st_mode & 0777, 0660);
}

static void test_reads(void **st)
{
	char *out;

	(void)st;
	assert_int_equal(req("GET", "/v1/health", NULL, &out), 200);
	assert_non_null(strstr(out, "\"status\":\"ok\""));
	free(out);
	assert_int_equal(req("GET", "/v1/groups", NULL, &out), 200);
	assert_non_null(strstr(out, "\"name\":\"web\""));
	free(out);
	assert_int_equal(req("GET", "/v1/groups/web", NULL, &out), 200);
	free(out);
	expect_error("GET", "/v1/groups/db", NULL, 404, "db");
	expect_error("GET", "/v1/groups/db/decisions", NULL, 404, "db");
	expect_error("GET", "/v2/whatever", NULL, 404, "/v2/whatever");
	expect_error("GET", "/v1/groups/web/frobnicate", NULL, 404, NULL);
	expect_error("DELETE", "/v1/groups/web", NULL, 405, "DELETE");
	expect_error("POST", "/v1/health", "{}", 405, NULL);
	expect_error("GET", "/v1/reload", NULL, 405, NULL);
	expect_error("GET", "/v1/groups/web/pause", NULL, 405, NULL);
	/* A daemon without a cluster section (no cluster operation here). */
	expect_error("GET", "/v1/cluster", NULL, 404, "not in a cluster");
	expect_error("POST", "/v1/cluster", "{}", 405, NULL);
}

static void test_pause_resume(void **st)
{
	(void)st;
	assert_int_equal(req("POST", "/v1/groups/web/pause", "", NULL), 200);
	assert_true(M.paused);
	assert_int_equal(M.pause_until, 0);
	assert_int_equal(req("POST", "/v1/groups/web/resume", NULL, NULL), 200);
	assert_false(M.paused);
	expect_error("POST", "/v1/groups/web/resume", NULL, 409, "not paused");

	assert_int_equal(req("POST", "/v1/groups/web/pause", "{\"for\":\"2h\"}", NULL), 200);
	assert_int_equal(M.pause_until, NOW + 7200000);
	assert_int_equal(req("POST", "/v1/groups/web/pause", "{\"until\":\"2025-12-02T14:00:00+01:00\"}", NULL), 200);
	assert_int_equal(M.pause_until, INT64_C(1764680400000));

	expect_error("POST", "/v1/groups/web/pause", "{\"for\":\"soon\"}", 400, "for");
	expect_error("POST", "/v1/groups/web/pause", "{\"for\":\"2h\",\"until\":\"2026-01-01T00:00:00Z\"}", 400, "not both");
	expect_error("POST", "/v1/groups/web/pause", "{\"until\":\"2020-01-01T00:00:00Z\"}", 400, "past");
	expect_error("POST", "/v1/groups/web/pause", "{\"until\":\"2026-01-01 00:00\"}", 400, "ISO 8601");
	expect_error("POST", "/v1/groups/web/pause", "{\"fro\":\"2h\"}", 400, "fro");
	expect_error("POST", "/v1/groups/web/pause", "{not json", 400, "JSON");
	expect_error("POST", "/v1/groups/db/pause", "{}", 404, NULL);
}

static void test_pin(void **st)
{
	(void)st;
	assert_int_equal(req("POST", "/v1/groups/web/pin", "{\"count\":4,\"for\":\"30m\"}", NULL), 200);
	assert_true(M.pinned);
	assert_int_equal(M.pin, 4);
	assert_int_equal(M.pin_until, NOW + 1800000);
	assert_false(M.force);
	expect_error("POST", "/v1/groups/web/pin", "{\"count\":40,\"for\":\"30m\"}", 409, "force");
	assert_int_equal(req("POST", "/v1/groups/web/pin", "{\"count\":40,\"for\":\"30m\",\"force\":true}", NULL), 200);
	assert_int_equal(M.pin, 40);
	assert_true(M.force);
	expect_error("POST", "/v1/groups/web/pin", "{\"count\":4}", 400, "expiry");
	expect_error("POST", "/v1/groups/web/pin", "{\"count\":-1,\"for\":\"1h\"}", 400, "count");
	expect_error("POST", "/v1/groups/web/pin", "{\"count\":2.5,\"for\":\"1h\"}", 400, "count");
	expect_error("POST", "/v1/groups/web/pin", "{\"count\":\"3\",\"for\":\"1h\"}", 400, "count");
	expect_error("POST", "/v1/groups/web/pin", "{\"count\":3,\"for\":\"1h\",\"force\":1}", 400, "force");
	expect_error("PUT", "/v1/groups/web/pin", "{}", 405, NULL);
	assert_int_equal(req("DELETE", "/v1/groups/web/pin", NULL, NULL), 200);
	assert_false(M.pinned);
	expect_error("DELETE", "/v1/groups/web/pin", NULL, 409, "not pinned");
}

static void test_dry_run_and_reload(void **st)
{
	(void)st;
	M.dry = -1;
	assert_int_equal(req("POST", "/v1/groups/web/dry-run", "{\"enabled\":true}", NULL), 200);
	assert_int_equal(M.dry, 1);
	assert_int_equal(req("POST", "/v1/groups/web/dry-run", "{\"enabled\":false}", NULL), 200);
	assert_int_equal(M.dry, 0);
	expect_error("POST", "/v1/groups/web/dry-run", "{}", 400, "enabled");
	expect_error("POST", "/v1/groups/web/dry-run", "{\"enabled\":\"yes\"}", 400, "enabled");

	assert_int_equal(req("POST", "/v1/reload", NULL, NULL), 200);
	M.reload_fails = true;
	expect_error("POST", "/v1/reload", NULL, 400, "conf:3");
	assert_int_equal(M.reloads, 2);
}

/* A what-if: its inputs reach the group as given, bad ones are refused
 * before, and it answers with the record. */
static void test_what_if(void **st)
{
	(void)st;
	assert_int_equal(req("POST", "/v1/groups/web/what-if",
			     "{\"values\":{\"queue\":60},\"current\":3,\"partial\":true}", NULL), 200);
	assert_int_equal(M.what_if.n_values, 1);
	assert_string_equal(M.what_if.signal[0], "queue");
	assert_true(M.what_if.value[0] == 60);
	assert_int_equal(M.what_if.current, 3);
	assert_true(M.what_if.partial);
	assert_int_equal(req("POST", "/v1/groups/web/what-if", NULL, NULL), 200);
	assert_int_equal(M.what_if.n_values, 0);
	assert_int_equal(M.what_if.current, -1);
	assert_false(M.what_if.partial);
	expect_error("POST", "/v1/groups/web/what-if", "{\"values\":{\"mem\":1}}", 400, "no signal 'mem'");
	expect_error("POST", "/v1/groups/web/what-if", "{\"values\":{\"queue\":\"x\"}}", 400, "must be a number");
	expect_error("POST", "/v1/groups/web/what-if", "{\"values\":[1]}", 400, "'values'");
	expect_error("POST", "/v1/groups/web/what-if", "{\"current\":-2}", 400, "'current'");
	expect_error("POST", "/v1/groups/web/what-if", "{\"partial\":1}", 400, "'partial'");
	expect_error("POST", "/v1/groups/web/what-if", "{\"curent\":2}", 400, "unknown key 'curent'");
	expect_error("GET", "/v1/groups/web/what-if", NULL, 405, NULL);
	expect_error("POST", "/v1/groups/api/what-if", "{}", 404, NULL);
}

static void test_body_limit(void **st)
{
	char *big = malloc(ADMIN_MAX_BODY + 100);

	(void)st;
	memset(big, ' ', ADMIN_MAX_BODY + 99);
	big[0] = '{';
	big[ADMIN_MAX_BODY + 98] = '}';
	big[ADMIN_MAX_BODY + 99] = '\0';
	expect_error("POST", "/v1/groups/web/pause", big, 413, "larger");
	assert_false(M.paused);
	free(big);
	/* The server still answers afterwards. */
	assert_int_equal(req("GET", "/v1/health", NULL, NULL), 200);
}

static void test_ring(void **st)
{
	char buf[64], *out;
	cJSON *o, *a;

	(void)st;
	for (int i = 0; i < ADMIN_RING_SIZE + 20; i++) {
		snprintf(buf, sizeof(buf), "{\"n\":%d}", i);
		admin_ring_push(&ring, strdup(buf), 0);
	}
	assert_int_equal(req("GET", "/v1/groups/web/decisions", NULL, &out), 200);
	o = cJSON_Parse(out);
	a = cJSON_GetObjectItem(o, "decisions");
	/* Bounded, oldest first, the newest kept. */
	assert_int_equal(cJSON_GetArraySize(a), ADMIN_RING_SIZE);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(a, 0), "n")->valueint, 20);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(a, ADMIN_RING_SIZE - 1), "n")->valueint,
			 ADMIN_RING_SIZE + 19);
	cJSON_Delete(o);
	free(out);
}

/* The newest record's text, compared and let go. */
static void assert_newest(const struct admin_ring *r, const char *want)
{
	char *text = admin_ring_newest(r);

	assert_non_null(text);
	assert_string_equal(text, want);
	free(text);
}

/* A byte budget: records of B bytes each (what the ring says a record
 * takes) fit 3 to 3 B + B / 2; the oldest go first, and the newest stays
 * even when it alone is over the budget. */
static void test_ring_budget(void **st)
{
	struct admin_ring r = { 0 };
	size_t b, limit;
	char buf[64], big[256];
	cJSON *o;

	(void)st;
	b = admin_ring_push(&r, strdup("{\"n\":000}"), 0);
	assert_true(b > 0);
	limit = 3 * b + b / 2;
	for (int i = 1; i < 10; i++) {
		snprintf(buf, sizeof(buf), "{\"n\":%03d}", i);
		assert_int_equal(admin_ring_push(&r, strdup(buf), limit), b);
		assert_true(r.bytes <= limit);
	}
	assert_int_equal(r.n, 3);
	assert_int_equal(r.bytes, 3 * b);
	/* Its array holds what the budget keeps, not ADMIN_RING_SIZE. */
	assert_true(r.cap <= 4);
	assert_newest(&r, "{\"n\":009}");
	o = admin_ring_json(&r);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "decisions"), 0), "n")->valueint,
			 7);
	cJSON_Delete(o);
	/* Random bytes do not deflate: this one takes more than the budget. */
	for (size_t i = 0, x = 1; i < sizeof(big) - 1; i++) {
		x = x * 1103515245 + 12345;
		big[i] = (char)('!' + (x >> 16) % 90);
	}
	big[sizeof(big) - 1] = '\0';
	assert_true(admin_ring_push(&r, strdup(big), limit) > limit);
	assert_int_equal(r.n, 1);
	assert_newest(&r, big);
	/* The oversized record goes as soon as a newer one comes. */
	admin_ring_push(&r, strdup("{\"n\":001}"), limit);
	assert_int_equal(r.n, 1);
	admin_ring_push(&r, strdup("{\"n\":002}"), limit);
	assert_int_equal(r.n, 2);
	/* A smaller budget (a reload with more groups) applies at the next
	 * record: one and a half records hold one. */
	admin_ring_push(&r, strdup("{\"n\":003}"), b + b / 2);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.bytes, b);
	admin_ring_clear(&r);
	assert_int_equal(r.bytes, 0);
	assert_null(admin_ring_newest(&r));
}

/* The records are kept deflated against the ring's dictionary, and come
 * back as they went in: a decision record of three signals, as the daemon
 * writes one, in a quarter of its text; text the dictionary does not know
 * (every UTF-8 length, control characters) byte for byte. */
static void test_ring_deflated(void **st)
{
	static const char record[] =
		"{\"time\":\"2026-12-05T22:27:13.541Z\",\"group\":\"web-frontend\",\"profile\":\"business-hours\","
		"\"current\":4,\"ready\":4,\"min\":2,\"max\":20,\"default\":2,\"signals\":[{\"name\":\"cpu\",\"type\":"
		"\"utilization\",\"valid\":true,\"value\":0.71,\"target\":0.6,\"recommendation\":5,\"within_tolerance\":"
		"false,\"counted_as_zero\":0,\"counted_at_target\":0,\"reason\":null,\"forecast\":null},{\"name\":"
		"\"queue\",\"type\":\"average\",\"valid\":true,\"value\":14,\"target\":10,\"recommendation\":6,"
		"\"within_tolerance\":false,\"counted_as_zero\":0,\"counted_at_target\":0,\"reason\":null,\"forecast\":"
		"null},{\"name\":\"rps\",\"type\":\"average\",\"valid\":false,\"value\":null,\"target\":100,"
		"\"recommendation\":null,\"within_tolerance\":false,\"counted_as_zero\":0,\"counted_at_target\":0,"
		"\"reason\":\"prometheus: connection refused\",\"forecast\":null}],\"rules\":[],\"inputs\":{\"stable\":"
		"true,\"in_flight\":null,\"busy\":false,\"partial\":false,\"paused\":false,\"host_room\":null,\"pin\":"
		"null},\"on_missing_applied\":false,\"combined\":6,\"clamped\":6,\"stabilized\":6,\"rate_limited\":6,"
		"\"flap_guarded\":6,\"final\":6,\"desired\":6,\"action\":\"scale_out\",\"hold\":\"none\",\"override\":"
		"null,\"victims\":null,\"driver_signal\":\"queue\",\"driver_rule\":null,\"boot_time_s\":120,\"keep_s\":"
		"null,\"explanation\":\"cpu 71% vs target 60% -> 5; queue 14 vs 10/instance -> 6; rps no data; max of "
		"signals; scale out 4 -> 6\",\"dry_run\":false,\"last_error\":null}";
	static const char odd[] = "{\"s\":\"\x01\t\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80 \\u0000 \\\"\"}";
	struct admin_ring r = { 0 };
	size_t b;
	char *text;

	(void)st;
	b = admin_ring_push(&r, strdup(record), 0);
	assert_true(b > 0);
	assert_true(b <= (sizeof(record) - 1) / 4);
	assert_newest(&r, record);
	assert_int_equal(r.bytes, b);
	admin_ring_push(&r, strdup(odd), 0);
	assert_newest(&r, odd);
	text = malloc(64 * 1024 + 1);
	assert_non_null(text);
	/* Longer than the window: references past it are not made. */
	for (size_t i = 0; i < 64 * 1024; i++)
		text[i] = record[(i * 7) % (sizeof(record) - 1)];
	text[64 * 1024] = '\0';
	admin_ring_push(&r, strdup(text), 0);
	{
		char *back = admin_ring_newest(&r);

		assert_non_null(back);
		assert_memory_equal(back, text, 64 * 1024 + 1);
		free(back);
	}
	free(text);
	assert_int_equal(r.n, 3);
	/* One stream packs every record, reset between them, through one
	 * buffer: after the long one, the same record packs to the same size
	 * and reads back whole. */
	assert_int_equal(admin_ring_push(&r, strdup(record), 0), b);
	assert_newest(&r, record);
	admin_ring_clear(&r);
	/* And the older records keep their own bytes: each reads back. */
	admin_ring_push(&r, strdup(record), 0);
	admin_ring_push(&r, strdup(odd), 0);
	admin_ring_push(&r, strdup(record), 0);
	{
		cJSON *all = admin_ring_json(&r), *a;

		assert_non_null(all);
		a = cJSON_GetObjectItemCaseSensitive(all, "decisions");
		assert_int_equal(cJSON_GetArraySize(a), 3);
		assert_string_equal(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(a, 0), "group")->valuestring,
				    "web-frontend");
		assert_true(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(a, 1), "s")));
		assert_string_equal(
			cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(a, 2), "explanation")->valuestring,
			"cpu 71% vs target 60% -> 5; queue 14 vs 10/instance -> 6; rps no data; max of signals; "
			"scale out 4 -> 6");
		cJSON_Delete(all);
	}
	admin_ring_clear(&r);
}

/* A record its owner had not made yet, that a newer one replaces: the
 * ring says whether it would keep it beside a newer one of its size, and
 * when not, drops what pushing it would have dropped. */
static void test_ring_pass_over(void **st)
{
	struct admin_ring r = { 0 };
	size_t b = 0;
	char buf[32];

	(void)st;
	/* No budget, or room for two records: keep it. */
	assert_true(admin_ring_pass_over(&r, 20, 0));
	assert_true(admin_ring_pass_over(&r, 20, 40));
	for (int i = 0; i < 3; i++) {
		snprintf(buf, sizeof(buf), "{\"n\":%d}", i);
		b = admin_ring_push(&r, strdup(buf), 3 * 40);
		assert_true(b > 0 && b <= 40);
	}
	assert_int_equal(r.n, 3);
	assert_true(admin_ring_pass_over(&r, b, 3 * b));
	assert_int_equal(r.n, 3);
	/* A record of 2 B + 1: two do not fit in 3 B + 1, and pushing it
	 * would have left one record of B beside it. */
	assert_false(admin_ring_pass_over(&r, 2 * b + 1, 3 * b + 1));
	assert_int_equal(r.n, 1);
	assert_int_equal(r.bytes, b);
	assert_newest(&r, "{\"n\":2}");
	/* Nothing beside it: everything older goes. */
	assert_false(admin_ring_pass_over(&r, 3 * b, 3 * b + 1));
	assert_int_equal(r.n, 0);
	assert_int_equal(r.bytes, 0);
	admin_ring_push(&r, strdup("{\"n\":3}"), 3 * b + 1);
	assert_newest(&r, "{\"n\":3}");
	admin_ring_clear(&r);
}

/* The ring's array grows while its records wrap around it (a budget that
 * dropped the oldest, then a larger one): they stay in order. */
static void test_ring_grows_wrapped(void **st)
{
	struct admin_ring r = { 0 };
	size_t b;
	char buf[32];
	cJSON *o, *a;

	(void)st;
	b = admin_ring_push(&r, strdup("{\"n\":0}"), 0);
	for (int i = 1; i < 7; i++) {
		snprintf(buf, sizeof(buf), "{\"n\":%d}", i);
		admin_ring_push(&r, strdup(buf), 2 * b); /* two records */
	}
	assert_int_equal(r.n, 2);
	assert_true(r.head != 0);
	for (int i = 7; i < 12; i++) {
		snprintf(buf, sizeof(buf), "{\"n\":%d}", i);
		admin_ring_push(&r, strdup(buf), 0);
	}
	assert_int_equal(r.n, 7);
	o = admin_ring_json(&r);
	a = cJSON_GetObjectItem(o, "decisions");
	assert_int_equal(cJSON_GetArraySize(a), 7);
	for (int i = 0; i < 7; i++)
		assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(a, i), "n")->valueint, 5 + i);
	assert_newest(&r, "{\"n\":11}");
	cJSON_Delete(o);
	admin_ring_clear(&r);
}

static void test_socket_refusals(void **st)
{
	struct admin *a2;

	(void)st;
	/* Paths of this run's own: two runs of the suite on one machine must
	 * not meet in /tmp. */
	char dir[] = "/tmp/test-admin.XXXXXX", file[64], xsock[64];

	assert_non_null(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/file", dir);
	snprintf(xsock, sizeof(xsock), "%s/x.sock", dir);
	/* A regular file is never replaced by the socket. */
	FILE *f = fopen(file, "w");

	assert_non_null(f);
	fclose(f);
	assert_int_equal(admin_new(event, file, NULL, &ops, NULL, &a2), -EEXIST);
	unlink(file);
	assert_int_equal(admin_new(event, xsock, "no-such-group-here", &ops, NULL, &a2), -ENOENT);
	assert_int_not_equal(access(xsock, F_OK), 0);
	rmdir(dir);
}

/* A path that is not UTF-8 is refused before any handler quotes it, so
 * every reply stays valid JSON; a control character in a path is escaped
 * by the JSON writer. */
static void test_hostile_paths(void **st)
{
	char *out;
	cJSON *o;

	(void)st;
	expect_error("GET", "/v1/groups/w%FFb", NULL, 400, "UTF-8");
	expect_error("GET", "/v2/%C0%AF", NULL, 400, "UTF-8");		/* an overlong '/' */
	expect_error("GET", "/v2/%ED%A0%80", NULL, 400, "UTF-8");	/* a surrogate */
	expect_error("GET", "/v2/%E2%82", NULL, 400, "UTF-8");		/* cut short */
	assert_int_equal(req("GET", "/v2/%FF", NULL, &out), 400);
	assert_null(strchr(out, '\xff'));
	free(out);
	/* A value that is not UTF-8 in a reply (here a decision record; a
	 * command's stderr can put one there) becomes U+FFFD. */
	admin_ring_push(&ring, strdup("{\"why\":\"bad \xff\xc0\xaf byte\"}"), 0);
	assert_int_equal(req("GET", "/v1/groups/web/decisions", NULL, &out), 200);
	assert_non_null(strstr(out, "\"why\":\"bad \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd byte\""));
	free(out);
	/* Well-formed UTF-8 is answered as any other path. */
	expect_error("GET", "/v1/groups/caf%C3%A9", NULL, 404, "caf\xc3\xa9");
	assert_int_equal(req("GET", "/v1/groups/a%0Aerror:%20forged/pause", NULL, &out), 405);
	o = cJSON_Parse(out);
	assert_non_null(o);
	assert_non_null(strstr(out, "a\\nerror: forged"));
	cJSON_Delete(o);
	free(out);
}

/* More idle clients than the server's connection limit (64) fill it and
 * its backlog. A request made then is answered, and so is the next: the
 * server keeps accepting after having been at its limit (it used to stop
 * for good). */
static void test_connection_limit(void **st)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fds[72], n;
	char *out;

	(void)st;
	assert_true(strlen(sock) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	n = loop_http_hold(event, (struct sockaddr *)&sa, sizeof(sa), fds, 72);
	assert_true(n > 64);
	assert_int_equal(loop_http_release_later(event, fds, n, 300000), 0);
	assert_int_equal(req("GET", "/v1/health", NULL, &out), 200);
	assert_non_null(strstr(out, "\"status\":\"ok\""));
	free(out);
	assert_int_equal(req("GET", "/v1/groups", NULL, NULL), 200);
}


static socklen_t sock_addr(struct sockaddr_un *sa)
{
	*sa = (struct sockaddr_un){.sun_family = AF_UNIX};
	assert_true(strlen(sock) < sizeof(sa->sun_path));
	memcpy(sa->sun_path, sock, strlen(sock) + 1);
	return sizeof(*sa);
}

/* Sends REQ as it is (LEN bytes, or up to its NUL when 0) and checks the
 * status line of the reply; NULL: the server closes without one. */
static void expect_raw(const char *req, size_t len, const char *status_line)
{
	struct sockaddr_un sa;
	socklen_t sl = sock_addr(&sa);
	char out[4096];
	ssize_t n;

	if (!len)
		len = strlen(req);
	n = loop_http_raw(event, (struct sockaddr *)&sa, sl, req, len, out, sizeof(out));
	if (!status_line) {
		assert_int_equal(n, 0);
		return;
	}
	/* Says which request went unanswered, and how (0: closed without a
	 * reply; negative: the connection's errno). */
	if (n <= 0)
		fail_msg("no reply to '%.40s' (%zu bytes): %zd", req, len, n);
	if (strncmp(out, status_line, strlen(status_line)) != 0)
		fail_msg("expected '%s', got '%.60s'", status_line, out);
}

/* Requests no client should make are refused with a status, and nothing
 * else is disturbed: the server answers the next request. */
static void test_malformed(void **st)
{
	size_t n = HTTPD_CONNECTION_MEMORY + 1024;
	char *big = malloc(n + 128);
	size_t k;

	(void)st;
	/* A URL longer than a connection's memory: 414, never read whole. */
	k = (size_t)sprintf(big, "GET /v1/groups/");
	memset(big + k, 'a', n);
	k += n;
	k += (size_t)sprintf(big + k, " HTTP/1.1\r\nHost: localhost\r\n\r\n");
	expect_raw(big, k, "HTTP/1.1 414 ");
	/* Headers longer than it: 431. */
	k = (size_t)sprintf(big, "GET /v1/health HTTP/1.1\r\nHost: localhost\r\nX-Big: ");
	memset(big + k, 'b', n);
	k += n;
	k += (size_t)sprintf(big + k, "\r\n\r\n");
	expect_raw(big, k, "HTTP/1.1 431 ");
	free(big);
	/* A declared body over the limit is refused before it is sent. */
	expect_raw("POST /v1/reload HTTP/1.1\r\nHost: localhost\r\nContent-Length: 99999999999\r\n\r\n", 0,
		   "HTTP/1.1 413 ");
	assert_int_equal(M.reloads, 0);
	/* Not HTTP at all (here the start of a TLS hello): closed without
	 * a reply, as MHD does with a request line it cannot read. */
	expect_raw("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 15, NULL);
	expect_raw("GARBAGE\r\n\r\n", 0, NULL);
	/* A length that is no number. */
	expect_raw("GET /v1/health HTTP/1.1\r\nHost: localhost\r\nContent-Length: -5\r\n\r\n", 0, "HTTP/1.1 400 ");
	assert_int_equal(req("GET", "/v1/health", NULL, NULL), 200);
}

/* Slow clients (slowloris) more than the connection limit, each sending a
 * byte a second and never ending its request: a well-behaved client is
 * answered at once while they go on, and each of them is cut off when its
 * request has taken HTTPD_REQUEST_TIMEOUT_S (MHD's idle timeout alone
 * never cut them, as they are never idle for long). */
static void test_slow_clients(void **st)
{
	struct sockaddr_un sa;
	socklen_t sl = sock_addr(&sa);
	struct loop_http_trickle *t;
	uint64_t t0;
	int64_t took;

	(void)st;
	assert_int_equal(loop_http_trickle_start(event, (struct sockaddr *)&sa, sl, HTTPD_MAX_CONNECTIONS + 16, 1000000,
						 &t), 0);
	for (int i = 0; i < 3; i++) {
		t0 = loop_http_now();
		assert_int_equal(req("GET", "/v1/health", NULL, NULL), 200);
		/* Bounded by a turn of the loop, not by the slow ones' time;
		 * 2 s leaves room for a loaded machine. */
		if (loop_http_now() - t0 > 2000000)
			fail_msg("a request during the abuse took %llu ms", (unsigned long long)(loop_http_now() - t0) / 1000);
	}
	assert_true(loop_http_trickle_open(t) > 0);
	took = loop_http_trickle_wait(event, t, (HTTPD_REQUEST_TIMEOUT_S + 10) * 1000000LL);
	if (took < 0)
		fail_msg("%d slow clients are still connected after %d s", loop_http_trickle_open(t),
			 HTTPD_REQUEST_TIMEOUT_S + 10);
	/* Not before their time either: they did send. */
	assert_true(took >= (HTTPD_REQUEST_TIMEOUT_S - 1) * 1000000LL);
	loop_http_trickle_free(t);
	assert_int_equal(req("GET", "/v1/health", NULL, NULL), 200);
}

/* A reply as long as a big daemon's metrics, for test_long_reply. */
#define LONG_REPLY (16 * HTTPD_MIN_REPLY_RATE)

static void long_reply(void *userdata, const struct httpd_request *req, struct httpd_response *resp)
{
	(void)userdata;
	resp->content_type = "text/plain";
	resp->body = malloc(strcmp(req->path, "/long") == 0 ? LONG_REPLY + 1 : 2);
	if (!resp->body) {
		resp->status = 500;
		return;
	}
	if (strcmp(req->path, "/long") == 0) {
		memset(resp->body, 'x', LONG_REPLY);
		resp->body[LONG_REPLY] = '\0';
	} else {
		strcpy(resp->body, "x");
	}
}

/* A long reply takes the time it needs at HTTPD_MIN_REPLY_RATE on top of
 * HTTPD_REQUEST_TIMEOUT_S: a reader at 1.5 times that rate gets all of it
 * although it takes longer than HTTPD_REQUEST_TIMEOUT_S (the metrics of
 * 10,000 groups were cut after 4 of their 64 MB), while one at a tenth of
 * it is still cut off, once its time is up. */
static void test_long_reply(void **st)
{
	char path[] = "/tmp/test-admin-long.XXXXXX";
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct loop_http_reader *fast, *slow;
	struct httpd *h;
	size_t fast_bytes = 0, slow_bytes = 0;
	uint64_t fast_took = 0, slow_took = 0, deadline;
	const uint64_t allowed = (uint64_t)(HTTPD_REQUEST_TIMEOUT_S + LONG_REPLY / HTTPD_MIN_REPLY_RATE) * 1000000;
	int fd;

	(void)st;
	assert_non_null(mkdtemp(path));
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/s", path);
	fd = httpd_listen_unix(sa.sun_path, 0600, NULL);
	assert_true(fd >= 0);
	assert_int_equal(httpd_new(event, fd, "long", 0, long_reply, NULL, &h), 0);
	/* 48 KiB every 31.25 ms is 1.5 times the rate: 10.7 s for the reply,
	 * more than HTTPD_REQUEST_TIMEOUT_S; 3.2 KiB in the same time is a
	 * tenth of the rate, 160 s for it. */
	assert_int_equal(loop_http_reader_start(event, (struct sockaddr *)&sa, sizeof(sa), "/long",
						 HTTPD_MIN_REPLY_RATE * 3 / 64, 31250, &fast),
			 0);
	assert_int_equal(loop_http_reader_start(event, (struct sockaddr *)&sa, sizeof(sa), "/long",
						 HTTPD_MIN_REPLY_RATE / 320, 31250, &slow),
			 0);
	deadline = loop_http_now() + allowed + 10000000;
	while ((!loop_http_reader_closed(fast, &fast_bytes, &fast_took) ||
		!loop_http_reader_closed(slow, &slow_bytes, &slow_took)) &&
	       loop_http_now() < deadline)
		sd_event_run(event, 100000);
	if (!loop_http_reader_closed(fast, &fast_bytes, &fast_took) || !loop_http_reader_closed(slow, &slow_bytes, &slow_took))
		fail_msg("still open: fast %zu bytes, slow %zu bytes", fast_bytes, slow_bytes);
	assert_true(loop_http_reader_closed(fast, &fast_bytes, &fast_took));
	assert_true(loop_http_reader_closed(slow, &slow_bytes, &slow_took));
	if (fast_bytes <= LONG_REPLY)
		fail_msg("a reader at 1.5 times the rate got %zu of %d bytes in %.1f s", fast_bytes, LONG_REPLY,
			 (double)fast_took / 1e6);
	if (slow_bytes >= LONG_REPLY)
		fail_msg("a reader at a tenth of the rate got the whole reply");
	/* Cut when its time was up: not before, and not long after. */
	assert_true(slow_took >= allowed - 1000000);
	assert_true(slow_took < allowed + 5000000);
	loop_http_reader_free(fast);
	loop_http_reader_free(slow);
	httpd_free(h);
	unlink(sa.sun_path);
	rmdir(path);
}

/* A client of test_stalled_loop: blocking I/O on a thread of its own, so
 * that it sends while the loop is held. */
struct stalled_client {
	struct sockaddr_un sa;
	atomic_int stage; /* 1: the request's head sent; 2: told to end it; 3: done */
	char reply[512];
	size_t len;
};

static void *stalled_client_run(void *arg)
{
	struct stalled_client *c = arg;
	const char head[] = "GET /x HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n";
	const struct timespec ms = {0, 1000000};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ssize_t n;

	if (fd < 0 || connect(fd, (struct sockaddr *)&c->sa, sizeof(c->sa)) < 0 ||
	    write(fd, head, sizeof(head) - 1) != (ssize_t)sizeof(head) - 1)
		goto out;
	atomic_store(&c->stage, 1);
	while (atomic_load(&c->stage) < 2)
		nanosleep(&ms, NULL);
	if (write(fd, "\r\n", 2) != 2)
		goto out;
	while (c->len < sizeof(c->reply) - 1 && (n = read(fd, c->reply + c->len, sizeof(c->reply) - 1 - c->len)) > 0)
		c->len += (size_t)n;
out:
	if (fd >= 0)
		close(fd);
	atomic_store(&c->stage, 3);
	return NULL;
}

static void short_reply(void *userdata, const struct httpd_request *req, struct httpd_response *resp)
{
	(void)userdata;
	(void)req;
	resp->content_type = "text/plain";
	resp->body = strdup("served");
	resp->status = resp->body ? 200 : 500;
}

/* The loop held elsewhere for longer than HTTPD_REQUEST_TIMEOUT_S (a
 * reload of a large configuration, a machine out of CPU) while a client
 * that connected before sends the rest of its request: the client did its
 * part in time, so it is answered, not cut off for the daemon's stall. */
static void test_stalled_loop(void **st)
{
	char path[] = "/tmp/test-admin-stall.XXXXXX";
	struct stalled_client c = {.sa = {.sun_family = AF_UNIX}};
	const struct timespec held = {HTTPD_REQUEST_TIMEOUT_S + 2, 0};
	struct httpd *h;
	pthread_t th;
	uint64_t deadline;
	int fd;

	(void)st;
	assert_non_null(mkdtemp(path));
	snprintf(c.sa.sun_path, sizeof(c.sa.sun_path), "%s/s", path);
	fd = httpd_listen_unix(c.sa.sun_path, 0600, NULL);
	assert_true(fd >= 0);
	assert_int_equal(httpd_new(event, fd, "stall", 0, short_reply, NULL, &h), 0);
	assert_int_equal(pthread_create(&th, NULL, stalled_client_run, &c), 0);
	/* The server holds the connection: its exchange's time runs. */
	deadline = loop_http_now() + 10000000;
	while ((atomic_load(&c.stage) < 1 || httpd_connections(h) < 1) && loop_http_now() < deadline)
		sd_event_run(event, 10000);
	assert_int_equal(atomic_load(&c.stage), 1);
	assert_int_equal(httpd_connections(h), 1);
	/* The loop is held: the client ends its request meanwhile. */
	atomic_store(&c.stage, 2);
	nanosleep(&held, NULL);
	deadline = loop_http_now() + 10000000;
	while (atomic_load(&c.stage) < 3 && loop_http_now() < deadline)
		sd_event_run(event, 10000);
	assert_int_equal(pthread_join(th, NULL), 0);
	c.reply[c.len] = '\0';
	if (strncmp(c.reply, "HTTP/1.1 200 ", 13) != 0 || !strstr(c.reply, "served"))
		fail_msg("the client that sent in time got \"%s\"", c.reply);
	httpd_free(h);
	unlink(c.sa.sun_path);
	rmdir(path);
}

/* A reply shared for SHARED_MS with whoever asks for it then. */
#define SHARED_MS 300

static void shared_reply(void *userdata, const struct httpd_request *req, struct httpd_response *resp)
{
	(*(int *)userdata)++;
	resp->content_type = "text/plain";
	resp->body = strdup(req->path);
	resp->status = resp->body ? 200 : 500;
	resp->share_ms = SHARED_MS;
}

/* A shared reply (a scrape of 10,000 groups is 30 MB) is held for its
 * share_ms and let go when that is up, not when the next request comes:
 * Prometheus asks once a minute. */
static void test_shared_reply_let_go(void **st)
{
	char path[] = "/tmp/test-admin-shared.XXXXXX", sockp[64];
	struct loop_http a = {.method = "GET", .url = "http://localhost/metrics"};
	struct loop_http b = a;
	struct httpd *h;
	int fd, calls = 0;
	uint64_t asked, deadline;

	(void)st;
	assert_non_null(mkdtemp(path));
	snprintf(sockp, sizeof(sockp), "%s/s", path);
	fd = httpd_listen_unix(sockp, 0600, NULL);
	assert_true(fd >= 0);
	assert_int_equal(httpd_new(event, fd, "shared", 0, shared_reply, &calls, &h), 0);
	a.unix_socket = b.unix_socket = sockp;
	asked = loop_http_now();
	assert_int_equal(loop_http(event, &a), 0);
	assert_int_equal(a.status, 200);
	assert_string_equal(a.reply, "/metrics");
	assert_int_equal(calls, 1);
	/* Held: the next request within its time is answered from it, on a
	 * loaded machine too, as long as it comes in time. */
	assert_int_equal(httpd_shared_len(h), strlen("/metrics"));
	assert_int_equal(loop_http(event, &b), 0);
	assert_int_equal(b.status, 200);
	if (loop_http_now() < asked + SHARED_MS * 1000)
		assert_int_equal(calls, 1);
	/* A client that takes gzip has a reply of its own kind, which does
	 * not replace the other: requests that alternate the two cost one
	 * of each. */
	struct loop_http z = {.method = "GET", .url = a.url, .unix_socket = sockp, .accept_encoding = "gzip"};
	struct loop_http d = {.method = "GET", .url = a.url, .unix_socket = sockp};

	assert_int_equal(loop_http(event, &z), 0);
	assert_int_equal(z.status, 200);
	if (loop_http_now() < asked + SHARED_MS * 1000)
		assert_int_equal(calls, 2);
	assert_int_equal(loop_http(event, &d), 0);
	assert_int_equal(d.status, 200);
	assert_string_equal(d.reply, "/metrics");
	if (loop_http_now() < asked + SHARED_MS * 1000)
		assert_int_equal(calls, 2);
	free(z.reply);
	free(d.reply);
	/* Then nobody asks; it goes once its time is up. */
	deadline = loop_http_now() + 5000000;
	while (httpd_shared_len(h) != 0 && loop_http_now() < deadline)
		sd_event_run(event, 100000);
	if (httpd_shared_len(h) != 0)
		fail_msg("the shared reply was still held %llu ms after it was made",
			 (unsigned long long)(loop_http_now() - asked) / 1000);
	assert_true(loop_http_now() >= asked + SHARED_MS * 1000);
	free(a.reply);
	free(b.reply);
	httpd_free(h);
	unlink(sockp);
	rmdir(path);
}

/* The text a handler writes through httpd_body_open(), and what a client
 * must read: pieces repeated past several of the gzip stream's 64 KiB
 * stages, so that multibyte sequences fall across their ends, with bytes
 * that start no well-formed sequence (each becomes U+FFFD). */
struct piece {
	const char *in, *out;
};
static const struct piece pieces[] = {
	{"autoscaled_group_desired_instances{group=\"web-", "autoscaled_group_desired_instances{group=\"web-"},
	{"\xe2\x82\xac", "\xe2\x82\xac"},                 /* U+20AC, three bytes */
	{"\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80"},         /* U+1F600, four */
	{"\xc3\xa9", "\xc3\xa9"},                         /* U+00E9, two */
	{"\xff", "\xef\xbf\xbd"},                         /* never in UTF-8 */
	{"\xe2\x82-", "\xef\xbf\xbd\xef\xbf\xbd-"},       /* cut short */
	{"\x80", "\xef\xbf\xbd"},                         /* a lone continuation */
	{"\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"}, /* a surrogate */
	{"\"} 7\n", "\"} 7\n"},
};
#define N_PIECES (sizeof(pieces) / sizeof(pieces[0]))
/* Enough for several stages; a count prime to the pieces' length, so that
 * each piece meets a stage's end somewhere. */
#define STREAM_ROUNDS 4099

static void stream_text(FILE *f, bool in, size_t *len)
{
	*len = 0;
	for (unsigned r = 0; r < STREAM_ROUNDS; r++)
		for (size_t i = 0; i < N_PIECES; i++) {
			/* Each round starts one piece further on, so that
			 * the pieces fall at other offsets of the stages. */
			const char *t = in ? pieces[(i + r) % N_PIECES].in : pieces[(i + r) % N_PIECES].out;

			*len += strlen(t);
			if (f)
				fputs(t, f);
		}
	/* A sequence cut short by the end of the body. */
	*len += in ? 1 : 3;
	if (f)
		fputs(in ? "\xe2" : "\xef\xbf\xbd", f);
}

static void stream_reply(void *userdata, const struct httpd_request *req, struct httpd_response *resp)
{
	size_t len;
	FILE *f = httpd_body_open(req, resp);

	(void)userdata;
	if (!f) {
		httpd_error(resp, 500, "out of memory");
		return;
	}
	stream_text(f, true, &len);
	if (fclose(f) != 0) {
		httpd_error(resp, 500, "cannot write");
		return;
	}
	resp->content_type = "text/plain; charset=utf-8";
}

/* A client that takes gzip gets the body compressed as it was written,
 * with the same repairs of UTF-8 as a client that does not; which one
 * takes it is read from Accept-Encoding as RFC 9110 says. */
static void test_gzip_reply(void **st)
{
	static const struct {
		const char *accept;
		bool gzip;
	} cases[] = {
		{NULL, false}, {"gzip", true}, {"GZIP", true}, {"deflate, x-gzip;q=0.5", true},
		{"gzip;q=0", false}, {"gzip; q=0.000", false}, {"*", true}, {"br, *;q=0.1", true},
		{"identity, *;q=0", false}, {"gzip;q=0, *", false}, {"identity", false}, {"gzipper", false},
		{"gzip;q=1.000", true}, {"gzip;q=0.001", true}, {"gzip;q=0.", false}, {"gzip;q=half", false},
	};
	char path[] = "/tmp/test-admin-gzip.XXXXXX", sockp[64], *want, *got;
	struct httpd *h;
	size_t want_len, got_len;
	FILE *f;
	int fd;

	(void)st;
	f = open_memstream(&want, &want_len);
	assert_non_null(f);
	stream_text(f, false, &got_len);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(got_len, want_len);
	stream_text(NULL, true, &got_len);
	assert_true(got_len > 3 * 64 * 1024);
	assert_non_null(mkdtemp(path));
	snprintf(sockp, sizeof(sockp), "%s/s", path);
	fd = httpd_listen_unix(sockp, 0600, NULL);
	assert_true(fd >= 0);
	assert_int_equal(httpd_new(event, fd, "gzip", 0, stream_reply, NULL, &h), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct loop_http q = {.method = "GET", .url = "http://localhost/x", .unix_socket = sockp,
				      .accept_encoding = cases[i].accept};

		assert_int_equal(loop_http(event, &q), 0);
		assert_int_equal(q.status, 200);
		assert_string_equal(q.vary, "Accept-Encoding");
		if (cases[i].gzip) {
			if (strcmp(q.content_encoding, "gzip") != 0)
				fail_msg("Accept-Encoding '%s': Content-Encoding '%s'", cases[i].accept,
					 q.content_encoding);
			assert_int_equal(loop_http_gunzip(q.reply, q.len, &got, &got_len), 0);
			/* The text repeats: it comes to a small part of itself. */
			assert_true(q.len < want_len / 8);
		} else {
			if (strcmp(q.content_encoding, "") != 0)
				fail_msg("Accept-Encoding '%s': Content-Encoding '%s'",
					 cases[i].accept ? cases[i].accept : "(none)", q.content_encoding);
			got = q.reply;
			got_len = q.len;
			q.reply = NULL;
		}
		assert_int_equal(got_len, want_len);
		assert_memory_equal(got, want, want_len);
		free(got);
		free(q.reply);
	}
	free(want);
	httpd_free(h);
	unlink(sockp);
	rmdir(path);
}

/* Idle clients that hold every connection and never go: the server makes
 * room for a new one by closing the oldest, so a request is answered at
 * once, not after the idle ones' timeout. */
static void test_idle_clients_held(void **st)
{
	struct sockaddr_un sa;
	socklen_t sl = sock_addr(&sa);
	int fds[HTTPD_MAX_CONNECTIONS + 16], n;
	uint64_t t0;

	(void)st;
	n = loop_http_hold(event, (struct sockaddr *)&sa, sl, fds, HTTPD_MAX_CONNECTIONS + 16);
	assert_true(n > HTTPD_MAX_CONNECTIONS);
	t0 = loop_http_now();
	assert_int_equal(req("GET", "/v1/health", NULL, NULL), 200);
	assert_int_equal(req("GET", "/v1/groups", NULL, NULL), 200);
	if (loop_http_now() - t0 > 2000000)
		fail_msg("two requests behind idle clients took %llu ms", (unsigned long long)(loop_http_now() - t0) / 1000);
	for (int i = 0; i < n; i++)
		close(fds[i]);
}

/* The status page's handler, called as the metrics listener would. */
static int page_get(const char *method, const char *path, const char *host, char **body)
{
	struct status_page p = {.ops = &ops};
	struct httpd_response resp = {.status = 200};

	status_page_serve(&p, &(struct httpd_request){.method = method, .path = path, .body = "", .host = host},
			  &resp);
	if (body)
		*body = resp.body;
	else
		free(resp.body);
	return resp.status;
}

static void test_status_page_read_only(void **st)
{
	char *body;

	(void)st;
	assert_int_equal(page_get("GET", "/status/api/v1/groups", "127.0.0.1:9851", &body), 200);
	assert_non_null(strstr(body, "\"name\":\"web\""));
	free(body);
	assert_int_equal(page_get("GET", "/status/api/v1/groups/web", "localhost", NULL), 200);
	assert_int_equal(page_get("GET", "/status/api/v1/groups/web/decisions", "[::1]:1", NULL), 200);
	assert_int_equal(page_get("GET", "/status/api/v1/health", "127.0.0.1", NULL), 200);
	assert_int_equal(page_get("GET", "/status/api/v1/groups/nosuch", "127.0.0.1", NULL), 404);
	/* Nothing that changes a group is reachable, by any method. */
	assert_int_equal(page_get("GET", "/status/api/v1/groups/web/pause", "127.0.0.1", NULL), 404);
	assert_int_equal(page_get("POST", "/status/api/v1/groups/web/pause", "127.0.0.1", NULL), 405);
	assert_int_equal(page_get("POST", "/status/api/v1/reload", "127.0.0.1", NULL), 405);
	assert_int_equal(page_get("PUT", "/status", "127.0.0.1", NULL), 405);
	assert_false(M.paused);
	assert_int_equal(M.reloads, 0);
	assert_int_equal(page_get("GET", "/status/api/v1/reload", "127.0.0.1", NULL), 404);
	assert_int_equal(page_get("GET", "/status/nosuch", "127.0.0.1", NULL), 404);
	assert_int_equal(page_get("GET", "/status/status.js", "127.0.0.1", NULL), 200);
	assert_int_equal(page_get("GET", "/status/status.css", "127.0.0.1", NULL), 200);
	assert_int_equal(page_get("GET", "/status", "127.0.0.1", &body), 200);
	assert_non_null(strstr(body, "<tr data-group=\"web\"><td data-label=Group>web"));
	free(body);
}

static void test_status_page_host(void **st)
{
	static const char *const good[] = {"127.0.0.1", "127.0.0.1:9851", "127.1.2.3:80", "localhost", "LOCALHOST:1",
					   "[::1]", "[::1]:9851"};
	static const char *const bad[] = {"", ":80", "example.com", "127.0.0.1.example.com", "127.0.0.1:",
					  "127.0.0.1:80x", "128.0.0.1", "127.0.0.256", "127.0.0", "127.0.0.1.2",
					  "localhost.example.com", "[::2]", "[::1", "0x7f.0.0.1", "127.0.0.01x"};

	(void)st;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		if (!host_is_loopback(good[i]))
			fail_msg("'%s' was not taken for this machine", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (host_is_loopback(bad[i]))
			fail_msg("'%s' was taken for this machine", bad[i]);
	assert_false(host_is_loopback(NULL));
	/* Refused before anything is read, whatever the path. */
	assert_int_equal(page_get("GET", "/status", "attacker.example", NULL), 403);
	assert_int_equal(page_get("GET", "/status/api/v1/groups", NULL, NULL), 403);
	assert_int_equal(page_get("GET", "/status/status.js", "127.0.0.1.attacker.example:80", NULL), 403);
}

/* A name the page quotes is escaped: the list of this model names a group
 * with every character HTML gives a meaning. */
static cJSON *op_list_odd(void *u)
{
	cJSON *o = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(o, "groups"), *g = cJSON_CreateObject();

	(void)u;
	cJSON_AddStringToObject(g, "name", "a<b>&\"c'");
	cJSON_AddStringToObject(g, "explanation", "<script>alert(1)</script>");
	cJSON_AddItemToArray(a, g);
	return o;
}

static void test_status_page_escapes(void **st)
{
	struct admin_ops odd = ops;
	struct status_page p = {.ops = &odd};
	char *body = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&body, &len);

	(void)st;
	odd.list = op_list_odd;
	assert_int_equal(status_page_write(&p, f), 0);
	fclose(f);
	assert_non_null(strstr(body, "data-group=\"a&lt;b&gt;&amp;&quot;c&apos;\"><td data-label=Group>a&lt;b&gt;&amp;&quot;c&apos;"));
	assert_non_null(strstr(body, "&lt;script&gt;alert(1)&lt;/script&gt;"));
	assert_null(strstr(body, "<script>alert"));
	free(body);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_socket_mode, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pause_resume, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pin, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dry_run_and_reload, setup, teardown),
		cmocka_unit_test_setup_teardown(test_what_if, setup, teardown),
		cmocka_unit_test_setup_teardown(test_body_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ring, setup, teardown),
		cmocka_unit_test(test_ring_budget),
		cmocka_unit_test(test_ring_grows_wrapped),
		cmocka_unit_test(test_ring_deflated),
		cmocka_unit_test(test_ring_pass_over),
		cmocka_unit_test_setup_teardown(test_socket_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_paths, setup, teardown),
		cmocka_unit_test_setup_teardown(test_connection_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_malformed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_slow_clients, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stalled_loop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_long_reply, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shared_reply_let_go, setup, teardown),
		cmocka_unit_test_setup_teardown(test_idle_clients_held, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gzip_reply, setup, teardown),
		cmocka_unit_test(test_status_page_read_only),
		cmocka_unit_test(test_status_page_host),
		cmocka_unit_test(test_status_page_escapes),
	};

	curl_global_init(CURL_GLOBAL_DEFAULT);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
