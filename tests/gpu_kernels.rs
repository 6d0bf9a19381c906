//! The compute kernels against their CPU references, on whatever adapter is
//! present (lavapipe in CI), with sizes that force chunking; and every WGSL
//! file validated by naga.
//!
//! Without an adapter these tests say so and pass, unless
//! `TAPESTRY_REQUIRE_GPU` is set (CI sets it, so there they must run).

use tapestry::analysis::{fields, moments};
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
