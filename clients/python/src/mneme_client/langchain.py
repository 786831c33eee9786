"""LangChain and LangGraph: record what an agent does, and give it memory
back (needs the `langchain` extra: `pip install mneme-client[langchain]`).

- `MnemeRecorder`, a callback handler: the user's and the model's messages,
  every tool call with its arguments, output, exit status and duration, and
  errors become events under the agent's name. In a LangGraph graph,
  `agents` maps nodes to agents (what runs in a node is recorded under its
  agent), and a move from one agent's node to another's is recorded as a
  handoff between them.
- `MnemeRetriever`, a LangChain retriever over an agent's memory.
- `context_message` and `context_node`: budgeted context as a system
  message, for a prompt or a LangGraph node.

    recorder = MnemeRecorder(mneme, swarm="demo", agent="coder", scope="shared")
    agent.invoke({"messages": [...]}, config={"callbacks": [recorder]})
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.outputs import LLMResult
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict

from . import events, models
from .client import Mneme

log = logging.getLogger("mneme_client.langchain")

#: The metadata key LangGraph puts the running node's name under.
NODE_KEY = "langgraph_node"


def _text(content: Any) -> str:
    """A message's text: its string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [part if isinstance(part, str) else part.get("text", "") for part in content if isinstance(part, (str, dict))]
        return "\n".join(part for part in parts if part)
    return str(content)


class MnemeRecorder(BaseCallbackHandler):
    """Records a LangChain or LangGraph run as Mneme events.

    `agent`: who the events are by, where no node mapping says otherwise.
    `agents`: LangGraph node → agent name. `scope`: the events' scope
    (`private`, `shared`, …; the agent's default from swarm.toml if None).
    `correlation_id`: groups the run's events (default: `run-<root run id>`).
    `record_system`: record system prompts too (once each).
    Publishing failures are logged and do not stop the agent unless
    `raise_error=True`; `failures` counts them.
    """

    def __init__(
        self,
        client: Mneme,
        *,
        swarm: str | None = None,
        agent: str | None = None,
        agents: dict[str, str] | None = None,
        scope: str | None = None,
        correlation_id: str | None = None,
        record_system: bool = False,
        raise_error: bool = False,
    ) -> None:
        super().__init__()
        self.client = client
        chosen_swarm, chosen_agent = swarm or client.swarm, agent or client.agent
        if not chosen_swarm or not chosen_agent:
            raise ValueError("MnemeRecorder needs a swarm and an agent (here or on the client)")
        self.swarm: str = chosen_swarm
        self.agent: str = chosen_agent
        self.agents = dict(agents or {})
        self.scope = scope
        self.correlation_id = correlation_id
        self.record_system = record_system
        self.raise_error = raise_error
        self.failures = 0
        #: Every event this recorder published, in order.
        self.published: list[models.Event] = []
        self._seen: set[tuple[str, str, int]] = set()
        self._tools: dict[UUID, tuple[str, Any, float]] = {}
        self._runs: dict[UUID, UUID] = {}
        self._run_agents: dict[UUID, str] = {}
        self._last_said: dict[str, str] = {}
        self._current_agent: str | None = None

    # -- where an event goes -------------------------------------------------

    def _root(self, run_id: UUID, parent_run_id: UUID | None) -> UUID:
        root = self._runs.get(parent_run_id, parent_run_id) if parent_run_id else run_id
        self._runs[run_id] = root
        return root

    def _start(self, run_id: UUID, parent_run_id: UUID | None, metadata: dict[str, Any] | None) -> tuple[UUID, str]:
        """A run's root and agent: a mapped node's agent, else its parent
        run's (a node's model calls and tools, and a graph inside a node,
        are its agent's), else the recorder's."""
        root = self._root(run_id, parent_run_id)
        node = (metadata or {}).get(NODE_KEY)
        if node in self.agents:
            agent = self.agents[node]
        elif parent_run_id is not None and parent_run_id in self._run_agents:
            agent = self._run_agents[parent_run_id]
        else:
            agent = self.agent
        self._run_agents[run_id] = agent
        return root, agent

    def _agent_of_run(self, run_id: UUID) -> str:
        return self._run_agents.get(run_id, self.agent)

    def _correlation(self, root: UUID) -> str:
        return self.correlation_id or f"run-{root}"

    def _publish(self, agent: str, root: UUID, payload: Any) -> None:
        event = events.build(self.swarm, agent, payload, scope=self.scope, correlation_id=self._correlation(root))
        try:
            self.client.publish(event)
            self.published.append(event)
        except Exception:
            self.failures += 1
            log.warning("could not record a %s event", events.kind_of(payload), exc_info=True)
            if self.raise_error:
                raise

    def _enter(self, agent: str, root: UUID) -> None:
        """Records a handoff when the work moves from one agent to another."""
        before, self._current_agent = self._current_agent, agent
        if before is None or before == agent:
            return
        summary = self._last_said.get(before, "")
        handoff = models.HandoffSent(to=agent, task=self._correlation(root), summary=summary[:2000])
        self._publish(before, root, handoff)

    # -- LangChain's callbacks ----------------------------------------------

    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        root, agent = self._start(run_id, parent_run_id, metadata)
        if (metadata or {}).get(NODE_KEY) in self.agents:
            self._enter(agent, root)

    def on_chat_model_start(
        self,
        serialized: dict[str, Any] | None,
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        root, agent = self._start(run_id, parent_run_id, metadata)
        conversation = messages[0] if messages else []
        # What the model answers now: the messages after its last answer.
        last_answer = max((index for index, message in enumerate(conversation) if message.type == "ai"), default=-1)
        for position, message in enumerate(conversation):
            role = {"human": "user", "system": "system"}.get(message.type)
            if role is None or (role == "system" and not self.record_system):
                continue
            if role == "user" and position < last_answer:
                continue
            text = _text(message.content)
            # A retried call, or the same system prompt again, is recorded once.
            key = (role, text, position if role == "user" else 0)
            if not text or key in self._seen:
                continue
            self._seen.add(key)
            self._publish(agent, root, models.MessageRecorded(role=role, text=text))

    def on_llm_end(
        self, response: LLMResult, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        root = self._root(run_id, parent_run_id)
        agent = self._agent_of_run(run_id)
        for generations in response.generations:
            for generation in generations:
                message = getattr(generation, "message", None)
                text = _text(message.content) if isinstance(message, AIMessage) else generation.text
                if text:
                    self._last_said[agent] = text
                    self._publish(agent, root, models.MessageRecorded(role="assistant", text=text))

    def on_llm_error(self, error: BaseException, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        root = self._root(run_id, parent_run_id)
        text = f"the model failed: {type(error).__name__}: {error}"
        self._publish(self._agent_of_run(run_id), root, models.MessageRecorded(role="error", text=text))

    def on_tool_start(
        self,
        serialized: dict[str, Any] | None,
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self._start(run_id, parent_run_id, metadata)
        name = (serialized or {}).get("name") or kwargs.get("name") or "tool"
        args: Any = inputs if inputs is not None else input_str
        self._tools[run_id] = (name, args, time.monotonic())

    def on_tool_end(self, output: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        self._tool_done(run_id, parent_run_id, _text(getattr(output, "content", output)), 0)

    def on_tool_error(
        self, error: BaseException, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        self._tool_done(run_id, parent_run_id, f"{type(error).__name__}: {error}", 1)

    def _tool_done(self, run_id: UUID, parent_run_id: UUID | None, output: str, exit_code: int) -> None:
        root = self._root(run_id, parent_run_id)
        name, args, started = self._tools.pop(run_id, ("tool", {}, time.monotonic()))
        duration_ms = int((time.monotonic() - started) * 1000)
        payload = models.ToolResultRecorded(tool=name, args=args, output=output, exit_code=exit_code, duration_ms=duration_ms)
        self._publish(self._agent_of_run(run_id), root, payload)


class MnemeRetriever(BaseRetriever):
    """An agent's memory as a LangChain retriever: hybrid search's hits as
    documents (`page_content` the hit's text; its id, kind, score, seq, time
    and provenance in `metadata`)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    client: Any
    swarm: str | None = None
    agent: str | None = None
    k: int = 10
    search: dict[str, Any] = {}

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        answer = self.client.search(query, swarm=self.swarm, agent=self.agent, k=self.k, **self.search)
        return [
            Document(
                page_content=hit.text,
                metadata={
                    "item_id": hit.item_id,
                    "kind": hit.kind,
                    "score": hit.score,
                    "seq": hit.seq,
                    "ts": hit.ts.isoformat(),
                    "agent": hit.agent,
                    "superseded_by": hit.superseded_by,
                    "provenance": [ref.model_dump(mode="json") for ref in hit.provenance],
                },
                id=hit.item_id,
            )
            for hit in answer.hits
        ]


def context_message(
    client: Mneme, query: str, *, swarm: str | None = None, agent: str | None = None, budget: int | None = None, **body: Any
) -> SystemMessage:
    """The agent's budgeted context for `query` as a system message."""
    answer = client.context(query, swarm=swarm, agent=agent, budget=budget, **body)
    return SystemMessage(content=answer.text)


def _last_human_text(messages: Sequence[BaseMessage]) -> str:
    for message in reversed(messages):
        if message.type == "human":
            return _text(message.content)
    return ""


def context_node(
    client: Mneme,
    *,
    swarm: str | None = None,
    agent: str | None = None,
    budget: int | None = None,
    query: Callable[[dict[str, Any]], str] | None = None,
) -> Callable[[dict[str, Any]], dict[str, list[BaseMessage]]]:
    """A LangGraph node that adds the agent's context, for the last user
    message (or `query(state)`), to a `messages` state as a system message."""

    def node(state: dict[str, Any]) -> dict[str, list[BaseMessage]]:
        text = query(state) if query else _last_human_text(state.get("messages", []))
        return {"messages": [context_message(client, text, swarm=swarm, agent=agent, budget=budget)]}

    return node
