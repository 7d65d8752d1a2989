/* The CPU a state file's save costs, by the way it is written: the
 * daemon's state_write_file() on a directory of N group files (10,000 by
 * default, as in the soak), each save to a file picked at random, with a
 * state of the size a group with a few recommendations has.
 *
 *   bench/state-write [FILES] [SAVES] [DIR]
 *
 * For each way (durable: synced, through the spare; durable by 8: the
 * same, with one sync of the directory for 8 files, as the state writer
 * syncs the saves of actions decided together; replace: the same, not
 * synced; in place: a routine save) it prints the CPU (user and system)
 * and the wall-clock time per save, three rounds, one way after the
 * other. The directory (default: a new one under $TMPDIR or /var/tmp,
 * on the disk rather than in memory) is removed at the end. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "base/clock.h"
#include "state/state.h"

static char text[600];

static double cpu_s(void)
{
	struct rusage r;

	getrusage(RUSAGE_SELF, &r);
	return (double)(r.ru_utime.tv_sec + r.ru_stime.tv_sec) + (double)(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
}

static double wall_s(void)
{
	return (double)clock_mono_ns() / 1e9;
}

static int save(const char *dir, unsigned i, enum state_write how)
{
	char path[PATH_MAX], name[64];

	snprintf(name, sizeof(name), "g%u.state", i);
	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	return state_write_file(dir, path, name, text, how);
}

static void remove_dir(const char *dir, unsigned files)
{
	char path[PATH_MAX];

	for (unsigned i = 0; i < files; i++) {
		if (snprintf(path, sizeof(path), "%s/g%u.state", dir, i) < (int)sizeof(path))
			unlink(path);
		if (snprintf(path, sizeof(path), "%s/.g%u.state.spare", dir, i) < (int)sizeof(path))
			unlink(path);
	}
	rmdir(dir);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		enum state_write how;
		unsigned batch; /* files a sync of the directory (STATE_WRITE_DURABLE_FILE) */
	} ways[] = {
		{"durable", STATE_WRITE_DURABLE, 0},
		{"durable by 8", STATE_WRITE_DURABLE_FILE, 8},
		{"replace", STATE_WRITE_RENAME, 0},
		{"in place", STATE_WRITE_IN_PLACE, 0},
	};
	unsigned files = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 10000;
	unsigned saves = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 2000;
	const char *tmp = getenv("TMPDIR");
	char dir[PATH_MAX];
	int r;

	if (files == 0 || saves == 0) {
		fprintf(stderr, "usage: %s [FILES] [SAVES] [DIR]\n", argv[0]);
		return 2;
	}
	if (argc > 3) {
		snprintf(dir, sizeof(dir), "%s", argv[3]);
		if (mkdir(dir, 0755) < 0) {
			fprintf(stderr, "%s: %s\n", dir, strerror(errno));
			return 1;
		}
	} else {
		snprintf(dir, sizeof(dir), "%s/state-write.XXXXXX", tmp && *tmp ? tmp : "/var/tmp");
		if (!mkdtemp(dir)) {
			fprintf(stderr, "%s: %s\n", dir, strerror(errno));
			return 1;
		}
	}
	/* A state file's JSON is some 600 bytes; a routine save's text is
	 * about as long as the one before. */
	memset(text, ' ', sizeof(text) - 1);
	text[0] = '{';
	text[sizeof(text) - 2] = '}';
	for (unsigned i = 0; i < files; i++)
		if ((r = save(dir, i, STATE_WRITE_DURABLE)) < 0) {
			fprintf(stderr, "%s: %s\n", dir, strerror(-r));
			remove_dir(dir, files);
			return 1;
		}
	printf("%u files in %s, %u saves a round\n", files, dir, saves);
	srand(1);
	for (int round = 0; round < 3; round++)
		for (size_t w = 0; w < sizeof(ways) / sizeof(ways[0]); w++) {
			double c0 = cpu_s(), t0 = wall_s();

			for (unsigned k = 0; k < saves; k++) {
				r = save(dir, (unsigned)rand() % files, ways[w].how);
				if (r == 0 && ways[w].batch && ((k + 1) % ways[w].batch == 0 || k + 1 == saves))
					r = state_sync_dir(dir);
				if (r < 0) {
					fprintf(stderr, "%s: %s\n", ways[w].name, strerror(-r));
					remove_dir(dir, files);
					return 1;
				}
			}
			printf("%-12s CPU %6.1f us  wall %6.1f us a save\n", ways[w].name, (cpu_s() - c0) * 1e6 / saves,
			       (wall_s() - t0) * 1e6 / saves);
		}
	remove_dir(dir, files);
	return 0;
}
