//! Errors in input data, located by file, line and column.
//!
//! Everything else (I/O, usage) travels as `anyhow::Error`; an [`InputError`]
//! is the one fault callers and tests need to tell apart, because it names
//! the place in the user's file to look at.

use std::fmt;

/// A fault in an input transcript.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputError {
    /// The input's path, or `-` for standard input.
    pub source: String,
    /// The 1-based line.
    pub line: usize,
    /// The 1-based column (in characters), when known.
    pub column: Option<usize>,
    /// What is wrong, and where useful, what to do about it.
    pub message: String,
}

impl InputError {
    /// An error at a line and column of `source`.
    pub fn new(
        source: &str,
        line: usize,
        column: Option<usize>,
        message: impl Into<String>,
    ) -> InputError {
        InputError {
            source: source.to_string(),
            line,
            column,
            message: message.into(),
        }
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.column {
            Some(col) => write!(f, "{}:{}:{}: {}", self.source, self.line, col, self.message),
            None => write!(f, "{}:{}: {}", self.source, self.line, self.message),
        }
    }
}

impl std::error::Error for InputError {}

/// The 1-based line and column (in characters) of a byte offset in `text`.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.bytes().filter(|&b| b == b'\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = text[line_start..offset].chars().count() + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_file_line_column() {
        let e = InputError::new("a.jsonl", 3, Some(7), "missing \"role\"");
        assert_eq!(e.to_string(), "a.jsonl:3:7: missing \"role\"");
        let e = InputError::new("-", 1, None, "oops");
        assert_eq!(e.to_string(), "-:1: oops");
    }

    #[test]
    fn line_col_counts_characters() {
        let text = "ab\ncé\nxyz";
        assert_eq!(line_col(text, 0), (1, 1));
        assert_eq!(line_col(text, 3), (2, 1));
        assert_eq!(line_col(text, 6), (2, 3)); // after "cé"
        assert_eq!(line_col(text, 100), (3, 4));
    }
}
