/* Prometheus metrics: the text exposition format on GET /metrics.
 *
 * The group runtimes push what they see (after each evaluation, action,
 * driver call and error) into a registry kept here; a scrape only formats
 * the registry. Counters and histograms survive a reload because entries
 * are kept by group name; metrics_prune() drops groups that are gone.
 *
 * The registry works without a listener (metrics_new with a NULL address),
 * so the daemon always records and only serves when agent.metrics_listen is
 * set. The endpoint runs on the loop's thread (see httpd.h); the registry
 * has a lock, because drivers publish their own metrics (host->metric)
 * from the worker threads that run their calls. */
#ifndef AUTOSCALED_METRICS_H
#define AUTOSCALED_METRICS_H

#include <stdbool.h>
#include <stdio.h>

#include <systemd/sd-event.h>

#include "autoscaled/driver.h"
#include "config/config.h"
#include "engine/engine.h"

struct metrics;

/* What a group's runtime reports with each decision. */
struct metrics_group_status {
	bool paused;
	bool pinned;
	bool in_flight;
	int owned; /* cluster mode: 1 when this agent acts on the group, 0 not; -1 not in a cluster */
	double evaluation_seconds; /* how long the evaluation took; < 0: not measured */
};

/* Creates the registry and, when `listen` is not NULL, serves it on that
 * TCP address ("127.0.0.1:9851"). Returns 0 or a negative errno (logged). */
int metrics_new(sd_event *event, const char *listen, struct metrics **ret);
void metrics_free(struct metrics *m);

/* Records a decision of group `g`: current and desired counts, each
 * signal's value and recommendation, pause, pin, in-flight, and the
 * evaluation's duration. */
void metrics_record_decision(struct metrics *m, const struct group_conf *g, const struct decision *d,
			     const struct metrics_group_status *st);

/* Counts an action handed to the driver. */
void metrics_record_action(struct metrics *m, const char *group, enum scale_direction dir);

/* Counts an error of `kind` (a short word: "observe", "scale_out",
 * "scale_in", "state", "hook", ...). */
void metrics_record_error(struct metrics *m, const char *group, const char *kind);

/* Records the duration of a call `operation` ("observe", "set_capacity",
 * "remove_instances", "open") of `group`'s driver `driver`: in the group's
 * sum and count, and in the histogram over all groups by driver and
 * operation; and the CPU time the call took on its thread, in a counter by
 * driver and operation. */
void metrics_record_driver_call(struct metrics *m, const char *group, const char *driver, const char *operation,
				double seconds, double cpu_seconds);

/* Records what driver `driver` of `group` published through host->metric:
 * a throttling budget's remaining requests (label: the budget), retries
 * or API errors to add to the group's totals, its warm members in one
 * state (label: the state), or how many more instances its hosts take. Unknown metrics are ignored. Safe from any
 * thread. Exported as autoscaled_driver_ratelimit_remaining
 * {group,driver,bucket}, autoscaled_driver_retries_total{group,driver},
 * autoscaled_driver_api_errors_total{group,driver},
 * autoscaled_group_warm_instances{group,driver,state} and
 * autoscaled_group_host_room{group,driver}. */
void metrics_record_driver_metric(struct metrics *m, const char *group, const char *driver,
				  enum autoscaled_metric metric, const char *label, double value);

/* Follows configuration `c` (at start-up and after each reload): forgets
 * every group it does not configure, and gives each group it configures
 * the series that exist whatever happens, one autoscaled_signal_valid per
 * configured signal and the bounds of the active profile. */
void metrics_prune(struct metrics *m, const struct config *c);

/* What the cluster mode (cluster/cluster.h) reports, every second. */
struct metrics_cluster {
	bool lease_valid;
	unsigned long renewals, renew_failures, leases_lost;
	size_t members, owned, orphaned;
};
/* Records the cluster's state; the cluster families are written only once
 * it was recorded (never as zeros for a daemon without a cluster). */
void metrics_record_cluster(struct metrics *m, const struct metrics_cluster *k);

/* Records the outcome of a configuration reload. The registry starts with
 * a successful load (the one the daemon started with). */
void metrics_record_reload(struct metrics *m, bool ok);

/* Records a successful observation of `group` by its driver. */
void metrics_record_observation(struct metrics *m, const char *group);

/* Records a good sample of `signal` of `group` from its source. */
void metrics_record_sample(struct metrics *m, const char *group, const char *signal);

/* Hands every request for `prefix` or below it ("/status", "/status/...")
 * on the metrics listener to `handler` (the status page, status-page.h);
 * NULL stops it. Does nothing without a listener. */
struct httpd_request;
struct httpd_response;
void metrics_set_page(struct metrics *m, const char *prefix,
		      void (*handler)(void *userdata, const struct httpd_request *req, struct httpd_response *resp),
		      void *userdata);

/* Writes the exposition to `f`, for the endpoint and the tests. Returns 0
 * or -EIO. */
int metrics_write(const struct metrics *m, FILE *f);

#endif
