//! The window's interactive plot of a 2D chart (egui_plot): the series of
//! a signal, spectrum, correlation or histogram view, with pan (drag),
//! zoom (scroll, box with the right button), double click to reset, and
//! the values under the pointer. Axes are written with the chart's units.

use egui_plot::{Bar, BarChart, HoverPosition, Legend, Line, Plot, PlotPoints};

use crate::scene::axes;
use crate::scene::chart::{Chart, SeriesKind, series_colour, unit_suffix};

fn colour(c: [f32; 4]) -> egui::Color32 {
    let b = |v: f32| (v.clamp(0.0, 1.0) * 255.0).round() as u8;
    egui::Color32::from_rgb(b(c[0]), b(c[1]), b(c[2]))
}

/// Draws `chart` over `rect` of `ui`.
pub fn show(ui: &mut egui::Ui, rect: egui::Rect, chart: &Chart, id: u64) {
    let px = rect.width().max(64.0) as usize;
    let (xu, yu) = (chart.x_unit.clone(), chart.y_unit.clone());
    let (xu2, yu2) = (xu.clone(), yu.clone());
    let mut child = ui.new_child(egui::UiBuilder::new().max_rect(rect));
    // a light chart, as the rendered PNG and the SVG are
    child.set_visuals(egui::Visuals::light());
    child.painter().rect_filled(rect, 0.0, egui::Color32::WHITE);
    egui::Frame::new()
        .fill(egui::Color32::WHITE)
        .inner_margin(8.0)
        .show(&mut child, |ui| {
            ui.vertical_centered(|ui| ui.label(egui::RichText::new(&chart.title).strong()));
            Plot::new(("chart", id))
                .legend(Legend::default())
                .x_axis_label(format!(
                    "{}{}",
                    chart.x_name,
                    unit_suffix(&chart.x_unit, &chart.x_name)
                ))
                .y_axis_label(format!(
                    "{}{}",
                    chart.y_name,
                    unit_suffix(&chart.y_unit, &chart.y_name)
                ))
                .x_axis_formatter(move |m, r| {
                    let mag = r.start().abs().max(r.end().abs());
                    axes::format_value(m.value, &xu, mag, m.step_size)
                })
                .y_axis_formatter(move |m, r| {
                    let mag = r.start().abs().max(r.end().abs());
                    axes::format_value(m.value, &yu, mag, m.step_size)
                })
                .label_formatter(move |h| {
                    let (name, p) = match h {
                        HoverPosition::NearDataPoint {
                            plot_name,
                            position,
                            ..
                        } => (*plot_name, *position),
                        HoverPosition::Elsewhere { position } => ("", *position),
                    };
                    Some(format!(
                        "{name}\nx = {}\ny = {}",
                        axes::format_value(p.x, &xu2, p.x.abs(), 0.0),
                        axes::format_value(p.y, &yu2, p.y.abs(), 0.0)
                    ))
                })
                .show(ui, |p| {
                    for (k, s) in chart.series.iter().enumerate() {
                        let c = colour(series_colour(k));
                        match s.kind {
                            SeriesKind::Line => {
                                let e = s.envelope(px);
                                let pts: PlotPoints =
                                    e.x.iter()
                                        .zip(&e.y)
                                        .filter(|(_, y)| y.is_finite())
                                        .map(|(x, y)| [*x, *y])
                                        .collect();
                                p.line(Line::new(s.name.clone(), pts).color(c).width(1.2));
                            }
                            SeriesKind::Bars => {
                                let n = s.y.len().min(s.x.len().saturating_sub(1));
                                let bars = (0..n)
                                    .filter(|&i| s.y[i].is_finite())
                                    .map(|i| {
                                        Bar::new((s.x[i] + s.x[i + 1]) / 2.0, s.y[i])
                                            .width(s.x[i + 1] - s.x[i])
                                            .fill(c.gamma_multiply(0.8))
                                    })
                                    .collect();
                                p.bar_chart(BarChart::new(s.name.clone(), bars).color(c));
                            }
                        }
                    }
                });
        });
}
