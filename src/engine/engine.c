/* The decision engine: DESIGN.md section 3, steps 1 to 10, in that order.
 *
 * engine_evaluate() reads like the algorithm: each step is one static
 * function taking the count the previous step produced. Nothing here reads a
 * clock, does I/O or keeps a global; the daemon, `explain` and `simulate`
 * all get the same answer for the same inputs.
 *
 * The state is plain data. The stabilization windows keep two monotonic
 * deques of (time, recommendation): up_recs, a min-deque, for the scale-out
 * window (its front is the smallest recommendation in the window, the floor
 * the count is raised to) and down_recs, a max-deque, for the scale-in
 * window (its front is the largest, the ceiling the count is lowered to).
 * A recommendation that can never again be the extreme of its window (an
 * older one that is not beyond a newer one) is dropped, which is also how
 * equal consecutive values coalesce into the later one. When a deque is
 * still full, two neighbours merge into the more conservative of them kept
 * until the later time, so a merge can only delay a change, never make one
 * happen earlier.
 *
 * Where DESIGN.md is silent, the engine decides so:
 * - An instance with an unknown start time (running_since_ms 0) counts as
 *   past its initialization; instances the target size has but the driver
 *   does not list yet count as not ready.
 * - A scale-out rule never proposes fewer instances than the current count
 *   and a scale-in rule never more: each rule pushes only its own way.
 * - A signal without a target (<= 0) feeds threshold rules only; it makes
 *   no recommendation but still blocks scale-in while it is invalid.
 * - on_missing applies when a group has signals or rules and none can be
 *   read; a group with neither simply follows its profile's bounds.
 * - The flapping guard projects utilization signals to value x current / n;
 *   a group total (an average signal) does not change with the count.
 * - A driver reporting the group as not stable without a pending operation
 *   counts as an action in flight in the direction of the last one.
 * - Step 9 holds, in this order: a pause; an action in flight in the same
 *   direction; any action while the actuator has one pending or a driver
 *   call runs; a scale-in on a partial observation; a scale-in in a safe
 *   start. A pin sets the count first (within [min, max] unless forced)
 *   and is held by all of these but the safe start, which guards the
 *   engine's own history, not an operator's count.
 *
 * Time comes in on two clocks (clock.h). Every length of time (signal
 * windows and staleness, stabilization windows, cooldowns, rate-limit
 * periods, the safe start's hold, the instances' initialization period) is
 * measured on the monotonic one, so a wall-clock step neither empties nor
 * stretches it. The wall clock picks the profile, a calendar. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "engine/forecast.h"
#include "engine/schedule.h"

/* Counts are computed in double and rounded once. A ratio that should be
 * whole (4 x 90 / 60) may come out a hair above it in binary floating point;
 * the epsilon keeps that from becoming one instance more. */
#define COUNT_EPSILON 1e-6
#define COUNT_LIMIT 1000000000
/* Relative: how far beyond an edge of the tolerance band a value may lie
 * and still be on the edge (see inside_band). */
#define BAND_EPSILON 1e-9

#define ENGINE_STATE_VERSION 1

struct eval {
	const struct group_conf *g;
	const struct profile_conf *p;
	int64_t wall;  /* calendar time: the profile */
	int64_t mono;  /* everything that measures a length of time */
	const struct observation *obs;
	const struct engine_signal_input *in;
	struct engine_state *st;
	struct decision *d;
	int current;
	int ready;   /* running, ready and past initialization */
	int unready; /* provisioning, not ready or still initializing */
};

static int clamp_int(int v, int lo, int hi)
{
	if (v < lo)
		return lo;
	if (v > hi)
		return hi;
	return v;
}

static int count_from_double(double x, bool round_up)
{
	double r;

	if (!(x > 0))
		return 0;
	if (x >= COUNT_LIMIT)
		return COUNT_LIMIT;
	r = round_up ? ceil(x - COUNT_EPSILON) : floor(x + COUNT_EPSILON);
	return r > 0 ? (int)r : 0;
}

static int ceil_count(double x)
{
	return count_from_double(x, true);
}

static int floor_count(double x)
{
	return count_from_double(x, false);
}

static enum scale_direction direction_of(int from, int to)
{
	return to > from ? DIR_OUT : to < from ? DIR_IN : DIR_NONE;
}

/* Counting from readiness would add the boot time to the period: a VM that
 * takes two minutes to boot would be left out of the mean for seven minutes
 * of a five-minute period. */
bool engine_instance_initialized(const struct instance_obs *o, int64_t mono_ms, int64_t init_ms)
{
	if (o->created_ms > 0 && o->created_mono_ms != 0)
		return mono_ms - o->created_mono_ms >= init_ms;
	return o->running_since_ms == 0 || mono_ms - o->running_since_mono_ms >= init_ms;
}

/* Instances that count as ready for utilization: running, ready by the
 * driver's check and past the initialization period. An unknown start time
 * counts as past it. Instances the target size has but the driver does not
 * list yet count as not ready. Stopping instances do not count at all. */
static void count_instances(struct eval *e)
{
	const struct observation *obs = e->obs;
	int64_t init_ms = e->g->behavior.initialization_ms;
	int ready = 0, unready = 0;
	size_t i;

	if (!obs->instances) {
		e->ready = obs->current;
		e->unready = 0;
		return;
	}
	for (i = 0; i < obs->n_instances; i++) {
		const struct instance_obs *o = &obs->instances[i];

		if (o->state == INSTANCE_STOPPING)
			continue;
		if (o->state == INSTANCE_RUNNING && o->ready && engine_instance_initialized(o, e->mono, init_ms))
			ready++;
		else
			unready++;
	}
	if (ready + unready < obs->current)
		unready += obs->current - ready - unready;
	e->ready = ready;
	e->unready = unready;
}

/* Step 1. */
static int step_profile(struct eval *e)
{
	int i = schedule_active_profile(e->g, e->wall);

	if (i < 0)
		return -EINVAL;
	e->p = &e->g->profiles[i];
	e->d->profile = e->p->name;
	e->d->profile_index = i;
	e->d->min = e->p->min;
	e->d->max = e->p->max;
	e->d->def = e->p->def;
	return 0;
}

/* The target of signal S in profile P: its override there, or its own. */
static double profile_target(const struct group_conf *g, const struct profile_conf *p, size_t s)
{
	size_t i;

	for (i = 0; i < p->n_targets; i++)
		if (p->targets[i].signal_index == (int)s)
			return p->targets[i].target;
	return g->signals[s].target;
}

static double signal_target(const struct eval *e, size_t s)
{
	return profile_target(e->g, e->p, s);
}

/* The target of signal S at WALL_MS. The calendar is read only when a
 * profile overrides it: finding the active profile costs about as much as
 * the rest of a forecaster's step. */
static double target_at(const struct group_conf *g, size_t s, int64_t wall_ms)
{
	for (size_t i = 0; i < g->n_profiles; i++)
		for (size_t k = 0; k < g->profiles[i].n_targets; k++)
			if (g->profiles[i].targets[k].signal_index == (int)s)
				return profile_target(g, &g->profiles[schedule_active_profile(g, wall_ms)], s);
	return g->signals[s].target;
}

bool engine_sample_over_target(const struct group_conf *g, size_t s, int64_t wall_ms, double v, int ready,
			       double *excess)
{
	double target = target_at(g, s, wall_ms);
	int n = ready > 0 ? ready : 0;

	*excess = 0;
	if (!(target > 0))
		return false;
	/* At the target counts: a saturated CPU reads 100 % and never more,
	 * so a target of 100 % would otherwise never see the group short. */
	if (g->signals[s].type == SIGNAL_UTILIZATION) {
		*excess = (v - target) * n;
		return v >= target;
	}
	*excess = v - target * n;
	return v >= target * n && v > 0;
}

void engine_forecast_service(const struct group_conf *g, size_t s, struct forecast *f, int64_t wall_ms, double v,
			     int ready)
{
	double excess;
	bool over;

	if (signal_forecast(&g->signals[s])->mode != FORECAST_ON || !(f->service_level > 0))
		return;
	over = engine_sample_over_target(g, s, wall_ms, v, ready, &excess);
	forecast_service(f, over, excess);
}

/* Whether `value` is inside the tolerance band around `target`, both edges
 * included (DESIGN.md section 3 step 2). The band is compared in the
 * value's own units: the ratio value / target - 1 is not exact in binary
 * floating point (66 / 60 - 1 is 0.10000000000000009, 54 / 60 - 1 is
 * -0.09999999999999998), which put one edge outside and the other inside.
 * Each edge is widened by a relative epsilon far below any difference a
 * signal can mean, so both decimal edges land inside. */
static bool inside_band(double value, double target, double tolerance)
{
	double eps = fabs(target) * BAND_EPSILON;

	return value <= target * (1.0 + tolerance) + eps && value >= target * (1.0 - tolerance) - eps;
}

/* Kubernetes HPA's replica calculation. `value` is the mean over the ready
 * instances that reported; the ones that did not count as the target when
 * the raw result scales in and as 0 when it scales out, and instances not
 * ready yet count as 0 on scale-out. If those substitutions flip the
 * direction or land inside the tolerance, the count stays. */
static void recommend_utilization(struct eval *e, size_t s, struct signal_decision *sd, int n_sampled)
{
	double tol = e->g->signals[s].tolerance, target = sd->target;
	int sampled = n_sampled < 0 || n_sampled > e->ready ? e->ready : n_sampled;
	int missing = e->ready - sampled, n;
	double ratio, new_ratio, sum;

	if (sampled == 0) {
		sd->valid = false;
		sd->reason = "no ready instance reported";
		return;
	}
	/* The load the window measured, over the instances that count now:
	 * samples read with fewer or more ready say so by their count. */
	if (e->in[s].window_over > 0 && e->in[s].window_over != sampled)
		sd->value = sd->value * e->in[s].window_over / sampled;
	ratio = sd->value / target;
	if (missing == 0 && (e->unready == 0 || ratio <= 1.0)) {
		if (inside_band(sd->value, target, tol)) {
			sd->recommendation = e->current;
			sd->tolerance_hold = true;
		} else {
			sd->recommendation = ceil_count((double)sampled * sd->value / target);
		}
		return;
	}
	sum = sd->value * sampled;
	n = sampled + missing;
	if (ratio < 1.0) {
		sum += target * missing;
		sd->counted_at_target = missing;
	}
	if (ratio > 1.0) {
		n += e->unready;
		sd->counted_as_zero = e->unready;
	}
	new_ratio = sum / ((double)n * target);
	if (inside_band(sum, (double)n * target, tol) || (ratio < 1.0 && new_ratio > 1.0) ||
	    (ratio > 1.0 && new_ratio < 1.0)) {
		sd->recommendation = e->current;
		sd->tolerance_hold = true;
		return;
	}
	sd->recommendation = ceil_count(new_ratio * n);
	if ((new_ratio < 1.0 && sd->recommendation > e->current) ||
	    (new_ratio > 1.0 && sd->recommendation < e->current))
		sd->recommendation = e->current;
}

/* A group total spread over instances: as many instances as the total
 * needs at `target` each. */
static void recommend_average(struct eval *e, size_t s, struct signal_decision *sd)
{
	double tol = e->g->signals[s].tolerance;

	if (e->current > 0 && inside_band(sd->value, sd->target * e->current, tol)) {
		sd->recommendation = e->current;
		sd->tolerance_hold = true;
		return;
	}
	sd->recommendation = ceil_count(sd->value / sd->target);
}

/* Step 2, forecasting (issue: boot-aware and lazy): the instances the
 * forecast group total needs at the target. In mode on it raises the
 * signal's recommendation, never lowers it, so a scale-in still needs the
 * reactive value to agree; with a lazy scale-in it also keeps the instances
 * the forecast needs again before a relaunch would pay off. In mode observe
 * it is only recorded. */
static void apply_forecast(struct eval *e, size_t s, struct signal_decision *sd)
{
	const struct engine_signal_input *in = &e->in[s];
	int keep;

	sd->forecast = true;
	sd->forecast_value = in->forecast_total;
	sd->forecast_recommendation = ceil_count(in->forecast_total / sd->target);
	sd->keep_recommendation = ceil_count(in->forecast_keep_total / sd->target);
	sd->forecast_offset = in->forecast_offset;
	sd->forecast_short = in->forecast_short;
	if (signal_forecast(&e->g->signals[s])->mode != FORECAST_ON)
		return;
	if (sd->forecast_recommendation > sd->recommendation) {
		sd->recommendation = sd->forecast_recommendation;
		sd->forecast_raised = true;
		sd->tolerance_hold = false;
	}
	if (e->g->behavior.lazy_scale_in && sd->recommendation < e->current) {
		keep = sd->keep_recommendation < e->current ? sd->keep_recommendation : e->current;
		if (keep > sd->recommendation) {
			sd->recommendation = keep;
			sd->forecast_raised = true;
		}
	}
}

/* Step 2. */
static void step_signals(struct eval *e)
{
	size_t s;

	e->d->n_signals = e->g->n_signals;
	for (s = 0; s < e->g->n_signals; s++) {
		const struct signal_conf *sc = &e->g->signals[s];
		const struct engine_signal_input *in = &e->in[s];
		struct signal_decision *sd = &e->d->signals[s];
		const char *why = "no samples";

		sd->target = signal_target(e, s);
		if (!in->window || window_aggregate(in->window, e->mono, sc->window_ms, sc->aggregation,
						    sc->staleness_ms, &sd->value, &why) < 0) {
			sd->valid = false;
			sd->reason = in->error ? in->error : why;
			continue;
		}
		sd->valid = true;
		/* A signal without a target only feeds threshold rules. */
		if (!(sd->target > 0)) {
			sd->rules_only = true;
			continue;
		}
		if (sc->type == SIGNAL_UTILIZATION)
			recommend_utilization(e, s, sd, in->n_sampled);
		else
			recommend_average(e, s, sd);
		if (signal_forecast(sc)->mode != FORECAST_OFF && in->forecast_valid)
			apply_forecast(e, s, sd);
	}
}

static bool compare(enum rule_operator op, double v, double threshold)
{
	switch (op) {
	case OP_GT:
		return v > threshold;
	case OP_GE:
		return v >= threshold;
	case OP_LT:
		return v < threshold;
	case OP_LE:
		return v <= threshold;
	case OP_EQ:
		return v == threshold;
	case OP_NE:
		return v != threshold;
	}
	return false;
}

/* What a firing rule asks for. A scale-out rule never proposes fewer than
 * the current count and a scale-in rule never more: a rule only pushes in
 * its own direction. */
static int rule_proposal(const struct rule_conf *r, int current)
{
	int n;

	if (r->change == CHANGE_EXACT)
		n = (int)lround(r->value);
	else if (r->direction == DIR_OUT)
		n = r->change == CHANGE_COUNT ? current + (int)lround(r->value)
					      : ceil_count(current * (1.0 + r->value / 100.0));
	else
		n = r->change == CHANGE_COUNT ? current - (int)lround(r->value)
					      : floor_count(current * (1.0 - r->value / 100.0));
	if (n < 0)
		n = 0;
	if (r->direction == DIR_OUT && n < current)
		n = current;
	if (r->direction == DIR_IN && n > current)
		n = current;
	return n;
}

static bool rule_in_cooldown(const struct eval *e, const struct rule_conf *r)
{
	return e->st->last_action_dir != DIR_NONE && e->mono - e->st->last_action_ms < r->cooldown_ms;
}

/* Rules usually come in pairs over the same statistic of the same window
 * (scale out above 70 %, in below 40 %): an earlier rule's aggregate is
 * reused rather than computed again. */
static bool same_aggregate(const struct rule_conf *a, const struct rule_conf *b)
{
	return a->signal_index == b->signal_index && a->window_ms == b->window_ms && a->statistic == b->statistic;
}

/* Step 3: Azure-style threshold rules over their own windows. A cooldown
 * counts from the last action in either direction, as in Azure. */
static void step_rules(struct eval *e)
{
	size_t i, k;

	e->d->n_rules = e->p->n_rules;
	for (i = 0; i < e->p->n_rules; i++) {
		const struct rule_conf *r = &e->p->rules[i];
		struct rule_decision *rd = &e->d->rules[i];
		const struct engine_signal_input *in;

		if (r->signal_index < 0 || (size_t)r->signal_index >= e->g->n_signals)
			continue;
		in = &e->in[r->signal_index];
		rd->in_cooldown = rule_in_cooldown(e, r);
		for (k = 0; k < i && !same_aggregate(&e->p->rules[k], r); k++)
			;
		if (k < i) {
			rd->evaluated = e->d->rules[k].evaluated;
			rd->value = e->d->rules[k].value;
		} else {
			rd->evaluated = in->window &&
					window_aggregate(in->window, e->mono, r->window_ms, r->statistic,
							 e->g->signals[r->signal_index].staleness_ms, &rd->value,
							 NULL) == 0;
		}
		rd->fired = rd->evaluated && !rd->in_cooldown && compare(r->op, rd->value, r->threshold);
		if (rd->fired)
			rd->proposal = rule_proposal(r, e->current);
	}
}

/* Step 4 when nothing can be read: on_missing. */
static int apply_on_missing(struct eval *e)
{
	struct decision *d = e->d;

	d->on_missing_applied = true;
	d->hold = HOLD_ON_MISSING;
	switch (e->g->behavior.on_missing) {
	case ON_MISSING_DEFAULT:
		/* As Azure: the default count only ever raises. */
		return e->current < e->p->def ? e->p->def : e->current;
	case ON_MISSING_MAX:
		return e->p->max;
	case ON_MISSING_HOLD:
		break;
	}
	return e->current;
}

/* Step 4: OR for scale-out, AND for scale-in. */
static int step_combine(struct eval *e)
{
	struct decision *d = e->d;
	int cur = e->current, best = -1;
	bool any_valid = false, any_evaluated = false;
	size_t i;

	for (i = 0; i < d->n_signals; i++) {
		const struct signal_decision *sd = &d->signals[i];

		any_valid |= sd->valid;
		if (sd->valid && !sd->rules_only && sd->recommendation > cur && sd->recommendation > best) {
			best = sd->recommendation;
			d->driver_signal = (int)i;
			d->driver_rule = -1;
		}
	}
	for (i = 0; i < d->n_rules; i++) {
		const struct rule_decision *rd = &d->rules[i];

		any_evaluated |= rd->evaluated;
		if (rd->fired && e->p->rules[i].direction == DIR_OUT && rd->proposal > best) {
			best = rd->proposal;
			d->driver_signal = -1;
			d->driver_rule = (int)i;
		}
	}
	if (best >= 0) {
		if (best == cur)
			d->hold = HOLD_SIGNALS_SAY_HOLD;
		return best;
	}

	if ((d->n_signals > 0 || d->n_rules > 0) && !any_valid && !any_evaluated)
		return apply_on_missing(e);

	/* Scale in only when every signal and every scale-in rule agrees; then
	 * by the largest proposal, so as few instances as possible go. */
	for (i = 0; i < d->n_signals; i++) {
		if (d->signals[i].valid && !d->signals[i].rules_only && d->signals[i].recommendation >= cur) {
			d->hold = HOLD_SIGNALS_SAY_HOLD;
			return cur;
		}
	}
	for (i = 0; i < d->n_signals; i++) {
		if (!d->signals[i].valid) {
			d->hold = HOLD_INVALID_SIGNAL;
			return cur;
		}
		if (!d->signals[i].rules_only && d->signals[i].recommendation > best) {
			best = d->signals[i].recommendation;
			d->driver_signal = (int)i;
			d->driver_rule = -1;
		}
	}
	for (i = 0; i < d->n_rules; i++) {
		if (e->p->rules[i].direction != DIR_IN)
			continue;
		if (!d->rules[i].fired) {
			d->hold = HOLD_RULE_NOT_FIRED;
			d->driver_signal = -1;
			d->driver_rule = (int)i;
			return cur;
		}
		if (d->rules[i].proposal > best) {
			best = d->rules[i].proposal;
			d->driver_signal = -1;
			d->driver_rule = (int)i;
		}
	}
	if (best < 0 || best >= cur) {
		d->hold = HOLD_SIGNALS_SAY_HOLD;
		return cur;
	}
	return best;
}

/* Step 5. */
static int step_bounds(struct eval *e, int n)
{
	return clamp_int(n, e->p->min, e->p->max);
}

/* Pushes (now, v) on a monotonic deque: sign +1 keeps a max-deque (values
 * strictly falling from front to back), -1 a min-deque. */
static void deque_push(struct engine_rec *q, size_t *n, int64_t now, int v, int sign)
{
	size_t i, best = 0;
	long gap, best_gap = LONG_MAX;

	while (*n > 0 && (long)sign * q[*n - 1].count <= (long)sign * v)
		(*n)--;
	if (*n == ENGINE_MAX_HISTORY) {
		/* Merge the closest neighbours: the older, more conservative
		 * value is kept until the newer one's time. */
		for (i = 0; i + 1 < *n; i++) {
			gap = (long)sign * (q[i].count - q[i + 1].count);
			if (gap < best_gap) {
				best_gap = gap;
				best = i;
			}
		}
		q[best + 1].count = q[best].count;
		memmove(&q[best], &q[best + 1], (*n - best - 1) * sizeof(*q));
		(*n)--;
	}
	q[(*n)++] = (struct engine_rec){ .t_ms = now, .count = v };
}

/* Drops what left the window (now - window_ms, now]; the newest entry, this
 * evaluation's own, always stays. */
static void deque_expire(struct engine_rec *q, size_t *n, int64_t now, int64_t window_ms)
{
	size_t k = 0;

	while (k + 1 < *n && q[k].t_ms <= now - window_ms)
		k++;
	if (k > 0) {
		memmove(q, q + k, (*n - k) * sizeof(*q));
		*n -= k;
	}
}

/* Step 6: HPA's stabilization. The count is raised to the smallest
 * recommendation of the scale-out window or lowered to the largest of the
 * scale-in window. */
static int step_stabilize(struct eval *e, int rec)
{
	struct engine_state *st = e->st;
	int up, down, n = e->current;

	deque_push(st->up_recs, &st->n_up_recs, e->mono, rec, -1);
	deque_expire(st->up_recs, &st->n_up_recs, e->mono, e->g->behavior.scale_out.stabilization_ms);
	deque_push(st->down_recs, &st->n_down_recs, e->mono, rec, +1);
	/* A lazy scale-in keeps the highest recommendation for as long as an
	 * idle instance is worth keeping instead of a fixed window. */
	deque_expire(st->down_recs, &st->n_down_recs, e->mono,
		     e->d->keep_ms > 0 ? e->d->keep_ms : e->g->behavior.scale_in.stabilization_ms);
	up = st->up_recs[0].count;
	down = st->down_recs[0].count;
	if (n < up)
		n = up;
	if (n > down)
		n = down;
	return n;
}

/* The instances added and removed within (now - period, now]. */
static void changes_in_period(const struct engine_state *st, int64_t now, int64_t period_ms, int *added,
			      int *removed)
{
	size_t i;

	*added = *removed = 0;
	for (i = st->n_events; i-- > 0;) {
		if (st->events[i].t_ms <= now - period_ms)
			break;
		if (st->events[i].delta > 0)
			*added += st->events[i].delta;
		else
			*removed -= st->events[i].delta;
	}
}

/* HPA's limit for one direction: each policy allows a count measured from
 * the count at the start of its period; select picks the most permissive
 * (max), the least (min) or none (disabled). */
static int rate_limit(const struct eval *e, const struct direction_behavior *b, enum scale_direction dir)
{
	int cur = e->current, limit, added, removed, start, allowed;
	size_t i;

	if (b->select == SELECT_DISABLED)
		return cur;
	if (b->n_policies == 0)
		return dir == DIR_OUT ? INT_MAX : 0;
	limit = (dir == DIR_OUT) == (b->select == SELECT_MAX) ? INT_MIN : INT_MAX;
	for (i = 0; i < b->n_policies; i++) {
		const struct rate_policy *pol = &b->policies[i];

		changes_in_period(e->st, e->mono, pol->period_ms, &added, &removed);
		start = cur - added + removed;
		if (dir == DIR_OUT)
			allowed = pol->type == POLICY_INSTANCES ? start + (int)lround(pol->value)
								: ceil_count(start * (1.0 + pol->value / 100.0));
		else
			allowed = pol->type == POLICY_INSTANCES
					  ? start - (int)lround(pol->value)
					  : (int)trunc(start * (1.0 - pol->value / 100.0) + COUNT_EPSILON);
		if ((dir == DIR_OUT) == (b->select == SELECT_MAX))
			limit = allowed > limit ? allowed : limit;
		else
			limit = allowed < limit ? allowed : limit;
	}
	return limit;
}

/* Step 7. */
static int step_rate_limit(struct eval *e, int n)
{
	int cur = e->current, limit;

	if (n > cur) {
		limit = rate_limit(e, &e->g->behavior.scale_out, DIR_OUT);
		if (limit < cur)
			limit = cur;
		return n > limit ? limit : n;
	}
	if (n < cur) {
		limit = rate_limit(e, &e->g->behavior.scale_in, DIR_IN);
		if (limit > cur)
			limit = cur;
		return n < limit ? limit : n;
	}
	return n;
}

/* Whether some scale-out rule would fire at `n` instances. A utilization is
 * a per-instance mean, so it is projected to value x current / n; a group
 * total does not change with the count. */
static bool scale_out_rule_fires_at(const struct eval *e, int n)
{
	size_t i;

	for (i = 0; i < e->p->n_rules; i++) {
		const struct rule_conf *r = &e->p->rules[i];
		const struct rule_decision *rd = &e->d->rules[i];
		double v = rd->value;

		if (r->direction != DIR_OUT || !rd->evaluated)
			continue;
		if (e->g->signals[r->signal_index].type == SIGNAL_UTILIZATION && v != 0)
			v = n > 0 ? v * e->current / n : copysign(INFINITY, v);
		if (compare(r->op, v, r->threshold))
			return true;
	}
	return false;
}

/* Step 8: Azure's flapping guard. Scale in to the smallest count at which
 * no scale-out rule would fire; hold when there is none. */
static int step_flapping(struct eval *e, int n)
{
	for (; n < e->current; n++)
		if (!scale_out_rule_fires_at(e, n))
			return n;
	return e->current;
}

/* Step 9, first: an operator's word. A pause holds the count; a pin sets
 * it, within the profile's bounds unless forced. */
static int step_operator(struct eval *e, int n)
{
	const struct observation *obs = e->obs;
	struct decision *d = e->d;

	d->pinned = obs->pinned;
	d->pin_count = obs->pinned ? obs->pin_count : 0;
	d->pin_forced = obs->pinned && obs->pin_forced;
	/* Before an operator's word: on an agent that does not own the group
	 * nothing this agent's operator says can act. */
	if (obs->not_owner) {
		d->hold = HOLD_NOT_OWNER;
		return e->current;
	}
	if (obs->paused) {
		d->override = "paused";
		d->hold = HOLD_PAUSED;
		return e->current;
	}
	if (obs->pinned) {
		d->override = "pinned";
		d->hold = HOLD_PINNED;
		return obs->pin_forced ? obs->pin_count : clamp_int(obs->pin_count, e->p->min, e->p->max);
	}
	return n;
}

/* Step 9, then: what the agent knows about itself. No second action in
 * the direction of one still in flight; no action at all while the driver
 * carries out another operation; no scale-in on an observation that missed
 * members, nor while the state is being rebuilt after a loss (an
 * operator's pin is not held by that). A driver that reports the group as
 * not stable without naming an operation counts as an action in flight in
 * the direction of the last one. Sets *final when the hold is the answer,
 * which the final clamp does not move: acting there would be the second
 * action this step exists to prevent. */
static int step_in_flight(struct eval *e, int n, bool *final)
{
	const struct observation *obs = e->obs;
	enum scale_direction dir = direction_of(e->current, n), pending = obs->in_flight;

	if (pending == DIR_NONE && !obs->stable)
		pending = e->st->last_action_dir;
	*final = obs->not_owner || obs->paused || (obs->pinned && obs->pin_forced);
	if (dir == DIR_NONE)
		return n;
	*final = true;
	if (dir == pending) {
		e->d->hold = HOLD_IN_FLIGHT;
		return e->current;
	}
	if (obs->busy) {
		e->d->hold = HOLD_DRIVER_BUSY;
		return e->current;
	}
	if (dir == DIR_IN && obs->partial) {
		e->d->hold = HOLD_PARTIAL;
		return e->current;
	}
	*final = obs->pinned && obs->pin_forced;
	if (dir == DIR_IN && !obs->pinned && e->mono < e->st->no_scale_in_before_ms) {
		e->d->hold = HOLD_SAFE_START;
		return e->current;
	}
	return n;
}

static void hold_if_changed(struct decision *d, int before, int after, enum hold_reason why)
{
	if (before != after)
		d->hold = why;
}

static void prune_events(struct engine_state *st, const struct group_conf *g, int64_t now)
{
	int64_t longest = 0;
	size_t i, k = 0;

	for (i = 0; i < g->behavior.scale_out.n_policies; i++)
		if (g->behavior.scale_out.policies[i].period_ms > longest)
			longest = g->behavior.scale_out.policies[i].period_ms;
	for (i = 0; i < g->behavior.scale_in.n_policies; i++)
		if (g->behavior.scale_in.policies[i].period_ms > longest)
			longest = g->behavior.scale_in.policies[i].period_ms;
	while (k < st->n_events && st->events[k].t_ms <= now - longest)
		k++;
	if (k > 0) {
		memmove(st->events, st->events + k, (st->n_events - k) * sizeof(st->events[0]));
		st->n_events -= k;
	}
}

void engine_state_init(struct engine_state *s)
{
	memset(s, 0, sizeof(*s));
	s->version = ENGINE_STATE_VERSION;
	s->last_action_dir = DIR_NONE;
}

int engine_evaluate(const struct group_conf *g, struct clock_now now, const struct observation *obs,
		    const struct engine_signal_input *signals, const struct engine_state *prior,
		    struct engine_state *next, struct decision *out)
{
	struct eval e = { .g = g, .wall = now.wall_ms, .mono = now.mono_ms, .obs = obs, .in = signals, .st = next,
			  .d = out };
	struct decision *d = out;
	bool final;
	int n;

	if (!g || !obs || !prior || !next || !out || (g->n_signals > 0 && !signals) || obs->current < 0 ||
	    g->n_signals > CONFIG_MAX_SIGNALS || g->n_profiles == 0)
		return -EINVAL;
	memset(d, 0, sizeof(*d));
	d->time_ms = now.wall_ms;
	d->group = g->name;
	d->current = e.current = obs->current;
	d->driver_signal = d->driver_rule = -1;
	d->stable = obs->stable;
	d->busy = obs->busy;
	d->partial = obs->partial;
	d->in_flight = obs->in_flight;
	d->host_bounded = obs->host_bounded;
	d->host_room = obs->host_bounded ? obs->host_room : 0;

	/* Step 1: the profile sets the bounds, the rules and the targets. */
	if (step_profile(&e) < 0 || e.p->n_rules > CONFIG_MAX_RULES)
		return -EINVAL;
	if (next != prior)
		*next = *prior;
	count_instances(&e);
	d->ready = e.ready;
	d->boot_ms = obs->boot_ms > 0 ? obs->boot_ms : g->behavior.boot_time_ms;
	d->keep_ms = g->behavior.lazy_scale_in ? engine_keep_ms(g, d->boot_ms) : 0;
	prune_events(next, g, now.mono_ms);

	/* Steps 2 to 4: what the signals and the rules ask for, combined. */
	step_signals(&e);
	step_rules(&e);
	d->combined = step_combine(&e);

	/* Step 5: the bounds; a change they force is not a hold. */
	d->clamped = step_bounds(&e, d->combined);
	if (d->clamped != e.current)
		d->hold = HOLD_NONE;

	/* Steps 6 to 8: smoothing, each step saying so when it holds. */
	d->stabilized = step_stabilize(&e, d->clamped);
	hold_if_changed(d, d->clamped, d->stabilized, HOLD_STABILIZATION);
	d->rate_limited = step_rate_limit(&e, d->stabilized);
	hold_if_changed(d, d->stabilized, d->rate_limited, HOLD_RATE_LIMIT);
	d->flap_guarded = d->rate_limited < e.current ? step_flapping(&e, d->rate_limited) : d->rate_limited;
	hold_if_changed(d, d->rate_limited, d->flap_guarded, HOLD_FLAPPING);

	/* Step 9: an operator's pause or pin, then actions in flight, a busy
	 * driver, a partial observation and a safe start. */
	d->operated = step_operator(&e, d->flap_guarded);
	n = step_in_flight(&e, d->operated, &final);

	/* Step 10: the profile's bounds hold whatever the steps above said,
	 * except a hold that keeps a second action from starting, a pause and
	 * a forced pin. */
	d->desired = final ? n : clamp_int(n, e.p->min, e.p->max);
	/* Then the hosts: a scale-out goes as far as they can take, which no
	 * bound, pin or hold moves past (an instance that does not fit cannot
	 * be made, and asking for it only fails in the driver). The cap never
	 * turns a scale-out into a scale-in, and a full host blocks no
	 * scale-in. */
	if (obs->host_bounded && d->desired > e.current && d->desired - e.current > obs->host_room) {
		d->host_capped_from = d->desired;
		d->desired = e.current + (obs->host_room > 0 ? obs->host_room : 0);
		d->hold = HOLD_HOST_CAPACITY;
	}
	d->action = direction_of(e.current, d->desired);
	if (d->action == DIR_IN)
		d->victims = group_notify(g)->pre_scale_in ? VICTIMS_DRAIN : VICTIMS_DRIVER;
	return 0;
}

static int victim_order(const void *a, const void *b)
{
	const struct instance_obs *x = a, *y = b;

	/* Instances being removed go last: they are no victims to pick. */
	if ((x->state == INSTANCE_STOPPING) != (y->state == INSTANCE_STOPPING))
		return x->state == INSTANCE_STOPPING ? 1 : -1;
	/* Instances not yet serving go first, then the newest. */
	if ((x->state == INSTANCE_RUNNING) != (y->state == INSTANCE_RUNNING))
		return x->state == INSTANCE_RUNNING ? 1 : -1;
	if (x->created_ms != y->created_ms)
		return x->created_ms < y->created_ms ? 1 : -1;
	/* The same order on every try, whatever qsort does with ties. */
	return strcmp(y->id, x->id);
}

void engine_order_victims(struct instance_obs *v, size_t n)
{
	if (n > 1)
		qsort(v, n, sizeof(*v), victim_order);
}

int64_t engine_keep_ms(const struct group_conf *g, int64_t boot_ms)
{
	int64_t keep = (boot_ms > 0 ? boot_ms : g->behavior.boot_time_ms) * ENGINE_LAZY_KEEP_BOOTS;

	if (keep < g->behavior.billing_minimum_ms)
		keep = g->behavior.billing_minimum_ms;
	if (keep < g->behavior.billing_granularity_ms)
		keep = g->behavior.billing_granularity_ms;
	return keep;
}

void engine_state_merge_recs(struct engine_state *dst, const struct engine_state *src, int64_t after_ms)
{
	for (size_t i = 0; i < src->n_up_recs; i++)
		if (src->up_recs[i].t_ms > after_ms)
			deque_push(dst->up_recs, &dst->n_up_recs, src->up_recs[i].t_ms, src->up_recs[i].count, -1);
	for (size_t i = 0; i < src->n_down_recs; i++)
		if (src->down_recs[i].t_ms > after_ms)
			deque_push(dst->down_recs, &dst->n_down_recs, src->down_recs[i].t_ms, src->down_recs[i].count, +1);
}

int64_t engine_state_newest_rec(const struct engine_state *s)
{
	int64_t t = 0;

	if (s->n_up_recs > 0)
		t = s->up_recs[s->n_up_recs - 1].t_ms;
	if (s->n_down_recs > 0 && s->down_recs[s->n_down_recs - 1].t_ms > t)
		t = s->down_recs[s->n_down_recs - 1].t_ms;
	return t;
}

/* Adds a scale event, folding two when the history is full. */
static void events_push(struct engine_state *s, int64_t mono_ms, int delta)
{
	size_t i, from = SIZE_MAX, into = SIZE_MAX, prev[2] = {SIZE_MAX, SIZE_MAX};
	int64_t gap, best_gap = INT64_MAX;

	if (s->n_events == ENGINE_MAX_HISTORY) {
		/* Merge the two closest events of one sign (the next of that
		 * sign, with reversals between them or not) into one at the
		 * later time: the change stays counted at least as long, and
		 * the period's sums of additions and of removals, which is
		 * all the rate limits read, lose nothing. Three events always
		 * hold such a pair. */
		for (i = 0; i < s->n_events; i++) {
			int up = s->events[i].delta > 0;

			if (prev[up] != SIZE_MAX) {
				gap = s->events[i].t_ms - s->events[prev[up]].t_ms;
				if (gap < best_gap) {
					best_gap = gap;
					from = prev[up];
					into = i;
				}
			}
			prev[up] = i;
		}
		if (from == SIZE_MAX)
			from = 0; /* fewer than three events: not reached */
		else
			s->events[into].delta += s->events[from].delta;
		memmove(&s->events[from], &s->events[from + 1], (s->n_events - from - 1) * sizeof(s->events[0]));
		s->n_events--;
	}
	s->events[s->n_events++] = (struct engine_event){ .t_ms = mono_ms, .delta = delta };
}

void engine_record_action(struct engine_state *s, int64_t mono_ms, int from, int to)
{
	int delta = to - from;

	if (delta == 0)
		return;
	s->last_action_ms = mono_ms;
	s->last_action_dir = direction_of(from, to);
	events_push(s, mono_ms, delta);
}

void engine_state_restore_rec(struct engine_state *s, bool scale_out, int64_t t_ms, int count)
{
	if (scale_out)
		deque_push(s->up_recs, &s->n_up_recs, t_ms, count, -1);
	else
		deque_push(s->down_recs, &s->n_down_recs, t_ms, count, +1);
}

void engine_state_restore_event(struct engine_state *s, int64_t t_ms, int delta)
{
	events_push(s, t_ms, delta);
}
