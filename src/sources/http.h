/* http: the shared asynchronous HTTP client, libcurl's multi interface driven
 * by an sd-event loop (as curl's ephiperfifo example does with libevent).
 *
 * One struct http serves every signal source and REST driver of the daemon:
 * requests run concurrently on the loop's thread, each with its own timeout
 * and body limit, so a hung endpoint delays nothing but its own request.
 *
 * Ownership: a request's strings are copied by http_start(); the response
 * passed to the completion callback is borrowed and valid only until the
 * callback returns. The call handle returned by http_start() belongs to the
 * http object and is freed right after its callback returns. */
#ifndef AUTOSCALED_HTTP_H
#define AUTOSCALED_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#define HTTP_DEFAULT_TIMEOUT_MS INT64_C(30000)
#define HTTP_DEFAULT_MAX_BODY ((size_t)1 << 20)
#define HTTP_MAX_HEADER_BYTES 16384  /* response headers kept for lookup */
#define HTTP_MAX_IDLE_CONNECTIONS 512 /* kept open for reuse across polls */

struct http;
struct http_call;

struct http_request {
	const char *method;          /* NULL means GET; "POST", "PUT", "PATCH", "DELETE" */
	const char *url;             /* http:// or https:// only */
	const char *const *headers;  /* NULL-terminated "Name: value" lines, or NULL */
	const void *body;            /* request body (copied), with body_len bytes */
	size_t body_len;
	int64_t timeout_ms;          /* whole transfer; 0 means HTTP_DEFAULT_TIMEOUT_MS */
	size_t max_body;             /* larger replies fail with -EFBIG; 0 means 1 MiB */
	const char *ca_file;         /* PEM bundle to verify the peer with; NULL = system store */
	bool insecure;               /* skip TLS peer and host name verification */
	const char *bearer_token;    /* Authorization: Bearer ... */
	const char *username;        /* basic auth, with password */
	const char *password;
	bool follow_redirects;       /* at most 5 */
};

struct http_response {
	int status;                  /* 0 when an HTTP reply arrived (any code), else negative errno:
				      * -ETIMEDOUT, -ECONNREFUSED, -EFBIG (body over the limit),
				      * -EHOSTUNREACH (name not resolved), -EPROTO (TLS), -EIO */
	const char *error;           /* a human reason when status < 0, else NULL */
	long code;                   /* HTTP status code, 0 without a reply */
	const char *body;            /* NUL-terminated (binary bodies may hold NULs) */
	size_t body_len;
	int64_t retry_after_ms;      /* from Retry-After (seconds or date), -1 if absent */
	int64_t elapsed_ms;          /* from start to completion */
	const char *headers_;        /* private: raw header block for http_response_header() */
	size_t headers_len_;
};

/* Called once per call on the loop thread, never from within http_start().
 * The call is freed after it returns: do not cancel it from here. */
typedef void (*http_done_fn)(void *userdata, const struct http_response *r);

/* Creates a client bound to EVENT (a reference is taken). Returns 0 or -ENOMEM. */
int http_new(sd_event *event, struct http **ret);

/* Cancels every call in flight without calling their callbacks, then frees
 * the client. Safe with NULL. Must not be called from a completion callback. */
void http_free(struct http *h);

/* Starts REQ. On success returns 0 and, when RET is not NULL, stores a handle
 * for http_cancel(); DONE is called later exactly once unless cancelled.
 * Returns -EINVAL for a bad request (no URL, unsupported scheme) or -ENOMEM. */
int http_start(struct http *h, const struct http_request *req, http_done_fn done, void *userdata,
	       struct http_call **ret);

/* Stops a call in flight; its callback will not be called. Safe with NULL. */
void http_cancel(struct http_call *c);

/* The value of response header NAME (case-insensitive, surrounding blanks
 * trimmed), copied into BUF; returns its length, or -ENOENT / -ENOBUFS. */
int http_response_header(const struct http_response *r, const char *name, char *buf, size_t buflen);

/* Number of calls in flight (for tests and metrics). */
size_t http_in_flight(const struct http *h);

#endif
