/* Unit tests for the metrics registry and its endpoint: what a scrape shows
 * after decisions, actions, errors and driver calls, in the exposition
 * format (HELP and TYPE first, escaped labels, cumulative buckets), served
 * over HTTP from the event loop. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
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
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "admin/httpd.h"
#include "admin/metrics.h"
#include "loop-http.h"

static struct signal_conf sigs[2] = {{.name = "cpu"}, {.name = "queue"}};
static struct group_conf groups[2] = {
	{.name = "web", .signals = sigs, .n_signals = 2},
	{.name = "we\"ird\\na\nme", .signals = sigs, .n_signals = 1},
};
static struct config conf = {.groups = groups, .n_groups = 2};

/* Where the registry's families start, after the process's. */
#define REGISTRY_START "# HELP autoscaled_build_info "

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
	struct decision d = {.current = 4, .desired = 6, .n_signals = 2, .boot_ms = 95000};
	struct metrics_group_status st = {.pinned = true, .evaluation_seconds = 0.003};

	/* The cpu signal's forecast is observed: exported, not acted on. */
	d.signals[0] = (struct signal_decision){.valid = true, .value = 90, .recommendation = 6, .forecast = true,
						.forecast_value = 720, .forecast_recommendation = 8};
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
	metrics_record_driver_call(m, "web", "libvirt", "set_capacity", 0.2, 0.125);
	metrics_record_driver_call(m, "web", "libvirt", "set_capacity", 7, 0.25);
	metrics_record_driver_call(m, "db", "gce-mig", "set_capacity", 0.01, 0);
	t = render(m);

	assert_non_null(strstr(t, "# HELP autoscaled_group_desired_instances "));
	assert_non_null(strstr(t, "# TYPE autoscaled_group_desired_instances gauge\n"));
	assert_non_null(strstr(t, "autoscaled_group_current_instances{group=\"web\"} 4\n"));
	assert_non_null(strstr(t, "autoscaled_group_desired_instances{group=\"web\"} 6\n"));
	assert_non_null(strstr(t, "autoscaled_signal_value{group=\"web\",signal=\"cpu\"} 90\n"));
	assert_non_null(strstr(t, "autoscaled_signal_recommendation{group=\"web\",signal=\"cpu\"} 6\n"));
	assert_non_null(strstr(t, "autoscaled_signal_forecast{group=\"web\",signal=\"cpu\"} 720\n"));
	assert_non_null(strstr(t, "autoscaled_signal_forecast_recommendation{group=\"web\",signal=\"cpu\"} 8\n"));
	assert_non_null(strstr(t, "autoscaled_group_boot_seconds{group=\"web\"} 95\n"));
	/* No forecaster, no series: never a made-up zero. */
	assert_null(strstr(t, "autoscaled_signal_forecast{group=\"web\",signal=\"queue\"}"));
	/* An invalid signal has no value, never a zero; its validity says 0. */
	assert_null(strstr(t, "autoscaled_signal_value{group=\"web\",signal=\"queue\"}"));
	assert_null(strstr(t, "autoscaled_signal_recommendation{group=\"web\",signal=\"queue\"}"));
	assert_non_null(strstr(t, "autoscaled_signal_valid{group=\"web\",signal=\"queue\"} 0\n"));
	assert_non_null(strstr(t, "autoscaled_signal_valid{group=\"web\",signal=\"cpu\"} 1\n"));
	assert_non_null(strstr(t, "# TYPE autoscaled_actions_total counter\n"));
	assert_non_null(strstr(t, "autoscaled_actions_total{group=\"web\",direction=\"out\"} 2\n"));
	assert_non_null(strstr(t, "autoscaled_actions_total{group=\"web\",direction=\"in\"} 1\n"));
	assert_non_null(strstr(t, "autoscaled_errors_total{group=\"web\",kind=\"observe\"} 2\n"));
	/* The distributions are over all groups, by driver and operation;
	 * buckets are cumulative: 0.2 s falls in le=0.25 and above, 7 s in
	 * le=10 and above. */
	assert_non_null(strstr(t, "# TYPE autoscaled_driver_call_duration_seconds histogram\n"));
	/* The drivers' CPU, a counter by driver and operation. */
	assert_non_null(strstr(t, "# TYPE autoscaled_driver_call_cpu_seconds_total counter\n"));
	assert_non_null(strstr(t, "autoscaled_driver_call_cpu_seconds_total{driver=\"libvirt\",operation=\"set_capacity\"} "
				  "0.375\n"));
	assert_non_null(
		strstr(t, "autoscaled_driver_call_cpu_seconds_total{driver=\"gce-mig\",operation=\"set_capacity\"} 0\n"));
	assert_non_null(strstr(t, "autoscaled_driver_call_duration_seconds_bucket{driver=\"libvirt\","
				  "operation=\"set_capacity\",le=\"0.1\"} 0\n"));
	assert_non_null(strstr(t, "autoscaled_driver_call_duration_seconds_bucket{driver=\"libvirt\","
				  "operation=\"set_capacity\",le=\"0.25\"} 1\n"));
	assert_non_null(strstr(t, "autoscaled_driver_call_duration_seconds_bucket{driver=\"libvirt\","
				  "operation=\"set_capacity\",le=\"10\"} 2\n"));
	assert_non_null(strstr(t, "autoscaled_driver_call_duration_seconds_bucket{driver=\"libvirt\","
				  "operation=\"set_capacity\",le=\"+Inf\"} 2\n"));
	assert_non_null(strstr(t, "autoscaled_driver_call_duration_seconds_sum{driver=\"libvirt\","
				  "operation=\"set_capacity\"} 7.2\n"));
	assert_non_null(strstr(t, "autoscaled_driver_call_duration_seconds_count{driver=\"libvirt\","
				  "operation=\"set_capacity\"} 2\n"));
	assert_non_null(strstr(t, "autoscaled_driver_call_duration_seconds_bucket{driver=\"gce-mig\","
				  "operation=\"set_capacity\",le=\"0.01\"} 1\n"));
	/* No group label on a bucket: a group's calls are a sum and a count. */
	assert_null(strstr(t, "autoscaled_driver_call_duration_seconds_bucket{group="));
	assert_non_null(strstr(t, "# TYPE autoscaled_group_driver_call_duration_seconds summary\n"));
	assert_non_null(strstr(t, "autoscaled_group_driver_call_duration_seconds_sum{group=\"web\","
				  "operation=\"set_capacity\"} 7.2\n"));
	assert_non_null(strstr(t, "autoscaled_group_driver_call_duration_seconds_count{group=\"web\","
				  "operation=\"set_capacity\"} 2\n"));
	assert_non_null(strstr(t, "autoscaled_group_driver_call_duration_seconds_count{group=\"db\","
				  "operation=\"set_capacity\"} 1\n"));
	assert_non_null(strstr(t, "# TYPE autoscaled_evaluation_duration_seconds histogram\n"));
	assert_non_null(strstr(t, "\nautoscaled_evaluation_duration_seconds_count 1\n"));
	assert_non_null(strstr(t, "\nautoscaled_evaluation_duration_seconds_bucket{le=\"+Inf\"} 1\n"));
	assert_non_null(strstr(t, "autoscaled_group_evaluation_duration_seconds_count{group=\"web\"} 1\n"));
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

	/* The renamed group is gone after a reload; web keeps its counters,
	 * and the names it shared with it (its signal "cpu", its profile,
	 * kept once for both groups). */
	metrics_record_action(m, "web", DIR_IN);
	metrics_prune(m, &conf);
	metrics_prune(m, &only_web);
	t = render(m);
	assert_null(strstr(t, "ird"));
	assert_non_null(strstr(t, "autoscaled_actions_total{group=\"web\",direction=\"in\"} 1\n"));
	assert_non_null(strstr(t, "autoscaled_signal_value{group=\"web\",signal=\"cpu\"} 90\n"));
	free(t);
	/* A name let go by every group and held again. */
	metrics_prune(m, &(struct config){.groups = groups, .n_groups = 0});
	record_web(m);
	t = render(m);
	assert_non_null(strstr(t, "autoscaled_signal_value{group=\"web\",signal=\"cpu\"} 90\n"));
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

	/* A driver's warm members, per state; a bad value changes nothing. */
	metrics_record_driver_metric(m, "web", "azure-vmss", AUTOSCALED_METRIC_WARM_INSTANCES, "paused", 2);
	metrics_record_driver_metric(m, "web", "azure-vmss", AUTOSCALED_METRIC_WARM_INSTANCES, "booting", 0);
	metrics_record_driver_metric(m, "web", "azure-vmss", AUTOSCALED_METRIC_WARM_INSTANCES, "paused", -1);
	metrics_record_driver_metric(m, "web", "azure-vmss", AUTOSCALED_METRIC_WARM_INSTANCES, NULL, 3);
	t = render(m);
	assert_non_null(strstr(t, "# TYPE autoscaled_group_warm_instances gauge\n"));
	assert_non_null(strstr(t, "autoscaled_group_warm_instances{group=\"web\",driver=\"azure-vmss\",state=\"paused\"} 2\n"));
	assert_non_null(strstr(t, "autoscaled_group_warm_instances{group=\"web\",driver=\"azure-vmss\",state=\"booting\"} 0\n"));
	assert_null(strstr(t, "autoscaled_group_host_room{"));
	free(t);
	metrics_record_driver_metric(m, "web", "azure-vmss", AUTOSCALED_METRIC_HOST_ROOM, NULL, 3);
	metrics_record_driver_metric(m, "web", "azure-vmss", AUTOSCALED_METRIC_HOST_ROOM, NULL, -1);
	t = render(m);
	assert_non_null(strstr(t, "autoscaled_group_host_room{group=\"web\",driver=\"azure-vmss\"} 3\n"));
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

static struct profile_conf web_profiles[2] = {
	{.name = "default", .kind = PROFILE_DEFAULT, .min = 2, .max = 10, .def = 3},
	{.name = "sales", .kind = PROFILE_FIXED, .min = 5, .max = 20, .def = 6},
};

/* The number on the line that starts with `series` (the whole series,
 * labels included), or NAN when there is none. */
static double sample(const char *t, const char *series)
{
	size_t n = strlen(series);

	for (const char *p = t; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, series, n) == 0 && p[n] == ' ')
			return strtod(p + n + 1, NULL);
	return NAN;
}

static void test_alerting_series(void **st)
{
	struct group_conf web = {.name = "web", .signals = sigs, .n_signals = 2, .profiles = web_profiles,
				 .n_profiles = 2};
	struct config c = {.groups = &web, .n_groups = 1};
	struct decision d = {.current = 6, .desired = 6, .n_signals = 2, .profile = "sales", .min = 5, .max = 20,
			     .def = 6, .hold = HOLD_STABILIZATION};
	struct metrics_group_status s = {.evaluation_seconds = -1};
	struct metrics *m;
	time_t before = time(NULL);
	char *t;

	(void)st;
	assert_int_equal(metrics_new(NULL, NULL, &m), 0);
	metrics_prune(m, &c);
	t = render(m);
	/* Before any evaluation: the build, a successful first load, the
	 * default profile's bounds, every configured signal not yet valid, and
	 * no timestamp of something that has not happened. */
	assert_non_null(strstr(t, "# TYPE autoscaled_build_info gauge\nautoscaled_build_info{version=\"" PACKAGE_VERSION
				  "\"} 1\n"));
	assert_true(sample(t, "autoscaled_config_last_reload_successful") == 1);
	assert_true(sample(t, "autoscaled_config_last_reload_success_timestamp_seconds") >= (double)before);
	assert_true(sample(t, "autoscaled_group_min_instances{group=\"web\"}") == 2);
	assert_true(sample(t, "autoscaled_group_max_instances{group=\"web\"}") == 10);
	assert_true(sample(t, "autoscaled_group_default_instances{group=\"web\"}") == 3);
	assert_true(sample(t, "autoscaled_group_profile_info{group=\"web\",profile=\"default\"}") == 1);
	assert_true(sample(t, "autoscaled_signal_valid{group=\"web\",signal=\"cpu\"}") == 0);
	assert_true(sample(t, "autoscaled_signal_valid{group=\"web\",signal=\"queue\"}") == 0);
	assert_null(strstr(t, "autoscaled_group_last_evaluation_timestamp_seconds{"));
	assert_null(strstr(t, "autoscaled_group_last_observation_success_timestamp_seconds{"));
	assert_null(strstr(t, "autoscaled_signal_last_sample_timestamp_seconds{"));
	/* Every reason is there from the start, so that rate() sees the first
	 * increment. */
	assert_true(sample(t, "autoscaled_holds_total{group=\"web\",reason=\"stabilization\"}") == 0);
	assert_true(sample(t, "autoscaled_holds_total{group=\"web\",reason=\"safe_start\"}") == 0);
	assert_true(sample(t, "autoscaled_holds_total{group=\"web\",reason=\"partial_observation\"}") == 0);
	assert_true(sample(t, "autoscaled_holds_total{group=\"web\",reason=\"driver_busy\"}") == 0);
	assert_true(sample(t, "autoscaled_holds_total{group=\"web\",reason=\"paused\"}") == 0);
	assert_true(sample(t, "autoscaled_holds_total{group=\"web\",reason=\"pinned\"}") == 0);
	assert_null(strstr(t, "reason=\"none\""));
	assert_null(strstr(t, "reason=\"unknown\""));
	free(t);
	/* The counter has a slot for every reason the engine names. */
	assert_string_equal(decision_hold_name((enum hold_reason)HOLD_REASON_COUNT), "unknown");

	d.signals[0] = (struct signal_decision){.valid = true, .value = 50, .recommendation = 6};
	d.signals[1] = (struct signal_decision){.valid = true, .value = 10, .recommendation = 1};
	metrics_record_decision(m, &web, &d, &s);
	metrics_record_decision(m, &web, &d, &s);
	metrics_record_observation(m, "web");
	metrics_record_sample(m, "web", "queue");
	metrics_record_sample(m, "web", "gone"); /* not configured: dropped */
	t = render(m);
	assert_true(sample(t, "autoscaled_group_min_instances{group=\"web\"}") == 5);
	assert_true(sample(t, "autoscaled_group_max_instances{group=\"web\"}") == 20);
	assert_true(sample(t, "autoscaled_group_default_instances{group=\"web\"}") == 6);
	assert_true(sample(t, "autoscaled_group_profile_info{group=\"web\",profile=\"sales\"}") == 1);
	assert_null(strstr(t, "profile=\"default\""));
	assert_true(sample(t, "autoscaled_holds_total{group=\"web\",reason=\"stabilization\"}") == 2);
	assert_true(sample(t, "autoscaled_signal_valid{group=\"web\",signal=\"queue\"}") == 1);
	assert_true(sample(t, "autoscaled_group_last_evaluation_timestamp_seconds{group=\"web\"}") >= (double)before);
	assert_true(sample(t, "autoscaled_group_last_observation_success_timestamp_seconds{group=\"web\"}") >=
		    (double)before);
	assert_true(sample(t, "autoscaled_signal_last_sample_timestamp_seconds{group=\"web\",signal=\"queue\"}") >=
		    (double)before);
	assert_null(strstr(t, "signal=\"gone\""));
	assert_null(strstr(t, "autoscaled_signal_last_sample_timestamp_seconds{group=\"web\",signal=\"cpu\"}"));
	free(t);

	/* The source dies: the signal turns invalid, its value goes, its
	 * validity stays, at 0. */
	d.signals[1] = (struct signal_decision){.valid = false};
	metrics_record_decision(m, &web, &d, &s);
	t = render(m);
	assert_true(sample(t, "autoscaled_signal_valid{group=\"web\",signal=\"queue\"}") == 0);
	assert_null(strstr(t, "autoscaled_signal_value{group=\"web\",signal=\"queue\"}"));
	free(t);

	/* A failed reload says so and keeps the time of the last good one; a
	 * reload that drops a signal drops its series, one that keeps a
	 * signal keeps what it recorded. */
	metrics_record_reload(m, false);
	web.n_signals = 1;
	metrics_prune(m, &c);
	t = render(m);
	assert_true(sample(t, "autoscaled_config_last_reload_successful") == 0);
	assert_true(sample(t, "autoscaled_config_last_reload_success_timestamp_seconds") >= (double)before);
	assert_null(strstr(t, "signal=\"queue\""));
	assert_true(sample(t, "autoscaled_signal_valid{group=\"web\",signal=\"cpu\"}") == 1);
	free(t);
	metrics_record_reload(m, true);
	t = render(m);
	assert_true(sample(t, "autoscaled_config_last_reload_successful") == 1);
	free(t);
	metrics_free(m);
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
	uint64_t first = loop_http_now();

	assert_int_equal(loop_http(e, &f), 0);
	uint64_t answered = loop_http_now();

	assert_int_equal(f.status, 200);
	assert_non_null(strstr(f.reply, "autoscaled_group_desired_instances{group=\"web\"} 6\n"));

	/* Scrapes within a second of one another share its exposition (made
	 * once, held once however many read it); the next one after that
	 * shows what changed. */
	struct decision d7 = {.current = 6, .desired = 7, .n_signals = 1};
	struct metrics_group_status st7 = {.evaluation_seconds = 0.001};
	uint64_t fresh = 0;

	d7.signals[0] = (struct signal_decision){.valid = true, .value = 100, .recommendation = 7};
	metrics_record_decision(m, &groups[0], &d7, &st7);
	/* Bounded by time, not by a count of scrapes: the loop may hand back
	 * at once many times in a row, and a loaded machine may be slow; the
	 * check below ends it either way once the second is over. */
	while (!fresh) {
		struct loop_http g = {.method = "GET", .url = url};
		uint64_t asked = loop_http_now();

		assert_int_equal(loop_http(e, &g), 0);
		assert_int_equal(g.status, 200);
		if (strstr(g.reply, "autoscaled_group_desired_instances{group=\"web\"} 7\n"))
			fresh = loop_http_now();
		else if (asked > answered + 1050000)
			fail_msg("a scrape %llu ms after the first was answered still has its exposition",
				 (unsigned long long)(asked - answered) / 1000);
		free(g.reply);
		if (!fresh)
			sd_event_run(e, 100000);
	}
	assert_true(fresh > 0);
	if (fresh - first < 980000)
		fail_msg("the exposition changed %llu ms after the first scrape, within the second it is shared",
			 (unsigned long long)(fresh - first) / 1000);

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

	/* Slow clients (a byte a second, never done) more than the limit:
	 * a scrape is answered at once while they go on. A URL longer than a
	 * connection's memory gets 414, a declared body over the limit 413. */
	struct loop_http_trickle *t;
	struct loop_http q3 = {.method = "GET", .url = url};
	uint64_t t0;
	size_t k;
	char out[1024], *big = malloc(HTTPD_CONNECTION_MEMORY + 256);

	assert_int_equal(loop_http_trickle_start(e, (struct sockaddr *)&sa, sizeof(sa), HTTPD_MAX_CONNECTIONS + 16,
						 1000000, &t), 0);
	t0 = loop_http_now();
	assert_int_equal(loop_http(e, &q3), 0);
	assert_int_equal(q3.status, 200);
	if (loop_http_now() - t0 > 2000000)
		fail_msg("a scrape during the abuse took %llu ms", (unsigned long long)(loop_http_now() - t0) / 1000);
	free(q3.reply);
	k = (size_t)sprintf(big, "GET /");
	memset(big + k, 'm', HTTPD_CONNECTION_MEMORY);
	k += HTTPD_CONNECTION_MEMORY;
	k += (size_t)sprintf(big + k, " HTTP/1.1\r\nHost: localhost\r\n\r\n");
	assert_true(loop_http_raw(e, (struct sockaddr *)&sa, sizeof(sa), big, k, out, sizeof(out)) > 0);
	assert_memory_equal(out, "HTTP/1.1 414 ", 13);
	free(big);
	static const char post[] = "POST /metrics HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1000000\r\n\r\n";

	assert_true(loop_http_raw(e, (struct sockaddr *)&sa, sizeof(sa), post, sizeof(post) - 1, out, sizeof(out)) > 0);
	assert_memory_equal(out, "HTTP/1.1 413 ", 13);
	loop_http_trickle_free(t);

	/* A scraper that takes gzip (Prometheus does) gets the exposition
	 * compressed. The one shared with plain scrapers within the second
	 * is not given to it, nor its own to them. */
	struct loop_http p1 = {.method = "GET", .url = url}, p2 = p1,
			 z = {.method = "GET", .url = url, .accept_encoding = "gzip"};
	char *text;
	size_t text_len;

	assert_int_equal(loop_http(e, &p1), 0);
	assert_int_equal(loop_http(e, &z), 0);
	assert_int_equal(loop_http(e, &p2), 0);
	assert_int_equal(p1.status, 200);
	assert_int_equal(z.status, 200);
	assert_int_equal(p2.status, 200);
	assert_string_equal(p1.content_encoding, "");
	assert_string_equal(z.content_encoding, "gzip");
	assert_string_equal(z.vary, "Accept-Encoding");
	assert_string_equal(p2.content_encoding, "");
	assert_int_equal(loop_http_gunzip(z.reply, z.len, &text, &text_len), 0);
	assert_non_null(strstr(text, "autoscaled_group_desired_instances{group=\"web\"} 7\n"));
	/* The process's figures are read at each rendering; the rest is the
	 * registry's, the same in both. */
	assert_non_null(strstr(text, REGISTRY_START));
	assert_non_null(strstr(p1.reply, REGISTRY_START));
	assert_string_equal(strstr(text, REGISTRY_START), strstr(p1.reply, REGISTRY_START));
	assert_string_equal(p2.reply, p1.reply);
	free(text);
	free(p1.reply);
	free(p2.reply);
	free(z.reply);

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

/* The value of NAME in a scrape rendered now. */
static double scrape_sample(const struct metrics *m, const char *name)
{
	char *text = render(m);
	double v = sample(text, name);

	free(text);
	return v;
}

/* The process's own figures, as Prometheus' client libraries export them,
 * and the heap's: each scrape reads them anew, from the kernel and the
 * allocator. */
static void test_process(void **st)
{
	static const char *const names[] = {
		"process_cpu_seconds_total", "process_start_time_seconds",   "process_resident_memory_bytes",
		"process_virtual_memory_bytes", "process_open_fds",	      "process_max_fds",
		"autoscaled_threads",	     "autoscaled_heap_in_use_bytes", "autoscaled_heap_free_bytes",
		"autoscaled_heap_mapped_bytes",
	};
	struct metrics *m;
	char *text, header[128], *big;
	long pages = 0;
	double v, fds;
	FILE *f;
	int fd;

	(void)st;
	assert_int_equal(metrics_new(NULL, NULL, &m), 0);
	text = render(m);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(header, sizeof(header), "# TYPE %s ", names[i]);
		assert_non_null(strstr(text, header));
		v = sample(text, names[i]);
		assert_false(isnan(v));
		assert_true(v >= 0);
	}
	/* The resident size is the kernel's, within what the scrape added. */
	f = fopen("/proc/self/statm", "re");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%*s %ld", &pages), 1);
	fclose(f);
	v = sample(text, "process_resident_memory_bytes");
	assert_true(fabs(v - (double)pages * (double)sysconf(_SC_PAGESIZE)) < 8.0 * 1024 * 1024);
	assert_true(fabs(sample(text, "process_start_time_seconds") - (double)time(NULL)) < 3600);
	assert_true(sample(text, "autoscaled_threads") >= 1);
	free(text);

	/* A descriptor opened is counted at the next scrape. */
	fds = scrape_sample(m, "process_open_fds");
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_true(scrape_sample(m, "process_open_fds") == fds + 1);
	close(fd);
	assert_true(scrape_sample(m, "process_open_fds") == fds);

	/* CPU time only grows. */
	v = scrape_sample(m, "process_cpu_seconds_total");
	for (volatile unsigned long i = 0; i < 20000000UL; i++)
		;
	assert_true(scrape_sample(m, "process_cpu_seconds_total") > v);

#ifndef __SANITIZE_ADDRESS__
	/* The heap's figures are glibc's (ASan's allocator has its own). A
	 * block beyond the threshold for a mapping of its own counts there;
	 * blocks below it count in use, and free once freed. */
	v = scrape_sample(m, "autoscaled_heap_mapped_bytes");
	big = malloc(64 << 20);
	assert_non_null(big);
	memset(big, 1, 64 << 20);
	assert_true(scrape_sample(m, "autoscaled_heap_mapped_bytes") >= v + (64 << 20));
	free(big);
	{
		enum { N_SMALL = 4096 };
		char **small = calloc(N_SMALL, sizeof(*small));
		double in_use, free_before;

		assert_non_null(small);
		in_use = scrape_sample(m, "autoscaled_heap_in_use_bytes");
		for (size_t i = 0; i < N_SMALL; i++) {
			small[i] = malloc(1000);
			assert_non_null(small[i]);
		}
		assert_true(scrape_sample(m, "autoscaled_heap_in_use_bytes") >= in_use + N_SMALL * 1000);
		free_before = scrape_sample(m, "autoscaled_heap_free_bytes");
		/* Every other one, so that they cannot merge into the top. */
		for (size_t i = 0; i < N_SMALL; i += 2)
			free(small[i]);
		assert_true(scrape_sample(m, "autoscaled_heap_free_bytes") >= free_before + N_SMALL / 2 * 1000);
		for (size_t i = 1; i < N_SMALL; i += 2)
			free(small[i]);
		free(small);
	}
#else
	(void)big;
#endif
	metrics_free(m);
}

/* The cluster families: absent outside a cluster (a zero there would say
 * "no lease" of a daemon that has none to have), then the lease's state,
 * counters, members and orphans, and a group's ownership as its decision
 * reported it. */
static void test_cluster(void **st)
{
	struct decision d = {.current = 2, .desired = 2};
	struct metrics_group_status owned = {.owned = 1, .evaluation_seconds = -1};
	struct metrics_group_status other = {.owned = 0, .evaluation_seconds = -1};
	struct metrics *m;
	char *t;

	(void)st;
	assert_int_equal(metrics_new(NULL, NULL, &m), 0);
	metrics_record_decision(m, &groups[0], &d, &owned);
	t = render(m);
	assert_null(strstr(t, "autoscaled_cluster_"));
	assert_null(strstr(t, "autoscaled_group_owned"));
	free(t);

	metrics_record_cluster(m, &(struct metrics_cluster){ .lease_valid = false, .renewals = 7, .renew_failures = 3,
							     .leases_lost = 1, .members = 3, .owned = 0,
							     .orphaned = 2 });
	metrics_record_decision(m, &groups[1], &d, &other);
	t = render(m);
	assert_non_null(strstr(t, "# TYPE autoscaled_cluster_lease_valid gauge\nautoscaled_cluster_lease_valid 0\n"));
	assert_non_null(strstr(t, "\nautoscaled_cluster_lease_renewals_total 7\n"));
	assert_non_null(strstr(t, "\nautoscaled_cluster_lease_renewal_failures_total 3\n"));
	assert_non_null(strstr(t, "\nautoscaled_cluster_leases_lost_total 1\n"));
	assert_non_null(strstr(t, "\nautoscaled_cluster_members 3\n"));
	assert_non_null(strstr(t, "\nautoscaled_cluster_orphaned_groups 2\n"));
	assert_non_null(strstr(t, "\nautoscaled_group_owned{group=\"web\"} 1\n"));
	assert_non_null(strstr(t, "\nautoscaled_group_owned{group=\"we\\\"ird\\\\na\\nme\"} 0\n"));
	free(t);
	metrics_record_cluster(m, &(struct metrics_cluster){ .lease_valid = true, .members = 3 });
	t = render(m);
	assert_non_null(strstr(t, "\nautoscaled_cluster_lease_valid 1\n"));
	free(t);
	metrics_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exposition),
		cmocka_unit_test(test_cluster),
		cmocka_unit_test(test_process),
		cmocka_unit_test(test_escaping_and_prune),
		cmocka_unit_test(test_driver_metrics),
		cmocka_unit_test(test_alerting_series),
		cmocka_unit_test(test_endpoint),
	};

	curl_global_init(CURL_GLOBAL_DEFAULT);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
