//! The profile terrain and heat map (paper 004): a trace's function ×
//! location profile against the state times, TAU profiles written from a
//! real run's shape (the LAMMPS trace) read back and drawn, the synthetic
//! line profile's overview, level of detail, the linked cursor, and clear
//! errors for bad parameters and inputs.

mod common;

use common::{shared_trace, tapestry, write};
use tapestry::analysis::{matrices, summary};
use tapestry::readers::{self, Loaded, ReadOptions};
use tapestry::views::{BuildCtx, Prepared, ViewState};

const CTX: BuildCtx = BuildCtx {
    step: 0,
    width: 1280,
    height: 720,
    triangle_budget: None,
    cursor: None,
    selected: None,
};

fn lammps() -> tapestry::Trace {
    readers::read(
        &shared_trace("lammps-melt-16/lammps-melt-16.json.gz"),
        &ReadOptions::default(),
    )
    .unwrap()
}

fn prepared(input: &Loaded, view: &str, params: serde_json::Value) -> tapestry::Result<Prepared> {
    Prepared::new(
        input,
        &ViewState {
            params,
            ..ViewState::new(view)
        },
    )
}

#[test]
fn a_trace_profile_is_its_state_times() {
    let t = lammps();
    let p = matrices::trace_profile(&t);
    let per = summary::state_time_per_location(&t);
    assert_eq!(p.num_columns(), t.num_locations());
    let c = p.num_columns();
    for (r, name) in p.rows.iter().enumerate() {
        let s = (0..t.states.len() as u32)
            .find(|&s| t.states.get(s).unwrap().name == *name)
            .unwrap();
        for (l, times) in per.rows().into_iter().enumerate() {
            assert_eq!(p.metrics[0].values[r * c + l], times[s as usize] as f64);
        }
    }
    let total: f64 = p.metrics[0].values.iter().sum();
    let direct: u64 = per.sum();
    assert_eq!(total, direct as f64);
    // visits: one per interval
    let visits: f64 = p.metrics[1].values.iter().sum();
    assert_eq!(visits as usize, t.intervals.len());
}

/// TAU `profile.N.0.0` files of the LAMMPS run's shape: its functions with
/// their exclusive times and visits per rank (inclusive = exclusive).
fn write_tau(dir: &std::path::Path) -> tapestry::model::ProfileMatrix {
    let p = matrices::trace_profile(&lammps());
    let c = p.num_columns();
    for l in 0..c {
        let mut text = format!(
            "{} templated_functions_MULTI_TIME\n# Name Calls Subrs Excl Incl ProfileCalls #\n",
            p.num_rows()
        );
        for (r, name) in p.rows.iter().enumerate() {
            // TAU writes microseconds
            let us = p.metrics[0].values[r * c + l] / 1e3;
            let calls = p.metrics[1].values[r * c + l];
            text.push_str(&format!(
                "\"{name}\" {calls} 0 {us} {us} 0 GROUP=\"{}\"\n",
                if name.starts_with("MPI_") {
                    "MPI"
                } else {
                    "TAU_USER"
                }
            ));
        }
        text.push_str("0 aggregates\n");
        write(dir, &format!("profile.{l}.0.0"), text.as_bytes());
    }
    p
}

#[test]
fn tau_profiles_of_a_real_run_in_both_views() {
    let d = tempfile::tempdir().unwrap();
    let from = write_tau(d.path());
    let input = readers::load(&d.path().join("profile.0.0.0"), &ReadOptions::default()).unwrap();
    let Loaded::Profile(tau) = &input else {
        panic!("a profile")
    };
    assert_eq!(tau.num_columns(), 16);
    assert_eq!(tau.num_rows(), from.num_rows());
    let m = tau.primary_metric();
    let total: f64 = tau.metrics[m].values.iter().sum();
    let want: f64 = from.metrics[0].values.iter().sum::<f64>() / 1e3;
    assert!((total - want).abs() < 1e-6 * want, "{total} {want}");
    for view in ["profile-terrain", "profile-heatmap"] {
        let p = prepared(&input, view, serde_json::json!({"cursor": [1, 11]})).unwrap();
        let s = p.build(CTX).unwrap();
        assert!(s.title.contains("16 threads"), "{}", s.title);
        assert!(s.legend.is_some());
        assert!(s.labels.iter().any(|l| l.text == "thread"), "{view}");
    }
    // the heat map ranks MPI_Send first, as the trace does
    let p = prepared(&input, "profile-heatmap", serde_json::json!({})).unwrap();
    let s = p.build(CTX).unwrap();
    assert!(
        s.key.iter().any(|k| k.text.starts_with("1. MPI_Send")),
        "{:?}",
        s.key
    );
    // and from the trace itself
    let tr = readers::load(
        &shared_trace("lammps-melt-16/lammps-melt-16.json.gz"),
        &ReadOptions::default(),
    )
    .unwrap();
    let s = prepared(&tr, "profile-heatmap", serde_json::json!({}))
        .unwrap()
        .build(CTX)
        .unwrap();
    assert!(s.key.iter().any(|k| k.text.starts_with("1. MPI_Send")));
}

fn synth_profile(d: &std::path::Path, lines: &str, procs: &str) -> Loaded {
    let f = d.join("p.csv");
    let (code, _, err) = tapestry(&[
        "synth",
        "profile",
        "--lines",
        lines,
        "-p",
        procs,
        "-o",
        f.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    readers::load(&f, &ReadOptions::default()).unwrap()
}

#[test]
fn line_profile_overview_terrain_and_cursor() {
    let d = tempfile::tempdir().unwrap();
    let input = synth_profile(d.path(), "2000", "64");
    let Loaded::Profile(prof) = &input else {
        panic!("a profile")
    };
    // the heat map skips the zero runs that the overview analysis skips
    let o = matrices::overview(prof, 0, 4, 1, matrices::BinBy::Max, 1).unwrap();
    let skipped: i64 = o.skipped.iter().map(|(a, b)| b - a + 1).sum();
    let h = prepared(&input, "profile-heatmap", serde_json::json!({})).unwrap();
    let s = h.build(CTX).unwrap();
    assert!(
        s.title.contains(&format!("{skipped} zero rows")),
        "{}",
        s.title
    );
    assert!(
        s.key.iter().any(|k| k.text == "busiest: solve"),
        "{:?}",
        s.key
    );
    // terrain: level of detail keeps the grid under max_cells
    let t = prepared(
        &input,
        "profile-terrain",
        serde_json::json!({"max_cells": 10000}),
    )
    .unwrap();
    let s = t.build(CTX).unwrap();
    assert!(
        s.meshes[0].vertices.len() <= 10_000,
        "{}",
        s.meshes[0].vertices.len()
    );
    assert!(s.title.contains("blocks of"), "{}", s.title);
    // the cursor names its line, processor and value
    let t = prepared(
        &input,
        "profile-terrain",
        serde_json::json!({"cursor": [500, 40]}),
    )
    .unwrap();
    let s = t.build(CTX).unwrap();
    let v = prof.value(0, 500, 40).unwrap();
    let want = format!("source line {}, processor 40", prof.row_ids[500]);
    let l = s
        .labels
        .iter()
        .find(|l| l.text.starts_with(&want))
        .unwrap_or_else(|| panic!("no cursor label {want}"));
    assert!(
        l.text.contains(&format!("{v}")) || v >= 1e4,
        "{} {v}",
        l.text
    );
    // raw colours over a fixed range
    let raw = prepared(
        &input,
        "profile-heatmap",
        serde_json::json!({"normalize": false, "range": [0, 5000]}),
    )
    .unwrap();
    let lg = raw.build(CTX).unwrap().legend.unwrap();
    assert_eq!((lg.min, lg.max), (0.0, 5000.0));
}

#[test]
fn bad_parameters_and_inputs_are_clear_errors() {
    let d = tempfile::tempdir().unwrap();
    let input = synth_profile(d.path(), "100", "4");
    for (params, want) in [
        (serde_json::json!({"metric": "flops"}), "no metric 'flops'"),
        (serde_json::json!({"cursor": [100000, 0]}), "outside"),
        (serde_json::json!({"cursor": [1]}), "cursor must be"),
        (serde_json::json!({"range": [5, 1]}), "range"),
        (serde_json::json!({"by": "mean"}), "by must be"),
        (serde_json::json!({"strips": 0}), "strips"),
        (serde_json::json!({"max_cells": 1}), "max_cells"),
    ] {
        for view in ["profile-terrain", "profile-heatmap"] {
            let e = match prepared(&input, view, params.clone()) {
                Ok(_) => panic!("{view} {params} accepted"),
                Err(e) => e.to_string(),
            };
            assert!(e.contains(want), "{params}: {e}");
        }
    }
    // a volume is not a profile
    let v = d.path().join("v.npy");
    let (code, _, err) = tapestry(&[
        "synth",
        "volume",
        "--dims",
        "4x4x4",
        "-o",
        v.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = tapestry(&[
        "render",
        v.to_str().unwrap(),
        "--view",
        "profile-terrain",
        "-o",
        d.path().join("x.png").to_str().unwrap(),
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("needs a profile"), "{err}");
}
