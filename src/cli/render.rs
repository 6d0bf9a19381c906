//! `tapestry render TRACE --view kiviat|moments`: scenes rendered headless
//! to PNG (and numbered PNG sequences of the sliding Kiviat window).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, ValueEnum};
use tapestry::analysis::{fields, moments};
use tapestry::gpu::GpuContext;
use tapestry::readers::{self, Loaded};
use tapestry::render::{Camera, Renderer};
use tapestry::scene::{kiviat, moments as moment_scene};

use super::ReadArgs;
use super::parse::{FieldQuery, field, parse_size, parse_window, read_view_state};

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum, Debug)]
pub enum View {
    /// Kiviat tube of a ring field (paper 003).
    Kiviat,
    /// Moment display with the utilization Gantt chart (paper 000).
    Moments,
}

#[derive(Args)]
pub struct RenderArgs {
    /// The trace.
    pub trace: PathBuf,
    /// The view.
    #[arg(long, value_enum)]
    pub view: View,
    /// Image size WxH.
    #[arg(long, default_value = "1280x720")]
    pub size: String,
    /// Output PNG (with --frames: frames are numbered NAME-0000.png, ...).
    #[arg(short, long)]
    pub out: PathBuf,
    /// Write N frames of the Kiviat window sliding along the tube.
    #[arg(long)]
    pub frames: Option<usize>,
    /// States of the busy field and of the moments.
    #[arg(long, value_delimiter = ',', default_value = "busy")]
    pub states: Vec<String>,
    /// Time window T0:T1 (ns or with a unit).
    #[arg(long)]
    pub window: Option<String>,
    /// Kiviat: time bins of the field.
    #[arg(long, default_value_t = 100)]
    pub bins: usize,
    /// Kiviat: the radius field: busy, messages, bytes, counter:NAME, or tensor:PATH.npy.
    #[arg(long, default_value = "busy")]
    pub quantity: String,
    /// Kiviat: colour by this field instead of the radius (same choices).
    #[arg(long)]
    pub color_by: Option<String>,
    /// Kiviat: access kinds of a tensor field.
    #[arg(long, default_value = "all")]
    pub kinds: String,
    /// Kiviat: the animation width in bins (0: the whole tube).
    #[arg(long, default_value_t = 15)]
    pub width: usize,
    /// Kiviat: first bin shown (after the trimmed leading empty bins).
    #[arg(long, default_value_t = 0)]
    pub start: usize,
    /// Kiviat: length of a bin along the axis (stretch or compress time).
    #[arg(long, default_value_t = 0.15)]
    pub stretch: f32,
    /// Kiviat: logarithmic radii.
    #[arg(long)]
    pub log: bool,
    /// Kiviat: keep leading empty bins.
    #[arg(long)]
    pub keep_empty: bool,
    /// Moments: the 3D variant (processors in depth).
    #[arg(long)]
    pub moments_3d: bool,
    /// Moments: time bins of the Gantt chart.
    #[arg(long, default_value_t = 200)]
    pub gantt_bins: usize,
    /// Colour map (viridis, magma, coolwarm, heat, categorical).
    #[arg(long)]
    pub colormap: Option<String>,
    /// Camera and view parameters from a view-state JSON file (as the
    /// window writes with F5, or --save-view-state).
    #[arg(long)]
    pub view_state: Option<PathBuf>,
    /// Camera position x,y,z.
    #[arg(long)]
    pub eye: Option<String>,
    /// Camera target x,y,z.
    #[arg(long)]
    pub target: Option<String>,
    /// Write the camera and view parameters used to this view-state JSON file.
    #[arg(long)]
    pub save_view_state: Option<PathBuf>,
    #[command(flatten)]
    pub read: ReadArgs,
}

fn vec3(s: &str, what: &str) -> Result<[f32; 3]> {
    let v: Vec<f32> = s
        .split(',')
        .map(|x| x.trim().parse::<f32>())
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| anyhow!("expected {what} as x,y,z, found '{s}'"))?;
    match v[..] {
        [x, y, z] if v.iter().all(|c| c.is_finite()) => Ok([x, y, z]),
        _ => bail!("expected {what} as three finite numbers x,y,z, found '{s}'"),
    }
}

fn numbered(path: &Path, i: usize) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "frame".into());
    path.with_file_name(format!("{stem}-{i:04}.png"))
}

pub fn run(a: RenderArgs) -> Result<()> {
    let (w, h) = parse_size(&a.size)?;
    let t = match readers::load(&a.trace, &a.read.options())? {
        Loaded::Trace(t) => t,
        Loaded::Profile(_) => bail!(
            "{} is a profile; the Kiviat and moment views need a trace",
            a.trace.display()
        ),
    };
    let (t0, t1) = parse_window(a.window.as_deref(), t.meta.span)?;
    let loaded = a.view_state.as_deref().map(read_view_state).transpose()?;
    let mut a = a;
    if let Some(vs) = &loaded {
        a.colormap = a.colormap.or(Some(vs.colormap.clone()));
        a.start = vs.kiviat_start;
        a.width = vs.kiviat_width;
        a.stretch = vs.kiviat_stretch;
        a.log = vs.kiviat_log;
        a.moments_3d |= vs.moments_3d;
    }
    // scenes to draw (one per frame)
    let mut scenes = Vec::new();
    match a.view {
        View::Kiviat => {
            let query = FieldQuery {
                states: &a.states,
                kinds: &a.kinds,
                processor: None,
                t0,
                t1,
                bins: a.bins,
            };
            let f = field(&t, &a.quantity, &query)?;
            let c = a
                .color_by
                .as_deref()
                .map(|q| field(&t, q, &query))
                .transpose()?;
            let mut p = kiviat::KiviatParams {
                start: a.start,
                width: (a.width > 0).then_some(a.width),
                stretch: a.stretch,
                scale: if a.log {
                    kiviat::RadiusScale::Log
                } else {
                    kiviat::RadiusScale::Linear
                },
                trim_leading_empty: !a.keep_empty,
                colormap: a.colormap.clone().unwrap_or_else(|| "viridis".into()),
                ..Default::default()
            };
            match a.frames {
                None => scenes.push(kiviat::build(&f, c.as_ref(), &p)?),
                Some(n) => {
                    let skip = if p.trim_leading_empty {
                        fields::leading_empty_bins(&f)
                    } else {
                        0
                    };
                    let last = f.bins.saturating_sub(skip + a.width.max(1));
                    for i in 0..n.max(1) {
                        p.start = if n > 1 { i * last / (n - 1) } else { 0 };
                        scenes.push(kiviat::build(&f, c.as_ref(), &p)?);
                    }
                }
            }
        }
        View::Moments => {
            let mask = t.states.select(&a.states)?;
            let accs: Vec<_> = (0..t.num_locations() as u32)
                .map(|l| moments::accumulate(t.intervals.of(l), &mask, t0, t1))
                .collect();
            let g = fields::busy_fraction(
                &t,
                &mask,
                t0,
                t1,
                a.gantt_bins.min((t1 - t0) as usize).max(1),
            )?;
            let p = moment_scene::MomentParams {
                t0,
                t1,
                colormap: a.colormap.clone().unwrap_or_else(|| "heat".into()),
                ..Default::default()
            };
            scenes.push(if a.moments_3d {
                moment_scene::build_3d(&accs, &p)?
            } else {
                moment_scene::build(&accs, Some(&g), &p)?
            });
        }
    }
    let ctx = GpuContext::new().context("rendering needs a GPU adapter")?;
    eprintln!("adapter: {}", ctx.describe());
    let renderer = Renderer::new(&ctx);
    // the camera: from a file, the command line, or fitted to the first scene
    let mut camera = match &a.view_state {
        Some(p) => serde_json::from_slice::<Camera>(
            &std::fs::read(p).with_context(|| format!("cannot read {}", p.display()))?,
        )
        .with_context(|| format!("{}: not a view-state file", p.display()))?,
        None => Camera::fit(&scenes[0]),
    };
    if let Some(e) = &a.eye {
        camera.eye = vec3(e, "--eye")?;
    }
    if let Some(tg) = &a.target {
        camera.target = vec3(tg, "--target")?;
    }
    let background = match a.view {
        View::Moments if !a.moments_3d => [1.0, 1.0, 1.0, 1.0],
        View::Moments => [0.02, 0.02, 0.05, 1.0],
        View::Kiviat => [0.02, 0.02, 0.05, 1.0],
    };
    let t_render = std::time::Instant::now();
    for (i, s) in scenes.iter().enumerate() {
        let frame = renderer.render(s, &camera, w, h, background)?;
        let path = if a.frames.is_some() {
            numbered(&a.out, i)
        } else {
            a.out.clone()
        };
        frame.save_png(&path)?;
        eprintln!(
            "wrote {} ({} triangles): {}",
            path.display(),
            s.triangles(),
            s.title
        );
    }
    eprintln!(
        "{} frame(s) in {:.2} s",
        scenes.len(),
        t_render.elapsed().as_secs_f64()
    );
    if let Some(p) = &a.save_view_state {
        let state = tapestry::app::ViewState {
            view: match a.view {
                View::Kiviat => tapestry::app::ViewKind::Kiviat,
                View::Moments => tapestry::app::ViewKind::Moments,
            },
            camera: Some(camera),
            colormap: a.colormap.clone().unwrap_or_else(|| "viridis".into()),
            kiviat_start: a.start,
            kiviat_width: a.width,
            kiviat_stretch: a.stretch,
            kiviat_log: a.log,
            fly: false,
            moments_3d: a.moments_3d,
            kiviat_color_messages: a.color_by.as_deref() == Some("messages"),
        };
        tapestry::export::write_atomic(p, serde_json::to_string_pretty(&state)?.as_bytes(), &[])?;
    }
    Ok(())
}
