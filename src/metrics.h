/* Prometheus metrics: the text exposition format on GET /metrics.
 *
 * The group runtimes push what they see (after each evaluation, action,
 * driver call and error) into a registry kept here; a scrape only formats
 * the registry. Counters and histograms survive a reload because entries
 * are kept by group name; metrics_prune() drops groups that are gone.
 *
 * The registry works without a listener (metrics_new with a NULL address),
 * so the daemon always records and only serves when agent.metrics_listen is
 * set. Everything runs on the loop's thread (see httpd.h): no locks. */
#ifndef AUTOSCALED_METRICS_H
#define AUTOSCALED_METRICS_H

#include <stdbool.h>
#include <stdio.h>

#include <systemd/sd-event.h>

#include "config.h"
#include "engine.h"

struct metrics;

/* What a group's runtime reports with each decision. */
struct metrics_group_status {
	bool paused;
	bool pinned;
	bool in_flight;
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

/* Records the duration of a driver call `operation` ("observe",
 * "set_capacity", "remove_instances"). */
void metrics_record_driver_call(struct metrics *m, const char *group, const char *operation, double seconds);

/* Forgets every group that `c` does not configure. */
void metrics_prune(struct metrics *m, const struct config *c);

/* Writes the exposition to `f`, for the endpoint and the tests. Returns 0
 * or -EIO. */
int metrics_write(const struct metrics *m, FILE *f);

#endif
