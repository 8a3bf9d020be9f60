// The official TypeScript SDK's stdio client closing `yiem mcp` while a `bash` call runs
// (`StdioClientTransport.close()`: end stdin, wait up to 2 s for the server to exit, then SIGTERM, then
// SIGKILL). Started by yiem-tools/tests/mcp_cli.rs, which owns the order: this script starts the call and
// prints `started`, waits for a line on its stdin (the test has seen the call's process run), closes, and
// prints how the server ended as one JSON line: `{"exitCode": ..., "signal": ...}`.
//
//     node tests/node/mcp_stdio_close.mjs NPM_DIR YIEM ROOT COMMAND

import { createInterface } from "node:readline";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [npmDir, yiem, root, command] = process.argv.slice(2);
const sdk = (path) =>
    import(pathToFileURL(join(npmDir, "node_modules/@modelcontextprotocol/sdk/dist/esm", path)).href);
const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");

const transport = new StdioClientTransport({
    command: yiem,
    args: ["mcp", "--root", root, "--allow", "bash"],
    stderr: "ignore",
});
const client = new Client({ name: "yiem-ts-close-test", version: "1.0.0" });
await client.connect(transport);
// The SDK keeps its child private and forgets it in `close()`; hold it to read how it ended.
const server = transport._process;

// Never answered: the call blocks until the server ends it.
client.callTool({ name: "bash", arguments: { command } }).catch(() => {});
console.log("started");

const lines = createInterface({ input: process.stdin });
for await (const _ of lines) break;

await client.close();
console.log(JSON.stringify({ exitCode: server.exitCode, signal: server.signalCode }));
process.exit(0);
