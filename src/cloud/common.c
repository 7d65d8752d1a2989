/* Members, victims and options shared by the cloud drivers (cloud.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <pthread.h>

#include "cloud/cloud.h"
#include "base/iso8601.h"

struct cloud_member *cloud_members_add(struct cloud_members *m)
{
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 16;
		struct cloud_member *v;

		if (m->n >= CLOUD_MAX_MEMBERS)
			return NULL;
		v = realloc(m->v, cap * sizeof(*v));
		if (!v)
			return NULL;
		m->v = v;
		m->cap = cap;
	}
	memset(&m->v[m->n], 0, sizeof(m->v[0]));
	return &m->v[m->n++];
}

void cloud_members_clear(struct cloud_members *m)
{
	free(m->v);
	m->v = NULL;
	m->n = m->cap = 0;
}

/* Gives back the room beyond the members; keeps the list as it is when
 * the smaller block cannot be had. */
static void members_fit(struct cloud_members *m)
{
	struct cloud_member *v;

	if (m->n == m->cap)
		return;
	if (m->n == 0) {
		cloud_members_clear(m);
		return;
	}
	v = realloc(m->v, m->n * sizeof(*v));
	if (v) {
		m->v = v;
		m->cap = m->n;
	}
}

const struct cloud_member *cloud_members_find(const struct cloud_members *m, const char *id)
{
	for (size_t i = 0; i < m->n; i++)
		if (strcmp(m->v[i].id, id) == 0)
			return &m->v[i];
	return NULL;
}

void cloud_members_carry(struct cloud_members *cur, const struct cloud_members *prev, int64_t now_ms)
{
	for (size_t i = 0; i < cur->n; i++) {
		struct cloud_member *c = &cur->v[i];
		const struct cloud_member *p = cloud_members_find(prev, c->id);

		if (c->created_ms == 0)
			c->created_ms = p && p->created_ms ? p->created_ms : now_ms;
		if (c->state == AUTOSCALED_INSTANCE_RUNNING)
			c->running_since_ms = p && p->running_since_ms ? p->running_since_ms : now_ms;
		else
			c->running_since_ms = 0;
	}
}

void cloud_members_keep(struct cloud_members *kept, struct cloud_members *cur, int64_t now_ms)
{
	cloud_members_carry(cur, kept, now_ms);
	members_fit(cur);
	cloud_members_clear(kept);
	*kept = *cur;
	*cur = (struct cloud_members){0};
}

int cloud_members_report(const struct cloud_members *m, autoscaled_instance_fn fn, void *ctx)
{
	for (size_t i = 0; fn && i < m->n; i++) {
		const struct cloud_member *c = &m->v[i];
		struct autoscaled_instance inst = {
			.id = c->id,
			.state = c->state,
			.created_ms = c->created_ms,
			.running_since_ms = c->running_since_ms,
			.ready = c->ready,
			.location = c->location[0] ? c->location : NULL,
		};
		int rc = fn(ctx, &inst);

		if (rc)
			return rc;
	}
	return 0;
}

static const struct cloud_members *sort_members;
static enum cloud_victims sort_policy;

static int victim_cmp(const void *a, const void *b)
{
	const struct cloud_member *x = &sort_members->v[*(const size_t *)a];
	const struct cloud_member *y = &sort_members->v[*(const size_t *)b];
	int xr = x->state == AUTOSCALED_INSTANCE_RUNNING, yr = y->state == AUTOSCALED_INSTANCE_RUNNING;

	if (xr != yr)
		return xr - yr;
	if (x->created_ms != y->created_ms) {
		int older = x->created_ms < y->created_ms ? -1 : 1;

		return sort_policy == CLOUD_VICTIMS_OLDEST ? older : -older;
	}
	return sort_policy == CLOUD_VICTIMS_OLDEST ? strcmp(x->id, y->id) : strcmp(y->id, x->id);
}

size_t cloud_pick_victims(const struct cloud_members *m, int count, enum cloud_victims policy, size_t *out)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	size_t n = 0;

	for (size_t i = 0; i < m->n; i++)
		if (m->v[i].state != AUTOSCALED_INSTANCE_STOPPING)
			out[n++] = i;
	/* qsort has no context argument in C11: the comparison reads statics,
	 * so calls from concurrent handles are serialised. */
	pthread_mutex_lock(&lock);
	sort_members = m;
	sort_policy = policy;
	qsort(out, n, sizeof(*out), victim_cmp);
	pthread_mutex_unlock(&lock);
	return count < 0 ? 0 : (size_t)count < n ? (size_t)count : n;
}

int cloud_check_unchanged(const struct autoscaled_host *host, const char *who, const char *group, int observed, int now,
			  const char *what)
{
	if (observed < 0 || observed == now)
		return 0;
	host->log(host, AUTOSCALED_LOG_WARNING,
		  "%s: '%s' went from %d to %d instances since it was observed: %s not made; the next evaluation "
		  "decides from what it sees",
		  who, group, observed, now, what);
	return -ESTALE;
}

int cloud_choose_victims(const struct autoscaled_host *host, const char *who, const char *noun, const char *group,
			 const struct cloud_members *m, int count, const char *const *ids, size_t n_ids,
			 enum cloud_victims policy, size_t **ret, size_t *ret_n)
{
	size_t *idx = calloc(m->n + 1, sizeof(*idx)), n = 0;

	if (!idx)
		return -ENOMEM;
	if (n_ids > 0) {
		for (size_t i = 0; i < n_ids; i++) {
			const struct cloud_member *v = cloud_members_find(m, ids[i]);

			if (!v || v->state == AUTOSCALED_INSTANCE_STOPPING)
				host->log(host, AUTOSCALED_LOG_WARNING, "%s: '%s' is not a live %s of '%s'; skipped", who,
					  ids[i], noun, group);
			else
				idx[n++] = (size_t)(v - m->v);
		}
	} else {
		n = cloud_pick_victims(m, count, policy, idx);
	}
	*ret = idx;
	*ret_n = n;
	return 0;
}

const cJSON *cloud_json_get(const cJSON *o, const char *key, int types, const char **bad)
{
	const cJSON *v;

	if (!cJSON_IsObject(o))
		return NULL;
	v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!v || cJSON_IsNull(v))
		return NULL;
	if ((v->type & 0xff) & types)
		return v;
	if (bad && !*bad)
		*bad = key;
	return NULL;
}

int cloud_json_count(const cJSON *v, int max, int *ret)
{
	if (cJSON_IsNumber(v)) {
		double d = v->valuedouble;

		/* Compared as a double: valueint saturates, so 1e300 would pass
		 * as INT_MAX. */
		if (!(d >= 0 && d <= max) || d != (double)(int)d)
			return -EBADMSG;
		*ret = (int)d;
		return 0;
	}
	if (cJSON_IsString(v)) {
		const char *p = v->valuestring;
		long long n = 0;

		if (!*p)
			return -EBADMSG;
		for (; *p; p++) {
			if (*p < '0' || *p > '9')
				return -EBADMSG;
			n = n * 10 + (*p - '0');
			if (n > max)
				return -EBADMSG;
		}
		*ret = (int)n;
		return 0;
	}
	return -EBADMSG;
}

static const struct autoscaled_option *opt_find(const struct autoscaled_option *o, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(o[i].key, key) == 0)
			return &o[i];
	return NULL;
}

const char *cloud_opt(const struct autoscaled_option *o, size_t n, const char *key)
{
	const struct autoscaled_option *v = opt_find(o, n, key);

	return v ? v->value : NULL;
}

void cloud_opt_error(const struct autoscaled_host *host, const char *who, const struct autoscaled_option *o,
		     const char *fmt, ...)
{
	const char *where = autoscaled_option_where(host, o);
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	host->log(host, AUTOSCALED_LOG_ERROR, "%s%s%s: %s", where ? where : "", where ? ": " : "", who, msg);
}

int cloud_opt_require(const struct autoscaled_host *host, const char *who, const struct autoscaled_option *o,
		      size_t n, const char *const *required)
{
	int rc = 0;

	for (size_t k = 0; required[k]; k++) {
		if (!cloud_opt(o, n, required[k])) {
			cloud_opt_error(host, who, NULL, "missing required option '%s'", required[k]);
			rc = -EINVAL;
		}
	}
	return rc;
}

int cloud_opt_duration(const struct autoscaled_host *host, const char *who, const struct autoscaled_option *o,
		       size_t n, const char *key, int64_t *ms)
{
	const struct autoscaled_option *v = opt_find(o, n, key);

	if (!v || !v->value)
		return 0;
	if (autoscaled_parse_duration(host, v->value, ms) < 0) {
		cloud_opt_error(host, who, v,
				"option %s = '%s' is not a duration (such as \"30\", \"90s\", \"1h30m\" or \"500ms\")",
				key, v->value);
		return -EINVAL;
	}
	return 0;
}

int cloud_opt_bool(const struct autoscaled_host *host, const char *who, const struct autoscaled_option *o, size_t n,
		   const char *key, bool *ret)
{
	const struct autoscaled_option *v = opt_find(o, n, key);

	if (!v)
		return 0;
	if (v->value && strcmp(v->value, "true") == 0) {
		*ret = true;
	} else if (v->value && strcmp(v->value, "false") == 0) {
		*ret = false;
	} else {
		cloud_opt_error(host, who, v, "option %s = '%s' must be true or false", key, v->value ? v->value : "(a list)");
		return -EINVAL;
	}
	return 0;
}

int cloud_opt_retry(const struct autoscaled_host *host, struct rest_client *c, const struct autoscaled_option *o,
		    size_t n)
{
	const struct autoscaled_option *v = opt_find(o, n, "retry_attempts");
	char *end;

	if (v && v->value) {
		long a = strtol(v->value, &end, 10);

		if (end == v->value || *end || a < 1 || a > 20) {
			cloud_opt_error(host, c->who, v, "option retry_attempts = '%s' must be 1 to 20", v->value);
			return -EINVAL;
		}
		c->attempts = (int)a;
	}
	if (cloud_opt_duration(host, c->who, o, n, "retry_base", &c->backoff_base_ms) < 0 ||
	    cloud_opt_duration(host, c->who, o, n, "retry_max", &c->backoff_max_ms) < 0 ||
	    cloud_opt_duration(host, c->who, o, n, "http_timeout", &c->timeout_ms) < 0)
		return -EINVAL;
	if (c->timeout_ms < 100)
		c->timeout_ms = 100;
	return 0;
}

int cloud_opt_victims(const struct autoscaled_host *host, const char *who, const struct autoscaled_option *o, size_t n,
		      enum cloud_victims *ret)
{
	const struct autoscaled_option *v = opt_find(o, n, "victim_policy");

	if (!v || !v->value || strcmp(v->value, "newest") == 0)
		*ret = CLOUD_VICTIMS_NEWEST;
	else if (strcmp(v->value, "oldest") == 0)
		*ret = CLOUD_VICTIMS_OLDEST;
	else {
		cloud_opt_error(host, who, v, "option victim_policy = '%s' must be newest or oldest", v->value);
		return -EINVAL;
	}
	return 0;
}

int cloud_opt_check_keys(const struct autoscaled_host *host, const char *who, const struct autoscaled_option *o,
			 size_t n, const char *const *known)
{
	int rc = 0;

	for (size_t i = 0; i < n; i++) {
		size_t k = 0;

		while (known[k] && strcmp(known[k], o[i].key) != 0)
			k++;
		if (!known[k]) {
			const char *near = autoscaled_near_miss(host, o[i].key, known);

			cloud_opt_error(host, who, &o[i], "unknown option '%s'%s%s%s", o[i].key,
					near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
			rc = -EINVAL;
		} else if (!o[i].value) {
			cloud_opt_error(host, who, &o[i], "option '%s' must be a single value", o[i].key);
			rc = -EINVAL;
		}
	}
	return rc;
}

void cloud_format_time(int64_t ms, char *out, size_t size)
{
	iso8601_format(ms, ISO8601_SECONDS, out, size);
}

int64_t cloud_parse_time(const char *s)
{
	int64_t ms;

	return iso8601_parse(s, ISO8601_UTC_DEFAULT, &ms) == 0 && ms >= 0 ? ms : 0;
}
