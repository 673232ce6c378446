//! The `ctxclean` binary: parse the command line (a command, or a chain of
//! them joined by `then`) and dispatch to its module in `cmd/`. All
//! behaviour lives in the library; the commands turn flags into specs.

/// Prints a line on standard error; a standard error that cannot be
/// written to (closed, full) is not a reason to fail, let alone panic.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

use ctxclean::cli;

/// mimalloc, not the system's: replay cleans each call's conversation
/// once per recipe, and glibc's `malloc` and `free` took about 30% of its
/// time (a 1,000-call replay: 30-35 s of CPU, 23-27 s with mimalloc).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod cmd;
mod run;
mod serve;

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use clap::CommandFactory;

use cli::{Cli, Command};
use cmd::UsageError;

/// Exit codes, in one place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Exit {
    /// Bad input data or an I/O error.
    Data = 1,
    /// The flags do not make sense together (clap exits 2 for its own errors).
    Usage = 2,
}

fn main() -> ExitCode {
    // The proxy stops on SIGTERM and SIGINT itself, letting requests finish.
    let serving = std::env::args_os().nth(1).is_some_and(|a| a == "serve");
    cmd::signals(!serving);
    let result = match cmd::chain::parse(std::env::args_os().collect()) {
        cmd::chain::Invocation::One(cli, matches) => dispatch(*cli, matches),
        cmd::chain::Invocation::Chain(segments) => cmd::chain::run(segments, Vec::new()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // A closed pipe (`ctxclean stats | head`) is not an error.
        Err(err) if cmd::is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) if err.is::<cmd::Told>() => ExitCode::from(Exit::Data as u8),
        Err(err) => {
            say!("ctxclean: {err:#}");
            let code = if err.is::<UsageError>() {
                Exit::Usage
            } else {
                Exit::Data
            };
            ExitCode::from(code as u8)
        }
    }
}

/// Runs one command.
fn dispatch(cli: Cli, matches: clap::ArgMatches) -> anyhow::Result<()> {
    match cli.command {
        Command::Stats(args) => cmd::stats::run(args),
        Command::Validate(args) => cmd::validate::run(args),
        Command::Apply(args) => cmd::chain::apply(args, matches),
        Command::Serve(args) => cmd::serve::run(args),
        Command::Replay(args) => cmd::replay::run(args),
        Command::Bill(args) => cmd::bill::run(args),
        Command::CacheUnits(args) => cmd::bill::cache_units(args),
        Command::Completions(args) => {
            cmd::stdout_open()?;
            // Generated in memory: clap_complete panics on a failed write.
            let mut buf = Vec::new();
            let shell: clap_complete::Shell = args.shell.parse().expect("clap checked the shell");
            clap_complete::generate(shell, &mut Cli::command(), "ctxclean", &mut buf);
            let mut out = std::io::stdout().lock();
            out.write_all(&buf)
                .and_then(|()| out.flush())
                .context("writing to standard output")
        }
        Command::Man(args) => {
            cmd::stdout_open()?;
            let mut top = Cli::command().disable_help_subcommand(true);
            top.build();
            let page = match &args.page {
                None => top,
                Some(name) => top
                    .get_subcommands()
                    .find(|s| s.get_name() == name && !s.is_hide_set())
                    .cloned()
                    .ok_or_else(|| UsageError(format!("no man page for `{name}`")))?,
            };
            let mut buf = Vec::new();
            clap_mangen::Man::new(page).render(&mut buf)?;
            let mut out = std::io::stdout().lock();
            out.write_all(&buf)
                .and_then(|()| out.flush())
                .context("writing to standard output")
        }
        command => cmd::chain::run(vec![cmd::chain::Segment::new(command, matches)], Vec::new()),
    }
}
