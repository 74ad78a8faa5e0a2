"""The eye's learned models on ONNX Runtime: each file read once per process and thread count (and rewritten for
the CPU's vector blocks, `vision.cpu_layout`), a missing or unreadable file one clear line naming the command that
retrains it."""

from __future__ import annotations

import threading
from pathlib import Path

import cv2
import onnxruntime as ort

from tablesight.errors import InputError
from vision.cpu_layout import for_cpu

_lock = threading.Lock()
_sessions: dict[tuple[str, int], ort.InferenceSession] = {}


def session(path: Path, what: str, retrain: str) -> ort.InferenceSession:
    """The network in `path` (`what`: how a message names it; `retrain`: the module that retrains it). It runs on
    as many threads as OpenCV is set to use: `cv2.setNumThreads(1)` keeps the whole eye on one core. A session may
    be run from several threads at once."""
    threads = max(1, cv2.getNumThreads())
    key = (str(path), threads)
    sess = _sessions.get(key)
    if sess is None:
        with _lock:
            if not path.is_file():
                raise InputError(f"the eye's {what} file is missing: {path} (retrain it with "
                                 f"'python -m {retrain}')")
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = threads
            opts.inter_op_num_threads = 1
            opts.log_severity_level = 3  # errors only: the runtime's notices are not the player's business
            try:
                # the same function in blocks of channels the CPU runs fast (vision.cpu_layout)
                sess = ort.InferenceSession(for_cpu(path.read_bytes()), opts, providers=["CPUExecutionProvider"])
            except Exception as exc:  # onnx and the runtime raise their own exception types for unreadable files
                raise InputError(f"the eye's {what} file {path} cannot be read: {str(exc).strip()[:200]}") \
                    from None
            _sessions[key] = sess
    return sess
