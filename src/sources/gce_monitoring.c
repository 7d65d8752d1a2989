/* gce_monitoring: the mean CPU utilisation of a GCE managed instance group
 * from Cloud Monitoring's timeSeries.list (ALIGN_MEAN per instance over
 * 60 s, REDUCE_MEAN across them), the newest point, in percent for a
 * `utilization` signal. Cloud Monitoring publishes CPU with minutes of
 * delay, so a point older than max_age (default 300 s) is an invalid
 * reading, not a value.
 *
 * Options: project, group (required); credentials (metadata|key_file),
 * key_file, metadata_host, scopes, monitoring_base, max_age (a duration). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cloud/auth.h"
#include "cloud/cloud.h"
#include "sources/cloud_worker.h"

#define WHO "gce_monitoring"

struct gce_mon {
	struct gauth auth;
	char *url;       /* up to and including the filter */
	int64_t max_age_ms;
};

static const char *const gce_keys[] = { "project", "group", "credentials", "key_file", "metadata_host", "scopes",
					"monitoring_base", "max_age", NULL };

static void gce_mon_free(void *state)
{
	struct gce_mon *m = state;

	if (!m)
		return;
	gauth_fini(&m->auth);
	free(m->url);
	free(m);
}

static int gce_fetch(void *state, struct rest_client *http, double *value, char *why, size_t whylen)
{
	struct gce_mon *m = state;
	struct rest_reply r;
	const char *bearer;
	char start[32], end[32], url[4096];
	const cJSON *list, *series, *points, *point, *v, *iv, *et, *dv, *iv64;
	const char *bad = NULL;
	int64_t now = rest_now_ms(), t;
	int rc;

	rc = gauth_token(&m->auth, http, &bearer);
	if (rc < 0) {
		snprintf(why, whylen, "no access token: %s", strerror(-rc));
		return rc;
	}
	cloud_format_time(now - m->max_age_ms - 600000, start, sizeof(start));
	cloud_format_time(now, end, sizeof(end));
	snprintf(url, sizeof(url),
		 "%s&interval.startTime=%s&interval.endTime=%s&aggregation.alignmentPeriod=60s"
		 "&aggregation.perSeriesAligner=ALIGN_MEAN&aggregation.crossSeriesReducer=REDUCE_MEAN&pageSize=10"
		 "&view=FULL",
		 m->url, start, end);
	rc = cloud_source_get(http, url, bearer, "timeSeries.list", &r, why, whylen);
	if (rc < 0)
		return rc;
	/* Every member is read with the type the API documents: a reply of
	 * another shape is an error, never a value (nor a zero). */
	list = cloud_json_get(r.json, "timeSeries", cJSON_Array, &bad);
	series = cJSON_GetArrayItem(list, 0);
	if (series && !cJSON_IsObject(series) && !bad)
		bad = "timeSeries[]";
	points = cloud_json_get(series, "points", cJSON_Array, &bad);
	/* Points come newest first. */
	point = cJSON_GetArrayItem(points, 0);
	if (point && !cJSON_IsObject(point) && !bad)
		bad = "points[]";
	iv = cloud_json_get(point, "interval", cJSON_Object, &bad);
	et = cloud_json_get(iv, "endTime", cJSON_String, &bad);
	v = cloud_json_get(point, "value", cJSON_Object, &bad);
	dv = cloud_json_get(v, "doubleValue", cJSON_Number, &bad);
	iv64 = cloud_json_get(v, "int64Value", cJSON_String, &bad);
	if (!cJSON_IsObject(r.json))
		bad = "(the body)";
	if (bad) {
		snprintf(why, whylen, "malformed timeSeries.list reply (field '%s')", bad);
		rc = -EBADMSG;
		goto out;
	}
	if (!point) {
		snprintf(why, whylen, "no CPU series for the group from %s to %s", start, end);
		rc = -ENODATA;
		goto out;
	}
	t = et ? cloud_parse_time(et->valuestring) : 0;
	if (t == 0 || now - t > m->max_age_ms) {
		snprintf(why, whylen, "newest point is %lld s old, more than max_age %lld s", t ? (long long)(now - t) / 1000 : -1LL,
			 (long long)m->max_age_ms / 1000);
		rc = -ENODATA;
		goto out;
	}
	if (dv) {
		*value = dv->valuedouble * 100.0;
	} else if (iv64) {
		char *e;

		errno = 0;
		*value = strtod(iv64->valuestring, &e) * 100.0;
		if (!iv64->valuestring[0] || *e != '\0' || errno != 0) {
			snprintf(why, whylen, "malformed timeSeries.list reply (field 'int64Value')");
			rc = -EBADMSG;
		}
	} else {
		snprintf(why, whylen, "newest point has no doubleValue");
		rc = -EBADMSG;
	}
out:
	rest_reply_clear(&r);
	return rc;
}

static int gce_init(struct source *s, const struct signal_conf *sc, char *err, size_t errlen)
{
	struct gce_mon *m = calloc(1, sizeof(*m));
	char *project = NULL, *group = NULL, *cred = NULL, *key = NULL, *mhost = NULL, *scopes = NULL, *base = NULL;
	char filter[512], efilter[1536], b[512];
	int r;

	if (!m)
		return -ENOMEM;
	if ((r = source_opt_str(sc, "project", true, NULL, &project, err, errlen)) < 0 ||
	    (r = source_opt_str(sc, "group", true, NULL, &group, err, errlen)) < 0 ||
	    (r = source_opt_str(sc, "credentials", false, NULL, &cred, err, errlen)) < 0 ||
	    (r = source_opt_str(sc, "key_file", false, NULL, &key, err, errlen)) < 0 ||
	    (r = source_opt_str(sc, "metadata_host", false, NULL, &mhost, err, errlen)) < 0 ||
	    (r = source_opt_str(sc, "scopes", false, "https://www.googleapis.com/auth/monitoring.read", &scopes, err,
				errlen)) < 0 ||
	    (r = source_opt_str(sc, "monitoring_base", false, "https://monitoring.googleapis.com/v3", &base, err,
				errlen)) < 0 ||
	    (r = source_opt_duration(sc, "max_age", 60 * 1000, 86400 * 1000, 300 * 1000, &m->max_age_ms, err,
				     errlen)) < 0)
		goto out;
	if (!cred)
		cred = strdup(key ? "key_file" : "metadata");
	if (cred && strcmp(cred, "metadata") == 0) {
		r = gauth_init_metadata(&m->auth, &cloud_source_sink, WHO, mhost, scopes);
	} else if (cred && strcmp(cred, "key_file") == 0 && key) {
		r = gauth_init_key(&m->auth, &cloud_source_sink, WHO, key, scopes);
	} else {
		r = source_opt_error(sc, source_option(sc, "credentials"), err, errlen,
				     "credentials must be metadata, or key_file with key_file set");
		goto out;
	}
	if (r < 0) {
		r = source_opt_error(sc, source_option(sc, key && m->auth.use_key ? "key_file" : "credentials"), err,
				     errlen, "credentials refused (see the log)");
		goto out;
	}
	snprintf(filter, sizeof(filter),
		 "metric.type = \"compute.googleapis.com/instance/cpu/utilization\" AND resource.type = \"gce_instance\" "
		 "AND metadata.system_labels.instance_group = \"%s\"", group);
	if (rest_escape(filter, efilter, sizeof(efilter)) < 0 || cloud_base_url(base, "https", b, sizeof(b)) < 0 ||
	    (m->url = malloc(strlen(b) + strlen(project) + strlen(efilter) + 64)) == NULL) {
		r = source_opt_error(sc, source_option(sc, "group"), err, errlen, "group or monitoring_base too long");
		goto out;
	}
	sprintf(m->url, "%s/projects/%s/timeSeries?filter=%s", b, project, efilter);
out:
	free(project);
	free(group);
	free(cred);
	free(key);
	free(mhost);
	free(scopes);
	free(base);
	if (r < 0) {
		gce_mon_free(m);
		return r;
	}
	return cloud_source_start(s, WHO, m, gce_fetch, gce_mon_free, err, errlen);
}

const struct source_ops source_gce_monitoring = {
	.name = "gce_monitoring",
	.options = gce_keys,
	.init = gce_init,
	.poll = cloud_source_poll,
	.cancel = cloud_source_cancel,
	.done = cloud_source_free,
	.priv_size = sizeof(struct cloud_source),
};
