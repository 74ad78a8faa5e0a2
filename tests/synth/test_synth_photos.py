"""The printed photos can come from a file instead of scikit-image, for a training machine without it: the same
pictures, every name there, and a bad file refused without changing anything."""

from __future__ import annotations

import numpy as np
import pytest

from vision.synth import art


@pytest.fixture
def from_scikit_image():
    art.use_saved_photos(None)
    yield
    art.use_saved_photos(None)


def test_saved_photos_are_the_ones_scikit_image_gives(tmp_path, from_scikit_image):
    path = tmp_path / "photos.npz"
    art.save_photos(path)
    with np.load(path) as z:
        assert sorted(z.files) == sorted(art.PHOTO_NAMES)
        coffee = z["coffee"]
    assert np.array_equal(coffee, art.photo("coffee"))
    # drawn from the file: a file whose coffee is another picture gives that picture
    with np.load(path) as z:
        other = {name: z[name] for name in z.files} | {"coffee": np.full((8, 8, 3), 7, np.uint8)}
    np.savez(path, **other)
    art.use_saved_photos(path)
    assert np.array_equal(art.photo("coffee"), np.full((8, 8, 3), 7, np.uint8))
    art.use_saved_photos(None)
    assert np.array_equal(art.photo("coffee"), coffee)


@pytest.mark.parametrize("content", ["missing", "not a zip", "a name short"])
def test_a_bad_photo_file_is_refused_and_changes_nothing(tmp_path, from_scikit_image, content):
    path = tmp_path / "photos.npz"
    if content == "not a zip":
        path.write_bytes(b"not an npz file")
    elif content == "a name short":
        np.savez(path, **{name: np.zeros((4, 4, 3), np.uint8) for name in art.PHOTO_NAMES[1:]})
    before = art.photo("coffee")
    with pytest.raises(ValueError, match="photo"):
        art.use_saved_photos(path)
    assert np.array_equal(art.photo("coffee"), before)


def test_the_trainer_refuses_a_bad_photo_file_in_one_line(tmp_path, capsys, from_scikit_image):
    pytest.importorskip("torch")
    from vision.facemap_training import main

    assert main(["--photos", str(tmp_path / "none.npz")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("facemap_training: --photos ") and err.count("\n") == 1
