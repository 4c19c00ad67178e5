import numpy as np
import pytest

from courtier.graph.pagerank import GraphError, pagerank


def _edges(pairs: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    src = np.array([s for s, _ in pairs], dtype=np.int64)
    dst = np.array([d for _, d in pairs], dtype=np.int64)
    return src, dst


def _dense_reference(n: int, pairs: list[tuple[int, int]], damping: float, jump: np.ndarray):
    """PageRank by solving the linear system directly (an independent method)."""
    links = np.zeros((n, n))
    for s, d in pairs:
        if s != d:
            links[d, s] += 1.0
    out = links.sum(axis=0)
    transition = np.where(out > 0, links / np.where(out > 0, out, 1.0), 0.0)
    # Dangling columns jump by the teleport vector.
    transition[:, out == 0] = jump[:, None]
    scores = np.linalg.solve(np.eye(n) - damping * transition, (1 - damping) * jump)
    return scores / scores.sum()


def test_symmetric_pair_shares_rank_equally():
    result = pagerank(2, *_edges([(0, 1), (1, 0)]))
    assert result.converged
    np.testing.assert_allclose(result.scores, [0.5, 0.5], atol=1e-9)


def test_three_node_graph_matches_hand_computed_answer():
    # 0 <-> 1, and 2 -> 0. Solved by hand with d = 0.85 and a uniform teleport.
    result = pagerank(3, *_edges([(0, 1), (1, 0), (2, 0)]), damping=0.85)
    a = 0.135 / 0.2775
    np.testing.assert_allclose(result.scores, [a, 0.05 + 0.85 * a, 0.05], atol=1e-8)


def test_dangling_node_returns_its_rank_through_the_teleport_vector():
    # 0 -> 1 and 1 has no out-links: by hand, score(0) = 0.5 / 1.425.
    result = pagerank(2, *_edges([(0, 1)]), damping=0.85)
    np.testing.assert_allclose(result.scores, [0.5 / 1.425, 1 - 0.5 / 1.425], atol=1e-8)
    assert result.scores.sum() == pytest.approx(1.0)


def test_graph_of_only_dangling_nodes_ranks_by_teleport():
    result = pagerank(3, *_edges([]), teleport=[2.0, 1.0, 1.0])
    np.testing.assert_allclose(result.scores, [0.5, 0.25, 0.25], atol=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_random_graphs_match_a_direct_linear_solve(seed: int):
    rng = np.random.default_rng(seed)
    n = 40
    pairs = [(int(s), int(d)) for s, d in rng.integers(0, n, size=(150, 2))]
    jump = rng.random(n) * (rng.random(n) < 0.5)
    jump[0] = 1.0
    jump /= jump.sum()
    result = pagerank(n, *_edges(pairs), teleport=jump, damping=0.85, tolerance=1e-13)
    assert result.converged
    np.testing.assert_allclose(result.scores, _dense_reference(n, pairs, 0.85, jump), atol=1e-10)


def test_node_unreachable_from_the_teleport_set_scores_zero():
    # 0 -> 1 is trusted; 2 <-> 3 is a closed ring nobody trusted links to.
    result = pagerank(4, *_edges([(0, 1), (2, 3), (3, 2)]), teleport=[1, 0, 0, 0])
    assert result.scores[2] == 0.0 and result.scores[3] == 0.0
    assert result.scores[1] > 0.0


def test_self_links_are_dropped_and_parallel_edges_summed():
    with_loops = pagerank(3, *_edges([(0, 0), (0, 1), (0, 1), (0, 2), (1, 0), (2, 0)]))
    weighted = pagerank(3, *_edges([(0, 1), (0, 2), (1, 0), (2, 0)]), weight=[2.0, 1.0, 1, 1])
    np.testing.assert_allclose(with_loops.scores, weighted.scores, atol=1e-12)
    assert with_loops.scores[1] > with_loops.scores[2]


def test_a_source_has_one_vote_however_many_hosts_it_links():
    # Host 0 links to 1 only; host 2 links to 3 and to fifty others: 3 gets less than 1.
    pairs = [(0, 1), (2, 3)] + [(2, 4 + i) for i in range(50)]
    result = pagerank(54, *_edges(pairs), teleport=[1, 0, 1] + [0] * 51)
    assert result.scores[1] > 10 * result.scores[3]


def test_iteration_cap_is_reported_as_not_converged():
    result = pagerank(3, *_edges([(0, 1), (1, 2), (2, 0), (0, 2)]), max_iterations=1)
    assert not result.converged
    assert result.iterations == 1
    assert result.residual > 0.0


def test_empty_graph_has_no_scores():
    result = pagerank(0, *_edges([]))
    assert result.scores.size == 0 and result.converged


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"node_count": 2, "src": [0, 2], "dst": [1, 0]}, "endpoints"),
        ({"node_count": 2, "src": [0, -1], "dst": [1, 0]}, "endpoints"),
        ({"node_count": 2, "src": [0], "dst": [1, 0]}, "equal length"),
        ({"node_count": 2, "src": [0.5], "dst": [1.0]}, "integer"),
        ({"node_count": 2, "src": [0], "dst": [1], "weight": [-1.0]}, "non-negative"),
        ({"node_count": 2, "src": [0], "dst": [1], "weight": [float("nan")]}, "finite"),
        ({"node_count": 2, "src": [0], "dst": [1], "damping": 1.0}, "damping"),
        ({"node_count": 2, "src": [0], "dst": [1], "teleport": [0, 0]}, "positive"),
        ({"node_count": 2, "src": [0], "dst": [1], "teleport": [1]}, "one entry per node"),
        ({"node_count": 2, "src": [0], "dst": [1], "tolerance": 0.0}, "tolerance"),
        ({"node_count": -1, "src": [], "dst": []}, "node_count"),
    ],
)
def test_malformed_input_is_refused_with_a_clear_error(kwargs: dict, message: str):
    kwargs = {**kwargs, "src": np.asarray(kwargs["src"]), "dst": np.asarray(kwargs["dst"])}
    with pytest.raises(GraphError, match=message):
        pagerank(**kwargs)
