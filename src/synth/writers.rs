//! Trace writers for simulated runs: Paraver (`.prv` + `.pcf` + `.row`) and
//! Chrome JSON, streamed to disk; and a sink that builds the model directly.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::sink::{Layout, PHASES, Record, RecordSink, SimEvent, SimState};
use crate::error::{Error, Result};
use crate::export::AtomicFile;
use crate::model::{
    BuildOptions, Format, GroupKind, LocId, LocationKind, StateClass, Time, TimeUnit, Trace,
    TraceBuilder,
};

/// A Paraver record's object and time after its kind: `T:1:T:1:TIME`
/// (application 1, the location's task and its one thread, numbered from
/// 1).
fn push_thread_at(b: &mut Vec<u8>, loc: LocId, time: Time) {
    let t = u64::from(loc) + 1;
    push_u64(b, t);
    b.extend_from_slice(b":1:");
    push_u64(b, t);
    b.extend_from_slice(b":1:");
    push_u64(b, time);
}

/// A sample of `expected` counters has as many values.
fn counts_match(expected: usize, values: &[i64]) -> Result<()> {
    if expected == values.len() {
        return Ok(());
    }
    Err(Error::Invalid(format!(
        "{} counter value(s) for the {} counter(s) of the layout",
        values.len(),
        expected
    )))
}

fn push_u64(buf: &mut Vec<u8>, v: u64) {
    buf.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}
fn push_i64(buf: &mut Vec<u8>, v: i64) {
    buf.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// Where an output's bytes go: the file, or (a `.gz` name) a thread that
/// compresses them while the simulation goes on.
enum Sink {
    Plain(AtomicFile),
    /// The first block sent is written as it is (a prefix, possibly
    /// empty); the others are compressed.
    Gzip {
        blocks: std::sync::mpsc::SyncSender<Vec<u8>>,
        done: std::thread::JoinHandle<std::io::Result<AtomicFile>>,
        prefix_sent: bool,
    },
}

/// A buffered output file, written atomically (see [`AtomicFile`]);
/// gzip-compressed when its name ends in `.gz`.
struct Out {
    path: PathBuf,
    file: Option<Sink>,
    buf: Vec<u8>,
    /// Bytes of the buffer that trigger a write.
    block: usize,
    /// Whether bytes have gone to the file (or its compressor).
    started: bool,
}

/// A gzip member holding `data` stored (not compressed), so that bytes of
/// it can be patched in place later, with the offset of `data` in it (the
/// member's CRC then needs patching too: its last 8 bytes are the CRC-32
/// and the length).
fn stored_gzip_member(data: &[u8]) -> std::io::Result<(Vec<u8>, usize)> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::none());
    e.write_all(data)?;
    let member = e.finish()?;
    let at = member
        .windows(data.len().max(1))
        .position(|w| w == data)
        .ok_or_else(|| std::io::Error::other("a stored gzip block did not keep its bytes"))?;
    Ok((member, at))
}

impl Out {
    fn create(path: &Path) -> Result<Self> {
        let file = AtomicFile::create(path, &[])?;
        let gz = path.extension().is_some_and(|e| e == "gz");
        let file = if gz {
            // records are compressed in 1 MiB blocks by a thread of their own
            let (blocks, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(4);
            let done = std::thread::spawn(move || {
                let mut file = file;
                let mut rx = rx.into_iter();
                if let Some(prefix) = rx.next() {
                    file.write_all(&prefix)?;
                }
                // level 2, not 1: zlib-rs writes level 1 as blocks of fixed
                // codes a reader cannot find its way into, level 2 as
                // blocks of dynamic codes (`readers::gzip_index` finds
                // them, so the processes of `reduce` share the file), 30 %
                // smaller at 1.4 times the time
                let mut e = flate2::write::GzEncoder::new(file, flate2::Compression::new(2));
                for b in rx {
                    e.write_all(&b)?;
                }
                e.finish()
            });
            Sink::Gzip {
                blocks,
                done,
                prefix_sent: false,
            }
        } else {
            Sink::Plain(file)
        };
        Ok(Out {
            path: path.to_path_buf(),
            file: Some(file),
            buf: Vec::with_capacity(1 << 20),
            block: if gz { 1 << 20 } else { 1 << 16 },
            started: false,
        })
    }

    fn finished(&self) -> Error {
        Error::Invalid(format!("{} was already finished", self.path.display()))
    }

    /// Why the compressing thread stopped (it hung up): its error.
    fn compressor_error(&mut self) -> Error {
        match self.file.take() {
            Some(Sink::Gzip { blocks, done, .. }) => {
                drop(blocks);
                match done.join() {
                    Ok(Err(e)) => Error::io(&self.path, e),
                    _ => Error::Invalid(format!("compressing {} failed", self.path.display())),
                }
            }
            _ => self.finished(),
        }
    }

    /// Writes the buffer out.
    fn flush(&mut self) -> Result<()> {
        let path = self.path.clone();
        self.started |= !self.buf.is_empty();
        match self.file.as_mut() {
            Some(Sink::Plain(f)) => {
                f.write_all(&self.buf).map_err(|e| Error::io(path, e))?;
                self.buf.clear();
            }
            Some(Sink::Gzip {
                blocks,
                prefix_sent,
                ..
            }) => {
                if self.buf.is_empty() {
                    return Ok(());
                }
                let mut sent = true;
                if !*prefix_sent {
                    sent = blocks.send(Vec::new()).is_ok();
                    *prefix_sent = true;
                }
                let full = std::mem::replace(&mut self.buf, Vec::with_capacity(self.block));
                if !sent || blocks.send(full).is_err() {
                    return Err(self.compressor_error());
                }
            }
            None => return Err(self.finished()),
        }
        Ok(())
    }

    /// Writes the buffer out once it is large.
    fn flush_if_full(&mut self) -> Result<()> {
        if self.buf.len() >= self.block {
            self.flush()
        } else {
            Ok(())
        }
    }

    /// Writes `bytes` as they are, before anything else has been written:
    /// in a `.gz` file as a stored gzip member of its own. Returns where
    /// they lie in the file and, for `.gz`, where the member's CRC is.
    fn write_patchable(&mut self, bytes: &[u8]) -> Result<(u64, Option<u64>)> {
        let path = self.path.clone();
        if self.started || !self.buf.is_empty() {
            return Err(Error::Invalid(format!(
                "{}: a patchable prefix comes first",
                path.display()
            )));
        }
        match self.file.as_mut() {
            Some(Sink::Plain(_)) => {
                self.buf.extend_from_slice(bytes);
                Ok((0, None))
            }
            Some(Sink::Gzip {
                blocks,
                prefix_sent,
                ..
            }) => {
                let (member, at) = stored_gzip_member(bytes).map_err(|e| Error::io(&path, e))?;
                let crc_at = member.len() as u64 - 8;
                *prefix_sent = true;
                self.started = true;
                if blocks.send(member).is_err() {
                    return Err(self.compressor_error());
                }
                Ok((at as u64, Some(crc_at)))
            }
            None => Err(self.finished()),
        }
    }

    /// Flushes and makes the file appear; returns it for a last patch.
    fn finish(&mut self) -> Result<AtomicFile> {
        self.flush()?;
        let path = self.path.clone();
        match self.file.take() {
            Some(Sink::Plain(f)) => Ok(f),
            Some(Sink::Gzip { blocks, done, .. }) => {
                drop(blocks);
                done.join()
                    .map_err(|_| Error::Invalid(format!("compressing {} failed", path.display())))?
                    .map_err(|e| Error::io(&path, e))
            }
            None => Err(self.finished()),
        }
    }
}

impl Drop for Out {
    /// An output dropped unfinished (an error) waits for its compressing
    /// thread, which drops the unfinished file (removing its temporary).
    fn drop(&mut self) {
        if let Some(Sink::Gzip { blocks, done, .. }) = self.file.take() {
            drop(blocks);
            let _ = done.join();
        }
    }
}

fn nodes(layout: &Layout) -> u32 {
    layout.procs.div_ceil(layout.procs_per_node.max(1))
}

/// Writes a Paraver trace; `.pcf` and `.row` are written beside it.
pub struct ParaverWriter {
    out: Out,
    /// Where the header's end time lies in the file.
    end_offset: u64,
    /// The header, and where the CRC of its stored gzip member lies (a
    /// `.prv.gz` file: the end time is patched, then the CRC).
    header: Vec<u8>,
    header_end_at: usize,
    header_crc_at: Option<u64>,
    layout: Option<Layout>,
}

impl ParaverWriter {
    pub fn create(path: &Path) -> Result<Self> {
        Ok(ParaverWriter {
            out: Out::create(path)?,
            end_offset: 0,
            header: Vec::new(),
            header_end_at: 0,
            header_crc_at: None,
            layout: None,
        })
    }

    fn sibling(&self, ext: &str) -> PathBuf {
        // x.prv and x.prv.gz: x.pcf, x.row (where the reader looks)
        let name = self
            .out
            .path
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let stem = name.strip_suffix(".gz").unwrap_or(&name);
        let stem = stem.strip_suffix(".prv").unwrap_or(stem);
        self.out.path.with_file_name(format!("{stem}.{ext}"))
    }

    fn pcf(layout: &Layout) -> String {
        let mut s = String::from(
            "DEFAULT_OPTIONS\n\nLEVEL               THREAD\nUNITS               NANOSEC\nLOOK_BACK           100\nSPEED               1\nFLAG_ICONS          ENABLED\n\n\nSTATES\n",
        );
        for st in SimState::ALL {
            s.push_str(&format!("{}    {}\n", st.paraver_id(), st.name()));
        }
        s.push_str("\n\nSTATES_COLOR\n");
        for st in SimState::ALL {
            let [r, g, b] = st.color();
            s.push_str(&format!("{}    {{{r},{g},{b}}}\n", st.paraver_id()));
        }
        s.push_str("\n\nEVENT_TYPE\n");
        s.push_str(&format!(
            "0    {}    {}\nVALUES\n",
            SimEvent::Phase.paraver_type(),
            SimEvent::Phase.name()
        ));
        for (v, n) in PHASES {
            s.push_str(&format!("{v}      {n}\n"));
        }
        s.push_str(&format!(
            "\n\nEVENT_TYPE\n0    {}    {}\n\n",
            SimEvent::Iteration.paraver_type(),
            SimEvent::Iteration.name()
        ));
        // the hardware counters, as Extrae names them
        if !layout.counters.is_empty() {
            s.push_str("\nEVENT_TYPE\n");
            for c in &layout.counters {
                s.push_str(&format!(
                    "7  {}    {} ({})\n",
                    c.paraver_type, c.description, c.name
                ));
            }
            s.push('\n');
        }
        s
    }

    fn row(layout: &Layout) -> String {
        let mut s = String::new();
        let n = nodes(layout);
        s.push_str(&format!("LEVEL NODE SIZE {n}\n"));
        for i in 0..n {
            s.push_str(&format!("node {i}\n"));
        }
        for level in ["TASK", "THREAD"] {
            s.push_str(&format!("\nLEVEL {level} SIZE {}\n", layout.procs));
            for r in 0..layout.procs {
                s.push_str(&format!("rank {r}\n"));
            }
        }
        s
    }
}

impl RecordSink for ParaverWriter {
    fn begin(&mut self, layout: &Layout) -> Result<()> {
        let n = nodes(layout);
        let ppn = layout.procs_per_node.max(1);
        let mut h = String::from("#Paraver (01/01/70 at 00:00):");
        let end_at = h.len() as u64;
        h.push_str(&format!("{:020}_ns:", 0));
        let cpus: Vec<String> = (0..n)
            .map(|i| (ppn.min(layout.procs - i * ppn)).to_string())
            .collect();
        h.push_str(&format!("{n}({}):1:{}(", cpus.join(","), layout.procs));
        let tasks: Vec<String> = (0..layout.procs)
            .map(|r| format!("1:{}", r / ppn + 1))
            .collect();
        h.push_str(&tasks.join(","));
        h.push_str(")\n");
        // the header up to its end time is written patchable (a stored
        // gzip member of its own in a .gz file), the rest as records are
        let h = h.into_bytes();
        let cut = end_at as usize + 20;
        let (at, crc_at) = self.out.write_patchable(&h[..cut])?;
        self.out.buf.extend_from_slice(&h[cut..]);
        self.end_offset = at + end_at;
        self.header_crc_at = crc_at;
        self.header = h[..cut].to_vec();
        self.header_end_at = end_at as usize;
        self.layout = Some(layout.clone());
        Ok(())
    }

    fn record(&mut self, r: &Record) -> Result<()> {
        let b = &mut self.out.buf;
        match *r {
            Record::State {
                loc,
                start,
                end,
                state,
            } => {
                b.extend_from_slice(b"1:");
                push_thread_at(b, loc, start);
                b.push(b':');
                push_u64(b, end);
                b.push(b':');
                push_u64(b, state.paraver_id() as u64);
            }
            Record::Message {
                src,
                dst,
                send,
                recv,
                bytes,
                tag,
            } => {
                b.extend_from_slice(b"3:");
                push_thread_at(b, src, send);
                b.push(b':');
                push_u64(b, send);
                b.push(b':');
                push_thread_at(b, dst, recv);
                b.push(b':');
                push_u64(b, recv);
                b.push(b':');
                push_u64(b, bytes);
                b.push(b':');
                push_i64(b, tag);
            }
            Record::Event {
                loc,
                time,
                kind,
                value,
            } => {
                b.extend_from_slice(b"2:");
                push_thread_at(b, loc, time);
                b.push(b':');
                push_u64(b, kind.paraver_type() as u64);
                b.push(b':');
                push_i64(b, value);
            }
        }
        b.push(b'\n');
        self.out.flush_if_full()?;
        Ok(())
    }

    fn counters(&mut self, loc: LocId, time: Time, values: &[i64]) -> Result<()> {
        let types = self.layout.as_ref().map_or(&[][..], |l| &l.counters[..]);
        counts_match(types.len(), values)?;
        // one event record of type-value pairs, as Extrae writes them
        let b = &mut self.out.buf;
        b.extend_from_slice(b"2:");
        push_thread_at(b, loc, time);
        for (c, &v) in types.iter().zip(values) {
            b.push(b':');
            push_u64(b, u64::from(c.paraver_type));
            b.push(b':');
            push_i64(b, v);
        }
        b.push(b'\n');
        self.out.flush_if_full()
    }

    fn finish(&mut self, end: Time) -> Result<()> {
        let path = self.out.path.clone();
        let mut file = self.out.finish()?;
        let digits = format!("{end:020}");
        file.patch_at(self.end_offset, digits.as_bytes())
            .map_err(|e| Error::io(&path, e))?;
        if let Some(crc_at) = self.header_crc_at {
            // the stored member's CRC-32, of the header as patched
            let mut h = std::mem::take(&mut self.header);
            if let Some(d) = h.get_mut(self.header_end_at..self.header_end_at + digits.len()) {
                d.copy_from_slice(digits.as_bytes());
            }
            let mut crc = flate2::Crc::new();
            crc.update(&h);
            file.patch_at(crc_at, &crc.sum().to_le_bytes())
                .map_err(|e| Error::io(&path, e))?;
        }
        file.commit()?;
        let layout = self
            .layout
            .clone()
            .ok_or_else(|| Error::Invalid("no layout given".into()))?;
        crate::export::write_atomic(&self.sibling("pcf"), Self::pcf(&layout).as_bytes(), &[])?;
        crate::export::write_atomic(&self.sibling("row"), Self::row(&layout).as_bytes(), &[])?;
        Ok(())
    }
}

/// Writes Chrome Trace Event JSON, one event per line.
pub struct ChromeWriter {
    out: Out,
    description: String,
    flow_id: u64,
    /// The hardware counters' argument names (their PAPI names without
    /// the prefix: the model names them `PAPI.TOT_INS` and so on).
    counters: Vec<&'static str>,
}

fn push_us(b: &mut Vec<u8>, ns: u64) {
    push_u64(b, ns / 1000);
    let f = ns % 1000;
    if f != 0 {
        b.push(b'.');
        b.extend_from_slice(format!("{f:03}").as_bytes());
    }
}

impl ChromeWriter {
    pub fn create(path: &Path) -> Result<Self> {
        Ok(ChromeWriter {
            out: Out::create(path)?,
            description: String::new(),
            flow_id: 0,
            counters: Vec::new(),
        })
    }

    fn head(&mut self, ph: &str, loc: u32, time: Time) {
        let b = &mut self.out.buf;
        b.extend_from_slice(b",\n{\"ph\":\"");
        b.extend_from_slice(ph.as_bytes());
        b.extend_from_slice(b"\",\"pid\":");
        push_u64(b, loc as u64);
        b.extend_from_slice(b",\"tid\":");
        push_u64(b, loc as u64);
        b.extend_from_slice(b",\"ts\":");
        push_us(b, time);
    }
}

impl RecordSink for ChromeWriter {
    fn begin(&mut self, layout: &Layout) -> Result<()> {
        self.description = layout.description.clone();
        self.counters = layout
            .counters
            .iter()
            .map(|c| chrome_counter_arg(c.name))
            .collect();
        self.out.buf.extend_from_slice(b"{\"traceEvents\":[\n");
        self.out.buf.extend_from_slice(b"{\"ph\":\"M\",\"pid\":0,\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":\"rank 0\"}}");
        for r in 0..layout.procs {
            if r > 0 {
                self.out.buf.extend_from_slice(
                    format!(",\n{{\"ph\":\"M\",\"pid\":{r},\"tid\":{r},\"name\":\"process_name\",\"args\":{{\"name\":\"rank {r}\"}}}}").as_bytes(),
                );
            }
            self.out.buf.extend_from_slice(
                format!(",\n{{\"ph\":\"M\",\"pid\":{r},\"tid\":{r},\"name\":\"thread_name\",\"args\":{{\"name\":\"rank {r}\"}}}}").as_bytes(),
            );
            self.out.flush_if_full()?;
        }
        Ok(())
    }

    fn record(&mut self, r: &Record) -> Result<()> {
        match *r {
            Record::State {
                loc,
                start,
                end,
                state,
            } => {
                self.head("X", loc, start);
                let b = &mut self.out.buf;
                b.extend_from_slice(b",\"dur\":");
                push_us(b, end - start);
                b.extend_from_slice(b",\"name\":\"");
                b.extend_from_slice(state.name().as_bytes());
                b.extend_from_slice(b"\",\"cat\":\"");
                b.extend_from_slice(state.category().as_bytes());
                b.extend_from_slice(b"\"}");
            }
            Record::Message {
                src,
                dst,
                send,
                recv,
                bytes,
                tag,
            } => {
                self.flow_id += 1;
                let id = self.flow_id;
                self.head("s", src, send);
                let b = &mut self.out.buf;
                b.extend_from_slice(b",\"name\":\"message\",\"cat\":\"message\",\"id\":");
                push_u64(b, id);
                b.extend_from_slice(b",\"args\":{\"bytes\":");
                push_u64(b, bytes);
                b.extend_from_slice(b",\"tag\":");
                push_i64(b, tag);
                b.extend_from_slice(b"}}");
                self.head("f", dst, recv);
                let b = &mut self.out.buf;
                b.extend_from_slice(
                    b",\"bp\":\"e\",\"name\":\"message\",\"cat\":\"message\",\"id\":",
                );
                push_u64(b, id);
                b.push(b'}');
            }
            Record::Event {
                loc,
                time,
                kind,
                value,
            } => {
                self.head("i", loc, time);
                let b = &mut self.out.buf;
                b.extend_from_slice(b",\"s\":\"t\",\"name\":\"");
                b.extend_from_slice(kind.name().as_bytes());
                b.extend_from_slice(b"\",\"args\":{\"value\":");
                push_i64(b, value);
                b.extend_from_slice(b"}}");
            }
        }
        self.out.flush_if_full()?;
        Ok(())
    }

    fn counters(&mut self, loc: LocId, time: Time, values: &[i64]) -> Result<()> {
        counts_match(self.counters.len(), values)?;
        // one counter event, an argument a counter (a series each)
        self.head("C", loc, time);
        let b = &mut self.out.buf;
        b.extend_from_slice(b",\"name\":\"");
        b.extend_from_slice(CHROME_COUNTER_EVENT.as_bytes());
        b.extend_from_slice(b"\",\"args\":{");
        for (i, (name, &v)) in self.counters.iter().zip(values).enumerate() {
            if i > 0 {
                b.push(b',');
            }
            b.push(b'"');
            b.extend_from_slice(name.as_bytes());
            b.extend_from_slice(b"\":");
            push_i64(b, v);
        }
        b.extend_from_slice(b"}}");
        self.out.flush_if_full()
    }

    fn finish(&mut self, _end: Time) -> Result<()> {
        let desc = serde_json::to_string(&self.description).unwrap_or_else(|_| "\"\"".into());
        self.out.buf.extend_from_slice(
            format!("\n],\"displayTimeUnit\":\"ns\",\"otherData\":{{\"generator\":\"tapestry synth\",\"workload\":{desc}}}}}\n")
                .as_bytes(),
        );
        self.out.finish()?.commit()
    }
}

/// The name of the Chrome counter event that holds the hardware counters.
const CHROME_COUNTER_EVENT: &str = "PAPI";

/// A hardware counter's argument in that event: its PAPI name without the
/// prefix.
fn chrome_counter_arg(name: &'static str) -> &'static str {
    name.strip_prefix("PAPI_").unwrap_or(name)
}

/// The name a hardware counter has in the model of a Chrome trace (and of
/// [`ModelSink`]): the event's name, a dot, the argument's.
pub fn chrome_counter_name(name: &'static str) -> String {
    format!("{CHROME_COUNTER_EVENT}.{}", chrome_counter_arg(name))
}

/// Builds the model directly from the records, as the readers would build it
/// from the files (the reference of the round-trip tests).
pub struct ModelSink {
    builder: Option<TraceBuilder>,
    trace: Option<Trace>,
    /// The builder's numbers of the hardware counters.
    counter_ids: Vec<u32>,
}

impl Default for ModelSink {
    fn default() -> Self {
        Self::new()
    }
}

impl ModelSink {
    pub fn new() -> Self {
        ModelSink {
            builder: Some(TraceBuilder::new(
                Format::Synthetic,
                "",
                TimeUnit::nanoseconds(),
                false,
            )),
            trace: None,
            counter_ids: Vec::new(),
        }
    }

    /// The trace, once [`RecordSink::finish`] has run.
    pub fn into_trace(self) -> Result<Trace> {
        self.trace
            .ok_or_else(|| Error::Invalid("the simulation did not finish".into()))
    }

    fn b(&mut self) -> Result<&mut TraceBuilder> {
        unfinished(&mut self.builder)
    }
}

impl RecordSink for ModelSink {
    fn begin(&mut self, layout: &Layout) -> Result<()> {
        let b = self.b()?;
        let ppn = layout.procs_per_node.max(1);
        let nodes: Vec<u32> = (0..nodes(layout))
            .map(|i| {
                b.locations
                    .add_group(format!("node {i}"), GroupKind::Node, None)
            })
            .collect();
        for r in 0..layout.procs {
            let g = b.locations.add_group(
                format!("rank {r}"),
                GroupKind::Process,
                Some(nodes[(r / ppn) as usize]),
            );
            b.locations
                .add(format!("rank {r}"), LocationKind::Thread, Some(g), r as i64);
        }
        for st in SimState::ALL {
            let class = if st == SimState::Running {
                StateClass::Busy
            } else {
                StateClass::Overhead
            };
            b.states
                .add(st.name(), class, Some(st.color()), st.paraver_id() as i64);
        }
        for ev in SimEvent::ALL {
            b.event_types.add(ev.paraver_type() as i64, ev.name());
        }
        // the hardware counters as a Chrome trace's model has them
        self.counter_ids = layout
            .counters
            .iter()
            .map(|c| b.counter_def(&chrome_counter_name(c.name), ""))
            .collect();
        Ok(())
    }

    fn counters(&mut self, loc: LocId, time: Time, values: &[i64]) -> Result<()> {
        counts_match(self.counter_ids.len(), values)?;
        // (the builder beside the counters' numbers: not through `b()`)
        let b = unfinished(&mut self.builder)?;
        for (&c, &v) in self.counter_ids.iter().zip(values) {
            b.counter(loc, c, time, v as f64);
        }
        Ok(())
    }

    fn record(&mut self, r: &Record) -> Result<()> {
        let b = self.b()?;
        match *r {
            Record::State {
                loc,
                start,
                end,
                state,
            } => {
                let s = SimState::ALL.iter().position(|x| *x == state).unwrap_or(0) as u32;
                b.interval(loc, start, end, s);
            }
            Record::Message {
                src,
                dst,
                send,
                recv,
                bytes,
                tag,
            } => b.message(src, dst, send, recv, bytes, tag),
            Record::Event {
                loc,
                time,
                kind,
                value,
            } => {
                let k = SimEvent::ALL.iter().position(|x| *x == kind).unwrap_or(0) as u32;
                b.event(loc, time, k, value);
            }
        }
        Ok(())
    }

    fn finish(&mut self, end: Time) -> Result<()> {
        let mut b = self
            .builder
            .take()
            .ok_or_else(|| Error::Invalid("the model sink already finished".into()))?;
        b.set_declared_end(end);
        self.trace = Some(b.finish(BuildOptions {
            warn_unsorted: true,
        })?);
        Ok(())
    }
}

/// The model sink's builder, until it has finished.
fn unfinished(builder: &mut Option<TraceBuilder>) -> Result<&mut TraceBuilder> {
    builder
        .as_mut()
        .ok_or_else(|| Error::Invalid("the model sink already finished".into()))
}

/// Writes the PICL "new" format read by ParaGraph: sends and receives as
/// begin/end records with their data, trace start/stop per processor,
/// marker events as user records `-3 -(100 + kind)`. Computation is implied
/// (busy = outside communication), so PICL keeps the busy/overhead split but
/// not idle gaps.
pub struct PiclWriter {
    out: Out,
    procs: u32,
    pending_send: rustc_hash::FxHashMap<(u32, Time), Time>,
    pending_recv: rustc_hash::FxHashMap<(u32, Time), Time>,
    msg_by_send: rustc_hash::FxHashMap<(u32, Time), (u32, u64, i64)>,
    msg_by_recv: rustc_hash::FxHashMap<(u32, Time), (u32, u64, i64)>,
}

fn push_secs(b: &mut Vec<u8>, ns: Time) {
    push_u64(b, ns / 1_000_000_000);
    b.extend_from_slice(format!(".{:09}", ns % 1_000_000_000).as_bytes());
}

impl PiclWriter {
    pub fn create(path: &Path) -> Result<Self> {
        Ok(PiclWriter {
            out: Out::create(path)?,
            procs: 0,
            pending_send: Default::default(),
            pending_recv: Default::default(),
            msg_by_send: Default::default(),
            msg_by_recv: Default::default(),
        })
    }

    fn line(&mut self, rectype: i32, event: i32, t: Time, p: u32, data: &[i64]) {
        let b = &mut self.out.buf;
        push_i64(b, rectype as i64);
        b.push(b' ');
        push_i64(b, event as i64);
        b.push(b' ');
        push_secs(b, t);
        b.push(b' ');
        push_u64(b, p as u64);
        b.push(b' ');
        push_u64(b, p as u64);
        b.push(b' ');
        push_u64(b, data.len() as u64);
        if !data.is_empty() {
            b.extend_from_slice(b" 2");
            for d in data {
                b.push(b' ');
                push_i64(b, *d);
            }
        }
        b.push(b'\n');
    }

    fn send(&mut self, p: u32, start: Time, end: Time, (dst, bytes, tag): (u32, u64, i64)) {
        self.line(
            -3,
            -21,
            start,
            p,
            &[bytes as i64, tag, dst as i64, dst as i64],
        );
        self.line(-4, -21, end, p, &[]);
    }

    fn recv(&mut self, p: u32, start: Time, end: Time, (src, bytes, tag): (u32, u64, i64)) {
        self.line(-3, -52, start, p, &[tag, src as i64, src as i64]);
        self.line(
            -4,
            -52,
            end,
            p,
            &[bytes as i64, tag, src as i64, src as i64],
        );
    }
}

impl RecordSink for PiclWriter {
    fn begin(&mut self, layout: &Layout) -> Result<()> {
        self.procs = layout.procs;
        for p in 0..layout.procs {
            self.line(-3, -901, 0, p, &[]);
        }
        Ok(())
    }

    fn record(&mut self, r: &Record) -> Result<()> {
        match *r {
            Record::State {
                loc,
                start,
                end,
                state,
            } => match state {
                SimState::Sending => match self.msg_by_send.remove(&(loc, start)) {
                    Some(m) => self.send(loc, start, end, m),
                    None => {
                        self.pending_send.insert((loc, start), end);
                    }
                },
                SimState::Waiting => match self.msg_by_recv.remove(&(loc, end)) {
                    Some(m) => self.recv(loc, start, end, m),
                    None => {
                        self.pending_recv.insert((loc, end), start);
                    }
                },
                SimState::Running => {}
            },
            Record::Message {
                src,
                dst,
                send,
                recv,
                bytes,
                tag,
            } => {
                match self.pending_send.remove(&(src, send)) {
                    Some(end) => self.send(src, send, end, (dst, bytes, tag)),
                    None => {
                        self.msg_by_send.insert((src, send), (dst, bytes, tag));
                    }
                }
                match self.pending_recv.remove(&(dst, recv)) {
                    Some(start) => self.recv(dst, start, recv, (src, bytes, tag)),
                    None => {
                        self.msg_by_recv.insert((dst, recv), (src, bytes, tag));
                    }
                }
            }
            Record::Event {
                loc,
                time,
                kind,
                value,
            } => {
                let code = -100 - SimEvent::ALL.iter().position(|k| *k == kind).unwrap_or(0) as i32;
                self.line(-3, code, time, loc, &[value]);
            }
        }
        self.out.flush_if_full()?;
        Ok(())
    }

    fn finish(&mut self, end: Time) -> Result<()> {
        if !(self.pending_send.is_empty() && self.pending_recv.is_empty()) {
            return Err(Error::Invalid(
                "PICL writer: a send or receive without its message".into(),
            ));
        }
        for p in 0..self.procs {
            self.line(-4, -901, end, p, &[]);
        }
        self.out.finish()?.commit()
    }
}
