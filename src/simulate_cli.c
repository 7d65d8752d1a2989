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

#include "config.h"
#include "log.h"
#include "simulate.h"
#include "trace.h"

static void usage(FILE *f)
{
	fprintf(f, "Usage: autoscaled simulate -c FILE --group NAME --trace FILE --format FORMAT\n"
		   "                          [--boot-delay S] [--capacity-per-instance X] [--step S]\n"
		   "                          [--billing-granularity S] [--billing-minimum S]\n"
		   "                          [--json] [--csv OUT] [--svg OUT]\n"
		   "\n"
		   "Replays a load trace through the group's policy on a virtual clock and\n"
		   "reports cost and service against the perfect-foresight oracle.\n"
		   "FORMAT is nasa, azure-llm, bitbrains or csv (time,value). Durations take\n"
		   "the config's units (90, 90s, 5m, 1h). Defaults: boot delay 60s, capacity 1,\n"
		   "step = the group's interval, billing granularity 1s, billing minimum 60s.\n");
}

static cJSON *metrics_json(const struct sim_metrics *m, const char *group, const char *trace_path,
			   const struct sim_params *p)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "group", group);
	cJSON_AddStringToObject(o, "trace", trace_path);
	cJSON_AddNumberToObject(o, "boot_delay_s", (double)p->boot_ms / 1000.0);
	cJSON_AddNumberToObject(o, "capacity_per_instance", p->capacity);
	cJSON_AddNumberToObject(o, "step_s", (double)p->step_ms / 1000.0);
	cJSON_AddNumberToObject(o, "billing_granularity_s", (double)p->billing_granularity_ms / 1000.0);
	cJSON_AddNumberToObject(o, "billing_minimum_s", (double)p->billing_minimum_ms / 1000.0);
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
	return o;
}

static void print_table(FILE *f, const struct sim_metrics *m, const char *group)
{
	fprintf(f, "group              %s\n", group);
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
}

static int write_csv(const char *path, const struct sim_step *steps, size_t n, int64_t t0)
{
	FILE *f = fopen(path, "we");

	if (!f) {
		int r = -errno;

		log_warn("simulate: cannot write '%s'", path);
		return r;
	}
	/* forecast: empty for a configuration without one. */
	fprintf(f, "t_s,time_ms,demand,required,ready,billed,desired,action,forecast\n");
	for (size_t i = 0; i < n; i++) {
		const struct sim_step *s = &steps[i];

		char fc[16] = "";

		if (s->forecast >= 0)
			snprintf(fc, sizeof(fc), "%d", s->forecast);
		if (isnan(s->demand))
			fprintf(f, "%.3f,%lld,,%d,%d,%d,%d,%d,%s\n", (double)(s->t_ms - t0) / 1000.0, (long long)s->t_ms,
				s->required, s->ready, s->billed, s->desired, s->action, fc);
		else
			fprintf(f, "%.3f,%lld,%.6g,%d,%d,%d,%d,%d,%s\n", (double)(s->t_ms - t0) / 1000.0,
				(long long)s->t_ms, s->demand, s->required, s->ready, s->billed, s->desired, s->action, fc);
	}
	if (fclose(f) != 0) {
		int r = -errno;

		log_warn("simulate: cannot write '%s'", path);
		return r;
	}
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

int simulate_main(int argc, char **argv)
{
	enum { OPT_GROUP = 256, OPT_TRACE, OPT_FORMAT, OPT_BOOT, OPT_CAP, OPT_STEP, OPT_GRAN, OPT_MIN, OPT_JSON,
	       OPT_CSV, OPT_SVG };
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
		{"json", no_argument, NULL, OPT_JSON},
		{"csv", required_argument, NULL, OPT_CSV},
		{"svg", required_argument, NULL, OPT_SVG},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct sim_params p = {
		.boot_ms = 60 * MS_PER_SEC,
		.capacity = 1.0,
		.step_ms = 0,
		.billing_granularity_ms = 1 * MS_PER_SEC,
		.billing_minimum_ms = 60 * MS_PER_SEC,
	};
	const char *cfg_path = NULL, *group = NULL, *trace_path = NULL, *format = NULL, *csv = NULL, *svg = NULL;
	struct config *cfg = NULL;
	struct config_errors errs = {0};
	struct trace tr = {0};
	struct sim_metrics m;
	struct sim_step *steps = NULL;
	size_t n_steps = 0;
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
		case OPT_JSON:
			json = true;
			break;
		case OPT_CSV:
			csv = optarg;
			break;
		case OPT_SVG:
			svg = optarg;
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
	if (trace_format_parse(format, &fmt) < 0) {
		log_warnx("simulate: unknown trace format '%s' (nasa, azure-llm, bitbrains, csv)", format);
		return 2;
	}
	r = config_load(cfg_path, &cfg, &errs);
	if (r < 0) {
		for (size_t i = 0; i < errs.n; i++)
			fprintf(stderr, "%s\n", errs.v[i]);
		if (errs.n == 0)
			log_warnx("simulate: cannot load '%s': %s", cfg_path, strerror(-r));
		config_errors_clear(&errs);
		return 1;
	}
	g = config_find_group(cfg, group);
	if (!g) {
		log_warnx("simulate: no group '%s' in '%s'", group, cfg_path);
		goto out;
	}
	if (p.step_ms <= 0)
		p.step_ms = g->interval_ms > 0 ? g->interval_ms : cfg->agent.interval_ms;
	if (p.step_ms <= 0)
		p.step_ms = 15 * MS_PER_SEC;
	if (trace_load(trace_path, fmt, &tr) < 0)
		goto out;
	r = simulate_run(g, &tr, &p, &m, (csv || svg) ? &steps : NULL, &n_steps);
	if (r < 0) {
		log_warnx("simulate: replay of '%s' failed: %s", trace_path, strerror(-r));
		goto out;
	}
	if (json) {
		cJSON *o = metrics_json(&m, group, trace_path, &p);
		char *s = o ? cJSON_Print(o) : NULL;

		cJSON_Delete(o);
		if (!s) {
			log_warnx("simulate: out of memory");
			goto out;
		}
		printf("%s\n", s);
		cJSON_free(s);
	} else {
		print_table(stdout, &m, group);
	}
	if (csv && write_csv(csv, steps, n_steps, tr.start_ms) < 0)
		goto out;
	if (svg) {
		char title[256];

		const char *base = strrchr(trace_path, '/');

		snprintf(title, sizeof(title), "%s on %s", group, base ? base + 1 : trace_path);
		r = svg_write_plot(svg, title, steps, n_steps, p.capacity);
		if (r < 0) {
			errno = -r;
			log_warn("simulate: cannot write '%s'", svg);
			goto out;
		}
	}
	status = 0;
out:
	free(steps);
	trace_free(&tr);
	config_free(cfg);
	return status;
}
