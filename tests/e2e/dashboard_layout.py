"""dashboard_layout.py - the dashboard's plans table laid out by real headless
Chromium at several window widths: every column keeps room for its header,
the Graph column included, and all of them in view (no sideways scrolling),
every cell's text, figure or badge fits within
its cell (only a graph's name may be cut short, with an ellipsis), and a
running row's progress in Solve is shown whole, before Created.

Chromium is driven through the DevTools protocol on a pipe
(--remote-debugging-pipe: JSON messages separated by NUL bytes on file
descriptors 3 and 4), so that the page's own layout can be measured with
getBoundingClientRect after it has rendered the daemon's plans.

    python3 tests/e2e/dashboard_layout.py BASE_URL [--running ID] [--widths 1024,1280,...]

--running: a plan the daemon holds running, whose row must be in the table
with its progress. Prints one line per check; exit 0 when all pass, 1 when one
fails, 2 when the browser cannot be driven.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

# Per window width: the header and each row's cells, with the rectangles of
# their text (a Range over the cell's contents) and of the cells themselves.
MEASURE = r"""
(() => {
  const r = (e) => { const b = e.getBoundingClientRect(); return [b.left, b.right, b.top, b.bottom]; };
  const text = (e) => { const g = document.createRange(); g.selectNodeContents(e);
                        const b = g.getBoundingClientRect(); return [b.left, b.right, b.top, b.bottom]; };
  const head = [...document.querySelectorAll('#plans')].length
    ? [...document.querySelector('#plans').closest('table').querySelectorAll('thead th')] : [];
  const wrap = document.querySelector('.table-wrap');
  return JSON.stringify({
    width: window.innerWidth,
    head: head.map((th) => ({ name: th.textContent.trim(), cell: r(th), text: text(th) })),
    wrap: wrap ? r(wrap) : null,
    rows: [...document.querySelectorAll('#plans tr')].map((tr) => ({
      id: tr.dataset.id,
      cells: [...tr.children].map((td) => ({ cls: td.className, value: td.textContent,
                                             cell: r(td), text: text(td),
                                             clipped: getComputedStyle(td).overflowX !== 'visible' }))
    }))
  });
})()
"""


class Chrome:
    """One headless Chromium, talked to over --remote-debugging-pipe."""

    def __init__(self, width, height):
        self.profile = tempfile.mkdtemp(prefix="mp-dash-layout-")
        to_r, to_w = os.pipe()      # our writes -> its fd 3
        from_r, from_w = os.pipe()  # its fd 4 -> our reads
        exe = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
        if not exe:
            raise RuntimeError("Chromium not found (deploy/deps.sh installs chromium)")

        def fds():
            os.dup2(to_r, 3)
            os.dup2(from_w, 4)

        self.proc = subprocess.Popen(
            [exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-dev-shm-usage", "--user-data-dir=" + self.profile,
             "--window-size=%d,%d" % (width, height), "--remote-debugging-pipe", "about:blank"],
            pass_fds=(3, 4, to_r, from_w), preexec_fn=fds,  # 3 and 4 survive close_fds stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=open(os.path.join(self.profile, "chrome.log"), "wb"))
        os.close(to_r)
        os.close(from_w)
        self.w, self.r = os.fdopen(to_w, "wb", buffering=0), os.fdopen(from_r, "rb", buffering=0)
        self.buf, self.next_id = b"", 0

    def send(self, method, params=None, session=None, timeout=60):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self.w.write(json.dumps(msg).encode() + b"\0")
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            while b"\0" not in self.buf:
                chunk = self.r.read(65536)
                if not chunk:
                    raise RuntimeError("Chromium closed the pipe")
                self.buf += chunk
            raw, self.buf = self.buf.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError("%s: %s" % (method, reply["error"]))
                return reply.get("result", {})
        raise RuntimeError("%s: no answer" % method)

    def close(self):
        try:
            self.w.close()
            self.proc.terminate()
            self.proc.wait(30)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


def check_layout(m, running, say):
    """The checks at one width; say(ok, text) reports each."""
    w = m["width"]
    head = {h["name"]: h for h in m["head"]}
    say("Graph" in head and head["Graph"]["cell"][1] - head["Graph"]["cell"][0] >= 60,
        "%d px: the Graph column is there and at least 60 px wide (%s)"
        % (w, "%.0f px" % (head["Graph"]["cell"][1] - head["Graph"]["cell"][0]) if "Graph" in head else "missing"))
    narrow = [h["name"] for h in m["head"] if h["text"][1] > h["cell"][1] + 0.5 or h["text"][0] < h["cell"][0] - 0.5]
    say(not narrow, "%d px: every header fits its column%s" % (w, " (not: %s)" % ", ".join(narrow) if narrow else ""))
    hidden = [h["name"] for h in m["head"] if m["wrap"] and (h["cell"][1] > m["wrap"][1] + 0.5
                                                            or h["cell"][0] < m["wrap"][0] - 0.5)]
    say(not hidden, "%d px: the whole table is in view, no column scrolled out%s"
        % (w, " (out: %s)" % ", ".join(hidden) if hidden else ""))
    spill = []
    for row in m["rows"]:
        for c in row["cells"]:
            (cl, cr, _, _), (tl, tr, _, _) = c["cell"], c["text"]
            # only a graph's name may be cut short (with an ellipsis, its cell clipping it;
            # the cell's title holds it whole): any other text, figure or badge, fits
            cut_ok = c["clipped"] and "graph" in c["cls"].split()
            if c["value"].strip() and not cut_ok and (tl < cl - 0.5 or tr > cr + 0.5):
                spill.append("%s %s %r (text %.0f-%.0f, cell %.0f-%.0f)" % (row["id"][:8], c["cls"], c["value"],
                                                                              tl, tr, cl, cr))
    say(m["rows"] and not spill, "%d px: %d rows, every cell's text within its cell%s"
        % (w, len(m["rows"]), ": " + "; ".join(spill[:4]) if spill else ""))
    if running:
        row = next((r for r in m["rows"] if r["id"] == running), None)
        solve = next((c for c in row["cells"] if "solve" in c["cls"].split()), None) if row else None
        when = next((c for c in row["cells"] if "when" in c["cls"].split()), None) if row else None
        ok = bool(solve and when and solve["value"].strip() and solve["text"][1] <= when["cell"][0] + 0.5)
        say(ok, "%d px: the running row's Solve (%r) ends before Created begins"
            % (w, solve["value"] if solve else None))


def main(argv):
    base, running, widths = None, None, [1024, 1280, 1440, 800]
    args = argv[1:]
    while args:
        a = args.pop(0)
        if a == "--running":
            running = args.pop(0)
        elif a == "--widths":
            widths = [int(x) for x in args.pop(0).split(",")]
        else:
            base = a.rstrip("/")
    if not base:
        print(__doc__, file=sys.stderr)
        return 2
    fails = []

    def say(ok, text):
        print(("ok   - " if ok else "FAIL - ") + text)
        if not ok:
            fails.append(text)

    try:
        chrome = Chrome(widths[0], 800)
    except (RuntimeError, OSError) as e:
        print("dashboard_layout: %s" % e, file=sys.stderr)
        return 2
    try:
        target = chrome.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = chrome.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        chrome.send("Page.enable", session=session)
        chrome.send("Page.navigate", {"url": base + "/"}, session=session)
        # the page fills its table from the API: wait for the rows (and the running one)
        want = "document.querySelectorAll('#plans tr').length > 0" + (
            " && !!document.querySelector('#plans tr[data-id=\"%s\"] td.solve')?.textContent.trim()" % running
            if running else "")
        end = time.monotonic() + 60
        while time.monotonic() < end:
            v = chrome.send("Runtime.evaluate", {"expression": want, "returnByValue": True}, session=session)
            if v.get("result", {}).get("value") is True:
                break
            time.sleep(0.2)
        for w in widths:
            chrome.send("Emulation.setDeviceMetricsOverride",
                        {"width": w, "height": 800, "deviceScaleFactor": 1, "mobile": False}, session=session)
            time.sleep(0.3)  # a layout pass; the measurement below forces one anyway
            v = chrome.send("Runtime.evaluate", {"expression": MEASURE, "returnByValue": True}, session=session)
            check_layout(json.loads(v["result"]["value"]), running, say)
    except RuntimeError as e:
        print("dashboard_layout: %s" % e, file=sys.stderr)
        return 2
    finally:
        chrome.close()
    print("# dashboard_layout: %s" % ("FAIL (%d)" % len(fails) if fails else "PASS"))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
