//! Writing a trace model as a cache directory.

use std::fs::File;
use std::io::BufWriter;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::Arc;

use arrow_array::builder::{Int64Builder, ListBuilder, StringBuilder};
use arrow_array::types::{Float64Type, Int64Type, UInt32Type, UInt64Type};
use arrow_array::{
    ArrayRef, ArrowPrimitiveType, PrimitiveArray, RecordBatch, StringArray, UInt8Array, UInt32Array,
};
use arrow_buffer::{ArrowNativeType, Buffer, ScalarBuffer};
use arrow_ipc::writer::FileWriter;
use arrow_schema::{DataType, Field, Schema};
use rayon::prelude::*;

use super::{BATCH_ROWS, CacheMeta, META_FILE, Rows, VERSION, WarningRec};
use crate::error::{Error, Result};
use crate::model::{GLOBAL, LocId, Trace};

/// One column: its field and how to build the array of a row range.
struct Column<'a> {
    field: Field,
    build: Box<dyn Fn(Range<usize>) -> ArrayRef + Sync + 'a>,
}

fn col<'a>(
    name: &str,
    ty: DataType,
    nullable: bool,
    build: impl Fn(Range<usize>) -> ArrayRef + Sync + 'a,
) -> Column<'a> {
    Column {
        field: Field::new(name, ty, nullable),
        build: Box::new(build),
    }
}

/// An Arrow buffer over the model's own column `v`, not a copy of it:
/// the Arrow writer writes from it straight to the file. (Each batch was
/// copied into a new array first: a sixth of the bytes a write touched.)
///
/// # Safety
/// The buffer borrows `v` without a lifetime: it, and every array made
/// from it, must be dropped while `v` is still borrowed. Only the columns'
/// `build` closures call this, and only [`table`] calls those, which drops
/// each batch's arrays once written, before it returns (the Arrow writer
/// keeps no buffer of a batch after writing it).
unsafe fn borrowed<T: ArrowNativeType>(v: &[T]) -> ScalarBuffer<T> {
    let ptr = NonNull::from(v).cast::<u8>();
    // SAFETY: `ptr` is valid for the slice's bytes for as long as the
    // caller keeps the buffer (the contract above); the owner frees nothing
    let buf =
        unsafe { Buffer::from_custom_allocation(ptr, std::mem::size_of_val(v), Arc::new(())) };
    ScalarBuffer::new(buf, 0, v.len())
}

/// A column of Arrow's primitive type `T`, each batch borrowing `v`.
fn prim<'a, T: ArrowPrimitiveType>(name: &str, v: &'a [T::Native]) -> Column<'a> {
    col(name, T::DATA_TYPE, false, move |r| {
        // SAFETY: called by `table` only (see `borrowed`)
        Arc::new(PrimitiveArray::<T>::new(unsafe { borrowed(&v[r]) }, None))
    })
}
fn u64s<'a>(name: &str, v: &'a [u64]) -> Column<'a> {
    prim::<UInt64Type>(name, v)
}
fn u32s<'a>(name: &str, v: &'a [u32]) -> Column<'a> {
    prim::<UInt32Type>(name, v)
}
fn i64s<'a>(name: &str, v: &'a [i64]) -> Column<'a> {
    prim::<Int64Type>(name, v)
}
fn f64s<'a>(name: &str, v: &'a [f64]) -> Column<'a> {
    prim::<Float64Type>(name, v)
}
fn strs<'a, S: AsRef<str> + Sync>(name: &str, v: &'a [S]) -> Column<'a> {
    col(name, DataType::Utf8, false, move |r| {
        Arc::new(StringArray::from_iter_values(v[r].iter().map(S::as_ref)))
    })
}
fn opt_u32s<'a>(name: &str, v: &'a [Option<u32>]) -> Column<'a> {
    col(name, DataType::UInt32, true, move |r| {
        Arc::new(UInt32Array::from(v[r].to_vec()))
    })
}
/// The location of each row of a CSR table (`offsets[l]..offsets[l+1]`);
/// buckets from `nloc` on (the events' global bucket) are [`GLOBAL`].
fn csr_locations(offsets: &[u64], rows: usize, nloc: usize) -> Vec<LocId> {
    let mut out = Vec::with_capacity(rows);
    for (l, w) in offsets.windows(2).enumerate() {
        let id = if l < nloc { l as LocId } else { GLOBAL };
        out.extend(std::iter::repeat_n(id, (w[1] - w[0]) as usize));
    }
    out.resize(rows, GLOBAL);
    out
}

/// Writes one table: record batches of [`BATCH_ROWS`] rows, each batch's
/// columns built in parallel.
fn table(dir: &Path, name: &str, rows: usize, cols: Vec<Column<'_>>) -> Result<()> {
    let path = dir.join(format!("{name}.arrow"));
    let schema = Arc::new(Schema::new(
        cols.iter().map(|c| c.field.clone()).collect::<Vec<_>>(),
    ));
    let file = File::create(&path).map_err(|e| Error::io(&path, e))?;
    let arrow_err =
        |e: arrow_schema::ArrowError| Error::Invalid(format!("{}: {e}", path.display()));
    let mut w =
        FileWriter::try_new(BufWriter::with_capacity(1 << 20, file), &schema).map_err(arrow_err)?;
    let mut at = 0usize;
    loop {
        let r = at..(at + BATCH_ROWS).min(rows);
        let arrays: Vec<ArrayRef> = cols.par_iter().map(|c| (c.build)(r.clone())).collect();
        let batch = RecordBatch::try_new(schema.clone(), arrays).map_err(arrow_err)?;
        w.write(&batch).map_err(arrow_err)?;
        // the batch's arrays may borrow the model's columns (`borrowed`):
        // dropped here, each time
        drop(batch);
        at = r.end;
        if at >= rows {
            break;
        }
    }
    w.finish().map_err(arrow_err)?;
    let f = w.into_inner().map_err(arrow_err)?;
    f.into_inner()
        .map_err(|e| Error::io(&path, e.into_error()))?;
    Ok(())
}

/// Flushes every file of the directory `dir` to the disk.
fn sync_files(dir: &Path) -> Result<()> {
    for e in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let p = e.map_err(|e| Error::io(dir, e))?.path();
        File::open(&p)
            .and_then(|f| f.sync_all())
            .map_err(|e| Error::io(&p, e))?;
    }
    Ok(())
}

/// Writes `trace` as a cache directory `dest`. The directory is built
/// beside `dest` under a temporary name and renamed into place when
/// complete; an existing cache at `dest` is replaced, anything else there
/// is refused. `inputs` are the trace's files, which are never written.
/// The files are flushed to the disk before the rename.
pub fn write(trace: &Trace, dest: &Path, inputs: &[&Path]) -> Result<()> {
    write_with(trace, dest, inputs, true)
}

/// [`write()`] without flushing to the disk: for a cache read back at once
/// and then removed (the isolated OTF2 reader's hand-over), where the
/// flush is most of the writing's wall time and buys nothing.
pub fn write_transient(trace: &Trace, dest: &Path, inputs: &[&Path]) -> Result<()> {
    write_with(trace, dest, inputs, false)
}

fn write_with(trace: &Trace, dest: &Path, inputs: &[&Path], flush: bool) -> Result<()> {
    crate::export::refuse_inputs(dest, inputs)?;
    let (parent, name, tmp) = crate::export::temporary_beside(dest, "trace.tapestry");
    for inp in inputs {
        // the cache may not be written inside the trace's own files (a
        // directory trace: the OTF2 archive's or TAU's directory)
        if let (Ok(d), Ok(i)) = (parent.canonicalize(), inp.canonicalize())
            && i.is_dir()
            && d.starts_with(&i)
        {
            return Err(Error::Invalid(format!(
                "refusing to write the cache {} inside the input {}",
                dest.display(),
                inp.display()
            )));
        }
    }
    if dest.exists() && !super::is_cache(dest) {
        return Err(Error::Invalid(format!(
            "{} exists and is not a tapestry cache (no {META_FILE}); refusing to replace it",
            dest.display()
        )));
    }
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))?;
    let guard = TmpDir(Some(tmp.clone()));
    write_tables(trace, &tmp)?;
    if flush {
        sync_files(&tmp)?;
    }
    // replace an older cache: move it aside, move the new one in, remove it
    let old = parent.join(format!(".{name}.old-{}", std::process::id()));
    let had_old = dest.exists();
    if had_old {
        std::fs::rename(dest, &old).map_err(|e| Error::io(dest, e))?;
    }
    std::fs::rename(&tmp, dest).map_err(|e| Error::io(dest, e))?;
    guard.keep();
    if had_old {
        let _ = std::fs::remove_dir_all(&old);
    }
    Ok(())
}

/// Removes the temporary directory unless kept.
struct TmpDir(Option<PathBuf>);
impl TmpDir {
    fn keep(mut self) {
        self.0 = None;
    }
}
impl Drop for TmpDir {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = std::fs::remove_dir_all(p);
        }
    }
}

fn write_tables(t: &Trace, dir: &Path) -> Result<()> {
    let mut rows = Rows::default();

    let groups = &t.locations.groups;
    let g_names: Vec<&str> = groups.iter().map(|g| g.name.as_str()).collect();
    let g_kinds: Vec<String> = groups.iter().map(|g| kind_name(&g.kind)).collect();
    let g_parent: Vec<Option<u32>> = groups.iter().map(|g| g.parent).collect();
    rows.groups = groups.len() as u64;
    table(
        dir,
        "groups",
        groups.len(),
        vec![
            strs("name", &g_names),
            strs("kind", &g_kinds),
            opt_u32s("parent", &g_parent),
        ],
    )?;

    let locs = &t.locations.locations;
    let l_names: Vec<&str> = locs.iter().map(|l| l.name.as_str()).collect();
    let l_kinds: Vec<String> = locs.iter().map(|l| kind_name(&l.kind)).collect();
    let l_group: Vec<Option<u32>> = locs.iter().map(|l| l.group).collect();
    let l_ext: Vec<i64> = locs.iter().map(|l| l.external_id).collect();
    rows.locations = locs.len() as u64;
    table(
        dir,
        "locations",
        locs.len(),
        vec![
            strs("name", &l_names),
            strs("kind", &l_kinds),
            opt_u32s("group", &l_group),
            i64s("external_id", &l_ext),
        ],
    )?;

    let states: Vec<_> = t.states.iter().map(|(_, s)| s).collect();
    let s_names: Vec<String> = states.iter().map(|s| s.name.clone()).collect();
    let s_class: Vec<String> = states.iter().map(|s| s.class.name().to_string()).collect();
    let rgb: [Vec<u8>; 3] =
        std::array::from_fn(|c| states.iter().map(|s| s.color[c]).collect::<Vec<u8>>());
    let s_ext: Vec<i64> = states.iter().map(|s| s.external_id).collect();
    let s_tags: Vec<&[String]> = states.iter().map(|s| s.tags.as_slice()).collect();
    rows.states = states.len() as u64;
    let u8s = |name: &str, v: &'_ [u8]| {
        let v = v.to_vec();
        col(name, DataType::UInt8, false, move |r| {
            Arc::new(UInt8Array::from(v[r].to_vec()))
        })
    };
    table(
        dir,
        "states",
        states.len(),
        vec![
            strs("name", &s_names),
            strs("class", &s_class),
            u8s("red", &rgb[0]),
            u8s("green", &rgb[1]),
            u8s("blue", &rgb[2]),
            i64s("external_id", &s_ext),
            col(
                "tags",
                DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
                false,
                |r| {
                    let mut b = ListBuilder::new(StringBuilder::new());
                    for tags in &s_tags[r] {
                        for tag in tags.iter() {
                            b.values().append_value(tag);
                        }
                        b.append(true);
                    }
                    Arc::new(b.finish())
                },
            ),
        ],
    )?;

    let iv = &t.intervals;
    let iv_loc = csr_locations(&iv.offsets, iv.len(), locs.len());
    rows.intervals = iv.len() as u64;
    table(
        dir,
        "intervals",
        iv.len(),
        vec![
            u32s("location", &iv_loc),
            u64s("start_ns", &iv.start),
            u64s("end_ns", &iv.end),
            u32s("state", &iv.state),
        ],
    )?;
    drop(iv_loc);

    let types: Vec<_> = t.event_types.iter().collect();
    let et_ext: Vec<i64> = types.iter().map(|e| e.external_id).collect();
    let et_name: Vec<String> = types.iter().map(|e| e.name.clone()).collect();
    let mut ev_type = Vec::new();
    let mut ev_value = Vec::new();
    let mut ev_name = Vec::new();
    for (i, e) in types.iter().enumerate() {
        for (v, n) in &e.values {
            ev_type.push(i as u32);
            ev_value.push(*v);
            ev_name.push(n.clone());
        }
    }
    rows.event_types = types.len() as u64;
    rows.event_values = ev_type.len() as u64;
    table(
        dir,
        "event_types",
        types.len(),
        vec![i64s("external_id", &et_ext), strs("name", &et_name)],
    )?;
    table(
        dir,
        "event_values",
        ev_type.len(),
        vec![
            u32s("type", &ev_type),
            i64s("value", &ev_value),
            strs("name", &ev_name),
        ],
    )?;

    let ev = &t.events;
    let ev_loc = csr_locations(&ev.offsets, ev.len(), locs.len());
    rows.events = ev.len() as u64;
    table(
        dir,
        "events",
        ev.len(),
        vec![
            col("location", DataType::UInt32, true, |r| {
                Arc::new(UInt32Array::from_iter(
                    ev_loc[r].iter().map(|&l| (l != GLOBAL).then_some(l)),
                ))
            }),
            u64s("time_ns", &ev.time),
            u32s("type", &ev.kind),
            i64s("value", &ev.value),
        ],
    )?;
    drop(ev_loc);

    let m = &t.messages;
    rows.messages = m.len() as u64;
    table(
        dir,
        "messages",
        m.len(),
        vec![
            u32s("sender", &m.sender),
            u32s("receiver", &m.receiver),
            u64s("send_ns", &m.send_time),
            u64s("recv_ns", &m.recv_time),
            u64s("bytes", &m.bytes),
            i64s("tag", &m.tag),
        ],
    )?;

    let c = &t.counters;
    let cd_name: Vec<String> = c.defs.iter().map(|d| d.name.clone()).collect();
    let cd_unit: Vec<String> = c.defs.iter().map(|d| d.unit.clone()).collect();
    rows.counter_defs = c.defs.len() as u64;
    table(
        dir,
        "counter_defs",
        c.defs.len(),
        vec![strs("name", &cd_name), strs("unit", &cd_unit)],
    )?;
    let c_loc = csr_locations(&c.offsets, c.len(), locs.len());
    rows.counters = c.len() as u64;
    table(
        dir,
        "counters",
        c.len(),
        vec![
            u32s("location", &c_loc),
            u32s("counter", &c.counter),
            u64s("time_ns", &c.time),
            f64s("value", &c.value),
        ],
    )?;

    let k = &t.collectives;
    rows.collective_ops = k.ops.len() as u64;
    table(
        dir,
        "collective_ops",
        k.ops.len(),
        vec![strs("name", &k.ops)],
    )?;
    rows.collectives = k.len() as u64;
    table(
        dir,
        "collectives",
        k.len(),
        vec![
            u32s("location", &k.loc),
            u64s("begin_ns", &k.begin),
            u64s("end_ns", &k.end),
            i64s("communicator", &k.comm),
            u32s("op", &k.op),
            u64s("sent", &k.sent),
            u64s("received", &k.received),
            i64s("root", &k.root),
        ],
    )?;

    let comms = &t.communicators;
    let cm_id: Vec<i64> = comms.iter().map(|c| c.id).collect();
    let cm_name: Vec<String> = comms.iter().map(|c| c.name.clone()).collect();
    rows.communicators = comms.len() as u64;
    table(
        dir,
        "communicators",
        comms.len(),
        vec![
            i64s("id", &cm_id),
            strs("name", &cm_name),
            col(
                "members",
                DataType::List(Arc::new(Field::new("item", DataType::Int64, true))),
                false,
                |r| {
                    let mut b = ListBuilder::new(Int64Builder::new());
                    for c in &comms[r] {
                        b.values().append_slice(&c.members);
                        b.append(true);
                    }
                    Arc::new(b.finish())
                },
            ),
        ],
    )?;

    let (source_bytes, source_mtime_ns) = super::source_stamp(&t.meta.source);
    let meta = CacheMeta {
        tapestry_cache: VERSION,
        format: super::read::format_key(t.meta.format).to_string(),
        source: t.meta.source.display().to_string(),
        source_bytes,
        source_mtime_ns,
        time_unit: t.meta.time_unit.name.clone(),
        ns_per_unit: t.meta.time_unit.ns_per_unit,
        origin_ns: t.meta.origin_ns,
        span_ns: t.meta.span,
        ignored: t.meta.ignored.clone(),
        warnings: t
            .meta
            .diagnostics
            .warnings
            .iter()
            .map(|w| WarningRec {
                kind: w.kind.to_string(),
                count: w.count,
                file: w.file.display().to_string(),
                line: w.first.line,
                byte: w.first.byte,
                message: w.message.clone(),
            })
            .collect(),
        rows,
    };
    let json = serde_json::to_vec_pretty(&meta).map_err(|e| Error::Invalid(e.to_string()))?;
    let p = dir.join(META_FILE);
    std::fs::write(&p, json).map_err(|e| Error::io(&p, e))
}

fn kind_name<T: serde::Serialize>(k: &T) -> String {
    serde_json::to_value(k)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}
