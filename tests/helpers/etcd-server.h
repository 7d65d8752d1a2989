/* Real etcd servers for the tests: one member, or a cluster of three, on
 * free loopback ports, with data directories of their own on disk (etcd
 * preallocates ~64 MB of WAL per member, too much for a small tmpfs).
 *
 * etcd_test_start() returns once every member answers /health; members
 * that die are noticed by etcd_test_alive(), which the tests call in their
 * waits so that a dead server fails them in seconds. etcd_test_stop()
 * kills what is left and removes the directories. */
#ifndef AUTOSCALED_TESTS_ETCD_SERVER_H
#define AUTOSCALED_TESTS_ETCD_SERVER_H

#include <stdbool.h>
#include <sys/types.h>

#define ETCD_TEST_MAX_MEMBERS 3

struct etcd_test {
	int members;
	pid_t pid[ETCD_TEST_MAX_MEMBERS];
	int client_port[ETCD_TEST_MAX_MEMBERS];
	int peer_port[ETCD_TEST_MAX_MEMBERS];
	char endpoint[ETCD_TEST_MAX_MEMBERS][64]; /* "http://127.0.0.1:PORT" */
	const char *endpoints[ETCD_TEST_MAX_MEMBERS];
	char dir[256];                            /* the members' data and logs */
	/* TLS (etcd_test_start_tls): the server's certificate and key, and
	 * the CA that client certificates must be signed by; "" for plain
	 * http. The health checks present the same certificate. */
	char cert_file[300], key_file[300], ca_file[300];
};

/* True when etcd is installed (the tests skip without it). */
bool etcd_test_available(void);
/* Starts MEMBERS (1 or 3) members; waits up to 30 s for all to be healthy.
 * Returns 0, or a negative errno after printing why on stderr. */
int etcd_test_start(struct etcd_test *t, int members);
/* The same, the members serving https:// with CERT and KEY and requiring
 * client certificates signed by CA (--client-cert-auth). */
int etcd_test_start_tls(struct etcd_test *t, int members, const char *cert, const char *key, const char *ca);
/* Whether member i runs (it is reaped when it has exited). */
bool etcd_test_alive(struct etcd_test *t, int i);
/* Sends SIG to member i (SIGSTOP: returns once all its threads have
 * stopped; SIGKILL: it is reaped and marked gone). */
void etcd_test_signal(struct etcd_test *t, int i, int sig);
/* Kills every member still running and removes the directory. */
void etcd_test_stop(struct etcd_test *t);

#endif
