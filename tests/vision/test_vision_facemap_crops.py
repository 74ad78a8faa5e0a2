"""Training crops cut and augmented by torch on the training device: they keep the frame's geometry, the printed
circles stay on the faces, and the same seed gives the same batch."""

from __future__ import annotations

import numpy as np
import pytest

from vision.synth.facemaps import FaceTruth

torch = pytest.importorskip("torch")
crops = pytest.importorskip("vision.facemap_crops")


def _frame(seed: int, size: int = 384) -> FaceTruth:
    """A frame whose picture is its own face map: white where a disk's face is seen, black elsewhere."""
    import cv2

    rng = np.random.default_rng(seed)
    face = np.zeros((size // 2, size // 2), np.uint8)
    for _ in range(6):
        cv2.circle(face, (int(rng.integers(20, size // 2 - 20)), int(rng.integers(20, size // 2 - 20))),
                   int(rng.integers(8, 20)), 255, -1)
    rim = cv2.morphologyEx(face, cv2.MORPH_GRADIENT, np.ones((3, 3), np.uint8))
    rect = np.repeat(cv2.resize(face, (size, size), interpolation=cv2.INTER_NEAREST)[..., None], 3, 2)
    return FaceTruth(rect=rect, face=face, rim=rim, height=(face // 2).astype(np.uint8))


def test_a_cut_crop_shows_its_targets_under_every_turn_and_mirror():
    maker = crops.DeviceCrops([_frame(1), _frame(2)], "cpu", seed=3, batch=24, size=128)
    x, maps = maker.cut()
    assert x.shape == (24, 3, 128, 128) and maps.shape == (24, 3, 64, 64)
    picture = x[:, 0, ::2, ::2] > 127            # the picture at the targets' scale
    assert torch.equal(picture, maps[:, 0] > 0.5)
    assert torch.equal(maps[:, 2] > 0.2, maps[:, 0] > 0.5)   # the height target moved with the face


def test_printed_circles_never_leave_the_faces():
    face = torch.from_numpy(np.repeat(np.repeat(_frame(4).face, 2, 0), 2, 1) / 255.0).float()
    img = torch.zeros((3, *face.shape))
    for seed in range(20):
        img = crops._printed_circles(img, face, np.random.default_rng(seed))
    assert float(img[:, face < 0.5].abs().max()) == 0.0
    assert float(img[:, face > 0.5].abs().max()) > 0.0


def test_the_same_seed_gives_the_same_augmented_batch_and_another_seed_another():
    frames = [_frame(5)]

    def batch(seed):
        return next(crops.DeviceCrops(frames, "cpu", seed=seed, batch=6, size=96))

    a, b, c = batch(1), batch(1), batch(2)
    assert all(torch.equal(u, v) for u, v in zip(a, b))
    assert not torch.equal(a[0], c[0])
    assert 0.0 <= float(a[0].min()) and float(a[0].max()) <= 255.0
    assert a[0].shape == (6, 3, 96, 96) and a[1].shape == a[2].shape == a[3].shape == (6, 48, 48)


@pytest.mark.parametrize("kwargs", [dict(batch=0), dict(size=100), dict(stacked_share=1.5)])
def test_bad_settings_are_refused(kwargs):
    args = dict(samples=[_frame(6)], device="cpu", seed=0, batch=2, size=96) | kwargs
    with pytest.raises(ValueError):
        crops.DeviceCrops(**args)


def test_no_frames_is_refused():
    with pytest.raises(ValueError, match="no training frames"):
        crops.DeviceCrops([], "cpu", seed=0, batch=2)


def test_the_trainer_trains_on_crops_made_on_the_device():
    from vision.facemap_training import train

    net = train([_frame(7, 512)], [_frame(8, 512)], steps=2, batch=2, seed=0, log_every=1, crops_on_device=True)
    assert not net.training

