/* autoscaled: the daemon's entry point, and the dispatcher of its offline
 * modes (`explain`, `simulate`, `-n`). */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "config/config.h"
#include "agent/driver.h"
#include "simulation/explain.h"
#include "log/log.h"
#include "agent/preflight.h"
#include "base/heap.h"
#include "simulation/simulate.h"

#define DEFAULT_CONFIG AUTOSCALED_CONFIG_FILE

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: autoscaled [OPTION]...\n"
		"       autoscaled explain -c FILE --group NAME --current N [--ready N]\n"
		"                          [--value SIGNAL=NUMBER]... [--at ISO8601]\n"
		"       autoscaled simulate -c FILE --group NAME --trace FILE --format FORMAT [...]\n"
		"\n"
		"Autoscaler for libvirt VM pools and cloud instance groups.\n"
		"\n"
		"  -c, --config FILE     configuration file (default " DEFAULT_CONFIG ")\n"
		"  -n, --check-config    validate the configuration, print every error, and exit\n"
		"  -f, --foreground      log to stderr instead of the journal\n"
		"      --dry-run         decide and log, but never act on a group\n"
		"  -v, --verbose         log at the debug level too: every evaluation, not only changes\n"
		"      --list-drivers    list the driver plugins found, and exit\n"
		"  -V, --version         print the version and exit\n"
		"  -h, --help            print this help and exit\n"
		"\n"
		"Default paths (agent.state_directory and agent.admin_socket change the last two):\n"
		"  configuration    " AUTOSCALED_CONFIG_FILE "\n"
		"  state directory  " AUTOSCALED_STATE_DIRECTORY "\n"
		"  admin socket     " AUTOSCALED_ADMIN_SOCKET "\n"
		"\n"
		"See autoscaled(8) and autoscaled.conf(5).\n");
}

/* Prints every error of a configuration that failed to load. */
static int check_config(const char *path, bool quiet)
{
	struct config_errors errs = {0};
	struct config *c = NULL;
	int r;

	r = config_load(path, &c, &errs);
	/* "configuration OK" means the daemon can start with it: the drivers
	 * and sources are checked as start-up checks them. */
	if (r == 0 && (r = preflight_check(c, &errs)) < 0) {
		config_free(c);
		c = NULL;
	}
	if (r < 0) {
		if (errs.n == 0)
			fprintf(stderr, "%s: %s\n", path, strerror(-r));
		for (size_t i = 0; i < errs.n; i++)
			fprintf(stderr, "%s\n", errs.v[i]);
		config_errors_clear(&errs);
		return EXIT_FAILURE;
	}
	config_free(c);
	if (!quiet)
		printf("configuration OK\n");
	return EXIT_SUCCESS;
}

#ifdef HAVE_JEMALLOC
/* jemalloc's settings, read when it starts (MALLOC_CONF in the environment
 * adds to them). One arena and no per-thread caches: the driver workers
 * (hundreds of threads at 10,000 groups) make and free small blocks, and
 * with a cache each (one arena alone) the soak stood at 112 MB five
 * minutes in, against 83 MB with glibc's malloc beside it; the loop's
 * thread and the state writer's take a small one (heap_thread_cache()).
 * Freed pages go back to the kernel after two seconds unused
 * (dirty_decay_ms), outright rather than lazily (muzzy_decay_ms 0: a page
 * freed lazily counts in RSS until the kernel wants it); with both at 0
 * the soak took 9.1 % of a core against 6.8 % (most of it system time).
 * docs/soak.md has the runs. */
const char *malloc_conf = HEAP_JEMALLOC_CONF;
#endif

int main(int argc, char **argv)
{
	enum { OPT_DRY_RUN = 256, OPT_LIST_DRIVERS };
	static const struct option longopts[] = {
		{"config", required_argument, NULL, 'c'},
		{"check-config", no_argument, NULL, 'n'},
		{"foreground", no_argument, NULL, 'f'},
		{"dry-run", no_argument, NULL, OPT_DRY_RUN},
		{"verbose", no_argument, NULL, 'v'},
		{"list-drivers", no_argument, NULL, OPT_LIST_DRIVERS},
		{"version", no_argument, NULL, 'V'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct agent_options opts = {.config_path = DEFAULT_CONFIG};
	bool check = false, list = false;
	int c;

	/* Every mode's work is on this thread (the daemon's loop, a replay). */
	heap_thread_cache();
	if (argc > 1 && strcmp(argv[1], "explain") == 0)
		return explain_main(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "simulate") == 0)
		return simulate_main(argc - 1, argv + 1);

	while ((c = getopt_long(argc, argv, "c:nfvVh", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			opts.config_path = optarg;
			break;
		case 'n':
			check = true;
			break;
		case 'f':
			opts.foreground = true;
			break;
		case 'v':
			opts.verbose = true;
			break;
		case OPT_DRY_RUN:
			opts.dry_run = true;
			break;
		case OPT_LIST_DRIVERS:
			list = true;
			break;
		case 'V':
			printf("autoscaled %s\n", PACKAGE_VERSION);
			return EXIT_SUCCESS;
		case 'h':
			usage(stdout);
			return EXIT_SUCCESS;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "autoscaled: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	if (check)
		return check_config(opts.config_path, false);
	if (list) {
		const char *dir = NULL;
		struct config *cf = NULL;

		/* The configured driver directory counts when the file loads. */
		if (config_load(opts.config_path, &cf, NULL) == 0)
			dir = cf->agent.driver_directory;
		int r = driver_print_list(dir, stdout);

		config_free(cf);
		return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
	}
	log_init(opts.foreground, opts.verbose);
	/* These two settings are glibc's malloc's; with jemalloc (HAVE_JEMALLOC
	 * above) its heap is not used and they change nothing.
	 *
	 * A long-running daemon with large, short-lived buffers (a scrape of
	 * thousands of groups' metrics is megabytes): from 256 KiB they are
	 * mapped and given back when freed. Left to glibc, the threshold rises
	 * to the largest buffer freed so far, and such buffers stay in the
	 * heap's resident size for good (the soak measured 16 MB more at
	 * 2,000 groups). */
	mallopt(M_MMAP_THRESHOLD, 256 * 1024);
	/* One heap for every thread. Left to glibc, the driver workers get up
	 * to eight heaps a CPU, each keeping free pieces of its own: the
	 * 10,000-group soak (458 threads, 16 heaps) ended at 165-166 MB with
	 * them and at 151-152 MB with one (four pairs of runs side by side;
	 * four heaps: 159 MB against 165). The price: the loop's thread now
	 * sorts the blocks the workers free, up to 0.8 % of a core more on it
	 * (0.0-0.8 in the four pairs), about what the workers no longer
	 * spend (all threads together: 9.0 % against 9.0 %, the mean of the
	 * pairs). The workers mostly wait on the network and on their hosts,
	 * and each thread's cache of small blocks takes no lock, so they
	 * seldom wait for the heap's. */
	mallopt(M_ARENA_MAX, 1);
	return agent_run(&opts) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
