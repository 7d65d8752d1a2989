/* Reading the top-level `cluster` section (autoscaled.conf(5), CLUSTER):
 *
 *   cluster = {
 *     etcd = ( "http://10.0.0.1:2379", "http://10.0.0.2:2379" );
 *     prefix = "/autoscaled/prod";
 *     lease_ttl = "10s";
 *     tls = { ca_file = "/etc/autoscaled/etcd-ca.pem"; cert_file = "..."; key_file = "..."; };
 *     name = "agent-a";
 *     weight = 1.0;
 *     observe = "owned";
 *   };
 *
 * and a group's `owner` pin, which only means something with it. Without
 * the section the daemon runs alone, as it always has. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config-private.h"

static const char *const cluster_keys[] = { "etcd", "prefix", "lease_ttl", "tls", "name", "weight", "observe" };
static const struct enum_name observe_names[] = { { "owned", 0 }, { "all", 1 } };
static const char *const tls_keys[] = { "ca_file", "cert_file", "key_file" };

/* What an endpoint must look like: the scheme, a host, no blanks or
 * control characters (it goes into request lines), no path (the client
 * adds /v3/...). */
static bool endpoint_valid(const char *e)
{
	const char *host;
	size_t len = strlen(e);

	if (strncmp(e, "http://", 7) == 0)
		host = e + 7;
	else if (strncmp(e, "https://", 8) == 0)
		host = e + 8;
	else
		return false;
	if (len >= 256 || !*host || *host == '/' || *host == ':')
		return false;
	for (const char *p = e; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
			return false;
	/* One trailing slash is fine; a path is not. */
	host = strchr(host, '/');
	return !host || host[1] == '\0';
}

static void read_endpoints(struct config_ctx *x, const config_setting_t *s, struct cluster_conf *k)
{
	const config_setting_t *m = config_setting_get_member(s, "etcd");
	int n;

	if (!m) {
		cfg_need(x, s, "etcd");
		return;
	}
	if (!config_setting_is_aggregate(m) || config_setting_is_group(m)) {
		cfg_error(x, m, "'etcd' must be a list of endpoint URLs, such as ( \"http://127.0.0.1:2379\" )");
		return;
	}
	n = config_setting_length(m);
	if (n < 1 || n > CONFIG_MAX_ETCD_ENDPOINTS) {
		cfg_error(x, m, "'etcd' must list 1 to %d endpoints", CONFIG_MAX_ETCD_ENDPOINTS);
		return;
	}
	k->etcd = cfg_alloc(x, (size_t)n, sizeof(*k->etcd));
	if (!k->etcd)
		return;
	for (int i = 0; i < n; i++) {
		const config_setting_t *e = config_setting_get_elem(m, (unsigned)i);
		const char *v = config_setting_get_string(e);

		if (!v) {
			cfg_error(x, e, "an 'etcd' endpoint must be a string");
			continue;
		}
		if (!endpoint_valid(v)) {
			cfg_error(x, e, "invalid etcd endpoint '%s' (use http://HOST:PORT or https://HOST:PORT)", v);
			continue;
		}
		k->etcd[k->n_etcd] = cfg_strdup(x, v);
		if (!k->etcd[k->n_etcd])
			return;
		k->n_etcd++;
	}
}

/* A prefix is an absolute key path: "/" then printable characters without
 * blanks, no trailing "/" (the daemon appends "/members/NAME" and so on)
 * and no empty component. */
static bool prefix_valid(const char *p)
{
	size_t len = strlen(p);

	if (len < 2 || len > CONFIG_MAX_CLUSTER_PREFIX || p[0] != '/' || p[len - 1] == '/' || strstr(p, "//"))
		return false;
	for (; *p; p++)
		if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f)
			return false;
	return true;
}

static void read_tls(struct config_ctx *x, const config_setting_t *s, struct cluster_conf *k)
{
	const config_setting_t *t = cfg_get_group(x, s, "tls");
	const char *const keys[] = { "ca_file", "cert_file", "key_file" };
	char **out[] = { &k->ca_file, &k->cert_file, &k->key_file };

	if (!t)
		return;
	cfg_check_keys(x, t, tls_keys, sizeof(tls_keys) / sizeof(tls_keys[0]));
	for (size_t i = 0; i < 3; i++)
		if (cfg_get_string(x, t, keys[i], out[i]) > 0 && (*out[i])[0] != '/')
			cfg_error(x, config_setting_get_member(t, keys[i]), "'%s' must be an absolute path, not '%s'",
				  keys[i], *out[i]);
	if (!k->cert_file != !k->key_file)
		cfg_error(x, t, "'cert_file' and 'key_file' go together: set both or neither");
	for (size_t i = 0; i < k->n_etcd; i++)
		if (strncmp(k->etcd[i], "https://", 8) != 0) {
			cfg_error(x, t, "'tls' is set but etcd endpoint '%s' is not https://", k->etcd[i]);
			break;
		}
}

/* The agent's name by default: the host's name up to its first dot. */
static char *default_name(struct config_ctx *x)
{
	char host[256] = "";

	if (gethostname(host, sizeof(host) - 1) < 0)
		return NULL;
	host[strcspn(host, ".")] = '\0';
	return cfg_strdup(x, host);
}

static void read_cluster(struct config_ctx *x, const config_setting_t *s)
{
	struct cluster_conf *k = cfg_alloc(x, 1, sizeof(*k));
	const config_setting_t *m;

	if (!k)
		return;
	x->c->cluster = k;
	k->file = cfg_file_name(x, s);
	k->line = (int)s->line;
	k->lease_ttl_ms = 10 * MS_PER_SEC;
	k->weight = 1.0;
	cfg_check_keys(x, s, cluster_keys, sizeof(cluster_keys) / sizeof(cluster_keys[0]));
	read_endpoints(x, s, k);
	if (cfg_get_string(x, s, "prefix", &k->prefix) == 0) {
		k->prefix = cfg_strdup(x, "/autoscaled");
	} else if (k->prefix && !prefix_valid(k->prefix))
		cfg_error(x, config_setting_get_member(s, "prefix"),
			  "invalid 'prefix' '%s': it must start with '/', not end with '/', have no empty component "
			  "and no blanks, and be at most %d characters",
			  k->prefix, CONFIG_MAX_CLUSTER_PREFIX);
	/* etcd counts a lease's TTL in whole seconds and raises any TTL below
	 * its minimum of 2 s. */
	if (cfg_get_duration(x, s, "lease_ttl", 2 * MS_PER_SEC, 3600 * MS_PER_SEC, &k->lease_ttl_ms) > 0 &&
	    k->lease_ttl_ms % MS_PER_SEC != 0)
		cfg_error(x, config_setting_get_member(s, "lease_ttl"),
			  "'lease_ttl' must be whole seconds (etcd counts leases in seconds)");
	read_tls(x, s, k);
	m = config_setting_get_member(s, "name");
	if (m) {
		if (cfg_get_string(x, s, "name", &k->name) > 0 && !cfg_name_valid(k->name))
			cfg_error(x, m,
				  "invalid agent name '%s' (1 to 64 letters, digits, '.', '_' or '-', starting with a "
				  "letter or digit)",
				  k->name);
	} else {
		k->name = default_name(x);
		if (!k->name)
			x->oom = true;
		else if (!cfg_name_valid(k->name))
			cfg_error(x, s, "this host's name '%s' cannot name the agent: set 'name'", k->name);
	}
	if (cfg_get_number(x, s, "weight", &k->weight) > 0 &&
	    (!isfinite(k->weight) || k->weight <= 0 || k->weight > CONFIG_MAX_CLUSTER_WEIGHT))
		cfg_error(x, config_setting_get_member(s, "weight"), "'weight' must be above 0 and at most %g, not %g",
			  CONFIG_MAX_CLUSTER_WEIGHT, k->weight);
	{
		int v = 0;

		if (cfg_get_enum(x, s, "observe", observe_names, 2, &v) > 0)
			k->observe_all = v == 1;
	}
}

void cfg_read_cluster(struct config_ctx *x)
{
	const config_setting_t *found = NULL;
	struct config_unit *found_unit = NULL;

	for (size_t i = 0; i < x->n_units; i++) {
		const config_setting_t *s = config_setting_get_member(config_root_setting(&x->units[i]->lc), "cluster");

		if (!s)
			continue;
		x->unit = x->units[i];
		if (found) {
			struct config_unit *u = x->unit;
			const char *ff;

			x->unit = found_unit;
			ff = cfg_file_name(x, found);
			x->unit = u;
			cfg_error(x, s, "duplicate 'cluster' section (first defined at %s:%u)", ff, found->line);
			continue;
		}
		found = s;
		found_unit = x->unit;
	}
	if (!found)
		return;
	x->unit = found_unit;
	if (!config_setting_is_group(found)) {
		cfg_error(x, found, "'cluster' must be a group { ... }");
		return;
	}
	read_cluster(x, found);
}

void cfg_read_owner(struct config_ctx *x, const config_setting_t *s, struct group_conf *g)
{
	const config_setting_t *m = config_setting_get_member(s, "owner");

	if (!m || cfg_get_string(x, s, "owner", &g->owner) <= 0)
		return;
	if (!cfg_name_valid(g->owner))
		cfg_error(x, m, "invalid 'owner' '%s': an agent's name (cluster.name)", g->owner);
	else if (!x->c->cluster)
		cfg_error(x, m, "'owner' pins the group to an agent of a cluster, but there is no 'cluster' section");
}
