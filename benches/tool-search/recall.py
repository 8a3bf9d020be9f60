#!/usr/bin/env python3
"""Recall@1, @5 and @10 of `yiem tools search` over the BFCL catalog, tuned vs plain BM25.

    cargo build --release -p yiem-tools --bin yiem
    python3 benches/tool-search/recall.py target/release/yiem

Each query of queries.jsonl (whitespace folded to single spaces) goes to
`yiem tools search --catalog catalog.json --json -k 10 --ranker R` on stdin; a query counts as found at k
when its tool is among the first k results. Prints a Markdown table, overall and per BFCL category.
"""

import json
import subprocess
import sys
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


def ranks(yiem, ranker, texts):
    done = subprocess.run(
        [yiem, "tools", "search", "--catalog", str(HERE / "catalog.json"), "--json", "-k", "10",
         "--ranker", ranker],
        input="\n".join(texts) + "\n", capture_output=True, text=True, check=True)
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(lines) == len(texts), (len(lines), len(texts))
    for line, text in zip(lines, texts):
        assert line["query"] == text, (line["query"], text)
    return [[hit["name"] for hit in line["results"]] for line in lines]


def main():
    yiem = sys.argv[1] if len(sys.argv) > 1 else "target/release/yiem"
    asked = queries()
    texts = [text for text, _, _ in asked]
    print(f"{len(json.loads((HERE / 'catalog.json').read_text())['tools'])} tools, {len(asked)} queries\n")
    print("| ranking | category | queries | recall@1 | recall@5 | recall@10 |")
    print("|---|---|---|---|---|---|")
    for ranker in ["plain", "tuned"]:
        found = ranks(yiem, ranker, texts)
        by = defaultdict(lambda: [0, 0, 0, 0])
        for (_, tool, category), names in zip(asked, found):
            for key in ("all", category):
                row = by[key]
                row[0] += 1
                for slot, k in enumerate((1, 5, 10), start=1):
                    row[slot] += tool in names[:k]
        for key in ["all"] + sorted(k for k in by if k != "all"):
            n, r1, r5, r10 = by[key]
            print(f"| {ranker} | {key} | {n} | {r1 / n:.3f} | {r5 / n:.3f} | {r10 / n:.3f} |")


if __name__ == "__main__":
    main()
