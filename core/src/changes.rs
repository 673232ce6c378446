//! What an operation did to a conversation: its changes, message by
//! message, and its counts before and after. The operations make these;
//! [`crate::report`] renders and sums them.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::transcript::Message;

/// What happened to a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// The message is gone.
    Removed,
    /// The message is still there, changed.
    Modified,
    /// An operation added the message.
    Added,
}

impl Action {
    /// The action in a word (`removed`, `modified`, `added`).
    pub fn verb(self) -> &'static str {
        match self {
            Action::Removed => "removed",
            Action::Modified => "modified",
            Action::Added => "added",
        }
    }
}

/// One change to one message.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Change {
    /// The message's position in the input (for `added`, in the output).
    pub index: usize,
    /// What happened to it.
    pub action: Action,
    /// The rule that did it.
    pub reason: String,
    /// In a chain, the step that made the change (`filter`, `trim`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// Operation-specific details (tool name, tokens before and after, …).
    #[serde(flatten)]
    pub detail: Map<String, Value>,
    /// Whether the message was added by an earlier operation of the same
    /// pipeline, `index` then being its position in this operation's input.
    /// [`Pipeline::run`](crate::ops::Pipeline::run) folds such changes into
    /// the `added` change, so reports never show them.
    #[serde(skip)]
    pub of_added: bool,
}

impl Change {
    /// A change without details.
    pub fn new(index: usize, action: Action, reason: impl Into<String>) -> Change {
        Change {
            index,
            action,
            reason: reason.into(),
            step: None,
            detail: Map::new(),
            of_added: false,
        }
    }

    /// A change to `message`, found at `position` in the operation's input:
    /// indexed by its position in the pipeline's input, or marked
    /// [`of_added`](Change::of_added) when an earlier operation added it.
    pub fn of(
        message: &Message,
        position: usize,
        action: Action,
        reason: impl Into<String>,
    ) -> Change {
        let mut c = Change::new(message.input_index().unwrap_or(position), action, reason);
        c.of_added = message.origin.is_none();
        c
    }
}

/// What a command did to one conversation.
#[derive(Clone, Debug, Serialize)]
pub struct ConversationReport {
    /// The input's path, or `-`.
    pub source: String,
    /// The conversation's position in its input.
    pub index: usize,
    /// The format it was read as.
    pub format: String,
    /// Messages and tokens before.
    pub before: Count,
    /// Messages and tokens after.
    pub after: Count,
    /// Every message removed, modified or added, with the rule that did it.
    pub changes: Vec<Change>,
    /// What reading had to decide (a dangling reference followed another way, …).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// What a conversion lost of the request as a whole (its model, fields,
    /// tools); losses of messages are changes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lost: Vec<String>,
    /// In a chain, messages and tokens after each step, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<StepCount>,
    /// Operation-specific flags (`over_budget`, `fallback`, …).
    #[serde(flatten)]
    pub flags: Map<String, Value>,
    /// When only what changed was counted (no report asked for): the
    /// tokens the changes made, added less removed.
    #[serde(skip)]
    pub delta: Option<i64>,
}

/// One line of `--report-jsonl`: what a command did to one conversation,
/// with the same keys on every line (`notes`, `lost`, `steps` are there
/// when empty), so that the rows of many runs load as one table.
#[derive(Clone, Debug, Serialize)]
pub struct ReportRow<'a> {
    /// The subcommand, or the steps of a chain (`filter→trim`).
    pub command: &'a str,
    /// The input's path, or `-`.
    pub source: &'a str,
    /// The conversation's position in its input.
    pub index: usize,
    /// The format it was read as.
    pub format: &'a str,
    /// The tokenizer counts were made with.
    pub tokenizer: &'a str,
    /// Messages and tokens before.
    pub before: Count,
    /// Messages and tokens after.
    pub after: Count,
    /// Messages removed.
    pub removed: usize,
    /// Messages modified.
    pub modified: usize,
    /// Messages added.
    pub added: usize,
    /// Every change, as in `--report`.
    pub changes: &'a [Change],
    /// What reading had to decide.
    pub notes: &'a [String],
    /// What a conversion lost of the request as a whole.
    pub lost: &'a [String],
    /// In a chain, messages and tokens after each step.
    pub steps: &'a [StepCount],
    /// Operation-specific flags (`over_budget`, `emptied`, `fallback`, …).
    #[serde(flatten)]
    pub flags: &'a Map<String, Value>,
}

impl ConversationReport {
    /// Its `--report-jsonl` row.
    pub fn row<'a>(&'a self, command: &'a str, tokenizer: &'a str) -> ReportRow<'a> {
        let n = |a: Action| self.changes.iter().filter(|c| c.action == a).count();
        ReportRow {
            command,
            source: &self.source,
            index: self.index,
            format: &self.format,
            tokenizer,
            before: self.before,
            after: self.after,
            removed: n(Action::Removed),
            modified: n(Action::Modified),
            added: n(Action::Added),
            changes: &self.changes,
            notes: &self.notes,
            lost: &self.lost,
            steps: &self.steps,
            flags: &self.flags,
        }
    }
}

/// Messages and tokens after one step of a chain.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct StepCount {
    /// The step's operation.
    pub step: String,
    /// Messages after it.
    pub messages: usize,
    /// Tokens after it.
    pub tokens: usize,
}

/// Message count and tokens of a group of messages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Count {
    /// Number of messages.
    pub messages: usize,
    /// Their tokens.
    pub tokens: usize,
}
