"""The typed configuration: the project's file loads, every key is known and checked, and the
nodes get the same values as ROS parameters."""

from pathlib import Path

import pytest
import yaml
from harness_types.config import (
    CONFIG_VARIABLE,
    NODES,
    ConfigError,
    DriverConfig,
    GraphConfig,
    KernelConfig,
    config_file,
    declare_section,
    load_config,
    with_overrides,
)

ROOT = Path(__file__).resolve().parents[3]


def test_the_project_config_loads_and_names_every_key():
    config = load_config(ROOT / 'config' / 'harness.yaml')
    assert config.driver.max_model_calls == 30 and config.driver.model == 'scripted'
    assert Path(config.driver.prompts).is_dir() and Path(config.driver.price_table).is_file()
    assert config.kernel.cell_timeout_seconds == 120.0
    # Every key of every section is written in the file (none is left to a code default).
    raw = yaml.safe_load((ROOT / 'config' / 'harness.yaml').read_text())
    for node, section in config.sections().items():
        assert set(raw[node]['ros__parameters']) == set(vars(section)), node


@pytest.mark.parametrize(
    'text,message',
    [
        ('driver: [1, 2]', 'driver: needs a ros__parameters mapping'),
        ('driver:\n  recording: lean\n', "driver: 'recording' beside ros__parameters"),
        ('worker:\n  ros_parameters:\n    backend: mujoco\n', "'ros_parameters' beside"),
        ('driver:\n  ros__parameters:\n    max_calls: 3\n', "driver has no parameter 'max_calls'"),
        ('driver:\n  ros__parameters:\n    keep_images: -1\n', 'keep_images must be >= 0'),
        ('driver:\n  ros__parameters:\n    max_wall_seconds: 0\n', 'max_wall_seconds must be > 0'),
        # a process limit the kernel cannot set (it had stopped the kernel in setrlimit)
        (
            'kernel:\n  ros__parameters:\n    program_memory_mb: 99999999999999\n',
            'kernel.program_memory_mb must be <= 1073741824, not 99999999999999',
        ),
        ('driver:\n  ros__parameters:\n    cameras: cam_head\n', 'driver.cameras must be'),
        ('driver:\n  ros__parameters:\n    record_bag: 1\n', 'record_bag must be true or false'),
        ('kernel:\n  ros__parameters:\n    cell_timeout_seconds: .nan\n', 'must be a finite'),
        ('drivers:\n  ros__parameters: {}\n', "no node of the graph is called 'drivers'"),
        ('driver: {ros__parameters: {', 'not valid YAML'),
        # YAML keeps the last of a key given twice without a word: half the settings ignored
        (
            'driver:\n  ros__parameters:\n    max_model_calls: 5\n    max_model_calls: 50\n',
            "the key 'max_model_calls' is given twice in one mapping at line 4, column 5",
        ),
        ('driver:\n  ros__parameters:\n    max_model_calls: 9223372036854775808\n', '64-bit'),
        ('1: {}\nfoo: {}\n', "no node of the graph is called '1', 'foo'"),
        ('driver:\n  ros__parameters:\n    1: 2\n', 'driver has no parameter 1'),
        (b'driver: \xff\xfe\n', 'not UTF-8 text'),
        ('driver:\n  ros__parameters:\n    max_wall_seconds: 1' + '0' * 400 + '\n', 'finite'),
        (
            'kernel:\n  ros__parameters:\n    perception: service\n'
            "    perception_service_url: 'http://'\n",
            'needs kernel.perception_service_url',
        ),
        # libyaml's composer recursed in C: 50000 levels ended the process (a segfault)
        ('driver: ' + '[' * 50000 + ']' * 50000, 'nested more than 64 levels deep'),
        # 7 levels of aliases, 10 each: the value is shown bounded (it was 58 MB), not expanded
        (
            'kernel:\n  ros__parameters:\n    perception: [&a [x, x, x, x, x, x, x, x, x, x], '
            + ', '.join(
                f'&{n} [{", ".join([f"*{p}"] * 10)}]'
                for p, n in zip('abcdef', 'bcdefg', strict=True)
            )
            + ']\n',
            'kernel.perception must be',
        ),
        # merges of two aliases, 40 deep: each doubles a mapping (1 kB grew past memory)
        (
            'a0: &a0 {k: 1}\n'
            + ''.join(f'a{i}: &a{i} {{<<: [*a{i - 1}, *a{i - 1}]}}\n' for i in range(1, 41)),
            'merges (<<) copy more than 10000 keys in this document',
        ),
        # many merges of one anchor below any one mapping's bound: each copies it
        (
            'a: &a {'
            + ', '.join(f'k{i}: {i}' for i in range(8000))
            + '}\n'
            + ''.join(f'x{i}: {{<<: *a}}\n' for i in range(2000)),
            'merges (<<) copy more than 10000 keys in this document',
        ),
        # time settings past a week: they passed, then failed in a timer or a socket mid-run
        ('kernel:\n  ros__parameters:\n    cell_timeout_seconds: 1.0e+10\n', 'must be <= 604800'),
        ('skill_server:\n  ros__parameters:\n    result_timeout_seconds: 10000000000\n', '<='),
        ('kernel:\n  ros__parameters:\n    reactive_budget_ms: 1.0e+13\n', 'must be <= 60000'),
        ('driver:\n  ros__parameters:\n    max_wall_seconds: 3.6e3\n', 'e.g. 1.0e+3'),
        ('driver:\n  ros__parameters:\n    max_wall_seconds: 1e+3\n', 'a dot and a signed'),
        ('driver:\n  ros__parameters:\n    max_model_calls: 1e3\n', 'write its digits'),
        ('false\n', 'expected a mapping of node names'),
        # (Python's bound on an integer's digits: a ValueError traceback in every command)
        ('driver:\n  ros__parameters:\n    max_cost_usd: ' + '9' * 5000 + '\n', '4300'),
        ('0\n', 'expected a mapping of node names'),
    ],
)
def test_bad_config_files_say_what_is_wrong(tmp_path, text, message):
    path = tmp_path / 'harness.yaml'
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(ConfigError) as exc:
        load_config(path)
    assert message in str(exc.value) and str(path) in str(exc.value)
    assert len(str(exc.value)) < 2000, len(str(exc.value))
    assert '\n' not in str(exc.value)  # one line (a YAML error's own spans several)


def test_a_config_file_that_cannot_be_read_says_so():
    # (a read that fails as a file closed to this user does, also for root: reading
    # /proc/self/mem at offset 0 is EIO)
    with pytest.raises(ConfigError, match='cannot be read: Input/output error'):
        load_config('/proc/self/mem')


def test_a_missing_file():
    with pytest.raises(ConfigError, match='does not exist'):
        load_config('/nonexistent/harness.yaml')


def test_overrides_are_checked_like_the_file():
    config = with_overrides(GraphConfig(), 'driver', model='claude-x', max_model_calls=None)
    assert config.driver.model == 'claude-x' and config.driver.max_model_calls == 30
    with pytest.raises(ConfigError, match='max_wall_seconds must be > 0'):
        with_overrides(GraphConfig(), 'driver', max_wall_seconds=0.0)


def test_the_written_parameters_load_back_the_same(tmp_path):
    config = with_overrides(load_config(ROOT / 'config' / 'harness.yaml'), 'driver', model='m')
    written = config.write(tmp_path / 'params.yaml')
    again = load_config(written)
    assert again.sections() == config.sections()
    assert set(yaml.safe_load(written.read_text())) == set(NODES)


def test_a_graph_starts_from_parameters_keyed_for_any_namespace(tmp_path):
    """harness serve and the launch files: a plain `worker:` key reaches /worker only, so a
    node started under a namespace (-r __ns:=/NS, namespace:=NS) would keep its defaults."""
    config = with_overrides(GraphConfig(), 'worker', camera_every_ticks=7)
    written = yaml.safe_load(config.write(tmp_path / 'p.yaml', any_namespace=True).read_text())
    assert set(written) == {f'/**/{node}' for node in NODES}
    assert written['/**/worker']['ros__parameters']['camera_every_ticks'] == 7


class FakeNode:
    """Declares parameters the way rclpy does: a value given at start-up wins over the default."""

    def __init__(self, given):
        self.given = given

    def has_parameter(self, name):
        return False

    def get_name(self):
        return 'kernel'

    def declare_parameter(self, name, default):
        class P:
            value = self.given.get(name, default)

        return P()


def test_a_node_reads_its_section_as_parameters():
    section = declare_section(FakeNode({'reactive_budget_ms': 5.0}), KernelConfig)
    assert section == KernelConfig(reactive_budget_ms=5.0)
    with pytest.raises(ConfigError, match='cell_timeout_seconds must be > 0'):
        declare_section(FakeNode({'cell_timeout_seconds': -1.0}), KernelConfig)
    assert DriverConfig().verifier == 'scripted'
    # `cameras: []` in a parameter file: rclpy declares it with the value None
    assert declare_section(FakeNode({'cameras': None}), DriverConfig).cameras == ()


class HookedNode(FakeNode):
    """A FakeNode that keeps its on-set-parameters callbacks, as rclpy's Node does."""

    def __init__(self, given):
        super().__init__(given)
        self.hooks = []

    def add_on_set_parameters_callback(self, hook):
        self.hooks.append(hook)


def test_a_frozen_section_refuses_a_later_change_of_its_parameters_saying_so():
    named = type('P', (), {'name': 'cell_timeout_seconds'})
    other = type('P', (), {'name': 'not_ours'})
    node = HookedNode({})
    declare_section(node, KernelConfig)
    (hook,) = node.hooks
    refused = hook([named])
    assert not refused.successful
    assert refused.reason.startswith('kernel reads cell_timeout_seconds once, at start')
    assert hook([other]).successful  # (a parameter not of the section: rclpy's own)
    unfrozen = HookedNode({})
    declare_section(unfrozen, KernelConfig, frozen=False)
    assert unfrozen.hooks == []


def test_the_config_file_named_then_the_variable_then_the_folders(tmp_path, monkeypatch):
    named = tmp_path / 'mine.yaml'
    named.write_text('{}\n')
    elsewhere = tmp_path / 'elsewhere'
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.delenv(CONFIG_VARIABLE, raising=False)
    assert config_file(named) == named
    with pytest.raises(FileNotFoundError, match='nope.yaml does not exist'):
        config_file(tmp_path / 'nope.yaml')
    with pytest.raises(FileNotFoundError, match='is a folder, not a file'):
        config_file(tmp_path)
    with pytest.raises(FileNotFoundError, match='names no file'):
        config_file('')
    # From a folder without config/: the workspace's, found above these sources
    assert config_file() == ROOT / 'config' / 'harness.yaml'
    local = elsewhere / 'config'
    local.mkdir()
    (local / 'harness.yaml').write_text('{}\n')
    assert config_file() == Path('config') / 'harness.yaml'
    monkeypatch.setenv(CONFIG_VARIABLE, str(named))
    assert config_file() == named
    monkeypatch.setenv(CONFIG_VARIABLE, str(tmp_path / 'gone.yaml'))
    with pytest.raises(FileNotFoundError, match=r'gone.yaml \(\$HARNESS_CONFIG\) does not exist'):
        config_file()
