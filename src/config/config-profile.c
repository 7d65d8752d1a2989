/* The schema of a group's profiles, threshold rules and behavior.
 *
 * A profile with neither `recurrence` nor `fixed` is the default profile; a
 * group has exactly one. When the file names none, the group's own `min`,
 * `max` and `default` form it (named "default"); a group cannot have both.
 *
 * Messages of this file (besides those of config-get.c):
 *
 *   'min' (8) is greater than 'max' (2)
 *   'default' (25) must be between 'min' (4) and 'max' (20)
 *   unknown time zone 'NAME'
 *   fixed-date profile 'B' overlaps 'A' (defined at FILE:LINE)
 *   rule refers to undefined signal 'NAME' (did you mean 'NEAR'?)   (or without the suggestion)
 *   target override for undefined signal 'NAME' (did you mean 'NEAR'?)
 *   duplicate profile name 'NAME' (first defined at FILE:LINE)
 *   a profile may have 'recurrence' or 'fixed', not both
 *   profile 'B' is a second default profile (one without 'recurrence' or 'fixed'); the first is 'A'
 *   'KEY' of the group conflicts with default profile 'NAME'; set it in that profile
 *   no default profile: set 'min' and 'max' in the group or add a profile without 'recurrence' or 'fixed'
 *   'profiles' has 32 entries; at most 31 are allowed with the group's own 'min' and 'max'
 *   'days' must be a list of day names such as [ "mon", "fri" ]
 *   'days' must name at least one day
 *   unknown day 'NAME' (use mon, tue, wed, thu, fri, sat or sun)
 *   'start' must be a time of day "HH:MM", not 'VALUE'          (also 'end'; "24:00" is a valid end)
 *   'start' and 'end' must differ
 *   'start' must be a date and time such as "2026-11-27T08:00:00", not 'VALUE'   (also 'end')
 *   'end' must be after 'start'
 *   'value' must be a whole number from 1 to 100000 with change 'count', not V
 *   'value' must be a whole number from 0 to 100000 with change 'exact', not V
 *   'value' must be greater than 0 and at most 1000 with change 'percent' and direction 'out', not V
 *   'value' must be greater than 0 and at most 100 with change 'percent' and direction 'in', not V
 *   'value' must be a whole number of instances, not V
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config-private.h"
#include "config/schedule-tz.h"

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))

static const char *const profile_keys[] = { "name", "recurrence", "fixed", "min", "max", "default", "rules", "targets" };
static const char *const recurrence_keys[] = { "days", "start", "end", "timezone" };
static const char *const fixed_keys[] = { "start", "end", "timezone" };
static const char *const rule_keys[] = {
	"signal", "window", "statistic", "operator", "threshold", "direction", "change", "value", "cooldown",
};
static const char *const behavior_keys[] = { "scale_in", "scale_out", "initialization_period", "on_missing",
					     "boot_time" };
static const char *const direction_keys[] = { "stabilization", "select", "policies" };
static const char *const scale_in_keys[] = { "stabilization", "select", "policies", "lazy", "billing_minimum",
					     "billing_granularity" };
static const char *const policy_keys[] = { "type", "value", "period" };

static const struct enum_name changes[] = {
	{ "count", CHANGE_COUNT }, { "percent", CHANGE_PERCENT }, { "exact", CHANGE_EXACT },
};
static const struct enum_name selects[] = { { "max", SELECT_MAX }, { "min", SELECT_MIN }, { "disabled", SELECT_DISABLED } };
static const struct enum_name policy_types[] = { { "instances", POLICY_INSTANCES }, { "percent", POLICY_PERCENT } };
static const char *const day_names[] = { "mon", "tue", "wed", "thu", "fri", "sat", "sun" };
static const char *const day_full_names[] = { "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday" };

/* The index of the group's signal `name`, or -1 after reporting it. */
static int resolve_signal(struct config_ctx *x, const config_setting_t *m, const struct group_conf *g,
			  const char *name, const char *what)
{
	const char *names[CONFIG_MAX_SIGNALS], *near;
	size_t n = 0;

	for (size_t i = 0; i < g->n_signals; i++) {
		if (!g->signals[i].name)
			continue;
		if (strcmp(g->signals[i].name, name) == 0)
			return (int)i;
		names[n++] = g->signals[i].name;
	}
	near = cfg_near_miss(name, names, n);
	if (near)
		cfg_error(x, m, "%s undefined signal '%s' (did you mean '%s'?)", what, name, near);
	else
		cfg_error(x, m, "%s undefined signal '%s'", what, name);
	return -1;
}

/* min, max and default of a profile (or of the group, as shorthand). */
static void read_bounds(struct config_ctx *x, const config_setting_t *s, struct profile_conf *p)
{
	int rmin = cfg_get_count(x, s, "min", &p->min);
	int rmax = cfg_get_count(x, s, "max", &p->max);
	int rdef = cfg_get_count(x, s, "default", &p->def);

	if (rmin == 0)
		cfg_need(x, s, "min");
	if (rmax == 0)
		cfg_need(x, s, "max");
	if (rdef == 0)
		p->def = p->min;
	if (rmin <= 0 || rmax <= 0)
		return;
	if (p->min > p->max)
		cfg_error(x, config_setting_get_member(s, "min"), "'min' (%d) is greater than 'max' (%d)", p->min, p->max);
	else if (rdef > 0 && (p->def < p->min || p->def > p->max))
		cfg_error(x, config_setting_get_member(s, "default"), "'default' (%d) must be between 'min' (%d) and 'max' (%d)",
			  p->def, p->min, p->max);
}

static int read_zone(struct config_ctx *x, const config_setting_t *s, struct profile_conf *p)
{
	p->timezone = cfg_strdup(x, "UTC");
	if (!p->timezone)
		return -1;
	if (cfg_get_string(x, s, "timezone", &p->timezone) < 0)
		return -1;
	if (schedule_tz_open(p->timezone, &p->tz) < 0) {
		const config_setting_t *m = config_setting_get_member(s, "timezone");

		cfg_error(x, m ? m : s, "unknown time zone '%s'", p->timezone);
		return -1;
	}
	return 0;
}

/* "HH:MM" as minutes after midnight; "24:00" only as an end. */
static int parse_hhmm(const char *s, bool end, int *ret)
{
	size_t h = strspn(s, "0123456789");
	int hour, minute;

	if (h < 1 || h > 2 || s[h] != ':' || strspn(s + h + 1, "0123456789") != 2 || s[h + 3] != '\0')
		return -EINVAL;
	hour = atoi(s);
	minute = atoi(s + h + 1);
	if (minute > 59 || hour > 24 || (hour == 24 && (minute != 0 || !end)))
		return -EINVAL;
	*ret = hour * 60 + minute;
	return 0;
}

static int read_time_of_day(struct config_ctx *x, const config_setting_t *s, const char *key, bool end, int *ret)
{
	char *v = NULL;
	int r = cfg_get_string(x, s, key, &v);

	if (r == 0)
		return cfg_need(x, s, key);
	if (r > 0 && parse_hhmm(v, end, ret) < 0) {
		cfg_error(x, config_setting_get_member(s, key), "'%s' must be a time of day \"HH:MM\", not '%s'", key, v);
		r = -1;
	}
	return r;
}

static void read_days(struct config_ctx *x, const config_setting_t *s, struct profile_conf *p)
{
	const config_setting_t *m = config_setting_get_member(s, "days");
	int n;

	p->days = 0x7f;
	if (!m)
		return;
	n = config_setting_length(m);
	if (!config_setting_is_array(m) && !config_setting_is_list(m)) {
		cfg_error(x, m, "'days' must be a list of day names such as [ \"mon\", \"fri\" ]");
		return;
	}
	if (n == 0) {
		cfg_error(x, m, "'days' must name at least one day");
		return;
	}
	p->days = 0;
	for (int i = 0; i < n; i++) {
		const config_setting_t *e = config_setting_get_elem(m, (unsigned)i);
		const char *d = config_setting_get_string(e);
		int k;

		if (!d) {
			cfg_error(x, m, "'days' must be a list of day names such as [ \"mon\", \"fri\" ]");
			return;
		}
		for (k = 0; k < 7; k++)
			if (strcasecmp(d, day_names[k]) == 0 || strcasecmp(d, day_full_names[k]) == 0)
				break;
		if (k == 7)
			cfg_error(x, m, "unknown day '%s' (use mon, tue, wed, thu, fri, sat or sun)", d);
		else
			p->days |= 1u << k;
	}
}

static void read_recurrence(struct config_ctx *x, const config_setting_t *s, struct profile_conf *p)
{
	int rs, re;

	cfg_check_keys(x, s, recurrence_keys, N_ELEMS(recurrence_keys));
	read_days(x, s, p);
	rs = read_time_of_day(x, s, "start", false, &p->start_minute);
	re = read_time_of_day(x, s, "end", true, &p->end_minute);
	if (rs > 0 && re > 0 && p->start_minute == p->end_minute)
		cfg_error(x, config_setting_get_member(s, "end"), "'start' and 'end' must differ");
	read_zone(x, s, p);
}

static int read_datetime(struct config_ctx *x, const config_setting_t *s, const char *key, void *tz, int64_t *ret)
{
	char *v = NULL;
	int r = cfg_get_string(x, s, key, &v);

	if (r == 0)
		return cfg_need(x, s, key);
	if (r > 0 && schedule_parse_datetime(v, tz, ret) < 0) {
		cfg_error(x, config_setting_get_member(s, key),
			  "'%s' must be a date and time such as \"2026-11-27T08:00:00\", not '%s'", key, v);
		r = -1;
	}
	return r;
}

static void read_fixed(struct config_ctx *x, const config_setting_t *s, struct profile_conf *p)
{
	int rs, re;

	cfg_check_keys(x, s, fixed_keys, N_ELEMS(fixed_keys));
	read_zone(x, s, p);
	rs = read_datetime(x, s, "start", p->tz, &p->start_ms);
	re = read_datetime(x, s, "end", p->tz, &p->end_ms);
	if (rs > 0 && re > 0 && p->end_ms <= p->start_ms)
		cfg_error(x, config_setting_get_member(s, "end"), "'end' must be after 'start'");
	if (rs <= 0 || re <= 0)
		p->start_ms = p->end_ms = 0; /* Not compared for overlaps. */
}

static bool whole(double v, double lo, double hi)
{
	return v == floor(v) && v >= lo && v <= hi;
}

static void check_rule_value(struct config_ctx *x, const config_setting_t *m, const struct rule_conf *r)
{
	int limit = r->direction == DIR_IN ? 100 : 1000;

	switch (r->change) {
	case CHANGE_COUNT:
		if (!whole(r->value, 1, CONFIG_MAX_COUNT))
			cfg_error(x, m, "'value' must be a whole number from 1 to %d with change 'count', not %g",
				  CONFIG_MAX_COUNT, r->value);
		break;
	case CHANGE_EXACT:
		if (!whole(r->value, 0, CONFIG_MAX_COUNT))
			cfg_error(x, m, "'value' must be a whole number from 0 to %d with change 'exact', not %g",
				  CONFIG_MAX_COUNT, r->value);
		break;
	case CHANGE_PERCENT:
		if (r->value <= 0 || r->value > limit)
			cfg_error(x, m,
				  "'value' must be greater than 0 and at most %d with change 'percent' and direction '%s', not %g",
				  limit, direction_name(r->direction), r->value);
		break;
	}
}

static void read_rule(struct config_ctx *x, const config_setting_t *s, const struct group_conf *g,
		      struct rule_conf *r)
{
	/* A rule names a direction, never "none"; the words are the table's. */
	const struct enum_name directions[] = { { direction_name(DIR_OUT), DIR_OUT }, { direction_name(DIR_IN), DIR_IN } };
	int v, rop, rdir, rchange, rvalue;

	r->file = cfg_file_name(x, s);
	r->line = (int)s->line;
	r->signal_index = -1;
	r->window_ms = 300 * MS_PER_SEC;
	r->statistic = AGG_AVG;
	r->change = CHANGE_COUNT;
	r->cooldown_ms = 300 * MS_PER_SEC;
	cfg_check_keys(x, s, rule_keys, N_ELEMS(rule_keys));
	v = cfg_get_string(x, s, "signal", &r->signal);
	if (v == 0)
		cfg_need(x, s, "signal");
	else if (v > 0)
		r->signal_index = resolve_signal(x, config_setting_get_member(s, "signal"), g, r->signal, "rule refers to");
	cfg_get_duration(x, s, "window", 0, CONFIG_MAX_STABILIZATION_MS, &r->window_ms);
	if (cfg_get_enum(x, s, "statistic", cfg_aggregations, N_AGGREGATIONS, &v) > 0)
		r->statistic = (enum aggregation)v;
	if ((rop = cfg_get_enum(x, s, "operator", cfg_operators, N_OPERATORS, &v)) == 0)
		cfg_need(x, s, "operator");
	else if (rop > 0)
		r->op = (enum rule_operator)v;
	if (cfg_get_number(x, s, "threshold", &r->threshold) == 0)
		cfg_need(x, s, "threshold");
	if ((rdir = cfg_get_enum(x, s, "direction", directions, N_ELEMS(directions), &v)) == 0)
		cfg_need(x, s, "direction");
	else if (rdir > 0)
		r->direction = (enum scale_direction)v;
	if ((rchange = cfg_get_enum(x, s, "change", changes, N_ELEMS(changes), &v)) > 0)
		r->change = (enum change_type)v;
	if ((rvalue = cfg_get_number(x, s, "value", &r->value)) == 0)
		cfg_need(x, s, "value");
	if (rvalue > 0 && rdir > 0 && rchange >= 0)
		check_rule_value(x, config_setting_get_member(s, "value"), r);
	cfg_get_duration(x, s, "cooldown", 0, 86400 * MS_PER_SEC, &r->cooldown_ms);
}

static void read_targets(struct config_ctx *x, const config_setting_t *s, const struct group_conf *g,
			 struct profile_conf *p)
{
	const config_setting_t *t = cfg_get_group(x, s, "targets");
	size_t n;

	if (!t)
		return;
	n = (size_t)config_setting_length(t);
	if (n > CONFIG_MAX_SIGNALS) {
		cfg_error(x, t, "'targets' has %zu entries; at most %d are allowed", n, CONFIG_MAX_SIGNALS);
		return;
	}
	p->targets = cfg_alloc(x, n, sizeof(*p->targets));
	if (!p->targets)
		return;
	for (size_t i = 0; i < n; i++) {
		const config_setting_t *m = config_setting_get_elem(t, (unsigned)i);
		struct target_override *o = &p->targets[p->n_targets];

		o->signal = cfg_strdup(x, config_setting_name(m));
		if (!o->signal)
			return;
		p->n_targets++;
		o->signal_index = resolve_signal(x, m, g, o->signal, "target override for");
		cfg_get_positive(x, t, o->signal, &o->target);
	}
}

static void read_profile(struct config_ctx *x, const config_setting_t *s, const struct group_conf *g,
			 struct profile_conf *p)
{
	const config_setting_t *sched, *rules;
	bool has_rec, has_fix;
	size_t n;

	p->file = cfg_file_name(x, s);
	p->line = (int)s->line;
	p->kind = PROFILE_DEFAULT;
	cfg_check_keys(x, s, profile_keys, N_ELEMS(profile_keys));
	cfg_get_name(x, s, "profile", &p->name);
	has_rec = config_setting_get_member(s, "recurrence") != NULL;
	has_fix = config_setting_get_member(s, "fixed") != NULL;
	/* A profile that tries to be scheduled is never taken for the default
	 * one, even when its schedule is wrong. */
	if (has_rec && has_fix) {
		cfg_error(x, s, "a profile may have 'recurrence' or 'fixed', not both");
		p->kind = PROFILE_RECURRENCE;
	} else if (has_rec) {
		p->kind = PROFILE_RECURRENCE;
		if ((sched = cfg_get_group(x, s, "recurrence")))
			read_recurrence(x, sched, p);
	} else if (has_fix) {
		p->kind = PROFILE_FIXED;
		if ((sched = cfg_get_group(x, s, "fixed")))
			read_fixed(x, sched, p);
	}
	read_bounds(x, s, p);
	rules = cfg_get_list(x, s, "rules", CONFIG_MAX_RULES, &n);
	if (rules && n > 0) {
		p->rules = cfg_alloc(x, n, sizeof(*p->rules));
		if (!p->rules)
			return;
		for (size_t i = 0; i < n; i++) {
			const config_setting_t *e = cfg_list_group(x, rules, i);

			if (e)
				read_rule(x, e, g, &p->rules[p->n_rules++]);
		}
	}
	read_targets(x, s, g, p);
}

static void profile_error(struct config_ctx *x, const struct profile_conf *p, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void profile_error(struct config_ctx *x, const struct profile_conf *p, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cfg_error_at(x, cfg_file_index(x, p->file), p->line, "%s", msg);
}

/* Checks across the profiles of a group: names, the one default profile,
 * overlapping fixed dates. */
static const struct profile_conf *check_profiles(struct config_ctx *x, const struct group_conf *g)
{
	const struct profile_conf *def = NULL;

	for (size_t i = 0; i < g->n_profiles; i++) {
		const struct profile_conf *p = &g->profiles[i];

		for (size_t j = 0; p->name && j < i; j++) {
			if (g->profiles[j].name && strcmp(g->profiles[j].name, p->name) == 0) {
				profile_error(x, p, "duplicate profile name '%s' (first defined at %s:%d)", p->name,
					      g->profiles[j].file, g->profiles[j].line);
				break;
			}
		}
		if (p->kind == PROFILE_DEFAULT) {
			if (def)
				profile_error(x, p,
					      "profile '%s' is a second default profile (one without 'recurrence' or 'fixed'); the first is '%s'",
					      p->name ? p->name : "", def->name ? def->name : "");
			else
				def = p;
		}
		if (p->kind != PROFILE_FIXED || p->end_ms <= p->start_ms)
			continue;
		for (size_t j = 0; j < i; j++) {
			const struct profile_conf *q = &g->profiles[j];

			if (q->kind == PROFILE_FIXED && q->end_ms > q->start_ms && p->start_ms < q->end_ms &&
			    q->start_ms < p->end_ms) {
				profile_error(x, p, "fixed-date profile '%s' overlaps '%s' (defined at %s:%d)",
					      p->name ? p->name : "", q->name ? q->name : "", q->file, q->line);
				break;
			}
		}
	}
	return def;
}

void cfg_read_profiles(struct config_ctx *x, const config_setting_t *s, struct group_conf *g)
{
	static const char *const bounds[] = { "min", "max", "default" };
	const config_setting_t *list = cfg_get_list(x, s, "profiles", CONFIG_MAX_PROFILES, &(size_t){ 0 });
	size_t n = list ? (size_t)config_setting_length(list) : 0;
	const struct profile_conf *def;
	bool shorthand = false;

	g->profiles = cfg_alloc(x, n + 1, sizeof(*g->profiles));
	if (!g->profiles)
		return;
	for (size_t i = 0; i < n; i++) {
		const config_setting_t *e = cfg_list_group(x, list, i);

		if (e)
			read_profile(x, e, g, &g->profiles[g->n_profiles++]);
	}
	def = check_profiles(x, g);
	for (size_t i = 0; i < N_ELEMS(bounds); i++) {
		const config_setting_t *m = config_setting_get_member(s, bounds[i]);

		if (m && def)
			cfg_error(x, m, "'%s' of the group conflicts with default profile '%s'; set it in that profile",
				  bounds[i], def->name ? def->name : "");
		shorthand = shorthand || m;
	}
	if (def)
		return;
	if (!shorthand) {
		cfg_error(x, s, "no default profile: set 'min' and 'max' in the group or add a profile without 'recurrence' or 'fixed'");
		return;
	}
	if (g->n_profiles == CONFIG_MAX_PROFILES) {
		cfg_error(x, list, "'profiles' has %d entries; at most %d are allowed with the group's own 'min' and 'max'",
			  CONFIG_MAX_PROFILES, CONFIG_MAX_PROFILES - 1);
		return;
	}
	{
		struct profile_conf *p = &g->profiles[g->n_profiles++];

		p->name = cfg_strdup(x, "default");
		p->kind = PROFILE_DEFAULT;
		p->file = g->file;
		p->line = g->line;
		read_bounds(x, s, p);
	}
}

static void read_policies(struct config_ctx *x, const config_setting_t *s, struct direction_behavior *d)
{
	struct rate_policy *read;
	size_t n;
	const config_setting_t *list = cfg_get_list(x, s, "policies", CONFIG_MAX_POLICIES, &n);

	if (!list)
		return;
	/* Policies that are given replace the defaults; an empty list means
	 * no rate limit in this direction. */
	d->n_policies = 0;
	d->policies = NULL;
	if (n == 0)
		return;
	read = cfg_alloc(x, n, sizeof(*read));
	if (!read)
		return;
	d->policies = read;
	for (size_t i = 0; i < n; i++) {
		const config_setting_t *e = cfg_list_group(x, list, i);
		struct rate_policy *p = &read[d->n_policies];
		int v, rt, rv;

		if (!e)
			continue;
		d->n_policies++;
		p->period_ms = 15 * MS_PER_SEC;
		cfg_check_keys(x, e, policy_keys, N_ELEMS(policy_keys));
		if ((rt = cfg_get_enum(x, e, "type", policy_types, N_ELEMS(policy_types), &v)) == 0)
			cfg_need(x, e, "type");
		else if (rt > 0)
			p->type = (enum policy_type)v;
		if ((rv = cfg_get_positive(x, e, "value", &p->value)) == 0)
			cfg_need(x, e, "value");
		if (rt > 0 && rv > 0 && p->type == POLICY_INSTANCES && p->value != floor(p->value))
			cfg_error(x, config_setting_get_member(e, "value"), "'value' must be a whole number of instances, not %g",
				  p->value);
		cfg_get_duration(x, e, "period", 1 * MS_PER_SEC, 3600 * MS_PER_SEC, &p->period_ms);
	}
}

static void read_direction(struct config_ctx *x, const config_setting_t *s, const char *key,
			   struct direction_behavior *d, struct behavior_conf *b)
{
	const config_setting_t *m = cfg_get_group(x, s, key);
	int v;

	if (!m)
		return;
	/* Only scale-in can be lazy: the keys of the cost of a relaunch. */
	if (b) {
		cfg_check_keys(x, m, scale_in_keys, N_ELEMS(scale_in_keys));
		cfg_get_bool(x, m, "lazy", &b->lazy_scale_in);
		cfg_get_duration(x, m, "billing_minimum", 0, 86400 * MS_PER_SEC, &b->billing_minimum_ms);
		cfg_get_duration(x, m, "billing_granularity", 1 * MS_PER_SEC, 86400 * MS_PER_SEC, &b->billing_granularity_ms);
	} else {
		cfg_check_keys(x, m, direction_keys, N_ELEMS(direction_keys));
	}
	cfg_get_duration(x, m, "stabilization", 0, CONFIG_MAX_STABILIZATION_MS, &d->stabilization_ms);
	if (cfg_get_enum(x, m, "select", selects, N_ELEMS(selects), &v) > 0)
		d->select = (enum select_policy)v;
	read_policies(x, m, d);
}

void cfg_read_behavior(struct config_ctx *x, const config_setting_t *s, struct group_conf *g)
{
	struct behavior_conf *b = &g->behavior;
	const config_setting_t *m;
	int v;

	/* DESIGN.md section 3: scale out by the larger of 4 instances or 100 %
	 * per 15 s at once; scale in by up to 100 % per 15 s after holding the
	 * highest recommendation of the last 300 s. */
	static const struct rate_policy out_policies[] = { { POLICY_INSTANCES, 4, 15 * MS_PER_SEC },
							   { POLICY_PERCENT, 100, 15 * MS_PER_SEC } };
	static const struct rate_policy in_policies[] = { { POLICY_PERCENT, 100, 15 * MS_PER_SEC } };

	b->scale_out = (struct direction_behavior){
		.stabilization_ms = 0,
		.select = SELECT_MAX,
		.policies = out_policies,
		.n_policies = N_ELEMS(out_policies),
	};
	b->scale_in = (struct direction_behavior){
		.stabilization_ms = 300 * MS_PER_SEC,
		.select = SELECT_MAX,
		.policies = in_policies,
		.n_policies = N_ELEMS(in_policies),
	};
	b->initialization_ms = 60 * MS_PER_SEC;
	b->on_missing = ON_MISSING_HOLD;
	b->boot_time_ms = 120 * MS_PER_SEC;
	b->lazy_scale_in = false;
	b->billing_minimum_ms = 60 * MS_PER_SEC;
	b->billing_granularity_ms = 1 * MS_PER_SEC;
	m = cfg_get_group(x, s, "behavior");
	if (!m)
		return;
	cfg_check_keys(x, m, behavior_keys, N_ELEMS(behavior_keys));
	read_direction(x, m, "scale_out", &b->scale_out, NULL);
	read_direction(x, m, "scale_in", &b->scale_in, b);
	cfg_get_duration(x, m, "boot_time", 1 * MS_PER_SEC, 3600 * MS_PER_SEC, &b->boot_time_ms);
	cfg_get_duration(x, m, "initialization_period", 0, 3600 * MS_PER_SEC, &b->initialization_ms);
	if (cfg_get_enum(x, m, "on_missing", cfg_on_missings, N_ON_MISSINGS, &v) > 0)
		b->on_missing = (enum on_missing)v;
}
