/* The etcd client against a real etcd on loopback: leases, keys,
 * transactions (the ownership and fencing patterns of the cluster mode),
 * fail-over between endpoints, and bounded calls when etcd is gone. */
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

#include "cluster/etcd.h"
#include "etcd-server.h"

static struct etcd_test server;

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

/* A client of the test's server; fails the test at once when it died. */
static struct etcd_client *client(void)
{
	struct etcd_client *c = NULL;

	if (!etcd_test_alive(&server, 0))
		fail_msg("etcd is gone");
	assert_int_equal(etcd_client_new(server.endpoints, 1, NULL, 2000, &c), 0);
	return c;
}

static void test_endpoints_checked(void **state)
{
	struct etcd_client *c = NULL;
	const char *bad[] = { "127.0.0.1:2379" };
	const char *blank[] = { "http://127.0.0.1:2379 x" };
	const char *ok[] = { "https://etcd.example:2379/" };

	(void)state;
	assert_int_equal(etcd_client_new(bad, 1, NULL, 1000, &c), -EINVAL);
	assert_int_equal(etcd_client_new(blank, 1, NULL, 1000, &c), -EINVAL);
	assert_int_equal(etcd_client_new(ok, 0, NULL, 1000, &c), -EINVAL);
	assert_int_equal(etcd_client_new(ok, 1, NULL, 0, &c), -EINVAL);
	assert_int_equal(etcd_client_new(ok, 1, NULL, 1000, &c), 0);
	/* The trailing slash is dropped so that "/v3/..." joins cleanly. */
	assert_string_equal(etcd_client_endpoint(c), "https://etcd.example:2379");
	etcd_client_free(c);
	etcd_client_free(NULL);
}

static void test_lease_lifecycle(void **state)
{
	struct etcd_client *c = client();
	int64_t id = 0, ttl = 0, granted = 0, left = 0;

	(void)state;
	/* etcd raises a TTL below its minimum of 2 s. */
	assert_int_equal(etcd_lease_grant(c, 1, &id, &ttl), 0);
	assert_true(id != 0);
	assert_int_equal(ttl, 2);
	assert_int_equal(etcd_lease_grant(c, 30, &id, &ttl), 0);
	assert_int_equal(ttl, 30);
	assert_int_equal(etcd_lease_timetolive(c, id, &left, &granted), 0);
	assert_int_equal(granted, 30);
	assert_true(left > 0 && left <= 30);
	assert_int_equal(etcd_lease_keepalive(c, id, &ttl), 0);
	assert_int_equal(ttl, 30);
	assert_int_equal(etcd_lease_revoke(c, id), 0);
	/* A revoked lease: keepalive answers without a TTL, timetolive with
	 * -1, revoke with "not found". */
	assert_int_equal(etcd_lease_keepalive(c, id, &ttl), -ENOENT);
	assert_int_equal(etcd_lease_timetolive(c, id, &left, &granted), -ENOENT);
	assert_int_equal(etcd_lease_revoke(c, id), -ENOENT);
	assert_non_null(strstr(etcd_client_error(c), "not found"));
	etcd_client_free(c);
}

static void test_put_range_delete(void **state)
{
	struct etcd_client *c = client();
	struct etcd_range r = { 0 };
	int64_t rev = 0, rev2 = 0, deleted = -1;
	/* A value with every byte, as base64 must carry it. */
	char bin[256];

	(void)state;
	for (int i = 0; i < 256; i++)
		bin[i] = (char)i;
	assert_int_equal(etcd_put(c, "/t/kv/a", "one", 3, 0, &rev), 0);
	assert_true(rev > 0);
	assert_int_equal(etcd_put(c, "/t/kv/b", bin, sizeof(bin), 0, &rev2), 0);
	assert_int_equal(rev2, rev + 1);
	assert_int_equal(etcd_put(c, "/t/kv/c", "", 0, 0, NULL), 0);
	assert_int_equal(etcd_put(c, "/t/kw", "outside", 7, 0, NULL), 0);

	assert_int_equal(etcd_range(c, "/t/kv/a", false, &r), 0);
	assert_int_equal(r.n, 1);
	assert_string_equal(r.kvs[0].key, "/t/kv/a");
	assert_string_equal(r.kvs[0].value, "one");
	assert_int_equal(r.kvs[0].create_revision, rev);
	assert_int_equal(r.kvs[0].mod_revision, rev);
	assert_int_equal(r.kvs[0].version, 1);
	assert_int_equal(r.kvs[0].lease, 0);
	assert_true(r.revision >= rev2);
	etcd_range_clear(&r);

	/* The prefix "/t/kv/" holds a, b, c and not "/t/kw". */
	assert_int_equal(etcd_range(c, "/t/kv/", true, &r), 0);
	assert_int_equal(r.n, 3);
	assert_string_equal(r.kvs[1].key, "/t/kv/b");
	assert_int_equal(r.kvs[1].value_len, sizeof(bin));
	assert_memory_equal(r.kvs[1].value, bin, sizeof(bin));
	assert_string_equal(r.kvs[2].key, "/t/kv/c");
	assert_int_equal(r.kvs[2].value_len, 0);
	assert_string_equal(r.kvs[2].value, "");
	etcd_range_clear(&r);

	/* A second put keeps the create revision and moves the mod one. */
	assert_int_equal(etcd_put(c, "/t/kv/a", "two", 3, 0, &rev2), 0);
	assert_int_equal(etcd_range(c, "/t/kv/a", false, &r), 0);
	assert_int_equal(r.kvs[0].create_revision, rev);
	assert_int_equal(r.kvs[0].mod_revision, rev2);
	assert_int_equal(r.kvs[0].version, 2);
	etcd_range_clear(&r);

	assert_int_equal(etcd_range(c, "/t/none", false, &r), 0);
	assert_int_equal(r.n, 0);
	etcd_range_clear(&r);

	assert_int_equal(etcd_delete(c, "/t/kv/a", false, &deleted), 0);
	assert_int_equal(deleted, 1);
	/* Nothing deleted: the reply has no "deleted" field at all. */
	assert_int_equal(etcd_delete(c, "/t/kv/a", false, &deleted), 0);
	assert_int_equal(deleted, 0);
	assert_int_equal(etcd_delete(c, "/t/kv/", true, &deleted), 0);
	assert_int_equal(deleted, 2);
	assert_int_equal(etcd_range(c, "/t/k", true, &r), 0);
	assert_int_equal(r.n, 1);
	assert_string_equal(r.kvs[0].key, "/t/kw");
	etcd_range_clear(&r);
	assert_int_equal(etcd_delete(c, "/t/kw", false, NULL), 0);

	/* Keys the client refuses before sending. */
	assert_int_equal(etcd_put(c, "", "x", 1, 0, NULL), -EINVAL);
	{
		char longkey[ETCD_MAX_KEY + 2];

		memset(longkey, 'k', sizeof(longkey) - 1);
		longkey[sizeof(longkey) - 1] = '\0';
		assert_int_equal(etcd_range(c, longkey, false, &r), -EINVAL);
	}
	etcd_client_free(c);
}

/* Ownership as the cluster mode takes it: put only if absent, with the
 * owner's lease; the create revision is the fencing token. */
static int acquire(struct etcd_client *c, const char *key, int64_t lease, int64_t *token, bool *won)
{
	struct etcd_compare cmp = { .key = key, .target = ETCD_TARGET_CREATE, .result = ETCD_EQUAL, .number = 0 };
	struct etcd_op put = { .type = ETCD_OP_PUT, .key = key, .value = "me", .value_len = 2, .lease = lease };
	struct etcd_op get = { .type = ETCD_OP_RANGE, .key = key };
	struct etcd_txn_result res = { 0 };
	int r = etcd_txn(c, &cmp, 1, &put, 1, &get, 1, &res);

	if (r < 0)
		return r;
	*won = res.succeeded;
	if (res.succeeded)
		*token = res.revision;
	else {
		assert_int_equal(res.ranges.n, 1);
		*token = res.ranges.kvs[0].create_revision;
	}
	etcd_txn_result_clear(&res);
	return 0;
}

/* An action written only while the owner key still has our token. */
static int fenced_write(struct etcd_client *c, const char *owner_key, int64_t token, bool *ok)
{
	struct etcd_compare cmp = {
		.key = owner_key, .target = ETCD_TARGET_CREATE, .result = ETCD_EQUAL, .number = token
	};
	struct etcd_op put = { .type = ETCD_OP_PUT, .key = "/t/actions/g", .value = "scale 3", .value_len = 7 };
	struct etcd_txn_result res = { 0 };
	int r = etcd_txn(c, &cmp, 1, &put, 1, NULL, 0, &res);

	if (r < 0)
		return r;
	*ok = res.succeeded;
	etcd_txn_result_clear(&res);
	return 0;
}

static void test_txn_ownership_and_fencing(void **state)
{
	struct etcd_client *c = client();
	int64_t a = 0, b = 0, ttl, ta = 0, tb = 0;
	bool won = false, ok = false;
	struct etcd_range r = { 0 };

	(void)state;
	assert_int_equal(etcd_lease_grant(c, 30, &a, &ttl), 0);
	assert_int_equal(etcd_lease_grant(c, 30, &b, &ttl), 0);
	assert_int_equal(acquire(c, "/t/owners/g", a, &ta, &won), 0);
	assert_true(won);
	/* The second agent loses and learns the holder's token. */
	assert_int_equal(acquire(c, "/t/owners/g", b, &tb, &won), 0);
	assert_false(won);
	assert_int_equal(tb, ta);
	assert_int_equal(etcd_range(c, "/t/owners/g", false, &r), 0);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.kvs[0].lease, a);
	assert_int_equal(r.kvs[0].create_revision, ta);
	etcd_range_clear(&r);

	assert_int_equal(fenced_write(c, "/t/owners/g", ta, &ok), 0);
	assert_true(ok);
	/* The owner's lease ends (an expiry does the same as a revoke): its key
	 * goes, B takes over with a new token, and A's token is refused. */
	assert_int_equal(etcd_lease_revoke(c, a), 0);
	assert_int_equal(fenced_write(c, "/t/owners/g", ta, &ok), 0);
	assert_false(ok);
	assert_int_equal(acquire(c, "/t/owners/g", b, &tb, &won), 0);
	assert_true(won);
	assert_true(tb > ta);
	assert_int_equal(fenced_write(c, "/t/owners/g", ta, &ok), 0);
	assert_false(ok);
	assert_int_equal(fenced_write(c, "/t/owners/g", tb, &ok), 0);
	assert_true(ok);
	assert_int_equal(etcd_range(c, "/t/actions/g", false, &r), 0);
	assert_string_equal(r.kvs[0].value, "scale 3");
	etcd_range_clear(&r);

	/* Compares on the value and the mod revision, and a delete in the
	 * success branch: a release that deletes only our own key. */
	{
		struct etcd_compare cmp[2] = {
			{ .key = "/t/owners/g", .target = ETCD_TARGET_VALUE, .result = ETCD_EQUAL, .value = "me",
			  .value_len = 2 },
			{ .key = "/t/owners/g", .target = ETCD_TARGET_MOD, .result = ETCD_LESS, .number = tb },
		};
		struct etcd_op del = { .type = ETCD_OP_DELETE, .key = "/t/owners/g" };
		struct etcd_txn_result res = { 0 };

		/* mod_revision < tb is false (it equals tb). */
		assert_int_equal(etcd_txn(c, cmp, 2, &del, 1, NULL, 0, &res), 0);
		assert_false(res.succeeded);
		etcd_txn_result_clear(&res);
		cmp[1].result = ETCD_EQUAL;
		cmp[0].value = "you";
		cmp[0].value_len = 3;
		assert_int_equal(etcd_txn(c, cmp, 2, &del, 1, NULL, 0, &res), 0);
		assert_false(res.succeeded);
		etcd_txn_result_clear(&res);
		cmp[0].value = "me";
		cmp[0].value_len = 2;
		assert_int_equal(etcd_txn(c, cmp, 2, &del, 1, NULL, 0, &res), 0);
		assert_true(res.succeeded);
		etcd_txn_result_clear(&res);
	}
	assert_int_equal(etcd_range(c, "/t/owners/g", false, &r), 0);
	assert_int_equal(r.n, 0);
	etcd_range_clear(&r);
	assert_int_equal(etcd_lease_revoke(c, b), 0);
	assert_int_equal(etcd_delete(c, "/t/", true, NULL), 0);
	etcd_client_free(c);
}

/* A lease nobody renews ends by itself, with its keys. */
static void test_lease_expires(void **state)
{
	struct etcd_client *c = client();
	struct etcd_range r = { 0 };
	int64_t id, ttl;
	int64_t start = mono_ms();
	size_t n = 1;

	(void)state;
	assert_int_equal(etcd_lease_grant(c, 2, &id, &ttl), 0);
	assert_int_equal(etcd_put(c, "/t/leased", "x", 1, id, NULL), 0);
	while (n > 0 && mono_ms() - start < 15000) {
		assert_true(etcd_test_alive(&server, 0));
		assert_int_equal(etcd_range(c, "/t/leased", false, &r), 0);
		n = r.n;
		etcd_range_clear(&r);
		if (n > 0)
			sleep_ms(100);
	}
	assert_int_equal(n, 0);
	/* Not before its TTL. */
	assert_true(mono_ms() - start >= 1900);
	assert_int_equal(etcd_lease_keepalive(c, id, &ttl), -ENOENT);
	etcd_client_free(c);
}

/* The first endpoint refuses connections: the call goes to the next, and
 * the client stays there. */
static void test_failover(void **state)
{
	struct etcd_client *c = NULL;
	const char *eps[] = { "http://127.0.0.1:1", server.endpoints[0] };
	struct etcd_range r = { 0 };

	(void)state;
	assert_true(etcd_test_alive(&server, 0));
	assert_int_equal(etcd_client_new(eps, 2, NULL, 2000, &c), 0);
	assert_string_equal(etcd_client_endpoint(c), "http://127.0.0.1:1");
	assert_int_equal(etcd_put(c, "/t/fo", "1", 1, 0, NULL), 0);
	assert_string_equal(etcd_client_endpoint(c), server.endpoints[0]);
	assert_int_equal(etcd_range(c, "/t/fo", false, &r), 0);
	assert_int_equal(r.n, 1);
	etcd_range_clear(&r);
	assert_int_equal(etcd_delete(c, "/t/fo", false, NULL), 0);
	etcd_client_free(c);
}

/* A server that accepts and never answers (stopped) costs one timeout per
 * endpoint, no more. This test stops and then kills the server: it runs
 * last. */
static void test_bounded_when_gone(void **state)
{
	struct etcd_client *c = client();
	int64_t id, ttl, start;
	int r;

	(void)state;
	assert_int_equal(etcd_lease_grant(c, 10, &id, &ttl), 0);
	etcd_client_free(c);
	assert_int_equal(etcd_client_new(server.endpoints, 1, NULL, 500, &c), 0);
	etcd_test_signal(&server, 0, SIGSTOP);
	start = mono_ms();
	r = etcd_lease_keepalive(c, id, &ttl);
	assert_int_equal(r, -ETIMEDOUT);
	assert_true(mono_ms() - start < 2000);
	assert_non_null(strstr(etcd_client_error(c), "imeout"));
	etcd_test_signal(&server, 0, SIGKILL);
	start = mono_ms();
	r = etcd_lease_keepalive(c, id, &ttl);
	assert_int_equal(r, -ECONNREFUSED);
	assert_true(mono_ms() - start < 2000);
	etcd_client_free(c);
}

/* Long enough for etcd's handshakes on a loaded machine; a refusal comes at
 * once, so it costs nothing when all is well. */
#define TLS_TIMEOUT_MS 30000

/* TLS: the client's CA, certificate and key reach curl. A real etcd
 * serving https and requiring client certificates answers a client with
 * all three, and refuses one without its certificate or that does not
 * trust its CA. */
static void test_tls(void **state)
{
	char dir[] = "/var/tmp/autoscaled-etcd-tls.XXXXXX", cmd[4096], ca[128], cert[128], key[128];
	struct etcd_test tls_server;
	struct etcd_client *c = NULL;
	struct etcd_range r = { 0 };
	struct etcd_tls ok, no_cert, wrong_ca;

	(void)state;
	if (system("command -v openssl >/dev/null 2>&1") != 0)
		skip();
	assert_non_null(mkdtemp(dir));
	/* A CA, a server certificate for 127.0.0.1 and a client certificate. */
	snprintf(cmd, sizeof(cmd),
		 "cd %s && exec >openssl.log 2>&1 && "
		 "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=test-ca && "
		 "openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=127.0.0.1 && "
		 "printf 'subjectAltName=IP:127.0.0.1\\n' > san.ext && "
		 "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 "
		 "-extfile san.ext && "
		 "openssl req -newkey rsa:2048 -nodes -keyout client.key -out client.csr -subj /CN=client && "
		 "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out client.pem -days 2",
		 dir);
	assert_int_equal(system(cmd), 0);
	snprintf(ca, sizeof(ca), "%s/ca.pem", dir);
	snprintf(cert, sizeof(cert), "%s/client.pem", dir);
	snprintf(key, sizeof(key), "%s/client.key", dir);
	{
		char scert[128], skey[128];

		snprintf(scert, sizeof(scert), "%s/server.pem", dir);
		snprintf(skey, sizeof(skey), "%s/server.key", dir);
		assert_int_equal(etcd_test_start_tls(&tls_server, 1, scert, skey, ca), 0);
	}
	ok = (struct etcd_tls){ .ca_file = ca, .cert_file = cert, .key_file = key };
	no_cert = (struct etcd_tls){ .ca_file = ca };
	wrong_ca = (struct etcd_tls){ .cert_file = cert, .key_file = key };

	assert_int_equal(etcd_client_new(tls_server.endpoints, 1, &ok, TLS_TIMEOUT_MS, &c), 0);
	assert_int_equal(etcd_put(c, "/t/tls", "yes", 3, 0, NULL), 0);
	assert_int_equal(etcd_range(c, "/t/tls", false, &r), 0);
	assert_int_equal(r.n, 1);
	assert_string_equal(r.kvs[0].value, "yes");
	etcd_range_clear(&r);
	etcd_client_free(c);

	assert_int_equal(etcd_client_new(tls_server.endpoints, 1, &no_cert, TLS_TIMEOUT_MS, &c), 0);
	assert_true(etcd_range(c, "/t/tls", false, &r) < 0);
	etcd_client_free(c);
	/* The system's CAs do not know the test CA. */
	assert_int_equal(etcd_client_new(tls_server.endpoints, 1, &wrong_ca, TLS_TIMEOUT_MS, &c), 0);
	assert_true(etcd_range(c, "/t/tls", false, &r) < 0);
	if (!strstr(etcd_client_error(c), "SSL"))
		fail_msg("not refused for the certificate: %s", etcd_client_error(c));
	etcd_client_free(c);

	etcd_test_stop(&tls_server);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

static int setup(void **state)
{
	(void)state;
	return etcd_test_start(&server, 1) < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	etcd_test_stop(&server);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_endpoints_checked),
		cmocka_unit_test(test_lease_lifecycle),
		cmocka_unit_test(test_put_range_delete),
		cmocka_unit_test(test_txn_ownership_and_fencing),
		cmocka_unit_test(test_lease_expires),
		cmocka_unit_test(test_failover),
		cmocka_unit_test(test_tls),
		cmocka_unit_test(test_bounded_when_gone),
	};

	if (!etcd_test_available()) {
		printf("1..0 # SKIP etcd is not installed\n");
		return 0;
	}
	return cmocka_run_group_tests(tests, setup, teardown);
}
