"""_laws.py - laws of memplan.graph/2: a node's bytes or time as a
polynomial in the graph's dimensions, fitted from replays at a few values,
checked at the values the fit did not use, and evaluated at a binding.

A law is a list of (coefficient, exponents) pairs, the exponents one per
dimension in the graph's order; on the wire it is
{"terms": [{"c": 802816, "batch": 1}, {"c": 512}]} (docs/forecast.md).

Which points. Each dimension d runs at values v_0 < v_1 < ...; its degree
is len(values) - 2 (at most 2): the law's terms are every product of
powers up to each dimension's degree, fitted exactly on the grid of the
first degree+1 values of each dimension, and checked at each further value
of a dimension with the others at their largest fitted value.

Sizes are exact: the fit solves the grid in rational numbers, and the law
holds when every coefficient is an integer, every check point gives the
measured bytes exactly and the law is not negative at any
binding. Times are noisy: a node's time is a * P + b with a, b >= 0 where P
is the bytes it reads and writes, fitted by least squares over all the
points (fit_time).

Where a size law does not hold, bound() writes one that lies at or above every
measurement and grows at least as fast as the measurements did: for one
dimension of degree 1 the line of the steepest chord between neighbouring
points through the highest point; otherwise the fitted law with its
negative growth terms dropped, scaled until it covers every point. It is
marked "bound" and the export names the node in the graph's warnings.
A node's workspace is the larger of its forward's and its backward's
(each a law of its own): larger() picks the one that is larger at every
binding, or writes a bound above both where they cross.
"""

import itertools
import math
import re
from fractions import Fraction

DIM_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
MAX_DIMS = 4
MAX_DEGREE = 2        # per dimension
MAX_TOTAL_DEGREE = 3  # per term
MAX_VALUE = 1 << 31
TIME_TOL = 0.5
TIME_ABS_MS = 0.05


class DimsError(ValueError):
    """A dims request the export cannot honour, or a graph/2 that cannot
    be bound."""


# ---- the points an export runs at --------------------------------------


def normalize(dims):
    """{name: sorted distinct values} from export's dims argument: a name,
    a list of names (default values [2, 3, 4]) or a dict name -> values."""
    if isinstance(dims, str):
        dims = {dims: None}
    elif isinstance(dims, (list, tuple)):
        dims = {d: None for d in dims}
    if not isinstance(dims, dict) or not dims:
        raise DimsError("memplan.torch: dims must name at least one dimension")
    if len(dims) > MAX_DIMS:
        raise DimsError("memplan.torch: at most %d dims (got %d)" % (MAX_DIMS, len(dims)))
    out = {}
    for name, vals in dims.items():
        if not isinstance(name, str) or not DIM_NAME.match(name):
            raise DimsError("memplan.torch: dim name %r must match [a-z][a-z0-9_]*" % (name,))
        vals = [2, 3, 4] if vals is None else vals
        try:
            vals = sorted({int(v) for v in vals})
        except (TypeError, ValueError):
            raise DimsError("memplan.torch: dims[%r] must be a list of integers" % name) from None
        if len(vals) < 3:
            raise DimsError("memplan.torch: dims[%r] needs at least 3 distinct values (a law of "
                            "degree 1 needs 2, and one more checks it); got %s" % (name, vals))
        if vals[0] < 1 or vals[-1] > MAX_VALUE:
            raise DimsError("memplan.torch: dims[%r] values must lie in 1..2^31" % name)
        out[name] = vals
    degs = degrees(out)
    if sum(degs) > MAX_TOTAL_DEGREE:
        raise DimsError("memplan.torch: the dims' degrees %s add up to more than %d (a dim's "
                        "degree is its number of values minus 2, at most 2)"
                        % (dict(zip(out, degs)), MAX_TOTAL_DEGREE))
    return out


def degrees(spec):
    return [min(MAX_DEGREE, len(v) - 2) for v in spec.values()]


def exponents(spec):
    """The law's terms: exponent tuples, highest total degree first."""
    exps = list(itertools.product(*(range(d + 1) for d in degrees(spec))))
    return sorted(exps, key=lambda e: (-sum(e), tuple(-x for x in e)))


def points(spec):
    """(fit points, check points), each a list of value tuples in the
    dims' order."""
    vals = list(spec.values())
    degs = degrees(spec)
    fit = list(itertools.product(*(v[:d + 1] for v, d in zip(vals, degs))))
    top = [v[d] for v, d in zip(vals, degs)]
    check = []
    for i, (v, d) in enumerate(zip(vals, degs)):
        for x in v[d + 1:]:
            p = list(top)
            p[i] = x
            check.append(tuple(p))
    return fit, check


# ---- evaluating ----------------------------------------------------------


def _mono(e, x):
    r = 1
    for k, xi in zip(e, x):
        r *= xi ** k
    return r


def value(law, x):
    return sum(c * _mono(e, x) for c, e in law)


def to_json(law, names, bound=False, integer=True):
    """The wire form: a plain number for a constant exact law."""
    terms = [(c, e) for c, e in law if c != 0]
    if not bound and all(sum(e) == 0 for _, e in terms):
        c = terms[0][0] if terms else 0
        return int(c) if integer else round(float(c), 6)
    out = []
    for c, e in terms:
        t = {"c": int(c) if integer else float("%.12g" % c)}
        t.update({n: k for n, k in zip(names, e) if k})
        out.append(t)
    if not out:
        out = [{"c": 0}]
    d = {"terms": out}
    if bound:
        d["bound"] = True
    return d


def from_json(field, names):
    """The law of a size or time field (a number or its wire form) as
    (coefficient, exponents) pairs in `names` order."""
    if isinstance(field, (int, float)):
        return [(field, (0,) * len(names))]
    return [(t["c"], tuple(int(t.get(n, 0)) for n in names)) for t in field["terms"]]


def evaluate(field, binding, names, where="value"):
    """A size or time field (a number or a law object) at a binding
    (values in `names` order)."""
    if isinstance(field, (int, float)):
        return field
    if not isinstance(field, dict) or not isinstance(field.get("terms"), list):
        raise DimsError("%s: expected a number or a law {\"terms\": [...]}" % where)
    total = 0
    for i, t in enumerate(field["terms"]):
        if not isinstance(t, dict) or "c" not in t:
            raise DimsError("%s.terms[%d]: a term needs \"c\"" % (where, i))
        v = t["c"]
        for k, ex in t.items():
            if k == "c":
                continue
            if k not in names:
                raise DimsError("%s.terms[%d]: %r is not a dim of the graph" % (where, i, k))
            v *= binding[names.index(k)] ** int(ex)
        total += v
    return total


def _at_least(a, b):
    """Whether law a >= law b at every binding with each dim >= 1: the
    difference written in y = dim - 1 has no negative coefficient."""
    shifted = {}
    for c, e in a + [(-c, e) for c, e in b]:
        for ks in itertools.product(*(range(k + 1) for k in e)):
            m = c
            for k, j in zip(e, ks):
                m *= math.comb(k, j)
            shifted[ks] = shifted.get(ks, 0) + m
    return all(v >= 0 for v in shifted.values())


def larger(a, b):
    """(law, crossed): a or b where it is at least the other at every
    binding, else the termwise maximum, which is above both."""
    if _at_least(a, b):
        return a, False
    if _at_least(b, a):
        return b, False
    ca, cb = dict((e, c) for c, e in a), dict((e, c) for c, e in b)
    exps = list(dict.fromkeys([e for _, e in a] + [e for _, e in b]))
    return [(max(ca.get(e, 0), cb.get(e, 0)), e) for e in exps], True


def text(law, names):
    """A law for a message: 40960*batch + 32764."""
    parts = []
    for c, e in law:
        if c == 0:
            continue
        mono = "*".join(n if k == 1 else "%s^%d" % (n, k) for n, k in zip(names, e) if k)
        parts.append("%s*%s" % (c, mono) if mono else str(c))
    return " + ".join(parts) or "0"


# ---- fitting -------------------------------------------------------------


def _solve(rows, ys):
    """Exact solution of the square system rows . c = ys (Fractions)."""
    n = len(rows)
    a = [[Fraction(v) for v in r] + [Fraction(y)] for r, y in zip(rows, ys)]
    for col in range(n):
        piv = next((r for r in range(col, n) if a[r][col] != 0), None)
        if piv is None:
            raise DimsError("memplan.torch: the dims' values give a singular fit")
        a[col], a[piv] = a[piv], a[col]
        for r in range(n):
            if r != col and a[r][col] != 0:
                f = a[r][col] / a[col][col]
                a[r] = [x - f * y for x, y in zip(a[r], a[col])]
    return [a[i][n] / a[i][i] for i in range(n)]


def _lstsq(rows, ys):
    import numpy as np
    sol, *_ = np.linalg.lstsq(np.array(rows, dtype=float), np.array(ys, dtype=float), rcond=None)
    return [float(c) for c in sol]


def _envelope(xs, ys):
    """Slope and intercept of the steepest neighbouring chord's line moved
    up through the highest point: at or above every (x, y), and rising at
    least as fast as any two neighbouring points do."""
    pts = sorted(zip(xs, ys))
    s = max([0.0] + [(y2 - y1) / (x2 - x1) for (x1, y1), (x2, y2) in zip(pts, pts[1:])])
    c = max(y - s * x for x, y in pts)
    return s, c


def bound(spec, pts, ys, fitted, integer):
    """A law at or above every (point, y) that grows at least as fast as
    the measurements (see the module comment)."""
    mins = [1] * len(spec)
    if len(spec) == 1 and degrees(spec) == [1]:
        s, c = _envelope([p[0] for p in pts], ys)
        if integer:
            s, c = math.ceil(s), math.ceil(c)
        c = max(c, -s * mins[0])
        return [(s, (1,)), (c, (0,))]
    const = (0,) * len(spec)
    c0 = next((float(c) for c, e in fitted if e == const), 0.0)
    grow = [(max(0.0, float(c)), e) for c, e in fitted if e != const]
    if all(c == 0 for c, _ in grow):  # proportional to the first dim
        grow = [(max(y / p[0] for p, y in zip(pts, ys)), tuple(int(i == 0) for i in range(len(spec))))]
        c0 = 0.0
    g = [value(grow, p) for p in pts]
    k = max([1.0] + [(y - c0) / gv for y, gv in zip(ys, g) if gv > 0])
    law = [(c * k, e) for c, e in grow]
    c0 = max([c0] + [y - value(law, p) for p, y in zip(pts, ys)])
    if integer:
        law = [(math.ceil(c), e) for c, e in law]
        c0 = math.ceil(c0)
    c0 = max(c0, -value(law, mins))
    return law + [(c0, const)]


def fit_size(spec, fit_pts, check_pts, ys):
    """(law, None) or (bound law, the first broken check as (point,
    measured, law's value)). ys: measured bytes at fit_pts + check_pts."""
    exps = exponents(spec)
    nf = len(fit_pts)
    coef = _solve([[_mono(e, p) for e in exps] for p in fit_pts], ys[:nf])
    law = list(zip(coef, exps))
    broken = None
    if any(c.denominator != 1 for c in coef):
        broken = (fit_pts[-1], ys[nf - 1], None)
    else:
        law = [(int(c), e) for c, e in law]
        for p, y in zip(check_pts, ys[nf:]):
            if value(law, p) != y:
                broken = (p, y, value(law, p))
                break
        if broken is None and not _at_least(law, []):
            broken = (None, None, text(law, list(spec)))
    if broken is None:
        return law, None
    return bound(spec, fit_pts + check_pts, ys, law, True), broken


def fit_time(spec, pts, ys, proxy):
    """(law, None) or (bound law, the worst point as (point, measured,
    law's value)). A node's time is fitted as a * P + b with a, b >= 0,
    where P is `proxy`, a law of the bytes the node reads and writes (its
    output and inputs): two numbers, so that a few noisy timings of a small
    op cannot give a wild polynomial, and the law follows the node's own
    growth (batch * seq^2 for attention scores). Where a point takes
    longer than the law by more than TIME_TOL (and TIME_ABS_MS), b is
    raised until the law covers every point: a bound (raising a instead
    would multiply one slow timing by the forecast's batch)."""
    ps = [float(value(proxy, p)) for p in pts]
    a, b = 0.0, max(0.0, sum(ys) / len(ys))
    if max(ps) > min(ps):
        a, b = _lstsq([[p, 1.0] for p in ps], ys)
        if a < 0:
            a, b = 0.0, max(0.0, sum(ys) / len(ys))
        elif b < 0:
            a, b = sum(y * p for y, p in zip(ys, ps)) / sum(p * p for p in ps), 0.0
    worst, off = None, 0.0
    for p, pv, y in zip(pts, ps, ys):
        over = y - (a * pv + b)
        if over > max(TIME_TOL * (a * pv + b), TIME_ABS_MS) and over > off:
            worst, off = (p, y, a * pv + b), over
    if worst is not None:  # one slow timing is noise, not growth: raise the constant
        b = max([b] + [y - a * pv for pv, y in zip(ps, ys)])
    const = (0,) * len(spec)
    law = {}
    for c, e in list(proxy) + [(0, const)]:
        law[e] = law.get(e, 0.0) + a * c
    law[const] += b
    return [(c, e) for e, c in law.items()], worst
