/* Loading driver modules and talking to them; see driver.h. */
#include "agent/driver.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>

#include "agent/group.h"
#include "log/log.h"
#include "admin/metrics.h"

#ifndef DRIVERDIR
#error "DRIVERDIR must be defined by the build (see Makefile.am)"
#endif

/* At most this many distinct drivers are loaded; a directory holds a few. */
#define DRIVER_TABLE_MAX 64

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct driver table[DRIVER_TABLE_MAX];
static size_t table_n;

const char *driver_directory(const char *configured)
{
	const char *env = getenv("AUTOSCALED_DRIVER_DIR");

	if (env && *env)
		return env;
	if (configured && *configured)
		return configured;
	return DRIVERDIR;
}

static bool name_is_valid(const char *name)
{
	size_t len = strlen(name);

	if (len == 0 || len > DRIVER_NAME_MAX)
		return false;
	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' || *p == '-'))
			return false;
	return true;
}

/* The sources a driver feeds are found by name in a group's signals, so
 * each must be a name no other source can have: "DRIVER_WHAT", of the
 * characters a source name has, and unique within the driver. */
static int check_sources(const struct autoscaled_driver *d, const char *path, const char *name, char *err,
			 size_t errlen)
{
	size_t len = strlen(name);

	if (d->n_sources > 0 && !d->sources) {
		snprintf(err, errlen, "driver '%s': '%s' declares %zu sources but no table of them; fix the driver", name,
			 path, d->n_sources);
		return -ENOEXEC;
	}
	for (size_t i = 0; i < d->n_sources; i++) {
		const char *s = d->sources[i].name;

		if (!s || strlen(s) > DRIVER_NAME_MAX || strncmp(s, name, len) != 0 || s[len] != '_' || !s[len + 1] ||
		    strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(s)) {
			snprintf(err, errlen,
				 "driver '%s': '%s' declares a source named '%s'; a driver's source is named "
				 "'%s_WHAT' (a-z, 0-9, '_'; at most %d characters); fix the driver",
				 name, path, s ? s : "(null)", name, DRIVER_NAME_MAX);
			return -ENOEXEC;
		}
		for (size_t k = 0; k < i; k++)
			if (strcmp(d->sources[k].name, s) == 0) {
				snprintf(err, errlen, "driver '%s': '%s' declares the source '%s' twice; fix the driver",
					 name, path, s);
				return -ENOEXEC;
			}
	}
	return 0;
}

/* Checks a descriptor the way tpm2-tss checks a TCTI: exact major version,
 * a struct at least as large as this ABI's mandatory part, and every
 * mandatory operation present. Fills err and returns a negative errno. */
static int check_descriptor(const struct autoscaled_driver *d, const char *path, const char *name, char *err,
			    size_t errlen)
{
	if (!d) {
		snprintf(err, errlen, "driver '%s': %s() in '%s' returned NULL; the module is broken, rebuild it",
			 name, AUTOSCALED_DRIVER_SYMBOL, path);
		return -ENOEXEC;
	}
	if (d->abi_version != AUTOSCALED_DRIVER_ABI_VERSION) {
		snprintf(err, errlen,
			 "driver '%s': '%s' was built for driver ABI %" PRIu32 " but this autoscaled speaks ABI %u; "
			 "rebuild the driver against this version's <autoscaled/driver.h>",
			 name, path, d->abi_version, AUTOSCALED_DRIVER_ABI_VERSION);
		return -EPROTO;
	}
	if (d->struct_size < AUTOSCALED_DRIVER_MIN_SIZE) {
		snprintf(err, errlen,
			 "driver '%s': '%s' has a descriptor of %" PRIu32 " bytes, smaller than the %zu of ABI %u; "
			 "rebuild the driver against this version's <autoscaled/driver.h>",
			 name, path, d->struct_size, (size_t)AUTOSCALED_DRIVER_MIN_SIZE, AUTOSCALED_DRIVER_ABI_VERSION);
		return -EPROTO;
	}
	if (!d->name || strcmp(d->name, name) != 0) {
		snprintf(err, errlen, "driver '%s': '%s' calls itself '%s'; rename the file to '%s.so' or fix the driver",
			 name, path, d->name ? d->name : "(null)", d->name ? d->name : "NAME");
		return -ENOEXEC;
	}
	const char *missing = !d->open ? "open" : !d->close ? "close" : !d->observe ? "observe"
			      : !d->set_capacity ? "set_capacity" : !d->remove_instances ? "remove_instances" : NULL;
	if (missing) {
		snprintf(err, errlen, "driver '%s': '%s' lacks the mandatory operation %s(); fix and rebuild the driver",
			 name, path, missing);
		return -ENOEXEC;
	}
	return check_sources(d, path, name, err, errlen);
}

/* Opens and checks one module file. On success stores the handle and
 * descriptor; on failure unloads it again (nothing of it is in use yet). */
static int load_file(const char *path, const char *name, void **ret_dl, const struct autoscaled_driver **ret_d,
		     char *err, size_t errlen)
{
	void *dl;
	autoscaled_driver_info_fn info;
	const struct autoscaled_driver *d;
	int r;

	/* RTLD_LOCAL keeps one driver's libraries from resolving another's. */
	dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!dl) {
		snprintf(err, errlen, "driver '%s': cannot load '%s': %s; check its libraries with 'ldd %s'", name,
			 path, dlerror(), path);
		return -ELIBBAD;
	}
	dlerror();
	*(void **)&info = dlsym(dl, AUTOSCALED_DRIVER_SYMBOL);
	if (!info) {
		const char *e = dlerror();

		snprintf(err, errlen,
			 "driver '%s': '%s' does not export %s() (%s); it is not an autoscaled driver, or was linked "
			 "without -export-symbols-regex '^%s$'",
			 name, path, AUTOSCALED_DRIVER_SYMBOL, e ? e : "symbol is NULL", AUTOSCALED_DRIVER_SYMBOL);
		dlclose(dl);
		return -ENOEXEC;
	}
	d = info();
	r = check_descriptor(d, path, name, err, errlen);
	if (r < 0) {
		dlclose(dl);
		return r;
	}
	*ret_dl = dl;
	*ret_d = d;
	return 0;
}

/* Drivers are known by path, so that listing another directory never
 * returns a module of the same name loaded from elsewhere. */
static const struct driver *table_find(const char *path)
{
	for (size_t i = 0; i < table_n; i++)
		if (strcmp(table[i].path, path) == 0)
			return &table[i];
	return NULL;
}

/* Loads NAME from DIR; see driver_load(). */
static int load_from(const char *dir, const char *name, const struct driver **ret, char *err, size_t errlen)
{
	const struct autoscaled_driver *d = NULL;
	const struct driver *found;
	struct stat st;
	char *path = NULL, *name_copy = NULL;
	void *dl = NULL;
	int r;

	if (errlen)
		err[0] = '\0';
	if (!name_is_valid(name)) {
		snprintf(err, errlen, "driver '%s': not a valid driver name (letters a-z, digits, '_' and '-')", name);
		return -EINVAL;
	}
	if (asprintf(&path, "%s/%s.so", dir, name) < 0) {
		snprintf(err, errlen, "driver '%s': out of memory", name);
		return -ENOMEM;
	}
	pthread_mutex_lock(&table_lock);
	found = table_find(path);
	if (found) {
		*ret = found;
		r = 0;
		goto out;
	}
	if (table_n == DRIVER_TABLE_MAX) {
		snprintf(err, errlen, "driver '%s': more than %d distinct driver modules loaded", name,
			 DRIVER_TABLE_MAX);
		r = -EMFILE;
		goto out;
	}
	if (stat(path, &st) < 0) {
		r = -errno;
		snprintf(err, errlen,
			 "no driver '%s' in '%s' (looked for '%s': %s); 'autoscaled --list-drivers' shows what is installed",
			 name, dir, path, strerror(-r));
		goto out;
	}
	r = load_file(path, name, &dl, &d, err, errlen);
	if (r < 0)
		goto out;
	name_copy = strdup(name);
	if (!name_copy) {
		/* The module is loaded but not yet used by anyone: safe to drop. */
		dlclose(dl);
		snprintf(err, errlen, "driver '%s': out of memory", name);
		r = -ENOMEM;
		goto out;
	}
	table[table_n] = (struct driver){ .name = name_copy, .path = path, .ops = d };
	*ret = &table[table_n++];
	path = NULL;
	r = 0;
out:
	pthread_mutex_unlock(&table_lock);
	free(path);
	return r;
}

int driver_load(const char *name, const char *configured, const struct driver **ret, char *err, size_t errlen)
{
	return load_from(driver_directory(configured), name, ret, err, errlen);
}

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A directory holds a handful of drivers; more than this is not one. */
#define DRIVER_LIST_MAX 256

int driver_list(const char *dir, driver_list_fn fn, void *ctx)
{
	char *names[DRIVER_LIST_MAX];
	size_t n = 0;
	struct dirent *de;
	DIR *dh;
	int r = 0;

	dh = opendir(dir);
	if (!dh)
		return -errno;
	while ((de = readdir(dh)) && n < DRIVER_LIST_MAX) {
		size_t len = strlen(de->d_name);

		if (len <= 3 || strcmp(de->d_name + len - 3, ".so") != 0)
			continue;
		names[n] = strdup(de->d_name);
		if (!names[n]) {
			r = -ENOMEM;
			break;
		}
		n++;
	}
	closedir(dh);
	qsort(names, n, sizeof(names[0]), compare_names);
	for (size_t i = 0; i < n && r == 0; i++) {
		char name[DRIVER_NAME_MAX + 1], err[1024];
		const struct driver *drv = NULL;
		size_t len = strlen(names[i]) - 3;

		if (len > DRIVER_NAME_MAX) {
			r = fn(ctx, names[i], NULL, "the name is too long for a driver");
			continue;
		}
		memcpy(name, names[i], len);
		name[len] = '\0';
		if (load_from(dir, name, &drv, err, sizeof(err)) < 0)
			r = fn(ctx, names[i], NULL, err);
		else
			r = fn(ctx, names[i], drv, NULL);
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	return r;
}

static int print_one(void *ctx, const char *file, const struct driver *drv, const char *error)
{
	FILE *out = ctx;

	if (drv) {
		fprintf(out, "  %-12s %s", drv->name, drv->ops->description ? drv->ops->description : "");
		for (size_t i = 0; i < drv->ops->n_sources; i++)
			fprintf(out, "%s%s", i ? ", " : "; feeds the source ", drv->ops->sources[i].name);
		fputc('\n', out);
		/* Its options, indented under it: the one place that documents
		 * a driver built outside this tree. */
		for (const char *l = drv->ops->config_help; l && *l;) {
			size_t n = strcspn(l, "\n");

			fprintf(out, "      %.*s\n", (int)n, l);
			l += n + (l[n] == '\n');
		}
	} else
		fprintf(out, "  %-12s (broken: %s)\n", file, error);
	return 0;
}

int driver_print_list(const char *configured, FILE *out)
{
	const char *dir = driver_directory(configured);
	int r;

	fprintf(out, "Drivers in %s:\n", dir);
	r = driver_list(dir, print_one, out);
	if (r < 0)
		fprintf(out, "  cannot read '%s': %s\n", dir, strerror(-r));
	return r;
}

int driver_source_index(const struct autoscaled_driver *ops, const char *source)
{
	for (size_t i = 0; ops && source && i < ops->n_sources; i++)
		if (strcmp(ops->sources[i].name, source) == 0)
			return (int)i;
	return -1;
}

static void option_free(struct autoscaled_option *o)
{
	free((char *)o->key);
	free((char *)o->value);
	free((char *)o->where);
	if (o->list)
		for (size_t i = 0; i < o->n_list; i++)
			free((char *)o->list[i]);
	free((void *)o->list);
}

static int option_convert(const struct config_option *in, struct autoscaled_option *out)
{
	*out = (struct autoscaled_option){ 0 };
	out->key = strdup(in->key ? in->key : "");
	if (!out->key)
		return -ENOMEM;
	if (in->file && asprintf((char **)&out->where, "%s:%d", in->file, in->line) < 0) {
		out->where = NULL;
		return -ENOMEM;
	}
	if (in->type == OPTION_LIST) {
		char **list = calloc(in->n_list ? in->n_list : 1, sizeof(*list));

		if (!list)
			return -ENOMEM;
		out->list = (const char *const *)list;
		for (size_t i = 0; i < in->n_list; i++) {
			list[i] = strdup(in->list[i] ? in->list[i] : "");
			if (!list[i])
				return -ENOMEM;
			out->n_list = i + 1;
		}
		return 0;
	}
	if (in->str)
		out->value = strdup(in->str);
	else if (in->type == OPTION_BOOL)
		out->value = strdup(in->i ? "true" : "false");
	else if (in->type == OPTION_INT && asprintf((char **)&out->value, "%" PRId64, in->i) < 0)
		out->value = NULL;
	else if (in->type == OPTION_FLOAT && asprintf((char **)&out->value, "%.17g", in->f) < 0)
		out->value = NULL;
	else if (in->type == OPTION_STRING)
		out->value = strdup("");
	return out->value ? 0 : -ENOMEM;
}

int driver_options_from_config(const struct options *in, struct driver_options *ret)
{
	struct driver_options o = { 0 };

	if (in && in->n) {
		o.v = calloc(in->n, sizeof(*o.v));
		if (!o.v)
			return -ENOMEM;
		for (size_t i = 0; i < in->n; i++) {
			int r = option_convert(&in->v[i], &o.v[i]);

			o.n = i + 1;
			if (r < 0) {
				driver_options_free(&o);
				return r;
			}
		}
	}
	*ret = o;
	return 0;
}

/* Appends one option with a text value to o (which has room). */
static int option_add(struct driver_options *o, const char *key, const char *value, const char *const *list,
		      size_t n_list, const char *file, int line)
{
	struct autoscaled_option *p = &o->v[o->n];
	char **copy = NULL;

	*p = (struct autoscaled_option){ 0 };
	o->n++;
	p->key = strdup(key);
	if (!p->key || (file && asprintf((char **)&p->where, "%s:%d", file, line) < 0))
		return -ENOMEM;
	if (list) {
		copy = calloc(n_list ? n_list : 1, sizeof(*copy));
		if (!copy)
			return -ENOMEM;
		p->list = (const char *const *)copy;
		for (size_t i = 0; i < n_list; i++) {
			if (!(copy[i] = strdup(list[i])))
				return -ENOMEM;
			p->n_list = i + 1;
		}
		return 0;
	}
	p->value = value ? strdup(value) : NULL;
	return p->value ? 0 : -ENOMEM;
}

/* A group's warm pool (struct warm_pool_conf) reaches the libvirt driver as
 * extra options named "warm_pool.KEY", so the driver ABI does not change:
 * the option table is already how a group's settings reach its driver, and
 * libconfig names cannot hold a '.', so no driver_options key a user writes
 * can collide with these. They are added only when the group has a
 * warm_pool block; the configuration refuses one on any driver but libvirt. */
#define WARM_POOL_KEYS 7
static int add_warm_pool(const struct warm_pool_conf *w, struct driver_options *o)
{
	char size[16], age[32], refill[32], warmup[32];
	int r;

	snprintf(size, sizeof(size), "%d", w->size);
	snprintf(age, sizeof(age), "%" PRId64 "ms", w->max_age_ms);
	snprintf(refill, sizeof(refill), "%" PRId64 "ms", w->refill_ms);
	snprintf(warmup, sizeof(warmup), "%" PRId64 "ms", w->warmup_ms);
	if ((r = option_add(o, "warm_pool.size", size, NULL, 0, w->file, w->line)) < 0 ||
	    (r = option_add(o, "warm_pool.state", warm_state_name(w->state), NULL, 0, w->file, w->line)) < 0 ||
	    (r = option_add(o, "warm_pool.max_age", age, NULL, 0, w->file, w->line)) < 0 ||
	    (r = option_add(o, "warm_pool.refill", refill, NULL, 0, w->file, w->line)) < 0 ||
	    (r = option_add(o, "warm_pool.warmup", warmup, NULL, 0, w->file, w->line)) < 0 ||
	    (r = option_add(o, "warm_pool.return_on_scale_in", w->return_on_scale_in ? "true" : "false", NULL, 0,
			    w->file, w->line)) < 0)
		return r;
	if (w->reseed_command)
		return option_add(o, "warm_pool.reseed_command", NULL, (const char *const *)w->reseed_command,
				  w->n_reseed_command, w->file, w->line);
	return 0;
}

int driver_options_from_group(const struct group_conf *gc, struct driver_options *ret)
{
	struct driver_options o;
	struct autoscaled_option *v;
	int r = driver_options_from_config(&gc->driver_options, &o);

	if (r < 0 || !gc->warm_pool) {
		if (r == 0)
			*ret = o;
		return r;
	}
	v = realloc(o.v, (o.n + WARM_POOL_KEYS) * sizeof(*v));
	if (!v) {
		driver_options_free(&o);
		return -ENOMEM;
	}
	o.v = v;
	r = add_warm_pool(gc->warm_pool, &o);
	if (r < 0) {
		driver_options_free(&o);
		return r;
	}
	*ret = o;
	return 0;
}

void driver_options_free(struct driver_options *o)
{
	if (!o)
		return;
	for (size_t i = 0; i < o->n; i++)
		option_free(&o->v[i]);
	free(o->v);
	o->v = NULL;
	o->n = 0;
}

/* The calling thread's capture of driver warnings (driver_capture_begin).
 * Thread-local because driver calls of different groups run concurrently,
 * each on its own worker thread. */
static __thread char *capture_buf;
static __thread size_t capture_len;
static __thread int *capture_room;

void driver_capture_begin(char *buf, size_t len, int *room)
{
	capture_buf = len ? buf : NULL;
	capture_len = len;
	if (capture_buf)
		capture_buf[0] = '\0';
	capture_room = room;
	if (room)
		*room = -1;
}

void driver_capture_end(void)
{
	capture_buf = NULL;
	capture_len = 0;
	capture_room = NULL;
}

static void host_log(const struct autoscaled_host *host, enum autoscaled_log_level level, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (capture_buf && level >= AUTOSCALED_LOG_WARNING)
		snprintf(capture_buf, capture_len, "%s", msg);
	log_group(log_driver_priority(level), host->group, NULL, NULL, "%s", msg);
}

/* A host as the daemon allocates it for one driver instance: the ABI
 * struct, and what its callbacks need, owned here so that it lives as long
 * as the handle does, across reloads that free the configuration. */
struct driver_host {
	struct autoscaled_host host;
	struct metrics *metrics; /* the agent's registry; it outlives every handle */
	char *driver;
	char *where;
	char group[];
};

/* Runs on the driver call's worker thread; the registry locks itself. A
 * host of driver_host_init() (tools, tests) has no registry. */
static void host_metric(const struct autoscaled_host *host, enum autoscaled_metric metric, const char *label,
			double value)
{
	const struct driver_host *box = host->userdata;

	if (capture_room && metric == AUTOSCALED_METRIC_HOST_ROOM && isfinite(value) && value >= 0)
		*capture_room = value >= INT_MAX ? INT_MAX : (int)value;
	if (!box || !box->metrics)
		return;
	metrics_record_driver_metric(box->metrics, box->group, box->driver, metric, label, value);
}

void driver_section_where(const struct group_conf *gc, char *buf, size_t len)
{
	const char *file = gc->driver_options.file ? gc->driver_options.file : gc->file;
	int line = gc->driver_options.file ? gc->driver_options.line : gc->line;

	if (file)
		snprintf(buf, len, "%s:%d", file, line);
	else
		snprintf(buf, len, "%s", "");
}

int driver_host_new(const char *group, const char *driver, const char *where, struct metrics *metrics,
		    struct autoscaled_host **ret)
{
	/* The group's, the driver's and the place's names follow the box, in
	 * one block: 10,000 groups made 30,000 allocations of it before. */
	size_t lg = strlen(group) + 1, ld = strlen(driver) + 1, lw = where ? strlen(where) + 1 : 0;
	struct driver_host *box = calloc(1, sizeof(*box) + lg + ld + lw);

	if (!box)
		return -ENOMEM;
	memcpy(box->group, group, lg);
	box->driver = memcpy(box->group + lg, driver, ld);
	box->where = where ? memcpy(box->group + lg + ld, where, lw) : NULL;
	box->metrics = metrics;
	driver_host_init(&box->host, box->group, box);
	box->host.where = box->where;
	*ret = &box->host;
	return 0;
}

void driver_host_free(struct autoscaled_host *host)
{
	struct driver_host *box;

	if (!host)
		return;
	box = (struct driver_host *)host;
	free(box);
}

static int host_parse_duration(const struct autoscaled_host *host, const char *text, int64_t *ret_ms)
{
	(void)host;
	return parse_duration_ms(text, ret_ms);
}

static const char *host_near_miss(const struct autoscaled_host *host, const char *word, const char *const *known)
{
	size_t n = 0;

	(void)host;
	if (!word || !known)
		return NULL;
	while (known[n])
		n++;
	return config_near_miss(word, known, n);
}

void driver_host_init(struct autoscaled_host *host, const char *group, void *userdata)
{
	*host = (struct autoscaled_host){
		.abi_version = AUTOSCALED_DRIVER_ABI_VERSION,
		.struct_size = sizeof(*host),
		.group = group,
		.userdata = userdata,
		.log = host_log,
		.metric = host_metric,
		.parse_duration = host_parse_duration,
		.near_miss = host_near_miss,
	};
}
