/* A small HTTP server on the agent's sd-event loop, for the admin API and
 * the metrics endpoint.
 *
 * libmicrohttpd runs without threads of its own (MHD_USE_EPOLL, external
 * polling): its epoll descriptor is one I/O source on the loop and its
 * timeout one timer, so every handler runs on the loop's thread, between
 * evaluations, and may read and change group runtimes without locks. The
 * handlers only ever answer from memory, so they never block the loop.
 *
 * The caller creates and binds the listening socket (so it controls the
 * address family, the file mode and the owner of a Unix socket) and hands it
 * over; httpd owns it from then on. */
#ifndef AUTOSCALED_HTTPD_H
#define AUTOSCALED_HTTPD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <systemd/sd-event.h>

struct httpd;

/* Limits on what a client may hold: connections, their memory and time.
 * The memory of a connection holds its request line and headers, so a URL
 * or a header block longer than it is refused by MHD (414 or 431). */
#define HTTPD_MAX_CONNECTIONS 64

/* Clients that connect while the server is busy wait in the kernel's
 * listen backlog. On a Unix socket a full backlog refuses a client at
 * once (EAGAIN), so it is deep enough for a burst of autoscalectl calls
 * from scripts; the kernel caps it at net.core.somaxconn. */
#define HTTPD_BACKLOG 128
#define HTTPD_CONNECTION_MEMORY (64 * 1024)

/* The whole of one exchange (the request read and its reply written) must
 * fit in this time, and so must the wait for the next request on a
 * kept-alive connection. It is the only limit on a connection's time: MHD's
 * own idle timeout is off, as it only limits silence (a client that sends a
 * byte a second is never silent for long), and it counts the time the
 * daemon's loop was held elsewhere against the client, which this one does
 * not (HTTPD_LATE_US). */
#define HTTPD_REQUEST_TIMEOUT_S 10

/* The loop is taken to have been held elsewhere when it runs the server
 * this long after the time its timer was set for; the time it was held is
 * then not counted against the exchanges (see run() in httpd.c). */
#define HTTPD_LATE_US 1000000

/* A reply adds the time it takes at this rate (bytes a second) to that of
 * its exchange: the metrics of 10,000 groups are tens of MB, which a
 * scraper reads in seconds, but no client may read a byte a second. */
#define HTTPD_MIN_REPLY_RATE (1024 * 1024)

/* Who is at the other end of a Unix socket (SO_PEERCRED), as the kernel
 * saw it when the connection was made. */
struct httpd_peer {
	bool known;           /* false on TCP, or when the kernel did not say */
	long pid, uid, gid;
};

struct httpd_request {
	const char *method;
	const char *path;     /* without the query string */
	const char *body;     /* NUL-terminated; "" when there is none */
	size_t body_len;
	struct httpd_peer peer;
	const char *host;     /* the Host header; NULL when there is none */
	bool gzip;            /* Accept-Encoding takes gzip: a body written through httpd_body_open() is
			       * compressed as it is written */
};

struct httpd_response {
	int status;
	const char *content_type;
	char *body;           /* malloc'ed; httpd frees it */
	unsigned share_ms;    /* a 200 to a GET or HEAD: the same reply, made once, is given to every
			       * request for the same path and Host in the next share_ms (one such
			       * reply for clients that take gzip, one for the others); 0: made for each */
	/* Set by httpd_body_open() and its stream's fclose(), not by handlers. */
	size_t body_len;      /* the body's length when `gzip` */
	bool gzip;            /* `body` is gzip data (of well-formed UTF-8) */
	bool vary;            /* the body depends on Accept-Encoding */
};

/* A stream for the body of RESP, a reply to REQ, or NULL when out of
 * memory; fclose() puts what was written in resp->body (it returns EOF,
 * leaving no body, when it failed). A client that takes gzip gets the body
 * compressed as it is written, so a long one (the metrics of 10,000 groups
 * are tens of MB of text) is never in memory whole, and is a tenth of the
 * bytes on the wire; bytes that start no well-formed UTF-8 sequence are
 * replaced by U+FFFD on the way, as in any other reply. */
FILE *httpd_body_open(const struct httpd_request *req, struct httpd_response *resp);

/* Fills `resp` for `req`. Runs on the loop's thread. A handler that leaves
 * resp->body NULL gets an empty body. */
typedef void (*httpd_handler_fn)(void *userdata, const struct httpd_request *req, struct httpd_response *resp);

/* Serves on `listen_fd` (bound and listening; owned by httpd from here, also
 * on failure). Request bodies longer than max_body are answered with 413
 * without being read into memory. `name` prefixes log messages. Returns 0 or
 * a negative errno. */
int httpd_new(sd_event *event, int listen_fd, const char *name, size_t max_body, httpd_handler_fn handler,
	      void *userdata, struct httpd **ret);

/* Stops serving and closes the socket; NULL is fine. */
void httpd_free(struct httpd *h);

/* The length of the replies held for the clients that ask within their
 * share_ms (one for clients that take gzip, one for the others), 0 when
 * none is: each is let go when its time is up, whether or not anyone asks
 * again. */
size_t httpd_shared_len(const struct httpd *h);

/* The connections open and not cut off. */
unsigned httpd_connections(const struct httpd *h);

/* Creates a listening Unix socket at `path` (an old socket file there is
 * replaced) with file mode `mode`, owned by group `group` when not NULL.
 * Returns the descriptor or a negative errno; logs why it failed. */
int httpd_listen_unix(const char *path, unsigned mode, const char *group);

/* Creates a listening TCP socket on "HOST:PORT" ("127.0.0.1:9851",
 * "[::1]:9851"). Returns the descriptor or a negative errno; logs why. */
int httpd_listen_tcp(const char *address);

/* A JSON error body {"error": message} with `status`. */
void httpd_error(struct httpd_response *resp, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
