"""An MCP server written with the official Python SDK (`mcp>=2.3,<3`, whose `MCPServer` is the renamed
FastMCP), for yiem's MCP client tests. Tools: `add` (structured output), `count` (progress), `fail` (an
error result), `wait` (never returns until cancelled; records the cancellation), `crash` (the process dies
mid-call), `pid` (the process's id, to tell restarts apart), `grow` (adds the tool `late` and sends
`notifications/tools/list_changed`), `note` (a warning-level log message with control characters in it),
`ask` (an elicitation whose schema has defaults; returns the content the client sent, as JSON),
`summarize` (asks the client's model, by sampling, to summarize a text), `grow_quietly` (adds `late` and
tells nobody), `lists` (how many `tools/list` requests the server has answered).

With `YIEM_TEST_LIST_TTL_MS` set, its `tools/list` answers say they stay fresh that long (`ttlMs`, SEP-2549).

    python tests/python/mcp_server.py stdio
    python tests/python/mcp_server.py http PORT
"""

import json
import os
import sys
import warnings

import anyio
from pydantic import BaseModel

from mcp import types
from mcp.server.caching import CacheHint
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

# `note` and `ask` use logging and elicitation, which the 2026-07-28 revision deprecates (SEP-2577):
# servers of the earlier revisions still send them.
warnings.filterwarnings("ignore", message=".*deprecated as of 2026-07-28.*")

TTL = os.environ.get("YIEM_TEST_LIST_TTL_MS")
server = MCPServer(
    "python-tools",
    cache_hints={"tools/list": CacheHint(ttl_ms=int(TTL))} if TTL else None,
)
CANCELLED = os.environ.get("YIEM_TEST_CANCELLED_FILE")
LISTS = 0
_list_tools = server.list_tools


async def counted_list_tools():
    global LISTS
    LISTS += 1
    return await _list_tools()


server.list_tools = counted_list_tools


class Sum(BaseModel):
    sum: int


@server.tool(title="Add Numbers")
def add(a: int, b: int) -> Sum:
    """Add two integers."""
    return Sum(sum=a + b)


@server.tool()
async def count(to: int, ctx: Context) -> str:
    """Count up to `to`, reporting progress at each step."""
    for step in range(1, to + 1):
        await ctx.report_progress(step, to, f"step {step} of {to}")
    return f"counted to {to}"


@server.tool()
def fail(reason: str) -> str:
    """Always fails with the given reason."""
    raise ToolError(f"failed on purpose: {reason}")


@server.tool()
async def wait(ctx: Context) -> str:
    """Reports that it waits, then waits until cancelled."""
    await ctx.report_progress(0, None, "waiting")
    try:
        await anyio.sleep_forever()
    except anyio.get_cancelled_exc_class():
        if CANCELLED:
            with open(CANCELLED, "w") as out:
                out.write("cancelled")
        raise
    return "never"


@server.tool()
def crash() -> str:
    """Ends the server's process in the middle of the call."""
    os._exit(3)


@server.tool()
def pid() -> str:
    """The server process's id."""
    return str(os.getpid())


def late() -> str:
    """A tool added while the server runs."""
    return "late, but here"


@server.tool()
async def grow(ctx: Context) -> str:
    """Adds the tool `late` and tells the client that the list changed."""
    server.add_tool(late, name="late")
    await ctx.session.send_tool_list_changed()
    return "added late"


@server.tool()
def grow_quietly() -> str:
    """Adds the tool `late` without telling the client."""
    server.add_tool(late, name="late")
    return "added late quietly"


@server.tool()
def lists() -> str:
    """How many `tools/list` requests the server has answered."""
    return str(LISTS)


@server.tool()
async def note(ctx: Context) -> str:
    """Sends a warning-level log message to the client."""
    await ctx.warning("disk almost full\x1b[31m (92%)", logger_name="python-tools.disk")
    return "noted"


@server.tool()
async def ask(ctx: Context) -> str:
    """Asks the user for a name and an age (30 unless given); returns what the client sent."""
    result = await ctx.request_context.session.elicit_form(
        "Who are you?",
        {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "age": {"type": "integer", "default": 30},
            },
            "required": ["name"],
        },
        related_request_id=ctx.request_id,
    )
    return json.dumps({"action": result.action, "content": result.content}, sort_keys=True)


@server.tool()
async def summarize(text: str, ctx: Context) -> str:
    """Asks the client's model to summarize `text`; returns the model's name and answer."""
    result = await ctx.request_context.session.create_message(
        messages=[types.SamplingMessage(role="user", content=types.TextContent(type="text", text=text))],
        max_tokens=50,
        system_prompt="Summarize in five words.",
        related_request_id=ctx.request_id,
    )
    return f"{result.model}: {result.content.text}"


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]), stateless_http=True)
    else:
        server.run("stdio")
