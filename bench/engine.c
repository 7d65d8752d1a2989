/* Engine benchmark: evaluations per second on one core, without JSON.
 *
 * Each group has 3 signals (CPU utilization, queue depth, requests/s), 3
 * profiles (default, a Mon-Fri business-hours recurrence in Europe/Berlin,
 * a fixed-date sale) with 4 rules each, and windows holding 20 minutes of
 * samples at 15 s. Two runs: one group evaluated again and again, and a
 * cycle over 10,000 such groups, as the daemon's timer would run them. Only
 * engine_evaluate() is timed; feeding the windows is not. Each run has a
 * twin with a forecast on every signal: there the forecasters' work of an
 * evaluation (learning the newest sample, predicting one boot time ahead
 * and the peak over the lazy scale-in's keep time, engine_keep_ms()) is
 * timed with it, as the daemon does it once per evaluation. A run and its
 * twin take turns, cycle by cycle, so that the ratio of their times (the
 * last line) holds on a machine whose speed drifts.
 *
 * Usage: bench/engine [GROUPS [CYCLES]] */
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/engine.h"
#include "engine/forecast.h"

#define N_SIGNALS 3
#define N_PROFILES 3
#define N_RULES 4
#define STEP_MS (15 * MS_PER_SEC)

struct bench_group {
	struct group_conf g;
	struct signal_conf sig[N_SIGNALS];
	struct profile_conf prof[N_PROFILES];
	struct rule_conf rules[N_PROFILES][N_RULES];
	struct window win[N_SIGNALS];
	struct engine_signal_input in[N_SIGNALS];
	struct engine_state st;
	struct forecast *fc[N_SIGNALS]; /* NULL: no forecast */
	int current;
};

#define BOOT_MS (120 * MS_PER_SEC)

static GTimeZone *berlin;

static void setup_rules(struct rule_conf *r, const struct signal_conf *sig)
{
	static const struct {
		int s;
		enum rule_operator op;
		double threshold;
		enum scale_direction dir;
		enum change_type change;
		double value;
	} spec[N_RULES] = {
		{ 0, OP_GT, 80, DIR_OUT, CHANGE_COUNT, 2 },
		{ 1, OP_GT, 200, DIR_OUT, CHANGE_PERCENT, 50 },
		{ 0, OP_LT, 30, DIR_IN, CHANGE_COUNT, 1 },
		{ 2, OP_LT, 50, DIR_IN, CHANGE_PERCENT, 20 },
	};
	int i;

	for (i = 0; i < N_RULES; i++)
		r[i] = (struct rule_conf){ .signal = sig[spec[i].s].name, .signal_index = spec[i].s,
					   .window_ms = 300 * MS_PER_SEC, .statistic = AGG_AVG,
					   .op = spec[i].op, .threshold = spec[i].threshold,
					   .direction = spec[i].dir, .change = spec[i].change,
					   .value = spec[i].value, .cooldown_ms = 300 * MS_PER_SEC };
}

static void setup_group(struct bench_group *b, int64_t now)
{
	static const struct rate_policy out_policies[] = { { POLICY_INSTANCES, 4, STEP_MS },
							   { POLICY_PERCENT, 100, STEP_MS } };
	static const struct rate_policy in_policies[] = { { POLICY_PERCENT, 100, STEP_MS } };
	struct behavior_conf *beh = &b->g.behavior;
	int i;

	memset(b, 0, sizeof(*b));
	b->g.name = "bench";
	b->g.signals = b->sig;
	b->g.n_signals = N_SIGNALS;
	b->g.profiles = b->prof;
	b->g.n_profiles = N_PROFILES;
	b->sig[0] = (struct signal_conf){ .name = "cpu", .type = SIGNAL_UTILIZATION, .target = 60 };
	b->sig[1] = (struct signal_conf){ .name = "queue", .type = SIGNAL_AVERAGE, .target = 20 };
	b->sig[2] = (struct signal_conf){ .name = "rps", .type = SIGNAL_AVERAGE, .target = 100 };
	for (i = 0; i < N_SIGNALS; i++) {
		b->sig[i].window_ms = 60 * MS_PER_SEC;
		b->sig[i].aggregation = i == 1 ? AGG_LAST : AGG_AVG;
		b->sig[i].tolerance = 0.1;
		b->sig[i].staleness_ms = 45 * MS_PER_SEC;
		if (window_init(&b->win[i], 80) < 0)
			abort();
		b->in[i] = (struct engine_signal_input){ .window = &b->win[i], .n_sampled = -1 };
	}
	/* The sale is in the future: the lookup still walks past it. */
	b->prof[0] = (struct profile_conf){ .name = "sale", .kind = PROFILE_FIXED, .min = 10, .max = 200,
					    .def = 10, .start_ms = now + 86400 * 30 * MS_PER_SEC,
					    .end_ms = now + 86400 * 31 * MS_PER_SEC };
	b->prof[1] = (struct profile_conf){ .name = "business", .kind = PROFILE_RECURRENCE, .min = 4, .max = 100,
					    .def = 4, .days = 0x1f, .start_minute = 8 * 60, .end_minute = 19 * 60,
					    .timezone = "Europe/Berlin", .tz = berlin };
	b->prof[2] = (struct profile_conf){ .name = "default", .kind = PROFILE_DEFAULT, .min = 2, .max = 50,
					    .def = 2 };
	for (i = 0; i < N_PROFILES; i++) {
		setup_rules(b->rules[i], b->sig);
		b->prof[i].rules = b->rules[i];
		b->prof[i].n_rules = N_RULES;
	}
	beh->scale_out = (struct direction_behavior){ .stabilization_ms = 0, .select = SELECT_MAX, .policies = out_policies,
						      .n_policies = 2 };
	beh->scale_in = (struct direction_behavior){ .stabilization_ms = 300 * MS_PER_SEC, .select = SELECT_MAX,
						     .policies = in_policies, .n_policies = 1 };
	beh->initialization_ms = 60 * MS_PER_SEC;
	engine_state_init(&b->st);
	b->current = 4;
}

/* A daily load curve with some noise, so decisions go both ways. */
static void feed(struct bench_group *b, int64_t now, unsigned *seed)
{
	double phase = (double)(now % (86400 * MS_PER_SEC)) / (86400.0 * MS_PER_SEC);
	double load = 400 * (1.2 + (phase < 0.5 ? phase : 1 - phase)) + rand_r(seed) % 100;

	window_push(&b->win[0], now, load / (b->current > 0 ? b->current : 1));
	window_push(&b->win[1], now, load / 4 + rand_r(seed) % 50);
	window_push(&b->win[2], now, load * 2);
}

static double seconds(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

/* Runs `cycles` evaluation rounds over n groups; returns the seconds they
 * took. */
static double run(struct bench_group *groups, size_t n, int cycles, int64_t *now, long *actions, unsigned *seed)
{
	struct observation obs = { .stable = true };
	struct decision d;
	struct timespec t0, t1;
	double busy = 0;
	/* As the daemon does (forecasts_feed()): see forecast_prefetch(). */
	bool prefetch = n * N_SIGNALS >= FORECAST_PREFETCH_MIN;
	size_t i;
	int c;

	for (c = 0; c < cycles; c++) {
		*now += STEP_MS;
		for (i = 0; i < n; i++)
			feed(&groups[i], *now, seed);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (i = 0; i < n; i++) {
			struct bench_group *b = &groups[i];
			/* Once a group, as the daemon reads it (forecasts_feed()). */
			int64_t keep = engine_keep_ms(&b->g, BOOT_MS);

			for (size_t k = 0; prefetch && k < N_SIGNALS; k++)
				if (b->fc[k])
					forecast_prefetch(b->fc[k], *now);
			for (size_t k = 0; k < N_SIGNALS; k++) {
				const struct sample *smp = window_newest(&b->win[k]);

				if (!b->fc[k])
					continue;
				if (forecast_update(b->fc[k], *now, smp->v * (k == 0 ? b->current : 1), BOOT_MS,
						    keep) == 0)
					engine_forecast_service(&b->g, k, b->fc[k], *now, smp->v, b->current);
				b->in[k].forecast_valid = forecast_for_engine(b->fc[k], *now, BOOT_MS, keep,
									      &b->in[k].forecast_total,
									      &b->in[k].forecast_keep_total) == 0;
			}
			obs.current = b->current;
			if (engine_evaluate(&b->g, clock_virtual(*now), &obs, b->in, &b->st, &b->st, &d) < 0)
				abort();
			if (d.desired != b->current) {
				engine_record_action(&b->st, *now, b->current, d.desired);
				b->current = d.desired;
				(*actions)++;
			}
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		busy += seconds(&t0, &t1);
	}
	return busy;
}

/* Puts every group back where each timed run starts: twenty minutes of
 * history before START in its windows (full windows), a fresh engine state
 * and 4 instances, and its forecasters (if any) as LEARNT left them. Each
 * run moves the clock forward from START, so without this a later run
 * would find samples from the earlier run's future in its windows, which
 * every aggregation walks past, and forecasters that refuse its samples
 * as older than their newest. */
static void start_run(struct bench_group *groups, size_t n, int64_t start, const struct forecast *learnt)
{
	unsigned seed = 7;
	int64_t now;

	for (size_t i = 0; i < n; i++) {
		struct bench_group *b = &groups[i];

		for (size_t k = 0; k < N_SIGNALS; k++) {
			window_clear(&b->win[k]);
			if (b->fc[k])
				*b->fc[k] = *learnt;
		}
		engine_state_init(&b->st);
		b->current = 4;
		for (now = start - 80 * STEP_MS; now < start; now += STEP_MS)
			feed(b, now, &seed);
	}
}

/* One configuration's groups, clock and tallies: the runs without and
 * with forecasts have one each, and take turns (compare()). */
struct bench_side {
	struct bench_group *groups;
	int64_t now;
	long actions;
	unsigned seed; /* of the load's noise */
	double busy;
};

/* Runs CYCLES rounds over N groups of each side, a slice of rounds of one
 * and then of the other, from where each run starts (start_run()). The
 * two sides are timed in turns, not one after the other, so that a
 * machine whose speed drifts (a shared one, whose neighbours come and go)
 * slows both alike, and the ratio between them holds. */
static void compare(struct bench_side *sides, size_t n, int cycles, int slice, int64_t start,
		    const struct forecast *learnt)
{
	int done;

	for (int k = 0; k < 2; k++) {
		start_run(sides[k].groups, n, start, k == 1 ? learnt : NULL);
		sides[k].now = start;
		sides[k].actions = 0;
		sides[k].seed = 42;
		sides[k].busy = 0;
	}
	for (done = 0; done < cycles; done += slice) {
		int c = cycles - done < slice ? cycles - done : slice;

		for (int k = 0; k < 2; k++)
			sides[k].busy += run(sides[k].groups, n, c, &sides[k].now, &sides[k].actions, &sides[k].seed);
	}
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 10000, i, j;
	int cycles = argc > 2 ? atoi(argv[2]) : 20;
	/* Monday 2026-11-23 09:00 UTC: inside the business-hours profile. */
	int64_t start = INT64_C(1795424400) * MS_PER_SEC, now;
	struct bench_side sides[2] = {{0}};
	struct bench_group *fgroups;
	struct forecast learnt;
	/* Every forecast signal's settings. */
	static struct forecast_conf on = { .mode = FORECAST_ON, .quantile = 0.99, .service_level = 0.99 };
	double one, many, rate;

	if (n == 0 || cycles <= 0) {
		fprintf(stderr, "usage: bench/engine [GROUPS [CYCLES]]\n");
		return 2;
	}
	berlin = g_time_zone_new_identifier("Europe/Berlin");
	if (!berlin) {
		fprintf(stderr, "bench: time zone 'Europe/Berlin' not found (install tzdata)\n");
		return 1;
	}
	for (int k = 0; k < 2; k++) {
		sides[k].groups = calloc(n, sizeof(*sides[k].groups));
		if (!sides[k].groups) {
			fprintf(stderr, "bench: out of memory for %zu groups\n", n);
			return 1;
		}
		for (i = 0; i < n; i++)
			setup_group(&sides[k].groups[i], start);
	}

	/* The second side forecasts: a week of history first, so the
	 * profiles are full; every forecaster starts each run from this
	 * one. */
	fgroups = sides[1].groups;
	forecast_init(&learnt, 0.99);
	forecast_set_service(&learnt, 0.99);
	for (now = start - 7 * 86400 * MS_PER_SEC; now < start - 80 * STEP_MS; now += 60 * MS_PER_SEC)
		forecast_update(&learnt, now, 400 + (double)(now / 60000 % 1440), BOOT_MS,
				engine_keep_ms(&fgroups[0].g, BOOT_MS));
	for (i = 0; i < n; i++) {
		for (j = 0; j < N_SIGNALS; j++) {
			fgroups[i].sig[j].forecast = &on;
			fgroups[i].fc[j] = malloc(sizeof(*fgroups[i].fc[j]));
			if (!fgroups[i].fc[j]) {
				fprintf(stderr, "bench: out of memory for the forecasters\n");
				return 1;
			}
		}
	}

	/* One group evaluated again and again, in slices of 1,000. */
	compare(sides, 1, 200000, 1000, start, &learnt);
	one = sides[1].busy / sides[0].busy;
	rate = 200000 / sides[0].busy;
	printf("one group:       %.0f evaluations/s (%.2f us each), %ld actions\n", rate, 1e6 / rate,
	       sides[0].actions);
	rate = 200000 / sides[1].busy;
	printf("one group, forecasts: %.0f evaluations/s (%.2f us each), %ld actions\n", rate, 1e6 / rate,
	       sides[1].actions);
	/* Every group in turn, as the daemon's timer runs them, one cycle of
	 * each side at a time. */
	compare(sides, n, cycles, 1, start, &learnt);
	many = sides[1].busy / sides[0].busy;
	for (int k = 0; k < 2; k++) {
		rate = (double)n * cycles / sides[k].busy;
		printf("%zu groups%s: %.0f evaluations/s (%.2f us each, %.1f ms a cycle), %ld actions\n", n,
		       k ? ", forecasts" : "", rate, 1e6 / rate, 1e3 * n / rate, sides[k].actions);
	}
	/* What the forecasters add: the time of an evaluation with them over
	 * the time without. */
	printf("forecasts: %.2fx the time of an evaluation (one group), %.2fx (%zu groups)\n", one, many, n);
	for (i = 0; i < n; i++)
		for (j = 0; j < N_SIGNALS; j++)
			free(fgroups[i].fc[j]);
	for (int k = 0; k < 2; k++) {
		for (i = 0; i < n; i++)
			for (j = 0; j < N_SIGNALS; j++)
				window_destroy(&sides[k].groups[i].win[j]);
		free(sides[k].groups);
	}
	g_time_zone_unref(berlin);
	return 0;
}
