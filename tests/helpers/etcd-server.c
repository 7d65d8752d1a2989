/* Real etcd servers for the tests: see etcd-server.h. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "etcd-server.h"

bool etcd_test_available(void)
{
	return access("/usr/bin/etcd", X_OK) == 0;
}

/* A loopback port free now, chosen at random below the kernel's ephemeral
 * range (whose ports outgoing connections take), as tap.sh's free_port. */
static int free_port(void)
{
	int lo = 32768;
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "re");

	if (f) {
		if (fscanf(f, "%d", &lo) != 1)
			lo = 32768;
		fclose(f);
	}
	for (int i = 0; i < 200; i++) {
		int hi = lo > 11000 ? lo - 1 : 60000;
		int p = 10000 + (int)((unsigned)random() % (unsigned)(hi - 10000));
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)p),
					  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		int ok;

		if (fd < 0)
			return -1;
		ok = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
		close(fd);
		if (ok)
			return p;
	}
	return -1;
}

static pid_t spawn_member(struct etcd_test *t, int i, const char *cluster)
{
	char name[16], data[300], log[300], client[64], peer[64];
	bool tls = t->cert_file[0] != '\0';
	pid_t pid;

	snprintf(name, sizeof(name), "m%d", i);
	snprintf(data, sizeof(data), "%s/%s", t->dir, name);
	snprintf(log, sizeof(log), "%s/%s.log", t->dir, name);
	snprintf(client, sizeof(client), "%s://127.0.0.1:%d", tls ? "https" : "http", t->client_port[i]);
	snprintf(peer, sizeof(peer), "http://127.0.0.1:%d", t->peer_port[i]);
	pid = fork();
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		if (tls)
			execl("/usr/bin/etcd", "etcd", "--name", name, "--data-dir", data, "--listen-client-urls",
			      client, "--advertise-client-urls", client, "--listen-peer-urls", peer,
			      "--initial-advertise-peer-urls", peer, "--initial-cluster", cluster,
			      "--initial-cluster-state", "new", "--heartbeat-interval", "100", "--election-timeout",
			      "1000", "--cert-file", t->cert_file, "--key-file", t->key_file, "--trusted-ca-file",
			      t->ca_file, "--client-cert-auth", (char *)NULL);
		else
			execl("/usr/bin/etcd", "etcd", "--name", name, "--data-dir", data, "--listen-client-urls",
			      client, "--advertise-client-urls", client, "--listen-peer-urls", peer,
			      "--initial-advertise-peer-urls", peer, "--initial-cluster", cluster,
			      "--initial-cluster-state", "new", "--heartbeat-interval", "100", "--election-timeout",
			      "1000", (char *)NULL);
		_exit(127);
	}
	return pid;
}

static bool healthy(const struct etcd_test *t, const char *endpoint)
{
	CURL *h = curl_easy_init();
	char url[128];
	long status = 0;
	CURLcode cc;
	FILE *devnull = fopen("/dev/null", "we");

	if (!h || !devnull) {
		if (h)
			curl_easy_cleanup(h);
		if (devnull)
			fclose(devnull);
		return false;
	}
	snprintf(url, sizeof(url), "%s/health", endpoint);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 1000L);
	curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(h, CURLOPT_WRITEDATA, devnull);
	if (t->cert_file[0]) {
		curl_easy_setopt(h, CURLOPT_CAINFO, t->ca_file);
		curl_easy_setopt(h, CURLOPT_SSLCERT, t->cert_file);
		curl_easy_setopt(h, CURLOPT_SSLKEY, t->key_file);
	}
	cc = curl_easy_perform(h);
	if (cc == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(h);
	fclose(devnull);
	return cc == CURLE_OK && status == 200;
}

bool etcd_test_alive(struct etcd_test *t, int i)
{
	if (t->pid[i] <= 0)
		return false;
	if (waitpid(t->pid[i], NULL, WNOHANG) == t->pid[i]) {
		t->pid[i] = 0;
		return false;
	}
	return true;
}

void etcd_test_signal(struct etcd_test *t, int i, int sig)
{
	if (t->pid[i] <= 0)
		return;
	kill(t->pid[i], sig);
	/* A stop is complete only once every thread of the member has
	 * stopped, which the kernel tells the parent; until then a request
	 * sent just after kill() may still be served. */
	if (sig == SIGSTOP) {
		int st;

		while (waitpid(t->pid[i], &st, WUNTRACED) == t->pid[i] && !WIFSTOPPED(st))
			;
	}
	if (sig == SIGKILL) {
		waitpid(t->pid[i], NULL, 0);
		t->pid[i] = 0;
	}
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void show_log(const struct etcd_test *t, int i)
{
	char path[300], line[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/m%d.log", t->dir, i);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		fprintf(stderr, "# etcd m%d: %s", i, line);
	fclose(f);
}

/* One try on fresh ports. Returns 0, -EADDRINUSE when a member exited
 * (most likely another test took a port between the check and the
 * listen), or -ETIMEDOUT. */
static int start_once(struct etcd_test *t)
{
	char cluster[512] = "";
	size_t off = 0;

	for (int i = 0; i < t->members; i++) {
		t->client_port[i] = free_port();
		t->peer_port[i] = free_port();
		if (t->client_port[i] < 0 || t->peer_port[i] < 0 || t->client_port[i] == t->peer_port[i])
			return -EADDRINUSE;
		snprintf(t->endpoint[i], sizeof(t->endpoint[i]), "%s://127.0.0.1:%d", t->cert_file[0] ? "https" : "http",
			 t->client_port[i]);
		t->endpoints[i] = t->endpoint[i];
		off += (size_t)snprintf(cluster + off, sizeof(cluster) - off, "%sm%d=http://127.0.0.1:%d",
					i ? "," : "", i, t->peer_port[i]);
	}
	for (int i = 0; i < t->members; i++)
		t->pid[i] = spawn_member(t, i, cluster);
	for (int waited = 0; waited < 30000; waited += 50) {
		int ok = 0;

		for (int i = 0; i < t->members; i++) {
			if (!etcd_test_alive(t, i))
				return -EADDRINUSE;
			ok += healthy(t, t->endpoint[i]);
		}
		if (ok == t->members)
			return 0;
		sleep_ms(50);
	}
	return -ETIMEDOUT;
}

static int start(struct etcd_test *t, int members);

static void kill_all(struct etcd_test *t)
{
	for (int i = 0; i < t->members; i++)
		etcd_test_signal(t, i, SIGKILL);
}

int etcd_test_start(struct etcd_test *t, int members)
{
	memset(t, 0, sizeof(*t));
	return start(t, members);
}

int etcd_test_start_tls(struct etcd_test *t, int members, const char *cert, const char *key, const char *ca)
{
	memset(t, 0, sizeof(*t));
	snprintf(t->cert_file, sizeof(t->cert_file), "%s", cert);
	snprintf(t->key_file, sizeof(t->key_file), "%s", key);
	snprintf(t->ca_file, sizeof(t->ca_file), "%s", ca);
	return start(t, members);
}

static int start(struct etcd_test *t, int members)
{
	const char *tmp = getenv("TMPDIR");
	int r = -EADDRINUSE;

	if (members != 1 && members != 3)
		return -EINVAL;
	t->members = members;
	srandom((unsigned)getpid() ^ (unsigned)time(NULL));
	/* /var/tmp is on disk where /tmp may be a small tmpfs. */
	snprintf(t->dir, sizeof(t->dir), "%s/autoscaled-etcd.XXXXXX", tmp && *tmp ? tmp : "/var/tmp");
	if (!mkdtemp(t->dir)) {
		fprintf(stderr, "# etcd: cannot create %s: %s\n", t->dir, strerror(errno));
		return -errno;
	}
	for (int attempt = 0; attempt < 3 && r == -EADDRINUSE; attempt++) {
		r = start_once(t);
		if (r < 0) {
			for (int i = 0; i < members; i++)
				if (!etcd_test_alive(t, i))
					show_log(t, i);
			kill_all(t);
			/* A failed cluster's data dirs would make the next try
			 * join the old cluster's identity. */
			for (int i = 0; i < members; i++) {
				char cmd[400];

				snprintf(cmd, sizeof(cmd), "rm -rf '%s/m%d'", t->dir, i);
				if (system(cmd) != 0)
					break;
			}
		}
	}
	if (r < 0) {
		fprintf(stderr, "# etcd: %d member(s) did not become healthy: %s\n", members, strerror(-r));
		etcd_test_stop(t);
	}
	return r;
}

void etcd_test_stop(struct etcd_test *t)
{
	char cmd[400];

	kill_all(t);
	if (t->dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->dir);
		if (system(cmd) != 0)
			fprintf(stderr, "# etcd: could not remove %s\n", t->dir);
		t->dir[0] = '\0';
	}
}
