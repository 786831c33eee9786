"""Publishing straight to JetStream, for orchestrators that run beside
NATS rather than through `mneme serve`'s HTTP API (needs the `nats` extra:
`pip install mneme-client[nats]`).

    import nats
    from mneme_client import events, models
    from mneme_client.nats import NatsPublisher

    nc = await nats.connect("nats://127.0.0.1:4222")
    publisher = NatsPublisher(nc)
    seq = await publisher.publish(events.build("demo", "coder", models.MessageRecorded(role="user", text="hi")))

Each event goes to `mneme.<swarm>.<agent>.events.<kind>` with its id as
`Nats-Msg-Id`, so that JetStream stores a retried publish once. Mneme
validates what it reads: an event the contract refuses is dead-lettered
with its reason (`GET /v1/swarms/{swarm}/deadletters`), never applied;
`events.build` checks it before it leaves.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from .events import to_json

SUBJECT_PREFIX = "mneme"


def subject_of(event: dict[str, Any]) -> str:
    """The subject an event is published on."""
    return f"{SUBJECT_PREFIX}.{event['swarm']}.{event['agent']}.events.{event['kind']}"


class NatsPublisher:
    """Publishes events to JetStream over a connected nats-py client."""

    def __init__(self, nc: Any, *, timeout: float = 5.0) -> None:
        self._js = nc.jetstream()
        self._timeout = timeout

    async def publish(self, event: BaseModel | dict[str, Any]) -> int:
        """Publishes one event; answers its seq on the log (the earlier one
        when JetStream had it already)."""
        body = event if isinstance(event, dict) else to_json(event)
        ack = await self._js.publish(
            subject_of(body),
            json.dumps(body, separators=(",", ":")).encode(),
            timeout=self._timeout,
            headers={"Nats-Msg-Id": body["id"]},
        )
        return int(ack.seq)

    async def publish_all(self, events: list[BaseModel | dict[str, Any]]) -> list[int]:
        """Publishes events one after the other, in order; their seqs."""
        return [await self.publish(event) for event in events]
