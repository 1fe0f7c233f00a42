"""What labbrain relies on in the MCP SDK to put its tools on a server
(:func:`labbrain.mcp.common.sdk_tool`), checked one by one so that an SDK upgrade that
changes it fails here, naming the SDK version and what is gone, rather than somewhere deep in
a tool call: ``Tool.from_function``, the server's ``tools`` parameter, and the
``FuncMetadata`` fields ``output_schema`` (listed) and ``output_model`` (read at each call;
None: the answer is not validated again)."""

from __future__ import annotations

import asyncio
import inspect
import re
from importlib.metadata import version
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp_types import CallToolResult
from pydantic import BaseModel, field_validator

import labbrain
from labbrain.core import LabBrain
from labbrain.mcp.common import ToolContext, ToolSpec, sdk_tool
from labbrain.settings import Settings

SDK = f"mcp {version('mcp')}"
HOW = "labbrain.mcp.common.sdk_tool relies on it; see its docstring"


class Declared(BaseModel):
    name: str

    @field_validator("name")
    @classmethod
    def _refused(cls, value: str) -> str:
        """Any validation is a second one: the tool made its answer without it."""
        raise ValueError(f"{value!r} was validated again")


def unvalidated(context: ToolContext) -> Declared:
    """Answers a ``Declared`` made without validation, which any validation refuses."""
    del context
    return Declared.model_construct(name="x")


def test_the_sdk_still_offers_what_tool_registration_uses() -> None:
    parameters = inspect.signature(MCPServer.__init__).parameters
    assert "tools" in parameters, f"{SDK}: MCPServer(...) takes no `tools` any more; {HOW}"
    assert callable(getattr(Tool, "from_function", None)), (
        f"{SDK}: mcp.server.mcpserver.tools.Tool has no `from_function` any more; {HOW}"
    )
    tool_fields = Tool.model_fields
    assert "fn_metadata" in tool_fields, f"{SDK}: Tool has no `fn_metadata` field; {HOW}"
    for name in ("output_schema", "output_model"):
        assert name in FuncMetadata.model_fields, (
            f"{SDK}: FuncMetadata has no `{name}` field any more; {HOW}"
        )


def test_a_tool_keeps_its_output_schema_and_is_not_validated_again() -> None:
    """The schema is listed; an answer the tool vouches for is passed on as it is (the SDK
    would refuse this one, whose model refuses every validation)."""
    with LabBrain(Settings(store=":memory:")) as brain:
        tool = sdk_tool(ToolSpec(unvalidated, "Unvalidated"), ToolContext.open(brain))
        assert tool.fn_metadata.output_model is None, (
            f"{SDK}: FuncMetadata.output_model cannot be set to None; {HOW}"
        )
        schema = tool.fn_metadata.output_schema
        assert schema is not None and schema.get("properties", {}).keys() == {"name"}, (
            f"{SDK}: a tool answering Annotated[CallToolResult, Model] lists no output "
            f"schema of Model (got {schema!r}); {HOW}"
        )
        server: MCPServer[Any] = MCPServer(name="t", tools=[tool])
        listed = asyncio.run(server.list_tools())
        assert [t.name for t in listed] == ["unvalidated"], f"{SDK}: `tools` were not served"
        assert listed[0].output_schema == schema
        refused = (
            f"{SDK}: the answer was validated although FuncMetadata.output_model is None "
            f"(the SDK no longer reads the field at each call); {HOW}"
        )
        try:
            answer = asyncio.run(server.call_tool("unvalidated", {}))
        except Exception as error:
            raise AssertionError(refused) from error
    assert isinstance(answer, CallToolResult) and not answer.is_error, refused
    assert answer.structured_content == {"name": "x"}


def test_the_private_sdk_names_labbrain_still_uses_are_there() -> None:
    """Private names with no public way round them in this SDK, each used in one place:
    request handlers added on the low-level server (``resources/subscribe``,
    ``subscriptions/listen``, ``logging/setLevel``) and the hook a ``resources/list`` passes."""
    server: MCPServer[Any] = MCPServer(name="t")
    lowlevel = getattr(server, "_lowlevel_server", None)
    assert lowlevel is not None, (
        f"{SDK}: MCPServer has no `_lowlevel_server` any more; labbrain.mcp.announce "
        "(Announcer.attach) and labbrain.mcp.logs (ClientLog.attach) add handlers on it"
    )
    for name in ("add_request_handler", "create_initialization_options"):
        assert callable(getattr(lowlevel, name, None)), (
            f"{SDK}: the low-level server has no `{name}` any more; labbrain.mcp.announce "
            "and labbrain.mcp.logs use it"
        )
    assert callable(getattr(MCPServer, "_handle_list_resources", None)), (
        f"{SDK}: MCPServer has no `_handle_list_resources` any more; "
        "labbrain.mcp.server.LabbrainServer overrides it"
    )


#: The SDK's private names labbrain may use, and where (see the test above); no other.
ALLOWED_PRIVATE = {
    "_lowlevel_server": {"mcp/announce.py", "mcp/logs.py"},
    "_handle_list_resources": {"mcp/server.py"},
}


def test_no_other_private_name_of_the_sdk_server_is_used() -> None:
    package = Path(labbrain.__file__).parent
    server: MCPServer[Any] = MCPServer(name="t")
    names = [*vars(server), *dir(MCPServer)]
    private = {name for name in names if name.startswith("_") and not name.startswith("__")}
    used: dict[str, set[str]] = {}
    for path in package.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for name in private:
            if re.search(rf"\b{re.escape(name)}\b", text):
                used.setdefault(name, set()).add(path.relative_to(package).as_posix())
    extra = {
        name: sorted(where - ALLOWED_PRIVATE.get(name, set()))
        for name, where in used.items()
        if where - ALLOWED_PRIVATE.get(name, set())
    }
    assert not extra, f"private names of {SDK}'s MCPServer used outside their one place: {extra}"
