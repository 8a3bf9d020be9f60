//! An event's data as a stream parser gets it: its text, in a buffer the parser owns, so that the longest
//! string of its JSON becomes a `String` without a copy. A large delta is one JSON string in one event;
//! serde_json would copy it into a new `String` (through its scratch buffer first when the string holds
//! escapes), and glibc serves each allocation of 32 MiB or more with a fresh `mmap` whose pages fault in
//! as they are written. [`EventData::json`] decodes that string within the event's own buffer instead
//! (escapes only shrink a string) and hands the buffer over as the string; the rest of the event, with a
//! placeholder where the string was, is parsed by serde_json. The value is exactly the one
//! `serde_json::from_str` gives, and any text that is not plainly valid goes to serde_json whole, so it
//! is refused with serde_json's own error.

use std::ops::Range;

use serde_json::Value;

/// A string at least this long is decoded in place; the events of shorter ones are parsed as they are.
const MOVE_STRING_BYTES: usize = 64 << 10;

/// What stands in for the moved string while the rest is parsed. Any text may hold it too: a value
/// with it other than exactly once is parsed whole instead.
const PLACEHOLDER: &str = "\u{0}yiem:moved-string\u{0}";
const PLACEHOLDER_JSON: &str = r#""\u0000yiem:moved-string\u0000""#;

/// One event's data (or a whole body): its text, owned.
#[derive(Debug)]
pub(crate) struct EventData {
    buffer: String,
    /// Where the text is in `buffer`.
    range: Range<usize>,
}

impl EventData {
    /// The data at `buffer[start..]`, without surrounding whitespace.
    pub(crate) fn trimmed(buffer: String, start: usize) -> Self {
        let text = &buffer[start..];
        let begin = start + (text.len() - text.trim_start().len());
        let end = start + text.trim_end().len();
        EventData {
            range: begin..end.max(begin),
            buffer,
        }
    }

    /// The text, parsed as JSON exactly as `serde_json::from_str` would, its longest string moved out
    /// of the buffer (which is then empty) when it is long. The text is left as it was on an error.
    pub(crate) fn json(&mut self) -> serde_json::Result<Value> {
        self.json_moving(MOVE_STRING_BYTES)
    }

    /// [`json`](Self::json), moving the longest string when it has at least `min` bytes.
    fn json_moving(&mut self, min: usize) -> serde_json::Result<Value> {
        if self.len() >= min
            && let Some(string) = longest_string(self.as_bytes()).filter(|s| s.len() >= min)
            && let Some(value) = self.moving(string)
        {
            return value;
        }
        serde_json::from_str(self)
    }

    /// The value with the string at `string` (its contents' bytes in the text, every escape in them
    /// checked) decoded in place and moved in; `None` (nothing changed) when the text must be parsed
    /// whole.
    fn moving(&mut self, string: Range<usize>) -> Option<serde_json::Result<Value>> {
        let text: &str = self;
        // A control character, which serde_json refuses (a fold, not `any`, so it is vectorised).
        let contents = &text.as_bytes()[string.clone()];
        if contents
            .iter()
            .fold(false, |control, &b| control | (b < 0x20))
        {
            return None;
        }
        let mut rest = String::with_capacity(text.len() - string.len() + PLACEHOLDER_JSON.len());
        rest.push_str(&text[..string.start - 1]);
        rest.push_str(PLACEHOLDER_JSON);
        rest.push_str(&text[string.end + 1..]);
        let mut value: Value = serde_json::from_str(&rest).ok()?;
        if placeholders(&value) != 1 {
            return None;
        }
        let slot = placeholder_mut(&mut value)?; // none when the string was a key
        let offset = self.range.start;
        let buffer = std::mem::take(&mut self.buffer).into_bytes();
        self.range = 0..0;
        let Some(decoded) = decode_in_place(buffer, string.start + offset..string.end + offset)
        else {
            let error = "a checked string did not decode in place";
            return Some(Err(serde::de::Error::custom(error)));
        };
        *slot = Value::String(decoded);
        Some(Ok(value))
    }
}

impl std::ops::Deref for EventData {
    type Target = str;

    fn deref(&self) -> &str {
        &self.buffer[self.range.clone()]
    }
}

impl From<String> for EventData {
    fn from(buffer: String) -> Self {
        EventData {
            range: 0..buffer.len(),
            buffer,
        }
    }
}

impl From<&str> for EventData {
    fn from(text: &str) -> Self {
        text.to_owned().into()
    }
}

/// The contents (between the quotes) of the longest string in the JSON `text`, or `None` when a string
/// does not end or holds an escape serde_json refuses (the text is then parsed whole, and refused).
/// Outside strings only `"` is looked for: in JSON it starts one, and text that is not JSON elsewhere
/// is refused by the parse of the rest.
fn longest_string(text: &[u8]) -> Option<Range<usize>> {
    let mut longest: Option<Range<usize>> = None;
    let mut at = 0;
    while let Some(open) = memchr::memchr(b'"', &text[at..]) {
        let start = at + open + 1;
        let mut end = start;
        loop {
            end += memchr::memchr2(b'"', b'\\', &text[end..])?;
            if text[end] == b'"' {
                break;
            }
            end += unescape(&text[end..])?.1;
        }
        if longest.as_ref().is_none_or(|l| end - start > l.len()) {
            longest = Some(start..end);
        }
        at = end + 1;
    }
    longest
}

/// The escape at the start of `text` (which starts with `\`): the character it stands for and its
/// length, or `None` where serde_json refuses it (an unknown escape, bad hex, a lone surrogate).
fn unescape(text: &[u8]) -> Option<(char, usize)> {
    let simple = match *text.get(1)? {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\x08',
        b'f' => '\x0c',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => {
            let high = hex4(text.get(2..6)?)?;
            if !(0xD800..0xDC00).contains(&high) {
                return Some((char::from_u32(high)?, 6));
            }
            if text.get(6..8)? != b"\\u" {
                return None;
            }
            let low = hex4(text.get(8..12)?)?;
            if !(0xDC00..0xE000).contains(&low) {
                return None;
            }
            let code = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
            return Some((char::from_u32(code)?, 12));
        }
        _ => return None,
    };
    Some((simple, 2))
}

/// Four hex digits (either case) as a number.
fn hex4(digits: &[u8]) -> Option<u32> {
    digits.iter().try_fold(0, |n, &d| {
        let digit = (d as char).to_digit(16)?;
        Some(n << 4 | digit)
    })
}

/// The string whose contents are `buffer[contents]` (escapes checked), decoded to the start of `buffer`
/// and the buffer turned into it: no new allocation, whatever its size.
fn decode_in_place(mut buffer: Vec<u8>, contents: Range<usize>) -> Option<String> {
    let (mut read, end) = (contents.start, contents.end);
    let mut write = 0;
    loop {
        let escape = memchr::memchr(b'\\', &buffer[read..end]).map_or(end, |i| read + i);
        buffer.copy_within(read..escape, write);
        write += escape - read;
        if escape == end {
            break;
        }
        let (decoded, length) = unescape(&buffer[escape..end])?;
        // An escape is never shorter than its character's UTF-8, so it fits where the escape began.
        let mut utf8 = [0; 4];
        let utf8 = decoded.encode_utf8(&mut utf8).as_bytes();
        buffer[write..write + utf8.len()].copy_from_slice(utf8);
        write += utf8.len();
        read = escape + length;
    }
    buffer.truncate(write);
    String::from_utf8(buffer).ok()
}

/// How many strings of `value`, keys included, are the placeholder.
fn placeholders(value: &Value) -> usize {
    match value {
        Value::String(text) => usize::from(text == PLACEHOLDER),
        Value::Array(items) => items.iter().map(placeholders).sum(),
        Value::Object(members) => members
            .iter()
            .map(|(key, member)| usize::from(key == PLACEHOLDER) + placeholders(member))
            .sum(),
        _ => 0,
    }
}

/// The (first) string value of `value` that is the placeholder.
fn placeholder_mut(value: &mut Value) -> Option<&mut Value> {
    match value {
        Value::String(text) if text == PLACEHOLDER => Some(value),
        Value::Array(items) => items.iter_mut().find_map(placeholder_mut),
        Value::Object(members) => members.values_mut().find_map(placeholder_mut),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What `json_moving(0)` gives (the longest string always moved when it can be) beside serde_json's
    /// own parse: the same value, or the same error with the text left as it was. Whether the string
    /// was moved.
    fn check(text: &str) -> bool {
        let mut data = EventData::from(text);
        let moved = data.json_moving(0);
        match (moved, serde_json::from_str::<Value>(text)) {
            (Ok(got), Ok(want)) => assert_eq!(got, want, "{text:?}"),
            (Err(got), Err(want)) => {
                assert_eq!(got.to_string(), want.to_string(), "{text:?}");
                assert_eq!(&*data, text);
            }
            (got, want) => panic!("{text:?}: {got:?} against serde_json's {want:?}"),
        }
        data.buffer.is_empty()
    }

    #[test]
    fn escapes_decode_as_serde_json_decodes_them() {
        for contents in [
            "",
            "plain",
            r#"a\"b\\c\/d\be\ff\ng\rh\ti"#,
            r"\u0041\u00e9\u20AC\uFFFF\u0000",
            r"\ud83d\ude00 and \uD83D\uDE00",
            "é ü 😀 non-ASCII kept as it is",
            r"\ud800",
            r"\ud800x",
            r"\ud800\n",
            r"\ud800\u0041",
            r"\ud800\ud800",
            r"\udc00",
            r"\u12",
            r"\u12G4",
            r"\x",
            r"\",
            "tab\there",
            "newline\nraw",
        ] {
            let alone = format!(r#""{contents}""#);
            assert_eq!(
                check(&alone),
                serde_json::from_str::<String>(&alone).is_ok()
            );
            check(&format!(
                r#"{{"a": 1, "delta": "{contents}", "b": [true, null]}}"#
            ));
        }
    }

    #[test]
    fn the_placeholder_in_the_text_is_no_confusion() {
        let longer = "a string longer than the placeholder's JSON";
        check(&format!(r#"{{"a": {PLACEHOLDER_JSON}, "b": "{longer}"}}"#));
        check(&format!(r#"{{"b": "{longer}", "c": {PLACEHOLDER_JSON}}}"#));
        check(&format!(r#"{{{PLACEHOLDER_JSON}: "{longer}"}}"#));
        // The longest string a key, the placeholder a value.
        check(&format!(r#"{{"{longer}": 1, "a": {PLACEHOLDER_JSON}}}"#));
        check(r#"{"a": "longer string here", "a": "x"}"#);
        check(r#"{"a": "x", "a": "longer string here"}"#);
        check(r#"{"longer key than any value": 1}"#);
    }

    #[test]
    fn text_that_is_not_json_is_refused_with_serde_jsons_error() {
        for text in [
            r#"{"a": "long string" "b"}"#,
            r#"{"a": "long string""#,
            r#"{"a": "long string"} x"#,
            r#"{"a": "unterminated"#,
            r#"{a: "long string"}"#,
            r#"["long string", ]"#,
            "",
            "[DONE]",
        ] {
            check(text);
        }
    }

    #[test]
    fn a_long_string_leaves_in_the_events_own_buffer() {
        let long = "x\\n\\u00e9".repeat(MOVE_STRING_BYTES);
        let text = format!(r#"data: {{"choices": [{{"delta": {{"content": "{long}"}}}}]}}  "#);
        let mut data = EventData::trimmed(text, 6);
        let buffer = data.buffer.as_ptr();
        let mut value = data.json().unwrap();
        let Value::String(content) = value["choices"][0]["delta"]["content"].take() else {
            panic!("no content");
        };
        assert_eq!(content, "x\né".repeat(MOVE_STRING_BYTES));
        assert_eq!(content.as_ptr(), buffer, "decoded where it arrived");
        assert!(data.is_empty());
    }

    /// A JSON string's contents from random pieces: plain text, each escape, paired and lone surrogates
    /// in either case, bad escapes, control characters, quotes.
    fn contents() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            "[a-z é😀]{0,8}",
            Just(r#"\""#.to_owned()),
            Just(r"\\".to_owned()),
            Just(r"\/".to_owned()),
            Just(r"\b\f\n\r\t".to_owned()),
            (0u32..0x10000).prop_map(|n| format!(r"\u{n:04x}")),
            (0u32..0x10000).prop_map(|n| format!(r"\u{n:04X}")),
            (0xD800u32..0xDC00, 0xDC00u32..0xE000)
                .prop_map(|(h, l)| format!(r"\u{h:04x}\u{l:04X}")),
            (0xD800u32..0xE000).prop_map(|n| format!(r"\u{n:04x}")),
            prop::sample::select(vec![r"\x", r"\u12", r"\uZZZZ", "\u{1}", "\t", "\"", r"\"])
                .prop_map(str::to_owned),
        ];
        prop::collection::vec(piece, 0..12).prop_map(|pieces| pieces.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Random strings, alone and inside an event with other strings around them, parse to what
        /// serde_json makes of them, or fail with its error.
        #[test]
        fn random_strings_parse_as_serde_json_parses_them(
            strings in prop::collection::vec(contents(), 1..4),
            keys in prop::collection::vec(contents(), 3),
        ) {
            let alone = format!("\"{}\"", strings[0]);
            let moved = check(&alone);
            // A valid string is moved, never parsed whole.
            prop_assert_eq!(moved, serde_json::from_str::<Value>(&alone).is_ok());
            let members: Vec<String> = strings
                .iter()
                .zip(&keys)
                .map(|(string, key)| format!(r#""{key}": ["{string}", 1]"#))
                .collect();
            check(&format!("{{{}}}", members.join(", ")));
        }
    }
}
