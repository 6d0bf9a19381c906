#!/usr/bin/python3
"""Writes a small OTF2 archive whose times are not what Score-P writes, with
the official OTF2 Python writer (Debian: python3-otf2), for the test that
tapestry's in-order OTF2 read hands such archives to its general reader.

usage: write_otf2_untimely.py ARCHIVE_DIR MODE

Three ranks, each: main [0, 300) with compute, MPI_Send (a send around the
ring), MPI_Recv and a metric sample (times in ticks, timer 1 GHz, after
1000). MODE changes one thing:
  backwards  rank 1 leaves compute before it entered it (time goes back:
             the writer refuses that, so the time is patched in the file)
  early      the clock's global offset is 30 ticks after the first events
  late-open  rank 0 enters "io" at 350 and never leaves it, and the clock
             declares the trace over at 300
"""
import sys

import otf2
from otf2.enums import GroupType, Paradigm, RegionRole

path, mode = sys.argv[1], sys.argv[2]
assert mode in ("backwards", "early", "late-open"), mode
O = 1000
ranks = 3

with otf2.writer.open(path, timer_resolution=1_000_000_000) as trace:
    d = trace.definitions
    node = d.system_tree_node("node0", class_name="node")
    main = d.region("main", region_role=RegionRole.FUNCTION, paradigm=Paradigm.USER)
    compute = d.region("compute", region_role=RegionRole.FUNCTION, paradigm=Paradigm.USER)
    io = d.region("io", region_role=RegionRole.FUNCTION, paradigm=Paradigm.USER)
    send = d.region("MPI_Send", region_role=RegionRole.POINT2POINT, paradigm=Paradigm.MPI)
    recv = d.region("MPI_Recv", region_role=RegionRole.POINT2POINT, paradigm=Paradigm.MPI)
    cycles = d.metric("cycles", unit="#")
    writers = []
    for r in range(ranks):
        group = d.location_group("rank %d" % r, system_tree_parent=node)
        writers.append(trace.event_writer("thread 0", group=group))
    d.group("world", GroupType.COMM_LOCATIONS, Paradigm.MPI,
            members=[w._location for w in writers])
    world = d.comm("MPI_COMM_WORLD", d.group("world ranks", GroupType.COMM_GROUP,
                                             Paradigm.MPI, members=list(range(ranks))))
    for r, w in enumerate(writers):
        nxt, prv = (r + 1) % ranks, (r - 1) % ranks
        w.enter(O + 0, main)
        w.enter(O + 10 + r, compute)
        # rank 1's time of leaving compute is its own (patched below)
        w.leave(O + 99 if r == 1 else O + 100, compute)
        w.metric(O + 100, cycles, 10 * r)
        w.enter(O + 100, send)
        w.mpi_send(O + 101, nxt, world, 0, 64)
        w.leave(O + 110, send)
        w.enter(O + 110, recv)
        w.mpi_recv(O + 150 + r, prv, world, 0, 64)
        w.leave(O + 151 + r, recv)
        if mode == "late-open" and r == 0:
            w.enter(O + 350, io)
        else:
            w.leave(O + 300, main)
    # the clock properties are written when the archive closes, from the
    # first and last times the writer saw
    if mode == "early":
        trace._first_timestamp = O + 30
    if mode == "late-open":
        trace._last_timestamp = O + 300

if mode == "backwards":
    # the one timestamp of 1099 ticks (8 bytes, little-endian) becomes 1005
    evt = "%s/traces/1.evt" % path
    data = open(evt, "rb").read()
    old, new = (O + 99).to_bytes(8, "little"), (O + 5).to_bytes(8, "little")
    assert data.count(old) == 1, data.count(old)
    open(evt, "wb").write(data.replace(old, new))
