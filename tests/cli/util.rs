//! Helpers shared by the integration tests.

use std::path::PathBuf;

/// The `ctxclean` binary, run from the crate root so fixture paths are short.
pub(crate) fn ctxclean() -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("ctxclean").unwrap();
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"));
    cmd
}

/// A fixture's path from the crate root.
pub(crate) fn fixture(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(path)
}

/// A fresh, empty temporary directory for one test.
pub(crate) fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ctxclean-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Every OpenAI-format fixture.
pub(crate) const OPENAI_FIXTURES: &[&str] = &[
    "functionary/test_case.json",
    "functionary/test_case_v1.json",
    "functionary/test_case_v2.json",
    "functionary/test_case_vision.json",
    "llama-factory/mllm_demo.json",
    "llama-factory/reason_tool_use_demo_8.jsonl",
    "llama-factory/v1_multimodal_demo.jsonl",
    "tokens/plain_text.jsonl",
];
