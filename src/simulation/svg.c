/* The SVG plot of a simulation (see svg_write_plot in simulate.h): a
 * self-contained file with inline styles, so any browser shows it. Element
 * ids name the series (demand, ready, billed, actions, legend) for tests and
 * for anyone styling it. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simulation/simulate.h"

/* The plot area in pixels; a long run is cut into at most PLOT_W buckets. */
#define PLOT_W 1100
#define PLOT_H 360
#define MARGIN_L 60
#define MARGIN_R 20
#define MARGIN_T 44
#define MARGIN_B 70

struct bucket {
	double demand; /* in instances: demand / capacity, max over the bucket */
	int ready, billed;
	int forecast;  /* max over the bucket; -1: none */
	int out, in;   /* actions in the bucket */
	int out_to, in_to;
	int known;
};

static void put_escaped(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		default:
			fputc(*s, f);
		}
	}
}

static double x_of(size_t b, size_t nb)
{
	return MARGIN_L + (double)b * PLOT_W / (double)nb;
}

static double y_of(double v, double ymax)
{
	return MARGIN_T + PLOT_H - v / ymax * PLOT_H;
}

/* A "nice" tick spacing: 1, 2 or 5 times a power of ten, about n ticks. */
static double nice_step(double span, int n)
{
	double raw = span / n, p = pow(10, floor(log10(raw))), m = raw / p;

	return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

/* A step line that only emits a vertex where the count changes, which keeps
 * a two-week plot small. */
static void step_line(FILE *f, const char *id, const char *style, const struct bucket *bk, size_t nb, double ymax,
		      int which)
{
	int prev = -1;

	fprintf(f, "<polyline id=\"%s\" class=\"series %s\" style=\"%s\" points=\"", id, id, style);
	for (size_t b = 0; b < nb; b++) {
		int v = which == 2 ? bk[b].forecast : which ? bk[b].billed : bk[b].ready;

		if (v != prev) {
			if (prev >= 0)
				fprintf(f, "%.1f,%.1f ", x_of(b, nb), y_of(prev, ymax));
			fprintf(f, "%.1f,%.1f ", x_of(b, nb), y_of(v, ymax));
			prev = v;
		}
	}
	fprintf(f, "%.1f,%.1f\"/>\n", x_of(nb, nb), y_of(prev, ymax));
}

static void axes(FILE *f, const struct sim_step *steps, size_t n, double ymax)
{
	double hours = (double)(steps[n - 1].t_ms - steps[0].t_ms) / 3.6e6;
	double unit = hours > 72 ? 24 : 1, span = hours / unit, xs = nice_step(span > 0 ? span : 1, 10);
	double ys = nice_step(ymax, 6);

	fputs("<g id=\"axes\" style=\"stroke:#444;stroke-width:1;font:12px sans-serif\">\n", f);
	fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>\n", MARGIN_L, MARGIN_T + PLOT_H, MARGIN_L + PLOT_W,
		MARGIN_T + PLOT_H);
	fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>\n", MARGIN_L, MARGIN_T, MARGIN_L, MARGIN_T + PLOT_H);
	for (double v = 0; v <= ymax + 1e-9; v += ys) {
		double y = y_of(v, ymax);

		fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" style=\"stroke:#ddd\"/>\n", MARGIN_L, y,
			MARGIN_L + PLOT_W, y);
		fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" style=\"stroke:none\">%g</text>\n",
			MARGIN_L - 6, y + 4, v);
	}
	for (double v = 0; span > 0 && v <= span + 1e-9; v += xs) {
		double x = MARGIN_L + v / span * PLOT_W;

		fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>\n", x, MARGIN_T + PLOT_H, x,
			MARGIN_T + PLOT_H + 5);
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" style=\"stroke:none\">%g</text>\n", x,
			MARGIN_T + PLOT_H + 18, v);
	}
	fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" style=\"stroke:none\">%s since the start of the trace</text>\n",
		MARGIN_L + PLOT_W / 2, MARGIN_T + PLOT_H + 36, unit > 1 ? "days" : "hours");
	fprintf(f, "<text x=\"14\" y=\"%d\" transform=\"rotate(-90 14 %d)\" text-anchor=\"middle\" style=\"stroke:none\">instances</text>\n",
		MARGIN_T + PLOT_H / 2, MARGIN_T + PLOT_H / 2);
	fputs("</g>\n", f);
}

static void legend(FILE *f, bool forecast)
{
	static const struct {
		const char *label, *style;
	} items[] = {
		{"demand / capacity", "stroke:#999;stroke-width:1"},
		{"ready", "stroke:#1f77b4;stroke-width:2"},
		{"billed", "stroke:#ff7f0e;stroke-width:1.5;stroke-dasharray:4 3"},
	};
	int x = MARGIN_L, y = MARGIN_T + PLOT_H + 56;

	fputs("<g id=\"legend\" style=\"font:12px sans-serif\">\n", f);
	for (size_t i = 0; i < sizeof(items) / sizeof(items[0]); i++, x += 170) {
		fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" style=\"%s\"/>", x, y - 4, x + 24, y - 4,
			items[i].style);
		fprintf(f, "<text x=\"%d\" y=\"%d\">%s</text>\n", x + 30, y, items[i].label);
	}
	if (forecast) {
		fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" style=\"stroke:#9467bd;stroke-dasharray:1 2\"/>",
			x, y - 4, x + 24, y - 4);
		fprintf(f, "<text x=\"%d\" y=\"%d\">forecast</text>\n", x + 30, y);
		x += 110;
	}
	fprintf(f, "<path d=\"M%d %d l5 -9 l5 9 z\" style=\"fill:#2ca02c\"/><text x=\"%d\" y=\"%d\">scale-out</text>\n", x,
		y, x + 16, y);
	x += 110;
	fprintf(f, "<path d=\"M%d %d l5 9 l5 -9 z\" style=\"fill:#d62728\"/><text x=\"%d\" y=\"%d\">scale-in</text>\n", x,
		y - 9, x + 16, y);
	fputs("</g>\n", f);
}

int svg_write_plot(const char *path, const char *title, const struct sim_step *steps, size_t n, double capacity)
{
	size_t nb = n < PLOT_W ? n : PLOT_W;
	struct bucket *bk;
	double ymax = 1;
	bool any_forecast = false;
	FILE *f;
	int r = 0;

	if (!path || !steps || n == 0 || !(capacity > 0))
		return -EINVAL;
	bk = calloc(nb, sizeof(*bk));
	if (!bk)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct bucket *b = &bk[i * nb / n];
		const struct sim_step *s = &steps[i];

		if (!isnan(s->demand)) {
			double d = s->demand / capacity;

			b->demand = b->known && b->demand > d ? b->demand : d;
			b->known = 1;
		}
		if (i * nb / n != (i ? (i - 1) * nb / n : SIZE_MAX))
			b->forecast = -1;
		b->forecast = s->forecast > b->forecast ? s->forecast : b->forecast;
		any_forecast |= s->forecast >= 0;
		b->ready = s->ready > b->ready ? s->ready : b->ready;
		b->billed = s->billed > b->billed ? s->billed : b->billed;
		if (s->action > 0) {
			b->out++;
			b->out_to = s->desired;
		} else if (s->action < 0) {
			b->in++;
			b->in_to = s->desired;
		}
	}
	for (size_t b = 0; b < nb; b++) {
		ymax = bk[b].demand > ymax ? bk[b].demand : ymax;
		ymax = bk[b].billed > ymax ? bk[b].billed : ymax;
		ymax = bk[b].forecast > ymax ? bk[b].forecast : ymax;
	}
	ymax *= 1.1;

	f = fopen(path, "we");
	if (!f) {
		free(bk);
		return -errno;
	}
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		   "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n",
		MARGIN_L + PLOT_W + MARGIN_R, MARGIN_T + PLOT_H + MARGIN_B, MARGIN_L + PLOT_W + MARGIN_R,
		MARGIN_T + PLOT_H + MARGIN_B);
	fputs("<title>", f);
	put_escaped(f, title ? title : "autoscaled simulate");
	fputs("</title>\n<rect width=\"100%\" height=\"100%\" style=\"fill:white\"/>\n", f);
	fprintf(f, "<text id=\"title\" x=\"%d\" y=\"20\" style=\"font:bold 14px sans-serif\">", MARGIN_L);
	put_escaped(f, title ? title : "autoscaled simulate");
	fputs("</text>\n", f);
	axes(f, steps, n, ymax);

	fputs("<polyline id=\"demand\" class=\"series demand\" style=\"fill:none;stroke:#999;stroke-width:1\" points=\"", f);
	for (size_t b = 0; b < nb; b++)
		if (bk[b].known)
			fprintf(f, "%.1f,%.1f ", x_of(b, nb) + 0.5 * PLOT_W / (double)nb, y_of(bk[b].demand, ymax));
	fputs("\"/>\n", f);
	step_line(f, "billed", "fill:none;stroke:#ff7f0e;stroke-width:1.5;stroke-dasharray:4 3", bk, nb, ymax, 1);
	step_line(f, "ready", "fill:none;stroke:#1f77b4;stroke-width:2", bk, nb, ymax, 0);
	/* What the forecast asked for one boot time ahead (instances). */
	if (any_forecast)
		step_line(f, "forecast", "fill:none;stroke:#9467bd;stroke-width:1;stroke-dasharray:1 2", bk, nb, ymax, 2);

	/* Actions: triangles at the count they went to; a long, downsampled run
	 * gets a rug of ticks along the top instead, one per pixel column, so
	 * hundreds of actions do not hide the lines. */
	fputs("<g id=\"actions\">\n", f);
	for (size_t b = 0; b < nb; b++) {
		double x = x_of(b, nb) + 0.5 * PLOT_W / (double)nb;

		if (n > nb) {
			if (bk[b].out)
				fprintf(f, "<path class=\"scale-out\" d=\"M%.1f %d v-6\" style=\"stroke:#2ca02c\"/>\n", x,
					MARGIN_T - 10);
			if (bk[b].in)
				fprintf(f, "<path class=\"scale-in\" d=\"M%.1f %d v6\" style=\"stroke:#d62728\"/>\n", x,
					MARGIN_T - 8);
			continue;
		}
		if (bk[b].out)
			fprintf(f, "<path class=\"scale-out\" d=\"M%.1f %.1f l-4 8 l8 0 z\" style=\"fill:#2ca02c\">"
				   "<title>out to %d</title></path>\n",
				x, y_of(bk[b].out_to, ymax) - 10, bk[b].out_to);
		if (bk[b].in)
			fprintf(f, "<path class=\"scale-in\" d=\"M%.1f %.1f l-4 -8 l8 0 z\" style=\"fill:#d62728\">"
				   "<title>in to %d</title></path>\n",
				x, y_of(bk[b].in_to, ymax) + 10, bk[b].in_to);
	}
	fputs("</g>\n", f);
	legend(f, any_forecast);
	fputs("</svg>\n", f);
	free(bk);
	if (ferror(f))
		r = -EIO;
	if (fclose(f) != 0 && r == 0)
		r = -errno;
	return r;
}
