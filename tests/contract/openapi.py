"""The parts of proto/openapi.yaml a contract test needs: which operation
answers a request, the schema of its answer for a status and content type,
and a validator for the subset of OpenAPI 3.0 schemas the spec uses.

Keywords understood: $ref (to #/components/...), type (object, array,
string, integer, number, boolean), nullable, properties, required,
additionalProperties (false or a schema), items, minItems, maxItems, enum,
oneOf, anyOf, allOf, minimum, maximum, exclusiveMinimum and
exclusiveMaximum (3.0's boolean forms), minLength, pattern and format
date-time. Annotations (description, example, default, summary,
deprecated) are ignored. Anything else is an error, so that a keyword the validator does
not know cannot pass silently.

Strict objects: where a schema lists `properties` and says nothing about
`additionalProperties`, an answer's field that the schema does not list is
reported as undocumented. OpenAPI itself would let it pass; for a contract
test the spec is the list of what the daemon sends.
"""

import re

import yaml

ANNOTATIONS = {"description", "example", "default", "summary", "title", "deprecated"}
KNOWN = ANNOTATIONS | {
    "$ref", "type", "nullable", "properties", "required", "additionalProperties", "items",
    "minItems", "maxItems", "enum", "oneOf", "anyOf", "allOf", "minimum", "maximum",
    "exclusiveMinimum", "exclusiveMaximum", "minLength", "pattern", "format",
}
RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


class Spec:
    def __init__(self, path):
        with open(path) as f:
            self.doc = yaml.safe_load(f)
        # path templates as regular expressions, literal paths first
        self.paths = []
        for template in self.doc["paths"]:
            rx = "^" + re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template)) + "$"
            self.paths.append((template.count("{"), template, re.compile(rx)))
        self.paths.sort()

    def resolve(self, node):
        """Follow $ref (chains included) to the node it names."""
        seen = set()
        while isinstance(node, dict) and "$ref" in node:
            ref = node["$ref"]
            if not ref.startswith("#/") or ref in seen:
                raise ValueError("unsupported or circular $ref %s" % ref)
            seen.add(ref)
            node = self.doc
            for part in ref[2:].split("/"):
                node = node[part.replace("~1", "/").replace("~0", "~")]
        return node

    def template(self, path):
        """The spec's path template for a concrete path, or None."""
        path = path.split("?", 1)[0]
        for _, template, rx in self.paths:
            if rx.match(path):
                return template
        return None

    def operation(self, method, path):
        template = self.template(path)
        if template is None:
            return None, None
        return template, self.doc["paths"][template].get(method.lower())

    def documented(self):
        """Every (method, template, status) the spec documents."""
        out = set()
        for template, item in self.doc["paths"].items():
            for method, op in item.items():
                if method == "parameters":
                    continue
                for status in op.get("responses", {}):
                    out.add((method.upper(), template, str(status)))
        return out

    def response(self, op, status):
        """The response object of `op` for `status` (exact, 4XX, default)."""
        responses = op.get("responses", {})
        for key in (str(status), "%dXX" % (status // 100), "default"):
            if key in responses:
                return self.resolve(responses[key]), key
        return None, None

    def validate(self, schema, value, where="$", strict=True):
        """The list of problems of `value` against `schema` (empty: valid)."""
        errors = []
        self._check(schema, value, where, strict, errors)
        return errors

    def _check(self, schema, value, where, strict, errors):
        schema = self.resolve(schema)
        unknown = set(schema) - KNOWN
        if unknown:
            errors.append("%s: the schema uses %s, which this validator does not know" % (where, sorted(unknown)))
            return
        if value is None:
            if not schema.get("nullable", False) and ("type" in schema or "enum" in schema):
                errors.append("%s: null, but the schema is not nullable" % where)
                return
            if "type" in schema:
                return
        t = schema.get("type")
        if t is not None and not _is_type(value, t):
            errors.append("%s: %s is not of type %s" % (where, _short(value), t))
            return
        if "enum" in schema and value not in schema["enum"]:
            errors.append("%s: %s is not one of %s" % (where, _short(value), schema["enum"]))
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if "minimum" in schema:
                low, excl = schema["minimum"], schema.get("exclusiveMinimum", False)
                if value < low or (excl and value == low):
                    errors.append("%s: %s is below the minimum %s" % (where, value, low))
            if "maximum" in schema:
                high, excl = schema["maximum"], schema.get("exclusiveMaximum", False)
                if value > high or (excl and value == high):
                    errors.append("%s: %s is above the maximum %s" % (where, value, high))
        if isinstance(value, str):
            if len(value) < schema.get("minLength", 0):
                errors.append("%s: %r is shorter than %d" % (where, value, schema["minLength"]))
            if "pattern" in schema and not re.search(schema["pattern"], value):
                errors.append("%s: %r does not match %s" % (where, value, schema["pattern"]))
            if schema.get("format") == "date-time" and not RFC3339.match(value):
                errors.append("%s: %r is not an RFC 3339 date-time" % (where, value))
        if isinstance(value, list):
            if len(value) < schema.get("minItems", 0):
                errors.append("%s: %d items, fewer than %d" % (where, len(value), schema["minItems"]))
            if "maxItems" in schema and len(value) > schema["maxItems"]:
                errors.append("%s: %d items, more than %d" % (where, len(value), schema["maxItems"]))
            if "items" in schema:
                for i, item in enumerate(value):
                    self._check(schema["items"], item, "%s[%d]" % (where, i), strict, errors)
        if isinstance(value, dict):
            props = schema.get("properties", {})
            for key in schema.get("required", []):
                if key not in value:
                    errors.append("%s: the required field %s is missing" % (where, key))
            extra = schema.get("additionalProperties")
            for key, item in value.items():
                if key in props:
                    self._check(props[key], item, "%s.%s" % (where, key), strict, errors)
                elif extra is False:
                    errors.append("%s: the field %s is not allowed" % (where, key))
                elif isinstance(extra, dict):
                    self._check(extra, item, "%s.%s" % (where, key), strict, errors)
                elif strict and props and extra is None:
                    errors.append("%s: the field %s is not documented" % (where, key))
        for sub in schema.get("allOf", []):
            self._check(sub, value, where, strict, errors)
        if "anyOf" in schema:
            if not any(not self.validate(sub, value, where, strict) for sub in schema["anyOf"]):
                errors.append("%s: %s matches none of anyOf" % (where, _short(value)))
        if "oneOf" in schema:
            results = [self.validate(sub, value, where, strict) for sub in schema["oneOf"]]
            matched = sum(1 for r in results if not r)
            if matched != 1:
                detail = "; ".join(e for r in results for e in r[:1])
                errors.append("%s: %s matches %d of oneOf, not exactly one (%s)" % (where, _short(value), matched, detail))


def _is_type(value, t):
    if t == "object":
        return isinstance(value, dict)
    if t == "array":
        return isinstance(value, list)
    if t == "string":
        return isinstance(value, str)
    if t == "boolean":
        return isinstance(value, bool)
    if t == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if t == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    raise ValueError("unknown type %s" % t)


def _short(value):
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
