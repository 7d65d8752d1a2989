/* The blocking cloud REST code (src/cloud/) driven from the event loop:
 * each cloud monitoring source owns one worker thread that performs the
 * token and REST calls; results come back to the loop through an eventfd
 * and end the poll with source_complete(). sd-event is not thread-safe, so
 * the worker never touches the loop.
 *
 * The state the worker uses is shared and reference-counted: freeing a
 * source while its request is in flight detaches the worker, which frees
 * the state when the request returns. */
#ifndef AUTOSCALED_SOURCES_CLOUD_WORKER_H
#define AUTOSCALED_SOURCES_CLOUD_WORKER_H

#include <stddef.h>

#include "cloud/rest.h"
#include "sources/source.h"

struct cloud_job;

/* Runs on the worker thread: one reading. Returns 0 with *value, or a
 * negative errno with a reason in why. */
typedef int (*cloud_fetch_fn)(void *state, struct rest_client *http, double *value, char *why, size_t whylen);
/* Frees the provider state; runs on whichever thread drops the last
 * reference. */
typedef void (*cloud_state_free_fn)(void *state);

/* The private part of a cloud source (its priv_size). */
struct cloud_source {
	struct cloud_job *job;
	sd_event_source *io;
	sd_event_source *timer;
};

/* Starts the worker of S with provider state `state` (owned from now on,
 * freed through free_state even on failure). who names the source in
 * messages. Returns 0 or a negative errno. */
int cloud_source_start(struct source *s, const char *who, void *state, cloud_fetch_fn fetch,
		       cloud_state_free_fn free_state, char *err, size_t errlen);
int cloud_source_poll(struct source *s);

/* For a fetch: GETs `url` with the bearer token into *r. Returns 0 when the
 * reply is HTTP 200 (release *r with rest_reply_clear()), else a negative
 * errno with the reason in why, prefixed by `what` (the API call's name),
 * and *r released. */
int cloud_source_get(struct rest_client *http, const char *url, const char *bearer, const char *what,
		     struct rest_reply *r, char *why, size_t whylen);
void cloud_source_cancel(struct source *s);
void cloud_source_free(struct source *s);

/* Where the cloud code of the sources reports: the daemon's log (log.h). */
extern const struct cloud_sink cloud_source_sink;

/* Registers gce_monitoring and azure_monitor with the source registry; the
 * daemon calls it once at start-up, before building sources. Returns 0 or
 * the first error of source_register(). */
int cloud_sources_register(void);

extern const struct source_ops source_gce_monitoring;
extern const struct source_ops source_azure_monitor;

#endif
