// Exclusive prefix sum of u32 counts, in place, in blocks of 1024 (256
// invocations × 4 values). `scan_blocks` scans each block and writes its
// total to `sums`; the host scans `sums` the same way (recursively) and
// `scan_add` adds each block's offset back. Integer sums: exact and
// deterministic whatever the adapter.

struct Params {
    n: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<storage, read_write> data: array<u32>;
@group(0) @binding(1) var<storage, read_write> sums: array<u32>;
@group(0) @binding(2) var<uniform> params: Params;

var<workgroup> partial: array<u32, 256>;

@compute @workgroup_size(256)
fn scan_blocks(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let block = wid.x + wid.y * groups.x;
    let base = block * 1024u + lid * 4u;
    var v = vec4<u32>(0u);
    for (var k = 0u; k < 4u; k++) {
        if (base + k < params.n) {
            v[k] = data[base + k];
        }
    }
    let total = v.x + v.y + v.z + v.w;
    partial[lid] = total;
    workgroupBarrier();
    // Hillis–Steele inclusive scan of the 256 thread totals
    for (var off = 1u; off < 256u; off = off * 2u) {
        var add = 0u;
        if (lid >= off) {
            add = partial[lid - off];
        }
        workgroupBarrier();
        partial[lid] = partial[lid] + add;
        workgroupBarrier();
    }
    var run = partial[lid] - total;
    for (var k = 0u; k < 4u; k++) {
        if (base + k < params.n) {
            data[base + k] = run;
        }
        run = run + v[k];
    }
    if (lid == 255u) {
        sums[block] = partial[255];
    }
}

@compute @workgroup_size(256)
fn scan_add(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let block = wid.x + wid.y * groups.x;
    let base = block * 1024u + lid * 4u;
    let add = sums[block];
    for (var k = 0u; k < 4u; k++) {
        if (base + k < params.n) {
            data[base + k] = data[base + k] + add;
        }
    }
}
