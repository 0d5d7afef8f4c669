"""A command's time histogram (the /metrics family): the latest calls in
one slot are counted apart (Command.count_time) and histogram() adds
them, so every call is in it whatever the order of their times."""

import random

from trisque.core.command import Command
from trisque.web.node_view import commands

from tests.unit.conftest import Core


def test_every_time_counted_in_its_slot():
    command = Command("X", 1, (), lambda node, client, argv: None)
    rng = random.Random(5)
    expected = [0] * 65
    for n in range(3000):
        # runs of one slot, and slots alternating call by call
        ns = rng.choice([0, 1, 900, 1500, 40_000, 2**40]) if n % 3 else 1500
        command.count_time(ns)
        expected[ns.bit_length()] += 1
        if n % 997 == 0:  # a reader in the middle of a run
            assert sum(command.histogram()) == n + 1
    assert command.histogram() == expected
    assert command.histogram() == expected  # (read twice: added once)
    command.reset_histogram()
    command.count_time(1500)
    assert command.histogram()[11] == 1 and sum(command.histogram()) == 1


def test_the_metrics_view_counts_every_call():
    core = Core()
    # (the command table is shared by every Core of the process: its
    # counts start from what other tests ran, so they are reset first)
    core("CONFIG", "RESETSTAT")
    for _ in range(50):
        core("PING")
    view = {c.name: c for c in commands(core.node)}["ping"]
    assert view.calls == 50 and view.buckets[-1][1] == 50  # (+Inf: every call)
    core("CONFIG", "RESETSTAT")
    core("PING")
    view = {c.name: c for c in commands(core.node)}["ping"]
    assert view.calls == 1 and view.buckets[-1][1] == 1
