/* libvirt driver: the member tag, the <autoscaled:member> element of a
 * domain's <metadata> that says which group it belongs to and in which
 * phase it is (libvirt-internal.h): reading it and writing it. */
#include "libvirt-internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libvirt/virterror.h>
#include <libxml/parser.h>
#include <libxml/tree.h>

static const char *const phase_names[] = { "creating", "active", "removing" };
static const char *const warm_names[] = { "", "booting", "paused", "saved", "stopped" };

const char *lv_warm_name(enum lv_warm w)
{
	return (unsigned)w < sizeof(warm_names) / sizeof(warm_names[0]) ? warm_names[w] : "";
}

int lv_parse_tag(const char *xml, const char *group, struct lv_member *m)
{
	xmlDocPtr doc = xmlReadMemory(xml, (int)strlen(xml), "member.xml", NULL, XML_PARSE_NONET | XML_PARSE_NOERROR |
										  XML_PARSE_NOWARNING);
	xmlNodePtr root = doc ? xmlDocGetRootElement(doc) : NULL;
	xmlChar *g = NULL, *idx = NULL, *created = NULL, *started = NULL, *state = NULL, *warm = NULL, *parked = NULL;
	int r = -EINVAL;

	if (!root || xmlStrcmp(root->name, BAD_CAST "member") != 0)
		goto out;
	g = xmlGetProp(root, BAD_CAST "group");
	idx = xmlGetProp(root, BAD_CAST "index");
	created = xmlGetProp(root, BAD_CAST "created");
	started = xmlGetProp(root, BAD_CAST "started");
	state = xmlGetProp(root, BAD_CAST "state");
	warm = xmlGetProp(root, BAD_CAST "warm");
	parked = xmlGetProp(root, BAD_CAST "parked");
	if (!g || strcmp((const char *)g, group) != 0 || !idx)
		goto out;
	char *end;
	long i = strtol((const char *)idx, &end, 10);
	if (*end || i < 0 || i > 999999999)
		goto out;
	m->index = (int)i;
	m->created_ms = lv_parse_time((const char *)created);
	m->started_ms = lv_parse_time((const char *)started);
	m->phase = LV_ACTIVE;
	for (int p = 0; state && p < 3; p++)
		if (strcmp((const char *)state, phase_names[p]) == 0)
			m->phase = p;
	m->warm = LV_W_NONE;
	m->parked_ms = lv_parse_time((const char *)parked);
	if (warm) {
		/* A marker this version does not know is still a warm member:
		 * never one to count (the scan removes what it cannot use). */
		m->warm = LV_W_BOOTING;
		for (int w = LV_W_BOOTING; w <= LV_W_STOPPED; w++)
			if (strcmp((const char *)warm, warm_names[w]) == 0)
				m->warm = w;
	}
	r = 0;
out:
	xmlFree(g);
	xmlFree(idx);
	xmlFree(created);
	xmlFree(started);
	xmlFree(state);
	xmlFree(warm);
	xmlFree(parked);
	xmlFreeDoc(doc);
	return r;
}

uint64_t lv_tag_read_group(const char *xml)
{
	xmlDocPtr doc = xmlReadMemory(xml, (int)strlen(xml), "member.xml", NULL, XML_PARSE_NONET | XML_PARSE_NOERROR |
										  XML_PARSE_NOWARNING);
	xmlNodePtr root = doc ? xmlDocGetRootElement(doc) : NULL;
	xmlChar *g = root && xmlStrcmp(root->name, BAD_CAST "member") == 0 ? xmlGetProp(root, BAD_CAST "group") : NULL;
	uint64_t id = g ? lv_tag_group_id((const char *)g) : 0;

	xmlFree(g);
	xmlFreeDoc(doc);
	return id;
}

xmlNodePtr lv_make_tag(const char *group, const struct lv_member *m)
{
	xmlNodePtr n = xmlNewNode(NULL, BAD_CAST "member");
	char buf[64];

	xmlSetProp(n, BAD_CAST "group", BAD_CAST group);
	snprintf(buf, sizeof(buf), "%d", m->index);
	xmlSetProp(n, BAD_CAST "index", BAD_CAST buf);
	if (m->created_ms) {
		lv_format_time(m->created_ms, buf, sizeof(buf));
		xmlSetProp(n, BAD_CAST "created", BAD_CAST buf);
	}
	if (m->started_ms) {
		lv_format_time(m->started_ms, buf, sizeof(buf));
		xmlSetProp(n, BAD_CAST "started", BAD_CAST buf);
	}
	xmlSetProp(n, BAD_CAST "state", BAD_CAST phase_names[m->phase]);
	if (m->warm != LV_W_NONE) {
		xmlSetProp(n, BAD_CAST "warm", BAD_CAST lv_warm_name(m->warm));
		if (m->parked_ms) {
			lv_format_time(m->parked_ms, buf, sizeof(buf));
			xmlSetProp(n, BAD_CAST "parked", BAD_CAST buf);
		}
	}
	return n;
}

int lv_set_tag(struct autoscaled_driver_instance *h, virDomainPtr dom, const struct lv_member *m)
{
	xmlNodePtr n = lv_make_tag(h->host->group, m);
	xmlBufferPtr buf = xmlBufferCreate();
	unsigned flags = VIR_DOMAIN_AFFECT_CONFIG;
	int r = 0;

	xmlNodeDump(buf, NULL, n, 0, 0);
	if (virDomainIsActive(dom) == 1)
		flags |= VIR_DOMAIN_AFFECT_LIVE;
	if (virDomainSetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, (const char *)xmlBufferContent(buf), LV_NS_PREFIX,
				 LV_NS, flags) < 0) {
		lv_log_virt(h, AUTOSCALED_LOG_WARNING, "tagging '%s' as %s%s%s failed", m->name, phase_names[m->phase],
			    m->warm ? " warm " : "", lv_warm_name(m->warm));
		r = lv_virt_errno();
	}
	xmlBufferFree(buf);
	xmlFreeNode(n);
	return r;
}
