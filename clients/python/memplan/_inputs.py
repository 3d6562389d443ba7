"""Turning what a Python caller holds into the daemon's request fields.

A graph goes out as ``graph`` (a native or node-link JSON object, or
Kusumoto text as a JSON string) or, when it is a graph hash, as
``graph_hash``. Budgets go out as the daemon takes them: integers of bytes or
strings such as "2GiB", which the daemon parses itself so that units mean
the same as on its command line; only integer-like objects (numpy integers,
integral floats) are turned into plain ints here. Everything else is left to
the daemon, whose error names the field at fault.
"""

import json
import os
import re

_HASH = re.compile(r"[0-9a-f]{64}")


def is_graph_hash(value):
    """Is ``value`` a graph hash (64 lowercase hexadecimal digits)?"""
    return isinstance(value, str) and _HASH.fullmatch(value) is not None


def _from_text(text):
    """JSON text becomes its object; anything else is Kusumoto text."""
    if text.lstrip().startswith("{"):
        return json.loads(text)
    return text


def _read(path):
    with open(path, "r", encoding="utf-8") as f:
        return _from_text(f.read())


def _from_file(path):
    """A graph file's fields: the graph, and its file name without the
    extension as graph_name (the daemon uses it when the graph carries no
    name of its own, as Kusumoto text never does; `memplan` names graphs
    the same way)."""
    stem = os.path.splitext(os.path.basename(os.fspath(path)))[0]
    fields = {"graph": _read(path)}
    if stem:
        fields["graph_name"] = stem.encode("utf-8")[:256].decode("utf-8", "ignore")
    return fields


def is_graph_text(text):
    """Is the str ``text`` a graph itself rather than a file's path? JSON
    text starts with "{", and Kusumoto text has a header line and records,
    so more than one line; a path is one line (it may name no file: opening
    it then raises FileNotFoundError)."""
    stripped = text.strip()
    return stripped.startswith("{") or "\n" in stripped


def graph_fields(graph):
    """The request fields naming ``graph``: {"graph": ...} or {"graph_hash": ...}.

    ``graph`` is a dict (native memplan.graph/1 or networkx node-link), a
    graph hash, graph text (bytes, or a str that is_graph_text: JSON or
    Kusumoto), or the path of a file holding one (an os.PathLike, or any
    other str; then also {"graph_name": the file's name without its
    extension}). A path that names no file raises FileNotFoundError, as
    open() does.
    """
    if isinstance(graph, dict):
        return {"graph": graph}
    if isinstance(graph, (bytes, bytearray)):
        return {"graph": _from_text(bytes(graph).decode("utf-8"))}
    if isinstance(graph, str):
        if is_graph_hash(graph):
            return {"graph_hash": graph}
        if is_graph_text(graph):
            return {"graph": _from_text(graph)}
        return _from_file(graph)
    if isinstance(graph, os.PathLike):
        return _from_file(graph)
    raise TypeError("graph must be a dict, a graph hash, graph text or a path, not %s" % type(graph).__name__)


def budget_value(budget):
    """A budget as JSON: bytes as an int, or the caller's string ("2GiB")."""
    if isinstance(budget, (str, bool)):
        return budget
    if isinstance(budget, float) and budget.is_integer():
        return int(budget)
    if hasattr(budget, "__index__"):
        return budget.__index__()
    return budget


def budget_list(budgets):
    """One budget or an iterable of them, as a JSON list."""
    if isinstance(budgets, (str, bytes, int, float)) or hasattr(budgets, "__index__"):
        return [budget_value(budgets)]
    return [budget_value(b) for b in budgets]
