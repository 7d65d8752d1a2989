/* Cloud credentials: Google (metadata server, service-account key with an
 * RS256 JWT) and Azure (client credentials, managed identity via IMDS).
 *
 * A credential belongs to one user at a time (a driver handle or a source's
 * worker), like the rest_client it is used with. Tokens are cached and
 * refreshed before they expire; they are never logged. */
#ifndef AUTOSCALED_CLOUD_AUTH_H
#define AUTOSCALED_CLOUD_AUTH_H

#include <stdbool.h>
#include <stdint.h>

#include "cloud/rest.h"

struct cloud_token {
	/* Allocated to fit (a token is some hundreds of bytes, at most
	 * REST_MAX_TOKEN), NULL when none; wiped before it is freed. */
	char *value;
	int64_t obtained_ms;
	int64_t expires_ms;
};

/* The longest lifetime a token reply is believed: a larger expires_in (or
 * expires_on) counts as this much, so no reply can overflow the expiry. */
#define CLOUD_TOKEN_MAX_LIFETIME_MS (24 * 3600 * INT64_C(1000))

/* A token reply's lifetime field (expires_in: a number, or a string that
 * holds only a number, as some endpoints send it) in ms, at most
 * CLOUD_TOKEN_MAX_LIFETIME_MS; -1 when it is absent, of another type, not a
 * number, not finite or not positive. */
int64_t cloud_token_lifetime_ms(const cJSON *v);

/* True while tok can still be used: a quarter of its life (at most 5 min)
 * before expiry it counts as stale, so a refresh happens in time. */
bool cloud_token_fresh(const struct cloud_token *tok, int64_t now_ms);
/* Stores a token (printable ASCII without blanks) and its lifetime (clamped
 * to CLOUD_TOKEN_MAX_LIFETIME_MS); wipes the old one. Returns 0, -EINVAL (the
 * token or lifetime refused; the old token stays) or -ENOMEM. */
int cloud_token_set(struct cloud_token *tok, const char *value, int64_t lifetime_ms, int64_t now_ms);
void cloud_token_clear(struct cloud_token *tok);

/* Sends a token request. `form`, the request's body holding a secret or
 * NULL, is wiped and freed whatever happens. Returns 0 when the reply is
 * HTTP 200, leaving it in *r for the caller to parse and then release with
 * cloud_token_reply_clear(); else a negative errno: rest_call()'s, or after
 * logging "WHO: token request to ENDPOINT failed: MESSAGE", -EACCES for 400,
 * 401 and 403 and rest_status_errno() for the rest, with *r released. */
int cloud_token_request(struct rest_client *c, const struct rest_request *req, char *form, const char *endpoint,
			struct rest_reply *r);
/* Wipes the reply's body (it holds a token) and clears it. */
void cloud_token_reply_clear(struct rest_reply *r);

/* Google. */
struct gauth {
	bool use_key;
	char metadata_base[512]; /* http://HOST[:PORT] */
	char scopes[512];        /* comma-separated */
	char *client_email;
	char *key_id;
	char *token_uri;
	void *pkey;              /* EVP_PKEY */
	struct cloud_token tok;
};

/* The metadata server at `metadata_host` (host[:port], or a URL), else
 * $GCE_METADATA_HOST, else metadata.google.internal. Returns 0 or -EINVAL. */
int gauth_init_metadata(struct gauth *g, const struct cloud_sink *sink, const char *who,
			const char *metadata_host, const char *scopes);
/* A service-account key file (refused when group/other can read it);
 * token_uri from the file. Returns 0 or a negative errno, logged. */
int gauth_init_key(struct gauth *g, const struct cloud_sink *sink, const char *who, const char *path,
		   const char *scopes);
/* A valid access token in *ret (borrowed from g). Returns 0 or a negative
 * errno, logged. */
int gauth_token(struct gauth *g, struct rest_client *c, const char **ret);
void gauth_fini(struct gauth *g);

/* Azure. */
struct azauth {
	bool imds;
	char *token_url;
	char *form;      /* client credentials form without the secret */
	char *secret;
	struct cloud_token tok;
};

/* Client credentials against LOGIN_HOST/{tenant}/oauth2/v2.0/token, the
 * secret read from secret_file (refused when group/other can read it). */
int azauth_init_secret(struct azauth *a, const struct cloud_sink *sink, const char *who, const char *login_host,
		       const char *tenant, const char *client_id, const char *secret_file, const char *scope);
/* Managed identity through IMDS at imds_base (a URL, default
 * http://169.254.169.254); client_id may be NULL. */
int azauth_init_imds(struct azauth *a, const struct cloud_sink *sink, const char *who, const char *imds_base,
		     const char *resource, const char *client_id);
int azauth_token(struct azauth *a, struct rest_client *c, const char **ret);
void azauth_fini(struct azauth *a);

/* Prefixes https:// to a bare host name; copies a URL as is (no trailing
 * slash). Returns 0 or -ENAMETOOLONG. */
int cloud_base_url(const char *in, const char *default_scheme, char *out, size_t size);

#endif
