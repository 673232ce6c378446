//! `ctxclean validate`: would a provider's API accept this conversation as
//! it stands?
//!
//! Checks, in the transcript model's terms (a tool result is a message of
//! its own, whatever the format keeps it in):
//!
//! - pairing: every tool result answers an earlier call; every call is
//!   answered, except in the active cycle at the very end; call ids are
//!   unique; results come right after their call, before any other message;
//! - roles: allowed by the provider, in the order it requires (Anthropic and
//!   Gemini: system instructions only at the start, then the user first);
//! - content: not empty where the provider rejects empty content (Anthropic,
//!   Gemini), parts of kinds the role may carry (no images in assistant
//!   messages; for OpenAI, text only in system, developer and tool
//!   messages), and block types the provider knows when the transcript is in
//!   that provider's own format.

use serde::Serialize;
use serde_json::Value;

use crate::format::Format;
use crate::memo::FastMap;
use crate::pairs::{active_cycle, Pairing};
use crate::transcript::{Content, Conversation, Message, PartKind, Role};

/// The APIs `validate` knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Provider {
    /// OpenAI Chat Completions (and compatible servers).
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
    /// Gemini `generateContent`.
    Gemini,
    /// OpenAI Responses (`input` items; Codex rollouts hold the same items).
    Responses,
}

impl Provider {
    /// The provider a format's transcripts are sent to.
    pub fn for_format(format: Format) -> Provider {
        match format {
            Format::Anthropic
            | Format::ClaudeCode
            | Format::ClaudeAi
            | Format::Cline
            | Format::Bedrock => Provider::Anthropic,
            Format::Gemini | Format::AiStudio | Format::QwenCode => Provider::Gemini,
            Format::Responses | Format::Codex | Format::AgentsSdk => Provider::Responses,
            _ => Provider::OpenAi,
        }
    }

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
            Provider::Gemini => "gemini",
            Provider::Responses => "responses",
        }
    }

    fn own_format(self, format: Format) -> bool {
        match self {
            Provider::OpenAi => format == Format::OpenAi,
            Provider::Anthropic => format == Format::Anthropic,
            Provider::Gemini => format == Format::Gemini,
            Provider::Responses => matches!(
                format,
                Format::Responses | Format::Codex | Format::AgentsSdk
            ),
        }
    }

    /// Whether the provider takes the user's turn first and system
    /// instructions only at the start (Anthropic, Gemini).
    pub fn user_first(self) -> bool {
        matches!(self, Provider::Anthropic | Provider::Gemini)
    }
}

/// One thing the provider would reject.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// The message's index in the conversation (`None`: the conversation as a whole).
    pub message: Option<usize>,
    /// A stable name for the class of problem (`orphan-result`, `role-order`, …).
    pub code: &'static str,
    /// What is wrong, for people.
    pub problem: String,
}

impl Problem {
    fn at(message: usize, code: &'static str, problem: impl Into<String>) -> Problem {
        Problem {
            message: Some(message),
            code,
            problem: problem.into(),
        }
    }
}

/// Checks one conversation, read as `format`, against `provider`.
pub fn validate(conv: &Conversation, format: Format, provider: Provider) -> Vec<Problem> {
    validate_paired(conv, format, provider, &Pairing::new(&conv.messages))
}

/// [`validate`], the conversation's calls and results paired already.
fn validate_paired(
    conv: &Conversation,
    format: Format,
    provider: Provider,
    paired: &Pairing,
) -> Vec<Problem> {
    let msgs = &conv.messages;
    let mut out = Vec::new();
    if msgs.is_empty() {
        out.push(Problem {
            message: None,
            code: "empty",
            problem: "the conversation has no messages".into(),
        });
        return out;
    }
    pairing(msgs, (format, provider), paired, &mut out);
    // A saved answer is the model's side alone: no user turn to open it.
    let answer = crate::format::answer::is_answer(conv.envelope.as_ref())
        || crate::format::stream::is_stream(conv);
    roles(msgs, provider, answer, &mut out);
    content(msgs, format, provider, &mut out);
    if provider.own_format(format) && !answer {
        let thread =
            |e: &&serde_json::Map<String, Value>| crate::format::anthropic::is_amp_thread(e);
        if let Some(env) = conv.envelope.as_ref().filter(|e| !thread(e)) {
            request(env, provider, &mut out);
        }
    }
    if answer {
        // Its calls are the client's to run next.
        out.retain(|p| p.code != "unanswered-call");
    }
    out.sort_by_key(|p| p.message);
    out
}

/// Checks a request about to be sent to `provider`: what [`validate`]
/// checks of a transcript, and the rules of a request, which a transcript
/// at rest does not have to keep:
/// - OpenAI chat: every call has its results, even in the cycle at the end
///   (`An assistant message with 'tool_calls' must be followed by tool
///   messages responding to each 'tool_call_id'`);
/// - Responses: a reasoning item is followed by the item it produced (`…
///   of type 'reasoning' was provided without its required following item`);
/// - Anthropic with thinking on: the assistant turn in progress starts with
///   its thinking (`… final assistant message must start with a thinking
///   block`).
pub fn validate_request(conv: &Conversation, format: Format, provider: Provider) -> Vec<Problem> {
    let msgs = &conv.messages;
    let paired = Pairing::new(msgs);
    let mut out = validate_paired(conv, format, provider, &paired);
    match provider {
        Provider::OpenAi => calls_answered(msgs, &paired, &mut out),
        Provider::Responses => reasoning_followed(msgs, &mut out),
        Provider::Anthropic if thinking_on(conv) => thinking_kept(msgs, &mut out),
        _ => {}
    }
    out.sort_by_key(|p| p.message);
    out
}

/// OpenAI chat, in a request: the calls of the cycle at the end need their
/// results too.
fn calls_answered(msgs: &[Message], pairing: &Pairing, out: &mut Vec<Problem>) {
    let Some(i) = active_cycle(msgs, pairing) else {
        return;
    };
    for (c, call) in msgs[i].calls().iter().enumerate() {
        let r = crate::pairs::CallRef {
            message: i,
            call: c,
        };
        if pairing.answer(r).is_none() {
            out.push(Problem::at(
                i,
                "unanswered-call",
                format!(
                    "tool call {} ({}) has no result: in a request, an assistant message with tool_calls must be followed by tool messages answering each",
                    call_name(&call.id),
                    call.name
                ),
            ));
        }
    }
}

/// Whether a message is a Responses reasoning item.
pub(crate) fn is_reasoning(m: &Message) -> bool {
    m.role == Role::Assistant
        && !m.has_calls()
        && matches!(m.content.parts(), [p] if p.raw.get("type").and_then(Value::as_str) == Some("reasoning"))
}

/// Responses, in a request: a reasoning item is followed by the output item
/// it produced (a message or a call of the assistant).
fn reasoning_followed(msgs: &[Message], out: &mut Vec<Problem>) {
    for (i, m) in msgs.iter().enumerate() {
        if !is_reasoning(m) {
            continue;
        }
        let followed = msgs
            .get(i + 1)
            .is_some_and(|n| n.role == Role::Assistant && !is_reasoning(n));
        if !followed {
            out.push(Problem::at(
                i,
                "reasoning-alone",
                "a reasoning item without its required following item (the message or call it produced)",
            ));
        }
    }
}

/// Responses: the ids of the calls that come right after a reasoning item
/// (OpenAI answers 400 when such a call is sent without it: `… was
/// provided without its required 'reasoning' item`).
pub fn calls_after_reasoning(conv: &Conversation) -> std::collections::HashSet<String> {
    let msgs = &conv.messages;
    (1..msgs.len())
        .filter(|&i| is_reasoning(&msgs[i - 1]))
        .flat_map(|i| msgs[i].calls().iter().filter_map(|c| c.id.clone()))
        .collect()
}

/// The first call of `needed` (see [`calls_after_reasoning`]) that `conv`
/// sends without the reasoning item before it.
pub fn reasoning_lost(
    conv: &Conversation,
    needed: &std::collections::HashSet<String>,
) -> Option<Problem> {
    let msgs = &conv.messages;
    msgs.iter().enumerate().find_map(|(i, m)| {
        let call = m
            .calls()
            .iter()
            .find(|c| c.id.as_ref().is_some_and(|id| needed.contains(id)))?;
        let kept = i > 0 && is_reasoning(&msgs[i - 1]);
        (!kept).then(|| {
            Problem::at(
                i,
                "reasoning-lost",
                format!(
                    "call {} ({}) without its required reasoning item",
                    call_name(&call.id),
                    call.name
                ),
            )
        })
    })
}

/// Whether an Anthropic request turns extended thinking on.
fn thinking_on(conv: &Conversation) -> bool {
    conv.envelope
        .as_ref()
        .and_then(|e| e.get("thinking"))
        .and_then(|t| t.get("type"))
        .and_then(Value::as_str)
        .is_some_and(|t| t != "disabled")
}

/// Anthropic with thinking on: the assistant turn in progress (the last
/// assistant message, followed by nothing or only its tool results) starts
/// with a thinking block.
fn thinking_kept(msgs: &[Message], out: &mut Vec<Problem>) {
    let Some(a) = msgs.iter().rposition(|m| m.role == Role::Assistant) else {
        return;
    };
    let in_progress = msgs[a + 1..].iter().all(|m| m.role.is_result()) && msgs[a].has_calls();
    if !in_progress {
        return;
    }
    let thinking = |p: &crate::transcript::Part| {
        matches!(
            crate::json::field(&p.raw, "type").and_then(Value::as_str),
            Some("thinking" | "redacted_thinking")
        )
    };
    if !msgs[a].content.parts().first().is_some_and(thinking) {
        out.push(Problem::at(
            a,
            "thinking-missing",
            "with thinking on, the assistant turn in progress must start with its thinking block",
        ));
    }
}

fn call_name(id: &Option<String>) -> String {
    match id {
        Some(id) => format!("\"{id}\""),
        None => "(no id)".to_string(),
    }
}

/// The turn of each message, as Anthropic and Gemini see them: consecutive
/// messages of one side (the assistant; the user with tool results) are one
/// turn.
fn turns(msgs: &[Message]) -> Vec<usize> {
    let side = |m: &Message| m.role == Role::Assistant;
    let mut turn = 0;
    msgs.iter()
        .enumerate()
        .map(|(k, m)| {
            if k > 0 && side(&msgs[k - 1]) != side(m) {
                turn += 1;
            }
            turn
        })
        .collect()
}

fn a_role(role: Role) -> String {
    let name = role.as_str();
    let article = if name.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {name}")
}

fn pairing(
    msgs: &[Message],
    (format, provider): (Format, Provider),
    pairing: &Pairing,
    out: &mut Vec<Problem>,
) {
    // Cline's calls are XML in the assistant's text and its results text
    // blocks; ShareGPT sets pair calls and results by order: neither has ids.
    let ids_required =
        provider != Provider::Gemini && !matches!(format, Format::Cline | Format::ShareGpt);
    let turns = turns(msgs);
    let reach = Reach::of(msgs, &turns);
    let active = match provider {
        Provider::Responses => responses_active(msgs, pairing),
        _ => active_cycle(msgs, pairing).map(|i| i..=i),
    };
    let mut ids: FastMap<&str, usize> = FastMap::default();
    // Per answer (its messages), the first message after it that no
    // result of its calls may come after (found once, not once per
    // parallel result, nor per call message of one answer).
    let mut first_breaks: FastMap<(usize, usize), Option<usize>> = FastMap::default();
    for (i, m) in msgs.iter().enumerate() {
        if m.has_calls() && m.role != Role::Assistant {
            out.push(Problem::at(
                i,
                "call-role",
                format!(
                    "tool calls in {} message (only assistant messages call tools)",
                    a_role(m.role)
                ),
            ));
        }
        for (c, call) in m.calls().iter().enumerate() {
            match &call.id {
                Some(id) => {
                    if let Some(first) = ids.insert(id.as_str(), i) {
                        out.push(Problem::at(
                            i,
                            "duplicate-id",
                            format!(
                                "tool call id \"{id}\" is used again (first in message {first})"
                            ),
                        ));
                    }
                }
                None if ids_required => out.push(Problem::at(
                    i,
                    "missing-id",
                    format!("tool call {c} ({}) has no id", call.name),
                )),
                None => {}
            }
            let r = crate::pairs::CallRef {
                message: i,
                call: c,
            };
            match pairing.answer(r) {
                None if !active.as_ref().is_some_and(|a| a.contains(&i)) => out.push(Problem::at(
                    i,
                    "unanswered-call",
                    format!(
                        "tool call {} ({}) has no result",
                        call_name(&call.id),
                        call.name
                    ),
                )),
                _ => {}
            }
        }
        if m.role.is_result() {
            match pairing.result_of(i) {
                None => out.push(Problem::at(
                    i,
                    "orphan-result",
                    match &m.tool_call_id {
                        Some(id) => {
                            format!("tool result for \"{id}\" answers no earlier tool call")
                        }
                        None => "tool result answers no earlier tool call".to_string(),
                    },
                )),
                // A call written as XML in the text (Cline, Roo Code) and its
                // text result are text to the provider: no placement rule.
                Some(r)
                    if crate::json::field(&msgs[r.message].calls()[r.call].raw, "xml")
                        .is_some() => {}
                Some(r) => {
                    let ctx = Placing {
                        msgs,
                        pairing,
                        turns: &turns,
                        reach: &reach,
                        format,
                        provider,
                    };
                    placement(&ctx, &mut first_breaks, i, r, out)
                }
            }
        }
    }
}

/// What placing a result reads.
struct Placing<'a> {
    msgs: &'a [Message],
    pairing: &'a Pairing,
    turns: &'a [usize],
    reach: &'a Reach,
    format: Format,
    provider: Provider,
}

/// The first message after the calls of message `call` that none of their
/// results may come after (`None`: the conversation ends first).
fn first_break(p: &Placing, call: usize) -> Option<usize> {
    let (msgs, reach) = (p.msgs, p.reach);
    let answer = p.answer(call);
    let found = |k: usize| (k < msgs.len()).then_some(k);
    match p.provider {
        Provider::OpenAi => (answer.end..msgs.len()).find(|&k| {
            !msgs[k].role.is_result()
                || p.pairing
                    .result_of(k)
                    .is_some_and(|o| !answer.contains(&o.message))
        }),
        // Responses items: parallel calls come one item each, then their
        // outputs (call A, call B, output A, output B); only the user or the
        // system may not speak in between.
        Provider::Responses => found(reach.next_speaker[call + 1]),
        _ => {
            // In the user turn, results come before anything else.
            let after_next_turn = reach
                .turn_starts
                .get(p.turns[call] + 2)
                .copied()
                .unwrap_or(msgs.len());
            found(reach.next_speaker[call + 1].min(after_next_turn))
        }
    }
}

impl Placing<'_> {
    /// The messages sent as one with the calls of message `call`: a log
    /// that keeps each piece of an answer as a message of its own (Kimi
    /// Code's steps: a part, a call, a call) sent them as one message, and
    /// the results follow all of it.
    fn answer(&self, call: usize) -> std::ops::Range<usize> {
        if self.format != Format::KimiCode {
            return call..call + 1;
        }
        let start = match call.checked_sub(1) {
            Some(k) if self.msgs[k].role == Role::Assistant => self.reach.run_start[k],
            _ => call,
        };
        start..self.reach.next_not_assistant[call + 1]
    }
}

/// Where the scans of [`first_break`] end, found once for a conversation
/// in a pass from its end (a scan from each call message was quadratic in
/// a turn of many calls, each a message of its own: Responses' items).
/// Each list has one more entry than there are messages; `n` is none.
struct Reach {
    /// From each message on, the first that is neither a result nor the
    /// assistant's.
    next_speaker: Vec<usize>,
    /// From each message on, the first that is not the assistant's.
    next_not_assistant: Vec<usize>,
    /// For each message of the assistant's, where its run of them starts.
    run_start: Vec<usize>,
    /// Where each turn starts (see [`turns`]).
    turn_starts: Vec<usize>,
}

impl Reach {
    fn of(msgs: &[Message], turns: &[usize]) -> Reach {
        let n = msgs.len();
        let assistant = |k: usize| msgs[k].role == Role::Assistant;
        let mut next_speaker = vec![n; n + 1];
        let mut next_not_assistant = vec![n; n + 1];
        for k in (0..n).rev() {
            next_speaker[k] = if !assistant(k) && !msgs[k].role.is_result() {
                k
            } else {
                next_speaker[k + 1]
            };
            next_not_assistant[k] = if assistant(k) {
                next_not_assistant[k + 1]
            } else {
                k
            };
        }
        let mut run_start = vec![0; n];
        for k in 0..n {
            run_start[k] = if k > 0 && assistant(k) && assistant(k - 1) {
                run_start[k - 1]
            } else {
                k
            };
        }
        let mut turn_starts = Vec::new();
        for (k, &t) in turns.iter().enumerate() {
            if turn_starts.len() <= t {
                turn_starts.push(k);
            }
        }
        Reach {
            next_speaker,
            next_not_assistant,
            run_start,
            turn_starts,
        }
    }
}

/// Results come right after their call. OpenAI: only other results of the
/// same assistant message in between. Anthropic and Gemini merge
/// consecutive turns of one role: the results must be in the user turn right
/// after the assistant turn that holds the call.
fn placement(
    p: &Placing,
    first_breaks: &mut FastMap<(usize, usize), Option<usize>>,
    i: usize,
    r: crate::pairs::CallRef,
    out: &mut Vec<Problem>,
) {
    let (msgs, provider) = (p.msgs, p.provider);
    // Once per answer: its call messages share it.
    let answer = p.answer(r.message);
    let first = *first_breaks
        .entry((answer.start, answer.end))
        .or_insert_with(|| first_break(p, r.message));
    let before = first.filter(|&k| k < i);
    let between = match provider {
        Provider::OpenAi | Provider::Responses => before,
        _ => before.or_else(|| (p.turns[i] != p.turns[r.message] + 1).then(|| i - 1)),
    };
    let Some(k) = between else {
        return;
    };
    let what = match provider {
        Provider::Anthropic => "tool results must be in the user turn right after the tool_use",
        Provider::Gemini => "function responses must come right after the function call",
        Provider::OpenAi => "tool messages must follow the assistant message with the tool call",
        Provider::Responses => {
            "a function_call_output must come before the next user or system message"
        }
    };
    out.push(Problem::at(
        i,
        "result-placement",
        format!(
            "tool result for {} comes after message {k}, not right after its call in message {}: {what}",
            call_name(&msgs[r.message].calls()[r.call].id),
            r.message
        ),
    ));
}

fn roles(msgs: &[Message], provider: Provider, answer: bool, out: &mut Vec<Problem>) {
    // Where the instructions at the start end.
    let lead = msgs.iter().take_while(|m| m.role.is_instruction()).count();
    for (i, m) in msgs.iter().enumerate() {
        match (provider, m.role) {
            (Provider::OpenAi | Provider::Responses, _) => {}
            (_, Role::System | Role::Developer) if i >= lead => out.push(Problem::at(
                i,
                "role-order",
                format!(
                    "{} message after the conversation started ({} takes system instructions only at the start)",
                    a_role(m.role),
                    provider.name()
                ),
            )),
            (Provider::Anthropic, Role::Function) => out.push(Problem::at(
                i,
                "role",
                "role \"function\" is not an Anthropic role (tool results go in a user turn)",
            )),
            _ => {}
        }
    }
    if provider.user_first() && !answer {
        if let Some(first) = msgs.get(lead) {
            if first.role != Role::User {
                out.push(Problem::at(
                    lead,
                    "role-order",
                    format!(
                        "the first message after the system instructions is from the {}; {} requires the user first",
                        first.role.as_str(),
                        provider.name()
                    ),
                ));
            }
        } else {
            out.push(Problem {
                message: None,
                code: "role-order",
                problem: format!(
                    "only system instructions: {} needs a user message",
                    provider.name()
                ),
            });
        }
    }
}

/// A request body's own fields, in the provider's own format: tools in its
/// shape (not another provider's), its tool choice, Anthropic's required
/// `max_tokens`.
fn request(env: &serde_json::Map<String, Value>, provider: Provider, out: &mut Vec<Problem>) {
    let mut problem = |what: String| {
        out.push(Problem {
            message: None,
            code: "request",
            problem: what,
        })
    };
    if provider == Provider::Anthropic && !env.contains_key("max_tokens") {
        problem("the request has no max_tokens (anthropic requires one)".into());
    }
    let tools = env.get("tools").and_then(Value::as_array);
    for (k, t) in tools.into_iter().flatten().enumerate() {
        let Some(t) = t.as_object() else {
            problem(format!("tools[{k}] is not an object"));
            continue;
        };
        let ty = t.get("type").and_then(Value::as_str);
        let wrong = match provider {
            Provider::Anthropic if t.contains_key("function") || ty == Some("function") => Some(
                "is in OpenAI's shape ({type: function, function: …}); anthropic takes {name, description, input_schema}",
            ),
            Provider::Anthropic if ty.is_none() && !t.contains_key("input_schema") => {
                Some("has no input_schema")
            }
            Provider::OpenAi if t.contains_key("input_schema") => Some(
                "is in Anthropic's shape (input_schema); openai takes {type: function, function: {name, parameters}}",
            ),
            Provider::OpenAi if ty == Some("function") && !t.get("function").is_some_and(Value::is_object) => {
                Some("has no function object")
            }
            Provider::Responses if t.contains_key("function") => Some(
                "is in Chat Completions' shape (function: {…}); responses takes {type: function, name, parameters}",
            ),
            Provider::Gemini if t.contains_key("function") || t.contains_key("input_schema") || ty.is_some() => {
                Some("is not in Gemini's shape; gemini takes {functionDeclarations: [{name, parameters}]}")
            }
            _ => None,
        };
        if let Some(why) = wrong {
            problem(format!("tools[{k}] {why}"));
        }
    }
    if let Some(choice) = env.get("tool_choice") {
        let ok = match provider {
            Provider::Anthropic => choice
                .get("type")
                .and_then(Value::as_str)
                .is_some_and(|t| matches!(t, "auto" | "any" | "tool" | "none")),
            Provider::OpenAi | Provider::Responses => {
                choice
                    .as_str()
                    .is_some_and(|c| matches!(c, "auto" | "none" | "required"))
                    || choice.get("type").is_some()
            }
            Provider::Gemini => false,
        };
        if !ok {
            problem(format!(
                "tool_choice {choice} is not {} tool choice",
                match provider {
                    Provider::Anthropic => "an anthropic",
                    Provider::Gemini => "a gemini (which uses toolConfig)",
                    _ => "an openai",
                }
            ));
        }
    }
}

/// Block types each provider's own format may carry, by role.
fn known_type(provider: Provider, role: Role, ty: &str) -> bool {
    match provider {
        Provider::OpenAi => match role {
            Role::User => matches!(ty, "text" | "image_url" | "input_audio" | "file"),
            Role::Assistant => matches!(ty, "text" | "refusal"),
            _ => ty == "text",
        },
        Provider::Anthropic => matches!(
            ty,
            "text"
                | "image"
                | "document"
                | "search_result"
                | "thinking"
                | "redacted_thinking"
                | "tool_use"
                | "tool_result"
                | "server_tool_use"
                | "web_search_tool_result"
                | "web_fetch_tool_result"
                | "code_execution_tool_result"
                | "bash_code_execution_tool_result"
                | "text_editor_code_execution_tool_result"
                | "mcp_tool_use"
                | "mcp_tool_result"
                | "container_upload"
                | "compaction"
        ),
        // A Gemini part is `{text}`, `{inlineData}`, `{functionCall}`…
        // and has no `type`: the API answers `Unknown name "type"`.
        Provider::Gemini => false,
        Provider::Responses => matches!(
            ty,
            "input_text"
                | "output_text"
                | "input_image"
                | "input_file"
                | "input_audio"
                | "refusal"
                | "reasoning"
                | "summary_text"
        ),
    }
}

/// The calls of the tool cycle in progress in Responses items: the run of
/// assistant items (calls, reasoning) that ends at the last call, when
/// nothing but outputs of its calls follows.
fn responses_active(
    msgs: &[Message],
    pairing: &Pairing,
) -> Option<std::ops::RangeInclusive<usize>> {
    let end = msgs.iter().rposition(|m| m.has_calls())?;
    let start = (0..=end)
        .rev()
        .take_while(|&k| msgs[k].role == Role::Assistant)
        .last()?;
    let only_outputs = (end + 1..msgs.len()).all(|k| {
        pairing
            .result_of(k)
            .is_some_and(|r| (start..=end).contains(&r.message))
    });
    only_outputs.then_some(start..=end)
}

/// The API message a Claude Code line is a block of (`message.id`): the
/// lines of one message are sent as one, so they are judged as one.
fn api_message_id(m: &Message) -> Option<&str> {
    m.fields.get("id")?.as_str()
}

/// Content a provider rejects before it looks at the rest: an empty list
/// (OpenAI: `expected an array with minimum length 1`; Anthropic and Gemini
/// reject empty content too), an Anthropic text block of white space.
fn empty_parts(
    i: usize,
    m: &Message,
    last: bool,
    format: Format,
    provider: Provider,
    out: &mut Vec<Problem>,
) {
    // A message whose calls are blocks of its content (Anthropic's
    // tool_use) reads as no parts and calls: only an OpenAI message's list
    // is its whole content.
    let whole = provider.own_format(format) && matches!(provider, Provider::OpenAi)
        || !(m.has_calls() || m.role.is_result());
    if whole && matches!(&m.content, Content::Parts(ps) if ps.is_empty()) {
        out.push(Problem::at(
            i,
            "empty-content",
            format!("{} message's content is an empty list", m.role.as_str()),
        ));
    }
    if provider == Provider::Anthropic && !(last && m.role == Role::Assistant) {
        // `last`: the final assistant message, or a line of an API message
        // whose other lines say something (Claude Code).
        let white = m.content.parts().iter().position(
            |p| matches!(&p.kind, PartKind::Text(t) if !t.is_empty() && t.trim().is_empty()),
        );
        if let Some(p) = white {
            out.push(Problem::at(
                i,
                "empty-content",
                format!("part {p}: text content blocks must contain non-whitespace text"),
            ));
        }
    }
}

fn content(msgs: &[Message], format: Format, provider: Provider, out: &mut Vec<Problem>) {
    let last = msgs.len() - 1;
    let mut said: FastMap<&str, bool> = FastMap::default();
    if format == Format::ClaudeCode {
        for m in msgs {
            if let Some(id) = api_message_id(m) {
                *said.entry(id).or_default() |= !m.content.is_blank() || m.has_calls();
            }
        }
    }
    for (i, m) in msgs.iter().enumerate() {
        // Only Claude Code splits messages (looking costs a parse of each
        // message's object, held lazily).
        let merged = format == Format::ClaudeCode
            && api_message_id(m).and_then(|id| said.get(id)) == Some(&true);
        let blank = m.content.is_blank() && !m.has_calls() && !merged;
        // A block of white space among the blocks of one API message is
        // judged with them: the API saw them together.
        empty_parts(i, m, i == last || merged, format, provider, out);
        match provider {
            Provider::OpenAi
                if m.role == Role::Assistant
                    && matches!(m.content, Content::Absent | Content::Null)
                    && !m.has_calls() =>
            {
                out.push(Problem::at(
                    i,
                    "empty-content",
                    "assistant message has neither content nor tool calls",
                ));
            }
            Provider::OpenAi | Provider::Responses => {}
            // Anthropic and Gemini reject empty content; a final assistant
            // message (a prefill) may be empty.
            _ if blank && !(i == last && m.role == Role::Assistant) && !m.role.is_result() => out
                .push(Problem::at(
                    i,
                    "empty-content",
                    format!("{} message has empty content", m.role.as_str()),
                )),
            _ => {}
        }
        for (p, part) in m.content.parts().iter().enumerate() {
            if let PartKind::Image(_) = part.kind {
                let allowed = match provider {
                    Provider::OpenAi => m.role == Role::User,
                    Provider::Responses => matches!(m.role, Role::User | Role::Tool),
                    Provider::Anthropic => {
                        matches!(m.role, Role::User | Role::Tool | Role::Function)
                    }
                    Provider::Gemini => true,
                };
                if !allowed {
                    out.push(Problem::at(
                        i,
                        "content-type",
                        format!(
                            "part {p}: an image in {} message ({} takes images from the user{})",
                            a_role(m.role),
                            provider.name(),
                            if matches!(provider, Provider::Anthropic | Provider::Responses) {
                                " and in tool results"
                            } else {
                                " only"
                            }
                        ),
                    ));
                }
                continue;
            }
            if provider == Provider::OpenAi && m.role != Role::User && m.role != Role::Assistant {
                if let PartKind::Other = part.kind {
                    out.push(Problem::at(
                        i,
                        "content-type",
                        format!(
                            "part {p}: {} messages take text parts only",
                            m.role.as_str()
                        ),
                    ));
                    continue;
                }
            }
            if provider.own_format(format) {
                if let Some(ty) = crate::json::field(&part.raw, "type").and_then(Value::as_str) {
                    if !known_type(provider, m.role, ty) {
                        out.push(Problem::at(
                            i,
                            "content-type",
                            format!(
                                "part {p}: type \"{ty}\" is not accepted in {} message by {}",
                                a_role(m.role),
                                provider.name()
                            ),
                        ));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pairs::tests::{call_msg, result_msg};

    fn v(msgs: Vec<Message>, p: Provider) -> Vec<&'static str> {
        validate(&Conversation::new(msgs), Format::OpenAi, p)
            .into_iter()
            .map(|p| p.code)
            .collect()
    }

    fn user(t: &str) -> Message {
        Message::new(Role::User, t)
    }

    #[test]
    fn a_gemini_part_with_a_type_is_refused() {
        use crate::transcript::Part;
        // Gemini's parts have no `type` (`Unknown name "type"`): a chat
        // text part written into a Gemini body is caught here.
        let mut m = user("");
        m.content = Content::Parts(vec![Part::text_part("hi")]);
        let problems = validate(
            &Conversation::new(vec![m.clone()]),
            Format::Gemini,
            Provider::Gemini,
        );
        assert!(
            problems.iter().any(|p| p.code == "content-type"),
            "{problems:?}"
        );
        m.content = Content::Parts(vec![Part {
            raw: serde_json::json!({"text": "hi"}).into(),
            ..Part::text_part("hi")
        }]);
        assert!(validate(
            &Conversation::new(vec![m]),
            Format::Gemini,
            Provider::Gemini
        )
        .is_empty());
    }

    #[test]
    fn valid_conversations_pass() {
        for p in [Provider::OpenAi, Provider::Anthropic, Provider::Gemini] {
            let ok = vec![
                Message::new(Role::System, "s"),
                user("q"),
                call_msg(&["a", "b"]),
                result_msg("a"),
                result_msg("b"),
                Message::new(Role::Assistant, "done"),
            ];
            assert_eq!(v(ok, p), Vec::<&str>::new(), "{p:?}");
            // An active cycle at the end is fine.
            assert_eq!(v(vec![user("q"), call_msg(&["a"])], p), Vec::<&str>::new());
        }
    }

    #[test]
    fn pairing_problems() {
        let p = Provider::OpenAi;
        assert_eq!(v(vec![user("q"), result_msg("x")], p), ["orphan-result"]);
        assert_eq!(
            v(vec![user("q"), call_msg(&["a"]), user("again")], p),
            ["unanswered-call"]
        );
        assert_eq!(
            v(
                vec![
                    user("q"),
                    call_msg(&["a"]),
                    result_msg("a"),
                    call_msg(&["a"]),
                    result_msg("a")
                ],
                p
            ),
            ["duplicate-id"]
        );
        assert_eq!(
            v(
                vec![user("q"), call_msg(&["a"]), user("wait"), result_msg("a")],
                p
            ),
            ["result-placement"]
        );
    }

    #[test]
    fn where_a_result_may_come_is_found_for_each_provider_in_turns_of_many_calls() {
        let at = |msgs: Vec<Message>, p: Provider| -> Vec<Option<usize>> {
            validate(&Conversation::new(msgs), Format::OpenAi, p)
                .into_iter()
                .filter(|x| x.code == "result-placement")
                .map(|x| x.message)
                .collect()
        };
        // Responses: one item per call, then their outputs; only the user
        // or the system may not come between.
        let items = |between: Message| {
            vec![
                user("q"),
                call_msg(&["a"]),
                call_msg(&["b"]),
                result_msg("a"),
                between,
                result_msg("b"),
            ]
        };
        let r = Provider::Responses;
        assert_eq!(at(items(Message::new(Role::Assistant, "so")), r), []);
        assert_eq!(at(items(user("wait")), r), [Some(5)]);
        // Anthropic: in the user turn right after the call's turn, before
        // anything else; an answer in between starts a later turn.
        let turns = vec![
            user("q"),
            call_msg(&["a", "b"]),
            result_msg("a"),
            Message::new(Role::Assistant, "hi"),
            result_msg("b"),
        ];
        assert_eq!(at(turns.clone(), Provider::Anthropic), [Some(4)]);
        assert_eq!(at(turns, Provider::OpenAi), [Some(4)]);
    }

    #[test]
    fn role_order_per_provider() {
        let late_system = vec![
            user("q"),
            Message::new(Role::System, "s"),
            Message::new(Role::Assistant, "a"),
        ];
        assert!(v(late_system.clone(), Provider::OpenAi).is_empty());
        assert_eq!(v(late_system.clone(), Provider::Anthropic), ["role-order"]);
        assert_eq!(v(late_system, Provider::Gemini), ["role-order"]);
        let assistant_first = vec![Message::new(Role::Assistant, "hi"), user("q")];
        assert!(v(assistant_first.clone(), Provider::OpenAi).is_empty());
        assert_eq!(v(assistant_first, Provider::Anthropic), ["role-order"]);
    }

    #[test]
    fn claude_code_lines_of_one_api_message_are_judged_as_one() {
        // Issue 29: Claude Code writes each block of a reply as a line of
        // its own (one `message.id`); an empty text line before a tool_use
        // line is not an empty message.
        let line = |uuid: &str, parent: &str, message: Value| {
            serde_json::json!({"parentUuid": parent, "isSidechain": false, "type": message["role"],
                "uuid": uuid, "sessionId": "s", "message": message})
            .to_string()
        };
        let text = [
            line("u1", "", serde_json::json!({"role": "user", "content": "run ls"})),
            line("a1", "u1", serde_json::json!({"id": "msg_1", "type": "message", "role": "assistant",
                "content": [{"type": "text", "text": ""}]})),
            line("a2", "a1", serde_json::json!({"id": "msg_1", "type": "message", "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]})),
            line("u2", "a2", serde_json::json!({"role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.txt"}]})),
            line("a3", "u2", serde_json::json!({"id": "msg_2", "type": "message", "role": "assistant",
                "content": [{"type": "text", "text": "Done."}]})),
        ]
        .join("\n");
        let doc = crate::format::read_document("s.jsonl", text.into_bytes(), &Default::default())
            .unwrap();
        assert_eq!(doc.source_format, Format::ClaudeCode);
        let problems = validate(
            &doc.conversations[0],
            Format::ClaudeCode,
            Provider::Anthropic,
        );
        assert!(problems.is_empty(), "{problems:?}");
    }

    #[test]
    fn empty_lists_and_white_space_only_blocks() {
        // Issue 29: what `convert` wrote and `validate` accepted.
        let mut a = Message::new(Role::Assistant, "");
        a.content = Content::Parts(Vec::new());
        let msgs = vec![user("q"), a, user("again")];
        assert_eq!(v(msgs.clone(), Provider::OpenAi), ["empty-content"]);
        let mut u = user("");
        use crate::transcript::Part;
        u.content = Content::Parts(vec![Part::text_part(" \n"), Part::text_part("q")]);
        let msgs = vec![u, Message::new(Role::Assistant, "a")];
        assert_eq!(v(msgs.clone(), Provider::Anthropic), ["empty-content"]);
        assert!(v(msgs, Provider::OpenAi).is_empty());
    }

    #[test]
    fn empty_content_and_images() {
        let empty = vec![user(""), Message::new(Role::Assistant, "a")];
        assert!(v(empty.clone(), Provider::OpenAi).is_empty());
        assert_eq!(v(empty, Provider::Anthropic), ["empty-content"]);
        let prefill = vec![user("q"), Message::new(Role::Assistant, "")];
        assert!(v(prefill, Provider::Anthropic).is_empty());
        let mut a = Message::new(Role::Assistant, "");
        a.content = Content::Null;
        assert_eq!(v(vec![user("q"), a], Provider::OpenAi), ["empty-content"]);
        let mut img = Message::new(Role::Assistant, "");
        img.content = Content::Parts(vec![crate::transcript::Part {
            kind: PartKind::Image(crate::transcript::Image::default()),
            raw: Value::Null.into(),
            slot: None,
        }]);
        assert_eq!(v(vec![user("q"), img], Provider::OpenAi), ["content-type"]);
    }
}
