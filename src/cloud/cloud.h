/* What the GCE and Azure drivers share besides HTTP and credentials:
 * option lookup, the members of a group as the driver last saw them, and
 * the victim policy. */
#ifndef AUTOSCALED_CLOUD_CLOUD_H
#define AUTOSCALED_CLOUD_CLOUD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "autoscaled/driver.h"
#include "cloud/rest.h"

/* Bounds on what a provider can make us hold. */
#define CLOUD_MAX_MEMBERS 10000
#define CLOUD_MAX_PAGES 200

struct cloud_member {
	char id[128];        /* GCE: instance name; Azure: instanceId */
	char ref[512];       /* GCE: zones/Z/instances/NAME; Azure: resource id */
	char location[64];   /* zone */
	enum autoscaled_instance_state state;
	int64_t created_ms;
	int64_t running_since_ms;
	bool ready;
};

struct cloud_members {
	struct cloud_member *v;
	size_t n, cap;
};

/* Appends a zeroed member; NULL when out of memory or past the bound. */
struct cloud_member *cloud_members_add(struct cloud_members *m);
void cloud_members_clear(struct cloud_members *m);
const struct cloud_member *cloud_members_find(const struct cloud_members *m, const char *id);

/* Fills created_ms (when the provider gave none) and running_since_ms from
 * what the previous observation `prev` saw, so ages survive between calls:
 * a member first seen now was created about now. */
void cloud_members_carry(struct cloud_members *cur, const struct cloud_members *prev, int64_t now_ms);
/* Makes the new observation `cur` the one kept: carries the ages over from
 * `kept` (cloud_members_carry()), gives back the room beyond its members (a
 * list kept until the next observation holds only what it has: a member is
 * some 740 bytes, and a list grows by doubling from 16), frees the old list
 * and moves `cur` into `kept`, leaving `cur` empty. */
void cloud_members_keep(struct cloud_members *kept, struct cloud_members *cur, int64_t now_ms);

/* Reports every member through fn; returns fn's first non-zero value. */
int cloud_members_report(const struct cloud_members *m, autoscaled_instance_fn fn, void *ctx);

enum cloud_victims { CLOUD_VICTIMS_NEWEST, CLOUD_VICTIMS_OLDEST };

/* Picks up to `count` members to delete into out[] (indices): members not
 * yet running first, then running ones newest or oldest first; members
 * already stopping are never picked. Returns how many were picked. */
size_t cloud_pick_victims(const struct cloud_members *m, int count, enum cloud_victims policy, size_t *out);

/* A change a driver is asked for rests on the decision the daemon made
 * from the driver's last observation: when the group's count the driver
 * reads right before acting (NOW) is no longer the count it observed
 * (OBSERVED; -1 when it has observed nothing yet), something else changed
 * the group meanwhile (another agent whose lease was still valid, an
 * operator, the cloud's own autoscaler), and the change is not made:
 * logged as WHO's, naming GROUP and WHAT, and -ESTALE; the next
 * evaluation decides again from what it observes. 0 when unchanged. The
 * clouds' preconditions (Azure's If-Match) then cover the time from that
 * read to the request itself. */
int cloud_check_unchanged(const struct autoscaled_host *host, const char *who, const char *group, int observed, int now,
			  const char *what);

/* Chooses the members remove_instances() deletes, as the ABI defines it:
 * when n_ids > 0 exactly the live members named in ids (one unknown or
 * already stopping is logged as "WHO: 'ID' is not a live NOUN of 'GROUP';
 * skipped"), else `count` of them by `policy` (cloud_pick_victims). Stores
 * a malloc'ed array of indices into m->v in *ret (free() it) and their
 * number in *ret_n, which may be 0. Returns 0 or -ENOMEM. */
int cloud_choose_victims(const struct autoscaled_host *host, const char *who, const char *noun, const char *group,
			 const struct cloud_members *m, int count, const char *const *ids, size_t n_ids,
			 enum cloud_victims policy, size_t **ret, size_t *ret_n);

/* Parses an RFC 3339 / ISO 8601 UTC time ("2024-05-01T10:00:00.123Z" or
 * with an offset) into epoch ms; 0 when it cannot. */
int64_t cloud_parse_time(const char *s);
/* Formats epoch ms as "2024-05-01T10:00:00Z" (whole seconds, UTC), the
 * form both monitoring APIs take in a time range. */
void cloud_format_time(int64_t ms, char *out, size_t size);

/* Typed reads of a provider's reply, which may be malformed or spoofed.
 * Returns the member `key` of object o when its JSON type is one of `types`
 * (cJSON_String, cJSON_Number, cJSON_Object, cJSON_Array, cJSON_True |
 * cJSON_False for a boolean, or'ed), else NULL: when o is not an object, or
 * the member is absent or null. When the member is there with another type
 * it also sets *bad to `key`, unless *bad is set already, so that a caller
 * reads every member it needs and then reports the first wrong one. */
const cJSON *cloud_json_get(const cJSON *o, const char *key, int types, const char **bad);

/* A count (a size, a capacity) given as an integral JSON number or as a
 * string of decimal digits (how Google sends int64): 0 and its value in
 * *ret when it is one from 0 to max, else -EBADMSG. */
int cloud_json_count(const cJSON *v, int max, int *ret);

/* The value of option `key`, or NULL. */
const char *cloud_opt(const struct autoscaled_option *o, size_t n, const char *key);

/* Logs a problem with option `o` (NULL: the driver section, for one that
 * is missing) as a configuration error: "FILE:LINE: WHO: message". */
void cloud_opt_error(const struct autoscaled_host *host, const char *who, const struct autoscaled_option *o,
		     const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Logs "missing required option 'KEY'" for each of `required`
 * (NULL-terminated) that is absent; returns 0 or -EINVAL. */
int cloud_opt_require(const struct autoscaled_host *host, const char *who, const struct autoscaled_option *o,
		      size_t n, const char *const *required);

/* Applies retry_attempts, retry_base, retry_max and http_timeout to c.
 * Returns 0 or -EINVAL after logging the bad option. */
int cloud_opt_retry(const struct autoscaled_host *host, struct rest_client *c, const struct autoscaled_option *o,
		    size_t n);

/* Parses a duration option into *ms (unchanged when absent), in the
 * host's one duration syntax (autoscaled_parse_duration). */
int cloud_opt_duration(const struct autoscaled_host *host, const char *who, const struct autoscaled_option *o,
		       size_t n, const char *key, int64_t *ms);

/* Parses a boolean option into *ret (unchanged when absent): "true" or
 * "false", as the configuration's booleans reach a driver; anything else is
 * an error at the option's FILE:LINE. */
int cloud_opt_bool(const struct autoscaled_host *host, const char *who, const struct autoscaled_option *o, size_t n,
		   const char *key, bool *ret);

/* Parses victim_policy. */
int cloud_opt_victims(const struct autoscaled_host *host, const char *who, const struct autoscaled_option *o, size_t n,
		      enum cloud_victims *ret);

/* Checks that every option key is in `known` (NULL-terminated); an unknown
 * one is reported with the host's near-miss suggestion. */
int cloud_opt_check_keys(const struct autoscaled_host *host, const char *who, const struct autoscaled_option *o,
			 size_t n, const char *const *known);

#endif
