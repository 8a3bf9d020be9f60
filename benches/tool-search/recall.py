#!/usr/bin/env python3
"""Recall@1, @5 and @10 of `yiem tools search` over the BFCL catalog: tuned vs plain BM25, and (with
--model or --embed-command) tuned BM25 mixed with a sentence-embedding model (the hybrid ranking).

    cargo build --release -p yiem-tools --bin yiem
    python3 benches/tool-search/recall.py target/release/yiem
    # with the embedding model (once: npm ci in benches/tool-search/embedder)
    python3 benches/tool-search/recall.py target/release/yiem \
        --embed-command "node benches/tool-search/embedder/embed.js"
    # with all-MiniLM-L6-v2 in process (yiem built with --features embeddings; the model folder as
    # yiem-core/tests/model/mod.rs installs it, or see `catalog::SentenceEmbedder`)
    cargo build --release -p yiem-tools --features embeddings --bin yiem
    python3 benches/tool-search/recall.py target/release/yiem --model target/python-minilm/all-MiniLM-L6-v2

Each query of queries.jsonl (whitespace folded to single spaces) goes to
`yiem tools search --catalog catalog.json --json -k 10 --ranker R` on stdin; a query counts as found at k
when its tool is among the first k results. Prints a Markdown table, overall and per BFCL category.
"""

import argparse
import json
import subprocess
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent


def queries():
    out = []
    for line in (HERE / "queries.jsonl").read_text().splitlines():
        entry = json.loads(line)
        text = " ".join(entry["query"].split())
        if text:
            category = entry.get("id", "all").rsplit("_", 1)[0]
            out.append((text, entry["tool"], category))
    return out


def ranks(yiem, ranker, texts, embed=None):
    command = [yiem, "tools", "search", "--catalog", str(HERE / "catalog.json"), "--json", "-k", "10",
               "--ranker", ranker]
    if embed:
        command += embed
    done = subprocess.run(command, input="\n".join(texts) + "\n", stdout=subprocess.PIPE, text=True,
                          check=True)
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(lines) == len(texts), (len(lines), len(texts))
    for line, text in zip(lines, texts):
        assert line["query"] == text, (line["query"], text)
    return [[hit["name"] for hit in line["results"]] for line in lines]


def main():
    arguments = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    arguments.add_argument("yiem", nargs="?", default="target/release/yiem")
    arguments.add_argument("--embed-command", help="also rank with this embedder (the hybrid row)")
    arguments.add_argument("--model", help="also rank with the sentence-transformers model in this folder")
    arguments = arguments.parse_args()
    yiem = arguments.yiem
    asked = queries()
    texts = [text for text, _, _ in asked]
    print(f"{len(json.loads((HERE / 'catalog.json').read_text())['tools'])} tools, {len(asked)} queries\n")
    print("| ranking | category | queries | recall@1 | recall@5 | recall@10 |")
    print("|---|---|---|---|---|---|")
    rankings = [("plain", "plain", None), ("tuned", "tuned", None)]
    if arguments.embed_command:
        rankings.append(("hybrid", "tuned", ["--embed-command", arguments.embed_command]))
    if arguments.model:
        rankings.append(("hybrid (model)", "tuned", ["--model", arguments.model]))
    for label, ranker, embed in rankings:
        found = ranks(yiem, ranker, texts, embed)
        by = defaultdict(lambda: [0, 0, 0, 0])
        for (_, tool, category), names in zip(asked, found):
            for key in ("all", category):
                row = by[key]
                row[0] += 1
                for slot, k in enumerate((1, 5, 10), start=1):
                    row[slot] += tool in names[:k]
        for key in ["all"] + sorted(k for k in by if k != "all"):
            n, r1, r5, r10 = by[key]
            print(f"| {label} | {key} | {n} | {r1 / n:.3f} | {r5 / n:.3f} | {r10 / n:.3f} |")


if __name__ == "__main__":
    main()
