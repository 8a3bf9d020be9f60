//! Durable yiem agents on [Restate](https://restate.dev): an agent run that survives crashes, retries and
//! approvals that wait for days.
//!
//! [`DurableAgent`] is a Restate virtual object, `Agent`, keyed by conversation id. It performs the same
//! agent protocol as the in-process [`Agent`](yiem_core::agent::Agent) — the one drive loop
//! ([`drive`](yiem_core::agent::drive())) over the step machine of [`AgentRun`](yiem_core::agent::AgentRun),
//! its transitions and its events, in the same order — from the same
//! [`AgentConfig`](yiem_core::agent::AgentConfig) (tools, hooks, approval policy, limits, stop rules; the setters
//! are [`AgentSettings`](yiem_core::agent::AgentSettings)'s), but every model call and every tool call is a
//! journaled step: once Restate has acknowledged its result, a replay after a crash returns that result
//! instead of calling the model or the tool again. After every step the run is saved by appending: the
//! run's header and the step's new messages, so what a step writes does not grow with the conversation.
//!
//! # Handlers
//!
//! Through the ingress, `POST /Agent/{conversation}/{handler}` with a JSON body:
//!
//! | handler | body | what it does |
//! |---|---|---|
//! | `start` | `{"prompt": "..."}` | runs until the run stops; answers a [`RunReport`] |
//! | `steer` | `{"text": "..."}` | a message after the current turn, before the next model call |
//! | `follow_up` | `{"text": "..."}` | a message for when the run would finish |
//! | `approve` | [`ApproveRequest`] | answers the waiting calls; the run resumes |
//! | `abort` | none | stops the run at the next step boundary |
//! | `conversation` | none | the conversation, the stop reason, the waiting calls ([`ConversationView`]) |
//!
//! `start` is exclusive (prompts to one conversation queue; conversations run independently); the
//! others are shared, so they answer while a run goes on or waits.
//!
//! # Steps and crashes
//!
//! A step is one model call (`model 3`) or one tool call (`turn 3 tool get_weather call_1`). A batch runs
//! as in process: its parallel calls at once (each call's run a journaled step of its own; the steps
//! hand their results to Restate in call order, since restate-sdk 0.13 cannot wait for two
//! acknowledgements at once), a batch with a sequential tool one call after another, under the agent's concurrency
//! cap, which holds across the run; conversations never wait for each other. When the service dies,
//! Restate retries the
//! invocation on a healthy process: journaled steps are replayed from the journal, and the run goes on
//! from the first step without a result. A step is at-least-once: a process killed after a tool's side
//! effect but before Restate acknowledged the step's result runs that call again, so tools with effects
//! outside the process should make them idempotent by [`ToolContext::call_id`](yiem_core::tool::ToolContext).
//! A failed model call is retried by [`model_retry`](DurableAgentBuilder::model_retry); a tool's error
//! result is a result the model reads, never a retry.
//!
//! Events are at-least-once too: a replay emits again the events of the steps it replays (the run's start,
//! the prompt, each replayed call's start and end; not the model's stream, which is not run again), so an
//! event sink of a durable agent that must count each event once keys it by the call id and the turn.
//! (restate-sdk 0.13 tells a service whether it is replaying only through a tracing span field, which is
//! not a public API, so the runner cannot hold the events back.)
//!
//! # Traces
//!
//! Each attempt of a run — its start, a replay after a crash, a resumption after a wait for approval —
//! is an [`invoke_agent`](yiem_core::telemetry::invoke_agent) span (attributes per
//! [`yiem_core::telemetry`]), with the run's `chat` and `execute_tool` spans below it. With the `otel`
//! feature a run is one trace, whichever processes ran it: the first attempt journals its span's W3C
//! trace context as the step `trace`, and every later attempt makes its `invoke_agent` a child of that
//! root (`yiem_core::otel::set_remote_parent`). The step is journaled without the feature too, so a
//! deployment can turn it on or off between attempts; a run started by a version of yiem-restate without
//! that step cannot be replayed by this one (let runs finish before upgrading).
//!
//! # Approvals
//!
//! A call that needs approval suspends the run on an awakeable: no process holds it, for as long as it
//! takes. `approve` resumes it, in whatever process Restate sends it to.
//!
//! ```no_run
//! use restate_sdk::prelude::*;
//! use yiem_core::{agent::AgentSettings, llm::{ScriptedModel, ScriptedTurn}, store::ToolStore};
//! use yiem_restate::DurableAgent;
//!
//! # async fn serve() {
//! let agent = DurableAgent::builder()
//!     .model(|_conversation| ScriptedModel::from_fn(|_| ScriptedTurn::text("hello")))
//!     .tools(ToolStore::new("demo"))
//!     .build();
//! HttpServer::new(agent.endpoint())
//!     .listen_and_serve("127.0.0.1:9080".parse().unwrap())
//!     .await;
//! # }
//! ```
//!
//! # Questions from tools
//!
//! Without an elicitation handler (`AgentSettings::elicitation`, which is asked inside the call's step), a
//! tool's question (`ToolContext::elicit`) suspends the run on an awakeable as an approval does, exactly
//! as the in-process `Agent` pauses on it: the call that asked is stopped at the question, the batch's
//! other calls finish (and are journaled), and the questions are a journaled step of their own. `answer`
//! resumes it with an answer per question, checked against the question's form; the calls that asked run
//! again from the start with their answers.
//!
#![doc = include_str!("../docs/durable.md")]

//!
//! # Code mode
//!
//! With the `code-mode` feature, a durable agent built with `.code_mode(CodeMode::new())` offers
//! `run_code` as the in-process agent does, from the same [`AgentConfig`](yiem_core::agent::AgentConfig): the
//! program's calls go through the same pipeline, approval policy and hooks. Each call the program makes
//! is a journaled step of its own (`turn 1 tool get_weather call_1/code/0`, observed as
//! [`StepKind::ProgramCall`]), and the program's result one more (`turn 1 tool run_code call_1`). The
//! program itself runs outside any step: after a crash it runs again from its start, and each call it
//! made before gets its journaled result instead of running again, so each call's effect happens once
//! (at least once, as for any step, if the process dies while the call runs). A call that needs
//! approval pauses the run on an awakeable like a direct call; `approve` with its program call id
//! (`call_1/code/2`) resumes it, and a denied call is an exception the program can catch.
//!
//! ```
//! # #[cfg(feature = "code-mode")] {
//! use yiem_core::code::CodeMode;
//! use yiem_core::{agent::AgentSettings, llm::{ScriptedModel, ScriptedTurn}, store::ToolStore};
//! use yiem_restate::DurableAgent;
//!
//! let agent = DurableAgent::builder()
//!     .model(|_conversation| ScriptedModel::from_fn(|_| ScriptedTurn::text("hello")))
//!     .tools(ToolStore::new("demo"))
//!     .code_mode(CodeMode::new())
//!     .build();
//! # let _ = agent;
//! # }
//! ```

//!
//! # MCP tasks
//!
//! With the `mcp` feature, an MCP server's tasks (SEP-2663) are durable: `mcp::RestateTaskStore`
//! keeps them in Restate for every replica of the server, and `mcp::DurableTasks` runs each as a
//! durable invocation (see the `mcp` module).

mod agent;
mod api;
mod driver;
mod inbox;
mod log;
#[cfg(feature = "mcp")]
pub mod mcp;
mod object;
mod step;
mod store;
mod trace;

pub use agent::{DurableAgent, DurableAgentBuilder};
pub use api::{
    AnswerRequest, ApproveRequest, CallAnswer, CallDecision, ConversationView, MessageRequest,
    PromptRequest, RunReport,
};
pub use inbox::AgentInbox;
pub use restate_sdk;
pub use restate_sdk::context::RunRetryPolicy;
pub use step::{StepDone, StepKind};
