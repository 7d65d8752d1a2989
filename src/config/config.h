/* The configuration model: what autoscaled.conf(5) says, parsed and validated.
 *
 * config_load() reads a file with libconfig, follows @include of conf.d/ files,
 * validates the whole of it and returns a tree of plain C structs that owns all
 * of its strings (nothing points into libconfig after it returns). The engine,
 * the agent, explain and simulate read these structs; nothing else reads the
 * file.
 *
 * Times and durations are in milliseconds (int64_t) throughout the project, so
 * the engine never mixes units. Counts of instances are int.
 */
#ifndef AUTOSCALED_CONFIG_H
#define AUTOSCALED_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MS_PER_SEC INT64_C(1000)

/* Limits on what a configuration may hold; each bounds memory a user controls. */
#define CONFIG_MAX_GROUPS 100000
#define CONFIG_MAX_SIGNALS 16       /* per group */
#define CONFIG_MAX_PROFILES 32      /* per group, the default one included */
#define CONFIG_MAX_RULES 16         /* per profile */
#define CONFIG_MAX_POLICIES 8       /* rate-limit policies per direction */
#define CONFIG_MAX_STABILIZATION_MS (3600 * MS_PER_SEC)
#define CONFIG_MAX_COUNT 100000     /* instances in a group: min, max, default */
#define CONFIG_MAX_OPTIONS 64       /* keys in driver_options or source_options */
#define CONFIG_MAX_DRIVER_CONCURRENCY 4096 /* calls of one driver at once */

enum signal_type {
	SIGNAL_UTILIZATION, /* per-instance mean, e.g. CPU %: r = ceil(ready * value / target) */
	SIGNAL_AVERAGE,     /* group total spread over instances: r = ceil(value / target) */
};

enum aggregation {
	AGG_AVG,
	AGG_MIN,
	AGG_MAX,
	AGG_LAST,
	AGG_P95,
};

enum on_missing {
	ON_MISSING_HOLD,    /* keep the current count (default) */
	ON_MISSING_DEFAULT, /* raise to the profile's default when below it (Azure) */
	ON_MISSING_MAX,     /* fail toward capacity */
};

enum rule_operator {
	OP_GT,
	OP_GE,
	OP_LT,
	OP_LE,
	OP_EQ,
	OP_NE,
};

enum scale_direction {
	DIR_NONE = 0,
	DIR_OUT = 1,
	DIR_IN = -1,
};

enum change_type {
	CHANGE_COUNT,   /* +/- n instances (Azure ChangeCount) */
	CHANGE_PERCENT, /* +/- p % of current (Azure PercentChangeCount) */
	CHANGE_EXACT,   /* exactly n instances (Azure ExactCount) */
};

enum policy_type {
	POLICY_INSTANCES,
	POLICY_PERCENT,
};

enum select_policy {
	SELECT_MAX, /* the policy allowing the largest change (default, as HPA) */
	SELECT_MIN,
	SELECT_DISABLED, /* no change in this direction at all */
};

enum profile_kind {
	PROFILE_DEFAULT,
	PROFILE_RECURRENCE,
	PROFILE_FIXED,
};

/* A typed option of a driver or source, passed on as key and value so that no
 * libconfig type crosses a module boundary. */
enum option_type {
	OPTION_STRING,
	OPTION_INT,
	OPTION_FLOAT,
	OPTION_BOOL,
	OPTION_LIST, /* a list or array of strings */
};

/* Named config_option because <getopt.h> owns `struct option`. */
struct region;

struct config_option {
	char *key;
	enum option_type type;
	int line;
	char *str;     /* OPTION_STRING; also a printed form of numbers and bools */
	/* A list has no number and a number no list: 48 bytes an option, where
	 * both made 72 (a group of the soak has nine options). Read each by
	 * its type only. */
	union {
		struct {
			int64_t i; /* OPTION_INT, OPTION_BOOL (0/1) */
			double f;  /* OPTION_FLOAT, and OPTION_INT as a double */
		};
		struct {
			char **list; /* OPTION_LIST */
			size_t n_list;
		};
	};
	const char *file; /* borrowed from struct config's file table */
};

struct options {
	struct config_option *v;
	size_t n;
	const char *file; /* where the block is: borrowed from struct config's file table, NULL when absent */
	int line;
};

/* Lookup helpers; return NULL when the key is absent. */
const struct config_option *options_get(const struct options *o, const char *key);
const char *options_get_str(const struct options *o, const char *key, const char *def);
double options_get_num(const struct options *o, const char *key, double def);
bool options_get_bool(const struct options *o, const char *key, bool def);

enum forecast_mode {
	FORECAST_OFF,     /* no forecaster (default) */
	FORECAST_OBSERVE, /* forecast recorded in the decision and metrics, never acted on */
	FORECAST_ON,      /* the forecast raises the signal's recommendation */
};

/* The service levels a forecaster may be asked to adapt to. */
#define CONFIG_SERVICE_LEVEL_MIN 0.5
#define CONFIG_SERVICE_LEVEL_MAX 0.9999

/* A signal's forecaster (forecast.h, autoscaled.conf(5) FORECASTING). */
struct forecast_conf {
	enum forecast_mode mode;
	int line;               /* where the block is, for messages (with file) */
	double quantile;        /* the upper quantile provisioned for, default 0.9 */
	double service_level;   /* the share of samples below the target to adapt to; 0 = none */
	char *seed_file;        /* a trace to learn the profile from before the first sample; NULL = none */
	char *seed_format;      /* its format (trace.h), default "csv" */
	const char *file;
};

struct signal_conf {
	char *name;
	char *source; /* a source type (prometheus, haproxy, redis, http_json, exec, replay, ...) or a driver's (libvirt_cpu) */
	struct options source_options;
	enum signal_type type;
	enum aggregation aggregation; /* default avg */
	double target;          /* per instance: CPU % for utilization, units per instance for average */
	int64_t window_ms;      /* aggregation window (default 60 s) */
	double tolerance;       /* default 0.1 */
	int64_t staleness_ms;   /* a window with no sample newer than this is invalid (default 3 x poll) */
	int64_t poll_interval_ms; /* default: the group's interval */
	int64_t timeout_ms;     /* default: 10 s, at most the poll interval */
	/* The forecaster's settings when the signal has a `forecast` block,
	 * else NULL: read them through signal_forecast(), which has the
	 * defaults (off) for NULL. A pointer, not the block itself: 56 bytes
	 * a signal, 30,000 of them at 10,000 groups, most without one. */
	struct forecast_conf *forecast;
	const char *file;
	int line;
};

/* A signal's forecaster settings: its own, or the defaults (mode off,
 * quantile 0.9, no service level, no seed) when it has none. Inline: the
 * engine asks for each signal of each evaluation. */
extern const struct forecast_conf config_forecast_none;
static inline const struct forecast_conf *signal_forecast(const struct signal_conf *sc)
{
	return sc->forecast ? sc->forecast : &config_forecast_none;
}

struct rule_conf {
	char *signal;
	int signal_index;       /* resolved index into group_conf.signals */
	int64_t window_ms;      /* the rule's own window (default 300 s) */
	enum aggregation statistic; /* default avg */
	enum rule_operator op;
	double threshold;
	enum scale_direction direction; /* DIR_OUT or DIR_IN */
	enum change_type change;
	double value;
	int64_t cooldown_ms;    /* default 300 s */
	const char *file;
	int line;
};

struct target_override {
	char *signal;
	int signal_index;
	double target;
};

struct profile_conf {
	char *name;
	enum profile_kind kind;
	int min, max, def;
	/* PROFILE_RECURRENCE */
	unsigned days;          /* bit 0 = Monday ... bit 6 = Sunday */
	int start_minute;       /* minutes after local midnight, [0, 1440) */
	int end_minute;         /* (0, 1440]; end <= start means the span crosses midnight */
	char *timezone;         /* IANA name, default "UTC"; NULL for the default profile */
	void *tz;               /* the resolved zone (GTimeZone *), owned; see schedule.h;
				 * set for recurrence and fixed profiles */
	/* PROFILE_FIXED: [start, end) as UTC epoch milliseconds */
	int64_t start_ms, end_ms;
	struct rule_conf *rules;
	size_t n_rules;
	struct target_override *targets;
	size_t n_targets;
	const char *file;
	int line;
};

struct rate_policy {
	enum policy_type type;
	double value;
	int64_t period_ms;
};

struct direction_behavior {
	int64_t stabilization_ms;  /* scale-in default 300 s, scale-out default 0 */
	enum select_policy select;
	/* n_policies of them (at most CONFIG_MAX_POLICIES), in the
	 * configuration's region or the defaults' static arrays: room for
	 * the most a direction may have was 384 bytes a group, most of it
	 * unused. */
	const struct rate_policy *policies;
	size_t n_policies;
};

struct behavior_conf {
	struct direction_behavior scale_out;
	struct direction_behavior scale_in;
	int64_t initialization_ms; /* default 60 s */
	enum on_missing on_missing;
	/* Launch to ready when the daemon has not measured it yet (default
	 * 120 s): the forecasts' horizon and the lazy scale-in's cost of a
	 * relaunch. */
	int64_t boot_time_ms;
	/* Lazy scale-in: an idle instance goes only when keeping it would
	 * cost more than relaunching it (engine.c, engine_keep_ms()). */
	bool lazy_scale_in;
	int64_t billing_minimum_ms;     /* default 60 s */
	int64_t billing_granularity_ms; /* default 1 s */
};

/* Notifications on each action and the pre-scale-in (drain) hook; see
 * autoscaled.conf(5). A group's own settings replace the top-level ones as a
 * whole. Argument vectors are NULL-terminated. */
struct notify_conf {
	char *webhook_url;             /* NULL: no webhook */
	char *webhook_secret_file;     /* NULL: unsigned */
	int64_t webhook_timeout_ms;    /* per attempt, default 10 s */
	int webhook_retries;           /* after the first attempt, default 3 */
	char **command;                /* NULL: no command hook */
	size_t n_command;
	int64_t command_timeout_ms;    /* default 30 s */
	char **pre_scale_in;           /* NULL: no drain hook */
	size_t n_pre_scale_in;
	int64_t pre_scale_in_deadline_ms; /* per victim, default 5 min */
};

/* How a warm member waits (autoscaled.conf(5), WARM POOLS): booted then
 * suspended with its memory held, booted then saved to disk, or defined
 * with its disk made and never started. */
enum warm_state {
	WARM_PAUSED,
	WARM_SAVED,
	WARM_STOPPED,
};

/* A libvirt group's pool of warm members: domains made ready ahead of a
 * scale-out, not counted as capacity, taken first when the group grows.
 * size 0 (the block absent) means no pool. */
struct warm_pool_conf {
	int size;
	enum warm_state state;      /* default paused */
	int64_t max_age_ms;         /* a warm member parked longer is replaced; 0 = never */
	int64_t refill_ms;          /* at least this long between two top-ups, default 30 s */
	int64_t warmup_ms;          /* a new warm member runs this long (or until ready) before it is parked, default 60 s */
	bool return_on_scale_in;    /* a scale-in parks its victims while the pool has room (default false) */
	char **reseed_command;      /* NULL-terminated argv run when a warm member is taken; NULL = none */
	size_t n_reseed_command;
	const char *file;           /* where the block is, NULL when absent */
	int line;
};

extern const struct notify_conf config_notify_none;
extern const struct warm_pool_conf config_warm_pool_none;

struct group_conf {
	char *name;
	char *driver;
	int driver_line;           /* of the `driver` key, 0 when absent */
	struct options driver_options;
	int64_t interval_ms;       /* evaluation interval (default: agent's) */
	bool dry_run;
	struct signal_conf *signals;
	size_t n_signals;
	/* Profiles in file order. Exactly one has kind PROFILE_DEFAULT; if the
	 * file names none, the group's own min/max/default form it. */
	struct profile_conf *profiles;
	size_t n_profiles;
	struct behavior_conf behavior;
	/* Notifications and hooks, and the warm pool, which most groups do
	 * not set: pointers, not the blocks themselves (152 bytes a group, 1.5
	 * MB at 10,000 groups). `notify` is the agent's when the group sets
	 * neither `notifications` nor `hooks`; `warm_pool` is NULL without a
	 * warm_pool block. Read them through group_notify() and
	 * group_warm_pool(), which give the defaults for NULL. */
	const struct notify_conf *notify;
	const struct warm_pool_conf *warm_pool;
	char *owner;               /* cluster mode: the agent the group is pinned to, NULL = by hashing */
	const char *file;
	int line;
};

/* A group's notifications and hooks: its own, the agent's, or none (the
 * defaults) when NULL. */
static inline const struct notify_conf *group_notify(const struct group_conf *gc)
{
	return gc->notify ? gc->notify : &config_notify_none;
}

/* A group's warm pool, or none (size 0, the defaults) when NULL. */
static inline const struct warm_pool_conf *group_warm_pool(const struct group_conf *gc)
{
	return gc->warm_pool ? gc->warm_pool : &config_warm_pool_none;
}

/* Several agents sharing the groups through etcd (autoscaled.conf(5),
 * CLUSTER); NULL in struct config when the file has no `cluster`. */
#define CONFIG_MAX_ETCD_ENDPOINTS 16
#define CONFIG_MAX_CLUSTER_PREFIX 200
#define CONFIG_MAX_CLUSTER_WEIGHT 1000.0
struct cluster_conf {
	char **etcd;               /* endpoint URLs, in the order tried */
	size_t n_etcd;
	char *prefix;              /* "/autoscaled" by default; no trailing '/' */
	int64_t lease_ttl_ms;      /* whole seconds, 2 s to 1 h, default 10 s */
	char *ca_file;             /* tls, each NULL when unset */
	char *cert_file;
	char *key_file;
	char *name;                /* this agent's name, by default the host's */
	double weight;             /* its share of the groups, default 1 */
	bool observe_all;          /* observe = "all": evaluate groups others own too (default "owned") */
	const char *file;
	int line;
};

/* agent.driver_concurrency: how many calls of one driver run at once. */
struct driver_limit {
	char *driver;
	int limit;                 /* 1 to CONFIG_MAX_DRIVER_CONCURRENCY */
};

struct agent_conf {
	int64_t interval_ms;       /* default 15 s */
	char *state_directory;     /* default AUTOSCALED_STATE_DIRECTORY (configure), /var/lib/autoscaled */
	char *admin_socket;        /* default AUTOSCALED_ADMIN_SOCKET (configure), /run/autoscaled/admin.sock */
	char *admin_group;         /* group owning the socket, NULL = root's */
	char *metrics_listen;      /* "127.0.0.1:9851"; NULL = off */
	bool status_page;          /* serve the status page under /status on metrics_listen (loopback only) */
	char *driver_directory;    /* NULL = built-in default or AUTOSCALED_DRIVER_DIR */
	bool dry_run;
	struct notify_conf notify; /* the defaults of every group */
	/* Limits that replace the daemon's defaults, per driver named. */
	struct driver_limit *driver_concurrency;
	size_t n_driver_concurrency;
	/* MiB that the decision history of all groups may take (deflated),
	 * shared equally (autoscalectl history); 1 to 65536, default 3. */
	int history_memory_mib;
};

struct config {
	char *path;
	/* Where every string and array below is kept but the groups and the
	 * files tables (base/region.h): freed whole by config_free(), so that
	 * a reload's old configuration leaves no holes in the heap. */
	struct region *mem;
	struct agent_conf agent;
	struct cluster_conf *cluster; /* NULL: one agent manages every group */
	struct group_conf *groups;
	size_t n_groups;
	/* Names of every file read (the main file and its includes); options,
	 * rules and groups point into this table for FILE:LINE messages. */
	char **files;
	size_t n_files;
};

/* One validation error, already formatted as "FILE:LINE: message". */
struct config_errors {
	char **v;
	size_t n;
};

/* Reads and validates PATH. On success returns 0 and stores a new config in
 * *ret (free with config_free). On failure returns a negative errno (-EINVAL
 * for invalid content) and, when errs is not NULL, fills it with every error
 * found, each "FILE:LINE: message"; *ret is left untouched. */
int config_load(const char *path, struct config **ret, struct config_errors *errs);

void config_free(struct config *c);
void config_errors_clear(struct config_errors *e);

/* Lookups; NULL or -1 when absent. */
const struct group_conf *config_find_group(const struct config *c, const char *name);
int group_find_signal(const struct group_conf *g, const char *name);
const struct profile_conf *group_default_profile(const struct group_conf *g);
/* The longest window signal `sig` of g is read over: its own, or a rule's
 * over it in any profile. What a signal's sample window must hold; the
 * daemon and simulate size it alike. */
int64_t group_longest_window(const struct group_conf *g, size_t sig);

/* Whether two loads of a configuration say the same thing: every value is
 * compared, where it was written (FILE:LINE) is not. A reload keeps the
 * runtime of a group whose configuration is equal in this sense, so a
 * member added to the structs above must be compared here too. */
bool config_options_equal(const struct options *a, const struct options *b);
bool config_signal_equal(const struct signal_conf *a, const struct signal_conf *b);
bool config_group_equal(const struct group_conf *a, const struct group_conf *b);

/* The one duration grammar of the project (autoscaled.conf(5), DURATIONS),
 * used by the configuration, drivers (through the host ABI), sources, the
 * admin API and the command line: one or more NUMBER UNIT terms, largest
 * unit first and each unit at most once ("1h30m", "90min", "1.5h", "500ms",
 * "2d"), or a lone NUMBER meaning seconds ("90", "2.5"). NUMBER is decimal
 * digits with an optional fraction; units are d, h, min or m, s or sec, and
 * ms. Stores milliseconds (rounded) in *ret and returns 0, or returns
 * -EINVAL for anything else (a sign, blanks, an unknown unit) and -ERANGE
 * beyond CONFIG_MAX_DURATION_MS; *ret is written only on success. */
#define CONFIG_MAX_DURATION_MS (INT64_C(100) * 365 * 86400 * MS_PER_SEC)
int parse_duration_ms(const char *s, int64_t *ret);
/* How messages about a bad duration say what is expected. */
#define CONFIG_DURATION_HELP "use seconds or a string such as \"90s\", \"1h30m\", \"90min\", \"1.5h\" or \"500ms\""

/* The word of `known` that `word` is most likely a typo of (by edit
 * distance, scaled to its length), or NULL when none is close enough. */
const char *config_near_miss(const char *word, const char *const *known, size_t n_known);

const char *aggregation_name(enum aggregation a);
const char *signal_type_name(enum signal_type t);
const char *rule_operator_name(enum rule_operator op); /* ">", ">=", ... */
const char *on_missing_name(enum on_missing m);
const char *warm_state_name(enum warm_state s); /* "paused", "saved", "stopped" */
/* Whether two groups' warm pools say the same thing (FILE:LINE aside). */
bool config_warm_pool_equal(const struct warm_pool_conf *a, const struct warm_pool_conf *b);

/* A scale direction's names, all from its one table (config-model.c): the
 * word of the configuration, the state file and a record's "direction"
 * ("out", "in", "none"); the action of the decision records, the journal's
 * ACTION= and the metrics ("scale_out", "scale_in", "none"); and the noun of
 * messages ("scale-out", "scale-in", "no change"). "?" for a value that is
 * not a direction. */
const char *direction_name(enum scale_direction d);
const char *direction_action(enum scale_direction d);
const char *direction_noun(enum scale_direction d);
/* The direction named `s` ("out" or "in"; "none" too when none_ok).
 * Returns 0, or -EINVAL (also for NULL) with *ret untouched. */
int direction_from_name(const char *s, bool none_ok, enum scale_direction *ret);

/* The formats of a recorded demand series, which simulate reads
 * (simulation/trace.h describes each) and a forecast's seed_file may be in
 * (forecast.seed_format). Their names are here, below both, so that the
 * configuration checks a name without the trace readers. */
enum trace_format {
	TRACE_NASA,
	TRACE_AZURE_LLM,
	TRACE_BITBRAINS,
	TRACE_CSV,
	TRACE_SWF,
	TRACE_REQUESTS,
};

/* "nasa", "azure-llm", "bitbrains", "csv", "swf", "requests" -> the
 * format. 0 or -EINVAL. */
int trace_format_parse(const char *name, enum trace_format *ret);
/* "?" for a value that is not a format. */
const char *trace_format_name(enum trace_format f);

#endif
