//! Message content: the blocks a tool result (and later, a message) is made of.

use serde::{Deserialize, Serialize};

/// One block of content in a tool result or message: text, an image, audio, a resource embedded (its
/// text or its bytes) or a link to one — the blocks MCP defines. Binary data is base64-encoded.
///
/// Each provider gets what it accepts: an image as an image block where the API takes one, a PDF as a
/// document where Anthropic takes it, an embedded text resource as its text; what a provider cannot take
/// becomes a one-line note saying what was left out, so the model knows something was there.
///
/// ```
/// use yiem_core::tool::Content;
///
/// let text = Content::text("42 °C");
/// assert_eq!(text.as_text(), Some("42 °C"));
///
/// let image = Content::image("iVBORw0KGgo=", "image/png");
/// assert_eq!(image.as_text(), None);
///
/// // A `#[tool]` may return `Vec<Content>`:
/// let blocks = vec![
///     Content::text("the recording and its transcript"),
///     Content::audio("UklGRg==", "audio/wav"),
///     Content::resource_text("file:///notes/today.md", "# Today"),
///     Content::resource_link("file:///notes/yesterday.md", "yesterday.md"),
/// ];
/// assert_eq!(blocks[2].as_text(), None);
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
    /// Audio, base64-encoded.
    Audio {
        /// The audio bytes, base64-encoded.
        data: String,
        /// The MIME type, e.g. `audio/wav` (a `Box<str>`, so that a content block stays as small as an
        /// image block: results move through every call's futures).
        mime_type: Box<str>,
    },
    /// A text resource embedded in the result (a file's text, a document).
    ResourceText {
        /// Which resource it is.
        resource: Box<ResourceInfo>,
        /// Its text.
        text: String,
    },
    /// A binary resource embedded in the result, base64-encoded.
    ResourceBlob {
        /// Which resource it is (a PDF has `mime_type` `application/pdf`).
        resource: Box<ResourceInfo>,
        /// Its bytes, base64-encoded.
        blob: String,
    },
    /// A link to a resource the client can read, not its contents.
    ResourceLink {
        /// Which resource it is.
        resource: Box<ResourceInfo>,
    },
}

/// What is known of a resource a result embeds or links to (boxed in [`Content`], so that the common
/// blocks stay small).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ResourceInfo {
    /// Where the resource lives, e.g. `file:///notes/today.md`.
    pub uri: String,
    /// Its name (a file name, say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its MIME type, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

impl ResourceInfo {
    /// The resource at `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        ResourceInfo {
            uri: uri.into(),
            ..ResourceInfo::default()
        }
    }

    /// With a name.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// With a description.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// With a MIME type.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }
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

    /// An audio block from base64 data and its MIME type.
    pub fn audio(data: impl Into<String>, mime_type: impl Into<Box<str>>) -> Self {
        Content::Audio {
            data: data.into(),
            mime_type: mime_type.into(),
        }
    }

    /// An embedded text resource: its URI and its text (build the variant with a [`ResourceInfo`] to give
    /// more).
    pub fn resource_text(uri: impl Into<String>, text: impl Into<String>) -> Self {
        Content::ResourceText {
            resource: Box::new(ResourceInfo::new(uri)),
            text: text.into(),
        }
    }

    /// An embedded binary resource: its URI, its bytes base64-encoded, and its MIME type.
    pub fn resource_blob(
        uri: impl Into<String>,
        blob: impl Into<String>,
        mime_type: impl Into<String>,
    ) -> Self {
        Content::ResourceBlob {
            resource: Box::new(ResourceInfo::new(uri).mime_type(mime_type)),
            blob: blob.into(),
        }
    }

    /// A link to a resource: its URI and name.
    pub fn resource_link(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Content::ResourceLink {
            resource: Box::new(ResourceInfo::new(uri).name(name)),
        }
    }

    /// The text of a text block, `None` for other blocks.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Content::Text { text } => Some(text),
            _ => None,
        }
    }

    /// The block as text for a model whose API cannot carry it as it is (`carrier`: "tool messages",
    /// say): a text resource's text under its URI, a note for the rest. `None` for a text block.
    ///
    /// ```
    /// use yiem_core::tool::Content;
    ///
    /// let note = Content::audio("UklGRg==", "audio/wav").described_for("tool messages");
    /// assert_eq!(note.as_deref(), Some("[audio/wav audio (4 bytes) left out: tool messages cannot carry audio]"));
    /// let file = Content::resource_text("file:///a.md", "# A").described_for("tool messages");
    /// assert_eq!(file.as_deref(), Some("[resource file:///a.md]\n# A"));
    /// ```
    pub fn described_for(&self, carrier: &str) -> Option<String> {
        let bytes = |base64: &str| base64.trim_end_matches('=').len() * 3 / 4;
        Some(match self {
            Content::Text { .. } => return None,
            Content::Image { data, mime_type } => format!(
                "[{mime_type} image ({} bytes) left out: {carrier} cannot carry images]",
                bytes(data)
            ),
            Content::Audio { data, mime_type } => format!(
                "[{mime_type} audio ({} bytes) left out: {carrier} cannot carry audio]",
                bytes(data)
            ),
            Content::ResourceText { resource, text } => {
                format!("[resource {}]\n{text}", resource.uri)
            }
            Content::ResourceBlob { resource, blob } => format!(
                "[resource {} ({}, {} bytes) left out: {carrier} cannot carry files]",
                resource.uri,
                resource.mime_type.as_deref().unwrap_or("binary"),
                bytes(blob)
            ),
            Content::ResourceLink { resource } => {
                let mut text = format!("[resource link {}", resource.uri);
                if let Some(name) = &resource.name {
                    text.push_str(&format!(": {name}"));
                }
                if let Some(description) = &resource.description {
                    text.push_str(&format!(" — {description}"));
                }
                text.push(']');
                text
            }
        })
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
/// use yiem_core::tool::{Content, Contents};
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
    /// use yiem_core::tool::{Content, Contents};
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
