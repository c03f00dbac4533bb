"""Every shape footprint-audit reads or writes.

Role: events in (`schemas.events`), the app's declarations file
(`schemas.declarations`), and the Arrow schemas of the three outputs with
their version (`schemas.tables`), and the name a table gives a local file
(`schemas.names`). Nothing here runs Beam or touches files
beyond reading the declarations file it is handed.
"""
