//! Operations over the transcript model, composed in a [`Pipeline`].
//!
//! An operation is a pure function from a conversation (plus its spec and
//! the tokenizer) to a new conversation and the list of changes it made. It
//! does no I/O and prints nothing; the pipeline counts tokens before and
//! after and builds the report, so accounting stays apart from transforming.
//!
//! Every operation keeps the tool-pair invariant (see [`crate::pairs`]).

pub mod compact_tools;
pub mod filter;
pub mod summarize;
pub mod trim;

use serde_json::{Map, Value};

use crate::format::{Document, Format};
use crate::report::{Change, ConversationReport};
use crate::stats::Count;
use crate::tokens::Tokenizer;
use crate::transcript::Conversation;

/// What an operation returns.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The conversation after the operation.
    pub conversation: Conversation,
    /// Every message removed, modified or added, with the rule that did it.
    pub changes: Vec<Change>,
    /// Operation-specific flags for the report (`over_budget`, …).
    pub flags: Map<String, Value>,
}

impl Outcome {
    /// An outcome with no flags.
    pub fn new(conversation: Conversation, changes: Vec<Change>) -> Outcome {
        Outcome {
            conversation,
            changes,
            flags: Map::new(),
        }
    }
}

/// One step of a pipeline.
pub trait Operation: Send + Sync {
    /// Applies the operation to one conversation.
    fn apply(&self, conv: Conversation, tok: &Tokenizer) -> Outcome;

    /// Applies the operation to a conversation that will be written as
    /// `format`, for operations whose output must suit that format's API
    /// (Anthropic and Gemini want the user first). By default, [`Operation::apply`].
    fn apply_for(&self, conv: Conversation, tok: &Tokenizer, format: Format) -> Outcome {
        let _ = format;
        self.apply(conv, tok)
    }

    /// Whether the operation counts tokens (so the vocabulary is worth
    /// loading ahead of time).
    fn counts_tokens(&self) -> bool {
        true
    }
}

/// Whether the API a format's transcripts go to requires the first message
/// after the system instructions to be the user's.
pub fn user_first(format: Format) -> bool {
    crate::validate::Provider::for_format(format) != crate::validate::Provider::OpenAi
}

/// Operations applied in order to every conversation of a document.
#[derive(Default)]
pub struct Pipeline {
    ops: Vec<Box<dyn Operation>>,
}

impl Pipeline {
    /// An empty pipeline: conversations pass through unchanged.
    pub fn new() -> Pipeline {
        Pipeline::default()
    }

    /// Whether any operation counts tokens.
    pub fn counts_tokens(&self) -> bool {
        self.ops.iter().any(|op| op.counts_tokens())
    }

    /// Adds an operation at the end.
    pub fn push(&mut self, op: impl Operation + 'static) -> &mut Pipeline {
        self.ops.push(Box::new(op));
        self
    }

    /// Runs the pipeline over every conversation of `doc`, in place, and
    /// reports what changed in each. With `account` false, tokens before and
    /// after are not counted (they read 0): for runs whose report nobody
    /// reads, where counting would be most of the work.
    pub fn run(
        &self,
        doc: &mut Document,
        tok: &Tokenizer,
        account: bool,
    ) -> Vec<ConversationReport> {
        let source = doc.source.clone();
        let format = doc.format.name().to_string();
        let convs = std::mem::take(&mut doc.conversations);
        let mut reports = Vec::with_capacity(convs.len());
        for (index, conv) in convs.into_iter().enumerate() {
            let measure = |c: &Conversation| {
                if account {
                    count(c, tok)
                } else {
                    Count {
                        messages: c.messages.len(),
                        tokens: 0,
                    }
                }
            };
            let before = measure(&conv);
            let mut changes = Vec::new();
            let mut flags = Map::new();
            let mut conv = conv;
            for op in &self.ops {
                let out = op.apply_for(conv, tok, doc.format);
                conv = out.conversation;
                changes.extend(out.changes);
                flags.extend(out.flags);
            }
            reports.push(ConversationReport {
                source: source.clone(),
                index: doc.first_conversation + index,
                format: format.clone(),
                before,
                after: measure(&conv),
                changes,
                flags,
            });
            doc.conversations.push(conv);
        }
        reports
    }
}

/// Messages and tokens of a conversation.
pub fn count(conv: &Conversation, tok: &Tokenizer) -> Count {
    Count {
        messages: conv.messages.len(),
        tokens: tok.count_conversation(conv),
    }
}

impl Operation for trim::TrimSpec {
    fn apply(&self, conv: Conversation, tok: &Tokenizer) -> Outcome {
        trim::trim(conv, self, tok)
    }

    /// For Anthropic and Gemini transcripts, `--start-on user` unless
    /// `--start-on` was given: those APIs reject a conversation whose first
    /// message after the system instructions is not the user's.
    fn apply_for(&self, conv: Conversation, tok: &Tokenizer, format: Format) -> Outcome {
        if user_first(format) && self.start_on.is_none() && self.strategy == trim::Strategy::Last {
            let spec = trim::TrimSpec {
                start_on: Some(vec![crate::transcript::Role::User]),
                ..self.clone()
            };
            return trim::trim(conv, &spec, tok);
        }
        trim::trim(conv, self, tok)
    }
}

impl Operation for filter::FilterSpec {
    fn apply(&self, conv: Conversation, _tok: &Tokenizer) -> Outcome {
        filter::filter(conv, self)
    }

    fn counts_tokens(&self) -> bool {
        false
    }
}

impl Operation for compact_tools::CompactSpec {
    fn apply(&self, conv: Conversation, tok: &Tokenizer) -> Outcome {
        compact_tools::compact_tools(conv, self, tok)
    }
}

impl Operation for summarize::Summarize {
    fn apply(&self, conv: Conversation, tok: &Tokenizer) -> Outcome {
        summarize::summarize(
            conv,
            &self.spec,
            self.engine.as_ref(),
            self.cache.as_ref(),
            tok,
        )
    }

    /// For Anthropic and Gemini transcripts, the summary becomes a user
    /// message when the recent messages do not start with the user's.
    fn apply_for(&self, conv: Conversation, tok: &Tokenizer, format: Format) -> Outcome {
        let spec = summarize::SummarizeSpec {
            user_first: user_first(format),
            ..self.spec.clone()
        };
        summarize::summarize(conv, &spec, self.engine.as_ref(), self.cache.as_ref(), tok)
    }
}
