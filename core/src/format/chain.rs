//! One walker for every transcript whose messages link to a parent: the
//! conversation is the chain from a leaf back to the root.
//!
//! | format | nodes | parent key | leaf |
//! |---|---|---|---|
//! | `chatgpt` | `mapping` values | `parent` | `current_node` |
//! | `open-webui` | `history.messages` values | `parentId` | `history.currentId` |
//! | `librechat` | `messages` | `parentMessageId` | the newest message |
//! | `claude-code` | lines with a `uuid` | `parentUuid` (`logicalParentUuid` across compactions) | the last message line |
//!
//! When the named leaf is missing or not a node (exports trimmed by hand,
//! or written by tools that drop the pointer), the newest leaf is followed
//! instead (by time, else the last in document order), and the caller is
//! told why so that it can say so.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::dialect::OutRecord;
use crate::transcript::Record;

/// A sortable time: numbers (epoch seconds or milliseconds) compare as
/// numbers, strings (ISO 8601) as text.
#[derive(Clone, Debug, PartialEq, PartialOrd)]
pub(crate) enum Time {
    /// An ISO 8601 string.
    Text(String),
    /// A number.
    Number(f64),
}

impl Time {
    /// The time held in a JSON value, if it holds one.
    pub(crate) fn of(v: Option<&Value>) -> Option<Time> {
        match v? {
            Value::Number(n) => n.as_f64().map(Time::Number),
            Value::String(s) if !s.is_empty() => Some(Time::Text(s.clone())),
            _ => None,
        }
    }
}

/// One node of a message tree, as a format keeps it.
#[derive(Clone, Debug)]
pub(crate) struct Node<'a> {
    /// Its id.
    pub(crate) id: &'a str,
    /// Its parent's id; `None` for a root.
    pub(crate) parent: Option<&'a str>,
    /// When it was written, for picking the newest leaf.
    pub(crate) time: Option<Time>,
    /// Whether it may end a conversation (a message, not a bare root).
    pub(crate) leaf_ok: bool,
}

/// The branch a conversation follows.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Branch {
    /// Positions (in the node list) from the root to the leaf.
    pub(crate) path: Vec<usize>,
    /// Whether the leaf is the one the format named.
    pub(crate) named: bool,
    /// Why another leaf was followed, when the named one could not be.
    pub(crate) note: Option<String>,
    /// The nodes that may end a conversation (messages) off the path: other
    /// branches (edits, regenerations), kept in place and not read.
    pub(crate) off: usize,
}

/// The branch ending at `named` (given by `pointer`, the key naming it, for
/// notes), or at the newest leaf when `named` is missing or not a node.
pub(crate) fn branch(nodes: &[Node<'_>], named: Option<&str>, pointer: &str) -> Branch {
    let by_id: HashMap<&str, usize> = nodes.iter().enumerate().map(|(i, n)| (n.id, i)).collect();
    let (leaf, note) = match named.and_then(|id| by_id.get(id)) {
        Some(&i) => (Some(i), None),
        None => {
            let leaf = newest_leaf(nodes, &by_id);
            let found = match (leaf, nodes.get(leaf.unwrap_or(usize::MAX))) {
                (Some(_), Some(n)) => format!("followed the newest leaf \"{}\"", n.id),
                _ => "no leaf to follow".to_string(),
            };
            let why = match named {
                Some(id) => format!("{pointer} \"{id}\" is not in the message tree"),
                None => format!("{pointer} is missing"),
            };
            (leaf, (!nodes.is_empty()).then(|| format!("{why}; {found}")))
        }
    };
    let Some(leaf) = leaf else {
        return Branch {
            note,
            ..Branch::default()
        };
    };
    let mut path = Vec::new();
    let mut seen = HashSet::new();
    let mut cur = Some(leaf);
    while let Some(i) = cur {
        if !seen.insert(i) {
            break; // a cycle: stop rather than loop
        }
        path.push(i);
        cur = nodes[i].parent.and_then(|p| by_id.get(p).copied());
    }
    path.reverse();
    let mut on = vec![false; nodes.len()];
    for &i in &path {
        on[i] = true;
    }
    let off = (0..nodes.len())
        .filter(|&i| nodes[i].leaf_ok && !on[i])
        .count();
    Branch {
        path,
        named: note.is_none(),
        note,
        off,
    }
}

/// [`off_branch_note`] for `n` messages of a chat's other branches: the
/// edits and regenerations a chat app keeps beside the branch it shows
/// (ChatGPT, Open WebUI, LibreChat, branched exports).
pub(crate) fn edits_note(n: usize) -> Option<String> {
    off_branch_note(n, "message", "edits and regenerations")
}

/// How many records an `active` mask passes over.
pub(crate) fn passed(active: &[bool]) -> usize {
    active.iter().filter(|on| !**on).count()
}

/// [`off_branch_note`] for the records an `active` mask passes over.
pub(crate) fn passed_note(active: &[bool], what: &str, why: &str) -> Option<String> {
    off_branch_note(passed(active), what, why)
}

/// The note for `n` of a conversation's messages (each a `what`: `message`,
/// `message line`) that sit off the branch it follows, `why` naming what
/// leaves such branches: kept in place and never read, which is said, not
/// silent. `None` for none.
pub(crate) fn off_branch_note(n: usize, what: &str, why: &str) -> Option<String> {
    let (s, are, they) = if n == 1 {
        ("", "is", "it is")
    } else {
        ("s", "are", "they are")
    };
    (n > 0).then(|| {
        format!(
            "{n} {what}{s} {are} off the branch the conversation follows ({why}): kept in the file as {they} and not read"
        )
    })
}

/// The newest node no other node names as its parent: by time, then by
/// position (the last in document order).
fn newest_leaf(nodes: &[Node<'_>], by_id: &HashMap<&str, usize>) -> Option<usize> {
    let mut has_child = vec![false; nodes.len()];
    for n in nodes {
        if let Some(&p) = n.parent.and_then(|p| by_id.get(p)) {
            has_child[p] = true;
        }
    }
    let mut best: Option<usize> = None;
    for (i, n) in nodes.iter().enumerate() {
        if has_child[i] || !n.leaf_ok {
            continue;
        }
        best = match best {
            Some(b) if newer(&nodes[b].time, &n.time) => Some(b),
            _ => Some(i),
        };
    }
    best.or_else(|| nodes.iter().rposition(|n| n.leaf_ok))
}

/// Whether `a` is strictly newer than `b` (an unknown time is never newer).
fn newer(a: &Option<Time>, b: &Option<Time>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.partial_cmp(b) == Some(std::cmp::Ordering::Greater),
        (Some(_), None) => true,
        _ => false,
    }
}

/// Relinks the lines of a log kept as a list of linked lines (Claude
/// Code's `uuid`/`parentUuid`, pi's `id`/`parentId`) over the lines that
/// were removed: each line whose parent went names its nearest kept
/// ancestor, or `null` when none is left. A parent that names no line of
/// the file (another file, a trimmed copy) is kept as it was, so that the
/// chain still breaks where it broke and is read the same.
pub(crate) fn relink(original: &[Record], out: &mut [OutRecord], id_key: &str, parent_key: &str) {
    // Parent of every original line, by id.
    let parent: HashMap<&str, Option<&str>> = original
        .iter()
        .filter_map(|r| {
            let v = r.value.as_ref()?;
            let id = v.get(id_key)?.as_str()?;
            Some((id, v.get(parent_key).and_then(Value::as_str)))
        })
        .collect();
    let kept: HashSet<String> = out
        .iter()
        .filter_map(|r| r.object()?.get(id_key)?.as_str().map(str::to_string))
        .collect();
    let mut memo = HashMap::new();
    for r in out.iter_mut() {
        let Some(line) = r.object() else {
            continue;
        };
        let Some(p) = line.get(parent_key).and_then(Value::as_str) else {
            continue;
        };
        if kept.contains(p) {
            continue;
        }
        // The original's own spelling of the id, which outlives this line.
        let Some((&p, _)) = parent.get_key_value(p) else {
            continue;
        };
        let stop = |q: &str| kept.contains(q) || !parent.contains_key(q);
        let new_parent = nearest_kept(p, &parent, stop, &mut memo).map(str::to_string);
        let mut line = line.clone();
        line.insert(
            parent_key.into(),
            new_parent.map_or(Value::Null, Value::from),
        );
        r.set(Value::Object(line));
    }
}

/// The nearest ancestor of the removed node `start` where `stop` holds (a
/// kept node, or one the file does not have), walking `up` (each removed
/// node's parent); `None` when the walk ends at a root or goes round a
/// cycle (a node that is its own ancestor). Every node walked over is
/// remembered in `memo` with its answer, so that resolving every node of a
/// chain is linear, not quadratic (a side line on each removed message).
pub(crate) fn nearest_kept<'a>(
    start: &'a str,
    up: &HashMap<&'a str, Option<&'a str>>,
    stop: impl Fn(&str) -> bool,
    memo: &mut HashMap<&'a str, Option<&'a str>>,
) -> Option<&'a str> {
    let mut path: Vec<&'a str> = Vec::new();
    let mut on_path: HashSet<&'a str> = HashSet::new();
    let mut cur = start;
    let answer = loop {
        if let Some(&known) = memo.get(cur) {
            break known;
        }
        if !on_path.insert(cur) {
            break None; // a cycle
        }
        path.push(cur);
        match up.get(cur).copied().flatten() {
            None => break None,
            Some(q) if stop(q) => break Some(q),
            Some(q) => cur = q,
        }
    };
    for p in path {
        memo.insert(p, answer);
    }
    answer
}

/// A log's conversation is the chain of its last message line. When an
/// operation removed the conversation's last lines, a line of a branch
/// abandoned by a rewind could come last, and the file would read (in
/// ctxclean and in the agent) as that branch: the conversation's last kept
/// line is moved after it, everything else keeping its order.
pub(crate) fn keep_leaf_last(
    original: &[Record],
    out: &mut [OutRecord],
    id_key: &str,
    is_message: fn(&Map<String, Value>) -> bool,
) {
    let read: HashSet<&str> = original
        .iter()
        .filter(|r| r.messages > 0)
        .filter_map(|r| r.value.as_ref()?.get(id_key)?.as_str())
        .collect();
    // A message line, and whether it is of the conversation read.
    let message = |r: &OutRecord| -> Option<bool> {
        let o = r.object()?;
        let id = o.get(id_key)?.as_str()?;
        is_message(o).then(|| read.contains(id))
    };
    let Some(leaf) = out.iter().rposition(|r| message(r) == Some(true)) else {
        return;
    };
    let after = out[leaf + 1..]
        .iter()
        .rposition(|r| message(r) == Some(false));
    if let Some(k) = after {
        out[leaf..=leaf + 1 + k].rotate_left(1);
    }
}

/// Which records hold the conversation of a log linked by `id_key` /
/// `parent_key`: the chain to its last message, and every record that is
/// not a message (`is_message`), kept in place.
pub(crate) fn active_chain(
    records: &[Option<&Map<String, Value>>],
    id_key: &str,
    parent_key: &str,
    is_message: fn(&Map<String, Value>) -> bool,
) -> Option<Vec<bool>> {
    let chain = last_chain(records, id_key, parent_key)?;
    Some(
        records
            .iter()
            .zip(chain)
            .map(|(r, on)| on || r.is_none_or(|r| !is_message(r)))
            .collect(),
    )
}

/// The lines on the chain from the last line with an id back through its
/// parents, in a log of linked lines (pi's `id`/`parentId`); `None` when
/// the log has no branch (no line with two children, one root) or its
/// chain breaks (a parent in no line).
pub(crate) fn last_chain(
    records: &[Option<&Map<String, Value>>],
    id_key: &str,
    parent_key: &str,
) -> Option<Vec<bool>> {
    let id = |r: &Map<String, Value>| r.get(id_key).and_then(Value::as_str).map(str::to_string);
    let by_id: HashMap<String, usize> = records
        .iter()
        .enumerate()
        .filter_map(|(i, r)| Some((id((*r)?)?, i)))
        .collect();
    let mut children: HashMap<&str, usize> = HashMap::new();
    let mut roots = 0;
    for r in records.iter().flatten() {
        match r.get(parent_key) {
            Some(Value::String(p)) => *children.entry(p.as_str()).or_default() += 1,
            Some(Value::Null) => roots += 1,
            _ => {}
        }
    }
    if children.values().all(|&n| n < 2) && roots < 2 {
        return None;
    }
    let mut cur = records
        .iter()
        .rposition(|r| r.is_some_and(|r| id(r).is_some()))?;
    let mut on_chain = vec![false; records.len()];
    loop {
        if on_chain[cur] {
            return None; // a cycle
        }
        on_chain[cur] = true;
        match records[cur].and_then(|r| r.get(parent_key)?.as_str()) {
            None => return Some(on_chain),
            Some(p) => cur = *by_id.get(p)?,
        }
    }
}

/// Removes the nodes `ids` (root first) from a tree kept as a map of
/// nodes, hanging each one's children on its parent, in its place among the
/// parent's children. Linear in the tree: the map is rebuilt once, and a
/// tree written without children lists (by tools other than the one the
/// format is named for) has its children found from the parent links once.
pub(crate) fn splice_all(
    tree: &mut Map<String, Value>,
    ids: &[String],
    parent_key: &str,
    children_key: &str,
) {
    if ids.is_empty() {
        return;
    }
    // Children by parent, from the parent links, built when first needed
    // and kept in step with the splices.
    let mut by_parent: Option<HashMap<String, Vec<String>>> = None;
    for id in ids {
        let Some(Value::Object(node)) = tree.get(id) else {
            continue;
        };
        // A node that names itself as its parent is a root.
        let parent = node
            .get(parent_key)
            .and_then(Value::as_str)
            .filter(|p| p != id)
            .map(str::to_string);
        let children: Vec<String> = match node.get(children_key).and_then(Value::as_array) {
            Some(kids) => kids
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            None => by_parent
                .get_or_insert_with(|| children_by_parent(tree, parent_key))
                .get(id)
                .cloned()
                .unwrap_or_default(),
        };
        if let Some(index) = by_parent.as_mut() {
            index.remove(id);
            if let Some(siblings) = parent.as_ref().and_then(|p| index.get_mut(p)) {
                replace_in(siblings, id, &children);
            }
        }
        for c in &children {
            if let Some(Value::Object(n)) = tree.get_mut(c) {
                // In a loop (a → c → b → a) a child can be the parent
                // itself: it becomes a root, never its own parent.
                let p = parent.clone().filter(|p| p != c);
                n.insert(parent_key.into(), p.map_or(Value::Null, Value::from));
            }
        }
        if let Some((p_id, Value::Object(p))) = parent
            .as_deref()
            .and_then(|p| Some((p.to_string(), tree.get_mut(p)?)))
        {
            if let Some(Value::Array(kids)) = p.get_mut(children_key) {
                let mut ids: Vec<String> = kids
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect();
                replace_in(&mut ids, id, &children);
                ids.retain(|k| *k != p_id);
                *kids = ids.into_iter().map(Value::from).collect();
            }
        }
    }
    let gone: HashSet<&str> = ids.iter().map(String::as_str).collect();
    tree.retain(|k, _| !gone.contains(k.as_str()));
    // Removed nodes that were each other's parents (a loop) leave their
    // children naming one of them: those become roots.
    for node in tree.values_mut() {
        let Value::Object(n) = node else { continue };
        if n.get(parent_key)
            .and_then(Value::as_str)
            .is_some_and(|p| gone.contains(p))
        {
            n.insert(parent_key.into(), Value::Null);
        }
    }
}

/// The children of every node, by its id, from the children's parent links.
fn children_by_parent(tree: &Map<String, Value>, parent_key: &str) -> HashMap<String, Vec<String>> {
    let mut out: HashMap<String, Vec<String>> = HashMap::new();
    for (k, n) in tree {
        if let Some(p) = n.get(parent_key).and_then(Value::as_str) {
            out.entry(p.to_string()).or_default().push(k.clone());
        }
    }
    out
}

/// Puts `children` in the place of `id` in a list of ids.
fn replace_in(list: &mut Vec<String>, id: &str, children: &[String]) {
    if let Some(at) = list.iter().position(|k| k == id) {
        list.splice(at..=at, children.iter().cloned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node<'a>(id: &'a str, parent: Option<&'a str>, time: f64) -> Node<'a> {
        Node {
            id,
            parent,
            time: Some(Time::Number(time)),
            leaf_ok: true,
        }
    }

    #[test]
    fn the_named_leaf_is_followed_to_the_root() {
        let nodes = [
            node("r", None, 0.0),
            node("a", Some("r"), 1.0),
            node("b", Some("a"), 2.0),
            node("b2", Some("a"), 3.0),
        ];
        let b = branch(&nodes, Some("b"), "current_node");
        assert_eq!(b.path, [0, 1, 2]);
        assert!(b.named && b.note.is_none());
    }

    #[test]
    fn the_messages_off_the_branch_are_counted_but_not_a_bare_root() {
        let mut nodes = vec![
            node("r", None, 0.0),
            node("a", Some("r"), 1.0),
            node("b", Some("a"), 2.0),
            node("b2", Some("a"), 3.0),
            node("c2", Some("b2"), 4.0),
        ];
        // A root that holds no message is on every branch and never a
        // message off one.
        nodes[0].leaf_ok = false;
        assert_eq!(branch(&nodes, Some("b"), "current_node").off, 2);
        assert_eq!(branch(&nodes, Some("c2"), "current_node").off, 1);
        let unrooted = [node("x", None, 1.0), node("y", None, 2.0)];
        assert_eq!(branch(&unrooted, Some("y"), "current_node").off, 1);
        assert_eq!(off_branch_note(0, "message", "edits"), None);
        assert_eq!(
            off_branch_note(1, "message line", "a rewind").as_deref(),
            Some("1 message line is off the branch the conversation follows (a rewind): kept in the file as it is and not read")
        );
        assert!(off_branch_note(2, "message", "edits")
            .is_some_and(|n| n.starts_with("2 messages are off the branch")));
    }

    #[test]
    fn a_dangling_or_missing_pointer_follows_the_newest_leaf() {
        let nodes = [
            node("r", None, 0.0),
            node("a", Some("r"), 1.0),
            node("b", Some("a"), 5.0),
            node("b2", Some("a"), 3.0),
        ];
        let b = branch(&nodes, Some("gone"), "current_node");
        assert_eq!(b.path, [0, 1, 2]);
        assert!(!b.named);
        assert_eq!(
            b.note.as_deref(),
            Some(
                "current_node \"gone\" is not in the message tree; followed the newest leaf \"b\""
            )
        );
        let b = branch(&nodes, None, "current_node");
        assert_eq!(b.path, [0, 1, 2]);
        assert!(b.note.unwrap().starts_with("current_node is missing"));
    }

    #[test]
    fn without_times_the_last_leaf_wins_and_cycles_stop() {
        let nodes = [
            Node {
                id: "a",
                parent: Some("b"),
                time: None,
                leaf_ok: true,
            },
            Node {
                id: "b",
                parent: Some("a"),
                time: None,
                leaf_ok: true,
            },
        ];
        let b = branch(&nodes, Some("b"), "p");
        assert_eq!(b.path, [0, 1]);
        assert_eq!(branch(&[], None, "p"), Branch::default());
    }
}
