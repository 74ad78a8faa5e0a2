"""The eye's learned models on ONNX Runtime: each file read once per process and thread count (and rewritten for
the CPU's vector blocks, `vision.cpu_layout`), a missing or unreadable file one clear line naming the command that
retrains it."""

from __future__ import annotations

import threading
from pathlib import Path

import cv2
import numpy as np
import onnxruntime as ort

from tablesight.errors import InputError
from vision.cpu_layout import any_batch, for_cpu, input_offset, with_input_shape

_lock = threading.Lock()
_sessions: dict[tuple, ort.InferenceSession] = {}
_layouts: dict[str, bytes] = {}  # each file as rewritten for the CPU (vision.cpu_layout), read once
_asked: dict[tuple, int] = {}    # input shapes asked for, per network and thread count
FIXED_SESSIONS = 2               # sessions fixed to one input shape kept at once (each holds its own buffers:
                                 # about 35 MB more for a whole 1 m table)
FIXED_AFTER = 2                  # ... made for a shape once it has been asked for this often


def session(path: Path, what: str, retrain: str, input_shape: tuple[int, ...] | None = None
            ) -> ort.InferenceSession:
    """The network in `path` (`what`: how a message names it; `retrain`: the module that retrains it). It runs on
    as many threads as OpenCV is set to use: `cv2.setNumThreads(1)` keeps the whole eye on one core. A session may
    be run from several threads at once. `input_shape`: the shape it is about to be run on; a shape asked for
    again (a live table's frames, all of one size) gets a session fixed to it, which runs about a tenth faster
    (`vision.cpu_layout.with_input_shape`); others share the one that takes any shape."""
    threads = max(1, cv2.getNumThreads())
    key: tuple = (str(path), threads)
    if input_shape is not None:
        shape = tuple(int(n) for n in input_shape)
        with _lock:
            if len(_asked) > 256:      # a stream of one-off shapes (crops of changed parts) is not remembered
                _asked.clear()
            _asked[key + (shape,)] = _asked.get(key + (shape,), 0) + 1
            if _asked[key + (shape,)] >= FIXED_AFTER:
                key += (shape,)
    sess = _sessions.get(key)
    if sess is None:
        with _lock:
            sess = _sessions.get(key)    # another thread may have made it while this one waited
            if sess is not None:
                return sess
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = threads
            opts.inter_op_num_threads = 1
            opts.log_severity_level = 3  # errors only: the runtime's notices are not the player's business
            # its worker threads wait for the next run by sleeping, not spinning: between runs the eye's OpenCV and
            # NumPy work needs those cores (two threads on two cores: a whole frame 83 -> 63 ms, `bench_vision.py
            # --threads 2`; one thread: no worker threads at all)
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
            try:
                fast = _layout(path, what, retrain)
                if len(key) > 2:
                    fast = with_input_shape(fast, key[2])
                sess = ort.InferenceSession(fast, opts, providers=["CPUExecutionProvider"])
            except InputError:
                raise
            except Exception as exc:  # onnx and the runtime raise their own exception types for unreadable files
                raise InputError(f"the eye's {what} file {path} cannot be read: {str(exc).strip()[:200]}") \
                    from None
            fixed = [k for k in _sessions if len(k) > 2 and k[:2] == key[:2]]
            if len(key) > 2 and len(fixed) >= FIXED_SESSIONS:
                del _sessions[fixed[0]]        # the oldest fixed one goes
            _sessions[key] = sess
    return sess


def _layout(path: Path, what: str, retrain: str) -> bytes:
    """The file's network, the same function in blocks of channels the CPU runs fast (vision.cpu_layout); read and
    rewritten once per process (the caller holds the lock)."""
    fast = _layouts.get(str(path))
    if fast is None:
        if not path.is_file():
            raise InputError(f"the eye's {what} file is missing: {path} (retrain it with 'python -m {retrain}')")
        fast = _layouts[str(path)] = any_batch(for_cpu(path.read_bytes()))
    return fast


def judge_logits(path: Path, what: str, retrain: str, patches: np.ndarray) -> np.ndarray:
    """The logits (float64, one a patch) of a patch judge (`vision.pairjudge`, `vision.nestjudge`) on `patches`
    (N, C, H, W float32, changed in place): less the input offset the CPU layout asks for (`vision.cpu_layout`)."""
    sess = session(path, what, retrain)
    patches -= np.float32(input_offset(sess.get_modelmeta().custom_metadata_map))   # 0 for a model run as is
    return np.asarray(sess.run(None, {sess.get_inputs()[0].name: patches})[0], np.float64).reshape(-1)
