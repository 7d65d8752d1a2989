/* resolve: host name lookups that do not block the event loop, for the
 * sources that connect by themselves (redis). glibc's getaddrinfo_a() runs
 * the lookup on its own thread and a pipe brings the result back to the
 * sd-event loop, so a slow DNS server delays only the signal that waits
 * for it. */
#ifndef AUTOSCALED_SOURCES_RESOLVE_H
#define AUTOSCALED_SOURCES_RESOLVE_H

#include <stdbool.h>
#include <systemd/sd-event.h>

struct resolve;

/* STATUS 0 with ADDR, the first address as text ("127.0.0.1", "::1"), or a
 * negative errno (-EHOSTUNREACH) with ERROR. Called on the loop thread,
 * never from within resolve_start(); both strings are borrowed. */
typedef void (*resolve_done_fn)(void *userdata, int status, const char *addr, const char *error);

/* True when HOST is already a numeric IPv4 or IPv6 address. */
bool resolve_is_numeric(const char *host);

/* Starts looking HOST up. Returns 0 and stores a handle for
 * resolve_cancel(), or a negative errno (then DONE is not called). */
int resolve_start(sd_event *event, const char *host, resolve_done_fn done, void *userdata, struct resolve **ret);

/* Stops waiting: DONE will not be called. Safe with NULL. A lookup already
 * running finishes on its thread and is freed when it reports. */
void resolve_cancel(struct resolve *r);

#endif
