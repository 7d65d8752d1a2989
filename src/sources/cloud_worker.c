/* Worker threads of the cloud monitoring sources (cloud_worker.h). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "log/log.h"
#include "sources/cloud_worker.h"

struct cloud_job {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int refs;
	bool quit;
	bool want;
	unsigned gen;        /* the poll asked for */
	unsigned done_gen;   /* the poll the result belongs to */
	int efd;
	int status;
	double value;
	char why[512];
	char who[32];
	struct rest_client http;
	void *state;
	cloud_fetch_fn fetch;
	cloud_state_free_fn free_state;
};

/* The cloud code's messages go to the daemon's log; the sources keep no
 * metrics of the REST client. */
static void sink_log(const struct cloud_sink *sink, enum autoscaled_log_level level, const char *msg)
{
	(void)sink;
	log_group(log_driver_priority(level), NULL, NULL, NULL, "%s", msg);
}

const struct cloud_sink cloud_source_sink = {
	.log = sink_log,
};

static void job_unref(struct cloud_job *j)
{
	bool last;

	pthread_mutex_lock(&j->lock);
	last = --j->refs == 0;
	pthread_mutex_unlock(&j->lock);
	if (!last)
		return;
	rest_client_fini(&j->http);
	if (j->free_state)
		j->free_state(j->state);
	close(j->efd);
	pthread_mutex_destroy(&j->lock);
	pthread_cond_destroy(&j->cond);
	free(j);
}

static void *worker(void *arg)
{
	struct cloud_job *j = arg;

	pthread_mutex_lock(&j->lock);
	for (;;) {
		unsigned gen;
		double value = 0;
		char why[512] = "";
		int status;

		while (!j->quit && !j->want)
			pthread_cond_wait(&j->cond, &j->lock);
		if (j->quit)
			break;
		j->want = false;
		gen = j->gen;
		pthread_mutex_unlock(&j->lock);
		status = j->fetch(j->state, &j->http, &value, why, sizeof(why));
		pthread_mutex_lock(&j->lock);
		j->status = status;
		j->value = value;
		snprintf(j->why, sizeof(j->why), "%s", why);
		j->done_gen = gen;
		if (!j->quit) {
			uint64_t one = 1;

			if (write(j->efd, &one, sizeof(one)) < 0)
				log_warn("%s: cannot wake the event loop", j->who);
		}
	}
	pthread_mutex_unlock(&j->lock);
	job_unref(j);
	return NULL;
}

static int on_result(sd_event_source *es, int fd, uint32_t revents, void *userdata)
{
	struct source *s = userdata;
	struct cloud_source *p = source_priv(s);
	struct cloud_job *j = p->job;
	uint64_t n;
	int status;
	double value;
	char why[512];
	bool mine;

	if (read(fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		return 0;
	pthread_mutex_lock(&j->lock);
	mine = p->timer && j->done_gen == j->gen;
	status = j->status;
	value = j->value;
	snprintf(why, sizeof(why), "%s", j->why);
	pthread_mutex_unlock(&j->lock);
	if (!mine)
		return 0;
	p->timer = sd_event_source_disable_unref(p->timer);
	if (status < 0)
		source_complete(s, status, 0, "%s", why);
	else
		source_complete(s, 0, value, NULL);
	return 0;
}

static int on_timeout(sd_event_source *es, uint64_t usec, void *userdata)
{
	struct source *s = userdata;
	struct cloud_source *p = source_priv(s);

	p->timer = sd_event_source_disable_unref(p->timer);
	/* A later result of this poll must not end another one. */
	pthread_mutex_lock(&p->job->lock);
	p->job->gen++;
	pthread_mutex_unlock(&p->job->lock);
	source_complete(s, -ETIMEDOUT, 0, "no reply within %lld ms", (long long)source_timeout_ms(s));
	return 0;
}

int cloud_source_get(struct rest_client *http, const char *url, const char *bearer, const char *what,
		     struct rest_reply *r, char *why, size_t whylen)
{
	struct rest_request req = { .method = "GET", .url = url, .bearer = bearer };
	char msg[256];
	int rc = rest_call(http, &req, r);

	if (rc < 0) {
		snprintf(why, whylen, "%s: %s", what, strerror(-rc));
		return rc;
	}
	if (r->status == 200)
		return 0;
	snprintf(why, whylen, "%s: HTTP %ld: %s", what, r->status, rest_error_message(r, msg, sizeof(msg)));
	rc = rest_status_errno(r->status);
	rest_reply_clear(r);
	return rc;
}

int cloud_source_start(struct source *s, const char *who, void *state, cloud_fetch_fn fetch,
		       cloud_state_free_fn free_state, char *err, size_t errlen)
{
	struct cloud_source *p = source_priv(s);
	struct cloud_job *j = calloc(1, sizeof(*j));
	pthread_t tid;
	int64_t timeout = source_timeout_ms(s);
	int r;

	if (!j) {
		free_state(state);
		return -ENOMEM;
	}
	pthread_mutex_init(&j->lock, NULL);
	pthread_cond_init(&j->cond, NULL);
	j->refs = 1;
	j->state = state;
	j->fetch = fetch;
	j->free_state = free_state;
	snprintf(j->who, sizeof(j->who), "%s", who);
	j->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	r = j->efd < 0 ? -errno : rest_client_init(&j->http, &cloud_source_sink, who,
						   strcmp(who, "azure_monitor") == 0 ? REST_POLICY_AZURE : REST_POLICY_GCE);
	if (r < 0) {
		snprintf(err, errlen, "%s: cannot set up: %s", who, strerror(-r));
		job_unref(j);
		return r;
	}
	/* Two tries within the poll's timeout; the loop's timer bounds it all. */
	j->http.attempts = 2;
	j->http.timeout_ms = timeout / 2 > 100 ? timeout / 2 : 100;
	j->http.backoff_base_ms = 100;
	j->http.backoff_max_ms = timeout / 4 > 100 ? timeout / 4 : 100;
	r = sd_event_add_io(source_event(s), &p->io, j->efd, EPOLLIN, on_result, s);
	if (r >= 0) {
		j->refs = 2;
		r = -pthread_create(&tid, NULL, worker, j);
		if (r == 0)
			pthread_detach(tid);
		else
			j->refs = 1;
	}
	if (r < 0) {
		snprintf(err, errlen, "%s: cannot start its worker: %s", who, strerror(-r));
		p->io = sd_event_source_disable_unref(p->io);
		job_unref(j);
		return r;
	}
	p->job = j;
	return 0;
}

int cloud_source_poll(struct source *s)
{
	struct cloud_source *p = source_priv(s);
	int r = sd_event_add_time_relative(source_event(s), &p->timer, CLOCK_MONOTONIC,
					   (uint64_t)source_timeout_ms(s) * 1000, 1000, on_timeout, s);

	if (r < 0)
		return r;
	pthread_mutex_lock(&p->job->lock);
	p->job->gen++;
	p->job->want = true;
	pthread_cond_signal(&p->job->cond);
	pthread_mutex_unlock(&p->job->lock);
	return 0;
}

void cloud_source_cancel(struct source *s)
{
	struct cloud_source *p = source_priv(s);

	p->timer = sd_event_source_disable_unref(p->timer);
	pthread_mutex_lock(&p->job->lock);
	p->job->gen++;
	p->job->want = false;
	pthread_mutex_unlock(&p->job->lock);
}

void cloud_source_free(struct source *s)
{
	struct cloud_source *p = source_priv(s);

	if (!p->job)
		return;
	p->timer = sd_event_source_disable_unref(p->timer);
	p->io = sd_event_source_disable_unref(p->io);
	pthread_mutex_lock(&p->job->lock);
	p->job->quit = true;
	pthread_cond_signal(&p->job->cond);
	pthread_mutex_unlock(&p->job->lock);
	job_unref(p->job);
	p->job = NULL;
}

int cloud_sources_register(void)
{
	int r = source_register(&source_gce_monitoring);

	if (r < 0 && r != -EEXIST)
		return r;
	r = source_register(&source_azure_monitor);
	return r == -EEXIST ? 0 : r;
}
