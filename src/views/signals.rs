//! Signal plots (paper 002 chapters 5–6): the temporal signal w (or the
//! event signal x) of one or more metrics with its moving average, the
//! spectrum |W(K)| (Hz, or cycles per event), the autocorrelation (or the
//! cross-correlation of the first metric with the others), the
//! time-weighted histogram and the Markov transition matrix. Several
//! metrics overlay with a legend; axes carry units; `--window` restricts
//! every plot to its samples. Each plot is a [`Chart`]: rendered to PNG and
//! in the window like every view, and written as SVG with plotters
//! (`render --view spectrum -o s.svg`).
//!
//! One module, five registry lines: [`SignalView`] over a [`PlotKind`].

use std::marker::PhantomData;

use serde::{Deserialize, Serialize};

use super::{BuildCtx, ParamDoc, Resolved, View};
use crate::analysis::metric::{self, Metric, SampleMode};
use crate::analysis::signal;
use crate::error::{Error, Result};
use crate::model::Time;
use crate::readers::Loaded;
use crate::scene::Scene;
use crate::scene::axes::Unit;
use crate::scene::chart::{Chart, ChartMatrix, Series, SeriesKind};

/// Parameters of the signal plots.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SignalParams {
    /// Metrics overlaid: busy, busy-fraction, messages, bytes, counter:NAME.
    pub metrics: Vec<String>,
    /// Sampling period of w in ns (0: the window / 1024).
    pub period: u64,
    /// mean or hold.
    pub mode: String,
    /// temporal (w) or event (x).
    pub domain: String,
    /// Moving-average order (signal plot; 0: none).
    pub order: usize,
    /// Largest correlation lag in samples (0: all).
    pub lags: usize,
    /// Correlate the zero-mean signals.
    pub zero_mean: bool,
    /// Histogram classes and Markov states.
    pub classes: usize,
    /// Spectrum: power |W|²/N instead of the magnitude |W|.
    pub power: bool,
    /// Histogram: weigh by time (time-weighted) or count events.
    pub weight: String,
}

impl Default for SignalParams {
    fn default() -> Self {
        SignalParams {
            metrics: vec!["busy".into()],
            period: 0,
            mode: "mean".into(),
            domain: "temporal".into(),
            order: 20,
            lags: 0,
            zero_mean: true,
            classes: 20,
            power: false,
            weight: "time".into(),
        }
    }
}

const PARAMS: &[ParamDoc] = &[
    ParamDoc {
        key: "metrics",
        help: "metrics overlaid: busy, busy-fraction, messages, bytes, counter:NAME [[\"busy\"]]",
    },
    ParamDoc {
        key: "period",
        help: "sampling period of w in ns [the window / 1024]",
    },
    ParamDoc {
        key: "mode",
        help: "sampling of w: mean (time average per period) or hold [mean]",
    },
    ParamDoc {
        key: "domain",
        help: "temporal (w, per period) or event (x, per event) [temporal]",
    },
    ParamDoc {
        key: "order",
        help: "moving-average order N of the signal plot, 0 for none [20]",
    },
    ParamDoc {
        key: "lags",
        help: "largest correlation lag in samples, 0 for all [0]",
    },
    ParamDoc {
        key: "zero_mean",
        help: "correlate the zero-mean signals [true]",
    },
    ParamDoc {
        key: "classes",
        help: "histogram classes and Markov states [20]",
    },
    ParamDoc {
        key: "power",
        help: "spectrum: power |W(K)|²/N instead of the magnitude [false]",
    },
    ParamDoc {
        key: "weight",
        help: "histogram: time (how long x stays in a class) or events (how many samples of x) [time]",
    },
];

/// One metric's signal inside the window.
pub struct Signal {
    pub name: String,
    pub unit: String,
    /// Sample times (ns) of w, or event times of x.
    pub time: Vec<Time>,
    pub value: Vec<f64>,
    /// The sampling period in seconds (temporal domain).
    pub period_s: Option<f64>,
    /// The held event signal x in the window (for the time-weighted histogram).
    pub x_time: Vec<Time>,
    pub x: Vec<f64>,
    /// The records of x in the window (for the event-frequency histogram).
    pub x_events: Vec<f64>,
}

/// The signals of the metrics.
pub struct SignalData {
    pub signals: Vec<Signal>,
    pub t0: Time,
    pub t1: Time,
}

/// What a signal view plots.
pub trait PlotKind: Send + Sync + 'static {
    const NAME: &'static str;
    const ABOUT: &'static str;
    fn chart(d: &SignalData, p: &SignalParams) -> Result<Chart>;
}

/// A signal plot of kind `K`.
pub struct SignalView<K: PlotKind>(PhantomData<fn() -> K>);

fn check(p: &SignalParams) -> Result<()> {
    if p.metrics.is_empty() || p.metrics.len() > 12 {
        return Err(Error::Invalid(format!(
            "metrics must name 1 to 12 metrics, not {}",
            p.metrics.len()
        )));
    }
    if !matches!(p.mode.as_str(), "mean" | "hold") {
        return Err(Error::Invalid(format!(
            "mode must be mean or hold, not '{}'",
            p.mode
        )));
    }
    if !matches!(p.domain.as_str(), "temporal" | "event") {
        return Err(Error::Invalid(format!(
            "domain must be temporal or event, not '{}'",
            p.domain
        )));
    }
    if !matches!(p.weight.as_str(), "time" | "events") {
        return Err(Error::Invalid(format!(
            "weight must be time or events, not '{}'",
            p.weight
        )));
    }
    if p.classes == 0 || p.classes > 1000 {
        return Err(Error::Invalid(format!(
            "classes must be 1 to 1000, not {}",
            p.classes
        )));
    }
    Ok(())
}

fn compute(input: &Loaded, spec: &Resolved, view: &str, p: &SignalParams) -> Result<SignalData> {
    let t = super::inputs::trace(input, view)?;
    check(p)?;
    let mask = t.states.select(&spec.spec.states)?;
    let (t0, t1) = (spec.t0, spec.t1);
    let delta = if p.period > 0 {
        p.period
    } else {
        ((t1 - t0) / 1024).max(1)
    };
    let mut signals = Vec::new();
    for name in &p.metrics {
        let m = Metric::parse(name, t)?;
        let unit = m.signal_scale().1;
        let sig = metric::MetricSignal::new(t, &m, &mask, false)?;
        // the held x inside the window, starting with its value at t0
        let (x_time, xs) = sig.held(t0, t1);
        let x = &sig.x;
        let k0 = x.time.partition_point(|&s| s < t0);
        let k1 = x.time.partition_point(|&s| s < t1);
        let x_events = x.x[k0..k1].to_vec();
        let (time, value, period_s) = if p.domain == "event" {
            (x.time[k0..k1].to_vec(), x_events.clone(), None)
        } else {
            let mode = if p.mode == "hold" {
                SampleMode::Hold
            } else {
                SampleMode::Mean
            };
            let w = sig.w(delta, mode)?;
            let (a, b) = (
                t0.div_ceil(delta) as usize,
                (t1.div_ceil(delta) as usize).min(w.len()),
            );
            let a = a.min(b);
            (
                (a..b).map(|k| k as u64 * delta).collect(),
                w[a..b].to_vec(),
                Some(delta as f64 * 1e-9),
            )
        };
        if value.is_empty() {
            return Err(Error::Invalid(format!(
                "the signal of {name} has no samples in the window (a shorter period, or a wider window)"
            )));
        }
        signals.push(Signal {
            name: name.clone(),
            unit: unit.to_string(),
            time,
            value,
            period_s,
            x_time,
            x: xs,
            x_events,
        });
    }
    Ok(SignalData { signals, t0, t1 })
}

impl<K: PlotKind> View for SignalView<K> {
    const NAME: &'static str = K::NAME;
    const ABOUT: &'static str = K::ABOUT;
    const COLORMAP: &'static str = "viridis";
    const PARAMS: &'static [ParamDoc] = PARAMS;
    type Params = SignalParams;
    type Data = SignalData;

    fn accepts(input: &Loaded, _spec: &Resolved, p: &SignalParams) -> Result<()> {
        let t = super::inputs::trace(input, K::NAME)?;
        check(p)?;
        for m in &p.metrics {
            Metric::parse(m, t)?;
        }
        Ok(())
    }
    fn compute(input: &Loaded, spec: &Resolved, p: &SignalParams) -> Result<SignalData> {
        compute(input, spec, K::NAME, p)
    }
    fn data_key(p: &SignalParams) -> serde_json::Value {
        serde_json::json!({ "metrics": p.metrics, "period": p.period, "mode": p.mode, "domain": p.domain })
    }
    fn build(d: &SignalData, _spec: &Resolved, p: &SignalParams, ctx: BuildCtx) -> Result<Scene> {
        let px = if ctx.width == 0 {
            0
        } else {
            (ctx.width as f32 - 244.0).max(64.0) as usize
        };
        K::chart(d, p)?.to_scene(px)
    }
    fn chart(d: &SignalData, _spec: &Resolved, p: &SignalParams) -> Option<Result<Chart>> {
        Some(K::chart(d, p))
    }
    fn panel(ui: &mut egui::Ui, p: &mut SignalParams) {
        ui.add(egui::Slider::new(&mut p.order, 0..=200).text("moving-average order"));
        ui.add(egui::Slider::new(&mut p.classes, 1..=100).text("classes / states"));
        ui.checkbox(&mut p.zero_mean, "zero-mean correlation");
        ui.checkbox(&mut p.power, "power spectrum");
    }
}

/// One unit for overlaid signals, or an error.
fn one_unit(d: &SignalData) -> Result<&str> {
    let u = d.signals[0].unit.as_str();
    if let Some(o) = d.signals.iter().find(|s| s.unit != u) {
        return Err(Error::Invalid(format!(
            "overlaid signals need one unit: {} is in {u}, {} in {}",
            d.signals[0].name, o.name, o.unit
        )));
    }
    Ok(u)
}

fn window(d: &SignalData) -> String {
    super::moments::window_text(d.t0, d.t1)
}

fn domain_text(d: &SignalData) -> String {
    match d.signals[0].period_s {
        Some(p) => format!(
            "w every {}",
            crate::scene::axes::format_time(p * 1e9, p * 1e9, 0.0)
        ),
        None => "x per event".into(),
    }
}

/// The signal plot.
pub struct SignalPlot;
impl PlotKind for SignalPlot {
    const NAME: &'static str = "signal";
    const ABOUT: &'static str = "Signal plot: w (or x) of one or more metrics over time, with its moving average (paper 002)";
    fn chart(d: &SignalData, p: &SignalParams) -> Result<Chart> {
        let unit = one_unit(d)?;
        let mut series = Vec::new();
        for s in &d.signals {
            series.push(Series {
                name: s.name.clone(),
                kind: SeriesKind::Line,
                x: s.time.iter().map(|&t| t as f64).collect(),
                y: s.value.clone(),
            });
            if p.order > 1 && s.value.len() > p.order {
                let ma = signal::moving_average(&s.value, p.order)?;
                series.push(Series {
                    name: format!("{}, moving average of {}", s.name, p.order),
                    kind: SeriesKind::Line,
                    x: s.time.iter().map(|&t| t as f64).collect(),
                    y: ma.into_iter().map(|v| v.unwrap_or(f64::NAN)).collect(),
                });
            }
        }
        Ok(Chart {
            title: format!(
                "Signal: {} — {}, {}",
                metric_list(d),
                domain_text(d),
                window(d)
            ),
            x_name: "time".into(),
            x_unit: Unit::Nanoseconds,
            y_name: value_name(d),
            y_unit: Unit::from_name(unit),
            series,
            matrix: None,
        })
    }
}

fn metric_list(d: &SignalData) -> String {
    d.signals
        .iter()
        .map(|s| s.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn value_name(d: &SignalData) -> String {
    let w = if d.signals[0].period_s.is_some() {
        "w"
    } else {
        "x"
    };
    w.to_string()
}

/// The spectrum.
pub struct SpectrumPlot;
impl PlotKind for SpectrumPlot {
    const NAME: &'static str = "spectrum";
    const ABOUT: &'static str =
        "Spectrum |W(K)| of w (Hz) or x (cycles per event) of one or more metrics (paper 002)";
    fn chart(d: &SignalData, p: &SignalParams) -> Result<Chart> {
        one_unit(d)?;
        let mut series = Vec::new();
        let mut funit = String::new();
        for s in &d.signals {
            let sp = signal::spectrum(&s.value, s.period_s);
            funit = sp.frequency_unit.clone();
            let y = if p.power { sp.power } else { sp.magnitude };
            // the DC bin (the mean) dwarfs the rest: left out
            series.push(Series {
                name: s.name.clone(),
                kind: SeriesKind::Line,
                x: sp.frequency.iter().skip(1).copied().collect(),
                y: y.into_iter().skip(1).collect(),
            });
        }
        if series.iter().all(|s| s.x.is_empty()) {
            return Err(Error::Invalid(
                "a spectrum needs at least 2 samples in the window".into(),
            ));
        }
        Ok(Chart {
            title: format!(
                "Spectrum of {} — {}, {} samples, {} (DC bin left out)",
                metric_list(d),
                domain_text(d),
                d.signals[0].value.len(),
                window(d)
            ),
            x_name: "frequency".into(),
            x_unit: if funit == "Hz" {
                Unit::Other("Hz".into())
            } else {
                Unit::Other("cycles/event".into())
            },
            y_name: if p.power {
                "power |W(K)|²/N".into()
            } else {
                "magnitude |W(K)|".into()
            },
            y_unit: Unit::Count(String::new()),
            series,
            matrix: None,
        })
    }
}

/// Autocorrelation, or cross-correlation with the first metric.
pub struct CorrelationPlot;
impl PlotKind for CorrelationPlot {
    const NAME: &'static str = "correlation";
    const ABOUT: &'static str = "Autocorrelation of w (one metric) or cross-correlation of the first metric with the others (paper 002)";
    fn chart(d: &SignalData, p: &SignalParams) -> Result<Chart> {
        let first = &d.signals[0];
        let lag_x = |l: usize| match first.period_s {
            Some(ps) => l as f64 * ps * 1e9,
            None => l as f64,
        };
        let mut series = Vec::new();
        let max_lag = if p.lags == 0 {
            first.value.len().saturating_sub(1)
        } else {
            p.lags
        };
        let title = if d.signals.len() == 1 {
            let a = signal::autocorrelation(&first.value, max_lag, p.zero_mean);
            series.push(Series {
                name: format!("γ({}) autocorrelation", first.name),
                kind: SeriesKind::Line,
                x: (0..a.len()).map(lag_x).collect(),
                y: a,
            });
            format!("Autocorrelation of {}", first.name)
        } else {
            for s in &d.signals[1..] {
                let c = signal::cross_correlation(&first.value, &s.value, p.zero_mean);
                let n = c.len().min(max_lag + 1);
                series.push(Series {
                    name: format!("γ({}, {})", first.name, s.name),
                    kind: SeriesKind::Line,
                    x: (0..n).map(lag_x).collect(),
                    y: c[..n].to_vec(),
                });
            }
            format!("Cross-correlation of {} with the others", first.name)
        };
        Ok(Chart {
            title: format!(
                "{title} — {}{}, {}",
                domain_text(d),
                if p.zero_mean { ", zero mean" } else { "" },
                window(d)
            ),
            x_name: "lag".into(),
            x_unit: if first.period_s.is_some() {
                Unit::Nanoseconds
            } else {
                Unit::Count("events".into())
            },
            y_name: format!(
                "γ [{}²]",
                if first.unit == "percent" {
                    "%"
                } else {
                    &first.unit
                }
            ),
            y_unit: Unit::Count(String::new()),
            series,
            matrix: None,
        })
    }
}

/// The time-weighted histogram of x.
pub struct HistogramPlot;
impl PlotKind for HistogramPlot {
    const NAME: &'static str = "histogram";
    const ABOUT: &'static str = "Histogram of x: how long the signal spends in each value class, or how many events fall in it (paper 002)";
    fn chart(d: &SignalData, p: &SignalParams) -> Result<Chart> {
        let unit = one_unit(d)?;
        // one set of classes for all metrics
        let lo = d
            .signals
            .iter()
            .flat_map(|s| s.x.iter().copied())
            .fold(f64::INFINITY, f64::min);
        let hi = d
            .signals
            .iter()
            .flat_map(|s| s.x.iter().copied())
            .fold(f64::NEG_INFINITY, f64::max);
        let range = if hi > lo {
            (lo, hi)
        } else {
            (lo - 0.5, lo + 0.5)
        };
        let mut series = Vec::new();
        let events = p.weight == "events";
        for s in &d.signals {
            let h = if events {
                signal::histogram(&s.x_events, p.classes, Some(range))?
            } else {
                signal::time_histogram(&s.x_time, &s.x, d.t1, p.classes, Some(range))?
            };
            series.push(Series {
                name: s.name.clone(),
                kind: SeriesKind::Bars,
                x: h.edges,
                y: h.weight,
            });
        }
        Ok(Chart {
            title: format!(
                "{} histogram of {} — {} classes, {}",
                if events {
                    "Event-frequency"
                } else {
                    "Time-weighted"
                },
                metric_list(d),
                p.classes,
                window(d)
            ),
            x_name: "x".into(),
            x_unit: Unit::from_name(unit),
            y_name: if events {
                "events in class".into()
            } else {
                "time in class".into()
            },
            y_unit: if events {
                Unit::Count("events".into())
            } else {
                Unit::Nanoseconds
            },
            series,
            matrix: None,
        })
    }
}

/// A class edge with at most 3 decimals, trailing zeros dropped.
fn short(v: f64) -> String {
    let t = format!("{v:.3}");
    let t = t.trim_end_matches('0').trim_end_matches('.');
    if t.is_empty() || t == "-" {
        "0".into()
    } else {
        t.to_string()
    }
}

/// The Markov transition matrix of the first metric.
pub struct MarkovPlot;
impl PlotKind for MarkovPlot {
    const NAME: &'static str = "markov";
    const ABOUT: &'static str = "Markov model of w: transition probabilities between value classes, stationary distribution (paper 002)";
    fn chart(d: &SignalData, p: &SignalParams) -> Result<Chart> {
        let s = &d.signals[0];
        let m = signal::markov(&s.value, p.classes, None)?;
        let n = m.transition.len();
        let values: Vec<f64> = m.transition.iter().flatten().copied().collect();
        let series = m
            .stationary
            .iter()
            .enumerate()
            .filter(|(_, pi)| **pi > 0.0)
            .take(12)
            .map(|(k, pi)| Series {
                name: format!(
                    "π{k} = {pi:.3}: {}–{} {}",
                    short(m.edges[k]),
                    short(m.edges[k + 1]),
                    if s.unit == "percent" { "%" } else { &s.unit }
                ),
                kind: SeriesKind::Line,
                x: Vec::new(),
                y: Vec::new(),
            })
            .collect();
        let closed: Vec<String> = m
            .classes
            .iter()
            .zip(&m.closed)
            .filter(|(_, c)| **c)
            .map(|(c, _)| match c.as_slice() {
                [one] => format!("{{{one}}}"),
                more => format!(
                    "{{{}…{}}} ({} states)",
                    more[0],
                    more[more.len() - 1],
                    more.len()
                ),
            })
            .take(3)
            .collect();
        Ok(Chart {
            title: format!(
                "Markov transitions of {} — {n} states, closed: {}{}, {}",
                s.name,
                closed.join(" "),
                if m.unique {
                    ""
                } else {
                    " (π not unique: the limit from the first state)"
                },
                window(d)
            ),
            x_name: "to state".into(),
            x_unit: Unit::Count("state".into()),
            y_name: "from state".into(),
            y_unit: Unit::Count("state".into()),
            series,
            matrix: Some(ChartMatrix {
                rows: n,
                cols: n,
                values,
                value_name: "P(to | from)".into(),
                colormap: "viridis".into(),
            }),
        })
    }
}
