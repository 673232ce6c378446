//! Checks shared by the targets.

use ctxclean::format::Document;
use ctxclean::stats::{stats, StatsSpec};
use ctxclean::tokens::{Encoding, Tokenizer};
use ctxclean::validate::{validate, Provider};

/// Stats (approx tokenizer: fast) and validation run on every conversation.
pub fn check(doc: &Document) {
    let tok = Tokenizer::new(Encoding::Approx).expect("approx needs no data");
    let spec = StatsSpec {
        per_message: true,
        tools: true,
        ..StatsSpec::default()
    };
    let _ = stats(doc, &tok, &spec);
    for conv in &doc.conversations {
        for p in [Provider::OpenAi, Provider::Anthropic, Provider::Gemini] {
            let _ = validate(conv, doc.source_format, p);
        }
    }
}
