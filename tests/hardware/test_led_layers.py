"""The LED modules import in a line: patterns ← drivers (and APA102) ← controller.

The whole-tree scan (``tests/test_import_cycles.py``, lazy and
``TYPE_CHECKING`` imports included) says there is no cycle; this says which
way the hardware package's imports go, so the split cannot quietly fold back.
"""

from __future__ import annotations

from tests.test_import_cycles import cycles, import_graph

PATTERNS = "huxleyd.hardware.led_patterns"
DRIVERS = "huxleyd.hardware.led_drivers"
APA102 = "huxleyd.hardware.apa102"
CONTROLLER = "huxleyd.hardware.led_controller"


def hardware_graph() -> dict[str, set[str]]:
    return {
        name: {n for n in deps if n.startswith("huxleyd.hardware.")}
        for name, deps in import_graph().items()
        if name.startswith("huxleyd.hardware.")
    }


def test_the_hardware_package_has_no_import_cycle() -> None:
    graph = hardware_graph()
    assert {PATTERNS, DRIVERS, APA102, CONTROLLER} <= set(graph)
    assert cycles(graph) == []


def test_the_led_layers_import_downwards_only() -> None:
    graph = hardware_graph()
    assert not graph[PATTERNS] & {DRIVERS, APA102, CONTROLLER}, "patterns know no driver"
    assert PATTERNS in graph[APA102] and DRIVERS not in graph[APA102]
    assert APA102 in graph[DRIVERS] and CONTROLLER not in graph[DRIVERS]
    assert DRIVERS in graph[CONTROLLER]
