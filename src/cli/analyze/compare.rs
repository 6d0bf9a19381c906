//! `analyze A ANALYSIS --template B`: the analysis of run A against the
//! same analysis of run B (another trace, the same trace in another
//! window, or a saved image): A − B per location, or the difference image.

use anyhow::{Result, anyhow, bail};
use serde_json::json;
use tapestry::analysis::{compare, image, signal};
use tapestry::model::Trace;
use tapestry::readers::{self, Loaded};

use super::super::parse::{parse_metric, parse_pair, parse_range, parse_time};
use super::{Analysis, AnalyzeArgs, Cells, Output, image_layout, run_trace, state_vector};

/// Runs `a.analysis` on `t` and on the template, and returns A − B.
pub fn run(a: &AnalyzeArgs, t: &Trace) -> Result<Output> {
    let path = a
        .template
        .as_ref()
        .ok_or_else(|| anyhow!("no --template"))?;
    if a.analysis == Analysis::Image && path.extension().is_some_and(|e| e == "npy") {
        return image_against_npy(a, t, path);
    }
    let b = match readers::load(path, &a.read.options())? {
        Loaded::Trace(b) => b,
        _ => bail!(
            "{}: a template run must be a trace (or, for image, a saved image .npy)",
            path.display()
        ),
    };
    for w in &b.meta.diagnostics.warnings {
        eprintln!("warning: template: {w}");
    }
    let map = compare::correspond(t, &b)?;
    let mut ab = a.clone();
    ab.window = a.template_window.clone().or_else(|| a.window.clone());
    let template = json!({
        "template": path,
        "template_window": ab.window,
        "difference": "A − B: this run minus the template",
    });
    match a.analysis {
        Analysis::Moments => {
            let (ta, tb) = (run_trace(a, t)?, run_trace(&ab, &b)?);
            let (
                Output::Table {
                    columns,
                    rows: ra,
                    labels,
                    meta,
                },
                Output::Table { rows: rb, .. },
            ) = (ta, tb)
            else {
                bail!("moments gave no table");
            };
            // m1 is a time: its difference is a shift; all differences in ns
            let rows = ra
                .iter()
                .enumerate()
                .map(|(l, r)| {
                    let other = &rb[map[l] as usize];
                    let mut d = vec![r[0]];
                    d.extend(compare::difference(&r[1..], &other[1..]));
                    d
                })
                .collect();
            let mut meta = meta;
            meta["analysis"] = json!("moments difference");
            meta["compare"] = template;
            Ok(Output::Table {
                columns: columns
                    .into_iter()
                    .enumerate()
                    .map(|(k, (n, u))| {
                        if k == 0 {
                            (n, u)
                        } else {
                            (format!("Δ{n}"), u)
                        }
                    })
                    .collect(),
                rows,
                labels,
                meta,
            })
        }
        Analysis::Field | Analysis::CommMatrix => {
            let (ma, mb) = (run_trace(a, t)?, run_trace(&ab, &b)?);
            let (
                Output::Matrix {
                    rows,
                    cols,
                    values: va,
                    unit,
                    meta,
                },
                Output::Matrix {
                    rows: rb,
                    cols: cb,
                    values: vb,
                    ..
                },
            ) = (ma, mb)
            else {
                bail!("{:?} gave no matrix", a.analysis);
            };
            let n = t.num_locations();
            let square = a.analysis == Analysis::CommMatrix;
            // reorder the template's location axes to this run's locations
            let at = |r: usize, c: usize| -> Option<f64> {
                let (r2, c2) = if square && rows == n && rb == b.num_locations() {
                    (map[r] as usize, map[c] as usize)
                } else if !square && cols == n && cb == b.num_locations() {
                    (r, map[c] as usize)
                } else {
                    (r, c)
                };
                if r2 < rb && c2 < cb {
                    vb.get(r2 * cb + c2)
                } else {
                    None
                }
            };
            if !square && rows != rb {
                bail!(
                    "the field has {rows} bins here and {rb} in the template: give both the same --bins"
                );
            }
            if (square && rows != n && (rows, cols) != (rb, cb))
                || (!square && cols != n && cols != cb)
            {
                bail!(
                    "the runs' {:?} results have different shapes ({rows} × {cols} and {rb} × {cb}); \
                     compare at a level where the runs correspond",
                    a.analysis
                );
            }
            let values: Vec<Option<f64>> = (0..rows * cols)
                .map(|i| match (va.get(i), at(i / cols, i % cols)) {
                    (Some(x), Some(y)) => Some(x - y),
                    _ => None,
                })
                .collect();
            let mut meta = meta;
            meta["analysis"] = json!(format!("{:?} difference", a.analysis).to_lowercase());
            meta["compare"] = template;
            if let Some(s) = image::stats_of(&values) {
                meta["difference_stats"] = json!(s);
            }
            Ok(Output::Matrix {
                rows,
                cols,
                values: Cells::Optional(values),
                unit,
                meta,
            })
        }
        Analysis::Image => {
            let nb = parse_time(a.template_n0.as_deref().unwrap_or(&a.n0))?;
            let m = parse_metric(&a.metric, t)?;
            let mb_ = parse_metric(&a.metric, &b)?;
            if t.num_locations() != b.num_locations() {
                bail!(
                    "a template image needs the same number of processors: this run has {}, the template {}",
                    t.num_locations(),
                    b.num_locations()
                );
            }
            let layout = image_layout(a)?;
            let n0 = parse_time(&a.n0)?;
            let img = image::render(
                &state_vector(t, &m, &t.states.select(&a.states)?, n0)?,
                &layout,
            )?;
            let sv_b = state_vector(&b, &mb_, &b.states.select(&a.states)?, nb)?;
            // in this run's processor order
            let sv_b: Vec<f64> = map.iter().map(|&k| sv_b[k as usize]).collect();
            let other = image::render(&sv_b, &layout)?;
            difference_image(
                a,
                &img,
                &other,
                false,
                json!({"n0_ns": n0, "template_n0_ns": nb, "compare": template}),
            )
        }
        Analysis::CrossCorrelation => {
            // the template signal: B's performance signal in its window
            if a.template_window.is_none() {
                bail!(
                    "cross-correlation with --template needs --template-window T0:T1 (the template's stretch of B)"
                );
            }
            let (w, unit, period, times) = super::dsp_signal(a, t, &a.metric)?;
            let (y, _, _, _) = super::dsp_signal(&ab, &b, &a.metric)?;
            if y.is_empty() {
                bail!("the template window holds no samples of the signal");
            }
            let c = signal::template_match(&w, &y)?;
            let min = a.peak_min;
            let peaks = signal::peaks(&c, min);
            let peak_times: Vec<Option<f64>> = peaks
                .iter()
                .map(|&l| times.get(l).map(|&t| t as f64))
                .collect();
            let rows = c
                .iter()
                .enumerate()
                .map(|(l, v)| vec![Some(l as f64), times.get(l).map(|&t| t as f64), *v])
                .collect();
            Ok(super::table(
                &[
                    ("lag", "sample"),
                    ("time", "ns"),
                    ("c", "normalised cross-covariance"),
                ],
                rows,
                json!({
                    "analysis": "template match",
                    "metric": a.metric,
                    "unit": unit,
                    "period_s": period,
                    "template_samples": y.len(),
                    "peaks_at_least": min,
                    "peak_lags": peaks,
                    "peak_times_ns": peak_times,
                    "note": "c(l): Pearson correlation of the template with the signal's window starting at lag l; 1 = match, −1 = mirror image, empty = constant window",
                    "compare": template,
                }),
            ))
        }
        other => bail!(
            "--template compares moments, field, comm-matrix, image and cross-correlation, not {other:?}"
        ),
    }
}

/// The contrast-stretched difference of two images of one layout, with the
/// mismatch energies, statistics and histogram of the difference.
/// `indices`: the images hold colour indices already (a saved image), so
/// the energy is over them and there is no metric energy.
fn difference_image(
    a: &AnalyzeArgs,
    img: &image::Image,
    other: &image::Image,
    indices: bool,
    extra: serde_json::Value,
) -> Result<Output> {
    let g = parse_pair(&a.g_range, "--g-range")?;
    let mr = parse_range(a.m_range.as_deref(), "--m-range")?;
    // image::difference(a, b) is b − a: this run minus the template
    let d = image::difference(other, img)?;
    let (energy, metric_energy) = if indices {
        (image::mismatch_energy(&img.values, &other.values), None)
    } else {
        let (e, m) = image::mismatch_energies(img, other, g, mr)?;
        (e, Some(m))
    };
    let dv: Vec<f64> = d.values.iter().flatten().copied().collect();
    let lim = dv
        .iter()
        .fold(0.0f64, |m, v| m.max(v.abs()))
        .max(f64::MIN_POSITIVE);
    let h = signal::histogram(&dv, a.classes, Some((-lim, lim)))?;
    let mut meta = json!({
        "analysis": "image difference",
        "layout": image_layout(a)?.name(),
        "g_range": [g.0, g.1],
        "rows": img.rows,
        "cols": img.cols,
        "cells": "contrast-stretched difference A − B (colour index); empty = no data",
        "mismatch_energy": energy,
        "mismatch_energy_of": "colour indices G_A, G_B over one metric range (--m-range, else both images')",
        "mismatch_energy_metric": metric_energy,
        "difference_stats": image::stats_of(&d.values),
        "difference_histogram": {"edges": h.edges, "cells": h.weight},
    });
    if let (Some(m), Some(e)) = (meta.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            m.insert(k.clone(), v.clone());
        }
    }
    Ok(Output::Matrix {
        rows: img.rows,
        cols: img.cols,
        values: Cells::Optional(image::contrast_stretch(&d, g)),
        unit: "colour index".into(),
        meta,
    })
}

/// This run's image against a saved image (`analyze … image -o x.npy`:
/// colour indices, NaN where no processor sits) of the same shape.
fn image_against_npy(a: &AnalyzeArgs, t: &Trace, path: &std::path::Path) -> Result<Output> {
    let mut arr = readers::npy::Npy::open(path)?;
    let shape = arr.header.shape.clone();
    let [rows, cols] = shape[..] else {
        bail!(
            "{}: a saved image is a 2D array, found shape {shape:?}",
            path.display()
        );
    };
    let n = arr.checked_len(1 << 28, "image")? as usize;
    let mut v = vec![0.0; n];
    arr.read_f64(&mut v)?;
    let m = parse_metric(&a.metric, t)?;
    let layout = image_layout(a)?;
    let n0 = parse_time(&a.n0)?;
    let img = image::render(
        &state_vector(t, &m, &t.states.select(&a.states)?, n0)?,
        &layout,
    )?;
    if (img.rows as u64, img.cols as u64) != (rows, cols) {
        bail!(
            "{}: the saved image is {rows} × {cols}, this run's is {} × {} (same processors and layout needed)",
            path.display(),
            img.rows,
            img.cols
        );
    }
    // compare colour indices: this run's as colour indices too
    let g = parse_pair(&a.g_range, "--g-range")?;
    let mr = parse_range(a.m_range.as_deref(), "--m-range")?;
    let ga = image::Image {
        values: image::color_index(&img, g, mr),
        ..img.clone()
    };
    let gb = image::Image {
        values: v.iter().map(|x| x.is_finite().then_some(*x)).collect(),
        ..img.clone()
    };
    difference_image(
        a,
        &ga,
        &gb,
        true,
        json!({"n0_ns": n0, "compare": {"template": path, "template_is": "a saved image of colour indices"}}),
    )
}
