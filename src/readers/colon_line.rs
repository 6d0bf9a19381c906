//! A line of colon-separated unsigned fields (a Paraver record:
//! `1:cpu:appl:task:thread:begin:end:state`), its separators found 16
//! bytes at a time.
//!
//! Reading field after field ([`super::decimal::leading_digits`]) branches
//! on each field's length and on the byte that ends it, differently from
//! field to field: about two mispredicted branches a record of a Paraver
//! trace (callgrind's simulation), and each field's start waits for the
//! end of the one before. Here the line's colons, its end and whether
//! every byte before it is a digit or a colon come from one classification
//! of 64 bytes (128 for a longer line) with SSE2; every field's place is
//! then a bit of one mask (0.3 mispredicted branches a record).
//!
//! The fields taken are those [`super::decimal::leading_digits`] takes,
//! field by field: 1 to 15 digits each, no sign, no blank, the line
//! ending in `\n` (a `\r` before it is not a digit, so CRLF lines are
//! declined). Anything else is declined (`None`) and left to the callers'
//! field-by-field path, which words the errors.

use super::decimal::{ONES, POW10, eight_digits};

/// What a line's fields are read from: at least this many bytes from the
/// line's start (a field's value is loaded 16 bytes at a time from its
/// first digit, which lies within the first 128 bytes).
pub(crate) const WINDOW: usize = 128 + 16;

/// At most this many fields (a colon every other byte of 128).
pub(crate) const MAX_FIELDS: usize = 64;

/// The fields of the line at `data[pos..]`, written to `out[..n]`, and
/// `(n, where the next line begins)`; `None` where the line is not 1 to
/// [`MAX_FIELDS`] fields of 1 to 15 digits separated by colons and ended
/// by `\n` within 128 bytes, or `data` has fewer than [`WINDOW`] bytes from
/// `pos` (a line near the end of its buffer).
#[inline(always)]
pub(crate) fn fields(
    data: &[u8],
    pos: usize,
    out: &mut [u64; MAX_FIELDS],
) -> Option<(usize, usize)> {
    let line = line(data, pos)?;
    fill(line.window, &line.stops, out.get_mut(..line.fields)?)?;
    Some((line.fields, line.next))
}

/// [`fields`] of a line of exactly `N` fields.
#[inline(always)]
pub(crate) fn exactly<const N: usize>(data: &[u8], pos: usize) -> Option<([u64; N], usize)> {
    let line = line(data, pos)?;
    if line.fields != N {
        return None;
    }
    let mut v = [0u64; N];
    fill(line.window, &line.stops, &mut v)?;
    Some((v, line.next))
}

/// A line at `data[pos..]` whose bytes are digits and colons up to its
/// `\n`: the [`WINDOW`] bytes from its start, its [`Masks`], how many
/// fields they end, and where the next line begins.
struct Line<'a> {
    window: &'a [u8],
    stops: Masks,
    fields: usize,
    next: usize,
}

/// The [`Line`] at `data[pos..]` ([`stops`]).
#[inline(always)]
fn line(data: &[u8], pos: usize) -> Option<Line<'_>> {
    let window = data.get(pos..pos.checked_add(WINDOW)?)?;
    let (stops, end) = stops(window)?;
    Some(Line {
        window,
        stops,
        fields: stops.iter().map(|m| m.count_ones() as usize).sum(),
        next: pos + end + 1,
    })
}

/// The positions that end the fields of a line (its colons and its
/// `\n`), a bit each: bytes 0 to 63, then 64 to 127 (0 for a line within
/// 64 bytes).
type Masks = [u64; 2];

/// The [`Masks`] of the line at the start of `w` and where its `\n` is;
/// `None` unless every byte before the `\n` is a digit or a colon and the
/// `\n` lies within 128 bytes. The line ends at the first byte that is
/// neither, which must be a `\n`.
#[inline(always)]
fn stops(w: &[u8]) -> Option<(Masks, usize)> {
    let first = classify64(w.get(..64)?.try_into().ok()?);
    if first.digit_or_colon != u64::MAX {
        let end = (!first.digit_or_colon).trailing_zeros() as usize;
        if *w.get(end)? != b'\n' {
            return None;
        }
        let before = (1u64 << end) - 1;
        return Some(([first.colon & before | 1u64 << end, 0], end));
    }
    let second = classify64(w.get(64..128)?.try_into().ok()?);
    let end = (!second.digit_or_colon).trailing_zeros() as usize;
    if end == 64 || *w.get(64 + end)? != b'\n' {
        return None;
    }
    let before = (1u64 << end) - 1;
    Some(([first.colon, second.colon & before | 1u64 << end], 64 + end))
}

/// The values of the fields that `masks` end, one to each of `out`:
/// `None` where a field is empty or longer than 15 digits, or `masks` end
/// another number of fields (every byte between two stops is a digit, as
/// [`stops`] checked).
#[inline(always)]
fn fill(w: &[u8], masks: &Masks, out: &mut [u64]) -> Option<()> {
    let mut slots = out.iter_mut();
    let mut start = 0usize;
    for (k, &mask) in masks.iter().enumerate() {
        let mut rest = mask;
        while rest != 0 {
            let stop = 64 * k + rest.trailing_zeros() as usize;
            rest &= rest - 1;
            let n = stop - start;
            if n == 0 || n > 15 {
                return None;
            }
            *slots.next()? = digits(w, start, n)?;
            start = stop + 1;
        }
    }
    slots.next().is_none().then_some(())
}

/// The value of the `n` (1 to 15) digits at `w[at..]` (16 bytes loaded).
#[inline(always)]
fn digits(w: &[u8], at: usize, n: usize) -> Option<u64> {
    let b = w.get(at..at + 16)?;
    let zero = ONES * 0x30;
    let lo = u64::from_le_bytes(b[..8].try_into().ok()?) ^ zero;
    if n <= 8 {
        return Some(eight_digits(lo << (64 - 8 * n)));
    }
    let hi = u64::from_le_bytes(b[8..].try_into().ok()?) ^ zero;
    Some(eight_digits(lo) * POW10[n - 8] + eight_digits(hi << (64 - 8 * (n - 8))))
}

/// Of 64 bytes, a bit each (bit k: byte k): colons, and digits and
/// colons (`'0'..=':'`, which are adjacent in ASCII).
struct Classes64 {
    colon: u64,
    digit_or_colon: u64,
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn classify64(b: &[u8; 64]) -> Classes64 {
    // SAFETY: SSE2 is part of every x86_64 target.
    unsafe { classify64_sse2(b) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
#[inline]
fn classify64_sse2(b: &[u8; 64]) -> Classes64 {
    use std::arch::x86_64::{
        _mm_add_epi8, _mm_cmpeq_epi8, _mm_cmplt_epi8, _mm_loadu_si128, _mm_movemask_epi8,
        _mm_set1_epi8,
    };
    let (mut colon, mut ok) = (0u64, 0u64);
    for k in 0..4 {
        // SAFETY: bytes 16k..16k + 16 of the 64 are loaded; no alignment
        // is needed.
        let v = unsafe { _mm_loadu_si128(b.as_ptr().add(16 * k).cast()) };
        let bits = |m| u64::from(_mm_movemask_epi8(m) as u16) << (16 * k);
        // '0'..=':' moved to -128..=-118, the lowest signed bytes: one
        // compare
        let moved = _mm_add_epi8(v, _mm_set1_epi8((0x80u8.wrapping_sub(b'0')) as i8));
        let in_range = _mm_cmplt_epi8(moved, _mm_set1_epi8(-128 + 11));
        colon |= bits(_mm_cmpeq_epi8(v, _mm_set1_epi8(b':' as i8)));
        ok |= bits(in_range);
    }
    Classes64 {
        colon,
        digit_or_colon: ok,
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn classify64(b: &[u8; 64]) -> Classes64 {
    let (mut colon, mut ok) = (0u64, 0u64);
    for (k, &c) in b.iter().enumerate() {
        colon |= u64::from(c == b':') << k;
        ok |= u64::from((b'0'..=b':').contains(&c)) << k;
    }
    Classes64 {
        colon,
        digit_or_colon: ok,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::readers::decimal::leading_digits;

    /// The fields as [`leading_digits`] reads them one after the other
    /// (each ended by a colon, the last by `\n`), and where the next line
    /// begins: the reference.
    fn one_by_one(data: &[u8], pos: usize) -> Option<(Vec<u64>, usize)> {
        let mut v = Vec::new();
        let mut at = pos;
        loop {
            let (x, end, term) = leading_digits(data, at)?;
            v.push(x);
            match term {
                b':' => at = end + 1,
                b'\n' => return Some((v, end + 1)),
                _ => return None,
            }
        }
    }

    /// Every line, taken or declined, against [`one_by_one`]: lines of
    /// 1 to 70 fields of 0 to 19 digits, now and then a byte that is
    /// neither a digit nor a colon or no line end, followed by anything.
    #[test]
    fn fields_are_those_read_one_by_one() {
        let mut rng = crate::test_rng::XorShift(0xC0_10);
        let mut out = [0u64; MAX_FIELDS];
        let (mut taken, mut declined, mut long) = (0, 0, 0);
        for _ in 0..40_000 {
            let mut line = Vec::new();
            let most = if rng.below(4) == 0 { 70 } else { 16 };
            let count = 1 + rng.below(most) as usize;
            for i in 0..count {
                if i > 0 {
                    line.push(b':');
                }
                let digits = match rng.below(200) {
                    0 => 0,
                    1 => 16 + rng.below(4) as usize,
                    2..=9 => 15,
                    _ => {
                        let most = if rng.below(3) == 0 { 15 } else { 4 };
                        1 + rng.below(most) as usize
                    }
                };
                for _ in 0..digits {
                    line.push(b'0' + rng.below(10) as u8);
                }
            }
            // now and then a byte that is not a digit or a colon, or a
            // line end that is not there
            match rng.below(12) {
                0 => {
                    let k = rng.below(line.len() as u64 + 1) as usize;
                    let odd = [b'-', b' ', b'/', b';', b'\r', b'a', 0xFF, 0x00, 0x80, 0xBA];
                    line.insert(k, odd[rng.below(odd.len() as u64) as usize]);
                    line.push(b'\n');
                }
                1 => {}
                _ => line.push(b'\n'),
            }
            // what follows the line: more lines, or anything
            let mut data = b"9:9:".to_vec();
            let pos = data.len();
            data.extend_from_slice(&line);
            for _ in 0..rng.below(200) {
                data.push(match rng.below(3) {
                    0 => b'\n',
                    _ => b'0' + rng.below(11) as u8,
                });
            }
            let want = one_by_one(&data, pos);
            let got = fields(&data, pos, &mut out).map(|(n, at)| (out[..n].to_vec(), at));
            match (&got, &want) {
                (Some(got), Some(want)) => {
                    taken += 1;
                    long += usize::from(got.1 - pos > 64);
                    assert_eq!(got, want, "{data:?}");
                }
                (Some(_), None) => panic!("taken, one by one not: {data:?}"),
                (None, _) => {
                    declined += 1;
                    // declined: not fields, or not within 128 bytes with
                    // 16 more to load from
                    if let Some((_, at)) = want {
                        assert!(
                            at - pos > 128 || data.len() < pos + WINDOW,
                            "declined, one by one not: {data:?}"
                        );
                    }
                }
            }
            let eight = exactly::<8>(&data, pos).map(|(a, at)| (a.to_vec(), at));
            match got {
                Some(got) if got.0.len() == 8 => assert_eq!(eight, Some(got)),
                _ => assert_eq!(eight, None),
            }
        }
        assert!(
            taken > 10_000 && declined > 10_000 && long > 1_000,
            "{taken} taken ({long} longer than 64 bytes), {declined} declined"
        );
    }

    #[test]
    fn a_line_near_its_buffers_end_is_declined() {
        let mut out = [0u64; MAX_FIELDS];
        let mut data = b"1:2:3\n".to_vec();
        assert_eq!(fields(&data, 0, &mut out), None);
        data.resize(WINDOW, b'\n');
        assert_eq!(fields(&data, 0, &mut out), Some((3, 6)));
        assert_eq!(&out[..3], &[1, 2, 3]);
        assert_eq!(fields(&data, 1, &mut out), None);
    }
}
