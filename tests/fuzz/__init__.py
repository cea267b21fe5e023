"""Fuzz targets (atheris), their seeds and runner, and the regressions they found."""
