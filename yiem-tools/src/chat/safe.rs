//! Text from a model, a tool or a server made safe to print: nothing it holds reaches the terminal as a
//! control. Every C0 control character (but a line break and a tab in a block of text), `DEL`, every C1
//! control and every invisible character that reorders or hides text (bidirectional overrides and
//! isolates, zero-width characters) is shown as a visible stand-in instead: the Unicode control picture
//! for C0 and `DEL` (`ESC` is `␛`, a carriage return `␍`), `⟨U+202E⟩` for the others. So an escape
//! sequence that would clear a line, set the window title (OSC 0) or write the clipboard (OSC 52) is
//! printed as the text it is, and a carriage return cannot hide what came before it on the line.

/// `text` for one line: line breaks and tabs escaped too.
pub fn line(text: &str) -> String {
    escape(text, false)
}

/// `text` for a block of lines: line breaks and tabs kept, everything else as [`line`](fn@line).
pub fn block(text: &str) -> String {
    escape(text, true)
}

/// `value` as JSON, with every character [`line`](fn@line) would escape written as a `\uXXXX` escape: the same
/// value, safe to show (and to edit) in a terminal.
pub fn json(value: &serde_json::Value) -> String {
    let text = value.to_string();
    if !text.chars().any(|c| needs_escape(c, false)) {
        return text;
    }
    // serde_json escapes C0 controls already; what is left can only be inside strings.
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if needs_escape(c, false) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

fn escape(text: &str, keep_lines: bool) -> String {
    if !text.chars().any(|c| needs_escape(c, keep_lines)) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if !needs_escape(c, keep_lines) {
            out.push(c);
        } else if (c as u32) < 0x20 {
            // U+2400 CONTROL PICTURES: ␀ for NUL ... ␛ for ESC ... ␟ for US.
            out.push(char::from_u32(0x2400 + c as u32).unwrap_or('\u{FFFD}'));
        } else if c == '\u{7f}' {
            out.push('␡');
        } else {
            out.push_str(&format!("⟨U+{:04X}⟩", c as u32));
        }
    }
    out
}

fn needs_escape(c: char, keep_lines: bool) -> bool {
    match c {
        '\n' | '\t' => !keep_lines,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => true,
        // Bidirectional embeddings, overrides, isolates and marks; zero-width and invisible characters.
        '\u{200b}'..='\u{200f}'
        | '\u{202a}'..='\u{202e}'
        | '\u{2060}'..='\u{2064}'
        | '\u{2066}'..='\u{2069}'
        | '\u{061c}'
        | '\u{feff}' => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_and_carriage_returns_are_shown_not_obeyed() {
        let spoof = "rm -rf ~/precious # \r\u{1b}[2K ls -la";
        assert_eq!(line(spoof), "rm -rf ~/precious # ␍␛[2K ls -la");
        assert_eq!(
            block("title\u{1b}]0;owned\u{7}clip\u{1b}]52;c;ZWNobw==\u{7}\nnext\tcell"),
            "title␛]0;owned␇clip␛]52;c;ZWNobw==␇\nnext\tcell"
        );
        assert_eq!(line("a\nb\tc"), "a␊b␉c");
        assert_eq!(
            line("\u{9b}2J \u{202e}txt.exe \u{7f}"),
            "⟨U+009B⟩2J ⟨U+202E⟩txt.exe ␡"
        );
        assert_eq!(block("plain text, 日本語 ✓"), "plain text, 日本語 ✓");
    }

    #[test]
    fn json_stays_the_same_value_with_invisible_characters_escaped() {
        let value = serde_json::json!({"cmd": "a\u{1b}[2K\u{202e}b\u{9b}"});
        let shown = json(&value);
        assert_eq!(shown, r#"{"cmd":"a\u001b[2K\u202eb\u009b"}"#);
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&shown).unwrap(),
            value
        );
    }
}
