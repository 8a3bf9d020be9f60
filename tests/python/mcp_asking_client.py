"""A client of yiem's MCP server that answers its questions: the official Python SDK (`mcp>=2.3,<3`).

Connects to `mcp-asking-server` (over stdio, or over streamable HTTP at a URL), optionally with an
elicitation callback that answers every question the same way, optionally sets the log level, makes the
calls it is given, and prints what it saw as one JSON object on stdout: the tools listed, each question
asked (message and schema), each call's result (isError and text) and each log message. The calling
test asserts on that.

    python tests/python/mcp_asking_client.py SPEC stdio SERVER [ARGS...]
    python tests/python/mcp_asking_client.py SPEC http URL

SPEC is JSON: {"answer": null | {"action": "accept", "content": {...}} | {"action": "decline"} | ...,
"log_level": null | "debug", "calls": [[NAME, ARGUMENTS], ...], "revision": null | "2026-07-28",
"sample": null | {"text": ..., "model": ...} | {"refuse": REASON}, "fit_each_form": null | true}; with
"fit_each_form" an accepted answer is cut to each question's fields; without "sample" the client declares no
sampling capability. With
a revision the client is the SDK's high-level `Client` pinned to it; without, a `ClientSession` that
starts with `initialize`. Without an answer the client declares
no elicitation capability.
"""

import json
import sys

import anyio

import mcp.types as types
from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError


async def run(spec, transport, target, extra):
    seen = {"questions": [], "results": [], "logs": [], "tools": [], "samples": []}
    callbacks = {}
    if spec.get("answer") is not None:
        answer = spec["answer"]

        async def elicit(_context, params):
            seen["questions"].append(
                {"message": params.message, "schema": params.requested_schema}
            )
            if answer["action"] == "hang":
                await anyio.sleep_forever()
            content = answer.get("content")
            if content is not None and spec.get("fit_each_form"):
                # One answer for several forms: each gets only its own fields.
                fields = (params.requested_schema or {}).get("properties", {})
                content = {name: value for name, value in content.items() if name in fields}
            return types.ElicitResult(action=answer["action"], content=content)

        callbacks["elicitation_callback"] = elicit

    if spec.get("sample") is not None:
        sample = spec["sample"]

        async def create_message(_context, params):
            seen["samples"].append(
                {
                    "messages": [
                        {"role": m.role, "text": m.content.text} for m in params.messages
                    ],
                    "maxTokens": params.max_tokens,
                }
            )
            if "refuse" in sample:
                return types.ErrorData(code=-1, message=sample["refuse"])
            return types.CreateMessageResult(
                role="assistant",
                content=types.TextContent(type="text", text=sample["text"]),
                model=sample["model"],
                stop_reason="endTurn",
            )

        callbacks["sampling_callback"] = create_message

    async def on_log(params):
        seen["logs"].append(
            {"level": params.level, "logger": params.logger, "data": params.data}
        )

    callbacks["logging_callback"] = on_log

    async def session_body(read, write):
        async with ClientSession(read, write, **callbacks) as session:
            await session.initialize()
            if spec.get("log_level"):
                await session.set_logging_level(spec["log_level"])
            listed = await session.list_tools()
            seen["tools"] = [
                tool.model_dump(mode="json", by_alias=True, exclude_none=True)
                for tool in listed.tools
            ]
            for name, arguments in spec["calls"]:
                result = await session.call_tool(name, arguments)
                text = "".join(
                    block.text for block in result.content if block.type == "text"
                )
                seen["results"].append({"isError": result.is_error, "text": text})
            # One more round trip: every notification sent before it has been handled.
            await session.list_tools()

    if spec.get("revision") == "2026-07-28":
        # The high-level client, pinned to the 2026-07-28 revision: no session, no requests from the
        # server; questions come back as `input_required` and the client calls again with the answers.
        server = StdioServerParameters(command=target, args=extra) if transport == "stdio" else target
        options = {"mode": "2026-07-28"}
        if spec.get("log_level"):
            options["log_level"] = spec["log_level"]
        async with Client(server, **callbacks, **options) as client:
            if spec.get("listen"):
                # Subscribes to the tool list's changes, makes the calls, and waits for one change.
                async with client.listen(tools_list_changed=True) as subscription:
                    seen["honored"] = subscription.honored.model_dump(
                        mode="json", by_alias=True, exclude_none=True
                    )
                    for name, arguments in spec["calls"]:
                        await client.call_tool(name, arguments)
                    async for event in subscription:
                        seen["events"] = [type(event).__name__]
                        break
                listed = await client.list_tools()
                seen["tools"] = [tool.name for tool in listed.tools]
                return seen
            listed = await client.list_tools()
            seen["tools"] = [
                tool.model_dump(mode="json", by_alias=True, exclude_none=True)
                for tool in listed.tools
            ]
            for name, arguments in spec["calls"]:
                try:
                    result = await client.call_tool(name, arguments)
                except MCPError as error:
                    seen["results"].append(
                        {"error": {"code": error.error.code, "message": error.error.message}}
                    )
                    continue
                text = "".join(
                    block.text for block in result.content if block.type == "text"
                )
                seen["results"].append({"isError": result.is_error, "text": text})
        return seen

    if transport == "stdio":
        params = StdioServerParameters(command=target, args=extra)
        async with stdio_client(params) as (read, write):
            await session_body(read, write)
    else:
        async with streamable_http_client(target) as (read, write):
            await session_body(read, write)
    return seen


def main():
    spec = json.loads(sys.argv[1])
    transport, target, extra = sys.argv[2], sys.argv[3], sys.argv[4:]

    async def with_limit():
        with anyio.fail_after(60):
            return await run(spec, transport, target, extra)

    seen = anyio.run(with_limit)
    print(json.dumps(seen))


if __name__ == "__main__":
    main()
