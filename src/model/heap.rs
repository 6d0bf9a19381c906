//! Bytes a model holds on the heap: what its columns, tables and names
//! allocated (capacity, not length), so that a read's peak memory can be
//! set against the model it made ([`crate::Trace::heap_bytes`]).

use std::collections::HashMap;

/// Bytes a vector allocated for its elements (not what they own).
pub(crate) fn vec<T>(v: &Vec<T>) -> usize {
    v.capacity() * std::mem::size_of::<T>()
}

/// Bytes a vector of strings allocated, the strings' own included.
pub(crate) fn strings(v: &Vec<String>) -> usize {
    vec(v) + v.iter().map(String::capacity).sum::<usize>()
}

/// Bytes a hash map's table takes: an entry and a control byte per slot
/// (what it owns beyond that is counted by its caller).
pub(crate) fn map<K, V, S>(m: &HashMap<K, V, S>) -> usize {
    let slots = if m.capacity() == 0 {
        0
    } else {
        // hashbrown keeps 1/8 of its buckets empty, in a power of two
        (m.capacity() * 8 / 7).next_power_of_two()
    };
    slots * (std::mem::size_of::<(K, V)>() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_capacity_and_what_strings_own() {
        let v: Vec<u64> = Vec::with_capacity(10);
        assert_eq!(vec(&v), 80);
        let s = vec![String::with_capacity(5), String::from("abc")];
        assert_eq!(strings(&s), 2 * 24 + 5 + s[1].capacity());
        let mut m: HashMap<u32, u64> = HashMap::new();
        assert_eq!(map(&m), 0);
        m.insert(1, 2);
        assert!(map(&m) >= 4 * 17, "{}", map(&m));
    }
}
