"""The synthetic Diskwars table: a seeded renderer of overhead webcam frames with exact ground truth.

- `scenes.random_table(seed, tier)` -> TableSetup (what lies on the table; `.scene()` is the ground truth)
- `camera.random_camera(...)` / `table_camera(seed, tier, resolution)` -> SynthCamera (true lens and pose)
- `render.render_frame(setup, camera)` -> RenderedFrame (image, JPEG bytes, ground-truth Scene, marker corners)
- `boards.render_boards(camera, ...)` -> chessboard photos for lens calibration
- `sequence.demo_sequence(seed)` -> a short game-like clip for the demo table
"""
