//! The checks a call's arguments go through before and beside serde, and what a tool caches for them: the
//! top-level property names of its schema (computed on the first call), whether anything below the top
//! level can hold an object, and its JSON Schema validator (compiled on the first failure).

use std::sync::OnceLock;

#[cfg(feature = "schema-validation")]
use jsonschema::Validator;
use serde_json::Value;

use super::ArgumentChecking;
use super::walk::{Look, Shape, Walk};

/// What a tool caches to check its arguments: the top-level property names (computed on the first call)
/// and the JSON Schema validator (compiled on the first failure).
#[derive(Default)]
pub(crate) struct ArgumentCache {
    #[cfg(feature = "schema-validation")]
    validator: OnceLock<Option<Validator>>,
    top_level: OnceLock<TopLevel>,
}

#[cfg(feature = "schema-validation")]
impl ArgumentCache {
    /// A cache whose validator is already compiled (run-time tools validate every call).
    pub(crate) fn with_validator(validator: Validator) -> Self {
        ArgumentCache {
            validator: OnceLock::from(Some(validator)),
            top_level: OnceLock::new(),
        }
    }
}

/// The properties the arguments object may have.
pub(super) struct TopLevel {
    /// Every declared name, in schema order.
    pub(super) names: Vec<String>,
    /// Whether other names are allowed too (see the module docs).
    pub(super) open: bool,
    /// Whether a property can hold an object or an array, so that unknown properties must be looked for
    /// below the top level too.
    deep: bool,
}

impl TopLevel {
    fn of(schema: &Value) -> Self {
        let shape = Shape::of(schema, schema);
        TopLevel {
            names: shape.names.iter().map(|name| (*name).clone()).collect(),
            open: shape.open,
            deep: shape.is_deep(schema),
        }
    }

    pub(super) fn knows(&self, name: &str) -> bool {
        self.names.iter().any(|known| same_name(known, name))
    }
}

/// `a == b`, with short names (most property names) compared byte by byte in line rather than by a call
/// to `memcmp`, which costs more than the comparison itself.
fn same_name(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    a.len() == b.len()
        && if a.len() <= 8 {
            a.iter().zip(b).all(|(x, y)| x == y)
        } else {
            a == b
        }
}

/// Everything the check of one call needs: the tool's name, its canonical schema and its caches.
#[doc(hidden)]
pub struct ArgumentCheck<'a> {
    pub(crate) tool: &'a str,
    /// The schema, looked up only when a check needs it (a call whose arguments fit never does, once the
    /// caches are filled).
    pub(crate) schema: &'a (dyn Fn() -> &'a Value + 'a),
    pub(crate) cache: &'a ArgumentCache,
    /// Whether the full validator runs beside the walk (the store's choice; without the
    /// `schema-validation` feature there is none to run).
    #[cfg_attr(not(feature = "schema-validation"), allow(dead_code))]
    pub(crate) checking: ArgumentChecking,
}

impl<'a> ArgumentCheck<'a> {
    /// The tool's name.
    pub fn tool(&self) -> &str {
        self.tool
    }

    /// The tool's canonical input schema.
    pub(super) fn schema(&self) -> &'a Value {
        (self.schema)()
    }

    pub(super) fn top_level(&self) -> &TopLevel {
        self.cache
            .top_level
            .get_or_init(|| TopLevel::of(self.schema()))
    }

    /// The tool's validator, when the store runs it.
    #[cfg(feature = "schema-validation")]
    pub(super) fn validator(&self) -> Option<&Validator> {
        if self.checking != ArgumentChecking::Full {
            return None;
        }
        self.cache
            .validator
            .get_or_init(|| jsonschema::validator_for(self.schema()).ok())
            .as_ref()
    }

    /// Whether the arguments have a property the schema does not allow, at any depth (cheap: no
    /// validator).
    ///
    /// For a schema whose properties hold only scalars (most tools), only the top level is looked at.
    /// Models mostly send the properties in the schema's order, so each key is first compared with the
    /// name at its own position; only a key found elsewhere costs a scan of the names.
    pub(crate) fn has_unknown_properties(&self, args: &Value) -> bool {
        let top = self.top_level();
        if top.deep {
            return !Walk::accepts(self.schema(), Look::UnknownProperties, args);
        }
        if top.open {
            return false;
        }
        let Some(args) = args.as_object() else {
            return false;
        };
        let mut at = top.names.iter();
        for key in args.keys() {
            if at.next().is_some_and(|name| same_name(name, key)) {
                continue;
            }
            if !top.knows(key) {
                return true;
            }
        }
        false
    }

    /// Whether `key` may be a top-level property of the arguments.
    pub(crate) fn allows_key(&self, key: &str) -> bool {
        let top = self.top_level();
        top.open || top.knows(key)
    }

    /// Whether checking the top-level keys alone is not enough: a property can hold an object whose
    /// keys must be checked too.
    pub(crate) fn looks_below_the_top(&self) -> bool {
        self.top_level().deep
    }

    /// Whether the arguments pass the walk of the `walk` module (every depth), and with the
    /// `schema-validation` feature the full validator too.
    pub(crate) fn is_valid(&self, args: &Value) -> bool {
        #[cfg(feature = "schema-validation")]
        let valid = self.validator().is_none_or(|v| v.is_valid(args));
        #[cfg(not(feature = "schema-validation"))]
        let valid = true;
        valid && Walk::accepts(self.schema(), Look::Everything, args)
    }
}

impl std::fmt::Debug for ArgumentCheck<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArgumentCheck").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, json};

    use super::*;

    fn check_with(schema: &Value, args: Value) -> bool {
        let cache = ArgumentCache::default();
        let check = ArgumentCheck {
            tool: "t",
            schema: &|| schema,
            cache: &cache,
            checking: ArgumentChecking::default(),
        };
        check.has_unknown_properties(&args)
    }

    #[test]
    fn every_key_is_checked_in_any_order_and_at_any_position() {
        let schema = json!({
            "type": "object",
            "properties": {
                "a": {}, "ab": {}, "location": {}, "locations": {}, "größe": {}
            }
        });
        let known = ["a", "ab", "location", "locations", "größe"];
        // In the schema's order, reversed, and every rotation: all known.
        let mut keys = known.to_vec();
        for _ in 0..known.len() {
            let args: Map<String, Value> = keys.iter().map(|k| (k.to_string(), json!(1))).collect();
            assert!(!check_with(&schema, Value::Object(args)), "{keys:?}");
            keys.rotate_left(1);
        }
        let reversed: Map<String, Value> = known
            .iter()
            .rev()
            .map(|k| (k.to_string(), json!(1)))
            .collect();
        assert!(!check_with(&schema, Value::Object(reversed)));
        // An unknown key at each position, including one that shares a prefix or the length of a
        // known name, or differs only in its last byte.
        for unknown in ["b", "abc", "locatiom", "locationz", "größer", "A", ""] {
            for at in 0..=known.len() {
                let mut keys: Vec<&str> = known.to_vec();
                keys.insert(at, unknown);
                let args: Map<String, Value> =
                    keys.iter().map(|k| (k.to_string(), json!(1))).collect();
                assert!(
                    check_with(&schema, Value::Object(args)),
                    "`{unknown}` at {at} must be reported"
                );
            }
        }
        // More keys than names, all but one known.
        let args = json!({"a": 1, "ab": 1, "location": 1, "locations": 1, "größe": 1, "x": 1});
        assert!(check_with(&schema, args));
    }

    #[test]
    fn names_compare_equal_only_when_every_byte_does() {
        for (a, b, same) in [
            ("", "", true),
            ("note", "note", true),
            ("note", "nots", false),
            ("note", "notes", false),
            ("12345678", "12345678", true),
            ("12345678", "12345679", false),
            ("123456789", "123456789", true),
            ("123456789", "123456788", false),
            ("größe", "größe", true),
        ] {
            assert_eq!(same_name(a, b), same, "{a:?} vs {b:?}");
        }
    }
}
