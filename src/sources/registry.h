/* The built-in source types, one per file of src/sources/. */
#ifndef AUTOSCALED_SOURCES_REGISTRY_H
#define AUTOSCALED_SOURCES_REGISTRY_H

#include "sources/source.h"

extern const struct source_ops source_prometheus;
extern const struct source_ops source_haproxy;
extern const struct source_ops source_http_json;
extern const struct source_ops source_exec;
extern const struct source_ops source_replay;
#ifdef WITH_HIREDIS
extern const struct source_ops source_redis;
#endif

#endif
