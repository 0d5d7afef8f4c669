"""The configuration reference (docs/configuration.md) matches the directive
table, and every directive says what it does."""

from __future__ import annotations

import pytest

from trisque.core.admin import config_reference
from trisque.core.admin.config import DIRECTIVES


def test_every_directive_has_a_one_line_doc() -> None:
    missing = [d.name for d in DIRECTIVES if not d.doc or not d.doc.strip()]
    assert not missing, (
        f"directives without doc= in core/admin/config.py: {missing}; "
        f"add one, then run `{config_reference.REGENERATE_COMMAND}`")
    multiline = [d.name for d in DIRECTIVES if "\n" in d.doc]
    assert not multiline, f"doc= must be one line: {multiline}"


def test_the_reference_file_is_up_to_date() -> None:
    path = config_reference.REFERENCE_PATH
    text = path.read_text(encoding="utf-8")
    expected = config_reference.replace_between_markers(text, config_reference.table())
    assert text == expected, (
        f"{path} is out of date with the directives in core/admin/config.py: "
        f"run `{config_reference.REGENERATE_COMMAND}` "
        f"(.venv/bin/python -m trisque.core.admin.config_reference)")


def test_the_table_has_one_row_per_directive_with_default_and_runtime() -> None:
    rows = [line for line in config_reference.table().splitlines()
            if line.startswith("| `")]
    assert len(rows) == len(DIRECTIVES)
    port = next(row for row in rows if row.startswith("| `port` "))
    assert "`7711`" in port and "| no |" in port
    maxmemory = next(row for row in rows if row.startswith("| `maxmemory` "))
    assert "`1gb`" in maxmemory and "| yes |" in maxmemory
    assert any("(also `lua-time-limit`)" in row for row in rows)


def test_a_changed_doc_makes_the_file_stale(monkeypatch: pytest.MonkeyPatch) -> None:
    text = config_reference.REFERENCE_PATH.read_text(encoding="utf-8")
    monkeypatch.setattr(DIRECTIVES[0], "doc", "something else entirely")
    assert config_reference.replace_between_markers(text, config_reference.table()) != text


def test_lost_markers_are_reported() -> None:
    with pytest.raises(config_reference.ReferenceError):
        config_reference.replace_between_markers("no markers here", "| table |")
