//! `yiem_core::check_tools!()` in a user's crate: `tests/fixtures/checked-tools` runs it in its own tests.
//! Built as it is, its tools pass (that run is part of `cargo test --workspace`); here it is built again,
//! in a subprocess, with a tool OpenAI strict mode cannot express or a tool with an example that does not
//! fit its schema, and its `cargo test` must fail with the report.

use std::path::Path;
use std::process::Command;

/// `cargo test -p checked-tools --features FEATURE --test TEST`, in the same target directory as this test
/// binary (target/debug/deps/<binary>): the crates it shares are built already.
fn fixture_test(feature: &str, test: &str) -> std::process::Output {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let exe = std::env::current_exe().unwrap();
    let target = exe.ancestors().nth(3).unwrap();
    Command::new(env!("CARGO"))
        .current_dir(workspace)
        .args([
            "test",
            "--offline",
            "--locked",
            "-p",
            "checked-tools",
            "--features",
        ])
        .args([feature, "--test", test, "--target-dir"])
        .arg(target)
        .env_remove("RUSTFLAGS")
        .output()
        .expect("cargo runs")
}

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
    let report = "1 problem with the tools:\n\
         - tool `add_counts` cannot be described for OpenAI strict mode: `/counts` in type `Tally` is a map \
         with free keys (`additionalProperties`), and OpenAI strict mode needs `additionalProperties: false` \
         on every object\n";
    assert!(
        stdout.contains(report),
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
