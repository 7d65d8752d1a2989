"""Emulator of the GCE APIs autoscaled uses (cloud-apis.md sections 1-3):
instanceGroupManagers get/resize/listManagedInstances/deleteInstances, zone
and region operations with wait, the metadata token endpoint, an OAuth token
endpoint verifying RS256 JWTs, and monitoring timeSeries.list.

Instances go PROVISIONING -> STAGING -> RUNNING, `step_s` seconds per step,
after a resize; deleted ones stay DELETING for `step_s`. Operations need
`op_polls` polls (get or wait) to reach DONE. Settings for tests:
stuck_provisioning, op_error (the next operations end in this error),
page_cap (largest page of listManagedInstances), token_lifetime."""

import base64
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from emulator import Emulator, Reply, error_body, run_main  # noqa: E402

SELF = "https://www.googleapis.com/compute/v1/"


def b64url_decode(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


class GceEmulator(Emulator):
    def __init__(self, latency_ms=0):
        super().__init__(latency_ms)
        self.groups = {}
        self.ops = {}
        self.request_ids = {}
        self.tokens = {}
        self.step_s = 0.3
        self.op_polls = 3
        self.op_error = None
        self.stuck_provisioning = False
        self.page_cap = 2
        self.token_lifetime = 3600
        self.pubkey_file = None
        self.client_email = None
        self.token_uri = None
        self.cpu = {}
        self.cpu_lag_s = 0
        self.serial = 0
        scope = r"/compute/v1/projects/([^/]+)/(zones|regions)/([^/]+)"
        igm = scope + r"/instanceGroupManagers/([^/]+)"
        self.route("GET", igm, self.igm_get)
        self.route("POST", igm + r"/resize", self.igm_resize)
        self.route("POST", igm + r"/listManagedInstances", self.igm_list)
        self.route("POST", igm + r"/deleteInstances", self.igm_delete)
        self.route("GET", scope + r"/operations/([^/]+)", self.op_get)
        self.route("POST", scope + r"/operations/([^/]+)/wait", self.op_get)
        self.route("GET", r"/computeMetadata/v1/instance/service-accounts/default/token", self.metadata_token)
        self.route("POST", r"/token", self.oauth_token)
        self.route("GET", r"/v3/projects/([^/]+)/timeSeries", self.time_series)

    # -- set-up ------------------------------------------------------------
    def add_group(self, project, kind, where, name, size=0, paginated=True):
        key = (project, kind, where, name)
        g = {"key": key, "target": 0, "instances": [], "paginated": paginated, "id": str(10**17 + len(self.groups))}
        self.groups[key] = g
        self._grow(g, size, created=time.time() - 3600)
        return g

    def setup(self, conf):
        for gconf in conf.get("groups", []):
            self.add_group(*gconf)
        for k in ("step_s", "op_polls", "page_cap"):
            if k in conf:
                setattr(self, k, conf[k])

    def trust_key(self, pubkey_file, client_email, token_uri):
        self.pubkey_file = pubkey_file
        self.client_email = client_email
        self.token_uri = token_uri

    def group(self, project, kind, where, name):
        return self.groups[(project, kind, where, name)]

    # -- instances ---------------------------------------------------------
    def _zones(self, g):
        kind, where = g["key"][1], g["key"][2]
        return [where] if kind == "zones" else [where + "-a", where + "-b", where + "-c"]

    def _grow(self, g, n, created=None):
        zones = self._zones(g)
        for _ in range(n):
            self.serial += 1
            name = "%s-%s" % (g["key"][3], secrets.token_hex(2) + "%03d" % self.serial)
            g["instances"].append({"name": name, "zone": zones[self.serial % len(zones)],
                                   "created": created if created is not None else time.time(),
                                   "deleting": None, "id": str(5 * 10**18 + self.serial)})
        g["target"] += n

    def _status(self, inst):
        now = time.time()
        if inst["deleting"] is not None:
            return ("STOPPING", "DELETING")
        age = now - inst["created"]
        if self.stuck_provisioning and age < 3000:
            return ("PROVISIONING", "CREATING")
        if age < self.step_s:
            return ("PROVISIONING", "CREATING")
        if age < 2 * self.step_s:
            return ("STAGING", "CREATING")
        return ("RUNNING", "NONE")

    def _expire(self, g):
        now = time.time()
        g["instances"] = [i for i in g["instances"] if i["deleting"] is None or now - i["deleting"] < self.step_s]

    def _inst_url(self, g, inst):
        return "%sprojects/%s/zones/%s/instances/%s" % (SELF, g["key"][0], inst["zone"], inst["name"])

    # -- auth ----------------------------------------------------------------
    def _authorized(self, req):
        auth = req["headers"].get("authorization", "")
        if not auth.startswith("Bearer "):
            return False
        exp = self.tokens.get(auth[7:])
        return exp is not None and exp > time.time()

    def _issue(self, kind):
        tok = "ya29.%s-%s" % (kind, secrets.token_urlsafe(24))
        with self.lock:
            self.tokens[tok] = time.time() + self.token_lifetime
        return tok

    def metadata_token(self, req):
        if req["headers"].get("metadata-flavor") != "Google":
            return Reply(403, "Missing Metadata-Flavor:Google header.", {"Metadata-Flavor": "Google"})
        return Reply(200, {"access_token": self._issue("meta"), "expires_in": self.token_lifetime,
                           "token_type": "Bearer"}, {"Metadata-Flavor": "Google"})

    def oauth_token(self, req):
        form = dict(urllib.parse.parse_qsl(req["body"]))
        bad = Reply(400, {"error": "invalid_grant", "error_description": "Invalid JWT Signature."})
        if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" or "assertion" not in form:
            return Reply(400, {"error": "unsupported_grant_type", "error_description": "Invalid grant_type."})
        parts = form["assertion"].split(".")
        if len(parts) != 3 or not self.pubkey_file:
            return bad
        with tempfile.TemporaryDirectory() as d:
            data, sig = os.path.join(d, "data"), os.path.join(d, "sig")
            with open(data, "wb") as f:
                f.write((parts[0] + "." + parts[1]).encode())
            with open(sig, "wb") as f:
                f.write(b64url_decode(parts[2]))
            ok = subprocess.run(["openssl", "dgst", "-sha256", "-verify", self.pubkey_file, "-signature", sig, data],
                                capture_output=True).returncode == 0
        if not ok:
            return bad
        header = json.loads(b64url_decode(parts[0]))
        claims = json.loads(b64url_decode(parts[1]))
        now = time.time()
        if (header.get("alg") != "RS256" or claims.get("iss") != self.client_email
                or claims.get("aud") != self.token_uri or not claims.get("scope")
                or claims.get("exp", 0) - claims.get("iat", 0) != 3600
                or not (claims["iat"] <= now + 60 and claims["exp"] > now)):
            return Reply(400, {"error": "invalid_grant", "error_description": "Invalid JWT claims."})
        return Reply(200, {"access_token": self._issue("key"), "expires_in": self.token_lifetime,
                           "token_type": "Bearer"})

    def _guard(self, req, project, kind, where, name=None):
        if not self._authorized(req):
            return Reply(401, error_body(401, "Request had invalid authentication credentials.",
                                         "authError")), None
        if name is None:
            return None, None
        g = self.groups.get((project, kind, where, name))
        if g is None:
            return Reply(404, error_body(404, "The resource 'projects/%s/%s/%s/instanceGroupManagers/%s' was not found"
                                         % (project, kind, where, name), "notFound")), None
        self._expire(g)
        return None, g

    # -- instanceGroupManagers -------------------------------------------------
    def igm_get(self, req, project, kind, where, name):
        err, g = self._guard(req, project, kind, where, name)
        if err:
            return err
        acts = {k: 0 for k in ("abandoning", "creating", "creatingWithoutRetries", "deleting", "none",
                               "recreating", "refreshing", "restarting", "resuming", "starting", "stopping",
                               "suspending", "verifying")}
        for i in g["instances"]:
            st, act = self._status(i)
            acts[{"NONE": "none", "CREATING": "creating", "DELETING": "deleting"}[act]] += 1
        stable = acts["creating"] == 0 and acts["deleting"] == 0
        link = "%sprojects/%s/%s/%s/instanceGroupManagers/%s" % (SELF, project, kind, where, name)
        body = {"kind": "compute#instanceGroupManager", "id": g["id"], "name": name, "selfLink": link,
                "instanceTemplate": SELF + "projects/%s/global/instanceTemplates/t" % project,
                "baseInstanceName": name, "fingerprint": base64.b64encode(secrets.token_bytes(8)).decode(),
                "targetSize": g["target"], "currentActions": acts, "status": {"isStable": stable},
                "listManagedInstancesResults": "PAGINATED" if g["paginated"] else "PAGELESS"}
        body["zone" if kind == "zones" else "region"] = SELF + "projects/%s/%s/%s" % (project, kind, where)
        return Reply(200, body)

    def _new_op(self, g, op_type, request_id):
        project, kind, where, name = g["key"]
        if request_id and request_id in self.request_ids:
            return self.ops[self.request_ids[request_id]], False
        self.serial += 1
        opname = "operation-%d-%s" % (int(time.time() * 1000), secrets.token_hex(4))
        op = {"kind": "compute#operation", "id": str(7 * 10**18 + self.serial), "name": opname,
              "operationType": op_type, "status": "PENDING", "progress": 0,
              "targetLink": "%sprojects/%s/%s/%s/instanceGroupManagers/%s" % (SELF, project, kind, where, name),
              "insertTime": time.strftime("%Y-%m-%dT%H:%M:%S.000-00:00", time.gmtime()),
              "selfLink": "%sprojects/%s/%s/%s/operations/%s" % (SELF, project, kind, where, opname),
              "_polls": 0, "_error": self.op_error, "_scope": (project, kind, where)}
        op["zone" if kind == "zones" else "region"] = SELF + "projects/%s/%s/%s" % (project, kind, where)
        self.ops[opname] = op
        if request_id:
            self.request_ids[request_id] = opname
        return op, True

    @staticmethod
    def _public(op):
        return {k: v for k, v in op.items() if not k.startswith("_")}

    def igm_resize(self, req, project, kind, where, name):
        err, g = self._guard(req, project, kind, where, name)
        if err:
            return err
        try:
            size = int(req["query"]["size"])
        except (KeyError, ValueError):
            return Reply(400, error_body(400, "Invalid value for field 'size'", "invalid"))
        with self.lock:
            op, new = self._new_op(g, "compute.instanceGroupManagers.resize", req["query"].get("requestId"))
            if new and op["_error"] is None:
                live = [i for i in g["instances"] if i["deleting"] is None]
                if size > len(live):
                    self._grow(g, size - len(live))
                else:
                    for i in sorted(live, key=lambda i: -i["created"])[:len(live) - size]:
                        i["deleting"] = time.time()
                g["target"] = size
        return Reply(200, self._public(op))

    def igm_list(self, req, project, kind, where, name):
        err, g = self._guard(req, project, kind, where, name)
        if err:
            return err
        rows = []
        for i in g["instances"]:
            st, act = self._status(i)
            mi = {"instance": self._inst_url(g, i), "name": i["name"], "instanceStatus": st, "currentAction": act,
                  "version": {"instanceTemplate": "t"}}
            if st != "PROVISIONING":
                mi["id"] = i["id"]
            if self.stuck_provisioning and st == "PROVISIONING":
                mi["lastAttempt"] = {"errors": {"errors": [{"code": "ZONE_RESOURCE_POOL_EXHAUSTED",
                                                            "message": "The zone does not have enough resources"}]}}
            rows.append(mi)
        if not g["paginated"]:
            return Reply(200, {"managedInstances": rows})
        size = min(int(req["query"].get("maxResults") or 500) or 500, self.page_cap)
        start = int(req["query"].get("pageToken") or 0)
        body = {"managedInstances": rows[start:start + size]}
        if start + size < len(rows):
            body["nextPageToken"] = str(start + size)
        return Reply(200, body)

    def igm_delete(self, req, project, kind, where, name):
        err, g = self._guard(req, project, kind, where, name)
        if err:
            return err
        js = req["json"] or {}
        urls = js.get("instances", [])
        skip = js.get("skipInstancesOnValidationError", False)
        targets = []
        for u in urls:
            path = u.split("/compute/v1/", 1)[-1]
            path = path.split("projects/%s/" % project, 1)[-1]
            match = [i for i in g["instances"] if "zones/%s/instances/%s" % (i["zone"], i["name"]) == path
                     and i["deleting"] is None]
            if not match:
                if not skip:
                    return Reply(400, error_body(400, "Instance '%s' is not a member of the group" % u, "invalid"))
                continue
            targets.append(match[0])
        with self.lock:
            op, new = self._new_op(g, "compute.instanceGroupManagers.deleteInstances", req["query"].get("requestId"))
            if new and op["_error"] is None:
                for i in targets:
                    i["deleting"] = time.time()
                g["target"] -= len(targets)
        return Reply(200, self._public(op))

    def op_get(self, req, project, kind, where, opname):
        err, _ = self._guard(req, project, kind, where)
        if err:
            return err
        with self.lock:
            op = self.ops.get(opname)
            if op is None or op["_scope"] != (project, kind, where):
                return Reply(404, error_body(404, "The resource operation '%s' was not found" % opname, "notFound"))
            if op["status"] != "DONE":
                op["_polls"] += 1
                op["status"] = "RUNNING"
                op["progress"] = min(100, op["_polls"] * 100 // self.op_polls)
                if op["_polls"] >= self.op_polls:
                    op["status"] = "DONE"
                    op["endTime"] = time.strftime("%Y-%m-%dT%H:%M:%S.000-00:00", time.gmtime())
                    if op["_error"]:
                        op["error"] = {"errors": [op["_error"]]}
                        op["httpErrorStatusCode"] = 400
                        op["httpErrorMessage"] = "BAD REQUEST"
            return Reply(200, self._public(op))

    # -- monitoring ------------------------------------------------------------
    def time_series(self, req, project):
        if not self._authorized(req):
            return Reply(401, error_body(401, "Request had invalid authentication credentials.", "authError"))
        q = req["query"]
        if "filter" not in q:
            return Reply(400, error_body(400, "Field filter had an invalid value", "badRequest"))
        series = []
        for group, values in self.cpu.items():
            if 'metadata.system_labels.instance_group = "%s"' % group not in q["filter"]:
                continue
            now = int(time.time() - self.cpu_lag_s) // 60 * 60
            points = []
            for k, v in enumerate(values):
                t = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - 60 * k))
                points.append({"interval": {"startTime": t, "endTime": t}, "value": {"doubleValue": v}})
            series.append({"metric": {"type": "compute.googleapis.com/instance/cpu/utilization"},
                           "resource": {"type": "gce_instance", "labels": {"project_id": project}},
                           "metricKind": "GAUGE", "valueType": "DOUBLE", "points": points})
        return Reply(200, {"timeSeries": series} if series else {})


if __name__ == "__main__":
    def make(latency):
        emu = GceEmulator(latency)
        emu.token_lifetime = 3600
        return emu

    run_main(make, sys.argv[1:])
