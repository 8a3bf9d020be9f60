//! Lifecycle events ([`AgentEvent`]) and their delivery ([`EventBus`]): to sink callbacks, inline and
//! lossless, and to [`EventStream`]s, bounded and never blocking the executor.
//!
//! # Backpressure
//!
//! A sink registered with [`EventBus::on_event`] is called inline, in order, on the task that emits the
//! event: it sees every event and must be quick (hand the event to a channel of your own if it is not).
//! A stream from [`EventBus::subscribe`] buffers up to its capacity (default 1024 events). When a
//! subscriber falls that far behind, the oldest events it has not read are dropped for it — the executor
//! never waits for a slow reader — and [`EventStream::missed`] counts what was dropped (a `tracing` warning
//! says so too). Memory is bounded; delivery to a stream is best-effort.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::task::{Context, Poll};

use futures::Stream;
use serde_json::Value;
use tokio::sync::broadcast;

use crate::call::{ToolCall, ToolResultMessage};
use crate::message::{AgentMessage, AssistantMessage};
use crate::result::AgentToolResult;

/// Something that happened in an agent run or a tool batch.
///
/// Payloads are shared (`Arc`), not copied: emitting an event to any number of sinks and streams costs
/// reference counts, and a sink that wants to keep a message clones the `Arc`.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum AgentEvent {
    /// A run started.
    AgentStart,
    /// A turn (one model call and its tool calls) started.
    TurnStart,
    /// A message entered the conversation (streaming ones are updated, then ended).
    MessageStart {
        /// The message as it is now.
        message: Arc<AgentMessage>,
    },
    /// A streaming assistant message changed.
    MessageUpdate {
        /// The message so far.
        message: Arc<AgentMessage>,
        /// What was added, as the model streamed it.
        delta: Value,
    },
    /// A message is complete.
    MessageEnd {
        /// The final message.
        message: Arc<AgentMessage>,
    },
    /// A tool call is about to be prepared and run.
    ToolExecutionStart {
        /// The call.
        call: Arc<ToolCall>,
    },
    /// A running tool streamed a partial result.
    ToolExecutionUpdate {
        /// The call.
        call: Arc<ToolCall>,
        /// The partial result.
        partial: Arc<AgentToolResult>,
    },
    /// A tool call finished (successfully or not); exactly one per call.
    ToolExecutionEnd {
        /// The call.
        call: Arc<ToolCall>,
        /// The final result.
        result: Arc<AgentToolResult>,
        /// Whether it failed.
        is_error: bool,
    },
    /// A turn ended.
    TurnEnd {
        /// The assistant message of the turn.
        message: Arc<AssistantMessage>,
        /// The results of its tool calls.
        tool_results: Arc<[ToolResultMessage]>,
    },
    /// A run ended.
    AgentEnd {
        /// The messages the run added.
        messages: Arc<[AgentMessage]>,
    },
}

type Sink = Arc<dyn Fn(&AgentEvent) + Send + Sync>;

struct Bus {
    sinks: RwLock<Arc<[Sink]>>,
    /// How many sinks were registered (0: none): an [`Emitter`] whose snapshot is of another generation
    /// reads the sinks again.
    generation: AtomicU64,
    /// How many streams are alive (so an unobserved bus costs two atomic loads, and no lock).
    streams: Arc<AtomicUsize>,
    sender: broadcast::Sender<AgentEvent>,
}

/// Delivers events to sink callbacks and streams. Cloning it gives another handle to the same bus.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use yiem_core::event::{AgentEvent, EventBus};
///
/// let bus = EventBus::new();
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = seen.clone();
/// bus.on_event(move |event| sink.lock().unwrap().push(event.clone()));
/// bus.emit(AgentEvent::TurnStart);
/// assert_eq!(*seen.lock().unwrap(), [AgentEvent::TurnStart]);
/// ```
#[derive(Clone)]
pub struct EventBus {
    bus: Arc<Bus>,
}

impl Default for EventBus {
    fn default() -> Self {
        Self::new()
    }
}

impl EventBus {
    /// The default stream capacity, in events per subscriber.
    pub const DEFAULT_CAPACITY: usize = 1024;

    /// A bus whose streams buffer [`DEFAULT_CAPACITY`](Self::DEFAULT_CAPACITY) events.
    pub fn new() -> Self {
        Self::with_capacity(Self::DEFAULT_CAPACITY)
    }

    /// A bus whose streams buffer `capacity` events each (at least 1).
    pub fn with_capacity(capacity: usize) -> Self {
        let (sender, _) = broadcast::channel(capacity.max(1));
        EventBus {
            bus: Arc::new(Bus {
                sinks: RwLock::new(Arc::new([])),
                generation: AtomicU64::new(0),
                streams: Arc::default(),
                sender,
            }),
        }
    }

    /// Calls `sink` with every event, inline and in order. Keep it quick.
    pub fn on_event(&self, sink: impl Fn(&AgentEvent) + Send + Sync + 'static) {
        let mut sinks = self
            .bus
            .sinks
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut list = sinks.to_vec();
        list.push(Arc::new(sink));
        *sinks = list.into();
        // Still under the lock, so a snapshot pairs a list with its own generation.
        self.bus.generation.fetch_add(1, Ordering::Release);
    }

    /// Whether any sink is registered.
    fn has_sinks(&self) -> bool {
        self.bus.generation.load(Ordering::Acquire) > 0
    }

    /// The sinks registered so far, with their generation.
    fn sinks(&self) -> (Arc<[Sink]>, u64) {
        let sinks = self
            .bus
            .sinks
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        (
            Arc::clone(&sinks),
            self.bus.generation.load(Ordering::Acquire),
        )
    }

    /// An emitter for a batch: the sinks as they are now, re-read only if one is registered later.
    pub(crate) fn emitter(&self) -> Emitter {
        let (sinks, generation) = if self.has_sinks() {
            let (sinks, generation) = self.sinks();
            (Some(sinks), generation)
        } else {
            (None, 0)
        };
        Emitter {
            bus: self.clone(),
            sinks,
            generation,
        }
    }

    /// A stream of the events emitted from now on (see the module docs for what happens when it lags).
    pub fn subscribe(&self) -> EventStream {
        self.bus.streams.fetch_add(1, Ordering::AcqRel);
        EventStream::new(self.bus.sender.subscribe(), Arc::clone(&self.bus.streams))
    }

    /// Whether anyone listens; emitters skip building events nobody would see.
    pub fn is_observed(&self) -> bool {
        self.has_sinks() || self.bus.streams.load(Ordering::Acquire) > 0
    }

    /// Delivers `event` to every sink, then to every stream.
    pub fn emit(&self, event: AgentEvent) {
        if !self.is_observed() {
            return;
        }
        // A snapshot, so a sink may register another sink without deadlocking.
        if self.has_sinks() {
            self.deliver(&self.sinks().0, event);
        } else {
            self.deliver(&[], event);
        }
    }

    /// Delivers `event` to `sinks`, then to every stream.
    fn deliver(&self, sinks: &[Sink], event: AgentEvent) {
        for sink in sinks {
            // A panicking sink must not cost a call its end event, nor the batch its results.
            // The payload is read and dropped under a guard before the log line, whose fields are not
            // evaluated when nobody records it (a payload dropped there could panic again).
            if let Err(panic) = crate::guard::catch(|| sink(&event)) {
                tracing::error!(panic = %panic, "an event sink panicked");
            }
        }
        if self.bus.streams.load(Ordering::Acquire) > 0 {
            // An error only means every receiver went away meanwhile.
            let _ = self.bus.sender.send(event);
        }
    }
}

/// A batch's handle to its bus, holding a snapshot of the sinks: emitting through it takes no lock and
/// copies no list while no sink is registered meanwhile, and delivers exactly as [`EventBus::emit`] would.
#[derive(Clone)]
pub(crate) struct Emitter {
    bus: EventBus,
    /// `None` while no sink was registered (an empty `Arc` would cost an allocation per batch).
    sinks: Option<Arc<[Sink]>>,
    /// The bus's generation when `sinks` was read.
    generation: u64,
}

impl Emitter {
    /// Whether anyone listens; see [`EventBus::is_observed`].
    pub(crate) fn is_observed(&self) -> bool {
        self.bus.is_observed()
    }

    /// Delivers `event` as [`EventBus::emit`] does.
    pub(crate) fn emit(&self, event: AgentEvent) {
        // A sink registered since the snapshot bumped the generation: the bus reads the list again.
        if self.bus.bus.generation.load(Ordering::Acquire) != self.generation {
            return self.bus.emit(event);
        }
        self.bus
            .deliver(self.sinks.as_deref().unwrap_or_default(), event);
    }
}

impl std::fmt::Debug for EventBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventBus")
            .field("streams", &self.bus.streams.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

type Recv = Pin<
    Box<
        dyn Future<
                Output = (
                    Result<AgentEvent, broadcast::error::RecvError>,
                    broadcast::Receiver<AgentEvent>,
                ),
            > + Send,
    >,
>;

/// A stream of [`AgentEvent`]s from an [`EventBus`]. Ends when every handle to the bus is dropped.
pub struct EventStream {
    pending: Option<Recv>,
    missed: Arc<AtomicU64>,
    streams: Arc<AtomicUsize>,
}

impl Drop for EventStream {
    fn drop(&mut self) {
        self.streams.fetch_sub(1, Ordering::AcqRel);
    }
}

impl EventStream {
    fn new(receiver: broadcast::Receiver<AgentEvent>, streams: Arc<AtomicUsize>) -> Self {
        EventStream {
            pending: Some(Self::next_from(receiver)),
            missed: Arc::default(),
            streams,
        }
    }

    fn next_from(mut receiver: broadcast::Receiver<AgentEvent>) -> Recv {
        Box::pin(async move {
            let event = receiver.recv().await;
            (event, receiver)
        })
    }

    /// How many events this stream dropped because it fell behind.
    pub fn missed(&self) -> u64 {
        self.missed.load(Ordering::Relaxed)
    }
}

impl Stream for EventStream {
    type Item = AgentEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<AgentEvent>> {
        loop {
            let Some(pending) = self.pending.as_mut() else {
                return Poll::Ready(None);
            };
            let (outcome, receiver) = match pending.as_mut().poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(ready) => ready,
            };
            match outcome {
                Ok(event) => {
                    self.pending = Some(Self::next_from(receiver));
                    return Poll::Ready(Some(event));
                }
                Err(broadcast::error::RecvError::Lagged(count)) => {
                    self.missed.fetch_add(count, Ordering::Relaxed);
                    tracing::warn!(
                        missed = count,
                        "an event stream fell behind and dropped events"
                    );
                    self.pending = Some(Self::next_from(receiver));
                }
                Err(broadcast::error::RecvError::Closed) => {
                    self.pending = None;
                    return Poll::Ready(None);
                }
            }
        }
    }
}

impl std::fmt::Debug for EventStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventStream").finish_non_exhaustive()
    }
}
