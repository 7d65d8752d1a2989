/* Azure credentials: client credentials and managed identity (auth.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "cloud/auth.h"

#define SECRET_MAX 4096

int azauth_init_secret(struct azauth *a, const struct cloud_sink *sink, const char *who, const char *login_host,
		       const char *tenant, const char *client_id, const char *secret_file, const char *scope)
{
	static const struct azauth zero;
	char base[512], e_id[512], e_scope[1024];
	size_t n;
	int rc;

	*a = zero;
	if (cloud_base_url(login_host, "https", base, sizeof(base)) < 0 || rest_escape(client_id, e_id, sizeof(e_id)) < 0 ||
	    rest_escape(scope, e_scope, sizeof(e_scope)) < 0) {
		cloud_log(sink, AUTOSCALED_LOG_ERROR, "%s: login host, client_id or scope too long", who);
		return -EINVAL;
	}
	rc = rest_read_private_file(sink, who, secret_file, &a->secret, SECRET_MAX);
	if (rc < 0)
		return rc;
	n = strlen(base) + strlen(tenant) + 64;
	a->token_url = malloc(n);
	a->form = malloc(strlen(e_id) + strlen(e_scope) + 96);
	if (!a->token_url || !a->form) {
		azauth_fini(a);
		return -ENOMEM;
	}
	snprintf(a->token_url, n, "%s/%s/oauth2/v2.0/token", base, tenant);
	sprintf(a->form, "grant_type=client_credentials&client_id=%s&scope=%s", e_id, e_scope);
	return 0;
}

int azauth_init_imds(struct azauth *a, const struct cloud_sink *sink, const char *who, const char *imds_base,
		     const char *resource, const char *client_id)
{
	static const struct azauth zero;
	char base[512], e_res[512], e_id[512] = "";
	size_t n;

	*a = zero;
	a->imds = true;
	if (cloud_base_url(imds_base && *imds_base ? imds_base : "http://169.254.169.254", "http", base, sizeof(base)) < 0 ||
	    rest_escape(resource, e_res, sizeof(e_res)) < 0 ||
	    (client_id && rest_escape(client_id, e_id, sizeof(e_id)) < 0)) {
		cloud_log(sink, AUTOSCALED_LOG_ERROR, "%s: IMDS endpoint, resource or client_id too long", who);
		return -EINVAL;
	}
	n = strlen(base) + strlen(e_res) + strlen(e_id) + 128;
	a->token_url = malloc(n);
	if (!a->token_url)
		return -ENOMEM;
	snprintf(a->token_url, n, "%s/metadata/identity/oauth2/token?api-version=2018-02-01&resource=%s%s%s", base, e_res,
		 e_id[0] ? "&client_id=" : "", e_id);
	return 0;
}

void azauth_fini(struct azauth *a)
{
	if (a->secret) {
		explicit_bzero(a->secret, strlen(a->secret));
		free(a->secret);
	}
	free(a->token_url);
	free(a->form);
	a->secret = a->token_url = a->form = NULL;
	cloud_token_clear(&a->tok);
}

/* expires_on is epoch seconds (a number, or a string holding one in IMDS)
 * or a date elsewhere: the lifetime it leaves from now_ms, at most
 * CLOUD_TOKEN_MAX_LIFETIME_MS; -1 when it is none of these or already past. */
static int64_t expires_on_lifetime_ms(const cJSON *v, int64_t now_ms)
{
	const double max_s = (double)(CLOUD_TOKEN_MAX_LIFETIME_MS / 1000);
	double on_s, left_s;
	char *end;
	time_t t;

	if (cJSON_IsNumber(v)) {
		on_s = v->valuedouble;
	} else if (cJSON_IsString(v) && v->valuestring[0]) {
		on_s = strtod(v->valuestring, &end);
		if (*end != '\0') {
			t = curl_getdate(v->valuestring, NULL);
			if (t <= 0)
				return -1;
			on_s = (double)t;
		}
	} else {
		return -1;
	}
	/* Compared as doubles before any conversion, so that no value from the
	 * wire can overflow an int64_t. */
	if (!isfinite(on_s))
		return -1;
	left_s = on_s - (double)now_ms / 1000.0;
	if (left_s <= 0)
		return -1;
	return left_s >= max_s ? CLOUD_TOKEN_MAX_LIFETIME_MS : (int64_t)(left_s * 1000);
}

int azauth_token(struct azauth *a, struct rest_client *c, const char **ret)
{
	static const char *const imds_hdrs[] = { "Metadata: true", NULL };
	const struct cloud_sink *sink = c->sink;
	enum rest_policy saved = c->policy;
	struct rest_request req = { 0 };
	struct rest_reply r;
	char *form = NULL, e_secret[3 * SECRET_MAX + 1];
	int64_t now = rest_now_ms(), life = 0, on;
	const cJSON *at;
	int rc;

	if (cloud_token_fresh(&a->tok, now)) {
		*ret = a->tok.value;
		return 0;
	}
	req.url = a->token_url;
	if (a->imds) {
		req.method = "GET";
		req.headers = imds_hdrs;
		req.direct = true;
		c->policy = REST_POLICY_IMDS;
	} else {
		size_t n;

		if (rest_escape(a->secret, e_secret, sizeof(e_secret)) < 0)
			return -EINVAL;
		n = strlen(a->form) + strlen(e_secret) + 32;
		form = malloc(n);
		if (!form)
			return -ENOMEM;
		snprintf(form, n, "%s&client_secret=%s", a->form, e_secret);
		explicit_bzero(e_secret, sizeof(e_secret));
		req.method = "POST";
		req.body = form;
		req.content_type = "application/x-www-form-urlencoded";
	}
	rc = cloud_token_request(c, &req, form, a->imds ? "the managed identity endpoint" : "the login host", &r);
	c->policy = saved;
	if (rc < 0)
		return rc;
	at = cJSON_GetObjectItemCaseSensitive(r.json, "access_token");
	on = expires_on_lifetime_ms(cJSON_GetObjectItemCaseSensitive(r.json, "expires_on"), now);
	life = cloud_token_lifetime_ms(cJSON_GetObjectItemCaseSensitive(r.json, "expires_in"));
	if (on > 0)
		life = on;
	rc = -EBADMSG;
	if (cJSON_IsObject(r.json) && cJSON_IsString(at) && life > 0)
		rc = cloud_token_set(&a->tok, at->valuestring, life, now);
	if (rc == -EINVAL)
		rc = -EBADMSG;
	if (rc == -EBADMSG)
		cloud_log(sink, AUTOSCALED_LOG_ERROR, "%s: token reply without access_token or expiry", c->who);
	cloud_token_reply_clear(&r);
	if (rc == 0)
		*ret = a->tok.value;
	return rc;
}
