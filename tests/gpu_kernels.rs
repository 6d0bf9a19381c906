//! The compute kernels against their CPU references, on whatever adapter is
//! present (lavapipe in CI), with sizes that force chunking; and every WGSL
//! file validated by naga.
//!
//! Without an adapter these tests say so and pass, unless
//! `TAPESTRY_REQUIRE_GPU` is set (CI sets it, so there they must run).

mod common;

use tapestry::analysis::{fields, isosurface, moments};
use tapestry::gpu::{GpuContext, kernels};
use tapestry::synth;

fn context() -> Option<GpuContext> {
    match GpuContext::new() {
        Ok(c) => {
            eprintln!("adapter: {}", c.describe());
            Some(c)
        }
        Err(e) => {
            if std::env::var_os("TAPESTRY_REQUIRE_GPU").is_some() {
                panic!("TAPESTRY_REQUIRE_GPU is set but no adapter opened: {e}");
            }
            eprintln!("skipped: {e}");
            None
        }
    }
}

/// [`context`], where the adapter has `SHADER_F64` (which the moments
/// kernels need); `None`, said on stderr, otherwise.
fn f64_context() -> Option<GpuContext> {
    let ctx = context()?;
    if !kernels::moments::supported(&ctx) {
        eprintln!("skipped: {} has no SHADER_F64", ctx.describe());
        return None;
    }
    Some(ctx)
}

/// The shaders that need `SHADER_F64`.
const NEEDS_F64: &[&str] = &["moments.wgsl", "moment_rows.wgsl", "moments_subgroups.wgsl"];
/// The shaders that need `SUBGROUP` (built only where the adapter has it).
const NEEDS_SUBGROUPS: &[&str] = &["moments_subgroups.wgsl"];

#[test]
fn every_shader_validates_with_naga() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "wgsl") {
            continue;
        }
        let mut src = std::fs::read_to_string(&p).unwrap();
        // a shader whose first line reads "// needs A.wgsl, B.wgsl" gets
        // those files in front, in order, as the renderer and the kernels do
        if let Some(names) = src.lines().next().and_then(|l| l.strip_prefix("// needs ")) {
            let mut front = String::new();
            for name in names.split(',') {
                front += &std::fs::read_to_string(dir.join(name.trim())).unwrap();
            }
            src = front + &src;
        }
        let module = naga::front::wgsl::parse_str(&src)
            .unwrap_or_else(|e| panic!("{}: {}", p.display(), e.emit_to_string(&src)));
        // exactly the capabilities the device is asked for: none beyond the
        // defaults, FLOAT64 (SHADER_F64) and SUBGROUP (requested when the
        // adapter has them) for the kernels that check for them before
        // running
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        let mut caps = naga::valid::Capabilities::empty();
        let needed = [
            (NEEDS_F64, naga::valid::Capabilities::FLOAT64, "f64"),
            (
                NEEDS_SUBGROUPS,
                naga::valid::Capabilities::SUBGROUP,
                "subgroups",
            ),
        ];
        for (list, cap, _) in needed {
            if list.contains(&name.as_str()) {
                caps |= cap;
            }
        }
        naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps)
            .validate(&module)
            .unwrap_or_else(|e| panic!("{}: {}", p.display(), e.emit_to_string(&src)));
        for (_, cap, what) in needed {
            if caps.contains(cap) {
                // the lists are exact: without the capability it must not validate
                assert!(
                    naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps - cap)
                        .validate(&module)
                        .is_err(),
                    "{name} is listed as needing {what} but validates without it"
                );
            }
        }
        n += 1;
    }
    assert!(n >= 2, "shaders found: {n}");
}

#[test]
fn moments_kernel_matches_the_cpu() {
    let Some(ctx) = f64_context() else { return };
    for (locs, per, limit) in [
        (7u32, 3u32, None),
        (64, 300, None),
        (33, 700, Some(4096u64)),
        (1, 5000, Some(8192)),
    ] {
        let t = synth::random_intervals(locs, per, 11 + per as u64);
        let mask = t.states.select(&["busy".into()]).unwrap();
        let (t0, t1) = (t.meta.span / 7, t.meta.span - t.meta.span / 5);
        let cpu = moments::moments(&t, &mask, t0, t1);
        let gpu = kernels::moments::moments(&ctx, &t, &mask, t0, t1, limit).unwrap();
        assert_same_moments(&cpu, &gpu, &format!("{locs}x{per}"));
        let g = tapestry::gpu::GpuTrace::upload(&ctx, &t, limit).unwrap();
        assert_same_rows(&g, &t, &mask, (t0, t1), &format!("{locs}x{per}"));
    }
}

/// The moments kernel with each tile's first levels combined in subgroups
/// (where the adapter has them: lavapipe's are 8 lanes wide) gives the
/// workgroup tree's results bit for bit (the same pairs are combined),
/// for locations within a lane, spanning lanes, subgroups and tiles, and
/// a trace cut into chunks; the moment display's rows too.
#[test]
fn moments_in_subgroups_equal_the_workgroup_tree_bit_for_bit() {
    let Some(ctx) = f64_context() else { return };
    if !ctx.features.contains(wgpu::Features::SUBGROUP) {
        assert!(
            std::env::var_os("TAPESTRY_REQUIRE_GPU").is_none(),
            "lavapipe has subgroups: {}",
            ctx.describe()
        );
        eprintln!("skipped: {} has no subgroups", ctx.describe());
        return;
    }
    let bits = |v: &[moments::MomentAcc]| -> Vec<[u64; 4]> {
        v.iter()
            .map(|a| [a.w, a.mean, a.m2, a.m3].map(f64::to_bits))
            .collect()
    };
    for (locs, per, limit) in [
        (3000u32, 1u32, None),
        (500, 5, None),
        (40, 37, None),
        (9, 900, None),
        (33, 700, Some(4096u64)),
        (1, 20_000, None),
    ] {
        let t = synth::random_intervals(locs, per, 5 + per as u64);
        let mask = t.states.select(&["busy".into()]).unwrap();
        let (t0, t1) = (t.meta.span / 9, t.meta.span - t.meta.span / 6);
        let mut g = tapestry::gpu::GpuTrace::upload(&ctx, &t, limit).unwrap();
        assert!(g.use_subgroups(true));
        let (with, _) = g.moment_accs(&mask, t0, t1).unwrap();
        let (rows_with, _) = g.moment_rows(&mask, t0, t1, 7).unwrap();
        assert!(!g.use_subgroups(false));
        let (without, _) = g.moment_accs(&mask, t0, t1).unwrap();
        let (rows_without, _) = g.moment_rows(&mask, t0, t1, 7).unwrap();
        let what = format!("{locs}x{per}");
        assert_eq!(bits(&with), bits(&without), "{what}");
        assert_eq!(bits(&rows_with), bits(&rows_without), "{what}, rows");
        let cpu = moments::moments(&t, &mask, t0, t1);
        let gpu: Vec<moments::Moments> = with.iter().map(|a| a.moments()).collect();
        assert_same_moments(&cpu, &gpu, &what);
    }
}

/// The moment display's rows folded on the GPU (`GpuTrace::moment_rows`)
/// equal the host's fold of the CPU's accumulators to the moments' bound,
/// for rows of 1, 2, 3, 10 and more than all locations.
fn assert_same_rows(
    g: &tapestry::gpu::GpuTrace,
    t: &tapestry::model::Trace,
    mask: &[bool],
    (t0, t1): (u64, u64),
    what: &str,
) {
    let accs: Vec<moments::MomentAcc> = (0..t.num_locations() as u32)
        .map(|l| moments::accumulate(t.intervals.of(l), mask, t0, t1))
        .collect();
    for group in [1usize, 2, 3, 10, accs.len() + 5] {
        let host: Vec<moments::Moments> = accs
            .chunks(group)
            .map(|c| {
                c.iter()
                    .fold(moments::MomentAcc::default(), |a, b| a.merge(*b))
                    .moments()
            })
            .collect();
        let (rows, _) = g.moment_rows(mask, t0, t1, group).unwrap();
        let rows: Vec<moments::Moments> = rows.iter().map(|a| a.moments()).collect();
        assert_same_moments(&host, &rows, &format!("{what}, rows of {group}"));
    }
}

/// The GPU moments equal the CPU's to 1e-9 (m0 identically), checked per
/// location; `what` names the case.
fn assert_same_moments(cpu: &[moments::Moments], gpu: &[moments::Moments], what: &str) {
    assert_eq!(cpu.len(), gpu.len(), "{what}");
    for (l, (c, g)) in cpu.iter().zip(gpu).enumerate() {
        let ctxs = format!("{what} location {l}: cpu {c:?} gpu {g:?}");
        assert_eq!(c.m0, g.m0, "m0 {ctxs}");
        match (c.m1, g.m1) {
            (None, None) => continue,
            (Some(a), Some(b)) => {
                let m2 = c.m2.unwrap();
                let scale = m2.max(a.abs() * 1e-7).max(1.0);
                assert!((a - b).abs() <= 1e-9 * scale, "m1 {ctxs}");
                assert!(
                    (m2 - g.m2.unwrap()).abs() <= 1e-9 * m2.max(1e-300),
                    "m2 {ctxs}"
                );
                let (c3, g3) = (c.m3.unwrap(), g.m3.unwrap());
                assert!(
                    (c3.powi(3) - g3.powi(3)).abs() <= 1e-9 * m2.powi(3),
                    "m3 {ctxs}"
                );
            }
            _ => panic!("defined on one side only: {ctxs}"),
        }
    }
}

#[test]
fn moments_kernel_is_exact_on_adversarial_intervals() {
    let Some(ctx) = f64_context() else { return };
    const S: u64 = 1_000_000_000;
    const E18: u64 = 1_000_000_000_000_000_000;
    type Locations = Vec<Vec<(u64, u64, bool)>>;
    let mut cases: Vec<(&str, Locations)> = vec![
        // the case: m0 = 4 (the f32 kernel gave 1)
        (
            "1 ns and 3 ns a second apart",
            vec![vec![(0, 1, true), (S, S + 3, true)]],
        ),
        (
            "10^18-ns offsets",
            vec![vec![
                (E18, E18 + 5, true),
                (E18 + 7 * S, E18 + 7 * S + 2, true),
            ]],
        ),
        (
            "one interval per location",
            (0..100u64)
                .map(|l| vec![(l * l * 1_000_003, l * l * 1_000_003 + 1 + l, true)])
                .collect(),
        ),
    ];
    // 300 one-nanosecond intervals spread over 10^15 ns (several segments),
    // idle between; and a dense cluster after a long gap
    let spread: Vec<(u64, u64, bool)> = (0..600u64)
        .map(|i| {
            let a = i * 1_666_666_666_667;
            (a, a + 1 + (i % 2) * 999, i % 2 == 0)
        })
        .collect();
    let mut cluster: Vec<(u64, u64, bool)> = vec![(0, 10, true)];
    cluster.extend((0..1000u64).map(|i| (E18 + 3 * i, E18 + 3 * i + 1 + (i % 3), true)));
    cases.push(("spread over 10^15 ns", vec![spread]));
    cases.push(("a cluster 10^18 ns after one interval", vec![cluster]));
    for (what, locs) in &cases {
        let t = synth::explicit_intervals(locs);
        let mask = t.states.select(&["busy".into()]).unwrap();
        let span = t.meta.span;
        let cpu = moments::moments(&t, &mask, 0, span);
        let gpu = kernels::moments::moments(&ctx, &t, &mask, 0, span, None).unwrap();
        assert_same_moments(&cpu, &gpu, what);
        let g = tapestry::gpu::GpuTrace::upload(&ctx, &t, Some(4096)).unwrap();
        assert_same_rows(&g, &t, &mask, (0, span), what);
        if *what == "1 ns and 3 ns a second apart" {
            assert_eq!(gpu[0].m0, 4.0);
        }
    }
}

#[test]
fn busy_bins_kernel_matches_the_cpu() {
    let Some(ctx) = context() else { return };
    for (locs, per, bins, limit) in [
        (5u32, 10u32, 7usize, None),
        (100, 200, 64, None),
        (40, 300, 16, Some(4096u64)),
    ] {
        let t = synth::random_intervals(locs, per, 3 + per as u64);
        let mask = t.states.select(&["busy".into()]).unwrap();
        let (t0, t1) = (t.meta.span / 9, t.meta.span);
        let cpu = fields::busy_fraction(&t, &mask, t0, t1, bins).unwrap();
        let gpu = kernels::busy_bins::busy_fraction(&ctx, &t, &mask, t0, t1, bins, limit).unwrap();
        assert_eq!(cpu.edges, gpu.edges);
        // exact integer overlaps, the same f64 division: identical
        for (i, (c, g)) in cpu.values.iter().zip(&gpu.values).enumerate() {
            assert_eq!(
                c.to_bits(),
                g.to_bits(),
                "{locs}x{per} cell {i}: {c} vs {g}"
            );
        }
    }
}

/// One upload, many analyses: every window and state selection of a
/// resident trace equals the CPU, on a trace with empty locations, single
/// intervals, a location spanning several chunks (bindings of 4 KiB) and
/// per-cell sums past 2^32 ns (carries between the atomic halves).
#[test]
fn a_resident_trace_answers_many_analyses_like_the_cpu() {
    let Some(ctx) = context() else { return };
    const S: u64 = 1_000_000_000;
    let mut locs: Vec<Vec<(u64, u64, bool)>> = vec![vec![]];
    // a long location: 3,000 intervals (chunks hold 512 at 4 KiB)
    locs.push(
        (0..3000u64)
            .map(|i| (i * 7_000_000, i * 7_000_000 + 1 + i % 5_000_000, i % 3 != 0))
            .collect(),
    );
    locs.push(vec![]);
    locs.push(vec![]);
    // 2,000 locations of one interval each, some idle
    for l in 0..2000u64 {
        locs.push(vec![(
            l * 10_000_000,
            l * 10_000_000 + 4_000_000 + l,
            l % 7 != 0,
        )]);
    }
    // 10 busy intervals of 4 s each: 32 s from one invocation and 8 s from
    // the next into one cell, whose low words overflow
    locs.push(
        (0..10u64)
            .map(|i| (i * 4 * S, (i + 1) * 4 * S, true))
            .collect(),
    );
    locs.push(vec![]);
    let t = synth::explicit_intervals(&locs);
    let span = t.meta.span;
    let masks = [
        t.states.select(&["busy".into()]).unwrap(),
        vec![true; t.states.len()],
    ];
    for limit in [None, Some(4096u64)] {
        let g = tapestry::gpu::GpuTrace::upload(&ctx, &t, limit).unwrap();
        if limit.is_some() {
            assert!(g.num_chunks() > 5, "chunks: {}", g.num_chunks());
        }
        for mask in &masks {
            for (t0, t1) in [(0, span), (span / 3, span / 2), (12_345, 29_999_999_999)] {
                if kernels::moments::supported(&ctx) {
                    let cpu = moments::moments(&t, mask, t0, t1);
                    let (gpu, timing) = g.moments(mask, t0, t1).unwrap();
                    assert_same_moments(&cpu, &gpu, &format!("{limit:?} [{t0}, {t1})"));
                    assert!(timing.upload.is_zero());
                    assert_same_rows(&g, &t, mask, (t0, t1), &format!("{limit:?} [{t0}, {t1})"));
                }
                for bins in [1usize, 2, 37] {
                    let cpu = fields::busy_fraction(&t, mask, t0, t1, bins).unwrap();
                    let (gpu, _) = g.busy_fraction(mask, t0, t1, bins).unwrap();
                    assert_eq!(cpu.edges, gpu.edges);
                    for (i, (c, x)) in cpu.values.iter().zip(&gpu.values).enumerate() {
                        assert_eq!(
                            c.to_bits(),
                            x.to_bits(),
                            "{limit:?} [{t0}, {t1}) {bins} bins, cell {i}: {c} vs {x}"
                        );
                    }
                }
            }
        }
    }
    // locations without a single interval: nothing to run, zeros out
    let none = synth::explicit_intervals(&[vec![], vec![]]);
    let g = tapestry::gpu::GpuTrace::upload(&ctx, &none, None).unwrap();
    assert_eq!(g.num_chunks(), 0);
    if kernels::moments::supported(&ctx) {
        let (m, _) = g.moments(&masks[0], 0, 10).unwrap();
        assert_eq!(m, moments::moments(&none, &masks[0], 0, 10));
        assert_same_rows(&g, &none, &masks[0], (0, 10), "no intervals");
    }
    let (f, _) = g.busy_fraction(&masks[0], 0, 10, 5).unwrap();
    assert_eq!(f.values, vec![0.0; 10]);
    // bad parameters are refused, not run
    let g = tapestry::gpu::GpuTrace::upload(&ctx, &t, None).unwrap();
    assert!(g.busy_fraction(&masks[0], 10, 10, 4).is_err());
    assert!(g.busy_fraction(&masks[0], 0, 3, 4).is_err());
    assert!(g.busy_fraction(&masks[0], 0, span, 0).is_err());
}

/// The CPU reference on the field the GPU sees: values and isovalue
/// rounded to f32.
fn cpu_on_f32(values: &[f64], dims: [usize; 3], iso: f64) -> isosurface::IsoMesh {
    let v: Vec<f64> = values.iter().map(|&x| x as f32 as f64).collect();
    isosurface::extract(&v, dims, iso as f32 as f64)
}

/// Identical indices and vertex count; positions and normals within the
/// stated f32 bound.
fn assert_same_mesh(cpu: &isosurface::IsoMesh, gpu: &isosurface::IsoMesh, what: &str) {
    assert_eq!(cpu.positions.len(), gpu.positions.len(), "{what}: vertices");
    assert_eq!(cpu.indices, gpu.indices, "{what}: indices");
    for (i, (c, g)) in cpu.positions.iter().zip(&gpu.positions).enumerate() {
        for k in 0..3 {
            assert!(
                (c[k] - g[k]).abs() <= 1e-5 * c[k].abs().max(1.0),
                "{what}: vertex {i} {c:?} vs {g:?}"
            );
        }
    }
    let bad = cpu
        .normals
        .iter()
        .zip(&gpu.normals)
        .filter(|(c, g)| (0..3).any(|k| (c[k] - g[k]).abs() > 1e-4))
        .count();
    // normals agree except where the interpolated gradient nearly vanishes
    assert!(
        bad * 1000 <= cpu.normals.len(),
        "{what}: {bad} normals differ"
    );
}

fn lcg_field(dims: [usize; 3], levels: u64, seed: u64) -> Vec<f64> {
    let mut s = seed;
    (0..dims[0] * dims[1] * dims[2])
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 33) % levels) as f64 / (levels - 1) as f64 - 0.5
        })
        .collect()
}

#[test]
fn marching_cubes_kernel_gives_the_cpu_mesh() {
    let Some(ctx) = context() else { return };
    // random fields (values exactly at the isovalues included: 5 levels),
    // shapes not multiples of 32, words spanning rows
    for (dims, seed) in [
        ([20, 20, 20], 1),
        ([37, 5, 9], 2),
        ([70, 33, 4], 3),
        ([2, 2, 2], 4),
        ([33, 2, 65], 5),
    ] {
        let v = lcg_field(dims, 5, seed);
        let mut x = kernels::isosurface::Extractor::new(&ctx, dims).unwrap();
        x.set_field(&v).unwrap();
        for iso in [0.0, 0.25, -0.25, 0.1, -0.5, 0.5, 7.0] {
            let g = x.extract(iso).unwrap();
            let c = cpu_on_f32(&v, dims, iso);
            assert_same_mesh(&c, &g, &format!("{dims:?} iso {iso}"));
        }
    }
    // three levels of prefix sums (over 2^20 edge words)
    let dims = [3, 600, 600];
    let v = lcg_field(dims, 5, 11);
    let g = kernels::isosurface::extract(&ctx, &v, dims, 0.1).unwrap();
    assert_same_mesh(&cpu_on_f32(&v, dims, 0.1), &g, "3-level scan");
    // continuous random values
    let dims = [45, 31, 28];
    let v: Vec<f64> = lcg_field(dims, 1 << 20, 9)
        .iter()
        .map(|x| x.sin() * 3.0)
        .collect();
    let g = kernels::isosurface::extract(&ctx, &v, dims, 0.3).unwrap();
    assert!(g.triangles() > 1000);
    assert_same_mesh(&cpu_on_f32(&v, dims, 0.3), &g, "continuous");
    // a sphere: closed, Euler characteristic 2, same as the CPU
    let n = 64;
    let c = (n as f64 - 1.0) / 2.0;
    let sphere: Vec<f64> = (0..n * n * n)
        .map(|i| {
            let (x, y, z) = (
                (i % n) as f64 - c,
                ((i / n) % n) as f64 - c,
                (i / (n * n)) as f64 - c,
            );
            20.0 - (x * x + y * y + z * z).sqrt()
        })
        .collect();
    let g = kernels::isosurface::extract(&ctx, &sphere, [n, n, n], 0.0).unwrap();
    assert_same_mesh(&cpu_on_f32(&sphere, [n, n, n], 0.0), &g, "sphere");
    let want = 4.0 * std::f64::consts::PI * 400.0;
    assert!((g.area() - want).abs() / want < 0.01);
    // constant fields (at, above, below the isovalue) and degenerate shapes
    for (dims, val, iso) in [
        ([3, 3, 3], 2.0, 2.0),
        ([3, 3, 3], 1.0, 0.5),
        ([5, 4, 3], 1.0, 1.5),
    ] {
        let v = vec![val; dims.iter().product()];
        assert_eq!(
            kernels::isosurface::extract(&ctx, &v, dims, iso)
                .unwrap()
                .triangles(),
            0
        );
    }
    for dims in [[1, 1, 10], [1, 7, 7], [9, 1, 1]] {
        let v = lcg_field(dims, 5, 7);
        assert_eq!(
            kernels::isosurface::extract(&ctx, &v, dims, 0.0)
                .unwrap()
                .triangles(),
            0
        );
        assert!(kernels::isosurface::Extractor::new(&ctx, dims).is_err());
    }
    // a wrong number of values is refused
    let mut x = kernels::isosurface::Extractor::new(&ctx, [4, 4, 4]).unwrap();
    assert!(x.set_field(&[0.0; 10]).is_err());
}

/// The numeric cells of a CSV written by `analyze` (comments and header
/// skipped; the name column kept as text).
fn csv_cells(path: &std::path::Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .skip(1)
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

/// `analyze moments --gpu` equals `--cpu` to 1e-9 on the real traces
/// (the case: qsort with `--states idle`), and `analyze field
/// --gpu` writes the identical field.
#[test]
fn analyze_on_the_gpu_equals_the_cpu_on_real_traces() {
    if f64_context().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let qsort = common::shared_trace("paraver-qsort/qsort_beo3.prv");
    let lammps = common::shared_trace("lammps-melt-16/lammps-melt-16.json.gz");
    for (trace, states) in [(&qsort, "idle"), (&qsort, "busy"), (&lammps, "busy")] {
        let trace = trace.to_str().unwrap();
        let mut out = Vec::new();
        for c in ["--cpu", "--gpu"] {
            let o = dir.path().join(format!("m{c}.csv"));
            let (code, _, err) = common::tapestry(&[
                "analyze",
                trace,
                "moments",
                "--states",
                states,
                c,
                "-o",
                o.to_str().unwrap(),
            ]);
            assert_eq!(code, 0, "{trace} {c}: {err}");
            if c == "--gpu" {
                assert!(err.contains("moments on the GPU"), "{err}");
            }
            out.push(csv_cells(&o));
        }
        assert_eq!(out[0].len(), out[1].len());
        assert!(!out[0].is_empty());
        for (rc, rg) in out[0].iter().zip(&out[1]) {
            assert_eq!(rc[..3], rg[..3], "{trace} {states}: location, name, m0");
            for k in 3..rc.len() {
                let (a, b) = (rc[k].parse::<f64>(), rg[k].parse::<f64>());
                match (a, b) {
                    (Ok(a), Ok(b)) => assert!(
                        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0),
                        "{trace} {states} column {k}: {a} vs {b}"
                    ),
                    _ => assert_eq!(rc[k], rg[k], "{trace} {states} column {k}"),
                }
            }
        }
        let mut fields = Vec::new();
        for c in ["--cpu", "--gpu"] {
            let o = dir.path().join(format!("f{c}.csv"));
            let (code, _, err) = common::tapestry(&[
                "analyze",
                trace,
                "field",
                "--states",
                states,
                "--bins",
                "37",
                c,
                "-o",
                o.to_str().unwrap(),
            ]);
            assert_eq!(code, 0, "{trace} {c}: {err}");
            if c == "--gpu" {
                assert!(err.contains("busy field on the GPU"), "{err}");
            }
            let text = std::fs::read_to_string(&o).unwrap();
            let (meta, values) = text.split_once('\n').unwrap();
            let want = if c == "--gpu" {
                "\"compute\":\"gpu ("
            } else {
                "\"compute\":\"cpu\""
            };
            assert!(meta.contains(want), "{meta}");
            fields.push(values.to_string());
        }
        assert_eq!(fields[0], fields[1], "{trace} {states}: the field differs");
    }
}

/// The timed kernels return the same results and, where the adapter has
/// timestamp queries (lavapipe does), the kernels' own time.
#[test]
fn timed_kernels_report_their_gpu_time() {
    let Some(ctx) = f64_context() else { return };
    let t = synth::random_intervals(64, 300, 5);
    let mask = t.states.select(&["busy".into()]).unwrap();
    let span = t.meta.span;
    let plain = kernels::moments::moments(&ctx, &t, &mask, 0, span, None).unwrap();
    let (timed, ns) = kernels::moments::moments_timed(&ctx, &t, &mask, 0, span, None).unwrap();
    assert_eq!(plain, timed);
    let f = kernels::busy_bins::busy_fraction(&ctx, &t, &mask, 0, span, 16, None).unwrap();
    let (g, ns2) =
        kernels::busy_bins::busy_fraction_timed(&ctx, &t, &mask, 0, span, 16, None).unwrap();
    assert_eq!(f.values, g.values);
    if ctx.features.contains(wgpu::Features::TIMESTAMP_QUERY) {
        for x in [ns, ns2] {
            let x = x.expect("timestamps where offered");
            assert!(x > 0.0 && x < 60e9, "{x} ns");
        }
    } else {
        assert!(ns.is_none() && ns2.is_none());
    }
}

/// The Kiviat tube made on the GPU from a busy field left there equals the
/// CPU's tube of the same field read back: the field itself bit for bit,
/// then vertices (positions and colours to 1e-4, normals to 1e-3: f32
/// averages against f64), triangles, scales, labels and title, for every
/// level of detail, radius scale, trimming, colour map and frame.
#[test]
fn kiviat_tube_made_on_the_gpu_equals_the_cpu_tube() {
    use tapestry::views::kiviat::{self, KiviatParams};
    let Some(ctx) = context() else { return };
    let t = synth::random_intervals(37, 60, 11);
    let mask = t.states.select(&["busy".into()]).unwrap();
    // a resident trace cut into chunks of 4 KiB (locations spanning them)
    let g = tapestry::gpu::GpuTrace::upload(&ctx, &t, Some(4096)).unwrap();
    assert!(g.num_chunks() > 1);
    let base = KiviatParams::default();
    let cases: Vec<(&str, KiviatParams, usize)> = vec![
        ("default", base.clone(), 0),
        ("late frame", base.clone(), 9),
        (
            "whole tube",
            KiviatParams {
                width: 0,
                ..base.clone()
            },
            0,
        ),
        (
            "log radius",
            KiviatParams {
                log: true,
                log_floor: 1e-2,
                ..base.clone()
            },
            3,
        ),
        (
            "sectors of 4 elements, 2 bins a ring",
            KiviatParams {
                width: 0,
                max_sectors: 10,
                max_triangles: 400,
                ..base.clone()
            },
            0,
        ),
        (
            "per-frame scale, empty bins kept, no inner radius",
            KiviatParams {
                per_frame_scale: true,
                keep_empty: true,
                inner: 0.0,
                ..base.clone()
            },
            4,
        ),
        (
            "one ring",
            KiviatParams {
                width: 1,
                ..base.clone()
            },
            2,
        ),
    ];
    // the window starts before the first interval: leading empty bins
    let (t0, t1) = (0, t.meta.span);
    for bins in [24usize, 40] {
        let cpu_field = fields::busy_fraction(&t, &mask, t0, t1, bins).unwrap();
        let field = g.busy_field(&mask, t0, t1, bins).unwrap();
        let back = field.read().unwrap();
        assert_eq!(back.edges, cpu_field.edges);
        for (c, r) in cpu_field.values.iter().zip(&back.values) {
            assert_eq!(c.to_bits(), r.to_bits(), "the resident field");
        }
        let meta = fields::busy_field(Vec::new(), field.edges.clone(), field.elements);
        for cmap in ["viridis", "categorical"] {
            for (what, p, start) in &cases {
                let what = format!("{bins} bins, {cmap}, {what}");
                let eg = 37usize.div_ceil(p.max_sectors.max(3));
                let summaries = field.summaries(eg).unwrap();
                assert_eq!(
                    kiviat::leading_empty_summaries(&summaries),
                    fields::leading_empty_bins(&cpu_field),
                    "{what}: leading empty bins"
                );
                let cpu = kiviat::build(&cpu_field, None, cmap, p, *start, None).unwrap();
                let gpu =
                    kiviat::build_resident(&field, &meta, &summaries, cmap, p, *start, None, None)
                        .unwrap();
                // hover: the same points and texts; the values come from f32
                // averages, so a value on a rounding edge of its last shown
                // digit may show the neighbouring digit
                assert_eq!(cpu.picks.len(), gpu.picks.len(), "{what}");
                assert!(!gpu.picks.is_empty(), "{what}");
                for (c, g) in cpu.picks.iter().zip(&gpu.picks) {
                    assert_eq!(c.processor, g.processor, "{what}");
                    if c.text == g.text {
                        continue;
                    }
                    let (ch, cv) = c.text.rsplit_once(": ").unwrap();
                    let (gh, gv) = g.text.rsplit_once(": ").unwrap();
                    assert_eq!(ch, gh, "{what}");
                    let digit = |v: &str| {
                        v.split_once('.')
                            .map_or(1.0, |(_, f)| 10f64.powi(-(f.len() as i32)))
                    };
                    let (x, y) = (cv.parse::<f64>().unwrap(), gv.parse::<f64>().unwrap());
                    assert!(
                        (x - y).abs() <= 1.01 * digit(cv).max(digit(gv)),
                        "{what}: {:?} vs {:?}",
                        c.text,
                        g.text
                    );
                }
                let (cm, gm) = (&cpu.meshes[0], &gpu.resident[0]);
                assert!(gpu.meshes.is_empty(), "{what}");
                assert_eq!(cm.vertices.len(), gm.vertex_count as usize, "{what}");
                // the index buffer (kept between tubes of one shape) is the CPU's
                assert_eq!(cm.indices, gm.read_indices().unwrap(), "{what}");
                assert_eq!(cpu.triangles(), gpu.triangles(), "{what}");
                let verts = gm.read_vertices(0..gm.vertex_count).unwrap();
                // a categorical map rounds: a value on a category's edge
                // (a busy fraction of exactly 0.5 is one) may fall either
                // side in f32; a few such vertices are allowed
                let mut other_category = 0;
                for (i, (c, g)) in cm.vertices.iter().zip(&verts).enumerate() {
                    let near = |a: &[f32], b: &[f32], tol: f32| {
                        a.iter().zip(b).all(|(x, y)| (x - y).abs() <= tol)
                    };
                    assert!(
                        near(&c.position, &g.position, 1e-4),
                        "{what}, vertex {i}: {c:?} vs {g:?}"
                    );
                    if !near(&c.color, &g.color, 1e-4) {
                        assert_eq!(cmap, "categorical", "{what}, vertex {i}: {c:?} vs {g:?}");
                        other_category += 1;
                    }
                    assert!(
                        near(&c.normal, &g.normal, 1e-3),
                        "{what}, normal {i}: {c:?} vs {g:?}"
                    );
                }
                assert!(
                    other_category * 50 <= verts.len(),
                    "{what}: {other_category} of {} vertices in another category",
                    verts.len()
                );
                assert_eq!(cpu.title, gpu.title, "{what}");
                assert_eq!(cpu.lines.len(), gpu.lines.len(), "{what}");
                let texts = |s: &tapestry::scene::Scene| -> Vec<String> {
                    s.labels.iter().map(|l| l.text.clone()).collect()
                };
                assert_eq!(texts(&cpu), texts(&gpu), "{what}");
                let (lc, lg) = (cpu.legend.as_ref().unwrap(), gpu.legend.as_ref().unwrap());
                assert!(
                    (lc.min - lg.min).abs() <= 1e-6 && (lc.max - lg.max).abs() <= 1e-6,
                    "{what}: legend {}..{} vs {}..{}",
                    lc.min,
                    lc.max,
                    lg.min,
                    lg.max
                );
                // the camera frames the same tube
                let (bc, bg) = (cpu.bounds().unwrap(), gpu.bounds().unwrap());
                assert!(
                    bg.0[2] <= bc.0[2] + 1e-4 && bg.1[2] >= bc.1[2] - 1e-4,
                    "{what}"
                );
            }
        }
    }
    // the selected processor's spoke: the same line along the tube
    {
        let cpu_field = fields::busy_fraction(&t, &mask, t0, t1, 30).unwrap();
        let field = g.busy_field(&mask, t0, t1, 30).unwrap();
        let meta = fields::busy_field(Vec::new(), field.edges.clone(), field.elements);
        let p = KiviatParams {
            max_sectors: 10,
            ..base.clone()
        };
        let (ne, eg) = (37usize, 37usize.div_ceil(10));
        let e = ne.div_ceil(eg);
        let summaries = field.summaries(eg).unwrap();
        let cpu = kiviat::build(&cpu_field, None, "viridis", &p, 0, None).unwrap();
        for sel in [0usize, 13, 36] {
            // the CPU view draws the spoke through its mesh's vertices
            let line: Vec<[f32; 3]> = cpu.meshes[0]
                .vertices
                .iter()
                .skip(sel / eg)
                .step_by(e)
                .map(|v| {
                    let [x, y, z] = v.position;
                    [x * 1.04, y * 1.04, z]
                })
                .collect();
            let gpu = kiviat::build_resident(
                &field,
                &meta,
                &summaries,
                "viridis",
                &p,
                0,
                None,
                Some(sel),
            )
            .unwrap();
            // the tube's lines, then the spoke, then the box's 12 edges
            let extra = &gpu.lines[cpu.lines.len()..];
            assert_eq!(extra.len(), line.len() - 1 + 12, "processor {sel}");
            for (s, w) in extra.iter().zip(line.windows(2)) {
                let near = |p: [f32; 3], q: [f32; 3]| (0..3).all(|c| (p[c] - q[c]).abs() < 1e-4);
                assert!(near(s.a, w[0]) && near(s.b, w[1]), "processor {sel}");
            }
            let key = format!("selected: processor {sel}");
            assert!(gpu.key.iter().any(|k| k.text == key), "processor {sel}");
        }
    }
    // a tube that does not fit the field is refused
    let field = g.busy_field(&mask, t0, t1, 8).unwrap();
    let bad = kernels::tube::TubeShape {
        first: 5,
        shown: 6,
        eg: 1,
        sectors: 37,
        group: 1,
        rings: 6,
        vmax: 1.0,
        cmin: 0.0,
        cmax: 1.0,
        floor: 1e-3,
        log: false,
        inner: 0.05,
        stretch: 0.15,
    };
    assert!(field.tube(&bad, &[], false, Vec::new).is_err());
    // and so is a field of no bins or an empty window
    assert!(g.busy_field(&mask, t0, t1, 0).is_err());
    assert!(g.busy_field(&mask, 10, 10, 4).is_err());
}

/// A Paraver trace from its text, read as `tapestry` reads a file.
fn load_prv(text: &str) -> tapestry::readers::Loaded {
    let d = tempfile::tempdir().unwrap();
    let path = common::write(d.path(), "t.prv", text.as_bytes());
    tapestry::readers::load(&path, &Default::default()).unwrap()
}

/// A Paraver trace of `p` tasks (one CPU each), task `l` idle (no record)
/// when `empty(l)`, the others busy and waiting in turns of random length.
fn prv_with_idle_tasks(p: usize, per: usize, empty: impl Fn(usize) -> bool) -> String {
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = |m: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % m
    };
    let mut body = String::new();
    let mut end = 0;
    for l in (0..p).filter(|&l| !empty(l)) {
        let mut t = next(500);
        for i in 0..per {
            let len = 1 + next(3000);
            let state = if i % 3 == 2 { 3 } else { 1 };
            body += &format!("1:{}:1:{}:1:{t}:{}:{state}\n", l + 1, l + 1, t + len);
            t += len + next(300);
        }
        end = end.max(t);
    }
    let tasks = vec!["1:1"; p].join(",");
    format!("#Paraver (01/01/70 at 00:00):{end}_ns:1({p}):1:{p}({tasks})\n{body}")
}

/// A busy field larger than one storage binding (here lowered by
/// `GpuTrace::limit_fields`) cannot feed the Kiviat tube's or the Gantt
/// chart's kernels: both views are then computed on the CPU, say so, and
/// draw what the CPU draws; a field that just fits stays on the GPU.
#[test]
fn views_compute_a_field_too_large_for_one_binding_on_the_cpu() {
    use std::sync::Arc;
    use tapestry::views::{BuildCtx, Prepared, ViewState, inputs::GpuInput};
    let Some(ctx) = f64_context() else { return };
    let loaded = load_prv(&prv_with_idle_tasks(37, 40, |l| l % 7 == 3));
    let tapestry::readers::Loaded::Trace(t) = &loaded else {
        panic!("a trace")
    };
    let bins = 24usize;
    let field = 37 * bins as u64 * 8;
    for (limit, stays) in [(field - 1, false), (field, true)] {
        let mut g = tapestry::gpu::GpuTrace::upload(&ctx, t, None).unwrap();
        g.limit_fields(limit);
        assert_eq!(g.field_fits(bins), stays);
        let g = Arc::new(g);
        for view in ["moments", "kiviat"] {
            let what = format!("{view}, a field of {field} bytes, limit {limit}");
            let mut state = ViewState::new(view);
            state.data.bins = bins;
            let cpu = Prepared::new(&loaded, &state).unwrap();
            let gpu = Prepared::with_gpu(&loaded, &state, Some(GpuInput(g.clone()))).unwrap();
            assert_eq!(gpu.on_gpu(), stays, "{what}");
            match gpu.gpu_note() {
                Some(note) => {
                    assert!(!stays, "{what}");
                    assert!(note.contains("computed on the CPU"), "{what}: {note}");
                    assert!(note.contains("one GPU storage binding"), "{what}: {note}");
                }
                None => assert!(stays, "{what}"),
            }
            let bctx = BuildCtx::still(960, 540);
            let (c, s) = (cpu.build(bctx).unwrap(), gpu.build(bctx).unwrap());
            assert_eq!(c.title, s.title, "{what}");
            assert_eq!(c.key, s.key, "{what}");
            if !stays {
                // the CPU's scene, legend and mesh for mesh (on the GPU the
                // tube's range comes from f32 bin summaries)
                assert_eq!(c.legend, s.legend, "{what}");
                assert!(s.resident.is_empty(), "{what}");
                assert_eq!(c.meshes.len(), s.meshes.len(), "{what}");
                for (a, b) in c.meshes.iter().zip(&s.meshes) {
                    assert_eq!(a.indices, b.indices, "{what}");
                    assert_eq!(a.vertices.len(), b.vertices.len(), "{what}");
                }
            } else {
                assert!(!s.resident.is_empty(), "{what}");
            }
        }
    }
}

/// The moment display with its trace resident on the GPU (moments from the
/// moments kernel, the Gantt chart made from the busy field left on the
/// GPU) draws what the CPU display draws: the same bars and lines (to
/// 1e-4 of the chart), the same Gantt cells and colours (each GPU quad
/// inside the CPU quad of its row and bin, of its colour), the same hover
/// texts (a Gantt value on the rounding edge of its third decimal may show
/// the neighbour), titles, labels, key and legend; for one processor a
/// row and merged rows, rows without data, a time cursor, a selection and
/// both kinds of colour map. The kernel refuses a chart that does not fit.
#[test]
fn moment_display_made_on_the_gpu_equals_the_cpu_display() {
    use std::sync::Arc;
    use tapestry::views::{BuildCtx, Prepared, ViewState, inputs::GpuInput};
    let Some(ctx) = f64_context() else { return };
    // tasks 20..=26 idle: a whole merged row without data
    let loaded = load_prv(&prv_with_idle_tasks(37, 40, |l| {
        l % 7 == 3 || (20..27).contains(&l)
    }));
    let tapestry::readers::Loaded::Trace(t) = &loaded else {
        panic!("a trace")
    };
    let span = t.meta.span;
    let g = Arc::new(tapestry::gpu::GpuTrace::upload(&ctx, t, Some(4096)).unwrap());
    assert!(g.num_chunks() > 1);
    let mut compared = 0;
    for (bins, max_rows) in [(24usize, 65_536usize), (7, 8), (40, 3)] {
        for cmap in ["heat", "categorical"] {
            for cursor in [None, Some(span / 3)] {
                let what = format!("{bins} bins, {max_rows} rows, {cmap}, cursor {cursor:?}");
                let mut state = ViewState::new("moments");
                state.params = serde_json::json!({ "max_rows": max_rows });
                state.data.bins = bins;
                state.data.colormap = Some(cmap.into());
                state.data.window = Some([span / 10, span]);
                let cpu = Prepared::new(&loaded, &state).unwrap();
                let gpu = Prepared::with_gpu(&loaded, &state, Some(GpuInput(g.clone()))).unwrap();
                assert!(!cpu.on_gpu() && gpu.on_gpu(), "{what}");
                assert!(gpu.gpu_note().is_none(), "{what}");
                let bctx = BuildCtx {
                    cursor,
                    selected: Some(5),
                    ..BuildCtx::still(1280, 720)
                };
                // a frame at the other cursor first: the rows and chart kept
                // from it must not stand in for this frame's
                let other = BuildCtx {
                    cursor: if cursor.is_some() {
                        None
                    } else {
                        Some(span / 2)
                    },
                    ..bctx
                };
                gpu.build(other).unwrap();
                let (c, s) = (cpu.build(bctx).unwrap(), gpu.build(bctx).unwrap());
                // the same frame again: the kept rows and chart
                let again = gpu.build(bctx).unwrap();
                assert_eq!(again.title, s.title, "{what}");
                assert_eq!(again.picks, s.picks, "{what}");
                assert_eq!(c.title, s.title, "{what}");
                let texts = |s: &tapestry::scene::Scene| -> Vec<String> {
                    s.labels.iter().map(|l| l.text.clone()).collect()
                };
                assert_eq!(texts(&c), texts(&s), "{what}");
                assert_eq!(c.key, s.key, "{what}");
                assert_eq!(c.legend, s.legend, "{what}");
                // bars and lines: moments from the kernel within 1e-9
                let near = |a: &[f32], b: &[f32], tol: f32| {
                    a.iter().zip(b).all(|(x, y)| (x - y).abs() <= tol)
                };
                assert_eq!(c.lines.len(), s.lines.len(), "{what}");
                for (a, b) in c.lines.iter().zip(&s.lines) {
                    assert!(near(&a.a, &b.a, 1e-4) && near(&a.b, &b.b, 1e-4), "{what}");
                    assert_eq!(a.color, b.color, "{what}");
                }
                let (cb, sb) = (&c.meshes[0], &s.meshes[0]);
                assert_eq!(cb.indices, sb.indices, "{what}");
                for (a, b) in cb.vertices.iter().zip(&sb.vertices) {
                    assert!(near(&a.position, &b.position, 1e-4), "{what}");
                    assert_eq!(a.color, b.color, "{what}");
                }
                // the Gantt chart: host quads against the GPU's
                assert_eq!(c.meshes.len(), 2, "{what}");
                assert_eq!((s.meshes.len(), s.resident.len()), (1, 1), "{what}");
                let quads = |v: &[tapestry::scene::Vertex]| -> Vec<([f32; 4], [f32; 4])> {
                    v.chunks(4)
                        .map(|q| {
                            let (a, b) = (q[0].position, q[2].position);
                            ([a[0], a[1], b[0], b[1]], q[0].color)
                        })
                        .collect()
                };
                let host = quads(&c.meshes[1].vertices);
                let m = &s.resident[0];
                let dev = quads(&m.read_vertices(0..m.vertex_count).unwrap());
                assert_eq!(m.index_count, m.vertex_count / 4 * 6, "{what}");
                let idx = m.read_indices().unwrap();
                assert_eq!(&idx[6..12], &[4, 5, 6, 4, 6, 7], "{what}");
                let rows = dev.len() / bins;
                assert_eq!(dev.len(), rows * bins, "{what}");
                let mut nodata = 0;
                let mut other_category = 0;
                for (k, (r, col)) in dev.iter().enumerate() {
                    let host_quad = host
                        .iter()
                        .find(|(h, _)| {
                            (h[1] - r[1]).abs() < 1e-5
                                && (h[3] - r[3]).abs() < 1e-5
                                && h[0] <= r[0] + 1e-5
                                && r[2] <= h[2] + 1e-5
                                && r[2] > h[0]
                        })
                        .unwrap_or_else(|| panic!("{what}: cell {k} {r:?} not on the host"));
                    if host_quad.1 == [0.86, 0.86, 0.86, 1.0] {
                        nodata += 1;
                    }
                    if !near(&host_quad.1, col, 1e-4) {
                        assert_eq!(
                            cmap, "categorical",
                            "{what}, cell {k}: {host_quad:?} vs {col:?}"
                        );
                        other_category += 1;
                    }
                }
                assert!(other_category * 50 <= dev.len(), "{what}: {other_category}");
                assert_eq!(nodata % bins, 0, "{what}");
                // rows without data: the idle tasks' own rows, or the merged
                // row of tasks 20..27 (max_rows 8: 5 a row); rows of 13
                // all have some
                assert_eq!(
                    nodata == 0,
                    max_rows == 3,
                    "{what}: {nodata} cells without data"
                );
                // hover texts
                assert_eq!(c.picks.len(), s.picks.len(), "{what}");
                for (a, b) in c.picks.iter().zip(&s.picks) {
                    assert_eq!((a.shape, a.processor), (b.shape, b.processor), "{what}");
                    if a.text == b.text {
                        continue;
                    }
                    let (ah, av) = a.text.rsplit_once(": ").unwrap();
                    let (bh, bv) = b.text.rsplit_once(": ").unwrap();
                    assert_eq!(ah, bh, "{what}");
                    let (x, y) = (av.parse::<f64>().unwrap(), bv.parse::<f64>().unwrap());
                    assert!((x - y).abs() <= 1.01e-3, "{what}: {a:?} vs {b:?}");
                }
                compared += 1;
            }
        }
    }
    assert_eq!(compared, 12);
    // a chart that does not fit the field is refused
    let mask = t.states.select(&["busy".into()]).unwrap();
    let field = g.busy_field(&mask, 0, span, 5).unwrap();
    let shape = kernels::gantt::GanttShape {
        group: 4,
        xs: vec![0.0; 6],
        scale: 1.0,
        nodata: [0.5; 4],
    };
    let stops = [(0.0, [0.0; 3]), (1.0, [1.0; 3])];
    assert!(field.gantt(&shape, &[true; 36], &stops, false).is_err());
    let short = kernels::gantt::GanttShape {
        xs: vec![0.0; 5],
        ..shape.clone()
    };
    assert!(field.gantt(&short, &[true; 37], &stops, false).is_err());
    assert!(field.gantt(&shape, &[true; 37], &stops, false).is_ok());
}
