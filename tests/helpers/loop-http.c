/* See loop-http.h. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "loop-http.h"

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

static void *call_thread(void *arg)
{
	struct loop_http *c = arg;
	CURL *h = curl_easy_init();

	if (h) {
		curl_easy_setopt(h, CURLOPT_URL, c->url);
		if (c->unix_socket)
			curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, c->unix_socket);
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, c->method);
		if (c->body)
			curl_easy_setopt(h, CURLOPT_POSTFIELDS, c->body);
		curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
		curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
		curl_easy_setopt(h, CURLOPT_TIMEOUT, 5L);
		if (curl_easy_perform(h) == CURLE_OK)
			curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &c->status);
		curl_easy_cleanup(h);
	}
	c->done = 1;
	return NULL;
}

int loop_http(sd_event *event, struct loop_http *c)
{
	pthread_t t;
	int r = pthread_create(&t, NULL, call_thread, c);

	if (r != 0)
		return -r;
	/* 500 turns of at most 10 ms each: the client's own 5 s timeout. */
	for (int i = 0; i < 500 && !c->done; i++)
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
	int *fds;
	int n;
};

static int on_release(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct release *r = userdata;

	(void)s;
	(void)usec;
	for (int i = 0; i < r->n; i++)
		close(r->fds[i]);
	free(r);
	return 0;
}

int loop_http_release_later(sd_event *event, int *fds, int n, uint64_t delay_usec)
{
	struct release *r = malloc(sizeof(*r));
	int e;

	if (!r)
		return -ENOMEM;
	r->fds = fds;
	r->n = n;
	/* A floating source: it goes with the loop. */
	e = sd_event_add_time_relative(event, NULL, CLOCK_MONOTONIC, delay_usec, 1000, on_release, r);
	if (e < 0)
		free(r);
	return e < 0 ? e : 0;
}
