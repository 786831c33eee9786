#!/usr/bin/env python3
"""A small orchestrator in Python that publishes a swarm's work straight to
NATS JetStream, with nothing of Mneme's but its subjects and event schema
(schemas/events.schema.json).

A planner opens a task and decides; a coder reads a file, runs the tests
(they fail, then pass) and hands the task to the reviewer. Every event goes
to `mneme.<swarm>.<agent>.events.<kind>`, with its id as `Nats-Msg-Id` so
that a retried publish is stored once. Mneme (`mneme serve --nats URL`)
turns the handoff into a package for the reviewer: see reviewer.py.

    python orchestrator.py --nats nats://127.0.0.1:4222 [--swarm demo]

Needs nats-py (`pip install nats-py`). Prints the handoff's id.
"""

import argparse
import asyncio
import json
import os
import time

import nats

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def ulid():
    """An event id: 48 bits of milliseconds, 80 random bits, Crockford base32."""
    value = (int(time.time() * 1000) << 80) | int.from_bytes(os.urandom(10), "big")
    return "".join(CROCKFORD[(value >> shift) & 31] for shift in range(125, -5, -5))


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nats", default="nats://127.0.0.1:4222")
    parser.add_argument("--swarm", default="demo")
    args = parser.parse_args()

    nc = await nats.connect(args.nats)
    js = nc.jetstream()

    async def publish(agent, kind, data, **envelope):
        event = {"id": ulid(), "swarm": args.swarm, "agent": agent, "kind": kind,
                 "ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "data": data,
                 "scope": "shared", "correlation_id": "task-rate-limit", **envelope}
        ack = await js.publish(f"mneme.{args.swarm}.{agent}.events.{kind}", json.dumps(event).encode(),
                               headers={"Nats-Msg-Id": event["id"]})
        print(f"seq {ack.seq:>3}  {agent:<8} {kind}", flush=True)
        return event

    await publish("planner", "task_updated", {"task_id": "task-rate-limit", "status": "in_progress",
                                              "title": "Rate-limit the login endpoint"})
    decision = await publish("planner", "decision_made", {
        "title": "where to count login attempts", "choice": "a token bucket per client IP in redis",
        "rationale": "the API runs on three replicas"}, importance=0.8)
    await publish("coder", "tool_result_recorded", {
        "tool": "read_file", "args": {"path": "src/api/login.rs"}, "output": "pub async fn login(..) {..}",
        "exit_code": 0})
    await publish("coder", "tool_result_recorded", {
        "tool": "bash", "args": {"cmd": "cargo test --test login"}, "exit_code": 101,
        "output": "test too_many_attempts_are_refused ... FAILED\nassertion failed: status == 429"})
    await publish("coder", "tool_result_recorded", {
        "tool": "edit_file", "args": {"path": "src/api/login.rs"}, "output": "added the bucket check", "exit_code": 0})
    await publish("coder", "tool_result_recorded", {
        "tool": "bash", "args": {"cmd": "cargo test --test login"}, "exit_code": 0,
        "output": "test too_many_attempts_are_refused ... ok\ntest result: ok. 1 passed"})
    handoff = await publish("coder", "handoff_sent", {
        "to": "reviewer", "task": "task-rate-limit",
        "summary": "login is rate-limited per client IP; tests pass, please review",
        "artifacts": ["src/api/login.rs"], "decisions": [decision["id"]],
        "constraints": ["keep the limit configurable"]})
    await nc.drain()
    print(f"handoff {handoff['id']}")


if __name__ == "__main__":
    asyncio.run(main())
