"""The native functions' configuration arguments, shared by run, validate and replay."""

from __future__ import annotations

import json
import os
from typing import Any, Iterable, Mapping, Optional, Union

ConfigSource = Union[Mapping[str, Any], str, "os.PathLike[str]", None]


def config_arguments(config: ConfigSource, preset: Optional[str], overrides: Iterable[str]) -> dict:
    """The native functions' configuration arguments for a dict, a TOML path or nothing."""
    arguments: dict = {"preset": preset, "overrides": list(overrides)}
    if isinstance(config, Mapping):
        arguments["config_json"] = json.dumps(config)
    elif config is not None:
        path = os.fspath(config)
        with open(path, encoding="utf-8") as toml_file:
            arguments["config_toml"] = toml_file.read()
        arguments["origin"] = path
    return arguments
