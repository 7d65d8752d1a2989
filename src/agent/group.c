/* A group at run time; see group.h.
 *
 * Each evaluation tick observes the group through its driver (on a worker
 * thread), feeds the values of the driver's own sources (libvirt_cpu) into
 * the windows of the signals that read them, runs the
 * engine, logs the decision and, unless in dry-run, hands an action back to
 * the driver. Sources with their own endpoints poll on their own timers and
 * only ever write into their windows, so a slow source never delays an
 * evaluation: the engine just finds its window stale.
 *
 * Driver calls run as jobs on worker threads (job.c), which hands each
 * finished one back through group_job_done(). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "agent/forecast-state.h"
#include "agent/group-private.h"
#include "cluster/cluster.h"
#include "log/log.h"
#include "log/log-ids.h"
#include "admin/metrics.h"
#include "agent/notify.h"
#include "agent/state-writer.h"
#include "sources/source.h"

/* --------------------------------------------------------------- driver */

static bool same_driver(const struct group_conf *a, const struct group_conf *b)
{
	return strcmp(a->driver, b->driver) == 0 && config_options_equal(&a->driver_options, &b->driver_options) &&
	       config_warm_pool_equal(group_warm_pool(a), group_warm_pool(b));
}

/* The host a handle of this group is opened with, made once per handle. */
static int make_host(struct group_rt *g)
{
	char where[512];

	if (g->host)
		return 0;
	/* The host owns its copies of the names: a reload frees the
	 * configuration the handle was opened with, and the runtime that
	 * opened it may be gone when the driver logs. */
	driver_section_where(g->gc, where, sizeof(where));
	return driver_host_new(g->gc->name, g->gc->driver, where[0] ? where : NULL, g->ctx->metrics, &g->host);
}

/* Whether the group has a driver call, or waits for its driver to let its
 * observation in: either way it decides on its last observation and
 * starts no action. */
static bool group_calling(const struct group_rt *g)
{
	return g->job || g->admit_pprev;
}

/* Starts the group's next driver call when none is running: opening its
 * driver when it has no handle (a reload deferred the open until the
 * replaced runtime's call had ended, or the open failed), else an
 * observation, once its driver lets it in (job_admit(): until then the
 * group waits its turn, and job.c calls this again). A failure to start
 * is logged by job_start() and retried at the next tick. */
static void start_driver_call(struct group_rt *g)
{
	struct job *j;

	if (g->job || g->stopped)
		return;
	if (g->handle && !job_admit(g))
		return;
	j = calloc(1, sizeof(*j));
	if (!j)
		return;
	if (g->handle) {
		j->kind = JOB_OBSERVE;
		j->want_samples = g->want_samples;
	} else {
		j->kind = JOB_OPEN;
		if (make_host(g) < 0 || driver_options_from_group(g->gc, &j->opts) < 0) {
			job_free(j);
			return;
		}
		j->host = g->host;
	}
	if (job_start(g, j) < 0)
		job_free(j);
}

/* -------------------------------------------------------------- signals */

static void group_evaluate(struct group_rt *g);
static void group_start_actions(void);
static bool signals_reported(const struct group_rt *g);

/* What a signal's error says when its own words cannot be held: it is
 * still an error, never read as a valid sample. */
static char signal_error_oom[] = "out of memory";

static void signal_clear_error(struct signal_rt *s)
{
	if (s->error != signal_error_oom)
		free(s->error);
	s->error = NULL;
}

/* Sets the signal's error. One the same as the error held is kept as it
 * is, so that a signal that keeps failing does not allocate at each poll. */
static void signal_set_error(struct signal_rt *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void signal_set_error(struct signal_rt *s, const char *fmt, ...)
{
	char text[SIGNAL_ERROR_MAX + 1];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (s->error && strcmp(s->error, text) == 0)
		return;
	signal_clear_error(s);
	s->error = strdup(text);
	if (!s->error)
		s->error = signal_error_oom;
}

/* The first evaluation waits for the first polls (see signals_reported);
 * the last of them to answer starts it. */
static void maybe_first_evaluation(struct group_rt *g)
{
	if (!g->have_last && g->observed && !g->stopped && !group_calling(g) && signals_reported(g)) {
		group_evaluate(g);
		group_start_actions();
	}
}

/* The instances a utilization read at T_MS (monotonic) is a mean over:
 * those the engine counts as ready (engine.c, count_instances), or the
 * observed count when the driver lists none; 0 before the first
 * observation. */
static int ready_for_reading(const struct group_rt *g, int64_t t_ms)
{
	int n = 0;

	if (!g->observed)
		return 0;
	if (!g->instances)
		return g->current;
	for (size_t i = 0; i < g->n_instances; i++) {
		const struct instance_obs *in = &g->instances[i];

		n += in->state == INSTANCE_RUNNING && in->ready &&
		     engine_instance_initialized(in, t_ms, g->gc->behavior.initialization_ms);
	}
	return n;
}

static void signal_poll_done(void *userdata, int64_t t_ms, int status, double value, const char *error)
{
	struct signal_rt *s = userdata;

	s->polling = false;
	s->reported = true;
	if (status < 0) {
		signal_set_error(s, "%s", error ? error : strerror(-status));
		log_group(LOG_DEBUG, s->g->gc->name, NULL, NULL, "signal '%s': %s", s->sc->name, s->error);
		maybe_first_evaluation(s->g);
		return;
	}
	if (!isfinite(value)) {
		signal_set_error(s, "not a finite number");
		maybe_first_evaluation(s->g);
		return;
	}
	if (s->sc->type == SIGNAL_UTILIZATION)
		window_reexpress(&s->win, &s->win_over, ready_for_reading(s->g, t_ms));
	window_push(&s->win, t_ms, value);
	signal_clear_error(s);
	s->n_sampled = -1;
	metrics_record_sample(s->g->ctx->metrics, s->g->gc->name, s->sc->name);
	maybe_first_evaluation(s->g);
}

static void on_signal_timer(struct timer *t, uint64_t due, void *userdata)
{
	struct signal_rt *s = userdata;
	int r;

	timer_set(t, due + (uint64_t)s->sc->poll_interval_ms * 1000);
	if (s->polling) {
		log_group(LOG_DEBUG, s->g->gc->name, NULL, NULL, "signal '%s': previous poll still running",
			  s->sc->name);
		return;
	}
	s->polling = true;
	r = source_poll(s->src, clock_mono_ms(), signal_poll_done, s);
	if (r < 0) {
		s->polling = false;
		signal_set_error(s, "poll failed: %s", strerror(-r));
	}
}

/* Whether instance `in` counts for a reading at time t: running, ready and
 * past the initialization period, as the engine counts members. */
static bool member_counts(const struct group_rt *g, const struct instance_obs *in, struct clock_now t)
{
	return in->state == INSTANCE_RUNNING && in->ready && in->running_since_ms &&
	       engine_instance_initialized(in, t.mono_ms, g->gc->behavior.initialization_ms);
}

/* Feeds each signal that reads one of the driver's sources with the mean
 * of the values the observation carried for the members that count. No
 * such value is an invalid reading, never zero; what the driver logged
 * while observing (a statistic it could not read) says why. */
static void feed_driver_samples(struct group_rt *g, const struct job *j, struct clock_now t)
{
	for (size_t i = 0; i < g->n_signals; i++) {
		struct signal_rt *s = &g->signals[i];
		double sum = 0;
		int n = 0;

		if (s->driver_source < 0)
			continue;
		for (size_t k = 0; k < j->n_samples; k++) {
			if (j->samples[k].source != s->driver_source)
				continue;
			for (size_t m = 0; m < g->n_instances; m++) {
				if (strcmp(g->instances[m].id, j->samples[k].id) != 0)
					continue;
				if (member_counts(g, &g->instances[m], t)) {
					sum += j->samples[k].value;
					n++;
				}
				break;
			}
		}
		if (n == 0) {
			signal_set_error(s, "no ready member has a value of '%.64s' yet%s%.140s%s", s->sc->source,
					 j->driver_msg ? " (" : "", j->driver_msg ? j->driver_msg : "",
					 j->driver_msg ? ")" : "");
		} else if (!isfinite(sum / n)) {
			signal_set_error(s, "not a finite number");
		} else {
			if (s->sc->type == SIGNAL_UTILIZATION)
				window_reexpress(&s->win, &s->win_over, n);
			window_push(&s->win, t.mono_ms, sum / n);
			signal_clear_error(s);
			s->n_sampled = n;
			metrics_record_sample(g->ctx->metrics, g->gc->name, s->sc->name);
		}
	}
}

/* A failed observation carries no value for the driver's sources: their
 * signals say why rather than only going stale. */
static void driver_samples_failed(struct group_rt *g, int r)
{
	for (size_t i = 0; i < g->n_signals; i++)
		if (g->signals[i].driver_source >= 0)
			signal_set_error(&g->signals[i], "no value: observe failed: %s", strerror(-r));
}

/* ----------------------------------------------------------- evaluation */

static int cmp_instance_id(const void *a, const void *b)
{
	return strcmp((*(const struct instance_obs *const *)a)->id, (*(const struct instance_obs *const *)b)->id);
}

/* The instance of the previous observation with the id of `in`, or NULL.
 * Lists usually come in the same order each time, so the same index is
 * tried first; the previous list sorted by id (*SORTED, made at the first
 * miss; when it cannot be allocated, each miss finds nothing) serves the
 * rest. */
static const struct instance_obs *previous_instance(const struct group_rt *g, const struct instance_obs ***sorted,
						    size_t i, const struct instance_obs *in)
{
	const struct instance_obs **hit;

	if (i < g->n_instances && strcmp(g->instances[i].id, in->id) == 0)
		return &g->instances[i];
	if (g->n_instances == 0)
		return NULL;
	if (!*sorted && (*sorted = malloc(g->n_instances * sizeof(**sorted)))) {
		for (size_t k = 0; k < g->n_instances; k++)
			(*sorted)[k] = &g->instances[k];
		qsort(*sorted, g->n_instances, sizeof(**sorted), cmp_instance_id);
	}
	if (!*sorted)
		return NULL;
	hit = bsearch(&in, *sorted, g->n_instances, sizeof(**sorted), cmp_instance_id);
	return hit ? *hit : NULL;
}

/* Drivers report when an instance was created and when it started running
 * as wall-clock times; the initialization period is a length of time,
 * measured on the monotonic clock. Each time is mapped once, when the
 * instance is first seen with it, and the mapping is kept while the driver
 * reports the same time: a later wall-clock step then changes no instance's
 * age. A time the wall clock puts in the future counts as now. */
static void map_start_times(const struct group_rt *g, struct instance_obs *v, size_t n, struct clock_now now)
{
	const struct instance_obs **sorted = NULL;

	for (size_t i = 0; i < n; i++) {
		const struct instance_obs *old;
		int64_t m;

		if (!v[i].running_since_ms && !v[i].created_ms)
			continue;
		old = previous_instance(g, &sorted, i, &v[i]);
		if (v[i].created_ms) {
			if (old && old->created_ms == v[i].created_ms && old->created_mono_ms) {
				v[i].created_mono_ms = old->created_mono_ms;
			} else {
				m = clock_wall_to_mono(now, v[i].created_ms);
				v[i].created_mono_ms = m < now.mono_ms ? m : now.mono_ms;
			}
		}
		if (!v[i].running_since_ms)
			continue;
		if (old && old->running_since_ms == v[i].running_since_ms) {
			v[i].running_since_mono_ms = old->running_since_mono_ms;
			continue;
		}
		m = clock_wall_to_mono(now, v[i].running_since_ms);
		v[i].running_since_mono_ms = m < now.mono_ms ? m : now.mono_ms;
	}
	free(sorted);
}

static void take_observation(struct group_rt *g, struct job *j, struct clock_now now)
{
	map_start_times(g, j->instances, j->n_instances, now);
	/* One block with the members' names (job.c), of its size. */
	free(g->instances);
	g->instances = j->instances;
	g->n_instances = j->n_instances;
	j->instances = NULL;
	j->n_instances = j->cap_instances = 0;
	g->current = j->obs.target_size;
	g->stable = j->obs.stable;
	g->partial = j->obs.partial;
	g->host_room = j->host_room;
	g->observed = true;
	g->observed_start_ms = j->started_ms;
}

/* Whether the agent may act on G in a cluster: it owns the group, and the
 * newest observation was started after it took the group. A new owner, or
 * an agent taking its groups back after etcd was unreachable, knows the
 * target only as it was before: the previous owner may have changed it
 * since, so the first action waits for one observation of its own. */
static bool group_observed_as_owner(const struct group_rt *g, int64_t since)
{
	return since > 0 && g->observed && g->observed_start_ms >= since;
}

/* ... and it has continued from the group's record (group_take_record()). */
static bool group_acting_owner(const struct group_rt *g)
{
	int64_t since = cluster_owned_since(g->ctx->cluster, g->gc->name);

	return group_observed_as_owner(g, since) && g->adopted_since == since;
}

/* Whether this runtime's state is the group's record in etcd: it owns the
 * group (or did until the lease became invalid locally) and has continued
 * from its predecessor's record in this holding. */
static bool group_state_here(const struct group_rt *g)
{
	return g->adopted_since > 0 && g->adopted_since == cluster_owned_since(g->ctx->cluster, g->gc->name);
}

static struct forecast *const *forecast_list(const struct group_rt *g, struct forecast **v);

/* The group's forecast record (cluster.h), taken with the state's: each
 * signal's forecaster that has learnt from more samples than this agent's
 * replaces it. */
static void group_take_forecast_record(struct group_rt *g, int64_t since)
{
	struct forecast *v[CONFIG_MAX_SIGNALS];
	char why[256], *text = NULL;
	const cJSON *f;
	cJSON *j;
	int r;

	if (cluster_record_take(g->ctx->cluster, g->gc->name, CLUSTER_RECORD_FORECAST, since, &text) <= 0 || !text)
		return;
	j = cJSON_Parse(text);
	free(text);
	f = cJSON_GetObjectItemCaseSensitive(j, "forecast");
	r = cJSON_IsObject(f) ? forecast_group_from_json(f, g->gc, forecast_list(g, v), true, why, sizeof(why))
			      : (snprintf(why, sizeof(why), "not a record of this daemon's"), -EINVAL);
	cJSON_Delete(j);
	if (r < 0)
		log_group(LOG_WARNING, g->gc->name, NULL, NULL,
			  "cluster: the group's forecast record in etcd cannot be used (%s); forecasting from this "
			  "agent's own history", r == -ENOMEM ? strerror(ENOMEM) : why);
	else if (r > 0)
		log_group(LOG_INFO, g->gc->name, NULL, NULL, "cluster: forecast history of %d signal%s taken from etcd",
			  r, r == 1 ? "" : "s");
}

/* The groups' states rest packed at their size (state_packed, some 200
 * bytes for a steady group where struct group_state is 1.4 KB, most of it
 * room for histories); the loop's thread works on one group's in full at
 * a time, here. group_st() hands out the full state of G: it writes the
 * state it held back into its group's packed one and unpacks G's. So a
 * pointer it returned is good until group_st() is called for another
 * group: no caller keeps one across a call that may reach another group.
 * Everything that reads or changes a group's state runs on the loop's
 * thread (and, in the tests, on the one thread they have). */
static struct group_state st_full;
static struct group_rt *st_owner;

/* Writes the full state back into G's packed one, if G has it. A packed
 * state that cannot grow (malloc failing for a few hundred bytes) would
 * lose recommendations that hold back a scale-in, or actions that rate
 * limits count: the daemon stops instead, and a restart resumes from the
 * state file, which holds both. */
static void group_st_flush(struct group_rt *g)
{
	if (st_owner != g)
		return;
	if (state_pack(&st_full, &g->st_packed) < 0) {
		log_group(LOG_CRIT, g->gc->name, NULL, NULL, "out of memory keeping the group's state; stopping");
		abort();
	}
	st_owner = NULL;
}

static struct group_state *group_st(const struct group_rt *cg)
{
	struct group_rt *g = (struct group_rt *)cg;

	if (st_owner == g)
		return &st_full;
	if (st_owner)
		group_st_flush(st_owner);
	if (g->st_packed)
		state_unpack(g->st_packed, &st_full);
	else
		state_init(&st_full);
	st_owner = g;
	return &st_full;
}

/* A group this agent has just come to own continues from the record its
 * previous owner left in etcd (cluster.h): the windows, the actions that
 * rate limits and cooldowns count, an action in flight (reconciled, not
 * repeated), an operator's pin, pause and dry-run. Taken once per holding,
 * after the first observation of its own; until then the group holds as
 * not owned. */
static void group_take_record(struct group_rt *g, struct clock_now t)
{
	int64_t since = cluster_owned_since(g->ctx->cluster, g->gc->name);
	struct group_state rec;
	char why[256], *text = NULL;
	cJSON *j = NULL;
	const cJSON *st, *who;
	bool final, hole;

	if (!group_observed_as_owner(g, since) || g->adopted_since == since)
		return;
	if (cluster_record_take(g->ctx->cluster, g->gc->name, CLUSTER_RECORD_STATE, since, &text) <= 0)
		return;
	g->adopted_since = since;
	group_take_forecast_record(g, since);
	g->save_retry = true; /* the holding's first record, changed or not */
	if (!text) {
		log_group(LOG_INFO, g->gc->name, NULL, NULL,
			  "cluster: no record of the group in etcd; continuing from this agent's own state");
		group_save(g);
		return;
	}
	j = cJSON_Parse(text);
	free(text);
	st = cJSON_GetObjectItemCaseSensitive(j, "state");
	who = cJSON_GetObjectItemCaseSensitive(j, "agent");
	final = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "final"));
	if (!cJSON_IsObject(st) || !cJSON_IsString(who)) {
		snprintf(why, sizeof(why), "not a record of this daemon's");
	} else if (state_from_json(st, g->gc, t, &rec, why, sizeof(why)) == 0) {
		hole = state_merge_record(group_st(g), &rec, final, g->first_eval_ms, g->gc, t.mono_ms);
		log_group(hole ? LOG_WARNING : LOG_NOTICE, g->gc->name, NULL, NULL,
			  "cluster: continuing from the record agent '%s' left%s: %zu recommendation%s in the scale-in "
			  "window%s%s%s%s",
			  cluster_printable(who->valuestring), final ? " when it gave the group up" : "",
			  group_st(g)->engine.n_down_recs, group_st(g)->engine.n_down_recs == 1 ? "" : "s",
			  group_st(g)->in_flight.direction != DIR_NONE ? ", an action in flight" : "",
			  group_st(g)->pin.active ? ", pinned" : "", group_st(g)->pause.active ? ", paused" : "",
			  hole ? "; its writer stopped without a last record, so scale-in waits a full window" : "");
		cJSON_Delete(j);
		group_save(g);
		return;
	}
	/* A record that cannot be trusted: this agent's own view, and no
	 * scale-in before a full window of it, as after a lost state file. */
	log_group(LOG_WARNING, g->gc->name, NULL, NULL,
		  "cluster: the group's record in etcd cannot be used (%s); continuing from this agent's own state, "
		  "scale-in held for a full window", why);
	state_hold_scale_in(group_st(g), g->gc, t.mono_ms);
	cJSON_Delete(j);
	group_save(g);
}

/* A 64-bit digest of the state's bytes in the manner of FNV-1a, eight
 * bytes a step, each step folding the high bits down (the state is plain
 * data, copied and compared as bytes). Two states that differ have the
 * same digest with a chance of about one in 2^64: a save is then put off
 * to the next change. */
static uint64_t group_state_digest(const struct group_state *s)
{
	struct group_state c;
	const unsigned char *p = (const unsigned char *)&c;
	uint64_t h = 14695981039346656037ULL, w;
	size_t i;

	/* The bytes past the histories' entries and the request id are
	 * whatever the engine left there, and a packed state drops them:
	 * they count as zero, so a state digests the same before a pack and
	 * after it. */
	memcpy(&c, s, sizeof(c));
	state_canonical(&c);

	for (i = 0; i + sizeof(w) <= sizeof(c); i += sizeof(w)) {
		memcpy(&w, p + i, sizeof(w));
		h = (h ^ w) * 1099511628211ULL;
		h ^= h >> 29;
	}
	for (; i < sizeof(c); i++)
		h = (h ^ p[i]) * 1099511628211ULL;
	return h;
}

/* The digest of the state as it would be without the times of the newest
 * recommendation of each stabilization window: what a steady group's
 * evaluation changes and nothing else (the same count, recommended again). */
static uint64_t group_state_shape(const struct group_state *s)
{
	struct group_state c;

	memcpy(&c, s, sizeof(c));
	if (c.engine.n_up_recs > 0)
		c.engine.up_recs[c.engine.n_up_recs - 1].t_ms = 0;
	if (c.engine.n_down_recs > 0)
		c.engine.down_recs[c.engine.n_down_recs - 1].t_ms = 0;
	return group_state_digest(&c);
}

/* How much older than in memory a state file's newest recommendations may
 * be: routine saves that only move them on are written at most this often
 * (STATE_REFRESH_MS), so that ten thousand steady groups do not rewrite ten
 * thousand files an interval. The file says so (state_to_json()), and a
 * restart after a crash holds the scale-in window's newest recommendation
 * that much longer (state_from_json()). In a cluster every save is written,
 * since the group's record in etcd tells a new owner when its writer last
 * evaluated the group; and a clean stop writes each state as it is. */
static int64_t refresh_ms(const struct group_rt *g)
{
	return g->ctx->cluster ? 0 : STATE_REFRESH_MS;
}

static void save_failed(struct group_rt *g, const char *dir, int r)
{
	if (!g->save_failed)
		log_group_errno(LOG_ERR, g->gc->name, r, "state: cannot write the state file in '%s'", dir);
	g->save_failed = true;
	metrics_record_error(g->ctx->metrics, g->gc->name, "state");
}

static void save_ok(struct group_rt *g)
{
	if (g->save_failed)
		log_group(LOG_NOTICE, g->gc->name, NULL, NULL, "state: the state file is written again");
	g->save_failed = false;
}

/* Whether the state holds nothing but history (windows, actions, boot
 * time): no action in flight, no pin, pause or dry-run override. Only such
 * a state may be written in place (STATE_WRITE_IN_PLACE), which a power
 * loss may tear: the safe start that follows then loses history, never an
 * action in flight or an operator's override. */
static bool only_history(const struct group_state *s)
{
	return s->in_flight.direction == DIR_NONE && !s->pin.active && !s->pause.active &&
	       s->dry_run == STATE_DRY_RUN_CONFIG;
}

/* How a save reaches the state file (save_state()). */
enum save_kind {
	/* An evaluation's: in the writer's turn, and only when more than the
	 * newest recommendations' times changed or refresh_ms() has passed
	 * since the last write; in place when only_history(). */
	SAVE_ROUTINE,
	/* The end of an action's driver call: in the writer's turn, not
	 * synced, and in place when only_history(), as a routine save (the
	 * whole file replaced at every action was a large part of the
	 * writer's CPU at 10,000 groups). The file it replaces holds the
	 * action in flight, synced before the call (SAVE_WAIT): if a power
	 * loss takes this save, the restart matches that action against what
	 * it observes (group_reconcile_in_flight()) and records it, as for a
	 * crash during the call; if it tears it, the group makes a safe start
	 * (no scale-in for a window) with the action done and nothing left
	 * in flight, and forgets that action's place in the rate limits, as
	 * for a torn routine save. Not waiting spares the loop a sync, and
	 * the disk one of the two an action cost. In a cluster it is a
	 * SAVE_WAIT: the group's record in etcd is what the next owner starts
	 * from. */
	SAVE_SETTLED,
	/* At once, synced, and the caller waits: an action in flight, an
	 * operator's override, a settled action from before a restart. */
	SAVE_WAIT,
	/* A clean stop: the state as it is, saying that nothing newer was
	 * left unwritten. */
	SAVE_FINAL,
	/* As SAVE_WAIT, but the caller waits later, with the ticket
	 * save_state_ticket() gives it (an action about to start: intend()).
	 * Not in a cluster, where it is a SAVE_WAIT. */
	SAVE_QUEUED,
};

/* Writes the state file when the state changed, through the state writer
 * (state-writer.h), as `kind` says. A failure is logged once (and counted)
 * until a write succeeds again, and the write is retried at the next save:
 * the daemon keeps running on its in-memory state. A failure of the
 * writer's is learnt at the next save. */
static void save_state_ticket(struct group_rt *g, enum save_kind kind, struct state_writer_ticket *ticket)
{
	const char *dir = g->ctx->agent_conf->state_directory;
	char path[PATH_MAX], name[PATH_MAX];
	uint64_t digest, shape;
	struct clock_now now;
	char *text;
	cJSON *j;
	int64_t r;
	bool final = kind == SAVE_FINAL;
	bool wait = kind == SAVE_WAIT || ((kind == SAVE_SETTLED || kind == SAVE_QUEUED) && g->ctx->cluster);
	bool queued = kind == SAVE_QUEUED && !g->ctx->cluster;

	if (ticket)
		ticket->e = NULL;

	r = state_path(dir, g->gc->name, path, sizeof(path));
	if (r == 0 && snprintf(name, sizeof(name), "%s.state", g->gc->name) >= (int)sizeof(name))
		r = -ENAMETOOLONG;
	if (r < 0) {
		if (group_state_digest(group_st(g)) != g->saved_digest)
			save_failed(g, dir, (int)r);
		return;
	}
	r = state_writer_status(path);
	if (r < 0) {
		save_failed(g, dir, (int)r);
		g->save_retry = true;
	} else if (r == 0 && !g->save_retry) {
		save_ok(g);
	}
	digest = group_state_digest(group_st(g));
	if (!g->save_retry && !final && digest == g->saved_digest)
		return;
	now = clock_now();
	shape = group_state_shape(group_st(g));
	if (!g->save_retry && kind == SAVE_ROUTINE && shape == g->saved_shape &&
	    now.mono_ms - g->saved_mono_ms < refresh_ms(g))
		return;
	j = state_to_json(group_st(g), g->gc->name, now, final ? 0 : refresh_ms(g));
	text = j ? cJSON_Print(j) : NULL;
	/* The owner's state is the group's record in etcd too, once it has
	 * continued from its predecessor's. */
	if (j && g->ctx->cluster && group_state_here(g)) {
		char *rec = cJSON_PrintUnformatted(j);

		if (rec)
			cluster_record_set(g->ctx->cluster, g->gc->name, CLUSTER_RECORD_STATE, rec, wait);
	}
	cJSON_Delete(j);
	if (!text)
		r = -ENOMEM;
	else if (wait)
		r = state_writer_save_now(dir, path, name, text);
	else if (queued)
		r = state_writer_save_durable(dir, path, name, text, ticket);
	else
		r = state_writer_save(dir, path, name, text, only_history(group_st(g)));
	if (r < 0) {
		save_failed(g, dir, (int)r);
		g->save_retry = true;
		return;
	}
	if (wait)
		save_ok(g);
	g->save_retry = false;
	g->saved_digest = digest;
	g->saved_shape = shape;
	g->saved_mono_ms = now.mono_ms;
}

static void save_state(struct group_rt *g, enum save_kind kind)
{
	save_state_ticket(g, kind, NULL);
}

void group_save(struct group_rt *g)
{
	save_state(g, SAVE_WAIT);
}

void group_rt_save_final(struct group_rt *g)
{
	/* A runtime that wrote nothing leaves the file as it found it. */
	if (!g->ctx->cluster && g->saved_mono_ms != 0)
		save_state(g, SAVE_FINAL);
}

/* As group_save(), in the writer's turn: the evaluations' saves, which
 * are most of them (the engine's windows change at every evaluation) and
 * which no action depends on. */
static void group_save_later(struct group_rt *g)
{
	save_state(g, SAVE_ROUTINE);
}

/* Which way the signals, rules and smoothing steps push the count (steps 1
 * to 8), before step 9 holds it: -1, 0 or 1. */
static int signals_push(const struct decision *d)
{
	return (d->flap_guarded > d->current) - (d->flap_guarded < d->current);
}

/* The decision's record as JSON text (malloc'ed, or NULL on ENOMEM), and
 * its sentence in SENTENCE (LEN bytes). A failed cloud operation stays in
 * every record until the operation succeeds again, so that whoever reads
 * one record learns why the count did not move. */
static char *make_record(const struct group_rt *g, const struct decision *d, bool dry_run, char *sentence,
			 size_t len)
{
	char *json = NULL;
	cJSON *o;

	decision_sentence(d, g->gc, sentence, len);
	if (g->last_error.time_ms) {
		const struct group_error *e = &g->last_error;
		size_t n = strlen(sentence);

		snprintf(sentence + n, len - n, "; last %s failed: %s", job_kind_noun(e->kind),
			 e->message ? e->message : strerror(-e->err));
	}
	o = decision_to_json(d, g->gc);
	if (o) {
		cJSON_AddBoolToObject(o, "dry_run", dry_run);
		if (g->last_error.time_ms)
			cJSON_ReplaceItemInObjectCaseSensitive(o, "explanation", cJSON_CreateString(sentence));
		cJSON_AddItemToObject(o, "last_error", group_rt_last_error_json(g));
		json = cJSON_PrintUnformatted(o);
		cJSON_Delete(o);
	}
	return json;
}

/* Pushes a record (JSON text, taken) into the history ring; what it takes
 * there is what the ring is asked about before the next is made
 * (record_flush()). */
static void ring_push(struct group_rt *g, char *json)
{
	size_t b = admin_ring_push(&g->ring, json, g->ctx->history_bytes);

	if (b)
		g->record_bytes = b;
}

/* Logs the decision and returns its record as JSON text (malloc'ed), or
 * NULL when the log does not want it (a DEBUG line without --verbose) or
 * on ENOMEM: the caller then keeps the decision as the pending record. */
static char *log_decision(struct group_rt *g, const struct decision *d, bool dry_run)
{
	struct decision last_buf;
	const struct decision *last;
	char sentence[1024];
	struct log_field fields[1 + DECISION_JOURNAL_FIELDS];
	struct decision_field_buf buf;
	size_t n_fields;
	char *json;
	bool changed;
	int prio;

	/* The journal gets INFO when what is done changes (an action, or
	 * another hold reason: the engine's, an operator's pause or pin, a
	 * failed operation), or the way the signals push (a paused group
	 * whose load now asks for more holds for the same reason, and the
	 * operator must see it), not each time a value moves: a steady group
	 * would otherwise write one INFO line per interval. The others go at
	 * DEBUG with their full record. */
	last = group_rt_last(g, &last_buf);
	changed = !last || d->action != last->action || d->hold != last->hold ||
		  g->override != g->last_override /* one of two constants */ ||
		  signals_push(d) != signals_push(last) || (g->last_error.time_ms != 0) != g->last_had_error;
	prio = d->action != DIR_NONE || changed ? LOG_INFO : LOG_DEBUG;
	g->last_override = g->override;
	g->last_had_error = g->last_error.time_ms != 0;
	if (!log_enabled(prio))
		return NULL;
	json = make_record(g, d, dry_run, sentence, sizeof(sentence));
	fields[0] = (struct log_field){"DECISION", json ? json : "{}"};
	n_fields = 1 + decision_journal_fields(d, &buf, fields + 1);
	log_fields(prio, g->gc->name, LOG_ID_DECISION, fields, n_fields, "%s%s",
		   dry_run && d->action != DIR_NONE ? "(dry run, not acting) " : "", sentence);
	return json;
}

/* Whether the decision points at a signal's error text (an invalid
 * signal's reason), which goes when the error changes: its record cannot
 * wait to be made. */
static bool borrows_signal_errors(const struct group_rt *g, const struct decision *d)
{
	for (size_t i = 0; i < d->n_signals; i++)
		for (size_t k = 0; d->signals[i].reason && k < g->n_signals; k++)
			if (d->signals[i].reason == g->signals[k].error)
				return true;
	return false;
}

/* Keeps D as the group's last decision, packed; false when there was no
 * memory for it (the group then has no last decision until the next). */
static bool keep_last(struct group_rt *g, const struct decision *d)
{
	size_t size = decision_packed_size(d);

	if (size != g->last_size) {
		void *p = realloc(g->last, size);

		if (!p) {
			free(g->last);
			g->last = NULL;
			g->last_size = 0;
			return false;
		}
		g->last = p;
		g->last_size = size;
	}
	decision_pack(d, g->last);
	return true;
}

/* Makes the pending record (g->last, see record_pending) and pushes it into
 * the history ring. SUPERSEDED: a newer decision replaces it, and the ring
 * is asked first whether it would keep it beside the newer one. Called too
 * before what a record shows besides the decision changes (the failed
 * operation, the runtime on a reload). */
static void record_flush(struct group_rt *g, bool superseded)
{
	struct decision last;
	char sentence[1024];
	char *json;

	if (!g->record_pending)
		return;
	g->record_pending = false;
	if (superseded && g->record_bytes && !admin_ring_pass_over(&g->ring, g->record_bytes, g->ctx->history_bytes))
		return;
	json = make_record(g, group_rt_last(g, &last), g->record_dry_run, sentence, sizeof(sentence));
	ring_push(g, json);
}

/* ------------------------------------------------------------ forecasts */

static struct forecast *const *forecast_list(const struct group_rt *g, struct forecast **v)
{
	for (size_t i = 0; i < g->n_signals; i++)
		v[i] = g->signals[i].fc;
	return v;
}

/* Writes the forecasters' file; a failure is logged and counted, the
 * daemon goes on with what it has in memory. */
static void forecasts_save(struct group_rt *g)
{
	struct forecast *v[CONFIG_MAX_SIGNALS];
	bool any = false;
	int r;

	for (size_t i = 0; i < g->n_signals; i++)
		any |= g->signals[i].fc != NULL;
	if (!any)
		return;
	r = forecast_file_save(g->ctx->agent_conf->state_directory, g->gc, forecast_list(g, v));
	if (r < 0) {
		log_group_errno(LOG_ERR, g->gc->name, r, "forecast: cannot write the forecast file");
		metrics_record_error(g->ctx->metrics, g->gc->name, "state");
	}
	/* The owner's profiles are the group's forecast record in etcd too:
	 * a new owner forecasts from the history learnt so far. */
	if (g->ctx->cluster && group_state_here(g)) {
		cJSON *j = forecast_group_json(g->gc, v);
		char *text = j ? cJSON_PrintUnformatted(j) : NULL;

		cJSON_Delete(j);
		if (text)
			cluster_record_set(g->ctx->cluster, g->gc->name, CLUSTER_RECORD_FORECAST, text, false);
	}
}

/* The forecasters of every runtime (forecasts_feed()'s prefetch). Runtimes
 * are made and freed on the loop. */
static size_t n_forecasters;

/* Makes the forecasters of the signals that have one: a reload carries
 * over the old runtime's of a signal of the same name; a start restores
 * the file's, and a forecaster that has learnt nothing is seeded from its
 * seed file when there is one. */
static int forecasts_start(struct group_rt *g, const struct group_rt *old)
{
	const struct group_conf *gc = g->gc;
	struct forecast *v[CONFIG_MAX_SIGNALS];
	char why[256];
	bool any = false;
	int r;

	for (size_t i = 0; i < g->n_signals; i++) {
		const struct signal_conf *sc = g->signals[i].sc;
		const struct forecast_conf *fcc = signal_forecast(sc);

		if (fcc->mode == FORECAST_OFF)
			continue;
		g->signals[i].fc = malloc(sizeof(*g->signals[i].fc));
		if (!g->signals[i].fc)
			return -ENOMEM;
		n_forecasters++;
		forecast_init(g->signals[i].fc, fcc->quantile);
		any = true;
		for (size_t k = 0; old && k < old->n_signals; k++) {
			if (old->signals[k].fc && strcmp(old->signals[k].sc->name, sc->name) == 0 &&
			    old->signals[k].fc->quantile == fcc->quantile) {
				*g->signals[i].fc = *old->signals[k].fc;
				g->signals[i].fc_fed_ms = old->signals[k].fc_fed_ms;
			}
		}
		forecast_set_service(g->signals[i].fc, fcc->service_level);
	}
	if (!any || old)
		return 0;
	r = forecast_file_load(g->ctx->agent_conf->state_directory, gc, forecast_list(g, v), why, sizeof(why));
	if (r > 0)
		log_group(LOG_INFO, gc->name, NULL, NULL, "forecast: history of %d signal%s restored", r,
			  r == 1 ? "" : "s");
	else if (r < 0 && r != -ENOENT)
		log_group(LOG_WARNING, gc->name, NULL, NULL, "forecast: ignoring the forecast file: %s",
			  r == -EINVAL ? why : strerror(-r));
	for (size_t i = 0; i < g->n_signals; i++) {
		const struct signal_conf *sc = g->signals[i].sc;
		const struct forecast_conf *fcc = signal_forecast(sc);
		int64_t boot = forecast_boot_horizon(&group_st(g)->boot, gc->behavior.boot_time_ms);

		if (!g->signals[i].fc || g->signals[i].fc->n_samples > 0 || !fcc->seed_file)
			continue;
		r = forecast_seed_file(g->signals[i].fc, fcc->seed_file, fcc->seed_format,
				       sc->poll_interval_ms, boot, engine_keep_ms(gc, boot));
		if (r < 0)
			log_group_errno(LOG_WARNING, gc->name, r, "forecast: signal '%s': cannot seed from '%s'", sc->name,
					fcc->seed_file);
		else
			log_group(LOG_INFO, gc->name, NULL, NULL, "forecast: signal '%s' seeded from '%s'", sc->name,
				  fcc->seed_file);
	}
	return 0;
}

/* Ready instances, as the engine counts them before the initialization
 * period: what a utilization signal's mean was taken over. */
static int ready_instances(const struct group_rt *g)
{
	int n = 0;

	if (!g->instances)
		return g->current;
	for (size_t i = 0; i < g->n_instances; i++)
		n += g->instances[i].state == INSTANCE_RUNNING && g->instances[i].ready;
	return n;
}

/* Teaches each forecaster the signal's newest sample as a group total
 * and fills the engine's forecast inputs. The file is written when a
 * profile bucket closes, so a crash loses at most one bucket. */
static void forecasts_feed(struct group_rt *g, struct clock_now t, int64_t boot_ms,
			   struct engine_signal_input *in)
{
	int64_t keep = engine_keep_ms(g->gc, boot_ms);
	int ready = ready_instances(g);
	bool closed = false;

	/* Every forecaster's lines asked for at once: see forecast_prefetch(). */
	for (size_t i = 0; i < g->n_signals && n_forecasters >= FORECAST_PREFETCH_MIN; i++)
		if (g->signals[i].fc)
			forecast_prefetch(g->signals[i].fc, t.wall_ms);
	for (size_t i = 0; i < g->n_signals; i++) {
		struct signal_rt *s = &g->signals[i];
		const struct sample *smp = window_newest(&s->win);

		if (!s->fc)
			continue;
		if (smp && smp->t_ms > s->fc_fed_ms) {
			int n = s->win_over > 0 ? s->win_over : s->n_sampled >= 0 ? s->n_sampled : ready;
			double total = s->sc->type == SIGNAL_UTILIZATION ? smp->v * n : smp->v;
			int64_t bucket = s->fc->cur_bucket;

			s->fc_fed_ms = smp->t_ms;
			if (s->sc->type != SIGNAL_UTILIZATION || n > 0) {
				int64_t wall = clock_mono_to_wall(t, smp->t_ms);

				if (forecast_update(s->fc, wall, total, boot_ms, keep) == 0)
					engine_forecast_service(g->gc, i, s->fc, wall, smp->v,
								s->sc->type == SIGNAL_UTILIZATION ? n : ready);
				closed |= s->fc->n_samples > 1 && s->fc->cur_bucket != bucket;
			}
		}
		in[i].forecast_valid = forecast_for_engine(s->fc, t.wall_ms, boot_ms, keep, &in[i].forecast_total,
							   &in[i].forecast_keep_total) == 0;
		in[i].forecast_offset = s->fc->q_adjust;
		in[i].forecast_short = s->fc->service_short;
	}
	if (closed)
		forecasts_save(g);
}

/* What the runtime knows, as the engine's inputs: the observation, the
 * signals' windows, and what the agent knows about itself, each with its own
 * hold reason: one operation at a time per group (an action pending from
 * before a restart counts), members a partial observation could not see,
 * an operator's pause or pin. `in_flight` is the action the actuator has
 * pending. The daemon's evaluation and a what-if both start here. */
void group_engine_inputs(const struct group_rt *g, enum scale_direction in_flight, struct observation *obs,
			 struct engine_signal_input *in)
{
	if (g->job && g->job->kind == JOB_SCALE_OUT)
		in_flight = DIR_OUT;
	else if ((g->job && g->job->kind == JOB_SCALE_IN) || g->drain)
		in_flight = DIR_IN;
	*obs = (struct observation){
		.current = g->current,
		.instances = g->instances,
		.n_instances = g->n_instances,
		.stable = g->stable,
		.in_flight = in_flight,
		.busy = in_flight != DIR_NONE || group_calling(g) || g->drain,
		.partial = g->partial,
		.host_bounded = g->host_room >= 0,
		.host_room = g->host_room,
		.paused = group_st(g)->pause.active,
		.not_owner = g->ctx->cluster && !group_acting_owner(g),
		.pinned = group_st(g)->pin.active,
		.pin_count = group_st(g)->pin.count,
		.pin_forced = group_st(g)->pin.forced,
	};
	for (size_t i = 0; i < g->n_signals; i++) {
		in[i] = (struct engine_signal_input){
			.window = &g->signals[i].win,
			.error = g->signals[i].error,
			.n_sampled = g->signals[i].n_sampled,
			.window_over = g->signals[i].win_over,
		};
	}
}

/* What follows an action's decision once the state file holds it in
 * flight: the record and the notification, then the drain or the driver's
 * call. JSON: the decision's record (taken; NULL if not made). */
static void start_action(struct group_rt *g, enum scale_direction action, int current, int desired, char *json)
{
	metrics_record_action(g->ctx->metrics, g->gc->name, action);
	if (json && g->ctx->notifier)
		notify_action(g->ctx->notifier, group_notify(g->gc), g->gc->name, json);
	if (action == DIR_IN && group_start_drain(g, current - desired, json ? json : "{}")) {
		ring_push(g, json);
		return;
	}
	ring_push(g, json);
	group_start_scale_job(g, action == DIR_OUT ? JOB_SCALE_OUT : JOB_SCALE_IN,
			      action == DIR_OUT ? desired : current - desired, current, NULL, 0);
}

/* The actions decided in this turn of the loop, whose state is being
 * synced (intend()). */
struct intent {
	struct group_rt *g;
	struct state_writer_ticket ticket;
	enum scale_direction action;
	int current, desired;
	char *json;
};

static struct intent *intents;
static size_t n_intents, intents_size;

/* An action is in the state file, synced, before its driver call starts,
 * so that a crash from there on is reconciled after the restart. The
 * actions that the evaluations of one turn of the loop decide (the
 * observations that ended together, in a burst of load at 10,000 groups)
 * are synced together: their saves are queued here, and
 * group_start_actions(), at the end of the turn, waits for them, which
 * the writer makes in one go with one sync of the directory, and then
 * starts them in the order they were decided. Nothing else runs on the
 * loop in between, so no evaluation, reload or request sees an action
 * decided and not started. In a cluster the group's record in etcd must be
 * written first, and the action starts at once, as when no room is left
 * to queue it. */
static void intend(struct group_rt *g, enum scale_direction action, int current, int desired, char *json)
{
	struct intent *it;

	if (!g->ctx->cluster && n_intents == intents_size) {
		size_t n = intents_size ? 2 * intents_size : 16;
		struct intent *grown = realloc(intents, n * sizeof(*grown));

		if (grown) {
			intents = grown;
			intents_size = n;
		}
	}
	if (g->ctx->cluster || n_intents == intents_size) {
		group_save(g);
		start_action(g, action, current, desired, json);
		return;
	}
	it = &intents[n_intents++];
	*it = (struct intent){ .g = g, .action = action, .current = current, .desired = desired, .json = json };
	save_state_ticket(g, SAVE_QUEUED, &it->ticket);
}

/* Starts the actions intend() queued, once their saves are synced (on
 * the loop, at the end of each callback that evaluates). */
static void group_start_actions(void)
{
	for (size_t i = 0; i < n_intents; i++) {
		struct intent *it = &intents[i];

		if (it->ticket.e) {
			int r = state_writer_wait(&it->ticket);

			if (r < 0) {
				save_failed(it->g, it->g->ctx->agent_conf->state_directory, r);
				it->g->save_retry = true;
			} else {
				save_ok(it->g);
			}
		}
		start_action(it->g, it->action, it->current, it->desired, it->json);
	}
	n_intents = 0;
}

static void group_evaluate(struct group_rt *g)
{
	struct engine_signal_input in[CONFIG_MAX_SIGNALS];
	struct observation obs;
	struct decision d;
	int64_t m0, m1;
	struct clock_now t = clock_now();
	bool dry = group_rt_dry_run(g);
	bool paused, pinned, was_pinned;
	char *json;
	int r;

	m0 = clock_mono_ns();
	if (!g->first_eval_ms)
		g->first_eval_ms = t.mono_ms;
	if (g->ctx->cluster)
		group_take_record(g, t);
	was_pinned = group_st(g)->pin.active;
	if (state_expire(group_st(g), t.wall_ms))
		log_group(LOG_NOTICE, g->gc->name, NULL, NULL, "%s expired",
			  !group_st(g)->pin.active && was_pinned ? "the pin" : "the pause");
	group_engine_inputs(g, group_reconcile_in_flight(g, t.mono_ms), &obs, in);
	/* The boot time: measured from the group's own scale-outs. */
	forecast_boot_observe(&group_st(g)->boot, t.mono_ms, ready_instances(g));
	obs.boot_ms = forecast_boot_horizon(&group_st(g)->boot, g->gc->behavior.boot_time_ms);
	forecasts_feed(g, t, obs.boot_ms, in);
	r = engine_evaluate(g->gc, t, &obs, in, &group_st(g)->engine, &group_st(g)->engine, &d);
	if (r < 0) {
		log_group_errno(LOG_ERR, g->gc->name, r, "evaluation failed");
		metrics_record_error(g->ctx->metrics, g->gc->name, "evaluation");
		return;
	}
	g->override = d.override;
	record_flush(g, true);
	json = log_decision(g, &d, dry);
	if (!json && borrows_signal_errors(g, &d)) {
		char sentence[1024];

		json = make_record(g, &d, dry, sentence, sizeof(sentence));
	}
	g->have_last = true;
	g->record_pending = keep_last(g, &d) && !json;
	g->record_dry_run = dry;
	m1 = clock_mono_ns();
	paused = group_st(g)->pause.active;
	pinned = group_st(g)->pin.active;
	metrics_record_decision(g->ctx->metrics, g->gc, &d,
				&(struct metrics_group_status){
					.paused = paused,
					.pinned = pinned,
					.in_flight = obs.in_flight != DIR_NONE,
					.owned = !g->ctx->cluster ? -1 : !obs.not_owner,
					.evaluation_seconds = (double)(m1 - m0) / 1e9,
				});
	if (d.action == DIR_NONE || dry || group_calling(g) || g->drain) {
		ring_push(g, json);
		group_save_later(g);
		return;
	}

	/* The action is in the state file before the driver is called, so a
	 * crash from here on is reconciled after the restart. */
	group_st(g)->in_flight = (struct state_action){
		.direction = d.action,
		.from = d.current,
		.to = d.desired,
		.started_ms = t.mono_ms,
		.deadline_ms = t.mono_ms + STATE_IN_FLIGHT_DEADLINE_MS,
	};
	forecast_boot_action(&group_st(g)->boot, t.mono_ms, d.current, d.desired);
	intend(g, d.action, d.current, d.desired, json);
}

/* Whether every signal with its own source has answered its first poll.
 * The first evaluation after a start waits for that, for at most one
 * interval: evaluating on windows that are only empty because the daemon
 * just started would record a hold, which restarts a stabilization window
 * restored from the state file. */
static bool signals_reported(const struct group_rt *g)
{
	for (size_t i = 0; i < g->n_signals; i++)
		if (g->signals[i].src && !g->signals[i].reported)
			return false;
	return true;
}

/* Closes the handle a reload replaced, if any. */
static void close_retired(struct group_rt *g)
{
	if (g->retired)
		g->retired_drv->close(g->retired);
	driver_host_free(g->retired_host);
	g->retired = NULL;
	g->retired_host = NULL;
}

/* A call that ran on the handle of a runtime a reload replaced, because the
 * driver's options changed. Its scale action was this group's and is
 * recorded as such, so that it is not made again; an observation or an
 * open through the old options is dropped. Either way the group now goes
 * through its own handle: it opens it if the reload deferred that, then
 * observes and decides afresh. The old handle is closed once the new one
 * is open. */
static void inherited_job_done(struct group_rt *g, struct job *j, struct clock_now t)
{
	log_group(LOG_INFO, g->gc->name, NULL, NULL,
		  "the %s started before the reload has ended; going on with the driver options of the new configuration",
		  job_kind_noun(j->kind));
	close_retired(g);
	g->retired_drv = j->drv;
	g->retired = j->handle;
	g->retired_host = j->host;
	j->handle = NULL;
	j->host = NULL;
	if (j->kind == JOB_SCALE_OUT || j->kind == JOB_SCALE_IN) {
		group_note_result(g, j, t.wall_ms);
		group_scale_done(g, j, t.mono_ms);
	}
	start_driver_call(g);
	if (!g->job || g->job->kind != JOB_OPEN)
		close_retired(g);
}

void group_job_done(struct job *j)
{
	struct group_rt *g = j->g;
	struct clock_now t = clock_now();
	static const char *const op[] = {"observe", "set_capacity", "remove_instances", "open"};

	metrics_record_driver_call(g->ctx->metrics, g->gc->name, g->gc->driver, op[j->kind],
				   (double)(t.mono_ms - j->called_ms) / 1000.0, (double)j->cpu_ns / 1e9);
	if (j->close_when_done) {
		inherited_job_done(g, j, t);
		return;
	}
	group_note_result(g, j, t.wall_ms);
	switch (j->kind) {
	case JOB_OBSERVE:
		if (j->r < 0) {
			/* The driver's own words say why (e.g. until when the
			 * cloud throttles it). */
			log_group(LOG_WARNING, g->gc->name, NULL, NULL, "observe failed: %s%s%s%s; holding",
				  strerror(-j->r), j->driver_msg ? " (" : "", j->driver_msg ? j->driver_msg : "",
				  j->driver_msg ? ")" : "");
			metrics_record_error(g->ctx->metrics, g->gc->name, "observe");
			if (j->want_samples)
				driver_samples_failed(g, j->r);
			break;
		}
		take_observation(g, j, t);
		if (j->want_samples)
			feed_driver_samples(g, j, t);
		metrics_record_observation(g->ctx->metrics, g->gc->name);
		if (!g->first_reported) {
			g->first_reported = true;
			if (g->ctx->first_observation)
				g->ctx->first_observation(g->ctx->userdata);
		}
		if (!g->stopped && (signals_reported(g) || t.mono_ms - g->started_ms >= g->gc->interval_ms))
			group_evaluate(g);
		break;
	case JOB_SCALE_OUT:
	case JOB_SCALE_IN:
		group_scale_done(g, j, t.mono_ms);
		break;
	case JOB_OPEN:
		close_retired(g);
		if (j->r < 0) {
			log_group_errno(LOG_ERR, g->gc->name, j->r, "driver '%s' failed to open, retrying", g->gc->driver);
			metrics_record_error(g->ctx->metrics, g->gc->name, "open");
			break;
		}
		g->handle = j->handle;
		j->handle = NULL;
		log_group(LOG_INFO, g->gc->name, NULL, NULL, "driver '%s' opened", g->gc->driver);
		start_driver_call(g);
		break;
	}
}

static void on_group_timer(struct timer *t, uint64_t due, void *userdata)
{
	struct group_rt *g = userdata;

	timer_set(t, due + (uint64_t)g->gc->interval_ms * 1000);
	if (group_calling(g)) {
		/* A driver call is still running, or the group still waits for
		 * its turn to observe: evaluation and logging go on with the
		 * last observation; no second action is issued. */
		if (g->observed) {
			group_evaluate(g);
			group_start_actions();
		}
		return;
	}
	if (g->ctx->cluster && !cluster_observes(g->ctx->cluster, g->gc->name)) {
		/* Another agent's group (cluster.observe = "owned"): no driver
		 * call and no evaluation here; its signals are still polled, so
		 * that its windows are full if it comes to this agent. Its
		 * evaluations stop being continuous (state_merge_record()). */
		g->first_eval_ms = 0;
		if (!g->first_reported) {
			g->first_reported = true;
			if (g->ctx->first_observation)
				g->ctx->first_observation(g->ctx->userdata);
		}
		return;
	}
	start_driver_call(g);
}

/* -------------------------------------------------------------- actions */

/* Scale actions: settling an action from before a restart, starting scale
 * jobs, draining victims through the pre-scale-in hook first, completing
 * the jobs, and keeping the last failed driver operation for the decision
 * records. */

/* An action recorded in the state but carried out by no call of this
 * process: one from before a restart (or a reload that cancelled a drain).
 * It is matched against the observation; until it is settled no new action
 * is issued. Returns its direction while it is pending. */
enum scale_direction group_reconcile_in_flight(struct group_rt *g, int64_t t)
{
	struct state_action a = group_st(g)->in_flight;

	if (a.direction == DIR_NONE || group_calling(g) || g->drain)
		return a.direction;
	switch (state_reconcile(group_st(g), g->current, g->stable, t)) {
	case RECONCILE_NONE:
		return DIR_NONE;
	case RECONCILE_PENDING:
		return a.direction;
	case RECONCILE_DONE:
		engine_record_action(&group_st(g)->engine, a.started_ms, a.from, a.to);
		log_group(LOG_NOTICE, g->gc->name, NULL, NULL,
			  "the %s from %d to %d in flight before the restart is complete", direction_noun(a.direction),
			  a.from, a.to);
		break;
	case RECONCILE_STOPPED:
		if (g->current != a.from)
			engine_record_action(&group_st(g)->engine, a.started_ms, a.from, g->current);
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
		group_st(g)->in_flight.direction = DIR_NONE;
		return;
	}
	j->kind = kind;
	j->count = count;
	j->from = from;
	j->ids = ids;
	j->n_ids = n_ids;
	if (job_start(g, j) < 0) {
		job_free(j);
		group_st(g)->in_flight.direction = DIR_NONE;
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
		group_st(g)->in_flight.direction = DIR_NONE;
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
		group_st(g)->in_flight.direction = DIR_NONE;
		group_save(g);
		return;
	}
	group_st(g)->in_flight.to = group_st(g)->in_flight.from - (int)n;
	group_save(g);
	group_start_scale_job(g, JOB_SCALE_IN, (int)n, group_st(g)->in_flight.from, copy, n);
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

	if (!group_notify(g->gc)->pre_scale_in || !g->ctx->notifier)
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
		r = drain_start(g->ctx->notifier, group_notify(g->gc), g->gc->name, ids, n, (size_t)count, record, on_drained,
				g, &g->drain);
	} else {
		r = -ENOMEM;
	}
	free(v);
	free(ids);
	if (r < 0) {
		log_group_errno(LOG_ERR, g->gc->name, r, "scale-in held: cannot start the pre-scale-in hook");
		group_st(g)->in_flight.direction = DIR_NONE;
		group_save(g);
	}
	return true;
}

void group_note_result(struct group_rt *g, const struct job *j, int64_t t)
{
	struct group_error *e = &g->last_error;

	/* The pending record shows the error of its own time. */
	if (j->r >= 0) {
		if (e->time_ms && e->kind == j->kind) {
			record_flush(g, false);
			free(e->message);
			*e = (struct group_error){0};
		}
		return;
	}
	record_flush(g, false);
	free(e->message);
	/* Without memory the record shows the errno's words alone. */
	*e = (struct group_error){.time_ms = t, .kind = j->kind, .err = j->r,
				  .message = j->driver_msg ? strndup(j->driver_msg, GROUP_ERROR_MAX) : NULL};
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
	    !(e->message ? cJSON_AddStringToObject(o, "message", e->message) : cJSON_AddNullToObject(o, "message"))) {
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
	group_st(g)->in_flight.direction = DIR_NONE;
	if (j->r < 0) {
		log_fields_errno(LOG_ERR, g->gc->name, LOG_ID_ACTION_FAILED, fields, 3, j->r, "%s from %d to %d failed",
				 direction_noun(j->kind == JOB_SCALE_OUT ? DIR_OUT : DIR_IN), j->from, to);
		metrics_record_error(g->ctx->metrics, g->gc->name,
				     j->kind == JOB_SCALE_OUT ? "set_capacity" : "remove_instances");
		/* Whatever part of it happened shows in the next observation;
		 * recording it keeps rate limits honest. */
		if (j->n_done > 0)
			engine_record_action(&group_st(g)->engine, j->started_ms, j->from,
					     j->from + (j->kind == JOB_SCALE_OUT ? j->n_done : -j->n_done));
		save_state(g, SAVE_SETTLED);
		return;
	}
	engine_record_action(&group_st(g)->engine, j->started_ms, j->from, to);
	save_state(g, SAVE_SETTLED);
	log_fields(LOG_NOTICE, g->gc->name, LOG_ID_ACTION, fields, 3, "%s from %d to %d done in %.1f s",
		   j->kind == JOB_SCALE_OUT ? "scaled out" : "scaled in", j->from, to,
		   (double)(t - j->started_ms) / 1000.0);
	g->current = to;
}

/* ------------------------------------------------------------ lifecycle */

int group_rt_new(const struct group_ctx *ctx, const struct group_conf *gc, const struct group_rt *old,
		 struct group_rt **ret)
{
	struct driver_options opts = { 0 };
	const struct driver *loaded;
	struct group_rt *g;
	char err[512];
	int64_t longest;
	size_t cap;
	int r;

	r = job_done_init(ctx->event, group_job_done, start_driver_call, group_start_actions);
	if (r < 0)
		return r;
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->ctx = ctx;
	g->gc = gc;
	g->host_room = -1;
	state_init(group_st(g));
	/* A group that is new to this process resumes from its state file; a
	 * group that a reload rebuilds takes the old runtime's state instead
	 * (group_rt_adopt). */
	if (!old) {
		char path[PATH_MAX];

		/* A group of this name that a reload removed may still have a
		 * save on its way to the file. */
		if (state_path(ctx->agent_conf->state_directory, gc->name, path, sizeof(path)) == 0)
			state_writer_sync(path);
		g->origin = state_load(ctx->agent_conf->state_directory, gc, clock_now(), group_st(g));
		if (g->origin == STATE_RESTORED)
			log_group(LOG_INFO, gc->name, NULL, NULL,
				  "state restored: %zu recommendation%s in the scale-in window%s%s%s", group_st(g)->engine.n_down_recs,
				  group_st(g)->engine.n_down_recs == 1 ? "" : "s",
				  group_st(g)->in_flight.direction != DIR_NONE ? ", an action in flight" : "",
				  group_st(g)->pin.active ? ", pinned" : "", group_st(g)->pause.active ? ", paused" : "");
	}
	g->saved_digest = group_state_digest(group_st(g));
	g->saved_shape = group_state_shape(group_st(g));

	r = driver_load(gc->driver, ctx->agent_conf->driver_directory, &loaded, err, sizeof(err));
	if (r < 0) {
		log_group(LOG_ERR, gc->name, NULL, NULL, "%s", err);
		goto fail;
	}
	g->drv = loaded->ops;

	g->signals = calloc(gc->n_signals ? gc->n_signals : 1, sizeof(*g->signals));
	if (!g->signals) {
		r = -ENOMEM;
		goto fail;
	}
	g->n_signals = gc->n_signals;
	for (size_t i = 0; i < gc->n_signals; i++) {
		struct signal_rt *s = &g->signals[i];
		const struct signal_conf *sc = &gc->signals[i];

		s->sc = sc;
		s->g = g;
		s->n_sampled = -1;
		s->driver_source = driver_source_index(g->drv, sc->source);
		longest = group_longest_window(gc, i);
		cap = window_capacity_for(longest, sc->poll_interval_ms);
		r = longest > 0 ? window_init_span(&s->win, cap, longest) : window_init(&s->win, cap);
		if (r < 0)
			goto fail;
		/* The driver feeds it through its observations (preflight
		 * has checked that no other source has its name). */
		if (s->driver_source >= 0) {
			g->want_samples = true;
			continue;
		}
		struct source_env env = {.event = ctx->event, .http = ctx->http};

		r = source_new(sc, &env, &s->src, err, sizeof(err));
		if (r < 0) {
			log_group(LOG_ERR, gc->name, NULL, NULL, "signal '%s': %s", sc->name, err);
			goto fail;
		}
	}

	r = forecasts_start(g, old);
	if (r < 0)
		goto fail;

	/* The driver instance is opened last, and only when the old runtime's
	 * instance (or the one it is opening) cannot be taken over. */
	g->take_over = old && same_driver(old->gc, gc) && (old->handle || (old->job && old->job->kind == JOB_OPEN));
	if (g->take_over) {
		*ret = g;
		return 0;
	}
	r = make_host(g);
	if (r < 0)
		goto fail;
	/* The options are the driver's only during the call (driver.h): they
	 * are made for it and go with it, as a job's are. */
	r = driver_options_from_group(gc, &opts);
	if (r < 0)
		goto fail;
	if ((old && old->job) || job_orphan_running(gc->name)) {
		/* The group's driver is busy with a call through the old
		 * options (or through those of a group of this name that a
		 * reload removed). Opening a second instance now would act on the
		 * same backend at the same time (an open repairs what looks
		 * half done, such as the member that call is making), so the
		 * open waits for that call (start_driver_call). The options
		 * are checked now, so that a reload that cannot work is
		 * refused as one whose open fails is. */
		if (AUTOSCALED_DRIVER_HAS_OP(g->drv, check)) {
			r = g->drv->check(g->host, opts.v, opts.n);
			if (r < 0) {
				log_group_errno(LOG_ERR, gc->name, r, "driver '%s' refused its options", gc->driver);
				goto fail;
			}
		}
		driver_options_free(&opts);
		*ret = g;
		return 0;
	}
	r = g->drv->open(g->host, opts.v, opts.n, &g->handle);
	if (r < 0) {
		log_group_errno(LOG_ERR, gc->name, r, "driver '%s' failed to open", gc->driver);
		goto fail;
	}
	driver_options_free(&opts);
	*ret = g;
	return 0;
fail:
	driver_options_free(&opts);
	group_rt_free(g);
	return r;
}

void group_rt_adopt(struct group_rt *g, struct group_rt *old)
{
	struct job *j = old->job;

	if (g->take_over) {
		driver_host_free(g->host);
		g->handle = old->handle;
		g->host = old->host;
		old->handle = NULL;
		old->host = NULL;
	}
	/* The old runtime's call in flight is the group's one driver call:
	 * it reports to this runtime, which starts none of its own before it
	 * has ended and records what it did. When the handle it runs on is
	 * not taken over, the handle goes with the call and is closed after
	 * it. */
	if (j) {
		old->job = NULL;
		j->g = g;
		g->job = j;
		if (!g->take_over && !j->close_when_done) {
			j->close_when_done = true;
			j->host = old->host;
			old->handle = NULL;
			old->host = NULL;
		}
	}
	for (size_t i = 0; i < g->n_signals; i++) {
		for (size_t k = 0; k < old->n_signals; k++) {
			struct signal_rt *a = &g->signals[i], *b = &old->signals[k];

			if (strcmp(a->sc->name, b->sc->name) != 0)
				continue;
			/* Keep the samples: a reload must not empty the windows. */
			for (size_t n = 0; n < b->win.n; n++) {
				const struct sample *smp = &b->win.buf[(b->win.head + n) % b->win.cap];

				window_push(&a->win, smp->t_ms, smp->v);
			}
			signal_clear_error(a);
			a->error = b->error;
			b->error = NULL;
			a->n_sampled = b->n_sampled;
			a->win_over = b->win_over;
			a->reported = b->reported;
			/* The same reader: keep it, with its poll in flight and
			 * its schedule, so that the reload neither polls it
			 * again nor kills a command it runs. */
			if (a->src && b->src && config_signal_equal(a->sc, b->sc)) {
				struct source *src = a->src;

				a->src = b->src;
				b->src = src;
				if (b->polling)
					source_set_userdata(a->src, a);
				a->polling = b->polling;
				b->polling = false;
				if (!timer_armed(&b->timer, &a->next_poll_usec))
					a->next_poll_usec = 0;
			}
		}
	}
	/* The state moves: OLD's, written back if it is the one in full, and
	 * not G's fresh one, which may be in full too. */
	group_st_flush(old);
	if (st_owner == g)
		st_owner = NULL;
	free(g->st_packed);
	g->st_packed = old->st_packed;
	old->st_packed = NULL;
	g->saved_digest = old->saved_digest;
	g->saved_shape = old->saved_shape;
	g->saved_mono_ms = old->saved_mono_ms;
	g->origin = old->origin;
	g->adopted_since = old->adopted_since;
	g->first_eval_ms = old->first_eval_ms;
	/* The old runtime's pending record names its configuration. */
	record_flush(old, false);
	g->ring = old->ring;
	old->ring = (struct admin_ring){0};
	/* A drain in flight belongs to the old runtime and ends with it; the
	 * action it was for is reconciled like one from before a restart. The
	 * last decision is not taken over: it points into the old
	 * configuration. */
	g->instances = old->instances;
	g->n_instances = old->n_instances;
	old->instances = NULL;
	old->n_instances = 0;
	g->current = old->current;
	g->stable = old->stable;
	g->partial = old->partial;
	g->host_room = old->host_room;
	g->observed = old->observed;
	g->observed_start_ms = old->observed_start_ms;
	g->first_reported = old->first_reported;
	/* A reload does not make a failed operation succeed. */
	free(g->last_error.message);
	g->last_error = old->last_error;
	old->last_error.message = NULL;
}

void group_rt_rebind(struct group_rt *g, const struct group_conf *gc)
{
	g->gc = gc;
	for (size_t i = 0; i < g->n_signals; i++)
		g->signals[i].sc = &gc->signals[i];
	/* The last decision names its group and profile by pointer. */
	if (g->last) {
		struct decision d;

		decision_unpack(g->last, &d);
		d.group = gc->name;
		if (d.profile_index >= 0 && (size_t)d.profile_index < gc->n_profiles)
			d.profile = gc->profiles[d.profile_index].name;
		/* Its packed size follows what it holds (a pointer that
		 * was NULL takes a word); without the memory the group has
		 * no last decision until its next, and no record of it. */
		if (!keep_last(g, &d))
			g->record_pending = false;
	}
}

void group_rt_start(struct group_rt *g)
{
	uint64_t t;

	g->stopped = false;
	g->started_ms = clock_mono_ms();
	/* A group that a reload added again takes over the call its
	 * predecessor left running, as a reloaded group does (group_rt_adopt). */
	if (!g->job) {
		struct job *j = job_claim_orphan(g->gc->name);

		if (j) {
			j->g = g;
			g->job = j;
		}
	}
	sd_event_now(g->ctx->event, CLOCK_MONOTONIC, &t);
	/* Evaluate at once, then every interval. Groups started together
	 * stay in step, one burst an interval. Spreading each group's ticks
	 * over the interval by a hash of its name (as Prometheus spreads its
	 * scrapes) was tried and measured: at 10,000 filepool groups
	 * (bench/footprint.sh, 40 s to 100 s) 4.7-5.3 % of a core against
	 * 3.1-3.3 % in step, and 6.7-7.2 % with the ticks on one-second
	 * slots, for the same 666 evaluations a second (docs/soak.md). */
	if (timer_start(g->ctx->event, &g->timer, t, on_group_timer, g) < 0)
		log_group(LOG_ERR, g->gc->name, NULL, NULL, "out of memory: the group is not evaluated");
	for (size_t i = 0; i < g->n_signals; i++) {
		struct signal_rt *s = &g->signals[i];

		if (s->src && timer_start(g->ctx->event, &s->timer, s->next_poll_usec ? s->next_poll_usec : t,
					  on_signal_timer, s) < 0)
			log_group(LOG_ERR, g->gc->name, NULL, NULL, "out of memory: signal '%s' is not polled",
				  s->sc->name);
	}
}

void group_rt_stop(struct group_rt *g)
{
	bool was = g->stopped;

	g->stopped = true;
	job_unadmit(g);
	timer_stop(&g->timer);
	for (size_t i = 0; i < g->n_signals; i++)
		timer_stop(&g->signals[i].timer);
	/* The forecasters learn nothing more: saved now, while a cluster's
	 * owner still holds the group and can hand its record over. */
	if (!was)
		forecasts_save(g);
}

void group_rt_free(struct group_rt *g)
{
	if (!g)
		return;
	group_rt_stop(g);
	drain_cancel(g->drain);
	admin_ring_clear(&g->ring);
	for (size_t i = 0; i < g->n_signals; i++) {
		source_free(g->signals[i].src);
		window_destroy(&g->signals[i].win);
		signal_clear_error(&g->signals[i]);
	}
	for (size_t i = 0; i < g->n_signals; i++) {
		n_forecasters -= g->signals[i].fc != NULL;
		free(g->signals[i].fc);
	}
	free(g->signals);
	/* A call that has not started is not started for a group that is
	 * gone (a reload removed it, or the daemon stops). */
	if (g->job && job_cancel(g->job))
		g->job = NULL;
	if (g->job) {
		struct job *j = g->job;

		/* The worker still uses the handle, or is opening it: it is
		 * closed when the call has ended. A call inherited from a
		 * replaced runtime already owns its handle. */
		j->g = NULL;
		if (!j->close_when_done && (j->kind == JOB_OPEN || j->handle == g->handle)) {
			j->close_when_done = true;
			j->host = g->host;
			g->handle = NULL;
			g->host = NULL;
		}
		job_orphan(j, g->gc->name);
	}
	if (g->handle)
		g->drv->close(g->handle);
	driver_host_free(g->host);
	close_retired(g);
	free(g->instances);
	free(g->last_error.message);
	free(g->last);
	if (st_owner == g)
		st_owner = NULL;
	free(g->st_packed);
	free(g);
}

const char *group_rt_name(const struct group_rt *g)
{
	return g->gc->name;
}

bool group_rt_dry_run(const struct group_rt *g)
{
	/* Read from the packed state: the agent's status asks it of every
	 * group, which should not unpack them all. */
	if (g->ctx->dry_run)
		return true;
	if (st_owner == g || !g->st_packed)
		return state_dry_run(group_st(g), g->gc->dry_run);
	return state_packed_dry_run(g->st_packed, g->gc->dry_run);
}

struct group_state *group_rt_state(struct group_rt *g)
{
	return group_st(g);
}

const struct group_conf *group_rt_conf(const struct group_rt *g)
{
	return g->gc;
}

const struct decision *group_rt_last(const struct group_rt *g, struct decision *buf)
{
	if (!g->last)
		return NULL;
	decision_unpack(g->last, buf);
	return buf;
}

char *group_rt_newest_record(const struct group_rt *g)
{
	struct decision last;
	char sentence[1024];

	if (g->record_pending)
		return make_record(g, group_rt_last(g, &last), g->record_dry_run, sentence, sizeof(sentence));
	return admin_ring_newest(&g->ring);
}

cJSON *group_rt_records_json(const struct group_rt *g)
{
	cJSON *o = admin_ring_json(&g->ring), *a = cJSON_GetObjectItemCaseSensitive(o, "decisions");
	char *text;

	if (!a || !g->record_pending)
		return o;
	text = group_rt_newest_record(g);
	if (!text) {
		cJSON_Delete(o);
		return NULL;
	}
	cJSON_AddItemToArray(a, cJSON_Parse(text));
	free(text);
	return o;
}

int group_rt_current(const struct group_rt *g, bool *observed)
{
	*observed = g->observed;
	return g->current;
}

enum state_origin group_rt_origin(const struct group_rt *g)
{
	return g->origin;
}

const struct group_ctx *group_rt_ctx(const struct group_rt *g)
{
	return g->ctx;
}

bool group_rt_state_here(const struct group_rt *g)
{
	return !g->ctx->cluster || group_acting_owner(g);
}

void group_rt_save(struct group_rt *g)
{
	group_save(g);
}

