//! The real traces in `../shared/traces`, written by other tools, read
//! without warnings; counts are checked against values derived here
//! independently of the readers (plain line splitting for Paraver,
//! `serde_json::Value` for Chrome JSON) and against hand-checked numbers.

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use common::{shared_trace, tapestry};
use serde_json::Value;
use tapestry::analysis::summary::{state_time_per_location, summarize};
use tapestry::model::{Format, StateClass};
use tapestry::readers::{self, ReadOptions};

#[test]
fn paraver_qsort_matches_an_independent_count() {
    let path = shared_trace("paraver-qsort/qsort_beo3.prv");
    let text = std::fs::read_to_string(&path).unwrap();
    // independent count: split the lines by ':'
    let (mut states, mut events, mut msgs, mut bytes, mut globals, mut comms) =
        (0, 0, 0, 0u64, 0, 0);
    let mut per_state: BTreeMap<i64, u64> = BTreeMap::new();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split(':').collect();
        match f[0] {
            "1" => {
                states += 1;
                let (b, e): (u64, u64) = (f[5].parse().unwrap(), f[6].parse().unwrap());
                *per_state.entry(f[7].parse().unwrap()).or_default() += (e - b) * 1000;
            }
            "2" => events += (f.len() - 6) / 2,
            "3" => {
                msgs += 1;
                bytes += f[13].parse::<u64>().unwrap();
            }
            "4" => globals += 1,
            "c" => comms += 1,
            other => panic!("unexpected record {other}"),
        }
    }
    // by hand (awk over the file): 292 states, 422 events, 33 messages
    assert_eq!(
        (states, events, msgs, globals, comms),
        (292, 422, 33, 45, 8)
    );

    let t = readers::read(&path, &ReadOptions::default()).unwrap();
    assert_eq!(t.meta.format, Format::Paraver);
    assert!(
        t.meta.diagnostics.warnings.is_empty(),
        "{:?}",
        t.meta.diagnostics.warnings
    );
    assert_eq!(t.num_locations(), 4);
    assert_eq!(t.intervals.len(), states);
    assert_eq!(t.events.len(), events);
    assert_eq!(t.messages.len(), msgs);
    assert_eq!(t.messages.total_bytes(), bytes);
    assert_eq!(t.collectives.len(), globals);
    assert_eq!(t.communicators.len(), comms);
    assert_eq!(t.meta.span, 260_199_000);
    assert_eq!(t.meta.time_unit.ns_per_unit, 1000);
    // state names and colours come from the .pcf
    let running = t.states.by_name("Running").unwrap();
    assert_eq!(t.states.get(running).unwrap().color, [0, 0, 255]);
    assert_eq!(t.states.get(running).unwrap().class, StateClass::Busy);
    assert_eq!(
        t.event_types
            .get(t.event_types.by_external(50000001).unwrap())
            .unwrap()
            .name,
        "MPI Point-to-point"
    );
    // time per state equals the independent sums
    let s = summarize(&t);
    for st in &s.time_per_state {
        let ext = t
            .states
            .get(t.states.by_name(&st.name).unwrap())
            .unwrap()
            .external_id;
        assert_eq!(
            st.time_ns,
            *per_state.get(&ext).unwrap_or(&0) as u128,
            "state {}",
            st.name
        );
    }
    assert_eq!(per_state[&1], 304_498_000);
}

/// What an independent reading of a Chrome trace finds.
struct ChromeCount {
    threads: usize,
    states: usize,
    instants: usize,
    counter_samples: usize,
    messages: usize,
    /// Per thread, the measure of the union of all slices (ns).
    busy: Vec<u64>,
}

fn count_chrome(v: &Value) -> ChromeCount {
    let ev = match v {
        Value::Array(a) => a.clone(),
        Value::Object(o) => o["traceEvents"].as_array().unwrap().clone(),
        _ => panic!(),
    };
    let key = |e: &Value| {
        let pid = e.get("pid").and_then(Value::as_i64).unwrap_or(0);
        (pid, e.get("tid").and_then(Value::as_i64).unwrap_or(pid))
    };
    let ph = |e: &Value| e["ph"].as_str().unwrap().to_string();
    let mut threads = BTreeSet::new();
    let mut states = BTreeSet::new();
    let (mut instants, mut samples) = (0, 0);
    let mut flows: HashMap<String, usize> = HashMap::new();
    let mut slices: BTreeMap<(i64, i64), Vec<(f64, f64)>> = BTreeMap::new();
    let mut stacks: HashMap<(i64, i64), Vec<f64>> = HashMap::new();
    let mut be: Vec<&Value> = ev.iter().filter(|e| ph(e) == "B" || ph(e) == "E").collect();
    be.sort_by(|a, b| {
        a["ts"]
            .as_f64()
            .unwrap()
            .total_cmp(&b["ts"].as_f64().unwrap())
    });
    for e in &ev {
        let p = ph(e);
        let global = e.get("s").and_then(Value::as_str) == Some("g");
        if (p == "M" && e["name"] == "thread_name")
            || (!["M", "i", "I"].contains(&p.as_str()) || !global)
        {
            threads.insert(key(e));
        }
        match p.as_str() {
            "X" => {
                states.insert(e["name"].as_str().unwrap().to_string());
                let ts = e["ts"].as_f64().unwrap();
                slices
                    .entry(key(e))
                    .or_default()
                    .push((ts, ts + e["dur"].as_f64().unwrap()));
            }
            "B" => {
                states.insert(e["name"].as_str().unwrap().to_string());
            }
            "i" | "I" | "P" => instants += 1,
            "C" => {
                samples += e["args"]
                    .as_object()
                    .unwrap()
                    .values()
                    .filter(|v| v.is_number())
                    .count()
            }
            "s" | "t" | "f" => {
                *flows
                    .entry(e["id"].as_str().unwrap().to_string())
                    .or_default() += 1
            }
            _ => {}
        }
    }
    for e in be {
        let ts = e["ts"].as_f64().unwrap();
        if ph(e) == "B" {
            stacks.entry(key(e)).or_default().push(ts);
        } else {
            let b = stacks.get_mut(&key(e)).unwrap().pop().unwrap();
            slices.entry(key(e)).or_default().push((b, ts));
        }
    }
    let busy = slices
        .values_mut()
        .map(|v| {
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
            let mut total = 0.0;
            let mut cur: Option<(f64, f64)> = None;
            for &(a, b) in v.iter() {
                match cur {
                    Some((ca, cb)) if a <= cb => cur = Some((ca, cb.max(b))),
                    Some((ca, cb)) => {
                        total += cb - ca;
                        cur = Some((a, b));
                    }
                    None => cur = Some((a, b)),
                }
            }
            if let Some((a, b)) = cur {
                total += b - a;
            }
            (total * 1000.0).round() as u64
        })
        .collect();
    ChromeCount {
        threads: threads.len(),
        states: states.len(),
        instants,
        counter_samples: samples,
        messages: flows.values().map(|n| n - 1).sum(),
        busy,
    }
}

#[test]
fn chrome_traces_match_an_independent_count() {
    // (file, threads, states, instants, counter samples, messages, busy µs) checked by hand
    let expected = [
        ("flow_simple.json", 5, 5, 0, 0, 3, 1020),
        ("simple_trace.json", 3, 12, 9, 5, 0, 66),
        ("tall_trace.json", 16, 2, 0, 0, 0, 127),
        ("trivial_trace.json", 1, 2, 0, 0, 0, 38),
    ];
    for (file, threads, states, instants, samples, messages, busy_us) in expected {
        let path = shared_trace(&format!("chrome/{file}"));
        let v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let c = count_chrome(&v);
        assert_eq!(
            (
                c.threads,
                c.states,
                c.instants,
                c.counter_samples,
                c.messages,
                c.busy.iter().sum::<u64>()
            ),
            (threads, states, instants, samples, messages, busy_us * 1000),
            "independent count of {file}"
        );

        let t = readers::read(&path, &ReadOptions::default()).unwrap();
        assert_eq!(t.meta.format, Format::ChromeJson);
        assert!(
            t.meta.diagnostics.warnings.is_empty(),
            "{file}: {:?}",
            t.meta.diagnostics.warnings
        );
        assert_eq!(t.num_locations(), threads, "{file} locations");
        assert_eq!(t.states.len(), states, "{file} states");
        assert_eq!(t.events.len(), instants, "{file} events");
        assert_eq!(t.counters.len(), samples, "{file} counter samples");
        assert_eq!(t.messages.len(), messages, "{file} messages");
        // the flat timeline of a thread covers exactly the union of its slices
        let busy: u64 = state_time_per_location(&t).sum();
        assert_eq!(busy, busy_us * 1000, "{file} busy time");
        let mut per_loc: Vec<u64> = state_time_per_location(&t)
            .rows()
            .into_iter()
            .map(|v| v.sum())
            .filter(|&x| x > 0)
            .collect();
        let mut want = c.busy.clone();
        per_loc.sort();
        want.sort();
        assert_eq!(per_loc, want, "{file} busy time per thread");
    }
}

#[test]
fn chrome_details_of_simple_trace() {
    let t = readers::read(
        &shared_trace("chrome/simple_trace.json"),
        &ReadOptions::default(),
    )
    .unwrap();
    // origin is the earliest event (X1 at 818 µs); times are exact ns
    assert_eq!(t.meta.origin_ns, 818_000);
    let names: Vec<&str> = t
        .locations
        .locations
        .iter()
        .map(|l| l.name.as_str())
        .collect();
    assert_eq!(names, vec!["threadA", "threadB", "threadC"]);
    // the counter series and its samples
    assert_eq!(t.counters.defs[0].name, "counter");
    let vals: Vec<f64> = t.counters.value.clone();
    assert_eq!(vals, vec![10.0, 1.0, 5.0, 1.0, 10.0]);
    // the global instant event is global
    assert_eq!(t.events.global_range().len(), 1);
    // B/E over X under B/E: the innermost slice is shown
    let a = t.intervals.of(0);
    let inner = t.states.by_name("B/E under X").unwrap();
    assert!(
        a.iter()
            .any(|(s, e, st)| st == inner && s == 42_000 && e == 52_000)
    );
}

#[test]
fn flows_become_messages_between_the_right_threads() {
    let t = readers::read(
        &shared_trace("chrome/flow_simple.json"),
        &ReadOptions::default(),
    )
    .unwrap();
    let name = |l: u32| t.locations.path(l);
    let mut m: Vec<(String, String, u64, u64)> = (0..t.messages.len())
        .map(|i| {
            (
                name(t.messages.sender[i]),
                name(t.messages.receiver[i]),
                t.messages.send_time[i],
                t.messages.recv_time[i],
            )
        })
        .collect();
    m.sort();
    assert_eq!(
        m,
        vec![
            (
                "pid 15774/tid 15794".into(),
                "pid 15874/tid 15894".into(),
                3_220_000,
                3_330_000
            ),
            (
                "pid 15902/tid 15903".into(),
                "pid 15774/tid 15794".into(),
                3_002_000,
                3_220_000
            ),
            (
                "pid 15903/tid 15904".into(),
                "pid 15875/tid 15895".into(),
                1_000,
                1_001_000
            ),
        ]
    );
}

#[test]
fn info_runs_on_every_shared_trace() {
    for rel in [
        "paraver-qsort/qsort_beo3.prv",
        "chrome/flow_simple.json",
        "chrome/simple_trace.json",
        "chrome/tall_trace.json",
        "chrome/trivial_trace.json",
    ] {
        let p = shared_trace(rel);
        let (code, out, err) = tapestry(&["info", p.to_str().unwrap()]);
        assert_eq!(code, 0, "{rel}: {err}");
        assert!(out.contains("busy fraction per location"), "{rel}: {out}");
        assert!(!err.contains("warning"), "{rel}: {err}");
        let (code, out, _) = tapestry(&["info", "--json", p.to_str().unwrap()]);
        assert_eq!(code, 0);
        let v: Value = serde_json::from_str(&out).unwrap();
        assert!(v["locations"].as_u64().unwrap() > 0);
        assert!(v["time_per_state"].is_array());
    }
}
