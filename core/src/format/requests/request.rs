//! Converting to a request format: one request body per conversation, as
//! the target's API (or library) takes it as it stands.
//!
//! The messages are converted by the target's dialect; this module carries
//! what sits around them, the request's own fields, read from the source's
//! envelope in any request format and written in the target's:
//!
//! | field | openai | anthropic | responses | gemini | sharegpt, hf-chat |
//! |---|---|---|---|---|---|
//! | tools | `tools[].function` (`functions`) | `tools[]` with `input_schema` | `tools[]` (flat) | `tools[].functionDeclarations` | `tools` |
//! | tool choice | `tool_choice` | `tool_choice.type` | `tool_choice` | `toolConfig.functionCallingConfig` | — |
//! | output limit | `max_tokens`, `max_completion_tokens` | `max_tokens` (required) | `max_output_tokens` | `generationConfig.maxOutputTokens` | — |
//! | sampling | `temperature`, `top_p`, `stop` | `temperature`, `top_p`, `stop_sequences` | `temperature`, `top_p` | `generationConfig` | — |
//! | model | `model` (when it is the target's) | `model` | `model` | (in the URL) | — |
//!
//! Whatever does not map (a field the target has no place for, a built-in
//! tool, a model of another provider) is reported as a loss of the request.
//! Parallel calls stay parallel: for targets where one assistant turn holds
//! all its calls, consecutive assistant messages that make one turn
//! (Responses items, Claude Code's one block per line) are merged first.

use serde_json::{Map, Value};

use crate::format::dialect::Loss;
use crate::format::Format;
use crate::transcript::{Content, Message, MessageData, Part, PartKind, Role};

/// A tool the model may call, in no format's shape.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Tool {
    name: String,
    description: Option<String>,
    /// The JSON Schema of the arguments.
    parameters: Value,
}

/// Which tool the model must (or may) call.
#[derive(Clone, Debug, PartialEq)]
enum Choice {
    Auto,
    None,
    Required,
    Named(String),
}

/// A request's fields, in no format's shape.
#[derive(Clone, Debug, Default)]
pub(crate) struct Params {
    model: Option<String>,
    max_tokens: Option<Value>,
    temperature: Option<Value>,
    top_p: Option<Value>,
    stop: Option<Value>,
    tools: Vec<Tool>,
    choice: Option<Choice>,
    /// Fields read but not modelled, carried to a target of the same family.
    unknown: Vec<(String, Value)>,
}

/// The keys of an envelope that hold messages or the system prompt, per
/// source format: never request fields.
fn message_keys(format: Format) -> &'static [&'static str] {
    match format {
        Format::OpenAi => &["messages", "history", "trajectory"],
        Format::Anthropic => &["messages", "system"],
        Format::Responses => &["input", "instructions"],
        Format::Gemini => &[
            "contents",
            "history",
            "messages",
            "systemInstruction",
            "system_instruction",
        ],
        Format::ShareGpt => &["conversations", "items", "system"],
        Format::HfChat => &[
            "conversations",
            "prompt",
            "chosen",
            "rejected",
            "completion",
        ],
        Format::LangChain => &["messages"],
        _ => &[],
    }
}

/// Whether a format is an API request body (its fields are request fields)
/// rather than a log or an export (whose fields are its own bookkeeping).
fn has_request_fields(format: Format) -> bool {
    matches!(
        format,
        Format::OpenAi | Format::Anthropic | Format::Responses | Format::Gemini
    ) || matches!(format, Format::ShareGpt | Format::HfChat)
}

fn string(v: Option<&Value>) -> Option<String> {
    v?.as_str().map(str::to_string)
}

/// A tool from a function object `{name, description, parameters}` (or
/// Anthropic's `input_schema`, Gemini's `parametersJsonSchema`).
fn tool_of(f: &Map<String, Value>) -> Option<Tool> {
    Some(Tool {
        name: f.get("name")?.as_str()?.to_string(),
        description: string(f.get("description")),
        parameters: f
            .get("parameters")
            .or_else(|| f.get("input_schema"))
            .or_else(|| f.get("parametersJsonSchema"))
            .cloned()
            .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}})),
    })
}

impl Params {
    /// The fields of a conversation's envelope read as `format`; what does
    /// not map is reported in `losses` when it is dropped, later.
    pub(crate) fn read(
        format: Format,
        env: Option<&Map<String, Value>>,
        losses: &mut Vec<Loss>,
    ) -> Params {
        let mut p = Params::default();
        let Some(env) = env else { return p };
        if crate::format::answer::format_of(env).is_some() {
            p.read_answer(format, env, losses);
            return p;
        }
        if !has_request_fields(format) {
            let fields: Vec<&str> = env
                .keys()
                .map(String::as_str)
                .filter(|k| !message_keys(format).contains(k))
                .collect();
            if !fields.is_empty() {
                losses.push(Loss::request(
                    format!("field {}", fields.join(", ")),
                    format!("{format} bookkeeping is not part of a request"),
                ));
            }
            return p;
        }
        for (key, value) in env {
            if message_keys(format).contains(&key.as_str()) || value.is_null() {
                continue;
            }
            match key.as_str() {
                "model" => p.model = string(Some(value)),
                "max_tokens" | "max_completion_tokens" | "max_output_tokens" => {
                    p.max_tokens = Some(value.clone())
                }
                "temperature" => p.temperature = Some(value.clone()),
                "top_p" => p.top_p = Some(value.clone()),
                "stop" | "stop_sequences" => p.stop = Some(value.clone()),
                "generationConfig" | "generation_config" => {
                    let Some(g) = value.as_object() else { continue };
                    for (k, v) in g {
                        match k.as_str() {
                            "maxOutputTokens" | "max_output_tokens" => {
                                p.max_tokens = Some(v.clone())
                            }
                            "temperature" => p.temperature = Some(v.clone()),
                            "topP" | "top_p" => p.top_p = Some(v.clone()),
                            "stopSequences" | "stop_sequences" => p.stop = Some(v.clone()),
                            _ => p.unknown.push((format!("generationConfig.{k}"), v.clone())),
                        }
                    }
                }
                "tools" | "functions" => p.read_tools(format, key, value, losses),
                "tool_choice" | "toolConfig" | "tool_config" | "function_call" => {
                    p.choice = read_choice(value);
                    if p.choice.is_none() {
                        p.unknown.push((key.clone(), value.clone()));
                    }
                }
                _ => p.unknown.push((key.clone(), value.clone())),
            }
        }
        p
    }

    /// An answer's fields: its model and tools go on (the request's), its
    /// own (ids, stop reason, usage) are said lost.
    fn read_answer(&mut self, format: Format, env: &Map<String, Value>, losses: &mut Vec<Loss>) {
        let mut dropped = Vec::new();
        for (key, value) in env {
            match key.as_str() {
                "model" | "modelVersion" => self.model = string(Some(value)),
                "tools" if !value.is_null() => self.read_tools(format, key, value, losses),
                "role" | "content" | "choices" | "output" | "candidates" => {}
                _ if value.is_null() => {}
                _ => dropped.push(key.as_str()),
            }
        }
        if !dropped.is_empty() {
            losses.push(Loss::request(
                format!("field {}", dropped.join(", ")),
                "an answer's own fields are not part of a request",
            ));
        }
    }

    fn read_tools(&mut self, format: Format, key: &str, value: &Value, losses: &mut Vec<Loss>) {
        // ShareGPT sets keep their tools as a JSON text.
        let parsed;
        let value = match value {
            Value::String(s) => match serde_json::from_str::<Value>(s) {
                Ok(v) => {
                    parsed = v;
                    &parsed
                }
                Err(_) => return,
            },
            v => v,
        };
        let Some(list) = value.as_array() else { return };
        for t in list.iter().filter_map(Value::as_object) {
            let tool = if let Some(Value::Object(f)) = t.get("function") {
                tool_of(f)
            } else if let Some(Value::Array(decls)) = t
                .get("functionDeclarations")
                .or_else(|| t.get("function_declarations"))
            {
                for d in decls.iter().filter_map(Value::as_object) {
                    if let Some(tool) = tool_of(d) {
                        self.tools.push(tool);
                    }
                }
                let others: Vec<&String> = t
                    .keys()
                    .filter(|k| {
                        !matches!(k.as_str(), "functionDeclarations" | "function_declarations")
                    })
                    .collect();
                if !others.is_empty() {
                    losses.push(Loss::request(
                        "built-in tool",
                        format!(
                            "{} is a gemini tool only",
                            others
                                .iter()
                                .map(|k| k.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    ));
                }
                continue;
            } else if t
                .get("type")
                .and_then(Value::as_str)
                .is_some_and(|ty| ty != "function" && ty != "custom")
                && !t.contains_key("input_schema")
            {
                losses.push(Loss::request(
                    "built-in tool",
                    format!(
                        "{} is {} tool only",
                        t.get("type").and_then(Value::as_str).unwrap_or("?"),
                        a_or_an(format.name())
                    ),
                ));
                continue;
            } else {
                tool_of(t)
            };
            match tool {
                Some(tool) => self.tools.push(tool),
                None => losses.push(Loss::request("tool", format!("a {key} entry has no name"))),
            }
        }
    }

    /// Writes the fields into a `target` body, reporting what does not map.
    pub(crate) fn write(
        &self,
        source: Format,
        target: Format,
        body: &mut Map<String, Value>,
        losses: &mut Vec<Loss>,
        notes: &mut Vec<String>,
    ) {
        let family = |f: Format| match f {
            Format::OpenAi | Format::Responses => "openai",
            Format::Anthropic => "anthropic",
            Format::Gemini => "gemini",
            _ => "dataset",
        };
        if let Some(model) = &self.model {
            let own = match family(target) {
                "anthropic" => model.starts_with("claude"),
                "gemini" => false, // the model is in the URL
                "openai" => !model.starts_with("claude") && !model.starts_with("gemini"),
                _ => false,
            };
            if own {
                body.insert("model".into(), Value::from(model.as_str()));
            } else {
                losses.push(Loss::request(
                    format!("model {model}"),
                    match family(target) {
                        "gemini" => "a gemini request names its model in the URL".to_string(),
                        "dataset" => format!("{target} rows have no model"),
                        _ => format!("not {} model", a_or_an(target.name())),
                    },
                ));
            }
        }
        let mut gen = Map::new();
        match (target, &self.max_tokens) {
            (Format::OpenAi | Format::Anthropic, Some(v)) => {
                body.insert("max_tokens".into(), v.clone());
            }
            (Format::Anthropic, None) => {
                body.insert("max_tokens".into(), Value::from(DEFAULT_MAX_TOKENS));
                notes.push(format!(
                    "max_tokens {DEFAULT_MAX_TOKENS} set: anthropic requires one and the input had none"
                ));
            }
            (Format::Responses, Some(v)) => {
                body.insert("max_output_tokens".into(), v.clone());
            }
            (Format::Gemini, Some(v)) => {
                gen.insert("maxOutputTokens".into(), v.clone());
            }
            (_, Some(_)) => losses.push(Loss::request(
                "field max_tokens",
                format!("{target} rows have no output limit"),
            )),
            (_, None) => {}
        }
        for (name, value, gemini) in [
            ("temperature", &self.temperature, "temperature"),
            ("top_p", &self.top_p, "topP"),
        ] {
            let Some(v) = value else { continue };
            match target {
                Format::OpenAi | Format::Anthropic | Format::Responses => {
                    body.insert(name.into(), v.clone());
                }
                Format::Gemini => {
                    gen.insert(gemini.into(), v.clone());
                }
                _ => losses.push(Loss::request(
                    format!("field {name}"),
                    format!("{target} rows have no sampling settings"),
                )),
            }
        }
        if let Some(stop) = &self.stop {
            let list = match stop {
                Value::String(s) => Value::Array(vec![Value::from(s.as_str())]),
                v => v.clone(),
            };
            match target {
                Format::OpenAi => {
                    body.insert("stop".into(), stop.clone());
                }
                Format::Anthropic => {
                    body.insert("stop_sequences".into(), list);
                }
                Format::Gemini => {
                    gen.insert("stopSequences".into(), list);
                }
                _ => losses.push(Loss::request(
                    "field stop",
                    format!("{target} has no stop sequences"),
                )),
            }
        }
        if !gen.is_empty() {
            body.insert("generationConfig".into(), Value::Object(gen));
        }
        self.write_tools(target, body, losses);
        // Fields of the same API family travel; others do not map.
        for (key, value) in &self.unknown {
            if family(source) == family(target) && family(target) != "dataset" {
                body.insert(key.clone(), value.clone());
            } else {
                losses.push(Loss::request(
                    format!("field {key}"),
                    format!("{target} has no such field"),
                ));
            }
        }
    }

    fn write_tools(&self, target: Format, body: &mut Map<String, Value>, losses: &mut Vec<Loss>) {
        if !self.tools.is_empty() {
            let list: Vec<Value> = self
                .tools
                .iter()
                .map(|t| {
                    let mut f = Map::new();
                    f.insert("name".into(), Value::from(t.name.as_str()));
                    if let Some(d) = &t.description {
                        f.insert("description".into(), Value::from(d.as_str()));
                    }
                    match target {
                        Format::Anthropic => {
                            f.insert("input_schema".into(), t.parameters.clone());
                            Value::Object(f)
                        }
                        Format::Responses => {
                            let mut r = Map::new();
                            r.insert("type".into(), Value::from("function"));
                            r.extend(f);
                            r.insert("parameters".into(), t.parameters.clone());
                            Value::Object(r)
                        }
                        Format::Gemini => {
                            f.insert(
                                "parameters".into(),
                                gemini_schema(&t.parameters, &t.name, losses),
                            );
                            Value::Object(f)
                        }
                        Format::ShareGpt => {
                            f.insert("parameters".into(), t.parameters.clone());
                            Value::Object(f)
                        }
                        _ => {
                            f.insert("parameters".into(), t.parameters.clone());
                            serde_json::json!({"type": "function", "function": Value::Object(f)})
                        }
                    }
                })
                .collect();
            match target {
                Format::Gemini => {
                    body.insert(
                        "tools".into(),
                        serde_json::json!([{ "functionDeclarations": list }]),
                    );
                }
                // LLaMA-Factory keeps them as a JSON text.
                Format::ShareGpt => {
                    body.insert("tools".into(), Value::from(Value::Array(list).to_string()));
                }
                Format::LangChain => losses.push(Loss::request(
                    format!("{} tool definitions", self.tools.len()),
                    "a langchain message list has no tools",
                )),
                _ => {
                    body.insert("tools".into(), Value::Array(list));
                }
            }
        }
        let Some(choice) = &self.choice else { return };
        let v = match (target, choice) {
            (Format::OpenAi | Format::Responses, Choice::Auto) => Value::from("auto"),
            (Format::OpenAi | Format::Responses, Choice::None) => Value::from("none"),
            (Format::OpenAi | Format::Responses, Choice::Required) => Value::from("required"),
            (Format::OpenAi, Choice::Named(n)) => {
                serde_json::json!({"type": "function", "function": {"name": n}})
            }
            (Format::Responses, Choice::Named(n)) => {
                serde_json::json!({"type": "function", "name": n})
            }
            (Format::Anthropic, Choice::Auto) => serde_json::json!({"type": "auto"}),
            (Format::Anthropic, Choice::None) => serde_json::json!({"type": "none"}),
            (Format::Anthropic, Choice::Required) => serde_json::json!({"type": "any"}),
            (Format::Anthropic, Choice::Named(n)) => serde_json::json!({"type": "tool", "name": n}),
            (Format::Gemini, c) => {
                let config = match c {
                    Choice::Auto => serde_json::json!({"mode": "AUTO"}),
                    Choice::None => serde_json::json!({"mode": "NONE"}),
                    Choice::Required => serde_json::json!({"mode": "ANY"}),
                    Choice::Named(n) => {
                        serde_json::json!({"mode": "ANY", "allowedFunctionNames": [n]})
                    }
                };
                body.insert(
                    "toolConfig".into(),
                    serde_json::json!({ "functionCallingConfig": config }),
                );
                return;
            }
            _ => {
                losses.push(Loss::request(
                    "tool choice",
                    format!("{target} has no tool choice"),
                ));
                return;
            }
        };
        body.insert("tool_choice".into(), v);
    }
}

/// A name with its article: `an openai`, `a gemini`.
fn a_or_an(name: &str) -> String {
    let article = if name.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {name}")
}

/// The output limit set for Anthropic when the input had none.
pub(crate) const DEFAULT_MAX_TOKENS: u64 = 4096;

/// Reads a tool choice in any format's shape.
fn read_choice(v: &Value) -> Option<Choice> {
    match v {
        Value::String(s) => match s.as_str() {
            "auto" => Some(Choice::Auto),
            "none" => Some(Choice::None),
            "required" | "any" => Some(Choice::Required),
            _ => None,
        },
        Value::Object(o) => {
            if let Some(Value::Object(f)) = o
                .get("functionCallingConfig")
                .or_else(|| o.get("function_calling_config"))
            {
                let named = f
                    .get("allowedFunctionNames")
                    .and_then(Value::as_array)
                    .filter(|l| l.len() == 1)
                    .and_then(|l| l[0].as_str());
                return match (f.get("mode").and_then(Value::as_str), named) {
                    (Some("ANY"), Some(n)) => Some(Choice::Named(n.to_string())),
                    (Some("ANY"), None) => Some(Choice::Required),
                    (Some("NONE"), _) => Some(Choice::None),
                    (Some("AUTO"), _) => Some(Choice::Auto),
                    _ => None,
                };
            }
            let name = o
                .get("name")
                .or_else(|| o.get("function").and_then(|f| f.get("name")))
                .and_then(Value::as_str);
            match (o.get("type").and_then(Value::as_str), name) {
                (Some("auto"), _) => Some(Choice::Auto),
                (Some("none"), _) => Some(Choice::None),
                (Some("any"), _) => Some(Choice::Required),
                (_, Some(n)) => Some(Choice::Named(n.to_string())),
                _ => None,
            }
        }
        _ => None,
    }
}

/// A JSON Schema as Gemini's `parameters` take it: the OpenAPI subset, so
/// keywords it rejects (`additionalProperties`, `$schema`, `strict`, …) are
/// dropped, and reported.
fn gemini_schema(schema: &Value, tool: &str, losses: &mut Vec<Loss>) -> Value {
    const UNSUPPORTED: &[&str] = &[
        "additionalProperties",
        "$schema",
        "strict",
        "$id",
        "$defs",
        "definitions",
        "examples",
    ];
    fn strip(v: &Value, dropped: &mut Vec<String>) -> Value {
        match v {
            Value::Object(o) => {
                let mut out = Map::with_capacity(o.len());
                for (k, v) in o {
                    if UNSUPPORTED.contains(&k.as_str()) {
                        if !dropped.contains(k) {
                            dropped.push(k.clone());
                        }
                        continue;
                    }
                    // Property names are names, not keywords.
                    let v = match (k.as_str(), v) {
                        ("properties", Value::Object(props)) => Value::Object(
                            props
                                .iter()
                                .map(|(n, s)| (n.clone(), strip(s, dropped)))
                                .collect(),
                        ),
                        _ => strip(v, dropped),
                    };
                    out.insert(k.clone(), v);
                }
                Value::Object(out)
            }
            Value::Array(items) => Value::Array(items.iter().map(|i| strip(i, dropped)).collect()),
            other => other.clone(),
        }
    }
    let mut dropped = Vec::new();
    let out = strip(schema, &mut dropped);
    if !dropped.is_empty() {
        losses.push(Loss::request(
            format!("schema keyword {}", dropped.join(", ")),
            format!("tool {tool}: gemini's schema has no such keyword"),
        ));
    }
    out
}

/// Gives every call without an id one (`call_ctxclean_M_C`, M its
/// message's position), and the result that answers it the same, so that
/// targets whose results name their calls can pair them.
pub(crate) fn name_calls<'a>(
    msgs: Vec<std::borrow::Cow<'a, Message>>,
) -> Vec<std::borrow::Cow<'a, Message>> {
    use std::borrow::Cow;
    if !msgs
        .iter()
        .any(|m| m.calls().iter().any(|c| c.id.is_none()))
    {
        return msgs;
    }
    let pairing =
        crate::pairs::Pairing::new(&msgs.iter().map(|m| m.as_ref().clone()).collect::<Vec<_>>());
    let id = |i: usize, c: usize, m: &Message| -> String {
        m.calls()[c]
            .id
            .clone()
            .unwrap_or_else(|| format!("call_ctxclean_{i}_{c}"))
    };
    let ids: Vec<Vec<String>> = msgs
        .iter()
        .enumerate()
        .map(|(i, m)| (0..m.calls().len()).map(|c| id(i, c, m)).collect())
        .collect();
    msgs.into_iter()
        .enumerate()
        .map(|(i, m)| {
            let named_calls = m.calls().iter().any(|c| c.id.is_none());
            let result_of = pairing.result_of(i);
            if !named_calls && result_of.is_none() {
                return m;
            }
            let mut m = m.into_owned();
            if let Some(calls) = m.tool_calls.as_mut() {
                for (c, call) in calls.iter_mut().enumerate() {
                    call.id = Some(ids[i][c].clone());
                }
            }
            if let Some(r) = result_of {
                m.tool_call_id = Some(ids[r.message][r.call].clone());
            }
            Cow::Owned(m)
        })
        .collect()
}

/// Whether a target keeps all the calls of one assistant turn in one
/// message (so that parallel calls must be merged before writing).
pub(crate) fn groups_calls(target: Format) -> bool {
    !matches!(target, Format::Responses)
}

/// Merges each run of consecutive assistant messages that holds tool calls
/// into one message: its text pieces and other parts in order, all its
/// calls. Runs without calls are left as they are.
pub(crate) fn merge_turns<'a>(msgs: &[&'a Message]) -> Vec<std::borrow::Cow<'a, Message>> {
    use std::borrow::Cow;
    let mut out: Vec<Cow<'a, Message>> = Vec::with_capacity(msgs.len());
    let mut i = 0;
    while i < msgs.len() {
        let m = msgs[i];
        if m.role != Role::Assistant {
            out.push(Cow::Borrowed(m));
            i += 1;
            continue;
        }
        let mut j = i + 1;
        while j < msgs.len() && msgs[j].role == Role::Assistant {
            j += 1;
        }
        let run = &msgs[i..j];
        if run.len() == 1 || !run.iter().any(|m| m.has_calls()) {
            out.extend(run.iter().map(|m| Cow::Borrowed(*m)));
            i = j;
            continue;
        }
        let mut parts: Vec<Part> = Vec::new();
        let mut calls = Vec::new();
        for m in run {
            match &m.content {
                Content::Text(s) if !s.is_empty() => parts.push(Part::text_part(s.as_str())),
                Content::Parts(ps) => {
                    parts.extend(ps.iter().cloned().map(|p| Part { slot: None, ..p }))
                }
                _ => {}
            }
            calls.extend(
                m.calls()
                    .iter()
                    .cloned()
                    .map(|c| crate::transcript::ToolCall { slot: None, ..c }),
            );
        }
        let content = match parts.as_slice() {
            [] => Content::Absent,
            [p] if matches!(p.kind, PartKind::Text(_)) => {
                Content::Text(p.text().unwrap_or_default().to_string())
            }
            _ => Content::Parts(parts),
        };
        out.push(Cow::Owned(Message::from(MessageData {
            content,
            tool_calls: Some(calls),
            name: run[0].name.clone(),
            origin: run[0].origin.clone(),
            ..MessageData::new(Role::Assistant, "")
        })));
        i = j;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(format: Format, env: Value) -> (Params, Vec<Loss>) {
        let mut losses = Vec::new();
        let p = Params::read(format, env.as_object(), &mut losses);
        (p, losses)
    }

    #[test]
    fn openai_tools_become_every_target_s_tools() {
        let (p, _) = params(
            Format::OpenAi,
            json!({"model": "gpt-4o", "tools": [{"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": false}}}], "tool_choice": "required", "max_tokens": 100}),
        );
        let mut losses = Vec::new();
        let mut body = Map::new();
        p.write(
            Format::OpenAi,
            Format::Anthropic,
            &mut body,
            &mut losses,
            &mut Vec::new(),
        );
        assert_eq!(body["tools"][0]["name"], "f");
        assert_eq!(
            body["tools"][0]["input_schema"]["properties"]["a"]["type"],
            "string"
        );
        assert_eq!(body["tool_choice"], json!({"type": "any"}));
        assert_eq!(body["max_tokens"], 100);
        assert!(body.get("model").is_none());
        assert_eq!(losses.len(), 1, "{losses:?}"); // the gpt model
        let mut body = Map::new();
        let mut losses = Vec::new();
        p.write(
            Format::OpenAi,
            Format::Gemini,
            &mut body,
            &mut losses,
            &mut Vec::new(),
        );
        assert_eq!(body["tools"][0]["functionDeclarations"][0]["name"], "f");
        assert!(body["tools"][0]["functionDeclarations"][0]["parameters"]
            .get("additionalProperties")
            .is_none());
        assert_eq!(body["toolConfig"]["functionCallingConfig"]["mode"], "ANY");
        assert_eq!(body["generationConfig"]["maxOutputTokens"], 100);
        assert!(losses
            .iter()
            .any(|l| l.what.contains("additionalProperties")));
    }

    #[test]
    fn anthropic_and_gemini_tools_read_back() {
        let (p, losses) = params(
            Format::Anthropic,
            json!({"model": "claude-sonnet-4-5", "max_tokens": 10, "tools": [{"name": "g", "input_schema": {"type": "object"}}, {"type": "web_search_20250305", "name": "web_search"}], "tool_choice": {"type": "tool", "name": "g"}}),
        );
        assert_eq!(p.tools.len(), 1);
        assert_eq!(p.choice, Some(Choice::Named("g".into())));
        assert_eq!(losses.len(), 1);
        let mut body = Map::new();
        let mut l = Vec::new();
        p.write(
            Format::Anthropic,
            Format::OpenAi,
            &mut body,
            &mut l,
            &mut Vec::new(),
        );
        assert_eq!(body["tools"][0]["function"]["name"], "g");
        assert_eq!(body["tool_choice"]["function"]["name"], "g");
        let (p, _) = params(
            Format::Gemini,
            json!({"tools": [{"functionDeclarations": [{"name": "h", "parameters": {"type": "OBJECT"}}]}], "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}}}),
        );
        assert_eq!(p.tools[0].name, "h");
        assert_eq!(p.choice, Some(Choice::Auto));
    }
}
