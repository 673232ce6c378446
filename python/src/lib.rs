//! `ctxclean._native`: the library's engine for Python. Each function takes
//! JSON as bytes (or, for `kept`, the messages as Python values, read
//! without writing their JSON; see `values`) and a recipe as the words of
//! its steps, calls the library once with the GIL released, and hands back
//! bytes or JSON text; the Python package (`ctxclean/__init__.py`) only
//! converts Python values to JSON and back. No behaviour lives here.

use std::ffi::OsString;

use ctxclean_core::engine::CleanError;
use ctxclean_core::format::Format;
use std::cell::RefCell;
use std::rc::Rc;

use ctxclean_core::ops::Accounting;
use ctxclean_core::recipe::{Prepared, Recipe, UsageError};
use ctxclean_core::InputError;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

mod values;

pyo3::create_exception!(
    _native,
    NativeInputError,
    PyValueError,
    "An input that cannot be read: (message, source, line)."
);

/// An error of the library as the Python exception it stands for.
fn to_py(err: anyhow::Error) -> PyErr {
    let input = err
        .downcast_ref::<CleanError>()
        .and_then(|e| match e {
            CleanError::Input(i) => Some(i.clone()),
            _ => None,
        })
        .or_else(|| err.downcast_ref::<InputError>().cloned());
    if let Some(i) = input {
        return NativeInputError::new_err((i.to_string(), i.source, i.line));
    }
    if err.is::<UsageError>() {
        return PyValueError::new_err(format!("{err:#}"));
    }
    match err.downcast_ref::<CleanError>() {
        Some(CleanError::Usage(m)) => PyValueError::new_err(m.clone()),
        _ => PyRuntimeError::new_err(format!("{err:#}")),
    }
}

fn format_of(name: Option<&str>) -> anyhow::Result<Option<Format>> {
    name.map(|n| {
        n.parse::<Format>()
            .map_err(|e| UsageError(format!("format {n}: {e}")).into())
    })
    .transpose()
}

fn words(steps: Vec<Vec<String>>) -> Vec<Vec<OsString>> {
    steps
        .into_iter()
        .map(|s| s.into_iter().map(OsString::from).collect())
        .collect()
}

fn strings(steps: Vec<Vec<OsString>>) -> Vec<Vec<String>> {
    steps
        .into_iter()
        .map(|argv| {
            argv.iter()
                .map(|w| w.to_string_lossy().into_owned())
                .collect()
        })
        .collect()
}

/// A recipe's TOML text (`name` names it in errors) as the words of its steps.
#[pyfunction]
fn steps_from_toml(text: &str, name: &str) -> PyResult<Vec<Vec<String>>> {
    let steps = ctxclean_core::recipe::text::checked_steps(std::path::Path::new(name), text)
        .map_err(to_py)?;
    Ok(strings(steps))
}

/// Steps as a JSON list of tables (`[{"op": "trim", "max_tokens": 8000}]`)
/// as the words of each.
#[pyfunction]
fn steps_from_json(json: &str) -> PyResult<Vec<Vec<String>>> {
    let tables: Vec<toml::Table> = serde_json::from_str(json)
        .map_err(|e| PyValueError::new_err(format!("a recipe's steps: {e}")))?;
    let steps = ctxclean_core::recipe::text::read_tables(&tables).map_err(to_py)?;
    Ok(strings(steps))
}

type Key = (Vec<Vec<String>>, Option<String>, Option<String>, bool);

thread_local! {
    /// Recipes made ready on this thread, by their steps, model, tokenizer
    /// and accounting: a call that repeats a recipe (trim_messages in an
    /// agent loop) does not parse it or make its tokenizer again.
    static PREPARED: RefCell<Vec<(Key, Rc<Prepared>)>> = const { RefCell::new(Vec::new()) };
}

/// The recipe of `key`, made ready once per thread (the last 16 are kept).
fn prepared(key: Key) -> anyhow::Result<Rc<Prepared>> {
    if let Some(p) = PREPARED.with(|m| {
        m.borrow()
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, p)| p.clone())
    }) {
        return Ok(p);
    }
    let (steps, model, tokenizer, full) = &key;
    let recipe = Recipe::from_steps(
        &words(steps.clone()),
        model.as_deref(),
        tokenizer.as_deref(),
    )?;
    let accounting = if *full {
        Accounting::Full
    } else {
        Accounting::None
    };
    let p = Rc::new(recipe.prepare(accounting)?);
    PREPARED.with(|m| {
        let mut m = m.borrow_mut();
        if m.len() >= 16 {
            m.remove(0);
        }
        m.push((key, p.clone()));
    });
    Ok(p)
}

/// Applies a recipe to a whole input: (the output's bytes, the report as
/// JSON, what was lost as JSON, the warnings the command line would give). `full_report`: every conversation counted,
/// as `--report` does; else the report says what changed and counts only
/// what the operations counted (what trim_messages needs, faster).
#[pyfunction]
#[pyo3(signature = (body, steps, source, format=None, model=None, tokenizer=None, full_report=true))]
#[allow(clippy::too_many_arguments)]
fn apply<'py>(
    py: Python<'py>,
    body: &[u8],
    steps: Vec<Vec<String>>,
    source: &str,
    format: Option<&str>,
    model: Option<&str>,
    tokenizer: Option<&str>,
    full_report: bool,
) -> PyResult<(Bound<'py, PyBytes>, String, String, Vec<String>)> {
    let key = (
        steps,
        model.map(str::to_string),
        tokenizer.map(str::to_string),
        full_report,
    );
    let (out, report, lost, warnings) = py
        .allow_threads(|| -> anyhow::Result<_> {
            let applied = prepared(key)?.apply(source, body.to_vec(), format_of(format)?)?;
            let (report, lost) = (
                serde_json::to_string(&applied.report)?,
                lost_json(&applied)?,
            );
            Ok((applied.out, report, lost, applied.warnings))
        })
        .map_err(to_py)?;
    Ok((PyBytes::new(py, &out), report, lost, warnings))
}

/// What a conversion lost, as JSON: `[{"index", "what", "reason"}]`.
fn lost_json(applied: &ctxclean_core::recipe::Applied) -> serde_json::Result<String> {
    let lost: Vec<serde_json::Value> = applied
        .lost
        .iter()
        .map(|l| serde_json::json!({"index": l.index, "what": l.what, "reason": l.reason}))
        .collect();
    serde_json::to_string(&lost)
}

/// A message written, as [`kept`] gives it: `(i, None)` for input message
/// `i` as it was, `(i or None, pos)` for the output's message at `pos`.
type Pick = (Option<usize>, Option<usize>);

/// What [`kept`] hands back: each message written, the output (when a
/// message was changed or added), the warnings, what was lost (JSON).
type Kept<'py> = (Vec<Pick>, Option<Bound<'py, PyBytes>>, Vec<String>, String);

/// What a recipe keeps of a list of messages, as `{"messages": messages}`:
/// for each message written, `(i, None)` when it is input message `i` as
/// it was, else `(i or None, pos)`, the message at `pos` of the output's
/// messages (changed, or added); the output's bytes only then. `messages`
/// are read as Python values (see `values::to_value`); `None` when they
/// cannot be, and the caller hands their JSON text as `data` instead.
#[pyfunction]
#[pyo3(signature = (messages, data, steps, model=None, tokenizer=None))]
fn kept<'py>(
    py: Python<'py>,
    messages: Option<&Bound<'py, PyList>>,
    data: Option<&[u8]>,
    steps: Vec<Vec<String>>,
    model: Option<&str>,
    tokenizer: Option<&str>,
) -> PyResult<Option<Kept<'py>>> {
    let value = match messages {
        Some(list) => match values::to_value(list.as_any(), 1) {
            Some(v) => Some(serde_json::json!({ "messages": v })),
            None => return Ok(None),
        },
        None => None,
    };
    let key = (
        steps,
        model.map(str::to_string),
        tokenizer.map(str::to_string),
        false,
    );
    let got = py
        .allow_threads(|| -> anyhow::Result<_> {
            let prepared = prepared(key)?;
            let applied = match value {
                Some(v) => match prepared.apply_value("<python>", v, None)? {
                    Some(applied) => applied,
                    None => return Ok(None),
                },
                None => prepared.apply("<python>", data.unwrap_or_default().to_vec(), None)?,
            };
            let lost = lost_json(&applied)?;
            let picked = picked(&applied)?;
            let changed = picked.iter().any(|(_, pos)| pos.is_some());
            let out = changed.then_some(applied.out);
            Ok(Some((picked, out, applied.warnings, lost)))
        })
        .map_err(to_py)?;
    Ok(got.map(|(picked, out, warnings, lost)| {
        (picked, out.map(|o| PyBytes::new(py, &o)), warnings, lost)
    }))
}

/// Each message written, as [`kept`] gives it, from the records the
/// writer wrote. A recipe that converts to another format writes records
/// that are no messages of the list: refused, never an empty list.
fn picked(applied: &ctxclean_core::recipe::Applied) -> anyhow::Result<Vec<Pick>> {
    let records = match applied.records.first() {
        None => &[][..],
        Some(Some(records)) => records.as_slice(),
        Some(None) => {
            return Err(UsageError(
                "this recipe writes the messages in another format (a convert step, or --to): \
                 trim_messages, filter_messages and the middleware give back messages of the \
                 list they were given; convert with ctxclean.apply"
                    .into(),
            )
            .into())
        }
    };
    Ok(records
        .iter()
        .enumerate()
        .map(|(pos, r)| match (r.input, r.changed) {
            (Some(i), false) => (Some(i), None),
            (input, _) => (input, Some(pos)),
        })
        .collect())
}

/// A recipe applied to the requests of an agent in flight, as `ctxclean
/// serve` applies it: each request body cleaned without being made invalid
/// for its provider, and a conversation seen before held (what went on last
/// time, the new messages appended) until its budget or the model's cache
/// prices say to clean it again. One per agent (or middleware); safe to
/// share between threads.
#[pyclass(frozen, module = "ctxclean._native")]
struct InFlight {
    prepared: Prepared,
    holds: ctxclean_core::inflight::Holds,
}

#[pymethods]
impl InFlight {
    /// `horizon`: cleaning again pays when it saves within this many more
    /// requests (`--cache-horizon`; `None`, the default: once the reads of
    /// what it would take out reach the cache write it costs, as `serve`
    /// decides); `capacity`: the conversations held (the least recently
    /// used forgotten first, and all of them within 256 MiB of requests).
    #[new]
    #[pyo3(signature = (steps, model=None, tokenizer=None, horizon=None, capacity=1024))]
    fn new(
        steps: Vec<Vec<String>>,
        model: Option<&str>,
        tokenizer: Option<&str>,
        horizon: Option<usize>,
        capacity: usize,
    ) -> PyResult<InFlight> {
        let recipe =
            Recipe::from_steps_in_flight(&words(steps), model, tokenizer).map_err(to_py)?;
        let holds = ctxclean_core::inflight::Holds::new(recipe.budget, horizon, capacity);
        let prepared = recipe.prepare(Accounting::Full).map_err(to_py)?;
        Ok(InFlight { prepared, holds })
    }

    /// Cleans an OpenAI request body (`{"model": …, "messages": […]}`):
    /// (the body to send, or `None` for the body as it came; whether the
    /// conversation was held or cleaned again, and why; why it went on as
    /// it came, when something could have changed; the warnings the
    /// command line would give).
    fn clean<'py>(&self, py: Python<'py>, body: &[u8]) -> PyResult<Cleaned<'py>> {
        let out = py
            .allow_threads(|| {
                self.prepared
                    .clean_request(Format::OpenAi, body, Some(&self.holds))
            })
            .map_err(|e| to_py(e.into()))?;
        let warnings = out
            .reports
            .iter()
            .flat_map(ctxclean_core::report::warnings)
            .collect();
        let sent = out.body.map(|b| PyBytes::new(py, &b));
        Ok((sent, out.cache, out.kept_because, warnings))
    }
}

/// What [`InFlight::clean`] hands back.
type Cleaned<'py> = (
    Option<Bound<'py, PyBytes>>,
    Option<String>,
    Option<String>,
    Vec<String>,
);

/// The tokens of a text, or of every conversation of a body, with the
/// tokenizer of `tokenizer`, else of `model`, else o200k_base.
#[pyfunction]
#[pyo3(signature = (body=None, text=None, format=None, model=None, tokenizer=None))]
fn count_tokens(
    py: Python<'_>,
    body: Option<&[u8]>,
    text: Option<&str>,
    format: Option<&str>,
    model: Option<&str>,
    tokenizer: Option<&str>,
) -> PyResult<usize> {
    py.allow_threads(|| {
        ctxclean_core::recipe::stats::tokens(
            body.unwrap_or_default().to_vec(),
            text,
            format_of(format)?,
            model,
            tokenizer,
        )
    })
    .map_err(to_py)
}

/// `ctxclean stats --json` of a body, as its JSON text.
#[pyfunction]
#[pyo3(signature = (body, source, format=None, model=None, tokenizer=None))]
fn stats(
    py: Python<'_>,
    body: &[u8],
    source: &str,
    format: Option<&str>,
    model: Option<&str>,
    tokenizer: Option<&str>,
) -> PyResult<String> {
    py.allow_threads(|| -> anyhow::Result<String> {
        let out = ctxclean_core::recipe::stats::json(
            source,
            body.to_vec(),
            format_of(format)?,
            model,
            tokenizer,
        )?;
        Ok(String::from_utf8(out)?)
    })
    .map_err(to_py)
}

/// The problems a provider would reject a body for, as `validate --json`
/// lists them (JSON text).
#[pyfunction]
#[pyo3(signature = (body, source, format=None, provider=None))]
fn validate(
    py: Python<'_>,
    body: &[u8],
    source: &str,
    format: Option<&str>,
    provider: Option<&str>,
) -> PyResult<String> {
    py.allow_threads(|| -> anyhow::Result<String> {
        let problems =
            ctxclean_core::recipe::validate(source, body.to_vec(), format_of(format)?, provider)?;
        Ok(serde_json::to_string(&problems)?)
    })
    .map_err(to_py)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("NativeInputError", m.py().get_type::<NativeInputError>())?;
    m.add_function(wrap_pyfunction!(steps_from_toml, m)?)?;
    m.add_function(wrap_pyfunction!(steps_from_json, m)?)?;
    m.add_function(wrap_pyfunction!(apply, m)?)?;
    m.add_function(wrap_pyfunction!(kept, m)?)?;
    m.add_class::<InFlight>()?;
    m.add_function(wrap_pyfunction!(count_tokens, m)?)?;
    m.add_function(wrap_pyfunction!(stats, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    Ok(())
}
