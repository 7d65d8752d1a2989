/* The table of source types: the built-in ones, then those registered at
 * start-up by other parts of the daemon (gce_monitoring and azure_monitor
 * by the cloud code), so that a signal's `source` name finds its
 * implementation. The sources a driver feeds (libvirt_cpu) are not here:
 * the driver declares them in its descriptor, and only a group of that
 * driver has them. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sources/registry.h"

#define SOURCE_MAX_EXTRA 16

static const struct source_ops *const builtin[] = {
	&source_prometheus,
	&source_haproxy,
	&source_http_json,
	&source_exec,
	&source_replay,
#ifdef WITH_HIREDIS
	&source_redis,
#endif
};

/* Types the project knows about that come from elsewhere or need an
 * optional library, so that a config naming one gets "not available in
 * this build" rather than "unknown". */
static const char *const reserved[] = { "redis", "gce_monitoring", "azure_monitor" };

static const struct source_ops *extra[SOURCE_MAX_EXTRA];
static size_t n_extra;

const struct source_ops *source_lookup(const char *name)
{
	for (size_t i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++)
		if (strcmp(builtin[i]->name, name) == 0)
			return builtin[i];
	for (size_t i = 0; i < n_extra; i++)
		if (strcmp(extra[i]->name, name) == 0)
			return extra[i];
	return NULL;
}

int source_register(const struct source_ops *ops)
{
	if (source_lookup(ops->name))
		return -EEXIST;
	if (n_extra == SOURCE_MAX_EXTRA)
		return -ENOSPC;
	extra[n_extra++] = ops;
	return 0;
}

bool source_type_reserved(const char *name)
{
	for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
		if (strcmp(reserved[i], name) == 0)
			return true;
	return false;
}

size_t source_type_names(const char **v, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < sizeof(builtin) / sizeof(builtin[0]) && n < max; i++)
		v[n++] = builtin[i]->name;
	for (size_t i = 0; i < n_extra && n < max; i++)
		v[n++] = extra[i]->name;
	return n;
}

void source_type_list(char *buf, size_t buflen)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(builtin) / sizeof(builtin[0]) + n_extra; i++) {
		const char *name = i < sizeof(builtin) / sizeof(builtin[0]) ? builtin[i]->name
			: extra[i - sizeof(builtin) / sizeof(builtin[0])]->name;
		int w = snprintf(buf + n, buflen - n, "%s%s", n ? ", " : "", name);

		if (w < 0 || (size_t)w >= buflen - n)
			break;
		n += (size_t)w;
	}
}
