/* A test's HTTP client for a server that runs on the test's own sd-event
 * loop: the request is made from a thread while the loop serves it. */
#ifndef AUTOSCALED_TESTS_LOOP_HTTP_H
#define AUTOSCALED_TESTS_LOOP_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <systemd/sd-event.h>

struct loop_http {
	const char *url;         /* "http://127.0.0.1:PORT/path", or "http://localhost/path" with unix_socket */
	const char *unix_socket; /* NULL for TCP */
	const char *method;
	const char *body;        /* request body, or NULL */
	const char *accept_encoding; /* an Accept-Encoding header to send, or NULL; the reply is kept as sent */
	long status;             /* 0 when no answer came */
	char *reply;             /* the reply body, NUL-terminated or NULL; the caller frees it */
	size_t len;
	char content_encoding[32]; /* the reply's Content-Encoding header, "" when none */
	char vary[64];             /* and its Vary header */
	volatile int done;
};

/* Makes the request C describes, running EVENT until it is answered or
 * 5 s have passed. Returns 0, or -errno when no thread could be started. */
int loop_http(sd_event *event, struct loop_http *c);

/* Opens N connections to the server at SA that never send a request, as a
 * careless or hostile client would, and runs EVENT until the server has
 * accepted all it will (the rest wait in the listen backlog). Returns how
 * many connected; their descriptors are in FDS. */
int loop_http_hold(sd_event *event, const struct sockaddr *sa, socklen_t sa_len, int *fds, int n);

/* Closes those connections after DELAY_USEC of EVENT's loop time (or when
 * EVENT is freed, if sooner), while a request made with loop_http() may
 * wait behind them. Returns 0 or -errno. */
int loop_http_release_later(sd_event *event, int *fds, int n, uint64_t delay_usec);

/* The monotonic clock in microseconds, for a test to time an answer. */
uint64_t loop_http_now(void);

/* Sends REQ (LEN bytes, which need not be HTTP) on a new connection to SA
 * and runs EVENT until the server closes it or 5 s pass. What came back is
 * in OUT, NUL-terminated (at most OUT_LEN - 1 bytes). Returns how many
 * bytes came back, or -errno when it could not connect. */
ssize_t loop_http_raw(sd_event *event, const struct sockaddr *sa, socklen_t sa_len, const char *req, size_t len,
		      char *out, size_t out_len);

/* N slow clients (slowloris): each connects to SA, sends a request line
 * and the start of a header, then one more byte of that header every
 * PACE_USEC, never ending it. They go on while EVENT runs (also inside
 * loop_http()) until the server closes them. */
struct loop_http_trickle;
int loop_http_trickle_start(sd_event *event, const struct sockaddr *sa, socklen_t sa_len, int n, uint64_t pace_usec,
			    struct loop_http_trickle **ret);

/* How many the server has not closed yet. */
int loop_http_trickle_open(const struct loop_http_trickle *t);

/* Runs EVENT until the server has closed them all or LIMIT_USEC after
 * their start; returns the time from their start to the last close (usec),
 * or -ETIMEDOUT when some were still open. */
int64_t loop_http_trickle_wait(sd_event *event, struct loop_http_trickle *t, uint64_t limit_usec);

void loop_http_trickle_free(struct loop_http_trickle *t);

/* Readers that each send "GET PATH" on a connection to SA, then read the
 * reply CHUNK bytes every PACE_USEC (with a small receive buffer, so the
 * pace is the reader's, not the kernel's), as a slow scraper does. They
 * go on while EVENT runs, until the server closes them. */
struct loop_http_reader;
int loop_http_reader_start(sd_event *event, const struct sockaddr *sa, socklen_t sa_len, const char *path, size_t chunk,
			   uint64_t pace_usec, struct loop_http_reader **ret);
/* Whether the server has closed it, and the bytes it sent (headers
 * included) and when it closed, in usec from the start. */
int loop_http_reader_closed(const struct loop_http_reader *r, size_t *bytes, uint64_t *took_usec);
void loop_http_reader_free(struct loop_http_reader *r);

/* LEN bytes of gzip data at IN inflated into *OUT (malloc'ed,
 * NUL-terminated, *OUT_LEN bytes before the NUL). Returns 0, or -1 when
 * they are not one whole gzip stream. */
int loop_http_gunzip(const char *in, size_t len, char **out, size_t *out_len);

#endif
