//! Number spelling. The JSON parser keeps numbers exactly (no float
//! rounding) but spells exponents its own way: `1e5` and `1E5` are read as
//! `1e+5`. So that a number in a message the tool did not change comes out
//! as it went in, the reader notes the input's spellings that the parser
//! changes, and the writer spells them back.

use std::collections::HashMap;
use std::io;

/// The input's spellings of numbers, by the parser's spelling; `None` for a
/// parser spelling the input writes in two ways (it stays as parsed).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Spellings(HashMap<String, Option<String>>);

/// The parser's spelling of a number token: `E` as `e`, and a sign after it.
fn parsed_spelling(token: &str) -> Option<String> {
    let at = token.find(['e', 'E'])?;
    let (mantissa, exp) = token.split_at(at);
    let exp = &exp[1..];
    let signed = if exp.starts_with(['+', '-']) {
        exp.to_string()
    } else {
        format!("+{exp}")
    };
    let out = format!("{mantissa}e{signed}");
    (out != token).then_some(out)
}

/// The spellings of `text` that the parser changes, if any. One pass over
/// the text, skipping strings.
pub(crate) fn scan(text: &str) -> Option<Spellings> {
    let b = text.as_bytes();
    // Most inputs have no exponent outside strings: a quick test first, for
    // a digit then `e` in what looks like a value (after `:`, `[` or `,`).
    let value_at = |e: usize| {
        let mut i = e;
        while i > 0 && matches!(b[i - 1], b'0'..=b'9' | b'.' | b'-') {
            i -= 1;
        }
        while i > 0 && b[i - 1].is_ascii_whitespace() {
            i -= 1;
        }
        i > 0 && matches!(b[i - 1], b':' | b'[' | b',')
    };
    let maybe = memchr::memchr2_iter(b'e', b'E', b)
        .any(|e| e > 0 && b[e - 1].is_ascii_digit() && value_at(e));
    if !maybe {
        return None;
    }
    let mut map: HashMap<String, Option<String>> = HashMap::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < b.len() && matches!(b[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    i += 1;
                }
                let token = &text[start..i];
                if let Some(parsed) = parsed_spelling(token) {
                    map.entry(parsed)
                        .and_modify(|seen| {
                            if seen.as_deref() != Some(token) {
                                *seen = None;
                            }
                        })
                        .or_insert_with(|| Some(token.to_string()));
                }
            }
            _ => i += 1,
        }
    }
    (!map.is_empty()).then_some(Spellings(map))
}

/// A JSON formatter that spells numbers back as the input did.
pub(crate) struct Spelled<'a, F> {
    pub(crate) inner: F,
    pub(crate) spellings: &'a Spellings,
}

impl<F: serde_json::ser::Formatter> serde_json::ser::Formatter for Spelled<'_, F> {
    fn write_number_str<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        value: &str,
    ) -> io::Result<()> {
        match self.spellings.0.get(value) {
            Some(Some(original)) => w.write_all(original.as_bytes()),
            _ => w.write_all(value.as_bytes()),
        }
    }

    fn begin_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.inner.begin_array(w)
    }
    fn end_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.inner.end_array(w)
    }
    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.inner.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.inner.end_array_value(w)
    }
    fn begin_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.inner.begin_object(w)
    }
    fn end_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.inner.end_object(w)
    }
    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.inner.begin_object_key(w, first)
    }
    fn end_object_key<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.inner.end_object_key(w)
    }
    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.inner.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.inner.end_object_value(w)
    }
}

/// Serializes `value` compactly, or pretty with `indent`, spelling numbers
/// as the input did.
pub(crate) fn to_writer<W: io::Write + ?Sized>(
    out: &mut W,
    value: &impl serde::Serialize,
    indent: Option<&str>,
    spellings: Option<&Spellings>,
) -> io::Result<()> {
    use serde_json::ser::{CompactFormatter, PrettyFormatter};
    let empty = Spellings::default();
    let spellings = spellings.unwrap_or(&empty);
    match indent {
        Some(indent) => {
            let fmt = Spelled {
                inner: PrettyFormatter::with_indent(indent.as_bytes()),
                spellings,
            };
            value.serialize(&mut serde_json::Serializer::with_formatter(out, fmt))?;
        }
        None => {
            let fmt = Spelled {
                inner: CompactFormatter,
                spellings,
            };
            value.serialize(&mut serde_json::Serializer::with_formatter(out, fmt))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponents_come_back_as_written() {
        let text =
            r#"{"a":1e5,"b":1E5,"c":2e-3,"d":"1e5 in a string","e":3.0e+2,"f":7E+1,"g":[1e999]}"#;
        let s = scan(text).unwrap();
        // 1e5 and 1E5 both parse as 1e+5: that spelling stays as parsed.
        assert_eq!(s.0.get("1e+5"), Some(&None));
        assert_eq!(s.0.get("7e+1"), Some(&Some("7E+1".into())));
        assert_eq!(s.0.get("1e+999"), Some(&Some("1e999".into())));
        assert!(!s.0.contains_key("2e-3") && !s.0.contains_key("3.0e+2"));
        let v: serde_json::Value = serde_json::from_str(r#"{"f":7E+1,"g":1e999,"h":1e5}"#).unwrap();
        let mut out = Vec::new();
        to_writer(&mut out, &v, None, Some(&s)).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"f":7E+1,"g":1e999,"h":1e+5}"#
        );
        assert!(scan(r#"{"a":"1e5","b":10}"#).is_none());
    }
}
