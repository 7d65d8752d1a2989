"""gce-mig driver against the GCE emulator: scaling zonal and regional groups
with both credential kinds, and the fault matrix (retries, requestId reuse,
operation errors, unstable groups, secrets kept out of the log)."""

import errno
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.environ.get("top_srcdir", "."), "tests", "helpers"))
from cloudtest import Tap, check, check_refused, private_file, probe, rsa_key, tempdir  # noqa: E402
from gce import GceEmulator  # noqa: E402

tap = Tap()
TMP = tempdir()
PEM, PUBKEY = rsa_key(TMP.name)
EMAIL = "autoscaler@test-project.iam.gserviceaccount.com"
IGM = r"/compute/v1/projects/p1/(zones|regions)/[^/]+/instanceGroupManagers/web"
SELF_URL = "https://www.googleapis.com/compute/v1/"


class Ctx:
    def __init__(self):
        self.emu = GceEmulator()
        self.emu.step_s = 0.4
        self.url = self.emu.start()
        self.emu.add_group("p1", "zones", "europe-west1-b", "web", 3)
        self.emu.add_group("p1", "regions", "europe-west1", "web", 3)
        self.emu.trust_key(PUBKEY, EMAIL, self.url + "/token")
        self.dir = TMP.name

    def options(self, regional=False, key=False, **extra):
        o = {"project": "p1", "name": "web", "compute_base": self.url + "/compute/v1",
             "retry_base": "50ms", "retry_max": "3s", "unstable_limit": "10m"}
        if regional:
            o["region"] = "europe-west1"
        else:
            o["zone"] = "europe-west1-b"
        if key:
            o["credentials"] = "key_file"
            o["key_file"] = self.key_file()
        else:
            o["metadata_host"] = self.url.split("//")[1]
        o.update(extra)
        return o

    def key_file(self, mode=0o600):
        key = {"type": "service_account", "project_id": "p1", "private_key_id": "k1", "private_key": PEM,
               "client_email": EMAIL, "client_id": "1", "token_uri": self.url + "/token"}
        return private_file(self.dir, "sa-%o.json" % mode, json.dumps(key), mode)

    def tokens(self):
        return list(self.emu.tokens)


def setup():
    return Ctx()


def teardown(ctx):
    ctx.emu.stop()


def no_secrets(ctx, res):
    for tok in ctx.tokens():
        check(tok not in res.stderr, "a token appears in the log")
    check("PRIVATE KEY" not in res.stderr and PEM.splitlines()[1] not in res.stderr, "the key appears in the log")
    check("Bearer" not in res.stderr, "an Authorization header appears in the log")


def scale_out_and_in(ctx, regional, key):
    res = probe("gce-mig", ctx.options(regional, key), ["observe", "set_capacity=5", "observe", "sleep=1000",
                                                          "observe", "remove=2", "observe"])
    check(res.returncode == 0, "probe failed", res.stderr, res.ops)
    o = res.ops
    check(o[0]["observation"]["target_size"] == 3 and len(o[0]["instances"]) == 3, "initial observation", o[0])
    check(all(i["state"] == "running" and i["ready"] for i in o[0]["instances"]), "initial instances run", o[0])
    check(len(o[1]["instances"]) == 2 and all(i["state"] == "provisioning" for i in o[1]["instances"]),
          "set_capacity reports the two new instances as provisioning", o[1])
    check(o[2]["observation"]["target_size"] == 5 and not o[2]["observation"]["stable"], "unstable after resize", o[2])
    check(o[4]["observation"]["stable"] and len(o[4]["instances"]) == 5, "stable with 5 after a while", o[4])
    resize = ctx.emu.find("POST", IGM + "/resize$")
    check(len(resize) == 1 and resize[0]["query"]["size"] == "5", "one resize to 5", resize)
    check(re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}",
                       resize[0]["query"].get("requestId", "")), "resize carries a UUID v4 requestId", resize[0])
    waits = ctx.emu.find("POST", r"/operations/[^/]+/wait$")
    check(len(waits) >= 2 * ctx.emu.op_polls, "operations followed through several waits", len(waits))
    delete = ctx.emu.find("POST", IGM + "/deleteInstances$")
    check(len(delete) == 1, "one deleteInstances", delete)
    body = delete[0]["json"]
    check(body["skipInstancesOnValidationError"] is True and len(body["instances"]) == 2, "delete body", body)
    check(all(re.fullmatch(r"zones/europe-west1-[abc]/instances/web-[0-9a-f]+", u) for u in body["instances"]),
          "partial instance URLs", body)
    newest = sorted(o[4]["instances"], key=lambda i: -i["created_ms"])[:2]
    check(sorted(u.rsplit("/", 1)[1] for u in body["instances"]) == sorted(i["id"] for i in newest),
          "the newest instances are the victims", body, newest)
    check(o[6]["observation"]["target_size"] == 3, "target 3 after delete", o[6])
    pages = ctx.emu.find("POST", IGM + "/listManagedInstances$")
    check(any("pageToken" in p["query"] for p in pages), "listManagedInstances paged", [p["query"] for p in pages])
    check(not ctx.emu.find(None, r"^/compute/.*") or all(
        r["headers"].get("authorization", "").startswith("Bearer ya29.") for r in ctx.emu.find(None, r"^/compute/")),
        "every compute call carries a token")
    if regional:
        check(any("/regions/europe-west1/operations/" in w["path"] for w in waits), "regional operations")
    if key:
        check(len(ctx.emu.find("POST", r"^/token$")) == 1, "one token exchange, then cached")
        check(not ctx.emu.find("GET", r"^/computeMetadata/"), "no metadata call with a key file")
    else:
        meta = ctx.emu.find("GET", r"^/computeMetadata/")
        check(len(meta) == 1 and meta[0]["headers"].get("metadata-flavor") == "Google", "one metadata token", meta)
    no_secrets(ctx, res)


@tap.test
def zonal_metadata(ctx):
    """zonal MIG scales out and in with metadata server credentials"""
    scale_out_and_in(ctx, False, False)


@tap.test
def regional_key(ctx):
    """regional MIG scales out and in with a service-account key (RS256 JWT verified)"""
    scale_out_and_in(ctx, True, True)


@tap.test
def zonal_key_regional_metadata(ctx):
    """zonal MIG with a key file and regional MIG with the metadata server"""
    scale_out_and_in(ctx, False, True)
    ctx.emu.clear()
    ctx.emu.add_group("p1", "regions", "europe-west1", "web", 3)
    scale_out_and_in(ctx, True, False)


@tap.test
def key_mode_refused(ctx):
    """a key file readable by group or others is refused with a clear error"""
    res = probe("gce-mig", dict(ctx.options(key=True), key_file=ctx.key_file(0o640)), ["observe"])
    check(res.ops[0]["op"] == "open" and res.ops[0]["rc"] < 0, "open fails", res.ops)
    check("accessible by group or others" in res.stderr and "chmod 600" in res.stderr, "clear error", res.stderr)
    check(not ctx.emu.requests, "no request made", ctx.emu.requests)


@tap.test
def metadata_requires_flavor(ctx):
    """the metadata emulator refuses a request without Metadata-Flavor, as the real one does"""
    check_refused(ctx.url + "/computeMetadata/v1/instance/service-accounts/default/token", 403)


@tap.test
def bad_jwt_refused(ctx):
    """a JWT signed by another key is refused and the error is clear"""
    other = os.path.join(ctx.dir, "other")
    os.makedirs(other, exist_ok=True)
    _, other_pub = rsa_key(other)
    ctx.emu.trust_key(other_pub, EMAIL, ctx.url + "/token")
    res = probe("gce-mig", ctx.options(key=True, retry_attempts="2"), ["observe"])
    check(res.ops[0]["rc"] < 0, "observe fails", res.ops)
    check("token request to the token_uri failed" in res.stderr and "invalid_grant" in res.stderr, "clear error",
          res.stderr)
    check(len(ctx.emu.find("POST", "^/token$")) == 1, "a refused grant is not retried")
    check(not ctx.emu.find(None, "^/compute/"), "no API call without a token")


@tap.test
def retry_429_reuses_request_id(ctx):
    """429 with Retry-After on resize: retried after the delay with the same requestId"""
    ctx.emu.add_fault("POST", r"/resize$", 429, times=2, headers={"Retry-After": "1"},
                      body={"error": {"code": 429, "message": "Too Many Requests", "errors": []}})
    res = probe("gce-mig", ctx.options(), ["set_capacity=4", "observe"])
    check(res.returncode == 0, "succeeds", res.stderr)
    resize = ctx.emu.find("POST", r"/resize$")
    check(len(resize) == 3, "three tries", len(resize))
    check(len({r["query"]["requestId"] for r in resize}) == 1, "the requestId is reused", [r["query"] for r in resize])
    check(resize[2]["time"] - resize[0]["time"] >= 1.9, "Retry-After honoured")
    check(res.ops[1]["observation"]["target_size"] == 4, "target 4", res.ops[1])
    check("HTTP 429" in res.stderr and "retrying in" in res.stderr, "retries logged", res.stderr)
    no_secrets(ctx, res)


@tap.test
def retry_503_and_rate_limit(ctx):
    """503 on get and 403 rateLimitExceeded on listManagedInstances are retried"""
    ctx.emu.add_fault("GET", IGM + "$", 503, body={"error": {"code": 503, "message": "Service Unavailable"}})
    ctx.emu.add_fault("POST", r"/listManagedInstances$", 403, times=2,
                      body={"error": {"code": 403, "message": "Rate Limit Exceeded", "errors": [
                          {"message": "Rate Limit Exceeded", "domain": "usageLimits", "reason": "rateLimitExceeded"}]}})
    res = probe("gce-mig", ctx.options(), ["observe"])
    check(res.returncode == 0 and len(res.ops[0]["instances"]) == 3, "observe succeeds", res.stderr, res.ops)
    check(len(ctx.emu.find("GET", IGM + "$")) == 2, "get tried twice")
    check(len(ctx.emu.find("POST", r"/listManagedInstances$")) == 4, "3 tries of page 1 + page 2")


@tap.test
def forbidden_is_final(ctx):
    """403 without rateLimitExceeded is final: one try, a clear error, no action"""
    ctx.emu.add_fault("GET", IGM + "$", 403, times=-1, body={"error": {
        "code": 403, "message": "Required 'compute.instanceGroupManagers.get' permission",
        "errors": [{"message": "Required permission", "domain": "global", "reason": "forbidden"}]}})
    res = probe("gce-mig", ctx.options(), ["set_capacity=5"])
    check(res.ops[0]["rc"] == -13, "EACCES", res.ops)
    check(len(ctx.emu.find("GET", IGM + "$")) == 1, "not retried")
    check("Required 'compute.instanceGroupManagers.get' permission" in res.stderr, "message logged", res.stderr)
    check(not ctx.emu.find("POST", r"/resize$"), "no resize")


@tap.test
def gives_up_after_attempts(ctx):
    """a persistent 503 gives up after retry_attempts with a clear error"""
    ctx.emu.add_fault("GET", IGM + "$", 503, times=-1, body={"error": {"code": 503, "message": "backend error"}})
    res = probe("gce-mig", ctx.options(retry_attempts="3"), ["observe"])
    check(res.ops[0]["rc"] < 0, "fails", res.ops)
    check(len(ctx.emu.find("GET", IGM + "$")) == 3, "exactly 3 tries")
    check("giving up after 3 tries" in res.stderr, "clear error", res.stderr)


@tap.test
def lost_delete_reply(ctx):
    """a deleteInstances whose reply is lost (503 after it took effect) is retried with the same requestId and deletes once"""
    ctx.emu.add_fault("POST", r"/deleteInstances$", 503, after=True, body={"error": {"code": 503, "message": "x"}})
    res = probe("gce-mig", ctx.options(), ["remove=1", "observe"])
    check(res.returncode == 0, "succeeds", res.stderr)
    dels = ctx.emu.find("POST", r"/deleteInstances$")
    check(len(dels) == 2 and dels[0]["query"]["requestId"] == dels[1]["query"]["requestId"], "same requestId",
          [d["query"] for d in dels])
    check(dels[0]["json"] == dels[1]["json"], "same body")
    check(res.ops[1]["observation"]["target_size"] == 2, "one instance gone, not two", res.ops[1])
    check(not ctx.emu.find("POST", r"/resize$"), "no resize")


@tap.test
def slow_reply_times_out_and_retries(ctx):
    """a reply slower than http_timeout is abandoned and retried"""
    ctx.emu.add_fault("GET", IGM + "$", None, delay_ms=2500)
    res = probe("gce-mig", ctx.options(http_timeout="1s"), ["observe"])
    check(res.returncode == 0, "succeeds", res.stderr)
    check(len(ctx.emu.find("GET", IGM + "$")) == 2, "retried once")
    check("Timeout" in res.stderr or "timed out" in res.stderr, "timeout logged", res.stderr)


@tap.test
def operation_error(ctx):
    """an operation ending in error fails set_capacity with the operation's message, without a second resize"""
    ctx.emu.op_error = {"code": "ZONE_RESOURCE_POOL_EXHAUSTED", "message": "The zone 'europe-west1-b' does not have "
                        "enough resources available to fulfill the request."}
    res = probe("gce-mig", ctx.options(), ["set_capacity=6"])
    check(res.ops[0]["rc"] == -28, "ENOSPC", res.ops)
    check("ZONE_RESOURCE_POOL_EXHAUSTED" in res.stderr and "does not have enough resources" in res.stderr,
          "the operation's error is logged", res.stderr)
    check(len(ctx.emu.find("POST", r"/resize$")) == 1, "one resize")


def post(ctx, path, body=None, token=None):
    """A POST to the emulator with a token of its own; (status, JSON body)."""
    import urllib.request
    req = urllib.request.Request(ctx.url + path, data=json.dumps(body or {}).encode(), method="POST", headers={
        "Authorization": "Bearer " + (token or ctx.emu._issue("test")), "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


ZONAL = "/compute/v1/projects/p1/zones/europe-west1-b/instanceGroupManagers/web"


@tap.test
def emulator_request_id(ctx):
    """the emulator refuses a requestId that is not a non-zero UUID, as the API does"""
    for rid in ("1234", "00000000-0000-0000-0000-000000000000", "not-a-uuid-at-all-0000-000000000000"):
        st, body = post(ctx, ZONAL + "/resize?size=4&requestId=" + rid)
        check(st == 400 and "requestId" in body["error"]["message"], "refused", rid, st, body)
    check(ctx.emu.group("p1", "zones", "europe-west1-b", "web")["target"] == 3, "no effect")
    st, _ = post(ctx, ZONAL + "/resize?size=4&requestId=6f1c3c0e-8a1d-4d8e-9c47-2f6a1b0c9d3e")
    check(st == 200, "a UUID is taken", st)


@tap.test
def emulator_delete_validation(ctx):
    """deleteInstances fails as a whole for a malformed or wrong-zone URL, even with skipInstancesOnValidationError"""
    g = ctx.emu.group("p1", "zones", "europe-west1-b", "web")
    good = "zones/europe-west1-b/instances/" + g["instances"][0]["name"]
    rid = "/deleteInstances?requestId=%s"
    for n, bad in enumerate(("zones/europe-west1-b/instance/x", "zones/us-east1-b/instances/" + g["instances"][1]["name"],
                             "projects/other/zones/europe-west1-b/instances/" + g["instances"][1]["name"])):
        st, body = post(ctx, ZONAL + rid % ("6f1c3c0e-8a1d-4d8e-9c47-2f6a1b0c9d3%d" % n),
                        {"instances": [good, bad], "skipInstancesOnValidationError": True})
        check(st == 400, "refused", bad, st, body)
    check(g["target"] == 3 and all(i["deleting"] is None for i in g["instances"]), "nothing deleted")
    st, body = post(ctx, ZONAL + rid % "6f1c3c0e-8a1d-4d8e-9c47-2f6a1b0c9d3f",
                    {"instances": [good, "zones/europe-west1-b/instances/gone-1"], "skipInstancesOnValidationError": True})
    check(st == 200 and g["target"] == 2, "a non-member is skipped, the member deleted", st, body, g["target"])


@tap.test
def emulator_scopes(ctx):
    """a token without a compute scope is refused by the compute API (403), as the API does"""
    tok = ctx.emu._issue("test", ["https://www.googleapis.com/auth/monitoring.read"])
    st, body = post(ctx, ZONAL + "/listManagedInstances", token=tok)
    check(st == 403 and body["error"]["errors"][0]["reason"] == "ACCESS_TOKEN_SCOPE_INSUFFICIENT", "refused", st, body)
    res = probe("gce-mig", ctx.options(scopes="https://www.googleapis.com/auth/monitoring.read"), ["observe"])
    check(res.ops[0]["rc"] < 0 and "insufficient authentication scopes" in res.stderr, "the driver shows it",
          res.ops, res.stderr)


@tap.test
def operation_wait_times_out(ctx):
    """an operation that stays RUNNING through delayed waits ends in ETIMEDOUT at operation_timeout"""
    ctx.emu.op_stuck = True
    ctx.emu.wait_s = 0.7
    res = probe("gce-mig", ctx.options(operation_timeout="1s"), ["set_capacity=5"])
    check(res.ops[0]["rc"] == -110, "ETIMEDOUT", res.ops, res.stderr)
    check("not done after 1 s" in res.stderr, "clear error", res.stderr)
    waits = ctx.emu.find("POST", r"/operations/[^/]+/wait$")
    check(1 <= len(waits) <= 3 and res.elapsed < 10, "a few held waits, bounded", len(waits), res.elapsed)
    check(len(ctx.emu.find("POST", r"/resize$")) == 1, "one resize")


@tap.test
def unstable_group_waits_then_acts(ctx):
    """instances stuck in PROVISIONING: no new action until unstable_limit, then one, logged"""
    ctx.emu.stuck_provisioning = True
    res = probe("gce-mig", ctx.options(unstable_limit="1500ms"),
                ["set_capacity=5", "observe", "set_capacity=6", "remove=1", "sleep=1600", "set_capacity=6"])
    o = res.ops
    check(o[0]["rc"] == 0 and not o[1]["observation"]["stable"], "resized and unstable", o[:2])
    check(o[2]["rc"] == -16 and o[3]["rc"] == -16, "further actions refused while unstable", o[2:4])
    check("not stable" in res.stderr and "creating 2" in res.stderr, "the reason is logged", res.stderr)
    check(o[5]["rc"] == 0 and "beyond unstable_limit" in res.stderr, "acts after the limit and says so", res.stderr)
    sizes = [r["query"]["size"] for r in ctx.emu.find("POST", r"/resize$")]
    check(sizes == ["5", "6"], "exactly two resizes", sizes)
    check(not ctx.emu.find("POST", r"/deleteInstances$"), "no delete")


@tap.test
def set_capacity_down_refused(ctx):
    """set_capacity below the target is refused (it only grows) and changes nothing; remove deletes one victim"""
    res = probe("gce-mig", ctx.options(victim_policy="oldest"),
                ["observe", "set_capacity=2", "observe", "remove=1", "observe"])
    check(res.ops[1]["rc"] == -errno.ERANGE, "refused with ERANGE", res.ops[1])
    check("set_capacity to 2 refused" in res.stderr and "only grows" in res.stderr, "the log says why",
          res.stderr[-2000:])
    check(res.ops[2]["observation"]["target_size"] == 3, "still 3", res.ops[2])
    check(not ctx.emu.find("POST", r"/resize"), "no resize")
    dels = ctx.emu.find("POST", r"/deleteInstances$")
    check(len(dels) == 1 and len(dels[0]["json"]["instances"]) == 1, "only the remove deleted: one victim", dels)
    check(res.ops[4]["observation"]["target_size"] == 2, "target 2 after the remove", res.ops[4])


@tap.test
def changed_since_observed(ctx):
    """the group grows between the observation and the action (another agent, an operator): neither the resize nor
    the deleteInstances the decision asked for is sent (ESTALE); the next observation starts afresh"""
    g = ctx.emu.group("p1", "zones", "europe-west1-b", "web")

    def other_agent(reply):
        ctx.emu._grow(g, 2, created=1)  # long running: the group is stable
        return reply
    ctx.emu.add_fault("GET", IGM + "$", mutate=other_agent)
    res = probe("gce-mig", ctx.options(), ["observe", "set_capacity=6", "remove=1", "observe", "set_capacity=6"])
    check(res.ops[0]["observation"]["target_size"] == 3, "observed 3", res.ops[0])
    check(res.ops[1]["rc"] == -errno.ESTALE and res.ops[2]["rc"] == -errno.ESTALE, "both refused", res.ops[1:3])
    check("went from 3 to 5 instances since it was observed: the resize not made" in res.stderr, "the log says why",
          res.stderr[-2000:])
    resizes = ctx.emu.find("POST", r"/resize")
    check(len(resizes) == 1 and "size=6" in resizes[0]["rawquery"], "only the resize after a fresh observation",
          resizes)
    check(not ctx.emu.find("POST", r"/deleteInstances$"), "no delete")


@tap.test
def remove_named_ids(ctx):
    """remove_instances with ids deletes exactly those and skips unknown ones with a warning"""
    res = probe("gce-mig", ctx.options(), ["observe"])
    victim = res.ops[0]["instances"][1]["id"]
    res = probe("gce-mig", ctx.options(), ["remove_ids=%s,nosuch" % victim])
    check(res.ops[0]["rc"] == 0 and [i["id"] for i in res.ops[0]["instances"]] == [victim], "one reported", res.ops)
    check("'nosuch' is not a live instance" in res.stderr, "unknown id logged", res.stderr)
    body = ctx.emu.find("POST", r"/deleteInstances$")[0]["json"]
    check([u.rsplit("/", 1)[1] for u in body["instances"]] == [victim], "exactly the named one", body)


@tap.test
def skipped_victim_not_reported(ctx):
    """a victim deleteInstances skips (skipInstancesOnValidationError) is not reported as stopping"""
    g = ctx.emu.group("p1", "zones", "europe-west1-b", "web")
    ghost = "web-ghost"

    def with_ghost(reply):
        # A member the list shows but the group no longer has (abandoned
        # meanwhile): deleteInstances skips it.
        rows = reply.body.setdefault("managedInstances", [])
        if reply.status == 200 and not reply.body.get("nextPageToken"):
            rows.append({"instance": SELF_URL + "projects/p1/zones/europe-west1-b/instances/" + ghost, "name": ghost,
                         "id": "42", "instanceStatus": "RUNNING", "currentAction": "NONE"})
        return reply
    ctx.emu.add_fault("POST", "/zones/europe-west1-b/instanceGroupManagers/web/listManagedInstances$", times=-1,
                      mutate=with_ghost)
    real = g["instances"][0]["name"]
    res = probe("gce-mig", ctx.options(), ["remove_ids=%s,%s" % (ghost, real)])
    check(res.ops[0]["rc"] == 0, "succeeds", res.ops, res.stderr)
    check([i["id"] for i in res.ops[0]["instances"]] == [real], "only the deleted one reported", res.ops)
    check("'%s' of 'web' was not deleted" % ghost in res.stderr, "the skip logged", res.stderr)
    body = ctx.emu.find("POST", r"/deleteInstances$")[0]["json"]
    check(len(body["instances"]) == 2 and g["target"] == 2, "both asked, one deleted", body, g["target"])


@tap.test
def metadata_bypasses_proxy(ctx):
    """the metadata server's token is fetched directly even with http_proxy set to a dead proxy"""
    # Compute is reached as localhost (excluded by no_proxy), the metadata
    # server as 127.0.0.1: only the driver can keep the proxy from it.
    env = {"http_proxy": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9", "HTTPS_PROXY":
           "http://127.0.0.1:9", "no_proxy": "localhost", "NO_PROXY": "localhost"}
    res = probe("gce-mig", ctx.options(compute_base=ctx.url.replace("127.0.0.1", "localhost") + "/compute/v1"),
                ["observe"], env=env)
    check(res.returncode == 0 and len(res.ops[0]["instances"]) == 3, "observed", res.ops, res.stderr)
    check(len(ctx.emu.find("GET", r"^/computeMetadata/")) == 1, "the metadata server reached directly")


@tap.test
def own_autoscaler_refused(ctx):
    """a group with its own autoscaler (status.autoscaler) is observed but never resized nor shrunk"""
    ctx.emu.add_group("p1", "zones", "europe-west1-c", "auto", 2, autoscaler="auto-as")
    res = probe("gce-mig", ctx.options(zone="europe-west1-c", name="auto"), ["observe", "set_capacity=4", "remove=1"])
    check(res.ops[0]["rc"] == 0 and res.ops[0]["observation"]["target_size"] == 2, "observed", res.ops, res.stderr)
    check(res.ops[1]["rc"] == -16 and res.ops[2]["rc"] == -16, "EBUSY for both actions", res.ops)
    check("driven by its own autoscaler" in res.stderr and "autoscalers/auto-as" in res.stderr, "the reason logged",
          res.stderr)
    check(not ctx.emu.find("POST", r"/(resize|deleteInstances)$"), "no action sent")
    # The operator may let the cloud's autoscaler keep a floor: then both
    # act, with one warning for the handle, not one per action. New
    # instances run at once, so the resized group is stable for the delete.
    ctx.emu.step_s = 0
    res = probe("gce-mig", ctx.options(zone="europe-west1-c", name="auto", coexist_with_cloud_autoscaler="true"),
                ["set_capacity=4", "observe", "remove=1"])
    check(res.ops[0]["rc"] == 0 and res.ops[1]["observation"]["target_size"] == 4, "resized", res.ops, res.stderr)
    check(res.ops[2]["rc"] == 0, "shrunk", res.ops, res.stderr)
    check(len(ctx.emu.find("POST", r"/auto/resize$")) == 1, "exactly one resize",
          [r["path"] for r in ctx.emu.requests])
    check(len(ctx.emu.find("POST", r"/auto/deleteInstances$")) == 1, "exactly one deleteInstances")
    check(res.stderr.count("coexist_with_cloud_autoscaler = true)") == 1, "warned once", res.stderr)
    res = probe("gce-mig", ctx.options(zone="europe-west1-c", name="auto", coexist_with_cloud_autoscaler="yes"),
                ["check"])
    check(res.ops[0]["rc"] == -22 and "coexist_with_cloud_autoscaler = 'yes' must be true or false" in res.stderr,
          "a value that is not a boolean refused", res.ops, res.stderr)


@tap.test
def token_refreshed(ctx):
    """a token close to expiry is refreshed before use"""
    ctx.emu.token_lifetime = 2
    res = probe("gce-mig", ctx.options(), ["observe", "sleep=1700", "observe"])
    check(res.returncode == 0, "succeeds", res.stderr)
    check(len(ctx.emu.find("GET", r"^/computeMetadata/")) == 2, "two tokens fetched")
    check(all(r["status"] != 401 for r in ctx.emu.requests), "never sent an expired token")
    no_secrets(ctx, res)


@tap.test
def pageless_group(ctx):
    """a PAGELESS group is listed in one call"""
    ctx.emu.add_group("p1", "zones", "europe-west1-b", "web", 4, paginated=False)
    res = probe("gce-mig", ctx.options(), ["observe"])
    check(len(res.ops[0]["instances"]) == 4, "4 instances", res.ops)
    check(len(ctx.emu.find("POST", r"/listManagedInstances$")) == 1, "one call")


@tap.test
def missing_group(ctx):
    """a group that does not exist gives ENOENT and says so"""
    res = probe("gce-mig", dict(ctx.options(), name="nosuch"), ["observe"])
    check(res.ops[0]["rc"] == -2 and "'nosuch'" in res.stderr and "was not found" in res.stderr, "ENOENT",
          res.ops, res.stderr)


@tap.test
def retry_after_http_date(ctx):
    """Retry-After given as an HTTP date is honoured"""
    from email.utils import formatdate
    ctx.emu.add_fault("GET", IGM + "$", 503, headers={"Retry-After": formatdate(time.time() + 2, usegmt=True)},
                      body={"error": {"code": 503, "message": "backend error"}})
    res = probe("gce-mig", ctx.options(), ["observe"])
    check(res.returncode == 0, "succeeds", res.stderr)
    gets = ctx.emu.find("GET", IGM + "$")
    check(len(gets) == 2 and gets[1]["time"] - gets[0]["time"] >= 0.9, "waited for the date",
          [g["time"] for g in gets])


@tap.test
def check_options(ctx):
    """check() validates options and the key file without any request"""
    res = probe("gce-mig", ctx.options(key=True), ["check"])
    check(res.ops == [{"op": "check", "rc": 0}], "valid", res.ops, res.stderr)
    res = probe("gce-mig", dict(ctx.options(key=True), key_file=ctx.key_file(0o604)), ["check"])
    check(res.ops[0]["rc"] == -1 and "chmod 600" in res.stderr, "key mode refused", res.ops, res.stderr)
    res = probe("gce-mig", dict(ctx.options(), region="europe-west1"), ["check"])
    check(res.ops[0]["rc"] == -22 and "one of zone or region" in res.stderr, "zone and region refused", res.stderr)
    res = probe("gce-mig", dict(ctx.options(), victim_policy="random", colour="blue"), ["check"])
    check("victim_policy = 'random'" in res.stderr or "unknown option 'colour'" in res.stderr, "bad options named",
          res.stderr)
    check(not ctx.emu.requests, "no request")


@tap.test
def metadata_host_from_environment(ctx):
    """GCE_METADATA_HOST is honoured when metadata_host is not set"""
    opts = ctx.options()
    host = opts.pop("metadata_host")
    res = probe("gce-mig", opts, ["observe"], env={"GCE_METADATA_HOST": host})
    check(res.returncode == 0 and len(ctx.emu.find("GET", "^/computeMetadata/")) == 1, "token from the emulator",
          res.stderr)


sys.exit(tap.run(setup, teardown))
