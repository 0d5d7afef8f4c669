"""The node says which form of its core runs: compiled by mypyc or
interpreted (setup.py), in --version, INFO server and its start-up log.
TRISQUE_EXPECT_BUILD (compiled or interpreted; make test and make
test-pure set it) also checks that the install gave the form expected."""

import os
import subprocess

from tests.harness import Server, server_command, wait_for
from trisque.core.admin.build_form import build_form


def test_the_node_says_which_core_runs():
    form = build_form()  # this process imports the same install the server runs
    expected = os.environ.get("TRISQUE_EXPECT_BUILD")
    if expected:
        assert form.startswith(expected), (form, expected)
    version = subprocess.run(server_command() + ["--version"], capture_output=True,
                             text=True, check=True).stdout
    assert f"core {form}" in version
    server = Server().start()
    try:
        assert server.client().info("server")["trisque_build"] == form
        line = "Core compiled (mypyc)" if form.startswith("compiled") else "Core interpreted"
        wait_for(lambda: line in server.log(), message="the core's form in the log")
    finally:
        server.cleanup()
