//! `tapestry analyze TRACE ANALYSIS [options]`: one analysis per invocation,
//! written as CSV (default, to standard output), JSON or `.npy`.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Result, anyhow, bail};
use clap::{Args, ValueEnum};
use serde_json::{Value, json};
use tapestry::analysis::{comm, fields, image, matrices, metric, moments, signal};
use tapestry::export::AtomicFile;
use tapestry::model::{ProfileMatrix, Time, Trace};
use tapestry::readers::{self, Loaded};

mod compare;
pub(super) mod stream;

use super::ReadArgs;
use super::parse::{
    BinByArg, FieldQuery, SampleModeArg, field, parse_metric, parse_pair, parse_range, parse_time,
    resolve_window,
};

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum, Debug)]
pub enum Analysis {
    /// m0..m3 per location (paper 000).
    Moments,
    /// The metric matrix M: (time, location, value) rows.
    MetricMatrix,
    /// The state vector / spatial domain S(n0).
    StateVector,
    /// The performance image G(n0) (with --op for image operations).
    Image,
    /// The event-domain signal x.
    SignalX,
    /// The temporal signal w.
    SignalW,
    /// Magnitude and power spectra of w (or x with --domain event).
    Spectrum,
    /// Causal moving average of w (or x).
    MovingAverage,
    /// Unbiased autocorrelation of w (or x).
    Autocorrelation,
    /// Cross-correlation of w (of --metric) with the w of --metric2.
    CrossCorrelation,
    /// Binary signal where w (or x) meets --th.
    Threshold,
    /// FFT low-pass of w (or x), keeping bins up to --cutoff.
    Lowpass,
    /// Decimation of w (or x) by --alpha.
    Decimate,
    /// Event-frequency histogram of x and time-weighted histogram.
    Histogram,
    /// Markov transition matrix and stationary distribution of x.
    Markov,
    /// Indicator sequence of marker events (--marker) over the w grid.
    Indicator,
    /// A field F[t][e] (--quantity) with --bins time bins.
    Field,
    /// Task × task message count and volume.
    CommMatrix,
    /// The trace description of `tapestry info` (text on standard output,
    /// JSON with -o FILE.json).
    Summary,
    /// Profiles: per-row min/max (with columns), mean, variance.
    ProfileRows,
    /// Profiles: ranked procedures (or functions).
    ProfileProcedures,
    /// Profiles: overview reduction (skip zero runs, bin, strips).
    ProfileOverview,
    /// Execution control: the cursor frame by frame (--frames, from --n0,
    /// by --events-per-frame and/or --ticks-per-frame, --backward, --loop
    /// over --window) with the statistics up to it.
    Playback,
    /// The temporal signal w as sound (-o FILE.wav): --sound pitch|amplitude,
    /// --tone seconds per sample, --pitch-range LO:HI Hz, --sample-rate.
    Sonify,
    /// Volumes: isosurfaces (--iso, --step) with triangles, area and
    /// enclosed volume per step and isovalue; --mesh writes them.
    Isosurface,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum, Debug)]
pub enum LayoutArg {
    Natural,
    Gray,
    Hypercube,
    NearSquare,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum, Debug)]
pub enum ImageOp {
    /// Colour indices of G(n0).
    None,
    /// G(n0-b) − G(n0), contrast-stretched to the colour range.
    Diff,
    /// Hot spots: colour index where ≥ --th (or in LO..HI), else g_min.
    Hotspot,
    /// Binary threshold: g_max where the colour index ≥ --th, else g_min.
    Binary,
    /// Statistics (min, max, mean, std) and a histogram of the colour indices.
    Stats,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum, Debug)]
pub enum SoundArg {
    /// The value sets the pitch (log scale over --pitch-range).
    Pitch,
    /// The value sets the loudness of a constant tone.
    Amplitude,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum, Debug)]
pub enum Domain {
    Temporal,
    Event,
}

#[derive(Args, Clone)]
pub struct AnalyzeArgs {
    /// The trace or profile.
    pub trace: PathBuf,
    /// The analysis.
    #[arg(value_enum)]
    pub analysis: Analysis,
    /// Output file: .csv, .json or .npy (default: CSV on standard output).
    #[arg(short, long)]
    pub out: Option<PathBuf>,
    /// The state set: classes (busy, overhead, idle) and/or state names
    /// (`*` wildcards) or ids, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "busy")]
    pub states: Vec<String>,
    /// Time window T0:T1 (ns, or with a unit: 1.5ms:20ms); default the whole trace.
    #[arg(long)]
    pub window: Option<String>,
    /// The metric: busy, busy-fraction, messages, bytes, or counter:NAME.
    #[arg(long, default_value = "busy")]
    pub metric: String,
    /// The second metric of a cross-correlation.
    #[arg(long)]
    pub metric2: Option<String>,
    /// Observation time n0 (state vector, image).
    #[arg(long, default_value = "0")]
    pub n0: String,
    /// Second observation time for --op diff.
    #[arg(long)]
    pub n0_b: Option<String>,
    /// Compare with another run: a trace (moments, field, comm-matrix: A −
    /// B per location, matched by index when the counts agree, else by
    /// name; image: the difference image against B's), or a saved image
    /// `.npy` (image).
    #[arg(long, value_name = "TRACE")]
    pub template: Option<PathBuf>,
    /// Observation time of the template image [default: --n0].
    #[arg(long, value_name = "T")]
    pub template_n0: Option<String>,
    /// Window of the template run T0:T1 [default: --window].
    #[arg(long, value_name = "T0:T1", conflicts_with = "template_phase")]
    pub template_window: Option<String>,
    /// The window as a phase: MARKER[=V|#K] (e.g. 'Workload phase=2',
    /// 'Iteration#3') or region:NAME; the same as --window phase:….
    #[arg(long, value_name = "PHASE", conflicts_with = "window")]
    pub phase: Option<String>,
    /// The template's window as a phase (see --phase).
    #[arg(long, value_name = "PHASE")]
    pub template_phase: Option<String>,
    /// Template matching (cross-correlation --template): the smallest
    /// normalised cross-covariance listed as a peak.
    #[arg(long, default_value_t = 0.9, value_name = "C")]
    pub peak_min: f64,
    /// Image layout.
    #[arg(long, value_enum, default_value_t = LayoutArg::NearSquare)]
    pub layout: LayoutArg,
    /// Columns of the natural layout.
    #[arg(long)]
    pub cols: Option<usize>,
    /// User coordinates: a CSV of `location,row,col`.
    #[arg(long)]
    pub coords: Option<PathBuf>,
    /// Image operation.
    #[arg(long, value_enum, default_value_t = ImageOp::None)]
    pub op: ImageOp,
    /// Colour index range g_min:g_max.
    #[arg(long, default_value = "0:255")]
    pub g_range: String,
    /// Metric range m_min:m_max mapped onto the colours (default: the data's).
    #[arg(long)]
    pub m_range: Option<String>,
    /// Sampling period Δ of w (ns or with a unit).
    #[arg(long, default_value = "1us")]
    pub period: String,
    /// Sampling of w.
    #[arg(long, value_enum, default_value_t = SampleModeArg::Mean)]
    pub mode: SampleModeArg,
    /// Which signal the DSP analyses use.
    #[arg(long, value_enum, default_value_t = Domain::Temporal)]
    pub domain: Domain,
    /// One x sample per event instead of per distinct event time.
    #[arg(long)]
    pub per_event: bool,
    /// Moving-average order N.
    #[arg(long, default_value_t = 20)]
    pub order: usize,
    /// Largest autocorrelation lag (default M − 1).
    #[arg(long)]
    pub lags: Option<usize>,
    /// Correlate the zero-mean signals.
    #[arg(long)]
    pub zero_mean: bool,
    /// Threshold: =X, >=X, <=X or A..B.
    #[arg(long)]
    pub th: Option<String>,
    /// Low-pass cutoff bin K.
    #[arg(long, default_value_t = 10)]
    pub cutoff: usize,
    /// Decimation factor α.
    #[arg(long, default_value_t = 2)]
    pub alpha: usize,
    /// Classes of histograms and states of the Markov model.
    #[arg(long, default_value_t = 10)]
    pub classes: usize,
    /// Value range LO:HI of histograms and the Markov model (default: the data's).
    #[arg(long)]
    pub range: Option<String>,
    /// Marker events of the indicator: an event type name, optionally =VALUE.
    #[arg(long)]
    pub marker: Option<String>,
    /// Time bins of a field.
    #[arg(long, default_value_t = 100)]
    pub bins: usize,
    /// Field quantity: busy, messages, bytes, counter:NAME, or tensor:PATH.npy.
    #[arg(long, default_value = "busy")]
    pub quantity: String,
    /// Access kinds of a tensor field (local-reads, remote-reads, reads, writes, local, remote, all, ...).
    #[arg(long, default_value = "all")]
    pub kinds: String,
    /// Isosurface: isovalues (comma-separated; default 5 spanning each step's range).
    #[arg(long, value_delimiter = ',')]
    pub iso: Option<Vec<f64>>,
    /// Isosurface: one step of the volume (default: every step).
    #[arg(long)]
    pub step: Option<usize>,
    /// Isosurface: write the surfaces (of the first step) as .glb, .gltf or .ply.
    #[arg(long)]
    pub mesh: Option<PathBuf>,
    /// Only this processor's accesses (tensor fields).
    #[arg(long)]
    pub processor: Option<usize>,
    /// Field layout: ring, grid:WxH or cube:XxYxZ.
    #[arg(long, default_value = "ring")]
    pub field_layout: String,
    /// Playback: frames to step.
    #[arg(long, default_value_t = 10)]
    pub frames: usize,
    /// Playback: records per frame (0: no limit by records).
    #[arg(long, default_value_t = 0)]
    pub events_per_frame: u64,
    /// Playback: time per frame (0: no limit by time).
    #[arg(long, default_value = "0")]
    pub ticks_per_frame: String,
    /// Playback: step towards time 0.
    #[arg(long)]
    pub backward: bool,
    /// Playback: wrap around the --window range.
    #[arg(long = "loop")]
    pub looping: bool,
    /// Sonify: what the value of w controls.
    #[arg(long, value_enum, default_value_t = SoundArg::Pitch)]
    pub sound: SoundArg,
    /// Sonify: sound per sample of w (a duration: 50ms).
    #[arg(long, default_value = "50ms")]
    pub tone: String,
    /// Sonify: pitches of the smallest and largest value, LO:HI in Hz.
    #[arg(long, default_value = "220:880")]
    pub pitch_range: String,
    /// Sonify: samples per second of the sound.
    #[arg(long, default_value_t = 44_100)]
    pub sample_rate: u32,
    /// Communication matrix: tasks are threads (locations), processes or nodes.
    #[arg(long, default_value = "thread")]
    pub level: String,
    /// Profile metric (default: the primary one).
    #[arg(long)]
    pub profile_metric: Option<String>,
    /// How many ranked procedures.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Overview: runs of more than K zero rows are skipped.
    #[arg(long, default_value_t = 4)]
    pub skip: usize,
    /// Overview: rows per bin.
    #[arg(long, default_value_t = 1)]
    pub bin: usize,
    /// Overview: combine binned rows by max or sum.
    #[arg(long, value_enum, default_value_t = BinByArg::Max)]
    pub by: BinByArg,
    /// Overview: strips side by side.
    #[arg(long, default_value_t = 1)]
    pub strips: usize,
    /// Run the GPU-capable analyses (moments, isosurfaces) on the CPU.
    #[arg(long, conflicts_with = "gpu")]
    pub cpu: bool,
    /// Run the GPU-capable analyses on the GPU (lavapipe included).
    #[arg(long)]
    pub gpu: bool,
    /// Reduce while reading, never holding the records (memory grows with
    /// locations × states × bins and the pairs that exchange messages, not
    /// with the trace): moments, the busy field, the communication matrix
    /// and the summary of Paraver, OTF2, PICL and Chrome traces. Automatic
    /// for these when the trace would take more than half the memory
    /// limit in memory.
    #[arg(long, conflicts_with_all = ["gpu", "template", "cache"])]
    pub stream: bool,
    /// Read the trace in memory even when it would be streamed
    /// automatically.
    #[arg(long, conflicts_with = "stream")]
    pub no_stream: bool,
    #[command(flatten)]
    pub read: ReadArgs,
}

impl AnalyzeArgs {
    fn compute(&self) -> tapestry::gpu::Compute {
        match (self.cpu, self.gpu) {
            (true, _) => tapestry::gpu::Compute::Cpu,
            (_, true) => tapestry::gpu::Compute::Gpu,
            _ => tapestry::gpu::Compute::Auto,
        }
    }
}

/// The largest dense communication matrix written (cells; 64 M cells of
/// 8 bytes: 512 MiB).
const MAX_DENSE_CELLS: u64 = 1 << 26;

/// A result: named columns with units and rows, or a matrix.
pub(super) enum Output {
    Table {
        columns: Vec<(String, String)>,
        rows: Vec<Vec<Option<f64>>>,
        labels: Option<(String, Vec<String>)>,
        meta: Value,
    },
    Matrix {
        rows: usize,
        cols: usize,
        values: Cells,
        unit: String,
        meta: Value,
    },
    /// A description: text for standard output, JSON for `-o FILE.json`.
    Document { text: String, json: Value },
}

/// A matrix's cells, row-major: each optional (an image's cells without
/// a value, a difference where a run has none), or all present (fields,
/// communication matrices), 8 bytes a cell instead of 16 — a busy field of
/// 65,536 processors and 64 bins is 34 MB of cells, not 67.
pub(super) enum Cells {
    Optional(Vec<Option<f64>>),
    Full(Vec<f64>),
}

impl Cells {
    /// Cell `i`, `None` where it has no value or is past the end.
    pub(super) fn get(&self, i: usize) -> Option<f64> {
        match self {
            Cells::Optional(v) => v.get(i).copied().flatten(),
            Cells::Full(v) => v.get(i).copied(),
        }
    }

    /// The cells as numbers, NaN where a cell has no value (`.npy`);
    /// taken, not copied, when they are all present.
    fn into_nan(self) -> Vec<f64> {
        match self {
            Cells::Optional(v) => v.into_iter().map(nan_if_none).collect(),
            Cells::Full(v) => v,
        }
    }
}

/// A cell's number, NaN where it has none (`.npy`).
fn nan_if_none(v: Option<f64>) -> f64 {
    v.unwrap_or(f64::NAN)
}

impl serde::Serialize for Cells {
    /// As a list of numbers and nulls (a NaN is a null in JSON either way).
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Cells::Optional(v) => v.serialize(s),
            Cells::Full(v) => v.serialize(s),
        }
    }
}

pub(super) fn table(columns: &[(&str, &str)], rows: Vec<Vec<Option<f64>>>, meta: Value) -> Output {
    Output::Table {
        columns: columns
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect(),
        rows,
        labels: None,
        meta,
    }
}

fn series(name: &str, unit: &str, v: &[f64], meta: Value) -> Output {
    table(
        &[("n", "sample"), (name, unit)],
        v.iter()
            .enumerate()
            .map(|(i, x)| vec![Some(i as f64), Some(*x)])
            .collect(),
        meta,
    )
}

/// The event-domain signal of `--metric` over `--states`, and its unit.
fn event_signal_of(a: &AnalyzeArgs, t: &Trace) -> Result<(metric::EventSignal, &'static str)> {
    let (x, unit) = full_event_signal(a, t)?;
    Ok((window_x(a, t, x)?, unit))
}

/// x over the whole trace.
fn full_event_signal(a: &AnalyzeArgs, t: &Trace) -> Result<(metric::EventSignal, &'static str)> {
    let s = metric_signal(a, t, &a.metric)?;
    let unit = parse_metric(&a.metric, t)?.signal_scale().1;
    Ok((s.x, unit))
}

/// The signals of `metric_text` over the whole trace.
fn metric_signal(a: &AnalyzeArgs, t: &Trace, metric_text: &str) -> Result<metric::MetricSignal> {
    let mask = t.states.select(&a.states)?;
    let m = parse_metric(metric_text, t)?;
    Ok(metric::MetricSignal::new(t, &m, &mask, a.per_event)?)
}

/// The samples of x inside `--window` (all without one).
fn window_x(a: &AnalyzeArgs, t: &Trace, x: metric::EventSignal) -> Result<metric::EventSignal> {
    if a.window.is_none() {
        return Ok(x);
    }
    let (t0, t1) = resolve_window(a.window.as_deref(), t)?;
    let (i, j) = (
        x.time.partition_point(|&s| s < t0),
        x.time.partition_point(|&s| s < t1),
    );
    Ok(metric::EventSignal {
        time: x.time[i..j].to_vec(),
        x: x.x[i..j].to_vec(),
        unit: x.unit,
    })
}

/// The samples of a signal whose times lie in `--window` (all without one).
fn windowed(a: &AnalyzeArgs, t: &Trace, s: DspSignal) -> Result<DspSignal> {
    if a.window.is_none() {
        return Ok(s);
    }
    let (t0, t1) = resolve_window(a.window.as_deref(), t)?;
    let (v, unit, period, times) = s;
    let (i, j) = (
        times.partition_point(|&s| s < t0),
        times.partition_point(|&s| s < t1),
    );
    if i >= j {
        bail!("no sample of the signal lies in the window (a shorter --period, or a wider window)");
    }
    Ok((v[i..j].to_vec(), unit, period, times[i..j].to_vec()))
}

/// The signal the DSP analyses work on: values, unit, sampling period in
/// seconds (None in the event domain), sample times.
type DspSignal = (Vec<f64>, String, Option<f64>, Vec<Time>);

/// The signal the DSP analyses work on.
pub(super) fn dsp_signal(a: &AnalyzeArgs, t: &Trace, metric_text: &str) -> Result<DspSignal> {
    let sig = metric_signal(a, t, metric_text)?;
    let unit = sig.x.unit.clone();
    let s = match a.domain {
        Domain::Event => (sig.x.x, unit, None, sig.x.time),
        Domain::Temporal => {
            let delta = parse_time(&a.period)?;
            let w = sig.w(delta, a.mode.into())?;
            let times = (0..w.len() as u64).map(|k| k * delta).collect();
            (w, unit, Some(delta as f64 * 1e-9), times)
        }
    };
    windowed(a, t, s)
}

fn field_layout(s: &str) -> Result<fields::FieldLayout> {
    let dims = |t: &str, n: usize| -> Result<Vec<usize>> {
        let v: Vec<usize> = t
            .split('x')
            .map(|p| p.trim().parse::<usize>())
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| anyhow!("bad dimensions '{t}'"))?;
        if v.len() != n {
            bail!("expected {n} dimensions in '{t}'");
        }
        Ok(v)
    };
    Ok(if s == "ring" {
        fields::FieldLayout::Ring
    } else if let Some(g) = s.strip_prefix("grid:") {
        let d = dims(g, 2)?;
        fields::FieldLayout::Grid {
            width: d[0],
            height: d[1],
        }
    } else if let Some(c) = s.strip_prefix("cube:") {
        let d = dims(c, 3)?;
        fields::FieldLayout::Cube {
            x: d[0],
            y: d[1],
            z: d[2],
        }
    } else {
        bail!("expected --field-layout ring, grid:WxH or cube:XxYxZ, found '{s}'")
    })
}

pub(super) fn image_layout(a: &AnalyzeArgs) -> Result<image::Layout> {
    if let Some(path) = &a.coords {
        return Ok(image::read_coords(path)?);
    }
    Ok(match a.layout {
        LayoutArg::Natural => image::Layout::Natural { cols: a.cols },
        LayoutArg::Gray => image::Layout::Gray,
        LayoutArg::Hypercube => image::Layout::Hypercube,
        LayoutArg::NearSquare => image::Layout::NearSquare,
    })
}

/// The busy-fraction field on the GPU when `--gpu` (or `Auto` on a large
/// trace with a hardware adapter) asks for it; `None` for the CPU path.
/// Other quantities are computed on the CPU (said on stderr with `--gpu`).
fn gpu_busy_field(
    a: &AnalyzeArgs,
    t: &Trace,
    t0: tapestry::model::Time,
    t1: tapestry::model::Time,
) -> Result<Option<(fields::Field, String)>> {
    if a.quantity != "busy" {
        if a.gpu {
            eprintln!(
                "note: only the busy field has a GPU kernel; '{}' is computed on the CPU",
                a.quantity
            );
        }
        return Ok(None);
    }
    let Some(ctx) = tapestry::gpu::choose(a.compute(), t.intervals.len())? else {
        return Ok(None);
    };
    let mask = t.states.select(&a.states)?;
    fields::check_bins(t0, t1, a.bins)?;
    fields::guard_field(a.bins, t.num_locations())?;
    eprintln!("busy field on the GPU: {}", ctx.describe());
    let g = tapestry::gpu::GpuTrace::upload(&ctx, t, None)?;
    let (mut f, timing) = g.busy_fraction(&mask, t0, t1, a.bins)?;
    eprintln!("{}", gpu_timing(&g, &timing));
    name_busy_field(&mut f, &a.states);
    Ok(Some((f, format!("gpu ({})", ctx.info.name))))
}

/// Where an analysis on the GPU spent its time, in one line.
fn gpu_timing(g: &tapestry::gpu::GpuTrace, t: &tapestry::gpu::Timing) -> String {
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let up = g.upload_time().as_secs_f64().max(1e-9);
    format!(
        "GPU: upload {:.1} ms ({:.2} GB/s, {} intervals in {} chunk{}), kernel {}, \
         start to results {:.1} ms (of which preparation {:.1} ms), host {:.1} ms",
        ms(g.upload_time()),
        g.bytes() as f64 / 1e9 / up,
        g.num_intervals(),
        g.num_chunks(),
        if g.num_chunks() == 1 { "" } else { "s" },
        t.kernel
            .map_or("untimed (no timestamp queries)".to_string(), |k| format!(
                "{:.2} ms",
                ms(k)
            )),
        ms(t.run),
        ms(t.prepare),
        ms(t.finish)
    )
}

/// A busy field of another state set than `busy` says which.
pub(super) fn name_busy_field(f: &mut fields::Field, states: &[String]) {
    let label = states.join(", ");
    if label != "busy" {
        f.quantity = format!("fraction of time in {label}");
    }
}

/// The moments table (`location, m0..m3` with location names).
pub(super) fn moments_output(
    a: &AnalyzeArgs,
    t: &Trace,
    m: &[moments::Moments],
    (t0, t1): (tapestry::model::Time, tapestry::model::Time),
    compute: &str,
) -> Output {
    let rows = m
        .iter()
        .enumerate()
        .map(|(l, m)| vec![Some(l as f64), Some(m.m0), m.m1, m.m2, m.m3])
        .collect();
    let labels = (0..t.num_locations() as u32)
        .map(|l| t.locations.path(l))
        .collect();
    Output::Table {
        columns: [
            ("location", "index"),
            ("m0", "ns"),
            ("m1", "ns"),
            ("m2", "ns"),
            ("m3", "ns"),
        ]
        .iter()
        .map(|(x, y)| (x.to_string(), y.to_string()))
        .collect(),
        rows,
        labels: Some(("name".into(), labels)),
        meta: json!({"analysis": "moments", "states": a.states, "window_ns": [t0, t1], "compute": compute, "note": "m1 is ns from the trace start; m1..m3 are empty where m0 = 0"}),
    }
}

/// A field as a `[time bin][element]` matrix.
pub(super) fn field_output(
    layout: fields::FieldLayout,
    mut f: fields::Field,
    compute: &str,
) -> Result<Output> {
    layout.check(f.elements)?;
    f.layout = layout;
    let meta = json!({"analysis": "field", "quantity": f.quantity, "unit": f.unit, "layout": f.layout, "edges": f.edges, "leading_empty_bins": fields::leading_empty_bins(&f), "shape": "[time bin][element]", "compute": compute});
    Ok(Output::Matrix {
        rows: f.bins,
        cols: f.elements,
        values: Cells::Full(f.values),
        unit: f.unit,
        meta,
    })
}

/// The task level and quantity of a communication matrix.
pub(super) fn comm_args(a: &AnalyzeArgs) -> Result<(comm::Level, comm::Quantity)> {
    let level = comm::Level::parse(&a.level)?;
    let q = match a.metric.as_str() {
        "bytes" => comm::Quantity::Bytes,
        "messages" | "busy" => comm::Quantity::Messages,
        other => {
            bail!("comm-matrix counts messages or bytes (--metric messages|bytes), not '{other}'")
        }
    };
    Ok((level, q))
}

/// The whole window's matrix of `c`, dense.
pub(super) fn comm_output(c: &comm::CommMatrices, q: comm::Quantity) -> Result<Output> {
    let values = c.dense(&c.total, q, MAX_DENSE_CELLS)?;
    let n = c.size();
    Ok(Output::Matrix {
        rows: n,
        cols: n,
        values: Cells::Full(values.iter().map(|&v| v as f64).collect()),
        unit: q.name().into(),
        meta: json!({"analysis": "comm-matrix", "quantity": q.name(), "level": c.level, "tasks": c.names, "rows": "sender", "columns": "receiver", "window_ns": [c.t0, c.t1]}),
    })
}

/// A summary as `info` prints it (16 locations listed) and as JSON.
pub(super) fn summary_output(s: &tapestry::analysis::summary::Summary, t: &Trace) -> Output {
    Output::Document {
        text: s.to_text(t, 16),
        json: serde_json::to_value(s).unwrap_or(Value::Null),
    }
}

pub(super) fn run_trace(a: &AnalyzeArgs, t: &Trace) -> Result<Output> {
    let (t0, t1) = resolve_window(a.window.as_deref(), t)?;
    let span_meta = json!({"window_ns": [t0, t1], "trace": t.meta.source});
    Ok(match a.analysis {
        Analysis::Moments => {
            let mask = t.states.select(&a.states)?;
            let gpu = tapestry::gpu::choose(a.compute(), t.intervals.len())?;
            let (m, compute) = match gpu {
                Some(ctx) if tapestry::gpu::kernels::moments::supported(&ctx) => {
                    eprintln!("moments on the GPU: {}", ctx.describe());
                    let g = tapestry::gpu::GpuTrace::upload(&ctx, t, None)?;
                    let (m, timing) = g.moments(&mask, t0, t1)?;
                    eprintln!("{}", gpu_timing(&g, &timing));
                    (m, format!("gpu ({})", ctx.info.name))
                }
                Some(ctx) => {
                    eprintln!(
                        "note: {} has no 64-bit floats in shaders (SHADER_F64); \
                         moments computed exactly on the CPU instead",
                        ctx.describe()
                    );
                    (moments::moments(t, &mask, t0, t1), "cpu".to_string())
                }
                None => (moments::moments(t, &mask, t0, t1), "cpu".to_string()),
            };
            moments_output(a, t, &m, (t0, t1), &compute)
        }
        Analysis::MetricMatrix => {
            let mask = t.states.select(&a.states)?;
            let m = parse_metric(&a.metric, t)?;
            let mm = metric::metric_matrix(t, &m, &mask)?;
            let rows = (0..mm.len())
                .map(|i| {
                    vec![
                        Some(mm.time[i] as f64),
                        Some(mm.location[i] as f64),
                        Some(mm.value[i]),
                    ]
                })
                .collect();
            table(
                &[("time", "ns"), ("location", "index"), ("value", m.unit())],
                rows,
                json!({"analysis": "metric-matrix", "metric": a.metric}),
            )
        }
        Analysis::StateVector => {
            let mask = t.states.select(&a.states)?;
            let m = parse_metric(&a.metric, t)?;
            let n0 = parse_time(&a.n0)?;
            let v = state_vector(t, &m, &mask, n0)?;
            let rows = v
                .iter()
                .enumerate()
                .map(|(l, x)| vec![Some(l as f64), Some(*x)])
                .collect();
            table(
                &[("location", "index"), ("value", m.unit())],
                rows,
                json!({"analysis": "state-vector", "metric": a.metric, "n0_ns": n0}),
            )
        }
        Analysis::Image => image_output(a, t)?,
        Analysis::SignalX => {
            let (x, unit) = event_signal_of(a, t)?;
            let rows = x
                .time
                .iter()
                .zip(&x.x)
                .enumerate()
                .map(|(i, (t, v))| vec![Some(i as f64), Some(*t as f64), Some(*v)])
                .collect();
            table(
                &[("n", "sample"), ("time", "ns"), ("x", unit)],
                rows,
                json!({"analysis": "signal-x", "metric": a.metric}),
            )
        }
        Analysis::SignalW => {
            let (w, unit, period, times) = dsp_signal(
                &AnalyzeArgs {
                    domain: Domain::Temporal,
                    ..a.clone()
                },
                t,
                &a.metric,
            )?;
            let rows = w
                .iter()
                .zip(&times)
                .enumerate()
                .map(|(i, (v, t))| vec![Some(i as f64), Some(*t as f64), Some(*v)])
                .collect();
            table(
                &[("n", "sample"), ("time", "ns"), ("w", &unit)],
                rows,
                json!({"analysis": "signal-w", "metric": a.metric, "period_s": period, "mode": metric::SampleMode::from(a.mode)}),
            )
        }
        Analysis::Spectrum => {
            let (w, _, period, _) = dsp_signal(a, t, &a.metric)?;
            let s = signal::spectrum(&w, period);
            let rows = (0..s.frequency.len())
                .map(|k| {
                    vec![
                        Some(k as f64),
                        Some(s.frequency[k]),
                        Some(s.magnitude[k]),
                        Some(s.power[k]),
                    ]
                })
                .collect();
            table(
                &[
                    ("K", "bin"),
                    ("frequency", &s.frequency_unit),
                    ("magnitude", "|W(K)|"),
                    ("power", "|W(K)|^2/N"),
                ],
                rows,
                json!({"analysis": "spectrum", "samples": w.len()}),
            )
        }
        Analysis::MovingAverage => {
            let (w, unit, _, _) = dsp_signal(a, t, &a.metric)?;
            let y = signal::moving_average(&w, a.order)?;
            let rows = w
                .iter()
                .zip(&y)
                .enumerate()
                .map(|(i, (v, y))| vec![Some(i as f64), Some(*v), *y])
                .collect();
            table(
                &[("n", "sample"), ("input", &unit), ("y", &unit)],
                rows,
                json!({"analysis": "moving-average", "order": a.order, "note": "the first order-1 outputs are empty"}),
            )
        }
        Analysis::Autocorrelation => {
            let (w, unit, _, _) = dsp_signal(a, t, &a.metric)?;
            let g = signal::autocorrelation(
                &w,
                a.lags.unwrap_or(w.len().saturating_sub(1)),
                a.zero_mean,
            );
            series(
                "gamma",
                &format!("({unit})^2"),
                &g,
                json!({"analysis": "autocorrelation", "zero_mean": a.zero_mean}),
            )
        }
        Analysis::CrossCorrelation => {
            let m2 = a
                .metric2
                .as_deref()
                .ok_or_else(|| anyhow!("cross-correlation needs --metric2"))?;
            let (w, _, _, _) = dsp_signal(a, t, &a.metric)?;
            let (y, _, _, _) = dsp_signal(a, t, m2)?;
            let g = signal::cross_correlation(&w, &y, a.zero_mean);
            series(
                "gamma_wy",
                "product",
                &g,
                json!({"analysis": "cross-correlation", "metric": a.metric, "metric2": m2}),
            )
        }
        Analysis::Threshold => {
            let th = signal::Comparison::parse(
                a.th.as_deref()
                    .ok_or_else(|| anyhow!("threshold needs --th"))?,
            )?;
            let (w, _, _, _) = dsp_signal(a, t, &a.metric)?;
            series(
                "meets",
                "0/1",
                &signal::threshold(&w, th),
                json!({"analysis": "threshold", "th": a.th}),
            )
        }
        Analysis::Lowpass => {
            let (w, unit, _, _) = dsp_signal(a, t, &a.metric)?;
            series(
                "filtered",
                &unit,
                &signal::lowpass(&w, a.cutoff),
                json!({"analysis": "lowpass", "cutoff": a.cutoff}),
            )
        }
        Analysis::Decimate => {
            let (w, unit, _, _) = dsp_signal(a, t, &a.metric)?;
            series(
                "decimated",
                &unit,
                &signal::decimate(&w, a.alpha)?,
                json!({"analysis": "decimate", "alpha": a.alpha}),
            )
        }
        Analysis::Histogram => {
            let sig = metric_signal(a, t, &a.metric)?;
            let unit = parse_metric(&a.metric, t)?.signal_scale().1;
            let range = parse_range(a.range.as_deref(), "--range")?;
            // time-weighted: x held over [t0, t1)
            let (held_t, held_x) = sig.held(t0, t1);
            let x = window_x(a, t, sig.x)?;
            // one set of classes for both columns
            let range = range.or_else(|| {
                let all = held_x.iter().chain(&x.x).copied().filter(|v| v.is_finite());
                let lo = all.clone().fold(f64::INFINITY, f64::min);
                let hi = all.fold(f64::NEG_INFINITY, f64::max);
                lo.is_finite().then_some((lo, hi))
            });
            let h = signal::histogram(&x.x, a.classes, range)?;
            let tw = signal::time_histogram(&held_t, &held_x, t1, a.classes, range)?;
            let rows = (0..a.classes)
                .map(|k| {
                    vec![
                        Some(h.edges[k]),
                        Some(h.edges[k + 1]),
                        Some(h.weight[k]),
                        Some(tw.weight[k]),
                    ]
                })
                .collect();
            table(
                &[
                    ("from", unit),
                    ("to", unit),
                    ("events", "count"),
                    ("time", "ns"),
                ],
                rows,
                json!({"analysis": "histogram", "classes": a.classes}),
            )
        }
        Analysis::Markov => {
            let (x, unit) = event_signal_of(a, t)?;
            let range = parse_range(a.range.as_deref(), "--range")?;
            let mk = signal::markov(&x.x, a.classes, range)?;
            let n = a.classes;
            let mut rows = Vec::new();
            for i in 0..n {
                let mut r = vec![
                    Some(i as f64),
                    Some(mk.edges[i]),
                    Some(mk.edges[i + 1]),
                    Some(mk.stationary[i]),
                ];
                r.extend(mk.transition[i].iter().map(|p| Some(*p)));
                rows.push(r);
            }
            let mut cols: Vec<(String, String)> = vec![
                ("state".into(), "index".into()),
                ("from".into(), unit.into()),
                ("to".into(), unit.into()),
                ("stationary".into(), "probability".into()),
            ];
            cols.extend((0..n).map(|j| (format!("p_to_{j}"), "probability".to_string())));
            Output::Table {
                columns: cols,
                rows,
                labels: None,
                meta: json!({"analysis": "markov", "counts": mk.counts, "visited": mk.visited, "classes": mk.classes, "closed": mk.closed, "unique": mk.unique, "stationary_of": "the limit from the first sample's state: its mass on the closed classes reached; the stationary distribution when unique"}),
            }
        }
        Analysis::Indicator => {
            let spec = a
                .marker
                .as_deref()
                .ok_or_else(|| anyhow!("indicator needs --marker NAME[=VALUE]"))?;
            let (name, value) = match spec.split_once('=') {
                Some((n, v)) => (
                    n,
                    Some(
                        v.trim()
                            .parse::<i64>()
                            .map_err(|_| anyhow!("bad marker value '{v}'"))?,
                    ),
                ),
                None => (spec, None),
            };
            let kind = t.event_types.by_name(name).ok_or_else(|| {
                let names: Vec<&str> = t.event_types.iter().map(|e| e.name.as_str()).collect();
                anyhow!(
                    "no event type '{name}' in this trace (types: {})",
                    names.join(", ")
                )
            })?;
            let delta = parse_time(&a.period)?;
            if delta == 0 {
                bail!("--period must be longer than 0 ns");
            }
            let n = (t.meta.span / delta + 1) as usize;
            if n > 1 << 27 {
                bail!("{n} samples; use a longer --period");
            }
            let mut ind = vec![0.0; n];
            for i in 0..t.events.len() {
                if t.events.kind[i] == kind && value.is_none_or(|v| v == t.events.value[i]) {
                    ind[(t.events.time[i] / delta) as usize] = 1.0;
                }
            }
            series(
                "indicator",
                "0/1",
                &ind,
                json!({"analysis": "indicator", "marker": spec, "period_ns": delta}),
            )
        }
        Analysis::Field => {
            let layout = field_layout(&a.field_layout)?;
            let (f, compute) = match gpu_busy_field(a, t, t0, t1)? {
                Some(x) => x,
                None => (
                    field(
                        t,
                        &a.quantity,
                        &FieldQuery {
                            states: &a.states,
                            kinds: &a.kinds,
                            processor: a.processor,
                            t0,
                            t1,
                            bins: a.bins,
                        },
                    )?,
                    "cpu".to_string(),
                ),
            };
            field_output(layout, f, &compute)?
        }
        Analysis::CommMatrix => {
            let (level, q) = comm_args(a)?;
            comm_output(&comm::comm_matrices(t, t0, t1, level, 1)?, q)?
        }
        Analysis::Summary => summary_output(&tapestry::analysis::summary::summarize(t), t),
        Analysis::Sonify => bail!("sonify writes a sound: give -o FILE.wav"),
        Analysis::Playback => {
            use tapestry::analysis::cursor::{Step, Timeline};
            let step = Step {
                events: a.events_per_frame,
                ticks: parse_time(&a.ticks_per_frame)?,
                backward: a.backward,
            };
            if a.frames == 0 || a.frames > 1_000_000 {
                bail!("--frames must be 1 to 1000000, not {}", a.frames);
            }
            let tl = Timeline::new(t);
            let mut at = parse_time(&a.n0)?.clamp(t0, t1);
            let mut rows = Vec::with_capacity(a.frames + 1);
            for frame in 0..=a.frames {
                if frame > 0 {
                    at = tl.advance(at, step, (t0, t1), a.looping)?;
                }
                let st = tl.stats(at);
                let mut r = vec![
                    Some(frame as f64),
                    Some(at as f64),
                    Some(st.events as f64),
                    Some(st.messages_sent as f64),
                    Some(st.bytes_sent as f64),
                    Some(st.messages_received as f64),
                    Some(st.bytes_received as f64),
                ];
                r.extend(st.state_time.iter().map(|x| Some(*x as f64)));
                rows.push(r);
            }
            let mut cols: Vec<(String, String)> = [
                ("frame", "index"),
                ("time", "ns"),
                ("events", "records"),
                ("messages_sent", "messages"),
                ("bytes_sent", "bytes"),
                ("messages_received", "messages"),
                ("bytes_received", "bytes"),
            ]
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
            cols.extend(
                tl.state_names
                    .iter()
                    .map(|n| (format!("time in {n}"), "ns".to_string())),
            );
            Output::Table {
                columns: cols,
                rows,
                labels: None,
                meta: json!({"analysis": "playback", "events_per_frame": step.events, "ticks_per_frame": step.ticks, "backward": step.backward, "loop": a.looping, "range_ns": [t0, t1], "statistics": "up to the cursor: records at or before it, state time in [0, cursor)"}),
            }
        }
        Analysis::Isosurface => {
            bail!("isosurface works on volumes (Boxfish tables, 3D/4D .npy arrays), not on traces")
        }
        Analysis::ProfileRows | Analysis::ProfileProcedures | Analysis::ProfileOverview => {
            let _ = span_meta;
            bail!(
                "{:?} works on profiles (TAU directories, line-profile tables), not on traces",
                a.analysis
            )
        }
    })
}

pub(super) fn state_vector(
    t: &Trace,
    m: &metric::Metric,
    mask: &[bool],
    n0: Time,
) -> Result<Vec<f64>> {
    let mm = if *m == metric::Metric::BusyFraction {
        metric::MetricMatrix::default()
    } else {
        metric::metric_matrix(t, m, mask)?
    };
    Ok(metric::state_vector(t, m, mask, &mm, n0))
}

fn image_output(a: &AnalyzeArgs, t: &Trace) -> Result<Output> {
    let mask = t.states.select(&a.states)?;
    let m = parse_metric(&a.metric, t)?;
    let layout = image_layout(a)?;
    let n0 = parse_time(&a.n0)?;
    let g = parse_pair(&a.g_range, "--g-range")?;
    let mr = parse_range(a.m_range.as_deref(), "--m-range")?;
    let img = image::render(&state_vector(t, &m, &mask, n0)?, &layout)?;
    let gi = image::color_index(&img, g, mr);
    let th = || -> Result<(f64, Option<f64>)> {
        let s =
            a.th.as_deref()
                .ok_or_else(|| anyhow!("this image operation needs --th"))?;
        match signal::Comparison::parse(s)? {
            signal::Comparison::AtLeast(x) | signal::Comparison::Equal(x) => Ok((x, None)),
            signal::Comparison::Between(x, y) => Ok((x, Some(y))),
            signal::Comparison::AtMost(_) => bail!("image thresholds take >=X or A..B"),
        }
    };
    let layout_name = layout.name();
    let mut meta = json!({"analysis": "image", "n0_ns": n0, "layout": layout_name, "g_range": [g.0, g.1], "rows": img.rows, "cols": img.cols, "cells": "colour index; empty = no data"});
    let values = match a.op {
        ImageOp::None => gi,
        ImageOp::Diff => {
            let nb = parse_time(
                a.n0_b
                    .as_deref()
                    .ok_or_else(|| anyhow!("--op diff needs --n0-b"))?,
            )?;
            let other = image::render(&state_vector(t, &m, &mask, nb)?, &layout)?;
            let d = image::difference(&img, &other)?;
            let stretched = image::contrast_stretch(&d, g);
            let (energy, metric_energy) = image::mismatch_energies(&img, &other, g, mr)?;
            meta["mismatch_energy"] = json!(energy);
            meta["mismatch_energy_of"] = json!(
                "colour indices G(n0), G(n0-b), one metric range (--m-range, else both images')"
            );
            meta["mismatch_energy_metric"] = json!(metric_energy);
            meta["n0_b_ns"] = json!(nb);
            stretched
        }
        ImageOp::Hotspot => {
            let (lo, hi) = th()?;
            image::hot_spots(&gi, lo, hi, g.0)
        }
        ImageOp::Binary => image::binary(&gi, th()?.0, g),
        ImageOp::Stats => {
            let s = image::stats_of(&gi).ok_or_else(|| anyhow!("the image has no data"))?;
            let vals: Vec<f64> = gi.iter().flatten().copied().collect();
            let h = signal::histogram(&vals, a.classes, Some(g))?;
            let rows = (0..a.classes)
                .map(|k| vec![Some(h.edges[k]), Some(h.edges[k + 1]), Some(h.weight[k])])
                .collect();
            meta["stats"] = json!(s);
            return Ok(table(
                &[
                    ("from", "colour index"),
                    ("to", "colour index"),
                    ("cells", "count"),
                ],
                rows,
                meta,
            ));
        }
    };
    Ok(Output::Matrix {
        rows: img.rows,
        cols: img.cols,
        values: Cells::Optional(values),
        unit: "colour index".into(),
        meta,
    })
}

fn run_profile(a: &AnalyzeArgs, p: &ProfileMatrix) -> Result<Output> {
    let m = match &a.profile_metric {
        Some(n) => p.metrics.iter().position(|x| &x.name == n).ok_or_else(|| {
            let names: Vec<&str> = p.metrics.iter().map(|m| m.name.as_str()).collect();
            anyhow!("no metric '{n}' in this profile ({})", names.join(", "))
        })?,
        None => p.primary_metric(),
    };
    let unit = p.metrics[m].unit.clone();
    Ok(match a.analysis {
        Analysis::ProfileRows => {
            let s = matrices::row_stats(p, m)?;
            let rows = s
                .iter()
                .map(|r| {
                    vec![
                        Some(r.id as f64),
                        Some(r.min),
                        Some(r.min_column as f64),
                        Some(r.max),
                        Some(r.max_column as f64),
                        Some(r.mean),
                        Some(r.variance),
                        Some(r.total),
                    ]
                })
                .collect();
            Output::Table {
                columns: [
                    ("id", "row"),
                    ("min", unit.as_str()),
                    ("min_column", "index"),
                    ("max", unit.as_str()),
                    ("max_column", "index"),
                    ("mean", unit.as_str()),
                    ("variance", "unit^2"),
                    ("total", unit.as_str()),
                ]
                .iter()
                .map(|(x, y)| (x.to_string(), y.to_string()))
                .collect(),
                rows,
                labels: Some(("row".into(), s.iter().map(|r| r.row.clone()).collect())),
                meta: json!({"analysis": "profile-rows", "metric": p.metrics[m].name}),
            }
        }
        Analysis::ProfileProcedures => {
            let r = matrices::ranked_procedures(p, m, a.top)?;
            Output::Table {
                columns: vec![
                    ("rank".into(), "index".into()),
                    ("total".into(), unit.clone()),
                    ("percent".into(), "%".into()),
                ],
                rows: r
                    .iter()
                    .enumerate()
                    .map(|(i, x)| vec![Some(i as f64 + 1.0), Some(x.total), Some(x.percent)])
                    .collect(),
                labels: Some((
                    "procedure".into(),
                    r.iter().map(|x| x.name.clone()).collect(),
                )),
                meta: json!({"analysis": "profile-procedures", "metric": p.metrics[m].name}),
            }
        }
        Analysis::ProfileOverview => {
            let o = matrices::overview(p, m, a.skip, a.bin, a.by.into(), a.strips)?;
            Output::Matrix {
                rows: o.rows,
                cols: o.cols,
                values: Cells::Optional(o.values),
                unit,
                meta: json!({"analysis": "profile-overview", "metric": p.metrics[m].name, "skip": a.skip, "bin": a.bin, "by": matrices::BinBy::from(a.by), "strips": a.strips, "skipped": o.skipped, "first_id": o.first_id}),
            }
        }
        other => bail!("{other:?} works on traces, not on profiles"),
    })
}

fn cell(v: Option<f64>) -> String {
    match v {
        Some(x) if x.is_finite() => {
            if x == x.trunc() && x.abs() < 1e15 {
                format!("{}", x as i64)
            } else {
                format!("{x}")
            }
        }
        _ => String::new(),
    }
}

fn csv_text(o: &Output) -> String {
    let mut s = String::new();
    match o {
        Output::Document { text, .. } => s.push_str(text),
        Output::Table {
            columns,
            rows,
            labels,
            meta,
        } => {
            s.push_str(&format!("# {meta}\n"));
            let mut head: Vec<String> = columns.iter().map(|(n, u)| format!("{n} [{u}]")).collect();
            if let Some((l, _)) = labels {
                head.insert(1, l.clone());
            }
            s.push_str(&head.join(","));
            s.push('\n');
            for (i, r) in rows.iter().enumerate() {
                let mut cells: Vec<String> = r.iter().map(|v| cell(*v)).collect();
                if let Some((_, names)) = labels {
                    let n = names.get(i).cloned().unwrap_or_default();
                    cells.insert(
                        1,
                        if n.contains([',', '"']) {
                            format!("\"{}\"", n.replace('"', "\"\""))
                        } else {
                            n
                        },
                    );
                }
                s.push_str(&cells.join(","));
                s.push('\n');
            }
        }
        Output::Matrix {
            rows,
            cols,
            values,
            unit,
            meta,
        } => {
            let unit = if unit.is_empty() {
                String::new()
            } else {
                format!(", values in {unit}")
            };
            s.push_str(&format!(
                "# {meta}\n# rows x columns = {rows} x {cols}{unit}\n"
            ));
            for r in 0..*rows {
                let line: Vec<String> =
                    (0..*cols).map(|c| cell(values.get(r * cols + c))).collect();
                s.push_str(&line.join(","));
                s.push('\n');
            }
        }
    }
    s
}

fn json_value(o: &Output) -> Value {
    match o {
        Output::Document { json, .. } => json.clone(),
        Output::Table {
            columns,
            rows,
            labels,
            meta,
        } => json!({
            "meta": meta,
            "columns": columns.iter().map(|(n, u)| json!({"name": n, "unit": u})).collect::<Vec<_>>(),
            "labels": labels.as_ref().map(|l| &l.1),
            "rows": rows,
        }),
        Output::Matrix {
            rows,
            cols,
            values,
            unit,
            meta,
        } => json!({
            "meta": meta, "rows": rows, "cols": cols, "unit": unit, "values": values,
        }),
    }
}

/// `analyze TRACE sonify -o w.wav`: the temporal signal w as sound.
fn sonify(a: &AnalyzeArgs, t: &Trace) -> Result<()> {
    use tapestry::export::sound;
    let Some(path) = &a.out else {
        bail!("sonify writes a sound: give -o FILE.wav");
    };
    if path.extension().is_none_or(|e| e != "wav") {
        bail!("sonify writes a .wav file, not {}", path.display());
    }
    let (lo, hi) = a
        .pitch_range
        .split_once(':')
        .and_then(|(l, h)| Some((l.trim().parse::<f64>().ok()?, h.trim().parse::<f64>().ok()?)))
        .ok_or_else(|| {
            anyhow!(
                "--pitch-range expects LO:HI in Hz, found '{}'",
                a.pitch_range
            )
        })?;
    let tone_ns = parse_time(&a.tone)?;
    let p = sound::SoundParams {
        mapping: match a.sound {
            SoundArg::Pitch => sound::Mapping::Pitch,
            SoundArg::Amplitude => sound::Mapping::Amplitude,
        },
        sample_rate: a.sample_rate,
        tone_s: tone_ns as f64 * 1e-9,
        f_lo: lo,
        f_hi: hi,
    };
    let (w, unit, period, _) = dsp_signal(
        &AnalyzeArgs {
            domain: Domain::Temporal,
            ..a.clone()
        },
        t,
        &a.metric,
    )?;
    let samples = sound::sonify(&w, &p)?;
    let bytes = sound::wav_bytes(&samples, p.sample_rate)?;
    let input_files = tapestry::readers::input_files(&a.trace);
    let inputs: Vec<&std::path::Path> = input_files.iter().map(|p| p.as_path()).collect();
    let mut f = AtomicFile::create(path, &inputs)?;
    f.write_all(&bytes)?;
    f.commit()?;
    let finite = w.iter().copied().filter(|v| v.is_finite());
    let (mn, mx) = finite.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
        (a.min(v), b.max(v))
    });
    eprintln!(
        "wrote {} ({} samples of w every {} s, {} s each: {:.1} s at {} Hz; {} of {} ({mn:.4} to {mx:.4} {unit}) -> {})",
        path.display(),
        w.len(),
        period.unwrap_or(0.0),
        p.tone_s,
        samples.len() as f64 / p.sample_rate as f64,
        p.sample_rate,
        match p.mapping {
            sound::Mapping::Pitch => "pitch",
            sound::Mapping::Amplitude => "loudness",
        },
        a.metric,
        match p.mapping {
            sound::Mapping::Pitch => format!("{lo} Hz to {hi} Hz, log scale"),
            sound::Mapping::Amplitude =>
                format!("5 % to 80 % of full scale at {:.0} Hz", (lo * hi).sqrt()),
        }
    );
    Ok(())
}

/// `--phase X` → `--window phase:X` (or `region:NAME` as given).
fn phase_spec(p: &str) -> String {
    if p.starts_with("region:") || p.starts_with("phase:") {
        p.to_string()
    } else {
        format!("phase:{p}")
    }
}

/// Whether `--stream` can give what `a` asks for, so that a trace too
/// large for memory may be streamed without being told to.
fn streamable(a: &AnalyzeArgs) -> bool {
    !a.gpu
        && a.template.is_none()
        && !a.read.cache
        && !a.window.as_deref().is_some_and(|w| w.starts_with("phase"))
        && match a.analysis {
            Analysis::Moments | Analysis::Summary | Analysis::CommMatrix => true,
            Analysis::Field => a.quantity == "busy",
            _ => false,
        }
}

/// `tapestry reduce`: `analyze --stream` in every process of an MPI world
/// (`mpirun -n N`), each reading a share of the trace; rank 0 merges and
/// writes the result.
pub fn run_reduce(a: AnalyzeArgs) -> Result<()> {
    if a.template.is_some() || a.gpu {
        bail!(
            "reduce streams moments, the busy field, the communication matrix and the summary; \
             --template and --gpu are not for it"
        );
    }
    match stream::run(&a, true)? {
        Some(out) => write_output(&a, out),
        None => Ok(()),
    }
}

pub fn run(mut a: AnalyzeArgs) -> Result<()> {
    if let Some(p) = a.phase.take() {
        a.window = Some(phase_spec(&p));
    }
    if let Some(p) = a.template_phase.take() {
        a.template_window = Some(phase_spec(&p));
    }
    let auto = if !a.stream && !a.no_stream && streamable(&a) {
        stream::auto(&a.trace, &a.read)
    } else {
        None
    };
    if a.stream || auto.is_some() {
        if let Some(why) = &auto {
            eprintln!("note: {why}");
        }
        let out = stream::run(&a, false).map_err(|e| match &auto {
            Some(_) => e.context(stream::AUTO_CONTEXT),
            None => e,
        })?;
        return match out {
            Some(out) => write_output(&a, out),
            None => Ok(()),
        };
    }
    if a.analysis == Analysis::Sonify {
        return match readers::load(&a.trace, &a.read.options())? {
            Loaded::Trace(t) => sonify(&a, &t),
            _ => bail!("sonify plays the signal w of a trace; this input is not a trace"),
        };
    }
    let out = match readers::load(&a.trace, &a.read.options())? {
        Loaded::Trace(t) if a.template.is_some() => {
            for w in &t.meta.diagnostics.warnings {
                eprintln!("warning: {w}");
            }
            compare::run(&a, &t)?
        }
        Loaded::Trace(t) => {
            for w in &t.meta.diagnostics.warnings {
                eprintln!("warning: {w}");
            }
            run_trace(&a, &t)?
        }
        Loaded::Profile(p) => run_profile(&a, &p)?,
        Loaded::Volumes(v) => run_volumes(&a, &v)?,
        Loaded::Tensor(t) => run_tensor(&a, &t)?,
    };
    write_output(&a, out)
}

/// Writes a result to `-o` (CSV, JSON or NumPy) or as CSV to stdout.
fn write_output(a: &AnalyzeArgs, out: Output) -> Result<()> {
    let Some(path) = &a.out else {
        print!("{}", csv_text(&out));
        return Ok(());
    };
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    // outputs never overwrite an input: the trace, its siblings, a tensor
    let mut input_files = tapestry::readers::input_files(&a.trace);
    if let Some(t) = &a.template {
        input_files.extend(tapestry::readers::input_files(t));
    }
    if let Some(p) = a.quantity.strip_prefix("tensor:") {
        input_files.push(std::path::PathBuf::from(p));
    }
    let inputs: Vec<&std::path::Path> = input_files.iter().map(|p| p.as_path()).collect();
    if matches!(out, Output::Document { .. }) && ext != "json" {
        bail!(
            "{} is a description: text on standard output, or JSON with -o FILE.json (not .{ext})",
            a.analysis
                .to_possible_value()
                .map_or("this".into(), |v| v.get_name().to_string())
        );
    }
    match ext {
        "csv" => {
            let mut f = AtomicFile::create(path, &inputs)?;
            f.write_all(csv_text(&out).as_bytes())?;
            f.commit()?;
        }
        "json" => {
            let mut f = AtomicFile::create(path, &inputs)?;
            f.write_all(serde_json::to_string_pretty(&json_value(&out))?.as_bytes())?;
            f.commit()?;
        }
        "npy" => {
            // cells without a value (empty in CSV, null in JSON) are NaN
            // here; the output's values are taken, not copied (a field's
            // plain numbers are written as they are)
            let (shape, data, meta): (Vec<u64>, Vec<f64>, Value) = match out {
                Output::Matrix {
                    rows,
                    cols,
                    values,
                    meta,
                    ..
                } => (vec![rows as u64, cols as u64], values.into_nan(), meta),
                Output::Table {
                    columns,
                    rows,
                    meta,
                    ..
                } => (
                    vec![rows.len() as u64, columns.len() as u64],
                    rows.into_iter().flatten().map(nan_if_none).collect(),
                    json!({"meta": meta, "columns": columns}),
                ),
                Output::Document { .. } => {
                    bail!("a description is not an array: give -o FILE.json")
                }
            };
            let missing = data.iter().filter(|v| v.is_nan()).count();
            let mut meta = meta;
            if let Some(o) = meta.as_object_mut() {
                o.insert(
                    "missing_values".into(),
                    json!("NaN: cells without a value (empty in CSV, null in JSON), e.g. m1..m3 where m0 = 0"),
                );
                o.insert("missing_count".into(), json!(missing));
            }
            tapestry::export::refuse_inputs(path, &inputs)?;
            tapestry::export::refuse_inputs(&path.with_extension("npy.json"), &inputs)?;
            let array = tapestry::export::npy::write_array_pending(path, &shape, &data)?;
            // the metadata (units, layout, parameters) beside the array, with
            // the array's data size and hash: a pair cut by a kill between
            // the two renames is recognisable
            if let Some(o) = meta.as_object_mut() {
                o.insert(
                    "array".into(),
                    json!({
                        "file": path.file_name().map(|n| n.to_string_lossy().into_owned()),
                        "data_bytes": array.data_bytes,
                        "data_fnv1a64": format!("{:016x}", array.data_fnv1a64),
                        "check": "FNV-1a 64 of the data bytes after the .npy header (little-endian f64, C order)",
                    }),
                );
            }
            let side = path.with_extension("npy.json");
            let mut f = AtomicFile::create(&side, &inputs)?;
            f.write_all(serde_json::to_string_pretty(&meta)?.as_bytes())?;
            AtomicFile::commit_pair(array.file, f)?;
        }
        other => bail!("expected an output ending in .csv, .json or .npy, found '.{other}'"),
    }
    Ok(())
}

/// Volumes below this many points stay on the CPU unless `--gpu`.
const AUTO_GPU_MIN_VOXELS: usize = 1 << 21;

fn run_volumes(a: &AnalyzeArgs, set: &tapestry::model::VolumeSet) -> Result<Output> {
    use tapestry::analysis::isosurface;
    if a.analysis != Analysis::Isosurface {
        bail!(
            "{}: a volume ({}); its analysis is isosurface",
            a.trace.display(),
            set.format
        );
    }
    let v = if a.quantity == "busy" {
        set.volumes
            .first()
            .ok_or_else(|| anyhow!("{}: no volume", a.trace.display()))?
    } else {
        set.find(&a.quantity)?
    };
    let steps: Vec<usize> = match a.step {
        Some(s) if s < v.steps.len() => vec![s],
        Some(s) => bail!(
            "--step {s}: the volume has {} steps (0..{})",
            v.steps.len(),
            v.steps.len() - 1
        ),
        None => (0..v.steps.len()).collect(),
    };
    if let Some(iso) = &a.iso
        && let Some(bad) = iso.iter().find(|x| !x.is_finite())
    {
        bail!("--iso: {bad} is not a finite number");
    }
    // the GPU twin when asked, or (automatically) for large volumes on a
    // hardware adapter whose storage bindings hold the field
    let mut gpu = match a.compute() {
        tapestry::gpu::Compute::Cpu => None,
        tapestry::gpu::Compute::Gpu => {
            let ctx = tapestry::gpu::GpuContext::new()?;
            Some(tapestry::gpu::kernels::isosurface::Extractor::new(
                &ctx, v.dims,
            )?)
        }
        tapestry::gpu::Compute::Auto if v.cells() >= AUTO_GPU_MIN_VOXELS => {
            tapestry::gpu::GpuContext::new()
                .ok()
                .filter(|c| !c.is_software())
                .and_then(|ctx| {
                    tapestry::gpu::kernels::isosurface::Extractor::new(&ctx, v.dims).ok()
                })
        }
        tapestry::gpu::Compute::Auto => None,
    };
    let compute = match &gpu {
        Some(x) => format!("gpu ({})", x.adapter()),
        None => "cpu".to_string(),
    };
    let mut rows = Vec::new();
    let mut first_meshes = Vec::new();
    for &t in &steps {
        let values = &v.values[t * v.cells()..(t + 1) * v.cells()];
        let isos = match &a.iso {
            Some(list) => list.clone(),
            None => {
                let (lo, hi) = values
                    .iter()
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |(p, q), &x| {
                        (p.min(x), q.max(x))
                    });
                isosurface::isovalues(lo, hi, 5)
            }
        };
        if let Some(x) = &mut gpu {
            x.set_field(values)?;
        }
        for iso in isos {
            let m = match &mut gpu {
                Some(x) => x.extract(iso)?,
                None => isosurface::extract(values, v.dims, iso),
            };
            rows.push(vec![
                Some(t as f64),
                Some(iso),
                Some(m.triangles() as f64),
                Some(m.area()),
                Some(m.signed_volume()),
            ]);
            if t == steps[0] {
                first_meshes.push((iso, m));
            }
        }
    }
    if let Some(path) = &a.mesh {
        write_meshes(path, &a.trace, v, steps[0], &first_meshes)?;
        eprintln!("wrote {}", path.display());
    }
    Ok(table(
        &[
            ("step", ""),
            ("isovalue", v.unit.as_str()),
            ("triangles", ""),
            ("area", "cells^2"),
            (
                "enclosed_volume",
                "cells^3, for surfaces closed inside the volume; > 0: the region above the isovalue",
            ),
        ],
        rows,
        json!({"analysis": "isosurface", "quantity": v.name, "dims": v.dims, "step_axis": v.step_axis,
               "steps": steps.iter().map(|&t| v.steps[t].clone()).collect::<Vec<_>>(),
               "inside": "values >= isovalue", "normals": "toward lower values", "compute": compute}),
    ))
}

/// Writes isosurfaces as glTF (one mesh per isovalue) or PLY (all in one).
fn write_meshes(
    path: &std::path::Path,
    trace: &std::path::Path,
    v: &tapestry::model::Volume,
    step: usize,
    meshes: &[(f64, tapestry::analysis::isosurface::IsoMesh)],
) -> Result<()> {
    let inputs = tapestry::readers::input_files(trace);
    let inputs: Vec<&std::path::Path> = inputs.iter().map(|p| p.as_path()).collect();
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let bytes = match ext {
        "ply" => {
            let nv: usize = meshes.iter().map(|(_, m)| m.positions.len()).sum();
            let nf: usize = meshes.iter().map(|(_, m)| m.triangles()).sum();
            let mut s = format!(
                "ply\nformat ascii 1.0\ncomment tapestry isosurfaces of {} at step {} ({} {})\nelement vertex {nv}\nproperty float x\nproperty float y\nproperty float z\nproperty float nx\nproperty float ny\nproperty float nz\nelement face {nf}\nproperty list uchar int vertex_indices\nend_header\n",
                v.name, step, v.step_axis, v.steps[step]
            );
            for (_, m) in meshes {
                for (p, n) in m.positions.iter().zip(&m.normals) {
                    s.push_str(&format!(
                        "{} {} {} {} {} {}\n",
                        p[0], p[1], p[2], n[0], n[1], n[2]
                    ));
                }
            }
            let mut base = 0;
            for (_, m) in meshes {
                for t in m.indices.chunks_exact(3) {
                    s.push_str(&format!(
                        "3 {} {} {}\n",
                        base + t[0],
                        base + t[1],
                        base + t[2]
                    ));
                }
                base += m.positions.len() as u32;
            }
            s.into_bytes()
        }
        "glb" | "gltf" => {
            let mut scene = tapestry::scene::Scene::new(
                format!(
                    "isosurfaces of {} at {} {}",
                    v.name, v.step_axis, v.steps[step]
                ),
                tapestry::scene::Projection::Perspective,
            );
            scene.axes = format!(
                "x: {}; y: {}; z: {} (cells)",
                v.axes[0], v.axes[1], v.axes[2]
            );
            let cmap = tapestry::scene::colormap::Colormap::named("viridis")?;
            for (k, (_, m)) in meshes.iter().enumerate() {
                let c = cmap.at(k as f32 / (meshes.len().max(2) - 1) as f32);
                scene.meshes.push(tapestry::scene::Mesh {
                    vertices: m
                        .positions
                        .iter()
                        .zip(&m.normals)
                        .map(|(p, n)| tapestry::scene::Vertex {
                            position: *p,
                            normal: *n,
                            color: [c[0], c[1], c[2], 1.0],
                        })
                        .collect(),
                    indices: m.indices.clone(),
                    lit: true,
                });
            }
            if ext == "glb" {
                tapestry::export::gltf::glb(&scene)?
            } else {
                tapestry::export::gltf::gltf(&scene)?
            }
        }
        other => bail!("--mesh: expected .glb, .gltf or .ply, found '.{other}'"),
    };
    tapestry::export::write_atomic(path, &bytes, &inputs)?;
    Ok(())
}

fn run_tensor(a: &AnalyzeArgs, t: &tapestry::readers::tensor::TensorFile) -> Result<Output> {
    if a.analysis != Analysis::Field {
        bail!(
            "{}: an element access tensor; its analysis is field (accesses of --kinds per interval and element)",
            t.path.display()
        );
    }
    let kinds = fields::access_kinds(&a.kinds)?;
    let c = tapestry::readers::tensor::read_access_counts(&t.path, kinds, a.processor)?;
    let f = fields::from_access_counts(c.intervals, c.elements, c.values, &a.kinds)?;
    let meta = json!({"analysis": "field", "quantity": f.quantity, "unit": f.unit, "shape": "[interval][element]", "kinds": a.kinds});
    Ok(Output::Matrix {
        rows: f.bins,
        cols: f.elements,
        values: Cells::Full(f.values),
        unit: f.unit,
        meta,
    })
}
