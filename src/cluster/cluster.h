/* The cluster mode (autoscaled.conf(5), CLUSTER; docs/cluster.md): several
 * agents share the groups through etcd.
 *
 * A struct cluster is this agent's membership and the groups it owns. A
 * thread of its own does all of its etcd traffic, so that no HTTP call runs
 * on the daemon's loop: it keeps the agent's lease alive (every TTL/3),
 * registers the agent under PREFIX/members/NAME with that lease, reads the
 * members and the owner keys (every TTL/3), and takes and gives back the
 * owner keys PREFIX/owners/GROUP as rendezvous hashing (rendezvous.h) says.
 * The loop thread and the driver calls' worker threads only read what the
 * thread found, under a mutex that is never held across a request.
 *
 * The lease is valid locally until its deadline: the send time of the
 * grant or keepalive request that last succeeded (CLOCK_MONOTONIC), plus
 * the TTL etcd granted, minus a margin. etcd counts the TTL from when it
 * received the request, later than its send time, so the agent stops
 * acting before etcd could have expired its lease and given its groups to
 * another agent, with the margin for the two hosts' clock rates.
 *
 * Every function but cluster_check_conf() is thread-safe. */
#ifndef AUTOSCALED_CLUSTER_CLUSTER_H
#define AUTOSCALED_CLUSTER_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"

/* What start-up checks of a cluster section beyond the file's syntax: that
 * the TLS files it names are readable. Returns 0, or a negative errno with
 * "FILE:LINE: message" (the section's place) in why. `autoscaled -n` runs
 * the same check, so that it refuses what the daemon would. */
int cluster_check_conf(const struct cluster_conf *k, char *why, size_t size);

/* Whether two loads say the same of the cluster (either may be NULL): a
 * reload cannot change the agent's membership, only a restart does. */
bool cluster_conf_equal(const struct cluster_conf *a, const struct cluster_conf *b);

struct cluster;

/* A group the agent manages when it owns it: its name and pin (NULL for
 * none), both copied. */
struct cluster_group_spec {
	const char *name;
	const char *pin;
};

/* Creates the cluster runtime of conf (copied) for the groups given (see
 * cluster_set_groups) and starts its thread, which registers the agent.
 * Returns 0 with *ret set, or a negative errno (logged). */
int cluster_start(const struct cluster_conf *conf, const struct cluster_group_spec *groups, size_t n,
		  struct cluster **ret);
/* Stops the thread, waiting for a request in progress (bounded by the
 * client's timeouts), and revokes the lease so that the agent's groups go
 * to others at once instead of after the TTL. NULL is fine. */
void cluster_stop(struct cluster *c);

/* Replaces the set of groups (a reload). Owner keys of groups no longer in
 * the set are given back. */
int cluster_set_groups(struct cluster *c, const struct cluster_group_spec *groups, size_t n);

/* Whether this agent may act on GROUP now: it holds the group's owner key,
 * hashing still gives it the group, and its lease is valid locally. Never
 * blocks on etcd. */
bool cluster_owns(struct cluster *c, const char *group);

/* Whether this agent observes and evaluates GROUP: with `observe =
 * "owned"` (the default) only while the group is its own (it holds its
 * owner key; without a valid lease, hashing last gave it the group, so
 * that an agent cut off from etcd keeps evaluating what it held), so that
 * the targets are read once per interval whatever the number of agents;
 * with "all" always, so that a new owner has evaluated the group all
 * along. */
bool cluster_observes(struct cluster *c, const char *group);

/* When (CLOCK_MONOTONIC, ms) this agent took the owner key of GROUP that
 * it holds now, 0 when cluster_owns() is false. A group's runtime acts
 * only on an observation made after it: a group taken over, or taken
 * back after etcd was unreachable, is observed again before its first
 * action, so that the hold does not end in a burst of stale decisions. */
int64_t cluster_owned_since(struct cluster *c, const char *group);

/* GROUP's owner as last read from etcd (every TTL/3), "" for none, into
 * OWNER; *orphaned tells whether it has had no owner for more than two
 * TTLs. Returns false when GROUP is not one of the cluster's groups. */
bool cluster_group_owner(struct cluster *c, const char *group, char *owner, size_t size, bool *orphaned);

/* Run right before a driver call that changes GROUP's target (on the
 * call's worker thread): writes the intended action (OPERATION, the target
 * COUNT, and FROM) to PREFIX/actions/GROUP in a transaction that succeeds
 * only while the owner key still has this agent's fencing token. Returns 0
 * when the call may go ahead (then cluster_fence_end() must follow it),
 * -EPERM when the agent does not own the group (nothing was sent),
 * -ESTALE when etcd refused the token, or another negative errno when etcd
 * could not be asked. why says it in a sentence. */
int cluster_fence(struct cluster *c, const char *group, const char *operation, int count, int from, char *why,
		  size_t len);
/* The fenced call has ended: the group may be handed over. */
void cluster_fence_end(struct cluster *c, const char *group);

/* The group's records (docs/cluster.md, "The group's record"):
 * PREFIX/state/GROUP holds the owner's persisted state of the group
 * (state.h, as JSON), PREFIX/forecast/GROUP its forecasters' learnt
 * profiles (forecast-state.h), each with who wrote it and whether it was
 * its last, so that the next owner continues inside the same windows,
 * keeps the rate limits, cooldowns, pin, pause and dry-run, reconciles an
 * action in flight, and forecasts from the history learnt so far.
 *
 * cluster_record_set() gives the newest TEXT (taken) of a record of a
 * group this agent owns; a writer thread puts it in etcd, fenced like an
 * action: at once when URGENT (an action, an operator's change), else at
 * most once every five minutes (the windows' history, which changes at
 * every evaluation). The fence of an action writes a pending state record in the
 * same transaction; giving a group back and a clean stop write every
 * record as final. Returns 0, or -EPERM when the agent does not hold the
 * group (TEXT freed).
 *
 * cluster_record_take() hands over, once per holding, the record read in
 * the transaction that took the owner key whose time is SINCE_MS
 * (cluster_owned_since()): returns 1 with *ret the record's text (NULL when
 * the group had none), or 0 when there is nothing (more) to take. */
enum cluster_record {
	CLUSTER_RECORD_STATE,
	CLUSTER_RECORD_FORECAST,
	CLUSTER_RECORDS
};
int cluster_record_set(struct cluster *c, const char *group, enum cluster_record kind, char *text, bool urgent);
int cluster_record_take(struct cluster *c, const char *group, enum cluster_record kind, int64_t since_ms, char **ret);

/* A copy of what the thread knows, for status and tests. */
struct cluster_member_info {
	char name[65];
	double weight;
};
struct cluster_info {
	bool lease_valid;         /* now before the local deadline */
	int64_t lease_id;
	int64_t lease_left_ms;    /* to the local deadline, 0 when not valid */
	size_t n_members;
	struct cluster_member_info members[64]; /* the first 64 by name */
	size_t n_groups;          /* groups configured */
	size_t n_owned;           /* groups this agent may act on */
	size_t n_orphaned;        /* groups without an owner for more than two TTLs */
	unsigned long renewals;   /* keepalives that succeeded */
	unsigned long renew_failures;
	unsigned long leases_lost; /* leases that ended without a stop */
	char error[256];          /* the newest etcd failure, "" when the last call worked */
};
void cluster_get_info(struct cluster *c, struct cluster_info *ret);
/* The cluster as this agent sees it, for `autoscalectl cluster`: itself
 * and its lease, the members (with how long ago each registered), and for
 * each group its owner as last read from etcd, the owner key's create
 * revision, and whether this agent acts on it now. NULL on ENOMEM; owned
 * by the caller. */
struct cJSON;
struct cJSON *cluster_status_json(struct cluster *c);
/* S when it is printable ASCII, else "?": an agent's name read from etcd
 * goes into logs and replies. */
const char *cluster_printable(const char *s);

/* The fencing token this agent holds for GROUP, 0 when none. */
int64_t cluster_token(struct cluster *c, const char *group);

#endif
