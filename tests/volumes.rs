//! Volumes: the Boxfish tables of a 512-node Blue Gene/P torus (real data),
//! NumPy 3D/4D arrays, bad input with file and position, and the
//! isosurface view and analysis through the command line.

mod common;

use std::path::Path;

use common::{shared_trace, tapestry};
use tapestry::export::npy::write_array;
use tapestry::readers::{Loaded, ReadOptions, load};

fn volumes(p: &Path) -> tapestry::model::VolumeSet {
    match load(p, &ReadOptions::default()).unwrap_or_else(|e| panic!("{e}")) {
        Loaded::Volumes(v) => *v,
        _ => panic!("{} did not read as volumes", p.display()),
    }
}

#[test]
fn boxfish_tables_of_the_real_torus() {
    let meta = shared_trace("boxfish-bgpc/bgpc_meta.yaml");
    let set = volumes(&meta);
    let names: Vec<&str> = set.volumes.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(
        names,
        ["muls", "adds", "logs", "loads", "stores", "netWrites"]
    );
    let v = set.find("netWrites").unwrap();
    assert_eq!(v.dims, [8, 8, 8]);
    assert_eq!(v.steps.len(), 10);
    assert_eq!(v.steps[0], "-2");
    assert_eq!(v.axes[0], "torus x");
    // an independent sum: every row of code region 1, netWrites column
    let text = std::fs::read_to_string(shared_trace("boxfish-bgpc/bgpc_nodes.yaml")).unwrap();
    let want: f64 = text
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|f| f.len() == 11 && f[4] == "1" && f[0].parse::<i64>().is_ok())
        .map(|f| f[10].parse::<f64>().unwrap())
        .sum();
    let step = v.steps.iter().position(|s| s == "1").unwrap();
    let got: f64 = v.step(step).iter().sum();
    assert_eq!(got, want);
    // node (1, 0, 0) sits at x = 1
    let row = text
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|f| f.len() == 11 && f[1] == "1" && f[2] == "0" && f[3] == "0" && f[4] == "1")
        .map(|f| f[10].parse::<f64>().unwrap())
        .sum::<f64>();
    assert_eq!(v.step(step)[[0, 0, 1]], row);
    // --steps-by none: one step, every region of a node summed
    let opts = ReadOptions {
        steps_by: Some("none".into()),
        ..Default::default()
    };
    let Loaded::Volumes(one) = load(&meta, &opts).unwrap() else {
        panic!("volumes")
    };
    let w = one.find("netWrites").unwrap();
    assert_eq!(w.steps.len(), 1);
    let all: f64 = (0..v.steps.len())
        .map(|t| v.step(t).iter().sum::<f64>())
        .sum();
    assert_eq!(w.step(0).iter().sum::<f64>(), all);
    // any other column as the steps, named on the axis; bad columns refused
    let opts = ReadOptions {
        steps_by: Some("stores".into()),
        ..Default::default()
    };
    let Loaded::Volumes(by) = load(&meta, &opts).unwrap() else {
        panic!("volumes")
    };
    assert_eq!(by.volumes[0].step_axis, "stores");
    assert!(by.find("stores").is_err());
    for (col, why) in [("nope", "no such column"), ("y", "a coordinate")] {
        let opts = ReadOptions {
            steps_by: Some(col.into()),
            ..Default::default()
        };
        let e = load(&meta, &opts).err().unwrap().to_string();
        assert!(e.contains("bgpc_nodes.yaml") && e.contains(why), "{e}");
    }
    let (code, out, _) = tapestry(&["info", meta.to_str().unwrap(), "--steps-by", "none"]);
    assert_eq!(code, 0);
    assert!(out.contains("1 step,"), "{out}");
}

fn copy_boxfish(d: &Path) -> std::path::PathBuf {
    for f in ["bgpc_meta.yaml", "bgpc_nodes.yaml"] {
        std::fs::copy(shared_trace(&format!("boxfish-bgpc/{f}")), d.join(f)).unwrap();
    }
    d.join("bgpc_meta.yaml")
}

#[test]
fn bad_boxfish_input_names_file_and_line() {
    let d = tempfile::tempdir().unwrap();
    let meta = copy_boxfish(d.path());
    let nodes = d.path().join("bgpc_nodes.yaml");
    let text = std::fs::read_to_string(&nodes).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let first_row = lines.iter().position(|l| l.trim() == "...").unwrap() + 1;
    // a ragged row
    let mut bad = lines.clone();
    bad[first_row + 2] = "0 0 0 0 1 5";
    std::fs::write(&nodes, bad.join("\n")).unwrap();
    let (code, _, err) = tapestry(&["info", meta.to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(
        err.contains("bgpc_nodes.yaml") && err.contains(&format!("line {}", first_row + 3)),
        "{err}"
    );
    // not a number, and NaN
    for v in ["abc", "nan"] {
        let mut bad = lines.clone();
        let row = bad[first_row].replacen("2830394", v, 1);
        bad[first_row] = &row;
        std::fs::write(&nodes, bad.join("\n")).unwrap();
        let (code, _, err) = tapestry(&["info", meta.to_str().unwrap()]);
        assert_ne!(code, 0, "{v}");
        assert!(err.contains("muls") && err.contains("line"), "{err}");
    }
    // a coordinate outside the torus
    let mut bad = lines.clone();
    let row = format!("0 9 0 0 1 {}", "1 ".repeat(6));
    bad[first_row] = &row;
    std::fs::write(&nodes, bad.join("\n")).unwrap();
    let (_, _, err) = tapestry(&["info", meta.to_str().unwrap()]);
    assert!(err.contains("outside the torus"), "{err}");
    // a table outside the meta file's directory
    let inner = d.path().join("inner");
    std::fs::create_dir(&inner).unwrap();
    let m = std::fs::read_to_string(&meta).unwrap().replace(
        "coords_table: bgpc_nodes.yaml",
        "coords_table: ../bgpc_nodes.yaml",
    );
    std::fs::write(inner.join("m_meta.yaml"), m).unwrap();
    let (code, _, err) = tapestry(&["info", inner.join("m_meta.yaml").to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(err.contains("outside"), "{err}");
}

#[test]
fn numpy_volumes_and_their_errors() {
    let d = tempfile::tempdir().unwrap();
    // a 4D (T, Z, Y, X) ball that grows
    let n = 12;
    let mut v = Vec::new();
    for t in 0..3 {
        for i in 0..n * n * n {
            let (x, y, z) = (i % n, (i / n) % n, i / (n * n));
            let c = 5.5;
            let r =
                ((x as f64 - c).powi(2) + (y as f64 - c).powi(2) + (z as f64 - c).powi(2)).sqrt();
            v.push((2.0 + t as f64) - r);
        }
    }
    let p = d.path().join("ball.npy");
    write_array(&p, &[3, n as u64, n as u64, n as u64], &v).unwrap();
    let set = volumes(&p);
    assert_eq!(set.volumes[0].steps.len(), 3);
    // the view renders it as a frame sequence and as glTF
    let out = d.path().join("iso.png");
    let (code, _, err) = tapestry(&[
        "render",
        p.to_str().unwrap(),
        "--frames",
        "3",
        "--size",
        "320x200",
        "-o",
        out.to_str().unwrap(),
    ]);
    if GpuOk::get() {
        assert_eq!(code, 0, "{err}");
        assert!(d.path().join("iso-0002.png").exists());
    }
    let glb = d.path().join("iso.glb");
    let (code, _, err) = tapestry(&[
        "render",
        p.to_str().unwrap(),
        "--view",
        "isosurface",
        "--start",
        "2",
        "-o",
        glb.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    // the analysis: one sphere of radius 4 at isovalue 0 in step 2
    let (code, out, err) = tapestry(&[
        "analyze",
        p.to_str().unwrap(),
        "isosurface",
        "--iso",
        "0",
        "--step",
        "2",
    ]);
    assert_eq!(code, 0, "{err}");
    let row: Vec<f64> = out
        .lines()
        .nth(2)
        .unwrap()
        .split(',')
        .map(|x| x.parse().unwrap())
        .collect();
    let area = 4.0 * std::f64::consts::PI * 16.0;
    assert!((row[3] - area).abs() / area < 0.05, "{out}");
    assert!(row[4] > 0.0, "{out}");
    // a 2D array is refused; so is a NaN, with its index
    let p2 = d.path().join("flat.npy");
    write_array(&p2, &[4, 4], &[0.0f64; 16]).unwrap();
    let (code, _, err) = tapestry(&["info", p2.to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(err.contains("3D") && err.contains("[4, 4]"), "{err}");
    let mut w = vec![1.0f64; 27];
    w[13] = f64::NAN;
    let p3 = d.path().join("nan.npy");
    write_array(&p3, &[3, 3, 3], &w).unwrap();
    let (code, _, err) = tapestry(&["info", p3.to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(err.contains("element 13"), "{err}");
}

struct GpuOk;

impl GpuOk {
    fn get() -> bool {
        match tapestry::gpu::GpuContext::new() {
            Ok(_) => true,
            Err(e) => {
                assert!(
                    std::env::var_os("TAPESTRY_REQUIRE_GPU").is_none(),
                    "no adapter: {e}"
                );
                false
            }
        }
    }
}

#[test]
fn access_tensors_open_on_their_own() {
    let d = tempfile::tempdir().unwrap();
    let (k, t) = (d.path().join("k.prv"), d.path().join("acc.npy"));
    let (code, _, err) = tapestry(&[
        "synth",
        "kernel",
        "-p",
        "4",
        "--width",
        "8",
        "--height",
        "8",
        "--steps",
        "6",
        "--tensor",
        t.to_str().unwrap(),
        "-o",
        k.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = tapestry(&["info", t.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("access tensor") && out.contains("64 elements"),
        "{out}"
    );
    // the field of the tensor equals the one beside its trace
    let (_, alone, _) = tapestry(&["analyze", t.to_str().unwrap(), "field", "--kinds", "remote"]);
    let (_, beside, _) = tapestry(&[
        "analyze",
        k.to_str().unwrap(),
        "field",
        "--quantity",
        &format!("tensor:{}", t.display()),
        "--kinds",
        "remote",
    ]);
    let body = |s: &str| s.lines().skip(1).map(String::from).collect::<Vec<_>>();
    assert_eq!(body(&alone), body(&beside));
    // the views take it directly
    let glb = d.path().join("d.glb");
    let (code, _, err) = tapestry(&[
        "render",
        t.to_str().unwrap(),
        "--view",
        "displacement",
        "-o",
        glb.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    // the default view of a tensor: the Kiviat tube of its accesses
    let tube = d.path().join("tube.glb");
    let (code, _, err) = tapestry(&[
        "render",
        t.to_str().unwrap(),
        "--kinds",
        "remote",
        "-o",
        tube.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("Kiviat tube: radius remote accesses, 64 elements"),
        "{err}"
    );
    let (code, _, err) = tapestry(&[
        "render",
        t.to_str().unwrap(),
        "--view",
        "moments",
        "-o",
        "x.glb",
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("access tensor"), "{err}");
}
