//! Charts ([`Chart`]) as SVG with plotters: the same series, axes, units
//! and legend as the rendered PNG, as vectors for papers. Long series are
//! written as their per-pixel envelope.

use plotters::prelude::*;

use crate::error::{Error, Result};
use crate::scene::axes;
use crate::scene::chart::{Chart, SeriesKind, series_colour, unit_suffix};
use crate::scene::colormap::Colormap;

fn rgb(c: [f32; 4]) -> RGBColor {
    let b = |v: f32| (v.clamp(0.0, 1.0) * 255.0).round() as u8;
    RGBColor(b(c[0]), b(c[1]), b(c[2]))
}

fn err(e: impl std::fmt::Display) -> Error {
    Error::Invalid(format!("drawing the SVG: {e}"))
}

/// The chart as an SVG document of `width × height` pixels.
pub fn chart_svg(chart: &Chart, width: u32, height: u32) -> Result<String> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        if let Some(m) = &chart.matrix {
            draw_matrix(chart, m, &root)?;
        } else {
            draw_series(chart, &root, width)?;
        }
        root.present().map_err(err)?;
    }
    Ok(out)
}

fn draw_series(
    chart: &Chart,
    root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    width: u32,
) -> Result<()> {
    let (xr, yr) = chart.bounds()?;
    let mut c = ChartBuilder::on(root)
        .caption(&chart.title, ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(72)
        .build_cartesian_2d(xr[0]..xr[1], yr[0]..yr[1])
        .map_err(err)?;
    let (xu, yu) = (chart.x_unit.clone(), chart.y_unit.clone());
    let xm = xr[0].abs().max(xr[1].abs());
    let ym = yr[0].abs().max(yr[1].abs());
    let xs = axes::nice_ticks(xr[0], xr[1], 8).1;
    let ys = axes::nice_ticks(yr[0], yr[1], 6).1;
    let xf = move |v: &f64| axes::format_value(*v, &xu, xm, xs);
    let yf = move |v: &f64| axes::format_value(*v, &yu, ym, ys);
    c.configure_mesh()
        .x_desc(format!(
            "{}{}",
            chart.x_name,
            unit_suffix(&chart.x_unit, &chart.x_name)
        ))
        .y_desc(format!(
            "{}{}",
            chart.y_name,
            unit_suffix(&chart.y_unit, &chart.y_name)
        ))
        .x_labels(8)
        .y_labels(6)
        .x_label_formatter(&xf)
        .y_label_formatter(&yf)
        .light_line_style(WHITE)
        .bold_line_style(RGBColor(225, 225, 230))
        .draw()
        .map_err(err)?;
    for (k, s) in chart.series.iter().enumerate() {
        let col = rgb(series_colour(k));
        match s.kind {
            SeriesKind::Line => {
                let e = s.envelope(width as usize);
                // gaps (NaN) split the line
                let mut runs: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
                for (x, y) in e.x.iter().zip(&e.y) {
                    if y.is_finite() {
                        if let Some(r) = runs.last_mut() {
                            r.push((*x, *y));
                        }
                    } else if runs.last().is_some_and(|r| !r.is_empty()) {
                        runs.push(Vec::new());
                    }
                }
                let mut first = true;
                for r in runs.into_iter().filter(|r| !r.is_empty()) {
                    let a = c
                        .draw_series(LineSeries::new(r, col.stroke_width(1)))
                        .map_err(err)?;
                    if first {
                        a.label(s.name.clone()).legend(move |(x, y)| {
                            PathElement::new(vec![(x, y), (x + 18, y)], col.stroke_width(2))
                        });
                        first = false;
                    }
                }
            }
            SeriesKind::Bars => {
                let n = s.y.len().min(s.x.len().saturating_sub(1));
                let rects = (0..n).filter(|&i| s.y[i].is_finite()).map(|i| {
                    Rectangle::new(
                        [(s.x[i], 0.0), (s.x[i + 1], s.y[i])],
                        col.mix(0.85).filled(),
                    )
                });
                c.draw_series(rects)
                    .map_err(err)?
                    .label(s.name.clone())
                    .legend(move |(x, y)| {
                        Rectangle::new([(x, y - 5), (x + 18, y + 5)], col.filled())
                    });
            }
        }
    }
    if !chart.series.is_empty() {
        c.configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(160, 160, 160))
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(err)?;
    }
    Ok(())
}

fn draw_matrix(
    chart: &Chart,
    m: &crate::scene::chart::ChartMatrix,
    root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
) -> Result<()> {
    let cmap = Colormap::named(&m.colormap)?;
    let hi = m.top();
    let mut c = ChartBuilder::on(root)
        .caption(&chart.title, ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(56)
        .build_cartesian_2d(0f64..m.cols as f64, m.rows as f64..0f64)
        .map_err(err)?;
    c.configure_mesh()
        .disable_mesh()
        .x_desc(chart.x_name.clone())
        .y_desc(chart.y_name.clone())
        .x_label_formatter(&|v: &f64| format!("{}", v.floor() as i64))
        .y_label_formatter(&|v: &f64| format!("{}", v.floor() as i64))
        .draw()
        .map_err(err)?;
    let cells = (0..m.rows * m.cols).map(|i| {
        let (r, k) = (i / m.cols, i % m.cols);
        let v = m.values.get(i).copied().unwrap_or(f64::NAN);
        let col = if v.is_finite() {
            let c = cmap.at((v / hi) as f32);
            rgb([c[0], c[1], c[2], 1.0])
        } else {
            RGBColor(230, 230, 230)
        };
        Rectangle::new(
            [(k as f64, r as f64), (k as f64 + 1.0, r as f64 + 1.0)],
            col.filled(),
        )
    });
    c.draw_series(cells).map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::axes::Unit;
    use crate::scene::chart::Series;

    #[test]
    fn an_svg_with_axes_units_and_legend() {
        let chart = Chart {
            title: "Spectrum of w".into(),
            x_name: "frequency".into(),
            x_unit: Unit::Other("Hz".into()),
            y_name: "|W(K)|".into(),
            y_unit: Unit::Other("".into()),
            series: vec![Series {
                name: "busy".into(),
                kind: SeriesKind::Line,
                x: (0..100).map(|i| i as f64 * 10.0).collect(),
                y: (0..100).map(|i| (i as f64 / 7.0).sin().abs()).collect(),
            }],
            matrix: None,
        };
        let s = chart_svg(&chart, 800, 450).unwrap();
        assert!(s.starts_with("<svg"), "{}", &s[..60]);
        assert!(s.contains("frequency [Hz]"));
        assert!(s.contains("Spectrum of w"));
        assert!(s.contains("\nbusy\n"), "the legend names the series");
        assert!(s.contains("kHz") || s.contains("Hz"));
    }
}
