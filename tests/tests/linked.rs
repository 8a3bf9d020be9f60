//! The linker caveat: tools that live in library crates the binary never calls reach `register_all_tools`
//! once the binary names those crates with `yiem_core::link_tools!`.

use std::process::Command;

#[test]
fn a_binary_collects_the_tools_of_two_library_crates() {
    let output = Command::new(env!("CARGO_BIN_EXE_collect-linked"))
        .output()
        .expect("the binary runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        String::from_utf8(output.stdout).unwrap().trim(),
        "countdown,list_tools,shout,whisper"
    );
}
