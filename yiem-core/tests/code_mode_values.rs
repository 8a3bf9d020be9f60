//! Code mode at the edges of what a program's values and results can be: arguments converted to JSON
//! exactly or refused (with a property test over random JavaScript values), a result held to the output
//! limit however it leaves the sandbox, and calls started but never awaited.

use std::sync::{Arc, Mutex};

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::{Value, json};
use yiem_core::agent::ApprovalPolicy;
use yiem_core::code::{CodeLimits, CodeMode};
use yiem_core::exec::ToolExecutor;
use yiem_core::store::ToolStore;
use yiem_core::tool::{AgentTool, AgentToolResult, ToolContext};

/// A store with `echo`, which records the arguments of every run and answers "ok".
fn echo_store() -> (ToolStore, Arc<Mutex<Vec<Value>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let store = ToolStore::new("echo");
    store
        .register(
            AgentTool::builder("echo")
                .description("Echo.")
                .input_schema(json!({"type": "object"}))
                .parallel()
                .handler(move |_ctx: ToolContext, args: Value| {
                    log.lock().unwrap().push(args);
                    async { "ok" }
                })
                .build()
                .unwrap(),
        )
        .unwrap();
    (store, seen)
}

async fn run_with(code: &str, limits: CodeLimits) -> (AgentToolResult, Vec<Value>) {
    let (store, seen) = echo_store();
    let run_code =
        CodeMode::new()
            .limits(limits)
            .tool(&store, ToolExecutor::new(), ApprovalPolicy::default());
    let result = run_code.execute("c1", json!({ "code": code })).await;
    let seen = seen.lock().unwrap().clone();
    (result, seen)
}

async fn run(code: &str) -> (AgentToolResult, Vec<Value>) {
    run_with(code, CodeLimits::default()).await
}

/// Runs `tools.echo(<value>)` catching its error: what the program printed, and the runs of `echo`.
async fn send(value: &str) -> (String, Vec<Value>) {
    let program = format!(
        "const v = {value};\ntry {{ await tools.echo(v); print('sent') }} catch (e) {{ print(e.name + ': ' + e.message) }}"
    );
    let (result, seen) = run(&program).await;
    assert!(!result.is_error, "{}", result.text_content());
    (result.text_content(), seen)
}

// ---- arguments: exactly, or refused naming the path ----

const ONLY_PLAIN: &str =
    "; send only plain objects, arrays, strings, finite numbers, booleans and null\n";

#[tokio::test]
async fn arguments_nested_past_the_depth_limit_are_refused_and_the_tool_never_runs() {
    let (printed, seen) =
        send("(() => { let v = {}; for (let i = 0; i < 200; i++) v = { a: v }; return v })()")
            .await;
    let path = format!("args{}", ".a".repeat(100));
    assert_eq!(
        printed,
        format!(
            "ToolError: the arguments cannot be sent as JSON: {path} is nested deeper than 100 levels{ONLY_PLAIN}"
        )
    );
    assert!(seen.is_empty(), "the tool ran with {seen:?}");
    // 100 levels are sent exactly.
    let (printed, seen) =
        send("(() => { let v = 1; for (let i = 0; i < 99; i++) v = [v]; return { a: v } })()")
            .await;
    assert_eq!(printed, "sent\n");
    let mut expected = json!(1);
    for _ in 0..99 {
        expected = json!([expected]);
    }
    assert_eq!(seen, vec![json!({ "a": expected })]);
}

#[tokio::test]
async fn values_json_cannot_carry_are_refused_naming_their_path() {
    for (value, refusal) in [
        (
            r#"{ s: "\uD800" }"#,
            "args.s is a string with an unpaired surrogate",
        ),
        (
            r#"{ list: ["ok", "a\uDC00"] }"#,
            "args.list[1] is a string with an unpaired surrogate",
        ),
        (
            r#"{ ["k\uD800"]: 1 }"#,
            r#"args["k\ud800"] is under a key with an unpaired surrogate"#,
        ),
        (
            "(() => { const o = { a: [] }; o.a.push(o); return o })()",
            "args.a[0] is a cycle (it contains itself)",
        ),
        (
            "{ n: 10n }",
            "args.n is a BigInt (send it as a string or a number)",
        ),
        ("{ f: () => 1 }", "args.f is a function"),
        ("{ s: Symbol('x') }", "args.s is a symbol"),
        ("{ x: NaN }", "args.x is NaN, not a JSON number"),
        (
            "{ x: [Infinity] }",
            "args.x[0] is Infinity, not a JSON number",
        ),
        (
            "{ p: tools.echo({}) }",
            "args.p is a Promise (await it first)",
        ),
        (
            "{ m: new Map([[1, 2]]) }",
            "args.m is a Map (use Object.fromEntries)",
        ),
        (
            "{ 'two words': new Set() }",
            r#"args["two words"] is a Set (use an array)"#,
        ),
        (
            "{ b: new Uint8Array(2) }",
            "args.b is binary data (use an array)",
        ),
    ] {
        let (printed, seen) = send(value).await;
        assert_eq!(
            printed,
            format!("ToolError: the arguments cannot be sent as JSON: {refusal}{ONLY_PLAIN}"),
            "{value}"
        );
        // The promise of `{ p: tools.echo({}) }` is a call of its own, which runs.
        assert!(
            seen.iter().all(|v| v == &json!({})),
            "{value}: the tool ran with {seen:?}"
        );
    }
}

#[tokio::test]
async fn a_value_shared_twice_is_no_cycle_and_is_sent_as_json_stringify_gives_it() {
    let (printed, seen) =
        send("(() => { const s = { x: 1 }; return { a: s, b: [s, s], d: undefined } })()").await;
    assert_eq!(printed, "sent\n");
    assert_eq!(
        seen,
        vec![json!({"a": {"x": 1}, "b": [{"x": 1}, {"x": 1}]})]
    );
}

// ---- the result: one limit for everything that leaves the sandbox ----

#[tokio::test]
async fn every_way_out_of_the_sandbox_is_held_to_the_output_limit_with_a_note() {
    let limit = 65_536;
    for (program, is_error, left_out) in [
        ("'x'.repeat(20_000_000)", false, 20_000_000 - limit),
        ("throw new Error('y'.repeat(20_000_000))", true, 0),
        (
            "const o = {}; for (let i = 0; i < 300000; i++) o['key' + i] = i; o",
            false,
            0,
        ),
        (
            "print('z'.repeat(60_000)); 'w'.repeat(10_000)",
            false,
            70_001 - limit,
        ),
    ] {
        let (result, _) = run(program).await;
        let text = result.text_content();
        assert_eq!(result.is_error, is_error, "{program}");
        assert!(text.len() < limit + 200, "{program}: {} bytes", text.len());
        let note = " more bytes left out: what a program prints, returns and throws is held to 65536 bytes together)";
        assert!(
            text.ends_with(note),
            "{program}: {}",
            &text[text.len() - 200..]
        );
        if left_out > 0 {
            assert!(text.ends_with(&format!("… ({left_out}{note}")), "{program}");
        }
    }
    // A smaller limit is the same one.
    let (result, _) = run_with(
        "'v'.repeat(1000)",
        CodeLimits::default().max_output_bytes(100),
    )
    .await;
    assert_eq!(
        result.text_content(),
        format!(
            "{}… (900 more bytes left out: what a program prints, returns and throws is held to 100 bytes together)",
            "v".repeat(100)
        )
    );
}

// ---- calls started and never awaited ----

#[tokio::test]
async fn a_call_the_program_never_awaits_runs_to_its_result_before_the_program_ends() {
    let (result, seen) = run(
        "tools.echo({ n: 1 }); tools.echo({ n: 2 }).then(() => print('second done')); print('end')",
    )
    .await;
    assert!(!result.is_error, "{}", result.text_content());
    assert_eq!(seen, vec![json!({"n": 1}), json!({"n": 2})]);
    assert_eq!(result.text_content(), "end\nsecond done\n");
    // Also when the program throws after starting it.
    let (result, seen) = run("tools.echo({ n: 3 }); throw new Error('boom')").await;
    assert!(result.is_error);
    assert_eq!(seen, vec![json!({"n": 3})]);
    assert!(
        result
            .text_content()
            .starts_with("the program failed: Error: boom"),
        "{}",
        result.text_content()
    );
}

#[tokio::test]
async fn a_call_a_stopped_program_never_ran_is_reported_as_cancelled() {
    let limits = CodeLimits::default().max_time(std::time::Duration::from_millis(200));
    let (result, seen) = run_with(
        "tools.echo({ n: 1 }); tools.echo({ n: 2 }); for (;;) {}",
        limits,
    )
    .await;
    assert!(seen.is_empty());
    let text = result.text_content();
    assert!(
        text.starts_with("the program stopped: the program exceeded its time limit"),
        "{text}"
    );
    assert!(
        text.ends_with("\n2 tool call(s) the program started were cancelled, since it stopped before they ran: `echo`, `echo`"),
        "{text}"
    );
}

// ---- the property ----

/// A random JavaScript value, as source text: whether every leaf is one JSON can carry, and how deep
/// its arrays and objects nest.
#[derive(Clone, Debug)]
struct Js {
    source: String,
    fine: bool,
    depth: usize,
}

impl Js {
    fn leaf(source: String, fine: bool) -> Js {
        Js {
            source,
            fine,
            depth: 0,
        }
    }

    /// Whether the value, sent as `{ v: <value> }`, must reach the tool (else it must be refused).
    fn carried(&self) -> bool {
        self.fine && self.depth < 100
    }
}

fn number() -> impl Strategy<Value = Js> {
    let edge = prop::sample::select(vec![
        ("0", true),
        ("-0", true),
        ("5e-324", true),
        ("1.7976931348623157e308", true),
        ("9007199254740993", true),
        ("-9007199254740992", true),
        ("1e21", true),
        ("0.1", true),
        ("NaN", false),
        ("Infinity", false),
        ("-Infinity", false),
    ])
    .prop_map(|(n, fine)| Js::leaf(n.to_owned(), fine));
    let any = any::<f64>()
        .prop_map(|n| Js::leaf(format!("{n:e}").replace("inf", "Infinity"), n.is_finite()));
    prop_oneof![edge, any]
}

fn string() -> impl Strategy<Value = Js> {
    // Any UTF-16 code units, lone surrogates included, written as escapes.
    let unit = prop_oneof![0u16..0x80, 0xD7F0u16..0xE010, any::<u16>()];
    prop::collection::vec(unit, 0..6).prop_map(|units| {
        let fine = String::from_utf16(&units).is_ok();
        let source: String = units.iter().map(|u| format!("\\u{u:04X}")).collect();
        Js::leaf(format!("\"{source}\""), fine)
    })
}

fn leaf() -> impl Strategy<Value = Js> {
    prop_oneof![
        number(),
        string(),
        prop::sample::select(vec!["true", "false", "null"])
            .prop_map(|s| Js::leaf(s.to_owned(), true)),
    ]
}

fn nest(open: &str, close: &str, parts: Vec<(Option<Js>, Js)>) -> Js {
    let source = parts
        .iter()
        .map(|(key, value)| match key {
            Some(key) => format!("[{}]: {}", key.source, value.source),
            None => value.source.clone(),
        })
        .collect::<Vec<_>>()
        .join(", ");
    Js {
        source: format!("{open}{source}{close}"),
        fine: parts
            .iter()
            .all(|(key, value)| value.fine && key.as_ref().is_none_or(|k| k.fine)),
        depth: 1 + parts
            .iter()
            .map(|(_, value)| value.depth)
            .max()
            .unwrap_or(0),
    }
}

fn value() -> impl Strategy<Value = Js> {
    leaf().prop_recursive(6, 48, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(|items| nest(
                "[",
                "]",
                items.into_iter().map(|i| (None, i)).collect()
            )),
            prop::collection::vec((string(), inner.clone()), 0..4).prop_map(|entries| nest(
                "{",
                "}",
                entries.into_iter().map(|(k, v)| (Some(k), v)).collect()
            )),
            // Deep: the value nested in 40 to 110 arrays, around the limit of 100.
            (inner, 40usize..110).prop_map(|(v, depth)| Js {
                source: format!("{}{}{}", "[".repeat(depth), v.source, "]".repeat(depth)),
                fine: v.fine,
                depth: v.depth + depth,
            }),
        ]
    })
}

#[test]
fn random_values_reach_the_tool_exactly_as_a_json_round_trip_gives_them_or_are_refused() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let config = Config {
        cases: 200,
        failure_persistence: None,
        ..Config::default()
    };
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]);
    let mut runner = TestRunner::new_with_rng(config, rng);
    runner
        .run(&value(), |js| {
            // The program sends the value, and prints what a JSON round trip in JavaScript gives.
            let program = format!(
                "const v = {{ v: {} }};\nlet round;\ntry {{ round = JSON.stringify(v) }} catch (e) {{ round = 'throws' }}\n\
                 try {{ await tools.echo(v); print('sent') }} catch (e) {{ print('refused: ' + e.message) }}\nprint(round)",
                js.source
            );
            let (result, seen) = runtime.block_on(run(&program));
            let text = result.text_content();
            prop_assert!(!result.is_error, "{text}");
            let (outcome, round) = text.trim_end().split_once('\n').unwrap();
            if outcome == "sent" {
                prop_assert_eq!(seen.len(), 1);
                // What JSON.stringify gave, read as JSON: exactly what the tool got.
                let expected: Value = serde_json::from_str(round).expect("a value sent was valid JSON");
                prop_assert_eq!(&seen[0], &expected);
                prop_assert!(js.carried(), "sent a value JSON cannot carry: {}", js.source);
            } else {
                prop_assert!(outcome.starts_with("refused: the arguments cannot be sent as JSON: args.v"), "{outcome}");
                prop_assert!(seen.is_empty(), "refused, yet the tool ran with {seen:?}");
                prop_assert!(!js.carried(), "refused a value JSON carries: {}: {outcome}", js.source);
            }
            Ok(())
        })
        .unwrap();
}
