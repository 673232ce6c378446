//! Reading and writing transcripts: detection of the layout (JSON document
//! or JSONL) and of the message dialect, and the writers that put a
//! [`Document`] back in the shape it came in.
//!
//! The seam for formats: a dialect module (`openai`) turns one message object
//! into a [`Message`](crate::transcript::Message) and back. Layouts (a JSON
//! object with `messages`, a bare array, JSONL of messages, JSONL of
//! conversations) are handled here, once, for every dialect.

mod chain;
mod convert;
mod detect;
pub mod dialect;
mod embedded;
mod keys;
pub(crate) mod numbers;
mod placeholders;
pub mod read;
mod recall;
mod rewritten;
pub(crate) mod split;
pub mod write;

mod agents;
mod datasets;
mod exports;
mod requests;
pub(crate) use agents::{
    agents_sdk, amazon_q, claude_code, cline, continue_dev, copilot_chat, copilot_journal, crush,
    cursor, droid, goose, grok_build, grok_cli, kimi_code, letta, opencode, openhands, pi,
    qwen_code, zed,
};
pub(crate) use datasets::{hf_chat, langchain, sharegpt};
pub(crate) use exports::{apps, branched, chatgpt, librechat, open_webui};
pub(crate) use requests::{
    answer, anthropic, bedrock, gemini, openai, request, responses, stream, wrap,
};

use std::fmt;
use std::str::FromStr;

pub use dialect::Loss;
/// The request body a wrapper holds (a batch line's `body`, a proxy
/// capture's `request.body`), or the object itself when it wraps none.
pub use requests::wrap::body as wrapped_body;

/// Whether a reading error is that no format (or more than one) fits.
pub fn is_undetected(e: &crate::error::InputError) -> bool {
    e.message.starts_with(detect::UNDETECTED)
}
pub use read::{read_document, read_value, sniff_jsonl, ChunkStart, ReadOptions, BOM};
pub use recall::Recall;
pub use write::{write_document, write_document_into, RecordOut, Written};

use serde_json::{Map, Value};

use crate::transcript::Conversation;
use dialect::Dialect;

/// The dialect that reads and writes a format.
pub(crate) fn dialect(format: Format) -> &'static dyn Dialect {
    match format {
        Format::OpenAi => &openai::OpenAi,
        Format::Anthropic => &anthropic::Anthropic,
        Format::LangChain => &langchain::LangChain,
        Format::Responses => &responses::Responses,
        Format::Codex => &responses::Codex,
        Format::ShareGpt => &sharegpt::ShareGpt,
        Format::ClaudeCode => &claude_code::ClaudeCode,
        Format::Gemini => &gemini::Gemini,
        Format::OpenWebUi => &open_webui::OpenWebUi,
        Format::Copilot => &apps::Copilot,
        Format::ClaudeAi => &apps::ClaudeAi,
        Format::ChatGpt => &chatgpt::ChatGpt,
        Format::Grok => &apps::Grok,
        Format::AiStudio => &apps::AiStudio,
        Format::HfChat => &hf_chat::HfChat,
        Format::LibreChat => &librechat::LibreChat,
        Format::Branched => &branched::Branched,
        Format::OpenHands => &openhands::OpenHands,
        Format::Cline => &cline::Cline,
        Format::Pi => &pi::Pi,
        Format::Droid => &droid::Droid,
        Format::Cursor => &cursor::Cursor,
        Format::CursorIde => &cursor::CursorIde,
        Format::Zed => &zed::Zed,
        Format::Continue => &continue_dev::Continue,
        Format::AmazonQ => &amazon_q::AmazonQ,
        Format::OpenCode => &opencode::OpenCode,
        Format::Crush => &crush::Crush,
        Format::GrokCli => &grok_cli::GrokCli,
        Format::GrokBuild => &grok_build::GrokBuild,
        Format::QwenCode => &qwen_code::QwenCode,
        Format::KimiCode => &kimi_code::KimiCode,
        Format::Goose => &goose::Goose,
        Format::CopilotChat => &copilot_chat::CopilotChat,
        Format::Letta => &letta::Letta,
        Format::AgentsSdk => &agents_sdk::AgentsSdk,
        Format::Bedrock => &bedrock::Bedrock,
    }
}

/// The records of `conv`, read as `format`, that are its agent's
/// compactions (Claude Code's `compact_boundary`, Codex's `compacted`), in
/// order; none for a format without them.
pub fn compactions(format: Format, conv: &Conversation) -> Vec<usize> {
    let Some(is) = dialect(format).compaction() else {
        return Vec::new();
    };
    conv.records
        .iter()
        .enumerate()
        .filter(|(_, r)| r.value.as_ref().is_some_and(|v| is(v)))
        .map(|(i, _)| i)
        .collect()
}

/// The transcript formats ctxclean reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// OpenAI Chat Completions messages (`role`, `content`, `tool_calls`, …).
    OpenAi,
    /// Anthropic Messages API requests (top-level `system`, content blocks).
    Anthropic,
    /// LangChain message dicts (`messages_to_dict`, `dumpd`).
    LangChain,
    /// OpenAI Responses API input items.
    Responses,
    /// OpenAI Codex CLI rollout JSONL.
    Codex,
    /// ShareGPT datasets (`conversations` of `{from, value}`).
    ShareGpt,
    /// Claude Code session JSONL.
    ClaudeCode,
    /// Gemini API `contents`, and Gemini CLI sessions.
    Gemini,
    /// Open WebUI chat exports.
    OpenWebUi,
    /// GitHub Copilot CLI session events.
    Copilot,
    /// Claude.ai data exports (`conversations.json`).
    ClaudeAi,
    /// ChatGPT data exports (`conversations.json`, a `mapping` tree).
    ChatGpt,
    /// Grok exports.
    Grok,
    /// Google AI Studio prompts.
    AiStudio,
    /// Hugging Face / TRL chat sets: `conversations` of role/content
    /// messages, preference rows (`chosen`/`rejected`).
    HfChat,
    /// LibreChat conversation exports (`messages` linked by `parentMessageId`).
    LibreChat,
    /// OpenHands event streams (trajectories and evaluation outputs).
    OpenHands,
    /// Cline and Roo Code tasks (`api_conversation_history.json`,
    /// `ui_messages.json`).
    Cline,
    /// pi coding-agent sessions (`type: session` header, `type: message`
    /// lines).
    Pi,
    /// OpenCode session exports (`info`, `messages` of `{info, parts}`).
    OpenCode,
    /// Crush sessions, read from its SQLite database (`.crush/crush.db`),
    /// each put together as `{session, messages}` of its rows.
    Crush,
    /// Grok CLI sessions, read from its SQLite database (`~/.grok/grok.db`),
    /// each put together as `{session, usage_events, messages}` of its rows
    /// (AI SDK messages).
    GrokCli,
    /// Qwen Code chat recordings (JSONL lines holding Gemini turns).
    QwenCode,
    /// Kimi Code wire logs (`agents/<agent>/wire.jsonl`: `context.*`
    /// records, a step of the model one record per piece).
    KimiCode,
    /// Goose sessions (JSONL: a header, then messages of content items)
    /// and `goose run` stream-json output.
    Goose,
    /// VS Code Copilot Chat sessions (`chatSessions/*.json`: `requests`
    /// with their tool-call rounds).
    CopilotChat,
    /// Letta agent files (`.af`): OpenAI-shaped messages, those in context.
    Letta,
    /// OpenAI Agents SDK run states (`RunState.to_json()`): Responses
    /// items, the input and what the run generated.
    AgentsSdk,
    /// Branched chat exports (`messages` of `{id, parentMessageId, role:
    /// "User"|"Claude", message}`): the chain of the last message.
    Branched,
    /// Factory Droid sessions (`~/.factory/sessions/`: pi's line frame,
    /// Anthropic messages) and `droid exec` stream-json output.
    Droid,
    /// Cursor agent transcripts (`agent-transcripts/*.jsonl`: `{role,
    /// message: {content}}` lines of Anthropic blocks, no results kept).
    Cursor,
    /// Cursor's chats as the editor keeps them (`state.vscdb`), each put
    /// together as `{composer, bubbles}` from its `cursorDiskKV` rows.
    CursorIde,
    /// Zed's agent threads (`threads/threads.db`), each put together as
    /// its payload (`{title, messages, …}`) and `row`.
    Zed,
    /// Continue sessions (`~/.continue/sessions/*.json`): `history` items,
    /// read as Continue sends them (context items, tool call states).
    Continue,
    /// Amazon Q Developer CLI conversations (a `/save`, or a value of its
    /// database's `conversations` table): `history` entries of `{user,
    /// assistant}`, read as the CLI sends them.
    AmazonQ,
    /// Grok Build sessions (xAI's `grok`): `chat_history.jsonl`, a line
    /// per item (`{type, content, tool_calls}`).
    GrokBuild,
    /// Amazon Bedrock Converse requests and responses (blocks of one key:
    /// `text`, `toolUse`, `toolResult`, …); read and written back, not a
    /// `--to` target.
    Bedrock,
}

impl Format {
    /// Every format, as `--from` and `--to` list them.
    pub const ALL: [Format; 37] = [
        Format::OpenAi,
        Format::Anthropic,
        Format::ClaudeCode,
        Format::Cline,
        Format::OpenWebUi,
        Format::LibreChat,
        Format::Branched,
        Format::LangChain,
        Format::Responses,
        Format::Bedrock,
        Format::Codex,
        Format::Pi,
        Format::Droid,
        Format::Cursor,
        Format::CursorIde,
        Format::Continue,
        Format::Zed,
        Format::AmazonQ,
        Format::OpenCode,
        Format::Crush,
        Format::GrokCli,
        Format::GrokBuild,
        Format::QwenCode,
        Format::KimiCode,
        Format::Goose,
        Format::Letta,
        Format::AgentsSdk,
        Format::OpenHands,
        Format::Gemini,
        Format::ShareGpt,
        Format::HfChat,
        Format::Copilot,
        Format::CopilotChat,
        Format::ClaudeAi,
        Format::ChatGpt,
        Format::Grok,
        Format::AiStudio,
    ];

    /// The format's name in flags and reports.
    pub fn name(self) -> &'static str {
        match self {
            Format::OpenAi => "openai",
            Format::Anthropic => "anthropic",
            Format::LangChain => "langchain",
            Format::Responses => "responses",
            Format::Codex => "codex",
            Format::ShareGpt => "sharegpt",
            Format::ClaudeCode => "claude-code",
            Format::Gemini => "gemini",
            Format::OpenWebUi => "open-webui",
            Format::Copilot => "copilot",
            Format::ClaudeAi => "claude-ai",
            Format::ChatGpt => "chatgpt",
            Format::Grok => "grok",
            Format::AiStudio => "aistudio",
            Format::HfChat => "hf-chat",
            Format::LibreChat => "librechat",
            Format::Branched => "branched",
            Format::OpenHands => "openhands",
            Format::Cline => "cline",
            Format::Pi => "pi",
            Format::Droid => "droid",
            Format::Cursor => "cursor",
            Format::CursorIde => "cursor-ide",
            Format::Zed => "zed",
            Format::Continue => "continue",
            Format::AmazonQ => "amazon-q",
            Format::OpenCode => "opencode",
            Format::Crush => "crush",
            Format::GrokCli => "grok-cli",
            Format::GrokBuild => "grok-build",
            Format::QwenCode => "qwen-code",
            Format::KimiCode => "kimi-code",
            Format::Goose => "goose",
            Format::CopilotChat => "copilot-chat",
            Format::Letta => "letta",
            Format::AgentsSdk => "openai-agents",
            Format::Bedrock => "bedrock",
        }
    }
}

impl Format {
    /// Where a request body of this format keeps its messages: Responses'
    /// `input`, Gemini's `contents`, the others' `messages`.
    pub fn list_key(self) -> &'static str {
        match self {
            Format::Responses => "input",
            Format::Gemini => "contents",
            _ => "messages",
        }
    }

    /// The request formats: what an API or a library takes as it stands,
    /// and what `--to` converts into.
    pub const REQUEST: [Format; 7] = [
        Format::OpenAi,
        Format::Anthropic,
        Format::Responses,
        Format::Gemini,
        Format::LangChain,
        Format::ShareGpt,
        Format::HfChat,
    ];

    /// Whether this is a request format (see [`Format::REQUEST`]); the
    /// others are logs and exports, written only from their own kind.
    pub fn is_request(self) -> bool {
        Format::REQUEST.contains(&self)
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Format::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| format!("unknown format '{s}'"))
    }
}

/// How the conversations sit in the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Empty or whitespace-only input: no conversation.
    Empty,
    /// One conversation object (`{"messages": [...], "model": ...}`; other keys kept).
    Object,
    /// A bare JSON list of records (messages): one conversation.
    Records,
    /// A JSON list of conversation objects.
    Conversations,
    /// An object wrapping a list of conversation objects (Grok exports).
    Wrapped,
    /// JSONL, one record (message, event) per line: one conversation.
    JsonlRecords,
    /// JSONL, one conversation object per line.
    JsonlConversations,
}

impl Layout {
    /// Whether the input is JSONL (so several inputs can share one output stream).
    pub fn is_jsonl(self) -> bool {
        matches!(self, Layout::JsonlRecords | Layout::JsonlConversations)
    }
}

/// One input, read: its conversations and what is needed to write it back.
#[derive(Clone, Debug)]
pub struct Document {
    /// The input's path, or `-` for standard input.
    pub source: String,
    /// The format the document is written in (the input's, unless converting).
    pub format: Format,
    /// The format the document was read as.
    pub source_format: Format,
    /// How the conversations sit in the input.
    pub layout: Layout,
    /// The conversations, in input order.
    pub conversations: Vec<Conversation>,
    /// Lines skipped by `--skip-invalid`, with what was wrong with each.
    pub skipped: Vec<crate::InputError>,
    /// Lines kept in place but not read as conversations (skipped invalid
    /// lines), anchored after the given number of conversations.
    pub(crate) passthrough: Vec<(usize, Box<str>)>,
    /// The index of the first conversation in its input (non-zero for a
    /// chunk of a streamed JSONL input).
    pub first_conversation: usize,
    /// The size of the input (or chunk) in bytes.
    pub source_len: usize,
    pub(crate) style: Style,
}

/// A JSON document's whole text as read, and the spellings of its numbers
/// once a writer looked for them: each copy of the document (one per
/// recipe in `replay`) shares them, where each scanned the text again.
#[derive(Debug)]
pub(crate) struct Original {
    pub(crate) text: std::sync::Arc<String>,
    spellings: std::sync::OnceLock<Option<numbers::Spellings>>,
}

impl Original {
    pub(crate) fn new(text: std::sync::Arc<String>) -> Original {
        Original {
            text,
            spellings: std::sync::OnceLock::new(),
        }
    }

    /// [`numbers::scan`] of the text, once.
    pub(crate) fn spellings(&self) -> Option<&numbers::Spellings> {
        self.spellings
            .get_or_init(|| numbers::scan(&self.text))
            .as_ref()
    }
}

impl std::ops::Deref for Original {
    type Target = String;

    fn deref(&self) -> &String {
        &self.text
    }
}

/// The text style of the input, reproduced by the writer.
#[derive(Clone, Debug, Default)]
pub(crate) struct Style {
    /// The indentation of a pretty-printed JSON document; `None` when compact.
    pub(crate) indent: Option<String>,
    /// Whether lines ended with `\r\n`.
    pub(crate) crlf: bool,
    /// Whether the input started with a UTF-8 byte order mark (written back
    /// when the output is in the input's format).
    pub(crate) bom: bool,
    /// What followed the last line or value: its line end and any blank lines.
    pub(crate) tail: String,
    /// The whole text of a JSON document, written back when nothing changed.
    pub(crate) original: Option<std::sync::Arc<Original>>,
    /// The number of messages each conversation had when read.
    pub(crate) message_counts: Vec<usize>,
    /// The object wrapping the conversations, and where they sit in it.
    pub(crate) wrapper: Option<(Map<String, Value>, &'static [&'static str])>,
    /// The document is the session a Copilot Chat operation log makes
    /// (see `copilot_journal`): written back changed as one snapshot line.
    pub(crate) journal: bool,
    /// The records read before that the document was read with (see
    /// [`ReadOptions::recall`]).
    pub(crate) recall: Option<std::sync::Arc<Recall>>,
}

impl Document {
    /// A document of one conversation, laid out as one JSON object in
    /// `format` (a request body), in the default style.
    pub fn of_one(
        source: String,
        format: Format,
        source_format: Format,
        c: Conversation,
    ) -> Document {
        Document {
            source,
            format,
            source_format,
            layout: Layout::Object,
            conversations: vec![c],
            skipped: Vec::new(),
            passthrough: Vec::new(),
            first_conversation: 0,
            source_len: 0,
            style: Style::default(),
        }
    }

    /// The number of messages over all conversations.
    pub fn message_count(&self) -> usize {
        self.conversations.iter().map(|c| c.messages.len()).sum()
    }
}
