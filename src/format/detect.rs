//! Format detection. It never guesses silently wrong: when two formats fit,
//! or none does, it says so and asks for `--from`.

use serde_json::{Map, Value};

use super::{dialect, Format};

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
    let conversations = dialect(format).records_path(sample[0]).is_some();
    Ok((format, conversations))
}

fn pick(sample: &[&Map<String, Value>]) -> Result<Format, String> {
    let fits: Vec<Format> = Format::ALL
        .into_iter()
        .filter(|f| fits(*f, sample))
        .collect();
    match fits.as_slice() {
        [one] => Ok(*one),
        [] => Err(
            "cannot tell the format: no known transcript format fits (use --from to name it)"
                .into(),
        ),
        many => Err(format!(
            "cannot tell the format: it fits {} (use --from to choose)",
            many.iter()
                .map(|f| f.name())
                .collect::<Vec<_>>()
                .join(" and ")
        )),
    }
}

/// Whether the sample (conversation objects, or records) fits a format.
fn fits(format: Format, sample: &[&Map<String, Value>]) -> bool {
    let d = dialect(format);
    let records: Vec<&Map<String, Value>> = if d.records_path(sample[0]).is_some() {
        // Conversation objects: look at the records of the first one.
        let path = d.records_path(sample[0]).unwrap_or(&[]);
        let mut v = Some(sample[0]);
        let mut list = None;
        for (i, key) in path.iter().enumerate() {
            let next = v.and_then(|o| o.get(*key));
            if i + 1 == path.len() {
                list = next.and_then(Value::as_array);
            } else {
                v = next.and_then(Value::as_object);
            }
        }
        list.map(|l| l.iter().filter_map(Value::as_object).take(50).collect())
            .unwrap_or_default()
    } else {
        sample.to_vec()
    };
    let container = d.records_path(sample[0]).is_some();
    let share = |f: &dyn Fn(&Map<String, Value>) -> bool| {
        if records.is_empty() {
            container
        } else {
            records.iter().filter(|r| f(r)).count() * 2 >= records.len()
        }
    };
    let envelope = |key: &str| container && sample[0].contains_key(key);
    let ty = |r: &Map<String, Value>| r.get("type").and_then(Value::as_str).map(str::to_string);
    let anthropic_blocks = any_block(&records, super::anthropic::BLOCK_TYPES)
        || records.iter().any(|r| {
            has_block(r, &|b| {
                b.get("type").and_then(Value::as_str) == Some("image") && b.contains_key("source")
            })
        });
    let responses_evidence = records
        .iter()
        .any(|r| ty(r).is_some_and(|t| super::responses::ITEM_TYPES.contains(&t.as_str())))
        || any_block(&records, &["input_text", "output_text", "input_image"]);
    let codex_lines = records.iter().any(|r| {
        r.contains_key("payload")
            && ty(r).is_some_and(|t| super::responses::CODEX_LINE_TYPES.contains(&t.as_str()))
    });
    let legacy_tool_lines = records.iter().any(|r| {
        !r.contains_key("role")
            && !r.contains_key("call_id")
            && matches!(
                ty(r).as_deref(),
                Some("tool_call" | "tool_result" | "function_call" | "function_result")
            )
            && (r.contains_key("result") || r.get("function").is_some_and(Value::is_object))
    });
    let typed_without_role = records
        .iter()
        .any(|r| r.contains_key("type") && !r.contains_key("role"));
    match format {
        Format::OpenAi => {
            share(&|r| r.contains_key("role"))
                && !(container
                    && (sample[0].get("history").is_some_and(Value::is_object)
                        || sample[0].contains_key("chat")))
                && !anthropic_blocks
                && !envelope("system")
                && !typed_without_role
                && !responses_evidence
                && !records
                    .iter()
                    .any(|r| r.get("type").and_then(Value::as_str) == Some("message"))
        }
        Format::Anthropic => {
            share(&|r| {
                matches!(
                    r.get("role").and_then(Value::as_str),
                    Some("user" | "assistant")
                )
            }) && (anthropic_blocks || envelope("system"))
                && !responses_evidence
        }
        Format::LangChain => share(&|r| super::langchain::is_record(r)),
        Format::Responses => {
            !codex_lines
                && !legacy_tool_lines
                && share(&|r| {
                    ty(r).is_some_and(|t| super::responses::ITEM_TYPES.contains(&t.as_str()))
                        || (r.contains_key("role") && !r.contains_key("type"))
                })
                && (responses_evidence || envelope("instructions"))
        }
        Format::Codex => codex_lines || legacy_tool_lines,
        Format::ShareGpt => share(&|r| r.get("from").is_some_and(Value::is_string)),
        Format::ClaudeCode => {
            share(&|r| super::claude_code::is_line(r))
                || (container && sample[0].contains_key("agentType"))
        }
        Format::OpenWebUi => container && share(&|r| r.contains_key("role")),
        Format::Copilot => share(&|r| super::exports::is_copilot_event(r)),
        Format::ClaudeAi => container && share(&|r| r.contains_key("sender")),
        Format::ChatGpt => container && sample[0].contains_key("mapping"),
        Format::Grok => container || d.conversations_path(sample[0]).is_some(),
        Format::AiStudio => container,
        Format::Gemini => {
            let header = records
                .iter()
                .any(|r| r.contains_key("projectHash") && r.contains_key("sessionId"));
            share(&|r| {
                r.get("parts").is_some_and(Value::is_array) || super::gemini::is_cli_message(r)
            }) && (container || header || records.iter().any(|r| r.contains_key("parts")))
                || (header && records.iter().any(|r| super::gemini::is_cli_message(r)))
        }
    }
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
