/* Typed access to libconfig settings, each reporting what is wrong with
 * FILE:LINE. The exact messages (tests assert them; KEY and VALUE are the
 * user's, in quotes as shown):
 *
 *   unknown key 'KEY' (did you mean 'NEAR'?)      or  unknown key 'KEY'
 *   missing required key 'KEY'
 *   'KEY' must be a string | a boolean (true or false) | an integer | a number
 *   'KEY' must be a duration (seconds, or a string such as "90s" or "5m")
 *   invalid duration 'VALUE' for 'KEY' (use seconds or a string such as "90s", "1h30m", "90min", "1.5h" or "500ms")
 *   'KEY' must be a group { ... }
 *   'KEY' must be a list ( ... ) of groups
 *   each entry of 'KEY' must be a group { ... }
 *   'KEY' has N entries; at most MAX are allowed
 *   'KEY' must be between LO and HI, not VALUE       (counts, durations: "3600s")
 *   'KEY' must be greater than 0, not VALUE
 *   'KEY' must be one of A, B, C, not 'VALUE'   or  'KEY' must be one of A, B, C
 *   option 'KEY' must be a string, number, boolean, or list of strings or of numbers
 *   invalid WHAT name 'VALUE' (use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit)
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "config/config-private.h"
#include "base/region.h"

#define CONFIG_MAX_OPTION_LIST 256
#define NAME_MAX_LEN 64

const char *cfg_format_duration(char buf[32], int64_t ms)
{
	if (ms % MS_PER_SEC == 0)
		snprintf(buf, 32, "%llds", (long long)(ms / MS_PER_SEC));
	else
		snprintf(buf, 32, "%lldms", (long long)ms);
	return buf;
}

void *cfg_alloc(struct config_ctx *x, size_t n, size_t size)
{
	void *p = region_calloc(x->c->mem, n, size);

	if (!p)
		x->oom = true;
	return p;
}

char *cfg_strdup(struct config_ctx *x, const char *s)
{
	char *d = x->strings ? g_hash_table_lookup(x->strings, s) : NULL;

	if (d)
		return d;
	d = region_strdup(x->c->mem, s);
	if (!d)
		x->oom = true;
	else if (x->strings)
		g_hash_table_add(x->strings, d);
	return d;
}

/* Printed numbers repeat as names do ("1", "0.5" in every group): a short
 * one goes through cfg_strdup(), which keeps one copy of each. */
char *cfg_printf(struct config_ctx *x, const char *fmt, ...)
{
	char buf[64];
	va_list ap;
	char *d;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (len >= 0 && (size_t)len < sizeof(buf))
		return cfg_strdup(x, buf);
	va_start(ap, fmt);
	d = region_vprintf(x->c->mem, fmt, ap);
	va_end(ap);
	if (!d)
		x->oom = true;
	return d;
}

int cfg_need(struct config_ctx *x, const config_setting_t *s, const char *key)
{
	cfg_error(x, s, "missing required key '%s'", key);
	return -1;
}

void cfg_check_keys(struct config_ctx *x, const config_setting_t *s, const char *const *keys, size_t n)
{
	int len = config_setting_length(s);

	for (int i = 0; i < len; i++) {
		const config_setting_t *m = config_setting_get_elem(s, (unsigned)i);
		const char *name = config_setting_name(m), *near;
		size_t k;

		if (!name)
			continue;
		for (k = 0; k < n; k++)
			if (strcmp(name, keys[k]) == 0)
				break;
		if (k < n)
			continue;
		near = cfg_near_miss(name, keys, n);
		if (near)
			cfg_error(x, m, "unknown key '%s' (did you mean '%s'?)", name, near);
		else
			cfg_error(x, m, "unknown key '%s'", name);
	}
}

int cfg_get_string(struct config_ctx *x, const config_setting_t *s, const char *key, char **out)
{
	const config_setting_t *m = config_setting_get_member(s, key);
	char *d;

	if (!m)
		return 0;
	if (config_setting_type(m) != CONFIG_TYPE_STRING) {
		cfg_error(x, m, "'%s' must be a string", key);
		return -1;
	}
	d = cfg_strdup(x, config_setting_get_string(m));
	if (!d)
		return -1;
	*out = d;
	return 1;
}

int cfg_get_bool(struct config_ctx *x, const config_setting_t *s, const char *key, bool *out)
{
	const config_setting_t *m = config_setting_get_member(s, key);

	if (!m)
		return 0;
	if (config_setting_type(m) != CONFIG_TYPE_BOOL) {
		cfg_error(x, m, "'%s' must be a boolean (true or false)", key);
		return -1;
	}
	*out = config_setting_get_bool(m) != 0;
	return 1;
}

int cfg_get_count(struct config_ctx *x, const config_setting_t *s, const char *key, int *out)
{
	const config_setting_t *m = config_setting_get_member(s, key);
	long long v;

	if (!m)
		return 0;
	if (config_setting_type(m) != CONFIG_TYPE_INT && config_setting_type(m) != CONFIG_TYPE_INT64) {
		cfg_error(x, m, "'%s' must be an integer", key);
		return -1;
	}
	v = config_setting_get_int64(m);
	if (v < 0 || v > CONFIG_MAX_COUNT) {
		cfg_error(x, m, "'%s' must be between 0 and %d, not %lld", key, CONFIG_MAX_COUNT, v);
		return -1;
	}
	*out = (int)v;
	return 1;
}

int cfg_get_number(struct config_ctx *x, const config_setting_t *s, const char *key, double *out)
{
	const config_setting_t *m = config_setting_get_member(s, key);
	double v;

	if (!m)
		return 0;
	switch (config_setting_type(m)) {
	case CONFIG_TYPE_INT:
	case CONFIG_TYPE_INT64:
		v = (double)config_setting_get_int64(m);
		break;
	case CONFIG_TYPE_FLOAT:
		v = config_setting_get_float(m);
		break;
	default:
		cfg_error(x, m, "'%s' must be a number", key);
		return -1;
	}
	if (!isfinite(v)) {
		cfg_error(x, m, "'%s' must be a number", key);
		return -1;
	}
	*out = v;
	return 1;
}

int cfg_get_positive(struct config_ctx *x, const config_setting_t *s, const char *key, double *out)
{
	double v;
	int r = cfg_get_number(x, s, key, &v);

	if (r <= 0)
		return r;
	if (v <= 0) {
		cfg_error(x, config_setting_get_member(s, key), "'%s' must be greater than 0, not %g", key, v);
		return -1;
	}
	*out = v;
	return 1;
}

int cfg_get_duration(struct config_ctx *x, const config_setting_t *s, const char *key, int64_t lo, int64_t hi,
		 int64_t *out)
{
	const config_setting_t *m = config_setting_get_member(s, key);
	char b1[32], b2[32], b3[32];
	int64_t ms;
	double f;

	if (!m)
		return 0;
	switch (config_setting_type(m)) {
	case CONFIG_TYPE_INT:
	case CONFIG_TYPE_INT64:
	case CONFIG_TYPE_FLOAT:
		/* Numbers are seconds; clamp absurd ones so the range check
		 * below reports them instead of overflowing. */
		f = config_setting_type(m) == CONFIG_TYPE_FLOAT ? config_setting_get_float(m)
							       : (double)config_setting_get_int64(m);
		if (!isfinite(f) || fabs(f) > 1e12)
			f = f < 0 ? -1e12 : 1e12;
		ms = (int64_t)llround(f * 1000);
		break;
	case CONFIG_TYPE_STRING:
		if (parse_duration_ms(config_setting_get_string(m), &ms) < 0) {
			cfg_error(x, m, "invalid duration '%s' for '%s' (%s)", config_setting_get_string(m), key,
				  CONFIG_DURATION_HELP);
			return -1;
		}
		break;
	default:
		cfg_error(x, m, "'%s' must be a duration (seconds, or a string such as \"90s\" or \"5m\")", key);
		return -1;
	}
	if (ms < lo || ms > hi) {
		cfg_error(x, m, "'%s' must be between %s and %s, not %s", key, cfg_format_duration(b1, lo),
			  cfg_format_duration(b2, hi), cfg_format_duration(b3, ms));
		return -1;
	}
	*out = ms;
	return 1;
}

int cfg_get_enum(struct config_ctx *x, const config_setting_t *s, const char *key, const struct enum_name *names,
	     size_t n, int *out)
{
	const config_setting_t *m = config_setting_get_member(s, key);
	char list[256] = "";
	const char *v;

	if (!m)
		return 0;
	v = config_setting_type(m) == CONFIG_TYPE_STRING ? config_setting_get_string(m) : NULL;
	for (size_t i = 0; v && i < n; i++) {
		if (strcmp(v, names[i].name) == 0) {
			*out = names[i].value;
			return 1;
		}
	}
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(list);

		snprintf(list + len, sizeof(list) - len, "%s%s", i ? ", " : "", names[i].name);
	}
	if (v)
		cfg_error(x, m, "'%s' must be one of %s, not '%s'", key, list, v);
	else
		cfg_error(x, m, "'%s' must be one of %s", key, list);
	return -1;
}

const config_setting_t *cfg_get_group(struct config_ctx *x, const config_setting_t *s, const char *key)
{
	const config_setting_t *m = config_setting_get_member(s, key);

	if (m && !config_setting_is_group(m)) {
		cfg_error(x, m, "'%s' must be a group { ... }", key);
		return NULL;
	}
	return m;
}

const config_setting_t *cfg_get_list(struct config_ctx *x, const config_setting_t *s, const char *key, size_t max,
				 size_t *n)
{
	const config_setting_t *m = config_setting_get_member(s, key);
	size_t len;

	*n = 0;
	if (!m)
		return NULL;
	len = (size_t)config_setting_length(m);
	/* An empty array "[]" is an empty list too. */
	if (!config_setting_is_list(m) && !(config_setting_is_array(m) && len == 0)) {
		cfg_error(x, m, "'%s' must be a list ( ... ) of groups", key);
		return NULL;
	}
	if (len > max) {
		cfg_error(x, m, "'%s' has %zu entries; at most %zu are allowed", key, len, max);
		return NULL;
	}
	*n = len;
	return m;
}

const config_setting_t *cfg_list_group(struct config_ctx *x, const config_setting_t *list, size_t i)
{
	const config_setting_t *e = config_setting_get_elem(list, (unsigned)i);

	if (!config_setting_is_group(e)) {
		cfg_error(x, e, "each entry of '%s' must be a group { ... }", config_setting_name(list));
		return NULL;
	}
	return e;
}

static int option_list(struct config_ctx *x, const config_setting_t *m, struct config_option *o)
{
	size_t n = (size_t)config_setting_length(m);

	if (n > CONFIG_MAX_OPTION_LIST) {
		cfg_error(x, m, "'%s' has %zu entries; at most %d are allowed", o->key, n, CONFIG_MAX_OPTION_LIST);
		return -1;
	}
	bool numbers = n > 0 && config_setting_type(config_setting_get_elem(m, 0)) != CONFIG_TYPE_STRING;

	/* A list is all strings or all numbers (weights = [ 2, 1 ]); numbers
	 * reach the driver written out, as a scalar's str is. */
	for (size_t i = 0; i < n; i++) {
		int t = config_setting_type(config_setting_get_elem(m, (unsigned)i));
		bool number = t == CONFIG_TYPE_INT || t == CONFIG_TYPE_INT64 || t == CONFIG_TYPE_FLOAT;

		if (numbers ? !number : t != CONFIG_TYPE_STRING) {
			cfg_error(x, m, "option '%s' must be a string, number, boolean, or list of strings or of numbers",
				  o->key);
			return -1;
		}
	}
	o->list = cfg_alloc(x, n, sizeof(char *));
	if (!o->list)
		return -1;
	for (size_t i = 0; i < n; i++) {
		const config_setting_t *e = config_setting_get_elem(m, (unsigned)i);

		if (!numbers)
			o->list[i] = cfg_strdup(x, config_setting_get_string(e));
		else if (config_setting_type(e) == CONFIG_TYPE_FLOAT)
			o->list[i] = cfg_printf(x, "%.17g", config_setting_get_float(e));
		else
			o->list[i] = cfg_printf(x, "%lld", (long long)config_setting_get_int64(e));
		if (!o->list[i])
			return -1;
		o->n_list++;
	}
	return 0;
}

static int option_value(struct config_ctx *x, const config_setting_t *m, struct config_option *o)
{
	switch (config_setting_type(m)) {
	case CONFIG_TYPE_STRING:
		o->type = OPTION_STRING;
		o->str = cfg_strdup(x, config_setting_get_string(m));
		return o->str ? 0 : -1;
	case CONFIG_TYPE_INT:
	case CONFIG_TYPE_INT64:
		o->type = OPTION_INT;
		o->i = config_setting_get_int64(m);
		o->f = (double)o->i;
		o->str = cfg_printf(x, "%lld", (long long)o->i);
		return o->str ? 0 : -1;
	case CONFIG_TYPE_FLOAT:
		o->type = OPTION_FLOAT;
		o->f = config_setting_get_float(m);
		o->str = cfg_printf(x, "%.17g", o->f);
		return o->str ? 0 : -1;
	case CONFIG_TYPE_BOOL:
		o->type = OPTION_BOOL;
		o->i = config_setting_get_bool(m) != 0;
		o->f = (double)o->i;
		o->str = cfg_strdup(x, o->i ? "true" : "false");
		return o->str ? 0 : -1;
	case CONFIG_TYPE_ARRAY:
	case CONFIG_TYPE_LIST:
		o->type = OPTION_LIST;
		return option_list(x, m, o);
	default:
		cfg_error(x, m, "option '%s' must be a string, number, boolean, or list of strings or of numbers", o->key);
		return -1;
	}
}

int cfg_get_options(struct config_ctx *x, const config_setting_t *s, const char *key, struct options *o)
{
	const config_setting_t *g = cfg_get_group(x, s, key);
	size_t n;
	int r = 1;

	if (!g)
		return config_setting_get_member(s, key) ? -1 : 0;
	n = (size_t)config_setting_length(g);
	if (n > CONFIG_MAX_OPTIONS) {
		cfg_error(x, g, "'%s' has %zu entries; at most %d are allowed", key, n, CONFIG_MAX_OPTIONS);
		return -1;
	}
	o->v = cfg_alloc(x, n, sizeof(*o->v));
	if (!o->v)
		return -1;
	o->file = cfg_file_name(x, g);
	o->line = (int)g->line;
	for (size_t i = 0; i < n; i++) {
		const config_setting_t *m = config_setting_get_elem(g, (unsigned)i);
		struct config_option *v = &o->v[o->n];

		v->key = cfg_strdup(x, config_setting_name(m));
		if (!v->key)
			return -1;
		v->file = cfg_file_name(x, m);
		v->line = (int)m->line;
		o->n++;
		if (option_value(x, m, v) < 0)
			r = -1;
	}
	return r;
}

bool cfg_name_valid(const char *s)
{
	size_t len = strlen(s);

	if (len == 0 || len > NAME_MAX_LEN)
		return false;
	if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= '0' && s[0] <= '9')))
		return false;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == len;
}

int cfg_get_name(struct config_ctx *x, const config_setting_t *s, const char *what, char **out)
{
	int r = cfg_get_string(x, s, "name", out);

	if (r == 0)
		return cfg_need(x, s, "name");
	if (r < 0)
		return r;
	if (!cfg_name_valid(*out)) {
		cfg_error(x, config_setting_get_member(s, "name"),
			  "invalid %s name '%s' (use 1 to %d letters, digits, '.', '_' or '-', starting with a letter or digit)",
			  what, *out, NAME_MAX_LEN);
		*out = NULL;
		return -1;
	}
	return 1;
}
