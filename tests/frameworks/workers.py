"""A framework's worker as a real process: started in a session of its
own (its forked children are stopped with it), its output in a log file
that every failure message ends with."""

import os
import signal
import subprocess
import time


class Worker:
    def __init__(self, command, env, cwd, log_path):
        self.command = list(command)
        self.env = env
        self.log_path = log_path
        self._log = open(log_path, "wb")
        self.proc = subprocess.Popen(self.command, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                                     stdout=self._log, stderr=subprocess.STDOUT,
                                     start_new_session=True)

    def log(self, tail=6000):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")[-tail:]

    def failure(self, what):
        return AssertionError(f"{what}\n--- {' '.join(self.command)} (exit code "
                              f"{self.proc.poll()}) said:\n{self.log()}")

    def wait_for(self, condition, timeout=15.0, interval=0.05, message="condition",
                 exits=False):
        """Poll ``condition`` until it returns a true value; fail (with the
        worker's log) when time runs out or (unless ``exits``) the worker
        exits."""
        deadline = time.monotonic() + timeout
        while True:
            value = condition()
            if value:
                return value
            if not exits and self.proc.poll() is not None:
                raise self.failure(f"the worker exited while waiting for {message}")
            if time.monotonic() > deadline:
                raise self.failure(f"timed out after {timeout}s waiting for {message}")
            time.sleep(interval)

    def stop(self, grace_s=5.0):
        """SIGTERM (a warm shutdown), then SIGKILL to the whole group."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(grace_s)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # forked children that outlived it
        except ProcessLookupError:
            pass
        self.proc.wait()
        self._log.close()
