//! Output limits: what the tools do when a file or a command produces more than a model should read.
//!
//! - `read` shows at most [`READ_MAX_LINES`] lines and [`READ_MAX_BYTES`] bytes per call, and says which
//!   offset continues; a line longer than [`MAX_LINE_CHARS`] is cut.
//! - `bash` keeps the first [`BASH_HEAD_BYTES`] and the last [`BASH_TAIL_BYTES`] bytes of its output and
//!   says how much was left out between them; memory stays bounded however much a command prints.
//! - `grep` stops after its match limit and cuts each matching line at [`GREP_MAX_LINE_CHARS`].

use std::collections::VecDeque;

/// Lines `read` returns when no `limit` is given (and at most).
pub const READ_MAX_LINES: usize = 2000;
/// Bytes of text `read` returns per call.
pub const READ_MAX_BYTES: usize = 50 * 1024;
/// Characters kept of one line in `read`'s output.
pub const MAX_LINE_CHARS: usize = 2000;
/// Characters kept of one matching line in `grep`'s output.
pub const GREP_MAX_LINE_CHARS: usize = 500;
/// Bytes kept from the start of a command's output.
pub const BASH_HEAD_BYTES: usize = 10 * 1024;
/// Bytes kept from the end of a command's output.
pub const BASH_TAIL_BYTES: usize = 20 * 1024;

/// `line` cut to `max` characters, with a marker when something was cut.
pub(crate) fn shorten_line(line: &str, max: usize) -> String {
    match line.char_indices().nth(max) {
        None => line.to_owned(),
        Some((cut, _)) => format!(
            "{}… [line cut: {} more characters]",
            &line[..cut],
            line[cut..].chars().count()
        ),
    }
}

/// A command's output with bounded memory: the head is kept as it arrives, then a rolling tail.
#[derive(Debug)]
pub(crate) struct HeadTail {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_limit: usize,
    tail_limit: usize,
    total: u64,
    omitted_bytes: u64,
    omitted_lines: u64,
}

impl HeadTail {
    pub(crate) fn new(head_limit: usize, tail_limit: usize) -> Self {
        HeadTail {
            head: Vec::new(),
            tail: VecDeque::new(),
            head_limit,
            tail_limit,
            total: 0,
            omitted_bytes: 0,
            omitted_lines: 0,
        }
    }

    pub(crate) fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room = self.head_limit - self.head.len();
        if room > 0 {
            let taken = room.min(bytes.len());
            self.head.extend_from_slice(&bytes[..taken]);
            bytes = &bytes[taken..];
        }
        self.tail.extend(bytes);
        while self.tail.len() > self.tail_limit {
            let excess = self.tail.len() - self.tail_limit;
            for byte in self.tail.drain(..excess) {
                self.omitted_bytes += 1;
                if byte == b'\n' {
                    self.omitted_lines += 1;
                }
            }
        }
    }

    /// Bytes received so far.
    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// Whether anything was left out.
    pub(crate) fn truncated(&self) -> bool {
        self.omitted_bytes > 0
    }

    /// The output as text: head, a note on what was left out, tail. Cuts fall on line ends when one is
    /// near, so no line is shown half.
    pub(crate) fn render(&self) -> String {
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        if !self.truncated() {
            let mut all = self.head.clone();
            all.extend_from_slice(&tail);
            return String::from_utf8_lossy(&all).into_owned();
        }
        // Move a partial last line of the head, and a partial first line of the tail, into the gap.
        let head_end = match self.head.iter().rposition(|&b| b == b'\n') {
            Some(newline) if newline + 1 >= self.head.len() / 2 => newline + 1,
            _ => self.head.len(),
        };
        let tail_start = match tail.iter().position(|&b| b == b'\n') {
            Some(newline) if newline < tail.len() / 2 => newline + 1,
            _ => 0,
        };
        let gap_bytes = self.omitted_bytes + (self.head.len() - head_end + tail_start) as u64;
        let gap_lines = self.omitted_lines
            + count_newlines(&self.head[head_end..])
            + count_newlines(&tail[..tail_start]);
        let mut text = String::from_utf8_lossy(&self.head[..head_end]).into_owned();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!(
            "[… {gap_bytes} bytes ({gap_lines} lines) of output left out; {} bytes in all, showing the first and last parts. Narrow the command (e.g. pipe through grep, head or tail) to see the rest …]\n",
            self.total
        ));
        text.push_str(&String::from_utf8_lossy(&tail[tail_start..]));
        text
    }
}

fn count_newlines(bytes: &[u8]) -> u64 {
    bytes.iter().filter(|&&b| b == b'\n').count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_output_is_kept_whole() {
        let mut out = HeadTail::new(8, 8);
        out.push(b"abc\n");
        out.push(b"def\n");
        assert_eq!(out.render(), "abc\ndef\n");
        assert!(!out.truncated());
    }

    #[test]
    fn long_output_keeps_whole_lines_of_head_and_tail() {
        let mut out = HeadTail::new(10, 10);
        for i in 0..10 {
            out.push(format!("line{i}\n").as_bytes());
        }
        assert_eq!(out.total(), 60);
        assert_eq!(
            out.render(),
            "line0\n[… 48 bytes (8 lines) of output left out; 60 bytes in all, showing the first and last parts. Narrow the command (e.g. pipe through grep, head or tail) to see the rest …]\nline9\n"
        );
    }

    #[test]
    fn shorten_line_counts_what_was_cut() {
        assert_eq!(shorten_line("héllo", 10), "héllo");
        assert_eq!(
            shorten_line("héllo", 2),
            "hé… [line cut: 3 more characters]"
        );
    }
}
