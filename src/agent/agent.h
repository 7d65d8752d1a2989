/* The agent: the daemon's event loop (sd-event), one evaluation timer per
 * group, signals, reload and systemd notification. */
#ifndef AUTOSCALED_AGENT_H
#define AUTOSCALED_AGENT_H

#include <stdbool.h>

struct agent_options {
	const char *config_path;
	bool foreground;
	bool verbose;
	bool dry_run; /* --dry-run: overrides the configuration */
};

/* Runs the daemon until SIGTERM or SIGINT. Returns 0 on a clean stop, or a
 * negative errno when start-up failed (the reason is logged). */
int agent_run(const struct agent_options *opts);

#endif
