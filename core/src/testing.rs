//! What the core's tests share: the fixtures. Below every module (it names
//! none), so that any may use it without a loop.

/// Every file under `fixtures/`.
pub(crate) fn fixture_files() -> Vec<std::path::PathBuf> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures");
    let (mut files, mut dirs) = (Vec::new(), vec![root]);
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files
}
