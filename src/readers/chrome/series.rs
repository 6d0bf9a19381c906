//! A counter (`C`) event's samples given to their counters by the members
//! of the event before.
//!
//! A trace's counter events mostly repeat one shape: the same event name
//! and id, the same members in the same order (`"args":{"TOT_INS":1646,
//! "TOT_CYC":2184,...}`). Read one by one, each event's members were
//! sorted by name, each series' name made and looked up (the reader's
//! `counter_samples`, which the tests keep as the reference). A
//! [`SeriesCache`] keeps the shapes of the latest events: their members'
//! names, the text of their `args` with the values cut out (as written,
//! spaces too), and the counters their samples went to. An event written
//! as one before of its name is read by comparing that text and reading
//! the values between (no key scanned as a string); one of a shape held
//! gives its samples to that shape's counters, in the same order, without
//! sorting, naming or looking up anything. The samples are
//! `counter_samples`', in its order, and the counters are defined in the
//! same order (tested against it).

use super::{Ev, counter_samples_serde, fields, series_name};

/// How many shapes of counter event a [`SeriesCache`] holds: traces whose
/// counter events of a few names take turns find each name's.
const SHAPES: usize = 16;

/// The shapes of the latest counter events whose `args` were read in
/// place (up to [`SHAPES`], the oldest made over first), and the counters
/// their samples went to.
#[derive(Debug, Default)]
pub(super) struct SeriesCache {
    shapes: Vec<Shape>,
    /// The shape the latest event had, looked at first.
    last: usize,
    /// The shape made over when a new one does not fit.
    next: usize,
    /// The template of an event read in full, until its shape is known
    /// (then swapped into it): see [`Shape::template`].
    template: Vec<u8>,
    ends: Vec<usize>,
}

/// A counter event's name, id and members (their names, in order), and
/// where its samples go.
#[derive(Debug, Default)]
struct Shape {
    name: String,
    id: Option<String>,
    /// The member names one after the other, and where each ends.
    keys: String,
    key_ends: Vec<usize>,
    /// The `args` of the latest event of this shape read in full, with
    /// the values cut out, as written (`{"a": `, `, "b": `, ..., `}`), and
    /// where each piece ends: the next event written so is read by
    /// comparing it and reading the values between.
    template: Vec<u8>,
    ends: Vec<usize>,
    /// Per sample, in the order they are given (by member name, the last
    /// member of a name): the member's index in the event and its counter,
    /// once defined (a member that was no number has none until one is).
    order: Vec<(usize, Option<u32>)>,
}

impl SeriesCache {
    /// Gives each numeric member of counter event `ev`'s `args` to `each`
    /// as (counter, value), in `counter_samples`' order (by member name,
    /// the last member of a name), defining each series' counter by its
    /// name through `def` the first time it is met (as `counter_samples`
    /// would have it looked up); both are handed `b` (the builder). `args`
    /// that cannot be read in place go through serde, and leave the cache
    /// as it was.
    pub(super) fn samples<B>(
        &mut self,
        ev: &Ev,
        b: &mut B,
        def: impl Fn(&mut B, &str) -> u32,
        mut each: impl FnMut(&mut B, u32, f64),
    ) {
        let Some(args) = ev.args else {
            return;
        };
        let mut values = [None; fields::FAST_MEMBERS];
        // most often written as an event of its name before: its values
        // read between its members' names (the latest event's shape
        // tried first)
        let last = self.last;
        let tried = std::iter::once(last).chain((0..self.shapes.len()).filter(|&i| i != last));
        for i in tried {
            let Some(shape) = self.shapes.get_mut(i) else {
                continue;
            };
            if shape.is_of(ev)
                && let Some(n) =
                    fields::counter_values_as(args, &shape.template, &shape.ends, &mut values)
            {
                self.last = i;
                shape.give(ev, &values[..n], b, def, each);
                return;
            }
        }
        let mut members = [("", None); fields::FAST_MEMBERS];
        let read = fields::counter_members_template(
            args,
            &mut members,
            &mut self.template,
            &mut self.ends,
        );
        let Some(n) = read else {
            let mut name = String::new();
            counter_samples_serde(ev, args, &mut name, &mut |name, x| {
                let c = def(b, name);
                each(b, c, x)
            });
            return;
        };
        let members = &members[..n];
        for (v, m) in values.iter_mut().zip(members) {
            *v = m.1;
        }
        // a new shape, or one written otherwise than before (spaces): its
        // template this event's
        let (mut template, mut ends) = (
            std::mem::take(&mut self.template),
            std::mem::take(&mut self.ends),
        );
        let shape = self.shape_of(ev, members);
        std::mem::swap(&mut shape.template, &mut template);
        std::mem::swap(&mut shape.ends, &mut ends);
        shape.give(ev, &values[..n], b, def, each);
        // (the shape's old buffers kept for the next event read in full)
        (self.template, self.ends) = (template, ends);
    }

    /// The shape of `ev` with `members`: the latest event's, another held,
    /// or a new one (with no counters yet).
    fn shape_of(&mut self, ev: &Ev, members: &[(&str, Option<f64>)]) -> &mut Shape {
        let found = match self.shapes.get(self.last) {
            Some(s) if s.holds(ev, members) => Some(self.last),
            _ => self.shapes.iter().position(|s| s.holds(ev, members)),
        };
        let i = match found {
            Some(i) => i,
            None if self.shapes.len() < SHAPES => {
                self.shapes.push(Shape::default());
                self.shapes.len() - 1
            }
            None => {
                let i = self.next;
                self.next = (self.next + 1) % SHAPES;
                i
            }
        };
        self.last = i;
        let shape = &mut self.shapes[i];
        if found.is_none() {
            shape.learn(ev, members);
        }
        shape
    }
}

impl Shape {
    /// Whether this is a shape of `ev`'s name and id.
    fn is_of(&self, ev: &Ev) -> bool {
        self.name == ev.name && self.id.as_deref() == ev.id.as_deref()
    }

    /// The name of member `j`.
    fn key(&self, j: usize) -> Option<&str> {
        let start = if j == 0 {
            0
        } else {
            *self.key_ends.get(j - 1)?
        };
        self.keys.get(start..*self.key_ends.get(j)?)
    }

    /// Whether this is the shape of `ev` with `members`.
    fn holds(&self, ev: &Ev, members: &[(&str, Option<f64>)]) -> bool {
        self.is_of(ev)
            && self.key_ends.len() == members.len()
            && members
                .iter()
                .enumerate()
                .all(|(j, (k, _))| self.key(j) == Some(*k))
    }

    /// Gives the numeric `values` (one a member, in order) to their
    /// counters, as [`SeriesCache::samples`] says.
    fn give<B>(
        &mut self,
        ev: &Ev,
        values: &[Option<f64>],
        b: &mut B,
        def: impl Fn(&mut B, &str) -> u32,
        mut each: impl FnMut(&mut B, u32, f64),
    ) {
        let mut name = String::new();
        for k in 0..self.order.len() {
            let (i, c) = self.order[k];
            let Some(&Some(x)) = values.get(i) else {
                continue;
            };
            let c = match c {
                Some(c) => c,
                None => {
                    series_name(ev, self.key(i).unwrap_or(""), &mut name);
                    let c = def(b, &name);
                    self.order[k].1 = Some(c);
                    c
                }
            };
            each(b, c, x);
        }
    }

    /// Makes this the shape of `ev` with `members`, with no counters yet
    /// (and no template): the members sorted by name (stably), the last of
    /// each name kept.
    fn learn(&mut self, ev: &Ev, members: &[(&str, Option<f64>)]) {
        self.name.clear();
        self.name.push_str(&ev.name);
        self.id = ev.id.as_deref().map(str::to_string);
        self.keys.clear();
        self.key_ends.clear();
        for (k, _) in members {
            self.keys.push_str(k);
            self.key_ends.push(self.keys.len());
        }
        let mut sorted: Vec<usize> = (0..members.len()).collect();
        sorted.sort_by(|&a, &b| members[a].0.cmp(members[b].0));
        self.order.clear();
        for (j, &i) in sorted.iter().enumerate() {
            let last = sorted
                .get(j + 1)
                .is_none_or(|&next| members[next].0 != members[i].0);
            if last {
                self.order.push((i, None));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::readers::chrome::{counter_event, counter_samples};
    use std::collections::HashMap;

    /// Counters defined by name in order of first definition, as the
    /// builder numbers them.
    #[derive(Default)]
    struct Defs {
        index: HashMap<String, u32>,
        names: Vec<String>,
    }

    impl Defs {
        fn def(&mut self, name: &str) -> u32 {
            if let Some(&c) = self.index.get(name) {
                return c;
            }
            self.names.push(name.to_string());
            self.index
                .insert(name.to_string(), self.names.len() as u32 - 1);
            self.names.len() as u32 - 1
        }
    }

    /// Events of a few dozen shapes (more than the cache holds, taking
    /// turns or repeating), whose members repeat names, are numbers one
    /// time and strings, literals or nested values (which serde reads)
    /// another, or are too many to read in place: the cache gives the
    /// samples `counter_samples` gives, to the same counters, defined in
    /// the same order.
    #[test]
    fn samples_are_counter_samples() {
        let mut rng = crate::test_rng::XorShift(0x5E41E5);
        let keys = ["value", "a", "b", "TOT_INS", "L1_DCM", "a", "z", "TOT_CYC"];
        let mut shapes: Vec<(String, Option<&str>, Vec<&str>)> = (0..40)
            .map(|s| {
                let n = match s % 10 {
                    0 => 17 + s % 3,
                    1 => 0,
                    _ => 1 + rng.below(6) as usize,
                };
                let members = (0..n)
                    .map(|_| keys[rng.below(keys.len() as u64) as usize])
                    .collect();
                let id = [None, Some("7"), Some("x")][s % 3];
                (format!("c{}", s % 7), id, members)
            })
            .collect();
        // each with a twin of its name and id whose members' names differ
        // but not in length ("a" for "b", "TOT_INS" for "TOT_CYC")
        for s in 0..40 {
            let (name, id, members) = shapes[s].clone();
            let twin = |k: &&'static str| -> &'static str {
                match *k {
                    "a" => "b",
                    "b" => "a",
                    "TOT_INS" => "TOT_CYC",
                    k => k,
                }
            };
            shapes.push((name, id, members.iter().map(twin).collect()));
        }
        let (mut cache, mut mine, mut theirs) =
            (SeriesCache::default(), Defs::default(), Defs::default());
        let (mut hits, mut total, mut slow, mut templated) = (0, 0, 0, 0);
        for round in 0..6_000 {
            // a run of one shape, a shape and its twin taking turns, or
            // shapes drawn at random
            let s = match round % 100 {
                0..50 => (round / 25) % shapes.len(),
                50..75 => (round / 100) % 40 + 40 * (round % 2),
                _ => rng.below(shapes.len() as u64) as usize,
            };
            let (name, id, members) = &shapes[s];
            // now and then written with spaces (another template)
            let (comma, colon) = match rng.below(10) {
                0 => (", ", " : "),
                _ => (",", ":"),
            };
            let mut args = String::from(if round % 13 == 0 { " {" } else { "{" });
            for (i, k) in members.iter().enumerate() {
                if i > 0 {
                    args.push_str(comma);
                }
                let v = match rng.below(12) {
                    0 => "\"x\"".to_string(),
                    1 => "null".to_string(),
                    2 if round % 7 == 0 => "[1]".to_string(),
                    3 => format!("{}.25", rng.below(1000)),
                    _ => rng.below(1 << 40).to_string(),
                };
                args.push_str(&format!("\"{k}\"{colon}{v}"));
            }
            args.push_str(if round % 11 == 0 { "} " } else { "}" });
            let ev = counter_event(name, *id, &args);
            let mut got = Vec::new();
            let before = cache.shapes.get(cache.last).map(|s| s.order.clone());
            templated += usize::from(cache.shapes.get(cache.last).is_some_and(|s| {
                s.is_of(&ev)
                    && fields::counter_values_as(&args, &s.template, &s.ends, &mut [None; 16])
                        .is_some()
            }));
            cache.samples(
                &ev,
                &mut mine,
                |d, n| d.def(n),
                |_, c, x| got.push((c, x.to_bits())),
            );
            hits += usize::from(before == cache.shapes.get(cache.last).map(|s| s.order.clone()));
            let mut want = Vec::new();
            counter_samples(&ev, &mut |n, x| want.push((theirs.def(n), x.to_bits())));
            assert_eq!(got, want, "{name} {id:?} {args}");
            total += want.len();
            slow += usize::from(
                fields::counter_members_fast(&args, &mut [("", None); fields::FAST_MEMBERS])
                    .is_none(),
            );
        }
        assert_eq!(mine.names, theirs.names);
        assert!(mine.names.len() > 60, "{} counters", mine.names.len());
        assert!(
            total > 10_000 && hits > 2_000 && slow > 500 && templated > 1_000,
            "{total} {hits} {slow} {templated}"
        );
        assert_eq!(cache.shapes.len(), SHAPES);
    }
}
