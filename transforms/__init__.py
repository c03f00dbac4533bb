"""Beam transforms of footprint-audit, and the pure steps they wrap.

Data flows one way: inputs → events → calls → readings → sinks.
`sources` (bytes → events), `calls` (events → calls), `reading_rows` (call → row) and
`accounting` (where every event went) are pure and testable without Beam;
`input_files`, `join`, `apply_readers` and `write` are the batch job's composite
`PTransform`s around them; `kafka_read`, `pubsub_read`, `stream_events`, `stream_join`
and `stream_write` are the streaming job's.
"""
