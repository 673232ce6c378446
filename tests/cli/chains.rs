//! Issue 17: `then` chains and recipes. A chain gives exactly what the same
//! steps give through pipes, in one pass, with one report.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};

use predicates::prelude::*;
use serde_json::Value;

use crate::redetect::fixtures;
use crate::util::{ctxclean, fixture, temp_dir};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_ctxclean")
}

/// The chains the comparison runs, as steps of words.
const CHAINS: &[&[&[&str]]] = &[
    &[
        &["filter", "--previous-cycles"],
        &[
            "compact-tools",
            "--keep-last",
            "1",
            "--max-result-tokens",
            "50",
        ],
        &["trim", "--max-tokens", "400"],
    ],
    &[
        &[
            "compact-tools",
            "--keep-last",
            "0",
            "--max-result-tokens",
            "20",
        ],
        &["summarize", "--threshold", "200", "--keep", "4"],
        &["trim", "--max-tokens", "300", "--allow-partial"],
    ],
];

/// Counted with the rough tokenizer: what is compared is the chain against
/// the pipes, never the counts, and this skips the vocabulary build of each
/// of the many processes.
const TOKENIZER: [&str; 2] = ["--tokenizer", "approx"];

/// The format `stats` reads a file as, when it reads without --from.
fn format_of(path: &Path) -> Option<String> {
    let out = Command::new(bin())
        .args(["stats", "--json", "--skip-invalid", "--tokenizer", "approx"])
        .arg(path)
        .output()
        .unwrap();
    if !out.status.success() {
        return None;
    }
    let v: Value = serde_json::from_slice(&out.stdout).ok()?;
    v["conversations"][0]["format"].as_str().map(str::to_string)
}

/// The steps through pipes: each process reads the one before it, told the
/// format (a trimmed tail may not tell it by itself).
fn piped(path: &Path, steps: &[&[&str]], format: &str) -> Vec<u8> {
    let mut input = fs::read(path).unwrap();
    for step in steps {
        let mut child = Command::new(bin())
            .args(*step)
            .args(["--from", format, "--skip-invalid", "-q"])
            .args(TOKENIZER)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let data = input.clone();
        let writer = std::thread::spawn(move || {
            use std::io::Write;
            let _ = stdin.write_all(&data);
        });
        let out = child.wait_with_output().unwrap();
        writer.join().unwrap();
        assert!(out.status.success(), "{step:?} on {}", path.display());
        input = out.stdout;
    }
    input
}

fn chained(path: &Path, steps: &[&[&str]], format: &str) -> Vec<u8> {
    let mut args: Vec<&str> = Vec::new();
    for (k, step) in steps.iter().enumerate() {
        if k > 0 {
            args.push("then");
        }
        args.extend(step.iter());
    }
    let out = Command::new(bin())
        .args(&args)
        .args(["--from", format, "--skip-invalid", "-q"])
        .args(TOKENIZER)
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?} on {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Each chain is a test of its own: the fixtures are many, and each step
/// is a process (two tests share the cores better than one long one).
#[test]
fn a_chain_of_filter_compact_and_trim_gives_what_pipes_give_on_every_fixture() {
    a_chain_gives_what_pipes_give_on_every_fixture(CHAINS[0]);
}

#[test]
fn a_chain_through_a_summary_gives_what_pipes_give_on_every_fixture() {
    a_chain_gives_what_pipes_give_on_every_fixture(CHAINS[1]);
}

fn a_chain_gives_what_pipes_give_on_every_fixture(steps: &[&[&str]]) {
    let compared = std::sync::atomic::AtomicUsize::new(0);
    let differ = std::sync::Mutex::new(Vec::new());
    let files = fixtures();
    // Two workers: the fixtures are many and each step is a process.
    std::thread::scope(|s| {
        for chunk in files.chunks(files.len().div_ceil(2)) {
            let (compared, differ) = (&compared, &differ);
            s.spawn(move || {
                for path in chunk {
                    let Some(format) = format_of(path) else {
                        continue;
                    };
                    if chained(path, steps, &format) != piped(path, steps, &format) {
                        let what = format!("{} ({format}): {steps:?}", path.display());
                        differ.lock().unwrap().push(what);
                    }
                    compared.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            });
        }
    });
    let (compared, differ) = (compared.into_inner(), differ.into_inner().unwrap());
    assert!(compared > 50, "only {compared} compared");
    assert!(
        differ.is_empty(),
        "chain and pipes differ:\n{}",
        differ.join("\n")
    );
}

#[test]
fn one_report_with_every_step() {
    let dir = temp_dir("chain-report");
    let report = dir.join("r.json");
    let out = ctxclean()
        .args([
            "compact-tools",
            "--keep-last",
            "0",
            "--max-result-tokens",
            "10",
            "--report",
        ])
        .arg(&report)
        .args(["then", "filter", "--previous-cycles"])
        .args(["then", "trim", "--max-tokens", "500"])
        .arg(fixture("written/analyst_session.json"))
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(
        stderr.starts_with("ctxclean compact-tools→filter→trim: 1 file, 1,643 → ")
            && stderr.contains("(compact-tools −")
            && stderr.contains(", filter −")
            && stderr.contains(", trim −"),
        "{stderr}"
    );
    let r: Value = serde_json::from_slice(&fs::read(&report).unwrap()).unwrap();
    assert_eq!(r["command"], "compact-tools→filter→trim");
    let c = &r["conversations"][0];
    let steps: Vec<&str> = c["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["step"].as_str().unwrap())
        .collect();
    assert_eq!(steps, ["compact-tools", "filter", "trim"]);
    assert_eq!(c["steps"][2]["tokens"], c["after"]["tokens"]);
    let changes = c["changes"].as_array().unwrap();
    assert!(
        changes.iter().all(|ch| ch["step"].is_string()),
        "{changes:?}"
    );
    for step in ["filter", "compact-tools", "trim"] {
        assert!(
            changes.iter().any(|ch| ch["step"] == step),
            "no change from {step}"
        );
    }
    // Indices name input messages: none is named twice as removed.
    let mut removed: Vec<u64> = changes
        .iter()
        .filter(|ch| ch["action"] == "removed")
        .map(|ch| ch["index"].as_u64().unwrap())
        .collect();
    let n = removed.len();
    removed.sort_unstable();
    removed.dedup();
    assert_eq!(removed.len(), n);
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn then_stats_shows_the_result() {
    ctxclean()
        .args(["trim", "--max-tokens", "300", "then", "stats"])
        .arg(fixture("written/analyst_session.json"))
        .assert()
        .success()
        .stdout(predicate::str::starts_with("{"))
        .stderr(predicate::str::contains("  total ").and(predicate::str::contains("(o200k_base)")));
    let dir = temp_dir("chain-stats");
    let report = dir.join("r.json");
    ctxclean()
        .args([
            "trim",
            "--max-tokens",
            "300",
            "then",
            "stats",
            "--json",
            "--report",
        ])
        .arg(&report)
        .arg(fixture("written/analyst_session.json"))
        .assert()
        .success();
    let r: Value = serde_json::from_slice(&fs::read(&report).unwrap()).unwrap();
    assert_eq!(r["stats"]["total"]["tokens"], r["total"]["after"]["tokens"]);
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn shared_flags_stand_in_any_step() {
    let dir = temp_dir("chain-shared");
    for n in ["a.json", "b.json"] {
        fs::copy(fixture("written/two_queries.json"), dir.join(n)).unwrap();
    }
    // --in-place in the first step, inputs after the last: each input is
    // rewritten once (its backup is the input, not an intermediate).
    let original = fs::read(dir.join("a.json")).unwrap();
    ctxclean()
        .args([
            "filter",
            "--previous-cycles",
            "--in-place",
            "--backup",
            ".bak",
            "then",
            "trim",
            "--max-tokens",
            "40",
        ])
        .arg(&dir)
        .assert()
        .success();
    assert_eq!(fs::read(dir.join("a.json.bak")).unwrap(), original);
    let piped = {
        let first = ctxclean()
            .args(["filter", "--previous-cycles", "-q"])
            .write_stdin(original.clone())
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        ctxclean()
            .args(["trim", "--max-tokens", "40", "-q"])
            .write_stdin(first)
            .assert()
            .success()
            .get_output()
            .stdout
            .clone()
    };
    assert_eq!(fs::read(dir.join("a.json")).unwrap(), piped);
    // Standard input, and --out-dir in the middle step.
    ctxclean()
        .args([
            "filter",
            "--previous-cycles",
            "then",
            "trim",
            "--max-tokens",
            "40",
        ])
        .write_stdin(original.clone())
        .assert()
        .success()
        .stdout(piped.clone());
    let out = dir.join("out");
    fs::remove_file(dir.join("a.json.bak")).unwrap();
    fs::remove_file(dir.join("b.json.bak")).unwrap();
    ctxclean()
        .args(["filter", "--previous-cycles", "then", "--out-dir"])
        .arg(&out)
        .args(["trim", "--max-tokens", "40"])
        .arg(dir.join("a.json"))
        .assert()
        .code(2); // `then --out-dir` is not a command
    ctxclean()
        .args(["filter", "--previous-cycles", "--out-dir"])
        .arg(&out)
        .args(["then", "trim", "--max-tokens", "40"])
        .arg(dir.join("a.json"))
        .assert()
        .success();
    assert!(out.join("a.json").is_file());
    // -o in the last step.
    let o = dir.join("o.json");
    ctxclean()
        .args([
            "filter",
            "--previous-cycles",
            "then",
            "trim",
            "--max-tokens",
            "40",
            "-o",
        ])
        .arg(&o)
        .arg(dir.join("a.json"))
        .assert()
        .success();
    assert_eq!(fs::read(&o).unwrap(), fs::read(out.join("a.json")).unwrap());
    // The same flag twice with different values, a step that is not a transform.
    ctxclean()
        .args([
            "filter",
            "--previous-cycles",
            "--tokenizer",
            "cl100k_base",
            "then",
            "trim",
            "--max-tokens",
            "40",
        ])
        .args(["--tokenizer", "o200k_base"])
        .arg(dir.join("a.json"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--tokenizer given twice"));
    ctxclean()
        .args(["filter", "--previous-cycles", "then", "validate"])
        .arg(dir.join("a.json"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("validate cannot be a step"));
    ctxclean()
        .args(["stats", "then", "trim", "--max-tokens", "40"])
        .arg(dir.join("a.json"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("stats may end a chain"));
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn recipes_run_print_save_and_locate_errors() {
    let dir = temp_dir("chain-recipes");
    let recipe = fixture("../examples/clean-agent-logs.toml");
    let input = fixture("written/analyst_session.json");
    // apply = the chain typed out.
    let applied = ctxclean()
        .arg("apply")
        .arg(&recipe)
        .arg(&input)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let printed = ctxclean()
        .args(["apply", "--print-chain"])
        .arg(&recipe)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let line = String::from_utf8(printed).unwrap();
    assert_eq!(
        line.trim(),
        "ctxclean filter --previous-cycles then compact-tools --keep-last 2 --max-result-tokens 200 then trim --max-tokens 8000"
    );
    let words: Vec<&str> = line.split_whitespace().skip(1).collect();
    let typed = ctxclean()
        .args(&words)
        .arg(&input)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    assert_eq!(applied, typed);
    // --save-recipe writes a recipe that runs the same chain.
    let saved = dir.join("saved.toml");
    let direct = ctxclean()
        .args([
            "filter",
            "--previous-cycles",
            "--exclude-tools",
            "a,b",
            "then",
            "trim",
            "--max-tokens",
            "300",
        ])
        .args(["--end-on", "user,tool", "--allow-partial", "--save-recipe"])
        .arg(&saved)
        .arg(&input)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let again = ctxclean()
        .arg("apply")
        .arg(&saved)
        .arg(&input)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    assert_eq!(direct, again);
    // Errors name the file, the line and the key.
    for (text, want) in [
        (
            "[[step]]\nop = \"trim\"\nmax-tokns = 5\n",
            ":3: unknown key \"max-tokns\" for trim",
        ),
        (
            "[[step]]\nop = \"trim\"\nmax-tokens = \"many\"\n",
            ":3: max-tokens: invalid value 'many'",
        ),
        // A negative value is the key's value, refused at its line (it
        // read as a flag of its own, named at the step's).
        (
            "[[step]]\nop = \"trim\"\nmax-tokens = -3\n",
            ":3: max-tokens: invalid value '-3'",
        ),
        (
            "[[step]]\nop = \"filter\"\n\ninclude-roles = [\"user\", \"-x\"]\n",
            ":4: include-roles: invalid value '-x'",
        ),
        ("[[step]]\nop = \"trim\"\nmax-tokens =\n", ":3: "),
        ("[[step]]\nop = \"trimm\"\n", ":2: unknown op \"trimm\""),
        (
            "tokenizer = \"x\"\n[[step]]\nop = \"trim\"\n",
            ":1: unknown key \"tokenizer\"",
        ),
        (
            "[[step]]\nop = \"filter\"\nprevious-cycles = 3\n",
            ":3: previous-cycles = 3: expected true or false",
        ),
        ("[[step]]\nmax-tokens = 3\n", ":1: step 1 has no op"),
    ] {
        let bad = dir.join("bad.toml");
        fs::write(&bad, text).unwrap();
        ctxclean()
            .arg("apply")
            .arg(&bad)
            .arg(&input)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(format!("{}{want}", bad.display())));
    }
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_saved_recipe_never_goes_over_an_input_or_the_output() {
    // Issue 29: `--in-place --save-recipe d/a.json` overwrote an input with
    // the recipe; `-o out.json --save-recipe out.json` lost the recipe.
    let dir = temp_dir("recipe-collisions");
    let input = dir.join("d").join("a.json");
    std::fs::create_dir_all(input.parent().unwrap()).unwrap();
    let original = std::fs::read(fixture("functionary/test_case.json")).unwrap();
    std::fs::write(&input, &original).unwrap();
    let out = ctxclean()
        .current_dir(&dir)
        .args(["trim", "--max-tokens", "100", "d", "--in-place"])
        .args(["--save-recipe", "d/a.json"])
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(err.contains("--save-recipe d/a.json is the input"), "{err}");
    assert_eq!(std::fs::read(&input).unwrap(), original);
    let out = ctxclean()
        .current_dir(&dir)
        .args(["trim", "--max-tokens", "100", "d/a.json", "-o", "out.json"])
        .args(["--save-recipe", "./out.json"])
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(err.contains("is the output out.json"), "{err}");
    assert!(!dir.join("out.json").exists(), "nothing is written");
    // Apart, both are written.
    ctxclean()
        .current_dir(&dir)
        .args([
            "trim",
            "-q",
            "--max-tokens",
            "100",
            "d/a.json",
            "-o",
            "out.json",
        ])
        .args(["--save-recipe", "r.toml"])
        .assert()
        .success();
    assert!(std::fs::read_to_string(dir.join("r.toml"))
        .unwrap()
        .contains("op = \"trim\""));
    assert!(dir.join("out.json").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A saved recipe gives its run's bytes again, shared flags that change the
/// output included (`--model`, `--to`, `--strict`; issue 38: a recipe saved
/// from `trim --max-tokens 80% --model gpt-4o` exited 2).
#[test]
fn a_saved_recipe_reproduces_its_run() {
    let dir = temp_dir("recipe-reproduces");
    let analyst = "fixtures/written/analyst_session.json";
    let chains: [(&[&str], &str); 8] = [
        (
            &[
                "filter",
                "--previous-cycles",
                "then",
                "compact-tools",
                "--keep-last",
                "2",
                "then",
                "trim",
                "--max-tokens",
                "8000",
            ],
            analyst,
        ),
        (
            &[
                "filter",
                "--previous-cycles",
                "then",
                "trim",
                "--max-tokens",
                "500",
            ],
            analyst,
        ),
        (
            &["trim", "--max-tokens", "80%", "--model", "gpt-4o"],
            analyst,
        ),
        (
            &["trim", "--max-tokens", "5%", "--model", "gpt-4o"],
            analyst,
        ),
        (&["convert", "--to", "anthropic"], analyst),
        (
            &[
                "compact-tools",
                "--keep-last",
                "1",
                "--max-result-tokens",
                "50",
                "--tokenizer",
                "cl100k_base",
            ],
            analyst,
        ),
        (&["summarize", "--threshold", "300", "--keep", "4"], analyst),
        (
            &[
                "filter",
                "--exclude-roles",
                "system",
                "--drop-thinking",
                "then",
                "convert",
                "--to",
                "openai",
            ],
            "fixtures/claude-code/parallel-tasks.jsonl",
        ),
    ];
    for (k, (chain, input)) in chains.iter().enumerate() {
        let recipe = dir.join(format!("r{k}.toml"));
        let run = ctxclean()
            .args(*chain)
            .arg("-q")
            .arg("--save-recipe")
            .arg(&recipe)
            .arg(input)
            .assert()
            .success();
        let again = ctxclean()
            .arg("apply")
            .arg(&recipe)
            .args(["-q", input])
            .assert()
            .success();
        assert!(
            run.get_output().stdout == again.get_output().stdout,
            "{}: {}",
            chain.join(" "),
            std::fs::read_to_string(&recipe).unwrap()
        );
    }
}

/// A recipe never says where output goes (issue 38: `in-place = true` in a
/// recipe rewrote the input of a plain `apply`).
#[test]
fn a_recipe_cannot_choose_where_output_goes() {
    let dir = temp_dir("recipe-output-keys");
    let input = dir.join("a.json");
    let original = std::fs::read(fixture("written/analyst_session.json")).unwrap();
    std::fs::write(&input, &original).unwrap();
    for key in [
        "in-place = true",
        "out-dir = \"o\"",
        "output = \"x.json\"",
        "backup = \".b\"",
        "report = \"r.json\"",
        "report_jsonl = \"r.jsonl\"",
    ] {
        let recipe = dir.join("r.toml");
        std::fs::write(
            &recipe,
            format!("[[step]]\nop = \"trim\"\nmax-tokens = 50\n{key}\n"),
        )
        .unwrap();
        let out = ctxclean()
            .arg("apply")
            .arg(&recipe)
            .arg(&input)
            .assert()
            .code(2);
        let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
        assert!(
            err.contains("r.toml:4:") && err.contains("says where output goes"),
            "{err}"
        );
    }
    assert_eq!(std::fs::read(&input).unwrap(), original);
    assert_eq!(
        std::fs::read_dir(&*dir).unwrap().count(),
        2,
        "nothing else written"
    );
}
