#!/usr/bin/env python3
"""Writes link/hot-text.ld and link/hot-text.order: the functions that
tapestry's reading commands run, in one block at the front of the binary's
code.

Why: the kernel maps a program's code in windows of 64-128 KiB around each
page it first runs (fault-around), and every mapped page counts in the
process's resident memory. A release build runs ~240 KB of its 19 MB of
code to read a Chrome trace, but that code lay in 92 such windows, so
5.8 MiB of code was resident: 13 % of the 45 MiB model that the read
built. Gathered in one block, the same code takes ~1.5 MiB.

How: each command below runs under valgrind's callgrind on small inputs
that `tapestry synth` writes (and the shared traces when present), on one
thread and on two (rayon takes other paths), and a few reads the way large
traces are read (SCALE_COMMANDS: by 16 ranges on 16 threads, 65,536
processors, an OTF2 archive of 64 locations); the functions it ran are
those callgrind names that are code symbols of the binary, with every
other name of the same code (the compiler merges identical functions).
They are ordered: functions that more commands ran first, then by the
first command that ran them, then as callgrind met them.
- link/hot-text.ld, a linker script, gathers them into `.text.hot` by
  patterns of their section names (`-ffunction-sections` is rustc's
  default), with the part that changes from build to build (the hash of a
  legacy name, a crate's disambiguator in a v0 name) made `*`: the script
  stays valid across builds, profiles and toolchains, and a pattern that
  matches nothing only leaves that function where the linker puts it.
- link/hot-text.order, a symbol ordering file, holds the instances of
  generic functions, whose pattern would also gather many that no command
  ran (`Vec::from_iter` has 800): their exact names, which hold a hash of
  the build's settings, so that a build with other settings (the tests')
  leaves them where they were. lld puts them first in `.text`, right after
  `.text.hot`. As patterns they took the link from 7.6 to 17 s. Those of
  them that ThinLTO made global carry a suffix (`.llvm.N`) that changes
  with any change to their unit's code: they stay patterns, hash kept.

The hash in a generic instance's name also depends on the crate's
features, so the order file holds the names of each build that users make:
the default one, `--features otf2` (what the README builds first) and
`--features otf2,mpi`; a name of another build is not a symbol of this one,
and the linker passes over it. With the default features alone, a build
with `otf2` found 71 of 1,333 names, and its read of a 241 MB Chrome trace
of 512 threads peaked 1.9 MiB higher (57.7 against 55.8 MiB).

build.rs passes both to the linker of the `tapestry` binary (not of tests
or benches). Regenerate after large changes to the readers or the model,
or after a new toolchain or new dependencies:

    python3 scripts/hot-text.py            # builds each, writes link/hot-text.ld and .order
    cargo build --release --features otf2  # links with them
    python3 scripts/hot-text.py --check    # how much of them each build matches

(`--binary PATH`, once or more, profiles binaries already built instead.)

Needs valgrind, nm and readelf (binutils).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(ROOT), "shared", "traces")

# (name, argv after the binary); `{d}` is the scratch directory. Inputs are
# written by the `synth` steps first (not profiled).
SYNTH = [
    ["synth", "bcast", "-p", "64", "--reps", "40", "-o", "{d}/b.json"],
    ["synth", "bcast", "-p", "64", "--reps", "40", "--counters", "4", "-o", "{d}/c.json"],
    ["synth", "bcast", "-p", "64", "--reps", "40", "--counters", "4", "-o", "{d}/c.prv"],
    ["synth", "bcast", "-p", "64", "--reps", "40", "-o", "{d}/b.prv"],
    ["synth", "bcast", "-p", "64", "--reps", "40", "-o", "{d}/b.trf"],
    ["synth", "bcast", "-p", "64", "--reps", "40", "-o", "{d}/g.json.gz"],
    ["synth", "bcast", "-p", "512", "--reps", "160", "-o", "{d}/m.json"],
    ["synth", "bcast", "-p", "512", "--reps", "160", "-o", "{d}/m.json.gz"],
    ["synth", "bcast", "-p", "65536", "--reps", "1", "-o", "{d}/w.json"],
    ["synth", "bcast", "-p", "65536", "--reps", "2", "-o", "{d}/w.prv"],
    ["synth", "bcast", "-p", "65536", "--reps", "1", "-o", "{d}/w.trf"],
]
COMMANDS = [
    ("info chrome", ["info", "{d}/b.json", "--stats"]),
    ("info paraver", ["info", "{d}/b.prv", "--stats"]),
    ("info picl", ["info", "{d}/b.trf", "--stats"]),
    ("info chrome counters", ["info", "{d}/c.json"]),
    ("info paraver counters", ["info", "{d}/c.prv"]),
    ("info gzip", ["info", "{d}/g.json.gz"]),
    ("info stream", ["info", "{d}/b.prv", "--stream"]),
    ("analyze moments", ["analyze", "{d}/b.prv", "moments", "-o", "{d}/m.npy"]),
    ("analyze field", ["analyze", "{d}/b.json", "field", "--bins", "16", "-o", "{d}/f.npy"]),
    ("analyze comm-matrix", ["analyze", "{d}/b.trf", "comm-matrix", "-o", "{d}/x.npy"]),
    ("convert", ["convert", "{d}/b.prv", "-o", "{d}/b.tapestry"]),
    ("info cache", ["info", "{d}/b.tapestry"]),
    ("reduce", ["reduce", "{d}/b.prv", "moments", "-o", "{d}/r.npy"]),
]
# Reads the way large traces are read, where the small inputs above take
# other paths: a Chrome trace cut into 16 byte ranges on 16 threads (as on
# 16 cores; the small traces are one range), and traces of 65,536
# processors (their per-location tables, renumbering and give-backs). Each
# with the environment it sets and the thread counts it runs on. Without
# them a 241 MB Chrome trace of 512 threads read by 16 ranges ran code in
# 2.4 MiB of pages outside the gathered block (60 MiB peak, 1.34x its
# model), and a 341 MB Paraver trace of 65,536 processors on one thread
# in 1.5 MiB.
SCALE_COMMANDS = [
    # which of rayon's job instances run depends on which jobs are stolen:
    # more of them with more work and two thread counts
    ("info chrome ranges", ["info", "{d}/m.json", "--stats"], {"TAPESTRY_CHROME_RANGES": "16"}, [2, 16]),
    # a gzip trace read by ranges through its index (as on 8 cores or
    # more): without it the index's and its readers' code lay where the
    # linker put it, and a 241 MB trace's read touched 0.7 MiB more of the
    # binary when that code changed (2026-12-06)
    ("info chrome gzip ranges", ["info", "{d}/m.json.gz", "--stats"], {"TAPESTRY_CHROME_RANGES": "8"}, [2, 8]),
    ("info chrome 65536", ["info", "{d}/w.json", "--stats"], {}, [1, 2]),
    ("info paraver 65536", ["info", "{d}/w.prv", "--stats"], {}, [1, 2]),
    ("info picl 65536", ["info", "{d}/w.trf", "--stats"], {}, [1, 2]),
    ("info otf2 64 locations", ["info", "{d}/o/traces.otf2", "--stats"], {}, [1, 2, 16]),
]
# An OTF2 archive of 64 locations (16 MB) for the command that reads it,
# written by the official OTF2 Python writer where it is installed
# (scripts/setup.sh); without it that command is left out.
OTF2_ARCHIVE = "{d}/o"
OTF2_WRITER = ["/usr/bin/python3", os.path.join(ROOT, "tests", "data", "write_otf2_large.py"), OTF2_ARCHIVE, "64", "2000"]
SHARED_COMMANDS = [
    ("info otf2", ["info", "{s}/ping-pong-otf2/traces.otf2"]),
    ("info otf2 metrics", ["info", "{s}/ping-pong-otf2-papi/traces.otf2"]),
    ("info lammps", ["info", "{s}/lammps-melt-16/lammps-melt-16.json.gz"]),
    ("info paraver qsort", ["info", "{s}/paraver-qsort/qsort_beo3.prv"]),
]

# The most functions that no command ran which a pattern may gather beside
# those that ran; past it, the names that ran are written whole.
SIBLINGS = 2

LEGACY_HASH = re.compile(r"17h[0-9a-f]{16}E(\.llvm\.\d+)?$")
V0_CRATE = re.compile(r"Cs[0-9A-Za-z]+_")


def code_symbols(binary):
    """The binary's code symbols, each with its address."""
    out = subprocess.run(["nm", binary], capture_output=True, text=True, check=True).stdout
    syms = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tTwW":
            syms[parts[2]] = int(parts[0], 16)
    return syms


def ran(binary, argv, workdir, syms, threads, extra_env=None):
    """The code symbols of `binary` that `argv` ran on `threads` threads
    (with `extra_env` set), in callgrind's order."""
    out = os.path.join(workdir, "callgrind.out")
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads), **(extra_env or {}))
    cmd = ["valgrind", "--tool=callgrind", "--demangle=no", "--callgrind-out-file=" + out, binary] + argv
    r = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed under callgrind:\n{r.stderr[-2000:]}")
    names = []
    seen = set()
    with open(out) as f:
        for line in f:
            m = re.match(r"c?fn=\(\d+\) (\S+)", line)
            if m:
                n = m.group(1).split("'")[0]
                if n in syms and n not in seen:
                    seen.add(n)
                    names.append(n)
    os.remove(out)
    return names


def pattern(symbol):
    """The pattern of a function's name: the parts that change from build to
    build made `*`."""
    if symbol.startswith("_ZN"):
        m = LEGACY_HASH.search(symbol)
        return symbol[: m.start()] + "17h*" if m else symbol
    if symbol.startswith("_R"):
        return V0_CRATE.sub("Cs*_", symbol)
    return symbol


def profile(binary, syms):
    """Each command's functions, in the order callgrind met them."""
    runs = []
    with tempfile.TemporaryDirectory() as d:
        for argv in SYNTH:
            subprocess.run([binary] + [a.format(d=d) for a in argv], check=True, stdout=subprocess.DEVNULL)
        # one thread and several take different paths through rayon
        commands = [(n, [a.format(d=d) for a in argv], {}, [1, 2]) for n, argv in COMMANDS]
        otf2 = subprocess.run([a.format(d=d) for a in OTF2_WRITER], capture_output=True).returncode == 0
        if not otf2:
            print("no OTF2 Python writer: the OTF2 archive of 64 locations is not profiled", file=sys.stderr)
        scale = [c for c in SCALE_COMMANDS if otf2 or not c[1][1].startswith(OTF2_ARCHIVE + "/")]
        commands += [(n, [a.format(d=d) for a in argv], e, t) for n, argv, e, t in scale]
        if os.path.isdir(SHARED):
            commands += [(n, [a.format(s=SHARED) for a in argv], {}, [1, 2]) for n, argv in SHARED_COMMANDS]
        for name, argv, env, threads in commands:
            names = []
            seen = set()
            for t in threads:
                for n in ran(binary, argv, d, syms, t, env):
                    if n not in seen:
                        seen.add(n)
                        names.append(n)
            print(f"{name}: {len(names)} functions", file=sys.stderr)
            runs.append(names)
    return runs


# The feature sets whose builds the layout covers ("" for the default).
FEATURES = ["", "otf2", "otf2,mpi"]


def build(features, into):
    """A release build of the `tapestry` binary with `features`, copied to
    the directory `into`: its path."""
    cmd = ["cargo", "build", "--release", "--bin", "tapestry"]
    if features:
        cmd += ["--features", features]
    print(" ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, cwd=ROOT, check=True)
    path = os.path.join(into, "tapestry-" + (features.replace(",", "-") or "default"))
    shutil.copy2(os.path.join(ROOT, "target", "release", "tapestry"), path)
    return path


def generate(binaries, out_path, runs_path=None):
    """Writes the script and the order file for the functions that the
    commands ran in each of `binaries`: the union of each one's patterns
    and names, the first binary's first."""
    kept = {}
    if runs_path and os.path.exists(runs_path):
        with open(runs_path) as f:
            kept = json.load(f)
    patterns, exact, counts = [], [], []
    for binary in binaries:
        syms = code_symbols(binary)
        key = os.path.basename(binary)
        if key not in kept:
            kept[key] = profile(binary, syms)
            if runs_path:
                with open(runs_path, "w") as f:
                    json.dump(kept, f)
        p, e, n = layout(syms, kept[key])
        patterns += p
        exact += e
        counts.append(n)
    patterns = list(dict.fromkeys(patterns))
    exact = list(dict.fromkeys(exact))
    write(out_path, patterns, exact)
    print(
        f"{len(patterns)} patterns -> {out_path}, {len(exact)} instances of generic functions "
        f"-> {order_path(out_path)}, from {' + '.join(map(str, counts))} functions of "
        f"{len(binaries)} builds",
        file=sys.stderr,
    )


def layout(syms, runs):
    """The patterns and the exact names for the functions that `runs` (each
    command's functions, in order) ran among `syms`: and how many ran."""
    rank = {}
    for ci, names in enumerate(runs):
        for order, n in enumerate(names):
            used, first, pos = rank.get(n, (0, ci, order))
            rank[n] = (used + 1, first, pos)
    ordered = sorted(rank, key=lambda n: (-rank[n][0], rank[n][1], rank[n][2]))
    # the compiler merges functions whose code is the same: one section, named
    # after one of them, under several names, of which callgrind shows one
    # (`File::try_clone` is `UnixListener::try_clone`)
    names_at = {}
    for n, a in syms.items():
        names_at.setdefault(a, []).append(n)
    ordered = list(dict.fromkeys(a for n in ordered for a in [n] + sorted(names_at[syms[n]])))
    # a pattern that would also gather many functions that no command ran
    # (the other instances of a generic function: `Vec::from_iter` has 800)
    # is written as the names that ran, their hash kept
    siblings = {}
    for s in syms:
        siblings.setdefault(pattern(s), []).append(s)
    ran_of = {}
    for n in ordered:
        ran_of.setdefault(pattern(n), []).append(n)
    patterns = []
    exact = []
    for n in ordered:
        p = pattern(n)
        if len(siblings.get(p, ())) <= len(ran_of[p]) + SIBLINGS:
            patterns.append(p)
        elif ".llvm." in n:
            # a local function made global for the link: the suffix comes
            # from its unit's code and changes with any change there, so
            # its hash is kept in a pattern and the suffix left free
            patterns.append(n.split(".llvm.")[0] + "*")
        else:
            exact.append(n)
    return list(dict.fromkeys(patterns)), exact, len(rank)


def write(out_path, patterns, exact):
    """The linker script and the order file."""
    with open(out_path, "w") as f:
        f.write("/* Generated by scripts/hot-text.py: the functions that tapestry's reading\n")
        f.write("   commands ran, gathered at the front of the binary's code so that the\n")
        f.write("   pages a read maps are few. Regenerate with that script; see its doc. */\n")
        f.write("SECTIONS {\n  .text.hot : {\n")
        for p in patterns:
            # a function the compiler deems cold (`#[cold]`, or on a panic's
            # path only) is in `.text.unlikely.NAME`
            f.write(f"    *(.text.{p} .text.unlikely.{p})\n")
        f.write("  }\n}\nINSERT BEFORE .text;\n")
    with open(order_path(out_path), "w") as f:
        f.write("".join(n + "\n" for n in exact))


def order_path(script):
    """The symbol ordering file beside the script."""
    return os.path.splitext(script)[0] + ".order"


def check(binary, script):
    """How many of the script's patterns match a code symbol of `binary`,
    and the size of its .text.hot section."""
    import fnmatch

    syms = code_symbols(binary)
    pats = [l.split()[0][len("*(.text.") :] for l in open(script) if l.strip().startswith("*(")]
    by_prefix = {}
    for s in syms:
        by_prefix.setdefault(s[:8], []).append(s)
    matched = 0
    for p in pats:
        cands = by_prefix.get(p[:8], []) if "*" not in p[:8] else syms
        if any(fnmatch.fnmatchcase(c, p) for c in cands):
            matched += 1
    out = subprocess.run(["readelf", "-SW", binary], capture_output=True, text=True).stdout
    # "  [16] .text.hot PROGBITS addr offset size ...": the fields after "]"
    hot = [l.split("]", 1)[1].split() for l in out.splitlines() if "]" in l and " .text.hot " in l]
    size = int(hot[0][4], 16) if hot else 0
    names = [l.strip() for l in open(order_path(script)) if l.strip()]
    found = sum(1 for n in names if n in syms)
    print(
        f"{matched} of {len(pats)} patterns match a function of {binary}; .text.hot is {size} bytes; "
        f"{found} of {len(names)} names of {order_path(script)} are its symbols"
    )
    return matched, len(pats)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--binary",
        action="append",
        help="a release build to profile (again for several); by default each of "
        + ", ".join(f or "the default" for f in FEATURES)
        + " is built",
    )
    ap.add_argument("--out", default=os.path.join(ROOT, "link", "hot-text.ld"))
    ap.add_argument("--check", action="store_true", help="report how much of --out each binary matches")
    ap.add_argument("--runs", help="keep the commands' functions in this JSON file (or read them from it)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        binaries = a.binary or [build(f, d) for f in FEATURES]
        for b in binaries if a.check else []:
            check(b, a.out)
        if not a.check:
            generate(binaries, a.out, a.runs)


if __name__ == "__main__":
    main()
