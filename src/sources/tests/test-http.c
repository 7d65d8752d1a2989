/* Tests of the shared HTTP client (http.c) against an in-process
 * libmicrohttpd server: methods and bodies, headers and auth sent,
 * response headers (Retry-After, Location-style lookups), the per-call
 * timeout and body limit, cancellation, and connection errors. */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "sources/http.h"

static struct MHD_Daemon *server;
static int port;
static sd_event *event;
static struct http *http;

struct upload {
	char data[4096];
	size_t len;
};

static enum MHD_Result reply(struct MHD_Connection *c, unsigned code, const char *body, size_t len,
			     const char *h1, const char *v1)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	if (h1)
		MHD_add_response_header(r, h1, v1);
	MHD_add_response_header(r, "Azure-AsyncOperation", "  https://example.test/op/1  ");
	ret = MHD_queue_response(c, code, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result serve(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			     const char *version, const char *data, size_t *size, void **state)
{
	struct upload *u = *state;
	char body[8192];

	if (!u) {
		*state = calloc(1, sizeof(struct upload));
		return MHD_YES;
	}
	if (*size) {
		size_t n = *size < sizeof(u->data) - u->len ? *size : sizeof(u->data) - u->len;

		memcpy(u->data + u->len, data, n);
		u->len += n;
		*size = 0;
		return MHD_YES;
	}
	if (strcmp(url, "/echo") == 0) {
		const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
		const char *x = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Test");
		int n = snprintf(body, sizeof(body), "%s|%.*s|%s|%s", method, (int)u->len, u->data, auth ? auth : "",
				 x ? x : "");

		return reply(c, 200, body, (size_t)n, "Retry-After", "7");
	}
	if (strcmp(url, "/busy") == 0)
		return reply(c, 503, "busy", 4, "Retry-After", "120");
	if (strcmp(url, "/slow") == 0) {
		usleep(1500 * 1000);
		return reply(c, 200, "late", 4, NULL, NULL);
	}
	if (strcmp(url, "/big") == 0) {
		static char big[3 << 20];

		memset(big, 'x', sizeof(big));
		return reply(c, 200, big, sizeof(big), NULL, NULL);
	}
	return reply(c, 404, "no", 2, NULL, NULL);
}

static void completed(void *cls, struct MHD_Connection *c, void **state, enum MHD_RequestTerminationCode t)
{
	free(*state);
	*state = NULL;
}

static int setup(void **state)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

	server = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL,
				  serve, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
				  MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_END);
	if (!server)
		return -1;
	port = MHD_get_daemon_info(server, MHD_DAEMON_INFO_BIND_PORT)->port;
	if (sd_event_new(&event) < 0 || http_new(event, &http) < 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	http_free(http);
	sd_event_unref(event);
	MHD_stop_daemon(server);
	return 0;
}

struct result {
	int calls;
	int status;
	long code;
	char body[256];
	size_t body_len;
	int64_t retry_after_ms, elapsed_ms;
	char op[128];
	int op_len;
	char error[256];
};

static void on_done(void *userdata, const struct http_response *r)
{
	struct result *res = userdata;

	res->calls++;
	res->status = r->status;
	res->code = r->code;
	res->body_len = r->body_len;
	snprintf(res->body, sizeof(res->body), "%s", r->body);
	snprintf(res->error, sizeof(res->error), "%s", r->error ? r->error : "");
	res->retry_after_ms = r->retry_after_ms;
	res->elapsed_ms = r->elapsed_ms;
	res->op_len = http_response_header(r, "azure-asyncoperation", res->op, sizeof(res->op));
}

static void run_until(struct result *r, int calls)
{
	for (int i = 0; i < 1000 && r->calls < calls; i++)
		sd_event_run(event, 10000);
}

static char *url(const char *path)
{
	static char buf[128];

	snprintf(buf, sizeof(buf), "http://127.0.0.1:%d%s", port, path);
	return buf;
}

static void test_get_with_headers_and_bearer(void **state)
{
	static const char *const headers[] = { "X-Test: hello", NULL };
	struct http_request req = { .url = url("/echo"), .headers = headers, .bearer_token = "tok" };
	struct result r = { 0 };

	assert_int_equal(http_start(http, &req, on_done, &r, NULL), 0);
	assert_int_equal(r.calls, 0);
	assert_int_equal(http_in_flight(http), 1);
	run_until(&r, 1);
	assert_int_equal(r.calls, 1);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.code, 200);
	assert_string_equal(r.body, "GET||Bearer tok|hello");
	assert_int_equal(r.retry_after_ms, 7000);
	/* Header lookup is case-insensitive and trims blanks. */
	assert_int_equal(r.op_len, (int)strlen("https://example.test/op/1"));
	assert_string_equal(r.op, "https://example.test/op/1");
	assert_int_equal(http_in_flight(http), 0);
}

static void test_post_body_and_basic_auth(void **state)
{
	struct http_request req = {
		.method = "POST", .url = url("/echo"), .body = "{\"a\":1}", .body_len = 7,
		.username = "ops", .password = "pw",
	};
	struct result r = { 0 };

	assert_int_equal(http_start(http, &req, on_done, &r, NULL), 0);
	run_until(&r, 1);
	assert_int_equal(r.code, 200);
	/* "ops:pw" in base64 is b3BzOnB3. */
	assert_string_equal(r.body, "POST|{\"a\":1}|Basic b3BzOnB3|");
}

static void test_error_status_and_retry_after(void **state)
{
	struct http_request req = { .method = "PATCH", .url = url("/busy"), .body = "x", .body_len = 1 };
	struct result r = { 0 };

	assert_int_equal(http_start(http, &req, on_done, &r, NULL), 0);
	run_until(&r, 1);
	/* An HTTP error is a reply: status 0, the code says the rest. */
	assert_int_equal(r.status, 0);
	assert_int_equal(r.code, 503);
	assert_int_equal(r.retry_after_ms, 120000);
	assert_string_equal(r.body, "busy");
}

/* A listening socket that never accepts: the kernel completes the
 * connection and takes the request, and no reply ever comes, whatever the
 * machine's load (a server that sleeps before replying races the client's
 * timeout on a loaded machine). Returns its port, or -1. */
static int black_hole(int *fd)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);

	*fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (*fd < 0 || bind(*fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(*fd, 16) < 0 ||
	    getsockname(*fd, (struct sockaddr *)&sa, &len) < 0)
		return -1;
	return ntohs(sa.sin_port);
}

static void test_timeout_and_concurrency(void **state)
{
	struct http_request hang = { .timeout_ms = 60000 }, slow = { .timeout_ms = 300 }, fast = { 0 };
	struct result rh = { 0 }, rs = { 0 }, rf = { 0 };
	struct http_call *hc;
	char hole[64];
	int fd, hp = black_hole(&fd);

	assert_true(hp > 0);
	snprintf(hole, sizeof(hole), "http://127.0.0.1:%d/", hp);
	hang.url = slow.url = hole;
	/* The fast call is not held up by one that gets no reply. */
	assert_int_equal(http_start(http, &hang, on_done, &rh, &hc), 0);
	fast.url = url("/echo");
	assert_int_equal(http_start(http, &fast, on_done, &rf, NULL), 0);
	run_until(&rf, 1);
	assert_int_equal(rf.code, 200);
	assert_int_equal(rh.calls, 0);
	http_cancel(hc);
	/* A call with no reply ends at its timeout. */
	assert_int_equal(http_start(http, &slow, on_done, &rs, NULL), 0);
	run_until(&rs, 1);
	assert_int_equal(rs.status, -ETIMEDOUT);
	assert_string_equal(rs.error, "no reply within 300 ms");
	assert_true(rs.elapsed_ms >= 290);
	close(fd);
}

static void test_body_limit(void **state)
{
	struct http_request req = { .url = url("/big"), .max_body = 1 << 20 };
	struct result r = { 0 };

	assert_int_equal(http_start(http, &req, on_done, &r, NULL), 0);
	run_until(&r, 1);
	assert_int_equal(r.status, -EFBIG);
	assert_string_equal(r.error, "reply larger than 1048576 bytes");
}

static void test_cancel(void **state)
{
	struct http_request req = { .url = url("/slow"), .timeout_ms = 5000 };
	struct result r = { 0 };
	struct http_call *c;

	assert_int_equal(http_start(http, &req, on_done, &r, &c), 0);
	for (int i = 0; i < 5; i++)
		sd_event_run(event, 10000);
	http_cancel(c);
	assert_int_equal(http_in_flight(http), 0);
	for (int i = 0; i < 20; i++)
		sd_event_run(event, 10000);
	assert_int_equal(r.calls, 0);
	http_cancel(NULL);
}

static void test_refused_and_bad_requests(void **state)
{
	struct http_request req = { .url = "http://127.0.0.1:1/" };
	struct result r = { 0 };

	assert_int_equal(http_start(http, &req, on_done, &r, NULL), 0);
	run_until(&r, 1);
	assert_int_equal(r.status, -ECONNREFUSED);
	assert_int_equal(r.code, 0);
	assert_true(strlen(r.error) > 0);
	req.url = "file:///etc/passwd";
	assert_int_equal(http_start(http, &req, on_done, &r, NULL), -EINVAL);
	req.url = NULL;
	assert_int_equal(http_start(http, &req, on_done, &r, NULL), -EINVAL);
}

static void test_free_with_calls_in_flight(void **state)
{
	struct http_request req = { .url = url("/slow") };
	struct result r = { 0 };
	struct http *h2;

	assert_int_equal(http_new(event, &h2), 0);
	assert_int_equal(http_start(h2, &req, on_done, &r, NULL), 0);
	sd_event_run(event, 10000);
	http_free(h2);
	for (int i = 0; i < 10; i++)
		sd_event_run(event, 10000);
	assert_int_equal(r.calls, 0);
	http_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_get_with_headers_and_bearer),
		cmocka_unit_test(test_post_body_and_basic_auth),
		cmocka_unit_test(test_error_status_and_retry_after),
		cmocka_unit_test(test_timeout_and_concurrency),
		cmocka_unit_test(test_body_limit),
		cmocka_unit_test(test_cancel),
		cmocka_unit_test(test_refused_and_bad_requests),
		cmocka_unit_test(test_free_with_calls_in_flight),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
