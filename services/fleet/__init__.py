"""The Engines page's feature: the endpoints and local engines this deployment runs, as the page
shows them (`view.py`). A package of its own above the engine kinds and telemetry: a card's
metrics advice reads the Monitor's last scrape, which telemetry (above the kinds) keeps."""
