//! `yiem chat`: a conversation with an agent that has the built-in tools (and those of MCP servers), as
//! people use agent terminals. This module owns the session: it builds the agent, reads prompts and
//! commands, runs them, asks for approvals, and turns the last run's end into the exit status.
//!
//! In a terminal (stdin and stdout both are one) the prompt has line editing, history and multi-line
//! input ([`input`]), a status line shows while the model or a tool works ([`render`]), and Ctrl-C aborts
//! the run under way (every call still gets its result; at an approval question no call of the reply runs)
//! and, at the prompt, pressed twice, leaves, as Ctrl-D does. Without a configured model a banner says the
//! chat is offline, and a demo model ([`demo`]) calls a tool that asks for approval. Otherwise each line of stdin is a prompt or a command, and the output is plain.
//!
//! Exit status: 0, or 1 when the last run ended in a model error.

mod approval;
mod command;
mod demo;
mod input;
mod key;
mod mcp;
mod oauth;
mod question;
mod render;
pub(crate) mod safe;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use yiem_core::{
    agent::{Agent, AgentRun, AgentSettings, RunOutcome, RunStop, Signature},
    llm::Model,
    message::AgentMessage,
    store::ToolStore,
};

pub use mcp::McpServers;

use crate::{Failure, bad_input};
use approval::Approvals;
use command::ChatCommand;
use input::{Input, Line};
use render::Renderer;

/// What `yiem chat` was started with.
pub struct ChatOptions {
    /// The built-in tools, with their root.
    pub store: ToolStore,
    /// The system prompt.
    pub system: String,
    /// MCP servers whose tools join.
    pub servers: McpServers,
    /// `--approve TOOL`.
    pub approve: Vec<String>,
    /// `--allow TOOL`.
    pub allow: Vec<String>,
    /// `--resume FILE`.
    pub resume: Option<PathBuf>,
    /// `--code-mode`: the model gets `run_code` (see `yiem_core::code`).
    pub code_mode: bool,
    /// `--tool-model DIR`: `search_tools` ranks by meaning too, with this sentence-embedding model.
    pub tool_model: Option<PathBuf>,
}

/// Runs the chat until the input ends or the person leaves.
pub fn chat(options: ChatOptions) -> Result<(), Failure> {
    // The provider comes from the environment (see `yiem_core::llm::model_from_env`); offline by default.
    let configured = yiem_core::llm::model_from_env()
        .map_err(|error| bad_input(format!("the model is misconfigured: {error}")))?;
    let store = options.store;
    let runtime = crate::runtime()?;
    let search = match &options.tool_model {
        Some(folder) => yiem_core::catalog::ToolSearch::new(
            crate::tools_search::model(folder, "--tool-model")?
                .on_fallback(|fallback| say_err!("[{}]", safe::line(&fallback.to_string()))),
        ),
        None => yiem_core::catalog::ToolSearch::bm25(),
    };
    let (mcp_clients, mcp_tools) = options.servers.connect(&runtime, &store)?;
    mcp::defer_when_large(&store, &mcp_clients, &mcp_tools, &search);
    if let Some(selected) = &configured {
        // A tool the provider cannot take would fail every request: it is left out, and said so.
        for tool in store.tools() {
            if let Err(error) = tool.definition(selected.dialect) {
                say_err!(
                    "[{} left out: {}]",
                    safe::line(tool.name()),
                    safe::line(&error.to_string())
                );
                store.remove(tool.name());
            }
        }
    }
    // Every tool that is not the program's own (an MCP server's, including one a server adds later with
    // `list_changed`) asks unless it says it only reads: the policy knows the program's own tools.
    let own_tools = store
        .names()
        .into_iter()
        .filter(|name| !mcp_tools.contains(name))
        .collect();
    for (flag, names) in [("--approve", &options.approve), ("--allow", &options.allow)] {
        if let Some(unknown) = names
            .iter()
            .find(|name| store.get(name).is_none() && !(flag == "--allow" && *name == "all"))
        {
            return Err(bad_input(format!(
                "{flag} {unknown}: there is no tool `{unknown}`; the tools are: {}",
                store.names().join(", ")
            )));
        }
    }
    let approvals = Approvals::new(options.approve, options.allow, own_tools);
    let (model, description): (Arc<dyn Model>, String) = match configured {
        Some(selected) => {
            say_err!("[{}]", safe::line(&selected.description));
            (selected.model, selected.description)
        }
        None => {
            say_err!("{}", demo::BANNER);
            (
                Arc::new(demo::model(store.names().join(", "))),
                "offline: a scripted demo model (set YIEM_PROVIDER to chat with a real one)"
                    .to_owned(),
            )
        }
    };
    let terminal = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let input = if terminal {
        Input::terminal(input::history_path()).map_err(Failure::Internal)?
    } else {
        Input::piped()
    };
    let renderer = Arc::new(Mutex::new(Renderer::new(terminal)));
    let parts = AgentParts {
        store,
        system: options.system,
        approvals,
        renderer: Arc::clone(&renderer),
        code_mode: options.code_mode,
    };
    let agent = parts.agent(model, None);
    let mut session = Session {
        watched: Arc::new(Mutex::new(agent.clone())),
        agent,
        runtime,
        input,
        renderer,
        parts,
        model: description,
        last_failed: false,
    };
    session.watch_interrupts()?;
    if let Some(file) = options.resume {
        session.load(&file).map_err(bad_input)?;
    }
    session.run();
    if session.last_failed {
        return Err(Failure::Internal(
            "the last run ended in a model error".into(),
        ));
    }
    Ok(())
}

/// What every agent of the session is built from (a `/model` switch builds another).
struct AgentParts {
    store: ToolStore,
    system: String,
    approvals: Approvals,
    renderer: Arc<Mutex<Renderer>>,
    code_mode: bool,
}

impl AgentParts {
    /// An agent on `model`, going on with `run` if given, its events shown by the renderer.
    fn agent(&self, model: Arc<dyn Model>, run: Option<AgentRun>) -> Agent {
        let mut builder = Agent::builder()
            .system_prompt(self.system.clone())
            .tools(self.store.clone())
            .approval_policy(self.approvals.policy())
            .shared_model(model);
        if self.code_mode {
            builder = builder.code_mode(yiem_core::code::CodeMode::new());
        }
        if let Some(run) = run {
            builder = builder.run(run);
        }
        let agent = builder.build();
        let sink = Arc::clone(&self.renderer);
        agent.on_event(move |event| lock(&sink).event(event));
        agent
    }
}

struct Session {
    agent: Agent,
    /// The agent Ctrl-C aborts (the current one, after a `/model` switch too).
    watched: Arc<Mutex<Agent>>,
    runtime: tokio::runtime::Runtime,
    input: Input,
    renderer: Arc<Mutex<Renderer>>,
    parts: AgentParts,
    /// The model, in words.
    model: String,
    /// Whether the last run ended in a model error.
    last_failed: bool,
}

fn lock(renderer: &Mutex<Renderer>) -> MutexGuard<'_, Renderer> {
    renderer.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Session {
    fn out(&self) -> MutexGuard<'_, Renderer> {
        lock(&self.renderer)
    }

    /// Ctrl-C (SIGINT) during a run aborts it. With no run under way it ends the program when the input is
    /// a pipe; a terminal's line editor reads Ctrl-C as a key at its prompts, and a signal between them
    /// (as a run ends) is ignored.
    fn watch_interrupts(&self) -> Result<(), Failure> {
        let watched = Arc::clone(&self.watched);
        let renderer = Arc::clone(&self.renderer);
        let exit_when_idle = !self.input.is_terminal();
        // The handler is in place before the first prompt: the line editor saves the SIGINT action when a
        // prompt starts and puts it back when the prompt ends, so a handler registered during a prompt (by
        // a task polled late) would be undone, and the next Ctrl-C would end the program.
        let mut interrupts = {
            let _runtime = self.runtime.enter();
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
                .map_err(|error| Failure::Internal(format!("cannot handle Ctrl-C: {error}")))?
        };
        self.runtime.spawn(async move {
            while interrupts.recv().await.is_some() {
                let agent = watched
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone();
                if agent.is_running() {
                    agent.abort();
                    lock(&renderer).note("[interrupted: stopping the run]");
                } else if exit_when_idle {
                    crate::telemetry::shutdown();
                    std::process::exit(130);
                }
            }
        });
        Ok(())
    }

    /// Reads and handles lines until the input ends or `/exit`.
    fn run(&mut self) {
        let terminal = self.input.is_terminal();
        if terminal {
            self.out()
                .note("yiem chat · /help for commands · Ctrl-C stops a run · Ctrl-D leaves");
        }
        let mut interrupted = false;
        loop {
            let line = match self.input.prompt("> ") {
                Line::Text(line) => line,
                Line::Interrupted if interrupted => break,
                Line::Interrupted => {
                    interrupted = true;
                    self.out().note("[press Ctrl-C again or Ctrl-D to leave]");
                    continue;
                }
                Line::End => break,
            };
            interrupted = false;
            if line.trim().is_empty() {
                continue;
            }
            match command::parse(&line) {
                None => {
                    let outcome = self
                        .runtime
                        .block_on(self.agent.prompt(command::prompt_text(&line)));
                    self.finish(outcome);
                }
                Some(Err(message)) => self.out().error(&message),
                Some(Ok(ChatCommand::Exit)) => break,
                Some(Ok(command)) => self.command(command),
            }
        }
    }

    fn command(&mut self, command: ChatCommand) {
        match command {
            ChatCommand::Help => self.out().plain(command::HELP),
            ChatCommand::Tools => {
                let table = crate::table(&self.parts.store.tools());
                self.out().plain(&table);
            }
            ChatCommand::Model(None) => {
                let line = format!("[model: {}]", self.model);
                self.out().note(&line);
            }
            ChatCommand::Model(Some(name)) => match self.switch_model(&name) {
                Ok(()) => {
                    let line = format!("[model: {}]", self.model);
                    self.out().note(&line);
                }
                Err(error) => self.out().error(&error),
            },
            ChatCommand::Reset => {
                let run = AgentRun::new(self.parts.system.clone(), Vec::new());
                match self.agent.restore(run) {
                    Ok(()) => self.out().note("[a new conversation]"),
                    Err(error) => self.out().error(&error.to_string()),
                }
            }
            ChatCommand::Save(file) => {
                let note = key::run_key().and_then(|key| {
                    let json = self.agent.run_state().to_json_signed(&key);
                    std::fs::write(&file, json)
                        .map_err(|error| format!("cannot write {}: {error}", file.display()))
                });
                let note = match note {
                    Ok(()) => Ok(format!(
                        "[saved {} messages to {}]",
                        self.agent.messages().len(),
                        file.display()
                    )),
                    Err(error) => Err(error),
                };
                match note {
                    Ok(note) => self.out().note(&note),
                    Err(error) => self.out().error(&error),
                }
            }
            ChatCommand::Load(file) => {
                if let Err(error) = self.load(&file) {
                    self.out().error(&error);
                }
            }
            ChatCommand::Exit => {}
        }
    }

    /// Talks to the provider's model `name` from now on, the conversation kept.
    fn switch_model(&mut self, name: &str) -> Result<(), String> {
        let selected = yiem_core::llm::model_from_lookup(|variable| match variable {
            "YIEM_MODEL" => Some(name.to_owned()),
            other => std::env::var(other).ok(),
        })
        .map_err(|error| format!("/model {name}: {error}"))?
        .ok_or_else(|| {
            "/model NAME needs a provider: set YIEM_PROVIDER (or YIEM_BASE_URL) and its key"
                .to_owned()
        })?;
        self.agent = self
            .parts
            .agent(selected.model, Some(self.agent.run_state()));
        *self.watched.lock().unwrap_or_else(PoisonError::into_inner) = self.agent.clone();
        self.model = selected.description;
        Ok(())
    }

    /// Continues the conversation saved in `file`: shows where it stopped, and asks for the approvals it
    /// waits for.
    fn load(&mut self, file: &Path) -> Result<(), String> {
        let text = std::fs::read_to_string(file)
            .map_err(|error| format!("cannot read {}: {error}", file.display()))?;
        let (run, signature) = AgentRun::from_json_verified(&text, &key::run_key()?)
            .map_err(|error| format!("{} is not a saved chat: {error}", file.display()))?;
        let messages = run.messages().len();
        self.agent.restore(run).map_err(|error| error.to_string())?;
        // What it waits for, as this chat's policy asks (a run read without a valid tag asks again).
        let stopped = self.agent.run_state().stopped();
        let last = self
            .agent
            .messages()
            .iter()
            .rev()
            .find_map(|message| match message {
                AgentMessage::Assistant(reply) if !reply.text_content().is_empty() => {
                    Some(reply.text_content())
                }
                _ => None,
            });
        let mut out = self.out();
        out.note(&format!(
            "[loaded {messages} messages from {}]",
            file.display()
        ));
        let unsigned = match signature {
            Signature::Valid => None,
            Signature::Missing => Some("carries no signature of yours"),
            _ => Some("was changed since you saved it (or saved by someone else)"),
        };
        if let Some(why) = unsigned {
            out.note(&format!(
                "[{} {why}: nothing in it approves a call; its calls are asked again]",
                file.display()
            ));
        }
        if let Some(last) = last {
            let (lines, folded) = render::fold(&last, render::PREVIEW_LINES);
            out.note(&format!(
                "[last reply: {}{}]",
                lines.join(" / "),
                if folded > 0 { " …" } else { "" }
            ));
        }
        drop(out);
        match stopped {
            Some(RunStop::AwaitingApproval { pending }) => {
                let decisions =
                    self.parts
                        .approvals
                        .ask(&mut self.input, &mut lock(&self.renderer), &pending);
                match decisions {
                    Some(decisions) => self.resume(decisions),
                    None => self.stop_waiting(),
                }
            }
            Some(RunStop::AwaitingAnswer { questions }) => {
                if let Some(outcome) = questions.first().and_then(|first| self.answered(first)) {
                    self.finish(outcome);
                }
            }
            Some(stop) if stop.is_resumable() => {
                self.out()
                    .note("[the run had stopped before its end: send a prompt to go on]");
            }
            Some(_) => {}
            // Saved in the middle of a step (a batch approved and about to run, say): it goes on.
            None => self.resume(Vec::new()),
        }
        Ok(())
    }

    /// Asks `question` until the run takes the answer (one that does not fit is refused with the field
    /// named, and asked again); what the run then did, or `None` when it could not go on (said).
    fn answered(&mut self, question: &yiem_core::agent::PendingQuestion) -> Option<RunOutcome> {
        loop {
            let answer = question::ask(&mut self.input, &mut lock(&self.renderer), question);
            let answering = self.agent.answer(&question.call_id, &question.key, answer);
            match self.runtime.block_on(answering) {
                Ok(outcome) => return Some(outcome),
                Err(error @ yiem_core::agent::ResumeError::InvalidAnswer { .. }) => {
                    self.out().error(&format!("{error}; answer again"));
                }
                Err(error) => {
                    self.out().error(&format!("cannot resume: {error}"));
                    return None;
                }
            }
        }
    }

    /// Ctrl-C at an approval question stops the run, as the banner says: no call of the reply runs (each
    /// gets a result saying so, which the model reads with the next prompt).
    fn stop_waiting(&mut self) {
        let mut run = self.agent.run_state();
        run.give_up_waiting("the user stopped the run (Ctrl-C) before this call was approved");
        self.last_failed = false;
        match self.agent.restore(run) {
            Ok(()) => self
                .out()
                .note("[run stopped: no call of this reply ran; the next prompt goes on]"),
            Err(error) => self.out().error(&format!("cannot stop the run: {error}")),
        }
    }

    fn resume(&mut self, decisions: Vec<(String, yiem_core::agent::Decision)>) {
        match self.runtime.block_on(self.agent.resume(decisions)) {
            Ok(outcome) => self.finish(outcome),
            Err(error) => self.out().error(&format!("cannot resume: {error}")),
        }
    }

    /// After a run stopped: asks for the approvals it waits for and resumes, until it stops otherwise;
    /// says why it stopped when it did not finish.
    fn finish(&mut self, mut outcome: RunOutcome) {
        loop {
            let pending = outcome.pending_approvals().to_vec();
            let questions = outcome.pending_questions().to_vec();
            let next = if !pending.is_empty() {
                let decisions =
                    self.parts
                        .approvals
                        .ask(&mut self.input, &mut lock(&self.renderer), &pending);
                let Some(decisions) = decisions else {
                    self.stop_waiting();
                    return;
                };
                self.runtime.block_on(self.agent.resume(decisions))
            } else if let Some(question) = questions.first() {
                // One question at a time; the run goes on once the last has its answer.
                match self.answered(question) {
                    Some(answered) => Ok(answered),
                    None => return,
                }
            } else {
                break;
            };
            outcome = match next {
                Ok(outcome) => outcome,
                Err(error) => {
                    self.out().error(&format!("cannot resume: {error}"));
                    return;
                }
            };
        }
        self.last_failed = matches!(outcome.stop, RunStop::Error { .. });
        let note = match &outcome.stop {
            RunStop::Aborted => {
                Some("[run aborted: every call has its result; the next prompt goes on]".to_owned())
            }
            RunStop::TurnLimit { turns } => Some(format!("[stopped after {turns} model calls]")),
            RunStop::UsageLimit { detail, .. } => Some(format!("[stopped: {detail}]")),
            _ => None,
        };
        if let Some(note) = note {
            self.out().note(&note);
        }
    }
}
