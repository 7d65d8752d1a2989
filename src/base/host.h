/* Names of this machine, for the listeners that must stay on it. Needs
 * nothing but libc. */
#ifndef AUTOSCALED_HOST_H
#define AUTOSCALED_HOST_H

#include <stdbool.h>

/* Whether `host` ("HOST" or "HOST:PORT", as in a Host header or
 * agent.metrics_listen) names this machine: 127.0.0.0/8 as four decimal
 * numbers, [::1] or localhost. Another name could resolve anywhere. */
bool host_is_loopback(const char *host);

#endif
