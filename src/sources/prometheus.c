/* prometheus: an instant PromQL query through the HTTP API
 * (GET BASE/api/v1/query?query=...). An empty vector is invalid ("no
 * series"), never zero; several series are reduced by `reduce` (sum, avg,
 * max, min) or refused; an error reply carries Prometheus's own message. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sources/http_common.h"
#include "sources/parse.h"
#include "sources/registry.h"

struct prometheus {
	char *query_url;
	enum reduce reduce;
	struct source_http_opts http;
	struct http_call *call;
};

static const char *const prometheus_keys[] = { "url", "query", "reduce", SOURCE_HTTP_OPTION_KEYS, NULL };

static int prometheus_init(struct source *s, const struct signal_conf *sc, char *err, size_t errlen)
{
	struct prometheus *p = source_priv(s);
	char *base = NULL, *query = NULL, *reduce = NULL, *esc = NULL;
	size_t n;
	int r;

	if ((r = source_opt_url(sc, "url", &base, err, errlen)) < 0 ||
	    (r = source_opt_str(sc, "query", true, NULL, &query, err, errlen)) < 0 ||
	    (r = source_opt_str(sc, "reduce", false, "none", &reduce, err, errlen)) < 0 ||
	    (r = source_http_opts_init(&p->http, sc, err, errlen)) < 0)
		goto out;
	if (parse_reduce(reduce, &p->reduce) < 0) {
		r = source_opt_error(sc, source_option(sc, "reduce"), err, errlen,
				     "reduce must be sum, avg, max, min or none, not '%s'", reduce);
		goto out;
	}
	esc = source_url_escape(query);
	if (!esc) {
		r = -ENOMEM;
		goto out;
	}
	/* The base URL may end with a slash or carry a path prefix
	 * (--web.route-prefix, a reverse proxy). */
	n = strlen(base);
	while (n > 0 && base[n - 1] == '/')
		base[--n] = '\0';
	n += strlen(esc) + sizeof("/api/v1/query?query=");
	p->query_url = malloc(n);
	if (!p->query_url) {
		r = -ENOMEM;
		goto out;
	}
	snprintf(p->query_url, n, "%s/api/v1/query?query=%s", base, esc);
out:
	free(base);
	free(query);
	free(reduce);
	free(esc);
	return r;
}

static void prometheus_done(void *userdata, const struct http_response *res)
{
	struct source *s = userdata;
	struct prometheus *p = source_priv(s);
	char why[512];
	double v;
	int r;

	p->call = NULL;
	if (res->status < 0) {
		source_complete(s, res->status, 0, "%s", res->error);
		return;
	}
	/* Prometheus answers errors with 400/422/503 and a JSON body that
	 * says why; use its message when there is one. */
	r = prometheus_parse(res->body, res->body_len, p->reduce, &v, why, sizeof(why));
	if (r == 0 && (res->code < 200 || res->code > 299)) {
		r = -EREMOTEIO;
		snprintf(why, sizeof(why), "HTTP status %ld", res->code);
	} else if (r == -EBADMSG && (res->code < 200 || res->code > 299)) {
		snprintf(why, sizeof(why), "HTTP status %ld", res->code);
		r = -EREMOTEIO;
	}
	if (r < 0)
		source_complete(s, r, 0, "%s", why);
	else
		source_complete(s, 0, v, NULL);
}

static int prometheus_poll(struct source *s)
{
	struct prometheus *p = source_priv(s);
	static const char *const accept[] = { "Accept: application/json", NULL };

	return source_http_get(s, &p->http, p->query_url, accept, prometheus_done, &p->call);
}

static void prometheus_cancel(struct source *s)
{
	struct prometheus *p = source_priv(s);

	source_http_cancel(&p->call);
}

static void prometheus_free(struct source *s)
{
	struct prometheus *p = source_priv(s);

	free(p->query_url);
	source_http_opts_clear(&p->http);
}

const struct source_ops source_prometheus = {
	.name = "prometheus",
	.options = prometheus_keys,
	.init = prometheus_init,
	.poll = prometheus_poll,
	.cancel = prometheus_cancel,
	.done = prometheus_free,
	.priv_size = sizeof(struct prometheus),
};
