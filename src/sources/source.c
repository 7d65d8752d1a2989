/* source: the generic half of every signal source: option checking, the
 * poll-in-flight state, and the one-completion-per-poll rule. See source.h. */
#include <errno.h>
#include <math.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sources/loop.h"
#include "sources/source.h"

#define SOURCE_ERROR_MAX 512

/* A source is one block: this head, its type's state (source_priv(),
 * ops->priv_size bytes) and the signal's name, each at an offset the
 * type's size gives, so that the block holds no pointers to its own
 * parts (three signals a group, 30,000 sources at 10,000 groups). */
struct source {
	const struct source_ops *ops;
	struct source_env env;
	/* Nothing here points into the configuration: a reload hands a
	 * source to the runtime of a newer one (source_set_userdata()). */
	int64_t timeout_ms;
	int64_t t_ms;
	source_done_fn done;
	void *userdata;
	/* A result waiting for the loop's next turn (source_complete_later),
	 * with the other sources' on one defer source (loop.h). */
	struct later later;
	double later_value;
	char *later_error; /* malloc'ed, NULL for none: most results have none */
	int later_status;
	bool busy;
};

/* Where a block's parts start: the head and the type's state rounded up
 * to the strictest alignment. */
static size_t round_up(size_t n)
{
	return (n + alignof(max_align_t) - 1) / alignof(max_align_t) * alignof(max_align_t);
}

#define SOURCE_HEAD round_up(sizeof(struct source))

static char *source_name_at(const struct source *s)
{
	return (char *)s + SOURCE_HEAD + round_up(s->ops->priv_size);
}

static void format_prefix(const struct signal_conf *sc, const struct config_option *o, char *err, size_t errlen)
{
	const char *file = o && o->file ? o->file : sc->file;
	int line = o && o->file ? o->line : sc->line;

	snprintf(err, errlen, "%s:%d: signal '%s': source '%s': ", file ? file : "?", line,
		 sc->name ? sc->name : "?", sc->source ? sc->source : "?");
}

int source_opt_error(const struct signal_conf *sc, const struct config_option *o, char *err, size_t errlen,
		     const char *fmt, ...)
{
	va_list ap;
	size_t n;

	if (!err || errlen == 0)
		return -EINVAL;
	format_prefix(sc, o, err, errlen);
	n = strlen(err);
	va_start(ap, fmt);
	vsnprintf(err + n, errlen - n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

const struct config_option *source_option(const struct signal_conf *sc, const char *key)
{
	for (size_t i = 0; i < sc->source_options.n; i++)
		if (strcmp(sc->source_options.v[i].key, key) == 0)
			return &sc->source_options.v[i];
	return NULL;
}

int source_opt_str(const struct signal_conf *sc, const char *key, bool required, const char *def, char **ret,
		   char *err, size_t errlen)
{
	const struct config_option *o = source_option(sc, key);
	const char *v = def;

	if (o) {
		if (o->type == OPTION_LIST || !o->str)
			return source_opt_error(sc, o, err, errlen, "option '%s' must be a string", key);
		v = o->str;
		if (required && !*v)
			return source_opt_error(sc, o, err, errlen, "option '%s' must not be empty", key);
	} else if (required) {
		return source_opt_error(sc, NULL, err, errlen, "option '%s' is required", key);
	}
	*ret = NULL;
	if (v) {
		*ret = strdup(v);
		if (!*ret)
			return -ENOMEM;
	}
	return 0;
}

int source_opt_num(const struct signal_conf *sc, const char *key, double min, double max, double def, double *ret,
		   char *err, size_t errlen)
{
	const struct config_option *o = source_option(sc, key);
	double v;

	if (!o) {
		*ret = def;
		return 0;
	}
	if (o->type == OPTION_INT || o->type == OPTION_FLOAT) {
		v = o->f;
	} else if (o->type == OPTION_STRING && o->str) {
		char *end;

		v = strtod(o->str, &end);
		if (end == o->str || *end)
			return source_opt_error(sc, o, err, errlen, "option '%s' must be a number, not '%s'", key,
						o->str);
	} else {
		return source_opt_error(sc, o, err, errlen, "option '%s' must be a number", key);
	}
	if (!isfinite(v) || v < min || v > max)
		return source_opt_error(sc, o, err, errlen, "option '%s' must be between %g and %g", key, min, max);
	*ret = v;
	return 0;
}

int source_opt_duration(const struct signal_conf *sc, const char *key, int64_t min_ms, int64_t max_ms, int64_t def_ms,
			int64_t *ret, char *err, size_t errlen)
{
	const struct config_option *o = source_option(sc, key);
	char lo[32], hi[32];
	int64_t ms;

	if (!o) {
		*ret = def_ms;
		return 0;
	}
	snprintf(lo, sizeof(lo), "%.3gs", (double)min_ms / 1000);
	snprintf(hi, sizeof(hi), "%.3gs", (double)max_ms / 1000);
	/* Numbers are seconds, as for the core's duration keys. */
	if (o->type == OPTION_INT || o->type == OPTION_FLOAT)
		ms = isfinite(o->f) && fabs(o->f) < 1e12 ? (int64_t)llround(o->f * 1000) : INT64_MAX;
	else if (o->type != OPTION_STRING || !o->str || parse_duration_ms(o->str, &ms) < 0)
		return source_opt_error(sc, o, err, errlen, "option '%s' must be a duration (%s)", key,
					CONFIG_DURATION_HELP);
	if (ms < min_ms || ms > max_ms)
		return source_opt_error(sc, o, err, errlen, "option '%s' must be between %s and %s", key, lo, hi);
	*ret = ms;
	return 0;
}

int source_opt_bool(const struct signal_conf *sc, const char *key, bool def, bool *ret, char *err, size_t errlen)
{
	const struct config_option *o = source_option(sc, key);

	if (!o) {
		*ret = def;
		return 0;
	}
	if (o->type != OPTION_BOOL)
		return source_opt_error(sc, o, err, errlen, "option '%s' must be true or false", key);
	*ret = o->i != 0;
	return 0;
}

int source_opt_list(const struct signal_conf *sc, const char *key, char ***ret, size_t *n, char *err,
		    size_t errlen)
{
	const struct config_option *o = source_option(sc, key);
	size_t count;
	char **v;

	*ret = NULL;
	*n = 0;
	if (!o)
		return 0;
	if (o->type == OPTION_LIST)
		count = o->n_list;
	else if (o->type == OPTION_STRING)
		count = 1;
	else
		return source_opt_error(sc, o, err, errlen, "option '%s' must be a string or a list of strings", key);
	v = calloc(count + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < count; i++) {
		v[i] = strdup(o->type == OPTION_LIST ? o->list[i] : o->str);
		if (!v[i]) {
			for (size_t j = 0; j < i; j++)
				free(v[j]);
			free(v);
			return -ENOMEM;
		}
	}
	*ret = v;
	*n = count;
	return 0;
}

static void on_later(struct later *l);

static int check_keys(const struct signal_conf *sc, const struct source_ops *ops, char *err, size_t errlen)
{
	size_t n_known = 0;

	while (ops->options && ops->options[n_known])
		n_known++;
	for (size_t i = 0; i < sc->source_options.n; i++) {
		const struct config_option *o = &sc->source_options.v[i];
		bool known = false;
		const char *near;

		for (size_t k = 0; k < n_known && !known; k++)
			known = strcmp(ops->options[k], o->key) == 0;
		if (known)
			continue;
		/* The suggestion core keys get. */
		near = config_near_miss(o->key, ops->options, n_known);
		return source_opt_error(sc, o, err, errlen, "unknown option '%s'%s%s%s", o->key,
					near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
	}
	return 0;
}

int source_new(const struct signal_conf *sc, const struct source_env *env, struct source **ret, char *err,
	       size_t errlen)
{
	const struct source_ops *ops;
	struct source *s;
	const char *name;
	int r;

	if (!sc->source)
		return source_opt_error(sc, NULL, err, errlen, "no source type given");
	ops = source_lookup(sc->source);
	if (!ops) {
		char known[256];

		source_type_list(known, sizeof(known));
		if (source_type_reserved(sc->source)) {
			source_opt_error(sc, NULL, err, errlen, "source type not available in this build (built: %s)",
					 known);
			return -EOPNOTSUPP;
		}
		return source_opt_error(sc, NULL, err, errlen,
					"unknown source type (known: %s; a source a driver feeds is read only by a "
					"group of that driver)", known);
	}
	r = check_keys(sc, ops, err, errlen);
	if (r < 0)
		return r;
	/* The source, its type's state and the signal's name in one block:
	 * three allocations a signal were 60,000 more at 10,000 groups. */
	name = sc->name ? sc->name : "";
	s = calloc(1, SOURCE_HEAD + round_up(ops->priv_size) + strlen(name) + 1);
	if (!s)
		return -ENOMEM;
	s->ops = ops;
	s->env = *env;
	s->timeout_ms = sc->timeout_ms > 0 ? sc->timeout_ms : SOURCE_DEFAULT_TIMEOUT_MS;
	strcpy(source_name_at(s), name);
	/* Registered from the start, so that source_complete_later()
	 * cannot fail inside a poll. */
	r = later_init(env->event, &s->later, on_later);
	if (r >= 0) {
		r = ops->init(s, sc, err, errlen);
	} else {
		snprintf(err, errlen, "%s:%d: signal '%s': %s", sc->file ? sc->file : "?", sc->line, source_name_at(s),
			 strerror(-r));
	}
	if (r < 0) {
		later_done(&s->later);
		if (ops->done)
			ops->done(s);
		free(s);
		return r;
	}
	*ret = s;
	return 0;
}

int source_poll(struct source *s, int64_t now_ms, source_done_fn done, void *userdata)
{
	int r;

	if (s->busy)
		return -EBUSY;
	s->busy = true;
	s->t_ms = now_ms;
	s->done = done;
	s->userdata = userdata;
	r = s->ops->poll(s);
	if (r < 0) {
		s->busy = false;
		return r;
	}
	return 0;
}

void source_free(struct source *s)
{
	if (!s)
		return;
	if (s->busy && s->ops->cancel)
		s->ops->cancel(s);
	later_done(&s->later);
	if (s->ops->done)
		s->ops->done(s);
	free(s->later_error);
	free(s);
}

static void complete(struct source *s, int status, double value, const char *error)
{
	source_done_fn done = s->done;
	void *userdata = s->userdata;

	if (!s->busy)
		return;
	if (status == 0 && !isfinite(value)) {
		status = -ERANGE;
		error = isnan(value) ? "value is NaN" : "value is infinite";
	}
	if (status < 0 && (!error || !*error))
		error = strerror(-status);
	s->busy = false;
	s->done = NULL;
	done(userdata, s->t_ms, status, status < 0 ? NAN : value, status < 0 ? error : NULL);
}

void source_complete(struct source *s, int status, double value, const char *fmt, ...)
{
	char error[SOURCE_ERROR_MAX] = "";
	va_list ap;

	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(error, sizeof(error), fmt, ap);
		va_end(ap);
	}
	complete(s, status, value, error);
}

static void on_later(struct later *l)
{
	struct source *s = (struct source *)((char *)l - offsetof(struct source, later));
	char *error = s->later_error;

	s->later_error = NULL;
	complete(s, s->later_status, s->later_value, error);
	free(error);
}

void source_complete_later(struct source *s, int status, double value, const char *fmt, ...)
{
	va_list ap;

	s->later_status = status;
	s->later_value = value;
	free(s->later_error);
	s->later_error = NULL;
	if (fmt) {
		char error[SOURCE_ERROR_MAX];

		va_start(ap, fmt);
		vsnprintf(error, sizeof(error), fmt, ap);
		va_end(ap);
		/* Without memory the result still comes, with strerror's words. */
		if (error[0])
			s->later_error = strdup(error);
	}
	later_post(&s->later);
}

const char *source_type_name(const struct source *s)
{
	return s->ops->name;
}

const char *source_signal_name(const struct source *s)
{
	return source_name_at(s);
}

void *source_priv(struct source *s)
{
	return s->ops->priv_size ? (char *)s + SOURCE_HEAD : NULL;
}

sd_event *source_event(const struct source *s)
{
	return s->env.event;
}

struct http *source_http(const struct source *s)
{
	return s->env.http;
}

int64_t source_timeout_ms(const struct source *s)
{
	return s->timeout_ms;
}

int64_t source_poll_time(const struct source *s)
{
	return s->t_ms;
}

void source_set_userdata(struct source *s, void *userdata)
{
	s->userdata = userdata;
}
