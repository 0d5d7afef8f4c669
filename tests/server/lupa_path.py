"""The fixture of the ``*_lupa.py`` modules: they import another module's
tests and run them with the C binding off (TRISQUE_LUA_BINDING=0,
lua_sandbox.py), the path of an install without it."""

import os

import pytest


@pytest.fixture(scope="module", autouse=True)
def lupa_path():
    # (module scope, autouse: set before the module's shared server starts;
    # its servers inherit the environment)
    before = os.environ.get("TRISQUE_LUA_BINDING")
    os.environ["TRISQUE_LUA_BINDING"] = "0"
    yield
    if before is None:
        del os.environ["TRISQUE_LUA_BINDING"]
    else:
        os.environ["TRISQUE_LUA_BINDING"] = before
