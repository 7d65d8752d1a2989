/* `autoscaled simulate`: see simulate.h for the model and
 * docs/evaluation.md for the metrics. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "engine/forecast.h"
#include "log/log.h"
#include "simulation/oracle.h"
#include "engine/schedule.h"
#include "simulation/simulate.h"
#include "engine/window.h"

/* Two actions in opposite directions this close together are a reversal. */
#define REVERSAL_MS (600 * MS_PER_SEC)

/* Bounds the modelled pool whatever the configuration's max says. */
#define SIM_MAX_INSTANCES 100000

struct instance {
	int64_t launch_ms;
	int64_t ready_ms;
	char id[24];
};

struct pool {
	struct instance *v;
	struct instance_obs *obs;
	size_t n, cap;
	int64_t billed_ms;
	int64_t bill_from_ms; /* the first scored step: nothing is billed before it */
	unsigned next_id;
	const struct sim_params *p;
};

static int pool_launch(struct pool *pool, int64_t now_ms, int64_t ready_ms)
{
	struct instance *in;

	if (pool->n == pool->cap) {
		size_t cap = pool->cap ? pool->cap * 2 : 64;
		struct instance *v;
		struct instance_obs *o;

		if (pool->cap >= SIM_MAX_INSTANCES)
			return -E2BIG;
		v = realloc(pool->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		pool->v = v;
		o = realloc(pool->obs, cap * sizeof(*o));
		if (!o)
			return -ENOMEM;
		pool->obs = o;
		pool->cap = cap;
	}
	in = &pool->v[pool->n++];
	in->launch_ms = now_ms;
	in->ready_ms = ready_ms;
	snprintf(in->id, sizeof(in->id), "sim-%u", pool->next_id++);
	return 0;
}

/* Removes the newest instance, which is a provisioning one if any is. */
static void pool_remove_newest(struct pool *pool, int64_t now_ms)
{
	struct instance *in = &pool->v[--pool->n];
	int64_t from = in->launch_ms > pool->bill_from_ms ? in->launch_ms : pool->bill_from_ms;

	/* An instance that lives into the scored time is billed from its
	 * start, like the pool the trace starts with. */
	if (now_ms > pool->bill_from_ms)
		pool->billed_ms +=
			oracle_bill_ms(now_ms - from, pool->p->billing_granularity_ms, pool->p->billing_minimum_ms);
}

static int pool_ready(const struct pool *pool, int64_t now_ms)
{
	int r = 0;

	for (size_t i = 0; i < pool->n; i++)
		r += pool->v[i].ready_ms <= now_ms;
	return r;
}

/* The driver's view of the pool: booting instances are provisioning. */
static void pool_observe(struct pool *pool, int64_t now_ms, int64_t warm_ms, struct observation *obs)
{
	for (size_t i = 0; i < pool->n; i++) {
		const struct instance *in = &pool->v[i];
		struct instance_obs *o = &pool->obs[i];
		bool ready = in->ready_ms <= now_ms;

		o->id = in->id;
		o->state = ready ? INSTANCE_RUNNING : INSTANCE_PROVISIONING;
		/* The pool that exists when the trace starts has been running long
		 * before it: no initialization period. */
		o->created_ms = in->launch_ms == warm_ms ? warm_ms - 3600 * MS_PER_SEC : in->launch_ms;
		o->running_since_ms = ready ? (in->launch_ms == warm_ms ? o->created_ms : in->ready_ms) : 0;
		o->running_since_mono_ms = o->running_since_ms; /* one virtual clock */
		o->created_mono_ms = o->created_ms;
		o->ready = ready;
		o->location = NULL;
	}
	memset(obs, 0, sizeof(*obs));
	obs->current = (int)pool->n;
	obs->instances = pool->obs;
	obs->n_instances = pool->n;
	obs->stable = true;
	obs->in_flight = DIR_NONE;
}

int sim_warm_state_parse(const char *s, enum sim_warm_state *ret)
{
	if (!s)
		return -EINVAL;
	if (strcmp(s, "paused") == 0)
		*ret = SIM_WARM_PAUSED;
	else if (strcmp(s, "saved") == 0)
		*ret = SIM_WARM_SAVED;
	else if (strcmp(s, "stopped") == 0)
		*ret = SIM_WARM_STOPPED;
	else
		return -EINVAL;
	return 0;
}

const char *sim_warm_state_name(enum sim_warm_state s)
{
	switch (s) {
	case SIM_WARM_PAUSED:
		return "paused";
	case SIM_WARM_SAVED:
		return "saved";
	case SIM_WARM_STOPPED:
		return "stopped";
	}
	return "?";
}

int64_t sim_warm_default_restore_ms(enum sim_warm_state state, int64_t boot_ms)
{
	switch (state) {
	case SIM_WARM_PAUSED:
		return 1 * MS_PER_SEC;
	case SIM_WARM_SAVED:
		return 5 * MS_PER_SEC;
	case SIM_WARM_STOPPED:
		break;
	}
	return boot_ms;
}

int sim_horizon_parse(const char *s, enum sim_horizon *ret)
{
	if (!s)
		return -EINVAL;
	if (strcmp(s, "measured") == 0)
		*ret = SIM_HORIZON_MEASURED;
	else if (strcmp(s, "boot-time") == 0)
		*ret = SIM_HORIZON_BOOT_TIME;
	else if (strcmp(s, "warm-restore") == 0)
		*ret = SIM_HORIZON_WARM_RESTORE;
	else
		return -EINVAL;
	return 0;
}

const char *sim_horizon_name(enum sim_horizon h)
{
	switch (h) {
	case SIM_HORIZON_MEASURED:
		return "measured";
	case SIM_HORIZON_BOOT_TIME:
		return "boot-time";
	case SIM_HORIZON_WARM_RESTORE:
		return "warm-restore";
	}
	return "?";
}

/* The warm pool: when each member is available. A member taken is
 * replaced at once, so there are always `size` of them; one whose time
 * lies ahead is being refilled. */
struct warm_pool {
	int64_t *avail_ms;
	int size;
	int64_t refill_ms;
	const struct sim_warm_pool *conf;
	double member_ms, memory_member_ms; /* scored time, summed over members */
};

/* A paused or saved member boots before it is suspended or saved; a
 * stopped one needs only its disk. */
static int64_t warm_refill_ms(const struct sim_warm_pool *w, int64_t boot_ms)
{
	return w->state == SIM_WARM_STOPPED ? 0 : boot_ms;
}

static int warm_pool_init(struct warm_pool *wp, const struct sim_params *p, int64_t t0)
{
	wp->conf = &p->warm;
	wp->size = p->warm.size;
	wp->refill_ms = warm_refill_ms(&p->warm, p->boot_ms);
	if (wp->size == 0)
		return 0;
	wp->avail_ms = malloc((size_t)wp->size * sizeof(*wp->avail_ms));
	if (!wp->avail_ms)
		return -ENOMEM;
	for (int i = 0; i < wp->size; i++)
		wp->avail_ms[i] = t0;
	return 0;
}

/* Takes an available member at NOW_MS, if any, and starts its refill.
 * A refill that takes no time is still another member: it is there for
 * the next scale-out, never for the one that took its predecessor. */
static bool warm_pool_take(struct warm_pool *wp, int64_t now_ms)
{
	for (int i = 0; i < wp->size; i++) {
		if (wp->avail_ms[i] <= now_ms) {
			wp->avail_ms[i] = now_ms + (wp->refill_ms > 0 ? wp->refill_ms : 1);
			return true;
		}
	}
	return false;
}

/* Counts the pool's members over a scored step of DT_MS from NOW_MS:
 * every member is a VM kept; a paused one holds its memory, and so does
 * any refill still booting (a stopped member's refill boots nothing). */
static void warm_pool_account(struct warm_pool *wp, int64_t now_ms, double dt_ms)
{
	for (int i = 0; i < wp->size; i++) {
		bool refilling = wp->avail_ms[i] > now_ms;
		bool memory = refilling ? wp->conf->state != SIM_WARM_STOPPED : wp->conf->state == SIM_WARM_PAUSED;

		wp->member_ms += dt_ms;
		if (memory)
			wp->memory_member_ms += dt_ms;
	}
}

static bool warm_pool_available(const struct warm_pool *wp, int64_t now_ms)
{
	for (int i = 0; i < wp->size; i++)
		if (wp->avail_ms[i] <= now_ms)
			return true;
	return false;
}

/* The horizon of this step (sim_horizon). */
static int64_t step_horizon(const struct group_conf *g, const struct sim_params *p, const struct forecast_boot *boot,
			    const struct warm_pool *wp, int64_t now_ms)
{
	switch (p->horizon) {
	case SIM_HORIZON_BOOT_TIME:
		return g->behavior.boot_time_ms;
	case SIM_HORIZON_WARM_RESTORE:
		if (warm_pool_available(wp, now_ms))
			return p->warm.restore_ms;
		break;
	case SIM_HORIZON_MEASURED:
		break;
	}
	return forecast_boot_horizon(boot, g->behavior.boot_time_ms);
}

static int required_for(double demand, double capacity)
{
	double r;

	if (isnan(demand) || demand <= 0)
		return 0;
	/* A hair below an integer is that integer: 2.0000000001 -> 3 is a
	 * floating-point artefact, not load. */
	r = ceil(demand / capacity - 1e-9);
	return r > SIM_MAX_INSTANCES ? SIM_MAX_INSTANCES : (int)r;
}

struct scoring {
	double t_known_ms, under_acc, over_acc, under_ms, over_ms, unserved, demand;
	int prev_required, prev_ready;
	long demand_changes, supply_changes;
	bool have_prev;
};

static void score_step(struct scoring *sc, const struct sim_step *st, double capacity, double dt)
{
	if (isnan(st->demand))
		return;
	sc->t_known_ms += dt;
	if (st->required > st->ready) {
		sc->under_acc += (double)(st->required - st->ready) / st->required * dt;
		sc->under_ms += dt;
	} else if (st->ready > st->required) {
		sc->over_acc += (double)(st->ready - st->required) / (st->required > 0 ? st->required : 1) * dt;
		sc->over_ms += dt;
	}
	if (st->demand > st->ready * capacity)
		sc->unserved += (st->demand - st->ready * capacity) * dt;
	sc->demand += st->demand * dt;
	if (sc->have_prev) {
		sc->demand_changes += st->required != sc->prev_required;
		sc->supply_changes += st->ready != sc->prev_ready;
	}
	sc->prev_required = st->required;
	sc->prev_ready = st->ready;
	sc->have_prev = true;
}

/* The agent's inputs in force after `ev`, kept in an observation's fields. */
static void apply_agent_event(struct observation *agent, const struct sim_agent_event *ev)
{
	switch (ev->kind) {
	case SIM_PAUSE:
		agent->paused = true;
		break;
	case SIM_RESUME:
		agent->paused = false;
		break;
	case SIM_PIN:
		agent->pinned = true;
		agent->pin_count = ev->count;
		agent->pin_forced = ev->forced;
		break;
	case SIM_UNPIN:
		agent->pinned = false;
		break;
	case SIM_PARTIAL:
		agent->partial = true;
		break;
	case SIM_FULL:
		agent->partial = false;
		break;
	case SIM_IN_FLIGHT:
		agent->in_flight = ev->dir;
		break;
	}
}

static int check_params(const struct group_conf *g, const struct trace_reader *t, const struct sim_params *p)
{
	if (!g || !t || !p || p->step_ms <= 0 || p->boot_ms < 0 || !(p->capacity > 0) || p->warmup_ms < 0 ||
	    g->n_signals > CONFIG_MAX_SIGNALS)
		return -EINVAL;
	/* A restore slower than a cold boot would make the pool a delay. */
	if (p->warm.size < 0 || p->warm.size > SIM_MAX_WARM || p->warm.restore_ms < 0 ||
	    (p->warm.size > 0 && p->warm.restore_ms > p->boot_ms) || !(p->instance_memory_mib >= 0) ||
	    !isfinite(p->instance_memory_mib) || (unsigned)p->warm.state > SIM_WARM_STOPPED ||
	    (unsigned)p->horizon > SIM_HORIZON_WARM_RESTORE)
		return -EINVAL;
	return 0;
}

/* The pool the trace starts with, already warm: sized for the demand
 * until an instance launched at the start could be ready (at least one
 * step), within the active profile's bounds. A trace that starts mid-load
 * (the Azure one starts at its first logged request) would otherwise
 * charge every policy for a ramp that no policy sees. This reads the
 * first boot delay of the trace before the first decision: it is setup,
 * not policy, and --initial-instances replaces it. */
static int initial_pool(const struct group_conf *g, struct trace_cursor *c, int64_t t0, const struct sim_params *p,
			int *ret)
{
	const struct profile_conf *pr = &g->profiles[schedule_active_profile(g, t0)];
	int64_t until = t0 + (p->boot_ms > p->step_ms ? p->boot_ms : p->step_ms);
	int n0 = p->initial;

	if (n0 < 0) {
		for (int64_t a = t0; a < until; a += p->step_ms) {
			double d;
			int r = trace_cursor_mean(c, a, a + p->step_ms, &d);

			if (r < 0)
				return r;
			if (!isnan(d) && required_for(d, p->capacity) > n0)
				n0 = required_for(d, p->capacity);
		}
	}
	if (n0 < 0) /* no data in the first boot delay */
		n0 = pr->def;
	*ret = n0 < pr->min ? pr->min : n0 > pr->max ? pr->max : n0;
	return 0;
}

int simulate_run(const struct group_conf *g, struct trace_reader *t, const struct sim_params *p, struct sim_metrics *m,
		 sim_step_fn on_step, void *userdata)
{
	struct window windows[CONFIG_MAX_SIGNALS] = {{0}};
	int window_over[CONFIG_MAX_SIGNALS] = {0}; /* window_reexpress() */
	struct forecast *fc = NULL;
	struct forecast_boot boot = {0};
	struct engine_signal_input inputs[CONFIG_MAX_SIGNALS];
	struct pool pool = {.p = p};
	struct warm_pool wp = {0};
	double active_member_ms = 0;
	struct trace_cursor cur;
	struct engine_state state;
	struct scoring sc = {0};
	struct sim_metrics res = {0};
	struct oracle_params op;
	struct oracle_result orc;
	struct oracle *orcl = NULL;
	struct decision *dec = NULL;
	size_t n_scored = 0, k;
	int64_t t0, scored_from, end = 0, last_action_ms = 0;
	int64_t horizon;
	enum scale_direction last_dir = DIR_NONE;
	struct observation agent = {.in_flight = DIR_NONE};
	size_t next_event = 0;
	double prev_demand = NAN;
	int r, prev_ready = 0, ready_now, n0;

	r = check_params(g, t, p);
	if (r < 0)
		return r;
	trace_cursor_init(&cur, t);
	dec = calloc(1, sizeof(*dec));
	fc = calloc(g->n_signals ? g->n_signals : 1, sizeof(*fc));
	if (!dec || !fc) {
		r = -ENOMEM;
		goto out;
	}
	r = trace_cursor_start(&cur, &t0);
	if (r < 0)
		goto out;
	scored_from = t0 + (p->warmup_ms + p->step_ms - 1) / p->step_ms * p->step_ms;
	pool.bill_from_ms = scored_from;
	op = (struct oracle_params){
		.start_ms = scored_from,
		.step_ms = p->step_ms,
		.boot_ms = p->boot_ms,
		.billing_granularity_ms = p->billing_granularity_ms,
		.billing_minimum_ms = p->billing_minimum_ms,
		.warm_size = p->warm.size,
		.restore_ms = p->warm.restore_ms,
		.refill_ms = warm_refill_ms(&p->warm, p->boot_ms),
	};
	r = oracle_new(&op, &orcl);
	if (r < 0)
		goto out;
	r = warm_pool_init(&wp, p, t0);
	if (r < 0)
		goto out;
	for (size_t s = 0; s < g->n_signals; s++) {
		int64_t longest = group_longest_window(g, s);
		size_t cap = window_capacity_for(longest, p->step_ms);

		/* As the daemon's windows (group.c). */
		r = longest > 0 ? window_init_span(&windows[s], cap, longest) : window_init(&windows[s], cap);
		if (r < 0)
			goto out;
	}
	engine_state_init(&state);
	/* Forecast history starts empty: the run learns from what it has
	 * seen, as the daemon would from its own samples. */
	for (size_t s = 0; s < g->n_signals; s++) {
		forecast_init(&fc[s], signal_forecast(&g->signals[s])->quantile);
		forecast_set_service(&fc[s], signal_forecast(&g->signals[s])->service_level);
	}
	r = initial_pool(g, &cur, t0, p, &n0);
	if (r < 0)
		goto out;
	for (int i = 0; i < n0; i++) {
		r = pool_launch(&pool, t0, t0);
		if (r < 0)
			goto out;
	}

	for (k = 0;; k++) {
		int64_t now = t0 + (int64_t)k * p->step_ms, step_end;
		struct observation obs;
		struct sim_step st = {.t_ms = now, .scored = now >= scored_from};
		const struct profile_conf *pr;

		/* Stop where the data stops. Asking whether any is left reads
		 * the trace up to the step about to be scored, which no
		 * decision of this step sees. */
		r = trace_cursor_more(&cur, now);
		if (r < 0)
			goto out;
		if (r == 0)
			break;
		if (k >= SIM_MAX_STEPS) {
			log_warnx("simulate: the trace spans more than %u steps", SIM_MAX_STEPS);
			r = -E2BIG;
			goto out;
		}
		trace_cursor_drop(&cur, now);

		/* 1. Samples measured over the step that just ended, and the
		 * horizon: by default the boot time as this run's own
		 * scale-outs measure it (sim_horizon). */
		ready_now = pool_ready(&pool, now);
		forecast_boot_observe(&boot, now, ready_now);
		horizon = step_horizon(g, p, &boot, &wp, now);
		for (size_t s = 0; k > 0 && s < g->n_signals && !isnan(prev_demand); s++) {
			bool util = g->signals[s].type == SIGNAL_UTILIZATION;
			double v = prev_demand;

			if (util)
				v = prev_ready > 0 ? prev_demand / (prev_ready * p->capacity) * 100.0 : 0;

			/* A utilization is sampled only with an instance ready,
			 * as a mean over those ready then; the window holds
			 * every sample over that count. */
			if (util && prev_ready > 0)
				window_reexpress(&windows[s], &window_over[s], prev_ready);
			if (!util || prev_ready > 0)
				window_push(&windows[s], now, v);
			/* The forecaster learns the group total: the sum of the
			 * instances' utilizations, or the value; in mode on, it
			 * is told whether the sample was above the target. */
			if (signal_forecast(&g->signals[s])->mode != FORECAST_OFF &&
			    forecast_update(&fc[s], now, util ? prev_demand / p->capacity * 100.0 : prev_demand, horizon,
					    engine_keep_ms(g, horizon)) == 0 &&
			    (!util || prev_ready > 0))
				engine_forecast_service(g, s, &fc[s], now, v, prev_ready);
		}
		/* Instances that became ready just now served nothing in the
		 * step measured: they have no sample yet (HPA's rules apply). */
		for (size_t s = 0; s < g->n_signals; s++) {
			inputs[s] = (struct engine_signal_input){ 0 };
			inputs[s].window = windows[s].n > 0 ? &windows[s] : NULL;
			inputs[s].error = windows[s].n > 0 ? NULL : "no samples yet";
			inputs[s].n_sampled = k > 0 && ready_now > prev_ready ? prev_ready : -1;
			inputs[s].window_over = window_over[s];
			if (signal_forecast(&g->signals[s])->mode != FORECAST_OFF) {
				inputs[s].forecast_valid =
					forecast_for_engine(&fc[s], now, horizon, engine_keep_ms(g, horizon),
							    &inputs[s].forecast_total,
							    &inputs[s].forecast_keep_total) == 0;
				inputs[s].forecast_offset = fc[s].q_adjust;
				inputs[s].forecast_short = fc[s].service_short;
			}
		}

		/* 2 and 3. The driver's observation and the agent's inputs, then
		 * the engine. */
		pool_observe(&pool, now, t0, &obs);
		while (next_event < p->n_events && p->events[next_event].at_ms <= now - t0)
			apply_agent_event(&agent, &p->events[next_event++]);
		obs.paused = agent.paused;
		obs.pinned = agent.pinned;
		obs.pin_count = agent.pin_count;
		obs.pin_forced = agent.pin_forced;
		obs.partial = agent.partial;
		obs.in_flight = agent.in_flight;
		obs.busy = agent.in_flight != DIR_NONE;
		obs.boot_ms = horizon;
		r = engine_evaluate(g, clock_virtual(now), &obs, inputs, &state, &state, dec);
		if (r < 0) {
			log_warn_errno(r, "simulate: engine failed at step %zu", k);
			goto out;
		}
		st.desired = dec->desired;
		st.hold = dec->hold;
		st.forecast = -1;
		for (size_t s = 0; s < dec->n_signals; s++)
			if (dec->signals[s].forecast && dec->signals[s].forecast_recommendation > st.forecast)
				st.forecast = dec->signals[s].forecast_recommendation;

		/* 4. Act. */
		if (dec->action != DIR_NONE && dec->desired != obs.current) {
			int from = obs.current, to = dec->desired;
			enum scale_direction dir = to > from ? DIR_OUT : DIR_IN;

			if (to > SIM_MAX_INSTANCES)
				to = SIM_MAX_INSTANCES;
			/* Warm members first, then cold launches: a scale-in
			 * removes the newest, so the slowest go first. */
			while ((int)pool.n < to) {
				bool warm = warm_pool_take(&wp, now);

				r = pool_launch(&pool, now, now + (warm ? p->warm.restore_ms : p->boot_ms));
				if (r < 0)
					goto out;
				if (st.scored) {
					if (warm)
						res.warm_taken++;
					else
						res.cold_launches++;
				}
			}
			while ((int)pool.n > to && pool.n > 0)
				pool_remove_newest(&pool, now);
			engine_record_action(&state, now, from, to);
			forecast_boot_action(&boot, now, from, to);
			if (st.scored) {
				if (dir == DIR_OUT)
					res.actions_out++;
				else
					res.actions_in++;
				if (last_dir != DIR_NONE && dir != last_dir && now - last_action_ms < REVERSAL_MS)
					res.reversals++;
			}
			last_dir = dir;
			last_action_ms = now;
			st.action = dir;
		}

		/* 5. Score the coming step: the trace is read up to its end
		 * only now, after the decision. The last step may be cut short
		 * by the trace's end: both the pool and the oracle are billed up
		 * to the end, not to a whole step past it. */
		r = trace_cursor_mean(&cur, now, now + p->step_ms, &st.demand);
		if (r < 0)
			goto out;
		step_end = cur.eof && cur.end_ms < now + p->step_ms ? cur.end_ms : now + p->step_ms;
		end = step_end;
		st.required = required_for(st.demand, p->capacity);
		st.ready = pool_ready(&pool, now);
		st.billed = (int)pool.n;
		prev_ready = st.ready;
		prev_demand = st.demand;
		pr = &g->profiles[schedule_active_profile(g, now)];
		st.min = pr->min;
		st.max = pr->max;
		st.oracle = -1;
		if (st.scored) {
			if (st.ready > res.peak_ready)
				res.peak_ready = st.ready;
			score_step(&sc, &st, p->capacity, (double)(step_end - now));
			warm_pool_account(&wp, now, (double)(step_end - now));
			active_member_ms += (double)st.billed * (double)(step_end - now);
			st.oracle = st.required > pr->min ? st.required : pr->min;
			r = oracle_push(orcl, st.oracle);
			if (r < 0)
				goto out;
			n_scored++;
		} else {
			res.warmup_steps++;
		}
		if (on_step) {
			r = on_step(userdata, &st);
			if (r < 0)
				goto out;
		}
	}
	if (n_scored == 0) {
		log_warnx("simulate: the warm-up covers the whole trace: no step is left to score");
		r = -ENODATA;
		goto out;
	}
	while (pool.n > 0)
		pool_remove_newest(&pool, end);

	r = oracle_finish(orcl, end, &orc);
	if (r < 0)
		goto out;

	res.steps = n_scored;
	res.initial = n0;
	res.start_ms = t0;
	res.scored_from_ms = scored_from;
	res.hours = sc.t_known_ms / 3.6e6;
	res.vm_hours = (double)pool.billed_ms / 3.6e6;
	res.oracle_vm_hours = orc.vm_hours;
	res.oracle_warm_taken = orc.warm_launches;
	res.warm_vm_hours = wp.member_ms / 3.6e6;
	res.warm_memory_gib_hours = wp.memory_member_ms / 3.6e6 * p->instance_memory_mib / 1024.0;
	res.memory_gib_hours =
		(active_member_ms + wp.memory_member_ms) / 3.6e6 * p->instance_memory_mib / 1024.0;
	res.cost_ratio = orc.vm_hours > 0 ? res.vm_hours / orc.vm_hours : NAN;
	if (sc.t_known_ms > 0) {
		res.theta_u = 100.0 * sc.under_acc / sc.t_known_ms;
		res.theta_o = 100.0 * sc.over_acc / sc.t_known_ms;
		res.tau_u = 100.0 * sc.under_ms / sc.t_known_ms;
		res.tau_o = 100.0 * sc.over_ms / sc.t_known_ms;
		res.jitter = (double)(sc.supply_changes - sc.demand_changes) / res.hours;
	}
	res.unserved_fraction = sc.demand > 0 ? sc.unserved / sc.demand : 0;
	*m = res;
	r = 0;
out:
	for (size_t s = 0; s < g->n_signals; s++)
		window_destroy(&windows[s]);
	trace_cursor_destroy(&cur);
	free(pool.v);
	free(pool.obs);
	free(wp.avail_ms);
	oracle_free(orcl);
	free(dec);
	free(fc);
	return r;
}

int simulate_peak_demand(struct trace_reader *t, int64_t step_ms, double *ret)
{
	struct trace_cursor cur;
	double peak = NAN;
	int64_t t0;
	int r;

	if (!t || step_ms <= 0 || !ret)
		return -EINVAL;
	trace_cursor_init(&cur, t);
	r = trace_cursor_start(&cur, &t0);
	for (uint64_t k = 0; r >= 0; k++) {
		int64_t now = t0 + (int64_t)k * step_ms;
		double d;

		if (k >= SIM_MAX_STEPS) {
			r = -E2BIG;
			break;
		}
		r = trace_cursor_more(&cur, now);
		if (r <= 0)
			break;
		trace_cursor_drop(&cur, now);
		r = trace_cursor_mean(&cur, now, now + step_ms, &d);
		if (r == 0 && !isnan(d) && !(d <= peak))
			peak = d;
	}
	trace_cursor_destroy(&cur);
	if (r < 0)
		return r;
	*ret = peak;
	return 0;
}
