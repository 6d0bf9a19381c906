#!/usr/bin/python3
"""Writes an OTF2 archive with the untidy things real traces hold, with the
official OTF2 Python writer (Debian: python3-otf2), for the tests that an
OTF2 stream (`--stream`, `reduce`) equals the in-memory reader.

usage: write_otf2_messy.py ARCHIVE_DIR RANKS STEPS TIMER_RESOLUTION GLOBAL_OFFSET SEED

Per rank, a master thread and a second thread (two locations per process),
for STEPS steps of randomly nested regions (two regions share a name, so
one state), zero-length regions, leaves of the wrong region, regions left
open at the end; messages to random ranks with three tags, sizes that change
from message to message and a receive size that sometimes differs from the
send's, sends never received and receives never sent; isends; collectives,
some ending without a begin; two metrics; program begin and end. Times are
ticks after the offset and never go back on a location; with a timer finer
than a nanosecond (e.g. 2400000000), several ticks fall on one nanosecond.
"""
import random
import sys

import otf2
from otf2.enums import CollectiveOp, GroupType, Paradigm, RegionRole

path = sys.argv[1]
ranks, steps = int(sys.argv[2]), int(sys.argv[3])
resolution, offset, seed = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
rng = random.Random(seed)

with otf2.writer.open(path, timer_resolution=resolution) as trace:
    d = trace.definitions
    machine = d.system_tree_node("machine", class_name="machine")
    nodes = [d.system_tree_node("node%d" % i, class_name="node", parent=machine) for i in range(2)]
    user = [d.region(n, region_role=RegionRole.FUNCTION, paradigm=Paradigm.USER)
            for n in ("main", "solve", "dup", "io")]
    # a second region of the name "dup": one state for both
    user.append(d.region("dup", region_role=RegionRole.FUNCTION, paradigm=Paradigm.USER))
    mpi_send = d.region("MPI_Send", region_role=RegionRole.POINT2POINT, paradigm=Paradigm.MPI)
    mpi_recv = d.region("MPI_Recv", region_role=RegionRole.POINT2POINT, paradigm=Paradigm.MPI)
    barrier = d.region("MPI_Barrier", region_role=RegionRole.BARRIER, paradigm=Paradigm.MPI)
    metrics = [d.metric("cycles", unit="#"), d.metric("bytes_read", unit="B")]

    masters, threads = [], []
    for r in range(ranks):
        group = d.location_group("rank %d" % r, system_tree_parent=nodes[r % 2])
        masters.append(trace.event_writer("master", group=group))
        threads.append(trace.event_writer("worker", group=group))
    world_locations = d.group("world", GroupType.COMM_LOCATIONS, Paradigm.MPI,
                              members=[w._location for w in masters])
    world_group = d.group("world ranks", GroupType.COMM_GROUP, Paradigm.MPI,
                          members=list(range(ranks)))
    world = d.comm("MPI_COMM_WORLD", world_group)

    # messages: (send step, src, dst, tag, send bytes, recv step, recv bytes)
    msgs = []
    for s in range(steps):
        for src in range(ranks):
            if rng.random() < 0.5:
                dst = rng.randrange(ranks)
                tag = rng.randrange(3)
                size = rng.choice([8, 8, 8, 64, 4096])
                rsize = size if rng.random() < 0.9 else rng.choice([8, 64, 4096, 65536])
                msgs.append((s, src, dst, tag, size, s + rng.randrange(0, 4), rsize))
    sends = {}
    recvs = {}
    for (s, src, dst, tag, size, rs, rsize) in msgs:
        if rng.random() > 0.03:  # a few sends never received
            sends.setdefault((src, s), []).append((dst, tag, size))
        if rng.random() > 0.03:  # and a few receives never sent
            recvs.setdefault((dst, rs), []).append((src, tag, rsize))

    for r in range(ranks):
        for w, is_master in ((masters[r], True), (threads[r], False)):
            t = offset + rng.randrange(5)
            stack = []

            def tick(n=None):
                global t
                t += rng.randrange(0, 4) if n is None else n
                return t

            w.program_begin(tick(), "prog", [])
            w.enter(tick(), user[0])
            stack.append(user[0])
            for s in range(steps + 4):
                # nest a little: enter, leave, sometimes zero-length
                for _ in range(rng.randrange(3)):
                    if stack and rng.random() < 0.45 and len(stack) > 1:
                        reg = stack.pop()
                        wrong = rng.random() < 0.05
                        w.leave(tick(), user[3] if wrong and reg is not user[3] else reg)
                    else:
                        reg = rng.choice(user[1:])
                        w.enter(tick(), reg)
                        if rng.random() < 0.2:
                            w.leave(tick(0), reg)
                        else:
                            stack.append(reg)
                if is_master:
                    for (dst, tag, size) in sends.get((r, s), []):
                        w.enter(tick(), mpi_send)
                        if rng.random() < 0.3:
                            w.mpi_isend(tick(), dst, world, tag, size, rng.randrange(1 << 30))
                        else:
                            w.mpi_send(tick(), dst, world, tag, size)
                        w.leave(tick(), mpi_send)
                    for (src, tag, size) in recvs.get((r, s), []):
                        w.enter(tick(), mpi_recv)
                        w.mpi_recv(tick(), src, world, tag, size)
                        w.leave(tick(), mpi_recv)
                    if s % 7 == 3:
                        w.enter(tick(), barrier)
                        if rng.random() < 0.9:
                            w.mpi_collective_begin(tick())
                        w.mpi_collective_end(tick(), CollectiveOp.BARRIER, world, 0xFFFFFFFF, 0, 0)
                        w.leave(tick(), barrier)
                if rng.random() < 0.3:
                    m = rng.randrange(2)
                    w.metric(tick(), metrics[m], float(rng.randrange(1000)))
                tick(rng.randrange(20, 60))
            # close all but (on some locations) the innermost regions
            keep_open = rng.randrange(3) if rng.random() < 0.5 else 0
            while len(stack) > keep_open:
                w.leave(tick(), stack.pop())
            if not stack:
                w.program_end(tick(), 0)
