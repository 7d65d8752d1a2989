/* A group's forecasters on disk and their seeding (autoscaled.conf(5),
 * FORECASTING): the learnt profiles live in STATE_DIRECTORY/GROUP.forecast,
 * beside the group's state file, written when a profile bucket closes and
 * when the daemon stops, so a restart keeps weeks of history. Times in the
 * forecaster are wall-clock ones, so they are written as they are. */
#ifndef AUTOSCALED_FORECAST_STATE_H
#define AUTOSCALED_FORECAST_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "engine/forecast.h"

struct cJSON;

/* One forecaster as JSON (NULL on ENOMEM), and back: 0, or -EINVAL with
 * the reason in WHY when the object is not one this code wrote or holds
 * numbers out of their ranges (then *F is left as it was). */
struct cJSON *forecast_to_json(const struct forecast *f);
int forecast_from_json(const struct cJSON *j, struct forecast *f, char *why, size_t why_len);

/* The forecasters of the group's signals (FCS[i] for signal i, NULL for a
 * signal without one) as one JSON object, what the file holds (NULL on
 * ENOMEM), and back into the forecasters present in FCS, by signal name:
 * with RICHER only where the object's forecaster has learnt from at least
 * as many samples as the one in FCS (a cluster's new owner and the
 * group's record in etcd). Returns the number of signals taken, or
 * -EINVAL with the reason in WHY, or -ENOMEM. */
struct cJSON *forecast_group_json(const struct group_conf *gc, struct forecast *const *fcs);
int forecast_group_from_json(const struct cJSON *j, const struct group_conf *gc, struct forecast *const *fcs,
			     bool richer, char *why, size_t why_len);

/* Saves the forecasters of the group's signals (FCS[i] for signal i, NULL
 * for a signal without one). 0 or a negative errno. */
int forecast_file_save(const char *dir, const struct group_conf *gc, struct forecast *const *fcs);

/* Loads what forecast_file_save() wrote into the forecasters present in
 * FCS, by signal name; a signal the file does not hold, or holds for
 * another quantile, keeps its fresh forecaster. Returns the number of
 * signals restored, or a negative errno (-ENOENT without a file, -EINVAL
 * for a corrupt one, the reason in WHY). */
int forecast_file_load(const char *dir, const struct group_conf *gc, struct forecast *const *fcs, char *why,
		       size_t why_len);

/* Teaches F the trace file PATH of FORMAT (trace.h) as the signal's group
 * total, sampled every STEP_MS, before any sample of its own. 0 or a
 * negative errno. */
int forecast_seed_file(struct forecast *f, const char *path, const char *format, int64_t step_ms,
		       int64_t horizon_ms, int64_t keep_ms);

#endif
