"""The Engine protocol names the type of every attribute the studies read."""

import dataclasses
import inspect
import typing

from thinkbias.llm.types import Engine, EngineStats


def test_engine_stats_are_typed_as_the_engines_counters(engine):
    hints = typing.get_type_hints(Engine)
    assert hints["stats"] is EngineStats
    assert isinstance(engine.stats, EngineStats)  # what every backend's CachedEngine keeps
    protocol = inspect.getsource(Engine)  # its comment lists every counter a study may read
    assert [f.name for f in dataclasses.fields(EngineStats) if f.name not in protocol] == []
