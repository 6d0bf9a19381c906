"""Reads a tapestry cache directory with pyarrow alone (no tapestry code) and
prints, as JSON, what tests/cache.rs compares with the trace model: the rows
of every table, the time in each state (ns, by state name), the bytes of all
messages, and the number of global events.

usage: python3 cache_check.py DIR
"""
import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc


def table(d, name):
    with pa.memory_map(str(d / f"{name}.arrow")) as src:
        return ipc.open_file(src).read_all()


def main(d):
    d = Path(d)
    meta = json.loads((d / "tapestry.json").read_text())
    rows = {name: table(d, name).num_rows for name in meta["rows"]}
    states = table(d, "states")
    iv = table(d, "intervals")
    dur = pc.subtract(iv["end_ns"], iv["start_ns"])
    per_state = {}
    names = states["name"].to_pylist()
    by = pa.table({"state": iv["state"], "dur": dur}).group_by("state").aggregate([("dur", "sum")])
    for s, t in zip(by["state"].to_pylist(), by["dur_sum"].to_pylist()):
        per_state[names[s]] = t
    msg = table(d, "messages")
    ev = table(d, "events")
    out = {
        "rows": rows,
        "declared_rows": meta["rows"],
        "time_per_state_ns": per_state,
        "message_bytes": pc.sum(msg["bytes"]).as_py() or 0,
        "global_events": ev["location"].null_count,
        "span_ns": meta["span_ns"],
    }
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main(sys.argv[1])
