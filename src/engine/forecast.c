/* The per-signal forecaster: see forecast.h for the model.
 *
 * Choices the header does not spell out:
 * - A bucket's profile value blends each new visit in with weight
 *   1 / visits, down to SEASON_MIN_WEIGHT: the first days average, later
 *   ones follow a drifting pattern within about a week of visits.
 * - The weekly profile speaks once it has two visits of a bucket; before,
 *   a single visit is averaged with the daily one (a lone Monday should not
 *   decide every Monday).
 * - The level's time constant is four horizons and the trend's eight (at
 *   least the spacing of the samples): long enough that sample-to-sample
 *   noise does not move the forecast, short enough to follow a ramp within
 *   a few boot times.
 * - Errors are normalised by the typical error of their time of day, so
 *   one tracked quantile serves the quiet night and the busy afternoon. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "config/config.h"
#include "engine/forecast.h"

#define SEASON_MIN_WEIGHT 0.25
/* How fast a bucket's error scale and the global one follow new errors,
 * per scored prediction. */
#define SCALE_RATE_BUCKET 0.05
#define SCALE_RATE_GLOBAL 0.01
/* A time of day's typical error is learnt one visit a day: its first
 * days' are a few draws, and a load whose jumps come at random (a batch
 * queue) leaves some times of day with the error of one jump. It is
 * weighed against the global typical error as if that were this many
 * days of evidence. */
#define SCALE_PRIOR_DAYS 3.0
/* The step of the quantile tracker, in normalised units. */
#define QUANTILE_RATE 0.02
/* The step of the service offset, in normalised units per horizon of
 * samples above the target: a burst of misses as long as a boot time
 * raises the headroom by a tenth of the typical error. Weighed by the
 * samples' spacing, so that the offset moves as fast in time whatever the
 * polling interval. */
#define SERVICE_RATE 0.1
/* The time constant of the measured share short (service_short). */
#define SERVICE_SHARE_MS (INT64_C(86400) * 1000)
#define PEAK_MAX_POINTS 256
/* The short-term time constants, in horizons: the level averages a few
 * boot times of samples, so that noise from one sample to the next does
 * not move the forecast (and the group) up and down; the trend twice as
 * long. The measured errors include the lag this costs on a ramp, so the
 * quantile pays for it, not the service. */
#define LEVEL_TAU 4.0
/* Scored predictions before the measured errors alone are trusted. */
#define FORECAST_COLD_SCORES 8
/* The step of the one-sample-ahead error's mean (a running mean at first). */
#define STEP_RATE 0.1
#define TREND_TAU 8.0

static int64_t bucket_of(int64_t t_ms)
{
	/* Floor division: times before 1970 still land in a bucket. */
	return t_ms >= 0 ? t_ms / FORECAST_BUCKET_MS : -((-t_ms + FORECAST_BUCKET_MS - 1) / FORECAST_BUCKET_MS);
}

static size_t day_index(int64_t bucket)
{
	int64_t i = bucket % FORECAST_DAY_BUCKETS;

	return (size_t)(i < 0 ? i + FORECAST_DAY_BUCKETS : i);
}

static size_t week_index(int64_t bucket)
{
	int64_t i = bucket % FORECAST_WEEK_BUCKETS;

	return (size_t)(i < 0 ? i + FORECAST_WEEK_BUCKETS : i);
}

/* The profile value of one bucket, or false when no visit taught it. */
static bool bucket_value(const struct forecast *f, int64_t bucket, double *v)
{
	/* A week is a whole number of days: one division finds both. */
	size_t wi = week_index(bucket);
	const struct forecast_bucket *d = &f->day[wi % FORECAST_DAY_BUCKETS];
	const struct forecast_bucket *w = &f->week[wi];

	if (w->visits >= 2)
		*v = w->mean;
	else if (w->visits == 1 && d->visits > 0)
		*v = 0.5 * (w->mean + d->mean);
	else if (d->visits > 0)
		*v = d->mean;
	else
		return false;
	return true;
}

/* Two neighbouring buckets' profile values, between whose centres
 * season_at() interpolates. An update asks for the profile at several
 * times that mostly fall between the same two centres (the sample, one
 * horizon ahead, the keep span's points): it keeps the pair it read last
 * in one of these, for as long as the profile does not change. */
struct segment {
	int64_t b;  /* the first bucket; SEGMENT_NONE: nothing read yet */
	double a, z;
	bool ha, hz;
};
#define SEGMENT_NONE INT64_MIN

/* The seasonal profile at T_MS, interpolated between the centres of the
 * neighbouring buckets so that it has no steps. SG: the pair read last
 * (see struct segment), or NULL. */
static bool season_at(const struct forecast *f, int64_t t_ms, struct segment *sg, double *v)
{
	int64_t c = t_ms - FORECAST_BUCKET_MS / 2, b = bucket_of(c);
	double frac = (double)(c - b * FORECAST_BUCKET_MS) / (double)FORECAST_BUCKET_MS;
	struct segment local;

	if (!sg)
		sg = &local;
	if (sg == &local || sg->b != b) {
		sg->b = b;
		sg->ha = bucket_value(f, b, &sg->a);
		sg->hz = bucket_value(f, b + 1, &sg->z);
	}
	if (sg->ha && sg->hz)
		*v = sg->a + (sg->z - sg->a) * frac;
	else if (sg->ha)
		*v = sg->a;
	else if (sg->hz)
		*v = sg->z;
	else
		return false;
	return true;
}

/* The profile's change from A_MS to B_MS; 0 where it does not know both.
 * The profile at the newest sample is kept (season_last), as nearly every
 * forecast starts there. */
static double season_delta(const struct forecast *f, int64_t a_ms, int64_t b_ms, struct segment *sg, bool *known)
{
	double sa, sb;

	if (a_ms == f->last_ms && f->n_samples > 0) {
		*known = f->season_last_known;
		sa = f->season_last;
	} else {
		*known = season_at(f, a_ms, sg, &sa);
	}
	if (*known && b_ms == a_ms)
		return 0.0;
	*known = *known && season_at(f, b_ms, sg, &sb);
	return *known ? sb - sa : 0.0;
}

static void cache_season(struct forecast *f, struct segment *sg)
{
	f->season_last_known = season_at(f, f->last_ms, sg, &f->season_last);
}

static double point_at(const struct forecast *f, int64_t target_ms, struct segment *sg, bool *seasonal);

/* Fills the memo of point_at() for the newest sample plus HORIZON_MS; to
 * be called whenever the level, the trend or the profile has changed. */
static void cache_ahead(struct forecast *f, int64_t horizon_ms, struct segment *sg)
{
	bool seasonal;
	double v;

	f->ahead_valid = false;
	v = point_at(f, f->last_ms + horizon_ms, sg, &seasonal);
	f->ahead_t_ms = f->last_ms + horizon_ms;
	f->ahead_point = v;
	f->ahead_seasonal = seasonal;
	f->ahead_valid = true;
}

/* The typical error of a time of day's predictions: its own, weighed by
 * its visits against the global one (SCALE_PRIOR_DAYS); the global one
 * while it has none. */
static double bucket_scale(const struct forecast *f, const struct forecast_bucket *b)
{
	if (!(b->scale > 0))
		return f->scale;
	if (!(f->scale > 0))
		return b->scale;
	return (b->visits * (double)b->scale + SCALE_PRIOR_DAYS * f->scale) / (b->visits + SCALE_PRIOR_DAYS);
}

/* The typical error of a prediction for T_MS: its time of day's
 * (bucket_scale()). Until FORECAST_COLD_SCORES predictions have been
 * scored, at least the typical error of its predictions one
 * sample ahead, which are checked at once: a forecaster that has seen a
 * ramp but scored no horizon-ahead prediction yet must not claim to know
 * the next horizon exactly (its upper quantile would be its point
 * forecast, with no headroom). The prior stands in for FORECAST_COLD_SCORES
 * horizons from the first sample at most: a horizon that keeps changing (a
 * boot time measured anew at each scale-out, with a warm pool) drops its
 * predictions before they are scored, and a prior must not outlive the
 * start it is for. */
static double error_scale_at(const struct forecast *f, int64_t t_ms)
{
	double s = bucket_scale(f, &f->day[day_index(bucket_of(t_ms))]);

	if (f->n_scored < FORECAST_COLD_SCORES && f->last_ms - f->first_ms < FORECAST_COLD_SCORES * f->horizon_ms) {
		if (f->step_error > s)
			s = f->step_error;
	}
	return s;
}

static double point_at(const struct forecast *f, int64_t target_ms, struct segment *sg, bool *seasonal)
{
	double ahead = (double)(target_ms - f->last_ms);

	/* One horizon ahead of the newest sample is where nearly every
	 * forecast lands: it is computed once per sample (cache_ahead). */
	if (f->ahead_valid && target_ms == f->ahead_t_ms) {
		*seasonal = f->ahead_seasonal;
		return f->ahead_point;
	}

	return f->level + f->trend * ahead + season_delta(f, f->last_ms, target_ms, sg, seasonal);
}

/* The normal quantile by Acklam's rational approximation (relative error
 * below 1.2e-9), for the tracker's starting point. */
static double probit(double p)
{
	static const double a[] = { -3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
				    1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00 };
	static const double b[] = { -5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
				    6.680131188771972e+01, -1.328068155288572e+01 };
	static const double c[] = { -7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
				    -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00 };
	static const double d[] = { 7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
				    3.754408661907416e+00 };
	double q, r;

	if (p < 0.02425) {
		q = sqrt(-2 * log(p));
		return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
		       ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
	}
	if (p > 1 - 0.02425)
		return -probit(1 - p);
	q = p - 0.5;
	r = q * q;
	return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
	       (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

void forecast_init(struct forecast *f, double quantile)
{
	memset(f, 0, sizeof(*f));
	f->version = FORECAST_STATE_VERSION;
	if (!(quantile >= 0.5 && quantile <= 0.999))
		quantile = 0.9;
	f->quantile = quantile;
	/* Errors normalised by their mean absolute value: for normal errors
	 * that is sigma x sqrt(2 / pi), so the quantile starts where a normal
	 * one would be. */
	f->q_norm = probit(quantile) / sqrt(2.0 / M_PI);
	f->q_peak = f->q_norm;
}

void forecast_set_service(struct forecast *f, double level)
{
	if (!(level >= CONFIG_SERVICE_LEVEL_MIN && level <= CONFIG_SERVICE_LEVEL_MAX))
		level = 0;
	if (level != f->service_level)
		f->q_adjust = 0;
	f->service_level = level;
}

void forecast_service(struct forecast *f, bool over, double excess)
{
	double r, w;

	if (f->service_level == 0 || f->n_samples == 0 || f->horizon_ms <= 0)
		return;
	/* What the operator reads against the level: every sample counts,
	 * those the offset leaves out below too. */
	if (f->n_service < UINT32_MAX)
		f->n_service++;
	r = f->rate_dt_ms > 0 ? (double)f->rate_dt_ms / (double)SERVICE_SHARE_MS : 0;
	if (r < 1.0 / f->n_service)
		r = 1.0 / f->n_service;
	f->service_short += r * ((over ? 1.0 : 0.0) - f->service_short);
	/* A sample short by more than the offset could still add is a jump
	 * no headroom in range would have caught (a batch of work arriving
	 * at once, a step in load): it says nothing of the quantiles, and
	 * counting it would wind the offset up to its bound for nothing but
	 * cost. The offset leaves such samples out. */
	if (over && excess > (FORECAST_ADJUST_MAX - f->q_adjust) * error_scale_at(f, f->last_ms))
		return;
	/* The first sample has no spacing yet: it weighs one horizon. */
	w = f->rate_dt_ms > 0 ? (double)f->rate_dt_ms / (double)f->horizon_ms : 1.0;
	if (w > 1.0)
		w = 1.0;
	f->q_adjust += SERVICE_RATE * w * ((over ? 1.0 : 0.0) - (1.0 - f->service_level));
	if (f->q_adjust < FORECAST_ADJUST_MIN)
		f->q_adjust = FORECAST_ADJUST_MIN;
	else if (f->q_adjust > FORECAST_ADJUST_MAX)
		f->q_adjust = FORECAST_ADJUST_MAX;
}

static void blend(struct forecast_bucket *b, double v)
{
	double w = 1.0 / (b->visits + 1.0);

	if (w < SEASON_MIN_WEIGHT)
		w = SEASON_MIN_WEIGHT;
	b->mean = (float)(b->visits == 0 ? v : b->mean + w * (v - b->mean));
	if (b->visits < UINT32_MAX)
		b->visits++;
}

/* Closes the visit of the current bucket into both profiles. */
static void close_visit(struct forecast *f)
{
	double mean;

	if (f->cur_n == 0)
		return;
	mean = f->cur_sum / f->cur_n;
	blend(&f->day[day_index(f->cur_bucket)], mean);
	blend(&f->week[week_index(f->cur_bucket)], mean);
	f->cur_sum = 0;
	f->cur_n = 0;
}

static void score(struct forecast *f, int64_t t_ms, double err)
{
	struct forecast_bucket *b = &f->day[day_index(bucket_of(t_ms))];
	double a = fabs(err), s = bucket_scale(f, b);

	/* err / s < q_norm without the division (s > 0): a division's
	 * latency was the slowest step of an update (bench/engine). */
	if (s > 0)
		f->q_norm += QUANTILE_RATE * (f->quantile - (err < f->q_norm * s ? 1.0 : 0.0));
	/* A time of day's first error is one draw, not its typical error:
	 * its scale starts from the global one and moves to its own. */
	if (!(b->scale > 0))
		b->scale = (float)f->scale;
	b->scale = (float)(b->scale > 0 ? b->scale + SCALE_RATE_BUCKET * (a - b->scale) : a);
	/* The global scale is the mean of the errors so far until it has
	 * 1 / SCALE_RATE_GLOBAL of them, then a moving one: started from the
	 * first error and moved a hundredth at a time, one draw (a ramp's
	 * first, the largest of a cold start) set the headroom for the next
	 * hundred predictions. */
	{
		double r = (double)(f->n_scored + 1) * SCALE_RATE_GLOBAL < 1.0 ? 1.0 / (double)(f->n_scored + 1)
									    : SCALE_RATE_GLOBAL;

		f->scale = f->scale > 0 ? f->scale + r * (a - f->scale) : a;
	}
	f->n_scored++;
}

/* Scores the predictions whose time has come against X, measured at T_MS;
 * one made for a time long before this sample (a gap in the data) is
 * dropped unscored. */
static void score_pending(struct forecast *f, int64_t t_ms, int64_t dt_ms, double x)
{
	while (f->n_pending > 0) {
		struct forecast_pending *p = &f->pending[f->pending_head];

		if (p->t_ms > t_ms)
			break;
		if (t_ms - p->t_ms <= dt_ms)
			score(f, p->t_ms, x - p->point);
		f->pending_head = (f->pending_head + 1) % FORECAST_PENDING;
		f->n_pending--;
	}
}

static void add_pending(struct forecast *f, int64_t t_ms, int64_t horizon_ms, int64_t dt_ms)
{
	struct forecast_pending *p;
	bool seasonal;
	int64_t every = horizon_ms / (FORECAST_PENDING / 2);

	if (every < dt_ms)
		every = dt_ms;
	if (f->n_pending > 0) {
		const struct forecast_pending *newest =
			&f->pending[(f->pending_head + f->n_pending - 1) % FORECAST_PENDING];

		if (t_ms + horizon_ms - newest->t_ms < every)
			return;
	}
	if (f->n_pending == FORECAST_PENDING) {
		f->pending_head = (f->pending_head + 1) % FORECAST_PENDING;
		f->n_pending--;
	}
	p = &f->pending[(f->pending_head + f->n_pending) % FORECAST_PENDING];
	p->t_ms = t_ms + horizon_ms;
	p->point = point_at(f, t_ms + horizon_ms, NULL, &seasonal);
	f->n_pending++;
}

/* The highest point prediction over [T_MS, T_MS + SPAN_MS]; *SEASONAL:
 * whether the profile held T_MS. SG: see struct segment (may be NULL). */
static double point_peak(const struct forecast *f, int64_t t_ms, int64_t span_ms, struct segment *sg,
			 bool *seasonal_start)
{
	struct segment local = { .b = SEGMENT_NONE };
	int64_t step = FORECAST_BUCKET_MS / 2, tau;
	double best, v;
	bool seasonal;
	int n = 0;

	if (!sg)
		sg = &local;
	best = point_at(f, t_ms, sg, seasonal_start);
	if (span_ms <= 0)
		return best;
	if (span_ms / step >= PEAK_MAX_POINTS)
		step = span_ms / (PEAK_MAX_POINTS - 1);
	for (tau = step; n < PEAK_MAX_POINTS; tau += step, n++) {
		if (tau > span_ms)
			tau = span_ms;
		v = point_at(f, t_ms + tau, sg, &seasonal);
		if (v > best)
			best = v;
		if (tau == span_ms)
			break;
	}
	return best;
}

/* Scores the peak predictions against X: each open one takes X into its
 * highest value seen, and one whose span has ended is scored. */
static void score_peaks(struct forecast *f, int64_t t_ms, double x)
{
	uint32_t i;

	/* An open span has seen every sample since it opened, so the older
	 * of two open spans has seen at least as high a value: walking from
	 * the newest, the first span X does not raise ends the walk. (The
	 * spans have one length, so they also end oldest first: one that has
	 * ended sits at the head, below the walk, and is scored next.) */
	for (i = f->n_peaks; i-- > 0;) {
		struct forecast_pending_peak *p = &f->peaks[(f->peaks_head + i) % FORECAST_PENDING];

		if (p->end_ms < t_ms || (p->any && x <= p->seen))
			break;
		p->seen = x;
		p->any = true;
	}
	while (f->n_peaks > 0) {
		struct forecast_pending_peak *p = &f->peaks[f->peaks_head];
		double s;

		if (p->end_ms > t_ms)
			break;
		s = error_scale_at(f, p->end_ms);
		if (p->any && s > 0) {
			f->q_peak += QUANTILE_RATE * (f->quantile - (p->seen - p->point < f->q_peak * s ? 1.0 : 0.0));
			f->n_peak_scored++;
		}
		f->peaks_head = (f->peaks_head + 1) % FORECAST_PENDING;
		f->n_peaks--;
	}
}

static void add_peak(struct forecast *f, int64_t t_ms, int64_t keep_ms, int64_t dt_ms, struct segment *sg)
{
	struct forecast_pending_peak *p;
	int64_t every = keep_ms / (FORECAST_PENDING / 2);

	double peak;
	bool seasonal;

	if (keep_ms <= 0)
		return;
	/* The evaluation after this sample asks for the same peak. */
	peak = point_peak(f, t_ms, keep_ms, sg, &seasonal);
	f->peak_memo_valid = true;
	f->peak_memo_span_ms = keep_ms;
	f->peak_memo_point = peak;
	if (every < dt_ms)
		every = dt_ms;
	if (f->n_peaks > 0 &&
	    t_ms + keep_ms - f->peaks[(f->peaks_head + f->n_peaks - 1) % FORECAST_PENDING].end_ms < every)
		return;
	if (f->n_peaks == FORECAST_PENDING) {
		f->peaks_head = (f->peaks_head + 1) % FORECAST_PENDING;
		f->n_peaks--;
	}
	p = &f->peaks[(f->peaks_head + f->n_peaks) % FORECAST_PENDING];
	/* The span starts after this sample: the sample itself is known. */
	*p = (struct forecast_pending_peak){ .end_ms = t_ms + keep_ms, .point = peak };
	f->n_peaks++;
}

int forecast_update(struct forecast *f, int64_t t_ms, double x, int64_t horizon_ms, int64_t keep_ms)
{
	struct segment sg = { .b = SEGMENT_NONE };
	int64_t dt, b;
	double tau_l, tau_t, al, bt, pred, level, ds, s_t = 0;
	bool known, closed;

	if (!f || !isfinite(x) || horizon_ms < 0 || keep_ms < 0 || (f->n_samples > 0 && t_ms <= f->last_ms))
		return -EINVAL;
	f->peak_memo_valid = false;
	if (f->n_samples == 0) {
		f->first_ms = f->last_ms = t_ms;
		f->level = x;
		f->trend = 0;
		f->cur_bucket = bucket_of(t_ms);
		f->cur_sum = x;
		f->cur_n = 1;
		f->n_samples = 1;
		f->horizon_ms = horizon_ms;
		f->keep_ms = keep_ms;
		cache_season(f, &sg);
		cache_ahead(f, horizon_ms, &sg);
		add_pending(f, t_ms, horizon_ms, 0);
		add_peak(f, t_ms, keep_ms, 0, &sg);
		return 0;
	}
	dt = t_ms - f->last_ms;
	score_pending(f, t_ms, dt, x);
	score_peaks(f, t_ms, x);

	/* Level and trend, with the season's change since the last sample
	 * taken out so that a daily ramp is not mistaken for a trend. */
	tau_l = horizon_ms * LEVEL_TAU;
	tau_t = horizon_ms * TREND_TAU;
	if (tau_l < (double)dt)
		tau_l = (double)dt;
	if (tau_t < (double)dt)
		tau_t = (double)dt;
	/* Samples usually come at one spacing: the weights are computed once
	 * for it. */
	if (dt != f->rate_dt_ms || horizon_ms != f->rate_horizon_ms) {
		f->rate_dt_ms = dt;
		f->rate_horizon_ms = horizon_ms;
		f->rate_level = 1.0 - exp(-(double)dt / tau_l);
		f->rate_trend = 1.0 - exp(-(double)dt / tau_t);
		f->rate_per_ms = 1.0 / (double)dt;
	}
	al = f->rate_level;
	bt = f->rate_trend;
	/* The profile at this sample, once: its change since the last one,
	 * and the newest profile value unless a visit closes below. */
	known = season_at(f, t_ms, &sg, &s_t);
	ds = known && f->season_last_known ? s_t - f->season_last : 0.0;
	pred = f->level + f->trend * (double)dt + ds;
	/* The error of this one-sample-ahead prediction: the cold-start
	 * prior (error_scale_at). */
	{
		double r = f->n_samples * STEP_RATE < 1.0 ? 1.0 / (double)f->n_samples : STEP_RATE;

		f->step_error += r * (fabs(x - pred) - f->step_error);
	}
	level = pred + al * (x - pred);
	f->trend += bt * ((level - f->level - ds) * f->rate_per_ms - f->trend);
	f->level = level;

	b = bucket_of(t_ms);
	closed = b != f->cur_bucket;
	if (closed) {
		close_visit(f);
		f->cur_bucket = b;
		sg.b = SEGMENT_NONE; /* the profile changed */
	}
	f->cur_sum += x;
	f->cur_n++;
	f->last_ms = t_ms;
	f->n_samples++;
	if (closed) {
		cache_season(f, &sg);
	} else {
		f->season_last = s_t;
		f->season_last_known = known;
	}
	cache_ahead(f, horizon_ms, &sg);
	if (horizon_ms != f->horizon_ms) {
		/* Predictions for another horizon would score the wrong thing. */
		f->n_pending = 0;
		f->horizon_ms = horizon_ms;
	}
	if (keep_ms != f->keep_ms) {
		f->n_peaks = 0;
		f->keep_ms = keep_ms;
	}
	add_pending(f, t_ms, horizon_ms, dt);
	add_peak(f, t_ms, keep_ms, dt, &sg);
	return 0;
}

/* POINT plus Q typical errors of T_MS. The quantile never goes below the
 * point forecast: an upper bound that sits under the mean would be no
 * bound at all. */
static double upper_at(const struct forecast *f, int64_t t_ms, double point, double q)
{
	return point + (q > 0 ? q : 0) * error_scale_at(f, t_ms);
}

int forecast_predict(const struct forecast *f, int64_t t_ms, int64_t h_ms, struct forecast_value *out)
{
	int64_t target = t_ms + (h_ms > 0 ? h_ms : 0);

	if (!f || !out || f->n_samples == 0)
		return -ENODATA;
	if (target < f->last_ms)
		target = f->last_ms;
	out->point = point_at(f, target, NULL, &out->seasonal);
	out->upper = upper_at(f, target, out->point, f->q_norm + f->q_adjust);
	return 0;
}

int forecast_predict_peak(const struct forecast *f, int64_t t_ms, int64_t span_ms, struct forecast_value *out)
{
	if (span_ms <= 0)
		return forecast_predict(f, t_ms, 0, out);
	if (!f || !out || f->n_samples == 0)
		return -ENODATA;
	if (t_ms < f->last_ms)
		t_ms = f->last_ms;
	if (f->peak_memo_valid && t_ms == f->last_ms && span_ms == f->peak_memo_span_ms) {
		out->point = f->peak_memo_point;
		/* Whether the profile speaks at the span's start, as
		 * forecast_predict() says it. */
		out->seasonal = f->season_last_known;
	} else {
		out->point = point_peak(f, t_ms, span_ms, NULL, &out->seasonal);
	}
	/* Until a span has been scored, the point quantile stands in. */
	out->upper = upper_at(f, t_ms, out->point, (f->n_peak_scored > 0 ? f->q_peak : f->q_norm) + f->q_adjust);
	return 0;
}

int forecast_for_engine(const struct forecast *f, int64_t t_ms, int64_t horizon_ms, int64_t keep_ms, double *ahead,
			double *keep)
{
	struct forecast_value v;
	int r = forecast_predict(f, t_ms, horizon_ms, &v);

	if (r < 0)
		return r;
	*ahead = v.upper;
	r = forecast_predict_peak(f, t_ms, keep_ms, &v);
	if (r < 0)
		return r;
	*keep = v.upper;
	return 0;
}

/* The lines of the fields (all read by an update) and the two buckets the
 * profile at the sample is read between (season_at()); the pending rings'
 * slots depend on the fields, and the keep span's further buckets are
 * mostly in the same lines. */
void forecast_prefetch(const struct forecast *f, int64_t t_ms)
{
	const char *p = (const char *)f, *end = (const char *)f->day;
	size_t wi = week_index(bucket_of(t_ms - FORECAST_BUCKET_MS / 2)), di = wi % FORECAST_DAY_BUCKETS;

	for (; p < end; p += 64)
		__builtin_prefetch(p, 1);
	__builtin_prefetch(&f->day[di], 1);
	__builtin_prefetch(&f->week[wi], 1);
	__builtin_prefetch(&f->day[(di + 1) % FORECAST_DAY_BUCKETS], 1);
	__builtin_prefetch(&f->week[(wi + 1) % FORECAST_WEEK_BUCKETS], 1);
}

void forecast_refresh(struct forecast *f)
{
	f->rate_dt_ms = f->rate_horizon_ms = 0;
	f->ahead_valid = false;
	f->peak_memo_valid = false;
	if (f->n_samples > 0) {
		struct segment sg = { .b = SEGMENT_NONE };

		cache_season(f, &sg);
		cache_ahead(f, f->horizon_ms, &sg);
	}
}

static bool buckets_valid(const struct forecast_bucket *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isfinite(b[i].mean) || !isfinite(b[i].scale) || b[i].scale < 0)
			return false;
	return true;
}

bool forecast_state_valid(const struct forecast *f)
{
	return f->version == FORECAST_STATE_VERSION && f->n_pending <= FORECAST_PENDING &&
	       f->pending_head < FORECAST_PENDING && isfinite(f->level) && isfinite(f->trend) &&
	       f->n_peaks <= FORECAST_PENDING && f->peaks_head < FORECAST_PENDING && isfinite(f->q_peak) &&
	       f->keep_ms >= 0 && isfinite(f->q_norm) && isfinite(f->scale) && f->scale >= 0 && isfinite(f->cur_sum) &&
	       isfinite(f->step_error) && f->step_error >= 0 && f->q_adjust >= FORECAST_ADJUST_MIN &&
	       f->q_adjust <= FORECAST_ADJUST_MAX && f->service_short >= 0 && f->service_short <= 1 &&
	       (f->service_level == 0 ||
		(f->service_level >= CONFIG_SERVICE_LEVEL_MIN && f->service_level <= CONFIG_SERVICE_LEVEL_MAX)) &&
	       f->quantile >= 0.5 && f->quantile <= 0.999 && f->horizon_ms >= 0 &&
	       buckets_valid(f->day, FORECAST_DAY_BUCKETS) && buckets_valid(f->week, FORECAST_WEEK_BUCKETS);
}

void forecast_boot_action(struct forecast_boot *b, int64_t mono_ms, int from, int to)
{
	if (to > from) {
		/* Time the newest launch: when the group is ready at its size,
		 * the last instances asked for have booted. */
		b->pending_since_ms = mono_ms;
		b->pending_target = to;
	} else if (to < from && b->pending_since_ms != 0 && to < b->pending_target) {
		b->pending_since_ms = 0;
	}
}

void forecast_boot_observe(struct forecast_boot *b, int64_t mono_ms, int ready)
{
	int64_t took;

	if (b->pending_since_ms == 0 || ready < b->pending_target)
		return;
	took = mono_ms - b->pending_since_ms;
	b->pending_since_ms = 0;
	if (took <= 0)
		return;
	/* Smoothed, but a slower boot counts at once: provisioning for a
	 * boot shorter than the real one leaves the group short. */
	if (b->n_measured == 0 || took > b->measured_ms)
		b->measured_ms = took;
	else
		b->measured_ms += (took - b->measured_ms) / 4;
	if (b->n_measured < UINT32_MAX)
		b->n_measured++;
}

int64_t forecast_boot_horizon(const struct forecast_boot *b, int64_t fallback_ms)
{
	return b->n_measured > 0 ? b->measured_ms : fallback_ms;
}
