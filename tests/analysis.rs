//! The analysis core against closed forms, direct definitions, brute force,
//! and the worked example of paper 002 §5.5.

mod common;

use common::{shared_trace, tapestry};
use proptest::prelude::*;
use tapestry::Trace;
use tapestry::analysis::image::{self, Layout};
use tapestry::analysis::metric::{self, Metric, SampleMode};
use tapestry::analysis::moments::{self, MomentAcc};
use tapestry::analysis::{fields, signal, summary};
use tapestry::model::{BuildOptions, Format, LocationKind, StateClass, TimeUnit, TraceBuilder};
use tapestry::readers::{self, ReadOptions};

const US: u64 = 1000;

/// Figure 5-9 of paper 002 as a trace: every processor busy from the start
/// of tracing (0 µs) and set busy again at 11 µs, then the state changes of M.
fn worked_example() -> Trace {
    let mut b = TraceBuilder::new(Format::Synthetic, "fig5-9", TimeUnit::microseconds(), false);
    for p in 0..4 {
        b.locations
            .add(format!("proc {p}"), LocationKind::Thread, None, p);
    }
    let start = b.states.add("start", StateClass::Busy, None, 0);
    let busy = b.states.add("compute", StateClass::Busy, None, 1);
    let busy_intervals: [&[(u64, u64)]; 4] = [
        &[(11, 204), (325, 367), (488, 553)],
        &[(11, 106), (399, 455), (577, 641)],
        &[(11, 106), (553, 634)],
        &[(11, 106), (643, 724)],
    ];
    for (p, ivs) in busy_intervals.iter().enumerate() {
        b.interval(p as u32, 0, 11 * US, start);
        for &(s, e) in ivs.iter() {
            b.interval(p as u32, s * US, e * US, busy);
        }
    }
    b.finish(BuildOptions::default()).unwrap()
}

#[test]
fn worked_example_of_paper_002() {
    let t = worked_example();
    let mask = t.states.select(&["busy".into()]).unwrap();
    let m = metric::metric_matrix(&t, &Metric::Busy, &mask).unwrap();
    // M: Figure 5-9 (times in µs), after the 4 rows of the initial state at 0
    let rows: Vec<(u64, u32, f64)> = (0..m.len())
        .map(|i| (m.time[i] / US, m.location[i], m.value[i]))
        .collect();
    let fig: Vec<(u64, u32, f64)> = vec![
        (0, 0, 1.0),
        (0, 1, 1.0),
        (0, 2, 1.0),
        (0, 3, 1.0),
        (11, 0, 1.0),
        (11, 1, 1.0),
        (11, 2, 1.0),
        (11, 3, 1.0),
        (106, 1, 0.0),
        (106, 2, 0.0),
        (106, 3, 0.0),
        (204, 0, 0.0),
        (325, 0, 1.0),
        (367, 0, 0.0),
        (399, 1, 1.0),
        (455, 1, 0.0),
        (488, 0, 1.0),
        (553, 0, 0.0),
        (553, 2, 1.0),
        (577, 1, 1.0),
        (634, 2, 0.0),
        (641, 1, 0.0),
        (643, 3, 1.0),
        (724, 3, 0.0),
    ];
    assert_eq!(rows, fig);
    // S(106) and G(106)
    let s = m.state_vector(106 * US);
    assert_eq!(s, vec![1.0, 0.0, 0.0, 0.0]);
    let g = image::render(&s, &Layout::Hypercube).unwrap();
    assert_eq!((g.rows, g.cols), (2, 2));
    assert_eq!(g.values, vec![Some(1.0), Some(0.0), Some(0.0), Some(0.0)]);
    // x at every event time
    let x = metric::event_signal(&m, 100.0, "percent", false);
    let times: Vec<u64> = x.time.iter().map(|t| t / US).collect();
    assert_eq!(
        times,
        vec![
            0, 11, 106, 204, 325, 367, 399, 455, 488, 553, 577, 634, 641, 643, 724
        ]
    );
    assert_eq!(
        x.x,
        vec![
            100.0, 100.0, 25.0, 0.0, 25.0, 0.0, 25.0, 0.0, 25.0, 25.0, 50.0, 25.0, 0.0, 25.0, 0.0
        ]
    );
    // w: 725 samples of 1 µs in hold mode; A(0) holds 11 samples of 100 %
    let w = metric::temporal_signal(&x, 0.0, US, SampleMode::Hold, t.meta.span).unwrap();
    assert_eq!(w.len(), 725);
    assert!(w[..11].iter().all(|&v| v == 100.0));
    assert_eq!(
        (w[11], w[105], w[106], w[203], w[204], w[724]),
        (100.0, 100.0, 25.0, 25.0, 0.0, 0.0)
    );
    // the spectra of w and x are their DFTs
    for sig in [&w, &x.x] {
        let sp = signal::spectrum(sig, None);
        let n = sig.len();
        for k in [0usize, 1, 7, n / 2] {
            let (mut re, mut im) = (0.0, 0.0);
            for (i, v) in sig.iter().enumerate() {
                let a = -2.0 * std::f64::consts::PI * (i * k) as f64 / n as f64;
                re += v * a.cos();
                im += v * a.sin();
            }
            assert!((sp.magnitude[k] - (re * re + im * im).sqrt()).abs() < 1e-6 * n as f64);
        }
    }
    // the temporal signal holds more energy at low frequencies than x
    assert!(signal::spectrum(&w, None).power[1] > signal::spectrum(&x.x, None).power[1]);
}

#[test]
fn moments_closed_forms() {
    // one interval: m0 = L, m1 = centre, m2 = L/2, m3 = 0
    let m = MomentAcc::interval(1000, 3000).moments();
    assert_eq!(
        (m.m0, m.m1, m.m2, m.m3),
        (2000.0, Some(2000.0), Some(1000.0), Some(0.0))
    );
    // two equal intervals symmetric about 50: [0,10) and [90,100)
    let acc = MomentAcc::interval(0, 10).merge(MomentAcc::interval(90, 100));
    let m = acc.moments();
    assert_eq!(m.m1, Some(50.0));
    // μ2 = (1/20)(2·10·(45² + 100/12)) = 2025 + 25/3
    assert!((m.m2.unwrap() - (3.0 * (2025.0 + 25.0 / 3.0f64)).sqrt()).abs() < 1e-9);
    assert!(m.m3.unwrap().abs() < 1e-9);
    // skewed: [0,2) and [10,11): m1 = (2·1 + 1·10.5)/3; μ3 by hand
    let acc = MomentAcc::interval(0, 2).merge(MomentAcc::interval(10, 11));
    let m1: f64 = (2.0 * 1.0 + 10.5) / 3.0;
    let (d1, d2) = (1.0 - m1, 10.5 - m1);
    let mu3 = (2.0 * (d1.powi(3) + 3.0 * d1 * 4.0 / 12.0) + (d2.powi(3) + 3.0 * d2 / 12.0)) / 3.0;
    let m = acc.moments();
    assert!((m.m1.unwrap() - m1).abs() < 1e-12);
    assert!((m.m3.unwrap() - 3.0 * mu3.cbrt()).abs() < 1e-9);
    assert!(
        m.m3.unwrap() > 0.0,
        "more activity before m1: positive skew"
    );
}

fn trace_of(intervals: &[(u64, u64)]) -> Trace {
    let mut b = TraceBuilder::new(Format::Synthetic, "t", TimeUnit::nanoseconds(), false);
    b.locations.add("l", LocationKind::Thread, None, 0);
    let s = b.states.add("busy", StateClass::Busy, None, 0);
    let i = b.states.add("idle", StateClass::Idle, None, 1);
    for (k, &(a, e)) in intervals.iter().enumerate() {
        b.interval(0, a, e, if k % 3 == 2 { i } else { s });
    }
    b.finish(BuildOptions::default()).unwrap()
}

#[test]
fn moments_are_shift_invariant_near_1e18() {
    let base: Vec<(u64, u64)> = (0..50).map(|k| (k * 7, k * 7 + 1 + k % 3)).collect();
    let far: u64 = 1_000_000_000_000_000_000;
    let shifted: Vec<(u64, u64)> = base.iter().map(|&(a, b)| (a + far, b + far)).collect();
    let (t1, t2) = (trace_of(&base), trace_of(&shifted));
    let mask = t1.states.select(&["busy".into()]).unwrap();
    let a = moments::moments(&t1, &mask, 0, u64::MAX)[0];
    let b = moments::moments(&t2, &mask, 0, u64::MAX)[0];
    assert_eq!(a.m0, b.m0);
    assert_eq!(a.m2, b.m2);
    assert_eq!(a.m3, b.m3);
    // m1 as an f64 near 1e18 is only good to its 128 ns ulp; the
    // accumulator keeps it exactly as an integer origin plus a small mean
    let (aa, ab) = (
        moments::accumulate(t1.intervals.of(0), &mask, 0, u64::MAX),
        moments::accumulate(t2.intervals.of(0), &mask, 0, u64::MAX),
    );
    assert_eq!(ab.origin - far, aa.origin);
    assert_eq!(ab.mean, aa.mean);
    assert!((b.m1.unwrap() - (far as f64 + a.m1.unwrap())).abs() <= 256.0);
}

#[test]
fn undefined_moments_stay_undefined() {
    let t = trace_of(&[(0, 10)]);
    let mask = t.states.select(&["idle".into()]).unwrap();
    let m = moments::moments(&t, &mask, 0, 100)[0];
    assert_eq!((m.m0, m.m1, m.m2, m.m3), (0.0, None, None, None));
}

proptest! {
    #[test]
    fn two_m2_is_at_least_m0(raw in prop::collection::vec((0u64..10_000, 1u64..500), 1..40)) {
        let mut acc = MomentAcc::default();
        let mut t = 0;
        for &(gap, len) in &raw {
            acc = acc.merge(MomentAcc::interval(t + gap, t + gap + len));
            t += gap + len;
        }
        let m = acc.moments();
        prop_assert!(2.0 * m.m2.unwrap() >= m.m0 * (1.0 - 1e-12));
    }

    #[test]
    fn merging_partials_equals_one_pass(raw in prop::collection::vec((0u64..1000, 1u64..50), 2..40), cut in 1usize..39) {
        let mut ivs = Vec::new();
        let mut t = 0;
        for &(gap, len) in &raw {
            ivs.push((t + gap, t + gap + len));
            t += gap + len;
        }
        let tr = trace_of(&ivs);
        let all = tr.states.select(&["busy".into(), "idle".into()]).unwrap();
        let one = moments::accumulate(tr.intervals.of(0), &all, 0, u64::MAX);
        let cut = cut.min(ivs.len() - 1);
        let split = ivs[cut].0;
        let a = moments::accumulate(tr.intervals.of(0), &all, 0, split);
        let b = moments::accumulate(tr.intervals.of(0), &all, split, u64::MAX);
        let m = a.merge(b).moments();
        let o = one.moments();
        prop_assert_eq!(m.m0, o.m0);
        let close = |x: f64, y: f64| (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0);
        prop_assert!(close(m.m1.unwrap(), o.m1.unwrap()));
        prop_assert!(close(m.m2.unwrap(), o.m2.unwrap()));
        prop_assert!((m.m3.unwrap() - o.m3.unwrap()).abs() <= 1e-6 * o.m2.unwrap().max(1.0));
    }

    #[test]
    fn busy_fraction_field_matches_brute_force(
        raw in prop::collection::vec((0u64..30, 1u64..20), 1..15),
        bins in 1usize..9,
        t0 in 0u64..40,
        len in 9u64..200,
    ) {
        let mut ivs = Vec::new();
        let mut t = 0;
        for &(gap, l) in &raw {
            ivs.push((t + gap, t + gap + l));
            t += gap + l;
        }
        let tr = trace_of(&ivs);
        let mask = tr.states.select(&["busy".into()]).unwrap();
        let t1 = t0 + len;
        let f = fields::busy_fraction(&tr, &mask, t0, t1, bins).unwrap();
        // brute force: every nanosecond
        let busy_at = |ns: u64| tr.intervals.of(0).iter().any(|(a, b, s)| mask[s as usize] && a <= ns && ns < b);
        let mut total = 0.0;
        for k in 0..bins {
            let (a, b) = (f.edges[k], f.edges[k + 1]);
            let n = (a..b).filter(|&x| busy_at(x)).count() as f64;
            prop_assert!((f.at(k, 0) - n / (b - a) as f64).abs() < 1e-12);
            total += f.at(k, 0) * (b - a) as f64;
        }
        // the bins add up to m0 over the window
        let m0 = moments::moments(&tr, &mask, t0, t1)[0].m0;
        prop_assert!((total - m0).abs() < 1e-6);
    }
}

#[test]
fn correlations_and_filters_against_direct_definitions() {
    let x: Vec<f64> = (0..300)
        .map(|i| ((i * 37) % 17) as f64 + (i as f64 * 0.1).sin())
        .collect();
    let y: Vec<f64> = (0..200).map(|i| ((i * 13) % 7) as f64).collect();
    let a = signal::autocorrelation(&x, 299, true);
    let d = signal::autocorrelation_direct(&x, 299, true);
    assert!(a.iter().zip(&d).all(|(p, q)| (p - q).abs() < 1e-8));
    let a = signal::cross_correlation(&x, &y, false);
    let d = signal::cross_correlation_direct(&x, &y, false);
    assert!(a.iter().zip(&d).all(|(p, q)| (p - q).abs() < 1e-7));
    // moving average against its definition
    let ma = signal::moving_average(&x, 7).unwrap();
    for n in 6..x.len() {
        let direct: f64 = (0..7).map(|k| x[n - k]).sum::<f64>() / 7.0;
        assert!((ma[n].unwrap() - direct).abs() < 1e-9);
    }
    assert!(ma[..6].iter().all(Option::is_none));
    // low-pass against the inverse DFT of the kept bins
    let n = 40;
    let w: Vec<f64> = x[..n].to_vec();
    let f = signal::lowpass(&w, 3);
    for (t, ft) in f.iter().enumerate() {
        let mut v = 0.0;
        for k in 0..n {
            if k.min(n - k) > 3 {
                continue;
            }
            let (mut re, mut im) = (0.0, 0.0);
            for (i, s) in w.iter().enumerate() {
                let ang = -2.0 * std::f64::consts::PI * (i * k) as f64 / n as f64;
                re += s * ang.cos();
                im += s * ang.sin();
            }
            let ang = 2.0 * std::f64::consts::PI * (t * k) as f64 / n as f64;
            v += re * ang.cos() - im * ang.sin();
        }
        assert!((ft - v / n as f64).abs() < 1e-9);
    }
}

#[test]
fn real_traces_are_consistent_with_info() {
    for rel in [
        "paraver-qsort/qsort_beo3.prv",
        "chrome/simple_trace.json",
        "chrome/flow_simple.json",
    ] {
        let t = readers::read(&shared_trace(rel), &ReadOptions::default()).unwrap();
        let s = summary::summarize(&t);
        let mask = t.states.select(&["busy".into()]).unwrap();
        let m0: f64 = moments::moments(&t, &mask, 0, t.meta.span)
            .iter()
            .map(|m| m.m0)
            .sum();
        assert_eq!(
            m0 as u128, s.time_per_class[0].time_ns,
            "{rel}: Σ m0 = busy time of info"
        );
        let f = fields::busy_fraction(&t, &mask, 0, t.meta.span, 50).unwrap();
        let total: f64 = (0..f.bins)
            .map(|k| {
                (0..f.elements).map(|e| f.at(k, e)).sum::<f64>()
                    * (f.edges[k + 1] - f.edges[k]) as f64
            })
            .sum();
        assert!(
            (total - m0).abs() < 1e-3 * m0.max(1.0),
            "{rel}: field total {total} vs {m0}"
        );
        // the mean of w (mean mode) is the mean utilization
        let mm = metric::metric_matrix(&t, &Metric::Busy, &mask).unwrap();
        let x = metric::event_signal(&mm, 100.0, "percent", false);
        let delta = t.meta.span.div_ceil(64).max(1);
        let w = metric::temporal_signal(&x, 0.0, delta, SampleMode::Mean, t.meta.span).unwrap();
        let mean_w = w.iter().sum::<f64>() * delta as f64 / t.meta.span as f64 / 100.0;
        let util = m0 / (t.meta.span as f64 * t.num_locations() as f64);
        assert!((mean_w - util).abs() < 1e-9, "{rel}: {mean_w} vs {util}");
    }
}

#[test]
fn mismatch_energy_is_over_the_colour_index_images() {
    let q = shared_trace("paraver-qsort/qsort_beo3.prv");
    let q = q.to_str().unwrap();
    let d = tempfile::tempdir().unwrap();
    let json = |args: &[&str], name: &str| -> serde_json::Value {
        let out = d.path().join(name);
        let mut all = vec!["analyze", q, "image", "--m-range", "0:100"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-o", out.to_str().unwrap()]);
        let (code, _, err) = tapestry(&all);
        assert_eq!(code, 0, "{err}");
        serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap()
    };
    // the two colour-index images, each on its own, with the same range
    let g = |n0: &str, name: &str| -> Vec<f64> {
        json(&["--n0", n0], name)["values"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect()
    };
    let (a, b) = (g("60ms", "a.json"), g("100ms", "b.json"));
    let want: f64 = a.iter().zip(&b).map(|(x, y)| (x - y).powi(2)).sum();
    assert!(want > 0.0);
    let diff = json(
        &["--n0", "60ms", "--n0-b", "100ms", "--op", "diff"],
        "d.json",
    );
    let got = diff["meta"]["mismatch_energy"].as_f64().unwrap();
    assert!((got - want).abs() <= 1e-9 * want, "{got} vs {want}");
    assert!(diff["meta"]["mismatch_energy_metric"].as_f64().unwrap() < got);
    assert_eq!(diff["meta"]["layout"], "near-square");
}

#[test]
fn every_analysis_runs_from_the_command_line() {
    let q = shared_trace("paraver-qsort/qsort_beo3.prv");
    let q = q.to_str().unwrap();
    let d = tempfile::tempdir().unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec!["moments"],
        vec![
            "moments",
            "--states",
            "Running,Waiting*",
            "--window",
            "50ms:150ms",
        ],
        vec!["metric-matrix", "--metric", "messages"],
        vec!["state-vector", "--metric", "busy-fraction", "--n0", "100ms"],
        vec!["image", "--n0", "60ms", "--layout", "hypercube"],
        vec!["image", "--n0", "60ms", "--n0-b", "80ms", "--op", "diff"],
        vec!["image", "--n0", "60ms", "--op", "binary", "--th", ">=100"],
        vec![
            "image", "--n0", "60ms", "--op", "hotspot", "--th", "100..200",
        ],
        vec!["image", "--n0", "60ms", "--op", "stats"],
        vec!["signal-x"],
        vec!["signal-w", "--period", "1ms", "--mode", "hold"],
        vec!["spectrum", "--period", "1ms"],
        vec!["spectrum", "--domain", "event"],
        vec!["moving-average", "--period", "1ms", "--order", "5"],
        vec![
            "autocorrelation",
            "--period",
            "1ms",
            "--zero-mean",
            "--lags",
            "50",
        ],
        vec![
            "cross-correlation",
            "--period",
            "1ms",
            "--metric2",
            "messages",
        ],
        vec!["threshold", "--period", "1ms", "--th", ">=50"],
        vec!["lowpass", "--period", "1ms", "--cutoff", "5"],
        vec!["decimate", "--period", "1ms", "--alpha", "4"],
        vec!["histogram", "--classes", "5"],
        vec!["markov", "--classes", "3"],
        vec![
            "indicator",
            "--marker",
            "MPI Point-to-point=1",
            "--period",
            "1ms",
        ],
        vec!["field", "--bins", "20"],
        vec![
            "field",
            "--bins",
            "20",
            "--quantity",
            "bytes",
            "--field-layout",
            "grid:2x2",
        ],
        vec!["comm-matrix", "--metric", "bytes"],
    ];
    for c in &cases {
        let mut args = vec!["analyze", q];
        args.extend(c.iter().copied());
        let (code, out, err) = tapestry(&args);
        assert_eq!(code, 0, "{c:?}: {err}");
        assert!(out.starts_with("# {"), "{c:?}: {out}");
    }
    // output files: json and npy with a metadata file
    let j = d.path().join("m.json");
    let (code, _, err) = tapestry(&["analyze", q, "moments", "-o", j.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&j).unwrap()).unwrap();
    assert_eq!(v["columns"][1]["unit"], "ns");
    let n = d.path().join("f.npy");
    let (code, _, err) = tapestry(&[
        "analyze",
        q,
        "field",
        "--bins",
        "8",
        "-o",
        n.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let head = std::fs::read(&n).unwrap();
    assert!(String::from_utf8_lossy(&head[..128]).contains("'shape': (8, 4)"));
    assert!(d.path().join("f.npy.json").exists());
    // moments as .npy: m1..m3 of locations without time in the state set are NaN, and said so
    let m = d.path().join("m.npy");
    let (code, _, err) = tapestry(&[
        "analyze",
        q,
        "moments",
        "--states",
        "Group Communication",
        "-o",
        m.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let side: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.path().join("m.npy.json")).unwrap()).unwrap();
    assert!(side["missing_values"].as_str().unwrap().starts_with("NaN"));
    assert!(side["missing_count"].as_u64().is_some());
    // the sidecar identifies its array: data size and FNV-1a hash, so a
    // pair cut by a kill between the two renames is recognisable
    let pair_matches = |npy: &std::path::Path| {
        let bytes = std::fs::read(npy).unwrap();
        let side: serde_json::Value =
            serde_json::from_slice(&std::fs::read(npy.with_extension("npy.json")).unwrap())
                .unwrap();
        let n = side["array"]["data_bytes"].as_u64().unwrap() as usize;
        let data = &bytes[bytes.len() - n..];
        let h = tapestry::export::npy::fnv1a(tapestry::export::npy::FNV_START, data);
        side["array"]["data_fnv1a64"].as_str().unwrap() == format!("{h:016x}")
    };
    assert!(pair_matches(&m));
    assert!(pair_matches(&n));
    // a stale sidecar (another run's array put in place without it) is told apart
    let saved = std::fs::read(d.path().join("m.npy.json")).unwrap();
    let (code, _, err) = tapestry(&["analyze", q, "moments", "-o", m.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(pair_matches(&m));
    std::fs::write(d.path().join("m.npy.json"), saved).unwrap();
    assert!(!pair_matches(&m));
    let leftovers: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // bad parameters
    for (args, want) in [
        (vec!["moments", "--window", "5:2"], "not after"),
        (vec!["moments", "--states", "Nope"], "matches no state"),
        (vec!["signal-w", "--period", "0"], "at least 1 ns"),
        (
            vec!["image", "--coords", "/nonexistent/coords.csv"],
            "cannot read",
        ),
        (vec!["threshold"], "--th"),
        (
            vec!["field", "--field-layout", "grid:3x3"],
            "holds 9 elements",
        ),
        (vec!["metric-matrix", "--metric", "counter:x"], "no counter"),
        (vec!["profile-rows"], "profiles"),
        (vec!["moments", "-o", "/tmp/x.txt"], ".csv, .json or .npy"),
    ] {
        let mut a = vec!["analyze", q];
        a.extend(args.iter().copied());
        let (code, _, err) = tapestry(&a);
        assert_eq!(code, 1, "{args:?}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

#[test]
fn tensor_fields_and_profile_reductions_from_the_command_line() {
    let d = tempfile::tempdir().unwrap();
    let prv = d.path().join("k.prv");
    let npy = d.path().join("acc.npy");
    let (code, _, err) = tapestry(&[
        "synth",
        "kernel",
        "-p",
        "4",
        "--width",
        "4",
        "--height",
        "4",
        "--steps",
        "4",
        "--setup",
        "2",
        "--tensor",
        npy.to_str().unwrap(),
        "-o",
        prv.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let q = format!("tensor:{}", npy.display());
    let (code, out, err) = tapestry(&[
        "analyze",
        prv.to_str().unwrap(),
        "field",
        "--quantity",
        &q,
        "--kinds",
        "writes",
        "--field-layout",
        "grid:4x4",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"leading_empty_bins\":2"), "{out}");
    // each stencil interval writes every element once
    let rows: Vec<Vec<f64>> = out
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split(',').map(|c| c.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len(), 6);
    assert!(rows[2].iter().all(|&v| v == 1.0));
    // profile reductions on a line profile
    let lp = common::write(
        d.path(),
        "p.csv",
        b"# procedure: f 1 3\n# procedure: g 4 9\nline,processor,ticks\n1,0,4\n2,1,6\n9,0,1\n",
    );
    let (code, out, err) = tapestry(&["analyze", lp.to_str().unwrap(), "profile-procedures"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("1,f,10,90.9"), "{out}");
    let (code, out, _) = tapestry(&["analyze", lp.to_str().unwrap(), "profile-rows"]);
    assert_eq!(code, 0);
    assert!(
        out.lines()
            .nth(2)
            .unwrap()
            .starts_with("1,line 1,0,1,4,0,2,4,4"),
        "{out}"
    );
    let (code, out, _) = tapestry(&[
        "analyze",
        lp.to_str().unwrap(),
        "profile-overview",
        "--skip",
        "2",
        "--strips",
        "2",
    ]);
    assert_eq!(code, 0);
    assert!(out.contains("\"skipped\":[[3,8]]"), "{out}");
}

/// #12 item 3: the busy-fraction signals x and w equal the mean of the
/// state vector at every sample, not a value held since each location's
/// last event.
#[test]
fn busy_fraction_signals_are_the_mean_state_vector() {
    let q = shared_trace("paraver-qsort/qsort_beo3.prv");
    let q = q.to_str().unwrap();
    let rows = |args: &[&str]| -> Vec<Vec<f64>> {
        let mut a = vec!["analyze", q];
        a.extend(args);
        let (code, out, err) = tapestry(&a);
        assert_eq!(code, 0, "{args:?}: {err}");
        out.lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .skip(1)
            .map(|l| {
                l.split(',')
                    .map(|v| v.parse().unwrap_or(f64::NAN))
                    .collect()
            })
            .collect()
    };
    let mean_sv = |n0: u64| {
        let v = rows(&[
            "state-vector",
            "--metric",
            "busy-fraction",
            "--n0",
            &n0.to_string(),
        ]);
        100.0 * v.iter().map(|r| r[1]).sum::<f64>() / v.len() as f64
    };
    let x = rows(&["signal-x", "--metric", "busy-fraction"]);
    for r in x.iter().step_by(x.len() / 7) {
        let (t, v) = (r[1] as u64, r[2]);
        assert!(
            (v - mean_sv(t)).abs() < 1e-9,
            "x at {t}: {v} vs {}",
            mean_sv(t)
        );
    }
    let w = rows(&[
        "signal-w",
        "--metric",
        "busy-fraction",
        "--period",
        "10ms",
        "--mode",
        "hold",
    ]);
    for r in w.iter().step_by(5) {
        let (t, v) = (r[1] as u64, r[2]);
        assert!(
            (v - mean_sv(t)).abs() < 1e-9,
            "w at {t}: {v} vs {}",
            mean_sv(t)
        );
    }
}

/// #11 execution control: ten frames forward and ten back return to the
/// start with the same statistics; every count goes down on the way back;
/// frames advance by records or ticks, whichever comes first.
#[test]
fn playback_forward_and_back() {
    let q = shared_trace("paraver-qsort/qsort_beo3.prv");
    let q = q.to_str().unwrap();
    let table = |args: &[&str]| -> Vec<Vec<f64>> {
        let mut a = vec!["analyze", q, "playback"];
        a.extend(args);
        let (code, out, err) = tapestry(&a);
        assert_eq!(code, 0, "{args:?}: {err}");
        out.lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .skip(1)
            .map(|l| l.split(',').map(|v| v.parse().unwrap()).collect())
            .collect()
    };
    let fwd = table(&[
        "--n0",
        "50ms",
        "--frames",
        "10",
        "--ticks-per-frame",
        "15ms",
    ]);
    let end = fwd.last().unwrap()[1];
    assert_eq!(end, 200e6);
    let back = table(&[
        "--n0",
        "200ms",
        "--frames",
        "10",
        "--ticks-per-frame",
        "15ms",
        "--backward",
    ]);
    // the same cursors in reverse, with the same statistics
    for (f, b) in fwd.iter().zip(back.iter().rev()) {
        assert_eq!(f[1..], b[1..], "at {}", f[1]);
    }
    for w in back.windows(2) {
        for (c, (now, before)) in w[1].iter().zip(&w[0]).enumerate().skip(2) {
            assert!(now <= before, "column {c} went up moving back");
        }
    }
    // by records: each frame passes at most 25 records
    let ev = table(&[
        "--frames",
        "20",
        "--events-per-frame",
        "25",
        "--ticks-per-frame",
        "1s",
    ]);
    for w in ev.windows(2) {
        assert!(w[1][2] - w[0][2] <= 25.0 + 8.0, "{w:?}");
        assert!(w[1][1] > w[0][1] || w[1][1] == 260199000.0);
    }
    let (code, _, err) = tapestry(&["analyze", q, "playback", "--frames", "3"]);
    assert_ne!(code, 0);
    assert!(err.contains("events or ticks"), "{err}");
}

/// Access tensors as CSV tables (interval, element, processor, kind,
/// count) give the `.npy`'s fields and whole tensor; bad rows are errors
/// with their line.
#[test]
fn access_tensors_as_csv_tables() {
    use tapestry::readers::tensor;
    let d = tempfile::tempdir().unwrap();
    let prv = d.path().join("k.prv");
    let npy = d.path().join("acc.npy");
    let (code, _, err) = tapestry(&[
        "synth",
        "kernel",
        "-p",
        "3",
        "--width",
        "4",
        "--height",
        "3",
        "--steps",
        "3",
        "--tensor",
        npy.to_str().unwrap(),
        "-o",
        prv.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    // the same tensor as a table of its non-zero cells, kinds by name,
    // columns in another order, one cell split over two rows
    let whole = tensor::read_access_tensor(&npy).unwrap();
    let names = ["local-read", "remote-read", "local-write", "remote-write"];
    let mut csv = format!(
        "# an access table\n# shape: {} {} {}\ncount,kind,processor,element,interval\n",
        whole.intervals, whole.elements, whole.processors
    );
    for t in 0..whole.intervals {
        for e in 0..whole.elements {
            for p in 0..whole.processors {
                for (k, name) in names.iter().enumerate() {
                    let c = whole.at(t, e, p, k);
                    if c > 0.0 {
                        csv.push_str(&format!("{},{name},{p},{e},{t}\n", c - 0.5));
                        csv.push_str(&format!("0.5,{k},{p},{e},{t}\n"));
                    }
                }
            }
        }
    }
    let table = common::write(d.path(), "acc.csv", csv.as_bytes());
    assert_eq!(tensor::read_access_tensor(&table).unwrap(), whole);
    for kinds in ["reads", "writes", "remote", "all"] {
        let field = |path: &std::path::Path| {
            let (code, out, err) = tapestry(&[
                "analyze",
                prv.to_str().unwrap(),
                "field",
                "--quantity",
                &format!("tensor:{}", path.display()),
                "--kinds",
                kinds,
            ]);
            assert_eq!(code, 0, "{err}");
            out.lines().skip(1).map(str::to_string).collect::<Vec<_>>()
        };
        assert_eq!(field(&npy), field(&table), "{kinds}");
    }
    // opened on its own, as the .npy is
    let (code, out, err) = tapestry(&[
        "analyze",
        table.to_str().unwrap(),
        "field",
        "--kinds",
        "all",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.lines().count() > 3);
    // bad tables
    for (body, want) in [
        (
            "interval,element,processor,kind,count\n0,1,2,read,4\n",
            "line 2: expected a kind",
        ),
        (
            "interval,element,processor,kind,count\n0,1,-2,lr,4\n",
            "line 2: expected the processor index",
        ),
        (
            "interval,element,processor,kind,count\n0,1,2,lr,NaN\n",
            "line 2: expected a count",
        ),
        (
            "interval,element,processor,kind,count\n0,1\n",
            "line 2: expected a processor in column 3",
        ),
        (
            "interval,element,processor,kind,count\n99999999,0,0,lr,1\n",
            "expected the interval index from 0 to 16777215",
        ),
        (
            "# shape: 1 2\ninterval,element,processor,kind,count\n",
            "line 1: expected '# shape:",
        ),
        (
            "interval,element,processor,kind,count\n",
            "at least one access",
        ),
    ] {
        let p = common::write(d.path(), "bad.csv", body.as_bytes());
        let (code, _, err) = tapestry(&["analyze", p.to_str().unwrap(), "field"]);
        assert_eq!(code, 1, "{body}");
        assert!(err.contains(want), "{body}: {err}");
    }
    // a shape beyond memory is refused before it is allocated
    let p = common::write(
        d.path(),
        "huge.csv",
        b"# shape: 16000000 16000000 1\ninterval,element,processor,kind,count\n0,0,0,lr,1\n",
    );
    let (code, _, err) = tapestry(&["analyze", p.to_str().unwrap(), "field"]);
    assert_eq!(code, 1);
    assert!(err.contains("needs ~"), "{err}");
}

/// Comparing runs (#14): `--template` gives A − B per location for moments
/// and fields, and the difference image with its mismatch energy, checked
/// by hand on two 2-processor traces; the (BLOCK,*) against (CYCLIC,*)
/// Gaussian elimination of paper 002 Fig. 6-8; bad pairs refused.
#[test]
fn comparing_runs_with_a_template() {
    let d = tempfile::tempdir().unwrap();
    let head = "#Paraver (01/01/70 at 00:00):10_ns:1(2):1:2(1:1,1:1)\n";
    let a = common::write(
        d.path(),
        "a.prv",
        format!("{head}1:1:1:1:1:0:10:1\n1:2:1:2:1:0:4:1\n").as_bytes(),
    );
    let b = common::write(
        d.path(),
        "b.prv",
        format!("{head}1:1:1:1:1:0:6:1\n1:2:1:2:1:0:8:1\n").as_bytes(),
    );
    let (a_, b_) = (a.to_str().unwrap(), b.to_str().unwrap());
    let cells = |out: &str| -> Vec<Vec<String>> {
        out.lines()
            .filter(|l| !l.starts_with('#'))
            .skip(1)
            .map(|l| l.split(',').map(str::to_string).collect())
            .collect()
    };
    // moments: Δm0 = 10 − 6 and 4 − 8; Δm1 = 5 − 3 and 2 − 4
    let (code, out, err) = tapestry(&["analyze", a_, "moments", "--template", b_]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"analysis\":\"moments difference\""), "{out}");
    let c = cells(&out);
    assert_eq!((c[0][2].as_str(), c[1][2].as_str()), ("4", "-4"), "{out}");
    assert_eq!((c[0][3].as_str(), c[1][3].as_str()), ("2", "-2"), "{out}");
    // the image at n0 = 10 ns: busy fractions A (1, 0.4), B (0.6, 0.8);
    // colour indices over 0..1 → 0..255: (255, 102) and (153, 204)
    let o = d.path().join("img.json");
    let (code, _, err) = tapestry(&[
        "analyze",
        a_,
        "image",
        "--template",
        b_,
        "--metric",
        "busy-fraction",
        "--n0",
        "10",
        "--m-range",
        "0:1",
        "--layout",
        "natural",
        "--cols",
        "2",
        "-o",
        o.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&o).unwrap()).unwrap();
    let m = &v["meta"];
    let e = m["mismatch_energy"].as_f64().unwrap();
    assert!((e - 2.0 * 102.0 * 102.0).abs() < 1e-6, "{m}");
    assert!(
        (m["mismatch_energy_metric"].as_f64().unwrap() - 0.32).abs() < 1e-12,
        "{m}"
    );
    assert!(
        (m["difference_stats"]["mean"].as_f64().unwrap()).abs() < 1e-12,
        "{m}"
    );
    // A − B: processor 0 gained (+0.4, stretched to 255), processor 1 lost
    let vals: Vec<f64> = v["values"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r.as_array().cloned().unwrap_or_else(|| vec![r.clone()]))
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert_eq!(vals, vec![255.0, 0.0], "{v}");
    let hist: f64 = m["difference_histogram"]["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .sum();
    assert_eq!(hist, 2.0);
    // the same trace at the same time as a template: nothing differs
    let (code, out, err) = tapestry(&["analyze", a_, "field", "--bins", "5", "--template", a_]);
    assert_eq!(code, 0, "{err}");
    assert!(
        cells(&out)
            .iter()
            .flatten()
            .all(|x| x.parse::<f64>().unwrap() == 0.0),
        "{out}"
    );
    // a saved image (colour indices) as the template
    let saved = d.path().join("a.npy");
    let args = [
        "--metric",
        "busy-fraction",
        "--n0",
        "10",
        "--m-range",
        "0:1",
    ];
    let mut cmd = vec!["analyze", a_, "image"];
    cmd.extend(args);
    cmd.extend(["-o", saved.to_str().unwrap()]);
    let (code, _, err) = tapestry(&cmd);
    assert_eq!(code, 0, "{err}");
    let mut cmd = vec![
        "analyze",
        a_,
        "image",
        "--template",
        saved.to_str().unwrap(),
    ];
    cmd.extend(args);
    let (code, out, err) = tapestry(&cmd);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"mismatch_energy\":0.0"), "{out}");

    // paper 002 Fig. 6-8: (CYCLIC,*) keeps the top rows' processors busier
    // than (BLOCK,*), whose first processors run out of rows
    let (bl, cy) = (d.path().join("block.prv"), d.path().join("cyclic.prv"));
    for (p, dist) in [(&bl, "block"), (&cy, "cyclic")] {
        let (code, _, err) = tapestry(&[
            "synth",
            "gauss",
            "--n",
            "128",
            "-p",
            "16",
            "--dist",
            dist,
            "-o",
            p.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
    }
    let (code, out, err) = tapestry(&[
        "analyze",
        bl.to_str().unwrap(),
        "moments",
        "--template",
        cy.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let dm0: Vec<f64> = cells(&out).iter().map(|r| r[2].parse().unwrap()).collect();
    assert_eq!(dm0.len(), 16);
    let first: f64 = dm0[..4].iter().sum();
    let last: f64 = dm0[12..].iter().sum();
    assert!(first < 0.0 && last > 0.0, "{dm0:?}");
    assert!(
        dm0.windows(2).filter(|w| w[1] > w[0]).count() >= 12,
        "{dm0:?}"
    );

    // bad pairs
    let four = d.path().join("four.prv");
    let (code, _, err) = tapestry(&[
        "synth",
        "gauss",
        "--n",
        "16",
        "-p",
        "4",
        "-o",
        four.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    for (args, want) in [
        (
            vec!["moments", "--template", four.to_str().unwrap()],
            "do not correspond",
        ),
        (
            vec!["image", "--template", four.to_str().unwrap()],
            "do not correspond",
        ),
        (
            vec!["spectrum", "--template", b_],
            "--template compares moments",
        ),
        (
            vec!["moments", "--template", "/nonexistent.prv"],
            "nonexistent",
        ),
    ] {
        let mut cmd = vec!["analyze", a_];
        cmd.extend(args.iter().copied());
        let (code, _, err) = tapestry(&cmd);
        assert_eq!(code, 1, "{args:?}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    let (code, _, err) = tapestry(&[
        "analyze",
        a_,
        "field",
        "--bins",
        "5",
        "--template",
        b_,
        "--template-window",
        "0:5",
    ]);
    assert_eq!(code, 0, "{err}");
}

/// Template signals (paper 002 §6.5.4, Fig. 6-22): the performance signal
/// of one broadcast, cut from a template run, matched against a run of
/// eight broadcasts on 16 processors peaks at the broadcasts: every peak
/// lies within one sample of an `Iteration` marker of the indicator
/// sequence, and every broadcast after the first (which starts from idle)
/// is found.
#[test]
fn template_signals_find_the_broadcasts() {
    let d = tempfile::tempdir().unwrap();
    let run = d.path().join("bc8.prv");
    let tpl = d.path().join("bc3.prv");
    for (p, reps) in [(&run, "8"), (&tpl, "3")] {
        let (code, _, err) = tapestry(&[
            "synth",
            "bcast",
            "-p",
            "16",
            "--reps",
            reps,
            "-o",
            p.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
    }
    let r = run.to_str().unwrap();
    // the samples (1 µs) where a run's indicator of `Iteration` is 1
    let markers = |trace: &str| -> Vec<i64> {
        let (code, out, err) = tapestry(&[
            "analyze",
            trace,
            "indicator",
            "--marker",
            "Iteration",
            "--period",
            "1us",
        ]);
        assert_eq!(code, 0, "{err}");
        out.lines()
            .filter(|l| !l.starts_with('#'))
            .skip(1)
            .filter_map(|l| l.split_once(','))
            .filter(|(_, v)| *v == "1")
            .map(|(n, _)| n.parse().unwrap())
            .collect()
    };
    let marks = markers(r);
    assert_eq!(marks.len(), 8, "{marks:?}");
    // the template: the second broadcast of the other run
    let tmarks = markers(tpl.to_str().unwrap());
    let window = format!("{}us:{}us", tmarks[1], tmarks[2]);
    let (code, out, err) = tapestry(&[
        "analyze",
        r,
        "cross-correlation",
        "--template",
        tpl.to_str().unwrap(),
        "--template-window",
        &window,
        "--period",
        "1us",
    ]);
    assert_eq!(code, 0, "{err}");
    let meta: serde_json::Value = serde_json::from_str(&out.lines().next().unwrap()[2..]).unwrap();
    assert_eq!(meta["analysis"], "template match");
    let m = meta["template_samples"].as_i64().unwrap();
    let peaks: Vec<i64> = meta["peak_lags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    let n = out.lines().filter(|l| !l.starts_with('#')).count() as i64 - 1 + m - 1;
    for p in &peaks {
        assert!(
            marks.iter().any(|k| (k - p).abs() <= 1),
            "peak {p} not at a broadcast {marks:?}"
        );
    }
    for k in marks.iter().skip(1).filter(|&&k| k + m <= n) {
        assert!(
            peaks.iter().any(|p| (k - p).abs() <= 1),
            "broadcast at {k} not found: {peaks:?}"
        );
    }
    // every value is a correlation
    for l in out.lines().filter(|l| !l.starts_with('#')).skip(1) {
        if let Some(c) = l.rsplit(',').next().and_then(|c| c.parse::<f64>().ok()) {
            assert!((-1.0..=1.0).contains(&c), "{l}");
        }
    }
    // bad requests
    for (args, want) in [
        (vec!["--template", r], "needs --template-window"),
        (
            vec!["--template", r, "--template-window", "0:0"],
            "not after",
        ),
    ] {
        let mut cmd = vec!["analyze", r, "cross-correlation", "--period", "1us"];
        cmd.extend(args.iter().copied());
        let (code, _, err) = tapestry(&cmd);
        assert_eq!(code, 1, "{args:?}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

/// Phases by marker (`--window phase:MARKER[=V|#K]`) and by region
/// (`region:NAME`), for every analysis and for the template's window:
/// paper 002 Fig. 6-9 compares the elimination phase (`Workload phase` 1)
/// with back substitution (2) of one run.
#[test]
fn phases_by_marker_and_region() {
    let d = tempfile::tempdir().unwrap();
    let g = d.path().join("g.prv");
    let (code, _, err) = tapestry(&[
        "synth",
        "gauss",
        "--n",
        "64",
        "-p",
        "8",
        "-o",
        g.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let g = g.to_str().unwrap();
    let window = |spec: &str| -> (u64, u64) {
        let (code, out, err) = tapestry(&["analyze", g, "moments", "--window", spec]);
        assert_eq!(code, 0, "{spec}: {err}");
        let meta: serde_json::Value =
            serde_json::from_str(&out.lines().next().unwrap()[2..]).unwrap();
        let w = &meta["window_ns"];
        (w[0].as_u64().unwrap(), w[1].as_u64().unwrap())
    };
    let (code, out, _) = tapestry(&["info", g]);
    assert_eq!(code, 0);
    let span: u64 = out
        .lines()
        .find_map(|l| l.split('(').nth(1)?.strip_suffix(" ns)")?.parse().ok())
        .unwrap();
    let ge = window("phase:Workload phase=1");
    let bs = window("phase:Workload phase=2");
    assert_eq!(ge.0, 0);
    assert_eq!(
        ge.1, bs.0,
        "back substitution starts where elimination ends"
    );
    assert_eq!(bs.1, span);
    assert_eq!(window("phase:Workload phase#1"), bs);
    assert_eq!(window("phase:Workload phase"), ge);
    let it = window("phase:Iteration=3");
    assert!(it.0 > ge.0 && it.1 < ge.1, "{it:?} within {ge:?}");
    // --phase is the same as --window phase:… (and takes region:NAME)
    let (code, out, err) = tapestry(&["analyze", g, "moments", "--phase", "Workload phase=2"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(&format!("\"window_ns\":[{},{}]", bs.0, bs.1)),
        "{out}"
    );
    let (code, _, err) = tapestry(&[
        "analyze",
        g,
        "moments",
        "--phase",
        "Iteration",
        "--window",
        "0:5",
    ]);
    assert_eq!(code, 2, "{err}");
    let run = window("region:Running");
    assert!(run.0 < run.1 && run.1 <= span);
    // GE against BS as a template comparison
    let (code, out, err) = tapestry(&[
        "analyze",
        g,
        "field",
        "--bins",
        "8",
        "--window",
        "phase:Workload phase=1",
        "--template",
        g,
        "--template-window",
        "phase:Workload phase=2",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"analysis\":\"field difference\""), "{out}");
    // markers or regions that never occur
    for (spec, want) in [
        ("phase:Nope", "is not an event type of this trace (types: "),
        ("phase:Iteration=99999", "never has the value 99999"),
        ("phase:Workload phase#7", "occurrence #7 does not exist"),
        ("phase:Iteration=x", "expected an integer marker value"),
        ("region:Nowhere", "no state or region of that name"),
    ] {
        let (code, _, err) = tapestry(&["analyze", g, "moments", "--window", spec]);
        assert_eq!(code, 1, "{spec}");
        assert!(err.contains(want), "{spec}: {err}");
    }
}
