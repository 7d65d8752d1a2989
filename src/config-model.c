/* The parts of config.h that do not touch libconfig: names of enums, the
 * duration parser shared with the command line, lookups in options, groups
 * and signals. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config.h"

/* ------------------------------------------------------------------ names */

const char *aggregation_name(enum aggregation a)
{
	switch (a) {
	case AGG_AVG: return "avg";
	case AGG_MIN: return "min";
	case AGG_MAX: return "max";
	case AGG_LAST: return "last";
	case AGG_P95: return "p95";
	}
	return "?";
}

const char *signal_type_name(enum signal_type t)
{
	switch (t) {
	case SIGNAL_UTILIZATION: return "utilization";
	case SIGNAL_AVERAGE: return "average";
	}
	return "?";
}

const char *direction_name(enum scale_direction d)
{
	switch (d) {
	case DIR_OUT: return "out";
	case DIR_IN: return "in";
	case DIR_NONE: return "none";
	}
	return "?";
}

/* -------------------------------------------------------------- durations */

/* The units of the duration grammar, largest first; a duration names each
 * at most once, in this order ("1h30m", not "30m1h"). */
static const struct {
	const char *name;
	int64_t ms;
	int rank;
} units[] = {
	{ "d", 86400 * MS_PER_SEC, 0 },
	{ "h", 3600 * MS_PER_SEC, 1 },
	{ "min", 60 * MS_PER_SEC, 2 },
	{ "ms", 1, 4 },  /* before "m", which is its prefix */
	{ "m", 60 * MS_PER_SEC, 2 },
	{ "sec", MS_PER_SEC, 3 },
	{ "s", MS_PER_SEC, 3 },
};

int parse_duration_ms(const char *s, int64_t *ret)
{
	double total = 0;
	int last_rank = -1;
	const char *p = s;

	if (!s || !*s)
		return -EINVAL;
	/* A sequence of NUMBER UNIT ("1h30m", "90min", "1.5h"); a lone
	 * number means seconds. No sign and no blanks. */
	while (*p) {
		double v = 0, scale = 1;
		int digits = 0;
		size_t u;

		for (; *p >= '0' && *p <= '9'; p++, digits++)
			v = v * 10 + (*p - '0');
		if (digits && *p == '.') {
			int frac = 0;

			for (p++; *p >= '0' && *p <= '9'; p++, frac++) {
				scale /= 10;
				v += (*p - '0') * scale;
			}
			if (!frac)
				return -EINVAL;
		}
		if (!digits)
			return -EINVAL;
		if (*p == '\0' && last_rank < 0) {
			total = v * MS_PER_SEC;
			break;
		}
		for (u = 0; u < sizeof(units) / sizeof(units[0]); u++)
			if (strncmp(p, units[u].name, strlen(units[u].name)) == 0 &&
			    !(p[strlen(units[u].name)] >= 'a' && p[strlen(units[u].name)] <= 'z'))
				break;
		if (u == sizeof(units) / sizeof(units[0]) || units[u].rank <= last_rank)
			return -EINVAL;
		last_rank = units[u].rank;
		p += strlen(units[u].name);
		total += v * (double)units[u].ms;
	}
	/* A hundred years is more than any setting means, and keeps every
	 * sum of durations far from overflowing int64_t. */
	if (!(total <= CONFIG_MAX_DURATION_MS))
		return -ERANGE;
	*ret = (int64_t)llround(total);
	return 0;
}

/* ---------------------------------------------------------------- options */

const struct config_option *options_get(const struct options *o, const char *key)
{
	for (size_t i = 0; o && i < o->n; i++)
		if (strcmp(o->v[i].key, key) == 0)
			return &o->v[i];
	return NULL;
}

const char *options_get_str(const struct options *o, const char *key, const char *def)
{
	const struct config_option *v = options_get(o, key);

	return v && v->type != OPTION_LIST ? v->str : def;
}

/* Numbers, booleans (0 or 1), and strings that are wholly a number. */
double options_get_num(const struct options *o, const char *key, double def)
{
	const struct config_option *v = options_get(o, key);
	char *end;
	double d;

	if (!v)
		return def;
	switch (v->type) {
	case OPTION_INT:
	case OPTION_FLOAT:
		return v->f;
	case OPTION_BOOL:
		return (double)v->i;
	case OPTION_STRING:
		errno = 0;
		d = strtod(v->str, &end);
		return errno == 0 && end != v->str && *end == '\0' ? d : def;
	case OPTION_LIST:
		break;
	}
	return def;
}

/* Booleans, numbers (non-zero is true), and the strings true/false, yes/no,
 * on/off, 1/0. */
bool options_get_bool(const struct options *o, const char *key, bool def)
{
	static const char *const yes[] = { "true", "yes", "on", "1" };
	static const char *const no[] = { "false", "no", "off", "0" };
	const struct config_option *v = options_get(o, key);

	if (!v)
		return def;
	switch (v->type) {
	case OPTION_BOOL:
	case OPTION_INT:
		return v->i != 0;
	case OPTION_FLOAT:
		return v->f != 0;
	case OPTION_STRING:
		for (size_t i = 0; i < 4; i++) {
			if (strcasecmp(v->str, yes[i]) == 0)
				return true;
			if (strcasecmp(v->str, no[i]) == 0)
				return false;
		}
		break;
	case OPTION_LIST:
		break;
	}
	return def;
}

/* ---------------------------------------------------------------- lookups */

const struct group_conf *config_find_group(const struct config *c, const char *name)
{
	for (size_t i = 0; c && name && i < c->n_groups; i++)
		if (strcmp(c->groups[i].name, name) == 0)
			return &c->groups[i];
	return NULL;
}

int group_find_signal(const struct group_conf *g, const char *name)
{
	for (size_t i = 0; g && name && i < g->n_signals; i++)
		if (strcmp(g->signals[i].name, name) == 0)
			return (int)i;
	return -1;
}

const struct profile_conf *group_default_profile(const struct group_conf *g)
{
	for (size_t i = 0; g && i < g->n_profiles; i++)
		if (g->profiles[i].kind == PROFILE_DEFAULT)
			return &g->profiles[i];
	return NULL;
}
