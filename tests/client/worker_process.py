"""A real worker process for tests/client/test_worker.py's SIGTERM tests.

    python -m tests.client.worker_process PORT QUEUE SHUTDOWN_S LOG [async]

Each job's body is how many seconds its handler runs; the handler appends
"start ID" and "done ID" lines to LOG."""

import asyncio
import sys
import time

from trisque.client import AsyncClient, AsyncWorker, Client, Worker


def main():
    port, queue, shutdown_s, log_path = sys.argv[1:5]
    use_async = sys.argv[5:] == ["async"]

    def note(line):
        with open(log_path, "a") as f:
            f.write(line + "\n")

    if use_async:
        async def handle(job):
            note(f"start {job.id}")
            await asyncio.sleep(float(job.body))
            note(f"done {job.id}")

        async def run():
            async with AsyncClient(f"127.0.0.1:{port}") as client:
                note("ready")
                await AsyncWorker(client, {queue: handle}, shutdown_timeout_s=float(shutdown_s),
                                  poll_ms=200).run()
        asyncio.run(run())
    else:
        def handle_sync(job):
            note(f"start {job.id}")
            time.sleep(float(job.body))
            note(f"done {job.id}")

        with Client(f"127.0.0.1:{port}") as client:
            note("ready")
            Worker(client, {queue: handle_sync}, shutdown_timeout_s=float(shutdown_s),
                   poll_ms=200).run()
    note("exited")


if __name__ == "__main__":
    main()
