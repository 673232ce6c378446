//! What ctxclean writes, ctxclean reads back as the same format: for every
//! fixture and every operation, `format(output) == format(input)`, and the
//! output reads without `--from` (issue 13).

use std::path::{Path, PathBuf};

use ctxclean::format::{read_document, write_document, ReadOptions};
use ctxclean::ops::compact_tools::CompactSpec;
use ctxclean::ops::filter::FilterSpec;
use ctxclean::ops::summarize::{Summarize, SummarizeSpec};
use ctxclean::ops::trim::{Strategy, TrimSpec};
use ctxclean::ops::Pipeline;
use ctxclean::summary::extractive::Extractive;
use ctxclean::tokens::{Encoding, Tokenizer};
use ctxclean::transcript::Role;

/// Every readable fixture (the malformed suite and the reference counts
/// are not transcripts).
pub(crate) fn fixtures() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().collect();
        entries.sort_by_key(|e| e.path());
        for e in entries {
            let p = e.path();
            if p.is_dir() {
                if !p.ends_with("malformed") {
                    walk(&p, out);
                }
            } else if matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("json" | "jsonl" | "traj")
            ) && !p.ends_with("tokens/expected.json")
                && !p.ends_with("tokens/hf-expected.json")
                && !p.ends_with("tokens/hf-chatml.json")
            {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures"),
        &mut out,
    );
    out
}

/// One pipeline per operation, with flags that change real transcripts.
fn pipelines() -> Vec<(&'static str, Pipeline)> {
    let mut out = Vec::new();
    let mut p = Pipeline::new();
    p.push(FilterSpec {
        previous_cycles: true,
        ..FilterSpec::default()
    });
    out.push(("filter --previous-cycles", p));
    let mut p = Pipeline::new();
    p.push(FilterSpec {
        exclude_tool_calls: true,
        drop_thinking: true,
        ..FilterSpec::default()
    });
    out.push(("filter --exclude-tool-calls --drop-thinking", p));
    let mut p = Pipeline::new();
    p.push(FilterSpec {
        exclude_roles: vec![Role::System, Role::Developer],
        ..FilterSpec::default()
    });
    out.push(("filter --exclude-roles system,developer", p));
    // Every role-specific trace gone: text is all that is left.
    let mut p = Pipeline::new();
    p.push(FilterSpec {
        exclude_roles: vec![Role::System, Role::Developer],
        exclude_tool_calls: true,
        drop_thinking: true,
        strip_processed_images: true,
        ..FilterSpec::default()
    });
    out.push(("filter --exclude-roles system,developer --exclude-tool-calls --drop-thinking --strip-processed-images", p));
    let mut p = Pipeline::new();
    p.push(CompactSpec {
        keep_last: 0,
        max_result_tokens: 0,
        ..CompactSpec::default()
    });
    out.push(("compact-tools --keep-last 0 --max-result-tokens 0", p));
    for max in [40, 400] {
        let mut p = Pipeline::new();
        p.push(TrimSpec {
            max_tokens: Some(max),
            strategy: Strategy::Last,
            ..TrimSpec::default()
        });
        out.push((
            if max == 40 {
                "trim --max-tokens 40"
            } else {
                "trim --max-tokens 400"
            },
            p,
        ));
    }
    let mut p = Pipeline::new();
    p.push(Summarize {
        spec: SummarizeSpec {
            threshold: 50,
            keep: 2,
            ..SummarizeSpec::default()
        },
        engine: Box::new(Extractive),
        cache: None,
    });
    out.push(("summarize --threshold 50 --keep 2", p));
    out
}

#[test]
fn every_output_reads_back_as_its_input_format() {
    let tok = Tokenizer::new(Encoding::O200kBase).unwrap();
    let mut failures = Vec::new();
    let mut checked = 0;
    for path in fixtures() {
        let name = path
            .strip_prefix(env!("CARGO_MANIFEST_DIR"))
            .unwrap()
            .display()
            .to_string();
        let bytes = std::fs::read(&path).unwrap();
        let opts = ReadOptions {
            skip_invalid: true,
            ..ReadOptions::default()
        };
        let Ok(doc) = read_document(&name, bytes, &opts) else {
            continue; // fixtures that need --from are tested elsewhere
        };
        for (op, pipeline) in pipelines() {
            let mut d = doc.clone();
            pipeline.run(&mut d, &tok, false);
            let mut out = Vec::new();
            write_document(&d, &mut out).unwrap();
            checked += 1;
            match read_document("out", out, &opts) {
                Ok(back) if back.source_format == doc.source_format => {}
                Ok(back) => failures.push(format!(
                    "{name} | {op}: read back as {}, not {}",
                    back.source_format, doc.source_format
                )),
                Err(e) => failures.push(format!("{name} | {op}: {e}")),
            }
        }
    }
    assert!(checked > 300, "only {checked} outputs checked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
