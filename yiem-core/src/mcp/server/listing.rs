//! `tools/list`: the store's tools as MCP describes them, in pages a changing store can be paged through.

use super::*;

pub(super) fn params_problem<P: serde::de::DeserializeOwned>(params: &Value) -> String {
    match serde_json::from_value::<P>(params.clone()) {
        Err(error) => error.to_string(),
        Ok(_) => "they do not match the method".to_owned(),
    }
}

/// Where the page after `cursor` starts in `tools`. A cursor is `<offset>:<name of the last tool
/// sent>`: the page resumes after that tool even when tools before it were added or removed meanwhile,
/// so a client paging through a changing store sees each remaining tool once, in order.
pub(super) fn resume_at(tools: &[Tool], cursor: &str) -> Result<usize, ErrorData> {
    let Some((offset, name)) = cursor
        .split_once(':')
        .and_then(|(offset, name)| Some((offset.parse::<usize>().ok()?, name)))
    else {
        return Err(ErrorData::invalid_params(
            format!(
                "`{cursor}` is not a tools/list cursor this server gave; list again without one"
            ),
            None,
        ));
    };
    if offset > 0 && tools.get(offset - 1).is_some_and(|tool| tool.name == name) {
        return Ok(offset);
    }
    match tools.iter().position(|tool| tool.name == name) {
        Some(at) => Ok(at + 1),
        None => Err(ErrorData::invalid_params(
            format!(
                "the tools/list cursor `{cursor}` continues after the tool `{name}`, which the server \
                 no longer has; list again without a cursor"
            ),
            None,
        )),
    }
}

/// The `tools/list` entries of the store's current tool list, made once per list: a request while the
/// store is unchanged clones the entries instead of describing every tool again.
#[derive(Default)]
pub(super) struct Listing {
    cached: Mutex<Option<(ToolList, Vec<Tool>)>>,
}

impl Listing {
    pub(super) fn tools(&self, store: &ToolStore) -> Vec<Tool> {
        let list = store.tool_list();
        let mut cached = self
            .cached
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        match &*cached {
            Some((seen, tools)) if seen.is_same(&list) => tools.clone(),
            _ => {
                // A code-only tool is one no client can call: it runs only from a program.
                let tools: Vec<Tool> = list
                    .iter()
                    .filter(|tool| !tool.is_code_only())
                    .filter_map(mcp_tool)
                    .collect();
                *cached = Some((list, tools.clone()));
                tools
            }
        }
    }
}

/// The `tools/list` entry of `tool`: its MCP definition. A tool MCP cannot describe is left out (and
/// logged), so one bad tool does not hide the others.
pub(super) fn mcp_tool(tool: &AgentTool) -> Option<Tool> {
    let described = tool.definition(Dialect::Mcp).map_err(|e| e.to_string());
    match described.and_then(|definition| {
        serde_json::from_value::<Tool>(definition.clone()).map_err(|e| e.to_string())
    }) {
        Ok(entry) => Some(entry),
        Err(error) => {
            tracing::error!(tool = tool.name(), %error, "left a tool out of tools/list");
            None
        }
    }
}
