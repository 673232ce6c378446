//! Distinctive strings: what a model takes from its context by name.
//!
//! Paths, file names, URLs, identifiers, numbers of three digits or more,
//! quoted strings: what `replay`'s evidence rule reads off a model's next
//! output, and what `filter --moved-past` looks for in later messages.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use regex_automata::meta::Regex;

/// The patterns of distinctive strings: URLs; paths (a `/` between two
/// names) and file names with an extension; identifiers with `_`, `::`,
/// `-` or an inner capital; numbers of three digits or more; quoted
/// strings. Group 1, when it matched, is the string (inside its quotes).
fn pattern() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(concat!(
            r#"https?://[^\s"'<>`)\]]+"#,
            r#"|(?:[A-Za-z0-9_.~-]+)?(?:/[A-Za-z0-9_.~-]+)+"#,
            r#"|[A-Za-z0-9_-]*[A-Za-z][A-Za-z0-9_-]*\.[A-Za-z][A-Za-z0-9]{0,7}\b"#,
            r#"|\b[A-Za-z_][A-Za-z0-9]*(?:(?:_|::|-)[A-Za-z0-9]+)+\b"#,
            r#"|\b[a-z]+[A-Z][A-Za-z0-9]*\b"#,
            r#"|\b\d{3,}\b"#,
            r#"|"([^"\n]{3,80})"|'([^'\n]{3,80})'|`([^`\n]{3,80})`"#,
        ))
        .expect("a valid pattern")
    })
}

/// The distinctive strings of `text`, in order of first appearance
/// (duplicates once; at most `max`).
pub fn distinctive(text: &str, max: usize) -> Vec<String> {
    let re = pattern();
    let mut caps = re.create_captures();
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    let mut at = 0;
    while at <= text.len() && out.len() < max {
        let input = regex_automata::Input::new(text).span(at..text.len());
        re.search_captures(&input, &mut caps);
        let Some(whole) = caps.get_match() else {
            break;
        };
        let span = (1..4)
            .find_map(|g| caps.get_group(g))
            .unwrap_or(whole.span());
        let s = text[span.start..span.end].trim_end_matches(['.', ',', ':', ';']);
        if s.len() >= 3 && seen.insert(s.to_string()) {
            out.push(s.to_string());
        }
        at = whole.end().max(at + 1);
        while at < text.len() && !text.is_char_boundary(at) {
            at += 1;
        }
    }
    out
}
