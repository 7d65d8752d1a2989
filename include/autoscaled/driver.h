/* autoscaled driver plugin ABI: the only header a driver includes.
 *
 * A driver is a shared object, installed as $(pkglibdir)/drivers/NAME.so,
 * that exports exactly one symbol, autoscaled_driver_info(), returning a
 * pointer to a `static const struct autoscaled_driver`. Link it with
 *     -module -avoid-version -shared -export-symbols-regex '^autoscaled_driver_info$$'
 * so that nothing else leaks into the daemon's symbol space.
 *
 * Versioning (as tpm2-tss does for its TCTI modules): abi_version is the
 * major version and must equal AUTOSCALED_DRIVER_ABI_VERSION exactly
 * (ABI 2 dropped reload and read_cpu, which no host called, and carries
 * the driver's own signal sources through sources and observe() instead;
 * a module built for ABI 1 is refused and must be rebuilt);
 * struct_size is sizeof(struct autoscaled_driver) as the driver was built.
 * Later minor revisions only append operations at the end of the struct and
 * keep abi_version, so a host reads an operation only when its offset lies
 * inside struct_size (AUTOSCALED_DRIVER_HAS_OP) and treats one beyond it as
 * NULL. A struct smaller than AUTOSCALED_DRIVER_MIN_SIZE is refused. The
 * host's struct autoscaled_host grows the same way, the other way round:
 * members are appended at its end, and a driver reads one only when
 * host->struct_size covers it (AUTOSCALED_HOST_HAS), so a new driver runs
 * in an older host of the same abi_version.
 *
 * Memory: every pointer that crosses the boundary is borrowed. Strings and
 * structs given to a callback are valid only during that call (copy what you
 * keep); options given to open/check are valid only during that call.
 * Nothing allocated on one side is freed on the other. No libconfig, cJSON or
 * libvirt type crosses the boundary: options arrive as plain key/value pairs.
 *
 * Errors: every operation returns 0 or a negative errno. The driver logs the
 * detail once through host->log (its own name first, user values in quotes);
 * the host logs only that the operation failed. Suggested codes: -EINVAL bad
 * options, -ENOENT something configured does not exist (template, group),
 * -EHOSTUNREACH / -ECONNREFUSED a backend is down, -ENOSPC out of capacity,
 * -EEXIST a name collision, -ETIMEDOUT a deadline passed, -EIO anything else.
 *
 * Threading contract: operations may block (libvirt calls, HTTP, graceful
 * shutdowns with a deadline), so the host calls them off its event-loop
 * thread. The host makes at most one call at a time per driver instance
 * handle; calls on different handles (different groups) may run
 * concurrently on different threads, so a driver keeps its state in the
 * handle and guards any process-wide state itself. host->log may be called
 * from whichever thread runs the operation.
 */
#ifndef AUTOSCALED_DRIVER_H
#define AUTOSCALED_DRIVER_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AUTOSCALED_DRIVER_ABI_VERSION 2u

/* The exported symbol's name, for dlsym(). */
#define AUTOSCALED_DRIVER_SYMBOL "autoscaled_driver_info"

/* Put on the definition of autoscaled_driver_info() in a driver. */
#define AUTOSCALED_DRIVER_EXPORT __attribute__((visibility("default")))

/* Levels of host->log, in increasing severity. */
enum autoscaled_log_level {
	AUTOSCALED_LOG_DEBUG = 0,
	AUTOSCALED_LOG_INFO = 1,
	AUTOSCALED_LOG_NOTICE = 2,
	AUTOSCALED_LOG_WARNING = 3,
	AUTOSCALED_LOG_ERROR = 4,
};

/* What host->metric publishes. Values are ABI: new ones are only appended,
 * and a host ignores a value it does not know. */
enum autoscaled_metric {
	/* A gauge: the requests left in a provider's throttling budget, as its
	 * last reply said (Azure's x-ms-ratelimit-remaining-* headers). `label`
	 * names the budget ("subscription-reads", or a resource policy such as
	 * "Microsoft.Compute/GetVMScaleSet3Min"); each label is its own series. */
	AUTOSCALED_METRIC_RATELIMIT_REMAINING = 0,
	/* A counter: `value` requests were retried (label NULL). The host adds
	 * it up; publishing 0 makes the series exist from the start. */
	AUTOSCALED_METRIC_RETRIES = 1,
	/* A counter: `value` provider requests or long-running operations
	 * failed for good, after any retries (label NULL). */
	AUTOSCALED_METRIC_API_ERRORS = 2,
	/* A gauge: the group's warm members (instances made ready ahead of a
	 * scale-out and not counted as capacity) in the state `label` names
	 * ("booting", "paused", "saved", "stopped"); each label is its own
	 * series. Appended in a minor revision of ABI 2; an older host ignores
	 * it. */
	AUTOSCALED_METRIC_WARM_INSTANCES = 3,
	/* A gauge: how many more instances the group can have on its hosts
	 * (label NULL), warm members that hold their share already included;
	 * published only by a driver that bounds placement by host capacity,
	 * during each observe(). The host also reads the value published
	 * during an observe() as an input of the decision: a scale-out goes no
	 * further than it. Appended with AUTOSCALED_METRIC_WARM_INSTANCES. */
	AUTOSCALED_METRIC_HOST_ROOM = 4,
};

/* One configuration option of a group's driver: `driver { key = value; }`.
 * Scalars (strings, numbers, booleans) arrive as their text in `value`
 * ("web", "3", "2.5", "true") with list == NULL and n_list == 0; a list or
 * array arrives as n_list strings in `list` with value == NULL. `where` is
 * "FILE:LINE" of the option for error messages, or NULL. */
struct autoscaled_option {
	const char *key;
	const char *value;
	const char *const *list;
	size_t n_list;
	const char *where;
};

/* What the host offers a driver. The host keeps this struct and its strings
 * alive from open() until close() returns, so a driver may keep the pointer
 * in its handle. */
struct autoscaled_host {
	uint32_t abi_version;  /* AUTOSCALED_DRIVER_ABI_VERSION of the host */
	uint32_t struct_size;  /* sizeof(struct autoscaled_host) of the host */
	const char *group;     /* name of the group this instance serves */
	void *userdata;        /* the host's own; drivers pass it back untouched */
	/* Logs one message (no trailing newline needed). The host adds the group
	 * as a structured field; the driver starts the text with its own name. */
	void (*log)(const struct autoscaled_host *host, enum autoscaled_log_level level, const char *fmt, ...)
		__attribute__((format(printf, 3, 4)));
	/* Appended by a minor revision of ABI 1; optional: read it only through
	 * AUTOSCALED_HOST_HAS(host, metric), since an older host's struct ends
	 * before it and a host may leave it NULL. Publishes one of the driver
	 * metrics below, which the host exports with the group and the driver's
	 * name as labels. Cheap and non-blocking; callable from the thread that
	 * runs an operation (and from open/close). */
	void (*metric)(const struct autoscaled_host *host, enum autoscaled_metric metric, const char *label,
		       double value);
	/* Appended by a minor revision of ABI 1; optional, as `metric` is
	 * (AUTOSCALED_HOST_HAS). Parses a duration written as autoscaled.conf(5)
	 * spells every duration ("90", "90s", "1h30m", "90min", "1.5h",
	 * "500ms"; a bare number is seconds) into milliseconds, so that a
	 * driver's options read as the core's do. Returns 0, -EINVAL for text
	 * that is not a duration, -ERANGE for one beyond the host's limit; *ret_ms
	 * is written only on success. No logging; callable from any thread.
	 * autoscaled_parse_duration() below falls back when a host lacks it. */
	int (*parse_duration)(const struct autoscaled_host *host, const char *text, int64_t *ret_ms);
	/* Appended with parse_duration; optional. "FILE:LINE" of the group's
	 * driver section (its driver_options, else the group), for a problem
	 * that no single option carries, such as a required option that is
	 * missing; NULL when unknown. A message about the configuration starts
	 * with the location (the option's `where`, else this), as the host's
	 * own configuration errors do: "FILE:LINE: NAME: message". */
	const char *where;
	/* Appended with parse_duration; optional. Returns the entry of `known`
	 * (NULL-terminated) that `word` is most likely a typo of, as the host
	 * suggests for its own keys, or NULL when none is close. */
	const char *(*near_miss)(const struct autoscaled_host *host, const char *word, const char *const *known);
};

/* True when host h was built with member `m` in its struct and sets it. */
#define AUTOSCALED_HOST_HAS(h, m) \
	((h)->struct_size >= offsetof(struct autoscaled_host, m) + sizeof((h)->m) && (h)->m != NULL)

/* Parses a duration option through host->parse_duration. A host older than
 * that member gets the one form every host understood, a plain number of
 * seconds ("30", "2.5"), so a driver still runs there with such values.
 * Returns 0 or a negative errno as parse_duration does. */
static inline int autoscaled_parse_duration(const struct autoscaled_host *host, const char *text, int64_t *ret_ms)
{
	double v = 0;
	int digits = 0, dot = 0;

	if (AUTOSCALED_HOST_HAS(host, parse_duration))
		return host->parse_duration(host, text, ret_ms);
	for (const char *p = text; p && *p; p++) {
		if (*p == '.' && !dot++)
			continue;
		if (*p < '0' || *p > '9' || ++digits > 12)
			return -EINVAL;
	}
	if (!digits)
		return -EINVAL;
	for (const char *p = text; *p; p++)
		if (*p != '.')
			v = v * 10 + (*p - '0');
	for (const char *p = strchr(text, '.'); p && *++p;)
		v /= 10;
	*ret_ms = (int64_t)(v * 1000 + 0.5);
	return 0;
}

/* The location a message about option `o` starts with (see host->where):
 * the option's own, else the driver section's, else NULL. */
static inline const char *autoscaled_option_where(const struct autoscaled_host *host,
						  const struct autoscaled_option *o)
{
	if (o && o->where)
		return o->where;
	return AUTOSCALED_HOST_HAS(host, where) ? host->where : NULL;
}

/* The likely intended word for a misspelt `word`, or NULL (and always NULL
 * in a host without near_miss). */
static inline const char *autoscaled_near_miss(const struct autoscaled_host *host, const char *word,
					       const char *const *known)
{
	return AUTOSCALED_HOST_HAS(host, near_miss) ? host->near_miss(host, word, known) : NULL;
}

enum autoscaled_instance_state {
	AUTOSCALED_INSTANCE_PROVISIONING = 0, /* being created or booting, not yet running */
	AUTOSCALED_INSTANCE_RUNNING = 1,
	AUTOSCALED_INSTANCE_STOPPING = 2,     /* being removed */
};

/* One member of a group, as observe() and set_capacity() report it. Times
 * are UTC epoch milliseconds; 0 means unknown (created) or not running
 * (running_since). `ready` is the driver's own readiness (running, and a
 * health check passed when one is configured); the host's initialization
 * period counts from running_since on top of it. `location` says where it
 * lives (libvirt: the connection URI; clouds: the zone) or is NULL; the
 * host shows it (autoscalectl members) and decides nothing on it. */
struct autoscaled_instance {
	const char *id;
	enum autoscaled_instance_state state;
	int64_t created_ms;
	int64_t running_since_ms;
	bool ready;
	const char *location;
};

/* The group as a whole, written by observe() on success. target_size is the
 * count the backend is converging to (libvirt: the members that are not
 * being removed); stable is false while anything is being created or
 * removed; partial is true when some location could not be asked (a libvirt
 * host down): the instances reported are only the reachable ones, and the
 * host should not scale in on such an observation. */
struct autoscaled_observation {
	int target_size;
	bool stable;
	bool partial;
};

/* Callbacks through which results reach the host. ctx is the host's pointer
 * given with the operation. A non-zero return asks the driver to stop
 * reporting and to return that value from the operation. */
typedef int (*autoscaled_instance_fn)(void *ctx, const struct autoscaled_instance *instance);
/* One member's value of one of the driver's sources (see `sources` below):
 * `source` is that source's name, `id` the member's as observe() reported
 * it. libvirt_cpu, for instance, is the CPU utilisation of one domain over
 * the last interval, 0-100 with 100 meaning all of its vCPUs busy
 * (hypervisor overhead may push it a little above 100). */
typedef int (*autoscaled_sample_fn)(void *ctx, const char *source, const char *id, double value);

/* A signal source that a driver feeds from its observations, such as the
 * libvirt driver's libvirt_cpu: a signal of a group served by the driver
 * that names it (`source = "libvirt_cpu"`) reads it, and no endpoint is
 * polled. The name starts with the driver's own name and an underscore, so
 * that it cannot be taken for one of the daemon's source types (the loader
 * refuses a descriptor whose names do not); names are [a-z0-9_], at most
 * 64 characters, and distinct. observe() reports each member's value; the
 * signal's reading at each observation is their mean over the members the
 * host counts (running, ready and past the group's initialization
 * period), and a reading with no such member is invalid, never zero. */
struct autoscaled_source {
	const char *name;
	const char *description; /* one line, for --list-drivers */
};

/* A driver's open instance for one group; opaque to the host. */
struct autoscaled_driver_instance;

struct autoscaled_driver {
	uint32_t abi_version;  /* AUTOSCALED_DRIVER_ABI_VERSION */
	uint32_t struct_size;  /* sizeof(struct autoscaled_driver) */
	const char *name;        /* equals the file name without ".so" */
	const char *description; /* one line for --list-drivers */
	const char *config_help; /* the options, one per line: "key = type  meaning (default)"; --list-drivers prints them */
	/* The sources the driver feeds (see struct autoscaled_source); NULL
	 * and 0 for none. */
	const struct autoscaled_source *sources;
	size_t n_sources;

	/* Mandatory. Validates the options, connects, repairs what a crash left
	 * half done, and stores a new handle in *ret. `host` stays valid until
	 * close(). On failure *ret is untouched and nothing stays allocated.
	 * New options (a reload of the configuration that changes them) go to
	 * a new handle: the host opens one and closes the old. */
	int (*open)(const struct autoscaled_host *host, const struct autoscaled_option *options, size_t n_options,
		    struct autoscaled_driver_instance **ret);

	/* Mandatory. Releases the handle; accepts NULL. Never fails. */
	void (*close)(struct autoscaled_driver_instance *handle);

	/* Mandatory. Reports every member through fn (may be NULL to get only
	 * the summary) and, on success, writes *ret. Reachable members are
	 * reported even when the call fails part-way; see `partial`.
	 * With `sample` set (only when a signal of the group reads one of the
	 * driver's sources), it also reports each member's value of each of
	 * its sources, after that member; a member without a value yet is
	 * left out (libvirt_cpu: a rate, so the first observation of a member
	 * only takes its baseline). A value that cannot be read is logged and
	 * left out; it does not fail the observation. With sample NULL the
	 * driver reads no source at all. */
	int (*observe)(struct autoscaled_driver_instance *handle, autoscaled_instance_fn fn, autoscaled_sample_fn sample,
		       void *ctx, struct autoscaled_observation *ret);

	/* Mandatory. Scale-out: makes the group grow to `count` instances and
	 * returns when the backend has accepted that (libvirt: the new domains
	 * are started). Instances created by this call are reported through
	 * fn (may be NULL). It only ever grows: a count equal to the group's
	 * current size (the count observe() reports as target_size) returns 0
	 * and changes nothing, and a count below it is refused with -ERANGE
	 * after logging both numbers, without removing anything, so that a
	 * scale-out decided on an older observation can never shrink the
	 * group. Shrinking is remove_instances(), the host's one scale-in. */
	int (*set_capacity)(struct autoscaled_driver_instance *handle, int count, autoscaled_instance_fn fn, void *ctx);

	/* Mandatory. Scale-in: removes `count` instances chosen by the driver's
	 * configured victim policy (it knows the instances; e.g. newest, oldest,
	 * least-busy) or, when n_ids > 0, exactly the instances named in ids
	 * (count is then ignored; an unknown id is logged and skipped). Each
	 * instance removed is reported through fn (may be NULL) once it is gone.
	 * Returns 0 when all were removed, else the first error. */
	int (*remove_instances)(struct autoscaled_driver_instance *handle, int count, const char *const *ids,
				size_t n_ids, autoscaled_instance_fn fn, void *ctx);

	/* Optional. Validates options without connecting or changing anything,
	 * for `autoscaled -n`, start-up and a reload; logs each problem through
	 * host->log. */
	int (*check)(const struct autoscaled_host *host, const struct autoscaled_option *options, size_t n_options);
};

/* The smallest descriptor a host of this ABI accepts: everything up to and
 * including the mandatory operations. */
#define AUTOSCALED_DRIVER_MIN_SIZE \
	(offsetof(struct autoscaled_driver, remove_instances) + sizeof(((struct autoscaled_driver *)0)->remove_instances))

/* True when descriptor d was built with operation `op` in its struct. */
#define AUTOSCALED_DRIVER_HAS_OP(d, op) \
	((d)->struct_size >= offsetof(struct autoscaled_driver, op) + sizeof((d)->op) && (d)->op != NULL)

typedef const struct autoscaled_driver *(*autoscaled_driver_info_fn)(void);

/* The one symbol a driver exports. */
AUTOSCALED_DRIVER_EXPORT const struct autoscaled_driver *autoscaled_driver_info(void);

#ifdef __cplusplus
}
#endif

#endif
