/* azure-vmss: an Azure virtual machine scale set (Uniform or Flexible).
 *
 * Observe GETs the scale set (sku.capacity, provisioningState compared
 * case-insensitively) and lists its VMs with their instance views,
 * following nextLink: a Uniform set's under the scale set, a Flexible
 * set's from the resource group's VM list filtered on the scale set (the
 * route Azure allows for Flexible), named by VM name. Scale-out PATCHes sku.capacity with If-Match on the
 * etag (a 412 re-reads and tries again); scale-in POSTs /delete with the
 * victims' instanceIds. Long-running operations are followed through
 * Azure-AsyncOperation or Location, honouring Retry-After; Failed and
 * Canceled surface with their error. A 409 (another operation in
 * progress) is waited out by the REST client's retry policy. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cloud/auth.h"
#include "cloud/cloud.h"

#define WHO "azure-vmss"
#define ETAG_TRIES 3

struct autoscaled_driver_instance {
	const struct autoscaled_host *host;
	struct cloud_sink sink; /* the host, as the cloud code reports */
	struct rest_client http;
	struct azauth auth;
	char name[128];
	char api_version[32];
	char vmss_url[1280]; /* ARM base + resource id, no query */
	enum cloud_victims victims;
	int64_t op_timeout_ms;
	int64_t poll_ms;
	/* The last read of the scale set. */
	struct cloud_members members;
	int capacity;
	int observed; /* the capacity observe() reported, or this driver set since; -1 none */
	bool flexible;
	bool stable;
	char etag[256];
	char state[64];
	bool coexist;	/* coexist_with_cloud_autoscaler: act anyway, the setting keeps a floor */
	bool coexist_warned;
};

static const char *const known_options[] = {
	"subscription", "resource_group", "name", "credentials", "tenant", "client_id", "secret_file", "login_host",
	"arm_base", "scope", "imds_base", "resource", "api_version", "victim_policy", "operation_timeout",
	"poll_interval", "retry_attempts", "retry_base", "retry_max", "http_timeout", "coexist_with_cloud_autoscaler", NULL,
};

#define LOG(h, lvl, ...) (h)->host->log((h)->host, AUTOSCALED_LOG_##lvl, __VA_ARGS__)

static int request(struct autoscaled_driver_instance *h, const char *method, const char *url, const char *body,
		   const char *const *headers, struct rest_reply *r)
{
	struct rest_request req = { .method = method, .url = url, .body = body, .headers = headers };
	int rc = azauth_token(&h->auth, &h->http, &req.bearer);

	if (rc < 0)
		return rc;
	return rest_call(&h->http, &req, r);
}

static int http_fail(struct autoscaled_driver_instance *h, const char *what, const struct rest_reply *r)
{
	char msg[256];

	LOG(h, ERROR, WHO ": %s of '%s' failed: HTTP %ld: %s", what, h->name, r->status,
	    rest_error_message(r, msg, sizeof(msg)));
	return rest_status_errno(r->status);
}

static const char *json_str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : "";
}

/* True when url is on the ARM endpoint of the scale set: nextLink,
 * Location and Azure-AsyncOperation come from replies and are followed with
 * the bearer token, which must go nowhere else. */
static bool same_endpoint(const struct autoscaled_driver_instance *h, const char *url)
{
	const char *sub = strstr(h->vmss_url, "/subscriptions/");
	size_t n = sub ? (size_t)(sub - h->vmss_url) : strlen(h->vmss_url);

	return strncmp(url, h->vmss_url, n) == 0 && url[n] == '/';
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

static int fetch_vmss(struct autoscaled_driver_instance *h)
{
	struct rest_reply r;
	char url[1536];
	const cJSON *sku, *cap, *p, *ps, *mode, *etag;
	const char *bad = NULL;
	int capacity = 0, rc;

	snprintf(url, sizeof(url), "%s?api-version=%s", h->vmss_url, h->api_version);
	rc = request(h, "GET", url, NULL, NULL, &r);
	if (rc < 0)
		return rc;
	if (r.status != 200 || !cJSON_IsObject(r.json)) {
		rc = r.status == 200 ? -EBADMSG : http_fail(h, "get", &r);
		if (r.status == 200)
			LOG(h, ERROR, WHO ": get of '%s' returned no JSON object", h->name);
		rest_reply_clear(&r);
		return rc;
	}
	sku = cloud_json_get(r.json, "sku", cJSON_Object, &bad);
	cap = cloud_json_get(sku, "capacity", cJSON_Number, &bad);
	p = cloud_json_get(r.json, "properties", cJSON_Object, &bad);
	ps = cloud_json_get(p, "provisioningState", cJSON_String, &bad);
	mode = cloud_json_get(p, "orchestrationMode", cJSON_String, &bad);
	etag = cloud_json_get(r.json, "etag", cJSON_String, &bad);
	if (!bad && (!cap || cloud_json_count(cap, CLOUD_MAX_MEMBERS, &capacity) < 0))
		bad = "sku.capacity";
	if (!bad && !ps)
		bad = "properties.provisioningState";
	if (bad) {
		rest_reply_clear(&r);
		return malformed(h, "get", bad);
	}
	h->capacity = capacity;
	snprintf(h->etag, sizeof(h->etag), "%s", r.etag[0] ? r.etag : etag ? etag->valuestring : "");
	snprintf(h->state, sizeof(h->state), "%s", ps->valuestring);
	h->flexible = mode && strcasecmp(mode->valuestring, "Flexible") == 0;
	rest_reply_clear(&r);
	return 0;
}

/* Reads one VM of the list. Returns 0, or -EBADMSG with the field in *bad. */
static int parse_vm(struct cloud_member *m, const cJSON *vm, bool flexible, const char **bad)
{
	const cJSON *p, *iid, *name, *id, *ps_v, *iv, *st, *s, *created, *zones, *loc, *z;
	const char *ps, *vid;
	bool running = false, stopping = false, all_ok = true;

	if (!cJSON_IsObject(vm)) {
		*bad = "value[]";
		return -EBADMSG;
	}
	iid = cloud_json_get(vm, "instanceId", cJSON_String, bad);
	name = cloud_json_get(vm, "name", cJSON_String, bad);
	id = cloud_json_get(vm, "id", cJSON_String, bad);
	p = cloud_json_get(vm, "properties", cJSON_Object, bad);
	ps_v = cloud_json_get(p, "provisioningState", cJSON_String, bad);
	iv = cloud_json_get(p, "instanceView", cJSON_Object, bad);
	st = cloud_json_get(iv, "statuses", cJSON_Array, bad);
	created = cloud_json_get(p, "timeCreated", cJSON_String, bad);
	zones = cloud_json_get(vm, "zones", cJSON_Array, bad);
	loc = cloud_json_get(vm, "location", cJSON_String, bad);
	z = cJSON_GetArrayItem(zones, 0);
	if (z && !cJSON_IsString(z) && !*bad)
		*bad = "zones[]";
	if (*bad)
		return -EBADMSG;
	/* The identifier /delete takes: a Uniform VM's instanceId, a Flexible
	 * VM's name (its list carries no instanceId). */
	vid = !flexible && iid && iid->valuestring[0] ? iid->valuestring : name ? name->valuestring : "";
	if (!vid[0] || strlen(vid) >= sizeof(m->id)) {
		*bad = "instanceId";
		return -EBADMSG;
	}
	if (!p || !ps_v) {
		*bad = "properties.provisioningState";
		return -EBADMSG;
	}
	ps = ps_v->valuestring;
	snprintf(m->id, sizeof(m->id), "%s", vid);
	snprintf(m->ref, sizeof(m->ref), "%s", id ? id->valuestring : "");
	cJSON_ArrayForEach(s, st) {
		const cJSON *code_v = cloud_json_get(s, "code", cJSON_String, bad);
		const char *code;

		if (!cJSON_IsObject(s) || !code_v) {
			if (!*bad)
				*bad = "statuses[].code";
			return -EBADMSG;
		}
		code = code_v->valuestring;
		if (strncasecmp(code, "ProvisioningState/", 18) == 0 && strcasecmp(code + 18, "succeeded") != 0)
			all_ok = false;
		if (strcasecmp(code, "PowerState/running") == 0)
			running = true;
		else if (strncasecmp(code, "PowerState/stop", 15) == 0 || strncasecmp(code, "PowerState/dealloc", 18) == 0)
			stopping = true;
	}
	if (strcasecmp(ps, "Deleting") == 0 || stopping)
		m->state = AUTOSCALED_INSTANCE_STOPPING;
	else if (running && strcasecmp(ps, "Succeeded") == 0)
		m->state = AUTOSCALED_INSTANCE_RUNNING;
	else
		m->state = AUTOSCALED_INSTANCE_PROVISIONING;
	/* Ready as the peers judge it: every status succeeded, and running. */
	m->ready = m->state == AUTOSCALED_INSTANCE_RUNNING && all_ok;
	m->created_ms = created ? cloud_parse_time(created->valuestring) : 0;
	snprintf(m->location, sizeof(m->location), "%s", z ? z->valuestring : loc ? loc->valuestring : "");
	return 0;
}

/* The first page of the VM list. A Uniform set lists its VMs with their
 * instance views under the scale set. Azure refuses that route with the
 * expand on a Flexible set (400 OperationNotAllowed): a Flexible set's VMs
 * are ordinary VMs of the resource group, listed with a filter on their
 * scale set, and the instance view may be expanded only together with that
 * filter. */
static int list_url(const struct autoscaled_driver_instance *h, char *url, size_t size)
{
	const char *id = strstr(h->vmss_url, "/subscriptions/");
	const char *prov = strstr(h->vmss_url, "/providers/Microsoft.Compute/virtualMachineScaleSets/");
	char filter[1536], esc[4096];
	int rc;

	if (!h->flexible)
		return snprintf(url, size, "%s/virtualMachines?api-version=%s&$expand=instanceView", h->vmss_url,
				h->api_version) >= (int)size ? -E2BIG : 0;
	if (!id || !prov)
		return -EINVAL;
	snprintf(filter, sizeof(filter), "'virtualMachineScaleSet/id' eq '%s'", id);
	rc = rest_escape(filter, esc, sizeof(esc));
	if (rc < 0)
		return rc;
	return snprintf(url, size, "%.*s/providers/Microsoft.Compute/virtualMachines?api-version=%s&$filter=%s"
			"&$expand=instanceView", (int)(prov - h->vmss_url), h->vmss_url, h->api_version,
			esc) >= (int)size ? -E2BIG : 0;
}

/* A Flexible set's VM names the scale set it belongs to. A VM of another
 * set (a server that ignored the filter) must never become a victim. */
static bool other_set(const struct autoscaled_driver_instance *h, const cJSON *vm)
{
	const char *id = strstr(h->vmss_url, "/subscriptions/");
	const cJSON *set = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(vm, "properties"),
						 "virtualMachineScaleSet"), "id");

	/* ARM resource ids compare case-insensitively. */
	return !cJSON_IsString(set) || !id || strcasecmp(set->valuestring, id) != 0;
}

static int list_vms(struct autoscaled_driver_instance *h, struct cloud_members *out)
{
	char url[4096];
	int rc = list_url(h, url, sizeof(url));

	if (rc < 0) {
		LOG(h, ERROR, WHO ": the VM list URL of '%s' is too long", h->name);
		return rc;
	}
	for (int page = 0; page < CLOUD_MAX_PAGES; page++) {
		struct rest_reply r;
		const cJSON *vm, *list, *next;
		const char *bad = NULL;

		rc = request(h, "GET", url, NULL, NULL, &r);
		if (rc < 0)
			return rc;
		if (r.status != 200) {
			rc = http_fail(h, "list of virtual machines", &r);
			rest_reply_clear(&r);
			return rc;
		}
		list = cloud_json_get(r.json, "value", cJSON_Array, &bad);
		next = cloud_json_get(r.json, "nextLink", cJSON_String, &bad);
		if (!cJSON_IsObject(r.json))
			bad = "(the body)";
		else if (!list && !bad)
			bad = "value";
		cJSON_ArrayForEach(vm, list) {
			struct cloud_member *m;

			if (bad)
				break;
			if (h->flexible && other_set(h, vm)) {
				bad = "properties.virtualMachineScaleSet.id";
				break;
			}
			m = cloud_members_add(out);
			if (!m) {
				LOG(h, ERROR, WHO ": '%s' has more than %d virtual machines", h->name, CLOUD_MAX_MEMBERS);
				rest_reply_clear(&r);
				return -E2BIG;
			}
			parse_vm(m, vm, h->flexible, &bad);
		}
		if (bad) {
			rest_reply_clear(&r);
			return malformed(h, "list of virtual machines", bad);
		}
		if (!next || !next->valuestring[0]) {
			rest_reply_clear(&r);
			return 0;
		}
		if (!same_endpoint(h, next->valuestring)) {
			rest_reply_clear(&r);
			return malformed(h, "list of virtual machines", "nextLink");
		}
		/* nextLink is followed exactly as given. */
		rc = snprintf(url, sizeof(url), "%s", next->valuestring) >= (int)sizeof(url) ? -E2BIG : 0;
		rest_reply_clear(&r);
		if (rc < 0)
			return rc;
	}
	LOG(h, ERROR, WHO ": the VM list of '%s' did not end within %d pages", h->name, CLOUD_MAX_PAGES);
	return -E2BIG;
}

static int refresh(struct autoscaled_driver_instance *h)
{
	struct cloud_members cur = { 0 };
	int rc = fetch_vmss(h);
	size_t live = 0;
	bool settled = true;

	if (rc == 0)
		rc = list_vms(h, &cur);
	if (rc < 0) {
		cloud_members_clear(&cur);
		return rc;
	}
	cloud_members_keep(&h->members, &cur, rest_now_ms());
	for (size_t i = 0; i < h->members.n; i++) {
		live += h->members.v[i].state != AUTOSCALED_INSTANCE_STOPPING;
		settled &= h->members.v[i].state == AUTOSCALED_INSTANCE_RUNNING;
	}
	h->stable = strcasecmp(h->state, "Succeeded") == 0 && settled && (int)live == h->capacity;
	LOG(h, DEBUG, WHO ": '%s' (%s): capacity %d, provisioningState '%s', %zu VMs", h->name,
	    h->flexible ? "Flexible" : "Uniform", h->capacity, h->state, h->members.n);
	return 0;
}

/* The driver feeds no source: `sample` is never used. */
static int az_observe(struct autoscaled_driver_instance *h, autoscaled_instance_fn fn, autoscaled_sample_fn sample,
		      void *ctx, struct autoscaled_observation *ret)
{
	int rc = refresh(h);

	(void)sample;
	if (rc < 0)
		return rc;
	rc = cloud_members_report(&h->members, fn, ctx);
	if (rc)
		return rc;
	ret->target_size = h->capacity;
	ret->stable = h->stable;
	ret->partial = false;
	h->observed = h->capacity;
	return 0;
}

static int64_t poll_wait(const struct autoscaled_driver_instance *h, const struct rest_reply *r)
{
	int64_t ms = r->retry_after_ms >= 0 ? r->retry_after_ms : h->poll_ms;

	if (ms > h->http.backoff_max_ms)
		ms = h->http.backoff_max_ms;
	return ms < 50 ? 50 : ms;
}

static int terminal_status(struct autoscaled_driver_instance *h, const char *what, const char *status,
			   const cJSON *body)
{
	const cJSON *err = cJSON_GetObjectItemCaseSensitive(body, "error");

	if (strcasecmp(status, "Succeeded") == 0)
		return 0;
	if (strcasecmp(status, "Failed") != 0 && strcasecmp(status, "Canceled") != 0)
		return 1;
	LOG(h, ERROR, WHO ": %s of '%s' %s: %s: %s", what, h->name, strcasecmp(status, "Failed") == 0 ? "failed" : "was canceled",
	    json_str(err, "code")[0] ? json_str(err, "code") : "no code",
	    json_str(err, "message")[0] ? json_str(err, "message") : "no message");
	rest_count_error(&h->http);
	return strcasecmp(status, "Failed") == 0 ? -EIO : -ECANCELED;
}

/* The status an operation poll reports: Azure-AsyncOperation bodies and
 * Location results carry `status`, the resource itself
 * properties.provisioningState. Returns "" when the body has none (a
 * Location result may have no body), or NULL with *bad set when the body
 * is malformed. */
static const char *poll_status(const cJSON *body, bool resource, bool required, const char **bad)
{
	const cJSON *st;

	if (!body && !required)
		return "";
	if (!cJSON_IsObject(body)) {
		*bad = "(the body)";
		return NULL;
	}
	st = resource ? cloud_json_get(cloud_json_get(body, "properties", cJSON_Object, bad), "provisioningState",
				       cJSON_String, bad)
		      : cloud_json_get(body, "status", cJSON_String, bad);
	if (*bad)
		return NULL;
	if (!st && required) {
		*bad = resource ? "properties.provisioningState" : "status";
		return NULL;
	}
	return st ? st->valuestring : "";
}

/* Follows a long-running operation from its first reply. */
static int follow(struct autoscaled_driver_instance *h, const char *what, const struct rest_reply *first)
{
	int64_t deadline = rest_mono_ms() + h->op_timeout_ms;
	char url[2048], get_url[1536];
	bool async = first->async_operation[0] != '\0', loc = !async && first->location[0] != '\0';
	const char *bad = NULL, *status;
	struct rest_reply r;
	int64_t wait = poll_wait(h, first);
	int rc;

	if (!async && !loc) {
		/* 200/201 with a provisioningState: poll the resource itself. */
		status = poll_status(first->json, true, first->status != 204, &bad);
		if (!status)
			return malformed(h, what, bad);
		rc = terminal_status(h, what, status, first->json);
		if (rc <= 0 || first->status == 204)
			return rc == 1 ? 0 : rc;
	}
	if ((async || loc) && !same_endpoint(h, async ? first->async_operation : first->location))
		return malformed(h, what, async ? "Azure-AsyncOperation" : "Location");
	snprintf(url, sizeof(url), "%s", async ? first->async_operation : first->location);
	snprintf(get_url, sizeof(get_url), "%s?api-version=%s", h->vmss_url, h->api_version);
	for (;;) {
		if (rest_mono_ms() + wait > deadline) {
			LOG(h, ERROR, WHO ": %s of '%s' not finished after %lld s", what, h->name,
			    (long long)(h->op_timeout_ms / 1000));
			rest_count_error(&h->http);
			return -ETIMEDOUT;
		}
		rest_sleep_ms(wait);
		rc = request(h, "GET", async || loc ? url : get_url, NULL, NULL, &r);
		if (rc < 0)
			return rc;
		if (loc) {
			if (r.status == 202) {
				if (r.location[0] && !same_endpoint(h, r.location)) {
					rest_reply_clear(&r);
					return malformed(h, what, "Location");
				}
				if (r.location[0])
					snprintf(url, sizeof(url), "%s", r.location);
			} else if (r.status >= 200 && r.status < 300) {
				status = poll_status(r.json, false, false, &bad);
				rc = !status ? malformed(h, what, bad) : status[0] ? terminal_status(h, what, status, r.json) : 0;
				rest_reply_clear(&r);
				return rc == 1 ? 0 : rc;
			} else {
				rc = http_fail(h, what, &r);
				rest_reply_clear(&r);
				return rc;
			}
		} else if (r.status != 200) {
			rc = http_fail(h, what, &r);
			rest_reply_clear(&r);
			return rc;
		} else {
			status = poll_status(r.json, !async, true, &bad);
			rc = !status ? malformed(h, what, bad) : terminal_status(h, what, status, r.json);
			if (rc <= 0) {
				rest_reply_clear(&r);
				return rc;
			}
		}
		wait = poll_wait(h, &r);
		rest_reply_clear(&r);
	}
}

/* Refuses an action while an enabled Azure autoscale setting targets the
 * scale set: two controllers moving one capacity do not converge, they
 * oscillate. The settings are listed for the subscription (they may live
 * in any resource group); an identity that may not read them is warned
 * about and not held up. */
static int check_autoscale(struct autoscaled_driver_instance *h, const char *what)
{
	const char *id = strstr(h->vmss_url, "/subscriptions/");
	const char *rg = strstr(h->vmss_url, "/resourceGroups/");
	char url[4096];
	int rc;

	if (!id || !rg)
		return -EINVAL;
	snprintf(url, sizeof(url), "%.*s/providers/Microsoft.Insights/autoscalesettings?api-version=2022-10-01",
		 (int)(rg - h->vmss_url), h->vmss_url);
	for (int page = 0; page < CLOUD_MAX_PAGES; page++) {
		struct rest_reply r;
		const cJSON *list, *next, *s;
		const char *bad = NULL;

		rc = request(h, "GET", url, NULL, NULL, &r);
		if (rc < 0)
			return rc;
		if (r.status == 401 || r.status == 403) {
			LOG(h, WARNING, WHO ": cannot list the autoscale settings of the subscription (HTTP %ld): '%s' not "
			    "checked for a competing Azure autoscale setting", r.status, h->name);
			rest_reply_clear(&r);
			return 0;
		}
		if (r.status != 200) {
			rc = http_fail(h, "list of autoscale settings", &r);
			rest_reply_clear(&r);
			return rc;
		}
		list = cloud_json_get(r.json, "value", cJSON_Array, &bad);
		next = cloud_json_get(r.json, "nextLink", cJSON_String, &bad);
		if (!cJSON_IsObject(r.json) || (!list && !bad))
			bad = "value";
		cJSON_ArrayForEach(s, list) {
			const cJSON *p = cloud_json_get(s, "properties", cJSON_Object, &bad);
			const cJSON *target = cloud_json_get(p, "targetResourceUri", cJSON_String, &bad);
			const cJSON *enabled = cloud_json_get(p, "enabled", cJSON_True | cJSON_False, &bad);
			const cJSON *name = cloud_json_get(s, "name", cJSON_String, &bad);

			if (bad)
				break;
			/* ARM resource ids compare case-insensitively; a setting
			 * without `enabled` is enabled (the API's default). */
			if (target && strcasecmp(target->valuestring, id) == 0 && !cJSON_IsFalse(enabled) && h->coexist) {
				/* The operator chose to share the set (the setting
				 * keeping a floor): said once, not every cycle. */
				if (!h->coexist_warned)
					LOG(h, WARNING, WHO ": acting on '%s' although the Azure autoscale setting '%s' is "
					    "enabled on it (coexist_with_cloud_autoscaler = true)", h->name,
					    name ? name->valuestring : "(no name)");
				h->coexist_warned = true;
				rest_reply_clear(&r);
				return 0;
			}
			if (target && strcasecmp(target->valuestring, id) == 0 && !cJSON_IsFalse(enabled)) {
				LOG(h, ERROR, WHO ": not starting %s of '%s': the Azure autoscale setting '%s' is enabled "
				    "on it; disable that setting, let it alone scale the set, or set "
				    "coexist_with_cloud_autoscaler = true", what, h->name,
				    name ? name->valuestring : "(no name)");
				rest_count_error(&h->http);
				rest_reply_clear(&r);
				return -EBUSY;
			}
		}
		if (bad) {
			rest_reply_clear(&r);
			return malformed(h, "list of autoscale settings", bad);
		}
		if (!next || !next->valuestring[0]) {
			rest_reply_clear(&r);
			return 0;
		}
		if (!same_endpoint(h, next->valuestring) ||
		    snprintf(url, sizeof(url), "%s", next->valuestring) >= (int)sizeof(url)) {
			rest_reply_clear(&r);
			return malformed(h, "list of autoscale settings", "nextLink");
		}
		rest_reply_clear(&r);
	}
	return -E2BIG;
}

static int delete_members(struct autoscaled_driver_instance *h, const size_t *idx, size_t n,
			  autoscaled_instance_fn fn, void *ctx)
{
	cJSON *body = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(body, "instanceIds");
	char url[1536], *text;
	struct rest_reply r;
	int rc;

	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(arr, cJSON_CreateString(h->members.v[idx[i]].id));
	text = cJSON_PrintUnformatted(body);
	cJSON_Delete(body);
	if (!text)
		return -ENOMEM;
	snprintf(url, sizeof(url), "%s/delete?api-version=%s", h->vmss_url, h->api_version);
	LOG(h, INFO, WHO ": deleting %zu VM(s) of '%s': %s", n, h->name, text);
	rc = request(h, "POST", url, text, NULL, &r);
	cJSON_free(text);
	if (rc < 0)
		return rc;
	if (r.status < 200 || r.status > 202)
		rc = http_fail(h, "delete", &r);
	else
		rc = follow(h, "delete", &r);
	rest_reply_clear(&r);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		struct cloud_member *m = &h->members.v[idx[i]];
		struct autoscaled_instance inst = { .id = m->id, .state = AUTOSCALED_INSTANCE_STOPPING,
						    .created_ms = m->created_ms, .location = m->location };

		m->state = AUTOSCALED_INSTANCE_STOPPING;
		if (fn)
			rc = fn(ctx, &inst);
	}
	return rc;
}

static int az_remove(struct autoscaled_driver_instance *h, int count, const char *const *ids, size_t n_ids,
		     autoscaled_instance_fn fn, void *ctx)
{
	size_t *idx, n;
	int rc = refresh(h);

	if (rc < 0)
		return rc;
	rc = cloud_check_unchanged(h->host, WHO, h->name, h->observed, h->capacity, "the scale-in");
	if (rc < 0)
		return rc;
	rc = check_autoscale(h, "a scale-in");
	if (rc < 0)
		return rc;
	rc = cloud_choose_victims(h->host, WHO, "VM", h->name, &h->members, count, ids, n_ids, h->victims, &idx, &n);
	if (rc < 0)
		return rc;
	rc = n > 0 ? delete_members(h, idx, n, fn, ctx) : 0;
	free(idx);
	/* This driver's own change: the capacity Azure takes down with the
	 * deleted VMs, as the next read shows it. */
	if (rc == 0)
		h->observed = h->capacity - (int)n;
	return rc;
}

static int patch_capacity(struct autoscaled_driver_instance *h, int count)
{
	char url[1536], body[64], if_match[300];
	const char *hdrs[2] = { if_match, NULL };
	struct rest_reply r;
	int rc, read = h->capacity;

	snprintf(url, sizeof(url), "%s?api-version=%s", h->vmss_url, h->api_version);
	snprintf(body, sizeof(body), "{\"sku\":{\"capacity\":%d}}", count);
	for (int tries = 1;; tries++) {
		snprintf(if_match, sizeof(if_match), "If-Match: %s", h->etag[0] ? h->etag : "*");
		LOG(h, INFO, WHO ": setting the capacity of '%s' from %d to %d", h->name, h->capacity, count);
		rc = request(h, "PATCH", url, body, hdrs, &r);
		if (rc < 0)
			return rc;
		if (r.status != 412 || tries == ETAG_TRIES)
			break;
		/* Someone changed the scale set since our read. A change of
		 * its capacity undoes the decision (it may have been another
		 * agent's scale-out, larger than ours: patching ours over it
		 * would shrink the set); any other change is retried. */
		LOG(h, NOTICE, WHO ": '%s' changed since it was read (etag %s), reading it again", h->name, h->etag);
		rest_reply_clear(&r);
		rc = fetch_vmss(h);
		if (rc < 0)
			return rc;
		rc = cloud_check_unchanged(h->host, WHO, h->name, read, h->capacity, "the capacity update");
		if (rc < 0)
			return rc;
	}
	if (r.status < 200 || r.status > 202)
		rc = http_fail(h, "capacity update", &r);
	else
		rc = follow(h, "capacity update", &r);
	rest_reply_clear(&r);
	return rc;
}

static int az_set_capacity(struct autoscaled_driver_instance *h, int count, autoscaled_instance_fn fn, void *ctx)
{
	struct cloud_members before = { 0 };
	int rc;

	if (count < 0)
		return -EINVAL;
	rc = refresh(h);
	if (rc < 0)
		return rc;
	rc = cloud_check_unchanged(h->host, WHO, h->name, h->observed, h->capacity, "the capacity update");
	if (rc < 0)
		return rc;
	if (count == h->capacity)
		return 0;
	if (count < h->capacity) {
		LOG(h, ERROR, WHO ": set_capacity to %d refused: '%s' has %d, and set_capacity only grows it "
		    "(remove_instances shrinks it)", count, h->name, h->capacity);
		return -ERANGE;
	}
	rc = check_autoscale(h, "a capacity update");
	if (rc < 0)
		return rc;
	rc = patch_capacity(h, count);
	if (rc < 0)
		return rc;
	h->observed = count; /* this driver's own change */
	before.v = malloc((h->members.n + 1) * sizeof(*before.v));
	if (!before.v)
		return -ENOMEM;
	/* An empty group has no member array at all (memcpy from NULL is
	 * undefined even for no bytes). */
	if (h->members.n > 0)
		memcpy(before.v, h->members.v, h->members.n * sizeof(*before.v));
	before.n = before.cap = h->members.n;
	/* The final GET after a successful PATCH, which also finds the new VMs. */
	if (refresh(h) == 0) {
		for (size_t i = 0; i < h->members.n && rc == 0; i++) {
			struct cloud_members one = { &h->members.v[i], 1, 1 };

			if (!cloud_members_find(&before, h->members.v[i].id))
				rc = cloud_members_report(&one, fn, ctx);
		}
	}
	cloud_members_clear(&before);
	return rc;
}

static int parse_options(const struct autoscaled_host *host, const struct autoscaled_option *o, size_t n,
			 struct autoscaled_driver_instance *h, char *arm, size_t arm_size)
{
	const char *sub = cloud_opt(o, n, "subscription"), *rg = cloud_opt(o, n, "resource_group");
	const char *name = cloud_opt(o, n, "name"), *base = cloud_opt(o, n, "arm_base");
	const char *api = cloud_opt(o, n, "api_version");
	static const char *const required[] = { "subscription", "resource_group", "name", NULL };
	/* Every check runs, so that one pass reports every problem. */
	int bad = cloud_opt_check_keys(host, WHO, o, n, known_options) < 0;

	bad |= cloud_opt_require(host, WHO, o, n, required) < 0;

	h->host = host;
	h->op_timeout_ms = 15 * 60000;
	h->poll_ms = 5000;
	bad |= cloud_opt_victims(host, WHO, o, n, &h->victims) < 0;
	bad |= cloud_opt_duration(host, WHO, o, n, "operation_timeout", &h->op_timeout_ms) < 0;
	bad |= cloud_opt_duration(host, WHO, o, n, "poll_interval", &h->poll_ms) < 0;
	bad |= cloud_opt_bool(host, WHO, o, n, "coexist_with_cloud_autoscaler", &h->coexist) < 0;
	if (bad)
		return -EINVAL;
	if (cloud_base_url(base ? base : "https://management.azure.com", "https", arm, arm_size) < 0 ||
	    snprintf(h->name, sizeof(h->name), "%s", name) >= (int)sizeof(h->name) ||
	    snprintf(h->api_version, sizeof(h->api_version), "%s", api ? api : "2024-07-01") >= (int)sizeof(h->api_version) ||
	    snprintf(h->vmss_url, sizeof(h->vmss_url),
		     "%s/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Compute/virtualMachineScaleSets/%s", arm,
		     sub, rg, name) >= (int)sizeof(h->vmss_url)) {
		host->log(host, AUTOSCALED_LOG_ERROR, WHO ": arm_base, subscription, resource_group or name too long");
		return -EINVAL;
	}
	return 0;
}

static int init_auth(const struct autoscaled_host *host, const struct autoscaled_option *o, size_t n, const char *arm,
		     struct azauth *a)
{
	struct cloud_sink sink;
	const char *cred = cloud_opt(o, n, "credentials"), *tenant = cloud_opt(o, n, "tenant");
	const char *id = cloud_opt(o, n, "client_id"), *secret = cloud_opt(o, n, "secret_file");
	const char *scope = cloud_opt(o, n, "scope"), *login = cloud_opt(o, n, "login_host");
	const char *resource = cloud_opt(o, n, "resource");
	char def_scope[600], def_resource[600];

	cloud_sink_init_host(&sink, host);
	if (!cred)
		cred = secret ? "client_secret" : "managed_identity";
	/* A managed identity's token is for the ARM endpoint in use (a
	 * sovereign cloud's ARM refuses one for the public cloud's). */
	snprintf(def_resource, sizeof(def_resource), "%s/", arm);
	if (strcmp(cred, "managed_identity") == 0)
		return azauth_init_imds(a, &sink, WHO, cloud_opt(o, n, "imds_base"), resource ? resource : def_resource,
					id);
	if (strcmp(cred, "client_secret") != 0 || !tenant || !id || !secret) {
		host->log(host, AUTOSCALED_LOG_ERROR, WHO ": credentials = '%s' must be managed_identity, or "
			  "client_secret with tenant, client_id and secret_file", cred);
		return -EINVAL;
	}
	snprintf(def_scope, sizeof(def_scope), "%s/.default", arm);
	return azauth_init_secret(a, &sink, WHO, login ? login : "login.microsoftonline.com", tenant, id, secret,
				  scope ? scope : def_scope);
}

static void az_close(struct autoscaled_driver_instance *h)
{
	if (!h)
		return;
	rest_client_fini(&h->http);
	azauth_fini(&h->auth);
	cloud_members_clear(&h->members);
	free(h);
}

static int az_open(const struct autoscaled_host *host, const struct autoscaled_option *o, size_t n,
		   struct autoscaled_driver_instance **ret)
{
	struct autoscaled_driver_instance *h = calloc(1, sizeof(*h));
	char arm[512];
	int rc;

	if (!h)
		return -ENOMEM;
	h->observed = -1;
	rc = parse_options(host, o, n, h, arm, sizeof(arm));
	cloud_sink_init_host(&h->sink, host);
	if (rc == 0)
		rc = rest_client_init(&h->http, &h->sink, WHO, REST_POLICY_AZURE);
	if (rc == 0)
		rc = cloud_opt_retry(host, &h->http, o, n);
	if (rc == 0)
		rc = init_auth(host, o, n, arm, &h->auth);
	if (rc < 0) {
		az_close(h);
		return rc;
	}
	*ret = h;
	return 0;
}

/* Validates the options and the credentials' configuration (the secret
 * file is read and its mode checked) without any request. */
static int az_check(const struct autoscaled_host *host, const struct autoscaled_option *o, size_t n)
{
	struct autoscaled_driver_instance h = { 0 };
	struct rest_client c = { .who = WHO };
	struct azauth a;
	char arm[512];
	int rc = parse_options(host, o, n, &h, arm, sizeof(arm));

	if (rc == 0)
		rc = cloud_opt_retry(host, &c, o, n);
	if (rc == 0 && (rc = init_auth(host, o, n, arm, &a)) == 0)
		azauth_fini(&a);
	return rc;
}

static const struct autoscaled_driver driver = {
	.abi_version = AUTOSCALED_DRIVER_ABI_VERSION,
	.struct_size = sizeof(struct autoscaled_driver),
	.name = "azure-vmss",
	.description = "Azure virtual machine scale sets, Uniform or Flexible (ARM API)",
	.config_help = "subscription = string  subscription id (required)\n"
		       "resource_group = string  resource group (required)\n"
		       "name = string  scale set name (required)\n"
		       "credentials = client_secret|managed_identity  how to get tokens (managed_identity)\n"
		       "tenant = string  tenant for client_secret\n"
		       "client_id = string  application id, or the identity's client id for managed_identity\n"
		       "secret_file = path  file holding the client secret, mode 0600\n"
		       "login_host = host  Entra ID login host (login.microsoftonline.com)\n"
		       "arm_base = url  ARM endpoint (https://management.azure.com)\n"
		       "scope = string  token scope (ARM_BASE/.default)\n"
		       "imds_base = url  IMDS endpoint (http://169.254.169.254)\n"
		       "resource = string  managed identity resource (ARM_BASE/)\n"
		       "api_version = string  Microsoft.Compute api-version (2024-07-01)\n"
		       "victim_policy = newest|oldest  which running VMs go first on scale-in (newest)\n"
		       "operation_timeout = duration  longest wait for a long-running operation (15m)\n"
		       "poll_interval = duration  between operation polls without Retry-After (5s)\n"
		       "retry_attempts = int  tries per request (6)\n"
		       "retry_base = duration  first backoff (1s)\n"
		       "retry_max = duration  longest backoff or Retry-After honoured (32s)\n"
		       "http_timeout = duration  per request (60s)\n",
	.open = az_open,
	.close = az_close,
	.observe = az_observe,
	.set_capacity = az_set_capacity,
	.remove_instances = az_remove,
	.check = az_check,
};

AUTOSCALED_DRIVER_EXPORT const struct autoscaled_driver *autoscaled_driver_info(void)
{
	return &driver;
}
