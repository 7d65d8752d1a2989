#!/usr/bin/env python3
"""The daemon's metrics endpoint shows what the azure-vmss driver learns from
Azure: the throttling budgets of the x-ms-ratelimit-remaining-* headers the
emulator sends (per subscription and per resource policy), the retries a
429 caused and the API errors, labelled with the group and the driver.
Prints TAP."""
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request

top_srcdir = os.environ.get("top_srcdir", ".")
sys.path.insert(0, os.path.join(top_srcdir, "tests", "cloud"))
from cloudtest import tempdir  # noqa: E402
from azure import AzureEmulator  # noqa: E402

DAEMON = os.environ.get("AUTOSCALED", "./autoscaled")
VMSS = r"/subscriptions/sub1/resourceGroups/rg1/providers/Microsoft\.Compute/virtualMachineScaleSets/web$"
results = []


def check(cond, name, detail=""):
    results.append((bool(cond), name, detail))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.read().decode()
    except OSError:
        return ""


def sample(text, name, bucket=None):
    """The value of group vmss's series of `name` (and `bucket`), or None."""
    want = 'group="vmss",driver="azure-vmss"' + (',bucket="%s"' % bucket if bucket else "")
    m = re.search(r"^%s\{%s\} (\S+)$" % (re.escape(name), re.escape(want)), text, re.M)
    return float(m.group(1)) if m else None


def main():
    tmp = tempdir()
    d = tmp.name
    az = AzureEmulator()
    az.step_s = 0.5
    aurl = az.start()
    az.add_set("sub1", "rg1", "web", 2, "Uniform")
    start_reads = az.reads
    # The first GET of the scale set is throttled once, with budgets of its
    # own; the daemon retries after a second.
    az.add_fault("GET", VMSS, 429, times=1, headers={
        "Retry-After": "1", "x-ms-ratelimit-remaining-subscription-reads": "0",
        "x-ms-ratelimit-remaining-resource": "Microsoft.Compute/GetVMScaleSet3Min;0"},
        body={"error": {"code": "TooManyRequests", "message": "The request is being throttled."}})
    load = os.path.join(d, "load")
    with open(load, "w") as f:
        f.write("0\n")
    port = free_port()
    conf = os.path.join(d, "autoscaled.conf")
    with open(conf, "w") as f:
        f.write('agent = { state_directory = "%s/state"; metrics_listen = "127.0.0.1:%d"; };\n' % (d, port))
        f.write("""groups = ( {
    name = "vmss";
    driver = "azure-vmss";
    driver_options = { subscription = "sub1"; resource_group = "rg1"; name = "web"; arm_base = "%s";
                       credentials = "managed_identity"; imds_base = "%s"; retry_base = "50ms";
                       retry_max = "2s"; poll_interval = "100ms"; };
    interval = "1s";
    min = 2; max = 4; default = 2;
    signals = ( { name = "queue"; source = "exec"; type = "average"; target = 5.0;
                  aggregation = "last"; window = "2s"; poll_interval = "1s"; staleness = "4s";
                  source_options = { command = [ "/bin/cat", "%s" ]; }; } );
  } );
""" % (aurl, aurl, load))
    log_path = os.path.join(d, "daemon.log")
    log = open(log_path, "w")
    proc = subprocess.Popen([DAEMON, "-f", "-c", conf], stdout=log, stderr=subprocess.STDOUT)
    url = "http://127.0.0.1:%d/metrics" % port
    text = ""
    try:
        deadline = time.time() + 20
        while time.time() < deadline:
            text = scrape(url)
            # Past the throttled reply: a later one carried the emulator's
            # normal budgets.
            if sample(text, "autoscaled_driver_ratelimit_remaining", bucket="Microsoft.Compute/GetVMScaleSet3Min") == 197:
                break
            time.sleep(0.2)
        check("# TYPE autoscaled_driver_ratelimit_remaining gauge" in text, "the budget family is declared a gauge")
        check(sample(text, "autoscaled_driver_ratelimit_remaining", bucket="Microsoft.Compute/GetVMScaleSet3Min") == 197, "the 3-minute resource budget the emulator sent (197)", text[-2000:])
        check(sample(text, "autoscaled_driver_ratelimit_remaining", bucket="Microsoft.Compute/GetVMScaleSet30Min") == 1297, "the 30-minute resource budget the emulator sent (1297)")
        reads = sample(text, "autoscaled_driver_ratelimit_remaining", bucket="subscription-reads")
        check(reads is not None and az.reads <= reads < start_reads,
              "the subscription's read budget is one the emulator sent (%s, sent %d..%d)"
              % (reads, start_reads - 1, az.reads))
        check(sample(text, "autoscaled_driver_retries_total") == 1,
              "one retry counted for the one 429", sample(text, "autoscaled_driver_retries_total"))
        check(sample(text, "autoscaled_driver_api_errors_total") == 0, "no API error counted")
        # A scale-out writes: the write budget appears.
        with open(load, "w") as f:
            f.write("15\n")
        deadline = time.time() + 20
        writes = None
        while time.time() < deadline and writes is None:
            time.sleep(0.3)
            text = scrape(url)
            writes = sample(text, "autoscaled_driver_ratelimit_remaining", bucket="subscription-writes")
        check(writes == 1199, "the write budget after a scale-out (1199)", writes)
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
        az.stop()
        log.close()
    check(proc.returncode == 0, "the daemon stops cleanly", proc.returncode)
    print("1..%d" % len(results))
    for i, (good, name, detail) in enumerate(results, 1):
        print("%s %d - %s" % ("ok" if good else "not ok", i, name))
        if not good:
            print("#   %s" % detail)
    if any(not r[0] for r in results):
        with open(log_path) as f:
            for line in f.read().splitlines()[-40:]:
                print("# " + line)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
