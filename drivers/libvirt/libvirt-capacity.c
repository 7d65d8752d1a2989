/* libvirt driver: what each host can still take, when the group bounds it
 * (the options memory_overcommit and cpu_overcommit). A host's capacity is
 * its node info (memory and CPUs) times the ratio; what is committed is the
 * sum over its active domains (running or paused: every domain of the host,
 * the group's own, its paused warm members and any other) of their current
 * memory and vCPUs, as libvirt reports them. A new member needs what the
 * template defines. Saved and stopped domains hold no memory and no CPU, so
 * they do not count. */
#include "libvirt-internal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include <libvirt/virterror.h>

bool lv_bounded(const struct autoscaled_driver_instance *h)
{
	return h->opt.memory_overcommit > 0 || h->opt.cpu_overcommit > 0;
}

/* What one more member takes: the template's memory (KiB) and vCPUs on
 * host. */
static int template_need(struct autoscaled_driver_instance *h, struct lv_host *host, unsigned long long *kib,
			 unsigned *vcpus)
{
	virDomainPtr t = virDomainLookupByName(host->conn, h->opt.template_name);
	virDomainInfo info;
	int r;

	if (!t)
		return lv_virt_errno();
	r = virDomainGetInfo(t, &info);
	virDomainFree(t);
	if (r < 0)
		return lv_virt_errno();
	*kib = info.memory;
	*vcpus = info.nrVirtCpu;
	return 0;
}

int lv_host_room(struct autoscaled_driver_instance *h, struct lv_host *host, struct lv_room *ret)
{
	struct lv_room room = { 0 };
	virDomainPtr *doms = NULL;
	virNodeInfo node;
	int n;

	if (!host->conn)
		return -EHOSTUNREACH;
	if (virNodeGetInfo(host->conn, &node) < 0 || template_need(h, host, &room.need_kib, &room.need_vcpus) < 0) {
		lv_log_virt(h, AUTOSCALED_LOG_WARNING, "reading the capacity of '%s' failed", host->uri);
		return lv_virt_errno();
	}
	room.total_kib = node.memory;
	room.cpus = node.cpus;
	n = virConnectListAllDomains(host->conn, &doms, VIR_CONNECT_LIST_DOMAINS_ACTIVE);
	if (n < 0) {
		lv_log_virt(h, AUTOSCALED_LOG_WARNING, "listing the active domains of '%s' failed", host->uri);
		return lv_virt_errno();
	}
	for (int i = 0; i < n; i++) {
		virDomainInfo info;

		if (virDomainGetInfo(doms[i], &info) == 0) {
			room.used_kib += info.memory;
			room.used_vcpus += info.nrVirtCpu;
		}
		virDomainFree(doms[i]);
	}
	free(doms);
	virResetLastError();
	room.fit = lv_fit(&room, h->opt.memory_overcommit, h->opt.cpu_overcommit);
	*ret = room;
	return 0;
}

int lv_hosts_room(struct autoscaled_driver_instance *h, const bool *eligible, struct lv_room *rooms)
{
	long long total = 0;

	for (size_t i = 0; i < h->n_hosts; i++) {
		rooms[i] = (struct lv_room){ .fit = 0 };
		if (!eligible[i])
			continue;
		if (lv_host_room(h, &h->hosts[i], &rooms[i]) < 0)
			rooms[i].fit = 0; /* unknown: place nothing there */
		total += rooms[i].fit;
	}
	return total > INT_MAX ? INT_MAX : (int)total;
}

void lv_publish_room(struct autoscaled_driver_instance *h)
{
	struct lv_room rooms[LV_MAX_HOSTS];
	bool eligible[LV_MAX_HOSTS];
	long long n = 0;

	if (!lv_bounded(h) || !AUTOSCALED_HOST_HAS(h->host, metric))
		return;
	if (lv_eligible_hosts(h, eligible))
		n = lv_hosts_room(h, eligible, rooms);
	/* A warm member that runs or is paused holds its memory and vCPUs
	 * already, so taking it needs no more room; a saved or stopped one
	 * needs what a clone needs, and is in the hosts' room already. */
	for (size_t i = 0; i < h->n_warm; i++)
		if (h->warm[i].host->conn && h->warm[i].phase == LV_ACTIVE &&
		    (h->warm[i].warm == LV_W_BOOTING || h->warm[i].warm == LV_W_PAUSED))
			n++;
	h->host->metric(h->host, AUTOSCALED_METRIC_HOST_ROOM, NULL, (double)(n > INT_MAX ? INT_MAX : n));
}

void lv_log_capped(struct autoscaled_driver_instance *h, int want, int made, const bool *eligible,
		   const struct lv_room *rooms)
{
	char detail[1024] = "";
	size_t len = 0;

	for (size_t i = 0; i < h->n_hosts && len < sizeof(detail); i++) {
		if (!eligible[i])
			continue;
		len += (size_t)snprintf(detail + len, sizeof(detail) - len,
					"%s'%s': %llu of %llu MiB and %u of %u vCPUs committed, a member needs %llu MiB "
					"and %u vCPUs", len ? "; " : "", h->hosts[i].uri, rooms[i].used_kib / 1024,
					rooms[i].total_kib / 1024, rooms[i].used_vcpus, rooms[i].cpus,
					rooms[i].need_kib / 1024, rooms[i].need_vcpus);
	}
	lv_log(h, AUTOSCALED_LOG_ERROR,
	       "scale-out capped by hosts, not by max: %d of %d new members fit (memory_overcommit %g, "
	       "cpu_overcommit %g; %s)",
	       made, want, h->opt.memory_overcommit, h->opt.cpu_overcommit, detail);
}
