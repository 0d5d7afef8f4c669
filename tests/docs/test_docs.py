"""Every command README.md and docs/*.md show, run against real nodes, so
the docs cannot drift from what trisque does.

The conventions the pages follow:

Fences.  A ```console block is run.  A ```sh block (make, docker, the
benchmarks, a node's own command line) is shown, not run.  A ```python
block is compiled, and run against a fresh node when it says
``port=7711``.  A ```text block is shown as it is.  Any other fence, or
one with no kind, fails test_fences.

Commands.  In a console block, a line ``$ redis-cli -p 7711 ARGS...`` is a
command, split as the shell splits it (``#`` starts a comment).  The lines
after it, up to the next ``$``, are what redis-cli prints in a terminal,
stdout and stderr: the test passes ``--no-raw``, redis-cli's switch for
that form without a tty.  No other kind of ``$`` line is allowed.

Nodes.  Ports 7711, 7712 and 7713 (bus ports 17711...) name the block's
nodes: they become the real ports in commands and the real ports go back
to them in outputs.  A block that names only 7711 gets a fresh node; one
that names 7712 or 7713 gets three fresh nodes, already meshed unless the
block runs CLUSTER MEET (then the test waits for the mesh after the last
MEET, as a reader waits a second).

Outputs that vary.  Job IDs (``D-`` 8 hex, 24 base64, 4 hex) and node IDs
(40 hex digits) are names: where an output first shows one, it stands for
the real ID printed there, and later commands and outputs of the block use
that real ID.  ``...`` stands for any text: alone on a line, any number of
lines (none too); inside a line, any characters of that line.
"""

import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.cluster.conftest import build_cluster
from tests.harness import Server, wait_for

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
KINDS = {"console", "sh", "python", "text"}
DOC_PORTS = (7711, 7712, 7713)
BUS_OFFSET = 10000
FENCE = re.compile(r"^\s*(`{3,}|~{3,})(.*)$")
JOB_ID = r"D-[0-9a-f]{8}-[A-Za-z0-9+/]{24}-[0-9a-f]{4}"
NODE_ID = r"(?<![0-9a-f])[0-9a-f]{40}(?![0-9a-f])"
ANY_ID = re.compile(f"({JOB_ID})|({NODE_ID})")
# Each port is a word of its own: 77110 or 177111 are not ports of ours.
DOC_PORT_WORD = re.compile(r"(?<![0-9])(1?771[123])(?![0-9])")
REDIS_CLI = "/usr/bin/redis-cli"


@dataclass
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    kind: str
    lines: list = field(default_factory=list)

    @property
    def name(self):
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def read_blocks(page):
    """The fenced blocks of a page, in order (an unclosed fence fails)."""
    blocks, open_block, marker = [], None, None
    for number, text in enumerate(page.read_text().splitlines(), 1):
        match = FENCE.match(text)
        if open_block is None:
            if match:
                marker = match.group(1)
                open_block = Block(page, number, match.group(2).strip())
        elif match and match.group(1) == marker and not match.group(2).strip():
            blocks.append(open_block)
            open_block = None
        else:
            open_block.lines.append(text)
    assert open_block is None, f"{page.name}:{open_block.line}: fence never closed"
    return blocks


ALL_BLOCKS = [b for page in PAGES for b in read_blocks(page)]
CONSOLE = [b for b in ALL_BLOCKS if b.kind == "console"]
PYTHON = [b for b in ALL_BLOCKS if b.kind == "python"]


@dataclass
class Command:
    line: int
    argv: list
    expected: list


def parse_console(block):
    """The block's commands and their expected outputs; a line in an
    unknown form raises, so such a block fails instead of being skipped."""
    commands = []
    for offset, text in enumerate(block.lines, 1):
        line = block.line + offset
        if text.startswith("$"):
            argv = shlex.split(text[1:], comments=True)
            if len(argv) < 4 or argv[:2] != ["redis-cli", "-p"] \
                    or argv[2] not in {str(p) for p in DOC_PORTS}:
                raise ValueError(f"{block.page.name}:{line}: not a "
                                 f"'$ redis-cli -p 7711 ...' command: {text!r}")
            commands.append(Command(line, argv, []))
        elif not commands:
            if text.strip():
                raise ValueError(f"{block.page.name}:{line}: output before any command")
        else:
            commands[-1].expected.append(text.rstrip())
    if not commands:
        raise ValueError(f"{block.name}: a console block without a command")
    for command in commands:
        while command.expected and not command.expected[-1]:
            command.expected.pop()
    return commands


def page_ports(commands):
    words = " ".join(" ".join(c.argv) for c in commands)
    return {int(p) % BUS_OFFSET for p in DOC_PORT_WORD.findall(words)}


def output_pattern(expected, names):
    """A regex for a whole output; returns it and the IDs it will bind."""
    groups, parts = {}, []

    def ids(text):
        out, at = [], 0
        for match in ANY_ID.finditer(text):
            out.append(re.escape(text[at:match.start()]))
            doc_id = match.group(0)
            if doc_id in names:
                out.append(re.escape(names[doc_id]))
            elif doc_id in groups:
                out.append(f"(?P={groups[doc_id]})")
            else:
                groups[doc_id] = f"id{len(groups)}"
                shape = JOB_ID if match.group(1) else NODE_ID
                out.append(f"(?P<{groups[doc_id]}>{shape})")
            at = match.end()
        out.append(re.escape(text[at:]))
        return "".join(out)

    for line in expected:
        if line.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append("[^\n]*".join(ids(piece) for piece in line.split("...")) + r"\n")
    return re.compile("".join(parts)), groups


class Nodes:
    """The block's fresh node(s), by doc port."""

    def __init__(self, count, meet):
        if count == 1:
            self.servers, self.cluster = [Server().start()], None
        else:
            self.cluster = build_cluster(count, meet=meet)
            self.servers = self.cluster.servers
        self.real = {}
        for doc, server in zip(DOC_PORTS, self.servers):
            self.real[doc] = server.port
            self.real[doc + BUS_OFFSET] = server.port + BUS_OFFSET
        self.doc = {real: doc for doc, real in self.real.items()}
        self.real_word = re.compile(
            r"(?<![0-9])(" + "|".join(map(str, self.doc)) + r")(?![0-9])")

    def to_real(self, text):
        return DOC_PORT_WORD.sub(lambda m: str(self.real[int(m.group(1))]), text)

    def to_doc(self, text):
        return self.real_word.sub(lambda m: str(self.doc[int(m.group(1))]), text)

    def close(self):
        if self.cluster is not None:
            self.cluster.close()
        else:
            for server in self.servers:
                server.cleanup()


def wait_redis_cli():
    # redis-tools may still be being installed by apt when the suite starts
    try:
        wait_for(lambda: shutil.which(REDIS_CLI), timeout=300, interval=1,
                 message=REDIS_CLI)
    except AssertionError:
        pytest.skip("redis-cli is not installed (apt-get install redis-tools)")


def names_in(text, names):
    return ANY_ID.sub(lambda m: names.get(m.group(0), m.group(0)), text)


@pytest.mark.parametrize("block", CONSOLE, ids=[b.name for b in CONSOLE])
def test_console_block(block):
    commands = parse_console(block)
    wait_redis_cli()
    ports = page_ports(commands)
    meets = [i for i, c in enumerate(commands)
             if "CLUSTER MEET" in " ".join(c.argv).upper()]
    nodes = Nodes(3 if ports - {7711} else 1, meet=not meets)
    names = {}
    try:
        for i, command in enumerate(commands):
            argv = [REDIS_CLI, "--no-raw"] + [nodes.to_real(names_in(a, names))
                                              for a in command.argv[1:]]
            proc = subprocess.run(argv, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, timeout=30)
            lines = proc.stdout.decode(errors="replace").splitlines()
            actual = "".join(nodes.to_doc(line).rstrip() + "\n" for line in lines)
            pattern, groups = output_pattern(command.expected, names)
            match = pattern.fullmatch(actual)
            assert match, (f"{block.page.name}:{command.line}: "
                           f"{shlex.join(command.argv)}\n--- documented:\n"
                           + "\n".join(command.expected) + f"\n--- printed:\n{actual}")
            names.update({doc_id: match.group(g) for doc_id, g in groups.items()})
            if meets and i == meets[-1]:
                nodes.cluster.wait_mesh()
    finally:
        nodes.close()


@pytest.mark.parametrize("block", PYTHON, ids=[b.name for b in PYTHON])
def test_python_block(block, tmp_path):
    source = "\n".join(block.lines) + "\n"
    compile(source, block.name, "exec")
    if "port=7711" not in source:
        return  # a fragment (a Spark session's): compiled only
    server = Server().start()
    try:
        script = tmp_path / "block.py"
        script.write_text(source.replace("port=7711", f"port={server.port}"))
        proc = subprocess.run([sys.executable, str(script)], cwd=ROOT, timeout=60,
                              capture_output=True, text=True)
        assert proc.returncode == 0, f"{block.name}\n{proc.stdout}{proc.stderr}"
    finally:
        server.cleanup()


def test_fences():
    """Only the kinds of fence the module docstring explains."""
    bad = [f"{b.name}: ```{b.kind}" for b in ALL_BLOCKS if b.kind not in KINDS]
    assert not bad, "fences of an unknown kind (console, sh, python, text):\n" + "\n".join(bad)


def test_every_console_block_collected():
    """Each ```console line of a page is a block above, in a form the test
    reads: nothing is skipped silently."""
    for page in PAGES:
        opened = sum(1 for line in page.read_text().splitlines()
                     if FENCE.match(line) and FENCE.match(line).group(2).strip() == "console")
        assert opened == sum(1 for b in CONSOLE if b.page == page), page.name
    for block in CONSOLE:
        parse_console(block)  # raises on a line of an unknown form
    assert len(CONSOLE) >= 10, "README.md and docs/ lost their console blocks"


LINK = re.compile(r"\[[^\]]*\]\(<?([^)>\s]+)>?(?:\s+\"[^\"]*\")?\)")


def slug(heading):
    """GitHub's anchor for a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def prose(page):
    """The page's lines outside fences."""
    inside, marker = False, None
    for text in page.read_text().splitlines():
        match = FENCE.match(text)
        if match and (not inside or match.group(1) == marker):
            inside, marker = not inside, match.group(1)
            continue
        if not inside:
            yield text


def anchors(page):
    return {slug(t.lstrip("#")) for t in prose(page) if t.startswith("#")}


def test_relative_links():
    broken = []
    for page in PAGES:
        # A link's text may wrap over lines; code spans hold no links.
        text = re.sub(r"`[^`]*`", "", "\n".join(prose(page)))
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):
                continue  # https:, mailto:: not ours to check
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            if not file.exists():
                broken.append(f"{page.name}: {target} (no such file)")
            elif anchor and file.suffix == ".md" and anchor not in anchors(file):
                broken.append(f"{page.name}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


def test_pages_listed():
    """The README's map names every page of docs/."""
    readme = (ROOT / "README.md").read_text()
    missing = [p.name for p in PAGES[1:] if f"(docs/{p.name})" not in readme]
    assert not missing, f"README.md does not link to {missing}"


def test_conventions_hold():
    """The matcher itself: names bind once, `...` spans lines."""
    names = {}
    doc = "D-0123abcd-AAAAAAAAAAAAAAAAAAAAAAAA-05a1"
    real = "D-89abcdef-Bb+/Bb+/Bb+/Bb+/Bb+/Bb+/-05a1"
    pattern, groups = output_pattern(["1) " + doc, "...", "x ... z"], names)
    match = pattern.fullmatch(f"1) {real}\na\nb\nx y z\n")
    assert match and match.group(groups[doc]) == real
    names[doc] = real
    pattern, _ = output_pattern([doc], names)
    assert pattern.fullmatch(real + "\n")
    assert not pattern.fullmatch(doc + "\n")
