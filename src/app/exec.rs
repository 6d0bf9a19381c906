//! Execution control in the window (paper 001 §3.3.2): the time cursor
//! every pane follows, single steps and continuous play at a frame rate,
//! forward and backward, by events or clock ticks per frame (whichever
//! comes first), jump to a time, loop a range, and the statistics up to the
//! cursor. The frame arithmetic is [`Timeline::advance`]'s; this is the
//! window's state around it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::analysis::cursor::{Stats, Step, Timeline, parse_time};
use crate::model::Time;
use crate::scene::axes;

/// Which way the cursor plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Play {
    Forward,
    Backward,
}

/// The execution control of a window.
pub struct Exec {
    pub timeline: Arc<Timeline>,
    /// The whole range the cursor may take (the trace's span).
    pub span: (Time, Time),
    /// The range played and looped (a sub-range of `span`).
    pub range: (Time, Time),
    /// The cursor; `None`: the views show their whole window.
    pub cursor: Option<Time>,
    pub events_per_frame: u64,
    pub ticks_per_frame: Time,
    pub looping: bool,
    pub playing: Option<Play>,
    /// Frames per second while playing.
    pub fps: f32,
    pub last_frame: Instant,
    /// The text of the "jump to" field.
    pub jump: String,
    pub message: Option<String>,
}

impl Exec {
    pub fn new(timeline: Arc<Timeline>, span: Time) -> Exec {
        let end = span.max(timeline.span);
        Exec {
            timeline,
            span: (0, end),
            range: (0, end),
            cursor: None,
            events_per_frame: 100,
            // a hundredth of the trace per frame
            ticks_per_frame: (end / 100).max(1),
            looping: false,
            playing: None,
            fps: 10.0,
            last_frame: Instant::now(),
            jump: String::new(),
            message: None,
        }
    }

    fn step(&self, backward: bool) -> Step {
        Step {
            events: self.events_per_frame,
            ticks: self.ticks_per_frame,
            backward,
        }
    }

    /// One frame forward or back from the cursor (from the range's start,
    /// or its end backwards, when there is no cursor yet). At an end the
    /// cursor stays (and playing stops) unless looping.
    pub fn single_step(&mut self, backward: bool) {
        let at = self
            .cursor
            .unwrap_or(if backward { self.range.1 } else { self.range.0 });
        let next = if self.cursor.is_none() {
            Ok(at)
        } else {
            self.timeline
                .advance(at, self.step(backward), self.range, self.looping)
        };
        match next {
            Ok(t) => {
                if Some(t) == self.cursor && self.playing.is_some() && !self.looping {
                    self.playing = None;
                }
                self.cursor = Some(t);
                self.message = None;
            }
            Err(e) => {
                self.playing = None;
                self.message = Some(e.to_string());
            }
        }
    }

    /// While playing: advances when a frame's time has passed; true when
    /// the cursor moved.
    pub fn tick(&mut self, now: Instant) -> bool {
        let Some(dir) = self.playing else {
            return false;
        };
        if now.duration_since(self.last_frame) < self.frame_time() {
            return false;
        }
        self.last_frame = now;
        let before = self.cursor;
        self.single_step(dir == Play::Backward);
        self.cursor != before
    }

    pub fn frame_time(&self) -> Duration {
        Duration::from_secs_f32(1.0 / self.fps.clamp(0.1, 120.0))
    }

    /// The statistics up to the cursor.
    pub fn stats(&self) -> Option<Stats> {
        self.cursor.map(|t| self.timeline.stats(t))
    }

    /// Jumps to the time typed in [`Exec::jump`].
    pub fn jump_to_text(&mut self) {
        match parse_time(&self.jump) {
            Ok(t) if t <= self.span.1 => {
                self.cursor = Some(t);
                self.message = None;
            }
            Ok(t) => {
                self.message = Some(format!(
                    "{} is after the trace's end ({})",
                    fmt(t, self.span.1),
                    fmt(self.span.1, self.span.1)
                ));
            }
            Err(e) => self.message = Some(e.to_string()),
        }
    }

    /// One line of the statistics for logs and scripts.
    pub fn log_line(&self) -> Option<String> {
        let s = self.stats()?;
        let states: Vec<String> = self
            .timeline
            .state_names
            .iter()
            .zip(&s.state_time)
            .filter(|(_, t)| **t > 0)
            .map(|(n, t)| format!("{n}={t}"))
            .collect();
        Some(format!(
            "cursor t={} events={} sent={} bytes_sent={} received={} bytes_received={} states[{}]",
            s.time,
            s.events,
            s.messages_sent,
            s.bytes_sent,
            s.messages_received,
            s.bytes_received,
            states.join(",")
        ))
    }

    /// The panel: cursor, steps, play, rate, loop range, statistics.
    /// Returns true when the cursor changed.
    pub fn panel(&mut self, ui: &mut egui::Ui) -> bool {
        let before = self.cursor;
        let end = self.span.1;
        ui.label(egui::RichText::new("time cursor").strong());
        let mut on = self.cursor.is_some();
        if ui
            .checkbox(&mut on, "views follow the cursor")
            .on_hover_text("off: every view shows its whole window")
            .changed()
        {
            self.cursor = on.then_some(self.range.0);
            if !on {
                self.playing = None;
            }
        }
        if let Some(mut c) = self.cursor {
            let resp = ui.add(
                egui::Slider::new(&mut c, self.span.0..=end)
                    .custom_formatter(move |v, _| fmt(v as Time, end))
                    .custom_parser(|s| parse_time(s).ok().map(|t| t as f64))
                    .text("t"),
            );
            if resp.changed() {
                self.cursor = Some(c);
            }
        }
        ui.horizontal(|ui| {
            if ui
                .button("|◀")
                .on_hover_text("to the range's start (Home)")
                .clicked()
            {
                self.cursor = Some(self.range.0);
            }
            if ui.button("◀").on_hover_text("one frame back (←)").clicked() {
                self.single_step(true);
            }
            let back = self.playing == Some(Play::Backward);
            if ui
                .selectable_label(back, "◀◀")
                .on_hover_text("play backward")
                .clicked()
            {
                self.playing = if back { None } else { Some(Play::Backward) };
                if self.cursor.is_none() {
                    self.cursor = Some(self.range.1);
                }
            }
            if ui.button("❚❚").on_hover_text("pause (space)").clicked() {
                self.playing = None;
            }
            let fwd = self.playing == Some(Play::Forward);
            if ui
                .selectable_label(fwd, "▶▶")
                .on_hover_text("play forward (space)")
                .clicked()
            {
                self.playing = if fwd { None } else { Some(Play::Forward) };
                if self.cursor.is_none() {
                    self.cursor = Some(self.range.0);
                }
            }
            if ui
                .button("▶")
                .on_hover_text("one frame forward (→)")
                .clicked()
            {
                self.single_step(false);
            }
            if ui
                .button("▶|")
                .on_hover_text("to the range's end (End)")
                .clicked()
            {
                self.cursor = Some(self.range.1);
            }
        });
        ui.horizontal(|ui| {
            ui.label("events/frame");
            ui.add(egui::DragValue::new(&mut self.events_per_frame).range(0..=u64::MAX / 2));
        });
        ui.horizontal(|ui| {
            ui.label("ticks/frame");
            ui.add(
                egui::DragValue::new(&mut self.ticks_per_frame)
                    .range(0..=end.max(1))
                    .custom_formatter(move |v, _| fmt(v as Time, end))
                    .custom_parser(|s| parse_time(s).ok().map(|t| t as f64)),
            );
        });
        ui.add(
            egui::Slider::new(&mut self.fps, 0.5..=60.0)
                .logarithmic(true)
                .text("frames/s"),
        );
        ui.horizontal(|ui| {
            ui.checkbox(&mut self.looping, "loop");
            let (mut lo, mut hi) = self.range;
            ui.add(
                egui::DragValue::new(&mut lo)
                    .range(0..=end)
                    .custom_formatter(move |v, _| fmt(v as Time, end))
                    .custom_parser(|s| parse_time(s).ok().map(|t| t as f64)),
            );
            ui.label("–");
            ui.add(
                egui::DragValue::new(&mut hi)
                    .range(0..=end)
                    .custom_formatter(move |v, _| fmt(v as Time, end))
                    .custom_parser(|s| parse_time(s).ok().map(|t| t as f64)),
            );
            if lo <= hi {
                self.range = (lo, hi);
            }
        });
        ui.horizontal(|ui| {
            let r = ui.add(
                egui::TextEdit::singleline(&mut self.jump)
                    .desired_width(90.0)
                    .hint_text("1.5ms"),
            );
            let enter = r.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
            if ui.button("jump to").clicked() || enter {
                self.jump_to_text();
            }
        });
        if self.events_per_frame == 0 && self.ticks_per_frame == 0 {
            ui.colored_label(
                egui::Color32::from_rgb(220, 60, 60),
                "a frame advances by nothing: set events or ticks per frame",
            );
        }
        if let Some(m) = &self.message {
            ui.colored_label(egui::Color32::from_rgb(220, 60, 60), m);
        }
        if let Some(s) = self.stats() {
            stats_grid(ui, &s, &self.timeline.state_names, end);
        }
        self.cursor != before
    }
}

/// A time for the panel, as the axes write it.
pub fn fmt(t: Time, magnitude: Time) -> String {
    axes::format_time(t as f64, magnitude.max(1) as f64, 0.0)
}

fn stats_grid(ui: &mut egui::Ui, s: &Stats, names: &[String], end: Time) {
    egui::Grid::new("stats")
        .num_columns(2)
        .striped(true)
        .show(ui, |ui| {
            ui.label("up to");
            ui.label(fmt(s.time, end));
            ui.end_row();
            ui.label("records");
            ui.label(s.events.to_string());
            ui.end_row();
            ui.label("messages sent");
            ui.label(format!("{} ({} B)", s.messages_sent, s.bytes_sent));
            ui.end_row();
            ui.label("received");
            ui.label(format!("{} ({} B)", s.messages_received, s.bytes_received));
            ui.end_row();
            // the states by time, largest first (at most 8)
            let mut order: Vec<usize> = (0..s.state_time.len())
                .filter(|&i| s.state_time[i] > 0)
                .collect();
            order.sort_by_key(|&i| std::cmp::Reverse(s.state_time[i]));
            for &i in order.iter().take(8) {
                ui.label(names.get(i).map_or("?", String::as_str));
                ui.label(fmt(s.state_time[i], end));
                ui.end_row();
            }
            if order.len() > 8 {
                ui.label(format!("{} more states", order.len() - 8));
                ui.end_row();
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{BuildOptions, Format, LocationKind, StateClass, TimeUnit, TraceBuilder};

    fn exec() -> Exec {
        let mut b = TraceBuilder::new(Format::Synthetic, "", TimeUnit::nanoseconds(), false);
        let p0 = b.locations.add("p0", LocationKind::Thread, None, 0);
        let p1 = b.locations.add("p1", LocationKind::Thread, None, 1);
        let run = b.states.add("run", StateClass::Busy, None, 0);
        for k in 0..50u64 {
            b.interval(p0, 20 * k, 20 * k + 10, run);
            b.interval(p1, 20 * k + 5, 20 * k + 15, run);
            b.message(p0, p1, 20 * k + 1, 20 * k + 7, 8, 0);
        }
        let t = b.finish(BuildOptions::default()).unwrap();
        Exec::new(Arc::new(Timeline::new(&t)), t.meta.span)
    }

    #[test]
    fn ten_steps_forward_and_back_return_the_statistics() {
        let mut e = exec();
        e.events_per_frame = 3;
        e.ticks_per_frame = 1000;
        e.single_step(false); // places the cursor at the start
        for _ in 0..5 {
            e.single_step(false);
        }
        let start = e.stats().unwrap();
        for _ in 0..10 {
            e.single_step(false);
        }
        let ahead = e.stats().unwrap();
        assert!(ahead.events > start.events && ahead.messages_sent > start.messages_sent);
        assert!(ahead.state_time[0] > start.state_time[0]);
        for _ in 0..10 {
            e.single_step(true);
        }
        assert_eq!(e.stats().unwrap(), start);
    }

    #[test]
    fn play_stops_at_the_end_unless_looping() {
        let mut e = exec();
        e.events_per_frame = 0;
        e.ticks_per_frame = 400;
        e.fps = 120.0;
        e.cursor = Some(900);
        e.playing = Some(Play::Forward);
        let later = |k: u64| Instant::now() + Duration::from_millis(100 * k);
        assert!(e.tick(later(1)));
        assert_eq!(e.cursor, Some(e.range.1));
        e.tick(later(2));
        assert_eq!(e.playing, None);
        e.looping = true;
        e.playing = Some(Play::Forward);
        e.tick(later(3));
        assert_eq!(e.cursor, Some(e.range.0));
        // nothing to advance by is an error, not a hang
        e.ticks_per_frame = 0;
        e.single_step(false);
        assert!(e.message.is_some() && e.playing.is_none());
    }

    #[test]
    fn jump_parses_units_and_refuses_beyond_the_end() {
        let mut e = exec();
        e.jump = "0.5us".into();
        e.jump_to_text();
        assert_eq!(e.cursor, Some(500));
        e.jump = "1s".into();
        e.jump_to_text();
        assert!(e.message.as_deref().unwrap_or("").contains("after"));
        e.jump = "soon".into();
        e.jump_to_text();
        assert!(e.message.is_some());
        assert!(e.log_line().unwrap().starts_with("cursor t=500 "));
    }
}
