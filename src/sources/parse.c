/* Pure parsing helpers of the signal sources. See parse.h. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sources/parse.h"

#define CSV_FIELD_MAX 256
#define SERIES_MAX_ROWS 10000000

int parse_reduce(const char *s, enum reduce *ret)
{
	static const char *const names[] = {
		[REDUCE_NONE] = "none", [REDUCE_SUM] = "sum", [REDUCE_AVG] = "avg",
		[REDUCE_MAX] = "max",   [REDUCE_MIN] = "min",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(s, names[i]) == 0) {
			*ret = (enum reduce)i;
			return 0;
		}
	return -EINVAL;
}

int parse_number(const char *s, double *ret)
{
	char *end;
	double v;

	while (isspace((unsigned char)*s))
		s++;
	if (!*s)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno == ERANGE)
		return -EINVAL;
	while (isspace((unsigned char)*end))
		end++;
	if (*end)
		return -EINVAL;
	*ret = v;
	return 0;
}

static bool word_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '.';
}

int parse_last_number(const char *text, size_t len, double *ret)
{
	bool found = false;
	double last = 0;
	size_t i = 0;

	while (i < len) {
		size_t j = i;
		char buf[64];
		size_t n;
		char *end;

		/* A number starts at a digit, or at a sign or dot right before
		 * one, and not inside a word ("v2", "x1y"). */
		if ((text[j] == '-' || text[j] == '+') && j + 1 < len)
			j++;
		if (text[j] == '.' && j + 1 < len)
			j++;
		if (!isdigit((unsigned char)text[j]) || (i > 0 && word_char(text[i - 1]))) {
			i++;
			continue;
		}
		n = len - i < sizeof(buf) - 1 ? len - i : sizeof(buf) - 1;
		memcpy(buf, text + i, n);
		buf[n] = '\0';
		last = strtod(buf, &end);
		found = true;
		i += (size_t)(end - buf);
		/* Skip the rest of a token such as "1.2.3" or "12abc". */
		while (i < len && word_char(text[i]))
			i++;
	}
	if (!found)
		return -ENODATA;
	*ret = last;
	return 0;
}

int json_parse_bounded(const char *text, size_t len, int max_depth, cJSON **ret, char *err, size_t errlen)
{
	int depth = 0;
	bool in_string = false;
	cJSON *j;

	for (size_t i = 0; i < len; i++) {
		char c = text[i];

		if (in_string) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_string = false;
		} else if (c == '"') {
			in_string = true;
		} else if (c == '[' || c == '{') {
			if (++depth > max_depth) {
				snprintf(err, errlen, "JSON nested deeper than %d levels", max_depth);
				return -E2BIG;
			}
		} else if (c == ']' || c == '}') {
			depth--;
		}
	}
	j = cJSON_ParseWithLength(text, len);
	if (!j) {
		const char *at = cJSON_GetErrorPtr();
		size_t off = at && at >= text && at <= text + len ? (size_t)(at - text) : 0;

		snprintf(err, errlen, "invalid JSON near byte %zu", off);
		return -EBADMSG;
	}
	*ret = j;
	return 0;
}

static int pointer_token(const char *p, size_t n, char **ret, char *err, size_t errlen)
{
	char *t = malloc(n + 1), *o = t;

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (p[i] != '~') {
			*o++ = p[i];
		} else if (i + 1 < n && (p[i + 1] == '0' || p[i + 1] == '1')) {
			*o++ = p[i + 1] == '0' ? '~' : '/';
			i++;
		} else {
			free(t);
			snprintf(err, errlen, "JSON pointer has '~' not followed by 0 or 1");
			return -EINVAL;
		}
	}
	*o = '\0';
	*ret = t;
	return 0;
}

int json_pointer_get(cJSON *root, const char *pointer, cJSON **ret, char *err, size_t errlen)
{
	const char *p = pointer;
	cJSON *cur = root;

	if (*p && *p != '/') {
		snprintf(err, errlen, "JSON pointer '%s' must start with '/'", pointer);
		return -EINVAL;
	}
	while (*p == '/') {
		const char *next = strchr(p + 1, '/');
		size_t n = next ? (size_t)(next - p - 1) : strlen(p + 1);
		char *tok;
		int r = pointer_token(p + 1, n, &tok, err, errlen);

		if (r < 0)
			return r;
		if (cJSON_IsArray(cur)) {
			char *end = NULL;
			unsigned long idx;
			bool ok = tok[0] && isdigit((unsigned char)tok[0]) && !(tok[0] == '0' && tok[1]);

			idx = ok ? strtoul(tok, &end, 10) : 0;
			if (!ok || *end) {
				snprintf(err, errlen, "'%s' in JSON pointer '%s' is not an array index", tok, pointer);
				free(tok);
				return -ENOENT;
			}
			cur = idx < (unsigned long)cJSON_GetArraySize(cur) ? cJSON_GetArrayItem(cur, (int)idx) : NULL;
		} else if (cJSON_IsObject(cur)) {
			cur = cJSON_GetObjectItemCaseSensitive(cur, tok);
		} else {
			cur = NULL;
		}
		if (!cur) {
			snprintf(err, errlen, "JSON pointer '%s': no '%s' in the reply", pointer, tok);
			free(tok);
			return -ENOENT;
		}
		free(tok);
		p += n + 1;
	}
	*ret = cur;
	return 0;
}

int json_number(const cJSON *item, double *ret, char *err, size_t errlen)
{
	if (cJSON_IsNumber(item)) {
		*ret = item->valuedouble;
		return 0;
	}
	if (cJSON_IsString(item)) {
		if (parse_number(item->valuestring, ret) == 0)
			return 0;
		snprintf(err, errlen, "string '%.64s' is not a number", item->valuestring);
		return -EINVAL;
	}
	snprintf(err, errlen, "value is %s, not a number",
		 cJSON_IsNull(item) ? "null" : cJSON_IsBool(item) ? "a boolean" : cJSON_IsArray(item) ? "an array"
		 : "an object");
	return -EINVAL;
}

/* One [timestamp, "value"] pair of the Prometheus API. */
static int prom_sample(const cJSON *pair, double *ret, char *err, size_t errlen)
{
	const cJSON *v = cJSON_IsArray(pair) && cJSON_GetArraySize(pair) == 2 ? cJSON_GetArrayItem(pair, 1) : NULL;

	if (!v || !cJSON_IsString(v) || parse_number(v->valuestring, ret) < 0) {
		snprintf(err, errlen, "unexpected sample in the reply");
		return -EBADMSG;
	}
	if (!isfinite(*ret)) {
		snprintf(err, errlen, "value is %s", v->valuestring);
		return -ERANGE;
	}
	return 0;
}

static int prom_result(const cJSON *data, enum reduce reduce, double *ret, char *err, size_t errlen)
{
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(data, "resultType");
	const cJSON *result = cJSON_GetObjectItemCaseSensitive(data, "result");
	const cJSON *item;
	double acc = 0, v;
	int n = 0, r;

	if (!cJSON_IsString(type) || !result) {
		snprintf(err, errlen, "reply has no data.resultType or data.result");
		return -EBADMSG;
	}
	if (strcmp(type->valuestring, "scalar") == 0)
		return prom_sample(result, ret, err, errlen);
	if (strcmp(type->valuestring, "vector") != 0 || !cJSON_IsArray(result)) {
		snprintf(err, errlen, "result type '%.32s' is not an instant vector or scalar", type->valuestring);
		return -EBADMSG;
	}
	n = cJSON_GetArraySize(result);
	if (n == 0) {
		snprintf(err, errlen, "no series");
		return -ENODATA;
	}
	if (n > 1 && reduce == REDUCE_NONE) {
		snprintf(err, errlen, "%d series and no reduction (set reduce to sum, avg, max or min)", n);
		return -ENOTUNIQ;
	}
	n = 0;
	cJSON_ArrayForEach(item, result) {
		r = prom_sample(cJSON_GetObjectItemCaseSensitive(item, "value"), &v, err, errlen);
		if (r < 0)
			return r;
		if (n == 0)
			acc = v;
		else if (reduce == REDUCE_MAX)
			acc = fmax(acc, v);
		else if (reduce == REDUCE_MIN)
			acc = fmin(acc, v);
		else
			acc += v;
		n++;
	}
	*ret = reduce == REDUCE_AVG ? acc / n : acc;
	return 0;
}

int prometheus_parse(const char *body, size_t len, enum reduce reduce, double *ret, char *err, size_t errlen)
{
	const cJSON *status, *data;
	cJSON *root;
	int r;

	r = json_parse_bounded(body, len, 16, &root, err, errlen);
	if (r < 0)
		return r;
	status = cJSON_GetObjectItemCaseSensitive(root, "status");
	if (!cJSON_IsString(status)) {
		snprintf(err, errlen, "reply has no status");
		r = -EBADMSG;
	} else if (strcmp(status->valuestring, "success") != 0) {
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(root, "errorType");
		const cJSON *msg = cJSON_GetObjectItemCaseSensitive(root, "error");

		snprintf(err, errlen, "prometheus: %s: %s", cJSON_IsString(type) ? type->valuestring : "error",
			 cJSON_IsString(msg) ? msg->valuestring : "no message");
		r = -EREMOTEIO;
	} else if (!cJSON_IsObject(data = cJSON_GetObjectItemCaseSensitive(root, "data"))) {
		snprintf(err, errlen, "reply has no data");
		r = -EBADMSG;
	} else {
		r = prom_result(data, reduce, ret, err, errlen);
	}
	cJSON_Delete(root);
	return r;
}

/* Copies the next CSV field of the line at *P (up to END or a newline)
 * into BUF, truncated, unquoting "..." fields. Returns false at the end of
 * the line. */
static bool csv_next(const char **p, const char *end, char *buf, size_t buflen)
{
	const char *s = *p;
	size_t n = 0;

	if (s >= end || *s == '\n')
		return false;
	if (*s == '"') {
		s++;
		while (s < end && *s != '\n') {
			if (*s == '"' && s + 1 < end && s[1] == '"')
				s++;
			else if (*s == '"') {
				s++;
				break;
			}
			if (n + 1 < buflen)
				buf[n++] = *s;
			s++;
		}
	}
	while (s < end && *s != ',' && *s != '\n' && *s != '\r') {
		if (n + 1 < buflen)
			buf[n++] = *s;
		s++;
	}
	buf[n] = '\0';
	if (s < end && *s == '\r')
		s++;
	if (s < end && *s == ',') {
		s++;
		/* A trailing comma ends the line with no further field. */
	}
	*p = s;
	return true;
}

static const char *next_line(const char *p, const char *end)
{
	const char *nl = memchr(p, '\n', (size_t)(end - p));

	return nl ? nl + 1 : end;
}

int haproxy_csv_value(const char *csv, size_t len, const char *proxy, const char *server, const char *column,
		      double *ret, char *err, size_t errlen)
{
	const char *p = csv, *end = csv + len, *line;
	char field[CSV_FIELD_MAX], want_fe[CSV_FIELD_MAX] = "", want_be[CSV_FIELD_MAX] = "";
	bool seen_proxy = false, have_fe = false, have_be = false;
	int col = -1, i;

	if (len < 2 || p[0] != '#') {
		snprintf(err, errlen, "stats reply has no '# pxname,...' header");
		return -EBADMSG;
	}
	p++;
	while (p < end && *p == ' ')
		p++;
	for (i = 0; csv_next(&p, end, field, sizeof(field)); i++)
		if (col < 0 && strcmp(field, column) == 0)
			col = i;
	if (col < 0) {
		snprintf(err, errlen, "no column '%s' in the stats header", column);
		return -ENOENT;
	}
	for (line = next_line(p, end); line < end; line = next_line(line, end)) {
		const char *q = line;
		char px[CSV_FIELD_MAX], sv[CSV_FIELD_MAX];
		bool match;

		if (!csv_next(&q, end, px, sizeof(px)) || !csv_next(&q, end, sv, sizeof(sv)))
			continue;
		if (strcmp(px, proxy) != 0)
			continue;
		seen_proxy = true;
		match = server ? strcmp(sv, server) == 0 : strcmp(sv, "FRONTEND") == 0 || strcmp(sv, "BACKEND") == 0;
		if (!match)
			continue;
		for (i = 2; i <= col; i++)
			if (!csv_next(&q, end, field, sizeof(field))) {
				snprintf(err, errlen, "row '%s/%s' has no field %d", px, sv, col);
				return -EBADMSG;
			}
		if (strcmp(sv, "BACKEND") == 0 && !server) {
			have_be = true;
			snprintf(want_be, sizeof(want_be), "%s", field);
			continue;
		}
		have_fe = true;
		snprintf(want_fe, sizeof(want_fe), "%s", field);
		break;
	}
	if (!seen_proxy) {
		snprintf(err, errlen, "no proxy '%s' in the stats", proxy);
		return -ENOENT;
	}
	if (!have_fe && !have_be) {
		snprintf(err, errlen, "proxy '%s' has no row '%s'", proxy, server ? server : "FRONTEND or BACKEND");
		return -ENOENT;
	}
	snprintf(field, sizeof(field), "%s", have_fe ? want_fe : want_be);
	if (!field[0]) {
		snprintf(err, errlen, "column '%s' is empty for proxy '%s'", column, proxy);
		return -ENODATA;
	}
	if (parse_number(field, ret) < 0) {
		snprintf(err, errlen, "column '%s' of proxy '%s' is '%.32s', not a number", column, proxy, field);
		return -EBADMSG;
	}
	return 0;
}

bool haproxy_column_cumulative(const char *column)
{
	static const char *const counters[] = {
		"stot", "bin", "bout", "dreq", "dresp", "ereq", "econ", "eresp", "wretr", "wredis", "chkfail",
		"chkdown", "downtime", "lbtot", "hrsp_1xx", "hrsp_2xx", "hrsp_3xx", "hrsp_4xx", "hrsp_5xx",
		"hrsp_other", "req_tot", "cli_abrt", "srv_abrt", "comp_in", "comp_out", "comp_byp", "comp_rsp",
		"conn_tot", "intercepted", "dcon", "dses", "wrew", "connect", "reuse", "cache_lookups",
		"cache_hits", "eint", "hanafail", "cum_req", "cum_conn",
	};

	for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++)
		if (strcmp(column, counters[i]) == 0)
			return true;
	return false;
}

int counter_rate(double prev, double cur, double dt_ms, double *ret)
{
	if (!(dt_ms > 0))
		return -EINVAL;
	*ret = (cur >= prev ? cur - prev : cur) * 1000.0 / dt_ms;
	return 0;
}

void series_clear(struct series *s)
{
	free(s->t);
	free(s->v);
	s->t = s->v = NULL;
	s->n = 0;
}

/* Splits one line into at most MAX trimmed fields, in place. */
static size_t split_fields(char *line, char **f, size_t max)
{
	char sep = strchr(line, ',') ? ',' : strchr(line, ';') ? ';' : ' ';
	size_t n = 0;
	char *p = line;

	while (n < max) {
		char *e;

		while (*p == ' ' || *p == '\t')
			p++;
		if (sep == ' ' && !*p)
			break;
		f[n++] = p;
		e = sep == ' ' ? p + strcspn(p, " \t") : strchr(p, sep);
		if (!e || !*e) {
			e = p + strlen(p);
			while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
				*--e = '\0';
			break;
		}
		*e = '\0';
		for (char *t = e; t > p && (t[-1] == ' ' || t[-1] == '\t'); t--)
			t[-1] = '\0';
		p = e + 1;
	}
	return n;
}

static int series_push(struct series *s, size_t *cap, double t, double v)
{
	if (s->n == *cap) {
		size_t c = *cap ? *cap * 2 : 256;
		double *nt = realloc(s->t, c * sizeof(double)), *nv;

		if (!nt)
			return -ENOMEM;
		s->t = nt;
		nv = realloc(s->v, c * sizeof(double));
		if (!nv)
			return -ENOMEM;
		s->v = nv;
		*cap = c;
	}
	s->t[s->n] = t;
	s->v[s->n] = v;
	s->n++;
	return 0;
}

int series_parse(const char *text, size_t len, const char *column, double scale, struct series *ret, char *err,
		 size_t errlen)
{
	struct series s = { 0 };
	size_t cap = 0, lineno = 0, want = 1;
	bool first = true, by_name = false;
	const char *p = text, *end = text + len;
	char line[4096];
	int r = 0;

	if (!column || !*column)
		column = "2";
	if (strspn(column, "0123456789") == strlen(column)) {
		want = strtoul(column, NULL, 10);
		if (want < 2) {
			snprintf(err, errlen, "column %s: the first column is the time", column);
			return -EINVAL;
		}
		want--;
	} else {
		by_name = true;
	}
	while (p < end && r == 0) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl ? nl : end) - p);
		char *f[64];
		size_t nf;
		double t, v;

		lineno++;
		if (n >= sizeof(line)) {
			snprintf(err, errlen, "line %zu is too long", lineno);
			r = -EBADMSG;
			break;
		}
		memcpy(line, p, n);
		line[n] = '\0';
		p = nl ? nl + 1 : end;
		if (n && line[n - 1] == '\r')
			line[n - 1] = '\0';
		nf = split_fields(line, f, 64);
		if (nf == 0 || line[0] == '#' || (nf == 1 && !*f[0]))
			continue;
		if (first && parse_number(f[0], &t) < 0) {
			/* A header row names the columns. */
			first = false;
			if (by_name) {
				want = 0;
				for (size_t i = 1; i < nf && !want; i++)
					if (strcmp(f[i], column) == 0)
						want = i;
				if (!want) {
					snprintf(err, errlen, "no column '%s' in the header", column);
					r = -EINVAL;
				}
			}
			continue;
		}
		if (first && by_name) {
			snprintf(err, errlen, "no header row to find column '%s' in", column);
			r = -EINVAL;
			break;
		}
		first = false;
		if (want >= nf || parse_number(f[0], &t) < 0 || parse_number(f[want], &v) < 0 || !isfinite(t) ||
		    !isfinite(v)) {
			snprintf(err, errlen, "line %zu: expected numbers in columns 1 and %zu", lineno, want + 1);
			r = -EBADMSG;
		} else if (s.n && t < s.t[s.n - 1]) {
			snprintf(err, errlen, "line %zu: time goes backwards", lineno);
			r = -EBADMSG;
		} else if (s.n >= SERIES_MAX_ROWS) {
			snprintf(err, errlen, "more than %d rows", SERIES_MAX_ROWS);
			r = -E2BIG;
		} else {
			r = series_push(&s, &cap, t, v * scale);
		}
	}
	if (r == 0 && s.n == 0) {
		snprintf(err, errlen, "no rows");
		r = -ENODATA;
	}
	if (r < 0) {
		series_clear(&s);
		return r;
	}
	for (size_t i = s.n; i-- > 0;)
		s.t[i] -= s.t[0];
	/* The arrays grew by doubling from 256 rows: give back what the
	 * series does not use (a 40-row file held 4 KB, and a daemon may
	 * replay thousands of them). A failed shrink keeps the larger block. */
	if (s.n < cap) {
		double *t = realloc(s.t, s.n * sizeof(double)), *v;

		if (t)
			s.t = t;
		v = realloc(s.v, s.n * sizeof(double));
		if (v)
			s.v = v;
	}
	*ret = s;
	return 0;
}

double series_at(const struct series *s, double elapsed)
{
	double step = s->n > 1 ? s->t[s->n - 1] / (double)(s->n - 1) : 1.0;
	double span = s->t[s->n - 1] + (step > 0 ? step : 1.0);
	double off = fmod(elapsed, span);
	size_t lo = 0, hi = s->n;

	if (off < 0)
		off += span;
	/* The last row whose time is at or before OFF. */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->t[mid] <= off)
			lo = mid;
		else
			hi = mid;
	}
	return s->v[lo];
}
