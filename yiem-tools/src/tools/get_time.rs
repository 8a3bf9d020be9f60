//! `get_time`: the current time in an IANA time zone.
//!
//! This file is also the reference for the tools directory: every `.rs` file in `src/tools/` is one
//! module with its own `use` lines, found by `build.rs` and compiled in with no edit to any other file.
//! `write_tool` writes its tools here.

use jiff::Timestamp;
use jiff::tz::TimeZone;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use yiem_core::{tool, tool::AgentToolResult};

/// Arguments of `get_time`.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
pub struct GetTimeArgs {
    /// An IANA time zone such as `Asia/Tokyo`, `Europe/Paris` or `UTC`; `local` for the machine's own.
    /// Default: `UTC`.
    #[serde(default)]
    pub timezone: Option<String>,
}

/// Get the current date and time in an IANA time zone (e.g. `Asia/Tokyo`), with its UTC offset and weekday.
#[tool(label = "Time Lookup", parallel, read_only, open_world = false)]
pub fn get_time(args: GetTimeArgs) -> AgentToolResult {
    time_at(Timestamp::now(), args.timezone.as_deref().unwrap_or("UTC"))
}

/// What `get_time` answers for the instant `at` in `timezone`.
///
/// ```
/// use yiem_tools::tools::get_time::time_at;
///
/// let at = "2025-03-30T00:30:00Z".parse().unwrap();
/// let result = time_at(at, "Europe/Paris");
/// assert_eq!(result.text_content(), "2025-03-30 01:30:00 CET (UTC+01:00), Sunday, in Europe/Paris");
/// assert_eq!(result.details()["iso8601"], "2025-03-30T01:30:00+01:00[Europe/Paris]");
/// ```
pub fn time_at(at: Timestamp, timezone: &str) -> AgentToolResult {
    let zone = if timezone.eq_ignore_ascii_case("local") {
        Ok(TimeZone::system())
    } else {
        TimeZone::get(timezone)
    };
    let zone = match zone {
        Ok(zone) => zone,
        Err(_) => {
            return AgentToolResult::error(format!(
                "tool `get_time`: `{timezone}` is not an IANA time zone; use a name such as `Asia/Tokyo`, `America/New_York`, `Europe/Paris` or `UTC`"
            ));
        }
    };
    let name = zone.iana_name().unwrap_or(timezone).to_owned();
    let zoned = at.to_zoned_datetime(zone);
    let text = format!(
        "{}, in {name}",
        zoned.strftime("%Y-%m-%d %H:%M:%S %Z (UTC%:z), %A")
    );
    AgentToolResult::text(text).with_details(json!({
        "timezone": name,
        "iso8601": zoned.to_string(),
        "unix_seconds": at.as_second(),
    }))
}
