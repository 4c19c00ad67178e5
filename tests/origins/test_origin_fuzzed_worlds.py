"""Origin inference on fuzzed webs (``courtier simweb --fuzz SEED``): the facts a crawl gathers
(DNS and each site's first answer), the clusterer, and the world's ground truth. No
ground-truth origin may be split: every split needs positive evidence, and the fuzzer draws
only shapes a crawler that reads DNS and first answers well can keep together."""

from __future__ import annotations

import pytest
from fuzz_facts import split_origins

from courtier.simweb import build_world
from courtier.simweb.world import fuzz_params


@pytest.mark.parametrize("seed", range(1, 9))
def test_no_ground_truth_origin_of_a_fuzzed_world_is_split(seed: int) -> None:
    assert split_origins(build_world(fuzz_params(seed))) == {}


@pytest.mark.long
def test_no_ground_truth_origin_is_split_over_a_hundred_fuzzed_worlds() -> None:
    split = {
        seed: origins
        for seed in range(100, 200)
        if (origins := split_origins(build_world(fuzz_params(seed))))
    }
    assert split == {}
