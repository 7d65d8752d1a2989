/* libvirt driver: a group is the set of domains carrying the group's tag in
 * their <metadata>, on one or more libvirt connections. This file holds the
 * descriptor, the options, the scan of members (with crash repair) and the
 * operations; below it, scale-out is in libvirt-clone.c, scale-in in
 * libvirt-remove.c, the member tags in libvirt-tag.c, connections and
 * messages in libvirt-host.c, pure helpers in libvirt-util.c. See
 * libvirt-internal.h for the naming and tagging contract. */
#include "libvirt-internal.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libvirt/virterror.h>
#include <libxml/parser.h>
#include <libxml/tree.h>

static const char config_help[] =
	"uri = string or list       libvirt connection URI(s), one per host (\"qemu:///system\")\n"
	"weights = list of numbers  share of new members per uri, same length as uri (all 1)\n"
	"template = string          name of the domain to clone (required; one on each host)\n"
	"name_pattern = string      member names: %g group, %n lowest free index (\"%g-%n\")\n"
	"volume_mode = string       clone | overlay (qcow2 backed by the template's volume) (\"clone\")\n"
	"pool = string              storage pool for new volumes (the template volume's pool)\n"
	"victim_policy = string     newest | oldest | least-busy (\"newest\")\n"
	"shutdown_mode = string     acpi | agent: how to ask a guest to stop (\"acpi\")\n"
	"shutdown_timeout = duration wait for a graceful stop before destroying, up to 1h (60s)\n"
	"ready_port = number        a member is ready only once this TCP port of its first address answers (off)\n"
	"ready_timeout = duration   wait for ready_port, all members at once, 10ms to 30s (1s)\n"
	"tag_recheck = duration     a domain without the group's tag is read again after this, and up to\n"
	"                           as long again; 0 to 1h (5min)\n"
	"memory_overcommit = number a host takes members while its active domains' memory stays within this\n"
	"                           times its own (off)\n"
	"cpu_overcommit = number    the same for vCPUs against the host's CPUs (off)\n"
	"warm_pool.KEY              set by the daemon from the group's warm_pool block (autoscaled.conf(5),\n"
	"                           WARM POOLS): size, state, warmup, refill, max_age, return_on_scale_in,\n"
	"                           reseed_command\n"
	"Members carry <autoscaled:member group=...> in the namespace " LV_NS ";\n"
	"remove that metadata (virsh metadata DOMAIN " LV_NS " --remove) to take a domain out of the pool.\n";

/* libvirt prints every error to stderr by default; the driver reports
 * errors itself, once, through the host's log. */
static void silent_error(void *userdata, virErrorPtr err)
{
}

static void silence_libvirt(void)
{
	virSetErrorFunc(NULL, silent_error);
}

/* ------------------------------------------------------------------ scan */

/* The indices of host's members and warm members: a warm member's name is
 * the one it keeps as a member. */
static void remember_indices(struct lv_host *host, const struct lv_member *m, size_t n, const struct lv_member *w,
			     size_t n_w)
{
	size_t k = 0;
	int *v;

	for (size_t i = 0; i < n; i++)
		k += m[i].host == host;
	for (size_t i = 0; i < n_w; i++)
		k += w[i].host == host;
	v = calloc(k ? k : 1, sizeof(*v));
	if (!v)
		return; /* keep the older list: better stale than none */
	k = 0;
	for (size_t i = 0; i < n; i++)
		if (m[i].host == host)
			v[k++] = m[i].index;
	for (size_t i = 0; i < n_w; i++)
		if (w[i].host == host)
			v[k++] = w[i].index;
	free(host->indices);
	host->indices = v;
	host->n_indices = k;
}

/* Finishes what a crash or an outside stop left: returns true when the
 * member still exists afterwards. */
static bool repair(struct autoscaled_driver_instance *h, struct lv_host *host, virDomainPtr dom, struct lv_member *m)
{
	if (m->phase == LV_REMOVING) {
		lv_log(h, AUTOSCALED_LOG_NOTICE, "finishing the removal of '%s' on '%s' that was interrupted",
		       m->name, host->uri);
		return lv_finish_removal(h, host, dom, m->name) < 0;
	}
	/* A warm member being taken into service: tagged as a member, not yet
	 * resumed. */
	if (m->phase == LV_CREATING && m->dom_state == VIR_DOMAIN_PAUSED) {
		lv_log(h, AUTOSCALED_LOG_NOTICE, "resuming '%s' on '%s', taken from the warm pool before an interruption",
		       m->name, host->uri);
		if (virDomainResume(dom) < 0) {
			lv_log_virt(h, AUTOSCALED_LOG_ERROR, "resuming '%s' on '%s' failed", m->name, host->uri);
			return true;
		}
		m->dom_state = VIR_DOMAIN_RUNNING;
		m->started_ms = 0;
	}
	if (m->dom_state == VIR_DOMAIN_SHUTOFF || m->dom_state == VIR_DOMAIN_CRASHED) {
		lv_log(h, AUTOSCALED_LOG_NOTICE, "%s '%s' on '%s'",
		       m->phase == LV_CREATING ? "finishing the half-made member" : "restarting the stopped member",
		       m->name, host->uri);
		if (virDomainCreate(dom) < 0) {
			lv_log_virt(h, AUTOSCALED_LOG_ERROR, "starting '%s' on '%s' failed", m->name, host->uri);
			return true;
		}
		m->dom_state = VIR_DOMAIN_RUNNING;
		m->started_ms = 0;
	}
	if (m->dom_state == VIR_DOMAIN_RUNNING && (m->phase == LV_CREATING || m->started_ms == 0)) {
		m->phase = LV_ACTIVE;
		if (m->started_ms == 0)
			m->started_ms = clock_wall_ms();
		lv_set_tag(h, dom, m);
	}
	return true;
}

struct vec {
	struct lv_member *v;
	size_t n, cap;
};

static int push(struct autoscaled_driver_instance *h, struct vec *x, const struct lv_member *m)
{
	if (x->n == LV_MAX_MEMBERS) {
		lv_log(h, AUTOSCALED_LOG_ERROR, "more than %d %smembers; ignoring '%s'", LV_MAX_MEMBERS,
		       m->warm ? "warm " : "", m->name);
		return 0;
	}
	if (x->n == x->cap) {
		size_t nc = x->cap ? x->cap * 2 : 16;
		struct lv_member *nv = realloc(x->v, nc * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		x->v = nv;
		x->cap = nc;
	}
	x->v[x->n++] = *m;
	return 0;
}

static int scan_host(struct autoscaled_driver_instance *h, struct lv_host *host, struct vec *members, struct vec *warm)
{
	virDomainPtr *doms = NULL;
	struct lv_tag_entry *seen = NULL;
	size_t n_seen = 0;
	uint64_t ours = lv_tag_group_id(h->host->group);
	int64_t now = clock_mono_ms();
	int nd, r = 0;

	nd = virConnectListAllDomains(host->conn, &doms, 0);
	if (nd < 0) {
		lv_log_virt(h, AUTOSCALED_LOG_ERROR, "listing the domains of '%s' failed", host->uri);
		return lv_virt_errno();
	}
	/* What this scan learns replaces the directory; without room for it,
	 * every tag is read and the directory stays as it was. */
	if (host->tagdir)
		seen = malloc((nd ? (size_t)nd : 1) * sizeof(*seen));
	for (int i = 0; i < nd; i++) {
		struct lv_member m = { .host = host, .cpu_percent = -1 };
		struct lv_tag_entry e;
		bool have_uuid = virDomainGetUUID(doms[i], e.uuid) == 0;
		bool known = have_uuid && seen && lv_tagdir_find(host->tagdir, e.uuid, &e);
		char *md;
		bool mine;
		int reason;

		if (known && e.group != ours && !lv_tag_recheck_due(&e, h->opt.tag_recheck_ms, now)) {
			seen[n_seen++] = e;
			virDomainFree(doms[i]);
			continue;
		}
		md = virDomainGetMetadata(doms[i], VIR_DOMAIN_METADATA_ELEMENT, LV_NS, 0);
		mine = md && lv_parse_tag(md, h->host->group, &m) == 0;
		if (have_uuid && seen) {
			/* A failed read of a tag that may be there teaches nothing. */
			if (md || virGetLastErrorCode() == VIR_ERR_NO_DOMAIN_METADATA) {
				e.group = mine ? ours : md ? lv_tag_read_group(md) : 0;
				e.read_ms = now;
				seen[n_seen++] = e;
			} else if (known) {
				seen[n_seen++] = e;
			}
		}
		if (!mine) {
			free(md);
			virResetLastError();
			virDomainFree(doms[i]);
			continue;
		}
		free(md);
		snprintf(m.name, sizeof(m.name), "%s", virDomainGetName(doms[i]));
		if (virDomainGetState(doms[i], &m.dom_state, &reason, 0) < 0)
			m.dom_state = VIR_DOMAIN_NOSTATE;
		/* A domain is a warm member or a member by its tag alone, and
		 * goes to one list, so nothing is ever counted as both. */
		if (m.warm != LV_W_NONE) {
			if (lv_warm_repair(h, host, doms[i], &m) && push(h, warm, &m) < 0)
				r = -ENOMEM;
		} else if (repair(h, host, doms[i], &m) && push(h, members, &m) < 0) {
			r = -ENOMEM;
		}
		virDomainFree(doms[i]);
	}
	free(doms);
	if (seen)
		lv_tagdir_replace(host->tagdir, seen, n_seen);
	return r;
}

int lv_scan(struct autoscaled_driver_instance *h, bool *partial)
{
	struct vec mv = { 0 }, wv = { 0 };
	struct lv_member *v;
	size_t n, seen = 0;

	*partial = false;
	for (size_t i = 0; i < h->n_hosts; i++) {
		struct lv_host *host = &h->hosts[i];
		size_t before = mv.n, before_w = wv.n;

		if (!lv_connect(h, host) || scan_host(h, host, &mv, &wv) < 0) {
			/* Drop what this host gave before failing: all or nothing. */
			mv.n = before;
			wv.n = before_w;
			*partial = true;
			continue;
		}
		seen++;
		lv_sweep_volumes(h, host);
		remember_indices(host, mv.v, mv.n, wv.v, wv.n);
	}
	if (seen == 0) {
		/* Keep the last members known: nothing newer is known. */
		free(mv.v);
		free(wv.v);
		return -EHOSTUNREACH;
	}
	v = mv.v;
	n = mv.n;
	free(h->warm);
	h->warm = wv.v;
	h->n_warm = wv.n;
	/* CPU samples carry over to the same member on the same host. */
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < h->n_members; j++)
			if (h->members[j].host == v[i].host && strcmp(h->members[j].name, v[i].name) == 0) {
				v[i].have_cpu = h->members[j].have_cpu;
				v[i].cpu_ns = h->members[j].cpu_ns;
				v[i].cpu_wall_ns = h->members[j].cpu_wall_ns;
				v[i].cpu_percent = h->members[j].cpu_percent;
				break;
			}
	free(h->members);
	h->members = v;
	h->n_members = n;
	return 0;
}

static void to_instance(const struct autoscaled_driver_instance *h, const struct lv_member *m,
			struct autoscaled_instance *out)
{
	bool running = m->dom_state == VIR_DOMAIN_RUNNING || m->dom_state == VIR_DOMAIN_BLOCKED;

	*out = (struct autoscaled_instance){
		.id = m->name,
		.created_ms = m->created_ms,
		.location = m->host->uri,
	};
	if (m->phase == LV_REMOVING || m->dom_state == VIR_DOMAIN_SHUTDOWN)
		out->state = AUTOSCALED_INSTANCE_STOPPING;
	else if (running || m->dom_state == VIR_DOMAIN_PAUSED)
		out->state = AUTOSCALED_INSTANCE_RUNNING;
	else
		out->state = AUTOSCALED_INSTANCE_PROVISIONING;
	if (out->state == AUTOSCALED_INSTANCE_RUNNING)
		out->running_since_ms = m->started_ms;
	/* A paused guest is up but serves nothing. */
	out->ready = out->state == AUTOSCALED_INSTANCE_RUNNING && running && m->phase == LV_ACTIVE &&
		     (h->opt.ready_port == 0 || m->port_open);
}

/* The first address of a domain, from DHCP leases, else the guest agent,
 * else the host's ARP table; IPv4 preferred. */
static bool member_address(virDomainPtr dom, char *buf, size_t len)
{
	static const unsigned sources[] = { VIR_DOMAIN_INTERFACE_ADDRESSES_SRC_LEASE,
					    VIR_DOMAIN_INTERFACE_ADDRESSES_SRC_AGENT,
					    VIR_DOMAIN_INTERFACE_ADDRESSES_SRC_ARP };
	bool found = false;

	for (size_t s = 0; s < 3 && !found; s++) {
		virDomainInterfacePtr *ifs = NULL;
		int n = virDomainInterfaceAddresses(dom, &ifs, sources[s], 0);

		for (int pass = 0; pass < 2 && !found; pass++)
			for (int i = 0; i < n && !found; i++)
				for (unsigned j = 0; j < ifs[i]->naddrs && !found; j++) {
					if (pass == 0 && ifs[i]->addrs[j].type != VIR_IP_ADDR_TYPE_IPV4)
						continue;
					snprintf(buf, len, "%s", ifs[i]->addrs[j].addr);
					found = true;
				}
		for (int i = 0; i < n; i++)
			virDomainInterfaceFree(ifs[i]);
		free(ifs);
		virResetLastError();
	}
	return found;
}

/* Checks ready_port on every running member, all at once. */
static void check_ports(struct autoscaled_driver_instance *h)
{
	char (*addr)[64] = calloc(h->n_members ? h->n_members : 1, sizeof(*addr));
	const char **ptrs = calloc(h->n_members ? h->n_members : 1, sizeof(*ptrs));
	bool *open = calloc(h->n_members ? h->n_members : 1, sizeof(*open));

	if (!addr || !ptrs || !open)
		goto out;
	for (size_t i = 0; i < h->n_members; i++) {
		struct lv_member *m = &h->members[i];
		virDomainPtr dom;

		if (m->dom_state != VIR_DOMAIN_RUNNING || !m->host->conn)
			continue;
		dom = virDomainLookupByName(m->host->conn, m->name);
		if (dom && member_address(dom, addr[i], sizeof(addr[i])))
			ptrs[i] = addr[i];
		if (dom)
			virDomainFree(dom);
		virResetLastError();
	}
	lv_ports_open(ptrs, h->n_members, h->opt.ready_port, (int)h->opt.ready_timeout_ms, open);
	for (size_t i = 0; i < h->n_members; i++)
		h->members[i].port_open = open[i];
out:
	free(addr);
	free(ptrs);
	free(open);
}

/* ------------------------------------------------------------ operations */

static void lv_close(struct autoscaled_driver_instance *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->n_hosts; i++) {
		if (h->hosts[i].conn)
			virConnectClose(h->hosts[i].conn);
		free(h->hosts[i].indices);
		lv_tagdir_put(h->hosts[i].tagdir);
	}
	free(h->members);
	free(h->warm);
	lv_options_free(&h->opt);
	free(h);
}

static int lv_check(const struct autoscaled_host *host, const struct autoscaled_option *options, size_t n_options)
{
	struct lv_options o;
	int r = lv_options_parse(host, options, n_options, &o);

	if (r == 0)
		lv_options_free(&o);
	return r;
}

/* Takes over the parsed options of a new handle. */
static void apply_options(struct autoscaled_driver_instance *h, struct lv_options *o)
{
	h->opt = *o;
	h->n_hosts = o->n_uris;
	for (size_t i = 0; i < h->n_hosts; i++)
		h->hosts[i] = (struct lv_host){ .uri = o->uris[i], .weight = o->weights[i],
						.tagdir = lv_tagdir_get(o->uris[i]) };
}

static int lv_open(const struct autoscaled_host *host, const struct autoscaled_option *options, size_t n_options,
		   struct autoscaled_driver_instance **ret)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	struct autoscaled_driver_instance *h;
	struct lv_options o;
	bool partial;
	int r;

	pthread_once(&once, silence_libvirt);
	r = lv_options_parse(host, options, n_options, &o);
	if (r < 0)
		return r;
	h = calloc(1, sizeof(*h));
	if (!h) {
		lv_options_free(&o);
		return -ENOMEM;
	}
	h->host = host;
	apply_options(h, &o);
	for (size_t i = 0; i < sizeof(h->warm_reported) / sizeof(h->warm_reported[0]); i++)
		h->warm_reported[i] = -1;
	/* Connects and repairs; a host that is down is retried later, so it
	 * does not fail the open of a multi-host pool. */
	lv_scan(h, &partial);
	for (size_t i = 0; i < h->n_hosts; i++)
		if (h->hosts[i].conn) {
			*ret = h;
			return 0;
		}
	lv_log(h, AUTOSCALED_LOG_ERROR, "no host of the pool could be reached");
	lv_close(h);
	return -EHOSTUNREACH;
}

/* Reads each member's CPU utilisation since the previous reading, for the
 * least-busy policy and, through sample (may be NULL), as libvirt_cpu; a
 * member read for the first time only gives its baseline. A host whose
 * statistics cannot be read is logged and skipped. */
static int read_cpu(struct autoscaled_driver_instance *h, autoscaled_sample_fn sample, void *ctx)
{
	int r = 0;

	for (size_t i = 0; i < h->n_hosts && r == 0; i++) {
		struct lv_host *host = &h->hosts[i];
		virDomainStatsRecordPtr *recs = NULL;
		int64_t wall_ns;
		int nr;

		if (!lv_connect(h, host))
			continue;
		nr = virConnectGetAllDomainStats(host->conn, VIR_DOMAIN_STATS_CPU_TOTAL | VIR_DOMAIN_STATS_VCPU, &recs,
						 VIR_CONNECT_GET_ALL_DOMAINS_STATS_ACTIVE);
		wall_ns = clock_mono_ns();
		if (nr < 0) {
			lv_log_virt(h, AUTOSCALED_LOG_WARNING, "reading CPU statistics of '%s' failed", host->uri);
			continue;
		}
		for (int k = 0; k < nr && r == 0; k++) {
			const char *name = virDomainGetName(recs[k]->dom);
			unsigned long long cpu;
			unsigned int vcpus;
			struct lv_member *m = NULL;
			double pct;

			for (size_t j = 0; j < h->n_members && !m; j++)
				if (h->members[j].host == host && strcmp(h->members[j].name, name) == 0)
					m = &h->members[j];
			if (!m || virTypedParamsGetULLong(recs[k]->params, recs[k]->nparams, "cpu.time", &cpu) != 1)
				continue;
			if (virTypedParamsGetUInt(recs[k]->params, recs[k]->nparams, "vcpu.current", &vcpus) != 1)
				vcpus = 1;
			if (m->have_cpu &&
			    lv_cpu_percent(m->cpu_ns, m->cpu_wall_ns, cpu, wall_ns, vcpus, &pct) == 0) {
				m->cpu_percent = pct;
				if (sample)
					r = sample(ctx, LV_CPU_SOURCE, m->name, pct);
			}
			m->have_cpu = true;
			m->cpu_ns = cpu;
			m->cpu_wall_ns = wall_ns;
		}
		virDomainStatsRecordListFree(recs);
	}
	return r;
}

static int lv_observe(struct autoscaled_driver_instance *h, autoscaled_instance_fn fn, autoscaled_sample_fn sample,
		      void *ctx, struct autoscaled_observation *ret)
{
	struct autoscaled_observation obs = { .stable = true };
	bool partial;
	int r;

	r = lv_scan(h, &partial);
	if (r < 0) {
		lv_log(h, AUTOSCALED_LOG_ERROR, "no host of the pool could be reached");
		return r;
	}
	if (h->opt.ready_port)
		check_ports(h);
	for (size_t i = 0; i < h->n_members; i++) {
		struct autoscaled_instance in;

		to_instance(h, &h->members[i], &in);
		if (h->members[i].phase != LV_REMOVING)
			obs.target_size++;
		if (in.state != AUTOSCALED_INSTANCE_RUNNING)
			obs.stable = false;
		if (fn && (r = fn(ctx, &in)) != 0)
			return r;
	}
	/* The least-busy policy chooses by the CPU of the last observations,
	 * whether or not a signal reads it. */
	if ((sample || h->opt.policy == LV_LEAST_BUSY) && (r = read_cpu(h, sample, ctx)) != 0)
		return r;
	/* The pool's upkeep comes after the members are reported, so an
	 * observation is never late for it; it uses the same scan. */
	lv_warm_maintain(h);
	/* After the upkeep, which may have used some of the room. */
	lv_publish_room(h);
	obs.partial = partial;
	if (partial)
		for (size_t i = 0; i < h->n_hosts; i++)
			if (!h->hosts[i].conn)
				lv_log(h, AUTOSCALED_LOG_WARNING, "observed without host '%s' (unreachable)",
				       h->hosts[i].uri);
	*ret = obs;
	return 0;
}

static size_t count_active(const struct autoscaled_driver_instance *h)
{
	size_t n = 0;

	for (size_t i = 0; i < h->n_members; i++)
		n += h->members[i].phase != LV_REMOVING;
	return n;
}

static int remove_by_policy(struct autoscaled_driver_instance *h, size_t count, autoscaled_instance_fn fn, void *ctx)
{
	struct lv_member **v;
	size_t n = 0;
	int r;

	v = calloc(h->n_members ? h->n_members : 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < h->n_members; i++)
		if (h->members[i].phase != LV_REMOVING)
			v[n++] = &h->members[i];
	lv_order_victims(v, n, h->opt.policy);
	if (count > n) {
		lv_log(h, AUTOSCALED_LOG_WARNING, "asked to remove %zu members but the group has %zu", count, n);
		count = n;
	}
	/* Victims the warm pool takes back are parked, not deleted. */
	size_t parked = lv_warm_return(h, v, count, fn, ctx);
	r = lv_remove_members(h, v + parked, count - parked, fn, ctx);
	free(v);
	return r;
}

bool lv_eligible_hosts(struct autoscaled_driver_instance *h, bool *eligible)
{
	bool any = false;

	/* A host can take members when it is up and has the template. */
	for (size_t i = 0; i < h->n_hosts; i++) {
		virDomainPtr t;

		eligible[i] = false;
		if (!h->hosts[i].conn)
			continue;
		t = virDomainLookupByName(h->hosts[i].conn, h->opt.template_name);
		if (!t) {
			lv_log_virt(h, AUTOSCALED_LOG_ERROR, "template domain '%s' not found on '%s'",
				    h->opt.template_name, h->hosts[i].uri);
			continue;
		}
		virDomainFree(t);
		eligible[i] = true;
		any = true;
	}
	return any;
}

int lv_next_index(struct autoscaled_driver_instance *h)
{
	int taken[LV_MAX_MEMBERS];
	size_t n_taken = 0;

	/* Indices of members on hosts that are down stay taken, and so do
	 * those of warm members. */
	for (size_t i = 0; i < h->n_hosts; i++)
		if (!h->hosts[i].conn)
			for (size_t j = 0; j < h->hosts[i].n_indices && n_taken < LV_MAX_MEMBERS; j++)
				taken[n_taken++] = h->hosts[i].indices[j];
	for (size_t j = 0; j < h->n_warm && n_taken < LV_MAX_MEMBERS; j++)
		taken[n_taken++] = h->warm[j].index;
	return lv_lowest_free_index(h->members, h->n_members, taken, n_taken);
}

static int lv_set_capacity(struct autoscaled_driver_instance *h, int count, autoscaled_instance_fn fn, void *ctx)
{
	bool partial, eligible[LV_MAX_HOSTS], bounded = lv_bounded(h);
	struct lv_room rooms[LV_MAX_HOSTS] = { { 0 } };
	size_t active;
	int r, want, made = 0;

	if (count < 0 || count > LV_MAX_MEMBERS) {
		lv_log(h, AUTOSCALED_LOG_ERROR, "capacity %d is outside 0..%d", count, LV_MAX_MEMBERS);
		return -EINVAL;
	}
	r = lv_scan(h, &partial);
	if (r < 0)
		return r;
	active = count_active(h);
	if ((size_t)count < active) {
		lv_log(h, AUTOSCALED_LOG_ERROR,
		       "set_capacity to %d refused: the group has %zu members, and set_capacity only grows it "
		       "(remove_instances shrinks it)", count, active);
		return -ERANGE;
	}
	if ((size_t)count == active)
		return 0;
	/* Warm members first: resumed or restored in about a second, where a
	 * clone boots. */
	size_t before = h->n_members;
	active += lv_warm_take(h, (size_t)count - active);
	for (size_t i = before; fn && i < h->n_members; i++) {
		struct autoscaled_instance in;

		to_instance(h, &h->members[i], &in);
		if ((r = fn(ctx, &in)) != 0)
			return r;
	}
	if ((size_t)count == active)
		return 0;
	if (!lv_eligible_hosts(h, eligible)) {
		lv_log(h, AUTOSCALED_LOG_ERROR, "no host can take new members: none is up with template '%s'",
		       h->opt.template_name);
		return partial ? -EHOSTUNREACH : -ENOENT;
	}
	if (bounded)
		lv_hosts_room(h, eligible, rooms);
	want = (int)((size_t)count - active);
	while (active < (size_t)count) {
		bool fits[LV_MAX_HOSTS];
		struct lv_member m, *nv;
		struct lv_host *host;
		int idx = lv_next_index(h);

		/* Spread by weight over the hosts that still have room. */
		for (size_t i = 0; i < h->n_hosts; i++)
			fits[i] = eligible[i] && (!bounded || rooms[i].fit > 0);
		host = lv_place(h->hosts, h->n_hosts, fits, h->members, h->n_members);
		if (!host && bounded && lv_place(h->hosts, h->n_hosts, eligible, h->members, h->n_members)) {
			lv_log_capped(h, want, made, eligible, rooms);
			return -ENOSPC;
		}
		if (!host) {
			lv_log(h, AUTOSCALED_LOG_ERROR, "no host has a weight above 0 for new members");
			return -ENOSPC;
		}
		r = lv_create_member(h, host, idx, &m);
		if (r < 0)
			return r;
		rooms[host - h->hosts].fit--;
		made++;
		nv = realloc(h->members, (h->n_members + 1) * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		h->members = nv;
		h->members[h->n_members++] = m;
		active++;
		if (fn) {
			struct autoscaled_instance in;

			to_instance(h, &m, &in);
			if ((r = fn(ctx, &in)) != 0)
				return r;
		}
	}
	return 0;
}

static int lv_remove_instances(struct autoscaled_driver_instance *h, int count, const char *const *ids, size_t n_ids,
			       autoscaled_instance_fn fn, void *ctx)
{
	struct lv_member **v;
	bool partial;
	size_t n = 0;
	int r;

	r = lv_scan(h, &partial);
	if (r < 0)
		return r;
	if (n_ids == 0) {
		if (count < 0) {
			lv_log(h, AUTOSCALED_LOG_ERROR, "cannot remove %d members", count);
			return -EINVAL;
		}
		return remove_by_policy(h, (size_t)count, fn, ctx);
	}
	v = calloc(n_ids, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n_ids; i++) {
		size_t j;

		for (j = 0; j < h->n_members; j++)
			if (strcmp(h->members[j].name, ids[i]) == 0 && h->members[j].phase != LV_REMOVING)
				break;
		if (j == h->n_members)
			lv_log(h, AUTOSCALED_LOG_WARNING, "'%s' is not a member%s; not removing it", ids[i],
			       partial ? " on the reachable hosts" : "");
		else
			v[n++] = &h->members[j];
	}
	size_t parked = lv_warm_return(h, v, n, fn, ctx);
	r = lv_remove_members(h, v + parked, n - parked, fn, ctx);
	free(v);
	return r;
}

static const struct autoscaled_source sources[] = {
	{ LV_CPU_SOURCE, "CPU utilisation of the group's domains, in per cent of their vCPUs" },
};

static const struct autoscaled_driver descriptor = {
	.abi_version = AUTOSCALED_DRIVER_ABI_VERSION,
	.struct_size = sizeof(struct autoscaled_driver),
	.name = "libvirt",
	.description = "pools of libvirt domains cloned from a template, on one or more hosts",
	.config_help = config_help,
	.sources = sources,
	.n_sources = sizeof(sources) / sizeof(sources[0]),
	.open = lv_open,
	.close = lv_close,
	.observe = lv_observe,
	.set_capacity = lv_set_capacity,
	.remove_instances = lv_remove_instances,
	.check = lv_check,
};

AUTOSCALED_DRIVER_EXPORT const struct autoscaled_driver *autoscaled_driver_info(void)
{
	return &descriptor;
}
