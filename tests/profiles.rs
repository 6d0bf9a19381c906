//! TAU profiles and line-profile tables: small hand-made examples with exact
//! expectations, and malformed ones.

mod common;

use common::{tapestry, write};
use tapestry::model::RowKind;
use tapestry::readers::{self, Loaded, ReadOptions, line_profile, tau};

const T000: &str = r#"3 templated_functions_MULTI_TIME
# Name Calls Subrs Excl Incl ProfileCalls # <metadata><attribute><name>Metric Name</name><value>TIME</value></attribute></metadata>
"main" 1 2 10 100 0 GROUP="TAU_DEFAULT"
"compute" 4 0 80 80 0 GROUP="TAU_USER"
"main => compute" 4 0 80 80 0 GROUP="TAU_CALLPATH"
0 aggregates
0 userevents
"#;

const T010: &str = r#"2 templated_functions_MULTI_TIME
# Name Calls Subrs Excl Incl ProfileCalls #
"main" 1 1 5 50 0 GROUP="TAU_DEFAULT"
"MPI_Recv()" 3 0 45 45 0 GROUP="MPI"
0 aggregates
"#;

#[test]
fn tau_profile_directory() {
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "profile.0.0.0", T000.as_bytes());
    write(d.path(), "profile.1.0.0", T010.as_bytes());
    let p = tau::read(d.path()).unwrap();
    assert_eq!(p.row_kind, RowKind::Function);
    assert_eq!(
        p.rows,
        vec!["main", "compute", "main => compute", "MPI_Recv()"]
    );
    assert_eq!(p.callpath, vec![false, false, true, false]);
    assert_eq!(p.columns, vec!["0,0,0", "1,0,0"]);
    let names: Vec<_> = p.metrics.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(
        names,
        vec!["calls", "subroutines", "exclusive TIME", "inclusive TIME"]
    );
    let excl = p.metric("exclusive TIME").unwrap();
    assert_eq!(excl.unit, "us");
    // rows × columns, row-major; absent functions are 0
    assert_eq!(
        excl.values,
        vec![10.0, 5.0, 80.0, 0.0, 80.0, 0.0, 0.0, 45.0]
    );
    assert_eq!(
        p.metric("calls").unwrap().values,
        vec![1.0, 1.0, 4.0, 0.0, 4.0, 0.0, 0.0, 3.0]
    );
    assert_eq!(p.groups[3], "MPI");
    // column totals exclude call paths
    assert_eq!(p.column_totals(p.primary_metric()), vec![90.0, 50.0]);
    // a single profile file reads its whole directory, and info describes it
    let (code, out, err) = tapestry(&["info", d.path().join("profile.0.0.0").to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("dimensions 4 functions (1 of them call paths) x 2 threads"),
        "{out}"
    );
    assert!(out.contains("hottest functions by exclusive TIME"), "{out}");
    let first_hot = out
        .lines()
        .skip_while(|l| !l.starts_with("hottest"))
        .nth(1)
        .unwrap();
    assert!(
        first_hot.contains("compute") && first_hot.contains("57.143 %"),
        "{first_hot}"
    );
    let (code, out, _) = tapestry(&["info", "--json", d.path().to_str().unwrap()]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["rows"], 4);
    assert_eq!(v["metrics"][2]["total"], 140.0);
}

#[test]
fn tau_multiple_metrics() {
    let d = tempfile::tempdir().unwrap();
    for (m, scale) in [("TIME", 1.0), ("PAPI_FP_OPS", 1000.0)] {
        let sub = d.path().join(format!("MULTI__{m}"));
        std::fs::create_dir(&sub).unwrap();
        let text = format!(
            "1 templated_functions_MULTI_{m}\n# Name Calls Subrs Excl Incl ProfileCalls #\n\"main\" 1 0 {} {} 0 GROUP=\"TAU_DEFAULT\"\n0 aggregates\n",
            7.0 * scale,
            7.0 * scale
        );
        write(&sub, "profile.0.0.0", text.as_bytes());
    }
    let Loaded::Profile(p) = readers::load(d.path(), &ReadOptions::default()).unwrap() else {
        panic!("a profile")
    };
    let names: Vec<_> = p.metrics.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(
        names,
        vec![
            "calls",
            "subroutines",
            "exclusive PAPI_FP_OPS",
            "inclusive PAPI_FP_OPS",
            "exclusive TIME",
            "inclusive TIME"
        ]
    );
    assert_eq!(
        p.metric("exclusive PAPI_FP_OPS").unwrap().values,
        vec![7000.0]
    );
    assert_eq!(p.metric("exclusive TIME").unwrap().unit, "us");
}

#[test]
fn tau_malformed() {
    let cases: &[(&str, &[&str])] = &[
        (
            "x templated_functions_MULTI_TIME\n",
            &["line 1", "number of functions"],
        ),
        ("2 functions\n", &["line 1", "templated_functions"]),
        ("99999999999 templated_functions\n", &["line 1", "absurd"]),
        ("1 templated_functions\nName\n", &["line 2", "# Name"]),
        (
            "2 templated_functions\n# Name Calls Subrs Excl Incl ProfileCalls #\n\"a\" 1 0 1 1 0 GROUP=\"g\"\n",
            &["line 4", "2 function lines, found 1"],
        ),
        (
            "1 templated_functions\n# Name Calls Subrs Excl Incl ProfileCalls #\n\"a\" 1 0 abc 1 0 GROUP=\"g\"\n",
            &["line 3", "'abc'"],
        ),
        (
            "1 templated_functions\n# Name Calls Subrs Excl Incl ProfileCalls #\n\"a\" 1 0 NaN 1 0 GROUP=\"g\"\n",
            &["line 3", "'NaN'"],
        ),
        (
            "1 templated_functions\n# Name Calls Subrs Excl Incl ProfileCalls #\na 1 0 1 1 0\n",
            &["line 3", "quoted"],
        ),
    ];
    for (text, want) in cases {
        let d = tempfile::tempdir().unwrap();
        let f = write(d.path(), "profile.0.0.0", text.as_bytes());
        let e = tau::read(d.path()).unwrap_err().to_string();
        assert!(e.contains(f.to_str().unwrap()), "{e}");
        for w in *want {
            assert!(e.contains(w), "'{w}' missing in: {e}");
        }
        let (code, _, err) = tapestry(&["info", d.path().to_str().unwrap()]);
        assert_eq!(code, 1, "{err}");
    }
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join("MULTI__TIME")).unwrap();
    let e = tau::read(d.path()).unwrap_err().to_string();
    assert!(e.contains("found none"), "{e}");
}

const LINES: &str = "\
# source: solver.c
# procedure: main 10 12
# procedure: update 13 20
line,processor,ticks
10,0,5
12,1,7
12,1,1
20,2,30
";

#[test]
fn line_profile_table() {
    let d = tempfile::tempdir().unwrap();
    let f = write(d.path(), "lines.csv", LINES.as_bytes());
    let p = line_profile::read(&f).unwrap();
    assert_eq!(p.row_kind, RowKind::Line);
    assert_eq!(p.row_ids, (10..=20).collect::<Vec<i64>>());
    assert_eq!(p.columns, vec!["0", "1", "2"]);
    let t = &p.metrics[0].values;
    assert_eq!(t.len(), 11 * 3);
    assert_eq!((t[0], t[2 * 3 + 1], t[10 * 3 + 2]), (5.0, 8.0, 30.0));
    assert_eq!(t.iter().sum::<f64>(), 43.0);
    assert_eq!(p.source_file.as_deref(), Some("solver.c"));
    assert_eq!(p.procedures.len(), 2);
    assert_eq!(p.procedures[1].first_line, 13);
    // TSV with columns in another order, detected from the content
    let tsv = "ticks\tline\tprocessor\textra\n3\t1\t0\tx\n4\t2\t1\ty\n";
    let f2 = write(d.path(), "lines.data", tsv.as_bytes());
    let Loaded::Profile(p2) = readers::load(&f2, &ReadOptions::default()).unwrap() else {
        panic!("a profile")
    };
    assert_eq!(p2.metrics[0].values, vec![3.0, 0.0, 0.0, 4.0]);
    let (code, out, err) = tapestry(&["info", f.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("dimensions 11 lines x 3 processors"), "{out}");
    assert!(out.contains("line 20 [update]"), "{out}");
    // processors numbered far apart: only the sampled ones are columns
    // (a dense 16,777,216-column matrix took 1.4 GB; found by the fuzz
    // harness)
    let far = "line,processor,ticks\n14,0,14\n14,16777215,17\n15,3,2\n";
    let f3 = write(d.path(), "far.csv", far.as_bytes());
    let p3 = line_profile::read(&f3).unwrap();
    assert_eq!(p3.columns, vec!["0", "3", "16777215"]);
    assert_eq!(p3.metrics[0].values, vec![14.0, 0.0, 17.0, 0.0, 2.0, 0.0]);
}

#[test]
fn line_profile_malformed() {
    let cases: &[(&str, &[&str])] = &[
        (
            "line,processor,ticks\n1,x,3\n",
            &["line 2", "processor number", "'x'"],
        ),
        (
            "line,processor,ticks\n1,0,-3\n",
            &["line 2", "non-negative tick"],
        ),
        ("line,processor,ticks\n1,0\n", &["line 2", "ticks column"]),
        (
            "line,processor,ticks\n99999999999,0,1\n",
            &["line 2", "line number"],
        ),
        (
            "line,processor,ticks\n1,999999999,1\n",
            &["line 2", "processor number below"],
        ),
        (
            // 65,536 lines × 65,536 processors, dense (processors far
            // apart are sparse columns: see line_profile_table)
            "line,processor,ticks\n0,0,1\n65535,65535,1\n",
            &["exceeds"],
        ),
        (
            "# procedure: f 9 3\nline,processor,ticks\n1,0,1\n",
            &["line 1", "ends"],
        ),
        ("line,processor,ticks\n", &["no", "samples"]),
    ];
    for (text, want) in cases {
        let d = tempfile::tempdir().unwrap();
        let f = write(d.path(), "p.csv", text.as_bytes());
        let e = line_profile::read(&f).unwrap_err().to_string();
        assert!(e.contains(f.to_str().unwrap()), "{e}");
        for w in *want {
            assert!(
                e.to_lowercase().contains(&w.to_lowercase()),
                "'{w}' missing in: {e}"
            );
        }
        let (code, _, _) = tapestry(&["info", f.to_str().unwrap()]);
        assert_eq!(code, 1);
    }
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// A byte-order mark, bare-CR or CRLF line ends and gzip are read like the
/// plain table (each used to be refused or misread), for line profiles and
/// TAU profiles alike.
#[test]
fn bom_line_ends_and_gzip_everywhere() {
    let d = tempfile::tempdir().unwrap();
    let plain = line_profile::read(&write(d.path(), "plain.csv", LINES.as_bytes())).unwrap();
    let variants: Vec<(&str, Vec<u8>)> = vec![
        (
            "bom.csv",
            [b"\xEF\xBB\xBF".as_slice(), LINES.as_bytes()].concat(),
        ),
        ("cr.csv", LINES.replace('\n', "\r").into_bytes()),
        ("crlf.csv", LINES.replace('\n', "\r\n").into_bytes()),
        ("gz.csv", gzip(LINES.as_bytes())),
        (
            "bomgz.csv",
            gzip(&[b"\xEF\xBB\xBF".as_slice(), LINES.as_bytes()].concat()),
        ),
    ];
    for (name, bytes) in variants {
        let f = write(d.path(), name, &bytes);
        let Loaded::Profile(p) =
            readers::load(&f, &ReadOptions::default()).unwrap_or_else(|e| panic!("{name}: {e}"))
        else {
            panic!("{name}: not a profile")
        };
        assert_eq!(p.metrics[0].values, plain.metrics[0].values, "{name}");
        assert_eq!(p.procedures.len(), 2, "{name}");
    }
    // invalid UTF-8 is refused at its byte offset
    let f = write(d.path(), "bad.csv", b"line,processor,ticks\n1,0,\xff\n");
    let e = line_profile::read(&f).unwrap_err().to_string();
    assert!(e.contains("byte 25") && e.contains("UTF-8"), "{e}");
    // a gzip-compressed TAU profile
    let t = tempfile::tempdir().unwrap();
    write(t.path(), "profile.0.0.0", &gzip(T000.as_bytes()));
    write(t.path(), "profile.1.0.0", T010.as_bytes());
    let p = tau::read(t.path()).unwrap();
    assert_eq!(p.columns, vec!["0,0,0", "1,0,0"]);
    assert_eq!(
        p.metric("calls").unwrap().values,
        vec![1.0, 1.0, 4.0, 0.0, 4.0, 0.0, 0.0, 3.0]
    );
}

/// Profiles are read inside their directory: a `profile.*` that is a link
/// to a file outside it is refused, not read.
#[cfg(unix)]
#[test]
fn tau_links_out_of_the_directory_are_refused() {
    let outside = tempfile::tempdir().unwrap();
    let secret = write(outside.path(), "secret", T010.as_bytes());
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "profile.0.0.0", T000.as_bytes());
    std::os::unix::fs::symlink(&secret, d.path().join("profile.1.0.0")).unwrap();
    let e = tau::read(d.path()).unwrap_err().to_string();
    assert!(e.contains("outside the profile's directory"), "{e}");
    // a link inside the directory is fine
    let d2 = tempfile::tempdir().unwrap();
    write(d2.path(), "profile.0.0.0", T000.as_bytes());
    write(d2.path(), "data", T010.as_bytes());
    std::os::unix::fs::symlink(d2.path().join("data"), d2.path().join("profile.1.0.0")).unwrap();
    assert_eq!(tau::read(d2.path()).unwrap().columns.len(), 2);
}

/// Two samples 268 M lines apart make two rows, not 268 M (24 GB); a span
/// of ordinary size keeps every line, the unsampled ones as zero rows.
#[test]
fn far_apart_lines_are_sparse_rows() {
    let d = tempfile::tempdir().unwrap();
    let f = write(
        d.path(),
        "sp.csv",
        b"line,processor,ticks\n1,0,1\n268435456,1,2\n",
    );
    let p = line_profile::read(&f).unwrap();
    assert_eq!(p.row_ids, vec![1, 268_435_456]);
    assert_eq!(p.metrics[0].values, vec![1.0, 0.0, 0.0, 2.0]);
    assert_eq!(p.rows[1], "line 268435456");
    let (code, out, err) = tapestry(&["info", f.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("dimensions 2 lines x 2 processors"), "{out}");
    let f = write(
        d.path(),
        "dense.csv",
        b"line,processor,ticks\n1,0,1\n5000,0,2\n",
    );
    assert_eq!(line_profile::read(&f).unwrap().row_ids.len(), 5000);
}
