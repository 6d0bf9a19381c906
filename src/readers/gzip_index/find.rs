//! Finding where a DEFLATE block starts in the middle of a stream, without
//! decoding what comes before it (as pugz and rapidgzip do): only blocks
//! with dynamic codes (what zlib writes for anything but tiny or
//! incompressible data) are looked for, at every bit.
//!
//! A bit passes when a block header can start there — not the last block,
//! dynamic codes, at most 286 length and 30 distance codes, a complete
//! code length code, code lengths that fill the two codes exactly, a code
//! for the block's end, complete codes (or one distance code) — and the
//! block's data then decodes to its end, followed by another valid header.
//! A bit that passes can still be a false start; the caller proves a start
//! by decoding the part before it up to exactly that bit.

use super::inflate::{Bits, Ring, dynamic, header, huffman_block};

/// The order the code length code's lengths come in.
const CL_ORDER: [usize; 19] = [
    16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15,
];

/// The 64 bits of `data` from bit `p` (zeros past its end; at least 57 of
/// them are the data's).
#[inline]
fn bits64(data: &[u8], p: u64) -> u64 {
    let i = (p / 8) as usize;
    let mut w = [0u8; 8];
    if let Some(s) = data.get(i..i + 8) {
        w.copy_from_slice(s);
    } else if let Some(s) = data.get(i..) {
        w[..s.len()].copy_from_slice(s);
    }
    u64::from_le_bytes(w) >> (p % 8)
}

/// Whether a dynamic block's header, not the last block's, can start at
/// bit `p`: the cheap tests (block type, code counts, a complete code
/// length code).
#[inline]
fn plausible(data: &[u8], p: u64) -> bool {
    let w = bits64(data, p);
    // last = 0, type = 2 (bits 1 and 2: 0, 1)
    if w & 7 != 4 {
        return false;
    }
    let (nlen, ndist) = ((w >> 3) & 31, (w >> 8) & 31);
    if nlen > 29 || ndist > 29 {
        return false;
    }
    let ncl = ((w >> 13) & 15) as usize + 4;
    let cl = bits64(data, p + 17);
    let mut lens = [0u8; 19];
    for (k, &i) in CL_ORDER[..ncl].iter().enumerate() {
        lens[i] = ((cl >> (3 * k)) & 7) as u8;
    }
    // complete: the lengths' Kraft sum is exactly one
    let sum: u32 = lens.iter().filter(|&&l| l > 0).map(|&l| 128 >> l).sum();
    sum == 128
}

/// Whether a valid block starts at bit `p` whose data decodes to its end,
/// followed by another valid header (or the stream's end).
fn confirmed(data: &[u8], p: u64) -> bool {
    let mut bits = Bits::at(data, p);
    // the 3 bits `plausible` read
    bits.take(3);
    let Ok(codes) = dynamic(&mut bits) else {
        return false;
    };
    let mut ring = Ring::new(false);
    if huffman_block(&mut bits, &codes, &mut ring).is_err() {
        return false;
    }
    header(&mut bits).is_ok() && !bits.overrun()
}

/// The first bit in `[from, to)` of `data` where a block starts, as far as
/// can be told without its window (see the module's doc).
pub fn find(data: &[u8], from: u64, to: u64) -> Option<u64> {
    let to = to.min(data.len() as u64 * 8);
    (from..to).find(|&p| plausible(data, p) && confirmed(data, p))
}

#[cfg(test)]
mod tests {
    use super::super::inflate::{block, tests::deflate, tests::text};
    use super::*;
    use crate::test_rng::XorShift as Rng;

    fn block_starts(z: &[u8]) -> Vec<u64> {
        let mut bits = Bits::at(z, 0);
        let mut ring = Ring::new(true);
        let mut starts = vec![0];
        while !block(&mut bits, &mut ring).unwrap() {
            starts.push(bits.position());
        }
        starts
    }

    #[test]
    fn finds_the_next_block_from_anywhere() {
        let mut rng = Rng(5);
        let data = text(&mut rng, 3_000_000);
        for level in [2, 6, 9] {
            let z = deflate(&data, level);
            let starts = block_starts(&z);
            assert!(starts.len() > 3, "{} blocks at level {level}", starts.len());
            for _ in 0..20 {
                let from = rng.below(z.len() as u64 * 8);
                let next = starts.iter().copied().find(|&s| s >= from);
                let found = find(&z, from, z.len() as u64 * 8);
                match next {
                    // the last block is not looked for
                    Some(s) if s != *starts.last().unwrap() => assert_eq!(found, Some(s)),
                    _ => assert!(found.is_none_or(|f| f > from)),
                }
            }
        }
    }

    #[test]
    fn noise_has_no_blocks() {
        let mut rng = Rng(9);
        let noise: Vec<u8> = (0..200_000).map(|_| rng.below(256) as u8).collect();
        assert_eq!(find(&noise, 0, noise.len() as u64 * 8), None);
        assert_eq!(find(&[], 0, 100), None);
        assert_eq!(find(&[4], 0, 8), None);
    }
}
