//! Item 6 of the benchmark issue: `register_all_tools` with 1000 `#[tool]` functions linked in (generated
//! by `build.rs`), plus the `list_tools` tool it adds: the time of one registration into an empty store,
//! and the memory it takes, counted by a global allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use schemars::JsonSchema;
use serde::Deserialize;
use yiem_core::store::{Dialect, ToolStore, register_all_tools};

/// Counts the bytes allocated and freed, so a bench can read what an operation allocated and kept.
struct Counting;

static ALLOCATED: AtomicUsize = AtomicUsize::new(0);
static FREED: AtomicUsize = AtomicUsize::new(0);
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every method forwards to the system allocator with the caller's arguments unchanged; the
// counters are plain atomics and do not allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATED.fetch_add(layout.size(), Ordering::Relaxed);
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded as given; the caller upholds `alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        FREED.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: forwarded as given; `ptr` came from this allocator with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        FREED.fetch_add(layout.size(), Ordering::Relaxed);
        ALLOCATED.fetch_add(new_size, Ordering::Relaxed);
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded as given; the caller upholds `realloc`'s contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[derive(Deserialize, JsonSchema)]
pub struct ScaleArgs {
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
}

include!(concat!(env!("OUT_DIR"), "/tools_1000.rs"));

/// Bytes allocated in all, bytes still live, and allocations, since the start of the process.
fn counters() -> (usize, usize, usize) {
    let allocated = ALLOCATED.load(Ordering::Relaxed);
    let freed = FREED.load(Ordering::Relaxed);
    (
        allocated,
        allocated - freed,
        ALLOCATIONS.load(Ordering::Relaxed),
    )
}

/// What `f` allocated in all, kept, and how many allocations it made.
fn measure<T>(f: impl FnOnce() -> T) -> (T, usize, usize, usize) {
    let (allocated, live, count) = counters();
    let value = f();
    let (allocated_after, live_after, count_after) = counters();
    (
        value,
        allocated_after - allocated,
        live_after - live,
        count_after - count,
    )
}

fn memory() {
    let store = ToolStore::new("bench");
    let (names, allocated, kept, count) = measure(|| register_all_tools(&store).unwrap());
    let tools = names.len();
    assert_eq!(tools, 1001, "1000 generated tools and list_tools");
    let names_bytes: usize = names.iter().map(String::capacity).sum::<usize>()
        + names.capacity() * std::mem::size_of::<String>();
    drop(names);
    let kept_by_store = kept - names_bytes;
    println!(
        "memory/register_all_tools/1000: {tools} tools; allocated {allocated} B in {count} allocations; \
         the store keeps {kept_by_store} B ({} B per tool); the returned names take {names_bytes} B",
        kept_by_store / tools
    );
    let (_, allocated, kept, count) = measure(|| {
        store
            .definitions(Dialect::OpenAi)
            .unwrap()
            .as_array()
            .map(Vec::len)
    });
    println!(
        "memory/first_definitions_openai/1000: allocated {allocated} B in {count} allocations; \
         schemas and cached definitions keep {kept} B ({} B per tool)",
        kept / tools
    );
}

fn register(c: &mut Criterion) {
    memory();
    let mut group = c.benchmark_group("register_all_tools");
    group.bench_function("1000", |b| {
        b.iter_batched(
            || ToolStore::new("bench"),
            |store| {
                let names = register_all_tools(&store).unwrap();
                black_box((store, names))
            },
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group!(benches, register);
criterion_main!(benches);
