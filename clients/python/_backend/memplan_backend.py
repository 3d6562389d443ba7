"""memplan_backend: the build backend of the memplan Python package (PEP 517
and PEP 660), in the source tree so that `pip install ./clients/python`
needs nothing from a package index.

The package is pure Python, so a wheel is a zip of the `memplan` tree plus
its .dist-info (METADATA, WHEEL, RECORD) and needs no setuptools. The name,
version, summary, Python requirement and extras come from pyproject.toml's
[project] table; the long description is README.md.
"""

import ast
import base64
import hashlib
import io
import os
import re
import tarfile
import time
import zipfile

try:
    import tomllib
except ImportError:  # Python < 3.11
    tomllib = None

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "memplan"
TAG = "py3-none-any"


def _read_toml(text):
    """The tables of a TOML file as simple as pyproject.toml here: [table]
    headers and `key = value` lines whose values are strings or one-line
    arrays of strings (Python literals too), for Pythons without tomllib."""
    tables, cur = {}, None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = re.fullmatch(r"\[([A-Za-z0-9_.-]+)\]", line)
        if m:
            cur = tables
            for part in m.group(1).split("."):
                cur = cur.setdefault(part, {})
            continue
        key, _, value = line.partition("=")
        cur[key.strip().strip('"')] = ast.literal_eval(value.strip())
    return tables


def _project():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        data = f.read()
    if tomllib is not None:
        return tomllib.loads(data.decode("utf-8"))["project"]
    return _read_toml(data.decode("utf-8"))["project"]


def _dist(p):
    return "%s-%s" % (p["name"].replace("-", "_"), p["version"])


def _metadata(p):
    lines = ["Metadata-Version: 2.1", "Name: " + p["name"], "Version: " + p["version"]]
    if p.get("description"):
        lines.append("Summary: " + p["description"])
    if p.get("requires-python"):
        lines.append("Requires-Python: " + p["requires-python"])
    for req in p.get("dependencies", []):
        lines.append("Requires-Dist: " + req)
    for extra, reqs in sorted(p.get("optional-dependencies", {}).items()):
        lines.append("Provides-Extra: " + extra)
        lines.extend('Requires-Dist: %s; extra == "%s"' % (r, extra) for r in reqs)
    text = "\n".join(lines) + "\n"
    readme = os.path.join(ROOT, p.get("readme", "README.md"))
    if os.path.exists(readme):
        with open(readme, encoding="utf-8") as f:
            text += "Description-Content-Type: text/markdown\n\n" + f.read()
    return text


def _package_files():
    """(path in the wheel, path on disk) of every file of the package, in a
    fixed order, without bytecode caches."""
    out = []
    for d, dirs, files in os.walk(os.path.join(ROOT, PACKAGE)):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__")
        for name in sorted(files):
            if name.endswith((".pyc", ".pyo")):
                continue
            disk = os.path.join(d, name)
            out.append((os.path.relpath(disk, ROOT).replace(os.sep, "/"), disk))
    return out


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (name, digest, len(data))


def _write_wheel(wheel_directory, members):
    """Write a wheel holding `members` ((name, bytes) pairs) and its
    .dist-info; return the wheel's file name."""
    p = _project()
    dist = _dist(p)
    info = dist + ".dist-info"
    members = list(members) + [
        (info + "/METADATA", _metadata(p).encode("utf-8")),
        (info + "/WHEEL", ("Wheel-Version: 1.0\nGenerator: memplan_backend\nRoot-Is-Purelib: true\n"
                           "Tag: %s\n" % TAG).encode()),
        (info + "/top_level.txt", (PACKAGE + "\n").encode()),
    ]
    record = [_record_line(n, d) for n, d in members] + [info + "/RECORD,,"]
    members.append((info + "/RECORD", ("\n".join(record) + "\n").encode()))
    name = "%s-%s.whl" % (dist, TAG)
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in members:
            zi = zipfile.ZipInfo(n, date_time=(1980, 1, 1, 0, 0, 0))
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, d)
    return name


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    members = []
    for name, disk in _package_files():
        with open(disk, "rb") as f:
            members.append((name, f.read()))
    return _write_wheel(wheel_directory, members)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """An editable install: a .pth file that puts this source tree on
    sys.path, so edits take effect without reinstalling."""
    return _write_wheel(wheel_directory, [("memplan_editable.pth", (ROOT + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    p = _project()
    base = _dist(p)
    name = base + ".tar.gz"
    files = [("pyproject.toml", os.path.join(ROOT, "pyproject.toml")),
             ("README.md", os.path.join(ROOT, "README.md"))]
    for d in ("_backend",):
        for f in sorted(os.listdir(os.path.join(ROOT, d))):
            if f.endswith(".py"):
                files.append((d + "/" + f, os.path.join(ROOT, d, f)))
    files += _package_files()
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as t:
        for arc, disk in files:
            with open(disk, "rb") as f:
                data = f.read()
            ti = tarfile.TarInfo(base + "/" + arc)
            ti.size, ti.mode, ti.mtime = len(data), 0o644, int(time.time())
            t.addfile(ti, io.BytesIO(data))
        pkg_info = _metadata(p).encode("utf-8")
        ti = tarfile.TarInfo(base + "/PKG-INFO")
        ti.size, ti.mode, ti.mtime = len(pkg_info), 0o644, int(time.time())
        t.addfile(ti, io.BytesIO(pkg_info))
    return name
