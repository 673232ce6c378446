//! Numbers for people: `14,200`, `1 line`, `2 conversations`, `−48,210`.
//! The ground floor: every layer may reach down to it; it imports nothing
//! of the crate.

/// `1 line`, `2 lines`: a count in a description, without separators.
pub fn count(n: impl Into<u64>, noun: &str) -> String {
    let n: u64 = n.into();
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// A difference with its sign: `−48,210`, `+12`, `0`.
pub fn signed(d: i64) -> String {
    let n = thousands(d.unsigned_abs() as usize);
    match d.signum() {
        -1 => format!("−{n}"),
        1 => format!("+{n}"),
        _ => n,
    }
}

/// `n` with thousands separators: `14,200`.
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// Whether `s` is a number written in ASCII digits (not empty): the `N` of
/// the notes operations leave (`…; 1234 bytes]`, `…[6 chars]`).
pub(crate) fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// `1 conversation`, `2 conversations`.
pub fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{} {noun}s", thousands(n))
    }
}
