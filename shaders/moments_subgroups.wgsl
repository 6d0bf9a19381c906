// needs u64.wgsl, moments.wgsl
// The moments kernel with the first levels of each tile's tree in
// subgroups (needs SUBGROUP and SHADER_F64): lanes exchange their nodes by
// shuffles, without workgroup memory or barriers, up to the subgroup's
// width (32 lanes on NVIDIA, 8 on lavapipe); the workgroup's tree then
// goes on from there over one node per subgroup.
//
// The pairs combined are the workgroup tree's (`tree` in moments.wgsl):
// lane i takes lane i + stride where i is a multiple of 2·stride, so the
// results are those of `main`, bit for bit. That needs each subgroup to be
// a run of consecutive invocations, in order, which Vulkan does not
// promise: a workgroup with a subgroup laid out otherwise combines its
// lanes' own nodes with the workgroup's tree alone.

// 1 when a subgroup of this workgroup is not a run of consecutive lanes
// (workgroup memory starts at zero in every workgroup).
var<workgroup> scattered: atomic<u32>;
// Where the workgroup's tree starts: the subgroups' width, or 1.
var<workgroup> from_stride: u32;

fn shuffle_acc(a: Acc, d: u32) -> Acc {
    return Acc(
        subgroupShuffleDown(a.w, d),
        subgroupShuffleDown(a.mean, d),
        subgroupShuffleDown(a.m2, d),
        subgroupShuffleDown(a.m3, d),
    );
}

fn shuffle_node(n: Node, d: u32) -> Node {
    return Node(
        subgroupShuffleDown(n.first, d),
        subgroupShuffleDown(n.last, d),
        shuffle_acc(n.fa, d),
        shuffle_acc(n.la, d),
    );
}

@compute @workgroup_size(32)
fn main_subgroups(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(subgroup_invocation_id) sid: u32,
    @builtin(subgroup_size) width: u32,
) {
    let tile = wid.x + wid.y * groups.x;
    let own = fold_lane(tile, lid.x);
    // a power of two that divides the workgroup, lanes in order
    let in_order = subgroupAll(lid.x == subgroupBroadcastFirst(lid.x) + sid)
        && (width & (width - 1u)) == 0u && width <= LANES;
    var node = own;
    if (in_order) {
        for (var stride = 1u; stride < width; stride = stride * 2u) {
            let other = shuffle_node(node, stride);
            if (sid % (2u * stride) == 0u) {
                node = combine(node, other);
            }
        }
    }
    workgroupBarrier();
    if (!in_order) {
        atomicStore(&scattered, 1u);
    }
    workgroupBarrier();
    let whole = atomicLoad(&scattered) == 0u;
    if (whole) {
        nodes[lid.x] = node;
    } else {
        nodes[lid.x] = own;
    }
    if (lid.x == 0u) {
        from_stride = select(1u, width, whole);
    }
    tree(tile, lid.x, workgroupUniformLoad(&from_stride));
}
