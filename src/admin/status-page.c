/* The status page; see status-page.h.
 *
 * The HTML is written here, from the same JSON the admin API answers
 * with; the script and the style sheet are data/status/ compiled in
 * (status-assets.h is generated from them by the build). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>
#include <glib.h>

#include "admin/status-page.h"
#include "base/clock.h"
#include "base/host.h"
#include "base/iso8601.h"
#include "status-assets.h"

/* Replies made within this time of one another for the same path and
 * Host are one reply (httpd.h): a reloading browser, or many, cost one
 * rendering a second. httpd gives a shared reply only to a request with
 * the same Host as the one it was made for, so the check below holds. */
#define STATUS_SHARE_MS 1000

/* Text in markup, escaped by GLib (& < > " '). */
static void put_escaped(FILE *f, const char *s)
{
	gchar *e = g_markup_escape_text(s ? s : "", -1);

	fputs(e, f);
	g_free(e);
}

/* A cell with a JSON value: a number, a string, or a dash for null. Its
 * label heads it where a narrow screen shows a row as a card. */
static void put_cell(FILE *f, const char *label, const cJSON *v, bool number)
{
	fprintf(f, "<td data-label=%s%s>", label, number ? " class=n" : "");
	if (cJSON_IsNumber(v))
		fprintf(f, "%g", v->valuedouble);
	else if (cJSON_IsString(v))
		put_escaped(f, v->valuestring);
	else
		fputs("\xe2\x80\x93", f);
}

static void put_badge(FILE *f, const char *what)
{
	fprintf(f, "<span class=badge>%s</span>", what);
}

static void put_row(FILE *f, const cJSON *g)
{
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(g, "last_decision");
	const cJSON *pinned = cJSON_GetObjectItemCaseSensitive(g, "pinned");
	const char *action = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "action"));

	fputs("<tr data-group=\"", f);
	put_escaped(f, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(g, "name")));
	fputs("\"><td data-label=Group>", f);
	put_escaped(f, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(g, "name")));
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(g, "paused")))
		put_badge(f, "paused");
	if (cJSON_IsNumber(pinned))
		fprintf(f, "<span class=badge>pinned %d</span>", pinned->valueint);
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(g, "dry_run")))
		put_badge(f, "dry run");
	put_cell(f, "Current", cJSON_GetObjectItemCaseSensitive(g, "current"), true);
	put_cell(f, "Desired", cJSON_GetObjectItemCaseSensitive(g, "desired"), true);
	put_cell(f, "Min", cJSON_GetObjectItemCaseSensitive(g, "min"), true);
	put_cell(f, "Max", cJSON_GetObjectItemCaseSensitive(g, "max"), true);
	put_cell(f, "Profile", cJSON_GetObjectItemCaseSensitive(g, "profile"), false);
	put_cell(f, "Hold", cJSON_GetObjectItemCaseSensitive(d, "hold"), false);
	if (action) {
		fputs("<td data-label=\"Last decision\" class=\"", f);
		put_escaped(f, action);
		fputs("\">", f);
	} else {
		fputs("<td data-label=\"Last decision\">", f);
	}
	put_escaped(f, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(g, "explanation")));
	fputs("</tr>\n", f);
}

int status_page_write(const struct status_page *p, FILE *f)
{
	cJSON *list = p->ops->list(p->userdata), *health = p->ops->health(p->userdata);
	const cJSON *g, *groups = cJSON_GetObjectItemCaseSensitive(list, "groups");
	const char *version = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(health, "version"));
	char now[40] = "";

	if (!cJSON_IsArray(groups)) {
		cJSON_Delete(list);
		cJSON_Delete(health);
		return -ENOMEM;
	}
	iso8601_format(clock_wall_ms(), ISO8601_SECONDS, now, sizeof(now));
	fputs("<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
	      "<meta name=viewport content=\"width=device-width,initial-scale=1\">"
	      /* The browser itself holds the page to what the daemon serves. */
	      "<meta http-equiv=Content-Security-Policy content=\"default-src 'none'; script-src 'self'; "
	      "style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'\">"
	      "<title>autoscaled status</title><link rel=stylesheet href=\"" STATUS_PAGE_PREFIX "/status.css\">"
	      "</head><body>\n<header><h1>autoscaled</h1><p>",
	      f);
	if (version) {
		fputs("version ", f);
		put_escaped(f, version);
		fputs(" \xc2\xb7 ", f);
	}
	fprintf(f, "%d group%s</p><p id=updated>Rendered at %s</p></header>\n<main>\n", cJSON_GetArraySize(groups),
		cJSON_GetArraySize(groups) == 1 ? "" : "s", now);
	fputs("<section><h2>Groups</h2><div class=scroll><table id=groups><thead><tr><th>Group<th>Current"
	      "<th>Desired<th>Min<th>Max<th>Profile<th>Hold<th>Last decision</tr></thead><tbody id=groups-rows>\n",
	      f);
	cJSON_ArrayForEach(g, groups)
	{
		const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(g, "name"));
		cJSON *full = name ? p->ops->show(p->userdata, name) : NULL;

		put_row(f, full ? full : g);
		cJSON_Delete(full);
	}
	fputs("</tbody></table></div></section>\n"
	      "<section id=charts><h2>Last hours</h2><div id=chart-list></div>"
	      "<noscript><p>The charts and the decision history need JavaScript. The table above does not, nor "
	      "does the JSON under <a href=\"" STATUS_PAGE_PREFIX "/api/v1/groups\">" STATUS_PAGE_PREFIX
	      "/api/v1/groups</a>.</p></noscript></section>\n"
	      "<section id=history hidden><h2>Decisions</h2><div class=filters>"
	      "<label>Group <select id=f-group><option value=\"\">all</option></select></label>"
	      "<label>Action <select id=f-action><option value=\"\">all</option><option value=acted>scale-out or "
	      "scale-in</option><option value=scale_out>scale-out</option><option value=scale_in>scale-in</option>"
	      "<option value=none>none</option></select></label>"
	      "<label>Hold <select id=f-hold><option value=\"\">all</option></select></label>"
	      "<span id=history-count></span></div>"
	      "<div class=scroll><table><thead><tr><th>Time<th>Group<th>Action<th>Hold<th>Count"
	      "<th class=wide>Why</tr></thead><tbody id=history-rows></tbody></table></div></section>\n"
	      "</main>\n<script src=\"" STATUS_PAGE_PREFIX "/status.js\"></script>\n</body></html>\n",
	      f);
	cJSON_Delete(list);
	cJSON_Delete(health);
	return ferror(f) ? -EIO : 0;
}

static void reply_asset(struct httpd_response *resp, const char *type, const char *text)
{
	resp->body = strdup(text);
	if (!resp->body) {
		httpd_error(resp, 500, "out of memory");
		return;
	}
	resp->status = 200;
	resp->content_type = type;
	resp->share_ms = STATUS_SHARE_MS;
}

void status_page_serve(void *page, const struct httpd_request *req, struct httpd_response *resp)
{
	const struct status_page *p = page;
	const char *path = req->path + strlen(STATUS_PAGE_PREFIX);
	FILE *f;
	int r;

	if (strcmp(req->method, "GET") != 0 && strcmp(req->method, "HEAD") != 0) {
		httpd_error(resp, 405, "method '%s' not allowed on '%s': the status page is read-only", req->method,
			    req->path);
		return;
	}
	if (!host_is_loopback(req->host)) {
		httpd_error(resp, 403, "the status page answers only requests for this machine (Host 127.0.0.1, [::1] "
				       "or localhost)");
		return;
	}
	if (strncmp(path, "/api/", 5) == 0) {
		admin_serve_read_only(p->ops, p->userdata, path + 4, req, resp);
		return;
	}
	if (strcmp(path, "/status.js") == 0) {
		reply_asset(resp, "text/javascript; charset=utf-8", status_asset_js);
		return;
	}
	if (strcmp(path, "/status.css") == 0) {
		reply_asset(resp, "text/css; charset=utf-8", status_asset_css);
		return;
	}
	if (strcmp(path, "") != 0 && strcmp(path, "/") != 0) {
		httpd_error(resp, 404, "no such path '%s'; the status page is at " STATUS_PAGE_PREFIX, req->path);
		return;
	}
	f = httpd_body_open(req, resp);
	if (!f) {
		httpd_error(resp, 500, "out of memory");
		return;
	}
	/* Closed in any case: the stream holds the body's memory. */
	r = status_page_write(p, f);
	if (fclose(f) != 0 || r < 0) {
		httpd_error(resp, 500, "cannot render the status page");
		return;
	}
	resp->status = 200;
	resp->content_type = "text/html; charset=utf-8";
	resp->share_ms = STATUS_SHARE_MS;
}
