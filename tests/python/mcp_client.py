"""A second, independent MCP client for yiem's MCP server: the official Python SDK (`mcp>=2.3,<3`).

Runs the server binary given as the first argument over stdio and asserts exact responses for initialize,
tools/list, a call, a structured (Json<T>) call, bad arguments, an unknown tool, a hook that blocks a call,
progress, and `notifications/tools/list_changed` when a call adds a tool. Exits non-zero on the first failure.

    python tests/python/mcp_client.py target/debug/mcp-test-server
"""

import asyncio
import sys
import tempfile
import traceback

import mcp.types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError


def dump(model):
    """A pydantic model as it was on the wire (camelCase keys, unset fields left out)."""
    return model.model_dump(mode="json", by_alias=True, exclude_unset=True)


def check_equal(actual, expected, what):
    if actual != expected:
        raise AssertionError(f"{what}:\n  expected {expected!r}\n  got      {actual!r}")


async def initialize(session, result):
    check_equal(result.server_info.name, "yiem-test", "server name")
    check_equal(result.server_info.version, "0.0.1", "server version")
    check_equal(dump(result.capabilities), {"logging": {}, "tools": {"listChanged": True}}, "capabilities")


async def list_tools(session, _):
    listed = await session.list_tools()
    check_equal(
        [tool.name for tool in listed.tools],
        ["add", "count_up", "echo", "exclusive_step", "forbidden", "learn", "list_tools", "media", "pixel",
         "slow_job"],
        "tool names, sorted",
    )
    add = next(tool for tool in listed.tools if tool.name == "add")
    check_equal(
        dump(add),
        {
            "name": "add",
            "title": "Add",
            "description": "Add two integers.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "a": {"type": "integer", "format": "int64", "description": "The first addend."},
                    "b": {"type": "integer", "format": "int64", "description": "The second addend."},
                },
                "required": ["a", "b"],
            },
            "outputSchema": {
                "type": "object",
                "properties": {"sum": {"type": "integer", "format": "int64", "description": "`a + b`."}},
                "required": ["sum"],
            },
            "annotations": {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False},
        },
        "the `add` entry",
    )
    echo = next(tool for tool in listed.tools if tool.name == "echo")
    check_equal(echo.title, "Echo Text", "the label is the title")


async def call_text(session, _):
    result = await session.call_tool("echo", {"text": "grüß dich"})
    check_equal(
        dump(result),
        {"content": [{"type": "text", "text": "grüß dich"}], "isError": False},
        "echo result",
    )


async def call_structured(session, _):
    result = await session.call_tool("add", {"a": 2, "b": 40})
    check_equal(result.structured_content, {"sum": 42}, "structured content")
    check_equal(result.is_error, False, "isError")
    check_equal([block.text for block in result.content], ['{"sum":42}'], "JSON text block")


async def bad_arguments(session, _):
    result = await session.call_tool("add", {"a": "two", "b": 3})
    check_equal(result.is_error, True, "isError")
    check_equal(
        [block.text for block in result.content],
        [
            'invalid arguments for tool `add`: at `/a`: expected an integer, got the string "two"\n'
            "valid properties: `a`, `b`"
        ],
        "the model-facing text",
    )


async def unknown_tool(session, _):
    try:
        await session.call_tool("ad", {"a": 1, "b": 2})
    except MCPError as error:
        check_equal(error.code, -32602, "error code")
        check_equal(
            error.message,
            "tool `ad` not found. Did you mean `add`? Available tools: add, count_up, echo, exclusive_step, "
            "forbidden, learn, list_tools, media, pixel, slow_job",
            "error message",
        )
    else:
        raise AssertionError("calling an unknown tool did not raise MCPError")


async def media(session, _):
    result = await session.call_tool("media", {})
    check_equal(
        [block.type for block in result.content],
        ["text", "audio", "resource", "resource", "resource_link"],
        "block types",
    )
    audio, text_file, pdf, link = result.content[1:]
    check_equal((audio.data, audio.mime_type), ("UklGRg==", "audio/wav"), "audio")
    check_equal((str(text_file.resource.uri), text_file.resource.text), ("file:///notes/today.md", "# Today"), "text resource")
    check_equal((pdf.resource.mime_type, pdf.resource.blob), ("application/pdf", "JVBERg=="), "blob resource")
    check_equal((str(link.uri), link.name), ("file:///notes/yesterday.md", "yesterday.md"), "resource link")


async def hooks(session, _):
    result = await session.call_tool("forbidden", {})
    check_equal(result.is_error, True, "isError")
    check_equal(
        [block.text for block in result.content],
        ["`forbidden` is refused by the server's policy"],
        "the hook's reason",
    )


async def progress(session, _):
    received = []
    all_arrived = asyncio.Event()

    async def on_progress(progress, total, message):
        received.append((progress, total, message))
        if len(received) == 3:
            all_arrived.set()

    result = await session.call_tool("count_up", {"steps": 3}, progress_callback=on_progress)
    check_equal([block.text for block in result.content], ["counted to 3"], "count_up result")
    # The SDK runs each progress callback as a task of its own, so the result can come back before the
    # callbacks of the notifications sent ahead of it have run: wait for them (at most 30 s).
    try:
        await asyncio.wait_for(all_arrived.wait(), 30)
    except TimeoutError:
        raise AssertionError(f"progress notifications: only {received!r} arrived within 30 s") from None
    check_equal(
        received,
        [(1.0, None, "step 1 of 3"), (2.0, None, "step 2 of 3"), (3.0, None, "step 3 of 3")],
        "progress notifications",
    )


# Set by the session's message handler when the server sends `notifications/tools/list_changed`.
TOOLS_CHANGED = asyncio.Event()


async def on_message(message):
    if isinstance(message, mcp.types.ToolListChangedNotification):
        TOOLS_CHANGED.set()


async def list_changed(session, _):
    check_equal(TOOLS_CHANGED.is_set(), False, "no list_changed before a change")
    result = await session.call_tool("learn", {})
    check_equal([block.text for block in result.content], ["learned `greet`"], "learn result")
    await asyncio.wait_for(TOOLS_CHANGED.wait(), timeout=60)
    listed = await session.list_tools()
    check_equal("greet" in [tool.name for tool in listed.tools], True, "`greet` listed after the change")
    greeted = await session.call_tool("greet", {"name": "Ada"})
    check_equal([block.text for block in greeted.content], ["hello, Ada"], "greet result")


CHECKS = [list_tools, call_text, call_structured, media, bad_arguments, unknown_tool, hooks, progress, list_changed]


async def main(server):
    params = StdioServerParameters(command=server)
    passed, failed = 0, 0
    # The server logs to stderr; keep its log and show it only when something failed.
    server_log = tempfile.TemporaryFile(mode="w+")
    async with stdio_client(params, errlog=server_log) as (read, write):
        async with ClientSession(read, write, message_handler=on_message) as session:
            initialized = await session.initialize()
            for check in [initialize, *CHECKS]:
                try:
                    await check(session, initialized)
                except Exception:
                    failed += 1
                    print(f"FAILED {check.__name__}", file=sys.stderr)
                    traceback.print_exc()
                else:
                    passed += 1
                    print(f"ok {check.__name__}")
    if failed:
        server_log.seek(0)
        print("--- the server's log (stderr):", file=sys.stderr)
        print(server_log.read(), file=sys.stderr)
    print(f"python-mcp: {passed} passed, {failed} failed")
    return failed == 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: mcp_client.py SERVER_BINARY")
    sys.exit(0 if asyncio.run(main(sys.argv[1])) else 1)
