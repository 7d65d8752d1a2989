/* libvirt driver: the warm pool of a group (its warm_pool block). Warm
 * members are clones made like members (libvirt-clone.c) whose tag carries a
 * warm marker (libvirt-internal.h); the scan keeps them apart from the
 * members. Here: their repair after a crash, taking them into service on a
 * scale-out, parking scale-in victims in the pool, and the pool's upkeep
 * (parking, replacing, topping up) at the end of each observation.
 *
 * A warm member's life, each step written to its tag before or right after
 * the libvirt call so that a crash between two leaves a state the scan
 * finishes (lv_warm_repair):
 *
 *   define (creating, warm) -> start (booting) -> suspend (paused)
 *                                              -> managed save (saved)
 *   define (creating, warm) -> (stopped)
 *   take: tag as a member "creating" -> resume / start -> "active"
 */
#include "libvirt-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libvirt/virterror.h>

extern char **environ;

/* A top-up stops after this long inside one observation and goes on at the
 * next, so that making a pool of many members never holds the group's
 * observations for long. */
#define TOPUP_BUDGET_MS 5000
/* A reseed command that runs longer is killed (and logged). */
#define RESEED_TIMEOUT_MS 30000

static enum lv_warm wanted(const struct autoscaled_driver_instance *h)
{
	switch (h->opt.warm.state) {
	case LV_WARM_SAVED:
		return LV_W_SAVED;
	case LV_WARM_STOPPED:
		return LV_W_STOPPED;
	case LV_WARM_PAUSED:
	default:
		return LV_W_PAUSED;
	}
}

/* Removes a warm member for `why`; true when it still exists (the removal
 * failed and the next scan retries). */
static bool drop(struct autoscaled_driver_instance *h, struct lv_host *host, virDomainPtr dom,
		 const struct lv_member *m, const char *why)
{
	lv_log(h, AUTOSCALED_LOG_NOTICE, "removing warm member '%s' on '%s': %s", m->name, host->uri, why);
	return lv_finish_removal(h, host, dom, m->name) < 0;
}

bool lv_warm_repair(struct autoscaled_driver_instance *h, struct lv_host *host, virDomainPtr dom, struct lv_member *m)
{
	bool running = m->dom_state == VIR_DOMAIN_RUNNING || m->dom_state == VIR_DOMAIN_BLOCKED;
	bool shutoff = m->dom_state == VIR_DOMAIN_SHUTOFF;
	enum lv_warm was = m->warm;

	if (m->phase == LV_REMOVING)
		return drop(h, host, dom, m, "its removal was interrupted");
	/* Defined, but the rest (its start, its tag) may be missing: a new
	 * one is cheaper than finding out. */
	if (m->phase == LV_CREATING)
		return drop(h, host, dom, m, "it was left half made");
	switch (m->warm) {
	case LV_W_BOOTING:
		if (m->dom_state == VIR_DOMAIN_PAUSED) {
			m->warm = LV_W_PAUSED; /* suspended, not yet tagged */
		} else if (shutoff && virDomainHasManagedSaveImage(dom, 0) == 1) {
			m->warm = LV_W_SAVED; /* saved, not yet tagged */
		} else if (!running) {
			lv_log(h, AUTOSCALED_LOG_NOTICE, "restarting warm member '%s' on '%s', found %s", m->name,
			       host->uri, shutoff ? "stopped" : "in another state");
			if (virDomainCreate(dom) < 0) {
				lv_log_virt(h, AUTOSCALED_LOG_ERROR, "starting '%s' on '%s' failed", m->name, host->uri);
				return drop(h, host, dom, m, "it cannot be started");
			}
			m->dom_state = VIR_DOMAIN_RUNNING;
			m->started_ms = clock_wall_ms();
			lv_set_tag(h, dom, m);
		}
		break;
	case LV_W_PAUSED:
	case LV_W_SAVED:
	case LV_W_STOPPED:
		/* Resumed or started outside: it warms up and parks again. */
		if (running) {
			m->warm = LV_W_BOOTING;
			m->parked_ms = 0;
			m->started_ms = clock_wall_ms();
			break;
		}
		if ((m->warm == LV_W_PAUSED && m->dom_state != VIR_DOMAIN_PAUSED) ||
		    (m->warm == LV_W_SAVED && !(shutoff && virDomainHasManagedSaveImage(dom, 0) == 1)) ||
		    (m->warm == LV_W_STOPPED && !shutoff)) {
			virResetLastError();
			return drop(h, host, dom, m, "its domain is not in the state its tag says (a host restart, or a "
						     "change from outside)");
		}
		break;
	case LV_W_NONE:
		break;
	}
	if (m->warm != was) {
		if (m->warm != LV_W_BOOTING && !m->parked_ms)
			m->parked_ms = clock_wall_ms();
		lv_log(h, AUTOSCALED_LOG_NOTICE, "warm member '%s' on '%s' is %s (it was tagged %s)", m->name, host->uri,
		       lv_warm_name(m->warm), lv_warm_name(was));
		lv_set_tag(h, dom, m);
	}
	return true;
}

/* ---------------------------------------------------------------- reseed */

static void sleep_ms(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* Runs the pool's reseed_command for member m (event "take" or "return"),
 * with the member in its environment, and waits for it up to
 * RESEED_TIMEOUT_MS. A failure is logged: the member is in service (or in
 * the pool) all the same, since a guest that missed its reseed is still a
 * working guest, and an operator reads the warning. */
static void reseed(struct autoscaled_driver_instance *h, const struct lv_member *m, const char *event)
{
	char *const *argv = h->opt.warm.reseed;
	posix_spawn_file_actions_t fa;
	size_t n_env = 0;
	char **env, *own[5] = { NULL };
	int64_t deadline;
	pid_t pid;
	int st = 0, r;

	if (!argv)
		return;
	while (environ && environ[n_env])
		n_env++;
	env = calloc(n_env + 6, sizeof(*env));
	if (!env || asprintf(&own[0], "AUTOSCALED_GROUP=%s", h->host->group) < 0 ||
	    asprintf(&own[1], "AUTOSCALED_DOMAIN=%s", m->name) < 0 ||
	    asprintf(&own[2], "AUTOSCALED_URI=%s", m->host->uri) < 0 ||
	    asprintf(&own[3], "AUTOSCALED_WARM_EVENT=%s", event) < 0) {
		lv_log(h, AUTOSCALED_LOG_WARNING, "reseed command for '%s' not run: out of memory", m->name);
		goto out;
	}
	/* Ours first: getenv() takes the first of a name. */
	for (size_t i = 0; i < 4; i++)
		env[i] = own[i];
	for (size_t i = 0; i < n_env; i++)
		env[4 + i] = environ[i];
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	r = posix_spawn(&pid, argv[0], &fa, NULL, argv, env);
	posix_spawn_file_actions_destroy(&fa);
	if (r != 0) {
		lv_log(h, AUTOSCALED_LOG_WARNING, "reseed command '%s' for '%s' could not start: %s", argv[0], m->name,
		       strerror(r));
		goto out;
	}
	deadline = clock_mono_ms() + RESEED_TIMEOUT_MS;
	while ((r = (int)waitpid(pid, &st, WNOHANG)) == 0 && clock_mono_ms() < deadline)
		sleep_ms(10);
	if (r == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		lv_log(h, AUTOSCALED_LOG_WARNING, "reseed command '%s' for '%s' ran longer than %d s; killed it", argv[0],
		       m->name, RESEED_TIMEOUT_MS / 1000);
	} else if (r < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		lv_log(h, AUTOSCALED_LOG_WARNING, "reseed command '%s' for '%s' failed (%s %d)", argv[0], m->name,
		       r > 0 && WIFEXITED(st) ? "exit status" : "signal",
		       r > 0 && WIFEXITED(st) ? WEXITSTATUS(st) : r > 0 && WIFSIGNALED(st) ? WTERMSIG(st) : -1);
	}
out:
	for (size_t i = 0; i < 4; i++)
		free(own[i]);
	free(env);
}

/* ------------------------------------------------------------------ take */

static int rank(enum lv_warm w)
{
	/* The quickest to serve first: already running, resumed, restored,
	 * booted. */
	switch (w) {
	case LV_W_BOOTING:
		return 0;
	case LV_W_PAUSED:
		return 1;
	case LV_W_SAVED:
		return 2;
	case LV_W_STOPPED:
		return 3;
	default:
		return 4;
	}
}

static void forget(struct autoscaled_driver_instance *h, size_t i)
{
	memmove(&h->warm[i], &h->warm[i + 1], (h->n_warm - i - 1) * sizeof(h->warm[0]));
	h->n_warm--;
}

/* Puts warm member m into service; 0 when it is running as a member. */
static int take_one(struct autoscaled_driver_instance *h, struct lv_member *m)
{
	enum lv_warm was = m->warm;
	int64_t t0 = clock_mono_ms();
	virDomainPtr dom;
	int r = 0;

	if (!lv_connect(h, m->host))
		return -EHOSTUNREACH;
	dom = virDomainLookupByName(m->host->conn, m->name);
	if (!dom) {
		lv_log_virt(h, AUTOSCALED_LOG_WARNING, "warm member '%s' on '%s' is gone", m->name, m->host->uri);
		return lv_virt_errno();
	}
	/* A member from here on: a crash before the resume leaves a member
	 * "creating" that the scan resumes or starts, never a warm one. */
	m->warm = LV_W_NONE;
	m->phase = LV_CREATING;
	m->parked_ms = 0;
	if (lv_set_tag(h, dom, m) < 0) {
		m->warm = was;
		m->phase = LV_ACTIVE;
		virDomainFree(dom);
		return -EIO;
	}
	if (was == LV_W_PAUSED)
		r = virDomainResume(dom);
	else if (was != LV_W_BOOTING)
		r = virDomainCreate(dom); /* a managed-save image is restored */
	if (r < 0) {
		lv_log_virt(h, AUTOSCALED_LOG_ERROR, "%s warm member '%s' on '%s' failed; removing it",
			    was == LV_W_PAUSED ? "resuming" : "starting", m->name, m->host->uri);
		r = lv_virt_errno();
		lv_finish_removal(h, m->host, dom, m->name);
		virDomainFree(dom);
		return r;
	}
	reseed(h, m, "take");
	m->phase = LV_ACTIVE;
	m->dom_state = VIR_DOMAIN_RUNNING;
	if (was != LV_W_BOOTING || !m->started_ms)
		m->started_ms = clock_wall_ms();
	lv_set_tag(h, dom, m);
	virDomainFree(dom);
	lv_log(h, AUTOSCALED_LOG_INFO, "took '%s' on '%s' from the warm pool (%s) in %lld ms", m->name, m->host->uri,
	       lv_warm_name(was), (long long)(clock_mono_ms() - t0));
	return 0;
}

size_t lv_warm_take(struct autoscaled_driver_instance *h, size_t want)
{
	bool bounded = lv_bounded(h) && h->n_warm > 0, up[LV_MAX_HOSTS];
	struct lv_room rooms[LV_MAX_HOSTS] = { { 0 } };
	size_t taken = 0;

	/* A paused member holds its memory already; a saved or stopped one
	 * needs room on its host to start. */
	if (bounded) {
		for (size_t i = 0; i < h->n_hosts; i++)
			up[i] = h->hosts[i].conn != NULL;
		lv_hosts_room(h, up, rooms);
	}
	while (taken < want) {
		struct lv_member m, *nv;
		size_t best = h->n_warm;
		enum lv_warm was;

		for (size_t i = 0; i < h->n_warm; i++) {
			const struct lv_member *a = &h->warm[i], *b = best < h->n_warm ? &h->warm[best] : NULL;

			if (!a->host->conn || a->phase != LV_ACTIVE)
				continue;
			if (bounded && (a->warm == LV_W_SAVED || a->warm == LV_W_STOPPED) &&
			    rooms[a->host - h->hosts].fit <= 0)
				continue;
			/* By speed, then the oldest parked (the first max_age
			 * would replace). */
			if (!b || rank(a->warm) < rank(b->warm) ||
			    (rank(a->warm) == rank(b->warm) && a->parked_ms < b->parked_ms))
				best = i;
		}
		if (best == h->n_warm)
			break;
		m = h->warm[best];
		was = m.warm;
		forget(h, best);
		if (take_one(h, &m) < 0)
			continue;
		if (bounded && (was == LV_W_SAVED || was == LV_W_STOPPED))
			rooms[m.host - h->hosts].fit--;
		nv = realloc(h->members, (h->n_members + 1) * sizeof(*nv));
		if (!nv) {
			/* It is a member on the host; the next scan finds it. */
			break;
		}
		h->members = nv;
		h->members[h->n_members++] = m;
		taken++;
	}
	/* The pool is refilled only after the pacing interval, so that the
	 * refill does not compete with the scale-out it served. */
	if (taken) {
		h->warm_refill_at_ms = clock_mono_ms() + h->opt.warm.refill_ms;
		lv_warm_publish(h);
	}
	return taken;
}

/* ------------------------------------------------------------------ park */

/* Parks a running warm member in the configured state; 0 on success. */
static int park(struct autoscaled_driver_instance *h, virDomainPtr dom, struct lv_member *m)
{
	enum lv_warm want = wanted(h);
	int r;

	if (want == LV_W_PAUSED)
		r = virDomainSuspend(dom);
	else
		r = virDomainManagedSave(dom, 0);
	if (r < 0) {
		lv_log_virt(h, AUTOSCALED_LOG_ERROR, "%s warm member '%s' on '%s' failed",
			    want == LV_W_PAUSED ? "suspending" : "saving", m->name, m->host->uri);
		return lv_virt_errno();
	}
	m->warm = want;
	m->parked_ms = clock_wall_ms();
	m->dom_state = want == LV_W_PAUSED ? VIR_DOMAIN_PAUSED : VIR_DOMAIN_SHUTOFF;
	/* A failure here leaves "booting" on a parked domain, which the scan
	 * retags. */
	lv_set_tag(h, dom, m);
	lv_log(h, AUTOSCALED_LOG_INFO, "warm member '%s' on '%s' is %s", m->name, m->host->uri, lv_warm_name(want));
	return 0;
}

size_t lv_warm_return(struct autoscaled_driver_instance *h, struct lv_member **v, size_t n, autoscaled_instance_fn fn,
		      void *ctx)
{
	const struct lv_warm_options *w = &h->opt.warm;
	size_t k = 0;

	if (!w->return_on_scale_in || w->state == LV_WARM_STOPPED)
		return 0;
	for (size_t i = 0; i < n && h->n_warm < (size_t)w->size; i++) {
		struct lv_member *m = v[i], *nv, c;
		virDomainPtr dom;

		if (m->phase != LV_ACTIVE || m->dom_state != VIR_DOMAIN_RUNNING || !lv_connect(h, m->host))
			continue;
		dom = virDomainLookupByName(m->host->conn, m->name);
		if (!dom) {
			virResetLastError();
			continue;
		}
		nv = realloc(h->warm, (h->n_warm + 1) * sizeof(*nv));
		if (!nv) {
			virDomainFree(dom);
			break;
		}
		h->warm = nv;
		/* Out of the group from here on: a crash leaves a warm member
		 * warming up, which the next upkeep parks. */
		c = *m;
		c.warm = LV_W_BOOTING;
		c.parked_ms = 0;
		c.have_cpu = false;
		c.cpu_percent = -1;
		if (lv_set_tag(h, dom, &c) < 0) {
			virDomainFree(dom);
			continue;
		}
		reseed(h, &c, "return");
		if (park(h, dom, &c) < 0)
			lv_log(h, AUTOSCALED_LOG_WARNING, "'%s' stays in the warm pool running; the next observation "
			       "parks it", c.name);
		virDomainFree(dom);
		h->warm[h->n_warm++] = c;
		lv_log(h, AUTOSCALED_LOG_INFO, "returned '%s' on '%s' to the warm pool instead of deleting it", c.name,
		       c.host->uri);
		/* Not counted again until the next scan rebuilds the list. */
		m->phase = LV_REMOVING;
		if (fn) {
			struct autoscaled_instance in = {
				.id = m->name,
				.state = AUTOSCALED_INSTANCE_STOPPING,
				.created_ms = m->created_ms,
				.location = m->host->uri,
			};

			fn(ctx, &in);
		}
		v[i] = v[k];
		v[k++] = m;
	}
	if (k)
		lv_warm_publish(h);
	return k;
}

/* --------------------------------------------------------------- upkeep */

/* Removes warm member i (from the host and the list); false when the
 * removal failed and it stays. */
static bool remove_warm(struct autoscaled_driver_instance *h, size_t i, const char *why)
{
	struct lv_member *m = &h->warm[i];
	virDomainPtr dom;
	bool stays;

	if (!lv_connect(h, m->host))
		return false;
	dom = virDomainLookupByName(m->host->conn, m->name);
	if (!dom) {
		virResetLastError();
		forget(h, i);
		return true;
	}
	stays = drop(h, m->host, dom, m, why);
	virDomainFree(dom);
	if (!stays)
		forget(h, i);
	return !stays;
}

/* Which warm member to remove first when the pool holds too many: one in
 * another state than configured, else the one parked longest ago. */
static size_t worst(const struct autoscaled_driver_instance *h)
{
	enum lv_warm want = wanted(h);
	size_t w = 0;

	for (size_t i = 1; i < h->n_warm; i++) {
		const struct lv_member *a = &h->warm[i], *b = &h->warm[w];
		bool am = a->warm != want && a->warm != LV_W_BOOTING, bm = b->warm != want && b->warm != LV_W_BOOTING;

		if (am != bm ? am : a->parked_ms < b->parked_ms)
			w = i;
	}
	return w;
}

void lv_warm_publish(struct autoscaled_driver_instance *h)
{
	int64_t count[LV_W_STOPPED + 1] = { 0 };
	bool changed = false;

	/* A group that never had a pool publishes nothing: its series would
	 * say "0 warm members" of a pool that does not exist. */
	h->warm_ever = h->warm_ever || h->opt.warm.size > 0 || h->n_warm > 0;
	if (!h->warm_ever)
		return;
	for (size_t i = 0; i < h->n_warm; i++)
		count[h->warm[i].warm]++;
	for (int s = LV_W_BOOTING; s <= LV_W_STOPPED; s++) {
		changed = changed || count[s] != h->warm_reported[s];
		if (AUTOSCALED_HOST_HAS(h->host, metric))
			h->host->metric(h->host, AUTOSCALED_METRIC_WARM_INSTANCES, lv_warm_name(s), (double)count[s]);
	}
	if (changed)
		lv_log(h, AUTOSCALED_LOG_INFO, "warm pool: %lld booting, %lld paused, %lld saved, %lld stopped (size %d)",
		       (long long)count[LV_W_BOOTING], (long long)count[LV_W_PAUSED], (long long)count[LV_W_SAVED],
		       (long long)count[LV_W_STOPPED], h->opt.warm.size);
	for (int s = LV_W_BOOTING; s <= LV_W_STOPPED; s++)
		h->warm_reported[s] = count[s];
}

void lv_warm_maintain(struct autoscaled_driver_instance *h)
{
	const struct lv_warm_options *w = &h->opt.warm;
	enum lv_warm want = wanted(h);
	int64_t now = clock_wall_ms(), deadline;
	bool eligible[LV_MAX_HOSTS], down = false;

	/* Warm members left by an earlier pool are published while removed. */
	h->warm_ever = h->warm_ever || h->n_warm > 0;
	/* Park what has warmed up; replace what is stale. */
	for (size_t i = 0; i < h->n_warm;) {
		struct lv_member *m = &h->warm[i];
		virDomainPtr dom;

		if (!m->host->conn) {
			i++;
			continue;
		}
		if (m->warm == LV_W_BOOTING && want == LV_W_STOPPED) {
			i += !remove_warm(h, i, "the pool keeps stopped members, never booted ones");
			continue;
		}
		if (m->warm != LV_W_BOOTING && m->warm != want) {
			i += !remove_warm(h, i, "the pool's state has changed");
			continue;
		}
		if (m->warm != LV_W_BOOTING && w->max_age_ms > 0 && m->parked_ms > 0 &&
		    now - m->parked_ms >= w->max_age_ms) {
			i += !remove_warm(h, i, "it is older than the pool's max_age");
			continue;
		}
		if (m->warm == LV_W_BOOTING && (m->started_ms == 0 || now - m->started_ms >= w->warmup_ms)) {
			dom = virDomainLookupByName(m->host->conn, m->name);
			if (dom) {
				park(h, dom, m);
				virDomainFree(dom);
			}
			virResetLastError();
		}
		i++;
	}
	while (h->n_warm > (size_t)w->size) {
		if (!remove_warm(h, worst(h), "the pool is larger than its size"))
			break;
	}
	/* Not while a host is down: its warm members are not in the list,
	 * and the pool would grow past its size when it is back. */
	for (size_t i = 0; i < h->n_hosts; i++)
		if (!h->hosts[i].conn)
			down = true;
	deadline = clock_mono_ms() + TOPUP_BUDGET_MS;
	if (!down && h->n_warm < (size_t)w->size && clock_mono_ms() >= h->warm_refill_at_ms &&
	    lv_eligible_hosts(h, eligible)) {
		/* A warm member boots before it parks: it needs room as a
		 * member does, except a stopped one, which never runs. */
		bool bounded = lv_bounded(h) && want != LV_W_STOPPED;
		struct lv_room rooms[LV_MAX_HOSTS] = { { 0 } };

		if (bounded)
			lv_hosts_room(h, eligible, rooms);
		while (h->n_warm < (size_t)w->size && clock_mono_ms() < deadline) {
			bool fits[LV_MAX_HOSTS];
			struct lv_host *host;
			struct lv_member m, *nv;

			for (size_t i = 0; i < h->n_hosts; i++)
				fits[i] = eligible[i] && (!bounded || rooms[i].fit > 0);
			host = lv_place(h->hosts, h->n_hosts, fits, h->warm, h->n_warm);
			if (!host) {
				if (bounded && !h->warm_capped)
					lv_log(h, AUTOSCALED_LOG_WARNING, "warm pool of %d holds %zu: no host has room for "
					       "another (memory_overcommit, cpu_overcommit)", w->size, h->n_warm);
				h->warm_capped = true;
				break;
			}
			h->warm_capped = false;
			if (bounded)
				rooms[host - h->hosts].fit--;
			nv = realloc(h->warm, (h->n_warm + 1) * sizeof(*nv));
			if (!nv)
				break;
			h->warm = nv;
			if (lv_create_warm(h, host, lv_next_index(h), &m) < 0)
				break;
			h->warm[h->n_warm++] = m;
		}
		h->warm_refill_at_ms = clock_mono_ms() + w->refill_ms;
	}
	lv_warm_publish(h);
}
