/* simulate_run() on a tiny trace whose every step is worked out by hand, the
 * same group through a utilization signal, the SVG plot it writes, the
 * warm-up and the initial pool, and that no decision depends on the part of
 * the trace after it. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config/config.h"
#include "engine/engine.h"
#include "simulation/simulate.h"
#include "simulation/trace.h"

#define S INT64_C(1000)

/* Demand per 15 s: 1 1 4 4 4 4 1 1 1 1. */
static const double demand[] = {1, 1, 4, 4, 4, 4, 1, 1, 1, 1};

/* A regular series, replayed through trace_open_series(). */
struct series {
	int64_t start_ms, res_ms;
	double *v;
	size_t n;
};

struct fixture {
	struct signal_conf sig;
	struct forecast_conf fc;
	struct profile_conf prof;
	struct group_conf g;
	struct series t;
	struct sim_params p;
};

struct collect {
	struct sim_step *v;
	size_t n, cap;
};

static int collect_step(void *userdata, const struct sim_step *st)
{
	struct collect *c = userdata;

	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 64;
		struct sim_step *v = realloc(c->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		c->v = v;
		c->cap = cap;
	}
	c->v[c->n++] = *st;
	return 0;
}

/* Runs the fixture's group over SER; the steps go to *st (free them). */
static int run_series(struct fixture *f, const struct series *ser, struct sim_metrics *m, struct sim_step **st,
		      size_t *n)
{
	struct trace_reader *r;
	struct collect c = {0};
	int k;

	assert_int_equal(trace_open_series(ser->start_ms, ser->res_ms, ser->v, ser->n, &r), 0);
	k = simulate_run(&f->g, r, &f->p, m, st ? collect_step : NULL, &c);
	trace_close(r);
	if (st && k == 0) {
		*st = c.v;
		*n = c.n;
	} else {
		free(c.v);
	}
	return k;
}

static int run(struct fixture *f, struct sim_metrics *m, struct sim_step **st, size_t *n)
{
	return run_series(f, &f->t, m, st, n);
}

/* The fixture's rate limits: 100 instances out, 100 % in, per 15 s. */
static const struct rate_policy out_policy[] = {{.type = POLICY_INSTANCES, .value = 100, .period_ms = 15 * S}};
static const struct rate_policy in_policy[] = {{.type = POLICY_PERCENT, .value = 100, .period_ms = 15 * S}};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	f->sig = (struct signal_conf){
		.name = "rate",
		.source = "replay",
		.type = SIGNAL_AVERAGE,
		.target = 1,
		.window_ms = 15 * S,
		.aggregation = AGG_LAST,
		.tolerance = 0,
		.staleness_ms = 45 * S,
		.poll_interval_ms = 15 * S,
		.timeout_ms = 10 * S,
		.forecast = &f->fc,
	};
	f->prof = (struct profile_conf){.name = "default", .kind = PROFILE_DEFAULT, .min = 1, .max = 10, .def = 1};
	f->g = (struct group_conf){
		.name = "pool",
		.driver = "none",
		.interval_ms = 15 * S,
		.signals = &f->sig,
		.n_signals = 1,
		.profiles = &f->prof,
		.n_profiles = 1,
	};
	f->g.behavior.scale_out = (struct direction_behavior){
		.stabilization_ms = 0,
		.select = SELECT_MAX,
		.policies = out_policy,
		.n_policies = 1,
	};
	f->g.behavior.scale_in = (struct direction_behavior){
		.stabilization_ms = 0,
		.select = SELECT_MAX,
		.policies = in_policy,
		.n_policies = 1,
	};
	f->g.behavior.initialization_ms = 0;
	f->g.behavior.on_missing = ON_MISSING_HOLD;
	f->t = (struct series){.start_ms = 1700000000 * S, .res_ms = 15 * S, .v = (double *)demand, .n = 10};
	f->p = (struct sim_params){
		.boot_ms = 30 * S,
		.capacity = 1,
		.step_ms = 15 * S,
		.billing_granularity_ms = 1 * S,
		.billing_minimum_ms = 0,
		.initial = -1,
	};
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	free(*state);
	return 0;
}

static void test_hand_computed_run(void **state)
{
	struct fixture *f = *state;
	struct sim_metrics m;
	struct sim_step *st;
	size_t n;

	assert_int_equal(run(f, &m, &st, &n), 0);
	assert_int_equal(n, 10);
	/* The first sample (demand 4 over step 2) arrives at 45 s: out to 4,
	 * ready at 75 s. Demand 1 over step 6 is seen at 105 s: in to 1. */
	for (size_t k = 0; k < n; k++) {
		static const int ready[] = {1, 1, 1, 1, 1, 4, 4, 1, 1, 1};
		static const int billed[] = {1, 1, 1, 4, 4, 4, 4, 1, 1, 1};
		static const int action[] = {0, 0, 0, 1, 0, 0, 0, -1, 0, 0};

		assert_int_equal(st[k].ready, ready[k]);
		assert_int_equal(st[k].billed, billed[k]);
		assert_int_equal(st[k].action, action[k]);
		assert_int_equal(st[k].required, (int)demand[k]);
	}
	/* Billed: one instance 150 s, three 45 s -> 105 s: 330 s. */
	assert_true(fabs(m.vm_hours * 3600 - 330) < 1e-6);
	/* Oracle: one instance 150 s, three launched at 0 (30 s before 30 s)
	 * and gone at 90 s: 420 s. */
	assert_true(fabs(m.oracle_vm_hours * 3600 - 420) < 1e-6);
	assert_true(fabs(m.cost_ratio - 330.0 / 420.0) < 1e-9);
	/* Short by 3 of 4 for three steps of ten. */
	assert_true(fabs(m.theta_u - 22.5) < 1e-9);
	assert_true(fabs(m.tau_u - 30) < 1e-9);
	/* Over by 3 of 1 for one step. */
	assert_true(fabs(m.theta_o - 30) < 1e-9);
	assert_true(fabs(m.tau_o - 10) < 1e-9);
	/* 3 x 3 x 15 unserved of 22 x 15. */
	assert_true(fabs(m.unserved_fraction - 9.0 / 22.0) < 1e-9);
	/* Two demand changes and two supply changes. */
	assert_true(fabs(m.jitter) < 1e-9);
	assert_int_equal(m.actions_out, 1);
	assert_int_equal(m.actions_in, 1);
	assert_int_equal(m.reversals, 1);
	assert_int_equal(m.peak_ready, 4);
	free(st);
}

static void test_utilization_signal(void **state)
{
	struct fixture *f = *state;
	struct sim_metrics m;
	struct sim_step *st;
	size_t n;

	/* The same load as CPU: 400 % of one ready instance at 45 s against a
	 * 100 % target asks for ceil(1 x 400 / 100) = 4, as the rate did. */
	f->sig.type = SIGNAL_UTILIZATION;
	f->sig.target = 100;
	assert_int_equal(run(f, &m, &st, &n), 0);
	assert_int_equal(st[3].action, 1);
	assert_int_equal(st[3].desired, 4);
	assert_int_equal(m.actions_out, 1);
	assert_true(fabs(m.vm_hours * 3600 - 330) < 1e-6);
	free(st);
}

/* A utilization's window outlives a scale-out: the busiest sample of the
 * last minute was read with one instance ready at 400 %, and once the four
 * are ready it is the same load at 100 % of them. Read as 400 % of four it
 * would ask for 16 (the profile's 10), a second scale-out the load never
 * needed. */
static void test_utilization_window_over_scale_out(void **state)
{
	static const double load[] = {1, 1, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
	struct fixture *f = *state;
	struct series ser = f->t;
	struct sim_metrics m;
	struct sim_step *st;
	size_t n;
	int most = 0;

	f->sig.type = SIGNAL_UTILIZATION;
	f->sig.target = 100;
	f->sig.window_ms = 60 * S;
	f->sig.aggregation = AGG_MAX;
	ser.v = (double *)load;
	ser.n = sizeof(load) / sizeof(load[0]);
	assert_int_equal(run_series(f, &ser, &m, &st, &n), 0);
	for (size_t i = 0; i < n; i++)
		if (st[i].desired > most)
			most = st[i].desired;
	assert_int_equal(most, 4);
	assert_int_equal(m.actions_out, 1);
	free(st);
}

static void test_svg_plot(void **state)
{
	struct fixture *f = *state;
	struct sim_metrics m;
	struct sim_step *st;
	char path[64], buf[65536];
	size_t n, len;
	FILE *fp;

	assert_int_equal(run(f, &m, &st, &n), 0);
	/* In the test's working directory (the build tree), named by pid. */
	snprintf(path, sizeof(path), "test-simulate-%ld.svg", (long)getpid());
	assert_int_equal(svg_write_plot(path, &(struct svg_plot){.title = "pool <test> & co", .capacity = 1,
							   .step_ms = f->p.step_ms,
							   .boot_ms = f->p.boot_ms, .from_ms = INT64_MIN,
							   .to_ms = INT64_MAX, .metrics = &m},
					 st, n),
			 0);
	fp = fopen(path, "r");
	assert_non_null(fp);
	len = fread(buf, 1, sizeof(buf) - 1, fp);
	buf[len] = '\0';
	fclose(fp);
	unlink(path);
	assert_non_null(strstr(buf, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
	assert_non_null(strstr(buf, "id=\"demand\""));
	assert_non_null(strstr(buf, "id=\"ready\""));
	assert_non_null(strstr(buf, "id=\"billed\""));
	assert_non_null(strstr(buf, "id=\"oracle\""));
	assert_non_null(strstr(buf, "id=\"bound-min\""));
	assert_non_null(strstr(buf, "id=\"under\""));
	assert_non_null(strstr(buf, "id=\"metrics\""));
	assert_non_null(strstr(buf, "class=\"scale-out\""));
	assert_non_null(strstr(buf, "class=\"scale-in\""));
	assert_non_null(strstr(buf, "id=\"legend\""));
	/* The title is escaped, so the file stays well-formed. */
	assert_non_null(strstr(buf, "pool &lt;test&gt; &amp; co"));
	assert_null(strstr(buf, "<test>"));
	assert_non_null(strstr(buf, "</svg>"));
	free(st);
}

static void temp_file(char *buf, size_t len, const char *text);

/* Reads the SVG at path into a malloc'd string, and removes the file. */
static char *read_svg(const char *path)
{
	FILE *fp = fopen(path, "r");
	char *buf = malloc(4 << 20);
	size_t len;

	assert_non_null(fp);
	assert_non_null(buf);
	len = fread(buf, 1, (4 << 20) - 1, fp);
	buf[len] = '\0';
	fclose(fp);
	unlink(path);
	return buf;
}

/* The oracle's line: an instance launches one boot delay before its need,
 * so with 15 s steps and a 30 s boot the need of 5 at 45 s is live from
 * the step at 15 s (it launches at 15 s) to the end of the step at 45 s.
 * On a plot of 8 steps (120 s over 960 columns, 8 per second) with 10
 * instances at the top (360 pixels), 5 is at y = 64 + 360 - 180 = 244 and
 * the step at 15 s at x = 56 + 120 = 176; back to 1 (y = 388) at 60 s
 * (x = 536). */
static void test_svg_oracle_line(void **state)
{
	struct sim_step st[8];
	struct svg_plot sp = {.capacity = 1, .step_ms = 15 * S, .boot_ms = 30 * S, .from_ms = INT64_MIN,
			      .to_ms = INT64_MAX, .ymax = 10};
	char path[256], *buf, *line, *end;

	(void)state;
	for (int i = 0; i < 8; i++)
		st[i] = (struct sim_step){.t_ms = 1000000 + i * 15 * S, .demand = i == 3 ? 5 : 1, .required = i == 3 ? 5 : 1,
					  .ready = 1, .billed = 1, .desired = 1, .scored = true, .forecast = -1,
					  .min = 1, .max = 10, .oracle = i == 3 ? 5 : 1};
	temp_file(path, sizeof(path), "");
	assert_int_equal(svg_write_plot(path, &sp, st, 8), 0);
	buf = read_svg(path);
	line = strstr(buf, "id=\"oracle\"");
	assert_non_null(line);
	end = strchr(line, '>');
	assert_non_null(end);
	*end = '\0';
	assert_non_null(strstr(line, "d=\"M56.0 388.0 H176.0 V244.0 H536.0 V388.0 H1016.0\""));
	/* The step at 45 s had one ready for five required: shaded (the
	 * shading is drawn first, under the lines). */
	assert_non_null(strstr(buf, "<rect x=\"416.0\" y=\"64\" width=\"120\" height=\"360\"/>"));
	free(buf);
}

/* A one-step dip in a run far longer than the plot is wide still shows:
 * its column reaches down to it. */
static void test_svg_keeps_dips(void **state)
{
	size_t n = 20000;
	struct sim_step *st = calloc(n, sizeof(*st));
	struct svg_plot sp = {.capacity = 1, .step_ms = 15 * S, .boot_ms = 0, .from_ms = INT64_MIN,
			      .to_ms = INT64_MAX, .ymax = 10};
	char path[256], *buf, *line, *end;

	(void)state;
	assert_non_null(st);
	for (size_t i = 0; i < n; i++)
		st[i] = (struct sim_step){.t_ms = (int64_t)i * 15 * S, .demand = 3, .required = 3,
					  .ready = i == 12345 ? 1 : 3, .billed = 3, .desired = 3, .scored = true,
					  .forecast = -1, .min = 1, .max = 10, .oracle = 3};
	temp_file(path, sizeof(path), "");
	assert_int_equal(svg_write_plot(path, &sp, st, n), 0);
	buf = read_svg(path);
	line = strstr(buf, "id=\"ready\"");
	assert_non_null(line);
	end = strchr(line, '>');
	*end = '\0';
	/* y of 1 is 388, of 3 is 316. */
	assert_non_null(strstr(line, "V388.0 V316.0"));
	free(buf);
	free(st);
}

/* A range outside the run has nothing to plot. */
static void test_svg_empty_range(void **state)
{
	struct sim_step st = {.t_ms = 0, .demand = 1, .required = 1, .ready = 1, .billed = 1, .forecast = -1};
	struct svg_plot sp = {.capacity = 1, .step_ms = 15 * S, .from_ms = 60 * S, .to_ms = INT64_MAX};

	(void)state;
	assert_int_equal(svg_write_plot("/nonexistent/x.svg", &sp, &st, 1), -ENODATA);
	sp.step_ms = 0;
	assert_int_equal(svg_write_plot("/nonexistent/x.svg", &sp, &st, 1), -EINVAL);
}

static void test_gap_in_trace(void **state)
{
	struct fixture *f = *state;
	double gappy[] = {2, 2, NAN, NAN, NAN, NAN, 2, 2};
	struct sim_metrics m;
	struct sim_step *st;
	size_t n;

	/* Four steps without data: no samples, so the policy holds and the
	 * missing minute is left out of the service figures, not counted as
	 * zero demand; the instances are still billed through it. */
	f->t.v = gappy;
	f->t.n = 8;
	assert_int_equal(run(f, &m, &st, &n), 0);
	assert_int_equal(n, 8);
	assert_true(isnan(st[3].demand));
	for (size_t k = 0; k < n; k++)
		assert_int_equal(st[k].ready, 2);
	assert_int_equal(m.actions_in + m.actions_out, 0);
	assert_true(fabs(m.hours * 3600 - 60) < 1e-9);
	assert_true(fabs(m.vm_hours * 3600 - 2 * 120) < 1e-6);
	assert_true(m.tau_u == 0 && m.tau_o == 0);
	free(st);
}

/* A trace of 150 s evaluated in one-minute steps: the third step holds
 * only 30 s of trace, and neither the pool nor the oracle pays for the
 * 30 s after the trace ends. */
static void test_partial_last_step(void **state)
{
	static const double rise[] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 3};
	struct fixture *f = *state;
	struct sim_metrics m;
	struct sim_step *st;
	size_t n;

	f->t.v = (double *)rise;
	f->p.step_ms = 60 * S;
	assert_int_equal(run(f, &m, &st, &n), 0);
	assert_int_equal(n, 3);
	/* The last step's demand is the mean of the 30 s it holds: 2. */
	assert_true(fabs(st[2].demand - 2) < 1e-9);
	assert_int_equal(st[2].required, 2);
	assert_true(fabs(m.hours * 3600 - 150) < 1e-6);
	/* The policy sees the rise only after the trace: one instance, 150 s. */
	assert_true(fabs(m.vm_hours * 3600 - 150) < 1e-6);
	/* The oracle: one instance 150 s, one more launched 30 s (the boot)
	 * before 120 s: 60 s. */
	assert_true(fabs(m.oracle_vm_hours * 3600 - 210) < 1e-6);
	free(st);
}

/* The warm-up feeds the policy and is not scored: the decisions are those
 * of the run without it, the figures those of the steps after it. */
static void test_warmup(void **state)
{
	struct fixture *f = *state;
	struct sim_metrics m, m0;
	struct sim_step *st, *st0;
	size_t n, n0;

	assert_int_equal(run(f, &m0, &st0, &n0), 0);
	f->p.warmup_ms = 40 * S; /* scoring starts at the first step from 40 s: 45 s */
	assert_int_equal(run(f, &m, &st, &n), 0);
	assert_int_equal(n, n0);
	for (size_t k = 0; k < n; k++) {
		assert_int_equal(st[k].desired, st0[k].desired);
		assert_int_equal(st[k].action, st0[k].action);
		assert_int_equal(st[k].ready, st0[k].ready);
		assert_int_equal(st[k].scored, k >= 3);
	}
	assert_int_equal(m.warmup_steps, 3);
	assert_int_equal(m.steps, 7);
	assert_int_equal(m.scored_from_ms - m.start_ms, 45 * S);
	assert_true(fabs(m.hours * 3600 - 105) < 1e-6);
	/* The scale-out at 45 s is the first scored step's; the four
	 * instances are billed from 45 s: 4 x 60 s, then one for 45 s. */
	assert_int_equal(m.actions_out, 1);
	assert_true(fabs(m.vm_hours * 3600 - (4 * 60 + 45)) < 1e-6);
	/* Short by 3 of 4 over two steps of seven. */
	assert_true(fabs(m.tau_u - 200.0 / 7) < 1e-9);
	free(st);
	free(st0);
	/* A warm-up over the whole trace leaves nothing to score. */
	f->p.warmup_ms = 600 * S;
	assert_int_equal(run(f, &m, NULL, NULL), -ENODATA);
}

/* The initial pool is a setup parameter: given, it is used as is. */
static void test_initial_given(void **state)
{
	struct fixture *f = *state;
	struct sim_metrics m;
	struct sim_step *st;
	size_t n;

	assert_int_equal(run(f, &m, NULL, NULL), 0);
	assert_int_equal(m.initial, 1);
	f->p.initial = 3;
	assert_int_equal(run(f, &m, &st, &n), 0);
	assert_int_equal(m.initial, 3);
	assert_int_equal(st[0].ready, 3);
	free(st);
}

/* Honest evaluation: cut the trace anywhere (at a step boundary, inside a
 * step, inside the signal's window) and every decision before the cut is
 * the one the whole trace gets. Run with the initial pool given, so the
 * setup is the same, and with it sized from the trace's first boot delay
 * (setup that reads ahead, documented as such) for the cuts after it. */
static void test_decisions_do_not_see_the_future(void **state)
{
	struct fixture *f = *state;
	enum { N = 1440 };
	static const size_t cuts[] = {2, 3, 31, 100, 301, 302, 700, 1000, 1439};
	double *v = malloc(N * sizeof(*v));
	struct series full = {.start_ms = 1700000000 * S, .res_ms = 5 * S, .v = v, .n = N};
	struct sim_step *st_full, *st_cut;
	size_t n_full, n_cut;
	struct sim_metrics m;
	double measured_vm_hours[2] = {0};

	assert_non_null(v);
	/* Two days of a daily wave with bursts, at 5 s, squeezed into two
	 * hours; a quiet stretch without data in the middle. */
	for (size_t i = 0; i < N; i++)
		v[i] = 6 + 5 * sin((double)i / 115.0) + ((i * 7919) % 97 < 9 ? 7 : 0);
	for (size_t i = 800; i < 830; i++)
		v[i] = NAN;
	f->sig.type = SIGNAL_UTILIZATION;
	f->sig.target = 70;
	f->sig.window_ms = 60 * S;
	f->sig.aggregation = AGG_AVG;
	f->g.behavior.scale_in.stabilization_ms = 120 * S;
	f->g.behavior.initialization_ms = 45 * S;
	f->prof.max = 40;
	for (int variant = 0; variant < 6; variant++) {
		int given = variant % 2;

		/* Then with a warm pool, a forecast and a lazy scale-in, for
		 * each horizon: the pool changes when instances are ready, and
		 * the horizon what the forecast looks at, never what it sees.
		 * The last two with a service level: the quantiles move by the
		 * samples already scored, never by the ones to come. */
		if (variant >= 2) {
			f->p.warm = (struct sim_warm_pool){.size = 3, .state = SIM_WARM_SAVED, .restore_ms = 5 * S};
			f->p.horizon = variant >= 4 ? SIM_HORIZON_WARM_RESTORE : SIM_HORIZON_MEASURED;
			f->fc.mode = FORECAST_ON;
			f->fc.quantile = 0.9;
			f->g.behavior.lazy_scale_in = true;
			f->g.behavior.boot_time_ms = 30 * S;
			f->fc.service_level = variant >= 4 ? 0.99 : 0;
		}
		f->p.initial = given ? 5 : -1;
		assert_int_equal(run_series(f, &full, &m, &st_full, &n_full), 0);
		assert_true(m.actions_out > 3 && m.actions_in > 3);
		if (variant >= 2)
			assert_true(m.warm_taken > 0);
		/* The restore as the horizon changes the run: it is not the
		 * measured one by another name. */
		if (variant >= 4)
			assert_true(fabs(m.vm_hours - measured_vm_hours[given]) > 0.1);
		else
			measured_vm_hours[given] = m.vm_hours;
		for (size_t c = 0; c < sizeof(cuts) / sizeof(cuts[0]); c++) {
			struct series part = full;
			int64_t cut_ms = full.start_ms + (int64_t)cuts[c] * full.res_ms;

			if (!given && cut_ms < full.start_ms + f->p.boot_ms)
				continue;
			part.n = cuts[c];
			assert_int_equal(run_series(f, &part, &m, &st_cut, &n_cut), 0);
			assert_true(n_cut <= n_full);
			for (size_t k = 0; k < n_cut; k++) {
				const struct sim_step *a = &st_full[k], *b = &st_cut[k];

				if (a->t_ms != b->t_ms || a->desired != b->desired || a->action != b->action ||
				    a->ready != b->ready || a->billed != b->billed)
					fail_msg("cut at %zu: step %zu differs (desired %d/%d, action %d/%d)", cuts[c],
						 k, a->desired, b->desired, a->action, b->action);
				/* Scored demand matches wherever the step ends
				 * before the cut. */
				if (b->t_ms + f->p.step_ms <= cut_ms && a->required != b->required)
					fail_msg("cut at %zu: step %zu demand differs", cuts[c], k);
			}
			/* Every step that starts before the cut was run. */
			assert_int_equal(n_cut, (size_t)((cut_ms - full.start_ms + f->p.step_ms - 1) / f->p.step_ms));
			free(st_cut);
		}
		free(st_full);
	}
	free(v);
}

/* A warm pool of 2 (paused, restored in 15 s) beside the hand-computed
 * run: the scale-out of 3 at 45 s takes both members, ready at 60 s, and
 * launches the third cold, ready at 75 s. Nothing else changes: the
 * members are not capacity and the engine never sees them. */
static void test_warm_pool_serves_scale_out(void **state)
{
	static const int ready[] = {1, 1, 1, 1, 3, 4, 4, 1, 1, 1};
	static const int billed[] = {1, 1, 1, 4, 4, 4, 4, 1, 1, 1};
	struct fixture *f = *state;
	struct sim_metrics m;
	struct sim_step *st;
	size_t n;

	f->p.warm = (struct sim_warm_pool){.size = 2, .state = SIM_WARM_PAUSED, .restore_ms = 15 * S};
	assert_int_equal(run(f, &m, &st, &n), 0);
	assert_int_equal(n, 10);
	for (size_t k = 0; k < n; k++) {
		assert_int_equal(st[k].ready, ready[k]);
		assert_int_equal(st[k].billed, billed[k]);
	}
	assert_int_equal(m.warm_taken, 2);
	assert_int_equal(m.cold_launches, 1);
	/* Still short for three steps (the decision comes at 45 s), but by
	 * 1 of 4 in the third, where it was 3 of 4. */
	assert_true(fabs(m.tau_u - 30) < 1e-9);
	assert_true(fabs(m.theta_u - 17.5) < 1e-9);
	/* Billed as before: an instance is paid from the scale-out on. */
	assert_true(fabs(m.vm_hours * 3600 - 330) < 1e-6);
	/* The oracle restores two of its three extra instances 15 s before
	 * 30 s and boots the third 30 s before: 150 + 2 x 75 + 90 s. */
	assert_true(fabs(m.oracle_vm_hours * 3600 - 390) < 1e-6);
	assert_int_equal(m.oracle_warm_taken, 2);
	free(st);

	/* A stopped member is refilled at once, but one member serves one
	 * instance of a scale-out: the other two launch cold. */
	f->p.warm = (struct sim_warm_pool){.size = 1, .state = SIM_WARM_STOPPED, .restore_ms = 15 * S};
	assert_int_equal(run(f, &m, &st, &n), 0);
	assert_int_equal(st[4].ready, 2);
	assert_int_equal(m.warm_taken, 1);
	assert_int_equal(m.cold_launches, 2);
	assert_int_equal(m.oracle_warm_taken, 1);
	free(st);
}

/* Members taken at 45 s are refilled in the background: a paused member
 * boots first, so with a 60 s boot they are back at 105 s, in time for
 * the second burst's scale-out; with a 75 s boot they are back only at
 * 120 s and that scale-out launches cold. */
static void test_warm_pool_refill(void **state)
{
	static const double twice[] = {1, 1, 3, 3, 1, 1, 3, 3, 1, 1, 1, 1};
	struct fixture *f = *state;
	struct sim_metrics m;
	struct sim_step *st;
	size_t n;

	f->t.v = (double *)twice;
	f->t.n = 12;
	f->p.initial = 1;
	f->p.warm = (struct sim_warm_pool){.size = 2, .state = SIM_WARM_PAUSED, .restore_ms = 15 * S};
	f->p.boot_ms = 60 * S;
	assert_int_equal(run(f, &m, &st, &n), 0);
	assert_int_equal(st[3].action, 1);
	assert_int_equal(st[5].action, -1);
	assert_int_equal(st[7].action, 1);
	assert_int_equal(st[4].ready, 3);
	assert_int_equal(st[8].ready, 3);
	assert_int_equal(m.warm_taken, 4);
	assert_int_equal(m.cold_launches, 0);
	free(st);

	f->p.boot_ms = 75 * S;
	assert_int_equal(run(f, &m, &st, &n), 0);
	assert_int_equal(st[7].action, 1);
	assert_int_equal(m.warm_taken, 2);
	assert_int_equal(m.cold_launches, 2);
	/* Cold from 105 s: ready at 180 s, after the trace. */
	assert_int_equal(st[8].ready, 1);
	assert_int_equal(st[11].ready, 1);
	free(st);

	/* A stopped member needs no boot to be refilled. */
	f->p.warm.state = SIM_WARM_STOPPED;
	assert_int_equal(run(f, &m, &st, &n), 0);
	assert_int_equal(m.warm_taken, 4);
	assert_int_equal(st[8].ready, 3);
	free(st);
}

/* However large, a pool that no scale-out draws on changes nothing the
 * group serves or pays: its members are neither ready nor billed. */
static void test_warm_pool_is_not_capacity(void **state)
{
	static const double flat[] = {2, 2, 2, 2, 2, 2, 2, 2};
	struct fixture *f = *state;
	struct sim_metrics m;
	struct sim_step *st;
	size_t n;

	f->t.v = (double *)flat;
	f->t.n = 8;
	f->p.warm = (struct sim_warm_pool){.size = 5, .state = SIM_WARM_PAUSED, .restore_ms = 15 * S};
	assert_int_equal(run(f, &m, &st, &n), 0);
	for (size_t k = 0; k < n; k++) {
		assert_int_equal(st[k].ready, 2);
		assert_int_equal(st[k].billed, 2);
		assert_int_equal(st[k].desired, 2);
		assert_int_equal(st[k].action, 0);
	}
	assert_true(fabs(m.vm_hours * 3600 - 2 * 120) < 1e-6);
	assert_true(fabs(m.oracle_vm_hours * 3600 - 2 * 120) < 1e-6);
	assert_true(fabs(m.warm_vm_hours * 3600 - 5 * 120) < 1e-6);
	assert_int_equal(m.peak_ready, 2);
	free(st);
}

/* Memory-hours of the hand-computed run at 1 GiB an instance: the billed
 * instances (22 instance-steps of 15 s: 330 s) and what the pool of 2
 * holds over the 150 s. Paused members hold memory all the time (when
 * available, and their refills while they boot); saved ones only while
 * their refill boots (45 s to 75 s); stopped ones never. */
static void test_warm_pool_memory_hours(void **state)
{
	static const struct {
		enum sim_warm_state state;
		double pool_s;
	} cases[] = {{SIM_WARM_PAUSED, 300}, {SIM_WARM_SAVED, 60}, {SIM_WARM_STOPPED, 0}};
	struct fixture *f = *state;
	struct sim_metrics m;

	f->p.instance_memory_mib = 1024;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		f->p.warm = (struct sim_warm_pool){.size = 2, .state = cases[i].state, .restore_ms = 15 * S};
		assert_int_equal(run(f, &m, NULL, NULL), 0);
		assert_true(fabs(m.warm_vm_hours * 3600 - 300) < 1e-6);
		assert_true(fabs(m.warm_memory_gib_hours * 3600 - cases[i].pool_s) < 1e-6);
		assert_true(fabs(m.memory_gib_hours * 3600 - (330 + cases[i].pool_s)) < 1e-6);
	}
	/* Without a pool, the billed instances' alone; at 2 GiB, twice. */
	f->p.warm.size = 0;
	f->p.instance_memory_mib = 2048;
	assert_int_equal(run(f, &m, NULL, NULL), 0);
	assert_true(fabs(m.memory_gib_hours * 3600 - 2 * 330) < 1e-6);
	assert_true(m.warm_vm_hours == 0 && m.warm_memory_gib_hours == 0);
}

static void test_warm_pool_bad_params(void **state)
{
	struct fixture *f = *state;
	struct sim_metrics m;
	enum sim_warm_state ws;

	/* A restore slower than a boot, a negative pool or restore. */
	f->p.warm = (struct sim_warm_pool){.size = 1, .restore_ms = 31 * S};
	assert_int_equal(run(f, &m, NULL, NULL), -EINVAL);
	f->p.warm = (struct sim_warm_pool){.size = -1};
	assert_int_equal(run(f, &m, NULL, NULL), -EINVAL);
	f->p.warm = (struct sim_warm_pool){.size = 1, .restore_ms = -1};
	assert_int_equal(run(f, &m, NULL, NULL), -EINVAL);
	f->p.warm = (struct sim_warm_pool){.size = 1, .state = (enum sim_warm_state)7};
	assert_int_equal(run(f, &m, NULL, NULL), -EINVAL);
	f->p.warm = (struct sim_warm_pool){0};
	f->p.instance_memory_mib = NAN;
	assert_int_equal(run(f, &m, NULL, NULL), -EINVAL);
	assert_int_equal(sim_warm_state_parse("saved", &ws), 0);
	assert_int_equal(ws, SIM_WARM_SAVED);
	assert_string_equal(sim_warm_state_name(ws), "saved");
	assert_int_equal(sim_warm_state_parse("hibernated", &ws), -EINVAL);
	assert_int_equal(sim_warm_default_restore_ms(SIM_WARM_PAUSED, 120 * S), 1 * S);
	assert_int_equal(sim_warm_default_restore_ms(SIM_WARM_SAVED, 120 * S), 5 * S);
	assert_int_equal(sim_warm_default_restore_ms(SIM_WARM_STOPPED, 120 * S), 120 * S);
}

static void test_bad_params(void **state)
{
	struct fixture *f = *state;
	struct sim_metrics m;

	f->p.capacity = 0;
	assert_int_equal(run(f, &m, NULL, NULL), -EINVAL);
	f->p.capacity = 1;
	f->p.step_ms = 0;
	assert_int_equal(run(f, &m, NULL, NULL), -EINVAL);
}

/* Writes `text` to a temporary file; its path in buf. */
static void temp_file(char *buf, size_t len, const char *text)
{
	const char *dir = getenv("TMPDIR");
	int fd;

	snprintf(buf, len, "%s/test-simulate-XXXXXX", dir && *dir ? dir : "/tmp");
	fd = mkstemp(buf);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* The agent's inputs hold the steps the daemon would hold, each for its
 * own reason: a pause at 30 s (every step it lasts says so) holds the
 * scale-out of 45 s until the resume
 * at 60 s; a partial observation from 90 s holds the scale-in of 105 s
 * until the full one at 120 s. */
static void test_agent_events(void **state)
{
	static const int action[] = {0, 0, 0, 0, 1, 0, 0, 0, -1, 0};
	static const enum hold_reason hold[] = {
		HOLD_ON_MISSING,       HOLD_SIGNALS_SAY_HOLD, HOLD_PAUSED,  HOLD_PAUSED, HOLD_NONE,
		HOLD_SIGNALS_SAY_HOLD, HOLD_SIGNALS_SAY_HOLD, HOLD_PARTIAL, HOLD_NONE,   HOLD_SIGNALS_SAY_HOLD,
	};
	struct fixture *f = *state;
	struct sim_agent_event *ev;
	struct sim_metrics m;
	struct sim_step *st;
	char path[256];
	size_t n, n_ev;

	temp_file(path, sizeof(path), "# the operator\n30 pause\n60 resume\n\n90 partial  # a host down\n120 full\n");
	assert_int_equal(sim_agent_events_load(path, &ev, &n_ev), 0);
	unlink(path);
	assert_int_equal(n_ev, 4);
	assert_int_equal(ev[0].at_ms, 30 * S);
	assert_int_equal(ev[0].kind, SIM_PAUSE);
	assert_int_equal(ev[3].kind, SIM_FULL);
	f->p.events = ev;
	f->p.n_events = n_ev;
	assert_int_equal(run(f, &m, &st, &n), 0);
	assert_int_equal(n, 10);
	for (size_t k = 0; k < n; k++) {
		assert_int_equal(st[k].action, action[k]);
		assert_int_equal(st[k].hold, hold[k]);
	}
	free(st);
	free(ev);

	temp_file(path, sizeof(path), "0 pin 3 forced\n5 in-flight out\n");
	assert_int_equal(sim_agent_events_load(path, &ev, &n_ev), 0);
	unlink(path);
	assert_int_equal(ev[0].kind, SIM_PIN);
	assert_int_equal(ev[0].count, 3);
	assert_true(ev[0].forced);
	assert_int_equal(ev[1].kind, SIM_IN_FLIGHT);
	assert_int_equal(ev[1].dir, DIR_OUT);
	free(ev);
	/* A bad line is refused with its number, never guessed. */
	static const char *const bad[] = {"10 stop\n", "10 pin\n", "10 pin 3 hard\n", "x pause\n",
					  "10 pause\n5 resume\n", "10 in-flight up\n", "10 pause now\n"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		temp_file(path, sizeof(path), bad[i]);
		assert_int_equal(sim_agent_events_load(path, &ev, &n_ev), -EINVAL);
		unlink(path);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_hand_computed_run, setup, teardown),
		cmocka_unit_test_setup_teardown(test_utilization_signal, setup, teardown),
		cmocka_unit_test_setup_teardown(test_utilization_window_over_scale_out, setup, teardown),
		cmocka_unit_test_setup_teardown(test_svg_plot, setup, teardown),
		cmocka_unit_test(test_svg_oracle_line),
		cmocka_unit_test(test_svg_keeps_dips),
		cmocka_unit_test(test_svg_empty_range),
		cmocka_unit_test_setup_teardown(test_gap_in_trace, setup, teardown),
		cmocka_unit_test_setup_teardown(test_partial_last_step, setup, teardown),
		cmocka_unit_test_setup_teardown(test_warmup, setup, teardown),
		cmocka_unit_test_setup_teardown(test_initial_given, setup, teardown),
		cmocka_unit_test_setup_teardown(test_decisions_do_not_see_the_future, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_params, setup, teardown),
		cmocka_unit_test_setup_teardown(test_warm_pool_serves_scale_out, setup, teardown),
		cmocka_unit_test_setup_teardown(test_warm_pool_refill, setup, teardown),
		cmocka_unit_test_setup_teardown(test_warm_pool_is_not_capacity, setup, teardown),
		cmocka_unit_test_setup_teardown(test_warm_pool_memory_hours, setup, teardown),
		cmocka_unit_test_setup_teardown(test_warm_pool_bad_params, setup, teardown),
		cmocka_unit_test_setup_teardown(test_agent_events, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
