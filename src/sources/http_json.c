/* http_json: GET a URL and read the number at an RFC 6901 JSON pointer, e.g.
 * RabbitMQ's management API (/api/queues/vhost/name, pointer "/messages")
 * or a home-grown endpoint. The value may be a JSON number or a string
 * holding one. Any other HTTP status than 2xx makes the reading invalid. */
#include <errno.h>
#include <stdlib.h>

#include "sources/http_common.h"
#include "sources/parse.h"
#include "sources/registry.h"

struct http_json {
	char *url;
	char *pointer;
	struct source_http_opts http;
	struct http_call *call;
};

static const char *const http_json_keys[] = { "url", "pointer", SOURCE_HTTP_OPTION_KEYS, NULL };

static int http_json_init(struct source *s, const struct signal_conf *sc, char *err, size_t errlen)
{
	struct http_json *p = source_priv(s);
	cJSON *dummy = cJSON_CreateObject(), *item;
	char why[256];
	int r;

	if (!dummy)
		return -ENOMEM;
	if ((r = source_opt_url(sc, "url", &p->url, err, errlen)) < 0 ||
	    (r = source_opt_str(sc, "pointer", false, "", &p->pointer, err, errlen)) < 0 ||
	    (r = source_http_opts_init(&p->http, sc, err, errlen)) < 0)
		goto out;
	/* Checking the pointer's syntax now turns a typo into a config error
	 * rather than an invalid signal at run time. */
	r = json_pointer_get(dummy, p->pointer, &item, why, sizeof(why));
	if (r == -EINVAL)
		r = source_opt_error(sc, source_option(sc, "pointer"), err, errlen, "%s", why);
	else
		r = 0;
out:
	cJSON_Delete(dummy);
	return r;
}

static void http_json_done(void *userdata, const struct http_response *res)
{
	struct source *s = userdata;
	struct http_json *p = source_priv(s);
	cJSON *root, *item;
	char why[256];
	double v;
	int r;

	p->call = NULL;
	if (!source_http_reply_ok(s, res, p->url))
		return;
	r = json_parse_bounded(res->body, res->body_len, SOURCE_MAX_JSON_DEPTH, &root, why, sizeof(why));
	if (r < 0) {
		source_complete(s, r, 0, "%s", why);
		return;
	}
	r = json_pointer_get(root, p->pointer, &item, why, sizeof(why));
	if (r == 0)
		r = json_number(item, &v, why, sizeof(why));
	cJSON_Delete(root);
	if (r < 0)
		source_complete(s, r, 0, "%s", why);
	else
		source_complete(s, 0, v, NULL);
}

static int http_json_poll(struct source *s)
{
	struct http_json *p = source_priv(s);

	return source_http_get(s, &p->http, p->url, NULL, http_json_done, &p->call);
}

static void http_json_cancel(struct source *s)
{
	struct http_json *p = source_priv(s);

	source_http_cancel(&p->call);
}

static void http_json_free(struct source *s)
{
	struct http_json *p = source_priv(s);

	free(p->url);
	free(p->pointer);
	source_http_opts_clear(&p->http);
}

const struct source_ops source_http_json = {
	.name = "http_json",
	.options = http_json_keys,
	.init = http_json_init,
	.poll = http_json_poll,
	.cancel = http_json_cancel,
	.done = http_json_free,
	.priv_size = sizeof(struct http_json),
};
