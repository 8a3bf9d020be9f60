//! The HTTP transport every provider shares: one `POST` of a JSON body (with the provider's headers),
//! retried as the [`RetryPolicy`](retry::RetryPolicy) allows, its answer read as server-sent events (or one JSON body from a
//! server that does not stream) with an idle limit, and each event handed to the provider's
//! [`StreamParser`], which alone knows the wire format. Events are read in time linear in what arrives
//! ([`sse`]), each at most `max_event_bytes`, and the whole reply within `reply_timeout`. Every
//! failure becomes one [`ModelEvent::Error`] whose text starts with `POST <url> failed: `, at most
//! [`MAX_ERROR_CHARS`] long, with the request's credentials redacted wherever the server echoed them;
//! cancelling ends the stream at once. While a tool call's
//! arguments stream in, the transport follows a [`ModelEvent::ToolCallDelta`] with a
//! [`ModelEvent::ToolCallArguments`] holding what is complete so far (see [`partial_arguments`]), so
//! every provider gets them the same way: after every delta while the text is short (up to
//! [`REPARSE_ALWAYS_BELOW`] bytes), then each time it has doubled since the last parse, and once more
//! before the call's end if its last deltas were not parsed, so a call of any size costs amortised linear
//! time to follow (a 256 KB `write` in 4-byte deltas once re-parsed its whole text 65 536 times).

pub(crate) mod config;
mod data;
pub(crate) mod failure;
pub(crate) mod partial;
pub(crate) mod retry;
mod sse;

use std::collections::{HashMap, VecDeque};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt, stream};
use tokio_util::sync::CancellationToken;

use self::config::{ClientConfig, ConfigError};
pub(crate) use self::data::EventData;
use self::failure::{
    attempts, bounded, chunk_count, error_chain, redacted, root_cause, seconds, server_message,
};
use self::partial::partial_arguments;
use self::retry::{is_retryable, is_validation_error, retry_after};
use self::sse::{SseError, SseEvent, SseReader};
use crate::dialect::DialectError;
use crate::llm::{Model, ModelEvent, ModelRequest, ModelStream};

/// A provider's wire format, as the transport sees it: it turns server-sent events (or one whole JSON
/// body) into [`ModelEvent`]s and says when the reply is complete.
pub(crate) trait StreamParser: Send + 'static {
    /// The events of one server-sent event (`name` is its `event:` field, empty when absent), or the
    /// text of the error that ends the stream. The data is the parser's: [`EventData::json`] moves a
    /// long string out of it without a copy.
    fn event(&mut self, name: &str, data: EventData) -> Result<Vec<ModelEvent>, String>;
    /// The events of a whole JSON body, from a server that answered without streaming.
    fn body(&mut self, data: EventData) -> Result<Vec<ModelEvent>, String>;
    /// Whether an event that ends the stream arrived (`[DONE]`, `message_stop`).
    fn ended(&self) -> bool;
    /// Whether the reply is complete (its stop reason arrived), so a stream that ends or breaks now lost
    /// nothing of it.
    fn complete(&self) -> bool;
    /// How many events with data were read, for error texts; 0 means a retry is still safe.
    fn chunks(&self) -> usize;
    /// The last events: open calls closed, then `Done` (or `Error`). Called once: the transport and
    /// [`parse_all`] end a reply with it and read no more.
    fn finish(&mut self) -> Vec<ModelEvent>;
}

/// Feeds `events` (each its `event:` name and data) to `parser` as the transport would, then finishes it:
/// every event the reply gives, ending in `Done` or an `Error`. For the fuzz harness and tests.
pub(crate) fn parse_all<'a>(
    mut parser: impl StreamParser,
    events: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Vec<ModelEvent> {
    let mut out = Vec::new();
    for (name, data) in events {
        match parser.event(name, data.into()) {
            Ok(more) => out.extend(more),
            Err(error) => {
                out.push(ModelEvent::Error(error));
                return out;
            }
        }
    }
    out.extend(parser.finish());
    out
}

/// The string at `key` of `value`, moved out (an empty one is left in its place), or an empty one.
/// A parser owns each event's JSON, so a long delta leaves it without a copy.
pub(crate) fn take_str(value: &mut serde_json::Value, key: &str) -> String {
    match value.get_mut(key) {
        Some(serde_json::Value::String(text)) => std::mem::take(text),
        _ => String::new(),
    }
}

/// The `number`th event of a stream whose JSON names its kind in `type` (Anthropic's, the Responses
/// API's): its kind (the `event:` line's `name` where `type` is missing) and its JSON, or an error
/// naming the event and showing the start of what came.
#[cfg(any(feature = "anthropic", feature = "openai-responses"))]
pub(crate) fn typed_event(
    number: usize,
    name: &str,
    mut data: EventData,
) -> Result<(String, serde_json::Value), String> {
    let event = data.json().map_err(|error| {
        format!(
            "event {number} is not JSON ({error}): {}",
            failure::preview(&data)
        )
    })?;
    let kind = event
        .get("type")
        .and_then(serde_json::Value::as_str)
        .unwrap_or(name)
        .to_owned();
    Ok((kind, event))
}

/// The default longest time to read one whole reply, from its response headers to its end: 30 minutes.
pub(crate) const DEFAULT_REPLY_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// The default largest event of a stream (or body of a server that does not stream): 64 MiB.
pub(crate) const DEFAULT_MAX_EVENT_BYTES: usize = 64 << 20;

/// The longest error text a request ends with, in characters; the rest is left out with a note.
pub(crate) const MAX_ERROR_CHARS: usize = 2000;

/// How much of an error body is read: enough for any message (and the validation-error check), no more.
const MAX_ERROR_BODY_BYTES: usize = 64 << 10;

/// A `reqwest` client (rustls) with `connect_timeout`.
fn client(connect_timeout: Duration) -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .build()
        .map_err(|error| error_chain(&error))
}

/// `base_url` without surrounding space and trailing slashes, if it is an http(s) URL.
fn checked_base(base_url: &str) -> Result<&str, ConfigError> {
    let base = base_url.trim().trim_end_matches('/');
    if base.starts_with("http://") || base.starts_with("https://") {
        Ok(base)
    } else {
        Err(ConfigError::InvalidBaseUrl {
            url: base_url.to_owned(),
        })
    }
}

/// The setters of the [`ClientConfig`] a provider's configuration holds as `client`: the one place
/// they are written, for each configuration type.
macro_rules! client_setters {
    ($config:ty) => {
        impl $config {
            /// Sends requests to `base_url` instead (a proxy, a gateway, a local or test server).
            pub fn base_url(mut self, base_url: impl Into<String>) -> Self {
                self.client.base_url = base_url.into();
                self
            }

            /// Sets the API key.
            pub fn api_key(mut self, key: impl Into<String>) -> Self {
                self.client.api_key = Some(key.into());
                self
            }

            /// Sets the retry policy.
            pub fn retry(mut self, retry: $crate::llm::RetryPolicy) -> Self {
                self.client.retry = retry;
                self
            }

            /// Sets which tools the model may or must call (see [`ToolChoice`](crate::llm::ToolChoice)).
            pub fn tool_choice(mut self, choice: $crate::llm::ToolChoice) -> Self {
                self.client.tool_choice = choice;
                self
            }

            /// Adds a field to every request body; it overrides the client's own field of that name.
            pub fn extra(mut self, key: impl Into<String>, value: serde_json::Value) -> Self {
                self.client.extra_body.insert(key.into(), value);
                self
            }

            /// Sets the connect, response and idle timeouts.
            pub fn timeouts(
                mut self,
                connect: std::time::Duration,
                response: std::time::Duration,
                idle: std::time::Duration,
            ) -> Self {
                self.client.connect_timeout = connect;
                self.client.response_timeout = response;
                self.client.idle_timeout = idle;
                self
            }

            /// Sets the longest time to read one whole reply, from its response headers to its end
            /// (default 30 minutes): a stream that keeps sending (keep-alive comments, say) ends then
            /// with an error, as a silent one does after the idle timeout.
            pub fn reply_timeout(mut self, timeout: std::time::Duration) -> Self {
                self.client.reply_timeout = timeout;
                self
            }

            /// Sets the largest event a stream may send, in bytes (default 64 MiB; also the largest
            /// body of a server that does not stream): a larger one ends the reply with an error.
            pub fn max_event_bytes(mut self, bytes: usize) -> Self {
                self.client.max_event_bytes = bytes;
                self
            }
        }
    };
}
pub(crate) use client_setters;

/// The setters of the configurations whose provider runs tools on its side (Anthropic's, OpenAI's
/// Responses API): the fields `tool_search` and `programmatic_calling`, whose docs say what each
/// provider does with them.
#[cfg(any(feature = "anthropic", feature = "openai-responses"))]
macro_rules! server_tool_setters {
    ($config:ty) => {
        impl $config {
            /// Chooses how the model finds deferred tools: the provider's own tool search or the local
            /// one (see [`tool_search`](field@Self::tool_search) and
            /// [`ToolSearchMode`](crate::catalog::ToolSearchMode)).
            pub fn tool_search(mut self, mode: $crate::catalog::ToolSearchMode) -> Self {
                self.tool_search = mode;
                self
            }

            /// Lets the model call tools from programs it runs in the provider's sandbox (see
            /// [`programmatic_calling`](field@Self::programmatic_calling) and
            /// [`ProgrammaticCalling`](crate::llm::ProgrammaticCalling), which has an example).
            pub fn programmatic_calling(
                mut self,
                calling: $crate::llm::ProgrammaticCalling,
            ) -> Self {
                self.programmatic_calling = Some(calling);
                self
            }
        }
    };
}
#[cfg(any(feature = "anthropic", feature = "openai-responses"))]
pub(crate) use server_tool_setters;

/// A provider's connection: the URL its requests go to and the HTTP client that sends them. Its
/// [`send`](Self::send) is the one request loop of every provider.
#[derive(Clone, Debug)]
pub(crate) struct Client {
    endpoint: Arc<str>,
    http: reqwest::Client,
}

impl Client {
    /// A connection for `config`, whose requests go to `path(base)` (the checked base URL, without
    /// trailing slashes); fails on a base URL that is not http(s) or when the HTTP client cannot start.
    pub(crate) fn new(
        config: &ClientConfig,
        path: impl FnOnce(&str) -> String,
    ) -> Result<Self, ConfigError> {
        let endpoint = path(checked_base(&config.base_url)?);
        let http = client(config.connect_timeout).map_err(ConfigError::Client)?;
        Ok(Client {
            endpoint: endpoint.into(),
            http,
        })
    }

    /// The URL requests go to.
    pub(crate) fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The stream of the reply to `body` (or of its refusal, when it could not be made), sent with
    /// `headers` under `config`'s retries, timeouts and limits and read with `parser`.
    pub(crate) fn send(
        &self,
        config: &ClientConfig,
        body: Result<impl Body, DialectError>,
        headers: Vec<(&'static str, String)>,
        parser: impl StreamParser,
        cancel: CancellationToken,
    ) -> ModelStream {
        let body = match body {
            Ok(body) => body.into_bytes(),
            Err(error) => return refused(config.model.clone(), error.to_string()),
        };
        let request = Request {
            client: self.http.clone(),
            url: Arc::clone(&self.endpoint),
            headers,
            body,
            settings: config.clone(),
        };
        stream(request, parser, cancel)
    }
}

/// A provider's client as the one request loop sees it: its [`ClientConfig`], its connection, and what
/// is its own (headers, body, parser). Every type with it is a [`Model`](crate::llm::Model) whose
/// replies the loop streams.
pub(crate) trait Provider: Send + Sync {
    /// Who serves the model (`Model::provider_name`).
    const NAME: &'static str;
    /// The provider's wire format.
    type Parser: StreamParser;
    /// The request's headers (the key's among them).
    fn headers(&self) -> Vec<(&'static str, String)>;
    /// The request's body, or why it cannot be made.
    fn body(&self, request: &ModelRequest) -> Result<impl Body, DialectError>;
    /// A parser for one reply.
    fn parser(&self) -> Self::Parser;
    /// The settings every provider shares, and the connection requests go out on.
    fn connection(&self) -> (&ClientConfig, &Client);
}

impl<P: Provider> Model for P {
    fn name(&self) -> &str {
        &self.connection().0.model
    }

    fn provider_name(&self) -> &str {
        P::NAME
    }

    fn stream(&self, request: ModelRequest, cancel: CancellationToken) -> ModelStream {
        let (config, client) = self.connection();
        let body = self.body(&request);
        client.send(config, body, self.headers(), self.parser(), cancel)
    }
}

/// `base` followed by `path`, unless it already ends with it (a URL given whole).
#[cfg(any(feature = "openai", feature = "anthropic"))]
pub(crate) fn joined(base: &str, path: &str) -> String {
    if base.ends_with(path) {
        base.to_owned()
    } else {
        format!("{base}{path}")
    }
}

/// A request body: its JSON, or the bytes of it already written.
pub(crate) trait Body {
    fn into_bytes(self) -> Vec<u8>;
}

impl Body for Vec<u8> {
    fn into_bytes(self) -> Vec<u8> {
        self
    }
}

impl Body for serde_json::Value {
    fn into_bytes(self) -> Vec<u8> {
        serde_json::to_vec(&self).unwrap_or_default()
    }
}

/// The `Authorization: Bearer <key>` header, when there is a key (OpenAI and compatible servers).
#[cfg(feature = "openai")]
pub(crate) fn bearer(api_key: Option<&str>) -> Vec<(&'static str, String)> {
    api_key
        .filter(|key| !key.is_empty())
        .map(|key| ("authorization", format!("Bearer {key}")))
        .into_iter()
        .collect()
}

/// One request to send: where, with which headers and body, under which settings.
struct Request {
    pub client: reqwest::Client,
    pub url: Arc<str>,
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
    /// The retries, timeouts and limits; its `model` names the reply's `Start`.
    pub settings: ClientConfig,
}

impl Request {
    /// The credentials the request carries, as a server might echo them: the value of every header
    /// named like one (`authorization`, `x-api-key`, `x-goog-api-key`, any `*key*`, `*token*`,
    /// `*secret*`), without an auth scheme (`Bearer `). Values under 4 characters are no credential
    /// worth hiding and would garble every text.
    fn credentials(&self) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(name, _)| {
                let name = name.to_ascii_lowercase();
                name.contains("authorization")
                    || ["key", "token", "secret"].iter().any(|w| name.contains(w))
            })
            .map(|(_, value)| {
                let value = value.trim();
                match value.split_once(' ') {
                    Some((scheme, rest)) if !scheme.is_empty() && !rest.contains(' ') => rest,
                    _ => value,
                }
            })
            .filter(|value| value.chars().count() >= 4)
            .collect()
    }
}

/// The stream of `request`'s reply, read with `parser`.
fn stream(request: Request, parser: impl StreamParser, cancel: CancellationToken) -> ModelStream {
    let run = Run {
        request,
        parser: Box::new(parser),
        cancel,
        queue: VecDeque::new(),
        phase: Phase::Connect,
        attempt: 0,
        started: false,
        arguments: HashMap::new(),
    };
    Box::pin(stream::unfold(run, |mut run| async move {
        let event = run.next_event().await?;
        Some((event, run))
    }))
}

/// The stream of a request that could not be sent: `Start`, then `Error` with `text`.
fn refused(model: String, text: String) -> ModelStream {
    Box::pin(stream::iter([
        ModelEvent::Start { model },
        ModelEvent::Error(format!("the request was not sent: {text}")),
    ]))
}

/// One request in flight: connects (with retries), then reads the event stream.
struct Run {
    request: Request,
    parser: Box<dyn StreamParser>,
    cancel: CancellationToken,
    queue: VecDeque<ModelEvent>,
    phase: Phase,
    /// Requests sent so far.
    attempt: u32,
    /// Whether `Start` went out.
    started: bool,
    /// The argument text so far of each call, by index, and its length when last parsed, for
    /// [`ModelEvent::ToolCallArguments`].
    arguments: HashMap<usize, (String, usize)>,
}

/// Argument text up to this many bytes is parsed after every delta; past it, each time it has doubled.
const REPARSE_ALWAYS_BELOW: usize = 4096;

/// Queues the arguments parsed from call `index`'s `text` so far (when it parses), and notes how long the
/// parsed text was.
fn queue_parsed(queue: &mut VecDeque<ModelEvent>, index: usize, text: &str, parsed_at: &mut usize) {
    *parsed_at = text.len();
    if let Some(arguments) = partial_arguments(text) {
        queue.push_back(ModelEvent::ToolCallArguments { index, arguments });
    }
}

enum Phase {
    Connect,
    Streaming(SseStream),
    Finished,
}

type SseStream = Pin<Box<dyn Stream<Item = Result<SseEvent, BodyError>> + Send>>;

/// Why the body stream stopped early.
enum BodyError {
    /// Nothing arrived for this long.
    Idle(Duration),
    /// The whole reply took longer than this.
    Reply(Duration),
    /// The bytes are no event stream, or an event is too large.
    Event(SseError),
    Transport(reqwest::Error),
}

/// How connecting ended.
enum Connected {
    Response(reqwest::Response),
    Failed(String),
    Cancelled,
}

/// What to do after an item of the event stream.
enum Flow {
    /// Read on.
    Continue,
    /// The stream is over (its last events are queued).
    Stop,
    /// The response broke before its first chunk: wait this long, then send the request again.
    Reconnect(Duration),
}

impl Run {
    async fn next_event(&mut self) -> Option<ModelEvent> {
        loop {
            if self.cancel.is_cancelled() {
                return None;
            }
            if let Some(event) = self.queue.pop_front() {
                return Some(event);
            }
            match std::mem::replace(&mut self.phase, Phase::Finished) {
                Phase::Finished => return None,
                Phase::Connect => {
                    if !self.started {
                        self.started = true;
                        self.queue.push_back(ModelEvent::Start {
                            model: self.request.settings.model.clone(),
                        });
                    }
                    match self.connect().await {
                        Connected::Cancelled => return None,
                        Connected::Failed(text) => self.fail(text),
                        Connected::Response(response) => self.start_reading(response).await,
                    }
                }
                Phase::Streaming(mut events) => {
                    let next = tokio::select! {
                        () = self.cancel.cancelled() => return None,
                        next = events.next() => next,
                    };
                    match self.read(next) {
                        Flow::Continue => self.phase = Phase::Streaming(events),
                        Flow::Stop => {}
                        Flow::Reconnect(delay) => {
                            drop(events);
                            tokio::select! {
                                () = self.cancel.cancelled() => return None,
                                () = tokio::time::sleep(delay) => {}
                            }
                            self.phase = Phase::Connect;
                        }
                    }
                }
            }
        }
    }

    /// Queues events from the parser, each argument delta followed by the arguments parsed so far.
    fn push(&mut self, events: Vec<ModelEvent>) {
        for event in events {
            match event {
                ModelEvent::Error(text) => {
                    self.fail(text);
                    return;
                }
                ModelEvent::ToolCallDelta { index, arguments } => {
                    let (text, parsed_at) = self.arguments.entry(index).or_default();
                    text.push_str(&arguments);
                    self.queue
                        .push_back(ModelEvent::ToolCallDelta { index, arguments });
                    if text.len() <= REPARSE_ALWAYS_BELOW || text.len() >= 2 * *parsed_at {
                        queue_parsed(&mut self.queue, index, text, parsed_at);
                    }
                }
                ModelEvent::ToolCallEnd { index } => {
                    // The whole text, if its last deltas were not parsed: what a consumer saw last is
                    // the call's arguments.
                    if let Some((text, parsed_at)) = self.arguments.get_mut(&index)
                        && *parsed_at < text.len()
                    {
                        queue_parsed(&mut self.queue, index, text, parsed_at);
                    }
                    self.queue.push_back(ModelEvent::ToolCallEnd { index });
                }
                other => self.queue.push_back(other),
            }
        }
    }

    /// Queues the parser's last events, with the request named in an error.
    fn finish(&mut self) {
        let events = self.parser.finish();
        self.push(events);
        self.phase = Phase::Finished;
    }

    /// Ends the stream with `text`, the request named, its credentials redacted, bounded: the one way
    /// a failure (and any text a server sent with it) leaves the transport.
    fn fail(&mut self, text: String) {
        let text = format!("POST {} failed: {text}", self.request.url);
        let text = redacted(&text, &self.request.credentials());
        self.queue
            .push_back(ModelEvent::Error(bounded(&text, MAX_ERROR_CHARS)));
        self.phase = Phase::Finished;
    }

    /// Sends the request until it is accepted, retrying what the policy allows.
    async fn connect(&mut self) -> Connected {
        let policy = self.request.settings.retry;
        let response_timeout = self.request.settings.response_timeout;
        loop {
            self.attempt += 1;
            let attempt = self.attempt;
            let mut builder = self
                .request
                .client
                .post(&*self.request.url)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .header(reqwest::header::ACCEPT, "text/event-stream")
                .body(self.request.body.clone());
            for (name, value) in &self.request.headers {
                builder = builder.header(*name, value);
            }
            let sent = tokio::select! {
                () = self.cancel.cancelled() => return Connected::Cancelled,
                sent = tokio::time::timeout(response_timeout, builder.send()) => sent,
            };
            let retry_allowed = attempt <= policy.max_retries;
            let delay = match sent {
                Err(_) => {
                    return Connected::Failed(format!(
                        "no response within {}{}",
                        seconds(response_timeout),
                        attempts(attempt)
                    ));
                }
                Ok(Ok(response)) if response.status().is_success() => {
                    return Connected::Response(response);
                }
                Ok(Ok(response)) => {
                    let status = response.status();
                    let asked = retry_after(response.headers());
                    let Some((body, _)) = read_body(
                        response,
                        &self.cancel,
                        response_timeout,
                        MAX_ERROR_BODY_BYTES,
                    )
                    .await
                    else {
                        return Connected::Cancelled;
                    };
                    // A server error that is really a refusal of the request (a validation error, as
                    // pydantic-based servers answer with a 500) would fail the same way again.
                    let refused = status.is_server_error() && is_validation_error(&body);
                    let retryable = is_retryable(status.as_u16(), &body);
                    if retryable && retry_allowed && asked.is_none_or(|d| d <= policy.max_delay) {
                        asked.unwrap_or_else(|| policy.backoff(attempt))
                    } else {
                        let message = server_message(&body);
                        let mut text = format!("HTTP {status}: {message}{}", attempts(attempt));
                        if refused {
                            text.push_str(
                                " (a validation error of the request: not retried, since it would fail again)",
                            );
                        }
                        if let Some(asked) = asked.filter(|d| retryable && *d > policy.max_delay) {
                            let asked = if asked == Duration::MAX {
                                "longer than any wait can be".to_owned()
                            } else {
                                format!("after {}", seconds(asked))
                            };
                            text.push_str(&format!(
                                " (not retried: the server asked to retry {asked}, more than the {} allowed)",
                                seconds(policy.max_delay)
                            ));
                        }
                        return Connected::Failed(text);
                    }
                }
                Ok(Err(error)) => {
                    let before_response = error.is_connect() || error.is_request();
                    if before_response && retry_allowed {
                        policy.backoff(attempt)
                    } else {
                        let what = if error.is_connect() {
                            "could not connect"
                        } else {
                            "the request failed"
                        };
                        return Connected::Failed(format!(
                            "{what}: {}{}",
                            root_cause(&error),
                            attempts(attempt)
                        ));
                    }
                }
            };
            tracing::debug!(attempt, ?delay, url = %self.request.url, "retrying the model request");
            tokio::select! {
                () = self.cancel.cancelled() => return Connected::Cancelled,
                () = tokio::time::sleep(delay) => {}
            }
        }
    }

    /// Starts reading an accepted response: an event stream, or one JSON body from a server that does not
    /// stream.
    async fn start_reading(&mut self, response: reqwest::Response) {
        let is_json = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.trim_start().starts_with("application/json"));
        let settings = &self.request.settings;
        if !is_json {
            self.phase = Phase::Streaming(event_stream(response, settings));
            return;
        }
        let limit = settings.max_event_bytes;
        let Some((body, cut)) =
            read_body(response, &self.cancel, settings.response_timeout, limit).await
        else {
            return;
        };
        if cut {
            self.fail(format!("the body is larger than the {limit} bytes allowed"));
            return;
        }
        let text = String::from_utf8(body)
            .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned());
        match self.parser.body(text.into()) {
            Ok(events) => {
                self.push(events);
                if !matches!(self.queue.back(), Some(ModelEvent::Error(_))) {
                    self.finish();
                }
            }
            Err(error) => self.fail(error),
        }
    }

    /// Handles the next item of the event stream.
    fn read(&mut self, next: Option<Result<SseEvent, BodyError>>) -> Flow {
        let chunks = self.parser.chunks();
        let read = chunk_count(chunks);
        // A response that breaks before its first chunk streamed nothing yet: it may be sent again.
        let untouched = chunks == 0;
        let may_retry = untouched && self.attempt <= self.request.settings.retry.max_retries;
        let tries = if untouched {
            attempts(self.attempt)
        } else {
            String::new()
        };
        let backoff = self.request.settings.retry.backoff(self.attempt);
        match next {
            None if self.parser.complete() => {
                self.finish();
                Flow::Stop
            }
            None if may_retry => Flow::Reconnect(backoff),
            None => {
                self.fail(format!(
                    "the stream ended after {read} before the reply was complete{tries}"
                ));
                Flow::Stop
            }
            Some(Err(error)) => {
                let text = match error {
                    BodyError::Idle(idle) => {
                        format!("no data for {} after {read}", seconds(idle))
                    }
                    BodyError::Reply(whole) => format!(
                        "the reply went on for longer than the {} allowed for a whole reply, after {read}",
                        seconds(whole)
                    ),
                    BodyError::Event(SseError::TooLarge(limit)) => format!(
                        "an event of the stream is larger than the {limit} bytes allowed, after {read}"
                    ),
                    BodyError::Event(SseError::NotUtf8) => {
                        format!("the stream is not UTF-8 after {read}")
                    }
                    BodyError::Transport(error) if may_retry => {
                        tracing::debug!(error = %root_cause(&error), "the response broke before its first chunk");
                        return Flow::Reconnect(backoff);
                    }
                    BodyError::Transport(error) => {
                        format!(
                            "the stream broke off after {read}: {}{tries}",
                            root_cause(&error)
                        )
                    }
                };
                if self.parser.complete() {
                    // The reply was complete; only a usage chunk or the end marker was lost.
                    tracing::debug!(%text, "ignoring a stream error after the reply was complete");
                    self.finish();
                } else {
                    self.fail(text);
                }
                Flow::Stop
            }
            Some(Ok(event)) => {
                let (name, data) = event.into_parts();
                if name == "error" {
                    let message = server_message(data.as_bytes());
                    self.fail(format!(
                        "the server reported an error in the stream: {message}"
                    ));
                    return Flow::Stop;
                }
                if data.is_empty() {
                    return Flow::Continue;
                }
                match self.parser.event(&name, data) {
                    Ok(events) => {
                        self.push(events);
                        if matches!(self.queue.back(), Some(ModelEvent::Error(_))) {
                            return Flow::Stop;
                        }
                        if self.parser.ended() {
                            self.finish();
                            return Flow::Stop;
                        }
                        Flow::Continue
                    }
                    Err(text) => {
                        self.fail(text);
                        Flow::Stop
                    }
                }
            }
        }
    }
}

/// A whole (error or non-streaming) body, read up to `limit` bytes, and whether it went on past them;
/// `None` when cancelled. A body that cannot be read in `timeout` counts as empty.
async fn read_body(
    mut response: reqwest::Response,
    cancel: &CancellationToken,
    timeout: Duration,
    limit: usize,
) -> Option<(Vec<u8>, bool)> {
    let read = async {
        let mut body = Vec::new();
        while let Ok(Some(piece)) = response.chunk().await {
            if body.len() + piece.len() > limit {
                body.extend_from_slice(&piece[..limit - body.len()]);
                return (body, true);
            }
            body.extend_from_slice(&piece);
        }
        (body, false)
    };
    tokio::select! {
        () = cancel.cancelled() => None,
        body = tokio::time::timeout(timeout, read) => Some(body.unwrap_or_default()),
    }
}

/// The response body as server-sent events, each piece awaited at most `idle_timeout` and the whole
/// body at most `reply_timeout`.
fn event_stream(response: reqwest::Response, settings: &ClientConfig) -> SseStream {
    struct Body {
        bytes: Pin<Box<dyn Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>,
        reader: SseReader,
        ready: VecDeque<SseEvent>,
        /// What ends the stream once the events before it are out.
        failed: Option<BodyError>,
        deadline: tokio::time::Instant,
    }
    let (idle, whole) = (settings.idle_timeout, settings.reply_timeout);
    let body = Body {
        bytes: Box::pin(response.bytes_stream()),
        reader: SseReader::new(settings.max_event_bytes),
        ready: VecDeque::new(),
        failed: None,
        deadline: tokio::time::Instant::now() + whole,
    };
    Box::pin(stream::unfold(Some(body), move |state| async move {
        let mut body = state?;
        loop {
            if let Some(event) = body.ready.pop_front() {
                return Some((Ok(event), Some(body)));
            }
            if let Some(error) = body.failed.take() {
                return Some((Err(error), None));
            }
            let left = body
                .deadline
                .saturating_duration_since(tokio::time::Instant::now());
            match tokio::time::timeout(idle.min(left), body.bytes.next()).await {
                Ok(Some(Ok(piece))) => {
                    if let Err(error) = body.reader.feed(&piece, &mut body.ready) {
                        body.failed = Some(BodyError::Event(error));
                    }
                }
                Ok(Some(Err(error))) => body.failed = Some(BodyError::Transport(error)),
                Ok(None) => return None,
                Err(_) if tokio::time::Instant::now() >= body.deadline => {
                    body.failed = Some(BodyError::Reply(whole));
                }
                Err(_) => body.failed = Some(BodyError::Idle(idle)),
            }
        }
    }))
}
