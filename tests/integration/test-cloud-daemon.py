#!/usr/bin/env python3
"""The daemon scales cloud groups end to end through the emulators: a zonal
and a regional GCE MIG (metadata server and service-account key) and a
Uniform and a Flexible Azure scale set (managed identity and client secret),
out as a queue grows and back in after it drains and the scale-in window
passes. Asserts on the requests the emulators recorded: one resize per
group, removals only in the scale-in direction, no duplicate action, and no
token or secret in the daemon's log. A resize whose operation ends in error
puts the error in the decision records until a resize succeeds. Prints
TAP."""
import datetime
import json
import os
import subprocess
import sys
import time

top_srcdir = os.environ.get("top_srcdir", ".")
sys.path.insert(0, os.path.join(top_srcdir, "tests", "helpers"))
from cloudtest import private_file, rsa_key, start_daemon, stop, tempdir, wait_evaluations, wait_for  # noqa: E402
from gce import GceEmulator  # noqa: E402
from azure import AzureEmulator  # noqa: E402
from tap import comment, done, failed, ok as check  # noqa: E402

DAEMON = os.environ.get("AUTOSCALED", "./autoscaled")
CTL = os.path.join(os.environ.get("top_builddir", "."), "autoscalectl")
EMAIL = "autoscaler@test-project.iam.gserviceaccount.com"
SECRET = "s3cr3t-value-never-logged"


def group_block(name, driver, options, load_file):
    opts = "".join('%s = "%s"; ' % (k, v) for k, v in options.items())
    return """
  {
    name = "%s";
    driver = "%s";
    driver_options = { %s };
    interval = "1s";
    min = 1; max = 8; default = 1;
    signals = ( { name = "queue"; source = "exec"; type = "average"; target = 5.0;
                  aggregation = "last"; window = "2s"; poll_interval = "1s"; staleness = "4s";
                  source_options = { command = [ "/bin/cat", "%s" ]; }; } );
    behavior = { scale_in = { stabilization = "4s"; }; initialization_period = "0s"; };
  }""" % (name, driver, opts, load_file)


def history(sock, group):
    """The group's recent decisions from the admin API, each with its time
    in seconds since the epoch."""
    p = subprocess.run([CTL, "-s", sock, "--json", "history", group], capture_output=True, text=True, timeout=30)
    try:
        decisions = json.loads(p.stdout)["decisions"] if p.returncode == 0 else []
    except ValueError:
        return []
    for d in decisions:
        d["t"] = datetime.datetime.strptime(d["time"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
            tzinfo=datetime.timezone.utc).timestamp()
    return decisions


def window_kept(sock, group, after):
    """Seconds from the group's last decision that wanted a larger pool to
    its first scale-in after `after` (seconds since the epoch), which the
    scale-in window must make at least as long as itself; None when there
    is no such pair."""
    h = history(sock, group)
    first_in = next((d for d in h if d["action"] == "scale_in" and d["t"] >= after), None)
    if not first_in:
        return None
    before = [d for d in h if d["t"] < first_in["t"] and d["clamped"] > first_in["desired"]]
    return first_in["t"] - before[-1]["t"] if before else None


def show(sock, group):
    """The admin API's view of a group, or {} when it does not answer."""
    p = subprocess.run([CTL, "-s", sock, "--json", "show", group], capture_output=True, text=True, timeout=10)
    try:
        return json.loads(p.stdout) if p.returncode == 0 else {}
    except ValueError:
        return {}


def main():
    tmp = tempdir()
    d = tmp.name
    pem, pub = rsa_key(d)
    gce = GceEmulator()
    gce.step_s = 0.5
    gurl = gce.start()
    gce.add_group("p1", "zones", "europe-west1-b", "web", 2)
    gce.add_group("p1", "regions", "europe-west1", "api", 2)
    gce.trust_key(pub, EMAIL, gurl + "/token")
    az = AzureEmulator()
    az.step_s = 0.5
    az.op_polls = 2
    aurl = az.start()
    az.add_set("sub1", "rg1", "web", 2, "Uniform")
    az.add_set("sub1", "rg1", "flex", 2, "Flexible")
    az.secrets[("tenant1", "app1")] = SECRET
    key_file = private_file(d, "sa.json", json.dumps({
        "type": "service_account", "project_id": "p1", "private_key_id": "k1", "private_key": pem,
        "client_email": EMAIL, "client_id": "1", "token_uri": gurl + "/token"}))
    secret_file = private_file(d, "secret", SECRET + "\n")
    load = os.path.join(d, "load")
    with open(load, "w") as f:
        f.write("0\n")
    common_g = {"project": "p1", "name": "web", "compute_base": gurl + "/compute/v1", "retry_base": "50ms",
                "retry_max": "2s", "unstable_limit": "10m"}
    groups = [
        group_block("mig-zonal", "gce-mig", dict(common_g, zone="europe-west1-b",
                                                 metadata_host=gurl.split("//")[1]), load),
        group_block("mig-regional", "gce-mig", dict(common_g, name="api", region="europe-west1",
                                                    credentials="key_file", key_file=key_file), load),
        group_block("vmss-uniform", "azure-vmss", {"subscription": "sub1", "resource_group": "rg1", "name": "web",
                                                   "arm_base": aurl, "credentials": "managed_identity",
                                                   "imds_base": aurl, "retry_base": "50ms", "retry_max": "2s",
                                                   "poll_interval": "100ms"}, load),
        group_block("vmss-flex", "azure-vmss", {"subscription": "sub1", "resource_group": "rg1", "name": "flex",
                                                "arm_base": aurl, "credentials": "client_secret",
                                                "tenant": "tenant1", "client_id": "app1", "login_host": aurl,
                                                "secret_file": secret_file, "retry_base": "50ms",
                                                "retry_max": "2s", "poll_interval": "100ms"}, load),
    ]
    conf = os.path.join(d, "autoscaled.conf")
    with open(conf, "w") as f:
        f.write('agent = { state_directory = "%s/state"; admin_socket = "%s/admin.sock"; };\n' % (d, d))
        f.write("groups = (%s\n);\n" % ",".join(groups))
    log_path = os.path.join(d, "daemon.log")
    proc = start_daemon(conf, log_path)
    zonal = gce.group("p1", "zones", "europe-west1-b", "web")
    regional = gce.group("p1", "regions", "europe-west1", "api")
    uni = az.sets[("sub1", "rg1", "web")]
    flex = az.sets[("sub1", "rg1", "flex")]
    sizes = lambda: (zonal["target"], regional["target"], uni["capacity"], flex["capacity"])  # noqa: E731
    try:
        # Load 0 on 2 instances: everything scales in to the minimum of 1
        # once the 4 s window has passed.
        ok = wait_for(lambda: sizes() == (1, 1, 1, 1), 60)
        check(ok, "an idle queue scales every group in to min 1", sizes())
        gce.clear()
        az.clear()
        # A queue of 30 at 5 per instance asks for 6.
        with open(load, "w") as f:
            f.write("30\n")
        t0 = time.time()
        ok = wait_for(lambda: sizes() == (6, 6, 6, 6), 60)
        check(ok, "a queue of 30 at 5/instance scales every group out to 6 (%.1f s)" % (time.time() - t0), sizes())
        sock = os.path.join(d, "admin.sock")
        check(wait_evaluations(sock, ["mig-zonal", "mig-regional", "vmss-uniform", "vmss-flex"], 3),
              "three more evaluations of every group at 6")
        resizes = [r for r in gce.find("POST", r"/resize$")]
        check(len(resizes) == 2, "one resize per MIG, no duplicate", json.dumps([r["rawquery"] for r in resizes]))
        check(all(r["query"].get("requestId") for r in resizes), "every resize carries a requestId")
        patches = az.find("PATCH", r"virtualMachineScaleSets/[^/]+$")
        caps = [p["json"]["sku"]["capacity"] for p in patches if p.get("json")]
        check(sorted(caps) == [6, 6], "one capacity PATCH per scale set, to 6", caps)
        check(not gce.find("POST", r"/deleteInstances") and not az.find("POST", r"/delete$"),
              "no removal while the queue grows")
        gce.clear()
        az.clear()
        with open(load, "w") as f:
            f.write("0\n")
        t1 = time.time()
        ok = wait_for(lambda: sizes() == (1, 1, 1, 1), 60)
        check(ok, "the drained queue scales every group back in to 1 (%.1f s)" % (time.time() - t1), sizes())
        # The window runs from the last decision that wanted the larger
        # pool, which may come a second before the queue drained.
        kept = [window_kept(sock, g, t1) for g in ("mig-zonal", "mig-regional", "vmss-uniform", "vmss-flex")]
        check(all(k is not None and k >= 4 - 0.05 for k in kept),
              "not before the 4 s scale-in window passed since the last decision for 6 (%s s)" %
              ", ".join("%.1f" % k if k is not None else "?" for k in kept))
        check(not gce.find("POST", r"/resize$") and not az.find("PATCH", r"virtualMachineScaleSets/[^/]+$"),
              "no scale-out request while draining")
        dels = gce.find("POST", r"/deleteInstances")
        removed = sum(len(r["json"]["instances"]) for r in dels)
        check(removed == 10, "the MIGs lose exactly 5 instances each (%d deleted)" % removed)
        adels = az.find("POST", r"/delete$")
        aremoved = sum(len(r["json"]["instanceIds"]) for r in adels)
        check(aremoved == 10, "the scale sets lose exactly 5 instances each (%d deleted)" % aremoved)
        # The zone runs out of capacity: the resize operation ends in error.
        gce.op_error = {"code": "ZONE_RESOURCE_POOL_EXHAUSTED",
                        "message": "The zone 'europe-west1-b' does not have enough resources available"}
        with open(load, "w") as f:
            f.write("10\n")
        record = lambda: show(sock, "mig-zonal").get("last_decision") or {}  # noqa: E731
        ok = wait_for(lambda: "ZONE_RESOURCE_POOL_EXHAUSTED" in
                      ((record().get("last_error") or {}).get("message") or ""), 40)
        rec = record()
        check(ok and rec["last_error"]["operation"] == "scale_out",
              "a resize operation ending in error puts it in the decision record", json.dumps(rec))
        check("last scale-out failed:" in rec.get("explanation", "") and
              "ZONE_RESOURCE_POOL_EXHAUSTED" in rec.get("explanation", ""),
              "the record's sentence names the error", rec.get("explanation"))
        check(zonal["target"] == 1, "the failed resize left the MIG at 1", zonal["target"])
        gce.op_error = None
        ok = wait_for(lambda: zonal["target"] == 2 and show(sock, "mig-zonal").get("last_error", 0) is None and
                      "last_error" in record() and record()["last_error"] is None, 60)
        check(ok, "once a resize succeeds, the error is gone from the view and the record",
              json.dumps(show(sock, "mig-zonal")))
    finally:
        rc = stop(proc)
        gce.stop()
        az.stop()
    with open(log_path) as f:
        text = f.read()
    leaked = [t for t in list(gce.tokens) + list(az.tokens) if t and t in text]
    check(not leaked and SECRET not in text and "PRIVATE KEY" not in text,
          "no token, secret or key in the daemon's log")
    check(rc == 0, "the daemon stops cleanly", rc)
    if failed():
        comment("\n".join(text.splitlines()[-40:]))
    return done()


if __name__ == "__main__":
    sys.exit(main())
