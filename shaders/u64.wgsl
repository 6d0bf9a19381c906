// 64-bit unsigned integers as (low, high) u32 pairs, for the kernels that
// read the model's u64 times and sum exact nanoseconds (busy_bins.wgsl,
// gantt.wgsl, moments.wgsl, moment_rows.wgsl put this file in front of
// their own, as the naga test does for every shader whose first line
// names it after "// needs ").

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
