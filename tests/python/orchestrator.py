#!/usr/bin/env python3
"""A swarm orchestrator written from Mneme's README alone, with nats-py.

Three agents (planner, coder, reviewer) work on one task. Their events go
straight to JetStream on `mneme.<swarm>.<agent>.events.<kind>` with
`Nats-Msg-Id`; the reviewer gets its handoff on `mneme.<swarm>.reviewer.handoff`,
reads it again, as if it had been down, with a durable consumer on stream
`MNEME_<swarm>_HANDOFFS`, and acknowledges it with the `ack` verb;
everything is asked over request/reply on `mneme.<swarm>.<agent>.query.<verb>`,
and the raw log and dead letters over HTTP. Each check that fails is reported
with what was expected (and the issue item it comes from), and the script
exits 1 if any did.

    orchestrator.py --nats URL --http URL --swarm NAME --state FILE --answers FILE
    orchestrator.py ... --check-only   # only read-only queries, after a restart

The full run writes what it published to --state, and both modes write the
query answers, in canonical JSON, to --answers, so that a caller can compare
the answers before and after restarting Mneme.
"""

import argparse
import asyncio
import json
import os
import sys
import time
import urllib.error
import urllib.request

import nats
from nats.errors import TimeoutError as NatsTimeout
from nats.js.errors import NotFoundError

TASK = "task-jwt-refresh"
FILE = "src/auth/token.rs"
TEST_COMMAND = "cargo test --test token"
FAILURE = (
    "running 1 test\ntest refresh_rotates ... FAILED\n\n---- refresh_rotates stdout ----\n"
    "thread 'refresh_rotates' panicked at src/auth/token.rs:88:9:\n"
    "called `Result::unwrap()` on an `Err` value: TokenExpiredError\n"
    "test result: FAILED. 0 passed; 1 failed"
)
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
FAILED_CHECKS = []


def check(condition, message):
    """Records a failed check; the run goes on so that every failure shows."""
    if not condition:
        message = message if len(message) <= 600 else message[:600] + " …"
        FAILED_CHECKS.append(message)
        print(f"FAIL: {message}", flush=True)
    return condition


def ulid():
    """A ULID: 48 bits of milliseconds and 80 random bits, Crockford base32."""
    value = (int(time.time() * 1000) << 80) | int.from_bytes(os.urandom(10), "big")
    return "".join(CROCKFORD[(value >> shift) & 31] for shift in range(125, -5, -5))


class Swarm:
    """Publishes events the way the README describes, and asks Mneme."""

    def __init__(self, nc, http, swarm):
        self.nc, self.js, self.http, self.swarm = nc, nc.jetstream(), http, swarm
        self.published = 0

    def event(self, agent, kind, data, **envelope):
        event = {"id": ulid(), "swarm": self.swarm, "agent": agent, "kind": kind,
                 "ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "data": data,
                 "scope": "shared", "correlation_id": TASK}
        event.update(envelope)
        return event

    async def publish(self, event, msg_id=True):
        """One event on its subject; the publish ack (seq, duplicate)."""
        subject = f"mneme.{self.swarm}.{event['agent']}.events.{event['kind']}"
        headers = {"Nats-Msg-Id": event["id"]} if msg_id else None
        self.published += 1
        return await self.js.publish(subject, json.dumps(event).encode(), headers=headers)

    async def burst(self, events):
        """Publishes without awaiting one ack before the next publish."""
        return await asyncio.gather(*(self.publish(event) for event in events))

    async def query(self, agent, verb, body):
        subject = f"mneme.{self.swarm}.{agent}.query.{verb}"
        reply = await self.nc.request(subject, json.dumps(body).encode(), timeout=20)
        return json.loads(reply.data)

    def get(self, path):
        return http_call("GET", self.http + path)

    def post(self, path, body):
        return http_call("POST", self.http + path, body)


def http_call(method, url, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def tool(agent, swarm, name, args, output, exit_code=None):
    data = {"tool": name, "args": args, "output": output}
    if exit_code is not None:
        data["exit_code"] = exit_code
    return swarm.event(agent, "tool_result_recorded", data)


async def publish_the_work(swarm):
    """About 200 events of the three agents; returns what later checks need."""
    s = {}
    planner, coder, reviewer = "planner", "coder", "reviewer"
    phase = swarm.event(planner, "phase_started", {"phase": "implement refresh", "goal": "rotating refresh tokens"})
    s["phase_id"] = phase["id"]
    await swarm.publish(swarm.event(planner, "task_updated", {"task_id": TASK, "status": "open",
                                                               "title": "JWT refresh"}))
    await swarm.publish(phase)
    first = swarm.event(planner, "decision_made", {"title": "refresh token storage",
                                                   "choice": "keep refresh tokens in redis"})
    second = swarm.event(planner, "decision_made", {"title": "refresh token storage",
                                                    "choice": "keep refresh tokens in postgres",
                                                    "rationale": "one store to back up", "supersedes": first["id"]},
                         importance=0.8)
    s["superseded"], s["superseding"] = first["id"], second["id"]
    await swarm.publish(first)
    for turn in range(40):
        await swarm.publish(swarm.event(planner, "message_recorded",
                                        {"role": "assistant", "text": f"planning note {turn} on token rotation"}))
    await swarm.publish(second)

    await swarm.publish(tool(coder, swarm, "read_file", {"path": FILE}, "pub fn refresh() {}\n", 0))
    failing = tool(coder, swarm, "bash", {"cmd": TEST_COMMAND}, FAILURE, 101)
    fix = tool(coder, swarm, "edit_file", {"path": FILE, "old_string": "token.unwrap()",
                                           "new_string": "token.map_err(refresh_error)?"}, "edited", 0)
    passing = tool(coder, swarm, "bash", {"cmd": TEST_COMMAND}, "test result: ok. 1 passed", 0)
    s["failing"], s["fix"], s["passing"] = failing["id"], fix["id"], passing["id"]
    for event in (failing, fix, passing):
        await swarm.publish(event)
    for turn in range(40):
        await swarm.publish(swarm.event(coder, "message_recorded",
                                        {"role": "assistant", "text": f"coder progress {turn}: refresh path"}))

    # Issue 16 item 1: a fact, the handoff, 40 messages and a later fact, in
    # one burst. The later fact must stay out of the bundle.
    early = swarm.event(coder, "fact_asserted", {"subject": FILE, "predicate": "signs_with", "object": "RS256"})
    handoff = swarm.event(coder, "handoff_sent", {"to": reviewer, "task": TASK,
                                                  "summary": "refresh rotation done, please review",
                                                  "artifacts": [FILE], "decisions": [second["id"]]})
    late = swarm.event(coder, "fact_asserted", {"subject": "refresh_tokens", "predicate": "purged_by",
                                                "object": "the nightly janitor"})
    chatter = [swarm.event(coder, "message_recorded", {"role": "assistant", "text": f"after handoff {n}"})
               for n in range(40)]
    acks = await swarm.burst([early, handoff, *chatter, late])
    s.update(early=early["id"], handoff=handoff["id"], late=late["id"], handoff_seq=acks[1].seq)

    for turn in range(50):
        await swarm.publish(swarm.event(reviewer, "message_recorded",
                                        {"role": "assistant", "text": f"review comment {turn} on {FILE}"}))
    await swarm.publish(swarm.event(planner, "phase_completed", {"phase": "implement refresh",
                                                                 "phase_id": phase["id"], "outcome": "merged"}))

    # A status the README does not list: dead-lettered, stays on the log.
    bad = swarm.event(planner, "task_updated", {"task_id": TASK, "status": "in_review"})
    s["bad_seq"] = (await swarm.publish(bad)).seq
    # The same id again within the window: JetStream itself drops it.
    again = await swarm.publish(early)
    check(again.duplicate and again.seq == acks[0].seq,
          f"a repeated Nats-Msg-Id within the window is acked as a duplicate of seq {acks[0].seq}: {again}")
    # The same id with other content and no Nats-Msg-Id reaches the log.
    conflicting = dict(early, data=dict(early["data"], object="HS256"))
    s["conflict_seq"] = (await swarm.publish(conflicting, msg_id=False)).seq
    s["early_seq"] = acks[0].seq
    status, body = swarm.post("/v1/events", conflicting)
    check(status == 409 and body.get("error", {}).get("code") == "conflicting_duplicate",
          f"issue 16 item 2: POST /v1/events of a known id with other content is 409 conflicting_duplicate, "
          f"got {status} {body}")
    s["last_seq"] = (await swarm.publish(swarm.event(reviewer, "message_recorded",
                                                     {"role": "assistant", "text": "review finished"}))).seq
    return s


async def receive_handoff(subscription, handoff_id):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            message = await subscription.next_msg(timeout=max(0.1, deadline - time.monotonic()))
        except NatsTimeout:
            break
        package = json.loads(message.data)
        if package.get("handoff_id") == handoff_id:
            return package
    return None


def check_handoff(package, s):
    if not check(package is not None, "the reviewer receives the handoff on mneme.<swarm>.reviewer.handoff"):
        return
    bundle = package.get("package", package).get("bundle", {})
    items = bundle.get("items", [])
    behind = {p["event_id"] for item in items for p in item.get("provenance", [])}
    check(s["late"] not in behind and not any("janitor" in item["text"] for item in items),
          "issue 16 item 1: the fact published after the handoff (seq > sent_seq) is not in its bundle")
    check(s["early"] in behind, "the coder's fact from before the handoff is in the bundle")
    check(s["superseding"] in behind and s["superseded"] not in behind,
          "the bundle holds the active decision, not the superseded one")
    check(bundle.get("used_tokens", 0) <= bundle.get("budget_tokens", 0), f"the bundle keeps its budget: {bundle}")


HANDOFF_CONSUMER = "reviewer-handoffs"


def handoffs_stream(swarm):
    return f"MNEME_{swarm.swarm}_HANDOFFS"


async def check_durable_handoffs(swarm, s, delivered):
    """Issue 16 item 6: the reviewer, down while its handoff was delivered,
    reads it from MNEME_<swarm>_HANDOFFS with a durable consumer made now,
    then lists and acknowledges it with the handoffs and ack verbs."""
    await read_handoffs_as_a_late_reviewer(swarm, s, delivered)
    await list_and_acknowledge(swarm, s)


async def read_handoffs_as_a_late_reviewer(swarm, s, delivered):
    """A durable pull consumer filtered to the reviewer's subject, created
    after the delivery, as the README's nats-py example makes it."""
    stream, subject = handoffs_stream(swarm), f"mneme.{swarm.swarm}.reviewer.handoff"
    try:
        info = await swarm.js.stream_info(stream, subjects_filter=subject)
        held = (info.state.subjects or {}).get(subject, 0)
        check(held == 1, f"issue 16 item 6: {stream} holds the reviewer's one handoff once: {held} message(s)")
        try:
            await swarm.js.consumer_info(stream, HANDOFF_CONSUMER)
            check(False, f"issue 16 item 6: the durable {HANDOFF_CONSUMER} does not exist before the reviewer makes it")
        except NotFoundError:
            pass
        consumer = await swarm.js.pull_subscribe(subject, durable=HANDOFF_CONSUMER, stream=stream)
        messages = await fetch_all(consumer)
        for message in messages:
            # nats-py waits 1 s for the ack's confirmation by default: a
            # loaded CI machine once took longer (TimeoutError).
            await message.ack_sync(timeout=10)
        packages = [json.loads(message.data) for message in messages]
        ids = [package.get("handoff_id") for package in packages]
        if check(ids == [s["handoff"]], f"issue 16 item 6: a durable consumer created after the delivery gets the "
                                        f"handoff {s['handoff']} exactly once: {ids}"):
            message_id = (messages[0].headers or {}).get("Nats-Msg-Id")
            check(message_id == s["handoff"],
                  f"issue 16 item 6: the stored handoff's Nats-Msg-Id is its handoff id: {message_id}")
            check(packages[0] == delivered,
                  "issue 16 item 6: the stream holds the package the plain subscriber received")
            check(packages[0].get("status") == "pending",
                  f"issue 16 item 6: the stored handoff says pending: {packages[0].get('status')}")
        again = await fetch_all(consumer, timeout=2)
        check(not again, f"issue 16 item 6: once acked, the durable consumer has nothing more: "
                         f"{[message.data[:80] for message in again]}")
        await check_consumer_done(swarm)
        await consumer.unsubscribe()  # the durable stays, as a reviewer's would
    except Exception as error:  # any failure of the stream or consumer is this item's
        check(False, f"issue 16 item 6: reading handoffs from {stream} with a durable consumer: {error!r}")


async def fetch_all(consumer, timeout=10):
    """Every message the consumer has for us now; none after the timeout."""
    try:
        return await consumer.fetch(10, timeout=timeout)
    except NatsTimeout:
        return []


async def check_consumer_done(swarm):
    """The reviewer's durable consumer has nothing pending and nothing
    delivered unacknowledged (read only: consumer info)."""
    try:
        info = await swarm.js.consumer_info(handoffs_stream(swarm), HANDOFF_CONSUMER)
    except Exception as error:
        check(False, f"issue 16 item 6: the durable {HANDOFF_CONSUMER} on {handoffs_stream(swarm)} exists: {error!r}")
        return
    check(info.num_pending == 0 and info.num_ack_pending == 0 and info.ack_floor.stream_seq == info.delivered.stream_seq,
          f"issue 16 item 6: the reviewer's durable consumer has no handoff left to read or to ack: "
          f"pending {info.num_pending}, ack pending {info.num_ack_pending}, delivered {info.delivered}, "
          f"ack floor {info.ack_floor}")


async def handoff_listed(swarm, handoff_id, status, min_seq=None):
    """The handoffs verb's entry for the handoff, waiting (up to 10 s) for
    the memory to show it with `status`; the last listing too."""
    deadline = time.monotonic() + 10
    while True:
        listing = await swarm.query("reviewer", "handoffs", {} if min_seq is None else {"min_seq": min_seq})
        entry = next((h for h in listing.get("handoffs", []) if h.get("handoff_id") == handoff_id), None)
        if (entry or {}).get("status") == status or "error" in listing or time.monotonic() > deadline:
            return entry, listing
        await asyncio.sleep(0.2)


async def list_and_acknowledge(swarm, s):
    """The handoffs verb shows the handoff pending; ack acknowledges it once;
    a second ack and an ack body with an unknown field are refused."""
    entry, listing = await handoff_listed(swarm, s["handoff"], "pending")
    check(entry is not None and entry.get("status") == "pending" and entry.get("from") == "coder",
          f"issue 16 item 6: the handoffs verb lists the coder's handoff as pending: {str(listing)[:400]}")
    # Refused before the real ack: accepting it would acknowledge the handoff.
    typo = await swarm.query("reviewer", "ack", {"handoff_id": s["handoff"], "notes": "reviewing"})
    error = typo.get("error", {})
    check(error.get("status") == 400 and error.get("code") == "unknown_field" and error.get("field") == "notes",
          f"issue 16 item 6: the ack verb refuses the unknown field notes with 400 unknown_field: {typo}")
    unknown = await swarm.query("reviewer", "ack", {"handoff_id": ulid()})
    check(unknown.get("error", {}).get("status") == 404,
          f"issue 16 item 6: the ack verb answers 404 for a handoff the reviewer did not receive: {unknown}")
    acked = await swarm.query("reviewer", "ack", {"handoff_id": s["handoff"], "note": "reviewing the rotation"})
    check("error" not in acked, f"issue 16 item 6: the ack verb acknowledges the pending handoff: {acked}")
    twice = await swarm.query("reviewer", "ack", {"handoff_id": s["handoff"], "note": "again"})
    check(twice.get("error", {}).get("status") == 409,
          f"issue 16 item 6: a second ack of the same handoff answers 409: {twice}")
    entry, listing = await handoff_listed(swarm, s["handoff"], "acknowledged")
    check((entry or {}).get("status") == "acknowledged",
          f"issue 16 item 6: after the ack the handoffs verb shows the handoff acknowledged: {str(listing)[:400]}")


async def check_handoffs_after_ack(swarm, s, answers):
    """Read only, in both modes: the handoff stays acknowledged (a restart
    does not make it pending again) and the reviewer's durable consumer gets
    no copy of it (a restart publishes only unacknowledged handoffs again,
    and the stream would store one once)."""
    listing = await swarm.query("reviewer", "handoffs", {"min_seq": s["quiet_seq"]})
    answers["handoffs"] = listing
    entry = next((h for h in listing.get("handoffs", []) if h.get("handoff_id") == s["handoff"]), {})
    check(entry.get("status") == "acknowledged",
          f"issue 16 item 6: the handoffs verb shows the handoff acknowledged: {str(listing)[:400]}")
    await check_consumer_done(swarm)


async def check_queries(swarm, s):
    """The five query verbs; returns their answers for the restart check."""
    answers = {}
    wait = {"min_seq": s["quiet_seq"]}
    search = await swarm.query("planner", "search", {"q": "refresh token storage redis", "k": 10, **wait})
    answers["search"] = search
    hits = {hit["item_id"]: hit for hit in search.get("hits", [])}
    check(s["superseded"] in hits, f"search finds the superseded decision: {list(hits)}")
    old = hits.get(s["superseded"], {})
    check(old.get("superseded_by") == s["superseding"],
          f"issue 16 item 3: the superseded decision's hit says superseded_by {s['superseding']}: {old}")
    _, item = swarm.get(f"/v1/swarms/{swarm.swarm}/agents/planner/items/{s['superseded']}")
    check(item.get("superseded_by") == s["superseding"],
          f"issue 16 item 3: GET …/items/{{id}} of the superseded decision says superseded_by: {item}")
    _, item = swarm.get(f"/v1/swarms/{swarm.swarm}/agents/planner/items/{s['superseding']}")
    check(item.get("importance") == 0.8, f"issue 16 item 10: importance 0.8 comes back as 0.8: {item.get('importance')}")

    for budget in (3000, 400):
        body = {"query": "how was the TokenExpiredError fixed", "budget": budget,
                "signals": {"recent_errors": ["TokenExpiredError"], "current_file": FILE, "activity": "debugging"},
                **wait}
        context = await swarm.query("coder", "context", body)
        answers[f"context_{budget}"] = context
        if not check("error" not in context, f"the context verb answers: {str(context)[:300]}"):
            continue
        used = sum(tier["used"] for tier in context["tiers"].values())
        check(context["budget"] == budget and context["tokens"] <= budget and used <= budget,
              f"a context of budget {budget} stays within it: {context['tokens']} tokens, tiers use {used}")
    behind = {p["event_id"] for item in answers["context_3000"].get("items", []) for p in item.get("provenance", [])}
    check(s["failing"] in behind, "issue 16 item 4: a 3,000-token context for the named error holds the failing run")
    check(s["fix"] in behind, "issue 16 item 4: ...and the edit that fixed it")

    graph = await swarm.query("coder", "graph", {"entity": FILE, "hops": 2})
    answers["graph"] = graph
    relations = {edge.get("relation") for edge in graph.get("edges", [])}
    check({"reads", "modifies", "fixes"} <= relations, f"the graph of {FILE} has reads, modifies, fixes: {relations}")
    provenance = await swarm.query("planner", "provenance", {"item_id": s["superseding"]})
    answers["provenance"] = provenance
    check(s["superseding"] in json.dumps(provenance), f"provenance names the decision's event: {provenance}")

    phases = await swarm.query("planner", "phase", {})
    answers["phases"] = phases
    findings = await swarm.query("planner", "phase", {"phase_id": s["phase_id"], "level": "findings"})
    answers["findings"] = findings
    check(f"fixed by editing {FILE}" in findings.get("text", ""),
          f"issue 16 item 7: the planner's phase findings hold the coder's failure and fix: {findings.get('text')}")
    text = json.dumps(findings)
    check("redis" not in text or "superseded" in text,
          "issue 16 item 3: phase findings that list the superseded decision mark it")
    of_task = [p for p in phases.get("phases", []) if p.get("task") == TASK]
    check(len(of_task) <= 1, f"issue 16 item 7: one phase for the task, not the planner's and an automatic one: "
                             f"{[p.get('phase_id') for p in of_task]}")
    coder_view = await swarm.query("coder", "phase", {"phase_id": s["phase_id"], "level": "summary"})
    check("error" not in coder_view, f"issue 16 item 7: the coder may read the task's phase: {coder_view}")

    unknown = await swarm.query("coder", "context", {"q": "the search verb's field", "budget": 500})
    check(unknown.get("error", {}).get("field") == "q",
          f"issue 16 item 5: the context verb refuses the unknown field q: {str(unknown)[:200]}")
    unknown = await swarm.query("coder", "search", {"q": "x", "kk": 3})
    check(unknown.get("error", {}).get("field") == "kk",
          f"issue 16 item 5: the search verb refuses the unknown field kk: {str(unknown)[:200]}")
    return answers


async def check_dead_letters(swarm, s):
    deadline = time.monotonic() + 20
    while True:  # memories file dead letters as they reach the records
        _, listing = swarm.get(f"/v1/swarms/{swarm.swarm}/deadletters")
        letters = {letter["seq"]: letter for letter in listing.get("dead_letters", [])}
        if {s["bad_seq"], s["conflict_seq"]} <= set(letters) or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.2)
    bad = letters.get(s["bad_seq"], {})
    check("in_review" in bad.get("reason", "") and "data.status" in bad.get("reason", ""),
          f"the in_review task update is dead-lettered naming data.status: {bad}")
    conflict = letters.get(s["conflict_seq"], {})
    check("conflicting_duplicate" in conflict.get("reason", "") and str(s["early_seq"]) in conflict.get("reason", ""),
          f"issue 16 item 2: the conflicting duplicate is dead-lettered as conflicting_duplicate naming seq "
          f"{s['early_seq']}: {conflict}")
    _, log = swarm.get(f"/v1/swarms/{swarm.swarm}/events?from_seq={s['bad_seq']}&limit=1")
    record = (log.get("events") or [{}])[0]
    check(record.get("seq") == s["bad_seq"] and "invalid" in record and "raw" in record,
          f"the invalid record stays on the log and shows as invalid and raw: {record}")
    found = None
    for seq in range(1, 50):  # the dead-letter stream holds a handful
        try:
            message = await swarm.js.get_msg(f"MNEME_{swarm.swarm}_DEADLETTER", seq)
        except Exception:
            break
        if (message.headers or {}).get("Mneme-Seq") == str(s["bad_seq"]):
            found = message
    check(found is not None and found.headers.get("Mneme-Agent") == "planner" and found.headers.get("Mneme-Reason"),
          "MNEME_<swarm>_DEADLETTER holds the record with Mneme-Reason, Mneme-Seq and Mneme-Agent headers")


def canonical(answers):
    return json.dumps(answers, sort_keys=True, indent=1)


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nats", required=True)
    parser.add_argument("--http", required=True)
    parser.add_argument("--swarm", required=True)
    parser.add_argument("--state", required=True, help="what the full run published (written, or read)")
    parser.add_argument("--answers", required=True, help="where to write the query answers")
    parser.add_argument("--check-only", action="store_true", help="only ask the queries")
    args = parser.parse_args()
    nc = await nats.connect(args.nats)
    swarm = Swarm(nc, args.http.rstrip("/"), args.swarm)
    if args.check_only:
        with open(args.state) as file:
            state = json.load(file)
    else:
        inbox = await nc.subscribe(f"mneme.{args.swarm}.reviewer.handoff")
        state = await publish_the_work(swarm)
        print(f"published {swarm.published} events, last seq {state['last_seq']}", flush=True)
        package = await receive_handoff(inbox, state["handoff"])
        check_handoff(package, state)
        await check_dead_letters(swarm, state)
        await check_durable_handoffs(swarm, state, package)
        # Nothing more is written now (the ack was the last): the queries of
        # both modes wait for this seq and so answer from the same memory.
        state["quiet_seq"] = swarm.get("/healthz")[1]["last_seq"]
        with open(args.state, "w") as file:
            json.dump(state, file)
    answers = await check_queries(swarm, state)
    await check_handoffs_after_ack(swarm, state, answers)
    with open(args.answers, "w") as file:
        file.write(canonical(answers))
    await nc.close()
    if FAILED_CHECKS:
        print(f"{len(FAILED_CHECKS)} check(s) failed (FAIL lines above)", flush=True)
        return 1
    print("every check passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
