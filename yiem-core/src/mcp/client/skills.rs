//! A server's Agent Skills (SEP-2640) read by the client: listing them ([`McpClient::skills`]), loading
//! one's instructions ([`McpClient::load_skill`]) and reading its files ([`McpClient::read_skill_file`]),
//! each read verified against the listing, and offering them to a model as tools
//! ([`McpClient::register_skills`]).
//!
//! Nothing is read ahead of need: listing reads no file, loading reads only `SKILL.md`, and a file is
//! read when it is asked for. Every read is checked before anything uses it, in this order: the URI is
//! one the skill's listing names (so no path leaves the skill), the bytes have the listed size, then the
//! listed SHA-256 digest; a `SKILL.md` also must begin with YAML frontmatter equal, field by field, to
//! the listing's. A failed check is an [`McpClientError::Skill`] naming the file and what differs, and
//! the content is dropped.

use base64::Engine as _;
use rmcp::model::{
    GetSkillRequestParams, PaginatedRequestParams, ReadResourceRequestParams, ResourceContents,
    SKILL_MD, Skill, SkillResource, SkillResources,
};
use serde_json::{Map, json};

use crate::tool::ToolAnnotations;

use super::*;

/// The most bytes of a skill a client reads, summed over its files: 16 MiB, the size past which
/// SEP-2640 says a server should not serve a skill.
pub const MAX_SKILL_BYTES: u64 = 16 * 1024 * 1024;

/// A skill whose `SKILL.md` was read and verified: its frontmatter, its instructions (the text after
/// the frontmatter) and the files it lists.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct LoadedSkill {
    /// The skill's entry, as the server listed it.
    pub skill: Skill,
    /// The instructions: `SKILL.md` after its frontmatter.
    pub instructions: String,
}

impl LoadedSkill {
    /// The skill's name (its frontmatter's `name`).
    pub fn name(&self) -> &str {
        &self.skill.frontmatter.name
    }

    /// What the skill is for (its frontmatter's `description`).
    pub fn description(&self) -> &str {
        &self.skill.frontmatter.description
    }

    /// The skill's other files, as paths relative to its folder (`references/FORMS.md`), in the
    /// listing's order; empty for a skill whose files are `dynamic`.
    pub fn files(&self) -> Vec<&str> {
        skill_files(&self.skill)
    }

    /// The skill as text for a model: its name, description and instructions, and the files it can
    /// read on demand. What a [`register_skills`](McpClient::register_skills) tool answers; an
    /// application that puts skills in the system prompt instead can use it there.
    pub fn to_prompt(&self) -> String {
        let mut text = format!(
            "# Skill `{}`\n\n{}\n\n{}",
            self.name(),
            self.description(),
            self.instructions.trim()
        );
        let files = self.files();
        if !files.is_empty() {
            text.push_str("\n\nFiles of this skill, read on demand by path: ");
            text.push_str(&files.join(", "));
        }
        text
    }
}

/// The paths, relative to the skill's folder, of the files a skill lists besides its `SKILL.md`.
fn skill_files(skill: &Skill) -> Vec<&str> {
    let root = skill_root(&skill.uri);
    match &skill.resources {
        SkillResources::Files(files) => files
            .iter()
            .filter(|file| file.uri != skill.uri)
            .filter_map(|file| file.uri.strip_prefix(root))
            .collect(),
        _ => Vec::new(),
    }
}

/// The URI of a skill's folder, with its trailing `/` (`skill://pdf/` of `skill://pdf/SKILL.md`).
fn skill_root(uri: &str) -> &str {
    uri.strip_suffix(SKILL_MD).unwrap_or(uri)
}

/// The YAML frontmatter of a `SKILL.md` as a JSON object, and the text after it; what is wrong if it
/// has none, it is not YAML, or it lacks a `name` or `description`.
fn split_frontmatter(text: &str) -> Result<(Map<String, Value>, &str), String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or("it does not begin with a `---` line opening YAML frontmatter")?;
    let mut offset = 0;
    let (yaml, body) = loop {
        let line_end = rest[offset..].find('\n').map(|at| offset + at + 1);
        let line = &rest[offset..line_end.unwrap_or(rest.len())];
        if line.trim_end() == "---" {
            break (&rest[..offset], &rest[line_end.unwrap_or(rest.len())..]);
        }
        offset = line_end.ok_or("its frontmatter has no closing `---` line")?;
    };
    let parsed: Value = yaml_serde::from_str(yaml)
        .map_err(|error| format!("its frontmatter is not valid YAML: {error}"))?;
    let Value::Object(frontmatter) = parsed else {
        return Err("its frontmatter is not a mapping of fields".to_owned());
    };
    for field in ["name", "description"] {
        match frontmatter.get(field) {
            Some(Value::String(text)) if !text.is_empty() => {}
            _ => return Err(format!("its frontmatter has no `{field}`")),
        }
    }
    Ok((frontmatter, body))
}

impl McpClient {
    /// A skill-verification error: `uri` of this server failed `detail`.
    fn skill_error(&self, uri: &str, detail: impl Into<String>) -> McpClientError {
        McpClientError::Skill {
            server: self.inner.name.clone(),
            uri: uri.to_owned(),
            detail: detail.into(),
        }
    }

    /// The skills the server offers (`skills/list`, every page, at most `max_pages`); none when the
    /// server does not declare the skills extension. Reads no skill file. An entry that breaks the
    /// extension's rules (a URI not ending in `/SKILL.md`, a name that is not its folder's, a file
    /// outside its folder, a malformed digest) is an error naming it.
    pub async fn skills(&self) -> Result<Vec<Skill>, McpClientError> {
        let peer = self.inner.peer().await?;
        if !peer
            .peer_info()
            .is_some_and(|server| server.capabilities.supports_skills())
        {
            return Ok(Vec::new());
        }
        let mut skills = Vec::new();
        let mut cursor = None;
        for _ in 0..self.inner.limits.max_pages {
            let params = PaginatedRequestParams::default().with_cursor(cursor.take());
            let page = self
                .context_request("skills/list", |peer| async move {
                    peer.list_skills(Some(params)).await
                })
                .await?;
            skills.extend(page.skills);
            match page.next_cursor {
                Some(next) if !next.is_empty() => cursor = Some(next),
                _ => {
                    for skill in &skills {
                        skill
                            .validate()
                            .map_err(|error| self.skill_error(&skill.uri, error.to_string()))?;
                    }
                    return Ok(skills);
                }
            }
        }
        Err(McpClientError::Limit {
            server: self.inner.name.clone(),
            limit: "max_pages",
            detail: format!(
                "its `skills/list` still had a `nextCursor` after {} pages",
                self.inner.limits.max_pages
            ),
        })
    }

    /// The entry of the skill whose `SKILL.md` is at `uri` (`skills/get`), checked as
    /// [`skills`](Self::skills) checks each.
    pub async fn skill(&self, uri: &str) -> Result<Skill, McpClientError> {
        let params = GetSkillRequestParams::new(uri);
        let got = self
            .context_request(
                "skills/get",
                |peer| async move { peer.get_skill(params).await },
            )
            .await?;
        if got.skill.uri != uri {
            return Err(self.skill_error(
                uri,
                format!("the server answered with the skill at `{}`", got.skill.uri),
            ));
        }
        got.skill
            .validate()
            .map_err(|error| self.skill_error(uri, error.to_string()))?;
        Ok(got.skill)
    }

    /// Reads the skill's `SKILL.md`, verified (size, digest, and frontmatter equal to the entry's), and
    /// returns its instructions. Reads no other file.
    pub async fn load_skill(&self, skill: &Skill) -> Result<LoadedSkill, McpClientError> {
        skill
            .validate()
            .map_err(|error| self.skill_error(&skill.uri, error.to_string()))?;
        let bytes = self.read_skill_file(skill, &skill.uri).await?;
        let text = String::from_utf8(bytes)
            .map_err(|_| self.skill_error(&skill.uri, "it is not UTF-8 text"))?;
        let (frontmatter, body) =
            split_frontmatter(&text).map_err(|detail| self.skill_error(&skill.uri, detail))?;
        let listed = match serde_json::to_value(&skill.frontmatter) {
            Ok(Value::Object(listed)) => listed,
            _ => Map::new(),
        };
        let mut fields: Vec<&String> = frontmatter.keys().chain(listed.keys()).collect();
        fields.sort();
        fields.dedup();
        if let Some(field) = fields
            .into_iter()
            .find(|field| frontmatter.get(*field) != listed.get(*field))
        {
            return Err(self.skill_error(
                &skill.uri,
                format!(
                    "its frontmatter's `{field}` is {} but the listing says {}; the skill is not loaded",
                    frontmatter.get(field).unwrap_or(&Value::Null),
                    listed.get(field).unwrap_or(&Value::Null)
                ),
            ));
        }
        Ok(LoadedSkill {
            skill: skill.clone(),
            instructions: body.to_owned(),
        })
    }

    /// The bytes of the skill's file at `uri` (its `SKILL.md`, or one of the files it lists), read
    /// with `resources/read` and verified against the listing: a URI the listing does not name, bytes
    /// of another size or another digest, or a skill over [`MAX_SKILL_BYTES`] are errors naming the
    /// file, and nothing of it is returned. A skill whose files are `dynamic` has no digests; its files
    /// are read if they are inside its folder.
    pub async fn read_skill_file(
        &self,
        skill: &Skill,
        uri: &str,
    ) -> Result<Vec<u8>, McpClientError> {
        let listed = match &skill.resources {
            SkillResources::Files(files) => {
                let total: u64 = files.iter().map(|file| file.size).sum();
                if total > MAX_SKILL_BYTES {
                    return Err(self.skill_error(
                        &skill.uri,
                        format!(
                            "the skill lists {total} bytes of files, over the {MAX_SKILL_BYTES} \
                             bytes a client reads of one skill"
                        ),
                    ));
                }
                let file = files.iter().find(|file| file.uri == uri).ok_or_else(|| {
                    self.skill_error(
                        uri,
                        format!("it is not a file the skill `{}` lists", skill.uri),
                    )
                })?;
                Some(file.clone())
            }
            _ => {
                let relative = uri.strip_prefix(skill_root(&skill.uri)).unwrap_or("");
                if relative.is_empty()
                    || relative.split('/').any(|part| part == ".." || part == ".")
                {
                    return Err(self.skill_error(
                        uri,
                        format!("it is not inside the folder of the skill `{}`", skill.uri),
                    ));
                }
                None
            }
        };
        let params = ReadResourceRequestParams::new(uri);
        let contents = self
            .context_request("resources/read", |peer| async move {
                peer.read_resource(params).await
            })
            .await?
            .contents;
        let content = contents
            .into_iter()
            .find(|content| match content {
                ResourceContents::TextResourceContents { uri: at, .. }
                | ResourceContents::BlobResourceContents { uri: at, .. } => at == uri,
                _ => false,
            })
            .ok_or_else(|| self.skill_error(uri, "the server's answer has no content at it"))?;
        let bytes = match content {
            ResourceContents::TextResourceContents { text, .. } => text.into_bytes(),
            ResourceContents::BlobResourceContents { blob, .. } => {
                base64::engine::general_purpose::STANDARD
                    .decode(blob)
                    .map_err(|error| self.skill_error(uri, format!("its base64 is bad: {error}")))?
            }
            _ => return Err(self.skill_error(uri, "the server's answer is neither text nor bytes")),
        };
        if let Some(file) = listed {
            verify(&file, &bytes).map_err(|detail| self.skill_error(uri, detail))?;
        } else if bytes.len() as u64 > MAX_SKILL_BYTES {
            return Err(self.skill_error(
                uri,
                format!("it is {} bytes, over {MAX_SKILL_BYTES}", bytes.len()),
            ));
        }
        Ok(bytes)
    }

    /// Registers one tool per skill of the server into `store` and returns their names: `skill_<name>`
    /// (after the client's [prefix](McpClientBuilder::prefix)), described by the skill's description.
    /// Called with no arguments, a tool loads its skill ([`load_skill`](Self::load_skill)) and answers
    /// [`LoadedSkill::to_prompt`]; called with `{"file": "references/FORMS.md"}`, it reads that file of
    /// the skill, verified. A failed verification is the call's error result, naming the file.
    ///
    /// So the model sees each skill's name and description, and loads a skill's instructions and files
    /// only when it needs them, as Agent Skills intend. With many skills, defer the tools
    /// ([`catalog::defer_when_large`](crate::catalog::defer_when_large), or a client made with
    /// `defer_loading`) and the model finds them by searching, with the tool search's ranker. A skill
    /// whose tool name would pass 64 characters is left out with a warning. All or nothing, as
    /// [`register`](Self::register).
    pub async fn register_skills(&self, store: &ToolStore) -> Result<Vec<String>, McpClientError> {
        let skills = self.skills().await?;
        let mut tools = Vec::with_capacity(skills.len());
        for skill in skills {
            let name = format!("{}skill_{}", self.inner.prefix, skill.frontmatter.name);
            if name.len() > 64 {
                tracing::warn!(server = %self.inner.name, skill = %skill.uri, "left out: the tool name `{name}` is over 64 characters");
                continue;
            }
            tools.push(self.skill_tool(name, skill)?);
        }
        self.add_all(store, tools)
    }

    /// The tool that loads `skill` and reads its files.
    fn skill_tool(&self, name: String, skill: Skill) -> Result<AgentTool, McpClientError> {
        let files = skill_files(&skill);
        let mut file = json!({
            "type": "string",
            "description": "A file of the skill to read, by its path in the skill's folder; leave it \
                            out to load the skill's instructions.",
        });
        if !files.is_empty() {
            file["enum"] = json!(files);
        }
        let description = format!(
            "Skill `{}`: {} Call it first to load the skill's instructions.",
            skill.frontmatter.name, skill.frontmatter.description
        );
        let client = Arc::downgrade(&self.inner);
        AgentTool::builder(name)
            .label(format!("Skill {}", skill.frontmatter.name))
            .description(description)
            .input_schema(json!({
                "type": "object",
                "properties": { "file": file },
                "additionalProperties": false,
            }))
            .prepare_arguments(|args| match args {
                Value::Null => json!({}),
                other => other,
            })
            .annotations(ToolAnnotations::new().read_only(true))
            .parallel()
            .handler(move |_ctx: ToolContext, args: Value| {
                let client = client.upgrade().map(|inner| McpClient { inner });
                let skill = skill.clone();
                async move {
                    let Some(client) = client else {
                        return AgentToolResult::error(format!(
                            "the MCP client for skill `{}` was closed; connect it again",
                            skill.frontmatter.name
                        ));
                    };
                    let read = match args.get("file").and_then(Value::as_str) {
                        None => client
                            .load_skill(&skill)
                            .await
                            .map(|loaded| loaded.to_prompt()),
                        Some(path) => {
                            let uri = format!("{}{path}", skill_root(&skill.uri));
                            client.read_skill_file(&skill, &uri).await.map(|bytes| {
                                String::from_utf8(bytes).unwrap_or_else(|bytes| {
                                    format!(
                                        "`{path}` is a binary file of {} bytes",
                                        bytes.as_bytes().len()
                                    )
                                })
                            })
                        }
                    };
                    match read {
                        Ok(text) => AgentToolResult::text(text),
                        Err(error) => AgentToolResult::error(error.to_string()),
                    }
                }
            })
            .build()
            .map_err(|error| McpClientError::Tool {
                server: self.inner.name.clone(),
                detail: error.to_string(),
            })
    }
}

/// Whether `bytes` are the file `listed` promises: the size first (a wrong length is reported without
/// hashing), then the digest.
fn verify(listed: &SkillResource, bytes: &[u8]) -> Result<(), String> {
    listed.verify(bytes).map_err(|error| {
        format!("{error}; its content was not used (the server's file differs from its listing)")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frontmatter_is_split_from_the_instructions() {
        let (frontmatter, body) = split_frontmatter(
            "---\nname: pdf\ndescription: PDFs.\nmetadata:\n  a: \"1\"\n---\nDo it.\n",
        )
        .unwrap();
        assert_eq!(
            Value::Object(frontmatter),
            json!({"name": "pdf", "description": "PDFs.", "metadata": {"a": "1"}})
        );
        assert_eq!(body, "Do it.\n");
    }

    #[test]
    fn a_skill_md_without_frontmatter_or_its_fields_is_refused() {
        for (text, problem) in [
            ("# PDF\n", "does not begin"),
            ("---\nname: pdf\ndescription: x\n", "no closing"),
            ("---\nname: [unclosed\n---\n", "not valid YAML"),
            ("---\n- a\n---\n", "not a mapping"),
            ("---\nname: pdf\n---\n", "no `description`"),
            ("---\nname: \"\"\ndescription: x\n---\n", "no `name`"),
        ] {
            let error = split_frontmatter(text).unwrap_err();
            assert!(error.contains(problem), "{text:?}: {error}");
        }
    }
}
