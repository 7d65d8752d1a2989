/* The decision engine against DESIGN.md section 3, on a virtual clock. Each
 * test builds a group in C, feeds windows and observations and asserts the
 * counts a user would see. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "engine/engine.h"
#include "engine/forecast.h"

#define S(x) ((int64_t)(x) * MS_PER_SEC)
#define T0 S(1000000)

struct fx {
	struct group_conf g;
	struct signal_conf sig[4];
	struct forecast_conf fc[4]; /* each signal's forecaster settings */
	struct profile_conf prof[4];
	struct rule_conf rules[8];
	size_t n_rules_total;
	struct window win[4];
	struct engine_signal_input in[4];
	struct engine_state st;
	struct decision d;
	/* The rate-limit policies of each direction (the behaviour points
	 * at them). */
	struct rate_policy out_pol[CONFIG_MAX_POLICIES], in_pol[CONFIG_MAX_POLICIES];
	int64_t now;       /* the monotonic clock */
	int64_t wall_step; /* the wall clock reads now + wall_step */
};

static struct fx F;

static void direction_defaults(struct direction_behavior *b, int64_t stab_ms)
{
	memset(b, 0, sizeof(*b));
	b->stabilization_ms = stab_ms;
	b->select = SELECT_MAX;
}

/* A group "web" with one default profile and the documented defaults:
 * scale-out max(4 instances, 100 %) per 15 s, no window; scale-in 100 %
 * per 15 s, 300 s window; initialization 60 s; on_missing hold. */
static void fx_init(int min, int max, int def)
{
	struct behavior_conf *b = &F.g.behavior;
	size_t i;

	for (i = 0; i < F.g.n_signals; i++)
		window_destroy(&F.win[i]);
	memset(&F, 0, sizeof(F));
	F.g.name = "web";
	F.g.signals = F.sig;
	F.g.profiles = F.prof;
	F.g.n_profiles = 1;
	F.prof[0] = (struct profile_conf){ .name = "default", .kind = PROFILE_DEFAULT, .min = min, .max = max,
					   .def = def };
	direction_defaults(&b->scale_out, 0);
	b->scale_out.policies = F.out_pol;
	F.out_pol[0] = (struct rate_policy){ POLICY_INSTANCES, 4, S(15) };
	F.out_pol[1] = (struct rate_policy){ POLICY_PERCENT, 100, S(15) };
	b->scale_out.n_policies = 2;
	direction_defaults(&b->scale_in, S(300));
	b->scale_in.policies = F.in_pol;
	F.in_pol[0] = (struct rate_policy){ POLICY_PERCENT, 100, S(15) };
	b->scale_in.n_policies = 1;
	b->initialization_ms = S(60);
	b->on_missing = ON_MISSING_HOLD;
	engine_state_init(&F.st);
	F.now = T0;
}

static int fx_signal(const char *name, enum signal_type type, double target)
{
	int i = (int)F.g.n_signals++;

	F.fc[i] = (struct forecast_conf){ .mode = FORECAST_OFF };
	F.sig[i] = (struct signal_conf){ .name = (char *)name, .type = type, .target = target,
					 .window_ms = S(60), .aggregation = AGG_AVG, .tolerance = 0.1,
					 .staleness_ms = S(45), .forecast = &F.fc[i] };
	assert_int_equal(window_init(&F.win[i], 256), 0);
	F.in[i] = (struct engine_signal_input){ .window = &F.win[i], .n_sampled = -1 };
	return i;
}

static struct rule_conf *fx_rule(int profile, int signal, enum rule_operator op, double threshold,
				 enum scale_direction dir, enum change_type change, double value)
{
	struct profile_conf *p = &F.prof[profile];
	struct rule_conf *r = &F.rules[F.n_rules_total++];

	if (p->n_rules == 0)
		p->rules = r;
	assert_ptr_equal(p->rules + p->n_rules, r);
	p->n_rules++;
	*r = (struct rule_conf){ .signal = F.sig[signal].name, .signal_index = signal, .window_ms = S(300),
				 .statistic = AGG_AVG, .op = op, .threshold = threshold, .direction = dir,
				 .change = change, .value = value, .cooldown_ms = S(300) };
	return r;
}

static void fx_push(int s, double v)
{
	assert_int_equal(window_push(&F.win[s], F.now, v), 0);
}

static struct clock_now fx_clock(void)
{
	return (struct clock_now){ .wall_ms = F.now + F.wall_step, .mono_ms = F.now };
}

static int fx_eval_obs(const struct observation *obs)
{
	assert_int_equal(engine_evaluate(&F.g, fx_clock(), obs, F.in, &F.st, &F.st, &F.d), 0);
	return F.d.desired;
}

/* One evaluation of a group of `current` ready instances, nothing in flight. */
static int fx_eval(int current)
{
	struct observation obs = { .current = current, .stable = true };

	return fx_eval_obs(&obs);
}

/* Evaluates and, as the actuator would, applies the decision at once. */
static int fx_step(int current)
{
	int n = fx_eval(current);

	if (n != current)
		engine_record_action(&F.st, F.now, current, n);
	return n;
}

/* DESIGN.md's worked example: 4 ready, CPU target 60 %, min 2, max 8, no
 * tolerance, no stabilization. */
static void test_five_row_table(void **state)
{
	static const struct {
		double cpu;
		int raw, applied;
	} rows[] = { { 90, 6, 6 }, { 30, 2, 2 }, { 180, 12, 8 }, { 55, 4, 4 }, { 0, 0, 2 } };
	size_t i;
	int cpu;

	(void)state;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		fx_init(2, 8, 2);
		cpu = fx_signal("cpu", SIGNAL_UTILIZATION, 60);
		F.sig[cpu].tolerance = 0;
		F.g.behavior.scale_in.stabilization_ms = 0;
		fx_push(cpu, rows[i].cpu);
		assert_int_equal(fx_eval(4), rows[i].applied);
		assert_int_equal(F.d.signals[cpu].recommendation, rows[i].raw);
		assert_false(F.d.signals[cpu].tolerance_hold);
	}
	/* Row 3 is cut by the bounds, not by a rate limit. */
	fx_init(2, 8, 2);
	cpu = fx_signal("cpu", SIGNAL_UTILIZATION, 60);
	F.sig[cpu].tolerance = 0;
	fx_push(cpu, 180);
	fx_eval(4);
	assert_int_equal(F.d.combined, 12);
	assert_int_equal(F.d.clamped, 8);
	assert_int_equal(F.d.action, DIR_OUT);
}

/* Queue 40 at 5 per instance reaches 8 on the first evaluation; at 0 it
 * holds 8 for exactly the 300 s window, then drops to 1 in one step. */
static void test_queue_series(void **state)
{
	int q, cur = 4;
	int64_t start;

	(void)state;
	fx_init(1, 8, 1);
	q = fx_signal("queue", SIGNAL_AVERAGE, 5);
	/* A queue depth is a level: the newest reading is the one that counts. */
	F.sig[q].aggregation = AGG_LAST;
	fx_push(q, 40);
	cur = fx_step(cur);
	assert_int_equal(cur, 8);
	assert_int_equal(F.d.signals[q].recommendation, 8);
	start = F.now;
	for (F.now = start + S(15); F.now < start + S(300); F.now += S(15)) {
		fx_push(q, 0);
		cur = fx_step(cur);
		assert_int_equal(cur, 8);
		assert_int_equal(F.d.clamped, 1);
		assert_int_equal(F.d.hold, HOLD_STABILIZATION);
	}
	assert_true(F.now == start + S(300));
	fx_push(q, 0);
	cur = fx_step(cur);
	assert_int_equal(cur, 1);
	assert_int_equal(F.d.action, DIR_IN);
}

/* CPU with a 60 s scale-in window: the count follows the largest
 * recommendation of the last 60 s down, one step per evaluation. */
static void test_cpu_series_steps_down(void **state)
{
	/* Demand in instance-percent; at 50 % per instance it needs 8, 6, 4, 2. */
	static const double demand[] = { 400, 300, 200, 100, 100, 100, 100, 100 };
	static const int expect[] = { 8, 8, 8, 8, 6, 4, 2, 2 };
	int cpu, cur = 8;
	size_t i;

	(void)state;
	fx_init(1, 10, 1);
	cpu = fx_signal("cpu", SIGNAL_UTILIZATION, 50);
	F.sig[cpu].window_ms = S(15);
	F.g.behavior.scale_in.stabilization_ms = S(60);
	for (i = 0; i < sizeof(demand) / sizeof(demand[0]); i++, F.now += S(15)) {
		fx_push(cpu, demand[i] / cur);
		cur = fx_step(cur);
		assert_int_equal(cur, expect[i]);
	}
}

static void test_tolerance(void **state)
{
	int cpu, q;

	(void)state;
	fx_init(1, 20, 1);
	cpu = fx_signal("cpu", SIGNAL_UTILIZATION, 60);
	fx_push(cpu, 64); /* ratio 1.067: inside 10 %, 4 stays although ceil(4.27) = 5 */
	assert_int_equal(fx_eval(4), 4);
	assert_true(F.d.signals[cpu].tolerance_hold);
	F.now += S(15);
	F.sig[cpu].window_ms = S(10);
	fx_push(cpu, 67); /* ratio 1.117: outside */
	assert_int_equal(fx_eval(4), 5);

	fx_init(1, 20, 1);
	q = fx_signal("queue", SIGNAL_AVERAGE, 5);
	fx_push(q, 21); /* 21 / (5 x 4) = 1.05 */
	assert_int_equal(fx_eval(4), 4);
	F.sig[q].tolerance = 0.01;
	assert_int_equal(fx_eval(4), 5);
}

/* One evaluation of 10 ready instances with `v` in signal `s`, on fresh
 * windows; no scale-in window, so a scale-in shows at once. */
static int edge_eval(enum signal_type type, double target, double v, bool *hold)
{
	int s;

	fx_init(1, 40, 1);
	s = fx_signal("x", type, target);
	F.g.behavior.scale_in.stabilization_ms = 0;
	fx_push(s, v);
	fx_eval(10);
	*hold = F.d.signals[s].tolerance_hold;
	return F.d.desired;
}

/* Both edges of the tolerance band are inside it (DESIGN.md section 3 step
 * 2): exactly 10 % above the target holds as exactly 10 % below does,
 * whatever value / target - 1 comes to in floating point; a hundredth
 * beyond either edge acts. */
static void test_tolerance_edges(void **state)
{
	bool hold;

	(void)state;
	/* utilization: 60 % +- 10 % is [54, 66]. */
	assert_int_equal(edge_eval(SIGNAL_UTILIZATION, 60, 66, &hold), 10);
	assert_true(hold);
	assert_int_equal(edge_eval(SIGNAL_UTILIZATION, 60, 54, &hold), 10);
	assert_true(hold);
	assert_int_equal(edge_eval(SIGNAL_UTILIZATION, 60, 66.01, &hold), 12); /* ceil(11.0017) */
	assert_false(hold);
	assert_int_equal(edge_eval(SIGNAL_UTILIZATION, 60, 53.99, &hold), 9);  /* ceil(8.998) */
	assert_false(hold);
	/* average: 5 per instance over 10 is 50 +- 10 %, [45, 55]. */
	assert_int_equal(edge_eval(SIGNAL_AVERAGE, 5, 55, &hold), 10);
	assert_true(hold);
	assert_int_equal(edge_eval(SIGNAL_AVERAGE, 5, 45, &hold), 10);
	assert_true(hold);
	assert_int_equal(edge_eval(SIGNAL_AVERAGE, 5, 55.01, &hold), 12);
	assert_false(hold);
	assert_int_equal(edge_eval(SIGNAL_AVERAGE, 5, 44.99, &hold), 9);
	assert_false(hold);

	/* The band after HPA's substitutions: 10 ready at 72.6 % and one
	 * still provisioning counted as 0 is 726 / 11 = 66 on average, the
	 * upper edge again. */
	{
		struct instance_obs inst[11];
		struct observation obs = { .current = 11, .instances = inst, .n_instances = 11, .stable = true };
		int cpu;

		fx_init(1, 40, 1);
		cpu = fx_signal("cpu", SIGNAL_UTILIZATION, 60);
		for (int i = 0; i < 10; i++)
			inst[i] = (struct instance_obs){ .id = "vm", .state = INSTANCE_RUNNING, .ready = true };
		inst[10] = (struct instance_obs){ .id = "new", .state = INSTANCE_PROVISIONING };
		fx_push(cpu, 72.6);
		assert_int_equal(fx_eval_obs(&obs), 11);
		assert_true(F.d.signals[cpu].tolerance_hold);
		assert_int_equal(F.d.signals[cpu].counted_as_zero, 1);
	}
}

static void test_hpa_missing_samples(void **state)
{
	int cpu;

	(void)state;
	/* Scale-in: 2 of 4 ready reported 30 % of a 60 % target. The 2 silent
	 * ones count as 60 %: (2x30 + 2x60) / (4x60) = 0.75 -> 3, not 2. */
	fx_init(1, 20, 1);
	cpu = fx_signal("cpu", SIGNAL_UTILIZATION, 60);
	F.g.behavior.scale_in.stabilization_ms = 0;
	F.in[cpu].n_sampled = 2;
	fx_push(cpu, 30);
	assert_int_equal(fx_eval(4), 3);
	/* Scale-out: 2 reported 150 %, the silent ones count 0: 1.25 -> 5, not 10. */
	F.now += S(61);
	fx_push(cpu, 150);
	assert_int_equal(fx_eval(4), 5);
	/* At 90 % the silent ones turn the ratio below 1: keep 4. */
	F.now += S(61);
	fx_push(cpu, 90);
	assert_int_equal(fx_eval(4), 4);
	assert_true(F.d.signals[cpu].tolerance_hold);
}

static void test_hpa_initializing_instances(void **state)
{
	struct instance_obs inst[5];
	struct observation obs = { .current = 4, .instances = inst, .n_instances = 5, .stable = true };
	int cpu, i;

	(void)state;
	fx_init(1, 20, 1);
	cpu = fx_signal("cpu", SIGNAL_UTILIZATION, 60);
	for (i = 0; i < 4; i++)
		inst[i] = (struct instance_obs){ .id = "vm", .state = INSTANCE_RUNNING, .ready = true,
						 .running_since_ms = F.now - S(600),
						 .running_since_mono_ms = F.now - S(600) };
	/* Two started 30 s ago: still initializing. One is being removed. */
	inst[2].running_since_ms = inst[2].running_since_mono_ms = F.now - S(30);
	inst[3].running_since_ms = inst[3].running_since_mono_ms = F.now - S(30);
	inst[4] = (struct instance_obs){ .id = "old", .state = INSTANCE_STOPPING };
	/* 150 % on the 2 ready ones; the 2 initializing count 0: 1.25 -> 5. */
	fx_push(cpu, 150);
	assert_int_equal(fx_eval_obs(&obs), 5);
	assert_int_equal(F.d.ready, 2);
	/* 90 % would flip below 1 with them counted: keep 4 (without the rule, 3). */
	F.now += S(61);
	inst[2].running_since_ms = inst[2].running_since_mono_ms = F.now - S(30);
	inst[3].running_since_ms = inst[3].running_since_mono_ms = F.now - S(30);
	fx_push(cpu, 90);
	assert_int_equal(fx_eval_obs(&obs), 4);
	/* The record says why a pool at 90 % holds. */
	{
		char buf[512];

		decision_sentence(&F.d, &F.g, buf, sizeof(buf));
		assert_non_null(strstr(buf, "cpu 90% vs target 60% -> 4 (2 not yet ready counted as 0: hold)"));
		assert_int_equal(F.d.signals[cpu].counted_as_zero, 2);
	}
	/* Past the initialization period all 4 count: ceil(4 x 1.5) = 6. */
	F.now += S(61);
	fx_push(cpu, 90);
	assert_int_equal(fx_eval_obs(&obs), 6);
	assert_int_equal(F.d.ready, 4);
}

/* Kubernetes counts the CPU initialization period from the pod's start, not
 * from its readiness: an instance launched 310 s ago that took 210 s to
 * boot is past a 300 s period although it has been ready for only 100 s.
 * One launched 200 s ago is not. Without a launch time the period runs
 * from readiness. */
static void test_initialization_counts_from_start(void **state)
{
	struct instance_obs inst[4];
	struct observation obs = { .current = 4, .instances = inst, .n_instances = 4, .stable = true };
	int cpu, i;

	(void)state;
	fx_init(1, 20, 1);
	F.g.behavior.initialization_ms = S(300);
	cpu = fx_signal("cpu", SIGNAL_UTILIZATION, 60);
	for (i = 0; i < 4; i++)
		inst[i] = (struct instance_obs){ .id = "vm", .state = INSTANCE_RUNNING, .ready = true,
						 .created_ms = F.now - S(310),
						 .created_mono_ms = F.now - S(310),
						 .running_since_ms = F.now - S(100),
						 .running_since_mono_ms = F.now - S(100) };
	/* All four count: ceil(4 x 120 / 60) = 8. */
	fx_push(cpu, 120);
	assert_int_equal(fx_eval_obs(&obs), 8);
	assert_int_equal(F.d.ready, 4);
	/* Two launched 200 s ago still initialize and count as 0: 2 x 120 /
	 * (4 x 60) = 1, inside the tolerance: hold at 4. */
	inst[2].created_ms = inst[3].created_ms = F.now - S(200);
	inst[2].created_mono_ms = inst[3].created_mono_ms = F.now - S(200);
	assert_int_equal(fx_eval_obs(&obs), 4);
	assert_int_equal(F.d.ready, 2);
	/* No launch time: readiness 100 s ago is inside the period. */
	inst[2].created_ms = inst[3].created_ms = 0;
	inst[2].created_mono_ms = inst[3].created_mono_ms = 0;
	assert_int_equal(fx_eval_obs(&obs), 4);
	assert_int_equal(F.d.ready, 2);
}

static void test_several_signals_take_max(void **state)
{
	int cpu, q;

	(void)state;
	fx_init(1, 20, 1);
	cpu = fx_signal("cpu", SIGNAL_UTILIZATION, 60);
	q = fx_signal("queue", SIGNAL_AVERAGE, 5);
	fx_push(cpu, 90);
	fx_push(q, 40);
	assert_int_equal(fx_eval(4), 8);
	assert_int_equal(F.d.driver_signal, q);
	F.now += S(61);
	fx_push(cpu, 150);
	fx_push(q, 40);
	assert_int_equal(fx_eval(4), 8); /* rate limit: max(4 + 4, 2 x 4) */
	assert_int_equal(F.d.combined, 10);
	assert_int_equal(F.d.driver_signal, cpu);
	assert_int_equal(F.d.hold, HOLD_RATE_LIMIT);
}

static void test_invalid_signal_blocks_scale_in_only(void **state)
{
	int cpu, q;

	(void)state;
	fx_init(1, 20, 1);
	cpu = fx_signal("cpu", SIGNAL_UTILIZATION, 60);
	q = fx_signal("queue", SIGNAL_AVERAGE, 5);
	F.g.behavior.scale_in.stabilization_ms = 0;
	F.in[q].error = "connection refused";
	fx_push(cpu, 30);
	assert_int_equal(fx_eval(4), 4);
	assert_int_equal(F.d.hold, HOLD_INVALID_SIGNAL);
	assert_false(F.d.signals[q].valid);
	assert_string_equal(F.d.signals[q].reason, "connection refused");
	F.now += S(61);
	fx_push(cpu, 90);
	assert_int_equal(fx_eval(4), 6);
	/* Once the queue reports again, scale-in goes ahead. */
	F.now += S(61);
	fx_push(cpu, 30);
	fx_push(q, 0);
	assert_int_equal(fx_eval(4), 2);
}

static void test_on_missing(void **state)
{
	static const struct {
		enum on_missing m;
		int current, expect;
	} cases[] = {
		{ ON_MISSING_HOLD, 4, 4 },    { ON_MISSING_DEFAULT, 4, 6 }, { ON_MISSING_DEFAULT, 7, 7 },
		{ ON_MISSING_MAX, 4, 8 },     { ON_MISSING_HOLD, 7, 7 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fx_init(2, 8, 6);
		fx_signal("cpu", SIGNAL_UTILIZATION, 60);
		fx_signal("queue", SIGNAL_AVERAGE, 5);
		F.g.behavior.scale_in.stabilization_ms = 0;
		F.g.behavior.on_missing = cases[i].m;
		assert_int_equal(fx_eval(cases[i].current), cases[i].expect);
		assert_true(F.d.on_missing_applied);
	}
}

/* Azure rules on a signal without a target (rules only). */
static void test_rules_any_out_highest(void **state)
{
	int cpu;

	(void)state;
	fx_init(1, 20, 1);
	cpu = fx_signal("cpu", SIGNAL_UTILIZATION, 0);
	fx_rule(0, cpu, OP_GT, 70, DIR_OUT, CHANGE_COUNT, 1);
	fx_rule(0, cpu, OP_GT, 80, DIR_OUT, CHANGE_PERCENT, 50);
	fx_rule(0, cpu, OP_GT, 95, DIR_OUT, CHANGE_EXACT, 10);
	fx_push(cpu, 85);
	/* +1 -> 5 and +50 % -> ceil(6) = 6 fire; 6 wins. */
	assert_int_equal(fx_eval(4), 6);
	assert_true(F.d.rules[0].fired && F.d.rules[1].fired && !F.d.rules[2].fired);
	assert_int_equal(F.d.driver_rule, 1);
	F.now += S(1);
	fx_push(cpu, 99);
	fx_push(cpu, 99);
	fx_push(cpu, 99); /* average over the rule's 300 s window: (85 + 3 x 99) / 4 = 95.5 */
	assert_int_equal(fx_eval(4), 8); /* exact 10, rate-limited to 8 */
	assert_int_equal(F.d.combined, 10);
	/* +50 % of 3 is 4.5: rounds up to 5. */
	F.prof[0].rules[2].threshold = 100;
	assert_int_equal(fx_eval(3), 5);
}

static void test_rules_all_in_smallest_reduction(void **state)
{
	int cpu, mem;

	(void)state;
	fx_init(1, 20, 1);
	cpu = fx_signal("cpu", SIGNAL_UTILIZATION, 0);
	mem = fx_signal("mem", SIGNAL_UTILIZATION, 0);
	F.g.behavior.scale_in.stabilization_ms = 0;
	fx_rule(0, cpu, OP_LT, 30, DIR_IN, CHANGE_COUNT, 1);
	fx_rule(0, mem, OP_LT, 50, DIR_IN, CHANGE_PERCENT, 50);
	fx_push(cpu, 20);
	fx_push(mem, 60);
	/* Only one of the two scale-in rules fires: hold. */
	assert_int_equal(fx_eval(10), 10);
	assert_int_equal(F.d.hold, HOLD_RULE_NOT_FIRED);
	F.now += S(1);
	fx_push(cpu, 20);
	fx_push(mem, 0); /* mem average 30 */
	/* Both fire: -1 -> 9 and -50 % -> 5; as few as possible go: 9. */
	assert_int_equal(fx_eval(10), 9);
	assert_int_equal(F.d.driver_rule, 0);
	/* floor(7 x 0.5) = 3; -1 -> 6. */
	assert_int_equal(fx_eval(7), 6);
	/* Exact count. */
	F.prof[0].rules[0].change = CHANGE_EXACT;
	F.prof[0].rules[0].value = 2;
	F.prof[0].rules[1].change = CHANGE_EXACT;
	F.prof[0].rules[1].value = 3;
	assert_int_equal(fx_eval(10), 3);
}

static void test_rule_cooldown(void **state)
{
	int cpu, cur = 4;

	(void)state;
	fx_init(1, 20, 1);
	cpu = fx_signal("cpu", SIGNAL_UTILIZATION, 0);
	fx_rule(0, cpu, OP_GT, 70, DIR_OUT, CHANGE_COUNT, 1);
	F.prof[0].rules[0].window_ms = S(30);
	F.prof[0].rules[0].cooldown_ms = S(120);
	fx_push(cpu, 90);
	cur = fx_step(cur);
	assert_int_equal(cur, 5);
	F.now += S(60);
	fx_push(cpu, 90);
	cur = fx_step(cur);
	assert_int_equal(cur, 5);
	assert_true(F.d.rules[0].in_cooldown);
	assert_false(F.d.rules[0].fired);
	F.now += S(60); /* 120 s after the action */
	fx_push(cpu, 90);
	cur = fx_step(cur);
	assert_int_equal(cur, 6);
}

/* CPU > 70 -> +1 and CPU < 40 -> -1: 2 at 38 % would run 1 at 76 % and
 * fire the scale-out rule, so hold; at 34 % 1 runs at 68 %. */
static void test_flapping_guard(void **state)
{
	int cpu;

	(void)state;
	fx_init(1, 10, 1);
	cpu = fx_signal("cpu", SIGNAL_UTILIZATION, 0);
	F.g.behavior.scale_in.stabilization_ms = 0;
	fx_rule(0, cpu, OP_GT, 70, DIR_OUT, CHANGE_COUNT, 1);
	fx_rule(0, cpu, OP_LT, 40, DIR_IN, CHANGE_COUNT, 1);
	fx_push(cpu, 38);
	assert_int_equal(fx_eval(2), 2);
	assert_true(F.d.rules[1].fired);
	assert_int_equal(F.d.rate_limited, 1);
	assert_int_equal(F.d.hold, HOLD_FLAPPING);
	F.now += S(301);
	fx_push(cpu, 34);
	assert_int_equal(fx_eval(2), 1);
	/* From 4 at 20 % by exact 1: 1 would run at 80 %, 2 at 40 %: stop at 2. */
	F.prof[0].rules[1].change = CHANGE_EXACT;
	F.now += S(301);
	fx_push(cpu, 20);
	assert_int_equal(fx_eval(4), 2);
}

/* Scale-out from 10 with two actions already inside the period. */
static void test_rate_limits(void **state)
{
	struct direction_behavior *out;
	int q;

	(void)state;
	fx_init(1, 100, 1);
	q = fx_signal("queue", SIGNAL_AVERAGE, 1);
	F.sig[q].aggregation = AGG_LAST;
	out = &F.g.behavior.scale_out;
	F.out_pol[0] = (struct rate_policy){ POLICY_INSTANCES, 3, S(60) };
	F.out_pol[1] = (struct rate_policy){ POLICY_PERCENT, 50, S(60) };
	engine_record_action(&F.st, F.now - S(70), 8, 10); /* outside the period */
	engine_record_action(&F.st, F.now - S(30), 10, 12);
	engine_record_action(&F.st, F.now - S(20), 12, 11);
	/* Period start: 11 - 2 + 1 = 10; +3 -> 13, +50 % -> 15. */
	fx_push(q, 50);
	out->select = SELECT_MAX;
	assert_int_equal(fx_eval(11), 15);
	assert_int_equal(F.d.hold, HOLD_RATE_LIMIT);
	out->select = SELECT_MIN;
	assert_int_equal(fx_eval(11), 13);
	out->select = SELECT_DISABLED;
	assert_int_equal(fx_eval(11), 11);

	/* Scale-in: period start 10; -3 -> 7; -25 % -> trunc(7.5) = 7 ... -40 % -> 6. */
	{
		struct direction_behavior *in = &F.g.behavior.scale_in;

		in->stabilization_ms = 0;
		F.in_pol[0] = (struct rate_policy){ POLICY_INSTANCES, 3, S(60) };
		F.in_pol[1] = (struct rate_policy){ POLICY_PERCENT, 45, S(60) };
		in->n_policies = 2;
		F.now += S(1);
		fx_push(q, 1);
		in->select = SELECT_MAX;
		assert_int_equal(fx_eval(11), 5); /* trunc(10 x 0.55) = 5 */
		in->select = SELECT_MIN;
		assert_int_equal(fx_eval(11), 7);
		in->select = SELECT_DISABLED;
		assert_int_equal(fx_eval(11), 11);
	}
}

static void test_profile_switch_acts_at_once(void **state)
{
	int cpu;

	(void)state;
	fx_init(2, 8, 2);
	cpu = fx_signal("cpu", SIGNAL_UTILIZATION, 60);
	/* A fixed-date profile from T0 + 1 h: min 6, then one with max 4. */
	F.prof[1] = (struct profile_conf){ .name = "sale", .kind = PROFILE_FIXED, .min = 6, .max = 10,
					   .def = 6, .start_ms = T0 + S(3600), .end_ms = T0 + S(7200) };
	F.prof[2] = (struct profile_conf){ .name = "night", .kind = PROFILE_FIXED, .min = 1, .max = 4,
					   .def = 1, .start_ms = T0 + S(7200), .end_ms = T0 + S(9000) };
	F.g.n_profiles = 3;
	fx_push(cpu, 60);
	assert_int_equal(fx_eval(3), 3);
	assert_string_equal(F.d.profile, "default");
	F.now = T0 + S(3600);
	fx_push(cpu, 60);
	assert_int_equal(fx_eval(3), 6);
	assert_string_equal(F.d.profile, "sale");
	/* Max drops from 10 to 4 while the scale-in window remembers 8. */
	F.now = T0 + S(7200) - S(15);
	fx_push(cpu, 80);
	assert_int_equal(fx_eval(6), 8);
	F.now = T0 + S(7200);
	fx_push(cpu, 80);
	assert_int_equal(fx_eval(8), 4);
	assert_string_equal(F.d.profile, "night");
}

/* A profile may set its own target for a signal. */
static void test_profile_target_override(void **state)
{
	struct target_override night = { .signal = "cpu", .signal_index = 0, .target = 90 };
	int cpu;

	(void)state;
	fx_init(1, 20, 1);
	cpu = fx_signal("cpu", SIGNAL_UTILIZATION, 60);
	F.prof[1] = (struct profile_conf){ .name = "night", .kind = PROFILE_FIXED, .min = 1, .max = 20, .def = 1,
					   .start_ms = T0 + S(3600), .end_ms = T0 + S(7200), .targets = &night,
					   .n_targets = 1 };
	F.g.n_profiles = 2;
	fx_push(cpu, 90);
	assert_int_equal(fx_eval(4), 6);
	assert_true(F.d.signals[cpu].target == 60);
	F.now = T0 + S(3600);
	fx_push(cpu, 90);
	assert_int_equal(fx_eval(4), 4); /* 90 % is on target at night */
	assert_true(F.d.signals[cpu].target == 90);
	/* What a forecast's service level counts: a sample at or above the
	 * target in force when it was taken. */
	{
		double x;

		assert_true(engine_sample_over_target(&F.g, cpu, T0 + F.wall_step, 60, 4, &x));
		assert_true(x == 0);
		assert_false(engine_sample_over_target(&F.g, cpu, T0 + F.wall_step, 59.5, 4, &x));
		assert_true(x == -2);
		assert_false(engine_sample_over_target(&F.g, cpu, T0 + S(3600) + F.wall_step, 80, 4, &x));
		assert_true(engine_sample_over_target(&F.g, cpu, T0 + S(3600) + F.wall_step, 95, 4, &x));
		/* 5 points over on 4 instances: 20 points of group total. */
		assert_true(x == 20);
	}
}

/* An average signal's group total against the ready instances' share:
 * at or above it counts, a total of 0 never does (even with none ready),
 * and a signal without a target never does. */
static void test_sample_over_target(void **state)
{
	double x;
	int q, r;

	(void)state;
	fx_init(1, 20, 1);
	q = fx_signal("queue", SIGNAL_AVERAGE, 5);
	r = fx_signal("rules_only", SIGNAL_AVERAGE, 0);
	assert_true(engine_sample_over_target(&F.g, q, T0, 40, 8, &x));
	assert_true(x == 0);
	assert_false(engine_sample_over_target(&F.g, q, T0, 39.5, 8, &x));
	assert_true(engine_sample_over_target(&F.g, q, T0, 47, 8, &x));
	assert_true(x == 7);
	assert_true(engine_sample_over_target(&F.g, q, T0, 1, 0, &x));
	assert_false(engine_sample_over_target(&F.g, q, T0, 0, 0, &x));
	assert_false(engine_sample_over_target(&F.g, r, T0, 1e9, 1, &x));

	/* The forecaster hears of it in mode on with a service level only. */
	{
		struct forecast *fc = malloc(sizeof(*fc));

		assert_non_null(fc);
		forecast_init(fc, 0.9);
		forecast_set_service(fc, 0.99);
		assert_int_equal(forecast_update(fc, T0, 40, S(60), 0), 0);
		F.fc[q].mode = FORECAST_OBSERVE;
		engine_forecast_service(&F.g, q, fc, T0, 40, 8);
		assert_true(fc->q_adjust == 0 && fc->n_service == 0);
		F.fc[q].mode = FORECAST_ON;
		engine_forecast_service(&F.g, q, fc, T0, 40, 8);
		assert_true(fc->q_adjust > 0 && fc->n_service == 1);
		forecast_set_service(fc, 0);
		engine_forecast_service(&F.g, q, fc, T0, 40, 8);
		assert_int_equal(fc->n_service, 1);
		free(fc);
	}
}

/* A scale-out window holds the smallest recommendation inside it: a
 * one-evaluation spike does not add instances. */
static void test_scale_out_stabilization(void **state)
{
	int q, cur = 4;

	(void)state;
	fx_init(1, 20, 1);
	q = fx_signal("queue", SIGNAL_AVERAGE, 5);
	F.sig[q].aggregation = AGG_LAST;
	F.g.behavior.scale_out.stabilization_ms = S(30);
	fx_push(q, 20);
	cur = fx_step(cur);
	F.now += S(15);
	fx_push(q, 40);
	cur = fx_step(cur);
	assert_int_equal(cur, 4);
	assert_int_equal(F.d.hold, HOLD_STABILIZATION);
	F.now += S(15);
	fx_push(q, 40);
	cur = fx_step(cur);
	assert_int_equal(cur, 8); /* 4 at T0 left the (T0, T0 + 30 s] window */
}

static void test_in_flight(void **state)
{
	struct observation obs = { .current = 4, .stable = true, .in_flight = DIR_OUT };
	int cpu;

	(void)state;
	fx_init(1, 20, 1);
	cpu = fx_signal("cpu", SIGNAL_UTILIZATION, 60);
	F.g.behavior.scale_in.stabilization_ms = 0;
	fx_push(cpu, 90);
	assert_int_equal(fx_eval_obs(&obs), 4);
	assert_int_equal(F.d.hold, HOLD_IN_FLIGHT);
	assert_int_equal(F.d.rate_limited, 6); /* evaluation went on */
	/* A scale-in while a scale-out is in flight is not blocked. */
	F.now += S(61);
	fx_push(cpu, 30);
	assert_int_equal(fx_eval_obs(&obs), 2);
	/* An unstable group counts as in flight in the last action's direction. */
	engine_record_action(&F.st, F.now, 4, 2);
	obs = (struct observation){ .current = 4, .stable = false };
	F.now += S(61);
	fx_push(cpu, 30);
	assert_int_equal(fx_eval_obs(&obs), 4);
	assert_int_equal(F.d.hold, HOLD_IN_FLIGHT);
}

static void test_safe_start(void **state)
{
	int cpu;

	(void)state;
	fx_init(1, 20, 1);
	cpu = fx_signal("cpu", SIGNAL_UTILIZATION, 60);
	F.g.behavior.scale_in.stabilization_ms = 0;
	F.st.no_scale_in_before_ms = F.now + S(300);
	fx_push(cpu, 30);
	assert_int_equal(fx_eval(4), 4);
	assert_int_equal(F.d.hold, HOLD_SAFE_START);
	F.now += S(61);
	fx_push(cpu, 90);
	assert_int_equal(fx_eval(4), 6);
}

/* Renders the decision's sentence for the assertions below. */
static const char *fx_sentence(void)
{
	static char buf[1024];

	decision_sentence(&F.d, &F.g, buf, sizeof(buf));
	return buf;
}

/* A partial observation (a host that could not be listed) hides members:
 * no scale-in on it, with its own reason; a scale-out goes on. */
static void test_partial_observation(void **state)
{
	struct observation obs = { .current = 4, .stable = true, .partial = true };
	int cpu;

	(void)state;
	fx_init(1, 20, 1);
	cpu = fx_signal("cpu", SIGNAL_UTILIZATION, 60);
	F.g.behavior.scale_in.stabilization_ms = 0;
	fx_push(cpu, 30);
	assert_int_equal(fx_eval_obs(&obs), 4);
	assert_int_equal(F.d.action, DIR_NONE);
	assert_int_equal(F.d.hold, HOLD_PARTIAL);
	assert_int_equal(F.d.flap_guarded, 2); /* evaluation went on */
	assert_non_null(strstr(fx_sentence(), "no scale-in on a partial observation: hold 4; no change from 4"));
	assert_string_equal(decision_hold_name(F.d.hold), "partial_observation");
	/* Not even the profile's bounds remove members then. */
	F.prof[0].max = 3;
	assert_int_equal(fx_eval_obs(&obs), 4);
	assert_int_equal(F.d.hold, HOLD_PARTIAL);
	F.prof[0].max = 20;
	F.now += S(61);
	fx_push(cpu, 90);
	assert_int_equal(fx_eval_obs(&obs), 6);
	assert_int_equal(F.d.action, DIR_OUT);
	assert_int_equal(F.d.hold, HOLD_NONE);
	/* A full observation scales in. */
	obs.partial = false;
	F.now += S(61);
	fx_push(cpu, 30);
	assert_int_equal(fx_eval_obs(&obs), 2);
	assert_int_equal(F.d.action, DIR_IN);
}

/* The hosts take only so many more (the libvirt driver's host room): a
 * scale-out goes that far and says why; a min, a forced pin and a hold do
 * not move it past; a full host never causes a scale-in nor blocks one. */
static void test_host_capacity(void **state)
{
	struct observation obs = { .current = 4, .stable = true, .host_bounded = true, .host_room = 2 };
	int cpu;

	(void)state;
	fx_init(1, 20, 1);
	cpu = fx_signal("cpu", SIGNAL_UTILIZATION, 60);
	F.g.behavior.scale_in.stabilization_ms = 0;
	fx_push(cpu, 120);
	assert_int_equal(fx_eval_obs(&obs), 6);
	assert_int_equal(F.d.flap_guarded, 8); /* asked for 8 */
	assert_int_equal(F.d.action, DIR_OUT);
	assert_int_equal(F.d.hold, HOLD_HOST_CAPACITY);
	assert_int_equal(F.d.host_capped_from, 8);
	assert_string_equal(decision_hold_name(F.d.hold), "host_capacity");
	assert_non_null(strstr(fx_sentence(), "capped by hosts, not by max: they can take 2 more of the 4 asked for; "
					      "scale out 4 -> 6"));
	/* Room for what is asked: no cap, no hold. */
	obs.host_room = 4;
	assert_int_equal(fx_eval_obs(&obs), 8);
	assert_int_equal(F.d.hold, HOLD_NONE);
	assert_int_equal(F.d.host_capped_from, 0);
	/* No room: no change, never a scale-in. */
	obs.host_room = 0;
	assert_int_equal(fx_eval_obs(&obs), 4);
	assert_int_equal(F.d.action, DIR_NONE);
	assert_int_equal(F.d.hold, HOLD_HOST_CAPACITY);
	assert_non_null(strstr(fx_sentence(), "they can take 0 more of the 4 asked for; no change from 4"));
	/* Below the profile's min, the hosts still bound the raise. */
	F.prof[0].min = 10;
	obs.host_room = 3;
	F.now += S(61);
	fx_push(cpu, 30);
	assert_int_equal(fx_eval_obs(&obs), 7);
	assert_int_equal(F.d.hold, HOLD_HOST_CAPACITY);
	F.prof[0].min = 1;
	/* A forced pin as well. */
	obs.pinned = obs.pin_forced = true;
	obs.pin_count = 30;
	assert_int_equal(fx_eval_obs(&obs), 7);
	assert_int_equal(F.d.hold, HOLD_HOST_CAPACITY);
	obs.pinned = obs.pin_forced = false;
	/* A full host does not block a scale-in. */
	obs.host_room = 0;
	F.now += S(61);
	fx_push(cpu, 30);
	assert_int_equal(fx_eval_obs(&obs), 2);
	assert_int_equal(F.d.action, DIR_IN);
	assert_int_equal(F.d.hold, HOLD_NONE);
	/* Unbounded hosts (host_bounded false) cap nothing, whatever host_room
	 * holds. */
	obs.host_bounded = false;
	F.now += S(61);
	fx_push(cpu, 120);
	assert_int_equal(fx_eval_obs(&obs), 8);
	assert_int_equal(F.d.hold, HOLD_NONE);
}

/* While the actuator has an operation going (a driver call, a drain, an
 * action restored after a restart), no action in either direction: the
 * other direction holds as driver_busy, the same one as in_flight. */
static void test_driver_busy(void **state)
{
	struct observation obs = { .current = 4, .stable = true, .in_flight = DIR_OUT, .busy = true };
	int cpu;

	(void)state;
	fx_init(1, 20, 1);
	cpu = fx_signal("cpu", SIGNAL_UTILIZATION, 60);
	F.g.behavior.scale_in.stabilization_ms = 0;
	fx_push(cpu, 30);
	assert_int_equal(fx_eval_obs(&obs), 4);
	assert_int_equal(F.d.hold, HOLD_DRIVER_BUSY);
	assert_int_equal(F.d.action, DIR_NONE);
	assert_string_equal(decision_hold_name(F.d.hold), "driver_busy");
	assert_non_null(strstr(fx_sentence(), "no scale-in until it ends: hold 4"));
	F.now += S(61);
	fx_push(cpu, 90);
	assert_int_equal(fx_eval_obs(&obs), 4);
	assert_int_equal(F.d.hold, HOLD_IN_FLIGHT);
	/* An observation or an open running holds too; nothing to do is no
	 * hold of this kind. */
	obs = (struct observation){ .current = 4, .stable = true, .busy = true };
	assert_int_equal(fx_eval_obs(&obs), 4);
	assert_int_equal(F.d.hold, HOLD_DRIVER_BUSY);
	assert_non_null(strstr(fx_sentence(), "no scale-out until it ends"));
	F.now += S(61);
	fx_push(cpu, 60);
	assert_int_equal(fx_eval_obs(&obs), 4);
	assert_int_not_equal(F.d.hold, HOLD_DRIVER_BUSY);
	/* A bounds change does not start a second operation either. */
	F.prof[0].max = 3;
	assert_int_equal(fx_eval_obs(&obs), 4);
	assert_int_equal(F.d.hold, HOLD_DRIVER_BUSY);
}

/* Cluster mode: an agent that does not own the group evaluates (its
 * windows go on filling) and holds, out of bounds and under a pin too. */
static void test_not_owner(void **state)
{
	struct observation obs = { .current = 4, .stable = true, .not_owner = true, .pinned = true, .pin_count = 8 };
	cJSON *j;
	int q;

	(void)state;
	fx_init(1, 20, 1);
	q = fx_signal("queue", SIGNAL_AVERAGE, 10);
	fx_push(q, 60);
	assert_int_equal(fx_eval_obs(&obs), 4);
	assert_int_equal(F.d.action, DIR_NONE);
	assert_int_equal(F.d.hold, HOLD_NOT_OWNER);
	assert_null(F.d.override);
	assert_string_equal(fx_sentence(), "queue 60 vs 10/instance -> 6; max of signals; this agent does not own the "
					   "group in the cluster (another agent does, or its lease is not valid): not "
					   "acting: hold 4; no change from 4");
	j = decision_to_json(&F.d, &F.g);
	assert_non_null(j);
	assert_string_equal(cJSON_GetObjectItem(j, "hold")->valuestring, "not_owner");
	cJSON_Delete(j);
	F.prof[0].min = 5;
	assert_int_equal(fx_eval_obs(&obs), 4);
	assert_int_equal(F.d.action, DIR_NONE);
	/* Once it owns the group it acts on what it learnt meanwhile. */
	obs.not_owner = false;
	obs.pinned = false;
	F.prof[0].min = 1;
	assert_int_equal(fx_eval_obs(&obs), 6);
}

/* A pause: the engine evaluates (the windows go on filling) and holds. */
static void test_paused(void **state)
{
	struct observation obs = { .current = 4, .stable = true, .paused = true };
	cJSON *j;
	int q;

	(void)state;
	fx_init(1, 20, 1);
	q = fx_signal("queue", SIGNAL_AVERAGE, 10);
	fx_push(q, 60);
	assert_int_equal(fx_eval_obs(&obs), 4);
	assert_int_equal(F.d.action, DIR_NONE);
	assert_int_equal(F.d.hold, HOLD_PAUSED);
	assert_int_equal(F.d.flap_guarded, 6);
	assert_string_equal(F.d.override, "paused");
	assert_string_equal(fx_sentence(),
			    "queue 60 vs 10/instance -> 6; max of signals; paused by an operator: not acting; no change from 4");
	j = decision_to_json(&F.d, &F.g);
	assert_non_null(j);
	assert_string_equal(cJSON_GetObjectItem(j, "hold")->valuestring, "paused");
	assert_string_equal(cJSON_GetObjectItem(j, "override")->valuestring, "paused");
	cJSON_Delete(j);
	/* Out of the profile's bounds it still does not act. */
	F.prof[0].min = 5;
	assert_int_equal(fx_eval_obs(&obs), 4);
	assert_int_equal(F.d.action, DIR_NONE);
	/* The scale-out stabilization history went on while paused. */
	obs.paused = false;
	F.prof[0].min = 1;
	assert_int_equal(fx_eval_obs(&obs), 6);
}

/* A pin sets the count, within [min, max] unless forced; the holds that keep
 * a second action from starting still apply, the safe start does not. */
static void test_pinned(void **state)
{
	struct observation obs = { .current = 4, .stable = true, .pinned = true, .pin_count = 12 };
	int cpu;

	(void)state;
	fx_init(2, 8, 2);
	cpu = fx_signal("cpu", SIGNAL_UTILIZATION, 60);
	fx_push(cpu, 60);
	assert_int_equal(fx_eval_obs(&obs), 8);
	assert_int_equal(F.d.action, DIR_OUT);
	assert_int_equal(F.d.hold, HOLD_PINNED);
	assert_string_equal(F.d.override, "pinned");
	assert_string_equal(decision_hold_name(F.d.hold), "pinned");
	assert_non_null(strstr(fx_sentence(), "pinned at 12 by an operator, within [2, 8]: 8; scale out 4 -> 8"));
	obs.pin_forced = true;
	assert_int_equal(fx_eval_obs(&obs), 12);
	assert_non_null(strstr(fx_sentence(), "pinned at 12 by an operator (forced); scale out 4 -> 12"));
	/* A forced pin beyond max is kept, not clamped back. */
	obs.current = 12;
	assert_int_equal(fx_eval_obs(&obs), 12);
	assert_int_equal(F.d.action, DIR_NONE);
	assert_int_equal(F.d.hold, HOLD_PINNED);
	/* A pin below the count scales in, even in a safe start... */
	obs = (struct observation){ .current = 4, .stable = true, .pinned = true, .pin_count = 3 };
	F.st.no_scale_in_before_ms = F.now + S(300);
	assert_int_equal(fx_eval_obs(&obs), 3);
	assert_int_equal(F.d.action, DIR_IN);
	/* ... but not on a partial observation, nor during an action. */
	obs.partial = true;
	assert_int_equal(fx_eval_obs(&obs), 4);
	assert_int_equal(F.d.hold, HOLD_PARTIAL);
	obs.partial = false;
	obs.busy = true;
	obs.in_flight = DIR_IN;
	assert_int_equal(fx_eval_obs(&obs), 4);
	assert_int_equal(F.d.hold, HOLD_IN_FLIGHT);
	assert_string_equal(F.d.override, "pinned");
	/* A pause wins over a pin. */
	obs = (struct observation){ .current = 4, .stable = true, .pinned = true, .pin_count = 3, .paused = true };
	assert_int_equal(fx_eval_obs(&obs), 4);
	assert_int_equal(F.d.hold, HOLD_PAUSED);
}

/* Who removes whom on a scale-in is in the record: the driver by its
 * victim_policy, or with a pre-scale-in hook the agent, in the engine's
 * order (not yet serving first, then the newest). */
static void test_victims(void **state)
{
	char *hook[] = { "/bin/true", NULL };
	struct instance_obs v[] = {
		{ .id = "a", .state = INSTANCE_RUNNING, .created_ms = 100 },
		{ .id = "b", .state = INSTANCE_STOPPING, .created_ms = 500 },
		{ .id = "c", .state = INSTANCE_RUNNING, .created_ms = 300 },
		{ .id = "d", .state = INSTANCE_PROVISIONING, .created_ms = 200 },
		{ .id = "e", .state = INSTANCE_RUNNING, .created_ms = 300 },
	};
	cJSON *j;
	int cpu;

	(void)state;
	fx_init(1, 20, 1);
	cpu = fx_signal("cpu", SIGNAL_UTILIZATION, 60);
	F.g.behavior.scale_in.stabilization_ms = 0;
	fx_push(cpu, 30);
	assert_int_equal(fx_eval(4), 2);
	assert_int_equal(F.d.victims, VICTIMS_DRIVER);
	assert_null(strstr(fx_sentence(), "victims"));
	F.g.notify = &(struct notify_conf){.pre_scale_in = hook, .n_pre_scale_in = 1};
	assert_int_equal(fx_eval(4), 2);
	assert_int_equal(F.d.victims, VICTIMS_DRAIN);
	assert_non_null(strstr(fx_sentence(), "scale in 4 -> 2 (victims: not yet serving first, then the newest"));
	j = decision_to_json(&F.d, &F.g);
	assert_non_null(j);
	assert_string_equal(cJSON_GetObjectItem(j, "victims")->valuestring, "drain_order");
	cJSON_Delete(j);
	F.now += S(61);
	fx_push(cpu, 90);
	assert_int_equal(fx_eval(4), 6);
	assert_int_equal(F.d.victims, VICTIMS_NONE);

	engine_order_victims(v, 5);
	assert_string_equal(v[0].id, "d");
	assert_string_equal(v[1].id, "e");
	assert_string_equal(v[2].id, "c");
	assert_string_equal(v[3].id, "a");
	assert_string_equal(v[4].id, "b");
}

/* However long the history, the state stays bounded and never lets a
 * scale-in happen before the largest recommendation left its window. */
static void test_history_is_bounded_and_conservative(void **state)
{
	int q, i, sum, cur = 200;
	size_t k;

	(void)state;
	fx_init(1, 1000, 1);
	q = fx_signal("queue", SIGNAL_AVERAGE, 1);
	F.sig[q].aggregation = AGG_LAST;
	F.g.behavior.scale_in.stabilization_ms = S(3600);
	/* Falling recommendations 200, 199, ... : each is a deque entry. */
	for (i = 0; i < 150; i++, F.now += S(15)) {
		fx_push(q, 200 - i);
		cur = fx_step(cur);
		assert_true(F.st.n_down_recs <= ENGINE_MAX_HISTORY);
		assert_int_equal(cur, 200);
	}
	/* 100 actions in a minute, 66 of +1 and 34 of -1, reversals among
	 * them: merged, but none lost, so a rate-limit period still sees 66
	 * added and 34 removed. */
	for (i = 0; i < 100; i++) {
		engine_record_action(&F.st, F.now + i, 10, i % 3 ? 11 : 9);
		assert_true(F.st.n_events <= ENGINE_MAX_HISTORY);
	}
	for (sum = 0, k = 0; k < F.st.n_events; k++)
		sum += F.st.events[k].delta > 0 ? F.st.events[k].delta : 0;
	assert_int_equal(sum, 66);
	for (sum = 0, k = 0; k < F.st.n_events; k++) {
		sum += F.st.events[k].delta < 0 ? F.st.events[k].delta : 0;
		if (k > 0)
			assert_true(F.st.events[k].t_ms >= F.st.events[k - 1].t_ms);
	}
	assert_int_equal(sum, -34);
	assert_int_equal(F.st.last_action_dir, DIR_IN);
	assert_int_equal(F.st.last_action_ms, F.now + 99);
}

/* Clock steps. The evaluations come every 15 s of monotonic time while the
 * wall clock is stepped at evaluation `at` by `step_ms`; each run writes
 * the count after every evaluation to out[]. */
#define STEP_RUN 40

/* A scale-in: the queue is 40 (8 instances at 5 each) for the first
 * minute, then 10 (2 instances); scale-in window 300 s, at most 2 instances
 * removed per 60 s. */
static void scale_in_run(int at, int64_t step_ms, int *out)
{
	int q, cur = 8;

	fx_init(1, 20, 1);
	q = fx_signal("queue", SIGNAL_AVERAGE, 5);
	F.sig[q].aggregation = AGG_LAST;
	F.in_pol[0] = (struct rate_policy){ POLICY_INSTANCES, 2, S(60) };
	for (int i = 0; i < STEP_RUN; i++, F.now += S(15)) {
		if (i == at)
			F.wall_step += step_ms;
		fx_push(q, i < 4 ? 40 : 10);
		cur = fx_step(cur);
		out[i] = cur;
	}
}

/* A scale-out rule (CPU above 70 %: one more) with a 120 s cooldown, the
 * CPU at 90 % throughout. */
static void cooldown_run(int at, int64_t step_ms, int *out)
{
	int cpu, cur = 4;

	fx_init(1, 20, 1);
	cpu = fx_signal("cpu", SIGNAL_UTILIZATION, 0);
	fx_rule(0, cpu, OP_GT, 70, DIR_OUT, CHANGE_COUNT, 1);
	F.prof[0].rules[0].window_ms = S(30);
	F.prof[0].rules[0].cooldown_ms = S(120);
	for (int i = 0; i < STEP_RUN; i++, F.now += S(15)) {
		if (i == at)
			F.wall_step += step_ms;
		fx_push(cpu, 90);
		cur = fx_step(cur);
		out[i] = cur;
	}
}

/* A wall-clock step of an hour, forward or back, at any point of a window
 * neither empties nor stretches it: the counts are those of a run without
 * the step, evaluation for evaluation. */
static void test_clock_steps(void **state)
{
	static const int64_t steps[] = { S(3600), -S(3600) };
	/* In the scale-in window, just before it ends, between two
	 * rate-limited steps, inside the cooldown. */
	static const int ats[] = { 1, 10, 22, 24, 28 };
	int ref[STEP_RUN], got[STEP_RUN];

	(void)state;
	scale_in_run(-1, 0, ref);
	/* The last 8 was recommended at 45 s: the window holds 8 until 345 s
	 * (evaluation 23); then 2 instances go every 60 s. */
	assert_int_equal(ref[22], 8);
	assert_int_equal(ref[23], 6);
	assert_int_equal(ref[26], 6);
	assert_int_equal(ref[27], 4);
	assert_int_equal(ref[30], 4);
	assert_int_equal(ref[31], 2);
	assert_int_equal(ref[STEP_RUN - 1], 2);
	for (size_t s = 0; s < 2; s++)
		for (size_t a = 0; a < sizeof(ats) / sizeof(ats[0]); a++) {
			scale_in_run(ats[a], steps[s], got);
			assert_memory_equal(got, ref, sizeof(ref));
		}

	/* An instance's age runs on the monotonic clock too: started 600 s
	 * ago as both clocks read then, it is past its initialization after
	 * the wall clock stepped back an hour, though the wall-clock start
	 * the driver reported now lies ahead of the wall clock. */
	{
		struct instance_obs inst[2];
		struct observation obs = { .current = 2, .instances = inst, .n_instances = 2, .stable = true };
		int cpu;

		fx_init(1, 20, 1);
		cpu = fx_signal("cpu", SIGNAL_UTILIZATION, 60);
		F.wall_step = -S(3600);
		for (int i = 0; i < 2; i++)
			inst[i] = (struct instance_obs){ .id = "vm", .state = INSTANCE_RUNNING, .ready = true,
							 .running_since_ms = F.now - S(600),
							 .running_since_mono_ms = F.now - S(600) };
		fx_push(cpu, 90);
		assert_int_equal(fx_eval_obs(&obs), 3);
		assert_int_equal(F.d.ready, 2);
	}

	cooldown_run(-1, 0, ref);
	/* One more at once, then one every 120 s (8 evaluations). */
	assert_int_equal(ref[0], 5);
	assert_int_equal(ref[7], 5);
	assert_int_equal(ref[8], 6);
	assert_int_equal(ref[16], 7);
	for (size_t s = 0; s < 2; s++)
		for (size_t a = 0; a < sizeof(ats) / sizeof(ats[0]); a++) {
			cooldown_run(ats[a], steps[s], got);
			assert_memory_equal(got, ref, sizeof(ref));
		}
}

static void test_contract(void **state)
{
	struct observation obs = { .current = -1 };

	(void)state;
	fx_init(1, 4, 1);
	assert_int_equal(engine_evaluate(&F.g, fx_clock(), &obs, F.in, &F.st, &F.st, &F.d), -EINVAL);
	obs.current = 1;
	assert_int_equal(engine_evaluate(&F.g, fx_clock(), &obs, F.in, &F.st, NULL, &F.d), -EINVAL);
	/* No signal and no rule: a schedule-only group follows its bounds. */
	assert_int_equal(engine_evaluate(&F.g, fx_clock(), &obs, F.in, &F.st, &F.st, &F.d), 0);
	assert_int_equal(F.d.desired, 1);
	assert_false(F.d.on_missing_applied);
}

static void test_sentence_and_json(void **state)
{
	char buf[512];
	int cpu, q;

	(void)state;
	fx_init(1, 8, 1);
	q = fx_signal("queue", SIGNAL_AVERAGE, 5);
	cpu = fx_signal("cpu", SIGNAL_UTILIZATION, 60);
	fx_push(q, 60);
	fx_push(cpu, 90);
	fx_eval(4);
	decision_sentence(&F.d, &F.g, buf, sizeof(buf));
	assert_non_null(strstr(buf, "queue 60 vs 5/instance -> 12"));
	assert_non_null(strstr(buf, "cpu 90% vs target 60% -> 6"));
	assert_non_null(strstr(buf, "max of signals"));
	assert_non_null(strstr(buf, "capped at max 8"));
	{
		cJSON *j = decision_to_json(&F.d, &F.g), *sig;

		assert_non_null(j);
		assert_int_equal(cJSON_GetObjectItem(j, "desired")->valueint, 8);
		assert_int_equal(cJSON_GetObjectItem(j, "combined")->valueint, 12);
		assert_string_equal(cJSON_GetObjectItem(j, "action")->valuestring, "scale_out");
		assert_string_equal(cJSON_GetObjectItem(j, "group")->valuestring, "web");
		assert_string_equal(cJSON_GetObjectItem(j, "time")->valuestring, "1970-01-12T13:46:40.000Z");
		assert_string_equal(cJSON_GetObjectItem(j, "driver_signal")->valuestring, "queue");
		sig = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "signals"), 1);
		assert_string_equal(cJSON_GetObjectItem(sig, "name")->valuestring, "cpu");
		assert_int_equal(cJSON_GetObjectItem(sig, "recommendation")->valueint, 6);
		assert_true(cJSON_IsNull(cJSON_GetObjectItem(sig, "reason")));
		cJSON_Delete(j);
	}
	/* An invalid signal says why. */
	F.now += S(120);
	fx_push(cpu, 90);
	F.in[q].error = "redis: connection refused";
	fx_eval(8);
	decision_sentence(&F.d, &F.g, buf, sizeof(buf));
	assert_non_null(strstr(buf, "queue invalid (redis: connection refused)"));
	/* A short buffer is cut, not overrun, and the full length is returned. */
	assert_true(decision_sentence(&F.d, &F.g, buf, 10) > 10);
	assert_int_equal(strlen(buf), 9);
}


/* A decision packed (a group's last, kept in the room it uses) comes back
 * byte for byte, whatever its counts of signals and rules, and the room
 * after them comes back zeroed. */
/* Packs D in the size it asks for and unpacks it into BACK (first filled
 * with a pattern), which must be D again, byte for byte. */
static void round_trip(const struct decision *d, struct decision *back)
{
	unsigned char *buf = malloc(decision_packed_size(d));

	assert_non_null(buf);
	decision_pack(d, buf);
	memset(back, 0xa5, sizeof(*back));
	decision_unpack(buf, back);
	assert_memory_equal(back, d, sizeof(*d));
	free(buf);
}

static void test_decision_packed(void **state)
{
	static const size_t counts[][2] = {{3, 2}, {0, 0}, {1, 0}, {0, 1}, {CONFIG_MAX_SIGNALS, CONFIG_MAX_RULES}};
	static const char *const reason = "no samples";
	struct decision d, back;
	size_t size, i, k;

	(void)state;
	for (k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
		memset(&d, 0, sizeof(d));
		d.time_ms = 1700000000123;
		d.group = "web";
		d.profile = "office-hours";
		d.profile_index = 1;
		d.current = 4;
		d.desired = 6;
		d.n_signals = counts[k][0];
		d.n_rules = counts[k][1];
		for (i = 0; i < d.n_signals; i++)
			d.signals[i] = (struct signal_decision){.valid = i % 2 == 0, .value = 10.5 * (double)(i + 1),
								.target = 60, .recommendation = (int)i + 2,
								.reason = i % 2 ? reason : NULL, .forecast = true,
								.forecast_value = 3.25, .keep_recommendation = 7};
		for (i = 0; i < d.n_rules; i++)
			d.rules[i] = (struct rule_decision){.evaluated = true, .fired = i % 2 == 1, .value = 0.5 + (double)i,
							    .proposal = (int)i + 1};
		d.action = DIR_OUT;
		d.hold = HOLD_STABILIZATION;
		d.driver_signal = 0;
		d.driver_rule = -1;
		d.boot_ms = S(120);
		d.keep_ms = S(480);

		size = decision_packed_size(&d);
		if (d.n_signals < CONFIG_MAX_SIGNALS || d.n_rules < CONFIG_MAX_RULES)
			assert_true(size < sizeof(d));
		round_trip(&d, &back);
		assert_ptr_equal(back.group, d.group);
		if (d.n_signals > 1)
			assert_ptr_equal(back.signals[1].reason, reason);
	}
	/* Three signals and no rule, a group's usual shape: a quarter of
	 * the room. */
	d.n_signals = 3;
	d.n_rules = 0;
	assert_true(decision_packed_size(&d) * 4 <= sizeof(d) + 64);
	/* Only the words that are not zero are kept: without forecasts,
	 * reasons or holds, the signals take less room, and a pointer set
	 * takes one more word. */
	for (i = 0; i < d.n_signals; i++)
		d.signals[i] = (struct signal_decision){.valid = true, .value = 50, .target = 60, .recommendation = 4};
	d.hold = HOLD_NONE;
	size = decision_packed_size(&d);
	assert_true(size <= 260);
	d.override = "pin";
	assert_int_equal(decision_packed_size(&d), size + 8);
	/* Any words, zero or not, at every count: what unpacks is what was
	 * packed, and the room after the counts is zero. */
	srand(7);
	for (k = 0; k < 2000; k++) {
		uint64_t w;

		for (i = 0; i < sizeof(d); i += sizeof(w)) {
			w = rand() % 2 ? ((uint64_t)rand() << 32) ^ (uint64_t)rand() : 0;
			memcpy((char *)&d + i, &w, sizeof(w));
		}
		d.n_signals = (size_t)rand() % (CONFIG_MAX_SIGNALS + 1);
		d.n_rules = (size_t)rand() % (CONFIG_MAX_RULES + 1);
		memset(&d.signals[d.n_signals], 0, (CONFIG_MAX_SIGNALS - d.n_signals) * sizeof(d.signals[0]));
		memset(&d.rules[d.n_rules], 0, (CONFIG_MAX_RULES - d.n_rules) * sizeof(d.rules[0]));
		round_trip(&d, &back);
	}
}

/* A forecast in observe mode is recorded, in the record and the sentence,
 * and changes nothing; in mode on it raises the count. */
static void test_forecast_observe_and_on(void **state)
{
	int cpu;
	char buf[512];
	cJSON *j, *f;

	(void)state;
	fx_init(1, 20, 1);
	F.g.behavior.boot_time_ms = S(120);
	cpu = fx_signal("cpu", SIGNAL_UTILIZATION, 50);
	F.fc[cpu].mode = FORECAST_OBSERVE;
	fx_push(cpu, 50);
	/* 4 instances at 50 %: the forecast total 400 (% x instances) needs 8. */
	F.in[cpu].forecast_valid = true;
	F.in[cpu].forecast_total = 400;
	F.in[cpu].forecast_keep_total = 400;
	assert_int_equal(fx_eval(4), 4);
	assert_int_equal(F.d.action, DIR_NONE);
	assert_true(F.d.signals[cpu].forecast);
	assert_int_equal(F.d.signals[cpu].forecast_recommendation, 8);
	assert_int_equal(F.d.signals[cpu].recommendation, 4);
	assert_int_equal(F.d.boot_ms, S(120));
	decision_sentence(&F.d, &F.g, buf, sizeof(buf));
	assert_non_null(strstr(buf, "forecast 400 -> 8, observed only"));
	j = decision_to_json(&F.d, &F.g);
	f = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "signals"), 0), "forecast");
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(f, "mode")), "observe");
	assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItem(f, "recommendation")), 8);
	assert_false(cJSON_IsTrue(cJSON_GetObjectItem(f, "raised")));
	cJSON_Delete(j);

	F.fc[cpu].mode = FORECAST_ON;
	F.now += S(15);
	fx_push(cpu, 50);
	assert_int_equal(fx_eval(4), 8);
	assert_int_equal(F.d.action, DIR_OUT);
	assert_true(F.d.signals[cpu].forecast_raised);

	/* Off: the inputs are not read at all. */
	F.fc[cpu].mode = FORECAST_OFF;
	F.now += S(15);
	fx_push(cpu, 50);
	assert_int_equal(fx_eval(4), 4);
	assert_false(F.d.signals[cpu].forecast);
}

/* A forecast never lowers the count by itself: with the reactive value
 * asking for more than the forecast, the reactive one stands, and a low
 * forecast over a busy group is no scale-in. */
static void test_forecast_never_scales_in_alone(void **state)
{
	int cpu;

	(void)state;
	fx_init(1, 20, 1);
	F.g.behavior.boot_time_ms = S(120);
	F.g.behavior.scale_in.stabilization_ms = 0;
	cpu = fx_signal("cpu", SIGNAL_UTILIZATION, 50);
	F.fc[cpu].mode = FORECAST_ON;
	F.in[cpu].forecast_valid = true;
	F.in[cpu].forecast_total = 50;
	F.in[cpu].forecast_keep_total = 50;
	fx_push(cpu, 50);
	assert_int_equal(fx_step(8), 8);
	assert_int_equal(F.d.signals[cpu].recommendation, 8);
	assert_false(F.d.signals[cpu].forecast_raised);
	/* The reactive value says 4, the forecast 6: in to 6, not 4. */
	F.now += S(15);
	fx_push(cpu, 25);
	F.in[cpu].forecast_total = 300;
	F.in[cpu].forecast_keep_total = 300;
	assert_int_equal(fx_step(8), 6);
}

/* Lazy scale-in: the count is held for four boot times (or the billing
 * minimum or unit when longer: a relaunch would cost more), and for what the
 * forecast says comes back in that time. */
static void test_lazy_scale_in(void **state)
{
	int cpu, cur;
	int64_t start;

	(void)state;
	fx_init(1, 20, 1);
	F.g.behavior.boot_time_ms = S(120);
	F.g.behavior.lazy_scale_in = true;
	F.g.behavior.billing_minimum_ms = S(60);
	F.g.behavior.billing_granularity_ms = S(1);
	assert_int_equal(engine_keep_ms(&F.g, 0), S(480));
	assert_int_equal(engine_keep_ms(&F.g, S(90)), S(360));
	F.g.behavior.billing_minimum_ms = S(600);
	assert_int_equal(engine_keep_ms(&F.g, S(90)), S(600));
	assert_int_equal(engine_keep_ms(&F.g, S(200)), S(800));
	F.g.behavior.billing_granularity_ms = S(3600);
	assert_int_equal(engine_keep_ms(&F.g, S(90)), S(3600));
	F.g.behavior.billing_minimum_ms = S(60);
	F.g.behavior.billing_granularity_ms = S(1);

	/* Without a forecast: the 300 s stabilization is replaced by four
	 * boot times, 480 s. */
	cpu = fx_signal("cpu", SIGNAL_UTILIZATION, 50);
	F.sig[cpu].window_ms = S(1); /* the newest sample only */
	fx_push(cpu, 100);
	cur = fx_step(4);
	assert_int_equal(cur, 8);
	start = F.now;
	for (F.now = start + S(15); F.now < start + S(480); F.now += S(15)) {
		fx_push(cpu, 10);
		cur = fx_step(cur);
		assert_int_equal(cur, 8);
		assert_int_equal(F.d.hold, HOLD_STABILIZATION);
		assert_int_equal(F.d.keep_ms, S(480));
	}
	fx_push(cpu, 10);
	cur = fx_step(cur);
	assert_int_equal(cur, 2);

	/* With a forecast that needs 6 again within the keep time: 6 stay. */
	F.fc[cpu].mode = FORECAST_ON;
	F.in[cpu].forecast_valid = true;
	F.in[cpu].forecast_total = 50;
	F.in[cpu].forecast_keep_total = 600; /* 12 instances at 50 % */
	F.now += S(15);
	fx_push(cpu, 400); /* 2 x 400 % = 800: 16 */
	cur = fx_step(cur);
	assert_int_equal(cur, 6); /* rate limit: 2 + 4 */
	F.now += S(200);
	F.in[cpu].forecast_keep_total = 300;
	fx_push(cpu, 5);
	cur = fx_step(cur);
	assert_int_equal(cur, 6);
	assert_int_equal(F.d.signals[cpu].keep_recommendation, 6);
	/* The forecast sees nothing coming back: in to what is needed once
	 * the last need is a keep time old. */
	F.in[cpu].forecast_keep_total = 10;
	start = F.now;
	for (F.now = start + S(15); F.now < start + S(480); F.now += S(15)) {
		fx_push(cpu, 5);
		cur = fx_step(cur);
		assert_int_equal(cur, 6);
	}
	fx_push(cpu, 5);
	cur = fx_step(cur);
	assert_int_equal(cur, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_five_row_table),
		cmocka_unit_test(test_queue_series),
		cmocka_unit_test(test_cpu_series_steps_down),
		cmocka_unit_test(test_tolerance),
		cmocka_unit_test(test_tolerance_edges),
		cmocka_unit_test(test_hpa_missing_samples),
		cmocka_unit_test(test_hpa_initializing_instances),
		cmocka_unit_test(test_initialization_counts_from_start),
		cmocka_unit_test(test_several_signals_take_max),
		cmocka_unit_test(test_invalid_signal_blocks_scale_in_only),
		cmocka_unit_test(test_on_missing),
		cmocka_unit_test(test_rules_any_out_highest),
		cmocka_unit_test(test_rules_all_in_smallest_reduction),
		cmocka_unit_test(test_rule_cooldown),
		cmocka_unit_test(test_flapping_guard),
		cmocka_unit_test(test_rate_limits),
		cmocka_unit_test(test_profile_switch_acts_at_once),
		cmocka_unit_test(test_profile_target_override),
		cmocka_unit_test(test_sample_over_target),
		cmocka_unit_test(test_scale_out_stabilization),
		cmocka_unit_test(test_in_flight),
		cmocka_unit_test(test_safe_start),
		cmocka_unit_test(test_partial_observation),
		cmocka_unit_test(test_host_capacity),
		cmocka_unit_test(test_driver_busy),
		cmocka_unit_test(test_paused),
		cmocka_unit_test(test_not_owner),
		cmocka_unit_test(test_pinned),
		cmocka_unit_test(test_victims),
		cmocka_unit_test(test_history_is_bounded_and_conservative),
		cmocka_unit_test(test_clock_steps),
		cmocka_unit_test(test_contract),
		cmocka_unit_test(test_sentence_and_json),
		cmocka_unit_test(test_decision_packed),
		cmocka_unit_test(test_forecast_observe_and_on),
		cmocka_unit_test(test_forecast_never_scales_in_alone),
		cmocka_unit_test(test_lazy_scale_in),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	size_t i;

	for (i = 0; i < F.g.n_signals; i++)
		window_destroy(&F.win[i]);
	return rc;
}
