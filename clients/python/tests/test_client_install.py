"""A plain `pip install ./clients/python` works offline (pip's default build
isolation, no index: the package's build backend is in its tree and needs
nothing from one), in a virtual environment that sees the system's packages
as a user would make one; it installs every subpackage of memplan,
including ones added later (memplan.torch), and `pip install -e` works the
same way. pip and venv are Debian's python3-pip and python3-venv, which
deploy/deps.sh installs: without them the test fails."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import harness
import summary

CHECK = ("import sys, memplan, memplan.probe_sub; "
         "assert memplan.__file__.startswith(sys.argv[1]), memplan.__file__; "
         "assert 'torch' not in sys.modules; "
         "print(memplan.__version__, memplan.Client.__name__)")


class ClientInstallTest(summary.SummarisedTestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="mp-py-install-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        # a copy, so that nothing the build writes lands in the checkout
        self.src = os.path.join(self.tmp, "src")
        shutil.copytree(harness.PKG_DIR, self.src, ignore=shutil.ignore_patterns("tests", "build", "*.egg-info",
                                                                                   "__pycache__"))
        probe = os.path.join(self.src, "memplan", "probe_sub")
        os.mkdir(probe)
        with open(os.path.join(probe, "__init__.py"), "w") as f:
            f.write("PROBE = 1\n")
        self.venv = os.path.join(self.tmp, "venv")
        proc = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", self.venv],
                              capture_output=True, text=True, timeout=300)
        self.assertEqual(proc.returncode, 0, "python3 -m venv (Debian: python3-venv): " + proc.stderr)
        self.python = os.path.join(self.venv, "bin", "python")
        # offline: an index, were one asked, is refused
        self.env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
        self.env.pop("PYTHONPATH", None)

    def pip_install(self, *args):
        proc = subprocess.run([self.python, "-m", "pip", "install", "--quiet"] + list(args),
                              capture_output=True, text=True, env=self.env, cwd=self.tmp, timeout=300)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)

    def imports_from(self, where):
        out = subprocess.run([self.python, "-c", CHECK, where], capture_output=True, text=True, env=self.env,
                             cwd=self.tmp, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.split(), ["0.1.0", "Client"])

    def test_pip_install_offline(self):
        self.pip_install(self.src)
        self.imports_from(os.path.join(self.venv, "lib"))
        meta = subprocess.run([self.python, "-m", "pip", "show", "memplan"], capture_output=True, text=True,
                              env=self.env, timeout=60)
        self.assertIn("Version: 0.1.0", meta.stdout)

    def test_pip_install_editable_offline(self):
        self.pip_install("-e", self.src)
        self.imports_from(self.src)


if __name__ == "__main__":
    unittest.main()
