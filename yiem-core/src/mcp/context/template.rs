//! URI templates of resources, RFC 6570 level 1 (`{name}`) only, matched against the URIs clients read:
//! each parameter takes one or more characters up to the next literal part, never a `/`, percent-decoded.

use std::collections::BTreeMap;

#[derive(Clone, Debug)]
pub(crate) struct UriTemplate {
    text: String,
    parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq)]
enum Part {
    Literal(String),
    Param(String),
}

impl UriTemplate {
    /// Reads `text`, saying what is wrong with it: an unclosed `{`, an empty or repeated parameter, an
    /// operator (`{+x}`, `{?x}`: level 2 and up), two parameters with nothing between them, none at all.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                parts.push(Part::Literal(rest[..open].to_owned()));
            }
            let Some(close) = rest[open..].find('}') else {
                return Err(format!(
                    "the URI template `{text}` has a `{{` without its `}}`"
                ));
            };
            let name = &rest[open + 1..open + close];
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(format!(
                    "the URI template `{text}` has the parameter `{{{name}}}`: write `{{name}}` with \
                     letters, digits and `_` only (operators such as `+`, `?`, `#` are not supported)"
                ));
            }
            if parts
                .iter()
                .any(|part| *part == Part::Param(name.to_owned()))
            {
                return Err(format!(
                    "the URI template `{text}` has the parameter `{name}` twice"
                ));
            }
            if matches!(parts.last(), Some(Part::Param(_))) {
                return Err(format!(
                    "the URI template `{text}` has two parameters with nothing between them, so a URI \
                     cannot say where one ends"
                ));
            }
            parts.push(Part::Param(name.to_owned()));
            rest = &rest[open + close + 1..];
        }
        if rest.contains('}') {
            return Err(format!(
                "the URI template `{text}` has a `}}` without its `{{`"
            ));
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_owned()));
        }
        if !parts.iter().any(|part| matches!(part, Part::Param(_))) {
            return Err(format!(
                "the URI template `{text}` has no `{{parameter}}`: a fixed URI is a resource, not a template"
            ));
        }
        Ok(UriTemplate {
            text: text.to_owned(),
            parts,
        })
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.text
    }

    /// The parameters' values in `uri`, if it matches.
    pub(crate) fn matches(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        let mut values = BTreeMap::new();
        let mut rest = uri;
        let mut parts = self.parts.iter().peekable();
        while let Some(part) = parts.next() {
            match part {
                Part::Literal(literal) => rest = rest.strip_prefix(literal.as_str())?,
                Part::Param(name) => {
                    let end = match parts.peek() {
                        Some(Part::Literal(next)) => rest.find(next.as_str())?,
                        _ => rest.len(),
                    };
                    let raw = &rest[..end];
                    if raw.is_empty() || raw.contains('/') {
                        return None;
                    }
                    let value = percent_encoding::percent_decode_str(raw)
                        .decode_utf8()
                        .ok()?
                        .into_owned();
                    values.insert(name.clone(), value);
                    rest = &rest[end..];
                }
            }
        }
        rest.is_empty().then_some(values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uri_of_the_template_gives_its_parameters() {
        let template = UriTemplate::parse("test://template/{id}/data").unwrap();
        let values = template.matches("test://template/123/data").unwrap();
        assert_eq!(values["id"], "123");
        let two = UriTemplate::parse("db://{table}/{row}").unwrap();
        let values = two.matches("db://users/a%20b").unwrap();
        assert_eq!(
            (values["table"].as_str(), values["row"].as_str()),
            ("users", "a b")
        );
    }

    #[test]
    fn a_uri_that_does_not_fit_the_template_does_not_match() {
        let template = UriTemplate::parse("test://template/{id}/data").unwrap();
        for uri in [
            "test://template//data",
            "test://template/1/2/data",
            "test://template/1/data/more",
            "test://other/1/data",
            "test://template/%FF/data",
        ] {
            assert_eq!(template.matches(uri), None, "{uri}");
        }
    }

    #[test]
    fn a_template_that_cannot_be_matched_is_refused_saying_why() {
        for (text, says) in [
            ("a://{id", "without its `}`"),
            ("a://{}", "`{}`"),
            ("a://{+path}", "operators"),
            ("a://{x}{y}", "nothing between them"),
            ("a://{x}/{x}", "twice"),
            ("a://fixed", "no `{parameter}`"),
            ("a://x}", "without its `{`"),
        ] {
            let error = UriTemplate::parse(text).unwrap_err();
            assert!(error.contains(says), "{text}: {error}");
        }
    }
}
