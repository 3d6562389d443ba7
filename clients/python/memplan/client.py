"""memplan.Client: the daemon's HTTP/JSON API (proto/openapi.yaml) from Python.

Standard library only (urllib, json), so it runs wherever Python 3.8+ does,
without torch. One Client holds the address, the bearer token and the retry
policy; every call is one or a few HTTP requests and returns the daemon's
JSON answer as plain dicts and lists, untouched.

Waiting: Client.plan submits with the daemon's long poll (``wait`` in the
body), then polls GET /v1/plans/{id}?wait=... until the plan is final, so a
plan costs a handful of requests however long it runs. The frontier route
is a job too (202 while it is computed): Client.frontier long-polls it
with ?wait=. /v1/fit holds the connection while its plans are computed
(the daemon waits up to its --plan-timeout); ``compute_timeout`` bounds
both.

Busy daemon: a 503 (queue full, draining, frontier not ready) is retried
after its Retry-After, at most ``max_retries`` times and ``max_retry_time``
seconds in all; ``retried`` counts the retries made. The daemon refuses
before it accepts anything, so resending a POST is safe.
"""

import http.client
import json
import time
import urllib.error
import urllib.parse
import urllib.request

from . import errors
from ._inputs import budget_list, budget_value, graph_fields, is_graph_hash

__all__ = ["Client"]

FINAL_STATUSES = ("done", "failed", "cancelled")

_USER_AGENT = "memplan-python/0.1.0"


def _retry_after(headers):
    """Retry-After in seconds (the daemon sends whole seconds), or None."""
    value = headers.get("Retry-After") if headers is not None else None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


class Client:
    """A connection to memplan-server.

    ``url``: the daemon's base URL (http:// or https://). ``token``: the
    bearer token of a principal of its --token-file (with a token file every
    route but health, metrics and status needs one: see docs/security.md).
    ``timeout``: seconds a plain request may take; a long poll adds its wait.
    ``compute_timeout``: seconds fit and frontier may take (the daemon holds
    them while computing, up to its --plan-timeout, 300 s by default).
    ``max_retries``, ``max_retry_time``: the bound on retrying 503 answers
    (count, and total seconds slept). ``max_retry_wait``: the longest single
    sleep (None: as long as Retry-After says). ``ssl_context``: for https
    with a private CA or a self-signed certificate.
    """

    def __init__(self, url="http://127.0.0.1:8080", token=None, timeout=60.0, *, compute_timeout=330.0,
                 max_retries=5, max_retry_time=120.0, max_retry_wait=None, ssl_context=None):
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.compute_timeout = compute_timeout
        self.max_retries = max_retries
        self.max_retry_time = max_retry_time
        self.max_retry_wait = max_retry_wait
        self.ssl_context = ssl_context
        self.retried = 0

    def __repr__(self):
        return "memplan.Client(%r)" % self.url

    # ---- transport ----

    def _send(self, method, path, body, query, timeout):
        """One exchange: (status, headers, raw body). Raises TransportError."""
        url = self.url + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        headers = {"Accept": "application/json", "User-Agent": _USER_AGENT}
        data = None
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        req = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=timeout, context=self.ssl_context) as resp:
                return resp.status, resp.headers, resp.read()
        except urllib.error.HTTPError as e:
            try:
                raw = e.read()
            except (OSError, http.client.HTTPException, AttributeError):
                raw = b""
            finally:
                e.close()
            return e.code, e.headers, raw
        except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
            reason = getattr(e, "reason", None) or e
            raise errors.TransportError("%s %s: %s" % (method, url, reason)) from e

    @staticmethod
    def _error(status, headers, raw, retry_after=None):
        """The MemplanError for a failed answer, from its error body."""
        cls = errors.error_for_status(status)
        request_id = headers.get("X-Request-ID", "") if headers is not None else ""
        try:
            doc = json.loads(raw.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            doc = None
        err = doc.get("error") if isinstance(doc, dict) else None
        if isinstance(err, dict):
            kw = dict(status=status, code=err.get("code", ""), path=err.get("path", ""),
                      request_id=doc.get("request_id") or request_id)
            message = err.get("message", "")
        else:
            kw = dict(status=status, request_id=request_id)
            message = raw.decode("utf-8", "replace").strip()[:500] or "HTTP %d" % status
        if cls is errors.BusyError:
            return cls(message, retry_after=retry_after, **kw)
        return cls(message, **kw)

    def _request(self, method, path, body=None, query=None, timeout=None):
        """The JSON answer of a successful exchange, retrying 503s."""
        timeout = self.timeout if timeout is None else timeout
        slept = 0.0
        attempt = 0
        while True:
            status, headers, raw = self._send(method, path, body, query, timeout)
            if status == 503:
                delay = _retry_after(headers)
                pause = 1.0 if delay is None else delay
                if self.max_retry_wait is not None:
                    pause = min(pause, self.max_retry_wait)
                if attempt < self.max_retries and slept + pause <= self.max_retry_time:
                    time.sleep(pause)
                    slept += pause
                    attempt += 1
                    self.retried += 1
                    continue
                raise self._error(status, headers, raw, retry_after=delay)
            if status >= 400:
                raise self._error(status, headers, raw)
            try:
                return json.loads(raw.decode("utf-8"))
            except (ValueError, UnicodeDecodeError) as e:
                raise errors.ServerError("the answer to %s %s is not JSON" % (method, path), status=status,
                                         request_id=headers.get("X-Request-ID", "")) from e

    # ---- plans ----

    @staticmethod
    def _fields(options):
        return {k: v for k, v in options.items() if v is not None}

    def submit_plan(self, graph, budget, solver=None, wait=None, **options):
        """POST /v1/plans; the answer as the daemon gave it.

        A cache hit or a plan finished within ``wait`` seconds answers with
        status "done" and its ``result``; otherwise the answer has the plan's
        ``id`` and its status. ``options`` are the request's other fields
        (objective, accounting, timeline, swap, device); None leaves one out.
        """
        body = graph_fields(graph)
        body["budget"] = budget_value(budget)
        body.update(self._fields(dict(options, solver=solver, wait=wait or None)))
        return self._request("POST", "/v1/plans", body, timeout=self.timeout + (wait or 0))

    def get_plan(self, plan_id, wait=None, timeline=None):
        """GET /v1/plans/{id}: status, timings and, when done, the result.

        ``wait`` holds the request up to that many seconds while the plan is
        not final. The daemon includes the timeline only when ``timeline`` is
        True (as for POST /v1/plans).
        """
        query = {}
        if wait:
            query["wait"] = "%g" % wait
        if timeline is not None:
            query["timeline"] = "true" if timeline else "false"
        return self._request("GET", "/v1/plans/" + urllib.parse.quote(str(plan_id), safe=""), query=query,
                             timeout=self.timeout + (wait or 0))

    def cancel(self, plan_id):
        """DELETE /v1/plans/{id}: the cancelled plan (it was queued) or
        ``{"id", "status": "running", "cancel_requested": true}`` (it was
        running and stops promptly). ConflictError when it already finished."""
        return self._request("DELETE", "/v1/plans/" + urllib.parse.quote(str(plan_id), safe=""))

    def list_plans(self, status=None, limit=None, after=None):
        """GET /v1/plans: ``{"plans": [...], "next": id or None}``, newest first."""
        query = self._fields({"status": status, "limit": limit, "after": after})
        return self._request("GET", "/v1/plans", query=query)

    @staticmethod
    def _outcome(view):
        """The result of a final plan view, or the exception it calls for."""
        status = view.get("status")
        plan_id = view.get("id")
        if status == "done":
            if "result" not in view:
                raise errors.ServerError("plan %s is done but the answer holds no result" % plan_id,
                                         plan_id=plan_id)
            return view["result"]
        err = view.get("error") or {}
        if status == "failed":
            raise errors.PlanFailed(err.get("message", "the plan failed"), code=err.get("code", ""),
                                    request_id=view.get("request_id", ""), plan_id=plan_id)
        raise errors.PlanCancelled(err.get("message", "the plan was cancelled"), code=err.get("code", ""),
                                   request_id=view.get("request_id", ""), plan_id=plan_id)

    def plan(self, graph, budget, solver=None, wait=30.0, timeout=None, **options):
        """Plan ``graph`` under ``budget`` and wait for the answer.

        Returns the planner's result (feasible, peak_bytes, schedule, ...;
        an infeasible budget is an answer, with ``feasible`` false and
        ``min_feasible_budget``). ``wait`` is each long poll's length in
        seconds (at most the daemon's --max-wait, 300 by default);
        ``timeout`` bounds the whole wait (None: no bound) and raises
        PlanTimeout naming the plan. A plan that fails or is cancelled
        raises PlanFailed or PlanCancelled.
        """
        deadline = None if timeout is None else time.monotonic() + timeout

        def next_wait():
            if deadline is None:
                return wait
            return max(0.0, min(wait or 0.0, deadline - time.monotonic()))

        view = self.submit_plan(graph, budget, solver=solver, wait=next_wait(), **options)
        timeline = bool(options.get("timeline"))
        while view.get("status") not in FINAL_STATUSES:
            plan_id = view.get("id")
            if deadline is not None and time.monotonic() >= deadline:
                raise errors.PlanTimeout("plan %s is still %s" % (plan_id, view.get("status")),
                                         plan_id=plan_id)
            if not wait:
                time.sleep(0.5)
            view = self.get_plan(plan_id, wait=next_wait(), timeline=timeline)
        return self._outcome(view)

    # ---- frontiers ----

    def fit(self, graph, budgets=None, solver=None, timeout=None, devices=None, least=None, **options):
        """POST /v1/fit: does ``graph`` (or a graph hash) fit each budget, and
        at what cost. ``budgets`` is one budget or a list; ``devices`` a list
        of GPU names of the daemon's catalogue (GET /v1/devices), each
        answered at its usable bytes; ``least=True`` adds the plan at the
        least budget that fits; ``options`` are swap and device. Each budget
        is answered with what plan returns there; the daemon plans them once
        per graph, options and set of budgets (``timeout``: default
        compute_timeout)."""
        body = graph_fields(graph)
        if budgets is not None:
            body["budgets"] = budget_list(budgets)
        if devices is not None:
            body["devices"] = [devices] if isinstance(devices, str) else list(devices)
        body.update(self._fields(dict(options, solver=solver, least=least)))
        return self._request("POST", "/v1/fit", body,
                             timeout=self.compute_timeout if timeout is None else timeout)

    def frontier(self, graph_hash, solver=None, timeout=None, wait=25.0):
        """GET /v1/graphs/{hash}/frontier: the memory/time staircase of a graph
        the daemon already holds (any plan or fit answer names its
        ``graph_hash``). The swap solvers use the default device here; fit
        takes a device.

        A frontier the daemon has not computed yet is a job (202, with its
        ``progress``): this long-polls the route, ``wait`` seconds at a time
        (at most the daemon's --max-wait), until the frontier is there, and
        raises PlanTimeout once ``timeout`` (default compute_timeout)
        seconds have passed. A computation that failed raises its error
        (422, or 504 past the daemon's --plan-timeout)."""
        self._check_hash(graph_hash)
        deadline = time.monotonic() + (self.compute_timeout if timeout is None else timeout)
        path = "/v1/graphs/%s/frontier" % graph_hash
        while True:
            w = max(0.0, min(wait or 0.0, deadline - time.monotonic()))
            query = self._fields({"solver": solver, "wait": "%g" % w if w > 0 else None})
            answer = self._request("GET", path, query=query, timeout=self.timeout + w)
            if "points" in answer:
                return answer
            if time.monotonic() >= deadline:
                raise errors.PlanTimeout("the frontier of %s is still %s" % (graph_hash, answer.get("status")),
                                         plan_id=answer.get("id"))
            if w == 0:
                time.sleep(0.5)

    def graph_stats(self, graph_hash):
        """GET /v1/graphs/{hash}: the statistics of `memplan inspect`."""
        self._check_hash(graph_hash)
        return self._request("GET", "/v1/graphs/%s" % graph_hash)

    @staticmethod
    def _check_hash(graph_hash):
        if not is_graph_hash(graph_hash):
            raise ValueError("expected a graph hash (64 lowercase hexadecimal digits); submit the graph "
                             "with plan() or fit() first, their answers carry its graph_hash")

    # ---- the daemon ----

    def status(self):
        """GET /v1/status: workers, queue, cache and plan counts."""
        return self._request("GET", "/v1/status")
