//! `read`: a text file with line numbers, a window of it at a time, or an image as image content.

use std::fs::File;
use std::io::{BufRead, BufReader, Read as _, Seek as _, SeekFrom};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use yiem_core::{
    tool,
    tool::{AgentToolResult, Content, State},
};

use crate::confined::open_regular;
use crate::root::ToolRoot;
use crate::truncate::{MAX_LINE_CHARS, READ_MAX_BYTES, READ_MAX_LINES, shorten_line};

/// Images larger than this are refused rather than sent to the model.
pub const MAX_IMAGE_BYTES: u64 = 10 * 1024 * 1024;

/// Arguments of `read`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct ReadArgs {
    /// The file to read, relative to the root directory.
    pub path: String,
    /// The line to start at, counting from 1. Default: 1.
    #[serde(default)]
    pub offset: Option<usize>,
    /// How many lines to return at most. Default and maximum: 2000.
    #[serde(default)]
    pub limit: Option<usize>,
}

/// Read a file under the root directory. Text comes back with line numbers (`     3\tfn main() {`), at most
/// 2000 lines or 50 KB per call; a note says which `offset` continues. PNG, JPEG, GIF and WebP images come
/// back as images.
#[tool(
    label = "Read File",
    parallel,
    read_only,
    idempotent,
    open_world = false,
    timeout_ms = 30000
)]
pub fn read(State(root): State<ToolRoot>, args: ReadArgs) -> Result<AgentToolResult, String> {
    let (root, args): (&ToolRoot, &ReadArgs) = (&root, &args);
    let located = root.locate("read", &args.path)?;
    let offset = args.offset.unwrap_or(1);
    if offset == 0 {
        return Err("tool `read`: `offset` counts lines from 1; use 1 for the first line".into());
    }
    let limit = args.limit.unwrap_or(READ_MAX_LINES);
    if limit == 0 {
        return Err(format!(
            "tool `read`: `limit` must be at least 1 (at most {READ_MAX_LINES})"
        ));
    }
    let limit = limit.min(READ_MAX_LINES);
    let (mut file, metadata) = open_regular(root.dir(), &located.rel)
        .map_err(|error| error.message(root, "read", &located))?;
    let shown = located.shown.clone();

    let mut head = Vec::new();
    (&mut file)
        .take(16)
        .read_to_end(&mut head)
        .map_err(|error| format!("tool `read`: cannot read `{shown}`: {error}"))?;
    file.seek(SeekFrom::Start(0))
        .map_err(|error| format!("tool `read`: cannot read `{shown}`: {error}"))?;
    if let Some(mime) = image_mime(&head) {
        return read_image(file, &shown, mime, metadata.len());
    }

    let cannot = |error: std::io::Error| format!("tool `read`: cannot read `{shown}`: {error}");
    // Streamed: only the window is kept in memory; the rest of the file is only counted.
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let first = reader.fill_buf().map_err(cannot)?;
    if first[..first.len().min(8192)].contains(&0) {
        return Err(format!(
            "tool `read`: `{shown}` is a binary file ({} bytes); `read` shows text files and PNG, JPEG, GIF or WebP images",
            metadata.len()
        ));
    }
    if first.is_empty() {
        return Ok(AgentToolResult::text(format!("[`{shown}` is empty]"))
            .with_details(json!({"path": shown, "total_lines": 0})));
    }

    // `offset` and `limit` come from the model: the window's end is computed without overflow.
    let window_end = offset.saturating_add(limit - 1);
    let mut out = String::new();
    let mut end = offset - 1;
    let mut hit_byte_limit = false;
    let mut total = 0usize;
    let mut line = Vec::new();
    while !hit_byte_limit && total < window_end {
        line.clear();
        if reader.read_until(b'\n', &mut line).map_err(cannot)? == 0 {
            break;
        }
        total = total.saturating_add(1);
        if total < offset {
            continue;
        }
        let text = String::from_utf8_lossy(strip_line_end(&line));
        let numbered = format!("{total:>6}\t{}", shorten_line(&text, MAX_LINE_CHARS));
        if !out.is_empty() && out.len() + numbered.len() + 1 > READ_MAX_BYTES {
            hit_byte_limit = true;
            break;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&numbered);
        end = total;
    }
    total = total.saturating_add(count_lines(&mut reader).map_err(cannot)?);
    if offset > total {
        return Err(format!(
            "tool `read`: offset {offset} is past the end of `{shown}`, which has {total} lines; use an offset from 1 to {total}"
        ));
    }
    let truncated = end < total;
    if truncated {
        let why = if hit_byte_limit {
            format!(" (the {} KB limit of one read)", READ_MAX_BYTES / 1024)
        } else {
            String::new()
        };
        out.push_str(&format!(
            "\n\n[Showing lines {offset}-{end} of {total}{why}. Use offset={} to continue.]",
            end.saturating_add(1)
        ));
    }
    Ok(AgentToolResult::text(out).with_details(json!({
        "path": shown,
        "start_line": offset,
        "end_line": end,
        "total_lines": total,
        "truncated": truncated,
    })))
}

/// `line` without its `\n` or `\r\n`.
fn strip_line_end(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// The number of lines left in `reader` (a last line without `\n` counts).
fn count_lines(reader: &mut impl BufRead) -> std::io::Result<usize> {
    let mut lines: usize = 0;
    let mut partial = false;
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            return Ok(lines.saturating_add(usize::from(partial)));
        }
        lines = lines.saturating_add(chunk.iter().filter(|&&b| b == b'\n').count());
        partial = chunk.last() != Some(&b'\n');
        let used = chunk.len();
        reader.consume(used);
    }
}

fn read_image(file: File, shown: &str, mime: &str, size: u64) -> Result<AgentToolResult, String> {
    if size > MAX_IMAGE_BYTES {
        return Err(format!(
            "tool `read`: image `{shown}` is {size} bytes, more than the {} MB a model is sent; make a smaller copy first",
            MAX_IMAGE_BYTES / (1024 * 1024)
        ));
    }
    let mut bytes = Vec::new();
    file.take(MAX_IMAGE_BYTES)
        .read_to_end(&mut bytes)
        .map_err(|error| format!("tool `read`: cannot read `{shown}`: {error}"))?;
    Ok(AgentToolResult::with_content(vec![
        Content::text(format!("Image `{shown}` ({mime}, {} bytes)", bytes.len())),
        Content::image(base64(&bytes), mime),
    ])
    .with_details(json!({"path": shown, "mime_type": mime, "bytes": bytes.len()})))
}

/// The MIME type of an image format the models accept, from the file's first bytes.
fn image_mime(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && head.starts_with(b"RIFF") && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// Standard base64 with padding (RFC 4648).
pub(crate) fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> shift) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_rfc_4648_vectors() {
        let vectors = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, encoded) in vectors {
            assert_eq!(base64(plain.as_bytes()), encoded, "{plain}");
        }
    }
}
