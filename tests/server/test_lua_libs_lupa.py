"""tests/server/test_lua_libs.py once more on lupa's path (tests/server/lupa_path.py)."""

from tests.server.lupa_path import lupa_path  # noqa: F401 (autouse: the binding off)
from tests.server.test_lua_libs import *  # noqa: F401,F403 (its tests and fixtures)
