/* Membership, ownership and fencing of the cluster runtime against a real
 * etcd: two agents split the groups as hashing says and never both own
 * one; a stopped agent's groups move; a lease that etcd ended makes the
 * old owner's next action refused by etcd; a lease that cannot be renewed
 * stops the agent acting before its TTL, with no request; a group with a
 * fenced call in flight is given back only after the call ends. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "cluster/cluster.h"
#include "cluster/etcd.h"
#include "cluster/rendezvous.h"
#include "etcd-server.h"
#include "log/log.h"

#define N_GROUPS 12

static struct etcd_test server;
static char gnames[N_GROUPS][16];
static struct cluster_group_spec specs[N_GROUPS];
static int prefix_seq;

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* A fresh prefix per test, so that no test sees another's keys. */
static void conf_init(struct cluster_conf *k, char *prefix, size_t size, const char *name, double weight)
{
	snprintf(prefix, size, "/test/c%d", prefix_seq);
	memset(k, 0, sizeof(*k));
	k->etcd = (char **)server.endpoints;
	k->n_etcd = 1;
	k->prefix = prefix;
	k->lease_ttl_ms = 2000;
	k->name = (char *)name;
	k->weight = weight;
}

/* Waits up to ms for cond(a, b), failing at once when etcd died. */
#define WAIT_FOR(ms, cond)                                                              \
	do {                                                                            \
		int64_t end_ = mono_ms() + (ms);                                        \
		while (!(cond)) {                                                       \
			if (!etcd_test_alive(&server, 0))                               \
				fail_msg("etcd is gone");                               \
			if (mono_ms() > end_)                                           \
				fail_msg("timed out waiting for: %s", #cond);           \
			sleep_ms(20);                                                   \
		}                                                                       \
	} while (0)

/* Every group owned by exactly the agent hashing names (over the agents
 * given), and by no other. */
static bool split_as_hashing_says(struct cluster **agents, const char **names, size_t n)
{
	struct rendezvous_member m[4];

	for (size_t i = 0; i < n; i++)
		m[i] = (struct rendezvous_member){ names[i], 1.0 };
	for (int g = 0; g < N_GROUPS; g++) {
		int want = rendezvous_owner(gnames[g], NULL, m, n);

		for (size_t i = 0; i < n; i++)
			if (cluster_owns(agents[i], gnames[g]) != ((int)i == want))
				return false;
	}
	return true;
}

static int count_owned(struct cluster *c)
{
	int n = 0;

	for (int g = 0; g < N_GROUPS; g++)
		n += cluster_owns(c, gnames[g]);
	return n;
}

/* No group is ever owned by both agents, checked as often as possible
 * while the condition is awaited. */
static void never_both(struct cluster *a, struct cluster *b)
{
	for (int g = 0; g < N_GROUPS; g++)
		if (cluster_owns(a, gnames[g]) && cluster_owns(b, gnames[g]))
			fail_msg("group %s owned by both agents", gnames[g]);
}

static void test_split_and_move(void **state)
{
	struct cluster_conf ka, kb;
	char pa[64], pb[64];
	struct cluster *a = NULL, *b = NULL, *agents[2];
	const char *names[2] = { "agent-a", "agent-b" };
	struct cluster_info info;
	char why[256];
	int64_t end;

	(void)state;
	prefix_seq++;
	conf_init(&ka, pa, sizeof(pa), "agent-a", 1);
	conf_init(&kb, pb, sizeof(pb), "agent-b", 1);
	assert_int_equal(cluster_start(&ka, specs, N_GROUPS, &a), 0);
	/* Alone, a takes everything. */
	WAIT_FOR(10000, count_owned(a) == N_GROUPS);
	assert_int_equal(cluster_start(&kb, specs, N_GROUPS, &b), 0);
	agents[0] = a;
	agents[1] = b;
	/* b joins: its share moves, in order, and no group has two owners on
	 * the way. */
	end = mono_ms() + 15000;
	while (!split_as_hashing_says(agents, names, 2)) {
		never_both(a, b);
		if (mono_ms() > end)
			fail_msg("the groups were not split as hashing says");
		assert_true(etcd_test_alive(&server, 0));
		sleep_ms(10);
	}
	assert_true(count_owned(b) > 0 && count_owned(a) > 0);
	cluster_get_info(a, &info);
	assert_true(info.lease_valid);
	assert_int_equal(info.n_members, 2);
	assert_string_equal(info.members[0].name, "agent-a");
	assert_string_equal(info.members[1].name, "agent-b");
	assert_true(info.renewals > 0);

	/* The owner's fence passes; the other agent's is refused without a
	 * request. */
	for (int g = 0; g < N_GROUPS; g++) {
		struct cluster *owner = cluster_owns(a, gnames[g]) ? a : b, *other = owner == a ? b : a;

		assert_int_equal(cluster_fence(owner, gnames[g], "scale_out", 3, 2, why, sizeof(why)), 0);
		cluster_fence_end(owner, gnames[g]);
		assert_int_equal(cluster_fence(other, gnames[g], "scale_out", 3, 2, why, sizeof(why)), -EPERM);
		assert_non_null(strstr(why, "does not own"));
	}

	/* b stops (its lease revoked): a takes b's groups back quickly. */
	end = mono_ms();
	cluster_stop(b);
	WAIT_FOR(5000, count_owned(a) == N_GROUPS);
	printf("# a stopping agent's groups moved in %lld ms (TTL 2000 ms)\n", (long long)(mono_ms() - end));
	cluster_stop(a);
}

static bool lease_ok(struct cluster *c)
{
	struct cluster_info info;

	cluster_get_info(c, &info);
	return info.lease_valid;
}

/* The value of KEY in etcd, "" when it has none (static buffer). */
static const char *etcd_value(struct etcd_client *e, const char *key)
{
	static char buf[4096];
	struct etcd_range r = { 0 };

	buf[0] = 0;
	if (etcd_range(e, key, false, &r) == 0 && r.n == 1)
		snprintf(buf, sizeof(buf), "%s", r.kvs[0].value);
	etcd_range_clear(&r);
	return buf;
}

/* The group's record follows it from owner to owner: the owner's urgent
 * record is in etcd at once, a pending one goes with the next fenced
 * action, a non-owner cannot write one, a stop writes the last one as
 * final, and the next owner takes it, once, with its holding. */
static void test_record_follows_group(void **state)
{
	struct cluster_conf ka, kb;
	char pa[64], pb[64], key[128], why[256], *text = NULL;
	struct cluster_group_spec pinned[1] = { { NULL, "agent-a" } };
	struct cluster *a = NULL, *b = NULL;
	struct etcd_client *e = NULL;
	int64_t since;

	(void)state;
	prefix_seq++;
	pinned[0].name = gnames[0];
	conf_init(&ka, pa, sizeof(pa), "agent-a", 1);
	conf_init(&kb, pb, sizeof(pb), "agent-b", 1);
	snprintf(key, sizeof(key), "%s/state/%s", pa, gnames[0]);
	assert_int_equal(etcd_client_new(server.endpoints, 1, NULL, 2000, &e), 0);
	assert_int_equal(cluster_start(&ka, pinned, 1, &a), 0);
	WAIT_FOR(10000, cluster_owns(a, gnames[0]));
	since = cluster_owned_since(a, gnames[0]);
	/* A first owner: nothing to continue from, and nothing twice. */
	assert_int_equal(cluster_record_take(a, gnames[0], CLUSTER_RECORD_STATE, since, &text), 1);
	assert_null(text);
	assert_int_equal(cluster_record_take(a, gnames[0], CLUSTER_RECORD_FORECAST, since, &text), 1);
	assert_null(text);
	assert_int_equal(cluster_record_take(a, gnames[0], CLUSTER_RECORD_STATE, since, &text), 0);

	assert_int_equal(cluster_record_set(a, gnames[0], CLUSTER_RECORD_STATE, strdup("{\"x\":1}"), true), 0);
	WAIT_FOR(5000, strstr(etcd_value(e, key), "\"state\":{\"x\":1}") != NULL);
	assert_non_null(strstr(etcd_value(e, key), "\"agent\":\"agent-a\""));
	assert_non_null(strstr(etcd_value(e, key), "\"final\":false"));
	/* Not urgent: it waits (minutes), unless an action is fenced, which
	 * writes it in its own transaction. */
	assert_int_equal(cluster_record_set(a, gnames[0], CLUSTER_RECORD_STATE, strdup("{\"x\":2}"), false), 0);
	assert_int_equal(cluster_fence(a, gnames[0], "scale_out", 3, 2, why, sizeof(why)), 0);
	assert_non_null(strstr(etcd_value(e, key), "\"state\":{\"x\":2}"));
	cluster_fence_end(a, gnames[0]);

	assert_int_equal(cluster_start(&kb, pinned, 1, &b), 0);
	WAIT_FOR(10000, lease_ok(b));
	assert_int_equal(cluster_record_set(b, gnames[0], CLUSTER_RECORD_STATE, strdup("{\"x\":3}"), true), -EPERM);
	assert_int_equal(cluster_record_set(a, gnames[0], CLUSTER_RECORD_STATE, strdup("{\"x\":4}"), false), 0);
	/* A forecast record waits its minute too, and goes at the stop. */
	assert_int_equal(cluster_record_set(a, gnames[0], CLUSTER_RECORD_FORECAST, strdup("{\"f\":1}"), false), 0);
	/* a stops: its last records, final, are what b continues from. */
	cluster_stop(a);
	WAIT_FOR(10000, cluster_owns(b, gnames[0]));
	since = cluster_owned_since(b, gnames[0]);
	assert_int_equal(cluster_record_take(b, gnames[0], CLUSTER_RECORD_STATE, since, &text), 1);
	assert_non_null(text);
	assert_non_null(strstr(text, "\"state\":{\"x\":4}"));
	assert_non_null(strstr(text, "\"final\":true"));
	assert_non_null(strstr(text, "\"agent\":\"agent-a\""));
	free(text);
	assert_int_equal(cluster_record_take(b, gnames[0], CLUSTER_RECORD_STATE, since, &text), 0);
	assert_int_equal(cluster_record_take(b, gnames[0], CLUSTER_RECORD_FORECAST, since, &text), 1);
	assert_non_null(text);
	assert_non_null(strstr(text, "\"forecast\":{\"f\":1}"));
	free(text);
	cluster_stop(b);
	etcd_client_free(e);
}

/* etcd ends the owner's lease behind its back (as an expiry after a pause
 * would): its next fence is refused by etcd, the call is not made, and it
 * recovers with a new lease and a new token. */
static void test_stale_token_refused(void **state)
{
	struct cluster_conf ka;
	char pa[64], why[256];
	struct cluster *a = NULL;
	struct etcd_client *e = NULL;
	struct cluster_info info;
	int64_t token, lease;
	int r;

	(void)state;
	prefix_seq++;
	conf_init(&ka, pa, sizeof(pa), "agent-a", 1);
	assert_int_equal(cluster_start(&ka, specs, 1, &a), 0);
	WAIT_FOR(10000, cluster_owns(a, gnames[0]));
	token = cluster_token(a, gnames[0]);
	cluster_get_info(a, &info);
	lease = info.lease_id;
	assert_int_equal(etcd_client_new(server.endpoints, 1, NULL, 2000, &e), 0);
	assert_int_equal(etcd_lease_revoke(e, lease), 0);
	/* The agent may notice the revoke first (its keepalive says the lease
	 * is gone): then it refuses without asking. Either way: no action. */
	r = cluster_fence(a, gnames[0], "scale_in", 1, 2, why, sizeof(why));
	assert_true(r == -ESTALE || r == -EPERM);
	if (r == -ESTALE)
		assert_non_null(strstr(why, "refused fencing token"));
	/* A new lease, a new owner key, a larger token. */
	WAIT_FOR(10000, cluster_owns(a, gnames[0]) && cluster_token(a, gnames[0]) > token);
	assert_int_equal(cluster_fence(a, gnames[0], "scale_in", 1, 2, why, sizeof(why)), 0);
	cluster_fence_end(a, gnames[0]);
	cluster_get_info(a, &info);
	assert_true(info.leases_lost >= 1);
	etcd_client_free(e);
	cluster_stop(a);
}

/* A fenced call in flight keeps its group with its owner: the new owner
 * takes it only after the call ended and the old owner gave it back. */
static void test_handover_waits_for_call(void **state)
{
	struct cluster_conf ka, kb;
	char pa[64], pb[64], why[256];
	struct cluster *a = NULL, *b = NULL;
	const char *names[2] = { "agent-a", "agent-b" };
	struct rendezvous_member m[2] = { { "agent-a", 1 }, { "agent-b", 1 } };
	int moving = -1;
	int64_t end;

	(void)state;
	(void)names;
	prefix_seq++;
	conf_init(&ka, pa, sizeof(pa), "agent-a", 1);
	conf_init(&kb, pb, sizeof(pb), "agent-b", 1);
	for (int g = 0; g < N_GROUPS && moving < 0; g++)
		if (rendezvous_owner(gnames[g], NULL, m, 2) == 1)
			moving = g;
	assert_true(moving >= 0);
	assert_int_equal(cluster_start(&ka, specs, N_GROUPS, &a), 0);
	WAIT_FOR(10000, count_owned(a) == N_GROUPS);
	assert_int_equal(cluster_fence(a, gnames[moving], "scale_out", 5, 4, why, sizeof(why)), 0);
	assert_int_equal(cluster_start(&kb, specs, N_GROUPS, &b), 0);
	/* b takes the other groups hashing gives it, not the busy one. */
	WAIT_FOR(10000, count_owned(b) > 0 && !cluster_owns(a, gnames[moving]));
	end = mono_ms() + 1500;
	while (mono_ms() < end) {
		assert_false(cluster_owns(b, gnames[moving]));
		sleep_ms(20);
	}
	/* a knows it no longer should act on it, though it still holds it. */
	assert_true(cluster_token(a, gnames[moving]) > 0);
	assert_int_equal(cluster_fence(a, gnames[moving], "scale_out", 6, 5, why, sizeof(why)), -EPERM);
	cluster_fence_end(a, gnames[moving]);
	WAIT_FOR(5000, cluster_owns(b, gnames[moving]));
	assert_int_equal(cluster_token(a, gnames[moving]), 0);
	cluster_stop(b);
	cluster_stop(a);
}

/* etcd stops answering: the agent stops acting by its local deadline
 * (before the TTL), without asking etcd; it resumes when etcd is back. */
static void test_unrenewed_lease_stops_acting(void **state)
{
	struct cluster_conf ka;
	char pa[64], why[256];
	struct cluster *a = NULL;
	int64_t stopped, start;

	(void)state;
	prefix_seq++;
	conf_init(&ka, pa, sizeof(pa), "agent-a", 1);
	assert_int_equal(cluster_start(&ka, specs, 1, &a), 0);
	WAIT_FOR(10000, cluster_owns(a, gnames[0]));
	assert_true(cluster_owned_since(a, gnames[0]) > 0);
	etcd_test_signal(&server, 0, SIGSTOP);
	stopped = mono_ms();
	while (cluster_owns(a, gnames[0]) && mono_ms() - stopped < 5000)
		sleep_ms(10);
	/* Within the TTL (2 s) of the last renewal, which was before the
	 * stop. */
	assert_false(cluster_owns(a, gnames[0]));
	printf("# stopped acting %lld ms after etcd stopped answering (TTL 2000 ms)\n",
	       (long long)(mono_ms() - stopped));
	assert_true(mono_ms() - stopped < 2000);
	start = mono_ms();
	assert_int_equal(cluster_fence(a, gnames[0], "scale_out", 2, 1, why, sizeof(why)), -EPERM);
	/* Refused locally: no request waited on the stopped server. */
	assert_true(mono_ms() - start < 100);
	assert_int_equal(cluster_owned_since(a, gnames[0]), 0);
	etcd_test_signal(&server, 0, SIGCONT);
	WAIT_FOR(15000, cluster_owns(a, gnames[0]));
	/* Acting again after the outage (with the same lease, renewed before
	 * etcd expired it, or a new one): the ownership starts anew, so that
	 * the group is observed again before its first action. */
	assert_true(cluster_owned_since(a, gnames[0]) > stopped);
	cluster_stop(a);
}

/* A group that hashing gives to an agent that does not have it (here: a
 * pin to agent b, whose file lacks the group) has no owner: past two TTLs
 * it is orphaned, in the info and the group's owner. */
static void test_orphaned_group(void **state)
{
	struct cluster_conf ka, kb;
	char pa[64], pb[64], owner[65];
	struct cluster *a = NULL, *b = NULL;
	struct cluster_group_spec pinned = { gnames[0], "agent-b" };
	struct cluster_info info;
	bool orphaned = true;
	int64_t start;

	(void)state;
	prefix_seq++;
	conf_init(&ka, pa, sizeof(pa), "agent-a", 1);
	conf_init(&kb, pb, sizeof(pb), "agent-b", 1);
	assert_int_equal(cluster_start(&kb, NULL, 0, &b), 0);
	assert_int_equal(cluster_start(&ka, &pinned, 1, &a), 0);
	start = mono_ms();
	assert_true(cluster_group_owner(a, gnames[0], owner, sizeof(owner), &orphaned));
	assert_false(orphaned);
	WAIT_FOR(15000, (cluster_get_info(a, &info), info.n_orphaned == 1));
	/* Not before two TTLs (2 s each) without an owner. */
	assert_true(mono_ms() - start >= 4000);
	assert_true(cluster_group_owner(a, gnames[0], owner, sizeof(owner), &orphaned));
	assert_true(orphaned);
	assert_string_equal(owner, "");
	assert_false(cluster_owns(a, gnames[0]));
	assert_false(cluster_group_owner(a, "no-such-group", owner, sizeof(owner), &orphaned));
	cluster_stop(a);
	cluster_stop(b);
}

static int setup(void **state)
{
	(void)state;
	log_init(true, false);
	for (int i = 0; i < N_GROUPS; i++) {
		snprintf(gnames[i], sizeof(gnames[i]), "g%d", i);
		specs[i] = (struct cluster_group_spec){ gnames[i], NULL };
	}
	return etcd_test_start(&server, 1) < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	etcd_test_signal(&server, 0, SIGCONT);
	etcd_test_stop(&server);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split_and_move),
		cmocka_unit_test(test_stale_token_refused),
		cmocka_unit_test(test_handover_waits_for_call),
		cmocka_unit_test(test_unrenewed_lease_stops_acting),
		cmocka_unit_test(test_orphaned_group),
		cmocka_unit_test(test_record_follows_group),
	};

	if (!etcd_test_available()) {
		printf("1..0 # SKIP etcd is not installed\n");
		return 0;
	}
	return cmocka_run_group_tests(tests, setup, teardown);
}
