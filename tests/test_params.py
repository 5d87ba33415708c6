import pytest

from harness import Param
from harness.errors import UsageError


def test_parse_converts_and_validates() -> None:
    p = Param(int, default=4, minimum=1, maximum=64)
    assert p.parse("16", "msf") == 16
    with pytest.raises(UsageError, match="msf='x': expected int"):
        p.parse("x", "msf")
    with pytest.raises(UsageError, match="below the minimum 1"):
        p.parse("0", "msf")
    with pytest.raises(UsageError, match="above the maximum 64"):
        p.validate(65, "msf")


def test_bool_float_and_choices() -> None:
    assert Param(bool, default=False).parse("yes") is True
    assert Param(bool, default=True).parse("off") is False
    assert Param(float, default=0.1).validate(3) == 3.0
    with pytest.raises(UsageError, match="not one of a, b"):
        Param(str, default="a", choices=("a", "b")).validate("c", "mode")
    with pytest.raises(UsageError, match="expected int"):
        Param(int, default=1).validate(True, "n")


def test_unsupported_type_is_rejected_at_declaration() -> None:
    with pytest.raises(TypeError):
        Param(list, default=[])          # a list needs its item type
    with pytest.raises(TypeError):
        Param(dict, default={})


def test_list_params_parse_validate_and_bound_each_item() -> None:
    p = Param(list, item=int, default=[1, 2], minimum=1)
    assert p.parse("1:2:4", "nodes") == [1, 2, 4]
    assert p.validate("8", "nodes") == [8] and p.validate((2, 3), "nodes") == [2, 3]
    with pytest.raises(UsageError, match="nodes=0 is below the minimum 1"):
        p.parse("1:0", "nodes")
    with pytest.raises(UsageError, match="expected a non-empty list"):
        p.validate([], "nodes")
    names = Param(list, item=str, default=["a"], choices=("a", "b"))
    with pytest.raises(UsageError, match="not one of a, b"):
        names.parse("a:c", "nets")
    assert Param(list, item=float, default=[0.1]).parse("0.01:1e-3") == [0.01, 0.001]
    assert "list[int]" in p.describe()
