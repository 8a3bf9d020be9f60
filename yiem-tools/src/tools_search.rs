//! `yiem tools search`: the best tools for a query, over the tools linked into the program or a catalog
//! file in MCP's `tools/list` shape — what a user runs to see why a model found or missed a tool. With
//! `--model DIR` (the `embeddings` feature), ranked by meaning as well as words with a
//! sentence-transformers model run in this process; with `--embed-command`, with an embedding model in
//! another program ([`embed_command`]).

mod embed_command;

use std::io::{BufRead, Write};
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use yiem_core::catalog::{Bm25Ranker, HybridRanker, Ranker};
use yiem_core::tool::AgentTool;

use embed_command::CommandEmbedder;

use crate::{Failure, bad_input};

/// Which ranking `yiem tools search` uses.
#[derive(Clone, Copy, clap::ValueEnum)]
pub(crate) enum RankerFlag {
    /// The tuned BM25 of `search_tools` (words of identifiers, stemming, stop words, name weight).
    Tuned,
    /// Textbook BM25 over the same text, for comparison.
    Plain,
}

/// The tools of a catalog file: `{"tools": [...]}` (an MCP `tools/list` result) or a bare array, each
/// entry with `name`, `description` and `inputSchema` (or `input_schema`).
pub(crate) fn catalog(path: &Path) -> Result<Vec<AgentTool>, Failure> {
    let text = std::fs::read_to_string(path).map_err(|error| {
        bad_input(format!(
            "cannot read the catalog {}: {error}",
            path.display()
        ))
    })?;
    let value: Value = serde_json::from_str(&text).map_err(|error| {
        bad_input(format!(
            "the catalog {} is not JSON: {error}",
            path.display()
        ))
    })?;
    let entries = match &value {
        Value::Array(entries) => entries,
        Value::Object(fields) => match fields.get("tools") {
            Some(Value::Array(entries)) => entries,
            _ => {
                return Err(bad_input(format!(
                    "the catalog {} has no `tools` array (expected an MCP tools/list result or an array of tools)",
                    path.display()
                )));
            }
        },
        _ => {
            return Err(bad_input(format!(
                "the catalog {} is neither an object with `tools` nor an array",
                path.display()
            )));
        }
    };
    entries
        .iter()
        .enumerate()
        .map(|(at, entry)| {
            let name = entry["name"].as_str().unwrap_or_default();
            let schema = entry
                .get("inputSchema")
                .or_else(|| entry.get("input_schema"))
                .cloned()
                .unwrap_or_else(|| json!({"type": "object"}));
            let mut builder = AgentTool::builder(name)
                .description(entry["description"].as_str().unwrap_or_default())
                .input_schema(schema)
                .handler(|_, _| async { "" });
            if let Some(title) = entry["title"]
                .as_str()
                .or_else(|| entry["annotations"]["title"].as_str())
            {
                builder = builder.label(title);
            }
            builder
                .build()
                .map_err(|error| bad_input(format!("tool {at} of the catalog ({name:?}): {error}")))
        })
        .collect()
}

/// A sentence-embedding model: a folder read in this process (`--model`), or another program
/// (`--embed-command`) and how long it may take to answer.
pub(crate) struct EmbedFlags {
    pub(crate) model: Option<std::path::PathBuf>,
    pub(crate) command: Option<String>,
    /// More than zero (the command line checks it).
    pub(crate) timeout: Duration,
}

/// Words and meaning, with the sentence-transformers model in `folder` (given by the flag `flag`:
/// `--model`, `--tool-model`).
#[cfg(feature = "embeddings")]
pub(crate) fn model(folder: &Path, flag: &str) -> Result<HybridRanker, Failure> {
    let model = yiem_core::catalog::SentenceEmbedder::from_dir(folder)
        .map_err(|error| bad_input(format!("{flag}: {error}")))?;
    Ok(HybridRanker::new(model))
}

/// Without the `embeddings` feature there is no model in this program: says how to get one.
#[cfg(not(feature = "embeddings"))]
pub(crate) fn model(_folder: &Path, flag: &str) -> Result<HybridRanker, Failure> {
    Err(bad_input(format!(
        "{flag}: this yiem was built without its `embeddings` feature (build it with `--features \
         embeddings`); `yiem tools search --embed-command` takes a model in another program"
    )))
}

/// Ranks `tools` for each query (`query`, else one per line of stdin) and prints the best `k`: a line
/// per tool (`score  name`) under each query, or one JSON object per query with `--json`. With an
/// embedder, words and meaning are mixed ([`HybridRanker`]); when the embedder fails, a warning goes to
/// stderr and the words alone rank.
pub(crate) fn search(
    tools: &[AgentTool],
    query: Option<String>,
    k: usize,
    ranker: RankerFlag,
    json_lines: bool,
    embed: EmbedFlags,
) -> Result<(), Failure> {
    if k == 0 {
        return Err(bad_input("-k must be at least 1"));
    }
    let words = match ranker {
        RankerFlag::Tuned => Bm25Ranker::new(),
        RankerFlag::Plain => Bm25Ranker::plain(),
    };
    let hybrid = match (embed.model, embed.command) {
        (Some(_), Some(_)) => {
            return Err(bad_input(
                "--model and --embed-command are two embedding models: give one",
            ));
        }
        (Some(folder), None) => Some(model(&folder, "--model")?),
        (None, Some(command)) => Some(HybridRanker::new(CommandEmbedder::spawn(
            &command,
            embed.timeout,
        )?)),
        (None, None) => None,
    };
    let index = match hybrid {
        None => words.index(tools),
        Some(hybrid) => hybrid
            .words(words)
            .on_fallback(|fallback| say_err!("yiem: warning: {fallback}"))
            .index(tools),
    };
    let mut out = std::io::stdout().lock();
    let mut answer = |query: &str| -> Result<(), Failure> {
        let hits = index.search(query, k);
        let written = if json_lines {
            let results: Vec<Value> = hits
                .iter()
                .map(|(at, score)| json!({"name": tools[*at].name(), "score": score}))
                .collect();
            writeln!(out, "{}", json!({"query": query, "results": results}))
        } else {
            let mut text = format!("{query}\n");
            if hits.is_empty() {
                text.push_str("  (no tool matches)\n");
            }
            for (at, score) in &hits {
                text.push_str(&format!("  {score:8.3}  {}\n", tools[*at].name()));
            }
            write!(out, "{text}")
        };
        written.map_err(|error| Failure::Internal(format!("cannot write the results: {error}")))
    };
    match query {
        Some(query) => answer(&query),
        None => {
            for line in std::io::stdin().lock().lines() {
                let line = line.map_err(|error| {
                    bad_input(format!("cannot read a query from stdin: {error}"))
                })?;
                if !line.trim().is_empty() {
                    answer(line.trim())?;
                }
            }
            Ok(())
        }
    }
}
