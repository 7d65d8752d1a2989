/* The parts of config.h that do not touch libconfig: names of enums, the
 * duration parser shared with the command line, lookups in options, groups
 * and signals. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/config.h"
#include "config/config-private.h"

/* ------------------------------------------------------------------ names */

const struct enum_name cfg_aggregations[N_AGGREGATIONS] = {
	{ "avg", AGG_AVG }, { "min", AGG_MIN }, { "max", AGG_MAX }, { "last", AGG_LAST }, { "p95", AGG_P95 },
};

const struct enum_name cfg_signal_types[N_SIGNAL_TYPES] = {
	{ "utilization", SIGNAL_UTILIZATION },
	{ "average", SIGNAL_AVERAGE },
};

const struct enum_name cfg_operators[N_OPERATORS] = {
	{ ">", OP_GT }, { ">=", OP_GE }, { "<", OP_LT }, { "<=", OP_LE }, { "==", OP_EQ }, { "!=", OP_NE },
};

const struct enum_name cfg_on_missings[N_ON_MISSINGS] = {
	{ "hold", ON_MISSING_HOLD }, { "default", ON_MISSING_DEFAULT }, { "max", ON_MISSING_MAX },
};

static const char *enum_name_of(const struct enum_name *names, size_t n, int value)
{
	for (size_t i = 0; i < n; i++)
		if (names[i].value == value)
			return names[i].name;
	return "?";
}

const char *aggregation_name(enum aggregation a)
{
	return enum_name_of(cfg_aggregations, N_AGGREGATIONS, (int)a);
}

const char *signal_type_name(enum signal_type t)
{
	return enum_name_of(cfg_signal_types, N_SIGNAL_TYPES, (int)t);
}

const char *rule_operator_name(enum rule_operator op)
{
	return enum_name_of(cfg_operators, N_OPERATORS, (int)op);
}

const char *on_missing_name(enum on_missing m)
{
	return enum_name_of(cfg_on_missings, N_ON_MISSINGS, (int)m);
}

const struct enum_name cfg_warm_states[N_WARM_STATES] = {
	{ "paused", WARM_PAUSED }, { "saved", WARM_SAVED }, { "stopped", WARM_STOPPED },
};

const char *warm_state_name(enum warm_state s)
{
	return enum_name_of(cfg_warm_states, N_WARM_STATES, (int)s);
}

/* Every name of a direction, in one place, so that the configuration, the
 * state files, the records and the messages cannot drift apart. */
static const struct {
	enum scale_direction dir;
	const char *name, *action, *noun;
} direction_names[] = {
	{DIR_OUT, "out", "scale_out", "scale-out"},
	{DIR_IN, "in", "scale_in", "scale-in"},
	{DIR_NONE, "none", "none", "no change"},
};
#define N_DIRECTIONS (sizeof(direction_names) / sizeof(direction_names[0]))

static size_t direction_index(enum scale_direction d)
{
	size_t i = 0;

	while (i < N_DIRECTIONS && direction_names[i].dir != d)
		i++;
	return i;
}

const char *direction_name(enum scale_direction d)
{
	size_t i = direction_index(d);

	return i < N_DIRECTIONS ? direction_names[i].name : "?";
}

const char *direction_action(enum scale_direction d)
{
	size_t i = direction_index(d);

	return i < N_DIRECTIONS ? direction_names[i].action : "?";
}

const char *direction_noun(enum scale_direction d)
{
	size_t i = direction_index(d);

	return i < N_DIRECTIONS ? direction_names[i].noun : "?";
}

int direction_from_name(const char *s, bool none_ok, enum scale_direction *ret)
{
	for (size_t i = 0; s && i < N_DIRECTIONS; i++) {
		if (strcmp(s, direction_names[i].name) == 0 && (none_ok || direction_names[i].dir != DIR_NONE)) {
			*ret = direction_names[i].dir;
			return 0;
		}
	}
	return -EINVAL;
}

/* The names of the trace formats (config.h). */
static const struct {
	const char *name;
	enum trace_format f;
} formats[] = {
	{"nasa", TRACE_NASA},
	{"azure-llm", TRACE_AZURE_LLM},
	{"bitbrains", TRACE_BITBRAINS},
	{"csv", TRACE_CSV},
	{"swf", TRACE_SWF},
	{"requests", TRACE_REQUESTS},
};

int trace_format_parse(const char *name, enum trace_format *ret)
{
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		if (strcmp(name, formats[i].name) == 0) {
			*ret = formats[i].f;
			return 0;
		}
	return -EINVAL;
}

const char *trace_format_name(enum trace_format f)
{
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		if (formats[i].f == f)
			return formats[i].name;
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

const struct forecast_conf config_forecast_none = { .mode = FORECAST_OFF, .quantile = 0.9 };

/* The defaults cfg_notify_defaults() and read_warm_pool() set. */
const struct notify_conf config_notify_none = {
	.webhook_timeout_ms = 10 * MS_PER_SEC,
	.webhook_retries = 3,
	.command_timeout_ms = 30 * MS_PER_SEC,
	.pre_scale_in_deadline_ms = 300 * MS_PER_SEC,
};
const struct warm_pool_conf config_warm_pool_none = {
	.state = WARM_PAUSED,
	.refill_ms = 30 * MS_PER_SEC,
	.warmup_ms = 60 * MS_PER_SEC,
};

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

int64_t group_longest_window(const struct group_conf *g, size_t sig)
{
	int64_t w = g->signals[sig].window_ms;

	for (size_t p = 0; p < g->n_profiles; p++)
		for (size_t r = 0; r < g->profiles[p].n_rules; r++)
			if (g->profiles[p].rules[r].signal_index == (int)sig && g->profiles[p].rules[r].window_ms > w)
				w = g->profiles[p].rules[r].window_ms;
	return w;
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

/* ------------------------------------------------------------ comparison */

/* Strings that may be NULL are equal when both are NULL or both hold the
 * same text. */
static bool str_eq(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static bool strv_eq(char *const *a, size_t n_a, char *const *b, size_t n_b)
{
	if (n_a != n_b)
		return false;
	for (size_t i = 0; i < n_a; i++)
		if (!str_eq(a[i], b[i]))
			return false;
	return true;
}

bool config_options_equal(const struct options *a, const struct options *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++) {
		const struct config_option *x = &a->v[i], *y = &b->v[i];

		if (!str_eq(x->key, y->key) || x->type != y->type || !str_eq(x->str, y->str))
			return false;
		if (x->type == OPTION_LIST ? !strv_eq(x->list, x->n_list, y->list, y->n_list)
					   : x->i != y->i || !(x->f == y->f || (isnan(x->f) && isnan(y->f))))
			return false;
	}
	return true;
}

bool config_signal_equal(const struct signal_conf *a, const struct signal_conf *b)
{
	const struct forecast_conf *fa = signal_forecast(a), *fb = signal_forecast(b);

	return str_eq(a->name, b->name) && str_eq(a->source, b->source) &&
	       config_options_equal(&a->source_options, &b->source_options) && a->type == b->type &&
	       a->target == b->target && a->window_ms == b->window_ms && a->aggregation == b->aggregation &&
	       a->tolerance == b->tolerance && a->staleness_ms == b->staleness_ms &&
	       a->poll_interval_ms == b->poll_interval_ms && a->timeout_ms == b->timeout_ms &&
	       fa->mode == fb->mode && fa->quantile == fb->quantile && fa->service_level == fb->service_level &&
	       str_eq(fa->seed_file, fb->seed_file) && str_eq(fa->seed_format, fb->seed_format);
}

static bool rule_equal(const struct rule_conf *a, const struct rule_conf *b)
{
	return str_eq(a->signal, b->signal) && a->signal_index == b->signal_index && a->window_ms == b->window_ms &&
	       a->statistic == b->statistic && a->op == b->op && a->threshold == b->threshold &&
	       a->direction == b->direction && a->change == b->change && a->value == b->value &&
	       a->cooldown_ms == b->cooldown_ms;
}

static bool profile_equal(const struct profile_conf *a, const struct profile_conf *b)
{
	if (!str_eq(a->name, b->name) || a->kind != b->kind || a->min != b->min || a->max != b->max ||
	    a->def != b->def || a->days != b->days || a->start_minute != b->start_minute ||
	    a->end_minute != b->end_minute || !str_eq(a->timezone, b->timezone) || a->start_ms != b->start_ms ||
	    a->end_ms != b->end_ms || a->n_rules != b->n_rules || a->n_targets != b->n_targets)
		return false;
	for (size_t i = 0; i < a->n_rules; i++)
		if (!rule_equal(&a->rules[i], &b->rules[i]))
			return false;
	for (size_t i = 0; i < a->n_targets; i++)
		if (!str_eq(a->targets[i].signal, b->targets[i].signal) ||
		    a->targets[i].signal_index != b->targets[i].signal_index ||
		    a->targets[i].target != b->targets[i].target)
			return false;
	return true;
}

static bool direction_equal(const struct direction_behavior *a, const struct direction_behavior *b)
{
	if (a->stabilization_ms != b->stabilization_ms || a->select != b->select || a->n_policies != b->n_policies)
		return false;
	for (size_t i = 0; i < a->n_policies; i++)
		if (a->policies[i].type != b->policies[i].type || a->policies[i].value != b->policies[i].value ||
		    a->policies[i].period_ms != b->policies[i].period_ms)
			return false;
	return true;
}

static bool notify_equal(const struct notify_conf *a, const struct notify_conf *b)
{
	return str_eq(a->webhook_url, b->webhook_url) && str_eq(a->webhook_secret_file, b->webhook_secret_file) &&
	       a->webhook_timeout_ms == b->webhook_timeout_ms && a->webhook_retries == b->webhook_retries &&
	       strv_eq(a->command, a->n_command, b->command, b->n_command) &&
	       a->command_timeout_ms == b->command_timeout_ms &&
	       strv_eq(a->pre_scale_in, a->n_pre_scale_in, b->pre_scale_in, b->n_pre_scale_in) &&
	       a->pre_scale_in_deadline_ms == b->pre_scale_in_deadline_ms;
}

bool config_warm_pool_equal(const struct warm_pool_conf *a, const struct warm_pool_conf *b)
{
	return a->size == b->size && a->state == b->state && a->max_age_ms == b->max_age_ms &&
	       a->refill_ms == b->refill_ms && a->warmup_ms == b->warmup_ms &&
	       a->return_on_scale_in == b->return_on_scale_in &&
	       strv_eq(a->reseed_command, a->n_reseed_command, b->reseed_command, b->n_reseed_command);
}

bool config_group_equal(const struct group_conf *a, const struct group_conf *b)
{
	if (!str_eq(a->name, b->name) || !str_eq(a->driver, b->driver) ||
	    !config_options_equal(&a->driver_options, &b->driver_options) || a->interval_ms != b->interval_ms ||
	    a->dry_run != b->dry_run || a->n_signals != b->n_signals || a->n_profiles != b->n_profiles ||
	    !str_eq(a->owner, b->owner))
		return false;
	for (size_t i = 0; i < a->n_signals; i++)
		if (!config_signal_equal(&a->signals[i], &b->signals[i]))
			return false;
	for (size_t i = 0; i < a->n_profiles; i++)
		if (!profile_equal(&a->profiles[i], &b->profiles[i]))
			return false;
	return direction_equal(&a->behavior.scale_out, &b->behavior.scale_out) &&
	       direction_equal(&a->behavior.scale_in, &b->behavior.scale_in) &&
	       a->behavior.initialization_ms == b->behavior.initialization_ms &&
	       a->behavior.on_missing == b->behavior.on_missing && a->behavior.boot_time_ms == b->behavior.boot_time_ms &&
	       a->behavior.lazy_scale_in == b->behavior.lazy_scale_in &&
	       a->behavior.billing_minimum_ms == b->behavior.billing_minimum_ms &&
	       a->behavior.billing_granularity_ms == b->behavior.billing_granularity_ms &&
	       notify_equal(group_notify(a), group_notify(b)) &&
	       config_warm_pool_equal(group_warm_pool(a), group_warm_pool(b));
}
