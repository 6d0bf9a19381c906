// Moments of utilization: one workgroup reduces one segment of at most 256
// intervals (entry point `main`) or 32 intervals (`main_small`, for
// locations with few intervals, so that lanes are not left idle) of one
// location (positions relative to the segment's origin,
// scaled on the host so that f32 keeps its precision) into the mergeable
// accumulator (w, mean, m2, m3) with the parallel-axis (Pébay) formulas.
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

@group(0) @binding(0) var<storage, read> intervals: array<vec2<f32>>;
@group(0) @binding(1) var<storage, read> segments: array<Segment>;
@group(0) @binding(2) var<storage, read_write> partials: array<vec4<f32>>;
@group(0) @binding(3) var<uniform> params: Params;

const WG: u32 = 256u;
var<workgroup> acc: array<vec4<f32>, 256>;

fn merge(a: vec4<f32>, b: vec4<f32>) -> vec4<f32> {
    if (b.x == 0.0) {
        return a;
    }
    if (a.x == 0.0) {
        return b;
    }
    let w = a.x + b.x;
    let d = b.y - a.y;
    let mean = a.y + d * b.x / w;
    let m2 = a.z + b.z + d * d * a.x * b.x / w;
    let m3 = a.w + b.w + d * d * d * a.x * b.x * (a.x - b.x) / (w * w) + 3.0 * d * (a.x * b.z - b.x * a.z) / w;
    return vec4<f32>(w, mean, m2, m3);
}

// Loads interval `i` of segment `s` as a single-interval accumulator.
fn load(s: u32, i: u32) -> vec4<f32> {
    var v = vec4<f32>(0.0, 0.0, 0.0, 0.0);
    if (s < params.segments) {
        let seg = segments[s];
        if (i < seg.count) {
            let ab = intervals[seg.first + i];
            let l = ab.y - ab.x;
            v = vec4<f32>(l, ab.x + 0.5 * l, l * l * l / 12.0, 0.0);
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
