//! glTF 2.0 export of a scene, for ParaView and Blender: binary `.glb` or
//! `.gltf` with the buffer embedded as a data URI.
//!
//! Every mesh becomes an indexed triangle primitive with `POSITION`,
//! `NORMAL` and `COLOR_0` (linear light, as glTF requires; the scene's
//! colours are sRGB); glyph instances are expanded into one mesh per glyph
//! set (ParaView does not read `EXT_mesh_gpu_instancing`); line segments
//! become a `LINES` primitive. The root node is named by the scene's title,
//! its children by what they are and by the scene's axes (units); the
//! labels, legend and key travel in `extras`.

use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::scene::{Scene, glyph_mesh, srgb_to_linear};

/// Binary buffer being assembled, with its accessors and views.
#[derive(Default)]
struct Builder {
    bin: Vec<u8>,
    views: Vec<Value>,
    accessors: Vec<Value>,
}

impl Builder {
    fn view(&mut self, bytes: &[u8], target: Option<u32>) -> usize {
        while !self.bin.len().is_multiple_of(4) {
            self.bin.push(0);
        }
        let offset = self.bin.len();
        self.bin.extend_from_slice(bytes);
        let mut v = json!({"buffer": 0, "byteOffset": offset, "byteLength": bytes.len()});
        if let Some(t) = target {
            v["target"] = json!(t);
        }
        self.views.push(v);
        self.views.len() - 1
    }

    /// A float accessor of `n`-component vectors.
    fn floats(&mut self, data: &[f32], n: usize, bounds: bool) -> usize {
        let view = self.view(bytemuck::cast_slice(data), Some(34962));
        let count = data.len() / n;
        let ty = match n {
            2 => "VEC2",
            3 => "VEC3",
            4 => "VEC4",
            _ => "SCALAR",
        };
        let mut a = json!({"bufferView": view, "componentType": 5126, "count": count, "type": ty});
        if bounds && count > 0 {
            let mut lo = vec![f32::INFINITY; n];
            let mut hi = vec![f32::NEG_INFINITY; n];
            for v in data.chunks_exact(n) {
                for c in 0..n {
                    lo[c] = lo[c].min(v[c]);
                    hi[c] = hi[c].max(v[c]);
                }
            }
            a["min"] = json!(lo);
            a["max"] = json!(hi);
        }
        self.accessors.push(a);
        self.accessors.len() - 1
    }

    fn indices(&mut self, idx: &[u32]) -> usize {
        let view = self.view(bytemuck::cast_slice(idx), Some(34963));
        self.accessors.push(
            json!({"bufferView": view, "componentType": 5125, "count": idx.len(), "type": "SCALAR"}),
        );
        self.accessors.len() - 1
    }
}

fn linear(c: [f32; 4]) -> [f32; 4] {
    [
        srgb_to_linear(c[0]),
        srgb_to_linear(c[1]),
        srgb_to_linear(c[2]),
        c[3],
    ]
}

/// Geometry of one primitive before it is written.
#[derive(Default)]
struct Geometry {
    positions: Vec<f32>,
    normals: Vec<f32>,
    colors: Vec<f32>,
    indices: Vec<u32>,
}

/// The glTF document (JSON) and its binary buffer.
fn document(scene: &Scene) -> Result<(Value, Vec<u8>)> {
    if !scene.resident.is_empty() {
        return Err(Error::Invalid(
            "this scene's mesh was made on the GPU and stays there; export glTF from the CPU path (without --gpu)".into(),
        ));
    }
    let mut b = Builder::default();
    let mut meshes = Vec::new();
    let mut nodes = vec![Value::Null];
    let mut children = Vec::new();
    let mut add = |b: &mut Builder, name: String, g: Geometry, mode: u32| {
        if g.positions.is_empty() {
            return;
        }
        let pos = b.floats(&g.positions, 3, true);
        let col = b.floats(&g.colors, 4, false);
        let mut attrs = json!({"POSITION": pos, "COLOR_0": col});
        if !g.normals.is_empty() {
            attrs["NORMAL"] = json!(b.floats(&g.normals, 3, false));
        }
        let mut prim = json!({"attributes": attrs, "mode": mode, "material": 0});
        if !g.indices.is_empty() {
            prim["indices"] = json!(b.indices(&g.indices));
        }
        meshes.push(json!({"name": name, "primitives": [prim]}));
        nodes.push(json!({"name": name, "mesh": meshes.len() - 1}));
        children.push(nodes.len() - 1);
    };
    for (i, m) in scene.meshes.iter().enumerate() {
        if m.indices.is_empty() {
            continue;
        }
        let mut g = Geometry::default();
        for v in &m.vertices {
            g.positions.extend_from_slice(&v.position);
            g.normals.extend_from_slice(&v.normal);
            g.colors.extend_from_slice(&linear(v.color));
        }
        g.indices = m.indices.clone();
        add(&mut b, format!("mesh {i}"), g, 4);
    }
    for (i, gl) in scene.glyphs.iter().enumerate() {
        if gl.instances.is_empty() {
            continue;
        }
        let (bp, bn, bi) = glyph_mesh(gl.shape);
        let total = bp.len() * gl.instances.len();
        if total > u32::MAX as usize / 2 {
            return Err(Error::Invalid(format!(
                "{} glyphs are too many to expand into one glTF mesh",
                gl.instances.len()
            )));
        }
        let mut g = Geometry::default();
        for inst in &gl.instances {
            let base = (g.positions.len() / 3) as u32;
            let lc = linear(inst.color);
            for (p, n) in bp.iter().zip(&bn) {
                for ((o, q), k) in inst.position.iter().zip(p).zip(inst.scale) {
                    g.positions.push(o + q * k);
                }
                let s = inst.scale.map(|x| x.abs().max(1e-6));
                let nn = [n[0] / s[0], n[1] / s[1], n[2] / s[2]];
                let l = (nn[0] * nn[0] + nn[1] * nn[1] + nn[2] * nn[2])
                    .sqrt()
                    .max(1e-12);
                g.normals
                    .extend_from_slice(&[nn[0] / l, nn[1] / l, nn[2] / l]);
                g.colors.extend_from_slice(&lc);
            }
            g.indices.extend(bi.iter().map(|k| base + k));
        }
        add(&mut b, format!("glyphs {i} ({:?})", gl.shape), g, 4);
    }
    if !scene.lines.is_empty() {
        let mut g = Geometry::default();
        for s in &scene.lines {
            for p in [s.a, s.b] {
                g.positions.extend_from_slice(&p);
                g.colors.extend_from_slice(&linear(s.color));
            }
        }
        add(&mut b, "lines (axes, outlines)".into(), g, 1);
    }
    // the axes, their meaning and units, as named nodes
    for axis in scene.axes.split("; ").filter(|a| !a.is_empty()) {
        nodes.push(json!({ "name": axis }));
        children.push(nodes.len() - 1);
    }
    nodes[0] = json!({
        "name": scene.title,
        "children": children,
        "extras": {
            "axes": scene.axes,
            "labels": scene.labels,
            "legend": scene.legend,
            "key": scene.key,
        }
    });
    let doc = json!({
        "asset": {"version": "2.0", "generator": concat!("tapestry ", env!("CARGO_PKG_VERSION"))},
        "scene": 0,
        "scenes": [{"name": scene.title, "nodes": [0]}],
        "nodes": nodes,
        "meshes": meshes,
        "materials": [{
            "name": "vertex colours",
            "pbrMetallicRoughness": {"baseColorFactor": [1.0, 1.0, 1.0, 1.0], "metallicFactor": 0.0, "roughnessFactor": 0.9},
            "doubleSided": true
        }],
        "accessors": b.accessors,
        "bufferViews": b.views,
        "buffers": [{"byteLength": b.bin.len()}],
    });
    Ok((doc, b.bin))
}

/// The scene as a binary glTF (`.glb`).
pub fn glb(scene: &Scene) -> Result<Vec<u8>> {
    let (doc, mut bin) = document(scene)?;
    let mut json = serde_json::to_vec(&doc).map_err(|e| Error::Invalid(e.to_string()))?;
    while !json.len().is_multiple_of(4) {
        json.push(b' ');
    }
    while !bin.len().is_multiple_of(4) {
        bin.push(0);
    }
    let total = 12 + 8 + json.len() + 8 + bin.len();
    let total = u32::try_from(total)
        .map_err(|_| Error::Invalid(format!("a glTF of {total} bytes exceeds 4 GiB")))?;
    let mut out = Vec::with_capacity(total as usize);
    out.extend_from_slice(b"glTF");
    out.extend_from_slice(&2u32.to_le_bytes());
    out.extend_from_slice(&total.to_le_bytes());
    out.extend_from_slice(&(json.len() as u32).to_le_bytes());
    out.extend_from_slice(b"JSON");
    out.extend_from_slice(&json);
    out.extend_from_slice(&(bin.len() as u32).to_le_bytes());
    out.extend_from_slice(b"BIN\0");
    out.extend_from_slice(&bin);
    Ok(out)
}

/// The scene as a `.gltf` (JSON) with its buffer embedded as a data URI.
pub fn gltf(scene: &Scene) -> Result<Vec<u8>> {
    let (mut doc, bin) = document(scene)?;
    doc["buffers"][0]["uri"] = json!(format!(
        "data:application/octet-stream;base64,{}",
        base64(&bin)
    ));
    serde_json::to_vec_pretty(&doc).map_err(|e| Error::Invalid(e.to_string()))
}

fn base64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::with_capacity(data.len().div_ceil(3) * 4);
    for c in data.chunks(3) {
        let n = (c[0] as u32) << 16
            | (*c.get(1).unwrap_or(&0) as u32) << 8
            | *c.get(2).unwrap_or(&0) as u32;
        for k in 0..4 {
            if k <= c.len() {
                s.push(A[(n >> (18 - 6 * k) & 63) as usize] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_rfc() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }
}
