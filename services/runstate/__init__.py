"""A run's state as every feature shares it, kept in the database: its kind and status and
their changes (`lifecycle`), the registry of run kinds with recovery at start (`run_kinds`),
the one worker process (`worker`) and what a blind run hides until its reveal (`blind`).

It sits on the database, which sits on the core: the core (settings, errors, HTTP...) needs
no stored run, so the database can read its settings without a circle."""
