"""An MCP server with OAuth, written with the official Python SDK (`mcp>=2.3,<3`): one process is both the
authorization server (the SDK's `/authorize`, `/token`, `/register` and metadata routes over the
in-memory provider below) and the protected resource (`/mcp`, which requires the scopes `mcp:read` and
`mcp:write`), for yiem's OAuth tests.

The provider approves every authorization at once (the browser step needs no person). The first
authorization grants `mcp:read` only, as a person who approved part of a request would, so the client's
first request is refused with 403 `insufficient_scope` and must step up; later authorizations grant what
was asked. Tools: `whoami` (the token's scopes), `expire` (every access token issued so far stops being
accepted, so the next request is refused with 401 and the client must refresh), `stats` (authorizations,
refreshes and token requests so far).

`YIEM_TEST_OAUTH_FAULT` makes it misbehave:
  hang-token         the token endpoint never answers
  garbage-token      the token endpoint answers 200 with HTML
  refresh-fails      refreshing fails with a server error, every time
  foreign-metadata   the protected resource names an authorization server at a cloud metadata host
  javascript-authorize  the authorization server's metadata names a `javascript:` authorization endpoint
Every code and token it issues is appended to the file `YIEM_TEST_OAUTH_TOKENS`, so a test can look for them in
logs, and each authorization, code exchange and refresh as a line (`authorize SCOPES`, `token`, `refresh`)
to `YIEM_TEST_OAUTH_EVENTS`.

    python tests/python/mcp_oauth_server.py PORT
"""

import os
import secrets
import sys
import time

import anyio
import uvicorn
from starlette.responses import HTMLResponse

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

PORT = int(sys.argv[1])
BASE = f"http://127.0.0.1:{PORT}"
FAULT = os.environ.get("YIEM_TEST_OAUTH_FAULT", "")
TOKENS = os.environ.get("YIEM_TEST_OAUTH_TOKENS")
EVENTS = os.environ.get("YIEM_TEST_OAUTH_EVENTS")
SCOPES = ["mcp:read", "mcp:write"]


def event(line: str) -> None:
    if EVENTS:
        with open(EVENTS, "a") as file:
            file.write(line + "\n")


def issued(token: str) -> str:
    if TOKENS:
        with open(TOKENS, "a") as file:
            file.write(token + "\n")
    return token


class Provider:
    def __init__(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.authorizations = 0
        self.refreshes = 0
        self.token_requests = 0

    async def get_client(self, client_id: str):
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        self.authorizations += 1
        scopes = params.scopes or SCOPES
        if self.authorizations == 1:
            scopes = [scope for scope in scopes if scope != "mcp:write"]
        event("authorize " + " ".join(params.scopes or []))
        code = AuthorizationCode(
            code=secrets.token_urlsafe(24),
            scopes=scopes,
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        self.codes[code.code] = code
        issued(code.code)
        return construct_redirect_uri(str(params.redirect_uri), code=code.code, state=params.state)

    async def load_authorization_code(self, client, authorization_code: str):
        return self.codes.get(authorization_code)

    def tokens(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access = issued("at-" + secrets.token_urlsafe(24))
        refresh = issued("rt-" + secrets.token_urlsafe(24))
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=int(time.time()) + 3600, resource=resource
        )
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource)
        return OAuthToken(
            access_token=access, token_type="Bearer", expires_in=3600, refresh_token=refresh, scope=" ".join(scopes)
        )

    async def exchange_authorization_code(self, client, authorization_code: AuthorizationCode) -> OAuthToken:
        self.token_requests += 1
        event("token")
        if FAULT == "hang-token":
            await anyio.sleep_forever()
        self.codes.pop(authorization_code.code, None)
        return self.tokens(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client, refresh_token: str):
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client, refresh_token: RefreshToken, scopes: list[str]) -> OAuthToken:
        self.token_requests += 1
        self.refreshes += 1
        event("refresh")
        if FAULT == "refresh-fails":
            raise RuntimeError("the token store is down")
        self.refresh.pop(refresh_token.token, None)
        return self.tokens(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str):
        return self.access.get(token)

    async def revoke_token(self, token) -> None:
        self.access.pop(token.token, None)


provider = Provider()
issuer = "https://metadata.google.internal" if FAULT == "foreign-metadata" else BASE
server = MCPServer(
    "python-oauth",
    auth_server_provider=provider,
    auth=AuthSettings(
        issuer_url=issuer,
        resource_server_url=f"{BASE}/mcp",
        client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=SCOPES),
        required_scopes=SCOPES,
        validate_token_resource=True,
    ),
)


@server.tool()
def whoami(ctx: Context) -> str:
    """The scopes of the token this call came with."""
    from mcp.server.auth.middleware.auth_context import get_access_token

    token = get_access_token()
    return " ".join(sorted(token.scopes)) if token else "anonymous"


@server.tool()
def expire() -> str:
    """Stop accepting every access token issued so far."""
    provider.access.clear()
    return "expired"


@server.tool()
def stats() -> dict:
    """How many authorizations, refreshes and token requests were made."""
    return {
        "authorizations": provider.authorizations,
        "refreshes": provider.refreshes,
        "token_requests": provider.token_requests,
    }


app = server.streamable_http_app()

if FAULT == "garbage-token":
    inner = app

    async def app(scope, receive, send):  # noqa: F811 - the garbage-answering wrapper
        if scope["type"] == "http" and scope["path"] == "/token":
            await HTMLResponse("<html>502 Bad Gateway</html>")(scope, receive, send)
        else:
            await inner(scope, receive, send)


if FAULT == "javascript-authorize":
    import json

    plain = app

    async def app(scope, receive, send):  # noqa: F811 - the metadata-rewriting wrapper
        if scope["type"] != "http" or not scope["path"].startswith("/.well-known/oauth-authorization-server"):
            await plain(scope, receive, send)
            return
        parts = []
        start = {}

        async def keep(message):
            if message["type"] == "http.response.start":
                start.update(message)
            else:
                parts.append(message.get("body", b""))

        await plain(scope, receive, keep)
        metadata = json.loads(b"".join(parts))
        metadata["authorization_endpoint"] = "javascript:alert(document.cookie)//"
        body = json.dumps(metadata).encode()
        headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(body)).encode()))
        await send({"type": "http.response.start", "status": start.get("status", 200), "headers": headers})
        await send({"type": "http.response.body", "body": body})


uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning")
