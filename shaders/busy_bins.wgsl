// Time-binned busy time: one invocation per (location, bin). Times are
// unsigned 64-bit integers carried as (low, high) u32 pairs, so the
// overlaps are summed exactly; the host divides by the bin width in f64,
// as the CPU does, so the fractions are identical.

struct Params {
    locations: u32,
    bins: u32,
    row: u32,
    pad: u32,
}

@group(0) @binding(0) var<storage, read> starts: array<vec2<u32>>;
@group(0) @binding(1) var<storage, read> ends: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read> states: array<u32>;
@group(0) @binding(3) var<storage, read> offsets: array<u32>;
@group(0) @binding(4) var<storage, read> mask: array<u32>;
@group(0) @binding(5) var<storage, read> edges: array<vec2<u32>>;
@group(0) @binding(6) var<storage, read_write> busy: array<vec2<u32>>;
@group(0) @binding(7) var<uniform> params: Params;

fn lt(a: vec2<u32>, b: vec2<u32>) -> bool {
    return a.y < b.y || (a.y == b.y && a.x < b.x);
}

fn sub(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let borrow = select(0u, 1u, a.x < b.x);
    return vec2<u32>(a.x - b.x, a.y - b.y - borrow);
}

fn add(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.x + b.x;
    let carry = select(0u, 1u, lo < a.x);
    return vec2<u32>(lo, a.y + b.y + carry);
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let idx = gid.x + gid.y * params.row;
    if (idx >= params.locations * params.bins) {
        return;
    }
    let l = idx / params.bins;
    let k = idx % params.bins;
    let e0 = edges[k];
    let e1 = edges[k + 1u];
    // first interval of the location that ends after the bin starts
    var lo = offsets[l];
    var hi = offsets[l + 1u];
    let last = hi;
    loop {
        if (lo >= hi) {
            break;
        }
        let mid = (lo + hi) / 2u;
        if (lt(e0, ends[mid])) {
            hi = mid;
        } else {
            lo = mid + 1u;
        }
    }
    var sum = vec2<u32>(0u, 0u);
    var i = lo;
    loop {
        if (i >= last) {
            break;
        }
        let a = starts[i];
        if (!lt(a, e1)) {
            break;
        }
        if (mask[states[i]] != 0u) {
            var s = a;
            if (lt(s, e0)) {
                s = e0;
            }
            var e = ends[i];
            if (lt(e1, e)) {
                e = e1;
            }
            if (lt(s, e)) {
                sum = add(sum, sub(e, s));
            }
        }
        i = i + 1u;
    }
    busy[idx] = sum;
}
