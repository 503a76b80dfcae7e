"""environment.yml (Binder, conda-forge) and pyproject.toml must name the same packages."""
from __future__ import annotations

import re

import pytest
import tomllib
import yaml

pytestmark = pytest.mark.once  # run once (make unit): environment.yml and postBuild

# Conda-only entries: the interpreter, pip itself and the compiler Binder needs.
CONDA_ONLY = {"python", "pip", "c-compiler"}


def _name(spec: str) -> str:
    """Package name of a requirement such as 'numpy>=1.26' or 'dask[array]>=2024'."""
    name = re.split(r"[\s<>=!~\[;]", spec.strip(), maxsplit=1)[0]
    return name.lower().replace("_", "-")


def _pyproject_names(repo_root) -> set[str]:
    project = tomllib.loads((repo_root / "pyproject.toml").read_text())["project"]
    specs = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        specs += extra
    return {_name(s) for s in specs}


def _environment_names(repo_root) -> set[str]:
    env = yaml.safe_load((repo_root / "environment.yml").read_text())
    names = set()
    for dep in env["dependencies"]:
        if isinstance(dep, dict):  # a nested `pip:` list
            names |= {_name(s) for s in dep.get("pip", [])}
        else:
            names.add(_name(dep))
    return names - CONDA_ONLY


def test_environment_yml_matches_pyproject(repo_root):
    py, env = _pyproject_names(repo_root), _environment_names(repo_root)
    assert env == py, (
        f"only in environment.yml: {sorted(env - py)}; only in pyproject.toml: {sorted(py - env)}"
    )


def test_environment_uses_conda_forge(repo_root):
    env = yaml.safe_load((repo_root / "environment.yml").read_text())
    assert env["channels"] == ["conda-forge"]


def test_postbuild_builds_the_package(repo_root):
    text = (repo_root / "postBuild").read_text()
    assert "set -e" in text and "pip install" in text and "-e ." in text


def test_name_parser_handles_specifiers():
    assert _name("dask[distributed]>=2024.1") == "dask"
    assert _name("PyYAML >= 6") == "pyyaml"
    assert _name("typing_extensions") == "typing-extensions"



def _binder_badges(path) -> list[str]:
    return re.findall(r"\(https://mybinder\.org/v2/gh/([^)\s]+)\)", path.read_text(encoding="utf-8"))


def test_binder_badges_agree_and_open_an_existing_notebook(repo_root):
    top, notebooks = _binder_badges(repo_root / "README.md"), _binder_badges(repo_root / "notebooks" / "README.md")
    assert len(top) == 1 and top == notebooks, (top, notebooks)
    repo, _, query = top[0].partition("?")
    assert re.fullmatch(r"[\w.-]+/[\w.-]+/[\w.-]+", repo), repo  # owner/name/branch
    target = query.removeprefix("urlpath=lab/tree/")
    assert target != query and (repo_root / target).is_file(), query

