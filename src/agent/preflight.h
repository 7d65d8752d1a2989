/* preflight: what `autoscaled -n`, start-up and a reload check beyond the
 * file itself, so that "configuration OK" means the daemon can start with
 * it.
 *
 * config_load() checks the file: its syntax, keys and values. preflight
 * then does, for every group, what start-up does before it acts: it loads
 * the group's driver exactly as the daemon does (driver_load(), the same
 * directory lookup), runs the driver's `check` operation on the group's
 * options (which validates them without connecting), checks that a signal
 * whose source is not one of the daemon's types names a source the group's
 * driver feeds (libvirt_cpu, which takes no source_options), and builds and
 * frees every other signal's source, which validates its options the way
 * start-up does.
 * Nothing connects to a backend and nothing is written.
 */
#ifndef AUTOSCALED_PREFLIGHT_H
#define AUTOSCALED_PREFLIGHT_H

#include "config/config.h"

/* Checks `c` as above. Every problem found is appended to errs (which may
 * already hold errors, or be empty) as "FILE:LINE: message"; the messages of
 * a driver's check carry the option's FILE:LINE, or the group's
 * driver_options when the problem has no option of its own. Returns 0 when
 * there is none, -EINVAL when there is any, or -ENOMEM. Not thread-safe:
 * call it from the loop thread (or before it runs). */
int preflight_check(const struct config *c, struct config_errors *errs);

#endif
