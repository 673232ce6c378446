//! `ctxclean bill` over whatever a log holds (a line cut by a crash, a
//! hostile client's model name, a clock set to the year 30000): its tally
//! and its chart. Never a panic; the chart is well-formed SVG holding only
//! the chart's own elements, whatever text the log put in it.
#![no_main]

use ctxclean::bill::{bill, svg};
use libfuzzer_sys::fuzz_target;

/// The elements the chart draws.
const DRAWN: [&str; 5] = ["svg", "rect", "text", "line", "title"];

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let tally = bill(text.lines());
    let chart = svg(&tally);
    let doc = roxmltree::Document::parse(&chart)
        .unwrap_or_else(|e| panic!("the chart is not well-formed XML: {e}"));
    for node in doc.descendants().filter(|n| n.is_element()) {
        let name = node.tag_name().name();
        assert!(
            DRAWN.contains(&name),
            "an element the chart does not draw: <{name}>"
        );
    }
});
