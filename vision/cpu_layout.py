"""The eye's networks rewritten, when they are read, into the same function in a shape the CPU runs fast.

ONNX Runtime runs convolutions in a blocked channel layout (NCHWc: 16 channels a block on AVX-512, 8 on AVX2). A
layer whose channel count is not a whole number of blocks is run in the plain layout, with the tensors reordered
around it, and a concatenation of such tensors cannot stay blocked. On the face network (12- and 24-channel
layers at half resolution, the decoder's skip connections concatenated) those reorders and copies cost about as
much as the convolutions themselves (`benchmarks/results/vision.md`). Three rewrites, each exact in arithmetic
(only the order of float sums changes: the maps agree to about 1e-5):

1. `input_scaling_folded`: the input's `x * a - c` is folded into the first convolution's weights, and the model
   asks to be given `x - c / a` instead (its `INPUT_OFFSET` metadata says `c / a`; `input_offset` reads it): that
   is zero where the scaled input was zero, so the convolution pads with zeros as before, and the caller's own
   copy of its input does the subtraction for free.
2. `without_concats`: a 1x1 convolution of a concatenation is the sum of 1x1 convolutions of its parts, and a
   part that was upsampled is convolved before the upsampling (both are linear and commute; bilinear weights sum
   to one, so the bias is untouched): fewer channels are upsampled, nothing large is copied.
3. `padded`: every convolution's output gets channels with zero weights and bias up to a multiple of the block,
   and every reader gives them zero weights: the whole network runs blocked.

`for_cpu` applies all three to a serialized model, or gives it back unchanged when it holds anything these do
not know (the pair judge, say): a network is never run differently from what it computes, as long as its input
is given less `input_offset` (0 for a model left as it was).
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

BLOCK = 16                  # channels a block: AVX-512's (a multiple of AVX2's 8)
INPUT_OFFSET = "tablesight.input_offset"   # metadata: what to subtract from the input before running the model
_PER_CHANNEL = {"Relu", "Sigmoid", "Resize", "Upsample"}   # ops that keep each channel to itself


class Unsupported(ValueError):
    """The graph holds a node a rewrite does not know; it is to be left as it is."""


def input_offset(metadata: dict[str, str]) -> float:
    """What a model rewritten by `for_cpu` wants subtracted from its input, from its metadata (ONNX Runtime's
    `get_modelmeta().custom_metadata_map`): 0 for a model left as it was."""
    return float(metadata.get(INPUT_OFFSET, 0.0))


def for_cpu(model_bytes: bytes, block: int = BLOCK) -> bytes:
    """`model_bytes` (a serialized ONNX model) rewritten by the three steps above, or unchanged when a step does
    not apply. Raises onnx's DecodeError for bytes that are not a model."""
    model = onnx.load_from_string(model_bytes)
    try:
        model = padded(without_concats(input_scaling_folded(model)), block)
    except Exception:   # Unsupported, or a graph onnx's shape inference cannot follow: run the file as it is
        return model_bytes
    return model.SerializeToString()


def any_batch(model_bytes: bytes) -> bytes:
    """The model with its inputs' and outputs' first axis free (a model exported for one image at a time then
    runs a batch of them, `vision.facemap.face_maps_batch`); a model whose first axes are free already is given
    back as it is."""
    model = onnx.load_from_string(model_bytes)
    axes = [v.type.tensor_type.shape.dim[0] for v in list(model.graph.input) + list(model.graph.output)
            if len(v.type.tensor_type.shape.dim)]
    if not any(d.HasField("dim_value") for d in axes):
        return model_bytes
    for d in axes:
        d.Clear()
        d.dim_param = "batch"
    return model.SerializeToString()


def with_input_shape(model_bytes: bytes, input_shape: tuple[int, ...]) -> bytes:
    """The model fixed to inputs of this one shape: the runtime then knows every tensor's size, so it can add a
    convolution's sum into it even where one part was upsampled (about a tenth faster on the face network)."""
    model = onnx.load_from_string(model_bytes)
    dims = model.graph.input[0].type.tensor_type.shape.dim
    if len(dims) != len(input_shape):
        raise ValueError(f"input_shape {tuple(input_shape)}: the model's input has {len(dims)} dimensions")
    for d, n in zip(dims, input_shape):
        d.Clear()
        d.dim_value = int(n)
    return model.SerializeToString()


# ---------------------------------------------------------------------------------------------------------------
# Graph access


def _attr(node: onnx.NodeProto, name: str, default=None):
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


def _set_attr(node: onnx.NodeProto, name: str, value) -> None:
    for a in node.attribute:
        if a.name == name:
            node.attribute.remove(a)
            break
    node.attribute.append(onnx.helper.make_attribute(name, value))


def _copy(model: onnx.ModelProto) -> onnx.ModelProto:
    out = onnx.ModelProto()
    out.CopyFrom(model)
    return out


class _Graph:
    """Lookups over one graph: constant values, who reads a tensor, who writes it."""

    def __init__(self, graph: onnx.GraphProto) -> None:
        self.graph = graph
        self.inits = {t.name: t for t in graph.initializer}
        self.consts = {n.output[0]: n for n in graph.node if n.op_type == "Constant"}
        self.readers: dict[str, list[onnx.NodeProto]] = {}
        for n in graph.node:
            for i in n.input:
                self.readers.setdefault(i, []).append(n)
        self.writer = {o: n for n in graph.node for o in n.output}

    def value(self, name: str) -> np.ndarray | None:
        t = self.inits.get(name)
        if t is None and name in self.consts:
            t = _attr(self.consts[name], "value")
        return None if t is None else numpy_helper.to_array(t)

    def only_reader(self, name: str) -> onnx.NodeProto | None:
        r = self.readers.get(name, [])
        return r[0] if len(r) == 1 else None

    def add_weight(self, array: np.ndarray, name: str) -> str:
        self.graph.initializer.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def conv_weights(self, conv: onnx.NodeProto) -> tuple[np.ndarray, np.ndarray]:
        w = self.value(conv.input[1])
        b = self.value(conv.input[2]) if len(conv.input) > 2 and conv.input[2] else None
        if w is None:
            raise Unsupported(f"{conv.name}: weights computed in the graph")
        return w, (np.zeros(w.shape[0], w.dtype) if b is None else b)

    def set_conv_weights(self, conv: onnx.NodeProto, w: np.ndarray, b: np.ndarray, tag: str) -> None:
        names = [self.add_weight(w.astype(np.float32), f"{conv.name}_{tag}_w"),
                 self.add_weight(b.astype(np.float32), f"{conv.name}_{tag}_b")]
        del conv.input[1:]
        conv.input.extend(names)

    def replace_nodes(self, nodes: list[onnx.NodeProto]) -> None:
        """The graph's nodes set to `nodes`, put in an order where each comes after what it reads; unused
        weights and the shapes recorded for the old tensors dropped."""
        have = {i.name for i in self.graph.input} | {t.name for t in self.graph.initializer} | {""}
        ordered, left = [], list(nodes)
        while left:
            ready = [n for n in left if all(i in have for i in n.input)]
            if not ready:
                raise Unsupported("the rewritten graph reads a tensor nothing writes")
            ordered += ready
            for n in ready:
                have.update(n.output)
            done = {n.output[0] for n in ready}
            left = [n for n in left if n.output[0] not in done]
        del self.graph.node[:]
        self.graph.node.extend(ordered)
        used = {i for n in ordered for i in n.input}
        keep = [t for t in self.graph.initializer if t.name in used]
        del self.graph.initializer[:]
        self.graph.initializer.extend(keep)
        del self.graph.value_info[:]


# ---------------------------------------------------------------------------------------------------------------
# The rewrites


def input_scaling_folded(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of `model` with its input's `Mul(a)` then `Sub(c)` (scalars), read by one convolution, folded into
    that convolution, the input to be given less `c / a` (1. above); unchanged when the graph does not start that
    way."""
    m = _copy(model)
    g = _Graph(m.graph)
    x = m.graph.input[0].name
    mul = g.only_reader(x)
    sub = g.only_reader(mul.output[0]) if mul is not None and mul.op_type == "Mul" else None
    conv = g.only_reader(sub.output[0]) if sub is not None and sub.op_type == "Sub" else None
    if conv is None or conv.op_type != "Conv" or _attr(conv, "group", 1) != 1 or mul.input[0] != x \
            or sub.input[0] != mul.output[0] or conv.input[0] != sub.output[0] \
            or any(p.key == INPUT_OFFSET for p in m.metadata_props):
        return m
    a, c = g.value(mul.input[1]), g.value(sub.input[1])
    if a is None or c is None or a.size != 1 or c.size != 1 or float(a.reshape(-1)[0]) == 0.0:
        return m
    a, c = float(a.reshape(-1)[0]), float(c.reshape(-1)[0])
    w, b = g.conv_weights(conv)
    # (x - c / a) * a = x * a - c: the weights take the scale, the caller the offset
    g.set_conv_weights(conv, w * a, b, "folded")
    conv.input[0] = x
    g.replace_nodes([n for n in m.graph.node if n.output[0] not in (mul.output[0], sub.output[0])])
    onnx.helper.set_model_props(m, {**{p.key: p.value for p in m.metadata_props}, INPUT_OFFSET: repr(c / a)})
    return m


def without_concats(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of `model` where each channel concatenation read only by a 1x1 convolution is replaced by a sum of
    convolutions of its parts, an upsampled part convolved before its upsampling (2. above)."""
    m = _copy(model)
    g = _Graph(m.graph)
    inferred = onnx.shape_inference.infer_shapes(m).graph
    channels = {v.name: v.type.tensor_type.shape.dim[1].dim_value
                for v in [*inferred.value_info, *inferred.input, *inferred.output]
                if len(v.type.tensor_type.shape.dim) == 4}
    # nodes are named here by their first output (unique in a graph)
    gone: set[str] = set()
    instead: dict[str, list[onnx.NodeProto]] = {}
    for cat in m.graph.node:
        conv = g.only_reader(cat.output[0]) if cat.op_type == "Concat" and _attr(cat, "axis") == 1 else None
        if conv is None or conv.op_type != "Conv" or _attr(conv, "group", 1) != 1 or \
                list(_attr(conv, "kernel_shape", [1, 1])) != [1, 1] or \
                any(v != 1 for v in _attr(conv, "strides", [1, 1])) or any(_attr(conv, "pads", [0]) or [0]):
            continue
        w, b = g.conv_weights(conv)
        sizes = [channels.get(i, 0) for i in cat.input]
        if not all(sizes) or sum(sizes) != w.shape[1]:
            continue
        nodes, parts, first = [], [], 0
        for k, (name, size) in enumerate(zip(cat.input, sizes)):
            up = g.writer.get(name)
            moved = up is not None and _plain_resize(g, up) and len(g.readers[name]) == 1
            out = f"{conv.name}_part{k}"
            ins = [up.input[0] if moved else name,
                   g.add_weight(w[:, first:first + size], out + "_w")]
            if k == len(sizes) - 1:
                ins.append(g.add_weight(b, out + "_b"))   # the bias once, on the last part
            first += size
            nodes.append(onnx.helper.make_node("Conv", ins, [out], name=out, kernel_shape=[1, 1]))
            if moved:
                again = onnx.helper.make_node(up.op_type, [out, *up.input[1:]], [out + "_up"], name=out + "_up")
                again.attribute.extend(up.attribute)
                nodes.append(again)
                gone.add(up.output[0])
                out += "_up"
            parts.append(out)
        total = parts[0]
        for k, part in enumerate(parts[1:]):
            name = conv.output[0] if k == len(parts) - 2 else f"{conv.name}_sum{k}"
            nodes.append(onnx.helper.make_node("Add", [total, part], [name], name=f"{conv.name}_add{k}"))
            total = name
        gone |= {cat.output[0], conv.output[0]}
        instead[conv.output[0]] = nodes
    g.replace_nodes([x for n in m.graph.node if n.output[0] not in gone or n.output[0] in instead
                     for x in instead.get(n.output[0], [n])])
    return m


def padded(model: onnx.ModelProto, block: int = BLOCK) -> onnx.ModelProto:
    """A copy of `model` with every convolution's channels padded to a multiple of `block` (3. above); the graph's
    outputs keep their channels. Raises Unsupported for a graph with other kinds of node."""
    m = _copy(model)
    g = _Graph(m.graph)
    # tensors that reach an output through per-channel nodes keep their channel count
    final = {o.name for o in m.graph.output}
    for node in reversed(list(m.graph.node)):
        if node.op_type in _PER_CHANNEL and node.output[0] in final:
            final.add(node.input[0])
    # each tensor's layout: where each of its real channels lies, and how many channels it has in all
    layout: dict[str, tuple[np.ndarray, int]] = {}
    for t in m.graph.input:
        c = t.type.tensor_type.shape.dim[1].dim_value
        layout[t.name] = (np.arange(c), c)
    for node in m.graph.node:
        op, out = node.op_type, node.output[0]
        if op == "Constant":
            continue
        if node.input[0] not in layout:
            raise Unsupported(f"{node.name} reads a tensor of unknown layout")
        if op == "Conv":
            layout[out] = _pad_conv(g, node, layout[node.input[0]], block, out in final)
        elif op in ("Resize", "Upsample") and not _plain_resize(g, node):
            raise Unsupported(f"{node.name} resizes more than height and width")
        elif op in _PER_CHANNEL or (op in ("Mul", "Sub", "Add", "Div") and _scalar(g, node.input[1])):
            layout[out] = layout[node.input[0]]
        elif op == "Add" and node.input[1] in layout:
            (ia, pa), (ib, pb) = layout[node.input[0]], layout[node.input[1]]
            if pa != pb or not np.array_equal(ia, ib):
                raise Unsupported(f"{node.name} adds tensors of two layouts")
            layout[out] = layout[node.input[0]]
        elif op == "Concat" and _attr(node, "axis") == 1:
            where, total = [], 0
            for name in node.input:
                idx, p = layout[name]
                where.append(idx + total)
                total += p
            layout[out] = (np.concatenate(where), total)
        else:
            raise Unsupported(f"{op} node {node.name}")
    for o in m.graph.output:
        idx, p = layout[o.name]
        if not np.array_equal(idx, np.arange(p)):
            raise Unsupported(f"output {o.name} would change its channels")
    g.replace_nodes(list(m.graph.node))
    return m


def _plain_resize(g: _Graph, node: onnx.NodeProto) -> bool:
    """A resize of height and width by scales, each output pixel a weighted mean of input pixels (weights summing
    to one): it commutes with a 1x1 convolution and keeps each channel to itself."""
    if node.op_type not in ("Resize", "Upsample") or \
            _attr(node, "coordinate_transformation_mode", b"half_pixel") in (b"tf_crop_and_resize",
                                                                            "tf_crop_and_resize"):
        return False
    scales = g.value(node.input[2] if node.op_type == "Resize" else node.input[1]) \
        if len(node.input) > (2 if node.op_type == "Resize" else 1) else None
    return scales is not None and scales.size == 4 and scales[0] == 1 and scales[1] == 1 and \
        (node.op_type != "Resize" or len(node.input) < 4 or not node.input[3])


def _scalar(g: _Graph, name: str) -> bool:
    v = g.value(name)
    return v is not None and v.size == 1


def _pad_conv(g: _Graph, conv: onnx.NodeProto, layout_in: tuple[np.ndarray, int], block: int, final: bool
              ) -> tuple[np.ndarray, int]:
    """Pad one convolution's weights to its input's layout and its output to whole blocks; its output layout."""
    idx, p_in = layout_in
    w, b = g.conv_weights(conv)
    group, cout = _attr(conv, "group", 1), w.shape[0]
    if group == 1 and w.shape[1] == len(idx):
        p_out = cout if final else -(-cout // block) * block
        w2 = np.zeros((p_out, p_in, *w.shape[2:]), w.dtype)
        w2[:cout, idx] = w
        b2 = np.zeros(p_out, b.dtype)
        b2[:cout] = b
        g.set_conv_weights(conv, w2, b2, "padded")
        return np.arange(cout), p_out
    if group == cout == len(idx) and w.shape[1] == 1 and not final:    # depthwise: one filter per channel
        w2 = np.zeros((p_in, *w.shape[1:]), w.dtype)
        w2[idx] = w
        b2 = np.zeros(p_in, b.dtype)
        b2[idx] = b
        g.set_conv_weights(conv, w2, b2, "padded")
        _set_attr(conv, "group", p_in)
        return idx, p_in
    raise Unsupported(f"grouped convolution {conv.name}")
