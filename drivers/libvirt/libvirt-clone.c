/* libvirt driver, scale-out: cloning the template domain and its volumes,
 * and sweeping the volumes an interrupted scale-out left. */
#include "libvirt-internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libvirt/virterror.h>
#include <libxml/parser.h>
#include <libxml/tree.h>

static xmlNodePtr child(xmlNodePtr parent, const char *name)
{
	for (xmlNodePtr c = parent ? parent->children : NULL; c; c = c->next)
		if (c->type == XML_ELEMENT_NODE && xmlStrcmp(c->name, BAD_CAST name) == 0)
			return c;
	return NULL;
}

static void remove_children(xmlNodePtr parent, const char *name)
{
	xmlNodePtr c = parent ? parent->children : NULL;

	while (c) {
		xmlNodePtr next = c->next;

		if (c->type == XML_ELEMENT_NODE && xmlStrcmp(c->name, BAD_CAST name) == 0) {
			xmlUnlinkNode(c);
			xmlFreeNode(c);
		}
		c = next;
	}
}

/* The storage volume behind a <disk>, or NULL when it is not a pool volume. */
static virStorageVolPtr disk_volume(virConnectPtr conn, xmlNodePtr disk)
{
	xmlNodePtr src = child(disk, "source");
	xmlChar *type = xmlGetProp(disk, BAD_CAST "type");
	virStorageVolPtr vol = NULL;

	if (src && type && xmlStrcmp(type, BAD_CAST "file") == 0) {
		xmlChar *file = xmlGetProp(src, BAD_CAST "file");

		if (file)
			vol = virStorageVolLookupByPath(conn, (const char *)file);
		xmlFree(file);
	} else if (src && type && xmlStrcmp(type, BAD_CAST "volume") == 0) {
		xmlChar *pool = xmlGetProp(src, BAD_CAST "pool"), *name = xmlGetProp(src, BAD_CAST "volume");
		virStoragePoolPtr p = pool ? virStoragePoolLookupByName(conn, (const char *)pool) : NULL;

		if (p && name)
			vol = virStorageVolLookupByName(p, (const char *)name);
		if (p)
			virStoragePoolFree(p);
		xmlFree(pool);
		xmlFree(name);
	}
	xmlFree(type);
	return vol;
}

static bool is_disk(xmlNodePtr n)
{
	xmlChar *dev;
	bool r;

	if (n->type != XML_ELEMENT_NODE || xmlStrcmp(n->name, BAD_CAST "disk") != 0)
		return false;
	dev = xmlGetProp(n, BAD_CAST "device");
	r = !dev || xmlStrcmp(dev, BAD_CAST "disk") == 0;
	xmlFree(dev);
	return r;
}

/* The format of a volume from its XML ("qcow2", "raw"), into buf. */
static void volume_format(virStorageVolPtr vol, char *buf, size_t len)
{
	char *xml = virStorageVolGetXMLDesc(vol, 0);
	xmlDocPtr doc = xml ? xmlReadMemory(xml, (int)strlen(xml), "vol.xml", NULL, XML_PARSE_NONET) : NULL;
	xmlNodePtr fmt = doc ? child(child(xmlDocGetRootElement(doc), "target"), "format") : NULL;
	xmlChar *type = fmt ? xmlGetProp(fmt, BAD_CAST "type") : NULL;

	snprintf(buf, len, "%s", type ? (const char *)type : "raw");
	xmlFree(type);
	xmlFreeDoc(doc);
	free(xml);
}

/* Creates the volume for disk k of member `name` from src; on success
 * stores it in *ret. */
static int make_volume(struct autoscaled_driver_instance *h, struct lv_host *host, virStorageVolPtr src,
		       const char *name, int k, virStorageVolPtr *ret)
{
	const char *srcname = virStorageVolGetName(src), *ext = strrchr(srcname, '.');
	char vname[LV_NAME_MAX + 32], fmt[32], xml[2048], poolname[LV_NAME_MAX];
	virStoragePoolPtr pool;
	virStorageVolInfo info;
	virStorageVolPtr vol;

	if (!ext || ext == srcname || strlen(ext) > 16)
		ext = "";
	if (k == 0)
		snprintf(vname, sizeof(vname), "%s%s", name, ext);
	else
		snprintf(vname, sizeof(vname), "%s-disk%d%s", name, k, ext);
	pool = h->opt.pool ? virStoragePoolLookupByName(host->conn, h->opt.pool) : virStoragePoolLookupByVolume(src);
	if (!pool) {
		lv_log_virt(h, AUTOSCALED_LOG_ERROR, "no storage pool '%s' for volume '%s' on '%s'",
			    h->opt.pool ? h->opt.pool : "(the template's)", vname, host->uri);
		return lv_virt_errno();
	}
	if (virStorageVolGetInfo(src, &info) < 0) {
		lv_log_virt(h, AUTOSCALED_LOG_ERROR, "reading template volume '%s' on '%s' failed", srcname, host->uri);
		virStoragePoolFree(pool);
		return lv_virt_errno();
	}
	volume_format(src, fmt, sizeof(fmt));
	snprintf(poolname, sizeof(poolname), "%s", virStoragePoolGetName(pool));
	if (h->opt.volume_mode == LV_OVERLAY) {
		char *path = virStorageVolGetPath(src);
		xmlChar *esc_name = xmlEncodeSpecialChars(NULL, BAD_CAST vname);
		xmlChar *esc_path = xmlEncodeSpecialChars(NULL, BAD_CAST(path ? path : ""));

		snprintf(xml, sizeof(xml),
			 "<volume><name>%s</name><capacity unit='bytes'>%llu</capacity>"
			 "<target><format type='qcow2'/></target>"
			 "<backingStore><path>%s</path><format type='%s'/></backingStore></volume>",
			 esc_name, info.capacity, esc_path, fmt);
		xmlFree(esc_name);
		xmlFree(esc_path);
		free(path);
		vol = virStorageVolCreateXML(pool, xml, 0);
	} else {
		xmlChar *esc_name = xmlEncodeSpecialChars(NULL, BAD_CAST vname);

		snprintf(xml, sizeof(xml),
			 "<volume><name>%s</name><capacity unit='bytes'>%llu</capacity>"
			 "<allocation unit='bytes'>%llu</allocation><target><format type='%s'/></target></volume>",
			 esc_name, info.capacity, info.allocation, fmt);
		xmlFree(esc_name);
		vol = virStorageVolCreateXMLFrom(pool, xml, src, 0);
	}
	if (!vol) {
		/* Every libvirt call resets the last error: log it first. */
		lv_log_virt(h, AUTOSCALED_LOG_ERROR, "creating volume '%s' (%s of '%s') in pool '%s' on '%s' failed",
			    vname, h->opt.volume_mode == LV_OVERLAY ? "overlay" : "clone", srcname, poolname,
			    host->uri);
		virStoragePoolFree(pool);
		return lv_virt_errno();
	}
	virStoragePoolFree(pool);
	*ret = vol;
	return 0;
}

/* Points a <disk> at a new volume. */
static void retarget_disk(struct autoscaled_driver_instance *h, xmlNodePtr disk, virStorageVolPtr vol)
{
	xmlNodePtr src = child(disk, "source");
	xmlChar *type = xmlGetProp(disk, BAD_CAST "type");

	if (xmlStrcmp(type, BAD_CAST "volume") == 0) {
		xmlSetProp(src, BAD_CAST "volume", BAD_CAST virStorageVolGetName(vol));
		if (h->opt.pool)
			xmlSetProp(src, BAD_CAST "pool", BAD_CAST h->opt.pool);
	} else {
		char *path = virStorageVolGetPath(vol);

		xmlSetProp(src, BAD_CAST "file", BAD_CAST(path ? path : ""));
		free(path);
	}
	xmlFree(type);
	/* A backing chain of the template's disk is not the new volume's. */
	remove_children(disk, "backingStore");
	if (h->opt.volume_mode == LV_OVERLAY) {
		xmlNodePtr drv = child(disk, "driver");

		if (!drv)
			drv = xmlNewChild(disk, NULL, BAD_CAST "driver", NULL);
		xmlSetProp(drv, BAD_CAST "type", BAD_CAST "qcow2");
	}
}

static void delete_volumes(struct autoscaled_driver_instance *h, virStorageVolPtr *vols, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char vname[LV_NAME_MAX + 32];

		snprintf(vname, sizeof(vname), "%s", virStorageVolGetName(vols[i]));
		if (virStorageVolDelete(vols[i], 0) < 0)
			lv_log_virt(h, AUTOSCALED_LOG_ERROR, "deleting volume '%s' failed; it will be swept later",
				    vname);
		virStorageVolFree(vols[i]);
	}
}

/* Rewrites the template's XML for member m; creates its volumes into vols. */
/* A serial port, console or channel that logs to a file would make every
 * clone open the template's file, and the second one fails to start
 * ("Device or resource busy"). Each member gets its own file next to the
 * template's: DIR/MEMBER-BASENAME. */
static void retarget_char_files(xmlNodePtr devices, const char *member)
{
	static const char *const kinds[] = { "serial", "console", "channel", "parallel" };

	for (xmlNodePtr d = devices ? devices->children : NULL; d; d = d->next) {
		bool chardev = false;
		xmlChar *type;

		if (d->type != XML_ELEMENT_NODE)
			continue;
		for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
			chardev = chardev || xmlStrcmp(d->name, BAD_CAST kinds[i]) == 0;
		type = chardev ? xmlGetProp(d, BAD_CAST "type") : NULL;
		if (type && xmlStrcmp(type, BAD_CAST "file") == 0) {
			for (xmlNodePtr c = d->children; c; c = c->next) {
				xmlChar *path;
				const char *slash;
				char *renamed;
				size_t len;

				if (c->type != XML_ELEMENT_NODE || xmlStrcmp(c->name, BAD_CAST "source") != 0)
					continue;
				path = xmlGetProp(c, BAD_CAST "path");
				if (!path)
					continue;
				slash = strrchr((const char *)path, '/');
				len = strlen((const char *)path) + strlen(member) + 2;
				renamed = malloc(len);
				if (renamed) {
					snprintf(renamed, len, "%.*s%s-%s", slash ? (int)(slash - (const char *)path + 1) : 0,
						 (const char *)path, member, slash ? slash + 1 : (const char *)path);
					xmlSetProp(c, BAD_CAST "path", BAD_CAST renamed);
					free(renamed);
				}
				xmlFree(path);
			}
		}
		xmlFree(type);
	}
}

static int rewrite(struct autoscaled_driver_instance *h, struct lv_host *host, xmlDocPtr doc,
		   const struct lv_member *m, virStorageVolPtr *vols, size_t *n_vols)
{
	xmlNodePtr root = xmlDocGetRootElement(doc), devices = child(root, "devices"), md, tag;
	int k = 0, r;

	xmlNodeSetContent(child(root, "name"), BAD_CAST m->name);
	/* libvirt makes a new uuid and new MACs when they are absent. */
	remove_children(root, "uuid");
	for (xmlNodePtr d = devices ? devices->children : NULL; d; d = d->next) {
		if (d->type == XML_ELEMENT_NODE && xmlStrcmp(d->name, BAD_CAST "interface") == 0) {
			remove_children(d, "mac");
			remove_children(d, "target");
		}
	}
	retarget_char_files(devices, m->name);
	for (xmlNodePtr d = devices ? devices->children : NULL; d; d = d->next) {
		virStorageVolPtr src;

		if (!is_disk(d))
			continue;
		src = disk_volume(host->conn, d);
		if (!src) {
			/* Shared or raw devices stay as they are in the template. */
			virResetLastError();
			continue;
		}
		if (*n_vols == LV_MAX_DISKS) {
			virStorageVolFree(src);
			lv_log(h, AUTOSCALED_LOG_ERROR, "template '%s' has more than %d disks", h->opt.template_name,
			       LV_MAX_DISKS);
			return -E2BIG;
		}
		r = make_volume(h, host, src, m->name, k++, &vols[*n_vols]);
		virStorageVolFree(src);
		if (r < 0)
			return r;
		retarget_disk(h, d, vols[(*n_vols)++]);
	}
	md = child(root, "metadata");
	if (!md)
		md = xmlNewChild(root, NULL, BAD_CAST "metadata", NULL);
	for (xmlNodePtr c = md->children; c;) {
		xmlNodePtr next = c->next;

		/* The template's own tag, if any, must not make a twin. */
		if (c->ns && xmlStrcmp(c->ns->href, BAD_CAST LV_NS) == 0) {
			xmlUnlinkNode(c);
			xmlFreeNode(c);
		}
		c = next;
	}
	tag = lv_make_tag(h->host->group, m);
	xmlSetNs(tag, xmlNewNs(tag, BAD_CAST LV_NS, BAD_CAST LV_NS_PREFIX));
	xmlAddChild(md, tag);
	return 0;
}

/* Makes member `index` on host: a member (warm LV_W_NONE), or a warm
 * member started to warm up (LV_W_BOOTING) or only defined (LV_W_STOPPED).
 * The tag says "creating" from the define on, so that a crash before the
 * last step leaves a mark the scan finishes or removes. */
static int create(struct autoscaled_driver_instance *h, struct lv_host *host, int index, enum lv_warm warm,
		  struct lv_member *ret)
{
	struct lv_member m = { .index = index, .host = host, .phase = LV_CREATING, .warm = warm, .cpu_percent = -1 };
	virStorageVolPtr vols[LV_MAX_DISKS];
	size_t n_vols = 0;
	virDomainPtr tmpl, dom = NULL;
	xmlDocPtr doc = NULL;
	xmlChar *out = NULL;
	char *xml = NULL;
	int len, r;

	r = lv_expand_name(h->opt.name_pattern, h->host->group, index, m.name, sizeof(m.name));
	if (r < 0)
		return r;
	m.created_ms = clock_wall_ms();
	tmpl = virDomainLookupByName(host->conn, h->opt.template_name);
	if (!tmpl) {
		lv_log_virt(h, AUTOSCALED_LOG_ERROR, "template domain '%s' not found on '%s'", h->opt.template_name,
			    host->uri);
		return -ENOENT;
	}
	xml = virDomainGetXMLDesc(tmpl, VIR_DOMAIN_XML_INACTIVE);
	virDomainFree(tmpl);
	if (!xml) {
		lv_log_virt(h, AUTOSCALED_LOG_ERROR, "reading template '%s' on '%s' failed", h->opt.template_name,
			    host->uri);
		return lv_virt_errno();
	}
	doc = xmlReadMemory(xml, (int)strlen(xml), "domain.xml", NULL, XML_PARSE_NONET);
	free(xml);
	if (!doc || !xmlDocGetRootElement(doc)) {
		lv_log(h, AUTOSCALED_LOG_ERROR, "template '%s' on '%s' has XML libxml2 cannot parse",
		       h->opt.template_name, host->uri);
		r = -EINVAL;
		goto fail;
	}
	r = rewrite(h, host, doc, &m, vols, &n_vols);
	if (r < 0)
		goto fail;
	xmlDocDumpMemory(doc, &out, &len);
	dom = out ? virDomainDefineXML(host->conn, (const char *)out) : NULL;
	if (!dom) {
		lv_log_virt(h, AUTOSCALED_LOG_ERROR, "defining '%s' on '%s' was refused", m.name, host->uri);
		r = out ? lv_virt_errno() : -ENOMEM;
		goto fail;
	}
	if (warm != LV_W_STOPPED && virDomainCreate(dom) < 0) {
		lv_log_virt(h, AUTOSCALED_LOG_ERROR, "starting new %smember '%s' on '%s' failed; removing it",
			    warm ? "warm " : "", m.name, host->uri);
		r = lv_virt_errno();
		if (virDomainUndefine(dom) < 0)
			lv_log_virt(h, AUTOSCALED_LOG_ERROR, "undefining '%s' failed; the next scan retries", m.name);
		goto fail;
	}
	m.phase = LV_ACTIVE;
	if (warm == LV_W_STOPPED) {
		m.parked_ms = clock_wall_ms();
		m.dom_state = VIR_DOMAIN_SHUTOFF;
	} else {
		m.started_ms = clock_wall_ms();
		m.dom_state = VIR_DOMAIN_RUNNING;
	}
	/* A failure here is repaired by the next scan (creating + running);
	 * a stopped warm member that stays "creating" is removed by it. */
	lv_set_tag(h, dom, &m);
	lv_log(h, AUTOSCALED_LOG_INFO, "created %s%s'%s' on '%s'", warm ? "warm member " : "",
	       warm == LV_W_STOPPED ? "(stopped) " : "", m.name, host->uri);
	for (size_t i = 0; i < n_vols; i++)
		virStorageVolFree(vols[i]);
	virDomainFree(dom);
	xmlFree(out);
	xmlFreeDoc(doc);
	*ret = m;
	return 0;
fail:
	/* Only what this call made is removed; nothing else is touched. */
	delete_volumes(h, vols, n_vols);
	if (dom)
		virDomainFree(dom);
	xmlFree(out);
	xmlFreeDoc(doc);
	return r < 0 ? r : -EIO;
}

int lv_create_member(struct autoscaled_driver_instance *h, struct lv_host *host, int index, struct lv_member *ret)
{
	return create(h, host, index, LV_W_NONE, ret);
}

int lv_create_warm(struct autoscaled_driver_instance *h, struct lv_host *host, int index, struct lv_member *ret)
{
	return create(h, host, index, h->opt.warm.state == LV_WARM_STOPPED ? LV_W_STOPPED : LV_W_BOOTING, ret);
}

/* The pools that hold member volumes on host: the template disks' pools, or
 * the configured one. Also the template's volume paths, never swept. */
static size_t member_pools(struct autoscaled_driver_instance *h, struct lv_host *host, virStoragePoolPtr *pools,
			   size_t max, char **keep, size_t *n_keep)
{
	virDomainPtr tmpl = virDomainLookupByName(host->conn, h->opt.template_name);
	char *xml = tmpl ? virDomainGetXMLDesc(tmpl, VIR_DOMAIN_XML_INACTIVE) : NULL;
	xmlDocPtr doc = xml ? xmlReadMemory(xml, (int)strlen(xml), "domain.xml", NULL, XML_PARSE_NONET) : NULL;
	xmlNodePtr devices = doc ? child(xmlDocGetRootElement(doc), "devices") : NULL;
	size_t n = 0;

	*n_keep = 0;
	if (h->opt.pool && (pools[n] = virStoragePoolLookupByName(host->conn, h->opt.pool)))
		n++;
	for (xmlNodePtr d = devices ? devices->children : NULL; d; d = d->next) {
		virStorageVolPtr v;
		virStoragePoolPtr p;

		if (!is_disk(d) || !(v = disk_volume(host->conn, d)))
			continue;
		if (*n_keep < LV_MAX_DISKS)
			keep[(*n_keep)++] = virStorageVolGetPath(v);
		p = h->opt.pool ? NULL : virStoragePoolLookupByVolume(v);
		virStorageVolFree(v);
		if (!p)
			continue;
		bool dup = false;
		for (size_t i = 0; i < n && !dup; i++)
			dup = strcmp(virStoragePoolGetName(pools[i]), virStoragePoolGetName(p)) == 0;
		if (dup || n == max)
			virStoragePoolFree(p);
		else
			pools[n++] = p;
	}
	virResetLastError();
	xmlFreeDoc(doc);
	free(xml);
	if (tmpl)
		virDomainFree(tmpl);
	return n;
}

void lv_sweep_volumes(struct autoscaled_driver_instance *h, struct lv_host *host)
{
	virStoragePoolPtr pools[LV_MAX_DISKS + 1];
	char *keep[LV_MAX_DISKS];
	size_t n_keep, n = member_pools(h, host, pools, LV_MAX_DISKS + 1, keep, &n_keep);

	for (size_t i = 0; i < n; i++) {
		virStorageVolPtr *vols = NULL;
		int nv = virStoragePoolListAllVolumes(pools[i], &vols, 0);

		for (int j = 0; j < nv; j++) {
			char member[LV_NAME_MAX], *path = virStorageVolGetPath(vols[j]);
			const char *vname = virStorageVolGetName(vols[j]);
			virDomainPtr dom;
			bool kept = false;

			for (size_t k = 0; k < n_keep && !kept; k++)
				kept = path && keep[k] && strcmp(path, keep[k]) == 0;
			free(path);
			if (kept || lv_volume_owner(h->opt.name_pattern, h->host->group, vname, member, sizeof(member)) < 0) {
				virStorageVolFree(vols[j]);
				continue;
			}
			dom = virDomainLookupByName(host->conn, member);
			if (dom) {
				virDomainFree(dom);
			} else if (virGetLastErrorCode() == VIR_ERR_NO_DOMAIN) {
				lv_log(h, AUTOSCALED_LOG_NOTICE,
				       "deleting volume '%s' on '%s': no domain '%s' uses it (an interrupted scale-out "
				       "or scale-in left it)",
				       vname, host->uri, member);
				if (virStorageVolDelete(vols[j], 0) < 0)
					lv_log_virt(h, AUTOSCALED_LOG_ERROR, "deleting volume '%s' failed", vname);
			}
			virResetLastError();
			virStorageVolFree(vols[j]);
		}
		if (nv < 0)
			virResetLastError();
		free(vols);
		virStoragePoolFree(pools[i]);
	}
	for (size_t k = 0; k < n_keep; k++)
		free(keep[k]);
}
