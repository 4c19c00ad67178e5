"""Every decision of the clusterer can be explained: each piece of evidence on each site of a
simulated web (the default world and fuzzed ones) names its kind, the name, address or
fingerprint it rests on and, in words, why; and it survives the JSON it is stored as."""

from __future__ import annotations

import pytest
from fuzz_facts import world_facts

from courtier.origins.cluster import cluster
from courtier.origins.evidence import Evidence, Kind
from courtier.simweb import WorldParams, build_world
from courtier.simweb.world import fuzz_params


@pytest.mark.parametrize("seed", [None, 1, 2, 3])
def test_every_piece_of_evidence_names_what_it_rests_on_and_why(seed: int | None) -> None:
    world = build_world(WorldParams(seed=5) if seed is None else fuzz_params(seed))
    assignments = cluster(world_facts(world))
    kinds: set[Kind] = set()
    for assignment in assignments.values():
        assert assignment.evidence, assignment
        for evidence in assignment.evidence:
            assert isinstance(evidence.kind, Kind), evidence
            assert isinstance(evidence.value, str) and evidence.value, evidence
            assert isinstance(evidence.detail, str) and evidence.detail, evidence
            assert "None" not in evidence.detail, evidence
            assert Evidence.from_json(evidence.to_json()).kind is evidence.kind
            kinds.add(evidence.kind)
    assert len(kinds) >= 3  # the world exercises more than one rule
