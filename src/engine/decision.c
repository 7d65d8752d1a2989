/* Decision records: the sentence a human reads and the JSON the journal, the
 * admin API and `explain` carry. Both only read the decision and the group
 * configuration it was made for. */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "engine/engine.h"
#include "base/iso8601.h"
#include "log/log.h"

const char *decision_hold_name(enum hold_reason h)
{
	switch (h) {
	case HOLD_NONE:
		return "none";
	case HOLD_SIGNALS_SAY_HOLD:
		return "signals_say_hold";
	case HOLD_INVALID_SIGNAL:
		return "invalid_signal";
	case HOLD_RULE_NOT_FIRED:
		return "rule_not_fired";
	case HOLD_ON_MISSING:
		return "on_missing";
	case HOLD_STABILIZATION:
		return "stabilization";
	case HOLD_RATE_LIMIT:
		return "rate_limit";
	case HOLD_FLAPPING:
		return "flapping";
	case HOLD_IN_FLIGHT:
		return "in_flight";
	case HOLD_SAFE_START:
		return "safe_start";
	case HOLD_PARTIAL:
		return "partial_observation";
	case HOLD_DRIVER_BUSY:
		return "driver_busy";
	case HOLD_PAUSED:
		return "paused";
	case HOLD_PINNED:
		return "pinned";
	case HOLD_NOT_OWNER:
		return "not_owner";
	case HOLD_HOST_CAPACITY:
		return "host_capacity";
	}
	return "unknown";
}

const char *decision_victims_name(enum victim_choice v)
{
	return v == VICTIMS_DRIVER ? "driver_policy" : v == VICTIMS_DRAIN ? "drain_order" : NULL;
}

/* A bounded string builder: appends stop at the end of the buffer, but the
 * length keeps counting, as snprintf's does. */
struct sbuf {
	char *buf;
	size_t len;
	size_t used;
};

__attribute__((format(printf, 2, 3))) static void sb_printf(struct sbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(sb->used < sb->len ? sb->buf + sb->used : NULL, sb->used < sb->len ? sb->len - sb->used : 0,
		      fmt, ap);
	va_end(ap);
	if (n > 0)
		sb->used += (size_t)n;
}

static void sb_sep(struct sbuf *sb)
{
	if (sb->used > 0)
		sb_printf(sb, "; ");
}

static void sentence_signals(struct sbuf *sb, const struct decision *d, const struct group_conf *g)
{
	size_t i;

	for (i = 0; i < d->n_signals && i < g->n_signals; i++) {
		const struct signal_conf *sc = &g->signals[i];
		const struct signal_decision *sd = &d->signals[i];

		sb_sep(sb);
		if (!sd->valid) {
			sb_printf(sb, "%s invalid (%s)", sc->name, sd->reason ? sd->reason : "no data");
			continue;
		}
		if (sd->rules_only)
			sb_printf(sb, "%s %g", sc->name, sd->value);
		else if (sc->type == SIGNAL_UTILIZATION)
			sb_printf(sb, "%s %g%% vs target %g%% -> %d", sc->name, sd->value, sd->target,
				  sd->recommendation);
		else
			sb_printf(sb, "%s %g vs %g/instance -> %d", sc->name, sd->value, sd->target,
				  sd->recommendation);
		if (sd->counted_as_zero > 0 || sd->counted_at_target > 0) {
			/* Say what HPA's substitutions did: a bare "within
			 * tolerance" would hide why a busy pool holds. */
			sb_printf(sb, " (");
			if (sd->counted_as_zero > 0)
				sb_printf(sb, "%d not yet ready counted as 0", sd->counted_as_zero);
			if (sd->counted_at_target > 0)
				sb_printf(sb, "%s%d without a sample counted at target", sd->counted_as_zero > 0 ? ", " : "",
					  sd->counted_at_target);
			sb_printf(sb, "%s)", sd->tolerance_hold ? ": hold" : "");
		} else if (sd->tolerance_hold) {
			sb_printf(sb, " (within tolerance)");
		}
		/* The forecast in both modes, so that an operator watching
		 * observe mode reads what it would have done. */
		if (sd->forecast) {
			const struct forecast_conf *fc = signal_forecast(sc);

			sb_printf(sb, " (forecast %g -> %d%s", sd->forecast_value, sd->forecast_recommendation,
				  fc->mode == FORECAST_ON ? (sd->forecast_raised ? ", raised" : "") : ", observed only");
			if (fc->mode == FORECAST_ON && fc->service_level > 0)
				sb_printf(sb, ", service offset %+.2f, short %.2f %%", sd->forecast_offset,
					  100.0 * sd->forecast_short);
			sb_printf(sb, ")");
		}
	}
}

static void sentence_rules(struct sbuf *sb, const struct decision *d, const struct group_conf *g)
{
	const struct profile_conf *p = &g->profiles[d->profile_index];
	size_t i;

	for (i = 0; i < d->n_rules && i < p->n_rules; i++) {
		const struct rule_conf *r = &p->rules[i];
		const struct rule_decision *rd = &d->rules[i];

		if (rd->fired) {
			sb_sep(sb);
			sb_printf(sb, "rule %zu (%s %g %s %g) fired -> %d", i + 1, r->signal, rd->value,
				  rule_operator_name(r->op), r->threshold, rd->proposal);
		} else if (rd->in_cooldown) {
			sb_sep(sb);
			sb_printf(sb, "rule %zu (%s) in cooldown", i + 1, r->signal);
		}
	}
}

static void sentence_combine(struct sbuf *sb, const struct decision *d, const struct group_conf *g)
{
	/* When the inputs already agree with the current count, the closing
	 * "no change from N" says all there is to say. */
	if (!d->on_missing_applied && d->hold != HOLD_INVALID_SIGNAL && d->hold != HOLD_RULE_NOT_FIRED &&
	    d->combined == d->current && d->driver_signal < 0)
		return;
	sb_sep(sb);
	if (d->on_missing_applied) {
		sb_printf(sb, "no valid signal: on_missing %s -> %d", on_missing_name(g->behavior.on_missing),
			  d->combined);
		return;
	}
	switch (d->hold) {
	case HOLD_INVALID_SIGNAL:
		sb_printf(sb, "an invalid signal blocks scale-in: hold %d", d->combined);
		return;
	case HOLD_RULE_NOT_FIRED:
		sb_printf(sb, "scale-in rule %d did not fire: hold %d", d->driver_rule + 1, d->combined);
		return;
	default:
		break;
	}
	if (d->driver_rule >= 0 && d->combined != d->current)
		sb_printf(sb, "rule %d decides -> %d", d->driver_rule + 1, d->combined);
	else
		sb_printf(sb, "max of signals");
}

int decision_sentence(const struct decision *d, const struct group_conf *g, char *buf, size_t len)
{
	struct sbuf sb = { .buf = buf, .len = len, .used = 0 };

	if (len > 0)
		buf[0] = '\0';
	sentence_signals(&sb, d, g);
	sentence_rules(&sb, d, g);
	sentence_combine(&sb, d, g);
	if (d->clamped < d->combined) {
		sb_sep(&sb);
		sb_printf(&sb, "capped at max %d", d->max);
	} else if (d->clamped > d->combined) {
		sb_sep(&sb);
		sb_printf(&sb, "raised to min %d", d->min);
	}
	if (d->stabilized != d->clamped) {
		sb_sep(&sb);
		sb_printf(&sb, "held at %d by the %s stabilization window (%" PRId64 " s)", d->stabilized,
			  direction_noun(d->stabilized > d->clamped ? DIR_IN : DIR_OUT),
			  (d->stabilized > d->clamped ? g->behavior.scale_in.stabilization_ms
						      : g->behavior.scale_out.stabilization_ms) /
				  MS_PER_SEC);
	}
	if (d->rate_limited != d->stabilized) {
		sb_sep(&sb);
		sb_printf(&sb, "rate limit allows %d", d->rate_limited);
	}
	if (d->flap_guarded != d->rate_limited) {
		sb_sep(&sb);
		sb_printf(&sb, "flapping guard: %d, as fewer would fire a scale-out rule", d->flap_guarded);
	}
	/* Step 9: an operator's word, then what the agent knows about
	 * itself. Each says why the count does not move, or to what the
	 * operator moved it. */
	if (d->override && d->hold == HOLD_PAUSED) {
		sb_sep(&sb);
		sb_printf(&sb, "paused by an operator: not acting");
	} else if (d->override) {
		sb_sep(&sb);
		sb_printf(&sb, "pinned at %d by an operator%s", d->pin_count, d->pin_forced ? " (forced)" : "");
		if (d->operated != d->pin_count)
			sb_printf(&sb, ", within [%d, %d]: %d", d->min, d->max, d->operated);
	}
	switch (d->hold) {
	case HOLD_IN_FLIGHT:
		sb_sep(&sb);
		sb_printf(&sb, "a %s is in flight: hold %d", direction_noun(d->operated > d->current ? DIR_OUT : DIR_IN),
			  d->current);
		break;
	case HOLD_DRIVER_BUSY:
		sb_sep(&sb);
		sb_printf(&sb, "the driver is still carrying out another operation: no %s until it ends: hold %d",
			  direction_noun(d->operated > d->current ? DIR_OUT : DIR_IN), d->current);
		break;
	case HOLD_PARTIAL:
		sb_sep(&sb);
		sb_printf(&sb, "some members could not be observed: no scale-in on a partial observation: hold %d",
			  d->current);
		break;
	case HOLD_SAFE_START:
		sb_sep(&sb);
		sb_printf(&sb, "no scale-in until the windows are refilled after a restart: hold %d", d->current);
		break;
	case HOLD_NOT_OWNER:
		sb_sep(&sb);
		sb_printf(&sb, "this agent does not own the group in the cluster (another agent does, or its lease is "
			       "not valid): not acting: hold %d",
			  d->current);
		break;
	case HOLD_HOST_CAPACITY:
		sb_sep(&sb);
		sb_printf(&sb, "capped by hosts, not by max: they can take %d more of the %d asked for", d->host_room,
			  d->host_capped_from - d->current);
		break;
	default:
		break;
	}
	sb_sep(&sb);
	if (d->action == DIR_NONE)
		sb_printf(&sb, "no change from %d", d->current);
	else
		sb_printf(&sb, "%s %d -> %d", d->action == DIR_OUT ? "scale out" : "scale in", d->current,
			  d->desired);
	/* Who picks the victims is part of the decision: with a drain hook
	 * it is not the driver's victim_policy, which the record must not let
	 * a reader assume. */
	if (d->victims == VICTIMS_DRAIN)
		sb_printf(&sb, " (victims: not yet serving first, then the newest, drained by the pre-scale-in hook;"
			       " the driver's victim_policy does not apply)");
	return (int)sb.used;
}

static void format_time(int64_t ms, char *buf, size_t len)
{
	if (iso8601_format(ms, ISO8601_MILLIS, buf, len) < 0)
		snprintf(buf, len, "%" PRId64, ms);
}

/* Adds a number, or null when it is not known. */
static bool add_number_or_null(cJSON *o, const char *key, bool known, double v)
{
	return known ? cJSON_AddNumberToObject(o, key, v) != NULL : cJSON_AddNullToObject(o, key) != NULL;
}

/* "forecast": null without a forecaster, else what it predicts one boot
 * time ahead, the instances that needs, those it keeps for the lazy
 * scale-in, whether it was acted on, and the service level with what it
 * moved the quantiles by and the share of samples short it measured over
 * about a day (null without one, or in mode observe). */
static bool add_forecast(cJSON *o, const struct decision *d, const struct signal_decision *sd,
			 const struct signal_conf *sc)
{
	const struct forecast_conf *fc = signal_forecast(sc);
	/* A service level acts in mode on only (autoscaled.conf(5)). */
	bool service = fc->mode == FORECAST_ON && fc->service_level > 0;
	cJSON *f;

	if (!sd->forecast)
		return cJSON_AddNullToObject(o, "forecast") != NULL;
	f = cJSON_AddObjectToObject(o, "forecast");
	/* "now" is the group total the forecast is compared with when its
	 * time comes ("for_ms"): the mean times the ready instances for a
	 * utilization, the value for an average. */
	return f && cJSON_AddStringToObject(f, "mode", fc->mode == FORECAST_ON ? "on" : "observe") &&
	       cJSON_AddNumberToObject(f, "made_ms", (double)d->time_ms) &&
	       cJSON_AddNumberToObject(f, "for_ms", (double)(d->time_ms + d->boot_ms)) &&
	       (sd->valid ? cJSON_AddNumberToObject(f, "now", sc->type == SIGNAL_UTILIZATION ? sd->value * d->ready
											: sd->value)
			  : cJSON_AddNullToObject(f, "now")) &&
	       cJSON_AddNumberToObject(f, "value", sd->forecast_value) &&
	       cJSON_AddNumberToObject(f, "recommendation", sd->forecast_recommendation) &&
	       cJSON_AddNumberToObject(f, "keep", sd->keep_recommendation) &&
	       cJSON_AddBoolToObject(f, "raised", sd->forecast_raised) &&
	       add_number_or_null(f, "service_level", service, fc->service_level) &&
	       add_number_or_null(f, "service_offset", service, sd->forecast_offset) &&
	       add_number_or_null(f, "service_short", service, sd->forecast_short);
}

static bool add_signals(cJSON *root, const struct decision *d, const struct group_conf *g)
{
	cJSON *arr = cJSON_AddArrayToObject(root, "signals");
	size_t i;

	if (!arr)
		return false;
	for (i = 0; i < d->n_signals && i < g->n_signals; i++) {
		const struct signal_decision *sd = &d->signals[i];
		cJSON *o = cJSON_CreateObject();

		if (!o || !cJSON_AddItemToArray(arr, o))
			return cJSON_Delete(o), false;
		if (!cJSON_AddStringToObject(o, "name", g->signals[i].name) ||
		    !cJSON_AddStringToObject(o, "type", signal_type_name(g->signals[i].type)) ||
		    !cJSON_AddBoolToObject(o, "valid", sd->valid) ||
		    !add_number_or_null(o, "value", sd->valid, sd->value) ||
		    !cJSON_AddNumberToObject(o, "target", sd->target) ||
		    !add_number_or_null(o, "recommendation", sd->valid && !sd->rules_only, sd->recommendation) ||
		    !cJSON_AddBoolToObject(o, "within_tolerance", sd->tolerance_hold) ||
		    !cJSON_AddNumberToObject(o, "counted_as_zero", sd->counted_as_zero) ||
		    !cJSON_AddNumberToObject(o, "counted_at_target", sd->counted_at_target))
			return false;
		if (sd->valid ? !cJSON_AddNullToObject(o, "reason")
			      : !cJSON_AddStringToObject(o, "reason", sd->reason ? sd->reason : "no data"))
			return false;
		if (!add_forecast(o, d, sd, &g->signals[i]))
			return false;
	}
	return true;
}

static bool add_rules(cJSON *root, const struct decision *d, const struct group_conf *g)
{
	const struct profile_conf *p = &g->profiles[d->profile_index];
	cJSON *arr = cJSON_AddArrayToObject(root, "rules");
	size_t i;

	if (!arr)
		return false;
	for (i = 0; i < d->n_rules && i < p->n_rules; i++) {
		const struct rule_decision *rd = &d->rules[i];
		const struct rule_conf *r = &p->rules[i];
		cJSON *o = cJSON_CreateObject();

		if (!o || !cJSON_AddItemToArray(arr, o))
			return cJSON_Delete(o), false;
		if (!cJSON_AddNumberToObject(o, "index", (double)i) ||
		    !cJSON_AddStringToObject(o, "signal", r->signal) ||
		    !cJSON_AddStringToObject(o, "direction", direction_name(r->direction)) ||
		    !cJSON_AddBoolToObject(o, "fired", rd->fired) ||
		    !cJSON_AddBoolToObject(o, "in_cooldown", rd->in_cooldown) ||
		    !add_number_or_null(o, "value", rd->evaluated, rd->value) ||
		    !add_number_or_null(o, "proposal", rd->fired, rd->proposal))
			return false;
	}
	return true;
}

/* The agent's inputs of step 9, as the engine was given them. */
static bool add_inputs(cJSON *root, const struct decision *d)
{
	cJSON *o = cJSON_AddObjectToObject(root, "inputs"), *pin;

	if (!o || !cJSON_AddBoolToObject(o, "stable", d->stable) ||
	    !(d->in_flight != DIR_NONE ? cJSON_AddStringToObject(o, "in_flight", d->in_flight == DIR_OUT ? "out" : "in")
				       : cJSON_AddNullToObject(o, "in_flight")) ||
	    !cJSON_AddBoolToObject(o, "busy", d->busy) || !cJSON_AddBoolToObject(o, "partial", d->partial) ||
	    !cJSON_AddBoolToObject(o, "paused", d->hold == HOLD_PAUSED) ||
	    !add_number_or_null(o, "host_room", d->host_bounded, d->host_room))
		return false;
	if (!d->pinned)
		return cJSON_AddNullToObject(o, "pin") != NULL;
	pin = cJSON_AddObjectToObject(o, "pin");
	return pin && cJSON_AddNumberToObject(pin, "count", d->pin_count) &&
	       cJSON_AddBoolToObject(pin, "forced", d->pin_forced);
}

cJSON *decision_to_json(const struct decision *d, const struct group_conf *g)
{
	cJSON *root = cJSON_CreateObject();
	char when[48], sentence[1024];

	if (!root)
		return NULL;
	format_time(d->time_ms, when, sizeof(when));
	decision_sentence(d, g, sentence, sizeof(sentence));
	if (!cJSON_AddStringToObject(root, "time", when) || !cJSON_AddStringToObject(root, "group", d->group) ||
	    !cJSON_AddStringToObject(root, "profile", d->profile) ||
	    !cJSON_AddNumberToObject(root, "current", d->current) ||
	    !cJSON_AddNumberToObject(root, "ready", d->ready) || !cJSON_AddNumberToObject(root, "min", d->min) ||
	    !cJSON_AddNumberToObject(root, "max", d->max) || !cJSON_AddNumberToObject(root, "default", d->def) ||
	    !add_signals(root, d, g) || !add_rules(root, d, g) || !add_inputs(root, d) ||
	    !cJSON_AddBoolToObject(root, "on_missing_applied", d->on_missing_applied) ||
	    !cJSON_AddNumberToObject(root, "combined", d->combined) ||
	    !cJSON_AddNumberToObject(root, "clamped", d->clamped) ||
	    !cJSON_AddNumberToObject(root, "stabilized", d->stabilized) ||
	    !cJSON_AddNumberToObject(root, "rate_limited", d->rate_limited) ||
	    !cJSON_AddNumberToObject(root, "flap_guarded", d->flap_guarded) ||
	    !cJSON_AddNumberToObject(root, "final", d->desired) ||
	    !cJSON_AddNumberToObject(root, "desired", d->desired) ||
	    !cJSON_AddStringToObject(root, "action", direction_action(d->action)) ||
	    !cJSON_AddStringToObject(root, "hold", decision_hold_name(d->hold)) ||
	    !(d->override ? cJSON_AddStringToObject(root, "override", d->override)
			  : cJSON_AddNullToObject(root, "override")) ||
	    !(decision_victims_name(d->victims) ? cJSON_AddStringToObject(root, "victims", decision_victims_name(d->victims))
						 : cJSON_AddNullToObject(root, "victims")) ||
	    !(d->driver_signal >= 0 && (size_t)d->driver_signal < g->n_signals
		      ? cJSON_AddStringToObject(root, "driver_signal", g->signals[d->driver_signal].name)
		      : cJSON_AddNullToObject(root, "driver_signal")) ||
	    !(d->driver_rule >= 0 ? cJSON_AddNumberToObject(root, "driver_rule", d->driver_rule)
				  : cJSON_AddNullToObject(root, "driver_rule")) ||
	    !cJSON_AddNumberToObject(root, "boot_time_s", (double)d->boot_ms / 1000.0) ||
	    !(d->keep_ms > 0 ? cJSON_AddNumberToObject(root, "keep_s", (double)d->keep_ms / 1000.0)
			     : cJSON_AddNullToObject(root, "keep_s")) ||
	    !cJSON_AddStringToObject(root, "explanation", sentence)) {
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}

size_t decision_journal_fields(const struct decision *d, struct decision_field_buf *buf, struct log_field *f)
{
	snprintf(buf->desired, sizeof(buf->desired), "%d", d->desired);
	snprintf(buf->current, sizeof(buf->current), "%d", d->current);
	f[0] = (struct log_field){"ACTION", direction_action(d->action)};
	f[1] = (struct log_field){"HOLD", decision_hold_name(d->hold)};
	f[2] = (struct log_field){"PROFILE", d->profile};
	f[3] = (struct log_field){"DESIRED", buf->desired};
	f[4] = (struct log_field){"CURRENT", buf->current};
	return DECISION_JOURNAL_FIELDS;
}

/* The packed form: the two counts, then the decision's bytes in 8-byte
 * words (up to its signals, the signals it has, what lies between the
 * signals and the rules, the rules it has, and the rest), of which only
 * the words that are not zero are kept, after a bitmap of which they are.
 * Most of a kept decision is zero (a signal without a forecast has five
 * zero fields, a hold no host bound, a group no pin): three signals and no
 * rule take 248 bytes in a steady group instead of 432, for each of 10,000
 * groups.
 * Offsets, not field names, so that a field added to struct decision is
 * kept without a change here. */
#define AT_SIGNALS offsetof(struct decision, signals)
#define AFTER_SIGNALS (offsetof(struct decision, signals) + sizeof(((struct decision *)0)->signals))
#define AT_RULES offsetof(struct decision, rules)
#define AFTER_RULES (offsetof(struct decision, rules) + sizeof(((struct decision *)0)->rules))
#define WORD sizeof(uint64_t)

_Static_assert(AT_SIGNALS % WORD == 0 && sizeof(((struct decision *)0)->signals[0]) % WORD == 0 &&
		       AFTER_SIGNALS % WORD == 0 && AT_RULES % WORD == 0 &&
		       sizeof(((struct decision *)0)->rules[0]) % WORD == 0 && AFTER_RULES % WORD == 0 &&
		       sizeof(struct decision) % WORD == 0,
	       "a decision's packed parts are whole words");

struct packed_counts {
	size_t n_signals, n_rules;
};

/* The parts of a decision with N_SIGNALS signals and N_RULES rules that
 * are packed, as byte ranges of struct decision. */
struct packed_part {
	size_t at, len;
};
#define PACKED_PARTS 5

/* Fills P; returns the bytes of the bitmap of their words. */
static size_t packed_parts(size_t n_signals, size_t n_rules, struct packed_part *p)
{
	size_t words = 0;

	p[0] = (struct packed_part){0, AT_SIGNALS};
	p[1] = (struct packed_part){AT_SIGNALS, n_signals * sizeof(((struct decision *)0)->signals[0])};
	p[2] = (struct packed_part){AFTER_SIGNALS, AT_RULES - AFTER_SIGNALS};
	p[3] = (struct packed_part){AT_RULES, n_rules * sizeof(((struct decision *)0)->rules[0])};
	p[4] = (struct packed_part){AFTER_RULES, sizeof(struct decision) - AFTER_RULES};
	for (size_t k = 0; k < PACKED_PARTS; k++)
		words += p[k].len / WORD;
	return (words + 63) / 64 * WORD;
}

static uint64_t word_at(const struct decision *d, size_t at)
{
	uint64_t w;

	memcpy(&w, (const char *)d + at, WORD);
	return w;
}

size_t decision_packed_size(const struct decision *d)
{
	struct packed_part parts[PACKED_PARTS];
	size_t map_len = packed_parts(d->n_signals, d->n_rules, parts), kept = 0;

	for (size_t k = 0; k < PACKED_PARTS; k++)
		for (size_t at = parts[k].at; at < parts[k].at + parts[k].len; at += WORD)
			kept += word_at(d, at) != 0;
	return sizeof(struct packed_counts) + map_len + kept * WORD;
}

void decision_pack(const struct decision *d, void *buf)
{
	const struct packed_counts n = {d->n_signals, d->n_rules};
	struct packed_part parts[PACKED_PARTS];
	size_t words = 0, map_len = packed_parts(n.n_signals, n.n_rules, parts);
	char *map = (char *)buf + sizeof(n), *p = map + map_len;

	memcpy(buf, &n, sizeof(n));
	memset(map, 0, map_len);
	for (size_t k = 0; k < PACKED_PARTS; k++)
		for (size_t at = parts[k].at; at < parts[k].at + parts[k].len; at += WORD, words++) {
			uint64_t w = word_at(d, at);

			if (w) {
				map[words / 8] |= (char)(1u << (words % 8));
				p = mempcpy(p, &w, WORD);
			}
		}
}

void decision_unpack(const void *buf, struct decision *d)
{
	struct packed_counts n;
	struct packed_part parts[PACKED_PARTS];
	size_t words = 0;
	const unsigned char *map = (const unsigned char *)buf + sizeof(n);
	const char *p;

	memcpy(&n, buf, sizeof(n));
	memset(d, 0, sizeof(*d));
	p = (const char *)map + packed_parts(n.n_signals, n.n_rules, parts);
	for (size_t k = 0; k < PACKED_PARTS; k++)
		for (size_t at = parts[k].at; at < parts[k].at + parts[k].len; at += WORD, words++)
			if (map[words / 8] & (1u << (words % 8))) {
				memcpy((char *)d + at, p, WORD);
				p += WORD;
			}
}
