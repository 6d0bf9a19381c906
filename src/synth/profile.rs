//! A synthetic line profile (PerfVisS, paper 004) of the shape real
//! pc-sampling profiles have: procedures of a few dozen to a few hundred
//! lines separated by comment blocks and blank runs (zero rows), most lines
//! cold, a few loop bodies hot, the hottest procedure a solver kernel; the
//! processors imbalanced (a smooth gradient, one straggler with twice the
//! ticks of its neighbours in the kernel, processor 0 doing the I/O).
//! Deterministic for a seed.

use crate::model::{Procedure, ProfileMatrix, ProfileMetric, RowKind};

/// A line profile of `lines` source lines on `processors` processors.
pub fn line_profile(lines: usize, processors: usize, seed: u64) -> ProfileMatrix {
    let mut s = seed ^ 0x9e37_79b9_7f4a_7c15;
    let mut rnd = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 11) as f64 / (1u64 << 53) as f64
    };
    let (nl, np) = (lines.max(1), processors.max(1));
    let names = [
        "main",
        "read_input",
        "setup_mesh",
        "exchange_halo",
        "solve",
        "residual",
        "update",
        "reduce_norm",
        "write_output",
        "finalize",
    ];
    // procedures: a comment block (zero rows), then the body
    let mut procedures = Vec::new();
    let mut kind = vec![0u8; nl]; // 0 comment/blank, 1 cold, 2 loop
    let mut owner = vec![usize::MAX; nl];
    let mut line = 0usize;
    let mut k = 0usize;
    while line < nl {
        let comment = 3 + (rnd() * 12.0) as usize;
        line += comment;
        if line >= nl {
            break;
        }
        let body = (20 + (rnd() * 180.0) as usize).min(nl - line);
        let name = if k < names.len() {
            names[k].to_string()
        } else {
            format!("{}_{}", names[k % names.len()], k / names.len())
        };
        procedures.push(Procedure {
            name,
            first_line: line as i64 + 1,
            last_line: (line + body) as i64,
        });
        for l in line..line + body {
            owner[l] = procedures.len() - 1;
            // blank lines inside a body, and loop bodies of 3..12 lines
            kind[l] = if rnd() < 0.12 { 0 } else { 1 };
        }
        let loops = 1 + (rnd() * 3.0) as usize;
        for _ in 0..loops {
            let a = line + (rnd() * body as f64 * 0.8) as usize;
            let len = 3 + (rnd() * 9.0) as usize;
            for k in &mut kind[a..(a + len).min(line + body)] {
                *k = 2;
            }
        }
        line += body;
        k += 1;
    }
    let straggler = np * 5 / 8;
    let mut values = vec![0.0f64; nl * np];
    for l in 0..nl {
        let Some(pr) = procedures.get(owner[l]) else {
            continue;
        };
        let base = match kind[l] {
            0 => continue,
            1 => 2.0 + rnd() * 20.0,
            _ => 200.0 + rnd() * 800.0,
        };
        let weight = match pr.name.as_str() {
            "solve" | "residual" => 6.0,
            "exchange_halo" => 2.0,
            "read_input" | "write_output" => 0.5,
            _ => 1.0,
        };
        let io = matches!(pr.name.as_str(), "read_input" | "write_output");
        let kernel = pr.name == "solve";
        for p in 0..np {
            let gradient = 0.8 + 0.4 * p as f64 / np as f64;
            let mut v = base * weight * gradient * (0.9 + 0.2 * rnd());
            if kernel && p == straggler {
                v *= 2.0;
            }
            if io {
                v = if p == 0 { v * 8.0 } else { v * 0.05 };
            }
            values[l * np + p] = v.round();
        }
    }
    ProfileMatrix {
        source: std::path::PathBuf::new(),
        format: "line profile table".into(),
        row_kind: RowKind::Line,
        rows: (1..=nl).map(|l| format!("line {l}")).collect(),
        row_ids: (1..=nl as i64).collect(),
        callpath: vec![false; nl],
        groups: vec![String::new(); nl],
        columns: (0..np).map(|p| p.to_string()).collect(),
        metrics: vec![ProfileMetric {
            name: "ticks".into(),
            unit: "ticks".into(),
            values,
        }],
        procedures,
        source_file: Some("solver.f90".into()),
    }
}

/// The profile as a line-profile table (sparse: zero cells are left out).
pub fn write_table(p: &ProfileMatrix, out: &mut impl std::io::Write) -> std::io::Result<()> {
    if let Some(s) = &p.source_file {
        writeln!(out, "# source: {s}")?;
    }
    for pr in &p.procedures {
        writeln!(
            out,
            "# procedure: {} {} {}",
            pr.name, pr.first_line, pr.last_line
        )?;
    }
    writeln!(out, "line,processor,ticks")?;
    let c = p.num_columns();
    if let Some(m) = p.metrics.first() {
        for (r, row) in m.values.chunks(c.max(1)).enumerate() {
            for (q, v) in row.iter().enumerate() {
                if *v != 0.0 {
                    writeln!(out, "{},{q},{v}", p.row_ids[r])?;
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_of_a_real_profile() {
        let p = line_profile(2000, 64, 1);
        assert_eq!((p.num_rows(), p.num_columns()), (2000, 64));
        assert!(p.procedures.len() >= 8);
        let v = &p.metrics[0].values;
        let zero_rows = v.chunks(64).filter(|r| r.iter().all(|x| *x == 0.0)).count();
        assert!(zero_rows > 100 && zero_rows < 1000, "{zero_rows}");
        // deterministic
        assert_eq!(line_profile(2000, 64, 1).metrics[0].values, *v);
    }
}
