"""Every operation of the API, through the sync client and the async one,
against a real server: typed answers parsed, errors mapped, the handoff
follow stream received."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

import httpx
import pytest
from pydantic import ValidationError

import mneme_client
from mneme_client import AsyncMneme, BadRequest, Conflict, Mneme, MnemeError, NotFound, _calls, events, models

OPENAPI = Path(__file__).resolve().parents[3] / "schemas" / "openapi.json"


def _work(swarm: str, agent: str, planner: str) -> list[models.Event]:
    """A small piece of work: a task, a decision, a failing then passing
    test run, a fact, a phase, and a handoff from `planner` to `agent`."""
    task = "task-rate-limit"
    me = events.Builder(swarm, agent, scope="private", correlation_id=task)
    lead = events.Builder(swarm, planner, scope="private", correlation_id=task)
    return [
        lead.build(models.TaskUpdated(task_id=task, status="in_progress", title="Rate-limit the login endpoint")),
        me.build(models.PhaseStarted(phase="implement", goal="count login attempts per client")),
        me.build(
            models.DecisionMade(title="where to count attempts", choice="a token bucket in redis", rationale="three replicas"),
            importance=0.8,
        ),
        me.build(
            models.ToolResultRecorded(
                tool="bash",
                args={"cmd": "cargo test --test login", "path": "src/api/login.rs"},
                output="test too_many_attempts_are_refused ... FAILED\nassertion failed: status == 429",
                exit_code=101,
                duration_ms=1200,
            )
        ),
        me.build(models.FactAsserted(subject="file:src/api/login.rs", predicate="depends_on", object="redis")),
        me.build(models.PhaseCompleted(phase="implement", outcome="the bucket is in place and the tests pass")),
        lead.build(models.HandoffSent(to=agent, task=task, summary="please review the login rate limit", artifacts=["src/api/login.rs"])),
    ]


def test_every_operation_answers_its_type(url: str, swarm: str, agent: str) -> None:
    planner = f"{agent}-lead"
    with Mneme(url, swarm=swarm, agent=agent) as mneme:
        assert mneme.health().status in {"ok", "degraded"}
        assert swarm in [entry.swarm for entry in mneme.swarms().swarms]
        document = mneme.openapi()
        assert document["info"]["version"] == mneme_client.__version__
        assert "mneme_" in mneme.metrics()

        work = _work(swarm, agent, planner)
        accepted = mneme.publish(work)
        assert [entry.id for entry in accepted.accepted] == [event.root.id for event in work]
        assert not any(entry.duplicate for entry in accepted.accepted)
        assert mneme.written_seq() == max(entry.seq for entry in accepted.accepted)
        again = mneme.publish(work[3])
        assert again.accepted[0].duplicate and again.accepted[0].seq == accepted.accepted[3].seq

        # Read-your-writes: the search waits for the publish without being told.
        hits = mneme.search("too many attempts refused", k=5).hits
        assert hits and hits[0].kind == "tool_result_recorded" and "429" in hits[0].text
        tool_item = hits[0].item_id
        assert agent in mneme.agents().agents

        context = mneme.context("rate limit login", budget=600, signals={"current_file": "src/api/login.rs"})
        assert context.tokens <= 600 and context.text

        context_get = mneme.send(_calls.context_get(swarm, agent, {"q": "rate limit", "budget": 400}))
        assert context_get.tokens <= 400

        graph = mneme.graph("file:src/api/login.rs", hops=1)
        assert any(node.id == "file:src/api/login.rs" for node in graph.nodes)

        listed = mneme.items(limit=50)
        assert tool_item in [entry.item_id for entry in listed.items]
        item = mneme.item(tool_item)
        assert item.kind == "tool_result_recorded" and item.provenance
        provenance = mneme.provenance(tool_item)
        assert [events.event_of(entry).root.id for entry in provenance.events][:1] == [work[3].root.id]
        holders = mneme.swarm_provenance(tool_item)
        assert agent in holders.holders

        phases = mneme.phases()
        assert phases.phases, "the completed phase is listed"
        phase = mneme.phase(phases.phases[0].phase_id, level="full")
        assert phase.name == "implement"

        handoffs = mneme.handoffs()
        assert [entry.from_ for entry in handoffs.handoffs] == [planner]
        delivery = next(iter(mneme.follow_handoffs()))
        assert delivery.handoff_id == handoffs.handoffs[0].handoff_id and delivery.status == "pending"
        acknowledged = mneme.acknowledge(delivery.handoff_id, note="on it")
        assert acknowledged.handoff_id == delivery.handoff_id
        with pytest.raises(Conflict) as conflict:
            mneme.acknowledge(delivery.handoff_id)
        assert conflict.value.status == 409
        assert mneme.handoffs().handoffs[0].status == "acknowledged"

        core = mneme.update_core(block="persona", content="reviews rate limits carefully")
        assert "persona" in json.dumps(core.core.model_dump(mode="json"))
        assert mneme.core().blocks
        note = mneme.write_note("login attempts are counted per client IP in redis", tags=["design"])
        assert note.item_id
        assert note.item_id in [hit.item_id for hit in mneme.search("counted per client IP").hits]

        timeline = mneme.timeline(limit=100)
        assert timeline.entries
        digest = mneme.digest()
        replayed = mneme.replay(verify=True)
        assert replayed.matches is not False and replayed.digest == digest.digest

        page = mneme.events(agent=agent, limit=100)
        logged = {event.root.id for event in map(events.event_of, page.events) if event is not None}
        assert logged >= {event.root.id for event in work if event.root.agent == agent}
        assert isinstance(mneme.dead_letters().dead_letters, list)
        # The log from the batch's first seq, followed: the batch in order
        # (with anything another publisher put between), then closed.
        ours, followed = {event.root.id for event in work}, []
        for entry in mneme.follow_events(from_seq=accepted.accepted[0].seq):
            event = events.event_of(entry)
            if event is not None and event.root.id in ours:
                followed.append(event.root.id)
            if len(followed) == len(work):
                break
        assert followed == [event.root.id for event in work]

        dry = mneme.consolidate(dry_run=True)
        assert dry.dry_run and dry.events_written == 0
        open_ = mneme.contradictions(agent=agent)
        assert isinstance(open_.open, list)
        with pytest.raises(NotFound) as missing:
            mneme.resolve("01KG0000000000000000000000", "a_wins")
        assert missing.value.code and missing.value.status == 404

        purged = mneme.purge(item_ids=[note.item_id], agent=agent, reason="a test of erasure")
        assert note.item_id in json.dumps(purged.model_dump(mode="json"))
        assert note.item_id not in [hit.item_id for hit in mneme.search("counted per client IP").hits]


def test_the_client_covers_every_operation_of_the_openapi_document() -> None:
    document = json.loads(OPENAPI.read_text())
    operations = {operation["operationId"] for path in document["paths"].values() for operation in path.values()}
    covered = set()
    for name in dir(_calls):
        function = getattr(_calls, name)
        if callable(function) and getattr(function, "__module__", None) == _calls.__name__ and not name.startswith("_"):
            returns = function.__annotations__.get("return", "")
            if "Call" in str(returns):
                covered.add(name)
    named = {
        call.operation
        for call in [
            _calls.health(),
            _calls.metrics(),
            _calls.openapi(),
            _calls.swarms(),
            _calls.agents("s"),
            _calls.append_events([]),
            _calls.search("s", "a", {"q": "x"}),
            _calls.context("s", "a", {}),
            _calls.context_get("s", "a", {}),
            _calls.graph("s", "a", {"entity": "e"}),
            _calls.items("s", "a", {}),
            _calls.item("s", "a", "i", {}),
            _calls.provenance("s", "a", "i", {}),
            _calls.swarm_provenance("s", "i"),
            _calls.phases("s", "a", {}),
            _calls.phase("s", "a", "p", {}),
            _calls.handoffs("s", "a", {}),
            _calls.acknowledge("s", "a", "h", None),
            _calls.core("s", "a", {}),
            _calls.update_core("s", "a", {"block": "b", "content": "c"}),
            _calls.write_note("s", "a", {"text": "t"}),
            _calls.timeline("s", "a", {}),
            _calls.digest("s", "a", {}),
            _calls.replay("s", "a", {}),
            _calls.consolidate("s", {}),
            _calls.contradictions("s", {}),
            _calls.resolve("s", "c", {"resolution": "a_wins"}),
            _calls.purge("s", {}),
            _calls.dead_letters("s"),
            _calls.events_page("s", {}),
        ]
    }
    assert len(covered) == len(named), "every call builder is listed above"
    assert named == operations, f"missing: {sorted(operations - named)}; unknown: {sorted(named - operations)}"


def test_errors_carry_the_code_and_the_field(mneme: Mneme) -> None:
    # Refused by the contract's parameter types before any request.
    with pytest.raises(ValidationError, match="kk"):
        mneme.search("x", kk=3)
    with pytest.raises(ValidationError):
        mneme.search("x", k=-1)
    with pytest.raises(ValidationError):
        events.build("no spaces allowed", "coder", models.MessageRecorded(role="user", text="x"))
    # Refused by the server, naming the field.
    with pytest.raises(BadRequest) as bad:
        mneme.search("x", mode="telepathy")
    assert bad.value.status == 400 and bad.value.field == "mode" and bad.value.code
    assert isinstance(bad.value, MnemeError)
    with pytest.raises(BadRequest) as unknown:
        mneme.publish({"id": events.new_id(), "swarm": mneme.swarm, "agent": mneme.agent, "ts": "2026-01-01T00:00:00Z",
                       "kind": "message_recorded", "data": {"role": "user", "text": "x", "colour": "red"}})
    assert unknown.value.code == "unknown_field" and "colour" in (unknown.value.field or unknown.value.message)


def test_every_kind_has_a_builder() -> None:
    document = json.loads(OPENAPI.read_text())
    kinds = {variant["title"] for variant in document["components"]["schemas"]["Event"]["oneOf"]}
    assert set(events.PAYLOADS) == kinds
    for kind, payload in events.PAYLOADS.items():
        assert events.kind_of(payload.model_construct()) == kind


def test_the_async_client_answers_alike_and_follows_handoffs(url: str, swarm: str, agent: str) -> None:
    planner = f"{agent}-lead"

    async def run() -> None:
        async with AsyncMneme(url, swarm=swarm, agent=agent) as mneme:
            # The agent exists once its first event is applied.
            await mneme.publish(events.build(swarm, agent, models.MessageRecorded(role="user", text="review queue")))
            await mneme.items()
            stream = mneme.follow_handoffs()
            # The stream is open before the handoff is sent: it arrives live.
            first = asyncio.ensure_future(stream.__anext__())
            await asyncio.sleep(0.5)
            work = _work(swarm, agent, planner)
            accepted = await mneme.publish(work)
            delivery = await asyncio.wait_for(first, timeout=20)
            await stream.aclose()
            assert delivery.from_ == planner and delivery.package is not None
            entries = mneme.follow_events(from_seq=accepted.accepted[-1].seq)
            last = await asyncio.wait_for(entries.__anext__(), timeout=20)
            await entries.aclose()
            assert events.event_of(last).root.id == work[-1].root.id
            hits = (await mneme.search("too many attempts refused")).hits
            assert hits and hits[0].kind == "tool_result_recorded"
            assert (await mneme.context("login", budget=300)).tokens <= 300
            assert (await mneme.health()).swarm
            acknowledged = await mneme.acknowledge(delivery.handoff_id)
            assert acknowledged.seq > 0
            with pytest.raises(BadRequest):
                await mneme.search("x", mode="telepathy")

    asyncio.run(run())


def test_reads_wait_for_the_clients_own_writes(url: str, swarm: str, agent: str) -> None:
    with Mneme(url, swarm=swarm, agent=agent) as mneme:
        for round_ in range(5):
            text = f"round {round_} of the flaky cache invalidation hunt {agent}"
            mneme.publish(events.build(swarm, agent, models.MessageRecorded(role="assistant", text=text)))
            assert any(text in hit.text for hit in mneme.search(f"round {round_} flaky cache invalidation", k=3).hits)


class _Flaky(httpx.BaseTransport):
    """A network that fails as given, then passes requests to the server."""

    def __init__(self, failures: list[int | None]) -> None:
        self.failures = list(failures)
        self.seen = 0
        self.real = httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.seen += 1
        if self.failures:
            status = self.failures.pop(0)
            if status is None:
                raise httpx.ConnectError("connection refused", request=request)
            return httpx.Response(status, headers={"retry-after": "0"}, json={"error": {"status": status, "code": "unavailable", "message": "try again"}})
        return self.real.handle_request(request)


def test_idempotent_calls_are_retried_and_others_are_not(url: str, swarm: str, agent: str) -> None:
    flaky = _Flaky([None, 503, 429])
    with Mneme(url, swarm=swarm, agent=agent, http=httpx.Client(transport=flaky)) as mneme:
        event = events.build(swarm, agent, models.MessageRecorded(role="user", text="retried publish"))
        assert mneme.publish(event).accepted[0].seq > 0
        assert flaky.seen == 4
    flaky = _Flaky([503])
    with Mneme(url, swarm=swarm, agent=agent, http=httpx.Client(transport=flaky)) as mneme:
        with pytest.raises(MnemeError) as refused:
            mneme.write_note("not retried")
        assert refused.value.status == 503 and flaky.seen == 1


def test_the_sync_client_is_safe_across_threads(url: str, swarm: str, agent: str) -> None:
    with Mneme(url, swarm=swarm, agent=agent) as mneme:
        failures: list[BaseException] = []

        def publish(index: int) -> None:
            try:
                mneme.publish(events.build(swarm, agent, models.MessageRecorded(role="user", text=f"thread {index}")))
            except BaseException as error:  # noqa: BLE001
                failures.append(error)

        threads = [threading.Thread(target=publish, args=(index,)) for index in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not failures
        assert len(mneme.events(agent=agent, limit=100).events) >= 8
