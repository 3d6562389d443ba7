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
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
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
        cls.usable = {"small": cls.least - 1, "big": cls.peak, "huge": 2 * cls.peak}
        cls.warm()
        cls.cluster = Cluster(os.path.join(cls.tmp, "slurm"))
        cls.addClassCleanup(cls.cluster.stop)
        os.makedirs(cls.cluster.dir, exist_ok=True)
        cls.write_config()
        cls.cluster.start(["small", "big", "huge"])

    @classmethod
    def warm(cls):
        """The fit the plugin sends (every partition's bytes, ascending),
        asked here first without a time limit, so that the plugin's is
        answered from the cache whatever the machine's speed (a slow
        first fit would be let through unchecked, by design)."""
        status, _, fit = cls.daemon.request("POST", "/v1/fit", {
            "graph_hash": cls.hash, "budgets": sorted(cls.usable.values()), "solver": "auto"}, timeout=600)
        assert status == 200, (status, fit)

    @classmethod
    def write_config(cls, port=None, **kw):
        """memplan_slurm.conf next to the plugin (read at every submission)."""
        opts = {"timeout": 10, "on_error": "let_through", "route": False}
        opts.update(kw)
        text = ['url = "http://127.0.0.1:%d"' % (port or cls.daemon.port)]
        for k, v in opts.items():
            text.append("%s = %s" % (k, json.dumps(v)))
        text.append("partitions = {")
        for name, b in cls.usable.items():
            text.append('  %s = { gpu = "test-%s", usable = %d },' % (name, name, b))
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
        environment carry a plan at the partition's budget, which the job
        fetches from the daemon, and that plan fits."""
        fetch = ('env | grep ^MEMPLAN_ | sort; curl -sS --max-time 120 '
                 '"$MEMPLAN_URL/v1/plans/$MEMPLAN_PLAN_ID?wait=60" > plan-$SLURM_JOB_ID.json')
        r = self.sbatch("-p", "big", "-J", "fits", "--comment=memplan:" + self.hash, script=fetch)
        self.assertAccepted(r)
        job = self.cluster.wait_state(r.job_id, ("COMPLETED", "FAILED", "CANCELLED", "NODE_FAIL"))
        self.assertEqual(job["JobState"], "COMPLETED", job)
        self.assertEqual(job["Partition"], "big")
        env = dict(line.split("=", 1) for line in self.job_output(r.job_id).splitlines() if "=" in line)
        self.assertEqual(env["MEMPLAN_GRAPH"], self.hash)
        self.assertEqual(int(env["MEMPLAN_BUDGET"]), self.usable["big"])
        self.assertRegex(env["MEMPLAN_PLAN_ID"], "^[0-9a-f]{32}$")
        self.assertEqual(env["MEMPLAN_URL"], "http://127.0.0.1:%d" % self.daemon.port)
        self.assertEqual(job["Comment"], "memplan:%s plan:%s budget:%d"
                         % (self.hash, env["MEMPLAN_PLAN_ID"], self.usable["big"]))
        plan = json.loads((pathlib.Path(self.cluster.dir) / "jobs" / ("plan-%s.json" % r.job_id)).read_text())
        self.assertEqual(plan["id"], env["MEMPLAN_PLAN_ID"])
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
        self.assertRegex(job["Comment"], "^memplan:%s plan:[0-9a-f]{32} budget:%d$" % (self.hash, self.usable["big"]))

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

    def test_partition_list_keeps_those_that_fit(self):
        """Of small,huge only huge fits: the job keeps huge alone."""
        r = self.sbatch("-p", "small,huge", "-J", "list", "--comment=memplan:" + self.hash)
        self.assertAccepted(r)
        job = self.cluster.job(r.job_id)
        self.assertEqual(job["Partition"], "huge")
        self.assertIn("budget:%d" % self.usable["huge"], job["Comment"])

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
        auth_header_file, about a graph another principal sent; a job's
        read-all token reads the plan. Without the header: 401, let through."""
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
        status, _, fit = d.request("POST", "/v1/fit", {
            "graph_hash": self.hash, "budgets": sorted(self.usable.values()), "solver": "auto"},
            {"Authorization": "Bearer " + tokens["slurm"][1]}, timeout=600)
        self.assertEqual(status, 200, fit)
        header = os.path.join(self.tmp, "memplan.auth")
        with open(header, "w") as f:
            f.write("Authorization: Bearer %s\n" % tokens["slurm"][1])
        os.chmod(header, 0o600)
        self.write_config(port=d.port, auth_header_file=header, timeout=30)
        r = self.sbatch("-p", "big", "-J", "token", "--comment=memplan:" + self.hash)
        self.assertAccepted(r)
        comment = self.cluster.job(r.job_id)["Comment"]
        self.assertRegex(comment, "^memplan:%s plan:[0-9a-f]{32} budget:%d$" % (self.hash, self.usable["big"]))
        plan_id = comment.split()[1][len("plan:"):]
        status, _, view = d.request("GET", "/v1/plans/%s?wait=60" % plan_id, None,
                                    {"Authorization": "Bearer " + tokens["jobs"][1]}, timeout=120)
        self.assertEqual((status, view["status"], view["result"]["budget"]), (200, "done", self.usable["big"]), view)

        self.write_config(port=d.port)
        r = self.sbatch("-p", "big", "-J", "notoken", "--comment=memplan:" + self.hash)
        self.assertAccepted(r)
        self.assertIn("not checked (the fit answered 401", r.stderr)
        self.assertRegex(self.cluster.job(r.job_id)["Comment"], "^memplan:%s unchecked:the_fit_answered_401" % self.hash)

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
        self.assertRegex(self.cluster.job(r.job_id)["Comment"], " plan:[0-9a-f]{32} ")


if __name__ == "__main__":
    unittest.main(verbosity=2)
