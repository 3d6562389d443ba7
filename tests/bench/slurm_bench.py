"""What the memplan job_submit plugin adds to a submission: sbatch's wall
time for N jobs that name no graph (the plugin returns at once), N that
name a graph whose fit is cached (one fit, one plan request) and a few
against a daemon that accepts and never answers (timeout = 1: the bound).

Runs the Slurm test's cluster (tests/slurm/test_slurm.py: munged,
slurmctld, slurmd as root in a temporary directory) and the built daemon;
prints median and 90th percentile in milliseconds.

    /usr/bin/python3 tests/bench/slurm_bench.py [N]
"""

import os
import pathlib
import shutil
import statistics
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "slurm"))
import test_slurm as ts  # noqa: E402


def timed_sbatch(cluster, args):
    t0 = time.monotonic()
    r = cluster.run(["sbatch", "--parsable", "-o", "/dev/null", "--hold"] + args + ["--wrap", "true"], check=False)
    dt = (time.monotonic() - t0) * 1000
    if r.returncode != 0:
        raise SystemExit("sbatch failed: %s" % r.stderr)
    return dt, r.stderr


def row(name, xs):
    xs = sorted(xs)
    p90 = xs[min(len(xs) - 1, int(0.9 * len(xs)))]
    print("%-36s n=%-3d median %7.1f ms  p90 %7.1f ms" % (name, len(xs), statistics.median(xs), p90))


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    T = ts.TestSlurmPlugin
    T.setUpClass()
    try:
        c = T.cluster
        T.write_config()
        plain, named = [], []
        for _ in range(n):  # alternated, so that load changes both alike
            plain.append(timed_sbatch(c, ["-p", "big"])[0])
            dt, err = timed_sbatch(c, ["-p", "big", "--comment=memplan:" + T.hash])
            if "not checked" in err:
                raise SystemExit("the plugin did not check the job: " + err)
            named.append(dt)
        silent = ts.SilentServer()
        T.write_config(port=silent.port, timeout=1)
        stalled = [timed_sbatch(c, ["-p", "big", "--comment=memplan:" + T.hash])[0] for _ in range(5)]
        silent.close()
        row("sbatch, no graph named", plain)
        row("sbatch, graph named, fit cached", named)
        row("sbatch, daemon silent, timeout = 1", stalled)
    finally:
        T.doClassCleanups()


if __name__ == "__main__":
    main()
