// Moments of utilization in f64 (needs SHADER_F64): one workgroup reduces
// one segment of at most 256 intervals (entry point `main`) or 32 intervals
// (`main_small`, for locations with few intervals, so that lanes are not
// left idle) of one location into the mergeable accumulator
// (w, mean, m2, m3) with the parallel-axis (Pébay) formulas — the same
// formulas, in the same precision, as `analysis::moments::MomentAcc`.
// Positions are integer nanoseconds relative to the segment's first start,
// carried as (low, high) u32 pairs and converted exactly (below 2^53).
// The host merges the segments of a location in f64.

struct Segment {
    first: u32,
    count: u32,
}

struct Params {
    segments: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

struct Acc {
    w: f64,
    mean: f64,
    m2: f64,
    m3: f64,
}

@group(0) @binding(0) var<storage, read> intervals: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> segments: array<Segment>;
@group(0) @binding(2) var<storage, read_write> partials: array<Acc>;
@group(0) @binding(3) var<uniform> params: Params;

const WG: u32 = 256u;
var<workgroup> acc: array<Acc, 256>;

fn zero() -> Acc {
    return Acc(f64(0.0), f64(0.0), f64(0.0), f64(0.0));
}

fn merge(a: Acc, b: Acc) -> Acc {
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

fn to_f64(lo: u32, hi: u32) -> f64 {
    return f64(hi) * f64(4294967296.0) + f64(lo);
}

// Loads interval `i` of segment `s` as a single-interval accumulator.
fn load(s: u32, i: u32) -> Acc {
    var v = zero();
    if (s < params.segments) {
        let seg = segments[s];
        if (i < seg.count) {
            let ab = intervals[seg.first + i];
            let a = to_f64(ab.x, ab.y);
            let l = to_f64(ab.z, ab.w);
            v = Acc(l, a + l / f64(2.0), l * l * l / f64(12.0), f64(0.0));
        }
    }
    return v;
}

// Reduces segment `s` in a workgroup of `width` lanes (a power of two):
// lane `i` loads interval `i`, then a tree of merges; lane 0 writes.
fn reduce(s: u32, i: u32, width: u32) {
    acc[i] = load(s, i);
    workgroupBarrier();
    var stride = width / 2u;
    loop {
        if (stride == 0u) {
            break;
        }
        if (i < stride) {
            acc[i] = merge(acc[i], acc[i + stride]);
        }
        workgroupBarrier();
        stride = stride / 2u;
    }
    if (i == 0u && s < params.segments) {
        partials[s] = acc[0];
    }
}

@compute @workgroup_size(32)
fn main_small(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    reduce(wid.x + wid.y * groups.x, lid.x, 32u);
}

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    reduce(wid.x + wid.y * groups.x, lid.x, WG);
}
