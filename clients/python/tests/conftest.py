"""The SDK's tests run against a real `mneme serve` (and nats-server for the
JetStream publisher), which tests/python_sdk.rs starts and names here:

- MNEME_URL: the server's HTTP address;
- MNEME_NATS_URL: the nats-server its log is on;
- MNEME_SWARM: the swarm (agents are admitted by name).

Without them every test fails: nothing here is mocked but the retry
tests' transport, which stands for a failing network.
"""

from __future__ import annotations

import os
import uuid

import pytest

from mneme_client import Mneme


def _required(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"{name} is not set: tests/python_sdk.rs starts the servers and sets it", pytrace=False)
    return value


@pytest.fixture(scope="session")
def url() -> str:
    return _required("MNEME_URL")


@pytest.fixture(scope="session")
def nats_url() -> str:
    return _required("MNEME_NATS_URL")


@pytest.fixture(scope="session")
def swarm() -> str:
    return _required("MNEME_SWARM")


@pytest.fixture
def agent() -> str:
    """An agent of its own per test, so that tests do not see each other's private memories."""
    return f"sdk-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def mneme(url: str, swarm: str, agent: str):
    with Mneme(url, swarm=swarm, agent=agent) as client:
        yield client
