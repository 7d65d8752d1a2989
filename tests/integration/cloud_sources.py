"""The gce_monitoring and azure_monitor signal sources against the emulators:
values, staleness, missing averages, both Azure error shapes, timeouts."""

import json
import os
import subprocess
import sys
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.environ.get("top_srcdir", "."), "tests", "helpers"))
from cloudtest import Tap, check, private_file, rsa_key, tempdir, top_builddir  # noqa: E402
from azure import AzureEmulator  # noqa: E402
from gce import GceEmulator  # noqa: E402

tap = Tap()
TMP = tempdir()
PEM, PUBKEY = rsa_key(TMP.name)
EMAIL = "mon@p1.iam.gserviceaccount.com"
SECRET = "mon-secret-" + os.urandom(6).hex()
PROBE = os.path.join(top_builddir, "tests", "helpers", "cloud-source-probe")


class Ctx:
    def __init__(self):
        self.gce = GceEmulator()
        self.gurl = self.gce.start()
        self.gce.trust_key(PUBKEY, EMAIL, self.gurl + "/token")
        self.az = AzureEmulator()
        self.aurl = self.az.start()
        self.az.add_set("sub1", "rg1", "web", 2)
        self.az.secrets[("t1", "app1")] = SECRET


def setup():
    return Ctx()


def teardown(ctx):
    ctx.gce.stop()
    ctx.az.stop()


def run(kind, opts, timeout_ms=5000, polls=1):
    args = [PROBE, kind, str(timeout_ms), str(polls)] + ["%s=%s" % kv for kv in opts.items()]
    p = subprocess.run(args, capture_output=True, text=True, timeout=60)
    # Every reading, valid or not, ends in status 0: anything else is a
    # refused option (2) or a crash, and fails the test at once.
    check(p.returncode == 0, "cloud-source-probe exited with status %d" % p.returncode, p.stderr[-3000:], p.stdout)
    return p.stdout.splitlines(), p.stderr


def gce_opts(ctx, **kw):
    o = {"project": "p1", "group": "web", "monitoring_base": ctx.gurl + "/v3", "metadata_host": ctx.gurl.split("//")[1]}
    o.update(kw)
    return o


def az_opts(ctx, **kw):
    o = {"subscription": "sub1", "resource_group": "rg1", "name": "web", "arm_base": ctx.aurl,
         "credentials": "client_secret", "tenant": "t1", "client_id": "app1", "login_host": ctx.aurl,
         "secret_file": private_file(TMP.name, "s", SECRET)}
    o.update(kw)
    return o


@tap.test
def gce_value(ctx):
    """gce_monitoring reads the newest mean CPU point of the group, in percent"""
    ctx.gce.cpu["web"] = [0.42, 0.30]
    out, err = run("gce_monitoring", gce_opts(ctx), polls=2)
    check(out == ["ok 42", "ok 42"], "42 %", out, err)
    req = ctx.gce.find("GET", "/timeSeries$")[0]["query"]
    check(req["aggregation.perSeriesAligner"] == "ALIGN_MEAN" and req["aggregation.crossSeriesReducer"] ==
          "REDUCE_MEAN" and req["aggregation.alignmentPeriod"] == "60s", "aggregation", req)
    check(req.get("view") == "FULL", "view=FULL asked for: the points, not only the headers", req)
    check('metadata.system_labels.instance_group = "web"' in req["filter"], "filter", req)
    check(len(ctx.gce.find("GET", "^/computeMetadata/")) == 1, "token cached across polls")
    for tok in ctx.gce.tokens:
        check(tok not in err and tok not in "".join(out), "token in output")


@tap.test
def gce_emulator_strict(ctx):
    """the Monitoring emulator parses the filter, honours the reducer, pageSize and view, as the API does"""
    import urllib.request
    tok = ctx.gce._issue("test")
    ctx.gce.cpu["web"] = [0.4, 0.2, 0.6]
    ctx.gce.cpu["web2"] = [0.9]
    now = time.time()

    def ts(flt, **q):
        q = dict({"filter": flt, "interval.startTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - 900)),
                  "interval.endTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))}, **q)
        req = urllib.request.Request(ctx.gurl + "/v3/projects/p1/timeSeries?" + urllib.parse.urlencode(q),
                                     headers={"Authorization": "Bearer " + tok})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())
    base = 'metric.type = "compute.googleapis.com/instance/cpu/utilization" AND resource.type = "gce_instance"'
    web = base + ' AND metadata.system_labels.instance_group = "web"'
    agg = {"aggregation.alignmentPeriod": "60s", "aggregation.perSeriesAligner": "ALIGN_MEAN"}
    st, b = ts("xx " + web)
    check(st == 400, "a filter with junk is refused, not matched as a substring", st, b)
    st, b = ts(web, **dict(agg, **{"aggregation.crossSeriesReducer": "REDUCE_MEAN"}))
    check(st == 200 and len(b["timeSeries"]) == 1 and b["timeSeries"][0]["points"][0]["value"]["doubleValue"] == 0.4,
          "REDUCE_MEAN gives the group's mean as one series", b)
    st, b = ts(web, **agg)
    check(st == 200 and len(b["timeSeries"]) == 2, "per-instance series without the reducer", b)
    st, b = ts(base, **dict(agg, **{"aggregation.crossSeriesReducer": "REDUCE_MEAN", "pageSize": "2"}))
    check(st == 200 and sum(len(x["points"]) for x in b["timeSeries"]) == 2 and b.get("nextPageToken"),
          "pageSize counts points with view FULL", b)
    st, b = ts(web, **dict(agg, view="HEADERS"))
    check(st == 200 and all("points" not in x for x in b["timeSeries"]), "HEADERS has no points", b)
    st, b = ts(web, **{"aggregation.crossSeriesReducer": "REDUCE_MEAN"})
    check(st == 400, "a reducer without an aligner is refused", st, b)
    st, b = ts(web, **{"aggregation.alignmentPeriod": "30s", "aggregation.perSeriesAligner": "ALIGN_MEAN"})
    check(st == 400, "an alignment period under 60s is refused", st, b)


@tap.test
def gce_key_file(ctx):
    """gce_monitoring with a service-account key"""
    ctx.gce.cpu["web"] = [0.1]
    key = private_file(TMP.name, "k.json", json.dumps({"type": "service_account", "private_key_id": "k",
                                                        "private_key": PEM, "client_email": EMAIL,
                                                        "token_uri": ctx.gurl + "/token"}))
    out, err = run("gce_monitoring", gce_opts(ctx, credentials="key_file", key_file=key))
    check(out == ["ok 10"], "10 %", out, err)


@tap.test
def gce_stale_and_missing(ctx):
    """a point older than max_age, or no series, is an invalid reading, never 0"""
    ctx.gce.cpu["web"] = [0.5]
    # Old, but within the interval the source asks for (max_age + 10 min):
    # the emulator keeps to the interval, as the API does.
    ctx.gce.cpu_lag_s = 600
    out, _ = run("gce_monitoring", gce_opts(ctx, max_age="300"))
    check(len(out) == 1 and out[0].startswith("invalid -61 newest point is") and "max_age 300 s" in out[0], "stale",
          out)
    out, _ = run("gce_monitoring", gce_opts(ctx, group="other"))
    check(len(out) == 1 and out[0].startswith("invalid -61 no CPU series"), "missing", out)


@tap.test
def gce_timeout(ctx):
    """a slow monitoring API gives an invalid reading at the poll's timeout"""
    ctx.gce.cpu["web"] = [0.5]
    ctx.gce.add_fault("GET", "/timeSeries$", None, delay_ms=4000, times=-1)
    out, _ = run("gce_monitoring", gce_opts(ctx), timeout_ms=1000)
    check(out == ["invalid -110 no reply within 1000 ms"], "timeout", out)


@tap.test
def azure_value(ctx):
    """azure_monitor uses the newest point that has an average"""
    ctx.az.cpu["web"] = [None, 37.5, 20.0]
    out, err = run("azure_monitor", az_opts(ctx))
    check(out == ["ok 37.5"], "37.5 %", out, err)
    q = ctx.az.find("GET", "/metrics$")[0]["query"]
    check(q["metricnames"] == "Percentage CPU" and q["interval"] == "PT1M" and q["aggregation"] == "Average"
          and q["api-version"] == "2018-01-01" and "/" in q["timespan"], "query", q)
    check(SECRET not in err and SECRET not in "".join(out), "secret in output")


@tap.test
def azure_managed_identity(ctx):
    """azure_monitor with a managed identity"""
    ctx.az.cpu["web"] = [12.0]
    out, err = run("azure_monitor", az_opts(ctx, credentials="managed_identity", imds_base=ctx.aurl))
    check(out == ["ok 12"], "12 %", out, err)


@tap.test
def azure_error_shapes(ctx):
    """both error body shapes give their message in the invalid reading"""
    ctx.az.add_fault("GET", "/metrics$", 400, body={"code": "BadRequest", "message": "flat shape message"})
    ctx.az.add_fault("GET", "/metrics$", 403, body={"error": {"code": "AuthorizationFailed",
                                                             "message": "nested shape message"}})
    out, _ = run("azure_monitor", az_opts(ctx), polls=2)
    check(len(out) == 2 and "BadRequest: flat shape message" in out[0] and
          "AuthorizationFailed: nested shape message" in out[1], "messages", out)


@tap.test
def azure_no_average(ctx):
    """only points without an average: invalid"""
    ctx.az.cpu["web"] = [None, None]
    out, _ = run("azure_monitor", az_opts(ctx))
    check(len(out) == 1 and out[0].startswith("invalid -61 no point with an average"), "invalid", out)


sys.exit(tap.run(setup, teardown))
