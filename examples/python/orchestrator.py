#!/usr/bin/env python3
"""A small orchestrator in Python that publishes a swarm's work straight to
NATS JetStream with the Python SDK (clients/python, `mneme-client`): its
event builders fill in ids and times and check each event against the
contract; its publisher picks the subject and sets `Nats-Msg-Id`.

A planner opens a task and decides; a coder reads a file, runs the tests
(they fail, then pass) and hands the task to the reviewer. Every event goes
to `mneme.<swarm>.<agent>.events.<kind>`, with its id as `Nats-Msg-Id` so
that a retried publish is stored once. Mneme (`mneme serve --nats URL`)
turns the handoff into a package for the reviewer: see reviewer.py.

    python orchestrator.py --nats nats://127.0.0.1:4222 [--swarm demo]

Needs the SDK with its NATS extra (`pip install 'mneme-client[nats]'`, or
clients/python in a checkout). Prints the handoff's id.
"""

import argparse
import asyncio

import nats

from mneme_client import events, models
from mneme_client.nats import NatsPublisher


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nats", default="nats://127.0.0.1:4222")
    parser.add_argument("--swarm", default="demo")
    args = parser.parse_args()

    nc = await nats.connect(args.nats)
    publisher = NatsPublisher(nc)
    task = "task-rate-limit"
    planner = events.Builder(args.swarm, "planner", scope="shared", correlation_id=task)
    coder = events.Builder(args.swarm, "coder", scope="shared", correlation_id=task)

    async def publish(event, agent):
        seq = await publisher.publish(event)
        print(f"seq {seq:>3}  {agent:<8} {event.root.kind}", flush=True)
        return event.root

    await publish(planner.build(models.TaskUpdated(task_id=task, status="in_progress",
                                                   title="Rate-limit the login endpoint")), "planner")
    decision = await publish(planner.build(models.DecisionMade(
        title="where to count login attempts", choice="a token bucket per client IP in redis",
        rationale="the API runs on three replicas"), importance=0.8), "planner")
    await publish(coder.build(models.ToolResultRecorded(
        tool="read_file", args={"path": "src/api/login.rs"}, output="pub async fn login(..) {..}", exit_code=0)), "coder")
    await publish(coder.build(models.ToolResultRecorded(
        tool="bash", args={"cmd": "cargo test --test login"}, exit_code=101,
        output="test too_many_attempts_are_refused ... FAILED\nassertion failed: status == 429")), "coder")
    await publish(coder.build(models.ToolResultRecorded(
        tool="edit_file", args={"path": "src/api/login.rs"}, output="added the bucket check", exit_code=0)), "coder")
    await publish(coder.build(models.ToolResultRecorded(
        tool="bash", args={"cmd": "cargo test --test login"}, exit_code=0,
        output="test too_many_attempts_are_refused ... ok\ntest result: ok. 1 passed")), "coder")
    handoff = await publish(coder.build(models.HandoffSent(
        to="reviewer", task=task, summary="login is rate-limited per client IP; tests pass, please review",
        artifacts=["src/api/login.rs"], decisions=[decision.id],
        constraints=["keep the limit configurable"])), "coder")
    await nc.drain()
    print(f"handoff {handoff.id}")


if __name__ == "__main__":
    asyncio.run(main())
