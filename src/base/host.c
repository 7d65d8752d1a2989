/* Names of this machine; see host.h. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/host.h"

bool host_is_loopback(const char *host)
{
	const char *colon, *end;
	unsigned b[4];
	size_t n;
	int used = 0;

	if (!host)
		return false;
	if (host[0] == '[') {
		end = strchr(host, ']');
		n = end ? (size_t)(end - host) + 1 : 0;
	} else {
		colon = strchr(host, ':');
		n = colon ? (size_t)(colon - host) : strlen(host);
	}
	/* After the host: nothing, or a port of digits. */
	if (!n || (host[n] && (host[n] != ':' || !host[n + 1] ||
				 strspn(host + n + 1, "0123456789") != strlen(host + n + 1))))
		return false;
	if ((n == 5 && strncmp(host, "[::1]", 5) == 0) || (n == 9 && strncasecmp(host, "localhost", 9) == 0))
		return true;
	return n <= 15 && strspn(host, "0123456789.") == n &&
	       sscanf(host, "%u.%u.%u.%u%n", &b[0], &b[1], &b[2], &b[3], &used) == 4 && (size_t)used == n &&
	       b[0] == 127 && b[1] < 256 && b[2] < 256 && b[3] < 256;
}
