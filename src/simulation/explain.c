/* `autoscaled explain`: what the engine would decide for one group, given the
 * current count and a value per signal, from a clean state (no history, no
 * cooldowns) or from a state file as the daemon writes it (--state). The
 * same engine_evaluate() the daemon runs, with the same inputs: each
 * --value becomes the one sample of that signal's window, taken at --at;
 * --partial, --in-flight and --host-room say what the daemon knows about
 * the driver; a
 * pause, a pin and an action in flight come from the state file. With
 * --save-state the new state is written, so that a sequence of evaluations
 * can be replayed one call after the other. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/engine.h"
#include "simulation/explain.h"
#include "config/schedule-tz.h"
#include "engine/schedule.h"
#include "state/state.h"

#define EXPLAIN_MAX_COUNT 1000000

struct explain_args {
	const char *config;
	const char *group;
	int current;
	int ready; /* -1: all of current */
	const char *at;
	char *value_arg[CONFIG_MAX_SIGNALS * 4];
	size_t n_values;
	const char *state;      /* --state FILE: start from it */
	const char *save_state; /* --save-state FILE: write the new state */
	bool partial;
	enum scale_direction in_flight;
	int host_room;          /* --host-room N, -1 when not given (hosts unbounded) */
};

static void usage(FILE *f)
{
	fprintf(f, "usage: autoscaled explain -c FILE --group NAME --current N [--ready N]\n"
		   "                          [--value SIGNAL=NUMBER]... [--at ISO8601]\n"
		   "                          [--state FILE] [--save-state FILE] [--partial] [--in-flight out|in]\n"
		   "                          [--host-room N]\n"
		   "Prints the decision record of one evaluation as JSON, from a clean state or\n"
		   "from a state file as the daemon writes it.\n");
}

static int parse_count(const char *opt, const char *s, int *ret)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end != '\0' || v < 0 || v > EXPLAIN_MAX_COUNT) {
		fprintf(stderr, "explain: %s '%s' is not a count between 0 and %d\n", opt, s, EXPLAIN_MAX_COUNT);
		return -EINVAL;
	}
	*ret = (int)v;
	return 0;
}

static int parse_args(int argc, char **argv, struct explain_args *a)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' }, { "group", required_argument, NULL, 'g' },
		{ "current", required_argument, NULL, 'n' }, { "ready", required_argument, NULL, 'r' },
		{ "value", required_argument, NULL, 'v' },   { "at", required_argument, NULL, 't' },
		{ "state", required_argument, NULL, 's' },   { "save-state", required_argument, NULL, 'S' },
		{ "partial", no_argument, NULL, 'p' },       { "in-flight", required_argument, NULL, 'i' },
		{ "host-room", required_argument, NULL, 'R' }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool have_current = false;
	int c;

	*a = (struct explain_args){ .current = -1, .ready = -1, .in_flight = DIR_NONE, .host_room = -1 };
	optind = 0; /* GNU getopt: start over, even if a caller parsed before */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+c:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			a->config = optarg;
			break;
		case 'g':
			a->group = optarg;
			break;
		case 'n':
			if (parse_count("--current", optarg, &a->current) < 0)
				return -EINVAL;
			have_current = true;
			break;
		case 'r':
			if (parse_count("--ready", optarg, &a->ready) < 0)
				return -EINVAL;
			break;
		case 'v':
			if (a->n_values == sizeof(a->value_arg) / sizeof(a->value_arg[0])) {
				fprintf(stderr, "explain: too many --value options\n");
				return -EINVAL;
			}
			a->value_arg[a->n_values++] = optarg;
			break;
		case 't':
			a->at = optarg;
			break;
		case 's':
			a->state = optarg;
			break;
		case 'S':
			a->save_state = optarg;
			break;
		case 'p':
			a->partial = true;
			break;
		case 'R':
			if (parse_count("--host-room", optarg, &a->host_room) < 0)
				return -EINVAL;
			break;
		case 'i':
			if (strcmp(optarg, "out") == 0) {
				a->in_flight = DIR_OUT;
			} else if (strcmp(optarg, "in") == 0) {
				a->in_flight = DIR_IN;
			} else {
				fprintf(stderr, "explain: --in-flight '%s' is not out or in\n", optarg);
				return -EINVAL;
			}
			break;
		case 'h':
			usage(stdout);
			return 1;
		default:
			fprintf(stderr, "explain: unknown or incomplete option '%s'\n", argv[optind - 1]);
			usage(stderr);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "explain: unexpected argument '%s'\n", argv[optind]);
		return -EINVAL;
	}
	if (!a->config || !a->group || !have_current) {
		fprintf(stderr, "explain: -c FILE, --group NAME and --current N are required\n");
		usage(stderr);
		return -EINVAL;
	}
	if (a->ready > a->current) {
		fprintf(stderr, "explain: --ready %d is more than --current %d\n", a->ready, a->current);
		return -EINVAL;
	}
	return 0;
}

/* Puts each --value SIGNAL=NUMBER into its signal's window at now_ms. */
static int fill_windows(const struct explain_args *a, const struct group_conf *g, struct window *w,
			int64_t now_ms)
{
	size_t i;

	for (i = 0; i < a->n_values; i++) {
		char name[256], *eq = strchr(a->value_arg[i], '='), *end;
		size_t len = eq ? (size_t)(eq - a->value_arg[i]) : 0;
		double v;
		int s;

		if (!eq || len == 0 || len >= sizeof(name)) {
			fprintf(stderr, "explain: --value '%s' is not SIGNAL=NUMBER\n", a->value_arg[i]);
			return -EINVAL;
		}
		memcpy(name, a->value_arg[i], len);
		name[len] = '\0';
		s = group_find_signal(g, name);
		if (s < 0) {
			fprintf(stderr, "explain: group '%s' has no signal '%s'\n", g->name, name);
			return -ENOENT;
		}
		errno = 0;
		v = strtod(eq + 1, &end);
		if (errno || end == eq + 1 || *end != '\0' || !isfinite(v)) {
			fprintf(stderr, "explain: value '%s' of signal '%s' is not a number\n", eq + 1, name);
			return -EINVAL;
		}
		if (window_newest(&w[s])) {
			fprintf(stderr, "explain: signal '%s' is given twice\n", name);
			return -EINVAL;
		}
		window_push(&w[s], now_ms, v);
	}
	return 0;
}

/* An action in flight in the state file, as the daemon settles it against
 * the observation (group_reconcile_in_flight): with --in-flight the
 * driver is still at it (the daemon's busy input); otherwise it is over and
 * counted for rate limits and cooldowns as far as --current shows it. */
static void settle_in_flight(const struct explain_args *a, struct group_state *st, struct observation *obs,
			     struct clock_now now)
{
	struct state_action act = st->in_flight;

	if (a->in_flight != DIR_NONE) {
		obs->in_flight = a->in_flight;
		obs->busy = true;
		return;
	}
	switch (state_reconcile(st, obs->current, true, now.mono_ms)) {
	case RECONCILE_DONE:
		engine_record_action(&st->engine, act.started_ms, act.from, act.to);
		break;
	case RECONCILE_STOPPED:
		if (obs->current != act.from)
			engine_record_action(&st->engine, act.started_ms, act.from, obs->current);
		break;
	default:
		break;
	}
}

/* Writes the state after the evaluation to `path` (the daemon's format). */
static int save_state(const char *path, const struct group_conf *g, const struct group_state *st,
		      struct clock_now now)
{
	cJSON *j = state_to_json(st, g->name, now, 0);
	char *text = j ? cJSON_Print(j) : NULL;
	FILE *f;
	int r = 0;

	cJSON_Delete(j);
	if (!text) {
		fprintf(stderr, "explain: out of memory\n");
		return -ENOMEM;
	}
	f = fopen(path, "we");
	if (!f || fprintf(f, "%s\n", text) < 0 || fflush(f) != 0) {
		r = -errno;
		fprintf(stderr, "explain: cannot write '%s': %s\n", path, strerror(errno));
	}
	if (f && fclose(f) != 0 && r == 0) {
		r = -errno;
		fprintf(stderr, "explain: cannot write '%s': %s\n", path, strerror(errno));
	}
	free(text);
	return r;
}

/* Says in the record where the evaluation started: from a clean state the
 * stabilization windows, rate limits and cooldowns have no history, so a
 * scale-in the running daemon would hold for its window shows as done. */
static bool annotate_start(cJSON *json, const struct explain_args *a)
{
	const char *sentence = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(json, "explanation"));
	char buf[1200];

	if (!cJSON_AddStringToObject(json, "start", a->state ? "state_file" : "empty_state"))
		return false;
	if (a->state || !sentence)
		return true;
	snprintf(buf, sizeof(buf),
		 "starting from an empty state (no stabilization history, rate-limit events or cooldowns; "
		 "see --state): %s",
		 sentence);
	return cJSON_ReplaceItemInObjectCaseSensitive(json, "explanation", cJSON_CreateString(buf));
}

/* Evaluates and prints. The first `ready` instances are running and past
 * their initialization; the others are still provisioning. */
static int explain_group(const struct explain_args *a, const struct group_conf *g, int64_t now_ms)
{
	struct window w[CONFIG_MAX_SIGNALS];
	struct engine_signal_input in[CONFIG_MAX_SIGNALS];
	struct observation obs = { .current = a->current, .stable = true };
	struct clock_now now = clock_virtual(now_ms); /* one instant: both clocks read the same */
	struct instance_obs *inst = NULL;
	struct group_state st;
	struct decision d;
	char why[256];
	cJSON *json = NULL;
	char *text = NULL;
	size_t i;
	int r = 1;

	memset(w, 0, sizeof(w));
	for (i = 0; i < g->n_signals; i++) {
		if (window_init(&w[i], 8) < 0) {
			fprintf(stderr, "explain: out of memory\n");
			goto out;
		}
		in[i] = (struct engine_signal_input){ .window = &w[i], .error = "no --value given", .n_sampled = -1 };
	}
	if (fill_windows(a, g, w, now_ms) < 0) {
		r = 2;
		goto out;
	}
	if (a->ready >= 0 && a->ready < a->current) {
		inst = calloc((size_t)a->current, sizeof(*inst));
		if (!inst) {
			fprintf(stderr, "explain: out of memory\n");
			goto out;
		}
		for (i = 0; i < (size_t)a->current; i++)
			inst[i] = (struct instance_obs){ .id = "instance",
							 .state = i < (size_t)a->ready ? INSTANCE_RUNNING
										       : INSTANCE_PROVISIONING,
							 .ready = i < (size_t)a->ready };
		obs.instances = inst;
		obs.n_instances = (size_t)a->current;
	}
	state_init(&st);
	if (a->state && state_read_file(a->state, g, now, &st, why, sizeof(why)) < 0) {
		fprintf(stderr, "explain: cannot use '%s' as the state of group '%s': %s\n", a->state, g->name, why);
		r = 2;
		goto out;
	}
	state_expire(&st, now_ms);
	settle_in_flight(a, &st, &obs, now);
	obs.partial = a->partial;
	obs.host_bounded = a->host_room >= 0;
	obs.host_room = a->host_room;
	obs.paused = st.pause.active;
	obs.pinned = st.pin.active;
	obs.pin_count = st.pin.count;
	obs.pin_forced = st.pin.forced;
	if (engine_evaluate(g, now, &obs, in, &st.engine, &st.engine, &d) < 0) {
		fprintf(stderr, "explain: group '%s' cannot be evaluated\n", g->name);
		goto out;
	}
	/* The daemon writes the action it starts into its state before the
	 * driver call, and the next evaluation settles it against what is
	 * observed (settle_in_flight): a replay of a sequence, one explain
	 * after the other, sees it the same way. */
	if (d.action != DIR_NONE)
		st.in_flight = (struct state_action){ .direction = d.action,
						      .from = d.current,
						      .to = d.desired,
						      .started_ms = now.mono_ms,
						      .deadline_ms = now.mono_ms + STATE_IN_FLIGHT_DEADLINE_MS };
	if (a->save_state && save_state(a->save_state, g, &st, now) < 0)
		goto out;
	json = decision_to_json(&d, g);
	if (json && !annotate_start(json, a)) {
		cJSON_Delete(json);
		json = NULL;
	}
	text = json ? cJSON_Print(json) : NULL;
	if (!text) {
		fprintf(stderr, "explain: out of memory\n");
		goto out;
	}
	printf("%s\n", text);
	fflush(stdout);
	r = 0;
out:
	free(text);
	cJSON_Delete(json);
	free(inst);
	for (i = 0; i < g->n_signals; i++)
		window_destroy(&w[i]);
	return r;
}

/* --at: an ISO 8601 date and time, with the fraction of a second the
 * decision records carry (2026-11-28T10:00:00.250Z), so that a record's own
 * time can be replayed to the millisecond. */
static int parse_at(const char *s, int64_t *ret_ms)
{
	const char *dot = strchr(s, '.');
	char buf[64];
	size_t n, digits;
	int64_t frac = 0, scale = 1000;

	if (!dot)
		return schedule_parse_datetime(s, NULL, ret_ms);
	n = (size_t)(dot - s);
	digits = strspn(dot + 1, "0123456789");
	if (digits == 0 || digits > 3 || n + strlen(dot + 1 + digits) >= sizeof(buf))
		return -EINVAL;
	for (size_t i = 0; i < digits; i++) {
		scale /= 10;
		frac += (dot[1 + i] - '0') * scale;
	}
	memcpy(buf, s, n);
	strcpy(buf + n, dot + 1 + digits);
	if (schedule_parse_datetime(buf, NULL, ret_ms) < 0)
		return -EINVAL;
	*ret_ms += frac;
	return 0;
}

int explain_main(int argc, char **argv)
{
	struct explain_args a;
	struct config *cfg = NULL;
	struct config_errors errs = { 0 };
	const struct group_conf *g;
	int64_t now_ms;
	size_t i;
	int r;

	r = parse_args(argc, argv, &a);
	if (r != 0)
		return r > 0 ? 0 : 2;
	if (a.at) {
		if (parse_at(a.at, &now_ms) < 0) {
			fprintf(stderr, "explain: --at '%s' is not an ISO 8601 date and time\n", a.at);
			return 2;
		}
	} else {
		now_ms = clock_wall_ms();
	}
	r = config_load(a.config, &cfg, &errs);
	if (r < 0) {
		for (i = 0; i < errs.n; i++)
			fprintf(stderr, "%s\n", errs.v[i]);
		if (errs.n == 0)
			fprintf(stderr, "explain: cannot read '%s': %s\n", a.config, strerror(-r));
		config_errors_clear(&errs);
		return 1;
	}
	g = config_find_group(cfg, a.group);
	if (!g) {
		fprintf(stderr, "explain: no group '%s' in '%s'\n", a.group, a.config);
		config_free(cfg);
		return 2;
	}
	r = explain_group(&a, g, now_ms);
	config_free(cfg);
	return r;
}
