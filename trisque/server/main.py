"""``trisque-server [config-file] [--directive value ...]``: start a node.

Wires the node core, the cluster rules and the persistence log together
and runs the trio shell until SHUTDOWN, SIGTERM or SIGINT.
"""

import os
import signal
import sys
import time

import trio

from ..core.admin.build_form import build_form, is_compiled, stale_sources
from ..core.admin.version import VERSION
from ..core.admin.config import Config, ConfigError
from ..core.node import Node
from .commands import COMMANDS
from ..shell import collector, heap, log, open_files
from .clients.connection import ClientServer
from ..shell.tls import bus_tls, client_tls, reload_on_change

USAGE = """\
Usage: trisque-server [/path/to/disque.conf] [--directive value ...]
       trisque-server --version
       trisque-server --check-aof [--fix] <file.aof>
       trisque-server --help

Examples:
       trisque-server                      (a node on 127.0.0.1:7711)
       trisque-server /etc/trisque/disque.conf
       trisque-server --port 7777 --dir /var/lib/trisque
       trisque-server disque.conf --loglevel verbose --cluster-join 10.0.0.2:7711

Directives are Disque's (port, bind, dir, logfile, loglevel, appendonly,
appendfsync, maxmemory, requirepass, cluster-node-timeout, ...); on the
command line they override the file.
"""


def parse_command_line(args):
    """Load the config file (if any) and the --directive overrides."""
    config = Config()
    if args and not args[0].startswith("--"):
        config.load_file(args[0])
        args = args[1:]
    lines = []
    for arg in args:
        if arg.startswith("--"):
            lines.append([arg[2:]])
        elif lines:
            lines[-1].append(arg)
        else:
            raise ConfigError(f"Invalid argument '{arg}': options start with --")
    from ..core.admin.config import quote
    text = "\n".join(" ".join([words[0]] + [quote(w) for w in words[1:]])
                     for words in lines)
    config.load_text(text, origin="(command line)")
    return config


def main(argv=None):
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in ("-h", "--help"):
        print(USAGE, end="")
        return 0
    if args and args[0] == "--check-aof":
        from .aof.check import main as check_aof
        return check_aof(args[1:])
    if args and args[0] in ("-v", "--version"):
        print(f"trisque-server v={VERSION} (Disque-compatible job broker, "
              f"Python {sys.version.split()[0]}, core {build_form()})")
        return 0
    try:
        config = parse_command_line(args)
    except (ConfigError, OSError) as exc:
        print(exc, file=sys.stderr)
        return 1
    try:
        log.configure(config.loglevel, config.logfile)
    except OSError as exc:
        print(f"Can't open the log file: {exc}", file=sys.stderr)
        return 1
    try:
        return trio.run(run, config)
    except KeyboardInterrupt:
        return 0


async def run(config):
    from ..cluster.tcp.transport import attach_cluster  # the cluster, wired in here
    from .aof.append_only_log import CRON_S, attach_log

    collector.tune()
    heap.tune()  # large blocks in their own mappings: no holes in the heap
    node = Node(config, os.urandom(20).hex(), time.time, table=COMMANDS)  # CLUSTER too
    collector.watch(node.stats, node.latency)
    config.on_change["loglevel"] = log.set_level
    open_files.fit_maxclients(config)  # a descriptor per client, or fewer clients
    config.on_change["maxclients"] = open_files.on_maxclients_set
    node.on_internal_error = _internal_error
    server = ClientServer(node)
    if not config.port and not config.tls_port:
        log.warning("port 0 and tls-port 0: no port to serve clients on")
        return 1
    try:
        if config.port:  # (port 0 with tls-port: TLS clients only, as Redis)
            server.bind(config.bind, config.port, config.tcp_backlog)
    except OSError as exc:
        log.warning(f"Could not create server TCP listening socket "
                    f"{config.bind}:{config.port}: {exc.strerror}")
        return 1
    try:  # certificates and keys are read now: a bad file stops start-up
        clients_tls = client_tls(config)
        cluster_tls = bus_tls(config)
    except ConfigError as exc:
        log.warning(f"Bad TLS configuration: {exc}")
        return 1
    for tls in (clients_tls, cluster_tls):
        if tls is not None:
            tls.count_failure = lambda: _count_tls_failure(node)
    reload_on_change(config, [t for t in (clients_tls, cluster_tls) if t is not None])
    if clients_tls is not None:
        try:
            server.bind_tls(config.bind, config.tls_port, config.tcp_backlog, clients_tls)
        except OSError as exc:
            log.warning(f"Could not create server TLS listening socket "
                        f"{config.bind}:{config.tls_port}: {exc.strerror}")
            return 1
    http = None
    if config.http_port:
        # The HTTP port (trisque.web) reads the node: wired in here, above both.
        from ..web.http_server import HttpServer
        from ..web.routes import node_routes
        http = HttpServer(node_routes(node, server.flush_dirty))
        try:
            http.bind(config.bind, config.http_port, config.tcp_backlog)
        except OSError as exc:
            log.warning(f"Could not create HTTP listening socket "
                        f"{config.bind}:{config.http_port}: {exc.strerror}")
            return 1
    shutdown = trio.Event()
    shutdown_mode = []

    def on_shutdown(mode):
        shutdown_mode.append(mode)
        shutdown.set()
    node.on_shutdown = on_shutdown

    log.notice(f"trisque {VERSION} starting, pid {os.getpid()}, port {config.port}")
    if is_compiled():
        log.notice("Core compiled (mypyc)")
        for source in stale_sources():
            log.warning(f"{source} changed since the core was compiled: it does not "
                        f"run until built again (make, or pip install -e .)")
    else:  # (setup.py says why at install time)
        log.notice("Core interpreted: not compiled at install time (TRISQUE_PURE=1, "
                   "or no mypy or C compiler then)")
    if config.pidfile:
        _write_pidfile(config.pidfile)
    status = 0
    try:
        async with trio.open_nursery() as nursery:
            # SIGTERM/SIGINT are ours before any client can connect: one
            # that came while the node started would otherwise meet trio's
            # KeyboardInterrupt (no "Received SIGINT", no clean shutdown).
            # One during start-up (a long AOF load) shuts down once started.
            await nursery.start(_watch_signals, shutdown, shutdown_mode)
            cluster_service = attach_cluster(node, nursery, server.flush_dirty, server.epoll)
            server.bus = cluster_service.transport  # served in the client loop's turns
            cluster_service.transport.tls = cluster_tls
            persistence = attach_log(node)
            if cluster_service is not None:
                cluster_service.bind()
            # Clients are served while the AOF loads: they get -LOADING (as
            # from Disque) rather than a connection that hangs.
            node.loading = True
            await server.serve(nursery)
            if clients_tls is not None:
                log.notice(f"TLS port {config.tls_port} (tls-auth-clients "
                           f"{config.tls_auth_clients})")
            if cluster_tls is not None:
                log.notice("Cluster bus over TLS (tls-cluster yes)")
            if http is not None:
                http.serve(nursery)
                log.notice(f"HTTP port {config.http_port}: /metrics and the dashboard")
            await persistence.load()
            node.loading = False
            if cluster_service is not None:
                # Then the node joins the bus (not before: see start()),
                # and its requests wait until its peers know it is back.
                server.hold()
                await cluster_service.start(nursery)
                server.release()
            # The deadlines, the cron and the periodic checks run in the
            # client loop's turns (shell/timers.py), from now on.
            nursery.start_soon(persistence.run, False)
            timers = server.timers
            timers.every(CRON_S, persistence.cron)
            if heap.trims():
                timers.every(heap.GIVE_BACK_PERIOD_S, heap.GiveBack(node).check)
            timers.start()
            log.notice("Ready to accept connections")
            await shutdown.wait()
            mode = shutdown_mode[0] if shutdown_mode else ""
            log.warning("User requested shutdown...")
            await persistence.close(rewrite=(mode == "REWRITE-AOF"))
            if cluster_service is not None:
                cluster_service.save()
            nursery.cancel_scope.cancel()
    except Exception as exc:  # trio wraps errors from the nursery in a group
        error = _config_error(exc)
        if error is None:
            raise
        log.warning(str(error))
        status = 1
    finally:
        if config.pidfile:
            try:
                os.unlink(config.pidfile)
            except OSError:
                pass
    log.warning("trisque is now ready to exit, bye bye...")
    return status


def _count_tls_failure(node):
    node.stats.tls_handshake_failures += 1  # INFO stats


def _config_error(exc):
    """The ConfigError in ``exc`` (possibly inside an exception group)."""
    if isinstance(exc, ConfigError):
        return exc
    for inner in getattr(exc, "exceptions", ()):
        found = _config_error(inner)
        if found is not None:
            return found
    return None


async def _watch_signals(shutdown, shutdown_mode, task_status=trio.TASK_STATUS_IGNORED):
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        task_status.started()
        async for signum in signals:
            name = "SIGTERM" if signum == signal.SIGTERM else "SIGINT"
            log.warning(f"Received {name} scheduling shutdown...")
            shutdown.set()


def _internal_error(command, argv, exc):
    """A command handler raised: log the traceback, answer an error, keep
    serving (the other clients and the stored jobs are not at fault)."""
    import traceback
    args = " ".join(a[:32].decode("utf-8", "replace") for a in argv[:8])
    log.warning(f"Internal error running '{args}': {exc!r}\n"
                + "".join(traceback.format_exception(exc)))
    return b"-ERR internal error in %s, see the server log\r\n" % command.lname.encode()


def _write_pidfile(path):
    try:
        with open(path, "w") as f:
            f.write(f"{os.getpid()}\n")
    except OSError as exc:
        log.warning(f"Failed to write PID file: {exc}")


if __name__ == "__main__":
    sys.exit(main())
