"""The append-only file (placeholder until persistence lands)."""

import trio


class NoPersistence:
    async def load(self):
        pass

    async def run(self):
        await trio.sleep_forever()

    async def close(self, rewrite=False):
        pass


def attach_log(node):
    return NoPersistence()
