#!/usr/bin/python3
"""Writes an OTF2 archive whose events use local ids, translated by each
location's mapping tables, and whose clocks are corrected by its clock
offsets: what the OTF2 library applies when it reads events, for the test
that tapestry's own decoder does the same (Debian: python3-otf2, whose
`_otf2` module is the C library's API).

usage: write_otf2_local.py ARCHIVE_DIR RANKS STEPS SEED [ahead]

Per rank one location. Its regions are numbered locally by a random
permutation of the global ones (a dense region table), its communicators
by a sparse table (local 7 is MPI_COMM_WORLD, local 3 a communicator of
the even ranks), its metric by a dense one. Two or three clock offsets per
location (offsets of thousands of ticks, drifting apart; with `ahead` never
negative, so that no corrected time falls before the clock's offset), the
first before the events, the last after them, so that times are corrected
on lines of different slopes. Messages around a ring on both communicators, a
collective per step, metric samples, attribute lists before some events.
"""
import random
import sys

import _otf2
import otf2
from otf2.enums import GroupType, Paradigm, RegionRole

path = sys.argv[1]
ranks, steps, seed = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
ahead = sys.argv[5:] == ["ahead"]
rng = random.Random(seed)

with otf2.writer.open(path, timer_resolution=1000000000) as trace:
    d = trace.definitions
    machine = d.system_tree_node("machine", class_name="machine")
    names = ["main", "solve", "exchange", "io", "idle", "MPI_Send", "MPI_Recv", "MPI_Allreduce"]
    regions = []
    for n in names:
        mpi = n.startswith("MPI_")
        regions.append(d.region(n, region_role=RegionRole.POINT2POINT if mpi else RegionRole.FUNCTION,
                                paradigm=Paradigm.MPI if mpi else Paradigm.USER))
    metric = d.metric("cycles", unit="#")
    writers = []
    for r in range(ranks):
        group = d.location_group("rank %d" % r, system_tree_parent=machine)
        writers.append(trace.event_writer("master", group=group))
    world_locations = d.group("world", GroupType.COMM_LOCATIONS, Paradigm.MPI,
                              members=[w._location for w in writers])
    world = d.comm("MPI_COMM_WORLD", d.group("world ranks", GroupType.COMM_GROUP, Paradigm.MPI,
                                            members=list(range(ranks))))
    evens = d.comm("evens", d.group("even ranks", GroupType.COMM_GROUP, Paradigm.MPI,
                                   members=list(range(0, ranks, 2))))
    # the metric's instance is the class the high-level writer defines
    metric_ref = metric._ref

    base = 5000000
    for r, w in enumerate(writers):
        h = w.handle
        # local region i is global perm[i]
        perm = list(range(len(regions)))
        rng.shuffle(perm)
        local_of = {g: i for i, g in enumerate(perm)}
        m = _otf2.IdMap_Create(_otf2.ID_MAP_DENSE, len(perm))
        for i, g in enumerate(perm):
            _otf2.IdMap_AddIdPair(m, i, regions[g]._ref)
        _otf2.DefWriter_WriteMappingTable(w._def_handle, _otf2.MAPPING_REGION, m)
        c = _otf2.IdMap_Create(_otf2.ID_MAP_SPARSE, 2)
        _otf2.IdMap_AddIdPair(c, 7, world._ref)
        _otf2.IdMap_AddIdPair(c, 3, evens._ref)
        _otf2.DefWriter_WriteMappingTable(w._def_handle, _otf2.MAPPING_COMM, c)
        mm = _otf2.IdMap_Create(_otf2.ID_MAP_DENSE, 1)
        _otf2.IdMap_AddIdPair(mm, 0, metric_ref)
        _otf2.DefWriter_WriteMappingTable(w._def_handle, _otf2.MAPPING_METRIC, mm)
        # clock offsets: before, (maybe) within, after the events
        end = base + steps * 10000 + 50000
        syncs = [base - 1000, end]
        if r % 2 == 0:
            syncs.insert(1, base + steps * 5000)
        off = rng.randrange(0 if ahead else -4000, 4000)
        for t in syncs:
            _otf2.DefWriter_WriteClockOffset(w._def_handle, t, off, 0.5)
            off += rng.randrange(0 if ahead else -3000, 3000)

        def enter(t, g):
            trace._update_timestamps(t)
            _otf2.EvtWriter_Enter(h, None, t, local_of[g])

        def leave(t, g):
            trace._update_timestamps(t)
            _otf2.EvtWriter_Leave(h, None, t, local_of[g])

        t = base + rng.randrange(100)
        enter(t, 0)
        for s in range(steps):
            t += rng.randrange(50, 900)
            enter(t, 1)
            t += rng.randrange(10, 500)
            if rng.random() < 0.3:
                # an attribute list before the leave
                a = _otf2.AttributeList_New()
                _otf2.AttributeList_AddUint64(a, 0, 42)
                trace._update_timestamps(t)
                _otf2.EvtWriter_Leave(h, a, t, local_of[1])
                _otf2.AttributeList_Delete(a)
            else:
                leave(t, 1)
            enter(t, 5)
            comm = 7 if (r % 2 == 1 or s % 2 == 0) else 3
            peer = (r + 1) % ranks
            if comm == 3:
                peer = ((r // 2 + 1) % ((ranks + 1) // 2))
            _otf2.EvtWriter_MpiSend(h, None, t + 1, peer, comm, s % 4, 64 + s)
            t += rng.randrange(5, 200)
            leave(t, 5)
            enter(t, 6)
            src = (r - 1) % ranks
            if comm == 3:
                src = ((r // 2 - 1) % ((ranks + 1) // 2))
            _otf2.EvtWriter_MpiRecv(h, None, t + 1, src, comm, s % 4, 64 + s)
            t += rng.randrange(5, 200)
            leave(t, 6)
            enter(t, 7)
            _otf2.EvtWriter_MpiCollectiveBegin(h, None, t)
            t += rng.randrange(5, 300)
            _otf2.EvtWriter_MpiCollectiveEnd(h, None, t, otf2.enums.CollectiveOp.ALLREDUCE.value,
                                            7, 0xFFFFFFFF, 8, 8 * ranks)
            leave(t, 7)
            v = _otf2.MetricValue()
            v.floating_point = s * 1000.25 + r
            _otf2.EvtWriter_Metric(h, None, t, 0, [_otf2.TYPE_DOUBLE], [v])
        t += 100
        leave(t, 0)
        trace._update_timestamps(t)
