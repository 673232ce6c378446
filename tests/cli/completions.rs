//! completions/ and man/ hold shell scripts and man pages generated from
//! the clap definition; these tests fail when they are stale. Regenerate with
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

/// The man pages in man/, one for ctxclean and one per subcommand.
const PAGES: &[(Option<&str>, &str)] = &[
    (None, "ctxclean.1"),
    (Some("stats"), "ctxclean-stats.1"),
    (Some("filter"), "ctxclean-filter.1"),
    (Some("compact-tools"), "ctxclean-compact-tools.1"),
    (Some("trim"), "ctxclean-trim.1"),
    (Some("summarize"), "ctxclean-summarize.1"),
    (Some("validate"), "ctxclean-validate.1"),
    (Some("convert"), "ctxclean-convert.1"),
    (Some("apply"), "ctxclean-apply.1"),
    (Some("serve"), "ctxclean-serve.1"),
];

#[test]
fn man_pages_are_up_to_date() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("man");
    let update = std::env::var_os("CTXCLEAN_UPDATE_COMPLETIONS").is_some();
    if update {
        std::fs::create_dir_all(&dir).unwrap();
    }
    let mut stale = Vec::new();
    for (page, file) in PAGES {
        let mut cmd = ctxclean();
        cmd.arg("man");
        if let Some(page) = page {
            cmd.arg(page);
        }
        let out = cmd.assert().success();
        let generated = &out.get_output().stdout;
        assert!(generated.starts_with(b".ie \\n(.g"), "{file}: roff");
        let path = dir.join(file);
        if update {
            std::fs::write(&path, generated).unwrap();
        } else if std::fs::read(&path).ok().as_ref() != Some(generated) {
            stale.push(*file);
        }
    }
    // Every page in man/ is one of these: none left from a removed command.
    let listed: Vec<&str> = PAGES.iter().map(|(_, f)| *f).collect();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().to_string();
        assert!(
            listed.contains(&name.as_str()),
            "man/{name} is not generated"
        );
    }
    assert!(
        stale.is_empty(),
        "stale man pages {stale:?}: run CTXCLEAN_UPDATE_COMPLETIONS=1 cargo test --test cli completions"
    );
    ctxclean()
        .args(["man", "nope"])
        .assert()
        .code(2)
        .stderr("ctxclean: no man page for `nope`\n");
}

/// Every subcommand's help ends with two or three examples of itself.
#[test]
fn every_help_ends_with_examples() {
    for (page, _) in &PAGES[1..] {
        let page = page.unwrap();
        for flag in ["-h", "--help"] {
            let out = ctxclean().args([page, flag]).assert().success();
            let help = String::from_utf8_lossy(&out.get_output().stdout).to_string();
            let (_, examples) = help
                .rsplit_once("\nExamples:\n")
                .unwrap_or_else(|| panic!("{page} {flag}: no examples"));
            let lines: Vec<&str> = examples.lines().collect();
            assert!((2..=3).contains(&lines.len()), "{page}: {lines:?}");
            for line in lines {
                assert!(line.starts_with("  ctxclean "), "{page}: {line}");
                assert!(line.contains(page), "{page}: {line}");
            }
        }
    }
}
