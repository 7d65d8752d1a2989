/* libvirt driver: the connections to the hosts (reopened with backoff when
 * they drop), the driver's messages through the host's log, libvirt's
 * errors as errno values, and the clocks. Every other file of the driver
 * uses these; they use none of them. */
#include "libvirt-internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libvirt/virterror.h>

#include "base/backoff.h"

#define BACKOFF_MAX_MS (60 * 1000)

static void vlog_msg(struct autoscaled_driver_instance *h, enum autoscaled_log_level level, const char *suffix,
		     const char *fmt, va_list ap)
{
	char msg[1536];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	h->host->log(h->host, level, "libvirt: %s%s", msg, suffix ? suffix : "");
}

void lv_log(struct autoscaled_driver_instance *h, enum autoscaled_log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog_msg(h, level, NULL, fmt, ap);
	va_end(ap);
}

void lv_log_virt(struct autoscaled_driver_instance *h, enum autoscaled_log_level level, const char *fmt, ...)
{
	char suffix[1024];
	va_list ap;

	snprintf(suffix, sizeof(suffix), ": %s", virGetLastErrorMessage());
	va_start(ap, fmt);
	vlog_msg(h, level, suffix, fmt, ap);
	va_end(ap);
}

int lv_virt_errno(void)
{
	virErrorPtr e = virGetLastError();

	if (!e)
		return -EIO;
	switch (e->code) {
	case VIR_ERR_NO_DOMAIN:
	case VIR_ERR_NO_STORAGE_POOL:
	case VIR_ERR_NO_STORAGE_VOL:
		return -ENOENT;
	case VIR_ERR_NO_SUPPORT:
	case VIR_ERR_ARGUMENT_UNSUPPORTED:
		return -EOPNOTSUPP;
	case VIR_ERR_INVALID_ARG:
	case VIR_ERR_XML_ERROR:
		return -EINVAL;
	case VIR_ERR_NO_CONNECT:
	case VIR_ERR_RPC:
	case VIR_ERR_SYSTEM_ERROR:
		return -EHOSTUNREACH;
	case VIR_ERR_DOM_EXIST:
	case VIR_ERR_STORAGE_VOL_EXIST:
		return -EEXIST;
	default:
		return -EIO;
	}
}

/* ------------------------------------------------------------ connections */

/* Whether the last error says that libvirtd's local socket refused this
 * user: the socket's mode (unix_sock_group, unix_sock_rw_perms) or polkit,
 * which Debian's 60-libvirt.rules opens to the group libvirt. A daemon
 * that is not root needs that group; the log says so, rather than only
 * "Permission denied". */
static bool refused_local_user(const char *uri)
{
	virErrorPtr e = virGetLastError();

	if (!e || geteuid() == 0 || !strstr(uri, ":///"))
		return false;
	return (e->code == VIR_ERR_SYSTEM_ERROR && (e->int1 == EACCES || e->int1 == EPERM)) ||
	       e->code == VIR_ERR_AUTH_FAILED || e->code == VIR_ERR_AUTH_UNAVAILABLE ||
	       e->code == VIR_ERR_AUTH_CANCELLED || e->code == VIR_ERR_OPERATION_DENIED;
}

virConnectPtr lv_connect(struct autoscaled_driver_instance *h, struct lv_host *host)
{
	int64_t now = clock_mono_ms();

	if (host->conn) {
		if (virConnectIsAlive(host->conn) == 1)
			return host->conn;
		lv_log(h, AUTOSCALED_LOG_WARNING, "connection to '%s' dropped; reopening", host->uri);
		virConnectClose(host->conn);
		host->conn = NULL;
		host->retry_at_ms = 0;
	}
	if (now < host->retry_at_ms)
		return NULL;
	host->conn = virConnectOpenAuth(host->uri, virConnectAuthPtrDefault, 0);
	if (!host->conn) {
		int64_t backoff = backoff_delay_ms(1000, BACKOFF_MAX_MS, ++host->failures);

		host->retry_at_ms = now + backoff;
		if (!host->reported_down && refused_local_user(host->uri))
			lv_log_virt(h, AUTOSCALED_LOG_ERROR,
				    "host '%s' refuses the daemon's user (uid %u), retrying in %.1f s with backoff: "
				    "libvirtd's socket admits the group libvirt, which the daemon is not a member of "
				    "(under systemd: SupplementaryGroups=libvirt, the libvirt driver's drop-in "
				    "autoscaled.service.d/libvirt.conf)",
				    host->uri, (unsigned)geteuid(), (double)backoff / 1000.0);
		else if (!host->reported_down)
			lv_log_virt(h, AUTOSCALED_LOG_ERROR, "host '%s' is unreachable, retrying in %.1f s with backoff",
				    host->uri, (double)backoff / 1000.0);
		host->reported_down = true;
		return NULL;
	}
	if (host->reported_down)
		lv_log(h, AUTOSCALED_LOG_NOTICE, "host '%s' is reachable again", host->uri);
	host->failures = 0;
	host->reported_down = false;
	/* Detects a dead peer on remote connections when the host runs a
	 * libvirt event loop; local ones do not support it, which is fine. */
	if (virConnectSetKeepAlive(host->conn, 5, 3) < 0)
		virResetLastError();
	return host->conn;
}
