/* The admin API's view and commands of one group; see group.h.
 *
 * Commands change the persisted state (state.h) and save it at once; the
 * next evaluation applies them, so a pin or a pause acts within one
 * interval and survives a restart. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include <cjson/cJSON.h>

#include "admin/admin.h"
#include "base/clock.h"
#include "agent/group.h"
#include "agent/group-private.h" /* the members as last observed */
#include "cluster/cluster.h"
#include "log/log.h"

static void add_str_or_null(cJSON *o, const char *key, const char *v)
{
	if (v)
		cJSON_AddStringToObject(o, key, v);
	else
		cJSON_AddNullToObject(o, key);
}

/* The newest decision record, parsed (made now if it was not yet); NULL
 * when none. */
static cJSON *last_record(const struct group_rt *g)
{
	char *newest = group_rt_newest_record(g);
	cJSON *o = newest ? cJSON_Parse(newest) : NULL;

	free(newest);
	return o;
}

cJSON *group_admin_summary(const struct group_rt *g)
{
	const struct group_state *st = group_rt_state((struct group_rt *)g);
	struct decision last;
	const struct decision *d = group_rt_last(g, &last);
	cJSON *o = cJSON_CreateObject(), *rec;
	bool observed;
	int current = group_rt_current(g, &observed);

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "name", group_rt_name(g));
	if (observed)
		cJSON_AddNumberToObject(o, "current", current);
	else
		cJSON_AddNullToObject(o, "current");
	if (d) {
		cJSON_AddNumberToObject(o, "desired", d->desired);
		cJSON_AddStringToObject(o, "profile", d->profile);
	} else {
		cJSON_AddNullToObject(o, "desired");
		cJSON_AddNullToObject(o, "profile");
	}
	cJSON_AddBoolToObject(o, "paused", st->pause.active);
	if (st->pin.active)
		cJSON_AddNumberToObject(o, "pinned", st->pin.count);
	else
		cJSON_AddNullToObject(o, "pinned");
	cJSON_AddBoolToObject(o, "dry_run", group_rt_dry_run(g));
	/* In a cluster every agent shows every group with its owner, as this
	 * agent last read the owner keys: an operator can ask any agent. */
	if (g->ctx->cluster) {
		char owner[65];
		bool orphaned = false;

		cluster_group_owner(g->ctx->cluster, group_rt_name(g), owner, sizeof(owner), &orphaned);
		add_str_or_null(o, "owner", owner[0] ? owner : NULL);
		cJSON_AddBoolToObject(o, "acting_here", cluster_owns(g->ctx->cluster, group_rt_name(g)));
		cJSON_AddBoolToObject(o, "orphaned", orphaned);
	}
	add_str_or_null(o, "in_flight",
			st->in_flight.direction != DIR_NONE ? direction_name(st->in_flight.direction) : NULL);
	rec = last_record(g);
	add_str_or_null(o, "action", cJSON_GetStringValue(cJSON_GetObjectItem(rec, "action")));
	add_str_or_null(o, "explanation", cJSON_GetStringValue(cJSON_GetObjectItem(rec, "explanation")));
	cJSON_Delete(rec);
	return o;
}

/* The members as the driver last observed them; null before the first
 * observation. Times are the driver's (UTC), null when it does not know. */
static void add_members(cJSON *o, const struct group_rt *g)
{
	static const char *const states[] = {"provisioning", "running", "stopping"};
	cJSON *v, *m;

	if (!g->observed) {
		cJSON_AddNullToObject(o, "members");
		return;
	}
	v = cJSON_AddArrayToObject(o, "members");
	for (size_t i = 0; v && i < g->n_instances; i++) {
		const struct instance_obs *in = &g->instances[i];

		m = cJSON_CreateObject();
		if (!m || !cJSON_AddItemToArray(v, m)) {
			cJSON_Delete(m);
			return;
		}
		cJSON_AddStringToObject(m, "id", in->id ? in->id : "");
		cJSON_AddStringToObject(m, "state", (unsigned)in->state < 3 ? states[in->state] : "unknown");
		cJSON_AddBoolToObject(m, "ready", in->ready);
		admin_add_time(m, "created", in->created_ms);
		admin_add_time(m, "running_since", in->running_since_ms);
		if (in->location)
			cJSON_AddStringToObject(m, "location", in->location);
		else
			cJSON_AddNullToObject(m, "location");
	}
}

cJSON *group_admin_show(const struct group_rt *g)
{
	const struct group_state *st = group_rt_state((struct group_rt *)g);
	const struct group_conf *gc = group_rt_conf(g);
	struct decision last;
	const struct decision *d = group_rt_last(g, &last);
	static const char *const origins[] = {"fresh", "restored", "safe start"};
	struct clock_now now = clock_now();
	cJSON *o = group_admin_summary(g), *x, *rec;

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "driver", gc->driver);
	if (d) {
		cJSON_AddNumberToObject(o, "min", d->min);
		cJSON_AddNumberToObject(o, "max", d->max);
	}
	if (st->pause.active) {
		x = cJSON_AddObjectToObject(o, "pause");
		if (x)
			admin_add_time(x, "until", st->pause.until_ms);
	} else {
		cJSON_AddNullToObject(o, "pause");
	}
	if (st->pin.active) {
		x = cJSON_AddObjectToObject(o, "pin");
		if (x) {
			cJSON_AddNumberToObject(x, "count", st->pin.count);
			admin_add_time(x, "until", st->pin.until_ms);
			cJSON_AddBoolToObject(x, "forced", st->pin.forced);
		}
	} else {
		cJSON_AddNullToObject(o, "pin");
	}
	/* The summary's one word becomes the whole action here. */
	cJSON_DeleteItemFromObjectCaseSensitive(o, "in_flight");
	if (st->in_flight.direction != DIR_NONE) {
		x = cJSON_AddObjectToObject(o, "in_flight");
		if (x) {
			cJSON_AddStringToObject(x, "direction", direction_name(st->in_flight.direction));
			cJSON_AddNumberToObject(x, "from", st->in_flight.from);
			cJSON_AddNumberToObject(x, "to", st->in_flight.to);
			admin_add_time(x, "started", clock_mono_to_wall(now, st->in_flight.started_ms));
			cJSON_AddStringToObject(x, "request_id", st->in_flight.request_id);
		}
	} else {
		cJSON_AddNullToObject(o, "in_flight");
	}
	cJSON_AddStringToObject(o, "state", origins[group_rt_origin(g)]);
	/* The hold is monotonic (clock.h): shown as the time of day it ends,
	 * and only while it lasts. */
	admin_add_time(o, "no_scale_in_before", st->engine.no_scale_in_before_ms > now.mono_ms
							 ? clock_mono_to_wall(now, st->engine.no_scale_in_before_ms)
							 : 0);
	cJSON_AddItemToObject(o, "last_error", group_rt_last_error_json(g));
	add_members(o, g);
	rec = last_record(g);
	if (rec)
		cJSON_AddItemToObject(o, "last_decision", rec);
	else
		cJSON_AddNullToObject(o, "last_decision");
	return o;
}

cJSON *group_admin_decisions(const struct group_rt *g)
{
	return group_rt_records_json(g);
}

/* In a cluster, an operator's pause, pin and dry-run belong to the
 * group's owner, which keeps them in the group's record so that the next
 * owner keeps them too (cluster.h). Another agent refuses them, naming the
 * owner, rather than keep a setting no agent acting on the group has.
 * Returns 0 when G's state is this agent's, else -EREMOTE with why. */
static int state_owner_only(struct group_rt *g, char *err, size_t len)
{
	struct cluster *c = group_rt_ctx(g)->cluster;
	char owner[65];
	bool orphaned;

	if (group_rt_state_here(g))
		return 0;
	cluster_group_owner(c, group_rt_name(g), owner, sizeof(owner), &orphaned);
	if (owner[0])
		snprintf(err, len, "group '%s' is managed by agent '%s': send the command to that agent", group_rt_name(g),
			 owner);
	else
		snprintf(err, len, "no agent manages group '%s' now (it is being handed over, or etcd is unreachable): "
			 "try again", group_rt_name(g));
	return -EREMOTE;
}

int group_admin_pause(struct group_rt *g, int64_t until_ms, char *err, size_t len)
{
	struct group_state *st = group_rt_state(g);

	if (state_owner_only(g, err, len) < 0)
		return -EREMOTE;
	st->pause = (struct state_pause){.active = true, .until_ms = until_ms};
	group_rt_save(g);
	log_group(LOG_NOTICE, group_rt_name(g), NULL, NULL, "paused by the admin API%s", until_ms ? " with an expiry" : "");
	return 0;
}

int group_admin_resume(struct group_rt *g, char *err, size_t len)
{
	struct group_state *st = group_rt_state(g);

	if (state_owner_only(g, err, len) < 0)
		return -EREMOTE;
	if (!st->pause.active) {
		snprintf(err, len, "group '%s' is not paused", group_rt_name(g));
		return -EALREADY;
	}
	st->pause = (struct state_pause){0};
	group_rt_save(g);
	log_group(LOG_NOTICE, group_rt_name(g), NULL, NULL, "resumed by the admin API");
	return 0;
}

int group_admin_pin(struct group_rt *g, int count, int64_t until_ms, bool force, char *err, size_t len)
{
	struct group_state *st = group_rt_state(g);
	struct decision last;
	const struct decision *d = group_rt_last(g, &last);
	const struct profile_conf *p = group_default_profile(group_rt_conf(g));
	int lo = d ? d->min : p ? p->min : 0, hi = d ? d->max : p ? p->max : 0;

	if (state_owner_only(g, err, len) < 0)
		return -EREMOTE;
	if (!force && (count < lo || count > hi)) {
		snprintf(err, len,
			 "%d is outside the active profile's bounds [%d, %d]; pin it anyway with --force"
			 " (\"force\": true in the API)",
			 count, lo, hi);
		return -ERANGE;
	}
	st->pin = (struct state_pin){.active = true, .count = count, .until_ms = until_ms, .forced = force};
	group_rt_save(g);
	log_group(LOG_NOTICE, group_rt_name(g), NULL, NULL, "pinned at %d by the admin API%s", count,
		  force ? " (forced)" : "");
	return 0;
}

int group_admin_unpin(struct group_rt *g, char *err, size_t len)
{
	struct group_state *st = group_rt_state(g);

	if (state_owner_only(g, err, len) < 0)
		return -EREMOTE;
	if (!st->pin.active) {
		snprintf(err, len, "group '%s' is not pinned", group_rt_name(g));
		return -EALREADY;
	}
	st->pin = (struct state_pin){0};
	group_rt_save(g);
	log_group(LOG_NOTICE, group_rt_name(g), NULL, NULL, "unpinned by the admin API");
	return 0;
}

int group_admin_dry_run(struct group_rt *g, bool enabled, char *err, size_t len)
{
	struct group_state *st = group_rt_state(g);

	if (state_owner_only(g, err, len) < 0)
		return -EREMOTE;
	if (!enabled && group_rt_ctx(g)->dry_run) {
		snprintf(err, len, "the daemon runs in dry-run mode (--dry-run or agent.dry_run); no group can act");
		return -EALREADY;
	}
	st->dry_run = enabled ? STATE_DRY_RUN_ON : STATE_DRY_RUN_OFF;
	group_rt_save(g);
	log_group(LOG_NOTICE, group_rt_name(g), NULL, NULL, "dry run %s by the admin API", enabled ? "on" : "off");
	return 0;
}

int group_admin_what_if(struct group_rt *g, const struct admin_what_if *w, cJSON **ret, char *err, size_t len)
{
	struct engine_signal_input in[CONFIG_MAX_SIGNALS];
	struct window win[CONFIG_MAX_SIGNALS];
	bool given[CONFIG_MAX_SIGNALS] = {false};
	struct engine_state prior = group_rt_state(g)->engine, next;
	struct clock_now now = clock_now();
	struct observation obs;
	struct decision d;
	const char *sentence;
	char buf[1280];
	cJSON *o = NULL;
	int r = 0;

	if (!g->observed && w->current < 0) {
		snprintf(err, len, "group '%s' has not been observed yet: give the current count", g->gc->name);
		return -EINVAL;
	}
	/* The action pending in the state is taken as still in flight: a
	 * what-if does not settle it (the next evaluation does). */
	group_engine_inputs(g, group_rt_state(g)->in_flight.direction, &obs, in);
	/* A routine observation that happens to be running (or waiting for
	 * its turn) is not a hold the question is about: the daemon evaluates
	 * when it ends. A scale call, a drain or a driver open still holds,
	 * as it would then. */
	if (((g->job && g->job->kind == JOB_OBSERVE) || g->admit_pprev) && obs.in_flight == DIR_NONE && !g->drain)
		obs.busy = false;
	for (size_t i = 0; i < w->n_values; i++) {
		int s = group_find_signal(g->gc, w->signal[i]);

		if (s < 0) {
			snprintf(err, len, "group '%s' has no signal '%s'", g->gc->name, w->signal[i]);
			r = -EINVAL;
			goto out;
		}
		if (given[s]) {
			snprintf(err, len, "signal '%s' is given twice", w->signal[i]);
			r = -EINVAL;
			goto out;
		}
		/* As explain does: the value is the one sample of the window. */
		r = window_init(&win[s], 8);
		if (r < 0)
			goto out;
		given[s] = true;
		window_push(&win[s], now.mono_ms, w->value[i]);
		in[s] = (struct engine_signal_input){.window = &win[s], .n_sampled = -1};
	}
	if (w->current >= 0 && w->current != obs.current) {
		/* The instances observed are of another count: all ready. */
		obs.current = w->current;
		obs.instances = NULL;
		obs.n_instances = 0;
	}
	obs.partial = obs.partial || w->partial;
	r = engine_evaluate(g->gc, now, &obs, in, &prior, &next, &d);
	if (r < 0) {
		snprintf(err, len, "group '%s' cannot be evaluated", g->gc->name);
		goto out;
	}
	o = decision_to_json(&d, g->gc);
	sentence = o ? cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "explanation")) : NULL;
	snprintf(buf, sizeof(buf), "what-if on the daemon's state: %s", sentence ? sentence : "");
	if (!o || !sentence || !cJSON_AddStringToObject(o, "start", "daemon_state") ||
	    !cJSON_AddBoolToObject(o, "what_if", true) ||
	    !cJSON_ReplaceItemInObjectCaseSensitive(o, "explanation", cJSON_CreateString(buf))) {
		cJSON_Delete(o);
		o = NULL;
		r = -ENOMEM;
		snprintf(err, len, "out of memory");
		goto out;
	}
	*ret = o;
out:
	for (size_t i = 0; i < g->n_signals; i++)
		if (given[i])
			window_destroy(&win[i]);
	return r;
}
