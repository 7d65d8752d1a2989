/* The `cluster` section and a group's `owner` pin: read back field by field,
 * their defaults, every error with its FILE:LINE, and the start-up check
 * that `autoscaled -n` shares with the daemon (unreadable TLS files). */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/preflight.h"
#include "cluster/cluster.h"
#include "config/config.h"

static char dir[PATH_MAX];
static char path[PATH_MAX + 32];

static int setup(void **state)
{
	const char *tmp = getenv("TMPDIR");

	(void)state;
	snprintf(dir, sizeof(dir), "%s/test-config-cluster.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/main.conf", dir);
	return 0;
}

static int teardown(void **state)
{
	char p[PATH_MAX + 32];

	(void)state;
	snprintf(p, sizeof(p), "%s/ca.pem", dir);
	unlink(p);
	unlink(path);
	return rmdir(dir);
}

static void write_conf(const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
}

/* Loads TEXT and checks it fails with exactly the errors given, each
 * "main.conf:LINE: message". */
static void expect_errors(const char *text, ...)
{
	struct config *c = NULL;
	struct config_errors e = { 0 };
	const char *want;
	va_list ap;
	size_t n = 0;

	write_conf(text);
	assert_int_equal(config_load(path, &c, &e), -EINVAL);
	assert_null(c);
	va_start(ap, text);
	while ((want = va_arg(ap, const char *))) {
		char full[PATH_MAX + 512];

		snprintf(full, sizeof(full), "%s/%s", dir, want);
		if (n >= e.n)
			fail_msg("missing error: %s", full);
		if (strcmp(e.v[n], full) != 0)
			fail_msg("error %zu:\n  got:  %s\n  want: %s", n, e.v[n], full);
		n++;
	}
	va_end(ap);
	if (n != e.n)
		fail_msg("%zu unexpected errors, first: %s", e.n - n, e.v[n]);
	config_errors_clear(&e);
}

static struct config *load_ok(const char *text)
{
	struct config *c = NULL;
	struct config_errors e = { 0 };
	int r;

	write_conf(text);
	r = config_load(path, &c, &e);
	if (r != 0)
		fail_msg("load failed (%d): %s", r, e.n ? e.v[0] : "no message");
	return c;
}

#define GROUP "groups = ( { name = \"web\"; driver = \"libvirt\"; min = 1; max = 4;\n" \
	      "  signals = ( { name = \"cpu\"; source = \"libvirt_cpu\"; type = \"utilization\"; target = 60.0; } );\n"

static void test_read_back(void **state)
{
	struct config *c;
	const struct cluster_conf *k;

	(void)state;
	c = load_ok("cluster = {\n"
		    "  etcd = ( \"https://10.0.0.1:2379\", \"https://10.0.0.2:2379/\" );\n"
		    "  prefix = \"/autoscaled/prod\";\n"
		    "  lease_ttl = \"15s\";\n"
		    "  tls = { ca_file = \"/etc/ca.pem\"; cert_file = \"/etc/c.pem\"; key_file = \"/etc/k.pem\"; };\n"
		    "  name = \"agent-a\";\n"
		    "  weight = 2.5;\n"
		    "  observe = \"all\";\n"
		    "};\n" GROUP "  owner = \"agent-b\"; } );\n");
	k = c->cluster;
	assert_non_null(k);
	assert_int_equal(k->n_etcd, 2);
	assert_string_equal(k->etcd[0], "https://10.0.0.1:2379");
	assert_string_equal(k->etcd[1], "https://10.0.0.2:2379/");
	assert_string_equal(k->prefix, "/autoscaled/prod");
	assert_int_equal(k->lease_ttl_ms, 15000);
	assert_string_equal(k->ca_file, "/etc/ca.pem");
	assert_string_equal(k->cert_file, "/etc/c.pem");
	assert_string_equal(k->key_file, "/etc/k.pem");
	assert_string_equal(k->name, "agent-a");
	assert_true(k->weight == 2.5);
	assert_true(k->observe_all);
	assert_int_equal(k->line, 1);
	assert_string_equal(c->groups[0].owner, "agent-b");
	config_free(c);
}

static void test_defaults_and_absent(void **state)
{
	struct config *c, *d;
	char host[256] = "";

	(void)state;
	/* Without the section, nothing of the cluster mode exists. */
	c = load_ok(GROUP "} );\n");
	assert_null(c->cluster);
	assert_null(c->groups[0].owner);
	config_free(c);

	c = load_ok("cluster = { etcd = [ \"http://127.0.0.1:2379\" ]; };\n" GROUP "} );\n");
	assert_non_null(c->cluster);
	assert_string_equal(c->cluster->prefix, "/autoscaled");
	assert_int_equal(c->cluster->lease_ttl_ms, 10000);
	assert_true(c->cluster->weight == 1.0);
	assert_false(c->cluster->observe_all);
	assert_null(c->cluster->ca_file);
	/* The name defaults to the host's, up to its first dot. */
	assert_int_equal(gethostname(host, sizeof(host) - 1), 0);
	host[strcspn(host, ".")] = '\0';
	assert_string_equal(c->cluster->name, host);
	assert_null(c->groups[0].owner);

	/* A changed pin is a changed group for a reload. */
	d = load_ok("cluster = { etcd = [ \"http://127.0.0.1:2379\" ]; };\n" GROUP "  owner = \"b\"; } );\n");
	assert_false(config_group_equal(&c->groups[0], &d->groups[0]));
	assert_true(config_group_equal(&c->groups[0], &c->groups[0]));
	config_free(d);
	config_free(c);
}

static void test_errors(void **state)
{
	(void)state;
	expect_errors("cluster = {\n  prefix = \"/a\";\n};\n", "main.conf:1: missing required key 'etcd'", NULL);
	expect_errors("cluster = {\n  etcd = \"http://127.0.0.1:2379\";\n};\n",
		      "main.conf:2: 'etcd' must be a list of endpoint URLs, such as ( \"http://127.0.0.1:2379\" )", NULL);
	expect_errors("cluster = {\n  etcd = ( );\n};\n", "main.conf:2: 'etcd' must list 1 to 16 endpoints", NULL);
	expect_errors("cluster = {\n  etcd = ( \"127.0.0.1:2379\",\n    \"http://h:1/v3\", 5 );\n};\n",
		      "main.conf:2: invalid etcd endpoint '127.0.0.1:2379' (use http://HOST:PORT or https://HOST:PORT)",
		      "main.conf:3: invalid etcd endpoint 'http://h:1/v3' (use http://HOST:PORT or https://HOST:PORT)",
		      "main.conf:3: an 'etcd' endpoint must be a string", NULL);
	expect_errors("cluster = {\n  etcd = ( \"http://h:1\" );\n  prefix = \"autoscaled\";\n};\n",
		      "main.conf:3: invalid 'prefix' 'autoscaled': it must start with '/', not end with '/', have no "
		      "empty component and no blanks, and be at most 200 characters",
		      NULL);
	expect_errors("cluster = {\n  etcd = ( \"http://h:1\" );\n  prefix = \"/a/\";\n};\n",
		      "main.conf:3: invalid 'prefix' '/a/': it must start with '/', not end with '/', have no "
		      "empty component and no blanks, and be at most 200 characters",
		      NULL);
	/* etcd's minimum TTL is 2 s, and it counts in seconds. */
	expect_errors("cluster = {\n  etcd = ( \"http://h:1\" );\n  lease_ttl = \"1s\";\n};\n",
		      "main.conf:3: 'lease_ttl' must be between 2s and 3600s, not 1s", NULL);
	expect_errors("cluster = {\n  etcd = ( \"http://h:1\" );\n  lease_ttl = \"2500ms\";\n};\n",
		      "main.conf:3: 'lease_ttl' must be whole seconds (etcd counts leases in seconds)", NULL);
	expect_errors("cluster = {\n  etcd = ( \"https://h:1\" );\n  tls = {\n    ca_file = \"ca.pem\";\n"
		      "    cert_file = \"/c.pem\";\n  };\n};\n",
		      "main.conf:3: 'cert_file' and 'key_file' go together: set both or neither",
		      "main.conf:4: 'ca_file' must be an absolute path, not 'ca.pem'", NULL);
	expect_errors("cluster = {\n  etcd = ( \"https://h:1\", \"http://h:2\" );\n  tls = { ca_file = \"/ca.pem\"; };\n};\n",
		      "main.conf:3: 'tls' is set but etcd endpoint 'http://h:2' is not https://", NULL);
	expect_errors("cluster = {\n  etcd = ( \"http://h:1\" );\n  weight = 0.0;\n  name = \"-x\";\n};\n",
		      "main.conf:3: 'weight' must be above 0 and at most 1000, not 0",
		      "main.conf:4: invalid agent name '-x' (1 to 64 letters, digits, '.', '_' or '-', starting with a "
		      "letter or digit)",
		      NULL);
	expect_errors("cluster = {\n  etcd = ( \"http://h:1\" );\n  observe = \"some\";\n};\n",
		      "main.conf:3: 'observe' must be one of owned, all, not 'some'", NULL);
	expect_errors("cluster = {\n  etcd = ( \"http://h:1\" );\n  lease = \"10s\";\n};\n",
		      "main.conf:3: unknown key 'lease'", NULL);
	expect_errors("cluster = ( \"http://h:1\" );\n", "main.conf:1: 'cluster' must be a group { ... }", NULL);
	/* A pin needs a cluster, and names an agent. */
	expect_errors(GROUP "  owner = \"agent-a\"; } );\n",
		      "main.conf:3: 'owner' pins the group to an agent of a cluster, but there is no 'cluster' section",
		      NULL);
	expect_errors("cluster = { etcd = ( \"http://h:1\" ); };\n" GROUP "  owner = \"a b\"; } );\n",
		      "main.conf:4: invalid 'owner' 'a b': an agent's name (cluster.name)", NULL);
}

/* `autoscaled -n` (preflight) refuses an unreadable TLS file, as start-up
 * does, at the section's FILE:LINE. */
static void test_preflight_tls_files(void **state)
{
	char text[PATH_MAX * 2 + 512], ca[PATH_MAX + 16], why[1024];
	struct config *c;
	struct config_errors e = { 0 };
	FILE *f;

	(void)state;
	snprintf(ca, sizeof(ca), "%s/ca.pem", dir);
	snprintf(text, sizeof(text),
		 "\ncluster = {\n  etcd = ( \"https://h:1\" );\n  tls = { ca_file = \"%s\"; };\n};\n"
		 "groups = ( );\n",
		 ca);
	unlink(ca);
	c = load_ok(text);
	assert_int_equal(cluster_check_conf(c->cluster, why, sizeof(why)), -ENOENT);
	assert_int_equal(preflight_check(c, &e), -EINVAL);
	assert_int_equal(e.n, 1);
	snprintf(text, sizeof(text), "%s:2: cluster tls 'ca_file' '%s' cannot be read: No such file or directory", path,
		 ca);
	assert_string_equal(e.v[0], text);
	config_errors_clear(&e);
	f = fopen(ca, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(cluster_check_conf(c->cluster, why, sizeof(why)), 0);
	assert_int_equal(preflight_check(c, &e), 0);
	assert_int_equal(e.n, 0);
	config_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_back),
		cmocka_unit_test(test_defaults_and_absent),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_preflight_tls_files),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
