//! Signal plots (paper 002) on a real trace: the plotted series are the
//! numbers `analyze` writes, `--window` restricts them, several metrics
//! overlay with a legend, SVG is well-formed XML with its axes and units,
//! and bad requests are clear errors.

mod common;

use common::{shared_trace, tapestry};
use tapestry::readers::{self, ReadOptions};
use tapestry::views::{DataSpec, Prepared, ViewState};

const LAMMPS: &str = "lammps-melt-16/lammps-melt-16.json.gz";

fn prepared(
    view: &str,
    params: serde_json::Value,
    window: Option<[u64; 2]>,
) -> tapestry::Result<Prepared> {
    let input = readers::load(&shared_trace(LAMMPS), &ReadOptions::default())?;
    Prepared::new(
        &input,
        &ViewState {
            params,
            data: DataSpec {
                window,
                ..DataSpec::default()
            },
            ..ViewState::new(view)
        },
    )
}

fn csv_column(text: &str, col: usize) -> Vec<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .skip(1)
        .map(|l| l.split(',').nth(col).unwrap().parse().unwrap())
        .collect()
}

#[test]
fn plotted_series_are_the_analysed_numbers() {
    let p = prepared(
        "signal",
        serde_json::json!({"period": 1_000_000, "order": 0}),
        None,
    )
    .unwrap();
    let c = p.chart().unwrap().unwrap();
    assert_eq!(c.series.len(), 1);
    let (code, out, err) = tapestry(&[
        "analyze",
        shared_trace(LAMMPS).to_str().unwrap(),
        "signal-w",
        "--period",
        "1ms",
    ]);
    assert_eq!(code, 0, "{err}");
    let w = csv_column(&out, 2);
    assert_eq!(c.series[0].y, w);
    // the spectrum without its DC bin
    let s = prepared("spectrum", serde_json::json!({"period": 1_000_000}), None)
        .unwrap()
        .chart()
        .unwrap()
        .unwrap();
    let (_, out, _) = tapestry(&[
        "analyze",
        shared_trace(LAMMPS).to_str().unwrap(),
        "spectrum",
        "--period",
        "1ms",
    ]);
    let mag = csv_column(&out, 2);
    assert_eq!(s.series[0].y.len(), mag.len() - 1);
    for (a, b) in s.series[0].y.iter().zip(&mag[1..]) {
        assert!((a - b).abs() <= 1e-9 * b.abs().max(1.0), "{a} {b}");
    }
}

#[test]
fn the_window_restricts_every_plot() {
    let w = [100_000_000u64, 200_000_000];
    for view in ["signal", "spectrum", "correlation", "histogram", "markov"] {
        let p = prepared(view, serde_json::json!({"period": 1_000_000}), Some(w)).unwrap();
        let c = p.chart().unwrap().unwrap();
        assert!(c.title.contains("100 ms – 200 ms"), "{view}: {}", c.title);
    }
    let c = prepared(
        "signal",
        serde_json::json!({"period": 1_000_000, "order": 0}),
        Some(w),
    )
    .unwrap()
    .chart()
    .unwrap()
    .unwrap();
    let x = &c.series[0].x;
    assert_eq!(x.len(), 100);
    assert!(x.iter().all(|t| (1e8..2e8).contains(t)));
    // time-weighted histogram: the classes add up to the window
    let h = prepared("histogram", serde_json::json!({}), Some(w))
        .unwrap()
        .chart()
        .unwrap()
        .unwrap();
    let total: f64 = h.series[0].y.iter().sum();
    assert!((total - 1e8).abs() < 1.0, "{total}");
    // event-frequency histogram: the classes add up to the events of x in the window
    let e = prepared(
        "histogram",
        serde_json::json!({"weight": "events", "domain": "event"}),
        Some(w),
    )
    .unwrap();
    let x = e.chart().unwrap().unwrap();
    let events: f64 = x.series[0].y.iter().sum();
    let sig = prepared(
        "signal",
        serde_json::json!({"domain": "event", "order": 0}),
        Some(w),
    )
    .unwrap()
    .chart()
    .unwrap()
    .unwrap();
    assert_eq!(events as usize, sig.series[0].y.len());
    assert!(x.title.starts_with("Event-frequency"), "{}", x.title);
}

#[test]
fn analyze_honours_the_window_in_signal_analyses() {
    let l = shared_trace(LAMMPS);
    let run = |analysis: &str, extra: &[&str]| {
        let mut a = vec!["analyze", l.to_str().unwrap(), analysis, "--period", "1ms"];
        a.extend(extra);
        let (code, out, err) = tapestry(&a);
        assert_eq!(code, 0, "{analysis}: {err}");
        out.lines()
            .filter(|x| !x.starts_with('#') && !x.is_empty())
            .count()
            - 1
    };
    let w = ["--window", "100ms:200ms"];
    assert_eq!(run("signal-w", &w), 100);
    assert_eq!(run("spectrum", &w), 51);
    assert_eq!(run("autocorrelation", &w), 100);
    assert!(run("signal-w", &[]) > 500);
    // the time-weighted histogram covers exactly the window
    let (code, out, err) = tapestry(&[
        "analyze",
        l.to_str().unwrap(),
        "histogram",
        "--window",
        "100ms:200ms",
    ]);
    assert_eq!(code, 0, "{err}");
    let time: f64 = out
        .lines()
        .filter(|x| !x.starts_with('#'))
        .skip(1)
        .map(|x| x.split(',').nth(3).unwrap().parse::<f64>().unwrap())
        .sum();
    assert!((time - 1e8).abs() < 1.0, "{time}");
    // event domain: the samples of x inside the window
    let all = run("signal-x", &[]);
    let inside = run("signal-x", &w);
    assert!(inside > 0 && inside < all, "{inside} {all}");
}

#[test]
fn overlays_svg_and_errors() {
    // two metrics of one unit overlay with a legend entry each
    let c = prepared(
        "signal",
        serde_json::json!({"metrics": ["busy", "busy-fraction"], "order": 0}),
        None,
    )
    .unwrap()
    .chart()
    .unwrap()
    .unwrap();
    assert_eq!(c.series.len(), 2);
    let s = prepared(
        "signal",
        serde_json::json!({"metrics": ["busy", "busy-fraction"]}),
        None,
    )
    .unwrap()
    .build(tapestry::views::BuildCtx {
        step: 0,
        width: 1280,
        height: 720,
        triangle_budget: None,
        cursor: None,
        selected: None,
    })
    .unwrap();
    assert!(s.key.iter().any(|k| k.text == "busy-fraction"));
    // SVG from the command line: well-formed, with the axis names and units
    let d = tempfile::tempdir().unwrap();
    for view in ["spectrum", "markov", "histogram"] {
        let out = d.path().join(format!("{view}.svg"));
        let (code, _, err) = tapestry(&[
            "render",
            shared_trace(LAMMPS).to_str().unwrap(),
            "--view",
            view,
            "-o",
            out.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
        let text = std::fs::read_to_string(&out).unwrap();
        let mut r = quick_xml::Reader::from_str(&text);
        let mut texts = String::new();
        let mut depth = 0i64;
        loop {
            match r.read_event().unwrap() {
                quick_xml::events::Event::Start(_) => depth += 1,
                quick_xml::events::Event::End(_) => depth -= 1,
                quick_xml::events::Event::Text(t) => texts.push_str(&String::from_utf8_lossy(&t)),
                quick_xml::events::Event::Eof => break,
                _ => {}
            }
        }
        assert_eq!(depth, 0, "{view}: unbalanced");
        match view {
            "spectrum" => assert!(
                texts.contains("frequency [Hz]") && texts.contains("Hz"),
                "{texts}"
            ),
            "markov" => assert!(texts.contains("to state") && texts.contains("from state")),
            _ => assert!(
                texts.contains("time in class") && texts.contains(" ms"),
                "{texts}"
            ),
        }
    }
    // a view that is not a chart
    let (code, _, err) = tapestry(&[
        "render",
        shared_trace(LAMMPS).to_str().unwrap(),
        "--view",
        "kiviat",
        "-o",
        d.path().join("k.svg").to_str().unwrap(),
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("not a 2D chart"), "{err}");
    for (view, params, want) in [
        (
            "signal",
            serde_json::json!({"metrics": ["busy", "messages"]}),
            "one unit",
        ),
        ("signal", serde_json::json!({"metrics": []}), "1 to 12"),
        (
            "spectrum",
            serde_json::json!({"metrics": ["flops"]}),
            "expected a metric",
        ),
        ("histogram", serde_json::json!({"classes": 0}), "classes"),
        (
            "histogram",
            serde_json::json!({"weight": "bytes"}),
            "weight",
        ),
        ("signal", serde_json::json!({"mode": "median"}), "mode"),
        ("signal", serde_json::json!({"domain": "space"}), "domain"),
    ] {
        let e = match prepared(view, params.clone(), None).and_then(|p| p.chart().unwrap()) {
            Ok(_) => panic!("{view} {params} accepted"),
            Err(e) => e.to_string(),
        };
        assert!(e.contains(want), "{params}: {e}");
    }
}
