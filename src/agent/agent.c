/* The agent: start-up, the sd-event loop, signals, reload and sd_notify.
 *
 * Signal handlers are sd-event signal sources, so they run on the loop like
 * everything else and never interrupt a half-done evaluation. A reload reads
 * and validates the whole new configuration and builds every new group before
 * anything is swapped; if any of that fails the running configuration stays,
 * and the journal and STATUS= say why. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>

#include "admin/admin.h"
#include "agent/agent.h"
#include "base/clock.h"
#include "base/heap.h"
#include "config/config.h"
#include "agent/group.h"
#include "agent/state-writer.h"
#include "sources/http.h"
#include "log/log.h"
#include "log/log-ids.h"
#include "admin/metrics.h"
#include "agent/notify.h"
#include "agent/preflight.h"
#include "cluster/cluster.h"
#include "sources/cloud_worker.h"
#include "admin/status-page.h"
#include "state/state.h"

/* READY=1 waits for the first observation of every group, but no longer
 * than this: a dead host must not keep the unit in "activating". */
#define READY_TIMEOUT_USEC (30ULL * 1000000ULL)

struct agent {
	sd_event *event;
	const struct agent_options *opts;
	struct config *config;
	struct group_rt **groups;
	size_t n_groups;
	struct http *http;
	struct group_ctx ctx;
	bool ready_sent;
	size_t waiting_first; /* groups whose first observation is pending */
	sd_event_source *ready_timer;
	struct metrics *metrics;
	struct notifier *notifier;
	struct admin *admin;
	int64_t started_ms;  /* monotonic: the uptime survives a clock step */
	int lock_fd; /* the state directory's lock (state_lock), or -1 */
	sd_event_source *cluster_timer; /* cluster mode: STATUS= and metrics, every second */
	sd_event_source *trim_timer;    /* on_trim_timer() */
	char status[512];               /* the STATUS= text last sent */
};

/* How often the loop hands free heap pages back (on_trim_timer()). */
#define TRIM_USEC (60ULL * 1000000ULL)

/* How often the cluster's state reaches STATUS= and the metrics. */
#define CLUSTER_REPORT_USEC (1000000ULL)

/* Sends STATUS= when its text changed. In a cluster it says how many
 * groups this agent acts on, or that it acts on none because its lease is
 * lost (etcd unreachable), so that `systemctl status` shows an agent that
 * holds. */
/* Each group's share of the decision history's budget (history_memory):
 * with 16 MiB, 100 groups keep their 100 newest records, and 10,000 keep
 * one or two each (a record with three signals is about 1.2 KB). */
static size_t history_bytes(const struct config *c)
{
	return (size_t)c->agent.history_memory_mib * 1024 * 1024 / (c->n_groups ? c->n_groups : 1);
}

static void agent_status(struct agent *a, bool force)
{
	char text[sizeof(a->status)], tail[320] = "";
	size_t n_dry = 0;

	for (size_t i = 0; i < a->n_groups; i++)
		n_dry += group_rt_dry_run(a->groups[i]);
	if (a->ctx.cluster) {
		struct cluster_info ci;

		cluster_get_info(a->ctx.cluster, &ci);
		if (!ci.lease_valid)
			snprintf(tail, sizeof(tail),
				 "; cluster lease lost, acting on no group until etcd answers again%s%.200s",
				 ci.error[0] ? ": " : "", ci.error);
		else
			snprintf(tail, sizeof(tail), "; cluster: acting on %zu, %zu member%s%s", ci.n_owned, ci.n_members,
				 ci.n_members == 1 ? "" : "s",
				 ci.n_orphaned ? ", some groups without an owner" : "");
	}
	snprintf(text, sizeof(text), "Managing %zu group%s%s%s%s", a->n_groups, a->n_groups == 1 ? "" : "s",
		 n_dry ? ", dry run for " : "", n_dry ? (n_dry == a->n_groups ? "all" : "some") : "", tail);
	/* The timer repeats only a change; other STATUS= texts (a reload's)
	 * may have been sent meanwhile, so the callers after those force it. */
	if (!force && strcmp(text, a->status) == 0)
		return;
	snprintf(a->status, sizeof(a->status), "%s", text);
	sd_notifyf(false, "STATUS=%s", text);
}

static int on_cluster_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct agent *a = userdata;
	struct cluster_info ci;

	sd_event_source_set_time(s, usec + CLUSTER_REPORT_USEC);
	sd_event_source_set_enabled(s, SD_EVENT_ON);
	cluster_get_info(a->ctx.cluster, &ci);
	metrics_record_cluster(a->metrics, &(struct metrics_cluster){
						   .lease_valid = ci.lease_valid,
						   .renewals = ci.renewals,
						   .renew_failures = ci.renew_failures,
						   .leases_lost = ci.leases_lost,
						   .members = ci.n_members,
						   .owned = ci.n_owned,
						   .orphaned = ci.n_orphaned,
					   });
	if (a->ready_sent)
		agent_status(a, false);
	return 0;
}

/* Each evaluation allocates and frees (an observation's members, the
 * packed decision and state, records), and the blocks a group keeps are
 * made again at each change, so they move: pages with nothing in use end
 * up between pages in use, and glibc gives back only those at the top of
 * the heap. Once a minute the loop gives back the others too, as it does
 * after a reload: a few milliseconds with 10,000 groups, during which the
 * workers' allocations wait for the heap's lock. Pages used again fault
 * back in one at a time. */
static int on_trim_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	(void)userdata;
	sd_event_source_set_time(s, usec + TRIM_USEC);
	sd_event_source_set_enabled(s, SD_EVENT_ON);
	heap_give_back();
	return 0;
}

static void agent_send_ready(struct agent *a, const char *why)
{
	if (a->ready_sent)
		return;
	a->ready_sent = true;
	a->ready_timer = sd_event_source_disable_unref(a->ready_timer);
	sd_notify(false, "READY=1");
	agent_status(a, true);
	log_info("autoscaled %s ready: %zu group%s (%s)", PACKAGE_VERSION, a->n_groups,
		 a->n_groups == 1 ? "" : "s", why);
}

/* group.c calls this once per group, after its first observation (in a
 * cluster that observes only its own groups, also for one another agent
 * owns). */
static void on_first_observation(void *userdata)
{
	struct agent *a = userdata;

	if (a->waiting_first > 0)
		a->waiting_first--;
	if (a->waiting_first == 0)
		agent_send_ready(a, a->ctx.cluster ? "every group it manages observed" : "every group observed");
}

static int on_ready_timeout(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct agent *a = userdata;

	log_warnx("agent: %zu group%s not observed after %llu s; ready anyway", a->waiting_first,
		  a->waiting_first == 1 ? "" : "s", (unsigned long long)(READY_TIMEOUT_USEC / 1000000));
	agent_send_ready(a, "some groups not yet observed");
	return 0;
}

/* The running groups' positions in a->groups, sorted by name: a reload
 * finds each new group's running one by name, and a scan of all of them
 * for each was quadratic (10^8 comparisons at 10,000 groups). The names
 * are the running configuration's. */
struct by_name {
	const char *name;
	size_t pos;
};

static int by_name_cmp(const void *a, const void *b)
{
	return strcmp(((const struct by_name *)a)->name, ((const struct by_name *)b)->name);
}

static struct by_name *running_by_name(const struct agent *a)
{
	struct by_name *v = calloc(a->n_groups ? a->n_groups : 1, sizeof(*v));

	if (!v)
		return NULL;
	for (size_t j = 0; j < a->n_groups; j++)
		v[j] = (struct by_name){group_rt_name(a->groups[j]), j};
	qsort(v, a->n_groups, sizeof(*v), by_name_cmp);
	return v;
}

/* The position in a->groups of the running group NAME, or -1 (always at
 * start-up, when V is NULL). */
static ssize_t running_pos(const struct agent *a, const struct by_name *v, const char *name)
{
	const struct by_name key = {name, 0}, *hit;

	if (!v || !a->n_groups)
		return -1;
	hit = bsearch(&key, v, a->n_groups, sizeof(*v), by_name_cmp);
	return hit ? (ssize_t)hit->pos : -1;
}

/* Builds runtimes for every group of `c` into *ret. A group whose
 * configuration equals that of the running group of its name (a reload)
 * keeps the running runtime: (*ret)[i] is that one and keep[i] is set.
 * The others are new, built to adopt the state of the running group of
 * their name, if any, after the swap. `keep` has c->n_groups entries (NULL
 * at start-up, when nothing runs). On failure nothing is kept or adopted
 * and the new runtimes are freed. */
static int build_groups(struct agent *a, const struct config *c, const struct by_name *running,
			struct group_rt ***ret, bool *keep)
{
	struct group_rt **v;
	int r;

	v = calloc(c->n_groups ? c->n_groups : 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < c->n_groups; i++) {
		ssize_t pos = running_pos(a, running, c->groups[i].name);
		struct group_rt *old = pos >= 0 ? a->groups[pos] : NULL;

		if (keep && old && config_group_equal(group_rt_conf(old), &c->groups[i])) {
			v[i] = old;
			keep[i] = true;
			continue;
		}
		r = group_rt_new(&a->ctx, &c->groups[i], old, &v[i]);
		if (r < 0) {
			for (size_t j = 0; j < i; j++)
				if (!keep || !keep[j])
					group_rt_free(v[j]);
			free(v);
			return r;
		}
	}
	*ret = v;
	return 0;
}

static void free_groups(struct group_rt **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		group_rt_free(v[i]);
	free(v);
}

/* Takes the lock of state directory `dir` into *fd (see state_lock), so
 * that a second daemon never writes the same state files or takes over the
 * admin socket. Returns 0 or a negative errno after logging why, naming the
 * other daemon's pid when it holds the lock. */
static int lock_state_directory(const char *dir, int *fd, char *err, size_t err_len)
{
	long pid = 0;
	int r = state_lock(dir, &pid);

	if (r >= 0) {
		*fd = r;
		return 0;
	}
	if (r == -EBUSY && pid > 0)
		snprintf(err, err_len, "another autoscaled (pid %ld) is running with state directory '%s'", pid, dir);
	else if (r == -EBUSY)
		snprintf(err, err_len, "another autoscaled is running with state directory '%s' (its pid is not yet written)",
			 dir);
	else
		snprintf(err, err_len, "cannot lock state directory '%s': %s", dir, strerror(-r));
	log_errx("agent: %s", err);
	return r;
}

static void ensure_directory(const char *path, mode_t mode);

/* Reloads the configuration; returns 0, or -EINVAL with the first error in
 * err when the running configuration stays. */
/* Cluster mode: the groups of c as the cluster runtime takes them. */
static int cluster_specs(const struct config *c, struct cluster_group_spec **ret)
{
	struct cluster_group_spec *v = calloc(c->n_groups ? c->n_groups : 1, sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < c->n_groups; i++)
		v[i] = (struct cluster_group_spec){ c->groups[i].name, c->groups[i].owner };
	*ret = v;
	return 0;
}

static int agent_reload(struct agent *a, char *err, size_t err_len)
{
	struct config_errors errs = {0};
	struct config *c = NULL;
	struct group_rt **groups = NULL;
	struct by_name *running = NULL;
	bool *keep = NULL;
	size_t n_kept = 0;
	int r, new_lock = -1;

	sd_notifyf(false, "RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=Reloading %s",
		   (unsigned long long)(clock_mono_ns() / 1000), a->opts->config_path);
	log_info("agent: reloading '%s'", a->opts->config_path);

	r = config_load(a->opts->config_path, &c, &errs);
	/* What -n checks beyond the file (drivers and their options, sources)
	 * is checked before anything of the running configuration changes. */
	if (r == 0 && (r = preflight_check(c, &errs)) < 0) {
		config_free(c);
		c = NULL;
	}
	/* The agent's membership is fixed for its life: its name, lease and
	 * endpoints go with the process. */
	if (r == 0 && !cluster_conf_equal(c->cluster, a->config->cluster)) {
		char *msg = NULL;

		if (asprintf(&msg, "%s: the 'cluster' section changed: restart the daemon to apply it", c->path) >= 0) {
			char **v = realloc(errs.v, (errs.n + 2) * sizeof(*v));

			if (v) {
				errs.v = v;
				v[errs.n++] = msg;
				v[errs.n] = NULL;
				msg = NULL;
			}
		}
		free(msg);
		config_free(c);
		c = NULL;
		r = -EINVAL;
	}
	if (r < 0) {
		for (size_t i = 0; i < errs.n; i++)
			log_errx("%s", errs.v[i]);
		sd_notifyf(false, "READY=1\nSTATUS=Reload failed, still running the previous configuration: %s",
			   errs.n ? errs.v[0] : strerror(-r));
		log_fields(LOG_ERR, NULL, LOG_ID_RELOAD, (const struct log_field[]){{"RESULT", "failed"}}, 1,
			   "agent: reload of '%s' failed (%zu error%s); the previous configuration stays",
			   a->opts->config_path, errs.n, errs.n == 1 ? "" : "s");
		snprintf(err, err_len, "%s", errs.n ? errs.v[0] : strerror(-r));
		config_errors_clear(&errs);
		return -EINVAL;
	}
	/* A new state directory is locked before any group reads it; the old
	 * lock is released only once the new configuration runs. */
	if (strcmp(c->agent.state_directory, a->config->agent.state_directory) != 0) {
		ensure_directory(c->agent.state_directory, 0750);
		r = lock_state_directory(c->agent.state_directory, &new_lock, err, err_len);
		if (r < 0) {
			sd_notifyf(false, "READY=1\nSTATUS=Reload failed, still running the previous configuration: %s",
				   err);
			config_free(c);
			return -EINVAL;
		}
	}
	/* The groups read the agent's settings (state directory, driver
	 * directory) through the shared context: it follows the new
	 * configuration, and goes back if the new groups cannot be built. */
	a->ctx.agent_conf = &c->agent;
	keep = calloc(c->n_groups ? c->n_groups : 1, sizeof(*keep));
	running = running_by_name(a);
	r = keep && running ? build_groups(a, c, running, &groups, keep) : -ENOMEM;
	if (r < 0) {
		free(keep);
		free(running);
		if (new_lock >= 0)
			close(new_lock);
		a->ctx.agent_conf = &a->config->agent;
		sd_notifyf(false, "READY=1\nSTATUS=Reload failed, still running the previous configuration: %s",
			   strerror(-r));
		log_fields_errno(LOG_ERR, NULL, LOG_ID_RELOAD, (const struct log_field[]){{"RESULT", "failed"}}, 1, r,
				 "agent: reload of '%s' failed (the previous configuration stays)", a->opts->config_path);
		snprintf(err, err_len, "the groups could not be built: %s (see the journal)", strerror(-r));
		config_free(c);
		return -EINVAL;
	}
	/* Everything is built: swap. A group whose configuration did not
	 * change goes on as it was, now reading the new copy of it; the new
	 * groups take over the old ones' drivers, driver calls, windows and
	 * engine state by name. */
	a->ctx.history_bytes = history_bytes(c);
	for (size_t i = 0; i < c->n_groups; i++) {
		ssize_t j = running_pos(a, running, c->groups[i].name);

		if (j < 0)
			continue;
		if (keep[i]) {
			group_rt_rebind(groups[i], &c->groups[i]);
			a->groups[j] = NULL;
			n_kept++;
		} else {
			group_rt_adopt(groups[i], a->groups[j]);
		}
	}
	free(running);
	for (size_t j = 0; j < a->n_groups; j++)
		if (a->groups[j])
			group_rt_stop(a->groups[j]);
	free_groups(a->groups, a->n_groups);
	config_free(a->config);
	a->config = c;
	if (new_lock >= 0) {
		close(a->lock_fd);
		a->lock_fd = new_lock;
	}
	a->groups = groups;
	a->n_groups = c->n_groups;
	for (size_t i = 0; i < a->n_groups; i++)
		if (!keep[i])
			group_rt_start(a->groups[i]);
	free(keep);
	if (a->ctx.cluster) {
		struct cluster_group_spec *specs = NULL;

		r = cluster_specs(c, &specs);
		if (r >= 0)
			r = cluster_set_groups(a->ctx.cluster, specs, c->n_groups);
		free(specs);
		if (r < 0)
			log_err_errno(r, "cluster: cannot take the reloaded groups");
	}
	metrics_prune(a->metrics, c);
	/* The replaced runtimes and the reader's tree were freed in the middle
	 * of the heap, under what the reload built: hand their pages back. The
	 * replaced configuration went with its region (config.h), unmapped
	 * whole: from the heap, its blocks and the new one's, among the tree's,
	 * left the resident memory some 40 MB higher after each reload that
	 * changed groups at 10,000 groups. */
	heap_give_back();
	sd_notify(false, "READY=1");
	agent_status(a, true);
	log_fields(LOG_INFO, NULL, LOG_ID_RELOAD, (const struct log_field[]){{"RESULT", "done"}}, 1,
		   "agent: reloaded '%s': %zu group%s, %zu unchanged", a->opts->config_path, a->n_groups,
		   a->n_groups == 1 ? "" : "s", n_kept);
	return 0;
}

/* ------------------------------------------------------------ admin API */

static struct group_rt *find_group(struct agent *a, const char *name)
{
	for (size_t i = 0; i < a->n_groups; i++)
		if (strcmp(group_rt_name(a->groups[i]), name) == 0)
			return a->groups[i];
	return NULL;
}

static cJSON *op_health(void *u)
{
	struct agent *a = u;
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "status", "ok");
	cJSON_AddStringToObject(o, "version", PACKAGE_VERSION);
	cJSON_AddNumberToObject(o, "groups", (double)a->n_groups);
	cJSON_AddBoolToObject(o, "ready", a->ready_sent);
	cJSON_AddNumberToObject(o, "uptime_s", (double)((clock_mono_ms() - a->started_ms) / 1000));
	return o;
}

static cJSON *op_list(void *u)
{
	struct agent *a = u;
	cJSON *o = cJSON_CreateObject();
	cJSON *v = o ? cJSON_AddArrayToObject(o, "groups") : NULL;

	if (!v) {
		cJSON_Delete(o);
		return NULL;
	}
	for (size_t i = 0; i < a->n_groups; i++)
		cJSON_AddItemToArray(v, group_admin_summary(a->groups[i]));
	return o;
}

static cJSON *op_show(void *u, const char *name)
{
	struct group_rt *g = find_group(u, name);

	return g ? group_admin_show(g) : NULL;
}

static cJSON *op_decisions(void *u, const char *name)
{
	struct group_rt *g = find_group(u, name);

	return g ? group_admin_decisions(g) : NULL;
}

#define WITH_GROUP(u, name, err, len)                                        \
	struct group_rt *g = find_group(u, name);                            \
	if (!g) {                                                            \
		snprintf(err, len, "no such group '%s'", name);              \
		return -ENOENT;                                              \
	}

static int op_pause(void *u, const char *name, int64_t until_ms, char *err, size_t len)
{
	WITH_GROUP(u, name, err, len);
	return group_admin_pause(g, until_ms, err, len);
}

static int op_resume(void *u, const char *name, char *err, size_t len)
{
	WITH_GROUP(u, name, err, len);
	return group_admin_resume(g, err, len);
}

static int op_pin(void *u, const char *name, int count, int64_t until_ms, bool force, char *err, size_t len)
{
	WITH_GROUP(u, name, err, len);
	return group_admin_pin(g, count, until_ms, force, err, len);
}

static int op_unpin(void *u, const char *name, char *err, size_t len)
{
	WITH_GROUP(u, name, err, len);
	return group_admin_unpin(g, err, len);
}

static int op_dry_run(void *u, const char *name, bool enabled, char *err, size_t len)
{
	WITH_GROUP(u, name, err, len);
	return group_admin_dry_run(g, enabled, err, len);
}

static int op_what_if(void *u, const char *name, const struct admin_what_if *w, cJSON **ret, char *err, size_t len)
{
	WITH_GROUP(u, name, err, len);
	return group_admin_what_if(g, w, ret, err, len);
}

static cJSON *op_cluster(void *u)
{
	struct agent *a = u;

	return a->ctx.cluster ? cluster_status_json(a->ctx.cluster) : NULL;
}

static int op_reload(void *u, char *err, size_t len)
{
	struct agent *a = u;
	int r = agent_reload(a, err, len);

	metrics_record_reload(a->metrics, r == 0);
	return r;
}

static int64_t op_now(void *u)
{
	(void)u;
	return clock_wall_ms();
}

static const struct admin_ops admin_ops = {
	.health = op_health,
	.list = op_list,
	.show = op_show,
	.decisions = op_decisions,
	.pause = op_pause,
	.resume = op_resume,
	.pin = op_pin,
	.unpin = op_unpin,
	.what_if = op_what_if,
	.dry_run = op_dry_run,
	.reload = op_reload,
	.cluster = op_cluster,
	.now_ms = op_now,
};

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	struct agent *a = userdata;

	switch (si->ssi_signo) {
	case SIGHUP: {
		char err[512];

		metrics_record_reload(a->metrics, agent_reload(a, err, sizeof(err)) == 0);
		break;
	}
	default:
		log_info("agent: %s received, stopping", strsignal((int)si->ssi_signo));
		sd_notify(false, "STOPPING=1\nSTATUS=Stopping");
		sd_event_exit(sd_event_source_get_event(s), 0);
		break;
	}
	return 0;
}

/* Creates `path` and its missing parents with `mode`, as systemd's
 * StateDirectory= and RuntimeDirectory= would: outside systemd (the
 * foreground, the demo, tests) nobody else makes them. */
static void ensure_directory(const char *path, mode_t mode)
{
	char buf[4096];
	size_t n = strlen(path);

	if (n == 0 || n >= sizeof(buf))
		return;
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST) {
			log_warn("agent: cannot create '%s'", buf);
			return;
		}
		*p = '/';
	}
	if (mkdir(buf, mode) < 0 && errno != EEXIST)
		log_warn("agent: cannot create '%s'", buf);
}

/* Creates the directory a socket will be bound in. */
static void ensure_parent(const char *path, mode_t mode)
{
	char buf[4096];
	char *slash;

	if (!path || strlen(path) >= sizeof(buf))
		return;
	strcpy(buf, path);
	slash = strrchr(buf, '/');
	if (!slash || slash == buf)
		return;
	*slash = '\0';
	ensure_directory(buf, mode);
}

/* Every signal poll in flight holds a socket and every driver call may
 * hold more; systemd's soft limit of 1024 descriptors runs out near a
 * thousand signals, so take the hard limit, which is ours to take. */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			log_warn("agent: cannot raise the open-file limit");
	}
}

int agent_run(const struct agent_options *opts)
{
	struct agent a = {.opts = opts, .started_ms = clock_mono_ms(), .lock_fd = -1};
	struct status_page status = {.ops = &admin_ops, .userdata = &a};
	char err[PATH_MAX + 128];
	struct config_errors errs = {0};
	sigset_t mask;
	int r;

	sd_notifyf(false, "STATUS=Reading %s", opts->config_path);
	r = config_load(opts->config_path, &a.config, &errs);
	if (r == 0 && (r = preflight_check(a.config, &errs)) < 0) {
		config_free(a.config);
		a.config = NULL;
	}
	if (r < 0) {
		for (size_t i = 0; i < errs.n; i++)
			log_errx("%s", errs.v[i]);
		if (errs.n == 0)
			log_err_errno(r, "agent: cannot load '%s'", opts->config_path);
		sd_notifyf(false, "STATUS=Invalid configuration: %s", errs.n ? errs.v[0] : strerror(-r));
		config_errors_clear(&errs);
		return r;
	}

	raise_fd_limit();
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);

	r = sd_event_default(&a.event);
	if (r < 0)
		goto out;
	/* sd-event pings the watchdog at half of WATCHDOG_USEC when systemd
	 * asks for it; a stuck loop stops the pings. */
	r = sd_event_set_watchdog(a.event, true);
	if (r < 0)
		goto out;
	if (r > 0)
		log_debug("agent: watchdog enabled");
	sd_event_add_signal(a.event, NULL, SIGTERM, on_signal, &a);
	sd_event_add_signal(a.event, NULL, SIGINT, on_signal, &a);
	sd_event_add_signal(a.event, NULL, SIGHUP, on_signal, &a);

	/* The cloud monitoring sources share the cloud drivers' REST and
	 * credential code and register themselves with the source table. */
	r = cloud_sources_register();
	if (r < 0 && r != -EEXIST) {
		log_err_errno(r, "agent: cannot register the cloud sources");
		goto out;
	}
	ensure_directory(a.config->agent.state_directory, 0750);
	/* Before anything touches the state files or the admin socket. */
	r = lock_state_directory(a.config->agent.state_directory, &a.lock_fd, err, sizeof(err));
	if (r < 0) {
		sd_notifyf(false, "STATUS=%s", err);
		goto out;
	}
	ensure_parent(a.config->agent.admin_socket, 0755);
	r = http_new(a.event, &a.http);
	if (r < 0) {
		log_err_errno(r, "agent: cannot set up HTTP");
		goto out;
	}
	r = metrics_new(a.event, a.config->agent.metrics_listen, &a.metrics);
	if (r < 0)
		goto out;
	metrics_prune(a.metrics, a.config);
	r = notifier_new(a.event, a.http, MS_PER_SEC, &a.notifier);
	if (r < 0)
		goto out;
	a.ctx = (struct group_ctx){
		.event = a.event,
		.http = a.http,
		.dry_run = opts->dry_run || a.config->agent.dry_run,
		.verbose = opts->verbose,
		.first_observation = on_first_observation,
		.userdata = &a,
		.agent_conf = &a.config->agent,
		.metrics = a.metrics,
		.notifier = a.notifier,
		.history_bytes = history_bytes(a.config),
	};

	if (a.config->cluster) {
		struct cluster_group_spec *specs = NULL;

		sd_notify(false, "STATUS=Joining the cluster");
		r = cluster_specs(a.config, &specs);
		if (r >= 0)
			r = cluster_start(a.config->cluster, specs, a.config->n_groups, &a.ctx.cluster);
		free(specs);
		if (r < 0)
			goto out;
		r = sd_event_add_time_relative(a.event, &a.cluster_timer, CLOCK_MONOTONIC, CLUSTER_REPORT_USEC, 0,
					       on_cluster_timer, &a);
		if (r < 0) {
			log_err_errno(r, "agent: cannot set up the cluster's timer");
			goto out;
		}
	}

	sd_notify(false, "STATUS=Opening drivers");
	r = build_groups(&a, a.config, NULL, &a.groups, NULL);
	if (r < 0) {
		log_err_errno(r, "agent: start-up failed");
		sd_notifyf(false, "STATUS=Start-up failed: %s", strerror(-r));
		goto out;
	}
	a.n_groups = a.config->n_groups;
	a.waiting_first = a.n_groups;
	/* The daemon runs without its admin API rather than not at all; the
	 * reason is logged by admin_new(). */
	if (admin_new(a.event, a.config->agent.admin_socket, a.config->agent.admin_group, &admin_ops, &a, &a.admin) < 0)
		log_warnx("agent: running without the admin API");
	/* The page reads through the same operations as the socket, and only
	 * those that read; the configuration allows it only on loopback. */
	if (a.config->agent.status_page) {
		metrics_set_page(a.metrics, STATUS_PAGE_PREFIX, status_page_serve, &status);
		log_info("status page: serving on http://%s%s", a.config->agent.metrics_listen, STATUS_PAGE_PREFIX);
	}
	for (size_t i = 0; i < a.n_groups; i++)
		group_rt_start(a.groups[i]);
	/* The reader's tree went in the middle of the heap, under the groups
	 * (see on_trim_timer()). */
	heap_give_back();
	if (sd_event_add_time_relative(a.event, &a.trim_timer, CLOCK_MONOTONIC, TRIM_USEC, 0, on_trim_timer, &a) < 0)
		log_warnx("agent: cannot set up the heap's trim timer");
	if (a.n_groups == 0)
		agent_send_ready(&a, "no groups configured");
	else
		sd_event_add_time_relative(a.event, &a.ready_timer, CLOCK_MONOTONIC, READY_TIMEOUT_USEC, 0,
					   on_ready_timeout, &a);

	r = sd_event_loop(a.event);
	for (size_t i = 0; i < a.n_groups; i++) {
		group_rt_stop(a.groups[i]);
		group_rt_save_final(a.groups[i]);
	}
out:
	/* After the groups stopped starting calls; it waits for a fenced call
	 * still running, then hands the groups over at once. */
	cluster_stop(a.ctx.cluster);
	a.ctx.cluster = NULL;
	admin_free(a.admin);
	free_groups(a.groups, a.n_groups);
	/* A clean stop leaves every state file as the groups last saw it. */
	state_writer_flush();
	a.ready_timer = sd_event_source_disable_unref(a.ready_timer);
	a.cluster_timer = sd_event_source_disable_unref(a.cluster_timer);
	a.trim_timer = sd_event_source_disable_unref(a.trim_timer);
	notifier_free(a.notifier);
	metrics_free(a.metrics);
	http_free(a.http);
	config_free(a.config);
	sd_event_unref(a.event);
	if (a.lock_fd >= 0)
		close(a.lock_fd);
	if (r < 0)
		log_err_errno(r, "agent: stopped on error");
	else
		log_info("agent: stopped");
	return r < 0 ? r : 0;
}
