/* libvirt driver: its options, parsed from the ABI's plain key/value pairs
 * and checked as a whole; each problem is logged with the option's FILE:LINE. */
#include "libvirt-internal.h"

#include <errno.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void lv_options_free(struct lv_options *o)
{
	free(o->template_name);
	free(o->name_pattern);
	free(o->pool);
	for (size_t i = 0; i < o->n_uris; i++)
		free(o->uris[i]);
	free(o->uris);
	free(o->weights);
	for (size_t i = 0; i < o->warm.n_reseed; i++)
		free(o->warm.reseed[i]);
	free(o->warm.reseed);
	*o = (struct lv_options){ 0 };
}

/* Every option the driver reads, for the near-miss suggestion. */
static const char *const known_keys[] = {
	"uri", "weights", "template", "name_pattern", "pool", "volume_mode", "victim_policy", "shutdown_mode",
	"ready_port", "ready_timeout", "shutdown_timeout", "memory_overcommit", "cpu_overcommit", "tag_recheck", NULL,
};

/* Logs a problem with option `o` (NULL: one that is missing) as a
 * configuration error, "FILE:LINE: libvirt: ...". */
static int bad(const struct autoscaled_host *host, const struct autoscaled_option *o, const char *why)
{
	const char *where = autoscaled_option_where(host, o);

	host->log(host, AUTOSCALED_LOG_ERROR, "%s%slibvirt: option '%s': %s", where ? where : "", where ? ": " : "",
		  o ? o->key : "?", why);
	return -EINVAL;
}

static int unknown(const struct autoscaled_host *host, const struct autoscaled_option *o)
{
	const char *where = autoscaled_option_where(host, o), *near = autoscaled_near_miss(host, o->key, known_keys);

	host->log(host, AUTOSCALED_LOG_ERROR, "%s%slibvirt: unknown option '%s'%s%s%s", where ? where : "",
		  where ? ": " : "", o->key, near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
	return -EINVAL;
}

/* A duration option within [lo_ms, hi_ms], in autoscaled.conf(5)'s syntax. */
static int parse_duration(const struct autoscaled_host *host, const struct autoscaled_option *o, int64_t lo_ms,
			  int64_t hi_ms, const char *range, int64_t *ret)
{
	char why[256];
	int64_t ms;

	if (!o->value || autoscaled_parse_duration(host, o->value, &ms) < 0 || ms < lo_ms || ms > hi_ms) {
		snprintf(why, sizeof(why), "'%s' is not a duration from %s (such as \"30\", \"90s\" or \"1m30s\")",
			 o->value ? o->value : "(a list)", range);
		return bad(host, o, why);
	}
	*ret = ms;
	return 0;
}

static int parse_enum(const struct autoscaled_host *host, const struct autoscaled_option *o, const char *const *names,
		      int *ret)
{
	char why[256];

	if (o->value)
		for (int i = 0; names[i]; i++)
			if (strcmp(o->value, names[i]) == 0) {
				*ret = i;
				return 0;
			}
	snprintf(why, sizeof(why), "'%s' is not one of %s%s%s%s%s", o->value ? o->value : "(a list)", names[0],
		 names[1] ? ", " : "", names[1] ? names[1] : "", names[1] && names[2] ? ", " : "",
		 names[1] && names[2] ? names[2] : "");
	return bad(host, o, why);
}

/* The warm pool's options, "warm_pool.KEY": the daemon writes them from the
 * group's warm_pool block, which it has checked already; they are checked
 * again here for a host that passes them by hand (tests, tools). */
static int parse_warm(const struct autoscaled_host *host, const struct autoscaled_option *p, struct lv_warm_options *w)
{
	static const char *const states[] = { "paused", "saved", "stopped", NULL };
	const char *k = p->key + strlen("warm_pool.");
	int x = 0, e;

	if (strcmp(k, "size") == 0) {
		char *end = NULL;
		long v = p->value ? strtol(p->value, &end, 10) : -1;

		if (!p->value || end == p->value || *end || v < 0 || v > 1000)
			return bad(host, p, "give a number of warm members from 0 to 1000");
		w->size = (int)v;
	} else if (strcmp(k, "state") == 0) {
		if ((e = parse_enum(host, p, states, &x)) < 0)
			return e;
		w->state = x;
	} else if (strcmp(k, "max_age") == 0) {
		return parse_duration(host, p, 0, INT64_C(365) * 86400 * 1000, "0 to 365d", &w->max_age_ms);
	} else if (strcmp(k, "refill") == 0) {
		return parse_duration(host, p, 1000, 86400 * 1000, "1s to 1d", &w->refill_ms);
	} else if (strcmp(k, "warmup") == 0) {
		return parse_duration(host, p, 0, 3600 * 1000, "0 to 1h", &w->warmup_ms);
	} else if (strcmp(k, "return_on_scale_in") == 0) {
		if (!p->value || (strcmp(p->value, "true") != 0 && strcmp(p->value, "false") != 0))
			return bad(host, p, "give true or false");
		w->return_on_scale_in = strcmp(p->value, "true") == 0;
	} else if (strcmp(k, "reseed_command") == 0) {
		if (p->value || p->n_list == 0 || p->list[0][0] != '/')
			return bad(host, p, "give a list of strings starting with an absolute path");
		w->reseed = calloc(p->n_list + 1, sizeof(*w->reseed));
		if (!w->reseed)
			return -ENOMEM;
		for (size_t i = 0; i < p->n_list; i++) {
			if (!(w->reseed[i] = strdup(p->list[i])))
				return -ENOMEM;
			w->n_reseed = i + 1;
		}
	} else {
		return unknown(host, p);
	}
	return 0;
}

int lv_options_parse(const struct autoscaled_host *host, const struct autoscaled_option *v, size_t n,
			 struct lv_options *ret)
{
	static const char *const modes[] = { "clone", "overlay", NULL };
	static const char *const policies[] = { "newest", "oldest", "least-busy", NULL };
	static const char *const shutdowns[] = { "acpi", "agent", NULL };
	struct lv_options o = { .shutdown_timeout_ms = 60 * 1000, .ready_timeout_ms = 1000,
				.tag_recheck_ms = LV_TAG_RECHECK_MS,
				.warm = { .refill_ms = 30 * 1000, .warmup_ms = 60 * 1000 } };
	const struct autoscaled_option *weights = NULL, *pattern = NULL;
	int r = 0, e;

	for (size_t i = 0; i < n; i++) {
		const struct autoscaled_option *p = &v[i];
		char **dst = NULL;

		if (strcmp(p->key, "uri") == 0) {
			size_t k = p->value ? 1 : p->n_list;

			if (k == 0 || k > LV_MAX_HOSTS) {
				r = bad(host, p, "give one URI or a list of 1 to 64");
				continue;
			}
			o.uris = calloc(k, sizeof(*o.uris));
			o.weights = calloc(k, sizeof(*o.weights));
			if (!o.uris || !o.weights) {
				r = -ENOMEM;
				break;
			}
			for (size_t j = 0; j < k; j++) {
				o.uris[j] = strdup(p->value ? p->value : p->list[j]);
				o.weights[j] = 1;
				if (!o.uris[j]) {
					r = -ENOMEM;
					break;
				}
				o.n_uris = j + 1;
			}
		} else if (strcmp(p->key, "weights") == 0) {
			weights = p;
		} else if (strcmp(p->key, "template") == 0) {
			dst = &o.template_name;
		} else if (strcmp(p->key, "name_pattern") == 0) {
			dst = &o.name_pattern;
			pattern = p;
		} else if (strcmp(p->key, "pool") == 0) {
			dst = &o.pool;
		} else if (strcmp(p->key, "volume_mode") == 0) {
			int x = 0;
			if ((e = parse_enum(host, p, modes, &x)) < 0)
				r = e;
			o.volume_mode = x;
		} else if (strcmp(p->key, "victim_policy") == 0) {
			int x = 0;
			if ((e = parse_enum(host, p, policies, &x)) < 0)
				r = e;
			o.policy = x;
		} else if (strcmp(p->key, "shutdown_mode") == 0) {
			int x = 0;
			if ((e = parse_enum(host, p, shutdowns, &x)) < 0)
				r = e;
			o.shutdown_mode = x;
		} else if (strcmp(p->key, "ready_port") == 0) {
			char *end = NULL;
			long port = p->value ? strtol(p->value, &end, 10) : -1;

			if (!p->value || end == p->value || *end || port < 1 || port > 65535)
				r = bad(host, p, "give a TCP port from 1 to 65535");
			else
				o.ready_port = (int)port;
		} else if (strcmp(p->key, "ready_timeout") == 0) {
			if ((e = parse_duration(host, p, 10, 30 * 1000, "10ms to 30s", &o.ready_timeout_ms)) < 0)
				r = e;
		} else if (strcmp(p->key, "tag_recheck") == 0) {
			if ((e = parse_duration(host, p, 0, 3600 * 1000, "0 to 1h", &o.tag_recheck_ms)) < 0)
				r = e;
		} else if (strcmp(p->key, "shutdown_timeout") == 0) {
			if ((e = parse_duration(host, p, 0, 3600 * 1000, "0 to 1h", &o.shutdown_timeout_ms)) < 0)
				r = e;
		} else if (strcmp(p->key, "memory_overcommit") == 0 || strcmp(p->key, "cpu_overcommit") == 0) {
			char *end = NULL;
			double x = p->value ? strtod(p->value, &end) : -1;

			if (!p->value || end == p->value || *end || !(x > 0 && x <= 100))
				r = bad(host, p, "give a ratio above 0, up to 100 (1 = the host's own size)");
			else if (p->key[0] == 'm')
				o.memory_overcommit = x;
			else
				o.cpu_overcommit = x;
		} else if (strncmp(p->key, "warm_pool.", strlen("warm_pool.")) == 0) {
			if ((e = parse_warm(host, p, &o.warm)) < 0)
				r = e;
		} else {
			r = unknown(host, p);
		}
		if (dst) {
			if (!p->value || !*p->value) {
				r = bad(host, p, "give a non-empty string");
				continue;
			}
			free(*dst);
			*dst = strdup(p->value);
			if (!*dst)
				r = -ENOMEM;
		}
	}
	if (r == 0 && o.n_uris == 0) {
		o.uris = calloc(1, sizeof(*o.uris));
		o.weights = calloc(1, sizeof(*o.weights));
		if (!o.uris || !o.weights || !(o.uris[0] = strdup("qemu:///system")))
			r = -ENOMEM;
		else {
			o.weights[0] = 1;
			o.n_uris = 1;
		}
	}
	if (r == 0 && weights) {
		if (weights->n_list != o.n_uris) {
			r = bad(host, weights, "give one weight per uri");
		} else {
			for (size_t j = 0; j < o.n_uris; j++) {
				char *end = NULL;
				double w = strtod(weights->list[j], &end);

				if (end == weights->list[j] || *end || !(w >= 0 && w <= 1e6))
					r = bad(host, weights, "weights are numbers from 0 to 1000000");
				else
					o.weights[j] = w;
			}
		}
	}
	/* Reported even after other problems, so that one pass lists them all. */
	if (r != -ENOMEM && !o.template_name) {
		const char *where = autoscaled_option_where(host, NULL);

		host->log(host, AUTOSCALED_LOG_ERROR, "%s%slibvirt: missing required option 'template' (the domain to clone)",
			  where ? where : "", where ? ": " : "");
		r = -EINVAL;
	}
	if (r == 0 && !o.name_pattern && !(o.name_pattern = strdup("%g-%n")))
		r = -ENOMEM;
	if (r == 0) {
		char name[LV_NAME_MAX];
		const char *first = strstr(o.name_pattern, "%n");

		if (!first || strstr(first + 2, "%n") || lv_expand_name(o.name_pattern, host->group, 1, name,
									   sizeof(name) - 16) < 0) {
			const char *where = autoscaled_option_where(host, pattern);

			host->log(host, AUTOSCALED_LOG_ERROR,
				  "%s%slibvirt: option 'name_pattern' \"%s\" must contain %%n exactly once, only %%g, %%n "
				  "and %%%% as escapes, and expand to fewer than %d characters",
				  where ? where : "", where ? ": " : "", o.name_pattern, LV_NAME_MAX - 16);
			r = -EINVAL;
		}
	}
	if (r < 0) {
		lv_options_free(&o);
		return r;
	}
	*ret = o;
	return 0;
}
