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

/// A fresh, empty temporary directory for one test, removed with what it
/// holds when the value is dropped: at the end of the test, pass or fail
/// (a failing assertion unwinds through the drop). Each call has its own
/// directory, even for one `name` (a helper many tests share) and under
/// `cargo test`, which runs the tests as threads of one process.
pub(crate) fn temp_dir(name: &str) -> TempDir {
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!(
        "ctxclean-test-{}-{call}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    TempDir(dir)
}

/// A directory removed when dropped (see [`temp_dir`]).
pub(crate) struct TempDir(PathBuf);

impl std::ops::Deref for TempDir {
    type Target = PathBuf;
    fn deref(&self) -> &PathBuf {
        &self.0
    }
}

impl AsRef<std::path::Path> for TempDir {
    fn as_ref(&self) -> &std::path::Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for TempDir {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        // Read-only entries (a test of an unwritable output) are made
        // writable first, so that they go too.
        make_writable(&self.0);
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn make_writable(path: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if meta.is_dir() {
            let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755));
            for entry in std::fs::read_dir(path).into_iter().flatten().flatten() {
                make_writable(&entry.path());
            }
        }
    }
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

#[test]
fn a_test_directory_goes_when_its_test_ends() {
    let path = {
        let dir = temp_dir("goes");
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/f"), "x").unwrap();
        dir.to_path_buf()
    };
    assert!(!path.exists(), "{} is left behind", path.display());
}
