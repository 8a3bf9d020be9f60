"""A 2026-07-28 client of yiem's MCP server that drives `input_required` rounds by hand: the official Python
SDK (`mcp>=2.3,<3`), its high-level `Client` pinned to 2026-07-28, its session's requests with
`allow_input_required=True`, so that a test can answer in any order, leave questions out, answer with
values outside a form, or send back a changed `requestState`.

    python tests/python/mcp_rounds_client.py SPEC stdio SERVER [ARGS...]
    python tests/python/mcp_rounds_client.py SPEC http URL

SPEC is JSON: {"steps": [STEP, ...]}, each STEP {"tool": NAME} or {"prompt": NAME}, with
"responses": {KEY: RESULT, ...} (sent as `inputResponses`, in the order written) and "state": "keep"
(echo the last `requestState`, the default), "tamper" (echo it with one character changed) or "none", and
"declare": the capabilities the client declares (default: elicitation, sampling and roots). Prints one JSON object per step, in a list:
{"input_required": {KEY: METHOD, ...}, "state": bool}, {"result": RESULT} or {"error": {"code", "message"}}.
"""

import json
import sys

import anyio

import mcp.types as types
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError


async def never(_context, _params):
    raise RuntimeError("the test answers by hand")


async def roots(_context):
    return types.ListRootsResult(roots=[])


def tampered(state):
    # One character of the signed body changed, the length kept.
    middle = len(state) // 2
    return state[:middle] + ("A" if state[middle] != "A" else "B") + state[middle + 1 :]


async def run(spec, transport, target, extra):
    server = StdioServerParameters(command=target, args=extra) if transport == "stdio" else target
    seen = []
    state = None
    declared = spec.get("declare", ["elicitation", "sampling", "roots"])
    callbacks = {}
    if "elicitation" in declared:
        callbacks["elicitation_callback"] = never
    if "sampling" in declared:
        callbacks["sampling_callback"] = never
    if "roots" in declared:
        callbacks["list_roots_callback"] = roots
    async with Client(server, mode="2026-07-28", **callbacks) as client:
        for step in spec["steps"]:
            how = step.get("state", "keep")
            sent_state = None
            if how == "keep":
                sent_state = state
            elif how == "tamper":
                sent_state = tampered(state)
            responses = step.get("responses")
            try:
                if "tool" in step:
                    result = await client.session.call_tool(
                        step["tool"],
                        {},
                        input_responses=responses,
                        request_state=sent_state,
                        allow_input_required=True,
                    )
                else:
                    result = await client.session.get_prompt(
                        step["prompt"],
                        {},
                        input_responses=responses,
                        request_state=sent_state,
                        allow_input_required=True,
                    )
            except MCPError as error:
                seen.append({"error": {"code": error.error.code, "message": error.error.message}})
                continue
            dumped = result.model_dump(mode="json", by_alias=True, exclude_none=True)
            if dumped.get("resultType") == "input_required":
                state = dumped.get("requestState")
                seen.append(
                    {
                        "input_required": {
                            key: request["method"]
                            for key, request in (dumped.get("inputRequests") or {}).items()
                        },
                        "state": state is not None,
                    }
                )
            else:
                seen.append({"result": dumped})
    return seen


def main():
    spec = json.loads(sys.argv[1])
    transport, target, extra = sys.argv[2], sys.argv[3], sys.argv[4:]

    async def with_limit():
        with anyio.fail_after(60):
            return await run(spec, transport, target, extra)

    print(json.dumps(anyio.run(with_limit)))


if __name__ == "__main__":
    main()
