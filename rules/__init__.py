"""Rules: pure functions from a Scene to a Report. No cv2, no I/O, no globals.

Game-agnostic geometry lives at this level (`rules.geometry`); each game is a sibling package
(`rules.diskwars`, later `rules.kingsofwar`, ...) that never needs another game's code.
"""
