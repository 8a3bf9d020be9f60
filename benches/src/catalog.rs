//! The tool-search benchmark's tools: the BFCL catalog of `tool-search/catalog.json` (1,998 tools),
//! repeated with numbered names up to any count.

use serde_json::Value;
use yiem_core::tool::AgentTool;

/// The first `count` tools of the BFCL catalog, repeated (`name`, `name_2x`, `name_3x`, ...) as often
/// as needed.
pub fn bfcl_tools(count: usize) -> Vec<AgentTool> {
    let text = include_str!("../tool-search/catalog.json");
    let catalog: Value = serde_json::from_str(text).expect("the catalog is JSON");
    let entries = catalog["tools"].as_array().expect("a tools array");
    (0..count)
        .map(|at| {
            let entry = &entries[at % entries.len()];
            let round = at / entries.len();
            let base = entry["name"].as_str().unwrap();
            let name = if round == 0 {
                base.to_owned()
            } else {
                let suffix = format!("_{}x", round + 1);
                format!("{}{suffix}", &base[..base.len().min(64 - suffix.len())])
            };
            AgentTool::builder(name)
                .description(entry["description"].as_str().unwrap_or_default())
                .input_schema(entry["inputSchema"].clone())
                .handler(|_, _| async { "" })
                .build()
                .expect("a valid catalog tool")
        })
        .collect()
}
