"""Beam transforms of footprint-audit, and the pure steps they wrap.

Data flows one way: inputs → events → calls → readings → sinks, one room a stage:
`decode` (bytes → events), `calls` (events → calls, pure), `join` (a run's events keyed and
joined), `read` (call → reading row), `write` (Parquet), `stream` (the streaming job's read, join
and write), `dead_letters` (the one collector every step's dead letters go through) and `process`
(what a worker does beside the data). Each room's entrance is its `__init__`.
"""
