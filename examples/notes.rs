//! Tools with state: an in-memory notes store shared by several tools. Two agents (two stores) in one
//! process each get their own notes: the free `#[tool]` fns take the notes as `State<Notebook>`, and the
//! tools of an `Archive` instance are methods (`#[tools]`), registered in one call.
//!
//! Run it with `cargo run --example notes`.

use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use yiem_core::prelude::*;

/// The notes of one store, shared by every tool that takes `State<Notebook>`.
#[derive(Default)]
struct Notebook {
    notes: Mutex<Vec<String>>,
}

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    /// The text of the note.
    text: String,
}

/// Add a note; returns how many there are.
#[tool]
async fn add_note(State(book): State<Notebook>, args: AddArgs) -> String {
    let mut notes = book.notes.lock().unwrap();
    notes.push(args.text);
    format!("{} notes", notes.len())
}

/// List the notes, one per line.
#[tool(parallel, read_only)]
async fn list_notes(State(book): State<Notebook>) -> String {
    book.notes.lock().unwrap().join("\n")
}

#[derive(Deserialize, JsonSchema)]
struct SearchArgs {
    /// Text the notes must contain.
    containing: String,
}

/// Find the notes that contain a text.
#[tool(parallel, read_only)]
async fn search_notes(State(book): State<Notebook>, args: SearchArgs) -> Result<String, String> {
    let notes = book.notes.lock().unwrap();
    let found: Vec<&str> = notes
        .iter()
        .map(String::as_str)
        .filter(|note| note.contains(&args.containing))
        .collect();
    if found.is_empty() {
        return Err(format!("no note contains `{}`", args.containing));
    }
    Ok(found.join("\n"))
}

/// Notes put away: its tools are methods of one instance.
struct Archive {
    label: &'static str,
    shelved: Mutex<Vec<String>>,
}

#[tools]
impl Archive {
    /// Move every note into the archive; returns how many moved.
    #[tool]
    async fn archive_notes(&self, State(book): State<Notebook>) -> String {
        let moved: Vec<String> = book.notes.lock().unwrap().drain(..).collect();
        let count = moved.len();
        self.shelved.lock().unwrap().extend(moved);
        format!("{count} notes moved to {}", self.label)
    }

    /// How many notes the archive holds.
    #[tool(read_only)]
    fn archived_count(&self) -> String {
        self.shelved.lock().unwrap().len().to_string()
    }
}

/// A store (one agent's tools) with its own notebook and archive.
fn agent_store(name: &str, label: &'static str) -> Result<ToolStore, Box<dyn std::error::Error>> {
    let store = ToolStore::new(name).with_state(Notebook::default());
    for tool in [add_note_tool(), list_notes_tool(), search_notes_tool()] {
        store.register(tool)?;
    }
    store.register_methods(Arc::new(Archive {
        label,
        shelved: Mutex::default(),
    }))?;
    // Everything a provider would refuse, and any state the store lacks, is found here, before any call.
    store.check()?;
    Ok(store)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let alice = agent_store("alice", "the blue box")?;
    let bob = agent_store("bob", "the attic")?;

    alice
        .execute("a1", "add_note", json!({"text": "buy milk"}))
        .await;
    alice
        .execute("a2", "add_note", json!({"text": "call mum"}))
        .await;
    bob.execute("b1", "add_note", json!({"text": "fix the bike"}))
        .await;

    println!(
        "alice: {}",
        alice
            .execute("a3", "list_notes", json!({}))
            .await
            .text_content()
    );
    println!(
        "bob: {}",
        bob.execute("b2", "list_notes", json!({}))
            .await
            .text_content()
    );
    let found = alice
        .execute("a4", "search_notes", json!({"containing": "bike"}))
        .await;
    println!("alice searches for bike: {}", found.text_content());
    let moved = alice.execute("a5", "archive_notes", json!({})).await;
    println!("alice: {}", moved.text_content());
    let counts = (
        alice
            .execute("a6", "archived_count", json!({}))
            .await
            .text_content(),
        bob.execute("b3", "archived_count", json!({}))
            .await
            .text_content(),
    );
    println!("archived: alice {}, bob {}", counts.0, counts.1);
    Ok(())
}
