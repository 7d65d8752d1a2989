/* Reading the notifications and hooks of the agent and of each group; see
 * autoscaled.conf(5):
 *
 *   notifications = {
 *     webhook = { url = "https://..."; secret_file = "/etc/autoscaled/hook.key"; timeout = "10s"; retries = 3; };
 *     command = [ "/usr/local/bin/on-scale", "--verbose" ];
 *     command_timeout = "30s";
 *   };
 *   hooks = { pre_scale_in = [ "/usr/local/bin/drain" ]; deadline = "5m"; };
 *
 * In the agent section they are the defaults of every group; a group's own
 * `notifications` or `hooks` replaces the agent's of the same name. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config/config-private.h"

#define NOTIFY_MAX_ARGS 64
#define NOTIFY_MAX_RETRIES 10

static const char *const notifications_keys[] = {"webhook", "command", "command_timeout"};
static const char *const webhook_keys[] = {"url", "secret_file", "timeout", "retries"};
static const char *const hooks_keys[] = {"pre_scale_in", "deadline"};

void cfg_notify_defaults(struct notify_conf *n)
{
	*n = config_notify_none;
}

/* An argv: a non-empty list or array of strings whose first is an absolute
 * path (hooks run without a shell and without a PATH search). */
static int get_argv(struct config_ctx *x, const config_setting_t *s, const char *key, char ***out, size_t *n_out)
{
	const config_setting_t *m = config_setting_get_member(s, key);
	int n, type;
	char **v;

	if (!m)
		return 0;
	type = config_setting_type(m);
	n = config_setting_length(m);
	if ((type != CONFIG_TYPE_LIST && type != CONFIG_TYPE_ARRAY) || n < 1 || n > NOTIFY_MAX_ARGS) {
		cfg_error(x, m, "'%s' must be a list of 1 to %d strings, such as [ \"/usr/local/bin/hook\", \"--flag\" ]",
			  key, NOTIFY_MAX_ARGS);
		return -1;
	}
	for (int i = 0; i < n; i++)
		if (config_setting_type(config_setting_get_elem(m, (unsigned)i)) != CONFIG_TYPE_STRING) {
			cfg_error(x, m, "'%s' must hold strings only", key);
			return -1;
		}
	if (config_setting_get_string_elem(m, 0)[0] != '/') {
		cfg_error(x, m, "'%s' must start with an absolute path (no shell, no PATH search), not '%s'", key,
			  config_setting_get_string_elem(m, 0));
		return -1;
	}
	v = cfg_alloc(x, (size_t)n + 1, sizeof(*v));
	for (int i = 0; v && i < n; i++)
		if (!(v[i] = cfg_strdup(x, config_setting_get_string_elem(m, i))))
			break;
	*out = v;
	*n_out = v ? (size_t)n : 0;
	return 1;
}

static void read_webhook(struct config_ctx *x, const config_setting_t *w, struct notify_conf *n)
{
	cfg_check_keys(x, w, webhook_keys, sizeof(webhook_keys) / sizeof(webhook_keys[0]));
	if (cfg_get_string(x, w, "url", &n->webhook_url) == 0)
		cfg_need(x, w, "url");
	else if (n->webhook_url && strncmp(n->webhook_url, "http://", 7) != 0 &&
		 strncmp(n->webhook_url, "https://", 8) != 0)
		cfg_error(x, config_setting_get_member(w, "url"), "webhook 'url' must start with http:// or https://, not '%s'",
			  n->webhook_url);
	if (cfg_get_string(x, w, "secret_file", &n->webhook_secret_file) > 0 && n->webhook_secret_file[0] != '/')
		cfg_error(x, config_setting_get_member(w, "secret_file"), "'secret_file' must be an absolute path, not '%s'",
			  n->webhook_secret_file);
	cfg_get_duration(x, w, "timeout", 100, 300 * MS_PER_SEC, &n->webhook_timeout_ms);
	if (cfg_get_count(x, w, "retries", &n->webhook_retries) > 0 && n->webhook_retries > NOTIFY_MAX_RETRIES)
		cfg_error(x, config_setting_get_member(w, "retries"), "'retries' must be at most %d, not %d",
			  NOTIFY_MAX_RETRIES, n->webhook_retries);
}

void cfg_read_notify(struct config_ctx *x, const config_setting_t *s, struct notify_conf *n,
			const struct notify_conf *defaults)
{
	const config_setting_t *nt = cfg_get_group(x, s, "notifications");
	const config_setting_t *hk = cfg_get_group(x, s, "hooks");
	const config_setting_t *w;

	memset(n, 0, sizeof(*n));
	cfg_notify_defaults(n);
	/* A group without its own settings shares the agent's strings: both
	 * live in the configuration's region, and go with it. */
	if (defaults && !nt) {
		n->webhook_url = defaults->webhook_url;
		n->webhook_secret_file = defaults->webhook_secret_file;
		n->webhook_timeout_ms = defaults->webhook_timeout_ms;
		n->webhook_retries = defaults->webhook_retries;
		n->command = defaults->command;
		n->n_command = defaults->n_command;
		n->command_timeout_ms = defaults->command_timeout_ms;
	}
	if (defaults && !hk) {
		n->pre_scale_in = defaults->pre_scale_in;
		n->n_pre_scale_in = defaults->n_pre_scale_in;
		n->pre_scale_in_deadline_ms = defaults->pre_scale_in_deadline_ms;
	}
	if (nt) {
		cfg_check_keys(x, nt, notifications_keys, sizeof(notifications_keys) / sizeof(notifications_keys[0]));
		w = cfg_get_group(x, nt, "webhook");
		if (w)
			read_webhook(x, w, n);
		get_argv(x, nt, "command", &n->command, &n->n_command);
		cfg_get_duration(x, nt, "command_timeout", 100, 3600 * MS_PER_SEC, &n->command_timeout_ms);
	}
	if (hk) {
		cfg_check_keys(x, hk, hooks_keys, sizeof(hooks_keys) / sizeof(hooks_keys[0]));
		if (get_argv(x, hk, "pre_scale_in", &n->pre_scale_in, &n->n_pre_scale_in) == 0)
			cfg_need(x, hk, "pre_scale_in");
		cfg_get_duration(x, hk, "deadline", 100, 3600 * MS_PER_SEC, &n->pre_scale_in_deadline_ms);
	}
}

/* The hooks' argv grammar, for other hook-like settings (a warm pool's
 * reseed_command), so that every command of the file reads alike. */
int cfg_get_argv(struct config_ctx *x, const config_setting_t *s, const char *key, char ***out, size_t *n_out)
{
	return get_argv(x, s, key, out, n_out);
}
