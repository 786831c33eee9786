"""Errors: every refusal of the server is an `ErrorBody`, raised here as a
`MnemeError` that carries its status, code and field."""

from __future__ import annotations

from .models import ErrorBody


class MnemeError(Exception):
    """The server refused or failed a request: `status` (HTTP), `code` (a
    stable machine-readable name such as `unknown_field`), `field` (the
    parameter or body field at fault, or None) and `message` (for people)."""

    def __init__(self, status: int, code: str, message: str, field: str | None = None, retry_after: float | None = None):
        super().__init__(f"{status} {code}{f' ({field})' if field else ''}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        #: Seconds the server asked the client to wait (`Retry-After`), if any.
        self.retry_after = retry_after

    @classmethod
    def from_response(cls, status: int, body: bytes, retry_after: str | None = None) -> MnemeError:
        """The error a response stands for: its `ErrorBody`, or, for a body
        that is not one (a proxy's page), the status and the body's start."""
        wait = _seconds(retry_after)
        try:
            error = ErrorBody.model_validate_json(body).error
        except ValueError:
            text = body[:200].decode("utf-8", "replace")
            return cls(status, "unexpected_response", text or "no body", retry_after=wait)
        error_class = _BY_STATUS.get(status, cls)
        return error_class(error.status, error.code, error.message, error.field, retry_after=wait)


class BadRequest(MnemeError):
    """400: the request is wrong (`field` names what); nothing was appended."""


class Unauthorized(MnemeError):
    """401 or 403: no token, or one that does not open this swarm or agent."""


class NotFound(MnemeError):
    """404: an unknown swarm, agent, item, handoff or contradiction."""


class Conflict(MnemeError):
    """409: already acknowledged, already resolved, an id reused with other content."""


class TooManyRequests(MnemeError):
    """429: over a quota or a limit of queries in flight; `retry_after` says when to try again."""


class Unavailable(MnemeError):
    """5xx: the server could not answer now (a replica without the lease, a log that is down)."""


_BY_STATUS: dict[int, type[MnemeError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Unauthorized,
    404: NotFound,
    409: Conflict,
    413: BadRequest,
    429: TooManyRequests,
    500: Unavailable,
    502: Unavailable,
    503: Unavailable,
    504: Unavailable,
}


def _seconds(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None
