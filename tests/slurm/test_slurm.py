"""clients/slurm/job_submit.lua in a real Slurm (Debian 12's slurm-wlm 22.05)
against the real daemon.

A munged, a slurmctld and a slurmd run as root on loopback in a temporary
directory (free ports, no cgroups, no accounting; one node in three
partitions on it), with JobSubmitPlugins=lua and the plugin copied next to
slurm.conf. The partitions' usable bytes come from the daemon's own answers
for tests/graphs/cg_resnet50.txt: "small" one byte below its least feasible
budget, "big" its peak without recomputation, "huge" twice that. Jobs are
then submitted with sbatch, and what Slurm did with each is read back with
scontrol, squeue and the jobs' own output: a job that fits gets a plan it
fetches; one that does not is rejected naming its least feasible budget and
the partition's memory, or routed to the smallest partition that fits; an
unknown graph is rejected; with the daemon stopped, or answering nothing, a
job is let through (or held, by configuration).

Every wait polls with a generous bound; every process started here is
ended at cleanup, even after a failure. Missing Slurm or munge, or not
being root, fails the test: `make test` installs them (deploy/deps.sh).
"""

import glob
import http.server
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from memplan_daemon import Daemon, until  # noqa: E402

PLUGIN = ROOT / "clients" / "slurm" / "job_submit.lua"
GRAPH = ROOT / "tests" / "graphs" / "cg_resnet50.txt"
PROGRAMS = ("munged", "slurmctld", "slurmd", "sbatch", "scontrol", "squeue", "sinfo", "scancel", "curl")
PLUGIN_SO = "/usr/lib/*/slurm-wlm/job_submit_lua.so"
UNKNOWN = "0123456789abcdef" * 4


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """munged, slurmctld and slurmd in `directory`; each process carries
    MEMPLAN_SLURM_TEST=<directory> in its environment, so that stop()
    also finds what they started (slurmstepd, job scripts)."""

    def __init__(self, directory):
        self.dir = pathlib.Path(directory)
        self.procs = []
        self.conf = self.dir / "slurm.conf"
        self.env = dict(os.environ, SLURM_CONF=str(self.conf), MEMPLAN_SLURM_TEST=str(self.dir))
        for k in list(self.env):
            if k.startswith(("SLURM_", "SBATCH_", "SQUEUE_")) and k != "SLURM_CONF":
                del self.env[k]

    def start(self, partitions):
        d = self.dir
        for sub in ("munge", "state", "spool", "log", "jobs"):
            (d / sub).mkdir(mode=0o755, exist_ok=True)
        key = d / "munge" / "key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        self.sock = d / "munge" / "sock"
        self._spawn("munged", ["munged", "-F", "--force", "--key-file", str(key), "--socket", str(self.sock),
                               "--pid-file", str(d / "munge" / "pid"), "--seed-file", str(d / "munge" / "seed")])
        until("munged's socket", lambda: self.sock.exists(), 60)
        host = socket.gethostname().split(".")[0]
        lines = [
            "ClusterName=memplantest",
            "SlurmctldHost=%s(127.0.0.1)" % host,
            "SlurmctldPort=%d" % free_port(),
            "SlurmdPort=%d" % free_port(),
            "SlurmUser=root", "SlurmdUser=root",
            "AuthType=auth/munge", "CredType=cred/munge", "AuthInfo=socket=%s" % self.sock,
            "StateSaveLocation=%s" % (d / "state"), "SlurmdSpoolDir=%s" % (d / "spool"),
            "SlurmctldPidFile=%s" % (d / "slurmctld.pid"), "SlurmdPidFile=%s" % (d / "slurmd.pid"),
            "SlurmctldLogFile=%s" % (d / "log" / "slurmctld.log"), "SlurmdLogFile=%s" % (d / "log" / "slurmd.log"),
            "SlurmctldDebug=info", "SlurmdDebug=info", "MailProg=/bin/true",
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none", "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none", "MpiDefault=none", "SwitchType=switch/none",
            "SchedulerType=sched/builtin", "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core",
            "ReturnToService=2", "MinJobAge=3600",
            "JobSubmitPlugins=lua",
            "NodeName=node0 NodeHostname=%s NodeAddr=127.0.0.1 CPUs=1 RealMemory=1 State=UNKNOWN" % host,
        ]
        for i, name in enumerate(partitions):
            lines.append("PartitionName=%s Nodes=node0 State=UP%s" % (name, " Default=YES" if i == 0 else ""))
        self.conf.write_text("\n".join(lines) + "\n")
        shutil.copy(PLUGIN, d / "job_submit.lua")
        self._spawn("slurmctld", ["slurmctld", "-D", "-f", str(self.conf)])
        self._spawn("slurmd", ["slurmd", "-D", "-N", "node0", "-f", str(self.conf)])
        until("node0 idle (see %s)" % (d / "log"),
              lambda: self.run(["sinfo", "-h", "-n", "node0", "-o", "%t"], check=False).stdout.strip() == "idle",
              120, 0.5)

    def _spawn(self, name, argv):
        out = open(self.dir / "log" / (name + ".out"), "ab")
        try:
            p = subprocess.Popen(argv, env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        finally:
            out.close()
        self.procs.append((name, p))

    def run(self, argv, check=True, env=None, timeout=120):
        e = dict(self.env)
        e.update(env or {})
        r = subprocess.run(argv, env=e, capture_output=True, text=True, timeout=timeout, cwd=self.dir / "jobs")
        if check and r.returncode != 0:
            raise AssertionError("%s exited %d: %s%s" % (argv, r.returncode, r.stdout, r.stderr))
        return r

    def job(self, job_id):
        """scontrol show job's fields, as a dict."""
        out = self.run(["scontrol", "-o", "show", "job", str(job_id)]).stdout
        fields = {}
        for word in out.split():
            if "=" in word:
                k, v = word.split("=", 1)
                fields.setdefault(k, v)
        # Comment may hold spaces: read it whole from squeue
        fields["Comment"] = self.run(["squeue", "-h", "-j", str(job_id), "-o", "%k", "-t", "all"]).stdout.strip()
        return fields

    def wait_state(self, job_id, states, seconds=180):
        return until("job %s in %s" % (job_id, states),
                     lambda: self.job(job_id)["JobState"] in states and self.job(job_id), seconds, 0.5)

    def log(self):
        try:
            return (self.dir / "log" / "slurmctld.log").read_text(errors="replace")[-3000:]
        except OSError:
            return ""

    def _tagged(self):
        """Processes whose environment carries this cluster's tag."""
        tag = ("MEMPLAN_SLURM_TEST=%s" % self.dir).encode()
        pids = []
        for p in pathlib.Path("/proc").iterdir():
            if not p.name.isdigit() or int(p.name) == os.getpid():
                continue
            try:
                if tag in (p / "environ").read_bytes().split(b"\0"):
                    pids.append(int(p.name))
            except OSError:
                pass
        return pids

    def stop(self):
        if any(n == "slurmctld" and p.poll() is None for n, p in self.procs):
            self.run(["scancel", "--user", "root"], check=False, timeout=60)
        for name, p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(60)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        for pid in self._tagged():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        until("the cluster's processes to end", lambda: not self._tagged(), 60, 0.2)


class SilentServer:
    """A listening socket that never accepts: connections are made by the
    kernel and then get no answer, as from a hung daemon."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]

    def close(self):
        self.sock.close()


class ScriptedServer:
    """Answers POST /v1/fit and POST /v1/plans with the status and body
    given for each path, and records the requests: the daemon's 202
    answers (a fit still computed, a plan being computed) on demand, which
    the real daemon gives only under load. The real daemon's tests above
    cover everything else."""

    def __init__(self, answers):
        self.answers, self.requests = answers, []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                outer.requests.append((self.path, json.loads(body)))
                status, answer = outer.answers.get(self.path, (404, {"error": {"code": "not_found"}}))
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


class TestSlurmPlugin(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        missing = [p for p in PROGRAMS if shutil.which(p, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin") is None]
        if missing or not glob.glob(PLUGIN_SO):
            raise AssertionError("Slurm/munge missing (%s%s): run deploy/deps.sh" %
                                 (", ".join(missing), "" if glob.glob(PLUGIN_SO) else " job_submit_lua.so"))
        if os.geteuid() != 0:
            raise AssertionError("the Slurm test runs slurmctld and slurmd as root: run it as root")
        cls.tmp = tempfile.mkdtemp(prefix="memplan-slurm-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, True)
        cls.daemon = Daemon(os.path.join(cls.tmp, "daemon"))
        cls.addClassCleanup(cls.daemon.cleanup)
        cls.daemon.start()
        # the graph, and the figures the partitions are sized from
        status, _, fit = cls.daemon.request("POST", "/v1/fit", {
            "graph": GRAPH.read_text(), "graph_name": "cg_resnet50", "budgets": [1]})
        assert status == 200, (status, fit)
        cls.hash = fit["graph_hash"]
        entry = fit["budgets"][0]
        cls.least = entry.get("min_feasible_budget", entry.get("min_budget"))
        cls.peak = fit["peak_no_recompute"]
        assert entry["fits"] is False and 0 < cls.least <= cls.peak, fit
        # huge is written in MiB, "N MiB" in the configuration
        huge_mib = -(-2 * cls.peak // 2 ** 20)
        cls.usable = {"small": cls.least - 1, "big": cls.peak, "huge": huge_mib * 2 ** 20}
        cls.usable_text = {"huge": '"%d MiB"' % huge_mib}
        # a partition named by a GPU of the daemon's catalogue, its bytes the daemon's
        status, _, cat = cls.daemon.request("GET", "/v1/devices")
        assert status == 200, (status, cat)
        cls.catalogue = {"a100": ("a100-40gb", {d["name"]: d["usable_bytes"] for d in cat["devices"]}["a100-40gb"])}
        cls.warm()
        cls.cluster = Cluster(os.path.join(cls.tmp, "slurm"))
        cls.addClassCleanup(cls.cluster.stop)
        os.makedirs(cls.cluster.dir, exist_ok=True)
        cls.write_config()
        cls.cluster.start(["small", "big", "huge"] + list(cls.catalogue))

    @classmethod
    def warm(cls):
        """The fit the plugin sends (every partition's bytes, ascending),
        asked here first without a time limit, so that the plugin's is
        answered from the cache whatever the machine's speed (a slow
        first fit would be let through unchecked, by design)."""
        status, _, fit = cls.daemon.request("POST", "/v1/fit", cls.fit_request(), timeout=600)
        assert status == 200, (status, fit)

    @classmethod
    def fit_request(cls, wait=None):
        """The fit the plugin sends (`wait`: its timeout less half a second)."""
        body = {"graph_hash": cls.hash, "solver": "auto", "budgets": sorted(cls.usable.values()),
                "devices": sorted(gpu for gpu, _ in cls.catalogue.values())}
        if wait is not None:
            body["wait"] = wait
        return body

    @classmethod
    def write_config(cls, port=None, skip=(), **kw):
        """memplan_slurm.conf next to the plugin (read at every submission),
        without the partitions in `skip`."""
        opts = {"timeout": 10, "on_error": "let_through", "route": False}
        opts.update(kw)
        text = ['url = "http://127.0.0.1:%d"' % (port or cls.daemon.port)]
        for k, v in opts.items():
            text.append("%s = %s" % (k, json.dumps(v)))
        text.append("partitions = {")
        for name, b in cls.usable.items():
            if name not in skip:
                text.append('  %s = { gpu = "test-%s", usable = %s },' % (name, name, cls.usable_text.get(name, b)))
        for name, (gpu, _) in cls.catalogue.items():
            text.append('  %s = { gpu = "%s" },' % (name, gpu))
        text.append("}")
        (pathlib.Path(cls.cluster.dir) / "memplan_slurm.conf").write_text("\n".join(text) + "\n")

    def setUp(self):
        self.write_config()

    def sbatch(self, *args, env=None, script="true"):
        """sbatch's CompletedProcess; .job_id when it was accepted."""
        r = self.cluster.run(["sbatch", "--parsable", "-o", "job-%j.out"] + list(args) + ["--wrap", script],
                             check=False, env=env)
        r.job_id = r.stdout.strip().split(";")[0] if r.returncode == 0 else None
        return r

    def job_output(self, job_id):
        return (pathlib.Path(self.cluster.dir) / "jobs" / ("job-%s.out" % job_id)).read_text()

    def assertAccepted(self, r):
        self.assertEqual(r.returncode, 0, "sbatch refused: %s\nslurmctld log:\n%s" % (r.stderr, self.cluster.log()))
        self.assertTrue(r.job_id.isdigit(), r.stdout)

    def assertRejected(self, r, *words):
        self.assertNotEqual(r.returncode, 0, "sbatch accepted job %s" % r.stdout)
        for w in words:
            self.assertIn(w, r.stderr)

    def assertNoJob(self, name):
        self.assertEqual(self.cluster.run(["squeue", "-h", "-t", "all", "-n", name, "-o", "%i"]).stdout.strip(), "")

    # ---- the daemon answers

    def test_fits_gets_its_plan(self):
        """A job that fits its partition: accepted there; its comment and
        environment carry the id of a plan at the partition's budget (the
        fit computed it, so the plugin's plan is answered from the cache,
        under an id of its own), which the job fetches from the daemon, and
        that plan fits."""
        fetch = ('env | grep ^MEMPLAN_ | sort; '
                 'curl -sS --max-time 120 "$MEMPLAN_URL/v1/plans/$MEMPLAN_PLAN_ID?wait=60" > plan-$SLURM_JOB_ID.json')
        r = self.sbatch("-p", "big", "-J", "fits", "--comment=memplan:" + self.hash, script=fetch)
        self.assertAccepted(r)
        job = self.cluster.wait_state(r.job_id, ("COMPLETED", "FAILED", "CANCELLED", "NODE_FAIL"))
        self.assertEqual(job["JobState"], "COMPLETED", job)
        self.assertEqual(job["Partition"], "big")
        env = dict(line.split("=", 1) for line in self.job_output(r.job_id).splitlines() if "=" in line)
        self.assertEqual(env["MEMPLAN_GRAPH"], self.hash)
        self.assertEqual(int(env["MEMPLAN_BUDGET"]), self.usable["big"])
        self.assertEqual(env["MEMPLAN_SOLVER"], "auto")
        self.assertEqual(env["MEMPLAN_URL"], "http://127.0.0.1:%d" % self.daemon.port)
        # the plan's id, in the environment and the comment
        plan_id = env["MEMPLAN_PLAN_ID"]
        self.assertRegex(plan_id, "^[0-9a-f]{32}$")
        self.assertEqual(job["Comment"], "memplan:%s budget:%d plan:%s" % (self.hash, self.usable["big"], plan_id))
        plan = json.loads((pathlib.Path(self.cluster.dir) / "jobs" / ("plan-%s.json" % r.job_id)).read_text())
        self.assertEqual(plan["id"], plan_id)
        self.assertEqual(plan["status"], "done", plan)
        self.assertEqual(plan["result"]["graph_hash"], self.hash)
        self.assertEqual(plan["result"]["budget"], self.usable["big"])
        self.assertTrue(plan["result"]["feasible"])
        self.assertLessEqual(plan["result"]["peak_bytes"], self.usable["big"])

    def test_graph_in_environment(self):
        """MEMPLAN_GRAPH in a batch job's environment names the graph as
        the comment does; the default partition (small) does not fit, so
        with routing on the job moves to big, the smallest that fits."""
        self.write_config(route=True)
        r = self.sbatch("-J", "envgraph", env={"MEMPLAN_GRAPH": self.hash})
        self.assertAccepted(r)
        self.assertIn("routed to partition big", r.stderr)
        job = self.cluster.job(r.job_id)
        self.assertEqual(job["Partition"], "big")
        self.assertRegex(job["Comment"], "^memplan:%s budget:%d plan:[0-9a-f]{32}$" % (self.hash, self.usable["big"]))

    def test_does_not_fit_rejected(self):
        """A job that fits none of its partitions is rejected, naming its
        least feasible budget (the daemon's) and the partition's memory."""
        r = self.sbatch("-p", "small", "-J", "nofit", "--comment=memplan:" + self.hash)
        self.assertRejected(r, "does not fit partition small (test-small, %d bytes" % self.usable["small"],
                            "least feasible budget is %d bytes" % self.least, "it fits partition big")
        self.assertNoJob("nofit")

    def test_does_not_fit_routed(self):
        """With route = true it goes to the smallest partition that fits
        (big, not huge), with a plan at big's budget."""
        self.write_config(route=True)
        r = self.sbatch("-p", "small", "-J", "routed", "--comment=memplan:" + self.hash)
        self.assertAccepted(r)
        self.assertIn("least feasible budget is %d bytes" % self.least, r.stderr)
        job = self.cluster.job(r.job_id)
        self.assertEqual(job["Partition"], "big")
        self.assertIn("budget:%d" % self.usable["big"], job["Comment"])

    def test_catalogue_gpu(self):
        """A partition configured by its GPU's catalogue name alone: the
        plan is at the usable bytes the daemon's catalogue gives it."""
        r = self.sbatch("-p", "a100", "-J", "catalogue", "--comment=memplan:" + self.hash)
        self.assertAccepted(r)
        job = self.cluster.job(r.job_id)
        self.assertEqual(job["Partition"], "a100")
        self.assertRegex(job["Comment"], "^memplan:%s budget:%d plan:[0-9a-f]{32}$"
                         % (self.hash, self.catalogue["a100"][1]))

    def test_move_checked(self):
        """A pending job with a plan moves to partitions that offer its
        budget (huge, the catalogue's a100), not to one with fewer bytes
        (small); a job without a plan moves freely."""
        r = self.sbatch("-p", "big", "-J", "move", "--hold", "--comment=memplan:" + self.hash)
        self.assertAccepted(r)
        u = self.cluster.run(["scontrol", "update", "job=" + r.job_id, "partition=small"], check=False)
        self.assertNotEqual(u.returncode, 0, u.stdout)
        self.assertEqual(self.cluster.job(r.job_id)["Partition"], "big")
        self.assertIn("memplan: job %s not moved: its plan was made for %d bytes" % (r.job_id, self.usable["big"]),
                      self.cluster.log())
        self.cluster.run(["scontrol", "update", "job=" + r.job_id, "partition=huge,a100"])
        self.assertEqual(self.cluster.job(r.job_id)["Partition"], "huge,a100")
        plain = self.sbatch("-p", "big", "-J", "moveplain", "--hold")
        self.assertAccepted(plain)
        self.cluster.run(["scontrol", "update", "job=" + plain.job_id, "partition=small"])
        self.assertEqual(self.cluster.job(plain.job_id)["Partition"], "small")
        self.cluster.run(["scancel", r.job_id, plain.job_id])

    def test_partition_list_keeps_those_that_fit(self):
        """Of small,huge only huge fits: the job keeps huge alone."""
        r = self.sbatch("-p", "small,huge", "-J", "list", "--comment=memplan:" + self.hash)
        self.assertAccepted(r)
        job = self.cluster.job(r.job_id)
        self.assertEqual(job["Partition"], "huge")
        self.assertIn("budget:%d" % self.usable["huge"], job["Comment"])

    def test_setup_problems_let_through(self):
        """A partition without a GPU in the configuration, or a configuration
        that cannot be read: the job is let through with a note, even with
        on_error = "hold" (a set-up problem, not the daemon's)."""
        self.write_config(skip=("small",), on_error="hold")
        r = self.sbatch("-p", "small", "-J", "nogpu", "--comment=memplan:" + self.hash)
        self.assertAccepted(r)
        self.assertIn("no partition of the job has a GPU", r.stderr)
        job = self.cluster.job(r.job_id)
        self.assertEqual((job["Partition"], job["Reason"] != "JobHeldAdmin"), ("small", True), job)
        self.assertRegex(job["Comment"], "^memplan:%s unchecked:no_partition_of_the_job_has_a_GPU" % self.hash)

        (pathlib.Path(self.cluster.dir) / "memplan_slurm.conf").write_text("partitions = {\n")
        r = self.sbatch("-p", "big", "-J", "badconf", "--comment=memplan:" + self.hash)
        self.assertAccepted(r)
        self.assertIn("configuration is unreadable", r.stderr)
        self.assertEqual(self.cluster.job(r.job_id)["Comment"],
                         "memplan:%s unchecked:the_plugin_s_configuration_is_unreadable" % self.hash)
        self.assertIn("memplan_slurm.conf", self.cluster.log())

    def test_unknown_graph_rejected(self):
        r = self.sbatch("-p", "big", "-J", "unknown", "--comment=memplan:" + UNKNOWN)
        self.assertRejected(r, "holds no graph " + UNKNOWN)
        self.assertNoJob("unknown")

    def test_malformed_graph_rejected(self):
        r = self.sbatch("-p", "big", "-J", "malformed", "--comment=memplan:abc")
        self.assertRejected(r, "64 hex digits")
        self.assertNoJob("malformed")

    def test_other_jobs_untouched(self):
        """A job that names no graph is left as it is, in any partition."""
        r = self.sbatch("-p", "small", "-J", "plain", "--comment=just a comment")
        self.assertAccepted(r)
        job = self.cluster.job(r.job_id)
        self.assertEqual((job["Partition"], job["Comment"]), ("small", "just a comment"))
        self.assertEqual(r.stderr, "")

    def test_token(self):
        """A daemon with principals: the plugin asks as its own (work) with
        auth_header_file, about a graph another principal sent. The job
        reads its plan by MEMPLAN_PLAN_ID with its own token (read-all: the
        plan is the plugin's principal's), and that plan fits the budget;
        another work principal's token does not find it, and no token is
        401. Without the header: the plugin's fit is 401, let through."""
        tokens = {"slurm": ("work", "slurm-token-0123456789"), "alice": ("work", "alice-token-0123456789"),
                  "jobs": ("read-all", "jobs-token-0123456789")}
        d = Daemon(os.path.join(self.tmp, "daemon-tokens"))
        self.addCleanup(d.cleanup)
        tokfile = os.path.join(d.dir, "tokens")
        with open(tokfile, "w") as f:
            f.writelines("%s %s %s\n" % (n, role, tok) for n, (role, tok) in tokens.items())
        d.flags += ["--token-file", tokfile]
        d.start()
        status, _, fit = d.request("POST", "/v1/fit", {"graph": GRAPH.read_text(), "budgets": [1]},
                                   {"Authorization": "Bearer " + tokens["alice"][1]}, timeout=600)
        self.assertEqual((status, fit["graph_hash"]), (200, self.hash), fit)
        # the plugin's fit, asked first without a time limit (see warm())
        status, _, fit = d.request("POST", "/v1/fit", self.fit_request(),
                                   {"Authorization": "Bearer " + tokens["slurm"][1]}, timeout=600)
        self.assertEqual(status, 200, fit)
        header = os.path.join(self.tmp, "memplan.auth")
        with open(header, "w") as f:
            f.write("Authorization: Bearer %s\n" % tokens["slurm"][1])
        os.chmod(header, 0o600)
        self.write_config(port=d.port, auth_header_file=header, timeout=30)
        job_token = os.path.join(self.tmp, "job.token")
        with open(job_token, "w") as f:
            f.write(tokens["jobs"][1])
        os.chmod(job_token, 0o600)
        fetch = ('for t in %s %s; do curl -sS --max-time 120 -H "Authorization: Bearer $t" '
                 '"$MEMPLAN_URL/v1/plans/$MEMPLAN_PLAN_ID?wait=60" -o plan-$SLURM_JOB_ID-${t%%%%-*}.json '
                 '-w "$t %%{http_code}\\n"; done; curl -sS -o /dev/null -w "none %%{http_code}\\n" '
                 '"$MEMPLAN_URL/v1/plans/$MEMPLAN_PLAN_ID"' % ('$(cat %s)' % job_token, tokens["alice"][1]))
        r = self.sbatch("-p", "big", "-J", "token", "--comment=memplan:" + self.hash, script=fetch)
        self.assertAccepted(r)
        comment = self.cluster.job(r.job_id)["Comment"]
        self.assertRegex(comment, "^memplan:%s budget:%d plan:[0-9a-f]{32}$" % (self.hash, self.usable["big"]))
        plan_id = comment.split(" plan:")[1]
        job = self.cluster.wait_state(r.job_id, ("COMPLETED", "FAILED", "CANCELLED", "NODE_FAIL"))
        self.assertEqual(job["JobState"], "COMPLETED", job)
        codes = dict(line.rsplit(" ", 1) for line in self.job_output(r.job_id).splitlines() if line.strip())
        self.assertEqual(codes, {tokens["jobs"][1]: "200", tokens["alice"][1]: "404", "none": "401"},
                         self.job_output(r.job_id))
        plan = json.loads((pathlib.Path(self.cluster.dir) / "jobs" / ("plan-%s-jobs.json" % r.job_id)).read_text())
        self.assertEqual((plan["id"], plan["owner"], plan["status"]), (plan_id, "slurm", "done"), plan)
        self.assertEqual(plan["result"]["budget"], self.usable["big"])
        self.assertTrue(plan["result"]["feasible"])
        self.assertLessEqual(plan["result"]["peak_bytes"], self.usable["big"])

        self.write_config(port=d.port)
        r = self.sbatch("-p", "big", "-J", "notoken", "--comment=memplan:" + self.hash)
        self.assertAccepted(r)
        self.assertIn("not checked (the fit answered 401", r.stderr)
        self.assertRegex(self.cluster.job(r.job_id)["Comment"], "^memplan:%s unchecked:the_fit_answered_401" % self.hash)

    def test_scripted_202(self):
        """A plan answered 202 (being computed): its id reaches the job, in
        MEMPLAN_PLAN_ID and the comment. A fit answered 202 (still computed
        past the plugin's wait, which it asks to end before its timeout):
        let through with a note."""
        fit = {"graph_hash": self.hash, "budgets": [
            {"budget": b, "fits": b >= self.least, "min_feasible_budget": self.least}
            for b in sorted(self.usable.values())],
            "devices": [{"name": gpu, "usable_bytes": b, "fits": True} for gpu, b in self.catalogue.values()]}
        plan_id = "0123456789abcdef" * 2
        srv = ScriptedServer({"/v1/fit": (200, fit),
                              "/v1/plans": (202, {"id": plan_id, "status": "queued", "graph_hash": self.hash})})
        self.addCleanup(srv.close)
        self.write_config(port=srv.port, timeout=3)
        r = self.sbatch("-p", "big", "-J", "scripted", "--comment=memplan:" + self.hash,
                        script="echo MEMPLAN_PLAN_ID=$MEMPLAN_PLAN_ID")
        self.assertAccepted(r)
        self.assertEqual(self.cluster.job(r.job_id)["Comment"],
                         "memplan:%s budget:%d plan:%s" % (self.hash, self.usable["big"], plan_id))
        self.assertEqual([p for p, _ in srv.requests], ["/v1/fit", "/v1/plans"])
        self.assertEqual(srv.requests[0][1], self.fit_request(wait=2.5))
        self.assertEqual(srv.requests[1][1], {"graph_hash": self.hash, "budget": self.usable["big"], "solver": "auto"})
        self.cluster.wait_state(r.job_id, ("COMPLETED", "FAILED", "CANCELLED", "NODE_FAIL"))
        self.assertIn("MEMPLAN_PLAN_ID=" + plan_id, self.job_output(r.job_id))

        srv.answers["/v1/fit"] = (202, {"id": plan_id, "status": "running", "graph_hash": self.hash, "solver": "auto"})
        r = self.sbatch("-p", "big", "-J", "scripted2", "--comment=memplan:" + self.hash)
        self.assertAccepted(r)
        self.assertIn("not checked (the fit is still being computed)", r.stderr)
        self.assertEqual(self.cluster.job(r.job_id)["Comment"],
                         "memplan:%s unchecked:the_fit_is_still_being_computed" % self.hash)

    # ---- the daemon does not answer (these restart it at the end)

    def test_z_daemon_silent_lets_through(self):
        """A daemon that accepts and never answers: the request ends at the
        timeout and the job runs, marked unchecked."""
        silent = SilentServer()
        self.addCleanup(silent.close)
        self.write_config(port=silent.port, timeout=1)
        r = self.sbatch("-p", "small", "-J", "silent", "--comment=memplan:" + self.hash,
                        script="echo MEMPLAN_UNCHECKED=$MEMPLAN_UNCHECKED")
        self.assertAccepted(r)
        self.assertIn("not checked (no answer within 1 s)", r.stderr)
        job = self.cluster.wait_state(r.job_id, ("COMPLETED", "FAILED", "CANCELLED", "NODE_FAIL"))
        self.assertEqual(job["JobState"], "COMPLETED")
        self.assertEqual(job["Comment"], "memplan:%s unchecked:no_answer_within_1_s" % self.hash)
        self.assertIn("MEMPLAN_UNCHECKED=no answer within 1 s", self.job_output(r.job_id))

    def test_z_daemon_stopped(self):
        """The daemon stopped: a job is let through with a note (the
        default), or held with on_error = "hold"; started again, the daemon
        answers the next job."""
        self.daemon.stop()
        try:
            r = self.sbatch("-p", "small", "-J", "down", "--comment=memplan:" + self.hash)
            self.assertAccepted(r)
            self.assertIn("not checked (connection refused)", r.stderr)
            job = self.cluster.wait_state(r.job_id, ("COMPLETED", "FAILED", "CANCELLED", "NODE_FAIL"))
            self.assertEqual(job["JobState"], "COMPLETED")
            self.assertEqual((job["Partition"], job["Comment"]),
                             ("small", "memplan:%s unchecked:connection_refused" % self.hash))

            self.write_config(on_error="hold")
            r = self.sbatch("-p", "small", "-J", "held", "--comment=memplan:" + self.hash)
            self.assertAccepted(r)
            self.assertIn("held (connection refused)", r.stderr)
            job = self.cluster.job(r.job_id)
            self.assertEqual(job["JobState"], "PENDING")
            self.assertIn(job["Reason"], ("JobHeldAdmin", "JobHeldUser"))
            self.cluster.run(["scancel", r.job_id])
        finally:
            self.daemon.start()
        self.warm()
        self.write_config()
        r = self.sbatch("-p", "big", "-J", "back", "--comment=memplan:" + self.hash)
        self.assertAccepted(r)
        self.assertRegex(self.cluster.job(r.job_id)["Comment"], "^memplan:%s budget:%d plan:[0-9a-f]{32}$"
                         % (self.hash, self.usable["big"]))


if __name__ == "__main__":
    unittest.main(verbosity=2)
