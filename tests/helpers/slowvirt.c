/* slowvirt: preloaded into the daemon (LD_PRELOAD), it stands between the
 * libvirt driver and libvirt's test hypervisor, whose calls all return at
 * once, so that a test can give a scale-out the duration a real one has
 * and count what the hypervisor was asked to do.
 *
 * Environment:
 *   SLOWVIRT_LOG      a file: a line per domain defined, "define NAME", per
 *                     domain start asked for, "start NAME", and per suspend,
 *                     resume and managed save ("suspend NAME", "resume
 *                     NAME", "managedsave NAME")
 *   SLOWVIRT_DELAY_MS how long each domain start takes (default 0)
 *   SLOWVIRT_CPU_PERCENT
 *                     when set, every active domain reports one vCPU busy
 *                     this per cent of the time (cpu.time grows with the
 *                     monotonic clock at that rate), which the test
 *                     hypervisor cannot report by itself
 *
 * The daemon resolves the driver module's libvirt symbols through the
 * global scope, where a preloaded object comes first; the real functions
 * are found with RTLD_NEXT. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <libvirt/libvirt.h>

typedef virDomainPtr (*define_fn)(virConnectPtr, const char *);
typedef int (*create_fn)(virDomainPtr);

static void log_line(const char *what, virDomainPtr dom)
{
	const char *path = getenv("SLOWVIRT_LOG");
	FILE *f;

	if (path && (f = fopen(path, "a"))) {
		fprintf(f, "%s %s\n", what, virDomainGetName(dom));
		fclose(f);
	}
}

static void pause_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};

	while (ms > 0 && nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

virDomainPtr virDomainDefineXML(virConnectPtr conn, const char *xml)
{
	define_fn real = (define_fn)dlsym(RTLD_NEXT, "virDomainDefineXML");
	virDomainPtr dom;

	if (!real)
		return NULL;
	dom = real(conn, xml);
	if (dom)
		log_line("define", dom);
	return dom;
}

int virDomainCreate(virDomainPtr dom)
{
	create_fn real = (create_fn)dlsym(RTLD_NEXT, "virDomainCreate");
	const char *delay = getenv("SLOWVIRT_DELAY_MS");

	if (!real)
		return -1;
	log_line("start", dom);
	if (delay)
		pause_ms(strtol(delay, NULL, 10));
	return real(dom);
}

typedef int (*dom_fn)(virDomainPtr);
typedef int (*dom_flags_fn)(virDomainPtr, unsigned int);

int virDomainSuspend(virDomainPtr dom)
{
	dom_fn real = (dom_fn)dlsym(RTLD_NEXT, "virDomainSuspend");

	if (!real)
		return -1;
	log_line("suspend", dom);
	return real(dom);
}

int virDomainResume(virDomainPtr dom)
{
	dom_fn real = (dom_fn)dlsym(RTLD_NEXT, "virDomainResume");

	if (!real)
		return -1;
	log_line("resume", dom);
	return real(dom);
}

int virDomainManagedSave(virDomainPtr dom, unsigned int flags)
{
	dom_flags_fn real = (dom_flags_fn)dlsym(RTLD_NEXT, "virDomainManagedSave");

	if (!real)
		return -1;
	log_line("managedsave", dom);
	return real(dom, flags);
}

typedef int (*stats_fn)(virConnectPtr, unsigned int, virDomainStatsRecordPtr **, unsigned int);

/* The records as libvirt's own: freed by virDomainStatsRecordListFree(),
 * which frees the parameters, unrefs the domain and frees the record and
 * the list with the C allocator GLib uses. */
int virConnectGetAllDomainStats(virConnectPtr conn, unsigned int stats, virDomainStatsRecordPtr **retStats,
				unsigned int flags)
{
	stats_fn real = (stats_fn)dlsym(RTLD_NEXT, "virConnectGetAllDomainStats");
	const char *pct = getenv("SLOWVIRT_CPU_PERCENT");
	virDomainStatsRecordPtr *v;
	virDomainPtr *doms = NULL;
	struct timespec ts;
	unsigned long long cpu;
	bool ok;
	int n;

	if (!pct)
		return real ? real(conn, stats, retStats, flags) : -1;
	n = virConnectListAllDomains(conn, &doms, VIR_CONNECT_LIST_DOMAINS_ACTIVE);
	if (n < 0)
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	cpu = (unsigned long long)(((double)ts.tv_sec * 1e9 + (double)ts.tv_nsec) * strtod(pct, NULL) / 100);
	v = calloc((size_t)n + 1, sizeof(*v));
	ok = v != NULL;
	for (int i = 0; i < n; i++) {
		int max = 0;

		if (ok && !(v[i] = calloc(1, sizeof(*v[i]))))
			ok = false;
		if (!ok) {
			virDomainFree(doms[i]);
			continue;
		}
		v[i]->dom = doms[i];
		if (virTypedParamsAddULLong(&v[i]->params, &v[i]->nparams, &max, "cpu.time", cpu) < 0 ||
		    virTypedParamsAddUInt(&v[i]->params, &v[i]->nparams, &max, "vcpu.current", 1) < 0)
			ok = false;
	}
	free(doms);
	if (!ok) {
		virDomainStatsRecordListFree(v);
		return -1;
	}
	*retStats = v;
	return n;
}
