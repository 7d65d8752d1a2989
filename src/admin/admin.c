/* The admin API; see admin.h.
 *
 * Only the Unix socket serves it: access is the socket file's permission
 * (mode 0660, the configured group), so anyone who can connect may pause,
 * pin and reload, and nobody else can even read. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <zlib.h>

#include "admin/admin.h"
#include "config/config.h"
#include "admin/httpd.h"
#include "base/iso8601.h"
#include "log/log.h"

#define ADMIN_MAX_GROUP_NAME 256
#define ERR_LEN 512

struct admin {
	struct httpd *httpd;
	const struct admin_ops *ops;
	void *userdata;
	char *path;
};

/* ------------------------------------------------------------- helpers */

int admin_parse_time(const char *s, int64_t *ret)
{
	/* No default zone: a time without one is ambiguous, so refused. */
	return iso8601_parse(s, 0, ret);
}

bool admin_add_time(cJSON *o, const char *key, int64_t ms)
{
	char buf[40];

	if (ms <= 0 || iso8601_format(ms, ISO8601_SECONDS, buf, sizeof(buf)) < 0)
		return cJSON_AddNullToObject(o, key) != NULL;
	return cJSON_AddStringToObject(o, key, buf) != NULL;
}

/* The records are raw deflate streams (no header: the ring is in memory
 * only) with an 8 KiB window, set off against this dictionary: one
 * record as decision_to_json() writes it, with a forecast, a signal
 * without data and a rule, so that each name and most words of a record
 * are a reference into it. A record of another shape only compresses
 * less. */
#define RING_WINDOW_BITS 13
#define RING_MEM_LEVEL 6
static const char ring_dictionary[] =
	"{\"time\":\"2026-01-01T00:00:00.000Z\",\"group\":\"\",\"profile\":\"default\",\"current\":1,\"ready\":1,"
	"\"min\":1,\"max\":10,\"default\":1,\"signals\":[{\"name\":\"cpu\",\"type\":\"utilization\",\"valid\":true,"
	"\"value\":0.5,\"target\":0.6,\"recommendation\":1,\"within_tolerance\":false,\"counted_as_zero\":0,"
	"\"counted_at_target\":0,\"reason\":null,\"forecast\":{\"mode\":\"on\",\"made_ms\":1,\"for_ms\":1,\"now\":1,"
	"\"value\":1,\"recommendation\":1,\"keep\":1,\"raised\":false,\"service_level\":null,\"service_offset\":null,"
	"\"service_short\":null}},{\"name\":\"queue\",\"type\":\"average\",\"valid\":false,\"value\":null,"
	"\"target\":10,\"recommendation\":null,\"within_tolerance\":true,\"counted_as_zero\":0,"
	"\"counted_at_target\":0,\"reason\":\"no data\",\"forecast\":null}],\"rules\":[{\"index\":0,"
	"\"signal\":\"cpu\",\"direction\":\"out\",\"fired\":false,\"in_cooldown\":false,\"value\":null,"
	"\"proposal\":null}],\"inputs\":{\"stable\":true,\"in_flight\":null,\"busy\":false,\"partial\":false,"
	"\"paused\":false,\"host_room\":null,\"pin\":null},\"on_missing_applied\":false,\"combined\":1,"
	"\"clamped\":1,\"stabilized\":1,\"rate_limited\":1,\"flap_guarded\":1,\"final\":1,\"desired\":1,"
	"\"action\":\"none\",\"hold\":\"none\",\"override\":null,\"victims\":null,\"driver_signal\":null,"
	"\"driver_rule\":null,\"boot_time_s\":120,\"keep_s\":null,\"explanation\":\" vs /instance -> ; max of "
	"signals; scale out  -> \",\"dry_run\":false,\"last_error\":null}";

struct ring_record {
	uint32_t len;  /* of the text */
	uint32_t zlen; /* of the deflated text that follows */
	unsigned char z[];
};

/* A record's share of the budget: what it takes and what malloc keeps
 * beside it (a chunk header and rounding, about 16 bytes with glibc). */
static size_t record_bytes(const struct ring_record *rec)
{
	return sizeof(*rec) + rec->zlen + 16;
}

/* One deflate stream packs every record, reset between them, into one
 * buffer that only grows; the record is then allocated at its size. Setting
 * a stream up is some 70 KB of allocations (the window, the hash chains
 * and the buffers), and the room for the worst case is larger than the
 * record: at the soak's 670 records a second, those large blocks had the
 * loop's malloc sorting and merging its free blocks most of its time. The
 * records are packed on the loop's thread; the lock keeps any other caller
 * right. */
static pthread_mutex_t ring_z_lock = PTHREAD_MUTEX_INITIALIZER;
static z_stream ring_z;
static bool ring_z_ready;
static unsigned char *ring_out;
static size_t ring_out_size;

/* JSON deflated into a record; NULL on ENOMEM. */
static struct ring_record *record_pack(const char *json)
{
	size_t len = strlen(json);
	struct ring_record *rec = NULL;
	uLong bound, zlen;

	if (len > UINT32_MAX / 2)
		return NULL;
	pthread_mutex_lock(&ring_z_lock);
	if (ring_z_ready) {
		if (deflateReset(&ring_z) != Z_OK)
			goto out;
	} else if (deflateInit2(&ring_z, Z_BEST_SPEED, Z_DEFLATED, -RING_WINDOW_BITS, RING_MEM_LEVEL,
				Z_DEFAULT_STRATEGY) == Z_OK) {
		ring_z_ready = true;
	} else {
		goto out;
	}
	bound = deflateBound(&ring_z, (uLong)len);
	if (bound > UINT32_MAX)
		goto out;
	if (bound > ring_out_size) {
		unsigned char *grown = realloc(ring_out, bound);

		if (!grown)
			goto out;
		ring_out = grown;
		ring_out_size = bound;
	}
	if (deflateSetDictionary(&ring_z, (const Bytef *)ring_dictionary, sizeof(ring_dictionary) - 1) != Z_OK)
		goto out;
	ring_z.next_in = (Bytef *)(uintptr_t)json;
	ring_z.avail_in = (uInt)len;
	ring_z.next_out = ring_out;
	ring_z.avail_out = (uInt)bound;
	if (deflate(&ring_z, Z_FINISH) != Z_STREAM_END)
		goto out;
	zlen = bound - ring_z.avail_out;
	rec = malloc(sizeof(*rec) + zlen);
	if (rec) {
		rec->len = (uint32_t)len;
		rec->zlen = (uint32_t)zlen;
		memcpy(rec->z, ring_out, zlen);
	}
out:
	pthread_mutex_unlock(&ring_z_lock);
	return rec;
}

/* A record's text (malloc'ed); NULL on ENOMEM. */
static char *record_text(const struct ring_record *rec)
{
	char *text = malloc((size_t)rec->len + 1);
	z_stream z = { 0 };
	int r;

	if (!text || inflateInit2(&z, -RING_WINDOW_BITS) != Z_OK) {
		free(text);
		return NULL;
	}
	r = inflateSetDictionary(&z, (const Bytef *)ring_dictionary, sizeof(ring_dictionary) - 1);
	z.next_in = (Bytef *)(uintptr_t)rec->z;
	z.avail_in = rec->zlen;
	z.next_out = (Bytef *)text;
	z.avail_out = rec->len;
	if (r == Z_OK)
		r = inflate(&z, Z_FINISH);
	inflateEnd(&z);
	/* Only memory can fail: the ring deflated the text itself. */
	if (r != Z_STREAM_END || z.avail_out != 0) {
		free(text);
		return NULL;
	}
	text[rec->len] = '\0';
	return text;
}

static void drop_oldest(struct admin_ring *r)
{
	r->bytes -= record_bytes(r->v[r->head]);
	free(r->v[r->head]);
	r->v[r->head] = NULL;
	r->head = (r->head + 1) % r->cap;
	r->n--;
}

/* Room for one more record: the array doubles up to ADMIN_RING_SIZE, the
 * records moved to its start; false when it cannot grow. */
static bool grow(struct admin_ring *r)
{
	size_t cap = r->cap ? r->cap * 2 : 2;
	struct ring_record **v;

	if (cap > ADMIN_RING_SIZE)
		cap = ADMIN_RING_SIZE;
	if (!(v = calloc(cap, sizeof(*v))))
		return false;
	for (size_t i = 0; i < r->n; i++)
		v[i] = r->v[(r->head + i) % r->cap];
	free(r->v);
	r->v = v;
	r->cap = cap;
	r->head = 0;
	return true;
}

size_t admin_ring_push(struct admin_ring *r, char *json, size_t limit)
{
	struct ring_record *rec;
	size_t b;

	if (!json)
		return 0;
	rec = record_pack(json);
	free(json);
	if (!rec)
		return 0;
	if (r->n == r->cap && (r->cap == ADMIN_RING_SIZE || !grow(r))) {
		if (r->n == 0) {
			free(rec);
			return 0;
		}
		drop_oldest(r);
	}
	r->v[(r->head + r->n) % r->cap] = rec;
	r->n++;
	b = record_bytes(rec);
	r->bytes += b;
	while (limit && r->n > 1 && r->bytes > limit)
		drop_oldest(r);
	return b;
}

bool admin_ring_pass_over(struct admin_ring *r, size_t bytes, size_t limit)
{
	if (!limit || 2 * bytes <= limit)
		return true;
	while (r->n && (r->n == ADMIN_RING_SIZE || r->bytes + bytes > limit))
		drop_oldest(r);
	return false;
}

char *admin_ring_newest(const struct admin_ring *r)
{
	return r->n ? record_text(r->v[(r->head + r->n - 1) % r->cap]) : NULL;
}

cJSON *admin_ring_json(const struct admin_ring *r)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *a = o ? cJSON_AddArrayToObject(o, "decisions") : NULL;

	if (!a) {
		cJSON_Delete(o);
		return NULL;
	}
	for (size_t i = 0; i < r->n; i++) {
		char *text = record_text(r->v[(r->head + i) % r->cap]);
		cJSON *d = text ? cJSON_Parse(text) : NULL;

		free(text);
		if (!d) {
			cJSON_Delete(o);
			return NULL;
		}
		cJSON_AddItemToArray(a, d);
	}
	return o;
}

void admin_ring_clear(struct admin_ring *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->v[(r->head + i) % r->cap]);
	free(r->v);
	*r = (struct admin_ring){0};
}

static void reply_json(struct httpd_response *resp, int status, cJSON *o)
{
	if (!o) {
		httpd_error(resp, 500, "out of memory");
		return;
	}
	resp->status = status;
	resp->content_type = "application/json";
	resp->body = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!resp->body)
		httpd_error(resp, 500, "out of memory");
}

static void reply_ok(struct httpd_response *resp, cJSON *o)
{
	reply_json(resp, 200, o);
}

/* Maps an operation's result to the answer. */
static void reply_result(struct httpd_response *resp, int r, const char *err, const char *group,
			 const char *done)
{
	cJSON *o;

	switch (r) {
	case 0:
		o = cJSON_CreateObject();
		if (o && group)
			cJSON_AddStringToObject(o, "group", group);
		if (o)
			cJSON_AddStringToObject(o, "result", done);
		reply_ok(resp, o);
		return;
	case -ENOENT:
		httpd_error(resp, 404, "%s", err[0] ? err : "no such group");
		return;
	case -ERANGE:
	case -EALREADY:
	case -EREMOTE: /* a cluster's group another agent manages */
		httpd_error(resp, 409, "%s", err);
		return;
	case -EINVAL:
		httpd_error(resp, 400, "%s", err);
		return;
	default:
		httpd_error(resp, 500, "%s", err[0] ? err : strerror(-r));
		return;
	}
}

/* The request body as a JSON object whose keys are all in `allowed` (a
 * typo must not be silently ignored). An empty body is {}. Returns NULL
 * after answering 400. */
static cJSON *body_object(const struct httpd_request *req, struct httpd_response *resp,
			  const char *const *allowed)
{
	const cJSON *k;
	cJSON *o;

	o = req->body_len ? cJSON_ParseWithLength(req->body, req->body_len) : cJSON_CreateObject();
	if (!cJSON_IsObject(o)) {
		cJSON_Delete(o);
		httpd_error(resp, 400, "the request body is not a JSON object");
		return NULL;
	}
	cJSON_ArrayForEach(k, o)
	{
		size_t i;

		for (i = 0; allowed[i]; i++)
			if (strcmp(k->string, allowed[i]) == 0)
				break;
		if (!allowed[i]) {
			httpd_error(resp, 400, "unknown key '%s' in the request", k->string);
			cJSON_Delete(o);
			return NULL;
		}
	}
	return o;
}

/* Reads an expiry from "for" (a duration) or "until" (ISO 8601, in the
 * future). Returns 1 with *until_ms set, 0 when neither is present, or -1
 * after answering 400. */
static int get_expiry(struct admin *a, const cJSON *o, struct httpd_response *resp, int64_t *until_ms)
{
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, "for");
	const cJSON *u = cJSON_GetObjectItemCaseSensitive(o, "until");
	int64_t now = a->ops->now_ms(a->userdata), d;

	if (f && u) {
		httpd_error(resp, 400, "give either 'for' or 'until', not both");
		return -1;
	}
	if (f) {
		if (!cJSON_IsString(f) || parse_duration_ms(f->valuestring, &d) < 0 || d <= 0) {
			httpd_error(resp, 400, "'for' must be a positive duration such as \"90m\" or \"2h\"");
			return -1;
		}
		*until_ms = now + d;
		return 1;
	}
	if (u) {
		if (!cJSON_IsString(u) || admin_parse_time(u->valuestring, until_ms) < 0) {
			httpd_error(resp, 400, "'until' must be an ISO 8601 time with a zone, such as "
					       "\"2026-12-02T18:00:00Z\"");
			return -1;
		}
		if (*until_ms <= now) {
			httpd_error(resp, 400, "'until' %s is in the past", u->valuestring);
			return -1;
		}
		return 1;
	}
	return 0;
}

/* ------------------------------------------------------------ handlers */

static void do_pause(struct admin *a, const char *group, const struct httpd_request *req,
		     struct httpd_response *resp)
{
	static const char *const keys[] = {"for", "until", NULL};
	char err[ERR_LEN] = "";
	int64_t until = 0;
	cJSON *o = body_object(req, resp, keys);

	if (!o)
		return;
	if (get_expiry(a, o, resp, &until) >= 0)
		reply_result(resp, a->ops->pause(a->userdata, group, until, err, sizeof(err)), err, group, "paused");
	cJSON_Delete(o);
}

static void do_pin(struct admin *a, const char *group, const struct httpd_request *req, struct httpd_response *resp)
{
	static const char *const keys[] = {"count", "for", "until", "force", NULL};
	char err[ERR_LEN] = "";
	int64_t until = 0;
	cJSON *o = body_object(req, resp, keys);
	const cJSON *c, *f;
	int r;

	if (!o)
		return;
	c = cJSON_GetObjectItemCaseSensitive(o, "count");
	f = cJSON_GetObjectItemCaseSensitive(o, "force");
	if (!cJSON_IsNumber(c) || c->valuedouble != (double)c->valueint || c->valueint < 0 ||
	    c->valueint > CONFIG_MAX_GROUPS * 10) {
		httpd_error(resp, 400, "'count' must be a whole number of instances, 0 or more");
	} else if (f && !cJSON_IsBool(f)) {
		httpd_error(resp, 400, "'force' must be true or false");
	} else if ((r = get_expiry(a, o, resp, &until)) == 0) {
		/* A pin is an override that is easy to forget: it always ends. */
		httpd_error(resp, 400, "a pin needs an expiry: 'for' or 'until'");
	} else if (r > 0) {
		r = a->ops->pin(a->userdata, group, c->valueint, until, cJSON_IsTrue(f), err, sizeof(err));
		reply_result(resp, r, err, group, "pinned");
	}
	cJSON_Delete(o);
}

static void do_dry_run(struct admin *a, const char *group, const struct httpd_request *req,
		       struct httpd_response *resp)
{
	static const char *const keys[] = {"enabled", NULL};
	char err[ERR_LEN] = "";
	cJSON *o = body_object(req, resp, keys);
	const cJSON *e;

	if (!o)
		return;
	e = cJSON_GetObjectItemCaseSensitive(o, "enabled");
	if (!cJSON_IsBool(e))
		httpd_error(resp, 400, "'enabled' must be true or false");
	else
		reply_result(resp, a->ops->dry_run(a->userdata, group, cJSON_IsTrue(e), err, sizeof(err)), err, group,
			     cJSON_IsTrue(e) ? "dry run on" : "dry run off");
	cJSON_Delete(o);
}

static void do_what_if(struct admin *a, const char *group, const struct httpd_request *req,
		       struct httpd_response *resp)
{
	static const char *const keys[] = {"values", "current", "partial", NULL};
	struct admin_what_if w = {.current = -1};
	char err[ERR_LEN] = "";
	cJSON *o = body_object(req, resp, keys), *rec = NULL;
	const cJSON *values, *c, *p, *v;
	int r;

	if (!o)
		return;
	values = cJSON_GetObjectItemCaseSensitive(o, "values");
	c = cJSON_GetObjectItemCaseSensitive(o, "current");
	p = cJSON_GetObjectItemCaseSensitive(o, "partial");
	if (values && !cJSON_IsObject(values)) {
		httpd_error(resp, 400, "'values' must be an object of signal names and numbers");
		goto out;
	}
	cJSON_ArrayForEach(v, values)
	{
		if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) {
			httpd_error(resp, 400, "the value of signal '%s' must be a number", v->string);
			goto out;
		}
		if (w.n_values == ADMIN_WHAT_IF_MAX_VALUES) {
			httpd_error(resp, 400, "too many values");
			goto out;
		}
		w.signal[w.n_values] = v->string;
		w.value[w.n_values++] = v->valuedouble;
	}
	if (c && (!cJSON_IsNumber(c) || c->valuedouble != (double)c->valueint || c->valueint < 0 ||
		  c->valueint > CONFIG_MAX_GROUPS * 10)) {
		httpd_error(resp, 400, "'current' must be a whole number of instances, 0 or more");
		goto out;
	}
	if (p && !cJSON_IsBool(p)) {
		httpd_error(resp, 400, "'partial' must be true or false");
		goto out;
	}
	w.current = c ? c->valueint : -1;
	w.partial = cJSON_IsTrue(p);
	r = a->ops->what_if(a->userdata, group, &w, &rec, err, sizeof(err));
	if (r < 0)
		reply_result(resp, r, err, group, NULL);
	else
		reply_ok(resp, rec);
out:
	cJSON_Delete(o);
}

static bool is_method(const struct httpd_request *req, const char *m)
{
	return strcmp(req->method, m) == 0;
}

/* /v1/groups/NAME[/ACTION] */
static void route_group(struct admin *a, const char *rest, const struct httpd_request *req,
			struct httpd_response *resp)
{
	char group[ADMIN_MAX_GROUP_NAME];
	char err[ERR_LEN] = "";
	const char *slash = strchr(rest, '/');
	const char *action = slash ? slash + 1 : "";
	size_t n = slash ? (size_t)(slash - rest) : strlen(rest);
	cJSON *o;

	if (n == 0 || n >= sizeof(group)) {
		httpd_error(resp, 404, "no such group");
		return;
	}
	memcpy(group, rest, n);
	group[n] = '\0';

	if (!*action) {
		if (!is_method(req, "GET"))
			goto method;
		o = a->ops->show(a->userdata, group);
		if (!o)
			httpd_error(resp, 404, "no such group '%s'", group);
		else
			reply_ok(resp, o);
	} else if (strcmp(action, "decisions") == 0) {
		if (!is_method(req, "GET"))
			goto method;
		o = a->ops->decisions(a->userdata, group);
		if (!o)
			httpd_error(resp, 404, "no such group '%s'", group);
		else
			reply_ok(resp, o);
	} else if (strcmp(action, "pause") == 0) {
		if (!is_method(req, "POST"))
			goto method;
		do_pause(a, group, req, resp);
	} else if (strcmp(action, "resume") == 0) {
		if (!is_method(req, "POST"))
			goto method;
		reply_result(resp, a->ops->resume(a->userdata, group, err, sizeof(err)), err, group, "resumed");
	} else if (strcmp(action, "pin") == 0) {
		if (is_method(req, "POST"))
			do_pin(a, group, req, resp);
		else if (is_method(req, "DELETE"))
			reply_result(resp, a->ops->unpin(a->userdata, group, err, sizeof(err)), err, group, "unpinned");
		else
			goto method;
	} else if (strcmp(action, "dry-run") == 0) {
		if (!is_method(req, "POST"))
			goto method;
		do_dry_run(a, group, req, resp);
	} else if (strcmp(action, "what-if") == 0) {
		if (!is_method(req, "POST"))
			goto method;
		do_what_if(a, group, req, resp);
	} else {
		httpd_error(resp, 404, "no such path '%s'", req->path);
	}
	return;
method:
	httpd_error(resp, 405, "method '%s' not allowed on '%s'", req->method, req->path);
}

void admin_serve_read_only(const struct admin_ops *ops, void *userdata, const char *path,
			   const struct httpd_request *req, struct httpd_response *resp)
{
	const char *rest, *slash;
	char group[ADMIN_MAX_GROUP_NAME];
	size_t n;
	cJSON *o;

	if (!is_method(req, "GET") && !is_method(req, "HEAD")) {
		httpd_error(resp, 405, "method '%s' not allowed on '%s': this view is read-only", req->method,
			    req->path);
		return;
	}
	if (strcmp(path, "/v1/health") == 0) {
		reply_ok(resp, ops->health(userdata));
		return;
	}
	if (strcmp(path, "/v1/groups") == 0 || strcmp(path, "/v1/groups/") == 0) {
		reply_ok(resp, ops->list(userdata));
		return;
	}
	if (strncmp(path, "/v1/groups/", 11) != 0)
		goto none;
	rest = path + 11;
	slash = strchr(rest, '/');
	n = slash ? (size_t)(slash - rest) : strlen(rest);
	if (slash && strcmp(slash, "/decisions") != 0)
		goto none;
	if (n == 0 || n >= sizeof(group)) {
		httpd_error(resp, 404, "no such group");
		return;
	}
	memcpy(group, rest, n);
	group[n] = '\0';
	o = slash ? ops->decisions(userdata, group) : ops->show(userdata, group);
	if (!o)
		httpd_error(resp, 404, "no such group '%s'", group);
	else
		reply_ok(resp, o);
	return;
none:
	httpd_error(resp, 404, "no such path '%s'", req->path);
}

static void on_request(void *userdata, const struct httpd_request *req, struct httpd_response *resp)
{
	struct admin *a = userdata;
	char err[ERR_LEN] = "";
	const char *p = req->path;

	if (strcmp(p, "/v1/health") == 0) {
		if (!is_method(req, "GET"))
			httpd_error(resp, 405, "method '%s' not allowed on '%s'", req->method, p);
		else
			reply_ok(resp, a->ops->health(a->userdata));
	} else if (strcmp(p, "/v1/groups") == 0 || strcmp(p, "/v1/groups/") == 0) {
		if (!is_method(req, "GET"))
			httpd_error(resp, 405, "method '%s' not allowed on '%s'", req->method, p);
		else
			reply_ok(resp, a->ops->list(a->userdata));
	} else if (strncmp(p, "/v1/groups/", 11) == 0) {
		route_group(a, p + 11, req, resp);
	} else if (strcmp(p, "/v1/cluster") == 0) {
		cJSON *o;

		if (!is_method(req, "GET"))
			httpd_error(resp, 405, "method '%s' not allowed on '%s'", req->method, p);
		else if (!a->ops->cluster || !(o = a->ops->cluster(a->userdata)))
			httpd_error(resp, 404, "this agent is not in a cluster (no 'cluster' section)");
		else
			reply_ok(resp, o);
	} else if (strcmp(p, "/v1/reload") == 0) {
		if (!is_method(req, "POST"))
			httpd_error(resp, 405, "method '%s' not allowed on '%s'", req->method, p);
		else
			reply_result(resp, a->ops->reload(a->userdata, err, sizeof(err)), err, NULL, "reloaded");
	} else {
		httpd_error(resp, 404, "no such path '%s'", p);
	}
	/* Every change, and every refusal, is logged with who asked: the
	 * socket's permission says who may, the log says who did. */
	if ((resp->status >= 400 && resp->status != 404) || (!is_method(req, "GET") && !is_method(req, "HEAD"))) {
		if (req->peer.known)
			log_info("admin: %s %s: %d (uid %ld, pid %ld)", req->method, p, resp->status, req->peer.uid,
				 req->peer.pid);
		else
			log_info("admin: %s %s: %d (caller unknown)", req->method, p, resp->status);
	}
}

int admin_new(sd_event *event, const char *path, const char *group, const struct admin_ops *ops, void *userdata,
	      struct admin **ret)
{
	struct admin *a = calloc(1, sizeof(*a));
	int fd, r;

	if (!a || !(a->path = strdup(path))) {
		free(a);
		return -ENOMEM;
	}
	a->ops = ops;
	a->userdata = userdata;
	fd = httpd_listen_unix(path, ADMIN_SOCKET_MODE, group);
	if (fd < 0) {
		free(a->path);
		free(a);
		return fd;
	}
	r = httpd_new(event, fd, "admin", ADMIN_MAX_BODY, on_request, a, &a->httpd);
	if (r < 0) {
		unlink(path);
		free(a->path);
		free(a);
		return r;
	}
	*ret = a;
	return 0;
}

void admin_free(struct admin *a)
{
	if (!a)
		return;
	httpd_free(a->httpd);
	unlink(a->path);
	free(a->path);
	free(a);
}
