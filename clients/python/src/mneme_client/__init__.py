"""A typed client of Mneme, the memory of multi-agent LLM swarms.

- `Mneme` and `AsyncMneme`: every operation of the HTTP API, answering
  the contract's types (`mneme_client.models`, generated from Mneme's
  JSON Schemas), errors as `MnemeError`.
- `events`: events built from their payloads, ids and times filled in.
- `mneme_client.nats.NatsPublisher`: publishing straight to JetStream
  (extra `nats`).
- `mneme_client.langchain`: a recorder of LangChain and LangGraph runs, a
  retriever and context for prompts (extra `langchain`).
"""

from . import events, models
from .client import DEFAULT_URL, AsyncMneme, Mneme
from .errors import BadRequest, Conflict, MnemeError, NotFound, TooManyRequests, Unauthorized, Unavailable

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_URL",
    "AsyncMneme",
    "BadRequest",
    "Conflict",
    "Mneme",
    "MnemeError",
    "NotFound",
    "TooManyRequests",
    "Unauthorized",
    "Unavailable",
    "events",
    "models",
]
