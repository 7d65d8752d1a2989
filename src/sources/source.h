/* source: one configured signal's reader (Prometheus, HAProxy, Redis, an HTTP
 * JSON endpoint, a command, a replayed series ...), polled asynchronously on
 * the agent's sd-event loop.
 *
 * Each poll has its own timeout (signal_conf.timeout_ms) and reports exactly
 * one result through the done callback: a finite value, or an invalid reading
 * with a negative errno and a human reason. A source never reports zero for a
 * failure. Polls of different sources run concurrently; a hung endpoint only
 * delays its own signal.
 *
 * Ownership: source_new() copies what it needs from the signal_conf; the
 * error string passed to the done callback is borrowed for the duration of
 * the call. */
#ifndef AUTOSCALED_SOURCE_H
#define AUTOSCALED_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "config/config.h"

#define SOURCE_DEFAULT_TIMEOUT_MS INT64_C(10000)
#define SOURCE_MAX_REPLY ((size_t)1 << 20)  /* bytes read from any peer per poll */
#define SOURCE_MAX_JSON_DEPTH 64

struct http;
struct source;

struct source_env {
	sd_event *event;    /* the loop every poll runs on */
	struct http *http;  /* the shared HTTP client (http.h) */
};

/* Called exactly once per successful source_poll(), on the loop thread and
 * never from within source_poll() itself. T_MS is the NOW_MS given to the
 * poll (the group runtime's monotonic time, clock.h: the sample's time in
 * its window). STATUS is 0 with a finite VALUE, or a negative errno with ERROR set
 * (for example -ETIMEDOUT "no reply within 2000 ms", -ENODATA "no series").
 * The callback may call source_free() on this source. */
typedef void (*source_done_fn)(void *userdata, int64_t t_ms, int status, double value, const char *error);

/* Builds the reader of signal SC (SC->source found by source_lookup()). On
 * success returns 0 and stores it in *RET. On failure returns a negative
 * errno and writes "FILE:LINE: message" into ERR: -EINVAL for a bad or
 * unknown option, -EOPNOTSUPP for a source type this build lacks. ENV must
 * outlive the source. */
int source_new(const struct signal_conf *sc, const struct source_env *env, struct source **ret, char *err,
	       size_t errlen);

/* Starts one reading. Returns 0 and calls DONE later; or -EBUSY when a poll
 * of this source is still in flight, or another negative errno (-ENOMEM,
 * -EMFILE) when the reading could not start: DONE is then not called. */
int source_poll(struct source *s, int64_t now_ms, source_done_fn done, void *userdata);

/* Cancels a poll in flight (its callback is not called) and frees S. Safe
 * with NULL. */
void source_free(struct source *s);

/* Makes a poll in flight on S report to USERDATA instead of the one given
 * to source_poll(): for a reload that hands S to a new owner. */
void source_set_userdata(struct source *s, void *userdata);

/* The type name ("prometheus") and signal name of S, for messages. */
const char *source_type_name(const struct source *s);
const char *source_signal_name(const struct source *s);

/* ---- for implementations of source types (src/sources/) ---- */

struct source_ops {
	const char *name;
	/* Option keys the type accepts (NULL-terminated); anything else in
	 * signal_conf.source_options is refused with its FILE:LINE. */
	const char *const *options;
	/* Parses the options into S's private state (source_priv()). */
	int (*init)(struct source *s, const struct signal_conf *sc, char *err, size_t errlen);
	/* Starts a reading; ends it later with source_complete(). Returns 0
	 * or a negative errno (then no completion is expected). */
	int (*poll)(struct source *s);
	/* Stops a reading in flight without completing it. */
	void (*cancel)(struct source *s);
	/* Frees the private state. */
	void (*done)(struct source *s);
	size_t priv_size;
};

/* The table of source types; the registry (sources/registry.c) lists the
 * built-in ones, and source_register() adds more (cloud monitoring) before
 * any source_new(). Returns 0, -EEXIST or -ENOSPC. The sources a driver
 * feeds from its observations (libvirt_cpu) are the driver's, declared in
 * its descriptor (autoscaled/driver.h), and never reach source_new(). */
int source_register(const struct source_ops *ops);
const struct source_ops *source_lookup(const char *name);
/* True for a type the project knows but this build or registry lacks
 * (redis without hiredis, the cloud monitoring before it is registered). */
bool source_type_reserved(const char *name);
/* The names of the types available, comma-separated, into BUF. */
void source_type_list(char *buf, size_t buflen);
/* The same names into V (at most MAX, borrowed); returns how many. */
size_t source_type_names(const char **v, size_t max);

void *source_priv(struct source *s);
sd_event *source_event(const struct source *s);
struct http *source_http(const struct source *s);
int64_t source_timeout_ms(const struct source *s);
/* The NOW_MS given to the poll in flight. */
int64_t source_poll_time(const struct source *s);

/* Ends the reading in flight: STATUS 0 with VALUE, or a negative errno with
 * a printf-style reason. A non-finite VALUE becomes invalid (-ERANGE). Runs
 * the done callback; S may be freed by it, so touch nothing after. */
void source_complete(struct source *s, int status, double value, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* As source_complete(), but from the next loop iteration: for results known
 * inside ops->poll, which must not call the done callback itself. */
void source_complete_later(struct source *s, int status, double value, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Option helpers for ops->init. They return 0, or -EINVAL after writing
 * "FILE:LINE: signal 'cpu': source 'prometheus': ..." into ERR. A missing
 * optional option leaves *RET at DEF. */
const struct config_option *source_option(const struct signal_conf *sc, const char *key);
int source_opt_str(const struct signal_conf *sc, const char *key, bool required, const char *def, char **ret,
		   char *err, size_t errlen);
int source_opt_num(const struct signal_conf *sc, const char *key, double min, double max, double def, double *ret,
		   char *err, size_t errlen);
int source_opt_bool(const struct signal_conf *sc, const char *key, bool def, bool *ret, char *err, size_t errlen);
/* A duration in the syntax of autoscaled.conf(5) (parse_duration_ms), or a
 * number of seconds, within [MIN_MS, MAX_MS], into milliseconds. */
int source_opt_duration(const struct signal_conf *sc, const char *key, int64_t min_ms, int64_t max_ms, int64_t def_ms,
			int64_t *ret, char *err, size_t errlen);
/* A string or a list of strings, copied into a NULL-terminated vector. */
int source_opt_list(const struct signal_conf *sc, const char *key, char ***ret, size_t *n, char *err,
		    size_t errlen);
int source_opt_error(const struct signal_conf *sc, const struct config_option *o, char *err, size_t errlen,
		     const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#endif
