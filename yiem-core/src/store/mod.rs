//! The tools of an agent or a server: [`ToolStore`] (tools, their state, how arguments
//! are checked), registration ([`register_all_tools`],
//! [`ToolMethods`]), the request-ready lists in each provider's
//! [`Dialect`] ([`ToolList`]), and the checks of what a provider would
//! refuse ([`check_tools`](fn@check_tools)).

pub(crate) mod check;
pub(crate) mod registry;

pub use self::check::{ToolCheck, ToolProblem, check_tools};
pub use self::registry::{
    LIST_TOOLS, RegistrationError, ToolList, ToolMethods, ToolStore, register_all_tools,
    static_tools,
};
pub use crate::args::{ArgumentChecking, ArgumentError, ArgumentProblem};
pub use crate::dialect::{Dialect, DialectError, UnknownDialect};
