//! `ctxclean replay`: the sessions read and replayed on the workers (see
//! `ctxclean::replay`), the recipes side by side printed here.

use std::ffi::OsString;
use std::io::{self, Write};
use std::path::Path;

use anyhow::Context;
use ctxclean::replay::{self, Contender, Prices, Session, Summary};

use super::output::OutFolder;
use super::{failed, prefetch, prepare, stdout_open, UsageError};
use crate::cli::ReplayArgs;
use crate::run::{drive, Event};

/// The baselines, by name: what each replays.
const CLEAR_TOOL_USES: &str =
    "compact-tools --trigger-tokens 100000 --keep-last 3 --max-result-tokens 0";
const OBSERVATION_MASKING: &str = "compact-tools --keep-last 10 --max-result-tokens 0";

/// The budgets and keep-last counts `--suggest` tries.
const GRID_BUDGETS: [f64; 4] = [0.25, 0.5, 0.75, 1.0];
const GRID_KEEP: [usize; 3] = [1, 3, 10];
/// The sizes under which `--suggest`'s high-recall rows keep results whole.
const GRID_WHOLE: [usize; 2] = [400, 600];

fn words(chain: &str) -> Vec<Vec<OsString>> {
    chain
        .split(" then ")
        .map(|s| s.split_whitespace().map(OsString::from).collect())
        .collect()
}

/// A recipe to replay: its name and steps, and whether it is a baseline
/// (its method on every call, nothing held: [`Contender::every_call`]) or
/// a recipe run as `serve` runs it.
struct Named {
    name: String,
    steps: Vec<Vec<OsString>>,
    baseline: bool,
}

fn recipe_file(path: &Path) -> anyhow::Result<Named> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the recipe {}", path.display()))?;
    let steps = ctxclean::recipe::text::checked_steps(path, &text)
        .map_err(|e| UsageError(format!("{e:#}")))?;
    let name = path
        .file_stem()
        .map_or("recipe".into(), |s| s.to_string_lossy().into_owned());
    Ok(Named {
        name,
        steps,
        baseline: false,
    })
}

/// Every recipe to replay: the baselines, the user's, `--suggest`'s grid.
fn recipes(args: &ReplayArgs) -> anyhow::Result<(Vec<Named>, usize)> {
    let mut mine = Vec::new();
    if let Some(path) = &args.recipe {
        mine.push(recipe_file(path)?);
    }
    if !args.chain.is_empty() {
        let steps: Vec<Vec<OsString>> = args
            .chain
            .split(|w| w == "then")
            .map(<[OsString]>::to_vec)
            .collect();
        mine.push(Named {
            name: replay::chain_text(&steps),
            steps,
            baseline: false,
        });
    }
    for path in &args.compare {
        mine.push(recipe_file(path)?);
    }
    let budget = args.budget;
    let named = |name: &str, chain: String, baseline: bool| Named {
        name: name.into(),
        steps: words(&chain),
        baseline,
    };
    let mut all = vec![
        named("clear-tool-uses", CLEAR_TOOL_USES.into(), true),
        named(
            "langchain-trim",
            format!("trim --max-tokens {budget}"),
            true,
        ),
        named("observation-masking", OBSERVATION_MASKING.into(), true),
    ];
    let theirs = all.len();
    all.extend(mine);
    if args.suggest {
        for share in GRID_BUDGETS {
            let b = (budget as f64 * share).round() as usize;
            all.push(named(
                &format!("trim {b}"),
                format!("trim --max-tokens {b}"),
                false,
            ));
            for k in GRID_KEEP {
                let compact = format!("compact-tools --keep-last {k} --max-result-tokens 100");
                all.push(named(
                    &format!("compact {k}, trim {b}"),
                    format!("{compact} then trim --max-tokens {b}"),
                    false,
                ));
                // Results under 400 or 600 tokens kept whole: what a high
                // recall asks for. On bench/long's twelve sessions 600 was
                // the cheaper at every bar tried, from 95% to 99%; on three
                // of them, 400.
                for m in GRID_WHOLE {
                    all.push(named(
                        &format!("compact {k}/{m}, trim {b}"),
                        format!(
                            "compact-tools --keep-last {k} --max-result-tokens {m} then trim --max-tokens {b}"
                        ),
                        false,
                    ));
                }
                all.push(named(
                    &format!("filter, compact {k}, trim {b}"),
                    format!("filter --previous-cycles then {compact} then trim --max-tokens {b}"),
                    false,
                ));
            }
        }
    }
    Ok((all, theirs))
}

/// `ctxclean replay`.
pub(crate) fn run(args: ReplayArgs) -> anyhow::Result<()> {
    let shares = [
        ("--min-recall", args.min_recall),
        ("--min-worst", args.min_worst),
    ]
    .into_iter()
    .chain(
        args.oracle_recall
            .iter()
            .map(|&r| ("--oracle-recall", Some(r))),
    );
    for (flag, share) in shares {
        if let Some(r) = share.filter(|r| !(0.0..=1.0).contains(r)) {
            return Err(UsageError(format!("{flag} {r}: a share between 0 and 1")).into());
        }
    }
    let (named, _) = recipes(&args)?;
    let forwarded = forwarded_dirs(&args.forwarded)?;
    let (model, encoding) = super::model_and_encoding(&args.input)?;
    let prices = model.as_ref().map(prices_of).transpose()?;
    let tok_arg = match &args.input.tokenizer {
        Some(crate::cli::TokenizerChoice::Hf(p)) => format!("hf:{}", p.display()),
        _ => encoding.name().to_string(),
    };
    // Checked once here, so that a bad recipe is a usage error before any
    // input is read; each worker makes its own.
    let contenders = |named: &[Named]| -> anyhow::Result<Vec<Contender>> {
        let mut out = vec![Contender::none()];
        let oracles = args.oracle.then_some(1.0).into_iter();
        for recall in oracles.chain(args.oracle_recall.iter().copied()) {
            // Shares the same to a hundredth of a percent (their rows'
            // name), or 1 beside --oracle, are one row: the first.
            let oracle = Contender::oracle(recall);
            if !out.iter().any(|c| c.name == oracle.name) {
                out.push(oracle);
            }
        }
        for (name, dir) in &forwarded {
            out.push(Contender::forwarded(name, dir));
        }
        for n in named {
            let c = if n.baseline {
                Contender::every_call(&n.name, &n.steps, Some(&tok_arg))
            } else {
                Contender::new(&n.name, &n.steps, Some(&tok_arg), true, args.cache_horizon)
            };
            out.push(c.map_err(|e| UsageError(format!("recipe {}: {e:#}", n.name)))?);
        }
        Ok(out)
    };
    let checked = contenders(&named)?;
    let (tok_name, make_tokenizer) = super::tokenizer_maker(&args.input, encoding, None)?;
    let (sources, settings) = prepare("replay", &args.input, args.quiet, None)?;
    let mut written = super::output::named("--chart", &args.chart);
    written.extend(super::output::named("--save-recipe", &args.save_recipe));
    super::output::check_files(&sources, &written, &[])?;
    let folder = args
        .write_requests
        .as_deref()
        .map(|d| OutFolder::check("--write-requests", d, &sources, args.replace_requests))
        .transpose()?
        .map(std::sync::Mutex::new);
    prefetch(encoding);
    let catalog = ctxclean::models::Catalog::builtin();
    let mut sessions: Vec<Vec<Session>> = vec![Vec::new(); checked.len()];
    let mut none_found = Vec::new();
    let mut longest = None;
    let init = || -> anyhow::Result<_> { Ok((make_tokenizer()?, contenders(&named)?)) };
    let failures = drive(
        &sources,
        &settings,
        init,
        |(tok, cs), doc| replay_document(&doc, cs, tok, prices.as_ref(), &catalog, folder.as_ref()),
        |event, _| {
            if let Event::Chunk(_, found, _) = event {
                for r in found {
                    match r {
                        Ok(runs) => {
                            // A call left out is said, not only counted.
                            if let Some(s) = runs.first() {
                                for note in
                                    s.notes.iter().filter(|n| n.contains("call(s) left out"))
                                {
                                    say!(
                                        "ctxclean replay: {} conversation {}: {note}",
                                        s.source,
                                        s.index
                                    );
                                }
                            }
                            keep(&mut sessions, runs, args.jsonl, &mut longest)
                        }
                        Err(e) => none_found.push(e),
                    }
                }
            }
            Ok(())
        },
    )?;
    let summaries: Vec<Summary> = checked
        .iter()
        .zip(&sessions)
        .map(|(c, s)| replay::summarize(&c.name, &c.chain, s))
        .collect();
    print(&args, &summaries, &checked, &sessions, &tok_name)?;
    for e in &none_found {
        say!("ctxclean replay: {e}");
    }
    failed(failures, &sources)?;
    if !none_found.is_empty() {
        anyhow::bail!(
            "{} conversation(s) could not be replayed (said above)",
            none_found.len()
        );
    }
    Ok(())
}

/// Each conversation of a document replayed whole under every contender
/// ([`replay::replay_whole`]), each call's request written into
/// `--write-requests`' folder.
fn replay_document(
    doc: &ctxclean::format::Document,
    cs: &[Contender],
    tok: &ctxclean::tokens::Tokenizer,
    prices: Option<&Prices>,
    catalog: &ctxclean::models::Catalog,
    folder: Option<&std::sync::Mutex<OutFolder>>,
) -> anyhow::Result<Vec<Result<Vec<Session>, String>>> {
    let mut write = |d: &ctxclean::format::Document, j: usize| match folder {
        Some(folder) => write_requests(folder, d, j),
        None => Ok(()),
    };
    let mut found = Vec::new();
    for i in 0..doc.conversations.len() {
        found.extend(replay::replay_whole(
            doc, i, cs, tok, prices, catalog, &mut write,
        )?);
    }
    Ok(found)
}

/// The chart, the table (or JSON), and --suggest's recipe: alone on
/// standard output (the table then on standard error), or in
/// --save-recipe's file.
fn print(
    args: &ReplayArgs,
    summaries: &[Summary],
    checked: &[Contender],
    sessions: &[Vec<Session>],
    tok_name: &str,
) -> anyhow::Result<()> {
    if let Some(path) = &args.chart {
        let svg = replay::chart::svg(summaries, sessions);
        super::output::write_file(path, "the chart", svg.as_bytes())?;
    }
    let report = |out: &mut dyn Write| -> io::Result<()> {
        if args.jsonl {
            write_jsonl(out, checked, sessions)
        } else if args.json {
            write_json(out, summaries, checked, sessions, tok_name)
        } else {
            write_table(out, summaries, checked, sessions, tok_name)
        }
    };
    let suggested = match args
        .suggest
        .then(|| suggest(summaries, checked, &Targets::of(args)))
        .transpose()
    {
        Ok(s) => s,
        Err(why) => {
            // The table shows why: on standard error, standard output
            // left empty for the recipe that is not there.
            report(&mut io::stderr().lock()).context("writing to standard error")?;
            return Err(why);
        }
    };
    stdout_open()?;
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    match (suggested, &args.save_recipe) {
        (None, _) => report(&mut out).context("writing to standard output")?,
        (Some(recipe), Some(path)) => {
            report(&mut out).context("writing to standard output")?;
            super::output::write_file(path, "the recipe", recipe.as_bytes())?;
        }
        (Some(recipe), None) => {
            report(&mut io::stderr().lock()).context("writing to standard error")?;
            out.write_all(recipe.as_bytes())
                .context("writing to standard output")?;
        }
    }
    out.flush().context("writing to standard output")
}

/// Keeps a session's runs (one per recipe): with their calls for
/// `--jsonl`, else their totals, and the calls of the longest session only
/// (the chart draws it), so that a run over a folder stays flat in memory.
fn keep(
    sessions: &mut [Vec<Session>],
    runs: Vec<Session>,
    jsonl: bool,
    longest: &mut Option<(usize, usize)>,
) {
    let at = sessions.first().map_or(0, Vec::len);
    let calls = runs.first().map_or(0, |s| s.calls.len());
    for (k, s) in runs.into_iter().enumerate() {
        sessions[k].push(s);
    }
    if jsonl {
        return;
    }
    let let_go = match *longest {
        Some((_, most)) if calls <= most => at,
        Some((before, _)) => {
            *longest = Some((at, calls));
            before
        }
        None => {
            *longest = Some((at, calls));
            return;
        }
    };
    for ss in sessions.iter_mut() {
        ss[let_go].let_go_of_calls();
    }
}

/// `--model`'s prices; a usage error without an input price.
pub(super) fn prices_of(m: &ctxclean::models::Found) -> anyhow::Result<Prices> {
    Prices::of(m).ok_or_else(|| {
        UsageError(format!(
            "--model {}: the table has no input price for it",
            m.name
        ))
        .into()
    })
}

/// `--forwarded NAME=DIR`, each checked: a name, and a folder.
fn forwarded_dirs(given: &[String]) -> anyhow::Result<Vec<(String, std::path::PathBuf)>> {
    given
        .iter()
        .map(|g| {
            let (name, dir) = g
                .split_once('=')
                .filter(|(n, d)| !n.is_empty() && !d.is_empty())
                .ok_or_else(|| UsageError(format!("--forwarded {g}: give NAME=DIR")))?;
            let dir = std::path::PathBuf::from(dir);
            if !dir.is_dir() {
                return Err(UsageError(format!(
                    "--forwarded {g}: {} is not a folder",
                    dir.display()
                ))
                .into());
            }
            Ok((name.to_string(), dir))
        })
        .collect()
}

/// `--write-requests DIR`: each call's request body as the agent sent it.
fn write_requests(
    folder: &std::sync::Mutex<OutFolder>,
    doc: &ctxclean::format::Document,
    index: usize,
) -> anyhow::Result<()> {
    let at = doc.first_conversation + index;
    for (n, body) in replay::requests(doc, index) {
        let name = replay::request_file_name(&doc.source, at, n);
        folder
            .lock()
            .map_err(|_| anyhow::anyhow!("a worker failed while writing requests"))?
            .write(&name, &body)?;
    }
    Ok(())
}

fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

fn write_table(
    out: &mut dyn Write,
    summaries: &[Summary],
    contenders: &[Contender],
    sessions: &[Vec<Session>],
    tok_name: &str,
) -> io::Result<()> {
    let none = &summaries[0];
    writeln!(
        out,
        "{} session(s), {} model call(s) replayed; tokens by {tok_name}",
        none.sessions, none.calls
    )?;
    let rows: Vec<Vec<String>> = summaries
        .iter()
        .map(|s| {
            let dollars = match (s.dollars, none.dollars) {
                (Some(d), Some(n)) if n > 0.0 => format!("${d:.4} ({})", pct(d / n)),
                (Some(d), _) => format!("${d:.4}"),
                _ => "-".into(),
            };
            vec![
                s.recipe.clone(),
                format!(
                    "{} ({})",
                    ctxclean::numbers::thousands(s.tokens_sent as usize),
                    pct(s.tokens_share)
                ),
                dollars,
                pct(s.cache_read_share),
                if s.made_invalid > 0 {
                    format!("{} ({} made)", s.invalid, s.made_invalid)
                } else {
                    s.invalid.to_string()
                },
                pct(s.recall_mean),
                pct(s.recall_worst),
                s.over_window.to_string(),
            ]
        })
        .collect();
    let head = [
        "recipe",
        "tokens sent",
        "$ with caching",
        "cache read",
        "invalid",
        "recall",
        "worst",
        "over window",
    ];
    for line in super::aligned(&head, &rows, 1) {
        writeln!(out, "{line}")?;
    }
    writeln!(out)?;
    writeln!(out, "recall: the share of the strings the model used next (paths, identifiers, numbers, quoted text) that the request still held; worst: the worst session's")?;
    for (c, s) in contenders.iter().zip(sessions).skip(1) {
        if let Some((session, call, string, by)) = replay::first_losses(s).into_iter().next() {
            writeln!(
                out,
                "first loss, {}: {session} call {call}: {string:?}, {by}",
                c.name
            )?;
        }
    }
    if none.priced_sessions < none.sessions {
        writeln!(
            out,
            "note: dollars are over the {} of {} session(s) whose model has prices; --model prices the others",
            none.priced_sessions, none.sessions
        )?;
    }
    Ok(())
}

fn write_json(
    out: &mut dyn Write,
    summaries: &[Summary],
    contenders: &[Contender],
    sessions: &[Vec<Session>],
    tok_name: &str,
) -> io::Result<()> {
    let recipes: Vec<serde_json::Value> = summaries
        .iter()
        .zip(contenders)
        .zip(sessions)
        .map(|((s, _), ss)| {
            let per: Vec<serde_json::Value> = ss
                .iter()
                .map(|x| {
                    let one = replay::summarize(&s.recipe, &s.chain, std::slice::from_ref(x));
                    serde_json::json!({
                        "source": x.source, "index": x.index, "model": x.model, "calls": one.calls,
                        "tokens_sent": one.tokens_sent, "dollars": one.dollars,
                        "cache_read_share": one.cache_read_share, "invalid": one.invalid,
                        "made_invalid": one.made_invalid,
                        "recall": replay::recall(x), "over_window": one.over_window,
                        "first_loss": replay::first_losses(std::slice::from_ref(x)).first()
                            .map(|(_, call, string, by)| serde_json::json!({"call": call, "string": string, "by": by})),
                    })
                })
                .collect();
            let mut v = serde_json::to_value(s).expect("a summary is JSON");
            v["per_session"] = serde_json::Value::Array(per);
            v
        })
        .collect();
    let doc = serde_json::json!({"tokenizer": tok_name, "recipes": recipes});
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    writeln!(out)
}

fn write_jsonl(
    out: &mut dyn Write,
    contenders: &[Contender],
    sessions: &[Vec<Session>],
) -> io::Result<()> {
    for (c, ss) in contenders.iter().zip(sessions) {
        for s in ss {
            for call in &s.calls {
                let mut v = serde_json::to_value(call).expect("a call is JSON");
                v["recipe"] = c.name.clone().into();
                v["source"] = s.source.clone().into();
                v["index"] = s.index.into();
                serde_json::to_writer(&mut *out, &v)?;
                writeln!(out)?;
            }
        }
    }
    Ok(())
}

/// What `--suggest` requires of a recipe.
struct Targets {
    /// Mean recall.
    mean: f64,
    /// The worst session's recall.
    worst: f64,
}

impl Targets {
    fn of(args: &ReplayArgs) -> Targets {
        let mean = args.min_recall.unwrap_or(0.95);
        Targets {
            mean,
            worst: args.min_worst.unwrap_or(mean.min(0.90)),
        }
    }

    /// Why `s` falls short, or `None` when it qualifies.
    fn short(&self, s: &Summary) -> Option<String> {
        let mut why = Vec::new();
        if s.recall_mean < self.mean {
            why.push(format!("recall {}", pct(s.recall_mean)));
        }
        if s.recall_worst < self.worst {
            why.push(format!("worst session {}", pct(s.recall_worst)));
        }
        if s.made_invalid > 0 {
            why.push(format!("{} valid body(ies) made invalid", s.made_invalid));
        }
        (!why.is_empty()).then(|| why.join(", "))
    }
}

/// `--suggest`: the cheapest recipe that meets `targets` (in dollars when
/// every session is priced, else in tokens), as a TOML recipe for `ctxclean
/// serve --recipe`; an error saying why when none does. Bodies that came
/// invalid (the agent's own) are not held against a recipe.
fn suggest(
    summaries: &[Summary],
    contenders: &[Contender],
    targets: &Targets,
) -> anyhow::Result<String> {
    let priced = summaries.iter().all(|s| s.dollars.is_some());
    let cost = |s: &Summary| {
        if priced {
            s.dollars.unwrap_or(0.0)
        } else {
            s.tokens_sent as f64
        }
    };
    let tried: Vec<(&Summary, &Contender)> = summaries
        .iter()
        .zip(contenders)
        .skip(1)
        .filter(|(_, c)| !c.is_forwarded() && !c.is_oracle())
        .collect();
    let best = tried
        .iter()
        .filter(|(s, _)| targets.short(s).is_none())
        .min_by(|a, b| cost(a.0).total_cmp(&cost(b.0)));
    let none = &summaries[0];
    if let Some((s, _)) = best.filter(|(s, _)| cost(s) >= cost(none)) {
        anyhow::bail!(
            "--suggest: the cheapest recipe tried that meets the targets, {}, costs {} of the \
             requests as they came ({}): cleaning does not pay on these sessions, so none is \
             suggested",
            s.recipe,
            pct(cost(s) / cost(none).max(f64::MIN_POSITIVE)),
            if priced {
                "in dollars with caching"
            } else {
                "in tokens"
            }
        );
    }
    let Some((s, c)) = best else {
        let mut closest = tried.clone();
        closest.sort_by(|a, b| b.0.recall_mean.total_cmp(&a.0.recall_mean));
        let shown: Vec<String> = closest
            .iter()
            .take(3)
            .map(|(s, _)| format!("{}: {}", s.recipe, targets.short(s).unwrap_or_default()))
            .collect();
        anyhow::bail!(
            "--suggest: no recipe tried keeps {} of the evidence on average and {} in its worst \
             session without making a valid body invalid, so none is suggested; the closest: {}",
            pct(targets.mean),
            pct(targets.worst),
            shown.join("; ")
        );
    };
    // Written as `--save-recipe` writes a recipe, from the chain's steps.
    let words: Vec<OsString> = c.chain.split_whitespace().map(OsString::from).collect();
    let text = super::chain::serve_steps(&words)
        .map(|segments| super::chain::recipe_text(&segments, &[]))
        .map_err(|e| anyhow::anyhow!("{e:#}"))?;
    let dollars = s.dollars.map_or(String::new(), |d| format!(", ${d:.4}"));
    Ok(format!(
        "# suggested by ctxclean replay: the cheapest recipe tried that keeps at least {} of\n\
         # the evidence on average and {} in its worst session, making no valid body invalid\n\
         # {}: {} of the tokens{dollars}, recall {} (worst session {})\n\
         {}# use: ctxclean serve --recipe FILE\n{text}",
        pct(targets.mean),
        pct(targets.worst),
        s.recipe,
        pct(s.tokens_share),
        pct(s.recall_mean),
        pct(s.recall_worst),
        against_the_oracle(s, summaries, contenders, cost),
    ))
}

/// For a suggestion: what each oracle row replayed beside it saves, and
/// the share of that the suggested recipe `s` reaches (how much a better
/// recipe could still find, at the oracle's recall). `cost`: dollars, or
/// tokens when a session has no prices.
fn against_the_oracle(
    s: &Summary,
    summaries: &[Summary],
    contenders: &[Contender],
    cost: impl Fn(&Summary) -> f64,
) -> String {
    let none = cost(&summaries[0]).max(f64::MIN_POSITIVE);
    let saved = |x: &Summary| 1.0 - cost(x) / none;
    summaries
        .iter()
        .zip(contenders)
        .filter(|(o, c)| c.is_oracle() && saved(o) > 0.0)
        .map(|(o, _)| {
            format!(
                "# {} saves {} keeping {} of the evidence; this recipe saves {}, {} of that\n",
                o.recipe,
                pct(saved(o)),
                pct(o.recall_mean),
                pct(saved(s)),
                pct(saved(s) / saved(o))
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxclean::replay::{Call, Totals};

    fn session(calls: usize) -> Session {
        let calls: Vec<Call> = (0..calls)
            .map(|call| Call {
                call,
                tokens_sent: 10,
                ..Call::default()
            })
            .collect();
        Session {
            source: "s".into(),
            index: 0,
            model: None,
            totals: Totals::of(&calls),
            calls,
            notes: Vec::new(),
        }
    }

    fn summary(
        recipe: &str,
        tokens: u64,
        mean: f64,
        worst: f64,
        invalid: (usize, usize),
    ) -> Summary {
        Summary {
            recipe: recipe.into(),
            tokens_sent: tokens,
            recall_mean: mean,
            recall_worst: worst,
            invalid: invalid.0,
            made_invalid: invalid.1,
            ..Summary::default()
        }
    }

    #[test]
    fn suggest_holds_only_bodies_made_invalid_and_the_worst_session_against_a_recipe() {
        let tok = "o200k_base";
        let contender = |name: &str, chain: &str| {
            Contender::new(name, &words(chain), Some(tok), true, Some(2)).unwrap()
        };
        let contenders = vec![
            Contender::none(),
            contender("trim 100", "trim --max-tokens 100"),
            contender("trim 200", "trim --max-tokens 200"),
            contender("trim 300", "trim --max-tokens 300"),
        ];
        let targets = Targets {
            mean: 0.95,
            worst: 0.9,
        };
        // The agent's own invalid bodies (5, as they came) count against
        // no recipe; one the recipe broke does; so does a worst session
        // below the target.
        let summaries = vec![
            summary("none", 1000, 1.0, 1.0, (5, 0)),
            summary("trim 100", 100, 0.99, 0.99, (6, 1)),
            summary("trim 200", 200, 0.97, 0.85, (5, 0)),
            summary("trim 300", 300, 0.96, 0.92, (5, 0)),
        ];
        let text = suggest(&summaries, &contenders, &targets).unwrap();
        assert!(text.contains("# trim 300:"), "{text}");
        assert!(text.contains("max-tokens = 300"), "{text}");
        assert!(!text.contains("oracle"), "{text}");
        // Beside an oracle, which is never suggested however cheap: what
        // it saves, and the share of it the recipe reaches.
        let mut with_oracle = contenders;
        with_oracle.push(Contender::oracle(0.95));
        let mut rows = summaries.clone();
        rows.push(summary("oracle 95%", 50, 0.96, 0.95, (5, 0)));
        let text = suggest(&rows, &with_oracle, &targets).unwrap();
        assert!(text.contains("# trim 300:"), "{text}");
        assert!(
            text.contains("# oracle 95% saves 95% keeping 96% of the evidence; this recipe saves 70%, 74% of that"),
            "{text}"
        );
        // None qualifies: why, naming the closest.
        let strict = Targets {
            mean: 0.999,
            worst: 0.9,
        };
        let why = suggest(&summaries, &with_oracle[..4], &strict)
            .unwrap_err()
            .to_string();
        assert!(why.contains("none is suggested"), "{why}");
        assert!(
            why.contains("trim 100: recall 99%, 1 valid body(ies) made invalid"),
            "{why}"
        );
        assert!(
            why.contains("trim 200: recall 97%, worst session 85%"),
            "{why}"
        );
        // A recipe dearer than the requests as they came is not suggested.
        let dear = vec![
            summary("none", 100, 1.0, 1.0, (0, 0)),
            summary("trim 100", 150, 1.0, 1.0, (0, 0)),
        ];
        let why = suggest(&dear, &with_oracle[..2], &targets)
            .unwrap_err()
            .to_string();
        assert!(why.contains("does not pay"), "{why}");
    }

    #[test]
    fn a_run_keeps_totals_and_only_the_longest_sessions_calls() {
        let mut sessions = vec![Vec::new(), Vec::new()];
        let mut longest = None;
        for n in [2, 5, 3, 5, 1] {
            keep(
                &mut sessions,
                vec![session(n), session(n)],
                false,
                &mut longest,
            );
        }
        for ss in &sessions {
            let kept: Vec<usize> = ss.iter().map(|s| s.calls.len()).collect();
            assert_eq!(
                kept,
                [0, 5, 0, 0, 0],
                "the first of the longest keeps its calls"
            );
            let totals: Vec<u64> = ss.iter().map(|s| s.totals.tokens_sent).collect();
            assert_eq!(
                totals,
                [20, 50, 30, 50, 10],
                "every session keeps its totals"
            );
        }
        // For --jsonl, every call is kept.
        let mut all = vec![Vec::new()];
        let mut longest = None;
        for n in [2, 5, 3] {
            keep(&mut all, vec![session(n)], true, &mut longest);
        }
        assert_eq!(
            all[0].iter().map(|s| s.calls.len()).collect::<Vec<_>>(),
            [2, 5, 3]
        );
    }
}
