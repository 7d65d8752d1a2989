/* The cluster mode's membership and ownership: see cluster.h. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/clock.h"
#include "cluster/cluster.h"
#include "cluster/etcd.h"
#include "cluster/rendezvous.h"
#include "log/log.h"

int cluster_check_conf(const struct cluster_conf *k, char *why, size_t size)
{
	const char *const names[] = { "ca_file", "cert_file", "key_file" };
	const char *const files[] = { k->ca_file, k->cert_file, k->key_file };

	for (size_t i = 0; i < 3; i++) {
		int r;

		if (!files[i])
			continue;
		/* curl would fail on each request; the daemon refuses to start
		 * instead, naming the file. */
		r = access(files[i], R_OK) < 0 ? -errno : 0;
		if (r < 0) {
			snprintf(why, size, "%s:%d: cluster tls '%s' '%s' cannot be read: %s", k->file, k->line, names[i],
				 files[i], strerror(-r));
			return r;
		}
	}
	return 0;
}

static bool str_same(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

bool cluster_conf_equal(const struct cluster_conf *a, const struct cluster_conf *b)
{
	if (!a || !b)
		return a == b;
	if (a->n_etcd != b->n_etcd || !str_same(a->prefix, b->prefix) || a->lease_ttl_ms != b->lease_ttl_ms ||
	    !str_same(a->ca_file, b->ca_file) || !str_same(a->cert_file, b->cert_file) ||
	    !str_same(a->key_file, b->key_file) || !str_same(a->name, b->name) || a->weight != b->weight ||
	    a->observe_all != b->observe_all)
		return false;
	for (size_t i = 0; i < a->n_etcd; i++)
		if (!str_same(a->etcd[i], b->etcd[i]))
			return false;
	return true;
}

/* ------------------------------------------------------------ the runtime */

/* The most members read; a larger cluster is refused as misconfigured. */
#define MAX_MEMBERS 256
/* The most bytes of a member's value that are parsed. */
#define MAX_MEMBER_VALUE 4096

struct member {
	char *name;
	double weight;
	int64_t started_ms; /* wall clock, as the member wrote it; 0 unknown */
	long pid;
	char host[65];
};

struct cgroup {
	char *name;
	char *pin;
	bool want;      /* hashing gives it to this agent */
	bool held;      /* this agent's owner key exists, with token */
	int64_t token;  /* the owner key's create revision */
	int busy;       /* fenced driver calls not ended */
	bool gone;      /* no longer configured: give back, then forget */
	bool tried;     /* taken or given back in this pass of balance() */
	bool releasing; /* being given back: no fence */
	char owner[65]; /* the agent in its owner key as last read, "" none */
	int64_t owner_rev;
	int64_t since_ms;    /* monotonic: when this agent took the key it holds */
	int64_t orphan_ms;   /* monotonic: since when no owner key was read, 0 owned */
	bool orphan_warned;  /* the warning of this episode was logged */
	/* The group's records, PREFIX/state/GROUP and PREFIX/forecast/GROUP
	 * (cluster.h). */
	struct crecord {
		char *text;        /* the newest the runtime gave, NULL none */
		bool dirty;        /* text is not in etcd yet */
		bool urgent;       /* ... and is to be written at once */
		int64_t written_ms; /* monotonic: its last write in this holding, 0 none */
		char *in;          /* the record read when the key was taken, NULL none */
		bool in_ready;     /* in belongs to the holding and is not taken yet */
	} rec[CLUSTER_RECORDS];
};

/* The records' key kinds, and their texts' member in a record. */
static const char *const record_kinds[CLUSTER_RECORDS] = { "state", "forecast" };

struct cluster {
	/* Copies of the configuration. */
	char **endpoints;
	size_t n_endpoints;
	char *prefix;
	char *name;
	char *ca_file, *cert_file, *key_file;
	double weight;
	bool observe_all;
	int64_t ttl_s;
	int64_t margin_ms;
	int64_t timeout_ms;

	pthread_t thread;
	bool thread_started;

	/* The thread's clients: one for its own loop, one shared by the
	 * fences of the workers (under fence_lock). */
	struct etcd_client *etcd;
	struct etcd_client *fence_etcd;
	pthread_mutex_t fence_lock;
	/* The records' writer: a thread of its own, woken by an urgent record
	 * (under lock, on rec_wake). It writes with the fences' client, under
	 * fence_lock, so that two versions of a record are never on their way
	 * at once: the newer always lands last. */
	pthread_t rec_thread;
	bool rec_thread_started;
	pthread_cond_t rec_wake;

	/* Shared state, under lock. */
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stop;
	int64_t lease;          /* 0: none */
	int64_t old_lease;      /* a lease given up locally that etcd may still hold, 0 none */
	unsigned long failing;  /* keepalives failed in a row, for logging once */
	int64_t deadline_ms;    /* monotonic; the lease is valid before it */
	bool registered;
	struct member *members;
	size_t n_members;
	struct cgroup *groups;
	size_t n_groups;
	unsigned long renewals, renew_failures, leases_lost;
	char error[256];
};

static void set_err(struct cluster *c, const char *what)
{
	pthread_mutex_lock(&c->lock);
	snprintf(c->error, sizeof(c->error), "%s: %s", what, etcd_client_error(c->etcd));
	pthread_mutex_unlock(&c->lock);
}

static struct cgroup *find_group(struct cluster *c, const char *name)
{
	for (size_t i = 0; i < c->n_groups; i++)
		if (strcmp(c->groups[i].name, name) == 0)
			return &c->groups[i];
	return NULL;
}

static bool lease_valid_locked(const struct cluster *c, int64_t now)
{
	return c->lease != 0 && now < c->deadline_ms;
}

static void cgroup_free(struct cgroup *g)
{
	free(g->name);
	free(g->pin);
	for (int k = 0; k < CLUSTER_RECORDS; k++) {
		free(g->rec[k].text);
		free(g->rec[k].in);
	}
}

static void members_free(struct member *m, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(m[i].name);
	free(m);
}

static int key_of(const struct cluster *c, const char *kind, const char *name, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s/%s/%s", c->prefix, kind, name);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* Recomputes which groups hashing gives this agent (under lock). An
 * agent that is not among the members it read (its registration has not
 * been seen yet, or its lease ended) wants nothing. */
static void assign_locked(struct cluster *c)
{
	struct rendezvous_member *rm = NULL;
	bool me = false;

	if (c->n_members > 0)
		rm = calloc(c->n_members, sizeof(*rm));
	for (size_t i = 0; rm && i < c->n_members; i++) {
		rm[i].name = c->members[i].name;
		rm[i].weight = c->members[i].weight;
		me = me || strcmp(rm[i].name, c->name) == 0;
	}
	for (size_t i = 0; i < c->n_groups; i++) {
		struct cgroup *g = &c->groups[i];
		int k = rm && me && !g->gone ? rendezvous_owner(g->name, g->pin, rm, c->n_members) : -1;

		g->want = k >= 0 && strcmp(rm[k].name, c->name) == 0;
	}
	free(rm);
}

static int grant(struct cluster *c)
{
	int64_t id, ttl, sent = clock_mono_ms(), old;
	char key[ETCD_MAX_KEY], value[512], host[256] = "";
	int r;

	r = etcd_lease_grant(c->etcd, c->ttl_s, &id, &ttl);
	if (r < 0) {
		set_err(c, "lease grant");
		return r;
	}
	pthread_mutex_lock(&c->lock);
	c->lease = id;
	c->deadline_ms = sent + ttl * 1000 - c->margin_ms;
	c->registered = false;
	pthread_mutex_unlock(&c->lock);
	log_info("cluster: agent '%s' has lease %" PRIx64 " (TTL %" PRId64 " s)", c->name, (uint64_t)id, ttl);
	/* A lease given up because it could not be renewed in time may still
	 * live in etcd (etcd was slow, not gone): its owner keys would keep
	 * the groups from everyone, this agent included, until it expires. */
	pthread_mutex_lock(&c->lock);
	old = c->old_lease;
	c->old_lease = 0;
	pthread_mutex_unlock(&c->lock);
	if (old != 0 && etcd_lease_revoke(c->etcd, old) == 0)
		log_info("cluster: revoked the previous lease %" PRIx64 " of agent '%s'", (uint64_t)old, c->name);
	/* The member's value says who it is for people reading etcd; only the
	 * weight is used by the other agents. */
	gethostname(host, sizeof(host) - 1);
	snprintf(value, sizeof(value), "{\"weight\":%.17g,\"pid\":%ld,\"host\":\"%.64s\",\"started_ms\":%" PRId64 "}",
		 c->weight, (long)getpid(), strpbrk(host, "\"\\") ? "?" : host, clock_wall_ms());
	r = key_of(c, "members", c->name, key, sizeof(key));
	if (r < 0)
		return r;
	r = etcd_put(c->etcd, key, value, strlen(value), id, NULL);
	if (r < 0) {
		set_err(c, "registration");
		return r;
	}
	pthread_mutex_lock(&c->lock);
	c->registered = true;
	pthread_mutex_unlock(&c->lock);
	return 0;
}

/* The lease is gone (expired in etcd, or the local deadline passed while
 * etcd could not be asked): every token of it is void. */
static void lease_lost(struct cluster *c, const char *why)
{
	pthread_mutex_lock(&c->lock);
	if (c->lease != 0)
		c->leases_lost++;
	c->old_lease = c->lease;
	c->lease = 0;
	c->deadline_ms = 0;
	c->registered = false;
	for (size_t i = 0; i < c->n_groups; i++) {
		c->groups[i].held = false;
		c->groups[i].token = 0;
	}
	pthread_mutex_unlock(&c->lock);
	log_warnx("cluster: agent '%s' lost its lease (%s): it acts on no group until it has a new one", c->name, why);
}

static void keepalive(struct cluster *c)
{
	int64_t ttl, sent = clock_mono_ms(), id;
	int r;

	pthread_mutex_lock(&c->lock);
	id = c->lease;
	pthread_mutex_unlock(&c->lock);
	r = etcd_lease_keepalive(c->etcd, id, &ttl);
	pthread_mutex_lock(&c->lock);
	if (r == 0) {
		if (c->failing > 0)
			log_info("cluster: agent '%s' renews its lease again after %lu failed attempt%s", c->name,
				 c->failing, c->failing == 1 ? "" : "s");
		c->failing = 0;
		c->renewals++;
		/* The lease was past its local deadline and is valid again: the
		 * groups it holds start a new episode of acting, each observed
		 * again first (cluster_owned_since()), as after a new lease. */
		if (c->lease == id && !lease_valid_locked(c, clock_mono_ms()))
			for (size_t i = 0; i < c->n_groups; i++)
				c->groups[i].since_ms = clock_mono_ms();
		/* Only ever forward: an answer to an older request says less. */
		if (c->lease == id && sent + ttl * 1000 - c->margin_ms > c->deadline_ms)
			c->deadline_ms = sent + ttl * 1000 - c->margin_ms;
		c->error[0] = '\0';
	} else {
		c->renew_failures++;
		c->failing++;
		snprintf(c->error, sizeof(c->error), "lease keepalive: %s", etcd_client_error(c->etcd));
	}
	pthread_mutex_unlock(&c->lock);
	if (r == -ENOENT)
		lease_lost(c, "etcd says it expired");
	else if (r < 0 && c->failing == 1)
		/* Once per outage: it is retried every TTL/12 meanwhile. */
		log_warnx("cluster: cannot renew the lease of agent '%s' (retrying): %s", c->name,
			  etcd_client_error(c->etcd));
}

/* A member's value: its weight (1 when it does not say) and, for people,
 * where it runs and since when. */
static void member_parse(const struct etcd_kv *kv, struct member *m)
{
	cJSON *j = kv->value_len <= MAX_MEMBER_VALUE ? cJSON_ParseWithLength(kv->value, kv->value_len) : NULL;
	const cJSON *w = cJSON_GetObjectItemCaseSensitive(j, "weight");
	const cJSON *h = cJSON_GetObjectItemCaseSensitive(j, "host");
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(j, "pid");
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "started_ms");

	m->weight = cJSON_IsNumber(w) && w->valuedouble > 0 && isfinite(w->valuedouble) ? w->valuedouble : 1.0;
	if (cJSON_IsString(h))
		snprintf(m->host, sizeof(m->host), "%s", h->valuestring);
	m->pid = cJSON_IsNumber(p) && p->valuedouble > 0 && p->valuedouble < 1e9 ? (long)p->valuedouble : 0;
	m->started_ms = cJSON_IsNumber(t) && t->valuedouble > 0 && t->valuedouble < 1e15 ? (int64_t)t->valuedouble : 0;
	cJSON_Delete(j);
}

static int read_members(struct cluster *c)
{
	char key[ETCD_MAX_KEY];
	struct etcd_range r = { 0 };
	struct member *m;
	size_t n = 0, plen;
	int rr;

	rr = key_of(c, "members", "", key, sizeof(key));
	if (rr < 0)
		return rr;
	rr = etcd_range(c->etcd, key, true, &r);
	if (rr < 0) {
		set_err(c, "members");
		return rr;
	}
	if (r.n > MAX_MEMBERS) {
		log_warnx("cluster: %zu members under '%s', more than %d: reading none", r.n, key, MAX_MEMBERS);
		etcd_range_clear(&r);
		return -E2BIG;
	}
	plen = strlen(key);
	m = calloc(r.n ? r.n : 1, sizeof(*m));
	if (!m) {
		etcd_range_clear(&r);
		return -ENOMEM;
	}
	for (size_t i = 0; i < r.n; i++) {
		const char *name = r.kvs[i].key + plen;

		/* Only direct children with a lease: a stray key written by
		 * hand would otherwise be an agent that never acts. */
		if (!*name || strchr(name, '/') || r.kvs[i].lease == 0 || strlen(name) > 64)
			continue;
		m[n].name = strdup(name);
		if (!m[n].name) {
			members_free(m, n);
			etcd_range_clear(&r);
			return -ENOMEM;
		}
		member_parse(&r.kvs[i], &m[n]);
		n++;
	}
	etcd_range_clear(&r);
	pthread_mutex_lock(&c->lock);
	members_free(c->members, c->n_members);
	c->members = m;
	c->n_members = n;
	assign_locked(c);
	pthread_mutex_unlock(&c->lock);
	return 0;
}


/* Follows G's episodes without an owner key, as read at NOW (monotonic):
 * past two TTLs the group is orphaned, which every agent logs once per
 * episode. An owner's death without revoking its lease leaves its groups
 * without owner for up to a TTL and a poll, so two TTLs is an owner that
 * is not coming: a member no agent can reach, or a pin nobody takes. */
static void orphan_update(struct cluster *c, struct cgroup *g, int64_t now)
{
	if (g->gone)
		return;
	if (g->owner[0]) {
		if (g->orphan_warned)
			log_notice("cluster: group '%s' has an owner again ('%s') after %.1f s without one", g->name,
				   cluster_printable(g->owner), (double)(now - g->orphan_ms) / 1000.0);
		g->orphan_ms = 0;
		g->orphan_warned = false;
		return;
	}
	if (g->orphan_ms == 0)
		g->orphan_ms = now;
	if (!g->orphan_warned && now - g->orphan_ms > 2 * c->ttl_s * 1000) {
		g->orphan_warned = true;
		log_warnx("cluster: group '%s' has had no owner for %.1f s (more than two lease TTLs): no agent acts on it",
			  g->name, (double)(now - g->orphan_ms) / 1000.0);
	}
}

/* Checks the owner keys this agent believes it holds against etcd: one
 * deleted or re-created behind its back (by an operator) is no longer its
 * own. */
static int read_owners(struct cluster *c)
{
	char key[ETCD_MAX_KEY];
	struct etcd_range r = { 0 };
	size_t plen;
	int64_t now;
	int rr;

	rr = key_of(c, "owners", "", key, sizeof(key));
	if (rr < 0)
		return rr;
	rr = etcd_range(c->etcd, key, true, &r);
	if (rr < 0) {
		set_err(c, "owners");
		return rr;
	}
	plen = strlen(key);
	pthread_mutex_lock(&c->lock);
	now = clock_mono_ms();
	for (size_t i = 0; i < c->n_groups; i++) {
		struct cgroup *g = &c->groups[i];
		bool found = false;

		g->owner[0] = '\0';
		g->owner_rev = 0;
		for (size_t k = 0; k < r.n; k++)
			if (strcmp(r.kvs[k].key + plen, g->name) == 0) {
				snprintf(g->owner, sizeof(g->owner), "%s", r.kvs[k].value);
				g->owner_rev = r.kvs[k].create_revision;
			}
		orphan_update(c, g, now);
		if (!g->held)
			continue;
		for (size_t k = 0; k < r.n && !found; k++)
			found = strcmp(r.kvs[k].key + plen, g->name) == 0 && r.kvs[k].create_revision == g->token &&
				r.kvs[k].lease == c->lease;
		if (!found) {
			g->held = false;
			g->token = 0;
			log_warnx("cluster: the owner key of group '%s' is no longer this agent's", g->name);
		}
	}
	pthread_mutex_unlock(&c->lock);
	etcd_range_clear(&r);
	return 0;
}

/* The most bytes of a group's record read back; a larger value is not
 * one of ours and is ignored (the runtime keeps its own state). */
#define MAX_RECORD_VALUE (1024 * 1024)
/* A record whose state only changed by the windows' history is written at
 * most this often. Actions, an operator's overrides and a hand-over are
 * written at once; the history alone rarely spares a new owner anything:
 * after a hand-over it has the final record, after a crash it holds
 * scale-in for a window unless it evaluated the group all along
 * (state_merge_record() in state.h). At a minute, these writes were most
 * of etcd's traffic with 3,000 groups. */
#define RECORD_REFRESH_MS (5 * 60 * 1000)

static const struct etcd_kv *find_kv(const struct etcd_range *r, const char *key)
{
	for (size_t i = 0; i < r->n; i++)
		if (strcmp(r->kvs[i].key, key) == 0)
			return &r->kvs[i];
	return NULL;
}

/* Takes GROUP's owner key if nobody holds it: put with the lease only if
 * the key does not exist. A repeated request (a fail-over after a
 * timeout) finds the key with this agent's lease: then it is its own.
 * The same transaction reads the group's records, which the runtime takes
 * (cluster_record_take()) before it acts. */
static void acquire(struct cluster *c, const char *group, int64_t lease)
{
	char key[ETCD_MAX_KEY], rkey[CLUSTER_RECORDS][ETCD_MAX_KEY];
	struct etcd_compare cmp = { .key = key, .target = ETCD_TARGET_CREATE, .result = ETCD_EQUAL, .number = 0 };
	struct etcd_op put[1 + CLUSTER_RECORDS] = {
		{ .type = ETCD_OP_PUT, .key = key, .value = c->name, .value_len = strlen(c->name), .lease = lease },
	};
	struct etcd_op get[1 + CLUSTER_RECORDS] = { { .type = ETCD_OP_RANGE, .key = key } };
	struct etcd_txn_result res = { 0 };
	const struct etcd_kv *own;
	char *in[CLUSTER_RECORDS] = { NULL };
	int64_t token = 0;
	struct cgroup *g;

	if (key_of(c, "owners", group, key, sizeof(key)) < 0)
		return;
	for (int k = 0; k < CLUSTER_RECORDS; k++) {
		if (key_of(c, record_kinds[k], group, rkey[k], sizeof(rkey[k])) < 0)
			return;
		put[1 + k] = get[1 + k] = (struct etcd_op){ .type = ETCD_OP_RANGE, .key = rkey[k] };
	}
	if (etcd_txn(c->etcd, &cmp, 1, put, 1 + CLUSTER_RECORDS, get, 1 + CLUSTER_RECORDS, &res) < 0) {
		set_err(c, "owner key");
		return;
	}
	own = find_kv(&res.ranges, key);
	if (res.succeeded)
		token = res.revision;
	else if (own && own->lease == lease)
		token = own->create_revision;
	for (int k = 0; token != 0 && k < CLUSTER_RECORDS; k++) {
		const struct etcd_kv *r = find_kv(&res.ranges, rkey[k]);

		if (r && r->value_len <= MAX_RECORD_VALUE)
			in[k] = strdup(r->value);
	}
	etcd_txn_result_clear(&res);
	if (token == 0)
		return;
	pthread_mutex_lock(&c->lock);
	g = find_group(c, group);
	/* The lease may have been lost meanwhile: its key is then void too. */
	if (g && c->lease == lease) {
		if (!g->held || g->token != token) {
			g->since_ms = clock_mono_ms();
			for (int k = 0; k < CLUSTER_RECORDS; k++) {
				struct crecord *rc = &g->rec[k];

				free(rc->in);
				rc->in = in[k];
				in[k] = NULL;
				rc->in_ready = true;
				rc->written_ms = 0;
				/* The runtime gives this holding's first record
				 * once it has taken the one read here. */
				free(rc->text);
				rc->text = NULL;
				rc->dirty = rc->urgent = false;
			}
		}
		g->held = true;
		g->token = token;
	}
	pthread_mutex_unlock(&c->lock);
	for (int k = 0; k < CLUSTER_RECORDS; k++)
		free(in[k]);
	log_info("cluster: agent '%s' owns group '%s' (fencing token %" PRId64 ")", c->name, group, token);
}

/* G's record of KIND as etcd holds it: the runtime's text and who wrote it.
 * FINAL says that its writer gives the group up with it, so that nothing
 * was decided after it. malloc'd; NULL without a text or on ENOMEM. Under
 * lock. */
static char *record_compose(const struct cluster *c, const struct cgroup *g, int kind, bool final)
{
	static const char fmt[] = "{\"agent\":\"%s\",\"token\":%" PRId64 ",\"final\":%s,\"time_ms\":%" PRId64
				  ",\"%s\":%s}";
	char *out = NULL;

	if (!g->rec[kind].text || asprintf(&out, fmt, c->name, g->token, final ? "true" : "false", clock_wall_ms(),
					   record_kinds[kind], g->rec[kind].text) < 0)
		return NULL;
	return out;
}

/* Writes the records TEXTS (NULL: that kind not) of GROUP while TOKEN still
 * owns it, with client E; with RELEASE the owner key is deleted in the
 * same transaction. Returns 0, -ESTALE when etcd refused the token, or the
 * client's negative errno. */
static int record_put(struct cluster *c, struct etcd_client *e, const char *group, int64_t token,
		      char *const texts[CLUSTER_RECORDS], bool release_key)
{
	char okey[ETCD_MAX_KEY], rkey[CLUSTER_RECORDS][ETCD_MAX_KEY];
	struct etcd_compare cmp = { .key = okey, .target = ETCD_TARGET_CREATE, .result = ETCD_EQUAL, .number = token };
	struct etcd_op ops[CLUSTER_RECORDS + 1];
	struct etcd_txn_result res = { 0 };
	size_t nops = 0;
	int r;

	if (key_of(c, "owners", group, okey, sizeof(okey)) < 0)
		return -ENAMETOOLONG;
	for (int k = 0; k < CLUSTER_RECORDS; k++) {
		if (!texts[k])
			continue;
		if (key_of(c, record_kinds[k], group, rkey[k], sizeof(rkey[k])) < 0)
			return -ENAMETOOLONG;
		ops[nops++] = (struct etcd_op){ .type = ETCD_OP_PUT, .key = rkey[k], .value = texts[k],
						.value_len = strlen(texts[k]) };
	}
	if (release_key)
		ops[nops++] = (struct etcd_op){ .type = ETCD_OP_DELETE, .key = okey };
	if (nops == 0)
		return 0;
	r = etcd_txn(e, &cmp, 1, ops, nops, NULL, 0, &res);
	if (r < 0)
		return r;
	r = res.succeeded ? 0 : -ESTALE;
	etcd_txn_result_clear(&res);
	return r;
}

/* Every record of G, final, for a hand-over or a stop (under lock). */
static void records_compose_final(const struct cluster *c, const struct cgroup *g, char *texts[CLUSTER_RECORDS])
{
	for (int k = 0; k < CLUSTER_RECORDS; k++)
		texts[k] = record_compose(c, g, k, true);
}

static void records_free(char *texts[CLUSTER_RECORDS])
{
	for (int k = 0; k < CLUSTER_RECORDS; k++) {
		free(texts[k]);
		texts[k] = NULL;
	}
}

/* Gives GROUP's owner key back: deleted only while it is still this
 * agent's (same create revision). The group's newest records go with it,
 * final, in the same transaction: the next owner continues from them. */
static void release(struct cluster *c, const char *group, int64_t token)
{
	char *texts[CLUSTER_RECORDS] = { NULL };
	struct cgroup *g;
	int r;

	pthread_mutex_lock(&c->lock);
	g = find_group(c, group);
	if (g && g->token == token)
		records_compose_final(c, g, texts);
	pthread_mutex_unlock(&c->lock);
	r = record_put(c, c->etcd, group, token, texts, true);
	records_free(texts);
	/* On failure the key stays held, and is given back at the next pass. */
	if (r < 0 && r != -ESTALE) {
		set_err(c, "owner key release");
		return;
	}
	/* Refused: the key is gone or another's already; either way not this
	 * agent's any more. */
	pthread_mutex_lock(&c->lock);
	g = find_group(c, group);
	if (g && g->token == token) {
		g->held = false;
		g->token = 0;
		for (int k = 0; k < CLUSTER_RECORDS; k++)
			g->rec[k].dirty = false;
	}
	pthread_mutex_unlock(&c->lock);
	log_info("cluster: agent '%s' gave group '%s' back", c->name, group);
}

/* Writes the records that are due: urgent ones, and the others once per
 * RECORD_REFRESH_MS or first in a holding. Each is fenced like an action,
 * so an agent that lost a group cannot overwrite its new owner's record. */
static void records_write(struct cluster *c)
{
	for (;;) {
		char name[128], *texts[CLUSTER_RECORDS] = { NULL };
		int64_t now = clock_mono_ms(), token = 0;
		int kind = -1, r;

		pthread_mutex_lock(&c->fence_lock);
		pthread_mutex_lock(&c->lock);
		for (size_t i = 0; i < c->n_groups && kind < 0; i++) {
			struct cgroup *g = &c->groups[i];

			for (int k = 0; k < CLUSTER_RECORDS && kind < 0; k++) {
				struct crecord *rc = &g->rec[k];

				if (!rc->dirty || !g->held || g->releasing || !rc->text)
					continue;
				if (!rc->urgent && rc->written_ms > 0 && now - rc->written_ms < RECORD_REFRESH_MS)
					continue;
				kind = k;
				token = g->token;
				snprintf(name, sizeof(name), "%s", g->name);
				texts[k] = record_compose(c, g, k, false);
				rc->dirty = rc->urgent = false;
			}
		}
		pthread_mutex_unlock(&c->lock);
		if (kind < 0) {
			pthread_mutex_unlock(&c->fence_lock);
			return;
		}
		r = texts[kind] ? record_put(c, c->fence_etcd, name, token, texts, false) : -ENOMEM;
		records_free(texts);
		pthread_mutex_lock(&c->lock);
		{
			struct cgroup *g = find_group(c, name);

			if (g && g->token == token) {
				if (r == 0)
					g->rec[kind].written_ms = now;
				else if (r != -ESTALE)
					g->rec[kind].dirty = true; /* retried at the next turn */
			}
			if (r < 0 && r != -ESTALE)
				snprintf(c->error, sizeof(c->error), "group record: %s",
					 r == -ENOMEM ? strerror(ENOMEM) : etcd_client_error(c->fence_etcd));
		}
		pthread_mutex_unlock(&c->lock);
		pthread_mutex_unlock(&c->fence_lock);
		if (r < 0 && r != -ESTALE)
			return; /* etcd is failing: the next turn retries */
	}
}

static void *record_thread(void *arg)
{
	struct cluster *c = arg;

	for (;;) {
		struct timespec until;

		records_write(c);
		pthread_mutex_lock(&c->lock);
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += 1;
		if (!c->stop)
			pthread_cond_timedwait(&c->rec_wake, &c->lock, &until);
		if (c->stop) {
			pthread_mutex_unlock(&c->lock);
			break;
		}
		pthread_mutex_unlock(&c->lock);
	}
	return NULL;
}

/* One pass over the groups: give back what hashing moved away (once no
 * fenced call runs), take what it gave and nobody holds. Each group is
 * tried at most once per pass, and the pass ends at UNTIL (monotonic ms)
 * with what is left for the next one: each group is a request, and the
 * lease must be renewed between passes however many groups move (an
 * agent joining a cluster of thousands of groups takes hundreds). */
static bool balance(struct cluster *c, int64_t until)
{
	bool more = false;

	for (;;) {
		char name[128];
		int64_t token = 0, lease;
		bool give = false, found = false;

		if (clock_mono_ms() >= until) {
			more = true;
			break;
		}
		pthread_mutex_lock(&c->lock);
		lease = c->lease;
		if (!lease_valid_locked(c, clock_mono_ms()) || c->stop) {
			pthread_mutex_unlock(&c->lock);
			break;
		}
		for (size_t i = 0; i < c->n_groups && !found; i++) {
			struct cgroup *g = &c->groups[i];

			if (g->tried)
				continue;
			give = g->held && (!g->want || g->gone) && g->busy == 0;
			found = give || (!g->held && g->want && !g->gone);
			if (!found)
				continue;
			g->tried = true;
			/* No fence starts while the key is being given back:
			 * the call it allowed would outlive the ownership. */
			g->releasing = give;
			token = g->token;
			snprintf(name, sizeof(name), "%s", g->name);
		}
		pthread_mutex_unlock(&c->lock);
		if (!found)
			break;
		if (give)
			release(c, name, token);
		else
			acquire(c, name, lease);
	}
	/* Forget groups no longer configured once they are given back. */
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < c->n_groups;) {
		struct cgroup *g = &c->groups[i];

		g->tried = false;
		g->releasing = false;
		if (g->gone && !g->held && g->busy == 0) {
			cgroup_free(g);
			c->groups[i] = c->groups[--c->n_groups];
			continue;
		}
		i++;
	}
	pthread_mutex_unlock(&c->lock);
	return more;
}

static void *cluster_thread(void *arg)
{
	struct cluster *c = arg;
	int64_t tick = c->ttl_s * 1000 / 3;

	for (;;) {
		int64_t now = clock_mono_ms(), lease, deadline, wait_ms;
		struct timespec until;
		bool more = false;

		pthread_mutex_lock(&c->lock);
		lease = c->lease;
		deadline = c->deadline_ms;
		if (c->stop) {
			pthread_mutex_unlock(&c->lock);
			break;
		}
		pthread_mutex_unlock(&c->lock);
		if (lease != 0 && now >= deadline + c->margin_ms) {
			/* Past the TTL itself without a renewal: etcd has
			 * expired it or soon will; start afresh. */
			lease_lost(c, "not renewed within its TTL");
			lease = 0;
		}
		if (lease == 0) {
			grant(c);
		} else {
			bool registered;

			keepalive(c);
			pthread_mutex_lock(&c->lock);
			registered = c->registered && c->lease != 0;
			pthread_mutex_unlock(&c->lock);
			if (!registered && c->lease != 0) {
				/* A registration that failed after its grant. */
				char key[ETCD_MAX_KEY], value[64];

				if (key_of(c, "members", c->name, key, sizeof(key)) == 0) {
					snprintf(value, sizeof(value), "{\"weight\":%.17g}", c->weight);
					if (etcd_put(c->etcd, key, value, strlen(value), c->lease, NULL) == 0) {
						pthread_mutex_lock(&c->lock);
						c->registered = true;
						pthread_mutex_unlock(&c->lock);
					}
				}
			}
		}
		if (read_members(c) == 0 && read_owners(c) == 0)
			more = balance(c, clock_mono_ms() + tick / 2);
		/* Sleep a tick, or until woken (a stop, new groups, the end of a
		 * fenced call whose group waits to be given back); a quarter of
		 * one when the pass left groups to take or give back. After a
		 * failed renewal, a quarter of a tick: an etcd electing a new
		 * leader answers again within about a second, and the lease
		 * must be renewed before its local deadline, not a tick later. */
		pthread_mutex_lock(&c->lock);
		wait_ms = c->failing > 0 || c->lease == 0 || more ? tick / 4 : tick;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += wait_ms / 1000;
		until.tv_nsec += (wait_ms % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		if (!c->stop)
			pthread_cond_timedwait(&c->wake, &c->lock, &until);
		pthread_mutex_unlock(&c->lock);
	}
	return NULL;
}

static void cluster_free(struct cluster *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n_endpoints; i++)
		free(c->endpoints[i]);
	free(c->endpoints);
	free(c->prefix);
	free(c->name);
	free(c->ca_file);
	free(c->cert_file);
	free(c->key_file);
	etcd_client_free(c->etcd);
	etcd_client_free(c->fence_etcd);
	members_free(c->members, c->n_members);
	for (size_t i = 0; i < c->n_groups; i++)
		cgroup_free(&c->groups[i]);
	free(c->groups);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->fence_lock);
	pthread_cond_destroy(&c->wake);
	pthread_cond_destroy(&c->rec_wake);
	free(c);
}

static char *dup_opt(const char *s, bool *oom)
{
	char *d = s ? strdup(s) : NULL;

	if (s && !d)
		*oom = true;
	return d;
}

int cluster_set_groups(struct cluster *c, const struct cluster_group_spec *groups, size_t n)
{
	struct cgroup *v;
	size_t have;

	pthread_mutex_lock(&c->lock);
	have = c->n_groups;
	v = realloc(c->groups, (have + n + 1) * sizeof(*v));
	if (!v) {
		pthread_mutex_unlock(&c->lock);
		return -ENOMEM;
	}
	c->groups = v;
	for (size_t i = 0; i < have; i++)
		v[i].gone = true;
	for (size_t k = 0; k < n; k++) {
		struct cgroup *g = find_group(c, groups[k].name);
		bool oom = false;

		if (g) {
			free(g->pin);
			g->pin = dup_opt(groups[k].pin, &oom);
			g->gone = false;
		} else {
			g = &c->groups[c->n_groups];
			memset(g, 0, sizeof(*g));
			g->name = dup_opt(groups[k].name, &oom);
			g->pin = dup_opt(groups[k].pin, &oom);
			if (!oom)
				c->n_groups++;
		}
		if (oom) {
			pthread_mutex_unlock(&c->lock);
			return -ENOMEM;
		}
	}
	assign_locked(c);
	pthread_cond_signal(&c->wake);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

int cluster_start(const struct cluster_conf *conf, const struct cluster_group_spec *groups, size_t n,
		  struct cluster **ret)
{
	struct cluster *c = calloc(1, sizeof(*c));
	struct etcd_tls tls;
	bool oom = false;
	int r;

	if (!c)
		return log_err_errno(-ENOMEM, "cluster: cannot start");
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->fence_lock, NULL);
	{
		pthread_condattr_t a;

		pthread_condattr_init(&a);
		pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
		pthread_cond_init(&c->wake, &a);
		pthread_cond_init(&c->rec_wake, &a);
		pthread_condattr_destroy(&a);
	}
	c->endpoints = calloc(conf->n_etcd ? conf->n_etcd : 1, sizeof(*c->endpoints));
	oom = !c->endpoints;
	for (size_t i = 0; !oom && i < conf->n_etcd; i++) {
		c->endpoints[i] = dup_opt(conf->etcd[i], &oom);
		c->n_endpoints += !oom;
	}
	c->prefix = dup_opt(conf->prefix, &oom);
	c->name = dup_opt(conf->name, &oom);
	c->ca_file = dup_opt(conf->ca_file, &oom);
	c->cert_file = dup_opt(conf->cert_file, &oom);
	c->key_file = dup_opt(conf->key_file, &oom);
	if (oom || !c->prefix || !c->name) {
		cluster_free(c);
		return log_err_errno(-ENOMEM, "cluster: cannot start");
	}
	c->weight = conf->weight;
	c->observe_all = conf->observe_all;
	c->ttl_s = conf->lease_ttl_ms / 1000;
	/* The margin covers the two hosts' clock rates and the thread's
	 * scheduling: a tenth of the TTL, at least half a second. */
	c->margin_ms = c->ttl_s * 100 > 500 ? c->ttl_s * 100 : 500;
	/* One request must end well within a renewal period (TTL/3), each
	 * endpoint tried once. */
	c->timeout_ms = c->ttl_s * 1000 / 4 / (int64_t)c->n_endpoints;
	if (c->timeout_ms < 200)
		c->timeout_ms = 200;
	if (c->timeout_ms > 5000)
		c->timeout_ms = 5000;
	tls = (struct etcd_tls){ .ca_file = c->ca_file, .cert_file = c->cert_file, .key_file = c->key_file };
	r = etcd_client_new((const char *const *)c->endpoints, c->n_endpoints, &tls, c->timeout_ms, &c->etcd);
	if (r >= 0)
		r = etcd_client_new((const char *const *)c->endpoints, c->n_endpoints, &tls, c->timeout_ms,
				    &c->fence_etcd);
	if (r >= 0)
		r = cluster_set_groups(c, groups, n);
	if (r < 0) {
		cluster_free(c);
		return log_err_errno(r, "cluster: cannot start");
	}
	r = -pthread_create(&c->thread, NULL, cluster_thread, c);
	if (r < 0) {
		cluster_free(c);
		return log_err_errno(r, "cluster: cannot start its thread");
	}
	c->thread_started = true;
	r = -pthread_create(&c->rec_thread, NULL, record_thread, c);
	if (r < 0) {
		cluster_stop(c);
		return log_err_errno(r, "cluster: cannot start its record thread");
	}
	c->rec_thread_started = true;
	log_info("cluster: agent '%s' (weight %g) joining '%s' at %s, lease TTL %" PRId64 " s", c->name, c->weight,
		 c->prefix, c->endpoints[0], c->ttl_s);
	*ret = c;
	return 0;
}

/* At a stop, with no call running: writes every held group's newest
 * record, final (its writer decides nothing after it), so that the next
 * owner, after a restart of the whole cluster too, continues from the
 * last decision. Gives up at the first failure: etcd is failing, and the
 * next owner then falls back on what it has (state_merge_record()). */
static void records_final(struct cluster *c)
{
	for (size_t i = 0;; i++) {
		char name[128], *texts[CLUSTER_RECORDS] = { NULL };
		int64_t token = 0;
		bool more;
		int r;

		pthread_mutex_lock(&c->lock);
		more = i < c->n_groups;
		if (more) {
			struct cgroup *g = &c->groups[i];

			if (g->held && lease_valid_locked(c, clock_mono_ms())) {
				token = g->token;
				snprintf(name, sizeof(name), "%s", g->name);
				records_compose_final(c, g, texts);
			}
		}
		pthread_mutex_unlock(&c->lock);
		if (!more)
			return;
		if (token == 0)
			continue;
		r = record_put(c, c->etcd, name, token, texts, false);
		records_free(texts);
		if (r < 0 && r != -ESTALE) {
			log_warnx("cluster: cannot write the final records of agent '%s': %s", c->name,
				  etcd_client_error(c->etcd));
			return;
		}
	}
}

void cluster_stop(struct cluster *c)
{
	int64_t lease;
	int busy = 0;

	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->stop = true;
	pthread_cond_signal(&c->wake);
	pthread_cond_signal(&c->rec_wake);
	pthread_mutex_unlock(&c->lock);
	if (c->thread_started)
		pthread_join(c->thread, NULL);
	if (c->rec_thread_started)
		pthread_join(c->rec_thread, NULL);
	/* A fenced driver call still running keeps its group: the lease is
	 * revoked after it ends, for at most the TTL (then etcd expires the
	 * lease anyway). The wait ends early when the local deadline passes. */
	pthread_mutex_lock(&c->lock);
	for (int64_t end = clock_mono_ms() + c->ttl_s * 1000; clock_mono_ms() < end;) {
		struct timespec ts = { 0, 50 * 1000000L };
		int running = 0;

		for (size_t i = 0; i < c->n_groups; i++)
			running += c->groups[i].busy;
		if (running == 0 || !lease_valid_locked(c, clock_mono_ms()))
			break;
		pthread_mutex_unlock(&c->lock);
		nanosleep(&ts, NULL);
		pthread_mutex_lock(&c->lock);
	}
	for (size_t i = 0; i < c->n_groups; i++)
		busy += c->groups[i].busy;
	pthread_mutex_unlock(&c->lock);
	if (busy == 0)
		records_final(c);
	pthread_mutex_lock(&c->lock);
	lease = c->lease;
	c->lease = 0;
	c->deadline_ms = 0;
	pthread_mutex_unlock(&c->lock);
	/* The revoke deletes the member and owner keys with the lease, so the
	 * other agents take the groups over at their next poll. */
	if (lease != 0 && etcd_lease_revoke(c->etcd, lease) < 0)
		log_warnx("cluster: cannot revoke the lease of agent '%s' (its groups move once it expires): %s",
			  c->name, etcd_client_error(c->etcd));
	/* A call that outlived the wait still ends with cluster_fence_end():
	 * the runtime stays allocated for it (the process is exiting). */
	if (busy > 0) {
		log_warnx("cluster: %d fenced driver call(s) still running at stop", busy);
		return;
	}
	cluster_free(c);
}

bool cluster_observes(struct cluster *c, const char *group)
{
	struct cgroup *g;
	bool yes;

	if (c->observe_all)
		return true;
	/* The groups whose owner key it holds; without a valid lease (etcd
	 * cut off, the keys lost with it), those the last hashing gave it, so
	 * that it keeps evaluating and logging them while it holds. A group
	 * hashing gives it but whose key it has not taken yet is not read:
	 * its first action waits for an observation made after it took the
	 * key anyway. */
	pthread_mutex_lock(&c->lock);
	g = find_group(c, group);
	yes = g && !g->gone && (g->held || (g->want && !lease_valid_locked(c, clock_mono_ms())));
	pthread_mutex_unlock(&c->lock);
	return yes;
}

bool cluster_owns(struct cluster *c, const char *group)
{
	return cluster_owned_since(c, group) > 0;
}

int64_t cluster_owned_since(struct cluster *c, const char *group)
{
	int64_t since = 0;
	struct cgroup *g;

	pthread_mutex_lock(&c->lock);
	g = find_group(c, group);
	if (g && g->held && g->want && !g->gone && lease_valid_locked(c, clock_mono_ms()))
		since = g->since_ms > 0 ? g->since_ms : 1;
	pthread_mutex_unlock(&c->lock);
	return since;
}

bool cluster_group_owner(struct cluster *c, const char *group, char *owner, size_t size, bool *orphaned)
{
	struct cgroup *g;
	bool known;

	pthread_mutex_lock(&c->lock);
	g = find_group(c, group);
	known = g && !g->gone;
	snprintf(owner, size, "%s", known ? cluster_printable(g->owner) : "");
	*orphaned = known && g->orphan_warned;
	pthread_mutex_unlock(&c->lock);
	return known;
}

int64_t cluster_token(struct cluster *c, const char *group)
{
	int64_t t = 0;
	struct cgroup *g;

	pthread_mutex_lock(&c->lock);
	g = find_group(c, group);
	if (g && g->held)
		t = g->token;
	pthread_mutex_unlock(&c->lock);
	return t;
}

int cluster_fence(struct cluster *c, const char *group, const char *operation, int count, int from, char *why,
		  size_t len)
{
	char okey[ETCD_MAX_KEY], akey[ETCD_MAX_KEY], skey[ETCD_MAX_KEY], value[512];
	struct etcd_txn_result res = { 0 };
	struct cgroup *g;
	int64_t token = 0;
	char *rec = NULL;
	int r;

	/* fence_lock first: the record composed here is written before any
	 * later version (records_write()). */
	pthread_mutex_lock(&c->fence_lock);
	pthread_mutex_lock(&c->lock);
	g = find_group(c, group);
	if (g && g->held && g->want && !g->gone && !g->releasing && lease_valid_locked(c, clock_mono_ms())) {
		token = g->token;
		g->busy++;
		/* The group's record, with this action in flight, goes in the
		 * same transaction: a new owner reconciles the action rather
		 * than repeat it. */
		if (g->rec[CLUSTER_RECORD_STATE].dirty && (rec = record_compose(c, g, CLUSTER_RECORD_STATE, false)))
			g->rec[CLUSTER_RECORD_STATE].dirty = g->rec[CLUSTER_RECORD_STATE].urgent = false;
	}
	pthread_mutex_unlock(&c->lock);
	if (token <= 0) {
		pthread_mutex_unlock(&c->fence_lock);
		snprintf(why, len, "agent '%s' does not own group '%s' (or its lease is not valid): not acting", c->name,
			 group);
		return -EPERM;
	}
	if (key_of(c, "owners", group, okey, sizeof(okey)) < 0 || key_of(c, "actions", group, akey, sizeof(akey)) < 0 ||
	    key_of(c, "state", group, skey, sizeof(skey)) < 0) {
		snprintf(why, len, "the keys of group '%s' are too long", group);
		pthread_mutex_unlock(&c->fence_lock);
		r = -ENAMETOOLONG;
		goto fail;
	}
	snprintf(value, sizeof(value),
		 "{\"agent\":\"%s\",\"token\":%" PRId64 ",\"operation\":\"%s\",\"count\":%d,\"from\":%d,"
		 "\"time_ms\":%" PRId64 "}",
		 c->name, token, operation, count, from, clock_wall_ms());
	{
		/* The owner key's create revision is the token: equal means it
		 * still exists and was not re-created since. */
		struct etcd_compare cmp = {
			.key = okey, .target = ETCD_TARGET_CREATE, .result = ETCD_EQUAL, .number = token
		};
		struct etcd_op put[2] = {
			{ .type = ETCD_OP_PUT, .key = akey, .value = value, .value_len = strlen(value) },
			{ .type = ETCD_OP_PUT, .key = skey, .value = rec, .value_len = rec ? strlen(rec) : 0 },
		};

		r = etcd_txn(c->fence_etcd, &cmp, 1, put, rec ? 2 : 1, NULL, 0, &res);
		if (r < 0)
			snprintf(why, len, "cannot write the intended action of group '%s' to etcd: %s", group,
				 etcd_client_error(c->fence_etcd));
		pthread_mutex_unlock(&c->fence_lock);
	}
	if (r < 0)
		goto fail;
	if (!res.succeeded) {
		snprintf(why, len, "etcd refused fencing token %" PRId64 " of group '%s': another agent owns it now; not acting",
			 token, group);
		pthread_mutex_lock(&c->lock);
		g = find_group(c, group);
		if (g && g->token == token) {
			g->held = false;
			g->token = 0;
		}
		pthread_mutex_unlock(&c->lock);
		etcd_txn_result_clear(&res);
		free(rec);
		cluster_fence_end(c, group);
		return -ESTALE;
	}
	etcd_txn_result_clear(&res);
	if (rec) {
		pthread_mutex_lock(&c->lock);
		g = find_group(c, group);
		if (g && g->token == token)
			g->rec[CLUSTER_RECORD_STATE].written_ms = clock_mono_ms();
		pthread_mutex_unlock(&c->lock);
	}
	free(rec);
	return 0;

fail:
	if (rec) {
		/* Not written: the record writer tries again. */
		pthread_mutex_lock(&c->lock);
		g = find_group(c, group);
		if (g && g->token == token)
			g->rec[CLUSTER_RECORD_STATE].dirty = g->rec[CLUSTER_RECORD_STATE].urgent = true;
		pthread_cond_signal(&c->rec_wake);
		pthread_mutex_unlock(&c->lock);
	}
	free(rec);
	cluster_fence_end(c, group);
	return r;
}

int cluster_record_set(struct cluster *c, const char *group, enum cluster_record kind, char *text, bool urgent)
{
	struct cgroup *g;
	int r = 0;

	pthread_mutex_lock(&c->lock);
	g = find_group(c, group);
	if (g && g->held && !g->gone) {
		struct crecord *rc = &g->rec[kind];

		free(rc->text);
		rc->text = text;
		text = NULL;
		rc->dirty = true;
		rc->urgent |= urgent;
		if (urgent)
			pthread_cond_signal(&c->rec_wake);
	} else {
		r = -EPERM;
	}
	pthread_mutex_unlock(&c->lock);
	free(text);
	return r;
}

int cluster_record_take(struct cluster *c, const char *group, enum cluster_record kind, int64_t since_ms, char **ret)
{
	struct cgroup *g;
	int r = 0;

	*ret = NULL;
	pthread_mutex_lock(&c->lock);
	g = find_group(c, group);
	if (g && g->held && g->since_ms == since_ms && g->rec[kind].in_ready) {
		*ret = g->rec[kind].in;
		g->rec[kind].in = NULL;
		g->rec[kind].in_ready = false;
		r = 1;
	}
	pthread_mutex_unlock(&c->lock);
	return r;
}

void cluster_fence_end(struct cluster *c, const char *group)
{
	struct cgroup *g;

	pthread_mutex_lock(&c->lock);
	g = find_group(c, group);
	if (g && g->busy > 0 && --g->busy == 0 && (!g->want || g->gone))
		pthread_cond_signal(&c->wake);
	pthread_mutex_unlock(&c->lock);
}

void cluster_get_info(struct cluster *c, struct cluster_info *ret)
{
	int64_t now = clock_mono_ms();

	memset(ret, 0, sizeof(*ret));
	pthread_mutex_lock(&c->lock);
	ret->lease_valid = lease_valid_locked(c, now);
	ret->lease_id = c->lease;
	ret->lease_left_ms = ret->lease_valid ? c->deadline_ms - now : 0;
	ret->n_members = c->n_members;
	for (size_t i = 0; i < c->n_members && i < sizeof(ret->members) / sizeof(ret->members[0]); i++) {
		snprintf(ret->members[i].name, sizeof(ret->members[i].name), "%s", c->members[i].name);
		ret->members[i].weight = c->members[i].weight;
	}
	for (size_t i = 0; i < c->n_groups; i++) {
		ret->n_owned += c->groups[i].held && c->groups[i].want && !c->groups[i].gone && ret->lease_valid;
		ret->n_orphaned += c->groups[i].orphan_warned && !c->groups[i].gone;
	}
	ret->n_groups = c->n_groups;
	ret->renewals = c->renewals;
	ret->renew_failures = c->renew_failures;
	ret->leases_lost = c->leases_lost;
	snprintf(ret->error, sizeof(ret->error), "%s", c->error);
	pthread_mutex_unlock(&c->lock);
}

/* Whether S can go into JSON as it is: a member's value is anyone's to
 * write, so a name or host that is not printable ASCII shows as "?". */
const char *cluster_printable(const char *s)
{
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
			return "?";
	return s;
}

cJSON *cluster_status_json(struct cluster *c)
{
	cJSON *o = cJSON_CreateObject(), *lease, *arr;
	int64_t now = clock_mono_ms(), wall = clock_wall_ms();
	char id[24];
	bool ok = o != NULL;

	if (!o)
		return NULL;
	pthread_mutex_lock(&c->lock);
	snprintf(id, sizeof(id), "%" PRIx64, (uint64_t)c->lease);
	ok = ok && cJSON_AddStringToObject(o, "agent", c->name) && cJSON_AddStringToObject(o, "prefix", c->prefix) &&
	     cJSON_AddNumberToObject(o, "weight", c->weight) && (lease = cJSON_AddObjectToObject(o, "lease")) &&
	     (c->lease ? cJSON_AddStringToObject(lease, "id", id) : cJSON_AddNullToObject(lease, "id")) &&
	     cJSON_AddNumberToObject(lease, "ttl_s", (double)c->ttl_s) &&
	     cJSON_AddBoolToObject(lease, "valid", lease_valid_locked(c, now)) &&
	     cJSON_AddNumberToObject(lease, "left_ms",
				     lease_valid_locked(c, now) ? (double)(c->deadline_ms - now) : 0) &&
	     cJSON_AddNumberToObject(lease, "renewals", (double)c->renewals) &&
	     cJSON_AddNumberToObject(lease, "renew_failures", (double)c->renew_failures) &&
	     cJSON_AddNumberToObject(lease, "lost", (double)c->leases_lost) &&
	     (c->error[0] ? cJSON_AddStringToObject(o, "error", c->error) : cJSON_AddNullToObject(o, "error")) &&
	     (arr = cJSON_AddArrayToObject(o, "members"));
	for (size_t i = 0; ok && i < c->n_members; i++) {
		const struct member *m = &c->members[i];
		cJSON *e = cJSON_CreateObject();

		if (e && !cJSON_AddItemToArray(arr, e)) {
			cJSON_Delete(e);
			e = NULL;
		}
		ok = e && cJSON_AddStringToObject(e, "name", cluster_printable(m->name)) &&
		     cJSON_AddNumberToObject(e, "weight", m->weight) &&
		     cJSON_AddStringToObject(e, "host", cluster_printable(m->host)) &&
		     cJSON_AddNumberToObject(e, "pid", (double)m->pid) &&
		     (m->started_ms ? cJSON_AddNumberToObject(e, "age_s", (double)(wall - m->started_ms) / 1000.0)
				    : cJSON_AddNullToObject(e, "age_s"));
	}
	ok = ok && (arr = cJSON_AddArrayToObject(o, "groups"));
	for (size_t i = 0; ok && i < c->n_groups; i++) {
		const struct cgroup *g = &c->groups[i];
		cJSON *e = cJSON_CreateObject();

		if (g->gone) {
			cJSON_Delete(e);
			continue;
		}
		if (e && !cJSON_AddItemToArray(arr, e)) {
			cJSON_Delete(e);
			e = NULL;
		}
		ok = e && cJSON_AddStringToObject(e, "name", g->name) &&
		     (g->owner[0] ? cJSON_AddStringToObject(e, "owner", cluster_printable(g->owner))
				  : cJSON_AddNullToObject(e, "owner")) &&
		     cJSON_AddNumberToObject(e, "token", (double)g->owner_rev) &&
		     cJSON_AddBoolToObject(e, "orphaned", g->orphan_warned) &&
		     cJSON_AddBoolToObject(e, "acting_here",
					   g->held && g->want && !g->releasing && lease_valid_locked(c, now)) &&
		     cJSON_AddBoolToObject(e, "assigned_here", g->want) &&
		     (g->pin ? cJSON_AddStringToObject(e, "pin", g->pin) : cJSON_AddNullToObject(e, "pin"));
	}
	pthread_mutex_unlock(&c->lock);
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}
