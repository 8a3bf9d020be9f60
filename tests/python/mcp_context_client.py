"""The official Python SDK (`mcp>=2.3,<3`) reads resources, gets prompts and completes arguments of
yiem's MCP server (`mcp-context-server`) over stdio, and checks each answer and each error exactly:
an unknown URI, a URI the template matches with a value its argument refuses, a failing read, a read over
the size bound, an unknown prompt, missing and unknown arguments, and the updates of a subscribed resource
and the prompts' list_changed. Exits non-zero on the first failure.

    python tests/python/mcp_context_client.py target/debug/mcp-context-server
"""

import sys
import traceback

import anyio

import mcp.types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def check_equal(actual, expected, what):
    if actual != expected:
        raise AssertionError(f"{what}:\n  expected {expected!r}\n  got      {actual!r}")


async def check_error(call, code, says, what):
    try:
        result = await call
    except MCPError as error:
        check_equal(error.error.code, code, f"{what}: the error code")
        if says not in error.error.message:
            raise AssertionError(f"{what}: {error.error.message!r} does not say {says!r}")
        return error.error
    raise AssertionError(f"{what}: expected error {code}, got {result!r}")


async def main(server):
    notifications = []
    heard = anyio.Event()

    async def on_message(message):
        if isinstance(message, types.ServerNotification) or hasattr(message, "method"):
            method = getattr(message, "method", None) or getattr(getattr(message, "root", None), "method", None)
            notifications.append(method)
            heard.set()

    params = StdioServerParameters(command=server, args=[])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, message_handler=on_message) as session:
            init = await session.initialize()
            caps = dump(init.capabilities)
            check_equal(caps.get("resources"), {"subscribe": True, "listChanged": True}, "resources capability")
            check_equal(caps.get("prompts"), {"listChanged": True}, "prompts capability")
            check_equal(caps.get("completions"), {}, "completions capability")

            listed = await session.list_resources()
            check_equal(
                [(r.uri.__str__(), r.name, r.mime_type) for r in listed.resources],
                [
                    ("notes://broken", "broken", None),
                    ("notes://huge", "huge", None),
                    ("notes://logo", "logo", "image/png"),
                    ("notes://readme", "readme", "text/markdown"),
                ],
                "resources/list",
            )
            check_equal(listed.resources[3].description, "The notes' front page.", "a resource's description")
            templates = await session.list_resource_templates()
            check_equal(
                [(t.uri_template, t.name, t.description) for t in templates.resource_templates],
                [("notes://notes/{id}", "note", "One note, by its number.")],
                "resources/templates/list",
            )

            text = await session.read_resource("notes://readme")
            check_equal(
                [dump(c) for c in text.contents],
                [{"uri": "notes://readme", "mimeType": "text/markdown", "text": "# Notes\n"}],
                "a text resource",
            )
            blob = await session.read_resource("notes://logo")
            check_equal(
                [dump(c) for c in blob.contents],
                [{"uri": "notes://logo", "mimeType": "image/png", "blob": "iVBORw=="}],
                "a binary resource",
            )
            note = await session.read_resource("notes://notes/42")
            check_equal(
                [dump(c) for c in note.contents],
                [{"uri": "notes://notes/42", "mimeType": "text/plain", "text": "note 42"}],
                "a template's resource",
            )

            error = await check_error(
                session.read_resource("notes://nothing"), -32002, "no resource at `notes://nothing`", "an unknown URI"
            )
            check_equal(error.data, {"uri": "notes://nothing"}, "an unknown URI's data")
            await check_error(
                session.read_resource("notes://notes/forty-two"),
                -32602,
                "gives the parameter `id` the value `forty-two`",
                "a URI whose parameter the argument refuses",
            )
            await check_error(
                session.read_resource("notes://notes/1/2"), -32002, "no resource at", "a URI the template does not match"
            )
            await check_error(
                session.read_resource("notes://broken"), -32603, "the disk is on fire", "a failing read"
            )
            await check_error(
                session.read_resource("notes://huge"),
                -32603,
                "is 4096 bytes, over this server's limit of 1024 bytes",
                "a read over the bound",
            )

            prompts = await session.list_prompts()
            check_equal(
                [dump(p) for p in prompts.prompts],
                [
                    {
                        "name": "greet",
                        "description": "Greet someone by name.",
                        "arguments": [{"name": "name", "description": "Who to greet.", "required": True}],
                    },
                    {
                        "name": "review",
                        "title": "Code review",
                        "description": "Review a piece of code.",
                        "arguments": [
                            {"name": "code", "description": "The code to review.", "required": True},
                            {"name": "language", "description": "Its language.", "required": True},
                            {"name": "limit", "description": "How many findings at most.", "required": False},
                        ],
                    },
                ],
                "prompts/list",
            )
            got = await session.get_prompt("review", {"code": "fn main() {}", "language": "rust", "limit": "2"})
            check_equal(
                [dump(m) for m in got.messages],
                [
                    {"role": "user", "content": {"type": "text", "text": "Review this Rust:\nfn main() {}"}},
                    {"role": "assistant", "content": {"type": "text", "text": "At most 2 findings."}},
                ],
                "prompts/get",
            )
            check_equal(got.description, "Review a piece of code.", "prompts/get's description")
            await check_error(session.get_prompt("nope"), -32602, "no prompt named `nope`", "an unknown prompt")
            await check_error(
                session.get_prompt("review", {"code": "x"}), -32602, "needs the argument `language`", "a missing argument"
            )
            await check_error(
                session.get_prompt("review", {"code": "x", "language": "rust", "colour": "red"}),
                -32602,
                "has no argument `colour`",
                "an unknown argument",
            )
            await check_error(
                session.get_prompt("review", {"code": "x", "language": "cobol"}),
                -32602,
                "unknown variant `cobol`",
                "an argument that fails its schema",
            )

            completed = await session.complete(
                types.PromptReference(type="ref/prompt", name="review"),
                {"name": "language", "value": "r"},
            )
            check_equal(dump(completed.completion), {"values": ["rust", "ruby"], "total": 2, "hasMore": False}, "an enum's completions")
            completed = await session.complete(
                types.PromptReference(type="ref/prompt", name="greet"), {"name": "name", "value": "a"}
            )
            check_equal(completed.completion.values, ["Ada", "Alan"], "a function's completions")
            completed = await session.complete(
                types.ResourceTemplateReference(type="ref/resource", uri="notes://notes/{id}"),
                {"name": "id", "value": ""},
            )
            check_equal(
                (len(completed.completion.values), completed.completion.total, completed.completion.has_more),
                (100, 120, True),
                "a template's completions, bounded at 100",
            )
            await check_error(
                session.complete(types.PromptReference(type="ref/prompt", name="nope"), {"name": "x", "value": ""}),
                -32602,
                "no prompt named `nope`",
                "completing an unknown prompt",
            )

            await session.subscribe_resource("notes://readme")
            await session.call_tool("touch_readme", {})
            with anyio.fail_after(30):
                while True:
                    heard = anyio.Event()  # made before looking, so a notification in between sets it
                    if "notifications/resources/updated" in notifications:
                        break
                    await heard.wait()
            await session.call_tool("add_farewell", {})
            with anyio.fail_after(30):
                while True:
                    heard = anyio.Event()  # made before looking, so a notification in between sets it
                    if "notifications/prompts/list_changed" in notifications:
                        break
                    await heard.wait()
            prompts = await session.list_prompts()
            check_equal([p.name for p in prompts.prompts], ["greet", "review", "farewell"], "prompts after a change")
            await session.unsubscribe_resource("notes://readme")
    print("ok")


if __name__ == "__main__":
    try:
        anyio.run(main, sys.argv[1])
    except Exception:
        traceback.print_exc()
        sys.exit(1)
