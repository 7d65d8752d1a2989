/* The admin API: JSON over HTTP on a Unix socket, the server side of
 * autoscalectl(1).
 *
 *   GET    /v1/health
 *   GET    /v1/groups                      a summary of every group
 *   GET    /v1/groups/NAME                 one group in full
 *   GET    /v1/groups/NAME/decisions       recent decision records, oldest first
 *   POST   /v1/groups/NAME/pause           {} | {"for": "2h"} | {"until": ISO 8601}
 *   POST   /v1/groups/NAME/resume
 *   POST   /v1/groups/NAME/pin             {"count": N, "for"|"until": ..., "force": false}
 *   DELETE /v1/groups/NAME/pin
 *   POST   /v1/groups/NAME/dry-run         {"enabled": true|false}
 *   POST   /v1/groups/NAME/what-if         {"values": {SIGNAL: NUMBER...}, "current": N, "partial": true}
 *                                          the decision the group's next evaluation would make on
 *                                          its current state with these inputs changed; nothing
 *                                          acts, nothing is logged or kept
 *   POST   /v1/reload
 *
 * Errors are {"error": "message"} with 400 (bad request), 404 (no such path
 * or group), 405 (method), 409 (refused in the current state: a pin outside
 * the profile's bounds without force, resume when not paused, unpin when not
 * pinned, a reload with an invalid configuration) or 413 (body too large).
 *
 * admin.c parses and validates requests; what they do to the groups comes
 * through struct admin_ops, which the agent implements over the group
 * runtimes. Everything runs on the loop's thread (see httpd.h). */
#ifndef AUTOSCALED_ADMIN_H
#define AUTOSCALED_ADMIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <systemd/sd-event.h>

#define ADMIN_MAX_BODY 4096
#define ADMIN_SOCKET_MODE 0660

struct cJSON;

/* A what-if: inputs that replace what the daemon observes, for one
 * evaluation that does not act. */
#define ADMIN_WHAT_IF_MAX_VALUES 32
struct admin_what_if {
	const char *signal[ADMIN_WHAT_IF_MAX_VALUES]; /* borrowed from the request */
	double value[ADMIN_WHAT_IF_MAX_VALUES];
	size_t n_values;
	int current;  /* -1: as observed */
	bool partial; /* as if the observation missed members */
};

/* The operations behind the endpoints. Those returning int give 0 or a
 * negative errno: -ENOENT (no such group: 404), -ERANGE or -EALREADY
 * (refused: 409), -EINVAL (400); `err` then holds a message. JSON results
 * are owned by the caller; NULL means no such group. */
struct admin_ops {
	struct cJSON *(*health)(void *userdata);
	struct cJSON *(*list)(void *userdata);
	struct cJSON *(*show)(void *userdata, const char *group);
	struct cJSON *(*decisions)(void *userdata, const char *group);
	/* until_ms 0: until resumed. */
	int (*pause)(void *userdata, const char *group, int64_t until_ms, char *err, size_t len);
	int (*resume)(void *userdata, const char *group, char *err, size_t len);
	int (*pin)(void *userdata, const char *group, int count, int64_t until_ms, bool force, char *err,
		   size_t len);
	int (*unpin)(void *userdata, const char *group, char *err, size_t len);
	int (*dry_run)(void *userdata, const char *group, bool enabled, char *err, size_t len);
	int (*reload)(void *userdata, char *err, size_t len);
	/* The decision record of a what-if in *ret, or a negative errno as
	 * above. */
	int (*what_if)(void *userdata, const char *group, const struct admin_what_if *w, struct cJSON **ret,
		       char *err, size_t len);
	/* The clock for "for" durations and checks of "until" (epoch ms). */
	int64_t (*now_ms)(void *userdata);
	/* Cluster mode: members, owners and this agent's lease (GET
	 * /v1/cluster); NULL (the pointer or the result) when the agent is not
	 * in a cluster: 404. */
	struct cJSON *(*cluster)(void *userdata);
};

struct admin;

/* Serves the API on the Unix socket `path` with mode ADMIN_SOCKET_MODE,
 * owned by group `group` (NULL: the daemon's). `ops` is borrowed and must
 * outlive the server. Returns 0 or a negative errno (logged). */
int admin_new(sd_event *event, const char *path, const char *group, const struct admin_ops *ops, void *userdata,
	      struct admin **ret);

/* Stops serving and removes the socket; NULL is fine. */
void admin_free(struct admin *a);

/* Answers a request for `path` with the API's read-only part alone: GET
 * /v1/health, /v1/groups, /v1/groups/NAME and /v1/groups/NAME/decisions
 * give what the socket gives; every other method is 405 and every other
 * path 404, so nothing reached through here can change a group. For the
 * status page (status-page.h), which shows the same JSON. */
struct httpd_request;
struct httpd_response;
void admin_serve_read_only(const struct admin_ops *ops, void *userdata, const char *path,
			   const struct httpd_request *req, struct httpd_response *resp);

/* Parses an ISO 8601 time with a zone ("2026-12-02T16:00:00Z",
 * "2026-12-02T17:00:00+01:00") into epoch ms. Returns 0 or -EINVAL. */
int admin_parse_time(const char *s, int64_t *ret);

/* Adds `key` as an ISO 8601 UTC time, or null for ms <= 0. */
bool admin_add_time(struct cJSON *o, const char *key, int64_t ms);

/* A bounded ring of decision records (JSON text), for the decisions
 * endpoint: at most ADMIN_RING_SIZE records, and at most the bytes its
 * owner gives it with each record. Its array grows with the records it
 * keeps (ten thousand groups keep one each). The records are kept
 * deflated against a dictionary of a record's names and words (a record
 * of 1.2 KB keeps in about 200 bytes), and the budget counts what they
 * take so. All zeroes is an empty ring. */
#define ADMIN_RING_SIZE 100
struct ring_record;
struct admin_ring {
	struct ring_record **v; /* cap slots, n records from head on, wrapping */
	size_t cap;
	size_t head, n;
	size_t bytes;   /* what the records take, allocator overhead included */
};

/* Adds a record (takes the malloc'ed text and frees it), then drops the
 * oldest while there are more than ADMIN_RING_SIZE or they take more than
 * `limit` bytes (0: no limit); the newest record always stays. Returns
 * the bytes the record takes (its share of the budget), 0 when it is not
 * kept (NULL text, or no memory to keep it). */
size_t admin_ring_push(struct admin_ring *r, char *json, size_t limit);
/* For an owner that makes its newest record only when something reads
 * it: a record taking BYTES (as admin_ring_push() said of the one before)
 * that a newer one is replacing before it was made. Returns true when the
 * ring would keep it beside a newer one of its size (make it and push
 * it); otherwise drops what pushing it would have dropped and returns
 * false (it need not be made). */
bool admin_ring_pass_over(struct admin_ring *r, size_t bytes, size_t limit);
/* The newest record's text (malloc'ed); NULL when there is none, or on
 * ENOMEM. */
char *admin_ring_newest(const struct admin_ring *r);
/* The records, oldest first, as {"decisions": [...]}; NULL on ENOMEM. */
struct cJSON *admin_ring_json(const struct admin_ring *r);
void admin_ring_clear(struct admin_ring *r);

#endif
