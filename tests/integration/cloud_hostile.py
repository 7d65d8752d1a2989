"""Hostile cloud replies against the gce-mig and azure-vmss drivers and the
gce_monitoring and azure_monitor sources, through the emulators.

Each real reply the code reads (the group, the member list, operations,
tokens, metrics) is taken as the emulator makes it and one field at a time
is swapped to every other JSON type (object, array, string, number,
boolean, null), removed, or set to a huge, negative or fractional number.
For every such reply:
  - nothing crashes: the probe prints a result for each operation;
  - a type swap is an error or changes nothing (the code either checks
    the field or does not read it; it never reads a wrong type as a value);
  - the driver never acts in the wrong direction, and never twice: a
    scale-out to 5 of a group of 3 only ever resizes (PATCHes) to 5 and
    deletes nothing; a scale-in to 2 never resizes and deletes at most one.
Then the named cases: currentActions as an array, a Retry-After too large
for any integer, and token lifetimes of 1e300 seconds."""

import concurrent.futures
import copy
import itertools
import json
import os
import queue
import subprocess
import sys

sys.path.insert(0, os.path.join(os.environ.get("top_srcdir", "."), "tests", "helpers"))
from cloudtest import Tap, check, probe, top_builddir  # noqa: E402
from azure import AzureEmulator  # noqa: E402
from emulator import Reply  # noqa: E402
from gce import GceEmulator  # noqa: E402

tap = Tap()
SOURCE_PROBE = os.path.join(top_builddir, "tests", "helpers", "cloud-source-probe")
WORKERS = 3
SWAPS = [("object", {"k": 1}), ("array", [1]), ("string", "x"), ("number", 7), ("boolean", True), ("null", None)]
NUMBERS = [1e300, -1e300, 9223372036854775807, -1, 0.5]
SERIAL = itertools.count(1)
GIGM = r"/compute/v1/projects/p1/zones/europe-west1-b/instanceGroupManagers/%s"
AVMSS = r"/subscriptions/sub1/resourceGroups/rg1/providers/Microsoft\.Compute/virtualMachineScaleSets/%s"


def kind(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    return "array" if isinstance(v, list) else "object"


def paths(v, prefix=()):
    yield prefix
    if isinstance(v, dict):
        for k in v:
            yield from paths(v[k], prefix + (k,))
    elif isinstance(v, list) and v:
        yield from paths(v[0], prefix + (0,))


def label(path):
    return "".join("[0]" if isinstance(k, int) else "." + k for k in path) or "(the body)"


def variants(body, keep=lambda path: True):
    """(what, path, action, value, strict) for every field of body; strict
    ones (type swaps) must end in an error or change nothing."""
    out = []
    for p in paths(body):
        if not keep(p):
            continue
        cur = body
        for k in p:
            cur = cur[k]
        for name, val in SWAPS:
            if name != kind(cur):
                out.append(("%s as %s" % (label(p), name), p, "set", val, name != "null"))
        if kind(cur) == "number":
            for n in NUMBERS:
                out.append(("%s = %r" % (label(p), n), p, "set", n, False))
        if p and isinstance(p[-1], str):
            out.append(("%s removed" % label(p), p, "del", None, False))
    return out


def apply(body, path, action, value):
    """body with the field at path changed, when the live body has it."""
    if not path:
        return value if action == "set" else body
    body = copy.deepcopy(body)
    parent = body
    try:
        for k in path[:-1]:
            parent = parent[k]
        parent[path[-1]]
    except (KeyError, IndexError, TypeError):
        return body
    if action == "set":
        parent[path[-1]] = value
    else:
        del parent[path[-1]]
    return body


def mutator(path, action, value):
    def fn(reply):
        if not isinstance(reply.body, (dict, list)):
            return reply
        headers = dict(reply.headers)
        headers["Content-Type"] = "application/json"
        return Reply(reply.status, json.dumps(apply(reply.body, path, action, value)), headers)
    return fn


def recorder(store):
    def fn(reply):
        if isinstance(reply.body, dict):
            store.append(copy.deepcopy(reply.body))
        return reply
    return fn


def merged(bodies):
    out = {}
    for b in bodies:
        out.update(b)
    return out


def survived(res, n_ops):
    """The probe ended by itself and printed every operation's result."""
    check(res.returncode in (0, 1) and len(res.ops) == n_ops and "runtime error" not in res.stderr and
          "Sanitizer" not in res.stderr, "the probe crashed (exit %s, %d of %d results)" %
          (res.returncode, len(res.ops), n_ops), res.stderr[-3000:])


def summary(op):
    """What an observation says, without names and times that differ between groups."""
    if op["rc"] != 0:
        return "error"
    obs = op["observation"]
    return (obs["target_size"], obs["stable"],
            sorted((i["state"], i["ready"], bool(i.get("location"))) for i in op["instances"]))


# -- the drivers ---------------------------------------------------------------

class Gce:
    name = "gce-mig"

    def __init__(self):
        self.emu = GceEmulator()
        self.emu.step_s = 0.2
        self.emu.op_polls = 2
        self.emu.page_cap = 2
        self.url = self.emu.start()

    def group(self):
        name = "g%d" % next(SERIAL)
        self.emu.add_group("p1", "zones", "europe-west1-b", name, 3)
        return name

    def options(self, g, **extra):
        o = {"project": "p1", "zone": "europe-west1-b", "name": g, "compute_base": self.url + "/compute/v1",
             "metadata_host": self.url.split("//")[1], "retry_base": "50ms", "retry_max": "1s",
             "retry_attempts": "2", "operation_timeout": "5s", "unstable_limit": "10m"}
        o.update(extra)
        return o

    ENDPOINTS = {
        "group": ("GET", GIGM + "$"),
        "list": ("POST", GIGM + "/listManagedInstances$"),
        "operation": ("POST", r"(/resize|/deleteInstances|/operations/[^/]+/wait)$"),
        "token": ("GET", r"^/computeMetadata/v1/instance/service-accounts/default/token$"),
    }

    def fault_path(self, endpoint, g):
        path = self.ENDPOINTS[endpoint][1]
        return path % g if "%s" in path else path

    def actions(self, g):
        base = GIGM % g
        resizes = [int(r["query"]["size"]) for r in self.emu.find("POST", base + "/resize$")]
        deletes = [len((r["json"] or {}).get("instances", [])) for r in self.emu.find("POST", base + "/deleteInstances$")]
        return resizes, deletes


class Azure:
    name = "azure-vmss"

    def __init__(self):
        self.emu = AzureEmulator()
        self.emu.step_s = 0.2
        self.emu.op_polls = 2
        self.emu.page_cap = 2
        self.url = self.emu.start()

    def group(self):
        name = "s%d" % next(SERIAL)
        self.emu.add_set("sub1", "rg1", name, 3, "Uniform")
        return name

    def options(self, g, **extra):
        o = {"subscription": "sub1", "resource_group": "rg1", "name": g, "arm_base": self.url,
             "credentials": "managed_identity", "imds_base": self.url, "retry_base": "50ms", "retry_max": "1s",
             "retry_attempts": "2", "poll_interval": "50ms", "operation_timeout": "5s"}
        o.update(extra)
        return o

    ENDPOINTS = {
        "group": ("GET", AVMSS + "$"),
        "list": ("GET", AVMSS + "/virtualMachines$"),
        "update": ("PATCH", AVMSS + "$"),
        "operation": ("GET", r"/locations/[^/]+/operations/[^/]+$"),
        "token": ("GET", r"^/metadata/identity/oauth2/token$"),
    }

    def fault_path(self, endpoint, g):
        path = self.ENDPOINTS[endpoint][1]
        return path % g if "%s" in path else path

    def actions(self, g):
        base = AVMSS % g
        patches = [((r["json"] or {}).get("sku") or {}).get("capacity") for r in self.emu.find("PATCH", base + "$")]
        deletes = [len((r["json"] or {}).get("instanceIds", [])) for r in self.emu.find("POST", base + "/delete$")]
        return patches, deletes


class Pool:
    """WORKERS emulators of one kind, each used by one case at a time."""

    def __init__(self, cls):
        self.all = [cls() for _ in range(WORKERS)]
        self.free = queue.Queue()
        for d in self.all:
            self.free.put(d)

    def run(self, fn, cases):
        def one(case):
            d = self.free.get()
            try:
                return fn(d, case)
            finally:
                d.emu.clear()
                self.free.put(d)
        failures = []
        with concurrent.futures.ThreadPoolExecutor(WORKERS) as ex:
            for case, err in zip(cases, ex.map(lambda c: _catch(one, c), cases)):
                if err:
                    failures.append("%s: %s" % (case[0], err))
        check(not failures, "%d of %d hostile replies mishandled" % (len(failures), len(cases)), *failures[:15])

    def stop(self):
        for d in self.all:
            d.emu.stop()


def _catch(fn, case):
    try:
        fn(case)
        return None
    except AssertionError as e:
        return str(e)[:1500]


def record(d, endpoint):
    """The bodies of one endpoint's real replies during a scale-out and a
    scale-in, and the observation of an untouched group."""
    bodies = []
    method, _ = d.ENDPOINTS[endpoint]
    first = None
    for ops in (["observe", "set_capacity=5"], ["remove=1"]):
        g = d.group()
        d.emu.add_fault(method=method, path=d.fault_path(endpoint, g), times=-1, mutate=recorder(bodies))
        res = probe(d.name, d.options(g), ops)
        d.emu.clear()
        check(res.returncode == 0, "the unchanged replies work", res.stderr[-2000:], res.ops)
        first = first or res.op(0)
    check(bodies, "%s replies seen" % endpoint)
    return merged(bodies), summary(first)


def hostile_matrix(cls, endpoint, keep=lambda path: True):
    pool = Pool(cls)
    try:
        body, base = record(pool.all[0], endpoint)
        check(base != "error" and base[0] == 3 and base[1], "the untouched group: 3 stable", base)
        cases = variants(body, keep)
        print("# %s %s: %d hostile replies" % (cls.name, endpoint, len(cases)), flush=True)

        def case_fn(d, case):
            what, path, action, value, strict = case
            method, _ = d.ENDPOINTS[endpoint]
            # Up: observe, then scale out from 3 to 5.
            g = d.group()
            d.emu.add_fault(method=method, path=d.fault_path(endpoint, g), times=-1,
                            mutate=mutator(path, action, value))
            res = probe(d.name, d.options(g), ["observe", "set_capacity=5"], timeout=60)
            survived(res, 2)
            got = summary(res.op(0))
            if strict:
                check(got in ("error", base), "a reply of the wrong type was read as a value", got, base)
            ups, downs = d.actions(g)
            check(all(n == 5 for n in ups) and len(ups) <= 1 and not downs,
                  "scale-out to 5 acted wrongly: sizes %s, deletes %s" % (ups, downs))
            # Down: scale in from 3 to 2.
            d.emu.clear()
            g = d.group()
            d.emu.add_fault(method=method, path=d.fault_path(endpoint, g), times=-1,
                            mutate=mutator(path, action, value))
            res = probe(d.name, d.options(g), ["remove=1"], timeout=60)
            survived(res, 1)
            ups, downs = d.actions(g)
            check(not ups and len(downs) <= 1 and sum(downs) <= 1,
                  "scale-in to 2 acted wrongly: sizes %s, deletes %s" % (ups, downs))

        pool.run(case_fn, cases)
    finally:
        pool.stop()


def few_actions(path):
    """GCE lists 13 kinds of currentActions: two stand for the rest."""
    return not (len(path) == 2 and path[0] == "currentActions" and path[1] not in ("creating", "none"))


@tap.test
def gce_group(ctx):
    """gce-mig: every field of instanceGroupManagers.get, hostile"""
    hostile_matrix(Gce, "group", few_actions)


@tap.test
def gce_list(ctx):
    """gce-mig: every field of listManagedInstances, hostile"""
    hostile_matrix(Gce, "list")


@tap.test
def gce_operation(ctx):
    """gce-mig: every field of the resize, deleteInstances and wait operations, hostile"""
    hostile_matrix(Gce, "operation")


@tap.test
def gce_token(ctx):
    """gce-mig: every field of the metadata server's token, hostile"""
    hostile_matrix(Gce, "token")


@tap.test
def azure_group(ctx):
    """azure-vmss: every field of the scale set GET, hostile"""
    hostile_matrix(Azure, "group")


@tap.test
def azure_list(ctx):
    """azure-vmss: every field of the VM list with instance views, hostile"""
    hostile_matrix(Azure, "list")


@tap.test
def azure_update(ctx):
    """azure-vmss: every field of the PATCH reply and of its async operation, hostile"""
    hostile_matrix(Azure, "update")
    hostile_matrix(Azure, "operation")


@tap.test
def azure_token(ctx):
    """azure-vmss: every field of the managed identity token, hostile"""
    hostile_matrix(Azure, "token")


# -- the sources ---------------------------------------------------------------

def source_run(kind_, opts):
    args = [SOURCE_PROBE, kind_, "10000", "1"] + ["%s=%s" % kv for kv in opts.items()]
    p = subprocess.run(args, capture_output=True, text=True, timeout=60)
    lines = p.stdout.splitlines()
    check(p.returncode == 0 and len(lines) == 1 and lines[0].split(" ")[0] in ("ok", "invalid") and
          "runtime error" not in p.stderr and "Sanitizer" not in p.stderr,
          "the source probe crashed (exit %d)" % p.returncode, p.stdout, p.stderr[-2000:])
    return lines[0] if lines[0].startswith("ok") else "invalid"


def source_matrix(emu, kind_, opts, method, path):
    bodies = []
    emu.add_fault(method=method, path=path, times=-1, mutate=recorder(bodies))
    base = source_run(kind_, opts)
    emu.clear()
    check(base.startswith("ok") and bodies, "the unchanged reply gives a value", base)
    failures = []
    cases = variants(bodies[0])
    print("# %s: %d hostile replies" % (kind_, len(cases)), flush=True)
    for what, p, action, value, strict in cases:
        try:
            emu.clear()
            emu.add_fault(method=method, path=path, times=-1, mutate=mutator(p, action, value))
            got = source_run(kind_, opts)
            if strict:
                check(got in ("invalid", base), "a reply of the wrong type was read as a value: %s" % got, base)
        except AssertionError as e:
            failures.append("%s: %s" % (what, str(e)[:800]))
    emu.clear()
    check(not failures, "%d of %d hostile replies mishandled" % (len(failures), len(cases)), *failures[:15])


@tap.test
def gce_monitoring(ctx):
    """gce_monitoring: every field of timeSeries.list, hostile"""
    emu = GceEmulator()
    url = emu.start()
    try:
        emu.cpu["web"] = [0.42, 0.30]
        source_matrix(emu, "gce_monitoring", {"project": "p1", "group": "web", "monitoring_base": url + "/v3",
                                              "metadata_host": url.split("//")[1]},
                      "GET", r"/v3/projects/p1/timeSeries$")
    finally:
        emu.stop()


@tap.test
def azure_monitor(ctx):
    """azure_monitor: every field of the metrics reply, hostile"""
    emu = AzureEmulator()
    url = emu.start()
    try:
        emu.add_set("sub1", "rg1", "web", 2)
        emu.cpu["web"] = [35.0, None, 20.0]
        source_matrix(emu, "azure_monitor", {"subscription": "sub1", "resource_group": "rg1", "name": "web",
                                             "arm_base": url, "credentials": "managed_identity", "imds_base": url},
                      "GET", r"/providers/Microsoft\.Insights/metrics$")
    finally:
        emu.stop()


# -- named cases -----------------------------------------------------------------

@tap.test
def gce_current_actions_array(ctx):
    """gce-mig: currentActions as an array is an error, not a crash, and nothing is resized"""
    d = Gce()
    try:
        g = d.group()
        d.emu.add_fault(method="GET", path=d.fault_path("group", g), times=-1,
                        mutate=mutator(("currentActions",), "set", [{"creating": 1}, 3, "none"]))
        res = probe(d.name, d.options(g), ["observe", "set_capacity=5"])
        survived(res, 2)
        check(res.op(0)["rc"] < 0 and res.op(1)["rc"] < 0, "both operations fail", res.ops)
        check("malformed" in res.stderr and "currentActions" in res.stderr, "the log names the field", res.stderr)
        check(d.actions(g) == ([], []), "nothing done", d.actions(g))
    finally:
        d.emu.stop()


def retry_after_waits(d, endpoint):
    g = d.group()
    method = d.ENDPOINTS[endpoint][0]
    d.emu.add_fault(method=method, path=d.fault_path(endpoint, g), status=429, times=1,
                    headers={"Retry-After": "9223372036854775807"}, body={"error": {"code": 429, "message": "slow"}})
    res = probe(d.name, d.options(g, retry_max="1500ms", retry_attempts="3"), ["observe", "observe"])
    survived(res, 2)
    # Before the clamp, the header overflowed into a negative wait and an
    # instant retry; it is now the longest wait there is, and honoured.
    check(res.op(0)["rc"] == -11 and res.op(1)["rc"] == -11, "EAGAIN: throttled", res.ops, res.stderr[-2000:])
    check("throttled until" in res.stderr, "the log says until when", res.stderr[-2000:])
    reqs = [r for r in d.emu.find(method, d.fault_path(endpoint, g))]
    check(len(reqs) == 1 and reqs[0]["status"] == 429, "one 429, and no early retry", [r["status"] for r in reqs])
    check(res.elapsed < 30, "not waited for in the call", res.elapsed)


@tap.test
def retry_after_overflow(ctx):
    """a Retry-After too large for any integer is the longest wait, honoured: no retry, no instant retry"""
    for cls, endpoint in ((Gce, "group"), (Azure, "group")):
        d = cls()
        try:
            retry_after_waits(d, endpoint)
        finally:
            d.emu.stop()


@tap.test
def token_lifetime_overflow(ctx):
    """a token lifetime of 1e300 s is clamped: the token is used and kept, not refused or refetched"""
    for cls, fields in ((Gce, {"expires_in": 1e300}), (Azure, {"expires_in": "1e300", "expires_on": "1e300"}),
                        (Azure, {"expires_in": 1e300, "expires_on": 1e300})):
        d = cls()
        try:
            g = d.group()
            method, path = d.ENDPOINTS["token"]

            def huge(reply, fields=fields):
                body = dict(reply.body)
                body.update(fields)
                return Reply(reply.status, json.dumps(body), dict(reply.headers, **{"Content-Type": "application/json"}))
            d.emu.add_fault(method=method, path=path, times=-1, mutate=huge)
            res = probe(d.name, d.options(g), ["observe", "observe"])
            survived(res, 2)
            check(res.op(0)["rc"] == 0 and res.op(1)["rc"] == 0, "observed with the token", res.ops,
                  res.stderr[-2000:])
            check(len(d.emu.find(method, path)) == 1, "one token for both observations",
                  len(d.emu.find(method, path)))
        finally:
            d.emu.stop()


sys.exit(tap.run())
