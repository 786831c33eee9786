#!/usr/bin/env python3
"""A reviewer agent in Python: it receives its handoff from Mneme over NATS,
asks its memory for context, and acknowledges the handoff, with nats-py and
the Python SDK's types (clients/python, `mneme-client`): the query bodies
are built, and the answers read, as `mneme_client.models`.

Handoffs to `<agent>` are published on `mneme.<swarm>.<agent>.handoff` and
kept in stream `MNEME_<swarm>_HANDOFFS`, so an agent that was down reads
them with a durable consumer when it comes back. Queries are NATS
request/reply on `mneme.<swarm>.<agent>.query.<verb>`, with the bodies and
answers of the HTTP API (schemas/api.schema.json).

    python reviewer.py --nats nats://127.0.0.1:4222 [--swarm demo] [--agent reviewer]

Waits up to --wait seconds for a pending handoff; exits 1 if none came.
"""

import argparse
import asyncio
import json

import nats
from nats.errors import TimeoutError as NatsTimeout

from mneme_client import models


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nats", default="nats://127.0.0.1:4222")
    parser.add_argument("--swarm", default="demo")
    parser.add_argument("--agent", default="reviewer")
    parser.add_argument("--wait", type=float, default=30)
    args = parser.parse_args()

    nc = await nats.connect(args.nats)
    js = nc.jetstream()

    async def query(verb, body, answer_type):
        payload = body.model_dump_json(exclude_none=True, exclude_unset=True).encode()
        reply = await nc.request(f"mneme.{args.swarm}.{args.agent}.query.{verb}", payload, timeout=20)
        answer = json.loads(reply.data)
        if "error" in answer:
            error = models.ErrorBody.model_validate(answer).error
            raise SystemExit(f"{verb}: {error.code}: {error.message}")
        return answer_type.model_validate(answer)

    subscription = await js.pull_subscribe(f"mneme.{args.swarm}.{args.agent}.handoff",
                                           durable=f"{args.agent}-handoffs", stream=f"MNEME_{args.swarm}_HANDOFFS")
    handoff = None
    deadline = asyncio.get_running_loop().time() + args.wait
    while handoff is None and asyncio.get_running_loop().time() < deadline:
        try:
            messages = await subscription.fetch(1, timeout=2)
        except NatsTimeout:
            continue
        for message in messages:
            delivery = models.HandoffDelivery.model_validate_json(message.data)
            await message.ack()
            if delivery.status == "pending":
                handoff = delivery
    if handoff is None:
        print(f"no pending handoff for {args.agent} within {args.wait:.0f} s")
        raise SystemExit(1)

    package = handoff.package
    print(f"handoff {handoff.handoff_id} from {handoff.from_}: {package.task}")
    print(f"  summary: {package.summary}")
    print(f"  constraints: {', '.join(package.constraints)}")
    print(f"  bundle: {len(package.bundle.items)} items of what {handoff.from_} knew")

    context = await query("context", models.ContextBody(query=package.summary, budget=800,
                                                        min_seq=handoff.received_seq), models.ContextAnswer)
    print(f"context: {context.tokens} of {context.budget} tokens, {len(context.items)} items")
    for item in context.items[:3]:
        print(f"  [{item.tier}] {item.text[:90]}")

    acknowledged = await query("ack", models.AcknowledgeQuery(handoff_id=handoff.handoff_id, note="reviewing now"),
                               models.Acknowledged)
    print(f"acknowledged at seq {acknowledged.seq}")
    pending = await query("handoffs", models.HandoffsParams(min_seq=acknowledged.seq), models.HandoffsAnswer)
    still_pending = [h for h in pending.handoffs if h.status == "pending"]
    print(f"pending handoffs left: {len(still_pending)}")
    await nc.drain()


if __name__ == "__main__":
    asyncio.run(main())
