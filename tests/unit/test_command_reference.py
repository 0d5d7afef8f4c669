"""The command table is built from the command modules' own lists, and the
command reference (docs/commands.md) matches it."""

from __future__ import annotations

import pytest

from trisque.core import table
from trisque.core.command import Commands, table_of, unique_commands
from trisque.server import command_reference, commands as process


def test_the_reference_file_is_up_to_date() -> None:
    path = command_reference.REFERENCE_PATH
    text = path.read_text(encoding="utf-8")
    expected = command_reference.replace_between_markers(text, command_reference.reference())
    assert text == expected, (
        f"{path} is out of date with the command table: "
        f"run `{command_reference.REGENERATE_COMMAND}` "
        f"(.venv/bin/python -m trisque.server.command_reference)")


def test_the_reference_has_one_row_per_command() -> None:
    rows = [line for line in command_reference.reference().splitlines()
            if line.startswith("| `")]
    assert len(rows) == len(unique_commands(process.COMMANDS))
    addjob = next(row for row in rows if row.startswith("| `ADDJOB queue body "))
    assert "| write denyoom fast | Add a job to a queue" in addjob
    assert any(row.startswith("| `CLUSTER MEET ip port \\| NODES") for row in rows)


def test_a_changed_summary_makes_the_file_stale(monkeypatch: pytest.MonkeyPatch) -> None:
    text = command_reference.REFERENCE_PATH.read_text(encoding="utf-8")
    monkeypatch.setattr(process.COMMANDS[b"QLEN"], "summary", "something else entirely")
    assert command_reference.replace_between_markers(
        text, command_reference.reference()) != text


def test_lost_markers_are_reported() -> None:
    with pytest.raises(command_reference.ReferenceError):
        command_reference.replace_between_markers("no markers here", "| table |")


def test_the_tables_are_the_modules_lists() -> None:
    core = {c.name for commands in table.LISTS for c in commands.commands}
    assert {c.name for c in unique_commands(table.COMMANDS)} == core
    assert "CLUSTER" not in core  # the node process adds the cluster's (server/commands.py)
    assert {c.name for c in unique_commands(process.COMMANDS)} == core | {"CLUSTER"}
    for name, entry in process.COMMANDS.items():
        assert name in (entry.name.encode(), entry.lname.encode())


def test_every_command_has_its_help() -> None:
    for c in unique_commands(process.COMMANDS):
        assert c.group in command_reference.GROUPS, c.name
        assert c.summary and "\n" not in c.summary and "\n" not in c.syntax, c.name
        if c.group != "generic":  # Disque's commands say what they do and take
            assert c.summary != c.name, c.name


def test_a_name_defined_twice_is_refused() -> None:
    first, second = Commands(), Commands()
    first.command("PING", -1)(lambda node, client, argv: None)
    second.command("PING", 1)(lambda node, client, argv: None)
    with pytest.raises(ValueError, match="PING defined twice"):
        table_of(first, second)


def test_a_module_list_takes_its_defaults() -> None:
    commands = Commands("queues", keys=(1, 1, 1))
    command = commands.command

    @command("QFOO", 2, "readonly fast", "Foo a queue", "queue")
    @command("QBAR", -2, group="server", keys=(0, 0, 0))
    def handler(node: object, client: object, argv: list[bytes]) -> None:
        return None

    foo, bar = sorted(commands.commands, key=lambda c: c.name, reverse=True)
    assert (foo.name, foo.lname, foo.arity, foo.flags, foo.group, foo.summary, foo.syntax) == (
        "QFOO", "qfoo", 2, ("readonly", "fast"), "queues", "Foo a queue", "queue")
    assert (foo.first_key, foo.last_key, foo.key_step, foo.handler) == (1, 1, 1, handler)
    assert (bar.group, bar.summary, bar.syntax, bar.first_key, bar.flags) == (
        "server", "QBAR", "", 0, ())


def test_keyspace_records_are_its_write_commands_and_select() -> None:
    records = table.KEYSPACE_RECORDS
    assert b"SELECT" in records and b"SET" in records and b"BZPOPMIN" in records
    assert b"GET" not in records and b"ADDJOB" not in records and b"MULTI" not in records
