//! The names and sort indices that metadata (`M`) events give a trace's
//! threads and processes (`thread_name`, `thread_sort_index`,
//! `process_name`, `process_sort_index`).

use rustc_hash::FxHashMap;

/// An entry of [`Metas::names`] without a name.
const NO_NAME: u64 = u64::MAX;

/// By number (a thread's, or a process's), the name and sort index its
/// metadata events gave. The names lie in one text, each after its
/// length, and each number has the 8 bytes of where its name starts; the
/// sort indices, which few traces give, are in a map. Where each thread
/// and process had a boxed record of its own with its name apart, a trace
/// of 65,536 threads in as many processes held some 10 MB of them beside a
/// model of 16 MB, while its threads were placed.
#[derive(Debug, Default, Clone)]
pub(super) struct Metas {
    /// By number, where its name starts in `text` ([`NO_NAME`]: none).
    names: Vec<u64>,
    /// The names, each after its length (LEB128).
    text: Vec<u8>,
    /// Bytes of `text` that no name uses any more (renamed).
    dead: usize,
    /// The numbers whose sort index an event set: to a value, or to none
    /// (an event without one).
    sorts: FxHashMap<u32, Option<i64>>,
}

/// Renamed names' bytes that a [`Metas`] holds before it writes its text
/// again without them (at least; and at least half of the text).
const COMPACT_DEAD: usize = 1 << 20;

impl Metas {
    /// The name of number `i`, if an event gave one.
    pub fn name(&self, i: u32) -> Option<&str> {
        let &at = self.names.get(i as usize)?;
        if at == NO_NAME {
            return None;
        }
        let (len, start) = read_len(&self.text, usize::try_from(at).ok()?)?;
        let bytes = self.text.get(start..start.checked_add(len)?)?;
        std::str::from_utf8(bytes).ok()
    }

    /// The sort index of number `i`, if an event gave one.
    pub fn sort(&self, i: u32) -> Option<i64> {
        self.sorts.get(&i).copied().flatten()
    }

    /// Names number `i` `name` (in place of any name before).
    pub fn set_name(&mut self, i: u32, name: &str) {
        let i = i as usize;
        if self.names.len() <= i {
            self.names.resize(i + 1, NO_NAME);
        }
        if self.names[i] != NO_NAME {
            self.dead += self
                .name(i as u32)
                .map_or(0, |n| n.len() + len_bytes(n.len()));
        }
        self.names[i] = self.text.len() as u64;
        write_len(&mut self.text, name.len());
        self.text.extend_from_slice(name.as_bytes());
        if self.dead >= COMPACT_DEAD && self.dead >= self.text.len() / 2 {
            self.compact();
        }
    }

    /// Sets the sort index of number `i` (to none: an event without one).
    pub fn set_sort(&mut self, i: u32, sort: Option<i64>) {
        self.sorts.insert(i, sort);
    }

    /// Takes what `later`'s events set (the metadata of a later range of
    /// the trace, read apart), its number `j` becoming `to[j]`: a name it
    /// gave replaces this one's, and so does a sort index it set.
    pub fn take_later(&mut self, later: &Metas, to: &[u32]) {
        for (j, &g) in to.iter().enumerate() {
            if let Some(name) = later.name(j as u32) {
                self.set_name(g, name);
            }
            if let Some(&sort) = later.sorts.get(&(j as u32)) {
                self.set_sort(g, sort);
            }
        }
    }

    /// Writes the text again without the names no number uses.
    fn compact(&mut self) {
        let mut text = Vec::with_capacity(self.text.len() - self.dead);
        for i in 0..self.names.len() {
            let Some(name) = self.name(i as u32) else {
                continue;
            };
            let at = text.len() as u64;
            write_len(&mut text, name.len());
            text.extend_from_slice(name.as_bytes());
            self.names[i] = at;
        }
        self.text = text;
        self.dead = 0;
    }

    /// Bytes it holds on the heap.
    #[cfg(test)]
    fn heap_bytes(&self) -> usize {
        self.names.capacity() * 8 + self.text.capacity()
    }
}

/// Appends `len` in LEB128.
fn write_len(text: &mut Vec<u8>, mut len: usize) {
    while len >= 0x80 {
        text.push((len as u8) | 0x80);
        len >>= 7;
    }
    text.push(len as u8);
}

/// The bytes [`write_len`] takes for `len`.
fn len_bytes(len: usize) -> usize {
    (usize::BITS - len.max(1).leading_zeros()).div_ceil(7) as usize
}

/// The length written at `at` and where what it measures starts.
fn read_len(text: &[u8], mut at: usize) -> Option<(usize, usize)> {
    let mut len = 0usize;
    let mut shift = 0;
    loop {
        let byte = *text.get(at)?;
        at += 1;
        len |= usize::from(byte & 0x7f).checked_shl(shift)?;
        if byte & 0x80 == 0 {
            return Some((len, at));
        }
        shift += 7;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_sorts_by_number() {
        let mut m = Metas::default();
        assert_eq!(m.name(0), None);
        assert_eq!(m.sort(0), None);
        m.set_name(3, "rank 3");
        m.set_name(0, "");
        let long = "x".repeat(300);
        m.set_name(1, &long);
        assert_eq!(m.name(3), Some("rank 3"));
        assert_eq!(m.name(0), Some(""));
        assert_eq!(m.name(1), Some(long.as_str()));
        assert_eq!(m.name(2), None);
        assert_eq!(m.name(4), None);
        m.set_sort(2, Some(-7));
        m.set_sort(3, None);
        assert_eq!(m.sort(2), Some(-7));
        assert_eq!(m.sort(3), None);
        // renamed: the new name
        m.set_name(3, "ünïcode");
        assert_eq!(m.name(3), Some("ünïcode"));
        assert_eq!(m.dead, 7);
    }

    #[test]
    fn lengths_round_trip() {
        for len in [0, 1, 127, 128, 300, 16_383, 16_384, 1 << 30, usize::MAX] {
            let mut t = vec![9];
            write_len(&mut t, len);
            assert_eq!(t.len() - 1, len_bytes(len), "{len}");
            assert_eq!(read_len(&t, 1), Some((len, t.len())), "{len}");
        }
        // cut short, or longer than a length can be
        assert_eq!(read_len(&[0x80], 0), None);
        assert_eq!(read_len(&[0xff; 12], 0), None);
    }

    /// A name renamed over and over holds no more than about twice what
    /// its names take now (and a MiB).
    #[test]
    fn renames_do_not_pile_up() {
        let mut m = Metas::default();
        for i in 0..100 {
            m.set_name(i, &format!("thread {i}"));
        }
        let name = "n".repeat(1000);
        for k in 0..10_000 {
            m.set_name(k % 7, &name[..500 + k as usize % 500]);
        }
        assert!(m.text.len() < 3 * COMPACT_DEAD, "{}", m.text.len());
        for i in 7..100 {
            assert_eq!(m.name(i), Some(format!("thread {i}").as_str()));
        }
        assert_eq!(m.name(9_999 % 7), Some(&name[..500 + 9_999 % 500]));
        assert!(m.heap_bytes() < 4 * COMPACT_DEAD);
    }

    /// A later range's names and sort indices replace the earlier's, by
    /// the numbers they map to; what it did not set stays.
    #[test]
    fn later_ranges_replace_what_they_set() {
        let mut m = Metas::default();
        m.set_name(0, "a");
        m.set_name(1, "b");
        m.set_sort(0, Some(1));
        m.set_sort(1, Some(2));
        let mut later = Metas::default();
        later.set_name(1, "c");
        later.set_sort(0, None);
        later.set_sort(2, Some(5));
        // later's 0, 1, 2 are this one's 1, 0, 7
        m.take_later(&later, &[1, 0, 7]);
        assert_eq!(m.name(0), Some("c"));
        assert_eq!(m.name(1), Some("b"));
        assert_eq!(m.sort(0), Some(1));
        assert_eq!(m.sort(1), None);
        assert!(m.sorts.contains_key(&1));
        assert_eq!(m.sort(7), Some(5));
        assert_eq!(m.name(7), None);
    }
}
