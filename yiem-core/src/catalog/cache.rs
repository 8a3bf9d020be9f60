//! The tools' vectors a [`HybridRanker`](super::HybridRanker) keeps, by the text each was made from, so
//! that a catalog is embedded once per content: in memory, shared by the ranker's clones, and — when
//! asked ([`HybridRanker::cache_file`](super::HybridRanker::cache_file)) — in a file of JSON lines keyed by
//! the model ([`Embedder::model_name`](super::Embedder::model_name)): a `{"model": NAME}` line, then one
//! `{"text", "vector"}` line per text. A file of another model is replaced; a file that cannot be read or
//! written costs the vectors on disk only (a `tracing` warning), never the search.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::json;

/// The cache keeps at least this many vectors; above it, and above twice the tools of the last index,
/// it keeps only that index's (so a catalog that keeps changing does not grow it without end).
const FLOOR: usize = 4096;

/// Where a ranker keeps its vectors on disk, and the model they are of.
pub(super) struct Disk<'a> {
    pub(super) file: &'a Path,
    pub(super) model: &'a str,
}

#[derive(Clone, Default)]
pub(super) struct VectorCache(Arc<Mutex<State>>);

#[derive(Default)]
struct State {
    vectors: HashMap<String, Arc<[f32]>, foldhash::fast::RandomState>,
    /// The file read last, and whether it holds this model's vectors (new ones are then appended;
    /// otherwise the file is written anew).
    read: Option<(PathBuf, String, bool)>,
}

impl VectorCache {
    /// Each text's vector, if it is kept (read from `disk` first, once per file and model).
    pub(super) fn get(&self, texts: &[String], disk: Option<&Disk>) -> Vec<Option<Arc<[f32]>>> {
        let mut state = self.lock();
        if let Some(disk) = disk {
            let fresh = state.read.as_ref().is_none_or(|(file, model, _)| {
                file.as_path() != disk.file || model.as_str() != disk.model
            });
            if fresh {
                let ours = read(disk, &mut state.vectors);
                state.read = Some((disk.file.to_path_buf(), disk.model.to_owned(), ours));
            }
        }
        texts
            .iter()
            .map(|text| state.vectors.get(text).cloned())
            .collect()
    }

    /// Keeps `new` vectors (and writes them to `disk`); `current` is the index's texts, which are kept
    /// when the cache is trimmed.
    pub(super) fn put(
        &self,
        new: Vec<(String, Arc<[f32]>)>,
        current: &[String],
        disk: Option<&Disk>,
    ) {
        let mut state = self.lock();
        if let Some(disk) = disk {
            let append = state.read.as_ref().is_some_and(|(file, model, ours)| {
                *ours && file.as_path() == disk.file && model.as_str() == disk.model
            });
            let written = if append {
                append_lines(disk.file, &new)
            } else {
                let all: Vec<(String, Arc<[f32]>)> = current
                    .iter()
                    .filter_map(|text| Some((text.clone(), state.vectors.get(text)?.clone())))
                    .chain(new.iter().cloned())
                    .collect();
                write_file(disk, &all)
            };
            match written {
                Ok(()) => {
                    state.read = Some((disk.file.to_path_buf(), disk.model.to_owned(), true));
                }
                Err(error) => tracing::warn!(
                    target: "yiem::catalog",
                    "cannot write the tools' vectors to {}: {error}",
                    disk.file.display()
                ),
            }
        }
        state.vectors.extend(new);
        if state.vectors.len() > FLOOR.max(2 * current.len()) {
            let current: HashSet<&str> = current.iter().map(String::as_str).collect();
            state
                .vectors
                .retain(|text, _| current.contains(text.as_str()));
            // What memory let go the file still holds: read it again before embedding anything, or
            // the same texts would be embedded and appended once more.
            state.read = None;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Reads `disk`'s vectors into `vectors` if the file is of `disk`'s model; whether it was. A line that
/// makes no sense is skipped (its text is embedded again).
fn read(
    disk: &Disk,
    vectors: &mut HashMap<String, Arc<[f32]>, foldhash::fast::RandomState>,
) -> bool {
    let text = match std::fs::read_to_string(disk.file) {
        Ok(text) => text,
        Err(error) => {
            if error.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!(
                    target: "yiem::catalog",
                    "cannot read the tools' vectors from {}: {error}",
                    disk.file.display()
                );
            }
            return false;
        }
    };
    let mut lines = text.lines();
    let header: Option<serde_json::Value> = lines
        .next()
        .and_then(|line| serde_json::from_str(line).ok());
    if header.as_ref().and_then(|header| header["model"].as_str()) != Some(disk.model) {
        return false;
    }
    let mut skipped = 0;
    for line in lines {
        let entry: Option<(String, Vec<f32>)> = serde_json::from_str::<serde_json::Value>(line)
            .ok()
            .and_then(|entry| {
                Some((
                    entry["text"].as_str()?.to_owned(),
                    serde_json::from_value(entry["vector"].clone()).ok()?,
                ))
            });
        match entry {
            Some((text, vector)) => {
                vectors.insert(text, vector.into());
            }
            None => skipped += 1,
        }
    }
    if skipped > 0 {
        tracing::warn!(
            target: "yiem::catalog",
            "{skipped} lines of {} are not vectors: their tools are embedded again",
            disk.file.display()
        );
    }
    true
}

fn line(text: &str, vector: &[f32]) -> String {
    let mut line = json!({"text": text, "vector": vector}).to_string();
    line.push('\n');
    line
}

fn append_lines(file: &Path, new: &[(String, Arc<[f32]>)]) -> std::io::Result<()> {
    let lines: String = new
        .iter()
        .map(|(text, vector)| line(text, vector))
        .collect();
    std::fs::OpenOptions::new()
        .append(true)
        .open(file)?
        .write_all(lines.as_bytes())
}

/// The file anew, through a file beside it renamed over it (a reader never sees half of it).
fn write_file(disk: &Disk, all: &[(String, Arc<[f32]>)]) -> std::io::Result<()> {
    let mut content = json!({"model": disk.model}).to_string();
    content.push('\n');
    content.extend(all.iter().map(|(text, vector)| line(text, vector)));
    let mut partial = disk.file.as_os_str().to_owned();
    partial.push(".partial");
    std::fs::write(&partial, content)?;
    std::fs::rename(&partial, disk.file).inspect_err(|_| {
        let _ = std::fs::remove_file(&partial);
    })
}
