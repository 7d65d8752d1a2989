/* The monitoring sources' reply parsers end to end: Cloud Monitoring's
 * timeSeries.list (gce_monitoring) or Azure Monitor's metrics
 * (azure_monitor, built with FUZZ_AZURE_MONITOR), with the token request
 * before them, all answered from the input through the fake transport of
 * driver-harness.c (one reply per record). The source's file is compiled
 * into the target so that its fetch function, which the source's worker
 * thread calls, can be called directly without the thread. A value that
 * is not finite (1e999 in JSON, "inf" or "nan" as an int64Value) may come
 * back from fetch: the generic half of the source (source.c) turns it into
 * an invalid reading, so that is not a finding here. */
#include <stdlib.h>
#include <string.h>

#ifdef FUZZ_AZURE_MONITOR
#include "../../src/sources/azure_monitor.c"
#else
#include "../../src/sources/gce_monitoring.c"
#endif

#include "driver-harness.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_quiet();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rest_client http;
	char why[512];
	double v;
	int r;
#ifdef FUZZ_AZURE_MONITOR
	struct az_mon m = { .max_age_ms = 300000 };

	if (azauth_init_imds(&m.auth, &cloud_source_sink, WHO, NULL, "https://management.azure.com/", NULL) < 0)
		abort();
	m.url = strdup("https://management.azure.com/subscriptions/0/resourceGroups/rg/providers/"
		       "Microsoft.Compute/virtualMachineScaleSets/web/providers/microsoft.insights/metrics"
		       "?api-version=2018-01-01&metricnames=Percentage%20CPU&aggregation=Average&interval=PT1M");
#else
	struct gce_mon m = { .max_age_ms = 300000 };

	if (gauth_init_metadata(&m.auth, &cloud_source_sink, WHO, NULL,
				"https://www.googleapis.com/auth/monitoring.read") < 0)
		abort();
	m.url = strdup("https://monitoring.googleapis.com/v3/projects/p/timeSeries?filter=x");
#endif
	if (!m.url || rest_client_init(&http, &cloud_source_sink, WHO, REST_POLICY_GCE) < 0)
		abort();
	fuzz_transport_start(data, size);
	/* Three polls: the first fetches a token, the later ones reuse it or
	 * refresh it as the fake clock moves. */
	for (int i = 0; i < 3; i++) {
		why[0] = '\0';
#ifdef FUZZ_AZURE_MONITOR
		r = az_fetch(&m, &http, &v, why, sizeof(why));
#else
		r = gce_fetch(&m, &http, &v, why, sizeof(why));
#endif
		if (r < 0 && !why[0])
			abort(); /* every failure says why */
	}
	rest_client_fini(&http);
#ifdef FUZZ_AZURE_MONITOR
	az_mon_free(memcpy(malloc(sizeof(m)), &m, sizeof(m)));
#else
	gce_mon_free(memcpy(malloc(sizeof(m)), &m, sizeof(m)));
#endif
	return 0;
}
