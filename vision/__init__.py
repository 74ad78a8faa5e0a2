"""Vision: frame sources, the synthetic table renderer, detection, stacking, tracking, the per-frame pipeline.

Vision never imports the rules: it produces Scenes (tablesight.scene) and nothing more.
"""
