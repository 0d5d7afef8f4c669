"""Builds trisque with its hot core compiled by mypyc when it can.

pyproject.toml holds the metadata; this file only adds the extension
modules.  The core is compiled when mypy (mypyc) is importable at build
time and a C compiler is found; otherwise, or with TRISQUE_PURE=1, the
same sources install as plain Python.  Both forms behave the same
(``trisque-server --version`` and ``INFO server`` say which one runs).
"""

import os
import shlex
import shutil
import sys
import sysconfig
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# The request path: parse, execute, reply (bench/README.md, "Compiling the core").
COMPILED = [
    "trisque/protocol/native.py",
    "trisque/protocol/resp.py",
    "trisque/protocol/jobid.py",
    "trisque/protocol/args.py",
    "trisque/core/jobs/shards.py",
    "trisque/core/jobs/deadlines.py",
    "trisque/core/jobs/policy.py",
    "trisque/core/jobs/job.py",
    "trisque/core/jobs/registry.py",
    "trisque/core/jobs/queue.py",
    "trisque/core/jobs/lifecycle.py",
    "trisque/core/admin/stats.py",
    "trisque/core/client.py",
    "trisque/core/command.py",
    "trisque/core/node.py",
    "trisque/core/hooks.py",
    "trisque/core/jobs/commands_jobs.py",
    "trisque/core/jobs/job_reply.py",
    "trisque/core/admin/config.py",
    # the client event loop: read, parse, run, reply; its wait, its timers
    # and the bus's turn (bench/README.md, "A turn's fixed costs")
    "trisque/server/clients/connection.py",
    "trisque/shell/socket_set.py",
    "trisque/shell/timers.py",
    "trisque/shell/ticks.py",
    "trisque/shell/heap.py",  # its check runs every tick on every node
    "trisque/cluster/tcp/transport.py",
    # replicated ADDJOB: the bus codec and the cluster's replication path
    "trisque/protocol/bus.py",
    "trisque/protocol/jobcodec.py",
    "trisque/cluster/replication_latency.py",
    "trisque/cluster/membership.py",
    "trisque/cluster/outbox.py",
    "trisque/cluster/replication.py",
    "trisque/cluster/requeue.py",
    "trisque/cluster/acks.py",
    "trisque/cluster/federation.py",
    "trisque/cluster/cluster.py",
    # the keyspace's request path: strings, lists, hashes (bench/README.md,
    # "Compiling the keyspace")
    "trisque/core/keyspace/db.py",
    "trisque/core/keyspace/types.py",
    "trisque/core/keyspace/keyspace.py",
    "trisque/core/keyspace/args.py",
    "trisque/core/keyspace/numbers.py",
    "trisque/core/keyspace/strings.py",
    "trisque/core/keyspace/commands_strings.py",
    "trisque/core/keyspace/blocking.py",
    "trisque/core/keyspace/lists.py",
    "trisque/core/keyspace/commands_lists.py",
    "trisque/core/keyspace/encoding_limits.py",
    "trisque/core/keyspace/hashes.py",
    "trisque/core/keyspace/containers.py",
    "trisque/core/keyspace/commands_hashes.py",
    # PUBLISH's delivery (bench/README.md, "Pub/Sub")
    "trisque/core/pubsub/channels.py",
    # bitmaps and HyperLogLogs (bench/README.md, "Bitmaps and HyperLogLog")
    "trisque/core/keyspace/bits.py",
    "trisque/core/keyspace/commands_bits.py",
    "trisque/core/keyspace/hyperloglog.py",
    "trisque/core/keyspace/commands_hyperloglog.py",
    # streams: XADD, XREADGROUP, XACK... (bench/README.md, "Streams")
    "trisque/core/keyspace/stream_ids.py",
    "trisque/core/keyspace/sorted_ids.py",
    "trisque/core/keyspace/streams.py",
    "trisque/core/keyspace/stream_delivery.py",
    "trisque/core/keyspace/commands_streams.py",
    "trisque/core/keyspace/commands_stream_groups.py",
    "trisque/core/keyspace/commands_stream_read.py",
    # FCALL and EVALSHA: the Python around each Lua call (bench/README.md,
    # "Functions"); lua_sandbox.py stays interpreted (the Lua state's setup)
    "trisque/core/keyspace/scripting.py",
    "trisque/core/keyspace/lua_convert.py",
    "trisque/core/keyspace/functions.py",
    # MULTI/EXEC's state and Atomic, which every script run enters
    "trisque/core/keyspace/transactions.py",
]

# Hand-written C beside the mypyc group: a script run's two crossings
# between Python and lupa's Lua state (lua_sandbox.py says when it is used).
LUA_CALL = Extension("trisque.core.keyspace._lua_call", ["trisque/core/keyspace/lua_call.c"])
# The event loop's socket reads and writes without the GIL's release
# (shell/fdio.py falls back on os.read and os.write without it).
FDIO = Extension("trisque.shell._fdio", ["trisque/shell/fdio.c"])
OPTIONAL = {"trisque.core.keyspace._lua_call": "scripts run through lupa alone",
            "trisque.shell._fdio": "sockets read and written by os.read and os.write"}


def why_pure() -> str | None:
    """Why the core cannot be compiled here, or None if it can."""
    if os.environ.get("TRISQUE_PURE") == "1":
        return "TRISQUE_PURE=1"
    try:
        import mypyc.build  # noqa: F401
    except ImportError:
        return "mypy (mypyc) is not installed"
    compiler = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")[0]
    if shutil.which(compiler) is None:
        return f"no C compiler ({compiler})"
    if not Path(sysconfig.get_paths()["include"], "Python.h").exists():
        return "no Python headers (Debian: python3-dev)"
    return None


def remove_stale_builds() -> None:
    """An earlier compiled build left in the source tree (an editable
    install) would be imported instead of the sources: remove it."""
    here = Path(__file__).parent
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    for source in COMPILED:
        (here / source).with_suffix(suffix).unlink(missing_ok=True)
    for shared in here.glob("*__mypyc" + suffix):
        shared.unlink()
    (here / "trisque/core/keyspace" / ("_lua_call" + suffix)).unlink(missing_ok=True)
    (here / "trisque/shell" / ("_fdio" + suffix)).unlink(missing_ok=True)


class BuildOrFallBack(build_ext):
    """A compiler that fails (a missing header, a mypyc bug) leaves the
    interpreted core installed rather than no install at all."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # (distutils' errors have no common base here)
            print(f"trisque: installing the interpreted core (compiling failed: {exc})",
                  file=sys.stderr)
            remove_stale_builds()
            self.extensions = []

    def build_extension(self, ext: Extension) -> None:
        """lua_call.c or fdio.c failing alone leaves the compiled core (the
        sandbox and fdio.py fall back without their module)."""
        if ext.name not in OPTIONAL:
            super().build_extension(ext)
            return
        try:
            super().build_extension(ext)
        except Exception as exc:
            print(f"trisque: {OPTIONAL[ext.name]} ({ext.sources[0]} failed: {exc})",
                  file=sys.stderr)

    def copy_file(self, infile, outfile, *args, **kwargs):  # type: ignore[no-untyped-def]
        """An in-place build replaces a library by renaming a new file over
        it: distutils writes into the old one, and a node or test process
        that has it mapped dies of SIGBUS when the bytes change under it."""
        if not self.inplace:
            return super().copy_file(infile, outfile, *args, **kwargs)
        staged = f"{outfile}.{os.getpid()}.tmp"
        shutil.copyfile(infile, staged)
        os.replace(staged, outfile)
        return outfile, 1


def compiled_extensions() -> list[Extension]:
    from mypyc.build import mypycify
    # pip's isolated build has mypy but not the dependencies (hiredis...):
    # they are Any to mypyc; make test type-checks against them.  The strict
    # list in pyproject names modules not compiled here: no warning.
    return mypycify(["--ignore-missing-imports", "--no-warn-unused-configs", *COMPILED],
                    opt_level="3", group_name="trisque")  # shared library: trisque__mypyc


reason = why_pure()
if reason is None:
    try:
        ext_modules = [*compiled_extensions(), LUA_CALL, FDIO]
    except SystemExit:  # mypyc refused the sources (its errors are printed above)
        reason = "mypyc found errors"
if reason is not None:
    print(f"trisque: installing the interpreted core ({reason})", file=sys.stderr)
    remove_stale_builds()
    ext_modules = []

setup(ext_modules=ext_modules, cmdclass={"build_ext": BuildOrFallBack})
