/* libvirt driver, scale-in: graceful shutdown with a deadline, then destroy,
 * undefine (with fewer flags where the hypervisor refuses some) and delete
 * the member's own volumes. */
#include "libvirt-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libvirt/virterror.h>
#include <libxml/parser.h>
#include <libxml/tree.h>

#define POLL_MS 100

static bool refused_flags(void)
{
	int code = virGetLastErrorCode();

	return code == VIR_ERR_INVALID_ARG || code == VIR_ERR_NO_SUPPORT || code == VIR_ERR_ARGUMENT_UNSUPPORTED;
}

/* The volumes of dom that belong to member `name` by their names; a disk
 * shared with others (an ISO, the template's own image) is never one. */
static size_t own_volumes(struct autoscaled_driver_instance *h, virConnectPtr conn, virDomainPtr dom,
			  const char *name, virStorageVolPtr *vols, size_t max)
{
	char *xml = virDomainGetXMLDesc(dom, VIR_DOMAIN_XML_INACTIVE);
	xmlDocPtr doc = xml ? xmlReadMemory(xml, (int)strlen(xml), "domain.xml", NULL, XML_PARSE_NONET) : NULL;
	xmlNodePtr root = doc ? xmlDocGetRootElement(doc) : NULL;
	size_t n = 0;

	for (xmlNodePtr devs = root ? root->children : NULL; devs; devs = devs->next) {
		if (devs->type != XML_ELEMENT_NODE || xmlStrcmp(devs->name, BAD_CAST "devices") != 0)
			continue;
		for (xmlNodePtr d = devs->children; d && n < max; d = d->next) {
			virStorageVolPtr v = NULL;
			char owner[LV_NAME_MAX];

			if (d->type != XML_ELEMENT_NODE || xmlStrcmp(d->name, BAD_CAST "disk") != 0)
				continue;
			for (xmlNodePtr s = d->children; s && !v; s = s->next) {
				xmlChar *file, *pool, *vol;

				if (s->type != XML_ELEMENT_NODE || xmlStrcmp(s->name, BAD_CAST "source") != 0)
					continue;
				file = xmlGetProp(s, BAD_CAST "file");
				pool = xmlGetProp(s, BAD_CAST "pool");
				vol = xmlGetProp(s, BAD_CAST "volume");
				if (file) {
					v = virStorageVolLookupByPath(conn, (const char *)file);
				} else if (pool && vol) {
					virStoragePoolPtr p = virStoragePoolLookupByName(conn, (const char *)pool);

					v = p ? virStorageVolLookupByName(p, (const char *)vol) : NULL;
					if (p)
						virStoragePoolFree(p);
				}
				xmlFree(file);
				xmlFree(pool);
				xmlFree(vol);
			}
			if (!v) {
				virResetLastError();
				continue;
			}
			if (lv_volume_owner(h->opt.name_pattern, h->host->group, virStorageVolGetName(v), owner,
					    sizeof(owner)) >= 0 &&
			    strcmp(owner, name) == 0)
				vols[n++] = v;
			else
				virStorageVolFree(v);
		}
	}
	xmlFreeDoc(doc);
	free(xml);
	return n;
}

static int undefine(struct autoscaled_driver_instance *h, virDomainPtr dom, const char *name)
{
	/* From the most thorough to none; the test driver, for one, refuses
	 * NVRAM and checkpoint flags. */
	static const unsigned flag_sets[] = {
		VIR_DOMAIN_UNDEFINE_MANAGED_SAVE | VIR_DOMAIN_UNDEFINE_SNAPSHOTS_METADATA |
			VIR_DOMAIN_UNDEFINE_CHECKPOINTS_METADATA | VIR_DOMAIN_UNDEFINE_NVRAM,
		VIR_DOMAIN_UNDEFINE_MANAGED_SAVE | VIR_DOMAIN_UNDEFINE_SNAPSHOTS_METADATA | VIR_DOMAIN_UNDEFINE_NVRAM,
		VIR_DOMAIN_UNDEFINE_MANAGED_SAVE | VIR_DOMAIN_UNDEFINE_SNAPSHOTS_METADATA,
		0,
	};

	for (size_t i = 0; i < sizeof(flag_sets) / sizeof(flag_sets[0]); i++) {
		if (virDomainUndefineFlags(dom, flag_sets[i]) == 0)
			return 0;
		if (!refused_flags())
			break;
	}
	if (virGetLastErrorCode() == VIR_ERR_NO_DOMAIN)
		return 0;
	lv_log_virt(h, AUTOSCALED_LOG_ERROR, "undefining '%s' failed", name);
	return lv_virt_errno();
}

int lv_finish_removal(struct autoscaled_driver_instance *h, struct lv_host *host, virDomainPtr dom, const char *name)
{
	virStorageVolPtr vols[LV_MAX_DISKS];
	size_t n;
	int r;

	n = own_volumes(h, host->conn, dom, name, vols, LV_MAX_DISKS);
	if (virDomainIsActive(dom) == 1 && virDomainDestroy(dom) < 0) {
		lv_log_virt(h, AUTOSCALED_LOG_ERROR, "destroying '%s' on '%s' failed", name, host->uri);
		r = lv_virt_errno();
		goto out;
	}
	r = undefine(h, dom, name);
	if (r < 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		char vname[LV_NAME_MAX + 32];

		/* Every libvirt call resets the last error: take the name first. */
		snprintf(vname, sizeof(vname), "%s", virStorageVolGetName(vols[i]));
		if (virStorageVolDelete(vols[i], 0) < 0)
			lv_log_virt(h, AUTOSCALED_LOG_WARNING, "deleting volume '%s' of '%s' failed; it will be swept later",
				    vname, name);
	}
	lv_log(h, AUTOSCALED_LOG_INFO, "removed '%s' from '%s'", name, host->uri);
out:
	for (size_t i = 0; i < n; i++)
		virStorageVolFree(vols[i]);
	return r;
}

static void ask_shutdown(struct autoscaled_driver_instance *h, virDomainPtr dom, const char *name)
{
	unsigned flags = h->opt.shutdown_mode == LV_SHUTDOWN_AGENT ? VIR_DOMAIN_SHUTDOWN_GUEST_AGENT
								  : VIR_DOMAIN_SHUTDOWN_ACPI_POWER_BTN;

	if (virDomainShutdownFlags(dom, flags) == 0)
		return;
	/* The hypervisor's own choice of method, where it refuses ours. */
	if (refused_flags() && virDomainShutdown(dom) == 0)
		return;
	lv_log_virt(h, AUTOSCALED_LOG_WARNING, "asking '%s' to shut down failed; it will be destroyed", name);
}

static void sleep_ms(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

int lv_remove_members(struct autoscaled_driver_instance *h, struct lv_member **v, size_t n, autoscaled_instance_fn fn,
		      void *ctx)
{
	virDomainPtr *doms = calloc(n ? n : 1, sizeof(*doms));
	int64_t deadline;
	int r = 0;

	if (!doms)
		return -ENOMEM;
	/* All victims are asked at once and share one deadline, so removing
	 * five takes as long as the slowest, not the sum. */
	for (size_t i = 0; i < n; i++) {
		struct lv_member *m = v[i];

		if (!lv_connect(h, m->host)) {
			lv_log(h, AUTOSCALED_LOG_ERROR, "cannot remove '%s': host '%s' is unreachable", m->name,
			       m->host->uri);
			r = r ? r : -EHOSTUNREACH;
			continue;
		}
		doms[i] = virDomainLookupByName(m->host->conn, m->name);
		if (!doms[i]) {
			lv_log_virt(h, AUTOSCALED_LOG_ERROR, "cannot remove '%s' from '%s'", m->name, m->host->uri);
			r = r ? r : lv_virt_errno();
			continue;
		}
		/* The mark lets a restart finish the job after a crash. */
		m->phase = LV_REMOVING;
		lv_set_tag(h, doms[i], m);
		if (virDomainIsActive(doms[i]) == 1)
			ask_shutdown(h, doms[i], m->name);
	}
	deadline = clock_mono_ms() + h->opt.shutdown_timeout_ms;
	for (;;) {
		bool all_off = true;

		for (size_t i = 0; i < n && all_off; i++)
			all_off = !doms[i] || virDomainIsActive(doms[i]) != 1;
		if (all_off || clock_mono_ms() >= deadline)
			break;
		sleep_ms(POLL_MS);
	}
	for (size_t i = 0; i < n; i++) {
		struct autoscaled_instance in;
		int e;

		if (!doms[i])
			continue;
		if (virDomainIsActive(doms[i]) == 1)
			lv_log(h, AUTOSCALED_LOG_NOTICE, "'%s' did not shut down within %lld ms; destroying it",
			       v[i]->name, (long long)h->opt.shutdown_timeout_ms);
		e = lv_finish_removal(h, v[i]->host, doms[i], v[i]->name);
		virDomainFree(doms[i]);
		if (e < 0) {
			r = r ? r : e;
			continue;
		}
		v[i]->dom_state = VIR_DOMAIN_SHUTOFF;
		in = (struct autoscaled_instance){
			.id = v[i]->name,
			.state = AUTOSCALED_INSTANCE_STOPPING,
			.created_ms = v[i]->created_ms,
			.location = v[i]->host->uri,
		};
		if (fn && (e = fn(ctx, &in)) != 0 && r == 0)
			r = e;
	}
	free(doms);
	return r;
}
