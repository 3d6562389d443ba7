#!/usr/bin/env bash
# tests/e2e/dashboard_test.sh - real-browser test of the memplan-server dashboard
# (server/dashboard/index.html), owned by the dashboard work. Drives Debian's headless
# Chromium against a running memplan-server: renders the page, checks the DOM it produced
# against what the daemon's API says, then takes a 1280x800 screenshot and checks that the
# image is neither missing nor blank. There is no mock: every figure comes from the daemon.
#
#   tests/e2e/dashboard_test.sh http://127.0.0.1:PORT [--plan ID] [--failed ID]
#       [--no-frontier ID] [--running ID] [--drain-pid PID]
#
# --plan: the finished plan to show (default: the first done plan listed); --failed: a failed
# plan, whose error box must show the daemon's error; --no-frontier: a plan whose graph's
# frontier the daemon answers 404, whose chart must show the daemon's error; --running: a
# running plan (held by the daemon long enough), whose row and detail must show the daemon's
# progress fields, and with which the table's layout is measured at several widths
# (dashboard_layout.py); --drain-pid: the daemon's pid, sent SIGTERM last (it must hold a
# running plan so that it stays draining) to check the draining badge against GET /v1/status.
# tests/unit/test_server.c (test_dashboard_in_browser) sets all of them up.
#
# Environment: OUT_DIR (default build; the screenshot is $OUT_DIR/dashboard.png),
# CHROMIUM (browser binary; default chromium, chromium-browser or google-chrome),
# KEEP=1 (keep the temporary directory with the dumped DOM and browser logs).
# Exit status: 0 all checks passed, 1 a check failed, 2 usage or environment error.
set -u -o pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT_DIR=${OUT_DIR:-build}
PROG=dashboard_test

die() { echo "$PROG: error: $*" >&2; exit 2; }
usage() {
  echo "usage: $0 BASE_URL [--plan ID] [--failed ID] [--no-frontier ID] [--running ID] [--drain-pid PID]" >&2
  exit 2
}

BASE="" PLAN="" FAILED="" NOFRONTIER="" RUNNING="" DRAIN_PID=""
while [ $# -gt 0 ]; do
  case "$1" in
    --plan|--failed|--no-frontier|--running|--drain-pid)
      [ $# -ge 2 ] || usage
      case "$1" in
        --plan) PLAN=$2 ;; --failed) FAILED=$2 ;; --no-frontier) NOFRONTIER=$2 ;;
        --running) RUNNING=$2 ;; --drain-pid) DRAIN_PID=$2 ;;
      esac
      shift ;;
    -h|--help) usage ;;
    http://*|https://*) [ -z "$BASE" ] || usage; BASE=${1%/} ;;
    *) echo "$PROG: unknown argument: $1" >&2; usage ;;
  esac
  shift
done
[ -n "$BASE" ] || usage
case "$DRAIN_PID" in ''|*[!0-9]*) [ -z "$DRAIN_PID" ] || die "--drain-pid takes a process id" ;; esac

command -v python3 >/dev/null 2>&1 || die "python3 not found"
CHROME=${CHROMIUM:-}
if [ -z "$CHROME" ]; then
  for c in chromium chromium-browser google-chrome; do
    if command -v "$c" >/dev/null 2>&1; then CHROME=$c; break; fi
  done
fi
if [ -z "$CHROME" ] || ! command -v "$CHROME" >/dev/null 2>&1; then
  die "Chromium not found: install it with 'apt-get install chromium' (deploy/deps.sh does)"
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/dashboard_test.XXXXXX") || die "mktemp failed"
cleanup() {
  if [ "${KEEP:-0}" = 1 ]; then echo "$PROG: kept $TMP" >&2; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 2' INT TERM

PASS=0 FAIL=0
ok()   { PASS=$((PASS + 1)); echo "ok   - $*"; }
bad()  { FAIL=$((FAIL + 1)); echo "FAIL - $*"; }
check() { # check DESCRIPTION COMMAND...
  local d=$1; shift
  if "$@"; then ok "$d"; else bad "$d"; fi
}

# chrome OUTPUT_ACTION URL: one headless run with a fresh profile; --dump-dom goes to stdout
N_RUN=0
chrome() {
  N_RUN=$((N_RUN + 1))
  local prof="$TMP/profile.$N_RUN"
  mkdir -p "$prof"
  timeout 120 "$CHROME" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --disable-dev-shm-usage --hide-scrollbars --user-data-dir="$prof" \
    --window-size=1280,800 --virtual-time-budget=5000 "$@" 2>>"$TMP/chrome.log"
}

# element_line FILE ID: the line of the dumped DOM that opens the element with this id (the
# page builds its dynamic parts with DOM calls, so an element's content stays on that line)
element_line() { grep -m1 -- "id=\"$2\"" "$1"; }
# element_text FILE ID: the text right after the opening tag of the element with this id
element_text() { grep -o -m1 -- "id=\"$2\"[^>]*>[^<]*" "$1" | head -n1 | sed 's/^[^>]*>//'; }
# predicates for check
no_inline_handlers() { ! grep -Eiq '<[a-z][^>]* on[a-z]+=' "$1"; }
escaped_names() { ! grep -q '<img' "$1" && grep -qF 'bert-base &lt;img src=x' "$1"; }
rows_none_selected() { ! grep -q 'class="selected"' "$1" && grep -q '<tr data-id=' "$1"; }

# What the API itself says, to compare with what the page shows.
EXPECT=$(python3 - "$BASE" "$PLAN" "$FAILED" "$NOFRONTIER" <<'PYEOF'
import html, json, shlex, sys, time, urllib.error, urllib.parse, urllib.request
base, plan, failed, nofrontier = sys.argv[1:5]

def get(path):
    try:
        with urllib.request.urlopen(base + path, timeout=30) as r:
            return r.status, json.loads(r.read().decode() or "null")
    except urllib.error.HTTPError as e:
        try:
            return e.code, json.loads(e.read().decode() or "null")
        except ValueError:
            return e.code, None
    except (urllib.error.URLError, OSError, ValueError) as e:
        print("API_ERROR=" + shlex.quote("%s%s: %s" % (base, path, e)))
        sys.exit(0)

out = {}
code, st = get("/v1/status")
if code != 200 or not isinstance(st, dict):
    print("API_ERROR=" + shlex.quote("GET /v1/status answered HTTP %d" % code)); sys.exit(0)
out["WORKERS"] = st.get("workers", "")
out["QCAP"] = st.get("queue_capacity", "")
code, pl = get("/v1/plans?limit=50")
plans = (pl or {}).get("plans") or [] if code == 200 else []
out["NPLANS"] = len(plans)
# a graph name holding markup, to check that the page inserts API strings as text
out["HTML_NAME"] = int(any("<img" in str(p.get("graph_name") or "") for p in plans))
if not plan:
    done = [p for p in plans if p.get("status") == "done"]
    plan = str((done or plans or [{"id": ""}])[0]["id"])
out["PLAN"] = plan
out["PLAN_ATTR"] = html.escape(plan, quote=True)
out["PLAN_Q"] = urllib.parse.quote(plan, safe="")
out["STEPS"] = ""
out["FPOINTS"] = ""
if plan:
    code, d = get("/v1/plans/" + urllib.parse.quote(plan, safe="") + "?timeline=true")
    d = d if code == 200 and isinstance(d, dict) else {}
    out["PLAN_STATUS"] = d.get("status", "missing (HTTP %d)" % code)
    r = d.get("result") or {}
    if isinstance(r.get("timeline"), list):
        out["STEPS"] = len(r["timeline"])
    h = d.get("graph_hash")
    if h:
        path = "/v1/graphs/%s/frontier?solver=auto" % urllib.parse.quote(h, safe="")
        for _ in range(40):              # a daemon may answer 202 while it computes
            code, f = get(path)
            if code != 202:
                break
            time.sleep(0.5)
        if code == 200 and isinstance(f, dict) and isinstance(f.get("points"), list):
            out["FPOINTS"] = len(f["points"])
            out["FSAMPLED"] = "yes" if f.get("exact") is False else "no"
        elif code in (404, 405, 501):
            out["FPOINTS"] = "na"
        else:
            out["FPOINTS"] = "error:%d" % code
def err_text(body):                     # the page's apiErrorText of an error body
    e = body.get("error") if isinstance(body, dict) else None
    if not isinstance(e, dict) or not e.get("code"):
        return ""
    return str(e["code"]) + (": " + str(e["message"]) if e.get("message") else "")
def view(pid):
    code, d = get("/v1/plans/" + urllib.parse.quote(pid, safe=""))
    return d if code == 200 and isinstance(d, dict) else {"status": "missing (HTTP %d)" % code}
# a failed plan: its error box shows "code: message" as the daemon gives them
out["FAILED_STATUS"] = out["FAILED_HTML"] = out["FAILED_Q"] = ""
if failed:
    d = view(failed)
    out["FAILED_STATUS"] = d.get("status")
    out["FAILED_HTML"] = html.escape(err_text(d), quote=False)
    out["FAILED_Q"] = urllib.parse.quote(failed, safe="")
# a plan whose graph's frontier the daemon answers 404: the chart shows the daemon's error
out["NOFR_CODE"] = out["NOFR_HTML"] = out["NOFR_Q"] = ""
if nofrontier:
    d = view(nofrontier)
    code, body = get("/v1/graphs/%s/frontier?solver=auto" % urllib.parse.quote(str(d.get("graph_hash")), safe=""))
    out["NOFR_CODE"] = code
    if err_text(body):
        out["NOFR_HTML"] = html.escape("frontier not available (%s)" % err_text(body), quote=False)
    out["NOFR_Q"] = urllib.parse.quote(nofrontier, safe="")
for k, v in out.items():
    print("%s=%s" % (k, shlex.quote(str(v))))
PYEOF
) || die "python3 failed while querying the API"
API_ERROR="" PLAN_STATUS="" FSAMPLED=no
eval "$EXPECT"
[ -z "$API_ERROR" ] || die "cannot query the API: $API_ERROR"
[ "$NPLANS" -gt 0 ] || die "$BASE/v1/plans lists no plan: submit one first (or pass --plan ID)"
[ -n "$STEPS" ] || die "plan '$PLAN' (status $PLAN_STATUS) has no result timeline; pass --plan with a done plan"
echo "# API: workers=$WORKERS queue_capacity=$QCAP plans=$NPLANS plan=$PLAN steps=$STEPS frontier_points=$FPOINTS"

URL="$BASE/#plan=$PLAN_Q"
DOM="$TMP/dom.html"

# ---- (a) the rendered DOM ----
chrome --dump-dom "$URL" >"$DOM" || { bad "chromium --dump-dom $URL failed (log: $TMP/chrome.log)"; }
check "DOM dumped ($(wc -c <"$DOM") bytes)" test "$(wc -c <"$DOM")" -gt 2000
check "#status present and filled (data-state up or draining)" \
  grep -Eq 'id="status"[^>]*data-state="(up|draining)"|data-state="(up|draining)"[^>]*id="status"' "$DOM"
QD=$(element_text "$DOM" queue-depth); WK=$(element_text "$DOM" workers); HR=$(element_text "$DOM" cache-hit-rate)
check "#queue-depth shows depth / capacity ('$QD', capacity $QCAP)" \
  grep -Eq "^[0-9]+ / $QCAP\$" <<<"$QD"
check "#workers shows busy / workers ('$WK', workers $WORKERS)" \
  grep -Eq "^[0-9]+ / $WORKERS\$" <<<"$WK"
check "#cache-hit-rate shows a rate ('$HR')" grep -Eq '^([0-9]+(\.[0-9])? %|n/a)$' <<<"$HR"
check "#error-banner present and hidden" grep -Eq '<p id="error-banner"[^>]* hidden' "$DOM"
NROWS=$(grep -o '<tr data-id="' "$DOM" | wc -l)
check "#plans has plan rows ($NROWS, API lists $NPLANS)" test "$NROWS" -eq "$NPLANS"
check "#plans has a row with data-id=\"$PLAN\"" grep -qF "<tr data-id=\"$PLAN_ATTR\"" "$DOM"
check "the selected row is marked" grep -qF "<tr data-id=\"$PLAN_ATTR\" tabindex=\"0\" class=\"selected\"" "$DOM"
# What a person reads in each column of each row, against the API's list
# entry of that plan: the graph's name, the budget, and for a finished plan
# its peak and overhead (never "-"), marked when infeasible.
COLS=$(python3 - "$BASE" "$DOM" <<'PYEOF2'
import html.parser, json, shlex, sys, urllib.request
base, dom = sys.argv[1], sys.argv[2]
with urllib.request.urlopen(base + "/v1/plans?limit=50", timeout=30) as r:
    plans = {p["id"]: p for p in json.loads(r.read().decode())["plans"]}
KiB, MiB, GiB, TiB = 1024, 1024 ** 2, 1024 ** 3, 1024 ** 4
def fmt_bytes(n):                       # the page's fmtBytes
    if not isinstance(n, (int, float)) or isinstance(n, bool): return "\u2014"
    for u, s in ((TiB, " TiB"), (GiB, " GiB"), (MiB, " MiB"), (KiB, " KiB")):
        if abs(n) >= u:
            v = n / u
            return ("%.0f" if abs(v) >= 100 else "%.1f" if abs(v) >= 10 else "%.2f") % v + s
    return "%d B" % round(n)
def fmt_pct(p):
    return "\u2014" if not isinstance(p, (int, float)) or isinstance(p, bool) else "%.1f %%" % p
class Rows(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(); self.rows = {}; self.cur = None; self.cell = None
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "tr" and "data-id" in a: self.cur = self.rows.setdefault(a["data-id"], [])
        elif tag == "td" and self.cur is not None: self.cur.append(""); self.cell = True
    def handle_endtag(self, tag):
        if tag == "tr": self.cur = None
        if tag == "td": self.cell = None
    def handle_data(self, data):
        if self.cur is not None and self.cell: self.cur[-1] += data
p = Rows(); p.feed(open(dom, encoding="utf-8").read())
bad, done = [], 0
for pid, cells in p.rows.items():
    e = plans.get(pid)
    if e is None or len(cells) < 8:
        bad.append("%s: row not in the API or short (%d cells)" % (pid, len(cells))); continue
    name = e.get("graph_name")
    if not isinstance(name, str) or not name: bad.append("%s: the API gives no graph_name" % pid)
    elif cells[1] != name: bad.append("%s: graph column %r, API graph_name %r" % (pid, cells[1], name))
    if cells[3] != fmt_bytes(e.get("budget")): bad.append("%s: budget column %r" % (pid, cells[3]))
    if e.get("status") == "done":
        done += 1
        if e.get("feasible") is False:
            # no peak nor overhead: the least budget it needs
            if not isinstance(e.get("min_feasible_budget"), int) and not isinstance(e.get("peak_bytes"), int):
                bad.append("%s: an infeasible entry without min_feasible_budget" % pid)
            peak = ("needs " + fmt_bytes(e["min_feasible_budget"]) if not isinstance(e.get("peak_bytes"), int)
                    else fmt_bytes(e["peak_bytes"])) + " (infeasible, over budget)"
            ovh = fmt_pct(e.get("overhead_pct"))
        else:
            for k in ("peak_bytes", "overhead_pct", "feasible"):
                if e.get(k) is None: bad.append("%s: the API's entry has no %s" % (pid, k))
            peak, ovh = fmt_bytes(e.get("peak_bytes")), fmt_pct(e.get("overhead_pct"))
            if "\u2014" in peak + ovh: bad.append("%s: a done plan shows a dash" % pid)
        if cells[4] != peak: bad.append("%s: peak column %r, expected %r" % (pid, cells[4], peak))
        if cells[5] != ovh: bad.append("%s: overhead column %r, expected %r" % (pid, cells[5], ovh))
print("COL_DONE=%d" % done)
print("COL_BAD=%s" % shlex.quote("; ".join(bad)))
PYEOF2
) || COLS='COL_DONE=0 COL_BAD="the column check failed to run"'
eval "$COLS"
check "every row shows its graph name, budget, and when done its peak and overhead ($COL_DONE done rows)" \
  test -z "$COL_BAD" -a "$COL_DONE" -gt 0
[ -z "$COL_BAD" ] || echo "# $COL_BAD"
DETAIL=$(element_line "$DOM" plan-detail)
check "#plan-detail shows the plan (status badge, peak, checkpoints)" \
  grep -q 'class="detail-title"><span class="badge st-[a-z]*">.*<dt>Peak</dt><dd>[0-9.]* [KMGT]*i*B' <<<"$DETAIL"
TL=$(element_line "$DOM" timeline-chart)
check "<svg id=\"timeline-chart\"> drawn with a path of $STEPS steps" \
  grep -Eq "<svg id=\"timeline-chart\".*data-steps=\"$STEPS\".*data-state=\"drawn\".*<path [^>]*class=\"timeline-line\"" <<<"$TL"
check "timeline has a budget line and a peak marker" \
  grep -Eq 'class="budget-line".*class="peak-line".*class="peak-dot"' <<<"$TL"
FR=$(element_line "$DOM" frontier-chart)
case "$FPOINTS" in
  na)
    check "<svg id=\"frontier-chart\"> says 'frontier not available'" grep -q 'frontier not available' <<<"$FR" ;;
  error:*)
    bad "the frontier endpoint answered HTTP ${FPOINTS#error:}" ;;
  *)
    NPTS=$(grep -o 'class="frontier-point"' <<<"$FR" | wc -l)
    check "<svg id=\"frontier-chart\"> drawn with $FPOINTS points ($NPTS circles)" \
      grep -Eq "<svg id=\"frontier-chart\".*data-points=\"$FPOINTS\".*data-state=\"drawn\".*<path [^>]*class=\"frontier-line\"" <<<"$FR"
    check "frontier has one circle per point" test "$NPTS" -eq "$FPOINTS"
    check "frontier marks the selected plan" grep -q 'class="plan-dot"' <<<"$FR"
    # a frontier sampled from plans ("exact": false) says so, and not "approx."
    if [ "$FSAMPLED" = yes ]; then
      check "the frontier caption says the points are sampled plans" \
        grep -q 'sampled plans' <<<"$(element_line "$DOM" frontier-caption)"
    fi ;;
esac
check "no inline event handler attribute in the page" \
  no_inline_handlers "$ROOT/server/dashboard/index.html"

# API strings are inserted as text: a graph name holds an <img onerror> tag
# (one the caller submitted to the daemon)
if [ "$HTML_NAME" = 1 ]; then
  check "API strings are escaped (no injected <img>)" \
    escaped_names "$DOM"
fi

# dump_plan ID_QUOTED FILE: the page with this plan selected, unless FILE is there already
dump_plan() { [ -s "$2" ] || chrome --dump-dom "$BASE/#plan=$1" >"$2"; }

# a failed plan: its error box shows the daemon's error code and message
if [ -n "$FAILED" ]; then
  [ "$FAILED_STATUS" = failed ] || die "plan '$FAILED' given with --failed is $FAILED_STATUS, not failed"
  [ -n "$FAILED_HTML" ] || die "failed plan '$FAILED' carries no error in GET /v1/plans/{id}"
  dump_plan "$FAILED_Q" "$TMP/dom_$FAILED_Q.html"
  check "a failed plan shows the daemon's error ($FAILED_HTML)" \
    grep -qF "class=\"err-box\">$FAILED_HTML</p>" "$TMP/dom_$FAILED_Q.html"
fi

# a plan whose graph's frontier the daemon answers 404: the chart says so, with the reason
if [ -n "$NOFRONTIER" ]; then
  [ "$NOFR_CODE" = 404 ] && [ -n "$NOFR_HTML" ] ||
    die "the frontier of plan '$NOFRONTIER' answered HTTP $NOFR_CODE, not a 404 with an error body"
  dump_plan "$NOFR_Q" "$TMP/dom_$NOFR_Q.html"
  FR=$(element_line "$TMP/dom_$NOFR_Q.html" frontier-chart)
  check "a 404 frontier shows the daemon's error ($NOFR_HTML)" \
    grep -qF "$NOFR_HTML</text>" <<<"$FR"
  check "a 404 frontier marks the chart not available" grep -q 'data-state="na"' <<<"$FR"
fi

# a running plan: its row's Solve column and its detail show the daemon's progress fields
# (phase, fraction, elapsed_ms), read from the API before and after the page's run
progress_of() { # progress_of ID: the plan's view as JSON ({} when it cannot be read)
  python3 - "$BASE" "$1" <<'PYEOF' || echo '{}'
import json, sys, urllib.parse, urllib.request
with urllib.request.urlopen(sys.argv[1] + "/v1/plans/" + urllib.parse.quote(sys.argv[2], safe=""), timeout=30) as r:
    print(json.dumps(json.loads(r.read().decode())))
PYEOF
}
if [ -n "$RUNNING" ]; then
  RUN_Q=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$RUNNING")
  BEFORE=$(progress_of "$RUNNING")
  chrome --dump-dom "$BASE/#plan=$RUN_Q" >"$TMP/dom_running.html"
  AFTER=$(progress_of "$RUNNING")
  PROGRESS=$(python3 - "$TMP/dom_running.html" "$RUNNING" "$BEFORE" "$AFTER" <<'PYEOF'
import html.parser, json, re, shlex, sys
dom, pid, before, after = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
# the page's names of the daemon's phases (proto/openapi.yaml, Progress.phase)
PHASES = {"start": "starting", "lower_sets": "lower sets", "reverse_pass": "reverse pass",
          "search": "search", "simulation": "simulation", "swap": "swap"}
class Texts(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(); self.row = None; self.cells = []; self.cell = None; self.prog = None; self.inprog = False
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "tr" and a.get("data-id") == pid: self.row = True
        elif tag == "td" and self.row: self.cells.append(""); self.cell = True
        if a.get("id") == "plan-progress": self.prog = ""; self.inprog = True
    def handle_endtag(self, tag):
        if tag == "tr": self.row = None
        if tag == "td": self.cell = None
        if tag == "dd": self.inprog = False
    def handle_data(self, data):
        if self.row and self.cell: self.cells[-1] += data
        if self.inprog: self.prog += data
t = Texts(); t.feed(open(dom, encoding="utf-8").read())
bad = []
for v in (before, after):
    if v.get("status") != "running" or not isinstance(v.get("progress"), dict):
        bad.append("plan %s is %s (progress %r) around the page's run: it must be held running"
                   % (pid, v.get("status"), v.get("progress")))
def ms_of(text):                        # the page's fmtMs, read back: (value, half a unit)
    m = re.fullmatch(r"(\d+(?:\.\d+)?) (ms|s)", text)
    if text == "<1 ms": return 0.5, 0.5
    if not m: return None
    dec = len(m.group(1).partition(".")[2])
    unit = 1000.0 if m.group(2) == "s" else 1.0
    return float(m.group(1)) * unit, 0.5 * unit / 10 ** dec
def judge(where, text):
    p0, p1 = before["progress"], after["progress"]
    m = re.fullmatch(r"(.+?)(?: (\d+) %)?(?: · (.+))?", text or "")
    if not m:
        bad.append("%s shows %r" % (where, text)); return
    labels = {PHASES.get(p["phase"], p["phase"]) if p["phase"] is not None else "running" for p in (p0, p1)}
    if m.group(1) not in labels:
        bad.append("%s: phase %r, the daemon's phase is %s" % (where, m.group(1), " then ".join(sorted(labels))))
    fr = [p["fraction"] for p in (p0, p1) if isinstance(p["fraction"], (int, float))]
    if m.group(2) is None and len(fr) == 2 and p0["phase"] == p1["phase"]:
        bad.append("%s: no percentage, the daemon gives fraction %r" % (where, fr))
    if m.group(2) is not None and not (fr and min(fr) * 100 - 1 <= int(m.group(2)) <= max(fr) * 100 + 1):
        bad.append("%s: %s %%, the daemon's fraction is %r" % (where, m.group(2), fr))
    shown = ms_of(m.group(3) or "")
    e0, e1 = p0["elapsed_ms"], p1["elapsed_ms"]
    if shown is None:
        bad.append("%s: elapsed %r is not a duration" % (where, m.group(3)))
    elif not e0 - shown[1] <= shown[0] <= e1 + shown[1]:
        bad.append("%s: elapsed %s, the daemon's elapsed_ms went from %.0f to %.0f" % (where, m.group(3), e0, e1))
if not bad:
    judge("row's Solve column", t.cells[6] if len(t.cells) > 6 else None)
    judge("#plan-progress", t.prog)
print("PROG_ROW=%s" % shlex.quote(t.cells[6] if len(t.cells) > 6 else ""))
print("PROG_DETAIL=%s" % shlex.quote(t.prog or ""))
print("PROG_BAD=%s" % shlex.quote("; ".join(bad)))
PYEOF
  ) || PROGRESS='PROG_ROW= PROG_DETAIL= PROG_BAD="the progress check failed to run"'
  eval "$PROGRESS"
  check "a running plan's row shows the daemon's progress ('$PROG_ROW')" test -n "$PROG_ROW" -a -z "$PROG_BAD"
  check "a running plan's detail shows the daemon's progress ('$PROG_DETAIL')" test -n "$PROG_DETAIL" -a -z "$PROG_BAD"
  [ -z "$PROG_BAD" ] || echo "# $PROG_BAD"
  # the plans table at 800-1920 px: the Graph column keeps its room, every figure fits its
  # cell, and the running row's progress stays clear of Created (tests/e2e/dashboard_layout.py)
  CHROMIUM=$CHROME python3 "$HERE/dashboard_layout.py" "$BASE" --running "$RUNNING" \
    --widths 800,1024,1280,1440,1920 >"$TMP/layout.txt" 2>&1
  LAYOUT_RC=$?
  sed 's/^/#   /' "$TMP/layout.txt"
  check "the plans table's layout at 800-1920 px (dashboard_layout.py)" test "$LAYOUT_RC" = 0
fi

# the API unreachable: the page the daemon serves, opened from a file, has no API behind it
mkdir -p "$TMP/page"
if python3 - "$BASE/" "$TMP/page/index.html" <<'PYEOF'
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=30) as r:
    open(sys.argv[2], "wb").write(r.read())
PYEOF
then
  chrome --dump-dom "file://$TMP/page/index.html" >"$TMP/dom_down.html"
  check "unreachable API shows #error-banner" \
    grep -Eq '<p id="error-banner" role="alert">The memplan API is unreachable' "$TMP/dom_down.html"
  check "unreachable API marks #status down" grep -q 'id="status"[^>]*data-state="down"' "$TMP/dom_down.html"
else
  bad "GET $BASE/ (the page) failed"
fi

# ---- (b) the screenshot ----
mkdir -p "$OUT_DIR" || die "cannot create $OUT_DIR"
PNG="$OUT_DIR/dashboard.png"
rm -f "$PNG"
(cd "$TMP" && chrome --screenshot="$TMP/shot.png" "$URL" >/dev/null) && cp "$TMP/shot.png" "$PNG"
check "screenshot written to $PNG" test -s "$PNG"
if [ -s "$PNG" ]; then
  SIZE=$(wc -c <"$PNG")
  check "screenshot is larger than 20 KB ($SIZE bytes)" test "$SIZE" -gt 20480
  STATS=$(python3 - "$PNG" <<'PYEOF'
# Decode the PNG with zlib only (no PIL) and count its colours.
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
if data[:8] != b"\x89PNG\r\n\x1a\n":
    print("bad signature"); sys.exit(1)
pos, idat, w = 8, [], None
while pos < len(data):
    n, typ = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if typ == b"IHDR":
        w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
    elif typ == b"IDAT":
        idat.append(body)
    pos += 12 + n
channels = {2: 3, 6: 4}.get(ctype)
if w is None or depth != 8 or channels is None or interlace:
    print("%dx%d unsupported PNG (depth %d, colour type %d)" % (w, h, depth, ctype)); sys.exit(1)
raw = zlib.decompress(b"".join(idat))
stride = w * channels
prev = bytearray(stride)
counts = {}
i = 0
for y in range(h):
    f = raw[i]; line = bytearray(raw[i + 1:i + 1 + stride]); i += 1 + stride
    for x in range(stride):
        a = line[x - channels] if x >= channels else 0
        b = prev[x]
        c = prev[x - channels] if x >= channels else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + ((a + b) >> 1)) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    prev = line
    if y % 2 == 0:   # every other row is plenty to judge the picture
        for x in range(0, stride, channels):
            k = bytes(line[x:x + 3])
            counts[k] = counts.get(k, 0) + 1
total = sum(counts.values())
print("%d %d %d %.3f" % (w, h, len(counts), max(counts.values()) / total))
PYEOF
  ) || STATS="decode-failed: $STATS"
  read -r PW PH NCOL TOPFRAC <<<"$STATS"
  check "screenshot is 1280x800 ($PW x $PH)" test "$PW" = 1280 -a "$PH" = 800
  check "screenshot is not blank ($NCOL distinct colours, commonest covers $TOPFRAC)" \
    python3 -c 'import sys; sys.exit(0 if int(sys.argv[1]) >= 64 and float(sys.argv[2]) < 0.9 else 1)' \
      "${NCOL:-0}" "${TOPFRAC:-1}"
fi

# last, as it ends the daemon: SIGTERM drains it (it stays up while its running plan is held),
# and the page shows the draining badge from GET /v1/status
if [ -n "$DRAIN_PID" ]; then
  DRAIN=$(python3 - "$BASE" "$DRAIN_PID" <<'PYEOF'
import json, os, signal, sys, time, urllib.error, urllib.request
base, pid, st = sys.argv[1], int(sys.argv[2]), None
def get(path):
    try:
        with urllib.request.urlopen(base + path, timeout=5) as r:
            return r.status, json.loads(r.read().decode())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read().decode() or "null")
    except (urllib.error.URLError, OSError, ValueError) as e:
        return 0, {"status": str(e)}
code, st = get("/v1/status")
if code != 200 or not st.get("running"):
    print("DRAINING=no-running-plan READYZ=''"); sys.exit(0)
os.kill(pid, signal.SIGTERM)
deadline = time.monotonic() + 10
while time.monotonic() < deadline:        # the signal is handled on the daemon's event loop
    code, st = get("/v1/status")
    if code == 200 and st.get("draining") is True:
        break
    time.sleep(0.02)
code, body = get("/readyz")
print("DRAINING=%s READYZ='%d %s'" % (str((st or {}).get("draining")).lower(), code, (body or {}).get("status")))
PYEOF
  ) || DRAIN="DRAINING=unknown READYZ='the daemon did not answer'"
  eval "$DRAIN"
  [ "$DRAINING" != no-running-plan ] || die "GET /v1/status counts no running plan: the daemon would exit at once"
  [ "$DRAINING" = true ] || die "after SIGTERM GET /v1/status says draining: $DRAINING"
  chrome --dump-dom "$BASE/" >"$TMP/dom_draining.html"
  check "a draining daemon (GET /v1/status draining: $DRAINING, /readyz $READYZ) shows the draining badge" \
    grep -q 'id="service-state"[^>]*>draining<' "$TMP/dom_draining.html"
  check "a draining daemon marks #status draining" grep -q 'id="status"[^>]*data-state="draining"' "$TMP/dom_draining.html"
  check "without #plan= no plan is selected" rows_none_selected "$TMP/dom_draining.html"
fi

echo "# $PASS passed, $FAIL failed; screenshot: $PNG"
if [ "$FAIL" -gt 0 ]; then
  if [ "${KEEP:-0}" = 1 ]; then echo "$PROG: FAIL (DOM and chromium log in $TMP)" >&2
  else echo "$PROG: FAIL (rerun with KEEP=1 to keep the dumped DOM and the chromium log)" >&2; fi
  exit 1
fi
echo "$PROG: PASS"
