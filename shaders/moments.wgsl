// needs u64.wgsl
// Moments of utilization in f64 (needs SHADER_F64), one dispatch over all
// intervals of a resident chunk: a segmented reduction by location.
//
// A workgroup takes a tile of TILE consecutive intervals (any number of
// locations); each of its LANES lanes folds PER consecutive intervals in
// order, then the lanes' results are combined in a tree (32 lanes of 32:
// on an H200, 1.5x the throughput of 128 lanes of 8; a tile's tree and
// the search for its first and last locations weigh less per interval). A partial result
// ("node") keeps its first and last location's accumulators; a location
// that becomes interior to a node (other locations on both sides) has all
// of its intervals in the tile, so it is complete: it is written to
// `done[location]` at once (it lies in one chunk). The tile's node goes to `tiles[tile]`, and the
// host merges the nodes of consecutive tiles in order (a location can span
// many tiles). Results are read back once, after all chunks.
//
// The accumulator is (w, mean, m2, m3) with the parallel-axis (Pébay)
// formulas, in f64: the formulas and precision of the CPU's `MomentAcc`.
// Positions are relative to the location's first start (in the whole
// trace: a location may span chunks), subtracted as
// 64-bit integers carried in (low, high) u32 pairs and converted exactly
// (below 2^53 ns).

struct Params {
    intervals: u32,
    locations: u32,
    t0: vec2<u32>,
    t1: vec2<u32>,
    pad0: u32,
    pad1: u32,
}

struct Acc {
    w: f64,
    mean: f64,
    m2: f64,
    m3: f64,
}

// `first == NONE`: empty; `first == last`: one location, in `fa`.
struct Node {
    first: u32,
    last: u32,
    fa: Acc,
    la: Acc,
}

@group(0) @binding(0) var<storage, read> starts: array<vec2<u32>>;
@group(0) @binding(1) var<storage, read> ends: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read> states: array<u32>;
@group(0) @binding(3) var<storage, read> offsets: array<u32>;
@group(0) @binding(4) var<storage, read> origins: array<vec2<u32>>;
@group(0) @binding(5) var<storage, read> mask: array<u32>;
@group(0) @binding(6) var<storage, read_write> done: array<Acc>;
@group(0) @binding(7) var<storage, read_write> tiles: array<Node>;
@group(0) @binding(8) var<uniform> params: Params;

const LANES: u32 = 32u;
const PER: u32 = 32u;
const TILE: u32 = 1024u;
const NONE: u32 = 0xffffffffu;

var<workgroup> nodes: array<Node, 32>;
// The locations of the tile's first and last intervals.
var<workgroup> span: array<u32, 2>;

fn zero() -> Acc {
    return Acc(f64(0.0), f64(0.0), f64(0.0), f64(0.0));
}

fn empty() -> Node {
    return Node(NONE, NONE, zero(), zero());
}

fn merge(a: Acc, b: Acc) -> Acc {
    if (b.w == f64(0.0)) {
        return a;
    }
    if (a.w == f64(0.0)) {
        return b;
    }
    let w = a.w + b.w;
    // the CPU's formulas, with one division (by w, then multiplied): the
    // other roundings stay within the stated bound, and the kernel was up
    // to 12 % faster on an H200 than with the CPU's three
    let r = f64(1.0) / w;
    let d = b.mean - a.mean;
    let dr = d * r;
    let mean = a.mean + dr * b.w;
    let m2 = a.m2 + b.m2 + d * dr * a.w * b.w;
    let m3 = a.m3 + b.m3 + d * dr * dr * a.w * b.w * (a.w - b.w)
        + f64(3.0) * dr * (a.w * b.m2 - b.w * a.m2);
    return Acc(w, mean, m2, m3);
}

// A complete location.
fn finish(l: u32, a: Acc) {
    done[l] = a;
}

// `l` then `r` (in interval order).
fn combine(l: Node, r: Node) -> Node {
    if (l.first == NONE) {
        return r;
    }
    if (r.first == NONE) {
        return l;
    }
    let ls = l.first == l.last;
    let rs = r.first == r.last;
    if (l.last == r.first) {
        var tail = l.la;
        if (ls) {
            tail = l.fa;
        }
        let mid = merge(tail, r.fa);
        if (ls && rs) {
            return Node(l.first, l.first, mid, zero());
        }
        if (ls) {
            return Node(l.first, r.last, mid, r.la);
        }
        if (rs) {
            return Node(l.first, l.last, l.fa, mid);
        }
        finish(l.last, mid);
        return Node(l.first, r.last, l.fa, r.la);
    }
    if (!ls) {
        finish(l.last, l.la);
    }
    if (!rs) {
        finish(r.first, r.fa);
        return Node(l.first, r.last, l.fa, r.la);
    }
    return Node(l.first, r.first, l.fa, r.fa);
}

fn to_f64(v: vec2<u32>) -> f64 {
    return f64(v.y) * f64(4294967296.0) + f64(v.x);
}

// The location of interval `i`, known to lie in `low..=high`: the last
// `l` of them with offsets[l] <= i.
fn locate(i: u32, low: u32, high: u32) -> u32 {
    var lo = low;
    var hi = high;
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

// The accumulator of interval `i`, relative to `origin`, if selected.
fn load(i: u32, origin: vec2<u32>) -> Acc {
    if (mask[states[i]] == 0u) {
        return zero();
    }
    var a = starts[i];
    if (lt(a, params.t0)) {
        a = params.t0;
    }
    var b = ends[i];
    if (lt(params.t1, b)) {
        b = params.t1;
    }
    if (!lt(a, b)) {
        return zero();
    }
    let s = to_f64(sub(a, origin));
    let len = to_f64(sub(b, a));
    return Acc(len, s + len / f64(2.0), len * len * len / f64(12.0), f64(0.0));
}

// The node of lane `lane`'s PER intervals of tile `tile`, folded in order.
// Lanes 0 and 1 find the locations of the tile's first and last
// intervals over all locations (log2(locations) steps, side by side);
// every lane then searches only between them (a few steps where the tile
// holds few locations) instead of over all locations.
fn fold_lane(tile: u32, lane: u32) -> Node {
    let first = tile * TILE;
    if (lane < 2u && first < params.intervals) {
        let last = min(first + TILE, params.intervals) - 1u;
        span[lane] = locate(select(first, last, lane == 1u), 0u, params.locations);
    }
    let within = workgroupUniformLoad(&span);
    let base = first + lane * PER;
    var node = empty();
    if (base < params.intervals) {
        var l = locate(base, within[0], within[1]);
        var next = offsets[l + 1u];
        var origin = origins[l];
        let stop = min(base + PER, params.intervals);
        // the current location's run in a plain accumulator; a node only
        // where the location changes
        var run = zero();
        for (var i = base; i < stop; i = i + 1u) {
            if (i >= next) {
                node = combine(node, Node(l, l, run, zero()));
                run = zero();
                // the next location with intervals starts here
                loop {
                    l = l + 1u;
                    next = offsets[l + 1u];
                    if (next > i) {
                        break;
                    }
                }
                origin = origins[l];
            }
            run = merge(run, load(i, origin));
        }
        node = combine(node, Node(l, l, run, zero()));
    }
    return node;
}

// The tile's lanes' nodes, from `nodes`, combined in a tree from `stride`
// on (lane i takes lane i + stride where i is a multiple of 2·stride: the
// nodes at multiples of `stride` already hold their runs of lanes); lane 0
// writes the tile's node.
fn tree(tile: u32, lane: u32, from_stride: u32) {
    workgroupBarrier();
    for (var stride = from_stride; stride < LANES; stride = stride * 2u) {
        if (lane % (2u * stride) == 0u) {
            nodes[lane] = combine(nodes[lane], nodes[lane + stride]);
        }
        workgroupBarrier();
    }
    if (lane == 0u && tile * TILE < params.intervals) {
        tiles[tile] = nodes[0];
    }
}

@compute @workgroup_size(32)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    let tile = wid.x + wid.y * groups.x;
    nodes[lid.x] = fold_lane(tile, lid.x);
    tree(tile, lid.x, 1u);
}
