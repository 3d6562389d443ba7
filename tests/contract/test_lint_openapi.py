"""lint_openapi.py on proto/openapi.yaml (no problem), and on copies of it
broken one way each, which it must report under the rule's name."""

import copy
import os
import sys
import unittest

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from lint_openapi import ROOT, Lint, main  # noqa: E402

SPEC = os.path.join(ROOT, "proto", "openapi.yaml")


def load():
    with open(SPEC) as f:
        return yaml.safe_load(f)


def rules(doc, off=("operation-4xx-response",)):
    return {p.split(": ")[1] for p in Lint(doc, set(off)).run()}


class LintOpenapiTest(unittest.TestCase):
    def test_spec_is_clean(self):
        self.assertEqual(main(["lint_openapi.py", SPEC]), 0)

    def test_each_rule_reports(self):
        base = load()
        self.assertEqual(rules(base), set())
        path = "/v1/plans/{id}"
        cases = []

        d = copy.deepcopy(base)
        del d["paths"][path]["get"]["operationId"]
        cases.append((d, "operation-operationId"))
        d = copy.deepcopy(base)
        d["paths"][path]["delete"]["operationId"] = d["paths"][path]["get"]["operationId"]
        cases.append((d, "operation-operationId-unique"))
        d = copy.deepcopy(base)
        d["paths"][path]["get"]["responses"] = {"404": {"description": "no"}}
        cases.append((d, "operation-2xx-response"))
        d = copy.deepcopy(base)
        d["paths"]["/v1/plans/{id}/{part}"] = d["paths"].pop(path)
        cases.append((d, "path-parameters-defined"))
        d = copy.deepcopy(base)
        d["paths"][path]["get"]["responses"]["200"] = {"$ref": "#/components/responses/NoSuch"}
        cases.append((d, "no-unresolved-refs"))
        d = copy.deepcopy(base)
        d["components"]["schemas"]["Unused"] = {"type": "string"}
        cases.append((d, "no-unused-components"))
        d = copy.deepcopy(base)
        name = next(iter(d["components"]["schemas"]))
        d["components"]["schemas"][name]["uniqueItems"] = True
        cases.append((d, "schema-keywords"))
        d = copy.deepcopy(base)
        d["security"] = [{"nosuch": []}]
        cases.append((d, "security-defined"))
        d = copy.deepcopy(base)
        del d["info"]["license"]
        cases.append((d, "info-license"))
        for doc, rule in cases:
            with self.subTest(rule=rule):
                self.assertIn(rule, rules(doc))
                self.assertNotIn(rule, rules(doc, off=("operation-4xx-response", rule)))
        # the 4xx rule is off in proto/redocly.yaml, and reports when on
        self.assertIn("operation-4xx-response", rules(base, off=()))


if __name__ == "__main__":
    unittest.main()
