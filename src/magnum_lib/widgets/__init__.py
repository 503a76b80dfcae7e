"""Interactive explorers for the notebooks (ipywidgets UI over model code).

Each explorer is built by a function that returns an object with ``.widget`` (display
it), ``.controls`` (the sliders/dropdowns by name), ``.readout`` and ``.result`` (the
latest model answer), so tests and benchmarks drive it without a browser. The models
live beside them (``queue_model``, ``catalog_model``) and carry no widget code.

Note: ``magnum_lib.widgets.queue_explorer`` is the *function* (it shadows its module);
import classes from the modules, e.g. ``from magnum_lib.widgets.queue_explorer import
QueueExplorer``.
"""
from magnum_lib.widgets.catalog_explorer import CatalogExplorer, catalog_explorer
from magnum_lib.widgets.queue_explorer import QueueExplorer, queue_explorer

__all__ = ["CatalogExplorer", "QueueExplorer", "catalog_explorer", "queue_explorer"]
