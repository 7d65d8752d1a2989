/* The libvirt driver's internals, shared by the files of drivers/libvirt/.
 * Nothing here is exported from the module (only autoscaled_driver_info()
 * is).
 *
 * Membership: a domain belongs to group G when its <metadata> holds
 *     <autoscaled:member xmlns:autoscaled="https://autoscaled.invalid/xmlns/member/1"
 *         group="G" index="3" created="2026-12-02T14:00:00Z" started="..." state="active"/>
 * `state` is "creating" from define until the first start has been recorded,
 * "active" afterwards and "removing" once a scale-in has chosen it, so that a
 * crash at any point leaves a mark saying how to finish the job.
 *
 * A warm member (a group's warm_pool, libvirt-warm.c) carries the same tag
 * with a warm marker: warm="booting" (started, to be parked once warmed
 * up), "paused" (suspended), "saved" (managed-saved) or "stopped" (defined,
 * never started), and parked="TIME" once parked. A scan puts it in the
 * handle's warm list, never among the members, so nothing counts it as
 * capacity, reads its CPU or sends it traffic; taking it into service
 * rewrites the tag without the marker (state "creating") before the domain
 * is resumed or started, so a crash at any point leaves either a warm
 * member or a member, never both.
 *
 * Names are deterministic: member N of group G is the name pattern expanded
 * (default "%g-%n": "web-3"), its volumes are "<member><ext>" and
 * "<member>-disk<k><ext>" in the pool of the template's disk. Volumes with
 * such names and no domain of that name are leftovers of a crash and are
 * deleted; the group owns these names.
 */
#ifndef AUTOSCALED_DRIVER_LIBVIRT_H
#define AUTOSCALED_DRIVER_LIBVIRT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libvirt/libvirt.h>
#include <libxml/tree.h>

#include "autoscaled/driver.h"
#include "base/clock.h"

#define LV_NS "https://autoscaled.invalid/xmlns/member/1"
#define LV_NS_PREFIX "autoscaled"
#define LV_NAME_MAX 128     /* domain and volume names we make */
#define LV_MAX_HOSTS 64     /* URIs per group */
#define LV_MAX_MEMBERS 4096 /* members per group */
#define LV_MAX_DISKS 16     /* disks cloned per member */

enum lv_phase {
	LV_CREATING,
	LV_ACTIVE,
	LV_REMOVING,
};

enum lv_policy {
	LV_NEWEST,
	LV_OLDEST,
	LV_LEAST_BUSY,
};

enum lv_volume_mode {
	LV_CLONE,
	LV_OVERLAY,
};

enum lv_shutdown_mode {
	LV_SHUTDOWN_ACPI,
	LV_SHUTDOWN_AGENT,
};

struct lv_host {
	char *uri;
	double weight;
	virConnectPtr conn;
	int failures;           /* consecutive failed opens, for the backoff */
	int64_t retry_at_ms;    /* monotonic; no reopen before this */
	bool reported_down;     /* the outage was logged once */
	/* Indices of this host's members at its last successful scan, kept
	 * while it is down so that no new member takes one of their names. */
	int *indices;
	size_t n_indices;
	/* What the groups of this process know of this URI's tags
	 * (libvirt-tagdir.c); NULL when it could not be had. */
	struct lv_tagdir *tagdir;
};

/* libvirt-tagdir.c. A domain's tag as last read: whose group it named (by
 * lv_tag_group_id(), 0 for no tag), and when (monotonic). A tag's group is
 * written once, when the domain is defined or parked, and never changed by
 * any group, so a domain read as another group's stays one: it is read
 * again after the tag_recheck option (default LV_TAG_RECHECK_MS) plus a
 * spread of up to as much again, taken from its UUID so that groups
 * started together do not reread together; a tag an operator adds by hand
 * is taken within twice that. */
#define LV_TAG_RECHECK_MS (5 * 60 * 1000)
struct lv_tag_entry {
	unsigned char uuid[VIR_UUID_BUFLEN];
	uint64_t group;
	int64_t read_ms;
};
struct lv_tagdir;
uint64_t lv_tag_group_id(const char *group);
/* libvirt-tag.c: the lv_tag_group_id() of the group a tag's XML names; 0
 * when it names none (or does not parse). */
uint64_t lv_tag_read_group(const char *xml);
/* The URI's directory, shared and counted; NULL on ENOMEM. */
struct lv_tagdir *lv_tagdir_get(const char *uri);
void lv_tagdir_put(struct lv_tagdir *d);
/* Copies the entry of domain UUID into *ret; false when there is none. */
bool lv_tagdir_find(struct lv_tagdir *d, const unsigned char *uuid, struct lv_tag_entry *ret);
/* Replaces the directory by V (malloc'ed, taken), one entry per domain of
 * a scan: the domains gone since drop out. */
void lv_tagdir_replace(struct lv_tagdir *d, struct lv_tag_entry *v, size_t n);
/* Whether the tag of E must be read again by a group whose tag_recheck is
 * PERIOD_MS (0: always). */
bool lv_tag_recheck_due(const struct lv_tag_entry *e, int64_t period_ms, int64_t now);

/* The source the driver feeds: each domain's CPU utilisation. */
#define LV_CPU_SOURCE "libvirt_cpu"

/* A domain's warm marker (see above); LV_W_NONE for a member. */
enum lv_warm {
	LV_W_NONE,
	LV_W_BOOTING,
	LV_W_PAUSED,
	LV_W_SAVED,
	LV_W_STOPPED,
};

struct lv_member {
	char name[LV_NAME_MAX];
	int index;
	enum lv_warm warm;
	int64_t parked_ms;      /* epoch ms a warm member was parked, 0 not yet */
	struct lv_host *host;
	enum lv_phase phase;
	int dom_state;          /* VIR_DOMAIN_RUNNING, ... */
	bool port_open;         /* ready_port answered at the last observe */
	int64_t created_ms;     /* epoch ms, 0 unknown */
	int64_t started_ms;     /* epoch ms, 0 never started */
	/* CPU, for the libvirt_cpu source and the least-busy policy. */
	bool have_cpu;
	uint64_t cpu_ns;
	int64_t cpu_wall_ns;
	double cpu_percent;     /* < 0: no value yet */
};

enum lv_warm_state {
	LV_WARM_PAUSED,  /* booted, then suspended: memory held */
	LV_WARM_SAVED,   /* booted, then managed-saved: disk only */
	LV_WARM_STOPPED, /* defined with its disk made, never started */
};

/* The group's warm pool, from the options "warm_pool.KEY" that the daemon
 * adds for a group's warm_pool block (driver_options_from_group()). */
struct lv_warm_options {
	int size;               /* 0: no pool; warm members found are removed */
	enum lv_warm_state state;
	int64_t max_age_ms;     /* 0: no limit */
	int64_t refill_ms;
	int64_t warmup_ms;
	bool return_on_scale_in;
	char **reseed;          /* NULL-terminated argv, NULL for none */
	size_t n_reseed;
};

struct lv_options {
	char *template_name;
	char *name_pattern;
	char *pool;             /* NULL: the template volume's pool */
	enum lv_volume_mode volume_mode;
	enum lv_policy policy;
	enum lv_shutdown_mode shutdown_mode;
	int64_t shutdown_timeout_ms;
	int64_t tag_recheck_ms; /* a domain without the group's tag is not read again for this long */
	int ready_port;         /* 0: ready when running; else also this TCP port answers */
	int64_t ready_timeout_ms;
	char **uris;
	double *weights;
	size_t n_uris;
	struct lv_warm_options warm;
	/* Host capacity: each host takes new members while its committed
	 * memory (vCPUs) stays within this times its own; 0 = not bounded. */
	double memory_overcommit;
	double cpu_overcommit;
};

struct autoscaled_driver_instance {
	const struct autoscaled_host *host;
	struct lv_options opt;
	struct lv_host hosts[LV_MAX_HOSTS];
	size_t n_hosts;
	/* The members as of the last scan; CPU samples carry over by name. */
	struct lv_member *members;
	size_t n_members;
	/* The warm members as of the last scan (never among the members). */
	struct lv_member *warm;
	size_t n_warm;
	int64_t warm_refill_at_ms; /* monotonic; no top-up of the pool before it */
	int64_t warm_reported[5];  /* last count published per enum lv_warm, -1 none */
	bool warm_capped;          /* the last top-up found no host with room (logged once) */
	bool warm_ever;            /* the handle had a pool or warm members: publish their counts */
};

/* Parses and checks the options (libvirt-options.c); logs each
 * problem and returns -EINVAL, or 0 with *ret filled (free with
 * lv_options_free). */
int lv_options_parse(const struct autoscaled_host *host, const struct autoscaled_option *v, size_t n,
		     struct lv_options *ret);
void lv_options_free(struct lv_options *o);

/* libvirt-host.c. Logging with the driver's name first; libvirt's last
 * error is appended by lv_log_virt(). */
void lv_log(struct autoscaled_driver_instance *h, enum autoscaled_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void lv_log_virt(struct autoscaled_driver_instance *h, enum autoscaled_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Maps libvirt's last error to a negative errno. */
int lv_virt_errno(void);

void lv_format_time(int64_t ms, char *buf, size_t len);
int64_t lv_parse_time(const char *s);

/* The connection of host, reopened with backoff when it dropped; NULL when
 * the host is down (logged once per outage). */
virConnectPtr lv_connect(struct autoscaled_driver_instance *h, struct lv_host *host);

/* Rebuilds h->members from every reachable host, finishing what a crash
 * left half done. Sets *partial when a host could not be asked. */
int lv_scan(struct autoscaled_driver_instance *h, bool *partial);

/* Which hosts can take a new domain now (up, with the template; each
 * missing template logged); false when none can. */
bool lv_eligible_hosts(struct autoscaled_driver_instance *h, bool *eligible);
/* The lowest index no member, warm member or member of a host that is down
 * has. */
int lv_next_index(struct autoscaled_driver_instance *h);

/* Host capacity (libvirt-capacity.c). */
struct lv_room {
	unsigned long long total_kib, used_kib, need_kib;
	unsigned cpus, used_vcpus, need_vcpus;
	int fit;                /* new members that fit; INT_MAX unbounded */
};
/* Whether the group bounds placement by host capacity at all. */
bool lv_bounded(const struct autoscaled_driver_instance *h);
/* Reads host's capacity, what its active domains commit and what a new
 * member needs. */
int lv_host_room(struct autoscaled_driver_instance *h, struct lv_host *host, struct lv_room *ret);
/* The room of every eligible host (others get fit 0) and the total. */
int lv_hosts_room(struct autoscaled_driver_instance *h, const bool *eligible, struct lv_room *rooms);
/* When the group is bounded: publishes how many more members the group
 * can have now (what its hosts can take, and its warm members that hold
 * their share already) as AUTOSCALED_METRIC_HOST_ROOM, which the daemon
 * reads as an input of the decision (observe() calls it last). */
void lv_publish_room(struct autoscaled_driver_instance *h);
/* Logs that a scale-out to `want` new members made only `made`. */
void lv_log_capped(struct autoscaled_driver_instance *h, int want, int made, const bool *eligible,
		   const struct lv_room *rooms);
/* Pure: how many more members fit in room under the ratios (0 = that
 * resource unbounded; INT_MAX when neither bounds). */
int lv_fit(const struct lv_room *room, double memory_overcommit, double cpu_overcommit);

/* Pure helpers (libvirt-util.c), unit-tested without libvirt. */
int lv_expand_name(const char *pattern, const char *group, int index, char *buf, size_t len);
int lv_match_name(const char *pattern, const char *group, const char *name);
int lv_volume_owner(const char *pattern, const char *group, const char *volume, char *member, size_t len);
int lv_cpu_percent(uint64_t prev_ns, int64_t prev_wall_ns, uint64_t cur_ns, int64_t cur_wall_ns, unsigned vcpus,
		   double *ret);
void lv_order_victims(struct lv_member **v, size_t n, enum lv_policy policy);
int lv_lowest_free_index(const struct lv_member *m, size_t n, const int *taken, size_t n_taken);
/* Connects to port on every address at once (numeric IPv4 or IPv6, NULL
 * for none) and sets open[i] for those that accept within timeout_ms. */
void lv_ports_open(const char *const *addrs, size_t n, int port, int timeout_ms, bool *open);
struct lv_host *lv_place(struct lv_host *hosts, size_t n_hosts, const bool *eligible, const struct lv_member *m,
			 size_t n_members);

/* libvirt-tag.c. Parses a member tag; returns 0 when it is one of group's. */
int lv_parse_tag(const char *xml, const char *group, struct lv_member *m);
/* The tag as an element (without its namespace, which the caller adds). */
xmlNodePtr lv_make_tag(const char *group, const struct lv_member *m);
/* Writes the member's metadata element (config, and live when running). */
int lv_set_tag(struct autoscaled_driver_instance *h, virDomainPtr dom, const struct lv_member *m);

/* Scale-out (libvirt-clone.c): creates member `index` on host. */
int lv_create_member(struct autoscaled_driver_instance *h, struct lv_host *host, int index,
		     struct lv_member *ret);
/* The same for a warm member in the pool's configured state: started and
 * tagged "booting" (paused, saved), or defined and tagged "stopped". */
int lv_create_warm(struct autoscaled_driver_instance *h, struct lv_host *host, int index, struct lv_member *ret);
/* Deletes crash leftovers: volumes named for a member with no domain. */
void lv_sweep_volumes(struct autoscaled_driver_instance *h, struct lv_host *host);
/* Scale-in (libvirt-remove.c): removes the given members, graceful
 * first; reports each one removed through fn. */
int lv_remove_members(struct autoscaled_driver_instance *h, struct lv_member **v, size_t n, autoscaled_instance_fn fn,
		      void *ctx);
/* Destroys, undefines and deletes the volumes of one member now. */
int lv_finish_removal(struct autoscaled_driver_instance *h, struct lv_host *host, virDomainPtr dom,
		      const char *name);

/* Warm pools (libvirt-warm.c). The scan's repair of a warm member: returns
 * true when it still exists (perhaps with a new marker) afterwards. */
bool lv_warm_repair(struct autoscaled_driver_instance *h, struct lv_host *host, virDomainPtr dom, struct lv_member *m);
/* Takes up to `want` warm members into service for a scale-out, appending
 * them to h->members; returns the number taken. */
size_t lv_warm_take(struct autoscaled_driver_instance *h, size_t want);
/* Parks victims of a scale-in in the pool while it has room (for
 * return_on_scale_in); moves those parked to the front of v and returns
 * how many, each reported through fn as a removed member. */
size_t lv_warm_return(struct autoscaled_driver_instance *h, struct lv_member **v, size_t n, autoscaled_instance_fn fn,
		      void *ctx);
/* The pool's upkeep at the end of an observation: parks warmed-up members,
 * replaces stale ones, tops the pool up (paced by refill) and publishes
 * the counts. */
void lv_warm_maintain(struct autoscaled_driver_instance *h);
/* Publishes the pool's counts per state (a metric, and a log line when
 * they changed). */
void lv_warm_publish(struct autoscaled_driver_instance *h);
/* The state word of a marker ("booting", "paused", ...), "" for none. */
const char *lv_warm_name(enum lv_warm w);

#endif
