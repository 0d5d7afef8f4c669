"""Configuration directives: Disque's names, types, defaults and checks.

One table describes every directive; the config file parser, command-line
overrides, CONFIG GET/SET and CONFIG REWRITE all read it.  Values are
available as attributes with underscores (``config.cluster_node_timeout``).
Components that must react to a runtime change (the AOF to ``appendonly``,
the log to ``loglevel``) register a callback in ``config.on_change``.
"""

import fnmatch
import os

from ...protocol.resp import split_inline, ProtocolError


class ConfigError(Exception):
    pass


# ------------------------------------------------------------------ types

_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1024, "m": 1000**2, "mb": 1024**2,
          "g": 1000**3, "gb": 1024**3}


def parse_memory(text):
    """'1gb' -> 1073741824, as Redis's memtoll."""
    text = text.strip().lower()
    digits = text.rstrip("kmgb")
    unit = text[len(digits):]
    if unit not in _UNITS or not digits.lstrip("-").isdigit():
        raise ConfigError("argument must be a memory value")
    return int(digits) * _UNITS[unit]


def format_memory(value):
    for unit in ("gb", "mb", "kb"):
        size = _UNITS[unit]
        if value and value % size == 0:
            return f"{value // size}{unit}"
    return str(value)


class Directive:
    def __init__(self, name, kind, default, choices=None, low=None, high=None,
                 runtime=True, multi=False):
        self.name = name
        self.attr = name.replace("-", "_")
        self.kind = kind  # int, memory, bool, enum, str, list
        self.default = default
        self.choices = choices
        self.low = low
        self.high = high
        self.runtime = runtime  # CONFIG SET allowed
        self.multi = multi  # may appear on several lines (values accumulate)

    def parse(self, args):
        """Turn the directive's arguments (strings) into a value."""
        if self.kind == "list":
            return list(args)
        if len(args) != 1:
            raise ConfigError("wrong number of arguments")
        text = args[0]
        if self.kind == "str":
            return text
        if self.kind == "bool":
            if text.lower() not in ("yes", "no"):
                raise ConfigError("argument must be 'yes' or 'no'")
            return text.lower() == "yes"
        if self.kind == "enum":
            if text.lower() not in self.choices:
                raise ConfigError("argument must be one of: " + ", ".join(self.choices))
            return text.lower()
        if self.kind == "memory":
            value = parse_memory(text)
        else:
            try:
                value = int(text)
            except ValueError:
                raise ConfigError("argument must be an integer") from None
        if (self.low is not None and value < self.low) or (
                self.high is not None and value > self.high):
            raise ConfigError(f"argument must be between {self.low} and {self.high}")
        return value

    def format(self, value):
        """The value as CONFIG GET shows it."""
        if self.kind == "bool":
            return "yes" if value else "no"
        if self.kind == "list":
            return " ".join(value)
        if self.kind == "memory":
            return str(value)
        return str(value)

    def rewrite_line(self, value):
        """The value as CONFIG REWRITE writes it."""
        if self.kind == "bool":
            text = "yes" if value else "no"
        elif self.kind == "memory":
            text = format_memory(value)
        elif self.kind == "str":
            text = quote(value)
        elif self.kind == "list":
            text = " ".join(value)
        else:
            text = str(value)
        return f"{self.name} {text}"


def quote(text):
    out = ['"']
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 32 or ord(ch) == 127:
            out.append("\\x%02x" % ord(ch))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


_LOGLEVELS = ("debug", "verbose", "notice", "warning")

DIRECTIVES = [
    Directive("port", "int", 7711, low=0, high=65535, runtime=False),
    Directive("bind", "list", ["127.0.0.1"], runtime=False),
    Directive("tcp-backlog", "int", 511, low=0, runtime=False),
    Directive("unixsocket", "str", "", runtime=False),
    Directive("unixsocketperm", "int", 0, runtime=False),
    Directive("dir", "str", ".", runtime=True),
    Directive("loglevel", "enum", "notice", choices=_LOGLEVELS),
    Directive("logfile", "str", "", runtime=False),
    Directive("syslog-enabled", "bool", False, runtime=False),
    Directive("syslog-ident", "str", "disque", runtime=False),
    Directive("syslog-facility", "str", "local0", runtime=False),
    Directive("databases", "int", 16, low=1, runtime=False),
    Directive("pidfile", "str", "", runtime=False),
    Directive("daemonize", "bool", False, runtime=False),
    Directive("timeout", "int", 0, low=0),
    Directive("tcp-keepalive", "int", 0, low=0),
    Directive("maxclients", "int", 10000, low=1),
    Directive("maxmemory", "memory", 1024**3, low=0),
    Directive("maxmemory-policy", "enum", "acks", choices=("acks", "noeviction")),
    Directive("maxmemory-samples", "int", 5, low=1),
    Directive("activerehashing", "bool", True),
    Directive("hz", "int", 10, low=1, high=500),
    Directive("requirepass", "str", ""),
    Directive("proto-max-bulk-len", "memory", 512 * 1024**2, low=1),
    Directive("client-output-buffer-limit", "list", ["normal", "0", "0", "0"]),
    Directive("appendonly", "bool", False),
    Directive("appendfilename", "str", "disque.aof", runtime=False),
    Directive("appendfsync", "enum", "everysec", choices=("always", "everysec", "no")),
    Directive("no-appendfsync-on-rewrite", "bool", False),
    Directive("auto-aof-rewrite-percentage", "int", 100, low=0),
    Directive("auto-aof-rewrite-min-size", "memory", 64 * 1024**2, low=0),
    Directive("aof-rewrite-incremental-fsync", "bool", True),
    Directive("aof-load-truncated", "bool", True),
    Directive("aof-enqueue-jobs-once", "bool", False),
    Directive("slowlog-log-slower-than", "int", 10000),
    Directive("slowlog-max-len", "int", 128, low=0),
    Directive("latency-monitor-threshold", "int", 0, low=0),
    Directive("cluster-config-file", "str", "nodes.conf", runtime=False),
    Directive("cluster-node-timeout", "int", 15000, low=1),
    Directive("cluster-bus-port", "int", 0, low=0, high=65535, runtime=False),
    Directive("cluster-join", "list", [], runtime=False, multi=True),
]
BY_NAME = {d.name: d for d in DIRECTIVES}
# Accepted for compatibility with Disque and Redis config files; no effect.
IGNORED = {"include", "rename-command", "activerehashing", "lua-time-limit",
           "save", "supervised", "protected-mode"}


class Config:
    def __init__(self):
        for directive in DIRECTIVES:
            value = directive.default
            setattr(self, directive.attr, list(value) if isinstance(value, list) else value)
        self.config_file = None  # absolute path, for CONFIG REWRITE
        self.on_change = {}  # directive name -> callable(value)
        self._from_file = set()

    def bind_address(self):
        return self.bind[0] if self.bind else "127.0.0.1"

    def bus_port(self):
        return self.cluster_bus_port or self.port + 10000

    # ------------------------------------------------------- loading

    def load_file(self, path):
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        self.config_file = os.path.abspath(path)
        self.load_text(text, origin=path)

    def load_text(self, text, origin="(command line)"):
        """Apply directives; on a bad one raise ConfigError naming the line."""
        for number, line in enumerate(text.splitlines(), 1):
            stripped = line.strip()
            if not stripped or stripped.startswith("#"):
                continue
            try:
                args = [a.decode("utf-8", "replace") for a in
                        split_inline(stripped.encode("utf-8", "surrogateescape"))]
            except ProtocolError:
                raise ConfigError(_fatal(origin, number, line, "Unbalanced quotes in configuration line")) from None
            if not args:
                continue
            try:
                self.apply(args[0], args[1:], from_file=True)
            except ConfigError as exc:
                raise ConfigError(_fatal(origin, number, line, str(exc))) from None

    def apply(self, name, args, from_file=False):
        name = name.lower()
        if name in IGNORED and name not in BY_NAME:
            return
        directive = BY_NAME.get(name)
        if directive is None:
            raise ConfigError("Bad directive or wrong number of arguments")
        value = directive.parse(args)
        if directive.multi and from_file and name in self._from_file:
            value = getattr(self, directive.attr) + value
        if name == "dir" and from_file:
            # Like Disque: chdir while parsing, so later relative paths
            # (logfile, appendfilename, nodes.conf) live inside it.
            try:
                os.chdir(value)
            except OSError as exc:
                raise ConfigError(f"Can't chdir to '{value}': {exc.strerror}") from None
        setattr(self, directive.attr, value)
        if from_file:
            self._from_file.add(name)

    # ---------------------------------------------------- CONFIG GET/SET

    def get(self, pattern):
        """[(name, text)] for directives matching the glob pattern."""
        pattern = pattern.lower()
        out = []
        for directive in DIRECTIVES:
            if fnmatch.fnmatchcase(directive.name, pattern):
                value = getattr(self, directive.attr)
                if directive.name == "dir":
                    value = os.getcwd()
                out.append((directive.name, directive.format(value)))
        return out

    def set(self, name, text):
        directive = BY_NAME.get(name.lower())
        if directive is None or not directive.runtime:
            raise ConfigError(f"Unsupported CONFIG parameter: {name}")
        args = text.split() if directive.kind == "list" else [text]
        try:
            value = directive.parse(args)
        except ConfigError as exc:
            raise ConfigError(f"Invalid argument '{text}' for CONFIG SET '{name}': {exc}") from None
        if directive.name == "dir":
            try:
                os.chdir(value)
            except OSError as exc:
                raise ConfigError(f"Invalid argument '{text}' for CONFIG SET 'dir': {exc.strerror}") from None
        old = getattr(self, directive.attr)
        setattr(self, directive.attr, value)
        hook = self.on_change.get(directive.name)
        if hook is not None:
            try:
                hook(value)
            except ConfigError:
                setattr(self, directive.attr, old)
                raise

    # ---------------------------------------------------- CONFIG REWRITE

    def rewrite(self):
        """Rewrite the config file: change the lines of directives we know,
        keep comments and unknown lines, append what differs from defaults."""
        if not self.config_file:
            raise ConfigError("The server is running without a config file")
        try:
            with open(self.config_file, encoding="utf-8", errors="replace") as f:
                old_lines = f.read().splitlines()
        except FileNotFoundError:
            old_lines = []
        wanted = {}
        for directive in DIRECTIVES:
            value = getattr(self, directive.attr)
            if directive.name == "dir":
                value = os.getcwd()
            if directive.multi:
                wanted[directive.name] = [
                    f"{directive.name} {v}" for v in value]
            elif value != directive.default or directive.name in self._from_file:
                wanted[directive.name] = [directive.rewrite_line(value)]
        out = []
        for line in old_lines:
            stripped = line.strip()
            name = stripped.split(None, 1)[0].lower() if stripped else ""
            if not stripped or stripped.startswith("#") or name not in BY_NAME:
                out.append(line)
                continue
            lines = wanted.get(name)
            if lines:
                out.append(lines.pop(0))
            # else: a duplicate, or now the default: drop it
        for name, lines in wanted.items():
            out.extend(lines)
        text = "\n".join(out) + "\n"
        tmp = self.config_file + ".tmp-rewrite"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.config_file)


def _fatal(origin, number, line, reason):
    return (f"\n*** FATAL CONFIG FILE ERROR ***\n"
            f"Reading the configuration file {origin}, at line {number}\n"
            f">>> '{line.strip()}'\n{reason}")
