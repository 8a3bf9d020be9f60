//! Drift pinning: a tool's definition fingerprinted when its server is first trusted, and a later
//! listing that changes it (or adds a tool) held to a [`DriftPolicy`] before the model sees it.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use rmcp::model::Tool;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The most characters of a diff a [`ToolDrift`] carries; the rest is said in one line.
const MAX_DIFF_CHARS: usize = 4000;

/// Where an [`McpClient`](super::McpClient) keeps the fingerprints ("pins") of its servers' tools, and
/// what it does when a server's listing no longer matches them ([`DriftPolicy`]).
///
/// A tool's pin is the SHA-256 of its definition as the model would be told it — name, title,
/// description, input and output schemas, annotations — written canonically (keys sorted), so a server
/// that only reorders keys does not drift. The first listing of a server that has no pins yet pins every
/// tool it lists (trust on first use). After that, each listing — the first of a run, [`refresh`],
/// `notifications/tools/list_changed`, or a list whose `ttlMs` ran out — compares: a tool whose
/// definition changed, or a tool that is new, is taken only if the policy accepts it (and is pinned
/// again); otherwise it is left out, named in [`McpClient::left_out`] with why, and never reaches a
/// store, so no call is ever built from a definition nobody accepted. A tool that disappears keeps its
/// pin, so it comes back only as it was.
///
/// [`ToolPins::file`] keeps the pins in a file only its owner can read and write, in a folder only its
/// owner can write, written whole through a fresh file (as `mcp::oauth::FileTokenStore` keeps tokens: beside them
/// is a good place); one file may hold the pins of several servers, by their names.
///
/// ```no_run
/// use yiem_core::mcp::{DriftPolicy, McpClient, ToolPins};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let client = McpClient::http("https://mcp.example.com/mcp")
///     .name("example")
///     .pins(ToolPins::file("/home/me/.local/share/my-app/pins.json").policy(DriftPolicy::ask(
///         |drift: yiem_core::mcp::ToolDrift| async move {
///             eprintln!("{drift}");
///             false // refuse: a person reads the diff before anything changes
///         },
///     )))
///     .connect()
///     .await?;
/// # Ok(()) }
/// ```
///
/// [`refresh`]: super::McpClient::refresh
/// [`McpClient::left_out`]: super::McpClient::left_out
#[derive(Clone)]
pub struct ToolPins {
    place: Place,
    policy: DriftPolicy,
    /// Held while a listing is checked, so two listings never ask twice or write over each other; holds
    /// the drifts a handler refused (server, tool, fingerprint), which are not asked about again.
    checking: Arc<tokio::sync::Mutex<Refused>>,
}

type Refused = std::collections::HashSet<(String, String, String)>;

#[derive(Clone)]
enum Place {
    Memory(Arc<Mutex<Option<String>>>),
    File(PathBuf),
}

impl ToolPins {
    /// Pins kept in memory, for this process only (a server that changes a tool while it runs is
    /// caught; one that changed it before is trusted as it is first seen).
    pub fn memory() -> Self {
        ToolPins::at(Place::Memory(Arc::default()))
    }

    /// Pins kept in the file at `path` (its folder is created, owner-only, when the first pins are
    /// written).
    pub fn file(path: impl Into<PathBuf>) -> Self {
        ToolPins::at(Place::File(path.into()))
    }

    fn at(place: Place) -> Self {
        ToolPins {
            place,
            policy: DriftPolicy::default(),
            checking: Arc::default(),
        }
    }

    /// What to do with a changed or new tool ([`DriftPolicy::Refuse`] unless set).
    pub fn policy(mut self, policy: DriftPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The file the pins are kept in, for pins kept in a file.
    pub fn path(&self) -> Option<&Path> {
        match &self.place {
            Place::File(path) => Some(path),
            Place::Memory(_) => None,
        }
    }

    fn load(&self) -> std::io::Result<Pinned> {
        let document = match &self.place {
            Place::Memory(document) => document.lock().unwrap_or_else(|p| p.into_inner()).clone(),
            Place::File(path) => crate::mcp::private_file::read(path, "tool pins")?,
        };
        let Some(document) = document else {
            return Ok(Pinned::default());
        };
        serde_json::from_str(&document).map_err(|error| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "the tool pins are not ones yiem wrote ({error}); remove the file to pin anew"
                ),
            )
        })
    }

    fn save(&self, pinned: &Pinned) -> std::io::Result<()> {
        let document = serde_json::to_string_pretty(pinned).map_err(std::io::Error::other)?;
        match &self.place {
            Place::Memory(kept) => {
                *kept.lock().unwrap_or_else(|p| p.into_inner()) = Some(document);
                Ok(())
            }
            Place::File(path) => crate::mcp::private_file::write(path, "tool pins", &document),
        }
    }

    /// The tools of `server`'s listing to take, and those left out with why: see the type's docs.
    pub(super) async fn check(
        &self,
        server: &str,
        listed: Vec<Tool>,
    ) -> std::io::Result<(Vec<Tool>, Vec<(String, String)>)> {
        let mut refused = self.checking.lock().await;
        let mut pinned = self.load()?;
        let first = !pinned.servers.contains_key(server);
        let mut pins = pinned.servers.remove(server).unwrap_or_default();
        let mut changed = first;
        let (mut taken, mut left_out) = (Vec::new(), Vec::new());
        for tool in listed {
            let definition = definition(&tool);
            let sha256 = fingerprint(&definition);
            let name = tool.name.to_string();
            let kind = match pins.get(&name) {
                Some(pin) if pin.sha256 == sha256 => None,
                Some(_) => Some(DriftKind::Changed),
                None if first => None,
                None => Some(DriftKind::Added),
            };
            let accepted = match kind {
                None => true,
                Some(kind) => {
                    let before = pins.get(&name).map(|pin| &pin.definition);
                    let drift = ToolDrift {
                        server: server.to_owned(),
                        tool: name.clone(),
                        kind,
                        diff: diff(before, &definition),
                    };
                    let seen = (server.to_owned(), name.clone(), sha256.clone());
                    let accepted = match &self.policy {
                        DriftPolicy::Refuse => false,
                        DriftPolicy::Accept => true,
                        DriftPolicy::Ask(_) if refused.contains(&seen) => false,
                        DriftPolicy::Ask(handler) => {
                            let accepted = handler.decide(drift.clone()).await;
                            if !accepted {
                                refused.insert(seen);
                            }
                            accepted
                        }
                    };
                    tracing::warn!(
                        server,
                        tool = %name,
                        accepted,
                        "an MCP server's tool drifted from its pin:\n{}",
                        drift.diff
                    );
                    if !accepted {
                        left_out.push((name.clone(), drift.refusal()));
                    }
                    accepted
                }
            };
            if accepted {
                if pins.get(&name).is_none_or(|pin| pin.sha256 != sha256) {
                    changed = true;
                    pins.insert(name, Pin { sha256, definition });
                }
                taken.push(tool);
            }
        }
        pinned.servers.insert(server.to_owned(), pins);
        if changed {
            self.save(&pinned)?;
        }
        Ok((taken, left_out))
    }
}

impl std::fmt::Debug for ToolPins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolPins")
            .field("path", &self.path())
            .field("policy", &self.policy)
            .finish()
    }
}

/// What an [`McpClient`](super::McpClient) with [`ToolPins`] does with a tool whose definition changed
/// since it was pinned, or a new tool of a server it has pins for.
#[derive(Clone, Default)]
#[non_exhaustive]
pub enum DriftPolicy {
    /// Leave the tool out (the default): the model never sees it, and its pin stays as it was.
    #[default]
    Refuse,
    /// Ask the handler (a person, with the diff): `true` takes the tool and pins it anew; `false` leaves
    /// it out, and the same drift (the same definition) is not asked about again by these pins.
    Ask(Arc<dyn DriftHandler>),
    /// Take the tool and pin it anew (the drift is still logged as a warning).
    Accept,
}

impl DriftPolicy {
    /// Ask `handler` about each drift.
    pub fn ask(handler: impl DriftHandler) -> Self {
        DriftPolicy::Ask(Arc::new(handler))
    }
}

impl std::fmt::Debug for DriftPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DriftPolicy::Refuse => "Refuse",
            DriftPolicy::Ask(_) => "Ask",
            DriftPolicy::Accept => "Accept",
        })
    }
}

/// Decides whether a drifted tool is taken ([`DriftPolicy::Ask`]); an async closure
/// `|drift: ToolDrift| async { … }` is one.
pub trait DriftHandler: Send + Sync + 'static {
    /// Whether to take the tool as it is now listed (and pin it anew).
    fn decide(&self, drift: ToolDrift) -> BoxFuture<'static, bool>;
}

impl<F, Fut> DriftHandler for F
where
    F: Fn(ToolDrift) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = bool> + Send + 'static,
{
    fn decide(&self, drift: ToolDrift) -> BoxFuture<'static, bool> {
        Box::pin(self(drift))
    }
}

/// A tool whose listing does not match its pin.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolDrift {
    /// The server's name.
    pub server: String,
    /// The tool's name as the server lists it.
    pub tool: String,
    /// Whether it changed or is new.
    pub kind: DriftKind,
    /// A unified diff of the pinned definition and the listed one (pretty JSON; for a new tool, the
    /// whole definition as added lines), with control characters escaped so that a terminal shows
    /// them instead of obeying them, cut to 4000 characters.
    pub diff: String,
}

/// How a listed tool differs from the pins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DriftKind {
    /// Its definition changed since it was pinned.
    Changed,
    /// The server did not list it when it was pinned.
    Added,
}

impl ToolDrift {
    /// Why a refused drift left its tool out, as [`McpClient::left_out`](super::McpClient::left_out)
    /// says it.
    fn refusal(&self) -> String {
        match self.kind {
            DriftKind::Changed => {
                "its definition changed since it was pinned, and the drift policy \
                                   did not accept the change"
                    .to_owned()
            }
            DriftKind::Added => {
                "it is new on a server whose tools are pinned, and the drift policy \
                                 did not accept it"
                    .to_owned()
            }
        }
    }
}

impl std::fmt::Display for ToolDrift {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match self.kind {
            DriftKind::Changed => "changed since it was pinned",
            DriftKind::Added => "is new since the server's tools were pinned",
        };
        write!(
            f,
            "MCP server `{}`: tool `{}` {what}:\n{}",
            escaped(&self.server),
            escaped(&self.tool),
            self.diff
        )
    }
}

/// What one file keeps: each server's pins, by its name.
#[derive(Default, Serialize, Deserialize)]
struct Pinned {
    #[serde(default)]
    servers: BTreeMap<String, BTreeMap<String, Pin>>,
}

#[derive(Serialize, Deserialize)]
struct Pin {
    sha256: String,
    /// What was pinned, so a drift can be shown as a diff.
    definition: Value,
}

/// The parts of a listed tool the model is told, or that decide what it sends.
fn definition(tool: &Tool) -> Value {
    let listed = serde_json::to_value(tool).unwrap_or_default();
    let mut definition = serde_json::Map::new();
    for key in [
        "name",
        "title",
        "description",
        "inputSchema",
        "outputSchema",
        "annotations",
    ] {
        if let Some(value) = listed.get(key).filter(|value| !value.is_null()) {
            definition.insert(key.to_owned(), value.clone());
        }
    }
    Value::Object(definition)
}

/// The SHA-256 of `definition` written canonically, in hex.
fn fingerprint(definition: &Value) -> String {
    let digest = Sha256::digest(crate::agent::canonical_json(definition));
    digest.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The diff from `before` (none: a new tool) to `after`, escaped and bounded.
fn diff(before: Option<&Value>, after: &Value) -> String {
    let pretty = |value: &Value| serde_json::to_string_pretty(value).unwrap_or_default() + "\n";
    let before = before.map(pretty).unwrap_or_default();
    let after = pretty(after);
    let text = similar::TextDiff::from_lines(&before, &after)
        .unified_diff()
        .context_radius(2)
        .header("pinned", "listed")
        .to_string();
    let text = escaped(&text);
    match text.char_indices().nth(MAX_DIFF_CHARS) {
        Some((end, _)) => format!(
            "{}\n… ({} more characters of the diff)",
            &text[..end],
            text[end..].chars().count()
        ),
        None => text,
    }
}

/// `text` with every control character but a line break written as `\u{…}`, so a terminal shows it.
fn escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() && c != '\n' {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(description: &str) -> Tool {
        serde_json::from_value(serde_json::json!({
            "name": "t",
            "description": description,
            "inputSchema": {"type": "object", "properties": {"a": {"type": "string"}}},
        }))
        .unwrap()
    }

    #[test]
    fn a_pin_ignores_key_order_and_sees_any_change() {
        let one = tool("Add.");
        let mut reordered = serde_json::to_value(&one).unwrap();
        let object = reordered.as_object_mut().unwrap();
        let schema = object.remove("inputSchema").unwrap();
        object.insert("inputSchema".into(), schema);
        let reordered: Tool = serde_json::from_value(reordered).unwrap();
        assert_eq!(
            fingerprint(&definition(&one)),
            fingerprint(&definition(&reordered))
        );
        assert_ne!(
            fingerprint(&definition(&one)),
            fingerprint(&definition(&tool("Add!")))
        );
    }

    #[test]
    fn a_diff_shows_escape_sequences_instead_of_sending_them() {
        let shown = diff(
            Some(&definition(&tool("Add."))),
            &definition(&tool("Add.\u{9b}2J")),
        );
        assert!(
            !shown.chars().any(|c| c.is_control() && c != '\n'),
            "{shown}"
        );
        assert!(shown.contains("-  \"description\": \"Add.\""), "{shown}");
        assert!(shown.contains("\\u{9b}2J"), "{shown}");
        let long = diff(None, &definition(&tool(&"x".repeat(10_000))));
        assert!(
            long.chars().count() < MAX_DIFF_CHARS + 100,
            "{}",
            long.len()
        );
        assert!(long.ends_with("more characters of the diff)"), "{long}");
    }
}
