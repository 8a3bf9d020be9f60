//! A call in hand, outside any batch: [`AgentTool::execute`] and its kin, and [`ToolStore::execute`] —
//! the same [`Call`] as a batch's, in an empty environment.

use std::borrow::Cow;
use std::future::Future;

use serde_json::Value;

use super::Call;
use super::errors::{invalid, unknown_tool};
use crate::args::ArgumentError;
use crate::result::AgentToolResult;
use crate::store::registry::ToolStore;
use crate::tool::context::ToolContext;
use crate::tool::definition::AgentTool;

/// Running a tool in hand, outside any batch: the same `Call` as a batch's, in an empty environment.
impl AgentTool {
    /// Executes the tool directly (no hooks, no events): useful in tests and scripts. Never fails: bad
    /// arguments, an error, a panic or a timeout each become an error result. The future is `Send` when
    /// `call_id` is.
    ///
    /// Approval is the caller's decision here: a call in hand is a program deciding to run the tool, so
    /// a tool that [needs approval](Self::needs_approval) runs without asking anyone. Where a model
    /// decides, the caller asks first — an [`Agent`](crate::agent::Agent) pauses, an
    /// `mcp::McpServer` asks its client, `yiem tools call` asks on the terminal — or
    /// asks itself before calling this (see [`ToolStore::execute`]). Nobody can be asked from inside the
    /// call either: a tool's [`ToolContext::elicit`] gets [`ElicitError::CannotAsk`](crate::ask::ElicitError).
    ///
    /// ```
    /// use yiem_core::tool;
    ///
    /// /// Say hi.
    /// #[tool]
    /// async fn hi() -> &'static str {
    ///     "hi"
    /// }
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let tool = hi_tool();
    /// let result = tokio::spawn(async move { tool.execute("c1", serde_json::json!({})).await });
    /// assert_eq!(result.await.unwrap().text_content(), "hi");
    /// # });
    /// ```
    pub fn execute(
        &self,
        call_id: impl Into<Cow<'static, str>>,
        args: Value,
    ) -> impl Future<Output = AgentToolResult> + Send + 'static {
        // The call is made when the future first runs: what a caller moves until then is the tool, the
        // id and the arguments, not the whole call's future.
        let (tool, call_id) = (self.clone(), call_id.into());
        async move {
            let mut call = Call::in_hand(tool, call_id, args, None, None);
            call.run_in_hand().await
        }
    }

    /// Like [`execute`](Self::execute), with a context of your own (cancellation token, update receiver).
    pub async fn execute_with(&self, ctx: ToolContext, args: Value) -> AgentToolResult {
        self.try_execute(ctx, args).await.unwrap_or_else(invalid)
    }

    /// Like [`execute_with`](Self::execute_with), but arguments that do not fit come back as the
    /// [`ArgumentError`], so a caller (a command line, say) can tell bad input from a failed run.
    ///
    /// ```
    /// use serde_json::json;
    /// use yiem_core::tool::{AgentTool, ToolContext};
    ///
    /// let echo = AgentTool::builder("echo")
    ///     .description("Repeat the given text.")
    ///     .input_schema(json!({"type": "object", "properties": {"text": {"type": "string"}}}))
    ///     .handler(|_, args: serde_json::Value| async move { args["text"].to_string() })
    ///     .build()
    ///     .unwrap();
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let refused = echo.try_execute(ToolContext::new("c1"), json!({"text": 1})).await;
    /// assert!(refused.unwrap_err().to_string().starts_with("invalid arguments for tool `echo`"));
    /// # });
    /// ```
    pub async fn try_execute(
        &self,
        ctx: ToolContext,
        args: Value,
    ) -> Result<AgentToolResult, ArgumentError> {
        let call_id = Cow::Owned(ctx.call_id().to_owned());
        let mut call = Call::in_hand(self.clone(), call_id, args, None, Some(ctx));
        let result = call.run_in_hand().await;
        match call.invalid() {
            Some(error) => Err(error),
            None => Ok(result),
        }
    }
}

/// Running one call through a store in hand: the store's tool, with the store's state.
impl ToolStore {
    /// Executes the tool called `name` with the store's [state](ToolStore::with_state), outside any batch
    /// (no hooks, no events), as [`AgentTool::execute`] does. An unknown name is an error result listing
    /// the tools. Useful in tests; an agent runs its calls through a [`ToolExecutor`](crate::exec::ToolExecutor).
    ///
    /// Approval is the caller's decision: a tool that [needs approval](AgentTool::needs_approval) runs
    /// here without anyone being asked, because the code that calls this is the one deciding. Code that
    /// runs calls a model chose asks first:
    ///
    /// ```
    /// use yiem_core::{store::ToolStore, tool::AgentTool};
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let store = ToolStore::new("files");
    /// let delete = AgentTool::builder("delete")
    ///     .description("Delete a file.")
    ///     .needs_approval()
    ///     .handler(|_, _| async { "deleted" })
    ///     .build()
    ///     .unwrap();
    /// store.register(delete).unwrap();
    ///
    /// // A call the model asked for: this program asks its user before running it.
    /// let user_says_yes = |tool: &str| tool != "delete"; // stands in for a real prompt
    /// let tool = store.get("delete").unwrap();
    /// let result = if tool.needs_approval() && !user_says_yes(tool.name()) {
    ///     None
    /// } else {
    ///     Some(store.execute("c1", "delete", serde_json::json!({})).await)
    /// };
    /// assert!(result.is_none());
    ///
    /// // Called in hand, the caller has decided: it runs.
    /// assert_eq!(store.execute("c2", "delete", serde_json::json!({})).await.text_content(), "deleted");
    /// # });
    /// ```
    ///
    /// ```
    /// use yiem_core::{store::ToolStore, tool::AgentTool};
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let store = ToolStore::new("agent");
    /// store
    ///     .register(AgentTool::builder("ping").description("Pong.").handler(|_, _| async { "pong" }).build().unwrap())
    ///     .unwrap();
    /// assert_eq!(store.execute("c1", "ping", serde_json::json!({})).await.text_content(), "pong");
    /// assert_eq!(
    ///     store.execute("c2", "pong", serde_json::json!({})).await.text_content(),
    ///     "tool `pong` not found. Did you mean `ping`? Available tools: ping"
    /// );
    /// # });
    /// ```
    pub async fn execute(
        &self,
        call_id: impl Into<Cow<'static, str>>,
        name: &str,
        args: Value,
    ) -> AgentToolResult {
        let found = self.lookup(name);
        let Some(tool) = found.tool.clone() else {
            return AgentToolResult::error(unknown_tool(self, name));
        };
        let mut call = Call::in_hand(tool, call_id.into(), args, Some(found), None);
        call.run_in_hand().await
    }

    /// A context for the call `call_id` of one of this store's tools in hand, with the store's
    /// [state](ToolStore::with_state): for [`AgentTool::execute_with`] and [`AgentTool::try_execute`].
    ///
    /// ```
    /// use yiem_core::prelude::*;
    ///
    /// struct Greeting(&'static str);
    ///
    /// /// Greet.
    /// #[tool]
    /// async fn greet(State(greeting): State<Greeting>) -> &'static str {
    ///     greeting.0
    /// }
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let store = ToolStore::new("a").with_state(Greeting("hi"));
    /// let result = greet_tool().try_execute(store.context("c1"), serde_json::json!({})).await;
    /// assert_eq!(result.unwrap().text_content(), "hi");
    /// # });
    /// ```
    pub fn context(&self, call_id: impl Into<Cow<'static, str>>) -> ToolContext {
        let state = self.lookup("").state;
        ToolContext::new(call_id).with_state_map(state)
    }
}
