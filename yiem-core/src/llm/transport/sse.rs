//! Server-sent events read from a body's bytes in time linear in what arrives, with a bound on one
//! event. Each byte is searched for a line end once (a chunk that ends mid-line leaves its bytes for the
//! next, and the search resumes where it stopped), and each line is decoded once; `eventsource-stream`
//! parsed the whole pending line again on every chunk, so a 4 MB event in 16 KB chunks cost 20 s.
//! Follows the WHATWG event-stream grammar: lines end in CRLF, LF or CR; `:` starts a comment; `event`
//! and `data` are read (`data` lines joined with `\n`), `id` and `retry` ignored; an event whose data
//! is empty is not dispatched, nor an incomplete one at the end of the body.
//!
//! A long line is not copied: when a `data:` line of at least [`MOVE_LINE_BYTES`] fills the pending
//! buffer (what follows it is no longer than it), the buffer itself becomes the event's data and only
//! the rest is copied to a new one. A 32 MB delta is then one buffer from the socket to the delta's
//! `String` ([`EventData::json`] decodes it there), where it was four (each of 32 MB or more a fresh
//! `mmap` whose pages fault in as it is written).

use std::collections::VecDeque;

use super::EventData;

/// A `data:` line at least this long that fills the pending buffer moves into its event (see the
/// module's docs); a shorter one is copied, so small events do not each carry a buffer of a chunk.
const MOVE_LINE_BYTES: usize = 64 << 10;

/// One event: its `event:` name (empty when absent) and its data.
#[derive(Debug)]
pub(crate) struct SseEvent {
    pub event: String,
    /// The data lines joined, from byte `start` on (a moved line keeps its `data: ` before it).
    data: String,
    start: usize,
}

impl SseEvent {
    /// The event's name, and its data without surrounding whitespace.
    pub(crate) fn into_parts(self) -> (String, EventData) {
        (self.event, EventData::trimmed(self.data, self.start))
    }

    /// The event's data.
    #[cfg(test)]
    fn data(&self) -> &str {
        &self.data[self.start..]
    }
}

/// Why the bytes are not a readable event stream.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum SseError {
    /// One event (its lines, comments included) grew past this many bytes.
    TooLarge(usize),
    /// A line is not UTF-8.
    NotUtf8,
}

/// The reader's state between chunks.
#[derive(Debug)]
pub(crate) struct SseReader {
    /// Bytes not yet consumed: the start of the next line.
    pending: Vec<u8>,
    /// How much of `pending` was already searched for a line end.
    searched: usize,
    /// The last line ended in CR, so an LF that starts the next chunk belongs to it.
    after_cr: bool,
    /// The byte-order mark may still come (nothing was read yet).
    at_start: bool,
    fields: Fields,
    /// Bytes of the current event's lines so far.
    event_bytes: usize,
    max_event_bytes: usize,
}

/// The fields of the event being read.
#[derive(Debug, Default)]
struct Fields {
    event: String,
    /// The data lines so far, each followed by `\n`, from byte `data_start` on.
    data: String,
    data_start: usize,
}

impl SseReader {
    /// A reader that refuses an event of more than `max_event_bytes`.
    pub(crate) fn new(max_event_bytes: usize) -> Self {
        SseReader {
            pending: Vec::new(),
            searched: 0,
            after_cr: false,
            at_start: true,
            fields: Fields::default(),
            event_bytes: 0,
            max_event_bytes,
        }
    }

    /// Reads `bytes`, appending every event they complete to `out`.
    pub(crate) fn feed(
        &mut self,
        mut bytes: &[u8],
        out: &mut VecDeque<SseEvent>,
    ) -> Result<(), SseError> {
        if self.after_cr && !bytes.is_empty() {
            self.after_cr = false;
            if bytes[0] == b'\n' {
                bytes = &bytes[1..];
            }
        }
        self.pending.extend_from_slice(bytes);
        if self.at_start {
            if self.pending.len() < 3 && b"\xEF\xBB\xBF".starts_with(&self.pending) {
                return Ok(());
            }
            self.at_start = false;
            if self.pending.starts_with(b"\xEF\xBB\xBF") {
                self.pending.drain(..3);
            }
        }
        let mut start = 0;
        while let Some(offset) = memchr::memchr2(b'\n', b'\r', &self.pending[self.searched..]) {
            let end = self.searched + offset;
            let mut next = end + 1;
            if self.pending[end] == b'\r' {
                match self.pending.get(next) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            self.event_bytes += next - start;
            if self.event_bytes > self.max_event_bytes {
                return Err(SseError::TooLarge(self.max_event_bytes));
            }
            if start == 0
                && end >= MOVE_LINE_BYTES
                && self.pending.len() - next <= end
                && self.fields.data.is_empty()
                && self.pending.starts_with(b"data")
            {
                // The buffer is mostly this line: it becomes the event's data, the rest moves out.
                let rest = self.pending[next..].to_vec();
                let mut line = std::mem::replace(&mut self.pending, rest);
                line.truncate(end);
                let line = String::from_utf8(line).map_err(|_| SseError::NotUtf8)?;
                if let Some(event) = self.fields.owned_line(line) {
                    out.push_back(event);
                }
                self.searched = 0;
                continue;
            }
            let line =
                std::str::from_utf8(&self.pending[start..end]).map_err(|_| SseError::NotUtf8)?;
            if line.is_empty() {
                self.event_bytes = 0;
            }
            if let Some(event) = self.fields.line(line) {
                out.push_back(event);
            }
            start = next;
            self.searched = next;
        }
        if start > 0 {
            self.pending.drain(..start);
        }
        self.searched = self.pending.len();
        if self.event_bytes + self.pending.len() > self.max_event_bytes {
            return Err(SseError::TooLarge(self.max_event_bytes));
        }
        Ok(())
    }
}

impl Fields {
    /// Takes one line; a blank one ends the event.
    fn line(&mut self, line: &str) -> Option<SseEvent> {
        if line.is_empty() {
            let event = std::mem::take(&mut self.event);
            let mut data = std::mem::take(&mut self.data);
            let start = std::mem::take(&mut self.data_start);
            if data.is_empty() {
                return None;
            }
            data.pop();
            return Some(SseEvent { event, data, start });
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = field_and_value(line);
        match field {
            "event" => value.clone_into(&mut self.event),
            "data" => {
                if self.data_start > 0 {
                    // A second line after a moved one: the data is copied out to be joined.
                    self.data.drain(..self.data_start);
                    self.data_start = 0;
                }
                self.data.push_str(value);
                self.data.push('\n');
            }
            _ => {}
        }
        None
    }

    /// Takes a whole line moved out of the reader's buffer: a `data` line is kept where it is, its
    /// field name skipped, when it is the event's first (else it is read as any other line).
    fn owned_line(&mut self, mut line: String) -> Option<SseEvent> {
        let (field, value) = field_and_value(&line);
        if field != "data" || !self.data.is_empty() {
            return self.line(&line);
        }
        self.data_start = line.len() - value.len();
        line.push('\n');
        self.data = line;
        None
    }
}

/// A non-empty, non-comment line's field name and value (one space after the colon dropped).
fn field_and_value(line: &str) -> (&str, &str) {
    match line.split_once(':') {
        Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
        None => (line, ""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(chunks: &[&[u8]], max: usize) -> Result<Vec<(String, String)>, SseError> {
        let mut reader = SseReader::new(max);
        let mut out = VecDeque::new();
        for chunk in chunks {
            reader.feed(chunk, &mut out)?;
        }
        Ok(out
            .into_iter()
            .map(|event| (event.event.clone(), event.data().to_owned()))
            .collect())
    }

    fn event(event: &str, data: &str) -> (String, String) {
        (event.into(), data.into())
    }

    #[test]
    fn events_are_read_across_any_cut_and_line_ending() {
        let text = b"\xEF\xBB\xBF: ping\r\nevent: a\r\ndata: 1\r\ndata:2\r\n\r\ndata: x\rid: 7\r\rdata: y\n\n";
        let expected = vec![event("a", "1\n2"), event("", "x"), event("", "y")];
        for cut in 0..text.len() {
            for second in cut..text.len() {
                let got = read(&[&text[..cut], &text[cut..second], &text[second..]], 1024).unwrap();
                assert_eq!(got, expected, "cut at {cut} and {second}");
            }
        }
    }

    #[test]
    fn an_event_past_the_bound_is_refused_even_before_its_line_ends() {
        let too_large = Err(SseError::TooLarge(20));
        assert_eq!(
            read(&[b"data: 0123456789\n\n"], 20),
            Ok(vec![event("", "0123456789")])
        );
        assert_eq!(read(&[b"data: 0123456789", b"0123456789"], 20), too_large);
        assert_eq!(read(&[b"data: 01234\n", b"data: 56789\n\n"], 20), too_large);
        // Comments count too: a stream of them cannot grow one event without bound.
        assert_eq!(read(&[&b": keep-alive\n"[..]; 4], 20), too_large);
        assert_eq!(read(&[b"data: \xFF\n\n"], 20), Err(SseError::NotUtf8));
    }

    #[test]
    fn a_long_line_moved_into_its_event_reads_as_a_copied_one() {
        let long = "x".repeat(MOVE_LINE_BYTES + 10);
        let cases: Vec<(String, Vec<(String, String)>)> = vec![
            (format!("data: {long}\n\n"), vec![event("", &long)]),
            (format!("data:{long}\r\n\r\n"), vec![event("", &long)]),
            (
                format!("data: {long}\ndata: 2\n\n"),
                vec![event("", &format!("{long}\n2"))],
            ),
            (
                format!("data: 1\ndata: {long}\n\n"),
                vec![event("", &format!("1\n{long}"))],
            ),
            (
                format!("event: big\ndata: {long}\r\rdata: y\n\n"),
                vec![event("big", &long), event("", "y")],
            ),
            (
                format!("dataX: {long}\n\ndata: z\n\n"),
                vec![event("", "z")],
            ),
            (format!("data{long}\n\n"), vec![]),
        ];
        for (text, expected) in cases {
            let bytes = text.as_bytes();
            let line_end = bytes.iter().rposition(|&b| b == b'x').unwrap() + 1;
            // Whole; cut inside the line, at its end and after its line end; in 4 KiB pieces.
            let mut splits: Vec<Vec<&[u8]>> = vec![vec![bytes]];
            for cut in [100, line_end - 1, line_end, line_end + 1] {
                splits.push(vec![&bytes[..cut], &bytes[cut..]]);
            }
            splits.push(bytes.chunks(4096).collect());
            for chunks in splits {
                let got = read(&chunks, 1 << 20).unwrap();
                assert_eq!(
                    got,
                    expected,
                    "{} pieces of {:?}…",
                    chunks.len(),
                    &text[..12]
                );
            }
        }
    }
}
