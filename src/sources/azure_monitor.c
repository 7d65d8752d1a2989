/* azure_monitor: `Percentage CPU` of an Azure scale set from Azure Monitor
 * (Average over PT1M), the newest point that has an average (the newest
 * minute often has only count 0), in percent for a `utilization` signal.
 * A point older than max_age (default 300 s) is an invalid reading. Error
 * bodies are flat {code, message} in api-version 2018-01-01 and nested
 * {error: {...}} in newer ones; both are read.
 *
 * Options: subscription, resource_group, name (required); credentials
 * (client_secret|managed_identity), tenant, client_id, secret_file,
 * login_host, arm_base, scope, imds_base, resource, max_age (a duration). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cloud/auth.h"
#include "cloud/cloud.h"
#include "sources/cloud_worker.h"

#define WHO "azure_monitor"

struct az_mon {
	struct azauth auth;
	char *url;   /* up to the timespan */
	int64_t max_age_ms;
};

static const char *const az_keys[] = { "subscription", "resource_group", "name", "credentials", "tenant", "client_id",
				       "secret_file", "login_host", "arm_base", "scope", "imds_base", "resource",
				       "max_age", NULL };

static void az_mon_free(void *state)
{
	struct az_mon *m = state;

	if (!m)
		return;
	azauth_fini(&m->auth);
	free(m->url);
	free(m);
}

static int az_fetch(void *state, struct rest_client *http, double *value, char *why, size_t whylen)
{
	struct az_mon *m = state;
	struct rest_reply r;
	const char *bearer;
	char start[32], end[32], url[2048];
	const cJSON *list, *metric, *series, *data, *pt, *best = NULL;
	const char *bad = NULL;
	int64_t now = rest_now_ms(), t = 0;
	int rc;

	rc = azauth_token(&m->auth, http, &bearer);
	if (rc < 0) {
		snprintf(why, whylen, "no access token: %s", strerror(-rc));
		return rc;
	}
	cloud_format_time(now - m->max_age_ms - 600000, start, sizeof(start));
	cloud_format_time(now, end, sizeof(end));
	snprintf(url, sizeof(url), "%s&timespan=%s/%s", m->url, start, end);
	rc = cloud_source_get(http, url, bearer, "metrics", &r, why, whylen);
	if (rc < 0)
		return rc;
	/* Every member is read with the type the API documents: a reply of
	 * another shape is an error, never a value (nor a zero). */
	list = cloud_json_get(r.json, "value", cJSON_Array, &bad);
	metric = cJSON_GetArrayItem(list, 0);
	if (metric && !cJSON_IsObject(metric) && !bad)
		bad = "value[]";
	series = cJSON_GetArrayItem(cloud_json_get(metric, "timeseries", cJSON_Array, &bad), 0);
	if (series && !cJSON_IsObject(series) && !bad)
		bad = "timeseries[]";
	data = cloud_json_get(series, "data", cJSON_Array, &bad);
	cJSON_ArrayForEach(pt, data) {
		const cJSON *ts_v = cloud_json_get(pt, "timeStamp", cJSON_String, &bad);
		const cJSON *avg = cloud_json_get(pt, "average", cJSON_Number, &bad);
		int64_t ts;

		if (!cJSON_IsObject(pt) && !bad)
			bad = "data[]";
		if (bad)
			break;
		ts = ts_v ? cloud_parse_time(ts_v->valuestring) : 0;
		if (avg && ts == 0) {
			bad = "timeStamp";
			break;
		}
		if (avg && ts >= t) {
			best = avg;
			t = ts;
		}
	}
	if (!cJSON_IsObject(r.json))
		bad = "(the body)";
	if (bad) {
		snprintf(why, whylen, "malformed metrics reply (field '%s')", bad);
		rc = -EBADMSG;
		rest_reply_clear(&r);
		return rc;
	}
	if (!best) {
		snprintf(why, whylen, "no point with an average from %s to %s", start, end);
		rc = -ENODATA;
	} else if (now - t > m->max_age_ms + 60000) {
		/* timeStamp is the start of its minute: allow that minute. */
		snprintf(why, whylen, "newest average is %lld s old, more than max_age %lld s", (long long)(now - t) / 1000,
			 (long long)m->max_age_ms / 1000);
		rc = -ENODATA;
	} else {
		*value = best->valuedouble;
	}
	rest_reply_clear(&r);
	return rc;
}

static int az_init(struct source *s, const struct signal_conf *sc, char *err, size_t errlen)
{
	struct az_mon *m = calloc(1, sizeof(*m));
	char *sub = NULL, *rg = NULL, *name = NULL, *cred = NULL, *tenant = NULL, *id = NULL, *secret = NULL;
	char *login = NULL, *arm = NULL, *scope = NULL, *imds = NULL, *resource = NULL, b[512], def_scope[600];
	int r;

	if (!m)
		return -ENOMEM;
	if ((r = source_opt_str(sc, "subscription", true, NULL, &sub, err, errlen)) < 0 ||
	    (r = source_opt_str(sc, "resource_group", true, NULL, &rg, err, errlen)) < 0 ||
	    (r = source_opt_str(sc, "name", true, NULL, &name, err, errlen)) < 0 ||
	    (r = source_opt_str(sc, "credentials", false, NULL, &cred, err, errlen)) < 0 ||
	    (r = source_opt_str(sc, "tenant", false, NULL, &tenant, err, errlen)) < 0 ||
	    (r = source_opt_str(sc, "client_id", false, NULL, &id, err, errlen)) < 0 ||
	    (r = source_opt_str(sc, "secret_file", false, NULL, &secret, err, errlen)) < 0 ||
	    (r = source_opt_str(sc, "login_host", false, "login.microsoftonline.com", &login, err, errlen)) < 0 ||
	    (r = source_opt_str(sc, "arm_base", false, "https://management.azure.com", &arm, err, errlen)) < 0 ||
	    (r = source_opt_str(sc, "scope", false, NULL, &scope, err, errlen)) < 0 ||
	    (r = source_opt_str(sc, "imds_base", false, NULL, &imds, err, errlen)) < 0 ||
	    (r = source_opt_str(sc, "resource", false, NULL, &resource, err, errlen)) < 0 ||
	    (r = source_opt_duration(sc, "max_age", 60 * 1000, 86400 * 1000, 300 * 1000, &m->max_age_ms, err,
				     errlen)) < 0)
		goto out;
	if (cloud_base_url(arm, "https", b, sizeof(b)) < 0) {
		r = source_opt_error(sc, source_option(sc, "arm_base"), err, errlen, "arm_base too long");
		goto out;
	}
	snprintf(def_scope, sizeof(def_scope), "%s/.default", b);
	/* A managed identity's token is for the ARM endpoint in use: a
	 * sovereign cloud's ARM refuses one for the public cloud's. */
	if (!resource && asprintf(&resource, "%s/", b) < 0) {
		resource = NULL;
		r = -ENOMEM;
		goto out;
	}
	if (!cred)
		cred = strdup(secret ? "client_secret" : "managed_identity");
	if (cred && strcmp(cred, "managed_identity") == 0) {
		r = azauth_init_imds(&m->auth, &cloud_source_sink, WHO, imds, resource, id);
	} else if (cred && strcmp(cred, "client_secret") == 0 && tenant && id && secret) {
		r = azauth_init_secret(&m->auth, &cloud_source_sink, WHO, login, tenant, id, secret,
				       scope ? scope : def_scope);
	} else {
		r = source_opt_error(sc, source_option(sc, "credentials"), err, errlen,
				     "credentials must be managed_identity, or client_secret with tenant, client_id "
				     "and secret_file");
		goto out;
	}
	if (r < 0) {
		r = source_opt_error(sc, source_option(sc, secret ? "secret_file" : "credentials"), err, errlen,
				     "credentials refused (see the log)");
		goto out;
	}
	m->url = malloc(strlen(b) + strlen(sub) + strlen(rg) + strlen(name) + 384);
	if (!m->url) {
		r = -ENOMEM;
		goto out;
	}
	sprintf(m->url,
		"%s/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Compute/virtualMachineScaleSets/%s"
		"/providers/Microsoft.Insights/metrics?api-version=2018-01-01&metricnames=Percentage%%20CPU"
		"&interval=PT1M&aggregation=Average&metricnamespace=Microsoft.Compute%%2FvirtualMachineScaleSets",
		b, sub, rg, name);
out:
	free(sub);
	free(rg);
	free(name);
	free(cred);
	free(tenant);
	free(id);
	free(secret);
	free(login);
	free(arm);
	free(scope);
	free(imds);
	free(resource);
	if (r < 0) {
		az_mon_free(m);
		return r;
	}
	return cloud_source_start(s, WHO, m, az_fetch, az_mon_free, err, errlen);
}

const struct source_ops source_azure_monitor = {
	.name = "azure_monitor",
	.options = az_keys,
	.init = az_init,
	.poll = cloud_source_poll,
	.cancel = cloud_source_cancel,
	.done = cloud_source_free,
	.priv_size = sizeof(struct cloud_source),
};
