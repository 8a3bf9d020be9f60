"""Checks request bodies against the official Python SDKs' request types for a streamed call, named by
the first argument: `responses` (the default; `openai`'s `ResponseCreateParamsStreaming`), `chat`
(`openai`'s `CompletionCreateParamsStreaming`) or `anthropic` (`anthropic`'s
`MessageCreateParamsStreaming`), with pydantic, refusing keys the SDK does not know at any depth; or
`gemini-function`: Gemini function declarations against `google-genai`'s `FunctionDeclaration`, whose
models (its `Schema` among them) refuse unknown fields at any depth.

Reads a JSON array of request bodies on standard input; prints `ok N` when every body fits, else each
problem (the body's index, the path, pydantic's message) and exits 1.
"""

import json
import sys

from pydantic import TypeAdapter, ValidationError
from pydantic_core import SchemaValidator


def request_type(kind):
    """The SDK's type for `kind`, importing only that SDK (each import takes a while)."""
    if kind == "chat":
        from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming

        return CompletionCreateParamsStreaming
    if kind == "anthropic":
        from anthropic.types.message_create_params import MessageCreateParamsStreaming

        return MessageCreateParamsStreaming
    from openai.types.responses.response_create_params import ResponseCreateParamsStreaming

    return ResponseCreateParamsStreaming


def tightened(node):
    """The SDK's schema with unknown keys refused in every TypedDict, and its `Iterable` fields checked
    as lists (pydantic checks an `Iterable`'s items only when someone iterates it)."""
    if isinstance(node, dict):
        node = {key: tightened(value) for key, value in node.items()}
        if node.get("type") == "typed-dict":
            node["extra_behavior"] = "forbid"
        if node.get("type") == "generator":
            node["type"] = "list"
        return node
    if isinstance(node, list):
        return [tightened(value) for value in node]
    return node


kind = sys.argv[1] if len(sys.argv) > 1 else "responses"
if kind == "gemini-function":
    from google.genai.types import FunctionDeclaration

    # Not strict: the SDK's `Type` enum takes the REST API's lowercase names too.
    validate = FunctionDeclaration.model_validate
else:
    adapter = SchemaValidator(tightened(TypeAdapter(request_type(kind)).core_schema))

    def validate(body):
        adapter.validate_python(body, strict=True)


bodies = json.load(sys.stdin)
failed = 0
for index, body in enumerate(bodies):
    try:
        validate(body)
    except ValidationError as error:
        failed += 1
        # A union that fails lists every branch: the first lines say enough.
        for problem in error.errors()[:12]:
            path = ".".join(str(part) for part in problem["loc"])
            print(f"body {index}: {path}: {problem['msg']}")
if failed:
    sys.exit(1)
print(f"ok {len(bodies)}")
