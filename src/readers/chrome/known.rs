//! What one pipeline's intake had met by the start of a batch, looked up
//! by the batch's parse on all threads.
//!
//! One pipeline ([`super::for_each_event`]) takes its events on one
//! thread, and a trace of many threads is read by one pipeline. Two hash
//! lookups of each event, its thread by `(pid, tid)` and its slice's state
//! by name and category, took half of that thread's own time, beside
//! giving held slices to their threads (the 708 MB trace of 65,536
//! threads on two threads, `perf`: 0.23 s of 0.45 s).
//! The parse, which runs on all threads, now looks them up in a copy of
//! what the intake had numbered when the batch began, and the intake
//! numbers only what is new in the batch. The copy is brought up to date
//! between batches from the intake's log of what it numbered, in the
//! intake's order, so every number is the one the intake gives.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::{Ev, NO_THREAD, numeric};
use crate::model::StateId;

/// The threads with numeric ids and the slices' states the intake had
/// numbered when a batch began.
#[derive(Debug, Clone, Default)]
pub(super) struct Known {
    /// By pid (below 2^20, 16 MB at most): the first thread of that
    /// process. At 65,536 threads a map missed the caches at every event
    /// (as the intake's did), and where each process has one thread (MPI
    /// ranks) no map is needed.
    by_pid: ByPid<{ 1 << 20 }>,
    /// The threads not in `by_pid`.
    threads: FxHashMap<(i64, i64), u32>,
    /// The threads in both.
    count: usize,
    /// As the intake's `states_seen`: the name then the category, told
    /// apart by the name's length kept with the state.
    states: FxHashMap<String, (usize, StateId)>,
}

/// A table of threads with numeric ids by pid: one thread of each
/// process, `(tid, thread)` at the pid, thread [`NO_THREAD`] for none.
/// It takes pids below four times the threads numbered (at least 1,024, at
/// most `MOST`), and grows by doubling.
#[derive(Debug, Clone, Default)]
pub(super) struct ByPid<const MOST: usize> {
    slots: Vec<(i64, u32)>,
}

impl<const MOST: usize> ByPid<MOST> {
    /// The thread of the numeric ids `(p, t)`, when it is the one kept.
    #[inline]
    pub(super) fn get(&self, (p, t): (i64, i64)) -> Option<u32> {
        match usize::try_from(p).ok().and_then(|p| self.slots.get(p)) {
            Some(&(ct, ci)) if ct == t && ci != NO_THREAD => Some(ci),
            _ => None,
        }
    }

    /// The place of process `p`'s thread, the table grown to take it,
    /// where it takes `p` with `threads` numbered.
    pub(super) fn slot(&mut self, p: i64, threads: usize) -> Option<&mut (i64, u32)> {
        let at = usize::try_from(p).ok()?;
        if at >= self.slots.len() {
            let most = (4 * threads).clamp(1024, MOST);
            if at >= most {
                return None;
            }
            let room = (at + 1).max(2 * self.slots.len()).min(most);
            self.slots.resize(room, (0, NO_THREAD));
        }
        self.slots.get_mut(at)
    }

    /// Its length, in pids.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.slots.len()
    }

    /// How many pids have a thread.
    #[cfg(test)]
    pub(super) fn filled(&self) -> usize {
        self.slots.iter().filter(|s| s.1 != NO_THREAD).count()
    }
}

impl Known {
    /// The thread of the numeric ids `(pid, tid)`, when known.
    fn thread(&self, ids: (i64, i64)) -> Option<u32> {
        self.by_pid
            .get(ids)
            .or_else(|| self.threads.get(&ids).copied())
    }

    /// Notes that the numeric ids `(p, t)` are thread `i`.
    fn add_thread(&mut self, (p, t): (i64, i64), i: u32) {
        self.count += 1;
        match self.by_pid.slot(p, self.count) {
            Some(slot) if slot.1 == NO_THREAD => *slot = (t, i),
            _ => {
                self.threads.insert((p, t), i);
            }
        }
    }

    /// The state of a slice named `name` in category `cat`, when known;
    /// `buf` is room for the key.
    fn state(&self, name: &str, cat: &str, buf: &mut String) -> Option<StateId> {
        buf.clear();
        buf.push_str(name);
        buf.push_str(cat);
        match self.states.get(buf.as_str()) {
            Some(&(len, st)) if len == name.len() => Some(st),
            _ => None,
        }
    }

    /// Looks up `ev`'s thread and, for a slice, its state, into
    /// [`Ev::thread`] and [`Ev::state`] (left unset when not known).
    pub(super) fn resolve(&self, ev: &mut Ev, buf: &mut String) {
        if let Some(ids) = numeric(ev.ids()) {
            ev.thread = self.thread(ids).unwrap_or(NO_THREAD);
        }
        if matches!(ev.ph, b'B' | b'X') {
            ev.state = self.state(&ev.name, &ev.cat, buf);
        }
    }
}

/// The intake's log of what it numbered since the copy ([`Known`]) was
/// brought up to date, and the copy.
#[derive(Debug, Default)]
pub(super) struct Fresh {
    threads: Vec<((i64, i64), u32)>,
    states: Vec<(String, usize, StateId)>,
    known: Arc<Known>,
}

impl Fresh {
    /// Notes that the intake numbered the thread of numeric ids `ids` `i`.
    pub(super) fn thread(&mut self, ids: (i64, i64), i: u32) {
        self.threads.push((ids, i));
    }

    /// Notes that the intake gave `key` (a name of `len` bytes then a
    /// category) the state `st`.
    pub(super) fn state(&mut self, key: &str, len: usize, st: StateId) {
        self.states.push((key.to_string(), len, st));
    }

    /// The copy brought up to date, for the next batch's parse: updated
    /// in place when no parse holds it any more (as between batches).
    pub(super) fn known(&mut self) -> Arc<Known> {
        if !self.threads.is_empty() || !self.states.is_empty() {
            let k = Arc::make_mut(&mut self.known);
            for (ids, i) in self.threads.drain(..) {
                k.add_thread(ids, i);
            }
            for (key, len, st) in self.states.drain(..) {
                k.states.insert(key, (len, st));
            }
        }
        Arc::clone(&self.known)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_copy_numbers_as_the_log_did() {
        let mut f = Fresh::default();
        f.thread((3, 7), 0);
        f.thread((3, 8), 1);
        f.thread((-1, 2), 2);
        f.thread((1 << 40, 5), 3);
        f.thread((5000, 1), 6);
        f.state("ab", 2, 0);
        f.state("abc", 2, 1);
        // "a" in category "b": the same key as "ab" in none, taken over
        f.state("ab", 1, 5);
        let held = f.known();
        assert_eq!(held.thread((3, 7)), Some(0));
        assert_eq!(held.thread((3, 8)), Some(1));
        assert_eq!(held.thread((-1, 2)), Some(2));
        assert_eq!(held.thread((1 << 40, 5)), Some(3));
        // a pid far above the threads' count is kept in the map
        assert_eq!(held.thread((5000, 1)), Some(6));
        assert!(held.by_pid.len() <= 1024);
        assert_eq!(held.thread((3, 9)), None);
        let mut buf = String::new();
        assert_eq!(held.state("a", "b", &mut buf), Some(5));
        assert_eq!(held.state("ab", "", &mut buf), None);
        assert_eq!(held.state("ab", "c", &mut buf), Some(1));
        assert_eq!(held.state("a", "bc", &mut buf), None);
        // a parse still holds the copy: the next is a new one
        f.thread((4, 4), 4);
        let next = f.known();
        assert_eq!(held.thread((4, 4)), None);
        assert_eq!(next.thread((4, 4)), Some(4));
        drop(held);
        f.state("x", 1, 2);
        let ptr = Arc::as_ptr(&next);
        drop(next);
        let last = f.known();
        assert_eq!(Arc::as_ptr(&last), ptr, "updated in place");
        assert_eq!(last.state("x", "", &mut buf), Some(2));
    }

    /// An event's ids are taken as the intake takes them (the `pid`
    /// without a `tid`, 0 without either; strings not looked up), and a
    /// state only for a slice (`B`, `X`).
    #[test]
    fn an_event_is_looked_up_as_the_intake_takes_its_ids() {
        let mut f = Fresh::default();
        f.thread((5, 5), 0);
        f.thread((0, 0), 1);
        f.thread((2, 9), 2);
        f.thread((5, 6), 3);
        f.state("runcompute", 3, 7);
        let k = f.known();
        let mut buf = String::new();
        let x = r#""ph":"X","ts":1,"dur":2"#;
        let cases = [
            (
                format!(r#"{{{x},"pid":5,"name":"run","cat":"compute"}}"#),
                0,
                Some(7),
            ),
            (format!(r#"{{{x},"pid":5,"tid":6,"name":"run"}}"#), 3, None),
            (
                r#"{"ph":"B","ts":1,"name":"run","cat":"compute"}"#.to_string(),
                1,
                Some(7),
            ),
            (
                format!(r#"{{{x},"pid":2,"tid":9,"name":"runc","cat":"ompute"}}"#),
                2,
                None,
            ),
            (
                r#"{"ph":"i","pid":2,"tid":9,"ts":1,"name":"run","cat":"compute"}"#.to_string(),
                2,
                None,
            ),
            (
                format!(r#"{{{x},"pid":2,"tid":"9","name":"run","cat":"compute"}}"#),
                NO_THREAD,
                Some(7),
            ),
            (
                format!(r#"{{{x},"pid":3,"tid":9,"name":"run","cat":"compute"}}"#),
                NO_THREAD,
                Some(7),
            ),
        ];
        for (text, thread, state) in cases {
            let mut ev = super::super::parse_event(text.as_bytes(), 0).unwrap();
            k.resolve(&mut ev, &mut buf);
            assert_eq!((ev.thread, ev.state), (thread, state), "{text}");
        }
    }
}
