/* libvirt driver: the tag directory, what the groups of this process know
 * of the member tags of one hypervisor's domains (libvirt-internal.h).
 *
 * Every observation lists the hypervisor's domains, and a domain's tag is
 * only in its metadata: one read (an RPC to libvirtd, and an XML parse)
 * per domain. Many groups on one hypervisor would each read every domain
 * of all the groups at every observation, a cost that grows with the
 * square of the groups. The directory keeps, per domain (by UUID), whose
 * tag it carried when a group of this process last read it and when; a
 * group reads a domain whose tag is another group's (or none) again only
 * once its own tag_recheck has passed since, and reads its own members
 * every time. One directory per URI, shared by the handles connected to
 * it, so the memory grows with the domains, not with the groups. */
#include "libvirt-internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct lv_tagdir {
	char *uri;
	size_t refs;
	struct lv_tag_entry *v; /* sorted by UUID */
	size_t n;
	struct lv_tagdir *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct lv_tagdir *dirs;

uint64_t lv_tag_group_id(const char *group)
{
	uint64_t x = 14695981039346656037ULL; /* FNV-1a */

	for (const unsigned char *p = (const unsigned char *)group; *p; p++)
		x = (x ^ *p) * 1099511628211ULL;
	return x ? x : 1; /* 0 is "no tag" */
}

static int entry_cmp(const void *a, const void *b)
{
	return memcmp(((const struct lv_tag_entry *)a)->uuid, ((const struct lv_tag_entry *)b)->uuid, VIR_UUID_BUFLEN);
}

struct lv_tagdir *lv_tagdir_get(const char *uri)
{
	struct lv_tagdir *d;

	pthread_mutex_lock(&lock);
	for (d = dirs; d; d = d->next)
		if (strcmp(d->uri, uri) == 0)
			break;
	if (!d && (d = calloc(1, sizeof(*d)))) {
		d->uri = strdup(uri);
		if (!d->uri) {
			free(d);
			d = NULL;
		} else {
			d->next = dirs;
			dirs = d;
		}
	}
	if (d)
		d->refs++;
	pthread_mutex_unlock(&lock);
	return d;
}

void lv_tagdir_put(struct lv_tagdir *d)
{
	if (!d)
		return;
	pthread_mutex_lock(&lock);
	if (--d->refs == 0) {
		for (struct lv_tagdir **p = &dirs; *p; p = &(*p)->next)
			if (*p == d) {
				*p = d->next;
				break;
			}
		free(d->uri);
		free(d->v);
		free(d);
	}
	pthread_mutex_unlock(&lock);
}

bool lv_tagdir_find(struct lv_tagdir *d, const unsigned char *uuid, struct lv_tag_entry *ret)
{
	struct lv_tag_entry key, *e;

	memcpy(key.uuid, uuid, VIR_UUID_BUFLEN);
	pthread_mutex_lock(&lock);
	e = d->n ? bsearch(&key, d->v, d->n, sizeof(key), entry_cmp) : NULL;
	if (e)
		*ret = *e;
	pthread_mutex_unlock(&lock);
	return e != NULL;
}

void lv_tagdir_replace(struct lv_tagdir *d, struct lv_tag_entry *v, size_t n)
{
	qsort(v, n, sizeof(*v), entry_cmp);
	pthread_mutex_lock(&lock);
	free(d->v);
	d->v = v;
	d->n = n;
	pthread_mutex_unlock(&lock);
}

bool lv_tag_recheck_due(const struct lv_tag_entry *e, int64_t period_ms, int64_t now)
{
	/* The UUID's bytes are random: a spread of up to one more period. */
	uint32_t spread = (uint32_t)e->uuid[0] << 8 | e->uuid[1];

	return period_ms <= 0 || now >= e->read_ms + period_ms + (int64_t)spread * period_ms / 65536;
}
