#!/usr/bin/env python3
"""Build the tool-search benchmark data from BFCL: catalog.json, queries.jsonl, original_names.json.

Source: Berkeley Function Calling Leaderboard (BFCL) v4 data, Apache License 2.0,
  repository https://github.com/ShishirPatil/gorilla
  commit     6ea57973c7a6097fd7c5915698c54c17c5b1b6c8 (2026-03-23)
  folder     berkeley-function-call-leaderboard/bfcl_eval/data/
See LICENSE-DATA.md next to this file.

Obtaining the raw files (exact commit, the layout under the data folder kept):

    git clone https://github.com/ShishirPatil/gorilla && cd gorilla
    P=berkeley-function-call-leaderboard/bfcl_eval/data
    C=6ea57973c7a6097fd7c5915698c54c17c5b1b6c8
    for f in $(git ls-tree -r --name-only $C $P | grep '\\.json$'); do
        mkdir -p /tmp/bfcl/$(dirname ${f#$P/}); git show $C:$f > /tmp/bfcl/${f#$P/}
    done

Only these are read (relative to that directory):
    BFCL_v4_<cat>.json and possible_answer/BFCL_v4_<cat>.json for each <cat> in
        QUERY_CATEGORIES (tools + queries)
    BFCL_v4_<cat>.json for each <cat> in TOOL_ONLY_CATEGORIES (tools only:
        relevance/irrelevance entries have no function-call ground truth)
    multi_turn_func_doc/*.json (tools only: multi-turn turns depend on context)

Running (Python 3.11, stdlib only; output is byte-for-byte deterministic):

    python3 benches/tool-search/build_catalog.py /tmp/bfcl [--out benches/tool-search]

What it does:
  * Tools: one tool per original BFCL function name.  BFCL defines many
    functions several times under one name (e.g. "get_current_weather" with 30
    wordings); all definitions sharing a name are merged into one tool that
    keeps the most frequent definition: first the most frequent description
    (ties: smallest description string), then, among the occurrences of that
    description, the most frequent parameter schema (ties: smallest canonical
    JSON).  Every query of that name points at the merged tool.
  * Names: every character outside [A-Za-z0-9_-] becomes "_" (so
    "math.factorial" -> "math_factorial") and names are cut to 64 characters.
    When two different BFCL names end up the same, they are ordered by
    (number of occurrences in the data desc, original name): the first keeps
    the plain name, the others get "_2", "_3", ... (the next free one; cut
    before the suffix if needed).  original_names.json maps every catalog name
    back to the BFCL function name.
  * Schemas: BFCL types -> JSON Schema types (TYPE_MAP); "any" and "" -> no
    "type"; the non-standard "optional" key is dropped; an "enum" on an array
    is moved into its "items"; everything else (description, enum, default,
    format, items, properties, required, min/maxItems, maximum) is kept.
  * Queries: an entry of a QUERY_CATEGORIES file whose ground truth calls
    exactly one distinct function (parallel entries calling it several times
    included), defined in that entry, gives {"query": <its last user
    message>, "tool": <catalog name of that function>, "id": <BFCL entry id>}.
    After merging, identical (query, tool) pairs are kept once (the first id);
    a query text that would still point at two different tools is dropped
    entirely.  All queries are kept (no sampling), in file order of
    QUERY_CATEGORIES.
"""

import argparse
import collections
import json
import pathlib
import re
import sys

COMMIT = "6ea57973c7a6097fd7c5915698c54c17c5b1b6c8"

QUERY_CATEGORIES = [
    "simple_python",
    "simple_java",
    "simple_javascript",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
]
TOOL_ONLY_CATEGORIES = ["irrelevance", "live_irrelevance", "live_relevance"]
MULTI_TURN_DOC_DIR = "multi_turn_func_doc"

# BFCL parameter type -> JSON Schema type (None: no "type" key at all).
TYPE_MAP = {
    "dict": "object",
    "HashMap": "object",
    "float": "number",
    "double": "number",
    "integer": "integer",
    "long": "integer",
    "string": "string",
    "String": "string",
    "char": "string",
    "boolean": "boolean",
    "Boolean": "boolean",
    "array": "array",
    "Array": "array",
    "ArrayList": "array",
    "tuple": "array",
    "any": None,
    "": None,
}
KEPT_KEYS = ("description", "enum", "default", "format", "minItems", "maxItems", "maximum")
DROPPED_KEYS = ("optional",)

NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
stats = collections.Counter()


def load_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def canon(obj):
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def convert_schema(node, where):
    """BFCL parameter schema node -> JSON Schema node."""
    if not isinstance(node, dict):
        raise ValueError(f"{where}: schema node is not an object: {node!r}")
    out = {}
    if "type" in node:
        t = node["type"]
        if t not in TYPE_MAP:
            raise ValueError(f"{where}: unknown BFCL type {t!r}")
        if TYPE_MAP[t] is not None:
            out["type"] = TYPE_MAP[t]
        if t != TYPE_MAP[t]:
            stats[f"type {t!r} -> {TYPE_MAP[t]!r}"] += 1
    for key in node:
        if key in ("type", "properties", "required", "items", "additionalProperties"):
            continue
        if key in DROPPED_KEYS:
            stats[f"dropped key {key!r}"] += 1
            continue
        if key not in KEPT_KEYS:
            raise ValueError(f"{where}: unknown schema key {key!r}")
        out[key] = node[key]
    if "properties" in node:
        out["properties"] = {
            k: convert_schema(v, f"{where}.{k}") for k, v in node["properties"].items()
        }
    if node.get("required"):
        req = node["required"]
        if not isinstance(req, list) or not all(isinstance(r, str) for r in req):
            raise ValueError(f"{where}: bad required {req!r}")
        out["required"] = list(dict.fromkeys(req))
    if "items" in node:
        out["items"] = convert_schema(node["items"], f"{where}[]")
    if "additionalProperties" in node:
        ap = node["additionalProperties"]
        out["additionalProperties"] = ap if isinstance(ap, bool) else convert_schema(ap, f"{where}{{}}")
    if out.get("type") == "array" and "enum" in out:
        items = out.setdefault("items", {})
        if "enum" not in items:
            items["enum"] = out.pop("enum")
            stats["array enum moved into items"] += 1
    return out


def input_schema(params, where):
    if params.get("type") != "dict":
        raise ValueError(f"{where}: top-level parameters type is {params.get('type')!r}")
    s = convert_schema(params, where)
    return {
        "type": "object",
        "properties": s.get("properties", {}),
        "required": s.get("required", []),
    }


def sanitize(name):
    return re.sub(r"[^a-zA-Z0-9_-]", "_", name)[:64] or "_"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("raw_dir", type=pathlib.Path, help="directory holding the extracted BFCL data files")
    ap.add_argument("--out", type=pathlib.Path, default=pathlib.Path(__file__).resolve().parent)
    args = ap.parse_args()
    raw = args.raw_dir

    # name -> description -> Counter(canonical params JSON -> occurrences)
    variants = collections.defaultdict(lambda: collections.defaultdict(collections.Counter))
    entries = {}  # category -> list of question entries

    def add_function(fn, where):
        name, desc = fn["name"], fn["description"].strip()
        variants[name][desc][canon(fn["parameters"])] += 1
        stats["function definitions read"] += 1

    for cat in QUERY_CATEGORIES + TOOL_ONLY_CATEGORIES:
        entries[cat] = load_jsonl(raw / f"BFCL_v4_{cat}.json")
        for e in entries[cat]:
            for fn in e["function"]:
                add_function(fn, e["id"])
    for path in sorted((raw / MULTI_TURN_DOC_DIR).glob("*.json")):
        for fn in load_jsonl(path):
            add_function(fn, path.name)

    # One tool per original name: the most frequent description, then the
    # most frequent parameter schema among that description's occurrences.
    tools = {}
    for name, descs in variants.items():
        count = {d: sum(c.values()) for d, c in descs.items()}
        desc = min(descs, key=lambda d: (-count[d], d))
        counter = descs[desc]
        params = min(counter, key=lambda p: (-counter[p], p))
        n_defs = sum(len(c) for c in descs.values())
        stats["distinct (description, schema) definitions"] += n_defs
        if n_defs > 1:
            stats["tools merged from several definitions"] += 1
            stats["definitions merged away"] += n_defs - 1
        if len(descs) > 1:
            stats["tools whose description varied in the data"] += 1
        if len(counter) > 1:
            stats["tools whose kept description came with several schemas"] += 1
        tools[name] = {
            "occurrences": sum(count.values()),
            "description": desc,
            "inputSchema": input_schema(json.loads(params), name),
        }

    # Names: plain sanitized name for the most frequent original name, suffixes for the rest.
    groups = collections.defaultdict(list)
    for name in tools:
        groups[sanitize(name)].append(name)
    catalog_name = {}
    used = set()
    for base, names in groups.items():
        names.sort(key=lambda n: (-tools[n]["occurrences"], n))
    for base in sorted(groups):
        catalog_name[groups[base][0]] = base
        used.add(base)
    for base in sorted(groups):
        for name in groups[base][1:]:
            n = 2
            while True:
                suffix = f"_{n}"
                cand = base[: 64 - len(suffix)] + suffix
                if cand not in used:
                    break
                n += 1
            catalog_name[name] = cand
            used.add(cand)
            stats["tools renamed with a numeric suffix"] += 1
    for orig, name in catalog_name.items():
        assert NAME_RE.match(name), name
        if name != orig:
            stats["tools whose name differs from the original"] += 1
    assert len(set(catalog_name.values())) == len(catalog_name)

    catalog = sorted(
        (
            {"name": catalog_name[orig], "description": t["description"], "inputSchema": t["inputSchema"]}
            for orig, t in tools.items()
        ),
        key=lambda t: t["name"],
    )

    # Queries.
    queries = []
    for cat in QUERY_CATEGORIES:
        answers = {a["id"]: a for a in load_jsonl(raw / "possible_answer" / f"BFCL_v4_{cat}.json")}
        for e in entries[cat]:
            stats[f"entries {cat}"] += 1
            gt = answers[e["id"]]["ground_truth"]
            called = {fname for call in gt for fname in call}
            if len(called) != 1:
                stats["entries skipped: ground truth calls several functions"] += 1
                continue
            fname = called.pop()
            if not any(fn["name"] == fname for fn in e["function"]):
                stats["entries skipped: called function not defined in the entry"] += 1
                continue
            user = [m for turn in e["question"] for m in turn if m["role"] == "user"]
            if not user or not user[-1]["content"].strip():
                stats["entries skipped: no user message"] += 1
                continue
            queries.append(
                {"query": user[-1]["content"].strip(), "tool": catalog_name[fname], "id": e["id"]}
            )

    tools_by_query = collections.defaultdict(set)
    for q in queries:
        tools_by_query[q["query"]].add(q["tool"])
    seen = set()
    kept = []
    for q in queries:
        if len(tools_by_query[q["query"]]) > 1:
            stats["queries dropped: same text, different tools"] += 1
            continue
        if (q["query"], q["tool"]) in seen:
            stats["queries dropped: duplicate (query, tool)"] += 1
            continue
        seen.add((q["query"], q["tool"]))
        kept.append(q)

    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "catalog.json", "w", encoding="utf-8", newline="\n") as f:
        # One tool per line: compact, yet readable in a diff.
        f.write('{"tools": [\n')
        f.write(",\n".join(json.dumps(t, ensure_ascii=False) for t in catalog))
        f.write("\n]}\n")
    with open(args.out / "original_names.json", "w", encoding="utf-8", newline="\n") as f:
        # catalog name -> BFCL function name, one per line, sorted by catalog name.
        f.write("{\n")
        f.write(
            ",\n".join(
                f"{json.dumps(name, ensure_ascii=False)}: {json.dumps(orig, ensure_ascii=False)}"
                for name, orig in sorted((n, o) for o, n in catalog_name.items())
            )
        )
        f.write("\n}\n")
    with open(args.out / "queries.jsonl", "w", encoding="utf-8", newline="\n") as f:
        for q in kept:
            f.write(json.dumps(q, ensure_ascii=False) + "\n")

    for k in sorted(stats):
        print(f"{k}: {stats[k]}")
    print(f"tools: {len(catalog)}")
    print(f"queries: {len(kept)}")
    print(f"distinct target tools: {len({q['tool'] for q in kept})}")


if __name__ == "__main__":
    sys.exit(main())
