"""Shim for Dataflow's --setup_file: the project is defined in pyproject.toml."""

import setuptools

setuptools.setup()
