"""Emulator of the Azure APIs autoscaled uses (cloud-apis.md sections 4-6):
scale set GET/PATCH, POST /delete, the VM lists with instance views and
nextLink paging, both long-running operation styles, the client-credentials
and IMDS token endpoints, and Azure Monitor metrics.

VMs go Creating -> Running `step_s` seconds after a capacity change; deleted
VMs stay Deleting for `step_s`. Operations need `op_polls` polls, or, when
`op_s` is set, end on their own that many seconds after they started, as
Azure's do whether anyone polls or not (a client that died mid-operation
leaves the set busy until then). PATCH
answers in `patch_style` ("async": 201 + Azure-AsyncOperation, "location":
202 + Location) and /delete in `delete_style`. Settings for tests: op_fail
(the next operations end Failed with this error), op_stuck, page_cap,
token_lifetime, retry_after (sent on 202 and operation polls), throttle(s,
policy) (every ARM call answers 429 with a Retry-After of the seconds left,
until then), audiences (the resources tokens may be asked for).

Documented behaviours implemented, refused as the real API refuses them:
- `{vmss}/virtualMachines?$expand=instanceView` on a Flexible set: 400
  OperationNotAllowed "Operation 'VirtualMachineScaleSets.virtualMachines.GET'
  is not allowed on Virtual Machine Scale Set '...'"; without the expand it
  is served. A Flexible set's VMs are plain VMs of the resource group
  (Virtual Machines - List, `$filter='virtualMachineScaleSet/id' eq '<id>'`,
  `$expand=instanceView` only with that filter, nextLink paging), with no
  instanceId: /delete takes their names.
- One x-ms-ratelimit-remaining-resource header line per policy, with
  ...-subscription-reads/writes and ...-subscription-global-reads/writes.
- 429 TooManyRequests with a Retry-After of minutes (a 30-minute policy)
  and the exhausted policy at 0.
- api-version is required (400); If-Match with a stale etag is a 412;
  a PATCH or /delete while an operation runs is a 409.
- Tokens carry their audience: the login endpoint takes only
  scope=<audience>/.default and IMDS only resource=<audience> of a known
  audience (400 invalid_scope / invalid_resource); ARM refuses a token of
  another audience (401). IMDS wants `Metadata: true`.
- Replies carry fields the driver does not know, and leave out optional
  ones (zones of a set that is not zonal).

- Autoscale Settings - List By Subscription (Microsoft.Insights), with
  nextLink paging and targetResourceUri in lower case (add_autoscale).

Not implemented: the scale set's own instanceView route, per-VM
instanceView and GET, the VM model (PUT), upgrade policies, autoscale
setting profiles and rules (listed, never applied), real token signatures and
tenants beyond the secret table, the read/write budgets actually running
out (throttling is set by tests), Azure Monitor dimensions, interval and
aggregation other than PT1M Average."""

import os
import re
import secrets
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from emulator import Emulator, Reply, run_main  # noqa: E402

VMSS = r"/subscriptions/([^/]+)/resourceGroups/([^/]+)/providers/Microsoft\.Compute/virtualMachineScaleSets/([^/]+)"


def arm_error(status, code, message):
    return Reply(status, {"error": {"code": code, "message": message, "target": None, "details": []}})


def iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%07dZ" % int((t % 1) * 10**7)


class AzureEmulator(Emulator):
    def __init__(self, latency_ms=0):
        super().__init__(latency_ms)
        self.sets = {}
        self.ops = {}
        self.tokens = {}
        self.step_s = 0.3
        self.op_polls = 3
        self.op_s = None
        self.op_fail = None
        self.op_stuck = False
        self.page_cap = 2
        self.token_lifetime = 3600
        self.retry_after = "0"
        self.patch_style = "async"
        self.delete_style = "location"
        self.secrets = {}
        self.cpu = {}
        self.reads = 12000
        self.autoscale = []
        self.throttle_until = 0
        self.throttle_methods = None
        self.throttle_policy = "Microsoft.Compute/GetVMScaleSet30Min"
        self.audiences = {"https://management.azure.com"}
        self.serial = 0
        self.route("GET", VMSS, self.vmss_get)
        self.route("PATCH", VMSS, self.vmss_patch)
        self.route("POST", VMSS + r"/delete", self.vmss_delete)
        self.route("GET", VMSS + r"/virtualMachines", self.vm_list)
        self.route("GET", r"/subscriptions/([^/]+)/resourceGroups/([^/]+)/providers/Microsoft\.Compute/virtualMachines",
                   self.rg_vm_list)
        self.route("GET", VMSS + r"/providers/Microsoft\.Insights/metrics", self.metrics)
        self.route("GET", r"/subscriptions/([^/]+)/providers/Microsoft\.Compute/locations/([^/]+)/operations/([^/]+)",
                   self.op_async)
        self.route("GET", r"/subscriptions/([^/]+)/providers/Microsoft\.Compute/locations/([^/]+)/operationResults/([^/]+)",
                   self.op_location)
        self.route("GET", r"/subscriptions/([^/]+)/providers/Microsoft\.Insights/autoscalesettings", self.autoscale_list)
        self.route("POST", r"/([^/]+)/oauth2/v2\.0/token", self.login_token)
        self.route("GET", r"/metadata/identity/oauth2/token", self.imds_token)

    # -- set-up ------------------------------------------------------------
    def add_set(self, sub, rg, name, size=0, mode="Uniform", zonal=True):
        s = {"key": (sub, rg, name), "mode": mode, "capacity": 0, "vms": [], "etag": 1, "busy": None,
             "next_id": 0, "zonal": zonal}
        self.sets[(sub, rg, name)] = s
        self._grow(s, size, time.time() - 3600)
        return s

    def setup(self, conf):
        for sconf in conf.get("sets", []):
            self.add_set(*sconf)
        for k, v in conf.get("secrets", {}).items():
            self.secrets[k] = v
        for k in ("step_s", "op_polls", "op_s", "page_cap", "retry_after"):
            if k in conf:
                setattr(self, k, conf[k])

    def _grow(self, s, n, created=None):
        for _ in range(n):
            self.serial += 1
            if s["mode"] == "Uniform":
                iid = str(s["next_id"])
                s["next_id"] += 1
                vname = "%s_%s" % (s["key"][2], iid)
            else:
                iid = vname = "%s_%s" % (s["key"][2], secrets.token_hex(4))
            s["vms"].append({"instanceId": iid, "name": vname, "zone": str(1 + self.serial % 3),
                             "created": created if created is not None else time.time(), "deleting": None})
        s["capacity"] += n
        s["etag"] += 1

    def _expire(self, s):
        now = time.time()
        s["vms"] = [v for v in s["vms"] if v["deleting"] is None or now - v["deleting"] < self.step_s]

    def _vm_state(self, v):
        now = time.time()
        if v["deleting"] is not None:
            return "Deleting", ["ProvisioningState/deleting", "PowerState/stopping"]
        if now - v["created"] < self.step_s:
            return "Creating", ["ProvisioningState/creating", "PowerState/starting"]
        return "Succeeded", ["ProvisioningState/succeeded", "PowerState/running"]

    def _headers(self, write=False):
        self.reads -= 1
        # Compute sends one x-ms-ratelimit-remaining-resource line per
        # policy; ARM's token buckets add the global budgets.
        h = {"x-ms-ratelimit-remaining-subscription-reads": str(self.reads),
             "x-ms-ratelimit-remaining-subscription-global-reads": str(self.reads * 2),
             "x-ms-ratelimit-remaining-resource": ["Microsoft.Compute/GetVMScaleSet3Min;197",
                                                   "Microsoft.Compute/GetVMScaleSet30Min;1297"],
             "x-ms-request-id": secrets.token_hex(16)}
        if write:
            h["x-ms-ratelimit-remaining-subscription-writes"] = "1199"
            h["x-ms-ratelimit-remaining-subscription-global-writes"] = "2399"
        return h

    # -- auth ----------------------------------------------------------------
    def throttle(self, seconds, policy=None, methods=None):
        """Every ARM call (of `methods` only, e.g. {"PATCH", "POST"} for the
        writes budget) answers 429 for `seconds` from now."""
        self.throttle_until = time.time() + seconds
        self.throttle_methods = methods
        if policy:
            self.throttle_policy = policy

    def _issue(self, kind, audience="https://management.azure.com", who=None):
        tok = "eyJ0eXAi.%s.%s" % (kind, secrets.token_urlsafe(24))
        with self.lock:
            self.tokens[tok] = (time.time() + self.token_lifetime, audience.rstrip("/"), who)
        return tok

    def _check_token(self, req):
        auth = req["headers"].get("authorization", "")
        tok = self.tokens.get(auth[7:]) if auth.startswith("Bearer ") else None
        if tok is None or tok[0] < time.time():
            return arm_error(401, "InvalidAuthenticationToken", "The access token is invalid.")
        # Whose call this is, in the request log: the client id the token
        # was issued to (several agents sharing the sets each ask with their
        # own).
        req["who"] = tok[2]
        if tok[1] not in self.audiences:
            return arm_error(401, "InvalidAuthenticationToken", "The access token has been obtained for wrong "
                             "audience or resource '%s'." % tok[1])
        if self.throttle_until > time.time() and (not self.throttle_methods or req["method"] in self.throttle_methods):
            left = int(self.throttle_until - time.time()) + 1
            h = self._headers()
            h["x-ms-ratelimit-remaining-resource"] = [self.throttle_policy + ";0"]
            h["Retry-After"] = str(left)
            return Reply(429, {"error": {"code": "TooManyRequests", "message": "The request is being throttled as "
                                         "the limit has been reached for operation type - Read_30Min. For more "
                                         "information, see - https://aka.ms/vmssthrottling"}}, h)
        if "api-version" not in req["query"]:
            return arm_error(400, "MissingApiVersionParameter",
                             "The api-version query parameter (?api-version=) is required for all requests.")
        return None

    def login_token(self, req, tenant):
        form = dict(urllib.parse.parse_qsl(req["body"]))
        if form.get("grant_type") != "client_credentials":
            return Reply(400, {"error": "unsupported_grant_type", "error_description": "AADSTS70003: grant type"})
        if self.secrets.get((tenant, form.get("client_id"))) != form.get("client_secret"):
            return Reply(401, {"error": "invalid_client", "error_description":
                               "AADSTS7000215: Invalid client secret provided."})
        scope = form.get("scope", "")
        if not scope.endswith("/.default") or scope[:-len("/.default")].rstrip("/") not in self.audiences:
            return Reply(400, {"error": "invalid_scope", "error_description": "AADSTS70011: The provided request "
                               "must include a 'scope' input parameter. The provided value for the input "
                               "parameter 'scope' is not valid. The scope %s is not valid." % scope})
        return Reply(200, {"token_type": "Bearer", "expires_in": self.token_lifetime, "ext_expires_in":
                           self.token_lifetime, "access_token": self._issue("sp", scope[:-len("/.default")],
                                                                   form.get("client_id"))})

    def imds_token(self, req):
        if req["headers"].get("metadata") != "true":
            return Reply(400, {"error": "invalid_request", "error_description": "Required metadata header not specified"})
        if req["query"].get("api-version") != "2018-02-01" or not req["query"].get("resource"):
            return Reply(400, {"error": "invalid_request", "error_description": "bad api-version or resource"})
        if req["query"]["resource"].rstrip("/") not in self.audiences:
            return Reply(400, {"error": "invalid_resource", "error_description": "AADSTS500011: The resource "
                               "principal named %s was not found in the tenant." % req["query"]["resource"]})
        now = int(time.time())
        return Reply(200, {"access_token": self._issue("mi", req["query"]["resource"],
                                                              req["query"].get("client_id")), "refresh_token": "",
                           "expires_in": str(self.token_lifetime), "expires_on": str(now + self.token_lifetime),
                           "not_before": str(now), "resource": req["query"]["resource"], "token_type": "Bearer"})

    def _guard(self, req, sub, rg, name):
        err = self._check_token(req)
        if err:
            return err, None
        s = self.sets.get((sub, rg, name))
        if s is None:
            return arm_error(404, "ResourceNotFound", "The Resource 'Microsoft.Compute/virtualMachineScaleSets/%s' "
                             "under resource group '%s' was not found." % (name, rg)), None
        self._expire(s)
        return None, s

    # -- scale sets ------------------------------------------------------------
    def _busy(self, s):
        op = self.ops.get(s["busy"]) if s["busy"] else None
        if op is not None and self.op_s is not None and op["status"] == "InProgress" and not op["stuck"] \
                and time.time() - op["t0"] >= self.op_s:
            op["status"] = "Failed" if op["fail"] else "Succeeded"
        return op is not None and op["status"] == "InProgress"

    def vmss_get(self, req, sub, rg, name):
        err, s = self._guard(req, sub, rg, name)
        if err:
            return err
        rid = "/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Compute/virtualMachineScaleSets/%s" % (
            sub, rg, name)
        etag = '"%d"' % s["etag"]
        body = {"id": rid, "name": name, "type": "Microsoft.Compute/virtualMachineScaleSets", "location": "westeurope",
                "etag": etag, "sku": {"name": "Standard_D2s_v3", "tier": "Standard", "capacity": s["capacity"]},
                "properties": {"provisioningState": "Updating" if self._busy(s) else "succeeded",
                               "orchestrationMode": s["mode"], "uniqueId": "0000-%s" % name,
                               # Fields the driver does not read.
                               "platformFaultDomainCount": 1, "timeCreated": "2024-01-01T00:00:00.0000000Z",
                               "scaleInPolicy": {"rules": ["Default"], "forceDeletion": False}}}
        if s["zonal"]:
            body["zones"] = ["1", "2", "3"]
        h = self._headers()
        h["ETag"] = etag
        return Reply(200, body, h)

    def _start_op(self, s, sub, style):
        self.serial += 1
        opid = "%08x-0000-4000-8000-%012d" % (self.serial, self.serial)
        op = {"status": "InProgress", "polls": 0, "fail": self.op_fail, "stuck": self.op_stuck,
              "start": iso(time.time()), "t0": time.time()}
        self.ops[opid] = op
        s["busy"] = opid
        base = "http://%s" % self._host
        h = self._headers(True)
        h["Retry-After"] = self.retry_after
        if style == "async":
            h["Azure-AsyncOperation"] = "%s/subscriptions/%s/providers/Microsoft.Compute/locations/westeurope/" \
                                        "operations/%s?p=x&api-version=2024-07-01" % (base, sub, opid)
        else:
            h["Location"] = "%s/subscriptions/%s/providers/Microsoft.Compute/locations/westeurope/" \
                            "operationResults/%s?p=x&api-version=2024-07-01" % (base, sub, opid)
        return op, h

    def _advance(self, opid):
        op = self.ops.get(opid)
        if op is None:
            return None
        if op["status"] == "InProgress" and not op["stuck"]:
            op["polls"] += 1
            if op["polls"] >= self.op_polls:
                op["status"] = "Failed" if op["fail"] else "Succeeded"
        return op

    def vmss_patch(self, req, sub, rg, name):
        err, s = self._guard(req, sub, rg, name)
        if err:
            return err
        if self._busy(s):
            return arm_error(409, "OperationNotAllowed", "Operation 'Update' is not allowed since another operation "
                             "is in progress on scale set '%s'." % name)
        im = req["headers"].get("if-match")
        if im and im != "*" and im != '"%d"' % s["etag"]:
            return arm_error(412, "PreconditionFailed", "The ETag '%s' does not match the resource's current ETag." % im)
        cap = ((req["json"] or {}).get("sku") or {}).get("capacity")
        if not isinstance(cap, int) or cap < 0:
            return arm_error(400, "InvalidParameter", "sku.capacity must be a non-negative integer.")
        target = cap

        def effect():
            live = [v for v in s["vms"] if v["deleting"] is None]
            if target > len(live):
                self._grow(s, target - len(live))
            else:
                for v in sorted(live, key=lambda v: -v["created"])[:len(live) - target]:
                    v["deleting"] = time.time()
                s["capacity"] = target
                s["etag"] += 1
        if self.op_fail is None:
            # The new VMs appear at once, as Creating, like in Azure.
            effect()
        op, h = self._start_op(s, sub, self.patch_style)
        body = self.vmss_get(req, sub, rg, name).body
        body["properties"]["provisioningState"] = "Updating"
        return Reply(201 if self.patch_style == "async" else 202, body if self.patch_style == "async" else None, h)

    def vmss_delete(self, req, sub, rg, name):
        err, s = self._guard(req, sub, rg, name)
        if err:
            return err
        if self._busy(s):
            return arm_error(409, "OperationNotAllowed", "Operation 'Delete' is not allowed since another operation "
                             "is in progress on scale set '%s'." % name)
        ids = (req["json"] or {}).get("instanceIds")
        if not isinstance(ids, list) or not ids:
            return arm_error(400, "InvalidParameter", "instanceIds must be a non-empty list.")
        live = {v["instanceId"]: v for v in s["vms"] if v["deleting"] is None}
        missing = [i for i in ids if i not in live]
        if missing:
            return arm_error(400, "InvalidParameter", "Instance ids %s are not in the scale set." % missing)
        if self.op_fail is None:
            for i in ids:
                live[i]["deleting"] = time.time()
            s["capacity"] -= len(ids)
            s["etag"] += 1
        op, h = self._start_op(s, sub, self.delete_style)
        return Reply(202, None, h)

    def op_async(self, req, sub, loc, opid):
        op = self._advance(opid)
        if op is None:
            return arm_error(404, "OperationNotFound", "no operation %s" % opid)
        body = {"startTime": op["start"], "status": op["status"], "name": opid}
        if op["status"] != "InProgress":
            body["endTime"] = iso(time.time())
        if op["status"] == "Failed":
            body["error"] = op["fail"]
        h = self._headers()
        if op["status"] == "InProgress":
            h["Retry-After"] = self.retry_after
        return Reply(200, body, h)

    def op_location(self, req, sub, loc, opid):
        op = self._advance(opid)
        if op is None:
            return arm_error(404, "OperationNotFound", "no operation %s" % opid)
        h = self._headers()
        if op["status"] == "InProgress":
            h["Retry-After"] = self.retry_after
            # Every other poll names a new Location, as the docs allow.
            if op["polls"] % 2:
                h["Location"] = "http://%s%s?p=%d&api-version=2024-07-01" % (self._host, req["path"], op["polls"])
            return Reply(202, None, h)
        if op["status"] == "Failed":
            return Reply(200, {"startTime": op["start"], "endTime": iso(time.time()), "status": "Failed",
                               "error": op["fail"]}, h)
        return Reply(200, None, h)

    def _vm_row(self, s, v, expand):
        sub, rg, name = s["key"]
        ps, statuses = self._vm_state(v)
        vm = {"location": "westeurope", "tags": {},
              "properties": {"provisioningState": ps, "timeCreated": iso(v["created"]),
                             "hardwareProfile": {"vmSize": "Standard_D2s_v3"}}}
        if s["zonal"]:
            vm["zones"] = [v["zone"]]
        if s["mode"] == "Uniform":
            vm.update(id="/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Compute/virtualMachineScaleSets/%s/"
                      "virtualMachines/%s" % (sub, rg, name, v["instanceId"]), name=v["name"],
                      instanceId=v["instanceId"], type="Microsoft.Compute/virtualMachineScaleSets/virtualMachines")
            vm["properties"]["latestModelApplied"] = True
        else:
            # A Flexible set's VM is an ordinary VM that names its scale set;
            # it has no instanceId (its name is what /delete takes).
            vm.update(id="/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Compute/virtualMachines/%s"
                      % (sub, rg, v["name"]), name=v["name"], type="Microsoft.Compute/virtualMachines")
            vm["properties"]["virtualMachineScaleSet"] = {"id": self._set_id(s)}
            vm["properties"]["vmId"] = "%08x-0000-4000-8000-000000000000" % (hash(v["name"]) & 0xffffffff)
        if expand:
            vm["properties"]["instanceView"] = {"statuses": [{"code": c, "level": "Info"} for c in statuses]}
        return vm

    @staticmethod
    def _set_id(s):
        return "/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Compute/virtualMachineScaleSets/%s" % s["key"]

    def _page(self, req, rows):
        start = int(req["query"].get("$skiptoken") or 0)
        body = {"value": rows[start:start + self.page_cap]}
        if start + self.page_cap < len(rows):
            q = dict(req["query"])
            q["$skiptoken"] = str(start + self.page_cap)
            body["nextLink"] = "http://%s%s?%s" % (self._host, req["rawpath"],
                                                   urllib.parse.urlencode(q, quote_via=urllib.parse.quote))
        return Reply(200, body, self._headers())

    def rg_vm_list(self, req, sub, rg):
        """Virtual Machines - List of a resource group: `$filter` may only be
        'virtualMachineScaleSet/id' eq '<scale set id>' and `$expand=instanceView`
        is allowed only with that filter, as the API documents."""
        err = self._check_token(req)
        if err:
            return err
        flt = req["query"].get("$filter")
        want = None
        if flt is not None:
            m = re.fullmatch(r"'virtualMachineScaleSet/id' eq '([^']+)'", flt)
            if not m:
                return arm_error(400, "InvalidParameter", "The value of parameter $filter is invalid.")
            want = m.group(1).lower()
        expand = req["query"].get("$expand")
        if expand is not None and (expand != "instanceView" or want is None):
            return arm_error(400, "InvalidParameter", "The $expand=instanceView option requires a valid $filter "
                             "on 'virtualMachineScaleSet/id'.")
        rows = []
        for key, s in sorted(self.sets.items()):
            if key[0] != sub or key[1].lower() != rg.lower() or s["mode"] != "Flexible":
                continue
            if want is not None and self._set_id(s).lower() != want:
                continue
            self._expire(s)
            rows.extend(self._vm_row(s, v, expand is not None) for v in s["vms"])
        return self._page(req, rows)

    def add_autoscale(self, sub, rg, name, target_set, enabled=True):
        """An Azure autoscale setting (Microsoft.Insights) targeting a set."""
        self.autoscale.append({"sub": sub, "rg": rg, "name": name, "target": self._set_id(self.sets[target_set]),
                               "enabled": enabled})

    def autoscale_list(self, req, sub):
        """Autoscale Settings - List By Subscription, with nextLink paging."""
        err = self._check_token(req)
        if err:
            return err
        rows = [{"id": "/subscriptions/%s/resourceGroups/%s/providers/microsoft.insights/autoscalesettings/%s" % (
                    a["sub"], a["rg"], a["name"]), "name": a["name"], "type": "Microsoft.Insights/autoscaleSettings",
                 "location": "westeurope", "tags": {},
                 # ARM returns the target as it was written, often lower case.
                 "properties": {"name": a["name"], "enabled": a["enabled"], "targetResourceUri": a["target"].lower(),
                                "profiles": [{"name": "default", "capacity": {"minimum": "1", "maximum": "10",
                                                                              "default": "1"}, "rules": []}],
                                "notifications": []}}
                for a in self.autoscale if a["sub"] == sub]
        return self._page(req, rows)

    def vm_list(self, req, sub, rg, name):
        err, s = self._guard(req, sub, rg, name)
        if err:
            return err
        expand = req["query"].get("$expand") == "instanceView"
        if expand and s["mode"] == "Flexible":
            # The real API refuses it (the list of a set's VMs with their
            # instance views is Uniform-only).
            return arm_error(400, "OperationNotAllowed", "Operation 'VirtualMachineScaleSets.virtualMachines.GET' is "
                             "not allowed on Virtual Machine Scale Set '%s'." % name)
        rows = [self._vm_row(s, v, expand) for v in s["vms"]]
        return self._page(req, rows)

    def metrics(self, req, sub, rg, name):
        err, s = self._guard(req, sub, rg, name)
        if err:
            return err
        if req["query"].get("metricnames") != "Percentage CPU":
            return Reply(400, {"code": "BadRequest", "message": "Failed to find metric configuration"})
        now = int(time.time()) // 60 * 60
        data = []
        values = self.cpu.get(name, [])
        for k in range(len(values), 0, -1):
            t = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - 60 * k))
            v = values[k - 1]
            data.append({"timeStamp": t, "average": v} if v is not None else {"timeStamp": t, "count": 0})
        return Reply(200, {"cost": 0, "timespan": req["query"].get("timespan", ""), "interval": "PT1M",
                           "value": [{"id": "x", "type": "Microsoft.Insights/metrics",
                                      "name": {"value": "Percentage CPU", "localizedValue": "Percentage CPU"},
                                      "unit": "Percent", "errorCode": "Success",
                                      "timeseries": [{"metadatavalues": [], "data": data}]}],
                           "namespace": "Microsoft.Compute/virtualMachineScaleSets"}, self._headers())

    def start(self, port=0):
        url = super().start(port)
        self._host = url.split("//")[1]
        # Tests point arm_base at the emulator: it is an audience too.
        self.audiences.add(url)
        return url


if __name__ == "__main__":
    run_main(AzureEmulator, sys.argv[1:])
