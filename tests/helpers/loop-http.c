/* See loop-http.h. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

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
