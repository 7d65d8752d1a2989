/* Options shared by the sources that speak HTTP. See http_common.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/file.h"
#include "sources/http_common.h"

#define TOKEN_FILE_MAX 16384

static int read_token_file(const struct signal_conf *sc, const char *path, char **ret, char *err, size_t errlen)
{
	const struct config_option *o = source_option(sc, "bearer_token_file");
	char *buf;
	size_t n;
	/* A bearer token is a credential like the drivers' secrets. */
	int r = file_read_all(path, FILE_PRIVATE, TOKEN_FILE_MAX, &buf, &n, NULL);

	if (r == -EPERM)
		return source_opt_error(sc, o, err, errlen, "'%s': its group or others may access it; %s", path,
					FILE_PRIVATE_RULE);
	if (r == -EFBIG)
		return source_opt_error(sc, o, err, errlen, "'%s' is larger than %d bytes", path, TOKEN_FILE_MAX);
	if (r < 0)
		return source_opt_error(sc, o, err, errlen, "cannot read '%s': %s", path, file_strerror(r));
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
		n--;
	buf[n] = '\0';
	*ret = buf;
	return 0;
}

int source_http_opts_init(struct source_http_opts *o, const struct signal_conf *sc, char *err, size_t errlen)
{
	char *token_file = NULL;
	int r;

	memset(o, 0, sizeof(*o));
	if ((r = source_opt_str(sc, "ca_file", false, NULL, &o->ca_file, err, errlen)) < 0 ||
	    (r = source_opt_bool(sc, "insecure", false, &o->insecure, err, errlen)) < 0 ||
	    (r = source_opt_str(sc, "bearer_token", false, NULL, &o->bearer_token, err, errlen)) < 0 ||
	    (r = source_opt_str(sc, "bearer_token_file", false, NULL, &token_file, err, errlen)) < 0 ||
	    (r = source_opt_str(sc, "username", false, NULL, &o->username, err, errlen)) < 0 ||
	    (r = source_opt_str(sc, "password", false, NULL, &o->password, err, errlen)) < 0 ||
	    (r = source_opt_list(sc, "headers", &o->headers, &o->n_headers, err, errlen)) < 0)
		goto out;
	if (token_file && o->bearer_token) {
		r = source_opt_error(sc, source_option(sc, "bearer_token_file"), err, errlen,
				     "give bearer_token or bearer_token_file, not both");
		goto out;
	}
	if (token_file && (r = read_token_file(sc, token_file, &o->bearer_token, err, errlen)) < 0)
		goto out;
	if (o->bearer_token && o->username) {
		r = source_opt_error(sc, source_option(sc, "username"), err, errlen,
				     "give a bearer token or a username, not both");
		goto out;
	}
	if (o->password && !o->username) {
		r = source_opt_error(sc, source_option(sc, "password"), err, errlen, "password needs a username");
		goto out;
	}
	for (size_t i = 0; i < o->n_headers; i++)
		if (!strchr(o->headers[i], ':') || strpbrk(o->headers[i], "\r\n")) {
			r = source_opt_error(sc, source_option(sc, "headers"), err, errlen,
					     "header '%s' is not one 'Name: value' line", o->headers[i]);
			goto out;
		}
out:
	free(token_file);
	if (r < 0)
		source_http_opts_clear(o);
	return r;
}

void source_http_opts_clear(struct source_http_opts *o)
{
	free(o->ca_file);
	if (o->bearer_token)
		explicit_bzero(o->bearer_token, strlen(o->bearer_token));
	free(o->bearer_token);
	free(o->username);
	if (o->password)
		explicit_bzero(o->password, strlen(o->password));
	free(o->password);
	for (size_t i = 0; i < o->n_headers; i++)
		free(o->headers[i]);
	free(o->headers);
	memset(o, 0, sizeof(*o));
}

void source_http_opts_apply(const struct source_http_opts *o, struct http_request *req)
{
	req->ca_file = o->ca_file;
	req->insecure = o->insecure;
	req->bearer_token = o->bearer_token;
	req->username = o->username;
	req->password = o->password;
	req->headers = (const char *const *)o->headers;
}

int source_http_get(struct source *s, const struct source_http_opts *o, const char *url,
		    const char *const *default_headers, http_done_fn done, struct http_call **call)
{
	struct http_request req = {
		.url = url,
		.timeout_ms = source_timeout_ms(s),
		.max_body = SOURCE_MAX_REPLY,
	};

	source_http_opts_apply(o, &req);
	if (!req.headers)
		req.headers = default_headers;
	return http_start(source_http(s), &req, done, s, call);
}

void source_http_cancel(struct http_call **call)
{
	http_cancel(*call);
	*call = NULL;
}

bool source_http_reply_ok(struct source *s, const struct http_response *res, const char *url)
{
	if (res->status < 0) {
		source_complete(s, res->status, 0, "%s", res->error);
		return false;
	}
	if (res->code < 200 || res->code > 299) {
		source_complete(s, -EREMOTEIO, 0, "HTTP status %ld from '%s'", res->code, url);
		return false;
	}
	return true;
}

char *source_url_escape(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	char *out = malloc(strlen(s) * 3 + 1), *o = out;

	if (!out)
		return NULL;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		    *p == '-' || *p == '_' || *p == '.' || *p == '~') {
			*o++ = (char)*p;
		} else {
			*o++ = '%';
			*o++ = hex[*p >> 4];
			*o++ = hex[*p & 15];
		}
	}
	*o = '\0';
	return out;
}

int source_opt_url(const struct signal_conf *sc, const char *key, char **ret, char *err, size_t errlen)
{
	int r = source_opt_str(sc, key, true, NULL, ret, err, errlen);

	if (r < 0)
		return r;
	if (strncasecmp(*ret, "http://", 7) != 0 && strncasecmp(*ret, "https://", 8) != 0) {
		r = source_opt_error(sc, source_option(sc, key), err, errlen, "'%s' is not an http:// or https:// URL",
				     *ret);
		free(*ret);
		*ret = NULL;
	}
	return r;
}
