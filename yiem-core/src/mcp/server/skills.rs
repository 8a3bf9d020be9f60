//! Agent Skills served by an [`McpServer`] (SEP-2640, the `io.modelcontextprotocol/skills`
//! extension), from an rmcp [`SkillCatalog`] given to [`McpServer::skills`]: `skills/list`,
//! `skills/get`, `resources/directory/read`, and each skill's files through `resources/list` (every
//! `SKILL.md`) and `resources/read`.
//!
//! The catalog is a snapshot of the folder taken when it was loaded, so a read serves exactly the bytes
//! whose digest and size were listed; it opens every file beneath the folder without following
//! symlinks, so nothing outside it is ever served. What it leaves out (a skill without valid
//! frontmatter, over 512 files or 16 MiB, an entry it cannot read) is reported through `tracing`.

use std::sync::Arc;

use rmcp::handler::server::skill_catalog::SkillCatalog;
use rmcp::model::{
    GetSkillResult, ListResourcesResult, ListSkillsResult, ReadResourceDirectoryResult,
    ReadResourceResult, ResourceContents, ResourcesCapability, SkillsCapability,
};

use super::context::cache_hints;
use super::*;

impl McpServer {
    /// Serves the Agent Skills of `catalog` beside the tools (SEP-2640): the server declares the
    /// `io.modelcontextprotocol/skills` extension (with `directoryRead`) and `resources`, answers
    /// `skills/list` and `skills/get`, lists each skill's `SKILL.md` in `resources/list` (named and
    /// described by its frontmatter) and serves every file of a skill through `resources/read`, with the
    /// digest and size the listing gave (a file over [`max_result_bytes`](Self::max_result_bytes) is refused,
    /// `-32603`, as a resource's read is). A URI the catalog does not serve — one that climbs out of its
    /// skill with `..`, say — is answered as an unknown resource (`-32602` to a 2026-07-28 client,
    /// `-32002` before), with the URI in the error's data. Needs the `mcp-skills` feature.
    ///
    /// [`SkillCatalog::from_dir`] loads a folder whose subfolders (at any depth) hold a `SKILL.md` with
    /// YAML frontmatter (`name`, equal to the folder's name, and `description`) and the skill's other
    /// files; it reads them with blocking I/O, once.
    ///
    /// ```no_run
    /// use yiem_core::mcp::{McpServer, SkillCatalog};
    /// use yiem_core::store::ToolStore;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = McpServer::new(ToolStore::new("docs")).skills(SkillCatalog::from_dir("./skills")?);
    /// # let _ = server;
    /// # Ok(())
    /// # }
    /// ```
    pub fn skills(mut self, catalog: SkillCatalog) -> Self {
        self.config_mut().skills = Some(Arc::new(catalog));
        self
    }

    pub(super) fn skill_catalog(&self) -> Option<&SkillCatalog> {
        self.config.skills.as_deref()
    }

    /// The capabilities a skill catalog adds: the extension, and `resources` (the files are read as
    /// resources) where a context store has not declared it already.
    pub(super) fn declare_skills(&self, capabilities: &mut ServerCapabilities) {
        if self.skill_catalog().is_none() {
            return;
        }
        let Ok(Value::Object(settings)) =
            serde_json::to_value(SkillsCapability::new().with_directory_read())
        else {
            return;
        };
        capabilities
            .extensions
            .get_or_insert_with(Default::default)
            .insert(rmcp::model::SKILLS_EXTENSION_ID.to_owned(), settings);
        capabilities
            .resources
            .get_or_insert_with(ResourcesCapability::default);
    }

    /// `resources/list` of a server with skills: the context store's resources, if any, then each
    /// skill's `SKILL.md`.
    pub(super) fn list_resources_with_skills(
        &self,
        catalog: &SkillCatalog,
        context: &RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let mut resources = match self.context_store() {
            Some(_) => self.list_context_resources(context)?.resources,
            None => Vec::new(),
        };
        resources.extend(catalog.resources());
        let mut listed = ListResourcesResult::with_all_items(resources);
        if let Some((ttl, scope)) = cache_hints(self, context) {
            listed = listed.with_ttl_ms(ttl).with_cache_scope(scope);
        }
        Ok(listed)
    }

    /// `resources/read` of a skill's file, or `None` when `uri` is not one (the context store's
    /// resources are read then). A `skill://` URI that is not a skill's file is an unknown resource
    /// here, not in the context store.
    pub(super) fn read_skill_file(
        &self,
        uri: &str,
        context: &RequestContext<RoleServer>,
    ) -> Option<Result<ReadResourceResult, ErrorData>> {
        let catalog = self.skill_catalog()?;
        if let Some(mut read) = catalog.read_resource(uri) {
            let bytes = read
                .contents
                .iter()
                .map(|content| match content {
                    ResourceContents::TextResourceContents { text, .. } => text.len(),
                    ResourceContents::BlobResourceContents { blob, .. } => blob.len() / 4 * 3,
                    _ => 0,
                })
                .sum();
            if let Err(error) = self.within_limit(uri, bytes) {
                return Some(Err(error));
            }
            if let Some((ttl, scope)) = cache_hints(self, context) {
                read = read.with_ttl_ms(ttl).with_cache_scope(scope);
            }
            return Some(Ok(read));
        }
        if !uri.starts_with("skill://") {
            return None;
        }
        let message = format!(
            "no skill file at `{uri}`: list the skills (skills/list) for the files each one has; a path \
             that leaves its skill's folder is never served"
        );
        let data = Some(serde_json::json!({ "uri": uri }));
        let modern = context
            .protocol_version()
            .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28);
        Some(Err(if modern {
            ErrorData::invalid_params(message, data)
        } else {
            ErrorData::resource_not_found(message, data)
        }))
    }

    /// `skills/list`: every skill on one page (the catalog's order, by URI).
    pub(super) fn list_skills_of(
        &self,
        catalog: &SkillCatalog,
        context: &RequestContext<RoleServer>,
    ) -> ListSkillsResult {
        let mut listed = catalog.list_skills();
        if let Some((ttl, scope)) = cache_hints(self, context) {
            listed.ttl_ms = Some(ttl);
            listed.cache_scope = Some(scope);
        }
        listed
    }

    /// `skills/get`: the entry of the skill at `uri`; `-32602` for a URI that is not one.
    pub(super) fn get_skill_of(
        &self,
        catalog: &SkillCatalog,
        uri: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, ErrorData> {
        let mut got = catalog.get_skill(uri).map_err(|_| {
            ErrorData::invalid_params(
                format!("no skill at `{uri}`: list the skills (skills/list) for their URIs"),
                Some(serde_json::json!({ "uri": uri })),
            )
        })?;
        if let Some((ttl, scope)) = cache_hints(self, context) {
            got.ttl_ms = Some(ttl);
            got.cache_scope = Some(scope);
        }
        Ok(got)
    }

    /// `resources/directory/read`: the direct children of a skill's folder or of a folder in it;
    /// `-32602` for anything else.
    pub(super) fn read_skill_directory(
        catalog: &SkillCatalog,
        uri: &str,
    ) -> Result<ReadResourceDirectoryResult, ErrorData> {
        catalog.read_resource_directory(uri).map_err(|_| {
            ErrorData::invalid_params(
                format!(
                    "`{uri}` is not a folder of a skill this server serves: a skill's folder is its \
                     `SKILL.md` URI without `/SKILL.md`"
                ),
                Some(serde_json::json!({ "uri": uri })),
            )
        })
    }
}
