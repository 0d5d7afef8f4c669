"""CLUSTER MEET | NODES | INFO | MYID | FORGET | RESET | SAVECONFIG | LEAVING."""

import ipaddress
import os
from typing import Any

from ..protocol import resp
from ..protocol.args import upper
from ..protocol.errors import CommandError, SYNTAX
from ..core.admin.commands_server import flushall
from ..core.command import Commands

COMMANDS = Commands("cluster")
command = COMMANDS.command

@command("CLUSTER", -2, "admin readonly",
         "Cluster membership and state",
         "MEET ip port | NODES | INFO | FORGET node | RESET HARD|SOFT | LEAVING yes|no | ...")
def cluster_(node: Any, client: Any, argv: list[bytes]) -> bytes:
    cluster = node.cluster
    membership = getattr(cluster, "membership", None)
    if membership is None:
        raise CommandError("ERR This instance has cluster support disabled")
    sub = upper(argv[1])
    argc = len(argv)
    if sub == "MEET" and argc == 4:
        ip = argv[2].decode(errors="replace")
        try:
            port = int(argv[3])
        except ValueError:
            raise CommandError(f"ERR Invalid TCP port specified: {argv[3].decode(errors='replace')}") from None
        if not 0 < port < 65536 - 10000 or not _valid_ip(ip):
            raise CommandError(f"ERR Invalid node address specified: {ip}:{port}")
        membership.meet(ip, port, port + 10000, node.now_ms())
        return resp.OK
    if sub == "NODES" and argc == 2:
        return resp.bulk("".join(line + "\n" for line in membership.nodes_lines()))
    if sub == "MYID" and argc == 2:
        return resp.bulk(node.id)
    if sub == "INFO" and argc == 2:
        return resp.bulk("".join(f"{k}:{v}\r\n" for k, v in cluster.info_fields()))
    if sub == "SAVECONFIG" and argc == 2:
        _save(cluster)
        return resp.OK
    if sub == "FORGET" and argc == 3:
        node_id = argv[2].decode(errors="replace")
        if len(node_id) != 40:
            raise CommandError("ERR Invalid node identifier")
        target = membership.nodes.get(node_id)
        if target is None:
            raise CommandError(f"ERR Unknown node {node_id}")
        if target.myself:
            raise CommandError("ERR I tried hard but I can't forget myself...")
        membership.forget(target, node.now_ms())
        return resp.OK
    if sub == "RESET" and argc in (2, 3):
        hard = False
        if argc == 3:
            mode = upper(argv[2])
            if mode not in ("HARD", "SOFT"):
                raise CommandError(SYNTAX)
            hard = mode == "HARD"
        new_id = os.urandom(20).hex() if hard else None
        membership.reset(new_id)
        if new_id:
            cluster.set_node_id(new_id)
        flushall(node)
        _save(cluster)
        return resp.OK
    if sub == "LEAVING" and argc in (2, 3):
        me = membership.myself
        if argc == 2:
            return b"+yes\r\n" if me.leaving else b"+no\r\n"
        answer = upper(argv[2])
        if answer not in ("YES", "NO"):
            raise CommandError("ERR Wrong argument for CLUSTER LEAVING. Use 'yes' or 'no'")
        if me.leaving != (answer == "YES"):
            me.leaving = answer == "YES"
            membership.update_reachable()
            membership.dirty = True
            _save(cluster)
        return resp.OK
    raise CommandError("ERR Wrong CLUSTER subcommand or number of arguments")


def _save(cluster: Any) -> None:
    """Write nodes.conf now.  If that fails the change stays in effect (and
    nodes.conf dirty: the cron keeps trying); the client is told."""
    try:
        cluster.save_config()
    except OSError as exc:
        raise CommandError("ERR error saving the cluster node config: "
                           f"{exc.strerror or exc}") from None


def _valid_ip(ip: str) -> bool:
    try:
        ipaddress.ip_address(ip)
    except ValueError:
        return False
    return True
