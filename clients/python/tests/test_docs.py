"""The quick starts of the README and of the book's chapter run as written,
against the test's server."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
QUICK_STARTS = [ROOT / "README.md", ROOT / "docs" / "src" / "python.md"]


def _quick_start(path: Path) -> str:
    blocks = re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)
    runnable = [block for block in blocks if block.startswith("from mneme_client import Mneme")]
    assert runnable, f"{path} has no quick start"
    return runnable[0]


@pytest.mark.parametrize("path", QUICK_STARTS, ids=lambda path: path.name)
def test_the_quick_start_runs(path: Path, url: str, swarm: str, agent: str) -> None:
    # The test's server, swarm and an agent of its own.
    code = _quick_start(path).replace("http://127.0.0.1:7700", url).replace('"demo"', repr(swarm))
    code = code.replace('"coder"', repr(agent))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, str(path), "exec"), {})
    assert "1 failed: test_token_refresh" in printed.getvalue()
