//! A list that grows in chunks of a fixed size instead of doubling one
//! allocation: what a reader holds for each of many locations until the
//! end of the file (Chrome's slices per thread). A doubling vector is a
//! quarter empty on average and its freed smaller copies fragment the heap
//! between all the locations' vectors; here at most one chunk per list is
//! part empty, and every chunk past the first has the same size.

/// Items in chunks of `N` (the first grows up to `N` as a vector does, so
/// a short list takes little).
#[derive(Debug, Clone)]
pub struct Chunked<T, const N: usize> {
    chunks: Vec<Vec<T>>,
    len: usize,
}

impl<T, const N: usize> Default for Chunked<T, N> {
    fn default() -> Self {
        Chunked {
            chunks: Vec::new(),
            len: 0,
        }
    }
}

impl<T, const N: usize> Chunked<T, N> {
    pub fn push(&mut self, x: T) {
        match self.chunks.last_mut() {
            Some(c) if c.len() < N => c.push(x),
            _ => {
                let mut c = if self.chunks.is_empty() {
                    Vec::new()
                } else {
                    Vec::with_capacity(N)
                };
                c.push(x);
                self.chunks.push(c);
            }
        }
        self.len += 1;
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The items in order.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.chunks.iter().flatten()
    }

    /// Bytes the items take (not counting the empty room).
    pub fn bytes(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_come_back_in_order_in_chunks_of_n() {
        for n in [0usize, 1, 7, 8, 9, 63, 64, 65, 1000] {
            let mut c: Chunked<u32, 8> = Chunked::default();
            for i in 0..n {
                c.push(i as u32);
            }
            assert_eq!(c.len(), n);
            assert_eq!(c.is_empty(), n == 0);
            assert_eq!(c.bytes(), 4 * n);
            let got: Vec<u32> = c.iter().copied().collect();
            assert_eq!(got, (0..n as u32).collect::<Vec<_>>());
            // full chunks are allocated once at their size
            assert!(c.chunks.iter().all(|ch| ch.len() <= 8));
            assert!(c.chunks.iter().skip(1).all(|ch| ch.capacity() == 8));
            let full = c.chunks.len().saturating_sub(1);
            assert!(c.chunks[..full].iter().all(|ch| ch.len() == 8));
        }
    }
}
