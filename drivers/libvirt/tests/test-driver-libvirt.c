/* The libvirt driver, loaded as the daemon loads it (src/agent/driver.c from
 * $AUTOSCALED_DRIVER_DIR), driven on libvirt's test hypervisor.
 *
 * The test keeps its own connection to test:///default open for the whole
 * run, so the driver's connections to test:///default share its state: the
 * test sets up templates and volumes (copied from tests/data/libvirt/
 * node.xml) and checks what the driver did, domain by domain and volume by
 * volume. test:///PATH/node.xml serves as a second host of a multi-host pool
 * (each connection to a file gets its own state). The driver's pure helpers
 * are linked in to test the CPU arithmetic and victim order with values the
 * test hypervisor cannot report (it has no cpu.time). */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <libxml/parser.h>
#include <libxml/tree.h>

#include "agent/driver.h"
#include "base/clock.h"
#include "libvirt-internal.h"

static const struct autoscaled_driver *drv;
static virConnectPtr tc;
static char node_uri[1200], data_dir[1024];
static char logbuf[16384];

static void capture_log(const struct autoscaled_host *host, enum autoscaled_log_level level, const char *fmt, ...)
{
	size_t len = strlen(logbuf);
	va_list ap;

	va_start(ap, fmt);
	if (len + 2 < sizeof(logbuf)) {
		vsnprintf(logbuf + len, sizeof(logbuf) - len - 1, fmt, ap);
		strcat(logbuf, "\n");
		/* The driver's messages, for a person reading the test log. */
		fprintf(stderr, "# %s", logbuf + len);
	}
	va_end(ap);
}

static struct autoscaled_host host = {
	.abi_version = AUTOSCALED_DRIVER_ABI_VERSION,
	.struct_size = sizeof(struct autoscaled_host),
	.group = "web",
	.log = capture_log,
};

static void silent(void *userdata, virErrorPtr e)
{
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = calloc(1, 65536);
	size_t n;

	assert_non_null(f);
	assert_non_null(buf);
	n = fread(buf, 1, 65535, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* Copies node.xml's templates and volumes into test:///default. */
static void populate(void)
{
	char path[1200];
	xmlDocPtr doc;
	virStoragePoolPtr pool = virStoragePoolLookupByName(tc, "default-pool");

	assert_non_null(pool);
	snprintf(path, sizeof(path), "%s/node.xml", data_dir);
	doc = xmlReadFile(path, NULL, XML_PARSE_NONET);
	assert_non_null(doc);
	for (xmlNodePtr n = xmlDocGetRootElement(doc)->children; n; n = n->next) {
		if (n->type != XML_ELEMENT_NODE)
			continue;
		if (xmlStrcmp(n->name, BAD_CAST "domain") == 0) {
			xmlChar *file = xmlGetProp(n, BAD_CAST "file");
			char p[1200], *xml;
			virDomainPtr d;

			if (!file)
				continue;
			snprintf(p, sizeof(p), "%s/%s", data_dir, (const char *)file);
			xml = read_file(p);
			d = virDomainDefineXML(tc, xml);
			assert_non_null(d);
			virDomainFree(d);
			free(xml);
			xmlFree(file);
		} else if (xmlStrcmp(n->name, BAD_CAST "pool") == 0) {
			for (xmlNodePtr v = n->children; v; v = v->next) {
				xmlBufferPtr b;
				virStorageVolPtr vol;

				if (v->type != XML_ELEMENT_NODE || xmlStrcmp(v->name, BAD_CAST "volume") != 0)
					continue;
				/* The pool gives the path; libvirt 9.0's test driver
				 * leaks one it is given. */
				for (xmlNodePtr t = v->children; t; t = t->next)
					if (t->type == XML_ELEMENT_NODE && xmlStrcmp(t->name, BAD_CAST "target") == 0)
						for (xmlNodePtr q = t->children; q; q = q->next)
							if (q->type == XML_ELEMENT_NODE &&
							    xmlStrcmp(q->name, BAD_CAST "path") == 0) {
								xmlUnlinkNode(q);
								xmlFreeNode(q);
								break;
							}
				b = xmlBufferCreate();
				xmlNodeDump(b, doc, v, 0, 0);
				vol = virStorageVolCreateXML(pool, (const char *)xmlBufferContent(b), 0);
				assert_non_null(vol);
				virStorageVolFree(vol);
				xmlBufferFree(b);
			}
		}
	}
	xmlFreeDoc(doc);
	virStoragePoolFree(pool);
}

/* Puts test:///default back to its own contents plus node.xml's templates. */
static int reset(void **state)
{
	virDomainPtr *doms;
	virStorageVolPtr *vols;
	virStoragePoolPtr pool = virStoragePoolLookupByName(tc, "default-pool");
	int n;

	n = virConnectListAllDomains(tc, &doms, 0);
	for (int i = 0; i < n; i++) {
		if (strcmp(virDomainGetName(doms[i]), "test") != 0) {
			if (virDomainIsActive(doms[i]) == 1)
				virDomainDestroy(doms[i]);
			virDomainUndefineFlags(doms[i], VIR_DOMAIN_UNDEFINE_MANAGED_SAVE);
		}
		virDomainFree(doms[i]);
	}
	free(doms);
	n = virStoragePoolListAllVolumes(pool, &vols, 0);
	for (int i = 0; i < n; i++) {
		virStorageVolDelete(vols[i], 0);
		virStorageVolFree(vols[i]);
	}
	free(vols);
	virStoragePoolFree(pool);
	populate();
	logbuf[0] = '\0';
	return 0;
}

static int setup(void **state)
{
	const char *src = getenv("top_srcdir");
	char err[1024];
	const struct driver *d;

	virSetErrorFunc(NULL, silent);
	snprintf(data_dir, sizeof(data_dir), "%s/tests/data/libvirt", src ? src : "..");
	snprintf(node_uri, sizeof(node_uri), "test://%s/node.xml", data_dir);
	if (driver_load("libvirt", NULL, &d, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	drv = d->ops;
	tc = virConnectOpen("test:///default");
	return tc ? 0 : -1;
}

static int teardown(void **state)
{
	if (tc)
		virConnectClose(tc);
	return 0;
}

/* Options as "key=value" strings; "key=[a,b]" makes a list. */
struct opts {
	struct autoscaled_option v[16];
	char *lists[16][4];
	char store[16][256];
	size_t n;
};

static void opts_set(struct opts *o, const char *kv)
{
	struct autoscaled_option *p = &o->v[o->n];
	char *s = o->store[o->n], *eq;

	snprintf(s, sizeof(o->store[0]), "%s", kv);
	eq = strchr(s, '=');
	assert_non_null(eq);
	*eq = '\0';
	*p = (struct autoscaled_option){ .key = s };
	if (eq[1] == '[') {
		char *save = NULL, *t;
		size_t k = 0;

		eq[strlen(eq + 1)] = '\0';
		for (t = strtok_r(eq + 2, ",", &save); t && k < 4; t = strtok_r(NULL, ",", &save))
			o->lists[o->n][k++] = t;
		p->list = (const char *const *)o->lists[o->n];
		p->n_list = k;
	} else {
		p->value = eq + 1;
	}
	o->n++;
}

static struct autoscaled_driver_instance *open_with(int *ret, ...)
{
	struct opts o = { .n = 0 };
	struct autoscaled_driver_instance *h = NULL;
	const char *kv;
	va_list ap;

	va_start(ap, ret);
	while ((kv = va_arg(ap, const char *)))
		opts_set(&o, kv);
	va_end(ap);
	*ret = drv->open(&host, o.v, o.n, &h);
	return h;
}

struct seen {
	char id[32][LV_NAME_MAX];
	char loc[32][1200];
	int state[32];
	bool ready[32];
	int64_t created[32], since[32];
	int n;
};

static int collect(void *ctx, const struct autoscaled_instance *in)
{
	struct seen *s = ctx;

	assert_true(s->n < 32);
	snprintf(s->id[s->n], sizeof(s->id[0]), "%s", in->id);
	snprintf(s->loc[s->n], sizeof(s->loc[0]), "%s", in->location ? in->location : "");
	s->state[s->n] = in->state;
	s->ready[s->n] = in->ready;
	s->created[s->n] = in->created_ms;
	s->since[s->n] = in->running_since_ms;
	s->n++;
	return 0;
}

static bool seen_has(const struct seen *s, const char *id)
{
	for (int i = 0; i < s->n; i++)
		if (strcmp(s->id[i], id) == 0)
			return true;
	return false;
}

static bool domain_exists(const char *name)
{
	virDomainPtr d = virDomainLookupByName(tc, name);

	if (d)
		virDomainFree(d);
	return d != NULL;
}

static bool volume_exists(const char *name)
{
	virStoragePoolPtr p = virStoragePoolLookupByName(tc, "default-pool");
	virStorageVolPtr v = virStorageVolLookupByName(p, name);

	virStoragePoolFree(p);
	if (v)
		virStorageVolFree(v);
	return v != NULL;
}

static int count_domains(void)
{
	virDomainPtr *d;
	int n = virConnectListAllDomains(tc, &d, 0);

	for (int i = 0; i < n; i++)
		virDomainFree(d[i]);
	free(d);
	return n;
}

static int count_volumes(void)
{
	virStoragePoolPtr p = virStoragePoolLookupByName(tc, "default-pool");
	int n = virStoragePoolNumOfVolumes(p);

	virStoragePoolFree(p);
	return n;
}

/* Checks that NAME is a running member of "web" with index idx, cloned
 * properly: its own volume, a new uuid and MAC, the ISO shared. */
static void check_member(const char *name, int idx)
{
	virDomainPtr d = virDomainLookupByName(tc, name), t = virDomainLookupByName(tc, "web-template");
	char *md, *xml, want[64], vol[LV_NAME_MAX + 16], tu[VIR_UUID_STRING_BUFLEN], du[VIR_UUID_STRING_BUFLEN];
	int st, reason;

	assert_non_null(d);
	assert_non_null(t);
	assert_int_equal(virDomainGetState(d, &st, &reason, 0), 0);
	assert_int_equal(st, VIR_DOMAIN_RUNNING);
	md = virDomainGetMetadata(d, VIR_DOMAIN_METADATA_ELEMENT, LV_NS, 0);
	assert_non_null(md);
	assert_non_null(strstr(md, "group=\"web\""));
	snprintf(want, sizeof(want), "index=\"%d\"", idx);
	assert_non_null(strstr(md, want));
	assert_non_null(strstr(md, "state=\"active\""));
	assert_non_null(strstr(md, "created=\""));
	assert_non_null(strstr(md, "started=\""));
	xml = virDomainGetXMLDesc(d, 0);
	snprintf(vol, sizeof(vol), "/default-pool/%s.qcow2", name);
	assert_non_null(strstr(xml, vol));
	assert_non_null(strstr(xml, "/default-pool/seed.iso"));
	assert_null(strstr(xml, "52:54:00:aa:bb:cc"));
	virDomainGetUUIDString(d, du);
	virDomainGetUUIDString(t, tu);
	assert_string_not_equal(du, tu);
	snprintf(vol, sizeof(vol), "%s.qcow2", name);
	assert_true(volume_exists(vol));
	free(md);
	free(xml);
	virDomainFree(d);
	virDomainFree(t);
}

static void observe_into(struct autoscaled_driver_instance *h, struct seen *s, struct autoscaled_observation *obs)
{
	memset(s, 0, sizeof(*s));
	assert_int_equal(drv->observe(h, collect, NULL, s, obs), 0);
}

/* Scales 2 -> 5 -> 3 with `policy` and returns the members left. */
static void scale_out_in(const char *policy, const char *gone1, const char *gone2)
{
	char pol[64];
	int r;
	struct autoscaled_driver_instance *h;
	struct seen s, removed = { .n = 0 };
	struct autoscaled_observation obs;
	int base_domains = count_domains(), base_volumes = count_volumes();

	snprintf(pol, sizeof(pol), "victim_policy=%s", policy);
	h = open_with(&r, "uri=test:///default", "template=web-template", pol, "shutdown_timeout=2", NULL);
	assert_int_equal(r, 0);
	assert_int_equal(drv->set_capacity(h, 2, NULL, NULL), 0);
	memset(&s, 0, sizeof(s));
	assert_int_equal(drv->set_capacity(h, 5, collect, &s), 0);
	/* Only the three new ones are reported, with the lowest free names. */
	assert_int_equal(s.n, 3);
	assert_string_equal(s.id[0], "web-3");
	assert_string_equal(s.id[2], "web-5");
	for (int i = 1; i <= 5; i++) {
		char name[16];

		snprintf(name, sizeof(name), "web-%d", i);
		check_member(name, i);
	}
	assert_int_equal(count_domains(), base_domains + 5);
	assert_int_equal(count_volumes(), base_volumes + 5);
	observe_into(h, &s, &obs);
	assert_int_equal(s.n, 5);
	assert_int_equal(obs.target_size, 5);
	assert_true(obs.stable);
	assert_false(obs.partial);
	for (int i = 0; i < s.n; i++) {
		assert_int_equal(s.state[i], AUTOSCALED_INSTANCE_RUNNING);
		assert_true(s.ready[i]);
		assert_true(s.created[i] > 0);
		assert_true(s.since[i] >= s.created[i] / 1000 * 1000);
		assert_string_equal(s.loc[i], "test:///default");
	}

	assert_int_equal(drv->remove_instances(h, 2, NULL, 0, collect, &removed), 0);
	assert_int_equal(removed.n, 2);
	assert_true(seen_has(&removed, gone1));
	assert_true(seen_has(&removed, gone2));
	for (int i = 0; i < 2; i++) {
		char vol[64];

		snprintf(vol, sizeof(vol), "%s.qcow2", removed.id[i]);
		assert_false(domain_exists(removed.id[i]));
		assert_false(volume_exists(vol));
	}
	/* The ISO every member shares is not a member's volume. */
	assert_true(volume_exists("seed.iso"));
	assert_true(volume_exists("web-template.qcow2"));
	observe_into(h, &s, &obs);
	assert_int_equal(obs.target_size, 3);
	assert_int_equal(s.n, 3);
	assert_false(seen_has(&s, gone1));
	assert_int_equal(count_domains(), base_domains + 3);
	assert_int_equal(count_volumes(), base_volumes + 3);
	drv->close(h);
}

static void test_newest(void **state)
{
	/* Created in the same second: the higher index is the newer. */
	scale_out_in("newest", "web-5", "web-4");
}

static void test_oldest(void **state)
{
	scale_out_in("oldest", "web-1", "web-2");
	/* The next member takes the lowest free name again. */
	int r;
	struct autoscaled_driver_instance *h = open_with(&r, "uri=test:///default", "template=web-template", NULL);
	struct seen s = { .n = 0 };

	assert_int_equal(r, 0);
	assert_int_equal(drv->set_capacity(h, 4, collect, &s), 0);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.id[0], "web-1");
	check_member("web-1", 1);
	drv->close(h);
}

static void test_least_busy(void **state)
{
	/* The test hypervisor reports no cpu.time, so no member has a value
	 * and least-busy falls back to the newest, as documented. */
	scale_out_in("least-busy", "web-5", "web-4");
}

/* set_capacity only grows: a smaller count is refused and removes nothing,
 * so that a scale-out decided on an older observation cannot shrink. */
static void test_set_capacity_only_grows(void **state)
{
	int r;
	struct autoscaled_driver_instance *h = open_with(&r, "uri=test:///default", "template=web-template",
							 "victim_policy=oldest", NULL);
	struct seen s;
	struct autoscaled_observation obs;

	assert_int_equal(r, 0);
	assert_int_equal(drv->set_capacity(h, 3, NULL, NULL), 0);
	logbuf[0] = '\0';
	assert_int_equal(drv->set_capacity(h, 1, NULL, NULL), -ERANGE);
	assert_non_null(strstr(logbuf, "set_capacity to 1 refused: the group has 3 members"));
	observe_into(h, &s, &obs);
	assert_int_equal(s.n, 3);
	assert_int_equal(obs.target_size, 3);
	/* The size it has already is no change at all. */
	assert_int_equal(drv->set_capacity(h, 3, NULL, NULL), 0);
	observe_into(h, &s, &obs);
	assert_int_equal(s.n, 3);
	assert_int_equal(drv->set_capacity(h, -1, NULL, NULL), -EINVAL);
	drv->close(h);
}

static void test_remove_by_id(void **state)
{
	int r;
	struct autoscaled_driver_instance *h = open_with(&r, "uri=test:///default", "template=web-template", NULL);
	const char *ids[] = { "web-2", "db-9" };
	struct seen s = { .n = 0 };

	assert_int_equal(r, 0);
	assert_int_equal(drv->set_capacity(h, 3, NULL, NULL), 0);
	assert_int_equal(drv->remove_instances(h, 0, ids, 2, collect, &s), 0);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.id[0], "web-2");
	assert_false(domain_exists("web-2"));
	assert_true(domain_exists("web-1"));
	assert_true(domain_exists("web-3"));
	assert_non_null(strstr(logbuf, "'db-9' is not a member"));
	drv->close(h);
}

static void test_overlay(void **state)
{
	int r;
	struct autoscaled_driver_instance *h = open_with(&r, "uri=test:///default", "template=web-template",
							 "volume_mode=overlay", NULL);
	virStoragePoolPtr p = virStoragePoolLookupByName(tc, "default-pool");
	virStorageVolPtr v;
	char *xml;

	assert_int_equal(r, 0);
	assert_int_equal(drv->set_capacity(h, 1, NULL, NULL), 0);
	v = virStorageVolLookupByName(p, "web-1.qcow2");
	assert_non_null(v);
	xml = virStorageVolGetXMLDesc(v, 0);
	assert_non_null(strstr(xml, "<backingStore>"));
	assert_non_null(strstr(xml, "<path>/default-pool/web-template.qcow2</path>"));
	free(xml);
	virStorageVolFree(v);
	/* The template's console log file is not shared with the clone. */
	{
		virDomainPtr d = virDomainLookupByName(tc, "web-1");

		assert_non_null(d);
		xml = virDomainGetXMLDesc(d, VIR_DOMAIN_XML_INACTIVE);
		assert_non_null(strstr(xml, "/var/log/web/web-1-console.log"));
		assert_null(strstr(xml, "'/var/log/web/console.log'"));
		free(xml);
		virDomainFree(d);
	}
	virStoragePoolFree(p);
	drv->close(h);
}

static void test_template_missing(void **state)
{
	int r, domains = count_domains(), volumes = count_volumes();
	struct autoscaled_driver_instance *h = open_with(&r, "uri=test:///default", "template=no-such-template", NULL);

	assert_int_equal(r, 0);
	assert_int_equal(drv->set_capacity(h, 2, NULL, NULL), -ENOENT);
	assert_non_null(strstr(logbuf, "libvirt: template domain 'no-such-template' not found on 'test:///default'"));
	assert_int_equal(count_domains(), domains);
	assert_int_equal(count_volumes(), volumes);
	drv->close(h);
}

static void test_pool_full(void **state)
{
	int r, domains = count_domains(), volumes = count_volumes();
	struct autoscaled_driver_instance *h = open_with(&r, "uri=test:///default", "template=big-template", NULL);

	assert_int_equal(r, 0);
	assert_true(drv->set_capacity(h, 2, NULL, NULL) < 0);
	assert_non_null(strstr(logbuf, "creating volume 'web-1.img' (clone of 'big.img') in pool 'default-pool'"));
	assert_non_null(strstr(logbuf, "space"));
	assert_int_equal(count_domains(), domains);
	assert_int_equal(count_volumes(), volumes);
	drv->close(h);
}

static void test_define_refused(void **state)
{
	int r, domains, volumes;
	struct autoscaled_driver_instance *h;
	virDomainPtr squatter;

	/* A domain that is not a member holds the name the next member gets. */
	squatter = virDomainDefineXML(tc, "<domain type='test'><name>web-1</name><memory>1024</memory>"
					  "<os><type>hvm</type></os></domain>");
	assert_non_null(squatter);
	domains = count_domains();
	volumes = count_volumes();
	h = open_with(&r, "uri=test:///default", "template=web-template", NULL);
	assert_int_equal(r, 0);
	assert_true(drv->set_capacity(h, 1, NULL, NULL) < 0);
	assert_non_null(strstr(logbuf, "defining 'web-1' on 'test:///default' was refused: "));
	/* The volume made for it is gone; the squatter is untouched. */
	assert_int_equal(count_volumes(), volumes);
	assert_false(volume_exists("web-1.qcow2"));
	assert_int_equal(count_domains(), domains);
	assert_int_equal(virDomainIsActive(squatter), 0);
	virDomainFree(squatter);
	drv->close(h);
}

static void define_member(const char *name, int idx, const char *phase, bool start, bool with_volume)
{
	char xml[2048], vol[512];
	virDomainPtr d;

	snprintf(xml, sizeof(xml),
		 "<domain type='test'><name>%s</name><metadata><autoscaled:member xmlns:autoscaled='%s' group='web' "
		 "index='%d' created='2026-01-01T00:00:00Z' state='%s'/></metadata><memory>1024</memory>"
		 "<os><type>hvm</type></os><devices><disk type='file' device='disk'>"
		 "<source file='/default-pool/%s.qcow2'/><target dev='vda' bus='virtio'/></disk></devices></domain>",
		 name, LV_NS, idx, phase, name);
	d = virDomainDefineXML(tc, xml);
	assert_non_null(d);
	if (start)
		assert_int_equal(virDomainCreate(d), 0);
	virDomainFree(d);
	if (with_volume) {
		virStoragePoolPtr p = virStoragePoolLookupByName(tc, "default-pool");
		virStorageVolPtr v;

		snprintf(vol, sizeof(vol), "<volume><name>%s.qcow2</name><capacity>1024</capacity></volume>", name);
		v = virStorageVolCreateXML(p, vol, 0);
		assert_non_null(v);
		virStorageVolFree(v);
		virStoragePoolFree(p);
	}
}

static void test_crash_repair(void **state)
{
	virStoragePoolPtr p = virStoragePoolLookupByName(tc, "default-pool");
	virStorageVolPtr v;
	struct autoscaled_driver_instance *h;
	struct autoscaled_observation obs;
	struct seen s;
	char *md;
	virDomainPtr d;
	int r;

	/* A volume whose domain was never defined, or already undefined. */
	v = virStorageVolCreateXML(p, "<volume><name>web-4.qcow2</name><capacity>1024</capacity></volume>", 0);
	assert_non_null(v);
	virStorageVolFree(v);
	v = virStorageVolCreateXML(p, "<volume><name>other.qcow2</name><capacity>1024</capacity></volume>", 0);
	assert_non_null(v);
	virStorageVolFree(v);
	virStoragePoolFree(p);
	/* Defined and tagged but never started; and a removal cut short. */
	define_member("web-2", 2, "creating", false, true);
	define_member("web-3", 3, "removing", true, true);
	define_member("web-1", 1, "active", true, true);
	/* Started but the start never recorded; and a member stopped outside. */
	define_member("web-5", 5, "creating", true, true);
	define_member("web-6", 6, "active", false, true);

	h = open_with(&r, "uri=test:///default", "template=web-template", NULL);
	assert_int_equal(r, 0);
	assert_false(volume_exists("web-4.qcow2"));
	assert_true(volume_exists("other.qcow2"));
	assert_true(volume_exists("web-template.qcow2"));
	assert_false(domain_exists("web-3"));
	assert_false(volume_exists("web-3.qcow2"));
	d = virDomainLookupByName(tc, "web-2");
	assert_non_null(d);
	assert_int_equal(virDomainIsActive(d), 1);
	md = virDomainGetMetadata(d, VIR_DOMAIN_METADATA_ELEMENT, LV_NS, 0);
	assert_non_null(strstr(md, "state=\"active\""));
	free(md);
	virDomainFree(d);
	assert_non_null(strstr(logbuf, "deleting volume 'web-4.qcow2'"));
	assert_non_null(strstr(logbuf, "finishing the half-made member 'web-2'"));
	assert_non_null(strstr(logbuf, "finishing the removal of 'web-3'"));
	assert_non_null(strstr(logbuf, "restarting the stopped member 'web-6'"));
	d = virDomainLookupByName(tc, "web-5");
	md = virDomainGetMetadata(d, VIR_DOMAIN_METADATA_ELEMENT, LV_NS, 0);
	assert_non_null(strstr(md, "state=\"active\""));
	assert_non_null(strstr(md, "started=\""));
	free(md);
	virDomainFree(d);

	observe_into(h, &s, &obs);
	assert_int_equal(s.n, 4);
	assert_true(seen_has(&s, "web-1"));
	assert_true(seen_has(&s, "web-2"));
	assert_true(seen_has(&s, "web-5"));
	assert_true(seen_has(&s, "web-6"));
	assert_int_equal(obs.target_size, 4);
	assert_true(obs.stable);
	for (int i = 0; i < s.n; i++)
		assert_int_equal(s.state[i], AUTOSCALED_INSTANCE_RUNNING);
	/* The next member reuses the freed name. */
	memset(&s, 0, sizeof(s));
	assert_int_equal(drv->set_capacity(h, 5, collect, &s), 0);
	assert_string_equal(s.id[0], "web-3");
	check_member("web-3", 3);
	drv->close(h);
}

/* Tags domain NAME as member IDX of GROUP, as an operator would with
 * virsh metadata; GROUP NULL removes the tag. */
static void retag(const char *name, const char *group, int idx)
{
	virDomainPtr d = virDomainLookupByName(tc, name);
	char md[256];

	assert_non_null(d);
	snprintf(md, sizeof(md), "<member group='%s' index='%d' created='2026-01-01T00:00:00Z' state='active'/>",
		 group ? group : "", idx);
	assert_int_equal(virDomainSetMetadata(d, VIR_DOMAIN_METADATA_ELEMENT, group ? md : NULL,
					      group ? LV_NS_PREFIX : NULL, LV_NS, 0),
			 0);
	virDomainFree(d);
}

/* A domain found without the group's tag is not read again for
 * tag_recheck, by any group of the process (so that many groups on one
 * hypervisor do not each read every domain's metadata at every
 * observation): a tag an operator adds by hand is taken once that has
 * passed since it was last read, at once with tag_recheck = 0, and by
 * every group once one of them has read it; a member's removed tag is
 * always seen at once. */
static void test_tag_recheck(void **state)
{
	struct autoscaled_driver_instance *h, *h0, *h1;
	struct autoscaled_observation obs;
	struct seen s;
	int64_t deadline;
	int r;

	define_member("web-1", 1, "active", true, true);
	define_member("adopted", 7, "active", true, false);
	retag("adopted", "db", 7);
	h = open_with(&r, "uri=test:///default", "template=web-template", NULL);
	assert_int_equal(r, 0);
	h0 = open_with(&r, "uri=test:///default", "template=web-template", "tag_recheck=0", NULL);
	assert_int_equal(r, 0);
	h1 = open_with(&r, "uri=test:///default", "template=web-template", "tag_recheck=0.05", NULL);
	assert_int_equal(r, 0);
	observe_into(h, &s, &obs);
	assert_int_equal(s.n, 1);
	observe_into(h1, &s, &obs);
	assert_int_equal(s.n, 1);

	retag("adopted", "web", 7);
	observe_into(h, &s, &obs);
	assert_int_equal(s.n, 1); /* read again in 5 to 10 minutes */
	assert_false(seen_has(&s, "adopted"));
	deadline = clock_mono_ms() + 15000; /* 50 to 100 ms */
	do {
		observe_into(h1, &s, &obs);
		if (s.n == 2)
			break;
		usleep(10000);
	} while (clock_mono_ms() < deadline);
	assert_int_equal(s.n, 2);
	assert_true(seen_has(&s, "adopted"));
	/* h1 read it as the group's: h reads it now, at every observation. */
	observe_into(h, &s, &obs);
	assert_int_equal(s.n, 2);

	retag("adopted", "db", 7);
	observe_into(h0, &s, &obs);
	assert_int_equal(s.n, 1);
	retag("adopted", "web", 7);
	observe_into(h0, &s, &obs);
	assert_int_equal(s.n, 2);

	/* A member's tag is read at every observation. */
	retag("web-1", NULL, 0);
	observe_into(h, &s, &obs);
	assert_int_equal(s.n, 1);
	assert_false(seen_has(&s, "web-1"));
	drv->close(h);
	drv->close(h0);
	drv->close(h1);
}

static void test_multi_host(void **state)
{
	char uris[2600];
	int r;
	struct autoscaled_driver_instance *h;
	struct autoscaled_observation obs;
	struct seen s;
	int on_node = 0;

	snprintf(uris, sizeof(uris), "uri=[test:///default,%s]", node_uri);
	h = open_with(&r, uris, "template=web-template", NULL);
	assert_int_equal(r, 0);
	observe_into(h, &s, &obs);
	/* node.xml brings one member, web-7. */
	assert_int_equal(s.n, 1);
	assert_string_equal(s.id[0], "web-7");
	assert_string_equal(s.loc[0], node_uri);
	assert_int_equal(s.created[0], INT64_C(1767607200000));
	assert_int_equal(s.since[0], INT64_C(1767607205000));
	/* Four members: the hosts with the fewest get each new one. */
	assert_int_equal(drv->set_capacity(h, 4, NULL, NULL), 0);
	observe_into(h, &s, &obs);
	assert_int_equal(s.n, 4);
	for (int i = 0; i < s.n; i++)
		on_node += strcmp(s.loc[i], node_uri) == 0;
	assert_int_equal(on_node, 2);
	assert_true(domain_exists("web-1"));
	assert_true(domain_exists("web-2"));
	assert_false(domain_exists("web-3"));
	assert_true(seen_has(&s, "web-3"));
	drv->close(h);

	/* A weight of 0 takes a host out of placement. */
	reset(state);
	snprintf(uris, sizeof(uris), "uri=[test:///default,%s]", node_uri);
	h = open_with(&r, uris, "weights=[0,1]", "template=web-template", NULL);
	assert_int_equal(r, 0);
	assert_int_equal(drv->set_capacity(h, 3, NULL, NULL), 0);
	assert_false(domain_exists("web-1"));
	drv->close(h);
}

static void test_host_down(void **state)
{
	char uris[2600];
	int r;
	struct autoscaled_driver_instance *h;
	struct autoscaled_observation obs;
	struct seen s;

	snprintf(uris, sizeof(uris), "uri=[test:///default,test://%s/no-such-node.xml]", data_dir);
	h = open_with(&r, uris, "template=web-template", NULL);
	assert_int_equal(r, 0);
	/* The first retry comes after half to all of a second (the jitter). */
	{
		const char *w = strstr(logbuf, "no-such-node.xml' is unreachable, retrying in ");
		double secs = -1;

		assert_non_null(w);
		assert_int_equal(sscanf(strchr(w, ',') + strlen(", retrying in "), "%lf s", &secs), 1);
		assert_true(secs >= 0.5 && secs <= 1.0);
	}
	assert_int_equal(drv->set_capacity(h, 2, NULL, NULL), 0);
	observe_into(h, &s, &obs);
	assert_int_equal(s.n, 2);
	assert_true(obs.partial);
	assert_non_null(strstr(logbuf, "observed without host 'test://"));
	drv->close(h);

	/* No host at all: open fails and says so. */
	logbuf[0] = '\0';
	snprintf(uris, sizeof(uris), "uri=test://%s/no-such-node.xml", data_dir);
	h = open_with(&r, uris, "template=web-template", NULL);
	assert_int_equal(r, -EHOSTUNREACH);
	assert_null(h);
	assert_non_null(strstr(logbuf, "no host of the pool could be reached"));
}

struct samples {
	int n;
	int n_other;             /* of another source, or of no member */
	double min, max;
};

static int count_sample(void *ctx, const char *source, const char *id, double value)
{
	struct samples *s = ctx;

	if (strcmp(source, "libvirt_cpu") != 0 || strncmp(id, "web-", 4) != 0)
		s->n_other++;
	if (s->n == 0 || value < s->min)
		s->min = value;
	if (s->n == 0 || value > s->max)
		s->max = value;
	s->n++;
	return 0;
}

/* libvirt_cpu is the driver's source, declared in its descriptor and fed
 * through observe(): a rate, so the first observation of a member only
 * takes its baseline. (The test hypervisor may have no cpu.time at all;
 * then no observation carries a value.) */
static void test_cpu_source(void **state)
{
	int r;
	struct autoscaled_driver_instance *h = open_with(&r, "uri=test:///default", "template=web-template", NULL);
	struct autoscaled_observation obs;
	struct samples smp = { 0 };
	struct seen s;

	assert_int_equal(drv->n_sources, 1);
	assert_string_equal(drv->sources[0].name, "libvirt_cpu");
	assert_int_equal(r, 0);
	assert_int_equal(drv->set_capacity(h, 2, NULL, NULL), 0);
	memset(&s, 0, sizeof(s));
	assert_int_equal(drv->observe(h, NULL, count_sample, &smp, &obs), 0);
	assert_int_equal(smp.n, 0);
	assert_int_equal(drv->observe(h, NULL, count_sample, &smp, &obs), 0);
	assert_int_equal(smp.n_other, 0);
	assert_true(smp.n <= 2);
	if (smp.n)
		assert_true(smp.min >= 0 && smp.max <= 200);
	/* Without a sample callback nothing is read for the source. */
	assert_int_equal(drv->observe(h, NULL, NULL, NULL, &obs), 0);
	drv->close(h);
}

static void test_bad_options(void **state)
{
	struct opts o = { .n = 0 };
	struct autoscaled_host h;
	struct lv_options parsed;

	/* The daemon's own host: durations and near misses are the core's,
	 * and a missing option is reported at the driver section. */
	driver_host_init(&h, "web", NULL);
	h.log = capture_log;
	h.where = "/etc/a.conf:5";
	opts_set(&o, "template=t");
	opts_set(&o, "victim_policy=random");
	assert_int_equal(drv->check(&h, o.v, o.n), -EINVAL);
	assert_non_null(strstr(logbuf, "option 'victim_policy': 'random' is not one of newest, oldest, least-busy"));
	o.n = 0;
	opts_set(&o, "template=t");
	opts_set(&o, "name_pattern=%g-x");
	assert_int_equal(drv->check(&h, o.v, o.n), -EINVAL);
	assert_non_null(strstr(logbuf, "must contain %n exactly once"));
	o.n = 0;
	logbuf[0] = '\0';
	opts_set(&o, "uri=test:///default");
	assert_int_equal(drv->check(&h, o.v, o.n), -EINVAL);
	assert_string_equal(logbuf, "/etc/a.conf:5: libvirt: missing required option 'template' (the domain to clone)\n");
	o.n = 0;
	logbuf[0] = '\0';
	opts_set(&o, "template=t");
	opts_set(&o, "shutdown_timout=30");
	assert_int_equal(drv->check(&h, o.v, o.n), -EINVAL);
	assert_non_null(strstr(logbuf, "libvirt: unknown option 'shutdown_timout' (did you mean 'shutdown_timeout'?)"));
	o.n = 0;
	opts_set(&o, "template=t");
	opts_set(&o, "colour=blue");
	assert_int_equal(drv->check(&h, o.v, o.n), -EINVAL);
	assert_non_null(strstr(logbuf, "libvirt: unknown option 'colour'"));
	o.n = 0;
	opts_set(&o, "template=t");
	opts_set(&o, "uri=[test:///default,test:///x]");
	opts_set(&o, "weights=[1]");
	assert_int_equal(drv->check(&h, o.v, o.n), -EINVAL);
	assert_non_null(strstr(logbuf, "give one weight per uri"));
	o.n = 0;
	opts_set(&o, "template=t");
	opts_set(&o, "shutdown_timeout=-3");
	assert_int_equal(drv->check(&h, o.v, o.n), -EINVAL);
	o.n = 0;
	opts_set(&o, "template=t");
	opts_set(&o, "shutdown_timeout=2h");
	assert_int_equal(drv->check(&h, o.v, o.n), -EINVAL);
	assert_non_null(strstr(logbuf, "'2h' is not a duration from 0 to 1h"));
	o.n = 0;
	opts_set(&o, "template=t");
	opts_set(&o, "volume_mode=overlay");
	opts_set(&o, "shutdown_mode=agent");
	assert_int_equal(drv->check(&h, o.v, o.n), 0);

	/* Durations in the one grammar of autoscaled.conf(5). */
	o.n = 0;
	opts_set(&o, "template=t");
	opts_set(&o, "shutdown_timeout=1m30s");
	opts_set(&o, "ready_timeout=500ms");
	assert_int_equal(lv_options_parse(&h, o.v, o.n, &parsed), 0);
	assert_int_equal(parsed.shutdown_timeout_ms, 90000);
	assert_int_equal(parsed.ready_timeout_ms, 500);
	lv_options_free(&parsed);
	o.n = 0;
	opts_set(&o, "template=t");
	opts_set(&o, "shutdown_timeout=2min");
	assert_int_equal(lv_options_parse(&h, o.v, o.n, &parsed), 0);
	assert_int_equal(parsed.shutdown_timeout_ms, 120000);
	lv_options_free(&parsed);
	/* Bare seconds, as before, in this host and in one without
	 * parse_duration. */
	o.n = 0;
	opts_set(&o, "template=t");
	opts_set(&o, "shutdown_timeout=45");
	assert_int_equal(lv_options_parse(&h, o.v, o.n, &parsed), 0);
	assert_int_equal(parsed.shutdown_timeout_ms, 45000);
	lv_options_free(&parsed);
	assert_int_equal(lv_options_parse(&host, o.v, o.n, &parsed), 0);
	assert_int_equal(parsed.shutdown_timeout_ms, 45000);
	lv_options_free(&parsed);
}

static void test_names(void **state)
{
	char buf[LV_NAME_MAX], member[LV_NAME_MAX];

	assert_int_equal(lv_expand_name("%g-%n", "web", 3, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "web-3");
	assert_int_equal(lv_expand_name("vm%%%n.%g", "db", 12, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "vm%12.db");
	assert_int_equal(lv_expand_name("%g-%n", "web", 3, buf, 4), -ENAMETOOLONG);
	assert_int_equal(lv_expand_name("%x%n", "web", 3, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(lv_match_name("%g-%n", "web", "web-17"), 17);
	assert_int_equal(lv_match_name("%g-%n", "web", "web-template"), -1);
	assert_int_equal(lv_match_name("%g-%n", "web", "web-07"), -1);
	assert_int_equal(lv_match_name("%g-%n", "web", "web-"), -1);
	assert_int_equal(lv_match_name("%g-%n", "web", "webb-1"), -1);
	assert_int_equal(lv_match_name("%g-%n-vm", "web", "web-2-vm"), 2);
	assert_int_equal(lv_volume_owner("%g-%n", "web", "web-3.qcow2", member, sizeof(member)), 3);
	assert_string_equal(member, "web-3");
	assert_int_equal(lv_volume_owner("%g-%n", "web", "web-3-disk1.qcow2", member, sizeof(member)), 3);
	assert_string_equal(member, "web-3");
	assert_int_equal(lv_volume_owner("%g-%n", "web", "web-12", member, sizeof(member)), 12);
	assert_int_equal(lv_volume_owner("%g-%n", "web", "web-template.qcow2", member, sizeof(member)), -1);
	assert_int_equal(lv_volume_owner("%g-%n", "web", "db-3.qcow2", member, sizeof(member)), -1);
	assert_int_equal(lv_volume_owner("%g-%n", "web", "seed.iso", member, sizeof(member)), -1);
}

/* The member tag keeps milliseconds, so an initialization period is never
 * cut short by a truncated second; tags without them still read. */
static void test_tag_times(void **state)
{
	char buf[64];

	lv_format_time(INT64_C(1767607205123), buf, sizeof(buf));
	assert_string_equal(buf, "2026-01-05T10:00:05.123Z");
	assert_int_equal(lv_parse_time(buf), INT64_C(1767607205123));
	assert_int_equal(lv_parse_time("2026-01-05T10:00:05Z"), INT64_C(1767607205000));
	assert_int_equal(lv_parse_time("2026-01-05T10:00:05.5Z"), INT64_C(1767607205500));
	assert_int_equal(lv_parse_time("2026-01-05T10:00:05"), 0);
	assert_int_equal(lv_parse_time("yesterday"), 0);
}

static void test_cpu_percent(void **state)
{
	double pct = -1;

	/* 1 s of CPU over 1 s of wall time on 2 vCPUs: half busy. */
	assert_int_equal(lv_cpu_percent(5000000000u, 1000000000, 6000000000u, 2000000000, 2, &pct), 0);
	assert_float_equal(pct, 50.0, 1e-9);
	/* 3 s over 2 s on 4 vCPUs. */
	assert_int_equal(lv_cpu_percent(0, 0, 3000000000u, 2000000000, 4, &pct), 0);
	assert_float_equal(pct, 37.5, 1e-9);
	/* A restarted domain's counter goes back: no value, not a negative. */
	assert_int_equal(lv_cpu_percent(9000000000u, 0, 1000000, 1000000000, 1, &pct), -EAGAIN);
	assert_int_equal(lv_cpu_percent(0, 5, 10, 5, 1, &pct), -EAGAIN);
	assert_int_equal(lv_cpu_percent(0, 0, 10, 5, 0, &pct), -EAGAIN);
}

static void test_victim_order(void **state)
{
	struct lv_member m[6] = {
		{ .name = "a", .index = 1, .created_ms = 100, .cpu_percent = 50, .dom_state = VIR_DOMAIN_RUNNING,
		  .phase = LV_ACTIVE },
		{ .name = "b", .index = 2, .created_ms = 200, .cpu_percent = 10, .dom_state = VIR_DOMAIN_RUNNING,
		  .phase = LV_ACTIVE },
		{ .name = "c", .index = 3, .created_ms = 300, .cpu_percent = -1, .dom_state = VIR_DOMAIN_RUNNING,
		  .phase = LV_ACTIVE },
		{ .name = "d", .index = 4, .created_ms = 50, .cpu_percent = 80, .dom_state = VIR_DOMAIN_RUNNING,
		  .phase = LV_ACTIVE },
		{ .name = "e", .index = 5, .created_ms = 250, .cpu_percent = 30, .dom_state = VIR_DOMAIN_RUNNING,
		  .phase = LV_ACTIVE },
		{ .name = "f", .index = 6, .created_ms = 10, .cpu_percent = 90, .dom_state = VIR_DOMAIN_SHUTOFF,
		  .phase = LV_CREATING },
	};
	struct lv_member *v[6];
	const char *least[] = { "f", "b", "e", "a", "d", "c" };
	const char *newest[] = { "f", "c", "e", "b", "a", "d" };
	const char *oldest[] = { "f", "d", "a", "b", "e", "c" };

	for (int i = 0; i < 6; i++)
		v[i] = &m[i];
	lv_order_victims(v, 6, LV_LEAST_BUSY);
	for (int i = 0; i < 6; i++)
		assert_string_equal(v[i]->name, least[i]);
	lv_order_victims(v, 6, LV_NEWEST);
	for (int i = 0; i < 6; i++)
		assert_string_equal(v[i]->name, newest[i]);
	lv_order_victims(v, 6, LV_OLDEST);
	for (int i = 0; i < 6; i++)
		assert_string_equal(v[i]->name, oldest[i]);
}

static void test_placement(void **state)
{
	struct lv_host hosts[3] = { { .weight = 1 }, { .weight = 2 }, { .weight = 1 } };
	bool eligible[3] = { true, true, false };
	struct lv_member m[3] = { { .host = &hosts[0] }, { .host = &hosts[1] }, { .host = &hosts[1] } };
	int taken[] = { 1, 2 };

	/* Host 1 weighs twice as much: (2+1)/2 = 1.5 beats (1+1)/1 = 2. */
	assert_ptr_equal(lv_place(hosts, 3, eligible, m, 3), &hosts[1]);
	m[2].host = &hosts[0];
	assert_ptr_equal(lv_place(hosts, 3, eligible, m, 3), &hosts[1]);
	eligible[1] = false;
	assert_ptr_equal(lv_place(hosts, 3, eligible, m, 3), &hosts[0]);
	eligible[0] = false;
	assert_null(lv_place(hosts, 3, eligible, m, 3));
	m[0].index = 1;
	m[1].index = 3;
	m[2].index = 4;
	assert_int_equal(lv_lowest_free_index(m, 3, NULL, 0), 2);
	assert_int_equal(lv_lowest_free_index(m, 3, taken, 2), 5);
}

/* A listening socket on a free loopback port; the port in *port. */
static int listen_loopback(int *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 4), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

static void test_ready_port(void **state)
{
	int open_port, closed_port, lfd = listen_loopback(&open_port), cfd = listen_loopback(&closed_port);
	const char *addrs[] = { "127.0.0.1", NULL, "not-an-address", "127.0.0.1" };
	bool open[4];
	struct opts o = { .n = 0 };

	/* A port nobody listens on any more refuses. */
	close(cfd);
	lv_ports_open(addrs, 4, open_port, 500, open);
	assert_true(open[0]);
	assert_false(open[1]);
	assert_false(open[2]);
	assert_true(open[3]);
	lv_ports_open(addrs, 1, closed_port, 500, open);
	assert_false(open[0]);
	close(lfd);

	opts_set(&o, "template=t");
	opts_set(&o, "ready_port=0");
	assert_int_equal(drv->check(&host, o.v, o.n), -EINVAL);
	assert_non_null(strstr(logbuf, "option 'ready_port': give a TCP port from 1 to 65535"));
	o.n = 0;
	opts_set(&o, "template=t");
	opts_set(&o, "ready_port=22");
	opts_set(&o, "ready_timeout=0.5");
	assert_int_equal(drv->check(&host, o.v, o.n), 0);
}


/* ------------------------------------------------------------ warm pools */

/* What the driver published as warm members, by state. */
static double warm_metric[8];
static int warm_metric_calls;
static double host_room = -1;

static void capture_metric(const struct autoscaled_host *h, enum autoscaled_metric metric, const char *label,
			   double value)
{
	static const char *const states[] = { "", "booting", "paused", "saved", "stopped" };

	if (metric == AUTOSCALED_METRIC_HOST_ROOM)
		host_room = value;
	if (metric != AUTOSCALED_METRIC_WARM_INSTANCES)
		return;
	warm_metric_calls++;
	for (int i = 1; i < 5; i++)
		if (strcmp(label, states[i]) == 0)
			warm_metric[i] = value;
}

static int dom_state(const char *name)
{
	virDomainPtr d = virDomainLookupByName(tc, name);
	int st = -1, reason;

	assert_non_null(d);
	assert_int_equal(virDomainGetState(d, &st, &reason, 0), 0);
	virDomainFree(d);
	return st;
}

/* The domain's tag, or "" when it has none (static). */
static const char *tag_of(const char *name)
{
	static char buf[1024];
	virDomainPtr d = virDomainLookupByName(tc, name);
	char *md;

	assert_non_null(d);
	md = virDomainGetMetadata(d, VIR_DOMAIN_METADATA_ELEMENT, LV_NS, 0);
	snprintf(buf, sizeof(buf), "%s", md ? md : "");
	free(md);
	virDomainFree(d);
	virResetLastError();
	return buf;
}

static bool has_managed_save(const char *name)
{
	virDomainPtr d = virDomainLookupByName(tc, name);
	int r;

	assert_non_null(d);
	r = virDomainHasManagedSaveImage(d, 0);
	virDomainFree(d);
	return r == 1;
}

/* Writes a tag by hand, as a crash would have left it. */
static void set_tag(const char *name, const char *xml)
{
	virDomainPtr d = virDomainLookupByName(tc, name);
	unsigned flags = VIR_DOMAIN_AFFECT_CONFIG;

	assert_non_null(d);
	if (virDomainIsActive(d) == 1)
		flags |= VIR_DOMAIN_AFFECT_LIVE;
	assert_int_equal(virDomainSetMetadata(d, VIR_DOMAIN_METADATA_ELEMENT, xml, "autoscaled", LV_NS, flags), 0);
	virDomainFree(d);
}

/* Observes until the pool holds `n` warm members in `state` (or 30 s have
 * passed, which fails): the refill is paced by a wall-clock interval. */
static void observe_until_warm(struct autoscaled_driver_instance *h, int state, int n)
{
	struct autoscaled_observation obs;
	struct seen s;

	for (int i = 0; i < 3000; i++) {
		observe_into(h, &s, &obs);
		if (warm_metric[state] == n)
			return;
		usleep(10 * 1000);
	}
	fail_msg("the pool never held %d warm members in state %d", n, state);
}

/* A paused pool: made on the first observations, never reported as
 * members, taken first on a scale-out (no clone made), refilled after the
 * pacing interval with the next free names. */
static void test_warm_paused(void **state)
{
	struct autoscaled_driver_instance *h;
	struct autoscaled_observation obs;
	struct seen s;
	int r, base = count_domains(), base_vol = count_volumes();

	memset(warm_metric, 0, sizeof(warm_metric));
	host.metric = capture_metric;
	h = open_with(&r, "uri=test:///default", "template=web-template", "warm_pool.size=2", "warm_pool.state=paused",
		      "warm_pool.warmup=0", "warm_pool.refill=3", "shutdown_timeout=2", NULL);
	assert_int_equal(r, 0);
	observe_into(h, &s, &obs);
	/* Made and booting: no member, no capacity. */
	assert_int_equal(s.n, 0);
	assert_int_equal(obs.target_size, 0);
	assert_int_equal(count_domains(), base + 2);
	assert_int_equal(warm_metric[1], 2);
	assert_non_null(strstr(tag_of("web-1"), "warm=\"booting\""));
	assert_int_equal(dom_state("web-1"), VIR_DOMAIN_RUNNING);
	observe_into(h, &s, &obs);
	assert_int_equal(s.n, 0);
	assert_int_equal(warm_metric[1], 0);
	assert_int_equal(warm_metric[2], 2);
	assert_int_equal(dom_state("web-1"), VIR_DOMAIN_PAUSED);
	assert_int_equal(dom_state("web-2"), VIR_DOMAIN_PAUSED);
	assert_non_null(strstr(tag_of("web-2"), "warm=\"paused\""));
	assert_non_null(strstr(tag_of("web-2"), "parked=\""));

	/* One from the pool: resumed, a member, no new domain. */
	memset(&s, 0, sizeof(s));
	assert_int_equal(drv->set_capacity(h, 1, collect, &s), 0);
	assert_int_equal(s.n, 1);
	assert_int_equal(count_domains(), base + 2);
	assert_int_equal(s.state[0], AUTOSCALED_INSTANCE_RUNNING);
	assert_int_equal(dom_state(s.id[0]), VIR_DOMAIN_RUNNING);
	check_member(s.id[0], s.id[0][4] - '0');
	assert_null(strstr(tag_of(s.id[0]), "warm="));
	observe_into(h, &s, &obs);
	assert_int_equal(s.n, 1);
	assert_int_equal(obs.target_size, 1);
	assert_true(s.ready[0]);
	/* The pool is not refilled inside the pacing interval. */
	assert_int_equal(count_domains(), base + 2);
	assert_int_equal(warm_metric[2], 1);

	/* Two more: the last warm one, then a clone. */
	memset(&s, 0, sizeof(s));
	assert_int_equal(drv->set_capacity(h, 3, collect, &s), 0);
	assert_int_equal(s.n, 2);
	assert_true(seen_has(&s, "web-3"));
	assert_int_equal(count_domains(), base + 3);
	assert_non_null(strstr(logbuf, "from the warm pool (paused)"));
	observe_into(h, &s, &obs);
	assert_int_equal(s.n, 3);
	assert_int_equal(obs.target_size, 3);
	assert_int_equal(warm_metric[2], 0);
	/* Refilled after the interval, with the next free names. */
	observe_until_warm(h, 2, 2);
	assert_int_equal(count_domains(), base + 5);
	assert_int_equal(count_volumes(), base_vol + 5);
	assert_non_null(strstr(tag_of("web-4"), "warm=\"paused\""));
	assert_non_null(strstr(tag_of("web-5"), "warm=\"paused\""));
	observe_into(h, &s, &obs);
	assert_int_equal(s.n, 3);
	assert_false(seen_has(&s, "web-4"));

	/* A removal by policy never picks a warm member. */
	memset(&s, 0, sizeof(s));
	assert_int_equal(drv->remove_instances(h, 3, NULL, 0, collect, &s), 0);
	assert_int_equal(s.n, 3);
	assert_false(seen_has(&s, "web-4"));
	assert_true(domain_exists("web-4"));
	/* Nor by name: a warm member is not a member. */
	{
		const char *ids[] = { "web-5" };

		memset(&s, 0, sizeof(s));
		assert_int_equal(drv->remove_instances(h, 0, ids, 1, collect, &s), 0);
		assert_int_equal(s.n, 0);
		assert_true(domain_exists("web-5"));
	}
	drv->close(h);

	/* Without a pool, warm members left are removed. */
	h = open_with(&r, "uri=test:///default", "template=web-template", NULL);
	assert_int_equal(r, 0);
	observe_into(h, &s, &obs);
	assert_int_equal(s.n, 0);
	assert_int_equal(warm_metric[2], 0);
	assert_false(domain_exists("web-4"));
	assert_false(domain_exists("web-5"));
	assert_false(volume_exists("web-4.qcow2"));
	assert_int_equal(count_domains(), base);
	drv->close(h);
	/* A group that never had a pool publishes no warm series. */
	h = open_with(&r, "uri=test:///default", "template=web-template", NULL);
	assert_int_equal(r, 0);
	warm_metric_calls = 0;
	observe_into(h, &s, &obs);
	observe_into(h, &s, &obs);
	assert_int_equal(warm_metric_calls, 0);
	drv->close(h);
	host.metric = NULL;
}

/* A saved pool holds managed-save images and is restored by a start; a
 * stopped one holds defined domains with their disks. A change of state
 * replaces the members of the old one. */
static void test_warm_saved_stopped(void **state)
{
	struct autoscaled_driver_instance *h;
	struct autoscaled_observation obs;
	struct seen s;
	int r, base = count_domains();

	memset(warm_metric, 0, sizeof(warm_metric));
	host.metric = capture_metric;
	h = open_with(&r, "uri=test:///default", "template=web-template", "warm_pool.size=1", "warm_pool.state=saved",
		      "warm_pool.warmup=0", NULL);
	assert_int_equal(r, 0);
	observe_into(h, &s, &obs);
	observe_into(h, &s, &obs);
	assert_int_equal(warm_metric[3], 1);
	assert_int_equal(dom_state("web-1"), VIR_DOMAIN_SHUTOFF);
	assert_true(has_managed_save("web-1"));
	assert_non_null(strstr(tag_of("web-1"), "warm=\"saved\""));
	memset(&s, 0, sizeof(s));
	assert_int_equal(drv->set_capacity(h, 1, collect, &s), 0);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.id[0], "web-1");
	assert_int_equal(dom_state("web-1"), VIR_DOMAIN_RUNNING);
	assert_false(has_managed_save("web-1"));
	check_member("web-1", 1);
	drv->close(h);

	/* Stopped: defined, its volume made, never started. */
	h = open_with(&r, "uri=test:///default", "template=web-template", "warm_pool.size=1", "warm_pool.state=stopped",
		      NULL);
	assert_int_equal(r, 0);
	observe_into(h, &s, &obs);
	assert_int_equal(s.n, 1);
	assert_int_equal(warm_metric[4], 1);
	assert_int_equal(dom_state("web-2"), VIR_DOMAIN_SHUTOFF);
	assert_true(volume_exists("web-2.qcow2"));
	assert_non_null(strstr(tag_of("web-2"), "warm=\"stopped\""));
	drv->close(h);

	/* The pool's state changes to paused: the stopped one is replaced. */
	h = open_with(&r, "uri=test:///default", "template=web-template", "warm_pool.size=1", "warm_pool.state=paused",
		      "warm_pool.warmup=0", NULL);
	assert_int_equal(r, 0);
	observe_into(h, &s, &obs);
	observe_into(h, &s, &obs);
	assert_int_equal(s.n, 1);
	assert_int_equal(warm_metric[4], 0);
	assert_int_equal(warm_metric[2], 1);
	assert_non_null(strstr(logbuf, "the pool's state has changed"));
	assert_int_equal(count_domains(), base + 2);
	assert_int_equal(dom_state("web-2"), VIR_DOMAIN_PAUSED);
	drv->close(h);
	host.metric = NULL;
}

/* A scale-in returns its victim to the pool while it has room, running the
 * reseed command with the domain in its environment, and deletes the rest;
 * a warm member taken runs it too. */
static void test_warm_return(void **state)
{
	char dir[] = "/tmp/test-warm-XXXXXX", cmd[256], out[128], line[256];
	struct autoscaled_driver_instance *h;
	struct autoscaled_observation obs;
	struct seen s;
	FILE *f;
	int r, base = count_domains();

	assert_non_null(mkdtemp(dir));
	snprintf(out, sizeof(out), "%s/reseed", dir);
	snprintf(cmd, sizeof(cmd), "warm_pool.reseed_command=[/bin/sh,-c,echo $AUTOSCALED_DOMAIN $AUTOSCALED_WARM_EVENT >>%s]",
		 out);
	h = open_with(&r, "uri=test:///default", "template=web-template", "warm_pool.size=1", "warm_pool.state=paused",
		      "warm_pool.return_on_scale_in=true", "shutdown_timeout=2", cmd, NULL);
	assert_int_equal(r, 0);
	assert_int_equal(drv->set_capacity(h, 3, NULL, NULL), 0);
	memset(&s, 0, sizeof(s));
	assert_int_equal(drv->remove_instances(h, 2, NULL, 0, collect, &s), 0);
	assert_int_equal(s.n, 2);
	/* The newest went back to the pool, the next one is deleted. */
	assert_true(domain_exists("web-3"));
	assert_int_equal(dom_state("web-3"), VIR_DOMAIN_PAUSED);
	assert_non_null(strstr(tag_of("web-3"), "warm=\"paused\""));
	assert_false(domain_exists("web-2"));
	assert_int_equal(count_domains(), base + 2);
	observe_into(h, &s, &obs);
	assert_int_equal(s.n, 1);
	assert_int_equal(obs.target_size, 1);
	/* And back into service. */
	memset(&s, 0, sizeof(s));
	assert_int_equal(drv->set_capacity(h, 2, collect, &s), 0);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.id[0], "web-3");
	drv->close(h);
	f = fopen(out, "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));
	assert_string_equal(line, "web-3 return\n");
	assert_non_null(fgets(line, sizeof(line), f));
	assert_string_equal(line, "web-3 take\n");
	fclose(f);
	unlink(out);
	rmdir(dir);
}

/* After a crash: each half-made warm member is finished or removed, a take
 * cut short finishes as a member, and nothing is counted twice. */
static void test_warm_crash(void **state)
{
	static const char ns[] = "<member group=\"web\" index=\"%d\" created=\"2026-12-01T00:00:00Z\" %s/>";
	struct autoscaled_driver_instance *h;
	struct autoscaled_observation obs;
	struct seen s;
	char xml[512];
	virDomainPtr d;
	int r;

	memset(warm_metric, 0, sizeof(warm_metric));
	host.metric = capture_metric;
	h = open_with(&r, "uri=test:///default", "template=web-template", "warm_pool.size=4", "warm_pool.warmup=0",
		      NULL);
	assert_int_equal(r, 0);
	observe_into(h, &s, &obs);
	observe_into(h, &s, &obs);
	assert_int_equal(warm_metric[2], 4);
	drv->close(h);

	/* web-1: a take cut short (tagged a member, still paused). */
	snprintf(xml, sizeof(xml), ns, 1, "state=\"creating\"");
	set_tag("web-1", xml);
	/* web-2: parked, but the host lost it (shut off). */
	d = virDomainLookupByName(tc, "web-2");
	assert_int_equal(virDomainDestroy(d), 0);
	virDomainFree(d);
	/* web-3: suspended, the tag still says booting. */
	snprintf(xml, sizeof(xml), ns, 3, "state=\"active\" warm=\"booting\" started=\"2026-12-01T00:00:00Z\"");
	set_tag("web-3", xml);
	/* web-4: defined as a warm member, then the crash. */
	snprintf(xml, sizeof(xml), ns, 4, "state=\"creating\" warm=\"paused\"");
	set_tag("web-4", xml);

	h = open_with(&r, "uri=test:///default", "template=web-template", "warm_pool.size=2", "warm_pool.warmup=0",
		      NULL);
	assert_int_equal(r, 0);
	assert_int_equal(dom_state("web-1"), VIR_DOMAIN_RUNNING);
	assert_non_null(strstr(tag_of("web-1"), "state=\"active\""));
	assert_null(strstr(tag_of("web-1"), "warm="));
	assert_false(domain_exists("web-2"));
	assert_false(volume_exists("web-2.qcow2"));
	assert_non_null(strstr(tag_of("web-3"), "warm=\"paused\""));
	assert_false(domain_exists("web-4"));
	assert_false(volume_exists("web-4.qcow2"));
	observe_into(h, &s, &obs);
	/* One member, the warm one left and one made anew: each counted
	 * once, and the new one takes the lowest free name. */
	assert_int_equal(s.n, 1);
	assert_string_equal(s.id[0], "web-1");
	assert_int_equal(obs.target_size, 1);
	assert_int_equal(warm_metric[2], 1);
	assert_int_equal(warm_metric[1], 1);
	assert_non_null(strstr(tag_of("web-2"), "warm=\"booting\""));
	drv->close(h);
	host.metric = NULL;
}

/* Host capacity: test:///default has 16 CPUs and 3 GiB, and its own domain
 * "test" runs with 2 vCPUs and 2 GiB; a clone of web-template needs 2 vCPUs
 * and 128 MiB. With cpu_overcommit 1, (16 - 2) / 2 = 7 members fit; paused
 * warm members count, as they hold theirs. */
static void test_host_capacity(void **state)
{
	struct autoscaled_driver_instance *h;
	struct autoscaled_observation obs;
	struct seen s;
	int r, base = count_domains();

	host.metric = capture_metric;
	h = open_with(&r, "uri=test:///default", "template=web-template", "cpu_overcommit=1", NULL);
	assert_int_equal(r, 0);
	/* Each observation says how many more fit, for the decision. */
	observe_into(h, &s, &obs);
	assert_int_equal(host_room, 7);
	memset(&s, 0, sizeof(s));
	assert_int_equal(drv->set_capacity(h, 10, collect, &s), -ENOSPC);
	assert_int_equal(s.n, 7);
	assert_int_equal(count_domains(), base + 7);
	assert_non_null(strstr(logbuf, "scale-out capped by hosts, not by max: 7 of 10 new members fit"));
	assert_int_equal(drv->set_capacity(h, 8, NULL, NULL), -ENOSPC);
	observe_into(h, &s, &obs);
	assert_int_equal(obs.target_size, 7);
	assert_int_equal(host_room, 0);
	/* Memory bounds alike: 2 GiB of 1.5 GiB allowed are committed. */
	assert_int_equal(drv->remove_instances(h, 7, NULL, 0, NULL, NULL), 0);
	drv->close(h);
	h = open_with(&r, "uri=test:///default", "template=web-template", "memory_overcommit=0.5", NULL);
	assert_int_equal(r, 0);
	assert_int_equal(drv->set_capacity(h, 1, NULL, NULL), -ENOSPC);
	assert_int_equal(count_domains(), base);
	drv->close(h);

	/* Two paused warm members hold 4 vCPUs: taking them needs no room,
	 * and 5 clones fit beside them; the pool is not refilled past the
	 * hosts either. */
	memset(warm_metric, 0, sizeof(warm_metric));
	logbuf[0] = '\0';
	h = open_with(&r, "uri=test:///default", "template=web-template", "cpu_overcommit=1", "warm_pool.size=2",
		      "warm_pool.warmup=0", "shutdown_timeout=2", NULL);
	assert_int_equal(r, 0);
	observe_into(h, &s, &obs);
	observe_into(h, &s, &obs);
	assert_int_equal(warm_metric[2], 2);
	/* The group can grow by 7: the two paused, and 5 clones. */
	assert_int_equal(host_room, 7);
	memset(&s, 0, sizeof(s));
	assert_int_equal(drv->set_capacity(h, 7, collect, &s), 0);
	assert_int_equal(s.n, 7);
	assert_int_equal(count_domains(), base + 7);
	assert_int_equal(drv->set_capacity(h, 8, NULL, NULL), -ENOSPC);
	drv->close(h);
	host.metric = NULL;
	host_room = -1;
}

static void test_fit(void **state)
{
	struct lv_room room = { .total_kib = 3145728, .used_kib = 2097152, .need_kib = 131072,
				.cpus = 16, .used_vcpus = 2, .need_vcpus = 2 };

	assert_int_equal(lv_fit(&room, 0, 0), INT_MAX);
	assert_int_equal(lv_fit(&room, 1, 0), 8);
	assert_int_equal(lv_fit(&room, 0, 1), 7);
	assert_int_equal(lv_fit(&room, 1, 1), 7);
	assert_int_equal(lv_fit(&room, 1, 4), 8);
	assert_int_equal(lv_fit(&room, 0.5, 4), 0);
	room.used_kib = 4 * 1048576ULL;
	assert_int_equal(lv_fit(&room, 1, 0), 0);
	room.need_vcpus = 0;
	assert_int_equal(lv_fit(&room, 0, 1), INT_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_newest, reset),
		cmocka_unit_test_setup(test_oldest, reset),
		cmocka_unit_test_setup(test_least_busy, reset),
		cmocka_unit_test_setup(test_set_capacity_only_grows, reset),
		cmocka_unit_test_setup(test_remove_by_id, reset),
		cmocka_unit_test_setup(test_overlay, reset),
		cmocka_unit_test_setup(test_template_missing, reset),
		cmocka_unit_test_setup(test_pool_full, reset),
		cmocka_unit_test_setup(test_define_refused, reset),
		cmocka_unit_test_setup(test_crash_repair, reset),
		cmocka_unit_test_setup(test_tag_recheck, reset),
		cmocka_unit_test_setup(test_multi_host, reset),
		cmocka_unit_test_setup(test_host_down, reset),
		cmocka_unit_test_setup(test_cpu_source, reset),
		cmocka_unit_test_setup(test_bad_options, reset),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_tag_times),
		cmocka_unit_test(test_cpu_percent),
		cmocka_unit_test(test_victim_order),
		cmocka_unit_test(test_placement),
		cmocka_unit_test_setup(test_ready_port, reset),
		cmocka_unit_test_setup(test_warm_paused, reset),
		cmocka_unit_test_setup(test_warm_saved_stopped, reset),
		cmocka_unit_test_setup(test_warm_return, reset),
		cmocka_unit_test_setup(test_warm_crash, reset),
		cmocka_unit_test_setup(test_host_capacity, reset),
		cmocka_unit_test(test_fit),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
