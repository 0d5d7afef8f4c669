"""Small keyspace records kept on every node: what the framework
integrations share between processes (Celery's results and exchange
bindings, dramatiq's results).

A node's keyspace is its own (jobs are replicated, keys are not), so each
write goes to every node the client knows (learnt from HELLO) and counts as
done when one node took it; a read asks the nodes in the client's order and
takes the first answer that has the key.  A record survives while one node
that stored it lives; a node that joins later, or comes back empty, lacks
what was written before.
"""

from typing import Any, Optional

from trisque.client.calls import Call
from trisque.client.errors import NoNodeAvailableError, TrisqueError
from trisque.client.nodes import NodeAddress
from trisque.client.sync import Client
from trisque.client.wire import Arg


class EveryNode:
    def __init__(self, client: Client) -> None:
        self.client = client
        self._learned = False

    def nodes(self) -> list[NodeAddress]:
        if not self._learned:
            try:
                self.client.hello()
                self._learned = True
            except TrisqueError:
                pass
        return self.client.topology.order()

    def on(self, address: NodeAddress, *args: Arg) -> Any:
        return self.client.call_on(address, Call(tuple(args), lambda reply: reply))

    def write(self, *args: Arg) -> int:
        """The command on every node; how many ran it (the first error if
        none did)."""
        done, errors = 0, []
        for address in self.nodes():
            try:
                self.on(address, *args)
                done += 1
            except TrisqueError as e:
                errors.append(e)
        if not done:
            raise errors[0] if errors else NoNodeAvailableError([])
        return done

    def replies(self, *args: Arg) -> list[Any]:
        """The command's reply from every node that answered (at least one)."""
        answers, errors = [], []
        for address in self.nodes():
            try:
                answers.append(self.on(address, *args))
            except TrisqueError as e:
                errors.append(e)
        if not answers:
            raise errors[0] if errors else NoNodeAvailableError([])
        return answers

    def get(self, key: Arg) -> Optional[bytes]:
        """GET from the first node that has the key (None if none has it)."""
        errors = []
        nodes = self.nodes()
        for address in nodes:
            try:
                value = self.on(address, "GET", key)
            except TrisqueError as e:
                errors.append(e)
                continue
            if value is not None:
                return bytes(value)
        if len(errors) == len(nodes) and errors:
            raise errors[0]
        return None

    def first(self, *args: Arg) -> Any:
        """The command on the first node that answers (a counter, say)."""
        errors = []
        for address in self.nodes():
            try:
                return self.on(address, *args)
            except TrisqueError as e:
                errors.append(e)
        raise errors[0] if errors else NoNodeAvailableError([])
