"""Every package folder is listed in pyproject.toml, so a wheel install is complete."""
import pathlib
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_all_packages_listed() -> None:
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(cfg["packages"])
    dirs = cfg["package-dir"]
    found = set()
    for name, folder in dirs.items():
        base = ROOT / folder
        for init in base.rglob("__init__.py"):
            rel = init.parent.relative_to(base).parts
            found.add(".".join((name, *rel)))
    assert found == listed, f"add to [tool.setuptools] packages: {sorted(found - listed)}"


def test_the_plugins_lock_ships_with_the_plugins() -> None:
    """A wheel install maps old records through plugins/versions.lock as a checkout does."""
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "versions.lock" in cfg["package-data"]["harness_plugins"]
    assert (ROOT / "plugins" / "versions.lock").is_file()
