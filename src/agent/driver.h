/* The host side of the driver plugin ABI (include/autoscaled/driver.h):
 * finding, loading and checking driver modules, listing them, converting a
 * group's configured options, and the host callbacks drivers log through.
 *
 * Modules load with RTLD_NOW (a missing symbol fails at load, not at the
 * first scale-out) and are never unloaded: a loaded driver stays in a
 * process-wide table until exit, so a handle or a callback can never point
 * into an unmapped object. The table is guarded by a mutex; the functions
 * here may be called from any thread.
 */
#ifndef AUTOSCALED_DRIVER_LOADER_H
#define AUTOSCALED_DRIVER_LOADER_H

#include <stddef.h>
#include <stdio.h>

#include "autoscaled/driver.h"
#include "config/config.h"

/* Longest driver name accepted; names are [a-z0-9_-]+. */
#define DRIVER_NAME_MAX 64

/* A loaded and checked driver module. Owned by the loader; valid until
 * exit. `ops` is the module's descriptor. */
struct driver {
	char *name;
	char *path;
	const struct autoscaled_driver *ops;
};

/* The directory drivers are loaded from: $AUTOSCALED_DRIVER_DIR when set and
 * not empty, else `configured` (agent.driver_directory) when not NULL, else
 * the built-in DRIVERDIR. The result is borrowed (from the environment, the
 * argument or a constant). */
const char *driver_directory(const char *configured);

/* Loads driver `name` from driver_directory(configured), or returns the one
 * already loaded under that name. On success returns 0 and stores it in
 * *ret. On failure returns a negative errno and writes into err (errlen
 * bytes, always terminated) one message naming the file and what to do:
 * -ENOENT no such file, -ELIBBAD dlopen failed (dlerror), -ENOEXEC the
 * symbol is missing or the descriptor is malformed (a mandatory operation
 * missing, a source not named DRIVER_WHAT), -EPROTO an ABI version
 * or struct size this host does not speak, -EINVAL a bad name. The caller
 * logs the message; this function does not log. */
int driver_load(const char *name, const char *configured, const struct driver **ret, char *err, size_t errlen);

/* Calls fn for each "*.so" in dir, in name order: with the loaded driver, or
 * with drv == NULL and the reason it could not be loaded. A non-zero return
 * from fn stops the walk and is returned. Returns -errno when dir cannot be
 * read. Modules that load stay loaded (see above). */
typedef int (*driver_list_fn)(void *ctx, const char *file, const struct driver *drv, const char *error);
int driver_list(const char *dir, driver_list_fn fn, void *ctx);

/* `autoscaled --list-drivers`: prints the directory, then one line per
 * driver ("  NAME  DESCRIPTION", and "; feeds the source S, ..." when it
 * has sources) followed by its config_help indented by six spaces, or the
 * file and why it does not load, to
 * out. Returns 0 when the directory was read (even if some modules are
 * broken), else a negative errno after printing why. */
int driver_print_list(const char *configured, FILE *out);

/* The index in ops->sources of the source named `source` (a signal's
 * `source`), or -1 when driver ops does not feed one of that name. The
 * loader has made sure that the names are unique. */
int driver_source_index(const struct autoscaled_driver *ops, const char *source);

/* The options of one group converted to the ABI's plain form. Owns every
 * string it points to. */
struct driver_options {
	struct autoscaled_option *v;
	size_t n;
};

/* Converts a group's configured driver options. Scalars become text (the
 * option's printed form), lists stay lists, and each carries "FILE:LINE".
 * Returns 0 or -ENOMEM (then *ret is untouched). Free with
 * driver_options_free(), which accepts an empty or zeroed struct. */
int driver_options_from_config(const struct options *in, struct driver_options *ret);
/* A group's options as its driver gets them: its driver_options as above,
 * then its warm pool (when it has one) as options "warm_pool.size",
 * "warm_pool.state", ... (see add_warm_pool() in driver.c). */
int driver_options_from_group(const struct group_conf *gc, struct driver_options *ret);
void driver_options_free(struct driver_options *o);

/* Fills `host` with this daemon's callbacks for a driver instance serving
 * `group` (borrowed; must outlive the driver instance), for tools and
 * tests: its log callback writes through log_group() with the group as
 * GROUP=, its metric callback drops what a driver publishes, durations and
 * near misses are the configuration's (parse_duration_ms,
 * config_near_miss), and `where` is NULL. Pass userdata NULL. */
void driver_host_init(struct autoscaled_host *host, const char *group, void *userdata);

/* The daemon's host for one driver instance: it owns copies of the group
 * and driver names and of `where` (the "FILE:LINE" of the group's driver
 * section, or NULL), and its metric callback records into `metrics` (the
 * agent's registry, which must outlive it; NULL drops metrics). Keep it
 * with the handle until after close(), then driver_host_free() it
 * (NULL is fine). Returns 0 or -ENOMEM. */
struct metrics;
int driver_host_new(const char *group, const char *driver, const char *where, struct metrics *metrics,
		    struct autoscaled_host **ret);
void driver_host_free(struct autoscaled_host *host);

/* Writes "FILE:LINE" of group gc's driver section into buf: its
 * driver_options block, else the group; "" when the group has no location
 * (a configuration built in memory). */
void driver_section_where(const struct group_conf *gc, char *buf, size_t len);

/* Until driver_capture_end(), the newest warning or error a driver logs
 * through a host of driver_host_init() on the calling thread is also copied
 * into `buf` (truncated to `len`; emptied here), so that the caller of a
 * failed operation can report the driver's own words; and, when room is
 * not NULL, the newest AUTOSCALED_METRIC_HOST_ROOM the driver publishes is
 * stored in *room (set to -1 here: not measured). */
void driver_capture_begin(char *buf, size_t len, int *room);
void driver_capture_end(void);

#endif
