//! Exact conversion of decimal numbers in text (`1700000000123456.789`,
//! `0.00001`, `1.5e3`) to integer nanoseconds, without going through `f64`
//! (which loses nanoseconds for epoch-microsecond timestamps).

/// Why a decimal could not be converted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecimalError {
    /// Not a decimal number (empty, letters, NaN, ...).
    Syntax,
    /// Outside the range of `i64` nanoseconds (about ±292 years).
    Overflow,
}

impl DecimalError {
    pub fn describe(self) -> &'static str {
        match self {
            DecimalError::Syntax => "not a decimal number",
            DecimalError::Overflow => "out of range (more than ±9.2e18 ns)",
        }
    }
}

/// The value of a run of at most 19 ASCII digits (so that it cannot
/// overflow a u64), or `None` for anything else (empty, a sign, another
/// byte, more digits). The fast path of the readers' integer fields;
/// callers fall back to a full parse or reject the field.
pub fn digits_u64(b: &[u8]) -> Option<u64> {
    if b.is_empty() || b.len() > 19 {
        return None;
    }
    let mut v = 0u64;
    for &c in b {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v * 10 + d as u64;
    }
    Some(v)
}

/// A one in every byte of a word.
pub(crate) const ONES: u64 = 0x0101_0101_0101_0101;

/// The field of 1 to 15 ASCII digits at `b[from..]` and the position after
/// the `sep` that ends it, when that separator lies within the next 16
/// bytes; `None` for anything else (the last field of a line, a longer
/// field, a malformed one), which the caller's general parse judges and
/// words the error of. Two loads and no loop: the fields of Paraver's
/// records, where finding the end of each field and checking it took
/// about 70 instructions a field.
#[inline(always)]
pub fn leading_field(b: &[u8], from: usize, sep: u8) -> Option<(u64, usize)> {
    let (v, end, after) = leading_digits(b, from)?;
    (after == sep).then_some((v, end + 1))
}

/// [`leading_field`] whatever byte ends the digits: the value, where the
/// digits end and the byte there, for a caller that takes more than one
/// end (a field's separator or the line's). `None` where `b[from..]` has
/// fewer than 16 bytes, no digit, or 16 of them.
#[inline(always)]
pub fn leading_digits(b: &[u8], from: usize) -> Option<(u64, usize, u8)> {
    let zero = ONES * 0x30;
    let w = b.get(from..)?.first_chunk::<16>()?;
    let (lo, hi) = w.split_at(8);
    let d = u64::from_le_bytes(lo.try_into().ok()?) ^ zero;
    // a byte's high nibble is set where it is not a digit: its xor has a
    // high nibble, or a low one above 9 that adding 6 carries up. A carry
    // out of a byte (0xFA and up, not a digit) can only spoil the bytes
    // after the first that is not a digit, so that one is found exactly.
    let not_digit = (d | d.wrapping_add(ONES * 6)) & (ONES * 0xF0);
    if not_digit != 0 {
        let n = (not_digit.trailing_zeros() / 8) as usize;
        if n == 0 {
            return None;
        }
        return Some((eight_digits(d << (64 - 8 * n)), from + n, w[n]));
    }
    let e = u64::from_le_bytes(hi.try_into().ok()?) ^ zero;
    let not_digit = (e | e.wrapping_add(ONES * 6)) & (ONES * 0xF0);
    let n = (not_digit.trailing_zeros() / 8) as usize; // 8: no end in sight
    if n == 8 {
        return None;
    }
    let low = if n == 0 {
        0
    } else {
        eight_digits(e << (64 - 8 * n))
    };
    Some((eight_digits(d) * POW10[n] + low, from + 8 + n, w[8 + n]))
}

/// The run of ASCII digits at `b[from..]`: where it ends, and `v` with
/// each digit appended (`v × 10 + d`, wrapping: only a caller that counts
/// at most 19 digits may use the value). Eight bytes at a time while eight
/// load (the run's end from the first byte that is not a digit, as in
/// [`leading_digits`]), the last few one by one: a loop a digit branched
/// once more at each number's end, unpredictably.
#[inline(always)]
pub fn digit_run(b: &[u8], mut from: usize, mut v: u64) -> (usize, u64) {
    let zero = ONES * 0x30;
    while let Some(w) = b.get(from..).and_then(|r| r.first_chunk::<8>()) {
        let d = u64::from_le_bytes(*w) ^ zero;
        let not_digit = (d | d.wrapping_add(ONES * 6)) & (ONES * 0xF0);
        if not_digit == 0 {
            v = v.wrapping_mul(100_000_000).wrapping_add(eight_digits(d));
            from += 8;
            continue;
        }
        let n = (not_digit.trailing_zeros() / 8) as usize;
        if n > 0 {
            v = v
                .wrapping_mul(POW10[n])
                .wrapping_add(eight_digits(d << (64 - 8 * n)));
        }
        return (from + n, v);
    }
    while let Some(&c) = b.get(from) {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        v = v.wrapping_mul(10).wrapping_add(u64::from(d));
        from += 1;
    }
    (from, v)
}

/// `ahead` where it begins with `line` (the same bytes, not a copy: the
/// line and what follows it in its buffer), else `line`: what a parser
/// may hand [`leading_field`] to read past the end of `line`.
pub fn lookahead<'a>(line: &'a [u8], ahead: &'a [u8]) -> &'a [u8] {
    if std::ptr::eq(line.as_ptr(), ahead.as_ptr()) && ahead.len() >= line.len() {
        ahead
    } else {
        line
    }
}

/// The value of eight digits (bytes 0 to 9), the first in the lowest byte:
/// pairs, then fours, then the eight.
#[inline(always)]
pub(crate) fn eight_digits(d: u64) -> u64 {
    let d = (d.wrapping_mul(10).wrapping_add(d >> 8)) & 0x00FF_00FF_00FF_00FF;
    let d = (d.wrapping_mul(100).wrapping_add(d >> 16)) & 0x0000_FFFF_0000_FFFF;
    (d.wrapping_mul(10_000).wrapping_add(d >> 32)) & 0xFFFF_FFFF
}

/// Parses `text` and returns `value × 10^scale`, rounded half away from zero
/// to an integer. With `scale = 3`, microseconds become nanoseconds.
pub fn parse_scaled(text: &[u8], scale: i32) -> Result<i64, DecimalError> {
    match parse_scaled_short(text, scale) {
        Some(v) => Ok(v),
        None => parse_scaled_any(text, scale),
    }
}

/// `10^k` for `k` in `0..=18`.
pub(crate) const POW10: [u64; 19] = {
    let mut t = [1u64; 19];
    let mut k = 1;
    while k < 19 {
        t[k] = t[k - 1] * 10;
        k += 1;
    }
    t
};

/// [`parse_scaled`] of the numbers traces write (`[-+]digits[.digits]`, at
/// most 18 digits, no more fraction digits than `scale`: no exponent and
/// nothing to round) in 64-bit arithmetic; `None` for anything else,
/// which [`parse_scaled_any`] then judges. The general path's 128-bit
/// digit loop took a tenth of a one-core PICL read.
fn parse_scaled_short(text: &[u8], scale: i32) -> Option<i64> {
    let scale = usize::try_from(scale).ok().filter(|&s| s <= 18)?;
    let (neg, b) = match text.first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let (mut v, mut digits, mut i) = (0u64, 0usize, 0usize);
    take_digits(b, &mut i, &mut v, &mut digits)?;
    let mut frac = 0usize;
    if b.get(i) == Some(&b'.') {
        i += 1;
        frac = take_digits(b, &mut i, &mut v, &mut digits)?;
    }
    if i != b.len() || digits == 0 || frac > scale {
        return None;
    }
    let v = i64::try_from(v.checked_mul(POW10[scale - frac])?).ok()?;
    Some(if neg { -v } else { v })
}

/// Appends the digits of `b` from `*i` on (to the first other byte) to the
/// decimal number `v` of `digits` digits; how many it took, or `None`
/// past 18 digits in all.
#[inline(always)]
pub(crate) fn take_digits(
    b: &[u8],
    i: &mut usize,
    v: &mut u64,
    digits: &mut usize,
) -> Option<usize> {
    let from = *i;
    while let Some(d) = b.get(*i).map(|c| c.wrapping_sub(b'0')).filter(|&d| d <= 9) {
        if *digits == 18 {
            return None;
        }
        *v = *v * 10 + u64::from(d);
        *digits += 1;
        *i += 1;
    }
    Some(*i - from)
}

/// [`parse_scaled`] of any decimal: an exponent, rounding, up to the edge
/// of `i64`.
fn parse_scaled_any(text: &[u8], scale: i32) -> Result<i64, DecimalError> {
    let mut i = 0usize;
    let n = text.len();
    let neg = match text.first() {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let int_start = i;
    while i < n && text[i].is_ascii_digit() {
        i += 1;
    }
    let int_digits = &text[int_start..i];
    let mut frac_digits: &[u8] = &[];
    if i < n && text[i] == b'.' {
        i += 1;
        let fs = i;
        while i < n && text[i].is_ascii_digit() {
            i += 1;
        }
        frac_digits = &text[fs..i];
    }
    if int_digits.is_empty() && frac_digits.is_empty() {
        return Err(DecimalError::Syntax);
    }
    let mut exp: i64 = 0;
    if i < n && (text[i] == b'e' || text[i] == b'E') {
        i += 1;
        let eneg = match text.get(i) {
            Some(b'-') => {
                i += 1;
                true
            }
            Some(b'+') => {
                i += 1;
                false
            }
            _ => false,
        };
        let es = i;
        while i < n && text[i].is_ascii_digit() {
            if exp < 100_000 {
                exp = exp * 10 + (text[i] - b'0') as i64;
            }
            i += 1;
        }
        if i == es {
            return Err(DecimalError::Syntax);
        }
        if eneg {
            exp = -exp;
        }
    }
    if i != n {
        return Err(DecimalError::Syntax);
    }
    // digits D = int ++ frac, decimal point after `point` digits, shifted by k
    let digit = |idx: usize| -> u8 {
        if idx < int_digits.len() {
            int_digits[idx] - b'0'
        } else {
            frac_digits[idx - int_digits.len()] - b'0'
        }
    };
    let total = int_digits.len() + frac_digits.len();
    let point = int_digits.len() as i64 + exp + scale as i64;
    let mut value: i128 = 0;
    let keep = point.clamp(0, total as i64 + 40) as usize;
    for idx in 0..keep {
        let d = if idx < total { digit(idx) } else { 0 };
        value = value * 10 + d as i128;
        if value > i64::MAX as i128 + 1 {
            return Err(DecimalError::Overflow);
        }
    }
    if keep > total && value != 0 && point > total as i64 + 40 {
        return Err(DecimalError::Overflow);
    }
    if point >= 0 && (point as usize) < total && digit(point as usize) >= 5 {
        value += 1;
    }
    let v = if neg { -value } else { value };
    i64::try_from(v).map_err(|_| DecimalError::Overflow)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::Just;

    /// The run of digits of `b` from `from` on, byte by byte: value (wrapped)
    /// and length.
    fn leading_digits_slowly(b: &[u8], from: usize) -> (u64, usize) {
        let mut v = 0u64;
        let mut n = 0;
        for &c in &b[from..] {
            if !c.is_ascii_digit() {
                break;
            }
            v = v.wrapping_mul(10).wrapping_add(u64::from(c - b'0'));
            n += 1;
        }
        (v, n)
    }

    /// The field as `leading_field` must give it, byte by byte.
    fn field_slowly(b: &[u8], from: usize, sep: u8) -> Option<(u64, usize)> {
        let (v, n) = leading_digits_slowly(b, from);
        let end = from + n;
        ((1..=15).contains(&n) && end < from + 16 && b.len() >= from + 16 && b[end] == sep)
            .then_some((v, end + 1))
    }

    #[test]
    fn fields_end_at_their_separator() {
        let b = b"1:12:81779566:123456789012345:1234567890123456:4:0000000000000000";
        assert_eq!(leading_field(b, 0, b':'), Some((1, 2)));
        assert_eq!(leading_field(b, 2, b':'), Some((12, 5)));
        assert_eq!(leading_field(b, 5, b':'), Some((81_779_566, 14)));
        assert_eq!(leading_field(b, 14, b':'), Some((123_456_789_012_345, 30)));
        assert_eq!(leading_field(b, 30, b':'), None); // 16 digits
        assert_eq!(leading_field(b, 47, b':'), Some((4, 49)));
        assert_eq!(leading_field(b, 49, b':'), None); // no separator
        assert_eq!(leading_field(b, 50, b':'), None); // fewer than 16 bytes left
        for bad in [
            &b":1:2345678901234"[..],
            b"12;345678901234:",
            b"1-2:345678901234",
        ] {
            assert_eq!(leading_field(bad, 0, b':'), None, "{bad:?}");
        }
        assert_eq!(
            leading_field(b"12345678:1234567", 0, b':'),
            Some((12_345_678, 9))
        );
        assert_eq!(
            leading_field(b"123456789:123456", 0, b':'),
            Some((123_456_789, 10))
        );
    }

    proptest::proptest! {
        #[test]
        fn fields_of_any_bytes(b in proptest::collection::vec(
            proptest::prop_oneof![48u8..58, 48u8..58, Just(b':'), 0u8..=255], 0..40),
            from in 0usize..40) {
            let from = from.min(b.len());
            proptest::prop_assert_eq!(leading_field(&b, from, b':'), field_slowly(&b, from, b':'));
        }

        /// Runs of any length (across several eight-byte loads, and near
        /// the end, where the bytes are read one by one), after any value.
        #[test]
        fn digit_runs_of_any_bytes(
            head in proptest::collection::vec(0u8..=255, 0..4),
            run in proptest::collection::vec(48u8..58, 0..30),
            tail in proptest::collection::vec(
                proptest::prop_oneof![48u8..58, Just(b'.'), 0u8..=255], 0..12),
            from in 0usize..6, v in proptest::prop_oneof![Just(0u64), proptest::num::u64::ANY]) {
            let b = [head, run, tail].concat();
            let from = from.min(b.len());
            let (run, n) = leading_digits_slowly(&b, from);
            let want = v.wrapping_mul(POW10.get(n).copied().unwrap_or(0)).wrapping_add(run);
            let (end, got) = digit_run(&b, from, v);
            proptest::prop_assert_eq!(end, from + n);
            if n <= 18 {
                proptest::prop_assert_eq!(got, want);
            }
            if v == 0 {
                proptest::prop_assert_eq!(got, run);
            }
        }
    }

    #[test]
    fn digits_u64_takes_only_short_runs_of_digits() {
        assert_eq!(digits_u64(b"0"), Some(0));
        assert_eq!(digits_u64(b"007"), Some(7));
        assert_eq!(
            digits_u64(b"9999999999999999999"),
            Some(9_999_999_999_999_999_999)
        );
        assert_eq!(digits_u64(b"10000000000000000000"), None); // 20 digits
        for bad in [
            &b""[..],
            b"-1",
            b"+1",
            b"1.5",
            b"1e3",
            b"12a",
            b" 1",
            b"\xff",
        ] {
            assert_eq!(digits_u64(bad), None, "{:?}", bad);
        }
    }

    fn us(s: &str) -> Result<i64, DecimalError> {
        parse_scaled(s.as_bytes(), 3)
    }

    #[test]
    fn microseconds_to_nanoseconds() {
        assert_eq!(us("826"), Ok(826_000));
        assert_eq!(us("826.5"), Ok(826_500));
        assert_eq!(us("0.001"), Ok(1));
        assert_eq!(us("0.0004"), Ok(0));
        assert_eq!(us("0.0005"), Ok(1));
        assert_eq!(us("-2.5"), Ok(-2_500));
        assert_eq!(us("1.5e3"), Ok(1_500_000));
        assert_eq!(us("15E-1"), Ok(1_500));
        assert_eq!(us(".25"), Ok(250));
    }

    #[test]
    fn epoch_microseconds_stay_exact() {
        assert_eq!(us("1700000000123456.789"), Ok(1_700_000_000_123_456_789));
        assert_eq!(us("1700000000123456.788"), Ok(1_700_000_000_123_456_788));
        // f64 cannot tell these two apart; the parser must
        assert_ne!(us("1700000000123456.789"), us("1700000000123456.788"));
    }

    #[test]
    fn seconds_to_nanoseconds() {
        assert_eq!(parse_scaled(b"0.00001", 9), Ok(10_000));
        assert_eq!(parse_scaled(b"12", 9), Ok(12_000_000_000));
    }

    #[test]
    fn the_short_path_agrees_with_the_general_one() {
        let mut rng = crate::test_rng::XorShift(0x9e37_79b9_7f4a_7c15);
        let alphabet = b"0123456789000.-+e5";
        let mut short = 0;
        for _ in 0..200_000 {
            let len = 1 + rng.below(24) as usize;
            let text: Vec<u8> = (0..len)
                .map(|_| alphabet[rng.below(alphabet.len() as u64) as usize])
                .collect();
            for scale in [0, 3, 6, 9, 18, 19, -1] {
                let fast = parse_scaled_short(&text, scale);
                let any = parse_scaled_any(&text, scale);
                if let Some(v) = fast {
                    short += 1;
                    assert_eq!(
                        Ok(v),
                        any,
                        "{:?} at scale {scale}",
                        String::from_utf8_lossy(&text)
                    );
                }
                assert_eq!(parse_scaled(&text, scale), any);
            }
        }
        // the short path is taken, not always declined
        assert!(short > 10_000, "{short}");
        for (t, scale, v) in [
            (&b"999999999999999999"[..], 0, 999_999_999_999_999_999),
            (b"-0.000000001", 9, -1),
            (b"1.", 3, 1000),
            (b".5", 1, 5),
            (b"9.223372036", 9, 9_223_372_036),
            (b"922337203.685477580", 9, 922_337_203_685_477_580),
        ] {
            assert_eq!(parse_scaled_short(t, scale), Some(v));
        }
        for (t, scale) in [
            (&b"9999999999999999999"[..], 0), // 19 digits
            (b"10", 18),                      // 10^19 overflows
            (b"1.25", 1),                     // rounds
            (b"1e3", 3),
            (b"-", 3),
            (b".", 3),
            (b"", 3),
        ] {
            assert_eq!(parse_scaled_short(t, scale), None);
        }
    }

    #[test]
    fn rejects_garbage_and_overflow() {
        assert_eq!(us(""), Err(DecimalError::Syntax));
        assert_eq!(us("abc"), Err(DecimalError::Syntax));
        assert_eq!(us("NaN"), Err(DecimalError::Syntax));
        assert_eq!(us("1.2.3"), Err(DecimalError::Syntax));
        assert_eq!(us("1e"), Err(DecimalError::Syntax));
        assert_eq!(us("1e30"), Err(DecimalError::Overflow));
        assert_eq!(us("99999999999999999999"), Err(DecimalError::Overflow));
        assert_eq!(us("1e-99999999"), Ok(0));
        assert_eq!(us("1e99999999"), Err(DecimalError::Overflow));
    }
}
