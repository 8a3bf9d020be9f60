//! `write_tool`: the seeds' self-modifying tools in Rust. A model describes a new tool (name, label,
//! description, arguments, the body of the function) and `write_tool` writes it as one `.rs` file in the
//! tools directory, where `build.rs` finds it: the next `cargo build` compiles it in, with no edit to any
//! other file.
//!
//! Nothing is written unless every check passes: the name is a snake_case Rust identifier and a valid tool
//! name, no tool linked into the program (or listed by the store's `list_tools`) and no file in the
//! directory has that name, the body is a balanced Rust block, and the whole file parses with `syn`. The
//! file is created atomically and never replaces an existing one.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use yiem_core::{
    store::{LIST_TOOLS, ToolStore, static_tools},
    tool,
    tool::{AgentTool, AgentToolResult, State, ToolContext},
};

use crate::sandbox::{self, HostFiles, ShellPolicy};

/// The tools directory this crate was built from (`src/tools`, or `YIEM_TOOLS_DIR` at build time):
/// the directory `build.rs` scanned, and where `write_tool` writes by default.
pub const BUILT_TOOLS_DIR: &str = env!("YIEM_TOOLS_DIR_BUILT");

/// The directory `write_tool` writes into: the [`State`] of a store that holds `write_tool`, so each store
/// (each agent) can have its own. Besides every tool linked into the program, `write_tool` refuses the
/// names a store lists, when told which store ([`refusing_names_of`](Self::refusing_names_of)).
///
/// ```
/// use yiem_core::store::ToolStore;
/// use yiem_tools::write_tool::{ToolsDir, write_tool_tool};
///
/// let dir = tempfile::tempdir().unwrap();
/// let store = ToolStore::new("agent");
/// let mut store = store.clone().with_state(ToolsDir::new(dir.path()).refusing_names_of(&store));
/// store.register(write_tool_tool()).unwrap();
/// assert_eq!(store.state::<ToolsDir>().unwrap().path(), dir.path());
/// ```
#[derive(Clone, Debug)]
pub struct ToolsDir {
    path: PathBuf,
    /// The `list_tools` of the store whose names are refused too (it holds the store weakly).
    list_tools: Option<AgentTool>,
}

impl ToolsDir {
    /// `write_tool` writes into `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        ToolsDir {
            path: path.into(),
            list_tools: None,
        }
    }

    /// The tools directory this crate was built from, [`BUILT_TOOLS_DIR`].
    pub fn built() -> Self {
        ToolsDir::new(BUILT_TOOLS_DIR)
    }

    /// Also refuses every name `store`'s `list_tools` lists when `write_tool` is called (tools registered
    /// later count too).
    pub fn refusing_names_of(mut self, store: &ToolStore) -> Self {
        self.list_tools = Some(store.list_tools_tool());
        self
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The names the store lists, if this directory was told a store.
    async fn taken(&self) -> Result<Vec<String>, String> {
        let Some(list_tools) = &self.list_tools else {
            return Ok(Vec::new());
        };
        let listing = list_tools.execute("write_tool-names", json!({})).await;
        if listing.is_error {
            return Err(format!(
                "tool `write_tool`: cannot list the existing tools: {}",
                listing.text_content()
            ));
        }
        Ok(listed_names(&listing.text_content()))
    }
}

/// Arguments of `write_tool`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
pub struct WriteToolArgs {
    /// The new tool's name, also its Rust function and file name: snake_case (lowercase letters, digits and
    /// single `_`), starting with a letter, at most 64 characters. Call `list_tools` first: the name must be
    /// free.
    pub name: String,
    /// A human-readable name, e.g. `Wine Search`.
    pub label: String,
    /// What the tool does, for the model that will call it.
    pub description: String,
    /// The arguments as a JSON Schema object (`{"type":"object","properties":{...},"required":[...]}`)
    /// with property types `string`, `integer`, `number`, `boolean`, `array` (of those) or `object`. Give
    /// this or `fields`.
    #[serde(default)]
    pub input_schema: Option<Value>,
    /// The arguments as a list of typed fields. Give this or `input_schema`.
    #[serde(default)]
    pub fields: Option<Vec<FieldSpec>>,
    /// The body of `async fn NAME(args: Args) -> Result<String, String>`: Rust statements that end in an
    /// expression such as `Ok(format!("{} wines", args.query))`. An argument is `args.<field>`, an optional
    /// one an `Option`. Only the crates the tools crate depends on can be used.
    pub body: String,
    /// Whether the tool may run at the same time as other tools. Default: false.
    #[serde(default)]
    pub parallel: bool,
}

/// One argument of a tool written by `write_tool`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
pub struct FieldSpec {
    /// The argument's name as the model sends it.
    pub name: String,
    /// Its type.
    #[serde(rename = "type")]
    pub kind: FieldType,
    /// What it means, for the model.
    #[serde(default)]
    pub description: Option<String>,
    /// Whether it must be given. Default: true.
    #[serde(default = "yes")]
    pub required: bool,
}

fn yes() -> bool {
    true
}

/// The type of one argument of a tool written by `write_tool`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FieldType {
    /// Text (`String`).
    String,
    /// A whole number (`i64`).
    Integer,
    /// A number (`f64`).
    Number,
    /// `true` or `false` (`bool`).
    Boolean,
    /// A list of texts (`Vec<String>`).
    StringList,
    /// A list of whole numbers (`Vec<i64>`).
    IntegerList,
    /// A list of numbers (`Vec<f64>`).
    NumberList,
    /// Any JSON value (`serde_json::Value`).
    Json,
}

impl FieldType {
    fn rust(self) -> &'static str {
        match self {
            FieldType::String => "String",
            FieldType::Integer => "i64",
            FieldType::Number => "f64",
            FieldType::Boolean => "bool",
            FieldType::StringList => "Vec<String>",
            FieldType::IntegerList => "Vec<i64>",
            FieldType::NumberList => "Vec<f64>",
            FieldType::Json => "serde_json::Value",
        }
    }
}

/// Create a new tool as Rust source in the tools directory. It becomes callable after the program is
/// rebuilt (`cargo build` compiles in every file of the directory) and restarted. Check the name is free
/// with `list_tools` first. Nothing is written if any check fails.
#[tool(
    label = "Write Tool",
    destructive = false,
    needs_approval,
    open_world = false,
    timeout_ms = 660000
)]
pub async fn write_tool(
    ctx: ToolContext,
    State(dir): State<ToolsDir>,
    args: WriteToolArgs,
) -> AgentToolResult {
    let policy = ShellPolicy::of(&ctx);
    let taken = match dir.taken().await {
        Ok(taken) => taken,
        Err(message) => return AgentToolResult::error(message),
    };
    let path = dir.path.clone();
    let name = args.name.clone();
    let written =
        tokio::task::spawn_blocking(move || write_source(&path, &taken, &args, &policy)).await;
    match written {
        Ok(Ok(path)) => AgentToolResult::text(format!(
            "Wrote tool `{name}` to `{path}`. The next `cargo build` compiles it in (every file in the tools directory is included); restart the program to call `{name}`.",
            path = path.display()
        ))
        .with_details(json!({"name": name, "path": path.display().to_string()})),
        Ok(Err(message)) => AgentToolResult::error(format!("tool `write_tool`: {message}")),
        Err(error) => AgentToolResult::error(format!("tool `write_tool` failed: {error}")),
    }
}

/// The names in a `list_tools` listing (`- name: Label — summary` lines).
fn listed_names(listing: &str) -> Vec<String> {
    listing
        .lines()
        .filter_map(|line| line.strip_prefix("- "))
        .filter_map(|line| line.split_once(':'))
        .map(|(name, _)| name.to_owned())
        .collect()
}

/// What `write_tool` does once it knows the names the store takes: checks `args` and writes the new tool's
/// file into `dir`, refusing the names in `taken` as well as every linked tool. Returns the file written.
///
/// ```
/// use yiem_tools::write_tool::{WriteToolArgs, write_source};
///
/// let dir = tempfile::tempdir().unwrap();
/// let args = WriteToolArgs {
///     name: "shout".into(),
///     label: "Shout".into(),
///     description: "Upper-case a text.".into(),
///     input_schema: Some(serde_json::json!({
///         "type": "object",
///         "properties": {"text": {"type": "string"}},
///         "required": ["text"]
///     })),
///     fields: None,
///     body: "Ok(args.text.to_uppercase())".into(),
///     parallel: true,
/// };
/// let path = write_source(dir.path(), &[], &args, &yiem_tools::ShellPolicy::default()).unwrap();
/// let source = std::fs::read_to_string(path).unwrap();
/// assert!(source.contains("pub async fn shout(args: ShoutArgs) -> Result<String, String> {"));
/// ```
pub fn write_source(
    dir: &Path,
    taken: &[String],
    args: &WriteToolArgs,
    policy: &ShellPolicy,
) -> Result<PathBuf, String> {
    check_name(&args.name)?;
    if args.label.trim().is_empty() {
        return Err("`label` is empty; give a human-readable name such as `Wine Search`".into());
    }
    if args.description.trim().is_empty() {
        return Err(
            "`description` is empty; say what the tool does, for the model that will call it"
                .into(),
        );
    }
    let linked = static_tools();
    if args.name == LIST_TOOLS
        || linked.iter().any(|tool| tool.name() == args.name)
        || taken.contains(&args.name)
    {
        return Err(format!(
            "a tool named `{}` already exists; call `list_tools` and choose a free name",
            args.name
        ));
    }
    if !dir.is_dir() {
        return Err(format!(
            "the tools directory `{}` does not exist",
            dir.display()
        ));
    }
    let path = dir.join(format!("{}.rs", args.name));
    if std::fs::symlink_metadata(&path).is_ok() {
        return Err(format!(
            "the file `{}` already exists; choose another name",
            path.display()
        ));
    }
    let fields = match (&args.input_schema, &args.fields) {
        (Some(_), Some(_)) => {
            return Err("give either `input_schema` or `fields`, not both".into());
        }
        (Some(schema), None) => fields_from_schema(schema)?,
        (None, Some(fields)) => fields_from_specs(fields)?,
        (None, None) => Vec::new(),
    };
    let source = generate(args, &fields)?;
    compile_check(&args.name, &source, policy)?;
    create_new_atomically(&path, source.as_bytes())
        .map_err(|error| format!("cannot write `{}`: {error}", path.display()))?;
    Ok(path)
}

/// Rust keywords (strict and reserved, 2024 edition): not usable as a name.
const KEYWORDS: [&str; 52] = [
    "as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn", "for",
    "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return",
    "self", "Self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where",
    "while", "async", "await", "dyn", "abstract", "become", "box", "do", "final", "macro",
    "override", "priv", "typeof", "unsized", "virtual", "yield", "try", "gen",
];

fn is_snake_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !name.contains("__")
        && !KEYWORDS.contains(&name)
}

fn check_name(name: &str) -> Result<(), String> {
    if name.len() > 64 || !is_snake_identifier(name) || !yiem_core::tool::is_valid_tool_name(name) {
        return Err(format!(
            "`name` `{name}` is not usable: it must be a snake_case Rust identifier (lowercase letters, digits and single `_`, starting with a letter, not a keyword) of at most 64 characters, e.g. `search_wine`"
        ));
    }
    Ok(())
}

/// One field of the generated argument struct.
#[derive(Debug, PartialEq)]
struct Field {
    json_name: String,
    rust_name: String,
    rust_type: String,
    optional: bool,
    description: Option<String>,
}

fn rust_field_name(json_name: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut last_underscore = true;
    for ch in json_name.chars() {
        if ch.is_ascii_uppercase() && !last_underscore {
            out.push('_');
        }
        if ch.is_ascii_alphanumeric() {
            out.push(ch.to_ascii_lowercase());
            last_underscore = false;
        } else if !last_underscore {
            out.push('_');
            last_underscore = true;
        }
    }
    let trimmed = out.trim_end_matches('_');
    let mut name = trimmed.to_owned();
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        name.insert_str(0, "field_");
    }
    if KEYWORDS.contains(&name.as_str()) {
        name.push('_');
    }
    if name.is_empty() {
        return Err(format!(
            "argument `{json_name}` has no letters or digits to name a Rust field after; rename it"
        ));
    }
    Ok(name)
}

fn field(
    json_name: &str,
    rust_type: String,
    optional: bool,
    description: Option<String>,
) -> Result<Field, String> {
    Ok(Field {
        json_name: json_name.to_owned(),
        rust_name: rust_field_name(json_name)?,
        rust_type,
        optional,
        description,
    })
}

fn fields_from_specs(specs: &[FieldSpec]) -> Result<Vec<Field>, String> {
    let fields = specs
        .iter()
        .map(|spec| {
            field(
                &spec.name,
                spec.kind.rust().to_owned(),
                !spec.required,
                spec.description.clone(),
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    check_unique(&fields)?;
    Ok(fields)
}

fn fields_from_schema(schema: &Value) -> Result<Vec<Field>, String> {
    let Some(object) = schema.as_object() else {
        return Err("`input_schema` must be a JSON Schema object such as {\"type\":\"object\",\"properties\":{...}}".into());
    };
    if let Some(kind) = object.get("type")
        && kind != "object"
    {
        return Err(format!(
            "`input_schema` has type {kind}; tool arguments are an object: use \"type\": \"object\""
        ));
    }
    let empty = serde_json::Map::new();
    let properties = match object.get("properties") {
        Some(Value::Object(properties)) => properties,
        Some(_) => return Err("`input_schema.properties` must be an object".into()),
        None => &empty,
    };
    let required: Vec<&str> = match object.get("required") {
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
        Some(_) => return Err("`input_schema.required` must be a list of property names".into()),
        None => Vec::new(),
    };
    if let Some(missing) = required
        .iter()
        .find(|name| !properties.contains_key(**name))
    {
        return Err(format!(
            "`input_schema.required` names `{missing}`, which is not in `properties`"
        ));
    }
    let fields = properties
        .iter()
        .map(|(name, property)| {
            let (rust_type, nullable) = schema_type(property);
            let description = property
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned);
            field(
                name,
                rust_type,
                nullable || !required.contains(&name.as_str()),
                description,
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    check_unique(&fields)?;
    Ok(fields)
}

/// The Rust type of a property schema, and whether it admits `null`.
fn schema_type(property: &Value) -> (String, bool) {
    let simple = |kind: &str| -> Option<&'static str> {
        match kind {
            "string" => Some("String"),
            "integer" => Some("i64"),
            "number" => Some("f64"),
            "boolean" => Some("bool"),
            _ => None,
        }
    };
    let (kind, nullable) = match property.get("type") {
        Some(Value::String(kind)) => (kind.as_str(), false),
        Some(Value::Array(kinds)) => {
            let nullable = kinds.iter().any(|k| k == "null");
            let others: Vec<&str> = kinds
                .iter()
                .filter_map(Value::as_str)
                .filter(|k| *k != "null")
                .collect();
            match others.as_slice() {
                [one] => (*one, nullable),
                _ => ("", nullable),
            }
        }
        _ => ("", false),
    };
    let rust = match kind {
        "array" => {
            let item = property
                .get("items")
                .and_then(|items| items.get("type"))
                .and_then(Value::as_str)
                .and_then(simple)
                .unwrap_or("serde_json::Value");
            format!("Vec<{item}>")
        }
        other => simple(other).unwrap_or("serde_json::Value").to_owned(),
    };
    (rust, nullable)
}

fn check_unique(fields: &[Field]) -> Result<(), String> {
    for (index, field) in fields.iter().enumerate() {
        if let Some(other) = fields[..index]
            .iter()
            .find(|f| f.rust_name == field.rust_name)
        {
            return Err(format!(
                "arguments `{}` and `{}` would both become the Rust field `{}`; rename one",
                other.json_name, field.json_name, field.rust_name
            ));
        }
    }
    Ok(())
}

fn camel_case(name: &str) -> String {
    name.split('_')
        .map(|part| {
            let mut chars = part.chars();
            match chars.next() {
                Some(first) => first.to_ascii_uppercase().to_string() + chars.as_str(),
                None => String::new(),
            }
        })
        .collect()
}

/// The source of the tool file; checked with `syn` before it is returned.
fn generate(args: &WriteToolArgs, fields: &[Field]) -> Result<String, String> {
    // Parsed as the body of a function, so inner attributes (`#![allow(unused)]`) are accepted and a body
    // that closes the function early (`} fn other() {`) is not.
    if let Err(error) = syn::parse_str::<syn::ItemFn>(&format!("fn body() {{\n{}\n}}", args.body)) {
        return Err(format!(
            "`body` is not a valid Rust function body: {error}; give the statements inside the braces of `async fn {}(args) -> Result<String, String> {{ ... }}`, with balanced brackets",
            args.name
        ));
    }
    let name = &args.name;
    let args_type = format!("{}Args", camel_case(name));
    let summary = args.description.lines().next().unwrap_or_default().trim();
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = writeln!(out, "//! `{name}`: {}", summary.replace('\n', " "));
    out.push_str("//!\n//! Written by `write_tool`; `build.rs` compiles in every file of this directory.\n\n");
    out.push_str("use schemars::JsonSchema;\nuse serde::Deserialize;\nuse yiem_core::tool;\n\n");
    let _ = writeln!(out, "/// Arguments of `{name}`.");
    out.push_str("#[derive(Debug, Deserialize, JsonSchema)]\n");
    if fields.is_empty() {
        let _ = writeln!(out, "pub struct {args_type} {{}}\n");
    } else {
        let _ = writeln!(out, "pub struct {args_type} {{");
        for field in fields {
            let doc = field
                .description
                .clone()
                .unwrap_or_else(|| format!("The `{}` argument.", field.json_name));
            let _ = writeln!(out, "    #[doc = {doc:?}]");
            if field.rust_name != field.json_name {
                let _ = writeln!(out, "    #[serde(rename = {:?})]", field.json_name);
            }
            if field.optional {
                out.push_str("    #[serde(default)]\n");
                let _ = writeln!(
                    out,
                    "    pub {}: Option<{}>,",
                    field.rust_name, field.rust_type
                );
            } else {
                let _ = writeln!(out, "    pub {}: {},", field.rust_name, field.rust_type);
            }
        }
        out.push_str("}\n\n");
    }
    let _ = writeln!(out, "#[doc = {:?}]", args.description.trim());
    let mode = if args.parallel { ", parallel" } else { "" };
    let _ = writeln!(out, "#[tool(label = {:?}{mode})]", args.label.trim());
    let param = if args.body.contains("args") {
        "args"
    } else {
        "_args"
    };
    let _ = writeln!(
        out,
        "pub async fn {name}({param}: {args_type}) -> Result<String, String> {{"
    );
    // The body byte for byte: a line of it is never re-indented (that would change string literals).
    out.push_str(&args.body);
    if !args.body.ends_with('\n') {
        out.push('\n');
    }
    out.push_str("}\n");
    syn::parse_file(&out).map_err(|error| {
        format!("the generated file does not parse ({error}); check `body`, `label` and the argument names")
    })?;
    Ok(out)
}

/// The longest a compile check may take (the first one on a machine compiles the dependencies).
pub const CHECK_TIME_LIMIT: std::time::Duration = std::time::Duration::from_secs(600);

/// The crate this one was built from: the compile check's scratch crate uses its workspace's `yiem-core`
/// and lock file.
const TOOLS_CRATE_DIR: &str = env!("CARGO_MANIFEST_DIR");

/// `cargo check` of a scratch crate holding `source` as its only module, with the dependencies a tool
/// file can use (`yiem-core`, `schemars`, `serde`, `serde_json`, `tokio`) at this workspace's versions and
/// edition. Its target directory is kept (`$CARGO_TARGET_DIR/write-tool-check`, else in the system's
/// temporary directory), so only the first check compiles the dependencies. The refusal is the compiler's
/// first error: file, line, column and message.
///
/// The check runs in `bash`'s sandbox (the store's [`ShellPolicy`], without network and with the host's
/// files read-only), from the same environment as a `bash` command (plus the toolchain's `CARGO_HOME`,
/// `RUSTUP_HOME`, `RUSTUP_TOOLCHAIN` and `RUSTC`), so no key reaches it. A source that would read this
/// machine at compile time (`include_str!`, `include_bytes!`, `include!`, `env!`, `option_env!`, a
/// `#[path]` or file module, or a `macro_rules!` that could assemble one) is refused before it is compiled, and only the compiler's diagnostics located
/// in the new file are returned: never the text of another file.
fn compile_check(name: &str, source: &str, policy: &ShellPolicy) -> Result<(), String> {
    refuse_compile_time_reads(source)?;
    let tools_crate = Path::new(TOOLS_CRATE_DIR);
    let workspace = tools_crate.parent().unwrap_or(tools_crate);
    let core = workspace.join("yiem-core");
    if !core.join("Cargo.toml").is_file() {
        return Err(format!(
            "cannot check that the tool compiles: the yiem source tree (`{}`) is not on this machine",
            core.display()
        ));
    }
    let scratch = tempfile::Builder::new()
        .prefix("yiem-write-tool-check-")
        .tempdir()
        .map_err(|error| format!("cannot check that the tool compiles: {error}"))?;
    let manifest = format!(
        r#"[package]
name = "yiem-write-tool-check"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
yiem-core = {{ path = {core:?} }}
schemars = {{ version = "1.2", default-features = false, features = ["derive", "std"] }}
serde = {{ version = "1.0", features = ["derive"] }}
serde_json = "1.0"
tokio = {{ version = "1.54", default-features = false, features = ["rt", "time", "macros", "sync"] }}

[workspace]

[profile.dev]
debug = 0
"#,
        core = core.display().to_string()
    );
    let write = |path: &Path, text: &str| {
        std::fs::create_dir_all(path.parent().unwrap_or(Path::new(".")))
            .and_then(|()| std::fs::write(path, text))
            .map_err(|error| format!("cannot check that the tool compiles: {error}"))
    };
    write(&scratch.path().join("Cargo.toml"), &manifest)?;
    write(
        &scratch.path().join("src/lib.rs"),
        &format!("#![allow(dead_code)]\nmod {name};\n"),
    )?;
    write(&scratch.path().join(format!("src/{name}.rs")), source)?;
    let lock = workspace.join("Cargo.lock");
    let offline = std::fs::copy(&lock, scratch.path().join("Cargo.lock")).is_ok();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir)
        .join("write-tool-check");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let policy = ShellPolicy {
        network: false,
        host_files: HostFiles::ReadOnly,
        ..policy.clone()
    };
    let confinement = sandbox::choose(&policy).map_err(|why| {
        format!("cannot check that the tool compiles: the check runs only in a sandbox, and {why}")
    })?;
    std::fs::create_dir_all(&target)
        .map_err(|error| format!("cannot check that the tool compiles: {error}"))?;
    // What cargo reads: the yiem source tree and the toolchain, shown even where the sandbox would hide
    // them (a checkout under /tmp, which bubblewrap replaces with a private one).
    let home = |name: &str| std::env::var_os(name).map(PathBuf::from);
    let toolchain_dir = Path::new(&cargo)
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf);
    let readable: Vec<PathBuf> = [Some(workspace.to_path_buf()), toolchain_dir]
        .into_iter()
        .chain([home("CARGO_HOME"), home("RUSTUP_HOME")])
        .flatten()
        .filter(|dir| dir.is_absolute())
        .collect();
    let readable: Vec<&Path> = readable.iter().map(PathBuf::as_path).collect();
    // Its temporary directory and lifeline live until the check is over.
    let confined = sandbox::confine(
        &confinement,
        &policy,
        &cargo,
        scratch.path(),
        &[&target],
        &readable,
    )
    .map_err(|error| format!("cannot check that the tool compiles: {error}"))?;
    let mut command = confined.command;
    let toolchain = ["CARGO_HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN", "RUSTC"]
        .into_iter()
        .filter_map(|name| Some((name, std::env::var_os(name)?)));
    command
        .args(["check", "--quiet", "--message-format=short"])
        .envs(toolchain)
        .env("CARGO_TARGET_DIR", &target)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    if offline {
        command.arg("--offline");
    }
    let mut child = command.spawn().map_err(|error| {
        format!("cannot check that the tool compiles: cannot run cargo: {error}")
    })?;
    let mut stderr = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(stderr) = stderr.as_mut() {
            let _ = std::io::Read::read_to_string(stderr, &mut text);
        }
        text
    });
    let deadline = std::time::Instant::now() + CHECK_TIME_LIMIT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if std::time::Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "the compile check took more than {} s and was stopped; nothing was written",
                    CHECK_TIME_LIMIT.as_secs()
                ));
            }
            Ok(None) => std::thread::sleep(std::time::Duration::from_millis(50)),
            Err(error) => return Err(format!("cannot check that the tool compiles: {error}")),
        }
    };
    let output = reader.join().unwrap_or_default();
    if status.success() {
        return Ok(());
    }
    let prefix = format!("src/{name}.rs:");
    let Some(first) = output
        .lines()
        .find(|line| line.starts_with(&prefix) && line.contains(": error"))
    else {
        return Err(
            "the tool does not compile, and the compiler's errors are not in the new file (they are not shown); check `body` and the arguments; nothing was written"
                .into(),
        );
    };
    let first = first.strip_prefix("src/").unwrap_or(first);
    let first = match first.char_indices().nth(MAX_DIAGNOSTIC_CHARS) {
        Some((cut, _)) => format!("{} [...]", &first[..cut]),
        None => first.to_owned(),
    };
    Err(format!(
        "the tool does not compile: {first}; fix `body` (or the arguments) and try again; nothing was written"
    ))
}

/// The longest compiler diagnostic returned, in characters.
const MAX_DIAGNOSTIC_CHARS: usize = 2000;

/// The macros that read a file of this machine when the tool is compiled, refused wherever their name
/// appears (so a `macro_rules!` cannot assemble the call), and `macro_rules` itself.
const COMPILE_TIME_READS: [&str; 5] = [
    "include",
    "include_str",
    "include_bytes",
    "option_env",
    "macro_rules",
];

/// Refuses a source that would read this machine at compile time: a name of [`COMPILE_TIME_READS`]
/// anywhere (inside other macros' arguments too), `env!`, a `#[path]` attribute or a file module
/// (`mod x;`). The sandbox's environment holds no secret anyway; this keeps files out of diagnostics.
fn refuse_compile_time_reads(source: &str) -> Result<(), String> {
    use proc_macro2::{Delimiter, TokenStream, TokenTree};
    fn find(tokens: TokenStream) -> Option<String> {
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        for (at, tree) in trees.iter().enumerate() {
            let punct = |offset: usize, c: char| matches!(trees.get(at + offset), Some(TokenTree::Punct(p)) if p.as_char() == c);
            match tree {
                TokenTree::Ident(ident) => {
                    let name = ident.to_string();
                    if COMPILE_TIME_READS.contains(&name.as_str())
                        || (name == "env" && punct(1, '!'))
                    {
                        return Some(format!("`{name}!`"));
                    }
                    if name == "mod" && punct(2, ';') {
                        return Some("a file module (`mod name;`)".into());
                    }
                }
                TokenTree::Group(group) => {
                    let first = group.stream().into_iter().next();
                    let path = group.delimiter() == Delimiter::Bracket
                        && matches!(&first, Some(TokenTree::Ident(ident)) if ident == "path");
                    if path {
                        return Some("a `#[path]` attribute".into());
                    }
                    if let Some(found) = find(group.stream()) {
                        return Some(found);
                    }
                }
                _ => {}
            }
        }
        None
    }
    let tokens: TokenStream = source
        .parse()
        .map_err(|error| format!("the generated file does not parse ({error}); check `body`"))?;
    match find(tokens) {
        None => Ok(()),
        Some(what) => Err(format!(
            "`body` uses {what}: a tool written by `write_tool` may not read a file or an environment variable of this machine when it is compiled (`include_str!`, `include_bytes!`, `include!`, `env!`, `option_env!`, `#[path]`, file modules) nor define macros (`macro_rules!`); it reads what it needs at run time, from its arguments. Remove it; nothing was written"
        )),
    }
}

/// Creates `path` with `content` atomically (temp file, then a link that fails if the name is taken).
fn create_new_atomically(path: &Path, content: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut temp = tempfile::Builder::new()
        .prefix(".write_tool.")
        .suffix(".yiem-tmp")
        .tempfile_in(dir)?;
    temp.write_all(content)?;
    temp.as_file().sync_all()?;
    temp.persist_noclobber(path).map_err(|error| error.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_names_become_snake_case_fields() {
        assert_eq!(rust_field_name("city").unwrap(), "city");
        assert_eq!(rust_field_name("maxCount").unwrap(), "max_count");
        assert_eq!(rust_field_name("max-count").unwrap(), "max_count");
        assert_eq!(rust_field_name("type").unwrap(), "type_");
        assert_eq!(rust_field_name("2fa").unwrap(), "field_2fa");
        assert!(rust_field_name("--").is_err());
    }

    #[test]
    fn names_must_be_snake_case_identifiers() {
        for good in ["a", "search_wine", "get_utc2", "x_"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "Search",
            "_x",
            "a__b",
            "fn",
            "self",
            "a-b",
            "wine search",
            "é",
        ] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
        assert!(check_name(&"a".repeat(65)).is_err());
    }

    #[test]
    fn listed_names_reads_a_list_tools_listing() {
        let listing = "Available tools:\n- add: Add — Add two.\n- list_tools: List Tools — List.";
        assert_eq!(listed_names(listing), ["add", "list_tools"]);
    }
}
