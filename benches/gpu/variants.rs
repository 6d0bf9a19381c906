//! Variants of the moments kernel, timed on the resident trace beside the
//! shipped one: each is the shipped WGSL with one change, so the
//! difference in GPU time says what that part costs on this card (a
//! variant marked "timing only" gives wrong results on purpose: it leaves
//! a stage out or does it twice). Lavapipe's times say nothing about a
//! GPU; run this on a real card.

use tapestry::analysis::moments::Moments;
use tapestry::gpu::{GpuContext, GpuTrace};

const U64: &str = include_str!("../../shaders/u64.wgsl");
const MOMENTS: &str = include_str!("../../shaders/moments.wgsl");
const SUBGROUPS: &str = include_str!("../../shaders/moments_subgroups.wgsl");

/// `src` with `from` replaced by `to`, which must occur.
fn swap(src: &str, from: &str, to: &str) -> String {
    assert!(src.contains(from), "variant: `{from}` not in the shader");
    src.replacen(from, to, 1)
}

/// `src` with the function that starts with `head` (up to its closing
/// brace at the start of a line) replaced by `to`.
fn swap_fn(src: &str, head: &str, to: &str) -> String {
    let at = src
        .find(head)
        .unwrap_or_else(|| panic!("variant: `{head}` not in the shader"));
    let end = at + src[at..].find("\n}\n").expect("function's end") + 3;
    format!("{}{}{}", &src[..at], to, &src[end..])
}

/// The merge with the CPU's three divisions (the kernel before
/// 2026-11-28 evening).
fn three_divisions(s: &str) -> String {
    swap_fn(
        s,
        "fn merge(",
        "fn merge(a: Acc, b: Acc) -> Acc {
    if (b.w == f64(0.0)) {
        return a;
    }
    if (a.w == f64(0.0)) {
        return b;
    }
    let w = a.w + b.w;
    let d = b.mean - a.mean;
    let mean = a.mean + d * b.w / w;
    let m2 = a.m2 + b.m2 + d * d * a.w * b.w / w;
    let m3 = a.m3 + b.m3 + d * d * d * a.w * b.w * (a.w - b.w) / (w * w)
        + f64(3.0) * d * (a.w * b.m2 - b.w * a.m2) / w;
    return Acc(w, mean, m2, m3);
}
",
    )
}

/// Timing only: the merge reduced to additions (no divisions).
fn no_arith(s: &str) -> String {
    swap_fn(
        s,
        "fn merge(",
        "fn merge(a: Acc, b: Acc) -> Acc {
    return Acc(a.w + b.w, a.mean + b.mean, a.m2 + b.m2, a.m3);
}
",
    )
}

/// `lanes` lanes a workgroup, each folding `per` intervals (a tile of
/// `lanes` x `per`).
fn shape(s: &str, lanes: u32, per: u32) -> String {
    let s = swap(
        s,
        "const LANES: u32 = 32u;",
        &format!("const LANES: u32 = {lanes}u;"),
    );
    let s = swap(
        &s,
        "const PER: u32 = 32u;",
        &format!("const PER: u32 = {per}u;"),
    );
    let s = swap(
        &s,
        "const TILE: u32 = 1024u;",
        &format!("const TILE: u32 = {}u;", lanes * per),
    );
    let s = swap(
        &s,
        "var<workgroup> nodes: array<Node, 32>;",
        &format!("var<workgroup> nodes: array<Node, {lanes}>;"),
    );
    s.replace("@workgroup_size(32)", &format!("@workgroup_size({lanes})"))
}

/// Timing only: the search for the tile's first and last locations done
/// twice (the second starts from a bound the first decides, so neither
/// can be dropped).
fn locate_twice(s: &str) -> String {
    swap(
        s,
        "        span[lane] = locate(select(first, last, lane == 1u), 0u, params.locations);",
        "        let x = select(first, last, lane == 1u);
        let once = locate(x, 0u, params.locations);
        span[lane] = locate(x, select(0u, 1u, once == 0xfffffff0u), params.locations);",
    )
}

/// The largest difference between two sets of moments, relative to the
/// first's scale (m2, or 1).
fn worst(a: &[Moments], b: &[Moments]) -> f64 {
    let mut w = 0f64;
    for (x, y) in a.iter().zip(b) {
        if x.m0 != y.m0 {
            return f64::INFINITY;
        }
        if let (Some(m1), Some(n1), Some(m2), Some(n2)) = (x.m1, y.m1, x.m2, y.m2) {
            let scale = m2.max(1.0);
            w = w.max((m1 - n1).abs() / scale).max((m2 - n2).abs() / scale);
        }
    }
    w
}

/// One variant: its name, whether its results are wrong on purpose, its
/// tile (intervals a workgroup) and how it is made from the shipped
/// source.
type Variant = (&'static str, bool, u64, fn(&str) -> String);

const VARIANTS: [Variant; 10] = [
    ("shipped: 32 lanes x 32, one division", false, 1024, |s| {
        s.to_string()
    }),
    ("before: 128 lanes x 8, three divisions", false, 1024, |s| {
        three_divisions(&shape(s, 128, 8))
    }),
    (
        "32 lanes x 32, three divisions",
        false,
        1024,
        three_divisions,
    ),
    ("128 lanes x 8", false, 1024, |s| shape(s, 128, 8)),
    ("64 lanes x 16", false, 1024, |s| shape(s, 64, 16)),
    ("16 lanes x 64", false, 1024, |s| shape(s, 16, 64)),
    ("32 lanes x 64 (tile 2048)", false, 2048, |s| {
        shape(s, 32, 64)
    }),
    ("32 lanes x 128 (tile 4096)", false, 4096, |s| {
        shape(s, 32, 128)
    }),
    ("timing only: merges of additions", true, 1024, no_arith),
    (
        "timing only: tile's span searched twice",
        true,
        1024,
        locate_twice,
    ),
];

/// Times every variant on `g` and prints M intervals/s with the largest
/// difference from the shipped kernel's results. Each timing records the
/// dispatches `repeat` times back to back (about 50 ms of work) so that
/// the card runs at its working clocks rather than between idle gaps;
/// first the shipped kernel runs for about a second to bring the clocks
/// up, then three rounds over all variants (so that a drift in the clocks
/// falls on all alike), five timings each: the median and best per
/// variant, GPU timestamps over the repeats.
pub fn run(ctx: &GpuContext, g: &GpuTrace, mask: &[bool], span: u64, n: u64) {
    let reference = match g.moments(mask, 0, span) {
        Ok(r) => r.0,
        Err(e) => {
            eprintln!("variants: {e}");
            return;
        }
    };
    let (base, entry) = if ctx.features.contains(wgpu::Features::SUBGROUP) {
        (format!("{U64}{MOMENTS}{SUBGROUPS}"), "main_subgroups")
    } else {
        (format!("{U64}{MOMENTS}"), "main")
    };
    let sources: Vec<&'static str> = VARIANTS
        .iter()
        .map(|v| &*Box::leak(v.3(&base).into_boxed_str()))
        .collect();
    let repeat = (1u64 << 28).div_ceil(n.max(1)).clamp(2, 64) as u32;
    let warm = std::time::Instant::now();
    while warm.elapsed().as_secs_f64() < 1.0 {
        if g.moments_variant(sources[0], entry, 1024, repeat, mask, 0, span)
            .is_err()
        {
            break;
        }
    }
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); VARIANTS.len()];
    let mut diffs = vec![0f64; VARIANTS.len()];
    let mut failed: Vec<Option<String>> = vec![None; VARIANTS.len()];
    for _round in 0..3 {
        for (k, (v, src)) in VARIANTS.iter().zip(&sources).enumerate() {
            if failed[k].is_some() {
                continue;
            }
            for _ in 0..5 {
                match g.moments_variant(src, entry, v.2, repeat, mask, 0, span) {
                    Ok((m, t)) => {
                        if let Some(d) = t.kernel {
                            times[k].push(d.as_secs_f64() / repeat as f64);
                        }
                        diffs[k] = diffs[k].max(worst(&reference, &m));
                    }
                    Err(e) => {
                        failed[k] = Some(e.to_string());
                        break;
                    }
                }
            }
        }
    }
    println!(
        "moments kernel variants, P={} intervals={n}, {} dispatches back to back a timing, entry {entry}: \
         M intervals/s median / best of 15 GPU timestamps; largest difference from the shipped results",
        g.num_locations(),
        repeat
    );
    for (k, v) in VARIANTS.iter().enumerate() {
        if let Some(e) = &failed[k] {
            println!("  {:<42} failed: {e}", v.0);
            continue;
        }
        let t = &mut times[k];
        t.sort_by(f64::total_cmp);
        let (median, best) = if t.is_empty() {
            (f64::NAN, f64::NAN)
        } else {
            (t[t.len() / 2], t[0])
        };
        println!(
            "  {:<42} {:>9.1} / {:>9.1}  {}",
            v.0,
            n as f64 / 1e6 / median,
            n as f64 / 1e6 / best,
            if v.1 {
                "(timing only)".to_string()
            } else {
                format!("{:.1e}", diffs[k])
            }
        );
    }
}
