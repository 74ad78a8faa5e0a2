"""tablesight: the shared seams of the project — file formats, the Scene, and the command line.

`rules/`, `vision/`, `calibration/` and `webui/` meet only through what is defined here (and the
Report type of `rules/`). Nothing in this package imports cv2.
"""

__version__ = "0.1.0"
