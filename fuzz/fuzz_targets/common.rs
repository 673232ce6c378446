//! Checks shared by the targets.

use ctxclean_core::format::{Document, Format};
use ctxclean_core::stats::{stats, StatsSpec};
use ctxclean_core::tokens::{Encoding, Tokenizer};
use ctxclean_core::validate::{validate, Provider};

/// The request formats the proxy reads, for a target's first byte to pick.
#[allow(dead_code)]
pub const REQUEST_FORMATS: [Format; 4] = [
    Format::OpenAi,
    Format::Anthropic,
    Format::Responses,
    Format::Gemini,
];

/// Stats (approx tokenizer: fast) and validation run on every conversation.
#[allow(dead_code)]
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
