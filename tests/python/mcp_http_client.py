"""An independent client for yiem's streamable HTTP MCP server: the official Python SDK (`mcp>=2.3,<3`).

Against `mcp-test-server --http ADDR --max-body 65536` started with `MCP_TEST_TOKEN=TOKEN`, asserts: no
token and a wrong token are refused with 401; with the token, tools/list, a structured call, a progress
stream, an over-sized request refused with the server's JSON-RPC error; and a long call cancelled by the
client going away (the calling test checks the server's `cancelled` marker afterwards). Exits non-zero on
the first failure.

    python tests/python/mcp_http_client.py URL TOKEN MARKERS_DIR
"""

import sys
import traceback

import anyio

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def check_equal(actual, expected, what):
    if actual != expected:
        raise AssertionError(f"{what}:\n  expected {expected!r}\n  got      {actual!r}")


def describe(error):
    """Every message in an exception and the groups and causes under it."""
    parts = [f"{type(error).__name__}: {error}"]
    for inner in getattr(error, "exceptions", ()):
        parts.append(describe(inner))
    if error.__cause__ is not None:
        parts.append(describe(error.__cause__))
    return " | ".join(parts)


async def callbacks_ran(all_arrived, received, what):
    """The SDK runs each progress callback as a task of its own, so a call's result can come back before
    the callbacks of the notifications sent ahead of it have run: wait for them (at most 30 s)."""
    with anyio.move_on_after(30):
        await all_arrived.wait()
    if not all_arrived.is_set():
        raise AssertionError(f"{what}: only {received!r} arrived within 30 s")


async def session_with(url, token, body):
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    async with create_mcp_http_client(headers=headers) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await body(session)


async def refused(url, token, what):
    async def nothing(_session):
        return None

    try:
        with anyio.fail_after(30):
            await session_with(url, token, nothing)
    except Exception as error:  # noqa: BLE001 - any failure is the refusal; its text is checked
        text = describe(error)
        if "401" not in text and "bearer" not in text.lower():
            raise AssertionError(f"{what}: refused, but not with 401: {text}") from error
        return
    raise AssertionError(f"{what}: the server accepted the session")


async def main(url, token, markers):
    await refused(url, None, "no token")
    await refused(url, "wrong-" + token, "a wrong token")

    async def works(session):
        listed = await session.list_tools()
        names = sorted(tool.name for tool in listed.tools)
        for name in ["add", "count_up", "echo", "slow_job"]:
            if name not in names:
                raise AssertionError(f"tools/list lacks {name}: {names}")
        added = await session.call_tool("add", {"a": 20, "b": 22})
        check_equal(added.structured_content, {"sum": 42}, "add's structured content")
        check_equal(added.is_error, False, "add's isError")

        progress = []
        all_arrived = anyio.Event()

        async def on_progress(value, total, message):
            progress.append((value, message))
            if len(progress) == 3:
                all_arrived.set()

        counted = await session.call_tool("count_up", {"steps": 3}, progress_callback=on_progress)
        check_equal(counted.content[0].text, "counted to 3", "count_up's text")
        await callbacks_ran(all_arrived, progress, "count_up's progress notifications")
        check_equal(
            progress,
            [(1.0, "step 1 of 3"), (2.0, "step 2 of 3"), (3.0, "step 3 of 3")],
            "count_up's progress notifications",
        )

        try:
            await session.call_tool("echo", {"text": "x" * 100_000})
        except Exception as error:  # noqa: BLE001 - the refusal's text is checked
            text = describe(error)
            if "65536" not in text:
                raise AssertionError(f"an over-sized call failed without naming the limit: {text}") from error
        else:
            raise AssertionError("an over-sized call was answered")

        # The session is still usable after the refusal.
        again = await session.call_tool("add", {"a": 1, "b": 2})
        check_equal(again.structured_content, {"sum": 3}, "a call after the over-sized one")

    with anyio.fail_after(60):
        await session_with(url, token, works)

    async def leave_mid_call(session):
        async with anyio.create_task_group() as group:
            group.start_soon(session.call_tool, "slow_job", {"markers": markers, "millis": 600_000})
            with anyio.fail_after(30):
                while not await (anyio.Path(markers) / "started").exists():
                    await anyio.sleep(0.02)
            # Leaving cancels the call's task and closes its HTTP connection.
            group.cancel_scope.cancel()

    with anyio.fail_after(60):
        await session_with(url, token, leave_mid_call)


if __name__ == "__main__":
    try:
        anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3])
    except Exception:  # noqa: BLE001 - report and fail
        traceback.print_exc()
        sys.exit(1)
    print("ok")
