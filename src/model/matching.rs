//! Pairing sends with receives. Per key (sender, receiver, communicator,
//! tag, ...) the n-th send in time order goes with the n-th receive in time
//! order: MPI's non-overtaking rule, also PICL's.

/// A matched pair: the key, and time and bytes of both sides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Matched<K> {
    pub key: K,
    pub send_time: u64,
    pub send_bytes: u64,
    pub recv_time: u64,
    pub recv_bytes: u64,
}

/// Matches `sends` with `recvs` (`(key, time, bytes)` each); returns the
/// pairs and how many sends or receives found no partner.
pub fn match_in_order<K: Ord + Copy + Send>(
    mut sends: Vec<(K, u64, u64)>,
    mut recvs: Vec<(K, u64, u64)>,
) -> (Vec<Matched<K>>, u64) {
    use rayon::slice::ParallelSliceMut;
    // stable: sends (receives) of one key at one time keep their order
    sends.par_sort_by_key(|a| (a.0, a.1));
    recvs.par_sort_by_key(|a| (a.0, a.1));
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::with_capacity(sends.len().min(recvs.len()));
    let mut unmatched = 0u64;
    while i < sends.len() && j < recvs.len() {
        match sends[i].0.cmp(&recvs[j].0) {
            std::cmp::Ordering::Less => {
                unmatched += 1;
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                unmatched += 1;
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                out.push(Matched {
                    key: sends[i].0,
                    send_time: sends[i].1,
                    send_bytes: sends[i].2,
                    recv_time: recvs[j].1,
                    recv_bytes: recvs[j].2,
                });
                i += 1;
                j += 1;
            }
        }
    }
    unmatched += (sends.len() - i + recvs.len() - j) as u64;
    (out, unmatched)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_order_per_key() {
        let sends = vec![
            ((0, 1), 10, 8),
            ((0, 1), 5, 4),
            ((1, 0), 7, 2),
            ((2, 0), 1, 1),
        ];
        let recvs = vec![
            ((0, 1), 20, 8),
            ((0, 1), 9, 4),
            ((1, 0), 8, 2),
            ((3, 0), 2, 1),
        ];
        let (m, u) = match_in_order(sends, recvs);
        assert_eq!(u, 2);
        assert_eq!(m.len(), 3);
        assert_eq!((m[0].send_time, m[0].recv_time), (5, 9));
        assert_eq!((m[1].send_time, m[1].recv_time), (10, 20));
        assert_eq!(m[2].key, (1, 0));
    }
}
