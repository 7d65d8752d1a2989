/* cloud-probe: loads a driver through the host's loader (driver.h, from
 * $AUTOSCALED_DRIVER_DIR), opens one group with the options given, runs the
 * operations named on the command line in order and prints one JSON object
 * per operation on stdout. The driver logs through the daemon's own host
 * callbacks to stderr, debug included, so tests can search it for leaked
 * secrets.
 *
 *   cloud-probe DRIVER [-g GROUP] [-o key=value]... OP...
 *   OP: observe | set_capacity=N | remove=N | remove_ids=ID,ID | sleep=MS
 *   or the single OP check (the driver's check(), without opening). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "autoscaled/driver.h"
#include "agent/driver.h"
#include "log/log.h"

#define MAX_OPTIONS 64
#define MAX_IDS 256

static const char *state_name(enum autoscaled_instance_state s)
{
	return s == AUTOSCALED_INSTANCE_RUNNING ? "running" : s == AUTOSCALED_INSTANCE_STOPPING ? "stopping" : "provisioning";
}

static int collect(void *ctx, const struct autoscaled_instance *in)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "id", in->id);
	cJSON_AddStringToObject(o, "state", state_name(in->state));
	cJSON_AddNumberToObject(o, "created_ms", (double)in->created_ms);
	cJSON_AddNumberToObject(o, "running_since_ms", (double)in->running_since_ms);
	cJSON_AddBoolToObject(o, "ready", in->ready);
	if (in->location)
		cJSON_AddStringToObject(o, "location", in->location);
	cJSON_AddItemToArray(ctx, o);
	return 0;
}

int main(int argc, char **argv)
{
	struct autoscaled_option opts[MAX_OPTIONS];
	struct autoscaled_host host;
	struct autoscaled_driver_instance *h = NULL;
	const struct autoscaled_driver *d;
	const struct driver *drv;
	const char *group = "probe";
	char err[1024];
	size_t n_opts = 0;
	int i, rc, failed = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: cloud-probe DRIVER [-g GROUP] [-o key=value]... OP...\n");
		return 2;
	}
	log_init(true, true);
	rc = driver_load(argv[1], NULL, &drv, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "cloud-probe: %s\n", err);
		return 2;
	}
	d = drv->ops;
	for (i = 2; i + 1 < argc && argv[i][0] == '-'; i += 2) {
		char *eq = strchr(argv[i + 1], '=');

		if (strcmp(argv[i], "-g") == 0) {
			group = argv[i + 1];
			continue;
		}
		if (strcmp(argv[i], "-o") != 0 || !eq || n_opts == MAX_OPTIONS) {
			fprintf(stderr, "cloud-probe: bad argument '%s'\n", argv[i]);
			return 2;
		}
		*eq = '\0';
		opts[n_opts++] = (struct autoscaled_option){ .key = argv[i + 1], .value = eq + 1 };
	}
	driver_host_init(&host, group, NULL);
	if (i < argc && strcmp(argv[i], "check") == 0) {
		/* `autoscaled -n`: options and credentials checked, no request. */
		rc = AUTOSCALED_DRIVER_HAS_OP(d, check) ? d->check(&host, opts, n_opts) : 0;
		printf("{\"op\":\"check\",\"rc\":%d}\n", rc);
		return rc ? 1 : 0;
	}
	rc = d->open(&host, opts, n_opts, &h);
	if (rc < 0) {
		printf("{\"op\":\"open\",\"rc\":%d,\"error\":\"%s\"}\n", rc, strerror(-rc));
		return 1;
	}
	for (; i < argc; i++) {
		const char *op = argv[i], *arg = strchr(op, '=');
		cJSON *out = cJSON_CreateObject(), *list = cJSON_CreateArray();
		struct autoscaled_observation obs = { 0 };
		char *text;

		cJSON_AddStringToObject(out, "op", op);
		if (strcmp(op, "observe") == 0) {
			rc = d->observe(h, collect, NULL, list, &obs);
			if (rc == 0) {
				cJSON *o = cJSON_AddObjectToObject(out, "observation");

				cJSON_AddNumberToObject(o, "target_size", obs.target_size);
				cJSON_AddBoolToObject(o, "stable", obs.stable);
				cJSON_AddBoolToObject(o, "partial", obs.partial);
			}
		} else if (strncmp(op, "set_capacity=", 13) == 0) {
			rc = d->set_capacity(h, atoi(arg + 1), collect, list);
		} else if (strncmp(op, "remove=", 7) == 0) {
			rc = d->remove_instances(h, atoi(arg + 1), NULL, 0, collect, list);
		} else if (strncmp(op, "remove_ids=", 11) == 0) {
			char *copy = strdup(arg + 1), *save = NULL, *tok;
			const char *ids[MAX_IDS];
			size_t n = 0;

			for (tok = strtok_r(copy, ",", &save); tok && n < MAX_IDS; tok = strtok_r(NULL, ",", &save))
				ids[n++] = tok;
			rc = d->remove_instances(h, 0, ids, n, collect, list);
			free(copy);
		} else if (strncmp(op, "sleep=", 6) == 0) {
			struct timespec ts = { atoi(arg + 1) / 1000, (atoi(arg + 1) % 1000) * 1000000L };

			nanosleep(&ts, NULL);
			rc = 0;
		} else {
			fprintf(stderr, "cloud-probe: unknown operation '%s'\n", op);
			rc = -EINVAL;
		}
		cJSON_AddNumberToObject(out, "rc", rc);
		if (rc < 0)
			cJSON_AddStringToObject(out, "error", strerror(-rc));
		cJSON_AddItemToObject(out, "instances", list);
		text = cJSON_PrintUnformatted(out);
		printf("%s\n", text);
		fflush(stdout);
		cJSON_free(text);
		cJSON_Delete(out);
		failed |= rc != 0;
	}
	d->close(h);
	return failed ? 1 : 0;
}
