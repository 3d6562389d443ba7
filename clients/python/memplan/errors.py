"""The exceptions of the memplan client.

Every failure the daemon reports is a MemplanError carrying what its body
said: ``{"error": {"code", "message", "path"}, "request_id"}``, with the HTTP
status. The subclasses only sort them by what a caller can do about it;
``code`` is the daemon's own word (``invalid_request``, ``invalid_graph``,
``queue_full``, ...) and ``path`` names the field at fault as a JSON path into
the request (``$.budget``, ``$.graph.nodes[3].bytes``) or a query parameter
(``?wait``), or is empty.
"""


class MemplanError(Exception):
    """A request the daemon refused or could not answer.

    Attributes: ``status`` (the HTTP status, or None when no answer came),
    ``code``, ``message``, ``path`` (strings, "" when the daemon gave none),
    ``request_id`` (the daemon's X-Request-ID, "" when unknown) and
    ``plan_id`` (for errors about one plan, else None).
    """

    def __init__(self, message, status=None, code="", path="", request_id="", plan_id=None):
        self.status = status
        self.code = code or ""
        self.message = message or ""
        self.path = path or ""
        self.request_id = request_id or ""
        self.plan_id = plan_id
        super().__init__(self._describe())

    def _describe(self):
        head = []
        if self.status is not None:
            head.append(str(self.status))
        if self.code:
            head.append(self.code)
        text = " ".join(head)
        text = "%s: %s" % (text, self.message) if text else self.message
        if self.path:
            text += " (at %s)" % self.path
        return text


class RequestError(MemplanError):
    """The request is wrong (400, 413, 422): fix it before sending it again."""


class AuthError(MemplanError):
    """401: the route needs ``Authorization: Bearer <token>`` of a principal
    of the daemon's --token-file; 403: that principal's role may not do this
    (a read or read-all principal starting work)."""


class NotFoundError(MemplanError):
    """404: no such plan, graph hash or route."""


class ConflictError(MemplanError):
    """409: the plan already finished, so it cannot be cancelled."""


class BusyError(MemplanError):
    """503 (queue full, draining, frontier not ready) still answered after the
    client's retries ran out. ``retry_after`` is the daemon's last Retry-After
    in seconds (None when it sent none)."""

    def __init__(self, *args, retry_after=None, **kwargs):
        self.retry_after = retry_after
        super().__init__(*args, **kwargs)


class ServerError(MemplanError):
    """A 5xx other than 503: the daemon failed (see its log under request_id)."""


class TransportError(MemplanError):
    """No HTTP answer: the connection failed or timed out (status is None)."""


class PlanFailed(MemplanError):
    """The plan ended with status "failed"; code and message are the plan's
    own error (e.g. ``deadline_exceeded``)."""


class PlanCancelled(MemplanError):
    """The plan ended with status "cancelled"."""


class PlanTimeout(MemplanError):
    """Client.plan gave up waiting (its ``timeout``); the plan goes on in the
    daemon and ``plan_id`` names it for get_plan or cancel."""


def error_for_status(status):
    """The MemplanError subclass for an HTTP status."""
    if status in (401, 403):
        return AuthError
    if status == 404:
        return NotFoundError
    if status == 409:
        return ConflictError
    if status == 503:
        return BusyError
    if status >= 500:
        return ServerError
    return RequestError
