//! The state table: names, colours and the busy / overhead / idle class.

use rustc_hash::FxHashMap as HashMap;

use serde::Serialize;

use super::StateId;
use crate::error::Error;

/// How a state counts for utilization.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StateClass {
    /// Useful computation.
    Busy,
    /// Work that a serial program would not do: communication,
    /// synchronization, runtime overhead.
    Overhead,
    /// Nothing to do: waiting, not created, tracing disabled.
    Idle,
}

impl StateClass {
    pub fn name(self) -> &'static str {
        match self {
            StateClass::Busy => "busy",
            StateClass::Overhead => "overhead",
            StateClass::Idle => "idle",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_lowercase().as_str() {
            "busy" => Some(StateClass::Busy),
            "overhead" => Some(StateClass::Overhead),
            "idle" => Some(StateClass::Idle),
            _ => None,
        }
    }
}

/// One state.
#[derive(Debug, Clone, Serialize)]
pub struct State {
    pub name: String,
    /// sRGB colour.
    pub color: [u8; 3],
    pub class: StateClass,
    /// The identifier the source format uses (Paraver state value), or the
    /// index of first appearance for formats that name states.
    pub external_id: i64,
    /// What the source says about the state besides its name, as
    /// `key:value` (lower case): Chrome categories (`cat:gpu`), OTF2
    /// paradigms and roles (`paradigm:mpi`, `role:barrier`). Selectors
    /// with these keys pick states by them (`--busy 'cat:gpu'`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

/// The keys a state selector may use besides names and ids.
pub const TAG_KEYS: [&str; 3] = ["cat", "paradigm", "role"];

/// At most this many tags per state (hostile inputs cannot grow them
/// without bound: a Chrome slice name used with 10^6 categories).
pub const MAX_TAGS: usize = 64;

/// All states of a trace, with lookup by name and by external id.
#[derive(Debug, Clone, Default, Serialize)]
pub struct StateTable {
    states: Vec<State>,
    #[serde(skip)]
    by_name: HashMap<String, StateId>,
    #[serde(skip)]
    by_external: HashMap<i64, StateId>,
}

/// A categorical palette for states that have no colour of their own.
const PALETTE: [[u8; 3]; 12] = [
    [31, 119, 180],
    [255, 127, 14],
    [44, 160, 44],
    [214, 39, 40],
    [148, 103, 189],
    [140, 86, 75],
    [227, 119, 194],
    [127, 127, 127],
    [188, 189, 34],
    [23, 190, 207],
    [174, 199, 232],
    [255, 187, 120],
];

impl StateTable {
    /// Bytes the states, their names and tags and the lookups take.
    pub fn heap_bytes(&self) -> usize {
        use super::heap::{map, strings, vec};
        vec(&self.states)
            + self
                .states
                .iter()
                .map(|s| s.name.capacity() + strings(&s.tags))
                .sum::<usize>()
            + map(&self.by_name)
            + self.by_name.keys().map(String::capacity).sum::<usize>()
            + map(&self.by_external)
    }
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.states.len()
    }

    pub fn is_empty(&self) -> bool {
        self.states.is_empty()
    }

    pub fn get(&self, id: StateId) -> Option<&State> {
        self.states.get(id as usize)
    }

    pub fn iter(&self) -> impl Iterator<Item = (StateId, &State)> {
        self.states
            .iter()
            .enumerate()
            .map(|(i, s)| (i as StateId, s))
    }

    pub fn by_name(&self, name: &str) -> Option<StateId> {
        self.by_name.get(name).copied()
    }

    pub fn by_external(&self, id: i64) -> Option<StateId> {
        self.by_external.get(&id).copied()
    }

    /// Adds a state; a state of the same name is returned instead of a
    /// duplicate. `color` defaults to the categorical palette.
    pub fn add(
        &mut self,
        name: &str,
        class: StateClass,
        color: Option<[u8; 3]>,
        external_id: i64,
    ) -> StateId {
        if let Some(id) = self.by_name.get(name) {
            return *id;
        }
        let id = self.states.len() as StateId;
        let color = color.unwrap_or(PALETTE[id as usize % PALETTE.len()]);
        self.states.push(State {
            name: name.to_string(),
            color,
            class,
            external_id,
            tags: Vec::new(),
        });
        self.by_name.insert(name.to_string(), id);
        self.by_external.entry(external_id).or_insert(id);
        id
    }

    /// Interns a state by name, with the given class on first sight.
    pub fn intern(&mut self, name: &str, class: StateClass) -> StateId {
        if let Some(id) = self.by_name.get(name) {
            return *id;
        }
        let ext = self.states.len() as i64;
        self.add(name, class, None, ext)
    }

    /// Records that state `id` carries `key:value` (a Chrome category, an
    /// OTF2 paradigm or role); kept once, lower case, at most
    /// [`MAX_TAGS`] per state. A Chrome category list (`"a,b"`) gives one
    /// tag per category.
    pub fn tag(&mut self, id: StateId, key: &str, value: &str) {
        let Some(s) = self.states.get_mut(id as usize) else {
            return;
        };
        for v in value.split(',').map(str::trim).filter(|v| !v.is_empty()) {
            // the common case (already tagged) allocates nothing
            // (a value with letters beyond ASCII is compared lower case, as
            // it is kept: tags merged from parts of a trace stay one each)
            let lower = (!v.is_ascii()).then(|| v.to_lowercase());
            let known = s.tags.iter().any(|t| {
                t.len() > key.len()
                    && t.starts_with(key)
                    && t.as_bytes()[key.len()] == b':'
                    && match &lower {
                        None => t[key.len() + 1..].eq_ignore_ascii_case(v),
                        Some(l) => t[key.len() + 1..] == *l,
                    }
            });
            if known {
                continue;
            }
            if s.tags.len() >= MAX_TAGS {
                return;
            }
            s.tags.push(format!("{key}:{}", v.to_lowercase()));
        }
    }

    /// Replaces the tags of state `id` as they were saved (the cache).
    pub(crate) fn set_tags(&mut self, id: StateId, tags: Vec<String>) {
        if let Some(s) = self.states.get_mut(id as usize) {
            s.tags = tags;
        }
    }

    /// The class of every state, indexed by state id.
    pub fn classes(&self) -> Vec<StateClass> {
        self.states.iter().map(|s| s.class).collect()
    }

    /// Mask of the states in `class`, indexed by state id.
    pub fn mask(&self, class: StateClass) -> Vec<bool> {
        self.states.iter().map(|s| s.class == class).collect()
    }

    /// Applies a user override of the classes. See [`ClassOverride`].
    pub fn reclassify(&mut self, over: &ClassOverride) -> Result<(), Error> {
        if let Some(busy) = &over.busy {
            let hits = self.matching(busy)?;
            for (i, s) in self.states.iter_mut().enumerate() {
                if hits[i] {
                    s.class = StateClass::Busy;
                } else if s.class == StateClass::Busy {
                    s.class = StateClass::Overhead;
                }
            }
        }
        for (list, class) in [
            (&over.overhead, StateClass::Overhead),
            (&over.idle, StateClass::Idle),
        ] {
            if let Some(list) = list {
                let hits = self.matching(list)?;
                for (i, s) in self.states.iter_mut().enumerate() {
                    if hits[i] {
                        s.class = class;
                    }
                }
            }
        }
        Ok(())
    }

    /// The mask (by state id) of a state set given as class names (`busy`,
    /// `overhead`, `idle`) and/or state patterns (names with `*`, or ids).
    pub fn select(&self, spec: &[String]) -> Result<Vec<bool>, Error> {
        let mut mask = vec![false; self.states.len()];
        let mut patterns = Vec::new();
        for s in spec {
            match StateClass::parse(s.trim()) {
                Some(c) => {
                    for (m, st) in mask.iter_mut().zip(&self.states) {
                        *m |= st.class == c;
                    }
                }
                None => patterns.push(s.clone()),
            }
        }
        if !patterns.is_empty() {
            for (m, h) in mask.iter_mut().zip(self.matching(&patterns)?) {
                *m |= h;
            }
        }
        Ok(mask)
    }

    /// Which states match any of the patterns; every pattern must match a state.
    fn matching(&self, patterns: &[String]) -> Result<Vec<bool>, Error> {
        let mut hits = vec![false; self.states.len()];
        for p in patterns {
            let mut any = false;
            for (i, s) in self.states.iter().enumerate() {
                if pattern_matches(p, s) {
                    hits[i] = true;
                    any = true;
                }
            }
            if !any {
                if let Some((key, _)) = tag_pattern(p) {
                    let mut seen: Vec<&str> = self
                        .states
                        .iter()
                        .flat_map(|s| s.tags.iter())
                        .filter(|t| {
                            t.starts_with(key) && t.as_bytes().get(key.len()) == Some(&b':')
                        })
                        .map(|t| &t[key.len() + 1..])
                        .collect();
                    seen.sort_unstable();
                    seen.dedup();
                    let shown = if seen.is_empty() {
                        format!("this trace records no {key} for its states")
                    } else {
                        format!(
                            "{key}s: {}{}",
                            seen.iter().take(20).copied().collect::<Vec<_>>().join(", "),
                            if seen.len() > 20 { ", ..." } else { "" }
                        )
                    };
                    return Err(Error::Invalid(format!(
                        "selector '{p}' matches no state of this trace ({shown})"
                    )));
                }
                let names: Vec<&str> = self
                    .states
                    .iter()
                    .take(20)
                    .map(|s| s.name.as_str())
                    .collect();
                return Err(Error::Invalid(format!(
                    "state pattern '{p}' matches no state of this trace (states: {}{})",
                    names.join(", "),
                    if self.states.len() > 20 { ", ..." } else { "" }
                )));
            }
        }
        Ok(hits)
    }
}

/// A user's override of which states are busy, overhead or idle.
///
/// Each list holds patterns: a state name (case-insensitive, `*` matches any
/// run of characters), the state's numeric id in the source format, or a
/// selector `cat:NAME` (Chrome category), `paradigm:NAME` or `role:NAME`
/// (OTF2 region paradigm and role), `*` allowed in NAME.
/// When `busy` is given it is exact: the matching states become busy and the
/// states that were busy and do not match become overhead. `overhead` and
/// `idle` are applied after it.
#[derive(Debug, Clone, Default)]
pub struct ClassOverride {
    pub busy: Option<Vec<String>>,
    pub overhead: Option<Vec<String>>,
    pub idle: Option<Vec<String>>,
}

impl ClassOverride {
    pub fn is_empty(&self) -> bool {
        self.busy.is_none() && self.overhead.is_none() && self.idle.is_none()
    }
}

/// `cat:gpu` → `("cat", "gpu")` for the keys of [`TAG_KEYS`].
fn tag_pattern(pattern: &str) -> Option<(&'static str, &str)> {
    let (k, v) = pattern.trim().split_once(':')?;
    let k = k.trim().to_ascii_lowercase();
    TAG_KEYS
        .iter()
        .find(|&&key| key == k)
        .map(|&key| (key, v.trim()))
}

fn pattern_matches(pattern: &str, s: &State) -> bool {
    if let Some((key, value)) = tag_pattern(pattern) {
        let value = value.to_lowercase();
        return s.tags.iter().any(|t| {
            t.strip_prefix(key)
                .and_then(|r| r.strip_prefix(':'))
                .is_some_and(|v| glob(&value, v))
        });
    }
    if let Ok(n) = pattern.trim().parse::<i64>() {
        return n == s.external_id;
    }
    glob(&pattern.to_lowercase(), &s.name.to_lowercase())
}

/// Glob match with `*` only.
fn glob(p: &str, s: &str) -> bool {
    let p = p.as_bytes();
    let s = s.as_bytes();
    let (mut pi, mut si) = (0usize, 0usize);
    let (mut star, mut mark) = (None::<usize>, 0usize);
    while si < s.len() {
        if pi < p.len() && p[pi] != b'*' && p[pi] == s[si] {
            pi += 1;
            si += 1;
        } else if pi < p.len() && p[pi] == b'*' {
            star = Some(pi);
            mark = si;
            pi += 1;
        } else if let Some(st) = star {
            pi = st + 1;
            mark += 1;
            si = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == b'*' {
        pi += 1;
    }
    pi == p.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_matches() {
        assert!(glob("mpi_*", "mpi_send"));
        assert!(glob("*wait*", "waiting a message"));
        assert!(!glob("mpi_*", "compute"));
        assert!(glob("running", "running"));
    }

    #[test]
    fn busy_override_is_exact() {
        let mut t = StateTable::new();
        t.add("Running", StateClass::Busy, None, 1);
        t.add("MPI_Send", StateClass::Overhead, None, 4);
        t.add("Idle", StateClass::Idle, None, 0);
        t.reclassify(&ClassOverride {
            busy: Some(vec!["mpi_*".into()]),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(t.get(0).unwrap().class, StateClass::Overhead);
        assert_eq!(t.get(1).unwrap().class, StateClass::Busy);
        assert_eq!(t.get(2).unwrap().class, StateClass::Idle);
        let err = t
            .reclassify(&ClassOverride {
                idle: Some(vec!["nothing".into()]),
                ..Default::default()
            })
            .unwrap_err();
        assert!(err.to_string().contains("matches no state"));
        // numeric ids select by external id
        t.reclassify(&ClassOverride {
            idle: Some(vec!["4".into()]),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(t.get(1).unwrap().class, StateClass::Idle);
    }
}
