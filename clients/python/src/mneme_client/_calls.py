"""Every operation of the HTTP API as a request to make and the type of its
answer: written once, sent by the sync client and the async one alike.

Query parameters are checked by the contract's own parameter types
(`models.SearchParams`, …), which refuse an unknown one, so a typo fails
here, before the request, naming the field."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar
from urllib.parse import quote

from pydantic import BaseModel

from . import models

A = TypeVar("A", bound=BaseModel)


@dataclass(frozen=True)
class Call(Generic[A]):
    """One request: `answer` parses its body; `idempotent` calls are retried
    after a lost connection or a refusal that asks to wait; `min_seq_swarm`
    names the swarm whose writes a read may wait for (read-your-writes)."""

    operation: str
    method: str
    path: str
    answer: type[A] | None
    params: dict[str, Any] = field(default_factory=dict)
    json: Any = None
    idempotent: bool = True
    min_seq_swarm: str | None = None


def _segment(value: str) -> str:
    return quote(value, safe="")


def _agent_path(swarm: str, agent: str, rest: str = "") -> str:
    return f"/v1/swarms/{_segment(swarm)}/agents/{_segment(agent)}{rest}"


def _query(params_type: type[BaseModel], values: dict[str, Any]) -> dict[str, Any]:
    """`values` checked by the contract's parameter type, as a query string's
    pairs (booleans as `true`/`false`, lists comma- or newline-joined by the
    caller)."""
    checked = params_type.model_validate({key: value for key, value in values.items() if value is not None})
    pairs = checked.model_dump(mode="json", exclude_none=True, exclude_unset=True)
    return {key: ("true" if value is True else "false" if value is False else value) for key, value in pairs.items()}


def _body(body_type: type[BaseModel], values: dict[str, Any]) -> dict[str, Any]:
    checked = body_type.model_validate({key: value for key, value in values.items() if value is not None})
    return checked.model_dump(mode="json", exclude_none=True, exclude_unset=True, by_alias=True)


def health() -> Call[models.Health]:
    return Call("Health", "GET", "/healthz", models.Health)


def swarms() -> Call[models.Swarms]:
    return Call("Swarms", "GET", "/v1/swarms", models.Swarms)


def agents(swarm: str) -> Call[models.Agents]:
    return Call("Agents", "GET", f"/v1/swarms/{_segment(swarm)}/agents", models.Agents)


def append_events(events: list[dict[str, Any]]) -> Call[models.AcceptedEvents]:
    # An event's id makes a repeat harmless: the log stores it once.
    return Call("AppendEvents", "POST", "/v1/events", models.AcceptedEvents, json=events)


def search(swarm: str, agent: str, params: dict[str, Any]) -> Call[models.SearchAnswer]:
    query = _query(models.SearchParams, params)
    return Call("Search", "GET", _agent_path(swarm, agent, "/search"), models.SearchAnswer, query, min_seq_swarm=swarm)


def context(swarm: str, agent: str, body: dict[str, Any]) -> Call[models.ContextAnswer]:
    # The JSON body: lists of errors stay lists; the same answer as GET.
    json = _body(models.ContextBody, body)
    return Call(
        "PostContext", "POST", _agent_path(swarm, agent, "/context"), models.ContextAnswer, json=json, min_seq_swarm=swarm
    )


def context_get(swarm: str, agent: str, params: dict[str, Any]) -> Call[models.ContextAnswer]:
    query = _query(models.ContextParams, params)
    return Call("GetContext", "GET", _agent_path(swarm, agent, "/context"), models.ContextAnswer, query, min_seq_swarm=swarm)


def graph(swarm: str, agent: str, params: dict[str, Any]) -> Call[models.GraphAnswer]:
    query = _query(models.GraphParams, params)
    return Call("Graph", "GET", _agent_path(swarm, agent, "/graph"), models.GraphAnswer, query, min_seq_swarm=swarm)


def items(swarm: str, agent: str, params: dict[str, Any]) -> Call[models.ItemStates]:
    query = _query(models.ItemsParams, params)
    return Call("ItemStates", "GET", _agent_path(swarm, agent, "/items"), models.ItemStates, query, min_seq_swarm=swarm)


def item(swarm: str, agent: str, item_id: str, params: dict[str, Any]) -> Call[models.ItemAnswer]:
    query = _query(models.MinSeqParams, params)
    path = _agent_path(swarm, agent, f"/items/{_segment(item_id)}")
    return Call("Item", "GET", path, models.ItemAnswer, query, min_seq_swarm=swarm)


def provenance(swarm: str, agent: str, item_id: str, params: dict[str, Any]) -> Call[models.AgentProvenance]:
    query = _query(models.MinSeqParams, params)
    path = _agent_path(swarm, agent, f"/provenance/{_segment(item_id)}")
    return Call("AgentProvenance", "GET", path, models.AgentProvenance, query, min_seq_swarm=swarm)


def swarm_provenance(swarm: str, item_id: str) -> Call[models.SwarmProvenance]:
    path = f"/v1/swarms/{_segment(swarm)}/provenance/{_segment(item_id)}"
    return Call("SwarmProvenance", "GET", path, models.SwarmProvenance)


def phases(swarm: str, agent: str, params: dict[str, Any]) -> Call[models.PhasesAnswer]:
    query = _query(models.MinSeqParams, params)
    return Call("Phases", "GET", _agent_path(swarm, agent, "/phases"), models.PhasesAnswer, query, min_seq_swarm=swarm)


def phase(swarm: str, agent: str, phase_id: str, params: dict[str, Any]) -> Call[models.PhaseAnswer]:
    query = _query(models.PhaseParams, params)
    path = _agent_path(swarm, agent, f"/phases/{_segment(phase_id)}")
    return Call("Phase", "GET", path, models.PhaseAnswer, query, min_seq_swarm=swarm)


def handoffs(swarm: str, agent: str, params: dict[str, Any]) -> Call[models.HandoffsAnswer]:
    query = _query(models.HandoffsParams, params)
    path = _agent_path(swarm, agent, "/handoffs")
    return Call("Handoffs", "GET", path, models.HandoffsAnswer, query, min_seq_swarm=swarm)


def acknowledge(swarm: str, agent: str, handoff_id: str, note: str | None) -> Call[models.Acknowledged]:
    path = _agent_path(swarm, agent, f"/handoffs/{_segment(handoff_id)}/ack")
    # A repeat after a lost answer is refused as already acknowledged: not retried.
    return Call("Acknowledge", "POST", path, models.Acknowledged, json=_body(models.AcknowledgeBody, {"note": note}), idempotent=False)


def core(swarm: str, agent: str, params: dict[str, Any]) -> Call[models.CoreMemoryAnswer]:
    query = _query(models.MinSeqParams, params)
    return Call("Core", "GET", _agent_path(swarm, agent, "/core"), models.CoreMemoryAnswer, query, min_seq_swarm=swarm)


def update_core(swarm: str, agent: str, body: dict[str, Any]) -> Call[models.CoreUpdated]:
    json = _body(models.CoreUpdateBody, body)
    return Call("UpdateCore", "POST", _agent_path(swarm, agent, "/core"), models.CoreUpdated, json=json, idempotent=False)


def write_note(swarm: str, agent: str, body: dict[str, Any]) -> Call[models.Written]:
    json = _body(models.NoteBody, body)
    return Call("WriteNote", "POST", _agent_path(swarm, agent, "/notes"), models.Written, json=json, idempotent=False)


def timeline(swarm: str, agent: str, params: dict[str, Any]) -> Call[models.TimelineAnswer]:
    query = _query(models.TimelineParams, params)
    return Call("Timeline", "GET", _agent_path(swarm, agent, "/timeline"), models.TimelineAnswer, query)


def digest(swarm: str, agent: str, params: dict[str, Any]) -> Call[models.Digest]:
    query = _query(models.MinSeqParams, params)
    return Call("Digest", "GET", _agent_path(swarm, agent, "/digest"), models.Digest, query, min_seq_swarm=swarm)


def replay(swarm: str, agent: str, params: dict[str, Any]) -> Call[models.ReplayAnswer]:
    query = _query(models.ReplayParams, params)
    path = _agent_path(swarm, agent, "/replay")
    return Call("Replay", "POST", path, models.ReplayAnswer, query, idempotent=False, min_seq_swarm=swarm)


def consolidate(swarm: str, params: dict[str, Any]) -> Call[models.ConsolidationAnswer]:
    query = _query(models.ConsolidateParams, params)
    path = f"/v1/swarms/{_segment(swarm)}/consolidate"
    return Call("Consolidate", "POST", path, models.ConsolidationAnswer, query, idempotent=False)


def contradictions(swarm: str, params: dict[str, Any]) -> Call[models.ContradictionsAnswer]:
    query = _query(models.ContradictionParams, params)
    return Call("Contradictions", "GET", f"/v1/swarms/{_segment(swarm)}/contradictions", models.ContradictionsAnswer, query)


def resolve(swarm: str, contradiction_id: str, body: dict[str, Any]) -> Call[models.Resolved]:
    path = f"/v1/swarms/{_segment(swarm)}/contradictions/{_segment(contradiction_id)}/resolve"
    return Call("Resolve", "POST", path, models.Resolved, json=_body(models.ResolveBody, body), idempotent=False)


def purge(swarm: str, body: dict[str, Any]) -> Call[models.PurgeAnswer]:
    path = f"/v1/swarms/{_segment(swarm)}/purge"
    return Call("Purge", "POST", path, models.PurgeAnswer, json=_body(models.PurgeBody, body), idempotent=False)


def dead_letters(swarm: str) -> Call[models.DeadLetters]:
    return Call("DeadLetters", "GET", f"/v1/swarms/{_segment(swarm)}/deadletters", models.DeadLetters)


def events_page(swarm: str, params: dict[str, Any]) -> Call[models.EventsPage]:
    query = _query(models.EventsParams, params)
    return Call("Events", "GET", f"/v1/swarms/{_segment(swarm)}/events", models.EventsPage, query)


def metrics() -> Call[Any]:
    return Call("Metrics", "GET", "/metrics", None)


def openapi() -> Call[Any]:
    return Call("OpenApi", "GET", "/v1/openapi.json", None)
