//! The interpreter: QuickJS (through `rquickjs`) on a thread of its own, running one program, with every
//! limit enforced by the host. The program talks to the host only through the functions the prelude
//! installs (`tools.<name>(args)`, `print`, `console.log`); a batch of tool calls it started travels to the
//! async side as [`FromProgram::Calls`], and their outcomes come back before the program goes on.
//!
//! Limits, each sticky (once exceeded, the program is stopped at the interpreter's next check, whatever it
//! catches): memory (a counting allocator under QuickJS refuses allocations past the budget), time (the
//! interrupt handler counts the time the interpreter runs, not the time it waits for tools) and tool
//! calls (the request refuses past the budget). Output is not a limit that stops a program: `print`
//! keeps what fits the output budget and counts what it left out, and the program goes on. A call stack
//! deeper than the stack budget is a `RangeError` the program may catch, as in any JavaScript engine; the
//! budget keeps the host's stack safe.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rquickjs::allocator::{Allocator, RustAllocator};
use rquickjs::context::EvalOptions;
use rquickjs::context::intrinsic;
use rquickjs::{Context, Ctx, Exception, Function, Object, Promise, Runtime, Value};
use serde_json::Value as Json;
use tokio::sync::mpsc as tokio_mpsc;

use super::{CodeLimits, LimitExceeded};

/// The name the program's errors point at (`program.js:3:7`).
pub(super) const FILE_NAME: &str = "program.js";

/// One tool call the program started.
#[derive(Clone, Debug)]
pub(super) struct Request {
    /// The program's call number, from 0.
    pub(super) index: u32,
    /// The tool's name, as the program wrote it.
    pub(super) tool: String,
    /// The arguments (what `JSON.stringify` made of them).
    pub(super) arguments: Json,
}

/// How one call ended, for the program: a value its promise resolves to, or the text of the `ToolError`
/// it rejects with.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Outcome {
    Value(Json),
    Error(String),
}

/// What the interpreter thread tells the host.
#[derive(Debug)]
pub(super) enum FromProgram {
    /// The program waits for these calls (started together: one batch).
    Calls(Vec<Request>),
    /// The program ended.
    Finished(Finish),
}

/// How a program ended: what it printed, and its value or its error.
#[derive(Debug)]
pub(super) struct Finish {
    /// What it printed, up to the output budget.
    pub(super) output: String,
    /// How many bytes it printed past the budget, left out of `output`.
    pub(super) left_out: usize,
    pub(super) outcome: Result<Option<String>, ProgramError>,
    /// The tools of the calls the program started that never ran (it stopped first), in call order.
    pub(super) cancelled: Vec<String>,
}

/// Why a program failed.
#[derive(Debug)]
pub(super) enum ProgramError {
    /// It threw (or did not parse): the message with where it was thrown.
    Threw(String),
    /// It exceeded a limit.
    Limit(LimitExceeded),
    /// It waits on a promise that no tool call will settle.
    Stuck,
    /// The host stopped it (the call was cancelled).
    Cancelled,
    /// The interpreter could not start.
    Internal(String),
}

/// The program on its thread, seen from the async side. Dropping it stops the program.
pub(super) struct Program {
    from: tokio_mpsc::UnboundedReceiver<FromProgram>,
    to: Option<mpsc::Sender<Vec<(u32, Outcome)>>>,
    cancel: Arc<AtomicBool>,
}

impl Program {
    /// Starts `source` on a new thread; `tools` are the names the declarations offer (any other name still
    /// reaches the host, which answers it).
    pub(super) fn start(source: String, limits: CodeLimits) -> Result<Program, String> {
        let (to_host, from) = tokio_mpsc::unbounded_channel();
        let (to, from_host) = mpsc::channel();
        let cancel = Arc::new(AtomicBool::new(false));
        let stop = Arc::clone(&cancel);
        std::thread::Builder::new()
            .name("yiem-run-code".into())
            .stack_size(limits.max_stack_bytes.saturating_mul(2).max(4 << 20))
            .spawn(move || {
                let finish = run(&source, &limits, &to_host, &from_host, &stop);
                let _ = to_host.send(FromProgram::Finished(finish));
            })
            .map_err(|e| format!("the interpreter thread could not start: {e}"))?;
        Ok(Program {
            from,
            to: Some(to),
            cancel,
        })
    }

    /// What the program does next.
    pub(super) async fn next(&mut self) -> FromProgram {
        match self.from.recv().await {
            Some(message) => message,
            None => FromProgram::Finished(Finish {
                output: String::new(),
                left_out: 0,
                outcome: Err(ProgramError::Internal(
                    "the interpreter thread ended without a result".into(),
                )),
                cancelled: Vec::new(),
            }),
        }
    }

    /// Hands the outcomes of the calls the program waits for back to it.
    pub(super) fn settle(&mut self, outcomes: Vec<(u32, Outcome)>) {
        if let Some(to) = &self.to {
            let _ = to.send(outcomes);
        }
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        self.cancel.store(true, Ordering::SeqCst);
        // The thread blocked on a reply wakes up to a closed channel and stops.
        self.to = None;
    }
}

/// What the host functions and the interrupt handler share on the interpreter thread.
struct Host {
    limits: CodeLimits,
    output: RefCell<String>,
    /// Bytes printed past the output budget.
    left_out: Cell<usize>,
    requests: RefCell<Vec<Request>>,
    calls: Cell<u32>,
    budget: Rc<Budget>,
    /// Interpreter time used in earlier stretches, and when the current one started.
    used: Cell<Duration>,
    since: Cell<Option<Instant>>,
    cancel: Arc<AtomicBool>,
}

/// The memory budget and the first limit the program exceeded (shared with the allocator).
struct Budget {
    limit: usize,
    used: Cell<usize>,
    tripped: RefCell<Option<LimitExceeded>>,
}

impl Budget {
    fn trip(&self, limit: LimitExceeded) {
        let mut tripped = self.tripped.borrow_mut();
        if tripped.is_none() {
            *tripped = Some(limit);
        }
    }

    fn tripped(&self) -> Option<LimitExceeded> {
        self.tripped.borrow().clone()
    }

    /// Whether `more` bytes fit; if not, the memory limit trips.
    fn fits(&self, more: usize) -> bool {
        let fits = self.used.get().saturating_add(more) <= self.limit;
        if !fits {
            self.trip(LimitExceeded::Memory { bytes: self.limit });
        }
        fits
    }
}

impl Host {
    fn start_clock(&self) {
        self.since.set(Some(Instant::now()));
    }

    fn stop_clock(&self) {
        if let Some(since) = self.since.take() {
            self.used.set(self.used.get() + since.elapsed());
        }
    }

    /// The interrupt handler: stop the program when a limit tripped, the time ran out or the host
    /// cancelled it.
    fn interrupt(&self) -> bool {
        if self.cancel.load(Ordering::Relaxed) || self.budget.tripped().is_some() {
            return true;
        }
        let running = self.since.get().map_or(Duration::ZERO, |t| t.elapsed());
        if self.used.get() + running > self.limits.max_time {
            self.budget.trip(LimitExceeded::Time {
                limit: self.limits.max_time,
            });
            return true;
        }
        false
    }
}

/// QuickJS's allocations, counted against the memory budget: an allocation past it is refused (QuickJS
/// then throws its out-of-memory error) and the limit trips, so the program stops even if it catches that.
struct Counting(Rc<Budget>);

// SAFETY: every operation is delegated to `RustAllocator`, which upholds the trait's contract; this
// wrapper only refuses some allocations (returning null, which the contract allows) and reads sizes
// through `RustAllocator::usable_size` of pointers that allocator made. A null pointer is never handed
// to `RustAllocator::realloc` (it would read a header before it): `realloc(null, n)` is an allocation.
unsafe impl Allocator for Counting {
    fn alloc(&mut self, size: usize) -> *mut u8 {
        if !self.0.fits(size) {
            return std::ptr::null_mut();
        }
        let ptr = RustAllocator.alloc(size);
        if !ptr.is_null() {
            // SAFETY: `ptr` was just made by `RustAllocator`.
            let usable = unsafe { RustAllocator::usable_size(ptr) };
            self.0.used.set(self.0.used.get() + usable);
        }
        ptr
    }

    fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
        let Some(total) = count.checked_mul(size) else {
            self.0.trip(LimitExceeded::Memory {
                bytes: self.0.limit,
            });
            return std::ptr::null_mut();
        };
        if !self.0.fits(total) {
            return std::ptr::null_mut();
        }
        let ptr = RustAllocator.calloc(count, size);
        if !ptr.is_null() {
            // SAFETY: `ptr` was just made by `RustAllocator`.
            let usable = unsafe { RustAllocator::usable_size(ptr) };
            self.0.used.set(self.0.used.get() + usable);
        }
        ptr
    }

    unsafe fn dealloc(&mut self, ptr: *mut u8) {
        // SAFETY: the caller hands back a pointer this allocator (so `RustAllocator`) made.
        let usable = unsafe { RustAllocator::usable_size(ptr) };
        self.0.used.set(self.0.used.get().saturating_sub(usable));
        // SAFETY: as above.
        unsafe { RustAllocator.dealloc(ptr) }
    }

    unsafe fn realloc(&mut self, ptr: *mut u8, new_size: usize) -> *mut u8 {
        if ptr.is_null() {
            return self.alloc(new_size);
        }
        // SAFETY: the caller hands back a pointer this allocator (so `RustAllocator`) made.
        let old = unsafe { RustAllocator::usable_size(ptr) };
        if new_size > old && !self.0.fits(new_size - old) {
            return std::ptr::null_mut();
        }
        // SAFETY: as above; `ptr` is not null.
        let new = unsafe { RustAllocator.realloc(ptr, new_size) };
        if !new.is_null() {
            // SAFETY: `new` was just made by `RustAllocator`.
            let usable = unsafe { RustAllocator::usable_size(new) };
            self.0
                .used
                .set(self.0.used.get().saturating_sub(old).saturating_add(usable));
        }
        new
    }

    unsafe fn usable_size(ptr: *mut u8) -> usize {
        // SAFETY: the caller's pointer was made by this allocator, so by `RustAllocator`.
        unsafe { RustAllocator::usable_size(ptr) }
    }
}

/// The prelude: installs `tools`, `print`, `console` and `ToolError`, removes what is not deterministic
/// (`Math.random`; `Date` is never added), and gives the host the functions it calls.
const PRELUDE: &str = r#"(function (request, write) {
  "use strict";
  class ToolError extends Error {
    constructor(tool, message) { super(message); this.name = "ToolError"; this.tool = tool; }
  }
  const pending = new Map();
  // A program's arguments become JSON exactly, or the call is refused naming what cannot: the JSON is
  // what JSON.stringify makes, and a value it would drop, change or choke on is refused first.
  const MAX_DEPTH = 100;
  const lone = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
  const step = (key, inArray) =>
    inArray ? `[${key}]` : /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
  const kinds = [[Promise, "a Promise (await it first)"], [Map, "a Map (use Object.fromEntries)"],
    [Set, "a Set (use an array)"], [Error, "an Error (send its message)"]];
  const toJson = (tool, args) => {
    const seen = new Map();
    const refuse = (at, what) => {
      throw new ToolError(tool, `the arguments cannot be sent as JSON: ${at} is ${what}; send only ` +
        "plain objects, arrays, strings, finite numbers, booleans and null");
    };
    return JSON.stringify(args, function (key, value) {
      const holder = seen.get(this);
      const at = holder === undefined ? "args" : holder.at + step(key, Array.isArray(this));
      if (holder !== undefined && lone.test(key)) refuse(at, "under a key with an unpaired surrogate");
      switch (typeof value) {
        case "function": refuse(at, "a function");
        case "symbol": refuse(at, "a symbol");
        case "bigint": refuse(at, "a BigInt (send it as a string or a number)");
        case "number": if (!Number.isFinite(value)) refuse(at, `${value}, not a JSON number`); break;
        case "string": if (lone.test(value)) refuse(at, "a string with an unpaired surrogate"); break;
        case "object": {
          if (value === null) break;
          for (const [kind, what] of kinds) if (value instanceof kind) refuse(at, what);
          if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer) refuse(at, "binary data (use an array)");
          if (seen.has(value)) {
            for (let h = this; h !== undefined; h = seen.get(h)?.parent) {
              if (h === value) refuse(at, "a cycle (it contains itself)");
            }
          }
          const depth = (holder?.depth ?? 0) + 1;
          if (depth > MAX_DEPTH) refuse(at, `nested deeper than ${MAX_DEPTH} levels`);
          seen.set(value, { at, depth, parent: this });
        }
      }
      return value;
    });
  };
  const call = (tool, args) => new Promise((resolve, reject) => {
    const id = request(tool, toJson(tool, args === undefined ? {} : args));
    pending.set(id, { tool, resolve, reject });
  });
  const text = (v) => typeof v === "string" ? v : (v === undefined ? "undefined" : JSON.stringify(v));
  const print = (...values) => { write(values.map(text).join(" ") + "\n"); };
  globalThis.print = print;
  globalThis.console = Object.freeze({ log: print, info: print, warn: print, error: print, debug: print });
  globalThis.ToolError = ToolError;
  globalThis.tools = new Proxy({}, {
    get: (_, name) => typeof name === "string" ? ((args) => call(name, args)) : undefined,
  });
  delete Math.random;
  return {
    settle(id, ok, json) {
      const p = pending.get(id);
      if (!p) return;
      pending.delete(id);
      if (ok) p.resolve(JSON.parse(json)); else p.reject(new ToolError(p.tool, json));
    },
    show(v) { return v === undefined ? undefined : text(v); },
  };
})"#;

fn run(
    source: &str,
    limits: &CodeLimits,
    to_host: &tokio_mpsc::UnboundedSender<FromProgram>,
    from_host: &mpsc::Receiver<Vec<(u32, Outcome)>>,
    cancel: &Arc<AtomicBool>,
) -> Finish {
    let budget = Rc::new(Budget {
        limit: limits.max_memory_bytes,
        used: Cell::new(0),
        tripped: RefCell::new(None),
    });
    let host = Rc::new(Host {
        limits: limits.clone(),
        output: RefCell::new(String::new()),
        left_out: Cell::new(0),
        requests: RefCell::new(Vec::new()),
        calls: Cell::new(0),
        budget: Rc::clone(&budget),
        used: Cell::new(Duration::ZERO),
        since: Cell::new(None),
        cancel: Arc::clone(cancel),
    });
    let outcome = interpret(source, &host, budget, to_host, from_host);
    let output = host.output.take();
    let cancelled = host.requests.take().into_iter().map(|r| r.tool).collect();
    Finish {
        output,
        left_out: host.left_out.get(),
        outcome,
        cancelled,
    }
}

fn interpret(
    source: &str,
    host: &Rc<Host>,
    budget: Rc<Budget>,
    to_host: &tokio_mpsc::UnboundedSender<FromProgram>,
    from_host: &mpsc::Receiver<Vec<(u32, Outcome)>>,
) -> Result<Option<String>, ProgramError> {
    let internal = |e: rquickjs::Error| ProgramError::Internal(e.to_string());
    let runtime = Runtime::new_with_alloc(Counting(budget)).map_err(internal)?;
    runtime.set_max_stack_size(host.limits.max_stack_bytes);
    let watch = Rc::clone(host);
    runtime.set_interrupt_handler(Some(Box::new(move || watch.interrupt())));
    let context = Context::builder()
        .with::<intrinsic::Eval>()
        .with::<intrinsic::RegExpCompiler>()
        .with::<intrinsic::RegExp>()
        .with::<intrinsic::Json>()
        .with::<intrinsic::Proxy>()
        .with::<intrinsic::MapSet>()
        .with::<intrinsic::TypedArrays>()
        .with::<intrinsic::Promise>()
        .build(&runtime)
        .map_err(internal)?;
    let result = context.with(|ctx| {
        let (settle, show) = install(&ctx, host).map_err(|e| thrown(&ctx, e))?;
        host.start_clock();
        let mut options = EvalOptions::default();
        options.promise = true;
        options.strict = false;
        options.filename = Some(FILE_NAME.to_owned());
        let evaluated: rquickjs::Result<Promise> = ctx.eval_with_options(source, options);
        let promise = match evaluated {
            Ok(promise) => promise,
            Err(e) => return Err(limit_or(host, thrown(&ctx, e))),
        };
        loop {
            while ctx.execute_pending_job() {}
            if let Some(limit) = host.budget.tripped() {
                return Err(ProgramError::Limit(limit));
            }
            if host.cancel.load(Ordering::Relaxed) {
                return Err(ProgramError::Cancelled);
            }
            // Calls the program started are run to their results before it ends, awaited or not.
            let requests = host.requests.take();
            match promise.state() {
                _ if !requests.is_empty() => {}
                rquickjs::promise::PromiseState::Resolved => {
                    // A script evaluated for top-level await resolves to `{ value }`.
                    let value: Value = promise
                        .result::<Value>()
                        .and_then(Result::ok)
                        .unwrap_or_else(|| Value::new_undefined(ctx.clone()));
                    let value = match value.as_object() {
                        Some(object) => object.get::<_, Value>("value").unwrap_or(value),
                        None => value,
                    };
                    let shown: Option<String> = show.call((value,)).map_err(|e| thrown(&ctx, e))?;
                    return Ok(shown);
                }
                rquickjs::promise::PromiseState::Rejected => {
                    let error = match promise.result::<Value>() {
                        Some(Err(rquickjs::Error::Exception)) => describe(&ctx.catch()),
                        Some(Err(e)) => e.to_string(),
                        Some(Ok(value)) => describe(&value),
                        None => "the program failed".to_owned(),
                    };
                    return Err(limit_or(host, ProgramError::Threw(error)));
                }
                rquickjs::promise::PromiseState::Pending => return Err(ProgramError::Stuck),
            }
            host.stop_clock();
            if to_host.send(FromProgram::Calls(requests)).is_err() {
                return Err(ProgramError::Cancelled);
            }
            let Ok(outcomes) = from_host.recv() else {
                return Err(ProgramError::Cancelled);
            };
            host.start_clock();
            for (id, outcome) in outcomes {
                let (ok, text) = match outcome {
                    Outcome::Value(value) => (true, value.to_string()),
                    Outcome::Error(message) => (false, message),
                };
                if let Err(e) = settle.call::<_, ()>((id, ok, text)) {
                    return Err(limit_or(host, thrown(&ctx, e)));
                }
            }
        }
    });
    host.stop_clock();
    result
}

/// Installs the prelude; gives the functions that settle a call and show the program's value.
fn install<'js>(
    ctx: &Ctx<'js>,
    host: &Rc<Host>,
) -> rquickjs::Result<(Function<'js>, Function<'js>)> {
    let calls = Rc::clone(host);
    let request = Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>, tool: String, arguments: String| -> rquickjs::Result<u32> {
            if let Some(limit) = calls.budget.tripped() {
                return Err(Exception::throw_range(&ctx, &limit.to_string()));
            }
            let index = calls.calls.get();
            if index >= calls.limits.max_tool_calls {
                let limit = LimitExceeded::ToolCalls {
                    calls: calls.limits.max_tool_calls,
                };
                let message = limit.to_string();
                calls.budget.trip(limit);
                return Err(Exception::throw_range(&ctx, &message));
            }
            // The prelude refused what JSON cannot carry; anything it let through and serde_json cannot
            // read is refused here, never replaced.
            let arguments = serde_json::from_str(&arguments).map_err(|e| {
                Exception::throw_type(
                    &ctx,
                    &format!("the arguments of tools.{tool} cannot be sent as JSON: {e}"),
                )
            })?;
            calls.calls.set(index + 1);
            calls.requests.borrow_mut().push(Request {
                index,
                tool,
                arguments,
            });
            Ok(index)
        },
    )?;
    let printer = Rc::clone(host);
    let write = Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>, text: String| -> rquickjs::Result<()> {
            if let Some(limit) = printer.budget.tripped() {
                return Err(Exception::throw_range(&ctx, &limit.to_string()));
            }
            // What fits the budget is kept (to a character boundary), the rest counted for the note.
            let mut output = printer.output.borrow_mut();
            let room = printer.limits.max_output_bytes.saturating_sub(output.len());
            let mut kept = text.len().min(room);
            while !text.is_char_boundary(kept) {
                kept -= 1;
            }
            output.push_str(&text[..kept]);
            printer
                .left_out
                .set(printer.left_out.get().saturating_add(text.len() - kept));
            Ok(())
        },
    )?;
    let make: Function = ctx.eval(PRELUDE)?;
    let made: Object = make.call((request, write))?;
    Ok((made.get("settle")?, made.get("show")?))
}

/// The error a failed evaluation threw, as the model reads it.
fn thrown(ctx: &Ctx<'_>, error: rquickjs::Error) -> ProgramError {
    match error {
        rquickjs::Error::Exception => ProgramError::Threw(describe(&ctx.catch())),
        other => ProgramError::Threw(other.to_string()),
    }
}

/// A tripped limit wins over the error it caused (the interrupt's, the refused allocation's).
fn limit_or(host: &Host, error: ProgramError) -> ProgramError {
    match host.budget.tripped() {
        Some(limit) => ProgramError::Limit(limit),
        None if host.cancel.load(Ordering::Relaxed) => ProgramError::Cancelled,
        None => error,
    }
}

/// `Name: message` and where it was thrown, for an error object; the value's text for anything else.
fn describe(value: &Value<'_>) -> String {
    if let Some(exception) = value.as_exception() {
        let name: Option<String> = exception.get("name").ok();
        let message = exception.message().unwrap_or_default();
        let mut text = match name {
            Some(name) if !name.is_empty() => format!("{name}: {message}"),
            _ => message,
        };
        if let Some(stack) = exception.stack().filter(|s| !s.trim().is_empty()) {
            text.push('\n');
            text.push_str(stack.trim_end());
        }
        return text;
    }
    if let Some(string) = value.as_string() {
        return string.to_string().unwrap_or_default();
    }
    match value.ctx().json_stringify(value.clone()) {
        Ok(Some(json)) => json.to_string().unwrap_or_default(),
        _ => format!("{value:?}"),
    }
}
