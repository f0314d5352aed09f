"""docs/PERFORMANCE.md is what the perf scripts saved, and a target says whether it is met."""

import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _module(path: Path):
    """A script's module by its path (tools/ and perf/ are not packages); registered while
    it loads, as dataclasses need."""
    name = f'_harness_{path.parent.name}_{path.stem}'
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(name, None)
    return module


def test_the_performance_document_is_written_from_the_saved_results():
    docs = _module(ROOT / 'tools' / 'perf_docs.py')
    assert (ROOT / 'docs' / 'PERFORMANCE.md').read_text() == docs.render(), (
        'docs/PERFORMANCE.md is out of date: run python tools/perf_docs.py'
    )


def test_every_saved_result_names_its_machine_and_its_targets():
    for path in sorted((ROOT / 'perf' / 'results').glob('*.json')):
        result = json.loads(path.read_text())
        assert result['bench'] == path.stem
        assert {'cores', 'load_before', 'commit', 'at'} <= set(result['machine'])
        for target in result['targets']:
            assert {'what', 'measured', 'op', 'bound', 'met'} <= set(target)


def test_a_target_is_met_only_on_the_right_side_of_its_bound():
    record = _module(ROOT / 'perf' / '_record.py')
    assert record.Target('a median', 21.0, '<', 30.0, 'µs').as_dict()['met']
    assert not record.Target('a median', 31.0, '<', 30.0, 'µs').as_dict()['met']
    assert record.Target('unsafe accepted', 0, '==', 0).as_dict()['met']
    assert not record.Target('loop', 9.9, '>=', 10, 'x').as_dict()['met']
