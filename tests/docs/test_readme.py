"""The README's examples run as written.

Every ```sh block of README.md whose lines are all commands a reader can
paste here (curl to the daemon, build/memplan, shell variables set from
them) is run with bash -euo pipefail from the checkout, against a real
memplan-server started on a free loopback port: `localhost:8080` in the text
becomes that port, `/tmp/` a scratch directory, and `build/` the directory
of $MEMPLAN_CLI. Blocks holding placeholders (GRAPH, [options]), make,
kubectl or docker are not run; the test fails if fewer than the three
known runnable blocks are found, so an example cannot silently drop out.
Each block must exit 0 and print only JSON documents (one per command).
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "clients", "python", "tests"))

import harness  # noqa: E402  (the real daemon of this checkout)

RUNNABLE = re.compile(r"^(curl |build/memplan |[A-Z]+=\$\()")


def sh_blocks(text):
    """(first line number, lines) of each ```sh block."""
    blocks, cur, start = [], None, 0
    for no, line in enumerate(text.splitlines(), 1):
        if cur is None and line.strip() == "```sh":
            cur, start = [], no + 1
        elif cur is not None and line.strip() == "```":
            blocks.append((start, cur))
            cur = None
        elif cur is not None:
            cur.append(line)
    return blocks


def runnable(lines):
    heads = [l for l in lines if l.strip() and not l.startswith(" ")]
    return heads and all(RUNNABLE.match(l) for l in heads) and not any(
        re.search(r"\bGRAPH\b|\[--", l) for l in lines)


def json_documents(text):
    """Decode the concatenated JSON documents of `text`; fail on anything else."""
    dec, i, docs = json.JSONDecoder(), 0, []
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i == len(text):
            return docs
        doc, i = dec.raw_decode(text, i)
        docs.append(doc)


class ReadmeExamples(unittest.TestCase):
    def test_examples_run(self):
        with open(os.path.join(REPO, "README.md")) as f:
            blocks = [(n, b) for n, b in sh_blocks(f.read()) if runnable(b)]
        self.assertGreaterEqual(len(blocks), 3, "the quick start, CLI and data-migration examples")
        build = os.path.dirname(harness.CLI)
        scratch = tempfile.mkdtemp(prefix="mp-readme-")
        daemon = harness.Daemon()
        try:
            host = daemon.url.split("://", 1)[1]
            for start, lines in blocks:
                script = "\n".join(lines).replace("localhost:8080", host).replace(
                    "/tmp/", scratch + "/")
                script = re.sub(r"(^|\s)build/", lambda m: m.group(1) + build + "/", script,
                                flags=re.M)
                with self.subTest(line=start):
                    p = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=REPO,
                                       capture_output=True, text=True, timeout=300)
                    self.assertEqual(p.returncode, 0, "README line %d: %s" % (start, p.stderr))
                    docs = json_documents(p.stdout)
                    self.assertTrue(docs, "README line %d printed nothing" % start)
                    for d in docs:
                        self.assertNotIn("error", d, "README line %d: %s" % (start, d))
        finally:
            daemon.stop()
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
