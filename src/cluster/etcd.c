/* etcd v3 over its JSON gateway: see etcd.h. */
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <glib.h>

#include "base/buffer.h"
#include "cluster/etcd.h"

#define MAX_ENDPOINTS 16
#define MAX_ENDPOINT_LEN 512

struct etcd_client {
	CURL *curl;
	char *endpoints[MAX_ENDPOINTS];
	size_t n;
	size_t current;
	char *ca_file;
	char *cert_file;
	char *key_file;
	int64_t timeout_ms;
	char error[512];
};


static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

/* curl_global_init() may not run twice at once: once per process, whoever
 * comes first (the cloud code guards its own call the same way). */
static void curl_init(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void set_error(struct etcd_client *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void set_error(struct etcd_client *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->error, sizeof(c->error), fmt, ap);
	va_end(ap);
}

static bool endpoint_ok(const char *e)
{
	size_t len = strlen(e);

	if (len == 0 || len >= MAX_ENDPOINT_LEN)
		return false;
	if (strncmp(e, "http://", 7) != 0 && strncmp(e, "https://", 8) != 0)
		return false;
	/* Control characters and blanks would end up in a request line. */
	for (const char *p = e; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
			return false;
	return true;
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

int etcd_client_new(const char *const *endpoints, size_t n, const struct etcd_tls *tls, int64_t timeout_ms,
		    struct etcd_client **ret)
{
	struct etcd_client *c;

	if (n == 0 || n > MAX_ENDPOINTS || timeout_ms < 1)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!endpoints[i] || !endpoint_ok(endpoints[i]))
			return -EINVAL;
	pthread_once(&curl_once, curl_init);
	if (curl_init_rc != CURLE_OK)
		return -ENOMEM;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->timeout_ms = timeout_ms;
	c->curl = curl_easy_init();
	if (!c->curl)
		goto oom;
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(endpoints[i]);

		/* One trailing slash is dropped so that paths join cleanly. */
		c->endpoints[i] = strndup(endpoints[i], len > 0 && endpoints[i][len - 1] == '/' ? len - 1 : len);
		if (!c->endpoints[i])
			goto oom;
		c->n++;
	}
	if (tls) {
		c->ca_file = dup_or_null(tls->ca_file);
		c->cert_file = dup_or_null(tls->cert_file);
		c->key_file = dup_or_null(tls->key_file);
		if ((tls->ca_file && !c->ca_file) || (tls->cert_file && !c->cert_file) ||
		    (tls->key_file && !c->key_file))
			goto oom;
	}
	*ret = c;
	return 0;
oom:
	etcd_client_free(c);
	return -ENOMEM;
}

void etcd_client_free(struct etcd_client *c)
{
	if (!c)
		return;
	if (c->curl)
		curl_easy_cleanup(c->curl);
	for (size_t i = 0; i < c->n; i++)
		free(c->endpoints[i]);
	free(c->ca_file);
	free(c->cert_file);
	free(c->key_file);
	free(c);
}

const char *etcd_client_error(const struct etcd_client *c)
{
	return c->error;
}

const char *etcd_client_endpoint(const struct etcd_client *c)
{
	return c->endpoints[c->current];
}

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
	size_t n = size * nmemb;

	return bounded_buf_append(ud, ptr, n, ETCD_MAX_BODY) ? n : 0;
}

/* A curl failure after which another endpoint may answer. */
static bool connection_error(CURLcode cc)
{
	switch (cc) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PARTIAL_FILE:
		return true;
	default:
		return false;
	}
}

static int curl_errno(CURLcode cc)
{
	switch (cc) {
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
		return -ECONNREFUSED;
	case CURLE_OUT_OF_MEMORY:
		return -ENOMEM;
	case CURLE_FILESIZE_EXCEEDED:
	case CURLE_WRITE_ERROR:
		return -EMSGSIZE;
	default:
		return -EIO;
	}
}

/* One POST of BODY to PATH on endpoint i. Returns 0 with *status and *out
 * (the reply, owned by the caller), or the CURLcode in *ret_cc and a
 * negative errno. */
static int post_once(struct etcd_client *c, size_t i, const char *path, const char *body, long *status,
		     struct bounded_buf *out, CURLcode *ret_cc)
{
	CURL *h = c->curl;
	struct curl_slist *hl;
	char url[MAX_ENDPOINT_LEN + 64];
	CURLcode cc;

	snprintf(url, sizeof(url), "%s%s", c->endpoints[i], path);
	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)c->timeout_ms);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)c->timeout_ms);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)ETCD_MAX_BODY);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "autoscaled/" PACKAGE_VERSION);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	/* etcd's members are addressed directly; a proxy for the clouds'
	 * APIs in the environment must not carry the cluster's traffic. */
	curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
	if (c->ca_file)
		curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
	if (c->cert_file)
		curl_easy_setopt(h, CURLOPT_SSLCERT, c->cert_file);
	if (c->key_file)
		curl_easy_setopt(h, CURLOPT_SSLKEY, c->key_file);
	hl = curl_slist_append(NULL, "Content-Type: application/json");
	if (!hl)
		return -ENOMEM;
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
	cc = curl_easy_perform(h);
	curl_slist_free_all(hl);
	*ret_cc = cc;
	if (cc != CURLE_OK) {
		if (out->too_big)
			return -EMSGSIZE;
		return curl_errno(cc);
	}
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
	return 0;
}

/* gRPC's code "unavailable": the member cannot serve (no leader, no
 * quorum), another may. */
#define GRPC_UNAVAILABLE 14
#define GRPC_NOT_FOUND 5

/* The gateway's error reply {"error": ..., "code": N, "message": ...}. */
static int grpc_error(struct etcd_client *c, long status, const cJSON *json)
{
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(json, "code");
	const cJSON *msg = cJSON_GetObjectItemCaseSensitive(json, "message");
	int grpc = cJSON_IsNumber(code) ? code->valueint : -1;

	set_error(c, "%s: HTTP %ld: %.200s", c->endpoints[c->current], status,
		  cJSON_IsString(msg) ? msg->valuestring : "no message");
	switch (grpc) {
	case GRPC_NOT_FOUND:
		return -ENOENT;
	case GRPC_UNAVAILABLE:
		return -EAGAIN;
	case 3: /* invalid argument */
		return -EINVAL;
	case 4: /* deadline exceeded */
		return -ETIMEDOUT;
	case 7: /* permission denied */
	case 16: /* unauthenticated */
		return -EACCES;
	case 8: /* resource exhausted */
		return -ENOSPC;
	default:
		return -EIO;
	}
}

/* POSTs JSON body to path, failing over across endpoints. Returns 0 with
 * *ret the parsed reply of a 200, or a negative errno with c->error set. */
static int post(struct etcd_client *c, const char *path, cJSON *req, cJSON **ret)
{
	char *body = cJSON_PrintUnformatted(req);
	int r = -EIO;

	if (!body) {
		set_error(c, "out of memory");
		return -ENOMEM;
	}
	for (size_t tried = 0; tried < c->n; tried++) {
		struct bounded_buf b = { 0 };
		long status = 0;
		CURLcode cc = CURLE_OK;
		cJSON *json;

		r = post_once(c, c->current, path, body, &status, &b, &cc);
		if (r < 0) {
			set_error(c, "%s%s: %s", c->endpoints[c->current], path,
				  r == -EMSGSIZE ? "reply too large" : curl_easy_strerror(cc));
			free(b.data);
			if (r != -EMSGSIZE && connection_error(cc)) {
				c->current = (c->current + 1) % c->n;
				continue;
			}
			break;
		}
		json = b.data ? cJSON_ParseWithLength(b.data, b.len) : NULL;
		free(b.data);
		if (status != 200) {
			r = json ? grpc_error(c, status, json) : -EIO;
			if (!json)
				set_error(c, "%s%s: HTTP %ld", c->endpoints[c->current], path, status);
			cJSON_Delete(json);
			if (r == -EAGAIN || status == 502 || status == 503) {
				c->current = (c->current + 1) % c->n;
				r = -EAGAIN;
				continue;
			}
			break;
		}
		if (!cJSON_IsObject(json)) {
			cJSON_Delete(json);
			set_error(c, "%s%s: the reply is not a JSON object", c->endpoints[c->current], path);
			r = -EBADMSG;
			break;
		}
		*ret = json;
		r = 0;
		break;
	}
	free(body);
	return r;
}

/* An int64 of a reply: a decimal string per proto3's JSON mapping (a number
 * is taken too); absent means 0. Returns 0, or -EBADMSG. */
static int get_i64(const cJSON *obj, const char *name, int64_t *ret)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
	char *end;
	long long x;

	if (!v || cJSON_IsNull(v)) {
		*ret = 0;
		return 0;
	}
	if (cJSON_IsNumber(v)) {
		if (v->valuedouble != (double)(int64_t)v->valuedouble)
			return -EBADMSG;
		*ret = (int64_t)v->valuedouble;
		return 0;
	}
	if (!cJSON_IsString(v) || !*v->valuestring)
		return -EBADMSG;
	errno = 0;
	x = strtoll(v->valuestring, &end, 10);
	if (errno || *end)
		return -EBADMSG;
	*ret = x;
	return 0;
}

static int add_i64(cJSON *obj, const char *name, int64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%" PRId64, v);
	return cJSON_AddStringToObject(obj, name, buf) ? 0 : -ENOMEM;
}

static int add_b64(cJSON *obj, const char *name, const char *data, size_t len)
{
	gchar *s = g_base64_encode((const guchar *)data, len);
	int r;

	r = cJSON_AddStringToObject(obj, name, s) ? 0 : -ENOMEM;
	g_free(s);
	return r;
}

/* The end of the range of every key that starts with KEY: KEY with its
 * last byte below 0xff incremented and what follows dropped; "\0" (every
 * key) when all are 0xff. */
static size_t prefix_end(const char *key, size_t len, char *out)
{
	memcpy(out, key, len);
	while (len > 0) {
		if ((unsigned char)out[len - 1] < 0xff) {
			out[len - 1]++;
			return len;
		}
		len--;
	}
	out[0] = '\0';
	return 1;
}

static int add_key(struct etcd_client *c, cJSON *obj, const char *key, bool prefix)
{
	size_t len = key ? strlen(key) : 0;
	char end[ETCD_MAX_KEY];
	size_t elen;
	int r;

	if (len == 0 || len > ETCD_MAX_KEY) {
		set_error(c, "a key must have 1 to %d bytes", ETCD_MAX_KEY);
		return -EINVAL;
	}
	r = add_b64(obj, "key", key, len);
	if (r < 0 || !prefix)
		return r;
	elen = prefix_end(key, len, end);
	return add_b64(obj, "range_end", end, elen);
}

/* Decodes base64 S into a NUL-terminated malloc'ed copy. */
static int b64_decode(const char *s, char **ret, size_t *ret_len)
{
	gsize len = 0;
	guchar *d;
	char *out;

	if (!*s) {
		out = strdup("");
		if (!out)
			return -ENOMEM;
		*ret = out;
		*ret_len = 0;
		return 0;
	}
	d = g_base64_decode(s, &len);
	if (!d)
		return -EBADMSG;
	out = malloc(len + 1);
	if (!out) {
		g_free(d);
		return -ENOMEM;
	}
	memcpy(out, d, len);
	out[len] = '\0';
	g_free(d);
	*ret = out;
	*ret_len = len;
	return 0;
}

static bool valid_b64(const char *s)
{
	for (; *s; s++)
		if (!g_ascii_isalnum(*s) && *s != '+' && *s != '/' && *s != '=')
			return false;
	return true;
}

static int parse_kv(const cJSON *o, struct etcd_kv *kv)
{
	const cJSON *k = cJSON_GetObjectItemCaseSensitive(o, "key");
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "value");
	size_t klen;
	int r;

	if (!cJSON_IsObject(o) || !cJSON_IsString(k) || !valid_b64(k->valuestring) ||
	    (v && (!cJSON_IsString(v) || !valid_b64(v->valuestring))))
		return -EBADMSG;
	r = b64_decode(k->valuestring, &kv->key, &klen);
	if (r < 0)
		return r;
	if (klen == 0 || klen > ETCD_MAX_KEY || memchr(kv->key, '\0', klen))
		return -EBADMSG;
	r = b64_decode(v ? v->valuestring : "", &kv->value, &kv->value_len);
	if (r < 0)
		return r;
	if (get_i64(o, "create_revision", &kv->create_revision) < 0 ||
	    get_i64(o, "mod_revision", &kv->mod_revision) < 0 || get_i64(o, "version", &kv->version) < 0 ||
	    get_i64(o, "lease", &kv->lease) < 0)
		return -EBADMSG;
	return 0;
}

/* Appends the "kvs" of a range response to r. */
static int parse_kvs(const cJSON *resp, struct etcd_range *r)
{
	const cJSON *kvs = cJSON_GetObjectItemCaseSensitive(resp, "kvs");
	const cJSON *o;
	size_t add;
	struct etcd_kv *p;
	const cJSON *more = cJSON_GetObjectItemCaseSensitive(resp, "more");

	if (cJSON_IsTrue(more))
		r->more = true;
	if (!kvs || cJSON_IsNull(kvs))
		return 0;
	if (!cJSON_IsArray(kvs))
		return -EBADMSG;
	add = (size_t)cJSON_GetArraySize(kvs);
	if (add == 0)
		return 0;
	p = realloc(r->kvs, (r->n + add) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	r->kvs = p;
	cJSON_ArrayForEach(o, kvs) {
		struct etcd_kv *kv = &r->kvs[r->n];
		int rr;

		memset(kv, 0, sizeof(*kv));
		r->n++;
		rr = parse_kv(o, kv);
		if (rr < 0)
			return rr;
	}
	return 0;
}

static int header_revision(const cJSON *reply, int64_t *ret)
{
	return get_i64(cJSON_GetObjectItemCaseSensitive(reply, "header"), "revision", ret);
}

void etcd_range_clear(struct etcd_range *r)
{
	for (size_t i = 0; i < r->n; i++) {
		free(r->kvs[i].key);
		free(r->kvs[i].value);
	}
	free(r->kvs);
	memset(r, 0, sizeof(*r));
}

void etcd_txn_result_clear(struct etcd_txn_result *r)
{
	etcd_range_clear(&r->ranges);
	memset(r, 0, sizeof(*r));
}

static int bad_reply(struct etcd_client *c, const char *what)
{
	set_error(c, "%s: malformed reply to %s", c->endpoints[c->current], what);
	return -EBADMSG;
}

int etcd_lease_grant(struct etcd_client *c, int64_t ttl_s, int64_t *ret_id, int64_t *ret_ttl)
{
	cJSON *req = cJSON_CreateObject(), *rep = NULL;
	int64_t id, ttl;
	int r;

	if (!req || add_i64(req, "TTL", ttl_s) < 0) {
		cJSON_Delete(req);
		return -ENOMEM;
	}
	r = post(c, "/v3/lease/grant", req, &rep);
	cJSON_Delete(req);
	if (r < 0)
		return r;
	if (get_i64(rep, "ID", &id) < 0 || get_i64(rep, "TTL", &ttl) < 0 || id == 0 || ttl <= 0) {
		const cJSON *err = cJSON_GetObjectItemCaseSensitive(rep, "error");

		if (cJSON_IsString(err))
			set_error(c, "lease grant refused: %.200s", err->valuestring);
		else
			bad_reply(c, "lease grant");
		cJSON_Delete(rep);
		return -EBADMSG;
	}
	cJSON_Delete(rep);
	*ret_id = id;
	*ret_ttl = ttl;
	return 0;
}

int etcd_lease_keepalive(struct etcd_client *c, int64_t id, int64_t *ret_ttl)
{
	cJSON *req = cJSON_CreateObject(), *rep = NULL;
	const cJSON *res;
	int64_t ttl;
	int r;

	if (!req || add_i64(req, "ID", id) < 0) {
		cJSON_Delete(req);
		return -ENOMEM;
	}
	/* The gateway answers the streaming call with one message per request
	 * message: {"result": {...}} or {"error": {...}}. */
	r = post(c, "/v3/lease/keepalive", req, &rep);
	cJSON_Delete(req);
	if (r < 0)
		return r;
	res = cJSON_GetObjectItemCaseSensitive(rep, "result");
	if (!cJSON_IsObject(res)) {
		const cJSON *err = cJSON_GetObjectItemCaseSensitive(rep, "error");
		const cJSON *msg = cJSON_GetObjectItemCaseSensitive(err, "message");

		if (err) {
			set_error(c, "%s: lease keepalive: %.200s", c->endpoints[c->current],
				  cJSON_IsString(msg) ? msg->valuestring : "error");
			r = -EIO;
		} else
			r = bad_reply(c, "lease keepalive");
		cJSON_Delete(rep);
		return r;
	}
	if (get_i64(res, "TTL", &ttl) < 0) {
		cJSON_Delete(rep);
		return bad_reply(c, "lease keepalive");
	}
	cJSON_Delete(rep);
	/* A lease that no longer exists is answered with no TTL (0). */
	if (ttl <= 0) {
		set_error(c, "lease %" PRIx64 " has expired or was revoked", (uint64_t)id);
		return -ENOENT;
	}
	*ret_ttl = ttl;
	return 0;
}

int etcd_lease_revoke(struct etcd_client *c, int64_t id)
{
	cJSON *req = cJSON_CreateObject(), *rep = NULL;
	int r;

	if (!req || add_i64(req, "ID", id) < 0) {
		cJSON_Delete(req);
		return -ENOMEM;
	}
	r = post(c, "/v3/lease/revoke", req, &rep);
	cJSON_Delete(req);
	cJSON_Delete(rep);
	return r;
}

int etcd_lease_timetolive(struct etcd_client *c, int64_t id, int64_t *ret_ttl, int64_t *ret_granted_ttl)
{
	cJSON *req = cJSON_CreateObject(), *rep = NULL;
	int64_t ttl, granted;
	int r;

	if (!req || add_i64(req, "ID", id) < 0) {
		cJSON_Delete(req);
		return -ENOMEM;
	}
	r = post(c, "/v3/lease/timetolive", req, &rep);
	cJSON_Delete(req);
	if (r < 0)
		return r;
	if (get_i64(rep, "TTL", &ttl) < 0 || get_i64(rep, "grantedTTL", &granted) < 0) {
		cJSON_Delete(rep);
		return bad_reply(c, "lease timetolive");
	}
	cJSON_Delete(rep);
	/* A lease that does not exist has TTL -1. */
	if (ttl < 0) {
		set_error(c, "lease %" PRIx64 " has expired or was revoked", (uint64_t)id);
		return -ENOENT;
	}
	*ret_ttl = ttl;
	*ret_granted_ttl = granted;
	return 0;
}

int etcd_range(struct etcd_client *c, const char *key, bool prefix, struct etcd_range *ret)
{
	cJSON *req = cJSON_CreateObject(), *rep = NULL;
	struct etcd_range out = { 0 };
	int r;

	if (!req) {
		set_error(c, "out of memory");
		return -ENOMEM;
	}
	r = add_key(c, req, key, prefix);
	if (r < 0) {
		cJSON_Delete(req);
		return r;
	}
	r = post(c, "/v3/kv/range", req, &rep);
	cJSON_Delete(req);
	if (r < 0)
		return r;
	r = parse_kvs(rep, &out);
	if (r >= 0)
		r = header_revision(rep, &out.revision);
	cJSON_Delete(rep);
	if (r < 0) {
		etcd_range_clear(&out);
		return r == -ENOMEM ? r : bad_reply(c, "range");
	}
	*ret = out;
	return 0;
}

static int put_fields(struct etcd_client *c, cJSON *obj, const char *key, const char *value, size_t len,
		      int64_t lease)
{
	int r = add_key(c, obj, key, false);

	if (r < 0)
		return r;
	if (add_b64(obj, "value", value ? value : "", value ? len : 0) < 0)
		return -ENOMEM;
	if (lease != 0 && add_i64(obj, "lease", lease) < 0)
		return -ENOMEM;
	return 0;
}

int etcd_put(struct etcd_client *c, const char *key, const char *value, size_t len, int64_t lease,
	     int64_t *ret_revision)
{
	cJSON *req = cJSON_CreateObject(), *rep = NULL;
	int64_t rev;
	int r;

	if (!req)
		return -ENOMEM;
	r = put_fields(c, req, key, value, len, lease);
	if (r < 0) {
		cJSON_Delete(req);
		return r;
	}
	r = post(c, "/v3/kv/put", req, &rep);
	cJSON_Delete(req);
	if (r < 0)
		return r;
	r = header_revision(rep, &rev);
	cJSON_Delete(rep);
	if (r < 0)
		return bad_reply(c, "put");
	if (ret_revision)
		*ret_revision = rev;
	return 0;
}

int etcd_delete(struct etcd_client *c, const char *key, bool prefix, int64_t *ret_deleted)
{
	cJSON *req = cJSON_CreateObject(), *rep = NULL;
	int64_t deleted;
	int r;

	if (!req)
		return -ENOMEM;
	r = add_key(c, req, key, prefix);
	if (r < 0) {
		cJSON_Delete(req);
		return r;
	}
	r = post(c, "/v3/kv/deleterange", req, &rep);
	cJSON_Delete(req);
	if (r < 0)
		return r;
	r = get_i64(rep, "deleted", &deleted);
	cJSON_Delete(rep);
	if (r < 0)
		return bad_reply(c, "deleterange");
	if (ret_deleted)
		*ret_deleted = deleted;
	return 0;
}

static const char *const target_names[] = {
	[ETCD_TARGET_CREATE] = "CREATE",
	[ETCD_TARGET_MOD] = "MOD",
	[ETCD_TARGET_VERSION] = "VERSION",
	[ETCD_TARGET_VALUE] = "VALUE",
	[ETCD_TARGET_LEASE] = "LEASE",
};

static const char *const target_fields[] = {
	[ETCD_TARGET_CREATE] = "create_revision",
	[ETCD_TARGET_MOD] = "mod_revision",
	[ETCD_TARGET_VERSION] = "version",
	[ETCD_TARGET_VALUE] = "value",
	[ETCD_TARGET_LEASE] = "lease",
};

static const char *const result_names[] = {
	[ETCD_EQUAL] = "EQUAL",
	[ETCD_NOT_EQUAL] = "NOT_EQUAL",
	[ETCD_GREATER] = "GREATER",
	[ETCD_LESS] = "LESS",
};

static int add_compare(struct etcd_client *c, cJSON *arr, const struct etcd_compare *cmp)
{
	cJSON *o = cJSON_CreateObject();
	int r;

	if (!o || !cJSON_AddItemToArray(arr, o)) {
		cJSON_Delete(o);
		return -ENOMEM;
	}
	if ((unsigned)cmp->target > ETCD_TARGET_LEASE || (unsigned)cmp->result > ETCD_LESS) {
		set_error(c, "a compare has an unknown target or result");
		return -EINVAL;
	}
	r = add_key(c, o, cmp->key, false);
	if (r < 0)
		return r;
	if (!cJSON_AddStringToObject(o, "target", target_names[cmp->target]) ||
	    !cJSON_AddStringToObject(o, "result", result_names[cmp->result]))
		return -ENOMEM;
	if (cmp->target == ETCD_TARGET_VALUE)
		return add_b64(o, "value", cmp->value ? cmp->value : "", cmp->value ? cmp->value_len : 0);
	return add_i64(o, target_fields[cmp->target], cmp->number);
}

static int add_ops(struct etcd_client *c, cJSON *txn, const char *name, const struct etcd_op *ops, size_t n)
{
	cJSON *arr = cJSON_AddArrayToObject(txn, name);

	if (!arr)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		cJSON *o = cJSON_CreateObject(), *inner;
		static const char *const kinds[] = {
			[ETCD_OP_RANGE] = "requestRange",
			[ETCD_OP_PUT] = "requestPut",
			[ETCD_OP_DELETE] = "requestDeleteRange",
		};
		int r;

		if (!o || !cJSON_AddItemToArray(arr, o)) {
			cJSON_Delete(o);
			return -ENOMEM;
		}
		if ((unsigned)ops[i].type > ETCD_OP_DELETE) {
			set_error(c, "a transaction op has an unknown type");
			return -EINVAL;
		}
		inner = cJSON_AddObjectToObject(o, kinds[ops[i].type]);
		if (!inner)
			return -ENOMEM;
		if (ops[i].type == ETCD_OP_PUT)
			r = put_fields(c, inner, ops[i].key, ops[i].value, ops[i].value_len, ops[i].lease);
		else
			r = add_key(c, inner, ops[i].key, false);
		if (r < 0)
			return r;
	}
	return 0;
}

int etcd_txn(struct etcd_client *c, const struct etcd_compare *cmp, size_t ncmp, const struct etcd_op *success,
	     size_t nsuccess, const struct etcd_op *failure, size_t nfailure, struct etcd_txn_result *ret)
{
	cJSON *req = cJSON_CreateObject(), *rep = NULL, *arr;
	struct etcd_txn_result out = { 0 };
	const cJSON *resp;
	int r = -ENOMEM;

	if (!req)
		return -ENOMEM;
	arr = cJSON_AddArrayToObject(req, "compare");
	if (!arr)
		goto fail;
	for (size_t i = 0; i < ncmp; i++) {
		r = add_compare(c, arr, &cmp[i]);
		if (r < 0)
			goto fail;
	}
	r = add_ops(c, req, "success", success, nsuccess);
	if (r < 0)
		goto fail;
	r = add_ops(c, req, "failure", failure, nfailure);
	if (r < 0)
		goto fail;
	r = post(c, "/v3/kv/txn", req, &rep);
	cJSON_Delete(req);
	req = NULL;
	if (r < 0)
		return r;
	/* proto3 drops false: a transaction whose compares failed has no
	 * "succeeded" at all. */
	out.succeeded = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rep, "succeeded"));
	r = header_revision(rep, &out.revision);
	if (r < 0)
		goto bad;
	cJSON_ArrayForEach(resp, cJSON_GetObjectItemCaseSensitive(rep, "responses")) {
		const cJSON *range = cJSON_GetObjectItemCaseSensitive(resp, "response_range");

		if (range) {
			r = parse_kvs(range, &out.ranges);
			if (r < 0)
				goto bad;
		}
	}
	cJSON_Delete(rep);
	*ret = out;
	return 0;
bad:
	cJSON_Delete(rep);
	etcd_txn_result_clear(&out);
	return r == -ENOMEM ? r : bad_reply(c, "txn");
fail:
	cJSON_Delete(req);
	if (r == -ENOMEM)
		set_error(c, "out of memory");
	return r;
}
