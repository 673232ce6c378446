//! Format detection. It never guesses silently wrong: when two formats fit,
//! or none does, it says so and asks for `--from`.

use serde_json::{Map, Value};

use super::{dialect, Format};

/// How every error that no format (or more than one) fits begins.
pub(crate) const UNDETECTED: &str = "cannot tell the format";

/// The format of a JSON document.
pub(crate) fn json(top: &Value) -> Result<Format, String> {
    let sample: Vec<&Map<String, Value>> = match top {
        Value::Object(o) => vec![o],
        Value::Array(items) => items.iter().filter_map(Value::as_object).take(50).collect(),
        _ => Vec::new(),
    };
    if sample.is_empty() {
        return Ok(Format::OpenAi);
    }
    pick(&sample)
}

/// The format of JSONL lines, and whether each line is a conversation.
pub(crate) fn jsonl(sample: &[&Map<String, Value>]) -> Result<(Format, bool), String> {
    if sample.is_empty() {
        return Ok((Format::OpenAi, false));
    }
    let format = pick(sample)?;
    // Gemini's chunks are answers each, and together one.
    let conversations = dialect(format).records_path(sample[0]).is_some()
        && super::stream::format_of(sample).is_none();
    Ok((format, conversations))
}

/// The format a JSONL line (one conversation) is in, when it is not
/// `format` but clearly another one: an Anthropic conversation in an OpenAI
/// file. A line that tells nothing either way (no messages) is no misfit.
pub(crate) fn misfit(format: Format, line: &Map<String, Value>) -> Option<Format> {
    if fits(format, &[line]) {
        return None;
    }
    pick(&[line]).ok().filter(|&other| other != format)
}

fn pick(sample: &[&Map<String, Value>]) -> Result<Format, String> {
    // What a sample shows is found once, not once for each format asked.
    let claimed = claimed(sample);
    let mut seen = Seen::default();
    let fits: Vec<Format> = Format::ALL
        .into_iter()
        .filter(|&f| claimed.map_or_else(|| fits_unclaimed(f, sample, &mut seen), |c| c == f))
        .collect();
    match fits.as_slice() {
        [one] => Ok(*one),
        [] => Err(closest(sample)),
        many => Err(format!(
            "{UNDETECTED}: it fits {} (use --from to choose)",
            many.iter()
                .map(|f| f.name())
                .collect::<Vec<_>>()
                .join(" and ")
        )),
    }
}

/// The records a sample shows: those of its conversation objects, from as
/// many conversations as it takes (a first one may be empty), or the sample
/// itself. Records that wrap a message (a completion's choices, Continue's
/// history items) are judged by it.
fn records_of<'a>(
    d: &dyn super::dialect::Dialect,
    sample: &[&'a Map<String, Value>],
) -> Vec<&'a Map<String, Value>> {
    if d.records_path(sample[0]).is_none() {
        return sample.to_vec();
    }
    sample
        .iter()
        .filter_map(|c| list_at(c, d.records_path(c)?))
        .flatten()
        .filter_map(Value::as_object)
        .map(|r| match r.get("message") {
            Some(Value::Object(m)) if !r.contains_key("role") && !r.contains_key("type") => m,
            _ => r,
        })
        .take(50)
        .collect()
}

/// Whether records are the Gemini CLI's prompt log (`logs.json`): entries
/// of a session whose text is in `message`.
fn gemini_prompt_log(records: &[&Map<String, Value>]) -> bool {
    records.iter().all(|r| {
        super::gemini::is_cli_message(r)
            && r.contains_key("sessionId")
            && r.contains_key("messageId")
            && r.get("message").is_some_and(Value::is_string)
    })
}

/// Whether the sample (conversation objects, or records) fits a format.
fn fits(format: Format, sample: &[&Map<String, Value>]) -> bool {
    match claimed(sample) {
        Some(claimed) => claimed == format,
        None => fits_unclaimed(format, sample, &mut Seen::default()),
    }
}

/// The format a sample is whatever else it looks like: a saved answer or
/// its stream is its provider's; an agent's own store or export, known by
/// its shape, is that agent's.
fn claimed(sample: &[&Map<String, Value>]) -> Option<Format> {
    if let Some(f) = super::stream::format_of(sample) {
        return Some(f);
    }
    if let Some(f) = super::answer::format_of(sample[0]) {
        return Some(f);
    }
    if super::letta::is_agent_file(sample[0]) {
        return Some(Format::Letta);
    }
    if super::branched::is_export(sample[0]) {
        return Some(Format::Branched);
    }
    if super::amazon_q::is_state(sample[0]) {
        return Some(Format::AmazonQ);
    }
    if super::continue_dev::is_session(sample[0]) {
        return Some(Format::Continue);
    }
    if super::cursor::is_composer(sample[0]) {
        return Some(Format::CursorIde);
    }
    if super::zed::is_thread(sample[0]) {
        return Some(Format::Zed);
    }
    if super::agents_sdk::is_run_state(sample[0]) {
        return Some(Format::AgentsSdk);
    }
    if super::crush::is_session(sample[0]) {
        return Some(Format::Crush);
    }
    if super::grok_cli::is_session(sample[0]) {
        return Some(Format::GrokCli);
    }
    if super::copilot_chat::is_session(sample[0]) {
        return Some(Format::CopilotChat);
    }
    // Kimi Code's records are typed (`context.*`), its messages inside.
    if super::kimi_code::is_wire(sample) {
        return Some(Format::KimiCode);
    }
    // Goose's lines are role/content messages of its own items.
    if super::goose::is_session(sample) {
        return Some(Format::Goose);
    }
    // Droid's store frames Anthropic messages as pi frames its own.
    if super::droid::is_session(sample) {
        return Some(Format::Droid);
    }
    // Cursor's lines put the role beside a message of content only.
    if super::cursor::is_transcript(sample) {
        return Some(Format::Cursor);
    }
    // Grok Build's lines are typed items of OpenAI's message fields.
    if super::grok_build::is_session(sample) {
        return Some(Format::GrokBuild);
    }
    None
}

/// What [`Evidence::of`] found for a sample, by the records each dialect
/// takes from it: the formats that take the same records share it.
#[derive(Default)]
struct Seen<'a> {
    evidence: Vec<(Vec<Option<&'static [&'static str]>>, Evidence<'a>)>,
}

/// Whether a sample no format claims ([`claimed`]) fits `format`.
fn fits_unclaimed<'a>(
    format: Format,
    sample: &[&'a Map<String, Value>],
    seen: &mut Seen<'a>,
) -> bool {
    let d = dialect(format);
    // An export holding its conversations in a list (Chatbot UI's
    // `history`) is judged by them.
    if d.records_path(sample[0]).is_none() && format != Format::Grok {
        if let Some(list) = d
            .conversations_path(sample[0])
            .and_then(|p| list_at(sample[0], p))
        {
            let inner: Vec<&Map<String, Value>> =
                list.iter().filter_map(Value::as_object).take(50).collect();
            return !inner.is_empty() && fits(format, &inner);
        }
    }
    // The records a dialect takes: its path in the first conversation
    // (none: the sample itself), then in each.
    let first = d.records_path(sample[0]);
    let key: Vec<Option<&'static [&'static str]>> = match first {
        None => vec![None],
        Some(_) => sample.iter().map(|c| d.records_path(c)).collect(),
    };
    let at = match seen.evidence.iter().position(|(k, _)| *k == key) {
        Some(at) => at,
        None => {
            seen.evidence.push((key, Evidence::of(d, sample)));
            seen.evidence.len() - 1
        }
    };
    seen.evidence[at].1.fits(format, d, sample)
}

fn ty(r: &Map<String, Value>) -> Option<&str> {
    r.get("type").and_then(Value::as_str)
}

/// What a sample shows of the formats: the signals [`fits`] weighs.
struct Evidence<'a> {
    records: Vec<&'a Map<String, Value>>,
    /// The records sit in a container (a document's `messages`, …).
    container: bool,
    /// The document, or the request inside its envelope (a batch line, a
    /// proxy capture).
    top: &'a Map<String, Value>,
    anthropic_blocks: bool,
    /// Converse blocks: objects of one key (`text`, `toolUse`, …), no `type`.
    bedrock_blocks: bool,
    responses_evidence: bool,
    codex_lines: bool,
    legacy_tool_lines: bool,
    /// Cline keeps its history as a bare list.
    cline: bool,
    claude_request: bool,
    codex_role_lines: bool,
    typed_without_role: bool,
}

impl<'a> Evidence<'a> {
    fn of(d: &dyn super::dialect::Dialect, sample: &[&'a Map<String, Value>]) -> Evidence<'a> {
        let records = records_of(d, sample);
        let container = d.records_path(sample[0]).is_some();
        let top = super::wrap::body(sample[0]);
        let anthropic_blocks = any_block(&records, super::anthropic::BLOCK_TYPES)
            || records
                .iter()
                .any(|r| has_block(r, &|b| ty(b) == Some("image") && b.contains_key("source")));
        let bedrock_blocks = records.iter().any(|r| {
            r.get("content")
                .and_then(Value::as_array)
                .is_some_and(|bs| bs.iter().any(super::bedrock::is_block))
        });
        let responses_evidence = records
            .iter()
            .any(|r| ty(r).is_some_and(|t| super::responses::ITEM_TYPES.contains(&t)))
            || any_block(&records, &["input_text", "output_text", "input_image"]);
        let codex_lines = records.iter().any(|r| {
            r.contains_key("payload")
                && ty(r).is_some_and(|t| super::responses::CODEX_LINE_TYPES.contains(&t))
        });
        let legacy_tool_lines = records.iter().any(|r| {
            !r.contains_key("role")
                && !r.contains_key("call_id")
                && matches!(
                    ty(r),
                    Some("tool_call" | "tool_result" | "function_call" | "function_result")
                )
                && (r.contains_key("result") || r.get("function").is_some_and(Value::is_object))
        });
        let cline = !container && super::cline::is_history(&records);
        // An Amp thread holds Anthropic messages, text only or not.
        let claude_request =
            container && (claude_request(top, &records) || super::anthropic::is_amp_thread(top));
        // The TypeScript Codex CLI's role lines begin with their timestamp.
        let codex_role_lines = !container
            && records.iter().any(|r| r.contains_key("role"))
            && records.iter().all(|r| {
                r.keys().next().map(String::as_str) == Some("timestamp")
                    && !r.contains_key("sessionId")
                    && !r.contains_key("payload")
            });
        let typed_without_role = records
            .iter()
            .any(|r| r.contains_key("type") && !r.contains_key("role"));
        Evidence {
            records,
            container,
            top,
            anthropic_blocks,
            bedrock_blocks,
            responses_evidence,
            codex_lines,
            legacy_tool_lines,
            cline,
            claude_request,
            codex_role_lines,
            typed_without_role,
        }
    }

    /// Whether at least half the records pass `f` (a container with no
    /// record passes).
    fn share(&self, f: &dyn Fn(&Map<String, Value>) -> bool) -> bool {
        if self.records.is_empty() {
            self.container
        } else {
            self.records.iter().filter(|r| f(r)).count() * 2 >= self.records.len()
        }
    }

    /// A key of the request inside an envelope.
    fn envelope(&self, key: &str) -> bool {
        self.container && self.top.contains_key(key)
    }

    fn any(&self, f: impl Fn(&Map<String, Value>) -> bool) -> bool {
        self.records.iter().any(|r| f(r))
    }

    fn fits(
        &self,
        format: Format,
        d: &dyn super::dialect::Dialect,
        sample: &[&Map<String, Value>],
    ) -> bool {
        let (container, records) = (self.container, &self.records);
        let share = |f: &dyn Fn(&Map<String, Value>) -> bool| self.share(f);
        match format {
            Format::OpenAi => self.openai(sample[0]),
            Format::Anthropic => {
                share(&|r| {
                    matches!(
                        r.get("role").and_then(Value::as_str),
                        Some("user" | "assistant")
                    )
                }) && (self.anthropic_blocks || self.envelope("system") || self.claude_request)
                    && !self.bedrock_blocks
                    && !self.any(|r| openai_only(&r))
                    && !self.responses_evidence
                    && !self.cline
            }
            Format::LangChain => share(&|r| super::langchain::is_record(r)),
            Format::Bedrock => {
                container && self.bedrock_blocks && share(&|r| super::bedrock::is_message(r))
            }
            Format::Responses => {
                !self.codex_lines
                    && !self.legacy_tool_lines
                    && !share(&|r| super::pi::is_entry(r))
                    && share(&|r| {
                        ty(r).is_some_and(|t| super::responses::ITEM_TYPES.contains(&t))
                            || (r.contains_key("role") && !r.contains_key("type"))
                    })
                    && (self.responses_evidence || self.envelope("instructions"))
            }
            Format::Codex => self.codex_lines || self.legacy_tool_lines || self.codex_role_lines,
            Format::ShareGpt => share(&|r| r.get("from").is_some_and(Value::is_string)),
            Format::ClaudeCode => {
                share(&|r| super::claude_code::is_line(r))
                    || (container && sample[0].contains_key("agentType"))
            }
            Format::OpenWebUi => container && share(&|r| r.contains_key("role")),
            // An empty `conversations` list is ShareGPT's, as it always was.
            Format::HfChat => {
                container
                    && (!records.is_empty() || d.records_path(sample[0]) == Some(&[]))
                    && share(&|r| r.contains_key("role"))
            }
            Format::LibreChat => container && share(&|r| super::librechat::is_message(r)),
            Format::OpenHands => share(&|r| super::openhands::is_event(r)),
            Format::Cline => {
                !container
                    && (share(&|r| super::cline::is_ui_message(r))
                        || (self.cline && share(&|r| r.contains_key("role"))))
            }
            Format::Copilot => share(&|r| super::apps::is_copilot_event(r)),
            Format::Pi => {
                share(&|r| super::pi::is_entry(r)) && self.any(|r| ty(r) == Some("message"))
            }
            Format::OpenCode => container && share(&|r| super::opencode::is_message(r)),
            // A message of `content` is no Gemini turn (Claude Code's
            // lines share Qwen Code's chain keys and system records).
            Format::QwenCode => {
                !container
                    && share(&|r| super::qwen_code::is_line(r))
                    && !self.any(|r| {
                        r.get("message")
                            .and_then(Value::as_object)
                            .is_some_and(|m| m.contains_key("content"))
                    })
            }
            Format::Goose
            | Format::KimiCode
            | Format::Crush
            | Format::GrokCli
            | Format::CopilotChat
            | Format::Letta
            | Format::Droid
            | Format::Cursor
            | Format::CursorIde
            | Format::Zed
            | Format::Continue
            | Format::AmazonQ
            | Format::GrokBuild
            | Format::Branched
            | Format::AgentsSdk => false,
            Format::ClaudeAi => container && share(&|r| r.contains_key("sender")),
            Format::ChatGpt => container && sample.iter().any(|o| o.contains_key("mapping")),
            Format::Grok => container || d.conversations_path(sample[0]).is_some(),
            Format::AiStudio => container,
            Format::Gemini => self.gemini(),
        }
    }

    fn openai(&self, first: &Map<String, Value>) -> bool {
        self.share(&|r| r.contains_key("role"))
            && !self.cline
            && (!self.claude_request || self.any(|r| openai_only(&r)))
            && !self.codex_role_lines
            && !(self.container
                && (first.get("history").is_some_and(Value::is_object)
                    || first.contains_key("chat")))
            && !self.anthropic_blocks
            && !self.bedrock_blocks
            && !self.envelope("system")
            && !self.typed_without_role
            && !self.responses_evidence
            && !self.any(|r| ty(r) == Some("message"))
    }

    fn gemini(&self) -> bool {
        let records = &self.records;
        let header = self.any(|r| r.contains_key("projectHash") && r.contains_key("sessionId"));
        let prompt_log = !self.container && gemini_prompt_log(records);
        prompt_log
            || self.share(&|r| {
                r.get("parts").is_some_and(Value::is_array) || super::gemini::is_cli_message(r)
            }) && (self.container || header || self.any(|r| r.contains_key("parts")))
            || (header
                && records.iter().all(|r| {
                    super::gemini::is_cli_message(r)
                        || r.contains_key("$set")
                        || (r.contains_key("projectHash") && r.contains_key("sessionId"))
                }))
    }
}

/// A request body names its model: a Claude model is Anthropic's, even when
/// no block left says so (text only, or no message at all). An Anthropic
/// request also states its output limit (the API requires it) and writes
/// every message as a list of blocks; an OpenAI request with only that in
/// common is rare, and plain chat means the same in both.
fn claude_request(top: &Map<String, Value>, records: &[&Map<String, Value>]) -> bool {
    let named = top.contains_key("anthropic_version")
        || top
            .get("model")
            .and_then(Value::as_str)
            .is_some_and(|m| m.starts_with("claude"));
    let anthropic_body = top.contains_key("max_tokens")
        && !records.is_empty()
        && records
            .iter()
            .all(|r| r.get("content").is_some_and(Value::is_array))
        && !top.keys().any(|k| {
            matches!(
                k.as_str(),
                "max_completion_tokens"
                    | "n"
                    | "logprobs"
                    | "response_format"
                    | "functions"
                    | "frequency_penalty"
                    | "presence_penalty"
                    | "seed"
                    | "stream_options"
                    | "parallel_tool_calls"
            )
        })
        && !top
            .get("tools")
            .and_then(Value::as_array)
            .is_some_and(|t| t.iter().any(|t| t.get("function").is_some()));
    named || anthropic_body
}

/// The key each format's records cannot do without: what the error names
/// when nothing fits.
fn record_key(format: Format) -> &'static str {
    match format {
        Format::OpenAi
        | Format::Anthropic
        | Format::OpenWebUi
        | Format::AiStudio
        | Format::HfChat => "role",
        Format::LangChain | Format::Responses => "type",
        Format::Codex => "payload",
        Format::ShareGpt => "from",
        Format::ClaudeCode => "sessionId",
        Format::Gemini => "parts",
        Format::Copilot => "data",
        Format::Pi => "message",
        Format::Droid => "type",
        Format::Cursor => "message",
        Format::CursorIde => "bubbles",
        Format::Zed => "messages",
        Format::Continue => "history",
        Format::AmazonQ => "conversation_id",
        Format::GrokBuild => "type",
        Format::OpenCode => "parts",
        Format::Crush => "session_id",
        Format::GrokCli => "message_json",
        Format::QwenCode => "sessionId",
        Format::KimiCode => "type",
        Format::Goose => "content",
        Format::CopilotChat => "requests",
        Format::Letta => "in_context_message_indices",
        Format::AgentsSdk => "$schemaVersion",
        Format::Bedrock => "content",
        Format::ClaudeAi => "sender",
        Format::LibreChat => "messageId",
        Format::Branched => "parentMessageId",
        Format::OpenHands => "source",
        Format::Cline => "role",
        Format::ChatGpt => "mapping",
        Format::Grok => "response",
    }
}

/// Why nothing fits, naming the closest format and the first key that did
/// not fit: the format whose list of messages was found, and whose records
/// most often have the key it needs.
fn closest(sample: &[&Map<String, Value>]) -> String {
    // The best so far: its format, whether its list was found, how many
    // records have its key, and the records.
    type Candidate<'a> = (Format, bool, usize, Vec<&'a Map<String, Value>>);
    let mut best: Option<Candidate<'_>> = None;
    for format in Format::ALL {
        let d = dialect(format);
        let path = d.records_path(sample[0]);
        let records: Vec<&Map<String, Value>> = match path {
            Some(path) if !path.is_empty() => list_at(sample[0], path)
                .map(|l| l.iter().filter_map(Value::as_object).take(50).collect())
                .unwrap_or_default(),
            Some(_) => Vec::new(),
            None => sample.to_vec(),
        };
        let key = record_key(format);
        let having = records.iter().filter(|r| r.contains_key(key)).count();
        let better = match &best {
            None => true,
            Some((_, c, h, _)) => (path.is_some(), having) > (*c, *h),
        };
        if better {
            best = Some((format, path.is_some(), having, records));
        }
    }
    let Some((format, found, having, records)) = best else {
        return format!("{UNDETECTED} (use --from to name it)");
    };
    // A format is named only when its records have its defining key: a
    // list under a name it uses (`messages`) is not enough.
    if having == 0 && !(found && records.is_empty()) {
        let keys: Vec<&str> = sample[0].keys().map(String::as_str).take(12).collect();
        let inner = records
            .first()
            .filter(|_| found)
            .map(|r| {
                let keys: Vec<&str> = r.keys().map(String::as_str).take(12).collect();
                format!("; its records' keys: {}", keys.join(", "))
            })
            .unwrap_or_default();
        return format!(
            "{UNDETECTED}: no format ctxclean reads has these keys ({}{inner}) (use --from to name the format)",
            if keys.is_empty() {
                "none".to_string()
            } else {
                keys.join(", ")
            }
        );
    }
    let key = record_key(format);
    let why = match records.iter().position(|r| !r.contains_key(key)) {
        Some(i) => {
            let keys: Vec<&str> = records[i].keys().map(String::as_str).take(8).collect();
            format!(
                "record {i} has no \"{key}\" (its keys: {})",
                if keys.is_empty() {
                    "none".to_string()
                } else {
                    keys.join(", ")
                }
            )
        }
        None if records.is_empty() => {
            let keys: Vec<&str> = sample[0].keys().map(String::as_str).take(8).collect();
            format!(
                "no list of messages was found (keys: {})",
                if keys.is_empty() {
                    "none".to_string()
                } else {
                    keys.join(", ")
                }
            )
        }
        None => "its records do not carry what that format needs".to_string(),
    };
    format!("{UNDETECTED}: the closest is {format}, but {why} (use --from to name the format)")
}

/// The list at a path of keys.
fn list_at<'a>(obj: &'a Map<String, Value>, path: &[&str]) -> Option<&'a Vec<Value>> {
    let (last, init) = path.split_last()?;
    let mut at = obj;
    for key in init {
        at = at.get(*key)?.as_object()?;
    }
    at.get(*last)?.as_array()
}

/// Whether a record has what only OpenAI messages have: tool calls or
/// results in OpenAI's shape, roles Anthropic does not know.
fn openai_only(r: &&Map<String, Value>) -> bool {
    r.contains_key("tool_calls")
        || r.contains_key("tool_call_id")
        || r.contains_key("function_call")
        || !matches!(
            r.get("role").and_then(Value::as_str),
            Some("user" | "assistant") | None
        )
        || has_block(r, &|b| {
            matches!(
                b.get("type").and_then(Value::as_str),
                Some("image_url" | "input_audio" | "file")
            )
        })
}

/// Whether any record has a content block satisfying `f`.
fn has_block(r: &Map<String, Value>, f: &dyn Fn(&Map<String, Value>) -> bool) -> bool {
    r.get("content")
        .and_then(Value::as_array)
        .is_some_and(|blocks| blocks.iter().filter_map(Value::as_object).any(f))
}

/// Whether any record has a content block of one of these types.
fn any_block(records: &[&Map<String, Value>], types: &[&str]) -> bool {
    records.iter().any(|r| {
        has_block(r, &|b| {
            b.get("type")
                .and_then(Value::as_str)
                .is_some_and(|t| types.contains(&t))
        })
    })
}
