/* http: libcurl multi driven by sd-event. See http.h for the contract.
 *
 * curl tells us which sockets to watch (CURLMOPT_SOCKETFUNCTION) and when it
 * next needs a timeout (CURLMOPT_TIMERFUNCTION); we map them to sd-event I/O
 * sources and one monotonic timer, and hand events back with
 * curl_multi_socket_action(). Completed transfers are collected after each
 * action and their callbacks run outside any curl callback, so a callback may
 * start or cancel other calls freely. */
#include <curl/curl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/clock.h"
#include "sources/http.h"
#include "log/log.h"

struct http {
	sd_event *event;
	CURLM *multi;
	sd_event_source *timer;
	struct http_call *calls;  /* doubly linked, for http_free() */
	size_t n_calls;
};

struct http_call {
	struct http *http;
	struct http_call *prev, *next;
	CURL *easy;
	http_done_fn done;
	void *userdata;
	struct curl_slist *headers;
	char *url;
	char *post;
	char *auth;             /* "user:password" or the bearer token */
	char *ca_file;
	char *body;
	size_t body_len, body_cap, max_body;
	bool too_big;
	char *hdr;              /* raw response headers of the last response */
	size_t hdr_len;
	int64_t start_ms, timeout_ms;
	char errbuf[CURL_ERROR_SIZE];
};

static void call_free(struct http_call *c)
{
	struct http *h = c->http;

	if (c->prev)
		c->prev->next = c->next;
	else
		h->calls = c->next;
	if (c->next)
		c->next->prev = c->prev;
	h->n_calls--;
	if (c->easy) {
		curl_multi_remove_handle(h->multi, c->easy);
		curl_easy_cleanup(c->easy);
	}
	curl_slist_free_all(c->headers);
	free(c->url);
	free(c->post);
	if (c->auth) {
		explicit_bzero(c->auth, strlen(c->auth));
		free(c->auth);
	}
	free(c->ca_file);
	free(c->body);
	free(c->hdr);
	free(c);
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *userdata)
{
	struct http_call *c = userdata;
	size_t n = size * nmemb;

	if (n > c->max_body - c->body_len) {
		c->too_big = true;
		return 0;  /* aborts the transfer with CURLE_WRITE_ERROR */
	}
	if (c->body_len + n + 1 > c->body_cap) {
		size_t cap = c->body_cap ? c->body_cap : 4096;
		char *p;

		while (cap < c->body_len + n + 1)
			cap *= 2;
		if (cap > c->max_body + 1)
			cap = c->max_body + 1;
		p = realloc(c->body, cap);
		if (!p)
			return 0;
		c->body = p;
		c->body_cap = cap;
	}
	memcpy(c->body + c->body_len, data, n);
	c->body_len += n;
	c->body[c->body_len] = '\0';
	return n;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *userdata)
{
	struct http_call *c = userdata;
	size_t n = size * nmemb;
	char *p;

	/* A new status line starts a new response (after a redirect or a
	 * 100 Continue): keep only the headers of the last one. */
	if (n >= 5 && strncmp(data, "HTTP/", 5) == 0)
		c->hdr_len = 0;
	if (c->hdr_len + n + 1 > HTTP_MAX_HEADER_BYTES)
		return n;  /* drop headers beyond the bound, keep the transfer */
	p = realloc(c->hdr, c->hdr_len + n + 1);
	if (!p)
		return n;
	c->hdr = p;
	memcpy(c->hdr + c->hdr_len, data, n);
	c->hdr_len += n;
	c->hdr[c->hdr_len] = '\0';
	return n;
}

static int map_curl_error(CURLcode rc)
{
	switch (rc) {
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_COULDNT_CONNECT:
		return -ECONNREFUSED;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		return -EHOSTUNREACH;
	case CURLE_FILESIZE_EXCEEDED:
		return -EFBIG;
	case CURLE_OUT_OF_MEMORY:
		return -ENOMEM;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
		return -EPROTO;
	default:
		return -EIO;
	}
}

static void finish(struct http_call *c, CURLcode rc)
{
	struct http_response r = { .retry_after_ms = -1 };
	char why[CURL_ERROR_SIZE + 64];
	curl_off_t ra = 0;

	r.elapsed_ms = clock_mono_ms() - c->start_ms;
	if (rc == CURLE_OK) {
		curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &r.code);
		if (curl_easy_getinfo(c->easy, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK && ra > 0)
			r.retry_after_ms = (int64_t)ra * 1000;
		r.body = c->body ? c->body : "";
		r.body_len = c->body_len;
		r.headers_ = c->hdr;
		r.headers_len_ = c->hdr_len;
	} else {
		if (c->too_big || rc == CURLE_FILESIZE_EXCEEDED) {
			r.status = -EFBIG;
			snprintf(why, sizeof(why), "reply larger than %zu bytes", c->max_body);
		} else if (rc == CURLE_OPERATION_TIMEDOUT) {
			r.status = -ETIMEDOUT;
			snprintf(why, sizeof(why), "no reply within %lld ms", (long long)c->timeout_ms);
		} else {
			r.status = map_curl_error(rc);
			snprintf(why, sizeof(why), "%s", c->errbuf[0] ? c->errbuf : curl_easy_strerror(rc));
		}
		r.error = why;
		r.body = "";
	}
	/* Detach from curl before the callback so that it may start new calls. */
	curl_multi_remove_handle(c->http->multi, c->easy);
	c->done(c->userdata, &r);
	call_free(c);
}

static void check_done(struct http *h)
{
	CURLMsg *m;
	int left;

	while ((m = curl_multi_info_read(h->multi, &left))) {
		struct http_call *c = NULL;

		if (m->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&c);
		if (c)
			finish(c, m->data.result);
	}
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct http *h = userdata;
	int flags = 0, running;

	if (revents & EPOLLIN)
		flags |= CURL_CSELECT_IN;
	if (revents & EPOLLOUT)
		flags |= CURL_CSELECT_OUT;
	if (revents & (EPOLLERR | EPOLLHUP))
		flags |= CURL_CSELECT_ERR;
	curl_multi_socket_action(h->multi, fd, flags, &running);
	check_done(h);
	return 0;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct http *h = userdata;
	int running;

	curl_multi_socket_action(h->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	check_done(h);
	return 0;
}

static int on_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
	struct http *h = userp;
	sd_event_source *src = socketp;
	uint32_t events = 0;

	if (what == CURL_POLL_REMOVE) {
		if (src) {
			sd_event_source_disable_unref(src);
			curl_multi_assign(h->multi, fd, NULL);
		}
		return 0;
	}
	if (what & CURL_POLL_IN)
		events |= EPOLLIN;
	if (what & CURL_POLL_OUT)
		events |= EPOLLOUT;
	if (src)
		return sd_event_source_set_io_events(src, events) < 0 ? -1 : 0;
	if (sd_event_add_io(h->event, &src, fd, events, on_io, h) < 0) {
		log_warnx("http: cannot watch socket %d", (int)fd);
		return -1;
	}
	sd_event_source_set_description(src, "http-socket");
	curl_multi_assign(h->multi, fd, src);
	return 0;
}

static int on_timer_change(CURLM *multi, long timeout_ms, void *userp)
{
	struct http *h = userp;
	uint64_t now;

	if (timeout_ms < 0)
		return sd_event_source_set_enabled(h->timer, SD_EVENT_OFF) < 0 ? -1 : 0;
	if (sd_event_now(h->event, CLOCK_MONOTONIC, &now) < 0)
		return -1;
	if (sd_event_source_set_time(h->timer, now + (uint64_t)timeout_ms * 1000) < 0)
		return -1;
	return sd_event_source_set_enabled(h->timer, SD_EVENT_ONESHOT) < 0 ? -1 : 0;
}

int http_new(sd_event *event, struct http **ret)
{
	static bool global_done;
	struct http *h;

	if (!global_done) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
			return -ENOMEM;
		global_done = true;
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->event = sd_event_ref(event);
	h->multi = curl_multi_init();
	if (!h->multi)
		goto fail;
	if (sd_event_add_time(event, &h->timer, CLOCK_MONOTONIC, UINT64_MAX, 1000, on_timer, h) < 0)
		goto fail;
	sd_event_source_set_enabled(h->timer, SD_EVENT_OFF);
	sd_event_source_set_description(h->timer, "http-timer");
	curl_multi_setopt(h->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(h->multi, CURLMOPT_SOCKETDATA, h);
	curl_multi_setopt(h->multi, CURLMOPT_TIMERFUNCTION, on_timer_change);
	curl_multi_setopt(h->multi, CURLMOPT_TIMERDATA, h);
	/* Keep idle connections for reuse by the next polls (curl's default
	 * shrinks the cache as calls complete), within a bound on descriptors. */
	curl_multi_setopt(h->multi, CURLMOPT_MAXCONNECTS, (long)HTTP_MAX_IDLE_CONNECTIONS);
	*ret = h;
	return 0;
fail:
	if (h->multi)
		curl_multi_cleanup(h->multi);
	sd_event_unref(h->event);
	free(h);
	return -ENOMEM;
}

void http_free(struct http *h)
{
	if (!h)
		return;
	while (h->calls)
		call_free(h->calls);
	curl_multi_cleanup(h->multi);
	sd_event_source_disable_unref(h->timer);
	sd_event_unref(h->event);
	free(h);
}

static bool url_scheme_ok(const char *url)
{
	return strncasecmp(url, "http://", 7) == 0 || strncasecmp(url, "https://", 8) == 0;
}

static int call_setup(struct http_call *c, const struct http_request *req)
{
	CURL *e = c->easy;
	const char *method = req->method ? req->method : "GET";

	c->url = strdup(req->url);
	if (!c->url)
		return -ENOMEM;
	curl_easy_setopt(e, CURLOPT_URL, c->url);
	curl_easy_setopt(e, CURLOPT_PRIVATE, c);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, c->errbuf);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, c);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, c);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)c->timeout_ms);
	curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)c->max_body);
	curl_easy_setopt(e, CURLOPT_USERAGENT, "autoscaled/" PACKAGE_VERSION);
	curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#else
	curl_easy_setopt(e, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
	curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
	if (req->follow_redirects) {
		curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 1L);
		curl_easy_setopt(e, CURLOPT_MAXREDIRS, 5L);
	}
	if (strcmp(method, "GET") != 0)
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
	if (req->body || strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0 ||
	    strcmp(method, "PATCH") == 0) {
		c->post = malloc(req->body_len + 1);
		if (!c->post)
			return -ENOMEM;
		if (req->body_len)
			memcpy(c->post, req->body, req->body_len);
		c->post[req->body_len] = '\0';
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, c->post);
	}
	for (const char *const *hp = req->headers; hp && *hp; hp++) {
		struct curl_slist *n = curl_slist_append(c->headers, *hp);

		if (!n)
			return -ENOMEM;
		c->headers = n;
	}
	if (req->bearer_token) {
		c->auth = strdup(req->bearer_token);
		if (!c->auth)
			return -ENOMEM;
		curl_easy_setopt(e, CURLOPT_HTTPAUTH, CURLAUTH_BEARER);
		curl_easy_setopt(e, CURLOPT_XOAUTH2_BEARER, c->auth);
	} else if (req->username) {
		const char *pw = req->password ? req->password : "";
		size_t n = strlen(req->username) + strlen(pw) + 2;

		c->auth = malloc(n);
		if (!c->auth)
			return -ENOMEM;
		snprintf(c->auth, n, "%s:%s", req->username, pw);
		curl_easy_setopt(e, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
		curl_easy_setopt(e, CURLOPT_USERPWD, c->auth);
	}
	if (c->headers)
		curl_easy_setopt(e, CURLOPT_HTTPHEADER, c->headers);
	if (req->ca_file) {
		c->ca_file = strdup(req->ca_file);
		if (!c->ca_file)
			return -ENOMEM;
		curl_easy_setopt(e, CURLOPT_CAINFO, c->ca_file);
	}
	if (req->insecure) {
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	return 0;
}

int http_start(struct http *h, const struct http_request *req, http_done_fn done, void *userdata,
	       struct http_call **ret)
{
	struct http_call *c;
	int r;

	if (!req->url || !url_scheme_ok(req->url) || !done)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->http = h;
	c->next = h->calls;
	if (h->calls)
		h->calls->prev = c;
	h->calls = c;
	h->n_calls++;
	c->done = done;
	c->userdata = userdata;
	c->timeout_ms = req->timeout_ms > 0 ? req->timeout_ms : HTTP_DEFAULT_TIMEOUT_MS;
	c->max_body = req->max_body ? req->max_body : HTTP_DEFAULT_MAX_BODY;
	c->start_ms = clock_mono_ms();
	c->easy = curl_easy_init();
	if (!c->easy) {
		call_free(c);
		return -ENOMEM;
	}
	r = call_setup(c, req);
	if (r < 0) {
		call_free(c);
		return r;
	}
	/* Adding the handle only arms curl's timer; the transfer starts on
	 * the next loop iteration, so DONE never runs from in here. */
	if (curl_multi_add_handle(h->multi, c->easy) != CURLM_OK) {
		call_free(c);
		return -ENOMEM;
	}
	if (ret)
		*ret = c;
	return 0;
}

void http_cancel(struct http_call *c)
{
	if (c)
		call_free(c);
}

int http_response_header(const struct http_response *r, const char *name, char *buf, size_t buflen)
{
	size_t nlen = strlen(name);
	const char *p = r->headers_, *end = r->headers_ + r->headers_len_;

	if (!p)
		return -ENOENT;
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *v, *ve;

		if (!eol)
			eol = end;
		if ((size_t)(eol - p) > nlen && strncasecmp(p, name, nlen) == 0 && p[nlen] == ':') {
			v = p + nlen + 1;
			ve = eol;
			while (v < ve && (*v == ' ' || *v == '\t'))
				v++;
			while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ' || ve[-1] == '\t'))
				ve--;
			if ((size_t)(ve - v) + 1 > buflen)
				return -ENOBUFS;
			memcpy(buf, v, (size_t)(ve - v));
			buf[ve - v] = '\0';
			return (int)(ve - v);
		}
		p = eol + 1;
	}
	return -ENOENT;
}

size_t http_in_flight(const struct http *h)
{
	return h->n_calls;
}
