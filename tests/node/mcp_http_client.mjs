// An independent client for yiem's streamable HTTP MCP server: the official TypeScript SDK
// (`@modelcontextprotocol/sdk`, installed by the calling test into NPM_DIR).
//
// Against `mcp-test-server --http ADDR --max-body 65536` started with `MCP_TEST_TOKEN=TOKEN`, asserts: no
// token and a wrong token are refused with 401; with the token, tools/list, a structured call, a progress
// stream, an over-sized request refused with the server's JSON-RPC error; and a long call cancelled by the
// client closing its transport (the calling test checks the server's `cancelled` marker afterwards).
// Exits non-zero on the first failure.
//
//     node tests/node/mcp_http_client.mjs NPM_DIR URL TOKEN MARKERS_DIR

import { existsSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { deepStrictEqual, ok } from "node:assert/strict";

const [npmDir, url, token, markers] = process.argv.slice(2);
const sdk = (path) =>
    import(pathToFileURL(join(npmDir, "node_modules/@modelcontextprotocol/sdk/dist/esm", path)).href);
const { Client } = await sdk("client/index.js");
const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");

async function connect(bearer) {
    const headers = bearer === undefined ? {} : { Authorization: `Bearer ${bearer}` };
    const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
    const client = new Client({ name: "yiem-ts-test", version: "1.0.0" });
    await client.connect(transport);
    return { client, transport };
}

async function refused(bearer, what) {
    try {
        const { client } = await connect(bearer);
        await client.close();
    } catch (error) {
        const text = String(error?.message ?? error);
        ok(text.includes("401") || /bearer/i.test(text), `${what}: refused, but not with 401: ${text}`);
        return;
    }
    throw new Error(`${what}: the server accepted the session`);
}

await refused(undefined, "no token");
await refused(`wrong-${token}`, "a wrong token");

{
    const { client } = await connect(token);
    const { tools } = await client.listTools();
    const names = tools.map((tool) => tool.name);
    for (const name of ["add", "count_up", "echo", "slow_job"]) {
        ok(names.includes(name), `tools/list lacks ${name}: ${names}`);
    }
    const add = tools.find((tool) => tool.name === "add");
    deepStrictEqual(add.inputSchema.required, ["a", "b"], "add's input schema");

    const added = await client.callTool({ name: "add", arguments: { a: 20, b: 22 } });
    deepStrictEqual(added.structuredContent, { sum: 42 }, "add's structured content");

    const progress = [];
    const counted = await client.callTool({ name: "count_up", arguments: { steps: 3 } }, undefined, {
        onprogress: (update) => progress.push([update.progress, update.message]),
    });
    deepStrictEqual(counted.content, [{ type: "text", text: "counted to 3" }], "count_up's content");
    deepStrictEqual(
        progress,
        [
            [1, "step 1 of 3"],
            [2, "step 2 of 3"],
            [3, "step 3 of 3"],
        ],
        "count_up's progress notifications",
    );

    let refusedBig = false;
    try {
        await client.callTool({ name: "echo", arguments: { text: "x".repeat(100_000) } });
    } catch (error) {
        const text = String(error?.message ?? error);
        ok(text.includes("65536"), `an over-sized call failed without naming the limit: ${text}`);
        refusedBig = true;
    }
    ok(refusedBig, "an over-sized call was answered");
    const again = await client.callTool({ name: "add", arguments: { a: 1, b: 2 } });
    deepStrictEqual(again.structuredContent, { sum: 3 }, "a call after the over-sized one");
    await client.close();
}

{
    const { client, transport } = await connect(token);
    const call = client
        .callTool({ name: "slow_job", arguments: { markers, millis: 600_000 } }, undefined, { timeout: 600_000 })
        .then(
            () => "answered",
            () => "ended",
        );
    const deadline = Date.now() + 30_000;
    while (!existsSync(join(markers, "started"))) {
        ok(Date.now() < deadline, "slow_job never started");
        await new Promise((resolve) => setTimeout(resolve, 20));
    }
    // Closing the transport aborts its HTTP requests: the server sees the client go away.
    await transport.close();
    deepStrictEqual(await call, "ended", "the closed client's call ends without an answer");
}

console.log("ok");
