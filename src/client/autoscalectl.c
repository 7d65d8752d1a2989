/* autoscalectl: the command-line client of the admin API (see admin.h and
 * autoscalectl(1)).
 *
 * Each command is one HTTP request over the daemon's Unix socket. The
 * output is a table or readable lines, or with --json the daemon's answer
 * as is. Exit codes: 0 done, 1 refused by the daemon (or its error), 2
 * usage, 3 cannot connect (no daemon, or no permission), 4 no such group. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>

#include "base/clock.h"
#include "base/iso8601.h"

/* The daemon's default agent.admin_socket: one definition, in configure. */
#define DEFAULT_SOCKET AUTOSCALED_ADMIN_SOCKET
#define MAX_RESPONSE (16 * 1024 * 1024)
#define TIMEOUT_S 30L

enum exit_code {
	EXIT_OK = 0,
	EXIT_REFUSED = 1,
	EXIT_USAGE = 2,
	EXIT_CONNECT = 3,
	EXIT_NOT_FOUND = 4,
};

struct ctl {
	const char *socket;
	bool json;
	const char *for_;
	const char *until;
	bool force;
	bool no_legend; /* tables without their header line, for scripts */
	/* explain --what-if: inputs replacing what the daemon observes. */
	bool what_if;
	const char *values[32];
	size_t n_values;
	const char *current;
	bool partial;
};

struct buf {
	char *p;
	size_t len;
};

static size_t on_data(char *p, size_t size, size_t n, void *userdata)
{
	struct buf *b = userdata;
	char *q;

	if (b->len + size * n > MAX_RESPONSE)
		return 0;
	q = realloc(b->p, b->len + size * n + 1);
	if (!q)
		return 0;
	memcpy(q + b->len, p, size * n);
	b->len += size * n;
	q[b->len] = '\0';
	b->p = q;
	return size * n;
}

/* Says why the socket cannot be reached, as precisely as the system tells. */
static void explain_connect(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd, e = 0;

	if (strlen(path) < sizeof(sa.sun_path)) {
		memcpy(sa.sun_path, path, strlen(path) + 1);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0) {
			if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
				e = errno;
			close(fd);
		}
	}
	if (e == EACCES || e == EPERM)
		fprintf(stderr, "autoscalectl: permission denied on '%s' (run as root or as a member of the "
				"socket's group)\n", path);
	else if (e == ENOENT || e == ECONNREFUSED)
		fprintf(stderr, "autoscalectl: cannot connect to '%s': %s (is autoscaled running?)\n", path,
			strerror(e));
	else
		fprintf(stderr, "autoscalectl: cannot connect to '%s'%s%s\n", path, e ? ": " : "",
			e ? strerror(e) : "");
}

/* Performs one request. On a 2xx answer stores the parsed JSON in *ret and
 * returns EXIT_OK; otherwise prints the daemon's message and returns the
 * exit code. */
static int request(const struct ctl *c, const char *method, const char *path, const char *body, cJSON **ret)
{
	struct buf b = {0};
	char url[1024];
	struct curl_slist *hdr = NULL;
	long status = 0;
	CURLcode cr;
	CURL *h;
	cJSON *o;
	int rc;

	h = curl_easy_init();
	if (!h) {
		fprintf(stderr, "autoscalectl: cannot initialise libcurl\n");
		return EXIT_REFUSED;
	}
	snprintf(url, sizeof(url), "http://localhost%s", path);
	curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, c->socket);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, TIMEOUT_S);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	if (body) {
		hdr = curl_slist_append(hdr, "Content-Type: application/json");
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	}
	cr = curl_easy_perform(h);
	if (cr == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(hdr);
	curl_easy_cleanup(h);
	if (cr == CURLE_COULDNT_CONNECT) {
		explain_connect(c->socket);
		free(b.p);
		return EXIT_CONNECT;
	}
	if (cr != CURLE_OK) {
		fprintf(stderr, "autoscalectl: request to '%s' failed: %s\n", c->socket, curl_easy_strerror(cr));
		free(b.p);
		return EXIT_CONNECT;
	}
	o = b.p ? cJSON_Parse(b.p) : NULL;
	if (status >= 200 && status < 300) {
		free(b.p);
		if (!o) {
			fprintf(stderr, "autoscalectl: the daemon's answer is not JSON\n");
			return EXIT_REFUSED;
		}
		*ret = o;
		return EXIT_OK;
	}
	rc = status == 404 ? EXIT_NOT_FOUND : EXIT_REFUSED;
	if (c->json && o) {
		char *t = cJSON_Print(o);

		if (t)
			puts(t);
		free(t);
	}
	fprintf(stderr, "autoscalectl: %s (HTTP %ld)\n",
		cJSON_GetStringValue(cJSON_GetObjectItem(o, "error")) ?: (b.p ? b.p : "no answer"), status);
	cJSON_Delete(o);
	free(b.p);
	return rc;
}

static void print_json(const cJSON *o)
{
	char *t = cJSON_Print(o);

	if (t)
		puts(t);
	free(t);
}

static const char *str(const cJSON *o, const char *key, const char *def)
{
	const char *s = cJSON_GetStringValue(cJSON_GetObjectItem(o, key));

	return s ? s : def;
}

/* A number field as text: "-" when absent or null. */
static const char *num(const cJSON *o, const char *key, char *buf, size_t len)
{
	const cJSON *v = cJSON_GetObjectItem(o, key);

	if (!cJSON_IsNumber(v))
		return "-";
	snprintf(buf, len, "%g", v->valuedouble);
	return buf;
}

/* --------------------------------------------------------------- views */

static void print_status(const cJSON *o, bool legend)
{
	const cJSON *g;
	char a[32], b[32];
	bool cluster = false;

	/* A daemon in a cluster names each group's owner: one more column. */
	cJSON_ArrayForEach(g, cJSON_GetObjectItem(o, "groups"))
		cluster = cluster || cJSON_GetObjectItem(g, "owner") != NULL;
	if (legend && cluster)
		printf("%-20s %7s %7s  %-16s %-22s %-24s %s\n", "GROUP", "CURRENT", "DESIRED", "PROFILE", "STATE",
		       "OWNER", "LAST DECISION");
	else if (legend)
		printf("%-20s %7s %7s  %-16s %-22s %s\n", "GROUP", "CURRENT", "DESIRED", "PROFILE", "STATE",
		       "LAST DECISION");
	cJSON_ArrayForEach(g, cJSON_GetObjectItem(o, "groups"))
	{
		char state[64] = "";
		const cJSON *pin = cJSON_GetObjectItem(g, "pinned");
		const char *fl = str(g, "in_flight", NULL);
		size_t n;

		if (cJSON_IsTrue(cJSON_GetObjectItem(g, "paused")))
			snprintf(state, sizeof(state), "paused");
		if (cJSON_IsNumber(pin)) {
			n = strlen(state);
			snprintf(state + n, sizeof(state) - n, "%spinned at %d", n ? "," : "", pin->valueint);
		}
		if (fl) {
			n = strlen(state);
			snprintf(state + n, sizeof(state) - n, "%sscaling %s", n ? "," : "", fl);
		}
		if (cJSON_IsTrue(cJSON_GetObjectItem(g, "dry_run"))) {
			n = strlen(state);
			snprintf(state + n, sizeof(state) - n, "%sdry run", n ? "," : "");
		}
		if (cluster) {
			char owner[96];

			snprintf(owner, sizeof(owner), "%s%s%s", str(g, "owner", "(none)"),
				 cJSON_IsTrue(cJSON_GetObjectItem(g, "acting_here")) ? " (here)" : "",
				 cJSON_IsTrue(cJSON_GetObjectItem(g, "orphaned")) ? " ORPHANED" : "");
			printf("%-20s %7s %7s  %-16s %-22s %-24s %s\n", str(g, "name", "?"),
			       num(g, "current", a, sizeof(a)), num(g, "desired", b, sizeof(b)), str(g, "profile", "-"),
			       state[0] ? state : "active", owner, str(g, "explanation", "-"));
			continue;
		}
		printf("%-20s %7s %7s  %-16s %-22s %s\n", str(g, "name", "?"), num(g, "current", a, sizeof(a)),
		       num(g, "desired", b, sizeof(b)), str(g, "profile", "-"), state[0] ? state : "active",
		       str(g, "explanation", "-"));
	}
}

/* `cluster`: this agent and its lease, the members, and each group's
 * owner as the agent last read it from etcd. */
static void print_cluster(const cJSON *o, bool legend)
{
	const cJSON *lease = cJSON_GetObjectItem(o, "lease"), *x;
	char a[32], b[32], c[32];

	printf("agent %s (weight %s) under %s: lease %s %s", str(o, "agent", "?"), num(o, "weight", a, sizeof(a)),
	       str(o, "prefix", "?"), str(lease, "id", "none"),
	       cJSON_IsTrue(cJSON_GetObjectItem(lease, "valid")) ? "valid" : "NOT VALID (acting on nothing)");
	x = cJSON_GetObjectItem(lease, "left_ms");
	if (cJSON_IsTrue(cJSON_GetObjectItem(lease, "valid")) && cJSON_IsNumber(x))
		printf(", %.1f s left", x->valuedouble / 1000.0);
	printf("; %s renewals, %s failed, %s lost\n", num(lease, "renewals", a, sizeof(a)),
	       num(lease, "renew_failures", b, sizeof(b)), num(lease, "lost", c, sizeof(c)));
	if (str(o, "error", NULL))
		printf("last etcd error: %s\n", str(o, "error", ""));
	printf("\n");
	if (legend)
		printf("%-24s %7s %-24s %8s %s\n", "MEMBER", "WEIGHT", "HOST", "PID", "REGISTERED");
	cJSON_ArrayForEach(x, cJSON_GetObjectItem(o, "members"))
	{
		const cJSON *age = cJSON_GetObjectItem(x, "age_s");

		if (cJSON_IsNumber(age))
			snprintf(c, sizeof(c), "%.0f s ago", age->valuedouble);
		else
			snprintf(c, sizeof(c), "-");
		printf("%-24s %7s %-24s %8s %s\n", str(x, "name", "?"), num(x, "weight", a, sizeof(a)),
		       str(x, "host", "-"), num(x, "pid", b, sizeof(b)), c);
	}
	printf("\n");
	if (legend)
		printf("%-20s %-24s %10s %s\n", "GROUP", "OWNER", "TOKEN", "ACTING HERE");
	cJSON_ArrayForEach(x, cJSON_GetObjectItem(o, "groups"))
	printf("%-20s %-24s %10s %s\n", str(x, "name", "?"), str(x, "owner", "(none)"), num(x, "token", a, sizeof(a)),
	       cJSON_IsTrue(cJSON_GetObjectItem(x, "acting_here")) ? "yes" : "no");
}

static void print_show(const cJSON *o)
{
	const cJSON *x;
	char a[32], b[32];

	printf("group:        %s\n", str(o, "name", "?"));
	printf("driver:       %s\n", str(o, "driver", "-"));
	printf("current:      %s\n", num(o, "current", a, sizeof(a)));
	printf("desired:      %s\n", num(o, "desired", a, sizeof(a)));
	printf("profile:      %s [%s, %s]\n", str(o, "profile", "-"), num(o, "min", a, sizeof(a)),
	       num(o, "max", b, sizeof(b)));
	printf("dry run:      %s\n", cJSON_IsTrue(cJSON_GetObjectItem(o, "dry_run")) ? "yes" : "no");
	x = cJSON_GetObjectItem(o, "pause");
	if (cJSON_IsObject(x))
		printf("paused:       until %s\n", str(x, "until", "resumed"));
	else
		printf("paused:       no\n");
	x = cJSON_GetObjectItem(o, "pin");
	if (cJSON_IsObject(x))
		printf("pinned:       %s until %s%s\n", num(x, "count", a, sizeof(a)), str(x, "until", "-"),
		       cJSON_IsTrue(cJSON_GetObjectItem(x, "forced")) ? " (forced)" : "");
	else
		printf("pinned:       no\n");
	x = cJSON_GetObjectItem(o, "in_flight");
	if (cJSON_IsObject(x))
		printf("in flight:    scale %s from %s to %s since %s\n", str(x, "direction", "?"),
		       num(x, "from", a, sizeof(a)), num(x, "to", b, sizeof(b)), str(x, "started", "-"));
	else
		printf("in flight:    none\n");
	if (str(o, "no_scale_in_before", NULL))
		printf("safe start:   no scale-in before %s\n", str(o, "no_scale_in_before", ""));
	x = cJSON_GetObjectItem(o, "last_error");
	if (cJSON_IsObject(x))
		printf("last error:   %s at %s: %s\n", str(x, "operation", "?"), str(x, "time", "?"),
		       str(x, "message", str(x, "error", "")));
	x = cJSON_GetObjectItem(o, "last_decision");
	if (cJSON_IsObject(x))
		printf("last:         %s at %s: %s\n", str(x, "action", "?"), str(x, "time", "?"),
		       str(x, "explanation", ""));
	else
		printf("last:         no decision yet\n");
}

/* The forecast line under a signal: what it predicts one boot time ahead
 * and what that needs, and whether the engine acted on it. */
static void print_signal_forecast(const cJSON *d, const cJSON *s)
{
	const cJSON *f = cJSON_GetObjectItem(s, "forecast");
	char a[32], b[32], c[32], e[32];

	if (!cJSON_IsObject(f))
		return;
	printf("  %-12s forecast %s in %s s (boot time) -> %s instances, keep %s%s\n", "",
	       num(f, "value", a, sizeof(a)), num(d, "boot_time_s", b, sizeof(b)), num(f, "recommendation", c, sizeof(c)),
	       num(f, "keep", e, sizeof(e)),
	       strcmp(str(f, "mode", ""), "observe") == 0 ? " (observe: not acted on)"
	       : cJSON_IsTrue(cJSON_GetObjectItem(f, "raised")) ? " (raised the count)" : "");
	if (cJSON_IsNumber(cJSON_GetObjectItem(f, "service_level"))) {
		const cJSON *sh = cJSON_GetObjectItem(f, "service_short");

		if (cJSON_IsNumber(sh))
			snprintf(c, sizeof(c), "%.2f %%", 100.0 * sh->valuedouble);
		else
			snprintf(c, sizeof(c), "-");
		printf("  %-12s service level %s: short in %s of the samples (about a day), quantiles moved by %s "
		       "typical errors\n",
		       "", num(f, "service_level", a, sizeof(a)), c, num(f, "service_offset", b, sizeof(b)));
	}
}

/* Forecast against actual: each recent decision's group total set against
 * the forecast made one boot time before it (the newest record at or before
 * that time), signal by signal. */
static void print_forecast(const cJSON *o)
{
	const cJSON *decs = cJSON_GetObjectItem(o, "decisions"), *d, *p;
	bool any = false;

	printf("%-20s %-12s %12s %12s %9s %9s\n", "time", "signal", "actual", "forecast", "error %", "covered");
	cJSON_ArrayForEach(d, decs)
	{
		const cJSON *s;
		int i = 0;

		cJSON_ArrayForEach(s, cJSON_GetObjectItem(d, "signals"))
		{
			const cJSON *f = cJSON_GetObjectItem(s, "forecast"), *now = cJSON_GetObjectItem(f, "now");
			const cJSON *best = NULL;
			double t = cJSON_GetNumberValue(cJSON_GetObjectItem(f, "made_ms")), best_t = -1;

			if (!cJSON_IsObject(f) || !cJSON_IsNumber(now)) {
				i++;
				continue;
			}
			cJSON_ArrayForEach(p, decs)
			{
				const cJSON *pf = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(p, "signals"), i),
								      "forecast");
				double pt = cJSON_GetNumberValue(cJSON_GetObjectItem(pf, "made_ms"));
				double pfor = cJSON_GetNumberValue(cJSON_GetObjectItem(pf, "for_ms"));

				if (cJSON_IsObject(pf) && pfor <= t && pt > best_t) {
					best = pf;
					best_t = pt;
				}
			}
			if (best) {
				double fv = cJSON_GetNumberValue(cJSON_GetObjectItem(best, "value")), av = now->valuedouble;

				printf("%-20s %-12s %12.6g %12.6g %9.1f %9s\n", str(d, "time", "?"), str(s, "name", "?"), av,
				       fv, av != 0 ? 100.0 * (fv - av) / av : 0.0, av <= fv ? "yes" : "no");
				any = true;
			}
			i++;
		}
	}
	if (!any)
		printf("(no forecast made one boot time before a recorded decision yet)\n");
}

static void print_record(const cJSON *d)
{
	const cJSON *s;
	char a[32], b[32], c[32];

	printf("%s at %s, profile %s [%s, %s]:\n  %s\n", str(d, "group", "?"), str(d, "time", "?"),
	       str(d, "profile", "-"), num(d, "min", a, sizeof(a)), num(d, "max", b, sizeof(b)),
	       str(d, "explanation", ""));
	printf("signals:\n");
	cJSON_ArrayForEach(s, cJSON_GetObjectItem(d, "signals"))
	{
		if (cJSON_IsTrue(cJSON_GetObjectItem(s, "valid")))
			printf("  %-12s value %s, target %s -> %s instances%s\n", str(s, "name", "?"),
			       num(s, "value", a, sizeof(a)), num(s, "target", b, sizeof(b)),
			       num(s, "recommendation", c, sizeof(c)),
			       cJSON_IsTrue(cJSON_GetObjectItem(s, "within_tolerance")) ? " (within tolerance)" : "");
		else
			printf("  %-12s invalid: %s\n", str(s, "name", "?"), str(s, "reason", "no data"));
		print_signal_forecast(d, s);
	}
	cJSON_ArrayForEach(s, cJSON_GetObjectItem(d, "rules"))
		printf("  rule %s on %s (scale %s): %s%s\n", num(s, "index", a, sizeof(a)), str(s, "signal", "?"),
		       str(s, "direction", "?"),
		       cJSON_IsTrue(cJSON_GetObjectItem(s, "fired")) ? "fired" : "not fired",
		       cJSON_IsTrue(cJSON_GetObjectItem(s, "in_cooldown")) ? " (cooldown)" : "");
	/* Each number needs its own buffer: they are all formatted before
	 * printf reads any of them. */
	{
		char s1[32], s2[32], s3[32], s4[32], s5[32], s6[32];

		printf("steps: current %s, combined %s, clamped %s, stabilized %s, rate-limited %s, final %s\n",
		       num(d, "current", s1, sizeof(s1)), num(d, "combined", s2, sizeof(s2)),
		       num(d, "clamped", s3, sizeof(s3)), num(d, "stabilized", s4, sizeof(s4)),
		       num(d, "rate_limited", s5, sizeof(s5)), num(d, "desired", s6, sizeof(s6)));
	}
	printf("action: %s (hold: %s)%s%s%s\n", str(d, "action", "?"), str(d, "hold", "none"),
	       str(d, "override", NULL) ? ", " : "", str(d, "override", ""),
	       cJSON_IsTrue(cJSON_GetObjectItem(d, "dry_run")) ? ", dry run" : "");
}

static void print_explain(const cJSON *o)
{
	const cJSON *d = cJSON_GetObjectItem(o, "last_decision");

	if (!cJSON_IsObject(d)) {
		printf("%s: no decision yet\n", str(o, "name", "?"));
		return;
	}
	print_record(d);
}

/* explain GROUP --what-if: the body of the what-if request, or NULL after
 * saying what is wrong. */
static cJSON *what_if_body(const struct ctl *c)
{
	cJSON *body = cJSON_CreateObject(), *values = cJSON_AddObjectToObject(body, "values");
	char name[256], *end;

	if (!values)
		goto fail;
	for (size_t i = 0; i < c->n_values; i++) {
		const char *eq = strchr(c->values[i], '=');
		double v;

		if (!eq || eq == c->values[i] || (size_t)(eq - c->values[i]) >= sizeof(name)) {
			fprintf(stderr, "autoscalectl: --value '%s' is not SIGNAL=NUMBER\n", c->values[i]);
			goto fail;
		}
		memcpy(name, c->values[i], (size_t)(eq - c->values[i]));
		name[eq - c->values[i]] = '\0';
		errno = 0;
		v = strtod(eq + 1, &end);
		if (errno || end == eq + 1 || *end || !isfinite(v)) {
			fprintf(stderr, "autoscalectl: the value '%s' of signal '%s' is not a number\n", eq + 1, name);
			goto fail;
		}
		if (cJSON_GetObjectItemCaseSensitive(values, name)) {
			fprintf(stderr, "autoscalectl: signal '%s' is given twice\n", name);
			goto fail;
		}
		cJSON_AddNumberToObject(values, name, v);
	}
	if (c->current) {
		long n;

		errno = 0;
		n = strtol(c->current, &end, 10);
		if (errno || *end || end == c->current || n < 0 || n > 1000000) {
			fprintf(stderr, "autoscalectl: --current '%s' is not a count of instances\n", c->current);
			goto fail;
		}
		cJSON_AddNumberToObject(body, "current", (double)n);
	}
	if (c->partial)
		cJSON_AddBoolToObject(body, "partial", true);
	return body;
fail:
	cJSON_Delete(body);
	return NULL;
}

/* How long ago the daemon's UTC time `iso` was, as "45s", "3m12s",
 * "2h05m" or "3d04h"; "-" when unknown or unreadable. */
static const char *age(const char *iso, time_t now, char *buf, size_t len)
{
	int64_t ms;
	long long s;

	if (iso8601_parse(iso, 0, &ms) < 0)
		return "-";
	s = (long long)now - (long long)(ms / 1000);
	if (s < 0)
		s = 0;
	if (s < 60)
		snprintf(buf, len, "%llds", s);
	else if (s < 3600)
		snprintf(buf, len, "%lldm%02llds", s / 60, s % 60);
	else if (s < 86400)
		snprintf(buf, len, "%lldh%02lldm", s / 3600, s % 3600 / 60);
	else
		snprintf(buf, len, "%lldd%02lldh", s / 86400, s % 86400 / 3600);
	return buf;
}

/* The members as `virsh list` shows domains: one a line. */
static void print_members(const cJSON *o, bool legend)
{
	const cJSON *m, *v = cJSON_GetObjectItem(o, "members");
	time_t now = (time_t)(clock_wall_ms() / 1000);
	char a[32], b[32];

	if (!cJSON_IsArray(v)) {
		printf("%s: not observed yet\n", str(o, "name", "?"));
		return;
	}
	if (legend)
		printf("%-32s %-13s %-5s %-8s %-11s %s\n", "MEMBER", "STATE", "READY", "AGE", "RUNNING FOR", "LOCATION");
	cJSON_ArrayForEach(m, v)
		printf("%-32s %-13s %-5s %-8s %-11s %s\n", str(m, "id", "?"), str(m, "state", "?"),
		       cJSON_IsTrue(cJSON_GetObjectItem(m, "ready")) ? "yes" : "no",
		       age(str(m, "created", NULL), now, a, sizeof(a)),
		       age(str(m, "running_since", NULL), now, b, sizeof(b)), str(m, "location", "-"));
}

static void print_history(const cJSON *o)
{
	const cJSON *d;
	char a[32], b[32];

	cJSON_ArrayForEach(d, cJSON_GetObjectItem(o, "decisions"))
		printf("%s  %-9s %3s -> %-3s %s\n", str(d, "time", "?"), str(d, "action", "?"),
		       num(d, "current", a, sizeof(a)), num(d, "desired", b, sizeof(b)), str(d, "explanation", ""));
}

/* ------------------------------------------------------------ commands */

static int usage(FILE *f, int code)
{
	fprintf(f,
		"usage: autoscalectl [-s SOCKET] [--json] [--no-legend] COMMAND [ARGS]\n"
		"\n"
		"commands:\n"
		"  status                         a table of the groups\n"
		"  show GROUP                     one group in full\n"
		"  explain GROUP                  the last decision, signal by signal\n"
		"  explain GROUP --what-if [--value SIGNAL=NUMBER]... [--current N] [--partial]\n"
		"                                 what the group would decide now with these inputs\n"
		"  history GROUP                  recent decisions\n"
		"  forecast GROUP                 recent forecasts against what came\n"
		"  members GROUP                  the instances: state, readiness, age, location\n"
		"  pause GROUP [--for D|--until T]  evaluate and log, never act\n"
		"  resume GROUP\n"
		"  pin GROUP N --for D|--until T [--force]  hold the group at N instances\n"
		"  unpin GROUP\n"
		"  dry-run GROUP on|off\n"
		"  reload                         re-read the configuration\n"
		"  cluster                        cluster mode: members, owners, this agent's lease\n"
		"\n"
		"options:\n"
		"  -s, --socket PATH   the admin socket (default %s)\n"
		"  -j, --json          print the daemon's JSON answer\n"
		"      --no-legend     tables without their header line (for scripts)\n"
		"  -h, --help          this help\n"
		"\n"
		"exit codes: 0 done, 1 refused, 2 usage, 3 cannot connect, 4 no such group\n",
		DEFAULT_SOCKET);
	return code;
}

/* The group name as a URL path segment. */
static int group_path(const char *group, const char *suffix, char *buf, size_t len)
{
	char *esc = curl_easy_escape(NULL, group, 0);
	int n;

	if (!esc)
		return -ENOMEM;
	n = snprintf(buf, len, "/v1/groups/%s%s", esc, suffix);
	curl_free(esc);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* An expiry object member from --for / --until. */
static void add_expiry(const struct ctl *c, cJSON *o)
{
	if (c->for_)
		cJSON_AddStringToObject(o, "for", c->for_);
	if (c->until)
		cJSON_AddStringToObject(o, "until", c->until);
}

static int run_post(const struct ctl *c, const char *path, cJSON *body, const char *done)
{
	char *text = body ? cJSON_PrintUnformatted(body) : NULL;
	cJSON *o = NULL;
	int rc;

	rc = request(c, "POST", path, text ? text : "", &o);
	free(text);
	if (rc == EXIT_OK) {
		if (c->json)
			print_json(o);
		else if (done)
			puts(done);
	}
	cJSON_Delete(o);
	return rc;
}

static const char *const commands[] = {"status", "show",  "explain", "history", "members", "pause",
				       "resume", "pin",   "unpin",   "dry-run", "reload",  "forecast", "cluster", NULL};

/* Edit distance between a and b, counting a swap of two neighbours as
 * one edit (a typo's usual shape); words longer than 31 bytes are only
 * compared up to there, which is more than any command has. */
static size_t distance(const char *a, const char *b)
{
	size_t d[33][33];
	size_t n = strnlen(a, 32), m = strnlen(b, 32);

	for (size_t i = 0; i <= n; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= m; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= n; i++)
		for (size_t j = 1; j <= m; j++) {
			size_t v = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);

			if (d[i - 1][j] + 1 < v)
				v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	return d[n][m];
}

/* The command `word` was most likely meant as: the only one it begins
 * (an abbreviation), else the nearest within two edits (one for a word of
 * up to three letters); NULL when none is near or two are as near. */
static const char *near_command(const char *word)
{
	const char *best = NULL;
	size_t best_d = 0, len = strlen(word), max = len <= 3 ? 1 : 2;
	bool tie = false;

	for (size_t i = 0; commands[i] && len; i++)
		if (strncmp(commands[i], word, len) == 0) {
			if (best)
				return NULL;
			best = commands[i];
		}
	if (best)
		return best;
	for (size_t i = 0; commands[i]; i++) {
		size_t d = distance(word, commands[i]);

		if (d > max)
			continue;
		if (!best || d < best_d) {
			best = commands[i];
			best_d = d;
			tie = false;
		} else if (d == best_d) {
			tie = true;
		}
	}
	return tie ? NULL : best;
}

/* An unknown command: the near one, or the list, and never the whole
 * usage (it would push the error off the screen). */
static int unknown_command(const char *cmd)
{
	const char *near = near_command(cmd);

	if (near) {
		fprintf(stderr, "autoscalectl: unknown command '%s'; did you mean '%s'?\n", cmd, near);
		return EXIT_USAGE;
	}
	fprintf(stderr, "autoscalectl: unknown command '%s'; the commands are:", cmd);
	for (size_t i = 0; commands[i]; i++)
		fprintf(stderr, " %s", commands[i]);
	fputs(" (autoscalectl --help says more)\n", stderr);
	return EXIT_USAGE;
}

static int command(struct ctl *c, int argc, char **argv)
{
	const char *cmd = argv[0];
	char path[1024], msg[512];
	cJSON *o = NULL, *body;
	int rc;

	if (strcmp(cmd, "cluster") == 0) {
		if (argc != 1)
			return usage(stderr, EXIT_USAGE);
		rc = request(c, "GET", "/v1/cluster", NULL, &o);
		if (rc == EXIT_OK)
			c->json ? print_json(o) : print_cluster(o, !c->no_legend);
		cJSON_Delete(o);
		return rc;
	}
	if (strcmp(cmd, "status") == 0 || strcmp(cmd, "reload") == 0) {
		if (argc != 1)
			return usage(stderr, EXIT_USAGE);
		if (cmd[0] == 'r')
			return run_post(c, "/v1/reload", NULL, "configuration reloaded");
		rc = request(c, "GET", "/v1/groups", NULL, &o);
		if (rc == EXIT_OK)
			c->json ? print_json(o) : print_status(o, !c->no_legend);
		cJSON_Delete(o);
		return rc;
	}
	if (argc < 2)
		return usage(stderr, EXIT_USAGE);
	if (group_path(argv[1], "", path, sizeof(path)) < 0) {
		fprintf(stderr, "autoscalectl: group name too long\n");
		return EXIT_USAGE;
	}
	if (strcmp(cmd, "explain") == 0 && c->what_if) {
		if (argc != 2)
			return usage(stderr, EXIT_USAGE);
		char *text;

		body = what_if_body(c);
		if (!body)
			return EXIT_USAGE;
		text = cJSON_PrintUnformatted(body);
		cJSON_Delete(body);
		if (!text) {
			fprintf(stderr, "autoscalectl: out of memory\n");
			return EXIT_USAGE;
		}
		group_path(argv[1], "/what-if", path, sizeof(path));
		rc = request(c, "POST", path, text, &o);
		free(text);
		if (rc == EXIT_OK)
			c->json ? print_json(o) : print_record(o);
		cJSON_Delete(o);
		return rc;
	}
	if (strcmp(cmd, "show") == 0 || strcmp(cmd, "explain") == 0 || strcmp(cmd, "history") == 0 ||
	    strcmp(cmd, "forecast") == 0) {
		if (argc != 2)
			return usage(stderr, EXIT_USAGE);
		if (cmd[0] == 'h' || cmd[0] == 'f')
			group_path(argv[1], "/decisions", path, sizeof(path));
		rc = request(c, "GET", path, NULL, &o);
		if (rc == EXIT_OK)
			c->json ? print_json(o) : cmd[0] == 's' ? print_show(o) : cmd[0] == 'e' ? print_explain(o)
							      : cmd[0] == 'f' ? print_forecast(o)
											 : print_history(o);
		cJSON_Delete(o);
		return rc;
	}
	if (strcmp(cmd, "members") == 0) {
		if (argc != 2)
			return usage(stderr, EXIT_USAGE);
		rc = request(c, "GET", path, NULL, &o);
		if (rc == EXIT_OK && c->json)
			print_json(cJSON_GetObjectItem(o, "members"));
		else if (rc == EXIT_OK)
			print_members(o, !c->no_legend);
		cJSON_Delete(o);
		return rc;
	}
	if (strcmp(cmd, "pause") == 0) {
		if (argc != 2 || (c->for_ && c->until))
			return usage(stderr, EXIT_USAGE);
		group_path(argv[1], "/pause", path, sizeof(path));
		body = cJSON_CreateObject();
		add_expiry(c, body);
		snprintf(msg, sizeof(msg), "%s paused%s%s", argv[1], c->for_ ? " for " : c->until ? " until " : "",
			 c->for_ ? c->for_ : c->until ? c->until : " until resumed");
		rc = run_post(c, path, body, msg);
		cJSON_Delete(body);
		return rc;
	}
	if (strcmp(cmd, "resume") == 0 || strcmp(cmd, "unpin") == 0) {
		if (argc != 2)
			return usage(stderr, EXIT_USAGE);
		snprintf(msg, sizeof(msg), "%s %s", argv[1], cmd[0] == 'r' ? "resumed" : "unpinned");
		if (cmd[0] == 'r') {
			group_path(argv[1], "/resume", path, sizeof(path));
			return run_post(c, path, NULL, msg);
		}
		group_path(argv[1], "/pin", path, sizeof(path));
		rc = request(c, "DELETE", path, NULL, &o);
		if (rc == EXIT_OK)
			c->json ? print_json(o) : (void)puts(msg);
		cJSON_Delete(o);
		return rc;
	}
	if (strcmp(cmd, "pin") == 0) {
		char *end;
		long n;

		if (argc != 3)
			return usage(stderr, EXIT_USAGE);
		n = strtol(argv[2], &end, 10);
		if (*end || end == argv[2] || n < 0 || n > 1000000) {
			fprintf(stderr, "autoscalectl: '%s' is not a count of instances\n", argv[2]);
			return EXIT_USAGE;
		}
		if (!c->for_ == !c->until) {
			fprintf(stderr, "autoscalectl: a pin needs an expiry: --for DURATION or --until TIME\n");
			return EXIT_USAGE;
		}
		group_path(argv[1], "/pin", path, sizeof(path));
		body = cJSON_CreateObject();
		cJSON_AddNumberToObject(body, "count", (double)n);
		add_expiry(c, body);
		cJSON_AddBoolToObject(body, "force", c->force);
		snprintf(msg, sizeof(msg), "%s pinned at %ld %s %s", argv[1], n, c->for_ ? "for" : "until",
			 c->for_ ? c->for_ : c->until);
		rc = run_post(c, path, body, msg);
		cJSON_Delete(body);
		return rc;
	}
	if (strcmp(cmd, "dry-run") == 0) {
		bool on;

		if (argc != 3 || (strcmp(argv[2], "on") != 0 && strcmp(argv[2], "off") != 0))
			return usage(stderr, EXIT_USAGE);
		on = strcmp(argv[2], "on") == 0;
		group_path(argv[1], "/dry-run", path, sizeof(path));
		body = cJSON_CreateObject();
		cJSON_AddBoolToObject(body, "enabled", on);
		snprintf(msg, sizeof(msg), "%s: dry run %s", argv[1], on ? "on" : "off");
		rc = run_post(c, path, body, msg);
		cJSON_Delete(body);
		return rc;
	}
	return unknown_command(cmd);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"socket", required_argument, NULL, 's'}, {"json", no_argument, NULL, 'j'},
		{"for", required_argument, NULL, 'f'},    {"until", required_argument, NULL, 'u'},
		{"force", no_argument, NULL, 'F'},        {"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},      {"no-legend", no_argument, NULL, 'L'},
		{"what-if", no_argument, NULL, 'W'},      {"value", required_argument, NULL, 'v'},
		{"current", required_argument, NULL, 'n'}, {"partial", no_argument, NULL, 'P'},
		{NULL, 0, NULL, 0},
	};
	struct ctl c = {.socket = getenv("AUTOSCALECTL_SOCKET") ?: DEFAULT_SOCKET};
	int opt, rc, i;

	while ((opt = getopt_long(argc, argv, "s:jh", opts, NULL)) != -1) {
		switch (opt) {
		case 's': c.socket = optarg; break;
		case 'j': c.json = true; break;
		case 'f': c.for_ = optarg; break;
		case 'u': c.until = optarg; break;
		case 'F': c.force = true; break;
		case 'L': c.no_legend = true; break;
		case 'W': c.what_if = true; break;
		case 'v':
			if (c.n_values == sizeof(c.values) / sizeof(c.values[0])) {
				fprintf(stderr, "autoscalectl: too many --value options\n");
				return EXIT_USAGE;
			}
			c.values[c.n_values++] = optarg;
			break;
		case 'n': c.current = optarg; break;
		case 'P': c.partial = true; break;
		case 'h': return usage(stdout, EXIT_OK);
		case 'V': puts("autoscalectl " PACKAGE_VERSION); return EXIT_OK;
		default: return usage(stderr, EXIT_USAGE);
		}
	}
	if (optind >= argc)
		return usage(stderr, EXIT_USAGE);
	for (i = 0; commands[i] && strcmp(commands[i], argv[optind]) != 0; i++)
		;
	if (!commands[i])
		return unknown_command(argv[optind]);
	if ((c.for_ || c.until) && strcmp(argv[optind], "pause") != 0 && strcmp(argv[optind], "pin") != 0) {
		fprintf(stderr, "autoscalectl: --for and --until apply to pause and pin only\n");
		return EXIT_USAGE;
	}
	if ((c.n_values || c.current || c.partial) && !c.what_if) {
		fprintf(stderr, "autoscalectl: --value, --current and --partial apply to explain --what-if only\n");
		return EXIT_USAGE;
	}
	if (c.what_if && strcmp(argv[optind], "explain") != 0) {
		fprintf(stderr, "autoscalectl: --what-if applies to explain only\n");
		return EXIT_USAGE;
	}
	if (c.force && strcmp(argv[optind], "pin") != 0) {
		fprintf(stderr, "autoscalectl: --force applies to pin only\n");
		return EXIT_USAGE;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = command(&c, argc - optind, argv + optind);
	curl_global_cleanup();
	return rc;
}
