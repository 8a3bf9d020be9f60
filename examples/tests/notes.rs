//! The notes example as a user runs it: two stores in one process, each with its own notes.

use std::process::Command;

#[test]
fn two_agents_keep_their_own_notes() {
    let exe = std::env::current_exe().unwrap();
    let example = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples")
        .join("notes");
    let output = Command::new(example).output().unwrap();
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "alice: buy milk\ncall mum\n\
         bob: fix the bike\n\
         alice searches for bike: no note contains `bike`\n\
         alice: 2 notes moved to the blue box\n\
         archived: alice 2, bob 0\n"
    );
}
