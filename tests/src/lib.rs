//! Shared by the integration tests and the test binaries: [`Notes`], an in-memory notes store whose tools
//! are methods (`#[tools]`), with a prefix taken as `State<T>` from the store the call runs in.

use std::sync::Mutex;

use schemars::JsonSchema;
use serde::Deserialize;
use yiem_core::{
    tool,
    tool::{State, ToolContext},
    tools,
};

/// The notes of one agent.
#[derive(Default)]
pub struct Notes {
    notes: Mutex<Vec<String>>,
}

/// State of the store: what every listed note starts with.
pub struct Bullet(pub &'static str);

#[derive(Deserialize, JsonSchema)]
pub struct AddNote {
    /// The text of the note.
    pub text: String,
}

#[derive(Deserialize, JsonSchema)]
pub struct FindNotes {
    /// Text the notes must contain.
    pub containing: String,
}

#[tools]
impl Notes {
    /// Add a note; returns how many notes there are.
    #[tool(idempotent = false)]
    async fn add_note(&self, args: AddNote) -> String {
        let mut notes = self.notes.lock().unwrap_or_else(|e| e.into_inner());
        notes.push(args.text);
        format!("{} notes", notes.len())
    }

    /// List the notes, one per line.
    #[tool(parallel, read_only)]
    fn list_notes(&self, State(bullet): State<Bullet>) -> String {
        let notes = self.notes.lock().unwrap_or_else(|e| e.into_inner());
        notes
            .iter()
            .map(|note| format!("{}{note}", bullet.0))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The notes that contain a text.
    #[tool(name = "find-notes", parallel)]
    async fn find(&self, ctx: ToolContext, args: FindNotes) -> Result<String, String> {
        let notes = self.notes.lock().unwrap_or_else(|e| e.into_inner());
        let found: Vec<&str> = notes
            .iter()
            .filter(|note| note.contains(&args.containing))
            .map(String::as_str)
            .collect();
        if found.is_empty() {
            return Err(format!(
                "no note contains `{}` (call {})",
                args.containing,
                ctx.call_id()
            ));
        }
        Ok(found.join("\n"))
    }

    /// Panic, to show a panic in a method tool is that call's error result.
    #[tool]
    async fn break_notes(&self) -> String {
        panic!("the notes are broken")
    }

    /// How many notes there are (not a tool).
    pub fn len(&self) -> usize {
        self.notes.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether there are none (not a tool).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

pub mod catalog;
pub mod installed;
pub mod poll;
pub mod resumable;
pub mod rng;
pub mod updates;
pub mod venv;
