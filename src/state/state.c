/* Persisted per-group state; see state.h.
 *
 * The file is JSON so an operator can read it (`jq . web.state`) and so a
 * new field can be added without breaking old files. Every field is checked
 * on load: the state decides whether instances are removed, so a value we
 * cannot trust is never used; the safe start is the fallback for all of it. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/file.h"
#include "log/log.h"
#include "state/state.h"

/* Timestamps more than this far ahead of the clock are corruption, not
 * clock skew. */
#define STATE_FUTURE_SLACK_MS (24 * 3600 * MS_PER_SEC)

/* The file holds wall-clock times, the memory monotonic ones (clock.h): a
 * time is mapped by its distance from now on save and back on load, so a
 * window restored after a restart has as much left as it had at the save,
 * plus the downtime having passed. A time the file puts after now (the
 * clock was stepped back since the save, or was ahead then) is taken as
 * now, and a deadline no later than its configured length from now: a
 * persisted time never makes a window longer than the configuration says. */

void state_init(struct group_state *s)
{
	memset(s, 0, sizeof(*s));
	engine_state_init(&s->engine);
	s->in_flight.direction = DIR_NONE;
}

_Static_assert(ENGINE_MAX_HISTORY <= UINT8_MAX && STATE_REQUEST_ID_MAX <= UINT8_MAX + 1,
	       "a packed state counts its entries and its id's bytes in a byte each");
_Static_assert(sizeof(struct engine_rec) == sizeof(struct engine_event), "the packed histories are 12 bytes each");

/* The allocation grows and shrinks in steps of this many bytes, so that a
 * window that gains and loses an entry an evaluation does not realloc at
 * each one. */
#define STATE_PACK_STEP 64

/* Keep in step with struct group_state and struct engine_state: every
 * field is copied here and in state_unpack(), and test-state's round trip
 * fills every one. */
int state_pack(const struct group_state *s, struct state_packed **p)
{
	const struct engine_state *e = &s->engine;
	size_t id_len = strnlen(s->in_flight.request_id, sizeof(s->in_flight.request_id) - 1);
	size_t entries = e->n_up_recs + e->n_down_recs + e->n_events;
	size_t need = sizeof(struct state_packed) + entries * sizeof(struct engine_rec) + id_len;
	size_t size = (need + STATE_PACK_STEP - 1) / STATE_PACK_STEP * STATE_PACK_STEP;
	struct state_packed *q = *p;
	unsigned char *t;

	if (!q || q->size != size) {
		q = realloc(q, size);
		if (!q)
			return -ENOMEM;
		*p = q;
	}
	memset(q, 0, size);
	q->size = size;
	q->version = e->version;
	q->last_action_dir = e->last_action_dir;
	q->last_action_ms = e->last_action_ms;
	q->no_scale_in_before_ms = e->no_scale_in_before_ms;
	q->pin = s->pin;
	q->pause = s->pause;
	q->dry_run = s->dry_run;
	q->in_flight_dir = s->in_flight.direction;
	q->in_flight_from = s->in_flight.from;
	q->in_flight_to = s->in_flight.to;
	q->in_flight_started_ms = s->in_flight.started_ms;
	q->in_flight_deadline_ms = s->in_flight.deadline_ms;
	q->boot = s->boot;
	q->n_up_recs = (uint8_t)e->n_up_recs;
	q->n_down_recs = (uint8_t)e->n_down_recs;
	q->n_events = (uint8_t)e->n_events;
	q->id_len = (uint8_t)id_len;
	t = q->tail;
	memcpy(t, e->up_recs, e->n_up_recs * sizeof(struct engine_rec));
	t += e->n_up_recs * sizeof(struct engine_rec);
	memcpy(t, e->down_recs, e->n_down_recs * sizeof(struct engine_rec));
	t += e->n_down_recs * sizeof(struct engine_rec);
	memcpy(t, e->events, e->n_events * sizeof(struct engine_event));
	t += e->n_events * sizeof(struct engine_event);
	memcpy(t, s->in_flight.request_id, id_len);
	return 0;
}

void state_canonical(struct group_state *s)
{
	struct engine_state *e = &s->engine;
	size_t id_len = strnlen(s->in_flight.request_id, sizeof(s->in_flight.request_id));

	memset(e->up_recs + e->n_up_recs, 0, (ENGINE_MAX_HISTORY - e->n_up_recs) * sizeof(struct engine_rec));
	memset(e->down_recs + e->n_down_recs, 0, (ENGINE_MAX_HISTORY - e->n_down_recs) * sizeof(struct engine_rec));
	memset(e->events + e->n_events, 0, (ENGINE_MAX_HISTORY - e->n_events) * sizeof(struct engine_event));
	memset(s->in_flight.request_id + id_len, 0, sizeof(s->in_flight.request_id) - id_len);
}

void state_unpack(const struct state_packed *q, struct group_state *s)
{
	struct engine_state *e = &s->engine;
	const unsigned char *t = q->tail;

	memset(s, 0, sizeof(*s));
	e->version = q->version;
	e->last_action_dir = q->last_action_dir;
	e->last_action_ms = q->last_action_ms;
	e->no_scale_in_before_ms = q->no_scale_in_before_ms;
	s->pin = q->pin;
	s->pause = q->pause;
	s->dry_run = q->dry_run;
	s->in_flight.direction = q->in_flight_dir;
	s->in_flight.from = q->in_flight_from;
	s->in_flight.to = q->in_flight_to;
	s->in_flight.started_ms = q->in_flight_started_ms;
	s->in_flight.deadline_ms = q->in_flight_deadline_ms;
	s->boot = q->boot;
	e->n_up_recs = q->n_up_recs;
	e->n_down_recs = q->n_down_recs;
	e->n_events = q->n_events;
	memcpy(e->up_recs, t, e->n_up_recs * sizeof(struct engine_rec));
	t += e->n_up_recs * sizeof(struct engine_rec);
	memcpy(e->down_recs, t, e->n_down_recs * sizeof(struct engine_rec));
	t += e->n_down_recs * sizeof(struct engine_rec);
	memcpy(e->events, t, e->n_events * sizeof(struct engine_event));
	t += e->n_events * sizeof(struct engine_event);
	memcpy(s->in_flight.request_id, t, q->id_len);
}

static int64_t longest_scale_in_window(const struct group_conf *gc)
{
	int64_t w = gc->behavior.scale_in.stabilization_ms;

	for (size_t i = 0; i < gc->n_signals; i++)
		if (gc->signals[i].window_ms > w)
			w = gc->signals[i].window_ms;
	for (size_t p = 0; p < gc->n_profiles; p++)
		for (size_t r = 0; r < gc->profiles[p].n_rules; r++)
			if (gc->profiles[p].rules[r].direction == DIR_IN && gc->profiles[p].rules[r].window_ms > w)
				w = gc->profiles[p].rules[r].window_ms;
	return w;
}

void state_hold_scale_in(struct group_state *s, const struct group_conf *gc, int64_t mono_ms)
{
	int64_t until = mono_ms + longest_scale_in_window(gc);

	if (s->engine.no_scale_in_before_ms < until)
		s->engine.no_scale_in_before_ms = until;
}

void state_safe_start(struct group_state *s, const struct group_conf *gc, int64_t mono_ms)
{
	state_init(s);
	state_hold_scale_in(s, gc, mono_ms);
}

bool state_merge_record(struct group_state *own, const struct group_state *rec, bool final, int64_t covered_since_ms,
			const struct group_conf *gc, int64_t mono_ms)
{
	struct group_state m = *rec;
	int64_t newest = engine_state_newest_rec(&rec->engine);
	bool hole;

	engine_state_merge_recs(&m.engine, &own->engine, newest);
	if (own->engine.no_scale_in_before_ms > m.engine.no_scale_in_before_ms)
		m.engine.no_scale_in_before_ms = own->engine.no_scale_in_before_ms;
	/* The boot time measured by either: the record's when it has one. */
	if (m.boot.n_measured == 0 && own->boot.n_measured > 0)
		m.boot = own->boot;
	/* Recommendations the writer made after its record, which a crash
	 * lost, may be missing from both: unless the record was its writer's
	 * last, or this agent has evaluated the group since before the
	 * record's newest one (two intervals of slack), no scale-in until a
	 * full window of what this agent sees. */
	hole = !final && covered_since_ms > newest + 2 * gc->interval_ms;
	if (hole)
		state_hold_scale_in(&m, gc, mono_ms);
	*own = m;
	return hole;
}

int state_path(const char *dir, const char *group, char *buf, size_t len)
{
	int n;

	/* The name becomes a file name: nothing that leaves the directory or
	 * hides the file. */
	if (!group[0] || group[0] == '.' || strchr(group, '/'))
		return -EINVAL;
	n = snprintf(buf, len, "%s/%s.state", dir, group);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}

/* ------------------------------------------------------------ to JSON */


/* Appends the pair [T_MS, X] to A; false when out of memory. */
static bool pair_append(cJSON *a, int64_t t_ms, int x)
{
	cJSON *p = cJSON_CreateArray();

	if (!p || !cJSON_AddItemToArray(a, p)) {
		cJSON_Delete(p);
		return false;
	}
	cJSON_AddItemToArray(p, cJSON_CreateNumber((double)t_ms));
	cJSON_AddItemToArray(p, cJSON_CreateNumber(x));
	return true;
}

static cJSON *pairs_rec(const struct engine_rec *v, size_t n, struct clock_now now)
{
	cJSON *a = cJSON_CreateArray();

	for (size_t i = 0; a && i < n; i++)
		if (!pair_append(a, clock_mono_to_wall(now, v[i].t_ms), v[i].count)) {
			cJSON_Delete(a);
			return NULL;
		}
	return a;
}

static cJSON *pairs_event(const struct engine_event *v, size_t n, struct clock_now now)
{
	cJSON *a = cJSON_CreateArray();

	for (size_t i = 0; a && i < n; i++)
		if (!pair_append(a, clock_mono_to_wall(now, v[i].t_ms), v[i].delta)) {
			cJSON_Delete(a);
			return NULL;
		}
	return a;
}

/* A monotonic deadline in wall-clock time, or 0 (none) once it passed. */
static int64_t wall_deadline(struct clock_now now, int64_t mono_ms)
{
	return mono_ms > now.mono_ms ? clock_mono_to_wall(now, mono_ms) : 0;
}

cJSON *state_to_json(const struct group_state *s, const char *group, struct clock_now now, int64_t refresh_ms)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *e, *x;

	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "format", STATE_FORMAT_VERSION);
	cJSON_AddStringToObject(o, "group", group);
	cJSON_AddNumberToObject(o, "saved_ms", (double)now.wall_ms);
	if (refresh_ms > 0)
		cJSON_AddNumberToObject(o, "refresh_ms", (double)refresh_ms);

	e = cJSON_AddObjectToObject(o, "engine");
	if (!e)
		goto fail;
	cJSON_AddNumberToObject(e, "version", s->engine.version);
	cJSON_AddItemToObject(e, "up_recs", pairs_rec(s->engine.up_recs, s->engine.n_up_recs, now));
	cJSON_AddItemToObject(e, "down_recs", pairs_rec(s->engine.down_recs, s->engine.n_down_recs, now));
	cJSON_AddItemToObject(e, "events", pairs_event(s->engine.events, s->engine.n_events, now));
	cJSON_AddNumberToObject(e, "last_action_ms",
				s->engine.last_action_dir == DIR_NONE
					? 0.0
					: (double)clock_mono_to_wall(now, s->engine.last_action_ms));
	cJSON_AddStringToObject(e, "last_action_dir", direction_name(s->engine.last_action_dir));
	cJSON_AddNumberToObject(e, "no_scale_in_before_ms",
				(double)wall_deadline(now, s->engine.no_scale_in_before_ms));

	/* The measured boot time; an action being timed is not kept (its
	 * start is on a clock that a restart resets). */
	if (s->boot.n_measured > 0) {
		x = cJSON_AddObjectToObject(o, "boot");
		if (!x)
			goto fail;
		cJSON_AddNumberToObject(x, "measured_ms", (double)s->boot.measured_ms);
		cJSON_AddNumberToObject(x, "count", s->boot.n_measured);
	}

	if (s->in_flight.direction != DIR_NONE) {
		x = cJSON_AddObjectToObject(o, "in_flight");
		if (!x)
			goto fail;
		cJSON_AddStringToObject(x, "direction", direction_name(s->in_flight.direction));
		cJSON_AddNumberToObject(x, "from", s->in_flight.from);
		cJSON_AddNumberToObject(x, "to", s->in_flight.to);
		cJSON_AddNumberToObject(x, "started_ms", (double)clock_mono_to_wall(now, s->in_flight.started_ms));
		cJSON_AddNumberToObject(x, "deadline_ms", (double)clock_mono_to_wall(now, s->in_flight.deadline_ms));
		cJSON_AddStringToObject(x, "request_id", s->in_flight.request_id);
	} else {
		cJSON_AddNullToObject(o, "in_flight");
	}
	if (s->pin.active) {
		x = cJSON_AddObjectToObject(o, "pin");
		if (!x)
			goto fail;
		cJSON_AddNumberToObject(x, "count", s->pin.count);
		cJSON_AddNumberToObject(x, "until_ms", (double)s->pin.until_ms);
		cJSON_AddBoolToObject(x, "forced", s->pin.forced);
	} else {
		cJSON_AddNullToObject(o, "pin");
	}
	if (s->pause.active) {
		x = cJSON_AddObjectToObject(o, "pause");
		if (!x)
			goto fail;
		cJSON_AddNumberToObject(x, "until_ms", (double)s->pause.until_ms);
	} else {
		cJSON_AddNullToObject(o, "pause");
	}
	if (s->dry_run == STATE_DRY_RUN_CONFIG)
		cJSON_AddNullToObject(o, "dry_run");
	else
		cJSON_AddBoolToObject(o, "dry_run", s->dry_run == STATE_DRY_RUN_ON);
	/* Any allocation that failed above left a hole; a state with a hole
	 * must not be written. */
	if (!cJSON_GetObjectItemCaseSensitive(e, "up_recs") || !cJSON_GetObjectItemCaseSensitive(e, "down_recs") ||
	    !cJSON_GetObjectItemCaseSensitive(e, "events") ||
	    !cJSON_GetObjectItemCaseSensitive(o, "dry_run"))
		goto fail;
	return o;
fail:
	cJSON_Delete(o);
	return NULL;
}

/* ---------------------------------------------------------- from JSON */

struct parse {
	char *why;
	size_t why_len;
	struct clock_now now;
};

/* A persisted wall-clock time of the past as monotonic time; one that the
 * file puts after now counts as now. */
static int64_t mono_past(const struct parse *p, int64_t wall_ms)
{
	int64_t m = clock_wall_to_mono(p->now, wall_ms);

	return m < p->now.mono_ms ? m : p->now.mono_ms;
}

/* A persisted wall-clock deadline (0: none) as monotonic time, at most
 * `length_ms` from now: the length it was set with when it was set. */
static int64_t mono_deadline(const struct parse *p, int64_t wall_ms, int64_t length_ms)
{
	int64_t m = clock_wall_to_mono(p->now, wall_ms);

	if (wall_ms == 0)
		return 0;
	return m < p->now.mono_ms + length_ms ? m : p->now.mono_ms + length_ms;
}

static int bad(struct parse *p, const char *fmt, const char *what)
{
	snprintf(p->why, p->why_len, fmt, what);
	return -EINVAL;
}

/* An integral number in [lo, hi]. */
static int get_int(struct parse *p, const cJSON *o, const char *key, int64_t lo, int64_t hi, int64_t *ret)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	double d;

	if (!cJSON_IsNumber(v))
		return bad(p, "'%s' is missing or not a number", key);
	d = v->valuedouble;
	if (!isfinite(d) || d != floor(d) || d < (double)lo || d > (double)hi)
		return bad(p, "'%s' is out of range", key);
	*ret = (int64_t)d;
	return 0;
}

static int get_time(struct parse *p, const cJSON *o, const char *key, int64_t *ret)
{
	return get_int(p, o, key, 0, p->now.wall_ms + STATE_FUTURE_SLACK_MS, ret);
}

static int get_dir(struct parse *p, const cJSON *o, const char *key, bool none_ok, enum scale_direction *ret)
{
	const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));

	if (direction_from_name(s, none_ok, ret) < 0)
		return bad(p, "'%s' is not a direction", key);
	return 0;
}

/* A history: an array of [time, value] pairs, at most
 * ENGINE_STORED_HISTORY, in time order. Each pair is written to t[i] and
 * v[i]. */
static int get_pairs(struct parse *p, const cJSON *o, const char *key, int64_t vlo, int64_t vhi,
		     int64_t *t, int64_t *v, size_t *n)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, key);
	const cJSON *pair;
	size_t i = 0;

	if (!cJSON_IsArray(a))
		return bad(p, "'%s' is missing or not an array", key);
	if ((size_t)cJSON_GetArraySize(a) > ENGINE_STORED_HISTORY)
		return bad(p, "'%s' holds more entries than a state file may", key);
	cJSON_ArrayForEach(pair, a)
	{
		const cJSON *pt = cJSON_GetArrayItem(pair, 0), *pv = cJSON_GetArrayItem(pair, 1);
		double dt, dv;

		if (!cJSON_IsArray(pair) || cJSON_GetArraySize(pair) != 2 || !cJSON_IsNumber(pt) ||
		    !cJSON_IsNumber(pv))
			return bad(p, "'%s' holds an entry that is not a [time, value] pair", key);
		dt = pt->valuedouble;
		dv = pv->valuedouble;
		if (!isfinite(dt) || dt != floor(dt) || dt < 0 || dt > (double)(p->now.wall_ms + STATE_FUTURE_SLACK_MS) ||
		    !isfinite(dv) || dv != floor(dv) || dv < (double)vlo || dv > (double)vhi)
			return bad(p, "'%s' holds a value out of range", key);
		t[i] = (int64_t)dt;
		v[i] = (int64_t)dv;
		if (i > 0 && t[i] < t[i - 1])
			return bad(p, "'%s' is not in time order", key);
		i++;
	}
	*n = i;
	return 0;
}

static int parse_engine(struct parse *p, const cJSON *e, const struct group_conf *gc, struct engine_state *s)
{
	int64_t t[ENGINE_STORED_HISTORY], v[ENGINE_STORED_HISTORY], x;
	struct engine_state fresh;
	size_t n;
	int r;

	if (!cJSON_IsObject(e))
		return bad(p, "'%s' is missing or not an object", "engine");
	engine_state_init(&fresh);
	if ((r = get_int(p, e, "version", 0, UINT32_MAX, &x)) < 0)
		return r;
	if ((uint32_t)x != fresh.version)
		return bad(p, "the engine state has another version (%s)", "written by another release");
	*s = fresh;
	if ((r = get_pairs(p, e, "up_recs", 0, STATE_MAX_COUNT, t, v, &n)) < 0)
		return r;
	/* Added as the engine adds its own: a longer history (written when
	 * the engine kept more) is folded as the engine folds it. */
	for (size_t i = 0; i < n; i++)
		engine_state_restore_rec(s, true, mono_past(p, t[i]), (int)v[i]);
	if ((r = get_pairs(p, e, "down_recs", 0, STATE_MAX_COUNT, t, v, &n)) < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		engine_state_restore_rec(s, false, mono_past(p, t[i]), (int)v[i]);
	if ((r = get_pairs(p, e, "events", -STATE_MAX_COUNT, STATE_MAX_COUNT, t, v, &n)) < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		engine_state_restore_event(s, mono_past(p, t[i]), (int)v[i]);
	if ((r = get_time(p, e, "last_action_ms", &x)) < 0)
		return r;
	if ((r = get_dir(p, e, "last_action_dir", true, &s->last_action_dir)) < 0)
		return r;
	s->last_action_ms = s->last_action_dir == DIR_NONE ? 0 : mono_past(p, x);
	/* A hold may reach up to the longest window past the save. */
	if ((r = get_int(p, e, "no_scale_in_before_ms", 0,
			 p->now.wall_ms + STATE_FUTURE_SLACK_MS + CONFIG_MAX_STABILIZATION_MS, &x)) < 0)
		return r;
	s->no_scale_in_before_ms = mono_deadline(p, x, longest_scale_in_window(gc));
	return 0;
}

static int parse_in_flight(struct parse *p, const cJSON *x, struct state_action *a)
{
	const char *id;
	int64_t v;
	int r;

	if (!x || cJSON_IsNull(x))
		return 0;
	if (!cJSON_IsObject(x))
		return bad(p, "'%s' is not an object", "in_flight");
	if ((r = get_dir(p, x, "direction", false, &a->direction)) < 0)
		return r;
	if ((r = get_int(p, x, "from", 0, STATE_MAX_COUNT, &v)) < 0)
		return r;
	a->from = (int)v;
	if ((r = get_int(p, x, "to", 0, STATE_MAX_COUNT, &v)) < 0)
		return r;
	a->to = (int)v;
	if ((a->direction == DIR_OUT) != (a->to > a->from) || a->to == a->from)
		return bad(p, "'%s' goes the wrong way", "in_flight");
	if ((r = get_time(p, x, "started_ms", &a->started_ms)) < 0)
		return r;
	if ((r = get_int(p, x, "deadline_ms", a->started_ms, INT64_MAX / 2, &a->deadline_ms)) < 0)
		return r;
	a->deadline_ms = mono_deadline(p, a->deadline_ms, STATE_IN_FLIGHT_DEADLINE_MS);
	a->started_ms = mono_past(p, a->started_ms);
	id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(x, "request_id"));
	if (!id || strlen(id) >= sizeof(a->request_id))
		return bad(p, "'%s' is missing or too long", "request_id");
	memcpy(a->request_id, id, strlen(id) + 1);
	return 0;
}

int state_from_json(const cJSON *j, const struct group_conf *gc, struct clock_now now, struct group_state *ret,
		    char *why, size_t why_len)
{
	struct parse p = {.why = why, .why_len = why_len, .now = now};
	struct group_state s;
	const cJSON *x;
	const char *name;
	int64_t v;
	int r;

	state_init(&s);
	if (!cJSON_IsObject(j))
		return bad(&p, "%s", "not a JSON object");
	if ((r = get_int(&p, j, "format", 0, INT32_MAX, &v)) < 0)
		return r;
	if (v != STATE_FORMAT_VERSION)
		return bad(&p, "%s", "another format version");
	name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "group"));
	if (!name || strcmp(name, gc->name) != 0)
		return bad(&p, "%s", "the file belongs to another group");
	if ((r = parse_engine(&p, cJSON_GetObjectItemCaseSensitive(j, "engine"), gc, &s.engine)) < 0)
		return r;
	/* Optional: a file written at every change has none. */
	if (cJSON_GetObjectItemCaseSensitive(j, "refresh_ms")) {
		int64_t refresh, saved, until;

		if ((r = get_int(&p, j, "refresh_ms", 0, 86400 * MS_PER_SEC, &refresh)) < 0 ||
		    (r = get_int(&p, j, "saved_ms", 0, INT64_MAX / 4, &saved)) < 0)
			return r;
		until = saved + refresh < now.wall_ms ? saved + refresh : now.wall_ms;
		if (refresh > 0 && s.engine.n_down_recs > 0) {
			struct engine_rec *e = &s.engine.down_recs[s.engine.n_down_recs - 1];
			int64_t m = clock_wall_to_mono(now, until);

			if (e->t_ms < m)
				e->t_ms = m;
		}
	}
	if ((r = parse_in_flight(&p, cJSON_GetObjectItemCaseSensitive(j, "in_flight"), &s.in_flight)) < 0)
		return r;
	/* Optional: a file written before boot times were measured has none. */
	x = cJSON_GetObjectItemCaseSensitive(j, "boot");
	if (x && !cJSON_IsNull(x)) {
		if ((r = get_int(&p, x, "measured_ms", 1, 86400 * MS_PER_SEC, &s.boot.measured_ms)) < 0)
			return r;
		if ((r = get_int(&p, x, "count", 1, UINT32_MAX, &v)) < 0)
			return r;
		s.boot.n_measured = (uint32_t)v;
	}

	x = cJSON_GetObjectItemCaseSensitive(j, "pin");
	if (x && !cJSON_IsNull(x)) {
		const cJSON *f = cJSON_GetObjectItemCaseSensitive(x, "forced");

		if ((r = get_int(&p, x, "count", 0, STATE_MAX_COUNT, &v)) < 0)
			return r;
		s.pin.count = (int)v;
		if ((r = get_int(&p, x, "until_ms", 0, INT64_MAX / 2, &s.pin.until_ms)) < 0)
			return r;
		if (!cJSON_IsBool(f))
			return bad(&p, "'%s' is missing or not a boolean", "forced");
		s.pin.forced = cJSON_IsTrue(f);
		s.pin.active = true;
	}
	x = cJSON_GetObjectItemCaseSensitive(j, "pause");
	if (x && !cJSON_IsNull(x)) {
		if ((r = get_int(&p, x, "until_ms", 0, INT64_MAX / 2, &s.pause.until_ms)) < 0)
			return r;
		s.pause.active = true;
	}
	x = cJSON_GetObjectItemCaseSensitive(j, "dry_run");
	if (cJSON_IsBool(x))
		s.dry_run = cJSON_IsTrue(x) ? STATE_DRY_RUN_ON : STATE_DRY_RUN_OFF;
	else if (x && !cJSON_IsNull(x))
		return bad(&p, "'%s' is not a boolean", "dry_run");
	*ret = s;
	return 0;
}

/* -------------------------------------------------------------- files */

static int write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Overwrites the state file at PATH in place with TEXT, padded with spaces
 * to the file's old length, in one write(2) at offset 0 of at most
 * STATE_IN_PLACE_MAX bytes, which is within the first page of the file:
 * Linux copies a write into the page cache a page at a time and gives up
 * for a fatal signal only between pages, so a killed daemon leaves the
 * old text or the new one. Only a plain file with one link of at most that
 * size is written so; anything else (no file yet, a FIFO, a symbolic
 * link, a hard link someone made, a larger text) returns -EAGAIN untouched,
 * and so does a failed write (which may have begun): the caller then
 * replaces the file by a rename. */
static int overwrite_in_place(const char *path, const char *text)
{
	char buf[STATE_IN_PLACE_MAX];
	size_t len = strlen(text) + 1, n;
	struct stat st;
	ssize_t w;
	int fd;

	if (len > sizeof(buf))
		return -EAGAIN;
	fd = open(path, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -EAGAIN;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 || st.st_size < 0 ||
	    (uint64_t)st.st_size > sizeof(buf)) {
		close(fd);
		return -EAGAIN;
	}
	n = len > (size_t)st.st_size ? len : (size_t)st.st_size;
	memcpy(buf, text, len - 1);
	memset(buf + len - 1, ' ', n - len);
	buf[n - 1] = '\n';
	w = pwrite(fd, buf, n, 0);
	if (close(fd) < 0 || w != (ssize_t)n)
		return -EAGAIN;
	return 0;
}

int state_sync_dir(const char *dir)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), r = 0;

	if (dfd < 0)
		return -errno;
	if (fsync(dfd) < 0)
		r = -errno;
	close(dfd);
	return r;
}

/* A save that replaces PATH whole, through the group's spare file,
 * "<dir>/.<name>.spare": TEXT is written to it (and synced when DURABLE,
 * the directory too after the swap when SYNC_DIR), and the spare and PATH
 * swap names in one rename (RENAME_EXCHANGE), so the old state becomes the
 * next spare.
 * Nothing is allocated or freed on the disk, where a new file renamed over
 * the old one frees the old one's blocks and allocates new ones: a third
 * of the CPU of a durable save, and more of one that is not synced (the
 * kernel starts writing back a new file renamed over an old one at once).
 * -EAGAIN, with nothing of PATH touched, when the spare cannot be used (it
 * is not a plain file of one link, or cannot be opened or written): the
 * caller then writes a new file. A spare that cannot be used is removed,
 * so the next save makes a new one. */
static int write_through_spare(const char *dir, const char *path, const char *name, const char *text, bool durable,
			       bool sync_dir)
{
	char spare[PATH_MAX];
	size_t len = strlen(text);
	struct stat st;
	int fd, r = 0;

	if (snprintf(spare, sizeof(spare), "%s/.%s.spare", dir, name) >= (int)sizeof(spare))
		return -EAGAIN;
	fd = open(spare, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0640);
	if (fd < 0) {
		unlink(spare);
		return -EAGAIN;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
		close(fd);
		unlink(spare);
		return -EAGAIN;
	}
	if ((st.st_mode & 07777) != 0640 && fchmod(fd, 0640) < 0)
		r = -errno;
	if (r == 0)
		r = write_all(fd, text, len);
	if (r == 0)
		r = write_all(fd, "\n", 1);
	if (r == 0 && st.st_size > (off_t)len + 1 && ftruncate(fd, (off_t)len + 1) < 0)
		r = -errno;
	if (r == 0 && durable && fdatasync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r < 0) {
		unlink(spare);
		return -EAGAIN;
	}
	if (renameat2(AT_FDCWD, spare, AT_FDCWD, path, RENAME_EXCHANGE) < 0) {
		/* No state file yet, or a file system that cannot swap: the
		 * spare becomes the state file, and the next save makes a
		 * new spare. */
		if (rename(spare, path) < 0) {
			r = -errno;
			unlink(spare);
			return r;
		}
	}
	return durable && sync_dir ? state_sync_dir(dir) : 0;
}

int state_write_file(const char *dir, const char *path, const char *name, const char *text, enum state_write how)
{
	bool durable = how == STATE_WRITE_DURABLE || how == STATE_WRITE_DURABLE_FILE;
	bool sync_dir = how == STATE_WRITE_DURABLE;
	char tmp[PATH_MAX];
	int fd, r;

	if (how == STATE_WRITE_IN_PLACE && overwrite_in_place(path, text) == 0)
		return 0;
	if ((r = write_through_spare(dir, path, name, text, durable, sync_dir)) != -EAGAIN)
		return r;

	if (snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, name) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = write_all(fd, text, strlen(text));
	if (r == 0)
		r = write_all(fd, "\n", 1);
	if (r == 0 && fchmod(fd, 0640) < 0)
		r = -errno;
	if (r == 0 && durable && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0) {
		unlink(tmp);
		return r;
	}
	if (!sync_dir)
		return 0;
	/* The rename is durable only once the directory is. */
	return state_sync_dir(dir);
}

int state_save(const char *dir, const char *group, const struct group_state *s, struct clock_now now)
{
	char path[PATH_MAX], name[PATH_MAX];
	char *text;
	cJSON *j;
	int r;

	r = state_path(dir, group, path, sizeof(path));
	if (r < 0)
		return r;
	if (snprintf(name, sizeof(name), "%s.state", group) >= (int)sizeof(name))
		return -ENAMETOOLONG;
	j = state_to_json(s, group, now, 0);
	if (!j)
		return -ENOMEM;
	text = cJSON_Print(j);
	cJSON_Delete(j);
	if (!text)
		return -ENOMEM;
	r = state_write_file(dir, path, name, text, STATE_WRITE_DURABLE);
	free(text);
	return r;
}

int state_read_text(const char *path, char **ret)
{
	/* A FIFO in the state directory must not block the daemon. */
	return file_read_all(path, 0, STATE_MAX_FILE_SIZE, ret, NULL, NULL);
}

int state_read_file(const char *path, const struct group_conf *gc, struct clock_now now, struct group_state *ret,
		    char *why, size_t why_len)
{
	char *text = NULL;
	cJSON *j;
	int r;

	state_init(ret);
	r = state_read_text(path, &text);
	if (r < 0) {
		snprintf(why, why_len, "%s", r == -EFBIG ? "larger than any state file" : file_strerror(r));
		return r;
	}
	j = cJSON_Parse(text);
	free(text);
	if (!j) {
		snprintf(why, why_len, "not valid JSON (truncated?)");
		return -EINVAL;
	}
	r = state_from_json(j, gc, now, ret, why, why_len);
	cJSON_Delete(j);
	return r;
}

enum state_origin state_load(const char *dir, const struct group_conf *gc, struct clock_now now,
			     struct group_state *ret)
{
	char path[PATH_MAX], why[256];
	char *text = NULL;
	cJSON *j;
	int r;

	state_init(ret);
	r = state_path(dir, gc->name, path, sizeof(path));
	if (r < 0) {
		log_warn_errno(r, "state: safe start: no state file for group '%s'", gc->name);
		state_safe_start(ret, gc, now.mono_ms);
		return STATE_SAFE;
	}
	r = state_read_text(path, &text);
	if (r == -ENOENT)
		return STATE_FRESH;
	if (r < 0) {
		log_warnx("state: cannot read '%s': %s; safe start: no scale-in of '%s' for %" PRId64 " s",
			  path, r == -EFBIG ? "larger than any state file" : file_strerror(r), gc->name,
			  longest_scale_in_window(gc) / MS_PER_SEC);
		state_safe_start(ret, gc, now.mono_ms);
		return STATE_SAFE;
	}
	j = cJSON_Parse(text);
	free(text);
	if (!j) {
		snprintf(why, sizeof(why), "not valid JSON (truncated?)");
		r = -EINVAL;
	} else {
		r = state_from_json(j, gc, now, ret, why, sizeof(why));
		cJSON_Delete(j);
	}
	if (r < 0) {
		log_warnx("state: ignoring corrupt state file '%s': %s; safe start: no scale-in of '%s' for %" PRId64
			  " s",
			  path, why, gc->name, longest_scale_in_window(gc) / MS_PER_SEC);
		state_safe_start(ret, gc, now.mono_ms);
		return STATE_SAFE;
	}
	return STATE_RESTORED;
}

/* ---------------------------------------------------- pure operations */

bool state_expire(struct group_state *s, int64_t wall_ms)
{
	bool changed = false;

	if (s->pin.active && s->pin.until_ms > 0 && wall_ms >= s->pin.until_ms) {
		s->pin = (struct state_pin){0};
		changed = true;
	}
	if (s->pause.active && s->pause.until_ms > 0 && wall_ms >= s->pause.until_ms) {
		s->pause = (struct state_pause){0};
		changed = true;
	}
	return changed;
}

enum state_reconcile state_reconcile(struct group_state *s, int current, bool stable, int64_t mono_ms)
{
	struct state_action *a = &s->in_flight;
	bool reached;

	if (a->direction == DIR_NONE)
		return RECONCILE_NONE;
	reached = a->direction == DIR_OUT ? current >= a->to : current <= a->to;
	if (stable) {
		*a = (struct state_action){.direction = DIR_NONE};
		return reached ? RECONCILE_DONE : RECONCILE_STOPPED;
	}
	if (mono_ms >= a->deadline_ms) {
		*a = (struct state_action){.direction = DIR_NONE};
		return RECONCILE_EXPIRED;
	}
	return RECONCILE_PENDING;
}

static bool dry_run_of(enum state_dry_run o, bool configured)
{
	return o == STATE_DRY_RUN_ON || (o == STATE_DRY_RUN_CONFIG && configured);
}

bool state_dry_run(const struct group_state *s, bool configured)
{
	return dry_run_of(s->dry_run, configured);
}

bool state_packed_dry_run(const struct state_packed *p, bool configured)
{
	return dry_run_of(p->dry_run, configured);
}

/* ------------------------------------------------------------------ lock */

/* The pid a lock holder wrote, or 0 when the file holds none yet (the
 * holder takes the lock before it writes). */
static long lock_holder(int fd)
{
	char buf[32];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	char *end;
	long pid;

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	pid = strtol(buf, &end, 10);
	return end != buf && (*end == '\n' || *end == '\0') && pid > 0 ? pid : 0;
}

int state_lock(const char *dir, long *ret_pid)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	char path[PATH_MAX], pid[32];
	struct stat st;
	int fd, r;

	if (snprintf(path, sizeof(path), "%s/autoscaled.lock", dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	/* O_NOFOLLOW and the type check: the lock file is ours, never a link
	 * someone planted, and never a FIFO that would block the open. */
	errno = 0;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		r = errno ? -errno : -EINVAL;
		close(fd);
		return r;
	}
	/* An OFD lock belongs to this descriptor, not to the process: a
	 * thread or a forked child cannot release it by closing another
	 * descriptor of the same file, as a POSIX record lock would. */
	if (fcntl(fd, F_OFD_SETLK, &fl) < 0) {
		r = errno == EAGAIN || errno == EACCES ? -EBUSY : -errno;
		if (r == -EBUSY && ret_pid)
			*ret_pid = lock_holder(fd);
		close(fd);
		return r;
	}
	snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, strlen(pid), 0) != (ssize_t)strlen(pid)) {
		r = -errno;
		close(fd);
		return r ? r : -EIO;
	}
	return fd;
}
