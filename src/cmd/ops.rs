//! What the command line adds to the library's operations: a spinner on
//! standard error while a summarizer server works.

use std::io::{self, IsTerminal};
use std::time::Duration;

use ctxclean::report;
use ctxclean::summary::http::HttpEngine;
use ctxclean::summary::{Engine, EngineError, Request};

/// A summarizer server's engine, with a spinner on a terminal unless `quiet`.
pub(crate) fn spinning(engine: HttpEngine, quiet: bool) -> Box<dyn Engine> {
    if io::stderr().is_terminal() && !quiet {
        Box::new(Spinner(engine))
    } else {
        Box::new(engine)
    }
}

/// An engine shown as a spinner on standard error while it works.
pub(crate) struct Spinner<E>(E);

impl<E: Engine> Engine for Spinner<E> {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn model(&self) -> &str {
        self.0.model()
    }

    fn summarize(&self, request: &Request<'_>) -> Result<String, EngineError> {
        let bar = indicatif::ProgressBar::new_spinner();
        bar.set_message(format!(
            "Summarizing conversation ({} tokens)…",
            report::thousands(request.tokens())
        ));
        bar.enable_steady_tick(Duration::from_millis(100));
        let result = self.0.summarize(request);
        bar.finish_and_clear();
        result
    }
}
