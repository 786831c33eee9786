"""Events, built from their payloads: the id (a ULID) and the time filled in,
the kind taken from the payload's type.

    from mneme_client import events, models

    event = events.build("demo", "coder", models.ToolResultRecorded(tool="bash", output="ok", exit_code=0))

or, for one agent's events, a builder that remembers the envelope:

    coder = events.Builder("demo", "coder", scope="shared", correlation_id="task-42")
    coder.build(models.MessageRecorded(role="assistant", text="tests pass"))

Every kind of the contract is covered: the kinds and their payload types
are read from the generated `models.Event` union, not listed here.
"""

from __future__ import annotations

import os
import threading
import time
import typing
from datetime import datetime, timezone
from typing import Any

from pydantic import BaseModel

from . import models

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def _kinds() -> dict[type[BaseModel], tuple[str, type[BaseModel]]]:
    """Payload type → (kind, the event variant's type), from `models.Event`."""
    kinds: dict[type[BaseModel], tuple[str, type[BaseModel]]] = {}
    union = models.Event.model_fields["root"].annotation
    for variant in typing.get_args(union):
        (kind,) = typing.get_args(variant.model_fields["kind"].annotation)
        payload = variant.model_fields["data"].annotation
        kinds[payload] = (kind, variant)
    return kinds


#: Every payload type of the contract, with its kind and event type.
KINDS: dict[type[BaseModel], tuple[str, type[BaseModel]]] = _kinds()
#: Kind name → payload type.
PAYLOADS: dict[str, type[BaseModel]] = {kind: payload for payload, (kind, _) in KINDS.items()}


class _Ulid:
    """ULIDs that sort in the order they were made within this process: a
    later one in the same millisecond is the previous one plus one."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last = 0

    def __call__(self) -> str:
        with self._lock:
            value = (int(time.time() * 1000) << 80) | int.from_bytes(os.urandom(10), "big")
            if value >> 80 == self._last >> 80 and value <= self._last:
                value = self._last + 1
            self._last = value
        return "".join(_CROCKFORD[(value >> shift) & 31] for shift in range(125, -5, -5))


#: A new event id.
new_id = _Ulid()


def kind_of(payload: BaseModel) -> str:
    """The kind an event with this payload has, e.g. `tool_result_recorded`."""
    try:
        return KINDS[type(payload)][0]
    except KeyError:
        raise TypeError(f"{type(payload).__name__} is not an event payload of mneme_client.models") from None


def build(
    swarm: str,
    agent: str,
    payload: BaseModel,
    *,
    scope: str | None = None,
    correlation_id: str | None = None,
    causation_id: str | None = None,
    importance: float | None = None,
    ts: datetime | None = None,
    id: str | None = None,
) -> models.Event:
    """An event of `payload`'s kind, validated against the contract (a wrong
    field raises pydantic's `ValidationError` here, before any request)."""
    kind, variant = KINDS.get(type(payload), (None, None))
    if kind is None or variant is None:
        raise TypeError(f"{type(payload).__name__} is not an event payload of mneme_client.models")
    envelope: dict[str, Any] = {
        "id": id or new_id(),
        "swarm": swarm,
        "agent": agent,
        "ts": ts or datetime.now(timezone.utc),
        "kind": kind,
        "data": payload,
        "scope": scope,
        "correlation_id": correlation_id,
        "causation_id": causation_id,
        "importance": importance,
    }
    # Validated as this kind's variant alone, so that an error names its fields only.
    checked = variant.model_validate({key: value for key, value in envelope.items() if value is not None})
    # `variant` is the member of the `models.Event` union for this kind (read off it in `_kinds`).
    return models.Event(root=typing.cast(Any, checked))


def to_json(event: models.Event | BaseModel) -> dict[str, Any]:
    """An event as the wire takes it (fields left unset are left out)."""
    return event.model_dump(mode="json", exclude_none=True, by_alias=True)


class Builder:
    """Builds one agent's events with the same envelope: swarm, agent, and
    optionally scope and correlation id (a task)."""

    def __init__(self, swarm: str, agent: str, *, scope: str | None = None, correlation_id: str | None = None):
        self.swarm = swarm
        self.agent = agent
        self.scope = scope
        self.correlation_id = correlation_id

    def build(self, payload: BaseModel, **envelope: Any) -> models.Event:
        envelope.setdefault("scope", self.scope)
        envelope.setdefault("correlation_id", self.correlation_id)
        return build(self.swarm, self.agent, payload, **envelope)


def event_of(entry: Any) -> models.Event | None:
    """The typed event a log entry of an answer (`events`, `provenance`)
    holds: None for a record that is not an event (dead-lettered) or one a
    purge erased."""
    if not isinstance(entry, models.EventEntry):
        return None
    return models.Event.model_validate(entry.model_dump(mode="json", exclude={"seq", "appended_at"}, exclude_none=True))
