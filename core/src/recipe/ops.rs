//! Flags into operations: how each command's flags become the spec the
//! library runs. Changing how `trim` flags become a `TrimSpec` happens here.

use std::time::Duration;

use crate::ops::compact_tools::CompactSpec;
use crate::ops::filter::FilterSpec;
use crate::ops::summarize::{OnFailure, Placement, Summarize, SummarizeSpec};
use crate::ops::trim::{Strategy, TrimSpec};
use crate::ops::Operation;
use crate::summary::cache::Cache;
use crate::summary::extractive::Extractive;
use crate::summary::http::{Api, HttpEngine};
use crate::summary::Engine;
use anyhow::Context;

use super::UsageError;
use crate::cli::{
    BudgetArg, BudgetInArg, CompactArgs, EngineArg, FilterArgs, OnFailureArg, OutputArgs,
    PlacementArg, StrategyArg, SummarizeArgs, TrimArgs,
};

/// What a front end does with a summarizer server's engine before it
/// runs (the command line shows a spinner on a terminal).
pub type Decorate<'a> = &'a dyn Fn(HttpEngine) -> Box<dyn Engine>;

/// `filter`'s flags; with no rule there is nothing to do, a usage error.
pub fn filter(args: &FilterArgs) -> Result<FilterSpec, UsageError> {
    let args = args.clone();
    let spec = FilterSpec {
        previous_cycles: args.previous_cycles,
        agent: args.agent,
        chat_id: args.chat_id,
        supersede: args.supersede,
        strip_processed_images: args.strip_processed_images,
        dedupe_tool_results: args.dedupe_tool_results,
        moved_past: args.moved_past,
        retried_failures: args.retried_failures,
        read_again: args.read_again,
        drop_thinking: args.drop_thinking,
        keep_thinking_turns: args.keep_thinking_turns,
        include_roles: args.include_roles,
        exclude_roles: args.exclude_roles,
        include_names: args.include_names,
        exclude_names: args.exclude_names,
        exclude_tools: args.exclude_tools,
        exclude_tool_calls: args.exclude_tool_calls,
    };
    if spec == FilterSpec::default() {
        return Err(UsageError(
            "filter needs a rule: --previous-cycles, --agent, --supersede, \
             --strip-processed-images, --dedupe-tool-results, --moved-past, --retried-failures, \
             --read-again, --drop-thinking, --include-roles, --exclude-roles, --include-names, --exclude-names, \
             --exclude-tools or --exclude-tool-calls (see ctxclean filter --help)"
                .into(),
        ));
    }
    Ok(spec)
}

/// `compact-tools`'s flags.
pub fn compact(args: &CompactArgs) -> CompactSpec {
    let args = args.clone();
    CompactSpec {
        max_result_tokens: args.max_result_tokens,
        max_total_tokens: args.max_total_tokens,
        keep_last: args.keep_last,
        exclude_tools: args.exclude_tools,
        only_tools: args.only_tools,
        trigger_tokens: args.trigger_tokens,
        clear_at_least: args.clear_at_least,
        truncate_items: args.truncate_items,
        preview_chars: args.preview_chars,
        clear_inputs: args.clear_inputs,
    }
}

/// `trim`'s flags; `--max-tokens context` and `80%` take the window of
/// `model`.
pub fn trim(args: &TrimArgs, model: Option<&crate::models::Found>) -> anyhow::Result<TrimSpec> {
    if args.strategy == StrategyArg::First && args.start_on.is_some() {
        return Err(UsageError("--start-on goes with --strategy last only".into()).into());
    }
    let max_tokens = match args.max_tokens {
        None => None,
        Some(BudgetArg::Tokens(n)) => Some(n),
        Some(BudgetArg::Window(share)) => {
            let window = model
                .and_then(|m| m.model.max_input_tokens)
                .ok_or_else(|| {
                    UsageError(match model {
                        None => {
                            "--max-tokens context (or a share such as 80%) needs --model".into()
                        }
                        Some(m) => format!(
                            "--max-tokens: the model table has no context window for {}",
                            m.name
                        ),
                    })
                })?;
            Some((window as f64 * share / 100.0).floor() as usize)
        }
    };
    let args = args.clone();
    let step = args.step.map(|n| n as usize).or_else(|| {
        max_tokens
            .filter(|_| args.step_by_default)
            .map(|n| (n / 2).max(1))
    });
    Ok(TrimSpec {
        max_tokens,
        strategy: match args.strategy {
            StrategyArg::Last => Strategy::Last,
            StrategyArg::First => Strategy::First,
        },
        start_on: args.start_on,
        end_on: args.end_on,
        no_system: args.no_system,
        allow_partial: args.allow_partial,
        max_messages: args.max_messages,
        max_turns: args.max_turns,
        user_first: false,
        no_placeholder: args.no_placeholder,
        step,
        // In the proxy, checkpoints at an eighth of the step: a cut keeps
        // close to the budget less a step, whatever the conversation's
        // length; holding keeps the prefix while it grows.
        grid: step
            .filter(|_| args.step_by_default)
            .map(|s| (s / 8).max(1)),
        billed: args.budget_in == BudgetInArg::Billed,
    })
}

/// `summarize`'s flags: the spec and the engine (a summarizer server's
/// passed through `decorate`: the command line shows a spinner on it).
pub fn summarize(
    args: &SummarizeArgs,
    output: &OutputArgs,
    decorate: Decorate<'_>,
) -> anyhow::Result<Summarize> {
    let args = args.clone();
    // Rewriting files in place with no backup, a server that is down must
    // not turn them into truncations: the default becomes `keep`.
    let on_failure = match args.on_failure {
        Some(OnFailureArg::Truncate) => OnFailure::Truncate,
        Some(OnFailureArg::Keep) => OnFailure::Keep,
        Some(OnFailureArg::Fail) => OnFailure::Fail,
        None if output.in_place && output.backup.is_none() => OnFailure::Keep,
        None => OnFailure::Truncate,
    };
    let api = match args.engine {
        EngineArg::Extractive => {
            if args.url.is_some() || args.engine_model.is_some() {
                return Err(UsageError(
                    "--url and --engine-model go with --engine ollama or openai".into(),
                )
                .into());
            }
            None
        }
        EngineArg::Ollama => Some(Api::Ollama),
        EngineArg::Openai => Some(Api::OpenAi),
    };
    if let Some(url) = &args.url {
        check_url(url)?;
    }
    let prompt = match &args.prompt_file {
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("reading the prompt file {}", path.display()))?,
        None => crate::summary::DEFAULT_PROMPT.to_string(),
    };
    let engine: Box<dyn Engine> = match api {
        None => Box::new(Extractive),
        Some(api) => {
            // The key is read here and only sent as a header: it never
            // reaches output, report or errors.
            let key = match api {
                Api::OpenAi => std::env::var(&args.api_key_env).ok(),
                Api::Ollama => None,
            };
            let engine = HttpEngine::new(
                api,
                args.url.as_deref().unwrap_or(api.default_url()),
                args.engine_model.as_deref().unwrap_or(api.default_model()),
                key,
                Duration::from_secs_f64(args.timeout),
            );
            decorate(engine)
        }
    };
    let spec = SummarizeSpec {
        threshold: args.threshold,
        billed: args.budget_in == BudgetInArg::Billed,
        keep: args.keep,
        min_keep: args.min_keep,
        max_summary_tokens: args.max_summary_tokens,
        max_input_tokens: args.max_input_tokens,
        engine_context: args.engine_context.map(|n| n as usize),
        placement: match args.placement {
            PlacementArg::System => Placement::System,
            PlacementArg::User => Placement::User,
        },
        prompt,
        on_failure,
        ..SummarizeSpec::default()
    };
    Ok(Summarize {
        spec,
        engine,
        cache: args.cache.map(Cache::new),
    })
}

/// A server's base URL: `http://` or `https://`, a host, no query or
/// fragment; checked before any input is read.
pub fn check_url(url: &str) -> Result<(), UsageError> {
    let bad = |why: &str| UsageError(format!("--url {url}: {why}"));
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or_else(|| bad("not an http:// or https:// URL (e.g. http://localhost:11434)"))?;
    let authority = rest.split('/').next().unwrap_or("");
    let hostport = authority.rsplit('@').next().unwrap_or("");
    let (host, port) = match hostport.strip_prefix('[') {
        Some(v6) => match v6.split_once(']') {
            Some((host, after)) => (host, after.strip_prefix(':')),
            None => return Err(bad("an IPv6 host needs its closing `]`")),
        },
        None => match hostport.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (hostport, None),
        },
    };
    if host.is_empty() {
        return Err(bad("it has no host"));
    }
    if let Some(port) = port {
        if port.parse::<u16>().is_err() {
            return Err(bad(&format!(
                "the port `{port}` is not a number from 0 to 65535"
            )));
        }
    }
    if url.contains(['?', '#', ' ']) {
        return Err(bad("a base URL has no query, fragment or spaces"));
    }
    url.parse::<ureq::http::Uri>()
        .map_err(|e| bad(&e.to_string()))?;
    Ok(())
}

/// The operation a transforming command runs (`None` for `convert`).
pub fn operation(
    command: &crate::cli::Command,
    output: &OutputArgs,
    model: Option<&crate::models::Found>,
    decorate: Decorate<'_>,
) -> anyhow::Result<Option<Box<dyn Operation>>> {
    use crate::cli::Command;
    Ok(match command {
        Command::Filter(a) => Some(Box::new(filter(a)?)),
        Command::CompactTools(a) => Some(Box::new(compact(a))),
        Command::Trim(a) => Some(Box::new(trim(a, model)?)),
        Command::Summarize(a) => Some(Box::new(summarize(a, output, decorate)?)),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::check_url;

    #[test]
    fn urls_are_checked_before_any_work() {
        for good in [
            "http://localhost:11434",
            "https://api.openai.com/v1",
            "http://127.0.0.1:8080/v1/",
            "http://[::1]:11434",
            "http://user@host",
        ] {
            assert!(check_url(good).is_ok(), "{good}");
        }
        for (bad, why) in [
            ("notaurl", "not an http"),
            ("localhost:11434", "not an http"),
            ("ftp://host", "not an http"),
            ("http://", "no host"),
            ("http://:80", "no host"),
            ("http://host:99999", "port `99999`"),
            ("http://host:abc/v1", "port `abc`"),
            ("http://[::1", "closing"),
            ("http://host/v1?x=1", "no query"),
        ] {
            let err = check_url(bad).unwrap_err().0;
            assert!(err.contains(why), "{bad}: {err}");
            assert!(err.starts_with(&format!("--url {bad}:")), "{err}");
        }
    }
}
