/* Checks of a configuration that need drivers and sources; see preflight.h. */
#include "agent/preflight.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-event.h>

#include "agent/driver.h"
#include "cluster/cluster.h"
#include "sources/http.h"
#include "sources/source.h"
#include "sources/cloud_worker.h"

/* What a driver's check reports to, through its host. */
struct collector {
	struct config_errors *errs;
	const struct driver_options *opts;
	const char *where; /* the group's driver section */
	bool failed;       /* out of memory */
};

static void add_error(struct collector *col, char *msg)
{
	char **v;

	if (!msg) {
		col->failed = true;
		return;
	}
	v = realloc(col->errs->v, (col->errs->n + 2) * sizeof(*v));
	if (!v) {
		free(msg);
		col->failed = true;
		return;
	}
	col->errs->v = v;
	v[col->errs->n++] = msg;
	v[col->errs->n] = NULL;
}

static void add_errorf(struct collector *col, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_errorf(struct collector *col, const char *fmt, ...)
{
	char *msg = NULL;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	add_error(col, msg);
}

/* True when `msg` starts with one of the locations the driver was given,
 * as the ABI asks a message about the configuration to. */
static bool located(const struct collector *col, const char *msg)
{
	size_t n = strlen(col->where);

	if (n && strncmp(msg, col->where, n) == 0 && msg[n] == ':')
		return true;
	for (size_t i = 0; i < col->opts->n; i++) {
		const char *w = col->opts->v[i].where;

		if (w && (n = strlen(w)) && strncmp(msg, w, n) == 0 && msg[n] == ':')
			return true;
	}
	return false;
}

/* The check host's log: errors become configuration errors; a message that
 * does not say where it belongs is put at the group's driver section. */
static void collect_log(const struct autoscaled_host *host, enum autoscaled_log_level level, const char *fmt, ...)
{
	struct collector *col = host->userdata;
	char msg[2048];
	va_list ap;

	if (level < AUTOSCALED_LOG_ERROR)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (located(col, msg) || !col->where[0])
		add_errorf(col, "%s", msg);
	else
		add_errorf(col, "%s: %s", col->where, msg);
}

static void check_driver(const struct group_conf *gc, const struct driver *drv, struct collector *col)
{
	struct driver_options opts = { 0 };
	struct autoscaled_host host;
	char where[4096 + 32];
	size_t before = col->errs->n;

	if (!AUTOSCALED_DRIVER_HAS_OP(drv->ops, check))
		return;
	if (driver_options_from_group(gc, &opts) < 0) {
		col->failed = true;
		return;
	}
	driver_section_where(gc, where, sizeof(where));
	col->opts = &opts;
	col->where = where;
	/* The daemon's host, with this collector in place of the journal. */
	driver_host_init(&host, gc->name, col);
	host.log = collect_log;
	host.metric = NULL;
	host.where = where[0] ? where : NULL;
	/* A driver that refuses without saying why still fails the check. */
	if (drv->ops->check(&host, opts.v, opts.n) < 0 && col->errs->n == before)
		add_errorf(col, "%s: driver '%s' refused the options of group '%s'", where, gc->driver, gc->name);
	driver_options_free(&opts);
}

/* A driver in the directory that feeds `source`, for a signal whose group
 * uses another driver. */
struct feeder {
	const char *source;
	const char *driver; /* the loader's, valid until exit */
};

static int find_feeder(void *ctx, const char *file, const struct driver *drv, const char *error)
{
	struct feeder *f = ctx;

	(void)file;
	(void)error;
	if (drv && driver_source_index(drv->ops, f->source) >= 0) {
		f->driver = drv->name;
		return 1;
	}
	return 0;
}

/* A signal's source that is none of the daemon's types: it must be one the
 * group's driver feeds (which the file cannot know, as it cannot know
 * which drivers are installed). Says which driver does feed it, or which
 * name was meant. */
static void unknown_source(const struct config *c, const struct group_conf *gc, const struct driver *drv,
			   const struct signal_conf *sc, struct collector *col)
{
	const char *names[64], *near;
	size_t n = source_type_names(names, 48);
	struct feeder f = { .source = sc->source };

	for (size_t i = 0; drv && i < drv->ops->n_sources && n < sizeof(names) / sizeof(names[0]); i++)
		names[n++] = drv->ops->sources[i].name;
	near = config_near_miss(sc->source, names, n);
	if (near) {
		add_errorf(col, "%s:%d: unknown source '%s' (did you mean '%s'?)", sc->file, sc->line, sc->source, near);
		return;
	}
	driver_list(driver_directory(c->agent.driver_directory), find_feeder, &f);
	if (f.driver)
		add_errorf(col, "%s:%d: signal '%s': source '%s' is fed by driver '%s', and group '%s' uses driver '%s'",
			   sc->file, sc->line, sc->name, sc->source, f.driver, gc->name, gc->driver);
	else
		add_errorf(col, "%s:%d: unknown source '%s'", sc->file, sc->line, sc->source);
}

static void check_signals(const struct config *c, const struct group_conf *gc, const struct driver *drv,
			  const struct source_env *env, struct collector *col)
{
	for (size_t i = 0; i < gc->n_signals; i++) {
		const struct signal_conf *sc = &gc->signals[i];
		struct source *s = NULL;
		char err[1024];

		if (drv && driver_source_index(drv->ops, sc->source) >= 0) {
			/* The group runtime gives the driver's source
			 * precedence; a driver may not shadow a type. */
			if (source_lookup(sc->source))
				add_errorf(col, "%s:%d: signal '%s': driver '%s' feeds a source named '%s', which is one "
					   "of the daemon's source types; rename the driver's", sc->file, sc->line,
					   sc->name, gc->driver, sc->source);
			else if (sc->source_options.n > 0)
				add_errorf(col, "%s:%d: signal '%s': source '%s' is fed by driver '%s' and takes no "
					   "source_options; the driver's own options say what it reads", sc->file,
					   sc->line, sc->name, sc->source, gc->driver);
			continue;
		}
		if (!source_lookup(sc->source) && !source_type_reserved(sc->source)) {
			/* Without the driver the question stays open; its
			 * own error is reported. */
			if (drv)
				unknown_source(c, gc, drv, sc, col);
			continue;
		}
		err[0] = '\0';
		if (source_new(sc, env, &s, err, sizeof(err)) < 0) {
			if (err[0])
				add_errorf(col, "%s", err);
			else
				add_errorf(col, "%s:%d: signal '%s': source '%s' cannot be set up", sc->file, sc->line,
					   sc->name, sc->source);
			continue;
		}
		source_free(s);
	}
}

/* The names of the drivers in the directory, for a near miss. */
struct names {
	char *v[64];
	size_t n;
};

static int add_name(void *ctx, const char *file, const struct driver *drv, const char *error)
{
	struct names *names = ctx;

	(void)file;
	(void)error;
	if (drv && names->n < sizeof(names->v) / sizeof(names->v[0]))
		names->v[names->n++] = drv->name;
	return 0;
}

static void driver_missing(const struct config *c, const struct group_conf *gc, const char *why, int r,
			   struct collector *col)
{
	const char *dir = driver_directory(c->agent.driver_directory), *near = NULL;
	struct names names = { .n = 0 };
	int line = gc->driver_line ? gc->driver_line : gc->line;

	if (r == -ENOENT) {
		driver_list(dir, add_name, &names);
		near = config_near_miss(gc->driver, (const char *const *)names.v, names.n);
	}
	if (r == -ENOENT)
		add_errorf(col, "%s:%d: unknown driver '%s'%s%s%s: no '%s.so' in '%s' ('autoscaled --list-drivers' shows "
			   "what is installed)", gc->file, line, gc->driver, near ? " (did you mean '" : "",
			   near ? near : "", near ? "'?)" : "", gc->driver, dir);
	else
		add_errorf(col, "%s:%d: %s", gc->file, line, why);
}

int preflight_check(const struct config *c, struct config_errors *errs)
{
	struct collector col = { .errs = errs, .where = "" };
	struct source_env env = { 0 };
	size_t before = errs->n;
	int r;

	/* The sources are built as start-up builds them: on a loop and an HTTP
	 * client of their own, which no poll ever runs on. */
	r = cloud_sources_register();
	if (r < 0 && r != -EEXIST)
		return r;
	r = sd_event_new(&env.event);
	if (r < 0)
		return r;
	r = http_new(env.event, &env.http);
	if (r < 0) {
		sd_event_unref(env.event);
		return r;
	}
	if (c->cluster) {
		char why[1024];

		if (cluster_check_conf(c->cluster, why, sizeof(why)) < 0)
			add_errorf(&col, "%s", why);
	}
	for (size_t i = 0; i < c->n_groups && !col.failed; i++) {
		const struct group_conf *gc = &c->groups[i];
		const struct driver *drv = NULL;
		char why[1024];

		r = driver_load(gc->driver, c->agent.driver_directory, &drv, why, sizeof(why));
		if (r < 0) {
			driver_missing(c, gc, why, r, &col);
			drv = NULL;
		} else {
			check_driver(gc, drv, &col);
		}
		check_signals(c, gc, drv, &env, &col);
	}
	http_free(env.http);
	sd_event_unref(env.event);
	if (col.failed)
		return -ENOMEM;
	return errs->n > before ? -EINVAL : 0;
}
