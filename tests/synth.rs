//! Synthetic workloads: every workload written as Paraver and as Chrome
//! JSON reads back into the same model as the one built directly from the
//! simulation; output is deterministic for a seed; P = 65,536 works.

mod common;

use common::tapestry;
use tapestry::Trace;
use tapestry::model::StateClass;
use tapestry::readers::{self, ReadOptions};
use tapestry::synth::{
    self, Distribution, KernelParams, MachineModel, OutputFormat, SynthConfig, Workload,
};

type Canon = (
    Vec<String>,
    Vec<(String, StateClass)>,
    Vec<(u32, u64, u64, String)>,
    Vec<(u32, u32, u64, u64, u64, i64)>,
    Vec<(u32, u64, String, i64)>,
);

/// The model reduced to what every format must preserve.
fn canon(t: &Trace) -> Canon {
    let names = t
        .locations
        .locations
        .iter()
        .map(|l| l.name.to_string())
        .collect();
    let mut states: Vec<(String, StateClass)> = t
        .states
        .iter()
        .filter(|(id, _)| t.intervals.all().state.contains(id))
        .map(|(_, s)| (s.name.clone(), s.class))
        .collect();
    states.sort_by(|a, b| a.0.cmp(&b.0));
    let mut iv = Vec::new();
    for l in 0..t.num_locations() as u32 {
        for (s, e, st) in t.intervals.of(l).iter() {
            iv.push((l, s, e, t.states.get(st).unwrap().name.clone()));
        }
    }
    let m = &t.messages;
    let mut msgs: Vec<_> = (0..m.len()).map(|i| m.record(i)).collect();
    msgs.sort();
    let mut ev = Vec::new();
    for l in 0..t.num_locations() as u32 {
        for i in t.events.range_of(l) {
            ev.push((
                l,
                t.events.time[i],
                t.event_types.get(t.events.kind[i]).unwrap().name.clone(),
                t.events.value[i],
            ));
        }
    }
    ev.sort();
    (names, states, iv, msgs, ev)
}

fn config(workload: Workload, procs: u32) -> SynthConfig {
    SynthConfig {
        workload,
        procs,
        procs_per_node: 4,
        model: MachineModel::default(),
        seed: 7,
        counters: 0,
    }
}

fn round_trip(cfg: &SynthConfig) {
    let model = synth::to_trace(cfg).unwrap();
    let want = canon(&model);
    assert!(!want.2.is_empty());
    let d = tempfile::tempdir().unwrap();
    for (fmt, name) in [
        (OutputFormat::Paraver, "t.prv"),
        (OutputFormat::ChromeJson, "t.json"),
    ] {
        let p = d.path().join(name);
        let rep = synth::write(cfg, fmt, &p, None).unwrap();
        assert!(rep.records > 0);
        let t = readers::read(&p, &ReadOptions::default()).unwrap();
        assert!(
            t.meta.diagnostics.warnings.is_empty(),
            "{name}: {:?}",
            t.meta.diagnostics.warnings
        );
        let got = canon(&t);
        assert_eq!(got.0, want.0, "{name} {:?}: locations", cfg.workload);
        assert_eq!(got.1, want.1, "{name} {:?}: states", cfg.workload);
        assert_eq!(got.2, want.2, "{name} {:?}: intervals", cfg.workload);
        assert_eq!(got.3, want.3, "{name} {:?}: messages", cfg.workload);
        assert_eq!(got.4, want.4, "{name} {:?}: events", cfg.workload);
        assert_eq!(t.meta.span, model.meta.span);
    }
}

#[test]
fn every_workload_round_trips_through_both_formats() {
    for dist in [
        Distribution::Block,
        Distribution::Cyclic,
        Distribution::Cyclic2d,
    ] {
        round_trip(&config(Workload::Gauss { n: 24, dist }, 6));
    }
    round_trip(&config(
        Workload::Broadcast {
            bytes: 100,
            reps: 3,
            work: 500.0,
        },
        8,
    ));
    round_trip(&config(
        Workload::GlobalSum {
            elems: 10,
            reps: 3,
            work: 500.0,
        },
        8,
    ));
    round_trip(&config(
        Workload::Kernel(KernelParams {
            width: 6,
            height: 8,
            steps: 4,
            setup_steps: 2,
            ops_per_element: 50.0,
            depth: 1,
            dist: Default::default(),
        }),
        4,
    ));
}

#[test]
fn sixty_five_thousand_processors_round_trip() {
    round_trip(&config(
        Workload::Broadcast {
            bytes: 8,
            reps: 1,
            work: 10.0,
        },
        65_536,
    ));
}

#[test]
fn gaussian_elimination_has_the_expected_shape() {
    let n = 32u64;
    let t = synth::to_trace(&config(
        Workload::Gauss {
            n,
            dist: Distribution::Cyclic,
        },
        4,
    ))
    .unwrap();
    // one broadcast of P - 1 messages per pivot, forward and backward
    assert_eq!(t.messages.len() as u64, 2 * n * 3);
    // pivot-row broadcasts shrink: 8 (n - k + 1) bytes
    let fwd: u64 = (0..n).map(|k| 3 * 8 * (n - k + 1)).sum();
    assert_eq!(t.messages.total_bytes(), fwd + 2 * n * 3 * 8 / 2);
    // with (BLOCK,*) the first processor runs out of rows first: it is busy least
    let tb = synth::to_trace(&config(
        Workload::Gauss {
            n: 64,
            dist: Distribution::Block,
        },
        4,
    ))
    .unwrap();
    let s = tapestry::analysis::summary::summarize(&tb);
    let b = s.busy_fraction.unwrap();
    assert!(b.min_location.ends_with("rank 0"), "{}", b.min_location);
}

#[test]
fn output_is_deterministic_per_seed() {
    let d = tempfile::tempdir().unwrap();
    let mut cfg = config(
        Workload::Gauss {
            n: 16,
            dist: Distribution::Cyclic2d,
        },
        4,
    );
    let read = |name: &str, cfg: &SynthConfig| {
        let p = d.path().join(name);
        synth::write(cfg, OutputFormat::Paraver, &p, None).unwrap();
        std::fs::read(p).unwrap()
    };
    let a = read("a.prv", &cfg);
    let b = read("b.prv", &cfg);
    assert_eq!(a, b);
    cfg.seed = 8;
    let c = read("c.prv", &cfg);
    assert_ne!(a, c);
}

#[test]
fn kernel_access_tensor() {
    let d = tempfile::tempdir().unwrap();
    let (w, h, p, steps, setup) = (5u32, 8u32, 4u32, 4u32, 2u32);
    let cfg = config(
        Workload::Kernel(KernelParams {
            width: w,
            height: h,
            steps,
            setup_steps: setup,
            ops_per_element: 50.0,
            depth: 1,
            dist: Default::default(),
        }),
        p,
    );
    let tp = d.path().join("access.npy");
    synth::write(
        &cfg,
        OutputFormat::Paraver,
        &d.path().join("k.prv"),
        Some(&tp),
    )
    .unwrap();
    let bytes = std::fs::read(&tp).unwrap();
    let hlen = u16::from_le_bytes([bytes[8], bytes[9]]) as usize + 10;
    let header = String::from_utf8_lossy(&bytes[10..hlen]);
    assert!(
        header.contains("'descr': '<u4'") && header.contains("'shape': (6, 40, 4, 4)"),
        "{header}"
    );
    let data: Vec<u32> = bytes[hlen..]
        .chunks(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let e = (w * h) as usize;
    let slab = e * p as usize * 4;
    assert_eq!(data.len(), 6 * slab);
    // setup intervals hold no accesses
    assert!(data[..setup as usize * slab].iter().all(|&v| v == 0));
    let sum = |t: usize, kind: usize| -> u32 {
        (0..e * p as usize)
            .map(|i| data[t * slab + i * 4 + kind])
            .sum()
    };
    // stencil step: every element written once, 5-point reads minus the border
    let t0 = setup as usize;
    assert_eq!(sum(t0, 2) + sum(t0, 3), w * h);
    assert_eq!(sum(t0, 0) + sum(t0, 1), 5 * w * h - 2 * w - 2 * h);
    // remote reads only across the 3 block boundaries: 2 rows of w each
    assert_eq!(sum(t0, 1), 3 * 2 * w);
    // shift step: one local read per element and one write, remote where the row leaves the block
    assert_eq!(sum(t0 + 1, 0), w * h);
    assert_eq!(sum(t0 + 1, 2) + sum(t0 + 1, 3), w * h);
    assert!(sum(t0 + 1, 3) > 0);
}

#[test]
fn synth_command_line() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("g.prv");
    let (code, stdout, err) = tapestry(&[
        "synth",
        "gauss",
        "-p",
        "8",
        "--procs-per-node",
        "4",
        "--n",
        "32",
        "--dist",
        "block",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(stdout.contains("records"));
    assert!(d.path().join("g.pcf").exists() && d.path().join("g.row").exists());
    let (code, info, _) = tapestry(&["info", out.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(
        info.contains("locations  8 (2 node(s), 8 process(es))"),
        "{info}"
    );
    for (args, want) in [
        (vec!["synth", "bcast", "-p", "6", "-o"], "power-of-two"),
        (vec!["synth", "gauss", "-p", "0", "-o"], "processors"),
        (vec!["synth", "gauss", "--jitter", "2", "-o"], "--jitter"),
        (
            vec!["synth", "kernel", "-p", "64", "--height", "8", "-o"],
            "one plane per processor",
        ),
    ] {
        let mut a = args.clone();
        let o = d.path().join("x.prv");
        a.push(o.to_str().unwrap());
        let (code, _, err) = tapestry(&a);
        assert_eq!(code, 1, "{args:?}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!o.exists(), "no half file is left behind");
    }
    let (code, _, err) = tapestry(&[
        "synth",
        "gauss",
        "-o",
        d.path().join("x.txt").to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("format"), "{err}");
}

/// `-o x.prv.gz` (and .json.gz, .trf.gz) writes the same bytes as the
/// plain name, gzip-compressed (CRCs checked by decoding), with the .pcf
/// and .row named as the reader looks for them; a header of more than one
/// stored block (P = 65,536) too.
#[test]
fn gzip_output_is_the_plain_output_compressed() {
    use std::io::Read;
    let d = tempfile::tempdir().unwrap();
    for (p, reps, plain, gz) in [
        ("64", "20", "b.prv", "c.prv.gz"),
        ("65536", "1", "big.prv", "big2.prv.gz"),
        ("16", "5", "j.json", "k.json.gz"),
        ("16", "5", "t.trf", "u.trf.gz"),
    ] {
        let (a, b) = (d.path().join(plain), d.path().join(gz));
        for o in [&a, &b] {
            let (c, _, e) = tapestry(&[
                "synth",
                "bcast",
                "-p",
                p,
                "--reps",
                reps,
                "-o",
                o.to_str().unwrap(),
            ]);
            assert_eq!(c, 0, "{e}");
        }
        let mut unzipped = Vec::new();
        flate2::read::MultiGzDecoder::new(std::fs::File::open(&b).unwrap())
            .read_to_end(&mut unzipped)
            .expect("a valid gzip file, CRCs included");
        let want = std::fs::read(&a).unwrap();
        assert!(unzipped == want, "{gz} decompresses to {plain}");
        if gz.ends_with(".prv.gz") {
            let stem = gz.trim_end_matches(".prv.gz");
            assert!(d.path().join(format!("{stem}.pcf")).exists());
            assert!(d.path().join(format!("{stem}.row")).exists());
            let (_, x, _) = tapestry(&["analyze", a.to_str().unwrap(), "moments", "--stream"]);
            let (c, y, e) = tapestry(&["analyze", b.to_str().unwrap(), "moments", "--stream"]);
            assert_eq!(c, 0, "{e}");
            assert_eq!(x, y);
            assert!(!e.contains("warning"), "{e}");
        }
    }
}

#[test]
fn picl_output_keeps_messages_and_communication() {
    let cfg = config(
        Workload::Gauss {
            n: 20,
            dist: Distribution::Cyclic,
        },
        5,
    );
    let model = synth::to_trace(&cfg).unwrap();
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("g.trf");
    synth::write(&cfg, OutputFormat::Picl, &p, None).unwrap();
    let t = readers::read(&p, &ReadOptions::default()).unwrap();
    assert!(
        t.meta.diagnostics.warnings.is_empty(),
        "{:?}",
        t.meta.diagnostics.warnings
    );
    let (want, got) = (canon(&model), canon(&t));
    assert_eq!(got.3, want.3, "messages");
    // send/recv intervals are the simulation's Sending/Waiting states
    let comm = |c: &Canon, send: &str, recv: &str| -> Vec<(u32, u64, u64, String)> {
        c.2.iter()
            .filter(|i| i.3 == send || i.3 == recv)
            .map(|i| {
                (
                    i.0,
                    i.1,
                    i.2,
                    if i.3 == send {
                        "send".into()
                    } else {
                        "recv".into()
                    },
                )
            })
            .collect()
    };
    assert_eq!(
        comm(&got, "send", "recv"),
        comm(&want, "Blocking Send", "Waiting a message")
    );
    // busy covers the computation
    let busy = |c: &Canon, name: &str| {
        c.2.iter()
            .filter(|i| i.3 == name)
            .map(|i| i.2 - i.1)
            .sum::<u64>()
    };
    assert!(busy(&got, "busy") >= busy(&want, "Running"));
}

#[test]
fn kernel_cubes_and_distributions() {
    let d = tempfile::tempdir().unwrap();
    for (dist, remote_reads) in [
        (tapestry::synth::KernelDist::Block, 2 * 16),
        (tapestry::synth::KernelDist::Cyclic, 3 * 2 * 16),
    ] {
        let cfg = config(
            Workload::Kernel(KernelParams {
                width: 4,
                height: 4,
                depth: 4,
                steps: 2,
                setup_steps: 1,
                ops_per_element: 50.0,
                dist,
            }),
            2,
        );
        let tp = d.path().join(format!("{dist:?}.npy"));
        synth::write(
            &cfg,
            OutputFormat::Paraver,
            &d.path().join(format!("{dist:?}.prv")),
            Some(&tp),
        )
        .unwrap();
        let t = tapestry::readers::tensor::read_access_tensor(&tp).unwrap();
        assert_eq!((t.intervals, t.elements, t.processors), (3, 64, 2));
        let sum = |ti: usize, kind: usize| -> f32 {
            (0..64)
                .flat_map(|e| (0..2).map(move |q| (e, q)))
                .map(|(e, q)| t.at(ti, e, q, kind))
                .sum()
        };
        // stencil: 7-point reads minus the faces, every element written once
        assert_eq!(sum(1, 0) + sum(1, 1), (7 * 64 - 6 * 16) as f32, "{dist:?}");
        assert_eq!(sum(1, 2) + sum(1, 3), 64.0);
        // remote reads across the z boundaries between the two processors
        assert_eq!(sum(1, 1), remote_reads as f32, "{dist:?}");
    }
}

/// `--counters N`: each processor's hardware counters sampled at its state
/// changes (the counts of the state that ended) read back from Chrome JSON
/// as the model's counter series (`PAPI.TOT_INS`, ...) and from Paraver as
/// events of Extrae's types, both with the samples the simulation made;
/// PICL, and more counters than there are, are refused before any work.
#[test]
fn hardware_counters_round_trip_through_both_formats() {
    let mut cfg = config(
        Workload::Broadcast {
            bytes: 1024,
            reps: 6,
            work: 3000.0,
        },
        8,
    );
    cfg.counters = 5;
    let model = synth::to_trace(&cfg).unwrap();
    let names: Vec<&str> = model
        .counters
        .defs
        .iter()
        .map(|d| d.name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "PAPI.TOT_INS",
            "PAPI.TOT_CYC",
            "PAPI.L1_DCM",
            "PAPI.L2_DCM",
            "PAPI.L3_TCM"
        ]
    );
    // a sample per state on each processor: the state before each, and
    // the last one's at the end
    assert_eq!(model.counters.len(), 5 * model.intervals.len());
    // (location, counter name, time, value) of every sample
    let samples = |t: &Trace| {
        let mut v = Vec::new();
        for l in 0..t.locations.len() as u32 {
            for i in t.counters.range_of(l) {
                let name = &t.counters.defs[t.counters.counter[i] as usize].name;
                v.push((
                    l,
                    name.clone(),
                    t.counters.time[i],
                    t.counters.value[i] as i64,
                ));
            }
        }
        // (the reader numbers the counters by their names' order)
        v.sort();
        v
    };
    let want = samples(&model);
    let d = tempfile::tempdir().unwrap();
    let json = d.path().join("c.json");
    let rep = synth::write(&cfg, OutputFormat::ChromeJson, &json, None).unwrap();
    assert_eq!(
        rep.records,
        synth::write(&cfg, OutputFormat::Paraver, &d.path().join("c.prv"), None)
            .unwrap()
            .records
    );
    let t = readers::read(&json, &ReadOptions::default()).unwrap();
    assert_eq!(samples(&t), want);
    assert_eq!(canon(&t), canon(&model));
    // Paraver: the same values as events named by the .pcf
    let t = readers::read(&d.path().join("c.prv"), &ReadOptions::default()).unwrap();
    let short = |n: &str| -> String {
        let papi = n
            .rsplit_once('(')
            .map_or(n, |(_, p)| p.trim_end_matches(')'));
        format!("PAPI.{}", papi.trim_start_matches("PAPI_"))
    };
    let mut got = Vec::new();
    for l in 0..t.locations.len() as u32 {
        for i in t.events.range_of(l) {
            let name = &t.event_types.get(t.events.kind[i]).unwrap().name;
            if name.contains("PAPI_") {
                got.push((l, short(name), t.events.time[i], t.events.value[i]));
            }
        }
    }
    // (the events of a location in time order, a sample's counters in
    // their order in the record; the model's samples by counter first)
    got.sort();
    assert_eq!(got, want);
    // refused before any work
    for (name, counters, code, says) in [
        ("c.trf", "2", 1, "PICL holds no hardware counters"),
        ("d.prv", "9", 2, "--counters"),
    ] {
        let out = d.path().join(name);
        let (c, _, err) = tapestry(&[
            "synth",
            "bcast",
            "-p",
            "4",
            "--counters",
            counters,
            "-o",
            out.to_str().unwrap(),
        ]);
        assert_eq!(c, code, "{err}");
        assert!(err.contains(says), "{err}");
        assert!(!out.exists());
    }
    cfg.counters = 9;
    assert!(synth::to_trace(&cfg).is_err());
}
