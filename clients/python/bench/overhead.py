"""What the SDK costs over a bare httpx client, against a running `mneme
serve`: publishes in batches of 100 (throughput), then, once all is
applied, searches one after another (latency), alternating the two
clients in rounds so that a noisy machine weighs on both alike. Prints JSON: each side's figures and the
SDK's over the bare one's. The SDK's side includes what it does that the
bare one does not: checking the parameters and parsing each answer into
the contract's models.

    python overhead.py --url http://127.0.0.1:7700 [--swarm demo] [--searches 2000] [--batches 20] [--rounds 5]

scripts/bench-sdks.sh starts the server and runs this and the TypeScript twin.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time

import httpx

from mneme_client import Mneme, events, models

QUESTION = "login rate limit 429"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:7700")
    parser.add_argument("--swarm", default="demo")
    parser.add_argument("--searches", type=int, default=2000)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    agent = f"bench-py-{os.getpid()}"
    searches_per_round = -(-args.searches // args.rounds)
    batches_per_round = -(-args.batches // args.rounds)

    def batch(size: int) -> list[models.Event]:
        return [
            events.build(
                args.swarm,
                agent,
                models.ToolResultRecorded(
                    tool="bash",
                    args={"cmd": f"cargo test login_{index}"},
                    output=f"test login_{index} ... FAILED: expected 429 after {index % 7} attempts",
                    exit_code=101,
                ),
            )
            for index in range(size)
        ]

    sides = {name: {"search_ms": [], "publish_s": 0.0, "published": 0} for name in ("bare", "sdk")}
    search_path = f"{args.url}/v1/swarms/{args.swarm}/agents/{agent}/search"
    with Mneme(args.url, swarm=args.swarm, agent=agent) as mneme, httpx.Client(timeout=30) as bare:
        # Publishing first: batches of 100, the two clients in turn.
        bare_seq = 0
        for round_ in range(args.rounds):
            for name in ("bare", "sdk") if round_ % 2 == 0 else ("sdk", "bare"):
                side = sides[name]
                batches = [[events.to_json(event) for event in batch(100)] for _ in range(batches_per_round)]
                start = time.perf_counter()
                for body in batches:
                    if name == "bare":
                        response = bare.post(f"{args.url}/v1/events", json=body)
                        response.raise_for_status()
                        bare_seq = max([bare_seq] + [accepted["seq"] for accepted in response.json()["accepted"]])
                    else:
                        mneme.publish(body)
                side["publish_s"] += time.perf_counter() - start
                side["published"] += 100 * len(batches)
        # Then searching a memory that no longer changes: everything
        # published is applied first (this search waits for it), so the
        # SDK's read-your-writes `min_seq` waits for nothing.
        mneme.search(QUESTION, min_seq=max(bare_seq, mneme.written_seq() or 0))
        for round_ in range(args.rounds):
            for name in ("bare", "sdk") if round_ % 2 == 0 else ("sdk", "bare"):
                side = sides[name]
                for _ in range(searches_per_round):
                    start = time.perf_counter()
                    if name == "bare":
                        response = bare.get(search_path, params={"q": QUESTION, "k": 10})
                        response.raise_for_status()
                        response.json()
                    else:
                        mneme.search(QUESTION, k=10)
                    side["search_ms"].append((time.perf_counter() - start) * 1000)

    def summary(side: dict) -> dict:
        ordered = sorted(side["search_ms"])
        return {
            "searches": len(ordered),
            "search_p50_ms": statistics.median(ordered),
            "search_p99_ms": ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))],
            "publish_events_per_s": side["published"] / side["publish_s"],
        }

    report = {name: summary(side) for name, side in sides.items()}
    print(
        json.dumps(
            {
                "client": "python",
                "python": platform.python_version(),
                **report,
                "sdk_over_bare": {
                    "search_p50": report["sdk"]["search_p50_ms"] / report["bare"]["search_p50_ms"],
                    "search_p99": report["sdk"]["search_p99_ms"] / report["bare"]["search_p99_ms"],
                    "publish_rate": report["sdk"]["publish_events_per_s"] / report["bare"]["publish_events_per_s"],
                },
            }
        )
    )


if __name__ == "__main__":
    main()
