/* Azure credentials: client credentials and managed identity (auth.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "auth.h"

#define SECRET_MAX 4096

int azauth_init_secret(struct azauth *a, const struct autoscaled_host *host, const char *who, const char *login_host,
		       const char *tenant, const char *client_id, const char *secret_file, const char *scope)
{
	static const struct azauth zero;
	char base[512], e_id[512], e_scope[1024];
	size_t n;
	int rc;

	*a = zero;
	if (cloud_base_url(login_host, "https", base, sizeof(base)) < 0 || rest_escape(client_id, e_id, sizeof(e_id)) < 0 ||
	    rest_escape(scope, e_scope, sizeof(e_scope)) < 0) {
		host->log(host, AUTOSCALED_LOG_ERROR, "%s: login host, client_id or scope too long", who);
		return -EINVAL;
	}
	rc = rest_read_private_file(host, who, secret_file, &a->secret, SECRET_MAX);
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

int azauth_init_imds(struct azauth *a, const struct autoscaled_host *host, const char *who, const char *imds_base,
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
		host->log(host, AUTOSCALED_LOG_ERROR, "%s: IMDS endpoint, resource or client_id too long", who);
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

/* A number, or a string holding one: IMDS sends strings. */
static double num_or_string(const cJSON *v)
{
	return cJSON_IsNumber(v) ? v->valuedouble : cJSON_IsString(v) ? strtod(v->valuestring, NULL) : 0;
}

/* expires_on is epoch seconds as a string in IMDS, a date elsewhere. */
static int64_t expires_on_ms(const cJSON *v)
{
	char *end;
	double d;
	time_t t;

	if (cJSON_IsNumber(v))
		return (int64_t)(v->valuedouble * 1000);
	if (!cJSON_IsString(v))
		return 0;
	d = strtod(v->valuestring, &end);
	if (end != v->valuestring && *end == '\0')
		return (int64_t)(d * 1000);
	t = curl_getdate(v->valuestring, NULL);
	return t > 0 ? (int64_t)t * 1000 : 0;
}

int azauth_token(struct azauth *a, struct rest_client *c, const char **ret)
{
	static const char *const imds_hdrs[] = { "Metadata: true", NULL };
	const struct autoscaled_host *host = c->host;
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
	on = expires_on_ms(cJSON_GetObjectItemCaseSensitive(r.json, "expires_on"));
	life = (int64_t)(num_or_string(cJSON_GetObjectItemCaseSensitive(r.json, "expires_in")) * 1000);
	if (on > now)
		life = on - now;
	rc = cJSON_IsString(at) ? cloud_token_set(&a->tok, at->valuestring, life, now) : -EBADMSG;
	if (rc < 0)
		host->log(host, AUTOSCALED_LOG_ERROR, "%s: token reply without access_token or expiry", c->who);
	cloud_token_reply_clear(&r);
	if (rc == 0)
		*ret = a->tok.value;
	return rc;
}
