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
    faces = torch.stack([torch.from_numpy(np.repeat(np.repeat(_frame(seed).face, 2, 0), 2, 1) / 255.0).float()
                         for seed in (4, 9, 10)])
    faces[2] = 0.0                                       # a crop with no face gets no circle
    img = torch.zeros((3, 3, *faces.shape[1:]))
    gen = torch.Generator().manual_seed(0)
    for seed in range(20):
        img = crops._printed_circles(img, faces, np.random.default_rng(seed), gen)
    outside = (faces < 0.5)[:, None].expand_as(img)
    assert float(img[outside].abs().max()) == 0.0
    assert all(float(img[k][:, faces[k] > 0.5].abs().max()) > 0.0 for k in (0, 1))


def test_a_face_pixel_is_as_deep_as_the_squares_around_it_that_lie_in_the_face():
    face = torch.zeros((1, 64, 64))
    face[0, 10:31, 10:31] = 1.0                          # a 21 px square: its centre survives 10 erosions
    depth = crops._face_depth(face)
    assert float(depth[0, 20, 20]) == 11.0 and float(depth[0, 10, 10]) == 1.0 and float(depth[0, 5, 5]) == 0.0
    edge = torch.ones((1, 64, 64))                        # the crop's edge does not end a face
    assert float(crops._face_depth(edge).min()) == crops.MAX_PRINTED_RADIUS + 3


def test_textures_are_whole_cloths_of_every_kind_in_range():
    tex = crops._textures(np.random.default_rng(0), torch.Generator().manual_seed(0), 40, 64, "cpu")
    assert tex.shape == (40, 3, 64, 64)
    assert 0.0 <= float(tex.min()) and float(tex.max()) <= 255.0
    assert bool((tex.std((2, 3)).amax(1) > 1.0).all())   # each has a pattern, not one flat colour


def test_the_same_seed_gives_the_same_augmented_batch_and_another_seed_another():
    frames = [_frame(5)]

    def batch(seed):
        return next(crops.DeviceCrops(frames, "cpu", seed=seed, batch=6, size=96))

    a, b, c = batch(1), batch(1), batch(2)
    assert all(torch.equal(u, v) for u, v in zip(a, b))
    assert not torch.equal(a[0], c[0])
    assert 0.0 <= float(a[0].min()) and float(a[0].max()) <= 255.0
    assert a[0].shape == (6, 3, 96, 96) and a[1].shape == a[2].shape == a[3].shape == (6, 48, 48)


@pytest.mark.parametrize("kwargs", [dict(batch=0), dict(size=100), dict(stacked_share=1.5), dict(nested_share=-0.1),
                                    dict(stacked_share=0.6, nested_share=0.5)])
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



def test_a_batch_of_device_crops_never_makes_the_host_wait_on_the_device():
    """A wait (`nonzero`, `item`) stalls a GPU's host until the device catches up: the crops made crop by crop
    waited 89 times a batch (`benchmarks/crop_operations.py`)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from crop_operations import count

    maker = crops.DeviceCrops([_frame(11, 512), _frame(12, 512)], "cpu", seed=0, batch=16, size=128)
    x, maps = maker.cut()
    assert count(maker.cut)[1] == 0
    ops, waits = count(lambda: crops.augment(x, maps[:, 0], maker.rng, maker.gen))
    assert waits == 0 and ops < 1000


def _marked_frame(mark: tuple[int, int] | None) -> FaceTruth:
    """A 512 px frame, dark but for a small bright mark at `mark` (row, column at the output scale), where it names
    a disk lying on others; no outline anywhere, so other crops fall anywhere."""
    rect = np.zeros((512, 512, 3), np.uint8)
    blank = np.zeros((256, 256), np.uint8)
    nested = np.zeros((0, 2), np.int32)
    if mark is not None:
        rect[2 * mark[0] - 2: 2 * mark[0] + 2, 2 * mark[1] - 2: 2 * mark[1] + 2] = 255
        nested = np.array([mark], np.int32)
    return FaceTruth(rect=rect, face=blank, rim=blank, height=blank, nested=nested)


def test_nested_crops_are_centred_on_the_disks_lying_on_others():
    def share_showing(nested_share: float) -> float:
        maker = crops.DeviceCrops([_marked_frame((200, 40))], "cpu", seed=5, batch=200, size=128,
                                  nested_share=nested_share)
        x, _ = maker.cut()
        return float((x.amax(dim=(1, 2, 3)) > 0).float().mean())

    # 70 % of crops are centred near a disk; with every one of those on the disk lying on others, all 70 % show it
    assert share_showing(1.0) > 0.6
    assert share_showing(0.0) < 0.35
    # a frame naming no such disk falls back to the outlines (here none: anywhere) instead of failing
    maker = crops.DeviceCrops([_marked_frame(None)], "cpu", seed=5, batch=8, size=128, nested_share=1.0)
    assert maker.cut()[0].shape == (8, 3, 128, 128)
