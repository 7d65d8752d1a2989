/* A blocking client of etcd v3's JSON gateway (etcd 3.4: POST /v3/...).
 *
 * It speaks only what the cluster mode needs: leases (grant, keepalive,
 * revoke, time to live), range, put, delete and transactions. Keys and
 * values travel base64-encoded and 64-bit integers as decimal strings, as
 * the gateway's proto3 JSON mapping wants; fields equal to zero (false, 0,
 * "") are absent from its replies, so an absent field reads as zero.
 *
 * One client holds one libcurl handle and is used by one thread at a time:
 * every call blocks for at most timeout_ms per endpoint tried. The client
 * stays on the endpoint that last answered; on a connection error, a
 * timeout or an etcd "unavailable" reply it tries the next endpoints, each
 * once, so a call takes at most (number of endpoints) x timeout_ms. A
 * write whose reply timed out may have been applied by the member that
 * timed out before it is sent to the next: the callers' writes are
 * idempotent or guarded by a compare that fails the second time.
 *
 * It does not use src/cloud's REST client: that one retries per a cloud's
 * policy with backoffs of seconds, and has neither several endpoints nor
 * client certificates; here a call must end within a lease's margin, and
 * the caller decides what to retry.
 *
 * The client never logs. A failed call returns a negative errno and leaves
 * a one-line reason in etcd_client_error() for the caller to log once. */
#ifndef AUTOSCALED_CLUSTER_ETCD_H
#define AUTOSCALED_CLUSTER_ETCD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The largest reply body taken; a larger one fails the call (-EMSGSIZE). */
#define ETCD_MAX_BODY (16u * 1024u * 1024u)
/* The longest key this client sends or accepts. */
#define ETCD_MAX_KEY 1024

struct etcd_tls {
	const char *ca_file;   /* CA bundle to verify the servers; NULL: the system's */
	const char *cert_file; /* client certificate, or NULL */
	const char *key_file;  /* its key, or NULL */
};

struct etcd_client;

/* Creates a client of the N endpoints ("http://host:port" or https), each
 * copied. timeout_ms bounds one try on one endpoint (>= 1). TLS may be
 * NULL. Returns 0 with *ret set, -EINVAL for no endpoint or a bad one,
 * -ENOMEM. */
int etcd_client_new(const char *const *endpoints, size_t n, const struct etcd_tls *tls, int64_t timeout_ms,
		    struct etcd_client **ret);
/* Frees the client; NULL is fine. */
void etcd_client_free(struct etcd_client *c);
/* Why the last call failed: a static-lifetime string valid until the next
 * call on c. */
const char *etcd_client_error(const struct etcd_client *c);
/* The endpoint the next call goes to first. */
const char *etcd_client_endpoint(const struct etcd_client *c);

/* Grants a lease of ttl_s seconds. The server may raise a TTL below its
 * minimum (2 s in 3.4): *ret_ttl is the granted one. */
int etcd_lease_grant(struct etcd_client *c, int64_t ttl_s, int64_t *ret_id, int64_t *ret_ttl);
/* Renews a lease once. Returns 0 with *ret_ttl the TTL it now has, or
 * -ENOENT when the lease no longer exists (expired or revoked). */
int etcd_lease_keepalive(struct etcd_client *c, int64_t id, int64_t *ret_ttl);
/* Revokes a lease, deleting its keys. Returns 0, -ENOENT when it is gone
 * already. */
int etcd_lease_revoke(struct etcd_client *c, int64_t id);
/* The lease's remaining and granted TTL. Returns -ENOENT when it is gone. */
int etcd_lease_timetolive(struct etcd_client *c, int64_t id, int64_t *ret_ttl, int64_t *ret_granted_ttl);

struct etcd_kv {
	char *key;            /* NUL-terminated */
	char *value;          /* NUL-terminated (value_len bytes before the NUL) */
	size_t value_len;
	int64_t create_revision;
	int64_t mod_revision;
	int64_t version;
	int64_t lease;        /* 0: none */
};

/* The keys of a range (or the range responses of a transaction, in
 * order), and the store's revision when it was read. */
struct etcd_range {
	struct etcd_kv *kvs;
	size_t n;
	int64_t revision;
	bool more;
};
void etcd_range_clear(struct etcd_range *r);

/* Reads KEY, or every key starting with KEY when prefix is set. Returns 0
 * with *ret filled (n = 0 when nothing matched); the caller clears it. */
int etcd_range(struct etcd_client *c, const char *key, bool prefix, struct etcd_range *ret);
/* Writes KEY = VALUE (len bytes), attached to lease (0: none). *ret_revision
 * (may be NULL) is the store's revision after the write. */
int etcd_put(struct etcd_client *c, const char *key, const char *value, size_t len, int64_t lease,
	     int64_t *ret_revision);
/* Deletes KEY, or every key under it with prefix. *ret_deleted (may be
 * NULL) counts the keys deleted. */
int etcd_delete(struct etcd_client *c, const char *key, bool prefix, int64_t *ret_deleted);

enum etcd_compare_target {
	ETCD_TARGET_CREATE,  /* create_revision; 0 means the key does not exist */
	ETCD_TARGET_MOD,     /* mod_revision */
	ETCD_TARGET_VERSION, /* version */
	ETCD_TARGET_VALUE,   /* value */
	ETCD_TARGET_LEASE,   /* the lease the key is attached to */
};

enum etcd_compare_result {
	ETCD_EQUAL,
	ETCD_NOT_EQUAL,
	ETCD_GREATER,
	ETCD_LESS,
};

struct etcd_compare {
	const char *key;
	enum etcd_compare_target target;
	enum etcd_compare_result result;
	int64_t number;      /* for CREATE, MOD, VERSION, LEASE */
	const char *value;   /* for VALUE */
	size_t value_len;
};

enum etcd_op_type {
	ETCD_OP_RANGE,
	ETCD_OP_PUT,
	ETCD_OP_DELETE,
};

struct etcd_op {
	enum etcd_op_type type;
	const char *key;
	const char *value;   /* PUT */
	size_t value_len;
	int64_t lease;       /* PUT; 0: none */
};

struct etcd_txn_result {
	bool succeeded;
	int64_t revision;        /* the store's revision after the transaction */
	struct etcd_range ranges; /* the keys read by the branch's RANGE ops, in order */
};
void etcd_txn_result_clear(struct etcd_txn_result *r);

/* Runs the transaction: when every compare holds, the success ops, else
 * the failure ops. Returns 0 with *ret filled whichever branch ran (the
 * caller clears it), a negative errno when the transaction did not run or
 * its outcome is unknown (a timeout after the request was sent). */
int etcd_txn(struct etcd_client *c, const struct etcd_compare *cmp, size_t ncmp, const struct etcd_op *success,
	     size_t nsuccess, const struct etcd_op *failure, size_t nfailure, struct etcd_txn_result *ret);

#endif
