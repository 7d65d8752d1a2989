/* resolve: asynchronous host name lookups on the sd-event loop. See
 * resolve.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sources/resolve.h"

struct resolve {
	struct gaicb cb;
	struct addrinfo hints;
	char *host;
	int pipe[2];
	sd_event_source *io;
	resolve_done_fn done;
	void *userdata;
	bool cancelled;
};

bool resolve_is_numeric(const char *host)
{
	unsigned char buf[sizeof(struct in6_addr)];

	return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

static void resolve_free(struct resolve *r)
{
	if (r->cb.ar_result)
		freeaddrinfo(r->cb.ar_result);
	if (r->io) {
		sd_event_source_set_floating(r->io, false);
		sd_event_source_disable_unref(r->io);
	}
	for (int i = 0; i < 2; i++)
		if (r->pipe[i] >= 0)
			close(r->pipe[i]);
	free(r->host);
	free(r);
}

/* Runs on glibc's notification thread: only wakes the loop. */
static void notify(union sigval v)
{
	struct resolve *r = v.sival_ptr;
	char c = 1;

	while (write(r->pipe[1], &c, 1) < 0 && errno == EINTR)
		;
}

static int on_result(sd_event_source *es, int fd, uint32_t revents, void *userdata)
{
	struct resolve *r = userdata;
	char addr[INET6_ADDRSTRLEN] = "", why[256];
	const struct addrinfo *ai;
	int e = gai_error(&r->cb);

	if (e == EAI_INPROGRESS)
		return 0;
	if (r->cancelled) {
		resolve_free(r);
		return 0;
	}
	ai = e == 0 ? r->cb.ar_result : NULL;
	if (ai && ai->ai_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ai->ai_addr)->sin_addr, addr, sizeof(addr));
	else if (ai && ai->ai_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ai->ai_addr)->sin6_addr, addr, sizeof(addr));
	if (addr[0]) {
		r->done(r->userdata, 0, addr, NULL);
	} else {
		snprintf(why, sizeof(why), "cannot resolve '%s': %s", r->host, e ? gai_strerror(e) : "no address");
		r->done(r->userdata, -EHOSTUNREACH, NULL, why);
	}
	resolve_free(r);
	return 0;
}

int resolve_start(sd_event *event, const char *host, resolve_done_fn done, void *userdata, struct resolve **ret)
{
	struct resolve *r = calloc(1, sizeof(*r));
	struct gaicb *list[1];
	struct sigevent sev = { .sigev_notify = SIGEV_THREAD };
	int e;

	if (!r)
		return -ENOMEM;
	r->pipe[0] = r->pipe[1] = -1;
	r->done = done;
	r->userdata = userdata;
	r->host = strdup(host);
	if (!r->host || pipe2(r->pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		e = r->host ? -errno : -ENOMEM;
		resolve_free(r);
		return e;
	}
	e = sd_event_add_io(event, &r->io, r->pipe[0], EPOLLIN, on_result, r);
	if (e < 0) {
		resolve_free(r);
		return e;
	}
	/* The event source outlives a cancel until glibc reports. */
	sd_event_source_set_floating(r->io, true);
	r->hints.ai_family = AF_UNSPEC;
	r->hints.ai_socktype = SOCK_STREAM;
	r->cb.ar_name = r->host;
	r->cb.ar_request = &r->hints;
	list[0] = &r->cb;
	sev.sigev_notify_function = notify;
	sev.sigev_value.sival_ptr = r;
	e = getaddrinfo_a(GAI_NOWAIT, list, 1, &sev);
	if (e != 0) {
		resolve_free(r);
		return e == EAI_MEMORY ? -ENOMEM : -EAGAIN;
	}
	*ret = r;
	return 0;
}

void resolve_cancel(struct resolve *r)
{
	if (!r)
		return;
	/* A request glibc has not started is dropped without a report;
	 * otherwise the report comes and frees it. */
	if (gai_cancel(&r->cb) == EAI_CANCELED)
		resolve_free(r);
	else
		r->cancelled = true;
}
