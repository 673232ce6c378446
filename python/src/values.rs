//! Python values as the JSON values `json.dumps` writes of them, built
//! without writing their text: the package hands messages to the library
//! this way (see `ctxclean_core::format::read_value`).

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString};
use serde_json::{Map, Number, Value};

/// Deeper than this, a value is left to `json.dumps` (which also finds a
/// list or dict that holds itself).
const DEPTH: usize = 100;

/// `obj` as the JSON value `json.dumps(obj, ensure_ascii=False)` writes, as
/// read back: the same keys in the same order, numbers spelled as Python
/// spells them. `None` for what is left to `json.dumps`, which writes it
/// or says what is wrong with it: a type other than exactly a dict, list,
/// str, int, float, bool or None; a key that is not a str; NaN or an
/// infinity; a str that is not UTF-8 (a lone surrogate); deep nesting.
pub fn to_value(obj: &Bound<'_, PyAny>, depth: usize) -> Option<Value> {
    if depth > DEPTH {
        return None;
    }
    if obj.is_none() {
        return Some(Value::Null);
    }
    if let Ok(s) = obj.downcast_exact::<PyString>() {
        return Some(Value::String(s.to_cow().ok()?.into_owned()));
    }
    if let Ok(d) = obj.downcast_exact::<PyDict>() {
        let mut map = Map::with_capacity(d.len());
        for (k, v) in d.iter() {
            let k = k.downcast_exact::<PyString>().ok()?.to_cow().ok()?;
            map.insert(k.into_owned(), to_value(&v, depth + 1)?);
        }
        return Some(Value::Object(map));
    }
    if let Ok(l) = obj.downcast_exact::<PyList>() {
        let mut items = Vec::with_capacity(l.len());
        for v in l.iter() {
            items.push(to_value(&v, depth + 1)?);
        }
        return Some(Value::Array(items));
    }
    if obj.is_exact_instance_of::<PyBool>() {
        return Some(Value::Bool(obj.is_truthy().ok()?));
    }
    if obj.is_exact_instance_of::<PyInt>() {
        if let Ok(i) = obj.extract::<i64>() {
            return Some(Value::Number(i.into()));
        }
        return number(&obj.str().ok()?.to_cow().ok()?);
    }
    if let Ok(f) = obj.downcast_exact::<PyFloat>() {
        if !f.value().is_finite() {
            return None;
        }
        // `json.dumps` spells a float as its repr.
        return number(&f.repr().ok()?.to_cow().ok()?);
    }
    None
}

/// A number spelled `text` (serde_json keeps the spelling).
fn number(text: &str) -> Option<Value> {
    text.parse::<Number>().ok().map(Value::Number)
}
