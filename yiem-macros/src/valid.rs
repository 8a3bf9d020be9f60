//! Checks on the attribute and the function, turning both into [`Tool`]: one complete description of the
//! tool, which is all `expand` reads. Every problem is recorded, each on the smallest token that shows it,
//! with a message that says what to write instead.

use syn::{Ident, LitStr, ReturnType, Type};

use crate::ast::{Param, ToolFn};
use crate::attr::{Attrs, Keyed};
use crate::ctxt::Ctxt;

/// Where the function is: a free fn, or a method of a `#[tools]` impl (which takes `&self`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    Free,
    Method,
}

/// Whether the tool may run beside others of its batch.
pub(crate) enum Mode {
    Sequential,
    Parallel,
}

/// How the function runs: an `async fn`, or a plain `fn` on the blocking pool.
pub(crate) enum Runs {
    Async,
    Blocking,
}

/// A parameter taken from the call's context, in the order written.
pub(crate) enum Extractor<'a> {
    /// `ctx: ToolContext`, with its type as written.
    Context(&'a Type),
    /// `State(x): State<T>`: the whole type, and `T`.
    State { ty: &'a Type, inner: &'a Type },
}

impl Extractor<'_> {
    pub(crate) fn ty(&self) -> &Type {
        match self {
            Extractor::Context(ty) | Extractor::State { ty, .. } => ty,
        }
    }
}

/// The accepted signature: the extractors, then an argument struct or none.
pub(crate) enum Signature<'a> {
    Bare {
        extractors: Vec<Extractor<'a>>,
    },
    WithArgs {
        extractors: Vec<Extractor<'a>>,
        args: &'a Type,
    },
}

impl<'a> Signature<'a> {
    pub(crate) fn extractors(&self) -> &[Extractor<'a>] {
        match self {
            Signature::Bare { extractors } | Signature::WithArgs { extractors, .. } => extractors,
        }
    }
}

/// What a free-text tool's `String` parameter may hold.
pub(crate) enum FreeText {
    /// Any text (`free_text`).
    Text,
    /// Text in a grammar's language: its syntax (`lark` or `regex`) and definition.
    Grammar(Ident, LitStr),
}

/// The MCP hints, each unsaid (`None`) or said.
pub(crate) struct Hints {
    pub read_only: Option<bool>,
    pub destructive: Option<bool>,
    pub idempotent: Option<bool>,
    pub open_world: Option<bool>,
}

/// Everything about one tool, checked: what `expand` generates from.
pub(crate) struct Tool<'a> {
    pub ident: &'a Ident,
    /// The name the model calls, spanned on where it came from (the `name` value or the fn name).
    pub name: LitStr,
    pub label: Option<LitStr>,
    pub description: String,
    pub mode: Mode,
    /// Whether an agent waits for a person's approval before it runs a call.
    pub needs_approval: bool,
    /// Whether the model may call it only from a program.
    pub code_only: bool,
    /// `TaskSupport`'s variant, by name.
    pub task: &'static str,
    pub timeout_ms: Option<u64>,
    pub hints: Hints,
    pub prepare: Option<syn::Path>,
    pub validate: Option<syn::Path>,
    /// Examples of good arguments: JSON objects, as text.
    pub examples: Vec<LitStr>,
    pub strict: bool,
    pub eager_input_streaming: bool,
    pub defer_loading: bool,
    /// The tool takes free text, as its one `String` parameter.
    pub free_text: Option<FreeText>,
    pub runs: Runs,
    pub signature: Signature<'a>,
    pub output: &'a ReturnType,
}

/// The most extractors a tool takes (the runtime's adapters go this far).
const MAX_EXTRACTORS: usize = 5;

pub(crate) fn check<'a>(cx: &mut Ctxt, attrs: &Attrs, tool: &ToolFn<'a>, form: Form) -> Tool<'a> {
    check_signature(cx, tool);
    let signature = check_params(cx, tool, form);
    check_attrs(cx, attrs, &signature);

    let sig = tool.sig;
    let name = match &attrs.name {
        Some(name) => name.value.clone(),
        None => {
            let ident = sig.ident.to_string();
            let ident = ident.strip_prefix("r#").map(str::to_owned).unwrap_or(ident);
            LitStr::new(&ident, sig.ident.span())
        }
    };
    if !is_valid_tool_name(&name.value()) {
        let hint = match (&attrs.name, form) {
            (Some(_), _) => "pick another name",
            (None, Form::Free) => "rename the function or set `#[tool(name = \"...\")]`",
            (None, Form::Method) => "rename the method or set `#[tool(name = \"...\")]`",
        };
        cx.push(syn::Error::new(
            name.span(),
            format!(
                "tool name `{}` is invalid: names must match ^[a-zA-Z0-9_-]{{1,64}}$ (the limit LLM providers share); {hint}",
                name.value()
            ),
        ));
    }

    let description = match (&attrs.description, &tool.docs) {
        (Some(description), _) => description.value.value(),
        (None, Some(docs)) => docs.clone(),
        (None, None) => {
            cx.error_spanned_by(
                &sig.ident,
                "a tool needs a description for the model: add a doc comment (`/// What the tool does.`) or `#[tool(description = \"...\")]`",
            );
            String::new()
        }
    };
    if let Some(description) = &attrs.description
        && description.value.value().trim().is_empty()
    {
        cx.error_spanned_by(
            &description.value,
            "the description is empty: say what the tool does",
        );
    }
    if let Some(label) = &attrs.label
        && label.value.value().trim().is_empty()
    {
        cx.error_spanned_by(
            &label.value,
            "the label is empty: give a human-readable name or leave `label` out",
        );
    }

    for example in &attrs.examples {
        match serde_json::from_str::<serde_json::Value>(&example.value()) {
            Ok(serde_json::Value::Object(_)) => {}
            Ok(_) => cx.error_spanned_by(
                example,
                "an example is the arguments object the model would send: write `example = r#\"{\"field\": ...}\"#`",
            ),
            Err(error) => cx.error_spanned_by(
                example,
                format!("this example is not JSON ({error}): write the arguments object as JSON text, e.g. `example = r#\"{{\"city\": \"Oslo\"}}\"#`"),
            ),
        }
    }

    let said = |hint: &Option<Keyed<bool>>| hint.as_ref().map(|keyed| keyed.value);
    Tool {
        ident: &sig.ident,
        name,
        label: attrs.label.as_ref().map(|label| label.value.clone()),
        description,
        mode: if attrs.parallel.is_some() {
            Mode::Parallel
        } else {
            Mode::Sequential
        },
        needs_approval: attrs.needs_approval.is_some(),
        code_only: attrs.code_only.is_some(),
        task: match &attrs.task {
            None => "Forbidden",
            Some(keyed) => crate::attr::TASK_SUPPORTS
                .iter()
                .find(|(said, _)| *said == keyed.value)
                .map_or("Forbidden", |(_, variant)| variant),
        },
        timeout_ms: attrs.timeout_ms.as_ref().map(|keyed| keyed.value),
        hints: Hints {
            read_only: said(&attrs.read_only),
            destructive: said(&attrs.destructive),
            idempotent: said(&attrs.idempotent),
            open_world: said(&attrs.open_world),
        },
        prepare: attrs.prepare.as_ref().map(|keyed| keyed.value.clone()),
        validate: attrs.validate.as_ref().map(|keyed| keyed.value.clone()),
        examples: attrs.examples.clone(),
        strict: attrs.strict.is_some(),
        eager_input_streaming: attrs.eager_input_streaming.is_some(),
        defer_loading: attrs.defer_loading.is_some(),
        free_text: match (&attrs.grammar, &attrs.free_text) {
            (Some(grammar), _) => {
                let (syntax, definition) = &grammar.value;
                Some(FreeText::Grammar(syntax.clone(), definition.clone()))
            }
            (None, Some(_)) => Some(FreeText::Text),
            (None, None) => None,
        },
        runs: if sig.asyncness.is_some() {
            Runs::Async
        } else {
            Runs::Blocking
        },
        signature,
        output: &sig.output,
    }
}

fn is_valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn check_signature(cx: &mut Ctxt, tool: &ToolFn<'_>) {
    let sig = tool.sig;
    if let Some(constness) = &sig.constness {
        cx.error_spanned_by(constness, "a tool cannot be a `const fn`: remove `const`");
    }
    if let Some(unsafety) = &sig.unsafety {
        cx.error_spanned_by(
            unsafety,
            "a tool cannot be an `unsafe fn`: a model calls it with arguments it chose; make the function safe",
        );
    }
    if let Some(abi) = &sig.abi {
        cx.error_spanned_by(
            abi,
            "a tool cannot have an `extern` ABI: remove it and write a plain Rust fn",
        );
    }
    if let Some(variadic) = &sig.variadic {
        cx.error_spanned_by(
            variadic,
            "a tool cannot be variadic: take one argument struct",
        );
    }
    if !sig.generics.params.is_empty() {
        cx.error_spanned_by(
            &sig.generics,
            "a tool cannot be generic: the model calls it with one concrete argument type; replace the type parameter with that type",
        );
    } else if let Some(where_clause) = &sig.generics.where_clause {
        cx.error_spanned_by(
            where_clause,
            "a tool cannot have a `where` clause: use concrete types",
        );
    }
    if sig.asyncness.is_none()
        && let ReturnType::Type(_, ty) = &sig.output
        && let Type::ImplTrait(_) = ty.as_ref()
    {
        cx.error_spanned_by(
            sig.fn_token,
            "a plain `fn` tool runs on a blocking thread and cannot return `impl Trait`: write `async fn` and return the output type",
        );
    }
}

fn check_params<'a>(cx: &mut Ctxt, tool: &ToolFn<'a>, form: Form) -> Signature<'a> {
    let mut context = false;
    let mut receiver = false;
    let mut extractors = Vec::new();
    let mut args: Option<&'a Type> = None;
    for param in &tool.params {
        match param {
            Param::Receiver(found) => {
                receiver = true;
                check_receiver(cx, found, form);
            }
            Param::Context(pat_type) => {
                if context {
                    cx.error_spanned_by(
                        &pat_type.ty,
                        "a tool takes at most one `ToolContext`: remove this one",
                    );
                } else if args.is_some() {
                    cx.error_spanned_by(
                        &pat_type.ty,
                        "put the `ToolContext` parameter first: `async fn f(ctx: ToolContext, args: Args)`",
                    );
                }
                context = true;
                extractors.push(Extractor::Context(&pat_type.ty));
            }
            Param::State(pat_type, inner) => {
                if args.is_some() {
                    cx.error_spanned_by(
                        &pat_type.ty,
                        "put `State` parameters before the argument struct: `async fn f(State(db): State<Db>, args: Args)`",
                    );
                }
                extractors.push(Extractor::State {
                    ty: &pat_type.ty,
                    inner,
                });
            }
            Param::Args(pat_type) => {
                check_args_type(cx, &pat_type.ty);
                if args.is_some() {
                    cx.error_spanned_by(
                        pat_type,
                        "a tool takes one argument struct (after any `ToolContext` and `State<T>` parameters): move this parameter into a field of the first one (which derives `Deserialize` and `JsonSchema`)",
                    );
                } else {
                    args = Some(&pat_type.ty);
                }
            }
        }
    }
    if form == Form::Method && !receiver {
        cx.error_spanned_by(
            &tool.sig.ident,
            "a tool in a `#[tools]` impl is a method of the instance: take `&self` first, or move the function out of the impl block as a free `#[tool]` fn",
        );
    }
    if let Some(extra) = extractors.get(MAX_EXTRACTORS) {
        cx.error_spanned_by(
            extra.ty(),
            format!("a tool takes at most {MAX_EXTRACTORS} `ToolContext` and `State` parameters: put related state in one struct"),
        );
    }
    match args {
        Some(args) => Signature::WithArgs { extractors, args },
        None => Signature::Bare { extractors },
    }
}

fn check_receiver(cx: &mut Ctxt, receiver: &syn::Receiver, form: Form) {
    match form {
        Form::Free => cx.error_spanned_by(
            receiver,
            "a method tool needs `#[tools]` on its impl block: write `#[tools] impl Type { ... }` (or make this a free function and pass state as `State<T>`)",
        ),
        Form::Method if receiver.colon_token.is_some() || receiver.reference.is_none() => cx
            .error_spanned_by(
                receiver,
                "a method tool takes `&self`: the instance is shared by every call as an `Arc<Self>`",
            ),
        Form::Method => {
            if let Some(mutability) = &receiver.mutability {
                cx.error_spanned_by(
                    mutability,
                    "a method tool takes `&self`, not `&mut self`: calls may run at the same time; keep mutable data behind a `Mutex` field",
                );
            }
        }
    }
}

fn check_args_type(cx: &mut Ctxt, ty: &Type) {
    match ty {
        Type::Reference(reference) => {
            let is_str = matches!(reference.elem.as_ref(), Type::Path(p) if p.path.is_ident("str"));
            let instead = if is_str {
                "take `String` instead of `&str`, inside an argument struct".to_owned()
            } else {
                let elem = &reference.elem;
                format!("take `{}` by value", quote::quote!(#elem).to_string().replace(' ', ""))
            };
            cx.error_spanned_by(
                ty,
                format!("tool arguments are deserialized into an owned value and cannot be borrowed: {instead}"),
            );
        }
        Type::ImplTrait(_) => cx.error_spanned_by(
            ty,
            "a tool cannot take `impl Trait`: name the concrete argument struct (deriving `Deserialize` and `JsonSchema`)",
        ),
        _ => {}
    }
}

/// `String` (by any path ending in `String`).
fn is_string(ty: &Type) -> bool {
    match ty {
        Type::Path(path) if path.qself.is_none() => path
            .path
            .segments
            .last()
            .is_some_and(|segment| segment.ident == "String" && segment.arguments.is_none()),
        _ => false,
    }
}

fn check_attrs(cx: &mut Ctxt, attrs: &Attrs, signature: &Signature<'_>) {
    if let (Some(_), Some(sequential)) = (&attrs.parallel, &attrs.sequential) {
        cx.push(syn::Error::new(
            sequential.key,
            "a tool is either `parallel` or `sequential`, not both: remove one",
        ));
    }
    if let (Some(_), Some(free_text)) = (&attrs.grammar, &attrs.free_text) {
        cx.push(syn::Error::new(
            free_text.key,
            "`grammar` already makes the tool's input free text: remove `free_text`",
        ));
    }
    let free_text = attrs
        .grammar
        .as_ref()
        .map(|keyed| (keyed.key, "grammar"))
        .or_else(|| {
            attrs
                .free_text
                .as_ref()
                .map(|keyed| (keyed.key, "free_text"))
        });
    if let Some((key, name)) = free_text {
        match signature {
            Signature::Bare { .. } => cx.push(syn::Error::new(
                key,
                format!("`{name}` gives the tool one text input, which the function takes as a `String` parameter: add one, e.g. `async fn run_sql(query: String)`"),
            )),
            Signature::WithArgs { args, .. } if !is_string(args) => cx.error_spanned_by(
                args,
                format!("a tool with `{name}` takes its text as one `String` parameter (its arguments are `{{\"input\": \"<text>\"}}`): write `String` here, e.g. `async fn run_sql(query: String)`"),
            ),
            Signature::WithArgs { .. } => {}
        }
    }
    if let (Some(validate), Signature::Bare { .. }) = (&attrs.validate, signature) {
        cx.push(syn::Error::new(
            validate.key,
            "`validate` checks the argument struct, but this tool takes no arguments: remove `validate`",
        ));
    }
}
