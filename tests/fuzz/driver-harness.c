/* End-to-end fuzzing of a cloud driver plugin through a fake transport.
 *
 * The target is linked with --wrap=rest_call, --wrap=rest_now_ms and
 * --wrap=rest_sleep_ms, so that every request the driver and its
 * credentials make (token, get, list, resize, delete, operation polls) is
 * answered from the fuzz input instead of the network, and time is a fake
 * clock that moves one second per reading and jumps over every sleep.
 *
 * The input is a sequence of replies separated by FUZZ_RS (0x1e). Each
 * reply starts with one line "STATUS [RETRY_AFTER_MS [LOCATION [ETAG]]]"
 * (LOCATION fills both Location and Azure-AsyncOperation) followed by the
 * body. When the replies run out, calls fail as a refused connection does.
 * The driver is opened and driven through observe, set_capacity up,
 * remove_instances by count and by id, set_capacity down (which the ABI
 * has it refuse, so the refusal is fuzzed too), and observe again. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver-harness.h"
#include "agent/driver.h"
#include "fuzz.h"

int fuzz_json_header_lines = 1;

static const uint8_t *in;
static size_t in_left;
static int64_t fake_now;

int __real_rest_call(struct rest_client *c, const struct rest_request *req, struct rest_reply *reply);
int __wrap_rest_call(struct rest_client *c, const struct rest_request *req, struct rest_reply *reply);
int64_t __wrap_rest_now_ms(void);
void __wrap_rest_sleep_ms(int64_t ms);

int __wrap_rest_call(struct rest_client *c, const struct rest_request *req, struct rest_reply *reply)
{
	const uint8_t *rs;
	size_t len, hlen;
	char head[512], loc[2048] = "", etag[256] = "";
	long status = 0;
	long long retry = -1;
	const char *body;

	(void)c;
	if (!req || !req->method || !req->url)
		abort(); /* the driver must always say what it asks */
	memset(reply, 0, sizeof(*reply));
	reply->retry_after_ms = -1;
	if (getenv("AUTOSCALED_FUZZ_VERBOSE"))
		fprintf(stderr, "> %s %s%s\n", req->method, req->url, in ? "" : " (no reply left)");
	if (!in)
		return -ECONNREFUSED;
	rs = memchr(in, 0x1e, in_left);
	len = rs ? (size_t)(rs - in) : in_left;
	body = memchr(in, '\n', len);
	hlen = body ? (size_t)(body - (const char *)in) : len;
	snprintf(head, sizeof(head), "%.*s", (int)(hlen < sizeof(head) ? hlen : sizeof(head) - 1), (const char *)in);
	if (sscanf(head, "%ld %lld %2047s %255s", &status, &retry, loc, etag) < 1 || status < 100 || status > 999)
		status = 200;
	reply->status = status;
	if (retry >= 0 && retry <= REST_MAX_RETRY_AFTER_MS)
		reply->retry_after_ms = retry;
	snprintf(reply->location, sizeof(reply->location), "%s", loc);
	snprintf(reply->async_operation, sizeof(reply->async_operation), "%s", loc);
	snprintf(reply->etag, sizeof(reply->etag), "%s", etag);
	body = body ? body + 1 : (const char *)in + len;
	reply->len = (size_t)((const char *)in + len - body);
	reply->body = fuzz_strndup((const uint8_t *)body, reply->len);
	if (reply->len > 0)
		reply->json = cJSON_ParseWithLength(reply->body, reply->len);
	if (rs) {
		in_left -= len + 1;
		in = rs + 1;
	} else {
		in = NULL;
		in_left = 0;
	}
	return 0;
}

int64_t __wrap_rest_now_ms(void)
{
	return fake_now += 1000;
}

void __wrap_rest_sleep_ms(int64_t ms)
{
	if (ms > 0)
		fake_now += ms;
}

static void quiet_log(const struct autoscaled_host *host, enum autoscaled_log_level level, const char *fmt, ...)
{
	char buf[4096];
	va_list ap;

	(void)host;
	/* Format anyway: a bad argument to a format is a finding too. */
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (getenv("AUTOSCALED_FUZZ_VERBOSE"))
		fprintf(stderr, "[%d] %s\n", (int)level, buf);
}

static void metric(const struct autoscaled_host *host, enum autoscaled_metric m, const char *label, double value)
{
	(void)host;
	(void)m;
	(void)value;
	if (label && !label[0])
		abort();
}

struct seen {
	char ids[8][128];
	size_t n;
};

static int on_instance(void *ctx, const struct autoscaled_instance *i)
{
	struct seen *s = ctx;

	if (!i || !i->id)
		abort();
	if (i->state != AUTOSCALED_INSTANCE_PROVISIONING && i->state != AUTOSCALED_INSTANCE_RUNNING &&
	    i->state != AUTOSCALED_INSTANCE_STOPPING)
		abort();
	if (s->n < 8)
		snprintf(s->ids[s->n++], sizeof(s->ids[0]), "%s", i->id);
	return 0;
}

void fuzz_transport_start(const uint8_t *data, size_t size)
{
	in = size ? data : NULL;
	in_left = size;
	fake_now = INT64_C(1767225600000);
}

void fuzz_driver_run(const struct autoscaled_driver *d, const struct autoscaled_option *o, size_t n,
		     const uint8_t *data, size_t size)
{
	struct autoscaled_host host;
	struct autoscaled_driver_instance *h = NULL;
	struct autoscaled_observation obs = { 0 };
	struct seen seen = { 0 };
	const char *ids[2];
	int target = 2;

	/* The daemon's host, so that the options parse as the daemon parses
	 * them (durations such as "5m" need its parse_duration), with the
	 * fuzzer's log and metric checks. */
	driver_host_init(&host, "web", NULL);
	host.log = quiet_log;
	host.metric = metric;
	fuzz_transport_start(data, size);
	if (d->open(&host, o, n, &h) < 0)
		return;
	if (d->observe(h, on_instance, NULL, &seen, &obs) == 0) {
		if (obs.target_size < 0)
			abort(); /* never a negative size */
		target = obs.target_size;
	}
	(void)d->set_capacity(h, target + 2, on_instance, &seen);
	(void)d->observe(h, NULL, NULL, NULL, &obs);
	(void)d->remove_instances(h, 1, NULL, 0, on_instance, &seen);
	if (seen.n > 0) {
		ids[0] = seen.ids[0];
		ids[1] = "no-such-instance";
		(void)d->remove_instances(h, 0, ids, 2, on_instance, &seen);
	}
	(void)d->set_capacity(h, target > 0 ? target - 1 : 0, NULL, NULL);
	(void)d->observe(h, on_instance, NULL, &seen, &obs);
	d->close(h);
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
	return fuzz_json_mutate(data, size, max_size, seed);
}
