"""azure-vmss driver against the Azure emulator: scaling Uniform and Flexible
scale sets with both credential kinds, both long-running operation styles,
and the fault matrix (throttling, 409, 5xx, etag conflicts, failed and
stuck operations, secrets kept out of the log)."""

import errno
import os
import sys

sys.path.insert(0, os.path.join(os.environ.get("top_srcdir", "."), "tests", "helpers"))
from cloudtest import Tap, check, check_refused, private_file, probe, tempdir  # noqa: E402
from azure import AzureEmulator  # noqa: E402

tap = Tap()
TMP = tempdir()
SECRET = "Zq8~s3cr3t.value_" + os.urandom(6).hex()
VMSS = r"/subscriptions/sub1/resourceGroups/rg1/providers/Microsoft\.Compute/virtualMachineScaleSets/%s"
RG_VMS = r"^/subscriptions/sub1/resourceGroups/rg1/providers/Microsoft\.Compute/virtualMachines$"


class Ctx:
    def __init__(self):
        self.emu = AzureEmulator()
        self.emu.step_s = 1.0
        self.url = self.emu.start()
        self.emu.add_set("sub1", "rg1", "web", 3, "Uniform")
        self.emu.add_set("sub1", "rg1", "flex", 3, "Flexible")
        # Another Flexible set in the same resource group: its VMs are in the
        # same VM list, and only the filter keeps them out.
        self.emu.add_set("sub1", "rg1", "flex2", 2, "Flexible")
        self.emu.secrets[("tenant1", "app1")] = SECRET

    def options(self, name="web", secret=False, **extra):
        o = {"subscription": "sub1", "resource_group": "rg1", "name": name, "arm_base": self.url,
             "retry_base": "50ms", "retry_max": "3s", "poll_interval": "100ms"}
        if secret:
            o.update(credentials="client_secret", tenant="tenant1", client_id="app1", login_host=self.url,
                     secret_file=self.secret_file())
        else:
            o.update(credentials="managed_identity", imds_base=self.url)
        o.update(extra)
        return o

    def secret_file(self, mode=0o600, value=None):
        return private_file(TMP.name, "secret-%o" % mode, (value or SECRET) + "\n", mode)


def setup():
    return Ctx()


def teardown(ctx):
    ctx.emu.stop()


def no_secrets(ctx, res):
    check(SECRET not in res.stderr, "the client secret appears in the log")
    for tok in ctx.emu.tokens:
        check(tok not in res.stderr, "a token appears in the log")
    check("Bearer" not in res.stderr, "an Authorization header appears in the log")


def scale_out_and_in(ctx, name, secret):
    path = VMSS % name
    res = probe("azure-vmss", ctx.options(name, secret), ["observe", "set_capacity=5", "observe", "sleep=1300",
                                                          "observe", "remove=2", "observe"])
    check(res.returncode == 0, "probe failed", res.stderr, res.ops)
    o = res.ops
    check(o[0]["observation"] == {"target_size": 3, "stable": True, "partial": False}, "initial", o[0])
    check(len(o[1]["instances"]) == 2 and all(i["state"] == "provisioning" for i in o[1]["instances"]),
          "two new VMs reported as provisioning", o[1])
    check(o[2]["observation"]["target_size"] == 5 and not o[2]["observation"]["stable"], "unstable at first", o[2])
    check(o[4]["observation"]["stable"] and all(i["ready"] for i in o[4]["instances"]), "ready after a while", o[4])
    patches = ctx.emu.find("PATCH", path + "$")
    check(len(patches) == 1 and patches[0]["json"] == {"sku": {"capacity": 5}}, "one PATCH of sku.capacity", patches)
    check(patches[0]["headers"].get("if-match", "").startswith('"'), "If-Match carries the etag", patches[0]["headers"])
    polls = ctx.emu.find("GET", r"/operations/")
    check(len(polls) >= ctx.emu.op_polls, "Azure-AsyncOperation polled until done", len(polls))
    dels = ctx.emu.find("POST", path + "/delete$")
    check(len(dels) == 1 and len(dels[0]["json"]["instanceIds"]) == 2, "one /delete of two", dels)
    newest = sorted(o[4]["instances"], key=lambda i: -i["created_ms"])[:2]
    check(sorted(dels[0]["json"]["instanceIds"]) == sorted(i["id"] for i in newest), "newest are the victims",
          dels[0]["json"], newest)
    loc = ctx.emu.find("GET", r"/operationResults/")
    check(len(loc) >= ctx.emu.op_polls and len({r["rawquery"] for r in loc}) > 1,
          "Location polled, following a new Location", [r["rawquery"] for r in loc])
    check(o[6]["observation"]["target_size"] == 3, "capacity 3 after delete", o[6])
    if name == "flex":
        check(not ctx.emu.find("GET", path + "/virtualMachines$"), "the Uniform-only list is not used on Flexible")
        lists = ctx.emu.find("GET", RG_VMS)
        want = "'virtualMachineScaleSet/id' eq '%s'" % (VMSS % name).replace("\\", "")
        check(lists and all(r["query"].get("$filter") == want for r in lists), "the VM list filtered on the set",
              [r["query"] for r in lists])
        check(all(r["status"] < 400 for r in ctx.emu.requests), "no request refused",
              [(r["path"], r["status"]) for r in ctx.emu.requests if r["status"] >= 400])
        check(all(i["id"].startswith("flex_") for i in o[0]["instances"] + o[4]["instances"]),
              "only the set's own VMs", o[0], o[4])
    else:
        lists = ctx.emu.find("GET", path + "/virtualMachines$")
    check(any("$skiptoken" in r["query"] for r in lists), "nextLink followed")
    check(all(r["query"].get("$expand") == "instanceView" for r in lists), "instance views asked for")
    check(all("api-version" in r["query"] for r in ctx.emu.find(None, "^/subscriptions/")), "api-version on every call")
    if secret:
        tok = ctx.emu.find("POST", r"^/tenant1/oauth2/v2\.0/token$")
        check(len(tok) == 1, "one client-credentials token, then cached", len(tok))
        check("scope=" in tok[0]["body"] and "%2F.default" in tok[0]["body"], "scope sent", tok[0]["body"])
    else:
        tok = ctx.emu.find("GET", r"^/metadata/identity/oauth2/token$")
        check(len(tok) == 1 and tok[0]["headers"].get("metadata") == "true", "one IMDS token with Metadata: true")
    check("ratelimit remaining reads" in res.stderr, "throttling budgets logged at debug")
    no_secrets(ctx, res)
    if name == "flex":
        check(all(i["id"].startswith("flex_") for i in o[4]["instances"]), "Flexible VMs named", o[4])


@tap.test
def uniform_secret(ctx):
    """Uniform scale set scales out and in with client credentials"""
    scale_out_and_in(ctx, "web", True)


@tap.test
def flexible_identity(ctx):
    """Flexible scale set scales out and in with a managed identity (IMDS)"""
    scale_out_and_in(ctx, "flex", False)


@tap.test
def uniform_identity_flexible_secret(ctx):
    """Uniform with a managed identity and Flexible with client credentials"""
    scale_out_and_in(ctx, "web", False)
    ctx.emu.clear()
    scale_out_and_in(ctx, "flex", True)


@tap.test
def flexible_expand_refused(ctx):
    """the emulator refuses the instance-view list on a Flexible set with Azure's 400, as the real API does"""
    import json
    import urllib.request
    tok = ctx.emu._issue("test")
    url = ctx.url + (VMSS % "flex").replace("\\", "") + "/virtualMachines?api-version=2024-07-01&$expand=instanceView"
    try:
        urllib.request.urlopen(urllib.request.Request(url, headers={"Authorization": "Bearer " + tok}))
        check(False, "accepted")
    except urllib.error.HTTPError as e:
        body = json.loads(e.read())
        check(e.code == 400 and body["error"]["code"] == "OperationNotAllowed" and
              "VirtualMachineScaleSets.virtualMachines.GET' is not allowed" in body["error"]["message"],
              "the real error", e.code, body)


@tap.test
def unzoned_set(ctx):
    """a set that is not zonal (no zones in its replies) is observed; its VMs are placed by location"""
    ctx.emu.add_set("sub1", "rg1", "plain", 2, "Flexible", zonal=False)
    res = probe("azure-vmss", ctx.options("plain"), ["observe"])
    check(res.returncode == 0 and [i["location"] for i in res.ops[0]["instances"]] == ["westeurope"] * 2,
          "observed", res.ops, res.stderr)


@tap.test
def emulator_audience(ctx):
    """tokens are checked for their audience: another resource's scope or token is refused, as Azure does"""
    import urllib.parse
    import urllib.request
    form = urllib.parse.urlencode({"grant_type": "client_credentials", "client_id": "app1", "client_secret": SECRET,
                                   "scope": "https://storage.azure.com/.default"}).encode()
    try:
        urllib.request.urlopen(ctx.url + "/tenant1/oauth2/v2.0/token", data=form, timeout=5)
        check(False, "accepted")
    except urllib.error.HTTPError as e:
        check(e.code == 400 and b"invalid_scope" in e.read(), "scope refused", e.code)
    tok = ctx.emu._issue("test", "https://storage.azure.com/")
    url = ctx.url + (VMSS % "web").replace("\\", "") + "?api-version=2024-07-01"
    try:
        urllib.request.urlopen(urllib.request.Request(url, headers={"Authorization": "Bearer " + tok}), timeout=5)
        check(False, "accepted")
    except urllib.error.HTTPError as e:
        check(e.code == 401 and b"wrong audience" in e.read(), "audience refused", e.code)


@tap.test
def flexible_foreign_vm_refused(ctx):
    """a Flexible VM list carrying another set's VM (a filter ignored) is an error: nothing is deleted"""
    def spoof(reply):
        for vm in (reply.body or {}).get("value", []):
            vm["properties"]["virtualMachineScaleSet"]["id"] = (VMSS % "flex2").replace("\\", "")
        return reply
    ctx.emu.add_fault("GET", RG_VMS[1:], times=-1, mutate=spoof)
    res = probe("azure-vmss", ctx.options("flex"), ["remove=1"])
    check(res.ops[0]["rc"] == -74, "EBADMSG", res.ops)
    check("virtualMachineScaleSet.id" in res.stderr, "the field is named", res.stderr)
    check(not ctx.emu.find("POST", "/delete$"), "no delete")


@tap.test
def other_lro_styles(ctx):
    """PATCH answered with 202 + Location and /delete with Azure-AsyncOperation are followed too"""
    ctx.emu.patch_style, ctx.emu.delete_style = "location", "async"
    res = probe("azure-vmss", ctx.options(), ["set_capacity=4", "remove=1", "observe"])
    check(res.returncode == 0 and res.ops[2]["observation"]["target_size"] == 3, "works", res.stderr, res.ops)
    check(len(ctx.emu.find("GET", r"/operationResults/")) >= ctx.emu.op_polls, "Location polled")
    check(len(ctx.emu.find("GET", r"/operations/")) >= ctx.emu.op_polls, "Azure-AsyncOperation polled")


@tap.test
def secret_mode_refused(ctx):
    """a secret file readable by group or others is refused with a clear error"""
    res = probe("azure-vmss", dict(ctx.options(secret=True), secret_file=ctx.secret_file(0o644)), ["observe"])
    check(res.ops[0]["op"] == "open" and res.ops[0]["rc"] < 0, "open fails", res.ops)
    check("accessible by group or others" in res.stderr, "clear error", res.stderr)
    check(not ctx.emu.requests, "no request")


@tap.test
def secret_fifo_refused(ctx):
    """a FIFO as the secret file is refused at once, not waited on"""
    fifo = os.path.join(TMP.name, "secret-fifo")
    os.mkfifo(fifo, 0o600)
    for ops in (["check"], ["observe"]):
        res = probe("azure-vmss", dict(ctx.options(secret=True), secret_file=fifo), ops, timeout=10)
        check(res.ops and res.ops[0]["rc"] < 0, "refused", ops, res.ops)
        check("is not a regular file" in res.stderr, "clear error", res.stderr)
    check(not ctx.emu.requests, "no request")


@tap.test
def wrong_secret(ctx):
    """a wrong client secret is a final, clear error and no ARM call is made"""
    res = probe("azure-vmss", dict(ctx.options(secret=True), secret_file=ctx.secret_file(0o600, "wrong")),
                ["set_capacity=5"])
    check(res.ops[0]["rc"] == -13, "EACCES", res.ops)
    check("AADSTS7000215" in res.stderr, "the login error is shown", res.stderr)
    check(len(ctx.emu.find("POST", "/oauth2/")) == 1, "not retried")
    check(not ctx.emu.find(None, "^/subscriptions/"), "no ARM call")
    check("wrong" not in res.stderr.replace("wrong-direction", ""), "the secret is not logged")


@tap.test
def imds_requires_metadata_header(ctx):
    """the IMDS emulator refuses a request without Metadata: true, as the real one does"""
    check_refused(ctx.url + "/metadata/identity/oauth2/token?api-version=2018-02-01&resource=x", 400)


@tap.test
def throttled_429(ctx):
    """429 with Retry-After and ratelimit headers: retried after the delay; the budgets are logged"""
    ctx.emu.add_fault("GET", VMSS % "web" + "$", 429, times=1, headers={
        "Retry-After": "1", "x-ms-ratelimit-remaining-subscription-reads": "0",
        "x-ms-ratelimit-remaining-resource": "Microsoft.Compute/GetVMScaleSet3Min;0"},
        body={"error": {"code": "TooManyRequests", "message": "The request is being throttled."}})
    res = probe("azure-vmss", ctx.options(), ["observe"])
    check(res.returncode == 0, "succeeds", res.stderr)
    gets = ctx.emu.find("GET", VMSS % "web" + "$")
    check(len(gets) == 2 and gets[1]["time"] - gets[0]["time"] >= 0.95, "retried once after Retry-After")
    check("GetVMScaleSet3Min;0" in res.stderr and "TooManyRequests" in res.stderr, "throttling visible", res.stderr)


@tap.test
def throttled_for_minutes(ctx):
    """a 429 whose Retry-After (minutes) is beyond retry_max is honoured: EAGAIN "throttled until", no early retry"""
    ctx.emu.throttle(300)
    res = probe("azure-vmss", ctx.options(), ["observe", "set_capacity=5", "remove=1"])
    check(all(op["rc"] == -11 for op in res.ops), "EAGAIN for every call", res.ops, res.stderr)
    check("throttled until" in res.stderr and "Retry-After 30" in res.stderr, "the log says until when", res.stderr)
    arm = ctx.emu.find(None, "^/subscriptions/")
    check(len(arm) == 1 and arm[0]["status"] == 429, "one request: none before the time the server named",
          [(r["method"], r["path"], r["status"]) for r in arm])
    check(res.elapsed < 20, "the call did not sit out the minutes", res.elapsed)


DEAD_PROXY = {"http_proxy": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9", "HTTPS_PROXY":
              "http://127.0.0.1:9", "no_proxy": "localhost", "NO_PROXY": "localhost"}


@tap.test
def imds_bypasses_proxy(ctx):
    """the IMDS token is fetched directly even with http_proxy set to a dead proxy"""
    # ARM is reached as localhost (excluded by no_proxy), IMDS as 127.0.0.1:
    # only the driver can keep the proxy from IMDS.
    arm = ctx.url.replace("127.0.0.1", "localhost")
    ctx.emu.audiences.add(arm)
    ctx.emu.page_cap = 10
    res = probe("azure-vmss", ctx.options(arm_base=arm), ["observe"], env=DEAD_PROXY)
    check(res.returncode == 0 and len(res.ops[0]["instances"]) == 3, "observed", res.ops, res.stderr)
    check(len(ctx.emu.find("GET", "^/metadata/identity/oauth2/token$")) == 1, "IMDS reached directly")


@tap.test
def imds_resource_follows_arm_base(ctx):
    """the managed identity's token is asked for the configured ARM endpoint (a sovereign cloud's), not the public one"""
    ctx.emu.audiences = {ctx.url}
    res = probe("azure-vmss", ctx.options(), ["observe"])
    check(res.returncode == 0, "observed", res.ops, res.stderr)
    tok = ctx.emu.find("GET", "^/metadata/identity/oauth2/token$")
    check(tok and tok[0]["query"]["resource"] == ctx.url + "/", "resource = arm_base/", [t["query"] for t in tok])


@tap.test
def own_autoscale_refused(ctx):
    """an enabled Azure autoscale setting on the set: observed, never resized nor shrunk; a disabled one is ignored"""
    ctx.emu.add_autoscale("sub1", "rg2", "other-rg-setting", ("sub1", "rg1", "flex"), enabled=False)
    ctx.emu.add_autoscale("sub1", "rg2", "web-autoscale", ("sub1", "rg1", "web"))
    res = probe("azure-vmss", ctx.options(), ["observe", "set_capacity=5", "remove=1"])
    check(res.ops[0]["rc"] == 0, "observed", res.ops, res.stderr)
    check(res.ops[1]["rc"] == -16 and res.ops[2]["rc"] == -16, "EBUSY for both actions", res.ops)
    check("autoscale setting 'web-autoscale' is enabled" in res.stderr, "the reason logged", res.stderr)
    check(not ctx.emu.find("PATCH") and not ctx.emu.find("POST", "/delete$"), "no action sent")
    res = probe("azure-vmss", ctx.options("flex"), ["set_capacity=4"])
    check(res.ops[0]["rc"] == 0, "a disabled setting does not hold the set", res.ops, res.stderr)
    # The operator may let the setting keep a floor: then both act, with
    # one warning for the handle, not one per action.
    res = probe("azure-vmss", dict(ctx.options(), coexist_with_cloud_autoscaler="true"),
                ["set_capacity=5", "remove=1"])
    check(res.ops[0]["rc"] == 0 and res.ops[1]["rc"] == 0, "resized and shrunk", res.ops, res.stderr)
    check(len(ctx.emu.find("PATCH", VMSS % "web" + "$")) == 1, "exactly one PATCH")
    check(len(ctx.emu.find("POST", "/delete$")) == 1, "exactly one delete")
    check(res.stderr.count("coexist_with_cloud_autoscaler = true)") == 1, "warned once", res.stderr)
    res = probe("azure-vmss", dict(ctx.options(), coexist_with_cloud_autoscaler="1"), ["check"])
    check(res.ops[0]["rc"] == -22 and "coexist_with_cloud_autoscaler = '1' must be true or false" in res.stderr,
          "a value that is not a boolean refused", res.ops, res.stderr)


@tap.test
def conflict_409_waits(ctx):
    """409 (another operation in progress) on PATCH waits and retries; one capacity change"""
    ctx.emu.add_fault("PATCH", VMSS % "web" + "$", 409, times=2, body={"error": {
        "code": "OperationNotAllowed", "message": "Operation 'Update' is not allowed since another operation is "
        "in progress."}})
    res = probe("azure-vmss", ctx.options(), ["set_capacity=4", "observe"])
    check(res.returncode == 0 and res.ops[1]["observation"]["target_size"] == 4, "succeeds", res.stderr, res.ops)
    check(len(ctx.emu.find("PATCH", VMSS % "web" + "$")) == 3, "three PATCH tries")
    check(len(ctx.emu.sets[("sub1", "rg1", "web")]["vms"]) == 4, "one VM added, not more")


@tap.test
def server_errors_retried(ctx):
    """408, 500, 502, 503 and 504 are retried"""
    for code in (408, 500, 502, 503, 504):
        ctx.emu.add_fault("GET", VMSS % "web" + "/virtualMachines$", code,
                          body={"error": {"code": "InternalServerError", "message": "boom %d" % code}})
    res = probe("azure-vmss", ctx.options(retry_attempts="6"), ["observe"])
    check(res.returncode == 0 and len(res.ops[0]["instances"]) == 3, "succeeds", res.stderr)
    check(len(ctx.emu.find("GET", VMSS % "web" + "/virtualMachines$")) == 7, "5 retries then 2 pages")


@tap.test
def bad_request_final(ctx):
    """a 400 on PATCH is final: one try, the ARM error message, no other action"""
    ctx.emu.add_fault("PATCH", VMSS % "web" + "$", 400, times=-1, body={"error": {
        "code": "OperationNotAllowed", "message": "Operation results in exceeding quota limits of Core."}})
    res = probe("azure-vmss", ctx.options(), ["set_capacity=40"])
    check(res.ops[0]["rc"] == -22, "EINVAL", res.ops)
    check("exceeding quota limits of Core" in res.stderr, "message shown", res.stderr)
    check(len(ctx.emu.find("PATCH")) == 1 and not ctx.emu.find("POST", "/delete$"), "one PATCH, no delete")


@tap.test
def etag_conflict(ctx):
    """412 on PATCH: the scale set is read again and the PATCH retried with the new etag, once"""
    ctx.emu.add_fault("PATCH", VMSS % "web" + "$", 412, body={"error": {
        "code": "PreconditionFailed", "message": "The ETag does not match."}})
    ctx.emu.sets[("sub1", "rg1", "web")]["etag"] += 0
    res = probe("azure-vmss", ctx.options(), ["set_capacity=4", "observe"])
    check(res.returncode == 0 and res.ops[1]["observation"]["target_size"] == 4, "succeeds", res.stderr)
    patches = ctx.emu.find("PATCH")
    check(len(patches) == 2, "two PATCHes", len(patches))
    gets = ctx.emu.find("GET", VMSS % "web" + "$")
    check(patches[0]["time"] < gets[1]["time"] < patches[1]["time"], "a fresh read between them")
    check("changed since it was read" in res.stderr, "logged", res.stderr)


@tap.test
def changed_since_observed(ctx):
    """the set grows between the observation and the action (another agent, an operator): neither the PATCH nor the
    delete the decision asked for is sent (ESTALE); the next observation starts afresh"""
    s = ctx.emu.sets[("sub1", "rg1", "web")]

    def other_agent(reply):
        ctx.emu._grow(s, 2)
        return reply
    ctx.emu.add_fault("GET", VMSS % "web" + "$", mutate=other_agent)
    res = probe("azure-vmss", ctx.options(), ["observe", "set_capacity=6", "remove=1", "observe", "set_capacity=6"])
    check(res.ops[0]["observation"]["target_size"] == 3, "observed 3", res.ops[0])
    check(res.ops[1]["rc"] == -errno.ESTALE and res.ops[2]["rc"] == -errno.ESTALE, "both refused", res.ops[1:3])
    check("went from 3 to 5 instances since it was observed: the capacity update not made" in res.stderr,
          "the log says why", res.stderr[-2000:])
    patches = ctx.emu.find("PATCH")
    check(len(patches) == 1 and patches[0]["json"]["sku"]["capacity"] == 6, "only the PATCH after a fresh observation",
          patches)
    check(not ctx.emu.find("POST", "/delete$"), "no delete")


@tap.test
def capacity_changed_before_patch(ctx):
    """the set grows above our count between our read and our PATCH: the 412 is not retried over it (that PATCH
    would shrink the set), ESTALE"""
    s = ctx.emu.sets[("sub1", "rg1", "web")]

    def other_agent(reply):
        ctx.emu._grow(s, 4)
        return reply
    # The read before the PATCH is the scale set, then its VMs: the set
    # grows to 7 right after the first, so the PATCH to 5 has a stale etag.
    ctx.emu.add_fault("GET", VMSS % "web" + "$", mutate=other_agent)
    res = probe("azure-vmss", ctx.options(), ["set_capacity=5", "observe"])
    check(res.ops[0]["rc"] == -errno.ESTALE, "refused", res.ops[0], res.stderr[-2000:])
    patches = ctx.emu.find("PATCH")
    check(len(patches) == 1, "one PATCH, refused with 412, not retried", patches)
    check(res.ops[1]["observation"]["target_size"] == 7, "the set keeps the other agent's 7", res.ops[1])


@tap.test
def operation_failed(ctx):
    """an operation ending Failed surfaces its error; no second PATCH"""
    ctx.emu.op_fail = {"code": "AllocationFailed", "message": "Allocation failed. We do not have sufficient "
                       "capacity for the requested VM size in this region."}
    res = probe("azure-vmss", ctx.options(), ["set_capacity=6"])
    check(res.ops[0]["rc"] == -5, "EIO", res.ops)
    check("AllocationFailed" in res.stderr and "sufficient capacity" in res.stderr, "error shown", res.stderr)
    check(len(ctx.emu.find("PATCH")) == 1, "one PATCH")


@tap.test
def delete_failed(ctx):
    """a /delete whose operation fails (Location style) surfaces its error"""
    ctx.emu.op_fail = {"code": "InternalExecutionError", "message": "An internal execution error occurred."}
    res = probe("azure-vmss", ctx.options(), ["remove=1"])
    check(res.ops[0]["rc"] == -5 and "InternalExecutionError" in res.stderr, "error shown", res.ops, res.stderr)
    check(len(ctx.emu.find("POST", "/delete$")) == 1 and not ctx.emu.find("PATCH"), "one delete, no PATCH")


@tap.test
def operation_stuck(ctx):
    """an operation that never finishes times out after operation_timeout with a clear error"""
    ctx.emu.op_stuck = True
    res = probe("azure-vmss", ctx.options(operation_timeout="1s"), ["set_capacity=4"])
    check(res.ops[0]["rc"] == -110, "ETIMEDOUT", res.ops)
    check("not finished after 1 s" in res.stderr, "clear error", res.stderr)
    check(res.elapsed < 10, "bounded", res.elapsed)
    check(len(ctx.emu.find("PATCH")) == 1, "one PATCH")


@tap.test
def poll_retry_after(ctx):
    """Retry-After on operation polls is honoured"""
    ctx.emu.retry_after = "1"
    res = probe("azure-vmss", ctx.options(), ["set_capacity=4"])
    check(res.returncode == 0, "succeeds", res.stderr)
    polls = ctx.emu.find("GET", r"/operations/")
    gaps = [b["time"] - a["time"] for a, b in zip(polls, polls[1:])]
    check(len(polls) == ctx.emu.op_polls and all(g >= 0.95 for g in gaps), "polls a second apart", gaps)


@tap.test
def set_capacity_down_refused(ctx):
    """set_capacity below capacity is refused (it only grows) and changes nothing; remove deletes the oldest"""
    res = probe("azure-vmss", ctx.options(victim_policy="oldest"),
                ["observe", "set_capacity=2", "observe", "remove=1", "observe"])
    check(res.ops[1]["rc"] == -errno.ERANGE, "refused with ERANGE", res.ops[1])
    check("set_capacity to 2 refused" in res.stderr and "only grows" in res.stderr, "the log says why",
          res.stderr[-2000:])
    check(res.ops[2]["observation"]["target_size"] == 3, "still 3", res.ops[2])
    check(not ctx.emu.find("PATCH"), "no PATCH")
    oldest = min(res.ops[0]["instances"], key=lambda i: (i["created_ms"], i["id"]))
    dels = ctx.emu.find("POST", "/delete$")
    check(len(dels) == 1 and dels[0]["json"]["instanceIds"] == [oldest["id"]], "only the remove deleted: the oldest",
          dels)
    check(res.ops[4]["observation"]["target_size"] == 2, "capacity 2 after the remove", res.ops[4])


@tap.test
def token_refresh(ctx):
    """an IMDS token near its expires_on is refreshed"""
    ctx.emu.token_lifetime = 2
    res = probe("azure-vmss", ctx.options(), ["observe", "sleep=1700", "observe"])
    check(res.returncode == 0, "succeeds", res.stderr)
    check(len(ctx.emu.find("GET", "^/metadata/")) == 2, "two tokens")
    check(all(r["status"] != 401 for r in ctx.emu.requests), "no expired token sent")


@tap.test
def check_options(ctx):
    """check() validates options and the secret file without any request"""
    res = probe("azure-vmss", ctx.options(secret=True), ["check"])
    check(res.ops == [{"op": "check", "rc": 0}], "valid", res.ops, res.stderr)
    res = probe("azure-vmss", dict(ctx.options(secret=True), secret_file=ctx.secret_file(0o640)), ["check"])
    check(res.ops[0]["rc"] == -1 and "accessible by group or others" in res.stderr, "mode refused", res.stderr)
    res = probe("azure-vmss", dict(ctx.options(), operation_timeout="soon"), ["check"])
    check(res.ops[0]["rc"] == -22 and "operation_timeout = 'soon'" in res.stderr, "bad duration named", res.stderr)
    check(not ctx.emu.requests, "no request")


sys.exit(tap.run(setup, teardown))
