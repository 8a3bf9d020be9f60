//! An [`Embedder`] that is another program (`yiem tools search --embed-command CMD`), so any model can
//! rank tools by meaning. The program speaks JSON lines on its stdin and stdout:
//!
//! - yiem writes one request a line: `{"texts": ["...", ...]}` (at most 64 texts: a batch of tools when
//!   the index is built, then one query at a time);
//! - the program answers each request with one line: `{"vectors": [[0.1, ...], ...]}`, one vector per
//!   text, in order, all of the same length; or `{"error": "why"}` for a request it cannot answer.
//!
//! Its stderr is yiem's. An answer must come within the timeout (`--embed-timeout`); a program that
//! exits, hangs, or answers with something else is stopped, and the search falls back to words alone
//! with a warning on stderr.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Mutex;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::Duration;

use serde_json::{Value, json};
use yiem_core::catalog::{EmbedError, Embedder};

use crate::{Failure, bad_input, command_words};

/// The longest answer line read, in bytes: 64 vectors of 4,096 numbers are about 5 MB.
const MAX_ANSWER: u64 = 64 << 20;

/// Why an answer did not come: the program closed its output (it exited, most likely).
const CLOSED: &str = "it closed its output";

/// A running embedder program, or why it stopped.
pub(crate) struct CommandEmbedder {
    /// The command line, for messages.
    command: String,
    timeout: Duration,
    state: Mutex<State>,
}

enum State {
    Running(Process),
    Failed(String),
}

/// The program and the thread that writes its requests and reads its answers (so that a program that
/// neither reads nor answers cannot block the search beyond the timeout).
struct Process {
    child: Child,
    requests: Sender<String>,
    answers: Receiver<Result<String, String>>,
}

impl CommandEmbedder {
    /// Starts `line` (split as a shell would: quote a path with spaces).
    pub(crate) fn spawn(line: &str, timeout: Duration) -> Result<Self, Failure> {
        let (program, arguments) = command_words(
            "--embed-command",
            line,
            "node embed.js",
            "node '/my dir/embed.js'",
        )?;
        let mut child = Command::new(&program)
            .args(&arguments)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|error| {
                bad_input(format!(
                    "--embed-command: cannot start `{program}`: {error}"
                ))
            })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Failure::Internal(
                "the embedder's stdin and stdout were not piped".into(),
            ));
        };
        let (requests, asked) = mpsc::channel();
        let (answered, answers) = mpsc::channel();
        std::thread::Builder::new()
            .name("yiem-embedder".into())
            .spawn(move || converse(stdin, stdout, asked, answered))
            .map_err(|error| Failure::Internal(format!("cannot start a thread: {error}")))?;
        Ok(CommandEmbedder {
            command: line.to_owned(),
            timeout,
            state: Mutex::new(State::Running(Process {
                child,
                requests,
                answers,
            })),
        })
    }
}

/// Writes each request to the program and reads its answer, until the requests or the program end.
fn converse(
    mut stdin: ChildStdin,
    stdout: ChildStdout,
    asked: Receiver<String>,
    answered: Sender<Result<String, String>>,
) {
    let mut reader = BufReader::new(stdout);
    for request in asked {
        let answer = (|| {
            stdin
                .write_all(request.as_bytes())
                .and_then(|()| stdin.write_all(b"\n"))
                .and_then(|()| stdin.flush())
                .map_err(|error| format!("cannot write to it: {error}"))?;
            let mut line = Vec::new();
            (&mut reader)
                .take(MAX_ANSWER)
                .read_until(b'\n', &mut line)
                .map_err(|error| format!("cannot read its answer: {error}"))?;
            if line.is_empty() {
                return Err(CLOSED.to_owned());
            }
            if line.last() != Some(&b'\n') {
                return Err(if line.len() as u64 >= MAX_ANSWER {
                    format!("its answer is longer than {} MB", MAX_ANSWER >> 20)
                } else {
                    format!("{CLOSED} in the middle of an answer")
                });
            }
            String::from_utf8(line).map_err(|_| "its answer is not UTF-8".to_owned())
        })();
        let failed = answer.is_err();
        if answered.send(answer).is_err() || failed {
            return;
        }
    }
}

impl Process {
    /// Stops the program (it may be hung) and says how it ended. One that closed its output is given
    /// a moment to exit on its own, so that its exit status can be told.
    fn stop(&mut self, closed: bool) -> String {
        if closed {
            for _ in 0..100 {
                if let Ok(Some(status)) = self.child.try_wait() {
                    return format!(" (it exited with {status})");
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        let _ = self.child.kill();
        match self.child.wait() {
            Ok(status) if status.code().is_some() => format!(" (it exited with {status})"),
            _ => String::new(),
        }
    }
}

impl Drop for CommandEmbedder {
    fn drop(&mut self) {
        let state = self
            .state
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let State::Running(process) = state {
            process.stop(false);
        }
    }
}

impl Embedder for CommandEmbedder {
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let process = match &mut *state {
            State::Running(process) => process,
            State::Failed(reason) => return Err(EmbedError::failed(reason)),
        };
        let request = json!({ "texts": texts }).to_string();
        let answer = match process.requests.send(request) {
            Err(_) => Err("it stopped answering".to_owned()),
            Ok(()) => match process.answers.recv_timeout(self.timeout) {
                Ok(answer) => answer,
                Err(RecvTimeoutError::Timeout) => Err(format!(
                    "no answer within {} s (--embed-timeout)",
                    self.timeout.as_secs_f64()
                )),
                Err(RecvTimeoutError::Disconnected) => Err("it stopped answering".to_owned()),
            },
        };
        let vectors = answer.and_then(|line| vectors(&line));
        match vectors {
            Ok(Ok(vectors)) => Ok(vectors),
            // The program said why it could not embed these texts; it can still answer others.
            Ok(Err(reason)) => Err(EmbedError::failed(format!(
                "`{}` answered: {reason}",
                self.command
            ))),
            Err(reason) => {
                let ended = process.stop(reason.starts_with(CLOSED));
                let reason = format!("`{}`: {reason}{ended}", self.command);
                *state = State::Failed(reason.clone());
                Err(EmbedError::failed(reason))
            }
        }
    }
}

/// The vectors of an answer line, or the error the program reported (`Ok(Err)`), or why the line is
/// not an answer (`Err`).
fn vectors(line: &str) -> Result<Result<Vec<Vec<f32>>, String>, String> {
    let shown: String = line.trim().chars().take(80).collect();
    let not_an_answer = || {
        format!(
            "its answer is not {{\"vectors\": [[numbers], ...]}} or {{\"error\": \"...\"}}: {shown:?}"
        )
    };
    let value: Value = serde_json::from_str(line).map_err(|_| not_an_answer())?;
    if let Some(error) = value.get("error") {
        return Ok(Err(error
            .as_str()
            .map_or_else(|| error.to_string(), str::to_owned)));
    }
    let Some(list) = value.get("vectors").and_then(Value::as_array) else {
        return Err(not_an_answer());
    };
    list.iter()
        .map(|vector| {
            vector
                .as_array()
                .and_then(|numbers| {
                    numbers
                        .iter()
                        .map(|number| number.as_f64().map(|number| number as f32))
                        .collect::<Option<Vec<f32>>>()
                })
                .ok_or_else(not_an_answer)
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Ok)
}

#[cfg(test)]
mod tests {
    use super::vectors;

    #[test]
    fn answers_are_read_as_vectors_or_the_programs_error() {
        assert_eq!(
            vectors(r#"{"vectors": [[1, 0.5], []]}"#),
            Ok(Ok(vec![vec![1.0, 0.5], vec![]]))
        );
        assert_eq!(
            vectors(r#"{"error": "out of memory"}"#),
            Ok(Err("out of memory".into()))
        );
        assert!(
            vectors(r#"{"vectors": [["a"]]}"#)
                .unwrap_err()
                .starts_with("its answer is not")
        );
        assert!(vectors("hello").unwrap_err().ends_with("\"hello\""));
    }
}
