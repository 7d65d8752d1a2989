/* Scale actions of the group runtime; see group-private.h: settling an
 * action from before a restart, starting scale jobs, draining victims
 * through the pre-scale-in hook first, completing the jobs, and keeping the
 * last failed driver operation for the decision records. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include <cjson/cJSON.h>

#include "agent/group-private.h"
#include "log/log.h"
#include "log/log-ids.h"
#include "admin/metrics.h"
#include "agent/notify.h"

/* An action recorded in the state but carried out by no call of this
 * process: one from before a restart (or a reload that cancelled a drain).
 * It is matched against the observation; until it is settled no new action
 * is issued. Returns its direction while it is pending. */
enum scale_direction group_reconcile_in_flight(struct group_rt *g, int64_t t)
{
	struct state_action a = g->st.in_flight;

	if (a.direction == DIR_NONE || g->job || g->drain)
		return a.direction;
	switch (state_reconcile(&g->st, g->current, g->stable, t)) {
	case RECONCILE_NONE:
		return DIR_NONE;
	case RECONCILE_PENDING:
		return a.direction;
	case RECONCILE_DONE:
		engine_record_action(&g->st.engine, a.started_ms, a.from, a.to);
		log_group(LOG_NOTICE, g->gc->name, NULL, NULL,
			  "the %s from %d to %d in flight before the restart is complete", direction_noun(a.direction),
			  a.from, a.to);
		break;
	case RECONCILE_STOPPED:
		if (g->current != a.from)
			engine_record_action(&g->st.engine, a.started_ms, a.from, g->current);
		log_group(LOG_WARNING, g->gc->name, NULL, NULL,
			  "the %s from %d to %d in flight before the restart stopped at %d",
			  direction_noun(a.direction), a.from, a.to, g->current);
		break;
	case RECONCILE_EXPIRED:
		log_group(LOG_WARNING, g->gc->name, NULL, NULL,
			  "the %s from %d to %d in flight before the restart did not finish in %" PRId64
			  " s; deciding again from what is observed (%d)",
			  direction_noun(a.direction), a.from, a.to, STATE_IN_FLIGHT_DEADLINE_MS / MS_PER_SEC,
			  g->current);
		break;
	}
	group_save(g);
	return DIR_NONE;
}

void group_start_scale_job(struct group_rt *g, enum job_kind kind, int count, int from, char **ids, size_t n_ids)
{
	struct job *j = calloc(1, sizeof(*j));

	if (!j) {
		g->st.in_flight.direction = DIR_NONE;
		return;
	}
	j->kind = kind;
	j->count = count;
	j->from = from;
	j->ids = ids;
	j->n_ids = n_ids;
	if (job_start(g, j) < 0) {
		job_free(j);
		g->st.in_flight.direction = DIR_NONE;
		group_save(g);
	}
}

static void on_drained(void *userdata, const char *const *ids, size_t n)
{
	struct group_rt *g = userdata;
	char **copy;

	g->drain = NULL;
	if (n == 0) {
		log_group(LOG_WARNING, g->gc->name, NULL, NULL, "scale-in held: no instance could be drained");
		g->st.in_flight.direction = DIR_NONE;
		group_save(g);
		return;
	}
	copy = calloc(n, sizeof(*copy));
	for (size_t i = 0; copy && i < n; i++)
		if (!(copy[i] = strdup(ids[i]))) {
			for (size_t k = 0; k < i; k++)
				free(copy[k]);
			free(copy);
			copy = NULL;
		}
	if (!copy) {
		g->st.in_flight.direction = DIR_NONE;
		group_save(g);
		return;
	}
	g->st.in_flight.to = g->st.in_flight.from - (int)n;
	group_save(g);
	group_start_scale_job(g, JOB_SCALE_IN, (int)n, g->st.in_flight.from, copy, n);
}

/* Scale-in with a pre-scale-in hook: drain victims first (notify.h), then
 * remove exactly those. The victims are taken in the engine's order (the
 * decision record says so: VICTIMS_DRAIN), since the hook must run on them
 * before the driver removes them. Returns false when no drain is needed. */
bool group_start_drain(struct group_rt *g, int count, const char *record)
{
	struct instance_obs *v;
	const char **ids;
	size_t n = 0;
	int r;

	if (!g->gc->notify.pre_scale_in || !g->ctx->notifier)
		return false;
	v = calloc(g->n_instances ? g->n_instances : 1, sizeof(*v));
	ids = calloc(g->n_instances ? g->n_instances : 1, sizeof(*ids));
	for (size_t i = 0; v && ids && i < g->n_instances; i++)
		if (g->instances[i].state != INSTANCE_STOPPING)
			v[n++] = g->instances[i];
	if (v && ids) {
		engine_order_victims(v, n);
		for (size_t i = 0; i < n; i++)
			ids[i] = v[i].id;
		r = drain_start(g->ctx->notifier, &g->gc->notify, g->gc->name, ids, n, (size_t)count, record, on_drained,
				g, &g->drain);
	} else {
		r = -ENOMEM;
	}
	free(v);
	free(ids);
	if (r < 0) {
		log_group_errno(LOG_ERR, g->gc->name, r, "scale-in held: cannot start the pre-scale-in hook");
		g->st.in_flight.direction = DIR_NONE;
		group_save(g);
	}
	return true;
}

void group_note_result(struct group_rt *g, const struct job *j, int64_t t)
{
	struct group_error *e = &g->last_error;

	if (j->r >= 0) {
		if (e->time_ms && e->kind == j->kind)
			*e = (struct group_error){0};
		return;
	}
	*e = (struct group_error){.time_ms = t, .kind = j->kind, .err = j->r};
	snprintf(e->message, sizeof(e->message), "%s", j->driver_msg);
}

cJSON *group_rt_last_error_json(const struct group_rt *g)
{
	const struct group_error *e = &g->last_error;
	cJSON *o;

	if (!e->time_ms)
		return cJSON_CreateNull();
	o = cJSON_CreateObject();
	if (!o)
		return NULL;
	if (!admin_add_time(o, "time", e->time_ms) || !cJSON_AddStringToObject(o, "operation", job_kind_operation(e->kind)) ||
	    !cJSON_AddStringToObject(o, "error", strerror(-e->err)) ||
	    !(e->message[0] ? cJSON_AddStringToObject(o, "message", e->message) : cJSON_AddNullToObject(o, "message"))) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

void group_scale_done(struct group_rt *g, struct job *j, int64_t t)
{
	int to = j->kind == JOB_SCALE_OUT ? j->count : j->from - j->count;
	const char *action = direction_action(j->kind == JOB_SCALE_OUT ? DIR_OUT : DIR_IN);
	char from_s[16], to_s[16];
	struct log_field fields[] = {{"ACTION", action}, {"CURRENT", from_s}, {"DESIRED", to_s}};

	snprintf(from_s, sizeof(from_s), "%d", j->from);
	snprintf(to_s, sizeof(to_s), "%d", to);
	g->st.in_flight.direction = DIR_NONE;
	if (j->r < 0) {
		log_fields_errno(LOG_ERR, g->gc->name, LOG_ID_ACTION_FAILED, fields, 3, j->r, "%s from %d to %d failed",
				 direction_noun(j->kind == JOB_SCALE_OUT ? DIR_OUT : DIR_IN), j->from, to);
		metrics_record_error(g->ctx->metrics, g->gc->name,
				     j->kind == JOB_SCALE_OUT ? "set_capacity" : "remove_instances");
		/* Whatever part of it happened shows in the next observation;
		 * recording it keeps rate limits honest. */
		if (j->n_done > 0)
			engine_record_action(&g->st.engine, j->started_ms, j->from,
					     j->from + (j->kind == JOB_SCALE_OUT ? j->n_done : -j->n_done));
		group_save(g);
		return;
	}
	engine_record_action(&g->st.engine, j->started_ms, j->from, to);
	group_save(g);
	log_fields(LOG_NOTICE, g->gc->name, LOG_ID_ACTION, fields, 3, "%s from %d to %d done in %.1f s",
		   j->kind == JOB_SCALE_OUT ? "scaled out" : "scaled in", j->from, to,
		   (double)(t - j->started_ms) / 1000.0);
	g->current = to;
}
