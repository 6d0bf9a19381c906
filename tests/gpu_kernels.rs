//! The compute kernels against their CPU references, on whatever adapter is
//! present (lavapipe in CI), with sizes that force chunking; and every WGSL
//! file validated by naga.
//!
//! Without an adapter these tests say so and pass, unless
//! `TAPESTRY_REQUIRE_GPU` is set (CI sets it, so there they must run).

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
        // scene shaders get the shared prelude in front, as the renderer does
        if src.starts_with("// needs globals.wgsl") {
            src = std::fs::read_to_string(dir.join("globals.wgsl")).unwrap() + &src;
        }
        let module = naga::front::wgsl::parse_str(&src)
            .unwrap_or_else(|e| panic!("{}: {}", p.display(), e.emit_to_string(&src)));
        // exactly the capabilities the device is asked for: none beyond the defaults
        naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::empty(),
        )
        .validate(&module)
        .unwrap_or_else(|e| panic!("{}: {}", p.display(), e.emit_to_string(&src)));
        n += 1;
    }
    assert!(n >= 2, "shaders found: {n}");
}

#[test]
fn moments_kernel_matches_the_cpu() {
    let Some(ctx) = context() else { return };
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
        for (l, (c, g)) in cpu.iter().zip(&gpu).enumerate() {
            let ctxs = format!("{locs}x{per} location {l}: cpu {c:?} gpu {g:?}");
            assert!((c.m0 - g.m0).abs() <= 1e-6 * c.m0.max(1.0), "{ctxs}");
            match (c.m1, g.m1) {
                (None, None) => continue,
                (Some(a), Some(b)) => {
                    let m2 = c.m2.unwrap();
                    assert!((a - b).abs() <= 1e-5 * m2.max(1.0), "m1 {ctxs}");
                    assert!((m2 - g.m2.unwrap()).abs() <= 1e-4 * m2, "m2 {ctxs}");
                    let (c3, g3) = (c.m3.unwrap(), g.m3.unwrap());
                    assert!(
                        (c3.powi(3) - g3.powi(3)).abs() <= 1e-4 * m2.powi(3),
                        "m3 {ctxs}"
                    );
                }
                _ => panic!("defined on one side only: {ctxs}"),
            }
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
        for (i, (c, g)) in cpu.values.iter().zip(&gpu.values).enumerate() {
            // exact integer overlaps; one f32 division
            assert!(
                (c - g).abs() <= 2.0f64.powi(-23) * c.abs().max(1e-30) + 1e-12,
                "{locs}x{per} cell {i}: {c} vs {g}"
            );
        }
    }
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
