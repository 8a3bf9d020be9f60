//! The argument types the dialect goldens, the checker and the property test run over: one per shape that
//! has broken a provider somewhere (optional values at any depth, tagged enums, maps, flatten, unions at the
//! root, recursion, deep nesting...).

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use yiem_core::{
    tool,
    tool::{AgentTool, Json},
};

/// Temperature unit.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Degrees Celsius.
    Metric,
    /// Degrees Fahrenheit.
    Imperial,
}

/// Optional scalars.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OptionScalar {
    /// Who to greet.
    pub name: String,
    /// A nickname, if they have one.
    pub nickname: Option<String>,
    /// Age in years.
    pub age: Option<u32>,
}

/// An optional enum.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OptionEnum {
    /// City name, e.g. "Tokyo".
    pub city: String,
    /// Temperature unit; metric when left out.
    #[serde(default)]
    pub unit: Option<Unit>,
}

/// A postal address.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Address {
    /// Street and number.
    pub street: String,
    /// City.
    pub city: String,
}

/// An optional struct.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OptionStruct {
    /// The customer's name.
    pub name: String,
    /// Where to ship; pickup when left out.
    pub address: Option<Address>,
}

/// A documented unit enum.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DocumentedEnum {
    /// The unit to report in.
    pub unit: Unit,
}

/// A shape, tagged by its `kind`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Shape {
    /// A circle.
    Circle {
        /// Radius in metres.
        radius: f64,
    },
    /// An axis-aligned rectangle.
    Rectangle {
        /// Width in metres.
        width: f64,
        /// Height in metres.
        height: f64,
    },
}

/// An internally tagged enum.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InternallyTagged {
    /// The shape to draw.
    pub shape: Shape,
}

/// What the robot should do.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Stand still.
    Stop,
    /// Move by an offset.
    Move {
        /// Metres east.
        dx: i32,
        /// Metres north.
        dy: i32,
    },
    /// Say something.
    Say(String),
}

/// An externally tagged enum.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExternallyTagged {
    /// The next action.
    pub action: Action,
}

/// A user interface event.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", content = "data", rename_all = "snake_case")]
pub enum Event {
    /// A click at a position.
    Click {
        /// Column.
        x: u16,
        /// Row.
        y: u16,
    },
    /// A key press.
    Key(String),
}

/// An adjacently tagged enum.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AdjacentlyTagged {
    /// The event to replay.
    pub event: Event,
}

/// The innermost part.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Engine {
    /// Power in kilowatts.
    pub power_kw: u32,
}

/// The middle part.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Car {
    /// The model name.
    pub model: String,
    /// What drives it.
    pub engine: Engine,
}

/// Nested structs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NestedStructs {
    /// The car to register.
    pub car: Car,
}

/// One order line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Item {
    /// Stock keeping unit.
    pub sku: String,
    /// How many.
    pub qty: u32,
}

/// A list of structs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct VecOfStruct {
    /// The order lines.
    pub items: Vec<Item>,
}

/// A map.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Map {
    /// Word counts by word.
    pub counts: HashMap<String, u32>,
}

/// Paging parameters, shared by list tools.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Paging {
    /// Page number, from 1.
    pub page: u32,
    /// Results per page.
    pub per_page: u32,
}

/// A flattened struct.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FlattenStruct {
    /// What to search for.
    pub query: String,
    #[serde(flatten)]
    pub paging: Paging,
}

/// A flattened map of extra fields.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FlattenMap {
    /// The record's id.
    pub id: String,
    /// Any other fields, kept as text.
    #[serde(flatten)]
    pub extra: HashMap<String, String>,
}

/// Renamed fields.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RenameAll {
    /// Given name.
    pub first_name: String,
    /// Family name.
    pub last_name: String,
    /// Whether to send the newsletter.
    pub wants_newsletter: bool,
}

fn default_limit() -> u32 {
    10
}

/// Fields with defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Defaults {
    /// What to search for.
    pub query: String,
    /// How many results.
    #[serde(default = "default_limit")]
    pub limit: u32,
    /// Whether to include archived results.
    #[serde(default)]
    pub archived: bool,
}

/// No fields but these.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DenyUnknown {
    /// Path of the file to delete.
    pub path: String,
}

/// Every integer width.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Integers {
    /// A byte.
    pub byte: u8,
    /// A port number.
    pub port: u16,
    /// A count.
    pub count: u32,
    /// A big count.
    pub big: u64,
    /// A signed offset.
    pub offset: i64,
}

/// A float.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Float {
    /// Sampling temperature.
    pub temperature: f32,
}

/// A tree node: a recursive type.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TreeNode {
    /// The node's label.
    pub label: String,
    /// The child nodes.
    pub children: Vec<TreeNode>,
}

/// A recursive type.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Recursive {
    /// The tree to store.
    pub root: TreeNode,
}

/// Dates as plain strings with a format, no date library.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DateStrings {
    /// The day, as `YYYY-MM-DD`.
    #[schemars(extend("format" = "date"))]
    pub day: String,
    /// The moment, as RFC 3339.
    #[schemars(extend("format" = "date-time"))]
    pub at: String,
}

macro_rules! levels {
    ($($name:ident => $next:ident),* ; $last:ident) => {
        $(
            /// One level of a deep nesting.
            #[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
            pub struct $name {
                /// The next level.
                pub next: $next,
            }
        )*
        /// The deepest level.
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
        pub struct $last {
            /// The value at the bottom.
            pub value: String,
        }
    };
}

levels!(Level2 => Level3, Level3 => Level4, Level4 => Level5, Level5 => Level6, Level6 => Level7,
        Level7 => Level8, Level8 => Level9, Level9 => Level10; Level10);

/// Ten levels of objects, counting the arguments object: the deepest OpenAI strict mode accepts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TenLevels {
    /// The second level.
    pub next: Level2,
}

/// An optional list and a plain (undocumented) unit enum.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    Low,
    High,
}

/// Optional list, undocumented enum.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OptionVec {
    /// Labels to attach.
    pub labels: Option<Vec<String>>,
    /// The priority.
    pub priority: Priority,
}

/// A hotel, the innermost optional level.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Hotel {
    /// The hotel's name.
    pub name: String,
    /// Stars, 1 to 5, when known.
    pub stars: Option<u8>,
}

/// One stop of a trip.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Stop {
    /// The city.
    pub city: String,
    /// Nights to stay; one when left out.
    pub nights: Option<u32>,
    /// Where to sleep, if booked.
    pub hotel: Option<Hotel>,
    /// The shape of the city's main square, if anyone cares.
    pub square: Option<Shape>,
}

/// Optional fields at three depths: an optional struct holding optional fields and another optional struct.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OptionNested {
    /// The trip's name.
    pub name: String,
    /// Minutes to wait before booking; now when left out.
    pub delay_minutes: Option<u32>,
    /// The first stop, if planned.
    pub stop: Option<Stop>,
    /// The budget in euros, if any.
    pub budget: Option<f64>,
    /// Whether to insure the trip; undecided when left out.
    pub insured: Option<bool>,
}

/// Someone invited to a meeting.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Attendee {
    /// Their email address.
    pub email: String,
    /// Their priority, if they have one.
    pub priority: Option<Priority>,
    /// Their unit preference, if they have one.
    pub unit: Option<Unit>,
    /// A note about them.
    pub note: Option<String>,
}

/// Optional fields inside arrays: a list of structs with optional fields, an optional list of optional
/// strings, an optional list of structs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OptionInArrays {
    /// Who is invited.
    pub attendees: Vec<Attendee>,
    /// Labels, where a null label is a blank line.
    pub labels: Option<Vec<Option<String>>>,
    /// Order lines, if any.
    pub items: Option<Vec<Item>>,
}

/// Pairs, as tuples.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Tuples {
    /// A name and its count.
    pub pair: (String, u32),
    /// Latitude and longitude, if known.
    pub point: Option<(f64, f64)>,
    /// Scores by player.
    pub scores: Vec<(String, u32)>,
}

/// Optional date strings and a double option.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OptionDates {
    /// The day, as `YYYY-MM-DD`, if fixed.
    #[schemars(extend("format" = "date"))]
    pub day: Option<String>,
    /// The moment, as RFC 3339, if fixed.
    #[schemars(extend("format" = "date-time"))]
    pub at: Option<String>,
    /// A new title: left out or null keeps the old one.
    pub title: Option<Option<String>>,
}

/// What to do with a ticket, tagged by `action`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum TicketAction {
    /// Close the ticket.
    Close {
        /// Why it is closed.
        reason: String,
    },
    /// Assign the ticket to someone.
    Assign {
        /// Who takes it, by user name.
        assignee: String,
        /// Whether to notify them; yes when left out.
        notify: Option<bool>,
    },
    /// Reopen a closed ticket.
    Reopen,
}

/// A change to a ticket: a flattened internally tagged enum, so the arguments are a union at the root.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FlattenedRoot {
    /// The ticket, e.g. "T-12".
    pub ticket: String,
    #[serde(flatten)]
    pub action: TicketAction,
}

/// A file operation: an internally tagged enum as the arguments, with a field every variant shares.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum TaggedRoot {
    /// Read a file.
    Read {
        /// The file's path.
        path: String,
    },
    /// Write a file, replacing it.
    Write {
        /// The file's path.
        path: String,
        /// The new content.
        content: String,
    },
    /// Cut a file to a size.
    Truncate {
        /// The file's path.
        path: String,
        /// The new size in bytes.
        size: u64,
    },
}

/// How to find a user: an untagged enum as the arguments, so the branches are told apart by their fields.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum UntaggedRoot {
    /// By numeric id.
    ById {
        /// The user's id.
        id: u64,
    },
    /// By name.
    ByName {
        /// The user's name.
        name: String,
        /// Whether the name must match exactly; yes when left out.
        exact: Option<bool>,
    },
}

/// Take no arguments.
#[tool]
async fn no_arguments() -> &'static str {
    "done"
}

// One echo tool per type, written out: `#[tool]` inside `macro_rules!` would mix hygiene contexts.

/// Echo the arguments back.
#[tool]
async fn option_scalar(args: OptionScalar) -> Json<OptionScalar> {
    Json(args)
}

/// Echo the arguments back.
#[tool]
async fn option_enum(args: OptionEnum) -> Json<OptionEnum> {
    Json(args)
}

/// Echo the arguments back.
#[tool]
async fn option_struct(args: OptionStruct) -> Json<OptionStruct> {
    Json(args)
}

/// Echo the arguments back.
#[tool]
async fn option_vec(args: OptionVec) -> Json<OptionVec> {
    Json(args)
}

/// Echo the arguments back.
#[tool]
async fn documented_enum(args: DocumentedEnum) -> Json<DocumentedEnum> {
    Json(args)
}

/// Echo the arguments back.
#[tool]
async fn internally_tagged(args: InternallyTagged) -> Json<InternallyTagged> {
    Json(args)
}

/// Echo the arguments back.
#[tool]
async fn externally_tagged(args: ExternallyTagged) -> Json<ExternallyTagged> {
    Json(args)
}

/// Echo the arguments back.
#[tool]
async fn adjacently_tagged(args: AdjacentlyTagged) -> Json<AdjacentlyTagged> {
    Json(args)
}

/// Echo the arguments back.
#[tool]
async fn nested_structs(args: NestedStructs) -> Json<NestedStructs> {
    Json(args)
}

/// Echo the arguments back.
#[tool]
async fn vec_of_struct(args: VecOfStruct) -> Json<VecOfStruct> {
    Json(args)
}

/// Echo the arguments back.
#[tool]
async fn map(args: Map) -> Json<Map> {
    Json(args)
}

/// Echo the arguments back.
#[tool]
async fn flatten_struct(args: FlattenStruct) -> Json<FlattenStruct> {
    Json(args)
}

/// Echo the arguments back.
#[tool]
async fn flatten_map(args: FlattenMap) -> Json<FlattenMap> {
    Json(args)
}

/// Echo the arguments back.
#[tool]
async fn rename_all(args: RenameAll) -> Json<RenameAll> {
    Json(args)
}

/// Echo the arguments back.
#[tool]
async fn defaults(args: Defaults) -> Json<Defaults> {
    Json(args)
}

/// Echo the arguments back.
#[tool]
async fn deny_unknown(args: DenyUnknown) -> Json<DenyUnknown> {
    Json(args)
}

/// Echo the arguments back.
#[tool]
async fn integers(args: Integers) -> Json<Integers> {
    Json(args)
}

/// Echo the arguments back.
#[tool]
async fn float(args: Float) -> Json<Float> {
    Json(args)
}

/// Echo the arguments back.
#[tool]
async fn recursive(args: Recursive) -> Json<Recursive> {
    Json(args)
}

/// Echo the arguments back.
#[tool]
async fn date_strings(args: DateStrings) -> Json<DateStrings> {
    Json(args)
}

/// Echo the arguments back.
#[tool]
async fn ten_levels(args: TenLevels) -> Json<TenLevels> {
    Json(args)
}

/// Echo the arguments back.
#[tool]
async fn option_nested(args: OptionNested) -> Json<OptionNested> {
    Json(args)
}

/// Echo the arguments back.
#[tool]
async fn option_in_arrays(args: OptionInArrays) -> Json<OptionInArrays> {
    Json(args)
}

/// Echo the arguments back.
#[tool]
async fn option_dates(args: OptionDates) -> Json<OptionDates> {
    Json(args)
}

/// Echo the arguments back.
#[tool]
async fn tuples(args: Tuples) -> Json<Tuples> {
    Json(args)
}

/// Echo the arguments back.
#[tool]
async fn flattened_root(args: FlattenedRoot) -> Json<FlattenedRoot> {
    Json(args)
}

/// Echo the arguments back.
#[tool]
async fn tagged_root(args: TaggedRoot) -> Json<TaggedRoot> {
    Json(args)
}

/// Echo the arguments back.
#[tool]
async fn untagged_root(args: UntaggedRoot) -> Json<UntaggedRoot> {
    Json(args)
}

/// Every corpus tool, by the name of its golden files.
pub fn tools() -> Vec<(&'static str, AgentTool)> {
    vec![
        ("no_arguments", no_arguments_tool()),
        ("option_scalar", option_scalar_tool()),
        ("option_enum", option_enum_tool()),
        ("option_struct", option_struct_tool()),
        ("option_vec", option_vec_tool()),
        ("documented_enum", documented_enum_tool()),
        ("internally_tagged", internally_tagged_tool()),
        ("externally_tagged", externally_tagged_tool()),
        ("adjacently_tagged", adjacently_tagged_tool()),
        ("nested_structs", nested_structs_tool()),
        ("vec_of_struct", vec_of_struct_tool()),
        ("map", map_tool()),
        ("flatten_struct", flatten_struct_tool()),
        ("flatten_map", flatten_map_tool()),
        ("rename_all", rename_all_tool()),
        ("defaults", defaults_tool()),
        ("deny_unknown", deny_unknown_tool()),
        ("integers", integers_tool()),
        ("float", float_tool()),
        ("recursive", recursive_tool()),
        ("date_strings", date_strings_tool()),
        ("ten_levels", ten_levels_tool()),
        ("option_nested", option_nested_tool()),
        ("option_in_arrays", option_in_arrays_tool()),
        ("option_dates", option_dates_tool()),
        ("flattened_root", flattened_root_tool()),
        ("tagged_root", tagged_root_tool()),
        ("untagged_root", untagged_root_tool()),
        ("tuples", tuples_tool()),
    ]
}
