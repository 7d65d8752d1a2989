#!/usr/bin/env python3
"""The daemon's metrics endpoint shows what the azure-vmss driver learns from
Azure: the throttling budgets of the x-ms-ratelimit-remaining-* headers the
emulator sends (per subscription and per resource policy), the retries a
429 caused and the API errors, labelled with the group and the driver.
One daemon serves all the tests, in order. Prints TAP."""
import os
import re
import sys
import time
import urllib.request

top_srcdir = os.environ.get("top_srcdir", ".")
sys.path.insert(0, os.path.join(top_srcdir, "tests", "helpers"))
from cloudtest import Tap, check, free_port, start_daemon, stop, tempdir, wait_for  # noqa: E402
from azure import AzureEmulator  # noqa: E402

VMSS = r"/subscriptions/sub1/resourceGroups/rg1/providers/Microsoft\.Compute/virtualMachineScaleSets/web$"
CONF = """groups = ( {
    name = "vmss";
    driver = "azure-vmss";
    driver_options = { subscription = "sub1"; resource_group = "rg1"; name = "web"; arm_base = "%(url)s";
                       credentials = "managed_identity"; imds_base = "%(url)s"; retry_base = "50ms";
                       retry_max = "2s"; poll_interval = "100ms"; };
    interval = "1s";
    min = 2; max = 4; default = 2;
    signals = ( { name = "queue"; source = "exec"; type = "average"; target = 5.0;
                  aggregation = "last"; window = "2s"; poll_interval = "1s"; staleness = "4s";
                  source_options = { command = [ "/bin/cat", "%(load)s" ]; }; } );
  } );
"""
tap = Tap()


class Daemon:
    """One daemon on one Azure scale set, with its metrics endpoint; the
    first GET of the scale set is throttled once, with budgets of its own,
    and retried after a second."""

    def __init__(self):
        self.tmp = tempdir()
        d = self.tmp.name
        self.az = AzureEmulator()
        self.az.step_s = 0.5
        url = self.az.start()
        self.az.add_set("sub1", "rg1", "web", 2, "Uniform")
        self.start_reads = self.az.reads
        self.az.add_fault("GET", VMSS, 429, times=1, headers={
            "Retry-After": "1", "x-ms-ratelimit-remaining-subscription-reads": "0",
            "x-ms-ratelimit-remaining-resource": "Microsoft.Compute/GetVMScaleSet3Min;0"},
            body={"error": {"code": "TooManyRequests", "message": "The request is being throttled."}})
        self.load = os.path.join(d, "load")
        self.set_load(0)
        port = free_port()
        self.metrics_url = "http://127.0.0.1:%d/metrics" % port
        conf = os.path.join(d, "autoscaled.conf")
        with open(conf, "w") as f:
            f.write('agent = { state_directory = "%s/state"; metrics_listen = "127.0.0.1:%d"; };\n' % (d, port))
            f.write(CONF % {"url": url, "load": self.load})
        self.log_path = os.path.join(d, "daemon.log")
        self.proc = start_daemon(conf, self.log_path)
        self.rc = None

    def set_load(self, n):
        with open(self.load, "w") as f:
            f.write("%d\n" % n)

    def scrape(self):
        try:
            with urllib.request.urlopen(self.metrics_url, timeout=5) as r:
                return r.read().decode()
        except OSError:
            return ""

    def wait_sample(self, name, bucket, want, timeout):
        """Scrapes until the sample is `want` (any value when None); returns
        the last value seen and the text."""
        got = {}

        def seen():
            got["text"] = self.scrape()
            got["v"] = sample(got["text"], name, bucket)
            return got["v"] is not None and (want is None or got["v"] == want)
        wait_for(seen, timeout)
        return got["v"], got["text"]

    def log_tail(self):
        with open(self.log_path) as f:
            return "\n".join(f.read().splitlines()[-30:])

    def stop(self):
        if self.rc is None:
            self.rc = stop(self.proc)
            self.az.stop()
        return self.rc


def sample(text, name, bucket=None):
    """The value of group vmss's series of `name` (and `bucket`), or None."""
    want = 'group="vmss",driver="azure-vmss"' + (',bucket="%s"' % bucket if bucket else "")
    m = re.search(r"^%s\{%s\} (\S+)$" % (re.escape(name), re.escape(want)), text, re.M)
    return float(m.group(1)) if m else None


D = None
BUDGET = "autoscaled_driver_ratelimit_remaining"


@tap.test
def budgets(_):
    """the resource and read budgets the emulator sent reach /metrics as gauges"""
    # Past the throttled reply: a later one carried the emulator's budgets.
    v, text = D.wait_sample(BUDGET, "Microsoft.Compute/GetVMScaleSet3Min", 197, 20)
    check(v == 197, "the 3-minute resource budget is 197", v, text[-1500:], D.log_tail())
    check("# TYPE %s gauge" % BUDGET in text, "declared a gauge")
    # The emulator sends each policy on a header line of its own: both count.
    check(sample(text, BUDGET, "Microsoft.Compute/GetVMScaleSet30Min") == 1297, "the 30-minute budget is 1297",
          text[-1500:])
    check(sample(text, BUDGET, "subscription-global-reads") is not None, "the global read budget is exported",
          text[-1500:])
    reads = sample(text, BUDGET, "subscription-reads")
    check(reads is not None and D.az.reads <= reads < D.start_reads, "the read budget is one the emulator sent",
          reads, D.start_reads, D.az.reads)


@tap.test
def retries(_):
    """the one 429 counts one retry and no API error"""
    text = D.scrape()
    check(sample(text, "autoscaled_driver_retries_total") == 1, "one retry",
          sample(text, "autoscaled_driver_retries_total"))
    check("# TYPE autoscaled_driver_retries_total counter" in text, "declared a counter")
    check(sample(text, "autoscaled_driver_api_errors_total") == 0, "no API error")


@tap.test
def writes(_):
    """a scale-out's PATCH brings the write budget"""
    D.set_load(15)
    v, text = D.wait_sample(BUDGET, "subscription-writes", None, 20)
    check(v == 1199, "the write budget is 1199", v, text[-1500:], D.log_tail())
    check(sample(text, BUDGET, "subscription-global-writes") == 2399, "the global write budget is 2399",
          text[-1500:])


def wait_log(pattern, timeout):
    """The first line of the daemon's log matching pattern, waited for."""
    deadline = time.time() + timeout
    while True:
        with open(D.log_path) as f:
            line = next((x for x in f if re.search(pattern, x)), None)
        if line is not None or time.time() > deadline:
            return line
        time.sleep(0.2)


@tap.test
def throttled_scale_out_holds(_):
    """a scale-out throttled for minutes: the decision record says until when; no PATCH before then"""
    D.az.throttle(300, methods={"PATCH", "POST"})
    start = time.time()
    D.set_load(20)
    line = wait_log(r"scale out 3 -> 4; last scale-out failed: .*throttled until", 20)
    check(line is not None, "a decision record says the scale-out is throttled until a time", D.log_tail())
    # Several more cycles: none may send a write before the time named.
    time.sleep(3)
    writes = [r for r in D.az.find(None, "^/subscriptions/") if r["time"] >= start and r["method"] != "GET"]
    check(len(writes) == 1 and writes[0]["status"] == 429, "one throttled write, then none",
          [(r["method"], r["path"], r["status"]) for r in writes])


@tap.test
def throttled_observe_holds(_):
    """reads throttled for minutes: the group holds, the log says until when, no read before then"""
    D.az.throttle(300)
    start = time.time()
    line = wait_log(r"observe failed: .*throttled until .*holding", 20)
    check(line is not None, "the hold says throttled until", D.log_tail())
    time.sleep(3)
    calls = [r for r in D.az.find(None, "^/subscriptions/") if r["time"] >= start]
    check(len(calls) == 1 and calls[0]["status"] == 429, "one throttled call, then none",
          [(r["method"], r["path"], r["status"]) for r in calls])
    check(D.proc.poll() is None, "the daemon runs on", D.log_tail())


@tap.test
def stops(_):
    """the daemon stops cleanly"""
    rc = D.stop()
    check(rc == 0, "exit status 0", rc, D.log_tail())


if __name__ == "__main__":
    D = Daemon()
    try:
        status = tap.run()
    finally:
        D.stop()
    sys.exit(status)
