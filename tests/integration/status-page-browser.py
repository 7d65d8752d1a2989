#!/usr/bin/env python3
"""Loads the status page in headless Chromium and checks what a person sees.

Drives Chromium over the DevTools protocol on a pipe (--remote-debugging-pipe:
it reads commands on fd 3 and writes answers on fd 4, each a JSON text ended
by a NUL byte), with the standard library only. Every check polls the page
until its condition holds or a deadline passes, and fails at once when the
daemon (--daemon-pid) is gone.

Prints one line per check, "ok|DESCRIPTION" or "not ok|DESCRIPTION", for the
calling test to count; exits 0 when all passed.

    status-page-browser.py --url URL --group NAME --daemon-pid PID
        --screenshot OUT.png [--then CMD] [--expect-desired N] [--expect-actions scale_out,scale_in]

The first line is "planned|N", the number of checks to come.
"""
import argparse
import base64
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time


class Browser:
    def __init__(self, binary, width, height):
        self.profile = tempfile.mkdtemp(prefix="autoscaled-chromium.")
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()

        def fds():
            # Chromium expects the pipe's two ends as fd 3 and fd 4; moved
            # out of the way first, as either may be 3 or 4 already.
            r = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10)
            w = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)
            os.dup2(r, 3)
            os.dup2(w, 4)

        args = [binary, "--headless", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
                "--disable-extensions", "--disable-background-networking", "--disable-dev-shm-usage",
                "--remote-debugging-pipe", "--user-data-dir=" + self.profile,
                "--window-size=%d,%d" % (width, height), "about:blank"]
        if os.geteuid() == 0:
            # Chromium's sandbox refuses to run as root.
            args.insert(1, "--no-sandbox")
        self.proc = subprocess.Popen(args, preexec_fn=fds, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     close_fds=True, pass_fds=(3, 4))
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buf = b""
        self.next_id = 0
        self.session = None
        self.requests = []  # every URL the page asked for (Network.requestWillBeSent)

    def close(self):
        try:
            self.proc.kill()
            self.proc.wait(10)
        finally:
            os.close(self.to_chrome)
            os.close(self.from_chrome)
            shutil.rmtree(self.profile, ignore_errors=True)

    def _read_message(self, deadline):
        import select
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("Chromium did not answer")
            ready, _, _ = select.select([self.from_chrome], [], [], left)
            if ready:
                chunk = os.read(self.from_chrome, 1 << 20)
                if not chunk:
                    raise EOFError("Chromium closed its pipe")
                self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, timeout=60, session=True):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self.to_chrome, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            m = self._read_message(deadline)
            if m.get("method") == "Network.requestWillBeSent":
                self.requests.append(m["params"]["request"]["url"])
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m.get("result", {})

    def open(self, url):
        target = self.call("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True},
                                 session=False)["sessionId"]
        self.call("Page.enable")
        self.call("Network.enable")
        self.call("Page.navigate", {"url": url})

    def eval(self, expression):
        r = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in r:
            raise RuntimeError("the page threw: %s" % r["exceptionDetails"].get("text"))
        return r["result"].get("value")


# What a person would read off the page, gathered in one evaluation.
LOOK = r"""(() => {
  const q = s => Array.from(document.querySelectorAll(s));
  const rows = q('#groups-rows tr').map(tr => ({group: tr.dataset.group,
      cells: Array.from(tr.cells).map(td => td.textContent)}));
  const charts = q('figure[data-chart]').map(f => ({title: f.dataset.chart,
      points: Array.from(f.querySelectorAll('polyline')).map(p => ({cls: p.getAttribute('class'), n: +p.dataset.points})),
      actions: f.querySelectorAll('.action').length,
      scale_out: f.querySelectorAll('.action.scale_out').length,
      scale_in: f.querySelectorAll('.action.scale_in').length}));
  const history = q('#history-rows tr').map(tr => ({cls: tr.className,
      cells: Array.from(tr.cells).map(td => td.textContent)}));
  return {rows, charts, history, updated: (document.getElementById('updated') || {}).textContent,
          historyVisible: !document.getElementById('history').hidden,
          scrollWidth: document.documentElement.scrollWidth, width: window.innerWidth};
})()"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--daemon-pid", type=int, required=True)
    ap.add_argument("--screenshot", required=True)
    ap.add_argument("--then", help="a shell command that changes the load")
    ap.add_argument("--expect-desired", type=int,
                    help="the desired count of a scale-out after --then; without it, the load changes by itself")
    ap.add_argument("--expect-actions", default="scale_out",
                    help="the actions (scale_out, scale_in; comma-separated) that must appear while watching")
    ap.add_argument("--timeout", type=float, default=90)
    ap.add_argument("--chromium", default="chromium")
    a = ap.parse_args()
    failed = 0

    def report(ok, desc):
        nonlocal failed
        failed += not ok
        print("%s|%s" % ("ok" if ok else "not ok", desc), flush=True)

    def wait(desc, cond, b):
        deadline = time.monotonic() + a.timeout
        last = None
        while time.monotonic() < deadline:
            if not os.path.exists("/proc/%d" % a.daemon_pid):
                report(False, desc + " (the daemon died)")
                return None
            try:
                last = b.eval(LOOK)
                if cond(last):
                    report(True, desc)
                    return last
            except (RuntimeError, TimeoutError) as e:
                last = str(e)
            time.sleep(0.25)
        report(False, desc + " (last seen: %s)" % json.dumps(last)[:1500])
        return None

    expect = [x for x in a.expect_actions.split(",") if x]
    planned = 7 + len(expect) + (a.expect_desired is not None)
    print("planned|%d" % planned, flush=True)
    b = Browser(a.chromium, 1100, 1400)
    try:
        b.open(a.url)
        g = a.group

        def row_of(v):
            return next((r for r in v["rows"] if r["group"] == g), None)

        def capacity(v):
            return next((c for c in v["charts"] if c["title"] == g + ": capacity"), None)

        v = wait("the groups table has a row for %s with its counts and bounds" % g,
                 lambda v: row_of(v) is not None and row_of(v)["cells"][1].strip().isdigit()
                 and row_of(v)["cells"][3].strip().isdigit(), b)
        v = wait("the script drew a capacity chart and a signal chart with data points",
                 lambda v: capacity(v) is not None
                 and any(p["cls"] == "current" and p["n"] >= 2 for p in capacity(v)["points"])
                 and any(c["title"] != g + ": capacity" and any(p["cls"] == "value" and p["n"] >= 2
                                                               for p in c["points"]) for c in v["charts"]), b)
        before = capacity(v) if v else {"scale_out": 0, "scale_in": 0}
        v = wait("the decision history is shown", lambda v: v["historyVisible"] and len(v["history"]) >= 2, b)
        if a.then:
            subprocess.run(a.then, shell=True, check=True)
        for kind in expect:
            word = kind.replace("_", "-")
            if a.expect_desired is not None and kind == "scale_out":
                want = "\u2192%d" % a.expect_desired
                desc = "after the load changes, a new %s is marked on the chart and in the history (to %d)" % (
                    word, a.expect_desired)
            else:
                want = ""
                desc = "as the load changes, a new %s is marked on the chart and in the history" % word
            wait(desc, lambda v: capacity(v) is not None and capacity(v)[kind] > before[kind]
                 and any(h["cls"] == "decision " + kind and h["cells"][4].endswith(want) for h in v["history"]), b)
        if a.expect_desired is not None:
            wait("the table follows: desired is %d" % a.expect_desired,
                 lambda v: row_of(v) is not None and row_of(v)["cells"][2].strip() == str(a.expect_desired), b)
        b.eval("(() => { const s = document.getElementById('f-action'); s.value = 'scale_out';"
               " s.dispatchEvent(new Event('change')); })()")
        wait("the action filter leaves only scale-outs in the history",
             lambda v: len(v["history"]) >= 1 and all(h["cls"] == "decision scale_out" for h in v["history"]), b)
        b.eval("(() => { const s = document.getElementById('f-action'); s.value = '';"
               " s.dispatchEvent(new Event('change')); })()")
        shot = b.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
        with open(a.screenshot, "wb") as f:
            f.write(base64.b64decode(shot["data"]))
        report(os.path.getsize(a.screenshot) > 10000, "a screenshot was taken (%s, %d bytes)"
               % (a.screenshot, os.path.getsize(a.screenshot)))
        origin = "/".join(a.url.split("/")[:3]) + "/"
        away = [u for u in b.requests if not u.startswith(origin)]
        report(len(b.requests) > 3 and not away, "the page asked only its daemon for anything (%d requests%s)"
               % (len(b.requests), ", not: " + " ".join(away[:3]) if away else ""))
        # A phone: the page fits its width (wide tables scroll in their box).
        b.call("Emulation.setDeviceMetricsOverride", {"width": 390, "height": 800, "deviceScaleFactor": 2,
                                                     "mobile": True})
        wait("on a phone's width the page does not scroll sideways",
             lambda v: v["width"] <= 400 and v["scrollWidth"] <= v["width"], b)
    except Exception as e:  # Chromium gone or the protocol failed: a failure, with the reason.
        report(False, "the browser session: %s: %s" % (type(e).__name__, e))
    finally:
        b.close()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
