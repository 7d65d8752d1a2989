/* A forecaster for one signal: the value it will have one horizon ahead, as
 * an upper quantile rather than a mean (autoscaled.conf(5), FORECASTING).
 *
 * The model is additive:
 *
 *   x(t + h) = level(t) + trend(t) x h + S(t + h) - S(t) + e
 *
 * where S is the seasonal profile (a daily and a weekly one, in buckets of
 * FORECAST_BUCKET_MS of wall-clock time, learnt from the samples seen), level
 * and trend are the short-term state (exponential smoothing whose time
 * constants follow the horizon), and e is the error. The errors are
 * measured: every prediction is checked when its time comes, divided by the
 * typical error of its time of day (a seasonal scale, since a busy hour is
 * noisier than a quiet one, weighed by its days against the global one)
 * and the quantile of these normalised errors is
 * tracked online. The forecast is the point prediction plus that quantile
 * times the scale of the target time.
 *
 * Pure: no clock (every call takes the time), no I/O, no allocation. The
 * state is plain data of a fixed size whatever the length of the history,
 * so it is copied and persisted as is. Times are wall-clock milliseconds,
 * because the seasons are calendar ones. */
#ifndef AUTOSCALED_FORECAST_H
#define AUTOSCALED_FORECAST_H

#include <stdbool.h>
#include <stdint.h>

#define FORECAST_BUCKET_MS (INT64_C(15) * 60 * 1000)
#define FORECAST_DAY_BUCKETS 96
#define FORECAST_WEEK_BUCKETS (7 * FORECAST_DAY_BUCKETS)
/* Predictions waiting for their time to come, to measure the error. */
#define FORECAST_PENDING 64

#define FORECAST_STATE_VERSION 1

/* The range of the service offset, in normalised units (the quantile of
 * 0.97 sits near 2.4 of them; an upper quantile never goes below the point
 * forecast). */
#define FORECAST_ADJUST_MIN (-4.0)
#define FORECAST_ADJUST_MAX 4.0

struct forecast_bucket {
	float mean;     /* the bucket's profile value */
	float scale;    /* the typical absolute error of predictions for this time */
	uint32_t visits; /* days (or weeks) that contributed */
};

struct forecast_pending {
	int64_t t_ms;   /* when the prediction is for */
	double point;   /* the point prediction */
};

/* A prediction of the highest value over a span, scored when it ends. */
struct forecast_pending_peak {
	int64_t end_ms;
	double point;   /* the highest point prediction over the span */
	double seen;    /* the highest value seen so far in it */
	bool any;
};

struct forecast {
	int64_t last_ms;          /* the newest sample; 0 = none yet */
	uint64_t n_samples;
	/* Short-term state. */
	double level, trend;
	/* The bucket being visited and its running sum. */
	int64_t cur_bucket;       /* absolute bucket number (time / FORECAST_BUCKET_MS) */
	double cur_sum;
	uint32_t cur_n;
	/* The quantile of normalised errors being tracked, and the global
	 * typical error (the fallback for a time of day not scored yet). */
	double q_norm;
	double scale;
	uint64_t n_scored;
	/* Before its predictions one horizon ahead are scored, the typical
	 * error of its predictions one sample ahead stands in. */
	double step_error;
	double quantile;          /* the one q_norm tracks */
	int64_t horizon_ms;       /* the horizon of the pending predictions */
	uint32_t n_pending, pending_head;
	/* The same for the peak over the keep span (lazy scale-in): the
	 * highest of several noisy values is above each one's quantile, so
	 * it has its own, measured the same way. */
	double q_peak;
	uint64_t n_peak_scored;
	int64_t keep_ms;
	uint32_t n_peaks, peaks_head;
	/* The service level asked for (forecast_set_service; 0 = none) and
	 * the offset, in normalised units, that the group's measured service
	 * has moved both quantiles by (forecast_service). */
	double service_level;
	double q_adjust;
	/* The share of the samples told that were short, over about a day
	 * (a running mean over the first ones), and how many were told. */
	double service_short;
	uint32_t n_service;
	/* The profile at the newest sample, and whether it knows it. */
	double season_last;
	bool season_last_known;
	/* The point forecast one horizon after the newest sample. */
	bool ahead_valid, ahead_seasonal;
	int64_t ahead_t_ms;
	double ahead_point;
	/* The highest point forecast over the keep span from the newest
	 * sample, computed with it. */
	bool peak_memo_valid;
	int64_t peak_memo_span_ms;
	double peak_memo_point;
	/* The smoothing weights for the last sample spacing and horizon. */
	int64_t rate_dt_ms, rate_horizon_ms;
	double rate_level, rate_trend, rate_per_ms; /* rate_per_ms: 1 / rate_dt_ms */
	/* The arrays after the fields: an update reads the fields above and
	 * a few entries of these, so the fields share a few cache lines (at
	 * 10,000 groups with three forecasters each, most reads of a
	 * forecaster miss the cache; forecast_prefetch()). */
	struct forecast_bucket day[FORECAST_DAY_BUCKETS];
	struct forecast_pending pending[FORECAST_PENDING];
	struct forecast_pending_peak peaks[FORECAST_PENDING];
	struct forecast_bucket week[FORECAST_WEEK_BUCKETS];
	/* Read at the first sample and in the cold start only. */
	int64_t first_ms;         /* the first sample */
	uint32_t version;
};

/* A forecast: point is the expected value at the target time, upper the
 * quantile asked for; peak the upper quantile of the highest value over
 * the span asked for in forecast_predict_peak(). */
struct forecast_value {
	double point;
	double upper;
	bool seasonal; /* the profile held the target time */
};

/* A fresh forecaster tracking QUANTILE (0.5 to 0.999). */
void forecast_init(struct forecast *f, double quantile);

/* Feeds the sample X measured at wall time T_MS, with the horizon the
 * forecasts are made for (the group's boot time) and the span whose peak
 * is forecast (the lazy scale-in's keep time; 0 for none). Samples must
 * come in time order; an older or equal time, or a value that is not
 * finite, is refused with -EINVAL and leaves the state as it was. */
int forecast_update(struct forecast *f, int64_t t_ms, double x, int64_t horizon_ms, int64_t keep_ms);

/* Asks for the service level LEVEL (CONFIG_SERVICE_LEVEL_MIN to _MAX; 0
 * for none): the share of the samples in which the signal should be below
 * its target. A level other than the one the offset was measured for
 * starts it again at 0. */
void forecast_set_service(struct forecast *f, double level);

/* Tells the forecaster whether the group was at or above the signal's
 * target in the sample just fed (forecast_update): the capacity the
 * forecasts raised was too low, by EXCESS (the group total above what the
 * ready instances serve at the target). With a service level set, the
 * offset of both quantiles rises at each such sample and falls a little
 * at each other one, so that the share at or above the target settles at
 * 1 - level whatever the shape of the load (an adaptive conformal step;
 * autoscaled.conf(5), FORECASTING). A sample short by more than the
 * offset could still add to the headroom is left out of the offset's
 * count (no offset in range would have served it), not of the share of
 * samples short it measures (service_short). */
void forecast_service(struct forecast *f, bool over, double excess);

/* The forecast for the time T_MS + H_MS made at T_MS (after the sample of
 * T_MS). Returns 0, or -ENODATA before the first sample. */
int forecast_predict(const struct forecast *f, int64_t t_ms, int64_t h_ms, struct forecast_value *out);

/* The upper quantile of the highest value over [T_MS, T_MS + SPAN_MS],
 * stepping through the seasonal profile a bucket at a time. 0 or
 * -ENODATA. */
int forecast_predict_peak(const struct forecast *f, int64_t t_ms, int64_t span_ms, struct forecast_value *out);

/* What the engine reads (engine_signal_input): the upper quantile at
 * T_MS + HORIZON_MS in *AHEAD and that of the peak over [T_MS, T_MS +
 * KEEP_MS] in *KEEP. 0 or -ENODATA. */
int forecast_for_engine(const struct forecast *f, int64_t t_ms, int64_t horizon_ms, int64_t keep_ms, double *ahead,
			double *keep);

/* Asks the memory for the parts of F an update at T_MS will read (its
 * fields and the profile around T_MS), so that a caller with several
 * forecasters to update (a group's signals) has their cache misses overlap
 * instead of waiting for each in turn. Changes nothing. It pays only when
 * the forecasters do not all stay in the cache between two updates: with
 * fewer than FORECAST_PREFETCH_MIN of them (800 KB), the cache holds them
 * and the prefetch is only more work (bench/engine). */
#define FORECAST_PREFETCH_MIN 64
void forecast_prefetch(const struct forecast *f, int64_t t_ms);

/* Recomputes what the state derives from its profile and counters (after
 * it was read back or changed from outside). */
void forecast_refresh(struct forecast *f);

/* Whether the state read back from a file is one this code can use (the
 * version, the counters within their arrays, the numbers finite). */
bool forecast_state_valid(const struct forecast *f);

/* The time from an action launching instances to the group being ready at
 * the new size, measured from the daemon's own actions. */
struct forecast_boot {
	int64_t pending_since_ms; /* the scale-out being timed (monotonic); 0 = none */
	int pending_target;
	int64_t measured_ms;      /* smoothed measurement; 0 = none yet */
	uint32_t n_measured;
};

/* Tells the meter about a scale-out to TO instances at MONO_MS; a scale-in
 * (TO below the size being waited for) abandons the timing. */
void forecast_boot_action(struct forecast_boot *b, int64_t mono_ms, int from, int to);
/* Tells the meter how many instances are ready at MONO_MS. */
void forecast_boot_observe(struct forecast_boot *b, int64_t mono_ms, int ready);
/* The horizon to forecast for: the measured boot time, or FALLBACK_MS. */
int64_t forecast_boot_horizon(const struct forecast_boot *b, int64_t fallback_ms);

#endif
