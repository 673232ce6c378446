//! The summary cache (`--cache DIR`).
//!
//! A summary is stored in `DIR/<key>.json`, where the key is a SHA-256 chain
//! over the engine, the model, the prompt and the summarized entries, one
//! link per entry: `k0 = H(engine, model, prompt)`, `k(i+1) = H(k(i),
//! entry i)`. The key of every prefix of the older messages is thus known
//! without rehashing, and a lookup walks back from the whole list to find the
//! longest prefix already summarized: a rerun on the same transcript finds
//! the whole list (no request); a grown transcript finds its old prefix and
//! only the new entries are folded into that summary.
//!
//! Entries are written atomically; an unreadable or foreign file is a miss,
//! and so is an entry that does not hold what was asked: the key covers the
//! summary budget, and an entry over that budget, or a file over a size cap
//! (a tampered or corrupted cache), is never used.

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::Entry;

/// Bumped when the file layout or the key recipe changes.
const VERSION: u32 = 2;

/// A directory of cached summaries.
#[derive(Clone, Debug)]
pub struct Cache {
    dir: PathBuf,
}

/// One cached summary, as stored.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Stored {
    version: u32,
    engine: String,
    model: String,
    /// How many entries the summary covers.
    messages: usize,
    summary: String,
}

/// What a lookup found: the summary of the first `covered` entries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hit {
    /// How many entries (from the first) the summary covers.
    pub covered: usize,
    /// The summary.
    pub summary: String,
}

impl Cache {
    /// A cache in `dir` (created on first store).
    pub fn new(dir: impl Into<PathBuf>) -> Cache {
        Cache { dir: dir.into() }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The key chain: `keys[i]` identifies the summary of the first `i`
    /// entries (`keys[0]` the engine, model and prompt alone).
    pub fn keys(
        engine: &str,
        model: &str,
        prompt: &str,
        max_summary_tokens: usize,
        entries: &[Entry],
    ) -> Vec<String> {
        let mut h = Sha256::new();
        for part in [
            &format!("ctxclean-summary-v{VERSION}"),
            engine,
            model,
            prompt,
            &max_summary_tokens.to_string(),
        ] {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part.as_bytes());
        }
        let mut link = h.finalize();
        let mut keys = Vec::with_capacity(entries.len() + 1);
        keys.push(hex(&link));
        for e in entries {
            let mut h = Sha256::new();
            h.update(link);
            for part in [e.role.as_str(), e.name.as_deref().unwrap_or(""), &e.text] {
                h.update((part.len() as u64).to_le_bytes());
                h.update(part.as_bytes());
            }
            h.update([e.name.is_some() as u8]);
            link = h.finalize();
            keys.push(hex(&link));
        }
        keys
    }

    /// The summary of the longest prefix of the entries (at least one) that
    /// is stored, given the key chain of [`Cache::keys`]; `fits` says
    /// whether a stored summary is within the budget it was asked for (one
    /// that is not was not written by ctxclean, and is a miss).
    pub fn lookup(
        &self,
        keys: &[String],
        max_bytes: u64,
        fits: impl Fn(&str) -> bool,
    ) -> Option<Hit> {
        (1..keys.len()).rev().find_map(|covered| {
            let path = self.path(&keys[covered]);
            if fs::metadata(&path).ok()?.len() > max_bytes {
                return None;
            }
            let text = fs::read_to_string(path).ok()?;
            let stored: Stored = serde_json::from_str(&text).ok()?;
            (stored.version == VERSION && stored.messages == covered && fits(&stored.summary))
                .then_some(Hit {
                    covered,
                    summary: stored.summary,
                })
        })
    }

    /// Stores the summary of the entries whose chain ends in `key`.
    pub fn store(
        &self,
        key: &str,
        engine: &str,
        model: &str,
        messages: usize,
        summary: &str,
    ) -> anyhow::Result<()> {
        fs::create_dir_all(&self.dir)
            .map_err(|e| anyhow::anyhow!("creating {}: {e}", self.dir.display()))?;
        let stored = Stored {
            version: VERSION,
            engine: engine.to_string(),
            model: model.to_string(),
            messages,
            summary: summary.to_string(),
        };
        let mut text = serde_json::to_vec_pretty(&stored)?;
        text.push(b'\n');
        // A summary lands whole or not at all: written beside its place
        // under a name of this process and thread, then renamed over it.
        let path = self.path(key);
        let tmp = self.dir.join(format!(
            ".{key}.{}.{:?}.tmp",
            std::process::id(),
            std::thread::current().id()
        ));
        let written = fs::write(&tmp, &text).and_then(|()| fs::rename(&tmp, &path));
        if written.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        written.map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.json"))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::Role;

    fn entry(text: &str) -> Entry {
        Entry {
            role: Role::User,
            name: None,
            text: text.into(),
        }
    }

    #[test]
    fn longest_stored_prefix_is_found() {
        let dir = std::env::temp_dir().join(format!("ctxclean-cache-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let cache = Cache::new(&dir);
        let entries = [entry("a"), entry("b"), entry("c")];
        let keys = Cache::keys("e", "m", "p", 100, &entries);
        let lookup = |keys: &[String]| cache.lookup(keys, 1 << 20, |s| s.len() < 100);
        assert_eq!(keys.len(), 4);
        assert_eq!(lookup(&keys), None);
        cache.store(&keys[2], "e", "m", 2, "sum of a, b").unwrap();
        assert_eq!(
            lookup(&keys),
            Some(Hit {
                covered: 2,
                summary: "sum of a, b".into()
            })
        );
        // Another prompt, model or text is another chain.
        assert_ne!(Cache::keys("e", "m", "q", 100, &entries)[2], keys[2]);
        assert_ne!(Cache::keys("e", "n", "p", 100, &entries)[1], keys[1]);
        assert_ne!(Cache::keys("e", "m", "p", 100, &[entry("x")])[1], keys[1]);
        assert_ne!(Cache::keys("e", "m", "p", 99, &entries)[1], keys[1]);
        // Boundaries between fields matter.
        let a = Cache::keys("ab", "c", "p", 100, &[]);
        let b = Cache::keys("a", "bc", "p", 100, &[]);
        assert_ne!(a[0], b[0]);
        fs::write(dir.join(format!("{}.json", keys[3])), "not json").unwrap();
        assert_eq!(lookup(&keys).unwrap().covered, 2, "junk is a miss");
        // An entry over its budget, or a file over the size cap, is a miss.
        cache
            .store(&keys[3], "e", "m", 3, &"x".repeat(500))
            .unwrap();
        assert_eq!(lookup(&keys).unwrap().covered, 2);
        cache.store(&keys[3], "e", "m", 3, "short").unwrap();
        assert_eq!(lookup(&keys).unwrap().covered, 3);
        assert_eq!(cache.lookup(&keys, 10, |_| true), None);
        fs::remove_dir_all(&dir).unwrap();
    }
}
