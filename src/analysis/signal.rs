//! Signal processing of performance signals (paper 002 chapter 5, SPEC
//! §3.2): spectra, moving average, auto- and cross-correlation (FFT-based,
//! equal to the direct sums), thresholds, FFT low-pass and decimation,
//! histograms, the Markov model and the indicator sequence.

use std::sync::Arc;

use realfft::{ComplexToReal, RealFftPlanner, RealToComplex};
use rustfft::num_complex::Complex64;
use serde::Serialize;

use crate::error::{Error, Result};

/// The smallest 2^a·3^b·5^c ≥ `n` (a length rustfft transforms fast; the
/// zero padding of correlations needs no power of two).
pub fn fast_len(n: usize) -> usize {
    if n <= 1 {
        return 1;
    }
    let mut best = n.next_power_of_two();
    let mut p5 = 1usize;
    while p5 < best {
        let mut p35 = p5;
        while p35 < best {
            // the smallest power of two that lifts p35 to at least n
            let mut v = p35;
            while v < n {
                v *= 2;
            }
            best = best.min(v);
            match p35.checked_mul(3) {
                Some(x) => p35 = x,
                None => break,
            }
        }
        match p5.checked_mul(5) {
            Some(x) => p5 = x,
            None => break,
        }
    }
    best
}

/// Real FFTs of one length. Plans (twiddle tables: for 10^7 points they
/// cost more than the transform) come from one process-wide planner that
/// keeps them, so repeated analyses of one length plan once — as scipy's
/// plan cache does — and each direction is planned only when used.
struct RealFft {
    len: usize,
}

fn planner() -> std::sync::MutexGuard<'static, RealFftPlanner<f64>> {
    static PLANNER: std::sync::OnceLock<std::sync::Mutex<RealFftPlanner<f64>>> =
        std::sync::OnceLock::new();
    let m = PLANNER.get_or_init(|| std::sync::Mutex::new(RealFftPlanner::new()));
    // a panic while planning leaves the cache usable: take it back
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl RealFft {
    fn new(len: usize) -> Self {
        RealFft { len }
    }

    /// The `len/2 + 1` bins of the real signal `x` (consumed as scratch).
    fn forward(&self, x: &mut [f64]) -> Vec<Complex64> {
        let plan: Arc<dyn RealToComplex<f64>> = planner().plan_fft_forward(self.len);
        let mut out = plan.make_output_vec();
        let mut scratch = plan.make_scratch_vec();
        // lengths always match: the plan was made for x.len()
        let _ = plan.process_with_scratch(x, &mut out, &mut scratch);
        out
    }

    /// The real signal of the bins `spec` (consumed as scratch), unscaled.
    fn inverse(&self, spec: &mut [Complex64]) -> Vec<f64> {
        let plan: Arc<dyn ComplexToReal<f64>> = planner().plan_fft_inverse(self.len);
        let mut out = plan.make_output_vec();
        let mut scratch = plan.make_scratch_vec();
        // a real signal's first (and, for even lengths, last) bin is real
        if let Some(c) = spec.first_mut() {
            c.im = 0.0;
        }
        if out.len() % 2 == 0
            && let Some(c) = spec.last_mut()
        {
            c.im = 0.0;
        }
        let _ = plan.process_with_scratch(spec, &mut out, &mut scratch);
        out
    }
}

/// `x` zero-padded to `len`.
fn padded(x: &[f64], len: usize) -> Vec<f64> {
    let mut v = vec![0.0; len];
    v[..x.len()].copy_from_slice(x);
    v
}

/// A one-sided spectrum: `K = 0..=N/2`.
#[derive(Debug, Clone, Serialize)]
pub struct Spectrum {
    /// Frequency of each bin: Hz for temporal signals, cycles per event
    /// for event-domain signals.
    pub frequency: Vec<f64>,
    /// `|W(K)|`.
    pub magnitude: Vec<f64>,
    /// `|W(K)|² / N`.
    pub power: Vec<f64>,
    pub frequency_unit: String,
}

/// The DFT `W(K) = Σ w(n) e^{−j2πnK/N}` of `w`; `period_s` is the sampling
/// period in seconds (`None` for the event domain: cycles per event).
pub fn spectrum(w: &[f64], period_s: Option<f64>) -> Spectrum {
    let n = w.len();
    let bins: Vec<Complex64> = if n == 0 {
        Vec::new()
    } else {
        // a real-input FFT: the one-sided bins directly
        RealFft::new(n).forward(&mut w.to_vec())
    };
    let scale = match period_s {
        Some(p) => 1.0 / (n as f64 * p),
        None => 1.0 / n.max(1) as f64,
    };
    use rayon::prelude::*;
    let power: Vec<f64> = bins.par_iter().map(|c| c.norm_sqr() / n as f64).collect();
    Spectrum {
        frequency: (0..bins.len())
            .into_par_iter()
            .map(|k| k as f64 * scale)
            .collect(),
        magnitude: power.par_iter().map(|p| (p * n as f64).sqrt()).collect(),
        power,
        frequency_unit: if period_s.is_some() {
            "Hz".into()
        } else {
            "cycles per event".into()
        },
    }
}

/// The causal moving average `y(n) = (1/N) Σ_{k=0}^{N−1} w(n−k)` with a
/// running sum; the first `N − 1` outputs are `None` (not enough history).
pub fn moving_average(w: &[f64], order: usize) -> Result<Vec<Option<f64>>> {
    if order == 0 {
        return Err(Error::Invalid(
            "the moving-average order must be at least 1".into(),
        ));
    }
    let mut out = Vec::with_capacity(w.len());
    // compensated running sum: stays exact to rounding over long signals
    let (mut sum, mut comp) = (0.0f64, 0.0f64);
    let add = |sum: &mut f64, comp: &mut f64, v: f64| {
        let y = v - *comp;
        let t = *sum + y;
        *comp = (t - *sum) - y;
        *sum = t;
    };
    for i in 0..w.len() {
        add(&mut sum, &mut comp, w[i]);
        if i >= order {
            add(&mut sum, &mut comp, -w[i - order]);
        }
        out.push((i + 1 >= order).then(|| sum / order as f64));
    }
    Ok(out)
}

fn centred(x: &[f64], zero_mean: bool) -> Vec<f64> {
    if !zero_mean || x.is_empty() {
        return x.to_vec();
    }
    let m = x.iter().sum::<f64>() / x.len() as f64;
    x.iter().map(|v| v - m).collect()
}

/// The unbiased autocorrelation `γ(l) = (1/(M−l)) Σ_{n=0}^{M−l−1} x(n) x(n+l)`
/// for `l = 0..=max_lag` (at most `M − 1`), optionally of the zero-mean
/// signal; computed with an FFT zero-padded to at least `2M`.
pub fn autocorrelation(x: &[f64], max_lag: usize, zero_mean: bool) -> Vec<f64> {
    let m = x.len();
    if m == 0 {
        return Vec::new();
    }
    let x = centred(x, zero_mean);
    // lags up to max_lag need no more than m + max_lag points (no wrap)
    let lags = max_lag.min(m - 1);
    let size = fast_len(m + lags);
    let fft = RealFft::new(size);
    let mut spec = fft.forward(&mut padded(&x, size));
    for c in spec.iter_mut() {
        *c = Complex64::new(c.norm_sqr(), 0.0);
    }
    let r = fft.inverse(&mut spec);
    (0..=lags)
        .map(|l| r[l] / size as f64 / (m - l) as f64)
        .collect()
}

/// The direct O(M²) autocorrelation (reference for tests and tiny inputs).
pub fn autocorrelation_direct(x: &[f64], max_lag: usize, zero_mean: bool) -> Vec<f64> {
    let m = x.len();
    let x = centred(x, zero_mean);
    (0..=max_lag.min(m.saturating_sub(1)))
        .take(m)
        .map(|l| (0..m - l).map(|n| x[n] * x[n + l]).sum::<f64>() / (m - l) as f64)
        .collect()
}

/// The cross-correlation `γ_wy(l) = Σ_n w(n)·y(n−l)` for `l = 0..N−1`
/// (`N = len(w)`), optionally of the zero-mean signals; FFT-based.
pub fn cross_correlation(w: &[f64], y: &[f64], zero_mean: bool) -> Vec<f64> {
    let (nw, ny) = (w.len(), y.len());
    if nw == 0 || ny == 0 {
        return vec![0.0; nw];
    }
    let (w, y) = (centred(w, zero_mean), centred(y, zero_mean));
    // lags 0..nw need nw + ny − 1 points without wrap-around
    let size = fast_len(nw + ny - 1);
    let fft = RealFft::new(size);
    let mut a = fft.forward(&mut padded(&w, size));
    let b = fft.forward(&mut padded(&y, size));
    for (p, q) in a.iter_mut().zip(&b) {
        *p *= q.conj();
    }
    let r = fft.inverse(&mut a);
    r[..nw].iter().map(|v| v / size as f64).collect()
}

/// Template matching (paper 002 §6.5.4): the normalised cross-covariance
/// of the template `y` with every window of `w` of its length,
/// `c(l) = Σ (w(l+n) − w̄_l)(y(n) − ȳ) / sqrt(Σ (w(l+n) − w̄_l)² · Σ (y(n) − ȳ)²)`
/// for `l = 0..=len(w) − len(y)`: 1 where the window matches the template
/// up to scale and offset, −1 where it is its mirror image; `None` where
/// the window (or the template) is constant. The numerator comes from one
/// FFT cross-correlation, the window sums from prefix sums: O(N log N).
pub fn template_match(w: &[f64], y: &[f64]) -> Result<Vec<Option<f64>>> {
    let (n, m) = (w.len(), y.len());
    if m == 0 || m > n {
        return Err(Error::Invalid(format!(
            "a template of {m} samples cannot be matched against a signal of {n} (it needs 1 to {n})"
        )));
    }
    let ym = y.iter().sum::<f64>() / m as f64;
    let yc: Vec<f64> = y.iter().map(|v| v - ym).collect();
    let yy: f64 = yc.iter().map(|v| v * v).sum();
    // Σ_k w(l+k)·yc(k) is γ_{w,yc}(l) = Σ_n w(n)·yc(n−l) (n = l + k); the
    // window mean drops out because yc sums to zero
    let num = cross_correlation(w, &yc, false);
    let mut s1 = vec![0.0; n + 1];
    let mut s2 = vec![0.0; n + 1];
    for (i, v) in w.iter().enumerate() {
        s1[i + 1] = s1[i] + v;
        s2[i + 1] = s2[i] + v * v;
    }
    Ok((0..=n - m)
        .map(|l| {
            let sum = s1[l + m] - s1[l];
            let ww = (s2[l + m] - s2[l]) - sum * sum / m as f64;
            let den = (ww.max(0.0) * yy).sqrt();
            // below rounding of the sums: a constant window
            let tiny = 1e-12 * (s2[l + m] - s2[l]).abs().max(1e-300) * yy.max(1e-300);
            (den * den > tiny && den > 0.0).then(|| (num[l] / den).clamp(-1.0, 1.0))
        })
        .collect())
}

/// The lags where `c` has a local maximum of at least `min` (plateaus
/// give their first lag).
pub fn peaks(c: &[Option<f64>], min: f64) -> Vec<usize> {
    let v = |i: usize| c[i].unwrap_or(f64::NEG_INFINITY);
    (0..c.len())
        .filter(|&i| {
            v(i) >= min && (i == 0 || v(i - 1) < v(i)) && (i + 1 >= c.len() || v(i + 1) <= v(i))
        })
        .collect()
}

/// The direct cross-correlation (reference).
pub fn cross_correlation_direct(w: &[f64], y: &[f64], zero_mean: bool) -> Vec<f64> {
    let (w, y) = (centred(w, zero_mean), centred(y, zero_mean));
    (0..w.len())
        .map(|l| {
            (l..w.len())
                .filter(|&n| n - l < y.len())
                .map(|n| w[n] * y[n - l])
                .sum()
        })
        .collect()
}

/// Comparison of a threshold.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Comparison {
    Equal(f64),
    AtLeast(f64),
    AtMost(f64),
    /// Inclusive range.
    Between(f64, f64),
}

impl Comparison {
    pub fn test(&self, v: f64) -> bool {
        match *self {
            Comparison::Equal(t) => (v - t).abs() <= 1e-9 * t.abs().max(1.0),
            Comparison::AtLeast(t) => v >= t,
            Comparison::AtMost(t) => v <= t,
            Comparison::Between(a, b) => v >= a && v <= b,
        }
    }

    /// Parses `=X`, `>=X`, `<=X` or `A..B`.
    pub fn parse(s: &str) -> Result<Self> {
        let bad = || {
            Error::Invalid(format!(
                "expected a threshold '=X', '>=X', '<=X' or 'A..B', found '{s}'"
            ))
        };
        let num = |t: &str| {
            t.trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(bad)
        };
        if let Some(t) = s.strip_prefix(">=") {
            Ok(Comparison::AtLeast(num(t)?))
        } else if let Some(t) = s.strip_prefix("<=") {
            Ok(Comparison::AtMost(num(t)?))
        } else if let Some(t) = s.strip_prefix('=') {
            Ok(Comparison::Equal(num(t)?))
        } else if let Some((a, b)) = s.split_once("..") {
            let (a, b) = (num(a)?, num(b)?);
            if b < a {
                return Err(bad());
            }
            Ok(Comparison::Between(a, b))
        } else {
            Err(bad())
        }
    }
}

/// The binary signal where `w(n)` meets the comparison.
pub fn threshold(w: &[f64], c: Comparison) -> Vec<f64> {
    w.iter().map(|&v| c.test(v) as u8 as f64).collect()
}

/// FFT low-pass: keeps the bins with `min(K, N−K) ≤ cutoff` (so the result
/// stays real) and zeroes the others.
pub fn lowpass(w: &[f64], cutoff: usize) -> Vec<f64> {
    let n = w.len();
    if n == 0 {
        return Vec::new();
    }
    let fft = RealFft::new(n);
    let mut spec = fft.forward(&mut w.to_vec());
    // the one-sided bins k ≤ n/2, where min(k, n − k) = k
    for (k, c) in spec.iter_mut().enumerate() {
        if k > cutoff {
            *c = Complex64::new(0.0, 0.0);
        }
    }
    fft.inverse(&mut spec)
        .into_iter()
        .map(|v| v / n as f64)
        .collect()
}

/// Decimation by `alpha`: low-pass to `N/(2α)`, then every α-th sample.
pub fn decimate(w: &[f64], alpha: usize) -> Result<Vec<f64>> {
    if alpha == 0 {
        return Err(Error::Invalid(
            "the decimation factor must be at least 1".into(),
        ));
    }
    let f = lowpass(w, w.len() / (2 * alpha));
    Ok(f.into_iter().step_by(alpha).collect())
}

/// A histogram over `classes` equal classes between `lo` and `hi`.
#[derive(Debug, Clone, Serialize)]
pub struct Histogram {
    /// Class edges (`classes + 1`).
    pub edges: Vec<f64>,
    /// Count (or time, for a time-weighted histogram) per class.
    pub weight: Vec<f64>,
    pub weight_unit: String,
}

fn class_of(v: f64, lo: f64, hi: f64, classes: usize) -> usize {
    if hi <= lo {
        return 0;
    }
    (((v - lo) / (hi - lo) * classes as f64).floor().max(0.0) as usize).min(classes - 1)
}

fn range_of(x: &[f64], range: Option<(f64, f64)>) -> (f64, f64) {
    range.unwrap_or_else(|| {
        let lo = x.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if lo.is_finite() { (lo, hi) } else { (0.0, 1.0) }
    })
}

/// Event-frequency histogram: how many samples of `x` fall in each class
/// ("event-frequency density", thesis §5.3.3).
pub fn histogram(x: &[f64], classes: usize, range: Option<(f64, f64)>) -> Result<Histogram> {
    if classes == 0 {
        return Err(Error::Invalid(
            "a histogram needs at least one class".into(),
        ));
    }
    let (lo, hi) = range_of(x, range);
    let mut weight = vec![0.0; classes];
    for &v in x {
        if v >= lo && v <= hi {
            weight[class_of(v, lo, hi, classes)] += 1.0;
        }
    }
    Ok(Histogram {
        edges: (0..=classes)
            .map(|i| lo + (hi - lo) * i as f64 / classes as f64)
            .collect(),
        weight,
        weight_unit: "events".into(),
    })
}

/// Time-weighted histogram: how long the held signal (value `x[i]` from
/// `time[i]` to `time[i+1]`, the last until `end`) spends in each class (ns).
pub fn time_histogram(
    time: &[u64],
    x: &[f64],
    end: u64,
    classes: usize,
    range: Option<(f64, f64)>,
) -> Result<Histogram> {
    if classes == 0 {
        return Err(Error::Invalid(
            "a histogram needs at least one class".into(),
        ));
    }
    let (lo, hi) = range_of(x, range);
    let mut weight = vec![0.0; classes];
    for i in 0..x.len() {
        let t1 = time.get(i + 1).copied().unwrap_or(end.max(time[i]));
        let v = x[i];
        if v >= lo && v <= hi {
            weight[class_of(v, lo, hi, classes)] += t1.saturating_sub(time[i]) as f64;
        }
    }
    Ok(Histogram {
        edges: (0..=classes)
            .map(|i| lo + (hi - lo) * i as f64 / classes as f64)
            .collect(),
        weight,
        weight_unit: "ns".into(),
    })
}

/// A Markov model of the quantized signal (thesis §5.3.4).
#[derive(Debug, Clone, Serialize)]
pub struct Markov {
    pub edges: Vec<f64>,
    /// Transition counts `counts[i][j]` from state i to state j.
    pub counts: Vec<Vec<u64>>,
    /// Row-normalised transition probabilities; a visited state never left
    /// (the last sample's, seen once) keeps itself with probability 1; rows
    /// of states never visited are 0.
    pub transition: Vec<Vec<f64>>,
    /// The limit distribution of the chain started in the first sample's
    /// state: π = π P, all its mass on the closed classes reached. The
    /// stationary distribution when `unique`.
    pub stationary: Vec<f64>,
    /// Whether each state occurs in the signal.
    pub visited: Vec<bool>,
    /// The communicating classes of the visited states (each sorted,
    /// ordered by their smallest state).
    pub classes: Vec<Vec<usize>>,
    /// Whether each class is closed (no transition leaves it).
    pub closed: Vec<bool>,
    /// Whether the stationary distribution is unique (one closed class).
    pub unique: bool,
}

/// The strongly connected components of the graph `adj` restricted to
/// `nodes` (iterative Kosaraju), each sorted, ordered by their smallest node.
fn components(adj: &[Vec<usize>], nodes: &[usize]) -> Vec<Vec<usize>> {
    let n = adj.len();
    let mut radj = vec![Vec::new(); n];
    for &u in nodes {
        for &v in &adj[u] {
            radj[v].push(u);
        }
    }
    // 1. finishing order of a depth-first search
    let mut seen = vec![false; n];
    let mut order = Vec::new();
    for &s in nodes {
        if seen[s] {
            continue;
        }
        seen[s] = true;
        let mut stack = vec![(s, 0usize)];
        while let Some((u, i)) = stack.pop() {
            if i < adj[u].len() {
                stack.push((u, i + 1));
                let v = adj[u][i];
                if !seen[v] {
                    seen[v] = true;
                    stack.push((v, 0));
                }
            } else {
                order.push(u);
            }
        }
    }
    // 2. the reversed graph in reverse finishing order
    let mut comp = vec![usize::MAX; n];
    let mut out: Vec<Vec<usize>> = Vec::new();
    for &s in order.iter().rev() {
        if comp[s] != usize::MAX {
            continue;
        }
        let c = out.len();
        let mut members = vec![s];
        comp[s] = c;
        let mut stack = vec![s];
        while let Some(u) = stack.pop() {
            for &v in &radj[u] {
                if comp[v] == usize::MAX {
                    comp[v] = c;
                    members.push(v);
                    stack.push(v);
                }
            }
        }
        members.sort_unstable();
        out.push(members);
    }
    out.sort_by_key(|c| c[0]);
    out
}

/// Quantizes `x` into `states` classes, counts transitions between
/// successive samples and computes the stationary distribution.
pub fn markov(x: &[f64], states: usize, range: Option<(f64, f64)>) -> Result<Markov> {
    if states == 0 {
        return Err(Error::Invalid(
            "a Markov model needs at least one state".into(),
        ));
    }
    let (lo, hi) = range_of(x, range);
    let q: Vec<usize> = x
        .iter()
        .map(|&v| class_of(v.clamp(lo, hi), lo, hi, states))
        .collect();
    let mut counts = vec![vec![0u64; states]; states];
    for w in q.windows(2) {
        counts[w[0]][w[1]] += 1;
    }
    let mut visited = vec![false; states];
    for &k in &q {
        visited[k] = true;
    }
    let transition: Vec<Vec<f64>> = counts
        .iter()
        .enumerate()
        .map(|(i, row)| {
            let s: u64 = row.iter().sum();
            if s == 0 {
                // never left: absorbing if visited, nothing if never seen
                (0..states)
                    .map(|j| (visited[i] && i == j) as u8 as f64)
                    .collect()
            } else {
                row.iter().map(|&c| c as f64 / s as f64).collect()
            }
        })
        .collect();
    // communicating classes of the visited states and which are closed
    let nodes: Vec<usize> = (0..states).filter(|&k| visited[k]).collect();
    let adj: Vec<Vec<usize>> = (0..states)
        .map(|i| (0..states).filter(|&j| transition[i][j] > 0.0).collect())
        .collect();
    let classes = components(&adj, &nodes);
    let mut class_of = vec![usize::MAX; states];
    for (c, members) in classes.iter().enumerate() {
        for &m in members {
            class_of[m] = c;
        }
    }
    let closed: Vec<bool> = classes
        .iter()
        .enumerate()
        .map(|(c, members)| {
            members
                .iter()
                .all(|&u| adj[u].iter().all(|&v| class_of[v] == c))
        })
        .collect();
    let unique = closed.iter().filter(|&&c| c).count() == 1;
    // power iteration of the lazy chain (I + P)/2 from the first sample's
    // state: the same limit, and it converges for periodic chains too
    let mut pi = vec![0.0; states];
    if let Some(&first) = q.first() {
        pi[first] = 1.0;
    }
    for _ in 0..200_000 {
        let mut next = vec![0.0; states];
        for i in nodes.iter().copied() {
            if pi[i] == 0.0 {
                continue;
            }
            next[i] += 0.5 * pi[i];
            for &j in &adj[i] {
                next[j] += 0.5 * pi[i] * transition[i][j];
            }
        }
        let diff: f64 = next.iter().zip(&pi).map(|(a, b)| (a - b).abs()).sum();
        pi = next;
        if diff < 1e-15 {
            break;
        }
    }
    Ok(Markov {
        edges: (0..=states)
            .map(|i| lo + (hi - lo) * i as f64 / states as f64)
            .collect(),
        counts,
        transition,
        stationary: pi,
        visited,
        classes,
        closed,
        unique,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markov_on_reducible_chains() {
        // SPEC example (#12): 100 and 50 alternate, then 0 ends the signal
        let x = [100.0, 50.0, 100.0, 50.0, 100.0, 50.0, 0.0];
        let m = markov(&x, 5, Some((0.0, 100.0))).unwrap();
        assert_eq!(m.visited, vec![true, false, true, false, true]);
        assert_eq!(m.classes, vec![vec![0], vec![2, 4]]);
        assert_eq!(m.closed, vec![true, false]);
        assert!(m.unique);
        // all mass ends in the absorbing state reached
        assert!((m.stationary[0] - 1.0).abs() < 1e-9, "{:?}", m.stationary);
        assert_eq!(m.stationary[1] + m.stationary[3], 0.0);
        // an irreducible chain: the classic stationary distribution
        let x = [0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0];
        let m = markov(&x, 2, Some((0.0, 1.0))).unwrap();
        assert_eq!(m.classes, vec![vec![0, 1]]);
        // P = [[0, 1], [1/2, 1/2]] → π = (1/3, 2/3)
        assert!(
            (m.stationary[0] - 1.0 / 3.0).abs() < 1e-9,
            "{:?}",
            m.stationary
        );
        assert!((m.stationary[1] - 2.0 / 3.0).abs() < 1e-9);
        // a periodic chain converges too: 0,1,0,1 → π = (1/2, 1/2)
        let m = markov(&[0.0, 1.0, 0.0, 1.0, 0.0], 2, Some((0.0, 1.0))).unwrap();
        assert!((m.stationary[0] - 0.5).abs() < 1e-9);
    }

    #[test]
    fn moving_average_flags_the_start() {
        let y = moving_average(&[1.0, 2.0, 3.0, 4.0], 2).unwrap();
        assert_eq!(y, vec![None, Some(1.5), Some(2.5), Some(3.5)]);
    }

    #[test]
    fn correlations_match_direct_sums() {
        let x: Vec<f64> = (0..37).map(|i| ((i * 7919) % 13) as f64 - 3.5).collect();
        let y: Vec<f64> = (0..29).map(|i| ((i * 104729) % 11) as f64).collect();
        for zm in [false, true] {
            let a = autocorrelation(&x, 36, zm);
            let b = autocorrelation_direct(&x, 36, zm);
            for (p, q) in a.iter().zip(&b) {
                assert!((p - q).abs() < 1e-9, "{p} {q}");
            }
            let a = cross_correlation(&x, &y, zm);
            let b = cross_correlation_direct(&x, &y, zm);
            assert_eq!(a.len(), b.len());
            for (p, q) in a.iter().zip(&b) {
                assert!((p - q).abs() < 1e-9, "{p} {q}");
            }
        }
    }

    #[test]
    fn fast_lengths_are_the_smallest_5_smooth() {
        let smooth = |mut v: usize| {
            for p in [2, 3, 5] {
                while v.is_multiple_of(p) {
                    v /= p;
                }
            }
            v == 1
        };
        for n in 1..3000usize {
            let want = (n..).find(|&v| smooth(v)).unwrap();
            assert_eq!(fast_len(n), want, "{n}");
        }
        assert_eq!(fast_len(20_000_000), 20_000_000);
        assert_eq!(fast_len(10_001_000), 10_077_696);
    }

    #[test]
    fn correlations_match_direct_sums_at_awkward_lengths() {
        // odd, prime and 5-smooth lengths; lags short and full
        for (m, ny) in [
            (1usize, 1usize),
            (2, 7),
            (97, 31),
            (128, 128),
            (251, 250),
            (1000, 3),
        ] {
            let x: Vec<f64> = (0..m).map(|i| ((i * 7919) % 13) as f64 - 3.5).collect();
            let y: Vec<f64> = (0..ny).map(|i| ((i * 104729) % 11) as f64 * 0.25).collect();
            for lags in [0, 3, m] {
                for zm in [false, true] {
                    let a = autocorrelation(&x, lags, zm);
                    let b = autocorrelation_direct(&x, lags, zm);
                    assert_eq!(a.len(), b.len(), "{m} {lags}");
                    for (p, q) in a.iter().zip(&b) {
                        assert!(
                            (p - q).abs() < 1e-9 * q.abs().max(1.0),
                            "{m} {lags}: {p} {q}"
                        );
                    }
                }
            }
            let a = cross_correlation(&x, &y, true);
            let b = cross_correlation_direct(&x, &y, true);
            assert_eq!(a.len(), b.len());
            for (p, q) in a.iter().zip(&b) {
                assert!((p - q).abs() < 1e-9 * q.abs().max(1.0), "{m}x{ny}: {p} {q}");
            }
        }
    }

    #[test]
    fn lowpass_of_odd_and_even_lengths_matches_the_dft() {
        for n in [1usize, 2, 9, 10, 31, 64] {
            let w: Vec<f64> = (0..n).map(|i| ((i * 37) % 11) as f64 - 2.0).collect();
            for cutoff in [0, 1, n / 3, n] {
                // reference: the full DFT, bins with min(k, n − k) > cutoff zeroed
                let tau = 2.0 * std::f64::consts::PI;
                let spec: Vec<(f64, f64)> = (0..n)
                    .map(|k| {
                        if k.min(n - k) > cutoff {
                            return (0.0, 0.0);
                        }
                        w.iter().enumerate().fold((0.0, 0.0), |(re, im), (t, v)| {
                            let a = -tau * (t * k) as f64 / n as f64;
                            (re + v * a.cos(), im + v * a.sin())
                        })
                    })
                    .collect();
                let want: Vec<f64> = (0..n)
                    .map(|t| {
                        spec.iter().enumerate().fold(0.0, |acc, (k, (re, im))| {
                            let a = tau * (t * k) as f64 / n as f64;
                            acc + re * a.cos() - im * a.sin()
                        }) / n as f64
                    })
                    .collect();
                let got = lowpass(&w, cutoff);
                for (g, e) in got.iter().zip(&want) {
                    assert!((g - e).abs() < 1e-9, "n {n} cutoff {cutoff}: {g} vs {e}");
                }
            }
        }
    }

    #[test]
    fn template_match_is_the_pearson_correlation_of_each_window() {
        let w: Vec<f64> = (0..200)
            .map(|i| ((i * 7919) % 23) as f64 + (i as f64 * 0.3).sin())
            .collect();
        let y: Vec<f64> = w[57..88].iter().map(|v| 3.0 * v - 5.0).collect();
        let c = template_match(&w, &y).unwrap();
        assert_eq!(c.len(), 200 - 31 + 1);
        for l in [0usize, 13, 57, 100, 169] {
            let win = &w[l..l + 31];
            let (mw, my) = (win.iter().sum::<f64>() / 31.0, y.iter().sum::<f64>() / 31.0);
            let num: f64 = win.iter().zip(&y).map(|(a, b)| (a - mw) * (b - my)).sum();
            let da: f64 = win.iter().map(|a| (a - mw).powi(2)).sum();
            let db: f64 = y.iter().map(|b| (b - my).powi(2)).sum();
            let want = num / (da * db).sqrt();
            assert!(
                (c[l].unwrap() - want).abs() < 1e-9,
                "lag {l}: {:?} vs {want}",
                c[l]
            );
        }
        // the window the template came from matches exactly (scale and offset aside)
        assert!((c[57].unwrap() - 1.0).abs() < 1e-9);
        assert_eq!(peaks(&c, 0.999), vec![57]);
        let neg: Vec<f64> = y.iter().map(|v| -v).collect();
        assert!((template_match(&w, &neg).unwrap()[57].unwrap() + 1.0).abs() < 1e-9);
        // constant windows and bad sizes
        let flat = vec![2.0; 50];
        assert!(
            template_match(&flat, &y)
                .unwrap()
                .iter()
                .all(Option::is_none)
        );
        assert!(template_match(&y, &w).is_err());
        assert!(template_match(&w, &[]).is_err());
    }

    #[test]
    fn spectrum_matches_the_dft_sum() {
        let w: Vec<f64> = (0..10).map(|i| (i as f64 * 0.7).sin() + 0.3).collect();
        let s = spectrum(&w, Some(1e-6));
        assert_eq!(s.magnitude.len(), 6);
        for k in 0..6 {
            let (mut re, mut im) = (0.0, 0.0);
            for (n, v) in w.iter().enumerate() {
                let a = -2.0 * std::f64::consts::PI * (n * k) as f64 / 10.0;
                re += v * a.cos();
                im += v * a.sin();
            }
            assert!((s.magnitude[k] - (re * re + im * im).sqrt()).abs() < 1e-9);
        }
        assert!((s.frequency[1] - 1e5).abs() < 1e-6);
    }

    #[test]
    fn lowpass_keeps_slow_parts() {
        let n = 64;
        let slow: Vec<f64> = (0..n)
            .map(|i| (2.0 * std::f64::consts::PI * i as f64 / n as f64).cos())
            .collect();
        let fast: Vec<f64> = (0..n)
            .map(|i| (2.0 * std::f64::consts::PI * 20.0 * i as f64 / n as f64).cos())
            .collect();
        let mix: Vec<f64> = slow.iter().zip(&fast).map(|(a, b)| a + b).collect();
        let f = lowpass(&mix, 2);
        for (a, b) in f.iter().zip(&slow) {
            assert!((a - b).abs() < 1e-9);
        }
        assert_eq!(decimate(&mix, 4).unwrap().len(), 16);
    }

    #[test]
    fn markov_of_an_alternating_signal() {
        let x: Vec<f64> = (0..100).map(|i| (i % 2) as f64).collect();
        let m = markov(&x, 2, None).unwrap();
        assert_eq!(m.transition, vec![vec![0.0, 1.0], vec![1.0, 0.0]]);
        assert!((m.stationary[0] - 0.5).abs() < 1e-9);
    }

    #[test]
    fn thresholds() {
        assert_eq!(Comparison::parse(">=3").unwrap(), Comparison::AtLeast(3.0));
        assert_eq!(
            Comparison::parse("1..2").unwrap(),
            Comparison::Between(1.0, 2.0)
        );
        assert!(Comparison::parse("x").is_err());
        assert_eq!(
            threshold(&[1.0, 5.0, 3.0], Comparison::AtLeast(3.0)),
            vec![0.0, 1.0, 1.0]
        );
    }
}
