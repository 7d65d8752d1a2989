/* Start-up checks of the cluster section: see cluster.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cluster/cluster.h"

int cluster_check_conf(const struct cluster_conf *k, char *why, size_t size)
{
	const char *const names[] = { "ca_file", "cert_file", "key_file" };
	const char *const files[] = { k->ca_file, k->cert_file, k->key_file };

	for (size_t i = 0; i < 3; i++) {
		int r;

		if (!files[i])
			continue;
		/* curl would fail on each request; the daemon refuses to start
		 * instead, naming the file. */
		r = access(files[i], R_OK) < 0 ? -errno : 0;
		if (r < 0) {
			snprintf(why, size, "%s:%d: cluster tls '%s' '%s' cannot be read: %s", k->file, k->line, names[i],
				 files[i], strerror(-r));
			return r;
		}
	}
	return 0;
}
