//! What running a tool costs in heap allocations, counted by a global allocator that counts the
//! allocations of the thread that asks (so the other tests of this binary, on their own threads, do not
//! disturb the count). Each figure is the difference of two calls that differ in one thing, so the test
//! says exactly what that thing costs:
//!
//! - a tool that takes no `ToolContext` gets none made for it (the context's `Arc` is the one allocation a
//!   context costs: it shares the call's id);
//! - a one-text result keeps its block inline: nothing beyond the text itself;
//! - the out-of-line parts (details, usage, ...) cost one allocation, and only when a result has them.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use yiem_core::{
    message::Usage,
    tool,
    tool::{AgentTool, AgentToolResult, ToolContext},
};

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: every method hands the request to the system allocator unchanged; the count is a
// const-initialized thread-local `Cell`, which never allocates itself.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|count| count.set(count.get() + 1));
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, which is `System`'s.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` with this layout (every allocation goes through `alloc`).
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// The allocations `f` makes on this thread.
fn allocations<T>(f: impl FnOnce() -> T) -> (usize, T) {
    let before = ALLOCATIONS.with(Cell::get);
    let value = f();
    (ALLOCATIONS.with(Cell::get) - before, value)
}

#[derive(Deserialize, JsonSchema)]
struct Pair {
    /// The first number.
    a: i64,
    /// The second number.
    b: i64,
}

/// Add two numbers.
#[tool]
async fn add(args: Pair) -> String {
    (args.a + args.b).to_string()
}

/// Add two numbers, with the call's context at hand.
#[tool]
async fn add_in_context(ctx: ToolContext, args: Pair) -> String {
    let _ = ctx.call_id();
    (args.a + args.b).to_string()
}

/// The allocations of one `execute` of `tool` (warmed up first: schemas and caches are built once).
fn execute_allocations(tool: &AgentTool) -> usize {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let run = || {
        let args = json!({"a": 40, "b": 2});
        let (count, result) = allocations(|| runtime.block_on(tool.execute("c1", args)));
        assert_eq!(result.text_content(), "42");
        count
    };
    run();
    let count = run();
    assert_eq!(count, run(), "the count is the same on every call");
    count
}

#[test]
fn a_tool_that_takes_no_context_gets_none_made() {
    let plain = execute_allocations(&add_tool());
    let in_context = execute_allocations(&add_in_context_tool());
    // The context's `Arc`: made only for the tool that takes one. The call's id, a literal, is not
    // copied, neither for the call nor for its context.
    assert_eq!(
        in_context - plain,
        1,
        "plain: {plain}, in context: {in_context}"
    );
    // What is left for the plain tool: its boxed future and the text it returns. A call in hand is shared
    // with nothing, so it is not put in an `Arc` and its tool's name is not copied. With the `otel`
    // feature (on in the workspace's build, through `yiem`) nothing more: its metrics are recorded only
    // once turned on (`otel::set_metrics`).
    assert_eq!(plain, 2);
}

#[test]
fn a_one_text_result_keeps_its_block_inline() {
    let text = String::from("42");
    let (count, result) = allocations(|| AgentToolResult::text(text).with_terminate(true));
    assert_eq!(
        count, 0,
        "the text's own allocation is all a text result has"
    );
    assert_eq!(result.content.len(), 1);
    let (count, _) = allocations(|| AgentToolResult::error("failed"));
    assert_eq!(count, 1, "an error result allocates its text, nothing else");
}

#[test]
fn the_out_of_line_parts_cost_one_allocation_only_when_there() {
    let (count, plain) = allocations(|| AgentToolResult::text("x").with_details(json!(null)));
    assert_eq!(count, 1, "a null detail is no detail: only the text");
    assert!(plain.details().is_null());
    let usage = Usage::new(3, 0);
    let (count, measured) = allocations(|| AgentToolResult::text("x").with_usage(usage));
    assert_eq!(
        count, 2,
        "the text, and one box for the parts most results lack"
    );
    assert_eq!(measured.usage(), Some(usage));
}
