#!/usr/bin/python3
"""Writes a large OTF2 archive with the official OTF2 Python writer, for the
OTF2 reader benchmark: RANKS ranks (at most 99) exchange messages in a ring for ITERATIONS
iterations (compute, MPI_Send, MPI_Recv, a metric sample: 9 events each).

usage: write_otf2_large.py ARCHIVE_DIR RANKS ITERATIONS
"""
import sys

import otf2
from otf2.enums import GroupType, Paradigm, RegionRole

path, ranks, iterations = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

with otf2.writer.open(path, timer_resolution=1_000_000_000) as trace:
    d = trace.definitions
    node = d.system_tree_node("node0", class_name="node")
    compute = d.region("compute", region_role=RegionRole.FUNCTION, paradigm=Paradigm.USER)
    send = d.region("MPI_Send", region_role=RegionRole.POINT2POINT, paradigm=Paradigm.MPI)
    recv = d.region("MPI_Recv", region_role=RegionRole.POINT2POINT, paradigm=Paradigm.MPI)
    flops = d.metric("flops", unit="#")
    writers = []
    for r in range(ranks):
        group = d.location_group("rank %d" % r, system_tree_parent=node)
        writers.append(trace.event_writer("thread 0", group=group))
    locations = [w._location for w in writers]
    d.group("world", GroupType.COMM_LOCATIONS, Paradigm.MPI, members=locations)
    world_group = d.group("world ranks", GroupType.COMM_GROUP, Paradigm.MPI, members=list(range(ranks)))
    world = d.comm("MPI_COMM_WORLD", world_group)
    for r, w in enumerate(writers):
        nxt, prv = (r + 1) % ranks, (r - 1) % ranks
        enter, leave, metric = w.enter, w.leave, w.metric
        mpi_send, mpi_recv = w.mpi_send, w.mpi_recv
        for i in range(iterations):
            t = 1000 + i * 1000
            enter(t, compute)
            leave(t + 300 + r, compute)
            enter(t + 400, send)
            mpi_send(t + 401, nxt, world, i % 64, 4096)
            leave(t + 410, send)
            enter(t + 410, recv)
            mpi_recv(t + 500 + r, prv, world, i % 64, 4096)
            leave(t + 600 + r, recv)
            metric(t + 800, flops, float(i * 10))
