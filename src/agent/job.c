/* Driver calls of the group runtime; see group-private.h.
 *
 * Driver calls go through jobs: a job runs one operation on a worker thread
 * of its driver's pool (workers.h) and posts itself back to the loop
 * on a list shared by all groups.
 * A group has at most one job at a time, which is the driver ABI's "one call
 * at a time per handle"; a reload hands the job of the replaced runtime to
 * the new one, so that this holds for the group across reloads, whatever
 * handles it goes through. The worker thread owns the job until it puts
 * it on the list; from then on only the loop's thread touches it. */
#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <syslog.h>
#include <unistd.h>

#include "agent/group-private.h"
#include "agent/workers.h"
#include "cluster/cluster.h"
#include "log/log.h"

/* How many calls of one driver run at once, unless agent.driver_concurrency
 * says otherwise. The libvirt driver's calls compute more than they wait
 * (parsing XML under libxml2's global lock, on a local hypervisor): more
 * threads than CPUs only queue on that lock and on the CPUs, so the pool
 * has one per CPU (at least 2, so that one slow call does not hold up
 * every other). The REST drivers' calls wait on the network almost all
 * the time: their pool is sized for waiting, not computing, so that one
 * observe cycle of 200 groups takes one round of calls and 2,000 take
 * eight. Measured with bench/cloud-observe.sh (BENCH_POOL) at 100 ms added
 * latency, MIGs / scale sets: 200 groups in 307 / 349 ms (a thread per
 * group: 369 / 387 ms; a pool of 64: 816 / 823 ms); 2,000 groups in 1.8 /
 * 2.2 s (a pool of 128: 3.4 s; a thread per group, or a pool of 1,024,
 * overran the emulator's backlog, timed out and retried: 69 to 91 s). So
 * the bound helps the REST drivers too: a burst of a thousand connections
 * at once is what an API throttles. Asynchronous calls on curl's multi
 * interface would save the threads, not the time, and would take a second,
 * asynchronous driver ABI. A driver the daemon does not know gets the REST
 * drivers' limit, as it may wait as they do: the pool wakes fewer threads
 * than calls when its calls turn out quick (workers.c). */
#define JOB_WAITING_LIMIT 256

/* Observations let into a driver's pool at once, for each of its threads
 * (at least JOB_ADMIT_MIN): queued, running, or finished and not yet taken
 * by the loop. A tick starts every group's observation together, and a
 * finished one holds its members until the loop takes it. At 10,000
 * groups on one driver, all of them went in at once: 10,000 jobs and, as
 * they finished faster than the loop took them, 10,000 observations beside
 * the ones the groups still held. Letting them in a few at a time took the
 * soak's daemon from 118 to 109 MB at the same CPU (bench/soak, two runs
 * side by side). Four a thread keep every thread fed: the loop lets the
 * next groups in as it takes the finished ones. */
#define JOB_ADMIT_PER_THREAD 4
#define JOB_ADMIT_MIN 16

/* One pool per driver (by name), made on the first call, kept for the
 * process: a slow driver fills its own queue, not another's. On the loop's
 * thread. */
struct driver_pool {
	char *driver;
	struct workers *w;
	unsigned admitted;         /* observations let in (JOB_ADMIT_PER_THREAD) */
	/* Groups waiting to observe, oldest first (job_admit()). */
	struct group_rt *wait_head, **wait_tail;
	size_t n_waiting;
	struct driver_pool *next;
};
static struct driver_pool *pools;

/* Finished jobs on their way back to the loop, one list per process, in
 * the order they finished. A worker that puts a job on the empty list
 * writes the eventfd the loop watches; the loop reads the eventfd and
 * then takes the whole list. Posting never blocks a worker (a pipe would,
 * once a burst of thousands of calls filled it while the loop was busy),
 * and a burst costs the loop one read, not one per job. */
static pthread_mutex_t done_lock = PTHREAD_MUTEX_INITIALIZER;
static struct job *done_head, **done_tail = &done_head;
static int done_fd = -1;
static sd_event_source *job_source;
/* The group runtime's completion, called for a job whose group lives. */
static job_done_fn job_done;
/* The group runtime's start of an observation whose turn has come, and
 * the group it is called for (job_admit() lets it in). */
static job_admitted_fn job_admitted;
static job_ended_fn job_ended;
static struct group_rt *admitting;
/* Jobs still running for groups that are gone, on the loop's thread. */
static struct job *orphans;

void job_free(struct job *j)
{
	if (!j)
		return;
	free(j->instances);
	free(j->names);
	for (size_t i = 0; i < j->n_samples; i++)
		free(j->samples[i].id);
	free(j->samples);
	for (size_t i = 0; i < j->n_ids; i++)
		free(j->ids[i]);
	free(j->ids);
	driver_options_free(&j->opts);
	free(j->orphan_of);
	free(j->driver_msg);
	free(j->fence_group);
	free(j);
}

/* Takes `j` off the orphans' list, where it may or may not be. */
static void orphan_unlink(struct job *j)
{
	for (struct job **p = &orphans; *p; p = &(*p)->next_orphan)
		if (*p == j) {
			*p = j->next_orphan;
			break;
		}
	j->next_orphan = NULL;
	free(j->orphan_of);
	j->orphan_of = NULL;
}

void job_orphan(struct job *j, const char *group)
{
	/* Without the name the job is only not waited for. */
	j->orphan_of = strdup(group);
	if (!j->orphan_of)
		return;
	j->next_orphan = orphans;
	orphans = j;
}

bool job_orphan_running(const char *group)
{
	for (struct job *j = orphans; j; j = j->next_orphan)
		if (strcmp(j->orphan_of, group) == 0)
			return true;
	return false;
}

struct job *job_claim_orphan(const char *group)
{
	for (struct job *j = orphans; j; j = j->next_orphan)
		if (strcmp(j->orphan_of, group) == 0) {
			orphan_unlink(j);
			return j;
		}
	return NULL;
}

/* Appends S to the job's names; its offset + 1, which stands in for the
 * pointer until job_pack_instances(), or 0 on ENOMEM. */
static uintptr_t job_add_name(struct job *j, const char *s)
{
	size_t len = strlen(s) + 1, at = j->names_len;

	if (j->names_cap - j->names_len < len) {
		size_t cap = j->names_cap ? j->names_cap * 2 : 64;
		char *p;

		while (cap - j->names_len < len)
			cap *= 2;
		p = realloc(j->names, cap);
		if (!p)
			return 0;
		j->names = p;
		j->names_cap = cap;
	}
	memcpy(j->names + at, s, len);
	j->names_len += len;
	return at + 1;
}

static int job_collect_instance(void *ctx, const struct autoscaled_instance *in)
{
	struct job *j = ctx;
	struct instance_obs *o;
	uintptr_t id, location = 0;

	if (j->n_instances == j->cap_instances) {
		size_t cap = j->cap_instances ? j->cap_instances * 2 : 8;
		void *p = realloc(j->instances, cap * sizeof(*j->instances));

		if (!p)
			return -ENOMEM;
		j->instances = p;
		j->cap_instances = cap;
	}
	id = job_add_name(j, in->id ? in->id : "");
	if (!id)
		return -ENOMEM;
	/* A group's members share a few places (a zone, a host, a pool): one
	 * the member before named is kept once. */
	if (in->location && j->last_location && strcmp(j->names + j->last_location - 1, in->location) == 0)
		location = j->last_location;
	else if (in->location && !(location = j->last_location = job_add_name(j, in->location)))
		return -ENOMEM;
	o = &j->instances[j->n_instances];
	*o = (struct instance_obs){
		.id = (const char *)id,
		.state = in->state == AUTOSCALED_INSTANCE_RUNNING ? INSTANCE_RUNNING
			 : in->state == AUTOSCALED_INSTANCE_STOPPING ? INSTANCE_STOPPING
								       : INSTANCE_PROVISIONING,
		.created_ms = in->created_ms,
		.running_since_ms = in->running_since_ms,
		.ready = in->ready,
		.location = (const char *)location,
	};
	j->n_instances++;
	return 0;
}

/* The observation's members and their names in one block of their size:
 * the group keeps it until its next observation, and frees it whole. The
 * names, collected one after another, take the place of their offsets. A
 * block that cannot be had fails the observation. */
static void job_pack_instances(struct job *j)
{
	size_t n = j->n_instances;
	struct instance_obs *v = NULL;
	char *names;

	/* A failed observation's members are never read. */
	if (j->r < 0)
		n = 0;
	if (n > 0 && (v = malloc(n * sizeof(*v) + j->names_len))) {
		names = (char *)(v + n);
		memcpy(v, j->instances, n * sizeof(*v));
		memcpy(names, j->names, j->names_len);
		for (size_t i = 0; i < n; i++) {
			v[i].id = names + ((uintptr_t)v[i].id - 1);
			if (v[i].location)
				v[i].location = names + ((uintptr_t)v[i].location - 1);
		}
	} else if (n > 0 && j->r == 0) {
		j->r = -ENOMEM;
	}
	free(j->instances);
	free(j->names);
	j->names = NULL;
	j->names_len = j->names_cap = 0;
	j->last_location = 0;
	j->instances = v;
	j->n_instances = j->cap_instances = v ? n : 0;
}

static int job_count_instance(void *ctx, const struct autoscaled_instance *in)
{
	struct job *j = ctx;

	(void)in;
	j->n_done++;
	return 0;
}

/* A value of a source the driver did not declare is dropped: no signal
 * can name it. */
static int job_collect_sample(void *ctx, const char *source, const char *id, double value)
{
	struct job *j = ctx;
	int k = driver_source_index(j->drv, source);

	if (k < 0 || !id)
		return 0;
	if (j->n_samples == j->cap_samples) {
		size_t cap = j->cap_samples ? j->cap_samples * 2 : 16;
		void *p = realloc(j->samples, cap * sizeof(*j->samples));

		if (!p)
			return -ENOMEM;
		j->samples = p;
		j->cap_samples = cap;
	}
	j->samples[j->n_samples].id = strdup(id);
	if (!j->samples[j->n_samples].id)
		return -ENOMEM;
	j->samples[j->n_samples].source = k;
	j->samples[j->n_samples++].value = value;
	return 0;
}

/* Cluster mode: right before a call that changes the target, the intended
 * action goes to etcd in a transaction fenced by the group's owner token
 * (cluster_fence()). When etcd refuses it, or cannot be asked, the call is
 * not made: the job fails with the reason, and the group holds. Returns
 * whether the call may go ahead. */
static bool job_fence(struct job *j, char *msg, size_t len)
{
	char why[JOB_MSG_MAX];
	int to = j->kind == JOB_SCALE_OUT ? j->count : j->from - j->count;
	int r;

	if (!j->cluster)
		return true;
	r = cluster_fence(j->cluster, j->fence_group, job_kind_operation(j->kind), to, j->from, why, sizeof(why));
	if (r == 0)
		return true;
	j->r = r;
	snprintf(msg, len, "%s", why);
	log_group(LOG_WARNING, j->fence_group, NULL, NULL, "%s", why);
	return false;
}

static void job_fence_end(struct job *j)
{
	if (j->cluster)
		cluster_fence_end(j->cluster, j->fence_group);
}

static void job_run(struct workers_task *t)
{
	struct job *j = (struct job *)((char *)t - offsetof(struct job, task));
	int64_t cpu = j->measure_cpu ? clock_thread_cpu_ns() : 0;
	bool first;

	/* What the driver says about a failure reaches the decision record
	 * through the job, which this thread owns until it is posted back:
	 * captured here, kept in the job only when there is something. */
	static __thread char msg[JOB_MSG_MAX];

	driver_capture_begin(msg, sizeof(msg), j->kind == JOB_OBSERVE ? &j->host_room : NULL);
	/* The call's own time, without its wait in the queue. */
	j->called_ms = clock_mono_ms();
	switch (j->kind) {
	case JOB_OBSERVE:
		j->r = j->drv->observe(j->handle, job_collect_instance, j->want_samples ? job_collect_sample : NULL, j,
				       &j->obs);
		job_pack_instances(j);
		break;
	case JOB_SCALE_OUT:
		if (!job_fence(j, msg, sizeof(msg)))
			break;
		j->r = j->drv->set_capacity(j->handle, j->count, job_count_instance, j);
		job_fence_end(j);
		break;
	case JOB_SCALE_IN:
		if (!job_fence(j, msg, sizeof(msg)))
			break;
		j->r = j->drv->remove_instances(j->handle, j->count, (const char *const *)j->ids, j->n_ids,
						job_count_instance, j);
		job_fence_end(j);
		break;
	case JOB_OPEN:
		j->r = j->drv->open(j->host, j->opts.v, j->opts.n, &j->handle);
		break;
	}
	driver_capture_end();
	/* Without memory for it the record shows the errno's words alone. */
	if (msg[0])
		j->driver_msg = strdup(msg);
	/* The driver's share of the daemon's CPU, user and system, apart
	 * from the daemon's own (autoscaled_driver_call_cpu_seconds_total). */
	j->cpu_ns = j->measure_cpu ? clock_thread_cpu_ns() - cpu : 0;
	pthread_mutex_lock(&done_lock);
	first = !done_head;
	j->done_next = NULL;
	*done_tail = j;
	done_tail = &j->done_next;
	pthread_mutex_unlock(&done_lock);
	if (first)
		eventfd_write(done_fd, 1);
}

const char *job_kind_operation(enum job_kind k)
{
	switch (k) {
	case JOB_OBSERVE: return "observe";
	case JOB_SCALE_OUT: return direction_action(DIR_OUT);
	case JOB_SCALE_IN: return direction_action(DIR_IN);
	case JOB_OPEN: return "open";
	}
	return "?";
}

const char *job_kind_noun(enum job_kind k)
{
	switch (k) {
	case JOB_OBSERVE: return "observation";
	case JOB_SCALE_OUT: return direction_noun(DIR_OUT);
	case JOB_SCALE_IN: return direction_noun(DIR_IN);
	case JOB_OPEN: return "driver open";
	}
	return "?";
}

int job_default_limit(const char *driver)
{
	long cpus;

	if (strcmp(driver, "libvirt") != 0)
		return JOB_WAITING_LIMIT;
	cpus = sysconf(_SC_NPROCESSORS_ONLN);
	return cpus < 2 ? 2 : cpus > JOB_WAITING_LIMIT ? JOB_WAITING_LIMIT : (int)cpus;
}

int job_driver_limit(const struct agent_conf *a, const char *driver)
{
	for (size_t i = 0; a && i < a->n_driver_concurrency; i++)
		if (strcmp(a->driver_concurrency[i].driver, driver) == 0)
			return a->driver_concurrency[i].limit;
	return job_default_limit(driver);
}

/* The pool of `driver`, made on its first call with `limit`; a later call
 * sets the limit, which a reload may have changed. */
static struct driver_pool *driver_pool(const char *driver, int limit)
{
	struct driver_pool *p;

	for (p = pools; p; p = p->next)
		if (strcmp(p->driver, driver) == 0) {
			if (workers_limit(p->w) != limit)
				workers_set_limit(p->w, limit);
			return p;
		}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->driver = strdup(driver);
	if (!p->driver || workers_new(driver, limit, JOB_WORKER_IDLE_MS, &p->w) < 0) {
		free(p->driver);
		free(p);
		return NULL;
	}
	p->wait_tail = &p->wait_head;
	p->next = pools;
	pools = p;
	return p;
}

static unsigned admit_limit(const struct driver_pool *p)
{
	int n = workers_limit(p->w);

	return n > JOB_ADMIT_MIN / JOB_ADMIT_PER_THREAD ? (unsigned)n * JOB_ADMIT_PER_THREAD : JOB_ADMIT_MIN;
}

bool job_admit(struct group_rt *g)
{
	struct driver_pool *p;

	if (g == admitting)
		return true;
	if (g->admit_pprev)
		return false;
	p = driver_pool(g->gc->driver, job_driver_limit(g->ctx->agent_conf, g->gc->driver));
	/* Without a pool, job_start() says why the call cannot start. */
	if (!p || (!p->wait_head && p->admitted < admit_limit(p)))
		return true;
	g->admit_next = NULL;
	g->admit_pprev = p->wait_tail;
	g->admit_pool = p;
	*p->wait_tail = g;
	p->wait_tail = &g->admit_next;
	p->n_waiting++;
	return false;
}

void job_unadmit(struct group_rt *g)
{
	struct driver_pool *p = g->admit_pool;

	if (!g->admit_pprev)
		return;
	*g->admit_pprev = g->admit_next;
	if (g->admit_next)
		g->admit_next->admit_pprev = g->admit_pprev;
	else
		p->wait_tail = g->admit_pprev;
	p->n_waiting--;
	g->admit_next = NULL;
	g->admit_pprev = NULL;
	g->admit_pool = NULL;
}

/* Lets waiting groups in while the driver has room; a group that starts
 * no observation (it is busy or stopped by now) takes none. */
static void admit_waiting(struct driver_pool *p)
{
	while (p->wait_head && p->admitted < admit_limit(p)) {
		struct group_rt *g = p->wait_head;

		job_unadmit(g);
		admitting = g;
		job_admitted(g);
		admitting = NULL;
	}
}

/* An observation let in is back on the loop, or was never made. */
static void job_release(struct job *j)
{
	if (j->admitted_by) {
		j->admitted_by->admitted--;
		j->admitted_by = NULL;
	}
}

void job_admit_stats(const char *driver, unsigned *admitted, size_t *waiting)
{
	*admitted = 0;
	*waiting = 0;
	for (struct driver_pool *p = pools; p; p = p->next)
		if (strcmp(p->driver, driver) == 0) {
			*admitted = p->admitted;
			*waiting = p->n_waiting;
		}
}

int job_start(struct group_rt *g, struct job *j)
{
	struct driver_pool *p;
	int r;

	j->g = g;
	j->drv = g->drv;
	j->handle = g->handle;
	j->started_ms = clock_mono_ms();
	/* Two reads of the thread's CPU clock a call, a system call each
	 * (clock_thread_cpu_ns()): only for a daemon whose metrics someone
	 * can scrape. */
	j->measure_cpu = g->ctx->agent_conf->metrics_listen != NULL;
	j->cluster = g->ctx->cluster;
	if (j->cluster) {
		j->fence_group = strdup(g->gc->name);
		if (!j->fence_group)
			return log_group_errno(LOG_ERR, g->gc->name, -ENOMEM, "cannot start a driver call");
	}
	j->task.run = job_run;
	p = driver_pool(g->gc->driver, job_driver_limit(g->ctx->agent_conf, g->gc->driver));
	j->pool = p ? p->w : NULL;
	r = j->pool ? workers_submit(j->pool, &j->task) : -ENOMEM;
	if (r < 0) {
		j->pool = NULL;
		return log_group_errno(LOG_ERR, g->gc->name, r, "cannot start a driver call");
	}
	if (j->kind == JOB_OBSERVE) {
		j->admitted_by = p;
		p->admitted++;
	}
	g->job = j;
	return 0;
}

bool job_cancel(struct job *j)
{
	if (!j->pool || !workers_cancel(j->pool, &j->task))
		return false;
	/* The room it took goes to the next group at the loop's next
	 * turn: not from here, where a group is being freed. */
	if (j->admitted_by) {
		job_release(j);
		eventfd_write(done_fd, 1);
	}
	/* As for an orphan's call that has ended (on_jobs_done). */
	if (j->close_when_done) {
		if (j->handle)
			j->drv->close(j->handle);
		driver_host_free(j->host);
	}
	job_free(j);
	return true;
}

static int on_jobs_done(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct job *next;
	eventfd_t n;

	(void)s;
	(void)revents;
	(void)userdata;
	eventfd_read(fd, &n);
	pthread_mutex_lock(&done_lock);
	next = done_head;
	done_head = NULL;
	done_tail = &done_head;
	pthread_mutex_unlock(&done_lock);
	while (next) {
		struct job *j = next;
		struct group_rt *g = j->g;

		next = j->done_next;

		/* The handle of a group that is gone is closed as soon as its
		 * last call has ended; a group that lives on closes the handle
		 * it no longer uses itself (job_done). */
		if (!g) {
			orphan_unlink(j);
			if (j->close_when_done) {
				if (j->handle)
					j->drv->close(j->handle);
				driver_host_free(j->host);
			}
		}
		job_release(j);
		if (g) {
			g->job = NULL;
			job_done(j);
		}
		job_free(j);
	}
	job_ended();
	for (struct driver_pool *p = pools; p; p = p->next)
		admit_waiting(p);
	return 0;
}

int job_done_init(sd_event *event, job_done_fn done, job_admitted_fn admitted, job_ended_fn ended)
{
	job_done = done;
	job_admitted = admitted;
	job_ended = ended;
	if (done_fd >= 0)
		return 0;
	done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (done_fd < 0)
		return -errno;
	return sd_event_add_io(event, &job_source, done_fd, EPOLLIN, on_jobs_done, NULL);
}
