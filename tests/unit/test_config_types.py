"""Config's declared attributes match the directive table: each directive's
value lives in an attribute declared with its kind's type, so mypy checks
every ``config.<name>`` read against what the table parses."""

import ast
from pathlib import Path

from trisque.core.admin import config as config_module
from trisque.core.admin.config import DIRECTIVES, Config

KIND_TYPES: dict[str, object] = {
    "int": int, "memory": int, "bool": bool, "enum": str, "str": str, "list": list[str],
}
KIND_ANNOTATIONS = {"int": "int", "memory": "int", "bool": "bool", "enum": "str",
                    "str": "str", "list": "list[str]"}


def declared() -> dict[str, str]:
    """Config's attribute declarations, read from its source (a compiled
    class keeps no __annotations__)."""
    source = Path(config_module.__file__).with_name("config.py").read_text()
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef) and node.name == "Config":
            return {item.target.id: ast.unparse(item.annotation) for item in node.body
                    if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)}
    raise AssertionError("no class Config in config.py")


def test_every_directive_is_declared_with_its_kind_type() -> None:
    annotations = declared()
    for directive in DIRECTIVES:
        assert annotations.get(directive.attr) == KIND_ANNOTATIONS[directive.kind], directive.name


def test_nothing_declared_that_no_directive_sets() -> None:
    own = {"config_file", "on_change", "_from_file"}
    attrs = {d.attr for d in DIRECTIVES}
    assert set(declared()) - own == attrs


def test_defaults_and_parsed_values_have_the_declared_type() -> None:
    config = Config()
    for directive in DIRECTIVES:
        expected = KIND_TYPES[directive.kind]
        runtime_type = list if expected == list[str] else expected
        value = getattr(config, directive.attr)
        assert type(value) is runtime_type, directive.name
        text = directive.format(value)
        args = text.split() if directive.kind == "list" else [text]
        if directive.kind == "str" and not text:
            continue  # an empty string is given as "" in a file
        assert type(directive.parse(args)) is runtime_type, directive.name
