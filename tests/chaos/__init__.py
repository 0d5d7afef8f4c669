"""kill -9 chaos: real nodes with AOFs crash and restart under a load of
ADDJOB, GETJOB and ACKJOB/FASTACK (some acked late, some never). With
``--faults stop`` or ``--faults kill,stop`` nodes are also frozen (SIGSTOP
for 0.5-5 s, then SIGCONT), as a long GC pause or a partition looks to
their peers.

Checks: every ADDJOB answered with an ID is delivered at least once
(nothing the broker acknowledged is lost), no node exits unasked, and once
everything is consumed the ack GC frees every job on every node.

A long run (node dirs are kept, and printed, when it fails; exit status 1):

    .venv/bin/python -m tests.chaos --nodes 5 --replicate 3 --duration 300 \\
        --fsync always --seed 7

prints a JSON summary: answered adds, deliveries, acks, kills, stops, lost
bodies, redeliveries after an answered ACKJOB. tests/cluster/test_chaos.py
is a short run in the normal suite.
"""
