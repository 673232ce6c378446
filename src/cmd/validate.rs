//! `ctxclean validate`: would a provider's API take each conversation as it
//! stands?

use std::io::{self, Write};

use ctxclean::report::{plural, thousands};

use super::{failed, prepare, stdout_open, Told};
use crate::cli::{ProviderArg, ValidateArgs};
use crate::run::{drive, Event};
use ctxclean::recipe::Problem as Found;

/// `ctxclean validate`: problems per conversation, in input order.
pub(crate) fn run(args: ValidateArgs) -> anyhow::Result<()> {
    use ctxclean::validate::{validate, Problem, Provider};
    stdout_open()?;
    let (sources, settings) = prepare("validate", &args.input, args.quiet, None)?;
    let request = args.request;
    let forced = args.provider.map(|p| match p {
        ProviderArg::Openai => Provider::OpenAi,
        ProviderArg::Anthropic => Provider::Anthropic,
        ProviderArg::Gemini => Provider::Gemini,
        ProviderArg::Responses => Provider::Responses,
    });
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let mut found: Vec<Found> = Vec::new();
    let mut pending: Vec<Found> = Vec::new();
    let (mut conversations, mut invalid) = (0usize, 0usize);
    // The current file's conversations and invalid ones, counted in at its end.
    let (mut file_conversations, mut file_invalid) = (0usize, 0usize);
    let failures = drive(
        &sources,
        &settings,
        || Ok(()),
        |_, doc| {
            let provider = forced.unwrap_or(Provider::for_format(doc.source_format));
            let per: Vec<Vec<Problem>> = doc
                .conversations
                .iter()
                .map(|c| {
                    if request {
                        ctxclean::validate::validate_request(c, doc.source_format, provider)
                    } else {
                        validate(c, doc.source_format, provider)
                    }
                })
                .collect();
            let source = doc.source.clone();
            super::release(doc, sources.len());
            Ok((source, provider, per))
        },
        |event, progress| {
            match event {
                Event::Chunk(_, (source, provider, per), _) => {
                    for problems in per {
                        progress.conversations += 1;
                        file_invalid += usize::from(!problems.is_empty());
                        for problem in problems {
                            pending.push(Found {
                                source: source.clone(),
                                conversation: file_conversations,
                                provider: provider.name(),
                                problem,
                            });
                        }
                        file_conversations += 1;
                    }
                    progress.update();
                }
                Event::Failed => {
                    pending.clear();
                    progress.conversations = conversations;
                    (file_conversations, file_invalid) = (0, 0);
                }
                Event::End(_) => {
                    conversations += file_conversations;
                    invalid += file_invalid;
                    (file_conversations, file_invalid) = (0, 0);
                    for f in pending.drain(..) {
                        if args.json {
                            found.push(f);
                        } else {
                            let at = match f.problem.message {
                                Some(m) => format!("message {m}"),
                                None => "conversation".to_string(),
                            };
                            writeln!(
                                out,
                                "{}:conversation {}:{at}: {}",
                                f.source, f.conversation, f.problem.problem
                            )?;
                        }
                    }
                    out.flush()?;
                }
            }
            Ok(())
        },
    )?;
    tell(
        &args,
        out,
        found,
        (conversations, invalid),
        failures,
        &sources,
    )
}

/// The end of a run: the JSON report, the count on stderr, the exit.
fn tell(
    args: &ValidateArgs,
    mut out: impl Write,
    found: Vec<Found>,
    (conversations, invalid): (usize, usize),
    failures: Vec<crate::run::Failure>,
    sources: &[ctxclean::batch::Source],
) -> anyhow::Result<()> {
    if args.json {
        serde_json::to_writer_pretty(
            &mut out,
            &serde_json::json!({
                "valid": found.is_empty() && failures.is_empty(),
                "conversations": conversations,
                "invalid_conversations": invalid,
                "problems": found,
            }),
        )?;
        writeln!(out)?;
    }
    out.flush()?;
    drop(out);
    failed(failures, sources)?;
    // The problems went to standard output; the count goes to standard error.
    if invalid > 0 {
        if !args.quiet {
            say!(
                "ctxclean validate: {} of {} invalid",
                plural(invalid, "conversation"),
                thousands(conversations)
            );
        }
        // Exit 1, like bad input: the transcripts are not valid.
        return Err(Told.into());
    }
    if !args.quiet {
        say!(
            "ctxclean validate: {} valid",
            plural(conversations, "conversation")
        );
    }
    Ok(())
}
