"""Arguments that do not fit a tool's schema: one line naming each argument, the value given
and what is allowed (it was pydantic's report: several lines per argument and a URL). What
is allowed is read from the tool's own input schema, as a client sees it."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from pydantic import BaseModel, Field, ValidationError

from conftest import SAMPLE, settings_for
from helpers import InProcessTools
from labbrain.core import LabBrain
from labbrain.mcp.arguments import VALUE_CHARS, argument_problems


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> Any:
    brain = LabBrain(settings_for(tmp_path_factory.mktemp("arguments") / "store"))
    brain.load(str(SAMPLE))
    yield InProcessTools(brain)
    brain.close()


def schema_of(tools: InProcessTools, tool: str) -> dict[str, Any]:
    """The input schema's properties of ``tool``, as the server lists it."""
    listed = {t.name: t for t in anyio.run(tools.server.list_tools)}
    return dict(listed[tool].input_schema["properties"])


def test_an_out_of_range_number_is_one_line_with_the_bound(tools: InProcessTools) -> None:
    bound = schema_of(tools, "search_nodes")["limit"]["maximum"]
    message = tools.error("search_nodes", query="actin", limit=bound + 1)
    assert message == (
        f"invalid arguments: limit = {bound + 1}: should be less than or equal to {bound}"
    )


def test_every_argument_that_does_not_fit_is_named_once(tools: InProcessTools) -> None:
    modes = schema_of(tools, "search_nodes")["mode"]
    allowed = [m for branch in modes.get("anyOf", [modes]) for m in branch.get("enum", [])]
    message = tools.error("search_nodes", limit=3, mode="weird")
    assert "\n" not in message and "pydantic" not in message
    assert message.startswith("invalid arguments: ")
    parts = message.removeprefix("invalid arguments: ").split("; ")
    assert parts[0] == "query: is required"
    assert parts[1].startswith("mode = 'weird': should be ")
    assert all(f"'{mode}'" in parts[1] for mode in allowed) and len(allowed) == 3


class _Model(BaseModel):
    text: str = Field(max_length=5)


def test_a_long_value_is_cut() -> None:
    with pytest.raises(ValidationError) as caught:
        _Model(text="x" * 500)
    message = argument_problems(caught.value)
    value = message.split(" = ", 1)[1].rsplit(": ", 1)[0]
    assert len(value) == VALUE_CHARS and value.endswith("…")
