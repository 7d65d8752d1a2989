/* Google credentials: metadata server and service-account keys (auth.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "cloud/auth.h"

#define KEY_FILE_MAX (64 * 1024)

bool cloud_token_fresh(const struct cloud_token *tok, int64_t now_ms)
{
	int64_t margin = (tok->expires_ms - tok->obtained_ms) / 4;

	if (margin > 300000)
		margin = 300000;
	return tok->value && now_ms < tok->expires_ms - margin;
}

int64_t cloud_token_lifetime_ms(const cJSON *v)
{
	double s;
	char *end;

	if (cJSON_IsNumber(v)) {
		s = v->valuedouble;
	} else if (cJSON_IsString(v) && v->valuestring[0]) {
		errno = 0;
		s = strtod(v->valuestring, &end);
		if (*end != '\0' || (errno != 0 && errno != ERANGE))
			return -1;
	} else {
		return -1;
	}
	/* Compared as a double before any conversion: 1e300 s must not become
	 * an undefined or negative int64_t. */
	if (!isfinite(s) || s <= 0)
		return -1;
	if (s >= (double)(CLOUD_TOKEN_MAX_LIFETIME_MS / 1000))
		return CLOUD_TOKEN_MAX_LIFETIME_MS;
	return (int64_t)(s * 1000);
}

int cloud_token_set(struct cloud_token *tok, const char *value, int64_t lifetime_ms, int64_t now_ms)
{
	size_t n = strlen(value);
	char *copy;

	if (n == 0 || n >= REST_MAX_TOKEN || lifetime_ms <= 0)
		return -EINVAL;
	/* The token goes into a header line: a reply must not be able to add
	 * lines of its own. */
	for (size_t i = 0; i < n; i++)
		if (value[i] <= ' ' || value[i] > '~')
			return -EINVAL;
	if (lifetime_ms > CLOUD_TOKEN_MAX_LIFETIME_MS)
		lifetime_ms = CLOUD_TOKEN_MAX_LIFETIME_MS;
	copy = malloc(n + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, value, n + 1);
	cloud_token_clear(tok);
	tok->value = copy;
	tok->obtained_ms = now_ms;
	tok->expires_ms = now_ms + lifetime_ms;
	return 0;
}

void cloud_token_clear(struct cloud_token *tok)
{
	if (tok->value) {
		explicit_bzero(tok->value, strlen(tok->value));
		free(tok->value);
		tok->value = NULL;
	}
	tok->obtained_ms = tok->expires_ms = 0;
}

int cloud_token_request(struct rest_client *c, const struct rest_request *req, char *form, const char *endpoint,
			struct rest_reply *r)
{
	const struct cloud_sink *sink = c->sink;
	char msg[256];
	int rc = rest_call(c, req, r);

	if (form) {
		explicit_bzero(form, strlen(form));
		free(form);
	}
	if (rc < 0 || r->status == 200)
		return rc;
	cloud_log(sink, AUTOSCALED_LOG_ERROR, "%s: token request to %s failed: %s", c->who, endpoint,
		  rest_error_message(r, msg, sizeof(msg)));
	rc = r->status == 400 || r->status == 401 || r->status == 403 ? -EACCES : rest_status_errno(r->status);
	cloud_token_reply_clear(r);
	return rc;
}

void cloud_token_reply_clear(struct rest_reply *r)
{
	if (r->body)
		explicit_bzero(r->body, r->len);
	rest_reply_clear(r);
}

int cloud_base_url(const char *in, const char *default_scheme, char *out, size_t size)
{
	int n;

	if (strstr(in, "://"))
		n = snprintf(out, size, "%s", in);
	else
		n = snprintf(out, size, "%s://%s", default_scheme, in);
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	while (n > 0 && out[n - 1] == '/')
		out[--n] = '\0';
	return 0;
}

int gauth_init_metadata(struct gauth *g, const struct cloud_sink *sink, const char *who,
			const char *metadata_host, const char *scopes)
{
	static const struct gauth zero;
	const char *h = metadata_host;

	*g = zero;
	if (!h || !*h)
		h = getenv("GCE_METADATA_HOST");
	if (!h || !*h)
		h = "metadata.google.internal";
	if (cloud_base_url(h, "http", g->metadata_base, sizeof(g->metadata_base)) < 0 ||
	    snprintf(g->scopes, sizeof(g->scopes), "%s", scopes) >= (int)sizeof(g->scopes)) {
		cloud_log(sink, AUTOSCALED_LOG_ERROR, "%s: metadata host or scopes too long", who);
		return -EINVAL;
	}
	return 0;
}

static char *json_strdup(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) && v->valuestring[0] ? strdup(v->valuestring) : NULL;
}

int gauth_init_key(struct gauth *g, const struct cloud_sink *sink, const char *who, const char *path,
		   const char *scopes)
{
	static const struct gauth zero;
	char *text = NULL, *pem = NULL;
	cJSON *j;
	BIO *bio;
	int rc;

	*g = zero;
	g->use_key = true;
	snprintf(g->scopes, sizeof(g->scopes), "%s", scopes);
	rc = rest_read_private_file(sink, who, path, &text, KEY_FILE_MAX);
	if (rc < 0)
		return rc;
	j = cJSON_Parse(text);
	explicit_bzero(text, strlen(text));
	free(text);
	if (!j) {
		cloud_log(sink, AUTOSCALED_LOG_ERROR, "%s: key file '%s' is not JSON", who, path);
		return -EINVAL;
	}
	g->client_email = json_strdup(j, "client_email");
	g->key_id = json_strdup(j, "private_key_id");
	g->token_uri = json_strdup(j, "token_uri");
	if (!g->token_uri)
		g->token_uri = strdup("https://oauth2.googleapis.com/token");
	pem = json_strdup(j, "private_key");
	if (!g->client_email || !pem || !g->token_uri) {
		cloud_log(sink, AUTOSCALED_LOG_ERROR, "%s: key file '%s' lacks client_email or private_key", who, path);
		rc = -EINVAL;
		goto out;
	}
	bio = BIO_new_mem_buf(pem, -1);
	g->pkey = bio ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : NULL;
	BIO_free(bio);
	if (!g->pkey || EVP_PKEY_base_id(g->pkey) != EVP_PKEY_RSA) {
		cloud_log(sink, AUTOSCALED_LOG_ERROR, "%s: key file '%s' has no usable RSA private_key", who, path);
		rc = -EINVAL;
	}
out:
	if (pem) {
		explicit_bzero(pem, strlen(pem));
		free(pem);
	}
	/* cJSON holds the PEM too: wipe its copy before freeing. */
	{
		cJSON *pk = cJSON_GetObjectItemCaseSensitive(j, "private_key");

		if (cJSON_IsString(pk))
			explicit_bzero(pk->valuestring, strlen(pk->valuestring));
	}
	cJSON_Delete(j);
	if (rc < 0)
		gauth_fini(g);
	return rc;
}

void gauth_fini(struct gauth *g)
{
	free(g->client_email);
	free(g->key_id);
	free(g->token_uri);
	EVP_PKEY_free(g->pkey);
	g->client_email = g->key_id = g->token_uri = NULL;
	g->pkey = NULL;
	cloud_token_clear(&g->tok);
}

/* base64url without padding of n bytes into out; returns the length or -1. */
static int b64url(const unsigned char *in, size_t n, char *out, size_t size)
{
	size_t need = 4 * ((n + 2) / 3) + 1;
	int len;

	if (need > size)
		return -1;
	len = EVP_EncodeBlock((unsigned char *)out, in, (int)n);
	while (len > 0 && out[len - 1] == '=')
		len--;
	out[len] = '\0';
	for (int i = 0; i < len; i++)
		out[i] = out[i] == '+' ? '-' : out[i] == '/' ? '_' : out[i];
	return len;
}

static int make_jwt(struct gauth *g, char *out, size_t size)
{
	char header[512], claims[2048], scope[512], h64[1024], c64[3072], s64[1024];
	unsigned char sig[1024];
	size_t siglen = sizeof(sig);
	long long iat = rest_now_ms() / 1000 - 10;
	EVP_MD_CTX *md;
	int n, rc = -EIO;

	/* Scopes are comma-separated in our options, space-joined in the JWT. */
	snprintf(scope, sizeof(scope), "%s", g->scopes);
	for (char *p = scope; *p; p++)
		if (*p == ',')
			*p = ' ';
	{
		cJSON *h = cJSON_CreateObject(), *c = cJSON_CreateObject();
		char *hs, *cs;

		cJSON_AddStringToObject(h, "alg", "RS256");
		cJSON_AddStringToObject(h, "typ", "JWT");
		if (g->key_id)
			cJSON_AddStringToObject(h, "kid", g->key_id);
		cJSON_AddStringToObject(c, "iss", g->client_email);
		cJSON_AddStringToObject(c, "scope", scope);
		cJSON_AddStringToObject(c, "aud", g->token_uri);
		cJSON_AddNumberToObject(c, "iat", (double)iat);
		cJSON_AddNumberToObject(c, "exp", (double)(iat + 3600));
		hs = cJSON_PrintUnformatted(h);
		cs = cJSON_PrintUnformatted(c);
		cJSON_Delete(h);
		cJSON_Delete(c);
		n = hs && cs && strlen(hs) < sizeof(header) && strlen(cs) < sizeof(claims) ? 0 : -1;
		if (n == 0) {
			snprintf(header, sizeof(header), "%s", hs);
			snprintf(claims, sizeof(claims), "%s", cs);
		}
		cJSON_free(hs);
		cJSON_free(cs);
		if (n < 0)
			return -ENOMEM;
	}
	if (b64url((const unsigned char *)header, strlen(header), h64, sizeof(h64)) < 0 ||
	    b64url((const unsigned char *)claims, strlen(claims), c64, sizeof(c64)) < 0)
		return -ENAMETOOLONG;
	n = snprintf(out, size, "%s.%s", h64, c64);
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	md = EVP_MD_CTX_new();
	if (md && EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, g->pkey) == 1 &&
	    EVP_DigestSign(md, sig, &siglen, (const unsigned char *)out, (size_t)n) == 1 &&
	    b64url(sig, siglen, s64, sizeof(s64)) >= 0 && (size_t)n + 1 + strlen(s64) < size) {
		out[n] = '.';
		strcpy(out + n + 1, s64);
		rc = 0;
	}
	EVP_MD_CTX_free(md);
	return rc;
}

/* Reads {access_token, expires_in} (a number, or a string from some
 * endpoints) into tok. */
static int take_token(struct cloud_token *tok, const cJSON *j)
{
	const cJSON *at = cJSON_GetObjectItemCaseSensitive(j, "access_token");
	int64_t life = cloud_token_lifetime_ms(cJSON_GetObjectItemCaseSensitive(j, "expires_in"));
	int rc;

	if (!cJSON_IsObject(j) || !cJSON_IsString(at) || life <= 0)
		return -EBADMSG;
	rc = cloud_token_set(tok, at->valuestring, life, rest_now_ms());
	return rc == -EINVAL ? -EBADMSG : rc;
}

int gauth_token(struct gauth *g, struct rest_client *c, const char **ret)
{
	const struct cloud_sink *sink = c->sink;
	struct rest_request req = { 0 };
	struct rest_reply r;
	char url[1536];
	char *form = NULL;
	int rc;

	if (cloud_token_fresh(&g->tok, rest_now_ms())) {
		*ret = g->tok.value;
		return 0;
	}
	if (!g->use_key) {
		static const char *const hdrs[] = { "Metadata-Flavor: Google", NULL };

		snprintf(url, sizeof(url), "%s/computeMetadata/v1/instance/service-accounts/default/token%s%s",
			 g->metadata_base, g->scopes[0] ? "?scopes=" : "", g->scopes);
		req.method = "GET";
		req.url = url;
		req.headers = hdrs;
		req.direct = true;
	} else {
		char jwt[4096];
		size_t flen;

		rc = make_jwt(g, jwt, sizeof(jwt));
		if (rc < 0) {
			cloud_log(sink, AUTOSCALED_LOG_ERROR, "%s: cannot sign the token request for '%s'", c->who,
				  g->client_email);
			return rc;
		}
		flen = strlen(jwt) + 128;
		form = malloc(flen);
		if (!form)
			return -ENOMEM;
		snprintf(form, flen, "grant_type=urn%%3Aietf%%3Aparams%%3Aoauth%%3Agrant-type%%3Ajwt-bearer&assertion=%s",
			 jwt);
		explicit_bzero(jwt, sizeof(jwt));
		req.method = "POST";
		req.url = g->token_uri;
		req.body = form;
		req.content_type = "application/x-www-form-urlencoded";
	}
	rc = cloud_token_request(c, &req, form, g->use_key ? "the token_uri" : "the metadata server", &r);
	if (rc < 0)
		return rc;
	rc = take_token(&g->tok, r.json);
	if (rc == -EBADMSG)
		cloud_log(sink, AUTOSCALED_LOG_ERROR, "%s: token reply without access_token or expires_in", c->who);
	cloud_token_reply_clear(&r);
	if (rc == 0)
		*ret = g->tok.value;
	return rc;
}
