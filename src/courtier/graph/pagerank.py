"""PageRank over a host graph by sparse power iteration.

Rules:
- The graph comes as three parallel arrays (source index, destination index, weight) over
  ``node_count`` nodes. Parallel edges are summed; self-links are dropped by default (a host
  voting for itself is not evidence).
- Each source spreads a total vote of one over its out-edges in proportion to their weights,
  so a host cannot multiply its influence by linking to many hosts.
- A dangling node (no out-weight: every horizon host, which we never fetch) hands its rank to
  the teleport vector, not to every node uniformly: with a seed-restricted teleport, rank that
  reaches the horizon flows back to the seed instead of lifting every unknown host equally.
- Iteration stops when the L1 change between two iterates is below ``tolerance`` or after
  ``max_iterations``; the result says which, and how far it got.

The matrix is built directly as a scipy CSR matrix of the transposed transition matrix (row =
destination), so each iteration is one sparse matrix-vector product plus O(n) vector work.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import sparse

FloatArray = npt.NDArray[np.float64]
IndexArray = npt.NDArray[np.integer]

DEFAULT_DAMPING = 0.85
DEFAULT_TOLERANCE = 1e-9
DEFAULT_MAX_ITERATIONS = 200


class GraphError(ValueError):
    """The graph or the parameters handed to a ranking are malformed."""


@dataclass(frozen=True, slots=True, eq=False)
class PageRankResult:
    """Scores per node index (summing to one), with how the iteration ended."""

    scores: FloatArray
    iterations: int
    converged: bool
    residual: float


def pagerank(
    node_count: int,
    src: IndexArray,
    dst: IndexArray,
    weight: npt.ArrayLike | None = None,
    *,
    damping: float = DEFAULT_DAMPING,
    teleport: npt.ArrayLike | None = None,
    tolerance: float = DEFAULT_TOLERANCE,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
    drop_self_links: bool = True,
) -> PageRankResult:
    """Rank ``node_count`` nodes linked by edges ``src[i] -> dst[i]`` of weight ``weight[i]``.

    ``teleport`` is the personalisation vector (non-negative, normalised here); uniform when
    None. Raises GraphError on malformed input.
    """
    _check_parameters(node_count, damping, tolerance, max_iterations)
    sources, targets, weights = _check_edges(node_count, src, dst, weight)
    if drop_self_links:
        keep = sources != targets
        sources, targets, weights = sources[keep], targets[keep], weights[keep]
    jump = _teleport_vector(node_count, teleport)
    if node_count == 0:
        return PageRankResult(np.zeros(0), 0, True, 0.0)
    transition, dangling = _transition_matrix(node_count, sources, targets, weights)
    return _power_iteration(transition, dangling, jump, damping, tolerance, max_iterations)


def _check_parameters(node_count: int, damping: float, tolerance: float, iterations: int) -> None:
    if node_count < 0:
        raise GraphError(f"node_count must be >= 0, got {node_count}")
    if not 0.0 < damping < 1.0:
        raise GraphError(f"damping must lie strictly between 0 and 1, got {damping}")
    if not tolerance > 0.0:
        raise GraphError(f"tolerance must be positive, got {tolerance}")
    if iterations < 1:
        raise GraphError(f"max_iterations must be >= 1, got {iterations}")


def _check_edges(
    node_count: int, src: IndexArray, dst: IndexArray, weight: npt.ArrayLike | None
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], FloatArray]:
    sources = np.asarray(src)
    targets = np.asarray(dst)
    if sources.ndim != 1 or targets.shape != sources.shape:
        raise GraphError("src and dst must be one-dimensional arrays of equal length")
    if sources.size and not (
        np.issubdtype(sources.dtype, np.integer) and np.issubdtype(targets.dtype, np.integer)
    ):
        raise GraphError("src and dst must hold integer node indices")
    weights = np.ones(sources.size) if weight is None else np.asarray(weight, dtype=np.float64)
    if weights.shape != sources.shape:
        raise GraphError("weight must have one entry per edge")
    if sources.size:
        low = min(int(sources.min()), int(targets.min()))
        high = max(int(sources.max()), int(targets.max()))
        if low < 0 or high >= node_count:
            raise GraphError(f"edge endpoints must lie in [0, {node_count}), got [{low}, {high}]")
        if not np.all(np.isfinite(weights)) or float(weights.min()) < 0.0:
            raise GraphError("edge weights must be finite and non-negative")
    return sources.astype(np.int64, copy=False), targets.astype(np.int64, copy=False), weights


def _teleport_vector(node_count: int, teleport: npt.ArrayLike | None) -> FloatArray:
    if teleport is None:
        return np.full(node_count, 1.0 / node_count) if node_count else np.zeros(0)
    jump = np.asarray(teleport, dtype=np.float64)
    if jump.shape != (node_count,):
        raise GraphError(f"teleport must have one entry per node ({node_count})")
    if not np.all(np.isfinite(jump)) or (jump.size and float(jump.min()) < 0.0):
        raise GraphError("teleport entries must be finite and non-negative")
    total = float(jump.sum())
    if node_count and total <= 0.0:
        raise GraphError("teleport must give some node a positive weight")
    return jump / total if node_count else jump


def _transition_matrix(
    node_count: int,
    sources: npt.NDArray[np.int64],
    targets: npt.NDArray[np.int64],
    weights: FloatArray,
) -> tuple[sparse.csr_matrix, npt.NDArray[np.bool_]]:
    out_weight = np.bincount(sources, weights=weights, minlength=node_count)
    dangling = out_weight <= 0.0
    # Zero-weight edges from a dangling source divide 0 by 0; give them a harmless divisor.
    share = weights / np.where(dangling, 1.0, out_weight)[sources]
    # Row = destination, so one iteration is transition @ scores. Duplicates are summed.
    index_type = np.int32 if node_count < 2**31 else np.int64
    transition = sparse.coo_matrix(
        (share, (targets.astype(index_type), sources.astype(index_type))),
        shape=(node_count, node_count),
    ).tocsr()
    return transition, dangling


def _power_iteration(
    transition: sparse.csr_matrix,
    dangling: npt.NDArray[np.bool_],
    jump: FloatArray,
    damping: float,
    tolerance: float,
    max_iterations: int,
) -> PageRankResult:
    scores = jump.copy()
    # A gather of the dangling entries, not a dot product: BLAS threads only add overhead here.
    dangling_nodes = np.flatnonzero(dangling)
    residual = float("inf")
    for iteration in range(1, max_iterations + 1):
        dangling_mass = float(scores[dangling_nodes].sum())
        updated = damping * (transition @ scores)
        updated += (damping * dangling_mass + (1.0 - damping)) * jump
        # Renormalise so floating-point loss over many iterations never drains the total.
        updated /= updated.sum()
        residual = float(np.abs(updated - scores).sum())
        scores = updated
        if residual < tolerance:
            return PageRankResult(scores, iteration, True, residual)
    return PageRankResult(scores, max_iterations, False, residual)
