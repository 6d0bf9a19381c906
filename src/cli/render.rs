//! `tapestry render TRACE`: a view headless to PNG or JPEG (or a numbered
//! sequence of animation frames), or its scene to glTF 2.0 (`.glb`,
//! `.gltf`). Views, parameters and defaults come from the registry.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Args;
use tapestry::gpu::GpuContext;
use tapestry::render::Renderer;
use tapestry::scene::Camera;
use tapestry::views::{BuildCtx, Prepared};

use super::ReadArgs;
use super::parse::parse_size;
use super::viewspec::{ViewSpecArgs, load};

#[derive(Args)]
pub struct RenderArgs {
    /// The trace.
    pub trace: PathBuf,
    #[command(flatten)]
    pub spec: ViewSpecArgs,
    /// Image size WxH [1280x720, or the view-state file's].
    #[arg(long)]
    pub size: Option<String>,
    /// Output: .png, .jpg, .svg (2D charts), .glb or .gltf
    /// [TRACE-STEM-VIEW.png in the current directory]. With --frames, frames are NAME-0000.png, ...
    #[arg(short, long)]
    pub out: Option<PathBuf>,
    /// Render N frames of the animation from --start to its end (more
    /// when N frames would skip bins).
    #[arg(long)]
    pub frames: Option<usize>,
    /// Write the view state used (view, parameters, data, camera, size) to
    /// this JSON file; `--view-state` reproduces the image exactly.
    #[arg(long)]
    pub save_view_state: Option<PathBuf>,
    #[command(flatten)]
    pub read: ReadArgs,
}

/// What `-o` asks for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Format {
    Png,
    Jpeg,
    Glb,
    Gltf,
    Svg,
}

fn format_of(p: &Path) -> Result<Format> {
    let ext = p
        .extension()
        .and_then(|e| e.to_str())
        .map(|e| e.to_ascii_lowercase())
        .unwrap_or_default();
    Ok(match ext.as_str() {
        "png" => Format::Png,
        "jpg" | "jpeg" => Format::Jpeg,
        "glb" => Format::Glb,
        "gltf" => Format::Gltf,
        "svg" => Format::Svg,
        other => bail!(
            "{}: expected an output ending in .png, .jpg, .svg, .glb or .gltf, found '{}'",
            p.display(),
            if other.is_empty() {
                "no extension"
            } else {
                other
            }
        ),
    })
}

fn numbered(path: &Path, i: usize) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "frame".into());
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().into_owned())
        .unwrap_or_else(|| "png".into());
    path.with_file_name(format!("{stem}-{i:04}.{ext}"))
}

pub fn run(a: RenderArgs) -> Result<()> {
    if a.spec.list_params {
        a.spec.print_params();
        return Ok(());
    }
    // flags first, before any reading
    a.spec.validate()?;
    if let Some(s) = &a.size {
        parse_size(s)?;
    }
    if let Some(o) = &a.out {
        let f = format_of(o)?;
        if a.frames.is_some() && matches!(f, Format::Glb | Format::Gltf | Format::Svg) {
            bail!("--frames writes images; use .png or .jpg");
        }
    }
    if a.frames == Some(0) {
        bail!("--frames must be at least 1");
    }
    let input = load(&a.trace, &a.read)?;
    let (mut state, note) = a.spec.state(&input)?;
    if let Some(n) = note {
        eprintln!("note: {n}");
    }
    let (w, h) = match (&a.size, state.size) {
        (Some(s), _) => parse_size(s)?,
        (None, Some([w, h])) => (w, h),
        (None, None) => (1280, 720),
    };
    state.size = Some([w, h]);
    let out = a.out.clone().unwrap_or_else(|| {
        let stem = a
            .trace
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "trace".into());
        PathBuf::from(format!("{stem}-{}.png", state.view))
    });
    let format = format_of(&out)?;
    // outputs never overwrite an input: the trace, its siblings, tensors
    let mut inputs = tapestry::readers::input_files(&a.trace);
    inputs.extend(ViewSpecArgs::tensor_inputs(&state));
    if let Some(vs) = &a.spec.view_state {
        inputs.push(vs.clone());
    }
    let inputs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();

    let t_data = std::time::Instant::now();
    let prepared = Prepared::new(&input, &state)?;
    for w in &prepared.spec.warnings {
        eprintln!("warning: {w}");
    }
    let anim = prepared.animation()?;
    if state.step >= anim.steps {
        bail!(
            "--start {}: the animation has {} positions (0..{})",
            state.step,
            anim.steps,
            anim.steps.saturating_sub(1)
        );
    }
    let steps = match a.frames {
        None => vec![state.step],
        Some(n) => {
            let (p, note) = anim.positions(n, state.step);
            if let Some(note) = note {
                eprintln!("note: {note}");
            }
            p
        }
    };
    let ctx = |step| BuildCtx {
        step,
        width: w,
        height: h,
        triangle_budget: None,
    };
    let first = prepared.build(ctx(steps[0]))?;
    let t_data = t_data.elapsed().as_secs_f64();
    let camera = state.camera.unwrap_or_else(|| Camera::fit(&first, w, h));
    state.camera = Some(camera);
    if let Some(p) = &a.save_view_state {
        state.write(p, &inputs)?;
        eprintln!("wrote {}", p.display());
    }
    match format {
        Format::Glb | Format::Gltf => {
            let bytes = if format == Format::Glb {
                tapestry::export::gltf::glb(&first)?
            } else {
                tapestry::export::gltf::gltf(&first)?
            };
            tapestry::export::write_atomic(&out, &bytes, &inputs)?;
            eprintln!(
                "wrote {} ({} triangles, {} line segments): {}",
                out.display(),
                first.triangles(),
                first.lines.len(),
                first.title
            );
            return Ok(());
        }
        Format::Svg => {
            let chart = prepared.chart().ok_or_else(|| {
                anyhow::anyhow!(
                    "the {} view is not a 2D chart; SVG is written for signal, spectrum, correlation, histogram and markov (use .png)",
                    state.view
                )
            })??;
            let svg = tapestry::export::svg::chart_svg(&chart, w, h)?;
            tapestry::export::write_atomic(&out, svg.as_bytes(), &inputs)?;
            eprintln!("wrote {}: {}", out.display(), chart.title);
            return Ok(());
        }
        Format::Png | Format::Jpeg => {}
    }
    let gpu = GpuContext::new().context("rendering needs a GPU adapter")?;
    eprintln!("adapter: {}", gpu.describe());
    let renderer = Renderer::new(&gpu);
    let t_render = std::time::Instant::now();
    for (i, &step) in steps.iter().enumerate() {
        let scene = if i == 0 {
            first.clone()
        } else {
            prepared.build(ctx(step))?
        };
        let frame = renderer.render(&scene, &camera, w, h)?;
        let path = if a.frames.is_some() {
            numbered(&out, i)
        } else {
            out.clone()
        };
        let bytes = if format == Format::Jpeg {
            frame.jpeg()?
        } else {
            frame.png()?
        };
        tapestry::export::write_atomic(&path, &bytes, &inputs)?;
        eprintln!(
            "wrote {} ({} triangles): {}",
            path.display(),
            scene.triangles(),
            scene.title
        );
    }
    eprintln!(
        "{} frame(s): analyses and scene {:.2} s, rendering {:.2} s",
        steps.len(),
        t_data,
        t_render.elapsed().as_secs_f64()
    );
    Ok(())
}
