//! Message content: the blocks a tool result (and later, a message) is made of.

use serde::{Deserialize, Serialize};

/// One block of content in a tool result or message.
///
/// ```
/// use yiem_core::Content;
///
/// let text = Content::text("42 °C");
/// assert_eq!(text.as_text(), Some("42 °C"));
///
/// let image = Content::image("iVBORw0KGgo=", "image/png");
/// assert_eq!(image.as_text(), None);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Content {
    /// Plain text.
    Text {
        /// The text itself.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// The image bytes, base64-encoded.
        data: String,
        /// The MIME type, e.g. `image/png`.
        mime_type: String,
    },
}

impl Content {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text { text: text.into() }
    }

    /// An image block from base64 data and its MIME type.
    pub fn image(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Content::Image {
            data: data.into(),
            mime_type: mime_type.into(),
        }
    }

    /// The text of a text block, `None` for other blocks.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Content::Text { text } => Some(text),
            Content::Image { .. } => None,
        }
    }
}

impl From<String> for Content {
    fn from(text: String) -> Self {
        Content::text(text)
    }
}

impl From<&str> for Content {
    fn from(text: &str) -> Self {
        Content::text(text)
    }
}

/// The text blocks of `blocks` joined with newlines (other blocks are left out).
pub(crate) fn joined_text(blocks: &[Content]) -> String {
    blocks
        .iter()
        .filter_map(Content::as_text)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The content blocks of a tool result: a list of [`Content`] that keeps a single block inline, so the
/// common one-text result needs no allocation of its own. It reads as a slice (`len`, `iter`, indexing)
/// and compares equal to a `Vec<Content>` or an array with the same blocks.
///
/// ```
/// use yiem_core::{Content, Contents};
///
/// let mut blocks = Contents::from(Content::text("first"));
/// assert_eq!(blocks.len(), 1);
/// blocks.push(Content::text("second"));
/// assert_eq!(blocks[1].as_text(), Some("second"));
/// assert_eq!(blocks, vec![Content::text("first"), Content::text("second")]);
/// let back: Vec<Content> = blocks.into_vec();
/// assert_eq!(back.len(), 2);
/// ```
#[derive(Clone, Default)]
pub struct Contents(Repr);

#[derive(Clone)]
enum Repr {
    /// Exactly one block, inline.
    One(Content),
    /// Any other number of blocks (none: an empty `Vec`, which does not allocate).
    Many(Vec<Content>),
}

impl Default for Repr {
    fn default() -> Self {
        Repr::Many(Vec::new())
    }
}

impl Contents {
    /// No blocks.
    pub const fn new() -> Self {
        Contents(Repr::Many(Vec::new()))
    }

    /// Adds a block at the end.
    pub fn push(&mut self, block: Content) {
        match &mut self.0 {
            Repr::Many(blocks) if blocks.is_empty() => self.0 = Repr::One(block),
            _ => self.as_mut_vec().push(block),
        }
    }

    /// Removes every block.
    pub fn clear(&mut self) {
        self.0 = Repr::Many(Vec::new());
    }

    /// The blocks as a `Vec` to change in place (to `retain`, `insert`, `truncate`, ...).
    ///
    /// ```
    /// use yiem_core::{Content, Contents};
    ///
    /// let mut blocks = Contents::from(vec![Content::text("keep"), Content::image("iVBO", "image/png")]);
    /// blocks.as_mut_vec().retain(|block| block.as_text().is_some());
    /// assert_eq!(blocks, [Content::text("keep")]);
    /// ```
    pub fn as_mut_vec(&mut self) -> &mut Vec<Content> {
        if let Repr::One(_) = self.0 {
            self.0 = Repr::Many(std::mem::take(self).into_vec());
        }
        let Repr::Many(blocks) = &mut self.0 else {
            unreachable!("made a list above")
        };
        blocks
    }

    /// The blocks as a `Vec`.
    pub fn into_vec(self) -> Vec<Content> {
        match self.0 {
            Repr::One(block) => vec![block],
            Repr::Many(blocks) => blocks,
        }
    }
}

impl std::ops::Deref for Contents {
    type Target = [Content];

    fn deref(&self) -> &[Content] {
        match &self.0 {
            Repr::One(block) => std::slice::from_ref(block),
            Repr::Many(blocks) => blocks,
        }
    }
}

impl std::ops::DerefMut for Contents {
    fn deref_mut(&mut self) -> &mut [Content] {
        match &mut self.0 {
            Repr::One(block) => std::slice::from_mut(block),
            Repr::Many(blocks) => blocks,
        }
    }
}

impl std::fmt::Debug for Contents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl PartialEq for Contents {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for Contents {}

impl PartialEq<Vec<Content>> for Contents {
    fn eq(&self, other: &Vec<Content>) -> bool {
        **self == **other
    }
}

impl PartialEq<[Content]> for Contents {
    fn eq(&self, other: &[Content]) -> bool {
        **self == *other
    }
}

impl<const N: usize> PartialEq<[Content; N]> for Contents {
    fn eq(&self, other: &[Content; N]) -> bool {
        **self == other[..]
    }
}

impl PartialEq<Contents> for Vec<Content> {
    fn eq(&self, other: &Contents) -> bool {
        **self == **other
    }
}

impl From<Content> for Contents {
    fn from(block: Content) -> Self {
        Contents(Repr::One(block))
    }
}

impl From<Vec<Content>> for Contents {
    fn from(blocks: Vec<Content>) -> Self {
        match <[Content; 1]>::try_from(blocks) {
            Ok([block]) => Contents(Repr::One(block)),
            Err(blocks) => Contents(Repr::Many(blocks)),
        }
    }
}

impl<const N: usize> From<[Content; N]> for Contents {
    fn from(blocks: [Content; N]) -> Self {
        blocks.into_iter().collect()
    }
}

impl From<Contents> for Vec<Content> {
    fn from(blocks: Contents) -> Self {
        blocks.into_vec()
    }
}

impl FromIterator<Content> for Contents {
    fn from_iter<I: IntoIterator<Item = Content>>(iter: I) -> Self {
        let mut blocks = Contents::new();
        blocks.extend(iter);
        blocks
    }
}

impl Extend<Content> for Contents {
    fn extend<I: IntoIterator<Item = Content>>(&mut self, iter: I) {
        for block in iter {
            self.push(block);
        }
    }
}

impl IntoIterator for Contents {
    type Item = Content;
    type IntoIter = ContentsIntoIter;

    fn into_iter(self) -> ContentsIntoIter {
        ContentsIntoIter(match self.0 {
            Repr::One(block) => IterRepr::One(Some(block).into_iter()),
            Repr::Many(blocks) => IterRepr::Many(blocks.into_iter()),
        })
    }
}

/// The blocks of a [`Contents`], by value (a single block is handed out without making a list).
#[derive(Debug)]
pub struct ContentsIntoIter(IterRepr);

#[derive(Debug)]
enum IterRepr {
    One(std::option::IntoIter<Content>),
    Many(std::vec::IntoIter<Content>),
}

impl Iterator for ContentsIntoIter {
    type Item = Content;

    fn next(&mut self) -> Option<Content> {
        match &mut self.0 {
            IterRepr::One(block) => block.next(),
            IterRepr::Many(blocks) => blocks.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            IterRepr::One(block) => block.size_hint(),
            IterRepr::Many(blocks) => blocks.size_hint(),
        }
    }
}

impl DoubleEndedIterator for ContentsIntoIter {
    fn next_back(&mut self) -> Option<Content> {
        match &mut self.0 {
            IterRepr::One(block) => block.next_back(),
            IterRepr::Many(blocks) => blocks.next_back(),
        }
    }
}

impl ExactSizeIterator for ContentsIntoIter {}

impl<'a> IntoIterator for &'a Contents {
    type Item = &'a Content;
    type IntoIter = std::slice::Iter<'a, Content>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<'a> IntoIterator for &'a mut Contents {
    type Item = &'a mut Content;
    type IntoIter = std::slice::IterMut<'a, Content>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter_mut()
    }
}

impl Serialize for Contents {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Contents {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<Content>::deserialize(deserializer).map(Contents::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_block_or_many_read_and_compare_the_same() {
        let mut blocks = Contents::new();
        assert!(blocks.is_empty());
        blocks.push(Content::text("a"));
        assert_eq!(blocks, [Content::text("a")]);
        assert_eq!(blocks, Contents::from(vec![Content::text("a")]));
        blocks.push(Content::image("iVBO", "image/png"));
        blocks.push(Content::text("c"));
        assert_eq!(blocks.len(), 3);
        assert_eq!(blocks[2].as_text(), Some("c"));
        blocks[0] = Content::text("z");
        assert_eq!(blocks.first().and_then(Content::as_text), Some("z"));
        let texts: Vec<_> = (&blocks).into_iter().filter_map(Content::as_text).collect();
        assert_eq!(texts, ["z", "c"]);
        assert_eq!(blocks.clone().into_iter().count(), 3);
        blocks.clear();
        assert_eq!(blocks, Vec::<Content>::new());
        let collected: Contents = [Content::text("x"), Content::text("y")].into();
        assert_eq!(
            collected.into_vec(),
            vec![Content::text("x"), Content::text("y")]
        );
    }

    #[test]
    fn blocks_are_written_and_read_as_a_json_array() {
        for blocks in [
            Contents::new(),
            Contents::from(Content::text("one")),
            Contents::from(vec![Content::text("one"), Content::text("two")]),
        ] {
            let json = serde_json::to_value(&blocks).unwrap();
            assert_eq!(json, serde_json::to_value(blocks.to_vec()).unwrap());
            assert_eq!(serde_json::from_value::<Contents>(json).unwrap(), blocks);
        }
        assert!(serde_json::from_str::<Contents>(r#"{"type": "text"}"#).is_err());
    }
}
