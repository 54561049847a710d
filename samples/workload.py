"""A small image-processing pipeline in the spirit of the seeds' MiniApp (dask.array, files
written and read back by tasks, filtering, thresholding, a reduction).

    python samples/workload.py --out /tmp/imgproc [--images 16 --size 512]

Runs a LocalCluster with 2 worker processes × 2 threads; under `collect` every process it starts
is recorded. Prints the number of foreground pixels.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np


def write_image(i: int, size: int, folder: str) -> str:
    rng = np.random.default_rng(i)
    yy, xx = np.mgrid[0:size, 0:size]
    blobs = sum(np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * r * r))
                for cx, cy, r in rng.uniform([0, 0, 4], [size, size, size / 12], (12, 3)))
    img = (blobs + rng.normal(0, 0.2, (size, size))).astype(np.float32)
    path = os.path.join(folder, f"image-{i:03d}.raw")
    with open(path, "wb") as fh:
        for row in np.array_split(img, 8):  # several writes, like a real image writer
            fh.write(row.tobytes())
    return path


def read_image(path: str, size: int) -> np.ndarray:
    with open(path, "rb") as fh:
        return np.frombuffer(fh.read(), dtype=np.float32).reshape(1, size, size).copy()


def smooth(block: np.ndarray) -> np.ndarray:
    from scipy import ndimage

    return ndimage.gaussian_filter(block, sigma=(0, 2, 2))


def threshold(block: np.ndarray) -> np.ndarray:
    return (block > block.mean() + block.std()).astype(np.uint8)


def save_mask(mask: np.ndarray, folder: str, i: int) -> int:
    with open(os.path.join(folder, f"mask-{i:03d}.raw"), "wb") as fh:
        fh.write(mask.tobytes())
    return int(mask.sum())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, default=Path("/tmp/dask-correlate-sample"))
    ap.add_argument("--images", type=int, default=16)
    ap.add_argument("--size", type=int, default=512)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    import dask
    import dask.array as da
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=2, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        folder, size = str(args.out), args.size
        t0 = time.perf_counter()
        paths = client.gather(client.map(write_image, range(args.images), size=size,
                                         folder=folder, key=[f"write_image-{i}"
                                                             for i in range(args.images)]))
        stack = da.concatenate([da.from_delayed(dask.delayed(read_image)(p, size),
                                                shape=(1, size, size), dtype=np.float32)
                                for p in paths])
        masks = stack.map_blocks(smooth).map_blocks(threshold, dtype=np.uint8)
        saved = [dask.delayed(save_mask)(masks[i], folder, i) for i in range(args.images)]
        counts = dask.compute(*saved)
        print(f"foreground pixels: {sum(counts):,} in {args.images} images")
        print(f"compute_seconds={time.perf_counter() - t0:.4f}")


if __name__ == "__main__":
    main()
