/* The SVG plot of a simulation (see svg_write_plot in simulate.h): a
 * self-contained file with inline styles, so any browser shows it. Element
 * ids name the series (demand, ready, billed, provisioning, oracle,
 * bound-min, bound-max, forecast, under, actions, metrics, legend, axes)
 * for tests and for anyone styling it.
 *
 * The range shown is cut into one column per pixel. Each column keeps the
 * minima and maxima of what its steps held, so a one-step dip or peak stays
 * visible in a two-week plot, and a zoom where one step spans many pixels
 * draws each step at its own width. */
#include <errno.h>
#include <glib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/schedule-tz.h"
#include "simulation/simulate.h"

/* The plot area in pixels: PLOT_W columns. */
#define PLOT_W 960
#define PLOT_H 360
#define MARGIN_L 56
#define MARGIN_R 260
#define MARGIN_T 64
#define MARGIN_B 84
/* The strip above the plot where actions are counted, and the width of
 * one of its cells: a two-week run gets at most PLOT_W / ACTION_PX marks
 * per direction, whatever its number of actions. */
#define ACTION_Y (MARGIN_T - 24)
#define ACTION_PX 4

struct column {
	bool set;          /* a step covers it */
	bool known;        /* with demand data */
	bool under;        /* a scored step with fewer ready than required */
	double demand;     /* max, in the trace's units */
	int ready_lo, ready_hi, billed;
	int fc_lo, fc_hi;  /* forecast; -1: none */
	int oracle;        /* the oracle's live instances, max; -1: none (warm-up) */
	int min, max;      /* the profile's bounds, max */
	int out, in;       /* actions starting in the column */
	int out_to, in_to; /* the highest count out to, the lowest in to */
};

struct plot {
	FILE *f;
	const struct svg_plot *p;
	int64_t x0, x1;    /* the range shown, ms */
	double ymax;       /* instances at the top of the plot */
	double px_per_step;
	struct column *c;
};

/* Text in markup, escaped by GLib (& < > " '). */
static void put_escaped(FILE *f, const char *s)
{
	gchar *e = g_markup_escape_text(s ? s : "", -1);

	fputs(e, f);
	g_free(e);
}

static double x_col(int c)
{
	return MARGIN_L + c;
}

static double x_ms(const struct plot *pl, int64_t t)
{
	return MARGIN_L + (double)(t - pl->x0) * PLOT_W / (double)(pl->x1 - pl->x0);
}

static double y_of(const struct plot *pl, double v)
{
	if (v > pl->ymax)
		v = pl->ymax;
	return MARGIN_T + PLOT_H - v / pl->ymax * PLOT_H;
}

/* The column of instant t, clamped to the plot. */
static int col_of(const struct plot *pl, int64_t t)
{
	double c = floor((double)(t - pl->x0) * PLOT_W / (double)(pl->x1 - pl->x0));

	return c < 0 ? 0 : c >= PLOT_W ? PLOT_W - 1 : (int)c;
}

/* A "nice" tick spacing: 1, 2 or 5 times a power of ten, about n ticks. */
static double nice_step(double span, int n)
{
	double raw = span / n, p = pow(10, floor(log10(raw))), m = raw / p;

	return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

/* The oracle's live instances per step, from the needs it was given: an
 * instance launches one boot delay before its layer becomes busy and
 * stays through idle gaps shorter than that (the plan with per-second
 * billing; see oracle.h), so the count alive during step i is the largest
 * need of the steps that start before step i ends plus one boot delay.
 * This looks ahead, which only the scoring may: it is drawn, never fed
 * to a policy. The warm-up has no oracle (-1). */
static int *oracle_alive(const struct sim_step *s, size_t n, int64_t step_ms, int64_t boot_ms)
{
	int *v = malloc((n ? n : 1) * sizeof(*v));

	if (!v)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		int best = s[i].oracle;

		for (size_t k = i + 1; best >= 0 && k < n && s[k].t_ms < s[i].t_ms + step_ms + boot_ms; k++)
			best = s[k].oracle > best ? s[k].oracle : best;
		v[i] = best;
	}
	return v;
}

static void column_add(struct column *c, const struct sim_step *s, int alive)
{
	int fc = s->forecast;

	if (!c->set) {
		*c = (struct column){.set = true, .ready_lo = s->ready, .ready_hi = s->ready, .fc_lo = fc, .fc_hi = fc,
				     .oracle = -1, .in_to = s->desired};
	}
	if (!isnan(s->demand)) {
		c->demand = c->known && c->demand > s->demand ? c->demand : s->demand;
		c->known = true;
		/* As the scoring counts it (tau_u). */
		if (s->scored && s->ready < s->required)
			c->under = true;
	}
	c->ready_lo = s->ready < c->ready_lo ? s->ready : c->ready_lo;
	c->ready_hi = s->ready > c->ready_hi ? s->ready : c->ready_hi;
	c->billed = s->billed > c->billed ? s->billed : c->billed;
	if (fc >= 0) {
		c->fc_lo = c->fc_lo < 0 || fc < c->fc_lo ? fc : c->fc_lo;
		c->fc_hi = fc > c->fc_hi ? fc : c->fc_hi;
	}
	c->oracle = alive > c->oracle ? alive : c->oracle;
	c->min = s->min > c->min ? s->min : c->min;
	c->max = s->max > c->max ? s->max : c->max;
}

/* A step line over the columns: a vertex only where the value changes, so
 * a two-week plot stays small. get() returns < 0 for "not drawn here"; a
 * column whose range differs (lo < hi) gets a spike down to lo, so a dip
 * within one column shows. */
static void step_line(const struct plot *pl, const char *id, const char *style, int (*get)(const struct plot *, const struct column *, int *))
{
	bool open = false;
	int prev = -1;

	fprintf(pl->f, "<path id=\"%s\" class=\"series %s\" style=\"fill:none;%s\" d=\"", id, id, style);
	for (int c = 0; c < PLOT_W; c++) {
		int lo, v = pl->c[c].set ? get(pl, &pl->c[c], &lo) : -1;

		if (v < 0) {
			if (open)
				fprintf(pl->f, "H%.1f ", x_col(c));
			open = false;
			prev = -1;
			continue;
		}
		if (!open)
			fprintf(pl->f, "M%.1f %.1f ", x_col(c), y_of(pl, v));
		else if (v != prev)
			fprintf(pl->f, "H%.1f V%.1f ", x_col(c), y_of(pl, v));
		if (lo < v)
			fprintf(pl->f, "H%.1f V%.1f V%.1f ", x_col(c) + 0.5, y_of(pl, lo), y_of(pl, v));
		open = true;
		prev = v;
	}
	if (open)
		fprintf(pl->f, "H%.1f", x_col(PLOT_W));
	fputs("\"/>\n", pl->f);
}

static int get_ready(const struct plot *pl, const struct column *c, int *lo)
{
	(void)pl;
	*lo = c->ready_lo;
	return c->ready_hi;
}

static int get_billed(const struct plot *pl, const struct column *c, int *lo)
{
	(void)pl;
	*lo = c->billed;
	return c->billed;
}

static int get_oracle(const struct plot *pl, const struct column *c, int *lo)
{
	(void)pl;
	*lo = c->oracle;
	return c->oracle;
}

static int get_min(const struct plot *pl, const struct column *c, int *lo)
{
	(void)pl;
	*lo = c->min;
	return c->min;
}

/* A maximum above the scale is named in the legend instead of being drawn
 * at the top edge as if it were there. */
static int get_max(const struct plot *pl, const struct column *c, int *lo)
{
	*lo = c->max;
	return c->max <= pl->ymax ? c->max : -1;
}

/* An area between two per-column values (lo(c) <= hi(c)), drawn as one
 * path of closed pieces where it exists. */
static void band(const struct plot *pl, const char *id, const char *style, bool forecast)
{
	fprintf(pl->f, "<path id=\"%s\" class=\"series %s\" style=\"%s\" d=\"", id, id, style);
	for (int c = 0; c < PLOT_W;) {
		int start = c;

		while (c < PLOT_W && pl->c[c].set && (forecast ? pl->c[c].fc_hi >= 0 : pl->c[c].billed > pl->c[c].ready_lo))
			c++;
		if (c == start) {
			c++;
			continue;
		}
		/* Upper edge left to right, lower edge back. */
		for (int k = start; k < c; k++) {
			int hi = forecast ? pl->c[k].fc_hi : pl->c[k].billed;

			fprintf(pl->f, "%c%.1f %.1f H%.1f ", k == start ? 'M' : 'L', x_col(k), y_of(pl, hi), x_col(k + 1));
		}
		for (int k = c; k-- > start;) {
			int lo = forecast ? pl->c[k].fc_lo : pl->c[k].ready_lo;
			/* A forecast that held still in a column gets a line's width. */
			double y = y_of(pl, lo) + (forecast && lo == pl->c[k].fc_hi ? 1.5 : 0);

			fprintf(pl->f, "L%.1f %.1f H%.1f ", x_col(k + 1), y, x_col(k));
		}
		fputs("Z ", pl->f);
	}
	fputs("\"/>\n", pl->f);
}

/* Runs of under-provisioned columns, shaded from top to bottom. */
static void under(const struct plot *pl)
{
	fputs("<g id=\"under\" class=\"series under\" style=\"fill:#d62728;fill-opacity:0.15\">\n", pl->f);
	for (int c = 0; c < PLOT_W;) {
		int start = c;

		while (c < PLOT_W && pl->c[c].under)
			c++;
		if (c == start) {
			c++;
			continue;
		}
		fprintf(pl->f, "<rect x=\"%.1f\" y=\"%d\" width=\"%d\" height=\"%d\"/>\n", x_col(start), MARGIN_T, c - start,
			PLOT_H);
	}
	fputs("</g>\n", pl->f);
}

/* The local time of t in the plot's zone. */
static GDateTime *local(const struct plot *pl, int64_t t_ms)
{
	GDateTime *u = g_date_time_new_from_unix_utc(t_ms / 1000), *l;

	if (!u)
		return NULL;
	l = pl->p->tz ? g_date_time_to_timezone(u, pl->p->tz) : g_date_time_ref(u);
	g_date_time_unref(u);
	return l;
}

/* Time ticks at round local times: the spacing is the first of these that
 * gives at most ten ticks; days and weeks start at local midnight, so a
 * DST change moves them with the clock. */
static void time_ticks(const struct plot *pl)
{
	static const int64_t spans_min[] = {1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720, 1440, 2880, 10080};
	int64_t span_min = (pl->x1 - pl->x0) / 60000, every = 10080;
	GDateTime *t, *next;
	char *s;
	int prev_day = -1;

	for (size_t i = 0; i < sizeof(spans_min) / sizeof(spans_min[0]); i++)
		if (span_min / spans_min[i] <= 10) {
			every = spans_min[i];
			break;
		}
	t = local(pl, pl->x0);
	if (!t)
		return;
	/* Round down to the spacing in local time. */
	if (every >= 1440) {
		next = g_date_time_add_full(t, 0, 0, 0, -g_date_time_get_hour(t), -g_date_time_get_minute(t),
					    -g_date_time_get_seconds(t));
	} else {
		int m = g_date_time_get_hour(t) * 60 + g_date_time_get_minute(t);

		next = g_date_time_add_full(t, 0, 0, 0, 0, -(m % every), -g_date_time_get_seconds(t));
	}
	g_date_time_unref(t);
	t = next;
	for (int guard = 0; t && guard < 64; guard++) {
		int64_t ms = g_date_time_to_unix(t) * 1000;
		int day = g_date_time_get_day_of_year(t);

		if (ms >= pl->x1)
			break;
		if (ms >= pl->x0) {
			double x = x_ms(pl, ms);

			fprintf(pl->f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" style=\"stroke:#eee\"/>\n", x,
				MARGIN_T, x, MARGIN_T + PLOT_H);
			fprintf(pl->f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>\n", x, MARGIN_T + PLOT_H, x,
				MARGIN_T + PLOT_H + 5);
			/* The date under a day's first tick, the time of day otherwise. */
			s = g_date_time_format(t, every >= 1440 ? "%a %d %b" : "%H:%M");
			fprintf(pl->f, "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" style=\"stroke:none\">%s</text>\n",
				x, MARGIN_T + PLOT_H + 18, s ? s : "");
			g_free(s);
			if (every < 1440 && day != prev_day) {
				s = g_date_time_format(t, "%a %d %b");
				fprintf(pl->f, "<text class=\"tick-date\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" style=\"stroke:none\">%s</text>\n",
					x, MARGIN_T + PLOT_H + 32, s ? s : "");
				g_free(s);
			}
			prev_day = day;
		}
		next = every >= 1440 ? g_date_time_add_days(t, (int)(every / 1440)) : g_date_time_add_minutes(t, (int)every);
		g_date_time_unref(t);
		t = next;
	}
	if (t)
		g_date_time_unref(t);
}

static void axes(const struct plot *pl)
{
	double ys = nice_step(pl->ymax, 6), cap = pl->p->capacity, ds = nice_step(pl->ymax * cap, 6);
	FILE *f = pl->f;

	fputs("<g id=\"axes\" style=\"stroke:#444;stroke-width:1;font:12px sans-serif\">\n", f);
	fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>\n", MARGIN_L, MARGIN_T + PLOT_H, MARGIN_L + PLOT_W,
		MARGIN_T + PLOT_H);
	fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>\n", MARGIN_L, MARGIN_T, MARGIN_L, MARGIN_T + PLOT_H);
	fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" style=\"stroke:#999\"/>\n", MARGIN_L + PLOT_W,
		MARGIN_T, MARGIN_L + PLOT_W, MARGIN_T + PLOT_H);
	for (double v = 0; v <= pl->ymax + 1e-9; v += ys) {
		double y = y_of(pl, v);

		fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" style=\"stroke:#ddd\"/>\n", MARGIN_L, y,
			MARGIN_L + PLOT_W, y);
		fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" style=\"stroke:none\">%g</text>\n",
			MARGIN_L - 6, y + 4, v);
	}
	/* Demand on the right, on the same scale: one instance is `capacity`
	 * demand units, so demand above the ready line is unserved. */
	for (double v = 0; v <= pl->ymax * cap * (1 + 1e-9); v += ds) {
		double y = y_of(pl, v / cap);

		fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" style=\"stroke:#999\"/>\n", MARGIN_L + PLOT_W,
			y, MARGIN_L + PLOT_W + 5, y);
		fprintf(f, "<text class=\"demand-tick\" x=\"%d\" y=\"%.1f\" style=\"stroke:none;fill:#777\">%g</text>\n",
			MARGIN_L + PLOT_W + 8, y + 4, v);
	}
	time_ticks(pl);
	fputs("<text id=\"time-axis\" x=\"", f);
	fprintf(f, "%d\" y=\"%d\" text-anchor=\"middle\" style=\"stroke:none\">time (", MARGIN_L + PLOT_W / 2,
		MARGIN_T + PLOT_H + 50);
	put_escaped(f, pl->p->tz_name ? pl->p->tz_name : "UTC");
	fputs(")</text>\n", f);
	fprintf(f, "<text x=\"14\" y=\"%d\" transform=\"rotate(-90 14 %d)\" text-anchor=\"middle\" style=\"stroke:none\">instances</text>\n",
		MARGIN_T + PLOT_H / 2, MARGIN_T + PLOT_H / 2);
	fprintf(f, "<text x=\"%d\" y=\"%d\" transform=\"rotate(90 %d %d)\" text-anchor=\"middle\" style=\"stroke:none;fill:#777\">",
		MARGIN_L + PLOT_W + 62, MARGIN_T + PLOT_H / 2, MARGIN_L + PLOT_W + 62, MARGIN_T + PLOT_H / 2);
	put_escaped(f, pl->p->unit ? pl->p->unit : "demand units");
	fprintf(f, " (%g per instance)</text>\n", cap);
	fputs("</g>\n", f);
}

/* Actions counted per ACTION_PX columns: a bar above the plot per cell and
 * direction, its height growing with the count (capped), the count and the
 * counts reached in its tooltip. */
static void actions(const struct plot *pl)
{
	FILE *f = pl->f;

	fprintf(f, "<g id=\"actions\"><text x=\"%d\" y=\"%d\" text-anchor=\"end\" style=\"font:10px sans-serif;fill:#666\">actions</text>\n",
		MARGIN_L - 4, ACTION_Y + 4);
	for (int c0 = 0; c0 < PLOT_W; c0 += ACTION_PX) {
		int out = 0, in = 0, out_to = 0, in_to = -1;

		for (int c = c0; c < c0 + ACTION_PX && c < PLOT_W; c++) {
			out += pl->c[c].out;
			in += pl->c[c].in;
			if (pl->c[c].out && pl->c[c].out_to > out_to)
				out_to = pl->c[c].out_to;
			if (pl->c[c].in && (in_to < 0 || pl->c[c].in_to < in_to))
				in_to = pl->c[c].in_to;
		}
		/* 4 pixels for one action, 2 more for each further one, up to 7. */
		if (out)
			fprintf(f, "<rect class=\"scale-out\" x=\"%.1f\" y=\"%d\" width=\"%d\" height=\"%d\" style=\"fill:#2ca02c\">"
				   "<title>%d scale-out%s, up to %d</title></rect>\n",
				x_col(c0), ACTION_Y - 2 - (2 + 2 * (out < 7 ? out : 7)), ACTION_PX - 1, 2 + 2 * (out < 7 ? out : 7),
				out, out > 1 ? "s" : "", out_to);
		if (in)
			fprintf(f, "<rect class=\"scale-in\" x=\"%.1f\" y=\"%d\" width=\"%d\" height=\"%d\" style=\"fill:#d62728\">"
				   "<title>%d scale-in%s, down to %d</title></rect>\n",
				x_col(c0), ACTION_Y + 2, ACTION_PX - 1, 2 + 2 * (in < 7 ? in : 7), in, in > 1 ? "s" : "", in_to);
	}
	/* Zoomed in so far that a step is several pixels wide, each action is
	 * also marked where it happened: a triangle pointing up above the
	 * count it went out to, or down below the count it went in to. */
	for (int c = 0; pl->px_per_step >= 5 && c < PLOT_W; c++) {
		if (pl->c[c].out)
			fprintf(f, "<path class=\"scale-out-at\" d=\"M%.1f %.1f l-4 8 h8 z\" style=\"fill:#2ca02c\">"
				   "<title>out to %d</title></path>\n",
				x_col(c), y_of(pl, pl->c[c].out_to) - 12, pl->c[c].out_to);
		if (pl->c[c].in)
			fprintf(f, "<path class=\"scale-in-at\" d=\"M%.1f %.1f l-4 -8 h8 z\" style=\"fill:#d62728\">"
				   "<title>in to %d</title></path>\n",
				x_col(c), y_of(pl, pl->c[c].in_to) + 12, pl->c[c].in_to);
	}
	fputs("</g>\n", f);
}

static void metrics_box(const struct plot *pl, int n_out, int n_in, bool zoomed)
{
	const struct sim_metrics *m = pl->p->metrics;
	int x = MARGIN_L + PLOT_W + 84, y = MARGIN_T + 4;
	FILE *f = pl->f;
	char line[10][64];
	int k = 0;

	if (!m)
		return;
	snprintf(line[k++], sizeof(line[0]), "cost ratio %.3f", m->cost_ratio);
	snprintf(line[k++], sizeof(line[0]), "VM-h %.1f (oracle %.1f)", m->vm_hours, m->oracle_vm_hours);
	snprintf(line[k++], sizeof(line[0]), "τU %.2f %%  θU %.2f %%", m->tau_u, m->theta_u);
	snprintf(line[k++], sizeof(line[0]), "τO %.1f %%  θO %.1f %%", m->tau_o, m->theta_o);
	snprintf(line[k++], sizeof(line[0]), "unserved %.3f %%", 100.0 * m->unserved_fraction);
	snprintf(line[k++], sizeof(line[0]), "actions %d out, %d in", m->actions_out, m->actions_in);
	snprintf(line[k++], sizeof(line[0]), "reversals %d, peak %d", m->reversals, m->peak_ready);
	snprintf(line[k++], sizeof(line[0]), "step %gs, boot %gs", (double)pl->p->step_ms / 1000.0,
		 (double)pl->p->boot_ms / 1000.0);
	if (zoomed)
		snprintf(line[k++], sizeof(line[0]), "shown: %d out, %d in", n_out, n_in);
	fprintf(f, "<g id=\"metrics\" style=\"font:12px sans-serif\">\n"
		   "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" style=\"fill:#f8f8f8;stroke:#bbb\"/>\n"
		   "<text x=\"%d\" y=\"%d\" style=\"font-weight:bold\">%s</text>\n",
		x - 6, y - 2, MARGIN_R - 84, 24 + 16 * k, x, y + 14, zoomed ? "whole run" : "run");
	for (int i = 0; i < k; i++)
		fprintf(f, "<text x=\"%d\" y=\"%d\">%s</text>\n", x, y + 32 + 16 * i, line[i]);
	fputs("</g>\n", f);
}

static void legend(const struct plot *pl, bool forecast, int max_above)
{
	static const struct {
		const char *label, *style;
		bool area;
	} items[] = {
		{"demand (right axis)", "stroke:#888;stroke-width:1", false},
		{"ready", "stroke:#1f77b4;stroke-width:2", false},
		{"billed (booting: shaded)", "stroke:#ff7f0e;stroke-width:1.5;stroke-dasharray:4 3", false},
		{"oracle", "stroke:#2ca02c;stroke-width:1.5", false},
		{"profile min / max", "stroke:#555;stroke-width:1;stroke-dasharray:8 3 2 3", false},
		{"under-provisioned", "fill:#d62728;fill-opacity:0.15", true},
		{"forecast", "fill:#9467bd;fill-opacity:0.3", true},
	};
	int x = MARGIN_L, y = MARGIN_T + PLOT_H + 72;
	FILE *f = pl->f;

	fputs("<g id=\"legend\" style=\"font:12px sans-serif\">\n", f);
	for (size_t i = 0; i < sizeof(items) / sizeof(items[0]); i++) {
		if (!forecast && strcmp(items[i].label, "forecast") == 0)
			continue;
		if (items[i].area)
			fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"24\" height=\"10\" style=\"%s\"/>", x, y - 9, items[i].style);
		else
			fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" style=\"%s\"/>", x, y - 4, x + 24, y - 4,
				items[i].style);
		fprintf(f, "<text x=\"%d\" y=\"%d\">%s", x + 30, y, items[i].label);
		if (max_above > 0 && strncmp(items[i].label, "profile", 7) == 0)
			fprintf(f, " (max %d: above)", max_above);
		fputs("</text>\n", f);
		x += (max_above > 0 && strncmp(items[i].label, "profile", 7) == 0 ? 90 : 0) + 30 + 7 * (int)strlen(items[i].label) + 18;
	}
	fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"3\" height=\"8\" style=\"fill:#2ca02c\"/>"
		   "<rect x=\"%d\" y=\"%d\" width=\"3\" height=\"8\" style=\"fill:#d62728\"/>"
		   "<text x=\"%d\" y=\"%d\">actions out / in</text>\n",
		x, y - 9, x + 5, y - 9, x + 14, y);
	fputs("</g>\n", f);
}

static void demand_line(const struct plot *pl)
{
	bool open = false;

	fputs("<path id=\"demand\" class=\"series demand\" style=\"fill:none;stroke:#888;stroke-width:1\" d=\"", pl->f);
	for (int c = 0; c < PLOT_W; c++) {
		if (!pl->c[c].known) {
			open = false;
			continue;
		}
		fprintf(pl->f, "%c%.1f %.1f ", open ? 'L' : 'M', x_col(c) + 0.5, y_of(pl, pl->c[c].demand / pl->p->capacity));
		open = true;
	}
	fputs("\"/>\n", pl->f);
}

/* An end of the range shown, in the plot's zone. */
static void range_label(const struct plot *pl, int64_t t_ms, char *buf, size_t len)
{
	GDateTime *t = local(pl, t_ms);
	char *s = t ? g_date_time_format(t, "%Y-%m-%d %H:%M %Z") : NULL;

	snprintf(buf, len, "%s", s ? s : "");
	g_free(s);
	if (t)
		g_date_time_unref(t);
}

static int write_plot(struct plot *pl, const char *path, bool any_forecast, int n_out, int n_in, bool zoomed)
{
	int max_above = 0;
	const char *title = pl->p->title ? pl->p->title : "autoscaled simulate";
	char from[48], to[48];
	FILE *f;
	int r = 0;

	f = fopen(path, "we");
	if (!f)
		return -errno;
	pl->f = f;
	for (int c = 0; c < PLOT_W; c++)
		if (pl->c[c].set && pl->c[c].max > pl->ymax && pl->c[c].max > max_above)
			max_above = pl->c[c].max;
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		   "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n",
		MARGIN_L + PLOT_W + MARGIN_R, MARGIN_T + PLOT_H + MARGIN_B, MARGIN_L + PLOT_W + MARGIN_R,
		MARGIN_T + PLOT_H + MARGIN_B);
	fputs("<title>", f);
	put_escaped(f, title);
	fputs("</title>\n<rect width=\"100%\" height=\"100%\" style=\"fill:white\"/>\n", f);
	fprintf(f, "<text id=\"title\" x=\"%d\" y=\"18\" style=\"font:bold 14px sans-serif\">", MARGIN_L);
	put_escaped(f, title);
	fputs("</text>\n", f);
	range_label(pl, pl->x0, from, sizeof(from));
	range_label(pl, pl->x1, to, sizeof(to));
	fprintf(f, "<text id=\"range\" x=\"%d\" y=\"18\" text-anchor=\"end\" style=\"font:11px sans-serif;fill:#666\" "
		   "data-from-ms=\"%lld\" data-to-ms=\"%lld\">%s to %s</text>\n",
		MARGIN_L + PLOT_W, (long long)pl->x0, (long long)pl->x1, from, to);
	under(pl);
	axes(pl);
	if (any_forecast)
		band(pl, "forecast", "fill:#9467bd;fill-opacity:0.3;stroke:none", true);
	band(pl, "provisioning", "fill:#ff7f0e;fill-opacity:0.3;stroke:none", false);
	step_line(pl, "bound-min", "stroke:#555;stroke-width:1;stroke-dasharray:8 3 2 3", get_min);
	step_line(pl, "bound-max", "stroke:#555;stroke-width:1;stroke-dasharray:8 3 2 3", get_max);
	step_line(pl, "oracle", "stroke:#2ca02c;stroke-width:1.5", get_oracle);
	demand_line(pl);
	step_line(pl, "ready", "stroke:#1f77b4;stroke-width:2", get_ready);
	/* Billed over ready, dashed, so where the two are equal both show. */
	step_line(pl, "billed", "stroke:#ff7f0e;stroke-width:1.5;stroke-dasharray:4 3", get_billed);
	actions(pl);
	metrics_box(pl, n_out, n_in, zoomed);
	legend(pl, any_forecast, max_above);
	fputs("</svg>\n", f);
	if (ferror(f))
		r = -EIO;
	if (fclose(f) != 0 && r == 0)
		r = -errno;
	return r;
}

int svg_write_plot(const char *path, const struct svg_plot *p, const struct sim_step *steps, size_t n)
{
	struct plot pl = {.p = p};
	bool any_forecast = false;
	int *alive, n_out = 0, n_in = 0, r, top = 1, data_top = 1;

	if (!path || !p || !steps || n == 0 || !(p->capacity > 0) || p->step_ms <= 0 || p->boot_ms < 0)
		return -EINVAL;
	pl.x0 = p->from_ms > steps[0].t_ms ? p->from_ms : steps[0].t_ms;
	pl.x1 = p->to_ms < steps[n - 1].t_ms + p->step_ms ? p->to_ms : steps[n - 1].t_ms + p->step_ms;
	if (pl.x1 <= pl.x0)
		return -ENODATA;
	pl.px_per_step = (double)p->step_ms * PLOT_W / (double)(pl.x1 - pl.x0);
	alive = oracle_alive(steps, n, p->step_ms, p->boot_ms);
	pl.c = calloc(PLOT_W, sizeof(*pl.c));
	if (!alive || !pl.c) {
		free(alive);
		free(pl.c);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		const struct sim_step *s = &steps[i];
		int64_t end = s->t_ms + p->step_ms;
		int c0, c1;

		if (end <= pl.x0 || s->t_ms >= pl.x1)
			continue;
		/* The columns the step covers; an action belongs to the
		 * column of its instant. */
		c0 = col_of(&pl, s->t_ms > pl.x0 ? s->t_ms : pl.x0);
		c1 = col_of(&pl, (end < pl.x1 ? end : pl.x1) - 1);
		for (int c = c0; c <= c1; c++)
			column_add(&pl.c[c], s, alive[i]);
		if (s->action > 0 && s->t_ms >= pl.x0) {
			pl.c[c0].out++;
			pl.c[c0].out_to = s->desired > pl.c[c0].out_to ? s->desired : pl.c[c0].out_to;
			n_out++;
		} else if (s->action < 0 && s->t_ms >= pl.x0) {
			if (!pl.c[c0].in || s->desired < pl.c[c0].in_to)
				pl.c[c0].in_to = s->desired;
			pl.c[c0].in++;
			n_in++;
		}
		any_forecast |= s->forecast >= 0;
	}
	free(alive);
	/* The scale fits the data; a profile maximum far above it would flatten
	 * everything else, so it counts only when it is near. */
	for (int c = 0; c < PLOT_W; c++) {
		const struct column *k = &pl.c[c];
		int v = k->ready_hi;

		if (!k->set)
			continue;
		v = k->billed > v ? k->billed : v;
		v = k->fc_hi > v ? k->fc_hi : v;
		v = k->oracle > v ? k->oracle : v;
		v = k->min > v ? k->min : v;
		data_top = v > data_top ? v : data_top;
		if (k->known && k->demand / p->capacity > data_top)
			data_top = (int)ceil(k->demand / p->capacity);
		top = k->max > top ? k->max : top;
	}
	pl.ymax = p->ymax > 0 ? p->ymax : 1.1 * (top <= 1.5 * data_top ? (top > data_top ? top : data_top) : data_top);
	r = write_plot(&pl, path, any_forecast, n_out, n_in, p->from_ms > steps[0].t_ms || p->to_ms < steps[n - 1].t_ms + p->step_ms);
	free(pl.c);
	return r;
}
