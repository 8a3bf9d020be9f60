//! Showing a run as it happens: the reply as it streams, each tool call once its arguments are complete
//! (its name and a short form of the arguments), its progress, its result (a few lines, the rest folded),
//! errors in their own colour, and a status line with the elapsed time and the tokens used while the
//! model or a tool works.
//!
//! When stdout is not a terminal the output is plain, with no escape codes, no status line and no
//! result previews: the reply, `→ name {arguments}` per call, `✓ name` or `✗ name` per result, and
//! `[error: …]` for a failed reply.

use std::collections::HashSet;
use std::io::Write;
use std::time::{Duration, Instant};

use console::style;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::Value;
use yiem_core::{
    event::AgentEvent,
    exec::ToolCall,
    message::{AgentMessage, Usage},
    tool::AgentToolResult,
};

use super::safe;

/// How many lines of a tool's result a terminal shows before folding the rest.
pub const PREVIEW_LINES: usize = 4;

/// How long the short form of a call's arguments may be, in characters.
const SHORT_ARGUMENTS: usize = 80;

/// Writes a run's events to stdout (and the status line to stderr).
pub struct Renderer {
    terminal: bool,
    status: Option<ProgressBar>,
    /// When the current run started, if one is under way.
    started: Option<Instant>,
    /// Tokens of the current run's replies.
    usage: Usage,
    /// What the status line says the agent is doing.
    activity: String,
    /// Whether the last text written left its line open.
    line_open: bool,
    /// The streamed indices of the reply's tool calls, in order (the nth is the reply's nth call).
    call_indices: Vec<u64>,
    /// The ids of the calls shown already.
    shown: HashSet<String>,
}

impl Renderer {
    /// A renderer for a terminal (`terminal`) or for plain output.
    pub fn new(terminal: bool) -> Self {
        Renderer {
            terminal,
            status: None,
            started: None,
            usage: Usage::default(),
            activity: String::new(),
            line_open: false,
            call_indices: Vec::new(),
            shown: HashSet::new(),
        }
    }

    /// Shows `event`.
    pub fn event(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::AgentStart => {
                self.started = Some(Instant::now());
                self.usage = Usage::default();
                self.working("thinking");
            }
            AgentEvent::TurnStart => self.working("thinking"),
            AgentEvent::MessageStart { message } if is_assistant(message) => {
                // A resumed run's calls were shown before it paused: `shown` lasts until the next reply.
                self.call_indices.clear();
                self.shown.clear();
            }
            AgentEvent::MessageUpdate { message, delta } => self.delta(message, delta),
            AgentEvent::MessageEnd { message } => {
                if let AgentMessage::Assistant(reply) = &**message {
                    for call in reply.tool_calls() {
                        self.show_call(call);
                    }
                    self.end_line();
                    if let Some(error) = &reply.error {
                        self.write_line(&format!("[error: {}]", safe::block(error)), Tone::Error);
                    }
                    self.usage.input_tokens += reply.usage.input_tokens;
                    self.usage.output_tokens += reply.usage.output_tokens;
                    if reply.tool_calls().next().is_some() {
                        self.working("running tools");
                    }
                }
            }
            AgentEvent::ToolExecutionStart { call } => {
                self.show_call(call);
                self.working(&format!("running {}", safe::line(&call.name)));
            }
            AgentEvent::ToolExecutionUpdate { call, partial } => {
                let text = partial.text_content();
                let last = text.lines().rev().find(|line| !line.trim().is_empty());
                let activity = match last {
                    Some(line) => format!(
                        "{}: {}",
                        safe::line(&call.name),
                        cut(&safe::line(line.trim()), 60)
                    ),
                    None => format!("running {}", safe::line(&call.name)),
                };
                self.working(&activity);
            }
            AgentEvent::ToolExecutionEnd {
                call,
                result,
                is_error,
            } => self.show_result(call, result, *is_error),
            AgentEvent::AgentEnd { .. } => {
                self.hide_status();
                self.end_line();
                self.started = None;
            }
            _ => {}
        }
    }

    fn delta(&mut self, message: &AgentMessage, delta: &Value) {
        match delta["type"].as_str() {
            Some("text_delta") => {
                let text = delta["text"].as_str().unwrap_or_default();
                if text.is_empty() {
                    return;
                }
                self.hide_status();
                let text = safe::block(text);
                let mut out = std::io::stdout().lock();
                let _ = write!(out, "{text}");
                let _ = out.flush();
                self.line_open = !text.ends_with('\n');
            }
            Some("tool_call_start") => {
                self.call_indices.push(delta["index"].as_u64().unwrap_or(0));
                let name = delta["name"].as_str().unwrap_or_default();
                self.working(&format!("writing a call of {name}"));
            }
            Some("tool_call_end") => {
                let index = delta["index"].as_u64().unwrap_or(0);
                let Some(nth) = self.call_indices.iter().rposition(|&i| i == index) else {
                    return;
                };
                if let AgentMessage::Assistant(reply) = message
                    && let Some(call) = reply.tool_calls().nth(nth)
                {
                    self.show_call(call);
                }
            }
            _ => {}
        }
    }

    /// A line of the chat's own (a command's answer, a notice), dimmed in a terminal.
    /// Anything in `text` that came from a model, a tool or a server is shown escaped ([`safe::block`]),
    /// as in every other method here.
    pub fn note(&mut self, text: &str) {
        self.write_line(&safe::block(text), Tone::Note);
    }

    /// An error of the chat's own, in red in a terminal.
    pub fn error(&mut self, text: &str) {
        self.write_line(&safe::block(text), Tone::Error);
    }

    /// Text as it is (a table, say), but for what [`safe::block`] escapes.
    pub fn plain(&mut self, text: &str) {
        self.write_line(&safe::block(text.trim_end_matches('\n')), Tone::Plain);
    }

    /// A tool call, once: `→ name {arguments}` (a short form of the arguments in a terminal).
    pub fn show_call(&mut self, call: &ToolCall) {
        if !self.shown.insert(call.id.clone()) {
            return;
        }
        let line = if self.terminal {
            format!(
                "{} {}({})",
                style("→").cyan(),
                style(safe::line(&call.name)).bold(),
                short_arguments(&call.arguments)
            )
        } else {
            format!(
                "→ {} {}",
                safe::line(&call.name),
                safe::json(&call.arguments)
            )
        };
        self.write_line(&line, Tone::Plain);
    }

    fn show_result(&mut self, call: &ToolCall, result: &AgentToolResult, is_error: bool) {
        self.show_call(call);
        let mark = if is_error { "✗" } else { "✓" };
        let name = safe::line(&call.name);
        if !self.terminal {
            self.write_line(&format!("{mark} {name}"), Tone::Plain);
            return;
        }
        let mark = if is_error {
            style(mark).red().bold()
        } else {
            style(mark).green().bold()
        };
        self.write_line(&format!("{mark} {name}"), Tone::Plain);
        let text = result.text_content();
        let (shown, folded) = fold(&text, PREVIEW_LINES);
        let width = usize::from(console::Term::stdout().size().1).max(20) - 4;
        for line in shown {
            let line = safe::block(line);
            let line = console::truncate_str(&line, width, "…");
            let line = if is_error {
                style(format!("  │ {line}")).red().to_string()
            } else {
                style(format!("  │ {line}")).dim().to_string()
            };
            self.write_line(&line, Tone::Plain);
        }
        if folded > 0 {
            let more = if folded == 1 { "line" } else { "lines" };
            self.write_line(&format!("  … {folded} more {more}"), Tone::Note);
        }
        self.working("running tools");
    }

    /// Ends an open line of streamed text.
    fn end_line(&mut self) {
        if self.line_open {
            self.line_open = false;
            say!("");
        }
    }

    fn write_line(&mut self, text: &str, tone: Tone) {
        let visible = self.status.is_some();
        self.hide_status();
        self.end_line();
        let text = match (self.terminal, tone) {
            (false, _) | (true, Tone::Plain) => text.to_owned(),
            (true, Tone::Note) => style(text).dim().to_string(),
            (true, Tone::Error) => style(text).red().to_string(),
        };
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{text}");
        let _ = out.flush();
        drop(out);
        if visible {
            self.show_status();
        }
    }

    /// Says what the agent does now on the status line (a terminal during a run only).
    fn working(&mut self, activity: &str) {
        activity.clone_into(&mut self.activity);
        if !self.line_open {
            self.show_status();
        }
    }

    fn show_status(&mut self) {
        let (true, Some(started)) = (self.terminal, self.started) else {
            return;
        };
        let tokens = format!(
            "· {} tokens in, {} out · Ctrl-C stops",
            self.usage.input_tokens, self.usage.output_tokens
        );
        let status = self.status.get_or_insert_with(|| {
            let bar = ProgressBar::new_spinner()
                .with_elapsed(started.elapsed())
                .with_style(
                    ProgressStyle::with_template("{spinner:.cyan} {msg} · {elapsed} {prefix:.dim}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        status.set_prefix(tokens);
        status.set_message(self.activity.clone());
    }

    fn hide_status(&mut self) {
        if let Some(status) = self.status.take() {
            status.finish_and_clear();
        }
    }
}

#[derive(Clone, Copy)]
enum Tone {
    Plain,
    Note,
    Error,
}

fn is_assistant(message: &AgentMessage) -> bool {
    matches!(message, AgentMessage::Assistant(_))
}

/// The first `keep` lines of `text` and how many more there are (trailing blank lines not counted).
pub fn fold(text: &str, keep: usize) -> (Vec<&str>, usize) {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    let shown = lines.len().min(keep);
    (lines[..shown].to_vec(), lines.len() - shown)
}

/// A call's arguments in a line: a lone string argument as it is, else `key: value, …`, cut at
/// [`SHORT_ARGUMENTS`] characters, with what [`safe::line`] escapes escaped.
pub fn short_arguments(arguments: &Value) -> String {
    cut(&arguments_line(arguments, first_line), SHORT_ARGUMENTS)
}

/// The longest form of a call's arguments shown when a person is asked to approve it, in characters.
pub const APPROVAL_ARGUMENTS: usize = 4000;

/// A call's arguments as a person deciding on it sees them: as [`short_arguments`], but every line of
/// every string (a line break shown as `␊`), up to [`APPROVAL_ARGUMENTS`] characters, and past that a
/// note of how much is not shown. Nothing is hidden without saying so.
pub fn approval_arguments(arguments: &Value) -> String {
    let full = arguments_line(arguments, str::to_owned);
    match full.char_indices().nth(APPROVAL_ARGUMENTS) {
        None => full,
        Some((at, _)) => {
            let rest = full[at..].chars().count();
            format!(
                "{} [… {rest} more characters not shown: answer n, or e to see and edit them all]",
                &full[..at]
            )
        }
    }
}

fn arguments_line(arguments: &Value, text: fn(&str) -> String) -> String {
    let value = |value: &Value| match value {
        Value::String(string) => safe::line(&text(string)),
        other => safe::line(&other.to_string()),
    };
    match arguments {
        Value::Object(fields) if fields.len() == 1 => {
            fields.values().next().map(value).unwrap_or_default()
        }
        Value::Object(fields) => fields
            .iter()
            .map(|(key, field)| format!("{}: {}", safe::line(key), value(field)))
            .collect::<Vec<_>>()
            .join(", "),
        other => value(other),
    }
}

/// The first line of `text`, with `…` when there were more.
fn first_line(text: &str) -> String {
    let mut lines = text.lines();
    let first = lines.next().unwrap_or_default();
    if lines.next().is_some() {
        format!("{first}…")
    } else {
        first.to_owned()
    }
}

/// `text` cut to `limit` characters, ending in `…` when it was longer.
fn cut(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_long_result_is_folded_after_its_first_lines() {
        let text: String = (1..=124).map(|n| format!("line {n}\n")).collect();
        let (shown, folded) = fold(&text, PREVIEW_LINES);
        assert_eq!(shown, ["line 1", "line 2", "line 3", "line 4"]);
        assert_eq!(folded, 120);
        assert_eq!(fold("one\ntwo\n\n", 4), (vec!["one", "two"], 0));
        assert_eq!(fold("", 4), (vec![], 0));
    }

    #[test]
    fn arguments_in_short() {
        assert_eq!(
            short_arguments(&json!({"command": "sleep 600"})),
            "sleep 600"
        );
        assert_eq!(
            short_arguments(&json!({"path": "a.txt", "offset": 3})),
            "path: a.txt, offset: 3"
        );
        assert_eq!(
            short_arguments(&json!({"content": "one\ntwo", "path": "b"})),
            "content: one…, path: b"
        );
        let long = "x".repeat(500);
        assert_eq!(
            short_arguments(&json!({ "command": long })).chars().count(),
            SHORT_ARGUMENTS + 1
        );
        assert_eq!(short_arguments(&json!("{not json")), "{not json");
    }
}
