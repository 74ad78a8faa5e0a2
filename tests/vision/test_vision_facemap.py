"""The eye's network: what it is given, what it gives back, and a clear line when its file is missing or bad."""

from __future__ import annotations

import numpy as np
import pytest

from tablesight.errors import InputError
from vision.detect import detect_frame
from vision.facemap import MODEL_PATH, STRIDE, FaceMaps, face_maps
from vision.fit import DetectorConfig
from vision.synth.drawn import DrawnDisk, draw_table, identity_calibration


def test_the_shipped_model_is_small_and_gives_two_maps_at_half_resolution():
    assert MODEL_PATH.is_file() and MODEL_PATH.stat().st_size < 2_000_000
    img = draw_table([DrawnDisk(300, 300, "medium", 0, "red")], 3)[:405, :421]   # any size: padded inside
    maps = face_maps(img)
    assert maps.shape == (405 // STRIDE, 421 // STRIDE)
    assert maps.face.dtype == np.float32 and 0.0 <= maps.face.min() and maps.rim.max() <= 1.0
    # the disk's inside is a face, the felt far from it is not; its outline runs on its rim
    x, y = identity_calibration().table_to_rectified(np.array([[300.0, 300.0]]))[0]
    u, v = FaceMaps.to_map(np.array([x, y]))
    assert maps.face[int(v), int(u)] > 0.9 and maps.face[20, 20] < 0.1
    ru = FaceMaps.to_map(np.array([x + 32.0]))[0]
    assert maps.rim[int(round(v)), int(round(ru)) - 1: int(round(ru)) + 2].max() > 0.5


def test_maps_coordinates_round_trip():
    xy = np.array([[0.0, 0.0], [10.5, 3.25]])
    assert np.allclose(FaceMaps.to_rect(FaceMaps.to_map(xy)), xy)


@pytest.mark.parametrize("img", [np.zeros((40, 40), np.uint8), np.zeros((40, 40, 3), np.float32)])
def test_face_maps_refuse_what_is_not_a_colour_image(img):
    with pytest.raises(InputError):
        face_maps(img)


def test_a_missing_model_file_is_one_clear_line(tmp_path):
    with pytest.raises(InputError, match="model file is missing.*facemap_training"):
        detect_frame(draw_table([], 1), identity_calibration(),
                     config=DetectorConfig(model_path=str(tmp_path / "nope.onnx")))


def test_a_corrupt_model_file_is_one_clear_line(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a network")
    with pytest.raises(InputError, match="cannot be read"):
        detect_frame(draw_table([], 1), identity_calibration(), config=DetectorConfig(model_path=str(bad)))


def test_face_maps_must_match_in_shape():
    with pytest.raises(ValueError):
        FaceMaps(face=np.zeros((4, 4), np.float32), rim=np.zeros((4, 5), np.float32),
                 height=np.zeros((4, 4), np.float32))
    with pytest.raises(ValueError):
        FaceMaps(face=np.zeros((4, 4), np.float32), rim=np.zeros((4, 4), np.float32),
                 height=np.zeros((4, 5), np.float32))


def test_batches_made_by_a_worker_process_are_the_ones_made_in_process():
    """The trainer's batches may be made beside it (--loader-workers): the same seed gives the same crops, so a run
    on a GPU machine and one on two cores train on the same data."""
    pytest.importorskip("torch")
    from vision.facemap_training import CROP, _crops
    from vision.synth.facemaps import FaceTruth

    rng = np.random.default_rng(1)
    samples = [FaceTruth(rect=rng.integers(0, 255, (320, 320, 3), dtype=np.uint8),
                         face=rng.integers(0, 255, (160, 160), dtype=np.uint8),
                         rim=rng.integers(0, 255, (160, 160), dtype=np.uint8),
                         height=rng.integers(0, 255, (160, 160), dtype=np.uint8)) for _ in range(2)]
    here = next(_crops(samples, seed=7, batch=2, stacked_share=0.0, workers=0))
    beside = next(_crops(samples, seed=7, batch=2, stacked_share=0.0, workers=1))
    assert here[0].shape == (2, CROP, CROP, 3) and here[1].shape == (2, CROP // 2, CROP // 2)
    for a, b in zip(here, beside):
        assert np.allclose(a, b)
    other = next(_crops(samples, seed=8, batch=2, stacked_share=0.0, workers=0))
    assert not np.allclose(here[0], other[0])
