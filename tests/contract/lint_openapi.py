"""lint_openapi.py - `make lint-openapi`: proto/openapi.yaml checked offline.

The rules are those of redocly's `recommended` set that a spec can break
without the daemon noticing, under redocly's names, so that
proto/redocly.yaml turns them off the same way (`rules: NAME: off`) for this
lint and for `redocly lint` where that is installed:

- spec: an OpenAPI 3.0 document with paths and info (title, version);
- info-license, info-license-url;
- operation-operationId, operation-operationId-unique;
- operation-summary (a summary or a description);
- operation-2xx-response, operation-4xx-response;
- path-parameters-defined: each {name} of a path is a required path
  parameter of its operations, and no path parameter names nothing;
- operation-parameters-unique (by name and location);
- no-unresolved-refs, no-unused-components;
- security-defined: every security requirement names a scheme;
- and one of memplan's own, schema-keywords: every schema uses only the
  keywords tests/contract/openapi.py validates, so that the contract test
  checks every answer against all of its schema.

Prints one line per problem and exits 1 if there is any, else one line and 0.
Run: python3 tests/contract/lint_openapi.py [proto/openapi.yaml [proto/redocly.yaml]]
"""

import os
import re
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from openapi import KNOWN  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
# keywords whose value holds schemas, and how
SCHEMA_MAP = ("properties",)
SCHEMA_ONE = ("items", "additionalProperties", "not")
SCHEMA_LIST = ("oneOf", "anyOf", "allOf")


class Lint:
    def __init__(self, doc, off):
        self.doc, self.off, self.problems, self.refs = doc, off, [], set()

    def report(self, rule, where, message):
        if rule not in self.off:
            self.problems.append("%s: %s: %s" % (where, rule, message))

    def resolve(self, ref, where):
        """The object a local $ref names, or None (and a problem)."""
        self.refs.add(ref)
        if not ref.startswith("#/"):
            self.report("no-unresolved-refs", where, "%s is not a local reference" % ref)
            return None
        node = self.doc
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, dict) or part not in node:
                self.report("no-unresolved-refs", where, "%s does not resolve" % ref)
                return None
            node = node[part]
        return node

    def walk_refs(self, node, where):
        """Every $ref under node, resolved (so that it counts as used)."""
        if isinstance(node, dict):
            if isinstance(node.get("$ref"), str):
                self.resolve(node["$ref"], where)
            for k, v in node.items():
                self.walk_refs(v, "%s.%s" % (where, k))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                self.walk_refs(v, "%s[%d]" % (where, i))

    def schema(self, s, where):
        if not isinstance(s, dict):
            if s is not True and s is not False:
                self.report("schema-keywords", where, "a schema must be an object")
            return
        for k in s:
            if k not in KNOWN:
                self.report("schema-keywords", where, "keyword %r is not one the contract test validates" % k)
        for k in SCHEMA_MAP:
            for name, sub in (s.get(k) or {}).items():
                self.schema(sub, "%s.%s.%s" % (where, k, name))
        for k in SCHEMA_ONE:
            if k in s:
                self.schema(s[k], "%s.%s" % (where, k))
        for k in SCHEMA_LIST:
            for i, sub in enumerate(s.get(k) or []):
                self.schema(sub, "%s.%s[%d]" % (where, k, i))

    def deref(self, node, where):
        while isinstance(node, dict) and "$ref" in node:
            node = self.resolve(node["$ref"], where)
        return node

    def content_schemas(self, holder, where):
        for ctype, media in ((holder or {}).get("content") or {}).items():
            if "schema" in media:
                self.schema(media["schema"], "%s.content[%s].schema" % (where, ctype))

    def run(self):
        d = self.doc
        if not str(d.get("openapi", "")).startswith("3.0."):
            self.report("spec", "$", "openapi must be 3.0.x, not %r" % d.get("openapi"))
        info = d.get("info") or {}
        for k in ("title", "version"):
            if not info.get(k):
                self.report("spec", "$.info", "no %s" % k)
        if not info.get("license"):
            self.report("info-license", "$.info", "no license")
        elif not info["license"].get("url"):
            self.report("info-license-url", "$.info.license", "no url")
        if not d.get("paths"):
            self.report("spec", "$", "no paths")
        schemes = ((d.get("components") or {}).get("securitySchemes") or {})
        seen_ids = {}
        for req in d.get("security") or []:
            for name in req:
                if name not in schemes:
                    self.report("security-defined", "$.security", "no security scheme %r" % name)
        for path, item in (d.get("paths") or {}).items():
            names = set(re.findall(r"\{([^}/]+)\}", path))
            common = item.get("parameters") or []
            for method in METHODS:
                op = item.get(method)
                if op is None:
                    continue
                where = "%s %s" % (method.upper(), path)
                oid = op.get("operationId")
                if not oid:
                    self.report("operation-operationId", where, "no operationId")
                elif oid in seen_ids:
                    self.report("operation-operationId-unique", where, "operationId %s also on %s" %
                                (oid, seen_ids[oid]))
                else:
                    seen_ids[oid] = where
                if not op.get("summary") and not op.get("description"):
                    self.report("operation-summary", where, "no summary or description")
                codes = [str(c) for c in (op.get("responses") or {})]
                if not any(c.startswith("2") for c in codes):
                    self.report("operation-2xx-response", where, "no 2xx response")
                if not any(c.startswith("4") for c in codes):
                    self.report("operation-4xx-response", where, "no 4xx response")
                params, keys = [], set()
                for p in common + (op.get("parameters") or []):
                    p = self.deref(p, where)
                    if not isinstance(p, dict):
                        continue
                    key = (p.get("name"), p.get("in"))
                    if key in keys and p in (op.get("parameters") or []):
                        self.report("operation-parameters-unique", where, "parameter %s in %s twice" % key)
                    keys.add(key)
                    params.append(p)
                    if "schema" in p:
                        self.schema(p["schema"], "%s parameter %s" % (where, p.get("name")))
                in_path = {p.get("name"): p for p in params if p.get("in") == "path"}
                for n in names:
                    if n not in in_path:
                        self.report("path-parameters-defined", where, "{%s} is not a parameter" % n)
                    elif in_path[n].get("required") is not True:
                        self.report("path-parameters-defined", where, "{%s} must be required" % n)
                for n in in_path:
                    if n not in names:
                        self.report("path-parameters-defined", where, "path parameter %s is not in the path" % n)
                for req in op.get("security") or []:
                    for name in req:
                        if name not in schemes:
                            self.report("security-defined", where, "no security scheme %r" % name)
                if "requestBody" in op:
                    self.content_schemas(self.deref(op["requestBody"], where), where + " requestBody")
                for code, resp in (op.get("responses") or {}).items():
                    self.content_schemas(self.deref(resp, where), "%s response %s" % (where, code))
        self.walk_refs(d.get("paths"), "$.paths")
        comps = d.get("components") or {}
        for kind in ("schemas", "responses", "parameters", "requestBodies", "headers"):
            for name, node in (comps.get(kind) or {}).items():
                if kind == "schemas":
                    self.schema(node, "$.components.schemas.%s" % name)
                self.walk_refs(node, "$.components.%s.%s" % (kind, name))
        for kind in ("schemas", "responses", "parameters", "requestBodies", "headers"):
            for name in comps.get(kind) or {}:
                if "#/components/%s/%s" % (kind, name) not in self.refs:
                    self.report("no-unused-components", "$.components.%s.%s" % (kind, name), "never referenced")
        return self.problems


def main(argv):
    spec = argv[1] if len(argv) > 1 else os.path.join(ROOT, "proto", "openapi.yaml")
    config = argv[2] if len(argv) > 2 else os.path.join(os.path.dirname(spec), "redocly.yaml")
    with open(spec) as f:
        doc = yaml.safe_load(f)
    off = set()
    if os.path.exists(config):
        with open(config) as f:
            rules = (yaml.safe_load(f) or {}).get("rules") or {}
        off = {name for name, level in rules.items() if level in ("off", False)}
    problems = Lint(doc, off).run()
    for p in problems:
        print("%s: %s" % (os.path.relpath(spec), p))
    n_ops = sum(1 for item in doc.get("paths", {}).values() for m in METHODS if m in item)
    print("lint-openapi: %s: %d operations, %d problems%s" % (
        os.path.relpath(spec), n_ops, len(problems), (" (off: %s)" % ", ".join(sorted(off))) if off else ""))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
