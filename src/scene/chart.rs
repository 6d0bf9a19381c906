//! 2D charts of signals (paper 002): named series (lines, steps or bars)
//! over one x axis, or a matrix (a Markov transition matrix), with axis
//! names and units. Pure data: [`Chart::to_scene`] draws it with the
//! renderer (PNG, the window), `export::svg` writes it with plotters.
//! Series longer than the pixels are reduced to their per-pixel minimum
//! and maximum ([`Series::envelope`]), so nothing is lost to the eye.

use super::axes::{self, Unit};
use super::colormap::Colormap;
use super::{KeyEntry, KeyMark, Label, LabelAlign, Legend, Mesh, Projection, Scene, Segment, rgba};
use crate::error::{Error, Result};

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeriesKind {
    Line,
    /// Bars from 0, each `x[i]..x[i+1]` wide (x has one more value).
    Bars,
}

/// One named series; NaN y values are gaps.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub kind: SeriesKind,
    pub x: Vec<f64>,
    pub y: Vec<f64>,
}

/// A matrix drawn as coloured cells (row 0 on top).
#[derive(Debug, Clone, PartialEq)]
pub struct ChartMatrix {
    pub rows: usize,
    pub cols: usize,
    pub values: Vec<f64>,
    pub value_name: String,
    pub colormap: String,
}

impl ChartMatrix {
    /// The top of the colour scale: the largest finite value (1 when none
    /// is positive).
    pub fn top(&self) -> f64 {
        let hi = self
            .values
            .iter()
            .copied()
            .filter(|v| v.is_finite())
            .fold(0.0, f64::max);
        if hi > 0.0 { hi } else { 1.0 }
    }
}

/// A chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    pub title: String,
    pub x_name: String,
    pub x_unit: Unit,
    pub y_name: String,
    pub y_unit: Unit,
    pub series: Vec<Series>,
    pub matrix: Option<ChartMatrix>,
}

impl Series {
    /// At most about `2 × buckets` points: the first, minimum, maximum and
    /// last point of each of `buckets` equal x ranges, in x order (lines);
    /// bars are returned as they are.
    pub fn envelope(&self, buckets: usize) -> Series {
        let n = self.x.len().min(self.y.len());
        if self.kind == SeriesKind::Bars || n <= 4 * buckets.max(1) {
            return self.clone();
        }
        let per = n.div_ceil(buckets.max(1));
        let (mut x, mut y) = (Vec::new(), Vec::new());
        for a in (0..n).step_by(per) {
            let b = (a + per).min(n);
            let finite = (a..b).filter(|&i| self.y[i].is_finite());
            let lo = finite
                .clone()
                .min_by(|&i, &j| self.y[i].total_cmp(&self.y[j]));
            let hi = finite.max_by(|&i, &j| self.y[i].total_cmp(&self.y[j]));
            let mut idx: Vec<usize> = [Some(a), lo, hi, Some(b - 1)]
                .into_iter()
                .flatten()
                .collect();
            idx.sort_unstable();
            idx.dedup();
            for i in idx {
                x.push(self.x[i]);
                y.push(self.y[i]);
            }
        }
        Series {
            name: self.name.clone(),
            kind: self.kind,
            x,
            y,
        }
    }
}

/// The series colours (categorical palette).
pub fn series_colour(k: usize) -> [f32; 4] {
    Colormap::named("categorical")
        .map(|c| rgba(c.category(k), 1.0))
        .unwrap_or([0.2, 0.3, 0.8, 1.0])
}

impl Chart {
    /// The range of the x and y data (y including 0 for bars).
    pub fn bounds(&self) -> Result<([f64; 2], [f64; 2])> {
        let mut xr = [f64::INFINITY, f64::NEG_INFINITY];
        let mut yr = [f64::INFINITY, f64::NEG_INFINITY];
        for s in &self.series {
            for &v in s.x.iter().filter(|v| v.is_finite()) {
                xr = [xr[0].min(v), xr[1].max(v)];
            }
            for &v in s.y.iter().filter(|v| v.is_finite()) {
                yr = [yr[0].min(v), yr[1].max(v)];
            }
            if s.kind == SeriesKind::Bars {
                yr = [yr[0].min(0.0), yr[1].max(0.0)];
            }
        }
        if !(xr[0].is_finite() && yr[0].is_finite()) {
            return Err(Error::Invalid(format!(
                "{}: nothing to plot (no finite values)",
                self.title
            )));
        }
        if xr[1] <= xr[0] {
            xr = [xr[0] - 0.5, xr[0] + 0.5];
        }
        if yr[1] <= yr[0] {
            yr = [yr[0] - 0.5, yr[0] + 0.5];
        }
        // a little room above and below the data
        let pad = (yr[1] - yr[0]) * 0.04;
        Ok((
            xr,
            [yr[0] - if yr[0] == 0.0 { 0.0 } else { pad }, yr[1] + pad],
        ))
    }

    /// The chart as a 2D scene over `[0, 1.6] × [0, 1]`, with `px` pixels
    /// across its plot area (0: unknown) for the envelope.
    pub fn to_scene(&self, px: usize) -> Result<Scene> {
        let mut scene = Scene::new(self.title.clone(), Projection::Orthographic);
        let ink = axes::ink(false);
        let (w, h) = (1.6f32, 1.0f32);
        let tick = 0.012f32;
        if let Some(m) = &self.matrix {
            return self.matrix_scene(m, scene);
        }
        let (xr, yr) = self.bounds()?;
        let fx = |x: f64| ((x - xr[0]) / (xr[1] - xr[0])) as f32 * w;
        let fy = |y: f64| ((y - yr[0]) / (yr[1] - yr[0])) as f32 * h;
        let buckets = if px == 0 { 4096 } else { px.max(16) };
        let mut bars = Mesh::default();
        for (k, s) in self.series.iter().enumerate() {
            let c = series_colour(k);
            match s.kind {
                SeriesKind::Line => {
                    let e = s.envelope(buckets);
                    for i in 1..e.x.len() {
                        let (a, b) = (i - 1, i);
                        if !(e.y[a].is_finite() && e.y[b].is_finite()) {
                            continue;
                        }
                        scene.lines.push(Segment {
                            a: [fx(e.x[a]), fy(e.y[a]), 0.2],
                            b: [fx(e.x[b]), fy(e.y[b]), 0.2],
                            color: c,
                        });
                    }
                }
                SeriesKind::Bars => {
                    let fill = [c[0], c[1], c[2], 0.85];
                    for i in 0..s.y.len().min(s.x.len().saturating_sub(1)) {
                        if s.y[i].is_finite() {
                            bars.rect(fx(s.x[i]), fy(0.0), fx(s.x[i + 1]), fy(s.y[i]), 0.1, fill);
                        }
                    }
                }
            }
            scene.key.push(KeyEntry {
                mark: if s.kind == SeriesKind::Bars {
                    KeyMark::Bar
                } else {
                    KeyMark::Line
                },
                color: c,
                text: s.name.clone(),
            });
        }
        scene.meshes.push(bars);
        // axes: frame, ticks, names with units
        for (a, b) in [([0.0, 0.0], [w, 0.0]), ([0.0, 0.0], [0.0, h])] {
            scene.lines.push(Segment {
                a: [a[0], a[1], 0.3],
                b: [b[0], b[1], 0.3],
                color: ink,
            });
        }
        let (xt, xs) = axes::nice_ticks(xr[0], xr[1], 8);
        let xm = xr[0].abs().max(xr[1].abs());
        for v in xt {
            let x = fx(v);
            scene.lines.push(Segment {
                a: [x, 0.0, 0.3],
                b: [x, -tick, 0.3],
                color: ink,
            });
            scene.labels.push(
                Label::world(
                    axes::format_value(v, &self.x_unit, xm, xs),
                    [x, -tick, 0.0],
                    12.0,
                    ink,
                )
                .aligned(LabelAlign::CenterTop)
                .priority(1),
            );
        }
        let (yt, ys) = axes::nice_ticks(yr[0], yr[1], 6);
        let ym = yr[0].abs().max(yr[1].abs());
        for v in yt {
            let y = fy(v);
            scene.lines.push(Segment {
                a: [0.0, y, 0.3],
                b: [-tick, y, 0.3],
                color: ink,
            });
            scene.lines.push(Segment {
                a: [0.0, y, 0.05],
                b: [w, y, 0.05],
                color: [0.9, 0.9, 0.92, 1.0],
            });
            scene.labels.push(
                Label::world(
                    axes::format_value(v, &self.y_unit, ym, ys),
                    [-tick, y, 0.0],
                    12.0,
                    ink,
                )
                .aligned(LabelAlign::RightCenter)
                .priority(1),
            );
        }
        scene.labels.push(
            Label::world(
                format!("{}{}", self.x_name, unit_suffix(&self.x_unit, &self.x_name)),
                [w / 2.0, -tick, 0.0],
                13.0,
                ink,
            )
            .aligned(LabelAlign::AxisTitleBelow)
            .priority(0),
        );
        scene.labels.push(
            Label::world(
                format!("{}{}", self.y_name, unit_suffix(&self.y_unit, &self.y_name)),
                [0.0, h / 2.0, 0.0],
                13.0,
                ink,
            )
            .aligned(LabelAlign::AxisTitleLeft)
            .priority(0),
        );
        scene.axes = format!("x: {} (0..{w}), y: {} (0..{h})", self.x_name, self.y_name);
        Ok(scene)
    }

    fn matrix_scene(&self, m: &ChartMatrix, mut scene: Scene) -> Result<Scene> {
        let ink = axes::ink(false);
        let cmap = Colormap::named(&m.colormap)?;
        let hi = m.top();
        scene.margins.right = 220.0;
        let mut mesh = Mesh::default();
        for r in 0..m.rows {
            for c in 0..m.cols {
                let v = m.values.get(r * m.cols + c).copied().unwrap_or(f64::NAN);
                let col = if v.is_finite() {
                    rgba(cmap.at((v / hi) as f32), 1.0)
                } else {
                    [0.9, 0.9, 0.9, 1.0]
                };
                mesh.rect(
                    c as f32,
                    -(r as f32) - 1.0,
                    c as f32 + 1.0,
                    -(r as f32),
                    0.0,
                    col,
                );
            }
        }
        scene.meshes.push(mesh);
        let tick = 0.02 * m.rows.max(m.cols) as f32;
        for c in axes::integer_ticks(0, m.cols.max(1) as u64 - 1, 10) {
            let x = c as f32 + 0.5;
            scene.labels.push(
                Label::world(c.to_string(), [x, -(m.rows as f32) - tick, 0.0], 12.0, ink)
                    .aligned(LabelAlign::CenterTop)
                    .priority(1),
            );
        }
        for r in axes::integer_ticks(0, m.rows.max(1) as u64 - 1, 10) {
            let y = -(r as f32) - 0.5;
            scene.labels.push(
                Label::world(r.to_string(), [-tick, y, 0.0], 12.0, ink)
                    .aligned(LabelAlign::RightCenter)
                    .priority(1),
            );
        }
        scene.labels.push(
            Label::world(
                self.x_name.clone(),
                [m.cols as f32 / 2.0, -(m.rows as f32) - tick, 0.0],
                13.0,
                ink,
            )
            .aligned(LabelAlign::AxisTitleBelow)
            .priority(0),
        );
        scene.labels.push(
            Label::world(
                self.y_name.clone(),
                [0.0, -(m.rows as f32) / 2.0, 0.0],
                13.0,
                ink,
            )
            .aligned(LabelAlign::AxisTitleLeft)
            .priority(0),
        );
        scene.legend = Some(Legend {
            title: m.value_name.clone(),
            colormap: m.colormap.clone(),
            min: 0.0,
            max: hi,
            unit: Unit::Fraction,
            note: None,
        });
        for (k, s) in self.series.iter().enumerate() {
            scene.key.push(KeyEntry {
                mark: KeyMark::Line,
                color: series_colour(k),
                text: s.name.clone(),
            });
        }
        scene.axes = format!("x: {}, y: −{}", self.x_name, self.y_name);
        Ok(scene)
    }
}

/// " \[Hz\]" after an axis name, unless the name, the unit or the tick
/// labels (times) say it already.
pub fn unit_suffix(u: &Unit, name: &str) -> String {
    if name.contains('[') {
        return String::new();
    }
    u.bracket(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_envelope_keeps_every_extreme() {
        let n = 100_000;
        let x: Vec<f64> = (0..n).map(|i| i as f64).collect();
        let mut y: Vec<f64> = x.iter().map(|v| (v / 100.0).sin()).collect();
        y[54_321] = 50.0;
        y[77_777] = -50.0;
        let s = Series {
            name: "w".into(),
            kind: SeriesKind::Line,
            x,
            y,
        };
        let e = s.envelope(500);
        assert!(e.x.len() <= 4 * 500 + 4, "{}", e.x.len());
        assert!(e.y.contains(&50.0) && e.y.contains(&-50.0));
        assert!(e.x.windows(2).all(|w| w[0] < w[1]));
    }
}
