"""tests/server/test_lua_libs.py once more on lupa's path: the servers this
module starts run scripts with the C binding off (TRISQUE_LUA_BINDING=0,
lua_sandbox.py), the path of an install without it."""

import os

import pytest

from tests.server.test_lua_libs import *  # noqa: F401,F403 (its tests and fixtures)


@pytest.fixture(scope="module", autouse=True)
def lupa_path():
    # (module scope, autouse: set before the module's shared server starts)
    before = os.environ.get("TRISQUE_LUA_BINDING")
    os.environ["TRISQUE_LUA_BINDING"] = "0"
    yield
    if before is None:
        del os.environ["TRISQUE_LUA_BINDING"]
    else:
        os.environ["TRISQUE_LUA_BINDING"] = before
