//! # yiem-core
//!
//! The runtime of yiem: give LLM agents tools written as ordinary Rust functions.
//!
//! ```toml
//! [dependencies]
//! yiem-core = "0.1"
//! serde = { version = "1", features = ["derive"] }
//! schemars = "1"
//! ```
//!
//! Write an `async fn` over a serde argument struct and put [`#[tool]`](tool) on it. The tool gets its name
//! from the function, its description from the doc comment and its JSON Schema from `schemars`; it registers
//! itself, so [`register_all_tools`] finds it without a hand-kept list.
//!
//! ```
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! use yiem_core::{ToolStore, register_all_tools, tool};
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct AddArgs {
//!     /// The first addend.
//!     a: i64,
//!     /// The second addend.
//!     b: i64,
//! }
//!
//! /// Add two integers.
//! #[tool(parallel)]
//! async fn add(args: AddArgs) -> String {
//!     (args.a + args.b).to_string()
//! }
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! // The function stays callable as written ...
//! assert_eq!(add(AddArgs { a: 1, b: 2 }).await, "3");
//!
//! // ... and `add_tool()` is the tool a model can call.
//! let result = add_tool().execute("call-1", serde_json::json!({"a": 2, "b": 3})).await;
//! assert_eq!(result.text_content(), "5");
//!
//! let mut store = ToolStore::new("calculator");
//! register_all_tools(&mut store).unwrap();
//! assert!(store.get("add").is_some());
//! # });
//! ```
//!
//! ## Defining tools
//!
//! See [`tool`] for the accepted signatures, return types and attribute keys. Tools built at run time (from
//! configuration or another process) use [`AgentTool::builder`].
//!
//! ## Errors the model can act on
//!
//! Every call gets a result. Bad arguments, an `Err`, a panic or a timeout become an error result whose text
//! names the tool, the field and what was expected:
//!
//! ```
//! # use schemars::JsonSchema;
//! # use serde::Deserialize;
//! # use yiem_core::tool;
//! # #[derive(Deserialize, JsonSchema)]
//! # struct AddArgs { a: i64, b: i64 }
//! # /// Add two integers.
//! # #[tool]
//! # async fn add(args: AddArgs) -> String { (args.a + args.b).to_string() }
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let result = add_tool().execute("call-2", serde_json::json!({"a": "two", "b": 3})).await;
//! assert!(result.is_error);
//! assert_eq!(
//!     result.text_content(),
//!     "invalid arguments for tool `add`: at `/a`: invalid type: string \"two\", expected i64"
//! );
//! # });
//! ```

#![warn(missing_docs)]

mod args;
mod call;
mod content;
mod context;
mod handler;
mod registry;
mod result;
mod tool;

#[doc(hidden)]
pub mod __private;

pub use args::{ArgumentError, ArgumentProblem};
pub use call::{ToolCall, ToolResultMessage};
pub use content::Content;
pub use context::ToolContext;
pub use registry::{LIST_TOOLS, RegistrationError, ToolStore, register_all_tools, static_tools};
pub use result::{AgentToolResult, IntoToolResult, Json, Usage};
pub use tokio_util::sync::CancellationToken;
pub use tool::{
    AgentTool, ExecutionMode, SourceLocation, ToolAnnotations, ToolBuilder, ToolDefinitionError,
    ToolFuture, is_valid_tool_name,
};
pub use yiem_macros::tool;
