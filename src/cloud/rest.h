/* A blocking JSON REST client for the cloud drivers and sources.
 *
 * One struct rest_client wraps one libcurl easy handle; it is used by one
 * thread at a time (a driver handle, or a source's worker thread). Calls
 * retry per the provider's policy with capped exponential backoff and full
 * jitter, honouring Retry-After (seconds or an HTTP date). Bodies are
 * bounded. The Authorization header and tokens are never logged: messages
 * name the method, the URL path and the provider's error message.
 *
 * Messages and metrics go to a cloud_sink: a driver's forwards to its host
 * (cloud_sink_init_host), the daemon's cloud sources' to its log. When the
 * sink has metric(), the client publishes its retries, its final failures
 * and the throttling budgets of Azure's x-ms-ratelimit-remaining-*
 * headers. */
#ifndef AUTOSCALED_CLOUD_REST_H
#define AUTOSCALED_CLOUD_REST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "autoscaled/driver.h"

#define REST_MAX_BODY (8u * 1024u * 1024u)
/* The longest message of the cloud code; a longer one is cut. */
#define REST_MAX_MESSAGE 2048

/* Where the cloud code reports: all it needs of whoever runs it. */
struct cloud_sink {
	/* One message, formatted. */
	void (*log)(const struct cloud_sink *s, enum autoscaled_log_level level, const char *msg);
	/* A metric; NULL where the runner keeps none. */
	void (*metric)(const struct cloud_sink *s, enum autoscaled_metric metric, const char *label, double value);
	const void *userdata;
};

/* A sink that forwards to a driver's host (its log, and its metric when the
 * host has one). The host must outlive the sink. */
void cloud_sink_init_host(struct cloud_sink *s, const struct autoscaled_host *host);
/* Formats a message (bounded by REST_MAX_MESSAGE) and logs it to s. */
void cloud_log(const struct cloud_sink *s, enum autoscaled_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
#define REST_MAX_TOKEN 8192

enum rest_policy {
	REST_POLICY_GCE,   /* 429, 5xx, 403 rateLimitExceeded */
	REST_POLICY_AZURE, /* 408, 429, 500, 502, 503, 504; 409 operation in progress waits */
	REST_POLICY_IMDS,  /* Azure IMDS: 404, 410, 429, 5xx */
};

struct rest_client {
	void *curl;
	const struct cloud_sink *sink;
	const char *who;          /* component name for messages, e.g. "gce-mig" */
	enum rest_policy policy;
	int attempts;             /* total tries per call, >= 1 */
	int64_t backoff_base_ms;  /* first backoff */
	int64_t backoff_max_ms;   /* cap of a backoff and of an honoured Retry-After */
	int64_t timeout_ms;       /* per try */
	/* Azure throttling budgets from the last reply that carried them. */
	char ratelimit_reads[64];
	char ratelimit_writes[64];
	char ratelimit_global_reads[64];
	char ratelimit_global_writes[64];
	/* Every policy of the reply: Compute may send one header line per
	 * policy, joined here with ','. */
	char ratelimit_resource[1024];
	/* Wall-clock ms before which the server asked for no request (a
	 * Retry-After longer than backoff_max_ms), 0 when none: reads (GET)
	 * and writes apart, as the clouds budget them apart. */
	int64_t throttled_until_ms[2];
	unsigned long retries;    /* retries done since open, for metrics */
	unsigned long errors;     /* final failures since open (the drivers add failed operations) */
};

struct rest_request {
	const char *method;        /* "GET", "POST", "PATCH" */
	const char *url;
	const char *body;          /* NULL: no body */
	const char *content_type;  /* default application/json when body is set */
	const char *bearer;        /* token, or NULL */
	const char *const *headers; /* extra "Name: value" lines, NULL-terminated, or NULL */
	bool no_retry;
	bool direct;               /* never through a proxy: metadata servers are link-local */
};

/* A reply. body is NUL-terminated; json is the parsed body or NULL. The
 * header strings are empty when absent. Owned by the caller: rest_reply_clear(). */
struct rest_reply {
	long status;
	char *body;
	size_t len;
	cJSON *json;
	char location[2048];
	char async_operation[2048];
	char etag[256];
	int64_t retry_after_ms; /* -1 when absent */
	bool ratelimit;         /* carried x-ms-ratelimit-remaining-* headers */
};

/* The longest Retry-After taken as given: a longer one, or one too large
 * for any integer, counts as this much. rest_call() sleeps at most the
 * client's backoff_max_ms and holds off for a longer one (see rest_call);
 * the drivers' operation polls wait at most backoff_max_ms. */
#define REST_MAX_RETRY_AFTER_MS (24 * 3600 * INT64_C(1000))

/* Sets defaults and creates the curl handle. Returns 0 or -ENOMEM. */
int rest_client_init(struct rest_client *c, const struct cloud_sink *sink, const char *who,
		     enum rest_policy policy);
void rest_client_fini(struct rest_client *c);

/* Performs the request, retrying per policy. Returns 0 with *reply filled
 * (any HTTP status: the caller judges it) or a negative errno when no HTTP
 * reply came after all tries (the failure is logged). A retryable reply
 * whose Retry-After is longer than backoff_max_ms is honoured, not cut
 * short: the call returns -EAGAIN at once, logging "throttled until T",
 * and every call of the same kind (a read or a write) before T returns
 * -EAGAIN without a request, so the caller holds instead of retrying early
 * and giving up. */
int rest_call(struct rest_client *c, const struct rest_request *req, struct rest_reply *reply);
void rest_reply_clear(struct rest_reply *r);

/* Counts an operation that failed for good (errors) and publishes it
 * through the sink's metric. rest_call() counts its own final failures. */
void rest_count_error(struct rest_client *c);

/* The provider's error message of a reply body (GCE, ARM nested or flat,
 * OAuth error_description), or "HTTP <status>". Valid while r lives. */
const char *rest_error_message(const struct rest_reply *r, char *buf, size_t size);

/* Maps a final HTTP error status to a negative errno. */
int rest_status_errno(long status);

/* A Retry-After header's value (delay-seconds, or an HTTP date taken
 * against now_ms) as milliseconds from now, within 0 and
 * REST_MAX_RETRY_AFTER_MS; -1 when it is neither. */
int64_t rest_parse_retry_after(const char *v, int64_t now_ms);

/* How long rest_call() waits before the try after `attempt` (1-based): the
 * reply's Retry-After when it has one (retry_after_ms >= 0), else the
 * jittered exponential backoff; never more than c->backoff_max_ms and never
 * less than 0. */
int64_t rest_retry_wait_ms(const struct rest_client *c, int attempt, int64_t retry_after_ms);

/* Sleeps ms milliseconds (interrupted sleeps resume). */
void rest_sleep_ms(int64_t ms);
/* Wall-clock time, epoch ms: for the cloud's own timestamps (Retry-After
 * dates, token expiry times, metric points, creation times). */
int64_t rest_now_ms(void);
/* Monotonic ms: for lengths of time (operation deadlines, how long a
 * group has been unstable), which a wall-clock step must not change. */
int64_t rest_mono_ms(void);

/* A random UUID v4 as 36 characters + NUL. Returns 0 or -EIO. */
int rest_uuid4(char out[37]);

/* URL-encodes s into out (bounded). Returns 0 or -ENAMETOOLONG. */
int rest_escape(const char *s, char *out, size_t size);

/* Reads a secret file that must be a regular file not readable by group or
 * others. Returns 0 with *ret malloc'ed (trailing newline stripped), or a
 * negative errno after logging why. */
int rest_read_private_file(const struct cloud_sink *sink, const char *who, const char *path, char **ret,
			   size_t max);

#endif
