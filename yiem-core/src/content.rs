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
