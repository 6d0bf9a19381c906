//! A DEFLATE decoder (RFC 1951) that can start at any block of a stream
//! without the 32 KiB of output before it: what it does not know, it
//! writes as markers, symbols that stand for a byte of the window before
//! its start. Used to find blocks ([`super::find`]) and to learn, part by
//! part on all threads or processes, each part's output length and the
//! window at its end in terms of the window at its start ([`decode_part`]);
//! the bytes themselves are then decoded by zlib from the checkpoints
//! ([`super::at`]).

/// Bits a primary table entry resolves; longer codes go through a second
/// table.
const PRIMARY: u32 = 10;
/// An entry that points to a second table (its offset in the low bits).
const SUB: u32 = 1 << 31;
/// The window: how far back a match may reach.
pub const WINDOW: usize = 32 << 10;
/// The ring of symbols the decoder keeps (a power of two ≥ 2 windows).
const RING: usize = 64 << 10;
/// The first marker symbol: `MARKER + i` stands for byte `i` of the
/// window before the part's start (0 the oldest).
pub const MARKER: u16 = 256;

/// Why a stream, or a guess at where a block starts, is not DEFLATE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bad {
    /// Reserved block type 3.
    BlockType,
    /// A stored block whose length and its complement disagree.
    StoredLength,
    /// More than 286 length or 30 distance codes.
    TooManyCodes,
    /// Code lengths that do not form a prefix code deflate allows.
    Code,
    /// A repeat with nothing before it, or past the lengths' end.
    Repeat,
    /// No code for the end of a block.
    NoEnd,
    /// A length or distance symbol that does not exist, or a code that is
    /// not in the table.
    Symbol,
    /// A distance before the stream's start.
    Distance,
    /// The data ended inside a block.
    Truncated,
    /// Bytes after a gzip member that are not another member.
    Member,
}

/// Reads bits from the least significant end of each byte, as DEFLATE
/// packs them.
pub struct Bits<'a> {
    data: &'a [u8],
    buf: u64,
    /// Bits in `buf`.
    n: u32,
    /// The next byte to load.
    next: usize,
}

impl<'a> Bits<'a> {
    /// A reader at bit `bit` of `data`.
    pub fn at(data: &'a [u8], bit: u64) -> Bits<'a> {
        let mut b = Bits {
            data,
            buf: 0,
            n: 0,
            next: (bit / 8) as usize,
        };
        b.refill();
        b.consume((bit % 8) as u32);
        b
    }

    /// The position, in bits from the start of the data.
    pub fn position(&self) -> u64 {
        self.next as u64 * 8 - u64::from(self.n)
    }

    /// Whether the reader went past the end of the data (the bits it
    /// handed out beyond it were zeros).
    pub fn overrun(&self) -> bool {
        self.position() > self.data.len() as u64 * 8
    }

    #[inline]
    fn refill(&mut self) {
        if self.n > 56 {
            return;
        }
        if let Some(w) = self.data.get(self.next..self.next + 8) {
            let mut word = [0u8; 8];
            word.copy_from_slice(w);
            self.buf |= u64::from_le_bytes(word) << self.n;
            self.next += ((63 - self.n) / 8) as usize;
            self.n |= 56;
        } else {
            while self.n <= 56 {
                let byte = self.data.get(self.next).copied().unwrap_or(0);
                self.buf |= u64::from(byte) << self.n;
                self.n += 8;
                self.next += 1;
            }
        }
    }

    /// The next `k` (≤ 32) bits, not consumed.
    #[inline]
    fn peek(&mut self, k: u32) -> u32 {
        self.refill();
        (self.buf & ((1u64 << k) - 1)) as u32
    }

    #[inline]
    fn consume(&mut self, k: u32) {
        self.buf >>= k;
        self.n -= k;
    }

    /// Reads `k` (≤ 32) bits.
    #[inline]
    pub fn take(&mut self, k: u32) -> u32 {
        let v = self.peek(k);
        self.consume(k);
        v
    }

    /// Skips to the next byte boundary.
    fn align(&mut self) {
        let k = self.n % 8;
        self.consume(k);
    }
}

/// A canonical Huffman code as lookup tables: a primary table of
/// `2^PRIMARY` entries and second tables for the longer codes. An entry is
/// the symbol in its low 16 bits and the code's length above them, or 0
/// (no code), or [`SUB`] with a second table's offset.
pub struct Table {
    entries: Vec<u32>,
    /// Bits a second table resolves (the longest code less `PRIMARY`).
    sub: u32,
}

impl Table {
    /// The code whose symbols have the bit lengths `lens` (0: unused).
    /// `incomplete_ok`: a code of one symbol of length 1 (or none) is
    /// allowed, as for distances and, in zlib, for literals and lengths.
    pub fn new(lens: &[u8], incomplete_ok: bool) -> Result<Table, Bad> {
        let mut count = [0u32; 16];
        for &l in lens {
            count[usize::from(l)] += 1;
        }
        count[0] = 0;
        let max = (1..16).rev().find(|&l| count[l] > 0).unwrap_or(0) as u32;
        // Kraft: over-subscribed codes are never valid; incomplete ones
        // only as zlib allows them
        let mut left: i64 = 1;
        for c in &count[1..] {
            left = left * 2 - i64::from(*c);
            if left < 0 {
                return Err(Bad::Code);
            }
        }
        if left > 0 && !(incomplete_ok && max <= 1) {
            return Err(Bad::Code);
        }
        let mut next = [0u32; 16];
        let mut code = 0u32;
        for l in 1..16 {
            code = (code + count[l - 1]) << 1;
            next[l] = code;
        }
        let sub = max.saturating_sub(PRIMARY);
        let mut entries = vec![0u32; 1 << PRIMARY];
        for (sym, &l) in lens.iter().enumerate() {
            let l = u32::from(l);
            if l == 0 {
                continue;
            }
            let c = next[l as usize];
            next[l as usize] += 1;
            let rev = c.reverse_bits() >> (32 - l);
            let entry = sym as u32 | (l << 16);
            if l <= PRIMARY {
                let mut i = rev;
                while i < 1 << PRIMARY {
                    entries[i as usize] = entry;
                    i += 1 << l;
                }
            } else {
                let p = (rev & ((1 << PRIMARY) - 1)) as usize;
                if entries[p] & SUB == 0 {
                    let off = entries.len() as u32;
                    entries.resize(entries.len() + (1 << sub), 0);
                    entries[p] = SUB | off;
                }
                let base = (entries[p] & 0xFFFF) as usize;
                let step = 1u32 << (l - PRIMARY);
                let mut i = rev >> PRIMARY;
                while i < 1 << sub {
                    entries[base + i as usize] = entry;
                    i += step;
                }
            }
        }
        Ok(Table { entries, sub })
    }

    /// The next symbol of `bits`.
    #[inline]
    fn decode(&self, bits: &mut Bits) -> Result<u16, Bad> {
        let look = bits.peek(PRIMARY + self.sub);
        let mut e = self.entries[(look & ((1 << PRIMARY) - 1)) as usize];
        if e & SUB != 0 {
            let i = (e & 0xFFFF) as usize + (look >> PRIMARY) as usize;
            e = self.entries[i];
        }
        let l = e >> 16;
        if l == 0 {
            return Err(Bad::Symbol);
        }
        bits.consume(l);
        Ok(e as u16)
    }
}

const LEN_BASE: [u16; 29] = [
    3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131,
    163, 195, 227, 258,
];
const LEN_EXTRA: [u8; 29] = [
    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
];
const DIST_BASE: [u16; 30] = [
    1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
    2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577,
];
const DIST_EXTRA: [u8; 30] = [
    0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13,
    13,
];
/// The order the code length code's lengths come in.
const CL_ORDER: [usize; 19] = [
    16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15,
];

/// A block's header, read.
pub enum Header {
    /// A stored block of this many bytes, its bytes next (byte-aligned).
    Stored(u16),
    /// A Huffman block's codes: literals and lengths, distances.
    Huffman(Box<(Table, Table)>),
}

/// The fixed codes of block type 1.
fn fixed() -> Result<(Table, Table), Bad> {
    let mut lens = [0u8; 288];
    lens[..144].fill(8);
    lens[144..256].fill(9);
    lens[256..280].fill(7);
    lens[280..].fill(8);
    Ok((Table::new(&lens, false)?, Table::new(&[5u8; 32], false)?))
}

/// Reads a block header at the reader's position: whether it is the last
/// block, and what it is.
pub fn header(bits: &mut Bits) -> Result<(bool, Header), Bad> {
    let last = bits.take(1) == 1;
    match bits.take(2) {
        0 => {
            bits.align();
            let len = bits.take(16);
            let nlen = bits.take(16);
            if len != !nlen & 0xFFFF {
                return Err(Bad::StoredLength);
            }
            Ok((last, Header::Stored(len as u16)))
        }
        1 => Ok((last, Header::Huffman(Box::new(fixed()?)))),
        2 => Ok((last, Header::Huffman(Box::new(dynamic(bits)?)))),
        _ => Err(Bad::BlockType),
    }
}

/// A dynamic block's codes (after its 3 header bits), checked as zlib
/// checks them.
pub fn dynamic(bits: &mut Bits) -> Result<(Table, Table), Bad> {
    let nlen = bits.take(5) as usize + 257;
    let ndist = bits.take(5) as usize + 1;
    let ncl = bits.take(4) as usize + 4;
    if nlen > 286 || ndist > 30 {
        return Err(Bad::TooManyCodes);
    }
    let mut cl = [0u8; 19];
    for &i in &CL_ORDER[..ncl] {
        cl[i] = bits.take(3) as u8;
    }
    let clt = Table::new(&cl, false)?;
    let mut lens = [0u8; 286 + 30];
    let total = nlen + ndist;
    let mut i = 0;
    while i < total {
        let sym = clt.decode(bits)?;
        let (value, times) = match sym {
            0..=15 => (sym as u8, 1),
            16 => {
                let prev = *lens[..i].last().ok_or(Bad::Repeat)?;
                (prev, 3 + bits.take(2) as usize)
            }
            17 => (0, 3 + bits.take(3) as usize),
            _ => (0, 11 + bits.take(7) as usize),
        };
        if i + times > total {
            return Err(Bad::Repeat);
        }
        lens[i..i + times].fill(value);
        i += times;
    }
    if lens[256] == 0 {
        return Err(Bad::NoEnd);
    }
    let lit = Table::new(&lens[..nlen], true)?;
    let dist = Table::new(&lens[nlen..total], true)?;
    Ok((lit, dist))
}

/// The symbols a decoder has written: the last [`RING`] of them. Before
/// the start, `WINDOW` markers (`MARKER + i`, the window's byte `i`).
pub struct Ring {
    sym: Vec<u16>,
    /// Symbols written, the markers included.
    pos: usize,
    /// Where the stream (a gzip member) started, when it started in this
    /// part: a match may not reach before it.
    floor: Option<usize>,
}

impl Ring {
    /// A ring before a part's first symbol.
    pub fn new(from_start: bool) -> Ring {
        let mut sym = vec![0u16; RING];
        for (i, s) in sym[..WINDOW].iter_mut().enumerate() {
            *s = MARKER + i as u16;
        }
        Ring {
            sym,
            pos: WINDOW,
            floor: from_start.then_some(WINDOW),
        }
    }

    /// Symbols decoded since the start.
    pub fn written(&self) -> u64 {
        (self.pos - WINDOW) as u64
    }

    /// The window after the last symbol: `WINDOW` symbols, oldest first.
    pub fn window(&self) -> Vec<u16> {
        (0..WINDOW)
            .map(|i| self.sym[(self.pos - WINDOW + i) & (RING - 1)])
            .collect()
    }

    #[inline]
    fn push(&mut self, s: u16) {
        self.sym[self.pos & (RING - 1)] = s;
        self.pos += 1;
    }

    #[inline]
    fn copy(&mut self, dist: usize, len: usize) -> Result<(), Bad> {
        if self.floor.is_some_and(|f| dist > self.pos - f) {
            return Err(Bad::Distance);
        }
        let mask = RING - 1;
        let from = self.pos - dist;
        if dist >= len && (from & mask) + len <= RING && (self.pos & mask) + len <= RING {
            let (a, b) = (from & mask, self.pos & mask);
            self.sym.copy_within(a..a + len, b);
            self.pos += len;
        } else {
            for k in 0..len {
                let s = self.sym[(from + k) & mask];
                self.sym[(self.pos + k) & mask] = s;
            }
            self.pos += len;
        }
        Ok(())
    }
}

/// Decodes the data of a Huffman block with codes `codes` into `ring`, up
/// to and with its end-of-block symbol.
pub fn huffman_block(bits: &mut Bits, codes: &(Table, Table), ring: &mut Ring) -> Result<(), Bad> {
    let (lit, dist) = codes;
    loop {
        let sym = lit.decode(bits)?;
        if sym < 256 {
            ring.push(sym);
            if bits.overrun() {
                return Err(Bad::Truncated);
            }
            continue;
        }
        if sym == 256 {
            return if bits.overrun() {
                Err(Bad::Truncated)
            } else {
                Ok(())
            };
        }
        let k = usize::from(sym - 257);
        if k >= 29 {
            return Err(Bad::Symbol);
        }
        let len = usize::from(LEN_BASE[k]) + bits.take(u32::from(LEN_EXTRA[k])) as usize;
        let d = usize::from(dist.decode(bits)?);
        if d >= 30 {
            return Err(Bad::Symbol);
        }
        let dd = usize::from(DIST_BASE[d]) + bits.take(u32::from(DIST_EXTRA[d])) as usize;
        ring.copy(dd, len)?;
        if bits.overrun() {
            return Err(Bad::Truncated);
        }
    }
}

/// Decodes one block at the reader's position into `ring`: whether it
/// was the stream's last.
pub fn block(bits: &mut Bits, ring: &mut Ring) -> Result<bool, Bad> {
    let (last, h) = header(bits)?;
    match h {
        Header::Stored(len) => {
            for _ in 0..len {
                ring.push(bits.take(8) as u16);
            }
        }
        Header::Huffman(codes) => huffman_block(bits, &codes, ring)?,
    }
    if bits.overrun() {
        return Err(Bad::Truncated);
    }
    Ok(last)
}

/// What decoding a part of a stream found.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    /// Bytes it decodes to.
    pub len: u64,
    /// Where its decoding stopped, in bits: a block's start, or after the
    /// last block.
    pub end: u64,
    /// It ends with the stream's last block.
    pub last: bool,
    /// The window at its end (`WINDOW` symbols): bytes, and markers for
    /// the bytes of the window at its start.
    pub window: Vec<u16>,
    /// The gzip members that start in it after its start: their first
    /// block's bit, their offset in its bytes, and the CRC-32 that the
    /// trailer of the member before them says.
    pub members: Vec<(u64, u64, u32)>,
}

/// Decodes the blocks of `data` from bit `start` (a block's start) until a
/// block starts at bit `stop` or later, or the stream ends: after a last
/// block, the 8 bytes of a gzip trailer and then either the data's end or
/// the next gzip member, whose blocks are decoded on. `Err` when the bits
/// are not DEFLATE (or gzip between members) or a block starts past
/// `stop` when `exact` (the part was to end at a block found there).
pub fn decode_part(
    data: &[u8],
    start: u64,
    stop: u64,
    exact: bool,
    from_start: bool,
) -> Result<Part, Bad> {
    let mut bits = Bits::at(data, start);
    let mut ring = Ring::new(from_start);
    let mut last = false;
    let mut members = Vec::new();
    while bits.position() < stop {
        last = block(&mut bits, &mut ring)?;
        if !last {
            continue;
        }
        bits.align();
        let after = (bits.position() / 8) as usize + 8;
        // the trailer, then the data's end: the stream's end (or the
        // part's data's)
        if after > data.len() {
            return Err(Bad::Truncated);
        }
        let rest = &data[after..];
        if rest.is_empty() {
            // past the trailer: `end` counts it
            bits = Bits::at(data, after as u64 * 8);
            break;
        }
        let h = super::member_header(rest).ok_or(Bad::Member)?;
        let t = &data[after - 8..after - 4];
        let crc = u32::from_le_bytes([t[0], t[1], t[2], t[3]]);
        bits = Bits::at(data, (after + h) as u64 * 8);
        ring.floor = Some(ring.pos);
        members.push((bits.position(), ring.written(), crc));
        last = false;
    }
    if exact && !last && bits.position() != stop {
        return Err(Bad::Code);
    }
    Ok(Part {
        len: ring.written(),
        end: bits.position(),
        last,
        window: ring.window(),
        members,
    })
}

/// The window after a part whose window at its end is `syms` and whose
/// window at its start is `before`.
pub fn resolve(syms: &[u16], before: &[u8]) -> Vec<u8> {
    syms.iter()
        .map(|&s| match s.checked_sub(MARKER) {
            Some(i) => before.get(usize::from(i)).copied().unwrap_or(0),
            None => s as u8,
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::test_rng::XorShift as Rng;
    use std::io::Write;

    pub(crate) fn deflate(data: &[u8], level: u32) -> Vec<u8> {
        let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::new(level));
        e.write_all(data).unwrap();
        // room for a gzip trailer after the stream, as `decode_part` wants
        let mut z = e.finish().unwrap();
        z.extend_from_slice(&[0; 8]);
        z
    }

    pub(crate) fn text(rng: &mut Rng, n: usize) -> Vec<u8> {
        let words = [
            "{\"name\":\"MPI_Send\",",
            "\"ph\":\"X\",",
            "\"ts\":",
            "\"dur\":",
            "\"pid\":0,\"tid\":",
            "},\n",
        ];
        let mut out = Vec::with_capacity(n + 64);
        while out.len() < n {
            let w = words[rng.below(words.len() as u64) as usize];
            out.extend_from_slice(w.as_bytes());
            if rng.below(3) == 0 {
                out.extend_from_slice(rng.below(1_000_000).to_string().as_bytes());
            }
        }
        out.truncate(n);
        out
    }

    #[test]
    fn decodes_what_zlib_encodes_at_every_level() {
        let mut rng = Rng(7);
        let noise: Vec<u8> = (0..200_000).map(|_| rng.below(256) as u8).collect();
        let cases = [
            (text(&mut rng, 0), 6),
            (text(&mut rng, 1), 6),
            (text(&mut rng, 1000), 0),
            (text(&mut rng, 70_000), 0),
            (text(&mut rng, 300_000), 1),
            (text(&mut rng, 300_000), 6),
            (text(&mut rng, 300_000), 9),
            (noise, 6),
        ];
        for (data, level) in cases {
            let z = deflate(&data, level);
            let part = decode_part(&z, 0, u64::MAX, false, true).unwrap();
            assert!(part.last);
            assert_eq!(part.len, data.len() as u64, "level {level}");
            let w = resolve(&part.window, &[0u8; WINDOW]);
            let k = data.len().min(WINDOW);
            assert!(w[WINDOW - k..] == data[data.len() - k..], "level {level}");
        }
    }

    #[test]
    fn tables_reject_what_deflate_forbids() {
        // over-subscribed, incomplete, a lone code of length 1
        assert_eq!(Table::new(&[1, 1, 1], false).err(), Some(Bad::Code));
        assert_eq!(Table::new(&[2, 2, 2], false).err(), Some(Bad::Code));
        assert!(Table::new(&[1], true).is_ok());
        assert!(Table::new(&[0, 0], true).is_ok());
        assert_eq!(Table::new(&[2, 2, 2], true).err(), Some(Bad::Code));
        // a 15-bit code goes through a second table
        let mut lens = vec![0u8; 16];
        for (i, l) in lens.iter_mut().enumerate().take(15) {
            *l = i as u8 + 1;
        }
        lens[15] = 15;
        let t = Table::new(&lens, false).unwrap();
        // the code of symbol 15 is fifteen ones
        let data = [0xFF, 0x7F, 0, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(t.decode(&mut Bits::at(&data, 0)), Ok(15));
        let data = [0x00u8; 10];
        assert_eq!(t.decode(&mut Bits::at(&data, 0)), Ok(0));
    }

    #[test]
    fn a_part_decoded_without_its_window_resolves_to_the_bytes() {
        let mut rng = Rng(11);
        let data = text(&mut rng, 2_000_000);
        let z = deflate(&data, 6);
        // the block starts, from decoding the whole
        let mut bits = Bits::at(&z, 0);
        let mut ring = Ring::new(true);
        let mut starts = vec![(0u64, 0u64)];
        while !block(&mut bits, &mut ring).unwrap() {
            starts.push((bits.position(), ring.written()));
        }
        assert!(starts.len() > 8, "{} blocks", starts.len());
        // parts from a third and from two thirds of the blocks
        let (a, b) = (starts[starts.len() / 3], starts[2 * starts.len() / 3]);
        let first = decode_part(&z, 0, a.0, true, true).unwrap();
        assert!(decode_part(&z, 0, a.0 + 3, true, true).is_err());
        assert_eq!((first.len, first.end, first.last), (a.1, a.0, false));
        let second = decode_part(&z, a.0, b.0, true, false).unwrap();
        assert_eq!(second.len, b.1 - a.1);
        let third = decode_part(&z, b.0, u64::MAX, false, false).unwrap();
        assert!(third.last);
        assert_eq!(b.1 + third.len, data.len() as u64);
        let w0 = vec![0u8; WINDOW];
        let w1 = resolve(&first.window, &w0);
        assert_eq!(&w1[..], &data[a.1 as usize - WINDOW..a.1 as usize]);
        let w2 = resolve(&second.window, &w1);
        assert_eq!(&w2[..], &data[b.1 as usize - WINDOW..b.1 as usize]);
        // a part told to end where no block starts says so
        assert!(decode_part(&z, a.0, b.0 + 1, true, false).is_err());
    }

    #[test]
    fn damaged_streams_are_errors_not_panics() {
        let mut rng = Rng(3);
        let data = text(&mut rng, 100_000);
        let z = deflate(&data, 6);
        for cut in [0, 1, 5, z.len() / 2, z.len() - 1] {
            let p = decode_part(&z[..cut], 0, u64::MAX, false, true);
            assert!(p.is_err(), "cut at {cut}");
        }
        for _ in 0..200 {
            let mut d = z.clone();
            let i = rng.below(d.len() as u64) as usize;
            d[i] ^= 1 << rng.below(8);
            let _ = decode_part(&d, 0, u64::MAX, false, true);
            let start = rng.below(d.len() as u64 * 8);
            let _ = decode_part(&d, start, start + 10_000, false, false);
        }
        let noise: Vec<u8> = (0..10_000).map(|_| rng.below(256) as u8).collect();
        for s in 0..64 {
            let _ = decode_part(&noise, s, 80_000, false, false);
        }
    }
}
