#!/usr/bin/env python3
"""tests/e2e/dashboard_token.py - the dashboard against a daemon with a token, in Debian's
headless Chromium (standard library only).

    dashboard_token.py BASE_URL TOKEN [--log DAEMON_LOG]

TOKEN must read every plan (a read-all or admin principal). The script drives Chromium
through the DevTools protocol over a pipe (--remote-debugging-pipe: JSON messages ended by
NUL on fds 3 and 4), so that it can type into the page as a person would, and checks:

  1. without a token the page asks for one (#token-form shown) and lists no plan;
  2. a wrong token is refused: the form stays, saying so;
  3. the right token, typed and submitted, lists the same plans as GET /v1/plans with it;
     it is in the tab's sessionStorage, and neither in the page's URL nor in its text;
  4. a reload keeps it (the tab's session); a new tab asks again (its own session);
  5. with --log, no request the daemon logged carries the token in its path.

Every wait polls the page's state until it holds (30 s at most); no verdict depends on how
fast the machine is. Exit status 0 when every check passed, 1 when one failed, 2 on a usage
or environment error. Run by tests/unit/test_server.c (test_dashboard_token)."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

PROG = "dashboard_token"


class Chrome:
    """Headless Chromium driven over --remote-debugging-pipe."""

    def __init__(self, binary):
        self.dir = tempfile.mkdtemp(prefix="dashboard_token.")
        to_chrome_r, self._w = os.pipe()
        self._r, from_chrome_w = os.pipe()

        def fds():
            # fd 3 may already be the pipe's end (then dup2 keeps its
            # close-on-exec flag): move both above 4 first
            r, w = os.dup(to_chrome_r), os.dup(from_chrome_w)
            os.dup2(r, 3)
            os.dup2(w, 4)
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)

        self.proc = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync",
             "--disable-background-networking", "--disable-component-update", "--disable-dev-shm-usage",
             "--user-data-dir=" + os.path.join(self.dir, "profile"), "--remote-debugging-pipe",
             "--window-size=1280,800", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.dir, "chrome.log"), "wb"),
            preexec_fn=fds, close_fds=False)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buf = b""
        self.next_id = 0

    def call(self, method, params=None, session=None, timeout=60):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            while b"\0" in self.buf:
                raw, self.buf = self.buf.split(b"\0", 1)
                m = json.loads(raw)
                if m.get("id") == self.next_id:
                    if "error" in m:
                        raise RuntimeError("%s: %s" % (method, m["error"]))
                    return m.get("result", {})
            chunk = os.read(self._r, 1 << 16)
            if not chunk:
                raise RuntimeError("Chromium closed the pipe (log: %s)" % self.dir)
            self.buf += chunk
        raise RuntimeError("no answer to %s" % method)

    def open_tab(self, url):
        target = self.call("Target.createTarget", {"url": url})["targetId"]
        return self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]

    def eval(self, session, expr):
        r = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True, "awaitPromise": True},
                      session)
        if "exceptionDetails" in r:
            raise RuntimeError("%s: %s" % (expr, r["exceptionDetails"]))
        return r["result"].get("value")

    def until(self, session, expr, what, seconds=30):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                v = self.eval(session, expr)
            except RuntimeError:  # the page is still loading: its elements are not there yet
                v = None
            if v:
                return v
            time.sleep(0.1)
        raise AssertionError("timed out waiting for %s" % what)

    def close(self):
        try:
            self.call("Browser.close", timeout=10)
        except (RuntimeError, OSError, ValueError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._w)
        os.close(self._r)
        shutil.rmtree(self.dir, ignore_errors=True)


def api_plan_ids(base, token):
    req = urllib.request.Request(base + "/v1/plans?limit=50", headers={"Authorization": "Bearer " + token})
    with urllib.request.urlopen(req, timeout=30) as r:
        return [p["id"] for p in json.loads(r.read().decode())["plans"]]


FORM_SHOWN = "!document.getElementById('token-form').hidden"
ROWS = "Array.from(document.querySelectorAll('#plans tr[data-id]')).map(r => r.dataset.id)"


def submit_token(c, tab, token):
    c.eval(tab, "(() => { const i = document.getElementById('token-input'); i.value = %s;"
                " document.querySelector('#token-form button[type=submit]').click(); return true; })()"
           % json.dumps(token))


def main(argv):
    args = argv[1:]
    log = None
    if "--log" in args:
        k = args.index("--log")
        log = args[k + 1]
        del args[k:k + 2]
    if len(args) != 2:
        print("usage: %s BASE_URL TOKEN [--log DAEMON_LOG]" % PROG, file=sys.stderr)
        return 2
    base, token = args[0].rstrip("/"), args[1]
    binary = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not binary:
        print("%s: error: Chromium not found (deploy/deps.sh installs it)" % PROG, file=sys.stderr)
        return 2
    expect = api_plan_ids(base, token)
    if not expect:
        print("%s: error: %s lists no plan: submit one first" % (PROG, base), file=sys.stderr)
        return 2
    fails = []

    def check(what, cond):
        print(("ok   - " if cond else "FAIL - ") + what)
        if not cond:
            fails.append(what)

    c = Chrome(binary)
    try:
        tab = c.open_tab(base + "/")
        c.until(tab, FORM_SHOWN, "the token form")
        c.until(tab, "document.getElementById('plans-meta').textContent.includes('token')", "the plans' note")
        check("without a token the page asks for one and lists no plan", c.eval(tab, ROWS) == [])
        submit_token(c, tab, "wrong-" + token)
        c.until(tab, FORM_SHOWN + " && document.getElementById('token-note').textContent.includes('refused')",
                "the refusal")
        check("a wrong token is refused, and the form asks again", True)
        check("a refused token is not kept", c.eval(tab, "sessionStorage.getItem('memplan.token')") is None)
        submit_token(c, tab, token)
        rows = c.until(tab, "(() => { const r = %s; return r.length ? r : null; })()" % ROWS, "the plan rows")
        check("with the token the page lists the plans GET /v1/plans lists (%d)" % len(expect), rows == expect)
        check("the form is hidden once the token works", not c.eval(tab, FORM_SHOWN))
        check("the token is kept in the tab's sessionStorage",
              c.eval(tab, "sessionStorage.getItem('memplan.token')") == token)
        check("the token is not in localStorage", c.eval(tab, "JSON.stringify(localStorage)").find(token) < 0)
        check("the token is not in the page's URL", token not in c.eval(tab, "location.href"))
        check("the token is not in the page's text or markup",
              token not in c.eval(tab, "document.documentElement.outerHTML"))
        c.eval(tab, "location.reload(), true")
        c.until(tab, "document.readyState === 'complete'", "the reload")
        rows = c.until(tab, "(() => { const r = %s; return r.length ? r : null; })()" % ROWS, "rows after reload")
        check("after a reload the tab still has its token (no prompt, the plans listed)",
              rows == expect and not c.eval(tab, FORM_SHOWN))
        other = c.open_tab(base + "/")
        c.until(other, FORM_SHOWN, "the token form in a new tab")
        check("a new tab has a session of its own: it asks again",
              c.eval(other, "sessionStorage.getItem('memplan.token')") is None)
        c.eval(tab, "document.getElementById('token-forget').click(), true")
        c.until(tab, FORM_SHOWN, "the form after forgetting the token")
        check("'forget token' drops it and asks again", c.eval(tab, "sessionStorage.getItem('memplan.token')") is None)
    except (AssertionError, RuntimeError) as e:
        check(str(e), False)
    finally:
        c.close()
    if log:
        with open(log, encoding="utf-8", errors="replace") as f:
            paths = [json.loads(line).get("path", "") for line in f if '"request"' in line and line.startswith("{")]
        check("the daemon logged %d requests, none with the token in its URL" % len(paths),
              bool(paths) and not any(token in p for p in paths))
    print("%s: %s" % (PROG, "PASS" if not fails else "FAIL (%d)" % len(fails)))
    return 0 if not fails else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
