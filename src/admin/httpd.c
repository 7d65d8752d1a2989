/* A small HTTP server on the sd-event loop; see httpd.h. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <zlib.h>

#include "admin/httpd.h"
#include "log/log.h"

/* One accepted connection, from MHD's notice that it started to the one
 * that it closed. */
struct link {
	struct link *prev, *next;
	struct MHD_Connection *c;
	int fd;
	uint64_t since;       /* when its current exchange began, loop time (usec) */
	uint64_t reply_us;    /* the time its reply adds to the exchange's (HTTPD_MIN_REPLY_RATE) */
	bool cut;             /* shut down by us; MHD has yet to close it */
};

/* A reply given to every GET of PATH until UNTIL. */
struct shared {
	struct MHD_Response *r; /* NULL: none held */
	size_t len;
	char path[64];
	char host[64];          /* and with this Host header ("" for none): a handler may answer by it */
	uint64_t until;
};

struct httpd {
	sd_event *event;
	struct MHD_Daemon *mhd;
	sd_event_source *io;
	sd_event_source *timer;
	char name[32];
	size_t max_body;
	httpd_handler_fn handler;
	void *userdata;
	struct link *links;   /* oldest first */
	unsigned n_live;      /* links not cut */
	uint64_t last_run;    /* when run() last began, loop time (usec) */
	uint64_t due;         /* when the timer is set to call run(), UINT64_MAX: not set */
	/* The replies shared for a while (httpd_response.share_ms): one for
	 * the clients that take gzip and one for the others, so that a flood
	 * of requests that alternate the two still costs one of each. */
	struct shared shared[2];
};

/* What is known of one request between MHD's calls. */
struct conn {
	char *body;
	size_t len;
	bool too_large;
	struct httpd_peer peer;
};

/* The credentials of the process that connected, from the kernel; unknown
 * on a TCP connection. */
static struct httpd_peer peer_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (!ci || getsockopt(ci->connect_fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || len != sizeof(cred) ||
	    cred.pid <= 0)
		return (struct httpd_peer){.known = false, .pid = -1, .uid = -1, .gid = -1};
	return (struct httpd_peer){.known = true, .pid = cred.pid, .uid = cred.uid, .gid = cred.gid};
}

void httpd_error(struct httpd_response *resp, int status, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	cJSON *o;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	resp->status = status;
	resp->content_type = "application/json";
	free(resp->body);
	resp->body = NULL;
	resp->body_len = 0;
	resp->gzip = false; /* an error is never compressed */
	o = cJSON_CreateObject();
	if (o && cJSON_AddStringToObject(o, "error", msg))
		resp->body = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
}

/* The length of the well-formed UTF-8 sequence at P (RFC 3629: no overlong
 * forms, no surrogates, nothing above U+10FFFF), or 0 when there is none. */
static size_t utf8_seq_len(const unsigned char *p)
{
	unsigned c = *p, n, min, cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 1, min = 0x80, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 2, min = 0x800, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 3, min = 0x10000, cp = c & 0x07;
	else
		return 0;
	for (unsigned i = 1; i <= n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n + 1;
}

/* Whether the N bytes at P are well-formed UTF-8. P[N] must be readable
 * and no continuation byte (a NUL, or the byte after a stage's end held
 * aside as one): a sequence is never read past it. */
static bool utf8_valid_n(const unsigned char *p, size_t n)
{
	size_t k;

	for (size_t i = 0; i < n; i += k) {
		uint64_t w;

		/* Eight bytes of ASCII at a time: a response is mostly that. */
		if (n - i >= sizeof(w)) {
			memcpy(&w, p + i, sizeof(w));
			if (!(w & UINT64_C(0x8080808080808080))) {
				k = sizeof(w);
				continue;
			}
		}
		if (!(k = utf8_seq_len(p + i)))
			return false;
	}
	return true;
}

static bool utf8_valid(const char *s)
{
	return utf8_valid_n((const unsigned char *)s, strlen(s));
}

/* Copies the N bytes at P (P[N] as for utf8_valid_n()) to OUT, which has
 * room for 3 N, with each byte that starts no well-formed sequence
 * replaced by U+FFFD; returns the bytes written. */
static size_t utf8_repair_n(const unsigned char *p, size_t n, unsigned char *out)
{
	unsigned char *o = out;
	size_t k;

	for (size_t i = 0; i < n; i += k ? k : 1) {
		k = utf8_seq_len(p + i);
		if (k) {
			memcpy(o, p + i, k);
			o += k;
		} else {
			memcpy(o, "\xef\xbf\xbd", 3);
			o += 3;
		}
	}
	return (size_t)(o - out);
}

/* A copy of S with each byte that starts no well-formed sequence replaced
 * by U+FFFD; NULL when out of memory. */
static char *utf8_repair(const char *s)
{
	size_t n = strlen(s);
	char *out = malloc(n * 3 + 1);

	if (!out)
		return NULL;
	out[utf8_repair_n((const unsigned char *)s, n, (unsigned char *)out)] = '\0';
	return out;
}

/* A body compressed as it is written (httpd_body_open()). The text goes
 * through STAGE, where it is checked for UTF-8 a stage at a time: a
 * sequence that the end of a stage cuts waits there for the rest. */
#define GZIP_STAGE (64 * 1024)

struct gzip_body {
	struct httpd_response *resp;
	z_stream z;
	char *out;
	size_t out_cap;
	size_t n_stage;
	unsigned char stage[GZIP_STAGE + 1];   /* +1: room for a terminating NUL */
	unsigned char fixed[3 * GZIP_STAGE];   /* a stage with its bad bytes replaced */
};

/* Deflates N bytes at P (FLUSH: Z_NO_FLUSH or Z_FINISH); -1 when out of
 * memory or when zlib fails. */
static int gzip_put(struct gzip_body *g, const unsigned char *p, size_t n, int flush)
{
	int r;

	g->z.next_in = (unsigned char *)p;
	g->z.avail_in = (uInt)n;
	for (;;) {
		if (g->z.avail_out == 0) {
			size_t used = g->out_cap, cap = g->out_cap ? 2 * g->out_cap : 64 * 1024;
			char *o = realloc(g->out, cap);

			if (!o)
				return -1;
			g->out = o;
			g->out_cap = cap;
			g->z.next_out = (unsigned char *)o + used;
			g->z.avail_out = (uInt)(cap - used);
		}
		r = deflate(&g->z, flush);
		if (r == Z_STREAM_END)
			return 0;
		if (r != Z_OK && r != Z_BUF_ERROR)
			return -1;
		/* Done when all went in and zlib did not run out of room
		 * (Z_FINISH goes on until the stream's end). */
		if (flush == Z_NO_FLUSH && g->z.avail_in == 0 && g->z.avail_out > 0)
			return 0;
	}
}

/* Compresses the stage, all of it at the end (FINAL), else up to the start
 * of a sequence it cuts short, which stays for the next write. */
static int gzip_stage(struct gzip_body *g, bool final)
{
	size_t end = g->n_stage, i, k;
	unsigned char held;
	int r;

	if (!final) {
		/* The last lead byte within the last four, and whether the
		 * bytes after it complete its sequence. */
		for (i = end, k = 0; i > 0 && k < 4 && (g->stage[i - 1] & 0xc0) == 0x80; i--, k++)
			;
		if (i > 0) {
			unsigned c = g->stage[i - 1];
			size_t need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;

			if (end - (i - 1) < need)
				end = i - 1;
		}
	}
	/* The byte after the part compressed now is held aside meanwhile:
	 * a NUL in its place ends any sequence that would run past it. */
	held = g->stage[end];
	g->stage[end] = '\0';
	if (utf8_valid_n(g->stage, end))
		r = gzip_put(g, g->stage, end, Z_NO_FLUSH);
	else
		r = gzip_put(g, g->fixed, utf8_repair_n(g->stage, end, g->fixed), Z_NO_FLUSH);
	g->stage[end] = held;
	memmove(g->stage, g->stage + end, g->n_stage - end);
	g->n_stage -= end;
	return r;
}

static ssize_t gzip_write(void *cookie, const char *buf, size_t size)
{
	struct gzip_body *g = cookie;
	size_t done = 0, n;

	while (done < size) {
		n = GZIP_STAGE - g->n_stage;
		if (n > size - done)
			n = size - done;
		memcpy(g->stage + g->n_stage, buf + done, n);
		g->n_stage += n;
		done += n;
		if (g->n_stage == GZIP_STAGE && gzip_stage(g, false) < 0) {
			errno = ENOMEM;
			return -1;
		}
	}
	return (ssize_t)size;
}

static int gzip_close(void *cookie)
{
	struct gzip_body *g = cookie;
	int r = gzip_stage(g, true);

	if (r == 0)
		r = gzip_put(g, NULL, 0, Z_FINISH);
	if (r == 0) {
		/* The buffer grew by doubling: what it did not fill goes. */
		char *o = realloc(g->out, g->z.total_out ? g->z.total_out : 1);

		if (o)
			g->out = o;
		free(g->resp->body);
		g->resp->body = g->out;
		g->resp->body_len = g->z.total_out;
		g->resp->gzip = true;
	} else {
		free(g->out);
	}
	deflateEnd(&g->z);
	free(g);
	return r == 0 ? 0 : EOF;
}

FILE *httpd_body_open(const struct httpd_request *req, struct httpd_response *resp)
{
	struct gzip_body *g;
	FILE *f;

	free(resp->body);
	resp->body = NULL;
	resp->body_len = 0;
	resp->gzip = false;
	resp->vary = true;
	if (!req->gzip)
		return open_memstream(&resp->body, &resp->body_len);
	g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->resp = resp;
	/* The fastest level: the text is repetitive (label sets), so it
	 * still comes to about a tenth, and the loop's time is what it
	 * costs. 15 + 16: a gzip header and trailer around the deflate
	 * stream. */
	if (deflateInit2(&g->z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(g);
		return NULL;
	}
	f = fopencookie(g, "w", (cookie_io_functions_t){.write = gzip_write, .close = gzip_close});
	if (!f) {
		deflateEnd(&g->z);
		free(g);
	}
	return f;
}

/* Whether the weight at P (RFC 9110, 12.4.2: "1", or "0" with up to three
 * decimals) is above 0; a weight that is not one counts as 0. Read by
 * hand: strtod() would follow the locale's decimal point. */
static bool qvalue_positive(const char *p)
{
	if (*p == '1')
		return true;
	if (*p != '0')
		return false;
	if (*++p != '.')
		return false;
	for (p++; *p >= '0' && *p <= '9'; p++)
		if (*p != '0')
			return true;
	return false;
}

/* Whether an Accept-Encoding header takes gzip (RFC 9110, 12.5.3): named,
 * as gzip or x-gzip, or by "*" when not named, with a weight above 0. */
static bool accepts_gzip(const char *v)
{
	int star = -1, named = -1;

	while (v && *v) {
		const char *tok, *end;
		size_t len;
		bool positive = true;

		v += strspn(v, " \t,");
		if (!*v)
			break;
		tok = v;
		len = strcspn(v, " \t;,");
		end = v + strcspn(v, ",");
		for (const char *p = v + len; p < end; p++) {
			if (*p == ';') {
				p += strspn(p + 1, " \t") + 1;
				if ((*p == 'q' || *p == 'Q') && p[1] == '=') {
					positive = qvalue_positive(p + 2);
					break;
				}
			}
		}
		if ((len == 4 && strncasecmp(tok, "gzip", 4) == 0) || (len == 6 && strncasecmp(tok, "x-gzip", 6) == 0))
			named = positive;
		else if (len == 1 && *tok == '*')
			star = positive;
		v = end;
	}
	return named >= 0 ? named == 1 : star == 1;
}

/* MHD's response for RESP (its body taken over, its length in *LEN), or
 * NULL. */
static struct MHD_Response *response_of(struct httpd_response *resp, size_t *len)
{
	struct MHD_Response *r;
	char *body = resp->body ? resp->body : strdup("");

	resp->body = NULL;
	if (!body)
		return NULL;
	if (resp->gzip) {
		/* Checked for UTF-8 as it was written (gzip_stage()). */
		*len = resp->body_len;
		r = MHD_create_response_from_buffer(*len, body, MHD_RESPMEM_MUST_FREE);
		if (!r) {
			free(body);
			return NULL;
		}
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
		goto headers;
	}
	/* Replies are JSON or Prometheus text, both UTF-8. A value quoted in
	 * them (a command's stderr, a driver's message, a label) may not be:
	 * such bytes become U+FFFD rather than make the reply unreadable. */
	if (!utf8_valid(body)) {
		char *fixed = utf8_repair(body);

		free(body);
		if (!fixed)
			return NULL;
		body = fixed;
	}
	*len = strlen(body);
	r = MHD_create_response_from_buffer(*len, body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return NULL;
	}
headers:
	if (resp->content_type)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, resp->content_type);
	if (resp->vary)
		MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, MHD_HTTP_HEADER_ACCEPT_ENCODING);
	return r;
}

/* A reply of LEN bytes on C may take the time it needs at
 * HTTPD_MIN_REPLY_RATE on top of the exchange's HTTPD_REQUEST_TIMEOUT_S. */
static void allow_reply(struct MHD_Connection *c, size_t len)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct link *l = ci ? ci->socket_context : NULL;

	if (l)
		l->reply_us = (uint64_t)len * 1000000 / HTTPD_MIN_REPLY_RATE;
}

static enum MHD_Result queue(struct MHD_Connection *c, struct httpd_response *resp)
{
	size_t len = 0;
	struct MHD_Response *r = response_of(resp, &len);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	allow_reply(c, len);
	ret = MHD_queue_response(c, (unsigned)resp->status, r);
	MHD_destroy_response(r);
	return ret;
}

static void shared_drop(struct shared *sh)
{
	if (sh->r)
		MHD_destroy_response(sh->r);
	sh->r = NULL;
}

static uint64_t loop_now(struct httpd *h)
{
	uint64_t now = 0;

	sd_event_now(h->event, CLOCK_MONOTONIC, &now);
	return now;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	struct httpd *h = cls;
	struct conn *k = *con_cls;
	struct httpd_response resp = {.status = 200};
	struct MHD_Response *r;
	size_t len = 0;
	const char *cl, *host;
	struct shared *sh;
	bool shareable, gzip;
	char *p;

	(void)version;
	if (!k) {
		k = calloc(1, sizeof(*k));
		if (!k)
			return MHD_NO;
		*con_cls = k;
		k->peer = peer_of(c);
		/* A declared length over the limit is answered at once, and
		 * none of the body is read: MHD closes the connection after
		 * the reply instead. */
		cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl && strtoull(cl, NULL, 10) > h->max_body) {
			k->too_large = true;
			httpd_error(&resp, 413, "request body larger than %zu bytes", h->max_body);
			return queue(c, &resp);
		}
		return MHD_YES;
	}
	if (*upload_size > 0) {
		/* A body of no declared length (chunked) that outgrows the
		 * limit: the connection is closed rather than read on. */
		if (k->too_large || k->len + *upload_size > h->max_body) {
			log_debug("%s: closed a connection: its request body is larger than %zu bytes", h->name,
				  h->max_body);
			return MHD_NO;
		}
		p = realloc(k->body, k->len + *upload_size + 1);
		if (!p)
			return MHD_NO;
		k->body = p;
		memcpy(k->body + k->len, upload, *upload_size);
		k->len += *upload_size;
		k->body[k->len] = '\0';
		*upload_size = 0;
		return MHD_YES;
	}
	/* The 413 was queued on the first call. */
	if (k->too_large)
		return MHD_YES;
	/* Handlers quote the path in their JSON replies, and JSON is UTF-8: a
	 * path that is not is refused here, without being echoed. */
	if (!utf8_valid(url)) {
		httpd_error(&resp, 400, "the request path is not valid UTF-8");
		return queue(c, &resp);
	}
	host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
	gzip = accepts_gzip(MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING));
	shareable = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
	sh = &h->shared[gzip];
	if (shareable && sh->r && loop_now(h) < sh->until && strcmp(url, sh->path) == 0 &&
	    strcmp(host ? host : "", sh->host) == 0) {
		allow_reply(c, sh->len);
		return MHD_queue_response(c, MHD_HTTP_OK, sh->r);
	}
	h->handler(h->userdata,
		   &(struct httpd_request){.method = method, .path = url, .body = k->body ? k->body : "",
					   .body_len = k->len, .peer = k->peer, .host = host, .gzip = gzip},
		   &resp);
	if (!shareable || !resp.share_ms || resp.status != MHD_HTTP_OK || strlen(url) >= sizeof(sh->path) ||
	    (host && strlen(host) >= sizeof(sh->host)))
		return queue(c, &resp);
	/* One reply for every client that asks within share_ms: MHD counts
	 * its users, so however many read it, slowly or not, it is in memory
	 * once, and made once. */
	r = response_of(&resp, &len);
	if (!r)
		return MHD_NO;
	shared_drop(sh);
	sh->r = r;
	sh->len = len;
	sh->until = loop_now(h) + (uint64_t)resp.share_ms * 1000;
	snprintf(sh->path, sizeof(sh->path), "%s", url);
	snprintf(sh->host, sizeof(sh->host), "%s", host ? host : "");
	return MHD_queue_response(c, MHD_HTTP_OK, r);
}

static void link_remove(struct httpd *h, struct link *l)
{
	if (l->prev)
		l->prev->next = l->next;
	else
		h->links = l->next;
	if (l->next)
		l->next->prev = l->prev;
	l->prev = l->next = NULL;
}

/* Appends L, the newest exchange, so that the list stays oldest first. */
static void link_append(struct httpd *h, struct link *l)
{
	struct link **p = &h->links, *prev = NULL;

	while (*p) {
		prev = *p;
		p = &(*p)->next;
	}
	l->prev = prev;
	*p = l;
}

/* Closes a connection under MHD's feet: shut down, its socket reads as
 * closed, and MHD drops it on its next run as it does any client that
 * went away. */
static void link_cut(struct httpd *h, struct link *l, const char *why)
{
	shutdown(l->fd, SHUT_RDWR);
	l->cut = true;
	h->n_live--;
	log_debug("%s: closed a connection: %s", h->name, why);
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct httpd *h = cls;
	struct link *l = *socket_context;
	const union MHD_ConnectionInfo *ci;

	if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (l) {
			link_remove(h, l);
			if (!l->cut)
				h->n_live--;
			free(l);
			*socket_context = NULL;
		}
		return;
	}
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!ci) {
		/* No deadline of ours without its socket: MHD's idle timeout
		 * (off for the others) limits it instead. */
		MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, (unsigned)HTTPD_REQUEST_TIMEOUT_S);
		return;
	}
	l = calloc(1, sizeof(*l));
	if (!l) {
		/* A connection without a deadline would escape the limits. */
		shutdown(ci->connect_fd, SHUT_RDWR);
		return;
	}
	l->c = c;
	l->fd = ci->connect_fd;
	l->since = loop_now(h);
	link_append(h, l);
	h->n_live++;
	*socket_context = l;
	/* At the limit, MHD would stop accepting, and a client that asks
	 * and goes would wait behind those that hold a connection and send
	 * nothing (or a byte a second) until their deadline. The oldest
	 * exchange makes room instead: a well-behaved one is over within
	 * milliseconds, so the oldest is one that stalls. */
	if (h->n_live >= HTTPD_MAX_CONNECTIONS)
		for (struct link *o = h->links; o; o = o->next)
			if (!o->cut && o != l) {
				link_cut(h, o, "the oldest at the connection limit");
				break;
			}
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode t)
{
	struct httpd *h = cls;
	struct conn *k = *con_cls;
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct link *l = ci ? ci->socket_context : NULL;

	/* A kept-alive connection's next exchange has a deadline of its own. */
	if (l && !l->cut && t == MHD_REQUEST_TERMINATED_COMPLETED_OK) {
		link_remove(h, l);
		l->since = loop_now(h);
		l->reply_us = 0;
		link_append(h, l);
	}
	if (k) {
		free(k->body);
		free(k);
		*con_cls = NULL;
	}
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct httpd *h = cls;
	char msg[512];
	size_t n;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n > 0 && msg[n - 1] == '\n')
		msg[--n] = '\0';
	log_debug("%s: %s", h->name, msg);
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata);

/* The connections MHD holds; asking also lets it drop the closed ones. */
static unsigned n_connections(struct httpd *h)
{
	const union MHD_DaemonInfo *i = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);

	return i ? i->num_connections : 0;
}

/* Lets MHD do its work, then arms the timer for its next deadline.
 *
 * At its connection limit MHD takes the listening socket out of its epoll
 * set (clients wait in the kernel's backlog), and puts it back only at the
 * start of a later run. If the last connections close during a run, no
 * later run would come: the listening socket is in no set, and no
 * connection is left to wake the loop or to time out, so the server would
 * never accept again. A run that closed connections is therefore followed
 * by another; it re-arms the listening socket and takes the clients that
 * waited. The loop ends, as each pass must close one more connection to
 * go on. */
static void run(struct httpd *h)
{
	MHD_UNSIGNED_LONG_LONG ms;
	uint64_t now = loop_now(h), next = UINT64_MAX;
	const uint64_t timeout = (uint64_t)HTTPD_REQUEST_TIMEOUT_S * 1000000;
	unsigned before;

	for (size_t i = 0; i < 2; i++)
		if (h->shared[i].r && now >= h->shared[i].until)
			shared_drop(&h->shared[i]);
	/* The loop came back later than the timer was set for: something
	 * else held it (a reload of a large configuration, a machine out of
	 * CPU). The clients sent and read all the same, and nothing here
	 * served them, so the time since the last run is not counted against
	 * their exchanges: a scrape is not cut for the daemon's own stall.
	 * A timer is set whenever a connection is open (each has a deadline),
	 * so no stall past a deadline goes unseen; sd-event's timers may fire
	 * up to 250 ms late, well within HTTPD_LATE_US. */
	if (h->due != UINT64_MAX && now > h->due + HTTPD_LATE_US) {
		/* Every link's exchange began during a run, so at or before
		 * the last one. */
		uint64_t held = now - h->last_run;

		log_debug("%s: the loop came back %" PRIu64 " ms after the time set; the %" PRIu64
			  " ms since the server last ran are not counted against the exchanges",
			  h->name, (now - h->due) / 1000, held / 1000);
		for (struct link *l = h->links; l; l = l->next)
			if (!l->cut)
				l->since += held;
	}
	h->last_run = now;
	for (struct link *l = h->links; l; l = l->next)
		if (!l->cut && now >= l->since + timeout + l->reply_us)
			link_cut(h, l, "its request and reply took longer than the time allowed");
	do {
		before = n_connections(h);
		MHD_run(h->mhd);
	} while (n_connections(h) < before);
	/* At most HTTPD_MAX_CONNECTIONS links: the earliest deadline is found
	 * by looking at each (a long reply's comes later than its start). */
	for (struct link *l = h->links; l; l = l->next)
		if (!l->cut && l->since + timeout + l->reply_us < next)
			next = l->since + timeout + l->reply_us;
	if (MHD_get_timeout(h->mhd, &ms) == MHD_YES && now + (uint64_t)ms * 1000 < next)
		next = now + (uint64_t)ms * 1000;
	/* The shared reply goes when its time is up, not at the next request:
	 * a scrape of 10,000 groups is 30 MB, and Prometheus asks once a
	 * minute. */
	for (size_t i = 0; i < 2; i++)
		if (h->shared[i].r && h->shared[i].until < next)
			next = h->shared[i].until;
	h->due = next;
	if (next == UINT64_MAX) {
		sd_event_source_set_enabled(h->timer, SD_EVENT_OFF);
		return;
	}
	sd_event_source_set_time(h->timer, next);
	sd_event_source_set_enabled(h->timer, SD_EVENT_ONESHOT);
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	(void)s;
	(void)fd;
	(void)revents;
	run(userdata);
	return 0;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	(void)s;
	(void)usec;
	run(userdata);
	return 0;
}

int httpd_new(sd_event *event, int listen_fd, const char *name, size_t max_body, httpd_handler_fn handler,
	      void *userdata, struct httpd **ret)
{
	const union MHD_DaemonInfo *info;
	struct httpd *h;
	int r;

	h = calloc(1, sizeof(*h));
	if (!h) {
		close(listen_fd);
		return -ENOMEM;
	}
	h->event = event;
	h->due = UINT64_MAX;
	snprintf(h->name, sizeof(h->name), "%s", name);
	h->max_body = max_body;
	h->handler = handler;
	h->userdata = userdata;
	/* The logger comes first, so that MHD's messages about the other
	 * options go through it too. */
	h->mhd = MHD_start_daemon(MHD_USE_EPOLL | MHD_USE_ERROR_LOG, 0, NULL, NULL, on_request, h,
				  MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, h,
				  MHD_OPTION_LISTEN_SOCKET, listen_fd,
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTPD_MAX_CONNECTIONS,
				  MHD_OPTION_CONNECTION_TIMEOUT, 0u,
				  MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTPD_CONNECTION_MEMORY,
				  MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
				  MHD_OPTION_NOTIFY_COMPLETED, on_completed, h, MHD_OPTION_END);
	if (!h->mhd) {
		log_errx("%s: cannot start the HTTP server", name);
		close(listen_fd);
		free(h);
		return -EIO;
	}
	/* From here MHD owns the socket and closes it when stopped. */
	info = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	if (!info) {
		r = -EIO;
		goto fail;
	}
	r = sd_event_add_io(event, &h->io, info->epoll_fd, EPOLLIN, on_io, h);
	if (r < 0)
		goto fail;
	r = sd_event_add_time(event, &h->timer, CLOCK_MONOTONIC, UINT64_MAX, 0, on_timer, h);
	if (r < 0)
		goto fail;
	sd_event_source_set_enabled(h->timer, SD_EVENT_OFF);
	*ret = h;
	return 0;
fail:
	log_err_errno(r, "%s: cannot attach the HTTP server to the event loop", name);
	httpd_free(h);
	return r;
}

void httpd_free(struct httpd *h)
{
	if (!h)
		return;
	sd_event_source_disable_unref(h->io);
	sd_event_source_disable_unref(h->timer);
	if (h->mhd)
		MHD_stop_daemon(h->mhd);
	shared_drop(&h->shared[0]);
	shared_drop(&h->shared[1]);
	free(h);
}

unsigned httpd_connections(const struct httpd *h)
{
	return h->n_live;
}

size_t httpd_shared_len(const struct httpd *h)
{
	return (h->shared[0].r ? h->shared[0].len : 0) + (h->shared[1].r ? h->shared[1].len : 0);
}

int httpd_listen_unix(const char *path, unsigned mode, const char *group)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat st;
	int fd, r;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		log_errx("admin: socket path '%s' is too long", path);
		return -ENAMETOOLONG;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	/* Only a stale socket is replaced, never another kind of file. */
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			log_errx("admin: '%s' exists and is not a socket", path);
			return -EEXIST;
		}
		unlink(path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		r = -errno;
		log_err_errno(r, "admin: cannot bind '%s'", path);
		close(fd);
		return r;
	}
	if (group) {
		struct group *gr = getgrnam(group);

		if (!gr) {
			log_errx("admin: group '%s' of the socket does not exist", group);
			r = -ENOENT;
			goto fail;
		}
		/* Without CAP_CHOWN (the unit's empty bounding set) the owner
		 * may still give the socket to a group it is a member of. */
		if (chown(path, (uid_t)-1, gr->gr_gid) < 0) {
			r = -errno;
			if (r == -EPERM)
				log_errx("admin: cannot give '%s' to group '%s': the daemon is not a member of that "
					 "group and may not change owners (under systemd: SupplementaryGroups=%s)",
					 path, group, group);
			else
				log_err_errno(r, "admin: cannot give '%s' to group '%s'", path, group);
			goto fail;
		}
	}
	if (chmod(path, mode) < 0 || listen(fd, HTTPD_BACKLOG) < 0) {
		r = -errno;
		log_err_errno(r, "admin: cannot set up '%s'", path);
		goto fail;
	}
	return fd;
fail:
	unlink(path);
	close(fd);
	return r;
}

int httpd_listen_tcp(const char *address)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV};
	struct addrinfo *ai = NULL;
	char host[256];
	const char *colon = strrchr(address, ':');
	const char *h = address;
	size_t hl;
	int fd, r, one = 1;

	if (!colon || colon == address) {
		log_errx("metrics: listen address '%s' is not HOST:PORT", address);
		return -EINVAL;
	}
	hl = (size_t)(colon - address);
	if (h[0] == '[' && hl >= 2 && h[hl - 1] == ']') {
		h++;
		hl -= 2;
	}
	if (hl >= sizeof(host)) {
		log_errx("metrics: listen address '%s' is too long", address);
		return -EINVAL;
	}
	memcpy(host, h, hl);
	host[hl] = '\0';
	r = getaddrinfo(host, colon + 1, &hints, &ai);
	if (r != 0) {
		log_errx("metrics: listen address '%s': %s", address, gai_strerror(r));
		return -EINVAL;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		r = -errno;
		freeaddrinfo(ai);
		return r;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, HTTPD_BACKLOG) < 0) {
		r = -errno;
		log_err_errno(r, "metrics: cannot listen on '%s'", address);
		close(fd);
		freeaddrinfo(ai);
		return r;
	}
	freeaddrinfo(ai);
	return fd;
}
