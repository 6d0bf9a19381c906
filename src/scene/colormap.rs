//! Colour maps, read from `assets/colormaps/*.csv` (compiled in): viridis,
//! magma, cool-warm (diverging), the blue→green→red heat map of paper 004,
//! and a categorical palette.

use crate::error::{Error, Result};

/// A colour map: stops interpolated linearly (or, for a categorical map,
/// indexed).
#[derive(Debug, Clone, PartialEq)]
pub struct Colormap {
    pub name: String,
    stops: Vec<(f32, [f32; 3])>,
    categorical: bool,
}

const SOURCES: [(&str, &str); 5] = [
    (
        "viridis",
        include_str!("../../assets/colormaps/viridis.csv"),
    ),
    ("magma", include_str!("../../assets/colormaps/magma.csv")),
    (
        "coolwarm",
        include_str!("../../assets/colormaps/coolwarm.csv"),
    ),
    ("heat", include_str!("../../assets/colormaps/heat.csv")),
    (
        "categorical",
        include_str!("../../assets/colormaps/categorical.csv"),
    ),
];

/// Names of the built-in colour maps.
pub fn names() -> Vec<&'static str> {
    SOURCES.iter().map(|(n, _)| *n).collect()
}

impl Colormap {
    /// The built-in map `name`.
    pub fn named(name: &str) -> Result<Colormap> {
        let (n, text) = SOURCES.iter().find(|(n, _)| *n == name).ok_or_else(|| {
            Error::Invalid(format!(
                "unknown colour map '{name}' (known: {})",
                names().join(", ")
            ))
        })?;
        let stops = text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .filter_map(|l| {
                let f: Vec<f32> = l.split(',').filter_map(|x| x.trim().parse().ok()).collect();
                (f.len() == 4).then(|| (f[0], [f[1] / 255.0, f[2] / 255.0, f[3] / 255.0]))
            })
            .collect::<Vec<_>>();
        Ok(Colormap {
            name: n.to_string(),
            categorical: *n == "categorical",
            stops,
        })
    }

    /// The colour at `t` in [0, 1] (clamped; NaN maps to grey). For a
    /// categorical map `t` is scaled to a category.
    pub fn at(&self, t: f32) -> [f32; 3] {
        if t.is_nan() || self.stops.is_empty() {
            return [0.5, 0.5, 0.5];
        }
        let t = t.clamp(0.0, 1.0);
        if self.categorical {
            let k =
                ((t * (self.stops.len() - 1) as f32).round() as usize).min(self.stops.len() - 1);
            return self.stops[k].1;
        }
        let i = self
            .stops
            .partition_point(|s| s.0 <= t)
            .clamp(1, self.stops.len() - 1);
        let (a, b) = (self.stops[i - 1], self.stops[i]);
        let f = if b.0 > a.0 {
            (t - a.0) / (b.0 - a.0)
        } else {
            0.0
        };
        [0, 1, 2].map(|c| a.1[c] + f * (b.1[c] - a.1[c]))
    }

    /// The stops: position in [0, 1] and sRGB colour (for a GPU twin of
    /// [`Colormap::at`]).
    pub fn stops(&self) -> &[(f32, [f32; 3])] {
        &self.stops
    }

    /// Whether [`Colormap::at`] takes the nearest stop instead of blending.
    pub fn is_categorical(&self) -> bool {
        self.categorical
    }

    /// Category `k` of a categorical map (cycling).
    pub fn category(&self, k: usize) -> [f32; 3] {
        self.stops[k % self.stops.len()].1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_load_and_interpolate() {
        for n in names() {
            assert!(Colormap::named(n).unwrap().stops.len() >= 3, "{n}");
        }
        let h = Colormap::named("heat").unwrap();
        assert_eq!(h.at(0.0), [0.0, 0.0, 1.0]);
        assert_eq!(h.at(0.5), [0.0, 1.0, 0.0]);
        assert_eq!(h.at(1.0), [1.0, 0.0, 0.0]);
        assert_eq!(h.at(0.25), [0.0, 0.5, 0.5]);
        assert_eq!(h.at(2.0), [1.0, 0.0, 0.0]);
        assert!(Colormap::named("nope").is_err());
    }
}
