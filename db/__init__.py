"""The run database: typed models, one session factory, the schema version."""
