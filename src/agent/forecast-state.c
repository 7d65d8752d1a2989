/* The forecasters' file and seeding: see forecast-state.h. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "agent/forecast-state.h"
#include "state/state.h"
#include "simulation/trace.h"

#define FORECAST_FILE_FORMAT 1

static int forecast_path(const char *dir, const char *group, char *buf, size_t len)
{
	int n;

	if (!group[0] || group[0] == '.' || strchr(group, '/'))
		return -EINVAL;
	n = snprintf(buf, len, "%s/%s.forecast", dir, group);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static cJSON *buckets_json(const struct forecast_bucket *b, size_t n)
{
	cJSON *arr = cJSON_CreateArray();

	for (size_t i = 0; arr && i < n; i++) {
		cJSON *e = cJSON_CreateArray();

		if (!e || !cJSON_AddItemToArray(arr, e) || !cJSON_AddItemToArray(e, cJSON_CreateNumber(b[i].mean)) ||
		    !cJSON_AddItemToArray(e, cJSON_CreateNumber(b[i].scale)) ||
		    !cJSON_AddItemToArray(e, cJSON_CreateNumber(b[i].visits))) {
			cJSON_Delete(arr);
			return NULL;
		}
	}
	return arr;
}

cJSON *forecast_to_json(const struct forecast *f)
{
	cJSON *o = cJSON_CreateObject();

	if (!o || !cJSON_AddNumberToObject(o, "version", f->version) ||
	    !cJSON_AddNumberToObject(o, "quantile", f->quantile) ||
	    !cJSON_AddNumberToObject(o, "first_ms", (double)f->first_ms) ||
	    !cJSON_AddNumberToObject(o, "last_ms", (double)f->last_ms) ||
	    !cJSON_AddNumberToObject(o, "samples", (double)f->n_samples) ||
	    !cJSON_AddNumberToObject(o, "level", f->level) || !cJSON_AddNumberToObject(o, "trend", f->trend) ||
	    !cJSON_AddNumberToObject(o, "bucket", (double)f->cur_bucket) ||
	    !cJSON_AddNumberToObject(o, "bucket_sum", f->cur_sum) ||
	    !cJSON_AddNumberToObject(o, "bucket_n", f->cur_n) ||
	    !cJSON_AddNumberToObject(o, "q_norm", f->q_norm) || !cJSON_AddNumberToObject(o, "scale", f->scale) ||
	    !cJSON_AddNumberToObject(o, "scored", (double)f->n_scored) ||
	    !cJSON_AddNumberToObject(o, "q_peak", f->q_peak) ||
	    !cJSON_AddNumberToObject(o, "peak_scored", (double)f->n_peak_scored) ||
	    !cJSON_AddNumberToObject(o, "horizon_ms", (double)f->horizon_ms) ||
	    !cJSON_AddNumberToObject(o, "keep_ms", (double)f->keep_ms) ||
	    !cJSON_AddNumberToObject(o, "step_error", f->step_error) ||
	    !cJSON_AddNumberToObject(o, "service_level", f->service_level) ||
	    !cJSON_AddNumberToObject(o, "q_adjust", f->q_adjust) ||
	    !cJSON_AddNumberToObject(o, "service_short", f->service_short) ||
	    !cJSON_AddNumberToObject(o, "service_samples", f->n_service) ||
	    !cJSON_AddItemToObject(o, "day", buckets_json(f->day, FORECAST_DAY_BUCKETS)) ||
	    !cJSON_AddItemToObject(o, "week", buckets_json(f->week, FORECAST_WEEK_BUCKETS))) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static int bad(char *why, size_t len, const char *what)
{
	snprintf(why, len, "%s", what);
	return -EINVAL;
}

/* A number that must be finite and within [lo, hi]. */
static bool get_num(const cJSON *o, const char *key, double lo, double hi, double *ret)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble) || x->valuedouble < lo || x->valuedouble > hi)
		return false;
	*ret = x->valuedouble;
	return true;
}

static bool get_buckets(const cJSON *o, const char *key, struct forecast_bucket *b, size_t n)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(o, key), *e;
	size_t i = 0;

	if (!cJSON_IsArray(arr) || (size_t)cJSON_GetArraySize(arr) != n)
		return false;
	cJSON_ArrayForEach(e, arr)
	{
		const cJSON *m = cJSON_GetArrayItem(e, 0), *s = cJSON_GetArrayItem(e, 1), *v = cJSON_GetArrayItem(e, 2);

		if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) != 3 || !cJSON_IsNumber(m) || !cJSON_IsNumber(s) ||
		    !cJSON_IsNumber(v) || !(fabs(m->valuedouble) < 1e30) || !(s->valuedouble >= 0 && s->valuedouble < 1e30) ||
		    !(v->valuedouble >= 0 && v->valuedouble <= UINT32_MAX))
			return false;
		b[i].mean = (float)m->valuedouble;
		b[i].scale = (float)s->valuedouble;
		b[i].visits = (uint32_t)v->valuedouble;
		i++;
	}
	return true;
}

int forecast_from_json(const cJSON *j, struct forecast *f, char *why, size_t why_len)
{
	struct forecast *n = malloc(sizeof(*n));
	double v[16];
	int r = 0;

	if (!n)
		return -ENOMEM;
	forecast_init(n, 0.9);
	/* Times within 1970 to 2200, counts within what a double holds
	 * exactly: anything else is not a file this code wrote. */
	if (!cJSON_IsObject(j) || !get_num(j, "version", FORECAST_STATE_VERSION, FORECAST_STATE_VERSION, &v[0]) ||
	    !get_num(j, "quantile", 0.5, 0.999, &v[1]) || !get_num(j, "first_ms", 0, 7.3e12, &v[2]) ||
	    !get_num(j, "last_ms", v[2], 7.3e12, &v[3]) || !get_num(j, "samples", 0, 9e15, &v[4]) ||
	    !get_num(j, "level", -1e30, 1e30, &v[5]) || !get_num(j, "trend", -1e30, 1e30, &v[6]) ||
	    !get_num(j, "bucket", 0, 1e10, &v[7]) || !get_num(j, "bucket_sum", -1e300, 1e300, &v[8]) ||
	    !get_num(j, "bucket_n", 0, UINT32_MAX, &v[9]) || !get_num(j, "q_norm", -1e6, 1e6, &v[10]) ||
	    !get_num(j, "scale", 0, 1e30, &v[11]) || !get_num(j, "scored", 0, 9e15, &v[12]) ||
	    !get_num(j, "q_peak", -1e6, 1e6, &v[13]) || !get_num(j, "peak_scored", 0, 9e15, &v[14]) ||
	    !get_num(j, "horizon_ms", 0, 86400e3, &v[15])) {
		r = bad(why, why_len, "a forecaster's numbers are missing or out of range");
		goto out;
	}
	n->quantile = v[1];
	n->first_ms = (int64_t)v[2];
	n->last_ms = (int64_t)v[3];
	n->n_samples = (uint64_t)v[4];
	n->level = v[5];
	n->trend = v[6];
	n->cur_bucket = (int64_t)v[7];
	n->cur_sum = v[8];
	n->cur_n = (uint32_t)v[9];
	n->q_norm = v[10];
	n->scale = v[11];
	n->n_scored = (uint64_t)v[12];
	n->q_peak = v[13];
	n->n_peak_scored = (uint64_t)v[14];
	n->horizon_ms = (int64_t)v[15];
	if (!get_num(j, "keep_ms", 0, 86400e3, &v[0])) {
		r = bad(why, why_len, "a forecaster's keep time is missing or out of range");
		goto out;
	}
	n->keep_ms = (int64_t)v[0];
	/* The one-sample-ahead error came with the cold-start prior: a file
	 * from before it has none, and scored predictions enough to need
	 * none. */
	if (cJSON_GetObjectItemCaseSensitive(j, "step_error")) {
		if (!get_num(j, "step_error", 0, 1e30, &v[0])) {
			r = bad(why, why_len, "a forecaster's one-step error is out of range");
			goto out;
		}
		n->step_error = v[0];
	}
	/* The service level and its offset came later: a file from before
	 * has neither, and the offset starts at 0. */
	if (cJSON_GetObjectItemCaseSensitive(j, "service_level") || cJSON_GetObjectItemCaseSensitive(j, "q_adjust")) {
		if (!get_num(j, "service_level", 0, CONFIG_SERVICE_LEVEL_MAX, &v[0]) ||
		    (v[0] != 0 && v[0] < CONFIG_SERVICE_LEVEL_MIN) ||
		    !get_num(j, "q_adjust", FORECAST_ADJUST_MIN, FORECAST_ADJUST_MAX, &v[1])) {
			r = bad(why, why_len, "a forecaster's service level or its offset is missing or out of range");
			goto out;
		}
		n->service_level = v[0];
		n->q_adjust = v[1];
	}
	/* The measured share came after the offset. */
	if (cJSON_GetObjectItemCaseSensitive(j, "service_short") ||
	    cJSON_GetObjectItemCaseSensitive(j, "service_samples")) {
		if (!get_num(j, "service_short", 0, 1, &v[0]) || !get_num(j, "service_samples", 0, UINT32_MAX, &v[1])) {
			r = bad(why, why_len, "a forecaster's measured service is missing or out of range");
			goto out;
		}
		n->service_short = v[0];
		n->n_service = (uint32_t)v[1];
	}
	if (!get_buckets(j, "day", n->day, FORECAST_DAY_BUCKETS) ||
	    !get_buckets(j, "week", n->week, FORECAST_WEEK_BUCKETS)) {
		r = bad(why, why_len, "a forecaster's profile is not 96 daily and 672 weekly buckets of numbers");
		goto out;
	}
	if (!forecast_state_valid(n)) {
		r = bad(why, why_len, "a forecaster's state is inconsistent");
		goto out;
	}
	forecast_refresh(n);
	*f = *n;
out:
	free(n);
	return r;
}

cJSON *forecast_group_json(const struct group_conf *gc, struct forecast *const *fcs)
{
	cJSON *o = cJSON_CreateObject(), *sigs;

	if (!o || !cJSON_AddNumberToObject(o, "format", FORECAST_FILE_FORMAT) ||
	    !cJSON_AddStringToObject(o, "group", gc->name) || !(sigs = cJSON_AddObjectToObject(o, "signals"))) {
		cJSON_Delete(o);
		return NULL;
	}
	for (size_t i = 0; i < gc->n_signals; i++) {
		if (!fcs[i])
			continue;
		if (!cJSON_AddItemToObject(sigs, gc->signals[i].name, forecast_to_json(fcs[i]))) {
			cJSON_Delete(o);
			return NULL;
		}
	}
	return o;
}

int forecast_file_save(const char *dir, const struct group_conf *gc, struct forecast *const *fcs)
{
	char path[PATH_MAX], name[PATH_MAX];
	char *text;
	cJSON *o;
	int r;

	r = forecast_path(dir, gc->name, path, sizeof(path));
	if (r < 0)
		return r;
	snprintf(name, sizeof(name), "%s.forecast", gc->name);
	o = forecast_group_json(gc, fcs);
	text = o ? cJSON_PrintUnformatted(o) : NULL;
	cJSON_Delete(o);
	if (!text)
		return -ENOMEM;
	r = state_write_file(dir, path, name, text, STATE_WRITE_DURABLE);
	free(text);
	return r;
}

int forecast_group_from_json(const cJSON *j, const struct group_conf *gc, struct forecast *const *fcs, bool richer,
			     char *why, size_t why_len)
{
	const cJSON *sigs, *fmt, *name;
	struct forecast *tmp = NULL;
	int r = 0, n = 0;

	fmt = cJSON_GetObjectItemCaseSensitive(j, "format");
	name = cJSON_GetObjectItemCaseSensitive(j, "group");
	sigs = cJSON_GetObjectItemCaseSensitive(j, "signals");
	if (!cJSON_IsNumber(fmt) || fmt->valuedouble != FORECAST_FILE_FORMAT)
		return bad(why, why_len, "another format version");
	if (!cJSON_IsString(name) || strcmp(name->valuestring, gc->name) != 0)
		return bad(why, why_len, "it belongs to another group");
	if (!cJSON_IsObject(sigs))
		return bad(why, why_len, "'signals' is missing or not an object");
	for (size_t i = 0; i < gc->n_signals && r == 0; i++) {
		const cJSON *s = cJSON_GetObjectItemCaseSensitive(sigs, gc->signals[i].name);
		struct forecast *f = fcs[i];

		if (!f || !s)
			continue;
		if (!tmp && !(tmp = malloc(sizeof(*tmp))))
			return -ENOMEM;
		*tmp = *f;
		r = forecast_from_json(s, tmp, why, why_len);
		if (r < 0 || (richer && tmp->n_samples < f->n_samples))
			continue;
		*f = *tmp;
		if (f->quantile != signal_forecast(&gc->signals[i])->quantile) {
			/* The profile stays good; the error quantile is for
			 * another level: learn it again. */
			f->quantile = signal_forecast(&gc->signals[i])->quantile;
			f->n_scored = f->n_peak_scored = 0;
		}
		/* The offset was measured for the file's level: another one
		 * starts it again. */
		forecast_set_service(f, signal_forecast(&gc->signals[i])->service_level);
		n++;
	}
	free(tmp);
	return r < 0 ? r : n;
}

int forecast_file_load(const char *dir, const struct group_conf *gc, struct forecast *const *fcs, char *why,
		       size_t why_len)
{
	char path[PATH_MAX];
	char *text = NULL;
	cJSON *j;
	int r;

	r = forecast_path(dir, gc->name, path, sizeof(path));
	if (r < 0)
		return r;
	r = state_read_text(path, &text);
	if (r < 0)
		return r;
	j = cJSON_Parse(text);
	free(text);
	if (!j)
		return bad(why, why_len, "not valid JSON (truncated?)");
	r = forecast_group_from_json(j, gc, fcs, false, why, why_len);
	cJSON_Delete(j);
	return r;
}

int forecast_seed_file(struct forecast *f, const char *path, const char *format, int64_t step_ms,
		       int64_t horizon_ms, int64_t keep_ms)
{
	enum trace_format fmt;
	struct trace_reader *t;
	struct trace_cursor cur;
	int64_t a;
	int r;

	if (step_ms <= 0)
		return -EINVAL;
	r = trace_format_parse(format ? format : "csv", &fmt);
	if (r < 0)
		return r;
	r = trace_open(path, fmt, &t);
	if (r < 0)
		return r;
	trace_cursor_init(&cur, t);
	r = trace_cursor_start(&cur, &a);
	/* Whole steps only: the trace must reach each one's end. */
	for (; r >= 0; a += step_ms) {
		double v;

		r = trace_cursor_more(&cur, a + step_ms - 1);
		if (r <= 0)
			break;
		trace_cursor_drop(&cur, a);
		r = trace_cursor_mean(&cur, a, a + step_ms, &v);
		/* Samples older than the forecaster's newest are not news. */
		if (r == 0 && !isnan(v) && (f->n_samples == 0 || a + step_ms > f->last_ms))
			forecast_update(f, a + step_ms, v, horizon_ms, keep_ms);
	}
	trace_cursor_destroy(&cur);
	trace_close(t);
	return r < 0 ? r : 0;
}
