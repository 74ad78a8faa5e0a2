"""Named seed ranges. Detectors are tuned on TUNING_SEEDS only and gated on GATE_SEEDS, which are never used for
tuning; tests of the renderer itself use TEST_SEEDS. The drawn tables of `vision.synth.drawn` (a second disk print,
which no training run uses) are drawn by the unit tests from seeds below 1000. The randomized world
(`vision.synth.world`) has ranges of its own: the eye's network and its pair judge (`vision.pairjudge`) train on
WORLD_TRAINING_SEEDS, the verdict that weighs its circles (`vision.verdict`) on WORLD_VERDICT_SEEDS (maps of frames
the network never saw, so the verdict learns the network's real mistakes), its settings are chosen on
WORLD_TUNING_SEEDS, and every family (the held-out ones above all) is gated on WORLD_GATE_SEEDS. The ranges are
disjoint (checked in the tests)."""

TUNING_SEEDS: tuple[int, ...] = tuple(range(1000, 1040))
GATE_SEEDS: tuple[int, ...] = tuple(range(9000, 9020))
TEST_SEEDS: tuple[int, ...] = tuple(range(500, 510))
WORLD_TRAINING_SEEDS: tuple[int, ...] = tuple(range(3000, 3200))
WORLD_VERDICT_SEEDS: tuple[int, ...] = tuple(range(3200, 3400))
WORLD_TUNING_SEEDS: tuple[int, ...] = tuple(range(3400, 3440))
WORLD_GATE_SEEDS: tuple[int, ...] = tuple(range(9500, 9540))
