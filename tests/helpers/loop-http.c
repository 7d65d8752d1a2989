/* See loop-http.h. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <curl/curl.h>
#include <zlib.h>

#include "base/clock.h"
#include "loop-http.h"

uint64_t loop_http_now(void)
{
	return (uint64_t)clock_mono_ns() / 1000;
}

static size_t on_data(char *p, size_t size, size_t n, void *userdata)
{
	struct loop_http *c = userdata;
	char *b = realloc(c->reply, c->len + size * n + 1);

	if (!b)
		return 0;
	memcpy(b + c->len, p, size * n);
	c->len += size * n;
	b[c->len] = '\0';
	c->reply = b;
	return size * n;
}

/* Copies the value of header NAME from LINE into OUT, if LINE is that
 * header. */
static void header_value(const char *line, size_t n, const char *name, char *out, size_t size)
{
	size_t k = strlen(name), len;

	if (n <= k || strncasecmp(line, name, k) != 0 || line[k] != ':')
		return;
	line += k + 1;
	n -= k + 1;
	while (n > 0 && (*line == ' ' || *line == '\t'))
		line++, n--;
	while (n > 0 && (line[n - 1] == '\r' || line[n - 1] == '\n' || line[n - 1] == ' '))
		n--;
	len = n < size - 1 ? n : size - 1;
	memcpy(out, line, len);
	out[len] = '\0';
}

static size_t on_header(char *p, size_t size, size_t n, void *userdata)
{
	struct loop_http *c = userdata;

	header_value(p, size * n, "Content-Encoding", c->content_encoding, sizeof(c->content_encoding));
	header_value(p, size * n, "Vary", c->vary, sizeof(c->vary));
	return size * n;
}

static void *call_thread(void *arg)
{
	struct loop_http *c = arg;
	CURL *h = curl_easy_init();
	struct curl_slist *headers = NULL;
	char accept[128];

	if (h) {
		curl_easy_setopt(h, CURLOPT_URL, c->url);
		if (c->unix_socket)
			curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, c->unix_socket);
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, c->method);
		if (c->body)
			curl_easy_setopt(h, CURLOPT_POSTFIELDS, c->body);
		if (c->accept_encoding) {
			snprintf(accept, sizeof(accept), "Accept-Encoding: %s", c->accept_encoding);
			headers = curl_slist_append(NULL, accept);
			curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
		}
		curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
		curl_easy_setopt(h, CURLOPT_HEADERDATA, c);
		curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
		curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
		curl_easy_setopt(h, CURLOPT_TIMEOUT, 5L);
		if (curl_easy_perform(h) == CURLE_OK)
			curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &c->status);
		curl_easy_cleanup(h);
	}
	curl_slist_free_all(headers);
	c->done = 1;
	return NULL;
}

int loop_http(sd_event *event, struct loop_http *c)
{
	pthread_t t;
	int r = pthread_create(&t, NULL, call_thread, c);

	if (r != 0)
		return -r;
	/* Until the client's own 5 s timeout, counted in time rather than
	 * in turns: a loop busy with other clients turns faster. */
	for (uint64_t end = loop_http_now() + 5500000; !c->done && loop_http_now() < end;)
		sd_event_run(event, 10000);
	pthread_join(t, NULL);
	return 0;
}

/* Runs EVENT until nothing is left to dispatch at once. */
static void run_until_idle(sd_event *event)
{
	for (int i = 0; i < 10000; i++)
		if (sd_event_run(event, 0) <= 0)
			return;
}

int loop_http_hold(sd_event *event, const struct sockaddr *sa, socklen_t sa_len, int *fds, int n)
{
	int k = 0;

	for (int i = 0; i < n; i++) {
		int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

		if (fd < 0)
			break;
		/* A full backlog refuses a Unix client at once (EAGAIN); a
		 * TCP one keeps trying in the kernel (EINPROGRESS). */
		if (connect(fd, sa, sa_len) < 0 && errno != EINPROGRESS) {
			close(fd);
			continue;
		}
		fds[k++] = fd;
		run_until_idle(event);
	}
	run_until_idle(event);
	return k;
}

struct release {
	int n;
	int fds[];
};

static int on_release(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct release *r = userdata;

	(void)s;
	(void)usec;
	for (int i = 0; i < r->n; i++)
		close(r->fds[i]);
	r->n = 0;
	return 0;
}

/* The loop may go first (a request answered before the delay): the
 * connections are closed then. */
static void release_destroy(void *userdata)
{
	on_release(NULL, 0, userdata);
	free(userdata);
}

int loop_http_release_later(sd_event *event, int *fds, int n, uint64_t delay_usec)
{
	struct release *r = malloc(sizeof(*r) + (size_t)n * sizeof(int));
	sd_event_source *s;
	int e;

	if (!r)
		return -ENOMEM;
	r->n = n;
	memcpy(r->fds, fds, (size_t)n * sizeof(int));
	/* A floating source: it goes with the loop. */
	e = sd_event_add_time_relative(event, &s, CLOCK_MONOTONIC, delay_usec, 1000, on_release, r);
	if (e < 0) {
		free(r);
		return e;
	}
	sd_event_source_set_destroy_callback(s, release_destroy);
	sd_event_source_set_floating(s, 1);
	sd_event_source_unref(s);
	return 0;
}

ssize_t loop_http_raw(sd_event *event, const struct sockaddr *sa, socklen_t sa_len, const char *req, size_t len,
		      char *out, size_t out_len)
{
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	size_t sent = 0, got = 0;
	uint64_t end = loop_http_now() + 5000000;
	ssize_t n;

	if (fd < 0)
		return -errno;
	if (connect(fd, sa, sa_len) < 0 && errno != EINPROGRESS) {
		n = -errno;
		close(fd);
		return n;
	}
	while (loop_http_now() < end) {
		sd_event_run(event, 10000);
		if (sent < len) {
			n = send(fd, req + sent, len - sent, MSG_NOSIGNAL);
			if (n > 0)
				sent += (size_t)n;
			else if (n < 0 && errno != EAGAIN && errno != ENOTCONN)
				sent = len; /* the server closed it early; read what it said */
		}
		n = recv(fd, out + got, out_len - 1 - got, 0);
		if (n > 0)
			got += (size_t)n;
		else if ((n == 0 || (errno != EAGAIN && errno != ENOTCONN)) || got == out_len - 1)
			break;
	}
	out[got] = '\0';
	close(fd);
	return (ssize_t)got;
}

struct trickler {
	struct loop_http_trickle *t;
	int fd;
	sd_event_source *io;
};

struct loop_http_trickle {
	sd_event_source *timer;
	uint64_t pace, start, last_closed;
	int n, open;
	struct trickler c[];
};

static void trickler_closed(struct trickler *c)
{
	c->io = sd_event_source_disable_unref(c->io);
	close(c->fd);
	c->fd = -1;
	c->t->open--;
	c->t->last_closed = loop_http_now();
}

/* The server closed the connection (or reset it). */
static int on_trickler_io(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct trickler *c = userdata;
	char buf[256];
	ssize_t n;

	(void)s;
	(void)revents;
	while ((n = recv(fd, buf, sizeof(buf), 0)) > 0)
		;
	if (n == 0 || errno != EAGAIN)
		trickler_closed(c);
	return 0;
}

static int on_trickle(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct loop_http_trickle *t = userdata;

	for (int i = 0; i < t->n; i++)
		if (t->c[i].fd >= 0 && send(t->c[i].fd, "a", 1, MSG_NOSIGNAL) < 0 && errno != EAGAIN &&
		    errno != ENOTCONN)
			trickler_closed(&t->c[i]);
	sd_event_source_set_time(s, usec + t->pace);
	return 0;
}

int loop_http_trickle_start(sd_event *event, const struct sockaddr *sa, socklen_t sa_len, int n, uint64_t pace_usec,
			    struct loop_http_trickle **ret)
{
	static const char head[] = "GET /metrics HTTP/1.1\r\nHost: localhost\r\nX-Slow: ";
	struct loop_http_trickle *t = calloc(1, sizeof(*t) + (size_t)n * sizeof(t->c[0]));
	uint64_t now;
	int r;

	if (!t)
		return -ENOMEM;
	t->pace = pace_usec;
	t->start = loop_http_now();
	for (int i = 0; i < n; i++) {
		struct trickler *c = &t->c[i];

		c->t = t;
		c->fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (c->fd < 0 || (connect(c->fd, sa, sa_len) < 0 && errno != EINPROGRESS)) {
			r = -errno;
			goto fail;
		}
		t->n++;
		t->open++;
		/* The request line and the start of a header at once, the rest
		 * of the header a byte at a time. */
		send(c->fd, head, sizeof(head) - 1, MSG_NOSIGNAL);
		r = sd_event_add_io(event, &c->io, c->fd, EPOLLIN | EPOLLRDHUP, on_trickler_io, c);
		if (r < 0)
			goto fail;
		/* Let the server take it, as the clients of a real attack come
		 * one after another. */
		for (int k = 0; k < 50 && sd_event_run(event, 0) > 0; k++)
			;
	}
	sd_event_now(event, CLOCK_MONOTONIC, &now);
	r = sd_event_add_time(event, &t->timer, CLOCK_MONOTONIC, now + pace_usec, 1000, on_trickle, t);
	if (r < 0)
		goto fail;
	*ret = t;
	return 0;
fail:
	loop_http_trickle_free(t);
	return r;
}

int loop_http_trickle_open(const struct loop_http_trickle *t)
{
	return t->open;
}

int64_t loop_http_trickle_wait(sd_event *event, struct loop_http_trickle *t, uint64_t limit_usec)
{
	uint64_t end = t->start + limit_usec;

	while (t->open > 0 && loop_http_now() < end)
		sd_event_run(event, 100000);
	return t->open > 0 ? -ETIMEDOUT : (int64_t)(t->last_closed - t->start);
}

void loop_http_trickle_free(struct loop_http_trickle *t)
{
	if (!t)
		return;
	sd_event_source_disable_unref(t->timer);
	for (int i = 0; i < t->n; i++)
		if (t->c[i].fd >= 0) {
			sd_event_source_disable_unref(t->c[i].io);
			close(t->c[i].fd);
		}
	free(t);
}

struct loop_http_reader {
	sd_event_source *timer;
	int fd;
	size_t chunk, bytes;
	uint64_t pace, start, closed_at;
	char *buf;
};

static int on_reader(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct loop_http_reader *r = userdata;
	size_t got = 0;
	ssize_t n = -1;

	/* Up to CHUNK this tick, as much as has come. */
	while (got < r->chunk && (n = recv(r->fd, r->buf, r->chunk - got, MSG_DONTWAIT)) > 0)
		got += (size_t)n;
	r->bytes += got;
	if (n == 0 || (n < 0 && errno != EAGAIN)) {
		r->closed_at = loop_http_now();
		return sd_event_source_set_enabled(s, SD_EVENT_OFF);
	}
	sd_event_source_set_time(s, usec + r->pace);
	return sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

int loop_http_reader_start(sd_event *event, const struct sockaddr *sa, socklen_t sa_len, const char *path, size_t chunk,
			   uint64_t pace_usec, struct loop_http_reader **ret)
{
	struct loop_http_reader *r = calloc(1, sizeof(*r));
	char req[512];
	int rcvbuf = 16 * 1024, len;
	uint64_t now;
	int e;

	if (!r)
		return -ENOMEM;
	r->chunk = chunk;
	r->pace = pace_usec;
	r->buf = malloc(chunk);
	r->fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (!r->buf || r->fd < 0 || setsockopt(r->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)) < 0 ||
	    connect(r->fd, sa, sa_len) < 0)
		goto fail;
	len = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", path);
	if (send(r->fd, req, (size_t)len, MSG_NOSIGNAL) != len)
		goto fail;
	r->start = loop_http_now();
	sd_event_now(event, CLOCK_MONOTONIC, &now);
	if (sd_event_add_time(event, &r->timer, CLOCK_MONOTONIC, now + pace_usec, 1000, on_reader, r) < 0)
		goto fail;
	*ret = r;
	return 0;
fail:
	e = errno ? -errno : -EIO;
	loop_http_reader_free(r);
	return e;
}

int loop_http_reader_closed(const struct loop_http_reader *r, size_t *bytes, uint64_t *took_usec)
{
	*bytes = r->bytes;
	*took_usec = r->closed_at ? r->closed_at - r->start : 0;
	return r->closed_at != 0;
}

void loop_http_reader_free(struct loop_http_reader *r)
{
	if (!r)
		return;
	sd_event_source_disable_unref(r->timer);
	if (r->fd >= 0)
		close(r->fd);
	free(r->buf);
	free(r);
}

int loop_http_gunzip(const char *in, size_t len, char **out, size_t *out_len)
{
	z_stream z = {0};
	size_t cap = 1 << 20;
	int r;

	*out = malloc(cap);
	*out_len = 0;
	if (!*out || inflateInit2(&z, 15 + 16) != Z_OK)
		return -1;
	z.next_in = (unsigned char *)in;
	z.avail_in = (uInt)len;
	do {
		if (*out_len + 1 >= cap) {
			cap *= 2;
			*out = realloc(*out, cap);
			if (!*out)
				return -1;
		}
		z.next_out = (unsigned char *)*out + *out_len;
		z.avail_out = (uInt)(cap - 1 - *out_len);
		r = inflate(&z, Z_NO_FLUSH);
		*out_len = z.total_out;
	} while (r == Z_OK);
	inflateEnd(&z);
	(*out)[*out_len] = '\0';
	return r == Z_STREAM_END && z.avail_in == 0 ? 0 : -1;
}
