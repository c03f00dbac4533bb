"""Beam transforms of footprint-audit, and the pure steps they wrap.

Data flows one way: inputs → events → calls → readings → sinks.
`sources` (bytes → events), `calls` (events → calls), `readings`
(calls → rows) are pure and testable without Beam; `read`, `join`,
`read_calls` and `write` are the composite `PTransform`s around them.
"""
