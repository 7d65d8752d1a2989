/* Prometheus metrics; see metrics.h.
 *
 * Names follow the Prometheus conventions: the autoscaled_ prefix, base
 * units (seconds), _total for counters, one metric family per name with its
 * HELP and TYPE before the samples, and label values escaped. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>

#include <glib.h>

#include "base/clock.h"
#include "base/heap.h"
#include "admin/httpd.h"
#include "log/log.h"
#include "admin/metrics.h"

/* Bounds on what the configuration and the code can make the registry
 * hold. */
#define METRICS_MAX_KINDS 16       /* error kinds per group */
#define METRICS_MAX_OPERATIONS 8   /* driver operations per group */
#define METRICS_MAX_BUDGETS 16     /* throttling budgets a driver reports per group */
#define METRICS_MAX_WARM_STATES 8  /* states of warm members a driver reports per group */
#define METRICS_MAX_CALL_SERIES 64 /* (driver, operation) pairs in the call histogram */
#define METRICS_MAX_LABEL 128      /* a longer label is not recorded */
#define METRICS_MAX_BODY 1024
#define METRICS_SHARE_MS 1000

static const double eval_buckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1};
static const double driver_buckets[] = {0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300};
#define N_EVAL_BUCKETS (sizeof(eval_buckets) / sizeof(eval_buckets[0]))
#define N_DRIVER_BUCKETS (sizeof(driver_buckets) / sizeof(driver_buckets[0]))
/* Hold reasons are counted by their enum value (the unit test checks that
 * the one after the last has no name). */
#define N_HOLDS HOLD_REASON_COUNT

/* The names a group's entry holds (its signals', its driver's and its
 * operations', its profile's, its error kinds') are mostly the same in
 * every group: each is kept once, with a count of its holders, instead of
 * a copy in each group (some eight small blocks a group). Every registry
 * shares the pool; its own lock, since two registries (the tests make
 * several) have two locks. */
struct pooled_name {
	size_t holders;
	char name[]; /* the table's key */
};
static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;
static GHashTable *names; /* name -> struct pooled_name */

/* NAME, held once more; NULL on ENOMEM. */
static char *name_hold(const char *name)
{
	struct pooled_name *e;
	size_t len = strlen(name);

	pthread_mutex_lock(&names_lock);
	if (!names)
		names = g_hash_table_new(g_str_hash, g_str_equal);
	e = g_hash_table_lookup(names, name);
	if (e) {
		e->holders++;
	} else if ((e = malloc(sizeof(*e) + len + 1))) {
		e->holders = 1;
		memcpy(e->name, name, len + 1);
		g_hash_table_insert(names, e->name, e);
	}
	pthread_mutex_unlock(&names_lock);
	return e ? e->name : NULL;
}

/* Lets go of a name from name_hold(); NULL does nothing. */
static void name_drop(char *name)
{
	struct pooled_name *e;

	if (!name)
		return;
	pthread_mutex_lock(&names_lock);
	e = g_hash_table_lookup(names, name);
	if (e && --e->holders == 0) {
		g_hash_table_steal(names, name);
		free(e);
	}
	pthread_mutex_unlock(&names_lock);
}

struct histogram {
	unsigned long long buckets[16]; /* cumulative counts are computed when written */
	unsigned long long count;
	double sum;
};

struct named_counter {
	char *name;
	unsigned long long n;
};

/* A group's share of a histogram: its count and sum, as a summary
 * without quantiles. */
struct summary {
	unsigned long long count;
	double sum;
};

struct named_summary {
	char *name;
	struct summary s;
};

/* The driver call histogram's series: one for each driver and operation,
 * over all the groups. */
struct call_histogram {
	char *driver, *operation;
	struct histogram h;
	double cpu;                /* seconds of CPU on the calls' threads */
};

struct named_gauge {
	char *name;
	double value;
};

struct signal_metric {
	char *name;
	double value;
	double last_sample; /* wall time of the last good sample, 0: none yet */
	int recommendation;
	bool valid; /* false until an evaluation found it valid */
	/* The forecast one boot time ahead (group total) and the instances
	 * it needs, in observe and in on mode; absent without one. With a
	 * service level (0: none), the offset it moved the quantiles by and
	 * the share of samples short it measured. Floats, packed beside the
	 * ints: one of these a signal, 30,000 of them at 10,000 groups. */
	bool have_forecast;
	double forecast;
	int forecast_recommendation;
	float forecast_offset;
	float service_level;
	float service_short;
};

/* A group's entry; the small fields side by side, as padding between
 * them was bytes in every one of ten thousand entries. */
struct group_metrics {
	char *name;
	int current, desired;
	double boot_seconds; /* the boot time in force at the last evaluation */
	int owned; /* cluster mode: 0 or 1; -1 outside a cluster or not evaluated yet */
	/* The active profile and its bounds: the default profile's until
	 * the first evaluation; have_bounds is false for a group recorded
	 * before its configuration was (the unit tests do that). */
	int min, max, def;
	char *profile;
	double last_evaluation;  /* wall time, 0: none yet */
	double last_observation; /* wall time of the last successful driver observe, 0: none */
	/* Evaluations held, by reason. 32 bits: at one evaluation a second
	 * (the shortest interval) a count wraps after 136 years, and 64-bit
	 * counts took 64 bytes more in each entry. */
	uint32_t holds[N_HOLDS];
	/* The arrays below hold what the group uses, not their bounds: with
	 * ten thousand groups, room for 16 signals and 8 driver operations
	 * in each was 2 KB a group of nothing. */
	struct signal_metric *signals; /* n_signals, in the configuration's order */
	size_t n_signals;
	unsigned long long actions_out, actions_in;
	struct named_counter *errors;  /* at most METRICS_MAX_KINDS */
	size_t n_errors;
	/* The group's evaluations and driver calls, by operation: counts and
	 * sums only. Their distributions are the registry's histograms, over
	 * all groups: a histogram for each group and operation was 5 KB a
	 * group of every scrape, two thirds of the exposition. */
	struct summary eval;
	struct named_summary *driver; /* at most METRICS_MAX_OPERATIONS */
	size_t n_driver;
	/* What the driver published through host->metric; driver_name is NULL
	 * until it published anything. */
	char *driver_name;
	struct named_gauge *budgets; /* at most METRICS_MAX_BUDGETS */
	size_t n_budgets;
	unsigned long long driver_retries, driver_api_errors;
	/* Warm members per state (AUTOSCALED_METRIC_WARM_INSTANCES). */
	struct named_gauge *warm; /* at most METRICS_MAX_WARM_STATES */
	size_t n_warm;
	/* New instances the group's hosts can take (AUTOSCALED_METRIC_HOST_ROOM). */
	double host_room;
	bool have_host_room;
	bool keep;           /* metrics_prune(): the configuration still has it */
	bool have_decision;
	bool paused, pinned, in_flight;
	bool have_bounds;
};

struct metrics {
	/* Drivers publish from their worker threads while the loop records and
	 * serves: every entry point takes the lock. */
	pthread_mutex_t lock;
	/* When the process started (Unix time; NaN when unreadable): read
	 * once, as it does not change. */
	double start_s;
	struct httpd *httpd;
	struct group_metrics **groups; /* in the order they were first recorded */
	size_t n_groups, cap_groups;
	/* The same entries by name, so that recording one is a lookup, not a
	 * scan: each evaluation records several times, and 10,000 groups
	 * scanned on each were most of the daemon's CPU. A hash table, not a
	 * tree: a tree's walk to one of 10,000 names is 14 string compares,
	 * and a profile of the soak found about 7 % of the main loop's samples
	 * in it. Keys are the entries' own names. */
	GHashTable *by_name;
	/* Requests at page_prefix and below go to page (metrics_set_page). */
	const char *page_prefix;
	httpd_handler_fn page;
	void *page_userdata;
	bool reload_ok;         /* whether the last configuration load succeeded */
	double reload_success;  /* wall time of the last successful load */
	bool have_cluster;      /* metrics_record_cluster() was called */
	struct metrics_cluster cluster;
	/* The distributions over all groups, which only grow: a group that
	 * a reload removes leaves its observations in them. */
	struct histogram eval;
	struct call_histogram *calls; /* at most METRICS_MAX_CALL_SERIES */
	size_t n_calls;
};

/* Seconds since the epoch: the timestamps are compared with PromQL's
 * time(), so they are wall-clock time, not the loop's monotonic clock. */
static double wall_seconds(void)
{
	return (double)clock_wall_ms() / 1000.0;
}

static void observe(struct histogram *h, const double *bounds, size_t n, double v)
{
	for (size_t i = 0; i < n; i++)
		if (v <= bounds[i]) {
			h->buckets[i]++;
			break;
		}
	h->count++;
	h->sum += v;
}

static void group_free(struct group_metrics *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->n_signals; i++)
		name_drop(g->signals[i].name);
	for (size_t i = 0; i < g->n_errors; i++)
		name_drop(g->errors[i].name);
	for (size_t i = 0; i < g->n_driver; i++)
		name_drop(g->driver[i].name);
	for (size_t i = 0; i < g->n_budgets; i++)
		name_drop(g->budgets[i].name);
	for (size_t i = 0; i < g->n_warm; i++)
		name_drop(g->warm[i].name);
	free(g->signals);
	free(g->errors);
	free(g->driver);
	free(g->budgets);
	free(g->warm);
	name_drop(g->driver_name);
	name_drop(g->profile);
	name_drop(g->name);
	free(g);
}

/* Makes `name` the group's active profile; false on ENOMEM. */
static bool set_profile(struct group_metrics *g, const char *name)
{
	char *n;

	if (!name || (g->profile && strcmp(g->profile, name) == 0))
		return true;
	n = name_hold(name);
	if (!n)
		return false;
	name_drop(g->profile);
	g->profile = n;
	return true;
}

/* Makes the group's signal slots those `gc` configures, in its order. A
 * signal kept across a reload keeps what it recorded; a new one starts
 * invalid (nothing has been evaluated yet), so that its validity series
 * exists from the start and never vanishes while it is configured. False
 * on ENOMEM, with the slots unchanged. */
static bool sync_signals(struct group_metrics *g, const struct group_conf *gc)
{
	struct signal_metric *v;
	bool used[CONFIG_MAX_SIGNALS] = {false}, fresh[CONFIG_MAX_SIGNALS] = {false};
	size_t n = gc->n_signals < CONFIG_MAX_SIGNALS ? gc->n_signals : CONFIG_MAX_SIGNALS;
	bool same = n == g->n_signals;

	for (size_t i = 0; same && i < n; i++)
		same = strcmp(g->signals[i].name, gc->signals[i].name) == 0;
	if (same)
		return true;
	if (!(v = calloc(n ? n : 1, sizeof(*v))))
		return false;
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < g->n_signals; k++)
			if (!used[k] && strcmp(g->signals[k].name, gc->signals[i].name) == 0) {
				v[i] = g->signals[k];
				used[k] = true;
				break;
			}
		if (v[i].name)
			continue;
		fresh[i] = true;
		if (!(v[i].name = name_hold(gc->signals[i].name))) {
			for (size_t k = 0; k < i; k++)
				if (fresh[k])
					name_drop(v[k].name);
			free(v);
			return false;
		}
	}
	for (size_t k = 0; k < g->n_signals; k++)
		if (!used[k])
			name_drop(g->signals[k].name);
	free(g->signals);
	g->signals = v;
	g->n_signals = n;
	return true;
}

static struct group_metrics *group_find(struct metrics *m, const char *name)
{
	return g_hash_table_lookup(m->by_name, name);
}

/* The entry of `name`, created when missing; NULL on ENOMEM. */
static struct group_metrics *group_get(struct metrics *m, const char *name)
{
	struct group_metrics *g = group_find(m, name), **v;

	if (g)
		return g;
	/* The array grows by half each time: thousands of groups are added
	 * one by one at the start. */
	if (m->n_groups == m->cap_groups) {
		size_t cap = m->cap_groups + m->cap_groups / 2 + 8;

		v = realloc(m->groups, cap * sizeof(*v));
		if (!v)
			return NULL;
		m->groups = v;
		m->cap_groups = cap;
	}
	g = calloc(1, sizeof(*g));
	if (!g || !(g->name = name_hold(name))) {
		free(g);
		return NULL;
	}
	g_hash_table_insert(m->by_name, g->name, g);
	m->groups[m->n_groups++] = g;
	return g;
}

static void record_decision(struct metrics *m, struct group_metrics *g, const struct group_conf *gc,
			    const struct decision *d, const struct metrics_group_status *st);

void metrics_record_decision(struct metrics *m, const struct group_conf *gc, const struct decision *d,
			     const struct metrics_group_status *st)
{
	struct group_metrics *g;

	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	g = group_get(m, gc->name);
	if (g)
		record_decision(m, g, gc, d, st);
	pthread_mutex_unlock(&m->lock);
}

static void record_decision(struct metrics *m, struct group_metrics *g, const struct group_conf *gc,
			    const struct decision *d, const struct metrics_group_status *st)
{
	g->have_decision = true;
	g->current = d->current;
	g->desired = d->desired;
	g->paused = st->paused;
	g->pinned = st->pinned;
	g->in_flight = st->in_flight;
	g->owned = st->owned;
	g->last_evaluation = wall_seconds();
	if (d->hold > HOLD_NONE && d->hold < N_HOLDS)
		g->holds[d->hold]++;
	/* The decision carries the active profile's bounds; a decision
	 * without a profile (the tests build some) leaves them as they are. */
	if (d->profile && set_profile(g, d->profile)) {
		g->have_bounds = true;
		g->min = d->min;
		g->max = d->max;
		g->def = d->def;
	}
	if (st->evaluation_seconds >= 0) {
		observe(&m->eval, eval_buckets, N_EVAL_BUCKETS, st->evaluation_seconds);
		g->eval.count++;
		g->eval.sum += st->evaluation_seconds;
	}
	/* A reload may rename signals: the slots follow the config. */
	if (!sync_signals(g, gc))
		return;
	for (size_t i = 0; i < g->n_signals; i++) {
		struct signal_metric *s = &g->signals[i];

		s->valid = i < d->n_signals && d->signals[i].valid;
		s->value = i < d->n_signals ? d->signals[i].value : NAN;
		s->recommendation = i < d->n_signals ? d->signals[i].recommendation : 0;
		s->have_forecast = i < d->n_signals && d->signals[i].forecast;
		s->forecast = s->have_forecast ? d->signals[i].forecast_value : NAN;
		s->forecast_recommendation = s->have_forecast ? d->signals[i].forecast_recommendation : 0;
		s->forecast_offset = s->have_forecast ? (float)d->signals[i].forecast_offset : 0.0f;
		/* A service level acts in mode on only. */
		s->service_level = s->have_forecast && i < gc->n_signals && signal_forecast(&gc->signals[i])->mode == FORECAST_ON
					   ? (float)signal_forecast(&gc->signals[i])->service_level
					   : 0.0f;
		s->service_short = s->service_level > 0 ? (float)d->signals[i].forecast_short : 0.0f;
	}
	g->boot_seconds = (double)d->boot_ms / 1000.0;
}

void metrics_record_action(struct metrics *m, const char *group, enum scale_direction dir)
{
	struct group_metrics *g;

	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	g = group_get(m, group);
	if (g && dir == DIR_OUT)
		g->actions_out++;
	else if (g && dir == DIR_IN)
		g->actions_in++;
	pthread_mutex_unlock(&m->lock);
}

/* The slot named `name` in a group's array of named entries, at most `max`
 * (named_counter, named_summary, named_gauge: `char *name` first, `stride`
 * bytes apart, *n in use, *arrayp grown one entry at a time), appended when
 * missing; NULL when the array is full, the name longer than
 * METRICS_MAX_LABEL, or on ENOMEM. A new slot is zeroed but for its name.
 * The pointer returned is good until the next call for the same array. */
static void *slot(void **arrayp, size_t stride, size_t *n, size_t max, const char *name)
{
	char *base = *arrayp;

	for (size_t i = 0; i < *n; i++)
		if (strcmp(*(char **)(base + i * stride), name) == 0)
			return base + i * stride;
	if (*n == max || strnlen(name, METRICS_MAX_LABEL + 1) > METRICS_MAX_LABEL)
		return NULL;
	if (!(base = realloc(base, (*n + 1) * stride)))
		return NULL;
	*arrayp = base;
	memset(base + *n * stride, 0, stride);
	if (!(*(char **)(base + *n * stride) = name_hold(name)))
		return NULL;
	return base + (*n)++ * stride;
}

#define SLOT(arr, n, max, name) slot((void **)&(arr), sizeof((arr)[0]), (n), (max), (name))

static void record_error(struct group_metrics *g, const char *kind)
{
	struct named_counter *c = SLOT(g->errors, &g->n_errors, METRICS_MAX_KINDS, kind);

	if (c)
		c->n++;
}

void metrics_record_error(struct metrics *m, const char *group, const char *kind)
{
	struct group_metrics *g;

	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	g = group_get(m, group);
	if (g)
		record_error(g, kind);
	pthread_mutex_unlock(&m->lock);
}

/* The call histogram's series for DRIVER and OPERATION, added when
 * missing; NULL when there are METRICS_MAX_CALL_SERIES already, a label is
 * longer than METRICS_MAX_LABEL, or on ENOMEM. */
static struct call_histogram *call_series(struct metrics *m, const char *driver, const char *operation)
{
	struct call_histogram *c;

	for (size_t i = 0; i < m->n_calls; i++)
		if (strcmp(m->calls[i].driver, driver) == 0 && strcmp(m->calls[i].operation, operation) == 0)
			return &m->calls[i];
	if (m->n_calls == METRICS_MAX_CALL_SERIES || strnlen(driver, METRICS_MAX_LABEL + 1) > METRICS_MAX_LABEL ||
	    strnlen(operation, METRICS_MAX_LABEL + 1) > METRICS_MAX_LABEL)
		return NULL;
	c = realloc(m->calls, (m->n_calls + 1) * sizeof(*c));
	if (!c)
		return NULL;
	m->calls = c;
	c = &m->calls[m->n_calls];
	memset(c, 0, sizeof(*c));
	c->driver = strdup(driver);
	c->operation = strdup(operation);
	if (!c->driver || !c->operation) {
		free(c->driver);
		free(c->operation);
		return NULL;
	}
	m->n_calls++;
	return c;
}

void metrics_record_driver_call(struct metrics *m, const char *group, const char *driver, const char *operation,
				double seconds, double cpu_seconds)
{
	struct call_histogram *c;
	struct named_summary *s;
	struct group_metrics *g;

	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	c = call_series(m, driver, operation);
	if (c) {
		observe(&c->h, driver_buckets, N_DRIVER_BUCKETS, seconds);
		if (isfinite(cpu_seconds) && cpu_seconds > 0)
			c->cpu += cpu_seconds;
	}
	g = group_get(m, group);
	s = g ? SLOT(g->driver, &g->n_driver, METRICS_MAX_OPERATIONS, operation) : NULL;
	if (s) {
		s->s.count++;
		s->s.sum += seconds;
	}
	pthread_mutex_unlock(&m->lock);
}

/* Makes `driver` the group's publishing driver; a group moved to another
 * driver by a reload starts new series: the old driver's budgets are
 * forgotten and its counters start again from zero. False on ENOMEM. */
static bool set_driver(struct group_metrics *g, const char *driver)
{
	char *n;

	if (g->driver_name && strcmp(g->driver_name, driver) == 0)
		return true;
	n = name_hold(driver);
	if (!n)
		return false;
	for (size_t i = 0; i < g->n_budgets; i++)
		name_drop(g->budgets[i].name);
	g->n_budgets = 0;
	for (size_t i = 0; i < g->n_warm; i++)
		name_drop(g->warm[i].name);
	g->n_warm = 0;
	g->have_host_room = false;
	g->driver_retries = g->driver_api_errors = 0;
	name_drop(g->driver_name);
	g->driver_name = n;
	return true;
}

static void record_budget(struct group_metrics *g, const char *label, double value)
{
	struct named_gauge *b = SLOT(g->budgets, &g->n_budgets, METRICS_MAX_BUDGETS, label);

	if (b)
		b->value = value;
}

/* A counter increment as a driver sent it: whole, non-negative, finite. */
static unsigned long long increment(double value)
{
	return isfinite(value) && value >= 1 ? (unsigned long long)value : 0;
}

void metrics_record_driver_metric(struct metrics *m, const char *group, const char *driver,
				  enum autoscaled_metric metric, const char *label, double value)
{
	struct group_metrics *g;

	if (!m || !driver)
		return;
	pthread_mutex_lock(&m->lock);
	g = group_get(m, group);
	if (!g || !set_driver(g, driver))
		goto out;
	switch (metric) {
	case AUTOSCALED_METRIC_RATELIMIT_REMAINING:
		if (label && *label && !isnan(value))
			record_budget(g, label, value);
		break;
	case AUTOSCALED_METRIC_RETRIES:
		g->driver_retries += increment(value);
		break;
	case AUTOSCALED_METRIC_API_ERRORS:
		g->driver_api_errors += increment(value);
		break;
	case AUTOSCALED_METRIC_WARM_INSTANCES:
		if (label && *label && isfinite(value) && value >= 0) {
			struct named_gauge *w = SLOT(g->warm, &g->n_warm, METRICS_MAX_WARM_STATES, label);

			if (w)
				w->value = value;
		}
		break;
	case AUTOSCALED_METRIC_HOST_ROOM:
		if (isfinite(value) && value >= 0) {
			g->have_host_room = true;
			g->host_room = value;
		}
		break;
	}
out:
	pthread_mutex_unlock(&m->lock);
}

/* The group's entry follows its configuration: the signals it configures,
 * and the bounds of its active profile (the default one until an
 * evaluation names another). */
static void follow_config(struct group_metrics *g, const struct group_conf *gc)
{
	const struct profile_conf *p = NULL;

	for (size_t i = 0; g->profile && i < gc->n_profiles; i++)
		if (gc->profiles[i].name && strcmp(gc->profiles[i].name, g->profile) == 0)
			p = &gc->profiles[i];
	if (!p)
		p = group_default_profile(gc);
	if (p && set_profile(g, p->name ? p->name : "default")) {
		g->have_bounds = true;
		g->min = p->min;
		g->max = p->max;
		g->def = p->def;
	}
	sync_signals(g, gc);
}

void metrics_prune(struct metrics *m, const struct config *c)
{
	size_t k = 0;

	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; i < m->n_groups; i++)
		m->groups[i]->keep = false;
	for (size_t i = 0; i < c->n_groups; i++) {
		struct group_metrics *g = group_find(m, c->groups[i].name);

		if (g)
			g->keep = true;
	}
	for (size_t i = 0; i < m->n_groups; i++) {
		if (m->groups[i]->keep) {
			m->groups[k++] = m->groups[i];
		} else {
			g_hash_table_remove(m->by_name, m->groups[i]->name);
			group_free(m->groups[i]);
		}
	}
	m->n_groups = k;
	for (size_t i = 0; i < c->n_groups; i++) {
		struct group_metrics *g = group_get(m, c->groups[i].name);

		if (g)
			follow_config(g, &c->groups[i]);
	}
	pthread_mutex_unlock(&m->lock);
}

void metrics_record_cluster(struct metrics *m, const struct metrics_cluster *k)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	m->have_cluster = true;
	m->cluster = *k;
	pthread_mutex_unlock(&m->lock);
}

void metrics_record_reload(struct metrics *m, bool ok)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	m->reload_ok = ok;
	if (ok)
		m->reload_success = wall_seconds();
	pthread_mutex_unlock(&m->lock);
}

void metrics_record_observation(struct metrics *m, const char *group)
{
	struct group_metrics *g;

	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	g = group_get(m, group);
	if (g)
		g->last_observation = wall_seconds();
	pthread_mutex_unlock(&m->lock);
}

void metrics_record_sample(struct metrics *m, const char *group, const char *signal)
{
	struct group_metrics *g;

	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	g = group_get(m, group);
	/* Only a configured signal has a slot: a sample of one a reload just
	 * removed is dropped. */
	for (size_t i = 0; g && i < g->n_signals; i++)
		if (strcmp(g->signals[i].name, signal) == 0) {
			g->signals[i].last_sample = wall_seconds();
			break;
		}
	pthread_mutex_unlock(&m->lock);
}

/* ------------------------------------------------------------- output */

/* A label value with \, " and newline escaped, as the format requires. */
static void put_label(FILE *f, const char *s)
{
	if (!strpbrk(s, "\\\"\n")) {
		fputs(s, f);
		return;
	}
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '"')
			fputs("\\\"", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

/* V in decimal: most of a scrape's values are counts, and printf's
 * reading of its format was a good part of writing 10,000 groups. */
static void put_u64(FILE *f, unsigned long long v)
{
	char buf[24], *p = buf + sizeof(buf) - 1;

	*p = '\0';
	do
		*--p = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	fputs(p, f);
}

static void put_i64(FILE *f, long long v)
{
	if (v < 0) {
		fputc('-', f);
		put_u64(f, 0ULL - (unsigned long long)v);
	} else {
		put_u64(f, (unsigned long long)v);
	}
}

/* NAME{group=" */
static void open_group_series(FILE *f, const char *name)
{
	fputs(name, f);
	fputs("{group=\"", f);
}

static void put_value(FILE *f, double v)
{
	if (isnan(v))
		fputs("NaN", f);
	else if (isinf(v))
		fputs(v > 0 ? "+Inf" : "-Inf", f);
	else if (fabs(v) < 1e15 && v == (double)(long long)v)
		/* Counts and most gauges: whole, and exact as an integer. */
		put_i64(f, (long long)v);
	else {
		/* The shortest form that reads back as the same double. */
		char buf[32];

		snprintf(buf, sizeof(buf), "%.15g", v);
		if (strtod(buf, NULL) != v)
			snprintf(buf, sizeof(buf), "%.17g", v);
		fputs(buf, f);
	}
}

/* A gauge kept as a float: the shortest form that reads back as the same
 * float (0.993, not the double nearest to it, 0.99299997091293335). */
static void put_float(FILE *f, float v)
{
	char buf[32];

	if (!isfinite(v)) {
		put_value(f, v);
		return;
	}
	for (int digits = 6; digits <= 9; digits++) {
		snprintf(buf, sizeof(buf), "%.*g", digits, (double)v);
		if (strtof(buf, NULL) == v)
			break;
	}
	fputs(buf, f);
}

static void header(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void group_sample(FILE *f, const char *name, const struct group_metrics *g, double v)
{
	open_group_series(f, name);
	put_label(f, g->name);
	fputs("\"} ", f);
	put_value(f, v);
	fputc('\n', f);
}

/* A series' name and its labels up to the value: NAME{driver="D",operation="O"}
 * with the le label when LE is not NULL; no driver label (and no braces
 * without a label) when DRIVER is NULL. */
static void call_series_name(FILE *f, const char *name, const char *driver, const char *operation, const char *le)
{
	fputs(name, f);
	if (driver) {
		fputs("{driver=\"", f);
		put_label(f, driver);
		fputs("\",operation=\"", f);
		put_label(f, operation);
		fputc('"', f);
	}
	if (le)
		fprintf(f, "%sle=\"%s", driver ? "," : "{", le);
	if (driver || le)
		fputs(le ? "\"} " : "} ", f);
	else
		fputc(' ', f);
}

/* The buckets, sum and count of histogram H with BOUNDS (N of them), for
 * DRIVER and OPERATION, or without labels when DRIVER is NULL. */
static void histogram_samples(FILE *f, const char *name, const char *driver, const char *operation,
			      const struct histogram *h, const double *bounds, size_t n)
{
	char series[128], le[32];
	unsigned long long cum = 0;

	for (size_t i = 0; i <= n; i++) {
		cum += i < n ? h->buckets[i] : 0;
		snprintf(series, sizeof(series), "%s_bucket", name);
		if (i < n)
			snprintf(le, sizeof(le), "%.15g", bounds[i]);
		call_series_name(f, series, driver, operation, i < n ? le : "+Inf");
		fprintf(f, "%llu\n", i < n ? cum : h->count);
	}
	snprintf(series, sizeof(series), "%s_sum", name);
	call_series_name(f, series, driver, operation, NULL);
	put_value(f, h->sum);
	fputc('\n', f);
	snprintf(series, sizeof(series), "%s_count", name);
	call_series_name(f, series, driver, operation, NULL);
	fprintf(f, "%llu\n", h->count);
}

/* A group's summary S (sum and count), with an operation label when
 * OPERATION is not NULL. */
static void summary_samples(FILE *f, const char *name, const struct group_metrics *g, const char *operation,
			    const struct summary *s)
{
	for (int k = 0; k < 2; k++) {
		fputs(name, f);
		open_group_series(f, k == 0 ? "_sum" : "_count");
		put_label(f, g->name);
		if (operation) {
			fputs("\",operation=\"", f);
			put_label(f, operation);
		}
		fputs("\"} ", f);
		if (k == 0)
			put_value(f, s->sum);
		else
			put_u64(f, s->count);
		fputc('\n', f);
	}
}

static void signal_family(FILE *f, const struct metrics *m, const char *name, const char *help, bool rec)
{
	header(f, name, "gauge", help);
	for (size_t i = 0; i < m->n_groups; i++) {
		const struct group_metrics *g = m->groups[i];

		for (size_t s = 0; s < g->n_signals; s++) {
			/* An invalid signal has no value: the series is absent,
			 * never a made-up zero. */
			if (!g->signals[s].valid)
				continue;
			open_group_series(f, name);
			put_label(f, g->name);
			fputs("\",signal=\"", f);
			put_label(f, g->signals[s].name);
			fputs("\"} ", f);
			put_value(f, rec ? g->signals[s].recommendation : g->signals[s].value);
			fputc('\n', f);
		}
	}
}

static void signal_labels(FILE *f, const char *name, const struct group_metrics *g, const struct signal_metric *s);

/* The service level's gauges: a float member of struct signal_metric each. */
struct service_gauge {
	const char *name, *help;
	size_t offset;
	bool with_level; /* only for a signal with a service level (else any with a forecast) */
};

static const struct service_gauge service_gauges[] = {
	{ "autoscaled_signal_forecast_service_offset",
	  "What the forecast's service level moved its quantiles by, in typical errors (0 without one).",
	  offsetof(struct signal_metric, forecast_offset), false },
	{ "autoscaled_signal_forecast_service_level",
	  "The share of samples the forecast's service level asks to be below the target.",
	  offsetof(struct signal_metric, service_level), true },
	{ "autoscaled_signal_forecast_service_short_ratio",
	  "The share of samples at or above the target, over about a day, as the service level measures it.",
	  offsetof(struct signal_metric, service_short), true },
};

/* The forecasts, beside the values they will be compared with: a signal
 * without a forecaster has no series. */
static void forecast_families(FILE *f, const struct metrics *m)
{
	header(f, "autoscaled_signal_forecast", "gauge",
	       "The signal's forecast one boot time ahead, as a group total (the quantile provisioned for).");
	for (size_t i = 0; i < m->n_groups; i++)
		for (size_t s = 0; s < m->groups[i]->n_signals; s++)
			if (m->groups[i]->signals[s].have_forecast) {
				signal_labels(f, "autoscaled_signal_forecast", m->groups[i], &m->groups[i]->signals[s]);
				put_value(f, m->groups[i]->signals[s].forecast);
				fputc('\n', f);
			}
	header(f, "autoscaled_signal_forecast_recommendation", "gauge",
	       "Instances the signal's forecast needs, whether or not it is acted on (mode observe).");
	for (size_t i = 0; i < m->n_groups; i++)
		for (size_t s = 0; s < m->groups[i]->n_signals; s++)
			if (m->groups[i]->signals[s].have_forecast) {
				signal_labels(f, "autoscaled_signal_forecast_recommendation", m->groups[i],
					      &m->groups[i]->signals[s]);
				put_i64(f, m->groups[i]->signals[s].forecast_recommendation);
				fputc('\n', f);
			}
	/* The service level's, kept as floats: the offset for every signal
	 * with a forecaster, the level and the share for those with one. */
	for (size_t k = 0; k < sizeof(service_gauges) / sizeof(service_gauges[0]); k++) {
		const struct service_gauge *sg = &service_gauges[k];

		header(f, sg->name, "gauge", sg->help);
		for (size_t i = 0; i < m->n_groups; i++)
			for (size_t s = 0; s < m->groups[i]->n_signals; s++) {
				const struct signal_metric *sm = &m->groups[i]->signals[s];

				if (sg->with_level ? sm->service_level > 0 : sm->have_forecast) {
					signal_labels(f, sg->name, m->groups[i], sm);
					put_float(f, *(const float *)((const char *)sm + sg->offset));
					fputc('\n', f);
				}
			}
	}
	header(f, "autoscaled_group_boot_seconds", "gauge",
	       "Launch to ready: measured from the group's own scale-outs, else the configured boot_time.");
	for (size_t i = 0; i < m->n_groups; i++)
		if (m->groups[i]->have_decision)
			group_sample(f, "autoscaled_group_boot_seconds", m->groups[i], m->groups[i]->boot_seconds);
}

static void signal_labels(FILE *f, const char *name, const struct group_metrics *g, const struct signal_metric *s)
{
	open_group_series(f, name);
	put_label(f, g->name);
	fputs("\",signal=\"", f);
	put_label(f, s->name);
	fputs("\"} ", f);
}

/* The families an operator alerts on: validity, freshness, bounds,
 * profile, holds. */
static void alerting_families(FILE *f, const struct metrics *m)
{
	static const char *const bound_names[] = {"autoscaled_group_min_instances", "autoscaled_group_max_instances",
						  "autoscaled_group_default_instances"};
	static const char *const bound_help[] = {"The active profile's minimum count.",
						 "The active profile's maximum count.",
						 "The active profile's default count."};

	header(f, "autoscaled_signal_valid", "gauge",
	       "1 when the last evaluation found the signal valid, 0 when not (or before the first evaluation).");
	for (size_t i = 0; i < m->n_groups; i++)
		for (size_t s = 0; s < m->groups[i]->n_signals; s++) {
			signal_labels(f, "autoscaled_signal_valid", m->groups[i], &m->groups[i]->signals[s]);
			fputs(m->groups[i]->signals[s].valid ? "1\n" : "0\n", f);
		}
	header(f, "autoscaled_signal_last_sample_timestamp_seconds", "gauge",
	       "When the signal's source last returned a good sample (Unix time).");
	for (size_t i = 0; i < m->n_groups; i++)
		for (size_t s = 0; s < m->groups[i]->n_signals; s++)
			if (m->groups[i]->signals[s].last_sample > 0) {
				signal_labels(f, "autoscaled_signal_last_sample_timestamp_seconds", m->groups[i],
					      &m->groups[i]->signals[s]);
				put_value(f, m->groups[i]->signals[s].last_sample);
				fputc('\n', f);
			}
	header(f, "autoscaled_group_last_evaluation_timestamp_seconds", "gauge",
	       "When the group was last evaluated (Unix time).");
	for (size_t i = 0; i < m->n_groups; i++)
		if (m->groups[i]->last_evaluation > 0)
			group_sample(f, "autoscaled_group_last_evaluation_timestamp_seconds", m->groups[i],
				     m->groups[i]->last_evaluation);
	header(f, "autoscaled_group_last_observation_success_timestamp_seconds", "gauge",
	       "When the driver last observed the group successfully (Unix time).");
	for (size_t i = 0; i < m->n_groups; i++)
		if (m->groups[i]->last_observation > 0)
			group_sample(f, "autoscaled_group_last_observation_success_timestamp_seconds", m->groups[i],
				     m->groups[i]->last_observation);
	for (size_t b = 0; b < 3; b++) {
		header(f, bound_names[b], "gauge", bound_help[b]);
		for (size_t i = 0; i < m->n_groups; i++) {
			const struct group_metrics *g = m->groups[i];

			if (g->have_bounds)
				group_sample(f, bound_names[b], g, b == 0 ? g->min : b == 1 ? g->max : g->def);
		}
	}
	header(f, "autoscaled_group_profile_info", "gauge", "The group's active profile, as a label; always 1.");
	for (size_t i = 0; i < m->n_groups; i++)
		if (m->groups[i]->profile) {
			fputs("autoscaled_group_profile_info{group=\"", f);
			put_label(f, m->groups[i]->name);
			fputs("\",profile=\"", f);
			put_label(f, m->groups[i]->profile);
			fputs("\"} 1\n", f);
		}
	header(f, "autoscaled_holds_total", "counter", "Evaluations that held the count, by reason.");
	for (size_t i = 0; i < m->n_groups; i++)
		for (int h = HOLD_NONE + 1; h < N_HOLDS; h++) {
			fputs("autoscaled_holds_total{group=\"", f);
			put_label(f, m->groups[i]->name);
			fputs("\",reason=\"", f);
			fputs(decision_hold_name((enum hold_reason)h), f);
			fputs("\"} ", f);
			put_u64(f, m->groups[i]->holds[h]);
			fputc('\n', f);
		}
}

static void driver_labels(FILE *f, const char *name, const struct group_metrics *g)
{
	open_group_series(f, name);
	put_label(f, g->name);
	fputs("\",driver=\"", f);
	put_label(f, g->driver_name);
	fputc('"', f);
}

static void driver_families(FILE *f, const struct metrics *m)
{
	header(f, "autoscaled_driver_ratelimit_remaining", "gauge",
	       "Requests left in a cloud provider's throttling budget, as its last reply said.");
	for (size_t i = 0; i < m->n_groups; i++) {
		const struct group_metrics *g = m->groups[i];

		for (size_t k = 0; g->driver_name && k < g->n_budgets; k++) {
			driver_labels(f, "autoscaled_driver_ratelimit_remaining", g);
			fputs(",bucket=\"", f);
			put_label(f, g->budgets[k].name);
			fputs("\"} ", f);
			put_value(f, g->budgets[k].value);
			fputc('\n', f);
		}
	}
	header(f, "autoscaled_group_warm_instances", "gauge",
	       "Warm members of the group's warm pool by state; not counted as capacity.");
	for (size_t i = 0; i < m->n_groups; i++) {
		const struct group_metrics *g = m->groups[i];

		for (size_t k = 0; g->driver_name && k < g->n_warm; k++) {
			driver_labels(f, "autoscaled_group_warm_instances", g);
			fputs(",state=\"", f);
			put_label(f, g->warm[k].name);
			fputs("\"} ", f);
			put_value(f, g->warm[k].value);
			fputc('\n', f);
		}
	}
	header(f, "autoscaled_group_host_room", "gauge",
	       "New instances the group's hosts can still take, as the driver last measured (libvirt with "
	       "memory_overcommit or cpu_overcommit); 0 means a scale-out is capped by the hosts, not by max.");
	for (size_t i = 0; i < m->n_groups; i++)
		if (m->groups[i]->driver_name && m->groups[i]->have_host_room) {
			driver_labels(f, "autoscaled_group_host_room", m->groups[i]);
			fputs("} ", f);
			put_value(f, m->groups[i]->host_room);
			fputc('\n', f);
		}
	header(f, "autoscaled_driver_retries_total", "counter", "Cloud API requests the driver retried.");
	for (size_t i = 0; i < m->n_groups; i++)
		if (m->groups[i]->driver_name) {
			driver_labels(f, "autoscaled_driver_retries_total", m->groups[i]);
			fputs("} ", f);
			put_u64(f, m->groups[i]->driver_retries);
			fputc('\n', f);
		}
	header(f, "autoscaled_driver_api_errors_total", "counter",
	       "Cloud API requests and long-running operations that failed after all retries.");
	for (size_t i = 0; i < m->n_groups; i++)
		if (m->groups[i]->driver_name) {
			driver_labels(f, "autoscaled_driver_api_errors_total", m->groups[i]);
			fputs("} ", f);
			put_u64(f, m->groups[i]->driver_api_errors);
			fputc('\n', f);
		}
}

/* The cluster mode's families: only in a cluster, where a zero means
 * something (no valid lease, no member seen). */
static void cluster_families(FILE *f, const struct metrics *m)
{
	const struct metrics_cluster *k = &m->cluster;

	if (!m->have_cluster)
		return;
	header(f, "autoscaled_cluster_lease_valid", "gauge",
	       "1 while this agent's etcd lease is valid locally (it may act), 0 when lost or etcd is unreachable.");
	fprintf(f, "autoscaled_cluster_lease_valid %d\n", k->lease_valid ? 1 : 0);
	header(f, "autoscaled_cluster_lease_renewals_total", "counter", "Keepalives of the lease etcd accepted.");
	fprintf(f, "autoscaled_cluster_lease_renewals_total %lu\n", k->renewals);
	header(f, "autoscaled_cluster_lease_renewal_failures_total", "counter",
	       "Keepalives of the lease that failed (etcd unreachable, or the lease expired).");
	fprintf(f, "autoscaled_cluster_lease_renewal_failures_total %lu\n", k->renew_failures);
	header(f, "autoscaled_cluster_leases_lost_total", "counter", "Leases that ended while the agent ran.");
	fprintf(f, "autoscaled_cluster_leases_lost_total %lu\n", k->leases_lost);
	header(f, "autoscaled_cluster_members", "gauge", "Agents registered in etcd, as this agent last read them.");
	fprintf(f, "autoscaled_cluster_members %zu\n", k->members);
	header(f, "autoscaled_cluster_owned_groups", "gauge", "Groups this agent acts on now.");
	fprintf(f, "autoscaled_cluster_owned_groups %zu\n", k->owned);
	header(f, "autoscaled_cluster_orphaned_groups", "gauge",
	       "Groups that have had no owner in etcd for more than two lease TTLs: no agent acts on them.");
	fprintf(f, "autoscaled_cluster_orphaned_groups %zu\n", k->orphaned);
	header(f, "autoscaled_group_owned", "gauge", "1 while this agent acts on the group, 0 while another does or none.");
	for (size_t i = 0; i < m->n_groups; i++)
		if (m->groups[i]->have_decision && m->groups[i]->owned >= 0)
			group_sample(f, "autoscaled_group_owned", m->groups[i], m->groups[i]->owned);
}

static void write_locked(const struct metrics *m, FILE *f)
{
	header(f, "autoscaled_build_info", "gauge", "The daemon's version, as a label; always 1.");
	fputs("autoscaled_build_info{version=\"", f);
	put_label(f, PACKAGE_VERSION);
	fputs("\"} 1\n", f);
	header(f, "autoscaled_config_last_reload_successful", "gauge",
	       "1 when the last load of the configuration succeeded, 0 when it failed.");
	fprintf(f, "autoscaled_config_last_reload_successful %d\n", m->reload_ok ? 1 : 0);
	header(f, "autoscaled_config_last_reload_success_timestamp_seconds", "gauge",
	       "When the configuration was last loaded successfully (Unix time).");
	fputs("autoscaled_config_last_reload_success_timestamp_seconds ", f);
	put_value(f, m->reload_success);
	fputc('\n', f);
	header(f, "autoscaled_group_current_instances", "gauge", "Instances in the group as last observed.");
	for (size_t i = 0; i < m->n_groups; i++)
		if (m->groups[i]->have_decision)
			group_sample(f, "autoscaled_group_current_instances", m->groups[i], m->groups[i]->current);
	header(f, "autoscaled_group_desired_instances", "gauge",
	       "Instances the last evaluation decided on, after pins and pauses.");
	for (size_t i = 0; i < m->n_groups; i++)
		if (m->groups[i]->have_decision)
			group_sample(f, "autoscaled_group_desired_instances", m->groups[i], m->groups[i]->desired);
	signal_family(f, m, "autoscaled_signal_value", "The signal's aggregate over its window.", false);
	signal_family(f, m, "autoscaled_signal_recommendation", "Instances the signal alone recommends.", true);
	forecast_families(f, m);

	header(f, "autoscaled_actions_total", "counter", "Scaling actions handed to the driver.");
	for (size_t i = 0; i < m->n_groups; i++) {
		const struct group_metrics *g = m->groups[i];

		fputs("autoscaled_actions_total{group=\"", f);
		put_label(f, g->name);
		fputs("\",direction=\"out\"} ", f);
		put_u64(f, g->actions_out);
		fputc('\n', f);
		fputs("autoscaled_actions_total{group=\"", f);
		put_label(f, g->name);
		fputs("\",direction=\"in\"} ", f);
		put_u64(f, g->actions_in);
		fputc('\n', f);
	}
	header(f, "autoscaled_errors_total", "counter", "Errors by kind (observe, scale_out, scale_in, state, hook).");
	for (size_t i = 0; i < m->n_groups; i++) {
		const struct group_metrics *g = m->groups[i];

		for (size_t k = 0; k < g->n_errors; k++) {
			fputs("autoscaled_errors_total{group=\"", f);
			put_label(f, g->name);
			fputs("\",kind=\"", f);
			put_label(f, g->errors[k].name);
			fputs("\"} ", f);
			put_u64(f, g->errors[k].n);
			fputc('\n', f);
		}
	}
	header(f, "autoscaled_evaluation_duration_seconds", "histogram", "Time taken by one evaluation, over all groups.");
	histogram_samples(f, "autoscaled_evaluation_duration_seconds", NULL, NULL, &m->eval, eval_buckets, N_EVAL_BUCKETS);
	header(f, "autoscaled_group_evaluation_duration_seconds", "summary",
	       "Time taken by the group's evaluations: their sum and count.");
	for (size_t i = 0; i < m->n_groups; i++)
		summary_samples(f, "autoscaled_group_evaluation_duration_seconds", m->groups[i], NULL, &m->groups[i]->eval);
	header(f, "autoscaled_driver_call_duration_seconds", "histogram",
	       "Time taken by driver calls, over all groups, by driver and operation.");
	for (size_t k = 0; k < m->n_calls; k++)
		histogram_samples(f, "autoscaled_driver_call_duration_seconds", m->calls[k].driver, m->calls[k].operation,
				  &m->calls[k].h, driver_buckets, N_DRIVER_BUCKETS);
	header(f, "autoscaled_driver_call_cpu_seconds_total", "counter",
	       "CPU time (user and system) the driver calls took on their threads, over all groups, by driver and "
	       "operation: the drivers' share of the daemon's CPU.");
	for (size_t k = 0; k < m->n_calls; k++) {
		call_series_name(f, "autoscaled_driver_call_cpu_seconds_total", m->calls[k].driver,
				 m->calls[k].operation, NULL);
		put_value(f, m->calls[k].cpu);
		fputc('\n', f);
	}
	header(f, "autoscaled_group_driver_call_duration_seconds", "summary",
	       "Time taken by the group's driver calls, by operation: their sum and count.");
	for (size_t i = 0; i < m->n_groups; i++)
		for (size_t k = 0; k < m->groups[i]->n_driver; k++)
			summary_samples(f, "autoscaled_group_driver_call_duration_seconds", m->groups[i],
					m->groups[i]->driver[k].name, &m->groups[i]->driver[k].s);
	header(f, "autoscaled_inflight_actions", "gauge", "Actions handed to the driver and not yet complete.");
	for (size_t i = 0; i < m->n_groups; i++)
		group_sample(f, "autoscaled_inflight_actions", m->groups[i], m->groups[i]->in_flight);
	header(f, "autoscaled_group_paused", "gauge", "1 while the group is paused.");
	for (size_t i = 0; i < m->n_groups; i++)
		group_sample(f, "autoscaled_group_paused", m->groups[i], m->groups[i]->paused);
	header(f, "autoscaled_group_pinned", "gauge", "1 while the group is pinned to a count.");
	for (size_t i = 0; i < m->n_groups; i++)
		group_sample(f, "autoscaled_group_pinned", m->groups[i], m->groups[i]->pinned);
	alerting_families(f, m);
	driver_families(f, m);
	cluster_families(f, m);
}

/* The process's figures, read from the kernel and the allocator at each
 * scrape, outside the registry's lock. */
struct process_figures {
	double cpu_s;
	double resident, virtual;
	double threads;
	double open_fds, max_fds;
	double heap_in_use, heap_free, heap_mapped;
};

/* The fields of /proc/self/stat after the command name, in S (at least
 * SIZE bytes); NULL when unreadable. The name, in parentheses, may hold
 * spaces and ')'. */
static const char *read_stat(char *s, size_t size)
{
	size_t n;
	FILE *f;

	f = fopen("/proc/self/stat", "re");
	if (!f)
		return NULL;
	n = fread(s, 1, size - 1, f);
	fclose(f);
	s[n] = '\0';
	s = strrchr(s, ')');
	return s ? s + 1 : NULL;
}

/* Field 22 of /proc/self/stat (clock ticks from boot) after the boot time
 * of /proc/stat. */
static double process_start(void)
{
	char buf[1024];
	const char *s = read_stat(buf, sizeof(buf));
	unsigned long long start, btime = 0;
	FILE *f;

	if (!s || sscanf(s, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
			 &start) != 1 ||
	    !(f = fopen("/proc/stat", "re")))
		return NAN;
	while (fgets(buf, sizeof(buf), f))
		if (sscanf(buf, "btime %llu", &btime) == 1)
			break;
	fclose(f);
	return btime ? (double)btime + (double)start / (double)sysconf(_SC_CLK_TCK) : NAN;
}

static void read_process(struct process_figures *p)
{
	struct rusage ru;
	struct rlimit rl;
	struct heap_figures hf;
	struct dirent *e;
	DIR *d;

	/* Fields 20, 23 and 24 of /proc/self/stat: threads, virtual and
	 * resident size. */
	{
		char buf[1024];
		const char *s = read_stat(buf, sizeof(buf));
		unsigned long long vsize;
		long rss, threads;

		p->resident = p->virtual = p->threads = NAN;
		if (s && sscanf(s, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %ld %*d %*u %llu %ld",
				&threads, &vsize, &rss) == 3) {
			p->threads = (double)threads;
			p->virtual = (double)vsize;
			p->resident = (double)rss * (double)sysconf(_SC_PAGESIZE);
		}
	}
	p->cpu_s = NAN;
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		p->cpu_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
			   (double)ru.ru_stime.tv_usec / 1e6;
	p->max_fds = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? (double)rl.rlim_cur : NAN;
	p->open_fds = NAN;
	d = opendir("/proc/self/fd");
	if (d) {
		long n = 0;

		while ((e = readdir(d)))
			if (e->d_name[0] != '.')
				n++;
		/* Less the directory's own. */
		p->open_fds = (double)(n - 1);
		closedir(d);
	}
	/* Once a scrape: glibc walks its free lists under the heap's lock. */
	p->heap_in_use = p->heap_free = p->heap_mapped = NAN;
	if (heap_read(&hf)) {
		p->heap_in_use = (double)hf.in_use;
		p->heap_free = (double)hf.free;
		p->heap_mapped = (double)hf.mapped;
	}
}

static void gauge(FILE *f, const char *name, const char *type, const char *help, double v)
{
	if (isnan(v))
		return;
	header(f, name, type, help);
	fputs(name, f);
	fputc(' ', f);
	put_value(f, v);
	fputc('\n', f);
}

static void process_families(const struct metrics *m, FILE *f)
{
	struct process_figures p;

	read_process(&p);
	gauge(f, "process_cpu_seconds_total", "counter", "CPU time (user and system) the daemon has used, all threads.",
	      p.cpu_s);
	gauge(f, "process_start_time_seconds", "gauge", "When the daemon started (Unix time).", m->start_s);
	gauge(f, "process_resident_memory_bytes", "gauge", "Resident memory (RSS).", p.resident);
	gauge(f, "process_virtual_memory_bytes", "gauge", "Virtual memory size.", p.virtual);
	gauge(f, "process_open_fds", "gauge", "Open file descriptors.", p.open_fds);
	gauge(f, "process_max_fds", "gauge", "The limit on open file descriptors (RLIMIT_NOFILE).", p.max_fds);
	gauge(f, "autoscaled_threads", "gauge", "The daemon's threads: its loop's and the driver pools' idle or busy.",
	      p.threads);
	gauge(f, "autoscaled_heap_in_use_bytes", "gauge", "Bytes of the heap's blocks in use.", p.heap_in_use);
	gauge(f, "autoscaled_heap_free_bytes", "gauge",
	      "Bytes the heap holds free between its blocks in use. glibc: resident, or given back to the kernel "
	      "by the heap's trim until used again; jemalloc: resident, in its pages of blocks or freed and not "
	      "yet given back.",
	      p.heap_free);
	gauge(f, "autoscaled_heap_mapped_bytes", "gauge",
	      "glibc: bytes of the large blocks that each have a mapping of their own, outside the heap (given "
	      "back when freed); jemalloc: bytes of all it has mapped.",
	      p.heap_mapped);
}

int metrics_write(const struct metrics *m, FILE *f)
{
	/* The lock guards the registry's consistency, not its value: taking
	 * it does not change what a const registry holds. */
	pthread_mutex_t *lock = (pthread_mutex_t *)&m->lock;

	process_families(m, f);
	pthread_mutex_lock(lock);
	write_locked(m, f);
	pthread_mutex_unlock(lock);
	return ferror(f) ? -EIO : 0;
}

static void on_request(void *userdata, const struct httpd_request *req, struct httpd_response *resp)
{
	struct metrics *m = userdata;
	FILE *f;
	int r;

	if (m->page && strncmp(req->path, m->page_prefix, strlen(m->page_prefix)) == 0 &&
	    (req->path[strlen(m->page_prefix)] == '\0' || req->path[strlen(m->page_prefix)] == '/')) {
		m->page(m->page_userdata, req, resp);
		return;
	}
	if (strcmp(req->path, "/metrics") != 0) {
		httpd_error(resp, 404, "no such path '%s'; metrics are at /metrics", req->path);
		return;
	}
	if (strcmp(req->method, "GET") != 0 && strcmp(req->method, "HEAD") != 0) {
		httpd_error(resp, 405, "method '%s' not allowed on /metrics", req->method);
		return;
	}
	f = httpd_body_open(req, resp);
	if (!f) {
		httpd_error(resp, 500, "out of memory");
		return;
	}
	/* Closed in any case: the stream holds the body's memory. */
	r = metrics_write(m, f);
	if (fclose(f) != 0 || r < 0) {
		httpd_error(resp, 500, "cannot format the metrics");
		return;
	}
	resp->status = 200;
	resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
	/* Scrapes that come together share one exposition: a flood of them
	 * costs the loop one rendering a second, and slow readers hold one
	 * copy between them, not one each. */
	resp->share_ms = METRICS_SHARE_MS;
}

void metrics_set_page(struct metrics *m, const char *prefix,
		      void (*handler)(void *userdata, const struct httpd_request *req, struct httpd_response *resp),
		      void *userdata)
{
	if (!m->httpd)
		return;
	m->page_prefix = prefix;
	m->page = prefix ? handler : NULL;
	m->page_userdata = userdata;
}

int metrics_new(sd_event *event, const char *listen, struct metrics **ret)
{
	struct metrics *m = calloc(1, sizeof(*m));
	int fd, r;

	if (!m)
		return -ENOMEM;
	pthread_mutex_init(&m->lock, NULL);
	m->by_name = g_hash_table_new(g_str_hash, g_str_equal);
	/* The registry is made after the configuration was read: that first
	 * load counts as a successful one. */
	m->reload_ok = true;
	m->reload_success = wall_seconds();
	m->start_s = process_start();
	if (listen) {
		fd = httpd_listen_tcp(listen);
		if (fd < 0) {
			g_hash_table_destroy(m->by_name);
			pthread_mutex_destroy(&m->lock);
			free(m);
			return fd;
		}
		r = httpd_new(event, fd, "metrics", METRICS_MAX_BODY, on_request, m, &m->httpd);
		if (r < 0) {
			g_hash_table_destroy(m->by_name);
			pthread_mutex_destroy(&m->lock);
			free(m);
			return r;
		}
		log_info("metrics: serving on http://%s/metrics", listen);
	}
	*ret = m;
	return 0;
}

void metrics_free(struct metrics *m)
{
	if (!m)
		return;
	httpd_free(m->httpd);
	/* The index only points at the entries, freed below. */
	g_hash_table_destroy(m->by_name);
	for (size_t i = 0; i < m->n_groups; i++)
		group_free(m->groups[i]);
	free(m->groups);
	for (size_t i = 0; i < m->n_calls; i++) {
		free(m->calls[i].driver);
		free(m->calls[i].operation);
	}
	free(m->calls);
	pthread_mutex_destroy(&m->lock);
	free(m);
}
