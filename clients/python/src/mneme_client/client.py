"""The HTTP clients: `Mneme` (sync) and `AsyncMneme`, over httpx.

    from mneme_client import Mneme, events, models

    with Mneme("http://127.0.0.1:7700", swarm="demo", agent="coder") as mneme:
        mneme.publish(events.build("demo", "coder", models.MessageRecorded(role="user", text="rate-limit login")))
        hits = mneme.search("rate limit").hits     # waits until the write is applied

Each method answers the contract's typed answer (`models.SearchAnswer`, …)
and raises `MnemeError` (a subclass by status) carrying the error body's
`code` and `field`. Reads wait for this client's own writes: a read of a
swarm this client published to passes the highest seq the log gave it as
`min_seq` (the server waits until the agent's memory applied it, at most
10 s), unless `min_seq` is given, or `read_your_writes=False`.
Idempotent calls (reads, and publishing: an event's id makes a repeat
harmless) are retried after a lost connection, a 429 (after its
`Retry-After`) or a 502/503/504, `retries` times with growing waits.
"""

from __future__ import annotations

import asyncio
import threading
import time
import typing
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any, TypeAlias, TypeVar, Union

import httpx
from pydantic import BaseModel, TypeAdapter

from . import _calls, models
from ._calls import Call
from .errors import MnemeError
from .events import to_json

A = TypeVar("A", bound=BaseModel)

DEFAULT_URL = "http://127.0.0.1:7700"
_RETRY_STATUSES = {429, 502, 503, 504}
# A follow stream may be quiet for long: no read timeout.
_STREAM_TIMEOUT = httpx.Timeout(30.0, read=None)

#: One entry of the log as the API shows it (an event, a dead-lettered record, an erased stub).
LogEntry: TypeAlias = Union[models.InvalidEntry, models.ErasedEntry, models.EventEntry]
# Read off the generated page's type, so that a new kind of entry parses.
_ENTRY_TYPE: Any = typing.get_args(models.EventsPage.model_fields["events"].annotation)[0]
_LOG_ENTRY: TypeAdapter[LogEntry] = TypeAdapter(_ENTRY_TYPE)


class _Written:
    """The highest seq this client's publishes got, by swarm."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seqs: dict[str, int] = {}

    def note(self, swarm: str, seq: int) -> None:
        with self._lock:
            self._seqs[swarm] = max(self._seqs.get(swarm, 0), seq)

    def note_accepted(self, events: list[dict[str, Any]], answer: models.AcceptedEvents) -> None:
        for event, accepted in zip(events, answer.accepted):
            if isinstance(swarm := event.get("swarm"), str):
                self.note(swarm, accepted.seq)

    def seq(self, swarm: str) -> int | None:
        with self._lock:
            return self._seqs.get(swarm)


class _Base:
    def __init__(
        self,
        base_url: str,
        swarm: str | None,
        agent: str | None,
        token: str | None,
        retries: int,
        read_your_writes: bool,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.swarm = swarm
        self.agent = agent
        self.retries = retries
        self.read_your_writes = read_your_writes
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._written = _Written()

    def written_seq(self, swarm: str | None = None) -> int | None:
        """The highest seq this client's publishes to `swarm` got (None before any)."""
        return self._written.seq(self._swarm(swarm))

    def _note_written(self, swarm: str, seq: int) -> None:
        self._written.note(swarm, seq)

    def _swarm(self, swarm: str | None) -> str:
        chosen = swarm or self.swarm
        if not chosen:
            raise ValueError("no swarm: pass swarm=… here or to the client")
        return chosen

    def _agent(self, agent: str | None) -> str:
        chosen = agent or self.agent
        if not chosen:
            raise ValueError("no agent: pass agent=… here or to the client")
        return chosen

    def _prepare(self, call: Call[Any]) -> tuple[dict[str, Any], Any]:
        """The call's query and body, with `min_seq` added for read-your-writes:
        in the JSON body where the call has one, else in the query."""
        params, body = dict(call.params), call.json
        swarm = call.min_seq_swarm if self.read_your_writes else None
        seq = self._written.seq(swarm) if swarm is not None else None
        if seq is not None:
            if isinstance(body, dict):
                body = {"min_seq": seq, **body}
            else:
                params.setdefault("min_seq", seq)
        return params, body

    @staticmethod
    def _parse(call: Call[A], response: httpx.Response) -> A:
        if response.status_code >= 400:
            raise MnemeError.from_response(response.status_code, response.content, response.headers.get("retry-after"))
        if call.answer is None:
            return response.text if response.headers.get("content-type", "").startswith("text/") else response.json()  # type: ignore[return-value]
        return call.answer.model_validate_json(response.content)

    @staticmethod
    def _wait(attempt: int, response: httpx.Response | None) -> float:
        """How long to wait before another attempt: the server's `Retry-After`, else a growing pause."""
        if response is not None and (after := response.headers.get("retry-after")):
            try:
                return min(30.0, float(after))
            except ValueError:
                pass
        return min(5.0, 0.2 * 2.0**attempt)

    @staticmethod
    def _retryable(call: Call[Any], response: httpx.Response | None) -> bool:
        return call.idempotent and (response is None or response.status_code in _RETRY_STATUSES)

    @staticmethod
    def _events_json(events: Any) -> list[dict[str, Any]]:
        if isinstance(events, (BaseModel, dict)):
            events = [events]
        return [event if isinstance(event, dict) else to_json(event) for event in events]


class Mneme(_Base):
    """A synchronous client of `mneme serve`'s HTTP API."""

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        *,
        swarm: str | None = None,
        agent: str | None = None,
        token: str | None = None,
        timeout: float = 30.0,
        retries: int = 3,
        read_your_writes: bool = True,
        http: httpx.Client | None = None,
    ) -> None:
        super().__init__(base_url, swarm, agent, token, retries, read_your_writes)
        self._http = http or httpx.Client(timeout=timeout)

    def __enter__(self) -> Mneme:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def send(self, call: Call[A]) -> A:
        """Sends one call, with the retries it allows."""
        params, body = self._prepare(call)
        attempt = 0
        while True:
            response: httpx.Response | None = None
            try:
                response = self._http.request(
                    call.method, self.base_url + call.path, params=params, json=body, headers=self._headers
                )
            except httpx.TransportError:
                if attempt >= self.retries or not call.idempotent:
                    raise
            if response is not None and not (self._retryable(call, response) and attempt < self.retries):
                return self._parse(call, response)
            time.sleep(self._wait(attempt, response))
            attempt += 1

    # -- writing --------------------------------------------------------

    def publish(self, events: Any) -> models.AcceptedEvents:
        """Appends one event or several (`models.Event`s, as `events.build`
        makes them, or their JSON): each gets its seq, or `duplicate` when
        the log has it already. Later reads of the swarm wait for them."""
        batch = self._events_json(events)
        answer = self.send(_calls.append_events(batch))
        self._written.note_accepted(batch, answer)
        return answer

    def write_note(self, text: str, *, swarm: str | None = None, agent: str | None = None, **fields: Any) -> models.Written:
        call = _calls.write_note(self._swarm(swarm), self._agent(agent), {"text": text, **fields})
        answer = self.send(call)
        self._note_written(self._swarm(swarm), answer.seq)
        return answer

    def update_core(self, *, swarm: str | None = None, agent: str | None = None, **body: Any) -> models.CoreUpdated:
        answer = self.send(_calls.update_core(self._swarm(swarm), self._agent(agent), body))
        self._note_written(self._swarm(swarm), answer.written.seq)
        return answer

    def acknowledge(
        self, handoff_id: str, *, note: str | None = None, swarm: str | None = None, agent: str | None = None
    ) -> models.Acknowledged:
        answer = self.send(_calls.acknowledge(self._swarm(swarm), self._agent(agent), handoff_id, note))
        self._note_written(self._swarm(swarm), answer.seq)
        return answer

    # -- one agent's memory --------------------------------------------

    def search(self, q: str, *, swarm: str | None = None, agent: str | None = None, **params: Any) -> models.SearchAnswer:
        """Hybrid search by default; `k`, `mode`, `kind`, `since`, … as the API takes them."""
        return self.send(_calls.search(self._swarm(swarm), self._agent(agent), {"q": q, **params}))

    def context(
        self, query: str = "", *, swarm: str | None = None, agent: str | None = None, **body: Any
    ) -> models.ContextAnswer:
        """Budgeted context for a prompt: `budget` tokens, `signals` (current file, recent errors, …)."""
        return self.send(_calls.context(self._swarm(swarm), self._agent(agent), {"query": query, **body}))

    def graph(self, entity: str, *, swarm: str | None = None, agent: str | None = None, **params: Any) -> models.GraphAnswer:
        return self.send(_calls.graph(self._swarm(swarm), self._agent(agent), {"entity": entity, **params}))

    def items(self, *, swarm: str | None = None, agent: str | None = None, **params: Any) -> models.ItemStates:
        return self.send(_calls.items(self._swarm(swarm), self._agent(agent), params))

    def item(self, item_id: str, *, swarm: str | None = None, agent: str | None = None, **params: Any) -> models.ItemAnswer:
        return self.send(_calls.item(self._swarm(swarm), self._agent(agent), item_id, params))

    def provenance(
        self, item_id: str, *, swarm: str | None = None, agent: str | None = None, **params: Any
    ) -> models.AgentProvenance:
        return self.send(_calls.provenance(self._swarm(swarm), self._agent(agent), item_id, params))

    def phases(self, *, swarm: str | None = None, agent: str | None = None, **params: Any) -> models.PhasesAnswer:
        return self.send(_calls.phases(self._swarm(swarm), self._agent(agent), params))

    def phase(self, phase_id: str, *, swarm: str | None = None, agent: str | None = None, **params: Any) -> models.PhaseAnswer:
        return self.send(_calls.phase(self._swarm(swarm), self._agent(agent), phase_id, params))

    def handoffs(self, *, swarm: str | None = None, agent: str | None = None, **params: Any) -> models.HandoffsAnswer:
        return self.send(_calls.handoffs(self._swarm(swarm), self._agent(agent), params))

    def follow_handoffs(self, *, swarm: str | None = None, agent: str | None = None) -> Iterator[models.HandoffDelivery]:
        """The agent's pending handoffs, then each new one as it is delivered
        (server-sent events), until the caller stops iterating or the server stops."""
        path = _calls.handoffs(self._swarm(swarm), self._agent(agent), {}).path
        for data in self._follow(path, {}, "handoff"):
            yield models.HandoffDelivery.model_validate_json(data)

    def follow_events(self, *, swarm: str | None = None, **params: Any) -> Iterator[LogEntry]:
        """Every entry of the swarm's log from `from_seq` on (events,
        dead-lettered records, erased stubs), then each new one as it is
        appended, until the caller stops iterating or the server stops."""
        call = _calls.events_page(self._swarm(swarm), params)
        for data in self._follow(call.path, call.params, "entry"):
            yield _LOG_ENTRY.validate_json(data)

    def _follow(self, path: str, params: dict[str, Any], name: str) -> Iterator[str]:
        """The data of the stream's server-sent events named `name` (`follow=true`)."""
        with self._http.stream(
            "GET", self.base_url + path, params={**params, "follow": "true"}, headers=self._headers, timeout=_STREAM_TIMEOUT
        ) as response:
            if response.status_code >= 400:
                response.read()
                raise MnemeError.from_response(response.status_code, response.content, response.headers.get("retry-after"))
            for event, data in _server_sent_events(response.iter_lines()):
                if event == name:
                    yield data

    def core(self, *, swarm: str | None = None, agent: str | None = None, **params: Any) -> models.CoreMemoryAnswer:
        return self.send(_calls.core(self._swarm(swarm), self._agent(agent), params))

    def timeline(self, *, swarm: str | None = None, agent: str | None = None, **params: Any) -> models.TimelineAnswer:
        return self.send(_calls.timeline(self._swarm(swarm), self._agent(agent), params))

    def digest(self, *, swarm: str | None = None, agent: str | None = None, **params: Any) -> models.Digest:
        return self.send(_calls.digest(self._swarm(swarm), self._agent(agent), params))

    def replay(self, *, swarm: str | None = None, agent: str | None = None, **params: Any) -> models.ReplayAnswer:
        return self.send(_calls.replay(self._swarm(swarm), self._agent(agent), params))

    # -- the swarm -------------------------------------------------------

    def health(self) -> models.Health:
        return self.send(_calls.health())

    def swarms(self) -> models.Swarms:
        return self.send(_calls.swarms())

    def agents(self, *, swarm: str | None = None) -> models.Agents:
        return self.send(_calls.agents(self._swarm(swarm)))

    def events(self, *, swarm: str | None = None, **params: Any) -> models.EventsPage:
        return self.send(_calls.events_page(self._swarm(swarm), params))

    def dead_letters(self, *, swarm: str | None = None) -> models.DeadLetters:
        return self.send(_calls.dead_letters(self._swarm(swarm)))

    def consolidate(self, *, swarm: str | None = None, **params: Any) -> models.ConsolidationAnswer:
        return self.send(_calls.consolidate(self._swarm(swarm), params))

    def contradictions(self, *, swarm: str | None = None, **params: Any) -> models.ContradictionsAnswer:
        return self.send(_calls.contradictions(self._swarm(swarm), params))

    def resolve(self, contradiction_id: str, resolution: str, *, swarm: str | None = None, **body: Any) -> models.Resolved:
        return self.send(_calls.resolve(self._swarm(swarm), contradiction_id, {"resolution": resolution, **body}))

    def swarm_provenance(self, item_id: str, *, swarm: str | None = None) -> models.SwarmProvenance:
        return self.send(_calls.swarm_provenance(self._swarm(swarm), item_id))

    def purge(self, *, swarm: str | None = None, **body: Any) -> models.PurgeAnswer:
        return self.send(_calls.purge(self._swarm(swarm), body))

    def metrics(self) -> str:
        text: str = self.send(_calls.metrics())
        return text

    def openapi(self) -> dict[str, Any]:
        document: dict[str, Any] = self.send(_calls.openapi())
        return document


class AsyncMneme(_Base):
    """The same client for asyncio: every method is a coroutine."""

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        *,
        swarm: str | None = None,
        agent: str | None = None,
        token: str | None = None,
        timeout: float = 30.0,
        retries: int = 3,
        read_your_writes: bool = True,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        super().__init__(base_url, swarm, agent, token, retries, read_your_writes)
        self._http = http or httpx.AsyncClient(timeout=timeout)

    async def __aenter__(self) -> AsyncMneme:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def send(self, call: Call[A]) -> A:
        params, body = self._prepare(call)
        attempt = 0
        while True:
            response: httpx.Response | None = None
            try:
                response = await self._http.request(
                    call.method, self.base_url + call.path, params=params, json=body, headers=self._headers
                )
            except httpx.TransportError:
                if attempt >= self.retries or not call.idempotent:
                    raise
            if response is not None and not (self._retryable(call, response) and attempt < self.retries):
                return self._parse(call, response)
            await asyncio.sleep(self._wait(attempt, response))
            attempt += 1

    async def publish(self, events: Any) -> models.AcceptedEvents:
        batch = self._events_json(events)
        answer = await self.send(_calls.append_events(batch))
        self._written.note_accepted(batch, answer)
        return answer

    async def write_note(
        self, text: str, *, swarm: str | None = None, agent: str | None = None, **fields: Any
    ) -> models.Written:
        answer = await self.send(_calls.write_note(self._swarm(swarm), self._agent(agent), {"text": text, **fields}))
        self._note_written(self._swarm(swarm), answer.seq)
        return answer

    async def update_core(self, *, swarm: str | None = None, agent: str | None = None, **body: Any) -> models.CoreUpdated:
        answer = await self.send(_calls.update_core(self._swarm(swarm), self._agent(agent), body))
        self._note_written(self._swarm(swarm), answer.written.seq)
        return answer

    async def acknowledge(
        self, handoff_id: str, *, note: str | None = None, swarm: str | None = None, agent: str | None = None
    ) -> models.Acknowledged:
        answer = await self.send(_calls.acknowledge(self._swarm(swarm), self._agent(agent), handoff_id, note))
        self._note_written(self._swarm(swarm), answer.seq)
        return answer

    async def search(
        self, q: str, *, swarm: str | None = None, agent: str | None = None, **params: Any
    ) -> models.SearchAnswer:
        return await self.send(_calls.search(self._swarm(swarm), self._agent(agent), {"q": q, **params}))

    async def context(
        self, query: str = "", *, swarm: str | None = None, agent: str | None = None, **body: Any
    ) -> models.ContextAnswer:
        return await self.send(_calls.context(self._swarm(swarm), self._agent(agent), {"query": query, **body}))

    async def graph(
        self, entity: str, *, swarm: str | None = None, agent: str | None = None, **params: Any
    ) -> models.GraphAnswer:
        return await self.send(_calls.graph(self._swarm(swarm), self._agent(agent), {"entity": entity, **params}))

    async def items(self, *, swarm: str | None = None, agent: str | None = None, **params: Any) -> models.ItemStates:
        return await self.send(_calls.items(self._swarm(swarm), self._agent(agent), params))

    async def item(
        self, item_id: str, *, swarm: str | None = None, agent: str | None = None, **params: Any
    ) -> models.ItemAnswer:
        return await self.send(_calls.item(self._swarm(swarm), self._agent(agent), item_id, params))

    async def provenance(
        self, item_id: str, *, swarm: str | None = None, agent: str | None = None, **params: Any
    ) -> models.AgentProvenance:
        return await self.send(_calls.provenance(self._swarm(swarm), self._agent(agent), item_id, params))

    async def phases(self, *, swarm: str | None = None, agent: str | None = None, **params: Any) -> models.PhasesAnswer:
        return await self.send(_calls.phases(self._swarm(swarm), self._agent(agent), params))

    async def phase(
        self, phase_id: str, *, swarm: str | None = None, agent: str | None = None, **params: Any
    ) -> models.PhaseAnswer:
        return await self.send(_calls.phase(self._swarm(swarm), self._agent(agent), phase_id, params))

    async def handoffs(
        self, *, swarm: str | None = None, agent: str | None = None, **params: Any
    ) -> models.HandoffsAnswer:
        return await self.send(_calls.handoffs(self._swarm(swarm), self._agent(agent), params))

    async def follow_handoffs(
        self, *, swarm: str | None = None, agent: str | None = None
    ) -> AsyncIterator[models.HandoffDelivery]:
        path = _calls.handoffs(self._swarm(swarm), self._agent(agent), {}).path
        async for data in self._follow(path, {}, "handoff"):
            yield models.HandoffDelivery.model_validate_json(data)

    async def follow_events(self, *, swarm: str | None = None, **params: Any) -> AsyncIterator[LogEntry]:
        call = _calls.events_page(self._swarm(swarm), params)
        async for data in self._follow(call.path, call.params, "entry"):
            yield _LOG_ENTRY.validate_json(data)

    async def _follow(self, path: str, params: dict[str, Any], name: str) -> AsyncIterator[str]:
        async with self._http.stream(
            "GET", self.base_url + path, params={**params, "follow": "true"}, headers=self._headers, timeout=_STREAM_TIMEOUT
        ) as response:
            if response.status_code >= 400:
                await response.aread()
                raise MnemeError.from_response(response.status_code, response.content, response.headers.get("retry-after"))
            lines: list[str] = []
            async for line in response.aiter_lines():
                lines.append(line)
                if line == "":
                    for event, data in _server_sent_events(lines):
                        if event == name:
                            yield data
                    lines = []

    async def core(self, *, swarm: str | None = None, agent: str | None = None, **params: Any) -> models.CoreMemoryAnswer:
        return await self.send(_calls.core(self._swarm(swarm), self._agent(agent), params))

    async def timeline(
        self, *, swarm: str | None = None, agent: str | None = None, **params: Any
    ) -> models.TimelineAnswer:
        return await self.send(_calls.timeline(self._swarm(swarm), self._agent(agent), params))

    async def digest(self, *, swarm: str | None = None, agent: str | None = None, **params: Any) -> models.Digest:
        return await self.send(_calls.digest(self._swarm(swarm), self._agent(agent), params))

    async def replay(self, *, swarm: str | None = None, agent: str | None = None, **params: Any) -> models.ReplayAnswer:
        return await self.send(_calls.replay(self._swarm(swarm), self._agent(agent), params))

    async def health(self) -> models.Health:
        return await self.send(_calls.health())

    async def swarms(self) -> models.Swarms:
        return await self.send(_calls.swarms())

    async def agents(self, *, swarm: str | None = None) -> models.Agents:
        return await self.send(_calls.agents(self._swarm(swarm)))

    async def events(self, *, swarm: str | None = None, **params: Any) -> models.EventsPage:
        return await self.send(_calls.events_page(self._swarm(swarm), params))

    async def dead_letters(self, *, swarm: str | None = None) -> models.DeadLetters:
        return await self.send(_calls.dead_letters(self._swarm(swarm)))

    async def consolidate(self, *, swarm: str | None = None, **params: Any) -> models.ConsolidationAnswer:
        return await self.send(_calls.consolidate(self._swarm(swarm), params))

    async def contradictions(self, *, swarm: str | None = None, **params: Any) -> models.ContradictionsAnswer:
        return await self.send(_calls.contradictions(self._swarm(swarm), params))

    async def resolve(
        self, contradiction_id: str, resolution: str, *, swarm: str | None = None, **body: Any
    ) -> models.Resolved:
        return await self.send(_calls.resolve(self._swarm(swarm), contradiction_id, {"resolution": resolution, **body}))

    async def swarm_provenance(self, item_id: str, *, swarm: str | None = None) -> models.SwarmProvenance:
        return await self.send(_calls.swarm_provenance(self._swarm(swarm), item_id))

    async def purge(self, *, swarm: str | None = None, **body: Any) -> models.PurgeAnswer:
        return await self.send(_calls.purge(self._swarm(swarm), body))

    async def metrics(self) -> str:
        text: str = await self.send(_calls.metrics())
        return text

    async def openapi(self) -> dict[str, Any]:
        document: dict[str, Any] = await self.send(_calls.openapi())
        return document


def _server_sent_events(lines: Iterable[str]) -> Iterator[tuple[str, str]]:
    """(event, data) of each server-sent event in `lines`; comments (keep-alives) skipped."""
    event, data = "message", list[str]()
    for line in lines:
        if line == "":
            if data:
                yield event, "\n".join(data)
            event, data = "message", []
        elif line.startswith(":"):
            continue
        else:
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "event":
                event = value
            elif name == "data":
                data.append(value)
    if data:
        yield event, "\n".join(data)


__all__ = ["DEFAULT_URL", "AsyncMneme", "Mneme"]
