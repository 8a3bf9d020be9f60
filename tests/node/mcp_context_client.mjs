// The official TypeScript SDK (`@modelcontextprotocol/sdk`, installed by the calling test into NPM_DIR)
// reads resources, gets prompts and completes arguments of yiem's MCP server (`mcp-context-server`) over
// stdio, and checks each answer and each error exactly, as tests/python/mcp_context_client.py does with
// the Python SDK. Prints `ok`; exits non-zero on the first failure.
//
//     node tests/node/mcp_context_client.mjs NPM_DIR SERVER

import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { deepStrictEqual, ok } from "node:assert/strict";

const [npmDir, server] = process.argv.slice(2);
const sdk = (path) =>
    import(pathToFileURL(join(npmDir, "node_modules/@modelcontextprotocol/sdk/dist/esm", path)).href);
const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");

async function refused(call, code, says, what) {
    try {
        const result = await call;
        throw new Error(`${what}: expected error ${code}, got ${JSON.stringify(result)}`);
    } catch (error) {
        if (error?.code === undefined) throw error;
        deepStrictEqual(error.code, code, `${what}: the error code (${error.message})`);
        ok(error.message.includes(says), `${what}: ${JSON.stringify(error.message)} does not say ${JSON.stringify(says)}`);
        return error;
    }
}

const client = new Client({ name: "yiem-ts-context-test", version: "1.0.0" });
await client.connect(new StdioClientTransport({ command: server, args: [], stderr: "ignore" }));

const caps = client.getServerCapabilities();
deepStrictEqual(caps.resources, { subscribe: true, listChanged: true }, "resources capability");
deepStrictEqual(caps.prompts, { listChanged: true }, "prompts capability");

const listed = await client.listResources();
deepStrictEqual(
    listed.resources.map((r) => [r.uri, r.name, r.mimeType]),
    [
        ["notes://broken", "broken", undefined],
        ["notes://huge", "huge", undefined],
        ["notes://logo", "logo", "image/png"],
        ["notes://readme", "readme", "text/markdown"],
    ],
    "resources/list",
);
const templates = await client.listResourceTemplates();
deepStrictEqual(
    templates.resourceTemplates.map((t) => [t.uriTemplate, t.name, t.description]),
    [["notes://notes/{id}", "note", "One note, by its number."]],
    "resources/templates/list",
);

deepStrictEqual(
    (await client.readResource({ uri: "notes://readme" })).contents,
    [{ uri: "notes://readme", mimeType: "text/markdown", text: "# Notes\n" }],
    "a text resource",
);
deepStrictEqual(
    (await client.readResource({ uri: "notes://logo" })).contents,
    [{ uri: "notes://logo", mimeType: "image/png", blob: "iVBORw==" }],
    "a binary resource",
);
deepStrictEqual(
    (await client.readResource({ uri: "notes://notes/42" })).contents,
    [{ uri: "notes://notes/42", mimeType: "text/plain", text: "note 42" }],
    "a template's resource",
);
const unknown = await refused(
    client.readResource({ uri: "notes://nothing" }), -32002, "no resource at `notes://nothing`", "an unknown URI");
deepStrictEqual(unknown.data, { uri: "notes://nothing" }, "an unknown URI's data");
await refused(client.readResource({ uri: "notes://notes/forty-two" }), -32602,
    "gives the parameter `id` the value `forty-two`", "a URI whose parameter the argument refuses");
await refused(client.readResource({ uri: "notes://huge" }), -32603,
    "is 4096 bytes, over this server's limit of 1024 bytes", "a read over the bound");

const prompts = await client.listPrompts();
deepStrictEqual(prompts.prompts.map((p) => p.name), ["greet", "review"], "prompts/list");
const got = await client.getPrompt({
    name: "review",
    arguments: { code: "fn main() {}", language: "rust", limit: "2" },
});
deepStrictEqual(
    got.messages,
    [
        { role: "user", content: { type: "text", text: "Review this Rust:\nfn main() {}" } },
        { role: "assistant", content: { type: "text", text: "At most 2 findings." } },
    ],
    "prompts/get",
);
await refused(client.getPrompt({ name: "nope" }), -32602, "no prompt named `nope`", "an unknown prompt");
await refused(client.getPrompt({ name: "review", arguments: { code: "x" } }), -32602,
    "needs the argument `language`", "a missing argument");
await refused(client.getPrompt({ name: "review", arguments: { code: "x", language: "cobol" } }), -32602,
    "unknown variant `cobol`", "an argument that fails its schema");

const language = await client.complete({
    ref: { type: "ref/prompt", name: "review" },
    argument: { name: "language", value: "r" },
});
deepStrictEqual(language.completion, { values: ["rust", "ruby"], total: 2, hasMore: false }, "an enum's completions");
const name = await client.complete({
    ref: { type: "ref/prompt", name: "greet" },
    argument: { name: "name", value: "a" },
});
deepStrictEqual(name.completion.values, ["Ada", "Alan"], "a function's completions");
const ids = await client.complete({
    ref: { type: "ref/resource", uri: "notes://notes/{id}" },
    argument: { name: "id", value: "" },
});
deepStrictEqual([ids.completion.values.length, ids.completion.total, ids.completion.hasMore], [100, 120, true],
    "a template's completions, bounded at 100");

await client.close();
console.log("ok");
