/* The status page: a read-only view of every group for a person, served
 * on the metrics listener under /status when agent.status_page is set.
 *
 *   GET /status                       the groups as an HTML table (no script needed)
 *   GET /status/status.js, .css       the charts and decision history; compiled in
 *   GET /status/api/v1/...            the admin API's GET endpoints (admin.h), read-only
 *
 * Everything it shows comes from the admin API's operations (struct
 * admin_ops), so the page, autoscalectl and the JSON agree. It changes
 * nothing: any method but GET and HEAD is refused. A request whose Host
 * header does not name this machine is refused too (403): a web page
 * elsewhere whose name was made to resolve to 127.0.0.1 (DNS rebinding)
 * must not read it through a browser. Runs on the loop's thread (see
 * httpd.h). */
#ifndef AUTOSCALED_STATUS_PAGE_H
#define AUTOSCALED_STATUS_PAGE_H

#include <stdbool.h>
#include <stdio.h>

#include "admin/admin.h"
#include "admin/httpd.h"

#define STATUS_PAGE_PREFIX "/status"

struct status_page {
	const struct admin_ops *ops; /* borrowed */
	void *userdata;
};

/* The handler for metrics_set_page(): `page` is a struct status_page. */
void status_page_serve(void *page, const struct httpd_request *req, struct httpd_response *resp);

/* Writes the page's HTML for the groups `ops` gives to `f`. Returns 0 or a
 * negative errno. For the handler and the tests. */
int status_page_write(const struct status_page *p, FILE *f);

#endif
