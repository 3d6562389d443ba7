"""The closing line of a Python test run.

unittest's own ending ("Ran 14 tests ... OK") sits under a page of -v
output and says nothing about skips when they are few; this prints one line
in the Check runner's manner after it:

    memplan python tests: 14 run, 0 failures, 0 errors, 1 skipped: OK

SummarisedTestCase keeps the TestResult of the first test it sees (the
runner's one result for the whole run, so every test counts, ours or not)
and an atexit hook prints it once unittest has finished.
"""

import atexit
import sys
import unittest

_result = None


def _print_summary():
    r = _result
    if r is None:
        return
    problems = len(r.failures) + len(r.errors) + len(getattr(r, "unexpectedSuccesses", ()))
    verdict = "OK" if r.wasSuccessful() and problems == 0 else "FAILED"
    sys.stdout.flush()
    sys.stderr.write("memplan python tests: %d run, %d failures, %d errors, %d skipped: %s\n"
                     % (r.testsRun, len(r.failures), len(r.errors), len(r.skipped), verdict))
    sys.stderr.flush()


class SummarisedTestCase(unittest.TestCase):
    """A TestCase whose run registers the closing line."""

    def run(self, result=None):
        global _result
        if result is not None and _result is None:
            _result = result
            atexit.register(_print_summary)
        return super().run(result)
