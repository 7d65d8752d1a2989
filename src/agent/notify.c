/* Notifications and hooks; see notify.h. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "base/backoff.h"
#include "base/clock.h"
#include "base/file.h"
#include "sources/http.h"
#include "log/log.h"
#include "agent/notify.h"

extern char **environ;

#define MAX_ENV 4096

struct delivery {
	struct delivery *next, **pprev;
	struct notifier *n;
	char *group;
	char *url;
	char *body;
	char sig_header[128];
	char id_header[160];
	int attempt;
	int retries;
	int64_t timeout_ms;
	struct http_call *call;
	sd_event_source *timer;
};

struct proc;
typedef void (*proc_done_fn)(struct proc *p, int status);

/* A child process: a command hook or one victim's drain hook. */
struct proc {
	struct proc *next, **pprev;
	struct notifier *n;
	pid_t pid;
	int pidfd;
	bool timed_out;
	sd_event_source *io;
	sd_event_source *timer;
	proc_done_fn done;
	void *userdata;
	char *what;               /* for messages: "command hook of 'web'" */
	char *victim;             /* drains: the instance id */
};

struct drain {
	struct drain *next, **pprev;
	struct notifier *n;
	char *group;
	char **argv;              /* copied: a reload may free the config */
	size_t argc;
	int64_t deadline_ms;
	char **cand;
	size_t n_cand, next_cand;
	size_t want, running;
	char **ok;
	size_t n_ok;
	char *record;
	drain_done_fn done;
	void *userdata;
	sd_event_source *finish;
};

struct notifier {
	sd_event *event;
	struct http *http;
	int64_t base_backoff_ms;
	struct delivery *deliveries;
	struct proc *procs;
	struct drain *drains;
	size_t pending;
	unsigned long long seq;
};

#define LIST_INSERT(head, x)                      \
	do {                                      \
		(x)->next = (head);               \
		if ((head))                       \
			(head)->pprev = &(x)->next; \
		(head) = (x);                     \
		(x)->pprev = &(head);             \
	} while (0)
#define LIST_REMOVE(x)                            \
	do {                                      \
		if ((x)->next)                    \
			(x)->next->pprev = (x)->pprev; \
		*(x)->pprev = (x)->next;          \
	} while (0)

/* ------------------------------------------------------------ webhook */

int notify_sign(const char *secret, size_t secret_len, const char *body, size_t len, char out[72])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int md_len = 0;

	if (!HMAC(EVP_sha256(), secret, (int)secret_len, (const unsigned char *)body, len, md, &md_len) ||
	    md_len != 32)
		return -EIO;
	memcpy(out, "sha256=", 7);
	for (unsigned i = 0; i < md_len; i++)
		snprintf(out + 7 + 2 * i, 3, "%02x", md[i]);
	return 0;
}

/* Reads the secret, without a trailing newline. Returns its length or a
 * negative errno: as for the cloud drivers' secrets, a file that is not
 * regular (-EINVAL) or that its group or others may read (-EPERM) is
 * refused. */
static int read_secret(const char *path, char *buf, size_t len)
{
	char *s;
	size_t n, read_len;
	int r = file_read_all(path, FILE_PRIVATE, len - 1, &s, &read_len, NULL);

	if (r < 0)
		return r;
	n = read_len;
	while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r'))
		n--;
	memcpy(buf, s, n);
	explicit_bzero(s, read_len);
	free(s);
	return n == 0 ? -ENODATA : (int)n;
}

static void delivery_free(struct delivery *d)
{
	LIST_REMOVE(d);
	d->n->pending--;
	http_cancel(d->call);
	sd_event_source_disable_unref(d->timer);
	free(d->group);
	free(d->url);
	free(d->body);
	free(d);
}

static void delivery_send(struct delivery *d);

static int on_retry(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct delivery *d = userdata;

	(void)s;
	(void)usec;
	d->timer = sd_event_source_disable_unref(d->timer);
	delivery_send(d);
	return 0;
}

static void on_delivered(void *userdata, const struct http_response *r)
{
	struct delivery *d = userdata;
	bool ok = r->status == 0 && r->code >= 200 && r->code < 300;
	bool retryable = r->status < 0 || r->code >= 500 || r->code == 429 || r->code == 408;
	int64_t delay;

	d->call = NULL;
	if (ok) {
		log_group(LOG_DEBUG, d->group, NULL, NULL, "webhook: delivered to '%s' (HTTP %ld)", d->url, r->code);
		delivery_free(d);
		return;
	}
	if (!retryable || d->attempt > d->retries) {
		if (r->status < 0)
			log_group(LOG_WARNING, d->group, NULL, NULL, "webhook: delivery to '%s' failed after %d attempt%s: %s",
				  d->url, d->attempt, d->attempt == 1 ? "" : "s", r->error ? r->error : strerror(-r->status));
		else
			log_group(LOG_WARNING, d->group, NULL, NULL, "webhook: '%s' answered HTTP %ld after %d attempt%s; giving up",
				  d->url, r->code, d->attempt, d->attempt == 1 ? "" : "s");
		delivery_free(d);
		return;
	}
	/* Exponential backoff, capped, but never sooner than Retry-After. */
	delay = backoff_delay_ms(d->n->base_backoff_ms, NOTIFY_MAX_BACKOFF_MS, d->attempt);
	if (r->retry_after_ms > delay)
		delay = r->retry_after_ms < NOTIFY_MAX_BACKOFF_MS ? r->retry_after_ms : NOTIFY_MAX_BACKOFF_MS;
	log_group(LOG_INFO, d->group, NULL, NULL, "webhook: '%s' %s%s; retrying in %.1f s", d->url,
		  r->status < 0 ? "failed: " : "answered ", r->status < 0 ? (r->error ? r->error : "error") : "an error",
		  (double)delay / 1000.0);
	if (sd_event_add_time_relative(d->n->event, &d->timer, CLOCK_MONOTONIC, (uint64_t)delay * 1000, 0, on_retry,
				       d) < 0)
		delivery_free(d);
}

static void delivery_send(struct delivery *d)
{
	const char *headers[5] = {"Content-Type: application/json", "User-Agent: autoscaled/" PACKAGE_VERSION,
				  d->id_header, d->sig_header[0] ? d->sig_header : NULL, NULL};
	struct http_request req = {
		.method = "POST",
		.url = d->url,
		.headers = headers,
		.body = d->body,
		.body_len = strlen(d->body),
		.timeout_ms = d->timeout_ms,
		.max_body = 64 * 1024,
	};
	int r;

	d->attempt++;
	r = http_start(d->n->http, &req, on_delivered, d, &d->call);
	if (r < 0) {
		log_group_errno(LOG_WARNING, d->group, r, "webhook: cannot send to '%s'", d->url);
		delivery_free(d);
	}
}

static int webhook_start(struct notifier *n, const struct notify_conf *c, const char *group, const char *record)
{
	struct delivery *d;
	char secret[NOTIFY_MAX_SECRET], sig[72];
	int r;

	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->n = n;
	d->retries = c->webhook_retries;
	d->timeout_ms = c->webhook_timeout_ms > 0 ? c->webhook_timeout_ms : 10 * MS_PER_SEC;
	d->group = strdup(group);
	d->url = strdup(c->webhook_url);
	d->body = strdup(record);
	n->pending++;
	LIST_INSERT(n->deliveries, d);
	if (!d->group || !d->url || !d->body) {
		delivery_free(d);
		return -ENOMEM;
	}
	snprintf(d->id_header, sizeof(d->id_header), "X-Autoscaled-Delivery: %s-%" PRId64 "-%llu", group, clock_wall_ms(),
		 ++n->seq);
	if (c->webhook_secret_file) {
		r = read_secret(c->webhook_secret_file, secret, sizeof(secret));
		if (r < 0) {
			/* The receiver would reject an unsigned request anyway,
			 * and sending it would hide the problem. */
			log_group(LOG_ERR, group, NULL, NULL, "webhook: cannot read the secret '%s': %s; not sending",
				  c->webhook_secret_file,
				  r == -ENODATA ? "empty"
				  : r == -EFBIG ? "too large"
				  : r == -EPERM ? "its group or others may access it; " FILE_PRIVATE_RULE
						: file_strerror(r));
			delivery_free(d);
			return r;
		}
		r = notify_sign(secret, (size_t)r, d->body, strlen(d->body), sig);
		explicit_bzero(secret, sizeof(secret));
		if (r < 0) {
			delivery_free(d);
			return r;
		}
		snprintf(d->sig_header, sizeof(d->sig_header), "X-Autoscaled-Signature: %s", sig);
	}
	delivery_send(d);
	return 0;
}

/* ----------------------------------------------------------- processes */

static void proc_free(struct proc *p)
{
	LIST_REMOVE(p);
	p->n->pending--;
	sd_event_source_disable_unref(p->io);
	sd_event_source_disable_unref(p->timer);
	if (p->pidfd >= 0)
		close(p->pidfd);
	free(p->what);
	free(p->victim);
	free(p);
}

/* Kills and reaps a child that is no longer wanted. */
static void proc_kill(struct proc *p)
{
	kill(-p->pid, SIGKILL);
	kill(p->pid, SIGKILL);
	waitpid(p->pid, NULL, 0);
	proc_free(p);
}

/* Reports and frees `p` when its child has exited; returns whether it
 * had. */
static bool proc_check_exit(struct proc *p)
{
	int st = 0, status;

	if (waitpid(p->pid, &st, WNOHANG) == 0)
		return false;
	if (p->timed_out)
		status = -ETIMEDOUT;
	else if (WIFEXITED(st))
		status = WEXITSTATUS(st);
	else
		status = 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	p->done(p, status);
	proc_free(p);
	return true;
}

static int on_proc_exit(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	(void)s;
	(void)fd;
	(void)revents;
	proc_check_exit(userdata);
	return 0;
}

/* Without pidfd_open(2) (kernels before 5.3, valgrind) the exit is polled,
 * as the exec source does: the daemon's SIGCHLD handling stays alone. */
#define PROC_WAIT_POLL_USEC 20000

static int on_proc_tick(sd_event_source *s, uint64_t usec, void *userdata)
{
	if (!proc_check_exit(userdata)) {
		sd_event_source_set_time(s, usec + PROC_WAIT_POLL_USEC);
		sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
	}
	return 0;
}

static int on_proc_deadline(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct proc *p = userdata;

	(void)s;
	(void)usec;
	p->timed_out = true;
	/* The hook runs in its own process group: whatever it started goes
	 * too. */
	kill(-p->pid, SIGKILL);
	kill(p->pid, SIGKILL);
	return 0;
}

/* Starts argv (plus `extra` as the last argument when not NULL) with
 * `input` on stdin, AUTOSCALED_GROUP, AUTOSCALED_EVENT and, for a victim,
 * AUTOSCALED_INSTANCE in the environment, killed after timeout_ms. */
static int proc_start(struct notifier *n, char *const *argv, size_t argc, const char *extra, const char *group,
		      const char *event, const char *input, int64_t timeout_ms, const char *what, proc_done_fn done,
		      void *userdata, struct proc **ret)
{
	char **args = calloc(argc + 2, sizeof(*args));
	char **envp = calloc(MAX_ENV + 4, sizeof(*envp));
	char e_group[512], e_event[64], e_inst[512];
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none;
	struct proc *p;
	size_t ne = 0, len = strlen(input);
	int memfd = -1, r;

	if (!args || !envp) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < argc; i++)
		args[i] = argv[i];
	args[argc] = (char *)extra;
	args[argc + 1] = NULL;
	for (char **e = environ; *e && ne < MAX_ENV; e++)
		if (strncmp(*e, "AUTOSCALED_", 11) != 0 && strncmp(*e, "NOTIFY_SOCKET=", 14) != 0 &&
		    strncmp(*e, "WATCHDOG_", 9) != 0)
			envp[ne++] = *e;
	snprintf(e_group, sizeof(e_group), "AUTOSCALED_GROUP=%s", group);
	snprintf(e_event, sizeof(e_event), "AUTOSCALED_EVENT=%s", event);
	envp[ne++] = e_group;
	envp[ne++] = e_event;
	if (extra) {
		snprintf(e_inst, sizeof(e_inst), "AUTOSCALED_INSTANCE=%s", extra);
		envp[ne++] = e_inst;
	}
	envp[ne] = NULL;

	/* The record goes through a memory file: the child reads it at its
	 * own pace and the loop never blocks on a pipe. */
	memfd = memfd_create("autoscaled-record", MFD_CLOEXEC);
	if (memfd < 0) {
		r = -errno;
		goto out;
	}
	if (write(memfd, input, len) != (ssize_t)len || lseek(memfd, 0, SEEK_SET) < 0) {
		r = -EIO;
		goto out;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		r = -ENOMEM;
		goto out;
	}
	p->n = n;
	p->pidfd = -1;
	p->done = done;
	p->userdata = userdata;
	p->what = strdup(what);
	p->victim = extra ? strdup(extra) : NULL;
	n->pending++;
	LIST_INSERT(n->procs, p);

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, memfd, STDIN_FILENO);
	posix_spawnattr_init(&attr);
	posix_spawnattr_setpgroup(&attr, 0);
	/* The agent blocks the signals it handles; the hook gets none blocked. */
	sigemptyset(&none);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
	r = -posix_spawn(&p->pid, args[0], &fa, &attr, args, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (r < 0) {
		proc_free(p);
		goto out;
	}
	p->pidfd = (int)syscall(SYS_pidfd_open, p->pid, 0);
	if (p->pidfd >= 0)
		r = sd_event_add_io(n->event, &p->io, p->pidfd, EPOLLIN, on_proc_exit, p);
	else if (errno == ENOSYS)
		r = sd_event_add_time_relative(n->event, &p->io, CLOCK_MONOTONIC, PROC_WAIT_POLL_USEC, 1000,
					       on_proc_tick, p);
	else
		r = -errno;
	if (r < 0)
		goto fail;
	r = sd_event_add_time_relative(n->event, &p->timer, CLOCK_MONOTONIC, (uint64_t)timeout_ms * 1000, 0,
				       on_proc_deadline, p);
	if (r < 0)
		goto fail;
	if (ret)
		*ret = p;
	r = 0;
	goto out;
fail:
	proc_kill(p);
out:
	if (memfd >= 0)
		close(memfd);
	free(args);
	free(envp);
	return r;
}

static void on_command_done(struct proc *p, int status)
{
	if (status == 0)
		log_debug("notify: %s finished", p->what);
	else if (status == -ETIMEDOUT)
		log_warnx("notify: %s killed at its timeout", p->what);
	else
		log_warnx("notify: %s exited with status %d", p->what, status);
}

int notify_action(struct notifier *n, const struct notify_conf *c, const char *group, const char *record)
{
	char what[512];
	int r = 0, k;

	if (n->pending >= NOTIFY_MAX_PENDING) {
		log_group(LOG_WARNING, group, NULL, NULL, "notify: %zu notifications already in flight; dropping this one",
			  n->pending);
		return -EBUSY;
	}
	if (c->webhook_url)
		r = webhook_start(n, c, group, record);
	if (c->command && c->n_command > 0) {
		snprintf(what, sizeof(what), "command hook '%s' of '%s'", c->command[0], group);
		k = proc_start(n, c->command, c->n_command, NULL, group, "action", record,
			       c->command_timeout_ms > 0 ? c->command_timeout_ms : 30 * MS_PER_SEC, what,
			       on_command_done, NULL, NULL);
		if (k < 0) {
			log_group_errno(LOG_WARNING, group, k, "notify: cannot run '%s'", c->command[0]);
			r = r < 0 ? r : k;
		}
	}
	return r;
}

/* -------------------------------------------------------------- drains */

static void strv_free(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

static void drain_free(struct drain *d)
{
	LIST_REMOVE(d);
	d->n->pending--;
	sd_event_source_disable_unref(d->finish);
	free(d->group);
	strv_free(d->argv, d->argc);
	strv_free(d->cand, d->n_cand);
	strv_free(d->ok, d->n_ok);
	free(d->record);
	free(d);
}

static int on_drain_finish(sd_event_source *s, void *userdata)
{
	struct drain *d = userdata;

	(void)s;
	d->done(d->userdata, (const char *const *)d->ok, d->n_ok);
	drain_free(d);
	return 0;
}

static void drain_proc_done(struct proc *p, int status);

/* Starts hooks until `want` are done or running, or candidates run out;
 * finishes the drain when nothing is left to wait for. */
static void drain_step(struct drain *d)
{
	char what[512];

	while (d->n_ok + d->running < d->want && d->next_cand < d->n_cand) {
		const char *victim = d->cand[d->next_cand++];
		int r;

		snprintf(what, sizeof(what), "pre-scale-in hook of '%s' for '%s'", d->group, victim);
		r = proc_start(d->n, d->argv, d->argc, victim, d->group, "pre_scale_in", d->record, d->deadline_ms, what,
			       drain_proc_done, d, NULL);
		if (r < 0) {
			log_group_errno(LOG_WARNING, d->group, r, "drain: keeping '%s': cannot run '%s' for it", victim,
					d->argv[0]);
			continue;
		}
		d->running++;
	}
	if (d->running == 0 && !d->finish) {
		if (d->n_ok < d->want)
			log_group(LOG_WARNING, d->group, NULL, NULL, "drain: only %zu of %zu instance%s drained; removing %s",
				  d->n_ok, d->want, d->want == 1 ? "" : "s", d->n_ok ? "those" : "none (hold)");
		if (sd_event_add_defer(d->n->event, &d->finish, on_drain_finish, d) < 0) {
			/* Without the loop's help the caller is told now. */
			d->done(d->userdata, (const char *const *)d->ok, d->n_ok);
			drain_free(d);
		}
	}
}

static void drain_proc_done(struct proc *p, int status)
{
	struct drain *d = p->userdata;

	d->running--;
	if (status == 0) {
		char **v = realloc(d->ok, (d->n_ok + 1) * sizeof(*v));
		char *id = strdup(p->victim);

		if (v && id) {
			d->ok = v;
			d->ok[d->n_ok++] = id;
			log_group(LOG_INFO, d->group, NULL, NULL, "drain: '%s' drained", p->victim);
		} else {
			free(id);
			if (v)
				d->ok = v;
		}
	} else {
		log_group(LOG_WARNING, d->group, NULL, NULL, "drain: hook for '%s' %s; keeping it", p->victim,
			  status == -ETIMEDOUT ? "missed its deadline" : "failed");
		if (status > 0)
			log_group(LOG_DEBUG, d->group, NULL, NULL, "drain: hook for '%s' exited with %d", p->victim, status);
	}
	drain_step(d);
}

static char **strv_copy(const char *const *v, size_t n)
{
	char **c = calloc(n + 1, sizeof(*c));

	for (size_t i = 0; c && i < n; i++) {
		c[i] = strdup(v[i]);
		if (!c[i]) {
			strv_free(c, i);
			return NULL;
		}
	}
	return c;
}

int drain_start(struct notifier *n, const struct notify_conf *c, const char *group, const char *const *candidates,
		size_t n_candidates, size_t want, const char *record, drain_done_fn done, void *userdata,
		struct drain **ret)
{
	struct drain *d;

	if (!c->pre_scale_in || c->n_pre_scale_in == 0)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->n = n;
	n->pending++;
	LIST_INSERT(n->drains, d);
	d->group = strdup(group);
	d->argv = strv_copy((const char *const *)c->pre_scale_in, c->n_pre_scale_in);
	d->argc = c->n_pre_scale_in;
	d->cand = strv_copy(candidates, n_candidates);
	d->n_cand = n_candidates;
	d->record = strdup(record);
	if (!d->group || !d->argv || !d->cand || !d->record) {
		if (!d->argv)
			d->argc = 0;
		if (!d->cand)
			d->n_cand = 0;
		drain_free(d);
		return -ENOMEM;
	}
	d->deadline_ms = c->pre_scale_in_deadline_ms > 0 ? c->pre_scale_in_deadline_ms : 300 * MS_PER_SEC;
	d->want = want;
	d->done = done;
	d->userdata = userdata;
	drain_step(d);
	if (ret)
		*ret = d;
	return 0;
}

void drain_cancel(struct drain *d)
{
	if (!d)
		return;
	for (struct proc *p = d->n->procs, *nx; p; p = nx) {
		nx = p->next;
		if (p->done == drain_proc_done && p->userdata == d)
			proc_kill(p);
	}
	drain_free(d);
}

/* ------------------------------------------------------------ lifetime */

int notifier_new(sd_event *event, struct http *http, int64_t base_backoff_ms, struct notifier **ret)
{
	struct notifier *n = calloc(1, sizeof(*n));

	if (!n)
		return -ENOMEM;
	n->event = event;
	n->http = http;
	n->base_backoff_ms = base_backoff_ms > 0 ? base_backoff_ms : MS_PER_SEC;
	*ret = n;
	return 0;
}

size_t notifier_pending(const struct notifier *n)
{
	return n->pending;
}

void notifier_free(struct notifier *n)
{
	if (!n)
		return;
	while (n->drains)
		drain_cancel(n->drains);
	while (n->procs)
		proc_kill(n->procs);
	while (n->deliveries)
		delivery_free(n->deliveries);
	free(n);
}
