//! Schema dialects over a corpus of argument types: golden files for every dialect, a checker that encodes
//! each provider's documented constraints, and a property test that values of every type survive the trip
//! through every dialect, sent with explicit `null`s for their `None`s and without them.
//!
//! Rewrite the golden files after a deliberate change with `YIEM_BLESS=1 cargo test --test dialects`, and
//! review the diff like code.

mod dialects {
    pub mod checker;
    pub mod corpus;
    pub mod schemas;
    pub mod strategies;
}

use std::collections::BTreeSet;
use std::path::PathBuf;

use proptest::prelude::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use yiem_core::store::Dialect;

use dialects::schemas::{dialect_schema, fill_nulls, problems};
use dialects::{checker, corpus, strategies};

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("golden")
}

/// A definition as its golden file holds it: the definition, or `{"error": "..."}`.
fn golden_value(tool: &yiem_core::tool::AgentTool, dialect: Dialect) -> Value {
    match tool.definition(dialect) {
        Ok(definition) => definition.clone(),
        Err(error) => json!({"error": error.to_string()}),
    }
}

#[test]
fn the_corpus_has_at_least_twenty_argument_types() {
    let tools = corpus::tools();
    assert_eq!(tools.len(), 29);
    let names: BTreeSet<&str> = tools.iter().map(|(name, _)| *name).collect();
    assert_eq!(names.len(), 29);
}

#[test]
fn every_dialect_matches_its_golden_files() {
    let bless = std::env::var_os("YIEM_BLESS").is_some();
    for dialect in Dialect::ALL {
        let dir = golden_dir().join(dialect.as_str());
        if bless {
            std::fs::create_dir_all(&dir).unwrap();
        }
        let mut expected_files = BTreeSet::new();
        for (name, tool) in corpus::tools() {
            let file = dir.join(format!("{name}.json"));
            expected_files.insert(format!("{name}.json"));
            let actual =
                serde_json::to_string_pretty(&golden_value(&tool, dialect)).unwrap() + "\n";
            if bless {
                std::fs::write(&file, &actual).unwrap();
                continue;
            }
            let golden = std::fs::read_to_string(&file)
                .unwrap_or_else(|e| panic!("{}: {e} (bless with YIEM_BLESS=1)", file.display()));
            assert_eq!(actual, golden, "{} differs from the output", file.display());
        }
        let present: BTreeSet<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(
            present,
            expected_files,
            "stale golden files in {}",
            dir.display()
        );
    }
}

#[test]
fn every_golden_definition_passes_the_provider_checker() {
    let mut checked = 0;
    for (name, tool) in corpus::tools() {
        for dialect in Dialect::ALL {
            if let Ok(definition) = tool.definition(dialect) {
                let violations = checker::check(dialect, definition);
                assert_eq!(violations, Vec::<String>::new(), "{name} in {dialect}");
                checked += 1;
            }
        }
    }
    // 29 types x 5 dialects, less the errors: map and flatten_map in strict mode. (Gemini takes map and
    // recursive as `parametersJsonSchema`.)
    assert_eq!(checked, 143);
}

fn corpus_tool(name: &str) -> yiem_core::tool::AgentTool {
    corpus::tools()
        .into_iter()
        .find(|(tool, _)| *tool == name)
        .map(|(_, tool)| tool)
        .unwrap()
}

#[test]
fn the_checker_refuses_the_canonical_schema_in_strict_mode() {
    let canonical = corpus_tool("option_enum").input_schema().clone();
    let definition = json!({
        "type": "function",
        "function": {"name": "option_enum", "description": "d", "parameters": canonical, "strict": true}
    });
    assert_eq!(
        checker::check(Dialect::OpenAiStrict, &definition),
        [
            "/: keyword `$schema` is not accepted",
            "/: keyword `$schema` is not supported",
            "/: objects need `additionalProperties: false`",
            "/: property `unit` must be required",
            "/unit: keyword `default` is not supported",
            "#Unit: keyword `oneOf` is not supported",
            "#Unit: no `type`",
            "#Unit|oneOf0: keyword `const` is not supported",
            "#Unit|oneOf1: keyword `const` is not supported",
        ]
    );
}

#[test]
fn the_checker_refuses_the_canonical_schema_for_gemini() {
    let canonical = corpus_tool("option_struct").input_schema().clone();
    let definition = json!({"name": "option_struct", "description": "d", "parameters": canonical});
    assert_eq!(
        checker::check(Dialect::Gemini, &definition),
        [
            "/: keyword `$schema` is not accepted",
            "/address|anyOf0: no `type`",
            "/address|anyOf1: `type` must be one type name, got \"null\"",
        ]
    );
}

#[test]
fn the_checker_refuses_a_root_union_for_anthropic_and_openai() {
    let canonical = corpus_tool("tagged_root").input_schema().clone();
    let mut schema = canonical.clone();
    schema.as_object_mut().unwrap().remove("$schema");
    let anthropic = json!({"name": "tagged_root", "description": "d", "input_schema": schema});
    assert_eq!(
        checker::check(Dialect::Anthropic, &anthropic),
        [
            "/: the root schema must have \"type\": \"object\"",
            "/: the root must not have `oneOf`",
        ]
    );
    let openai = json!({
        "type": "function",
        "function": {"name": "tagged_root", "description": "d", "parameters": schema}
    });
    assert_eq!(
        checker::check(Dialect::OpenAi, &openai),
        [
            "/: the root schema must have \"type\": \"object\"",
            "/: the root must not have `oneOf`",
        ]
    );
}

/// A value of a corpus type through every dialect that can describe its tool, sent the ways a model
/// following the dialect's schema may send it:
///
/// - as serde writes it, with an explicit `null` for every `None`, at every depth;
/// - with those `null`s left out (every dialect but strict mode, which requires every property);
/// - in strict mode, with every declared property present, `null` where the value has none (the fields of
///   the variants not chosen, when the arguments are a union at the root).
///
/// Each validates against the dialect's schema and, after the dialect's normalization, deserializes back
/// to the value; outside strict mode it also deserializes back as it was sent, because `execute` does not
/// normalize.
fn round_trip<T>(tool_name: &str, value: &T) -> Result<(), TestCaseError>
where
    T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let tool = corpus_tool(tool_name);
    let explicit = serde_json::to_value(value).unwrap();
    for dialect in Dialect::ALL {
        let Ok(definition) = tool.definition(dialect) else {
            continue;
        };
        let schema = dialect_schema(dialect, definition);
        let sent = match (dialect, &schema) {
            (Dialect::OpenAiStrict, Some(schema)) => {
                let mut filled = explicit.clone();
                fill_nulls(schema, schema, &mut filled);
                vec![filled]
            }
            _ => vec![
                explicit.clone(),
                tool.normalize_arguments(dialect, explicit.clone()),
            ],
        };
        for sent in sent {
            if let Some(schema) = &schema {
                let problems = problems(schema, &sent);
                prop_assert!(
                    problems.is_empty(),
                    "{tool_name} in {dialect}: {sent} fails {schema}: {problems:?}"
                );
            }
            if dialect != Dialect::OpenAiStrict {
                let back: T = serde_json::from_value(sent.clone()).unwrap();
                prop_assert_eq!(&back, value, "{} in {} as sent", tool_name, dialect);
            }
            let normalized = tool.normalize_arguments(dialect, sent);
            let back: T = serde_json::from_value(normalized).unwrap();
            prop_assert_eq!(&back, value, "{} in {}", tool_name, dialect);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn option_scalar_round_trips(v in strategies::option_scalar()) { round_trip("option_scalar", &v)?; }
    #[test]
    fn option_enum_round_trips(v in strategies::option_enum()) { round_trip("option_enum", &v)?; }
    #[test]
    fn option_struct_round_trips(v in strategies::option_struct()) { round_trip("option_struct", &v)?; }
    #[test]
    fn option_vec_round_trips(v in strategies::option_vec()) { round_trip("option_vec", &v)?; }
    #[test]
    fn documented_enum_round_trips(v in strategies::documented_enum()) { round_trip("documented_enum", &v)?; }
    #[test]
    fn internally_tagged_round_trips(v in strategies::internally_tagged()) { round_trip("internally_tagged", &v)?; }
    #[test]
    fn externally_tagged_round_trips(v in strategies::externally_tagged()) { round_trip("externally_tagged", &v)?; }
    #[test]
    fn adjacently_tagged_round_trips(v in strategies::adjacently_tagged()) { round_trip("adjacently_tagged", &v)?; }
    #[test]
    fn nested_structs_round_trip(v in strategies::nested_structs()) { round_trip("nested_structs", &v)?; }
    #[test]
    fn vec_of_struct_round_trips(v in strategies::vec_of_struct()) { round_trip("vec_of_struct", &v)?; }
    #[test]
    fn map_round_trips(v in strategies::map()) { round_trip("map", &v)?; }
    #[test]
    fn flatten_struct_round_trips(v in strategies::flatten_struct()) { round_trip("flatten_struct", &v)?; }
    #[test]
    fn flatten_map_round_trips(v in strategies::flatten_map()) { round_trip("flatten_map", &v)?; }
    #[test]
    fn rename_all_round_trips(v in strategies::rename_all()) { round_trip("rename_all", &v)?; }
    #[test]
    fn defaults_round_trip(v in strategies::defaults()) { round_trip("defaults", &v)?; }
    #[test]
    fn deny_unknown_round_trips(v in strategies::deny_unknown()) { round_trip("deny_unknown", &v)?; }
    #[test]
    fn integers_round_trip(v in strategies::integers()) { round_trip("integers", &v)?; }
    #[test]
    fn float_round_trips(v in strategies::float()) { round_trip("float", &v)?; }
    #[test]
    fn recursive_round_trips(v in strategies::recursive()) { round_trip("recursive", &v)?; }
    #[test]
    fn date_strings_round_trip(v in strategies::date_strings()) { round_trip("date_strings", &v)?; }
    #[test]
    fn ten_levels_round_trip(v in strategies::ten_levels()) { round_trip("ten_levels", &v)?; }
    #[test]
    fn option_nested_round_trips(v in strategies::option_nested()) { round_trip("option_nested", &v)?; }
    #[test]
    fn option_in_arrays_round_trips(v in strategies::option_in_arrays()) { round_trip("option_in_arrays", &v)?; }
    #[test]
    fn option_dates_round_trip(v in strategies::option_dates()) { round_trip("option_dates", &v)?; }
    #[test]
    fn flattened_root_round_trips(v in strategies::flattened_root()) { round_trip("flattened_root", &v)?; }
    #[test]
    fn tagged_root_round_trips(v in strategies::tagged_root()) { round_trip("tagged_root", &v)?; }
    #[test]
    fn untagged_root_round_trips(v in strategies::untagged_root()) { round_trip("untagged_root", &v)?; }
    #[test]
    fn tuples_round_trip(v in strategies::tuples()) { round_trip("tuples", &v)?; }
}

#[test]
fn the_no_argument_tool_takes_an_empty_object_in_every_dialect() {
    let tool = corpus_tool("no_arguments");
    for dialect in Dialect::ALL {
        let definition = tool.definition(dialect).unwrap();
        let expected = match dialect {
            Dialect::Gemini => None,
            Dialect::OpenAiStrict => Some(json!({
                "type": "object", "properties": {}, "required": [], "additionalProperties": false
            })),
            _ => Some(json!({"type": "object", "properties": {}})),
        };
        assert_eq!(dialect_schema(dialect, definition), expected, "{dialect}");
    }
}

#[test]
fn a_schema_written_by_hand_goes_to_mcp_as_written_and_to_providers_rewritten() {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                              "properties": {"city": {"type": "string"}}}},
        "properties": {"address": {"$ref": "#/$defs/address"}},
        "if": {"required": ["address"]},
        "then": {"required": ["address"]},
    });
    let tool = yiem_core::tool::AgentTool::builder("as_written")
        .description("A hand-written 2020-12 schema.")
        .input_schema(schema.clone())
        .handler(|_, _| async { "ok" })
        .build()
        .unwrap();
    let mcp = tool.definition(Dialect::Mcp).unwrap();
    assert_eq!(mcp["inputSchema"], schema);
    // A provider still gets its own rewrite: no `$schema`, the reference inlined.
    let openai = tool.definition(Dialect::OpenAi).unwrap();
    let parameters = &openai["function"]["parameters"];
    assert_eq!(parameters.get("$schema"), None);
    assert_eq!(parameters.get("$defs"), None);
    assert_eq!(
        parameters["properties"]["address"]["properties"]["city"]["type"],
        "string"
    );
    // A derived schema is still rewritten for MCP (the corpus's golden files pin it).
    let derived = corpus_tool("nested_structs");
    let derived = derived.definition(Dialect::Mcp).unwrap();
    assert_eq!(derived["inputSchema"].get("$schema"), None);
}
