from typing import List, Optional, Tuple

__version__: str

class ConfigError(ValueError): ...
class SimulationError(RuntimeError): ...

def run_json(
    preset: Optional[str] = ...,
    config_json: Optional[str] = ...,
    config_toml: Optional[str] = ...,
    origin: Optional[str] = ...,
    overrides: List[str] = ...,
    seed: Optional[int] = ...,
) -> str: ...
def presets() -> List[Tuple[str, str]]: ...
def preset_toml(name: str) -> str: ...
