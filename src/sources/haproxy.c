/* haproxy: the load balancer's statistics, as CSV over HTTP (the stats page
 * with ";csv") or from the stats UNIX socket ("show stat"). One row (a proxy
 * and its FRONTEND, BACKEND or a server) and one column by header name:
 * a gauge such as rate, req_rate, qcur, scur, or the per-second rate of a
 * cumulative counter such as req_tot or stot (`delta`, on by default for
 * counters), with counter resets handled. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "sources/http_common.h"
#include "sources/parse.h"
#include "sources/registry.h"

struct haproxy {
	char *url;              /* stats page with ";csv", or NULL */
	char *socket_path;      /* stats socket, or NULL */
	char *proxy;
	char *server;           /* NULL: FRONTEND, else BACKEND */
	char *column;
	bool delta;
	struct source_http_opts http;
	/* The poll in flight. */
	struct http_call *call;
	int fd;
	sd_event_source *io, *timer;
	char *buf;
	size_t len;
	size_t sent;
	/* The previous counter reading, for deltas. */
	bool have_prev;
	double prev;
	int64_t prev_ms;
};

static const char *const haproxy_keys[] = {
	"url", "socket", "proxy", "server", "column", "delta", SOURCE_HTTP_OPTION_KEYS, NULL,
};

static const char show_stat[] = "show stat\n";

static int haproxy_init(struct source *s, const struct signal_conf *sc, char *err, size_t errlen)
{
	struct haproxy *p = source_priv(s);
	int r;

	p->fd = -1;
	if (source_option(sc, "url") && source_option(sc, "socket"))
		return source_opt_error(sc, source_option(sc, "socket"), err, errlen, "give url or socket, not both");
	if (!source_option(sc, "url") && !source_option(sc, "socket"))
		return source_opt_error(sc, NULL, err, errlen, "option 'url' or 'socket' is required");
	if (source_option(sc, "url")) {
		char *u;

		if ((r = source_opt_url(sc, "url", &u, err, errlen)) < 0)
			return r;
		/* The stats page gives CSV when its URL ends with ";csv". */
		if (!strstr(u, ";csv")) {
			size_t n = strlen(u) + sizeof(";csv");

			p->url = malloc(n);
			if (p->url)
				snprintf(p->url, n, "%s;csv", u);
			free(u);
			if (!p->url)
				return -ENOMEM;
		} else {
			p->url = u;
		}
	} else {
		struct sockaddr_un sa;

		if ((r = source_opt_str(sc, "socket", true, NULL, &p->socket_path, err, errlen)) < 0)
			return r;
		if (strlen(p->socket_path) >= sizeof(sa.sun_path))
			return source_opt_error(sc, source_option(sc, "socket"), err, errlen,
						"socket path longer than %zu bytes", sizeof(sa.sun_path) - 1);
	}
	if ((r = source_opt_str(sc, "proxy", true, NULL, &p->proxy, err, errlen)) < 0 ||
	    (r = source_opt_str(sc, "server", false, NULL, &p->server, err, errlen)) < 0 ||
	    (r = source_opt_str(sc, "column", true, NULL, &p->column, err, errlen)) < 0 ||
	    (r = source_opt_bool(sc, "delta", haproxy_column_cumulative(p->column), &p->delta, err, errlen)) < 0 ||
	    (r = source_http_opts_init(&p->http, sc, err, errlen)) < 0)
		return r;
	return 0;
}

static void conn_close(struct haproxy *p)
{
	p->io = sd_event_source_disable_unref(p->io);
	p->timer = sd_event_source_disable_unref(p->timer);
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	free(p->buf);
	p->buf = NULL;
	p->len = p->sent = 0;
}

/* Turns one stats table into the reading. */
static void finish_csv(struct source *s, const char *csv, size_t len)
{
	struct haproxy *p = source_priv(s);
	int64_t now = clock_mono_ms();
	char why[512];
	double v, rate;
	int r;

	r = haproxy_csv_value(csv, len, p->proxy, p->server, p->column, &v, why, sizeof(why));
	if (r < 0) {
		source_complete(s, r, 0, "%s", why);
		return;
	}
	if (!p->delta) {
		source_complete(s, 0, v, NULL);
		return;
	}
	if (!p->have_prev || now <= p->prev_ms) {
		p->have_prev = true;
		p->prev = v;
		p->prev_ms = now;
		source_complete(s, -EAGAIN, 0, "first reading of counter '%s'; its rate follows from the next poll",
				p->column);
		return;
	}
	counter_rate(p->prev, v, (double)(now - p->prev_ms), &rate);
	p->prev = v;
	p->prev_ms = now;
	source_complete(s, 0, rate, NULL);
}

static void fail(struct source *s, int status, const char *why)
{
	struct haproxy *p = source_priv(s);

	conn_close(p);
	source_complete(s, status, 0, "stats socket '%s': %s", p->socket_path, why);
}

static int on_socket(sd_event_source *es, int fd, uint32_t revents, void *userdata)
{
	struct source *s = userdata;
	struct haproxy *p = source_priv(s);
	ssize_t n;

	if (p->sent < sizeof(show_stat) - 1) {
		int soerr = 0;
		socklen_t sl = sizeof(soerr);

		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr) {
			fail(s, -soerr, strerror(soerr));
			return 0;
		}
		n = send(fd, show_stat + p->sent, sizeof(show_stat) - 1 - p->sent, MSG_NOSIGNAL);
		if (n < 0 && errno != EAGAIN && errno != EINTR) {
			fail(s, -errno, strerror(errno));
			return 0;
		}
		if (n > 0)
			p->sent += (size_t)n;
		if (p->sent == sizeof(show_stat) - 1)
			sd_event_source_set_io_events(es, EPOLLIN);
		return 0;
	}
	if (!p->buf && !(p->buf = malloc(SOURCE_MAX_REPLY + 1))) {
		fail(s, -ENOMEM, "out of memory");
		return 0;
	}
	n = read(fd, p->buf + p->len, SOURCE_MAX_REPLY + 1 - p->len);
	if (n < 0) {
		if (errno != EAGAIN && errno != EINTR)
			fail(s, -errno, strerror(errno));
		return 0;
	}
	p->len += (size_t)n;
	if (p->len > SOURCE_MAX_REPLY) {
		fail(s, -EFBIG, "reply larger than 1 MiB");
		return 0;
	}
	if (n == 0) {
		/* HAProxy closes a non-interactive session after the answer. */
		char *csv = p->buf;
		size_t len = p->len;

		p->buf = NULL;
		conn_close(p);
		finish_csv(s, csv, len);
		free(csv);
	}
	return 0;
}

static int on_timeout(sd_event_source *es, uint64_t usec, void *userdata)
{
	struct source *s = userdata;
	char why[64];

	snprintf(why, sizeof(why), "no reply within %lld ms", (long long)source_timeout_ms(s));
	fail(s, -ETIMEDOUT, why);
	return 0;
}

static int poll_socket(struct source *s)
{
	struct haproxy *p = source_priv(s);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	uint64_t now;
	int r;

	strcpy(sa.sun_path, p->socket_path);
	p->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (p->fd < 0)
		return -errno;
	if (connect(p->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS) {
		int e = errno;

		conn_close(p);
		source_complete_later(s, -e, 0, "stats socket '%s': %s", p->socket_path, strerror(e));
		return 0;
	}
	r = sd_event_add_io(source_event(s), &p->io, p->fd, EPOLLOUT, on_socket, s);
	if (r >= 0 && (r = sd_event_now(source_event(s), CLOCK_MONOTONIC, &now)) >= 0)
		r = sd_event_add_time(source_event(s), &p->timer, CLOCK_MONOTONIC,
				      now + (uint64_t)source_timeout_ms(s) * 1000, 1000, on_timeout, s);
	if (r < 0) {
		conn_close(p);
		return r;
	}
	return 0;
}

static void haproxy_http_done(void *userdata, const struct http_response *res)
{
	struct source *s = userdata;
	struct haproxy *p = source_priv(s);

	p->call = NULL;
	if (source_http_reply_ok(s, res, p->url))
		finish_csv(s, res->body, res->body_len);
}

static int haproxy_poll(struct source *s)
{
	struct haproxy *p = source_priv(s);

	if (p->socket_path)
		return poll_socket(s);
	return source_http_get(s, &p->http, p->url, NULL, haproxy_http_done, &p->call);
}

static void haproxy_cancel(struct source *s)
{
	struct haproxy *p = source_priv(s);

	source_http_cancel(&p->call);
	conn_close(p);
}

static void haproxy_free(struct source *s)
{
	struct haproxy *p = source_priv(s);

	conn_close(p);
	free(p->url);
	free(p->socket_path);
	free(p->proxy);
	free(p->server);
	free(p->column);
	source_http_opts_clear(&p->http);
}

const struct source_ops source_haproxy = {
	.name = "haproxy",
	.options = haproxy_keys,
	.init = haproxy_init,
	.poll = haproxy_poll,
	.cancel = haproxy_cancel,
	.done = haproxy_free,
	.priv_size = sizeof(struct haproxy),
};
