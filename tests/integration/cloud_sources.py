"""The gce_monitoring and azure_monitor signal sources against the emulators:
values, staleness, missing averages, both Azure error shapes, timeouts."""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.environ.get("top_srcdir", "."), "tests", "cloud"))
from cloudtest import Tap, check, private_file, rsa_key, tempdir, top_builddir  # noqa: E402
from azure import AzureEmulator  # noqa: E402
from gce import GceEmulator  # noqa: E402

tap = Tap()
TMP = tempdir()
PEM, PUBKEY = rsa_key(TMP.name)
EMAIL = "mon@p1.iam.gserviceaccount.com"
SECRET = "mon-secret-" + os.urandom(6).hex()
PROBE = os.path.join(top_builddir, "tests", "cloud", "cloud-source-probe")


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
    check('metadata.system_labels.instance_group = "web"' in req["filter"], "filter", req)
    check(len(ctx.gce.find("GET", "^/computeMetadata/")) == 1, "token cached across polls")
    for tok in ctx.gce.tokens:
        check(tok not in err and tok not in "".join(out), "token in output")


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
    ctx.gce.cpu_lag_s = 900
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
