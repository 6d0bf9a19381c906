//! Performance images (paper 002 chapter 5, SPEC §3.2): the spatial domain
//! S(n0) rendered into an r × c grid, colour indices, and image operations.

use serde::Serialize;

use crate::error::{Error, Result};

/// How locations are placed in the image.
#[derive(Debug, Clone, PartialEq)]
pub enum Layout {
    /// Row-major in location order, `cols` columns (near-square by default).
    Natural { cols: Option<usize> },
    /// Gray-code order of rows and columns (P a power of two): cells that
    /// touch hold processors whose numbers differ in one bit.
    Gray,
    /// P = 2^d: r = 2^⌈d/2⌉ rows, c = 2^⌊d/2⌋ columns, row-major.
    Hypercube,
    /// Any P: c = ⌈√P⌉, r = ⌈P/c⌉, padding cells hold no data.
    NearSquare,
    /// User coordinates: (row, column) per location.
    Coordinates(Vec<(usize, usize)>),
}

/// An image: `rows × cols` cells, each a location's value or no data.
#[derive(Debug, Clone, Serialize)]
pub struct Image {
    pub rows: usize,
    pub cols: usize,
    /// Row-major values; `None` where no location sits.
    pub values: Vec<Option<f64>>,
    /// Row-major location index of each cell (`None` for padding).
    pub location: Vec<Option<u32>>,
}

impl Layout {
    /// A layout by name: natural (with `cols`), gray, hypercube or
    /// near-square.
    pub fn named(name: &str, cols: Option<usize>) -> Result<Layout> {
        Ok(match name {
            "natural" => Layout::Natural { cols },
            "gray" => Layout::Gray,
            "hypercube" => Layout::Hypercube,
            "near-square" => Layout::NearSquare,
            other => {
                return Err(Error::Invalid(format!(
                    "unknown layout '{other}' (layouts: natural, gray, hypercube, near-square, or coordinates from a file)"
                )));
            }
        })
    }

    /// The name of the layout as used.
    pub fn name(&self) -> &'static str {
        match self {
            Layout::Natural { .. } => "natural",
            Layout::Gray => "gray",
            Layout::Hypercube => "hypercube",
            Layout::NearSquare => "near-square",
            Layout::Coordinates(_) => "coordinates",
        }
    }
}

/// User coordinates from a CSV of `location,row,col` lines (a header line
/// starting `location` and `#` comments are skipped), in location order.
pub fn read_coords(path: &std::path::Path) -> Result<Layout> {
    use crate::diagnostics::Position;
    let cannot = |e: std::io::Error| {
        Error::Invalid(format!(
            "cannot read the coordinates {}: {e}",
            path.display()
        ))
    };
    let meta = std::fs::metadata(path).map_err(cannot)?;
    if meta.len() > 1 << 30 {
        return Err(Error::Invalid(format!(
            "{}: a coordinate file of {} bytes is too large",
            path.display(),
            meta.len()
        )));
    }
    let text = crate::readers::input::read_text(path, 1 << 30)?;
    let mut xy: Vec<(usize, usize, usize)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') || l.starts_with("location") {
            continue;
        }
        let f: Vec<&str> = l.split(',').map(str::trim).collect();
        let parsed =
            (f.len() == 3).then(|| (f[0].parse().ok(), f[1].parse().ok(), f[2].parse().ok()));
        match parsed {
            Some((Some(p), Some(r), Some(c))) => xy.push((p, r, c)),
            _ => {
                return Err(Error::parse(
                    path,
                    Position::line(i as u64 + 1),
                    format!("expected 'location,row,col' integers, found '{l}'"),
                ));
            }
        }
    }
    xy.sort();
    Ok(Layout::Coordinates(
        xy.into_iter().map(|(_, r, c)| (r, c)).collect(),
    ))
}

fn gray(i: usize) -> usize {
    i ^ (i >> 1)
}

fn power_of_two_dim(p: usize, what: &str) -> Result<u32> {
    if p == 0 || !p.is_power_of_two() {
        return Err(Error::Invalid(format!(
            "the {what} layout needs a power-of-two number of locations, got {p}"
        )));
    }
    Ok(p.trailing_zeros())
}

/// Places the locations: `(rows, cols, location of each cell)`.
pub fn place(p: usize, layout: &Layout) -> Result<(usize, usize, Vec<Option<u32>>)> {
    let near = |p: usize| {
        let c = (p as f64).sqrt().ceil().max(1.0) as usize;
        (p.div_ceil(c).max(1), c)
    };
    match layout {
        Layout::Natural { cols } => {
            let (r, c) = match cols {
                Some(0) => return Err(Error::Invalid("an image needs at least one column".into())),
                Some(c) => (p.div_ceil(*c).max(1), *c),
                None => near(p),
            };
            Ok((
                r,
                c,
                (0..r * c).map(|i| (i < p).then_some(i as u32)).collect(),
            ))
        }
        Layout::NearSquare => {
            let (r, c) = near(p);
            Ok((
                r,
                c,
                (0..r * c).map(|i| (i < p).then_some(i as u32)).collect(),
            ))
        }
        Layout::Hypercube => {
            let d = power_of_two_dim(p, "hypercube")?;
            let (r, c) = (1usize << d.div_ceil(2), 1usize << (d / 2));
            Ok((r, c, (0..r * c).map(|i| Some(i as u32)).collect()))
        }
        Layout::Gray => {
            let d = power_of_two_dim(p, "Gray-code")?;
            let (rb, cb) = (d.div_ceil(2), d / 2);
            let (r, c) = (1usize << rb, 1usize << cb);
            let cells = (0..r * c)
                .map(|i| Some(((gray(i / c) << cb) | gray(i % c)) as u32))
                .collect();
            Ok((r, c, cells))
        }
        Layout::Coordinates(xy) => {
            if xy.len() != p {
                return Err(Error::Invalid(format!(
                    "{} coordinates given for {p} locations",
                    xy.len()
                )));
            }
            let r = xy.iter().map(|c| c.0).max().map_or(1, |m| m + 1);
            let c = xy.iter().map(|c| c.1).max().map_or(1, |m| m + 1);
            if (r as u64) * (c as u64) > 1 << 28 {
                return Err(Error::Invalid(format!(
                    "an image of {r} x {c} cells is too large"
                )));
            }
            let mut cells = vec![None; r * c];
            for (l, &(y, x)) in xy.iter().enumerate() {
                let cell = &mut cells[y * c + x];
                if cell.is_some() {
                    return Err(Error::Invalid(format!(
                        "two locations share the cell ({y}, {x})"
                    )));
                }
                *cell = Some(l as u32);
            }
            Ok((r, c, cells))
        }
    }
}

/// Renders the spatial domain (one value per location) into an image.
pub fn render(values: &[f64], layout: &Layout) -> Result<Image> {
    let (rows, cols, location) = place(values.len(), layout)?;
    Ok(Image {
        rows,
        cols,
        values: location
            .iter()
            .map(|l| l.map(|l| values[l as usize]))
            .collect(),
        location,
    })
}

/// Colour indices `g = g_min + α (m − m_min)`, `α = (g_max − g_min)/(m_max − m_min)`;
/// `m_range` defaults to the image's range. No-data cells stay `None`.
pub fn color_index(img: &Image, g: (f64, f64), m_range: Option<(f64, f64)>) -> Vec<Option<f64>> {
    let (lo, hi) = m_range.unwrap_or_else(|| stats(img).map_or((0.0, 1.0), |s| (s.min, s.max)));
    let alpha = if hi > lo {
        (g.1 - g.0) / (hi - lo)
    } else {
        0.0
    };
    img.values
        .iter()
        .map(|v| v.map(|m| g.0 + alpha * (m - lo)))
        .collect()
}

/// Difference `G(n_b) − G(n_a)` cell by cell.
pub fn difference(a: &Image, b: &Image) -> Result<Image> {
    if (a.rows, a.cols) != (b.rows, b.cols) {
        return Err(Error::Invalid("images of different sizes".into()));
    }
    Ok(Image {
        rows: a.rows,
        cols: a.cols,
        values: a
            .values
            .iter()
            .zip(&b.values)
            .map(|(x, y)| Some((*y)? - (*x)?))
            .collect(),
        location: a.location.clone(),
    })
}

/// Contrast stretch: maps the image's range onto `[g_min, g_max]`.
pub fn contrast_stretch(img: &Image, g: (f64, f64)) -> Vec<Option<f64>> {
    color_index(img, g, None)
}

/// Mismatch energy `σ² = Σ (G1 − G2)²` over the cells with data in both.
pub fn mismatch_energy(a: &[Option<f64>], b: &[Option<f64>]) -> f64 {
    a.iter()
        .zip(b)
        .filter_map(|(x, y)| Some(((*x)? - (*y)?).powi(2)))
        .sum()
}

/// The mismatch energy of two images (SPEC §3.2): `σ² = Σ (G1 − G2)²`
/// over their colour indices, both mapped with one metric range (`m_range`,
/// else the range of the two images together, so that equal metric values
/// get equal indices); and the same sum over the metric values, for
/// reference. Returns `(colour-index energy, metric energy)`.
pub fn mismatch_energies(
    a: &Image,
    b: &Image,
    g: (f64, f64),
    m_range: Option<(f64, f64)>,
) -> Result<(f64, f64)> {
    if (a.rows, a.cols) != (b.rows, b.cols) {
        return Err(Error::Invalid("images of different sizes".into()));
    }
    let range = m_range.or_else(|| {
        let both: Vec<Option<f64>> = a.values.iter().chain(&b.values).copied().collect();
        stats_of(&both).map(|s| (s.min, s.max))
    });
    let (ga, gb) = (color_index(a, g, range), color_index(b, g, range));
    Ok((
        mismatch_energy(&ga, &gb),
        mismatch_energy(&a.values, &b.values),
    ))
}

/// Hot-spot threshold: `g` where `g ≥ th` (or within `[lo, hi]`), else `g_min`.
pub fn hot_spots(g: &[Option<f64>], lo: f64, hi: Option<f64>, g_min: f64) -> Vec<Option<f64>> {
    g.iter()
        .map(|v| {
            v.map(|x| {
                if x >= lo && hi.is_none_or(|h| x <= h) {
                    x
                } else {
                    g_min
                }
            })
        })
        .collect()
}

/// Binary threshold: `g_max` where `g ≥ th`, else `g_min`.
pub fn binary(g: &[Option<f64>], th: f64, gr: (f64, f64)) -> Vec<Option<f64>> {
    g.iter()
        .map(|v| v.map(|x| if x >= th { gr.1 } else { gr.0 }))
        .collect()
}

/// Statistics of the cells with data.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct ImageStats {
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    pub std: f64,
    pub cells: usize,
}

pub fn stats_of(v: &[Option<f64>]) -> Option<ImageStats> {
    let d: Vec<f64> = v.iter().flatten().copied().collect();
    if d.is_empty() {
        return None;
    }
    let n = d.len() as f64;
    let mean = d.iter().sum::<f64>() / n;
    let var = d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    Some(ImageStats {
        min: d.iter().copied().fold(f64::INFINITY, f64::min),
        max: d.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        mean,
        std: var.sqrt(),
        cells: d.len(),
    })
}

pub fn stats(img: &Image) -> Option<ImageStats> {
    stats_of(&img.values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts() {
        let (r, c, cells) = place(8, &Layout::Hypercube).unwrap();
        assert_eq!((r, c), (4, 2));
        assert_eq!(cells[3], Some(3));
        let (r, c, cells) = place(5, &Layout::NearSquare).unwrap();
        assert_eq!((r, c), (2, 3));
        assert_eq!(cells[5], None);
        let (_, c, cells) = place(16, &Layout::Gray).unwrap();
        // horizontally adjacent cells differ in one bit
        for i in 0..16 {
            if i % c + 1 < c {
                let (a, b) = (cells[i].unwrap(), cells[i + 1].unwrap());
                assert_eq!((a ^ b).count_ones(), 1);
            }
        }
        assert!(place(6, &Layout::Gray).is_err());
        let (r, c, cells) = place(2, &Layout::Coordinates(vec![(1, 2), (0, 0)])).unwrap();
        assert_eq!((r, c), (2, 3));
        assert_eq!(cells[5], Some(0));
    }

    #[test]
    fn color_indices_and_thresholds() {
        let img = render(&[0.0, 0.5, 1.0], &Layout::Natural { cols: Some(2) }).unwrap();
        let g = color_index(&img, (0.0, 255.0), None);
        assert_eq!(g, vec![Some(0.0), Some(127.5), Some(255.0), None]);
        assert_eq!(
            binary(&g, 100.0, (0.0, 255.0)),
            vec![Some(0.0), Some(255.0), Some(255.0), None]
        );
        assert_eq!(
            hot_spots(&g, 100.0, Some(200.0), 0.0),
            vec![Some(0.0), Some(127.5), Some(0.0), None]
        );
        assert_eq!(
            mismatch_energy(&g, &binary(&g, 100.0, (0.0, 255.0))),
            127.5 * 127.5
        );
        let s = stats(&img).unwrap();
        assert_eq!((s.min, s.max, s.mean), (0.0, 1.0, 0.5));
    }

    #[test]
    fn mismatch_energy_is_over_colour_indices_of_one_range() {
        let layout = Layout::Natural { cols: Some(2) };
        let a = render(&[0.0, 0.5, 1.0, 1.0], &layout).unwrap();
        let b = render(&[0.0, 0.5, 0.5, 2.0], &layout).unwrap();
        // one range for both: metric 0..2 onto 0..255
        let (g, m) = mismatch_energies(&a, &b, (0.0, 255.0), None).unwrap();
        let k: f64 = 255.0 / 2.0;
        assert_eq!(g, (0.5 * k).powi(2) + (1.0 * k).powi(2));
        assert_eq!(m, 0.25 + 1.0);
        // an explicit range is used as given
        let (g2, _) = mismatch_energies(&a, &b, (0.0, 1.0), Some((0.0, 4.0))).unwrap();
        assert!((g2 - (0.125f64.powi(2) + 0.25f64.powi(2))).abs() < 1e-12);
        // identical images: zero
        assert_eq!(
            mismatch_energies(&a, &a, (0.0, 255.0), None).unwrap(),
            (0.0, 0.0)
        );
        // images of different shapes are refused
        let c = render(&[1.0; 3], &Layout::Natural { cols: Some(3) }).unwrap();
        assert!(mismatch_energies(&a, &c, (0.0, 255.0), None).is_err());
    }
}
