"""Drives Mneme's MCP server with the official Python MCP SDK (mcp 2.3.0), as
an MCP host would: `mneme mcp --agent coder --server URL` over stdio, and
`/mcp` on `mneme serve` over streamable HTTP, with every tool and the
resource, as agent `coder` and agent `reviewer`.

tests/mcp.rs starts `mneme serve` (swarm `demo`) with two bearer tokens, one
bound to `coder` and one to `reviewer`, and runs:

    mcp_client.py --mneme PATH_TO_mneme --server http://127.0.0.1:PORT \\
        --swarm demo --coder-token SECRET --reviewer-token SECRET

It prints one line per step passed (`stdio: initialize ok …`, `http: …`) and
exits 0; on the first failure it prints what was expected and what came
back, and exits 1.

Every write answers once the writer's memory has applied it, so the reads
that follow are not retried: a retry would hide a read-your-writes bug. The
one wait is for a handoff to reach the reviewer, which Mneme's router
delivers a moment after it is sent.
"""

from __future__ import annotations

import argparse
import builtins
import json
import re
import os
import secrets
import types
import string
import sys
import time
import traceback
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
import jsonschema
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

STANDARD_FORMATS = {"date-time", "date", "time", "duration", "email", "uri", "uri-reference", "uuid", "regex"}
READ_ONLY_TOOLS = {
    "memory_search",
    "memory_context",
    "memory_recall",
    "graph_neighbourhood",
    "memory_provenance",
    "core_memory_read",
    "handoffs_pending",
    "memory_timeline",
}
TOOLS = {
    "memory_search",
    "memory_context",
    "memory_recall",
    "memory_write",
    "memory_forget",
    "memory_pin",
    "memory_cite",
    "graph_neighbourhood",
    "memory_provenance",
    "core_memory_read",
    "core_memory_update",
    "handoff_send",
    "handoffs_pending",
    "handoff_ack",
    "memory_timeline",
}
# The server's default `core.block_tokens`.
BLOCK_TOKENS = 500
# How long a handoff may take to reach its recipient.
HANDOFF_DELIVERY_SECONDS = 15.0
# How long one transport's whole scenario may take before it counts as hung.
PASS_SECONDS = 180.0


@dataclass
class Agent:
    """An MCP session and the agent its token or `--agent` made it."""

    name: str
    session: ClientSession


@dataclass
class Note:
    item_id: str
    seq: int
    text: str


def check(condition: bool, message: str) -> None:
    """An assertion that `python -O` keeps."""
    if not condition:
        raise AssertionError(message)


def passed(transport: str, message: str) -> None:
    print(f"{transport}: {message}", flush=True)


def short(value: Any, limit: int = 2000) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, str) else value
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} characters)"


def new_word() -> str:
    """A word no other text in the swarm contains: letters only, so that no
    tokenizer splits it."""
    return "zq" + "".join(secrets.choice(string.ascii_lowercase) for _ in range(10))


async def call(agent: Agent, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Calls a tool that must succeed; its structured content (which the SDK
    has checked against the tool's output schema)."""
    result = await agent.session.call_tool(tool, arguments)
    text = " ".join(getattr(block, "text", "") for block in result.content)
    check(not result.is_error, f"{agent.name}: {tool}({short(arguments, 300)}) answered an error result: {text}")
    check(
        isinstance(result.structured_content, dict),
        f"{agent.name}: {tool} answered no structured content: {short(result.model_dump(mode='json'))}",
    )
    return result.structured_content


async def refused(agent: Agent, tool: str, arguments: dict[str, Any]) -> Any:
    """Calls a tool that must be refused with a tool error (an `isError`
    result: MCP asks input errors to be tool execution errors, which a model
    reads, not JSON-RPC errors); the error as `.error.message` (the text the
    model reads), `.error.data` (the HTTP error body, from `_meta`) and
    `.error.code`."""
    try:
        result = await agent.session.call_tool(tool, arguments)
    except MCPError as error:
        raise AssertionError(
            f"{agent.name}: {tool}({short(arguments, 300)}) was refused with a JSON-RPC error "
            f"({error.error.code}: {error.error.message}), not a tool error result"
        ) from error
    check(
        result.is_error,
        f"{agent.name}: {tool}({short(arguments, 300)}) was expected to be refused, "
        f"but answered {short(result.model_dump(mode='json'))}",
    )
    text = " ".join(getattr(block, "text", "") for block in result.content)
    body = (result.meta or {}).get("mneme/error")
    code = body.get("error", {}).get("code") if isinstance(body, dict) else None
    return types.SimpleNamespace(error=types.SimpleNamespace(message=text, data=body, code=code))


async def recall_item(agent: Agent, item_id: str) -> dict[str, Any]:
    recalled = await call(agent, "memory_recall", {"item_id": item_id})
    item = recalled.get("item")
    check(isinstance(item, dict), f"{agent.name}: memory_recall of {item_id} has no item: {short(recalled)}")
    check(item["item_id"] == item_id, f"memory_recall of {item_id} answered item {item['item_id']}")
    return item


def hit_ids(answer: dict[str, Any]) -> list[str]:
    return [hit["item_id"] for hit in answer["hits"]]


# --- the steps ---------------------------------------------------------------


async def initialize(transport: str, agent: Agent) -> None:
    init = await agent.session.initialize()
    check(init.server_info.name == "mneme", f"server name {init.server_info.name!r}, expected 'mneme'")
    check(init.capabilities.tools is not None, f"no tools capability: {init.capabilities}")
    check(init.capabilities.resources is not None, f"no resources capability: {init.capabilities}")
    passed(transport, f"initialize ok as {agent.name} ({init.protocol_version}, mneme {init.server_info.version})")


async def list_tools(transport: str, agent: Agent) -> None:
    tools = (await agent.session.list_tools()).tools
    names = {tool.name for tool in tools}
    check(
        names == TOOLS and len(tools) == len(TOOLS),
        f"tools: missing {sorted(TOOLS - names)}, unexpected {sorted(names - TOOLS)}, listed {len(tools)}",
    )
    for tool in tools:
        check(bool(tool.description and tool.description.strip()), f"tool {tool.name} has no description")
        for which, schema in (("input_schema", tool.input_schema), ("output_schema", tool.output_schema)):
            check(schema is not None, f"tool {tool.name} has no {which}")
            try:
                jsonschema.Draft202012Validator.check_schema(schema)
            except jsonschema.SchemaError as error:
                raise AssertionError(
                    f"tool {tool.name}: {which} is not a valid JSON Schema: {error.message}\n{short(schema)}"
                ) from error
            # Standard formats only (TypeScript clients warn about others).
            formats = set(re.findall(r'"format": "([^"]+)"', json.dumps(schema)))
            check(formats <= STANDARD_FORMATS, f"tool {tool.name}: {which} has formats {sorted(formats - STANDARD_FORMATS)}")
        # An optional argument is left out, never a union with null.
        check("null" not in json.dumps(tool.input_schema), f"tool {tool.name}: a null in {short(tool.input_schema)}")
        annotations = tool.annotations
        check(
            annotations is not None and isinstance(annotations.read_only_hint, bool) and bool(annotations.title),
            f"tool {tool.name} has no title and readOnlyHint: {annotations!r}",
        )
        if not annotations.read_only_hint:
            check(isinstance(annotations.destructive_hint, bool), f"tool {tool.name}: no destructiveHint")
    read_only = sorted(tool.name for tool in tools if tool.annotations.read_only_hint)
    check(
        set(read_only) == READ_ONLY_TOOLS,
        f"read-only tools {read_only}, expected {sorted(READ_ONLY_TOOLS)}",
    )
    search = next(tool for tool in tools if tool.name == "memory_search").input_schema
    mode = search["properties"]["mode"]
    if "$ref" in mode:
        mode = search["$defs"][mode["$ref"].rsplit("/", 1)[-1]]
    modes = {branch.get("const") for branch in mode.get("oneOf", [])} | set(mode.get("enum", []))
    check(modes == {"hybrid", "bm25", "vector", "graph"}, f"memory_search mode: {mode}")
    check(search["properties"]["limit"].get("minimum") == 1, f"memory_search limit: {search['properties']['limit']}")
    passed(transport, f"list_tools ok as {agent.name}: {len(tools)} tools, valid input and output schemas, annotated")


async def write_note(transport: str, coder: Agent, text: str, **extra: Any) -> Note:
    written = await call(coder, "memory_write", {"text": text, **extra})
    check(isinstance(written.get("event_id"), str) and written["event_id"], f"memory_write: {short(written)}")
    check(isinstance(written.get("seq"), int) and not isinstance(written["seq"], bool), f"memory_write: {written}")
    check(written.get("item_id") == written["event_id"], f"memory_write: item_id is not event_id: {written}")
    check(written.get("duplicate") is False, f"memory_write: duplicate is not false: {written}")
    scope = extra.get("scope", "private")
    passed(transport, f"memory_write ok ({scope} note {written['item_id']} at seq {written['seq']})")
    return Note(item_id=written["item_id"], seq=written["seq"], text=text)


async def search_finds(transport: str, agent: Agent, word: str, note: Note) -> None:
    answer = await call(agent, "memory_search", {"query": word})
    hits = answer.get("hits")
    check(isinstance(hits, list) and hits, f"{agent.name}: memory_search {word!r} found nothing: {short(answer)}")
    first = hits[0]
    check(
        first["item_id"] == note.item_id,
        f"{agent.name}: memory_search {word!r}: first hit {first['item_id']}, expected {note.item_id}; "
        f"hits {[(hit['item_id'], hit['text'][:80]) for hit in hits]}",
    )
    check(word in first["text"], f"the hit's text does not quote the note: {first['text']!r}")
    passed(transport, f"memory_search ok as {agent.name}: the note is the first hit")


async def recall_active(transport: str, coder: Agent, note: Note) -> None:
    item = await recall_item(coder, note.item_id)
    check(item["state"] == "active", f"memory_recall: state {item['state']!r}, expected 'active'")
    check(item["kind"] == "note_written", f"memory_recall: kind {item['kind']!r}, expected 'note_written'")
    seqs = [reference["seq"] for reference in item["provenance"]]
    check(note.seq in seqs, f"memory_recall: provenance seqs {seqs} lack the note's seq {note.seq}")
    check(item["text"] == note.text or note.text in item["text"], f"memory_recall: text {item['text']!r}")
    passed(transport, "memory_recall ok: active note_written with its provenance")


def check_core(core: dict[str, Any], agent: str, where: str) -> None:
    check(core.get("agent") == agent, f"{where}: agent {core.get('agent')!r}, expected {agent!r}")
    check(isinstance(core.get("block_tokens"), int), f"{where}: block_tokens {core.get('block_tokens')!r}")
    check(isinstance(core.get("blocks"), list), f"{where}: blocks {core.get('blocks')!r}")
    check(isinstance(core.get("pending_handoffs"), list), f"{where}: pending_handoffs {core.get('pending_handoffs')!r}")


def block_content(core: dict[str, Any], name: str) -> str | None:
    return next((block["content"] for block in core["blocks"] if block["name"] == name), None)


async def core_memory(transport: str, coder: Agent, plan: str) -> None:
    core = await call(coder, "core_memory_read", {})
    check_core(core, coder.name, "core_memory_read")
    passed(transport, f"core_memory_read ok: {len(core['blocks'])} blocks of at most {core['block_tokens']} tokens")

    updated = await call(coder, "core_memory_update", {"block": "plan", "content": plan})
    check(isinstance(updated.get("written"), dict), f"core_memory_update: no written: {short(updated)}")
    check(isinstance(updated["written"].get("seq"), int), f"core_memory_update: written {updated['written']}")
    check_core(updated.get("core") or {}, coder.name, "core_memory_update's core")
    content = block_content(updated["core"], "plan")
    check(content == plan, f"core_memory_update: block plan is {content!r}, expected {plan!r}")
    core = await call(coder, "core_memory_read", {})
    content = block_content(core, "plan")
    check(content == plan, f"core_memory_read after the update: block plan is {content!r}, expected {plan!r}")
    passed(transport, "core_memory_update ok: core_memory_read shows block plan")

    error = await refused(coder, "core_memory_update", {"block": "plan", "content": "word " * 3000})
    message = error.error.message
    check(
        "content" in message and str(BLOCK_TOKENS) in message,
        f"the over-limit block was refused with {message!r}, which names neither the field content nor "
        f"the limit {BLOCK_TOKENS}",
    )
    data = error.error.data
    if data is not None:
        field = data.get("error", {}).get("field") if isinstance(data, dict) else None
        check(field == "content", f"the over-limit block's error data names field {field!r}: {short(data)}")
    passed(transport, f"core_memory_update over the limit refused ({error.error.code}): {message}")
    passed(transport, f"  its error data: {short(data)}")


async def pin_and_cite(transport: str, coder: Agent, note: Note) -> None:
    pinned = await call(coder, "memory_pin", {"item_id": note.item_id, "reason": "the test keeps it"})
    check(isinstance(pinned.get("seq"), int) and pinned.get("item_id") == note.item_id, f"memory_pin: {pinned}")
    item = await recall_item(coder, note.item_id)
    check(item["pinned"] is True, f"memory_recall after memory_pin: pinned {item['pinned']!r}")
    cited = await call(coder, "memory_cite", {"item_id": note.item_id})
    check(isinstance(cited.get("seq"), int) and cited.get("item_id") == note.item_id, f"memory_cite: {cited}")
    item = await recall_item(coder, note.item_id)
    check(item["citations"] >= 1, f"memory_recall after memory_cite: citations {item['citations']!r}")
    passed(transport, f"memory_pin and memory_cite ok: pinned, {item['citations']} citation(s)")


async def context(transport: str, coder: Agent, word: str, plan: str) -> None:
    result = await coder.session.call_tool("memory_context", {"query": word, "budget_tokens": 800})
    check(not result.is_error, f"memory_context answered an error: {short(result.model_dump(mode='json'))}")
    answer = result.structured_content
    text = answer.get("text", "")
    # What a host passes to its model is the context itself, within budget.
    content = " ".join(getattr(block, "text", "") for block in result.content)
    check(content == text, f"memory_context: content is not the context text: {short(content, 400)}")
    check(
        isinstance(answer.get("tokens"), int) and answer["tokens"] <= 800,
        f"memory_context: tokens {answer.get('tokens')!r} over the budget of 800",
    )
    check(
        text.startswith(f"# Memory of {coder.name}"),
        f"memory_context: text does not start with '# Memory of {coder.name}': {short(text, 400)}",
    )
    check("## Core memory" in text, f"memory_context: no '## Core memory' section: {short(text)}")
    check(plan in text, f"memory_context: the plan block {plan!r} is not in the text: {short(text)}")
    passed(transport, f"memory_context ok: {answer['tokens']} tokens, core memory with the plan")


async def handoff(transport: str, coder: Agent, reviewer: Agent, word: str) -> None:
    task = f"review {word}"
    sent = await call(
        coder,
        "handoff_send",
        {
            "to": reviewer.name,
            "task": task,
            "summary": f"the retry budget of {word} is done ({transport})",
            "constraints": ["keep it small"],
        },
    )
    handoff_id = sent.get("event_id")
    check(isinstance(handoff_id, str) and isinstance(sent.get("seq"), int), f"handoff_send: {short(sent)}")
    passed(transport, f"handoff_send ok: {handoff_id}")

    # Mneme's router writes the reviewer's handoff_received a moment later:
    # the one wait of the scenario.
    deadline = time.monotonic() + HANDOFF_DELIVERY_SECONDS
    while True:
        pending = await call(reviewer, "handoffs_pending", {})
        check(pending.get("agent") == reviewer.name, f"handoffs_pending: agent {pending.get('agent')!r}")
        delivery = next((h for h in pending["handoffs"] if h["handoff_id"] == handoff_id), None)
        if delivery is not None or time.monotonic() > deadline:
            break
        await anyio.sleep(0.2)
    check(
        delivery is not None,
        f"handoffs_pending: handoff {handoff_id} not delivered to {reviewer.name} within "
        f"{HANDOFF_DELIVERY_SECONDS:.0f} s; pending {short(pending)}",
    )
    check(delivery["status"] == "pending", f"handoffs_pending: status {delivery['status']!r}")
    check(delivery["from"] == coder.name and delivery["to"] == reviewer.name, f"handoffs_pending: {short(delivery)}")
    package = delivery.get("package")
    check(isinstance(package, dict) and package.get("task") == task, f"handoffs_pending: package {short(package)}")
    check(all(h["status"] == "pending" for h in pending["handoffs"]), f"handoffs_pending lists others: {pending}")
    passed(transport, f"handoffs_pending ok as {reviewer.name}: the handoff is pending")

    core = await call(reviewer, "core_memory_read", {})
    check_core(core, reviewer.name, f"core_memory_read as {reviewer.name}")
    pending_ids = [h["handoff_id"] for h in core["pending_handoffs"]]
    check(handoff_id in pending_ids, f"core memory's pending_handoffs {pending_ids} lack {handoff_id}")
    current = core.get("task") or {}
    check(
        current.get("task_id") == handoff_id and current.get("source") == "handoff_received",
        f"core memory's task is not the handoff {handoff_id} from handoff_received: {short(current)}",
    )
    constraints = [constraint["text"] for constraint in core["constraints"]]
    check("keep it small" in constraints, f"core memory's constraints {constraints} lack 'keep it small'")
    passed(transport, f"core_memory_read ok as {reviewer.name}: task, constraint and pending handoff")

    acknowledged = await call(reviewer, "handoff_ack", {"handoff_id": handoff_id, "note": "taking it"})
    check(acknowledged.get("handoff_id") == handoff_id, f"handoff_ack: {short(acknowledged)}")
    check(isinstance(acknowledged.get("seq"), int), f"handoff_ack: {short(acknowledged)}")
    pending = await call(reviewer, "handoffs_pending", {})
    still = [h["handoff_id"] for h in pending["handoffs"]]
    check(handoff_id not in still, f"handoffs_pending right after handoff_ack still lists {handoff_id}: {still}")
    passed(transport, f"handoff_ack ok as {reviewer.name}: no longer pending")


async def scopes(transport: str, reviewer: Agent, private: Note, word: str, shared: Note, shared_word: str) -> None:
    """Run after the reviewer received a handoff sent after both notes: its
    memory has applied them by then."""
    answer = await call(reviewer, "memory_search", {"query": word})
    check(
        private.item_id not in hit_ids(answer),
        f"{reviewer.name} found coder's private note {private.item_id}: {short(answer)}",
    )
    error = await refused(reviewer, "memory_recall", {"item_id": private.item_id})
    check("item_id" in error.error.message, f"the refused recall does not name item_id: {error.error.message!r}")
    passed(transport, f"scopes ok: {reviewer.name} neither finds nor recalls coder's private note ({error})")
    answer = await call(reviewer, "memory_search", {"query": shared_word})
    hit = next((hit for hit in answer["hits"] if hit["item_id"] == shared.item_id), None)
    check(hit is not None, f"{reviewer.name} does not find coder's shared note {shared.item_id}: {short(answer)}")
    check(hit["agent"] == "coder" and hit["scope"] == "shared", f"the shared note's hit: {short(hit)}")
    passed(transport, f"scopes ok: {reviewer.name} finds coder's shared note")


async def graph(transport: str, coder: Agent, path: str) -> None:
    answer = await call(coder, "graph_neighbourhood", {"entity": path})
    nodes = answer.get("nodes")
    check(isinstance(nodes, list) and nodes, f"graph_neighbourhood {path!r}: no nodes: {short(answer)}")
    file_name = path.rsplit("/", 1)[-1]
    check(
        any(file_name in node["name"] or file_name in node["id"] for node in nodes),
        f"graph_neighbourhood {path!r}: no node for the file: {[(n['id'], n['name']) for n in nodes]}",
    )
    passed(transport, f"graph_neighbourhood ok: {len(nodes)} nodes, {len(answer['edges'])} edges around {path}")


async def forget(transport: str, coder: Agent, word: str, note: Note) -> int:
    """Forgets `note` (not pinned: a pin holds against forgetting); the seq
    of the `memory_forgotten` event."""
    forgotten = await call(coder, "memory_forget", {"item_id": note.item_id, "reason": "test"})
    check(isinstance(forgotten.get("seq"), int), f"memory_forget: {short(forgotten)}")
    answer = await call(coder, "memory_search", {"query": word})
    check(note.item_id not in hit_ids(answer), f"memory_search after memory_forget still finds it: {short(answer)}")
    item = await recall_item(coder, note.item_id)
    check(item["state"] == "forgotten", f"memory_recall after memory_forget: state {item['state']!r}")
    passed(transport, "memory_forget ok: out of search, recalled as forgotten")
    return forgotten["seq"]


async def provenance(transport: str, coder: Agent, note: Note, *later_seqs: int) -> None:
    answer = await call(coder, "memory_provenance", {"item_id": note.item_id})
    check(answer.get("item_id") == note.item_id and answer.get("agent") == coder.name, f"{short(answer, 400)}")
    seqs = [event.get("seq") for event in answer.get("events", [])]
    for seq in (note.seq, *later_seqs):
        check(seq in seqs, f"memory_provenance of {note.item_id}: event seqs {seqs} lack seq {seq}")
    passed(transport, f"memory_provenance ok: {len(seqs)} events behind {note.item_id}")


async def timeline(transport: str, coder: Agent, note: Note) -> None:
    since_seq, entries = 0, []
    while True:
        page = await call(coder, "memory_timeline", {"since_seq": since_seq, "limit": 500})
        check(
            page.get("agent") == coder.name and isinstance(page.get("next_seq"), int)
            and isinstance(page.get("more"), bool) and isinstance(page.get("entries"), list),
            f"memory_timeline: {short(page, 600)}",
        )
        entries += page["entries"]
        if not page["more"]:
            break
        check(page["next_seq"] > since_seq, f"memory_timeline: next_seq {page['next_seq']} after {since_seq}")
        since_seq = page["next_seq"]
    found = [e for e in entries if e["seq"] == note.seq]
    check(
        len(found) == 1 and found[0]["kind"] == "note_written",
        f"memory_timeline: entry at the note's seq {note.seq}: {short(found)}",
    )
    passed(transport, f"memory_timeline ok: {len(entries)} entries, the note_written among them")


async def resources(transport: str, agent: Agent, swarm: str) -> None:
    listed = (await agent.session.list_resources()).resources
    uris = [str(resource.uri) for resource in listed]
    uri = f"mneme://{swarm}/{agent.name}/core"
    check(uris == [uri], f"list_resources as {agent.name}: {uris}, expected [{uri!r}]")
    read = await agent.session.read_resource(uri)
    check(len(read.contents) == 1, f"read_resource {uri}: {len(read.contents)} contents")
    text = getattr(read.contents[0], "text", None)
    check(isinstance(text, str), f"read_resource {uri}: no text: {short(read.model_dump(mode='json'))}")
    core = json.loads(text)
    check_core(core, agent.name, f"read_resource {uri}")
    passed(transport, f"resources ok as {agent.name}: {uri}")


async def errors_name_the_field(transport: str, coder: Agent) -> None:
    error = await refused(coder, "memory_search", {"query": "x", "limit": "ten"})
    check(error.error.message.startswith("limit:"), f"memory_search with limit 'ten' refused with {error.error.message!r}")
    passed(transport, f"memory_search with a wrong type refused: {error.error.message}")
    error = await refused(coder, "memory_search", {"query": "x", "mode": "fuzzy"})
    check(error.error.message.startswith("mode:"), f"memory_search with mode 'fuzzy' refused with {error.error.message!r}")
    error = await refused(coder, "memory_recall", {"item_id": "01KE0000000000000000000000"})
    check("item_id" in error.error.message, f"memory_recall of an unknown item refused with {error.error.message!r}")
    passed(transport, f"memory_recall of an unknown item refused: {error.error.message}")
    error = await refused(coder, "memory_write", {"text": "  "})
    check("text" in error.error.message, f"memory_write of blank text refused with {error.error.message!r}")
    passed(transport, f"memory_write of blank text refused: {error.error.message}")
    error = await refused(coder, "memory_recall", {})
    check("item_id" in error.error.message, f"memory_recall of nothing refused with {error.error.message!r}")
    passed(transport, f"memory_recall of nothing refused: {error.error.message}")


# --- the transports ----------------------------------------------------------


async def pinned_is_not_forgotten(transport: str, coder: Agent, word: str, note: Note) -> int:
    """A pin holds against forgetting: memory_forget of the pinned note is
    refused naming item_id; unpinned, it is forgotten. Returns the seq of
    the forget."""
    error = await refused(coder, "memory_forget", {"item_id": note.item_id})
    check("item_id" in error.error.message and "pinned" in error.error.message, f"forget a pinned item: {error.error}")
    item = await recall_item(coder, note.item_id)
    check(item["state"] == "active", f"a refused forget changed the state: {item['state']!r}")
    unpinned = await call(coder, "memory_pin", {"item_id": note.item_id, "unpin": True})
    check(isinstance(unpinned.get("seq"), int), f"memory_pin with unpin: {short(unpinned)}")
    item = await recall_item(coder, note.item_id)
    check(item["pinned"] is False, f"memory_recall after unpin: pinned {item['pinned']!r}")
    seq = await forget(transport, coder, word, note)
    passed(transport, "a pinned note: forget refused naming item_id; unpinned, forgotten")
    return seq


async def scenario(transport: str, coder: Agent, reviewer: Agent, swarm: str) -> None:
    for agent in (coder, reviewer):
        await initialize(transport, agent)
        await list_tools(transport, agent)

    word, shared_word = new_word(), new_word()
    path = f"src/{word}_retry.rs"
    note = await write_note(
        transport,
        coder,
        f"{transport} note {word}: the retry budget lives in {path}; backoff resets on reconnect",
        tags=["gotcha"],
        importance=0.8,
    )
    await search_finds(transport, coder, word, note)
    await recall_active(transport, coder, note)
    plan = f"finish the retry budget of {word} over {transport}"
    await core_memory(transport, coder, plan)
    await pin_and_cite(transport, coder, note)
    await context(transport, coder, word, plan)
    # Written before the handoff: once the reviewer has received the handoff,
    # its memory has applied everything before it, this note too, so the
    # reviewer's reads in `scopes` need no wait of their own.
    shared_text = f"{transport} shared note {shared_word}: CI runs on main"
    shared = await write_note(transport, coder, shared_text, scope="shared")
    await handoff(transport, coder, reviewer, word)
    await scopes(transport, reviewer, note, word, shared, shared_word)
    await graph(transport, coder, path)
    # The note is pinned, and a pin holds against forgetting: forget another.
    scratch_word = new_word()
    scratch = await write_note(transport, coder, f"{transport} scratch note {scratch_word}: try the slow path")
    forgotten_seq = await forget(transport, coder, scratch_word, scratch)
    await provenance(transport, coder, scratch, forgotten_seq)
    await provenance(transport, coder, note)
    await timeline(transport, coder, note)
    await pinned_is_not_forgotten(transport, coder, word, note)
    for agent in (coder, reviewer):
        await resources(transport, agent, swarm)
    await errors_name_the_field(transport, coder)
    passed(transport, "all steps ok")


def authorization(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@asynccontextmanager
async def over_http(server: str, token: str) -> AsyncIterator[ClientSession]:
    timeout = httpx2.Timeout(30, read=300)
    async with httpx2.AsyncClient(headers=authorization(token), timeout=timeout) as http:
        async with streamable_http_client(f"{server}/mcp", http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                yield session


@asynccontextmanager
async def over_stdio(mneme: str, server: str, token: str) -> AsyncIterator[ClientSession]:
    parameters = StdioServerParameters(
        command=mneme,
        args=["mcp", "--agent", "coder", "--server", server],
        env={**os.environ, "MNEME_TOKEN": token},
    )
    async with stdio_client(parameters) as (read, write):
        async with ClientSession(read, write) as session:
            yield session


async def http_refusals(server: str, coder_token: str) -> None:
    """A token bound to coder asking for reviewer's tools, and no token at
    all, are refused before any MCP is spoken."""
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "mcp_client.py", "version": "1"},
        },
    }
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    async with httpx2.AsyncClient(timeout=30) as http:
        answer = await http.post(
            f"{server}/mcp?agent=reviewer",
            content=json.dumps(initialize),
            headers={**headers, **authorization(coder_token)},
        )
        check(
            answer.status_code == 403 and "reviewer" in answer.text,
            f"coder's token asking for reviewer: {answer.status_code} {answer.text!r}, expected 403 naming reviewer",
        )
        passed("http", f"coder's token asking for reviewer refused: 403 {answer.text}")
        answer = await http.post(f"{server}/mcp", content=json.dumps(initialize), headers=headers)
        check(answer.status_code == 401, f"no token: {answer.status_code} {answer.text!r}, expected 401")
        passed("http", "no token refused: 401")


async def run(arguments: argparse.Namespace) -> None:
    server = arguments.server.rstrip("/")
    with anyio.fail_after(PASS_SECONDS):
        async with AsyncExitStack() as stack:
            coder = await stack.enter_async_context(over_stdio(arguments.mneme, server, arguments.coder_token))
            reviewer = await stack.enter_async_context(over_http(server, arguments.reviewer_token))
            await scenario("stdio", Agent("coder", coder), Agent("reviewer", reviewer), arguments.swarm)
    await http_refusals(server, arguments.coder_token)
    with anyio.fail_after(PASS_SECONDS):
        async with AsyncExitStack() as stack:
            coder = await stack.enter_async_context(over_http(server, arguments.coder_token))
            reviewer = await stack.enter_async_context(over_http(server, arguments.reviewer_token))
            await scenario("http", Agent("coder", coder), Agent("reviewer", reviewer), arguments.swarm)


def leaves(error: BaseException) -> list[BaseException]:
    """The exceptions inside anyio's exception groups."""
    group = getattr(builtins, "BaseExceptionGroup", ())
    if group and isinstance(error, group):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mneme", required=True, help="the mneme binary, run as `mneme mcp` for stdio")
    parser.add_argument("--server", required=True, help="the running `mneme serve`, e.g. http://127.0.0.1:7700")
    parser.add_argument("--swarm", required=True)
    parser.add_argument("--coder-token", required=True, help="a bearer token bound to agent coder")
    parser.add_argument("--reviewer-token", required=True, help="a bearer token bound to agent reviewer")
    arguments = parser.parse_args()
    try:
        anyio.run(run, arguments)
    except BaseException as error:  # noqa: BLE001: every failure is reported, then exit 1
        for leaf in leaves(error):
            traceback.print_exception(leaf, file=sys.stderr)
            detail = f" (code {leaf.error.code}, data {short(leaf.error.data)})" if isinstance(leaf, MCPError) else ""
            print(f"FAILED: {type(leaf).__name__}: {leaf}{detail}", flush=True)
        return 1
    print("ALL OK", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
