/* Unit tests for the metrics registry and its endpoint: what a scrape shows
 * after decisions, actions, errors and driver calls, in the exposition
 * format (HELP and TYPE first, escaped labels, cumulative buckets), served
 * over HTTP from the event loop. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "metrics.h"
#include "../helpers/loop-http.h"

static struct signal_conf sigs[2] = {{.name = "cpu"}, {.name = "queue"}};
static struct group_conf groups[2] = {
	{.name = "web", .signals = sigs, .n_signals = 2},
	{.name = "we\"ird\\na\nme", .signals = sigs, .n_signals = 1},
};
static struct config conf = {.groups = groups, .n_groups = 2};

static char *render(const struct metrics *m)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(metrics_write(m, f), 0);
	fclose(f);
	return buf;
}

static void record_web(struct metrics *m)
{
	struct decision d = {.current = 4, .desired = 6, .n_signals = 2};
	struct metrics_group_status st = {.pinned = true, .evaluation_seconds = 0.003};

	d.signals[0] = (struct signal_decision){.valid = true, .value = 90, .recommendation = 6};
	d.signals[1] = (struct signal_decision){.valid = false};
	metrics_record_decision(m, &groups[0], &d, &st);
}

static void test_exposition(void **st)
{
	struct metrics *m;
	char *t;

	(void)st;
	assert_int_equal(metrics_new(NULL, NULL, &m), 0);
	record_web(m);
	metrics_record_action(m, "web", DIR_OUT);
	metrics_record_action(m, "web", DIR_OUT);
	metrics_record_action(m, "web", DIR_IN);
	metrics_record_error(m, "web", "observe");
	metrics_record_error(m, "web", "observe");
	metrics_record_driver_call(m, "web", "set_capacity", 0.2);
	metrics_record_driver_call(m, "web", "set_capacity", 7);
	t = render(m);

	assert_non_null(strstr(t, "# HELP autoscaled_group_desired_instances "));
	assert_non_null(strstr(t, "# TYPE autoscaled_group_desired_instances gauge\n"));
	assert_non_null(strstr(t, "autoscaled_group_current_instances{group=\"web\"} 4\n"));
	assert_non_null(strstr(t, "autoscaled_group_desired_instances{group=\"web\"} 6\n"));
	assert_non_null(strstr(t, "autoscaled_signal_value{group=\"web\",signal=\"cpu\"} 90\n"));
	assert_non_null(strstr(t, "autoscaled_signal_recommendation{group=\"web\",signal=\"cpu\"} 6\n"));
	/* An invalid signal is absent, never zero. */
	assert_null(strstr(t, "signal=\"queue\""));
	assert_non_null(strstr(t, "# TYPE autoscaled_actions_total counter\n"));
	assert_non_null(strstr(t, "autoscaled_actions_total{group=\"web\",direction=\"out\"} 2\n"));
	assert_non_null(strstr(t, "autoscaled_actions_total{group=\"web\",direction=\"in\"} 1\n"));
	assert_non_null(strstr(t, "autoscaled_errors_total{group=\"web\",kind=\"observe\"} 2\n"));
	assert_non_null(strstr(t, "# TYPE autoscaled_driver_call_duration_seconds histogram\n"));
	/* Buckets are cumulative: 0.2 s falls in le=0.25 and above, 7 s in
	 * le=10 and above. */
	assert_non_null(strstr(t, "autoscaled_driver_call_duration_seconds_bucket{group=\"web\",operation=\"set_capacity\","
				  "le=\"0.1\"} 0\n"));
	assert_non_null(strstr(t, "autoscaled_driver_call_duration_seconds_bucket{group=\"web\",operation=\"set_capacity\","
				  "le=\"0.25\"} 1\n"));
	assert_non_null(strstr(t, "autoscaled_driver_call_duration_seconds_bucket{group=\"web\",operation=\"set_capacity\","
				  "le=\"10\"} 2\n"));
	assert_non_null(strstr(t, "autoscaled_driver_call_duration_seconds_bucket{group=\"web\",operation=\"set_capacity\","
				  "le=\"+Inf\"} 2\n"));
	assert_non_null(strstr(t, "autoscaled_driver_call_duration_seconds_count{group=\"web\",operation=\"set_capacity\"} 2\n"));
	assert_non_null(strstr(t, "autoscaled_evaluation_duration_seconds_count{group=\"web\"} 1\n"));
	assert_non_null(strstr(t, "autoscaled_group_pinned{group=\"web\"} 1\n"));
	assert_non_null(strstr(t, "autoscaled_group_paused{group=\"web\"} 0\n"));
	assert_non_null(strstr(t, "autoscaled_inflight_actions{group=\"web\"} 0\n"));
	free(t);
	metrics_free(m);
}

static void test_escaping_and_prune(void **st)
{
	struct metrics *m;
	struct decision d = {.current = 1, .desired = 1};
	struct metrics_group_status s = {.evaluation_seconds = -1};
	struct config only_web = {.groups = groups, .n_groups = 1};
	char *t;

	(void)st;
	assert_int_equal(metrics_new(NULL, NULL, &m), 0);
	record_web(m);
	metrics_record_decision(m, &groups[1], &d, &s);
	t = render(m);
	assert_non_null(strstr(t, "autoscaled_group_desired_instances{group=\"we\\\"ird\\\\na\\nme\"} 1\n"));
	free(t);

	/* The renamed group is gone after a reload; web keeps its counters. */
	metrics_record_action(m, "web", DIR_IN);
	metrics_prune(m, &conf);
	metrics_prune(m, &only_web);
	t = render(m);
	assert_null(strstr(t, "ird"));
	assert_non_null(strstr(t, "autoscaled_actions_total{group=\"web\",direction=\"in\"} 1\n"));
	free(t);
	metrics_free(m);
}

struct publisher {
	struct metrics *m;
	int n;
};

/* A driver's worker thread publishing retries, one at a time. */
static void *publish_retries(void *arg)
{
	struct publisher *p = arg;

	for (int i = 0; i < p->n; i++)
		metrics_record_driver_metric(p->m, "web", "azure-vmss", AUTOSCALED_METRIC_RETRIES, NULL, 1);
	return NULL;
}

static void test_driver_metrics(void **st)
{
	struct metrics *m;
	struct decision d = {.current = 1, .desired = 1};
	struct metrics_group_status s = {.evaluation_seconds = -1};
	struct publisher p;
	pthread_t th[4];
	char *t;

	(void)st;
	assert_int_equal(metrics_new(NULL, NULL, &m), 0);
	p = (struct publisher){.m = m, .n = 2000};
	/* Four worker threads publish while the loop records and scrapes: no
	 * increment is lost. */
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&th[i], NULL, publish_retries, &p), 0);
	for (int i = 0; i < 50; i++) {
		record_web(m);
		free(render(m));
	}
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	metrics_record_driver_metric(m, "web", "azure-vmss", AUTOSCALED_METRIC_RATELIMIT_REMAINING, "subscription-reads",
				     11998);
	metrics_record_driver_metric(m, "web", "azure-vmss", AUTOSCALED_METRIC_RATELIMIT_REMAINING,
				     "Microsoft.Compute/GetVMScaleSet3Min", 197);
	/* The newest value of a budget replaces the older one. */
	metrics_record_driver_metric(m, "web", "azure-vmss", AUTOSCALED_METRIC_RATELIMIT_REMAINING, "subscription-reads",
				     11997);
	metrics_record_driver_metric(m, "web", "azure-vmss", AUTOSCALED_METRIC_API_ERRORS, NULL, 0);
	metrics_record_driver_metric(m, "web", "azure-vmss", AUTOSCALED_METRIC_API_ERRORS, NULL, 1);
	/* Nonsense from a driver changes nothing: an unknown metric, a negative
	 * or NaN increment, a budget without a name. */
	metrics_record_driver_metric(m, "web", "azure-vmss", (enum autoscaled_metric)99, "x", 5);
	metrics_record_driver_metric(m, "web", "azure-vmss", AUTOSCALED_METRIC_API_ERRORS, NULL, -3);
	metrics_record_driver_metric(m, "web", "azure-vmss", AUTOSCALED_METRIC_RETRIES, NULL, 0.0 / 0.0);
	metrics_record_driver_metric(m, "web", "azure-vmss", AUTOSCALED_METRIC_RATELIMIT_REMAINING, NULL, 1);
	/* A group whose driver publishes nothing (libvirt) has no series. */
	metrics_record_decision(m, &groups[1], &d, &s);
	t = render(m);
	assert_non_null(strstr(t, "# TYPE autoscaled_driver_ratelimit_remaining gauge\n"));
	assert_non_null(strstr(t, "autoscaled_driver_ratelimit_remaining{group=\"web\",driver=\"azure-vmss\","
				  "bucket=\"subscription-reads\"} 11997\n"));
	assert_non_null(strstr(t, "autoscaled_driver_ratelimit_remaining{group=\"web\",driver=\"azure-vmss\","
				  "bucket=\"Microsoft.Compute/GetVMScaleSet3Min\"} 197\n"));
	assert_null(strstr(t, "bucket=\"x\""));
	assert_non_null(strstr(t, "# TYPE autoscaled_driver_retries_total counter\n"));
	assert_non_null(strstr(t, "autoscaled_driver_retries_total{group=\"web\",driver=\"azure-vmss\"} 8000\n"));
	assert_non_null(strstr(t, "# TYPE autoscaled_driver_api_errors_total counter\n"));
	assert_non_null(strstr(t, "autoscaled_driver_api_errors_total{group=\"web\",driver=\"azure-vmss\"} 1\n"));
	assert_null(strstr(t, "autoscaled_driver_retries_total{group=\"we\\\""));
	free(t);

	/* A reload onto another driver starts its series afresh. */
	metrics_record_driver_metric(m, "web", "gce-mig", AUTOSCALED_METRIC_RETRIES, NULL, 2);
	t = render(m);
	assert_null(strstr(t, "bucket="));
	assert_non_null(strstr(t, "autoscaled_driver_retries_total{group=\"web\",driver=\"gce-mig\"} 2\n"));
	free(t);
	metrics_free(m);
}

/* A loopback port that was free a moment ago, from the kernel; a fixed or
 * derived port may be taken by anything else on the machine. */
static int free_port(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
		port = ntohs(sa.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static void test_endpoint(void **st)
{
	struct metrics *m = NULL;
	sd_event *e;
	char addr[64], url[128];
	struct loop_http f = {.method = "GET"}, nf = {.method = "GET"}, pf = {.method = "POST"};
	int port = 0;

	(void)st;
	assert_int_equal(sd_event_new(&e), 0);
	/* Another process may take the port between the two calls: try again. */
	for (int i = 0; i < 5 && !m; i++) {
		port = free_port();
		assert_true(port > 0);
		snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
		if (metrics_new(e, addr, &m) < 0)
			m = NULL;
	}
	assert_non_null(m);
	record_web(m);

	snprintf(url, sizeof(url), "http://%s/metrics", addr);
	f.url = url;
	assert_int_equal(loop_http(e, &f), 0);
	assert_int_equal(f.status, 200);
	assert_non_null(strstr(f.reply, "autoscaled_group_desired_instances{group=\"web\"} 6\n"));

	pf.url = url;
	assert_int_equal(loop_http(e, &pf), 0);
	assert_int_equal(pf.status, 405);

	snprintf(url, sizeof(url), "http://%s/other", addr);
	nf.url = url;
	assert_int_equal(loop_http(e, &nf), 0);
	assert_int_equal(nf.status, 404);
	assert_non_null(strstr(nf.reply, "\"error\""));

	/* More idle clients than the connection limit (64): a request made
	 * then is answered once they go, and so is the next. */
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct loop_http q1 = {.method = "GET", .url = url}, q2 = {.method = "GET", .url = url};
	int fds[72], n;

	snprintf(url, sizeof(url), "http://%s/metrics", addr);
	n = loop_http_hold(e, (struct sockaddr *)&sa, sizeof(sa), fds, 72);
	assert_int_equal(n, 72);
	assert_int_equal(loop_http_release_later(e, fds, n, 300000), 0);
	assert_int_equal(loop_http(e, &q1), 0);
	assert_int_equal(q1.status, 200);
	assert_int_equal(loop_http(e, &q2), 0);
	assert_int_equal(q2.status, 200);
	free(q1.reply);
	free(q2.reply);

	/* A second registry cannot take the same port, and says so. */
	struct metrics *m2 = NULL;

	assert_true(metrics_new(e, addr, &m2) < 0);
	assert_true(metrics_new(e, "nonsense", &m2) == -EINVAL);
	free(f.reply);
	free(pf.reply);
	free(nf.reply);
	metrics_free(m);
	sd_event_unref(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exposition),
		cmocka_unit_test(test_escaping_and_prune),
		cmocka_unit_test(test_driver_metrics),
		cmocka_unit_test(test_endpoint),
	};

	curl_global_init(CURL_GLOBAL_DEFAULT);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
