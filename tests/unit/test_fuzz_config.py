"""Fuzzing the config parser (core/admin/config.py): any text is applied
or refused with ConfigError (the FATAL CONFIG FILE ERROR naming the line),
nothing else; every directive's CONFIG REWRITE line reads back as the same
value."""

import os

from hypothesis import assume, given, strategies as st

from tests.fuzz_settings import FUZZ
from trisque.core.admin.config import BY_NAME, DIRECTIVES, Config, ConfigError

# 'dir' changes the process's directory: it is tested by hand elsewhere
NAMES = sorted(name for name in BY_NAME if name != "dir") + [
    "include", "save", "bogus-directive", "PORT", "MaxClients"]
words = st.one_of(
    st.sampled_from(["yes", "no", "0", "1", "-1", "1gb", "512mb", "10kb", "normal",
                     "pubsub", "1mb", "60", "99999999999999999999", "everysec",
                     "\"quoted word\"", "'single'", "\"unbalanced", "0x10", ""]),
    st.text(max_size=12))


@st.composite
def lines(draw):
    name = draw(st.one_of(st.sampled_from(NAMES), st.text(max_size=10)))
    return " ".join([name] + draw(st.lists(words, max_size=5)))


@FUZZ
@given(st.lists(st.one_of(lines(), st.text(max_size=40)), max_size=8))
def test_any_text_is_applied_or_refused_with_config_error(text_lines):
    assume(not any(line.strip().lower().startswith("dir") for line in text_lines))
    cwd = os.getcwd()
    try:
        Config().load_text("\n".join(text_lines))
    except ConfigError as exc:
        assert "FATAL CONFIG FILE ERROR" in str(exc)
    assert os.getcwd() == cwd


def _value(directive, draw):
    kind = directive.kind
    if kind == "bool":
        return draw(st.booleans())
    if kind == "enum":
        return draw(st.sampled_from(directive.choices))
    if kind in ("int", "memory"):
        low = directive.low if directive.low is not None else -(2**31)
        high = directive.high if directive.high is not None else 2**40
        value = draw(st.integers(low, high))
        if kind == "memory" and draw(st.booleans()):
            unit = draw(st.sampled_from([1024, 1024**2, 1024**3]))
            value = min(max(value // unit * unit, low), high)
        return value
    if kind == "str":
        return draw(st.text(st.characters(blacklist_categories=("Cs",)), max_size=20))
    return None  # lists: bind, cluster-join, client-output-buffer-limit


@FUZZ
@given(st.data())
def test_rewrite_lines_read_back(data):
    directive = data.draw(st.sampled_from(
        [d for d in DIRECTIVES if d.kind != "list" and d.name != "dir" and not d.clamp]))
    value = _value(directive, data.draw)
    config = Config()
    config.load_text(directive.rewrite_line(value))
    assert getattr(config, directive.attr) == value


@FUZZ
@given(st.lists(st.tuples(st.sampled_from(["normal", "replica", "slave", "pubsub"]),
                          st.integers(0, 2**34), st.integers(0, 2**34),
                          st.integers(0, 10**6)), min_size=1, max_size=3))
def test_output_buffer_limit_words(classes):
    from trisque.core.admin import output_limit
    words = [str(w) for item in classes for w in item]
    config = Config()
    config.load_text("client-output-buffer-limit " + " ".join(words))
    last = {("replica" if c == "slave" else c): output_limit.OutputLimit(h, s, t)
            for c, h, s, t in classes}
    assert output_limit.parse(config.client_output_buffer_limit) == last
