"""Configuration values every directive module shares: the error a refused
value raises, and Redis's memory sizes ('64mb', '1gb'), read and written.
A leaf: config.py and the modules that parse a directive of their own
(output_limit.py) both import it."""


class ConfigError(Exception):
    pass


_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1024, "m": 1000**2, "mb": 1024**2,
          "g": 1000**3, "gb": 1024**3}


def parse_memory(text: str) -> int:
    """'1gb' -> 1073741824, as Redis's memtoll."""
    text = text.strip().lower()
    digits = text.rstrip("kmgb")
    unit = text[len(digits):]
    if unit not in _UNITS or not digits.lstrip("-").isdigit():
        raise ConfigError("argument must be a memory value")
    return int(digits) * _UNITS[unit]


def format_memory(value: int) -> str:
    for unit in ("gb", "mb", "kb"):
        size = _UNITS[unit]
        if value and value % size == 0:
            return f"{value // size}{unit}"
    return str(value)
