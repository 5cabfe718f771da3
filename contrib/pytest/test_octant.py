"""One item per unit of Octant's conformance battery (conftest.py says how they are listed,
sharded and run)."""
import warnings

import pytest


def test_unit(octant_unit, octant_verdict):
    """The unit's verdict in the pytest run's conform run: Pass and QualityWarning pass (the warning
    shown), NotSupported skips with the reason, Fail fails with the failing cases."""
    status, message = octant_verdict
    if status == "NotSupported":
        pytest.skip(message)
    if status == "QualityWarning":
        warnings.warn(message)
        return
    if status != "Pass":
        pytest.fail(message, pytrace=False)
