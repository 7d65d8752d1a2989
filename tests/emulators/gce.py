"""Emulator of the GCE APIs autoscaled uses (cloud-apis.md sections 1-3):
instanceGroupManagers get/resize/listManagedInstances/deleteInstances, zone
and region operations with wait, the metadata token endpoint, an OAuth token
endpoint verifying RS256 JWTs, and monitoring timeSeries.list.

Instances go PROVISIONING -> STAGING -> RUNNING, `step_s` seconds per step,
after a resize; deleted ones stay DELETING for `step_s`. Operations need
`op_polls` polls (get or wait) to reach DONE. Settings for tests:
stuck_provisioning, op_error (the next operations end in this error),
op_stuck (operations never finish), wait_s (how long operations.wait holds
an operation that is not DONE: about two minutes on the real API),
page_cap (largest page of listManagedInstances), token_lifetime,
default_scopes (the metadata server's service-account scopes).

Documented behaviours implemented, refused as the real API refuses them:
- requestId on resize and deleteInstances must be a non-zero UUID (400
  otherwise); a repeated requestId returns the first operation, no effect.
- deleteInstances: at most 1000 URLs; a malformed instance URL, another
  project's, or a zone outside the group's zone or region fails the whole
  call (400) even with skipInstancesOnValidationError; a well-formed URL of
  an instance that is not a member is skipped with that flag (400 without).
  targetSize drops by the number actually deleted.
- operations.wait answers at once when the operation is DONE, else after
  `wait_s` (the operation may still be RUNNING: callers loop).
- Tokens carry their scopes: compute calls need .../auth/compute or
  .../auth/cloud-platform, monitoring calls .../auth/monitoring(.read) or
  cloud-platform (403 ACCESS_TOKEN_SCOPE_INSUFFICIENT otherwise); the
  metadata server grants the `scopes` asked for only within its own.
- timeSeries.list: `filter` parsed as a filter (terms `field = "value"`
  joined by AND; an unknown field or other syntax is a 400), the required
  interval.endTime, aggregation.alignmentPeriod (>= 60s), perSeriesAligner
  and crossSeriesReducer (REDUCE_MEAN folds the per-instance series into
  one; a reducer without an aligner is a 400), view (FULL or HEADERS),
  pageSize (points with FULL, series with HEADERS) and pageToken.
- status.autoscaler names the group's own autoscaler when one is attached
  (add_group(autoscaler=NAME)); the autoscaler resource itself is not served.
- Replies carry fields the drivers do not know (as newer API versions do),
  and leave out optional ones (a ManagedInstance's `id` before its VM
  exists, `version` of an instance being created).

Not implemented: instance templates, the Instance resource itself,
abandonInstances, recreate, per-instance configs, stateful policy,
fingerprints (no 412), listManagedInstances' `filter`/`orderBy`, the
project quota counters behind 403 rateLimitExceeded (injected as faults
instead), monitoring aligners and reducers other than MEAN, groupByFields,
filter operators other than `=` and `AND`, and real JWT audience checks
beyond `aud` == token_uri."""

import base64
import json
import os
import re
import secrets
import subprocess
import sys
import tempfile
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from emulator import Emulator, Reply, error_body, run_main  # noqa: E402

SELF = "https://www.googleapis.com/compute/v1/"
SCOPE = "https://www.googleapis.com/auth/"
COMPUTE_SCOPES = {SCOPE + "compute", SCOPE + "cloud-platform"}
MONITORING_SCOPES = {SCOPE + "monitoring", SCOPE + "monitoring.read", SCOPE + "cloud-platform"}
UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
FILTER_FIELDS = ("metric.type", "resource.type", "metadata.system_labels.instance_group", "resource.labels.zone",
                 "resource.labels.project_id", "metric.labels.instance_name")


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
        self.op_stuck = False
        self.wait_s = 0
        self.default_scopes = [SCOPE + "cloud-platform"]
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
        self.route("POST", scope + r"/operations/([^/]+)/wait", self.op_wait)
        self.route("GET", r"/computeMetadata/v1/instance/service-accounts/default/token", self.metadata_token)
        self.route("POST", r"/token", self.oauth_token)
        self.route("GET", r"/v3/projects/([^/]+)/timeSeries", self.time_series)

    # -- set-up ------------------------------------------------------------
    def add_group(self, project, kind, where, name, size=0, paginated=True, autoscaler=None):
        key = (project, kind, where, name)
        g = {"key": key, "target": 0, "instances": [], "paginated": paginated, "id": str(10**17 + len(self.groups)),
             "autoscaler": autoscaler}
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
    def _authorized(self, req, scopes=COMPUTE_SCOPES):
        """None when the request's token is valid and has one of `scopes`,
        else the error reply."""
        auth = req["headers"].get("authorization", "")
        tok = self.tokens.get(auth[7:]) if auth.startswith("Bearer ") else None
        if tok is None or tok[0] <= time.time():
            return Reply(401, error_body(401, "Request had invalid authentication credentials.", "authError"))
        if not scopes & set(tok[1]):
            return Reply(403, error_body(403, "Request had insufficient authentication scopes.",
                                         "ACCESS_TOKEN_SCOPE_INSUFFICIENT"))
        return None

    def _issue(self, kind, scopes=None):
        tok = "ya29.%s-%s" % (kind, secrets.token_urlsafe(24))
        with self.lock:
            self.tokens[tok] = (time.time() + self.token_lifetime, list(scopes or self.default_scopes))
        return tok

    def metadata_token(self, req):
        if req["headers"].get("metadata-flavor") != "Google":
            return Reply(403, "Missing Metadata-Flavor:Google header.", {"Metadata-Flavor": "Google"})
        asked = [x for x in req["query"].get("scopes", "").split(",") if x]
        # The metadata server grants scopes only within the service
        # account's own; cloud-platform covers every API.
        if asked and SCOPE + "cloud-platform" not in self.default_scopes and not set(asked) <= set(self.default_scopes):
            return Reply(400, "invalid scopes", {"Metadata-Flavor": "Google"})
        return Reply(200, {"access_token": self._issue("meta", asked or None), "expires_in": self.token_lifetime,
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
        return Reply(200, {"access_token": self._issue("key", claims["scope"].split(" ")),
                           "expires_in": self.token_lifetime, "token_type": "Bearer"})

    def _guard(self, req, project, kind, where, name=None):
        err = self._authorized(req)
        if err:
            return err, None
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
                "targetSize": g["target"], "currentActions": acts, "status": dict({"isStable": stable}, **({"autoscaler": SELF + "projects/%s/%s/%s/autoscalers/%s" % (
                    project, kind, where, g["autoscaler"])} if g["autoscaler"] else {})),
                "listManagedInstancesResults": "PAGINATED" if g["paginated"] else "PAGELESS",
                # Fields a newer API has and the driver does not read.
                "satisfiesPzi": False, "instanceLifecyclePolicy": {"forceUpdateOnRepair": "NO",
                                                                   "defaultActionOnFailure": "REPAIR"}}
        body["zone" if kind == "zones" else "region"] = SELF + "projects/%s/%s/%s" % (project, kind, where)
        return Reply(200, body)

    @staticmethod
    def _bad_request_id(req):
        """The real API takes any non-zero UUID as requestId, nothing else."""
        rid = req["query"].get("requestId")
        if rid is None:
            return None
        if not UUID.fullmatch(rid) or not rid.replace("-", "").strip("0"):
            return Reply(400, error_body(400, "Invalid value for field 'requestId': '%s'. The requestId must be a "
                                         "valid non-zero UUID." % rid, "invalid"))
        return None

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
        bad = self._bad_request_id(req)
        if bad:
            return bad
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
                  "instanceHealth": [], "propertiesFromFlexibilityPolicy": {"machineType": "e2-small"}}
            if st != "PROVISIONING":
                mi["version"] = {"instanceTemplate": "t"}
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
        bad = self._bad_request_id(req)
        if bad:
            return bad
        js = req["json"] or {}
        urls = js.get("instances", [])
        skip = js.get("skipInstancesOnValidationError", False)
        if not isinstance(urls, list) or not urls or len(urls) > 1000:
            return Reply(400, error_body(400, "Invalid value for field 'resource.instances': between 1 and 1000 "
                                         "instances are required.", "invalid"))
        url_rx = re.compile(r"(?:https://(?:www|compute)\.googleapis\.com/compute/v1/)?(?:projects/([^/]+)/)?"
                            r"zones/([a-z0-9-]+)/instances/([a-z]([-a-z0-9]{0,61}[a-z0-9])?)")
        targets = []
        for u in urls:
            m = url_rx.fullmatch(u) if isinstance(u, str) else None
            # Validation the skip flag does not cover: the whole call fails.
            if not m or (m.group(1) and m.group(1) != project):
                return Reply(400, error_body(400, "Invalid value for field 'resource.instances[]': '%s'. The URL is "
                                             "malformed." % u, "invalid"))
            if m.group(2) not in self._zones(g):
                return Reply(400, error_body(400, "Invalid value for field 'resource.instances[]': '%s'. Instance "
                                             "is in a zone the group does not span." % u, "invalid"))
            match = [i for i in g["instances"] if i["zone"] == m.group(2) and i["name"] == m.group(3)
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
            if op["status"] != "DONE" and not self.op_stuck:
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

    def op_wait(self, req, project, kind, where, opname):
        """Answers at DONE, else after wait_s with the operation as it is."""
        reply = self.op_get(req, project, kind, where, opname)
        if reply.status == 200 and reply.body.get("status") != "DONE" and self.wait_s:
            time.sleep(self.wait_s)
            with self.lock:
                reply = Reply(200, self._public(self.ops[opname]))
        return reply

    # -- monitoring ------------------------------------------------------------
    @staticmethod
    def _parse_filter(text):
        """A Monitoring filter of `field = "value"` terms joined by AND, as
        {field: value}; None when it is anything else."""
        terms = {}
        for part in re.split(r"\s+AND\s+", text.strip()):
            m = re.fullmatch(r'([a-z_.]+)\s*=\s*"((?:[^"\\]|\\.)*)"', part.strip())
            if not m or m.group(1) not in FILTER_FIELDS or m.group(1) in terms:
                return None
            terms[m.group(1)] = m.group(2)
        return terms

    def time_series(self, req, project):
        err = self._authorized(req, MONITORING_SCOPES)
        if err:
            return err
        q = req["query"]

        def bad(field):
            return Reply(400, error_body(400, "Field %s had an invalid value" % field, "badRequest"))
        terms = self._parse_filter(q["filter"]) if "filter" in q else None
        if terms is None or "metric.type" not in terms:
            return bad("filter")
        end = cloud_time(q.get("interval.endTime"))
        start = cloud_time(q.get("interval.startTime")) if "interval.startTime" in q else end
        if end is None or start is None or start > end:
            return bad("interval")
        period = q.get("aggregation.alignmentPeriod")
        aligner = q.get("aggregation.perSeriesAligner", "ALIGN_NONE")
        reducer = q.get("aggregation.crossSeriesReducer", "REDUCE_NONE")
        if period is not None and (not re.fullmatch(r"\d+s", period) or int(period[:-1]) < 60):
            return bad("aggregation.alignmentPeriod")
        if aligner not in ("ALIGN_NONE", "ALIGN_MEAN") or (aligner != "ALIGN_NONE" and period is None):
            return bad("aggregation.perSeriesAligner")
        if reducer not in ("REDUCE_NONE", "REDUCE_MEAN") or (reducer != "REDUCE_NONE" and aligner == "ALIGN_NONE"):
            return bad("aggregation.crossSeriesReducer")
        view = q.get("view", "FULL")
        if view not in ("FULL", "HEADERS"):
            return bad("view")
        try:
            page_size = int(q.get("pageSize") or 100000)
            offset = int(q.get("pageToken") or 0)
        except ValueError:
            return bad("pageSize")
        if page_size <= 0:
            return bad("pageSize")
        series = []
        want_group = terms.get("metadata.system_labels.instance_group")
        if (terms["metric.type"] == "compute.googleapis.com/instance/cpu/utilization"
                and terms.get("resource.type", "gce_instance") == "gce_instance"
                and terms.get("resource.labels.project_id", project) == project):
            for group, values in sorted(self.cpu.items()):
                if want_group is not None and group != want_group:
                    continue
                # The newest minute up to the request's end, not the
                # clock's: a minute that turns between the caller's
                # reading of the clock and this one must not hide the
                # newest point (nor change it between two pages).
                now = int(min(time.time(), end) - self.cpu_lag_s) // 60 * 60
                # Two instances whose mean is the group's value: only the
                # reducer gives that value as one series.
                per = []
                for k, v in enumerate(values):
                    t = now - 60 * k
                    if start <= t <= end:
                        d = min(v, 1 - v) / 2 if 0 <= v <= 1 else 0
                        per.append((t, v - d, v + d, v))
                for n, idx in ((0, 1), (1, 2)) if reducer == "REDUCE_NONE" else ((None, 3),):
                    pts = [{"interval": {"startTime": iso_z(t[0]), "endTime": iso_z(t[0])},
                            "value": {"doubleValue": t[idx]}} for t in per]
                    labels = {"project_id": project}
                    if n is not None:
                        labels.update(instance_id=str(4 * 10**18 + n), zone="europe-west1-b")
                    series.append({"metric": {"type": terms["metric.type"]},
                                   "resource": {"type": "gce_instance", "labels": labels},
                                   "metricKind": "GAUGE", "valueType": "DOUBLE", "points": pts,
                                   "unit": "10^2.%"})
        series = [x for x in series if x["points"]]
        body = {"unit": "10^2.%"}
        if view == "HEADERS":
            for x in series:
                del x["points"]
            page, nxt = series[offset:offset + page_size], offset + page_size
            more = nxt < len(series)
        else:
            # With FULL, pageSize counts points; a page ends inside a series.
            page, count, pos, more = [], 0, 0, False
            for x in series:
                pts = []
                for p in x["points"]:
                    if pos >= offset:
                        if count == page_size:
                            more = True
                            break
                        pts.append(p)
                        count += 1
                    pos += 1
                if pts:
                    page.append(dict(x, points=pts))
                if more:
                    break
            nxt = offset + count
        if page:
            body["timeSeries"] = page
        if more:
            body["nextPageToken"] = str(nxt)
        return Reply(200, body)


def iso_z(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def cloud_time(s):
    """RFC 3339 UTC time as epoch seconds, or None."""
    if not s:
        return None
    m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?Z", s)
    if not m:
        return None
    import calendar
    return calendar.timegm(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S"))

if __name__ == "__main__":
    def make(latency):
        emu = GceEmulator(latency)
        emu.token_lifetime = 3600
        return emu

    run_main(make, sys.argv[1:])
