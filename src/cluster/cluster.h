/* The cluster mode (autoscaled.conf(5), CLUSTER; docs/cluster.md): several
 * agents share the groups through etcd. */
#ifndef AUTOSCALED_CLUSTER_CLUSTER_H
#define AUTOSCALED_CLUSTER_CLUSTER_H

#include <stddef.h>

#include "config/config.h"

/* What start-up checks of a cluster section beyond the file's syntax: that
 * the TLS files it names are readable. Returns 0, or a negative errno with
 * "FILE:LINE: message" (the section's place) in why. `autoscaled -n` runs
 * the same check, so that it refuses what the daemon would. */
int cluster_check_conf(const struct cluster_conf *k, char *why, size_t size);

#endif
