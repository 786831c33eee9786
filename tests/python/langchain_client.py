"""Loads Mneme's MCP tools with LangChain's MCP adapters
(langchain-mcp-adapters 0.3.2), as a LangChain or LangGraph agent would, over
streamable HTTP (`/mcp?agent=coder` on `mneme serve`) and over stdio (`mneme
mcp --agent coder` relaying to the same server through MNEME_SERVER), and
checks what an agent's model would be handed:

- `memory_search` answers the hits as text a model reads, a superseded hit
  marked;
- `memory_context` answers the context text itself, within its budget;
- a refused call (an unknown item, a value out of range) comes back as a
  tool error: with `handle_tool_error` set, LangChain hands the model the
  error's text, which names the field, instead of ending the run (a JSON-RPC
  error would raise past `handle_tool_error`).

tests/mcp_langchain.rs starts `mneme serve` with the example trajectory
published and runs:

    langchain_client.py --mneme PATH_TO_mneme --server http://127.0.0.1:PORT

It prints one line per check passed and exits 0; on a failure it prints what
came back and exits 1.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import Any

from langchain_mcp_adapters.client import MultiServerMCPClient


def text_of(answer: Any) -> str:
    """What a tool's call gives the model, as text."""
    if isinstance(answer, str):
        return answer
    if isinstance(answer, (list, tuple)):
        return "".join(text_of(part) for part in answer)
    if isinstance(answer, dict):
        return str(answer.get("text", ""))
    return str(getattr(answer, "text", answer))


def check(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


async def run(transport: str, client: MultiServerMCPClient) -> None:
    tools = {tool.name: tool for tool in await client.get_tools(server_name=transport)}
    check(len(tools) == 15, f"{transport}: {len(tools)} tools: {sorted(tools)}")
    print(f"{transport}: {len(tools)} tools loaded")

    hits = text_of(await tools["memory_search"].ainvoke({"query": "TokenExpiredError", "limit": 5}))
    check(hits.startswith("5 hits"), f"{transport}: memory_search answered {hits[:300]!r}")
    check("[superseded by " in hits, f"{transport}: no superseded hit marked in {hits!r}")
    check('"item_id"' not in hits, f"{transport}: memory_search handed the model JSON: {hits[:300]!r}")
    print(f"{transport}: memory_search gives the model {len(hits)} characters of hits, the retracted fact marked")

    context = text_of(
        await tools["memory_context"].ainvoke({"query": "why does token refresh fail", "budget_tokens": 2000})
    )
    check(context.startswith("# Memory of coder"), f"{transport}: memory_context answered {context[:300]!r}")
    # 2,000 cl100k tokens are about 8,000 characters of this text; the
    # whole typed answer (what a host passed before) is over 25,000.
    check(len(context) < 10_000, f"{transport}: memory_context handed the model {len(context)} characters")
    print(f"{transport}: memory_context gives the model the context text, {len(context)} characters")

    for name, arguments, field in [
        ("memory_recall", {"item_id": "01KE0000000000000000000000"}, "item_id"),
        ("memory_search", {"query": "x", "limit": 5000}, "limit"),
    ]:
        tool = tools[name]
        tool.handle_tool_error = True
        answer = text_of(await tool.ainvoke(arguments))
        check(answer.startswith(f"{field}: "), f"{transport}: {name}({arguments}) handed the model {answer!r}")
        print(f"{transport}: {name} refused as a tool error the model reads: {answer}")


async def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mneme", required=True)
    parser.add_argument("--server", required=True)
    args = parser.parse_args()
    environment = dict(os.environ, MNEME_SERVER=args.server, MNEME_LOG="warn")
    client = MultiServerMCPClient(
        {
            "http": {"transport": "streamable_http", "url": f"{args.server}/mcp?agent=coder"},
            "stdio": {
                "transport": "stdio",
                "command": args.mneme,
                "args": ["mcp", "--agent", "coder"],
                "env": environment,
            },
        }
    )
    try:
        for transport in ("http", "stdio"):
            await run(transport, client)
    except AssertionError as error:
        print(f"FAILED: {error}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
