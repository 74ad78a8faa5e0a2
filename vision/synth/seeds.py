"""Named seed ranges. Detectors are tuned on TUNING_SEEDS only and gated on GATE_SEEDS, which are never used for
tuning; tests of the renderer itself use TEST_SEEDS. The drawn tables of `vision.synth.drawn` (a second disk print)
that the rim verifier learns from use DRAWN_TUNING_SEEDS; the unit tests draw theirs from seeds below 1000. The
ranges are disjoint (checked in the tests)."""

TUNING_SEEDS: tuple[int, ...] = tuple(range(1000, 1040))
GATE_SEEDS: tuple[int, ...] = tuple(range(9000, 9020))
TEST_SEEDS: tuple[int, ...] = tuple(range(500, 510))
DRAWN_TUNING_SEEDS: tuple[int, ...] = tuple(range(2000, 2080))
