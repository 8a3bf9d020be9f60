//! `yiem_core::check_tools!()` in a user's crate: `tests/fixtures/checked-tools` runs it in its own tests.
//! Built as it is, its tools pass (that run is part of `cargo test --workspace`); here it is built again,
//! in a subprocess, with a tool OpenAI strict mode cannot express or a tool with an example that does not
//! fit its schema, and its `cargo test` must fail with the report.

use std::path::Path;
use std::process::Command;

/// `cargo test -p checked-tools --features FEATURE --test TEST`, in the same target directory as this test
/// binary (target/debug/deps/<binary>): the crates it shares are built already.
fn fixture_test(feature: &str, test: &str) -> std::process::Output {
    fixture("checked-tools", feature, &["--test", test])
}

/// `cargo test -p PACKAGE --features FEATURE TARGET...` in that target directory.
fn fixture(package: &str, feature: &str, target_args: &[&str]) -> std::process::Output {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let exe = std::env::current_exe().unwrap();
    let target = exe.ancestors().nth(3).unwrap();
    Command::new(env!("CARGO"))
        .current_dir(workspace)
        .args(["test", "--offline", "--locked", "-p", package, "--features"])
        .arg(feature)
        .args(target_args)
        .arg("--target-dir")
        .arg(target)
        .env_remove("RUSTFLAGS")
        .output()
        .expect("cargo runs")
}

/// The report on the fixtures' `add_counts`, whose map argument OpenAI strict mode cannot express.
const MAP_IN_STRICT_MODE: &str = "1 problem with the tools:\n\
     - tool `add_counts` cannot be described for OpenAI strict mode: `/counts` in type `Tally` is a map \
     with free keys (`additionalProperties`), and OpenAI strict mode needs `additionalProperties: false` \
     on every object\n";

/// The stdout and stderr of a `cargo test` that must have failed.
fn failing(output: std::process::Output) -> (String, String) {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        !output.status.success(),
        "the check passed:\n{stdout}\n{stderr}"
    );
    (stdout, stderr)
}

#[test]
fn the_check_fails_a_crate_with_a_tool_strict_mode_cannot_express() {
    let (stdout, stderr) = failing(fixture_test("strict-cannot-express", "check"));
    assert!(
        stdout.contains("test yiem_check_tools ... FAILED"),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(
        stdout.contains(MAP_IN_STRICT_MODE),
        "the report is missing from stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(
        stdout.contains("test result: FAILED. 0 passed; 1 failed"),
        "{stdout}"
    );
}

#[test]
fn the_check_fails_a_crate_with_an_example_that_does_not_fit_its_tool() {
    let (stdout, stderr) = failing(fixture_test("bad-example", "check"));
    // The second example of `forecast` gives `days` as a string; the first fits.
    for part in [
        "1 problem with the tools:\n- tool `forecast` (defined at ",
        "has an example that does not fit its input schema (example 1, counting from 0); fix the example \
         or the schema: invalid arguments for tool `forecast`: at `/days`: expected an integer from 0 to 255, \
         got the string \"two\"",
    ] {
        assert!(
            stdout.contains(part),
            "`{part}` is missing from stdout:\n{stdout}\nstderr:\n{stderr}"
        );
    }
    assert!(
        stdout.contains("test result: FAILED. 0 passed; 1 failed"),
        "{stdout}"
    );
}

#[test]
fn a_test_file_of_nothing_but_the_check_links_the_crates_tools_itself() {
    // tests/only_check.rs never names its library: the check must link it, and so fail on the tool.
    let (stdout, stderr) = failing(fixture_test("strict-cannot-express", "only_check"));
    assert!(
        stdout.contains("tool `add_counts` cannot be described for OpenAI strict mode"),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
}

#[test]
fn the_check_fails_when_it_finds_no_tool_and_says_what_to_write() {
    let (stdout, stderr) = failing(fixture_test("no-tools", "only_check"));
    assert!(
        stdout.contains(
            "yiem_core::check_tools! found no tool to check in package `checked-tools`: this test binary links no `#[tool]`. \
             If the tools live in a library of another name, name it: `yiem_core::check_tools!(crate = my_tools);`."
        ),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
}

#[test]
fn in_a_binary_only_crate_the_check_in_main_rs_checks_the_binarys_tools_and_names_the_dialect_once()
{
    let (stdout, stderr) = failing(fixture(
        "checked-bin",
        "strict-cannot-express",
        &["--bin", "checked-bin"],
    ));
    // A strict tool's OpenAI definition is its strict-mode one: one problem, said once, naming the dialect.
    assert!(
        stdout.contains(MAP_IN_STRICT_MODE),
        "the report is missing from stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert_eq!(
        stdout.matches("cannot be described for").count(),
        1,
        "{stdout}"
    );
}

#[test]
fn in_a_binary_only_crate_the_check_in_tests_says_to_move_it_into_main_rs() {
    let (stdout, stderr) = failing(fixture(
        "checked-bin",
        "check-in-tests-dir",
        &["--test", "check"],
    ));
    assert!(
        stdout.contains(
            "yiem_core::check_tools! found no tool to check in package `checked-bin`: the package has no library, \
             so a file in `tests/` cannot link the tools of its binary. Put the check in `src/main.rs` instead: \
             `#[cfg(test)] mod tool_checks { yiem_core::check_tools!(); }` (and delete it here)."
        ),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
}
