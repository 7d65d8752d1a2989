/* `autoscaled simulate`: the command line, the table, JSON and CSV output
 * around simulate_run() (simulate.c). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/schedule-tz.h"
#include "log/log.h"
#include "simulation/simulate.h"
#include "simulation/trace.h"

static void usage(FILE *f)
{
	fprintf(f, "Usage: autoscaled simulate -c FILE --group NAME --trace FILE --format FORMAT\n"
		   "                          [--boot-delay S] [--capacity-per-instance X] [--step S]\n"
		   "                          [--billing-granularity S] [--billing-minimum S]\n"
		   "                          [--warmup S] [--initial-instances N] [--peak-instances N]\n"
		   "                          [--json] [--csv OUT] [--svg OUT] [--agent-inputs FILE]\n"
		   "                          [--tz ZONE] [--from TIME] [--to TIME] [--title TEXT]\n"
		   "                          [--plot-max N] [--warm-pool N] [--warm-state STATE]\n"
		   "                          [--restore-delay S] [--instance-memory MIB]\n"
		   "                          [--horizon measured|boot-time|warm-restore]\n"
		   "\n"
		   "Replays a load trace through the group's policy on a virtual clock and\n"
		   "reports cost and service against the perfect-foresight oracle.\n"
		   "FORMAT is nasa, azure-llm, bitbrains, csv (time,value), swf (Standard\n"
		   "Workload Format) or requests (time,duration); the file may be gzip, bzip2\n"
		   "or xz compressed. Durations take the config's units (90, 90s, 5m, 1h, 7d).\n"
		   "--warmup feeds the trace's first S to the policy without scoring it.\n"
		   "--peak-instances N sets the capacity per instance so that the trace's\n"
		   "busiest step needs N instances (a first pass over the whole trace).\n"
		   "Defaults: boot delay 60s, capacity 1, step = the group's interval, billing\n"
		   "granularity 1s, billing minimum 60s, no warm-up, initial instances sized\n"
		   "from the first boot delay of demand.\n"
		   "--agent-inputs FILE: \"SECONDS pause|resume|pin N [forced]|unpin|partial|full|\n"
		   "in-flight out|in|none\" lines, the daemon's own inputs from that time on.\n"
		   "--tz ZONE: the plot's time axis in an IANA zone (default UTC); --from and\n"
		   "--to: the plot shows only that range (ISO 8601, \"2026-11-27T08:00\", in\n"
		   "ZONE unless an offset is given); the run and its metrics cover the trace.\n"
		   "--title TEXT heads the plot; --plot-max N puts N instances at its top, so\n"
		   "plots of several runs share one scale.\n"
		   "--warm-pool N keeps N stand-by instances beside the group: a scale-out takes\n"
		   "them first (ready one restore delay later) and each is refilled in the\n"
		   "background. --warm-state paused|saved|stopped (default paused) sets what\n"
		   "they hold and the default --restore-delay: 1s, 5s, or the boot delay.\n"
		   "--instance-memory MIB (default 2048) prices memory-hours.\n"
		   "--horizon: what the forecasts look ahead, and the cost of a relaunch: as\n"
		   "the daemon measures its own scale-outs (default), the group's boot_time,\n"
		   "or the restore delay while a warm member is available.\n");
}

/* How the capacity per instance was set: given, or from the peak. */
struct capacity_setup {
	int peak_instances; /* 0: given */
	double peak_demand;
};

/* The warm pool as the command line gives it. */
struct warm_flags {
	int size;                /* -1: not given */
	const char *state;       /* NULL: not given */
	int64_t restore_ms;      /* -1: not given */
};

/* The simulation's warm pool: the group's own warm_pool block (a libvirt
 * group's, autoscaled.conf(5)) unless the command line gives one, the
 * flags overriding the block's size and state; the restore delay defaults
 * by state. 0, or -EINVAL after saying what is wrong. */
static int warm_pool_from_flags(const struct warm_flags *f, const struct warm_pool_conf *conf, int64_t boot_ms,
				struct sim_warm_pool *ret)
{
	static const enum sim_warm_state conf_states[] = {
		[WARM_PAUSED] = SIM_WARM_PAUSED,
		[WARM_SAVED] = SIM_WARM_SAVED,
		[WARM_STOPPED] = SIM_WARM_STOPPED,
	};
	bool from_conf = f->size < 0 && conf->size > 0;
	struct sim_warm_pool w = {.size = f->size > 0 ? f->size : 0, .state = SIM_WARM_PAUSED};

	/* The block's state stays when the command line only resizes it. */
	if (conf->size > 0)
		w.state = conf_states[conf->state];
	if (from_conf)
		w.size = conf->size;
	/* --warm-pool 0 with a state is a pool of none, as a script sweeping
	 * sizes gives it; a state with no pool at all is a mistake. */
	if (f->size < 0 && !from_conf && (f->state || f->restore_ms >= 0)) {
		log_warnx("simulate: --warm-state and --restore-delay describe a warm pool: give --warm-pool N");
		return -EINVAL;
	}
	if (f->state && sim_warm_state_parse(f->state, &w.state) < 0) {
		log_warnx("simulate: --warm-state '%s' is not paused, saved or stopped", f->state);
		return -EINVAL;
	}
	w.restore_ms = f->restore_ms >= 0 ? f->restore_ms : sim_warm_default_restore_ms(w.state, boot_ms);
	if (w.size > 0 && w.restore_ms > boot_ms) {
		log_warnx("simulate: --restore-delay %.3gs is longer than the boot delay %.3gs: the pool would only "
			  "delay scale-outs",
			  (double)w.restore_ms / 1000.0, (double)boot_ms / 1000.0);
		return -EINVAL;
	}
	*ret = w;
	return 0;
}

static cJSON *metrics_json(const struct sim_metrics *m, const char *group, const char *trace_path,
			   const struct sim_params *p, const struct capacity_setup *cs)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "group", group);
	cJSON_AddStringToObject(o, "trace", trace_path);
	cJSON_AddNumberToObject(o, "boot_delay_s", (double)p->boot_ms / 1000.0);
	cJSON_AddNumberToObject(o, "capacity_per_instance", p->capacity);
	if (cs->peak_instances > 0) {
		cJSON_AddNumberToObject(o, "peak_instances", cs->peak_instances);
		cJSON_AddNumberToObject(o, "peak_demand", cs->peak_demand);
	}
	cJSON_AddNumberToObject(o, "step_s", (double)p->step_ms / 1000.0);
	cJSON_AddNumberToObject(o, "billing_granularity_s", (double)p->billing_granularity_ms / 1000.0);
	cJSON_AddNumberToObject(o, "billing_minimum_s", (double)p->billing_minimum_ms / 1000.0);
	cJSON_AddNumberToObject(o, "warmup_s", (double)p->warmup_ms / 1000.0);
	cJSON_AddNumberToObject(o, "warmup_steps", (double)m->warmup_steps);
	cJSON_AddNumberToObject(o, "initial_instances", m->initial);
	cJSON_AddBoolToObject(o, "initial_instances_given", p->initial >= 0);
	cJSON_AddNumberToObject(o, "start_ms", (double)m->start_ms);
	cJSON_AddNumberToObject(o, "scored_from_ms", (double)m->scored_from_ms);
	cJSON_AddNumberToObject(o, "hours", m->hours);
	cJSON_AddNumberToObject(o, "steps", (double)m->steps);
	cJSON_AddNumberToObject(o, "vm_hours", m->vm_hours);
	cJSON_AddNumberToObject(o, "oracle_vm_hours", m->oracle_vm_hours);
	cJSON_AddNumberToObject(o, "cost_ratio", m->cost_ratio);
	cJSON_AddNumberToObject(o, "theta_u", m->theta_u);
	cJSON_AddNumberToObject(o, "theta_o", m->theta_o);
	cJSON_AddNumberToObject(o, "tau_u", m->tau_u);
	cJSON_AddNumberToObject(o, "tau_o", m->tau_o);
	cJSON_AddNumberToObject(o, "jitter", m->jitter);
	cJSON_AddNumberToObject(o, "unserved_fraction", m->unserved_fraction);
	cJSON_AddNumberToObject(o, "actions_out", m->actions_out);
	cJSON_AddNumberToObject(o, "actions_in", m->actions_in);
	cJSON_AddNumberToObject(o, "reversals", m->reversals);
	cJSON_AddNumberToObject(o, "peak_ready", m->peak_ready);
	cJSON_AddNumberToObject(o, "instance_memory_mib", p->instance_memory_mib);
	cJSON_AddNumberToObject(o, "memory_gib_hours", m->memory_gib_hours);
	cJSON_AddNumberToObject(o, "warm_pool", p->warm.size);
	if (p->warm.size > 0) {
		cJSON_AddStringToObject(o, "warm_state", sim_warm_state_name(p->warm.state));
		cJSON_AddNumberToObject(o, "restore_delay_s", (double)p->warm.restore_ms / 1000.0);
	}
	cJSON_AddNumberToObject(o, "warm_vm_hours", m->warm_vm_hours);
	cJSON_AddNumberToObject(o, "warm_memory_gib_hours", m->warm_memory_gib_hours);
	cJSON_AddNumberToObject(o, "warm_taken", m->warm_taken);
	cJSON_AddNumberToObject(o, "cold_launches", m->cold_launches);
	cJSON_AddNumberToObject(o, "oracle_warm_taken", (double)m->oracle_warm_taken);
	cJSON_AddStringToObject(o, "horizon", sim_horizon_name(p->horizon));
	return o;
}

static void print_table(FILE *f, const struct sim_metrics *m, const char *group, const struct sim_params *p,
			const struct capacity_setup *cs)
{
	fprintf(f, "group              %s\n", group);
	if (cs->peak_instances > 0)
		fprintf(f, "capacity           %.6g per instance (peak step %.6g / %d instances)\n", p->capacity,
			cs->peak_demand, cs->peak_instances);
	fprintf(f, "initial_instances  %d (%s)\n", m->initial,
		p->initial >= 0 ? "given" : "sized from the first boot delay of demand");
	if (m->warmup_steps > 0)
		fprintf(f, "warm-up            %zu steps (%.1f h), not scored\n", m->warmup_steps,
			(double)(m->scored_from_ms - m->start_ms) / 3.6e6);
	fprintf(f, "simulated          %.1f h in %zu steps\n", m->hours, m->steps);
	fprintf(f, "vm_hours           %.2f\n", m->vm_hours);
	fprintf(f, "oracle_vm_hours    %.2f\n", m->oracle_vm_hours);
	fprintf(f, "cost_ratio         %.3f\n", m->cost_ratio);
	fprintf(f, "theta_u            %.2f %%   (under-provisioning accuracy)\n", m->theta_u);
	fprintf(f, "theta_o            %.2f %%   (over-provisioning accuracy)\n", m->theta_o);
	fprintf(f, "tau_u              %.2f %%   (time under-provisioned)\n", m->tau_u);
	fprintf(f, "tau_o              %.2f %%   (time over-provisioned)\n", m->tau_o);
	fprintf(f, "jitter             %.2f /h\n", m->jitter);
	fprintf(f, "unserved_fraction  %.4f\n", m->unserved_fraction);
	fprintf(f, "actions_out        %d\n", m->actions_out);
	fprintf(f, "actions_in         %d\n", m->actions_in);
	fprintf(f, "reversals          %d\n", m->reversals);
	fprintf(f, "peak_ready         %d\n", m->peak_ready);
	fprintf(f, "memory_gib_hours   %.2f   (%.0f MiB per instance)\n", m->memory_gib_hours, p->instance_memory_mib);
	if (p->warm.size > 0) {
		fprintf(f, "warm_pool          %d %s, restore %.3g s\n", p->warm.size, sim_warm_state_name(p->warm.state),
			(double)p->warm.restore_ms / 1000.0);
		fprintf(f, "warm_vm_hours      %.2f   (stand-by, not capacity)\n", m->warm_vm_hours);
		fprintf(f, "warm_memory_gib_h  %.2f   (held by the pool)\n", m->warm_memory_gib_hours);
		fprintf(f, "warm_taken         %d   (cold launches %d; the oracle took %lld)\n", m->warm_taken,
			m->cold_launches, (long long)m->oracle_warm_taken);
	}
}

/* Per-step output: the CSV rows as the run produces them, and the steps
 * kept for the plot when one is asked for. */
struct step_sink {
	FILE *csv;
	int64_t t0;
	bool keep;
	struct sim_step *v;
	size_t n, cap;
};

static int sink_step(void *userdata, const struct sim_step *s)
{
	struct step_sink *k = userdata;

	if (k->csv) {
		if (k->t0 == INT64_MIN)
			k->t0 = s->t_ms;
		fprintf(k->csv, "%.3f,%lld,", (double)(s->t_ms - k->t0) / 1000.0, (long long)s->t_ms);
		if (!isnan(s->demand))
			fprintf(k->csv, "%.6g", s->demand);
		fprintf(k->csv, ",%d,%d,%d,%d,%d,%s,%d,", s->required, s->ready, s->billed, s->desired, s->action,
			decision_hold_name(s->hold), s->scored);
		/* forecast: empty for a configuration without one. */
		if (s->forecast >= 0)
			fprintf(k->csv, "%d", s->forecast);
		fputc('\n', k->csv);
		if (ferror(k->csv))
			return -EIO;
	}
	if (k->keep) {
		if (k->n == k->cap) {
			size_t cap = k->cap ? k->cap * 2 : 4096;
			struct sim_step *v = realloc(k->v, cap * sizeof(*v));

			if (!v)
				return -ENOMEM;
			k->v = v;
			k->cap = cap;
		}
		k->v[k->n++] = *s;
	}
	return 0;
}

/* The demand's unit per trace format (trace.h), for the plot's axis. */
static const char *demand_unit(enum trace_format f)
{
	switch (f) {
	case TRACE_NASA:
	case TRACE_AZURE_LLM:
		return "requests/s";
	case TRACE_BITBRAINS:
		return "CPU MHz";
	case TRACE_SWF:
		return "processors in use";
	case TRACE_REQUESTS:
		return "requests in service";
	case TRACE_CSV:
		break;
	}
	return "demand";
}

/* One line of an agent-inputs file, without its newline. */
static int parse_agent_line(char *line, struct sim_agent_event *ev)
{
	char *save = NULL, *secs = strtok_r(line, " \t", &save), *word = strtok_r(NULL, " \t", &save);
	char *arg = strtok_r(NULL, " \t", &save), *arg2 = strtok_r(NULL, " \t", &save), *e;
	double t;
	long n;

	if (!secs || !word)
		return -EINVAL;
	errno = 0;
	t = strtod(secs, &e);
	if (errno || e == secs || *e || !(t >= 0) || t > 1e12)
		return -EINVAL;
	*ev = (struct sim_agent_event){.at_ms = (int64_t)llround(t * 1000.0), .dir = DIR_NONE};
	if (strcmp(word, "pin") == 0) {
		if (!arg)
			return -EINVAL;
		errno = 0;
		n = strtol(arg, &e, 10);
		if (errno || e == arg || *e || n < 0 || n > SIM_MAX_PIN)
			return -EINVAL;
		if (arg2 && strcmp(arg2, "forced") != 0)
			return -EINVAL;
		ev->kind = SIM_PIN;
		ev->count = (int)n;
		ev->forced = arg2 != NULL;
		return strtok_r(NULL, " \t", &save) ? -EINVAL : 0;
	}
	if (strcmp(word, "in-flight") == 0) {
		if (!arg || arg2)
			return -EINVAL;
		ev->kind = SIM_IN_FLIGHT;
		if (strcmp(arg, "out") == 0)
			ev->dir = DIR_OUT;
		else if (strcmp(arg, "in") == 0)
			ev->dir = DIR_IN;
		else if (strcmp(arg, "none") != 0)
			return -EINVAL;
		return 0;
	}
	if (arg)
		return -EINVAL;
	if (strcmp(word, "pause") == 0)
		ev->kind = SIM_PAUSE;
	else if (strcmp(word, "resume") == 0)
		ev->kind = SIM_RESUME;
	else if (strcmp(word, "unpin") == 0)
		ev->kind = SIM_UNPIN;
	else if (strcmp(word, "partial") == 0)
		ev->kind = SIM_PARTIAL;
	else if (strcmp(word, "full") == 0)
		ev->kind = SIM_FULL;
	else
		return -EINVAL;
	return 0;
}

int sim_agent_events_load(const char *path, struct sim_agent_event **ret, size_t *n)
{
	struct sim_agent_event *v = NULL, *grown;
	size_t len = 0, cap = 0, lineno = 0;
	char line[256];
	FILE *f = fopen(path, "re");
	int r = 0;

	if (!f) {
		r = -errno;
		log_warn("simulate: cannot read '%s'", path);
		return r;
	}
	while (fgets(line, sizeof(line), f)) {
		char *hash = strchr(line, '#');

		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			log_warnx("simulate: '%s': line %zu is too long", path, lineno);
			r = -EINVAL;
			break;
		}
		if (hash)
			*hash = '\0';
		line[strcspn(line, "\r\n")] = '\0';
		if (line[strspn(line, " \t")] == '\0')
			continue;
		if (len == cap) {
			cap = cap ? cap * 2 : 16;
			grown = cap <= SIM_MAX_AGENT_EVENTS ? realloc(v, cap * sizeof(*v)) : NULL;
			if (!grown) {
				log_warnx("simulate: '%s': too many lines (at most %d)", path, SIM_MAX_AGENT_EVENTS);
				r = -ENOMEM;
				break;
			}
			v = grown;
		}
		if (parse_agent_line(line, &v[len]) < 0) {
			log_warnx("simulate: '%s': line %zu is not \"SECONDS pause|resume|pin N [forced]|unpin|partial|full|"
				  "in-flight out|in|none\"",
				  path, lineno);
			r = -EINVAL;
			break;
		}
		if (len > 0 && v[len].at_ms < v[len - 1].at_ms) {
			log_warnx("simulate: '%s': line %zu goes back in time", path, lineno);
			r = -EINVAL;
			break;
		}
		len++;
	}
	fclose(f);
	if (r < 0) {
		free(v);
		return r;
	}
	*ret = v;
	*n = len;
	return 0;
}

static int parse_seconds_opt(const char *opt, const char *s, int64_t *ret)
{
	if (parse_duration_ms(s, ret) < 0 || *ret < 0) {
		log_warnx("simulate: %s '%s' is not a duration (90, 90s, 5m, 1h)", opt, s);
		return -EINVAL;
	}
	return 0;
}

/* A plot range's end: a time in the plot's zone unless it has an offset. */
static int parse_time_opt(const char *opt, const char *s, void *tz, int64_t *ret)
{
	if (!s)
		return 0;
	if (schedule_parse_datetime(s, tz, ret) < 0) {
		log_warnx("simulate: %s '%s' is not an ISO 8601 time (2026-11-27T08:00, optionally with Z or +01:00)",
			  opt, s);
		return -EINVAL;
	}
	return 0;
}

int simulate_main(int argc, char **argv)
{
	enum { OPT_GROUP = 256, OPT_TRACE, OPT_FORMAT, OPT_BOOT, OPT_CAP, OPT_STEP, OPT_GRAN, OPT_MIN, OPT_JSON,
	       OPT_CSV, OPT_SVG, OPT_AGENT, OPT_WARMUP, OPT_INITIAL, OPT_PEAK, OPT_TZ, OPT_FROM, OPT_TO,
	       OPT_TITLE, OPT_PLOT_MAX, OPT_WARM_POOL, OPT_WARM_STATE, OPT_RESTORE, OPT_MEMORY, OPT_HORIZON };
	static const struct option long_opts[] = {
		{"config", required_argument, NULL, 'c'},
		{"group", required_argument, NULL, OPT_GROUP},
		{"trace", required_argument, NULL, OPT_TRACE},
		{"format", required_argument, NULL, OPT_FORMAT},
		{"boot-delay", required_argument, NULL, OPT_BOOT},
		{"capacity-per-instance", required_argument, NULL, OPT_CAP},
		{"step", required_argument, NULL, OPT_STEP},
		{"billing-granularity", required_argument, NULL, OPT_GRAN},
		{"billing-minimum", required_argument, NULL, OPT_MIN},
		{"warmup", required_argument, NULL, OPT_WARMUP},
		{"initial-instances", required_argument, NULL, OPT_INITIAL},
		{"peak-instances", required_argument, NULL, OPT_PEAK},
		{"json", no_argument, NULL, OPT_JSON},
		{"csv", required_argument, NULL, OPT_CSV},
		{"svg", required_argument, NULL, OPT_SVG},
		{"agent-inputs", required_argument, NULL, OPT_AGENT},
		{"tz", required_argument, NULL, OPT_TZ},
		{"from", required_argument, NULL, OPT_FROM},
		{"to", required_argument, NULL, OPT_TO},
		{"title", required_argument, NULL, OPT_TITLE},
		{"plot-max", required_argument, NULL, OPT_PLOT_MAX},
		{"warm-pool", required_argument, NULL, OPT_WARM_POOL},
		{"warm-state", required_argument, NULL, OPT_WARM_STATE},
		{"restore-delay", required_argument, NULL, OPT_RESTORE},
		{"instance-memory", required_argument, NULL, OPT_MEMORY},
		{"horizon", required_argument, NULL, OPT_HORIZON},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct sim_params p = {
		.boot_ms = 60 * MS_PER_SEC,
		.capacity = 1.0,
		.step_ms = 0,
		.billing_granularity_ms = 1 * MS_PER_SEC,
		.billing_minimum_ms = 60 * MS_PER_SEC,
		.warmup_ms = 0,
		.initial = -1,
		.instance_memory_mib = 2048,
	};
	struct warm_flags wf = {.size = -1, .restore_ms = -1};
	const char *cfg_path = NULL, *group = NULL, *trace_path = NULL, *format = NULL, *csv = NULL, *svg = NULL;
	const char *agent_path = NULL, *tz_name = NULL, *from = NULL, *to = NULL, *plot_title = NULL;
	int plot_max = 0;
	int64_t from_ms = INT64_MIN, to_ms = INT64_MAX;
	void *tz = NULL;
	struct sim_agent_event *events = NULL;
	struct config *cfg = NULL;
	struct config_errors errs = {0};
	struct trace_reader *tr = NULL;
	struct step_sink sink = {.t0 = INT64_MIN};
	struct capacity_setup cs = {0};
	bool capacity_given = false;
	struct sim_metrics m;
	const struct group_conf *g;
	enum trace_format fmt;
	bool json = false;
	int c, r, status = 1;

	optind = 1;
	while ((c = getopt_long(argc, argv, "c:h", long_opts, NULL)) != -1) {
		char *e;

		switch (c) {
		case 'c':
			cfg_path = optarg;
			break;
		case OPT_GROUP:
			group = optarg;
			break;
		case OPT_TRACE:
			trace_path = optarg;
			break;
		case OPT_FORMAT:
			format = optarg;
			break;
		case OPT_BOOT:
			if (parse_seconds_opt("--boot-delay", optarg, &p.boot_ms) < 0)
				return 2;
			break;
		case OPT_CAP:
			errno = 0;
			p.capacity = strtod(optarg, &e);
			if (errno || e == optarg || *e || !(p.capacity > 0) || !isfinite(p.capacity)) {
				log_warnx("simulate: --capacity-per-instance '%s' is not a positive number", optarg);
				return 2;
			}
			capacity_given = true;
			break;
		case OPT_STEP:
			if (parse_seconds_opt("--step", optarg, &p.step_ms) < 0)
				return 2;
			if (p.step_ms == 0) {
				log_warnx("simulate: --step must be positive");
				return 2;
			}
			break;
		case OPT_GRAN:
			if (parse_seconds_opt("--billing-granularity", optarg, &p.billing_granularity_ms) < 0)
				return 2;
			break;
		case OPT_MIN:
			if (parse_seconds_opt("--billing-minimum", optarg, &p.billing_minimum_ms) < 0)
				return 2;
			break;
		case OPT_WARMUP:
			if (parse_seconds_opt("--warmup", optarg, &p.warmup_ms) < 0)
				return 2;
			break;
		case OPT_INITIAL: {
			long v;

			errno = 0;
			v = strtol(optarg, &e, 10);
			if (errno || e == optarg || *e || v < 0 || v > 100000) {
				log_warnx("simulate: --initial-instances '%s' is not a count from 0 to 100000", optarg);
				return 2;
			}
			p.initial = (int)v;
			break;
		}
		case OPT_PEAK: {
			long v;

			errno = 0;
			v = strtol(optarg, &e, 10);
			if (errno || e == optarg || *e || v < 1 || v > 100000) {
				log_warnx("simulate: --peak-instances '%s' is not a count from 1 to 100000", optarg);
				return 2;
			}
			cs.peak_instances = (int)v;
			break;
		}
		case OPT_JSON:
			json = true;
			break;
		case OPT_CSV:
			csv = optarg;
			break;
		case OPT_SVG:
			svg = optarg;
			break;
		case OPT_AGENT:
			agent_path = optarg;
			break;
		case OPT_TZ:
			tz_name = optarg;
			break;
		case OPT_FROM:
			from = optarg;
			break;
		case OPT_TO:
			to = optarg;
			break;
		case OPT_TITLE:
			plot_title = optarg;
			break;
		case OPT_PLOT_MAX: {
			long v;

			errno = 0;
			v = strtol(optarg, &e, 10);
			if (errno || e == optarg || *e || v < 1 || v > 100000) {
				log_warnx("simulate: --plot-max '%s' is not a count from 1 to 100000", optarg);
				return 2;
			}
			plot_max = (int)v;
			break;
		}
		case OPT_WARM_POOL: {
			long v;

			errno = 0;
			v = strtol(optarg, &e, 10);
			if (errno || e == optarg || *e || v < 0 || v > SIM_MAX_WARM) {
				log_warnx("simulate: --warm-pool '%s' is not a count from 0 to %d", optarg, SIM_MAX_WARM);
				return 2;
			}
			wf.size = (int)v;
			break;
		}
		case OPT_WARM_STATE:
			wf.state = optarg;
			break;
		case OPT_RESTORE:
			if (parse_seconds_opt("--restore-delay", optarg, &wf.restore_ms) < 0)
				return 2;
			break;
		case OPT_MEMORY:
			errno = 0;
			p.instance_memory_mib = strtod(optarg, &e);
			if (errno || e == optarg || *e || !(p.instance_memory_mib > 0) ||
			    p.instance_memory_mib > 1024.0 * 1024 * 1024) {
				log_warnx("simulate: --instance-memory '%s' is not a positive number of MiB", optarg);
				return 2;
			}
			break;
		case OPT_HORIZON:
			if (sim_horizon_parse(optarg, &p.horizon) < 0) {
				log_warnx("simulate: --horizon '%s' is not measured, boot-time or warm-restore", optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc || !cfg_path || !group || !trace_path || !format) {
		usage(stderr);
		return 2;
	}
	if (capacity_given && cs.peak_instances > 0) {
		log_warnx("simulate: give --capacity-per-instance or --peak-instances, not both");
		return 2;
	}
	if ((tz_name || from || to || plot_title || plot_max) && !svg) {
		log_warnx("simulate: --tz, --from, --to, --title and --plot-max shape the plot: give --svg");
		return 2;
	}
	if (tz_name && schedule_tz_open(tz_name, &tz) < 0) {
		log_warnx("simulate: --tz '%s' is not a time zone (an IANA name such as Europe/Berlin)", tz_name);
		return 2;
	}
	if (parse_time_opt("--from", from, tz, &from_ms) < 0 || parse_time_opt("--to", to, tz, &to_ms) < 0) {
		schedule_tz_close(tz);
		return 2;
	}
	if (from_ms >= to_ms) {
		log_warnx("simulate: --from must be before --to");
		schedule_tz_close(tz);
		return 2;
	}
	if (trace_format_parse(format, &fmt) < 0) {
		schedule_tz_close(tz);
		log_warnx("simulate: unknown trace format '%s' (nasa, azure-llm, bitbrains, csv, swf, requests)", format);
		return 2;
	}
	r = config_load(cfg_path, &cfg, &errs);
	if (r < 0) {
		for (size_t i = 0; i < errs.n; i++)
			fprintf(stderr, "%s\n", errs.v[i]);
		if (errs.n == 0)
			log_warn_errno(r, "simulate: cannot load '%s'", cfg_path);
		config_errors_clear(&errs);
		schedule_tz_close(tz);
		return 1;
	}
	g = config_find_group(cfg, group);
	if (!g) {
		log_warnx("simulate: no group '%s' in '%s'", group, cfg_path);
		goto out;
	}
	if (warm_pool_from_flags(&wf, group_warm_pool(g), p.boot_ms, &p.warm) < 0) {
		status = 2;
		goto out;
	}
	if (p.horizon == SIM_HORIZON_WARM_RESTORE && p.warm.size == 0) {
		log_warnx("simulate: --horizon warm-restore needs a warm pool (--warm-pool N, or the group's warm_pool)");
		status = 2;
		goto out;
	}
	if (p.step_ms <= 0)
		p.step_ms = g->interval_ms > 0 ? g->interval_ms : cfg->agent.interval_ms;
	if (p.step_ms <= 0)
		p.step_ms = 15 * MS_PER_SEC;
	if (cs.peak_instances > 0) {
		/* Setup that reads the whole trace: a pass of its own, shown in
		 * the output, before the replay reads it again from the start. */
		if (trace_open(trace_path, fmt, &tr) < 0)
			goto out;
		r = simulate_peak_demand(tr, p.step_ms, &cs.peak_demand);
		trace_close(tr);
		tr = NULL;
		if (r < 0) {
			log_warn_errno(r, "simulate: cannot find the peak of '%s'", trace_path);
			goto out;
		}
		if (!(cs.peak_demand > 0)) {
			log_warnx("simulate: '%s' has no demand above 0 to size instances from", trace_path);
			goto out;
		}
		p.capacity = cs.peak_demand / cs.peak_instances;
	}
	if (trace_open(trace_path, fmt, &tr) < 0)
		goto out;
	if (agent_path && sim_agent_events_load(agent_path, &events, &p.n_events) < 0)
		goto out;
	p.events = events;
	if (csv) {
		sink.csv = fopen(csv, "we");
		if (!sink.csv) {
			log_warn("simulate: cannot write '%s'", csv);
			goto out;
		}
		fprintf(sink.csv, "t_s,time_ms,demand,required,ready,billed,desired,action,hold,scored,forecast\n");
	}
	sink.keep = svg != NULL;
	r = simulate_run(g, tr, &p, &m, (csv || svg) ? sink_step : NULL, &sink);
	if (r < 0) {
		log_warn_errno(r, "simulate: replay of '%s' failed", trace_path);
		goto out;
	}
	if (sink.csv) {
		FILE *f = sink.csv;

		sink.csv = NULL;
		if (fclose(f) != 0) {
			log_warn("simulate: cannot write '%s'", csv);
			goto out;
		}
	}
	if (json) {
		cJSON *o = metrics_json(&m, group, trace_path, &p, &cs);
		char *s = o ? cJSON_Print(o) : NULL;

		cJSON_Delete(o);
		if (!s) {
			log_warnx("simulate: out of memory");
			goto out;
		}
		printf("%s\n", s);
		cJSON_free(s);
	} else {
		print_table(stdout, &m, group, &p, &cs);
	}
	if (svg) {
		char title[256];

		const char *base = strrchr(trace_path, '/');

		struct svg_plot sp = {
			.title = plot_title ? plot_title : title,
			.capacity = p.capacity,
			.unit = demand_unit(fmt),
			.step_ms = p.step_ms,
			.boot_ms = p.boot_ms,
			.tz = tz,
			.tz_name = tz_name,
			.from_ms = from_ms,
			.to_ms = to_ms,
			.metrics = &m,
			.ymax = plot_max,
		};

		snprintf(title, sizeof(title), "%s on %s", group, base ? base + 1 : trace_path);
		r = svg_write_plot(svg, &sp, sink.v, sink.n);
		if (r == -ENODATA) {
			log_warnx("simulate: no step of the run lies between --from and --to");
			goto out;
		}
		if (r < 0) {
			errno = -r;
			log_warn("simulate: cannot write '%s'", svg);
			goto out;
		}
	}
	status = 0;
out:
	free(events);
	schedule_tz_close(tz);
	if (sink.csv)
		fclose(sink.csv);
	free(sink.v);
	trace_close(tr);
	config_free(cfg);
	return status;
}
