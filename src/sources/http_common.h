/* Options shared by the sources that speak HTTP (prometheus, http_json,
 * haproxy over HTTP): TLS, authentication and extra request headers. */
#ifndef AUTOSCALED_SOURCES_HTTP_COMMON_H
#define AUTOSCALED_SOURCES_HTTP_COMMON_H

#include <stdbool.h>
#include <stddef.h>

#include "sources/http.h"
#include "sources/source.h"

/* The option keys below, for a source_ops.options list. */
#define SOURCE_HTTP_OPTION_KEYS \
	"ca_file", "insecure", "bearer_token", "bearer_token_file", "username", "password", "headers"

struct source_http_opts {
	char *ca_file;
	bool insecure;
	char *bearer_token;   /* from bearer_token, or read once from bearer_token_file */
	char *username;
	char *password;
	char **headers;       /* NULL-terminated "Name: value" lines */
	size_t n_headers;
};

/* Reads the options of SC; on failure writes ERR ("FILE:LINE: ...").
 * Returns 0, -EINVAL or -ENOMEM. */
int source_http_opts_init(struct source_http_opts *o, const struct signal_conf *sc, char *err, size_t errlen);
void source_http_opts_clear(struct source_http_opts *o);

/* Fills the TLS, auth and header fields of REQ from O (borrowed). */
void source_http_opts_apply(const struct source_http_opts *o, struct http_request *req);

/* Starts the GET of URL for S with the options O, under the source's
 * timeout and the bound on a reply; DEFAULT_HEADERS (may be NULL) are sent
 * when O names no headers. *CALL holds the call until DONE clears it.
 * Returns what http_start() returns. */
int source_http_get(struct source *s, const struct source_http_opts *o, const char *url,
		    const char *const *default_headers, http_done_fn done, struct http_call **call);

/* Cancels the call in *CALL, if any, and clears it. */
void source_http_cancel(struct http_call **call);

/* For a reply handler: when RES failed (transport error, or a status other
 * than 2xx from URL), completes S with that failure and returns false. */
bool source_http_reply_ok(struct source *s, const struct http_response *res, const char *url);

/* Percent-encodes S for a query string into a new string; NULL on ENOMEM. */
char *source_url_escape(const char *s);

/* Reads URL from option KEY and checks that it is http:// or https://. */
int source_opt_url(const struct signal_conf *sc, const char *key, char **ret, char *err, size_t errlen);

#endif
