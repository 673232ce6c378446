//! The pre-tokenizer of `o200k_base` and `cl100k_base` by hand on any text,
//! as [`super::ascii_piece_end`] is on ASCII: the same alternatives in the
//! same order, over the Unicode classes the patterns name, read from the
//! tables the regex itself is compiled from (`regex-syntax`). Asking the
//! regex for each piece cost about a microsecond a piece, and its lazy
//! automaton was built again, state by state, in every process that met a
//! new script. Tested against the regex on every text the fuzz target
//! `pre_tokenizer` makes, and in `tokens`' tests.

use std::sync::OnceLock;

/// Classes of a character, one bit each.
const WS: u8 = 1; // \s
const CRLF: u8 = 2; // \r, \n
const LU: u8 = 4; // \p{Lu}, \p{Lt}
const LL: u8 = 8; // \p{Ll}
const LMO: u8 = 16; // \p{Lm}, \p{Lo}
const M: u8 = 32; // \p{M}
const N: u8 = 64; // \p{N}

const L: u8 = LU | LL | LMO;
/// o200k_base's `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`.
const UPPERISH: u8 = LU | LMO | M;
/// o200k_base's `[\p{Ll}\p{Lm}\p{Lo}\p{M}]`.
const LOWERISH: u8 = LL | LMO | M;

/// Each class as the regex writes it, and its bit.
const CLASSES: [(&str, u8); 7] = [
    (r"\s", WS),
    (r"[\r\n]", CRLF),
    (r"[\p{Lu}\p{Lt}]", LU),
    (r"\p{Ll}", LL),
    (r"[\p{Lm}\p{Lo}]", LMO),
    (r"\p{M}", M),
    (r"\p{N}", N),
];

/// The classes of every character of the Basic Multilingual Plane, and the
/// ranges of the classes above it.
struct Table {
    bmp: Box<[u8]>,
    /// `(first, last, classes)`, sorted, for characters past U+FFFF.
    astral: Vec<(u32, u32, u8)>,
}

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut bmp = vec![0u8; 0x1_0000].into_boxed_slice();
        let mut astral = Vec::new();
        for (pattern, bit) in CLASSES {
            let mut past_bmp = Vec::new();
            for (a, b) in ranges(pattern) {
                for c in a..=b.min(0xFFFF) {
                    bmp[c as usize] |= bit;
                }
                if b > 0xFFFF {
                    past_bmp.push((a.max(0x1_0000), b));
                }
            }
            astral.push((past_bmp, bit));
        }
        Table {
            bmp,
            astral: merged(&astral),
        }
    })
}

/// The ranges of characters of a class, as the regex reads it.
fn ranges(pattern: &str) -> Vec<(u32, u32)> {
    use regex_syntax::hir::{Class, HirKind};
    let hir = regex_syntax::parse(pattern).expect("a Unicode class");
    match hir.kind() {
        HirKind::Class(Class::Unicode(c)) => c
            .iter()
            .map(|r| (u32::from(r.start()), u32::from(r.end())))
            .collect(),
        HirKind::Literal(l) => {
            let c = std::str::from_utf8(&l.0).expect("UTF-8").chars().next();
            c.map(|c| vec![(u32::from(c), u32::from(c))])
                .unwrap_or_default()
        }
        other => unreachable!("a class, not {other:?}"),
    }
}

/// Ranges of several classes (each sorted, as `regex-syntax` gives them)
/// cut where any starts or ends, each with the classes it is in, sorted.
fn merged(classes: &[(Vec<(u32, u32)>, u8)]) -> Vec<(u32, u32, u8)> {
    let mut cuts: Vec<u32> = classes
        .iter()
        .flat_map(|(ranges, _)| ranges.iter().flat_map(|&(a, b)| [a, b + 1]))
        .collect();
    cuts.sort_unstable();
    cuts.dedup();
    let inside = |ranges: &[(u32, u32)], c: u32| {
        let k = ranges.partition_point(|&(_, b)| b < c);
        ranges.get(k).is_some_and(|&(a, _)| a <= c)
    };
    cuts.windows(2)
        .map(|w| {
            let bits = classes
                .iter()
                .filter(|(ranges, _)| inside(ranges, w[0]))
                .fold(0, |acc, (_, bit)| acc | bit);
            (w[0], w[1] - 1, bits)
        })
        .filter(|&(_, _, bits)| bits != 0)
        .collect()
}

/// The classes of `c`.
#[inline]
fn class(c: char) -> u8 {
    let t = table();
    let u = u32::from(c);
    if u <= 0xFFFF {
        return t.bmp[u as usize];
    }
    match t.astral.binary_search_by(|&(a, b, _)| {
        if b < u {
            std::cmp::Ordering::Less
        } else if a > u {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    }) {
        Ok(k) => t.astral[k].2,
        Err(_) => 0,
    }
}

/// Builds the table now (a millisecond or two), e.g. at start-up.
pub(super) fn preload() {
    table();
}

fn is(c: char, f: u8) -> bool {
    class(c) & f != 0
}

fn at(t: &str, p: usize) -> Option<char> {
    t.get(p..)?.chars().next()
}

/// Where the run of characters of the classes `f` from `p` ends.
fn run(t: &str, p: usize, f: u8) -> usize {
    run_while(t, p, |c| is(c, f))
}

/// Where the run of characters that `keep` takes from `p` ends.
fn run_while(t: &str, mut p: usize, keep: impl Fn(char) -> bool) -> usize {
    for c in t[p..].chars() {
        if !keep(c) {
            break;
        }
        p += c.len_utf8();
    }
    p
}

/// `(?i:'s|'t|'re|'ve|'m|'ll|'d)` at `p`: where it ends. Simple case
/// folding, as the regex's: `ſ` is an `s`.
fn contraction(t: &str, p: usize) -> Option<usize> {
    let mut chars = t.get(p..)?.strip_prefix('\'')?.chars();
    let fold = |c: char| {
        if c == '\u{17F}' {
            's'
        } else {
            c.to_ascii_lowercase()
        }
    };
    let one = chars.next()?;
    let second = match fold(one) {
        's' | 't' | 'm' | 'd' => return Some(p + 1 + one.len_utf8()),
        'r' | 'v' => 'e',
        'l' => 'l',
        _ => return None,
    };
    let two = chars.next().filter(|&c| fold(c) == second)?;
    Some(p + 1 + one.len_utf8() + two.len_utf8())
}

/// o200k_base's `[U]*[L]+` from `s` (U and L overlap: a mark, `\p{Lm}` and
/// `\p{Lo}` are both), as a backtracking match takes it: the U-run as long
/// as it goes, given back a character at a time until an L follows; then
/// the L-run.
fn upper_then_lower(t: &str, s: usize) -> Option<usize> {
    let a = run(t, s, UPPERISH);
    let from = if at(t, a).is_some_and(|c| is(c, LOWERISH)) {
        a
    } else {
        s + t[s..a]
            .char_indices()
            .rev()
            .find(|&(_, c)| is(c, LOWERISH))?
            .0
    };
    Some(run(t, from, LOWERISH))
}

/// o200k_base's `[U]+[L]*` from `s`.
fn upper_and_lower(t: &str, s: usize) -> Option<usize> {
    let a = run(t, s, UPPERISH);
    (a > s).then(|| run(t, a, LOWERISH))
}

/// Where the piece of `t` (a segment, cut where [`super::segments`] cuts)
/// that starts at `i` ends.
pub(super) fn piece_end(t: &str, i: usize, cl100k: bool) -> usize {
    let c = at(t, i).expect("a character at a piece's start");
    let next = i + c.len_utf8();
    // `[^\r\n\p{L}\p{N}]?`: taken when it can be, else given back.
    let prefixed = (!is(c, CRLF | L | N) && next < t.len()).then_some(next);
    if cl100k {
        if let Some(e) = contraction(t, i) {
            return e;
        }
        for s in prefixed.into_iter().chain([i]) {
            let e = run(t, s, L);
            if e > s {
                return e;
            }
        }
    } else {
        let starts = || prefixed.into_iter().chain([i]);
        for alt in [upper_then_lower, upper_and_lower] {
            if let Some(e) = starts().find_map(|s| alt(t, s)) {
                return contraction(t, e).unwrap_or(e);
            }
        }
    }
    // \p{N}{1,3}: read three at a time, never to the run's end.
    if is(c, N) {
        let three = t[i..].char_indices().nth(3).map_or(t.len(), |(k, _)| i + k);
        return run(&t[..three], i, N);
    }
    // ` ?[^\s\p{L}\p{N}]+[\r\n]*` (o200k: `[\r\n/]*`)
    let s = if c == ' ' && next < t.len() { next } else { i };
    let j = run_while(t, s, |c| class(c) & (WS | L | N) == 0);
    if j > s {
        return run_while(t, j, |c| c == '\r' || c == '\n' || (!cl100k && c == '/'));
    }
    whitespace_end(t, i)
}

/// The whitespace alternatives, in their order: `\s*[\r\n]+` (up to the
/// run's last line break), `\s+$`, `\s+(?!\S)` (all but the last, when
/// there are two or more), `\s+`.
fn whitespace_end(t: &str, i: usize) -> usize {
    let w = run(t, i, WS);
    if let Some(p) = t[i..w].rfind(['\r', '\n']) {
        return i + p + 1;
    }
    if w == t.len() {
        return w;
    }
    match t[i..w].chars().next_back() {
        Some(last) if w - last.len_utf8() > i => w - last.len_utf8(),
        _ => w.max(i + at(t, i).map_or(1, char::len_utf8)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every character's classes, from the table, are those of the class
    /// patterns it is in (the plane past U+FFFF through the merged ranges).
    #[test]
    fn every_character_is_in_the_classes_the_patterns_name() {
        let classes: Vec<(Vec<(u32, u32)>, u8)> = CLASSES
            .into_iter()
            .map(|(p, bit)| (ranges(p), bit))
            .collect();
        for u in (0..=0x10_FFFF)
            .step_by(7)
            .chain([0x1_0000, 0x1D400, 0x1D7D8, 0xE01EF])
        {
            let Some(c) = char::from_u32(u) else {
                continue;
            };
            let want = classes
                .iter()
                .filter(|(r, _)| r.iter().any(|&(a, b)| a <= u && u <= b))
                .fold(0, |acc, (_, bit)| acc | bit);
            assert_eq!(class(c), want, "{c:?}");
        }
    }
}
