"""A throw-away PostgreSQL server and memplan-server replicas on it, for
tests/pg/test_replicas.py and tests/bench/pg_bench.py (standard library only).

Postgres: created in a temporary directory with initdb, listening on
127.0.0.1 and a socket in that directory only, run as the `postgres` user
when this runs as root (PostgreSQL refuses root). Replica: the built daemon
(MEMPLAN_SERVER) on a free port with --store pointing at it, started at
once (tests/memplan_daemon.py's Daemon).
"""

import glob
from http.client import HTTPException
import os
import pathlib
import pwd
import re
import signal
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from memplan_daemon import ROOT, SERVER, Daemon, request, until  # noqa: E402,F401  (until: for the tests)


def pg_bindir():
    """Where initdb and pg_ctl are, or None."""
    try:
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, check=True).stdout.strip()
        if os.path.exists(os.path.join(out, "initdb")):
            return out
    except (OSError, subprocess.CalledProcessError):
        pass
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return os.path.dirname(found[-1]) if found else None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(port, method, path, body=None, timeout=90, headers=None):
    """(status, JSON body or text) of one request; (0, None) when nothing answers."""
    try:
        status, _, parsed, _ = request(port, method, path, body, headers, timeout)
    except (OSError, HTTPException):
        return 0, None
    return status, parsed


class Postgres:
    """A PostgreSQL server in tmp/pg on 127.0.0.1 (a free port)."""

    def __init__(self, tmp):
        self.bindir = pg_bindir()
        self.tmp = tmp
        self.data = os.path.join(tmp, "pg")
        self.port = free_port()
        self.as_root = os.geteuid() == 0
        self.running = False

    def run(self, *args, check=True):
        cmd = [os.path.join(self.bindir, args[0])] + list(args[1:])
        if self.as_root:
            cmd = ["runuser", "-u", "postgres", "--"] + cmd
        return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=check)

    def init(self):
        if self.as_root:
            pw = pwd.getpwnam("postgres")
            os.chown(self.tmp, pw.pw_uid, pw.pw_gid)
        self.run("initdb", "-D", self.data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync")
        self.start()

    def start(self):
        self.run("pg_ctl", "-D", self.data, "-w", "-t", "60", "-l", os.path.join(self.tmp, "pg.log"),
                 "-o", "-k %s -h 127.0.0.1 -p %d" % (self.tmp, self.port), "start")
        self.running = True

    def stop(self, mode="fast"):
        if self.running:
            self.run("pg_ctl", "-D", self.data, "-w", "-t", "60", "-m", mode, "stop", check=False)
            self.running = False

    def uri(self, db="postgres"):
        return "postgresql://postgres@127.0.0.1:%d/%s" % (self.port, db)

    def sql(self, db, query):
        """One query through psql (the client next to initdb), its rows as lists of strings."""
        out = self.run("psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d", db, "-AtX",
                       "-F", "\t", "-c", query).stdout
        return [line.split("\t") for line in out.splitlines() if line]

    def pids(self):
        """The postmaster and its children (the backends)."""
        try:
            master = int(pathlib.Path(self.data, "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return []
        found = [master]
        for stat in glob.glob("/proc/[0-9]*/stat"):
            try:
                fields = pathlib.Path(stat).read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == master:
                found.append(int(stat.split("/")[2]))
        return found


def cpu_seconds(pid):
    """User + system CPU seconds of a process so far (0 when it is gone)."""
    try:
        fields = pathlib.Path("/proc/%d/stat" % pid).read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Replica(Daemon):
    """memplan-server on a free port, its files in tmp/name, on `store`."""

    def __init__(self, tmp, name, store, lease=2, workers=2, delay_ms=0, extra=()):
        super().__init__(os.path.join(tmp, name),
                         ["--workers", str(workers), "--store", store, "--store-lease", str(lease), "--grace", "5",
                          # the tests name clients by X-Client-Id, which only a trusted proxy may send
                          "--trusted-proxy", "127.0.0.1"]
                         + list(extra), delay_ms=delay_ms)
        self.start()

    def kill9(self):
        self.kill(signal.SIGKILL)

    def stop(self):
        """SIGTERM and wait: the exit status (None when it had to be killed)."""
        return super().stop(check=False, timeout=30)

    def status(self):
        body = http(self.port, "GET", "/v1/status")[1]
        return body if isinstance(body, dict) else {}

    def computations(self):
        text = http(self.port, "GET", "/metrics")[1]
        m = re.search(r'memplan_computations_total\{kind="plan"\} (\d+)', text if isinstance(text, str) else "")
        return int(m.group(1)) if m else 0
