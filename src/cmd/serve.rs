//! `ctxclean serve`: flags into the proxy's configuration and the engine
//! it calls; the serving itself is `crate::serve`.

use std::io::Write;
use std::time::Duration;

use std::ffi::OsString;

use anyhow::Context;
use ctxclean::engine::{Engine, Options};
use ctxclean::ops::Accounting;
use ctxclean::recipe::Recipe;

use super::UsageError;
use crate::cli::ServeArgs;
use crate::serve::{Config, Upstream};

pub(crate) fn run(args: ServeArgs) -> anyhow::Result<()> {
    if args.recipe.is_some() && !args.chain.is_empty() {
        return Err(UsageError("give --recipe or a chain after --, not both".into()).into());
    }
    if args.recipe.is_none() && args.chain.is_empty() {
        return Err(UsageError(
            "serve needs what to do: --recipe FILE, or a chain after -- (`-- trim --max-tokens 100000`)".into(),
        )
        .into());
    }
    let upstream = Upstream::parse(&args.upstream).map_err(UsageError)?;
    let listen: std::net::SocketAddr = args.listen.parse().map_err(|e| {
        UsageError(format!(
            "--listen {}: {e} (an address and port: 127.0.0.1:8787)",
            args.listen
        ))
    })?;
    let recipe = recipe(&args)?;
    // Cache-stable: a conversation that comes back longer goes on as it
    // went, until the budget or the model's cache prices say otherwise.
    let (limit, billed) = (recipe.budget, recipe.budget_billed);
    let holds = ctxclean::inflight::Holds::new(limit, args.cache_horizon, 4096)
        .with_max_bytes(args.hold_memory.saturating_mul(1 << 20))
        .billed(billed);
    let described = describe(&args);
    let (model, encoding) = super::model_and_encoding(&recipe.input)?;
    let image_rule = model.as_ref().and_then(ctxclean::models::Found::image_rule);
    let (tok_name, make) = super::tokenizer_maker(&recipe.input, encoding, image_rule)?;
    let config = Config {
        upstream,
        listen,
        max_body: args.max_body,
        max_connections: args.max_connections as usize,
        connect_timeout: Duration::from_secs(args.connect_timeout),
        timeout: Duration::from_secs(args.timeout),
        header_timeout: Duration::from_secs(args.header_timeout),
        body_timeout: Duration::from_secs(args.body_timeout),
        clean_timeout: Duration::from_secs(args.clean_timeout),
        cache_lifetime: Duration::from_secs(args.cache_lifetime),
        dry_run: args.dry_run,
        recipe: format!("{described} ({})", recipe.pipeline.names().join("→")),
        caching: format!(
            "a conversation that comes back longer goes on as it went, the new messages appended, until {}or cleaning it again has paid for itself: {} (--cache-horizon); the conversations held keep {} MiB at most (--hold-memory)",
            limit.map_or(String::new(), |l| format!("it passes {l} {}tokens ", if billed { "billed " } else { "" })),
            args.cache_horizon.map_or_else(
                || "the reads of what the recipe would take out reach the cache write it costs (rent or buy)".to_string(),
                |h| format!("it costs less at the model's cache prices within {h} request(s)")
            ),
            args.hold_memory
        ),
        prices: super::bill::model_prices(args.model.as_deref(), args.prices.as_deref())?,
    };
    if args.print_config {
        return print_config(&config, &tok_name);
    }
    if !listen.ip().is_loopback() {
        say!(
            "ctxclean serve: warning: listening on {listen}, not a loopback address: anyone who reaches it sends requests with the credentials of its callers"
        );
    }
    let engine = Engine::new(Options {
        pipeline: recipe.pipeline,
        accounting: Accounting::Full,
        ..Options::default()
    });
    let tokenizers = crate::serve::Tokenizers::new(make)?;
    crate::serve::run(config, engine, tokenizers, holds, args.log)
}

/// The proxy's recipe, from `--recipe FILE` or the chain after `--`: the
/// library's recipe for requests in flight (the one call the Python
/// package makes too), which refuses files and conversions; its errors say
/// where the recipe came from.
fn recipe(args: &ServeArgs) -> anyhow::Result<Recipe> {
    let (built, whose) = match &args.recipe {
        Some(path) => (
            Recipe::from_file_in_flight(path),
            path.display().to_string(),
        ),
        None => {
            let steps: Vec<Vec<OsString>> = args
                .chain
                .split(|w| w == "then")
                .map(<[OsString]>::to_vec)
                .collect();
            (
                Recipe::from_steps_in_flight(&steps, None, None),
                "the chain after --".into(),
            )
        }
    };
    built.map_err(|e| match e.downcast_ref::<UsageError>() {
        // A step's error in a file already names the file and its line.
        Some(UsageError(why)) if !why.starts_with(&format!("{whose}:")) => {
            UsageError(format!("{whose}: {why}")).into()
        }
        _ => e,
    })
}

/// The recipe as the ready line shows it: its file, or the chain's words.
fn describe(args: &ServeArgs) -> String {
    match &args.recipe {
        Some(path) => path.display().to_string(),
        None => args
            .chain
            .iter()
            .map(|w| w.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" "),
    }
}

fn print_config(config: &Config, tokenizer: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    let text = format!(
        "listen: http://{}\nupstream: {}\nrecipe: {}\ntokenizer: {tokenizer}\n\
         cleaned: POST /v1/chat/completions (openai), /v1/messages and /v1/messages/count_tokens (anthropic), \
         /v1/responses (responses), /api/chat (ollama)\n\
         forwarded untouched: every other request, and every answer\n\
         caching: {}\n\
         prices: {}\n\
         max body: {} bytes (bodies being read: {} bytes in all); requests at once: {} (open connections: {}); \
         header timeout: {} s; body timeout: {} s; clean timeout: {} s; connect timeout: {} s; answer timeout: {} s{}\n",
        config.listen,
        config.upstream,
        config.recipe,
        config.caching,
        config.prices.as_ref().map_or(
            "each request's at its body's model's (unpriced when the table does not know it; --model prices them all)".to_string(),
            |p| format!("every request's at {}'s (--model)", p.model)
        ),
        config.max_body,
        config.max_body.saturating_mul(4),
        config.max_connections,
        config.max_connections.saturating_mul(4),
        config.header_timeout.as_secs(),
        config.body_timeout.as_secs(),
        config.clean_timeout.as_secs(),
        config.connect_timeout.as_secs(),
        config.timeout.as_secs(),
        if config.dry_run { "\ndry run: every body forwarded as it came" } else { "" }
    );
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .context("writing to standard output")
}
