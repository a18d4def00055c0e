"""The theory checked against simulation at configurations drawn at random from the range a
user may pick (``attnsignal validate``).

Modules: :mod:`.box` (the box of configurations and the seeded draw), :mod:`.plan` (a
configuration's schedule and run length from the theory, and the effective dynamics' prediction
at exactly the runs' records — a task of a pool worker), :mod:`.accuracy_map` (the map: the
predictions and the chain-engine sweeps on the sweep machinery, compared, resumable),
:mod:`.outputs` (the table, the figure and the documentation section).

Python::

    from attnsignal.validate import draw_configs, run_map

    configs = draw_configs(60, seed=27)
    result = run_map(configs, "out/map", runs=128, executor="local")
    result.summary()                       # the fractions against the targets
"""

from .accuracy_map import MapResult, MapSettings, run_map
from .box import BOX, MapBox, MapConfig, draw_configs

__all__ = ["BOX", "MapBox", "MapConfig", "draw_configs", "MapSettings", "MapResult", "run_map"]
