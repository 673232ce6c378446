//! Every operation on whatever reads: no panic, a conversation whose tool
//! pairs were valid stays valid, and none is emptied in silence.
#![no_main]

use ctxclean_core::format::{read_document, write_document, ReadOptions};
use ctxclean_core::ops::compact_tools::CompactSpec;
use ctxclean_core::ops::filter::FilterSpec;
use ctxclean_core::ops::summarize::{Summarize, SummarizeSpec};
use ctxclean_core::ops::trim::TrimSpec;
use ctxclean_core::ops::Pipeline;
use ctxclean_core::pairs::pair_problems;
use ctxclean_core::report::Action;
use ctxclean_core::summary::extractive::Extractive;
use ctxclean_core::tokens::{Encoding, Tokenizer};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&flags, input)) = data.split_first() else {
        return;
    };
    let Ok(mut doc) = read_document("fuzz", input.to_vec(), &ReadOptions::default()) else {
        return;
    };
    let valid_before: Vec<bool> = doc
        .conversations
        .iter()
        .map(|c| pair_problems(&c.messages).is_empty())
        .collect();
    let says = |c: &ctxclean_core::transcript::Conversation| {
        c.messages.iter().any(|m| !m.role.is_instruction())
    };
    let said_before: Vec<bool> = doc.conversations.iter().map(says).collect();
    let tok = Tokenizer::new(Encoding::Approx).expect("approx needs no data");
    let mut pipeline = Pipeline::new();
    pipeline.push(FilterSpec {
        previous_cycles: flags & 1 != 0,
        strip_processed_images: flags & 2 != 0,
        dedupe_tool_results: flags & 4 != 0,
        drop_thinking: flags & 8 != 0,
        // The rules that rewrite a call's arguments, on pairs of the bits.
        moved_past: flags & 10 == 10,
        retried_failures: flags & 5 == 5,
        read_again: flags & 12 == 12,
        ..FilterSpec::default()
    });
    pipeline.push(CompactSpec {
        max_result_tokens: (flags >> 4) as usize,
        keep_last: (flags & 3) as usize,
        ..CompactSpec::default()
    });
    pipeline.push(TrimSpec {
        max_tokens: Some(20 + 10 * (flags as usize)),
        allow_partial: flags & 16 != 0,
        ..TrimSpec::default()
    });
    pipeline.push(Summarize {
        spec: SummarizeSpec {
            threshold: (flags as usize) * 4,
            keep: 1 + (flags & 7) as usize,
            ..SummarizeSpec::default()
        },
        engine: Box::new(Extractive),
        cache: None,
    });
    if flags & 32 != 0 {
        // An operation after summarize: its changes to the summary are
        // folded into the summary's `added` change.
        pipeline.push(TrimSpec {
            max_tokens: Some(10 + 5 * (flags as usize)),
            allow_partial: flags & 64 != 0,
            ..TrimSpec::default()
        });
    }
    let reports = pipeline.run(&mut doc, &tok, true);
    for (conv, report) in doc.conversations.iter().zip(&reports) {
        let added: Vec<usize> = report
            .changes
            .iter()
            .filter(|c| c.action == Action::Added)
            .map(|c| c.index)
            .collect();
        let new: Vec<usize> = (0..conv.messages.len())
            .filter(|&i| conv.messages[i].origin.is_none())
            .collect();
        assert_eq!(added, new, "added changes at the added messages");
        assert!(report.changes.iter().all(|c| !c.of_added));
    }
    for ((conv, report), said) in doc.conversations.iter().zip(&reports).zip(said_before) {
        assert!(
            !said || says(conv) || report.flags.contains_key("emptied"),
            "a conversation emptied in silence"
        );
    }
    for (conv, was_valid) in doc.conversations.iter().zip(valid_before) {
        if was_valid {
            let problems = pair_problems(&conv.messages);
            assert!(problems.is_empty(), "pairs broken: {problems:?}");
        }
    }
    let mut out = Vec::new();
    write_document(&doc, &mut out).expect("writing to memory");
});
