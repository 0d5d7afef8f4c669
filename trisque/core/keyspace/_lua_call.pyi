# lua_call.c's module (built by setup.py beside the mypyc group)
from typing import Any, Callable


class Binding:
    def __init__(self, command: Callable[[tuple[Any, ...]], bytes]) -> None: ...
    def run(self, fcall: bool, handle: int, numkeys: int, argv: list[bytes]) -> Any: ...
