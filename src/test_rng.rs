//! A small seeded generator for the unit tests (xorshift64): the same
//! numbers on every run and machine, no dependency.

/// xorshift64 (Marsaglia); the seed must not be 0.
pub(crate) struct XorShift(pub u64);

impl XorShift {
    /// The next number.
    pub(crate) fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// The next number below `m` (> 0).
    pub(crate) fn below(&mut self, m: u64) -> u64 {
        self.next() % m
    }
}
