//! Large catalogs (issue 34): deferred tools, the local `search_tools` tool, the run's loaded tools
//! across a save and a resume in another process, and bad input to the search.

use std::process::{Command, Stdio};
use std::sync::Arc;

use serde_json::{Value, json};
use yiem_core::catalog::SEARCH_TOOLS;
use yiem_core::{
    agent::{Agent, RunLimits, RunStop},
    llm::{ScriptedModel, ScriptedTurn},
    message::{AgentMessage, ToolResultMessage},
};
use yiem_tests::catalog;

fn results(messages: &[AgentMessage]) -> Vec<&ToolResultMessage> {
    messages
        .iter()
        .filter_map(|message| match message {
            AgentMessage::ToolResult(result) => Some(result),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_2000_tool_run_searches_loads_two_calls_them_and_resumes_elsewhere_with_them_loaded() {
    let model = Arc::new(catalog::model());
    let agent = catalog::agent(Arc::clone(&model), None);
    assert_eq!(agent.tools().len(), catalog::GENERATED + 4);
    agent.set_limits(RunLimits::default().max_turns(Some(2)));
    let outcome = agent.prompt("Bill Ada, then refund her 5 euros.").await;
    assert_eq!(outcome.stop, RunStop::TurnLimit { turns: 2 });

    // The first request sends the two tools that are not deferred; the second adds the two found, in
    // the order the search ranked them, after the ones already sent.
    let ran = results(&outcome.messages);
    let found = ran[0].result.loaded_tool_names().to_vec();
    let mut both = found.clone();
    both.sort();
    assert_eq!(both, ["refund_payment", "send_invoice"]);
    assert!(
        ran[0]
            .result
            .text_content()
            .contains("- send_invoice: Send an invoice"),
        "{}",
        ran[0].result.text_content()
    );
    let offered = catalog::offered(&model);
    assert_eq!(offered[0], ["note", SEARCH_TOOLS]);
    assert_eq!(offered[1], [&offered[0][..], &found[..]].concat());
    assert_eq!(
        ran[1].result.text_content(),
        r#"send_invoice done with {"customer":"ada"}"#
    );
    assert_eq!(
        ran[2].result.text_content(),
        r#"refund_payment done with {"amount":5}"#
    );
    // No deferred definition went anywhere else.
    assert!(model.requests()[0].deferred.len() == catalog::GENERATED + 2);
    assert!(model.requests()[1].deferred.len() == catalog::GENERATED + 2);

    // Saved, and resumed in a process of its own: the loaded tools are still loaded.
    let saved = agent.run_state().to_json();
    let value: Value = serde_json::from_str(&saved).unwrap();
    let loaded = json!([
        SEARCH_TOOLS,
        found[0],
        found[1],
        "send_invoice",
        "refund_payment"
    ]);
    let mut expected: Vec<Value> = Vec::new();
    for name in loaded.as_array().unwrap() {
        if !expected.contains(name) {
            expected.push(name.clone());
        }
    }
    assert_eq!(value["loaded_tools"], json!(expected));
    let mut child = Command::new(env!("CARGO_BIN_EXE_catalog-resume"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the catalog-resume binary runs");
    {
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(saved.as_bytes())
            .unwrap();
    }
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(answer["stop"]["reason"], "finished");
    assert_eq!(
        answer["text"],
        r#"send_invoice done with {"customer":"ada"}; refund_payment done with {"amount":5}"#
    );
    // The other process's request is the last one of this process's, extended by nothing new: a
    // prefix-extension of every earlier list.
    assert_eq!(answer["offered"], json!([offered[1]]));
    assert_eq!(answer["loaded"], json!(expected));
}

#[tokio::test]
async fn a_deferred_tool_called_by_name_without_a_search_is_checked_runs_and_counts_as_loaded() {
    let model = Arc::new(ScriptedModel::new([
        ScriptedTurn::tool_call("refund_payment", json!({"amount": "five"})),
        ScriptedTurn::tool_call("refund_payment", json!({"amount": 5})),
        ScriptedTurn::text("refunded"),
    ]));
    let agent = catalog::agent(Arc::clone(&model), None);
    let outcome = agent.prompt("Refund 5 euros.").await;
    assert_eq!(outcome.stop, RunStop::Finished);
    let ran = results(&outcome.messages);
    assert!(ran[0].result.is_error);
    assert!(
        ran[0]
            .result
            .text_content()
            .contains("at `/amount`: expected an integer, got the string \"five\""),
        "{}",
        ran[0].result.text_content()
    );
    assert!(!ran[1].result.is_error);
    let offered = catalog::offered(&model);
    assert_eq!(offered[0], ["note", SEARCH_TOOLS]);
    assert_eq!(offered[1], ["note", SEARCH_TOOLS, "refund_payment"]);
    assert_eq!(offered[2], offered[1]);
    assert_eq!(agent.run_state().loaded_tools(), ["refund_payment"]);
}

#[tokio::test]
async fn a_tool_removed_between_the_search_and_the_call_gets_the_usual_unknown_tool_result() {
    let model = Arc::new(catalog::model());
    let agent: Agent = catalog::agent(Arc::clone(&model), None);
    agent.set_limits(RunLimits::default().max_turns(Some(1)));
    let outcome = agent.prompt("Bill Ada, then refund her 5 euros.").await;
    assert_eq!(outcome.stop, RunStop::TurnLimit { turns: 1 });
    assert!(agent.tools().remove("send_invoice").is_some());
    agent.set_limits(RunLimits::default());
    let outcome = agent
        .resume(Vec::<(String, yiem_core::agent::Decision)>::new())
        .await
        .unwrap();
    assert_eq!(outcome.stop, RunStop::Finished);
    let ran = results(&outcome.messages);
    assert!(ran[0].result.is_error);
    assert!(
        ran[0].result.text_content()
            == "tool `send_invoice` not found. Available tools: note, search_tools (1999 more not \
                shown: find them with `search_tools`)",
        "{}",
        ran[0].result.text_content()
    );
    assert_eq!(
        ran[1].result.text_content(),
        r#"refund_payment done with {"amount":5}"#
    );
    // The removed tool is no longer offered, though the run remembers finding it.
    let offered = catalog::offered(&model);
    assert_eq!(offered[1], ["note", SEARCH_TOOLS, "refund_payment"]);
}

#[tokio::test]
async fn bad_searches_are_refused_with_what_was_wrong() {
    let store = catalog::store();
    let search = |args: Value| {
        let store = store.clone();
        async move { store.execute("s1", SEARCH_TOOLS, args).await }
    };
    let cases = [
        (json!({"query": ""}), "/query"),
        (json!({"query": "a".repeat(100_000)}), "/query"),
        (json!({"query": "invoice", "k": 0}), "/k"),
        (json!({"query": "invoice", "k": 1_000_000}), "/k"),
        (json!({"query": "invoice", "limit": 3}), "limit"),
    ];
    for (args, names) in cases {
        let result = search(args.clone()).await;
        assert!(result.is_error, "{args}: {}", result.text_content());
        assert!(
            result.text_content().contains(names),
            "{args}: {}",
            result.text_content()
        );
        assert!(result.loaded_tool_names().is_empty());
    }
    // Blank words are not a query either.
    let blank = search(json!({"query": "   "})).await;
    assert!(blank.is_error);
    assert!(
        blank.text_content().contains("`query` is empty"),
        "{}",
        blank.text_content()
    );
    // Words that match nothing say so, and load nothing.
    let nothing = search(json!({"query": "zzyzx qqq"})).await;
    assert!(!nothing.is_error);
    assert!(
        nothing.text_content().starts_with("No tool matches"),
        "{}",
        nothing.text_content()
    );
    // The largest k allowed loads at most that many.
    let many = search(json!({"query": "list a record in the crm service", "k": 20})).await;
    assert_eq!(many.loaded_tool_names().len(), 20);
}

/// A tool that does nothing, which a search finds by its `description`.
fn described(name: impl Into<String>, description: &str) -> yiem_core::tool::AgentTool {
    yiem_core::tool::AgentTool::builder(name)
        .description(description)
        .handler(|_, _| async { "" })
        .build()
        .unwrap()
}

/// A store called `name` whose `tools` (name, description) are all deferred.
fn deferred_store(name: &str, tools: &[(&str, &str)]) -> yiem_core::store::ToolStore {
    let store = yiem_core::store::ToolStore::new(name).with_deferred_loading();
    for (name, description) in tools {
        store.register(described(*name, description)).unwrap();
    }
    store
}

/// The plain tools a store holds before an MCP server's join it.
fn plain_store(tools: usize) -> yiem_core::store::ToolStore {
    let store = yiem_core::store::ToolStore::new("chat");
    for at in 0..tools {
        store
            .register(described(format!("local_{at}"), "A local tool."))
            .unwrap();
    }
    store
}

#[tokio::test]
async fn a_large_catalog_defers_an_mcp_servers_tools_and_adds_the_search_a_small_one_does_not() {
    use yiem_core::catalog::{ToolSearch, defer_when_large};
    use yiem_core::mcp::McpClient;
    let server = env!("CARGO_BIN_EXE_mcp-test-server");
    let search = ToolSearch::bm25();

    // 10 local tools and the server's: at most 30, nothing changes.
    let small = plain_store(10);
    let client = McpClient::command(server, Vec::<String>::new())
        .connect()
        .await
        .unwrap();
    let names = client.register(&small).await.unwrap();
    assert!(small.len() <= 30, "{}", small.len());
    assert_eq!(defer_when_large(&small, &names, None, &search).unwrap(), 0);
    assert!(!small.contains(SEARCH_TOOLS));
    assert!(names.iter().all(|name| !small.is_deferred(name)));

    // 30 local tools and the server's: every server tool is deferred, the search is added, and a
    // refresh of the server's list keeps them deferred.
    let large = plain_store(30);
    let client = McpClient::command(server, Vec::<String>::new())
        .connect()
        .await
        .unwrap();
    let names = client.register(&large).await.unwrap();
    assert_eq!(
        defer_when_large(&large, &names, None, &search).unwrap(),
        names.len()
    );
    client.set_defer_loading(true);
    assert!(large.contains(SEARCH_TOOLS));
    assert!(names.iter().all(|name| large.is_deferred(name)));
    assert!(!large.is_deferred("local_0") && !large.is_deferred(SEARCH_TOOLS));
    client.refresh().await.unwrap();
    assert!(
        names.iter().all(|name| large.is_deferred(name)),
        "deferred after a refresh"
    );
    // The model finds a server tool by what it does, and it runs through the client.
    let found = large
        .execute("s1", SEARCH_TOOLS, json!({"query": "add two numbers"}))
        .await;
    assert!(
        found.loaded_tool_names().iter().any(|name| name == "add"),
        "{}",
        found.text_content()
    );
}

#[tokio::test]
async fn one_search_over_two_stores_at_the_same_version_finds_each_stores_own_tools() {
    use yiem_core::catalog::ToolSearch;
    let invoices = deferred_store(
        "send_invoice",
        &[("send_invoice", "Send an invoice by e-mail.")],
    );
    let weather = deferred_store(
        "get_weather",
        &[("get_weather", "The weather forecast for a city.")],
    );
    assert_eq!(*invoices.changes().borrow(), *weather.changes().borrow());
    let search = ToolSearch::bm25();
    let found = |store: &yiem_core::store::ToolStore, query: &str| -> Vec<String> {
        search
            .search(store, query, 5)
            .into_iter()
            .map(|(tool, _)| tool.name().to_owned())
            .collect()
    };
    assert_eq!(found(&invoices, "invoice"), ["send_invoice"]);
    // The index made for the first store is not the second one's, though both are at version 1.
    assert_eq!(found(&weather, "weather forecast"), ["get_weather"]);
    assert!(found(&weather, "invoice").is_empty());
}

/// An embedder over a few "concepts": a text's vector counts the words of each (a stand-in for a
/// sentence-embedding model, whose vectors are close for texts that mean the same thing).
mod concepts {
    use std::sync::{Arc, Mutex};

    use yiem_core::catalog::{EmbedError, Embedder};

    const CONCEPTS: [&[&str]; 3] = [
        &["dollar", "currenc", "euro", "exchange", "money"],
        &["weather", "rain", "forecast", "sunny"],
        &["invoice", "bill", "customer"],
    ];

    /// How the embedder misbehaves, if it does.
    #[derive(Clone, Copy, PartialEq)]
    pub enum Fault {
        None,
        /// Fails every call.
        Fails,
        /// Returns one vector too few.
        TooFew,
        /// Returns vectors one number short for queries (one text) only.
        ShortQueries,
        /// Returns NaN for queries.
        NanQueries,
    }

    #[derive(Clone)]
    pub struct Concepts {
        pub fault: Fault,
        /// Every text it was asked to embed, in order.
        pub asked: Arc<Mutex<Vec<String>>>,
    }

    impl Concepts {
        pub fn new(fault: Fault) -> Self {
            Concepts {
                fault,
                asked: Arc::default(),
            }
        }
    }

    impl Embedder for Concepts {
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
            self.asked
                .lock()
                .unwrap()
                .extend(texts.iter().map(|text| text.to_string()));
            let query = texts.len() == 1;
            let mut vectors: Vec<Vec<f32>> = texts
                .iter()
                .map(|text| {
                    let text = text.to_lowercase();
                    let mut vector: Vec<f32> = CONCEPTS
                        .iter()
                        .map(|words| {
                            words.iter().filter(|word| text.contains(*word)).count() as f32
                        })
                        .collect();
                    match self.fault {
                        Fault::ShortQueries if query => {
                            vector.pop();
                        }
                        Fault::NanQueries if query => vector[0] = f32::NAN,
                        _ => {}
                    }
                    vector
                })
                .collect();
            match self.fault {
                Fault::Fails => Err(EmbedError::failed("the model server is down")),
                Fault::TooFew => {
                    vectors.pop();
                    Ok(vectors)
                }
                _ => Ok(vectors),
            }
        }
    }
}

/// Three deferred tools; no word of "500 US dollars in Canadian money, please" is in any of them.
fn money_store() -> yiem_core::store::ToolStore {
    deferred_store(
        "agent",
        &[
            ("send_invoice", "Send an invoice to a customer by e-mail."),
            (
                "currency_exchange_convert",
                "Convert an amount between currencies at today's rate.",
            ),
            ("get_weather", "The weather forecast for a city."),
        ],
    )
}

const MONEY: &str = "How much is 500 US dollars in Canadian money?";

fn names(found: Vec<(yiem_core::tool::AgentTool, f32)>) -> Vec<String> {
    found
        .into_iter()
        .map(|(tool, _)| tool.name().to_owned())
        .collect()
}

#[tokio::test]
async fn a_hybrid_search_finds_by_meaning_a_tool_the_words_alone_miss() {
    use concepts::{Concepts, Fault};
    use yiem_core::catalog::{HybridRanker, ToolSearch};
    let store = money_store();
    assert!(
        ToolSearch::bm25().search(&store, MONEY, 3).is_empty(),
        "no word in common"
    );
    let embedder = Concepts::new(Fault::None);
    let asked = embedder.asked.clone();
    let search = ToolSearch::new(HybridRanker::new(embedder));
    store.register(search.tool(&store)).unwrap();
    let found = store
        .execute("s1", SEARCH_TOOLS, json!({"query": MONEY, "k": 1}))
        .await;
    assert!(!found.is_error, "{}", found.text_content());
    assert_eq!(found.loaded_tool_names(), ["currency_exchange_convert"]);
    // Each tool embedded once (name words, description), then the query.
    assert_eq!(
        *asked.lock().unwrap(),
        [
            "send invoice. Send an invoice to a customer by e-mail.",
            "currency exchange convert. Convert an amount between currencies at today's rate.",
            "get weather. The weather forecast for a city.",
            MONEY,
        ]
    );
    // Words still count: a query in the tools' own words finds the same tool first.
    assert_eq!(
        names(search.search(&store, "send an invoice", 1)),
        ["send_invoice"]
    );
}

#[test]
fn a_failing_or_wrong_embedder_falls_back_to_the_words_and_says_so() {
    use std::sync::{Arc, Mutex};

    use concepts::{Concepts, Fault};
    use yiem_core::catalog::{EmbedError, Fallback, HybridRanker, ToolSearch};
    let store = money_store();
    let words = |query: &str| names(ToolSearch::bm25().search(&store, query, 3));
    let cases = [
        (
            Fault::Fails,
            Fallback::Tools(EmbedError::failed("the model server is down")),
        ),
        (
            Fault::TooFew,
            Fallback::Tools(EmbedError::Count {
                asked: 3,
                returned: 2,
            }),
        ),
        (
            Fault::ShortQueries,
            Fallback::Query(EmbedError::Length {
                expected: 3,
                returned: 2,
            }),
        ),
        (Fault::NanQueries, Fallback::Query(EmbedError::NotFinite)),
    ];
    for (fault, expected) in cases {
        let told = Arc::new(Mutex::new(Vec::new()));
        let hook = Arc::clone(&told);
        let search = ToolSearch::new(
            HybridRanker::new(Concepts::new(fault))
                .on_fallback(move |fallback| hook.lock().unwrap().push(fallback.clone())),
        );
        // The words alone rank: the money query finds nothing, an invoice query its tool.
        assert!(search.search(&store, MONEY, 3).is_empty());
        assert_eq!(
            names(search.search(&store, "invoice for a customer", 3)),
            words("invoice for a customer")
        );
        let told = told.lock().unwrap();
        // Told once when the tools fail (the index is made once), once per query when a query does.
        let times = if matches!(expected, Fallback::Tools(_)) {
            1
        } else {
            2
        };
        assert_eq!(*told, vec![expected.clone(); times]);
    }
    assert_eq!(
        Fallback::Query(EmbedError::NotFinite).to_string(),
        "embedding the query failed (the embedder returned an empty vector or one with a number that \
         is not finite): it is ranked by words alone"
    );
}

#[test]
fn a_hybrid_search_of_a_blank_or_huge_query_ranks_without_surprises() {
    use concepts::{Concepts, Fault};
    use yiem_core::catalog::{HybridRanker, ToolSearch};
    let store = money_store();
    let embedder = Concepts::new(Fault::None);
    let asked = embedder.asked.clone();
    let search = ToolSearch::new(HybridRanker::new(embedder));
    // A blank query is not embedded, and finds nothing.
    assert!(search.search(&store, "  ", 3).is_empty());
    assert!(search.search(&store, "invoice", 0).is_empty());
    assert_eq!(asked.lock().unwrap().len(), 3, "only the tools");
    // A 100 kB query is embedded whole, like any other (found by meaning alone: "rain").
    let huge = format!("{} will it rain", "x".repeat(100_000));
    assert_eq!(names(search.search(&store, &huge, 1)), ["get_weather"]);
}
