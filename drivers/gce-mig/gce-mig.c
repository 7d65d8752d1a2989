/* gce-mig: a GCE managed instance group (zonal or regional) as a pool.
 *
 * Observe reads the group (targetSize, status.isStable, currentActions) and
 * pages through listManagedInstances. Scale-out is a resize with a
 * requestId, scale-in a deleteInstances of victims the driver picks, each
 * followed to DONE through the operation's `wait`. The requestId is made
 * once per action, so a retried request cannot act twice. While the group is
 * not stable no new action starts, unless it has been unstable for longer
 * than unstable_limit (a MIG short of capacity can stay unstable for hours). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cloud/auth.h"
#include "cloud/cloud.h"

#define WHO "gce-mig"
#define DELETE_BATCH 1000

struct autoscaled_driver_instance {
	const struct autoscaled_host *host;
	struct cloud_sink sink; /* the host, as the cloud code reports */
	struct rest_client http;
	struct gauth auth;
	char name[128];
	char base[512];       /* compute base URL, no trailing slash */
	char scope_path[512]; /* projects/P/zones/Z or projects/P/regions/R */
	char igm_url[1280];
	enum cloud_victims victims;
	int64_t unstable_limit_ms;
	int64_t op_timeout_ms;
	int page_size;
	/* The last read of the group. */
	struct cloud_members members;
	int target_size;
	int observed; /* the target size observe() reported, or this driver set since; -1 none */
	bool stable;
	int64_t unstable_since_ms; /* monotonic; 0: stable */
	char actions[256];
	char autoscaler[512]; /* status.autoscaler: the cloud's own autoscaler drives the group */
	bool coexist;	      /* coexist_with_cloud_autoscaler: act anyway, the cloud keeps a floor */
	bool coexist_warned;
};

static const char *const known_options[] = {
	"project", "zone", "region", "name", "credentials", "key_file", "metadata_host", "compute_base", "scopes",
	"victim_policy", "unstable_limit", "page_size", "operation_timeout", "retry_attempts", "retry_base", "retry_max",
	"http_timeout", "coexist_with_cloud_autoscaler", NULL,
};

#define LOG(h, lvl, ...) (h)->host->log((h)->host, AUTOSCALED_LOG_##lvl, __VA_ARGS__)

static int request(struct autoscaled_driver_instance *h, const char *method, const char *url, const char *body,
		   struct rest_reply *r)
{
	struct rest_request req = { .method = method, .url = url, .body = body };
	int rc = gauth_token(&h->auth, &h->http, &req.bearer);

	if (rc < 0)
		return rc;
	return rest_call(&h->http, &req, r);
}

/* Logs a final HTTP error once and maps it to an errno. */
static int http_fail(struct autoscaled_driver_instance *h, const char *what, const struct rest_reply *r)
{
	char msg[256];

	LOG(h, ERROR, WHO ": %s of '%s' failed: HTTP %ld: %s", what, h->name, r->status,
	    rest_error_message(r, msg, sizeof(msg)));
	return r->status == 404 ? -ENOENT : rest_status_errno(r->status);
}

static const char *json_str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : "";
}

/* A reply that is not what the API documents (a field of another type, a
 * required one missing) may be a broken or spoofed one: it is an error and
 * nothing is decided on it, so the group holds. */
static int malformed(struct autoscaled_driver_instance *h, const char *what, const char *field)
{
	LOG(h, ERROR, WHO ": %s of '%s' returned a malformed reply (field '%s'); nothing done on it", what, h->name,
	    field);
	rest_count_error(&h->http);
	return -EBADMSG;
}

static int fetch_group(struct autoscaled_driver_instance *h)
{
	struct rest_reply r;
	const cJSON *ts, *status, *stable, *acts, *a, *as;
	const char *bad = NULL;
	char actions[sizeof(h->actions)] = "";
	size_t off = 0;
	int target = 0, rc = request(h, "GET", h->igm_url, NULL, &r);

	if (rc < 0)
		return rc;
	if (r.status != 200 || !cJSON_IsObject(r.json)) {
		rc = r.status == 200 ? -EBADMSG : http_fail(h, "get", &r);
		if (rc == -EBADMSG)
			LOG(h, ERROR, WHO ": get of '%s' returned no JSON object", h->name);
		rest_reply_clear(&r);
		return rc;
	}
	ts = cloud_json_get(r.json, "targetSize", cJSON_Number | cJSON_String, &bad);
	status = cloud_json_get(r.json, "status", cJSON_Object, &bad);
	stable = cloud_json_get(status, "isStable", cJSON_True | cJSON_False, &bad);
	as = cloud_json_get(status, "autoscaler", cJSON_String, &bad);
	/* currentActions only explains an unstable group in messages, but one
	 * of another shape is as malformed as any field. */
	acts = cloud_json_get(r.json, "currentActions", cJSON_Object, &bad);
	if (!bad && (!ts || cloud_json_count(ts, CLOUD_MAX_MEMBERS, &target) < 0))
		bad = "targetSize";
	if (!bad && !stable)
		bad = "status.isStable";
	if (bad) {
		rest_reply_clear(&r);
		return malformed(h, "get", bad);
	}
	cJSON_ArrayForEach(a, acts) {
		if (a->string && cJSON_IsNumber(a) && a->valuedouble >= 1 && a->valuedouble <= CLOUD_MAX_MEMBERS &&
		    strcmp(a->string, "none") != 0 && off < sizeof(actions))
			off += (size_t)snprintf(actions + off, sizeof(actions) - off, "%s%.64s %d", off ? ", " : "",
						a->string, (int)a->valuedouble);
	}
	h->target_size = target;
	h->stable = cJSON_IsTrue(stable);
	snprintf(h->actions, sizeof(h->actions), "%s", actions);
	snprintf(h->autoscaler, sizeof(h->autoscaler), "%s", as ? as->valuestring : "");
	if (h->stable)
		h->unstable_since_ms = 0;
	else if (h->unstable_since_ms == 0)
		h->unstable_since_ms = rest_mono_ms();
	rest_reply_clear(&r);
	return 0;
}

/* Reads one managedInstances entry. Returns 0, or -EBADMSG with the field
 * in *bad. */
static int parse_member(struct cloud_member *m, const cJSON *mi, const char **bad)
{
	const cJSON *url_v, *st_v, *act_v;
	const char *url, *st, *act, *z, *name;
	size_t zlen;

	if (!cJSON_IsObject(mi)) {
		*bad = "managedInstances[]";
		return -EBADMSG;
	}
	url_v = cloud_json_get(mi, "instance", cJSON_String, bad);
	st_v = cloud_json_get(mi, "instanceStatus", cJSON_String, bad);
	act_v = cloud_json_get(mi, "currentAction", cJSON_String, bad);
	if (*bad)
		return -EBADMSG;
	/* The instance URL names the member and its zone; deleteInstances
	 * needs both. */
	url = url_v ? url_v->valuestring : "";
	z = strstr(url, "/zones/");
	name = strrchr(url, '/');
	zlen = z ? strcspn(z + 7, "/") : 0;
	if (!z || zlen == 0 || zlen >= sizeof(m->location) || !name || !name[1] || strlen(name + 1) >= sizeof(m->id) ||
	    strlen(z + 1) >= sizeof(m->ref)) {
		*bad = "instance";
		return -EBADMSG;
	}
	st = st_v ? st_v->valuestring : "";
	act = act_v ? act_v->valuestring : "";
	snprintf(m->id, sizeof(m->id), "%s", name + 1);
	snprintf(m->ref, sizeof(m->ref), "%s", z + 1);
	snprintf(m->location, sizeof(m->location), "%.*s", (int)zlen, z + 7);
	if (strcmp(act, "DELETING") == 0 || strcmp(act, "ABANDONING") == 0 || strcmp(st, "STOPPING") == 0 ||
	    strcmp(st, "STOPPED") == 0 || strcmp(st, "TERMINATED") == 0 || strcmp(st, "SUSPENDING") == 0 ||
	    strcmp(st, "SUSPENDED") == 0 || strcmp(st, "DEPROVISIONING") == 0)
		m->state = AUTOSCALED_INSTANCE_STOPPING;
	else if (strcmp(st, "RUNNING") == 0)
		m->state = AUTOSCALED_INSTANCE_RUNNING;
	else
		m->state = AUTOSCALED_INSTANCE_PROVISIONING;
	m->ready = m->state == AUTOSCALED_INSTANCE_RUNNING && (strcmp(act, "NONE") == 0 || strcmp(act, "VERIFYING") == 0);
	return 0;
}

static int list_members(struct autoscaled_driver_instance *h, struct cloud_members *out)
{
	char url[4608], token[1024] = "", etok[3072];
	int rc = 0;

	for (int page = 0; page < CLOUD_MAX_PAGES; page++) {
		struct rest_reply r;
		const cJSON *list, *mi, *next;
		const char *bad = NULL;

		if (rest_escape(token, etok, sizeof(etok)) < 0)
			return -EBADMSG;
		if (snprintf(url, sizeof(url), "%s/listManagedInstances?maxResults=%d%s%s", h->igm_url, h->page_size,
			     token[0] ? "&pageToken=" : "", etok) >= (int)sizeof(url))
			return -EBADMSG;
		rc = request(h, "POST", url, NULL, &r);
		if (rc < 0)
			return rc;
		if (r.status != 200) {
			rc = http_fail(h, "listManagedInstances", &r);
			rest_reply_clear(&r);
			return rc;
		}
		/* An empty group's page has no managedInstances at all. */
		list = cloud_json_get(r.json, "managedInstances", cJSON_Array, &bad);
		next = cloud_json_get(r.json, "nextPageToken", cJSON_String, &bad);
		if (!cJSON_IsObject(r.json))
			bad = "(the body)";
		else if (next && strlen(next->valuestring) >= sizeof(token))
			bad = "nextPageToken";
		cJSON_ArrayForEach(mi, list) {
			struct cloud_member *m;

			if (bad)
				break;
			m = cloud_members_add(out);
			if (!m) {
				LOG(h, ERROR, WHO ": '%s' has more than %d instances", h->name, CLOUD_MAX_MEMBERS);
				rest_reply_clear(&r);
				return -E2BIG;
			}
			parse_member(m, mi, &bad);
		}
		if (bad) {
			rest_reply_clear(&r);
			return malformed(h, "listManagedInstances", bad);
		}
		token[0] = '\0';
		if (next)
			snprintf(token, sizeof(token), "%s", next->valuestring);
		rest_reply_clear(&r);
		if (!token[0])
			return 0;
	}
	LOG(h, ERROR, WHO ": listManagedInstances of '%s' did not end within %d pages", h->name, CLOUD_MAX_PAGES);
	return -E2BIG;
}

/* Observes the group into h (members carried over from the last time). */
static int refresh(struct autoscaled_driver_instance *h)
{
	struct cloud_members cur = { 0 };
	int rc = fetch_group(h);

	if (rc == 0)
		rc = list_members(h, &cur);
	if (rc < 0) {
		cloud_members_clear(&cur);
		return rc;
	}
	cloud_members_keep(&h->members, &cur, rest_now_ms());
	return 0;
}

/* The driver feeds no source: `sample` is never used. */
static int gce_observe(struct autoscaled_driver_instance *h, autoscaled_instance_fn fn, autoscaled_sample_fn sample,
		       void *ctx, struct autoscaled_observation *ret)
{
	int rc = refresh(h);

	(void)sample;
	if (rc < 0)
		return rc;
	rc = cloud_members_report(&h->members, fn, ctx);
	if (rc)
		return rc;
	ret->target_size = h->target_size;
	ret->stable = h->stable;
	ret->partial = false;
	h->observed = h->target_size;
	return 0;
}

/* The status of an Operation reply, or NULL with *bad set when the reply
 * is not an Operation. */
static const char *op_status(const struct rest_reply *r, const char **bad)
{
	const cJSON *st = cloud_json_get(r->json, "status", cJSON_String, bad);

	if (!cJSON_IsObject(r->json))
		*bad = "(the body)";
	else if (!st && !*bad)
		*bad = "status";
	return *bad ? NULL : st->valuestring;
}

/* Follows an Operation to DONE. Returns 0, or a negative errno after
 * logging the operation's error. */
static int follow(struct autoscaled_driver_instance *h, const char *what, struct rest_reply *first)
{
	int64_t deadline = rest_mono_ms() + h->op_timeout_ms, saved = h->http.timeout_ms;
	char name[256], ename[768], url[2048], msg[512];
	struct rest_reply r = *first;
	const cJSON *name_v, *err;
	const char *bad = NULL, *status;
	int rc = 0;

	memset(first, 0, sizeof(*first));
	name_v = cloud_json_get(r.json, "name", cJSON_String, &bad);
	status = op_status(&r, &bad);
	if (!bad && (!name_v || !name_v->valuestring[0] || strlen(name_v->valuestring) >= sizeof(name) ||
		     rest_escape(name_v->valuestring, ename, sizeof(ename)) < 0))
		bad = "name";
	if (bad) {
		rest_reply_clear(&r);
		return malformed(h, what, bad);
	}
	snprintf(name, sizeof(name), "%s", name_v->valuestring);
	/* `wait` holds the reply up to about two minutes. */
	if (h->http.timeout_ms < 150000)
		h->http.timeout_ms = 150000;
	while (strcmp(status, "DONE") != 0) {
		if (rest_mono_ms() > deadline) {
			LOG(h, ERROR, WHO ": %s of '%s': operation '%s' not done after %lld s", what, h->name, name,
			    (long long)(h->op_timeout_ms / 1000));
			rest_count_error(&h->http);
			rc = -ETIMEDOUT;
			break;
		}
		rest_reply_clear(&r);
		snprintf(url, sizeof(url), "%s/%s/operations/%s/wait", h->base, h->scope_path, ename);
		rc = request(h, "POST", url, NULL, &r);
		if (rc < 0)
			break;
		if (r.status != 200) {
			rc = http_fail(h, "operations.wait", &r);
			break;
		}
		status = op_status(&r, &bad);
		if (bad) {
			rc = malformed(h, "operations.wait", bad);
			break;
		}
	}
	h->http.timeout_ms = saved;
	/* Any error member means the operation failed, whatever its shape:
	 * success is only ever read from a reply without one. */
	err = rc == 0 && cJSON_IsObject(r.json) ? cJSON_GetObjectItemCaseSensitive(r.json, "error") : NULL;
	if (err && !cJSON_IsNull(err)) {
		const cJSON *errs = cloud_json_get(err, "errors", cJSON_Array, NULL);
		const cJSON *e = cJSON_GetArrayItem(errs, 0);
		const char *code = cJSON_IsObject(e) ? json_str(e, "code") : "";

		snprintf(msg, sizeof(msg), "%s: %s", code[0] ? code : "no code",
			 cJSON_IsObject(e) && json_str(e, "message")[0] ? json_str(e, "message") : "no message");
		LOG(h, ERROR, WHO ": %s of '%s' failed: operation '%s': %s", what, h->name, name, msg);
		rc = strstr(code, "QUOTA") || strstr(code, "EXHAUSTED") ? -ENOSPC : -EIO;
		rest_count_error(&h->http);
	}
	rest_reply_clear(&r);
	return rc;
}

/* Refuses a new action while the group is not stable, up to the limit. */
static int may_act(struct autoscaled_driver_instance *h, const char *what)
{
	int64_t for_ms;

	/* Two controllers moving one number do not converge, they
	 * oscillate: the cloud's own autoscaler keeps the group. */
	if (h->autoscaler[0] && h->coexist) {
		/* The operator chose to share the group (the cloud's autoscaler
		 * keeping a floor): said once, not every cycle. */
		if (!h->coexist_warned)
			LOG(h, WARNING, WHO ": acting on '%s' although its own autoscaler '%s' also drives it "
			    "(coexist_with_cloud_autoscaler = true)", h->name, h->autoscaler);
		h->coexist_warned = true;
	} else if (h->autoscaler[0]) {
		LOG(h, ERROR, WHO ": not starting %s of '%s': it is driven by its own autoscaler '%s'; remove that "
		    "autoscaler, let it alone scale the group, or set coexist_with_cloud_autoscaler = true", what,
		    h->name, h->autoscaler);
		rest_count_error(&h->http);
		return -EBUSY;
	}
	if (h->stable)
		return 0;
	for_ms = rest_mono_ms() - h->unstable_since_ms;
	if (for_ms < h->unstable_limit_ms) {
		LOG(h, NOTICE, WHO ": not starting %s of '%s': group not stable (%s) for %lld s, limit %lld s", what,
		    h->name, h->actions[0] ? h->actions : "changes pending", (long long)(for_ms / 1000),
		    (long long)(h->unstable_limit_ms / 1000));
		return -EBUSY;
	}
	LOG(h, WARNING, WHO ": '%s' has not been stable for %lld s (%s), beyond unstable_limit: starting %s anyway",
	    h->name, (long long)(for_ms / 1000), h->actions[0] ? h->actions : "changes pending", what);
	return 0;
}

/* Reports the victims of finished deleteInstances calls. With
 * skipInstancesOnValidationError the operation succeeds even for victims
 * it skipped (no longer deletable, e.g. abandoned meanwhile): only those
 * the group now shows deleting, or no longer has, are reported as
 * stopping. When the group cannot be read again, all are, as the
 * operation succeeded. */
static int report_deleted(struct autoscaled_driver_instance *h, const struct cloud_member *v, size_t n,
			  autoscaled_instance_fn fn, void *ctx)
{
	int known = refresh(h);

	if (known < 0)
		LOG(h, WARNING, WHO ": '%s' could not be read after deleteInstances; taking all %zu victim(s) as "
		    "deleted", h->name, n);
	for (size_t i = 0; i < n; i++) {
		const struct cloud_member *now = known == 0 ? cloud_members_find(&h->members, v[i].id) : NULL;
		struct autoscaled_instance inst = { .id = v[i].id, .state = AUTOSCALED_INSTANCE_STOPPING,
						    .created_ms = v[i].created_ms, .location = v[i].location };
		int rc;

		if (now && now->state != AUTOSCALED_INSTANCE_STOPPING) {
			LOG(h, WARNING, WHO ": instance '%s' of '%s' was not deleted: deleteInstances skipped it", v[i].id,
			    h->name);
			continue;
		}
		if (fn && (rc = fn(ctx, &inst)) != 0)
			return rc;
	}
	return 0;
}

static int delete_members(struct autoscaled_driver_instance *h, const size_t *idx, size_t n, autoscaled_instance_fn fn,
			  void *ctx)
{
	/* The victims are copied: reading the group again replaces members. */
	struct cloud_member *v = malloc(n * sizeof(*v));
	size_t sent = 0;
	int rc = 0, rc2;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		v[i] = h->members.v[idx[i]];
	for (size_t off = 0; off < n && rc == 0; off += DELETE_BATCH) {
		size_t k = n - off < DELETE_BATCH ? n - off : DELETE_BATCH;
		cJSON *body = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(body, "instances");
		char uuid[37], url[1536], *text;
		struct rest_reply r;

		for (size_t i = 0; i < k; i++)
			cJSON_AddItemToArray(arr, cJSON_CreateString(v[off + i].ref));
		cJSON_AddBoolToObject(body, "skipInstancesOnValidationError", true);
		text = cJSON_PrintUnformatted(body);
		cJSON_Delete(body);
		if (!text) {
			rc = -ENOMEM;
			break;
		}
		if (rest_uuid4(uuid) < 0) {
			cJSON_free(text);
			rc = -EIO;
			break;
		}
		snprintf(url, sizeof(url), "%s/deleteInstances?requestId=%s", h->igm_url, uuid);
		LOG(h, INFO, WHO ": deleting %zu instance(s) of '%s' (first '%s', requestId %s)", k, h->name, v[off].id,
		    uuid);
		rc = request(h, "POST", url, text, &r);
		cJSON_free(text);
		if (rc < 0)
			break;
		if (r.status != 200) {
			rc = http_fail(h, "deleteInstances", &r);
			rest_reply_clear(&r);
			break;
		}
		rc = follow(h, "deleteInstances", &r);
		if (rc == 0)
			sent = off + k;
	}
	rc2 = sent > 0 ? report_deleted(h, v, sent, fn, ctx) : 0;
	free(v);
	return rc < 0 ? rc : rc2;
}

/* Deletes victims from the members of the last refresh. */
static int remove_members(struct autoscaled_driver_instance *h, int count, const char *const *ids, size_t n_ids,
			  autoscaled_instance_fn fn, void *ctx)
{
	size_t *idx, n;
	int rc = cloud_check_unchanged(h->host, WHO, h->name, h->observed, h->target_size, "the scale-in");

	if (rc < 0)
		return rc;
	rc = may_act(h, "deleteInstances");
	if (rc < 0)
		return rc;
	rc = cloud_choose_victims(h->host, WHO, "instance", h->name, &h->members, count, ids, n_ids, h->victims, &idx,
				  &n);
	if (rc < 0)
		return rc;
	rc = n > 0 ? delete_members(h, idx, n, fn, ctx) : 0;
	free(idx);
	/* This driver's own change: deleteInstances takes the target size
	 * down with the instances. */
	if (rc == 0)
		h->observed = h->target_size - (int)n;
	return rc;
}

static int gce_remove(struct autoscaled_driver_instance *h, int count, const char *const *ids, size_t n_ids,
		      autoscaled_instance_fn fn, void *ctx)
{
	int rc = refresh(h);

	return rc < 0 ? rc : remove_members(h, count, ids, n_ids, fn, ctx);
}

static int gce_set_capacity(struct autoscaled_driver_instance *h, int count, autoscaled_instance_fn fn, void *ctx)
{
	struct cloud_members before = { 0 };
	struct rest_reply r;
	char uuid[37], url[1536];
	int rc;

	if (count < 0)
		return -EINVAL;
	rc = refresh(h);
	if (rc < 0)
		return rc;
	/* resize takes no precondition (no fingerprint): the read just made
	 * is the last check. */
	rc = cloud_check_unchanged(h->host, WHO, h->name, h->observed, h->target_size, "the resize");
	if (rc < 0)
		return rc;
	if (count == h->target_size)
		return 0;
	if (count < h->target_size) {
		LOG(h, ERROR, WHO ": set_capacity to %d refused: '%s' has %d, and set_capacity only grows it "
		    "(remove_instances shrinks it)", count, h->name, h->target_size);
		return -ERANGE;
	}
	rc = may_act(h, "resize");
	if (rc < 0)
		return rc;
	if (rest_uuid4(uuid) < 0)
		return -EIO;
	snprintf(url, sizeof(url), "%s/resize?size=%d&requestId=%s", h->igm_url, count, uuid);
	LOG(h, INFO, WHO ": resizing '%s' from %d to %d (requestId %s)", h->name, h->target_size, count, uuid);
	rc = request(h, "POST", url, NULL, &r);
	if (rc < 0)
		return rc;
	if (r.status != 200) {
		rc = http_fail(h, "resize", &r);
		rest_reply_clear(&r);
		return rc;
	}
	rc = follow(h, "resize", &r);
	if (rc < 0)
		return rc;
	h->observed = count; /* this driver's own change */
	/* Report the members the resize added. */
	before.v = malloc((h->members.n + 1) * sizeof(*before.v));
	if (!before.v)
		return -ENOMEM;
	/* An empty group has no member array at all (memcpy from NULL is
	 * undefined even for no bytes). */
	if (h->members.n > 0)
		memcpy(before.v, h->members.v, h->members.n * sizeof(*before.v));
	before.n = before.cap = h->members.n;
	if (refresh(h) == 0) {
		for (size_t i = 0; i < h->members.n && rc == 0; i++) {
			if (cloud_members_find(&before, h->members.v[i].id))
				continue;
			if (fn) {
				struct cloud_members one = { &h->members.v[i], 1, 1 };

				rc = cloud_members_report(&one, fn, ctx);
			}
		}
	}
	cloud_members_clear(&before);
	return rc;
}

static int parse_options(const struct autoscaled_host *host, const struct autoscaled_option *o, size_t n,
			 struct autoscaled_driver_instance *h)
{
	const char *project = cloud_opt(o, n, "project"), *zone = cloud_opt(o, n, "zone");
	const char *region = cloud_opt(o, n, "region"), *name = cloud_opt(o, n, "name");
	const char *base = cloud_opt(o, n, "compute_base"), *ps = cloud_opt(o, n, "page_size");
	static const char *const required[] = { "project", "name", NULL };
	/* Every check runs, so that one pass reports every problem. */
	int bad = cloud_opt_check_keys(host, WHO, o, n, known_options) < 0;

	bad |= cloud_opt_require(host, WHO, o, n, required) < 0;

	if (!!zone == !!region) {
		cloud_opt_error(host, WHO, NULL, "give exactly one of zone or region: 'zone' for a zonal group, 'region' "
				"for a regional one");
		bad = 1;
	}
	h->host = host;
	h->unstable_limit_ms = 30 * 60000;
	h->op_timeout_ms = 10 * 60000;
	h->page_size = 500;
	if (ps) {
		char *end;
		long v = strtol(ps, &end, 10);

		if (*end || v < 1 || v > 500) {
			cloud_opt_error(host, WHO, NULL, "option page_size = '%s' must be 1 to 500", ps);
			bad = 1;
		} else {
			h->page_size = (int)v;
		}
	}
	bad |= cloud_opt_victims(host, WHO, o, n, &h->victims) < 0;
	bad |= cloud_opt_duration(host, WHO, o, n, "unstable_limit", &h->unstable_limit_ms) < 0;
	bad |= cloud_opt_duration(host, WHO, o, n, "operation_timeout", &h->op_timeout_ms) < 0;
	bad |= cloud_opt_bool(host, WHO, o, n, "coexist_with_cloud_autoscaler", &h->coexist) < 0;
	if (bad)
		return -EINVAL;
	if (cloud_base_url(base ? base : "https://compute.googleapis.com/compute/v1", "https", h->base,
			   sizeof(h->base)) < 0 ||
	    snprintf(h->name, sizeof(h->name), "%s", name) >= (int)sizeof(h->name) ||
	    snprintf(h->scope_path, sizeof(h->scope_path), "projects/%s/%s/%s", project, zone ? "zones" : "regions",
		     zone ? zone : region) >= (int)sizeof(h->scope_path) ||
	    snprintf(h->igm_url, sizeof(h->igm_url), "%s/%s/%s/%s", h->base, h->scope_path,
		     "instanceGroupManagers", name) >= (int)sizeof(h->igm_url)) {
		host->log(host, AUTOSCALED_LOG_ERROR, WHO ": project, zone, region or name too long");
		return -EINVAL;
	}
	return 0;
}

static int init_auth(const struct autoscaled_host *host, const struct autoscaled_option *o, size_t n, struct gauth *g)
{
	struct cloud_sink sink;
	const char *cred = cloud_opt(o, n, "credentials"), *key = cloud_opt(o, n, "key_file");
	const char *scopes = cloud_opt(o, n, "scopes");

	cloud_sink_init_host(&sink, host);
	if (!scopes)
		scopes = "https://www.googleapis.com/auth/cloud-platform";
	if (!cred)
		cred = key ? "key_file" : "metadata";
	if (strcmp(cred, "metadata") == 0)
		return gauth_init_metadata(g, &sink, WHO, cloud_opt(o, n, "metadata_host"), scopes);
	if (strcmp(cred, "key_file") == 0 && key)
		return gauth_init_key(g, &sink, WHO, key, scopes);
	host->log(host, AUTOSCALED_LOG_ERROR, WHO ": credentials = '%s' must be metadata, or key_file with key_file set",
		  cred);
	return -EINVAL;
}

static void gce_close(struct autoscaled_driver_instance *h)
{
	if (!h)
		return;
	rest_client_fini(&h->http);
	gauth_fini(&h->auth);
	cloud_members_clear(&h->members);
	free(h);
}

static int gce_open(const struct autoscaled_host *host, const struct autoscaled_option *o, size_t n,
		    struct autoscaled_driver_instance **ret)
{
	struct autoscaled_driver_instance *h = calloc(1, sizeof(*h));
	int rc;

	if (!h)
		return -ENOMEM;
	h->observed = -1;
	rc = parse_options(host, o, n, h);
	cloud_sink_init_host(&h->sink, host);
	if (rc == 0)
		rc = rest_client_init(&h->http, &h->sink, WHO, REST_POLICY_GCE);
	if (rc == 0)
		rc = cloud_opt_retry(host, &h->http, o, n);
	if (rc == 0)
		rc = init_auth(host, o, n, &h->auth);
	if (rc < 0) {
		gce_close(h);
		return rc;
	}
	*ret = h;
	return 0;
}

/* Validates the options and the credentials' configuration (the key file
 * is read and its mode checked) without any request. */
static int gce_check(const struct autoscaled_host *host, const struct autoscaled_option *o, size_t n)
{
	struct autoscaled_driver_instance h = { 0 };
	struct rest_client c = { .who = WHO };
	struct gauth g;
	int rc = parse_options(host, o, n, &h);

	if (rc == 0)
		rc = cloud_opt_retry(host, &c, o, n);
	if (rc == 0 && (rc = init_auth(host, o, n, &g)) == 0)
		gauth_fini(&g);
	return rc;
}

static const struct autoscaled_driver driver = {
	.abi_version = AUTOSCALED_DRIVER_ABI_VERSION,
	.struct_size = sizeof(struct autoscaled_driver),
	.name = "gce-mig",
	.description = "GCE managed instance groups, zonal or regional (Compute Engine v1 API)",
	.config_help = "project = string  the group's project (required)\n"
		       "zone = string  the zone of a zonal group\n"
		       "region = string  the region of a regional group\n"
		       "name = string  the instance group manager (required)\n"
		       "credentials = metadata|key_file  how to get tokens (metadata)\n"
		       "key_file = path  service-account key JSON, mode 0600\n"
		       "metadata_host = host[:port]  metadata server ($GCE_METADATA_HOST or metadata.google.internal)\n"
		       "compute_base = url  Compute API base (https://compute.googleapis.com/compute/v1)\n"
		       "scopes = list  comma-separated OAuth scopes (https://www.googleapis.com/auth/cloud-platform)\n"
		       "victim_policy = newest|oldest  which running instances go first on scale-in (newest)\n"
		       "unstable_limit = duration  act on an unstable group after this long (30m)\n"
		       "page_size = int  listManagedInstances maxResults, 1-500 (500)\n"
		       "operation_timeout = duration  longest wait for an operation (10m)\n"
		       "retry_attempts = int  tries per request (6)\n"
		       "retry_base = duration  first backoff (1s)\n"
		       "retry_max = duration  longest backoff or Retry-After honoured (32s)\n"
		       "http_timeout = duration  per request (60s)\n",
	.open = gce_open,
	.close = gce_close,
	.observe = gce_observe,
	.set_capacity = gce_set_capacity,
	.remove_instances = gce_remove,
	.check = gce_check,
};

AUTOSCALED_DRIVER_EXPORT const struct autoscaled_driver *autoscaled_driver_info(void)
{
	return &driver;
}
