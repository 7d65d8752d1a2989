/* Blocking JSON REST client with the providers' retry policies (rest.h). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <openssl/rand.h>

#include "base/backoff.h"
#include "base/buffer.h"
#include "base/clock.h"
#include "base/iso8601.h"

#include "base/file.h"
#include "cloud/rest.h"


struct hdr_ctx {
	struct rest_client *c;
	struct rest_reply *r;
	bool resource_seen; /* an x-ms-ratelimit-remaining-resource line in this response */
};

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
	size_t n = size * nmemb;

	return bounded_buf_append(ud, ptr, n, REST_MAX_BODY) ? n : 0;
}

/* Copies a header value without its trailing CR/LF and surrounding blanks. */
static void copy_value(char *dst, size_t size, const char *v, size_t n)
{
	while (n > 0 && isspace((unsigned char)*v)) {
		v++;
		n--;
	}
	while (n > 0 && isspace((unsigned char)v[n - 1]))
		n--;
	if (n >= size)
		n = size - 1;
	memcpy(dst, v, n);
	dst[n] = '\0';
}

/* Appends a further x-ms-ratelimit-remaining-resource line to the ones of
 * the same response; a line that does not fit whole is dropped, so no
 * policy is ever cut in two. */
static void append_value(char *dst, size_t size, const char *v, size_t n)
{
	size_t len = strlen(dst), add;
	char tmp[512];

	copy_value(tmp, sizeof(tmp), v, n);
	add = strlen(tmp);
	if (add == 0 || len + 1 + add >= size)
		return;
	dst[len] = ',';
	memcpy(dst + len + 1, tmp, add + 1);
}

int64_t rest_parse_retry_after(const char *v, int64_t now_ms)
{
	const int64_t max_s = REST_MAX_RETRY_AFTER_MS / 1000;
	int64_t s = 0;
	const char *p;
	time_t t;

	if (!v || *v == '\0')
		return -1;
	/* delay-seconds is 1*DIGIT with no bound in RFC 9110: count digits
	 * only up to the maximum, so no value can overflow into a negative
	 * (no) wait. */
	for (p = v; *p >= '0' && *p <= '9'; p++)
		if (s < max_s)
			s = s * 10 + (*p - '0');
	if (*p == '\0')
		return (s < max_s ? s : max_s) * 1000;
	t = curl_getdate(v, NULL);
	if (t < 0)
		return -1;
	if ((int64_t)t <= now_ms / 1000)
		return 0;
	if ((int64_t)t - now_ms / 1000 >= max_s)
		return REST_MAX_RETRY_AFTER_MS;
	return (int64_t)t * 1000 - now_ms > 0 ? (int64_t)t * 1000 - now_ms : 0;
}

static size_t on_header(char *buf, size_t size, size_t nitems, void *ud)
{
	struct hdr_ctx *h = ud;
	size_t n = size * nitems;
	const char *colon = memchr(buf, ':', n);
	size_t klen, vlen;
	char tmp[64];

	/* A status line starts a response (an interim or redirected one
	 * before the last): its resource budgets start afresh. */
	if (n >= 5 && strncmp(buf, "HTTP/", 5) == 0)
		h->resource_seen = false;
	if (!colon)
		return n;
	klen = (size_t)(colon - buf);
	vlen = n - klen - 1;
#define IS(name) (klen == sizeof(name) - 1 && strncasecmp(buf, name, klen) == 0)
	if (IS("location"))
		copy_value(h->r->location, sizeof(h->r->location), colon + 1, vlen);
	else if (IS("azure-asyncoperation"))
		copy_value(h->r->async_operation, sizeof(h->r->async_operation), colon + 1, vlen);
	else if (IS("etag"))
		copy_value(h->r->etag, sizeof(h->r->etag), colon + 1, vlen);
	else if (IS("retry-after")) {
		copy_value(tmp, sizeof(tmp), colon + 1, vlen);
		h->r->retry_after_ms = rest_parse_retry_after(tmp, rest_now_ms());
	} else if (IS("x-ms-ratelimit-remaining-subscription-reads")) {
		copy_value(h->c->ratelimit_reads, sizeof(h->c->ratelimit_reads), colon + 1, vlen);
		h->r->ratelimit = true;
	} else if (IS("x-ms-ratelimit-remaining-subscription-writes")) {
		copy_value(h->c->ratelimit_writes, sizeof(h->c->ratelimit_writes), colon + 1, vlen);
		h->r->ratelimit = true;
	} else if (IS("x-ms-ratelimit-remaining-subscription-global-reads")) {
		copy_value(h->c->ratelimit_global_reads, sizeof(h->c->ratelimit_global_reads), colon + 1, vlen);
		h->r->ratelimit = true;
	} else if (IS("x-ms-ratelimit-remaining-subscription-global-writes")) {
		copy_value(h->c->ratelimit_global_writes, sizeof(h->c->ratelimit_global_writes), colon + 1, vlen);
		h->r->ratelimit = true;
	} else if (IS("x-ms-ratelimit-remaining-resource")) {
		/* One line per policy is allowed: keep them all. */
		if (h->resource_seen)
			append_value(h->c->ratelimit_resource, sizeof(h->c->ratelimit_resource), colon + 1, vlen);
		else
			copy_value(h->c->ratelimit_resource, sizeof(h->c->ratelimit_resource), colon + 1, vlen);
		h->resource_seen = true;
		h->r->ratelimit = true;
	}
#undef IS
	return n;
}

/* ----------------------------------------------------------------- sinks */

static void host_sink_log(const struct cloud_sink *s, enum autoscaled_log_level level, const char *msg)
{
	const struct autoscaled_host *host = s->userdata;

	host->log(host, level, "%s", msg);
}

/* Only where the host offers metric(): an older host's struct ends before
 * the member. */
static void host_sink_metric(const struct cloud_sink *s, enum autoscaled_metric metric, const char *label,
			     double value)
{
	const struct autoscaled_host *host = s->userdata;

	host->metric(host, metric, label, value);
}

void cloud_sink_init_host(struct cloud_sink *s, const struct autoscaled_host *host)
{
	*s = (struct cloud_sink){
		.log = host_sink_log,
		.metric = AUTOSCALED_HOST_HAS(host, metric) && host->metric ? host_sink_metric : NULL,
		.userdata = host,
	};
}

void cloud_log(const struct cloud_sink *s, enum autoscaled_log_level level, const char *fmt, ...)
{
	char msg[REST_MAX_MESSAGE];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	s->log(s, level, msg);
}

/* Publishes through the sink's metric when it has one. */
static void publish(const struct rest_client *c, enum autoscaled_metric metric, const char *label, double value)
{
	if (c->sink && c->sink->metric)
		c->sink->metric(c->sink, metric, label, value);
}

/* Publishes one budget given as a bare count ("11998"); anything else is
 * not a count and is skipped. */
static void publish_budget(const struct rest_client *c, const char *label, const char *count, size_t n)
{
	char buf[32], *end;
	double v;

	if (n == 0 || n >= sizeof(buf))
		return;
	memcpy(buf, count, n);
	buf[n] = '\0';
	errno = 0;
	v = strtod(buf, &end);
	if (errno == 0 && *end == '\0' && v >= 0)
		publish(c, AUTOSCALED_METRIC_RATELIMIT_REMAINING, label, v);
}

/* The budgets of the last reply: the subscription's reads and writes, and
 * each resource policy of x-ms-ratelimit-remaining-resource
 * ("Microsoft.Compute/GetVMScaleSet3Min;197,Microsoft.Compute/...;1297"). */
static void publish_budgets(const struct rest_client *c)
{
	const char *p = c->ratelimit_resource;

	publish_budget(c, "subscription-reads", c->ratelimit_reads, strlen(c->ratelimit_reads));
	publish_budget(c, "subscription-writes", c->ratelimit_writes, strlen(c->ratelimit_writes));
	publish_budget(c, "subscription-global-reads", c->ratelimit_global_reads, strlen(c->ratelimit_global_reads));
	publish_budget(c, "subscription-global-writes", c->ratelimit_global_writes, strlen(c->ratelimit_global_writes));
	while (*p) {
		size_t len = strcspn(p, ",");
		const char *semi = memchr(p, ';', len);
		char name[160];

		if (semi && (size_t)(semi - p) < sizeof(name)) {
			memcpy(name, p, (size_t)(semi - p));
			name[semi - p] = '\0';
			publish_budget(c, name, semi + 1, len - (size_t)(semi - p) - 1);
		}
		p += len;
		if (*p == ',')
			p++;
	}
}

void rest_count_error(struct rest_client *c)
{
	c->errors++;
	publish(c, AUTOSCALED_METRIC_API_ERRORS, NULL, 1);
}

/* The REST code's clocks are the daemon's (clock.c); they keep names of
 * their own as the seam the fuzz targets wrap (--wrap=rest_now_ms). */
int64_t rest_now_ms(void)
{
	return clock_wall_ms();
}

int64_t rest_mono_ms(void)
{
	return clock_mono_ms();
}

void rest_sleep_ms(int64_t ms)
{
	struct timespec ts;

	if (ms <= 0)
		return;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000;
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* curl_global_init() is not thread-safe and drivers open handles on the
 * host's worker threads: run it once, whoever comes first. */
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int rest_client_init(struct rest_client *c, const struct cloud_sink *sink, const char *who,
		     enum rest_policy policy)
{
	static const struct rest_client zero;

	*c = zero;
	pthread_once(&curl_once, curl_init);
	if (curl_init_rc != CURLE_OK)
		return -ENOMEM;
	c->curl = curl_easy_init();
	if (!c->curl)
		return -ENOMEM;
	c->sink = sink;
	c->who = who;
	c->policy = policy;
	c->attempts = 6;
	c->backoff_base_ms = 1000;
	c->backoff_max_ms = 32000;
	c->timeout_ms = 60000;
	/* The counters exist from the start, at zero. */
	publish(c, AUTOSCALED_METRIC_RETRIES, NULL, 0);
	publish(c, AUTOSCALED_METRIC_API_ERRORS, NULL, 0);
	return 0;
}

void rest_client_fini(struct rest_client *c)
{
	if (c->curl)
		curl_easy_cleanup(c->curl);
	c->curl = NULL;
}

void rest_reply_clear(struct rest_reply *r)
{
	free(r->body);
	cJSON_Delete(r->json);
	memset(r, 0, sizeof(*r));
	r->retry_after_ms = -1;
}

/* Finds the GCE error reason, e.g. "rateLimitExceeded". */
static bool gce_rate_limited(const struct rest_reply *r)
{
	const cJSON *errs = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r->json, "error"), "errors");
	const cJSON *e;

	if (!cJSON_IsArray(errs))
		return false;
	cJSON_ArrayForEach(e, errs) {
		const cJSON *reason = cJSON_IsObject(e) ? cJSON_GetObjectItemCaseSensitive(e, "reason") : NULL;

		if (cJSON_IsString(reason) && (strcmp(reason->valuestring, "rateLimitExceeded") == 0 ||
					       strcmp(reason->valuestring, "userRateLimitExceeded") == 0))
			return true;
	}
	return false;
}

static bool retryable(const struct rest_client *c, const struct rest_reply *r)
{
	long s = r->status;

	switch (c->policy) {
	case REST_POLICY_GCE:
		return s == 429 || s >= 500 || (s == 403 && gce_rate_limited(r));
	case REST_POLICY_AZURE:
		/* A 409 says another operation on the scale set is in progress:
		 * waiting for it is the right thing, failing would be noise. */
		return s == 408 || s == 409 || s == 429 || s == 500 || s == 502 || s == 503 || s == 504;
	case REST_POLICY_IMDS:
		return s == 404 || s == 410 || s == 429 || s >= 500;
	}
	return false;
}

int64_t rest_retry_wait_ms(const struct rest_client *c, int attempt, int64_t retry_after_ms)
{
	int64_t wait = retry_after_ms >= 0 ? retry_after_ms
					   : backoff_delay_ms(c->backoff_base_ms, c->backoff_max_ms, attempt);

	if (wait > c->backoff_max_ms)
		wait = c->backoff_max_ms;
	return wait > 0 ? wait : 0;
}

/* The path of a URL, without scheme, host and query, for messages. */
static void url_path(const char *url, char *out, size_t size)
{
	const char *p = strstr(url, "://");
	size_t n;

	p = p ? strchr(p + 3, '/') : url;
	if (!p)
		p = "/";
	n = strcspn(p, "?");
	if (n >= size)
		n = size - 1;
	memcpy(out, p, n);
	out[n] = '\0';
}

static int curl_errno(CURLcode rc)
{
	switch (rc) {
	case CURLE_COULDNT_CONNECT:
		return -ECONNREFUSED;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		return -EHOSTUNREACH;
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_WRITE_ERROR:
	case CURLE_FILESIZE_EXCEEDED:
		return -EFBIG;
	default:
		return -EIO;
	}
}

static int perform_once(struct rest_client *c, const struct rest_request *req, struct rest_reply *r, CURLcode *ret_cc)
{
	CURL *h = c->curl;
	struct curl_slist *hl = NULL, *tmp;
	struct bounded_buf b = { 0 };
	struct hdr_ctx hc = { c, r, false };
	char auth[REST_MAX_TOKEN + 32], ct[128];
	CURLcode cc;
	int rc = 0;

	rest_reply_clear(r);
	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_URL, req->url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)c->timeout_ms);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)REST_MAX_BODY);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, &hc);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "autoscaled/" PACKAGE_VERSION);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req->method);
	/* The metadata servers (169.254.169.254, metadata.google.internal)
	 * answer only from the VM itself: a proxy from http_proxy would reach
	 * nothing, or another machine's metadata. */
	if (req->direct)
		curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
	if (strcmp(req->method, "GET") != 0) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, req->body ? req->body : "");
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)(req->body ? strlen(req->body) : 0));
	}
	hl = curl_slist_append(hl, "Accept: application/json");
	/* An empty Expect stops curl from waiting for a 100 on larger bodies. */
	hl = hl ? curl_slist_append(hl, "Expect:") : NULL;
	if (hl && (req->body || strcmp(req->method, "GET") != 0)) {
		snprintf(ct, sizeof(ct), "Content-Type: %s", req->content_type ? req->content_type : "application/json");
		hl = curl_slist_append(hl, ct);
	}
	if (hl && req->bearer) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", req->bearer);
		hl = curl_slist_append(hl, auth);
		explicit_bzero(auth, sizeof(auth));
	}
	for (size_t i = 0; hl && req->headers && req->headers[i]; i++)
		hl = (tmp = curl_slist_append(hl, req->headers[i])) ? tmp : NULL;
	if (!hl) {
		free(b.data);
		return -ENOMEM;
	}
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
	cc = curl_easy_perform(h);
	*ret_cc = cc;
	if (cc == CURLE_OK) {
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
		r->body = b.data ? b.data : strdup("");
		r->len = b.len;
		b.data = NULL;
		if (!r->body)
			rc = -ENOMEM;
		else if (r->len > 0)
			r->json = cJSON_ParseWithLength(r->body, r->len);
	} else {
		rc = b.too_big ? -EFBIG : curl_errno(cc);
	}
	/* The header list holds the token: wipe it before freeing. */
	for (tmp = hl; tmp; tmp = tmp->next)
		explicit_bzero(tmp->data, strlen(tmp->data));
	curl_slist_free_all(hl);
	free(b.data);
	return rc;
}

int rest_call(struct rest_client *c, const struct rest_request *req, struct rest_reply *reply)
{
	const struct cloud_sink *sink = c->sink;
	char path[256], msg[256];
	int attempts = req->no_retry ? 1 : (c->attempts > 0 ? c->attempts : 1);
	int write = strcmp(req->method, "GET") != 0;
	int rc = -EIO;

	url_path(req->url, path, sizeof(path));
	memset(reply, 0, sizeof(*reply));
	reply->retry_after_ms = -1;
	if (c->throttled_until_ms[write] > rest_now_ms()) {
		char until[32];

		iso8601_format(c->throttled_until_ms[write], ISO8601_SECONDS, until, sizeof(until));
		cloud_log(sink, AUTOSCALED_LOG_WARNING, "%s: %s %s: throttled until %s (the server's Retry-After): "
			  "no request before then", c->who, req->method, path, until);
		return -EAGAIN;
	}
	for (int attempt = 1; attempt <= attempts; attempt++) {
		CURLcode cc = CURLE_OK;
		int64_t wait;
		bool again;

		rc = perform_once(c, req, reply, &cc);
		if (rc == -ENOMEM)
			return rc;
		/* The budgets are kept per client (the last values seen) and
		 * published as metrics; each reply that carries them is logged
		 * at debug. */
		if (rc == 0 && reply->ratelimit) {
			cloud_log(sink, AUTOSCALED_LOG_DEBUG, "%s: %s %s: ratelimit remaining reads '%s' writes '%s' "
				  "global reads '%s' global writes '%s' resource '%s'", c->who, req->method, path,
				  c->ratelimit_reads, c->ratelimit_writes, c->ratelimit_global_reads,
				  c->ratelimit_global_writes, c->ratelimit_resource);
			publish_budgets(c);
		}
		again = rc != 0 ? rc != -EFBIG : retryable(c, reply);
		if (!again)
			return rc;
		/* The server named a time before which it takes no request,
		 * longer than we may wait in one call: a retry before then
		 * would be refused too, and count against the budget. */
		if (rc == 0 && reply->retry_after_ms > c->backoff_max_ms) {
			char until[32];

			c->throttled_until_ms[write] = rest_now_ms() + reply->retry_after_ms;
			iso8601_format(c->throttled_until_ms[write], ISO8601_SECONDS, until, sizeof(until));
			cloud_log(sink, AUTOSCALED_LOG_ERROR, "%s: %s %s: HTTP %ld (%s): throttled until %s (Retry-After "
				  "%lld s, longer than retry_max %lld s): no request before then", c->who, req->method,
				  path, reply->status, rest_error_message(reply, msg, sizeof(msg)), until,
				  (long long)(reply->retry_after_ms / 1000), (long long)(c->backoff_max_ms / 1000));
			rest_count_error(c);
			rest_reply_clear(reply);
			return -EAGAIN;
		}
		if (attempt == attempts)
			break;
		wait = rest_retry_wait_ms(c, attempt, rc == 0 ? reply->retry_after_ms : -1);
		if (rc == 0)
			cloud_log(sink, AUTOSCALED_LOG_WARNING, "%s: %s %s: HTTP %ld (%s), retrying in %lld ms (try %d of %d)",
				  c->who, req->method, path, reply->status, rest_error_message(reply, msg, sizeof(msg)),
				  (long long)wait, attempt, attempts);
		else
			cloud_log(sink, AUTOSCALED_LOG_WARNING, "%s: %s %s: %s, retrying in %lld ms (try %d of %d)", c->who,
				  req->method, path, curl_easy_strerror(cc), (long long)wait, attempt, attempts);
		c->retries++;
		publish(c, AUTOSCALED_METRIC_RETRIES, NULL, 1);
		rest_sleep_ms(wait);
	}
	rest_count_error(c);
	if (rc == 0)
		cloud_log(sink, AUTOSCALED_LOG_ERROR, "%s: %s %s: HTTP %ld (%s), giving up after %d tries", c->who,
			  req->method, path, reply->status, rest_error_message(reply, msg, sizeof(msg)), attempts);
	else
		cloud_log(sink, AUTOSCALED_LOG_ERROR, "%s: %s %s: %s, giving up after %d tries", c->who, req->method, path,
			  strerror(-rc), attempts);
	return rc;
}

const char *rest_error_message(const struct rest_reply *r, char *buf, size_t size)
{
	const cJSON *err = cJSON_GetObjectItemCaseSensitive(r->json, "error");
	const cJSON *m = NULL, *code = NULL;

	if (cJSON_IsObject(err)) {
		m = cJSON_GetObjectItemCaseSensitive(err, "message");
		code = cJSON_GetObjectItemCaseSensitive(err, "code");
	} else if (cJSON_IsString(err)) {
		m = cJSON_GetObjectItemCaseSensitive(r->json, "error_description");
		code = err;
	} else {
		m = cJSON_GetObjectItemCaseSensitive(r->json, "message");
		code = cJSON_GetObjectItemCaseSensitive(r->json, "code");
	}
	if (cJSON_IsString(code) && cJSON_IsString(m))
		snprintf(buf, size, "%s: %s", code->valuestring, m->valuestring);
	else if (cJSON_IsString(m))
		snprintf(buf, size, "%s", m->valuestring);
	else
		snprintf(buf, size, "HTTP %ld", r->status);
	return buf;
}

int rest_status_errno(long status)
{
	switch (status) {
	case 400:
	case 422:
		return -EINVAL;
	case 401:
	case 403:
		return -EACCES;
	case 404:
		return -ENOENT;
	case 408:
	case 504:
		return -ETIMEDOUT;
	case 409:
	case 412:
		return -EBUSY;
	case 429:
		return -EAGAIN;
	case 502:
	case 503:
		return -EHOSTUNREACH;
	default:
		return -EIO;
	}
}

int rest_uuid4(char out[37])
{
	unsigned char b[16];

	if (RAND_bytes(b, sizeof(b)) != 1)
		return -EIO;
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
		 b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
	return 0;
}

int rest_escape(const char *s, char *out, size_t size)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (isalnum(ch) || ch == '-' || ch == '_' || ch == '.' || ch == '~') {
			if (o + 1 >= size)
				return -ENAMETOOLONG;
			out[o++] = (char)ch;
		} else {
			if (o + 3 >= size)
				return -ENAMETOOLONG;
			out[o++] = '%';
			out[o++] = hex[ch >> 4];
			out[o++] = hex[ch & 15];
		}
	}
	if (size == 0)
		return -ENAMETOOLONG;
	out[o] = '\0';
	return 0;
}

int rest_read_private_file(const struct cloud_sink *sink, const char *who, const char *path, char **ret,
			   size_t max)
{
	struct stat st;
	char *buf;
	size_t len, read_len;
	int rc;

	/* A FIFO must not block the daemon: the daemon's own safe open. */
	rc = file_read_all(path, FILE_PRIVATE, max, &buf, &read_len, &st);
	if (rc == -EPERM) {
		cloud_log(sink, AUTOSCALED_LOG_ERROR,
			  "%s: '%s' is accessible by group or others (mode %04o, owner %u:%u); refusing it: %s",
			  who, path, (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid, (unsigned)st.st_gid,
			  FILE_PRIVATE_RULE);
		return rc;
	}
	if (rc == -EINVAL || rc == -EISDIR) {
		cloud_log(sink, AUTOSCALED_LOG_ERROR, "%s: '%s' is not a regular file", who, path);
		return -EINVAL;
	}
	if (rc == -EFBIG) {
		cloud_log(sink, AUTOSCALED_LOG_ERROR, "%s: '%s' is larger than %zu bytes", who, path, max);
		return rc;
	}
	if (rc == -ENOMEM)
		return rc;
	if (rc < 0) {
		cloud_log(sink, AUTOSCALED_LOG_ERROR, "%s: cannot read '%s': %s", who, path, strerror(-rc));
		return rc;
	}
	len = read_len;
	while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
		len--;
	buf[len] = '\0';
	*ret = buf;
	return 0;
}
