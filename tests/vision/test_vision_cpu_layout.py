"""The networks' CPU layout (vision.cpu_layout): the rewritten graph computes what the file computes, in whole
channel blocks, and a graph it does not know is run as it is."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from vision.cpu_layout import BLOCK, Unsupported, for_cpu, input_offset, padded, with_input_shape


def _run(model_bytes: bytes, x: np.ndarray) -> np.ndarray:
    """The model's output for input x, given less the offset the model asks for (as its callers give it)."""
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(model_bytes, opts, providers=["CPUExecutionProvider"])
    x = x - np.float32(input_offset(sess.get_modelmeta().custom_metadata_map))
    return sess.run(None, {sess.get_inputs()[0].name: x})[0]


def _tiny_face_net(seed: int = 0, extra: str | None = None) -> onnx.ModelProto:
    """The face network's shape in small: input scaled by Mul/Sub, a strided 3x3 convolution to 12 channels, a
    depthwise one, a pointwise one to 24, a strided one to 20, upsampled back and concatenated with the 24-channel
    skip, a 1x1 merge to 12, a head to 3 and a sigmoid."""
    rng = np.random.default_rng(seed)
    inits, nodes = [], []

    def conv(name, x, cin, cout, k=3, stride=1, group=1, dilation=1):
        w = rng.normal(0, 0.4, (cout, cin // group, k, k)).astype(np.float32)
        b = rng.normal(0, 0.1, cout).astype(np.float32)
        inits.extend([numpy_helper.from_array(w, name + "_w"), numpy_helper.from_array(b, name + "_b")])
        pad = dilation * (k // 2)
        nodes.append(helper.make_node("Conv", [x, name + "_w", name + "_b"], [name], name=name, kernel_shape=[k, k],
                                      strides=[stride, stride], pads=[pad] * 4, group=group,
                                      dilations=[dilation, dilation]))
        return name

    def relu(x):
        nodes.append(helper.make_node("Relu", [x], [x + "_r"], name=x + "_r"))
        return x + "_r"

    inits += [numpy_helper.from_array(np.array(1 / 255, np.float32), "a"),
              numpy_helper.from_array(np.array(0.5, np.float32), "c"),
              numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")]
    nodes += [helper.make_node("Mul", ["bgr", "a"], ["scaled"], name="scale"),
              helper.make_node("Sub", ["scaled", "c"], ["centred"], name="centre")]
    e1 = relu(conv("e1", "centred", 3, 12, stride=2))
    e2 = relu(conv("e2dw", e1, 12, 12, group=12, dilation=2))
    e2 = relu(conv("e2pw", e2, 12, 24, k=1))
    e3 = relu(conv("e3", e2, 24, 20, stride=2))
    nodes.append(helper.make_node("Resize", [e3, "", "scales"], ["up"], name="up", mode="linear",
                                  coordinate_transformation_mode="half_pixel"))
    nodes.append(helper.make_node("Concat", ["up", e2], ["cat"], name="cat", axis=1))
    d = relu(conv("merge", "cat", 44, 12, k=1))
    last = d
    if extra == "maxpool":
        nodes.append(helper.make_node("MaxPool", [d], ["pooled"], name="pool", kernel_shape=[1, 1]))
        last = "pooled"
    head = conv("head", last, 12, 3, k=1)
    nodes.append(helper.make_node("Sigmoid", [head], ["maps"], name="sigmoid"))
    graph = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("bgr", TensorProto.FLOAT,
                                                                            [1, 3, "h", "w"])],
                              [helper.make_tensor_value_info("maps", TensorProto.FLOAT, [1, 3, "h2", "w2"])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    return model


@pytest.mark.parametrize("seed, size", [(0, 64), (1, 96), (2, 48)])
def test_the_rewritten_network_computes_what_the_file_computes(seed, size):
    model = _tiny_face_net(seed)
    x = np.random.default_rng(seed).integers(0, 256, (1, 3, size, size)).astype(np.float32)
    raw = model.SerializeToString()
    fast = for_cpu(raw)
    assert fast != raw
    ours, theirs = _run(fast, x), _run(raw, x)
    assert ours.shape == theirs.shape == (1, 3, size // 2, size // 2)
    assert np.abs(ours - theirs).max() < 1e-5


def test_the_rewritten_network_has_whole_blocks_no_concatenation_and_no_input_scaling():
    fast = onnx.load_from_string(for_cpu(_tiny_face_net().SerializeToString()))
    ops = [n.op_type for n in fast.graph.node]
    assert "Concat" not in ops and "Mul" not in ops and "Sub" not in ops and "Pad" not in ops and ops[0] == "Conv"
    # the input's scaling is now the first convolution's, its offset the caller's to subtract
    assert input_offset({p.key: p.value for p in fast.metadata_props}) == pytest.approx(0.5 / (1 / 255))
    assert input_offset({}) == 0.0
    weights = {t.name: numpy_helper.to_array(t) for t in fast.graph.initializer}
    for n in fast.graph.node:
        if n.op_type == "Conv" and n.output[0] != "head":
            assert weights[n.input[1]].shape[0] % BLOCK == 0, n.name
    # the upsampling now runs on the merge's 12 (padded: 16) channels, not on the 20 it was given
    resize = next(n for n in fast.graph.node if n.op_type == "Resize")
    conv_before = next(n for n in fast.graph.node if n.output[0] == resize.input[0])
    assert conv_before.op_type == "Conv" and weights[conv_before.input[1]].shape[0] == BLOCK


def test_a_graph_with_a_node_it_does_not_know_is_run_as_it_is():
    raw = _tiny_face_net(extra="maxpool").SerializeToString()
    assert for_cpu(raw) == raw
    with pytest.raises(Unsupported):
        padded(_tiny_face_net(extra="maxpool"))


def test_the_shipped_networks_maps_agree_with_the_file(tmp_path):
    from vision.facemap import MODEL_PATH

    raw = MODEL_PATH.read_bytes()
    x = np.random.default_rng(3).integers(0, 256, (1, 3, 96, 128)).astype(np.float32)
    assert np.abs(_run(for_cpu(raw), x) - _run(raw, x)).max() < 1e-4


def test_bytes_that_are_not_a_model_are_refused():
    with pytest.raises(Exception):
        for_cpu(b"not a model at all")


def test_padding_alone_keeps_a_concatenation_of_padded_parts_in_step():
    """Padded on its own, the concatenation stays: its parts' real channels lie apart (20 of 32, then 24 of 32),
    and the merge reads each where it now lies."""
    model = _tiny_face_net(4)
    x = np.random.default_rng(4).integers(0, 256, (1, 3, 64, 64)).astype(np.float32)
    ours = _run(padded(model).SerializeToString(), x)
    assert np.abs(ours - _run(model.SerializeToString(), x)).max() < 1e-5


def test_a_network_fixed_to_one_input_shape_computes_the_same_and_refuses_a_wrong_rank():
    model = _tiny_face_net(5)
    x = np.random.default_rng(5).integers(0, 256, (1, 3, 64, 96)).astype(np.float32)
    raw = model.SerializeToString()
    fixed = with_input_shape(for_cpu(raw), x.shape)
    dims = [d.dim_value for d in onnx.load_from_string(fixed).graph.input[0].type.tensor_type.shape.dim]
    assert dims == [1, 3, 64, 96]
    assert np.abs(_run(fixed, x) - _run(raw, x)).max() < 1e-5
    with pytest.raises(ValueError, match="dimensions"):
        with_input_shape(raw, (64, 96))


def test_a_shape_asked_for_again_gets_its_own_session_and_few_are_kept(tmp_path, monkeypatch):
    import vision.runtime as runtime

    monkeypatch.setattr(runtime, "_sessions", {})
    monkeypatch.setattr(runtime, "_layouts", {})
    monkeypatch.setattr(runtime, "_asked", {})
    path = tmp_path / "tiny.onnx"
    path.write_bytes(_tiny_face_net(6).SerializeToString())
    x = np.random.default_rng(6).integers(0, 256, (1, 3, 48, 64)).astype(np.float32)
    any_shape = runtime.session(path, "model", "vision.facemap_training", x.shape)
    assert runtime.session(path, "model", "vision.facemap_training") is any_shape      # once: the shared one
    for _ in range(runtime.FIXED_AFTER - 2):
        assert runtime.session(path, "model", "vision.facemap_training", x.shape) is any_shape
    fixed = runtime.session(path, "model", "vision.facemap_training", x.shape)         # again: its own
    assert fixed is not any_shape and fixed.get_inputs()[0].shape == [1, 3, 48, 64]
    assert runtime.session(path, "model", "vision.facemap_training", x.shape) is fixed
    name = fixed.get_inputs()[0].name
    assert np.abs(fixed.run(None, {name: x})[0] - any_shape.run(None, {name: x})[0]).max() < 1e-5
    for size in (32, 80, 96):      # more shapes run again and again: only the latest few keep a session
        for _ in range(runtime.FIXED_AFTER):
            runtime.session(path, "model", "vision.facemap_training", (1, 3, size, size))
    assert sum(len(k) > 2 for k in runtime._sessions) == runtime.FIXED_SESSIONS


def test_regression_the_runtimes_threads_do_not_spin_between_runs(tmp_path, monkeypatch):
    # spinning worker threads held the cores the eye's OpenCV and NumPy work wanted between runs: on two threads
    # a whole frame took 83 ms instead of 63 (`bench_vision.py --threads 2`)
    import cv2

    import vision.runtime as runtime

    monkeypatch.setattr(runtime, "_sessions", {})
    monkeypatch.setattr(runtime, "_layouts", {})
    path = tmp_path / "tiny.onnx"
    path.write_bytes(_tiny_face_net(6).SerializeToString())
    threads = cv2.getNumThreads()
    try:
        cv2.setNumThreads(2)
        opts = runtime.session(path, "model", "vision.facemap_training").get_session_options()
    finally:
        cv2.setNumThreads(threads)
    assert opts.intra_op_num_threads == 2
    assert opts.get_session_config_entry("session.intra_op.allow_spinning") == "0"
