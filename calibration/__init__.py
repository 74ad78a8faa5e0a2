"""Calibration: marker layout and sheets, lens intrinsics, table homography, ruler scale, drift."""
