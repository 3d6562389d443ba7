"""`pip install ./clients/python` works offline with the system's setuptools
(no build isolation, no downloads), and installs every subpackage of
memplan, including ones added later (memplan.torch)."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import harness
import summary


def _have(module):
    return subprocess.run([sys.executable, "-c", "import " + module], capture_output=True).returncode == 0


@unittest.skipUnless(_have("pip") and _have("setuptools"), "needs pip and setuptools (python3-pip)")
class ClientInstallTest(summary.SummarisedTestCase):
    def test_pip_install_offline(self):
        tmp = tempfile.mkdtemp(prefix="mp-py-install-")
        try:
            # a copy, so the build's build/ and egg-info stay out of the checkout
            src = os.path.join(tmp, "src")
            shutil.copytree(harness.PKG_DIR, src, ignore=shutil.ignore_patterns("tests", "build", "*.egg-info",
                                                                                   "__pycache__"))
            probe = os.path.join(src, "memplan", "probe_sub")
            os.mkdir(probe)
            with open(os.path.join(probe, "__init__.py"), "w") as f:
                f.write("PROBE = 1\n")
            target = os.path.join(tmp, "site")
            env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
            proc = subprocess.run([sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps",
                                   "--no-index", "--quiet", "--target", target, src],
                                  capture_output=True, text=True, env=env, timeout=300)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            check = ("import sys, memplan, memplan.probe_sub; "
                     "assert memplan.__file__.startswith(sys.argv[1]), memplan.__file__; "
                     "assert 'torch' not in sys.modules; "
                     "print(memplan.__version__, memplan.Client.__name__)")
            env = dict(os.environ, PYTHONPATH=target)
            out = subprocess.run([sys.executable, "-c", check, target], capture_output=True, text=True, env=env,
                                 cwd=tmp, timeout=60)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertEqual(out.stdout.split(), ["0.1.0", "Client"])
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
