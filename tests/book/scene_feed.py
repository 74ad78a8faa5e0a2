"""A feed that shows one fixed scene: what the book's routes read the current table from, in API tests."""

from __future__ import annotations

from dataclasses import dataclass

from tablesight.scene import Scene


@dataclass
class _State:
    scene: Scene


class SceneFeed:
    def __init__(self, scene: Scene):
        self.scene = scene

    def state(self) -> _State:
        return _State(self.scene)
