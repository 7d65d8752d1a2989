/* The configuration's errors and where they are: the table of the files
 * read (each setting's FILE for FILE:LINE), the errors as they are found,
 * sorted and exported as lines at the end; and near misses of unknown
 * names ("did you mean"). Every other file of the configuration reports
 * through these; they call none of them. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config-private.h"

/* After this many, errors are counted and not kept. */
#define CONFIG_MAX_ERRORS 1000

/* ------------------------------------------------------------ near misses */

/* Optimal string alignment distance (Levenshtein plus transpositions). */
static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t d[65][65];

	if (la > 64 || lb > 64)
		return SIZE_MAX;
	for (size_t i = 0; i <= la; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++) {
		for (size_t j = 1; j <= lb; j++) {
			size_t cost = a[i - 1] != b[j - 1];
			size_t v = d[i - 1][j] + 1;

			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (d[i - 1][j - 1] + cost < v)
				v = d[i - 1][j - 1] + cost;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	}
	return d[la][lb];
}

const char *config_near_miss(const char *word, const char *const *known, size_t n_known)
{
	size_t len = strlen(word), best = SIZE_MAX, limit;
	const char *ret = NULL;

	/* One edit in a short word is already a different word. */
	limit = len <= 3 ? 1 : len <= 8 ? 2 : 3;
	for (size_t i = 0; i < n_known; i++) {
		size_t d = edit_distance(word, known[i]);

		if (d < best) {
			best = d;
			ret = known[i];
		}
	}
	return best <= limit ? ret : NULL;
}

const char *cfg_near_miss(const char *word, const char *const *known, size_t n_known)
{
	return config_near_miss(word, known, n_known);
}

/* ----------------------------------------------------------------- errors */

size_t cfg_intern_file(struct config_ctx *x, const char *path)
{
	struct config *c = x->c;
	char **v;

	for (size_t i = 0; i < c->n_files; i++)
		if (strcmp(c->files[i], path) == 0)
			return i;
	v = realloc(c->files, (c->n_files + 1) * sizeof(*v));
	if (!v || !(v[c->n_files] = strdup(path))) {
		if (v)
			c->files = v;
		x->oom = true;
		return 0;
	}
	c->files = v;
	return c->n_files++;
}

/* DIR/NAME, or NAME when it is absolute or there is no directory. */
char *cfg_path_join(const char *dir, const char *name)
{
	char *p;

	if (!dir || name[0] == '/')
		return strdup(name);
	if (asprintf(&p, "%s/%s", dir, name) < 0)
		return NULL;
	return p;
}

/* The name of a file libconfig read, as messages print it. */
char *cfg_unit_file_name(const struct config_unit *u, const char *raw)
{
	for (size_t i = 0; i < u->n_abs; i++)
		if (strcmp(u->abs[i].seen, raw) == 0)
			return strdup(u->abs[i].path);
	return cfg_path_join(u->dir, raw);
}

size_t cfg_setting_file(struct config_ctx *x, const config_setting_t *s)
{
	struct config_unit *u = x->unit;
	const char *raw = s ? s->file : NULL;
	char *path;

	if (!raw)
		return u->file;
	if (raw == u->raw)
		return u->raw_file;
	path = cfg_unit_file_name(u, raw);
	if (!path) {
		x->oom = true;
		return u->file;
	}
	u->raw = raw;
	u->raw_file = cfg_intern_file(x, path);
	free(path);
	return u->raw_file;
}

size_t cfg_file_index(struct config_ctx *x, const char *file)
{
	for (size_t i = 0; i < x->c->n_files; i++)
		if (x->c->files[i] == file)
			return i;
	return 0;
}

const char *cfg_file_name(struct config_ctx *x, const config_setting_t *s)
{
	size_t i = cfg_setting_file(x, s);

	return i < x->c->n_files ? x->c->files[i] : x->c->path;
}

static void cfg_verror(struct config_ctx *x, size_t file, int line, const char *fmt, va_list ap)
{
	struct config_error *v;
	char *msg;

	if (x->n_errs >= CONFIG_MAX_ERRORS) {
		x->n_errs++;
		return;
	}
	if (vasprintf(&msg, fmt, ap) < 0) {
		x->oom = true;
		return;
	}
	v = realloc(x->errs, (x->n_errs + 1) * sizeof(*v));
	if (!v) {
		free(msg);
		x->oom = true;
		return;
	}
	x->errs = v;
	v[x->n_errs] = (struct config_error){ .file = file, .line = line, .seq = x->n_errs, .msg = msg };
	x->n_errs++;
}

void cfg_error_at(struct config_ctx *x, size_t file, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cfg_verror(x, file, line, fmt, ap);
	va_end(ap);
}

void cfg_error(struct config_ctx *x, const config_setting_t *s, const char *fmt, ...)
{
	size_t file = cfg_setting_file(x, s);
	va_list ap;

	va_start(ap, fmt);
	cfg_verror(x, file, s ? (int)s->line : 0, fmt, ap);
	va_end(ap);
}

static int error_cmp(const void *a, const void *b)
{
	const struct config_error *ea = a, *eb = b;

	if (ea->file != eb->file)
		return ea->file < eb->file ? -1 : 1;
	if (ea->line != eb->line)
		return ea->line < eb->line ? -1 : 1;
	return ea->seq < eb->seq ? -1 : ea->seq > eb->seq;
}

void cfg_errors_export(struct config_ctx *x, struct config_errors *out)
{
	size_t kept = x->n_errs < CONFIG_MAX_ERRORS ? x->n_errs : CONFIG_MAX_ERRORS;
	char **v;

	qsort(x->errs, kept, sizeof(*x->errs), error_cmp);
	if (!out)
		return;
	v = calloc(kept + 1, sizeof(*v));
	if (!v)
		return;
	out->v = v;
	out->n = 0;
	for (size_t i = 0; i < kept; i++) {
		struct config_error *e = &x->errs[i];
		const char *f = x->c->n_files > e->file ? x->c->files[e->file] : x->c->path;

		if (asprintf(&v[out->n], "%s:%d: %s", f, e->line, e->msg) >= 0)
			out->n++;
	}
	if (x->n_errs > kept &&
	    asprintf(&v[out->n], "%s: too many errors; %zu more not shown", x->c->path, x->n_errs - kept) >= 0)
		out->n++;
}

void config_errors_clear(struct config_errors *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->n; i++)
		free(e->v[i]);
	free(e->v);
	e->v = NULL;
	e->n = 0;
}
void cfg_errors_free(struct config_ctx *x)
{
	for (size_t i = 0; i < x->n_errs && i < CONFIG_MAX_ERRORS; i++)
		free(x->errs[i].msg);
	free(x->errs);
}
