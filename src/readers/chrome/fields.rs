//! The members of one event object that the reader uses: [`fields_fast`]
//! for the objects traces write (one pass, the numbers the reader needs
//! converted on the way), [`fields_serde`] for any other valid JSON and
//! for the exact error message. Where the fast path gives fields,
//! [`super::parse_event`] makes of them the event the serde path's give
//! (test: `fast_and_serde_paths_make_the_same_events`).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::super::decimal::{POW10, digit_run};
use super::super::json_split::{Scan, scan_value};

/// A string borrowed from the input unless it has escapes (serde borrows a
/// `Cow` only when it is not wrapped in an `Option`).
#[derive(Deserialize)]
#[serde(transparent)]
pub(super) struct Text<'a>(#[serde(borrow)] pub Cow<'a, str>);

impl std::ops::Deref for Text<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

#[derive(Deserialize)]
struct RawEv<'a> {
    #[serde(borrow, default)]
    ph: Option<Text<'a>>,
    #[serde(borrow, default)]
    name: Option<Text<'a>>,
    #[serde(borrow, default)]
    cat: Option<Text<'a>>,
    #[serde(borrow, default)]
    pid: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tid: Option<&'a RawValue>,
    #[serde(borrow, default)]
    ts: Option<&'a RawValue>,
    #[serde(borrow, default)]
    dur: Option<&'a RawValue>,
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    id2: Option<&'a RawValue>,
    #[serde(borrow, default)]
    s: Option<Text<'a>>,
    #[serde(borrow, default)]
    args: Option<&'a RawValue>,
}

/// The members of `args` the reader uses, parsed without allocating.
#[derive(Deserialize, Default)]
pub(super) struct LiteArgs<'a> {
    #[serde(default)]
    pub value: Option<serde_json::Number>,
    #[serde(default)]
    pub bytes: Option<u64>,
    #[serde(default)]
    pub tag: Option<i64>,
    #[serde(borrow, default)]
    pub name: Option<Text<'a>>,
    #[serde(default)]
    pub sort_index: Option<i64>,
}

/// The members of an event that the reader uses, as text, and what the
/// fast path already made of some of them (`None` there: not made, the
/// text is to be converted).
#[derive(Default)]
pub(super) struct Fields<'a> {
    pub ph: Option<Cow<'a, str>>,
    pub name: Option<Cow<'a, str>>,
    pub cat: Option<Cow<'a, str>>,
    pub s: Option<Cow<'a, str>>,
    pub pid: Option<&'a str>,
    pub tid: Option<&'a str>,
    pub ts: Option<&'a str>,
    pub dur: Option<&'a str>,
    pub id: Option<&'a str>,
    pub id2: Option<&'a str>,
    pub args: Option<&'a str>,
    /// `ts` and `dur` in nanoseconds, as `micros` makes them.
    pub ts_ns: Option<i64>,
    pub dur_ns: Option<i64>,
    /// `pid` and `tid` when integers, as `ident` makes them.
    pub pid_num: Option<i64>,
    pub tid_num: Option<i64>,
    /// `args` as serde makes [`LiteArgs`] of it.
    pub lite: Option<LiteArgs<'a>>,
}

/// Parses an event object with serde_json (any valid JSON, full checking).
pub(super) fn fields_serde(bytes: &[u8]) -> std::result::Result<Fields<'_>, String> {
    let raw: RawEv =
        serde_json::from_slice(bytes).map_err(|e| format!("malformed event object: {e}"))?;
    Ok(Fields {
        ph: raw.ph.map(|t| t.0),
        name: raw.name.map(|t| t.0),
        cat: raw.cat.map(|t| t.0),
        s: raw.s.map(|t| t.0),
        pid: raw.pid.map(RawValue::get),
        tid: raw.tid.map(RawValue::get),
        ts: raw.ts.map(RawValue::get),
        dur: raw.dur.map(RawValue::get),
        id: raw.id.map(RawValue::get),
        id2: raw.id2.map(RawValue::get),
        args: raw.args.map(RawValue::get),
        ..Fields::default()
    })
}

/// A member of an event the reader uses.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Key {
    Ph,
    Name,
    Cat,
    S,
    Pid,
    Tid,
    Ts,
    Dur,
    Id,
    Id2,
    Args,
    Other,
}

/// Byte patterns: the length and a few compares, where matching `&str`s
/// called `memcmp` for each candidate (3 % of a one-core read).
fn key_of(k: &[u8]) -> Key {
    match *k {
        [b's'] => Key::S,
        [b'p', b'h'] => Key::Ph,
        [b't', b's'] => Key::Ts,
        [b'i', b'd'] => Key::Id,
        [b'p', b'i', b'd'] => Key::Pid,
        [b't', b'i', b'd'] => Key::Tid,
        [b'c', b'a', b't'] => Key::Cat,
        [b'd', b'u', b'r'] => Key::Dur,
        [b'i', b'd', b'2'] => Key::Id2,
        [b'n', b'a', b'm', b'e'] => Key::Name,
        [b'a', b'r', b'g', b's'] => Key::Args,
        _ => Key::Other,
    }
}

/// `s` as the low bytes of a word, and the mask of those bytes.
const fn pattern(s: &[u8]) -> (u64, u64) {
    let mut v = 0u64;
    let mut k = 0;
    while k < s.len() {
        v |= (s[k] as u64) << (8 * k);
        k += 1;
    }
    (v, u64::MAX >> (64 - 8 * s.len()))
}

/// The key at `b[i]` (its opening quote) when it is one the reader uses,
/// written plainly with its colon right after it (`"pid":`): the key and
/// the position after the colon, from one eight-byte load, a table slot
/// picked by a multiplicative hash of the three bytes after the quote,
/// and one compare. `None` for any other key or spelling, which
/// [`Cursor::key`] reads. The keys took some 70 instructions each read as
/// strings (the string scan, then the match); a `match` on the key's first
/// letter was a jump table, whose target changes from member to member.
#[inline(always)]
fn known_key(b: &[u8], i: usize) -> Option<(Key, usize)> {
    let w = u64::from_le_bytes(*b.get(i..)?.first_chunk::<8>()?);
    let slot = KEY_TABLE[key_slot(w)];
    if w & slot.mask != slot.bytes {
        return None;
    }
    Some((slot.key?, i + slot.len))
}

/// The keys [`known_key`] knows, each with its quotes and colon.
const KNOWN_KEYS: [(&[u8], Key); 11] = [
    (b"\"ph\":", Key::Ph),
    (b"\"pid\":", Key::Pid),
    (b"\"tid\":", Key::Tid),
    (b"\"ts\":", Key::Ts),
    (b"\"dur\":", Key::Dur),
    (b"\"name\":", Key::Name),
    (b"\"cat\":", Key::Cat),
    (b"\"s\":", Key::S),
    (b"\"id\":", Key::Id),
    (b"\"id2\":", Key::Id2),
    (b"\"args\":", Key::Args),
];

/// A slot of [`KEY_TABLE`]: the key's bytes as the low bytes of a word and
/// their mask (an empty slot's can match no word), the key and its length.
#[derive(Clone, Copy)]
struct KeySlot {
    bytes: u64,
    mask: u64,
    key: Option<Key>,
    len: usize,
}

/// The slot of the word `w` (the key's quote in its lowest byte): the
/// three bytes after the quote, multiplied and their top four bits taken
/// (a multiplier for which the known keys' slots differ).
#[inline(always)]
const fn key_slot(w: u64) -> usize {
    ((((w >> 8) & 0xFF_FFFF).wrapping_mul(0xdbef_bea9_bec4_978c)) >> 60) as usize
}

/// The known keys by [`key_slot`]; building it fails to compile if two
/// share a slot.
const KEY_TABLE: [KeySlot; 16] = {
    let mut t = [KeySlot {
        bytes: 1,
        mask: 0,
        key: None,
        len: 0,
    }; 16];
    let mut k = 0;
    while k < KNOWN_KEYS.len() {
        let (text, key) = KNOWN_KEYS[k];
        let (bytes, mask) = pattern(text);
        let slot = key_slot(bytes);
        assert!(t[slot].key.is_none(), "two known keys share a slot");
        t[slot] = KeySlot {
            bytes,
            mask,
            key: Some(key),
            len: text.len(),
        };
        k += 1;
    }
    t
};

/// A member of `args` that [`LiteArgs`] takes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ArgKey {
    Value,
    Bytes,
    Tag,
    Name,
    SortIndex,
    Other,
}

fn arg_key_of(k: &[u8]) -> ArgKey {
    match k {
        b"tag" => ArgKey::Tag,
        b"name" => ArgKey::Name,
        b"value" => ArgKey::Value,
        b"bytes" => ArgKey::Bytes,
        b"sort_index" => ArgKey::SortIndex,
        _ => ArgKey::Other,
    }
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// The position of the quote that ends a string without escapes whose
/// text starts at `b[j]`; `None` at a backslash, a control character or
/// the end of `b`. Eight bytes at a time: a byte is a quote, a backslash
/// or below 0x20 where the word XOR it (or minus 0x20) borrows into its
/// top bit, exactly for the lowest such byte.
fn plain_string_end(b: &[u8], mut j: usize) -> Option<usize> {
    while let Some(w) = b.get(j..j + 8) {
        let w = u64::from_le_bytes(w.try_into().ok()?);
        let q = w ^ (ONES * u64::from(b'"'));
        let s = w ^ (ONES * u64::from(b'\\'));
        let hits = ((q.wrapping_sub(ONES) & !q)
            | (s.wrapping_sub(ONES) & !s)
            | (w.wrapping_sub(ONES * 0x20) & !w))
            & HIGH;
        if hits != 0 {
            let k = j + (hits.trailing_zeros() / 8) as usize;
            return (b[k] == b'"').then_some(k);
        }
        j += 8;
    }
    loop {
        match *b.get(j)? {
            b'"' => return Some(j),
            b'\\' => return None,
            c if c < 0x20 => return None,
            _ => j += 1,
        }
    }
}

/// A JSON number written plainly: no exponent, at most 19 digits in all
/// (epoch microseconds with three decimals have 19; 20 could overflow).
#[derive(Clone, Copy)]
struct Plain {
    v: u64,
    frac: usize,
    neg: bool,
}

impl Plain {
    /// `value × 10^scale` when that needs no rounding and fits (what
    /// `decimal::parse_scaled` gives such a number).
    fn scaled(self, scale: usize) -> Option<i64> {
        let v = self
            .v
            .checked_mul(*POW10.get(scale.checked_sub(self.frac)?)?)?;
        let v = i64::try_from(v).ok()?;
        Some(if self.neg { -v } else { v })
    }

    /// The integer it is, as `str::parse::<i64>` gives it.
    fn int(self) -> Option<i64> {
        self.scaled(0)
    }
}

#[inline(always)]
fn digit(b: &[u8], j: usize) -> Option<u64> {
    b.get(j)
        .map(|&c| u64::from(c.wrapping_sub(b'0')))
        .filter(|&d| d <= 9)
}

/// The JSON number at `b[i..]` (the grammar exactly: a leading zero stands
/// alone, a point and an exponent need digits): where it ends, and its
/// value when it is [`Plain`]. Whatever follows is the caller's to judge.
#[inline(always)]
fn scan_number(b: &[u8], i: usize) -> Option<(usize, Option<Plain>)> {
    let neg = b.get(i) == Some(&b'-');
    let mut j = i + neg as usize;
    let d0 = j;
    let mut v = 0u64;
    match digit(b, j)? {
        0 => j += 1,
        _ => (j, v) = digit_run(b, j, 0),
    }
    let mut digits = j - d0;
    let mut frac = 0;
    if b.get(j) == Some(&b'.') {
        j += 1;
        let f0 = j;
        (j, v) = digit_run(b, j, v);
        frac = j - f0;
        if frac == 0 {
            return None;
        }
        digits += frac;
    }
    let mut plain = digits <= 19;
    if matches!(b.get(j), Some(b'e' | b'E')) {
        j += 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        let e0 = j;
        while digit(b, j).is_some() {
            j += 1;
        }
        if j == e0 {
            return None;
        }
        plain = false;
    }
    Some((j, plain.then_some(Plain { v, frac, neg })))
}

/// A JSON value that [`fields_fast`] and [`lite_fast`] take.
enum Value<'a> {
    /// A string without escapes: its text.
    Str(&'a str),
    Num(Option<Plain>),
    /// `true`, `false`, `null`.
    Literal,
    /// An object or array (`{` or `[`), not looked into.
    Nested,
}

/// A cursor over one event object.
struct Cursor<'a> {
    b: &'a [u8],
    text: &'a str,
    i: usize,
}

impl<'a> Cursor<'a> {
    #[inline(always)]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// Past JSON's whitespace: in compact JSON one compare.
    #[inline(always)]
    fn ws(&mut self) {
        while self
            .b
            .get(self.i)
            .is_some_and(|&c| c <= b' ' && matches!(c, b' ' | b'\n' | b'\r' | b'\t'))
        {
            self.i += 1;
        }
    }

    /// Past `c` (and the whitespace after it), or `None`.
    #[inline(always)]
    fn eat(&mut self, c: u8) -> Option<()> {
        if self.peek() != Some(c) {
            return None;
        }
        self.i += 1;
        self.ws();
        Some(())
    }

    /// The string without escapes at the cursor (a quote), and past it.
    #[inline(always)]
    fn string(&mut self) -> Option<&'a str> {
        let end = plain_string_end(self.b, self.i + 1)?;
        let s = self.text.get(self.i + 1..end)?;
        self.i = end + 1;
        Some(s)
    }

    /// A member's key and the colon after it: the cursor then at the value.
    #[inline(always)]
    fn key(&mut self) -> Option<&'a [u8]> {
        if self.peek() != Some(b'"') {
            return None;
        }
        let k = self.string()?.as_bytes();
        self.ws();
        self.eat(b':')?;
        Some(k)
    }

    /// The value at the cursor, and past it; an object or array is left
    /// at the cursor for the caller.
    #[inline(always)]
    fn value(&mut self) -> Option<Value<'a>> {
        // strings and numbers first, by compares: a `match` on the first
        // byte was a jump table whose target changes from member to member
        let c = self.peek()?;
        if c == b'"' {
            return self.string().map(Value::Str);
        }
        if c.wrapping_sub(b'0') <= 9 || c == b'-' {
            let (end, plain) = scan_number(self.b, self.i)?;
            self.i = end;
            return Some(Value::Num(plain));
        }
        match c {
            c @ (b't' | b'f' | b'n') => {
                let lit: &[u8] = match c {
                    b't' => b"true",
                    b'f' => b"false",
                    _ => b"null",
                };
                if !self.b.get(self.i..)?.starts_with(lit) {
                    return None;
                }
                self.i += lit.len();
                Some(Value::Literal)
            }
            b'{' | b'[' => Some(Value::Nested),
            _ => None,
        }
    }

    /// Past the object or array at the cursor, its brackets balanced and
    /// its strings well formed (not looked into further).
    fn skip_nested(&mut self) -> Option<()> {
        match scan_value(self.b, self.i) {
            Scan::Complete(e) => {
                self.i = e;
                Some(())
            }
            _ => None,
        }
    }

    /// After a member: past its comma (`Some(true)`, another follows) or
    /// the closing brace (`Some(false)`).
    #[inline(always)]
    fn next_member(&mut self) -> Option<bool> {
        self.ws();
        match self.peek()? {
            b',' => {
                self.i += 1;
                self.ws();
                Some(true)
            }
            b'}' => {
                self.i += 1;
                Some(false)
            }
            _ => None,
        }
    }
}

/// Members of a counter event's `args` that `counter_members_fast`
/// holds: more go to serde.
pub(super) const FAST_MEMBERS: usize = 16;

/// The members of a counter event's `args` (`{"name": value, ...}`), in
/// the file's order, each key with its number (`None`: a string or a
/// literal): the first `n` of `out`, `n` returned. `None` where serde
/// must read them: an object or array, a key or string with escapes, a
/// number with an exponent, of more than 19 digits, or a fraction serde
/// might round otherwise (more than 2^53 before the point is put back),
/// more than [`FAST_MEMBERS`] members, anything not JSON. A number is the
/// `f64` serde gives: an integer converted, a fraction of at most 2^53
/// over a power of ten up to 10^18, both exact, divided once. (The reader
/// reads them with [`counter_members_template`]; this is the tests'.)
#[cfg(test)]
pub(super) fn counter_members_fast<'a>(
    args: &'a str,
    out: &mut [(&'a str, Option<f64>); FAST_MEMBERS],
) -> Option<usize> {
    members_fast(args, out, |_, _| {})
}

/// `counter_members_fast`, and the text of `args` with the values cut
/// out, as written (spaces too), into `template`, each piece ending at
/// `ends` (for `{"a": 1, "b": 2}`: `{"a": `, `, "b": `, `}`; one piece
/// more than values): what [`counter_values_as`] reads the next event of
/// the same members by.
pub(super) fn counter_members_template<'a>(
    args: &'a str,
    out: &mut [(&'a str, Option<f64>); FAST_MEMBERS],
    template: &mut Vec<u8>,
    ends: &mut Vec<usize>,
) -> Option<usize> {
    template.clear();
    ends.clear();
    let b = args.as_bytes();
    let mut last = 0;
    let mut inside = true;
    let n = members_fast(args, out, |start, end| {
        inside &= last <= start;
        template.extend_from_slice(b.get(last..start).unwrap_or_default());
        ends.push(template.len());
        last = end;
    })?;
    template.extend_from_slice(b.get(last..)?);
    ends.push(template.len());
    inside.then_some(n)
}

/// `counter_members_fast`, telling `value` where each value starts and
/// ends in `args`.
#[inline(always)]
fn members_fast<'a>(
    args: &'a str,
    out: &mut [(&'a str, Option<f64>); FAST_MEMBERS],
    mut value: impl FnMut(usize, usize),
) -> Option<usize> {
    let mut c = Cursor {
        b: args.as_bytes(),
        text: args,
        i: 0,
    };
    c.ws();
    c.eat(b'{')?;
    let mut n = 0;
    if c.peek() == Some(b'}') {
        c.i += 1;
    } else {
        loop {
            if c.peek() != Some(b'"') {
                return None;
            }
            let k = c.string()?;
            c.ws();
            c.eat(b':')?;
            let start = c.i;
            *out.get_mut(n)? = (k, member_value(&mut c)?);
            value(start, c.i);
            n += 1;
            if !c.next_member()? {
                break;
            }
        }
    }
    c.ws();
    (c.i == c.b.len()).then_some(n)
}

/// The value of a counter event's member at the cursor, as
/// `counter_members_fast` takes it: `Some(None)` for a string or a
/// literal, `None` where serde must read it.
#[inline(always)]
fn member_value(c: &mut Cursor<'_>) -> Option<Option<f64>> {
    Some(match c.value()? {
        Value::Num(p) => {
            let p = p?;
            let x = if p.frac == 0 {
                p.v as f64
            } else if p.v <= 1 << 53 {
                p.v as f64 / *POW10.get(p.frac)? as f64
            } else {
                return None;
            };
            Some(if p.neg { -x } else { x })
        }
        Value::Str(_) | Value::Literal => None,
        // (serde checks what is inside, to the last comma)
        Value::Nested => return None,
    })
}

/// `counter_members_fast`'s values of `args` written as `template`
/// says: `template` is the text of an earlier event's `args` with each
/// value cut out, as written ([`counter_members_template`]), its pieces
/// ending at `ends` (one piece more than values). The `n` values (`n`
/// returned, one less than the pieces) go to `out`, each where its member
/// is. `None` where `args` is written otherwise, or a value is one that
/// `counter_members_fast` would not take: that then reads them. What it
/// takes, `counter_members_fast` takes alike: the same members' names
/// (those of the template, which it read), the same spaces, and values
/// read by the same code, each ending where the piece after it begins
/// (with a space, a comma or a brace, which no value takes in).
pub(super) fn counter_values_as(
    args: &str,
    template: &[u8],
    ends: &[usize],
    out: &mut [Option<f64>; FAST_MEMBERS],
) -> Option<usize> {
    let mut c = Cursor {
        b: args.as_bytes(),
        text: args,
        i: 0,
    };
    let mut start = 0;
    for (j, &end) in ends.iter().enumerate() {
        let piece = template.get(start..end)?;
        start = end;
        if !same_bytes(c.b.get(c.i..c.i + piece.len())?, piece) {
            return None;
        }
        c.i += piece.len();
        if j + 1 == ends.len() {
            break;
        }
        *out.get_mut(j)? = member_value(&mut c)?;
    }
    (c.i == c.b.len()).then_some(ends.len().checked_sub(1)?)
}

/// Whether `a` and `b` hold the same bytes, compared 8 (or 4) at a time,
/// the last word overlapping the one before: a member's name between its
/// quotes, comma and colon is some 5 to 20 bytes, where a byte loop took
/// ~8 instructions a byte and `==` a call.
#[inline(always)]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    fn word<const W: usize>(s: &[u8], i: usize) -> [u8; W] {
        let mut w = [0; W];
        if let Some(x) = s.get(i..i + W) {
            w.copy_from_slice(x);
        }
        w
    }
    match n {
        0..4 => a.iter().zip(b).all(|(x, y)| x == y),
        4..8 => word::<4>(a, 0) == word::<4>(b, 0) && word::<4>(a, n - 4) == word::<4>(b, n - 4),
        _ => {
            let mut i = 0;
            while i + 8 < n {
                if word::<8>(a, i) != word::<8>(b, i) {
                    return false;
                }
                i += 8;
            }
            word::<8>(a, n - 8) == word::<8>(b, n - 8)
        }
    }
}

fn put<T>(slot: &mut Option<T>, v: T) -> Option<()> {
    if slot.is_some() {
        return None;
    }
    *slot = Some(v);
    Some(())
}

/// Fast path for the common shape of event objects: strings without
/// escapes, no duplicate members, in one pass. Returns `None` for anything
/// else, which then goes through [`fields_serde`] (for the exact error
/// message too). Members the reader does not use are checked for valid
/// numbers and literals, well-formed strings and (objects and arrays)
/// balanced brackets only. `ts`, `dur`, integer `pid` and `tid` come
/// converted, and `args` of numbers, strings and literals as [`LiteArgs`]:
/// their text was read twice before, once to check and once to convert. A
/// counter event's `args` (its `ph` met before them) are only skipped:
/// their members are read later, where the reader takes its samples.
///
/// Fills `f` (which starts empty; left anyhow on `None`): the fields were
/// returned before, moved (360 bytes) twice an event.
pub(super) fn fields_fast<'a>(b: &'a [u8], f: &mut Fields<'a>) -> Option<()> {
    let text = if b.is_ascii() {
        // SAFETY: ASCII is valid UTF-8
        unsafe { std::str::from_utf8_unchecked(b) }
    } else {
        std::str::from_utf8(b).ok()?
    };
    let mut c = Cursor { b, text, i: 0 };
    c.ws();
    c.eat(b'{')?;
    let mut more = c.peek() != Some(b'}');
    if !more {
        c.i += 1;
    }
    while more {
        let key = match known_key(b, c.i) {
            Some((key, next)) => {
                c.i = next;
                c.ws();
                key
            }
            None => key_of(c.key()?),
        };
        let v0 = c.i;
        let value = c.value()?;
        match (key, value) {
            (Key::Ph | Key::Name | Key::Cat | Key::S, Value::Str(s)) => {
                let slot = match key {
                    Key::Ph => &mut f.ph,
                    Key::Name => &mut f.name,
                    Key::Cat => &mut f.cat,
                    _ => &mut f.s,
                };
                put(slot, Cow::Borrowed(s))?;
            }
            (Key::Ph | Key::Name | Key::Cat | Key::S, _) => return None,
            // a counter event's members are read from the text later
            // (`counter_members_template`, or serde, which judges them): here
            // only its end is found, 16 bytes at a time
            (Key::Args, Value::Nested) if f.ph.as_deref() == Some("C") => {
                c.skip_nested()?;
                put(&mut f.args, text.get(v0..c.i)?)?;
            }
            (Key::Args, Value::Nested) if c.peek() == Some(b'{') => {
                let lite = lite_fast(&mut c);
                if lite.is_none() {
                    c.i = v0;
                    c.skip_nested()?;
                }
                put(&mut f.args, text.get(v0..c.i)?)?;
                f.lite = lite;
            }
            (Key::Other, value) => {
                if let Value::Nested = value {
                    c.skip_nested()?;
                }
            }
            (key, value) => {
                let plain = match value {
                    Value::Num(plain) => plain,
                    // serde takes `null` for an absent member (or a
                    // duplicate): left to it
                    Value::Literal if b.get(v0) == Some(&b'n') => return None,
                    Value::Nested => {
                        c.skip_nested()?;
                        None
                    }
                    _ => None,
                };
                let raw = text.get(v0..c.i)?;
                match key {
                    Key::Pid => {
                        put(&mut f.pid, raw)?;
                        f.pid_num = plain.and_then(Plain::int);
                    }
                    Key::Tid => {
                        put(&mut f.tid, raw)?;
                        f.tid_num = plain.and_then(Plain::int);
                    }
                    Key::Ts => {
                        put(&mut f.ts, raw)?;
                        f.ts_ns = plain.and_then(|p| p.scaled(3));
                    }
                    Key::Dur => {
                        put(&mut f.dur, raw)?;
                        f.dur_ns = plain.and_then(|p| p.scaled(3));
                    }
                    Key::Id => put(&mut f.id, raw)?,
                    Key::Id2 => put(&mut f.id2, raw)?,
                    _ => put(&mut f.args, raw)?,
                }
            }
        }
        more = c.next_member()?;
    }
    c.ws();
    (c.i == b.len()).then_some(())
}

/// [`LiteArgs`] of the object at the cursor when its members are numbers,
/// strings without escapes and literals, each member `LiteArgs` takes of
/// the type it takes, none twice: what serde makes of it, and the cursor
/// past it. `None` for anything else (the cursor then anywhere), which
/// serde judges.
fn lite_fast<'a>(c: &mut Cursor<'a>) -> Option<LiteArgs<'a>> {
    let mut lite = LiteArgs::default();
    c.i += 1;
    c.ws();
    let mut more = c.peek() != Some(b'}');
    if !more {
        c.i += 1;
    }
    while more {
        let key = arg_key_of(c.key()?);
        let v0 = c.i;
        let value = c.value()?;
        match (key, value) {
            (_, Value::Nested) => return None,
            (ArgKey::Other, _) => {}
            (ArgKey::Name, Value::Str(s)) => put(&mut lite.name, Text(Cow::Borrowed(s)))?,
            (ArgKey::Value, Value::Num(_)) => {
                let n: serde_json::Number = c.text.get(v0..c.i)?.parse().ok()?;
                put(&mut lite.value, n)?;
            }
            // serde reads `-0` as a float, which the integers refuse
            (ArgKey::Bytes, Value::Num(Some(p))) if !p.neg => {
                put(&mut lite.bytes, p.int()? as u64)?
            }
            (ArgKey::Tag | ArgKey::SortIndex, Value::Num(Some(p))) if !(p.neg && p.v == 0) => {
                let slot = match key {
                    ArgKey::Tag => &mut lite.tag,
                    _ => &mut lite.sort_index,
                };
                put(slot, p.int()?)?;
            }
            _ => return None,
        }
        more = c.next_member()?;
    }
    Some(lite)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every length to 40: equal bytes are the same, any one byte changed
    /// (at any place) or a byte more are not.
    #[test]
    fn same_bytes_compares_every_byte() {
        let a: Vec<u8> = (0..41u8).map(|i| i.wrapping_mul(37) ^ 0x5a).collect();
        for n in 0..=40 {
            let x = &a[..n];
            let mut y = x.to_vec();
            assert!(same_bytes(x, &y), "{n}");
            assert!(!same_bytes(x, &a[..n + 1]), "{n}");
            for i in 0..n {
                y[i] ^= 0x10;
                assert!(!same_bytes(x, &y), "{n} {i}");
                y[i] ^= 0x10;
            }
        }
    }

    #[test]
    fn plain_strings_end_at_their_quote_only() {
        let cases: &[(&[u8], Option<usize>)] = &[
            (b"\"", Some(0)),
            (b"ab\"", Some(2)),
            (b"abcdefg\"xxxxxxxx", Some(7)),
            (b"abcdefgh\"", Some(8)),
            (b"abcdefghijklmnopq\"", Some(17)),
            (b"caf\xc3\xa9 \xe2\x82\xac\"tail....", Some(9)),
            (b"abc\\\"", None),
            (b"abcdefghij\\n\"", None),
            (b"ab\tc\"", None),
            (b"abcdefghi\x1f\"", None),
            (b"abcdefghijkl", None),
            (b"\x7f\x20\x21\x23\"", Some(4)),
        ];
        for &(b, want) in cases {
            assert_eq!(
                plain_string_end(b, 0),
                want,
                "{:?}",
                String::from_utf8_lossy(b)
            );
        }
        // every byte value just before the quote and within a word
        for c in 0u8..=255 {
            let mut b = vec![b'a'; 5];
            b.push(c);
            b.extend_from_slice(b"\"........");
            let want = match c {
                b'"' => Some(5),
                b'\\' => None,
                c if c < 0x20 => None,
                _ => Some(6),
            };
            assert_eq!(plain_string_end(&b, 0), want, "byte {c:#x}");
        }
    }

    /// [`known_key`] takes a key exactly when it is one [`key_of`] knows,
    /// written plainly with its colon: keys of the known keys' letters,
    /// near misses, other spellings and what follows.
    #[test]
    fn known_keys_are_those_key_of_knows() {
        let mut rng = crate::test_rng::XorShift(0x6B_E7);
        // a key's letters (a quote would end it), then what may follow
        let letters = b"phidtsurnamecg2xP: ";
        let after = b"phidtsurnamecg2xP: \",{";
        let mut taken = 0;
        for round in 0..200_000 {
            let key: Vec<u8> = match round % 3 {
                // a known key, now and then with a letter changed
                0 => {
                    let (text, _) = KNOWN_KEYS[rng.below(KNOWN_KEYS.len() as u64) as usize];
                    let mut k = text[1..text.len() - 2].to_vec();
                    if rng.below(2) == 0 {
                        let at = rng.below(k.len() as u64) as usize;
                        k[at] = letters[rng.below(letters.len() as u64) as usize];
                    }
                    k
                }
                _ => (0..rng.below(6))
                    .map(|_| letters[rng.below(letters.len() as u64) as usize])
                    .collect(),
            };
            let mut text = vec![b'"'];
            text.extend_from_slice(&key);
            text.extend_from_slice(match rng.below(6) {
                0 => b"\" :1",
                1 => b"\"",
                _ => b"\":1",
            });
            for _ in 0..rng.below(12) {
                text.push(after[rng.below(after.len() as u64) as usize]);
            }
            let plain = text.get(key.len() + 2) == Some(&b':');
            let want = match key_of(&key) {
                Key::Other => None,
                k if plain && text.len() >= 8 => Some((k, key.len() + 3)),
                _ => None,
            };
            let got = known_key(&text, 0);
            assert!(got == want, "{:?}", String::from_utf8_lossy(&text));
            taken += usize::from(got.is_some());
        }
        assert!(taken > 10_000, "{taken}");
    }

    #[test]
    fn numbers_follow_json_grammar() {
        let end = |t: &str| scan_number(t.as_bytes(), 0).map(|(e, _)| e);
        for (t, e) in [
            ("0", 1),
            ("-0", 2),
            ("01", 1),
            ("12.5e3,", 6),
            ("1E+2}", 4),
            ("7.25 ", 4),
            ("123456789012345678901", 21),
        ] {
            assert_eq!(end(t), Some(e), "{t}");
        }
        for t in ["-", "1.", "1.e3", "1e", "1e+", "+1", ".5", "-.5", "a"] {
            assert_eq!(end(t), None, "{t}");
        }
        let plain = |t: &str| scan_number(t.as_bytes(), 0).and_then(|(_, p)| p);
        assert_eq!(plain("-12.345").and_then(|p| p.scaled(3)), Some(-12_345));
        assert_eq!(plain("0.910").and_then(|p| p.scaled(3)), Some(910));
        assert_eq!(plain("1.2345").and_then(|p| p.scaled(3)), None); // rounds
        assert_eq!(plain("42").and_then(Plain::int), Some(42));
        assert_eq!(plain("42.0").and_then(Plain::int), None);
        assert!(plain("1e3").is_none());
        assert_eq!(
            plain("1795396027283346.750").and_then(|p| p.scaled(3)),
            Some(1_795_396_027_283_346_750) // 19 digits: pmpitrace's epoch microseconds
        );
        assert!(plain("12345678901234567890").is_none()); // 20 digits
        assert_eq!(plain("9999999999999999999").and_then(Plain::int), None); // past i64
        assert_eq!(
            plain("999999999999999999").and_then(|p| p.scaled(3)),
            None // overflows i64 nanoseconds
        );
    }
}
