// needs u64.wgsl
// Time-binned busy time, one dispatch over the intervals of a range of
// locations of a resident chunk. Each invocation folds PER consecutive
// intervals in order: it selects them (state mask), clips them to the
// window, splits them over the bins they cross and sums the overlaps of
// one (location, bin) in a register, adding the sum to `busy` when the
// cell changes. Times and sums are unsigned 64-bit integers carried as
// (low, high) u32 pairs; the additions to `busy` are 32-bit atomics with
// the carry propagated, so the sums are exact and independent of the
// order. The host divides by the bin widths in f64, as the CPU does, so
// the fractions are identical.

struct Params {
    // the dispatch's intervals: [first, stop) of the chunk
    first: u32,
    stop: u32,
    // the chunk's locations (offsets has one more entry)
    locations: u32,
    bins: u32,
    // the dispatch's first location: cells are (l - loc0) * bins + k
    loc0: u32,
    // invocations per row of the 2D grid
    row: u32,
    // cells the binding starts before the dispatch's first location
    shift: u32,
    pad: u32,
}

@group(0) @binding(0) var<storage, read> starts: array<vec2<u32>>;
@group(0) @binding(1) var<storage, read> ends: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read> states: array<u32>;
@group(0) @binding(3) var<storage, read> offsets: array<u32>;
@group(0) @binding(4) var<storage, read> mask: array<u32>;
@group(0) @binding(5) var<storage, read> edges: array<vec2<u32>>;
@group(0) @binding(6) var<storage, read_write> busy: array<atomic<u32>>;
@group(0) @binding(7) var<uniform> params: Params;

const PER: u32 = 8u;
const NONE: u32 = 0xffffffffu;

fn vmax(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return select(a, b, lt(a, b));
}

fn vmin(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return select(a, b, lt(b, a));
}

// The location of interval `i`: the last `l` with offsets[l] <= i.
fn locate(i: u32) -> u32 {
    var lo = 0u;
    var hi = params.locations;
    loop {
        if (lo >= hi) {
            break;
        }
        let mid = (lo + hi + 1u) / 2u;
        if (offsets[mid] <= i) {
            lo = mid;
        } else {
            hi = mid - 1u;
        }
    }
    return lo;
}

// The bin of time `t` (edges[0] <= t < edges[bins]): the last k with
// edges[k] <= t.
fn bin_of(t: vec2<u32>) -> u32 {
    var lo = 0u;
    var hi = params.bins - 1u;
    loop {
        if (lo >= hi) {
            break;
        }
        let mid = (lo + hi + 1u) / 2u;
        if (lt(t, edges[mid])) {
            hi = mid - 1u;
        } else {
            lo = mid;
        }
    }
    return lo;
}

// Adds `v` to cell `c` exactly.
fn flush(c: u32, v: vec2<u32>) {
    if (c == NONE || (v.x == 0u && v.y == 0u)) {
        return;
    }
    let old = atomicAdd(&busy[2u * c], v.x);
    let carry = select(0u, 1u, old > 0xffffffffu - v.x);
    let hi = v.y + carry;
    if (hi != 0u) {
        atomicAdd(&busy[2u * c + 1u], hi);
    }
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let base = params.first + (gid.x + gid.y * params.row) * PER;
    if (base >= params.stop) {
        return;
    }
    let stop = min(base + PER, params.stop);
    let t0 = edges[0];
    let t1 = edges[params.bins];
    var l = locate(base);
    var next = offsets[l + 1u];
    var cell = NONE;
    var sum = vec2<u32>(0u, 0u);
    for (var i = base; i < stop; i = i + 1u) {
        if (i >= next) {
            loop {
                l = l + 1u;
                next = offsets[l + 1u];
                if (next > i) {
                    break;
                }
            }
        }
        if (mask[states[i]] == 0u) {
            continue;
        }
        let a = vmax(starts[i], t0);
        let b = vmin(ends[i], t1);
        if (!lt(a, b)) {
            continue;
        }
        var k = bin_of(a);
        let row = (l - params.loc0) * params.bins + params.shift;
        loop {
            if (k >= params.bins || !lt(edges[k], b)) {
                break;
            }
            let ov = sub(vmin(b, edges[k + 1u]), vmax(a, edges[k]));
            let c = row + k;
            if (c != cell) {
                flush(cell, sum);
                cell = c;
                sum = vec2<u32>(0u, 0u);
            }
            sum = add(sum, ov);
            k = k + 1u;
        }
    }
    flush(cell, sum);
}
