/* The schema of autoscaled.conf(5): the agent section, groups and their
 * signals, and the checks that span a group or the whole file. Profiles,
 * rules and behavior are in config-profile.c. Defaults are those of DESIGN.md
 * section 3.
 *
 * Messages of this file (besides those of config-get.c):
 *
 *   invalid driver name 'NAME' (a plugin's file name: 1 to 64 letters a-z, digits, '_' or '-')
 *   unknown source 'NAME' (did you mean 'NEAR'?)   or  unknown source 'NAME'
 *   duplicate group name 'NAME' (first defined at FILE:LINE)
 *   duplicate signal name 'NAME' (first defined at FILE:LINE)
 *   duplicate 'agent' section (first defined at FILE:LINE)
 *   'timeout' (20s) must not exceed 'poll_interval' (15s)
 *   'staleness' (5s) must be at least 'poll_interval' (15s)
 *   'KEY' must be an absolute path, not 'VALUE'
 *   'admin_socket' is longer than 107 characters
 *   'metrics_listen' must be HOST:PORT, such as "127.0.0.1:9851", not 'VALUE'
 *   'status_page' needs 'metrics_listen' on a loopback address (127.0.0.1, [::1] or localhost), not 'VALUE'
 *   more than 100000 groups
 *   'driver_concurrency' of 'DRIVER' must be an integer between 1 and 4096, not VALUE
 *   invalid driver name 'NAME' in 'driver_concurrency' (...)
 */
#include <errno.h>
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/host.h"
#include "config/config-private.h"

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))

/* The daemon's own source types. A driver's own sources (libvirt_cpu) are
 * named DRIVER_WHAT, which the driver loader enforces, so that another
 * name with an underscore may be one of them: whether the group's driver
 * feeds it is preflight's question, as whether the driver is installed
 * is. */
static const char *const known_sources[] = {
	"prometheus", "haproxy", "redis", "http_json", "exec", "replay", "gce_monitoring", "azure_monitor",
};

/* Whether `name` can be a driver's source: "DRIVER_WHAT" in the characters
 * of driver names (a-z, digits, '_'). */
static bool driver_source_name(const char *name)
{
	const char *u = strchr(name, '_');
	size_t len = strlen(name);

	return u && u > name && u[1] && len <= 64 && strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_") == len;
}

static const char *const top_keys[] = { "agent", "groups", "cluster" };

static const char *const agent_keys[] = {
	"interval", "state_directory", "admin_socket", "admin_group", "metrics_listen", "driver_directory", "dry_run",
	"notifications", "hooks", "status_page", "driver_concurrency", "history_memory",
};

static const char *const group_keys[] = {
	"name", "driver", "driver_options", "interval", "dry_run", "min", "max", "default", "signals", "profiles",
	"behavior", "notifications", "hooks", "warm_pool", "owner",
};

static const char *const warm_pool_keys[] = {
	"size", "state", "max_age", "refill", "warmup", "return_on_scale_in", "reseed_command",
};

static const char *const signal_keys[] = {
	"name", "source", "source_options", "type", "target", "window", "aggregation", "tolerance", "staleness",
	"poll_interval", "timeout", "forecast",
};

static const char *const forecast_keys[] = { "mode", "quantile", "service_level", "seed_file", "seed_format" };

static const struct enum_name forecast_modes[] = {
	{ "off", FORECAST_OFF },
	{ "observe", FORECAST_OBSERVE },
	{ "on", FORECAST_ON },
};

/* ------------------------------------------------------------------ agent */

static int check_absolute(struct config_ctx *x, const config_setting_t *s, const char *key, const char *v)
{
	if (v && v[0] != '/') {
		cfg_error(x, config_setting_get_member(s, key), "'%s' must be an absolute path, not '%s'", key, v);
		return -1;
	}
	return 0;
}

/* HOST:PORT, HOST possibly a bracketed IPv6 address; the metrics module
 * resolves it. */
static bool listen_valid(const char *v)
{
	const char *colon = strrchr(v, ':');
	char *end;
	long port;

	if (!colon || colon == v)
		return false;
	port = strtol(colon + 1, &end, 10);
	return colon[1] != '\0' && *end == '\0' && port >= 1 && port <= 65535;
}

static void empty_is_null(char **s)
{
	if (*s && !**s)
		*s = NULL;
}

static void read_driver_concurrency(struct config_ctx *x, const config_setting_t *s, struct agent_conf *a);

static void read_agent(struct config_ctx *x, const config_setting_t *s)
{
	struct agent_conf *a = &x->c->agent;

	cfg_check_keys(x, s, agent_keys, N_ELEMS(agent_keys));
	cfg_get_duration(x, s, "interval", 1 * MS_PER_SEC, 3600 * MS_PER_SEC, &a->interval_ms);
	if (cfg_get_string(x, s, "state_directory", &a->state_directory) > 0)
		check_absolute(x, s, "state_directory", a->state_directory);
	if (cfg_get_string(x, s, "admin_socket", &a->admin_socket) > 0 &&
	    check_absolute(x, s, "admin_socket", a->admin_socket) == 0 &&
	    strlen(a->admin_socket) >= sizeof(((struct sockaddr_un *)NULL)->sun_path))
		cfg_error(x, config_setting_get_member(s, "admin_socket"), "'admin_socket' is longer than %zu characters",
			  sizeof(((struct sockaddr_un *)NULL)->sun_path) - 1);
	cfg_get_string(x, s, "admin_group", &a->admin_group);
	empty_is_null(&a->admin_group);
	if (cfg_get_string(x, s, "metrics_listen", &a->metrics_listen) > 0) {
		empty_is_null(&a->metrics_listen);
		if (a->metrics_listen && !listen_valid(a->metrics_listen))
			cfg_error(x, config_setting_get_member(s, "metrics_listen"),
				  "'metrics_listen' must be HOST:PORT, such as \"127.0.0.1:9851\", not '%s'",
				  a->metrics_listen);
	}
	if (cfg_get_string(x, s, "driver_directory", &a->driver_directory) > 0) {
		empty_is_null(&a->driver_directory);
		check_absolute(x, s, "driver_directory", a->driver_directory);
	}
	cfg_get_bool(x, s, "dry_run", &a->dry_run);
	if (cfg_get_bool(x, s, "status_page", &a->status_page) > 0 && a->status_page &&
	    (!a->metrics_listen || !listen_valid(a->metrics_listen) || !host_is_loopback(a->metrics_listen)))
		cfg_error(x, config_setting_get_member(s, "status_page"),
			  "'status_page' needs 'metrics_listen' on a loopback address (127.0.0.1, [::1] or localhost), "
			  "not '%s'",
			  a->metrics_listen ? a->metrics_listen : "");
	cfg_read_notify(x, s, &a->notify, NULL);
	read_driver_concurrency(x, s, a);
	if (cfg_get_count(x, s, "history_memory", &a->history_memory_mib) > 0 &&
	    (a->history_memory_mib < 1 || a->history_memory_mib > 65536))
		cfg_error(x, config_setting_get_member(s, "history_memory"),
			  "'history_memory' is in MiB, from 1 to 65536, not %d", a->history_memory_mib);
}

static void agent_defaults(struct config_ctx *x)
{
	struct agent_conf *a = &x->c->agent;

	a->interval_ms = 15 * MS_PER_SEC;
	a->history_memory_mib = 3;
	cfg_notify_defaults(&a->notify);
	/* configure's paths (/var/lib/autoscaled and /run/autoscaled by
	 * default, the unit's StateDirectory= and RuntimeDirectory=), the same
	 * autoscalectl looks for. */
	a->state_directory = cfg_strdup(x, AUTOSCALED_STATE_DIRECTORY);
	a->admin_socket = cfg_strdup(x, AUTOSCALED_ADMIN_SOCKET);
}

/* ---------------------------------------------------------------- drivers */

/* Whether the driver exists is for preflight.c, which looks it up as the
 * loader does; the file only needs a name that can be a plugin's file name
 * (never a path). */
static bool driver_name_valid(const char *name)
{
	size_t len = strlen(name);

	return len > 0 && len <= 64 && strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_-") == len;
}

/* driver_concurrency = { libvirt = 2; "gce-mig" = 100; }: a driver's name
 * and how many of its calls may run at once. */
static void read_driver_concurrency(struct config_ctx *x, const config_setting_t *s, struct agent_conf *a)
{
	const config_setting_t *g = cfg_get_group(x, s, "driver_concurrency");
	size_t n;

	if (!g)
		return;
	n = (size_t)config_setting_length(g);
	a->driver_concurrency = cfg_alloc(x, n, sizeof(*a->driver_concurrency));
	if (!a->driver_concurrency)
		return;
	for (size_t i = 0; i < n; i++) {
		const config_setting_t *m = config_setting_get_elem(g, (unsigned)i);
		const char *name = config_setting_name(m);
		long long v;

		if (!driver_name_valid(name)) {
			cfg_error(x, m,
				  "invalid driver name '%s' in 'driver_concurrency' (a plugin's file name: 1 to 64 letters "
				  "a-z, digits, '_' or '-')",
				  name);
			continue;
		}
		if (config_setting_type(m) != CONFIG_TYPE_INT && config_setting_type(m) != CONFIG_TYPE_INT64) {
			cfg_error(x, m, "'driver_concurrency' of '%s' must be an integer between 1 and %d", name,
				  CONFIG_MAX_DRIVER_CONCURRENCY);
			continue;
		}
		v = config_setting_get_int64(m);
		if (v < 1 || v > CONFIG_MAX_DRIVER_CONCURRENCY) {
			cfg_error(x, m, "'driver_concurrency' of '%s' must be an integer between 1 and %d, not %lld", name,
				  CONFIG_MAX_DRIVER_CONCURRENCY, v);
			continue;
		}
		a->driver_concurrency[a->n_driver_concurrency].driver = cfg_strdup(x, name);
		if (!a->driver_concurrency[a->n_driver_concurrency].driver)
			return;
		a->driver_concurrency[a->n_driver_concurrency++].limit = (int)v;
	}
}

static void unknown_name(struct config_ctx *x, const config_setting_t *m, const char *what, const char *name,
			 const char *const *known, size_t n)
{
	const char *near = cfg_near_miss(name, known, n);

	if (near)
		cfg_error(x, m, "unknown %s '%s' (did you mean '%s'?)", what, name, near);
	else
		cfg_error(x, m, "unknown %s '%s'", what, name);
}

/* ---------------------------------------------------------------- signals */

/* The signal's forecaster. A seed file's format is checked here so that a
 * typo is a FILE:LINE error, not a surprise at the first start. */
static void read_forecast(struct config_ctx *x, const config_setting_t *s, struct signal_conf *sig)
{
	const config_setting_t *m = cfg_get_group(x, s, "forecast");
	struct forecast_conf *fc;
	enum trace_format tf;
	int v;

	sig->forecast = NULL;
	if (!m || !(fc = cfg_alloc(x, 1, sizeof(*fc))))
		return;
	*fc = *signal_forecast(sig);
	sig->forecast = fc;
	fc->file = cfg_file_name(x, m);
	fc->line = (int)m->line;
	cfg_check_keys(x, m, forecast_keys, N_ELEMS(forecast_keys));
	if (cfg_get_enum(x, m, "mode", forecast_modes, N_ELEMS(forecast_modes), &v) == 0)
		cfg_need(x, m, "mode");
	else
		fc->mode = (enum forecast_mode)v;
	if (cfg_get_number(x, m, "quantile", &fc->quantile) > 0 && !(fc->quantile >= 0.5 && fc->quantile <= 0.999))
		cfg_error(x, config_setting_get_member(m, "quantile"),
			  "'quantile' must be between 0.5 and 0.999, not %g", fc->quantile);
	if (cfg_get_number(x, m, "service_level", &fc->service_level) > 0 &&
	    !(fc->service_level >= CONFIG_SERVICE_LEVEL_MIN && fc->service_level <= CONFIG_SERVICE_LEVEL_MAX))
		cfg_error(x, config_setting_get_member(m, "service_level"),
			  "'service_level' must be between %g and %g, not %g", CONFIG_SERVICE_LEVEL_MIN,
			  CONFIG_SERVICE_LEVEL_MAX, fc->service_level);
	cfg_get_string(x, m, "seed_file", &fc->seed_file);
	empty_is_null(&fc->seed_file);
	if (cfg_get_string(x, m, "seed_format", &fc->seed_format) > 0 && fc->seed_format &&
	    trace_format_parse(fc->seed_format, &tf) < 0)
		cfg_error(x, config_setting_get_member(m, "seed_format"), "unknown trace format '%s'", fc->seed_format);
	if (fc->seed_format && !fc->seed_file)
		cfg_error(x, config_setting_get_member(m, "seed_format"), "'seed_format' without 'seed_file'");
	if (fc->mode != FORECAST_OFF && !(sig->target > 0))
		cfg_error(x, m, "a forecast needs the signal's 'target' to turn a value into instances");
}

static void read_signal(struct config_ctx *x, const config_setting_t *s, const struct group_conf *g,
			struct signal_conf *sig)
{
	bool poll_ok, stale_set, timeout_set;
	char b1[32], b2[32];
	int v;

	sig->file = cfg_file_name(x, s);
	sig->line = (int)s->line;
	sig->window_ms = 60 * MS_PER_SEC;
	sig->aggregation = AGG_AVG;
	sig->tolerance = 0.1;
	sig->poll_interval_ms = g->interval_ms;
	cfg_check_keys(x, s, signal_keys, N_ELEMS(signal_keys));
	cfg_get_name(x, s, "signal", &sig->name);
	if (cfg_get_string(x, s, "source", &sig->source) == 0)
		cfg_need(x, s, "source");
	else if (sig->source) {
		size_t i;

		for (i = 0; i < N_ELEMS(known_sources); i++)
			if (strcmp(sig->source, known_sources[i]) == 0)
				break;
		if (i == N_ELEMS(known_sources) && !driver_source_name(sig->source))
			unknown_name(x, config_setting_get_member(s, "source"), "source", sig->source, known_sources,
				     N_ELEMS(known_sources));
	}
	cfg_get_options(x, s, "source_options", &sig->source_options);
	if (cfg_get_enum(x, s, "type", cfg_signal_types, N_SIGNAL_TYPES, &v) == 0)
		cfg_need(x, s, "type");
	else
		sig->type = (enum signal_type)v;
	/* Without a target the signal feeds threshold rules only (Azure
	 * style); check_rules_only() makes sure some rule reads it. */
	cfg_get_positive(x, s, "target", &sig->target);
	cfg_get_duration(x, s, "window", 0, CONFIG_MAX_STABILIZATION_MS, &sig->window_ms);
	if (cfg_get_enum(x, s, "aggregation", cfg_aggregations, N_AGGREGATIONS, &v) > 0)
		sig->aggregation = (enum aggregation)v;
	if (cfg_get_number(x, s, "tolerance", &sig->tolerance) > 0 && (sig->tolerance < 0 || sig->tolerance > 1))
		cfg_error(x, config_setting_get_member(s, "tolerance"), "'tolerance' must be between 0 and 1, not %g",
			  sig->tolerance);
	poll_ok = cfg_get_duration(x, s, "poll_interval", 1 * MS_PER_SEC, 3600 * MS_PER_SEC, &sig->poll_interval_ms) >= 0;
	sig->staleness_ms = 3 * sig->poll_interval_ms;
	sig->timeout_ms = sig->poll_interval_ms < 10 * MS_PER_SEC ? sig->poll_interval_ms : 10 * MS_PER_SEC;
	stale_set = cfg_get_duration(x, s, "staleness", 1 * MS_PER_SEC, 86400 * MS_PER_SEC, &sig->staleness_ms) > 0;
	timeout_set = cfg_get_duration(x, s, "timeout", 100, 3600 * MS_PER_SEC, &sig->timeout_ms) > 0;
	/* A limit below the poll interval would make every window stale, and
	 * a timeout above it would let polls of one signal pile up. */
	if (poll_ok && stale_set && sig->staleness_ms < sig->poll_interval_ms)
		cfg_error(x, config_setting_get_member(s, "staleness"), "'staleness' (%s) must be at least 'poll_interval' (%s)",
			  cfg_format_duration(b1, sig->staleness_ms), cfg_format_duration(b2, sig->poll_interval_ms));
	if (poll_ok && timeout_set && sig->timeout_ms > sig->poll_interval_ms)
		cfg_error(x, config_setting_get_member(s, "timeout"), "'timeout' (%s) must not exceed 'poll_interval' (%s)",
			  cfg_format_duration(b1, sig->timeout_ms), cfg_format_duration(b2, sig->poll_interval_ms));
	read_forecast(x, s, sig);
}

static void read_signals(struct config_ctx *x, const config_setting_t *s, struct group_conf *g)
{
	size_t n;
	const config_setting_t *list = cfg_get_list(x, s, "signals", CONFIG_MAX_SIGNALS, &n);

	if (!list || n == 0)
		return;
	g->signals = cfg_alloc(x, n, sizeof(*g->signals));
	if (!g->signals)
		return;
	for (size_t i = 0; i < n; i++) {
		const config_setting_t *e = cfg_list_group(x, list, i);
		struct signal_conf *sig = &g->signals[g->n_signals];

		if (!e)
			continue;
		g->n_signals++;
		read_signal(x, e, g, sig);
		for (size_t j = 0; sig->name && j + 1 < g->n_signals; j++) {
			if (g->signals[j].name && strcmp(g->signals[j].name, sig->name) == 0) {
				cfg_error(x, config_setting_get_member(e, "name"),
					  "duplicate signal name '%s' (first defined at %s:%d)", sig->name,
					  g->signals[j].file, g->signals[j].line);
				break;
			}
		}
	}
}

/* ----------------------------------------------------------------- groups */

/* A signal without a target recommends nothing by itself: it is there for
 * threshold rules, so one that no rule of any profile reads is a mistake. */
static void check_rules_only(struct config_ctx *x, const config_setting_t *s, const struct group_conf *g)
{
	const config_setting_t *list = config_setting_get_member(s, "signals");

	for (size_t i = 0; i < g->n_signals; i++) {
		const config_setting_t *e = list ? config_setting_get_elem(list, (unsigned)i) : NULL;
		bool read = false;

		/* A target that is there but wrong has its own message. */
		if (g->signals[i].target > 0 || !g->signals[i].name || (e && config_setting_get_member(e, "target")))
			continue;
		for (size_t p = 0; p < g->n_profiles && !read; p++)
			for (size_t r = 0; r < g->profiles[p].n_rules; r++)
				read = read || g->profiles[p].rules[r].signal_index == (int)i;
		if (!read)
			cfg_error(x, e ? e : s,
				  "signal '%s' has no 'target' and no rule reads it", g->signals[i].name);
	}
}

/* A libvirt group's warm pool. The clouds sell their own standby pools
 * (AWS warm pools, GCE standby pools, Azure standby pools), which their
 * drivers do not manage, so only libvirt takes one: elsewhere it is an
 * error rather than a setting that silently does nothing. */
static void read_warm_pool(struct config_ctx *x, const config_setting_t *s, struct group_conf *g)
{
	const config_setting_t *m = cfg_get_group(x, s, "warm_pool");
	struct warm_pool_conf *w;
	int v;

	if (!m || !(w = cfg_alloc(x, 1, sizeof(*w))))
		return;
	*w = config_warm_pool_none;
	g->warm_pool = w;
	w->file = cfg_file_name(x, m);
	w->line = (int)m->line;
	cfg_check_keys(x, m, warm_pool_keys, N_ELEMS(warm_pool_keys));
	if (cfg_get_count(x, m, "size", &w->size) == 0)
		cfg_need(x, m, "size");
	else if (w->size > 1000)
		cfg_error(x, config_setting_get_member(m, "size"), "'size' must be between 0 and 1000, not %d", w->size);
	if (cfg_get_enum(x, m, "state", cfg_warm_states, N_WARM_STATES, &v) > 0)
		w->state = (enum warm_state)v;
	cfg_get_duration(x, m, "max_age", 60 * MS_PER_SEC, 365 * 86400 * MS_PER_SEC, &w->max_age_ms);
	cfg_get_duration(x, m, "refill", 1 * MS_PER_SEC, 86400 * MS_PER_SEC, &w->refill_ms);
	cfg_get_duration(x, m, "warmup", 0, 3600 * MS_PER_SEC, &w->warmup_ms);
	cfg_get_bool(x, m, "return_on_scale_in", &w->return_on_scale_in);
	cfg_get_argv(x, m, "reseed_command", &w->reseed_command, &w->n_reseed_command);
	if (w->return_on_scale_in && w->state == WARM_STOPPED)
		cfg_error(x, config_setting_get_member(m, "return_on_scale_in"),
			  "'return_on_scale_in' needs state \"paused\" or \"saved\": a stopped warm member is a disk "
			  "never booted, which a used instance is not");
	if (g->driver && strcmp(g->driver, "libvirt") != 0)
		cfg_error(x, m,
			  "'warm_pool' is for driver 'libvirt' only, not '%s' (a cloud's own standby pool is set up "
			  "in the cloud)",
			  g->driver);
}

/* A group's notifications and hooks: the agent's, shared, when the group
 * sets neither. */
static void read_group_notify(struct config_ctx *x, const config_setting_t *s, struct group_conf *g)
{
	const struct notify_conf *a = &x->c->agent.notify;
	struct notify_conf n, *p;

	if (!config_setting_get_member(s, "notifications") && !config_setting_get_member(s, "hooks")) {
		g->notify = a;
		return;
	}
	cfg_read_notify(x, s, &n, a);
	if ((p = cfg_alloc(x, 1, sizeof(*p)))) {
		*p = n;
		g->notify = p;
	}
}

static void read_group(struct config_ctx *x, const config_setting_t *s, struct group_conf *g)
{
	const struct agent_conf *a = &x->c->agent;

	g->file = cfg_file_name(x, s);
	g->line = (int)s->line;
	g->interval_ms = a->interval_ms;
	cfg_check_keys(x, s, group_keys, N_ELEMS(group_keys));
	cfg_get_name(x, s, "group", &g->name);
	if (cfg_get_string(x, s, "driver", &g->driver) == 0)
		cfg_need(x, s, "driver");
	else if (g->driver && !driver_name_valid(g->driver))
		cfg_error(x, config_setting_get_member(s, "driver"),
			  "invalid driver name '%s' (a plugin's file name: 1 to 64 letters a-z, digits, '_' or '-')",
			  g->driver);
	if (config_setting_get_member(s, "driver"))
		g->driver_line = (int)config_setting_get_member(s, "driver")->line;
	cfg_get_options(x, s, "driver_options", &g->driver_options);
	cfg_get_duration(x, s, "interval", 1 * MS_PER_SEC, 3600 * MS_PER_SEC, &g->interval_ms);
	/* The agent's dry_run is a safety switch for every group; a group
	 * cannot opt out of it. */
	cfg_get_bool(x, s, "dry_run", &g->dry_run);
	g->dry_run = g->dry_run || a->dry_run;
	read_signals(x, s, g);
	cfg_read_profiles(x, s, g);
	cfg_read_behavior(x, s, g);
	check_rules_only(x, s, g);
	read_group_notify(x, s, g);
	read_warm_pool(x, s, g);
	cfg_read_owner(x, s, g);
}

static bool opt_equal(const struct group_conf *a, const struct group_conf *b, const char *key, bool icase)
{
	const char *va = options_get_str(&a->driver_options, key, NULL);
	const char *vb = options_get_str(&b->driver_options, key, NULL);

	if (!va || !vb)
		return va == vb;
	return icase ? strcasecmp(va, vb) == 0 : strcmp(va, vb) == 0;
}

/* Whether the libvirt groups a and b connect to one hypervisor: a URI in
 * both lists (a group without `uri` uses qemu:///system, as the driver
 * does). */
static bool lv_uri_overlap(const struct group_conf *a, const struct group_conf *b)
{
	const struct config_option *ua = options_get(&a->driver_options, "uri");
	const struct config_option *ub = options_get(&b->driver_options, "uri");
	static const char *const def = "qemu:///system";
	size_t na = ua ? (ua->type == OPTION_LIST ? ua->n_list : 1) : 1;
	size_t nb = ub ? (ub->type == OPTION_LIST ? ub->n_list : 1) : 1;

	for (size_t i = 0; i < na; i++) {
		const char *x = !ua ? def : ua->type == OPTION_LIST ? ua->list[i] : ua->str;

		for (size_t j = 0; j < nb; j++) {
			const char *y = !ub ? def : ub->type == OPTION_LIST ? ub->list[j] : ub->str;

			if (x && y && strcmp(x, y) == 0)
				return true;
		}
	}
	return false;
}

/* The libvirt name pattern of g split around %n and expanded with the
 * group's name ("%g-%n" for "web": "web-" and ""); -EINVAL when the
 * pattern is one the driver refuses anyway (it reports that itself). */
static int lv_name_parts(const struct group_conf *g, char *pre, char *suf, size_t len)
{
	const char *pat = options_get_str(&g->driver_options, "name_pattern", "%g-%n");
	const char *n = strstr(pat, "%n");
	char *out[2] = { pre, suf };
	const char *from[2] = { pat, n ? n + 2 : NULL }, *to[2] = { n, n ? pat + strlen(pat) : NULL };

	if (!n || strstr(n + 2, "%n"))
		return -EINVAL;
	for (int k = 0; k < 2; k++) {
		size_t pos = 0;

		for (const char *p = from[k]; p < to[k]; p++) {
			const char *add = NULL;
			char one[2] = { *p, '\0' };

			if (*p == '%' && p + 1 < to[k] && p[1] == 'g')
				add = g->name, p++;
			else if (*p == '%' && p + 1 < to[k] && p[1] == '%')
				add = "%", p++;
			else if (*p == '%')
				return -EINVAL;
			else
				add = one;
			if (pos + strlen(add) >= len)
				return -EINVAL;
			memcpy(out[k] + pos, add, strlen(add) + 1);
			pos += strlen(add);
		}
		out[k][pos] = '\0';
	}
	return 0;
}

static bool all_digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

/* Whether two libvirt groups can give a domain the same name. Each member's
 * metadata tag carries its group's name, and group names are unique in a
 * configuration, so the tags alone never mix two groups' members; there is
 * no tag option to share. What two groups on one hypervisor do share is the
 * domain (and volume) namespace: names built as PREFIX<index>SUFFIX overlap
 * when one prefix extends the other by digits not starting with 0 (the
 * index has no leading zero) and one suffix extends the other by digits.
 * Then one group defines over the other's names and its volume sweep
 * deletes the other's half-created members' volumes. */
static bool lv_names_overlap(const struct group_conf *a, const struct group_conf *b)
{
	char pa[256], sa[256], pb[256], sb[256];

	if (lv_name_parts(a, pa, sa, sizeof(pa)) < 0 || lv_name_parts(b, pb, sb, sizeof(pb)) < 0)
		return false;
	const char *p1 = strlen(pa) <= strlen(pb) ? pa : pb, *p2 = p1 == pa ? pb : pa;
	const char *s1 = strlen(sa) <= strlen(sb) ? sa : sb, *s2 = s1 == sa ? sb : sa;
	size_t lp = strlen(p1), ls = strlen(s1), dp = strlen(p2) - lp, ds = strlen(s2) - ls;

	if (strncmp(p1, p2, lp) != 0 || strcmp(s2 + ds, s1) != 0)
		return false;
	return all_digits(p2 + lp, dp) && (dp == 0 || p2[lp] != '0') && all_digits(s2, ds);
}

/* What two groups both drive, or NULL: two controllers moving one number
 * do not converge, they oscillate. ARM resource names compare without
 * case, as ARM does. */
static const char *shared_target(const struct group_conf *a, const struct group_conf *b)
{
	if (!a->driver || !b->driver || strcmp(a->driver, b->driver) != 0)
		return NULL;
	if (strcmp(a->driver, "gce-mig") == 0 && options_get_str(&a->driver_options, "name", NULL) &&
	    opt_equal(a, b, "project", false) && opt_equal(a, b, "zone", false) && opt_equal(a, b, "region", false) &&
	    opt_equal(a, b, "name", false))
		return "managed instance group";
	if (strcmp(a->driver, "azure-vmss") == 0 && options_get_str(&a->driver_options, "name", NULL) &&
	    opt_equal(a, b, "subscription", true) && opt_equal(a, b, "resource_group", true) &&
	    opt_equal(a, b, "name", true))
		return "scale set";
	/* A repeated group name is reported as such; its patterns expand alike. */
	if (strcmp(a->driver, "libvirt") == 0 && a->name && b->name && strcmp(a->name, b->name) != 0 &&
	    lv_uri_overlap(a, b) && lv_names_overlap(a, b))
		return "libvirt domain names";
	return NULL;
}

/* The cloud target a GCE or Azure group drives, as a key that two groups
 * share exactly when shared_target() says they drive one target
 * (malloc'ed), or NULL: another driver, or no name to compare. */
static char *target_key(const struct group_conf *g)
{
	static const char *const gce[] = {"project", "zone", "region", "name"};
	static const char *const azure[] = {"subscription", "resource_group", "name"};
	const char *const *keys;
	size_t n;
	bool icase;
	GString *k;

	if (!g->driver || !options_get_str(&g->driver_options, "name", NULL))
		return NULL;
	if (strcmp(g->driver, "gce-mig") == 0) {
		keys = gce;
		n = N_ELEMS(gce);
		icase = false;
	} else if (strcmp(g->driver, "azure-vmss") == 0) {
		keys = azure;
		n = N_ELEMS(azure);
		icase = true;
	} else {
		return NULL;
	}
	k = g_string_new(g->driver);
	for (size_t i = 0; i < n; i++) {
		const char *v = options_get_str(&g->driver_options, keys[i], NULL);

		/* An absent option and an empty one differ, as in opt_equal(). */
		g_string_append_c(k, '\x1f');
		g_string_append_c(k, v ? '=' : '-');
		if (v && icase) {
			for (const char *c = v; *c; c++)
				g_string_append_c(k, g_ascii_tolower(*c));
		} else if (v) {
			g_string_append(k, v);
		}
	}
	return g_string_free(k, false);
}

/* The first group before G that drives what G drives, and what that is;
 * NULL when none. TARGETS maps target_key() to the first group of each
 * key, so that ten thousand groups are not compared pair by pair; libvirt
 * groups, whose name patterns may overlap without being equal, are
 * compared with every libvirt group before them. */
static const struct group_conf *shared_with(const struct config *c, const struct group_conf *g,
					    GHashTable *targets, const char **what)
{
	char *key = target_key(g);

	*what = NULL;
	if (key) {
		gpointer first;

		if (g_hash_table_lookup_extended(targets, key, NULL, &first)) {
			const struct group_conf *f = &c->groups[(uintptr_t)first];

			g_free(key);
			*what = f->name ? shared_target(f, g) : NULL;
			return *what ? f : NULL;
		}
		g_hash_table_insert(targets, key, (void *)(uintptr_t)(g - c->groups));
		return NULL;
	}
	if (!g->driver || strcmp(g->driver, "libvirt") != 0)
		return NULL;
	for (const struct group_conf *f = c->groups; f < g; f++)
		if (f->name && (*what = shared_target(f, g)))
			return f;
	return NULL;
}

/* Frees what the reader's tree holds under group E, once it is read: the
 * configuration copies what it keeps, and the checks after the groups
 * work on the copies. libconfig's tree of a file is about six times the
 * file (10,000 groups: 36 MB for 6 MB), and a reload builds the new
 * configuration beside the old one: let go a group at a time, the tree
 * and the new groups are not both whole in memory at once. From the last
 * member back, so that no member is moved. */
static void release_members(const config_setting_t *e)
{
	config_setting_t *g = (config_setting_t *)e;
	int n;

	while ((n = config_setting_length(g)) > 0)
		if (config_setting_remove_elem(g, (unsigned)(n - 1)) != CONFIG_TRUE)
			break;
}

static void read_groups(struct config_ctx *x, const config_setting_t *list, GHashTable *names, GHashTable *targets)
{
	struct config *c = x->c;
	size_t n = (size_t)config_setting_length(list);
	struct group_conf *v;

	if (n == 0)
		return;
	if (c->n_groups + n > CONFIG_MAX_GROUPS) {
		cfg_error(x, list, "more than %d groups", CONFIG_MAX_GROUPS);
		return;
	}
	v = realloc(c->groups, (c->n_groups + n) * sizeof(*v));
	if (!v) {
		x->oom = true;
		return;
	}
	c->groups = v;
	for (size_t i = 0; i < n && !x->oom; i++) {
		const config_setting_t *e = cfg_list_group(x, list, i);
		struct group_conf *g = &c->groups[c->n_groups];
		const struct group_conf *f;
		const char *what;
		void *first;

		if (!e)
			continue;
		memset(g, 0, sizeof(*g));
		c->n_groups++;
		read_group(x, e, g);
		if (!g->name)
			continue;
		if (g_hash_table_lookup_extended(names, g->name, NULL, &first)) {
			f = &c->groups[(uintptr_t)first];
			cfg_error(x, config_setting_get_member(e, "name"), "duplicate group name '%s' (first defined at %s:%d)",
				  g->name, f->file, f->line);
		} else {
			g_hash_table_insert(names, g->name, (void *)(uintptr_t)(c->n_groups - 1));
		}
		f = shared_with(c, g, targets, &what);
		if (f) {
			const config_setting_t *o = config_setting_get_member(e, "driver_options");

			cfg_error(x, o ? o : e, "group '%s' drives the same %s as group '%s' (defined at %s:%d): "
				  "two controllers would fight", g->name, what, f->name, f->file, f->line);
		}
		release_members(e);
	}
}

void cfg_read_units(struct config_ctx *x)
{
	const config_setting_t *agent = NULL;
	struct config_unit *agent_unit = NULL;
	GHashTable *names, *targets;

	agent_defaults(x);
	for (size_t i = 0; i < x->n_units; i++) {
		const config_setting_t *root = config_root_setting(&x->units[i]->lc), *a;

		x->unit = x->units[i];
		cfg_check_keys(x, root, top_keys, N_ELEMS(top_keys));
		a = config_setting_get_member(root, "agent");
		if (!a)
			continue;
		if (agent) {
			struct config_unit *u = x->unit;
			const char *ff;

			x->unit = agent_unit;
			ff = cfg_file_name(x, agent);
			x->unit = u;
			cfg_error(x, a, "duplicate 'agent' section (first defined at %s:%u)", ff, agent->line);
			continue;
		}
		agent = a;
		agent_unit = x->unit;
	}
	if (agent) {
		x->unit = agent_unit;
		if (config_setting_is_group(agent))
			read_agent(x, agent);
		else
			cfg_error(x, agent, "'agent' must be a group { ... }");
	}
	/* Before the groups: their `owner` needs it. */
	cfg_read_cluster(x);
	names = g_hash_table_new(g_str_hash, g_str_equal);
	targets = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	for (size_t i = 0; i < x->n_units && !x->oom; i++) {
		const config_setting_t *list;
		size_t n;

		x->unit = x->units[i];
		list = cfg_get_list(x, config_root_setting(&x->unit->lc), "groups", CONFIG_MAX_GROUPS, &n);
		if (list)
			read_groups(x, list, names, targets);
	}
	g_hash_table_destroy(targets);
	g_hash_table_destroy(names);
}
