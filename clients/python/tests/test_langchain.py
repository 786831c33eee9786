"""The LangChain recorder, retriever and context, driven by LangChain's fake
chat models through a real tool-calling loop and a LangGraph graph (no
network, no LLM): what lands on the log, and that search finds it."""

from __future__ import annotations

import time
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from mneme_client import Mneme, events, models
from mneme_client.langchain import MnemeRecorder, MnemeRetriever, context_node


@tool
def run_tests(path: str) -> str:
    """Runs the tests in `path`."""
    return f"{path}: 3 passed, 0 failed (token refresh, expiry, revocation)"


@tool
def read_file(path: str) -> str:
    """Reads a file."""
    raise FileNotFoundError(f"no such file: {path}")


def _logged(mneme: Mneme, agent: str) -> list[models.Event]:
    page = mneme.events(agent=agent, limit=1000)
    return [event for event in (events.event_of(entry) for entry in page.events) if event is not None]


def test_a_tool_calling_loop_is_recorded_and_found(mneme: Mneme, agent: str) -> None:
    model = FakeMessagesListChatModel(
        responses=[
            AIMessage(content="", tool_calls=[{"name": "run_tests", "args": {"path": "tests/test_token.py"}, "id": "call-1"}]),
            AIMessage(content="", tool_calls=[{"name": "read_file", "args": {"path": "src/gone.py"}, "id": "call-2"}]),
            AIMessage(content="The token tests pass; src/gone.py does not exist any more."),
        ]
    )
    recorder = MnemeRecorder(mneme, scope="shared", correlation_id="task-token", raise_error=True)
    config = {"callbacks": [recorder]}
    messages: list[Any] = [HumanMessage(content="Do the token refresh tests pass?")]
    while True:
        answer = model.invoke(messages, config=config)
        messages.append(answer)
        if not answer.tool_calls:
            break
        for call in answer.tool_calls:
            chosen = {"run_tests": run_tests, "read_file": read_file}[call["name"]]
            try:
                messages.append(chosen.invoke(call, config=config))
            except FileNotFoundError as error:
                messages.append(ToolMessage(content=str(error), tool_call_id=call["id"], status="error"))

    logged = _logged(mneme, mneme.agent)
    kinds = [event.root.kind for event in logged]
    assert kinds == ["message_recorded", "tool_result_recorded", "tool_result_recorded", "message_recorded"], kinds
    user, passed, failed, said = (event.root for event in logged)
    assert (user.data.role, user.data.text) == ("user", "Do the token refresh tests pass?")
    assert passed.data.tool == "run_tests" and passed.data.args == {"path": "tests/test_token.py"}
    assert passed.data.exit_code == 0 and "3 passed" in passed.data.output and passed.data.duration_ms is not None
    assert failed.data.tool == "read_file" and failed.data.exit_code == 1 and "no such file" in failed.data.output
    assert said.data.role == "assistant" and "tests pass" in said.data.text
    assert {event.root.correlation_id for event in logged} == {"task-token"}
    assert {str(event.root.scope.value if hasattr(event.root.scope, "value") else event.root.scope) for event in logged} == {"shared"}
    assert recorder.failures == 0 and len(recorder.published) == 4

    hits = mneme.search("token refresh expiry revocation passed", k=3).hits
    assert hits and hits[0].kind == "tool_result_recorded" and "3 passed" in hits[0].text

    documents = MnemeRetriever(client=mneme, k=3).invoke("token refresh expiry revocation passed")
    assert [document.metadata["item_id"] for document in documents] == [hit.item_id for hit in hits]
    assert documents[0].page_content == hits[0].text and documents[0].metadata["kind"] == "tool_result_recorded"


def test_a_langgraph_agent_and_a_handoff_between_nodes(mneme: Mneme, agent: str) -> None:
    planner, coder = f"{agent}-planner", f"{agent}-coder"
    plan = FakeMessagesListChatModel(responses=[AIMessage(content="Plan: make the cache key include the tenant id.")])
    code = FakeMessagesListChatModel(
        responses=[
            AIMessage(content="", tool_calls=[{"name": "run_tests", "args": {"path": "tests/test_cache.py"}, "id": "call-9"}]),
            AIMessage(content="Done: the cache key includes the tenant id and the tests pass."),
        ]
    )
    # The coder is a graph of its own: its model, and a tool node it loops through.
    coder_graph = StateGraph(MessagesState)
    coder_graph.add_node("model", lambda state: {"messages": [code.invoke(state["messages"])]})
    coder_graph.add_node("tools", ToolNode([run_tests]))
    coder_graph.add_edge(START, "model")
    coder_graph.add_conditional_edges("model", tools_condition)
    coder_graph.add_edge("tools", "model")
    coding_agent = coder_graph.compile()

    def plan_node(state: MessagesState) -> dict[str, Any]:
        return {"messages": [plan.invoke(state["messages"])]}

    def code_node(state: MessagesState) -> dict[str, Any]:
        return {"messages": coding_agent.invoke({"messages": state["messages"]})["messages"][len(state["messages"]):]}

    graph = StateGraph(MessagesState)
    graph.add_node("planner", plan_node)
    graph.add_node("coder", code_node)
    graph.add_edge(START, "planner")
    graph.add_edge("planner", "coder")
    graph.add_edge("coder", END)
    recorder = MnemeRecorder(mneme, agents={"planner": planner, "coder": coder}, scope="shared", raise_error=True)
    graph.compile().invoke({"messages": [HumanMessage(content="Tenants see each other's cached pages")]}, config={"callbacks": [recorder]})

    by_planner = [event.root for event in _logged(mneme, planner)]
    by_coder = [event.root for event in _logged(mneme, coder)]
    assert [event.kind for event in by_planner] == ["message_recorded", "message_recorded", "handoff_sent"], by_planner
    handoff = by_planner[-1]
    assert handoff.data.to == coder and "tenant id" in handoff.data.summary
    # The coder's own events (the handoff router adds its `handoff_received`).
    recorded = [event for event in by_coder if event.kind != "handoff_received"]
    assert [event.kind for event in recorded] == ["tool_result_recorded", "message_recorded"], recorded
    assert recorded[0].data.args == {"path": "tests/test_cache.py"} and "tests pass" in recorded[1].data.text

    # The handoff router delivers it to the coder's memory.
    deadline = time.monotonic() + 20
    while not (received := mneme.handoffs(agent=coder).handoffs) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert [delivery.from_ for delivery in received] == [planner]


def test_context_goes_into_a_prompt(mneme: Mneme) -> None:
    mneme.publish(
        events.build(
            mneme.swarm,
            mneme.agent,
            models.DecisionMade(title="session storage", choice="sessions live in redis with a 30 minute TTL", rationale="shared by replicas"),
            scope="private",
        )
    )
    node = context_node(mneme, budget=500)
    update = node({"messages": [HumanMessage(content="where do sessions live?")]})
    (message,) = update["messages"]
    assert isinstance(message, SystemMessage) and "redis" in message.content


@pytest.mark.parametrize("bad", [{"agent": None}])
def test_a_recorder_needs_an_agent(url: str, swarm: str, bad: dict[str, Any]) -> None:
    with Mneme(url, swarm=swarm) as client, pytest.raises(ValueError, match="agent"):
        MnemeRecorder(client, **bad)
