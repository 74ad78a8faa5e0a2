"""The learned rim verifier: its file, its networks' validation, what it was trained on, and training itself."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tablesight.errors import InputError
from vision import verifier as V


def _tiny_mlp(inputs: int, seed: int = 0) -> V.Mlp:
    rng = np.random.default_rng(seed)
    return V.Mlp(np.zeros(inputs, np.float32), np.ones(inputs, np.float32),
                 (rng.normal(size=(inputs, 4)).astype(np.float32), rng.normal(size=(4, 1)).astype(np.float32)),
                 (np.zeros(4, np.float32), np.zeros(1, np.float32)))


def test_shipped_verifier_loads_and_scores_in_range():
    ver = V.load_verifier()
    x = np.random.default_rng(1).normal(size=(5, 7, V.RAY_FEATURES)).astype(np.float32)
    p = ver.ray(x)
    assert p.shape == (5, 7) and np.all((p >= 0) & (p <= 1))


def test_shipped_verifier_was_trained_on_tuning_seeds_only():
    from vision.synth.seeds import DRAWN_TUNING_SEEDS, GATE_SEEDS, TUNING_SEEDS

    with np.load(V.MODEL_PATH) as data:
        ranges = f"{data['info_ray_seeds']}, {data['info_disk_seeds']}"
    used = set()
    for part in ranges.split(","):
        lo, _, hi = part.strip().partition("-")
        used |= set(range(int(lo), int(hi or lo) + 1))
    assert used, ranges
    assert used <= set(TUNING_SEEDS) | set(DRAWN_TUNING_SEEDS)
    assert not used & set(GATE_SEEDS)


@pytest.mark.parametrize("bad", [
    dict(weights=(), biases=()),
    dict(weights=(np.zeros((3, 1), np.float32),), biases=()),
    dict(mean=np.zeros(4, np.float32)),
])
def test_mlp_refuses_mismatched_layers(bad):
    kw = dict(mean=np.zeros(3, np.float32), scale=np.ones(3, np.float32),
              weights=(np.zeros((3, 1), np.float32),), biases=(np.zeros(1, np.float32),))
    kw.update(bad)
    with pytest.raises(ValueError):
        V.Mlp(**kw)


def test_mlp_refuses_wrong_input_width():
    with pytest.raises(ValueError, match="expected 6 inputs"):
        _tiny_mlp(6)(np.zeros((2, 5), np.float32))


def test_verifier_refuses_networks_of_other_features():
    with pytest.raises(ValueError, match="ray network"):
        V.RimVerifier(_tiny_mlp(5), _tiny_mlp(len(V.DISK_FEATURE_NAMES)))
    with pytest.raises(ValueError, match="disk network"):
        V.RimVerifier(_tiny_mlp(V.RAY_FEATURES), _tiny_mlp(3))
    with pytest.raises(ValueError, match="threshold"):
        V.RimVerifier(_tiny_mlp(V.RAY_FEATURES), _tiny_mlp(len(V.DISK_FEATURE_NAMES)), threshold=1.0)


def test_verifier_round_trips_through_its_file(tmp_path):
    ver = V.RimVerifier(_tiny_mlp(V.RAY_FEATURES, 2), _tiny_mlp(len(V.DISK_FEATURE_NAMES), 3), 0.4)
    ver.save(tmp_path / "v.npz", ray_seeds="1000-1001")
    again = V.RimVerifier.load(tmp_path / "v.npz")
    x = np.random.default_rng(4).normal(size=(9, V.RAY_FEATURES)).astype(np.float32)
    assert np.allclose(again.ray(x), ver.ray(x)) and again.threshold == pytest.approx(0.4)


def test_corrupt_verifier_file_is_a_clear_input_error(tmp_path):
    bad = tmp_path / "broken.npz"
    bad.write_bytes(b"not a model")
    with pytest.raises(InputError, match="rim verifier broken.npz"):
        V.load_verifier(str(bad))


@pytest.mark.parametrize("mask, expected", [
    ([1, 1, 0, 0, 0, 0], 2 / 6),
    ([1, 0, 0, 0, 1, 1], 3 / 6),      # runs wrap round the circle
    ([1, 1, 1, 1, 1, 1], 1.0),
    ([0, 0, 0, 0, 0, 0], 0.0),
])
def test_longest_run_is_circular(mask, expected):
    assert V.longest_run(np.array([mask], bool))[0] == pytest.approx(expected)


def test_ray_profiles_read_felt_ring_and_art_where_they_are():
    """A drawn disk: the outside samples see the felt, the ring fraction sees the ring colour."""
    import cv2

    img = np.full((200, 200, 3), (40, 110, 50), np.uint8)
    cv2.circle(img, (100, 100), 40, (40, 40, 200), -1)          # red ring
    cv2.circle(img, (100, 100), 31, (200, 200, 200), -1)        # pale art
    angles = np.arange(8) * (2 * math.pi / 8)
    lab = V.ray_profiles(img.astype(np.float32), np.array([100.0]), np.array([100.0]), np.array([40.0]), angles)
    felt = cv2.cvtColor(np.full((1, 1, 3), (40, 110, 50), np.uint8).astype(np.float32) / 255, cv2.COLOR_BGR2LAB)
    ring = cv2.cvtColor(np.full((1, 1, 3), (40, 40, 200), np.uint8).astype(np.float32) / 255, cv2.COLOR_BGR2LAB)
    assert np.allclose(lab[0, :, -1], felt[0, 0], atol=2.0)
    assert np.allclose(lab[0, :, V.RING_INDEX], ring[0, 0], atol=2.0)


@pytest.mark.slow
def test_training_on_drawn_tables_learns_to_tell_disks(tmp_path):
    """A verifier trained on a few drawn tables ranks the disks of an unseen drawn table above the rest."""
    from vision import verifier_training as T
    from vision.synth.seeds import DRAWN_TUNING_SEEDS

    data = T.gather([], drawn_seeds=6, log=lambda *a: None)
    ver, stats = T.train(data, seed=0, log=lambda *a: None)
    img, truth = T._drawn_truth(DRAWN_TUNING_SEEDS[-1])
    from vision.sizes import DiskSizes
    from vision.synth.drawn import identity_calibration

    fd = T._label(img, identity_calibration(), DiskSizes(), truth, DRAWN_TUNING_SEEDS[-1])
    p = ver.ray(fd.ray_x)
    keep = fd.label >= 0
    M = len(fd.label)
    f = V.disk_features(p, np.zeros_like(p, bool), np.zeros_like(p, bool), fd.size_idx, fd.fit, np.zeros(M),
                        np.ones(M))
    score, label = ver.disk(f)[keep], fd.label[keep]
    pos, neg = score[label == 1], score[label == 0]
    assert len(pos) >= 10 and len(neg) >= 10
    auc = (pos[:, None] > neg[None, :]).mean()
    assert auc >= 0.9, f"disks ranked above the rest in {auc:.0%} of pairs"
    assert stats["ray_seeds"] == "2000-2002" and stats["disk_seeds"] == "2003-2005"


def test_training_refuses_gate_seed_folders(tmp_path):
    import json

    from vision import verifier_training as T
    from vision.synth.seeds import GATE_SEEDS

    (tmp_path / "f").mkdir()
    (tmp_path / "f" / "manifest.json").write_text(json.dumps({"seed": GATE_SEEDS[0], "frames": [],
                                                               "disk_diameters_mm": {"small": 44, "medium": 64,
                                                                                     "large": 89}}))
    with pytest.raises(InputError, match="gate seed"):
        T.gather([tmp_path / "f"])


@pytest.mark.parametrize("folders, drawn, message", [
    (["no-such-folder"], 0, "not a `tablesight synth` folder"),
    ([], -1, "--drawn"),
    ([], 10_000, "--drawn"),
])
def test_training_refuses_bad_input_with_one_line(tmp_path, folders, drawn, message):
    from vision import verifier_training as T

    with pytest.raises(InputError, match=message):
        T.gather([tmp_path / f for f in folders], drawn_seeds=drawn)


def test_detector_takes_a_verifier_file_of_ones_own(tmp_path):
    """`DetectorConfig(verifier_path=...)` scores with that file (here a copy of the shipped one: same disks);
    a file that is not a verifier is one clear error."""
    import shutil

    from vision.detect import DetectorConfig, detect_frame
    from vision.synth.drawn import draw_table, identity_calibration, random_layout

    img = draw_table(random_layout(31, n=10, stacks=2), 31)
    own = tmp_path / "own.npz"
    shutil.copy(V.MODEL_PATH, own)
    shipped = detect_frame(img, identity_calibration())
    mine = detect_frame(img, identity_calibration(), config=DetectorConfig(verifier_path=str(own)))
    assert [(d.x_mm, d.y_mm, d.z) for d in mine.disks] == [(d.x_mm, d.y_mm, d.z) for d in shipped.disks]
    bad = tmp_path / "bad.npz"
    bad.write_text("nonsense")
    with pytest.raises(InputError, match="rim verifier bad.npz"):
        detect_frame(img, identity_calibration(), config=DetectorConfig(verifier_path=str(bad)))
    with pytest.raises(ValueError, match="verifier_path"):
        DetectorConfig(verifier_path=3)
