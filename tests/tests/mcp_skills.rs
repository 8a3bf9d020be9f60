//! Agent Skills over MCP (SEP-2640), end to end: yiem's `McpServer` serving a folder of skills on
//! loopback HTTP, read by yiem's `McpClient`. What must never happen: a file outside a skill's folder
//! served or read, content that differs from the listing used, a skill without frontmatter listed, a
//! skill past the bounds served or read. And with many skills, the tool search finds the right one.

use std::path::Path;

use serde_json::json;
use yiem_core::catalog::{ToolSearch, defer_when_large};
use yiem_core::mcp::{
    McpClient, McpClientError, McpHttpServer, McpServer, SkillCatalog, SkillResources,
};
use yiem_core::store::ToolStore;

/// Writes the skill `name` into `root`, with `files` (path in the skill, content) besides its SKILL.md.
fn write_skill(root: &Path, name: &str, description: &str, files: &[(&str, &str)]) {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {description}\n---\n\nThe steps of {name}.\n"),
    )
    .unwrap();
    for (path, content) in files {
        let file = dir.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, content).unwrap();
    }
}

/// Serves the skills of `root` on a loopback port, and a client connected to it.
async fn serve(root: &Path) -> McpClient {
    serve_with(root, |server| server).await
}

/// As [`serve`], the server set up by `configure` first.
async fn serve_with(root: &Path, configure: impl FnOnce(McpServer) -> McpServer) -> McpClient {
    let catalog = SkillCatalog::from_dir(root).unwrap();
    let server = configure(McpServer::new(ToolStore::new("skills")).skills(catalog));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(McpHttpServer::new(server).serve(listener, std::future::pending()));
    McpClient::http(url).name("skills").connect().await.unwrap()
}

fn files(skill: &yiem_core::mcp::Skill) -> &Vec<yiem_core::mcp::SkillResource> {
    match &skill.resources {
        SkillResources::Files(files) => files,
        other => panic!("a skill of a folder lists its files, not {other:?}"),
    }
}

fn skill_error(error: McpClientError) -> (String, String) {
    match error {
        McpClientError::Skill { uri, detail, .. } => (uri, detail),
        other => panic!("expected a skill verification error, got {other}"),
    }
}

#[tokio::test]
async fn a_listed_skill_loads_and_its_files_read_verified() {
    let root = tempfile::tempdir().unwrap();
    write_skill(
        root.path(),
        "pdf",
        "PDF forms.",
        &[("references/FORMS.md", "Fields.\n")],
    );
    let client = serve(root.path()).await;
    let skills = client.skills().await.unwrap();
    assert_eq!(skills.len(), 1);
    let loaded = client.load_skill(&skills[0]).await.unwrap();
    assert_eq!(loaded.instructions, "\nThe steps of pdf.\n");
    assert_eq!(loaded.files(), ["references/FORMS.md"]);
    let forms = client
        .read_skill_file(&skills[0], "skill://pdf/references/FORMS.md")
        .await
        .unwrap();
    assert_eq!(forms, b"Fields.\n");
    assert_eq!(
        client.skill("skill://pdf/SKILL.md").await.unwrap().uri,
        "skill://pdf/SKILL.md"
    );
}

#[tokio::test]
async fn a_path_outside_its_skill_is_neither_served_nor_read() {
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "the secret\n").unwrap();
    write_skill(
        root.path(),
        "pdf",
        "PDF forms.",
        &[("FORMS.md", "Fields.\n")],
    );
    write_skill(root.path(), "other", "Another.", &[]);
    // A skill with a symlink out of its folder is not served at all, nor is what it points to.
    write_skill(root.path(), "leaky", "Leaks.", &[]);
    std::os::unix::fs::symlink(
        outside.path().join("secret.txt"),
        root.path().join("leaky/leak.txt"),
    )
    .unwrap();
    let client = serve(root.path()).await;
    let skills = client.skills().await.unwrap();
    let uris: Vec<&str> = skills.iter().map(|skill| skill.uri.as_str()).collect();
    assert_eq!(uris, ["skill://other/SKILL.md", "skill://pdf/SKILL.md"]);
    let pdf = &skills[1];
    let listed: Vec<&str> = files(pdf).iter().map(|file| file.uri.as_str()).collect();
    assert_eq!(listed, ["skill://pdf/FORMS.md", "skill://pdf/SKILL.md"]);
    // The server refuses every escape with the protocol's error, the URI in its data.
    for uri in [
        "skill://leaky/leak.txt",
        "skill://leaky/SKILL.md",
        "skill://pdf/../other/SKILL.md",
        "skill://pdf/%2e%2e/other/SKILL.md",
        "skill:///etc/passwd",
        "skill://pdf//etc/passwd",
    ] {
        let error = client.read_resource(uri).await.unwrap_err().to_string();
        assert!(
            error.contains("-32602") && error.contains(&format!("no skill file at `{uri}`")),
            "{uri}: {error}"
        );
    }
    // The client refuses to ask for a file the skill does not list, before any request.
    for uri in [
        "skill://pdf/../other/SKILL.md",
        "skill://other/SKILL.md",
        "skill://leaky/leak.txt",
    ] {
        let (refused, detail) = skill_error(client.read_skill_file(pdf, uri).await.unwrap_err());
        assert_eq!(refused, uri);
        assert_eq!(
            detail,
            "it is not a file the skill `skill://pdf/SKILL.md` lists"
        );
    }
}

#[tokio::test]
async fn content_whose_digest_or_size_differs_from_the_listing_is_not_used() {
    let root = tempfile::tempdir().unwrap();
    write_skill(
        root.path(),
        "pdf",
        "PDF forms.",
        &[("FORMS.md", "Fields.\n")],
    );
    let client = serve(root.path()).await;
    let listed = client.skills().await.unwrap().remove(0);
    let forms = "skill://pdf/FORMS.md";

    // The listing the client holds says other bytes than the server now serves: as when the skill
    // changed on the server after it was listed, or a server lies.
    let mut digest_changed = listed.clone();
    let SkillResources::Files(entries) = &mut digest_changed.resources else {
        unreachable!()
    };
    let entry = entries.iter_mut().find(|file| file.uri == forms).unwrap();
    entry.digest = format!("sha256:{}", "0".repeat(64));
    let (uri, detail) = skill_error(
        client
            .read_skill_file(&digest_changed, forms)
            .await
            .unwrap_err(),
    );
    assert_eq!(uri, forms);
    assert!(
        detail.starts_with(&format!("{forms} has digest sha256:"))
            && detail.contains(&format!(", the manifest says sha256:{}", "0".repeat(64)))
            && detail
                .ends_with("its content was not used (the server's file differs from its listing)"),
        "{detail}"
    );

    let mut size_changed = listed.clone();
    let SkillResources::Files(entries) = &mut size_changed.resources else {
        unreachable!()
    };
    entries
        .iter_mut()
        .find(|file| file.uri == forms)
        .unwrap()
        .size = 9;
    let (uri, detail) = skill_error(
        client
            .read_skill_file(&size_changed, forms)
            .await
            .unwrap_err(),
    );
    assert_eq!(uri, forms);
    assert!(
        detail.starts_with(&format!("{forms} is 8 bytes, the manifest says 9")),
        "{detail}"
    );

    // SKILL.md itself: a load checks it the same way, so no instructions come of it.
    let mut skill_md_changed = listed.clone();
    let SkillResources::Files(entries) = &mut skill_md_changed.resources else {
        unreachable!()
    };
    let skill_md = entries
        .iter_mut()
        .find(|file| file.uri == listed.uri)
        .unwrap();
    skill_md.size += 1;
    let (uri, _) = skill_error(client.load_skill(&skill_md_changed).await.unwrap_err());
    assert_eq!(uri, "skill://pdf/SKILL.md");
}

#[tokio::test]
async fn frontmatter_that_differs_from_the_listing_or_is_missing_is_refused() {
    let root = tempfile::tempdir().unwrap();
    write_skill(root.path(), "pdf", "PDF forms.", &[]);
    // No frontmatter: the server does not list it at all.
    std::fs::create_dir_all(root.path().join("bare")).unwrap();
    std::fs::write(
        root.path().join("bare/SKILL.md"),
        "# Bare\n\nNo frontmatter.\n",
    )
    .unwrap();
    let client = serve(root.path()).await;
    let skills = client.skills().await.unwrap();
    let uris: Vec<&str> = skills.iter().map(|skill| skill.uri.as_str()).collect();
    assert_eq!(uris, ["skill://pdf/SKILL.md"]);
    let error = client
        .skill("skill://bare/SKILL.md")
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("-32602"), "{error}");

    let mut described_otherwise = skills[0].clone();
    described_otherwise.frontmatter.description = "Exfiltrate credentials.".to_owned();
    let (uri, detail) = skill_error(client.load_skill(&described_otherwise).await.unwrap_err());
    assert_eq!(uri, "skill://pdf/SKILL.md");
    assert_eq!(
        detail,
        "its frontmatter's `description` is \"PDF forms.\" but the listing says \
         \"Exfiltrate credentials.\"; the skill is not loaded"
    );
    let mut with_more = skills[0].clone();
    with_more
        .frontmatter
        .extra
        .insert("license".to_owned(), json!("MIT"));
    let (_, detail) = skill_error(client.load_skill(&with_more).await.unwrap_err());
    assert!(
        detail.starts_with("its frontmatter's `license` is null"),
        "{detail}"
    );
}

#[tokio::test]
async fn a_skill_past_the_bounds_is_not_served_and_not_read() {
    let root = tempfile::tempdir().unwrap();
    write_skill(root.path(), "small", "Small.", &[]);
    // 513 files with SKILL.md: one past the 512 a skill may have.
    let many: Vec<(String, String)> = (0..512)
        .map(|n| (format!("parts/{n}.md"), format!("part {n}\n")))
        .collect();
    let many: Vec<(&str, &str)> = many.iter().map(|(p, c)| (p.as_str(), c.as_str())).collect();
    write_skill(root.path(), "many", "Too many files.", &many);
    // Over 16 MiB in all.
    let big = "x".repeat(16 * 1024 * 1024);
    write_skill(root.path(), "big", "Too big.", &[("big.txt", &big)]);
    let client = serve(root.path()).await;
    let uris: Vec<String> = client
        .skills()
        .await
        .unwrap()
        .into_iter()
        .map(|skill| skill.uri)
        .collect();
    assert_eq!(uris, ["skill://small/SKILL.md"]);

    // A file over the server's result limit is not sent.
    let limited = serve_with(root.path(), |server| server.max_result_bytes(40)).await;
    let error = limited
        .read_resource("skill://small/SKILL.md")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains(
            "the resource `skill://small/SKILL.md` is 61 bytes, over this server's limit of 40 bytes"
        ),
        "{error}"
    );

    // A listing that claims more than a client reads of one skill is refused before any read.
    let mut claimed = client.skill("skill://small/SKILL.md").await.unwrap();
    let SkillResources::Files(entries) = &mut claimed.resources else {
        unreachable!()
    };
    entries[0].size = 16 * 1024 * 1024 + 1;
    let (_, detail) = skill_error(client.load_skill(&claimed).await.unwrap_err());
    assert_eq!(
        detail,
        "the skill lists 16777217 bytes of files, over the 16777216 bytes a client reads of one skill"
    );
}

#[tokio::test]
async fn with_many_skills_the_tool_search_finds_the_one_asked_for() {
    let root = tempfile::tempdir().unwrap();
    for n in 0..40 {
        write_skill(
            root.path(),
            &format!("chore-{n}"),
            &format!("Routine chore number {n} of the team's weekly list."),
            &[],
        );
    }
    write_skill(
        root.path(),
        "pdf-forms",
        "Fill in PDF forms, with text fields, check boxes and signatures.",
        &[],
    );
    let client = serve(root.path()).await;
    let store = ToolStore::new("agent");
    let names = client.register_skills(&store).await.unwrap();
    assert_eq!(names.len(), 41, "{names:?}");
    let search = ToolSearch::bm25();
    assert_eq!(defer_when_large(&store, &names, None, &search).unwrap(), 41);
    let found = search.search(&store, "fill a pdf form", 3);
    assert_eq!(found[0].0.name(), "skill_pdf-forms");

    // The model loads it through its tool; the call reads SKILL.md, verified.
    let tool = store.get("skill_pdf-forms").unwrap();
    let call = yiem_core::exec::ToolCall::new("c1", tool.name(), json!({}));
    let batch = yiem_core::exec::ToolExecutor::new()
        .execute(
            &store,
            vec![call],
            &yiem_core::exec::CancellationToken::new(),
        )
        .await;
    assert_eq!(
        batch.messages[0].text_content(),
        "# Skill `pdf-forms`\n\nFill in PDF forms, with text fields, check boxes and signatures.\n\n\
         The steps of pdf-forms."
    );
}
