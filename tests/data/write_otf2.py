#!/usr/bin/python3
"""Writes a small OTF2 archive with known contents, with the official OTF2
Python writer (Debian: python3-otf2), for tapestry's OTF2 reader tests.

usage: write_otf2.py ARCHIVE_DIR RANKS TIMER_RESOLUTION GLOBAL_OFFSET_TICKS

Per rank r (times in ticks after the offset O):
  main        [0, 400)
  compute     [10 + r, 100)
  MPI_Send    [100, 110) with a send to (r + 1) % P at 101, tag r, 1000 (r + 1) bytes
  MPI_Recv    [110, 151 + r) with the receive from (r - 1) % P at 150 + r
  MPI_Allreduce [200, 251 + r) with collective begin 200 and end 250 + r
  metric "cycles" = 0 at 0 and 1000 (r + 1) at 300; program begin at 0, end at 400
"""
import sys

import otf2
from otf2.enums import CollectiveOp, GroupType, Paradigm, RegionRole

path, ranks, resolution, offset = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])

with otf2.writer.open(path, timer_resolution=resolution) as trace:
    d = trace.definitions
    machine = d.system_tree_node("machine", class_name="machine")
    node = d.system_tree_node("node0", class_name="node", parent=machine)
    main = d.region("main", region_role=RegionRole.FUNCTION, paradigm=Paradigm.USER)
    compute = d.region("compute", region_role=RegionRole.FUNCTION, paradigm=Paradigm.USER)
    send = d.region("MPI_Send", region_role=RegionRole.POINT2POINT, paradigm=Paradigm.MPI)
    recv = d.region("MPI_Recv", region_role=RegionRole.POINT2POINT, paradigm=Paradigm.MPI)
    allreduce = d.region("MPI_Allreduce", region_role=RegionRole.COLL_ALL2ALL, paradigm=Paradigm.MPI)
    cycles = d.metric("cycles", unit="#")

    writers = []
    for r in range(ranks):
        group = d.location_group("rank %d" % r, system_tree_parent=node)
        writers.append(trace.event_writer("thread 0", group=group))
    locations = [w._location for w in writers]
    world_locations = d.group("world", GroupType.COMM_LOCATIONS, Paradigm.MPI, members=locations)
    world_group = d.group("world ranks", GroupType.COMM_GROUP, Paradigm.MPI, members=list(range(ranks)))
    world = d.comm("MPI_COMM_WORLD", world_group)

    for r, w in enumerate(writers):
        O = offset
        nxt, prv = (r + 1) % ranks, (r - 1) % ranks
        w.program_begin(O + 0, "prog", [])
        w.metric(O + 0, cycles, 0)
        w.enter(O + 0, main)
        w.enter(O + 10 + r, compute)
        w.leave(O + 100, compute)
        w.enter(O + 100, send)
        w.mpi_send(O + 101, nxt, world, r, 1000 * (r + 1))
        w.leave(O + 110, send)
        w.enter(O + 110, recv)
        w.mpi_recv(O + 150 + r, prv, world, prv, 1000 * (prv + 1))
        w.leave(O + 151 + r, recv)
        w.enter(O + 200, allreduce)
        w.mpi_collective_begin(O + 200)
        w.mpi_collective_end(O + 250 + r, CollectiveOp.ALLREDUCE, world, 0xFFFFFFFF, 8, 8)
        w.leave(O + 251 + r, allreduce)
        w.metric(O + 300, cycles, 1000 * (r + 1))
        w.leave(O + 400, main)
        w.program_end(O + 400, 0)
