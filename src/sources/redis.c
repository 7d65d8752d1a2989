/* redis: queue depth from Redis: LLEN of a list, XLEN of a stream, the
 * pending entries of a stream's consumer group (XPENDING), or ZCARD of a
 * sorted set; with AUTH (password, optionally a Redis 6 ACL user) and a
 * database number. Each poll opens a connection with hiredis's async API,
 * driven by the sd-event loop through a small adapter below, pipelines
 * AUTH, SELECT and the query, and closes it: a poll every few seconds does
 * not justify keeping reconnect state. The timeout covers the whole poll,
 * the lookup of a host name included (done off the loop's thread). */
#include <errno.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/un.h>

#include "sources/registry.h"
#include "sources/resolve.h"

enum redis_query { Q_LLEN, Q_XLEN, Q_XPENDING, Q_ZCARD };

static const char *const query_names[] = {
	[Q_LLEN] = "llen", [Q_XLEN] = "xlen", [Q_XPENDING] = "xpending", [Q_ZCARD] = "zcard",
};

/* Which reply a command callback receives. */
enum step { STEP_AUTH = 1, STEP_SELECT, STEP_QUERY };

struct redis {
	char *host;
	int port;
	char *socket_path;
	char *username, *password;
	int database;
	enum redis_query query;
	char *key, *group;
	redisAsyncContext *ac;
	bool too_many;          /* the reply that broke the connection had too many elements */
	struct resolve *lookup;
	sd_event_source *timer;
};

/* The sd-event adapter of one hiredis connection. */
struct redis_ev {
	redisAsyncContext *ac;
	sd_event *event;
	sd_event_source *io;
	uint32_t events;
};

static const char *const redis_keys[] = {
	"host", "port", "socket", "username", "password", "database", "command", "key", "group", NULL,
};

static int redis_init(struct source *s, const struct signal_conf *sc, char *err, size_t errlen)
{
	struct redis *p = source_priv(s);
	char *cmd = NULL;
	double port, db;
	int r;

	if ((r = source_opt_str(sc, "host", false, "127.0.0.1", &p->host, err, errlen)) < 0 ||
	    (r = source_opt_num(sc, "port", 1, 65535, 6379, &port, err, errlen)) < 0 ||
	    (r = source_opt_str(sc, "socket", false, NULL, &p->socket_path, err, errlen)) < 0 ||
	    (r = source_opt_str(sc, "username", false, NULL, &p->username, err, errlen)) < 0 ||
	    (r = source_opt_str(sc, "password", false, NULL, &p->password, err, errlen)) < 0 ||
	    (r = source_opt_num(sc, "database", 0, 1e6, 0, &db, err, errlen)) < 0 ||
	    (r = source_opt_str(sc, "command", false, "llen", &cmd, err, errlen)) < 0 ||
	    (r = source_opt_str(sc, "key", true, NULL, &p->key, err, errlen)) < 0 ||
	    (r = source_opt_str(sc, "group", false, NULL, &p->group, err, errlen)) < 0)
		goto out;
	p->port = (int)port;
	p->database = (int)db;
	if (db != (double)p->database || port != (double)p->port) {
		r = source_opt_error(sc, source_option(sc, db != (double)p->database ? "database" : "port"), err, errlen,
				     "must be a whole number");
		goto out;
	}
	r = -1;
	for (size_t i = 0; i < sizeof(query_names) / sizeof(query_names[0]); i++)
		if (strcasecmp(cmd, query_names[i]) == 0) {
			p->query = (enum redis_query)i;
			r = 0;
		}
	if (r < 0) {
		r = source_opt_error(sc, source_option(sc, "command"), err, errlen,
				     "command must be llen, xlen, xpending or zcard, not '%s'", cmd);
		goto out;
	}
	if (p->query == Q_XPENDING && !p->group) {
		r = source_opt_error(sc, source_option(sc, "command"), err, errlen, "xpending needs option 'group'");
		goto out;
	}
	if (p->username && !p->password) {
		r = source_opt_error(sc, source_option(sc, "username"), err, errlen, "username needs a password");
		goto out;
	}
	if (p->socket_path && strlen(p->socket_path) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		r = source_opt_error(sc, source_option(sc, "socket"), err, errlen, "socket path is too long");
		goto out;
	}
out:
	free(cmd);
	return r;
}

/* ---- the adapter: hiredis asks for read/write interest, sd-event tells
 * it when the socket is ready. ---- */

static int ev_on_io(sd_event_source *es, int fd, uint32_t revents, void *userdata)
{
	struct redis_ev *ev = userdata;
	redisAsyncContext *ac = ev->ac;

	/* One direction per wakeup: either call may free the context. */
	if (revents & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
		if (ac->c.reader && ac->c.reader->len > SOURCE_MAX_REPLY) {
			struct source *s = ac->data;

			if (s) {
				struct redis *p = source_priv(s);

				ac->data = NULL;
				p->ac = NULL;
				p->timer = sd_event_source_disable_unref(p->timer);
				redisAsyncFree(ac);
				source_complete(s, -EFBIG, 0, "reply larger than 1 MiB");
				return 0;
			}
		}
		redisAsyncHandleRead(ac);
	} else if (revents & EPOLLOUT) {
		redisAsyncHandleWrite(ac);
	}
	return 0;
}

static void ev_update(struct redis_ev *ev, uint32_t events)
{
	ev->events = events;
	if (!ev->io) {
		if (!events)
			return;
		if (sd_event_add_io(ev->event, &ev->io, ev->ac->c.fd, events, ev_on_io, ev) < 0)
			return;  /* the poll's timer ends it */
		sd_event_source_set_description(ev->io, "redis");
		return;
	}
	sd_event_source_set_io_events(ev->io, events);
	sd_event_source_set_enabled(ev->io, events ? SD_EVENT_ON : SD_EVENT_OFF);
}

static void ev_add_read(void *d)
{
	struct redis_ev *ev = d;

	ev_update(ev, ev->events | EPOLLIN);
}

static void ev_del_read(void *d)
{
	struct redis_ev *ev = d;

	ev_update(ev, ev->events & ~(uint32_t)EPOLLIN);
}

static void ev_add_write(void *d)
{
	struct redis_ev *ev = d;

	ev_update(ev, ev->events | EPOLLOUT);
}

static void ev_del_write(void *d)
{
	struct redis_ev *ev = d;

	ev_update(ev, ev->events & ~(uint32_t)EPOLLOUT);
}

static void ev_cleanup(void *d)
{
	struct redis_ev *ev = d;

	sd_event_source_disable_unref(ev->io);
	free(ev);
}

static int ev_attach(redisAsyncContext *ac, sd_event *event)
{
	struct redis_ev *ev = calloc(1, sizeof(*ev));

	if (!ev)
		return -ENOMEM;
	ev->ac = ac;
	ev->event = event;
	ac->ev.data = ev;
	ac->ev.addRead = ev_add_read;
	ac->ev.delRead = ev_del_read;
	ac->ev.addWrite = ev_add_write;
	ac->ev.delWrite = ev_del_write;
	ac->ev.cleanup = ev_cleanup;
	return 0;
}

/* ---- one poll ---- */

/* Ends the poll: drops the connection (hiredis frees it once it is out of
 * its callbacks) and reports. */
static void finish(struct source *s, int status, double v, const char *why)
{
	struct redis *p = source_priv(s);

	if (p->ac) {
		p->ac->data = NULL;
		redisAsyncFree(p->ac);
		p->ac = NULL;
	}
	resolve_cancel(p->lookup);
	p->lookup = NULL;
	p->timer = sd_event_source_disable_unref(p->timer);
	source_complete(s, status, v, "%s", why ? why : "");
}

static const char *conn_error(const redisAsyncContext *ac, const struct redis *p, const char *def);

static void on_reply(redisAsyncContext *ac, void *reply, void *privdata)
{
	struct source *s = ac->data;
	struct redis *p;
	redisReply *rp = reply;
	enum step step = (enum step)(intptr_t)privdata;
	char why[256];

	if (!s)
		return;
	p = source_priv(s);
	if (!rp) {
		snprintf(why, sizeof(why), "connection lost: %s", conn_error(ac, p, "closed by the server"));
		finish(s, -ECONNRESET, 0, why);
		return;
	}
	if (rp->type == REDIS_REPLY_ERROR) {
		snprintf(why, sizeof(why), "%s failed: %.200s",
			 step == STEP_AUTH ? "AUTH" : step == STEP_SELECT ? "SELECT" : query_names[p->query], rp->str);
		finish(s, step == STEP_AUTH ? -EACCES : -EREMOTEIO, 0, why);
		return;
	}
	if (step != STEP_QUERY)
		return;
	if (p->query == Q_XPENDING) {
		/* The summary form: [count, smallest id, greatest id, consumers]. */
		if (rp->type == REDIS_REPLY_ARRAY && rp->elements >= 1 && rp->element[0]->type == REDIS_REPLY_INTEGER) {
			finish(s, 0, (double)rp->element[0]->integer, NULL);
			return;
		}
	} else if (rp->type == REDIS_REPLY_INTEGER) {
		finish(s, 0, (double)rp->integer, NULL);
		return;
	}
	finish(s, -EBADMSG, 0, "unexpected reply type");
}

static void on_connect(const redisAsyncContext *ac, int status)
{
	struct source *s = ac->data;
	struct redis *p;
	char why[256];

	if (!s || status == REDIS_OK)
		return;
	/* hiredis frees the context after this callback. */
	p = source_priv(s);
	p->ac = NULL;
	((redisAsyncContext *)ac)->data = NULL;
	/* The async context copies the error only after this callback. */
	snprintf(why, sizeof(why), "cannot connect: %s", ac->c.errstr);
	finish(s, strstr(ac->c.errstr, "refused") ? -ECONNREFUSED : -EIO, 0, why);
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
	struct source *s = ac->data;
	struct redis *p;

	if (!s)
		return;
	p = source_priv(s);
	p->ac = NULL;
	((redisAsyncContext *)ac)->data = NULL;
	finish(s, -ECONNRESET, 0, conn_error(ac, p, "connection closed by the server"));
}

static int on_timeout(sd_event_source *es, uint64_t usec, void *userdata)
{
	struct source *s = userdata;
	char why[64];

	snprintf(why, sizeof(why), "no reply within %lld ms", (long long)source_timeout_ms(s));
	finish(s, -ETIMEDOUT, 0, why);
	return 0;
}

static int send_commands(struct redis *p)
{
	redisAsyncContext *ac = p->ac;
	int r = REDIS_OK;

	if (p->password && p->username)
		r = redisAsyncCommand(ac, on_reply, (void *)(intptr_t)STEP_AUTH, "AUTH %s %s", p->username, p->password);
	else if (p->password)
		r = redisAsyncCommand(ac, on_reply, (void *)(intptr_t)STEP_AUTH, "AUTH %s", p->password);
	if (r == REDIS_OK && p->database)
		r = redisAsyncCommand(ac, on_reply, (void *)(intptr_t)STEP_SELECT, "SELECT %d", p->database);
	if (r != REDIS_OK)
		return -ENOMEM;
	switch (p->query) {
	case Q_LLEN:
		r = redisAsyncCommand(ac, on_reply, (void *)(intptr_t)STEP_QUERY, "LLEN %s", p->key);
		break;
	case Q_XLEN:
		r = redisAsyncCommand(ac, on_reply, (void *)(intptr_t)STEP_QUERY, "XLEN %s", p->key);
		break;
	case Q_XPENDING:
		r = redisAsyncCommand(ac, on_reply, (void *)(intptr_t)STEP_QUERY, "XPENDING %s %s", p->key, p->group);
		break;
	case Q_ZCARD:
		r = redisAsyncCommand(ac, on_reply, (void *)(intptr_t)STEP_QUERY, "ZCARD %s", p->key);
		break;
	}
	return r == REDIS_OK ? 0 : -ENOMEM;
}

/* Opens the connection to ADDR (numeric, or NULL for the UNIX socket) and
 * queues the commands. Returns 0, or a negative errno with WHY set. */
/* The most elements a reply may have: the replies read here have at most
 * four (XPENDING's summary). The count comes from the peer and hiredis
 * allocates room for all of them at once when it reads it, so a "*854775807"
 * header asked for 6.8 GB before any element came (found by fuzzing). */
#define REDIS_MAX_ELEMENTS 64
#define STR_(x) #x
#define STR(x) STR_(x)

#if defined(HIREDIS_MAJOR) && HIREDIS_MAJOR >= 1
static void bound_reader(redisReader *r, struct redis *p)
{
	(void)p;
	r->maxelements = REDIS_MAX_ELEMENTS;
}
#else
/* hiredis 0.14 has no such limit: its array constructor is wrapped, and a
 * NULL from it makes hiredis drop the connection as out of memory; the
 * reader's privdata (which hiredis copies into each task) tells the source
 * why, for its message. Only the loop's thread connects, so the shared
 * table needs no lock. */
static redisReplyObjectFunctions bounded_fn;
static void *(*default_create_array)(const redisReadTask *, int);

static void *create_array_bounded(const redisReadTask *t, int elements)
{
	if (elements < 0 || elements > REDIS_MAX_ELEMENTS) {
		if (t->privdata)
			((struct redis *)t->privdata)->too_many = true;
		return NULL;
	}
	return default_create_array(t, elements);
}

static void bound_reader(redisReader *r, struct redis *p)
{
	if (!default_create_array) {
		bounded_fn = *r->fn;
		default_create_array = bounded_fn.createArray;
		bounded_fn.createArray = create_array_bounded;
	}
	r->fn = &bounded_fn;
	r->privdata = p;
}
#endif

/* Why the connection broke, for the reading's message. */
static const char *conn_error(const redisAsyncContext *ac, const struct redis *p, const char *def)
{
	if (p->too_many)
		return "reply with more than " STR(REDIS_MAX_ELEMENTS) " elements";
	return ac->c.errstr[0] ? ac->c.errstr : def;
}

static int connect_to(struct source *s, const char *addr, char *why, size_t whylen)
{
	struct redis *p = source_priv(s);
	int r;

	p->ac = addr ? redisAsyncConnect(addr, p->port) : redisAsyncConnectUnix(p->socket_path);
	if (!p->ac) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	if (p->ac->err) {
		snprintf(why, whylen, "cannot connect: %s", p->ac->errstr);
		redisAsyncFree(p->ac);
		p->ac = NULL;
		return -ECONNREFUSED;
	}
	p->ac->data = s;
	p->too_many = false;
	bound_reader(p->ac->c.reader, p);
	if ((r = ev_attach(p->ac, source_event(s))) < 0 ||
	    redisAsyncSetConnectCallback(p->ac, on_connect) != REDIS_OK ||
	    redisAsyncSetDisconnectCallback(p->ac, on_disconnect) != REDIS_OK || (r = send_commands(p)) < 0) {
		p->ac->data = NULL;
		redisAsyncFree(p->ac);
		p->ac = NULL;
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

static void on_resolved(void *userdata, int status, const char *addr, const char *error)
{
	struct source *s = userdata;
	struct redis *p = source_priv(s);
	char why[256];

	p->lookup = NULL;
	if (status < 0) {
		finish(s, status, 0, error);
		return;
	}
	status = connect_to(s, addr, why, sizeof(why));
	if (status < 0)
		finish(s, status, 0, why);
}

static int redis_poll(struct source *s)
{
	struct redis *p = source_priv(s);
	char why[256];
	uint64_t now;
	int r;

	r = sd_event_now(source_event(s), CLOCK_MONOTONIC, &now);
	if (r >= 0)
		r = sd_event_add_time(source_event(s), &p->timer, CLOCK_MONOTONIC,
				      now + (uint64_t)source_timeout_ms(s) * 1000, 1000, on_timeout, s);
	if (r < 0)
		return r;
	if (!p->socket_path && !resolve_is_numeric(p->host)) {
		r = resolve_start(source_event(s), p->host, on_resolved, s, &p->lookup);
		if (r < 0)
			p->timer = sd_event_source_disable_unref(p->timer);
		return r;
	}
	r = connect_to(s, p->socket_path ? NULL : p->host, why, sizeof(why));
	if (r == -ECONNREFUSED) {
		p->timer = sd_event_source_disable_unref(p->timer);
		source_complete_later(s, r, 0, "%s", why);
		return 0;
	}
	if (r < 0)
		p->timer = sd_event_source_disable_unref(p->timer);
	return r;
}

static void redis_cancel(struct source *s)
{
	struct redis *p = source_priv(s);

	resolve_cancel(p->lookup);
	p->lookup = NULL;
	if (p->ac) {
		p->ac->data = NULL;
		redisAsyncFree(p->ac);
		p->ac = NULL;
	}
	p->timer = sd_event_source_disable_unref(p->timer);
}

static void redis_free(struct source *s)
{
	struct redis *p = source_priv(s);

	redis_cancel(s);
	free(p->host);
	free(p->socket_path);
	free(p->username);
	if (p->password)
		explicit_bzero(p->password, strlen(p->password));
	free(p->password);
	free(p->key);
	free(p->group);
}

const struct source_ops source_redis = {
	.name = "redis",
	.options = redis_keys,
	.init = redis_init,
	.poll = redis_poll,
	.cancel = redis_cancel,
	.done = redis_free,
	.priv_size = sizeof(struct redis),
};
