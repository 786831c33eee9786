"""The JetStream publisher against the nats-server `mneme serve` reads its
log from: subjects and `Nats-Msg-Id` right, a repeat stored once, a bad
record dead-lettered with its reason."""

from __future__ import annotations

import asyncio

import nats

from mneme_client import Mneme, events, models
from mneme_client.nats import NatsPublisher, subject_of


def test_events_published_to_jetstream_are_remembered(url: str, nats_url: str, swarm: str, agent: str) -> None:
    async def publish() -> tuple[list[int], int, int]:
        nc = await nats.connect(nats_url)
        try:
            publisher = NatsPublisher(nc)
            work = [
                events.build(swarm, agent, models.MessageRecorded(role="user", text="the nightly backup job stalls at 3am")),
                events.build(
                    swarm,
                    agent,
                    models.ToolResultRecorded(tool="bash", args={"cmd": "journalctl -u backup"}, output="backup: lock held by pid 4242", exit_code=0),
                ),
            ]
            seqs = await publisher.publish_all(work)
            repeat = await publisher.publish(work[1])
            bad = {**events.to_json(events.build(swarm, agent, models.MessageRecorded(role="user", text="x"))), "data": {"role": "user"}}
            bad_seq = await publisher.publish(bad)
            return seqs, repeat, bad_seq
        finally:
            await nc.drain()

    seqs, repeat, bad_seq = asyncio.run(publish())
    assert seqs[0] < seqs[1] and repeat == seqs[1], "JetStream stored the repeat once (Nats-Msg-Id)"
    with Mneme(url, swarm=swarm, agent=agent) as mneme:
        hits = mneme.search("backup lock held", min_seq=bad_seq).hits
        assert hits and "pid 4242" in hits[0].text
        dead = [letter for letter in mneme.dead_letters().dead_letters if letter.seq == bad_seq]
        assert dead and "text" in dead[0].reason


def test_the_subject_names_swarm_agent_and_kind() -> None:
    event = events.to_json(events.build("demo", "coder", models.TaskUpdated(task_id="t-1", status="done")))
    assert subject_of(event) == "mneme.demo.coder.events.task_updated"
