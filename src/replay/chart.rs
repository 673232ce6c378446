//! `replay --chart`: the recipes' frontier (evidence recall against the
//! tokens sent) and one session's tokens per call, as one SVG.

use super::{Session, Summary};
use crate::numbers::thousands;

const W: f64 = 760.0;
const PANEL: f64 = 320.0;
const PAD: f64 = 56.0;
/// The plots' right edge: the legend is right of it.
const RIGHT: f64 = 500.0;
const COLORS: [&str; 8] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The chart: `summaries` (one per recipe, none first) and, per recipe,
/// its sessions in the same order; the session with the most calls is the
/// one drawn call by call.
pub fn svg(summaries: &[Summary], sessions: &[Vec<Session>]) -> String {
    let height = 2.0 * PANEL;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{height}\" \
         viewBox=\"0 0 {W} {height}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    );
    frontier(&mut out, summaries);
    calls(&mut out, summaries, sessions);
    legend(&mut out, summaries);
    out += "</svg>\n";
    out
}

fn axes(out: &mut String, top: f64, title: &str, x: &str, y: &str) {
    let (x0, y0, x1, y1) = (PAD, top + PANEL - PAD, RIGHT, top + PAD);
    *out += &format!(
        "<text x=\"{PAD}\" y=\"{:.1}\" font-size=\"14\">{}</text>\n\
         <line class=\"axis\" x1=\"{x0}\" y1=\"{y0:.1}\" x2=\"{x1}\" y2=\"{y0:.1}\" stroke=\"#999\"/>\n\
         <line class=\"axis\" x1=\"{x0}\" y1=\"{y0:.1}\" x2=\"{x0}\" y2=\"{y1:.1}\" stroke=\"#999\"/>\n\
         <text x=\"{x1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>\n\
         <text x=\"{:.1}\" y=\"{:.1}\">{}</text>\n",
        top + 24.0,
        esc(title),
        y0 + 32.0,
        esc(x),
        x0 + 4.0,
        y1 - 8.0,
        esc(y)
    );
}

/// Recall against the share of none's tokens, a dot per recipe.
fn frontier(out: &mut String, summaries: &[Summary]) {
    axes(
        out,
        0.0,
        "What each recipe keeps, for what it sends",
        "tokens sent, share of none's",
        "evidence recall (mean)",
    );
    let x = |share: f64| PAD + (RIGHT - PAD) * share.clamp(0.0, 1.0);
    let lowest = summaries
        .iter()
        .map(|s| s.recall_mean)
        .fold(1.0f64, f64::min)
        .min(0.9);
    let y = |r: f64| PANEL - PAD - (PANEL - 2.0 * PAD) * (r - lowest) / (1.0 - lowest).max(1e-9);
    for (v, anchor) in [(0.0, "start"), (0.5, "middle"), (1.0, "end")] {
        *out += &format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"{anchor}\" fill=\"#666\">{:.0}%</text>\n",
            x(v),
            PANEL - PAD + 16.0,
            v * 100.0
        );
    }
    for r in [lowest, 1.0] {
        *out += &format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#666\">{:.0}%</text>\n",
            PAD - 6.0,
            y(r) + 4.0,
            r * 100.0
        );
    }
    for (k, s) in summaries.iter().enumerate() {
        *out += &format!(
            "<circle class=\"recipe\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"6\" fill=\"{}\" fill-opacity=\"0.8\"><title>{} ({:.0}%, {:.1}%)</title></circle>\n",
            x(s.tokens_share),
            y(s.recall_mean),
            COLORS[k % COLORS.len()],
            esc(&s.recipe),
            s.tokens_share * 100.0,
            s.recall_mean * 100.0
        );
    }
}

/// Each recipe's color and name, its share of tokens and its recall.
fn legend(out: &mut String, summaries: &[Summary]) {
    let x = RIGHT + 24.0;
    for (k, s) in summaries.iter().enumerate() {
        let y = PAD + 18.0 * k as f64;
        let mut name: String = s.recipe.chars().take(24).collect();
        if s.recipe.chars().count() > 24 {
            name.push('…');
        }
        *out += &format!(
            "<rect class=\"legend\" x=\"{x}\" y=\"{:.1}\" width=\"12\" height=\"12\" fill=\"{}\"/>\n\
             <text x=\"{:.1}\" y=\"{:.1}\">{} {:.0}% · {:.1}%</text>\n",
            y - 10.0,
            COLORS[k % COLORS.len()],
            x + 18.0,
            y,
            esc(&name),
            s.tokens_share * 100.0,
            s.recall_mean * 100.0
        );
    }
}

/// One session's tokens sent per call, a line per recipe.
fn calls(out: &mut String, summaries: &[Summary], sessions: &[Vec<Session>]) {
    let Some(pick) = sessions
        .first()
        .and_then(|ss| (0..ss.len()).max_by_key(|&i| ss[i].calls.len()))
    else {
        return;
    };
    let top = PANEL;
    let name = &sessions[0][pick];
    axes(
        out,
        top,
        &format!("{}#{}: tokens sent per call", name.source, name.index),
        "model call",
        "tokens sent",
    );
    let n = name.calls.len().max(1);
    let most = sessions
        .iter()
        .filter_map(|ss| ss.get(pick))
        .flat_map(|s| s.calls.iter().map(|c| c.tokens_sent))
        .max()
        .unwrap_or(1)
        .max(1);
    *out += &format!(
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>\n",
        PAD - 4.0,
        top + PAD + 4.0,
        thousands(most)
    );
    let x = |i: usize| PAD + (RIGHT - PAD) * (i as f64 + 1.0) / n as f64;
    let y = |v: usize| top + PANEL - PAD - (PANEL - 2.0 * PAD) * v as f64 / most as f64;
    for (k, (s, ss)) in summaries.iter().zip(sessions).enumerate() {
        let Some(session) = ss.get(pick) else {
            continue;
        };
        let points: Vec<String> = session
            .calls
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{:.1},{:.1}", x(i), y(c.tokens_sent)))
            .collect();
        *out += &format!(
            "<polyline class=\"calls\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"><title>{}</title></polyline>\n",
            COLORS[k % COLORS.len()],
            points.join(" "),
            esc(&s.recipe)
        );
    }
}
