#!/usr/bin/env python3
"""A reviewer agent in Python: it receives its handoff from Mneme over NATS,
asks its memory for context, and acknowledges the handoff, with nats-py
alone.

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


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nats", default="nats://127.0.0.1:4222")
    parser.add_argument("--swarm", default="demo")
    parser.add_argument("--agent", default="reviewer")
    parser.add_argument("--wait", type=float, default=30)
    args = parser.parse_args()

    nc = await nats.connect(args.nats)
    js = nc.jetstream()

    async def query(verb, body):
        reply = await nc.request(f"mneme.{args.swarm}.{args.agent}.query.{verb}", json.dumps(body).encode(),
                                 timeout=20)
        answer = json.loads(reply.data)
        if "error" in answer:
            raise SystemExit(f"{verb}: {answer['error']['code']}: {answer['error']['message']}")
        return answer

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
            delivery = json.loads(message.data)
            await message.ack()
            if delivery["status"] == "pending":
                handoff = delivery
    if handoff is None:
        print(f"no pending handoff for {args.agent} within {args.wait:.0f} s")
        raise SystemExit(1)

    package = handoff["package"]
    print(f"handoff {handoff['handoff_id']} from {handoff['from']}: {package['task']}")
    print(f"  summary: {package['summary']}")
    print(f"  constraints: {', '.join(package['constraints'])}")
    print(f"  bundle: {len(package['bundle']['items'])} items of what {handoff['from']} knew")

    context = await query("context", {"query": package["summary"], "budget": 800,
                                      "min_seq": handoff["received_seq"]})
    print(f"context: {context['tokens']} of {context['budget']} tokens, {len(context['items'])} items")
    for item in context["items"][:3]:
        print(f"  [{item['tier']}] {item['text'][:90]}")

    acknowledged = await query("ack", {"handoff_id": handoff["handoff_id"], "note": "reviewing now"})
    print(f"acknowledged at seq {acknowledged['seq']}")
    pending = await query("handoffs", {"min_seq": acknowledged["seq"]})
    still_pending = [h for h in pending["handoffs"] if h["status"] == "pending"]
    print(f"pending handoffs left: {len(still_pending)}")
    await nc.drain()


if __name__ == "__main__":
    asyncio.run(main())
