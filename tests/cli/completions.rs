//! completions/ holds scripts generated from the clap definition; this test
//! fails when they are stale. Regenerate with
//! `CTXCLEAN_UPDATE_COMPLETIONS=1 cargo test --test cli completions`.

use crate::util::ctxclean;

const SHELLS: &[(&str, &str)] = &[
    ("bash", "ctxclean.bash"),
    ("zsh", "_ctxclean"),
    ("fish", "ctxclean.fish"),
    ("elvish", "ctxclean.elv"),
    ("powershell", "_ctxclean.ps1"),
];

#[test]
fn completions_are_up_to_date() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("completions");
    let update = std::env::var_os("CTXCLEAN_UPDATE_COMPLETIONS").is_some();
    let mut stale = Vec::new();
    for (shell, file) in SHELLS {
        let out = ctxclean().args(["completions", shell]).assert().success();
        let generated = &out.get_output().stdout;
        let path = dir.join(file);
        if update {
            std::fs::write(&path, generated).unwrap();
        } else if std::fs::read(&path).ok().as_ref() != Some(generated) {
            stale.push(*file);
        }
    }
    assert!(
        stale.is_empty(),
        "stale completions {stale:?}: run CTXCLEAN_UPDATE_COMPLETIONS=1 cargo test --test cli completions"
    );
}
