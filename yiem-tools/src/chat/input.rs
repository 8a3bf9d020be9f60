//! What the person types: the prompt with line editing, history and multi-line input in a terminal
//! (`rustyline`), or one line of stdin at a time when stdin is not a terminal; and the answers to
//! questions asked mid-run (approvals).
//!
//! Multi-line input: end a line with `\` (the `\` is dropped) or press Alt-Enter, and go on typing on the
//! next line; Enter sends the whole text. The history is kept in `$YIEM_HISTORY` when that is set (empty:
//! no history), else in `yiem/history` under the user's data directory (`$XDG_DATA_HOME` or
//! `~/.local/share` on Linux).

use std::io::{Lines, StdinLock};
use std::path::PathBuf;

use rustyline::completion::Completer;
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::FileHistory;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{Cmd, Editor, EventHandler, Helper, KeyCode, KeyEvent, Modifiers};

/// What one read gave.
#[derive(Debug, PartialEq)]
pub enum Line {
    /// A line (or several, for multi-line input), without its final newline.
    Text(String),
    /// Ctrl-C at the prompt.
    Interrupted,
    /// Ctrl-D at an empty prompt, or the end of stdin.
    End,
}

/// Where lines come from.
pub enum Input {
    /// A person at a terminal.
    Terminal {
        /// The line editor.
        editor: Box<Editor<ChatHelper, FileHistory>>,
        /// The history file, if any.
        history: Option<PathBuf>,
    },
    /// A pipe or a file: one line at a time, nothing echoed.
    Piped(Lines<StdinLock<'static>>),
}

/// The history file: `$YIEM_HISTORY` (empty: none), else `yiem/history` in the user's data directory.
pub fn history_path() -> Option<PathBuf> {
    match std::env::var_os("YIEM_HISTORY") {
        Some(path) if path.is_empty() => None,
        Some(path) => Some(PathBuf::from(path)),
        None => dirs::data_dir().map(|dir| dir.join("yiem").join("history")),
    }
}

impl Input {
    /// Lines from stdin, read one by one.
    pub fn piped() -> Self {
        Input::Piped(std::io::stdin().lines())
    }

    /// The line editor, with the history at `history` loaded (a missing file is an empty history).
    pub fn terminal(history: Option<PathBuf>) -> Result<Self, String> {
        let config = rustyline::Config::builder()
            .auto_add_history(false)
            .history_ignore_space(true)
            .build();
        let mut editor = Editor::<ChatHelper, FileHistory>::with_config(config)
            .map_err(|error| format!("cannot set up the terminal: {error}"))?;
        editor.set_helper(Some(ChatHelper));
        editor.bind_sequence(
            KeyEvent(KeyCode::Enter, Modifiers::ALT),
            EventHandler::Simple(Cmd::Newline),
        );
        if let Some(path) = &history {
            if let Some(dir) = path.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            if path.exists()
                && let Err(error) = editor.load_history(path)
            {
                say_err!("[history {} not loaded: {error}]", path.display());
            }
        }
        Ok(Input::Terminal {
            editor: Box::new(editor),
            history,
        })
    }

    /// Reads the next prompt (shown as `prompt` in a terminal); a prompt from the terminal joins the
    /// history.
    pub fn prompt(&mut self, prompt: &str) -> Line {
        match self {
            Input::Terminal { editor, history } => {
                let line = match editor.readline(prompt) {
                    Ok(line) => joined(&line),
                    Err(error) => return ended(error),
                };
                if !line.trim().is_empty() {
                    let _ = editor.add_history_entry(line.as_str());
                    if let Some(path) = history
                        && let Err(error) = editor.append_history(path)
                    {
                        say_err!("[history not saved to {}: {error}]", path.display());
                        *history = None;
                    }
                }
                Line::Text(line)
            }
            Input::Piped(lines) => next_line(lines),
        }
    }

    /// Asks `question`, with `initial` as the editable answer in a terminal; a piped answer is the next
    /// line of stdin. Answers do not join the history.
    pub fn ask(&mut self, question: &str, initial: &str) -> Line {
        match self {
            Input::Terminal { editor, .. } => {
                match editor.readline_with_initial(question, (initial, "")) {
                    Ok(line) => Line::Text(joined(&line)),
                    Err(error) => ended(error),
                }
            }
            Input::Piped(lines) => {
                say_inline!("{question}");
                let line = next_line(lines);
                say!("");
                line
            }
        }
    }

    /// Whether a person is typing (the prompt is a line editor).
    pub fn is_terminal(&self) -> bool {
        matches!(self, Input::Terminal { .. })
    }
}

fn next_line(lines: &mut Lines<StdinLock<'static>>) -> Line {
    match lines.next() {
        Some(Ok(line)) => Line::Text(line),
        Some(Err(error)) => {
            say_err!("[cannot read stdin: {error}]");
            Line::End
        }
        None => Line::End,
    }
}

fn ended(error: ReadlineError) -> Line {
    match error {
        ReadlineError::Interrupted => Line::Interrupted,
        ReadlineError::Eof => Line::End,
        other => {
            say_err!("[cannot read the terminal: {other}]");
            Line::End
        }
    }
}

/// Multi-line input as typed: the `\` that ended a line is dropped.
fn joined(line: &str) -> String {
    line.replace("\\\n", "\n")
}

/// Completes `/` commands and keeps a line that ends in `\` open.
pub struct ChatHelper;

impl Completer for ChatHelper {
    type Candidate = String;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _: &rustyline::Context<'_>,
    ) -> rustyline::Result<(usize, Vec<String>)> {
        let typed = &line[..pos];
        if !typed.starts_with('/') || typed.contains(char::is_whitespace) {
            return Ok((0, Vec::new()));
        }
        let names = super::command::NAMES
            .iter()
            .filter(|name| name.starts_with(typed))
            .map(|name| (*name).to_owned())
            .collect();
        Ok((0, names))
    }
}

impl Hinter for ChatHelper {
    type Hint = String;
}

impl Highlighter for ChatHelper {}

impl Validator for ChatHelper {
    fn validate(&self, context: &mut ValidationContext) -> rustyline::Result<ValidationResult> {
        Ok(if context.input().ends_with('\\') {
            ValidationResult::Incomplete
        } else {
            ValidationResult::Valid(None)
        })
    }
}

impl Helper for ChatHelper {}

#[cfg(test)]
mod tests {
    #[test]
    fn a_trailing_backslash_joins_lines() {
        assert_eq!(super::joined("one\\\ntwo\\\nthree"), "one\ntwo\nthree");
        assert_eq!(super::joined("a \\ b"), "a \\ b");
    }
}
