/* Trace readers: see trace.h. Parsing is hand-rolled over the whole file in
 * memory because the NASA file holds 1.2 million numbers on one line and
 * must load in milliseconds. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "iso8601.h"
#include "log.h"
#include "trace.h"

/* Files larger than this are refused before reading (bounds memory). */
#define TRACE_MAX_FILE_BYTES (1024L * 1024 * 1024)

/* Index 0 of the NASA series is 1995-07-01 00:00:01 EDT (SOURCES.md). */
#define NASA_START_MS (INT64_C(804571201) * 1000)
/* 9999-12-31T23:59:59Z in Unix seconds, the last Bitbrains timestamp taken. */
#define BITBRAINS_MAX_TS 253402300799.0

struct point {
	int64_t t_ms;
	double v;
};

struct cursor {
	const char *p;
	const char *end;
	const char *name;
	int line;
};

int trace_format_parse(const char *name, enum trace_format *ret)
{
	static const struct {
		const char *name;
		enum trace_format f;
	} formats[] = {
		{"nasa", TRACE_NASA},
		{"azure-llm", TRACE_AZURE_LLM},
		{"bitbrains", TRACE_BITBRAINS},
		{"csv", TRACE_CSV},
	};

	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		if (strcmp(name, formats[i].name) == 0) {
			*ret = formats[i].f;
			return 0;
		}
	return -EINVAL;
}

const char *trace_format_name(enum trace_format f)
{
	switch (f) {
	case TRACE_NASA:
		return "nasa";
	case TRACE_AZURE_LLM:
		return "azure-llm";
	case TRACE_BITBRAINS:
		return "bitbrains";
	case TRACE_CSV:
		return "csv";
	}
	return "?";
}

void trace_free(struct trace *t)
{
	if (!t)
		return;
	free(t->v);
	t->v = NULL;
	t->n = 0;
}

int64_t trace_end_ms(const struct trace *t)
{
	return t->start_ms + (int64_t)t->n * t->res_ms;
}

double trace_mean(const struct trace *t, int64_t from_ms, int64_t to_ms)
{
	double sum = 0, weight = 0;
	int64_t i0, i1;

	if (to_ms <= from_ms || t->n == 0)
		return NAN;
	i0 = (from_ms - t->start_ms) / t->res_ms;
	if (from_ms < t->start_ms)
		i0 = 0;
	i1 = (to_ms - t->start_ms + t->res_ms - 1) / t->res_ms;
	if (i1 > (int64_t)t->n)
		i1 = (int64_t)t->n;
	for (int64_t i = i0; i < i1; i++) {
		int64_t a = t->start_ms + i * t->res_ms, b = a + t->res_ms;
		double w;

		if (isnan(t->v[i]))
			continue;
		if (a < from_ms)
			a = from_ms;
		if (b > to_ms)
			b = to_ms;
		if (b <= a)
			continue;
		w = (double)(b - a);
		sum += t->v[i] * w;
		weight += w;
	}
	return weight > 0 ? sum / weight : NAN;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Moves to the start of the next line, counting it. Handles LF and CRLF and
 * a last line without a newline. */
static void next_line(struct cursor *c)
{
	while (c->p < c->end && *c->p != '\n')
		c->p++;
	if (c->p < c->end)
		c->p++;
	c->line++;
}

static bool line_is_blank(const struct cursor *c)
{
	for (const char *q = c->p; q < c->end && *q != '\n'; q++)
		if (*q != ' ' && *q != '\t' && *q != '\r')
			return false;
	return true;
}

static int alloc_series(struct trace *t, size_t n)
{
	if (n == 0 || n > TRACE_MAX_POINTS)
		return -E2BIG;
	t->v = malloc(n * sizeof(*t->v));
	if (!t->v)
		return -ENOMEM;
	t->n = n;
	return 0;
}

/* The full NASA series holds the Hurricane Erin shutdown as 135,851 zeros
 * (SOURCES.md). A busy web server does not see an hour without a single
 * request (at night the rate is still about 0.2/s), so a run of zeros that
 * long is an outage: no data, not zero demand. */
static void mark_outages(double *v, size_t n)
{
	size_t run = 0;

	for (size_t i = 0; i <= n; i++) {
		if (i < n && v[i] == 0) {
			run++;
			continue;
		}
		if (run >= TRACE_NASA_OUTAGE_POINTS)
			for (size_t j = i - run; j < i; j++)
				v[j] = NAN;
		run = 0;
	}
}

static int parse_nasa(struct cursor *c, struct trace *ret)
{
	size_t n = 0, cap = 0;
	double *v = NULL;
	const char *p = c->p;

	while (p < c->end) {
		int64_t x = 0;
		int digits = 0;

		while (p < c->end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
			p++;
		if (p >= c->end)
			break;
		for (; p < c->end && is_digit(*p); p++, digits++) {
			if (x > INT64_C(1) << 52) {
				free(v);
				log_warnx("trace: '%s': value %zu out of range", c->name, n + 1);
				return -EINVAL;
			}
			x = x * 10 + (*p - '0');
		}
		if (digits == 0) {
			free(v);
			log_warnx("trace: '%s': value %zu is not a count (nasa format)", c->name, n + 1);
			return -EINVAL;
		}
		if (n == cap) {
			double *nv;

			if (cap >= TRACE_MAX_POINTS) {
				free(v);
				log_warnx("trace: '%s': more than %u values", c->name, TRACE_MAX_POINTS);
				return -E2BIG;
			}
			cap = cap ? cap * 2 : 65536;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				return -ENOMEM;
			}
			v = nv;
		}
		v[n++] = (double)x;
	}
	if (n == 0) {
		log_warnx("trace: '%s': no values", c->name);
		return -EINVAL;
	}
	mark_outages(v, n);
	ret->start_ms = NASA_START_MS;
	ret->res_ms = 1000;
	ret->v = v;
	ret->n = n;
	return 0;
}

static int push_point(struct point **pts, size_t *n, size_t *cap, int64_t t_ms, double v)
{
	if (*n == *cap) {
		struct point *np;

		if (*cap >= TRACE_MAX_POINTS)
			return -E2BIG;
		*cap = *cap ? *cap * 2 : 4096;
		np = realloc(*pts, *cap * sizeof(**pts));
		if (!np)
			return -ENOMEM;
		*pts = np;
	}
	(*pts)[*n].t_ms = t_ms;
	(*pts)[*n].v = v;
	(*n)++;
	return 0;
}

/* Request arrivals -> requests per second over whole seconds from the first
 * arrival's second to the last one's. */
static int parse_azure(struct cursor *c, struct trace *ret)
{
	struct point *pts = NULL;
	size_t n = 0, cap = 0;
	int64_t lo = INT64_MAX, hi = INT64_MIN;
	int r;

	while (c->p < c->end) {
		int64_t t;
		const char *q = c->p;

		if (line_is_blank(c)) {
			next_line(c);
			continue;
		}
		if (!is_digit(*q)) {
			if (c->line == 1) { /* the header */
				next_line(c);
				continue;
			}
			log_warnx("trace: '%s':%d: expected a timestamp", c->name, c->line);
			free(pts);
			return -EINVAL;
		}
		if (iso8601_parse_prefix(&q, c->end, ISO8601_UTC_DEFAULT, &t) < 0 ||
		    (q < c->end && *q != ',' && *q != '\r' && *q != '\n')) {
			log_warnx("trace: '%s':%d: bad timestamp (want YYYY-MM-DD HH:MM:SS.fffffff)", c->name, c->line);
			free(pts);
			return -EINVAL;
		}
		r = push_point(&pts, &n, &cap, t, 1);
		if (r < 0) {
			free(pts);
			return r;
		}
		lo = t < lo ? t : lo;
		hi = t > hi ? t : hi;
		next_line(c);
	}
	if (n == 0) {
		log_warnx("trace: '%s': no requests", c->name);
		return -EINVAL;
	}
	lo -= ((lo % 1000) + 1000) % 1000;
	r = alloc_series(ret, (size_t)((hi - lo) / 1000 + 1));
	if (r < 0) {
		log_warnx("trace: '%s': span too long", c->name);
		free(pts);
		return r;
	}
	memset(ret->v, 0, ret->n * sizeof(*ret->v));
	for (size_t i = 0; i < n; i++)
		ret->v[(pts[i].t_ms - lo) / 1000] += 1;
	free(pts);
	ret->start_ms = lo;
	ret->res_ms = 1000;
	return 0;
}

/* Places sorted samples on a grid of `res_ms` from the first one (each to
 * the nearest slot, absorbing timestamp jitter; a later sample in the same
 * slot wins), then bridges empty runs up to TRACE_MAX_BRIDGED_GAP_MS by
 * linear interpolation and leaves longer ones NaN. */
static int grid_from_points(const struct point *pts, size_t n, int64_t res_ms, struct trace *ret)
{
	int64_t span = pts[n - 1].t_ms - pts[0].t_ms;
	size_t last = 0;
	int r;

	r = alloc_series(ret, (size_t)((span + res_ms / 2) / res_ms + 1));
	if (r < 0)
		return r;
	for (size_t i = 0; i < ret->n; i++)
		ret->v[i] = NAN;
	for (size_t i = 0; i < n; i++) {
		size_t k = (size_t)((pts[i].t_ms - pts[0].t_ms + res_ms / 2) / res_ms);

		ret->v[k < ret->n ? k : ret->n - 1] = pts[i].v;
	}
	for (size_t k = 1; k < ret->n; k++) {
		if (isnan(ret->v[k]))
			continue;
		if (k - last > 1 && (int64_t)(k - last) * res_ms <= TRACE_MAX_BRIDGED_GAP_MS)
			for (size_t j = last + 1; j < k; j++)
				ret->v[j] = ret->v[last] + (ret->v[k] - ret->v[last]) * (double)(j - last) / (double)(k - last);
		last = k;
	}
	ret->start_ms = pts[0].t_ms;
	ret->res_ms = res_ms;
	return 0;
}

/* Skips one field and its separator (";" followed by blanks). */
static bool skip_field(const char **p, const char *end)
{
	while (*p < end && **p != ';' && **p != '\n')
		(*p)++;
	if (*p >= end || **p != ';')
		return false;
	(*p)++;
	while (*p < end && (**p == ' ' || **p == '\t'))
		(*p)++;
	return true;
}

static int parse_double(const char **p, const char *end, double *ret)
{
	char buf[64];
	size_t len = 0;
	char *e;

	while (*p + len < end && len < sizeof(buf) - 1 && strchr("0123456789+-.eE", (*p)[len]) && (*p)[len])
		len++;
	if (len == 0)
		return -EINVAL;
	memcpy(buf, *p, len);
	buf[len] = '\0';
	errno = 0;
	*ret = strtod(buf, &e);
	if (e != buf + len || errno != 0 || !isfinite(*ret))
		return -EINVAL;
	*p += len;
	return 0;
}

static int finish_points(struct cursor *c, struct point *pts, size_t n, int64_t res_ms, struct trace *ret)
{
	int r;

	if (n == 0) {
		log_warnx("trace: '%s': no data rows", c->name);
		free(pts);
		return -EINVAL;
	}
	r = grid_from_points(pts, n, res_ms, ret);
	free(pts);
	if (r < 0)
		log_warnx("trace: '%s': span too long for its resolution", c->name);
	return r;
}

/* GWA-T-12: "Timestamp [ms]" is really epoch seconds; column 4 is CPU usage
 * in MHz. Rows are 300 s apart with +-1 s jitter. */
static int parse_bitbrains(struct cursor *c, struct trace *ret)
{
	struct point *pts = NULL;
	size_t n = 0, cap = 0;
	int r;

	while (c->p < c->end) {
		const char *q = c->p;
		double ts, mhz;

		if (line_is_blank(c) || (c->line == 1 && !is_digit(*q))) {
			next_line(c);
			continue;
		}
		if (parse_double(&q, c->end, &ts) < 0 || !skip_field(&q, c->end) || !skip_field(&q, c->end) ||
		    !skip_field(&q, c->end) || parse_double(&q, c->end, &mhz) < 0 || mhz < 0) {
			log_warnx("trace: '%s':%d: not a bitbrains row (timestamp;cores;capacity;usage MHz;...)", c->name,
				  c->line);
			free(pts);
			return -EINVAL;
		}
		/* Converted to milliseconds in an int64_t below: a stamp past
		 * year 9999 (or before 1970) is no Bitbrains row, and would not
		 * fit. */
		if (!(ts >= 0 && ts <= BITBRAINS_MAX_TS)) {
			log_warnx("trace: '%s':%d: timestamp %g out of range", c->name, c->line, ts);
			free(pts);
			return -EINVAL;
		}
		if (n > 0 && (int64_t)(ts * 1000) <= pts[n - 1].t_ms) {
			log_warnx("trace: '%s':%d: timestamp not after the previous row's", c->name, c->line);
			free(pts);
			return -EINVAL;
		}
		r = push_point(&pts, &n, &cap, (int64_t)(ts * 1000), mhz);
		if (r < 0) {
			free(pts);
			return r;
		}
		next_line(c);
	}
	return finish_points(c, pts, n, 300 * INT64_C(1000), ret);
}

/* "time,value": time in seconds (decimals allowed) or ISO 8601; an optional
 * header line; the resolution is the smallest interval between rows. */
static int parse_csv(struct cursor *c, struct trace *ret)
{
	struct point *pts = NULL;
	size_t n = 0, cap = 0;
	int64_t res = INT64_MAX;
	int r;

	while (c->p < c->end) {
		const char *q = c->p;
		int64_t t;
		double v, secs;

		if (line_is_blank(c) || *q == '#' || (c->line == 1 && !is_digit(*q) && *q != '-' && *q != '.')) {
			next_line(c);
			continue;
		}
		if (iso8601_parse_prefix(&q, c->end, ISO8601_UTC_DEFAULT, &t) < 0) {
			q = c->p;
			if (parse_double(&q, c->end, &secs) < 0 || fabs(secs) > 1e13) {
				log_warnx("trace: '%s':%d: bad time (seconds or ISO 8601)", c->name, c->line);
				free(pts);
				return -EINVAL;
			}
			t = llround(secs * 1000);
		}
		while (q < c->end && (*q == ' ' || *q == '\t'))
			q++;
		if (q >= c->end || *q++ != ',')
			q = c->end;
		while (q < c->end && (*q == ' ' || *q == '\t'))
			q++;
		if (q >= c->end || parse_double(&q, c->end, &v) < 0 || v < 0) {
			log_warnx("trace: '%s':%d: want 'time,value' with a value >= 0", c->name, c->line);
			free(pts);
			return -EINVAL;
		}
		if (n > 0 && t <= pts[n - 1].t_ms) {
			log_warnx("trace: '%s':%d: time not after the previous row's", c->name, c->line);
			free(pts);
			return -EINVAL;
		}
		if (n > 0 && t - pts[n - 1].t_ms < res)
			res = t - pts[n - 1].t_ms;
		r = push_point(&pts, &n, &cap, t, v);
		if (r < 0) {
			free(pts);
			return r;
		}
		next_line(c);
	}
	if (n == 1)
		res = 1000;
	return finish_points(c, pts, n, res, ret);
}

int trace_parse(const char *buf, size_t len, enum trace_format fmt, const char *name, struct trace *ret)
{
	struct cursor c = {.p = buf, .end = buf + len, .name = name, .line = 1};
	struct trace t = {0};
	int r = -EINVAL;

	switch (fmt) {
	case TRACE_NASA:
		r = parse_nasa(&c, &t);
		break;
	case TRACE_AZURE_LLM:
		r = parse_azure(&c, &t);
		break;
	case TRACE_BITBRAINS:
		r = parse_bitbrains(&c, &t);
		break;
	case TRACE_CSV:
		r = parse_csv(&c, &t);
		break;
	}
	if (r < 0)
		return r;
	*ret = t;
	return 0;
}

int trace_load(const char *path, enum trace_format fmt, struct trace *ret)
{
	struct stat st;
	char *buf;
	size_t got = 0;
	int fd, r;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		log_warn("trace: cannot open '%s'", path);
		return r;
	}
	if (fstat(fd, &st) < 0 || st.st_size > TRACE_MAX_FILE_BYTES) {
		log_warnx("trace: '%s' is not a readable file of at most %ld bytes", path, TRACE_MAX_FILE_BYTES);
		close(fd);
		return -EFBIG;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while (got < (size_t)st.st_size) {
		ssize_t k = read(fd, buf + got, (size_t)st.st_size - got);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			r = k < 0 ? -errno : -EIO;
			log_warn("trace: cannot read '%s'", path);
			free(buf);
			close(fd);
			return r;
		}
		got += (size_t)k;
	}
	close(fd);
	r = trace_parse(buf, got, fmt, path, ret);
	free(buf);
	return r;
}
