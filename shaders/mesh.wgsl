// needs globals.wgsl
// Lit (or flat) triangle meshes with per-vertex colour and transparency.
// Lit by `lambert` (globals.wgsl) unless the mesh is flat.

struct VertexIn {
    @location(0) position: vec3<f32>,
    @location(1) normal: vec3<f32>,
    @location(2) color: vec4<f32>,
}

struct VertexOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) normal: vec3<f32>,
    @location(1) color: vec4<f32>,
}

@vertex
fn vs_main(v: VertexIn) -> VertexOut {
    var out: VertexOut;
    out.clip = globals.view_proj * vec4<f32>(v.position, 1.0);
    out.normal = v.normal;
    out.color = srgb_to_linear(v.color);
    return out;
}

@fragment
fn fs_main(in: VertexOut) -> @location(0) vec4<f32> {
    if (globals.params.x < 0.5) {
        return in.color;
    }
    return lambert(in.normal, in.color);
}

// Transparent meshes: accumulated for the order-independent composite
// (oit.wgsl): colour × alpha and alpha added up, revealage multiplied.
struct OitOut {
    @location(0) accum: vec4<f32>,
    @location(1) reveal: vec4<f32>,
}

@fragment
fn fs_oit(in: VertexOut) -> OitOut {
    var c = in.color;
    if (globals.params.x >= 0.5) {
        c = lambert(in.normal, in.color);
    }
    var out: OitOut;
    out.accum = vec4<f32>(c.rgb * c.a, c.a);
    out.reveal = vec4<f32>(c.a, 0.0, 0.0, 0.0);
    return out;
}
