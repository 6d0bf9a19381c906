//! Reading a cache directory back into a trace model: each Arrow IPC file
//! is memory-mapped, its record batches decoded in place (no parsing, no
//! copy of the mapped bytes) and their columns copied once into the
//! model's columns, which are then checked against the model's invariants.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    ArrowPrimitiveType, Float64Type, Int64Type, UInt8Type, UInt32Type, UInt64Type,
};
use arrow_array::{Array, RecordBatch};
use arrow_buffer::Buffer;
use arrow_ipc::reader::{FileDecoder, read_footer_length};
use arrow_schema::DataType;
use compact_str::CompactString;
use rayon::prelude::*;

use super::{CacheMeta, META_FILE, Rows, VERSION};
use crate::diagnostics::{Diagnostics, Position, Warning};
use crate::error::{Error, Result};
use crate::model::{
    Collectives, Communicator, CounterDef, Counters, EventTypes, Events, Format, GLOBAL, Group,
    GroupKind, Intervals, LocId, Location, LocationKind, Locations, Messages, StateClass,
    StateTable, Time, TimeUnit, Trace, TraceMeta,
};
use crate::readers::ReadOptions;

/// Whether `dir` is a tapestry cache directory.
pub fn is_cache(dir: &Path) -> bool {
    dir.is_dir() && dir.join(META_FILE).is_file()
}

/// The key a format is saved under in `tapestry.json`.
pub(crate) fn format_key(f: Format) -> &'static str {
    match f {
        Format::ChromeJson => "chrome-json",
        Format::Paraver => "paraver",
        Format::Picl => "picl",
        Format::Otf2 => "otf2",
        Format::Synthetic => "synthetic",
    }
}

fn format_of(key: &str) -> Option<Format> {
    [
        Format::ChromeJson,
        Format::Paraver,
        Format::Picl,
        Format::Otf2,
        Format::Synthetic,
    ]
    .into_iter()
    .find(|&f| format_key(f) == key)
}

/// Reads the metadata of a cache (`tapestry.json`).
pub(crate) fn read_meta(dir: &Path) -> Result<CacheMeta> {
    let p = dir.join(META_FILE);
    let text = crate::readers::input::read_text(&p, 64 << 20)?;
    let meta: CacheMeta = serde_json::from_str(&text).map_err(|e| {
        Error::parse(
            &p,
            Position::line(e.line() as u64),
            format!("not a tapestry cache description: {e}"),
        )
    })?;
    if meta.tapestry_cache != VERSION {
        return Err(Error::parse(
            &p,
            Position::none(),
            format!(
                "a cache of layout version {}; this tapestry reads version {VERSION} \
                 (convert the trace again)",
                meta.tapestry_cache
            ),
        ));
    }
    Ok(meta)
}

/// A slice of a new column and the mapped values it receives.
type CopyJob<'a, N> = (&'a mut [N], &'a [N]);

/// Elements copied by one task when a column is filled.
const COPY_CHUNK: usize = 1 << 18;

/// One table: its file's record batches, decoded over the mapped file.
struct Table {
    path: PathBuf,
    batches: Vec<RecordBatch>,
    rows: usize,
}

fn bad(path: &Path, msg: impl Into<String>) -> Error {
    Error::parse(path, Position::none(), msg)
}

impl Table {
    fn open(dir: &Path, name: &str, expected: u64) -> Result<Table> {
        let path = dir.join(format!("{name}.arrow"));
        let file = std::fs::File::open(&path).map_err(|e| Error::io(&path, e))?;
        let len = file.metadata().map_err(|e| Error::io(&path, e))?.len() as usize;
        const MAGIC: &[u8] = b"ARROW1";
        if len < 2 * 8 + 10 {
            return Err(bad(
                &path,
                format!("{len} bytes: too short for an Arrow IPC file"),
            ));
        }
        // SAFETY: the map is read-only and private to this process; the
        // cache is tapestry's own output, which nothing writes in place
        // (it is replaced by renaming a new directory over it).
        let map = unsafe { memmap2::MmapOptions::new().populate().map(&file) }
            .map_err(|e| Error::io(&path, e))?;
        if map.len() != len || !map.starts_with(MAGIC) || !map.ends_with(MAGIC) {
            return Err(bad(&path, "not an Arrow IPC file (no ARROW1 magic)"));
        }
        let mut tail = [0u8; 10];
        tail.copy_from_slice(&map[len - 10..]);
        let buf = Buffer::from(bytes::Bytes::from_owner(map));
        let footer_len =
            read_footer_length(tail).map_err(|e| bad(&path, format!("bad Arrow footer: {e}")))?;
        let body_end = (len - 10)
            .checked_sub(footer_len)
            .filter(|&e| e >= 8)
            .ok_or_else(|| bad(&path, "the Arrow footer is longer than the file"))?;
        let footer = arrow_ipc::root_as_footer(&buf.as_slice()[body_end..len - 10])
            .map_err(|e| bad(&path, format!("bad Arrow footer: {e}")))?;
        let fb_schema = footer
            .schema()
            .ok_or_else(|| bad(&path, "the Arrow footer has no schema"))?;
        let schema = arrow_ipc::convert::try_fb_to_schema(fb_schema)
            .map_err(|e| bad(&path, format!("bad Arrow schema: {e}")))?;
        if footer.dictionaries().is_some_and(|d| !d.is_empty()) {
            return Err(bad(&path, "dictionary-encoded columns are not expected"));
        }
        let decoder = FileDecoder::new(Arc::new(schema), footer.version());
        let blocks = footer
            .recordBatches()
            .ok_or_else(|| bad(&path, "the Arrow footer lists no record batches"))?;
        let mut batches = Vec::with_capacity(blocks.len());
        let mut rows = 0usize;
        for (i, block) in blocks.iter().enumerate() {
            let span = (|| {
                let off = usize::try_from(block.offset()).ok()?;
                let meta = usize::try_from(block.metaDataLength()).ok()?;
                let body = usize::try_from(block.bodyLength()).ok()?;
                let n = meta.checked_add(body)?;
                (off.checked_add(n)? <= body_end && (8..=n).contains(&meta))
                    .then_some((off, meta, n))
            })();
            let Some((off, meta, n)) = span else {
                return Err(bad(
                    &path,
                    format!("record batch {i} lies outside the file"),
                ));
            };
            let data = buf.slice_with_length(off, n);
            check_message(data.as_slice(), meta)
                .map_err(|m| bad(&path, format!("record batch {i}: {m}")))?;
            let batch = decoder
                .read_record_batch(block, &data)
                .map_err(|e| bad(&path, format!("record batch {i}: {e}")))?
                .ok_or_else(|| bad(&path, format!("record batch {i} is empty")))?;
            rows += batch.num_rows();
            batches.push(batch);
        }
        if rows as u64 != expected {
            return Err(bad(
                &path,
                format!("{rows} rows, but {META_FILE} says {expected}"),
            ));
        }
        Ok(Table {
            path,
            batches,
            rows,
        })
    }

    /// The arrays of column `name` in every batch, checked to be of `ty`.
    fn column(&self, name: &str, ty: &DataType, nullable: bool) -> Result<Vec<&dyn Array>> {
        let mut out = Vec::with_capacity(self.batches.len());
        for b in &self.batches {
            let a = b
                .column_by_name(name)
                .ok_or_else(|| bad(&self.path, format!("no column '{name}'")))?;
            if a.data_type() != ty {
                return Err(bad(
                    &self.path,
                    format!("column '{name}' is {}, expected {ty}", a.data_type()),
                ));
            }
            if !nullable && a.null_count() > 0 {
                return Err(bad(&self.path, format!("column '{name}' has nulls")));
            }
            out.push(a.as_ref());
        }
        Ok(out)
    }

    fn prim<T: ArrowPrimitiveType>(&self, name: &str) -> Result<Vec<T::Native>> {
        crate::memory::guard(
            (self.rows * std::mem::size_of::<T::Native>()) as u64,
            || format!("column '{name}' of {}", self.path.display()),
        )?;
        // zeroed allocation (untouched pages), filled in parallel: the page
        // faults of the new column are spread over every core
        let mut out = vec![T::Native::default(); self.rows];
        // written whole, from end to end: in huge pages where the kernel
        // has them (a 4 KiB page fault per 512 values of 8 bytes was most
        // of the copy)
        crate::memory::prefer_huge_pages(&out);
        let mut rest = out.as_mut_slice();
        let mut jobs: Vec<CopyJob<'_, T::Native>> = Vec::new();
        for a in self.column(name, &T::DATA_TYPE, false)? {
            let src = a.as_primitive::<T>().values().as_ref();
            let (dst, tail) = rest.split_at_mut(src.len());
            rest = tail;
            for (d, s) in dst.chunks_mut(COPY_CHUNK).zip(src.chunks(COPY_CHUNK)) {
                jobs.push((d, s));
            }
        }
        jobs.into_par_iter().for_each(|(d, s)| d.copy_from_slice(s));
        Ok(out)
    }

    fn opt_u32(&self, name: &str) -> Result<Vec<Option<u32>>> {
        let mut out = Vec::with_capacity(self.rows);
        for a in self.column(name, &DataType::UInt32, true)? {
            out.extend(a.as_primitive::<UInt32Type>().iter());
        }
        Ok(out)
    }

    fn strings(&self, name: &str) -> Result<Vec<String>> {
        self.strings_as(name)
    }

    /// A column of text, each value as `S` (a `CompactString` holds a
    /// short name in place).
    fn strings_as<S: for<'s> From<&'s str>>(&self, name: &str) -> Result<Vec<S>> {
        let mut out = Vec::with_capacity(self.rows);
        for a in self.column(name, &DataType::Utf8, false)? {
            out.extend(
                a.as_string::<i32>()
                    .iter()
                    .map(|s| S::from(s.unwrap_or(""))),
            );
        }
        Ok(out)
    }

    fn lists<T>(
        &self,
        name: &str,
        item: DataType,
        get: impl Fn(&dyn Array) -> Vec<T>,
    ) -> Result<Vec<Vec<T>>> {
        let ty = DataType::List(Arc::new(arrow_schema::Field::new("item", item, true)));
        let mut out = Vec::with_capacity(self.rows);
        for a in self.column(name, &ty, false)? {
            let l = a.as_list::<i32>();
            for i in 0..l.len() {
                out.push(get(l.value(i).as_ref()));
            }
        }
        Ok(out)
    }
}

/// Checks what the Arrow decoder takes on trust: every buffer of a record
/// batch message lies inside the batch's body (a damaged length would
/// otherwise stop the process inside the decoder).
fn check_message(data: &[u8], meta: usize) -> std::result::Result<(), String> {
    let m = &data[..meta];
    let fb = if m[..4] == [0xff; 4] {
        &m[8..]
    } else {
        &m[4..]
    };
    let msg = arrow_ipc::root_as_message(fb).map_err(|e| format!("bad message: {e}"))?;
    let body = (data.len() - meta) as i128;
    if let Some(rb) = msg.header_as_record_batch() {
        if rb.compression().is_some() {
            return Err("compressed record batches are not read".into());
        }
        for b in rb.buffers().iter().flatten() {
            let (o, l) = (b.offset() as i128, b.length() as i128);
            if o < 0 || l < 0 || o + l > body {
                return Err(format!(
                    "a buffer at {o} of {l} bytes lies outside the batch's {body} bytes"
                ));
            }
        }
    }
    Ok(())
}

/// The first row of `n` rows for which `bad_row` holds, searched in
/// parallel; the error names it.
fn check_rows(
    path: &Path,
    n: usize,
    what: &str,
    bad_row: impl Fn(usize) -> bool + Sync,
) -> Result<()> {
    const CHUNK: usize = 1 << 16;
    let first = (0..n.div_ceil(CHUNK))
        .into_par_iter()
        .filter_map(|c| (c * CHUNK..((c + 1) * CHUNK).min(n)).find(|&i| bad_row(i)))
        .min();
    match first {
        Some(i) => Err(bad(path, format!("row {i}: {what}"))),
        None => Ok(()),
    }
}

/// CSR offsets (`nloc + 1 + extra` entries) of a location column that must be
/// non-decreasing and below `nloc` (or [`GLOBAL`] when `global` is allowed,
/// after every location).
fn offsets_of(path: &Path, loc: &[LocId], nloc: usize, global: bool) -> Result<Vec<u64>> {
    check_rows(
        path,
        loc.len(),
        "location out of range or out of order",
        |i| {
            let l = loc[i];
            let ok = (l as usize) < nloc || (global && l == GLOBAL);
            !ok || (i > 0 && loc[i - 1] > l)
        },
    )?;
    let buckets = nloc + usize::from(global);
    let mut offsets = vec![0u64; buckets + 1];
    // the column is sorted: each bucket's end is found by binary search
    for (b, o) in offsets.iter_mut().enumerate().skip(1) {
        let key = if global && b == buckets {
            GLOBAL
        } else {
            (b - 1) as LocId
        };
        *o = loc.partition_point(|&l| l <= key) as u64;
    }
    Ok(offsets)
}

/// Reads the cache directory `dir` into a trace model.
pub fn read(dir: &Path, opts: &ReadOptions) -> Result<Trace> {
    let meta = read_meta(dir)?;
    let meta_path = dir.join(META_FILE);
    let r: Rows = meta.rows.clone();
    let format = format_of(&meta.format).ok_or_else(|| {
        bad(
            &meta_path,
            format!("unknown source format '{}'", meta.format),
        )
    })?;
    let span = meta.span_ns;

    // hierarchy
    let t = Table::open(dir, "groups", r.groups)?;
    let (names, kinds, parents) = (
        t.strings_as::<CompactString>("name")?,
        t.strings("kind")?,
        t.opt_u32("parent")?,
    );
    let ng = names.len();
    let mut groups = Vec::with_capacity(ng);
    for (i, ((name, kind), parent)) in names.into_iter().zip(kinds).zip(parents).enumerate() {
        let kind = match kind.as_str() {
            "machine" => GroupKind::Machine,
            "node" => GroupKind::Node,
            "process" => GroupKind::Process,
            k => return Err(bad(&t.path, format!("row {i}: unknown group kind '{k}'"))),
        };
        if parent.is_some_and(|p| p as usize >= ng) {
            return Err(bad(&t.path, format!("row {i}: parent out of range")));
        }
        groups.push(Group { name, kind, parent });
    }
    for i in 0..ng {
        // the hierarchy has no cycle: every chain of parents ends
        let mut at = groups[i].parent;
        for _ in 0..=ng {
            match at {
                Some(p) => at = groups[p as usize].parent,
                None => break,
            }
        }
        if at.is_some() {
            return Err(bad(&t.path, format!("row {i}: the parents form a cycle")));
        }
    }
    drop(t);
    let t = Table::open(dir, "locations", r.locations)?;
    let (names, kinds, grp, ext) = (
        t.strings_as::<CompactString>("name")?,
        t.strings("kind")?,
        t.opt_u32("group")?,
        t.prim::<Int64Type>("external_id")?,
    );
    let mut locations = Vec::with_capacity(names.len());
    for (i, (((name, kind), group), external_id)) in
        names.into_iter().zip(kinds).zip(grp).zip(ext).enumerate()
    {
        let kind = match kind.as_str() {
            "thread" => LocationKind::Thread,
            "stream" => LocationKind::Stream,
            "async" => LocationKind::Async,
            k => {
                return Err(bad(
                    &t.path,
                    format!("row {i}: unknown location kind '{k}'"),
                ));
            }
        };
        if group.is_some_and(|g| g as usize >= ng) {
            return Err(bad(&t.path, format!("row {i}: group out of range")));
        }
        locations.push(Location {
            name,
            kind,
            group,
            external_id,
        });
    }
    let nloc = locations.len();
    if nloc >= GLOBAL as usize {
        return Err(bad(&t.path, "more locations than location ids"));
    }

    // states
    drop(t);
    let t = Table::open(dir, "states", r.states)?;
    let (names, classes, ext) = (
        t.strings("name")?,
        t.strings("class")?,
        t.prim::<Int64Type>("external_id")?,
    );
    let (red, green, blue) = (
        t.prim::<UInt8Type>("red")?,
        t.prim::<UInt8Type>("green")?,
        t.prim::<UInt8Type>("blue")?,
    );
    let tags = t.lists("tags", DataType::Utf8, |a| {
        a.as_string::<i32>()
            .iter()
            .map(|s| s.unwrap_or("").to_string())
            .collect()
    })?;
    let mut states = StateTable::new();
    for (i, name) in names.iter().enumerate() {
        let class = StateClass::parse(&classes[i])
            .ok_or_else(|| bad(&t.path, format!("row {i}: unknown class '{}'", classes[i])))?;
        let id = states.add(name, class, Some([red[i], green[i], blue[i]]), ext[i]);
        if id as usize != i {
            return Err(bad(
                &t.path,
                format!("row {i}: state '{name}' appears twice"),
            ));
        }
        if tags[i].len() > crate::model::MAX_TAGS {
            return Err(bad(
                &t.path,
                format!("row {i}: more than {} tags", crate::model::MAX_TAGS),
            ));
        }
        states.set_tags(id, tags[i].clone());
    }
    let nstates = states.len();

    // intervals
    drop(t);
    let t = Table::open(dir, "intervals", r.intervals)?;
    let loc = t.prim::<UInt32Type>("location")?;
    let offsets = offsets_of(&t.path, &loc, nloc, false)?;
    let (start, end, state) = (
        t.prim::<UInt64Type>("start_ns")?,
        t.prim::<UInt64Type>("end_ns")?,
        t.prim::<UInt32Type>("state")?,
    );
    check_rows(
        &t.path,
        start.len(),
        "an interval that is empty, ends after the span, has an unknown state, or overlaps the previous one",
        |i| {
            start[i] >= end[i]
                || end[i] > span
                || state[i] as usize >= nstates
                || (i > 0 && loc[i - 1] == loc[i] && start[i] < end[i - 1])
        },
    )?;
    drop(loc);
    let intervals = Intervals::from_columns(offsets, start, end, state);

    // events
    drop(t);
    let t = Table::open(dir, "event_types", r.event_types)?;
    let (ext, names) = (t.prim::<Int64Type>("external_id")?, t.strings("name")?);
    let mut event_types = EventTypes::default();
    for (i, (e, n)) in ext.iter().zip(&names).enumerate() {
        if event_types.add(*e, n) as usize != i {
            return Err(bad(
                &t.path,
                format!("row {i}: event type {e} appears twice"),
            ));
        }
    }
    drop(t);
    let t = Table::open(dir, "event_values", r.event_values)?;
    let (ty, val, names) = (
        t.prim::<UInt32Type>("type")?,
        t.prim::<Int64Type>("value")?,
        t.strings("name")?,
    );
    for (i, ((&ty, &v), n)) in ty.iter().zip(&val).zip(&names).enumerate() {
        if ty as usize >= event_types.len() {
            return Err(bad(&t.path, format!("row {i}: event type out of range")));
        }
        event_types.name_value(ty, v, n);
    }
    drop(t);
    let t = Table::open(dir, "events", r.events)?;
    let loc: Vec<LocId> = t
        .opt_u32("location")?
        .into_iter()
        .map(|l| l.unwrap_or(GLOBAL))
        .collect();
    let offsets = offsets_of(&t.path, &loc, nloc, true)?;
    let (time, kind, value) = (
        t.prim::<UInt64Type>("time_ns")?,
        t.prim::<UInt32Type>("type")?,
        t.prim::<Int64Type>("value")?,
    );
    let ntypes = event_types.len();
    check_rows(
        &t.path,
        time.len(),
        "an event after the span, of an unknown type, or before the previous event of its location",
        |i| {
            time[i] > span
                || kind[i] as usize >= ntypes
                || (i > 0 && loc[i - 1] == loc[i] && time[i] < time[i - 1])
        },
    )?;
    drop(loc);
    let events = Events {
        offsets,
        time,
        kind,
        value,
    };

    // messages
    drop(t);
    let t = Table::open(dir, "messages", r.messages)?;
    let messages = Messages {
        sender: t.prim::<UInt32Type>("sender")?,
        receiver: t.prim::<UInt32Type>("receiver")?,
        send_time: t.prim::<UInt64Type>("send_ns")?,
        recv_time: t.prim::<UInt64Type>("recv_ns")?,
        bytes: t.prim::<UInt64Type>("bytes")?,
        tag: t.prim::<Int64Type>("tag")?,
    };
    let m = &messages;
    check_rows(
        &t.path,
        m.len(),
        "a message of an unknown location, after the span, or sent before the previous one",
        |i| {
            m.sender[i] as usize >= nloc
                || m.receiver[i] as usize >= nloc
                || m.send_time[i] > span
                || m.recv_time[i] > span
                || (i > 0 && m.send_time[i] < m.send_time[i - 1])
        },
    )?;

    // counters
    drop(t);
    let t = Table::open(dir, "counter_defs", r.counter_defs)?;
    let defs: Vec<CounterDef> = t
        .strings("name")?
        .into_iter()
        .zip(t.strings("unit")?)
        .map(|(name, unit)| CounterDef { name, unit })
        .collect();
    drop(t);
    let t = Table::open(dir, "counters", r.counters)?;
    let loc = t.prim::<UInt32Type>("location")?;
    let offsets = offsets_of(&t.path, &loc, nloc, false)?;
    let (counter, time, value) = (
        t.prim::<UInt32Type>("counter")?,
        t.prim::<UInt64Type>("time_ns")?,
        t.prim::<Float64Type>("value")?,
    );
    let ndefs = defs.len();
    check_rows(
        &t.path,
        time.len(),
        "a sample of an unknown counter, after the span, or out of (counter, time) order",
        |i| {
            counter[i] as usize >= ndefs
                || time[i] > span
                || (i > 0
                    && loc[i - 1] == loc[i]
                    && (counter[i], time[i]) < (counter[i - 1], time[i - 1]))
        },
    )?;
    drop(loc);
    let counters = Counters {
        defs,
        offsets,
        counter,
        time,
        value,
    };

    // collectives and communicators
    drop(t);
    let t = Table::open(dir, "collective_ops", r.collective_ops)?;
    let ops = t.strings("name")?;
    drop(t);
    let t = Table::open(dir, "collectives", r.collectives)?;
    let collectives = Collectives {
        ops,
        loc: t.prim::<UInt32Type>("location")?,
        begin: t.prim::<UInt64Type>("begin_ns")?,
        end: t.prim::<UInt64Type>("end_ns")?,
        comm: t.prim::<Int64Type>("communicator")?,
        op: t.prim::<UInt32Type>("op")?,
        sent: t.prim::<UInt64Type>("sent")?,
        received: t.prim::<UInt64Type>("received")?,
        root: t.prim::<Int64Type>("root")?,
    };
    let c = &collectives;
    let nops = c.ops.len();
    check_rows(
        &t.path,
        c.len(),
        "a collective of an unknown location or operation, ending before it begins or after the span, or out of order",
        |i| {
            c.loc[i] as usize >= nloc
                || c.op[i] as usize >= nops
                || c.begin[i] > c.end[i]
                || c.end[i] > span
                || (i > 0 && (c.begin[i], c.loc[i]) < (c.begin[i - 1], c.loc[i - 1]))
        },
    )?;
    drop(t);
    let t = Table::open(dir, "communicators", r.communicators)?;
    let (ids, names) = (t.prim::<Int64Type>("id")?, t.strings("name")?);
    let members = t.lists("members", DataType::Int64, |a| {
        a.as_primitive::<Int64Type>().values().to_vec()
    })?;
    let communicators: Vec<Communicator> = ids
        .into_iter()
        .zip(names)
        .zip(members)
        .map(|((id, name), members)| Communicator { id, name, members })
        .collect();

    if opts.strict
        && let Some(w) = meta.warnings.first()
    {
        // the trace needed repairs when it was read: strict refuses it, as
        // it would refuse the trace itself
        return Err(Error::parse(
            Path::new(&w.file),
            Position {
                line: w.line,
                byte: w.byte,
            },
            format!(
                "{} [{}; cached in {}, which was read without --strict]",
                w.message,
                w.kind,
                dir.display()
            ),
        ));
    }
    let mut diagnostics = Diagnostics::new(opts.strict);
    for w in meta.warnings.iter().take(1024) {
        diagnostics.warnings.push(Warning {
            kind: intern_kind(&w.kind),
            count: w.count,
            file: PathBuf::from(&w.file),
            first: Position {
                line: w.line,
                byte: w.byte,
            },
            message: w.message.clone(),
        });
    }
    let mut trace = Trace {
        meta: TraceMeta {
            format,
            source: dir.to_path_buf(),
            time_unit: TimeUnit {
                name: meta.time_unit.clone(),
                ns_per_unit: meta.ns_per_unit.max(1),
            },
            origin_ns: meta.origin_ns,
            span: span as Time,
            ignored: meta.ignored.clone(),
            diagnostics,
        },
        locations: Locations { groups, locations },
        states,
        intervals,
        event_types,
        events,
        messages,
        counters,
        collectives,
        communicators,
    };
    trace.reclassify(&opts.classes)?;
    Ok(trace)
}

/// A warning kind read back: the kinds tapestry writes are static names;
/// an unknown one (a newer tapestry's) is kept once for the process.
fn intern_kind(kind: &str) -> &'static str {
    static KNOWN: crate::static_names::StaticNames =
        crate::static_names::StaticNames::new(64, "cached-warning");
    KNOWN.get(kind)
}
